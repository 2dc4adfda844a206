#include "core/metrics.h"

#include "core/error.h"
#include "core/queue.h"
#include "core/text.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

void lc_stage_metrics_clear(lc_stage_metrics *m)
{
    memset(m, 0, sizeof *m);
}

/* Every metric struct starts with its name, so one lookup serves them all. */
_Static_assert(offsetof(lc_metric_load, name) == 0, "name first");
_Static_assert(offsetof(lc_metric_queue, name) == 0, "name first");
static void *find_or_add(void *arr, int *n, int max, size_t elem, const char *key, const char *kind)
{
    char *base = arr;
    /* Names are kept cut to the field's size; compare the same cut. */
    for (int i = 0; i < *n; i++) {
        if (strncmp(base + (size_t)i * elem, key, LC_METRIC_NAME_MAX - 1) == 0)
            return base + (size_t)i * elem;
    }
    if (*n >= max)
        lc_fatal("too many %s metrics (adding %s)", kind, key);
    char *e = base + (size_t)(*n)++ * elem;
    memset(e, 0, elem);
    snprintf(e, LC_METRIC_NAME_MAX, "%s", key);
    return e;
}

#define FIND_OR_ADD(arr, n, max, key, kind)                                                        \
    find_or_add((arr), &(n), (max), sizeof(arr)[0], (key), (kind))

void lc_metrics_add_load(lc_stage_metrics *m, const char *name, double busy, double total,
                         uint32_t threads)
{
    lc_metric_load *l = FIND_OR_ADD(m->load, m->n_load, LC_METRICS_MAX_LOAD, name, "load");
    l->busy_seconds += busy;
    l->total_seconds += total;
    l->threads = threads;
}

void lc_metrics_add_queue(lc_stage_metrics *m, const char *name, lc_queue *q)
{
    lc_queue_counters c;
    lc_queue_flush_counters(q, &c);
    lc_metric_queue *mq = FIND_OR_ADD(m->queue, m->n_queue, LC_METRICS_MAX_QUEUE, name, "queue");
    const lc_item_type *t = lc_queue_item_type(q);
    snprintf(mq->item_type, sizeof mq->item_type, "%s", t->name);
    snprintf(mq->item_unit, sizeof mq->item_unit, "%s", t->unit ? t->unit : "items");
    mq->put += c.put;
    mq->get += c.get;
    mq->drop += c.drop;
    lc_stats_add(&mq->fullness, (double)c.size);
    mq->capacity = c.capacity;
}

void lc_stage_metrics_begin(lc_stage_metrics *m, const lc_metric_info *rows, int n_rows)
{
    lc_stage_metrics_clear(m);
    m->rows = rows;
    m->n_rows = n_rows;
}

/* The slot of a row written as `kind` (a count: any of the three). */
static lc_metric_slot *slot_of(lc_stage_metrics *m, int row, lc_metric_kind kind)
{
    if (row < 0 || row >= m->n_rows)
        lc_fatal("%s: no metric row %d (%d rows)", m->type, row, m->n_rows);
    lc_metric_kind k = m->rows[row].kind;
    if (k <= LC_METRIC_DROP ? kind != LC_METRIC_COUNT : k != kind)
        lc_fatal("%s: metric %s written as another kind", m->type, m->rows[row].name);
    lc_metric_slot *sl = &m->slot[row];
    sl->set = true;
    return sl;
}

void lc_metric_add(lc_stage_metrics *m, int row, uint64_t n)
{
    slot_of(m, row, LC_METRIC_COUNT)->count += n;
}

void lc_metric_gauge_of(lc_stage_metrics *m, int row, int64_t value, int64_t capacity)
{
    lc_metric_slot *g = slot_of(m, row, LC_METRIC_GAUGE);
    g->value = value;
    g->capacity = capacity;
    g->has_capacity = true;
    lc_stats_add(&g->stats, (double)value);
}

void lc_metric_gauge(lc_stage_metrics *m, int row, int64_t value)
{
    lc_metric_slot *g = slot_of(m, row, LC_METRIC_GAUGE);
    g->value = value;
    g->capacity = 0;
    g->has_capacity = false;
    lc_stats_add(&g->stats, (double)value);
}

void lc_metric_stat(lc_stage_metrics *m, int row, const lc_stats *s)
{
    lc_stats_merge(&slot_of(m, row, LC_METRIC_STAT)->stats, s);
}

void lc_metric_text(lc_stage_metrics *m, int row, const char *value)
{
    lc_metric_slot *t = slot_of(m, row, LC_METRIC_TEXT);
    if (!t->text) {
        if (m->n_text >= LC_METRICS_MAX_TEXT)
            lc_fatal("%s: too many text metrics (adding %s)", m->type, m->rows[row].name);
        t->text = (uint8_t)++m->n_text;
    }
    /* a file's name: shown by screens, ctl and JSON, so made harmless here */
    lc_text_escape(m->texts[t->text - 1], sizeof m->texts[0], value ? value : "");
}

const char *lc_metric_slot_text(const lc_stage_metrics *m, int row)
{
    const lc_metric_slot *t = &m->slot[row];
    return t->text ? m->texts[t->text - 1] : "";
}

/* Fold src's row into dst's by its kind. */
static void merge_row(lc_stage_metrics *dst, const lc_stage_metrics *src, int row)
{
    const lc_metric_slot *s = &src->slot[row];
    if (!s->set)
        return;
    switch (src->rows[row].kind) {
    case LC_METRIC_COUNT:
    case LC_METRIC_BAD:
    case LC_METRIC_DROP:
        lc_metric_add(dst, row, s->count);
        break;
    case LC_METRIC_GAUGE: {
        lc_metric_slot *d = slot_of(dst, row, LC_METRIC_GAUGE);
        d->value = s->value;
        d->capacity = s->capacity;
        d->has_capacity = s->has_capacity;
        lc_stats_merge(&d->stats, &s->stats);
        break;
    }
    case LC_METRIC_STAT:
        lc_metric_stat(dst, row, &s->stats);
        break;
    case LC_METRIC_TEXT:
        lc_metric_text(dst, row, lc_metric_slot_text(src, row));
        break;
    case LC_METRIC_KIND_COUNT_:
        break;
    }
}

void lc_stage_metrics_merge(lc_stage_metrics *dst, const lc_stage_metrics *src)
{
    memcpy(dst->name, src->name, sizeof dst->name);
    memcpy(dst->type, src->type, sizeof dst->type);
    dst->state = src->state;
    for (int i = 0; i < src->n_load; i++)
        lc_metrics_add_load(dst, src->load[i].name, src->load[i].busy_seconds,
                            src->load[i].total_seconds, src->load[i].threads);
    for (int i = 0; i < src->n_queue; i++) {
        const lc_metric_queue *s = &src->queue[i];
        lc_metric_queue *d =
            FIND_OR_ADD(dst->queue, dst->n_queue, LC_METRICS_MAX_QUEUE, s->name, "queue");
        memcpy(d->item_type, s->item_type, sizeof d->item_type);
        memcpy(d->item_unit, s->item_unit, sizeof d->item_unit);
        d->put += s->put;
        d->get += s->get;
        d->drop += s->drop;
        lc_stats_merge(&d->fullness, &s->fullness);
        d->capacity = s->capacity;
    }
    if (dst->rows != src->rows) { /* the first fold into an empty aggregate */
        if (dst->n_rows)
            lc_fatal("%s: merging the metrics of another class", src->name);
        dst->rows = src->rows;
        dst->n_rows = src->n_rows;
    }
    for (int r = 0; r < src->n_rows; r++)
        merge_row(dst, src, r);
    dst->items_out += src->items_out;
    if (src->item_unit)
        dst->item_unit = src->item_unit;
    dst->drained += src->drained;
    dst->drains = dst->drains || src->drains;
    if (src->detail[0])
        memcpy(dst->detail, src->detail, sizeof dst->detail);
    memcpy(dst->warning, src->warning, sizeof dst->warning);
}

static int row_named(const lc_stage_metrics *m, const char *name)
{
    for (int r = 0; r < m->n_rows; r++)
        if (strcmp(m->rows[r].name, name) == 0)
            return r;
    return -1;
}

const lc_metric_slot *lc_metrics_find(const lc_stage_metrics *m, const char *name)
{
    int r = row_named(m, name);
    return r >= 0 && m->slot[r].set ? &m->slot[r] : NULL;
}

const char *lc_metrics_find_text(const lc_stage_metrics *m, const char *name)
{
    int r = row_named(m, name);
    return r >= 0 && m->slot[r].set ? lc_metric_slot_text(m, r) : NULL;
}

const lc_metric_info *lc_metric_info_find(const lc_metric_info *table, const char *name)
{
    for (const lc_metric_info *i = table; i && i->name; i++)
        if (strcmp(i->name, name) == 0)
            return i;
    return NULL;
}

int lc_metric_info_rows(const lc_metric_info *table)
{
    int n = 0;
    while (table && table[n].name)
        n++;
    return n;
}
