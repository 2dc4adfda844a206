/*
 * pipeline: see pipeline.h.
 *
 * Metrics. Every interval the metrics thread flushes each stage into an
 * lc_stage_metrics (generic part here, the class fills the rest). Each flush
 * is folded into the windows of time (core/metric_windows.h: all time, the
 * last second, and 10 s to 1 h from rings of whole seconds), under
 * `metrics_mu`.
 *
 * Snapshots. After each flush, and at once after a start, a stop, a
 * command and the end, the two snapshots every reader wants (the last
 * second, all time) are built once and published as shared immutable
 * messages (core/shared.h): the screen, the status line and every socket
 * client read the same ones by reference, instead of each building its
 * own. The other windows are built when first asked for after they (or
 * the states) changed, and shared the same way.
 */
#include "pipeline/pipeline.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/metric_windows.h"
#include "core/shared.h"
#include "core/thread.h"
#include "pipeline/commands.h"
#include "pipeline/metrics_proto.h"
#include "pipeline/rank.h"
#include "stages/registry.h"
#include "stages/stage.h"

#include <errno.h>
#include <sys/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lc_pipeline {
    const lc_config *cfg;
    lc_stage_env env;
    lc_run_progress progress; /* env.progress, when the run can tell */
    size_t n;
    lc_stage *stages;
    lc_queue *drain_input; /* the last stage's output, when nothing reads it */
    lc_thread drain_thread;
    lc_load_meter drain_meter;
    atomic_uint_fast64_t drained, drained_flush;
    atomic_bool drain_done; /* the drain thread read the last item */

    pthread_mutex_t control_mu; /* serialises start/stop/control */
    bool started, stopped;
    bool output_taken;
    double start_time;

    lc_thread metrics_thread;
    pthread_mutex_t metrics_mu;
    pthread_cond_t metrics_cond;
    bool metrics_quit;
    bool end_check; /* a stage finished: the metrics thread looks at once */
    lc_pipeline_end_fn on_end;
    void *on_end_ctx;
    uint64_t sequence;
    lc_metric_windows *windows;
    atomic_int state;
    char error[LC_ERROR_MSG_MAX];

    pthread_mutex_t publish_mu;
    pthread_mutex_t build_mu; /* one publish at a time: the last built is the last out */
    lc_shared *published[LC_WINDOW_COUNT];  /* the snapshots readers share */
    uint64_t published_at[LC_WINDOW_COUNT]; /* the publish (and windows' version) each is of */
    uint64_t changes; /* publishes but the ticks': a start, a stop, a command, the end */
};

static void publish(lc_pipeline *p, bool tick);

/* A stage's last worker ran out of input, or the drain thread read the last
 * item: wake the metrics thread to see whether the whole pipeline ended. */
static void stage_finished(void *ctx)
{
    lc_pipeline *p = ctx;
    lc_mutex_lock(&p->metrics_mu);
    p->end_check = true;
    lc_cond_broadcast(&p->metrics_cond);
    lc_mutex_unlock(&p->metrics_mu);
}

/* A stage's `fresh` request: drop what is queued below it. */
static uint64_t drain_below(void *ctx, const lc_stage *from)
{
    lc_pipeline *p = ctx;
    return lc_stages_drain_below(p->stages, p->n, from);
}

/* The run's progress, told in the batch stream, when the pipeline has one
 * finite source and nothing that mixes chains or sides (a pool, a
 * splitter); else NULL. */
static lc_run_progress *run_progress(const lc_config *cfg, lc_run_progress *p)
{
    unsigned finite = 0, mixing = 0;
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        unsigned flags = cfg->stages[i].cls->flags;
        finite += (flags & LC_STAGE_FINITE) != 0;
        mixing += (flags & LC_STAGE_MIXES) != 0;
    }
    return finite == 1 && !mixing ? p : NULL;
}

int lc_pipeline_new(const lc_config *cfg, lc_pipeline **out, lc_error *err)
{
    *out = NULL;
    lc_pipeline *p = lc_xcalloc(1, sizeof *p);
    p->cfg = cfg;
    lc_stream_run_draw(&p->env.run_id, &p->env.run_started_ms);
    /* A run that pins no seed draws its own: a restart over the same files
     * takes other chunks and positions (the log says which seed). */
    p->env.seed = cfg->seed;
    if (!cfg->seed_pinned &&
        getrandom(&p->env.seed, sizeof p->env.seed, GRND_NONBLOCK) != (ssize_t)sizeof p->env.seed)
        p->env.seed = p->env.run_id * 0x9e3779b97f4a7c15u;
    p->env.deterministic = cfg->deterministic;
    p->env.progress = run_progress(cfg, &p->progress);
    p->env.stage_finished = stage_finished;
    p->env.stage_finished_ctx = p;
    p->env.drain_below = drain_below;
    p->env.drain_below_ctx = p;
    int rc = lc_pipeline_resolve_rank(cfg, &p->env, err);
    if (rc != 0) {
        free(p);
        return rc;
    }
    lc_mutex_init(&p->control_mu);
    lc_mutex_init(&p->metrics_mu);
    lc_mutex_init(&p->publish_mu);
    lc_mutex_init(&p->build_mu);
    lc_cond_init(&p->metrics_cond);
    lc_load_init(&p->drain_meter);
    p->n = cfg->n_stages;
    p->stages = lc_xcalloc(p->n, sizeof *p->stages);
    p->windows =
        lc_metric_windows_new(p->n, (double)cfg->metrics_interval_ms * 1e-3, lc_now_seconds());
    atomic_init(&p->state, LCMON__PIPELINE_STATE__PIPELINE_STARTING);

    for (size_t i = 0; i < p->n; i++) {
        const lc_stage_config *sc = &cfg->stages[i];
        lc_stage *s = &p->stages[i];
        lc_queue *inputs[LC_STAGE_MAX_INPUTS];
        for (unsigned r = 0; r < sc->n_in; r++)
            inputs[r] = p->stages[sc->in[r].stage].outputs[sc->in[r].output];
        lc_error serr;
        lc_error_clear(&serr);
        rc = lc_stage_init_inputs(s, sc->cls, sc->name, sc->block, &p->env, inputs, sc->n_in,
                                  sc->capacity, sc->overflow, &serr);
        if (rc != 0) {
            lc_error_set(err, rc, "stage '%s' (%s): %s", sc->name, sc->cls->type_name,
                         serr.msg[0] ? serr.msg : lc_strerror(rc));
            /* Stages before this one were initialised; fini them. */
            p->n = i;
            lc_pipeline_free(p);
            return rc;
        }
    }
    lc_stage *last = &p->stages[p->n - 1];
    if (last->n_outputs == 1)
        p->drain_input = last->output;
    *out = p;
    return 0;
}

static void flush_stage(lc_pipeline *p, size_t i, lc_stage_metrics *m)
{
    lc_stage_flush(&p->stages[i], m);
    if (p->drain_input && !p->output_taken && i == p->n - 1) {
        double busy, total;
        lc_load_flush(&p->drain_meter, &busy, &total);
        lc_metrics_add_load(m, "drain", busy, total, 1);
        m->drained += atomic_exchange(&p->drained_flush, 0);
        m->drains = true;
    }
}

void lc_pipeline_flush_metrics(lc_pipeline *p)
{
    lc_stage_metrics *fresh = lc_xcalloc(p->n, sizeof *fresh);
    for (size_t i = 0; i < p->n; i++)
        flush_stage(p, i, &fresh[i]);
    double now = lc_now_seconds();
    lc_mutex_lock(&p->metrics_mu);
    lc_metric_windows_add(p->windows, fresh, now);
    p->sequence++;
    lc_mutex_unlock(&p->metrics_mu);
    free(fresh);
    publish(p, true);
}

static bool all_finished(lc_pipeline *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (!atomic_load(&p->stages[i].finished))
            return false;
    if (p->drain_input && !p->output_taken && !atomic_load(&p->drain_done))
        return false;
    return true;
}

static void *metrics_main(void *arg)
{
    lc_pipeline *p = arg;
    uint64_t interval = (uint64_t)p->cfg->metrics_interval_ms * 1000000u;
    uint64_t next = lc_now_ns() + interval;
    lc_mutex_lock(&p->metrics_mu);
    while (!p->metrics_quit) {
        /* A stage may have finished before this thread first got here, or
         * while it flushed: look at the flag before sleeping. */
        bool tick = false;
        if (!p->end_check)
            tick = !lc_cond_wait_until(&p->metrics_cond, &p->metrics_mu, next);
        bool end_check = p->end_check;
        p->end_check = false;
        if (p->metrics_quit || (!tick && !end_check))
            continue; /* woken for nothing of ours (or to quit) */
        lc_mutex_unlock(&p->metrics_mu);
        bool ended =
            atomic_load(&p->state) == LCMON__PIPELINE_STATE__PIPELINE_RUNNING && all_finished(p);
        if (tick || ended) /* the end: flush now, so the totals are whole */
            lc_pipeline_flush_metrics(p);
        if (tick) {
            next += interval;
            uint64_t now = lc_now_ns();
            if (next < now) /* fell behind (suspended?): do not burst */
                next = now + interval;
        }
        if (ended) {
            atomic_store(&p->state, LCMON__PIPELINE_STATE__PIPELINE_FINISHED);
            publish(p, false);
            LC_INFO("pipeline finished: every stage ran out of input");
            if (p->on_end)
                p->on_end(p->on_end_ctx);
        }
        lc_mutex_lock(&p->metrics_mu);
        lc_cond_broadcast(&p->metrics_cond);
    }
    lc_mutex_unlock(&p->metrics_mu);
    return NULL;
}

static void *drain_main(void *arg)
{
    lc_pipeline *p = arg;
    const lc_item_type *type = lc_queue_item_type(p->drain_input);
    void *item = lc_xmalloc(type->size);
    lc_load_start(&p->drain_meter);
    while (lc_queue_get(p->drain_input, item, &p->drain_meter) == 0) {
        if (type->dispose)
            type->dispose(item);
        atomic_fetch_add(&p->drained, 1);
        atomic_fetch_add(&p->drained_flush, 1);
    }
    lc_load_stop(&p->drain_meter);
    free(item);
    atomic_store(&p->drain_done, true);
    stage_finished(p);
    return NULL;
}

int lc_pipeline_start(lc_pipeline *p, lc_error *err)
{
    lc_mutex_lock(&p->control_mu);
    if (p->started) {
        lc_mutex_unlock(&p->control_mu);
        return lc_error_set(err, -EALREADY, "pipeline already started");
    }
    p->started = true;
    p->start_time = lc_now_seconds();
    lc_mutex_lock(&p->metrics_mu);
    lc_metric_windows_start(p->windows, p->start_time);
    lc_mutex_unlock(&p->metrics_mu);
    LC_INFO("run %016llx, seed %llu%s%s", (unsigned long long)p->env.run_id,
            (unsigned long long)p->env.seed, p->cfg->seed_pinned ? "" : " (drawn for this run)",
            p->env.deterministic ? ", deterministic" : "");
    if (p->env.world_size > 1)
        LC_INFO("serving share %u of %u (rank from %s)", p->env.rank, p->env.world_size,
                p->env.rank_source);
    /* Start consumers first so that producers always find a reader. */
    for (size_t k = p->n; k-- > 0;) {
        lc_stage *s = &p->stages[k];
        lc_error serr;
        lc_error_clear(&serr);
        int rc = lc_stage_start(s, &serr);
        if (rc != 0) {
            snprintf(p->error, sizeof p->error, "stage '%s' (%s) failed to start: %s", s->name,
                     s->cls->type_name, serr.msg[0] ? serr.msg : lc_strerror(rc));
            LC_ERROR("%s", p->error);
            atomic_store(&p->state, LCMON__PIPELINE_STATE__PIPELINE_FAILED);
            lc_mutex_unlock(&p->control_mu);
            lc_pipeline_stop(p);
            atomic_store(&p->state, LCMON__PIPELINE_STATE__PIPELINE_FAILED);
            publish(p, false);
            return lc_error_set(err, rc, "%s", p->error);
        }
    }
    if (p->drain_input && !p->output_taken)
        lc_thread_start(&p->drain_thread, "lc-drain", drain_main, p);
    atomic_store(&p->state, LCMON__PIPELINE_STATE__PIPELINE_RUNNING);
    publish(p, false);
    lc_thread_start(&p->metrics_thread, "lc-metrics", metrics_main, p);
    lc_mutex_unlock(&p->control_mu);
    LC_INFO("pipeline started: %zu stages", p->n);
    return 0;
}

void lc_pipeline_stop(lc_pipeline *p)
{
    lc_mutex_lock(&p->control_mu);
    if (!p->started || p->stopped) {
        lc_mutex_unlock(&p->control_mu);
        return;
    }
    p->stopped = true;
    int prev = atomic_load(&p->state);
    atomic_store(&p->state, LCMON__PIPELINE_STATE__PIPELINE_STOPPING);
    /* Mark every stage stopping first, then close every queue: every blocked
     * put and get wakes, and no worker mistakes the closing for the end of
     * its input. */
    for (size_t i = 0; i < p->n; i++)
        lc_run_state_stop(&p->stages[i].run);
    for (size_t i = 0; i < p->n; i++)
        lc_stage_close_outputs(&p->stages[i]);
    /* Every stage woken before any is joined, the last first: a writer in
     * the middle of a batch begins its stop's wait for the reader now, not
     * once the stages before it have ended (a tensor generator finishing a
     * batch can take a second under load, and the reader's stop_grace
     * would start that much late). */
    for (size_t i = p->n; i-- > 0;)
        lc_stage_wake(&p->stages[i]);
    for (size_t i = 0; i < p->n; i++)
        lc_stage_stop(&p->stages[i]);
    lc_thread_join(&p->drain_thread);
    lc_mutex_lock(&p->metrics_mu);
    p->metrics_quit = true;
    lc_cond_broadcast(&p->metrics_cond);
    lc_mutex_unlock(&p->metrics_mu);
    lc_thread_join(&p->metrics_thread);
    lc_pipeline_flush_metrics(p); /* count what happened since the last flush */
    atomic_store(&p->state, prev == LCMON__PIPELINE_STATE__PIPELINE_FAILED
                                ? LCMON__PIPELINE_STATE__PIPELINE_FAILED
                                : (prev == LCMON__PIPELINE_STATE__PIPELINE_FINISHED
                                       ? LCMON__PIPELINE_STATE__PIPELINE_FINISHED
                                       : LCMON__PIPELINE_STATE__PIPELINE_STOPPED));
    publish(p, false);
    lc_mutex_unlock(&p->control_mu);
    LC_INFO("pipeline stopped");
}

void lc_pipeline_on_end(lc_pipeline *p, lc_pipeline_end_fn fn, void *ctx)
{
    p->on_end = fn;
    p->on_end_ctx = ctx;
}

bool lc_pipeline_wait(lc_pipeline *p, double timeout_seconds)
{
    uint64_t deadline = timeout_seconds < 0 ? 0 : lc_now_ns() + (uint64_t)(timeout_seconds * 1e9);
    lc_mutex_lock(&p->metrics_mu);
    for (;;) {
        int st = atomic_load(&p->state);
        if (st == LCMON__PIPELINE_STATE__PIPELINE_FINISHED ||
            st == LCMON__PIPELINE_STATE__PIPELINE_STOPPED ||
            st == LCMON__PIPELINE_STATE__PIPELINE_FAILED || p->metrics_quit) {
            lc_mutex_unlock(&p->metrics_mu);
            return true;
        }
        if (deadline && lc_now_ns() >= deadline)
            break;
        uint64_t step = lc_now_ns() + 200000000u;
        if (deadline && step > deadline)
            step = deadline;
        lc_cond_wait_until(&p->metrics_cond, &p->metrics_mu, step);
    }
    lc_mutex_unlock(&p->metrics_mu);
    return false;
}

Lcmon__PipelineState lc_pipeline_state(lc_pipeline *p)
{
    return (Lcmon__PipelineState)atomic_load(&p->state);
}

void lc_pipeline_free(lc_pipeline *p)
{
    if (!p)
        return;
    lc_pipeline_stop(p);
    /* Every class's fini first: a stage may hold items of its input's type
     * (in its own buffers) until then, and the queues go after. */
    for (size_t i = 0; i < p->n; i++) {
        lc_stage *s = &p->stages[i];
        if (s->cls->fini && s->priv)
            s->cls->fini(s);
        free(s->priv);
        s->priv = NULL;
    }
    for (size_t i = 0; i < p->n; i++)
        lc_stage_fini(&p->stages[i]);
    free(p->stages);
    for (int w = 0; w < LC_WINDOW_COUNT; w++)
        lc_shared_unref(p->published[w]);
    lc_mutex_destroy(&p->publish_mu);
    lc_mutex_destroy(&p->build_mu);
    lc_metric_windows_free(p->windows);
    lc_load_fini(&p->drain_meter);
    lc_cond_destroy(&p->metrics_cond);
    lc_mutex_destroy(&p->metrics_mu);
    lc_mutex_destroy(&p->control_mu);
    free(p);
}

lc_queue *lc_pipeline_take_output(lc_pipeline *p)
{
    if (p->started || !p->drain_input)
        return NULL;
    p->output_taken = true;
    return p->drain_input;
}

size_t lc_pipeline_stage_count(const lc_pipeline *p)
{
    return p->n;
}

const char *lc_pipeline_stage_name(const lc_pipeline *p, size_t i)
{
    return p->stages[i].name;
}

const char *lc_pipeline_stage_type(const lc_pipeline *p, size_t i)
{
    return p->stages[i].cls->type_name;
}

uint32_t lc_pipeline_rank(const lc_pipeline *p)
{
    return p->env.rank;
}

uint32_t lc_pipeline_world_size(const lc_pipeline *p)
{
    return p->env.world_size;
}

uint64_t lc_pipeline_drained(lc_pipeline *p)
{
    return atomic_load(&p->drained);
}

Lcmon__DataLoaderMetricsProto *lc_pipeline_metrics(lc_pipeline *p, bool all_time)
{
    return lc_pipeline_window_metrics(p, all_time ? LC_WINDOW_ALL : LC_WINDOW_1S);
}

Lcmon__DataLoaderMetricsProto *lc_pipeline_window_metrics(lc_pipeline *p, lc_window window)
{
    Lcmon__DataLoaderMetricsProto *m = lc_xmalloc(sizeof *m);
    lcmon__data_loader_metrics_proto__init(m);
    m->n_stage_metrics = p->n;
    m->stage_metrics = lc_xcalloc(p->n, sizeof *m->stage_metrics);
    lc_stage_metrics *agg = lc_xcalloc(p->n, sizeof *agg);
    double now = lc_now_seconds();
    lc_mutex_lock(&p->metrics_mu);
    double duration = lc_metric_windows_get(p->windows, window, now, agg);
    if (window == LC_WINDOW_ALL || !p->started)
        duration = p->started ? now - p->start_time : 0;
    m->has_window = true;
    m->window = (Lcmon__MetricWindow)window;
    m->has_sequence = true;
    m->sequence = p->sequence;
    lc_mutex_unlock(&p->metrics_mu);
    for (size_t i = 0; i < p->n; i++) {
        if (!agg[i].name[0]) {
            snprintf(agg[i].name, sizeof agg[i].name, "%s", p->stages[i].name);
            snprintf(agg[i].type, sizeof agg[i].type, "%s", p->stages[i].cls->type_name);
            agg[i].item_unit = lc_stage_item_unit(&p->stages[i]);
        }
        agg[i].state = lc_stage_state(&p->stages[i]);
        m->stage_metrics[i] = lc_stage_metrics_to_proto(&agg[i]);
    }
    free(agg);
    /* A running pipeline with a stage on hold says so: it is not flowing. */
    m->has_state = true;
    m->state = lc_pipeline_state(p);
    for (size_t i = 0; i < p->n && m->state == LCMON__PIPELINE_STATE__PIPELINE_RUNNING; i++)
        if (m->stage_metrics[i]->state == LCMON__STAGE_STATE__STAGE_PAUSED)
            m->state = LCMON__PIPELINE_STATE__PIPELINE_PAUSED;
    m->has_duration_seconds = true;
    m->duration_seconds = duration > 0 ? duration : 0;
    m->has_uptime_seconds = true;
    m->uptime_seconds = p->started ? now - p->start_time : 0;
    m->has_rank = m->has_world_size = true;
    m->rank = p->env.rank;
    m->world_size = p->env.world_size;
    m->has_run_id = m->has_seed = true;
    m->run_id = p->env.run_id;
    m->seed = p->env.seed;
    if (p->error[0])
        m->error = lc_xstrdup(p->error);
    return m;
}

static void destroy_message(void *m)
{
    lcmon__data_loader_metrics_proto__free_unpacked(m, NULL);
}

/* Make `fresh` window w's snapshot, built at `at` (build_mu held). */
static void put_published(lc_pipeline *p, lc_window w, lc_shared *fresh, uint64_t at)
{
    lc_mutex_lock(&p->publish_mu);
    lc_shared *old = p->published[w];
    p->published[w] = fresh;
    p->published_at[w] = at;
    lc_mutex_unlock(&p->publish_mu);
    lc_shared_unref(old);
}

/* Build the last second's and the all-time snapshots now and make them the
 * ones readers get; the other windows are built again when next asked
 * (after a tick only when a second closed). */
static void publish_built(lc_pipeline *p, bool tick) /* build_mu held */
{
    if (!tick)
        p->changes++;
    lc_shared *last = lc_shared_new(lc_pipeline_window_metrics(p, LC_WINDOW_1S), destroy_message);
    lc_shared *all = lc_shared_new(lc_pipeline_window_metrics(p, LC_WINDOW_ALL), destroy_message);
    /* Both at once: a reader taking the last second and then all time
     * between two separate swaps would get a new second and the old all
     * time, which can hold fewer positions than that second. */
    lc_mutex_lock(&p->publish_mu);
    lc_shared *old_last = p->published[LC_WINDOW_1S], *old_all = p->published[LC_WINDOW_ALL];
    p->published[LC_WINDOW_1S] = last;
    p->published[LC_WINDOW_ALL] = all;
    p->published_at[LC_WINDOW_1S] = p->published_at[LC_WINDOW_ALL] = 0;
    lc_mutex_unlock(&p->publish_mu);
    lc_shared_unref(old_last);
    lc_shared_unref(old_all);
}

static void publish(lc_pipeline *p, bool tick)
{
    /* Two publishes at once (a tick and a control request) must not swap
     * in the order opposite to their building: the one built before a
     * pause would then replace the one that shows it, for a whole tick. */
    lc_mutex_lock(&p->build_mu);
    publish_built(p, tick);
    lc_mutex_unlock(&p->build_mu);
}

lc_shared *lc_pipeline_snapshot(lc_pipeline *p, bool all_time)
{
    return lc_pipeline_window_snapshot(p, all_time ? LC_WINDOW_ALL : LC_WINDOW_1S);
}

/* A longer window's snapshot, built again when a second closed or a
 * publish other than a tick's (a command, a stop: the states) came since
 * it was built. The published last second and all time are then at least
 * as new (a flush folded in but not yet published is published now), so a
 * reader that takes the window first and all time after never sees a
 * window that holds more than all time. */
static lc_shared *window_snapshot(lc_pipeline *p, lc_window w)
{
    lc_mutex_lock(&p->build_mu);
    lc_mutex_lock(&p->metrics_mu);
    uint64_t version = lc_metric_windows_version(p->windows);
    lc_mutex_unlock(&p->metrics_mu);
    uint64_t at = p->changes << 32 | (version & 0xffffffffu);
    lc_mutex_lock(&p->publish_mu);
    lc_shared *s =
        p->published[w] && p->published_at[w] == at ? lc_shared_ref(p->published[w]) : NULL;
    lc_mutex_unlock(&p->publish_mu);
    if (!s) {
        s = lc_shared_new(lc_pipeline_window_metrics(p, w), destroy_message);
        put_published(p, w, lc_shared_ref(s), at);
    }
    lc_mutex_lock(&p->publish_mu);
    const Lcmon__DataLoaderMetricsProto *all =
        p->published[LC_WINDOW_ALL] ? lc_shared_get(p->published[LC_WINDOW_ALL]) : NULL;
    bool behind =
        !all || all->sequence < ((const Lcmon__DataLoaderMetricsProto *)lc_shared_get(s))->sequence;
    lc_mutex_unlock(&p->publish_mu);
    if (behind)
        publish_built(p, true);
    lc_mutex_unlock(&p->build_mu);
    return s;
}

lc_shared *lc_pipeline_window_snapshot(lc_pipeline *p, lc_window w)
{
    if (w != LC_WINDOW_1S && w != LC_WINDOW_ALL)
        return window_snapshot(p, w);
    for (;;) {
        lc_mutex_lock(&p->publish_mu);
        lc_shared *s = lc_shared_ref(p->published[w]);
        lc_mutex_unlock(&p->publish_mu);
        if (s)
            return s;
        publish(p, false); /* before the first start: nothing published yet */
    }
}

int lc_pipeline_command(lc_pipeline *p, const lc_command_request *req, lc_command_result *res)
{
    lc_mutex_lock(&p->control_mu);
    int rc = lc_stages_command(p->stages, p->n, req, res);
    lc_mutex_unlock(&p->control_mu);
    if (res->n)
        publish(p, false); /* what readers see next already shows the command */
    return rc;
}

/* ---- restarts ---- */

struct lc_pipeline_carry {
    size_t n;
    char **stage, **carried;
    const lc_stage_class **cls; /* of the stage it came from */
};

lc_pipeline_carry *lc_pipeline_carry_out(lc_pipeline *p)
{
    lc_pipeline_carry *c = NULL;
    for (size_t i = 0; i < p->n; i++) {
        lc_stage *s = &p->stages[i];
        char *carried = s->cls->carry_out && s->priv ? s->cls->carry_out(s) : NULL;
        if (!carried)
            continue;
        if (!c) {
            c = lc_xcalloc(1, sizeof *c);
            c->stage = lc_xcalloc(p->n, sizeof *c->stage);
            c->carried = lc_xcalloc(p->n, sizeof *c->carried);
            c->cls = lc_xcalloc(p->n, sizeof *c->cls);
        }
        c->stage[c->n] = lc_xstrdup(s->name);
        c->cls[c->n] = s->cls;
        c->carried[c->n++] = carried;
    }
    return c;
}

void lc_pipeline_carry_in(lc_pipeline *p, const lc_pipeline_carry *c)
{
    for (size_t k = 0; c && k < c->n; k++) {
        lc_stage *s = NULL;
        for (size_t i = 0; i < p->n && !s; i++)
            if (strcmp(p->stages[i].name, c->stage[k]) == 0)
                s = &p->stages[i];
        lc_error err;
        lc_error_clear(&err);
        if (!s || !s->cls->carry_in)
            LC_WARN("%s: the new pipeline has no such stage to take '%s' over", c->stage[k],
                    c->carried[k]);
        else if (s->cls != c->cls[k]) /* a reloaded configuration changed its type */
            LC_WARN("%s: now a %s, no longer a %s: '%s' is not kept", s->name, s->cls->type_name,
                    c->cls[k]->type_name, c->carried[k]);
        else if (s->cls->carry_in(s, c->carried[k], &err) != 0)
            LC_WARN("%s: cannot keep '%s' across the restart: %s", s->name, c->carried[k], err.msg);
    }
}

void lc_pipeline_carry_free(lc_pipeline_carry *c)
{
    if (!c)
        return;
    for (size_t k = 0; k < c->n; k++) {
        free(c->stage[k]);
        free(c->carried[k]);
    }
    free(c->stage);
    free(c->carried);
    free(c->cls);
    free(c);
}
