/*
 * shuffling_chunk_pool: a sliding window of the newest chunks, drawn in
 * shuffled order, with the anchor that tells a trainer how many new games
 * arrived.
 *
 * Threads. One ingestion thread takes chunk sources from the input and adds
 * them to the window; N loading threads draw chunk indices and read and
 * inflate those chunks outside the pool's lock, then emit them. All window
 * state lives under `mu`.
 *
 * Window. Until the initial scan is complete nothing is emitted: sources are
 * collected, sorted by key, and the newest are kept until they hold at least
 * chunk_pool_size chunks. The window itself (global indices, eviction of
 * whole sources, draws without replacement in passes, use counts, the
 * sharding of chunks between ranks, the anchor's count) is a data structure
 * of its own, stages/chunk_window.h. A chunk that fails to load is dropped
 * for good, and so is one that a stage downstream marked bad on its source
 * (lc_chunk_source_mark_bad: the validator does), at its next draw; new
 * indices join the current pass, and an empty pass starts a new one over
 * the window (counted as a reshuffle).
 *
 * The chunk store. With `store_bytes` above 0 (the default), each chunk is
 * read, inflated, checked and packed once in its life in the window, by
 * the loading thread that first draws it, and later draws hand out its
 * packed form; stages/chunk_store.h says how and why, and what happens when
 * the budget is full. The packed forms live in the window's entries.
 *
 * Hanse sampling (`hanse:`, stages/hanse.h). A chunk is weighed when first
 * read (before it is packed), the weight kept in its window entry; a draw
 * whose weight is known is accepted or skipped for the pass under `mu`, one
 * whose weight is not yet known is judged after the read.
 *
 * Sharding. With world size N > 1, rank r keeps only the chunks whose
 * identity hash is r modulo N (chunk_window.h): ranks agree whatever order
 * they find files in, and together they cover every chunk exactly once. The
 * window size counts this rank's chunks.
 *
 * Anchor. chunks_since_anchor counts the chunks (of every rank: all ranks see
 * the same files and report the same number) of sources newer than the
 * anchor: during the initial load, sources inside the window whose key sorts
 * after the anchor; afterwards, every source ingested. `set` changes the key
 * and leaves the count; `reset` sets the key to the newest source (the
 * largest key seen, whichever rank keeps its chunks), returns the count and
 * zeroes it. A chunk found bad when drawn (a failed load or check, or a mark
 * downstream) leaves the count if it was in it (and the window's count):
 * a trainer waits for good games. Each rank learns of its own share's bad
 * chunks only. With sharding, "the window" of the initial count is the window
 * of all ranks together, worked out from the files alone: the newest sources
 * holding at least chunk_pool_size * world_size chunks. Each rank's own window
 * reaches back a little more or less, but the count and the newest key are
 * the same on every rank, so a trainer may ask any of them.
 */
#include "stages/stage.h"

#include "core/clock.h"
#include "core/deque.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/text.h"
#include "format/lc0/chunk.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/frame.h"
#include "format/gzip.h"
#include "format/lc0/packed_chunk.h"
#include "stages/chunk_store.h"
#include "stages/chunk_window.h"
#include "stages/hanse.h"
#include "stages/items.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pool_config {
    uint64_t chunk_pool_size;
    unsigned threads;
    char *anchor;
    char *inflate;              /* "auto", "zlib", "libdeflate" */
    uint64_t store_bytes;       /* LC_SETTING_SIZE_AUTO: sized at init; 0: no store */
    unsigned store_block;       /* positions per packed block */
    lc_hanse_config *hanse;     /* Hanse sampling; NULL: off */
    lc_inflate_backend backend; /* inflate, resolved */
} pool_config;

static const lc_setting pool_settings[] = {
    {.key = "chunk_pool_size",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(pool_config, chunk_pool_size),
     .required = true,
     LC_SETTING_RANGE(1, 100000000),
     .meaning = "chunks in the window of the newest sources drawn from",
     .example = "500000"},
    LC_SETTING_THREADS(pool_config, threads, "2", 256),
    {.key = "anchor",
     .type = LC_SETTING_TEXT,
     LC_SETTING_AT(pool_config, anchor),
     .off = "none",
     .meaning = "the source key a checkpoint stored: chunks_since_anchor counts from it",
     .example = "training.123456.gz"},
    LC_SETTING_ROW(pool_config, inflate, "inflate", LC_SETTING_TEXT, "auto",
                   "the gzip decoder: auto, zlib or libdeflate", "zlib"),
    {.key = "store_bytes",
     .type = LC_SETTING_SIZE,
     LC_SETTING_AT(pool_config, store_bytes),
     .def = "auto",
     .auto_ok = true,
     .meaning = "memory of the chunk store: auto (a quarter of the machine's), 0 for none",
     .example = "6G",
     .hint = "auto, 0 for no store, or a number with an optional unit: 512M, 6G, 8GiB"},
    LC_SETTING_ROW_RANGE(pool_config, store_block, "store_block", LC_SETTING_WHOLE,
                         LC_SETTING_STR(LC_PACK_BLOCK_DEFAULT), 1, LC_PACK_BLOCK_MAX,
                         "positions a packed block of the store", "16"),
    {.key = "hanse",
     .type = LC_SETTING_BLOCK,
     LC_SETTING_AT(pool_config, hanse),
     .off = "off",
     .block = &lc_hanse_settings,
     .meaning = "Hanse sampling: a drawn chunk is taken by its weight",
     .example = "{gamma: 1}"},
    {0},
};

static int pool_config_check(void *p, lc_error *err)
{
    pool_config *c = p;
    int rc = 0;
    if (c->hanse && lc_hanse_config_check(c->hanse, err) != 0)
        rc = LC_ECONFIG;
    c->backend = LC_INFLATE_AUTO;
    if (strcmp(c->inflate, "zlib") == 0)
        c->backend = LC_INFLATE_ZLIB;
    else if (strcmp(c->inflate, "libdeflate") == 0)
        c->backend = LC_INFLATE_LIBDEFLATE;
    else if (strcmp(c->inflate, "auto") != 0)
        return lc_error_add(err, LC_ECONFIG, "inflate: '%s' is not auto, zlib or libdeflate",
                            c->inflate);
    if (!lc_inflate_backend_available(c->backend))
        return lc_error_add(err, LC_ECONFIG,
                            "inflate: %s is not available in this build (use auto)", c->inflate);
    return rc;
}

typedef struct pool {
    lc_thread ingest_thread;
    lc_load_meter ingest_meter;

    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool initial_done;
    bool input_closed;
    lc_chunk_window win; /* the sources, the pass, the anchor's count */
    bool anchor_moved;   /* set or reset at run time (or carried in): kept at a restart */

    atomic_uint_fast64_t n_emitted_total; /* chunks handed out since start, never reset */
    /* Files in the window written again: with the same chunks (ignored),
     * with others (the old ones retired). */
    atomic_uint_fast64_t n_rewritten_same, n_rewritten_replaced;
    atomic_uint_fast64_t n_emitted, n_dropped, n_reshuffles, n_sources_added, n_evicted, n_not_kept,
        n_stale_draws, n_other_rank, n_unreadable;

    lc_chunk_store store;     /* the accounting; the packed chunks are in `sources` */
    uint64_t passes;          /* passes begun after the first; under mu */
    uint64_t initial_done_ns; /* when the initial window was set; under mu */
    lc_hanse hanse;           /* Hanse sampling (stages/hanse.h) */
} pool;

/* The entry for a source, counting the chunks of other ranks. */
static bool make_entry(lc_stage *s, lc_chunk_source *src, lc_chunk_window_source *e)
{
    pool *p = s->priv;
    uint64_t other = 0;
    uint32_t world = s->env->world_size ? s->env->world_size : 1;
    bool ours = lc_chunk_window_entry(&p->win, src, world, s->env->rank, e, &other);
    atomic_fetch_add(&p->n_other_rank, other);
    return ours;
}

static int compare_sources(const void *a, const void *b)
{
    lc_chunk_source *const *x = a, *const *y = b;
    int c = lc_source_key_compare(lc_chunk_source_key(*x), lc_chunk_source_key(*y));
    return c ? c : strcmp(lc_chunk_source_path(*x), lc_chunk_source_path(*y));
}

enum { REWRITTEN_NO, REWRITTEN_SAME, REWRITTEN_OTHER };

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A source whose path the window holds already: a file written again (a
 * copy over it, rsync's rename, a tar that grew). REWRITTEN_SAME when its
 * chunks are those held (by lc_chunk_source_chunk_id), else
 * REWRITTEN_OTHER with *fresh the chunks that were not among them (an
 * anchor counts each game once). Caller holds mu. */
static int compare_with(const lc_chunk_source *old, const lc_chunk_source *src, size_t *fresh)
{
    size_t n_old = lc_chunk_source_count(old), n_new = lc_chunk_source_count(src);
    uint64_t *ids = lc_xmalloc((n_old ? n_old : 1) * sizeof *ids);
    for (size_t i = 0; i < n_old; i++)
        ids[i] = lc_chunk_source_chunk_id(old, i);
    qsort(ids, n_old, sizeof *ids, compare_u64);
    size_t new_ones = 0;
    for (size_t i = 0; i < n_new; i++) {
        uint64_t id = lc_chunk_source_chunk_id(src, i);
        new_ones += bsearch(&id, ids, n_old, sizeof *ids, compare_u64) == NULL;
    }
    free(ids);
    *fresh = new_ones;
    return new_ones == 0 && n_new == n_old ? REWRITTEN_SAME : REWRITTEN_OTHER;
}

static int rewritten(lc_chunk_window *w, const lc_chunk_source *src, size_t *fresh)
{
    lc_chunk_window_source *old = lc_chunk_window_find_path(w, lc_chunk_source_path(src));
    return old ? compare_with(old->src, src, fresh) : REWRITTEN_NO;
}

typedef struct arrival {
    lc_chunk_source *src;
    size_t order;
} arrival;

static int compare_arrivals(const void *a, const void *b)
{
    const arrival *x = a, *y = b;
    int c = strcmp(lc_chunk_source_path(x->src), lc_chunk_source_path(y->src));
    return c ? c : x->order < y->order ? -1 : x->order > y->order;
}

/* The initial scan's sources with a path given twice (a file written again
 * while the scan settled): the last one stays. Returns the new count. */
static size_t keep_last_of_each_path(pool *p, lc_chunk_source **srcs, size_t n)
{
    arrival *v = lc_xmalloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = (arrival){srcs[i], i};
    qsort(v, n, sizeof *v, compare_arrivals);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n &&
            !strcmp(lc_chunk_source_path(v[i].src), lc_chunk_source_path(v[i + 1].src))) {
            size_t fresh;
            atomic_fetch_add(compare_with(v[i].src, v[i + 1].src, &fresh) == REWRITTEN_SAME
                                 ? &p->n_rewritten_same
                                 : &p->n_rewritten_replaced,
                             1);
            lc_chunk_source_unref(v[i].src);
            continue;
        }
        srcs[kept++] = v[i].src;
    }
    free(v);
    return kept;
}

/* The initial load: keep the newest sources holding chunk_pool_size chunks. */
static void initial_load(lc_stage *s, lc_chunk_source **srcs, size_t n)
{
    pool *p = s->priv;
    const pool_config *c = s->config;
    n = keep_last_of_each_path(p, srcs, n);
    if (n)
        qsort(srcs, n, sizeof *srcs, compare_sources);
    /* The anchor's count: the chunks of every rank newer than the anchor in
     * the newest sources that hold the window of all ranks (the same on every
     * rank: it depends on the files alone). */
    uint32_t world = s->env->world_size ? s->env->world_size : 1;
    uint64_t since = 0, all_ranks = 0;
    size_t since_from = n; /* sources from here on were counted (when newer) */
    lc_mutex_lock(&p->mu); /* the anchor may be set meanwhile */
    for (size_t i = n; i > 0 && all_ranks < c->chunk_pool_size * world; i--) {
        const char *key = lc_chunk_source_key(srcs[i - 1]);
        size_t count = lc_chunk_source_count(srcs[i - 1]);
        all_ranks += count;
        if (!p->win.anchor || lc_source_key_compare(key, p->win.anchor) > 0)
            since += count;
        since_from = i - 1;
    }
    char *anchor_then = p->win.anchor ? lc_xstrdup(p->win.anchor) : NULL;
    if (n) /* the newest source, whichever rank keeps its chunks */
        lc_chunk_window_note_key(&p->win, lc_chunk_source_key(srcs[n - 1]));
    lc_mutex_unlock(&p->mu);
    lc_chunk_window_source *entries = lc_xcalloc(n ? n : 1, sizeof *entries);
    size_t first = n;
    uint64_t kept = 0;
    while (first > 0 && kept < c->chunk_pool_size) {
        first--;
        if (make_entry(s, srcs[first], &entries[first]))
            kept += entries[first].n;
        else
            entries[first].src = NULL;
    }
    for (size_t i = 0; i < first; i++) {
        lc_chunk_source_unref(srcs[i]);
        atomic_fetch_add(&p->n_not_kept, 1);
    }
    lc_mutex_lock(&p->mu);
    for (size_t i = first; i < n; i++) {
        if (!entries[i].src)
            continue;
        entries[i].since_counted =
            i >= since_from &&
            (!anchor_then ||
             lc_source_key_compare(lc_chunk_source_key(entries[i].src), anchor_then) > 0);
        entries[i].anchor_gen = p->win.anchor_gen;
        lc_chunk_window_append(&p->win, &entries[i]);
        atomic_fetch_add(&p->n_sources_added, 1);
    }
    p->win.since_anchor += since;
    free(p->win.count_from);
    p->win.count_from = p->win.anchor ? lc_xstrdup(p->win.anchor) : NULL;
    p->initial_done = true;
    p->initial_done_ns = lc_now_ns();
    lc_rng_seed(&p->win.rng, s->env->seed, LC_RNG_STREAM_POOL);
    lc_cond_broadcast(&p->cond);
    lc_mutex_unlock(&p->mu);
    free(anchor_then);
    free(entries);
    char store[192];
    lc_chunk_store_describe(&p->store, store, sizeof store);
    LC_INFO("%s: initial window: %llu chunks from %zu of %zu sources (pool size %llu)%s; %s",
            s->name, (unsigned long long)kept, n - first, n, (unsigned long long)c->chunk_pool_size,
            kept < c->chunk_pool_size ? "; the window fills as new files arrive" : "", store);
}

static void *ingest_main(void *arg)
{
    lc_stage *s = arg;
    pool *p = s->priv;
    lc_load_meter *meter = &p->ingest_meter;
    lc_load_start(meter);
    lc_chunk_source **initial = NULL;
    size_t n_initial = 0, cap_initial = 0;
    bool scanning = true;
    lc_source_item in;
    while (lc_run_state_check(&s->run, meter) && lc_queue_get(s->input, &in, meter) == 0) {
        if (in.flags & LC_ITEM_SCAN_DONE) {
            if (scanning) {
                initial_load(s, initial, n_initial);
                free(initial);
                initial = NULL;
                n_initial = 0;
                scanning = false;
            }
            continue;
        }
        if (scanning) {
            if (n_initial == cap_initial) {
                cap_initial = cap_initial ? 2 * cap_initial : 256;
                initial = lc_xrealloc(initial, cap_initial * sizeof *initial);
            }
            initial[n_initial++] = in.source;
            continue;
        }
        size_t total = lc_chunk_source_count(in.source);
        char *path = lc_xstrdup(lc_chunk_source_path(in.source));
        lc_mutex_lock(&p->mu);
        size_t fresh = total;
        int again = rewritten(&p->win, in.source, &fresh);
        lc_mutex_unlock(&p->mu);
        if (again == REWRITTEN_SAME) {
            atomic_fetch_add(&p->n_rewritten_same, 1);
            LC_DEBUG("%s: %s written again with the same games: ignored", s->name, path);
            lc_chunk_source_unref(in.source);
            free(path);
            continue;
        }
        char *key = lc_xstrdup(lc_chunk_source_key(in.source)); /* make_entry may unref */
        lc_chunk_window_source e;
        bool ours = make_entry(s, in.source, &e);
        lc_mutex_lock(&p->mu);
        if (again == REWRITTEN_OTHER) {
            lc_chunk_window_source *old = lc_chunk_window_find_path(&p->win, path);
            if (old)
                lc_chunk_window_retire(&p->win, old);
            atomic_fetch_add(&p->n_rewritten_replaced, 1);
            LC_INFO("%s: %s written again with other games: its %zu chunks replace the old "
                    "ones (%zu of them new)",
                    s->name, path, total, fresh);
        }
        free(path);
        p->win.since_anchor += fresh;
        lc_chunk_window_note_key(&p->win, key);
        free(key);
        if (ours) {
            e.since_counted = true;
            e.anchor_gen = p->win.anchor_gen;
            lc_chunk_window_append(&p->win, &e);
            atomic_fetch_add(&p->n_evicted, lc_chunk_window_evict(&p->win));
            atomic_fetch_add(&p->n_sources_added, 1);
            lc_cond_broadcast(&p->cond);
        }
        lc_mutex_unlock(&p->mu);
    }
    /* Input ended before the scan marker (a stop, or a producer without
     * one): whatever arrived becomes the window. */
    if (scanning && !lc_run_state_stopping(&s->run))
        initial_load(s, initial, n_initial);
    else
        for (size_t i = 0; i < n_initial; i++)
            lc_chunk_source_unref(initial[i]);
    free(initial);
    lc_mutex_lock(&p->mu);
    p->input_closed = true;
    lc_cond_broadcast(&p->cond);
    lc_mutex_unlock(&p->mu);
    lc_load_stop(meter);
    return NULL;
}

/* The first pass over the window is over: how long it took (it warms the
 * chunk store: later passes read every stored chunk from memory). Caller
 * holds mu. */
static void log_first_pass(lc_stage *s, pool *p)
{
    double seconds = (double)(lc_now_ns() - p->initial_done_ns) / 1e9;
    uint64_t chunks = atomic_load(&p->n_emitted_total);
    char store[160] = "";
    if (lc_chunk_store_on(&p->store)) {
        char fill[128];
        lc_chunk_store_describe_fill(&p->store, fill, sizeof fill);
        snprintf(store, sizeof store, "; %s", fill);
    }
    LC_INFO("%s: first pass over the window done in %.2f s (%llu chunks drawn, %.0f a second)%s",
            s->name, seconds, (unsigned long long)chunks,
            seconds > 0 ? (double)chunks / seconds : 0.0, store);
}

/* What a draw hands a loading thread. */
typedef struct draw {
    lc_chunk_source *src; /* one reference */
    uint32_t member, use;
    uint64_t global;
    lc_packed_chunk *packed; /* one reference when stored, else NULL */
    bool unfit;              /* did not fit in the store: do not pack it again */
    bool weigh;              /* Hanse: weight unknown, judge it once read */
} draw;

/* Draw the next chunk to load; false when stopping. Caller holds mu. */
static bool draw_locked(lc_stage *s, pool *p, draw *d, lc_load_meter *meter)
{
    unsigned rejected = 0;
    for (;;) {
        if (lc_run_state_stopping(&s->run))
            return false;
        if (!p->initial_done || p->win.in_window == 0) {
            if (p->input_closed && p->initial_done && p->win.in_window == 0)
                return false; /* nothing will ever come */
            lc_load_idle(meter);
            lc_cond_wait(&p->cond, &p->mu);
            lc_load_busy(meter);
            continue;
        }
        if (p->win.n_pending == 0) {
            if (p->passes++ == 0)
                log_first_pass(s, p);
            lc_chunk_window_new_pass(&p->win);
            if (p->hanse.cfg)
                lc_hanse_new_pass(&p->hanse);
            atomic_fetch_add(&p->n_reshuffles, 1);
            if (p->win.n_pending == 0)
                continue;
        }
        uint64_t idx = lc_chunk_window_take(&p->win);
        uint32_t pos;
        lc_chunk_window_source *e = lc_chunk_window_find_live(&p->win, idx, &pos);
        if (!e || e->uses[pos] == LC_CHUNK_WINDOW_DROPPED) {
            atomic_fetch_add(&p->n_stale_draws, 1);
            continue;
        }
        uint32_t m = e->members ? e->members[pos] : pos;
        if (lc_chunk_source_is_bad(e->src, m)) { /* rejected downstream */
            lc_chunk_window_drop(&p->win, e, pos);
            atomic_fetch_add(&p->n_dropped, 1);
            continue;
        }
        d->weigh = false;
        if (p->hanse.cfg) {
            float weight = e->weight ? e->weight[pos] : NAN;
            if (isnan(weight))
                d->weigh = true;
            else if (!lc_hanse_accept(&p->hanse, weight, idx, e->uses[pos], p->passes)) {
                /* Skipped for the rest of the pass. A long run of these
                 * lets the ingestion and the metrics take the lock. */
                if (++rejected % 256 == 0) {
                    lc_mutex_unlock(&p->mu);
                    lc_mutex_lock(&p->mu);
                }
                continue;
            }
        }
        atomic_fetch_add(&p->n_emitted_total, 1);
        d->src = lc_chunk_source_ref(e->src);
        d->member = m;
        d->global = idx;
        d->use = e->uses[pos]++;
        d->packed = e->packed && e->packed[pos] ? lc_packed_chunk_ref(e->packed[pos]) : NULL;
        d->unfit = e->unfit && e->unfit[pos];
        if (e->uses[pos] == LC_CHUNK_WINDOW_DROPPED) /* wrapped after 4 billion uses */
            e->uses[pos] = 1;
        return true;
    }
}

/* Mark a chunk bad for good; false when another thread already did (two
 * passes can hand the same chunk to two threads before the first fails), or
 * when another thread stored it meanwhile (it was read and checked then: a
 * file that vanished since does not make it bad). */
static bool mark_dropped(pool *p, uint64_t idx)
{
    lc_mutex_lock(&p->mu);
    bool first = lc_chunk_window_drop_unstored(&p->win, idx);
    lc_mutex_unlock(&p->mu);
    return first;
}

/* A use of a chunk the store has no room for: counted, and the first time
 * logged with the size of the window (read under the lock only then). */
static void store_full(lc_stage *s)
{
    pool *p = s->priv;
    uint64_t held = 0;
    if (!atomic_load(&p->store.full_logged)) {
        lc_mutex_lock(&p->mu);
        held = p->win.in_window;
        lc_mutex_unlock(&p->mu);
    }
    lc_chunk_store_full(&p->store, s->name, held);
}

/* Note that chunk `global` does not fit in the store: later uses read it
 * from disk without packing it again, for its life in the window (the room
 * that eviction frees goes to newer chunks). */
static void note_unfit(lc_stage *s, uint64_t global)
{
    pool *p = s->priv;
    lc_mutex_lock(&p->mu);
    lc_chunk_window_note_unfit(&p->win, global);
    lc_mutex_unlock(&p->mu);
    store_full(s);
}

/* Keep pk in the store as chunk `global`, if the chunk is still in the
 * window and not stored yet (two passes can hand one chunk to two threads)
 * and it fits. */
static void store_put(lc_stage *s, uint64_t global, lc_packed_chunk *pk)
{
    pool *p = s->priv;
    lc_mutex_lock(&p->mu);
    bool unfit = !lc_chunk_window_store(&p->win, global, pk);
    lc_mutex_unlock(&p->mu);
    if (unfit)
        store_full(s);
}

/* Hanse: weigh a chunk read for the first time (its records), keep the
 * weight with it for its life in the window, and judge the draw. */
static bool weigh_and_judge(lc_stage *s, const draw *d, const lc_chunk_data *data)
{
    pool *p = s->priv;
    double w = lc_hanse_chunk_weight(&p->hanse, data->data, data->record_size,
                                     (uint32_t)data->n_records, data->version);
    lc_mutex_lock(&p->mu);
    lc_chunk_window_set_weight(&p->win, d->global, w);
    lc_hanse_note(&p->hanse, w);
    bool yes = lc_hanse_accept(&p->hanse, w, d->global, d->use, p->passes);
    lc_mutex_unlock(&p->mu);
    return yes;
}

/* Drop a chunk that failed the checks: marked bad on its source, counted by
 * reason, logged once. */
static void drop_bad(lc_stage *s, const draw *d, const char *reason, uint32_t bad_at)
{
    pool *p = s->priv;
    lc_chunk_source_mark_bad(d->src, d->member);
    if (mark_dropped(p, d->global)) {
        atomic_fetch_add(&p->n_dropped, 1);
        atomic_fetch_add(&p->store.bad[lc_record_check_reason_index(reason)], 1);
        LC_WARN("%s: dropping %s: member '%s': record %u: %s", s->name,
                lc_chunk_source_path(d->src), lc_chunk_source_chunk_name(d->src, d->member), bad_at,
                reason ? reason : "bad record");
    }
}

/*
 * A chunk that is not in the store: read and inflate it; with a store, check
 * and pack it, and keep it if it fits. Fills the item's contents (records or
 * packed form); false when the chunk was dropped.
 */
static bool load_chunk(lc_stage *s, lc_pack_ctx *pack, const draw *d, lc_chunk_item *item,
                       bool *rejected)
{
    pool *p = s->priv;
    const pool_config *c = s->config;
    lc_chunk_data data = {0};
    lc_error err;
    lc_error_clear(&err);
    if (lc_chunk_store_on(&p->store))
        atomic_fetch_add(&p->store.misses, 1);
    int rc = lc_chunk_source_load(d->src, d->member, c->backend, &data, &err);
    if (rc != 0) {
        if (mark_dropped(p, d->global)) {
            atomic_fetch_add(&p->n_dropped, 1);
            atomic_fetch_add(&p->n_unreadable, 1);
            LC_WARN("%s: dropping chunk: %s", s->name, err.msg[0] ? err.msg : lc_strerror(rc));
        }
        return false;
    }
    uint32_t n = (uint32_t)data.n_records;
    *rejected = p->hanse.cfg && d->weigh && !weigh_and_judge(s, d, &data);
    if (!pack || d->unfit || !lc_chunk_store_has_room(&p->store, n)) {
        if (pack) {
            /* Outside the store, the same rules: with a store on, a bad
             * chunk is dropped here whether or not the store had room. */
            for (uint32_t i = 0; i < n; i++) {
                const char *reason = NULL;
                if (lc_record_check(data.data + (size_t)i * data.record_size, data.version,
                                    &reason) != 0) {
                    lc_chunk_data_fini(&data);
                    drop_bad(s, d, reason, i);
                    return false;
                }
            }
            item->flags |= LC_ITEM_CHECKED;
            if (!d->unfit)
                note_unfit(s, d->global);
            else
                store_full(s);
        }
        item->data = data.data; /* without a store: a validator checks it */
        item->version = data.version;
        item->record_size = (uint32_t)data.record_size;
        item->n_records = n;
        return true;
    }
    lc_packed_chunk *pk = NULL;
    const char *reason = NULL;
    uint32_t bad_at = 0;
    rc = lc_packed_chunk_build(pack, data.data, data.record_size, n, data.version, &pk, &reason,
                               &bad_at);
    lc_chunk_data_fini(&data);
    if (rc != 0) {
        drop_bad(s, d, reason, bad_at);
        return false;
    }
    atomic_fetch_add(&p->store.transcodes, 1);
    store_put(s, d->global, pk);
    item->packed = pk;
    item->version = lc_packed_chunk_version(pk);
    item->n_records = n;
    item->flags |= LC_ITEM_CHECKED;
    return true;
}

static void loader_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    pool *p = s->priv;
    const pool_config *c = s->config;
    lc_pack_ctx *pack = lc_chunk_store_on(&p->store)
                            ? lc_pack_ctx_new(LC_PACK_LEVEL_DEFAULT, c->store_block)
                            : NULL;
    while (lc_run_state_check(&s->run, meter)) {
        draw d = {0};
        lc_mutex_lock(&p->mu);
        bool ok = draw_locked(s, p, &d, meter);
        lc_mutex_unlock(&p->mu);
        if (!ok)
            break;
        lc_chunk_item item = {
            .use_count = d.use,
            .global_index = d.global,
            .source = d.src,
            .member = d.member,
        };
        if (d.packed) {
            atomic_fetch_add(&p->store.hits, 1);
            item.packed = d.packed;
            item.version = lc_packed_chunk_version(d.packed);
            item.n_records = lc_packed_chunk_positions(d.packed);
            item.flags = LC_ITEM_CHECKED;
        } else {
            bool rejected = false;
            bool loaded = load_chunk(s, pack, &d, &item, &rejected);
            if (loaded && rejected) { /* Hanse: weighed, then not taken (stored if it fits) */
                lc_item_chunk.dispose(&item);
                continue;
            }
            if (!loaded) {
                lc_chunk_source_unref(d.src);
                continue;
            }
        }
        if (lc_stage_emit(s, &item, meter) != 0) {
            lc_item_chunk.dispose(&item);
            break;
        }
        atomic_fetch_add(&p->n_emitted, 1);
    }
    lc_pack_ctx_free(pack);
}

static int pool_init(lc_stage *s, lc_error *err)
{
    (void)err;
    pool *p = s->priv;
    const pool_config *c = s->config;
    lc_mutex_init(&p->mu);
    lc_cond_init(&p->cond);
    lc_load_init(&p->ingest_meter);
    bool store_auto = c->store_bytes == LC_SETTING_SIZE_AUTO;
    lc_chunk_store_init(&p->store, store_auto, store_auto ? 0 : c->store_bytes);
    lc_hanse_init(&p->hanse, c->hanse, s->env->seed);
    lc_chunk_window_init(&p->win, c->chunk_pool_size, &p->store, c->anchor, s->env->seed);
    return 0;
}

static int pool_start(lc_stage *s, lc_error *err)
{
    (void)err;
    pool *p = s->priv;
    if (s->env->world_size > 1)
        LC_INFO("%s: keeping the chunks of share %u of %u", s->name, s->env->rank,
                s->env->world_size);
    char name[32];
    snprintf(name, sizeof name, "%s-in", s->name);
    lc_thread_start(&p->ingest_thread, name, ingest_main, s);
    return 0;
}

static void pool_stop(lc_stage *s)
{
    pool *p = s->priv;
    lc_mutex_lock(&p->mu);
    lc_cond_broadcast(&p->cond);
    lc_mutex_unlock(&p->mu);
    lc_thread_join(&p->ingest_thread);
}

static void pool_fini(lc_stage *s)
{
    pool *p = s->priv;
    lc_load_fini(&p->ingest_meter);
    lc_chunk_window_fini(&p->win);
    lc_cond_destroy(&p->cond);
    lc_mutex_destroy(&p->mu);
}

static void pool_flush(lc_stage *s, lc_stage_metrics *m)
{
    pool *p = s->priv;
    const pool_config *c = s->config;
    double busy, total;
    lc_load_flush(&p->ingest_meter, &busy, &total);
    lc_metrics_add_load(m, "ingestion", busy, total, 1);
    uint64_t dropped = atomic_exchange(&p->n_dropped, 0);
    lc_metrics_add_count(m, "chunks_emitted", atomic_exchange(&p->n_emitted, 0));
    lc_metrics_add_drop(m, "dropped_chunks", dropped);
    /* Chunks that could not be read or inflated: bad input, for the BAD
     * column (those that fail the checks count as bad_<reason>). */
    lc_metrics_add_bad(m, "bad_unreadable_chunks", atomic_exchange(&p->n_unreadable, 0));
    lc_metrics_add_count(m, "reshuffles", atomic_exchange(&p->n_reshuffles, 0));
    lc_metrics_add_count(m, "sources_added", atomic_exchange(&p->n_sources_added, 0));
    lc_metrics_add_count(m, "rewritten_same", atomic_exchange(&p->n_rewritten_same, 0));
    lc_metrics_add_count(m, "rewritten_replaced", atomic_exchange(&p->n_rewritten_replaced, 0));
    lc_metrics_add_count(m, "sources_evicted", atomic_exchange(&p->n_evicted, 0));
    lc_metrics_add_count(m, "sources_not_kept", atomic_exchange(&p->n_not_kept, 0));
    lc_metrics_add_count(m, "stale_draws", atomic_exchange(&p->n_stale_draws, 0));
    lc_metrics_add_count(m, "other_rank_chunks", atomic_exchange(&p->n_other_rank, 0));
    lc_mutex_lock(&p->mu);
    lc_metrics_set_gauge(m, "chunk_sources", (int64_t)lc_deque_len(&p->win.sources), 0, false);
    /* Whole sources are held, so the oldest may reach below the window:
     * the window itself holds at most chunk_pool_size of them. */
    uint64_t good = p->win.in_window - p->win.dropped_held;
    uint64_t in_window = good < c->chunk_pool_size ? good : c->chunk_pool_size;
    lc_metrics_set_gauge(m, "chunks_in_window", (int64_t)in_window, (int64_t)c->chunk_pool_size,
                         true);
    lc_metrics_set_gauge(m, "chunks_held", (int64_t)p->win.in_window, 0, false);
    lc_metrics_set_gauge(m, "chunks_total", (int64_t)p->win.upper, 0, false);
    lc_metrics_set_gauge(m, "initial_load_done", p->initial_done, 0, false);
    lc_metrics_set_gauge(m, "chunks_since_anchor", (int64_t)p->win.since_anchor, 0, false);
    lc_chunk_store_flush(&p->store, m);
    lc_metrics_set_text(m, "anchor", p->win.anchor);
    lc_metrics_set_text(m, "count_from", p->win.count_from);
    lc_metrics_set_text(m, "last_chunk_key", p->win.newest_key);
    if (p->hanse.cfg)
        lc_hanse_flush(&p->hanse, m);
    lc_mutex_unlock(&p->mu);
}

/* The pool's row: the window, the count since the anchor; its loading
 * row: the chunk store (when it has a budget). */
#define BAD_REASON(r) {"bad_" #r, "chunks"},
static const lc_metric_info pool_metrics[] = {
    {"chunks_in_window", "chunks", LC_SHOW_FILL, 0, "in window", .role = LC_ROLE_WINDOW_FILL},
    {"chunks_since_anchor", "chunks", LC_SHOW_SINCE_ANCHOR, .role = LC_ROLE_ANCHOR_COUNT},
    {"chunk_sources", "sources", LC_SHOW_VALUE, LC_SHOW_DIM, "sources", "src"},
    {"reshuffles", "passes", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "passes", ""},
    {"store_bytes", "bytes", LC_SHOW_FILL, 0, "in store", .row = "loading"},
    {"store_hits", "chunks", LC_SHOW_PERCENT, 0, "hits", .of = "store_misses", .row = "loading"},
    {"store_transcodes", "chunks", LC_SHOW_RATE, LC_SHOW_NONZERO, "packed/s", "/s",
     .row = "loading"},
    {"store_bytes_per_position", "bytes/position", LC_SHOW_VALUE, LC_SHOW_DIM | LC_SHOW_NONZERO,
     "B/position", "", .row = "loading"},
    {"anchor", "", .role = LC_ROLE_ANCHOR},
    {"count_from", "", .role = LC_ROLE_ANCHOR_FROM},
    {"last_chunk_key", "", .role = LC_ROLE_NEWEST_KEY},
    {"chunks_emitted", "chunks"},
    {"hanse_accepted", "chunks", LC_SHOW_TOTAL, LC_SHOW_NONZERO, "Hanse accepted", "accepted"},
    {"hanse_rejected", "chunks", LC_SHOW_PERCENT, LC_SHOW_NONZERO, "rejected", "rejected",
     "hanse_accepted"},
    {"chunk_weight", "weight"},
    {"max_chunk_weight_milli", "thousandths"},
    {"dropped_chunks", "chunks"},
    {"bad_unreadable_chunks", "chunks"},
    {"sources_added", "sources"},
    {"rewritten_same", "sources", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
     "files written again, same", "same again"},
    {"rewritten_replaced", "sources", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
     "files replaced", "replaced"},
    {"sources_evicted", "sources"},
    {"sources_not_kept", "sources"},
    {"stale_draws", "draws"},
    {"other_rank_chunks", "chunks"},
    {"chunks_held", "chunks"},
    {"chunks_total", "chunks"},
    {"initial_load_done", ""},
    {"store_misses", "chunks"},
    {"store_over_budget", "chunks"},
    {"store_chunks", "chunks"},
    {"store_positions", "positions"},
    LC_RECORD_CHECK_REASON_LIST(BAD_REASON){"bad_other", "chunks"},
    {0},
};
#undef BAD_REASON

/* anchor-get, anchor-set KEY and anchor-reset: each answers with the
 * anchor and the chunks counted since it (a reset: before it). */
static int pool_anchor(lc_stage *s, const lc_command_request *req, lc_reply *reply, lc_error *err)
{
    pool *p = s->priv;
    bool reset = strcmp(req->name, "anchor-reset") == 0;
    const char *set = strcmp(req->name, "anchor-set") == 0 ? req->argv[0] : NULL;
    lc_mutex_lock(&p->mu);
    if (reset && !p->win.newest_key) { /* an empty anchor: every game would be new */
        lc_mutex_unlock(&p->mu);
        return lc_error_set(err, -EAGAIN,
                            "anchor reset: no game is loaded yet (the initial load is under "
                            "way), so there is nothing to anchor at: try again once the pool "
                            "has loaded, or set an anchor by name");
    }
    uint64_t count = p->win.since_anchor;
    if (set)
        lc_chunk_window_set_anchor(&p->win, set);
    else if (reset)
        lc_chunk_window_reset_anchor(&p->win);
    p->anchor_moved |= set || reset;
    if (set || reset) /* "set to K (count stays N)", "reset to K after N chunks" */
        LC_INFO("%s: anchor %s to '%s' %s%llu%s", s->name, set ? "set" : "reset", p->win.anchor,
                set ? "(count stays " : "after ", (unsigned long long)count, set ? ")" : " chunks");
    lc_reply_add(reply, "anchor", "%s", p->win.anchor ? p->win.anchor : "");
    lc_reply_add(reply, "count", "%llu", (unsigned long long)count);
    lc_mutex_unlock(&p->mu);
    return 0;
}

static const lc_stage_command pool_commands[] = {
    {{"anchor-get", "", 0, 0, "print the anchor and the chunks counted since it"}, pool_anchor},
    {{"anchor-set", "KEY", 1, 1, "set the anchor (the count is kept)"}, pool_anchor},
    {{"anchor-reset", "", 0, 0,
      "anchor at the newest chunk; print the new anchor\nand the number of chunks counted "
      "before the reset"},
     pool_anchor},
    {{0}},
};

/* Across a restart an anchor moved at run time is kept (the count starts
 * again): it is what the trainer counts from. One the configuration gave is
 * not carried: the new pipeline takes its configuration's, which a reload
 * may have changed. No anchor ("") stays no anchor: nothing to carry. */
static char *pool_carry_out(lc_stage *s)
{
    pool *p = s->priv;
    lc_mutex_lock(&p->mu);
    char *a =
        p->anchor_moved && p->win.anchor && p->win.anchor[0] ? lc_xstrdup(p->win.anchor) : NULL;
    lc_mutex_unlock(&p->mu);
    return a;
}

static int pool_carry_in(lc_stage *s, const char *carried, lc_error *err)
{
    (void)err;
    pool *p = s->priv;
    const pool_config *c = s->config;
    lc_mutex_lock(&p->mu);
    lc_chunk_window_set_anchor(&p->win, carried);
    p->anchor_moved = true;
    lc_mutex_unlock(&p->mu);
    if (c->anchor && c->anchor[0] && strcmp(c->anchor, carried) != 0)
        LC_INFO("%s: the anchor '%s' set at run time is kept across the restart, over the "
                "configuration's '%s'",
                s->name, carried, c->anchor);
    else
        LC_INFO("%s: the anchor '%s' is kept across the restart", s->name, carried);
    return 0;
}

static unsigned pool_threads(const void *config)
{
    return ((const pool_config *)config)->threads;
}

const lc_stage_class lc_shuffling_chunk_pool_class = {
    .type_name = "shuffling_chunk_pool",
    .summary = "keeps a shuffled window of the newest chunks; anchors count new games",
    .input = &lc_item_source,
    .output = &lc_item_chunk,
    .decouples = true, /* sources go into the window whatever is drawn */
    .priv_size = sizeof(pool),
    .worker = loader_worker,
    .threads = pool_threads,
    .workers = "loading",
    .settings = {pool_settings, sizeof(pool_config)},
    .config_check = pool_config_check,
    .init = pool_init,
    .fini = pool_fini,
    .start = pool_start,
    .stop = pool_stop,
    .flush_metrics = pool_flush,
    .metrics = pool_metrics,
    .commands = pool_commands,
    .carry_out = pool_carry_out,
    .carry_in = pool_carry_in,
};
