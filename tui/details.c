/*
 * details: the DETAILS column of the table (details.h): segments that
 * shrink to fit, a stage's and a queue's details, and the renderers of the
 * metrics stages describe, one per display kind, in the table `renderers`.
 */
#include "tui/details.h"

#include "monitor/snapshot.h"
#include "tui/derive.h"
#include "tui/widgets.h"

#include <stdio.h>
#include <string.h>

/* ---- segments that shrink to fit ---- */

tui_seg *tui_segs_add(tui_segs *ss, tui_elem e, const char *text, const char *brief)
{
    if (ss->n == (int)(sizeof ss->v / sizeof ss->v[0]))
        return NULL;
    tui_seg *g = &ss->v[ss->n++];
    memset(g, 0, sizeof *g);
    g->e = e;
    snprintf(g->text, sizeof g->text, "%s", text);
    snprintf(g->brief, sizeof g->brief, "%s", brief ? brief : text);
    return g;
}

static int seg_width(const tui_seg *g, bool brief)
{
    const char *t = brief ? g->brief : g->text;
    int w = tui_text_width(t);
    if (!brief && g->bar)
        w += g->bar + 1;
    return w;
}

static int segs_width(const tui_segs *ss, int n, const bool *brief)
{
    int total = 0, shown = 0;
    for (int i = 0; i < n; i++) {
        int sw = seg_width(&ss->v[i], brief[i]);
        if (sw == 0)
            continue;
        total += (shown ? 2 : 0) + sw;
        shown++;
    }
    return total;
}

void tui_segs_draw(WINDOW *w, int y, int x, int width, const tui_segs *ss)
{
    if (width <= 0 || ss->n == 0)
        return;
    bool brief[8] = {false};
    int n = ss->n;
    for (int i = n - 1; i >= 0 && segs_width(ss, n, brief) > width; i--)
        brief[i] = true;
    /* The last one shown may be cut, if enough of it shows. */
    while (n > 1 && segs_width(ss, n, brief) > width &&
           segs_width(ss, n - 1, brief) + 2 + 8 > width)
        n--;
    int col = x, end = x + width, shown = 0;
    for (int i = 0; i < n && col < end; i++) {
        const tui_seg *g = &ss->v[i];
        const char *t = brief[i] ? g->brief : g->text;
        if (!*t)
            continue;
        if (shown++)
            col += 2;
        if (!brief[i] && g->bar && col + g->bar < end) {
            tui_bar(w, y, col, g->bar, g->frac, g->kind, TUI_BAR_FILL);
            col += g->bar + 1;
        }
        if (col < end)
            col += tui_put(w, y, col, end - col, g->e, t);
    }
}

/* A fill against a capacity, with its bar: "43/50000 in window", or in
 * bytes "1.20 GB/6.32 GB in store" (brief: "1.20 GB in store"). */
static void fill_segment_as(tui_segs *ss, const Lcmon__GaugeMetricProto *g, const char *what,
                            bool bytes)
{
    char a[16], b[16], text[96], brief[48];
    if (bytes) {
        tui_fmt_bytes(a, sizeof a, (double)g->value);
        tui_fmt_bytes(b, sizeof b, (double)g->capacity);
        snprintf(brief, sizeof brief, "%s %s", a, what);
    } else {
        snprintf(a, sizeof a, "%lld", (long long)g->value);
        snprintf(b, sizeof b, "%lld", (long long)g->capacity);
        snprintf(brief, sizeof brief, "%s/%s", a, b);
    }
    snprintf(text, sizeof text, "%s/%s %s", a, b, what);
    tui_seg *sg = tui_segs_add(ss, TUI_VALUE, text, brief);
    if (sg) {
        sg->bar = 8;
        sg->frac = g->capacity > 0 ? (double)g->value / (double)g->capacity : 0;
        sg->kind = TUI_BARK_FILL;
    }
}

/* The fill of a gauge that fills towards its capacity (the reservoir), and
 * while it fills, how long until full at the recent rate. */
static void fill_with_eta(const tui_view *s, tui_segs *ss, const Lcmon__GaugeMetricProto *g,
                          const char *what, const Lcmon__StageMetricProto *st)
{
    fill_segment_as(ss, g, what, false);
    char text[96];
    if (g->capacity > 0 && g->value >= g->capacity) {
        tui_segs_add(ss, TUI_DIM, "full", "full");
        return;
    }
    if (st->state != LCMON__STAGE_STATE__STAGE_RUNNING)
        return; /* not filling now */
    const char *stage = st->name ? st->name : "";
    double pct = g->capacity > 0 ? 100.0 * (double)g->value / (double)g->capacity : 0;
    double rate;
    if (tui_history_fill_rate(s->hist, stage, &rate) && rate > 0) {
        char eta[24];
        tui_fmt_eta(eta, sizeof eta, (double)(g->capacity - g->value) / rate);
        snprintf(text, sizeof text, "filling %.0f%%, %s left", pct, eta);
    } else {
        snprintf(text, sizeof text, "filling %.0f%%", pct);
    }
    tui_segs_add(ss, TUI_WARN, text, text + 8);
}

/* The count since the anchor: it runs from the anchor of the initial load
 * or of the last reset; `a` (set) moves the anchor, not the count: then
 * say both. */
static void since_anchor(tui_segs *ss, const Lcmon__StageMetricProto *l)
{
    lc_snapshot_anchor an;
    if (!lc_snapshot_stage_anchor(l, &an))
        return;
    char text[160], brief[80], n[16];
    tui_fmt_count(n, sizeof n, (double)an.since);
    const char *anchor = an.anchor, *from = an.count_from;
    if (strcmp(from, anchor) != 0) {
        snprintf(text, sizeof text, "%s since %s; anchor %s (counts from the next reset)", n,
                 from[0] ? from : "start", anchor[0] ? anchor : "-");
        snprintf(brief, sizeof brief, "+%s since %s, anchor %s", n, from[0] ? from : "start",
                 anchor[0] ? anchor : "-");
    } else if (anchor[0]) {
        snprintf(text, sizeof text, "%s since anchor %s", n, anchor);
        snprintf(brief, sizeof brief, "+%s since %s", n, anchor);
    } else {
        snprintf(text, sizeof text, "%s since start (no anchor)", n);
        snprintf(brief, sizeof brief, "+%s since start", n);
    }
    tui_segs_add(ss, TUI_VALUE, text, brief);
}

/* "12.3k files", "1.20 GB/s": a number in its unit, then the label (no
 * space before one that starts with '/'); "" when the label is. */
static void number_label(char *buf, size_t len, double v, const char *unit, const char *label)
{
    char n[24];
    if (lc_snapshot_is_bytes(unit))
        tui_fmt_bytes(n, sizeof n, v);
    else
        tui_fmt_count(n, sizeof n, v);
    if (!label || !label[0])
        snprintf(buf, len, "%s", label ? "" : n);
    else
        snprintf(buf, len, "%s%s%s", n, label[0] == '/' ? "" : " ", label);
}

/* ---- the metrics a stage describes, by display kind ---- */

/* One metric as its stage describes it (MetricDisplay in
 * proto/monitor.proto), for its renderer: l is the last second's view of
 * the stage, at the all-time one, r the one over the window the screen
 * shows (rates, shares and percentages), in snapshot rm. */
typedef struct shown {
    const tui_view *s;
    const Lcmon__MetricDisplay *e;
    const Lcmon__StageMetricProto *l, *at, *r;
    const Lcmon__DataLoaderMetricsProto *rm;
    const char *label;
    const char *brief; /* the label on a narrow row ("": not shown then) */
    tui_elem style;
} shown;

/* A renderer adds the metric's segments, or nothing when the metric is
 * absent (a gauge, a text) or hidden at 0; an absent count is 0. */
typedef void (*renderer)(const shown *m, tui_segs *ss);

/* A number and its label, full and brief ("" when the brief is). */
static void add_number(const shown *m, tui_segs *ss, double v, const char *unit)
{
    char text[160], brief[96] = "";
    number_label(text, sizeof text, v, unit, m->label);
    if (m->brief[0])
        number_label(brief, sizeof brief, v, unit, m->brief);
    tui_segs_add(ss, m->style, text, brief);
}

/* A count since the start or over the window shown. */
static void count_as(const shown *m, tui_segs *ss, bool total)
{
    const Lcmon__CountMetricProto *c = lc_snapshot_find_count(total ? m->at : m->r, m->e->metric);
    uint64_t v = c ? c->count : 0;
    if (m->e->nonzero_only && !v)
        return;
    const char *unit = c ? c->unit : NULL;
    if (!c) { /* the unit of the metric the stage has now */
        const Lcmon__CountMetricProto *now = lc_snapshot_find_count(m->l, m->e->metric);
        const Lcmon__GaugeMetricProto *g = lc_snapshot_find_gauge(m->l, m->e->metric);
        unit = now ? now->unit : g ? g->unit : NULL;
    }
    add_number(m, ss, total ? (double)v : tui_per_second(m->rm, v), unit);
}

/* "12.3k files" */
static void show_total(const shown *m, tui_segs *ss)
{
    count_as(m, ss, true);
}

/* "850 chunks/s in" */
static void show_rate(const shown *m, tui_segs *ss)
{
    count_as(m, ss, false);
}

/* "43/50000 in window" with a bar; with eta, "filling 40%, 1m12s left". */
static void show_fill(const shown *m, tui_segs *ss)
{
    const Lcmon__GaugeMetricProto *g = lc_snapshot_find_gauge(m->l, m->e->metric);
    if (!g || !g->has_capacity || (m->e->nonzero_only && !g->value))
        return;
    if (m->e->eta)
        fill_with_eta(m->s, ss, g, m->label, m->l);
    else
        fill_segment_as(ss, g, m->label, lc_snapshot_is_bytes(g->unit));
}

/* "12 sources" */
static void show_value(const shown *m, tui_segs *ss)
{
    const Lcmon__GaugeMetricProto *g = lc_snapshot_find_gauge(m->l, m->e->metric);
    if (!g || (m->e->nonzero_only && !g->value))
        return;
    add_number(m, ss, (double)g->value, g->unit);
}

/* "waiting for a reader" while the gauge is not 0. */
static void show_flag(const shown *m, tui_segs *ss)
{
    const Lcmon__GaugeMetricProto *g = lc_snapshot_find_gauge(m->l, m->e->metric);
    /* A warning of the stage's own says it better. */
    if (g && g->value && !(m->l->warning && m->l->warning[0]))
        tui_segs_add(ss, m->style, m->label, m->brief);
}

/* "to train 32 · test 11", "last README.md"; a brief of "" hides it on a
 * narrow row. */
static void show_text(const shown *m, tui_segs *ss)
{
    const char *t = lc_snapshot_find_text(m->l, m->e->metric);
    if (!t || !t[0])
        return;
    const char *label = m->label, *bl = m->brief;
    char text[160], brief[96] = "";
    snprintf(text, sizeof text, "%s%s%s", label, label[0] ? " " : "", t);
    if (bl[0] || !m->e->brief)
        snprintf(brief, sizeof brief, "%s%s%s", bl, bl[0] ? " " : "", t);
    tui_segs_add(ss, m->style, text, brief);
}

/* A label and a percentage, full and brief (none when the brief is ""). */
static void add_percent(const shown *m, tui_segs *ss, double pct, bool label_first)
{
    char text[160], brief[96];
    if (label_first) {
        snprintf(text, sizeof text, "%s %.0f%%", m->label, pct);
        snprintf(brief, sizeof brief, "%s %.0f%%", m->brief, pct);
    } else {
        snprintf(text, sizeof text, "%.0f%% %s", pct, m->label);
        snprintf(brief, sizeof brief, "%.0f%% %s", pct, m->brief);
    }
    tui_segs_add(ss, m->style, text, m->brief[0] ? brief : "");
}

/* "blocked 12%": milliseconds against the window shown. */
static void show_share_of_time(const shown *m, tui_segs *ss)
{
    double ms = (double)lc_snapshot_count(m->r, m->e->metric);
    double secs = m->rm->duration_seconds;
    double share = secs > 0 ? ms / 1000.0 / secs : 0;
    add_percent(m, ss, 100 * (share > 1 ? 1 : share), true);
}

/* "97% hits": a count against itself plus the count `of`. */
static void show_percent(const shown *m, tui_segs *ss)
{
    uint64_t v = lc_snapshot_count(m->r, m->e->metric);
    uint64_t o = m->e->of ? lc_snapshot_count(m->r, m->e->of) : 0;
    if (v + o)
        add_percent(m, ss, 100.0 * (double)v / (double)(v + o), false);
}

/* "+12 since game_0001.gz" */
static void show_since_anchor(const shown *m, tui_segs *ss)
{
    since_anchor(ss, m->l);
}

/* The renderer of each display kind (MetricDisplay.As). A new kind: its
 * value in proto/monitor.proto, a row here and its function
 * (tests/tui/test_details.c checks every kind of the proto has one). */
static const renderer renderers[] = {
    [LCMON__METRIC_DISPLAY__AS__TOTAL] = show_total,
    [LCMON__METRIC_DISPLAY__AS__RATE] = show_rate,
    [LCMON__METRIC_DISPLAY__AS__FILL] = show_fill,
    [LCMON__METRIC_DISPLAY__AS__VALUE] = show_value,
    [LCMON__METRIC_DISPLAY__AS__FLAG] = show_flag,
    [LCMON__METRIC_DISPLAY__AS__TEXT] = show_text,
    [LCMON__METRIC_DISPLAY__AS__SHARE_OF_TIME] = show_share_of_time,
    [LCMON__METRIC_DISPLAY__AS__PERCENT] = show_percent,
    [LCMON__METRIC_DISPLAY__AS__SINCE_ANCHOR] = show_since_anchor,
};
enum { N_RENDERERS = sizeof renderers / sizeof renderers[0] };

bool tui_details_renders(int as)
{
    return as >= 0 && as < N_RENDERERS && renderers[as];
}

void tui_details_metric(const tui_view *s, tui_segs *ss, const Lcmon__MetricDisplay *e,
                        const Lcmon__StageMetricProto *l, const Lcmon__StageMetricProto *at)
{
    if (!e->metric || !tui_details_renders((int)e->as))
        return;
    const char *label = e->label ? e->label : "";
    const Lcmon__DataLoaderMetricsProto *rm;
    const Lcmon__StageMetricProto *r = tui_view_rate_stage(s, l, &rm);
    shown m = {
        .s = s,
        .e = e,
        .l = l,
        .at = at,
        .r = r,
        .rm = rm,
        .label = label,
        .brief = e->brief ? e->brief : label,
        .style = e->warn  ? TUI_WARN
                 : e->dim ? TUI_DIM
                          : TUI_VALUE,
    };
    renderers[e->as](&m, ss);
}

void tui_details_described(const tui_view *s, tui_segs *ss, const Lcmon__StageMetricProto *l,
                           const Lcmon__StageMetricProto *at, const char *on)
{
    const Lcmon__StageDescription *d = tui_describe_stage(s->hello, l->name);
    for (size_t k = 0; d && k < d->n_details; k++) {
        const Lcmon__MetricDisplay *e = d->details[k];
        bool on_row = on ? e->row && strcmp(e->row, on) == 0 : !e->row;
        if (on_row)
            tui_details_metric(s, ss, e, l, at);
    }
}

/* ---- a stage's and a queue's details ---- */

/* "12 bad", "3 dropped", as a warning when not 0. */
static void add_counted(tui_segs *ss, uint64_t v, const char *what)
{
    char text[96], n[16];
    if (!v)
        return;
    tui_fmt_count(n, sizeof n, (double)v);
    snprintf(text, sizeof text, "%s %s", n, what);
    tui_segs_add(ss, TUI_WARN, text, text);
}

void tui_details_stage(const tui_view *s, tui_segs *ss, const Lcmon__StageMetricProto *l,
                       const Lcmon__StageMetricProto *a, bool bad_in_columns)
{
    /* A problem the stage is in now comes first, as a warning. */
    if (l->warning && l->warning[0])
        tui_segs_add(ss, TUI_WARN, l->warning, l->warning);
    /* Bad and dropped counts move here when their columns do not fit. */
    if (!bad_in_columns && a) {
        add_counted(ss, lc_snapshot_bad_input(a), "bad");
        add_counted(ss, lc_snapshot_dropped(a), "dropped");
    }
    /* What the stage talks to (its directory, its pipe; not on a narrow
     * row, where its numbers come first), then its metrics. */
    if (l->detail && l->detail[0])
        tui_segs_add(ss, TUI_VALUE, l->detail, "");
    tui_details_described(s, ss, l, a ? a : l, NULL);
    tui_details_statistics(ss, tui_view_rate_stage(s, l, NULL));
}

void tui_details_statistics(tui_segs *ss, const Lcmon__StageMetricProto *r)
{
    for (size_t k = 0; k < r->n_statistics_metrics; k++) {
        const Lcmon__StatisticsMetricProto *st = r->statistics_metrics[k];
        const Lcmon__StatisticsProtoDouble *v = st->stats;
        if (!st->name || !v || !v->count)
            continue;
        char text[160], brief[96];
        double mean = v->sum / (double)v->count;
        snprintf(text, sizeof text, "%s %.3g (%.3g to %.3g)", st->name, mean, v->min, v->max);
        snprintf(brief, sizeof brief, "%s %.3g", st->name, mean);
        tui_segs_add(ss, TUI_DIM, text, brief);
    }
}

void tui_details_queue(tui_segs *ss, const Lcmon__QueueMetricProto *q,
                       const Lcmon__QueueMetricProto *qr, const Lcmon__QueueMetricProto *qa,
                       bool drop_in_column)
{
    int64_t fill = tui_queue_fill(q);
    uint64_t cap = q->queue_capacity;
    char text[96], brief[48];
    snprintf(text, sizeof text, "%lld/%llu queued", (long long)fill, (unsigned long long)cap);
    snprintf(brief, sizeof brief, "%lld/%llu", (long long)fill, (unsigned long long)cap);
    tui_segs_add(ss, TUI_DIM, text, brief);
    const Lcmon__StatisticsProtoInt64 *st = qr->queue_fullness;
    if (st && st->count) {
        snprintf(text, sizeof text, "mean %.0f, peak %lld", (double)st->sum / (double)st->count,
                 (long long)st->max);
        tui_segs_add(ss, TUI_DIM, text, "");
    }
    if (!drop_in_column && qa)
        add_counted(ss, qa->drop_count, "dropped");
}
