/*
 * metric_windows: a loader's metrics over windows of time (the last 1 s,
 * 10 s, 1 min, 10 min, 1 h, and all time) from the flushes the metrics
 * thread makes every interval (core/metrics.h says what a flush holds and
 * how two merge: counts and loads add up, gauges keep the newest value and
 * the statistics of their values, statistics merge).
 *
 * Kept cheaply, at flush time, by the thread that flushes: the stages'
 * workers never see it.
 *   - all time: one aggregate, each flush merged into it;
 *   - the last second: a ring of the flushes themselves, merged when asked
 *     (those of the last second, the newest always);
 *   - longer windows: rings of whole slots in four tiers, 1 s x 11,
 *     10 s x 7, 1 min x 11, 10 min x 7. The flushes are gathered into the
 *     open second; when it is a second long it closes into the 1 s ring
 *     and is merged into the open 10 s slot, which closes (after 10 s)
 *     into the 10 s ring and is merged into the open minute, and so on.
 *     A window is the newest whole slots of its tier (10 s: seconds; 1 min:
 *     10 s slots; 10 min: minutes; 1 h: 10 min slots) after the open slots
 *     of the tiers below, taken back until they cover the window. So a
 *     window covers at least its length (once the run is that old) and
 *     less than its length plus one slot of its tier (10 s exactly: whole
 *     seconds; with flushes further apart than a second, to within half
 *     an interval); what it covers is returned, so that rates are right.
 *     Windows longer than a second are made of whole seconds: they change
 *     once a second (lc_metric_windows_version says when).
 *
 * Time is given by the caller (monotonic seconds, never decreasing), so the
 * tests can drive it. Threads: none of its own; the caller locks.
 */
#ifndef LC_CORE_METRIC_WINDOWS_H
#define LC_CORE_METRIC_WINDOWS_H

#include "core/metrics.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The windows, in order: the proto's MetricWindow, LC_WINDOW_1S = 0, ...
 * (core/metrics.h says how the test checks it). */
#define LC_WINDOWS(X)                                                                              \
    X(WINDOW_1S) X(WINDOW_10S) X(WINDOW_1M) X(WINDOW_10M) X(WINDOW_1H) X(WINDOW_ALL)
typedef enum lc_window { LC_WINDOWS(LC_ENUM_) LC_WINDOW_COUNT } lc_window;

/* Their names, as commands and settings take them. */
#define LC_WINDOW_NAMES "1s, 10s, 1m, 10m, 1h, all"

/* "1s", "10s", "1m", "10m", "1h", "all". */
const char *lc_window_name(lc_window w);
/* The window of that name (LC_WINDOW_NAMES), false when none. */
bool lc_window_parse(const char *name, lc_window *out);
/* Its length in seconds; 0 for all time. */
double lc_window_seconds(lc_window w);

typedef struct lc_metric_windows lc_metric_windows;

/* For n stages flushed every `interval` seconds, from `now` on. */
lc_metric_windows *lc_metric_windows_new(size_t n, double interval, double now);
void lc_metric_windows_free(lc_metric_windows *w);
/* Count time from `now` (the run's start) instead. */
void lc_metric_windows_start(lc_metric_windows *w, double now);
/* Fold one flush of every stage (fresh[n]), taken at `now`. */
void lc_metric_windows_add(lc_metric_windows *w, const lc_stage_metrics *fresh, double now);
/* Window `win` merged into out[n] (cleared first, oldest first, so that
 * gauges and texts end at the newest value); returns the seconds it covers
 * (all time: since lc_metric_windows_new). */
double lc_metric_windows_get(const lc_metric_windows *w, lc_window win, double now,
                             lc_stage_metrics *out);
/* Moves on each time a second closes: the windows longer than a second
 * are the same while it stays. */
uint64_t lc_metric_windows_version(const lc_metric_windows *w);

#endif
