/*
 * headline: the table of facts the header and the status lines show (see
 * snapshot.h), its fitting, and the status lines in plain text.
 */
#include "monitor/snapshot.h"

#include "core/text.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Append to an item's text. */
static void add(lc_headline_item *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(lc_headline_item *v, const char *fmt, ...)
{
    size_t used = strlen(v->text);
    if (used + 1 >= sizeof v->text)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->text + used, sizeof v->text - used, fmt, ap);
    va_end(ap);
}

static bool plain(lc_headline_form f)
{
    return f != LC_HEADLINE_HEADER;
}

/* A rate and a reader mean something: a stopped, finished, failed or lost
 * pipeline has neither (its last numbers would be stale). */
static bool live(const lc_headline_in *in)
{
    return !in->disconnected && lc_pipeline_state_live(in->m->state);
}

/* The first stage in a warning state, or NULL; none once an attached
 * loader went away (its warnings, such as the writer's hint to start a
 * reader, were its own). */
static const Lcmon__StageMetricProto *warned_stage(const lc_headline_in *in)
{
    const Lcmon__DataLoaderMetricsProto *m = in->m;
    if (in->disconnected)
        return NULL;
    for (size_t i = 0; i < m->n_stage_metrics; i++)
        if (m->stage_metrics[i]->warning && m->stage_metrics[i]->warning[0])
            return m->stage_metrics[i];
    return NULL;
}

/* A stage that writes for a reader (it has a reader_connected gauge). */
static bool is_writer(const Lcmon__StageMetricProto *s)
{
    return lc_snapshot_gauge_of_role(s, LCMON__METRIC_ROLE__ROLE_READER_CONNECTED) != NULL;
}

static const Lcmon__StageMetricProto *first_writer(const Lcmon__DataLoaderMetricsProto *m)
{
    for (size_t i = 0; i < m->n_stage_metrics; i++)
        if (is_writer(m->stage_metrics[i]))
            return m->stage_metrics[i];
    return NULL;
}

static int64_t queue_fill(const Lcmon__QueueMetricProto *q)
{
    return q->queue_fullness && q->queue_fullness->has_latest ? q->queue_fullness->latest : 0;
}

/* ---- the items ---- */

static bool item_title(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)in, (void)f;
    add(v, " lcmon ");
    v->tone = LC_TONE_TITLE;
    return true;
}

static lc_headline_tone state_tone(Lcmon__PipelineState st)
{
    switch (st) {
    case LCMON__PIPELINE_STATE__PIPELINE_RUNNING:
        return LC_TONE_RUNNING;
    case LCMON__PIPELINE_STATE__PIPELINE_FAILED:
        return LC_TONE_FAILED;
    case LCMON__PIPELINE_STATE__PIPELINE_STOPPED:
    case LCMON__PIPELINE_STATE__PIPELINE_FINISHED:
        return LC_TONE_IDLE;
    default:
        return LC_TONE_BUSY;
    }
}

/* "[running]" on a status line, " RUNNING " in the header. */
static bool item_state(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    Lcmon__PipelineState st = in->m->state;
    const char *name = in->disconnected ? "disconnected"
                                        : (in->stopping ? "stopping" : lc_pipeline_state_name(st));
    if (plain(f)) {
        add(v, "[%s]", name);
    } else {
        add(v, " %s ", name);
        for (char *p = v->text; *p; p++)
            *p = (char)toupper((unsigned char)*p);
    }
    v->tone = in->disconnected ? LC_TONE_FAILED : (in->stopping ? LC_TONE_BUSY : state_tone(st));
    return true;
}

static bool item_uptime(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    lc_format_clock(v->text, sizeof v->text, in->m->uptime_seconds);
    return true;
}

static bool item_rank(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    unsigned world = in->m->world_size ? in->m->world_size : 1;
    add(v, "%u/%u", in->m->rank, world);
    if (world <= 1)
        v->drop = 40; /* the only rank says little: before the uptime */
    return true;
}

static bool item_rate(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    double pps = lc_status_positions_per_second(in->rate ? in->rate : in->m);
    if (!live(in) || pps < 0)
        return false;
    lc_format_count(v->text, sizeof v->text, pps);
    return true;
}

/* The window the rate is over, after it, unless the last second: "(1m)",
 * "(since start)". */
static bool item_window(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    if (!in->window || strcmp(in->window, "1s") == 0 || !item_rate(in, f, v))
        return false;
    v->text[0] = '\0';
    add(v, " (%s)", strcmp(in->window, "all") == 0 ? "since start" : in->window);
    v->tone = LC_TONE_PLAIN;
    return true;
}

/* The first writer's output (a pipe's path). */
static bool item_output(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    const Lcmon__StageMetricProto *wr = first_writer(in->m);
    if (!wr || !wr->detail)
        return false;
    add(v, "%s", wr->detail);
    snprintf(v->label, sizeof v->label, "%s ", in->arrow ? in->arrow : "->");
    if (wr == warned_stage(in))
        v->drop = 10; /* the warning names the pipe */
    return true;
}

/* A stage's warning (it says it first: what to do), else the log's errors
 * or warnings while the log pane is hidden. */
static bool item_problem(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    const Lcmon__StageMetricProto *warned = warned_stage(in);
    size_t n_err = in->log_errors, n_warn = in->log_warnings;
    v->tone = LC_TONE_WARN;
    if (warned) {
        add(v, "%s: %s", warned->name, warned->warning);
        v->drop = 105; /* it matters more than the path; its stage's row has it all */
        return true;
    }
    v->least = 0; /* counts are not cut */
    if (n_err)
        add(v, "%zu error%s in the log", n_err, n_err == 1 ? "" : "s");
    else if (n_warn)
        add(v, "%zu warning%s in the log", n_warn, n_warn == 1 ? "" : "s");
    return v->text[0] != '\0';
}

/* Every queue's fill, in flow order: "queues files 0/256 chunks 3/16". */
static bool item_queues(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    const Lcmon__DataLoaderMetricsProto *m = in->m;
    add(v, "queues");
    for (size_t i = 0; i < m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = m->stage_metrics[i];
        for (size_t k = 0; k < s->n_queue_metrics; k++)
            add(v, " %s %lld/%llu", s->name, (long long)queue_fill(s->queue_metrics[k]),
                (unsigned long long)s->queue_metrics[k]->queue_capacity);
    }
    return true;
}

/* The full queues: how many, and the last in the flow (the stage after it
 * is where the flow waits). */
static bool item_full(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    const Lcmon__DataLoaderMetricsProto *m = in->m;
    size_t full = 0;
    const char *last_full = NULL;
    for (size_t i = 0; i < m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = m->stage_metrics[i];
        for (size_t k = 0; k < s->n_queue_metrics; k++) {
            const Lcmon__QueueMetricProto *q = s->queue_metrics[k];
            if (q->queue_capacity && q->queue_fullness && q->queue_fullness->has_latest &&
                (uint64_t)q->queue_fullness->latest >= q->queue_capacity) {
                full++;
                last_full = s->name;
            }
        }
    }
    if (full)
        add(v, "%zu queue%s full, last %s", full, full == 1 ? "" : "s", last_full);
    return full > 0;
}

/* One stage's fills against a capacity and its anchor, under its name:
 * "pool: chunks_in_window 43/50000, anchor '-' +43". */
static void stage_fills(const Lcmon__StageMetricProto *s, lc_headline_item *v)
{
    bool named = false;
    const char *bar = v->text[0] ? " | " : "";
    for (size_t k = 0; k < s->n_gauge_metrics; k++) {
        const Lcmon__GaugeMetricProto *g = s->gauge_metrics[k];
        if (!g->has_capacity)
            continue;
        if (!named)
            add(v, "%s%s:", bar, s->name);
        if (lc_snapshot_is_bytes(g->unit)) {
            char val[32], cap[32];
            lc_format_bytes(val, sizeof val, (double)g->value);
            lc_format_bytes(cap, sizeof cap, (double)g->capacity);
            add(v, "%s %s %s/%s", named ? "," : "", g->name, val, cap);
        } else {
            add(v, "%s %s %lld/%lld", named ? "," : "", g->name, (long long)g->value,
                (long long)g->capacity);
        }
        named = true;
    }
    lc_snapshot_anchor a;
    if (lc_snapshot_stage_anchor(s, &a)) {
        if (!named)
            add(v, "%s%s:", bar, s->name);
        add(v, "%s anchor '%s' +%llu", named ? "," : "", a.anchor[0] ? a.anchor : "-",
            (unsigned long long)a.since);
        /* After a set, the count still runs from the earlier key. */
        if (strcmp(a.count_from, a.anchor) != 0)
            add(v, " since '%s'", a.count_from[0] ? a.count_from : "start");
    }
}

static bool item_fills(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    for (size_t i = 0; i < in->m->n_stage_metrics; i++)
        stage_fills(in->m->stage_metrics[i], v);
    return v->text[0] != '\0';
}

/* The pool's window and the count since its anchor: "window 43/50000 +43". */
static bool item_pool(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    for (size_t i = 0; i < in->m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = in->m->stage_metrics[i];
        const Lcmon__GaugeMetricProto *win =
            lc_snapshot_gauge_of_role(s, LCMON__METRIC_ROLE__ROLE_WINDOW_FILL);
        lc_snapshot_anchor a;
        bool anchored = lc_snapshot_stage_anchor(s, &a);
        if (!win && !anchored)
            continue;
        add(v, "%s", v->text[0] ? " | " : "");
        if (win)
            add(v, "window %lld/%lld", (long long)win->value, (long long)win->capacity);
        if (anchored)
            add(v, "%s+%llu", win ? " " : "anchor ", (unsigned long long)a.since);
    }
    return v->text[0] != '\0';
}

static bool item_reservoir(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    for (size_t i = 0; i < in->m->n_stage_metrics; i++) {
        const Lcmon__GaugeMetricProto *res = lc_snapshot_gauge_of_role(
            in->m->stage_metrics[i], LCMON__METRIC_ROLE__ROLE_RESERVOIR_FILL);
        if (res && res->capacity > 0)
            add(v, "%sreservoir %.0f%%", v->text[0] ? " | " : "",
                100.0 * (double)res->value / (double)res->capacity);
    }
    return v->text[0] != '\0';
}

static bool item_paused(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    for (size_t i = 0; i < in->m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = in->m->stage_metrics[i];
        if (s->state == LCMON__STAGE_STATE__STAGE_PAUSED)
            add(v, "%s%s PAUSED", v->text[0] ? " | " : "", s->name);
    }
    v->tone = LC_TONE_WARN;
    return v->text[0] != '\0';
}

/* Whether writer wr's reader is connected, waited for, or not there. */
static const char *reader_state(const Lcmon__StageMetricProto *wr, lc_headline_tone *tone)
{
    const Lcmon__GaugeMetricProto *conn =
        lc_snapshot_gauge_of_role(wr, LCMON__METRIC_ROLE__ROLE_READER_CONNECTED);
    const Lcmon__GaugeMetricProto *wait =
        lc_snapshot_gauge_of_role(wr, LCMON__METRIC_ROLE__ROLE_READER_WAITING);
    if (conn && conn->value)
        return "reader connected";
    if (wait && wait->value) {
        *tone = LC_TONE_WARN;
        return "waiting for a reader";
    }
    return "no reader";
}

/* Each writer's reader, but for a writer whose warning says it (and what
 * to run); with several writers, each under its name. */
static bool item_reader(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    const Lcmon__DataLoaderMetricsProto *m = in->m;
    const Lcmon__StageMetricProto *warned = warned_stage(in);
    size_t writers = 0;
    for (size_t i = 0; i < m->n_stage_metrics; i++)
        writers += is_writer(m->stage_metrics[i]);
    if (!live(in))
        return false;
    v->tone = LC_TONE_PLAIN;
    for (size_t i = 0; i < m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *wr = m->stage_metrics[i];
        if (!is_writer(wr) || wr == warned)
            continue;
        const char *sep = v->text[0] ? ", " : "";
        if (writers > 1)
            add(v, "%s%s %s", sep, wr->name, reader_state(wr, &v->tone));
        else
            add(v, "%s%s", sep, reader_state(wr, &v->tone));
    }
    return v->text[0] != '\0';
}

/* How old the positions written are, now and at most. */
static bool item_age(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    for (size_t i = 0; live(in) && i < in->m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = in->m->stage_metrics[i];
        const Lcmon__GaugeMetricProto *age =
            lc_snapshot_gauge_of_role(s, LCMON__METRIC_ROLE__ROLE_POSITION_AGE);
        const Lcmon__GaugeMetricProto *age_max =
            lc_snapshot_gauge_of_role(s, LCMON__METRIC_ROLE__ROLE_POSITION_AGE_MAX);
        if (age)
            add(v, "%sage %.1fs", v->text[0] ? " | " : "", (double)age->value / 1e3);
        if (age && age_max)
            add(v, " max %.1fs", (double)age_max->value / 1e3);
    }
    return v->text[0] != '\0';
}

static bool item_bad(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    uint64_t bad = 0;
    for (size_t i = 0; i < in->m->n_stage_metrics; i++)
        bad += lc_snapshot_bad_input(in->m->stage_metrics[i]);
    if (bad)
        add(v, "bad %llu", (unsigned long long)bad);
    v->tone = LC_TONE_WARN;
    return bad > 0;
}

static bool item_where(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v)
{
    (void)f;
    if (!in->where)
        return false;
    add(v, "%s", in->where);
    v->tone = LC_TONE_PLAIN;
    return true;
}

/* ---- the table ---- */

enum { H = LC_HEADLINE_HEADER, S = LC_HEADLINE_STATUS, L = LC_HEADLINE_LONG };

typedef struct headline_row {
    const char *name;
    unsigned forms; /* the lines it is on */
    bool right;     /* on the header's right end */
    bool joined;    /* no gap before it */
    bool spaced;    /* a status line puts a space before it, not " | " */
    int drop;       /* the lower, the sooner it goes (LC_HEADLINE_KEPT: never) */
    int shrink;     /* the priority of cutting its text to `least` columns */
    int least;      /* 0: its text is never cut to fit */
    lc_headline_cut cut;
    const char *label, *unit; /* around its text */
    bool (*value)(const lc_headline_in *in, lc_headline_form f, lc_headline_item *v);
} headline_row;

/* The headline, left to right. A new fact is a row here and its function.
 * The priorities: what matters least goes first. Where the loader runs,
 * then the uptime (after the rank when it is the only one), the rank, the
 * log's counts, the output path; before the uptime goes, the path shrinks
 * to its last 12 columns (its end names the pipe). A long warning is cut
 * to 40 columns before anything of the header goes, after the status
 * lines' lesser facts went (the age and bad input first, then, from the
 * end, the reader's... to the full queues). The title, the state, the rate
 * and the reader stay. */
static const headline_row rows[] = {
    {"title", H, .joined = true, .drop = LC_HEADLINE_KEPT, .value = item_title},
    {"state", H | S | L, .joined = true, .drop = LC_HEADLINE_KEPT, .value = item_state},
    {"uptime", H, .drop = 60, .label = "up ", .value = item_uptime},
    {"rank", H, .drop = 70, .label = "rank ", .value = item_rank},
    {"rate", H | S | L, .spaced = true, .drop = LC_HEADLINE_KEPT, .unit = " pos/s",
     .value = item_rate},
    {"window", H | S | L, .joined = true, .drop = LC_HEADLINE_KEPT, .value = item_window},
    {"output", H, .drop = 100, .shrink = 50, .least = 12, .cut = LC_CUT_START,
     .value = item_output},
    {"problem", H | S | L, .right = true, .drop = 90, .shrink = 20, .least = 40,
     .cut = LC_CUT_END_BARE, .value = item_problem},
    {"queues", L, .drop = 18, .value = item_queues},
    {"full", S, .drop = 18, .value = item_full},
    {"fills", L, .drop = 17, .value = item_fills},
    {"pool", S, .drop = 17, .value = item_pool},
    {"reservoir", S, .drop = 16, .value = item_reservoir},
    {"paused", S | L, .drop = 15, .value = item_paused},
    {"reader", H | S | L, .drop = LC_HEADLINE_KEPT, .value = item_reader},
    {"age", S, .drop = 12, .value = item_age},
    {"bad", S | L, .drop = 11, .value = item_bad},
    {"where", H, .right = true, .drop = 30, .value = item_where},
};
enum { N_ROWS = sizeof rows / sizeof rows[0] };

size_t lc_headline_items(void)
{
    return N_ROWS;
}

const char *lc_headline_item_name(size_t i)
{
    return i < N_ROWS ? rows[i].name : NULL;
}

bool lc_headline_on(size_t i, lc_headline_form form)
{
    return i < N_ROWS && (rows[i].forms & (unsigned)form);
}

bool lc_headline_value(const lc_headline_in *in, size_t i, lc_headline_form form,
                       lc_headline_item *v)
{
    if (!lc_headline_on(i, form))
        return false;
    const headline_row *r = &rows[i];
    *v = (lc_headline_item){.unit = r->unit,
                            .tone = LC_TONE_VALUE,
                            .drop = r->drop,
                            .shrink = r->shrink,
                            .least = r->least,
                            .cut = r->cut,
                            .right = r->right,
                            .joined = r->joined,
                            .spaced = r->spaced};
    snprintf(v->label, sizeof v->label, "%s", r->label ? r->label : "");
    return r->value(in, form, v);
}

/* ---- fitting ---- */

static int line_width(const lc_headline_size *sz, size_t n)
{
    int total = 0;
    bool right = false;
    for (size_t i = 0; i < n; i++) {
        total += sz[i].width;
        right |= sz[i].right && sz[i].width;
    }
    return total + (right ? 1 : 0);
}

void lc_headline_fit(lc_headline_size *sz, size_t n, int cols)
{
    for (int total = line_width(sz, n); total > cols; total = line_width(sz, n)) {
        size_t next = n;
        bool shrink = false;
        int prio = LC_HEADLINE_KEPT;
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
        lc_headline_size *s = &sz[next];
        if (shrink)
            s->width = s->width - over > s->least ? s->width - over : s->least;
        else
            s->width = 0;
    }
}

/* ---- the status lines: plain text ---- */

#define ELLIPSIS " ..."

/* What goes before an item on a status line: nothing first, a space, or a
 * bar. */
static const char *plain_gap(const lc_headline_item *v, bool first)
{
    return first || v->joined ? "" : v->spaced ? " " : " | ";
}

/* s cut after a word to at most width bytes (the whole of it when there is
 * no space), and ELLIPSIS after it. */
static void cut_words(char *s, size_t width)
{
    size_t e = strlen(ELLIPSIS);
    if (strlen(s) <= width)
        return;
    size_t keep = width > e ? width - e : 0;
    while (keep > 0 && s[keep] != ' ')
        keep--;
    if (keep == 0)
        keep = width > e ? width - e : 0;
    memcpy(s + keep, ELLIPSIS, e + 1);
}

/* The items of form in width columns (0: no limit). */
static void plain_line(const lc_headline_in *in, lc_headline_form form, size_t width, char *buf,
                       size_t len)
{
    lc_headline_item v[N_ROWS];
    lc_headline_size sz[N_ROWS];
    int full[N_ROWS], total = 0;
    bool first = true;
    for (size_t i = 0; i < N_ROWS; i++) {
        sz[i] = (lc_headline_size){0};
        full[i] = 0;
        if (!lc_headline_value(in, i, form, &v[i]))
            continue;
        int around = (int)(strlen(plain_gap(&v[i], first)) + strlen(v[i].label) +
                           (v[i].unit ? strlen(v[i].unit) : 0));
        full[i] = sz[i].width = around + (int)strlen(v[i].text);
        sz[i].drop = v[i].drop;
        sz[i].shrink = v[i].shrink;
        if (v[i].least && around + v[i].least < sz[i].width)
            sz[i].least = around + v[i].least; /* its ELLIPSIS included */
        total += sz[i].width;
        first = false;
    }
    if (width && (size_t)total > width) {
        /* When something must go, room for the ELLIPSIS that says so. */
        lc_headline_size fitted[N_ROWS];
        memcpy(fitted, sz, sizeof sz);
        lc_headline_fit(fitted, N_ROWS, (int)width);
        bool gone = false;
        for (size_t i = 0; i < N_ROWS; i++)
            gone |= full[i] && !fitted[i].width;
        if (gone)
            lc_headline_fit(sz, N_ROWS, (int)(width > 4 ? width - 4 : 0));
        else
            memcpy(sz, fitted, sizeof sz);
    }
    char line[4096] = "";
    size_t used = 0;
    bool dropped = false;
    first = true;
    for (size_t i = 0; i < N_ROWS && used < sizeof line; i++) {
        if (!full[i])
            continue;
        if (!sz[i].width) {
            dropped = true;
            continue;
        }
        const char *gap = plain_gap(&v[i], first);
        if (sz[i].width < full[i])
            cut_words(v[i].text, (size_t)sz[i].width - strlen(gap) - strlen(v[i].label) -
                                     (v[i].unit ? strlen(v[i].unit) : 0));
        used += (size_t)snprintf(line + used, sizeof line - used, "%s%s%s%s", gap, v[i].label,
                                 v[i].text, v[i].unit ? v[i].unit : "");
        first = false;
    }
    if (dropped && used + strlen(ELLIPSIS) < sizeof line)
        strcat(line, ELLIPSIS);
    if (width)
        cut_words(line, width); /* what never goes did not fit */
    snprintf(buf, len, "%s", line);
}

void lc_status_line(const Lcmon__DataLoaderMetricsProto *m, char *buf, size_t len)
{
    lc_headline_in in = {.m = m};
    plain_line(&in, LC_HEADLINE_LONG, 0, buf, len);
}

void lc_status_line_compact(const Lcmon__DataLoaderMetricsProto *m, size_t width, char *buf,
                            size_t len)
{
    lc_headline_in in = {.m = m};
    plain_line(&in, LC_HEADLINE_STATUS, width, buf, len);
}
