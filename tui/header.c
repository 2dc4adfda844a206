/*
 * header: the first line, and the pipeline's error under it when it failed.
 *
 *    lcmon  RUNNING  up 1:23  rank 0/1  38.5k pos/s  → lcmon.pipe  reader connected   in-process
 *
 * The rate is over the window the screen shows, which follows it when it
 * is not the last second: "38.5k pos/s (1m)".
 * The line is the headline's rows on LC_HEADLINE_HEADER (monitor/snapshot.h
 * says what they are and how they fit; headline.c has them): when it is too
 * narrow the items that matter least go first, where the loader runs, then
 * the uptime and the rank, and the output path shrinks from the left (its
 * end names the pipe). The state is always there, in words. Here is only
 * the drawing: each item's tone as the theme's element.
 */
#include "tui/header.h"

#include "core/error.h"
#include "tui/widgets.h"

#include <stdio.h>
#include <string.h>

static const char *error_text(const Lcmon__DataLoaderMetricsProto *m)
{
    if (m->state != LCMON__PIPELINE_STATE__PIPELINE_FAILED)
        return NULL;
    return m->error && m->error[0] ? m->error : "the pipeline failed (the log says why)";
}

int tui_header_lines(const Lcmon__DataLoaderMetricsProto *m, int cols)
{
    const char *err = error_text(m);
    if (!err)
        return 1;
    int lines = 0;
    int width = cols - 2 - 7; /* margin and "error: " */
    if (width < 10)
        return 2;
    while (*err && lines < TUI_ERROR_LINES_MAX) {
        size_t adv;
        tui_text_wrap(err, width, &adv);
        err += adv ? adv : strlen(err);
        lines++;
    }
    return 1 + lines;
}

static tui_elem tone_elem(lc_headline_tone t)
{
    switch (t) {
    case LC_TONE_PLAIN:
        return TUI_HEADER;
    case LC_TONE_WARN:
        return TUI_HEADER_WARN;
    case LC_TONE_TITLE:
        return TUI_HEADER_TITLE;
    case LC_TONE_RUNNING:
        return TUI_STATE_RUNNING;
    case LC_TONE_BUSY:
        return TUI_STATE_BUSY;
    case LC_TONE_IDLE:
        return TUI_STATE_IDLE;
    case LC_TONE_FAILED:
        return TUI_STATE_FAILED;
    case LC_TONE_VALUE:
    default:
        return TUI_HEADER_VALUE;
    }
}

/* Draw s in width columns, cutting from the left so that its end shows. */
static int put_tail(WINDOW *w, int y, int x, int width, tui_elem e, const char *s)
{
    int tw = tui_text_width(s);
    if (tw <= width)
        return tui_put(w, y, x, width, e, s);
    const char *ell = tui_glyph()->ellipsis;
    int ew = tui_text_width(ell);
    while (*s && tui_text_width(s) > width - ew) {
        s++;
        while (((unsigned char)*s & 0xc0) == 0x80)
            s++;
    }
    tui_put(w, y, x, ew, e, ell);
    return ew + tui_put(w, y, x + ew, width - ew, e, s);
}

/* ---- the items: the headline's rows on the header ---- */

enum { N_MAX = 32 };

/* The header's items in the headline's table; n of them. */
static size_t header_rows(size_t *rows)
{
    size_t n = 0;
    for (size_t i = 0; i < lc_headline_items() && n < N_MAX; i++)
        if (lc_headline_on(i, LC_HEADLINE_HEADER))
            rows[n++] = i;
    return n;
}

size_t tui_header_items(void)
{
    size_t rows[N_MAX];
    return header_rows(rows);
}

const char *tui_header_item_name(size_t i)
{
    size_t rows[N_MAX];
    return i < header_rows(rows) ? lc_headline_item_name(rows[i]) : NULL;
}

void tui_header_fit(tui_header_size *sz, size_t n, int cols)
{
    lc_headline_fit(sz, n, cols);
}

/* What every item shows now, and its size; how many items. */
static size_t measure(const tui_header_in *in, lc_headline_item *v, tui_header_size *sz)
{
    size_t rows[N_MAX];
    size_t n = header_rows(rows);
    for (size_t i = 0; i < n; i++) {
        sz[i] = (tui_header_size){0};
        if (!lc_headline_value(in, rows[i], LC_HEADLINE_HEADER, &v[i]))
            continue;
        int around = (v[i].joined ? 0 : 2) + tui_text_width(v[i].label) +
                     (v[i].unit ? tui_text_width(v[i].unit) : 0);
        sz[i].width = around + tui_text_width(v[i].text);
        sz[i].right = v[i].right;
        sz[i].drop = v[i].drop;
        sz[i].shrink = v[i].shrink;
        if (v[i].least && around + v[i].least < sz[i].width)
            sz[i].least = around + v[i].least;
    }
    return n;
}

void tui_header_layout(const tui_header_in *in, int cols, int *widths)
{
    lc_headline_item v[N_MAX];
    tui_header_size sz[N_MAX];
    size_t n = measure(in, v, sz);
    tui_header_fit(sz, n, cols);
    for (size_t i = 0; i < n; i++)
        widths[i] = sz[i].width;
}

/* ---- drawing ---- */

/* An item in width columns at x: its gap, label, text and unit. */
static int draw_item(WINDOW *w, int x, int width, const lc_headline_item *v)
{
    int end = x + width, at = x;
    tui_elem e = tone_elem(v->tone);
    if (!v->joined)
        at += tui_put(w, 0, at, end - at, TUI_HEADER, "  ");
    at += tui_put(w, 0, at, end - at, TUI_HEADER, v->label);
    int text = end - at - (v->unit ? tui_text_width(v->unit) : 0);
    switch (v->cut) {
    case LC_CUT_START:
        put_tail(w, 0, at, text, e, v->text);
        at += text; /* the unit stays in its place */
        break;
    case LC_CUT_END_BARE:
        at += tui_put_cut(w, 0, at, text, e, v->text);
        break;
    case LC_CUT_END:
        at += tui_put(w, 0, at, text, e, v->text);
        break;
    }
    if (v->unit)
        at += tui_put(w, 0, at, end - at, TUI_HEADER, v->unit);
    return at - x;
}

/* The line: the left items from the left, the right ones from the right
 * end (after a one-column margin), where the left ones leave room. */
static void header_line_draw(const tui_header_in *in, WINDOW *w, int cols)
{
    lc_headline_item v[N_MAX];
    tui_header_size sz[N_MAX];
    size_t n = measure(in, v, sz);
    tui_header_fit(sz, n, cols);
    int x = 0;
    for (size_t i = 0; i < n; i++)
        if (!sz[i].right && sz[i].width && x < cols)
            x += draw_item(w, x, sz[i].width < cols - x ? sz[i].width : cols - x, &v[i]);
    int right = cols - 1;
    for (size_t i = n; i-- > 0;) {
        if (!sz[i].right || !sz[i].width)
            continue;
        right -= sz[i].width;
        if (right >= x)
            draw_item(w, right, sz[i].width, &v[i]);
    }
}

/* The pipeline's error, wrapped, under the header. */
static void header_error_draw(const Lcmon__DataLoaderMetricsProto *m, WINDOW *w, int cols)
{
    const char *err = error_text(m);
    int lines = getmaxy(w) - 1;
    if (!err || lines <= 0)
        return;
    int width = cols - 2 - 7;
    for (int i = 0; i < lines && *err; i++) {
        if (i == 0)
            tui_put(w, 1, 1, 7, TUI_STATE_FAILED, "error:");
        size_t adv = strlen(err), n = adv;
        if (width >= 10 && i < lines - 1)
            n = tui_text_wrap(err, width, &adv);
        /* The last line takes the rest, cut with an ellipsis. */
        char piece[LC_ERROR_MSG_MAX];
        snprintf(piece, sizeof piece, "%.*s", (int)n, err);
        err += adv ? adv : strlen(err);
        tui_put(w, 1 + i, 1 + 7 + 1, width, TUI_ERROR_TEXT, piece);
    }
}

void tui_header_draw(const tui_header_in *in, WINDOW *w)
{
    int cols = getmaxx(w);
    werase(w);
    tui_fill(w, 0, 0, cols, TUI_HEADER, " ");
    header_line_draw(in, w, cols);
    header_error_draw(in->m, w, cols);
}
