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
 * its details (details.c): its warning, what it talks to, then the metrics
 * its class lists for the screen (the hello's MetricDisplay, in its order:
 * the pool's window and anchor, the reservoir's fill and time left, the
 * writer's bytes/s and time blocked on the reader). A pool row shows what
 * the stage lists for it (the chunk pool's loading row: its chunk store).
 * Nothing here knows a stage type. A queue row: the item type it carries,
 * its fullness bar, items taken per second, and drops.
 *
 * Columns are planned for the width: the details always get a share, the
 * sparkline goes first when space is short, then the type, then the bad and
 * drop columns (their non-zero values move into the details).
 */
#include "tui/table.h"

#include "monitor/snapshot.h"
#include "tui/details.h"
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

int tui_table_rows(const Lcmon__DataLoaderMetricsProto *m, bool queues)
{
    row rows[MAX_ROWS];
    int n = make_rows(m, queues, rows);
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

/* ---- cells ---- */

static void put_count(WINDOW *w, int y, int x, int width, double v, bool warn_nonzero)
{
    if (width <= 0)
        return;
    char n[16];
    tui_fmt_count(n, sizeof n, v);
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

static void draw_stage(tui_view *s, WINDOW *w, int y, const cols *c, size_t i)
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
    const Lcmon__DataLoaderMetricsProto *rm;
    const Lcmon__StageMetricProto *r = tui_view_rate_stage(s, l, &rm); /* over the window */
    if (l->n_load_metrics == 1)
        put_load(w, y, c, r, 0);
    put_count(w, y, c->x_rate, c->rate, tui_per_second(rm, tui_stage_items(r)), false);
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
    tui_segs ss = {.n = 0};
    tui_details_stage(s, &ss, l, a, c->bad != 0);
    tui_segs_draw(w, y, c->x_detail, c->detail, &ss);
}

/* A pool row: its label under its stage, its busy bar, and what the stage
 * shows on it (the pool's chunk store, on its loading row). */
static void draw_pool(tui_view *s, WINDOW *w, int y, const cols *c, size_t i, size_t k)
{
    const Lcmon__StageMetricProto *st = s->last->stage_metrics[i];
    char label[96];
    pool_label(st, k, label, sizeof label);
    tui_put(w, y, c->x_name, c->name + 1 + c->state, TUI_DIM, label);
    const Lcmon__StageMetricProto *r = tui_view_rate_stage(s, st, NULL);
    put_load(w, y, c, r->n_load_metrics == st->n_load_metrics ? r : st, k);
    const char *pool = st->load_metrics[k]->name;
    if (!pool)
        return;
    const Lcmon__StageMetricProto *at = st->name ? lc_snapshot_find_stage(s->all, st->name) : NULL;
    tui_segs ss = {.n = 0};
    tui_details_described(s, &ss, st, at ? at : st, pool);
    tui_segs_draw(w, y, c->x_detail, c->detail, &ss);
}

static void draw_queue(tui_view *s, WINDOW *w, int y, const cols *c, size_t i, size_t k)
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
    /* Items taken over the window shown, from its queue of the same name. */
    const Lcmon__DataLoaderMetricsProto *rm;
    const Lcmon__StageMetricProto *r = tui_view_rate_stage(s, l, &rm);
    const Lcmon__QueueMetricProto *qr = k < r->n_queue_metrics ? r->queue_metrics[k] : NULL;
    if (!qr || !qr->name || !q->name || strcmp(qr->name, q->name) != 0)
        qr = q, rm = s->last;
    put_count(w, y, c->x_rate, c->rate, tui_per_second(rm, qr->get_count), false);
    if (c->unit)
        tui_put(w, y, c->x_unit, c->unit, TUI_DIM, lc_snapshot_queue_unit(q));
    if (qa) {
        put_count(w, y, c->x_total, c->total, (double)qa->get_count, false);
        put_count(w, y, c->x_drop, c->drop, (double)qa->drop_count, true);
    }
    tui_segs ss = {.n = 0};
    tui_details_queue(&ss, q, qr, qa, c->drop != 0);
    tui_segs_draw(w, y, c->x_detail, c->detail, &ss);
}

static void draw_headings(tui_view *s, WINDOW *w, const cols *c)
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

void tui_table_draw(tui_view *s, WINDOW *w)
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
        case ROW_POOL:
            draw_pool(s, w, y, &c, rw->stage, rw->sub);
            break;
        case ROW_QUEUE:
            draw_queue(s, w, y, &c, rw->stage, rw->sub);
            break;
        }
    }
}
