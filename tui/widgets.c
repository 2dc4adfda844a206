/*
 * widgets: drawing primitives. See widgets.h.
 *
 * Text goes to curses as whole runs (waddnstr) when it is clean, which is
 * the common case; only text with characters to replace is drawn piecewise.
 */
#include "tui/widgets.h"

#include "core/text.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <wchar.h>

/* The next character of s: its byte length, and its width in columns
 * (-1 when it must be drawn as '?': what the log and JSON escape,
 * core/text.h, or anything beyond ASCII on a terminal without Unicode). */
static size_t next_char(const char *s, int *width)
{
    long cp;
    size_t n = lc_utf8_next(s, &cp);
    if ((cp < 0 || cp >= 0x80) && !tui_glyph()->unicode) {
        *width = -1; /* a '?' a byte */
        return 1;
    }
    if (!lc_text_printable(cp) || cp < 0x80) {
        *width = lc_text_printable(cp) ? 1 : -1;
        return n ? n : 1;
    }
    int cw = wcwidth((wchar_t)cp);
    *width = cw < 0 ? -1 : cw;
    return n;
}

int tui_text_width(const char *s)
{
    int total = 0;
    while (*s) {
        int cw;
        s += next_char(s, &cw);
        total += cw < 0 ? 1 : cw;
    }
    return total;
}

size_t tui_text_fit(const char *s, int width, int *cols)
{
    int used = 0;
    size_t bytes = 0;
    while (s[bytes]) {
        int cw;
        size_t n = next_char(s + bytes, &cw);
        int take = cw < 0 ? 1 : cw;
        if (used + take > width)
            break;
        used += take;
        bytes += n;
    }
    if (cols)
        *cols = used;
    return bytes;
}

size_t tui_text_wrap(const char *s, int width, size_t *advance)
{
    size_t fit = tui_text_fit(s, width, NULL);
    size_t draw = fit;
    if (fit == 0) {
        int cw;
        draw = *s ? next_char(s, &cw) : 0;
    } else if (s[fit]) {
        /* Break after the last space in the second half of the line. */
        for (size_t i = fit; i > fit / 2; i--)
            if (s[i] == ' ') {
                draw = i;
                break;
            }
    }
    size_t next = draw;
    while (s[next] == ' ')
        next++;
    while (draw > 0 && s[draw - 1] == ' ')
        draw--;
    if (advance)
        *advance = next;
    return draw;
}

static int put(WINDOW *w, int y, int x, int width, tui_elem e, const char *s, bool ellipsis)
{
    if (width <= 0 || !s)
        return 0;
    /* How much fits, and whether it is clean. */
    int cols = 0;
    size_t bytes = 0;
    bool clean = true;
    bool cut = false;
    const char *p = s;
    while (*p) {
        int cw;
        size_t n = next_char(p, &cw);
        int take = cw < 0 ? 1 : cw;
        if (cols + take > width) {
            cut = true;
            break;
        }
        if (cw < 0)
            clean = false;
        cols += take;
        bytes += n;
        p += n;
    }
    if (cut && ellipsis) {
        /* Give back characters until the ellipsis fits. */
        while (cols > width - 1 && bytes > 0) {
            size_t back = bytes - 1;
            while (back > 0 && ((unsigned char)s[back] & 0xc0) == 0x80)
                back--;
            int cw;
            next_char(s + back, &cw);
            cols -= cw < 0 ? 1 : cw;
            bytes = back;
        }
    }
    wattrset(w, tui_attr(e));
    if (clean) {
        mvwaddnstr(w, y, x, s, (int)bytes);
    } else {
        wmove(w, y, x);
        for (size_t i = 0; i < bytes;) {
            int cw;
            size_t n = next_char(s + i, &cw);
            if (cw < 0)
                waddch(w, '?');
            else
                waddnstr(w, s + i, (int)n);
            i += n;
        }
    }
    if (cut && ellipsis) {
        mvwaddstr(w, y, x + cols, tui_glyph()->ellipsis);
        cols++;
    }
    return cols;
}

int tui_put(WINDOW *w, int y, int x, int width, tui_elem e, const char *s)
{
    return put(w, y, x, width, e, s, true);
}

int tui_put_cut(WINDOW *w, int y, int x, int width, tui_elem e, const char *s)
{
    return put(w, y, x, width, e, s, false);
}

int tui_put_right(WINDOW *w, int y, int x, int width, tui_elem e, const char *s)
{
    int tw = tui_text_width(s);
    if (tw >= width)
        return put(w, y, x, width, e, s, true);
    return put(w, y, x + width - tw, tw, e, s, false);
}

void tui_fill(WINDOW *w, int y, int x, int width, tui_elem e, const char *glyph)
{
    if (width <= 0)
        return;
    char buf[512];
    size_t g = strlen(glyph), used = 0;
    wattrset(w, tui_attr(e));
    wmove(w, y, x);
    for (int i = 0; i < width; i++) {
        if (used + g >= sizeof buf) {
            waddnstr(w, buf, (int)used);
            used = 0;
        }
        memcpy(buf + used, glyph, g);
        used += g;
    }
    waddnstr(w, buf, (int)used);
}

int tui_bar(WINDOW *w, int y, int x, int width, double frac, tui_bar_kind k, tui_elem fill)
{
    const tui_glyphs *g = tui_glyph();
    int open = tui_text_width(g->bar_open), close = tui_text_width(g->bar_close);
    int cells = width - open - close;
    if (cells <= 0)
        return 0;
    /* Under half a percent draws as nothing, as its "0%" label says. */
    if (!(frac >= 0.005))
        frac = 0;
    if (frac > 1)
        frac = 1;
    int full, part = 0;
    const char *const *eighths = g->bar_eighths[k];
    if (eighths) {
        int total = (int)lround(frac * cells * 8);
        if (total == 0 && frac > 0)
            total = 1; /* something, however little, is not nothing */
        full = total / 8;
        part = total % 8;
    } else {
        full = (int)lround(frac * cells);
        if (full == 0 && frac > 0)
            full = 1;
    }
    int col = x;
    if (open) {
        tui_put_cut(w, y, col, open, TUI_DIM, g->bar_open);
        col += open;
    }
    tui_fill(w, y, col, full, fill, g->bar_full[k]);
    col += full;
    if (part) {
        wattrset(w, tui_attr(fill));
        mvwaddstr(w, y, col, eighths[part]);
        col++;
    }
    tui_fill(w, y, col, x + open + cells - col, TUI_BAR_EMPTY, g->bar_empty);
    if (close)
        tui_put_cut(w, y, x + open + cells, close, TUI_DIM, g->bar_close);
    return width;
}

void tui_spark(WINDOW *w, int y, int x, int width, const double *v, size_t n, double max)
{
    const tui_glyphs *g = tui_glyph();
    size_t shown = n < (size_t)width ? n : (size_t)width;
    const double *from = v + (n - shown);
    int col = x + width - (int)shown;
    for (size_t i = 0; i < shown; i++, col++) {
        int level = 0;
        if (from[i] > 0 && max > 0) {
            /* Levels 2..7: level 1 would look like zero, and a full cell
             * would run into the row above. */
            level = 1 + (int)ceil(from[i] / max * 6);
            if (level > 7)
                level = 7;
        }
        wattrset(w, tui_attr(level ? TUI_SPARK : TUI_SPARK_ZERO));
        mvwaddstr(w, y, col, g->spark[level]);
    }
}
