#include "stages/stage.h"

#include "core/rng.h"
#include "core/log.h"
#include "core/text.h"
#include "stages/items.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lc_worker_pool_init(lc_worker_pool *p, const char *name, unsigned n)
{
    p->name = name;
    p->n = n;
    p->threads = lc_xcalloc(n, sizeof *p->threads);
    p->meters = lc_xcalloc(n, sizeof *p->meters);
    for (unsigned i = 0; i < n; i++)
        lc_load_init(&p->meters[i]);
}

struct worker_arg {
    lc_worker_pool *pool;
    unsigned index;
};

static void *worker_main(void *p)
{
    struct worker_arg a = *(struct worker_arg *)p;
    free(p);
    lc_stage *s = a.pool->stage;
    lc_load_meter *meter = &a.pool->meters[a.index];
    lc_load_start(meter);
    a.pool->fn(s, a.index, meter);
    lc_load_stop(meter);
    /* The stage has finished when its last worker returns by itself; one
     * worker out of input while others still work is not the end. */
    bool last = atomic_fetch_sub(&a.pool->live, 1) == 1;
    bool finished = last && !lc_run_state_stopping(&s->run);
    if (finished)
        atomic_store(&s->finished, 1);
    for (unsigned k = 0; k < s->n_outputs; k++)
        lc_queue_producer_done(s->outputs[k]);
    if (finished && s->env && s->env->stage_finished)
        s->env->stage_finished(s->env->stage_finished_ctx);
    return NULL;
}

void lc_worker_pool_start(lc_worker_pool *p, lc_stage *s,
                          void (*fn)(lc_stage *s, unsigned index, lc_load_meter *meter))
{
    p->stage = s;
    p->fn = fn;
    atomic_store(&p->live, p->n);
    for (unsigned k = 0; k < s->n_outputs; k++)
        for (unsigned i = 0; i < p->n; i++)
            lc_queue_add_producer(s->outputs[k]);
    for (unsigned i = 0; i < p->n; i++) {
        struct worker_arg *a = lc_xmalloc(sizeof *a);
        a->pool = p;
        a->index = i;
        char tname[32];
        snprintf(tname, sizeof tname, "%s-%u", s->name, i);
        lc_thread_start(&p->threads[i], tname, worker_main, a);
    }
}

void lc_worker_pool_join(lc_worker_pool *p)
{
    for (unsigned i = 0; i < p->n; i++)
        lc_thread_join(&p->threads[i]);
}

void lc_worker_pool_fini(lc_worker_pool *p)
{
    if (!p->threads)
        return;
    for (unsigned i = 0; i < p->n; i++)
        lc_load_fini(&p->meters[i]);
    free(p->threads);
    free(p->meters);
    p->threads = NULL;
    p->meters = NULL;
}

void lc_worker_pool_flush(lc_worker_pool *p, lc_stage_metrics *m)
{
    double busy = 0, total = 0;
    for (unsigned i = 0; i < p->n; i++) {
        double b, t;
        lc_load_flush(&p->meters[i], &b, &t);
        busy += b;
        total += t;
    }
    lc_metrics_add_load(m, p->name, busy, total, p->n);
}

/* --- a stage's life ------------------------------------------------------ */

unsigned lc_stage_class_outputs(const lc_stage_class *cls, const void *config, const char **names)
{
    if (!cls->output)
        return 0;
    if (cls->outputs)
        return cls->outputs(config, names);
    names[0] = NULL;
    return 1;
}

int lc_stage_init(lc_stage *s, const lc_stage_class *cls, const char *name, const void *config,
                  const lc_stage_env *env, lc_queue *input, size_t capacity, lc_overflow overflow,
                  lc_error *err)
{
    return lc_stage_init_inputs(s, cls, name, config, env, &input, input ? 1 : 0, capacity,
                                overflow, err);
}

int lc_stage_init_inputs(lc_stage *s, const lc_stage_class *cls, const char *name,
                         const void *config, const lc_stage_env *env, lc_queue *const *inputs,
                         unsigned n_inputs, size_t capacity, lc_overflow overflow, lc_error *err)
{
    unsigned max_in = cls->input ? (cls->max_inputs ? cls->max_inputs : 1) : 0;
    if (n_inputs > max_in || n_inputs > LC_STAGE_MAX_INPUTS)
        return lc_error_set(err, -EINVAL, "%s reads at most %u inputs, given %u", cls->type_name,
                            max_in, n_inputs);
    s->cls = cls;
    s->name = lc_xstrdup(name);
    s->config = config;
    s->env = env;
    for (unsigned i = 0; i < n_inputs; i++)
        s->inputs[i] = inputs[i];
    s->n_inputs = n_inputs;
    s->input = n_inputs ? inputs[0] : NULL;
    lc_run_state_init(&s->run);
    const char *names[LC_STAGE_MAX_OUTPUTS];
    s->n_outputs = lc_stage_class_outputs(cls, config, names);
    /* A class that writes what it reads writes its first input's type. */
    const lc_item_type *type = cls->output;
    if (type == &lc_item_any)
        type = s->input ? lc_queue_item_type(s->input) : NULL;
    if (s->n_outputs && !type) {
        lc_stage_fini(s);
        return lc_error_set(err, -EINVAL, "%s writes the type it reads, and has no input",
                            cls->type_name);
    }
    for (unsigned k = 0; k < s->n_outputs; k++) {
        s->output_names[k] = lc_stage_output_queue_name(name, names[k]);
        s->outputs[k] = lc_queue_new(s->output_names[k], type, capacity, overflow);
    }
    s->output = s->n_outputs ? s->outputs[0] : NULL;
    s->output_name = s->n_outputs ? s->output_names[0] : NULL;
    lc_mutex_init(&s->turns.take_mu);
    lc_mutex_init(&s->turns.turn_mu);
    lc_cond_init(&s->turns.turn_cond);
    s->turns.ready = true;
    s->priv = lc_xcalloc(1, cls->priv_size ? cls->priv_size : 1);
    int rc = cls->init ? cls->init(s, err) : 0;
    if (rc != 0) {
        free(s->priv);
        s->priv = NULL; /* no fini for a stage whose init failed */
        lc_stage_fini(s);
        return rc;
    }
    if (cls->worker)
        lc_worker_pool_init(&s->pool, cls->workers ? cls->workers : "workers",
                            cls->threads ? cls->threads(config) : 1);
    return 0;
}

void lc_stage_close_outputs(lc_stage *s)
{
    for (unsigned k = 0; k < s->n_outputs; k++)
        lc_queue_close(s->outputs[k]);
}

int lc_stage_start(lc_stage *s, lc_error *err)
{
    int rc = s->cls->start ? s->cls->start(s, err) : 0;
    if (rc != 0)
        return rc;
    if (s->cls->worker)
        lc_worker_pool_start(&s->pool, s, s->cls->worker);
    s->started = true;
    return 0;
}

void lc_stage_wake(lc_stage *s)
{
    if (!s->started || s->woken)
        return;
    s->woken = true;
    if (s->cls->stop)
        s->cls->stop(s);
    /* Wake the workers waiting for their turn: they see the stop. */
    lc_mutex_lock(&s->turns.turn_mu);
    lc_cond_broadcast(&s->turns.turn_cond);
    lc_mutex_unlock(&s->turns.turn_mu);
}

void lc_stage_stop(lc_stage *s)
{
    if (!s->started)
        return;
    lc_stage_wake(s);
    s->started = false;
    s->woken = false;
    lc_worker_pool_join(&s->pool);
}

void lc_stage_fini(lc_stage *s)
{
    if (s->priv && s->cls->fini)
        s->cls->fini(s);
    lc_worker_pool_fini(&s->pool);
    free(s->priv);
    for (unsigned k = 0; k < s->n_outputs; k++) {
        lc_queue_free(s->outputs[k]);
        free(s->output_names[k]);
    }
    free(s->name);
    lc_run_state_fini(&s->run);
    if (s->turns.ready) {
        lc_cond_destroy(&s->turns.turn_cond);
        lc_mutex_destroy(&s->turns.turn_mu);
        lc_mutex_destroy(&s->turns.take_mu);
    }
    memset(s, 0, sizeof *s);
}

int lc_stage_state(lc_stage *s)
{
    if (atomic_load(&s->finished))
        return LC_STAGE_FINISHED;
    if (lc_run_state_stopping(&s->run))
        return LC_STAGE_STOPPED;
    if (lc_run_state_paused(&s->run))
        return LC_STAGE_PAUSED;
    return LC_STAGE_RUNNING;
}

/* The rows whose value lives in the stage's state (LC_METRIC_AT): a
 * count is taken (exchanged with 0), a gauge read. */
static void flush_rows(lc_stage *s, lc_stage_metrics *m)
{
    const lc_metric_info *rows = s->cls->metrics;
    for (int r = 0; r < m->n_rows; r++) {
        if (!rows[r].at)
            continue;
        atomic_uint_fast64_t *v = (atomic_uint_fast64_t *)((char *)s->priv + rows[r].at - 1);
        if (rows[r].kind == LC_METRIC_GAUGE)
            lc_metric_gauge(m, r, (int64_t)atomic_load(v));
        else
            lc_metric_add(m, r, atomic_exchange(v, 0));
    }
}

const char *lc_stage_item_unit(const lc_stage *s)
{
    /* A join writes what it reads: its queue's type says. */
    const lc_item_type *t = s->output        ? lc_queue_item_type(s->output)
                            : s->input       ? lc_queue_item_type(s->input)
                            : s->cls->output ? s->cls->output
                                             : s->cls->input;
    return t && t->unit ? t->unit : NULL;
}

void lc_stage_flush(lc_stage *s, lc_stage_metrics *m)
{
    int n_rows = lc_metric_info_rows(s->cls->metrics);
    if (n_rows > LC_METRICS_MAX_ROWS)
        lc_fatal("%s lists %d metrics, more than %d", s->cls->type_name, n_rows,
                 LC_METRICS_MAX_ROWS);
    lc_stage_metrics_begin(m, s->cls->metrics, n_rows);
    snprintf(m->name, sizeof m->name, "%s", s->name);
    snprintf(m->type, sizeof m->type, "%s", s->cls->type_name);
    m->state = lc_stage_state(s);
    m->items_out = atomic_exchange(&s->items_out, 0);
    m->item_unit = lc_stage_item_unit(s);
    for (unsigned k = 0; k < s->n_outputs; k++)
        lc_metrics_add_queue(m, s->output_names[k], s->outputs[k]);
    flush_rows(s, m);
    /* The class's own loads (a private thread's) come before its workers'. */
    if (s->cls->flush_metrics)
        s->cls->flush_metrics(s, m);
    if (s->pool.threads)
        lc_worker_pool_flush(&s->pool, m);
}

char *lc_stage_queue_name(const char *stage)
{
    return lc_stage_output_queue_name(stage, NULL);
}

char *lc_stage_output_queue_name(const char *stage, const char *output)
{
    return lc_xasprintf("%s.%s", stage, output ? output : "out");
}

int lc_stage_emit_marker(lc_stage *s, const void *item, lc_load_meter *meter)
{
    return lc_queue_put(s->output, item, meter);
}

int lc_stage_emit(lc_stage *s, const void *item, lc_load_meter *meter)
{
    return lc_stage_emit_to(s, 0, item, meter);
}

int lc_stage_emit_to(lc_stage *s, unsigned k, const void *item, lc_load_meter *meter)
{
    int rc = lc_queue_put(s->outputs[k], item, meter);
    if (rc == 0)
        atomic_fetch_add(&s->items_out, 1);
    return rc;
}

/* ---- turns (deterministic mode) ---- */

bool lc_stage_in_turns(const lc_stage *s)
{
    return s->env && s->env->deterministic && s->pool.n > 1;
}

void lc_stage_warn_unordered(const lc_stage *s, unsigned threads)
{
    if (s->env && s->env->deterministic && threads > 1)
        LC_WARN("%s: deterministic mode does not order this stage's %u threads: its output "
                "follows their timing (threads: 1 gives the same stream on every run)",
                s->name, threads);
}

void lc_stage_take_begin(lc_stage *s, lc_load_meter *meter)
{
    lc_load_idle(meter);
    lc_mutex_lock(&s->turns.take_mu);
    lc_load_busy(meter);
}

uint64_t lc_stage_ticket(lc_stage *s)
{
    return s->turns.next_ticket++;
}

uint64_t lc_stage_take_end(lc_stage *s)
{
    uint64_t t = lc_stage_ticket(s);
    lc_mutex_unlock(&s->turns.take_mu);
    return t;
}

bool lc_stage_turn_wait(lc_stage *s, uint64_t ticket, lc_load_meter *meter)
{
    lc_mutex_lock(&s->turns.turn_mu);
    bool waited = false;
    while (s->turns.next_turn != ticket && !lc_run_state_stopping(&s->run)) {
        if (!waited)
            lc_load_idle(meter);
        waited = true;
        lc_cond_wait(&s->turns.turn_cond, &s->turns.turn_mu);
    }
    bool mine = s->turns.next_turn == ticket;
    lc_mutex_unlock(&s->turns.turn_mu);
    if (waited)
        lc_load_busy(meter);
    return mine && !lc_run_state_stopping(&s->run);
}

void lc_stage_turn_end(lc_stage *s)
{
    lc_mutex_lock(&s->turns.turn_mu);
    s->turns.next_turn++;
    lc_cond_broadcast(&s->turns.turn_cond);
    lc_mutex_unlock(&s->turns.turn_mu);
}

/* ---- blocks of items ---- */

static void dispose_items(const lc_item_type *t, unsigned char *items, size_t n)
{
    if (t->dispose)
        for (size_t i = 0; i < n; i++)
            t->dispose(items + i * t->size);
}

void lc_stage_inbox_init(lc_stage_inbox *in, lc_queue *q, size_t cap)
{
    size_t size = lc_queue_item_type(q)->size;
    *in = (lc_stage_inbox){.q = q, .size = size, .cap = cap ? cap : 1};
    in->items = lc_xmalloc(in->cap * size);
    in->discards = lc_queue_discards(q);
}

/* The queue was discarded after the block was taken: the rest of it goes,
 * and so does what the worker made of it and has not sent (the queues
 * below were discarded too). */
static void inbox_drop_stale(lc_stage_inbox *in, lc_stage_outbox *out)
{
    dispose_items(lc_queue_item_type(in->q), in->items + in->pos * in->size, in->n - in->pos);
    in->pos = in->n = 0;
    if (out) {
        dispose_items(lc_queue_item_type(out->s->outputs[0]), out->items, out->n);
        out->n = 0;
    }
    in->discards = lc_queue_discards(in->q);
    in->stale = true;
}

void lc_stage_inbox_in_turns(lc_stage_inbox *in, lc_stage *s, lc_stage_outbox *out)
{
    if (!lc_stage_in_turns(s))
        return;
    in->turns = s;
    in->turn_out = out;
    if (out)
        out->grow = true;
}

/* In turns: hand on what the block taken last made, at its turn; false
 * when stopping. */
static bool inbox_turn(lc_stage_inbox *in, lc_load_meter *meter)
{
    if (!in->holding)
        return true;
    in->holding = false;
    if (!lc_stage_turn_wait(in->turns, in->ticket, meter))
        return false;
    if (in->turn_out)
        lc_stage_outbox_flush(in->turn_out, meter); /* a closed output shows at its next put */
    lc_stage_turn_end(in->turns);
    return true;
}

/* In turns: the next block, with its ticket. */
static int inbox_take_in_turns(lc_stage_inbox *in, lc_load_meter *meter)
{
    if (!inbox_turn(in, meter))
        return LC_ECLOSED;
    lc_stage_take_begin(in->turns, meter);
    int rc = lc_queue_get_many(in->q, in->items, in->cap, &in->n, meter);
    if (rc != 0) {
        lc_mutex_unlock(&in->turns->turns.take_mu);
        return LC_ECLOSED;
    }
    in->ticket = lc_stage_take_end(in->turns);
    in->holding = true;
    return 0;
}

int lc_stage_inbox_get(lc_stage_inbox *in, void *item, lc_stage_outbox *out, lc_load_meter *meter)
{
    if (lc_queue_discards(in->q) != in->discards)
        inbox_drop_stale(in, out);
    if (in->pos == in->n && in->turns) {
        in->pos = in->n = 0;
        if (inbox_take_in_turns(in, meter) != 0)
            return LC_ECLOSED;
    } else if (in->pos == in->n) {
        in->pos = in->n = 0;
        int rc = -EAGAIN;
        if (out && out->n) {
            /* Send the outbox before any wait: only what is there now is
             * taken without one (another worker may take what was). */
            rc = lc_queue_try_get_many_at(in->q, in->items, in->cap, &in->n, &in->discards);
            if (rc == -EAGAIN)
                lc_stage_outbox_flush(out, meter); /* a closed output shows at its next put */
        }
        if (rc == -EAGAIN)
            rc = lc_queue_get_many_at(in->q, in->items, in->cap, &in->n, meter, &in->discards);
        if (rc != 0)
            return LC_ECLOSED;
    }
    memcpy(item, in->items + in->pos++ * in->size, in->size);
    return 0;
}

void lc_stage_inbox_fini(lc_stage_inbox *in)
{
    /* A worker that stops reading ends its turn: the others wait for it.
     * What its outbox holds was made from the block: sent, unless stopping. */
    if (in->turns)
        inbox_turn(in, NULL);
    if (in->items)
        dispose_items(lc_queue_item_type(in->q), in->items + in->pos * in->size, in->n - in->pos);
    free(in->items);
    *in = (lc_stage_inbox){0};
}

void lc_stage_outbox_init(lc_stage_outbox *out, lc_stage *s, size_t cap)
{
    size_t size = lc_queue_item_type(s->outputs[0])->size;
    *out = (lc_stage_outbox){.s = s, .size = size, .cap = cap ? cap : 1};
    out->items = lc_xmalloc(out->cap * size);
}

int lc_stage_outbox_flush(lc_stage_outbox *out, lc_load_meter *meter)
{
    if (out->n == 0)
        return 0;
    size_t taken = 0;
    int rc = lc_queue_put_many(out->s->outputs[0], out->items, out->n, &taken, meter);
    atomic_fetch_add(&out->s->items_out, taken);
    if (rc != 0)
        dispose_items(lc_queue_item_type(out->s->outputs[0]), out->items + taken * out->size,
                      out->n - taken);
    out->n = 0;
    return rc;
}

int lc_stage_outbox_put(lc_stage_outbox *out, const void *item, lc_load_meter *meter)
{
    memcpy(out->items + out->n++ * out->size, item, out->size);
    if (out->n < out->cap)
        return 0;
    if (out->grow) { /* in turns: held until the block's turn */
        out->cap *= 2;
        out->items = lc_xrealloc(out->items, out->cap * out->size);
        return 0;
    }
    return lc_stage_outbox_flush(out, meter);
}

void lc_stage_outbox_fini(lc_stage_outbox *out)
{
    if (out->items && out->s)
        dispose_items(lc_queue_item_type(out->s->outputs[0]), out->items, out->n);
    free(out->items);
    *out = (lc_stage_outbox){0};
}

uint32_t lc_share_of(const char *key, uint64_t index, uint32_t world)
{
    return (uint32_t)(lc_mix64(lc_fnv1a(key, strlen(key)) ^ lc_mix64(index)) % world);
}

int lc_config_expand_path(char **field, const char *key, const char *what, lc_problems *ps)
{
    return lc_config_expand_path_noting(field, key, what, NULL, 0, ps);
}

int lc_config_expand_path_noting(char **field, const char *key, const char *what, char *defaulted,
                                 size_t size, lc_problems *ps)
{
    char *bad = NULL, *took_default = NULL;
    char *expanded = lc_expand_env_noting(*field, &bad, &took_default);
    if (defaulted && size)
        snprintf(defaulted, size, "%s", took_default ? took_default : "");
    free(took_default);
    if (!expanded) {
        int rc = lc_problem_add(ps, key,
                                "environment variable %s is not set (set it, or write "
                                "${%s:-default})",
                                bad, bad);
        free(bad);
        return rc;
    }
    free(*field);
    *field = expanded;
    if (!expanded[0])
        return lc_problem_add(ps, key, "is empty (name %s)", what);
    return 0;
}

void lc_stage_warn_default_path(const lc_stage *s, const char *defaulted, const char *path,
                                const char *what)
{
    if (!defaulted[0])
        return;
    char similar[64];
    char hint[160] = "";
    if (lc_env_similar(defaulted, similar, sizeof similar))
        snprintf(hint, sizeof hint, " (%s is set: a misspelling of %s?)", similar, defaulted);
    LC_WARN("%s: %s is not set%s: reading %s, the config's default (in the shipped configs, "
            "the sample games bundled with lcmon); set %s to your %s to train on your games",
            s->name, defaulted, hint, path, defaulted, what);
}

void lc_run_progress_get(const lc_stage_env *env, lc_stream_progress *out)
{
    memset(out, 0, sizeof *out);
    lc_run_progress *p = env ? env->progress : NULL;
    if (!p)
        return;
    out->epoch = (uint32_t)atomic_load(&p->epoch);
    out->epochs = (uint32_t)atomic_load(&p->epochs);
    out->files_done = atomic_load(&p->files_done);
    out->files_total = atomic_load(&p->files_total);
    out->records = atomic_load(&p->records);
    out->records_total = atomic_load(&p->records_total);
    if (atomic_load(&p->scan_done)) {
        uint64_t files = atomic_load(&p->scan_files);
        if (!out->files_total)
            out->files_total = files;
        /* Every file a .gz of one chunk, and this process reads them all. */
        if (!out->records_total && atomic_load(&p->scan_archives) == 0 && env->world_size <= 1)
            out->records_total = files;
    }
}
