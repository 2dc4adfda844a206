/*
 * local: the monitor of a loader in this process. It owns the pipeline and
 * rebuilds it from the same configuration on a start request, so "stop and
 * start again" really runs the configuration anew. Unlike other monitors it
 * may be shared by threads (the screen or the status line, and the socket
 * server): one lock serialises its calls, so a restart never races a read.
 */
#include "monitor/monitor.h"

#include "core/error.h"
#include "core/thread.h"
#include "pipeline/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct local_monitor {
    lc_monitor base;
    pthread_mutex_t mu;
    const lc_config *cfg;
    lc_pipeline *pipeline; /* NULL when it failed to build */
    char error[LC_ERROR_MSG_MAX];
} local_monitor;

static void build_and_start(local_monitor *lm)
{
    lc_pipeline_free(lm->pipeline);
    lm->pipeline = NULL;
    lm->error[0] = '\0';
    lc_error err;
    lc_error_clear(&err);
    if (lc_pipeline_new(lm->cfg, &lm->pipeline, &err) != 0) {
        snprintf(lm->error, sizeof lm->error, "%s", err.msg);
        LC_ERROR("pipeline: %s", err.msg);
        return;
    }
    lc_error_clear(&err);
    if (lc_pipeline_start(lm->pipeline, &err) != 0)
        snprintf(lm->error, sizeof lm->error, "%s", err.msg);
}

static Lcmon__DataLoaderMetricsProto *local_metrics(lc_monitor *m, bool all_time)
{
    local_monitor *lm = (local_monitor *)m;
    lc_mutex_lock(&lm->mu);
    Lcmon__DataLoaderMetricsProto *p;
    if (lm->pipeline) {
        p = lc_pipeline_metrics(lm->pipeline, all_time);
        lc_mutex_unlock(&lm->mu);
        return p;
    }
    p = lc_xmalloc(sizeof *p);
    lcmon__data_loader_metrics_proto__init(p);
    p->has_state = true;
    p->state = LCMON__PIPELINE_STATE__PIPELINE_FAILED;
    p->error = lc_xstrdup(lm->error);
    lc_mutex_unlock(&lm->mu);
    return p;
}

static Lcmon__ControlResponse *new_response(void)
{
    Lcmon__ControlResponse *r = lc_xmalloc(sizeof *r);
    lcmon__control_response__init(r);
    r->has_ok = true;
    r->ok = true;
    return r;
}

static void control_locked(local_monitor *lm, const Lcmon__ControlRequest *req,
                           Lcmon__ControlResponse **resp)
{
    if (req->has_pipeline_command &&
        req->pipeline_command != LCMON__PIPELINE_COMMAND__PIPELINE_COMMAND_NONE) {
        *resp = new_response();
        if (req->pipeline_command == LCMON__PIPELINE_COMMAND__PIPELINE_COMMAND_STOP) {
            if (lm->pipeline)
                lc_pipeline_stop(lm->pipeline);
        } else {
            build_and_start(lm);
            if (lm->error[0]) {
                (*resp)->ok = false;
                (*resp)->error = lc_xstrdup(lm->error);
            }
        }
        return;
    }
    if (!req->stage_request) {
        *resp = new_response();
        (*resp)->ok = false;
        (*resp)->error = lc_xstrdup("empty request");
        return;
    }
    if (!lm->pipeline) {
        *resp = new_response();
        (*resp)->ok = false;
        (*resp)->error = lc_xstrdup("the pipeline is not running");
        return;
    }
    lc_pipeline_control(lm->pipeline, req->stage_request, resp);
}

static void local_control(lc_monitor *m, const Lcmon__ControlRequest *req,
                          Lcmon__ControlResponse **resp)
{
    local_monitor *lm = (local_monitor *)m;
    lc_mutex_lock(&lm->mu);
    control_locked(lm, req, resp);
    lc_mutex_unlock(&lm->mu);
}

static size_t local_read_log(lc_monitor *m, uint64_t after, lc_log_entry *out, size_t max,
                             uint64_t *next_after)
{
    (void)m;
    return lc_log_read(after, out, max, next_after);
}

static const char *local_where(lc_monitor *m)
{
    (void)m;
    return "in-process";
}

static void local_free(lc_monitor *m)
{
    local_monitor *lm = (local_monitor *)m;
    lc_pipeline_free(lm->pipeline);
    lc_mutex_destroy(&lm->mu);
    free(lm);
}

static const lc_monitor_ops local_ops = {
    .metrics = local_metrics,
    .control = local_control,
    .read_log = local_read_log,
    .where = local_where,
    .free = local_free,
};

lc_monitor *lc_monitor_local_new(const lc_config *cfg)
{
    local_monitor *lm = lc_xcalloc(1, sizeof *lm);
    lm->base.ops = &local_ops;
    lm->cfg = cfg;
    lc_mutex_init(&lm->mu);
    build_and_start(lm);
    return &lm->base;
}
