/*
 * local: the monitor of a loader in this process. It owns the pipeline and
 * rebuilds it from the same configuration on a start request, so "stop and
 * start again" really runs the configuration anew. Unlike other monitors it
 * may be shared by threads (the screen or the status line, and the socket
 * server): one lock serialises its calls, so a restart never races a read.
 *
 * What a stage keeps across a restart (lc_pipeline_carry: a chunk pool's
 * anchor, set or reset at run time, is what the trainer counts from) is
 * taken from the old pipeline before it goes and given to the new one
 * before it starts, so that its initial load counts from it, as a restart
 * from a stored anchor does. A pipeline that failed to build keeps what the
 * last one that ran carried.
 */
#include "monitor/local.h"

#include "core/error.h"
#include "core/thread.h"
#include "pipeline/describe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct local_monitor {
    lc_monitor base;
    pthread_mutex_t mu;
    const lc_config *cfg;
    lc_pipeline *pipeline; /* NULL when it failed to build */
    char error[LC_ERROR_MSG_MAX];
    lc_pipeline_carry *carried; /* what the stopped pipeline hands the next */
    char *config_error; /* lc_monitor_failed_new: why there is no config */
    lc_pipeline_end_fn on_end;
    void *on_end_ctx;
    Lcmon__Hello hello; /* its stages, described once from the config */
} local_monitor;

static void build_and_start(local_monitor *lm)
{
    if (lm->pipeline) {
        lc_pipeline_carry_free(lm->carried);
        lm->carried = lc_pipeline_carry_out(lm->pipeline);
    }
    lc_pipeline_free(lm->pipeline);
    lm->pipeline = NULL;
    lm->error[0] = '\0';
    if (!lm->cfg) {
        snprintf(lm->error, sizeof lm->error, "%s", lm->config_error);
        return;
    }
    lc_error err;
    lc_error_clear(&err);
    if (lc_pipeline_new(lm->cfg, &lm->pipeline, &err) != 0) {
        snprintf(lm->error, sizeof lm->error, "%s", err.msg);
        LC_ERROR("pipeline: %s", err.msg);
        return;
    }
    lc_pipeline_carry_in(lm->pipeline, lm->carried);
    lc_pipeline_on_end(lm->pipeline, lm->on_end, lm->on_end_ctx);
    lc_error_clear(&err);
    if (lc_pipeline_start(lm->pipeline, &err) != 0)
        snprintf(lm->error, sizeof lm->error, "%s", err.msg);
}

static lc_snapshot *local_metrics(lc_monitor *m, bool all_time)
{
    local_monitor *lm = (local_monitor *)m;
    lc_mutex_lock(&lm->mu);
    lc_snapshot *snap;
    if (lm->pipeline) {
        snap = lc_pipeline_snapshot(lm->pipeline, all_time); /* the one published */
    } else {
        Lcmon__DataLoaderMetricsProto *p = lc_xmalloc(sizeof *p);
        lcmon__data_loader_metrics_proto__init(p);
        p->has_state = true;
        p->state = LCMON__PIPELINE_STATE__PIPELINE_FAILED;
        p->error = lc_xstrdup(lm->error);
        snap = lc_snapshot_wrap(p);
    }
    lc_mutex_unlock(&lm->mu);
    return snap;
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

static const Lcmon__Hello *local_hello(lc_monitor *m)
{
    return &((local_monitor *)m)->hello;
}

static void local_free(lc_monitor *m)
{
    local_monitor *lm = (local_monitor *)m;
    lc_config_describe_free(lm->hello.stages, lm->hello.n_stages);
    lc_pipeline_free(lm->pipeline);
    lc_pipeline_carry_free(lm->carried);
    free(lm->config_error);
    lc_mutex_destroy(&lm->mu);
    free(lm);
}

static const lc_monitor_ops local_ops = {
    .metrics = local_metrics,
    .control = local_control,
    .read_log = local_read_log,
    .where = local_where,
    .hello = local_hello,
    .free = local_free,
};

lc_monitor *lc_monitor_local_new(const lc_config *cfg, lc_pipeline_end_fn on_end, void *ctx)
{
    local_monitor *lm = lc_xcalloc(1, sizeof *lm);
    lm->base.ops = &local_ops;
    lm->cfg = cfg;
    lcmon__hello__init(&lm->hello);
    lm->hello.stages = lc_config_describe(cfg, &lm->hello.n_stages);
    lm->on_end = on_end;
    lm->on_end_ctx = ctx;
    lc_mutex_init(&lm->mu);
    build_and_start(lm);
    return &lm->base;
}

lc_monitor *lc_monitor_failed_new(const char *errors)
{
    local_monitor *lm = lc_xcalloc(1, sizeof *lm);
    lm->base.ops = &local_ops;
    lcmon__hello__init(&lm->hello);
    lc_mutex_init(&lm->mu);
    size_t n = 0;
    const char *first_end = strchr(errors, '\n');
    for (const char *line = errors; line && *line;) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        LC_ERROR("configuration: %.*s", len, line);
        n++;
        line = end ? end + 1 : NULL;
    }
    int first_len = first_end ? (int)(first_end - errors) : (int)strlen(errors);
    if (n > 1)
        lm->config_error = lc_xasprintf("invalid configuration: %.*s (and %zu more problem%s, "
                                        "listed in the log)",
                                        first_len, errors, n - 1, n == 2 ? "" : "s");
    else
        lm->config_error = lc_xasprintf("invalid configuration: %.*s", first_len, errors);
    build_and_start(lm);
    return &lm->base;
}
