/*
 * shuffling_frame_sampler: a reservoir of R frames that decorrelates the
 * positions of one game.
 *
 * One thread. The reservoir first fills from the input; then for every frame
 * that comes in, a uniformly random slot is emitted and refilled with it.
 * When the input ends, what is left is emitted in random order, so nothing is
 * lost (core/reservoir.h). Frames are held in the compact form of
 * format/lc0/frame.h (about 1.4 KB each); the slots are reserved at init but
 * their pages are only touched as the reservoir fills, so resident memory
 * tracks the fill.
 */
#include "stages/stage.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/reservoir.h"
#include "core/rng.h"
#include "format/lc0/frame.h"
#include "stages/items.h"

#include <errno.h>
#include <stdlib.h>

typedef struct sampler_config {
    uint64_t reservoir_size;
} sampler_config;

static const cyaml_schema_field_t sampler_fields[] = {
    CYAML_FIELD_UINT("reservoir_size", CYAML_FLAG_DEFAULT, sampler_config, reservoir_size),
    CYAML_FIELD_END,
};

static int sampler_config_check(void *p, lc_error *err)
{
    sampler_config *c = p;
    if (c->reservoir_size < 1 || c->reservoir_size > 100000000)
        return lc_error_add(err, LC_ECONFIG,
                            "reservoir_size: %llu is out of range (use 1 to 100000000)",
                            (unsigned long long)c->reservoir_size);
    return 0;
}

typedef struct sampler {
    lc_reservoir res;
    atomic_uint_fast64_t fill; /* res.fill, for the gauge */
    atomic_uint_fast64_t n_in, n_out;
    double fill_started;
} sampler;

static void sampler_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    sampler *sm = s->priv;
    const sampler_config *c = s->config;
    lc_rng rng;
    lc_rng_seed(&rng, s->env->seed, LC_RNG_STREAM_SAMPLER);
    lc_frame in, out;
    bool told = false;
    while (lc_run_state_check(&s->run, meter) && lc_queue_get(s->input, &in, meter) == 0) {
        atomic_fetch_add(&sm->n_in, 1);
        if (!lc_reservoir_put(&sm->res, &in, &out, &rng)) {
            atomic_store(&sm->fill, sm->res.fill);
            continue;
        }
        if (!told) {
            LC_INFO("%s: reservoir full (%llu frames)", s->name,
                    (unsigned long long)c->reservoir_size);
            told = true;
        }
        if (lc_stage_emit(s, &out, meter) != 0) {
            lc_frame_fini(&out);
            return;
        }
        atomic_fetch_add(&sm->n_out, 1);
    }
    if (lc_run_state_stopping(&s->run))
        return;
    /* The input ended: empty the reservoir in random order. */
    while (lc_reservoir_take(&sm->res, &out, &rng)) {
        atomic_store(&sm->fill, sm->res.fill);
        if (lc_stage_emit(s, &out, meter) != 0) {
            lc_frame_fini(&out);
            return;
        }
        atomic_fetch_add(&sm->n_out, 1);
    }
}

static int sampler_init(lc_stage *s, lc_error *err)
{
    sampler *sm = s->priv;
    const sampler_config *c = s->config;
    if (lc_reservoir_init(&sm->res, sizeof(lc_frame), c->reservoir_size) != 0)
        return lc_error_set(err, -ENOMEM,
                            "reservoir_size: cannot reserve %zu MB for %llu frames (lower it)",
                            (size_t)(c->reservoir_size * sizeof(lc_frame)) >> 20,
                            (unsigned long long)c->reservoir_size);
    return 0;
}

static int sampler_start(lc_stage *s, lc_error *err)
{
    (void)err;
    sampler *sm = s->priv;
    sm->fill_started = lc_now_seconds();
    return 0;
}

static void sampler_fini(lc_stage *s)
{
    sampler *sm = s->priv;
    lc_frame *held = (lc_frame *)sm->res.slots;
    for (uint64_t i = 0; i < sm->res.fill; i++)
        lc_frame_fini(&held[i]);
    lc_reservoir_fini(&sm->res);
}

static void sampler_flush(lc_stage *s, lc_stage_metrics *m)
{
    sampler *sm = s->priv;
    const sampler_config *c = s->config;
    lc_metrics_add_count(m, "frames_in", atomic_exchange(&sm->n_in, 0));
    lc_metrics_add_count(m, "frames_out", atomic_exchange(&sm->n_out, 0));
    lc_metrics_set_gauge(m, "reservoir_size", (int64_t)atomic_load(&sm->fill),
                         (int64_t)c->reservoir_size, true);
}

static const lc_metric_info sampler_metrics[] = {
    {"reservoir_size", "frames", LC_SHOW_FILL, LC_SHOW_ETA, "in reservoir"},
    {"frames_in", "frames"},
    {"frames_out", "frames"},
    {0},
};

const lc_stage_class lc_shuffling_frame_sampler_class = {
    .type_name = "shuffling_frame_sampler",
    .summary = "shuffles positions through a reservoir of compact frames",
    .input = &lc_item_frame,
    .output = &lc_item_frame,
    .priv_size = sizeof(sampler),
    .worker = sampler_worker,
    .workers = "sampler",
    .config_fields = sampler_fields,
    .config_size = sizeof(sampler_config),
    .config_check = sampler_config_check,
    .init = sampler_init,
    .fini = sampler_fini,
    .start = sampler_start,
    .flush_metrics = sampler_flush,
    .metrics = sampler_metrics,
};
