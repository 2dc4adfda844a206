/*
 * logpane: the log ring and its pane. See logpane.h.
 */
#include "tui/logpane.h"

#include "core/error.h"
#include "tui/widgets.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define READ_BATCH 64
#define SCREEN_THREAD "screen"

struct tui_logpane {
    lc_log_entry ring[TUI_LOG_LINES];
    size_t head, count; /* head: where the next line goes */
    uint64_t after;     /* the monitor's last sequence number read */
    size_t errors, warnings;
    long scroll; /* rows back from the newest */
    int width;   /* text width at the last draw, for row counts */
    lc_log_entry batch[READ_BATCH];
};

tui_logpane *tui_logpane_new(void)
{
    tui_logpane *lp = lc_xcalloc(1, sizeof *lp);
    lp->width = 80;
    return lp;
}

void tui_logpane_free(tui_logpane *lp)
{
    free(lp);
}

static const lc_log_entry *nth_newest(const tui_logpane *lp, size_t k)
{
    return &lp->ring[(lp->head + TUI_LOG_LINES - 1 - k) % TUI_LOG_LINES];
}

static bool own(const lc_log_entry *e)
{
    return strcmp(e->thread, SCREEN_THREAD) == 0;
}

/* ---- layout of one line: "12:03:04 error [thread] text" ---- */

#define TIME_W 9  /* "12:03:04 " */
#define LEVEL_W 6 /* "error " */

static bool show_thread(int width)
{
    return width >= 120;
}

static int prefix_width(const lc_log_entry *e, int width)
{
    int w = TIME_W + LEVEL_W;
    if (show_thread(width))
        w += (int)strlen(e->thread) + 3;
    return w;
}

static int rows_of(const lc_log_entry *e, int width)
{
    int avail = width - prefix_width(e, width);
    if (avail < 10)
        return 1;
    int rows = 0;
    const char *s = e->text;
    do {
        size_t adv;
        tui_text_wrap(s, rows == 0 ? avail : width - TIME_W, &adv);
        s += adv;
        rows++;
        if (adv == 0)
            break;
    } while (*s);
    return rows;
}

static void push(tui_logpane *lp, const lc_log_entry *e)
{
    if (lp->count == TUI_LOG_LINES) {
        const lc_log_entry *old = &lp->ring[lp->head];
        if (old->level == LC_LOG_ERROR)
            lp->errors--;
        else if (old->level == LC_LOG_WARN)
            lp->warnings--;
    } else {
        lp->count++;
    }
    lp->ring[lp->head] = *e;
    lp->head = (lp->head + 1) % TUI_LOG_LINES;
    if (e->level == LC_LOG_ERROR)
        lp->errors++;
    else if (e->level == LC_LOG_WARN)
        lp->warnings++;
    /* Scrolled back: keep looking at the same lines. */
    if (lp->scroll > 0)
        lp->scroll += rows_of(e, lp->width);
}

void tui_logpane_add(tui_logpane *lp, lc_log_level level, const char *fmt, ...)
{
    lc_log_entry e;
    memset(&e, 0, sizeof e);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    e.wall_time = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    e.level = level;
    snprintf(e.thread, sizeof e.thread, "%s", SCREEN_THREAD);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.text, sizeof e.text, fmt, ap);
    va_end(ap);
    push(lp, &e);
}

size_t tui_logpane_poll(tui_logpane *lp, lc_monitor *m)
{
    size_t total = 0;
    for (;;) {
        uint64_t next = lp->after;
        size_t n = lc_monitor_read_log(m, lp->after, lp->batch, READ_BATCH, &next);
        if (n == 0)
            break;
        if (lp->batch[0].seq > lp->after + 1 && lp->after > 0)
            tui_logpane_add(lp, LC_LOG_WARN, "%llu log lines went by before the screen read them",
                            (unsigned long long)(lp->batch[0].seq - lp->after - 1));
        for (size_t i = 0; i < n; i++)
            push(lp, &lp->batch[i]);
        lp->after = next;
        total += n;
        if (n < READ_BATCH)
            break;
    }
    return total;
}

bool tui_logpane_contains(const tui_logpane *lp, const char *text)
{
    for (size_t k = 0; k < lp->count; k++)
        if (strstr(nth_newest(lp, k)->text, text))
            return true;
    return false;
}

size_t tui_logpane_errors(const tui_logpane *lp)
{
    return lp->errors;
}

size_t tui_logpane_warnings(const tui_logpane *lp)
{
    return lp->warnings;
}

void tui_logpane_scroll(tui_logpane *lp, long lines)
{
    lp->scroll += lines;
    if (lp->scroll < 0)
        lp->scroll = 0;
    /* The upper bound depends on the width; draw() clamps it. */
}

void tui_logpane_end(tui_logpane *lp)
{
    lp->scroll = 0;
}

static tui_elem text_elem(const lc_log_entry *e)
{
    switch (e->level) {
    case LC_LOG_ERROR:
        return TUI_LOG_ERROR;
    case LC_LOG_WARN:
        return TUI_LOG_WARN;
    case LC_LOG_DEBUG:
        return TUI_LOG_DEBUG;
    default:
        return own(e) ? TUI_LOG_SCREEN : TUI_LOG_INFO;
    }
}

/* Draw entry e's rows [skip, skip + max) from row y on; returns rows drawn. */
static int draw_entry(WINDOW *win, int y, int width, const lc_log_entry *e, int skip, int max)
{
    int drawn = 0, row = 0;
    const char *s = e->text;
    int pw = prefix_width(e, width);
    tui_elem te = text_elem(e);
    do {
        int x = row == 0 ? pw : TIME_W;
        int avail = width - x;
        size_t adv = strlen(s), n = adv;
        if (avail >= 10)
            n = tui_text_wrap(s, avail, &adv);
        if (row >= skip && drawn < max) {
            int yy = y + drawn;
            if (row == 0) {
                time_t secs = (time_t)e->wall_time;
                struct tm tm;
                localtime_r(&secs, &tm);
                char stamp[16];
                strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
                tui_put(win, yy, 0, TIME_W - 1, TUI_LOG_TIME, stamp);
                tui_put(win, yy, TIME_W, LEVEL_W - 1, te == TUI_LOG_INFO ? TUI_DIM : te,
                        own(e) && e->level == LC_LOG_INFO ? "note" : lc_log_level_name(e->level));
                if (show_thread(width)) {
                    char th[24];
                    snprintf(th, sizeof th, "[%s]", e->thread);
                    tui_put(win, yy, TIME_W + LEVEL_W, (int)strlen(th), TUI_DIM, th);
                }
            }
            char piece[LC_LOG_LINE_MAX];
            snprintf(piece, sizeof piece, "%.*s", (int)n, s);
            tui_put(win, yy, x, avail, te, piece);
            drawn++;
        }
        s += adv;
        row++;
        if (adv == 0)
            break;
    } while (*s);
    return drawn;
}

void tui_logpane_draw(tui_logpane *lp, WINDOW *win)
{
    int h = getmaxy(win), width = getmaxx(win);
    const tui_glyphs *g = tui_glyph();
    lp->width = width;
    werase(win);
    if (h <= 0)
        return;

    /* Rows available for lines, and the total rows of the kept lines, to
     * clamp the scroll position. */
    int rows_avail = h - 1;
    long total_rows = 0;
    for (size_t k = 0; k < lp->count && total_rows <= lp->scroll + rows_avail; k++)
        total_rows += rows_of(nth_newest(lp, k), width);
    if (lp->scroll > total_rows - rows_avail)
        lp->scroll = total_rows - rows_avail > 0 ? total_rows - rows_avail : 0;

    /* Title rule. */
    char title[160];
    int len =
        snprintf(title, sizeof title, " log: %zu line%s", lp->count, lp->count == 1 ? "" : "s");
    if (lp->errors)
        len += snprintf(title + len, sizeof title - (size_t)len, ", %zu error%s", lp->errors,
                        lp->errors == 1 ? "" : "s");
    if (lp->warnings)
        len += snprintf(title + len, sizeof title - (size_t)len, ", %zu warning%s", lp->warnings,
                        lp->warnings == 1 ? "" : "s");
    snprintf(title + len, sizeof title - (size_t)len, " ");
    tui_fill(win, 0, 0, width, TUI_LOG_TITLE, g->hrule);
    int x = tui_put(win, 0, 2, width - 4, lp->errors ? TUI_LOG_ERROR : TUI_LOG_TITLE, title);
    char right[80];
    if (lp->scroll > 0)
        snprintf(right, sizeof right, " scrolled back %ld rows (End: newest) ", lp->scroll);
    else
        snprintf(right, sizeof right, " PgUp/PgDn scroll ");
    int rw = tui_text_width(right);
    if (2 + x + rw + 2 <= width)
        tui_put(win, 0, width - rw - 2, rw, lp->scroll > 0 ? TUI_WARN : TUI_LOG_TITLE, right);

    /* Lines, newest at the bottom: walk back from the newest, skipping
     * `scroll` rows, and place entries bottom-up. */
    long skip = lp->scroll;
    /* rows [1, bottom) are still free; a pane with room to spare fills from
     * the top. */
    int bottom = total_rows < rows_avail ? 1 + (int)total_rows : h;
    for (size_t k = 0; k < lp->count && bottom > 1; k++) {
        const lc_log_entry *e = nth_newest(lp, k);
        int rows = rows_of(e, width);
        if (skip >= rows) {
            skip -= rows;
            continue;
        }
        /* Rows of this entry shown: [0, rows - skip), the last ones cut by
         * the scroll position; the first ones cut by the top. */
        int visible = rows - (int)skip;
        skip = 0;
        int first = 0;
        if (visible > bottom - 1) {
            first = visible - (bottom - 1);
            visible = bottom - 1;
        }
        draw_entry(win, bottom - visible, width, e, first, visible);
        bottom -= visible;
    }
}
