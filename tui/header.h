/*
 * header: the screen's first line, as a table of items (header.c), and the
 * fitting that decides which of them the width has room for. Not a public
 * interface: the screen draws the header with tui_header_draw, and the
 * tests look at what it is made of.
 *
 * An item is a row of the headline (monitor/snapshot.h, headline.c), the
 * table the status lines show too: its name, its side of the line, its
 * label and unit, its priority, how far it may shrink, and the function
 * that says what it shows now. The header draws it with the theme's
 * elements. When the line is too narrow, the item of the lowest priority
 * gives way first (it shrinks, when its row says it may, or it goes), then
 * the next, until the line fits; the title, the state, the rate and the
 * reader never go.
 */
#ifndef LC_TUI_HEADER_H
#define LC_TUI_HEADER_H

#include <stdbool.h>
#include <stddef.h>

#include "monitor/snapshot.h"
#include "tui/crt.h"

/* Lines of the pipeline's error under the header, at most. */
#define TUI_ERROR_LINES_MAX 3

/* What the header reads: the screen's last snapshot and its own state
 * (monitor/snapshot.h's headline input). */
typedef lc_headline_in tui_header_in;

/* A priority no width takes away. */
#define TUI_HEADER_KEPT LC_HEADLINE_KEPT

/* An item's size as the fitting sees it. */
typedef lc_headline_size tui_header_size;

/* Fit n items into cols columns (lc_headline_fit, the one fitting the
 * status lines use too). */
void tui_header_fit(tui_header_size *sz, size_t n, int cols);

/* The header's items (the headline's rows on LC_HEADLINE_HEADER), in the
 * order they stand on the line. */
size_t tui_header_items(void);
const char *tui_header_item_name(size_t i);
/* The widths the items get at cols columns (0: not shown), in their
 * order; widths holds tui_header_items(). */
void tui_header_layout(const tui_header_in *in, int cols, int *widths);

/* Lines the header takes at cols columns: 1, and the pipeline's error
 * (m's) under it when it failed. */
int tui_header_lines(const Lcmon__DataLoaderMetricsProto *m, int cols);
/* Draw the header into w (its width). */
void tui_header_draw(const tui_header_in *in, WINDOW *w);

#endif
