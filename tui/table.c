/*
 * table: one row per stage in flow order, one per queue between them.
 *
 *   STAGE      STATE    LOAD / FILL      ITEMS/S  TOTAL  BAD  DROP  LAST N s  DETAILS
 * ▶ validator           ████░░░░░░  40%    1593   6820    0     0  ▂▃▅▅▆▇▇▇▆▇  6820 valid chunks
 *    ↓ chunk            ██████▊░░░  69%    1595   6820          0             11/16 queued
 *   pool                                   1586   6819    0     0  ▂▃▅▅▆▇▇▇▆▇  43/50000 ...
 *     ingestion         ░░░░░░░░░░   0%
 *     loading           █████████▊  97%
 *
 * A stage row: its name, its state in words when it is not running, its
 * busy bar (a stage with several thread pools gets a row per pool under it,
 * named), its items per second over the last second, its totals since
 * start, its bad and dropped counts, the sparkline of its items/s, and
 * its details: its warning, what it talks to, then the metrics its class
 * lists for the screen (the hello's MetricDisplay, in its order: the pool's
 * window and anchor, the reservoir's fill and time left, the writer's
 * bytes/s and time blocked on the reader). A pool row shows what the stage
 * lists for it (the chunk pool's loading row: its chunk store). Nothing here
 * knows a stage type. A queue row: the item type it carries, its fullness
 * bar, items taken per second, and drops.
 *
 * Columns are planned for the width: the details always get a share, the
 * sparkline goes first when space is short, then the type, then the bad and
 * drop columns (their non-zero values move into the details).
 */
#include "tui/screen.h"

#include "monitor/snapshot.h"
#include "tui/derive.h"
#include "tui/widgets.h"

#include <stdio.h>
#include <string.h>

enum { DETAIL_MIN = 24, DETAIL_PREF = 36, SPARK_MIN = 20, STATE_W = 8 };

typedef struct cols {
    int name, state, type, bar, pct, rate, unit, total, bad, drop, spark, detail;
    int x_name, x_state, x_type, x_bar, x_pct, x_rate, x_unit, x_total, x_bad, x_drop, x_spark,
        x_detail;
} cols;

/* ---- rows ---- */

typedef enum { ROW_STAGE, ROW_POOL, ROW_QUEUE } row_kind;

typedef struct row {
    row_kind kind;
    size_t stage, sub; /* the pool or queue index within the stage */
} row;

#define MAX_ROWS 256

static int make_rows(const Lcmon__DataLoaderMetricsProto *m, bool queues, row *rows)
{
    int n = 0;
    for (size_t i = 0; i < m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *st = m->stage_metrics[i];
        if (n < MAX_ROWS)
            rows[n++] = (row){ROW_STAGE, i, 0};
        for (size_t k = 0; st->n_load_metrics > 1 && k < st->n_load_metrics && n < MAX_ROWS; k++)
            rows[n++] = (row){ROW_POOL, i, k};
        for (size_t k = 0; queues && k < st->n_queue_metrics && n < MAX_ROWS; k++)
            rows[n++] = (row){ROW_QUEUE, i, k};
    }
    return n;
}

int tui_table_rows(const tui_screen *s, bool queues)
{
    row rows[MAX_ROWS];
    int n = make_rows(s->last, queues, rows);
    return 1 + (n ? n : 1);
}

/* ---- columns ---- */

/* "×4" after a name when a pool has several threads ("" otherwise). */
static void threads_suffix(const Lcmon__LoadMetricProto *l, char *buf, size_t len)
{
    buf[0] = '\0';
    if (l->threads > 1)
        snprintf(buf, len, " %s%u", tui_glyph()->unicode ? "×" : "x", l->threads);
}

/* A stage row's name: the name, and its thread count when it has one pool. */
static void stage_label(const Lcmon__StageMetricProto *st, char *buf, size_t len)
{
    char t[16] = "";
    if (st->n_load_metrics == 1)
        threads_suffix(st->load_metrics[0], t, sizeof t);
    snprintf(buf, len, "%s%s", st->name ? st->name : "?", t);
}

/* A pool row's label, under its stage: "  loading ×2". */
static void pool_label(const Lcmon__StageMetricProto *st, size_t k, char *buf, size_t len)
{
    const Lcmon__LoadMetricProto *l = st->load_metrics[k];
    char t[16];
    threads_suffix(l, t, sizeof t);
    snprintf(buf, len, "  %s%s", l->name ? l->name : "pool", t);
}

/* " ↓ chunk" (the item type), or for a named output ("split.train") its
 * name, " ↓ train" (the unit column says what it carries). */
static void queue_label(const Lcmon__QueueMetricProto *q, char *buf, size_t len)
{
    const char *dot = q->name ? strrchr(q->name, '.') : NULL;
    const char *label = dot && strcmp(dot, ".out") != 0 ? dot + 1
                        : q->item_type                  ? q->item_type
                                                        : "queue";
    snprintf(buf, len, " %s %s", tui_glyph()->flow, label);
}

static int clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void plan(const Lcmon__DataLoaderMetricsProto *m, int width, cols *c)
{
    memset(c, 0, sizeof *c);
    /* Queue labels may run on into the state column (see draw_queue), so
     * only stage names and pool labels size the name column. */
    int name = 5, type = 4;
    char buf[96];
    for (size_t i = 0; i < m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *st = m->stage_metrics[i];
        stage_label(st, buf, sizeof buf);
        if (tui_text_width(buf) > name)
            name = tui_text_width(buf);
        if (st->stage_type && (int)strlen(st->stage_type) > type)
            type = (int)strlen(st->stage_type);
        for (size_t k = 0; st->n_load_metrics > 1 && k < st->n_load_metrics; k++) {
            pool_label(st, k, buf, sizeof buf);
            if (tui_text_width(buf) > name)
                name = tui_text_width(buf);
        }
    }
    int brackets = tui_text_width(tui_glyph()->bar_open) + tui_text_width(tui_glyph()->bar_close);
    c->name = clamp(name, 6, width >= 120 ? 20 : 12);
    c->state = STATE_W;
    c->bar = 6 + brackets;
    c->pct = 4;
    c->rate = 7;
    int used = 2 + c->name + 1 + c->state + 1 + c->bar + 1 + c->pct + 1 + c->rate + 1;
#define FITS(extra) (used + (extra) + DETAIL_MIN <= width)
    if (FITS(7)) {
        c->total = 6;
        used += 7;
    }
    if (FITS(4)) {
        c->bar += 4;
        used += 4;
    }
    if (FITS(12)) {
        c->bad = c->drop = 5;
        used += 12;
    }
    if (FITS(8)) { /* the rate's unit: "chunks", "batches" */
        c->unit = 7;
        used += 8;
    }
    if (used + type + 1 + DETAIL_PREF + SPARK_MIN + 1 <= width) {
        c->type = clamp(type, 4, 24);
        used += c->type + 1;
    }
    /* The sparkline takes at most a third of what is left: the details say
     * the most (warnings with the command to run, the pool's window). */
    int rest = width - used;
    int spark = rest - DETAIL_PREF - 1 < (rest - 1) / 3 ? rest - DETAIL_PREF - 1 : (rest - 1) / 3;
    if (spark >= SPARK_MIN)
        c->spark = clamp(spark, SPARK_MIN, TUI_HISTORY_SECONDS);
#undef FITS
    int x = 2;
    c->x_name = x, x += c->name + 1;
    c->x_state = x, x += c->state + 1;
    if (c->type)
        c->x_type = x, x += c->type + 1;
    c->x_bar = x, x += c->bar + 1;
    c->x_pct = x, x += c->pct + 1;
    c->x_rate = x, x += c->rate + 1;
    if (c->unit)
        c->x_unit = x, x += c->unit + 1;
    if (c->total)
        c->x_total = x, x += c->total + 1;
    if (c->bad) {
        c->x_bad = x, x += c->bad + 1;
        c->x_drop = x, x += c->drop + 1;
    }
    if (c->spark)
        c->x_spark = x, x += c->spark + 1;
    c->x_detail = x;
    c->detail = width - x;
    if (c->detail < 0)
        c->detail = 0;
}

/* ---- details: segments that shrink to fit ---- */

typedef struct seg {
    char text[160]; /* the full form */
    char brief[80]; /* the short form ("" drops the segment when short) */
    tui_elem e;
    int bar; /* > 0: a bar of this many cells before the text (full form only) */
    double frac;
    tui_bar_kind kind;
} seg;

typedef struct segs {
    seg v[8];
    int n;
} segs;

static seg *add(segs *ss, tui_elem e, const char *text, const char *brief)
{
    if (ss->n == (int)(sizeof ss->v / sizeof ss->v[0]))
        return NULL;
    seg *g = &ss->v[ss->n++];
    memset(g, 0, sizeof *g);
    g->e = e;
    snprintf(g->text, sizeof g->text, "%s", text);
    snprintf(g->brief, sizeof g->brief, "%s", brief ? brief : text);
    return g;
}

static int seg_width(const seg *g, bool brief)
{
    const char *t = brief ? g->brief : g->text;
    int w = tui_text_width(t);
    if (!brief && g->bar)
        w += g->bar + 1;
    return w;
}

static int segs_width(const segs *ss, int n, const bool *brief)
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

static void draw_segs(WINDOW *w, int y, int x, int width, const segs *ss)
{
    if (width <= 0 || ss->n == 0)
        return;
    /* Segments come most important first. Shorten them from the last to
     * the first, then drop them from the end, until they fit; the last one
     * left is cut. */
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
        const seg *g = &ss->v[i];
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

static void fmt(char *buf, size_t len, double v)
{
    tui_fmt_count(buf, len, v);
}

/* A fill against a capacity, with its bar: "43/50000 in window", or in
 * bytes "1.20 GB/6.32 GB in store" (brief: "1.20 GB in store"). */
static void fill_segment_as(segs *ss, const Lcmon__GaugeMetricProto *g, const char *what,
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
    seg *sg = add(ss, TUI_VALUE, text, brief);
    if (sg) {
        sg->bar = 8;
        sg->frac = g->capacity > 0 ? (double)g->value / (double)g->capacity : 0;
        sg->kind = TUI_BARK_FILL;
    }
}

/* The fill of a gauge that fills towards its capacity (the reservoir), and
 * while it fills, how long until full at the recent rate. */
static void fill_with_eta(const tui_screen *s, segs *ss, const Lcmon__GaugeMetricProto *g,
                          const char *what, const Lcmon__StageMetricProto *st)
{
    fill_segment_as(ss, g, what, false);
    char text[96];
    if (g->capacity > 0 && g->value >= g->capacity) {
        add(ss, TUI_DIM, "full", "full");
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
    add(ss, TUI_WARN, text, text + 8);
}

/* The count since the anchor: it runs from the anchor of the initial load
 * or of the last reset; `a` (set) moves the anchor, not the count: then
 * say both. */
static void since_anchor(segs *ss, const Lcmon__StageMetricProto *l)
{
    lc_snapshot_anchor an;
    if (!lc_snapshot_stage_anchor(l, &an))
        return;
    char text[160], brief[80], n[16];
    fmt(n, sizeof n, (double)an.since);
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
    add(ss, TUI_VALUE, text, brief);
}

/* "12.3k files", "1.20 GB/s": a number in its unit, then the label (no
 * space before one that starts with '/'); "" when the label is. */
static void number_label(char *buf, size_t len, double v, const char *unit, const char *label)
{
    char n[24];
    if (lc_snapshot_is_bytes(unit))
        tui_fmt_bytes(n, sizeof n, v);
    else
        fmt(n, sizeof n, v);
    if (!label || !label[0])
        snprintf(buf, len, "%s", label ? "" : n);
    else
        snprintf(buf, len, "%s%s%s", n, label[0] == '/' ? "" : " ", label);
}

/* One metric as its stage describes it (MetricDisplay in
 * proto/monitor.proto): l is the last second's view of the stage, at the
 * all-time one. Nothing when the metric is absent (a gauge, a text) or
 * hidden at 0; an absent count is 0. */
static void show_metric(const tui_screen *s, segs *ss, const Lcmon__MetricDisplay *e,
                        const Lcmon__StageMetricProto *l, const Lcmon__StageMetricProto *at)
{
    if (!e->metric)
        return;
    const char *label = e->label ? e->label : "";
    const char *bl = e->brief ? e->brief : label; /* "": not shown on a narrow row */
    tui_elem style = e->warn ? TUI_WARN : e->dim ? TUI_DIM : TUI_VALUE;
    const Lcmon__CountMetricProto *cm = lc_snapshot_find_count(l, e->metric);
    const Lcmon__GaugeMetricProto *g = lc_snapshot_find_gauge(l, e->metric);
    const char *unit = cm ? cm->unit : g ? g->unit : NULL;
    char text[160], brief[96];
    switch (e->as) {
    case LCMON__METRIC_DISPLAY__AS__TOTAL:
    case LCMON__METRIC_DISPLAY__AS__RATE: {
        bool total = e->as == LCMON__METRIC_DISPLAY__AS__TOTAL;
        const Lcmon__StageMetricProto *from = total ? at : l;
        const Lcmon__CountMetricProto *c = lc_snapshot_find_count(from, e->metric);
        uint64_t v = c ? c->count : 0;
        if (e->nonzero_only && !v)
            return;
        double shown = total ? (double)v : tui_per_second(s->last, v);
        number_label(text, sizeof text, shown, c ? c->unit : unit, label);
        if (bl[0])
            number_label(brief, sizeof brief, shown, c ? c->unit : unit, bl);
        else
            brief[0] = '\0';
        add(ss, style, text, brief);
        return;
    }
    case LCMON__METRIC_DISPLAY__AS__FILL:
        if (!g || !g->has_capacity || (e->nonzero_only && !g->value))
            return;
        if (e->eta)
            fill_with_eta(s, ss, g, label, l);
        else
            fill_segment_as(ss, g, label, lc_snapshot_is_bytes(g->unit));
        return;
    case LCMON__METRIC_DISPLAY__AS__VALUE:
        if (!g || (e->nonzero_only && !g->value))
            return;
        number_label(text, sizeof text, (double)g->value, g->unit, label);
        if (bl[0])
            number_label(brief, sizeof brief, (double)g->value, g->unit, bl);
        else
            brief[0] = '\0';
        add(ss, style, text, brief);
        return;
    case LCMON__METRIC_DISPLAY__AS__FLAG:
        /* A warning of the stage's own says it better. */
        if (g && g->value && !(l->warning && l->warning[0]))
            add(ss, style, label, bl);
        return;
    case LCMON__METRIC_DISPLAY__AS__TEXT: {
        const char *t = lc_snapshot_find_text(l, e->metric);
        if (!t || !t[0])
            return;
        /* "to train 32 · test 11", "last README.md"; a brief of "" hides it
         * on a narrow row. */
        snprintf(text, sizeof text, "%s%s%s", label, label[0] ? " " : "", t);
        if (bl[0] || !e->brief)
            snprintf(brief, sizeof brief, "%s%s%s", bl, bl[0] ? " " : "", t);
        else
            brief[0] = '\0';
        add(ss, style, text, brief);
        return;
    }
    case LCMON__METRIC_DISPLAY__AS__SHARE_OF_TIME: {
        double ms = (double)lc_snapshot_count(l, e->metric);
        double share = s->last->duration_seconds > 0 ? ms / 1000.0 / s->last->duration_seconds : 0;
        share = share > 1 ? 1 : share;
        snprintf(text, sizeof text, "%s %.0f%%", label, 100 * share);
        snprintf(brief, sizeof brief, "%s %.0f%%", bl, 100 * share);
        add(ss, style, text, bl[0] ? brief : "");
        return;
    }
    case LCMON__METRIC_DISPLAY__AS__PERCENT: {
        uint64_t v = lc_snapshot_count(l, e->metric), o = e->of ? lc_snapshot_count(l, e->of) : 0;
        if (v + o == 0)
            return;
        snprintf(text, sizeof text, "%.0f%% %s", 100.0 * (double)v / (double)(v + o), label);
        snprintf(brief, sizeof brief, "%.0f%% %s", 100.0 * (double)v / (double)(v + o), bl);
        add(ss, style, text, bl[0] ? brief : "");
        return;
    }
    case LCMON__METRIC_DISPLAY__AS__SINCE_ANCHOR:
        since_anchor(ss, l);
        return;
    default:
        return;
    }
}

/* The metrics a stage describes for the row `on` (NULL: the stage's own
 * row; a load metric's name: that pool's row), in its order. */
static void described(const tui_screen *s, segs *ss, const Lcmon__StageMetricProto *l,
                      const Lcmon__StageMetricProto *at, const char *on)
{
    const Lcmon__StageDescription *d = tui_describe_stage(lc_monitor_hello(s->mon), l->name);
    for (size_t k = 0; d && k < d->n_details; k++) {
        const Lcmon__MetricDisplay *e = d->details[k];
        bool on_row = on ? e->row && strcmp(e->row, on) == 0 : !e->row;
        if (on_row)
            show_metric(s, ss, e, l, at);
    }
}

static void details(const tui_screen *s, const cols *c, segs *ss, const Lcmon__StageMetricProto *l,
                    const Lcmon__StageMetricProto *a)
{
    char text[160], n[16];
    /* A problem the stage is in now comes first, as a warning. */
    if (l->warning && l->warning[0])
        add(ss, TUI_WARN, l->warning, l->warning);
    /* Bad and dropped counts move here when their columns do not fit. */
    if (!c->bad && a) {
        uint64_t bad = lc_snapshot_bad_input(a), drop = lc_snapshot_dropped(a);
        if (bad) {
            fmt(n, sizeof n, (double)bad);
            snprintf(text, sizeof text, "%s bad", n);
            add(ss, TUI_WARN, text, text);
        }
        if (drop) {
            fmt(n, sizeof n, (double)drop);
            snprintf(text, sizeof text, "%s dropped", n);
            add(ss, TUI_WARN, text, text);
        }
    }
    /* What the stage talks to (its directory, its pipe; not on a narrow
     * row, where its numbers come first), then its metrics. */
    if (l->detail && l->detail[0])
        add(ss, TUI_VALUE, l->detail, "");
    described(s, ss, l, a ? a : l, NULL);
}

/* ---- cells ---- */

static void put_count(WINDOW *w, int y, int x, int width, double v, bool warn_nonzero)
{
    if (width <= 0)
        return;
    char n[16];
    fmt(n, sizeof n, v);
    tui_put_right(w, y, x, width, v > 0 ? (warn_nonzero ? TUI_WARN : TUI_VALUE) : TUI_DIM, n);
}

static void put_load(WINDOW *w, int y, const cols *c, const Lcmon__StageMetricProto *st, size_t k)
{
    if (k >= st->n_load_metrics)
        return;
    double f = tui_load_fraction(st->load_metrics[k]);
    tui_elem e = f >= 0.9 ? TUI_BAR_LOAD_HOT : f >= 0.7 ? TUI_BAR_LOAD_WARM : TUI_BAR_LOAD;
    tui_bar(w, y, c->x_bar, c->bar, f, TUI_BARK_LOAD, e);
    char pct[8];
    snprintf(pct, sizeof pct, "%.0f%%", 100 * f);
    tui_put_right(w, y, c->x_pct, c->pct, f > 0.005 ? TUI_VALUE : TUI_DIM, pct);
}

static void draw_stage(tui_screen *s, WINDOW *w, int y, const cols *c, size_t i)
{
    const Lcmon__StageMetricProto *l = s->last->stage_metrics[i];
    const Lcmon__StageMetricProto *a = l->name ? lc_snapshot_find_stage(s->all, l->name) : NULL;
    const tui_glyphs *g = tui_glyph();
    bool sel = i == s->selected;
    if (sel)
        tui_put(w, y, 0, 1, TUI_STAGE_NAME, g->marker);
    if (sel)
        tui_fill(w, y, c->x_name - 1, c->name + 2, TUI_SELECTED, " ");
    char label[96];
    stage_label(l, label, sizeof label);
    tui_put(w, y, c->x_name, c->name, sel ? TUI_SELECTED : TUI_STAGE_NAME, label);

    switch (l->state) {
    case LCMON__STAGE_STATE__STAGE_RUNNING:
        break;
    case LCMON__STAGE_STATE__STAGE_PAUSED:
        tui_put(w, y, c->x_state, c->state, TUI_PAUSED, "PAUSED");
        break;
    default:
        tui_put(w, y, c->x_state, c->state, TUI_STAGE_STATE, lc_stage_state_name(l->state));
        break;
    }
    if (c->type)
        tui_put(w, y, c->x_type, c->type, TUI_STAGE_TYPE, l->stage_type ? l->stage_type : "");
    if (l->n_load_metrics == 1)
        put_load(w, y, c, l, 0);
    put_count(w, y, c->x_rate, c->rate, tui_per_second(s->last, tui_stage_items(l)), false);
    if (c->unit)
        tui_put(w, y, c->x_unit, c->unit, TUI_DIM, lc_snapshot_stage_unit(l));
    if (a) {
        put_count(w, y, c->x_total, c->total, (double)tui_stage_items(a), false);
        put_count(w, y, c->x_bad, c->bad, (double)lc_snapshot_bad_input(a), true);
        put_count(w, y, c->x_drop, c->drop, (double)lc_snapshot_dropped(a), true);
    }
    if (c->spark && l->name) {
        double v[TUI_HISTORY_SECONDS], peak;
        size_t n = tui_history_series(s->hist, l->name, v, TUI_HISTORY_SECONDS, &peak);
        tui_spark(w, y, c->x_spark, c->spark, v, n, peak);
    }
    segs ss = {.n = 0};
    details(s, c, &ss, l, a);
    draw_segs(w, y, c->x_detail, c->detail, &ss);
}

static void draw_queue(tui_screen *s, WINDOW *w, int y, const cols *c, size_t i, size_t k)
{
    const Lcmon__StageMetricProto *l = s->last->stage_metrics[i];
    const Lcmon__QueueMetricProto *q = l->queue_metrics[k];
    const Lcmon__StageMetricProto *a = l->name ? lc_snapshot_find_stage(s->all, l->name) : NULL;
    const Lcmon__QueueMetricProto *qa = a && k < a->n_queue_metrics ? a->queue_metrics[k] : NULL;
    int64_t fill = tui_queue_fill(q);
    uint64_t cap = q->queue_capacity;
    double f = cap ? (double)fill / (double)cap : 0;
    bool full = cap && (uint64_t)fill >= cap;
    char label[96];
    queue_label(q, label, sizeof label);
    /* The state column is free unless the queue is full. */
    tui_put(w, y, c->x_name, full ? c->name : c->name + 1 + c->state, TUI_QUEUE_LABEL, label);
    if (full)
        tui_put(w, y, c->x_state, c->state, TUI_WARN, "FULL");
    tui_bar(w, y, c->x_bar, c->bar, f, TUI_BARK_QUEUE, full ? TUI_BAR_QUEUE_FULL : TUI_BAR_QUEUE);
    char pct[8];
    snprintf(pct, sizeof pct, "%.0f%%", 100 * f);
    tui_put_right(w, y, c->x_pct, c->pct, fill ? TUI_VALUE : TUI_DIM, pct);
    put_count(w, y, c->x_rate, c->rate, tui_per_second(s->last, q->get_count), false);
    if (c->unit)
        tui_put(w, y, c->x_unit, c->unit, TUI_DIM, lc_snapshot_queue_unit(q));
    if (qa) {
        put_count(w, y, c->x_total, c->total, (double)qa->get_count, false);
        put_count(w, y, c->x_drop, c->drop, (double)qa->drop_count, true);
    }
    segs ss = {.n = 0};
    char text[96], brief[48];
    snprintf(text, sizeof text, "%lld/%llu queued", (long long)fill, (unsigned long long)cap);
    snprintf(brief, sizeof brief, "%lld/%llu", (long long)fill, (unsigned long long)cap);
    add(&ss, TUI_DIM, text, brief);
    const Lcmon__StatisticsProtoInt64 *st = q->queue_fullness;
    if (st && st->count) {
        snprintf(text, sizeof text, "mean %.0f, peak %lld", (double)st->sum / (double)st->count,
                 (long long)st->max);
        add(&ss, TUI_DIM, text, "");
    }
    if (!c->drop && qa && qa->drop_count) {
        char n[16];
        fmt(n, sizeof n, (double)qa->drop_count);
        snprintf(text, sizeof text, "%s dropped", n);
        add(&ss, TUI_WARN, text, text);
    }
    draw_segs(w, y, c->x_detail, c->detail, &ss);
}

static void draw_headings(tui_screen *s, WINDOW *w, const cols *c)
{
    int width = getmaxx(w);
    tui_fill(w, 0, 0, width, TUI_HEADING, " ");
    tui_put(w, 0, c->x_name, c->name, TUI_HEADING, "STAGE");
    tui_put(w, 0, c->x_state, c->state, TUI_HEADING, "STATE");
    if (c->type)
        tui_put(w, 0, c->x_type, c->type, TUI_HEADING, "TYPE");
    int lw = c->bar + 1 + c->pct;
    tui_put(w, 0, c->x_bar, lw, TUI_HEADING, "LOAD / FILL");
    /* With the unit column each row says what its rate counts. */
    if (c->unit)
        tui_put(w, 0, c->x_rate, c->rate + 1 + c->unit, TUI_HEADING, "  PER SECOND");
    else
        tui_put_right(w, 0, c->x_rate, c->rate, TUI_HEADING, "ITEMS/S");
    if (c->total)
        tui_put_right(w, 0, c->x_total, c->total, TUI_HEADING, "TOTAL");
    if (c->bad) {
        tui_put_right(w, 0, c->x_bad, c->bad, TUI_HEADING, "BAD");
        tui_put_right(w, 0, c->x_drop, c->drop, TUI_HEADING, "DROP");
    }
    if (c->spark) {
        char h[48];
        snprintf(h, sizeof h, "ITEMS/S, LAST %d s", c->spark);
        tui_put_right(w, 0, c->x_spark, c->spark, TUI_HEADING, h);
    }
    tui_put(w, 0, c->x_detail, c->detail, TUI_HEADING, "DETAILS");
    (void)s;
}

void tui_table_draw(tui_screen *s, WINDOW *w)
{
    int h = getmaxy(w), width = getmaxx(w);
    werase(w);
    cols c;
    plan(s->last, width, &c);
    draw_headings(s, w, &c);
    row rows[MAX_ROWS];
    int n = make_rows(s->last, s->show_queues, rows);
    if (n == 0) {
        tui_put(w, 1, 2, width - 2, TUI_DIM,
                "no stages to show: the pipeline was not built (the error is above)");
        return;
    }
    /* Keep the selected stage's row in view. */
    int avail = h - 1, sel_row = 0;
    for (int r = 0; r < n; r++)
        if (rows[r].kind == ROW_STAGE && rows[r].stage == s->selected)
            sel_row = r;
    if (s->table_top > n - avail)
        s->table_top = n - avail;
    if (s->table_top < 0)
        s->table_top = 0;
    if (sel_row < s->table_top)
        s->table_top = sel_row;
    if (sel_row >= s->table_top + avail)
        s->table_top = sel_row - avail + 1;
    for (int r = s->table_top, y = 1; r < n && y < h; r++, y++) {
        const row *rw = &rows[r];
        switch (rw->kind) {
        case ROW_STAGE:
            draw_stage(s, w, y, &c, rw->stage);
            break;
        case ROW_POOL: {
            const Lcmon__StageMetricProto *st = s->last->stage_metrics[rw->stage];
            char label[96];
            pool_label(st, rw->sub, label, sizeof label);
            tui_put(w, y, c.x_name, c.name + 1 + c.state, TUI_DIM, label);
            put_load(w, y, &c, st, rw->sub);
            /* What the stage shows on this pool's row (the pool's chunk
             * store, on its loading row). */
            const char *pool = st->load_metrics[rw->sub]->name;
            if (pool) {
                const Lcmon__StageMetricProto *at =
                    st->name ? lc_snapshot_find_stage(s->all, st->name) : NULL;
                segs ss = {.n = 0};
                described(s, &ss, st, at ? at : st, pool);
                draw_segs(w, y, c.x_detail, c.detail, &ss);
            }
            break;
        }
        case ROW_QUEUE:
            draw_queue(s, w, y, &c, rw->stage, rw->sub);
            break;
        }
    }
}
