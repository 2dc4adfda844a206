/*
 * derive: the numbers the screen derives from a metrics snapshot, in one
 * place so that the table, the header and the history agree: what "items"
 * means for a stage, busy fractions, bad counts, positions per second, and
 * compact human formats for them.
 *
 * Pure functions of their arguments; no curses, no state.
 */
#ifndef LC_TUI_DERIVE_H
#define LC_TUI_DERIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "monitor.pb-c.h"
#include "training_metrics.pb-c.h"

/* Items a stage handled in the snapshot's window: its items out (for a
 * sink, what it delivered: the writer's batches). */
uint64_t tui_stage_items(const Lcmon__StageMetricProto *s);
/* A count over a snapshot's window as a rate per second. */
double tui_per_second(const Lcmon__DataLoaderMetricsProto *m, uint64_t count);
/* Busy fraction of a thread pool, 0..1 (0 when it covers no time). */
double tui_load_fraction(const Lcmon__LoadMetricProto *l);
/* How the loader describes the stage of that name (its hello), or NULL. */
const Lcmon__StageDescription *tui_describe_stage(const Lcmon__Hello *h, const char *name);
/* The stage's fill that says how long until full (the reservoir's), or NULL. */
const Lcmon__MetricDisplay *tui_eta_fill(const Lcmon__StageDescription *d);
/* The writer (the stage with reader_connected), or NULL. */
const Lcmon__StageMetricProto *tui_find_writer(const Lcmon__DataLoaderMetricsProto *m);
/* The latest fullness of a queue. */
int64_t tui_queue_fill(const Lcmon__QueueMetricProto *q);

/* Compact numbers, at most 6 characters: "0", "950", "12.3k", "1.25M". */
void tui_fmt_count(char *buf, size_t len, double v);
/* Bytes: "512 B", "12.3 kB", "1.39 GB" (decimal units). */
void tui_fmt_bytes(char *buf, size_t len, double v);
/* Durations: "0:07", "12:03", "1:02:03", "3d 04h". */
void tui_fmt_clock(char *buf, size_t len, double seconds);
/* Short durations for estimates: "4s", "3m10s", "2h05m", "> 9 days". */
void tui_fmt_eta(char *buf, size_t len, double seconds);

#endif
