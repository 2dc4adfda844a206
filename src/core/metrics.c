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
_Static_assert(offsetof(lc_metric_count, name) == 0, "name first");
_Static_assert(offsetof(lc_metric_gauge, name) == 0, "name first");
_Static_assert(offsetof(lc_metric_stat, name) == 0, "name first");
_Static_assert(offsetof(lc_metric_text, name) == 0, "name first");
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

static void add_count(lc_stage_metrics *m, const char *name, uint64_t n, lc_count_kind kind)
{
    lc_metric_count *c = FIND_OR_ADD(m->count, m->n_count, LC_METRICS_MAX_COUNT, name, "count");
    c->count += n;
    c->kind = kind;
}

void lc_metrics_add_count(lc_stage_metrics *m, const char *name, uint64_t n)
{
    add_count(m, name, n, LC_COUNT_WORK);
}

void lc_metrics_add_bad(lc_stage_metrics *m, const char *name, uint64_t n)
{
    add_count(m, name, n, LC_COUNT_BAD_INPUT);
}

void lc_metrics_add_drop(lc_stage_metrics *m, const char *name, uint64_t n)
{
    add_count(m, name, n, LC_COUNT_DROP);
}

void lc_metrics_set_gauge(lc_stage_metrics *m, const char *name, int64_t value, int64_t capacity,
                          bool has_capacity)
{
    lc_metric_gauge *g = FIND_OR_ADD(m->gauge, m->n_gauge, LC_METRICS_MAX_GAUGE, name, "gauge");
    g->value = value;
    g->capacity = capacity;
    g->has_capacity = has_capacity;
    lc_stats_add(&g->values, (double)value);
}

void lc_metrics_add_stat(lc_stage_metrics *m, const char *name, const lc_stats *s)
{
    lc_metric_stat *st = FIND_OR_ADD(m->stat, m->n_stat, LC_METRICS_MAX_STAT, name, "statistics");
    lc_stats_merge(&st->stats, s);
}

void lc_metrics_set_text(lc_stage_metrics *m, const char *name, const char *value)
{
    lc_metric_text *t = FIND_OR_ADD(m->text, m->n_text, LC_METRICS_MAX_TEXT, name, "text");
    /* a file's name: shown by screens, ctl and JSON, so made harmless here */
    lc_text_escape(t->value, sizeof t->value, value ? value : "");
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
    for (int i = 0; i < src->n_count; i++)
        add_count(dst, src->count[i].name, src->count[i].count, src->count[i].kind);
    for (int i = 0; i < src->n_gauge; i++) {
        const lc_metric_gauge *s = &src->gauge[i];
        lc_metric_gauge *d =
            FIND_OR_ADD(dst->gauge, dst->n_gauge, LC_METRICS_MAX_GAUGE, s->name, "gauge");
        d->value = s->value;
        d->capacity = s->capacity;
        d->has_capacity = s->has_capacity;
        lc_stats_merge(&d->values, &s->values);
    }
    for (int i = 0; i < src->n_stat; i++)
        lc_metrics_add_stat(dst, src->stat[i].name, &src->stat[i].stats);
    for (int i = 0; i < src->n_text; i++)
        lc_metrics_set_text(dst, src->text[i].name, src->text[i].value);
    dst->items_out += src->items_out;
    if (src->detail[0])
        memcpy(dst->detail, src->detail, sizeof dst->detail);
    memcpy(dst->warning, src->warning, sizeof dst->warning);
}

const lc_metric_count *lc_metrics_find_count(const lc_stage_metrics *m, const char *name)
{
    for (int i = 0; i < m->n_count; i++)
        if (strncmp(m->count[i].name, name, LC_METRIC_NAME_MAX - 1) == 0)
            return &m->count[i];
    return NULL;
}

const lc_metric_gauge *lc_metrics_find_gauge(const lc_stage_metrics *m, const char *name)
{
    for (int i = 0; i < m->n_gauge; i++)
        if (strncmp(m->gauge[i].name, name, LC_METRIC_NAME_MAX - 1) == 0)
            return &m->gauge[i];
    return NULL;
}

const lc_metric_stat *lc_metrics_find_stat(const lc_stage_metrics *m, const char *name)
{
    for (int i = 0; i < m->n_stat; i++)
        if (strncmp(m->stat[i].name, name, LC_METRIC_NAME_MAX - 1) == 0)
            return &m->stat[i];
    return NULL;
}

const char *lc_metrics_find_text(const lc_stage_metrics *m, const char *name)
{
    for (int i = 0; i < m->n_text; i++)
        if (strncmp(m->text[i].name, name, LC_METRIC_NAME_MAX - 1) == 0)
            return m->text[i].value;
    return NULL;
}

const lc_metric_info *lc_metric_info_find(const lc_metric_info *table, const char *name)
{
    for (const lc_metric_info *i = table; i && i->name; i++)
        if (strcmp(i->name, name) == 0)
            return i;
    return NULL;
}
