/*
 * snapshot: see snapshot.h.
 */
#include "monitor/snapshot.h"

#include <stdio.h>
#include <string.h>

static void destroy_message(void *m)
{
    lcmon__data_loader_metrics_proto__free_unpacked(m, NULL);
}

lc_snapshot *lc_snapshot_wrap(Lcmon__DataLoaderMetricsProto *m)
{
    return lc_shared_new(m, destroy_message);
}

/* --- lookups ----------------------------------------------------------- */

const Lcmon__CountMetricProto *lc_snapshot_find_count(const Lcmon__StageMetricProto *s,
                                                      const char *name)
{
    for (size_t i = 0; i < s->n_count_metrics; i++)
        if (s->count_metrics[i]->name && strcmp(s->count_metrics[i]->name, name) == 0)
            return s->count_metrics[i];
    return NULL;
}

const Lcmon__GaugeMetricProto *lc_snapshot_find_gauge(const Lcmon__StageMetricProto *s,
                                                      const char *name)
{
    for (size_t i = 0; i < s->n_gauge_metrics; i++)
        if (s->gauge_metrics[i]->name && strcmp(s->gauge_metrics[i]->name, name) == 0)
            return s->gauge_metrics[i];
    return NULL;
}

const Lcmon__CountMetricProto *lc_snapshot_count_of_role(const Lcmon__StageMetricProto *s,
                                                         Lcmon__MetricRole role)
{
    for (size_t i = 0; s && i < s->n_count_metrics; i++)
        if (s->count_metrics[i]->has_role && s->count_metrics[i]->role == role)
            return s->count_metrics[i];
    return NULL;
}

const Lcmon__GaugeMetricProto *lc_snapshot_gauge_of_role(const Lcmon__StageMetricProto *s,
                                                         Lcmon__MetricRole role)
{
    for (size_t i = 0; s && i < s->n_gauge_metrics; i++)
        if (s->gauge_metrics[i]->has_role && s->gauge_metrics[i]->role == role)
            return s->gauge_metrics[i];
    return NULL;
}

const char *lc_snapshot_text_of_role(const Lcmon__StageMetricProto *s, Lcmon__MetricRole role)
{
    for (size_t i = 0; s && i < s->n_text_metrics; i++)
        if (s->text_metrics[i]->has_role && s->text_metrics[i]->role == role)
            return s->text_metrics[i]->value ? s->text_metrics[i]->value : "";
    return NULL;
}

const char *lc_snapshot_find_text(const Lcmon__StageMetricProto *s, const char *name)
{
    for (size_t i = 0; s && i < s->n_text_metrics; i++)
        if (s->text_metrics[i]->name && strcmp(s->text_metrics[i]->name, name) == 0)
            return s->text_metrics[i]->value ? s->text_metrics[i]->value : "";
    return NULL;
}

const Lcmon__StageMetricProto *lc_snapshot_find_stage(const Lcmon__DataLoaderMetricsProto *m,
                                                      const char *name)
{
    for (size_t i = 0; i < m->n_stage_metrics; i++)
        if (m->stage_metrics[i]->name && strcmp(m->stage_metrics[i]->name, name) == 0)
            return m->stage_metrics[i];
    return NULL;
}

uint64_t lc_snapshot_count(const Lcmon__StageMetricProto *s, const char *name)
{
    const Lcmon__CountMetricProto *c = s ? lc_snapshot_find_count(s, name) : NULL;
    return c ? c->count : 0;
}

uint64_t lc_snapshot_bad_input(const Lcmon__StageMetricProto *s)
{
    uint64_t bad = 0;
    for (size_t i = 0; s && i < s->n_count_metrics; i++)
        if (s->count_metrics[i]->kind == LCMON__COUNT_KIND__COUNT_BAD_INPUT)
            bad += s->count_metrics[i]->count;
    return bad;
}

uint64_t lc_snapshot_dropped(const Lcmon__StageMetricProto *s)
{
    uint64_t d = 0;
    for (size_t i = 0; s && i < s->n_count_metrics; i++)
        if (s->count_metrics[i]->kind == LCMON__COUNT_KIND__COUNT_DROP)
            d += s->count_metrics[i]->count;
    for (size_t i = 0; s && i < s->n_queue_metrics; i++)
        d += s->queue_metrics[i]->drop_count;
    return d;
}

bool lc_snapshot_is_bytes(const char *unit)
{
    return unit && strcmp(unit, "bytes") == 0;
}

bool lc_snapshot_stage_anchor(const Lcmon__StageMetricProto *s, lc_snapshot_anchor *a)
{
    const Lcmon__GaugeMetricProto *g =
        lc_snapshot_gauge_of_role(s, LCMON__METRIC_ROLE__ROLE_ANCHOR_COUNT);
    if (!g)
        return false;
    if (a) {
        const char *anchor = lc_snapshot_text_of_role(s, LCMON__METRIC_ROLE__ROLE_ANCHOR);
        const char *from = lc_snapshot_text_of_role(s, LCMON__METRIC_ROLE__ROLE_ANCHOR_FROM);
        const char *newest = lc_snapshot_text_of_role(s, LCMON__METRIC_ROLE__ROLE_NEWEST_KEY);
        a->since = g->value > 0 ? (uint64_t)g->value : 0;
        a->anchor = anchor ? anchor : "";
        a->count_from = from ? from : a->anchor;
        a->newest = newest ? newest : "";
    }
    return true;
}

const Lcmon__StageMetricProto *lc_snapshot_find_anchor(const Lcmon__DataLoaderMetricsProto *m,
                                                       lc_snapshot_anchor *a)
{
    for (size_t i = 0; m && i < m->n_stage_metrics; i++)
        if (lc_snapshot_stage_anchor(m->stage_metrics[i], a))
            return m->stage_metrics[i];
    return NULL;
}

const char *lc_snapshot_stage_unit(const Lcmon__StageMetricProto *s)
{
    return s && s->item_unit && s->item_unit[0] ? s->item_unit : "items";
}

const char *lc_snapshot_queue_unit(const Lcmon__QueueMetricProto *q)
{
    return q && q->item_unit && q->item_unit[0] ? q->item_unit : "items";
}

/* --- names and the rate (the status lines are headline.c's) ------------- */

bool lc_pipeline_state_live(Lcmon__PipelineState s)
{
    return s == LCMON__PIPELINE_STATE__PIPELINE_STARTING ||
           s == LCMON__PIPELINE_STATE__PIPELINE_RUNNING ||
           s == LCMON__PIPELINE_STATE__PIPELINE_PAUSED ||
           s == LCMON__PIPELINE_STATE__PIPELINE_STOPPING;
}

const char *lc_pipeline_state_name(Lcmon__PipelineState s)
{
    switch (s) {
    case LCMON__PIPELINE_STATE__PIPELINE_STARTING:
        return "starting";
    case LCMON__PIPELINE_STATE__PIPELINE_RUNNING:
        return "running";
    case LCMON__PIPELINE_STATE__PIPELINE_PAUSED:
        return "paused";
    case LCMON__PIPELINE_STATE__PIPELINE_STOPPING:
        return "stopping";
    case LCMON__PIPELINE_STATE__PIPELINE_STOPPED:
        return "stopped";
    case LCMON__PIPELINE_STATE__PIPELINE_FAILED:
        return "failed";
    case LCMON__PIPELINE_STATE__PIPELINE_FINISHED:
        return "finished";
    default:
        return "?";
    }
}

const char *lc_stage_state_name(Lcmon__StageState s)
{
    switch (s) {
    case LCMON__STAGE_STATE__STAGE_IDLE:
        return "idle";
    case LCMON__STAGE_STATE__STAGE_RUNNING:
        return "running";
    case LCMON__STAGE_STATE__STAGE_PAUSED:
        return "paused";
    case LCMON__STAGE_STATE__STAGE_FINISHED:
        return "finished";
    case LCMON__STAGE_STATE__STAGE_STOPPED:
        return "stopped";
    default:
        return "?";
    }
}

/* Positions per second: the rows a writer wrote, else the positions a
 * tensor generator packed, over the window. */
double lc_status_positions_per_second(const Lcmon__DataLoaderMetricsProto *m)
{
    double dt = m->duration_seconds > 0 ? m->duration_seconds : 1;
    /* Positions, counted by the last stage that counts them (the tensor
     * generator, or the tokenizer, whose rows are samples: a decoder sample
     * is a whole game); else the rows of the last stage with rows. */
    for (size_t i = m->n_stage_metrics; i-- > 0;) {
        const Lcmon__CountMetricProto *c =
            lc_snapshot_count_of_role(m->stage_metrics[i], LCMON__METRIC_ROLE__ROLE_POSITIONS);
        if (c)
            return (double)c->count / dt;
    }
    for (size_t i = m->n_stage_metrics; i-- > 0;) {
        const Lcmon__CountMetricProto *c =
            lc_snapshot_count_of_role(m->stage_metrics[i], LCMON__METRIC_ROLE__ROLE_ROWS);
        if (c)
            return (double)c->count / dt;
    }
    return -1;
}
