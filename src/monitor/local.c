/*
 * local: the monitor of a loader in this process. It owns the pipeline and
 * rebuilds it from the same configuration on a start request, so "stop and
 * start again" really runs the configuration anew. Unlike other monitors it
 * may be shared by threads (the screen or the status line, and the socket
 * server): one lock serialises its calls, so a restart never races a read.
 *
 * Anchors outlive a restart: an anchor set or reset at run time is what the
 * trainer counts from, so before the old pipeline goes, each chunk pool's
 * anchor is queried and kept, and the new pipeline's pools get it (a "set"
 * request) before they start, so their initial load counts from it, as a
 * restart from a stored anchor does. A pipeline that failed to build keeps
 * the anchors of the last one that ran.
 */
#include "monitor/local.h"

#include "core/error.h"
#include "core/thread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A chunk pool's anchor, kept across a restart. */
typedef struct kept_anchor {
    char *stage, *anchor;
} kept_anchor;

typedef struct local_monitor {
    lc_monitor base;
    pthread_mutex_t mu;
    const lc_config *cfg;
    lc_pipeline *pipeline; /* NULL when it failed to build */
    char error[LC_ERROR_MSG_MAX];
    kept_anchor *anchors; /* the chunk pools' anchors, kept across a restart */
    size_t n_anchors;
    char *config_error; /* lc_monitor_failed_new: why there is no config */
    lc_pipeline_end_fn on_end;
    void *on_end_ctx;
} local_monitor;

static void forget_anchors(local_monitor *lm)
{
    for (size_t i = 0; i < lm->n_anchors; i++) {
        free(lm->anchors[i].stage);
        free(lm->anchors[i].anchor);
    }
    free(lm->anchors);
    lm->anchors = NULL;
    lm->n_anchors = 0;
}

/* Ask every stage that has an anchor for it (a query changes nothing). */
static void keep_anchors(local_monitor *lm)
{
    if (!lm->pipeline)
        return;
    Lcmon__ShufflingChunkPoolControlRequest pool =
        LCMON__SHUFFLING_CHUNK_POOL_CONTROL_REQUEST__INIT;
    pool.has_query_chunk_anchor = true;
    pool.query_chunk_anchor = true;
    Lcmon__StageControlRequest req = LCMON__STAGE_CONTROL_REQUEST__INIT;
    req.chunk_pool_request = &pool;
    Lcmon__ControlResponse *resp = NULL;
    lc_pipeline_control(lm->pipeline, &req, &resp);
    forget_anchors(lm);
    if (resp && resp->ok && resp->n_stage_responses) {
        lm->anchors = lc_xcalloc(resp->n_stage_responses, sizeof *lm->anchors);
        for (size_t i = 0; i < resp->n_stage_responses; i++) {
            const Lcmon__StageControlResponse *r = resp->stage_responses[i];
            const Lcmon__ShufflingChunkPoolControlResponse *a = r->chunk_pool_response;
            /* No anchor ("") stays no anchor: nothing to carry. */
            if (!r->ok || !r->stage || !a || !a->chunk_anchor || !a->chunk_anchor[0])
                continue;
            lm->anchors[lm->n_anchors].stage = lc_xstrdup(r->stage);
            lm->anchors[lm->n_anchors].anchor = lc_xstrdup(a->chunk_anchor);
            lm->n_anchors++;
        }
    }
    if (resp)
        lcmon__control_response__free_unpacked(resp, NULL);
}

/* Give the new pipeline's pools the kept anchors, before it starts. */
static void restore_anchors(local_monitor *lm)
{
    for (size_t i = 0; i < lm->n_anchors; i++) {
        Lcmon__ShufflingChunkPoolControlRequest pool =
            LCMON__SHUFFLING_CHUNK_POOL_CONTROL_REQUEST__INIT;
        pool.set_chunk_anchor = lm->anchors[i].anchor;
        Lcmon__StageControlRequest req = LCMON__STAGE_CONTROL_REQUEST__INIT;
        req.chunk_pool_request = &pool;
        req.stage = lm->anchors[i].stage;
        Lcmon__ControlResponse *resp = NULL;
        lc_pipeline_control(lm->pipeline, &req, &resp);
        if (resp && resp->ok)
            LC_INFO("%s: the anchor '%s' is kept across the restart", lm->anchors[i].stage,
                    lm->anchors[i].anchor);
        else
            LC_WARN("%s: cannot keep the anchor '%s' across the restart: %s", lm->anchors[i].stage,
                    lm->anchors[i].anchor, resp && resp->error ? resp->error : "no answer");
        if (resp)
            lcmon__control_response__free_unpacked(resp, NULL);
    }
}

static void build_and_start(local_monitor *lm)
{
    keep_anchors(lm);
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
    restore_anchors(lm);
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

static void local_free(lc_monitor *m)
{
    local_monitor *lm = (local_monitor *)m;
    lc_pipeline_free(lm->pipeline);
    forget_anchors(lm);
    free(lm->config_error);
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

lc_monitor *lc_monitor_local_new(const lc_config *cfg, lc_pipeline_end_fn on_end, void *ctx)
{
    local_monitor *lm = lc_xcalloc(1, sizeof *lm);
    lm->base.ops = &local_ops;
    lm->cfg = cfg;
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
