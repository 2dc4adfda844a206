/*
 * snapshot: see snapshot.h.
 */
#include "monitor/snapshot.h"

#include "core/text.h"

#include <stdarg.h>
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

/* --- names and the status line ------------------------------------------ */

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

static void append_rate(char *buf, size_t len, size_t *used, double v)
{
    if (v >= 1e6)
        append(buf, len, used, "%.2fM", v / 1e6);
    else if (v >= 1e4)
        append(buf, len, used, "%.1fk", v / 1e3);
    else
        append(buf, len, used, "%.0f", v);
}

void lc_status_line(const Lcmon__DataLoaderMetricsProto *m, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    append(buf, len, &used, "[%s]", lc_pipeline_state_name(m->state));
    bool live = lc_pipeline_state_live(m->state);
    double pos = live ? lc_status_positions_per_second(m) : -1;
    if (pos >= 0) {
        append(buf, len, &used, " ");
        append_rate(buf, len, &used, pos);
        append(buf, len, &used, " pos/s");
    }
    /* Queue fills, in flow order. */
    append(buf, len, &used, " | queues");
    for (size_t i = 0; i < m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = m->stage_metrics[i];
        for (size_t k = 0; k < s->n_queue_metrics; k++) {
            const Lcmon__QueueMetricProto *q = s->queue_metrics[k];
            long long fill = q->queue_fullness && q->queue_fullness->has_latest
                                 ? (long long)q->queue_fullness->latest
                                 : 0;
            append(buf, len, &used, " %s %lld/%llu", s->name, fill,
                   (unsigned long long)q->queue_capacity);
        }
    }
    uint64_t bad = 0;
    for (size_t i = 0; i < m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = m->stage_metrics[i];
        bad += lc_snapshot_bad_input(s);
        bool named = false;
        /* Fills against a capacity (the pool's window, the reservoir) and
         * the anchor, under the stage's name. */
        for (size_t k = 0; k < s->n_gauge_metrics; k++) {
            const Lcmon__GaugeMetricProto *g = s->gauge_metrics[k];
            if (!g->has_capacity)
                continue;
            if (!named)
                append(buf, len, &used, " | %s:", s->name);
            if (lc_snapshot_is_bytes(g->unit)) {
                char v[32], c[32];
                lc_format_bytes(v, sizeof v, (double)g->value);
                lc_format_bytes(c, sizeof c, (double)g->capacity);
                append(buf, len, &used, "%s %s %s/%s", named ? "," : "", g->name, v, c);
            } else {
                append(buf, len, &used, "%s %s %lld/%lld", named ? "," : "", g->name,
                       (long long)g->value, (long long)g->capacity);
            }
            named = true;
        }
        lc_snapshot_anchor a;
        if (lc_snapshot_stage_anchor(s, &a)) {
            if (!named)
                append(buf, len, &used, " | %s:", s->name);
            append(buf, len, &used, "%s anchor '%s' +%llu", named ? "," : "",
                   a.anchor[0] ? a.anchor : "-", (unsigned long long)a.since);
            /* After a set, the count still runs from the earlier key. */
            if (strcmp(a.count_from, a.anchor) != 0)
                append(buf, len, &used, " since '%s'", a.count_from[0] ? a.count_from : "start");
        }
        if (s->state == LCMON__STAGE_STATE__STAGE_PAUSED)
            append(buf, len, &used, " | %s PAUSED", s->name);
        const Lcmon__GaugeMetricProto *conn =
            lc_snapshot_gauge_of_role(s, LCMON__METRIC_ROLE__ROLE_READER_CONNECTED);
        if (conn && live)
            append(buf, len, &used, " | reader %s", conn->value ? "connected" : "waiting");
    }
    if (bad)
        append(buf, len, &used, " | bad %llu", (unsigned long long)bad);
}

/* The compact form, at most `width` columns: the state and rate, the queues
 * that are full (where the flow waits), the pool's window and anchor count,
 * the reservoir's fill, the reader, bad input, and the first stage warning,
 * cut to fit. */
void lc_status_line_compact(const Lcmon__DataLoaderMetricsProto *m, size_t width, char *buf,
                            size_t len)
{
    char line[1024];
    size_t used = 0;
    line[0] = '\0';
    append(line, sizeof line, &used, "[%s]", lc_pipeline_state_name(m->state));
    bool live = lc_pipeline_state_live(m->state);
    double pos = live ? lc_status_positions_per_second(m) : -1;
    if (pos >= 0) {
        append(line, sizeof line, &used, " ");
        append_rate(line, sizeof line, &used, pos);
        append(line, sizeof line, &used, " pos/s");
    }
    /* The first stage warning comes next: it says what to do. */
    const char *warning = NULL, *warned = NULL;
    for (size_t i = 0; i < m->n_stage_metrics && !warning; i++)
        if (m->stage_metrics[i]->warning && m->stage_metrics[i]->warning[0]) {
            warning = m->stage_metrics[i]->warning;
            warned = m->stage_metrics[i]->name;
        }
    size_t warn_at = used;
    if (warning)
        append(line, sizeof line, &used, " | %s: %s", warned, warning);
    /* Full queues: how many, and the last in the flow (the stage after it
     * is where the flow waits). */
    size_t full = 0;
    const char *last_full = NULL;
    for (size_t i = 0; i < m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = m->stage_metrics[i];
        for (size_t k = 0; k < s->n_queue_metrics; k++) {
            const Lcmon__QueueMetricProto *q = s->queue_metrics[k];
            if (q->queue_capacity && q->queue_fullness && q->queue_fullness->has_latest &&
                (uint64_t)q->queue_fullness->latest >= q->queue_capacity) {
                full++;
                last_full = s->name;
            }
        }
    }
    if (full)
        append(line, sizeof line, &used, " | %zu queue%s full, last %s", full, full == 1 ? "" : "s",
               last_full);
    uint64_t bad = 0;
    for (size_t i = 0; i < m->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = m->stage_metrics[i];
        bad += lc_snapshot_bad_input(s);
        const Lcmon__GaugeMetricProto *win =
            lc_snapshot_gauge_of_role(s, LCMON__METRIC_ROLE__ROLE_WINDOW_FILL);
        if (win)
            append(line, sizeof line, &used, " | window %lld/%lld", (long long)win->value,
                   (long long)win->capacity);
        lc_snapshot_anchor a;
        if (lc_snapshot_stage_anchor(s, &a))
            append(line, sizeof line, &used, " +%llu", (unsigned long long)a.since);
        const Lcmon__GaugeMetricProto *res =
            lc_snapshot_gauge_of_role(s, LCMON__METRIC_ROLE__ROLE_RESERVOIR_FILL);
        if (res && res->capacity > 0)
            append(line, sizeof line, &used, " | reservoir %.0f%%",
                   100.0 * (double)res->value / (double)res->capacity);
        if (s->state == LCMON__STAGE_STATE__STAGE_PAUSED)
            append(line, sizeof line, &used, " | %s PAUSED", s->name);
        const Lcmon__GaugeMetricProto *conn =
            lc_snapshot_gauge_of_role(s, LCMON__METRIC_ROLE__ROLE_READER_CONNECTED);
        if (conn && live && !(s->warning && s->warning[0])) /* else its warning said it */
            append(line, sizeof line, &used, " | reader %s", conn->value ? "connected" : "waiting");
        /* How old the positions written are (the first part to go). */
        const Lcmon__GaugeMetricProto *age =
            lc_snapshot_gauge_of_role(s, LCMON__METRIC_ROLE__ROLE_POSITION_AGE);
        const Lcmon__GaugeMetricProto *age_max =
            lc_snapshot_gauge_of_role(s, LCMON__METRIC_ROLE__ROLE_POSITION_AGE_MAX);
        if (age && live)
            append(line, sizeof line, &used, " | age %.1fs", (double)age->value / 1e3);
        if (age && age_max && live)
            append(line, sizeof line, &used, " max %.1fs", (double)age_max->value / 1e3);
    }
    if (bad)
        append(line, sizeof line, &used, " | bad %llu", (unsigned long long)bad);
    /* Too long: whole parts are left out from the end, and " ..." says so;
     * a first part longer than the width is cut after a word, and so is a
     * warning (a reader's command is long: the log has it whole) when its
     * start fits. */
    if (width >= 8 && strlen(line) > width) {
        size_t keep = 0;
        for (char *bar = strstr(line, " | "); bar; bar = strstr(bar + 1, " | "))
            if ((size_t)(bar - line) + 4 <= width)
                keep = (size_t)(bar - line);
        if (keep == 0 || (warning && keep <= warn_at && width >= warn_at + 40)) {
            keep = width - 4;
            while (keep > 0 && line[keep] != ' ')
                keep--;
            if (keep == 0)
                keep = width - 4;
        }
        memcpy(line + keep, " ...", 5);
    }
    snprintf(buf, len, "%s", line);
}
