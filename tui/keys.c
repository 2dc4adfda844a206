/*
 * keys: the key table, and what it drives: the actions, the key bar and the
 * help screen are all made from the one table, so a key cannot be bound
 * without being listed, nor listed without being bound.
 *
 * A key that steers the loader names the loader's commands it runs (the
 * rows of its command tables, core/command.h: "pause", "anchor-reset"),
 * and its action runs them by that name through the monitor interface
 * (lc_monitor_run); a test checks that every name is a command of the
 * tables. Each action reports its outcome on the message line; results
 * worth keeping (anchors, restarts) also go to the log pane (a reload's,
 * from the loader's log).
 */
#include "tui/screen.h"

#include "core/clock.h"
#include "monitor/snapshot.h"
#include "tui/derive.h"
#include "tui/widgets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTRL(c) ((c)&0x1f)

typedef struct tui_key {
    int codes[4];      /* curses key codes, 0 ends the list */
    const char *name;  /* as the key bar and help show it (Unicode) */
    const char *ascii; /* the same without Unicode (NULL: as name) */
    const char *label; /* the key bar's word (NULL: not in the key bar) */
    int bar_priority;  /* lower stays longer on a narrow key bar */
    const char *help;  /* one line for the help screen */
    /* The loader's commands it runs, by name (NULL: none); Space runs the
     * second on a paused stage, S the second a moment after the first. */
    const char *commands[2];
    void (*run)(tui_screen *s, const struct tui_key *k);
} tui_key;

/* ---- actions ---- */

static size_t n_stages(const tui_screen *s)
{
    return s->last ? s->last->n_stage_metrics : 0;
}

static void select_stage(tui_screen *s, size_t i)
{
    if (i >= n_stages(s))
        return;
    s->selected = i;
    const char *name = s->last->stage_metrics[i]->name;
    snprintf(s->selected_name, sizeof s->selected_name, "%s", name ? name : "");
}

static void act_up(tui_screen *s, const tui_key *k)
{
    (void)k;
    if (s->selected > 0)
        select_stage(s, s->selected - 1);
}

static void act_down(tui_screen *s, const tui_key *k)
{
    (void)k;
    select_stage(s, s->selected + 1);
}

static void act_pause(tui_screen *s, const tui_key *k)
{
    const Lcmon__StageMetricProto *st = tui_screen_selected(s);
    if (!st || !st->name) {
        tui_screen_message(s, true, "no stage selected");
        return;
    }
    bool pause = st->state != LCMON__STAGE_STATE__STAGE_PAUSED;
    char name[64];
    snprintf(name, sizeof name, "%s", st->name);
    lc_error err;
    lc_error_clear(&err);
    const char *command = k->commands[pause ? 0 : 1];
    if (lc_monitor_run(s->mon, command, name, 0, NULL, NULL, &err) != 0) {
        tui_screen_message(s, true, "cannot %s %s: %s", command, name, err.msg);
        return;
    }
    if (pause)
        tui_screen_message(s, false,
                           "%s paused: upstream fills and blocks, downstream drains "
                           "(Space resumes)",
                           name);
    else
        tui_screen_message(s, false, "%s resumed", name);
}

static bool pipeline_active(Lcmon__PipelineState st)
{
    return st == LCMON__PIPELINE_STATE__PIPELINE_RUNNING ||
           st == LCMON__PIPELINE_STATE__PIPELINE_STARTING ||
           st == LCMON__PIPELINE_STATE__PIPELINE_PAUSED;
}

static void act_restart(tui_screen *s, const tui_key *k)
{
    if (s->restart_at > 0)
        return; /* already on its way back */
    if (pipeline_active(s->last->state)) {
        s->stopping = true;
        tui_screen_message(s, false, "stopping the pipeline...");
        tui_screen_draw(s);
        lc_error err;
        lc_error_clear(&err);
        int rc = lc_monitor_run(s->mon, k->commands[0], NULL, 0, NULL, NULL, &err);
        s->stopping = false;
        if (rc != 0) {
            tui_screen_message(s, true, "cannot stop the pipeline: %s", err.msg);
            return;
        }
        tui_logpane_add(s->log, LC_LOG_INFO,
                        "pipeline stopped (S); starting it again with the same configuration");
        tui_screen_message(s, false, "pipeline stopped; starting it again...");
        /* Let the stopped state show for a moment before starting again. */
        s->restart_at = lc_now_seconds() + 1.0;
    } else {
        tui_screen_message(s, false, "starting the pipeline...");
        s->restart_at = lc_now_seconds();
    }
    tui_screen_fetch(s);
}

/* R: the configuration file read again and, when it checks out, the
 * pipeline restarted with it. The loader logs what it loaded or every
 * problem (the log pane shows them); the message line says the outcome. */
static void act_reload(tui_screen *s, const tui_key *k)
{
    const Lcmon__Hello *h = lc_monitor_hello(s->mon);
    tui_screen_message(s, false, "reloading %s...",
                       h && h->config ? h->config : "the configuration");
    tui_screen_draw(s);
    lc_command_result res = {0};
    lc_error err;
    lc_error_clear(&err);
    if (lc_monitor_run(s->mon, k->commands[0], NULL, 0, NULL, &res, &err) != 0) {
        /* The first line (it counts the problems); all are in the log. */
        int first = (int)strcspn(err.msg, "\n");
        tui_screen_message(s, true, "%.*s%s", first, err.msg,
                           err.msg[first] ? " (all of them in the log)" : "");
    } else {
        s->restart_at = 0; /* a start S has pending is done */
        tui_screen_message(s, false, "%s", res.message ? res.message : "reloaded");
    }
    lc_command_result_fini(&res);
    tui_screen_fetch(s);
}

/* The prompt's prefill: the pool's newest chunk key. */
static void act_anchor_set(tui_screen *s, const tui_key *k)
{
    (void)k;
    lc_snapshot_anchor an;
    const Lcmon__StageMetricProto *pool = lc_snapshot_find_anchor(s->last, &an);
    if (!pool) {
        tui_screen_message(s, true, "no shuffling_chunk_pool in this pipeline: no anchor to set");
        return;
    }
    snprintf(s->input, sizeof s->input, "%s", an.newest);
    s->prompting = true;
}

/* The pool's answer to an anchor command ("(none)" for no anchor), or NULL. */
static const char *anchor_of(const lc_command_result *res, long long *count)
{
    for (size_t i = 0; i < res->n; i++) {
        const char *a = lc_reply_get(&res->replies[i], "anchor");
        const char *c = lc_reply_get(&res->replies[i], "count");
        if (a) {
            *count = c ? strtoll(c, NULL, 10) : 0;
            return a[0] ? a : "(none)";
        }
    }
    return NULL;
}

static void act_anchor_reset(tui_screen *s, const tui_key *k)
{
    lc_command_result res = {0};
    lc_error err;
    lc_error_clear(&err);
    long long count = 0;
    const char *key = NULL;
    if (lc_monitor_run(s->mon, k->commands[0], NULL, 0, NULL, &res, &err) == 0)
        key = anchor_of(&res, &count);
    if (!key) {
        tui_screen_message(s, true, "cannot reset the anchor: %s",
                           err.msg[0] ? err.msg : "no stage answered with an anchor");
        lc_command_result_fini(&res);
        return;
    }
    tui_screen_message(s, false, "anchor reset to %s: %lld chunks were counted since the last one",
                       key, count);
    tui_logpane_add(s->log, LC_LOG_INFO,
                    "anchor reset to %s; %lld chunks were counted since the previous anchor", key,
                    count);
    lc_command_result_fini(&res);
    tui_screen_fetch(s);
}

static void act_log(tui_screen *s, const tui_key *k)
{
    (void)k;
    s->show_log = !s->show_log;
    s->relayout = true;
}

static void act_log_up(tui_screen *s, const tui_key *k)
{
    (void)k;
    tui_logpane_scroll(s->log, s->log_h > 3 ? s->log_h - 2 : 5);
}

static void act_log_down(tui_screen *s, const tui_key *k)
{
    (void)k;
    tui_logpane_scroll(s->log, -(s->log_h > 3 ? s->log_h - 2 : 5));
}

static void act_log_end(tui_screen *s, const tui_key *k)
{
    (void)k;
    tui_logpane_end(s->log);
}

static void act_log_home(tui_screen *s, const tui_key *k)
{
    (void)k;
    tui_logpane_scroll(s->log, TUI_LOG_LINES * 8);
}

static void act_theme(tui_screen *s, const tui_key *k)
{
    (void)k;
    /* Without colour only the themes made for it take turns. */
    size_t cur = tui_theme_index(tui_crt_theme()), i = cur;
    do {
        i = tui_themes[i + 1] ? i + 1 : 0;
    } while (i != cur && tui_themes[i]->colour && !tui_crt_colour_possible());
    if (i == cur) {
        tui_screen_message(s, false,
                           "no colours here (--no-color, NO_COLOR or the terminal): "
                           "the %s theme stays",
                           tui_themes[i]->name);
        return;
    }
    tui_crt_set_theme(tui_themes[i]);
    tui_crt_repaint_all();
    tui_screen_message(s, false, "theme: %s (%s)", tui_themes[i]->name, tui_themes[i]->summary);
}

static const double rates[] = {0.5, 1, 2, 5, 10};
#define N_RATES (sizeof rates / sizeof rates[0])

static void act_faster(tui_screen *s, const tui_key *k)
{
    (void)k;
    for (size_t i = 0; i < N_RATES; i++)
        if (rates[i] > s->refresh_hz + 1e-9) {
            s->refresh_hz = rates[i];
            break;
        }
    tui_screen_message(s, false, "%g redraws per second", s->refresh_hz);
}

static void act_slower(tui_screen *s, const tui_key *k)
{
    (void)k;
    for (size_t i = N_RATES; i-- > 0;)
        if (rates[i] < s->refresh_hz - 1e-9) {
            s->refresh_hz = rates[i];
            break;
        }
    tui_screen_message(s, false, "%g redraws per second", s->refresh_hz);
}

/* w: the next window of time the rates, loads and shares are over. */
static void act_window(tui_screen *s, const tui_key *k)
{
    (void)k;
    static const char *const words[LC_WINDOW_COUNT] = {
        "the last second",     "the last 10 seconds", "the last minute",
        "the last 10 minutes", "the last hour",       "all time, since the start",
    };
    s->window = (lc_window)((s->window + 1) % LC_WINDOW_COUNT);
    tui_screen_fetch(s);
    tui_screen_message(s, false, "rates, loads and shares over %s (w: the next window)",
                       words[s->window]);
}

static void act_help(tui_screen *s, const tui_key *k)
{
    (void)k;
    s->help = true;
}

static void act_repaint(tui_screen *s, const tui_key *k)
{
    (void)k;
    (void)s;
    tui_crt_repaint_all();
}

static void act_quit(tui_screen *s, const tui_key *k)
{
    (void)k;
    s->quit = true;
}

/* ---- the table ---- */

/* clang-format off */
static const tui_key keys[] = {
    {{KEY_UP, 'k', 0}, "↑ k", "Up k", NULL, 0, "select the stage above", {0}, act_up},
    {{KEY_DOWN, 'j', 0}, "↓ j", "Down j", NULL, 0, "select the stage below", {0}, act_down},
    {{' ', 0}, "Space", NULL, "pause", 2, "pause or resume the selected stage",
     {"pause", "resume"}, act_pause},
    {{'S', 0}, "S", NULL, "restart", 4,
     "stop the pipeline, then start it again with the same configuration", {"stop", "start"},
     act_restart},
    {{'R', 0}, "R", NULL, "reload", 9,
     "read the configuration file again and restart with it (anchor and reader kept)",
     {"reload"}, act_reload},
    {{'a', 0}, "a", NULL, "anchor", 5, "set the anchor (a prompt offers the newest chunk key)",
     {"anchor-set"}, act_anchor_set},
    {{'r', 0}, "r", NULL, "reset", 6,
     "reset the anchor to the newest chunk; says how many chunks were counted", {"anchor-reset"},
     act_anchor_reset},
    {{'l', 0}, "l", NULL, "log", 7, "show or hide the log pane", {0}, act_log},
    {{KEY_PPAGE, 0}, "PgUp", NULL, NULL, 0, "scroll the log back", {0}, act_log_up},
    {{KEY_NPAGE, 0}, "PgDn", NULL, NULL, 0, "scroll the log forward", {0}, act_log_down},
    {{KEY_HOME, 0}, "Home", NULL, NULL, 0, "the oldest log line", {0}, act_log_home},
    {{KEY_END, 0}, "End", NULL, NULL, 0, "the newest log line, and follow new ones", {0},
     act_log_end},
    {{'t', 0}, "t", NULL, "theme", 8, "next theme: default, monochrome, light", {0}, act_theme},
    {{'w', 0}, "w", NULL, "window", 10,
     "next window of the rates, loads and shares: 1s, 10s, 1m, 10m, 1h, all time", {0},
     act_window},
    {{'+', '=', 0}, "+", NULL, NULL, 0, "redraw more often (up to 10 per second)", {0},
     act_faster},
    {{'-', 0}, "-", NULL, NULL, 0, "redraw less often", {0}, act_slower},
    {{CTRL('L'), 0}, "Ctrl-L", NULL, NULL, 0, "repaint the whole screen", {0}, act_repaint},
    {{'?', 'h', KEY_F(1), 0}, "?", NULL, "help", 1, "this help", {0}, act_help},
    {{'q', KEY_F(10), 0}, "q", NULL, "quit", 0, "quit: stop the pipeline cleanly and exit (as Ctrl-C)",
     {0}, act_quit},
};
/* clang-format on */
#define N_KEYS (sizeof keys / sizeof keys[0])

static const char *key_text(const tui_key *k)
{
    return !tui_glyph()->unicode && k->ascii ? k->ascii : k->name;
}

/* Attached to a loader elsewhere, q leaves it running: say so. */
static bool is_quit(const tui_key *k)
{
    return k->run == act_quit;
}

static const char *key_label(const tui_screen *s, const tui_key *k)
{
    return s->opt.attached && is_quit(k) ? "detach" : k->label;
}

static const char *key_help(const tui_screen *s, const tui_key *k)
{
    return s->opt.attached && is_quit(k) ? "detach: leave this screen; the loader keeps running"
                                         : k->help;
}

size_t tui_key_commands(const char **names, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < N_KEYS; i++)
        for (size_t j = 0; j < 2 && keys[i].commands[j]; j++)
            if (n < max)
                names[n++] = keys[i].commands[j];
    return n;
}

bool tui_keys_dispatch(tui_screen *s, int ch)
{
    for (size_t i = 0; i < N_KEYS; i++)
        for (size_t j = 0; j < 4 && keys[i].codes[j]; j++)
            if (keys[i].codes[j] == ch) {
                keys[i].run(s, &keys[i]);
                return true;
            }
    return false;
}

/* ---- the anchor prompt ---- */

static void prompt_submit(tui_screen *s)
{
    s->prompting = false;
    if (!s->input[0]) {
        tui_screen_message(s, true, "no key given: the anchor is unchanged");
        return;
    }
    lc_error err;
    lc_error_clear(&err);
    const char *key = s->input;
    const char *command = NULL; /* the command of the key that prompted */
    for (size_t i = 0; i < N_KEYS && !command; i++)
        if (keys[i].run == act_anchor_set)
            command = keys[i].commands[0];
    if (lc_monitor_run(s->mon, command, NULL, 1, &key, NULL, &err) != 0) {
        tui_screen_message(s, true, "cannot set the anchor: %s", err.msg);
        return;
    }
    tui_screen_message(s, false, "anchor set to %s", s->input);
    tui_logpane_add(s->log, LC_LOG_INFO, "anchor set to %s", s->input);
    tui_screen_fetch(s);
}

void tui_prompt_key(tui_screen *s, int ch)
{
    size_t len = strlen(s->input);
    if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
        prompt_submit(s);
    } else if (ch == 27 || ch == CTRL('G') || ch == CTRL('C')) {
        s->prompting = false;
        tui_screen_message(s, false, "anchor unchanged");
    } else if (ch == KEY_BACKSPACE || ch == 127 || ch == CTRL('H')) {
        /* One character, however many bytes it has. */
        while (len > 0 && ((unsigned char)s->input[len - 1] & 0xc0) == 0x80)
            len--;
        if (len > 0)
            len--;
        s->input[len] = '\0';
    } else if (ch == CTRL('U')) {
        s->input[0] = '\0';
    } else if (ch >= 0x20 && ch <= 0xff && ch != 0x7f && len + 1 < sizeof s->input) {
        s->input[len] = (char)ch;
        s->input[len + 1] = '\0';
    }
}

/* ---- the key bar ---- */

void tui_keybar_draw(const tui_screen *s, WINDOW *w)
{
    int width = getmaxx(w);
    werase(w);
    char info[64];
    snprintf(info, sizeof info, " %s  %g/s ", tui_crt_theme()->name, s->refresh_hz);
    int info_w = tui_text_width(info);

    /* The entries: "↑↓ select" first, then the table's labelled keys; drop
     * the least important until they fit. */
    typedef struct entry {
        const char *key, *label;
        int priority;
    } entry;
    entry e[N_KEYS + 1];
    int n = 0;
    e[n++] = (entry){tui_glyph()->up_down, "select", 3};
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].label)
            e[n++] = (entry){key_text(&keys[i]), key_label(s, &keys[i]), keys[i].bar_priority};
    bool keep[N_KEYS + 1];
    for (int i = 0; i < n; i++)
        keep[i] = true;
    for (;;) {
        int total = 0, worst = -1;
        for (int i = 0; i < n; i++) {
            if (!keep[i])
                continue;
            total += tui_text_width(e[i].key) + tui_text_width(e[i].label) + 3;
            if (worst < 0 || e[i].priority > e[worst].priority)
                worst = i;
        }
        if (total + info_w <= width || worst < 0)
            break;
        keep[worst] = false;
    }
    int x = 0;
    for (int i = 0; i < n && x < width; i++) {
        if (!keep[i])
            continue;
        x += tui_put(w, 0, x, width - x, TUI_KEY, e[i].key);
        char label[32];
        snprintf(label, sizeof label, " %s ", e[i].label);
        x += tui_put(w, 0, x, width - x, TUI_KEY_LABEL, label);
        x += tui_put(w, 0, x, width - x, TUI_NORMAL, " ");
    }
    if (x + info_w <= width)
        tui_put(w, 0, width - info_w, info_w, TUI_KEY_INFO, info);
}

/* ---- the message line ---- */

void tui_message_draw(const tui_screen *s, WINDOW *w)
{
    int width = getmaxx(w);
    werase(w);
    if (s->prompting) {
        const char *label = "anchor key: ";
        int x = tui_put(w, 0, 1, width - 1, TUI_MESSAGE, label) + 1;
        int field = width - x - 32;
        if (field < 16)
            field = width - x - 1;
        tui_fill(w, 0, x, field, TUI_PROMPT, " ");
        /* Show the end of a long key, where the cursor is. */
        const char *in = s->input;
        while (*in && tui_text_width(in) > field - 1)
            in++;
        int cx = x + tui_put_cut(w, 0, x, field - 1, TUI_PROMPT, in);
        if (x + field + 2 < width)
            tui_put(w, 0, x + field + 1, width - x - field - 1, TUI_DIM, "Enter sets, Esc cancels");
        wmove(w, 0, cx);
        return;
    }
    if (s->message[0] && lc_now_seconds() < s->message_until) {
        tui_put(w, 0, 1, width - 1, s->message_error ? TUI_MESSAGE_ERROR : TUI_MESSAGE, s->message);
        return;
    }
    /* Nothing to report: say what the selected stage is and what Space does. */
    const Lcmon__StageMetricProto *st = tui_screen_selected(s);
    if (st && st->name) {
        char hint[160];
        snprintf(hint, sizeof hint, "%s (%s) selected: Space %s it", st->name,
                 st->stage_type ? st->stage_type : "?",
                 st->state == LCMON__STAGE_STATE__STAGE_PAUSED ? "resumes" : "pauses");
        tui_put(w, 0, 1, width - 1, TUI_DIM, hint);
    }
}

/* ---- help ---- */

static const char *const legend[] = {
    "LOAD      each thread pool's busy fraction over the last second (w: other windows)",
    "          (a queue row: how full the queue is). A full red bar: that stage is",
    "          the bottleneck; give it more threads (the pool's loading row: threads,",
    "          or a chunk store, store_bytes). Full queues after it: the trainer is.",
    "PER SECOND items out a second over the same window, in the row's unit: paths,",
    "          sources, chunks, frames, batches (a queue row: items taken)",
    "TOTAL     items since the start; BAD: malformed input met; DROP: others discarded",
    "LAST N s  items/s, a mark a second (as many as fit, up to 60), scaled to the peak",
    NULL,
};

void tui_help_draw(const tui_screen *s, WINDOW *w)
{
    int width = getmaxx(w), h = getmaxy(w);
    werase(w);
    tui_fill(w, 0, 0, width, TUI_HELP_TITLE, " ");
    tui_put(w, 0, 1, width - 1, TUI_HELP_TITLE, "lcmon: keys");
    int y = 2;
    for (size_t i = 0; i < N_KEYS && y < h - 1; i++, y++) {
        tui_put(w, y, 2, 8, TUI_HELP_KEY, key_text(&keys[i]));
        tui_put(w, y, 12, width - 12, TUI_NORMAL, key_help(s, &keys[i]));
    }
    /* Not in the table: the terminal sends it as a signal, not a key. */
    if (y < h - 1) {
        tui_put(w, y, 2, 8, TUI_HELP_KEY, "Ctrl-Z");
        tui_put(w, y++, 12, width - 12, TUI_NORMAL,
                "suspend lcmon, the pipeline too; fg brings both back");
    }
    y++;
    for (size_t i = 0; legend[i] && y < h - 1; i++, y++)
        tui_put(w, y, 2, width - 2, TUI_DIM, legend[i]);
    y++;
    if (y < h - 1) {
        char line[160];
        snprintf(line, sizeof line,
                 "Theme %s; options --theme NAME, --no-color, --ascii, --refresh HZ.",
                 tui_crt_theme()->name);
        tui_put(w, y, 2, width - 2, TUI_DIM, line);
    }
    tui_put(w, h - 1, 1, width - 1, TUI_MESSAGE, "Press any key to go back.");
}
