/*
 * widgets: the drawing primitives every panel uses. Text clipped to a
 * number of terminal columns (with an ellipsis when cut), right-aligned
 * values, bars with partial cells, sparklines, rules.
 *
 * Text from the outside (paths, log lines, errors) may hold any bytes:
 * control characters and, outside a UTF-8 locale, non-ASCII bytes are drawn
 * as '?', so nothing a file name contains can move the cursor.
 *
 * Every function draws into a window at (y, x) and never past x + width;
 * they return the number of columns drawn. UI thread only.
 */
#ifndef LC_TUI_WIDGETS_H
#define LC_TUI_WIDGETS_H

#include "tui/crt.h"

#include <stddef.h>

/* Terminal columns that s takes. */
int tui_text_width(const char *s);
/* Bytes of the longest prefix of s that fits in width columns; *cols (if
 * not NULL) receives its width. */
size_t tui_text_fit(const char *s, int width, int *cols);
/* Bytes of s to draw on one wrapped line of width columns: up to a space
 * when there is one in the line's second half, else as much as fits, at
 * least one character. *advance (if not NULL) receives the bytes to skip to
 * the next line's start (the spaces at the break included). */
size_t tui_text_wrap(const char *s, int width, size_t *advance);
/* Draw s, cut to width columns (the last one an ellipsis when cut). */
int tui_put(WINDOW *w, int y, int x, int width, tui_elem e, const char *s);
/* The same, without an ellipsis (for text that is cut on purpose). */
int tui_put_cut(WINDOW *w, int y, int x, int width, tui_elem e, const char *s);
/* Draw s right-aligned in width columns. */
int tui_put_right(WINDOW *w, int y, int x, int width, tui_elem e, const char *s);
/* Fill width columns with a one-column glyph. */
void tui_fill(WINDOW *w, int y, int x, int width, tui_elem e, const char *glyph);
/* A horizontal bar for frac (0..1) of kind k, in width columns (brackets
 * included in ASCII mode); the filled part in element fill. */
int tui_bar(WINDOW *w, int y, int x, int width, double frac, tui_bar_kind k, tui_elem fill);
/* A sparkline of n values (oldest first), right-aligned in width columns,
 * scaled to max (values <= 0 show as the zero glyph). */
void tui_spark(WINDOW *w, int y, int x, int width, const double *v, size_t n, double max);

#endif
