/*
 * header: the screen's first line, as a table of items (header.c), and the
 * fitting that decides which of them the width has room for. Not a public
 * interface: the screen draws the header with tui_header_draw (screen.h);
 * this is what it is made of, for the tests.
 *
 * An item is a row: its name, its side of the line, its label and unit, its
 * priority, how far it may shrink, and the function that says what it
 * shows now. When the line is too narrow, the item of the lowest priority
 * gives way first (it shrinks, when its row says it may, or it goes), then
 * the next, until the line fits; the title, the state, the rate and the
 * reader never go.
 */
#ifndef LC_TUI_HEADER_H
#define LC_TUI_HEADER_H

#include <stdbool.h>
#include <stddef.h>

#include "training_metrics.pb-c.h"

/* What the header reads: the screen's last snapshot and its own state. */
typedef struct tui_header_in {
    const Lcmon__DataLoaderMetricsProto *m;
    bool disconnected; /* an attached loader went away */
    bool stopping;     /* a stop the screen asked for is under way */
    /* Errors and warnings in the log the header counts (0 while the log
     * pane shows them). */
    size_t log_errors, log_warnings;
    const char *where; /* where the loader runs ("in-process", a socket), or NULL */
    /* The window the rate is over (its name, core/metric_windows.h) and
     * its snapshot; NULL: the last second, m. */
    const char *window;
    const Lcmon__DataLoaderMetricsProto *rate;
} tui_header_in;

/* A priority no width takes away. */
#define TUI_HEADER_KEPT 1000

/* An item's size as the fitting sees it. */
typedef struct tui_header_size {
    int width;  /* columns in full (its gap included); 0: nothing to show */
    int least;  /* columns it may shrink to; 0: it does not shrink */
    int shrink; /* the priority of shrinking it */
    int drop;   /* the priority of leaving it out (TUI_HEADER_KEPT: never) */
    bool right; /* on the right end of the line (after a one-column margin) */
} tui_header_size;

/* Fit n items into cols columns: the step of the lowest priority first (a
 * shrink as far as needed, down to its least, or a drop), until the line
 * fits or nothing more can give way. Leaves the widths in sz[i].width (0:
 * left out). Ties go to the item listed first. */
void tui_header_fit(tui_header_size *sz, size_t n, int cols);

/* The header's items, in the order they stand on the line. */
size_t tui_header_items(void);
const char *tui_header_item_name(size_t i);
/* The widths the items get at cols columns (0: not shown), in their
 * order; widths holds tui_header_items(). */
void tui_header_layout(const tui_header_in *in, int cols, int *widths);

#endif
