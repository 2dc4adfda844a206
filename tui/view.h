/*
 * view: what the panels under the screen draw from, below screen.h so that
 * they need nothing of the loop's state: the snapshots shown, the history,
 * the stage descriptions, the selection and the table's scroll. The screen
 * (screen.c) makes one for each frame from its state; the table (table.c)
 * and its details (details.c) read it, and the tests make their own.
 *
 * UI thread only.
 */
#ifndef LC_TUI_VIEW_H
#define LC_TUI_VIEW_H

#include "monitor/monitor.h"
#include "tui/history.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct tui_view {
    /* The last second (states, fills) and all time (totals). */
    const Lcmon__DataLoaderMetricsProto *last, *all;
    /* The window the rates, loads and shares are over (the screen's w),
     * or NULL or last: the last second's. */
    const Lcmon__DataLoaderMetricsProto *rate;
    const Lcmon__Hello *hello; /* the stages' descriptions, or NULL */
    const tui_history *hist;   /* sparklines and fill rates, or NULL */
    size_t selected;           /* the selected stage's index in last */
    bool show_queues;          /* queue rows fit */
    int table_top;             /* first table row shown; the table moves it */
} tui_view;

/* Stage l (of the last second) over the window shown, and *m (may be NULL)
 * the snapshot it is in: what its rates, loads and shares are counted from
 * (l itself and the last second while the window has no such stage). */
const Lcmon__StageMetricProto *tui_view_rate_stage(const tui_view *v,
                                                   const Lcmon__StageMetricProto *l,
                                                   const Lcmon__DataLoaderMetricsProto **m);

#endif
