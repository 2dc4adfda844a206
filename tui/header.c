/*
 * header: the first line, and the pipeline's error under it when it failed.
 *
 *    lcmon  RUNNING  up 1:23  rank 0/1  38.5k pos/s  → lcmon.pipe  reader connected   in-process
 *
 * The rate is over the window the screen shows, which follows it when it
 * is not the last second: "38.5k pos/s (1m)".
 * The line is a table of items (`items` below, header.h says how they fit):
 * when it is too narrow the items that matter least go first, where the
 * loader runs, then the uptime and the rank, and the output path shrinks
 * from the left (its end names the pipe). The state is always there, in
 * words.
 */
#include "tui/header.h"

#include "monitor/snapshot.h"
#include "tui/screen.h"
#include "tui/derive.h"
#include "tui/widgets.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *error_text(const tui_screen *s)
{
    if (s->last->state != LCMON__PIPELINE_STATE__PIPELINE_FAILED)
        return NULL;
    return s->last->error && s->last->error[0] ? s->last->error
                                               : "the pipeline failed (the log says why)";
}

int tui_header_lines(const tui_screen *s, int cols)
{
    const char *err = error_text(s);
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

static tui_elem state_elem(Lcmon__PipelineState st)
{
    switch (st) {
    case LCMON__PIPELINE_STATE__PIPELINE_RUNNING:
        return TUI_STATE_RUNNING;
    case LCMON__PIPELINE_STATE__PIPELINE_FAILED:
        return TUI_STATE_FAILED;
    case LCMON__PIPELINE_STATE__PIPELINE_STOPPED:
    case LCMON__PIPELINE_STATE__PIPELINE_FINISHED:
        return TUI_STATE_IDLE;
    default:
        return TUI_STATE_BUSY;
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

/* ---- the items ---- */

/* What an item shows now; its function fills it from the row's defaults. */
typedef struct header_value {
    char text[200];
    char label[16]; /* before the text, in the header's colours */
    tui_elem elem;  /* the text's */
    int drop;       /* the row's priority, or what the item makes of it now */
    int least;      /* columns of text it may shrink to (0: it does not) */
} header_value;

/* How a text too long for its place is cut. */
typedef enum { CUT_END, CUT_END_BARE, CUT_START } header_cut;

typedef struct header_item {
    const char *name;
    bool right;  /* on the line's right end */
    bool joined; /* no two-column gap before it */
    int drop;    /* the lower, the sooner it goes (TUI_HEADER_KEPT: never) */
    int shrink;  /* the priority of cutting its text to `least` columns */
    int least;   /* 0: its text is never cut to fit */
    header_cut cut;
    const char *label, *unit; /* around its text */
    /* What it shows now; false: nothing. */
    bool (*value)(const tui_header_in *in, header_value *v);
} header_item;

/* A rate and a reader mean something: a stopped, finished, failed or lost
 * pipeline has neither (its last numbers would be stale). */
static bool live(const tui_header_in *in)
{
    return !in->disconnected && lc_pipeline_state_live(in->m->state);
}

/* The first stage in a warning state, or NULL; none once an attached
 * loader went away (its warnings, such as the writer's hint to start a
 * reader, were its own). */
static const Lcmon__StageMetricProto *warned_stage(const tui_header_in *in)
{
    const Lcmon__DataLoaderMetricsProto *m = in->m;
    if (in->disconnected)
        return NULL;
    for (size_t i = 0; i < m->n_stage_metrics; i++)
        if (m->stage_metrics[i]->warning && m->stage_metrics[i]->warning[0])
            return m->stage_metrics[i];
    return NULL;
}

/* The writer's warning names the pipe and says what to run. */
static bool writer_warned(const tui_header_in *in)
{
    const Lcmon__StageMetricProto *wr = tui_find_writer(in->m);
    return wr && wr == warned_stage(in);
}

static bool item_title(const tui_header_in *in, header_value *v)
{
    (void)in;
    snprintf(v->text, sizeof v->text, " lcmon ");
    v->elem = TUI_HEADER_TITLE;
    return true;
}

static bool item_state(const tui_header_in *in, header_value *v)
{
    Lcmon__PipelineState st = in->m->state;
    snprintf(v->text, sizeof v->text, " %s ",
             in->disconnected ? "disconnected"
                              : (in->stopping ? "stopping" : lc_pipeline_state_name(st)));
    for (char *p = v->text; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    v->elem =
        in->disconnected ? TUI_STATE_FAILED : (in->stopping ? TUI_STATE_BUSY : state_elem(st));
    return true;
}

static bool item_uptime(const tui_header_in *in, header_value *v)
{
    tui_fmt_clock(v->text, sizeof v->text, in->m->uptime_seconds);
    return true;
}

static bool item_rank(const tui_header_in *in, header_value *v)
{
    unsigned world = in->m->world_size ? in->m->world_size : 1;
    snprintf(v->text, sizeof v->text, "%u/%u", in->m->rank, world);
    if (world <= 1)
        v->drop = 40; /* the only rank says little: before the uptime */
    return true;
}

static bool item_rate(const tui_header_in *in, header_value *v)
{
    double pps = lc_status_positions_per_second(in->rate ? in->rate : in->m);
    if (!live(in) || pps < 0)
        return false;
    tui_fmt_count(v->text, sizeof v->text, pps);
    return true;
}

/* The window the rate is over, after it, unless the last second: "(1m)",
 * "(since start)". */
static bool item_window(const tui_header_in *in, header_value *v)
{
    if (!in->window || strcmp(in->window, "1s") == 0 || !item_rate(in, v))
        return false;
    snprintf(v->text, sizeof v->text, " (%s)",
             strcmp(in->window, "all") == 0 ? "since start" : in->window);
    v->elem = TUI_HEADER;
    return true;
}

static bool item_output(const tui_header_in *in, header_value *v)
{
    const Lcmon__StageMetricProto *wr = tui_find_writer(in->m);
    if (!wr || !wr->detail)
        return false;
    snprintf(v->text, sizeof v->text, "%s", wr->detail);
    snprintf(v->label, sizeof v->label, "%s ", tui_glyph()->arrow_right);
    if (writer_warned(in))
        v->drop = 10; /* the warning names the pipe */
    return true;
}

static bool item_reader(const tui_header_in *in, header_value *v)
{
    const Lcmon__StageMetricProto *wr = tui_find_writer(in->m);
    if (!wr || !live(in) || writer_warned(in)) /* the warning says it, and what to run */
        return false;
    const Lcmon__GaugeMetricProto *conn =
        lc_snapshot_gauge_of_role(wr, LCMON__METRIC_ROLE__ROLE_READER_CONNECTED);
    const Lcmon__GaugeMetricProto *wait =
        lc_snapshot_gauge_of_role(wr, LCMON__METRIC_ROLE__ROLE_READER_WAITING);
    v->elem = TUI_HEADER;
    if (conn && conn->value) {
        snprintf(v->text, sizeof v->text, "reader connected");
    } else if (wait && wait->value) {
        snprintf(v->text, sizeof v->text, "waiting for a reader");
        v->elem = TUI_HEADER_WARN;
    } else {
        snprintf(v->text, sizeof v->text, "no reader");
    }
    return true;
}

/* A stage's warning (it says it first), else the log's errors or warnings
 * while the log pane is hidden. */
static bool item_problem(const tui_header_in *in, header_value *v)
{
    const Lcmon__StageMetricProto *warned = warned_stage(in);
    size_t n_err = in->log_errors, n_warn = in->log_warnings;
    v->elem = TUI_HEADER_WARN;
    if (warned) {
        snprintf(v->text, sizeof v->text, "%s: %s", warned->name, warned->warning);
        v->drop = 105; /* it matters more than the path; its stage's row has it all */
        return true;
    }
    v->least = 0; /* counts are not cut */
    if (n_err)
        snprintf(v->text, sizeof v->text, "%zu error%s in the log", n_err, n_err == 1 ? "" : "s");
    else if (n_warn)
        snprintf(v->text, sizeof v->text, "%zu warning%s in the log", n_warn,
                 n_warn == 1 ? "" : "s");
    return v->text[0] != '\0';
}

static bool item_where(const tui_header_in *in, header_value *v)
{
    if (!in->where)
        return false;
    snprintf(v->text, sizeof v->text, "%s", in->where);
    v->elem = TUI_HEADER;
    return true;
}

/* The header, left to right. A new item is a row here and its function.
 * The priorities: what matters least goes first. Where the loader runs,
 * then the uptime (after the rank when it is the only one), the rank, the
 * log's counts, the output path; before the uptime goes, the path shrinks
 * to its last 12 columns (its end names the pipe). A long warning is cut
 * to 40 columns before anything goes. */
static const header_item items[] = {
    {"title", .joined = true, .drop = TUI_HEADER_KEPT, .value = item_title},
    {"state", .joined = true, .drop = TUI_HEADER_KEPT, .value = item_state},
    {"uptime", .drop = 60, .label = "up ", .value = item_uptime},
    {"rank", .drop = 70, .label = "rank ", .value = item_rank},
    {"rate", .drop = TUI_HEADER_KEPT, .unit = " pos/s", .value = item_rate},
    {"window", .joined = true, .drop = TUI_HEADER_KEPT, .value = item_window},
    {"output", .drop = 100, .shrink = 50, .least = 12, .cut = CUT_START, .value = item_output},
    {"reader", .drop = TUI_HEADER_KEPT, .value = item_reader},
    {"problem", .right = true, .drop = 90, .shrink = 20, .least = 40, .cut = CUT_END_BARE,
     .value = item_problem},
    {"where", .right = true, .drop = 30, .value = item_where},
};
enum { N_ITEMS = sizeof items / sizeof items[0] };

size_t tui_header_items(void)
{
    return N_ITEMS;
}

const char *tui_header_item_name(size_t i)
{
    return i < N_ITEMS ? items[i].name : NULL;
}

/* ---- fitting ---- */

static int line_width(const tui_header_size *sz, size_t n)
{
    int total = 0;
    bool right = false;
    for (size_t i = 0; i < n; i++) {
        total += sz[i].width;
        right |= sz[i].right && sz[i].width;
    }
    return total + (right ? 1 : 0);
}

void tui_header_fit(tui_header_size *sz, size_t n, int cols)
{
    for (int total = line_width(sz, n); total > cols; total = line_width(sz, n)) {
        size_t next = n;
        bool shrink = false;
        int prio = TUI_HEADER_KEPT;
        for (size_t i = 0; i < n; i++) {
            if (!sz[i].width)
                continue;
            if (sz[i].least && sz[i].width > sz[i].least && sz[i].shrink < prio)
                next = i, shrink = true, prio = sz[i].shrink;
            if (sz[i].drop < prio)
                next = i, shrink = false, prio = sz[i].drop;
        }
        if (next == n)
            return; /* what is left never goes */
        int over = total - cols;
        tui_header_size *s = &sz[next];
        if (shrink)
            s->width = s->width - over > s->least ? s->width - over : s->least;
        else
            s->width = 0;
    }
}

/* What every item shows now, and its size. */
static void measure(const tui_header_in *in, header_value *v, tui_header_size *sz)
{
    for (size_t i = 0; i < N_ITEMS; i++) {
        const header_item *it = &items[i];
        v[i] = (header_value){.elem = TUI_HEADER_VALUE, .drop = it->drop, .least = it->least};
        snprintf(v[i].label, sizeof v[i].label, "%s", it->label ? it->label : "");
        sz[i] = (tui_header_size){.right = it->right};
        if (!it->value(in, &v[i]))
            continue;
        int around = (it->joined ? 0 : 2) + tui_text_width(v[i].label) +
                     (it->unit ? tui_text_width(it->unit) : 0);
        sz[i].width = around + tui_text_width(v[i].text);
        sz[i].drop = v[i].drop;
        sz[i].shrink = it->shrink;
        if (v[i].least && around + v[i].least < sz[i].width)
            sz[i].least = around + v[i].least;
    }
}

void tui_header_layout(const tui_header_in *in, int cols, int *widths)
{
    header_value v[N_ITEMS];
    tui_header_size sz[N_ITEMS];
    measure(in, v, sz);
    tui_header_fit(sz, N_ITEMS, cols);
    for (size_t i = 0; i < N_ITEMS; i++)
        widths[i] = sz[i].width;
}

/* ---- drawing ---- */

/* An item in width columns at x: its gap, label, text and unit. */
static int draw_item(WINDOW *w, int x, int width, const header_item *it, const header_value *v)
{
    int end = x + width, at = x;
    if (!it->joined)
        at += tui_put(w, 0, at, end - at, TUI_HEADER, "  ");
    at += tui_put(w, 0, at, end - at, TUI_HEADER, v->label);
    int text = end - at - (it->unit ? tui_text_width(it->unit) : 0);
    switch (it->cut) {
    case CUT_START:
        put_tail(w, 0, at, text, v->elem, v->text);
        at += text; /* the unit stays in its place */
        break;
    case CUT_END_BARE:
        at += tui_put_cut(w, 0, at, text, v->elem, v->text);
        break;
    case CUT_END:
        at += tui_put(w, 0, at, text, v->elem, v->text);
        break;
    }
    if (it->unit)
        at += tui_put(w, 0, at, end - at, TUI_HEADER, it->unit);
    return at - x;
}

/* The line: the left items from the left, the right ones from the right
 * end (after a one-column margin), where the left ones leave room. */
static void header_line_draw(const tui_header_in *in, WINDOW *w, int cols)
{
    header_value v[N_ITEMS];
    tui_header_size sz[N_ITEMS];
    measure(in, v, sz);
    tui_header_fit(sz, N_ITEMS, cols);
    int x = 0;
    for (size_t i = 0; i < N_ITEMS; i++)
        if (!items[i].right && sz[i].width && x < cols)
            x += draw_item(w, x, sz[i].width < cols - x ? sz[i].width : cols - x, &items[i], &v[i]);
    int right = cols - 1;
    for (size_t i = N_ITEMS; i-- > 0;) {
        if (!items[i].right || !sz[i].width)
            continue;
        right -= sz[i].width;
        if (right >= x)
            draw_item(w, right, sz[i].width, &items[i], &v[i]);
    }
}

/* The pipeline's error, wrapped, under the header. */
static void header_error_draw(const tui_screen *s, WINDOW *w, int cols)
{
    const char *err = error_text(s);
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

void tui_header_draw(const tui_screen *s, WINDOW *w)
{
    int cols = getmaxx(w);
    werase(w);
    tui_fill(w, 0, 0, cols, TUI_HEADER, " ");
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
    };
    header_line_draw(&in, w, cols);
    header_error_draw(s, w, cols);
}
