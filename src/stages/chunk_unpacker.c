/*
 * chunk_unpacker: turns chunks (games) into frames (positions).
 *
 * Which positions. A chunk of n positions drawn for the u-th time (u is the
 * chunk's use count from the pool) gives a subset of its positions that is
 * disjoint from the subsets of its other uses, so that over about 1/p uses
 * every position comes out once:
 *   - the positions are put in an order fixed by (run seed, global index): a
 *     permutation, or file order when `shuffle` is off;
 *   - with a sampling rate p, that order is cut into B = round(1/p) blocks
 *     of nearly equal size and use u takes block u mod B;
 *   - with positions_per_chunk K, use u takes the K positions starting at
 *     u*K (modulo n, at most n of them).
 * The permutation depends only on the run seed and the chunk's global index,
 * never on thread timing, so runs are reproducible.
 *
 * N worker threads; each converts records to compact frames and emits them.
 */
#include "stages/stage.h"

#include "core/log.h"
#include "core/rng.h"
#include "format/chunk_source.h"
#include "format/frame.h"
#include "stages/items.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct unpacker_config {
    double *rate_opt;
    uint64_t *per_chunk_opt;
    unsigned *threads_opt;
    bool *shuffle_opt;
    double rate;          /* 0 when positions_per_chunk is used */
    uint64_t per_chunk;   /* 0 when the rate is used */
    unsigned threads;
    bool shuffle;
    uint32_t blocks;      /* round(1/rate) */
} unpacker_config;

static const cyaml_schema_field_t unpacker_fields[] = {
    CYAML_FIELD_FLOAT_PTR("sampling_rate", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
                          unpacker_config, rate_opt),
    CYAML_FIELD_UINT_PTR("positions_per_chunk", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
                         unpacker_config, per_chunk_opt),
    CYAML_FIELD_UINT_PTR("threads", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, unpacker_config,
                         threads_opt),
    CYAML_FIELD_BOOL_PTR("shuffle", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, unpacker_config,
                         shuffle_opt),
    CYAML_FIELD_END,
};

static int unpacker_config_check(void *p, lc_error *err)
{
    unpacker_config *c = p;
    if (c->rate_opt && c->per_chunk_opt)
        return lc_error_set(err, LC_ECONFIG,
                            "sampling_rate: give either sampling_rate or positions_per_chunk, "
                            "not both");
    c->threads = c->threads_opt ? *c->threads_opt : 1;
    if (c->threads < 1 || c->threads > 256)
        return lc_error_set(err, LC_ECONFIG, "threads: %u is out of range (use 1 to 256)",
                            c->threads);
    c->shuffle = c->shuffle_opt ? *c->shuffle_opt : true;
    if (c->per_chunk_opt) {
        c->per_chunk = *c->per_chunk_opt;
        if (c->per_chunk < 1 || c->per_chunk > 100000)
            return lc_error_set(err, LC_ECONFIG,
                                "positions_per_chunk: %llu is out of range (use 1 to 100000)",
                                (unsigned long long)c->per_chunk);
        return 0;
    }
    c->rate = c->rate_opt ? *c->rate_opt : 1.0;
    if (!(c->rate > 0 && c->rate <= 1))
        return lc_error_set(err, LC_ECONFIG,
                            "sampling_rate: %g is out of range (use a value in (0, 1])", c->rate);
    double b = floor(1.0 / c->rate + 0.5);
    c->blocks = b < 1 ? 1 : (b > 1e6 ? 1000000 : (uint32_t)b);
    return 0;
}

typedef struct unpacker {
    lc_worker_pool pool;
    atomic_uint_fast64_t n_chunks, n_frames, n_bad_records;
} unpacker;

/* Positions of chunk `c` for this use, in emission order, into out[]; returns
 * how many. `order` is scratch space of n entries. */
static uint32_t pick_positions(const unpacker_config *cfg, uint64_t seed, const lc_chunk_item *c,
                               uint32_t *order, uint32_t *out)
{
    uint32_t n = c->n_records;
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    if (cfg->shuffle && n > 1) {
        lc_rng rng;
        lc_rng_seed(&rng, seed, c->global_index);
        for (uint32_t i = n - 1; i > 0; i--) {
            uint32_t j = (uint32_t)lc_rng_below(&rng, (uint64_t)i + 1);
            uint32_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    uint32_t k = 0;
    if (cfg->per_chunk) {
        uint64_t want = cfg->per_chunk < n ? cfg->per_chunk : n;
        uint64_t start = ((uint64_t)c->use_count * cfg->per_chunk) % (n ? n : 1);
        for (uint64_t j = 0; j < want; j++)
            out[k++] = order[(start + j) % n];
    } else {
        uint32_t b = c->use_count % cfg->blocks;
        uint64_t lo = (uint64_t)b * n / cfg->blocks;
        uint64_t hi = ((uint64_t)b + 1) * n / cfg->blocks;
        for (uint64_t j = lo; j < hi; j++)
            out[k++] = order[j];
    }
    return k;
}

static void unpacker_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    unpacker *u = s->priv;
    const unpacker_config *cfg = s->config;
    uint32_t *order = NULL, *picks = NULL;
    size_t cap = 0;
    lc_chunk_item c;
    while (lc_run_state_check(&s->run, meter) && lc_queue_get(s->input, &c, meter) == 0) {
        if (c.n_records > cap) {
            cap = c.n_records;
            order = lc_xrealloc(order, cap * sizeof *order);
            picks = lc_xrealloc(picks, cap * sizeof *picks);
        }
        uint32_t k = pick_positions(cfg, s->env->seed, &c, order, picks);
        bool closed = false;
        for (uint32_t j = 0; j < k && !closed; j++) {
            lc_frame f;
            lc_error err;
            const uint8_t *rec = c.data + (size_t)picks[j] * c.record_size;
            if (lc_frame_from_record(rec, c.version, &f, &err) != 0) {
                atomic_fetch_add(&u->n_bad_records, 1);
                continue;
            }
            if (lc_stage_emit(s, &f, meter) != 0) {
                lc_frame_fini(&f);
                closed = true;
            } else {
                atomic_fetch_add(&u->n_frames, 1);
            }
        }
        atomic_fetch_add(&u->n_chunks, 1);
        lc_item_chunk.dispose(&c);
        if (closed)
            break;
    }
    free(order);
    free(picks);
}

static int unpacker_init(lc_stage *s, lc_error *err)
{
    (void)err;
    unpacker *u = s->priv;
    const unpacker_config *cfg = s->config;
    lc_worker_pool_init(&u->pool, "workers", cfg->threads);
    return 0;
}

static int unpacker_start(lc_stage *s, lc_error *err)
{
    (void)err;
    unpacker *u = s->priv;
    lc_worker_pool_start(&u->pool, s, unpacker_worker);
    return 0;
}

static void unpacker_stop(lc_stage *s)
{
    unpacker *u = s->priv;
    lc_worker_pool_join(&u->pool);
}

static void unpacker_fini(lc_stage *s)
{
    unpacker *u = s->priv;
    lc_worker_pool_fini(&u->pool);
}

static void unpacker_flush(lc_stage *s, lc_stage_metrics *m)
{
    unpacker *u = s->priv;
    lc_worker_pool_flush(&u->pool, m);
    lc_metrics_add_count(m, "chunks", atomic_exchange(&u->n_chunks, 0));
    lc_metrics_add_count(m, "frames", atomic_exchange(&u->n_frames, 0));
    uint64_t bad = atomic_exchange(&u->n_bad_records, 0);
    lc_metrics_add_count(m, "bad_records", bad);
    m->dropped += bad;
}

const lc_stage_class lc_chunk_unpacker_class = {
    .type_name = "chunk_unpacker",
    .summary = "unpacks chunks into positions, disjoint across a chunk's uses",
    .input = &lc_item_chunk,
    .output = &lc_item_frame,
    .priv_size = sizeof(unpacker),
    .config_fields = unpacker_fields,
    .config_size = sizeof(unpacker_config),
    .config_check = unpacker_config_check,
    .init = unpacker_init,
    .fini = unpacker_fini,
    .start = unpacker_start,
    .stop = unpacker_stop,
    .flush_metrics = unpacker_flush,
};
