/*
 * derive: numbers from snapshots, and their formats. See derive.h.
 */
#include "tui/derive.h"

#include "core/text.h"
#include "monitor/snapshot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

uint64_t tui_stage_items(const Lcmon__StageMetricProto *s)
{
    return s->items_out; /* a sink counts what it delivered (the writer: batches) */
}

double tui_per_second(const Lcmon__DataLoaderMetricsProto *m, uint64_t count)
{
    double dt = m->duration_seconds > 0.05 ? m->duration_seconds : 1.0;
    return (double)count / dt;
}

double tui_load_fraction(const Lcmon__LoadMetricProto *l)
{
    if (l->total_seconds <= 0)
        return 0;
    double f = l->load_seconds / l->total_seconds;
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

const Lcmon__StageDescription *tui_describe_stage(const Lcmon__Hello *h, const char *name)
{
    for (size_t i = 0; h && name && i < h->n_stages; i++)
        if (h->stages[i]->name && strcmp(h->stages[i]->name, name) == 0)
            return h->stages[i];
    return NULL;
}

const Lcmon__MetricDisplay *tui_eta_fill(const Lcmon__StageDescription *d)
{
    for (size_t k = 0; d && k < d->n_details; k++)
        if (d->details[k]->as == LCMON__METRIC_DISPLAY__AS__FILL && d->details[k]->eta &&
            d->details[k]->metric)
            return d->details[k];
    return NULL;
}

const Lcmon__StageMetricProto *tui_find_writer(const Lcmon__DataLoaderMetricsProto *m)
{
    for (size_t i = 0; m && i < m->n_stage_metrics; i++)
        if (lc_snapshot_gauge_of_role(m->stage_metrics[i],
                                      LCMON__METRIC_ROLE__ROLE_READER_CONNECTED))
            return m->stage_metrics[i];
    return NULL;
}

int64_t tui_queue_fill(const Lcmon__QueueMetricProto *q)
{
    return q->queue_fullness && q->queue_fullness->has_latest ? q->queue_fullness->latest : 0;
}

void tui_fmt_count(char *buf, size_t len, double v)
{
    lc_format_count(buf, len, v);
}

void tui_fmt_bytes(char *buf, size_t len, double v)
{
    lc_format_bytes(buf, len, v);
}

void tui_fmt_clock(char *buf, size_t len, double seconds)
{
    lc_format_clock(buf, len, seconds);
}

void tui_fmt_eta(char *buf, size_t len, double seconds)
{
    if (!(seconds >= 0))
        seconds = 0;
    if (seconds > 9 * 86400) {
        snprintf(buf, len, "> 9 days");
        return;
    }
    unsigned long long s = (unsigned long long)ceil(seconds);
    if (s < 60)
        snprintf(buf, len, "%llus", s);
    else if (s < 3600)
        snprintf(buf, len, "%llum%02llus", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, len, "%lluh%02llum", s / 3600, s / 60 % 60);
    else
        snprintf(buf, len, "%llud%02lluh", s / 86400, s / 3600 % 24);
}
