/*
 * tui: lcmon's screen. `lcmon` without --no-ui runs the pipeline behind a
 * monitor and shows it here: a header with the pipeline's state, one row per
 * stage and per queue, sparklines, the log, and a key bar; keys pause and
 * resume stages, restart the pipeline and move the anchor.
 *
 * The screen sees the loader only through an lc_monitor (metrics snapshots,
 * control requests, the log), so it shows a loader in this process or, over
 * the socket, in another one the same way.
 *
 * Modules: crt (terminal, colours, glyphs, restore), theme (the style
 * table), widgets (text, bars, sparklines), derive (numbers from snapshots),
 * history (sparklines and fill rates), header, table (stages and queues),
 * logpane, keys (the key table, key bar and help), screen (the loop).
 */
#ifndef LC_TUI_TUI_H
#define LC_TUI_TUI_H

#include "monitor/monitor.h"

#include <stdbool.h>

typedef struct tui_options {
    const char *theme;  /* a theme name (NULL: default, or monochrome when no_colour) */
    bool no_colour;     /* --no-color, or NO_COLOR set and not empty */
    bool ascii;         /* --ascii: no Unicode block glyphs */
    double refresh_hz;  /* redraws per second (0: the default, TUI_REFRESH_DEFAULT) */
    double max_seconds; /* quit after this long (0: never) */
    bool attached;      /* the loader runs elsewhere (lcmon attach): q detaches */
} tui_options;

#define TUI_REFRESH_DEFAULT 5.0
#define TUI_REFRESH_MIN 0.2
#define TUI_REFRESH_MAX 10.0

/* Call in main before any thread starts: takes the character set from the
 * environment (LC_CTYPE only), which decides Unicode or ASCII glyphs. */
void tui_prepare(void);

/* Whether the screen can run here (stdin and stdout are a terminal that
 * terminfo knows): 0, or -1 with the reason in msg. For checking before the
 * loader starts. */
int tui_check_terminal(char *msg, size_t msg_len);

/* Run the screen until q, SIGINT, SIGTERM or SIGHUP, or max_seconds.
 * Expects SIGINT, SIGTERM, SIGHUP, SIGWINCH and SIGTSTP blocked in every
 * thread (main blocks them before the loader's threads exist); the screen
 * takes them with a signalfd. Log lines must not go to stderr while the
 * screen owns the terminal: the caller switches that off
 * (lc_log_set_stderr(false)) before any thread logs, as the switch is not
 * for threads that run; the lines are in the log pane. The monitor stays
 * the caller's, and so does stopping the pipeline afterwards.
 * Returns 0, or 1 when the screen could not start (message on stderr) or
 * the pipeline had failed when the screen ended. */
int tui_run(lc_monitor *m, const tui_options *o);

/* The names `--theme` accepts, for messages: "default, monochrome, light". */
const char *tui_theme_names(void);
bool tui_theme_known(const char *name);

#endif
