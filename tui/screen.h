/*
 * screen: the state of a running screen, shared by its modules (the loop in
 * screen.c, the panels that draw it, the key actions that change it). Not a
 * public interface: tui.h is.
 *
 * Layout (rows, top to bottom), made in one place (screen.c) whenever the
 * size or what is shown changes:
 *
 *   header      1 line, plus up to 3 lines of pipeline error when it failed
 *   table       column headings, then stage and queue rows
 *   log pane    a title rule and the newest lines (hidden by `l`, or when
 *               the terminal is too short for it)
 *   message     results of actions, or the anchor prompt
 *   key bar     the keys, the theme and the refresh rate
 *
 * UI thread only.
 */
#ifndef LC_TUI_SCREEN_H
#define LC_TUI_SCREEN_H

#include "monitor/monitor.h"
#include "tui/crt.h"
#include "tui/history.h"
#include "tui/logpane.h"
#include "tui/tui.h"

#include <stdbool.h>
#include <stddef.h>

#define TUI_MIN_COLS 50
#define TUI_MIN_ROWS 10

typedef struct tui_screen {
    lc_monitor *mon;
    tui_options opt;

    /* The snapshots drawn: the last second and all time (never NULL once
     * the loop runs; a monitor that returns none leaves the old ones).
     * last and all are the messages of the shared last_snap and all_snap. */
    lc_snapshot *last_snap, *all_snap;
    const Lcmon__DataLoaderMetricsProto *last, *all;
    /* The window of time the rates, loads and shares are over (w cycles
     * it): its snapshot (rate, of the shared rate_snap), or the last
     * second's while a remote loader has not sent it yet (NULL: the last
     * second's). */
    lc_window window;
    lc_snapshot *rate_snap;
    const Lcmon__DataLoaderMetricsProto *rate;
    tui_history *hist;
    tui_logpane *log;

    /* Windows, and the layout they were made for. */
    WINDOW *w_header, *w_table, *w_log, *w_msg, *w_keys, *w_help;
    int rows, cols;
    int header_h, table_h, log_h;
    bool show_queues; /* queue rows fit */
    int table_top;    /* first table row shown when the table scrolls */
    bool too_small;
    bool relayout; /* make the windows again before the next draw */

    /* What the user chose. */
    size_t selected; /* index of the selected stage in `last` */
    char selected_name[64];
    bool show_log;
    bool help;
    bool quit;
    double refresh_hz;

    /* The message line. */
    char message[320];
    bool message_error;
    double message_until;

    /* The anchor prompt (on the message line). */
    bool prompting;
    char input[256];

    /* Stop-then-start (S): the moment to start again, 0 when none. */
    double restart_at;
    bool stopping; /* drawn as the header's state during a stop */

    char last_error[512]; /* the pipeline error already put in the log */
    bool disconnected;    /* an attached loader went away: the numbers are its last */
    int exit_code;
} tui_screen;

/* A message for the message line (kept about 10 seconds). */
void tui_screen_message(tui_screen *s, bool error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Fetch fresh snapshots from the monitor. */
void tui_screen_fetch(tui_screen *s);
/* Draw everything now. */
void tui_screen_draw(tui_screen *s);

/* The selected stage in the latest snapshot, or NULL. */
const Lcmon__StageMetricProto *tui_screen_selected(const tui_screen *s);

/* Panels (keys.c; the header, the table and its details are below the
 * screen: header.h, table.h, details.h, which read a view, view.h). */
void tui_keybar_draw(const tui_screen *s, WINDOW *w);
void tui_message_draw(const tui_screen *s, WINDOW *w);
void tui_help_draw(const tui_screen *s, WINDOW *w);
/* Run the action bound to key ch; false when nothing is bound to it. */
bool tui_keys_dispatch(tui_screen *s, int ch);
/* The loader's commands the keys run, by name, into names (at most max);
 * how many there are. */
size_t tui_key_commands(const char **names, size_t max);
/* A key while the anchor prompt is open. */
void tui_prompt_key(tui_screen *s, int ch);

#endif
