#include "pipeline/status.h"

#include "pipeline/metrics_proto.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used += (size_t)n < len - *used ? (size_t)n : len - *used - 1;
}

void lc_status_line(const Lcmon__DataLoaderMetricsProto *m, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    double dt = m->duration_seconds > 0 ? m->duration_seconds : 1;
    append(buf, len, &used, "[%s]", lc_pipeline_state_name(m->state));
    for (size_t i = 0; i < m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = m->stage_metrics[i];
        append(buf, len, &used, " | %s %.0f/s", s->name, (double)s->items_out / dt);
        if (s->state == LCMON__STAGE_STATE__STAGE_PAUSED)
            append(buf, len, &used, " PAUSED");
        for (size_t k = 0; k < s->n_load_metrics; k++) {
            const Lcmon__LoadMetricProto *l = s->load_metrics[k];
            if (l->total_seconds > 0 && strcmp(l->name, "drain") != 0)
                append(buf, len, &used, " load %.2f", l->load_seconds / l->total_seconds);
        }
        for (size_t k = 0; k < s->n_queue_metrics; k++) {
            const Lcmon__QueueMetricProto *q = s->queue_metrics[k];
            long long fill = q->queue_fullness && q->queue_fullness->has_latest
                                 ? (long long)q->queue_fullness->latest
                                 : 0;
            append(buf, len, &used, " q %lld/%llu", fill, (unsigned long long)q->queue_capacity);
        }
        if (s->anchor)
            append(buf, len, &used, " anchor %s +%llu", s->anchor[0] ? s->anchor : "-",
                   (unsigned long long)s->chunks_since_anchor);
        if (s->dropped)
            append(buf, len, &used, " bad %llu", (unsigned long long)s->dropped);
    }
}
