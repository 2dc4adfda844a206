/*
 * crt: the terminal. See crt.h for the contract.
 *
 * Colour pairs are allocated per theme, one per distinct (fg, bg) the theme
 * uses, so even a 64-pair terminal holds every theme. Changing the theme
 * redefines pairs in place; since curses diffs cells by pair number, not by
 * colour, the caller forces one full repaint then (tui_crt_repaint_all).
 *
 * The terminal size comes from TIOCGWINSZ on the resize path only; curses'
 * own SIGWINCH handler never runs because the signal is blocked in every
 * thread and taken by the screen's loop (signalfd).
 */
#include "tui/crt.h"

#include "core/error.h"

#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <term.h>
#include <unistd.h>

static struct {
    SCREEN *screen;
    bool open;
    bool unicode;
    bool no_colour;
    bool has_colour; /* the terminal can */
    bool default_bg; /* use_default_colors worked */
    const tui_theme *theme;
    attr_t attrs[TUI_ELEM_COUNT];
    tui_glyphs glyphs;
} crt;

/* ---- restoring the terminal from anywhere ---- */

static struct termios saved_tio;
static bool have_tio;
static char restore_seq[512];
static size_t restore_len;
static atomic_int restore_armed;

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE,  SIGABRT, SIGILL,
                                    SIGTRAP, SIGSYS, SIGQUIT, SIGXCPU, SIGXFSZ};
#define N_CRASH (sizeof crash_signals / sizeof crash_signals[0])
static struct sigaction previous[N_CRASH];

void tui_crt_emergency_restore(void)
{
    if (!atomic_exchange(&restore_armed, 0))
        return;
    if (have_tio)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
    size_t off = 0;
    while (off < restore_len) {
        ssize_t n = write(STDOUT_FILENO, restore_seq + off, restore_len - off);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            break;
        }
        off += (size_t)n;
    }
}

static void crash_handler(int sig)
{
    tui_crt_emergency_restore();
    for (size_t i = 0; i < N_CRASH; i++)
        if (crash_signals[i] == sig)
            sigaction(sig, &previous[i], NULL);
    /* Delivered to the previous handler when this one returns (the signal
     * is blocked while we run); a real fault also recurs on return. */
    raise(sig);
}

static void append_cap(const char *capname)
{
    char *s = tigetstr((char *)capname);
    if (!s || s == (char *)-1)
        return;
    size_t n = strlen(s);
    if (restore_len + n < sizeof restore_seq) {
        memcpy(restore_seq + restore_len, s, n);
        restore_len += n;
    }
}

static void arm_restore(void)
{
    restore_len = 0;
    append_cap("sgr0");
    append_cap("cnorm");
    append_cap("rmkx");
    append_cap("rmcup");
    atomic_store(&restore_armed, 1);
    for (size_t i = 0; i < N_CRASH; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = crash_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(crash_signals[i], &sa, &previous[i]);
    }
    lc_set_fatal_hook(tui_crt_emergency_restore);
}

static void disarm_restore(void)
{
    lc_set_fatal_hook(NULL);
    for (size_t i = 0; i < N_CRASH; i++)
        sigaction(crash_signals[i], &previous[i], NULL);
    atomic_store(&restore_armed, 0);
}

/* ---- glyphs ---- */

static const char *const eighths_unicode[8] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};

static void choose_glyphs(void)
{
    tui_glyphs *g = &crt.glyphs;
    bool distinct = crt.theme && crt.theme->distinct_bars;
    memset(g, 0, sizeof *g);
    g->unicode = crt.unicode;
    if (crt.unicode) {
        static const char *const spark[9] = {"▁", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
        memcpy(g->spark, spark, sizeof spark);
        g->bar_full[TUI_BARK_LOAD] = "█";
        g->bar_eighths[TUI_BARK_LOAD] = eighths_unicode;
        if (distinct) {
            /* Three kinds of bar, three textures; no partial cells, whose
             * shapes would read as a fourth. */
            g->bar_full[TUI_BARK_QUEUE] = "▓";
            g->bar_full[TUI_BARK_FILL] = "▒";
            g->bar_empty = "·";
        } else {
            g->bar_full[TUI_BARK_QUEUE] = "█";
            g->bar_full[TUI_BARK_FILL] = "█";
            g->bar_eighths[TUI_BARK_QUEUE] = eighths_unicode;
            g->bar_eighths[TUI_BARK_FILL] = eighths_unicode;
            g->bar_empty = "░";
        }
        g->bar_open = "";
        g->bar_close = "";
        g->marker = "▶";
        g->flow = "↓";
        g->hrule = "─";
        g->ellipsis = "…";
        g->sep = "·";
        g->arrow_right = "→";
        g->up_down = "↑↓";
    } else {
        static const char *const spark[9] = {"_", ".", ",", "-", "~", "=", "+", "*", "#"};
        memcpy(g->spark, spark, sizeof spark);
        g->bar_full[TUI_BARK_LOAD] = "#";
        g->bar_full[TUI_BARK_QUEUE] = "=";
        g->bar_full[TUI_BARK_FILL] = "*";
        g->bar_empty = distinct || !tui_crt_colour() ? "." : " ";
        g->bar_open = "[";
        g->bar_close = "]";
        g->marker = ">";
        g->flow = "v";
        g->hrule = "-";
        g->ellipsis = "~";
        g->sep = "|";
        g->arrow_right = "->";
        g->up_down = "Up/Dn";
    }
}

const tui_glyphs *tui_glyph(void)
{
    if (!crt.glyphs.ellipsis) /* no terminal yet (a unit test): ASCII */
        choose_glyphs();
    return &crt.glyphs;
}

/* ---- colours ---- */

bool tui_crt_colour_possible(void)
{
    return crt.has_colour && !crt.no_colour;
}

bool tui_crt_colour(void)
{
    return crt.has_colour && !crt.no_colour && crt.theme && crt.theme->colour;
}

/* A theme colour as the terminal can show it; *bold is set when a bright
 * foreground has to be approximated by bold on an 8-colour terminal. */
static short terminal_colour(short c, bool fg, bool *bold)
{
    if (c == TUI_COLOR_DEFAULT)
        return crt.default_bg ? -1 : (fg ? COLOR_WHITE : COLOR_BLACK);
    if (c >= 8 && COLORS < 16) {
        if (fg)
            *bold = true;
        return (short)(c - 8);
    }
    return c;
}

void tui_crt_set_theme(const tui_theme *t)
{
    crt.theme = t;
    bool colour = tui_crt_colour();
    short pair_fg[64], pair_bg[64];
    int n_pairs = 0;
    int pair_limit = COLOR_PAIRS - 1 < 63 ? COLOR_PAIRS - 1 : 63;
    for (int e = 0; e < TUI_ELEM_COUNT; e++) {
        const tui_style *s = &t->style[e];
        attr_t a = A_NORMAL;
        if (s->attrs & TUI_A_BOLD)
            a |= A_BOLD;
        if (s->attrs & TUI_A_DIM)
            a |= A_DIM;
        if (s->attrs & TUI_A_REVERSE)
            a |= A_REVERSE;
        if (s->attrs & TUI_A_UNDERLINE)
            a |= A_UNDERLINE;
        if (colour) {
            bool bold = false;
            short fg = terminal_colour(s->fg, true, &bold);
            short bg = terminal_colour(s->bg, false, &bold);
            if (bold)
                a |= A_BOLD;
            int pair = 0;
            for (int i = 0; i < n_pairs; i++)
                if (pair_fg[i] == fg && pair_bg[i] == bg)
                    pair = i + 1;
            if (!pair && n_pairs < pair_limit) {
                pair_fg[n_pairs] = fg;
                pair_bg[n_pairs] = bg;
                n_pairs++;
                pair = n_pairs;
                init_pair((short)pair, fg, bg);
            }
            a |= COLOR_PAIR(pair);
        }
        crt.attrs[e] = a;
    }
    choose_glyphs();
}

const tui_theme *tui_crt_theme(void)
{
    return crt.theme;
}

attr_t tui_attr(tui_elem e)
{
    return crt.attrs[e];
}

/* ---- setup, teardown, resize ---- */

int tui_crt_check(char *msg, size_t msg_len)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        snprintf(msg, msg_len, "the screen needs a terminal (use --no-ui to run headless)");
        return -1;
    }
    int err = 0;
    if (setupterm(NULL, STDOUT_FILENO, &err) != OK) {
        const char *term = getenv("TERM");
        snprintf(msg, msg_len, "cannot open the screen on terminal type '%s' (use --no-ui)",
                 term ? term : "(unset)");
        return -1;
    }
    del_curterm(cur_term);
    return 0;
}

int tui_crt_open(const tui_crt_options *o, char *msg, size_t msg_len)
{
    if (tui_crt_check(msg, msg_len) != 0)
        return -1;
    const char *codeset = nl_langinfo(CODESET);
    crt.unicode = !o->ascii && codeset && strcmp(codeset, "UTF-8") == 0;
    crt.no_colour = o->no_colour;
    have_tio = tcgetattr(STDIN_FILENO, &saved_tio) == 0;

    crt.screen = newterm(NULL, stdout, stdin);
    if (!crt.screen) {
        const char *term = getenv("TERM");
        snprintf(msg, msg_len, "cannot open the screen on terminal type '%s' (use --no-ui)",
                 term ? term : "(unset)");
        return -1;
    }
    set_term(crt.screen);
    crt.open = true;
    cbreak();
    noecho();
    nonl();
    intrflush(stdscr, FALSE);
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    crt.has_colour = has_colors();
    if (crt.has_colour) {
        start_color();
        crt.default_bg = use_default_colors() == OK;
    }
    arm_restore();
    tui_crt_set_theme(tui_themes[0]);
    return 0;
}

void tui_crt_close(void)
{
    if (!crt.open)
        return;
    crt.open = false;
    curs_set(1);
    endwin();
    disarm_restore();
    delscreen(crt.screen);
    crt.screen = NULL;
    fflush(stdout);
}

void tui_crt_resize(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
        resizeterm(ws.ws_row, ws.ws_col);
    /* The terminal may have reflowed or cleared what it showed; repaint
     * every cell once rather than trust the old picture. */
    clearok(curscr, TRUE);
}

void tui_crt_suspend(void)
{
    endwin();
    atomic_store(&restore_armed, 0);
    kill(getpid(), SIGSTOP);
    /* SIGCONT: back in curses mode at the next doupdate. */
    atomic_store(&restore_armed, 1);
    reset_prog_mode();
    tui_crt_resize();
}

void tui_crt_repaint_all(void)
{
    clearok(curscr, TRUE);
}
