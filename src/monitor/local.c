/*
 * local: the monitor of a loader in this process. It owns the pipeline and
 * rebuilds it on a start request, so "stop and start again" really runs the
 * configuration anew. Unlike other monitors it may be shared by threads (the
 * screen or the status line, and the socket server): one lock serialises its
 * calls, so a restart never races a read.
 *
 * It owns the configuration too. A reload request reads the file again the
 * way lcmon's start did (lc_config_source_load: the same path, --seed over
 * it) and checks it as --check-config does; on any problem nothing changes.
 * Otherwise the old pipeline stops and is freed (it points into its
 * configuration), then the old configuration and the hello described from
 * it, and the new ones take their place before the new pipeline is built.
 * The hello's stages so live until the next reload: monitor.h says so.
 *
 * What a stage keeps across a restart (lc_pipeline_carry: a chunk pool's
 * anchor, set or reset at run time, is what the trainer counts from) is
 * taken from the old pipeline before it goes and given to the new one
 * before it starts, so that its initial load counts from it, as a restart
 * from a stored anchor does; a reload carries it the same way, to the stage
 * of the same name and type. A pipeline that failed to build keeps what the
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
    lc_config *cfg;          /* owned; NULL for lc_monitor_failed_new */
    lc_config_source source; /* what a reload reads (path owned; NULL: nothing) */
    bool default_config;     /* the source is the built-in default */
    lc_pipeline *pipeline;   /* NULL when it failed to build */
    char error[LC_ERROR_MSG_MAX];
    lc_pipeline_carry *carried; /* what the stopped pipeline hands the next */
    char *config_error;         /* lc_monitor_failed_new: why there is no config */
    lc_pipeline_end_fn on_end;
    void *on_end_ctx;
    Lcmon__Hello hello; /* its stages, described from the config (again at a reload) */
} local_monitor;

/* Stop and free the pipeline, keeping what it carries to the next. */
static void retire_pipeline(local_monitor *lm)
{
    if (lm->pipeline) {
        lc_pipeline_carry_free(lm->carried);
        lm->carried = lc_pipeline_carry_out(lm->pipeline);
    }
    lc_pipeline_free(lm->pipeline);
    lm->pipeline = NULL;
}

static void describe(local_monitor *lm)
{
    lc_config_describe_free(lm->hello.stages, lm->hello.n_stages);
    lm->hello.stages = lc_config_describe(lm->cfg, &lm->hello.n_stages);
}

static void build_and_start(local_monitor *lm)
{
    retire_pipeline(lm);
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

static void refuse(Lcmon__ControlResponse *resp, char *why)
{
    resp->ok = false;
    resp->error = why;
}

/* Log each of the problems (one a line) as an error, `what` first; how
 * many there were. */
static size_t log_problems(const char *what, const char *problems)
{
    size_t n = 0;
    for (const char *line = problems; line && *line; n++) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        LC_ERROR("%s: %.*s", what, len, line);
        line = end ? end + 1 : NULL;
    }
    return n;
}

/* The reload of a configuration that has problems (one a line): each is
 * logged, and the answer lists them all after saying that nothing changed
 * and how many there are (a screen shows the first line). */
static void reload_refused(local_monitor *lm, const char *problems, Lcmon__ControlResponse *resp)
{
    size_t n = log_problems("config reload", problems);
    LC_ERROR("config not reloaded from %s: %zu problem%s; nothing changed", lm->source.path, n,
             n == 1 ? "" : "s");
    if (n > 1)
        refuse(resp, lc_xasprintf("not reloaded (nothing changed; %zu problems): %s", n, problems));
    else
        refuse(resp, lc_xasprintf("not reloaded (nothing changed): %s", problems));
}

/* Read the configuration again, check it, and restart the pipeline with it;
 * on any problem change nothing. See the top of the file. */
static void reload_locked(local_monitor *lm, Lcmon__ControlResponse *resp)
{
    const char *path = lm->source.path;
    if (!path || strcmp(path, "-") == 0) {
        const char *why =
            path ? "nothing to reload: the configuration was read from standard input, which "
                   "cannot be read again (give lcmon --config FILE)"
            : lm->default_config
                ? "nothing to reload: lcmon runs its built-in default configuration, which has "
                  "no file (lcmon --print-default-config > my.yaml, then lcmon --config my.yaml "
                  "runs one that reloads)"
                : "nothing to reload: this loader was given no configuration file";
        LC_WARN("config reload: %s", why);
        refuse(resp, lc_xstrdup(why));
        return;
    }
    lc_config *cfg = NULL;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_config_source_load(&lm->source, &cfg, &err);
    if (rc == 0)
        rc = lc_config_preflight(cfg, &err); /* what --check-config checks besides */
    if (rc != 0) {
        lc_config_free(cfg);
        reload_refused(lm, err.msg, resp);
        return;
    }
    unsigned n = cfg->n_stages;
    LC_INFO("config reloaded from %s: %u stage%s; restarting the pipeline with it", path, n,
            n == 1 ? "" : "s");
    retire_pipeline(lm); /* before its configuration goes */
    lc_config_free(lm->cfg);
    lm->cfg = cfg;
    describe(lm);
    build_and_start(lm);
    if (lm->error[0])
        refuse(resp, lc_xasprintf("reloaded %s (%u stage%s), but the pipeline did not start: %s",
                                  path, n, n == 1 ? "" : "s", lm->error));
    else
        resp->message = lc_xasprintf("reloaded %s: %u stage%s", path, n, n == 1 ? "" : "s");
}

static void control_locked(local_monitor *lm, const Lcmon__ControlRequest *req,
                           Lcmon__ControlResponse **resp)
{
    if (req->has_reload_config && req->reload_config) {
        *resp = new_response();
        reload_locked(lm, *resp);
        return;
    }
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
    lc_config_free(lm->cfg); /* after its pipeline */
    free((char *)lm->source.path);
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

/* A monitor without a pipeline yet, that reloads from src (may be NULL). */
static local_monitor *new_local(lc_config *cfg, const lc_config_source *src)
{
    local_monitor *lm = lc_xcalloc(1, sizeof *lm);
    lm->base.ops = &local_ops;
    lm->cfg = cfg;
    if (src) {
        lm->source = *src;
        lm->source.path = src->path ? lc_xstrdup(src->path) : NULL;
        lm->default_config = !src->path;
    }
    lcmon__hello__init(&lm->hello);
    lm->hello.config = (char *)lm->source.path;
    lc_mutex_init(&lm->mu);
    return lm;
}

lc_monitor *lc_monitor_local_new(lc_config *cfg, const lc_config_source *src,
                                 lc_pipeline_end_fn on_end, void *ctx)
{
    local_monitor *lm = new_local(cfg, src);
    describe(lm);
    lm->on_end = on_end;
    lm->on_end_ctx = ctx;
    build_and_start(lm);
    return &lm->base;
}

double lc_monitor_local_stop_deadline(lc_monitor *m)
{
    local_monitor *lm = (local_monitor *)m;
    lc_mutex_lock(&lm->mu);
    double d = lc_config_stop_deadline(lm->cfg);
    lc_mutex_unlock(&lm->mu);
    return d;
}

bool lc_monitor_local_configured(lc_monitor *m)
{
    local_monitor *lm = (local_monitor *)m;
    lc_mutex_lock(&lm->mu);
    bool has = lm->cfg != NULL;
    lc_mutex_unlock(&lm->mu);
    return has;
}

lc_monitor *lc_monitor_failed_new(const char *errors, const lc_config_source *src)
{
    local_monitor *lm = new_local(NULL, src);
    size_t n = log_problems("configuration", errors);
    const char *first_end = strchr(errors, '\n');
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
