/*
 * logpane: the screen's copy of the log, and the pane that shows it.
 *
 * The pane keeps the last TUI_LOG_LINES lines in a ring: the loader's lines,
 * read through the monitor (lc_monitor_read_log, "everything after the last
 * line I saw"), and the screen's own reports (an anchor reset and its
 * count, a restart), which go only here. Lines the loader's ring dropped
 * before the screen read them are announced as a gap. Errors are counted so
 * the header can say "2 errors" even when the pane is hidden.
 *
 * Scrolling is by lines from the newest: 0 follows new lines; while
 * scrolled back the view stays put as lines arrive. Long lines wrap.
 * UI thread only.
 */
#ifndef LC_TUI_LOGPANE_H
#define LC_TUI_LOGPANE_H

#include "core/log.h"
#include "monitor/monitor.h"
#include "tui/crt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TUI_LOG_LINES 1000

typedef struct tui_logpane tui_logpane;

tui_logpane *tui_logpane_new(void);
void tui_logpane_free(tui_logpane *lp);

/* Read the monitor's new lines; returns how many arrived. */
size_t tui_logpane_poll(tui_logpane *lp, lc_monitor *m);
/* Add one of the screen's own lines. */
void tui_logpane_add(tui_logpane *lp, lc_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* True when a kept line contains text. */
bool tui_logpane_contains(const tui_logpane *lp, const char *text);
/* Error lines kept (warnings separately). */
size_t tui_logpane_errors(const tui_logpane *lp);
size_t tui_logpane_warnings(const tui_logpane *lp);

/* Scroll back (positive) or forward (negative) by lines; end() follows. */
void tui_logpane_scroll(tui_logpane *lp, long lines);
void tui_logpane_end(tui_logpane *lp);

/* Draw into win: a title rule on its first line, lines below. */
void tui_logpane_draw(tui_logpane *lp, WINDOW *win);

#endif
