/*
 * metrics_proto: turns the C metric structs into protobuf-c messages. Every
 * part of the tree is malloc'd, so the default allocator's free_unpacked
 * frees a built message exactly like an unpacked one. Reading snapshots is
 * monitor/snapshot.c's.
 */
#include "pipeline/metrics_proto.h"

#include "core/error.h"
#include "core/metric_windows.h"
#include "stages/stage.h"

#include <stdlib.h>
#include <string.h>

/* The C enums cast to the proto's here and in the monitor
 * (lc_stage_state_id, lc_metric_kind's counts, lc_metric_role, lc_window)
 * are the proto's, value for value: core/metrics.h makes each from a list
 * in the proto's order, and tests/python/test_enums.py checks every list
 * against the proto and Python's, name and number. */

static void set_stats_double(Lcmon__StatisticsProtoDouble *p, const lc_stats *s)
{
    lcmon__statistics_proto_double__init(p);
    p->has_sum = p->has_count = true;
    p->sum = s->sum;
    p->count = s->count;
    if (s->count) {
        p->has_min = p->has_max = p->has_latest = true;
        p->min = s->min;
        p->max = s->max;
        p->latest = s->latest;
    }
}

static void set_stats_int(Lcmon__StatisticsProtoInt64 *p, const lc_stats *s)
{
    lcmon__statistics_proto_int64__init(p);
    p->has_sum = p->has_count = true;
    p->sum = (int64_t)s->sum;
    p->count = s->count;
    if (s->count) {
        p->has_min = p->has_max = p->has_latest = true;
        p->min = (int64_t)s->min;
        p->max = (int64_t)s->max;
        p->latest = (int64_t)s->latest;
    }
}

#define NEW_ARRAY(ptr, n) ((ptr) = (n) ? lc_xcalloc((size_t)(n), sizeof *(ptr)) : NULL)

/* The stage's loads (its threads' busy time) and its output queues. */
static void add_loads_and_queues(Lcmon__StageMetricProto *p, const lc_stage_metrics *m)
{
    p->n_load_metrics = (size_t)m->n_load;
    NEW_ARRAY(p->load_metrics, m->n_load);
    for (int i = 0; i < m->n_load; i++) {
        Lcmon__LoadMetricProto *l = lc_xmalloc(sizeof *l);
        lcmon__load_metric_proto__init(l);
        l->name = lc_xstrdup(m->load[i].name);
        l->has_load_seconds = l->has_total_seconds = l->has_threads = true;
        l->load_seconds = m->load[i].busy_seconds;
        l->total_seconds = m->load[i].total_seconds;
        l->threads = m->load[i].threads;
        p->load_metrics[i] = l;
    }
    p->n_queue_metrics = (size_t)m->n_queue;
    NEW_ARRAY(p->queue_metrics, m->n_queue);
    for (int i = 0; i < m->n_queue; i++) {
        const lc_metric_queue *q = &m->queue[i];
        Lcmon__QueueMetricProto *qp = lc_xmalloc(sizeof *qp);
        lcmon__queue_metric_proto__init(qp);
        qp->name = lc_xstrdup(q->name);
        qp->item_type = lc_xstrdup(q->item_type);
        qp->item_unit = lc_xstrdup(q->item_unit);
        qp->has_put_count = qp->has_get_count = qp->has_drop_count = true;
        qp->put_count = q->put;
        qp->get_count = q->get;
        qp->drop_count = q->drop;
        qp->has_queue_capacity = true;
        qp->queue_capacity = q->capacity;
        qp->queue_fullness = lc_xmalloc(sizeof *qp->queue_fullness);
        set_stats_int(qp->queue_fullness, &q->fullness);
        p->queue_metrics[i] = qp;
    }
}

static char *unit_of(const lc_metric_info *row)
{
    return row->unit && row->unit[0] ? lc_xstrdup(row->unit) : NULL;
}

static void add_count(Lcmon__StageMetricProto *p, const char *name, uint64_t n,
                      const lc_metric_info *row, const char *unit)
{
    Lcmon__CountMetricProto *c = lc_xmalloc(sizeof *c);
    lcmon__count_metric_proto__init(c);
    c->name = lc_xstrdup(name);
    c->has_count = true;
    c->count = n;
    if (row) {
        c->has_kind = row->kind != LC_METRIC_COUNT;
        c->kind = (Lcmon__CountKind)row->kind;
        c->role = (Lcmon__MetricRole)row->role;
        c->has_role = row->role != LC_ROLE_NONE;
    }
    c->unit = unit && unit[0] ? lc_xstrdup(unit) : NULL;
    p->count_metrics[p->n_count_metrics++] = c;
}

static void add_gauge(Lcmon__StageMetricProto *p, const lc_metric_info *row,
                      const lc_metric_slot *sl)
{
    Lcmon__GaugeMetricProto *g = lc_xmalloc(sizeof *g);
    lcmon__gauge_metric_proto__init(g);
    g->name = lc_xstrdup(row->name);
    g->has_value = true;
    g->value = sl->value;
    g->has_capacity = sl->has_capacity;
    g->capacity = sl->capacity;
    g->unit = unit_of(row);
    g->role = (Lcmon__MetricRole)row->role;
    g->has_role = row->role != LC_ROLE_NONE;
    if (sl->stats.count) {
        g->values = lc_xmalloc(sizeof *g->values);
        set_stats_int(g->values, &sl->stats);
    }
    p->gauge_metrics[p->n_gauge_metrics++] = g;
}

static void add_text(Lcmon__StageMetricProto *p, const lc_metric_info *row, const char *value)
{
    Lcmon__TextMetricProto *tx = lc_xmalloc(sizeof *tx);
    lcmon__text_metric_proto__init(tx);
    tx->name = lc_xstrdup(row->name);
    tx->value = lc_xstrdup(value);
    tx->role = (Lcmon__MetricRole)row->role;
    tx->has_role = row->role != LC_ROLE_NONE;
    p->text_metrics[p->n_text_metrics++] = tx;
}

static void add_stat(Lcmon__StageMetricProto *p, const lc_metric_info *row,
                     const lc_metric_slot *sl)
{
    Lcmon__StatisticsMetricProto *st = lc_xmalloc(sizeof *st);
    lcmon__statistics_metric_proto__init(st);
    st->name = lc_xstrdup(row->name);
    st->stats = lc_xmalloc(sizeof *st->stats);
    set_stats_double(st->stats, &sl->stats);
    st->unit = unit_of(row);
    p->statistics_metrics[p->n_statistics_metrics++] = st;
}

/* The rows that were written, each as its kind says, with the unit and
 * role its row gives; and the pipeline's own count of what it took off
 * the stage's output ("drained", in the output's items). */
static void add_rows(Lcmon__StageMetricProto *p, const lc_stage_metrics *m)
{
    size_t n[LC_METRIC_KIND_COUNT_] = {0};
    for (int r = 0; r < m->n_rows; r++)
        n[m->rows[r].kind] += m->slot[r].set;
    size_t counts = n[LC_METRIC_COUNT] + n[LC_METRIC_BAD] + n[LC_METRIC_DROP] + m->drains;
    NEW_ARRAY(p->count_metrics, counts);
    NEW_ARRAY(p->gauge_metrics, n[LC_METRIC_GAUGE]);
    NEW_ARRAY(p->text_metrics, n[LC_METRIC_TEXT]);
    NEW_ARRAY(p->statistics_metrics, n[LC_METRIC_STAT]);
    for (int r = 0; r < m->n_rows; r++) {
        const lc_metric_info *row = &m->rows[r];
        const lc_metric_slot *sl = &m->slot[r];
        if (!sl->set)
            continue;
        switch (row->kind) {
        case LC_METRIC_COUNT:
        case LC_METRIC_BAD:
        case LC_METRIC_DROP:
            add_count(p, row->name, sl->count, row, row->unit);
            break;
        case LC_METRIC_GAUGE:
            add_gauge(p, row, sl);
            break;
        case LC_METRIC_TEXT:
            add_text(p, row, lc_metric_slot_text(m, r));
            break;
        case LC_METRIC_STAT:
            add_stat(p, row, sl);
            break;
        case LC_METRIC_KIND_COUNT_:
            break;
        }
    }
    if (m->drains)
        add_count(p, "drained", m->drained, NULL, m->item_unit);
}

Lcmon__StageMetricProto *lc_stage_metrics_to_proto(const lc_stage_metrics *m)
{
    Lcmon__StageMetricProto *p = lc_xmalloc(sizeof *p);
    lcmon__stage_metric_proto__init(p);
    p->name = lc_xstrdup(m->name);
    p->stage_type = lc_xstrdup(m->type);
    p->has_state = true;
    p->state = (Lcmon__StageState)m->state;
    p->has_items_out = true;
    p->items_out = m->items_out;
    if (m->detail[0])
        p->detail = lc_xstrdup(m->detail);
    if (m->warning[0])
        p->warning = lc_xstrdup(m->warning);
    p->item_unit = lc_xstrdup(m->item_unit ? m->item_unit : "items");
    add_loads_and_queues(p, m);
    add_rows(p, m);
    return p;
}
