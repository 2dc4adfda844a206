/*
 * shuffling_frame_sampler: a reservoir of R frames that decorrelates the
 * positions of one game.
 *
 * The reservoir first fills from the input; then for every frame that comes
 * in, a uniformly random slot is emitted and refilled with it. When the input
 * ends, what is left is emitted in random order, so nothing is lost
 * (core/reservoir.h). The reservoir holds pointers to frames (8 bytes a
 * slot): each frame, in the compact form of format/lc0/frame.h (about 1.4
 * KB), stays in the cell the unpacker made it in (stages/items.h), so a
 * frame is never copied here. The slots are reserved at init but their
 * pages are only touched as the reservoir fills, and a frame's cell goes
 * back for reuse when the frame leaves the chain: resident memory follows
 * the most frames held at once lately (core/cells.h keeps freed cells and
 * gives back those a period did not need).
 *
 * Threads. With `threads: N` each worker owns a reservoir of its own, R / N
 * slots (the first R mod N get one more), takes frames from the shared input
 * as it can and emits to the shared output, as the upstream loader's
 * reservoir_size_per_thread does; no lock is shared but the queues'. Frames
 * move in blocks (stages/stage.h's inbox and outbox), one lock and a wake-up
 * or two a block instead of two a frame.
 *
 * Fresh games. A frame marked LC_ORIGIN_LEAD (format/lc0/frame.h: the
 * first position of a game the pool drew for a `fresh` request) is passed
 * on at once instead of entering the reservoir; the game's other positions
 * go through the reservoir as any.
 *
 * Delay. With one reservoir of R slots, a frame stays for a number of later
 * arrivals that is geometric: each arrival evicts it with probability 1/R,
 * so P(delay > k) = (1 - 1/R)^k, mean R, and its slot is uniform, whatever
 * came before. With N shares, a frame stays in its worker's share for a
 * geometric number of that worker's arrivals with mean R / N; the workers
 * take frames from one queue in turns set by their speed, about one in N
 * each, so counted in arrivals at the stage its delay is again about
 * geometric with mean R (tests/stages/test_shuffle_quality.c, through the
 * stage with 1, 2 and 4 threads, R 2048 to 16384: mean and spread 0.97 R,
 * P(delay > R) 0.355-0.36 and P(delay > 3R) 0.044-0.048, against 1, 1,
 * 0.368 and 0.050 less the longest delays a finite run cuts off; the
 * table is in docs/performance.md). That holds while the workers share
 * the input about evenly, as they do when the sampler keeps up and has the
 * cores; a worker that gets more than its share passes its frames on
 * sooner: on 2 cores loaded 9 times over by other processes, about one
 * run in ten with 2 or 4 threads had P(delay > 3R) 0.01-0.03, and one
 * that of a reservoir of R / 4 while a worker stalled. The blocks move a
 * frame by less than a block (64), negligible while a share is much
 * larger than that (at R / N 128 the tail grows: P(delay > 3R) 0.06-0.08).
 * The multiset of frames a finite run emits is the same with any N.
 *
 * Deterministic mode (stage.h's env->deterministic): which frames a share
 * gets depends on the threads' timing, so the sampler keeps one reservoir
 * of R slots, drawn by worker 0 as with `threads: 1`, and the other
 * workers return at once: the same stream at any thread count.
 */
#include "stages/stage.h"

#include "core/cells.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/reservoir.h"
#include "core/rng.h"
#include "format/lc0/frame.h"
#include "stages/items.h"

#include <errno.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* Frames a worker reads or writes at once. */
#define BLOCK 64

typedef struct sampler_config {
    uint64_t reservoir_size;
    unsigned threads;
} sampler_config;

static const lc_setting sampler_settings[] = {
    {.key = "reservoir_size",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(sampler_config, reservoir_size),
     .required = true,
     LC_SETTING_RANGE(1, 100000000),
     .meaning = "frames held; each thread keeps reservoir_size / threads of them",
     .example = "1000000"},
    LC_SETTING_THREADS(sampler_config, threads, "1", 64),
    {0},
};

static int sampler_config_check(void *p, lc_problems *ps)
{
    sampler_config *c = p;
    int rc = 0;
    if (c->reservoir_size >= 1 && c->threads > c->reservoir_size)
        rc = lc_problem_add(ps, "threads",
                            "%u is more than reservoir_size %llu (each thread keeps a share of "
                            "the reservoir: lower threads)",
                            c->threads, (unsigned long long)c->reservoir_size);
    return rc;
}

typedef struct share {
    lc_reservoir res;
    atomic_uint_fast64_t fill; /* res.fill, for the gauge */
} share;

typedef struct sampler {
    share *shares; /* one a worker */
    unsigned n_shares;
    atomic_uint_fast64_t n_in, n_out, n_lead;
    atomic_uint n_full; /* shares that have filled */
    double fill_started;
} sampler;

/* Emit a frame through the outbox; false when the output closed. */
static bool emit(lc_stage_outbox *ob, lc_frame *f, uint64_t *n_out, lc_load_meter *meter)
{
    if (lc_stage_outbox_put(ob, &f, meter) != 0)
        return false;
    ++*n_out;
    return true;
}

/* The counts of a block, added to the stage's when a block of frames has
 * passed: a count shared by the workers is touched a block, not a frame. */
static void count_block(sampler *sm, uint64_t *n_in, uint64_t *n_out)
{
    atomic_fetch_add(&sm->n_in, *n_in);
    atomic_fetch_add(&sm->n_out, *n_out);
    *n_in = *n_out = 0;
}

/* The next frame from the inbox, the counts so far added to the stage's
 * first when it is at a block's end (it may wait for the next). */
static int next_frame(sampler *sm, lc_stage_inbox *ib, lc_stage_outbox *ob, lc_frame **in,
                      uint64_t *n_in, uint64_t *n_out, lc_load_meter *meter)
{
    if (ib->pos == ib->n)
        count_block(sm, n_in, n_out);
    if (lc_stage_inbox_get(ib, in, ob, meter) != 0)
        return LC_ECLOSED;
    ++*n_in;
    /* The one frame field read here, of the next frame: its origin's line,
     * just written by an unpacker thread (stages/items.h). */
    const void *next = lc_stage_inbox_peek(ib, 0);
    if (next)
        __builtin_prefetch(&(*(lc_frame *const *)next)->origin, 0, 3);
    return 0;
}

static void sampler_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    sampler *sm = s->priv;
    const sampler_config *c = s->config;
    if (index >= sm->n_shares)
        return; /* deterministic mode: one reservoir */
    share *sh = &sm->shares[index];
    lc_rng rng;
    /* Worker 0 draws as the one-thread sampler always has. */
    lc_rng_seed(&rng, s->env->seed ^ ((uint64_t)index << 32), LC_RNG_STREAM_SAMPLER);
    lc_stage_inbox ib;
    lc_stage_outbox ob;
    lc_stage_inbox_init(&ib, s->input, BLOCK);
    lc_stage_outbox_init(&ob, s, BLOCK);
    lc_frame *in, *out;
    uint64_t n_in = 0, n_out = 0;
    bool told = false, open = true;
    while (open && lc_run_state_check(&s->run, meter) &&
           next_frame(sm, &ib, &ob, &in, &n_in, &n_out, meter) == 0) {
        if (in->origin.flags & LC_ORIGIN_LEAD) {
            /* The first position of a game a fresh request drew: on at once,
             * so that the trainer's next batch holds it. */
            atomic_fetch_add(&sm->n_lead, 1);
            open = emit(&ob, in, &n_out, meter);
            continue;
        }
        if (!lc_reservoir_put(&sh->res, &in, &out, &rng)) {
            atomic_store(&sh->fill, sh->res.fill);
            continue;
        }
        if (!told) {
            told = true;
            if (atomic_fetch_add(&sm->n_full, 1) + 1 == sm->n_shares)
                LC_INFO("%s: reservoir full (%llu frames)", s->name,
                        (unsigned long long)c->reservoir_size);
        }
        open = emit(&ob, out, &n_out, meter);
    }
    lc_stage_inbox_fini(&ib);
    /* The input ended: empty the share in random order. */
    while (open && !lc_run_state_stopping(&s->run) && lc_reservoir_take(&sh->res, &out, &rng)) {
        atomic_store(&sh->fill, sh->res.fill);
        open = emit(&ob, out, &n_out, meter);
        if (n_out == BLOCK)
            count_block(sm, &n_in, &n_out);
    }
    count_block(sm, &n_in, &n_out);
    if (open && !lc_run_state_stopping(&s->run))
        lc_stage_outbox_flush(&ob, meter);
    lc_stage_outbox_fini(&ob);
}

static void free_shares(sampler *sm)
{
    for (unsigned i = 0; i < sm->n_shares; i++) {
        share *sh = &sm->shares[i];
        lc_frame **held = (lc_frame **)sh->res.slots;
        for (uint64_t k = 0; k < sh->res.fill; k++)
            lc_frame_cell_free(held[k]);
        lc_reservoir_fini(&sh->res);
    }
    free(sm->shares);
    sm->shares = NULL;
    sm->n_shares = 0;
}

static int sampler_init(lc_stage *s, lc_error *err)
{
    sampler *sm = s->priv;
    const sampler_config *c = s->config;
    unsigned shares = s->env && s->env->deterministic ? 1 : c->threads;
    if (shares < c->threads)
        LC_INFO("%s: deterministic: one reservoir of %llu frames, drawn by one of the %u "
                "threads",
                s->name, (unsigned long long)c->reservoir_size, c->threads);
    sm->shares = lc_xcalloc(shares, sizeof *sm->shares);
    sm->n_shares = shares;
    for (unsigned i = 0; i < shares; i++) {
        uint64_t n = c->reservoir_size / shares + (i < c->reservoir_size % shares);
        if (lc_reservoir_init(&sm->shares[i].res, sizeof(lc_frame *), n) != 0) {
            free_shares(sm);
            return lc_error_set(err, -ENOMEM,
                                "reservoir_size: cannot reserve %zu MB for %llu frames (lower "
                                "it)",
                                (size_t)(c->reservoir_size * sizeof(lc_frame)) >> 20,
                                (unsigned long long)c->reservoir_size);
        }
    }
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
    free_shares(s->priv);
}

enum {
    S_FILL,
    S_IN,
    S_OUT,
    S_LEADS,
    S_CELLS,
    S_CELLS_CARVED,
    S_CELLS_MAPPED,
    S_CELLS_DEPOT,
    S_CELLS_RELEASED,
    S_MALLOC_HEAPS,
    S_MALLOC_FREE,
    S_MALLOC_MAPPED
};

static void sampler_flush(lc_stage *s, lc_stage_metrics *m)
{
    sampler *sm = s->priv;
    const sampler_config *c = s->config;
    uint64_t fill = 0;
    for (unsigned i = 0; i < sm->n_shares; i++)
        fill += atomic_load(&sm->shares[i].fill);
    lc_metric_gauge_of(m, S_FILL, (int64_t)fill, (int64_t)c->reservoir_size);
    /* The process's frame cells (stages/items.h): frames out now, cells
     * carved (plain gauges: a capacity would make them a fill the status
     * line lists), the free ones, the bytes of regions mapped and of their pages
     * the last trim gave back. */
    lc_cells_stats st;
    lc_frame_cells_stats(&st);
    lc_metric_gauge(m, S_CELLS, (int64_t)st.live);
    lc_metric_gauge(m, S_CELLS_CARVED, (int64_t)st.carved);
    lc_metric_gauge(m, S_CELLS_MAPPED, (int64_t)st.mapped);
    lc_metric_gauge(m, S_CELLS_DEPOT, (int64_t)st.depot);
    lc_metric_gauge(m, S_CELLS_RELEASED, (int64_t)st.released);
#ifdef __GLIBC__
    /* glibc's malloc, every arena: bytes its heaps took from the system,
     * of them free, and blocks mapped on their own. */
    struct mallinfo2 mi = mallinfo2();
    lc_metric_gauge(m, S_MALLOC_HEAPS, (int64_t)mi.arena);
    lc_metric_gauge(m, S_MALLOC_FREE, (int64_t)mi.fordblks);
    lc_metric_gauge(m, S_MALLOC_MAPPED, (int64_t)mi.hblkhd);
#endif
}

#define GAUGE .kind = LC_METRIC_GAUGE
static const lc_metric_info sampler_metrics[] = {
    [S_FILL] = {"reservoir_size", "frames", LC_SHOW_FILL, LC_SHOW_ETA, "in reservoir",
                .role = LC_ROLE_RESERVOIR_FILL, GAUGE},
    [S_IN] = {"frames_in", "frames", LC_METRIC_AT(sampler, n_in)},
    [S_OUT] = {"frames_out", "frames", LC_METRIC_AT(sampler, n_out)},
    [S_LEADS] = {"fresh_leads", "frames", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
                 "fresh games' first positions passed on at once", "fresh",
                 LC_METRIC_AT(sampler, n_lead)},
    [S_CELLS] = {"frame_cells", "frames", GAUGE},
    [S_CELLS_CARVED] = {"frame_cells_carved", "frames", GAUGE},
    [S_CELLS_MAPPED] = {"frame_cells_mapped", "bytes", GAUGE},
    [S_CELLS_DEPOT] = {"frame_cells_depot", "frames", GAUGE},
    [S_CELLS_RELEASED] = {"frame_cells_released", "bytes", GAUGE},
    [S_MALLOC_HEAPS] = {"malloc_heaps", "bytes", GAUGE},
    [S_MALLOC_FREE] = {"malloc_free", "bytes", GAUGE},
    [S_MALLOC_MAPPED] = {"malloc_mapped", "bytes", GAUGE},
    {0},
};

static unsigned sampler_threads(const void *config)
{
    return ((const sampler_config *)config)->threads;
}

const lc_stage_class lc_shuffling_frame_sampler_class = {
    .type_name = "shuffling_frame_sampler",
    .summary = "shuffles positions through a reservoir of compact frames",
    .input = &lc_item_frame,
    .output = &lc_item_frame,
    .priv_size = sizeof(sampler),
    .worker = sampler_worker,
    .threads = sampler_threads,
    .workers = "sampler",
    .settings = {sampler_settings, sizeof(sampler_config)},
    .config_check = sampler_config_check,
    .init = sampler_init,
    .fini = sampler_fini,
    .start = sampler_start,
    .flush_metrics = sampler_flush,
    .metrics = sampler_metrics,
};
