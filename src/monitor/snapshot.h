/*
 * snapshot: reading a metrics snapshot (DataLoaderMetricsProto), in one
 * place for everyone who shows one: the screen, the headless status line,
 * `lcmon ctl` and the tests. Lookups by name, the units and state names
 * people read, and the one-line summaries. Depends on core and the protos
 * only, so that a reader of snapshots needs nothing of the pipeline.
 */
#ifndef LC_MONITOR_SNAPSHOT_H
#define LC_MONITOR_SNAPSHOT_H

#include "core/shared.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "training_metrics.pb-c.h"

/* A metrics snapshot as monitors hand it out: an immutable
 * DataLoaderMetricsProto shared by reference (core/shared.h), so that the
 * screen, the status line and every socket client read the one the
 * pipeline published instead of each building a copy. */
typedef lc_shared lc_snapshot;

static inline const Lcmon__DataLoaderMetricsProto *lc_snapshot_msg(const lc_snapshot *s)
{
    return lc_shared_get(s);
}
static inline lc_snapshot *lc_snapshot_ref(lc_snapshot *s)
{
    return lc_shared_ref(s);
}
static inline void lc_snapshot_unref(lc_snapshot *s)
{
    lc_shared_unref(s);
}
/* Share m (taken over: freed with the last reference). */
lc_snapshot *lc_snapshot_wrap(Lcmon__DataLoaderMetricsProto *m);

const Lcmon__StageMetricProto *lc_snapshot_find_stage(const Lcmon__DataLoaderMetricsProto *m,
                                                      const char *name);
const Lcmon__CountMetricProto *lc_snapshot_find_count(const Lcmon__StageMetricProto *s,
                                                      const char *name);
const Lcmon__GaugeMetricProto *lc_snapshot_find_gauge(const Lcmon__StageMetricProto *s,
                                                      const char *name);
/* The metric of that role (MetricRole: what it means to the loader as a
 * whole), NULL when the stage has none; s may be NULL. The status line, the
 * header and ctl look numbers up this way, never by name. */
const Lcmon__CountMetricProto *lc_snapshot_count_of_role(const Lcmon__StageMetricProto *s,
                                                         Lcmon__MetricRole role);
const Lcmon__GaugeMetricProto *lc_snapshot_gauge_of_role(const Lcmon__StageMetricProto *s,
                                                         Lcmon__MetricRole role);
const char *lc_snapshot_text_of_role(const Lcmon__StageMetricProto *s, Lcmon__MetricRole role);
/* The text of that name, NULL when absent (s may be NULL). */
const char *lc_snapshot_find_text(const Lcmon__StageMetricProto *s, const char *name);
/* The count of that name, 0 when absent (s may be NULL). */
uint64_t lc_snapshot_count(const Lcmon__StageMetricProto *s, const char *name);
/* The sum of a stage's counts of bad input (kind COUNT_BAD_INPUT). */
uint64_t lc_snapshot_bad_input(const Lcmon__StageMetricProto *s);
/* Good items a stage dropped: its counts of kind COUNT_DROP and what its
 * queues dropped. */
uint64_t lc_snapshot_dropped(const Lcmon__StageMetricProto *s);
/* Whether a count's or gauge's unit is bytes (shown as "1.20 GB"). */
bool lc_snapshot_is_bytes(const char *unit);

/* Whether a stage keeps an anchor (it has a chunks_since_anchor gauge, as
 * the shuffling chunk pool does), and the first stage of a snapshot that
 * does (or NULL); *a (may be NULL) gets its count,
 * its anchor ("" for none), the key the count runs from (the anchor unless
 * a `set` moved it since the last reset) and the newest chunk's key. The
 * strings point into the snapshot. */
typedef struct lc_snapshot_anchor {
    uint64_t since;
    const char *anchor, *count_from, *newest;
} lc_snapshot_anchor;
bool lc_snapshot_stage_anchor(const Lcmon__StageMetricProto *s, lc_snapshot_anchor *a);
const Lcmon__StageMetricProto *lc_snapshot_find_anchor(const Lcmon__DataLoaderMetricsProto *m,
                                                       lc_snapshot_anchor *a);

/* What a stage's items_out counts, plural ("chunks", "frames", "batches"; a
 * sink counts what it delivers, so its input's), and what a queue holds;
 * "items" when the snapshot does not say. */
const char *lc_snapshot_stage_unit(const Lcmon__StageMetricProto *s);
const char *lc_snapshot_queue_unit(const Lcmon__QueueMetricProto *q);

/* "[running] 71.8k pos/s | queues files 0/256 ... | pool: chunks_in_window
 * 43/50000, anchor '-' +43 | sampler: reservoir_size 20000/20000 | reader
 * connected" */
void lc_status_line(const Lcmon__DataLoaderMetricsProto *last_second, char *buf, size_t len);
/* The short form headless runs print, at most `width` columns (120): state,
 * rate, full queues, the pool's window and anchor count, the reservoir, the
 * reader, bad input and the first stage warning. */
void lc_status_line_compact(const Lcmon__DataLoaderMetricsProto *last_second, size_t width,
                            char *buf, size_t len);
/* Positions per second over the snapshot's window (-1 when no stage packs
 * or writes positions). */
double lc_status_positions_per_second(const Lcmon__DataLoaderMetricsProto *m);
const char *lc_pipeline_state_name(Lcmon__PipelineState s);
/* Starting, running, paused or stopping: a rate and a reader mean something.
 * A stopped, finished or failed pipeline has neither (its last snapshot's
 * would be stale). */
bool lc_pipeline_state_live(Lcmon__PipelineState s);
const char *lc_stage_state_name(Lcmon__StageState s);

#endif
