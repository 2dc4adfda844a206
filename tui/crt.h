/*
 * crt: the terminal. Curses setup and teardown, colour pairs and attributes
 * for the current theme, the glyphs for bars and sparklines (Unicode block
 * elements or plain ASCII), the one resize path, suspend on Ctrl-Z, and
 * restoring the terminal however the program ends.
 *
 * Restoring: tui_crt_open saves the terminal's modes and precomputes the
 * escape sequences that leave curses mode (attributes off, cursor on, keypad
 * off, the normal screen back). A crash signal (SIGSEGV, SIGBUS, SIGFPE,
 * SIGABRT) or lc_fatal() writes them with async-signal-safe calls only, then
 * lets the previous handler (the default, or a sanitizer's) run, so that the
 * report lands on a usable terminal. Restoring happens at most once.
 *
 * Threads: every function except the crash path is for the UI thread only
 * (the one thread that calls curses).
 */
#ifndef LC_TUI_CRT_H
#define LC_TUI_CRT_H

#include "tui/theme.h"

#include <curses.h>
#include <stdbool.h>

typedef struct tui_crt_options {
    bool ascii;     /* no Unicode glyphs, whatever the locale says */
    bool no_colour; /* --no-color or NO_COLOR: never use colour pairs */
} tui_crt_options;

/* Whether curses can run on stdin/stdout (both terminals, a TERM that
 * terminfo knows); 0, or -1 with a message. Changes nothing. */
int tui_crt_check(char *msg, size_t msg_len);
/* Enter curses mode on stdin/stdout. Returns 0, or -1 with a message in
 * msg (no terminal, unknown TERM). */
int tui_crt_open(const tui_crt_options *o, char *msg, size_t msg_len);
/* Leave curses mode and restore the terminal. Safe to call twice. */
void tui_crt_close(void);

/* Use theme t from now on (the next full redraw shows it). */
void tui_crt_set_theme(const tui_theme *t);
const tui_theme *tui_crt_theme(void);
/* True when colours are in use (a colour theme on a colour terminal, and
 * neither --no-color nor NO_COLOR). */
bool tui_crt_colour(void);
/* True when colour themes can show colour here (a colour terminal, and
 * neither --no-color nor NO_COLOR). */
bool tui_crt_colour_possible(void);
/* The curses attribute (colour pair included) of a semantic element. */
attr_t tui_attr(tui_elem e);

typedef enum tui_bar_kind {
    TUI_BARK_LOAD,
    TUI_BARK_QUEUE,
    TUI_BARK_FILL,
    TUI_BARK_COUNT
} tui_bar_kind;

typedef struct tui_glyphs {
    bool unicode;
    const char *bar_full[TUI_BARK_COUNT];
    /* Partial cells [1..7] in eighths, per kind; NULL: whole cells only. */
    const char *const *bar_eighths[TUI_BARK_COUNT];
    const char *bar_empty;
    const char *bar_open, *bar_close; /* "" or "[" and "]" */
    const char *spark[9];             /* [0]: a second with nothing, [2..7] rising */
    const char *marker;               /* the selected row */
    const char *flow;                 /* queue rows: "↓" */
    const char *hrule;
    const char *ellipsis;
    const char *sep;         /* between items on a line: "·" */
    const char *arrow_right; /* header: the output path */
    const char *up_down;     /* key bar: "↑↓" */
} tui_glyphs;

/* The glyphs for the current theme and --ascii / locale (ASCII before the
 * terminal opens). */
const tui_glyphs *tui_glyph(void);

/* The one resize path: read the terminal's new size and resize curses to it
 * once (resizeterm), then force a full repaint so no old cell survives.
 * Called by the screen's loop on SIGWINCH. */
void tui_crt_resize(void);
/* Ctrl-Z: leave curses mode, stop the process, and come back on SIGCONT
 * (then the caller resizes and repaints everything). */
void tui_crt_suspend(void);
/* Force the next doupdate() to repaint every cell (theme changes). */
void tui_crt_repaint_all(void);

/* Restore the terminal from any context, async-signal-safe; the crash and
 * fatal hooks use it. */
void tui_crt_emergency_restore(void);

#endif
