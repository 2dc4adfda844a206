/*
 * history: what the screen remembers between snapshots. A snapshot is a
 * moment; the sparklines need the last minute and the reservoir's time left
 * needs a rate of fill, so the screen keeps them itself:
 *
 *   - per stage, items/s once a second (from the last-second snapshot it
 *     sampled at that moment), the last TUI_HISTORY_SECONDS of them;
 *   - per stage, recent (time, value) pairs of its filling gauge, from which
 *     a rate of fill and the time left are estimated.
 *
 * Stages are keyed by name, so a restarted pipeline continues its rows.
 * Owned by the screen; UI thread only.
 */
#ifndef LC_TUI_HISTORY_H
#define LC_TUI_HISTORY_H

#include <stdbool.h>
#include <stddef.h>

#include "training_metrics.pb-c.h"

#define TUI_HISTORY_SECONDS 60

typedef struct tui_history tui_history;

tui_history *tui_history_new(void);
void tui_history_free(tui_history *h);

/* Append one second: each stage's items/s in `last` (a last-second
 * snapshot). A stage missing from it gets 0. */
void tui_history_sample(tui_history *h, const Lcmon__DataLoaderMetricsProto *last);
/* The stage's series, oldest first, into out (at most max values); returns
 * how many. *peak receives the largest value (0 when none). */
size_t tui_history_series(const tui_history *h, const char *stage, double *out, size_t max,
                          double *peak);

/* Record a gauge's value at time now (monotonic seconds). */
void tui_history_fill(tui_history *h, const char *stage, long long value, double now);
/* Its rate of fill per second over the last few seconds; false when there
 * is not enough history yet or the value went down (a restart). */
bool tui_history_fill_rate(const tui_history *h, const char *stage, double *rate);

#endif
