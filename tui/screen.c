/*
 * screen: the loop that runs the screen, the layout, and tui_run.
 *
 * One thread (the caller's) does everything here. It waits in poll() on the
 * keyboard and on a signalfd for SIGINT, SIGTERM, SIGHUP (quit), SIGWINCH
 * (the one resize path) and SIGTSTP (suspend), with a timeout to the next
 * thing due:
 *
 *   - a frame, refresh_hz times a second: new snapshots from the monitor,
 *     new log lines, and a redraw;
 *   - a sample, once a second: each stage's items/s into the history that
 *     the sparklines show;
 *   - the start half of a stop-then-start (S);
 *   - the end of --max-seconds.
 *
 * A key redraws at once from the snapshots at hand. Every redraw erases and
 * redraws the windows' contents and ends in one doupdate(): curses compares
 * with what the terminal shows and sends only the cells that changed, so a
 * still screen costs nothing on the wire and nothing flickers. The whole
 * screen is repainted only after a resize, a theme change, Ctrl-L or a
 * suspend.
 */
#include "tui/screen.h"

#include "core/clock.h"
#include "core/log.h"
#include "tui/derive.h"
#include "tui/header.h"
#include "tui/table.h"
#include "tui/widgets.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

void tui_prepare(void)
{
    setlocale(LC_CTYPE, "");
}

int tui_check_terminal(char *msg, size_t msg_len)
{
    return tui_crt_check(msg, msg_len);
}

const char *tui_theme_names(void)
{
    return tui_theme_list();
}

bool tui_theme_known(const char *name)
{
    return tui_theme_find(name) != NULL;
}

void tui_screen_message(tui_screen *s, bool error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->message, sizeof s->message, fmt, ap);
    va_end(ap);
    s->message_error = error;
    s->message_until = lc_now_seconds() + 10.0;
    if (error)
        tui_logpane_add(s->log, LC_LOG_ERROR, "%s", s->message);
}

const Lcmon__StageMetricProto *tui_screen_selected(const tui_screen *s)
{
    if (!s->last || s->selected >= s->last->n_stage_metrics)
        return NULL;
    return s->last->stage_metrics[s->selected];
}

/* ---- snapshots ---- */

static lc_snapshot *empty_snapshot(void)
{
    Lcmon__DataLoaderMetricsProto *p = lc_xmalloc(sizeof *p);
    lcmon__data_loader_metrics_proto__init(p);
    return lc_snapshot_wrap(p);
}

/* Draw from last and all from now on (the screen's references). */
static void keep_snapshots(tui_screen *s, lc_snapshot *last, lc_snapshot *all)
{
    lc_snapshot_unref(s->last_snap);
    lc_snapshot_unref(s->all_snap);
    s->last_snap = last;
    s->all_snap = all;
    s->last = lc_snapshot_msg(last);
    s->all = lc_snapshot_msg(all);
}

/* The window's snapshot: the last second's or all time's, another from the
 * monitor, or the last second's until that one comes. */
static void keep_window(tui_screen *s)
{
    lc_snapshot *w = s->window == LC_WINDOW_1S    ? NULL
                     : s->window == LC_WINDOW_ALL ? lc_snapshot_ref(s->all_snap)
                                                  : lc_monitor_window(s->mon, s->window);
    if (!w)
        w = lc_snapshot_ref(s->last_snap);
    lc_snapshot_unref(s->rate_snap);
    s->rate_snap = w;
    s->rate = lc_snapshot_msg(w);
}

/* The pipeline's error goes to the log pane once, unless the loader's own
 * log already said it. */
static void note_failure(tui_screen *s)
{
    const Lcmon__DataLoaderMetricsProto *m = s->last;
    if (m->state != LCMON__PIPELINE_STATE__PIPELINE_FAILED) {
        s->last_error[0] = '\0';
        return;
    }
    const char *err = m->error && m->error[0] ? m->error : "the pipeline failed";
    if (strncmp(s->last_error, err, sizeof s->last_error - 1) == 0)
        return;
    snprintf(s->last_error, sizeof s->last_error, "%s", err);
    if (!tui_logpane_contains(s->log, err))
        tui_logpane_add(s->log, LC_LOG_ERROR, "the pipeline failed: %s", err);
}

void tui_screen_fetch(tui_screen *s)
{
    lc_snapshot *last = lc_monitor_metrics(s->mon, false);
    lc_snapshot *all = last ? lc_monitor_metrics(s->mon, true) : NULL;
    if (last && all) {
        keep_snapshots(s, last, all);
        keep_window(s);
        s->disconnected = false;
    } else {
        lc_snapshot_unref(last);
        lc_snapshot_unref(all);
        /* A loader that answered before and no longer does went away: say
         * so once, and the header says it while the old numbers stay. */
        if (s->last->has_state && !s->disconnected) {
            s->disconnected = true;
            const char *where = lc_monitor_where(s->mon);
            tui_logpane_add(s->log, LC_LOG_ERROR,
                            "lost the loader%s%s: the numbers shown are the last it sent",
                            where ? " at " : "", where ? where : "");
        }
    }
    tui_logpane_poll(s->log, s->mon);
    note_failure(s);

    /* Keep the same stage selected by name across restarts. */
    size_t n = s->last->n_stage_metrics;
    for (size_t i = 0; i < n; i++) {
        const char *name = s->last->stage_metrics[i]->name;
        if (name && strcmp(name, s->selected_name) == 0)
            s->selected = i;
    }
    if (s->selected >= n)
        s->selected = n ? n - 1 : 0;
    if (n) {
        const char *name = s->last->stage_metrics[s->selected]->name;
        snprintf(s->selected_name, sizeof s->selected_name, "%s", name ? name : "");
    }

    /* Fill levels, for the time left of the fills that say it (the
     * reservoir's). */
    double now = lc_now_seconds();
    const Lcmon__Hello *hello = lc_monitor_hello(s->mon);
    for (size_t i = 0; i < n; i++) {
        const Lcmon__StageMetricProto *st = s->last->stage_metrics[i];
        const Lcmon__MetricDisplay *e = tui_eta_fill(tui_describe_stage(hello, st->name));
        const Lcmon__GaugeMetricProto *g = e ? lc_snapshot_find_gauge(st, e->metric) : NULL;
        if (g && g->has_capacity)
            tui_history_fill(s->hist, st->name, g->value, now);
    }
}

/* ---- layout: the one place that decides where everything goes ---- */

static void free_windows(tui_screen *s)
{
    WINDOW **all[] = {&s->w_header, &s->w_table, &s->w_log, &s->w_msg, &s->w_keys, &s->w_help};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i]) {
            delwin(*all[i]);
            *all[i] = NULL;
        }
}

static WINDOW *make_window(int h, int w, int y, int x)
{
    WINDOW *win = newwin(h, w, y, x);
    if (!win)
        lc_fatal("cannot make a %dx%d window", w, h);
    wbkgdset(win, (chtype)tui_attr(TUI_NORMAL) | ' ');
    return win;
}

/* What the layout depends on, to notice when it must change. */
static void wanted(const tui_screen *s, int *header_h, int *table_h, int *log_h, bool *queues)
{
    int rows = LINES, cols = COLS;
    *header_h = tui_header_lines(s->last, cols);
    int body = rows - *header_h - 2; /* message line and key bar */
    int full = tui_table_rows(s->last, true), slim = tui_table_rows(s->last, false);
    /* The log needs its title and two lines to be worth showing; at 80x24
     * that is what is left under the full table. */
    const int log_min = 3;
    *queues = full <= body;
    int table = *queues ? full : slim;
    if (table > body)
        table = body;
    *log_h = s->show_log && body - table >= log_min ? body - table : 0;
    *table_h = body - *log_h;
}

static void layout(tui_screen *s)
{
    int header_h, table_h, log_h;
    bool queues;
    wanted(s, &header_h, &table_h, &log_h, &queues);
    if (!s->relayout && s->rows == LINES && s->cols == COLS && header_h == s->header_h &&
        table_h == s->table_h && log_h == s->log_h && queues == s->show_queues)
        return;
    free_windows(s);
    s->relayout = false;
    s->rows = LINES;
    s->cols = COLS;
    s->too_small = LINES < TUI_MIN_ROWS || COLS < TUI_MIN_COLS;
    s->header_h = header_h;
    s->table_h = table_h;
    s->log_h = log_h;
    s->show_queues = queues;
    /* Everything old goes; the new windows cover every cell. */
    werase(stdscr);
    wnoutrefresh(stdscr);
    if (s->too_small)
        return;
    int y = 0;
    s->w_header = make_window(header_h, COLS, y, 0);
    y += header_h;
    s->w_table = make_window(table_h, COLS, y, 0);
    y += table_h;
    if (log_h) {
        s->w_log = make_window(log_h, COLS, y, 0);
        y += log_h;
    }
    s->w_msg = make_window(1, COLS, LINES - 2, 0);
    s->w_keys = make_window(1, COLS, LINES - 1, 0);
    s->w_help = make_window(LINES, COLS, 0, 0);
}

static void set_backgrounds(tui_screen *s)
{
    WINDOW *all[] = {s->w_header, s->w_table, s->w_log, s->w_msg, s->w_keys, s->w_help, stdscr};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            wbkgdset(all[i], (chtype)tui_attr(TUI_NORMAL) | ' ');
}

/* What the panels under the screen draw from now. */
static tui_view view(const tui_screen *s)
{
    return (tui_view){
        .last = s->last,
        .all = s->all,
        .rate = s->rate,
        .hello = lc_monitor_hello(s->mon),
        .hist = s->hist,
        .selected = s->selected,
        .show_queues = s->show_queues,
        .table_top = s->table_top,
    };
}

static void header_draw(const tui_screen *s)
{
    tui_header_in in = {
        .m = s->last,
        .disconnected = s->disconnected,
        .stopping = s->stopping,
        /* hidden by l, or no room for the pane */
        .log_errors = s->log_h ? 0 : tui_logpane_errors(s->log),
        .log_warnings = s->log_h ? 0 : tui_logpane_warnings(s->log),
        .where = lc_monitor_where(s->mon),
        .window = lc_window_name(s->window),
        .rate = s->rate,
        .arrow = tui_glyph()->arrow_right,
    };
    tui_header_draw(&in, s->w_header);
}

void tui_screen_draw(tui_screen *s)
{
    layout(s);
    set_backgrounds(s);
    if (s->too_small) {
        werase(stdscr);
        char msg[96];
        snprintf(msg, sizeof msg, "lcmon needs %dx%d, has %dx%d", TUI_MIN_COLS, TUI_MIN_ROWS, COLS,
                 LINES);
        tui_put(stdscr, LINES / 2, 0, COLS, TUI_WARN, msg);
        wnoutrefresh(stdscr);
        curs_set(0);
        doupdate();
        return;
    }
    if (s->help) {
        tui_help_draw(s, s->w_help);
        wnoutrefresh(s->w_help);
        curs_set(0);
        doupdate();
        return;
    }
    header_draw(s);
    tui_view v = view(s);
    tui_table_draw(&v, s->w_table);
    s->table_top = v.table_top;
    if (s->w_log)
        tui_logpane_draw(s->log, s->w_log);
    tui_keybar_draw(s, s->w_keys);
    tui_message_draw(s, s->w_msg);
    wnoutrefresh(s->w_header);
    wnoutrefresh(s->w_table);
    if (s->w_log)
        wnoutrefresh(s->w_log);
    wnoutrefresh(s->w_keys);
    /* The message line last: the prompt's cursor is where it left it. */
    wnoutrefresh(s->w_msg);
    curs_set(s->prompting ? 1 : 0);
    doupdate();
}

/* ---- input ---- */

static void on_key(tui_screen *s, int ch)
{
    if (ch == KEY_RESIZE)
        return; /* resizing is SIGWINCH's job (one path); curses may echo it */
    if (s->help) {
        s->help = false; /* any key goes back */
        return;
    }
    if (s->prompting) {
        tui_prompt_key(s, ch);
        return;
    }
    tui_keys_dispatch(s, ch);
}

/* Returns true to quit. */
static bool on_signals(tui_screen *s, int sfd)
{
    struct signalfd_siginfo si;
    bool quit = false;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        switch (si.ssi_signo) {
        case SIGWINCH:
            tui_crt_resize();
            s->relayout = true;
            break;
        case SIGTSTP:
            tui_crt_suspend();
            s->relayout = true;
            break;
        default:
            tui_logpane_add(s->log, LC_LOG_INFO, "%s received: stopping",
                            strsignal((int)si.ssi_signo));
            quit = true;
            break;
        }
    }
    return quit;
}

/* ---- the loop ---- */

static double clamp_refresh(double hz)
{
    if (!(hz > 0))
        return TUI_REFRESH_DEFAULT;
    return hz < TUI_REFRESH_MIN ? TUI_REFRESH_MIN : hz > TUI_REFRESH_MAX ? TUI_REFRESH_MAX : hz;
}

static void loop(tui_screen *s, int sfd)
{
    double start = lc_now_seconds();
    double end = s->opt.max_seconds > 0 ? start + s->opt.max_seconds : 0;
    double next_frame = start, next_sample = start + 1.0;
    bool dirty = true;
    while (!s->quit) {
        double now = lc_now_seconds();
        double due = next_frame < next_sample ? next_frame : next_sample;
        if (s->restart_at > 0 && s->restart_at < due)
            due = s->restart_at;
        if (end > 0 && end < due)
            due = end;
        if (s->message[0] && s->message_until > now && s->message_until < due)
            due = s->message_until;
        int timeout = dirty ? 0 : (int)ceil((due - now) * 1000.0);
        if (timeout < 0)
            timeout = 0;
        struct pollfd fds[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
                                {.fd = sfd, .events = POLLIN}};
        int rc = poll(fds, 2, timeout);
        if (rc < 0 && errno != EINTR)
            break;
        if (rc > 0 && (fds[1].revents & POLLIN) && on_signals(s, sfd))
            break;
        if (rc > 0 && (fds[0].revents & (POLLHUP | POLLERR)) && !(fds[0].revents & POLLIN)) {
            /* The terminal went away. */
            break;
        }
        if (rc > 0 && (fds[0].revents & POLLIN)) {
            int ch;
            while (!s->quit && (ch = getch()) != ERR) {
                on_key(s, ch);
                dirty = true;
            }
        }
        if (s->relayout)
            dirty = true;
        now = lc_now_seconds();
        if (end > 0 && now >= end) {
            tui_logpane_add(s->log, LC_LOG_INFO, "--max-seconds reached: stopping");
            break;
        }
        if (s->restart_at > 0 && now >= s->restart_at) {
            s->restart_at = 0;
            lc_error err;
            lc_error_clear(&err);
            if (lc_monitor_pipeline(s->mon, true, &err) != 0)
                tui_screen_message(s, true, "the pipeline did not start again: %s", err.msg);
            else
                tui_screen_message(s, false, "pipeline started again with the same configuration");
            next_frame = now;
        }
        bool fetched = false;
        if (now >= next_frame) {
            tui_screen_fetch(s);
            fetched = true;
            dirty = true;
            double step = 1.0 / s->refresh_hz;
            next_frame += step;
            if (next_frame < now)
                next_frame = now + step;
        }
        if (now >= next_sample) {
            if (!fetched)
                tui_screen_fetch(s);
            tui_history_sample(s->hist, s->last);
            next_sample += 1.0;
            if (next_sample < now)
                next_sample = now + 1.0;
            dirty = true;
        }
        if (s->message[0] && now >= s->message_until) {
            s->message[0] = '\0';
            dirty = true;
        }
        if (dirty && !s->quit) {
            tui_screen_draw(s);
            dirty = false;
        }
    }
}

int tui_run(lc_monitor *m, const tui_options *o)
{
    const tui_theme *theme = NULL;
    if (o->theme) {
        theme = tui_theme_find(o->theme);
        if (!theme) {
            fprintf(stderr, "lcmon: --theme: '%s' is not one of %s\n", o->theme, tui_theme_list());
            return 1;
        }
    } else if (o->no_colour) {
        theme = tui_theme_find("monochrome");
    }

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGWINCH);
    sigaddset(&set, SIGTSTP);
    /* Already blocked in every thread by main; blocking here again is
     * harmless and keeps this function honest on its own. */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) {
        fprintf(stderr, "lcmon: signalfd: %s\n", strerror(errno));
        return 1;
    }

    tui_screen *s = lc_xcalloc(1, sizeof *s);
    s->mon = m;
    s->opt = *o;
    s->refresh_hz = clamp_refresh(o->refresh_hz);
    s->show_log = true;
    s->hist = tui_history_new();
    s->log = tui_logpane_new();
    keep_snapshots(s, empty_snapshot(), empty_snapshot());
    keep_window(s);

    char msg[256];
    tui_crt_options co = {.ascii = o->ascii, .no_colour = o->no_colour};
    if (tui_crt_open(&co, msg, sizeof msg) != 0) {
        fprintf(stderr, "lcmon: %s\n", msg);
        s->exit_code = 1;
    } else {
        if (theme)
            tui_crt_set_theme(theme);
        tui_screen_fetch(s);
        loop(s, sfd);
        free_windows(s);
        tui_crt_close();
        if (s->last->state == LCMON__PIPELINE_STATE__PIPELINE_FAILED) {
            fprintf(stderr, "lcmon: %s\n",
                    s->last->error && s->last->error[0] ? s->last->error : "the pipeline failed");
            s->exit_code = 1;
        }
    }
    int rc = s->exit_code;
    close(sfd);
    lc_snapshot_unref(s->last_snap);
    lc_snapshot_unref(s->all_snap);
    lc_snapshot_unref(s->rate_snap);
    tui_history_free(s->hist);
    tui_logpane_free(s->log);
    free(s);
    return rc;
}
