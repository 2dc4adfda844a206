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

/* ---- the headline (headline.c) ----
 *
 * The facts a loader is summed up by (its state, positions per second, the
 * stage warning that says what to do, the queues, the pool's window and
 * anchor, the reservoir, the reader, bad input ...) as one table of items,
 * each a row: its name, the lines it is on, its priority, how far its text
 * may shrink, and the function that says what it shows now. Three lines
 * show it: the screen's header (tui/header.c, with the theme's elements),
 * the compact status line headless runs print and the long one (`-v`,
 * `ctl status`), as plain text; each line takes the rows of its form, in
 * the table's order, and one fitting (lc_headline_fit) decides what the
 * width has room for. A new fact is a row and its function in headline.c.
 */

/* The lines an item is on. */
typedef enum {
    LC_HEADLINE_HEADER = 1, /* the screen's first line */
    LC_HEADLINE_STATUS = 2, /* the compact status line */
    LC_HEADLINE_LONG = 4,   /* the long status line */
} lc_headline_form;

/* What an item's text is, for a renderer with colours. */
typedef enum {
    LC_TONE_PLAIN,
    LC_TONE_VALUE,
    LC_TONE_WARN,
    LC_TONE_TITLE,
    LC_TONE_RUNNING,
    LC_TONE_BUSY,
    LC_TONE_IDLE,
    LC_TONE_FAILED,
} lc_headline_tone;

/* How a text too long for its place is cut: at its end (with an ellipsis,
 * or bare), or at its start (a path, whose end names the file). */
typedef enum { LC_CUT_END, LC_CUT_END_BARE, LC_CUT_START } lc_headline_cut;

/* What the headline reads. The status lines give m alone. */
typedef struct lc_headline_in {
    const Lcmon__DataLoaderMetricsProto *m; /* the last second */
    bool disconnected;                      /* an attached loader went away */
    bool stopping;                          /* a stop the screen asked for is under way */
    /* Errors and warnings in the log the header counts (0 while the log
     * pane shows them). */
    size_t log_errors, log_warnings;
    const char *where; /* where the loader runs ("in-process", a socket), or NULL */
    /* The window the rate is over (its name, core/metric_windows.h) and
     * its snapshot; NULL: the last second, m. */
    const char *window;
    const Lcmon__DataLoaderMetricsProto *rate;
    const char *arrow; /* before the output path (NULL: "->") */
} lc_headline_in;

/* What an item shows now, and how its row places it. */
typedef struct lc_headline_item {
    char text[1024];
    char label[16];   /* before the text */
    const char *unit; /* after it, or NULL */
    lc_headline_tone tone;
    int drop;   /* the priority of leaving it out (the row's, or moved by what it shows) */
    int shrink; /* the priority of cutting its text */
    int least;  /* columns of text it may be cut to (0: it is not cut) */
    lc_headline_cut cut;
    bool right;  /* on the right end of the header */
    bool joined; /* no gap before it */
    bool spaced; /* a status line puts a space before it, not " | " */
} lc_headline_item;

/* A priority no width takes away. */
#define LC_HEADLINE_KEPT 1000

/* The rows, in the order they stand on a line. */
size_t lc_headline_items(void);
const char *lc_headline_item_name(size_t i);
/* Whether row i is on the lines of form. */
bool lc_headline_on(size_t i, lc_headline_form form);
/* What row i shows now on the lines of form: false when nothing (or the
 * row is not on them). */
bool lc_headline_value(const lc_headline_in *in, size_t i, lc_headline_form form,
                       lc_headline_item *v);

/* An item's size as the fitting sees it. */
typedef struct lc_headline_size {
    int width;  /* columns in full (its gap included); 0: nothing to show */
    int least;  /* columns it may shrink to; 0: it does not shrink */
    int shrink; /* the priority of shrinking it */
    int drop;   /* the priority of leaving it out (LC_HEADLINE_KEPT: never) */
    bool right; /* on the right end of the line (after a one-column margin) */
} lc_headline_size;

/* Fit n items into cols columns: the step of the lowest priority first (a
 * shrink as far as needed, down to its least, or a drop), until the line
 * fits or nothing more can give way. Leaves the widths in sz[i].width (0:
 * left out). Ties go to the item listed first. */
void lc_headline_fit(lc_headline_size *sz, size_t n, int cols);

/* The long status line: every item of LC_HEADLINE_LONG, whole.
 * "[running] 71.8k pos/s | queues files 0/256 ... | pool: chunks_in_window
 * 43/50000, anchor '-' +43 | sampler: reservoir_size 20000/20000 | reader
 * connected" */
void lc_status_line(const Lcmon__DataLoaderMetricsProto *last_second, char *buf, size_t len);
/* The compact one headless runs print, fitted to `width` columns (120):
 * state, rate, the first stage warning, full queues, the pool's window and
 * anchor count, the reservoir, the reader, the positions' age, bad input.
 * What did not fit is left out by priority and " ..." says so; a text cut
 * to fit is cut after a word and ends in " ...". */
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
