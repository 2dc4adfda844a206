/*
 * local: the monitor of a loader in this process. It owns the pipeline and
 * rebuilds it on a start request, so "stop and start again" really runs the
 * configuration anew. Unlike other monitors it may be shared by threads (the
 * screen or the status line, and the socket server): one lock serialises its
 * calls, so a restart never races a read.
 *
 * It owns the configuration too. A reload request reads the file again the
 * way lcmon's start did (lc_config_source_load: the same path, --seed and
 * --anchor over it) and checks it as --check-config does; on any problem nothing changes.
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

#include "pipeline/config.h"
#include "pipeline/pipeline.h"

#include "core/error.h"
#include "core/thread.h"
#include "pipeline/describe.h"

#include <errno.h>
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
    lc_monitor_end_fn on_end;
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

/* The hello's list of the loader's own commands (loader_commands, below). */
static void describe_loader_commands(Lcmon__Hello *h);

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

static lc_snapshot *local_window(lc_monitor *m, lc_window w)
{
    local_monitor *lm = (local_monitor *)m;
    lc_mutex_lock(&lm->mu);
    lc_snapshot *snap;
    if (lm->pipeline) {
        snap = lc_pipeline_window_snapshot(lm->pipeline, w); /* the one published */
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

static lc_snapshot *local_metrics(lc_monitor *m, bool all_time)
{
    return local_window(m, all_time ? LC_WINDOW_ALL : LC_WINDOW_1S);
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
static void reload_refused(local_monitor *lm, const char *problems, lc_command_result *res)
{
    size_t n = log_problems("config reload", problems);
    LC_ERROR("config not reloaded from %s: %zu problem%s; nothing changed", lm->source.path, n,
             n == 1 ? "" : "s");
    if (n > 1)
        lc_command_refuse(res, LC_ECONFIG, "not reloaded (nothing changed; %zu problems): %s", n,
                          problems);
    else
        lc_command_refuse(res, LC_ECONFIG, "not reloaded (nothing changed): %s", problems);
}

/* Read the configuration again, check it, and restart the pipeline with it;
 * on any problem change nothing. See the top of the file. */
static void run_reload(local_monitor *lm, lc_command_result *res)
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
        lc_command_refuse(res, -ENOENT, "%s", why);
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
        reload_refused(lm, err.msg, res);
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
        lc_command_refuse(res, -EIO, "reloaded %s (%u stage%s), but the pipeline did not start: %s",
                          path, n, n == 1 ? "" : "s", lm->error);
    else
        res->message = lc_xasprintf("reloaded %s: %u stage%s", path, n, n == 1 ? "" : "s");
}

static void run_stop(local_monitor *lm, lc_command_result *res)
{
    (void)res;
    if (lm->pipeline)
        lc_pipeline_stop(lm->pipeline);
}

static void run_start(local_monitor *lm, lc_command_result *res)
{
    build_and_start(lm);
    if (lm->error[0])
        lc_command_refuse(res, -EIO, "%s", lm->error);
}

static void run_restart(local_monitor *lm, lc_command_result *res)
{
    run_stop(lm, res);
    run_start(lm, res);
}

/* The loader's own commands: a pipeline's life is its monitor's (a start
 * builds a new one from the configuration, a reload reads that again). */
typedef struct loader_command {
    lc_command_info c;
    void (*run)(local_monitor *lm, lc_command_result *res);
} loader_command;

static const loader_command loader_commands[] = {
    {{"stop", "", 0, 0, "stop the pipeline"}, run_stop},
    {{"start", "", 0, 0, "build the pipeline anew and start it"}, run_start},
    {{"restart", "", 0, 0, "stop the pipeline, then build it anew and start it"}, run_restart},
    {{"reload", "", 0, 0,
      "read the configuration file again and check it as\n"
      "--check-config does; when all is well, restart the\n"
      "pipeline with it (the anchor and the pipe's reader are\n"
      "kept) and print what was loaded; else change nothing,\n"
      "print every problem and exit 1"},
     run_reload},
    {{0}, 0},
};

static void command_locked(local_monitor *lm, const lc_command_request *req, lc_command_result *res)
{
    const loader_command *c = lc_command_find(loader_commands, sizeof *loader_commands, req->name);
    if (c && req->stage)
        lc_command_refuse(res, -EINVAL, "%s is the loader's command: it takes no stage", req->name);
    else if (c && lc_command_check_args(&c->c, req->argc, res) == 0)
        c->run(lm, res);
    else if (!c && !lm->pipeline)
        lc_command_refuse(res, -ESRCH, "the pipeline is not running%s%s", lm->error[0] ? ": " : "",
                          lm->error);
    else if (!c)
        lc_pipeline_command(lm->pipeline, req, res);
}

static int local_command(lc_monitor *m, const lc_command_request *req, lc_command_result *res)
{
    local_monitor *lm = (local_monitor *)m;
    lc_mutex_lock(&lm->mu);
    command_locked(lm, req, res);
    lc_mutex_unlock(&lm->mu);
    return res->rc;
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
    for (size_t i = 0; i < lm->hello.n_commands; i++)
        lcmon__command_description__free_unpacked(lm->hello.commands[i], NULL);
    free(lm->hello.commands);
    lc_pipeline_free(lm->pipeline);
    lc_pipeline_carry_free(lm->carried);
    lc_config_free(lm->cfg); /* after its pipeline */
    free((char *)lm->source.path);
    free((char *)lm->source.anchor);
    free(lm->config_error);
    lc_mutex_destroy(&lm->mu);
    free(lm);
}

static const lc_monitor_ops local_ops = {
    .metrics = local_metrics,
    .window = local_window,
    .command = local_command,
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
        lm->source.anchor = src->anchor ? lc_xstrdup(src->anchor) : NULL;
        lm->default_config = !src->path;
    }
    lcmon__hello__init(&lm->hello);
    lm->hello.config = (char *)lm->source.path;
    describe_loader_commands(&lm->hello);
    lc_mutex_init(&lm->mu);
    return lm;
}

lc_monitor *lc_monitor_local_new(lc_config *cfg, const lc_config_source *src,
                                 lc_monitor_end_fn on_end, void *ctx)
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

static void describe_loader_commands(Lcmon__Hello *h)
{
    size_t n = sizeof loader_commands / sizeof *loader_commands - 1;
    h->commands = lc_xcalloc(n, sizeof *h->commands);
    for (h->n_commands = 0; h->n_commands < n; h->n_commands++)
        h->commands[h->n_commands] = lc_command_describe(&loader_commands[h->n_commands].c);
}

Lcmon__Hello *lc_monitor_local_catalog(void)
{
    Lcmon__Hello *h = lc_xmalloc(sizeof *h);
    lcmon__hello__init(h);
    describe_loader_commands(h);
    h->stages = lc_registry_describe(&h->n_stages);
    return h;
}
