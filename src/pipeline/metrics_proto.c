/*
 * metrics_proto: turns the C metric structs into protobuf-c messages. Every
 * part of the tree is malloc'd, so the default allocator's free_unpacked
 * frees a built message exactly like an unpacked one. Reading snapshots is
 * monitor/snapshot.c's.
 */
#include "pipeline/metrics_proto.h"

#include "core/error.h"
#include "core/metric_windows.h"
#include "stages/registry.h"
#include "stages/stage.h"

#include <stdlib.h>
#include <string.h>

/* The stages' states are StageState's numbers (core/metrics.h). */
_Static_assert((int)LC_STAGE_IDLE == (int)LCMON__STAGE_STATE__STAGE_IDLE &&
                   (int)LC_STAGE_RUNNING == (int)LCMON__STAGE_STATE__STAGE_RUNNING &&
                   (int)LC_STAGE_PAUSED == (int)LCMON__STAGE_STATE__STAGE_PAUSED &&
                   (int)LC_STAGE_FINISHED == (int)LCMON__STAGE_STATE__STAGE_FINISHED &&
                   (int)LC_STAGE_STOPPED == (int)LCMON__STAGE_STATE__STAGE_STOPPED,
               "lc_stage_state_id and StageState differ");

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

/* A metric's unit: as its stage's class lists it, or, for the count the
 * pipeline adds to the last stage when it drains that stage's output
 * itself ("drained"), the output's; NULL when neither says. */
static const char *metric_unit(const lc_stage_class *cls, const char *name)
{
    const lc_metric_info *info = cls ? lc_metric_info_find(cls->metrics, name) : NULL;
    if (info)
        return info->unit && info->unit[0] ? info->unit : NULL;
    if (cls && cls->output && strcmp(name, "drained") == 0)
        return cls->output->unit;
    return NULL;
}

/* The two lists of roles are one (core/metrics.h has no protobuf). */
_Static_assert((int)LC_ROLE_POSITION_AGE_MAX == (int)LCMON__METRIC_ROLE__ROLE_POSITION_AGE_MAX &&
                   (int)LC_ROLE_RESERVOIR_FILL == (int)LCMON__METRIC_ROLE__ROLE_RESERVOIR_FILL &&
                   (int)LC_ROLE_POSITIONS == (int)LCMON__METRIC_ROLE__ROLE_POSITIONS &&
                   (int)LC_ROLE_READER_CONNECTED == (int)LCMON__METRIC_ROLE__ROLE_READER_CONNECTED,
               "lc_metric_role and MetricRole differ");

/* The windows are MetricWindow's numbers (core/metric_windows.h). */
_Static_assert((int)LC_WINDOW_1S == (int)LCMON__METRIC_WINDOW__WINDOW_1S &&
                   (int)LC_WINDOW_1H == (int)LCMON__METRIC_WINDOW__WINDOW_1H &&
                   (int)LC_WINDOW_ALL == (int)LCMON__METRIC_WINDOW__WINDOW_ALL &&
                   LC_WINDOW_COUNT == LCMON__METRIC_WINDOW__WINDOW_ALL + 1,
               "lc_window and MetricWindow differ");

/* A metric's role, as its stage's class lists it. */
static Lcmon__MetricRole metric_role(const lc_stage_class *cls, const char *name)
{
    const lc_metric_info *info = cls ? lc_metric_info_find(cls->metrics, name) : NULL;
    return info ? (Lcmon__MetricRole)info->role : LCMON__METRIC_ROLE__ROLE_NONE;
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
    /* What items_out counts: the output's items, a sink's input's. */
    const lc_stage_class *cls = m->type[0] ? lc_stage_class_find(m->type) : NULL;
    const lc_item_type *t = !cls ? NULL : cls->output ? cls->output : cls->input;
    if (m->n_queue && m->queue[0].item_unit[0]) /* a join writes what it reads */
        p->item_unit = lc_xstrdup(m->queue[0].item_unit);
    else
        p->item_unit = lc_xstrdup(t && t->unit ? t->unit : "items");

    add_loads_and_queues(p, m);
    p->n_count_metrics = (size_t)m->n_count;
    NEW_ARRAY(p->count_metrics, m->n_count);
    for (int i = 0; i < m->n_count; i++) {
        Lcmon__CountMetricProto *c = lc_xmalloc(sizeof *c);
        lcmon__count_metric_proto__init(c);
        c->name = lc_xstrdup(m->count[i].name);
        c->has_count = true;
        c->count = m->count[i].count;
        c->has_kind = m->count[i].kind != LC_COUNT_WORK;
        c->kind = (Lcmon__CountKind)m->count[i].kind;
        const char *unit = metric_unit(cls, c->name);
        c->unit = unit ? lc_xstrdup(unit) : NULL;
        c->role = metric_role(cls, c->name);
        c->has_role = c->role != LCMON__METRIC_ROLE__ROLE_NONE;
        p->count_metrics[i] = c;
    }
    p->n_gauge_metrics = (size_t)m->n_gauge;
    NEW_ARRAY(p->gauge_metrics, m->n_gauge);
    for (int i = 0; i < m->n_gauge; i++) {
        Lcmon__GaugeMetricProto *g = lc_xmalloc(sizeof *g);
        lcmon__gauge_metric_proto__init(g);
        g->name = lc_xstrdup(m->gauge[i].name);
        g->has_value = true;
        g->value = m->gauge[i].value;
        g->has_capacity = m->gauge[i].has_capacity;
        g->capacity = m->gauge[i].capacity;
        const char *unit = metric_unit(cls, g->name);
        g->unit = unit ? lc_xstrdup(unit) : NULL;
        g->role = metric_role(cls, g->name);
        g->has_role = g->role != LCMON__METRIC_ROLE__ROLE_NONE;
        if (m->gauge[i].values.count) {
            g->values = lc_xmalloc(sizeof *g->values);
            set_stats_int(g->values, &m->gauge[i].values);
        }
        p->gauge_metrics[i] = g;
    }
    p->n_text_metrics = (size_t)m->n_text;
    NEW_ARRAY(p->text_metrics, m->n_text);
    for (int i = 0; i < m->n_text; i++) {
        Lcmon__TextMetricProto *tx = lc_xmalloc(sizeof *tx);
        lcmon__text_metric_proto__init(tx);
        tx->name = lc_xstrdup(m->text[i].name);
        tx->value = lc_xstrdup(m->text[i].value);
        tx->role = metric_role(cls, tx->name);
        tx->has_role = tx->role != LCMON__METRIC_ROLE__ROLE_NONE;
        p->text_metrics[i] = tx;
    }
    p->n_statistics_metrics = (size_t)m->n_stat;
    NEW_ARRAY(p->statistics_metrics, m->n_stat);
    for (int i = 0; i < m->n_stat; i++) {
        Lcmon__StatisticsMetricProto *s = lc_xmalloc(sizeof *s);
        lcmon__statistics_metric_proto__init(s);
        s->name = lc_xstrdup(m->stat[i].name);
        s->stats = lc_xmalloc(sizeof *s->stats);
        set_stats_double(s->stats, &m->stat[i].stats);
        const char *unit = metric_unit(cls, s->name);
        s->unit = unit ? lc_xstrdup(unit) : NULL;
        p->statistics_metrics[i] = s;
    }
    return p;
}
