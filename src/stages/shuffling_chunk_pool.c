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
 * chunk_pool_size chunks; kept chunks get global indices oldest first. Later
 * sources are appended at the current upper bound. The window is
 * [upper - chunk_pool_size, upper); a source whose chunks all fall below it is
 * evicted whole (the source's memory and file handle go with it).
 *
 * Draws. Indices are drawn uniformly without replacement from the window: a
 * pass keeps the indices not yet drawn in an array, and a draw swaps a random
 * entry to the end and pops it (Fisher-Yates, one step at a time). New
 * indices join the current pass; indices that left the window are skipped
 * when drawn; when the array runs empty a new pass starts over the window
 * (counted as a reshuffle). Each chunk keeps a use count, which travels with
 * the chunk so that the unpacker picks different positions on each use. A
 * chunk that fails to load is dropped for good, and so is one that a stage
 * downstream marked bad on its source (lc_chunk_source_mark_bad: the
 * validator does), at its next draw.
 *
 * The chunk store. With `store_bytes` above 0 (the default: a quarter of
 * the memory the machine, or its control group, gives the process, shared
 * by the ranks of LOCAL_WORLD_SIZE), each chunk is read and inflated once in
 * its life in the window: the loading thread that first draws it checks
 * every record by the validator's rules (a chunk that fails is dropped for
 * good and counted by reason, as a chunk_validator would) and packs it
 * (format/lc0/packed_chunk.h: about 128 bytes a position against gzip's 169);
 * every later draw hands out a reference to the packed form, and the
 * unpacker decodes only the blocks that hold the positions the use picks.
 * Items from the store carry LC_ITEM_CHECKED, so a chunk_validator passes
 * them on. Chunks are transcoded at first use, by the loading thread that
 * has just inflated them, not in the background at ingestion: the first
 * use has to inflate the chunk anyway, so transcoding there costs one pack
 * and no second inflate, and with the check folded into the same pass the
 * first pass costs about what it did without the store (a background
 * transcoder would inflate every chunk twice in the first pass, and on a
 * busy machine it competes with the loaders for the same cores). The first
 * use already emits the packed form, so the inflated records are freed in
 * the thread that made them.
 *
 * Budget. The stored chunks never hold more than `store_bytes` (admission is
 * an atomic add against the budget, under `mu`). A chunk that does not fit
 * when first used is marked so, and for its life in the window it is read
 * and inflated from disk at every use, as without a store, and never packed
 * again (counted as store_over_budget; the store logs once that it is
 * full); the room that eviction frees goes to newer chunks. A chunk that
 * clearly will not fit (judged by the bytes a position has cost so far) is
 * not packed at all. Such chunks are still checked by the same rules before
 * they go out, so with a store on, what is dropped never depends on how full
 * the store is. Eviction follows the window: a chunk leaves the store when
 * it falls below the window (for a tar, chunk by chunk; its source goes when
 * all of them have) or is dropped. Items in flight hold references of their
 * own, so memory stays within the budget plus what the queues after the
 * pool hold. A chunk whose file vanished or changed after it was stored is
 * still served from the store (it was checked when read); one that was
 * never stored and cannot be read is dropped, as before.
 *
 * Sharding. With world size N > 1, rank r keeps only the chunks whose
 * identity hash (source key and member index) is r modulo N. The decision
 * depends on nothing but the chunk, so ranks agree whatever order they find
 * files in, and together they cover every chunk exactly once. The window
 * size counts this rank's chunks.
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
#include "stages/items.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DROPPED UINT32_MAX

typedef struct pool_config {
    uint64_t chunk_pool_size;
    unsigned *threads_opt;
    char *anchor;
    char *inflate;     /* "auto", "zlib", "libdeflate" */
    char *store_bytes; /* "auto", "0" (no store) or a size such as "6G" */
    unsigned *store_block_opt;
    unsigned threads;
    lc_inflate_backend backend;
    bool store_auto;      /* store_bytes absent or "auto": sized at init */
    uint64_t store_limit; /* the size given; 0: no store */
    unsigned store_block; /* positions per packed block */
} pool_config;

static const cyaml_schema_field_t pool_fields[] = {
    CYAML_FIELD_UINT("chunk_pool_size", CYAML_FLAG_DEFAULT, pool_config, chunk_pool_size),
    CYAML_FIELD_UINT_PTR("threads", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, pool_config,
                         threads_opt),
    CYAML_FIELD_STRING_PTR("anchor", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, pool_config,
                           anchor, 0, CYAML_UNLIMITED),
    CYAML_FIELD_STRING_PTR("inflate", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, pool_config,
                           inflate, 0, CYAML_UNLIMITED),
    CYAML_FIELD_STRING_PTR("store_bytes", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, pool_config,
                           store_bytes, 0, CYAML_UNLIMITED),
    CYAML_FIELD_UINT_PTR("store_block", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, pool_config,
                         store_block_opt),
    CYAML_FIELD_END,
};

static int pool_config_check(void *p, lc_error *err)
{
    pool_config *c = p;
    int rc = 0;
    if (c->chunk_pool_size < 1 || c->chunk_pool_size > 100000000)
        rc = lc_error_add(err, LC_ECONFIG,
                          "chunk_pool_size: %llu is out of range (use 1 to 100000000)",
                          (unsigned long long)c->chunk_pool_size);
    if (lc_config_threads(&c->threads, c->threads_opt, 2, 256, err))
        rc = LC_ECONFIG;
    c->store_auto = !c->store_bytes || strcmp(c->store_bytes, "auto") == 0;
    if (!c->store_auto && !lc_parse_bytes(c->store_bytes, &c->store_limit))
        rc = lc_error_add(err, LC_ECONFIG,
                          "store_bytes: '%s' is not a size (use auto, 0 for no store, or a "
                          "number with an optional unit: 512M, 6G, 8GiB)",
                          c->store_bytes);
    c->store_block = c->store_block_opt ? *c->store_block_opt : LC_PACK_BLOCK_DEFAULT;
    if (c->store_block < 1 || c->store_block > LC_PACK_BLOCK_MAX)
        rc = lc_error_add(err, LC_ECONFIG, "store_block: %u is out of range (use 1 to %d)",
                          c->store_block, LC_PACK_BLOCK_MAX);
    c->backend = LC_INFLATE_AUTO;
    if (c->inflate) {
        if (strcmp(c->inflate, "zlib") == 0)
            c->backend = LC_INFLATE_ZLIB;
        else if (strcmp(c->inflate, "libdeflate") == 0)
            c->backend = LC_INFLATE_LIBDEFLATE;
        else if (strcmp(c->inflate, "auto") != 0)
            return lc_error_add(err, LC_ECONFIG, "inflate: '%s' is not auto, zlib or libdeflate",
                                c->inflate);
        if (!lc_inflate_backend_available(c->backend))
            return lc_error_add(err, LC_ECONFIG,
                                "inflate: %s is not available in this build (use auto)",
                                c->inflate);
    }
    return rc;
}

typedef struct pool_source {
    lc_chunk_source *src;
    uint64_t base;     /* global index of its first kept chunk */
    uint32_t n;        /* kept chunks */
    uint32_t *members; /* kept member indices; NULL: all, in order */
    uint32_t *uses;    /* per kept chunk; DROPPED when bad */
    lc_packed_chunk **packed; /* per kept chunk: its stored form, or NULL */
    uint8_t *unfit;    /* per kept chunk: did not fit in the store when first used */
    uint32_t released; /* leading chunks below the window whose stored form is gone */
    uint32_t n_dropped;      /* kept chunks found bad */
    bool since_counted;      /* its chunks were counted in since_anchor ... */
    uint64_t anchor_gen;     /* ... before this many resets */
} pool_source;

typedef struct pool {
    lc_thread ingest_thread;
    lc_load_meter ingest_meter;

    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool initial_done;
    bool input_closed;
    /* Sources of the window (pool_source), oldest first. */
    lc_deque sources;
    uint64_t upper;     /* next global index */
    uint64_t in_window; /* kept chunks of the sources in the ring */
    /* Undrawn indices of the current pass. */
    uint64_t *pending;
    size_t n_pending, cap_pending;
    lc_rng rng;
    char *anchor;
    char *newest_key;
    uint64_t since_anchor;
    uint64_t anchor_gen;   /* anchor resets so far */
    char *count_from;      /* the key since_anchor counts from (NULL: the start) */
    uint64_t dropped_held; /* chunks found bad in the held sources */

    atomic_uint_fast64_t n_emitted_total; /* chunks handed out since start, never reset */
    atomic_uint_fast64_t n_emitted, n_dropped, n_reshuffles, n_sources_added, n_evicted,
        n_not_kept, n_stale_draws, n_other_rank, n_unreadable;

    lc_chunk_store store; /* the accounting; the packed chunks are in `sources` */
    uint64_t passes;          /* passes begun after the first; under mu */
    uint64_t initial_done_ns; /* when the initial window was set; under mu */
} pool;

static pool_source *ring_at(pool *p, size_t i)
{
    return lc_deque_at(&p->sources, i);
}

static uint64_t window_lower(const pool *p, const pool_config *c)
{
    return p->upper > c->chunk_pool_size ? p->upper - c->chunk_pool_size : 0;
}

static void pending_push(pool *p, uint64_t idx)
{
    if (p->n_pending == p->cap_pending) {
        p->cap_pending = p->cap_pending ? 2 * p->cap_pending : 1024;
        p->pending = lc_xrealloc(p->pending, p->cap_pending * sizeof *p->pending);
    }
    p->pending[p->n_pending++] = idx;
}

/* Build the entry for a source: which of its chunks are ours. Returns false
 * (and unrefs) when none are. */
static bool make_entry(lc_stage *s, lc_chunk_source *src, pool_source *e)
{
    pool *p = s->priv;
    memset(e, 0, sizeof *e);
    size_t total = lc_chunk_source_count(src);
    uint32_t world = s->env->world_size ? s->env->world_size : 1;
    if (world > 1) {
        const char *key = lc_chunk_source_key(src);
        e->members = lc_xmalloc((total ? total : 1) * sizeof *e->members);
        for (size_t m = 0; m < total; m++) {
            if (lc_share_of(key, m, world) == s->env->rank)
                e->members[e->n++] = (uint32_t)m;
        }
        atomic_fetch_add(&p->n_other_rank, total - e->n);
    } else {
        e->n = (uint32_t)total;
    }
    if (e->n == 0) {
        free(e->members);
        lc_chunk_source_unref(src);
        return false;
    }
    e->src = src;
    e->uses = lc_xcalloc(e->n, sizeof *e->uses);
    if (lc_chunk_store_on(&p->store)) {
        e->packed = lc_xcalloc(e->n, sizeof *e->packed);
        e->unfit = lc_xcalloc(e->n, sizeof *e->unfit);
    }
    return true;
}

/* Let chunk pos of a source leave the store. Caller holds mu (or owns e). */
static void unstore(pool *p, pool_source *e, uint32_t pos)
{
    if (e->packed && e->packed[pos]) {
        lc_chunk_store_release(&p->store, e->packed[pos]);
        e->packed[pos] = NULL;
    }
}

static void free_entry(pool *p, pool_source *e)
{
    for (uint32_t i = 0; e->packed && i < e->n; i++)
        unstore(p, e, i);
    lc_chunk_source_unref(e->src);
    free(e->members);
    free(e->uses);
    free(e->packed);
    free(e->unfit);
}

/* Append a kept source at the upper bound. Caller holds mu. */
static void append_locked(pool *p, pool_source *e)
{
    e->base = p->upper;
    *(pool_source *)lc_deque_push_back(&p->sources) = *e;
    for (uint32_t i = 0; i < e->n; i++)
        pending_push(p, p->upper + i);
    p->upper += e->n;
    p->in_window += e->n;
}

/* Note a source's key: the newest is the largest seen. Caller holds mu. */
static void note_key_locked(pool *p, const char *key)
{
    if (p->newest_key && lc_source_key_compare(key, p->newest_key) <= 0)
        return;
    free(p->newest_key);
    p->newest_key = lc_xstrdup(key);
}

/* Drop whole sources that fell out of the window. Caller holds mu. */
static void evict_locked(lc_stage *s)
{
    pool *p = s->priv;
    uint64_t lower = window_lower(p, s->config);
    while (lc_deque_len(&p->sources) > 1) {
        pool_source *front = ring_at(p, 0);
        if (front->base + front->n > lower)
            break;
        p->in_window -= front->n;
        p->dropped_held -= front->n_dropped;
        free_entry(p, front);
        lc_deque_pop_front(&p->sources);
        atomic_fetch_add(&p->n_evicted, 1);
    }
    /* A source of many chunks (a tar) straddling the lower bound: its chunks
     * below the window leave the store now, not when the whole source goes. */
    if (lc_deque_len(&p->sources) && lc_chunk_store_on(&p->store)) {
        pool_source *front = ring_at(p, 0);
        for (; front->released < front->n && front->base + front->released < lower;
             front->released++)
            unstore(p, front, front->released);
    }
    /* Keep the pass array from filling with evicted indices. */
    if (p->n_pending > 2 * p->in_window + 1024) {
        size_t k = 0;
        uint64_t first = lc_deque_len(&p->sources) ? ring_at(p, 0)->base : p->upper;
        for (size_t i = 0; i < p->n_pending; i++)
            if (p->pending[i] >= first && p->pending[i] >= lower)
                p->pending[k++] = p->pending[i];
        p->n_pending = k;
    }
}

/* Chunk pos of a held source is bad: dropped for good, out of the store,
 * out of the window's count and, when it was counted there, out of the
 * anchor's count (a trainer waits for good games). Caller holds mu. */
static void drop_locked(pool *p, pool_source *e, uint32_t pos)
{
    if (e->uses[pos] == DROPPED)
        return;
    e->uses[pos] = DROPPED;
    unstore(p, e, pos);
    e->n_dropped++;
    p->dropped_held++;
    if (e->since_counted && e->anchor_gen == p->anchor_gen && p->since_anchor > 0)
        p->since_anchor--;
}

/* Find the source holding global index idx; NULL when evicted. */
static pool_source *find_locked(pool *p, uint64_t idx, uint32_t *pos)
{
    size_t lo = 0, hi = lc_deque_len(&p->sources);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        pool_source *e = ring_at(p, mid);
        if (idx < e->base)
            hi = mid;
        else if (idx >= e->base + e->n)
            lo = mid + 1;
        else {
            *pos = (uint32_t)(idx - e->base);
            return e;
        }
    }
    return NULL;
}

static int compare_sources(const void *a, const void *b)
{
    lc_chunk_source *const *x = a, *const *y = b;
    int c = lc_source_key_compare(lc_chunk_source_key(*x), lc_chunk_source_key(*y));
    return c ? c : strcmp(lc_chunk_source_path(*x), lc_chunk_source_path(*y));
}

/* The initial load: keep the newest sources holding chunk_pool_size chunks. */
static void initial_load(lc_stage *s, lc_chunk_source **srcs, size_t n)
{
    pool *p = s->priv;
    const pool_config *c = s->config;
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
        if (!p->anchor || lc_source_key_compare(key, p->anchor) > 0)
            since += count;
        since_from = i - 1;
    }
    char *anchor_then = p->anchor ? lc_xstrdup(p->anchor) : NULL;
    if (n) /* the newest source, whichever rank keeps its chunks */
        note_key_locked(p, lc_chunk_source_key(srcs[n - 1]));
    lc_mutex_unlock(&p->mu);
    pool_source *entries = lc_xcalloc(n ? n : 1, sizeof *entries);
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
        entries[i].anchor_gen = p->anchor_gen;
        append_locked(p, &entries[i]);
        atomic_fetch_add(&p->n_sources_added, 1);
    }
    p->since_anchor += since;
    free(p->count_from);
    p->count_from = p->anchor ? lc_xstrdup(p->anchor) : NULL;
    p->initial_done = true;
    p->initial_done_ns = lc_now_ns();
    lc_rng_seed(&p->rng, s->env->seed, LC_RNG_STREAM_POOL);
    lc_cond_broadcast(&p->cond);
    lc_mutex_unlock(&p->mu);
    free(anchor_then);
    free(entries);
    char store[192];
    lc_chunk_store_describe(&p->store, store, sizeof store);
    LC_INFO("%s: initial window: %llu chunks from %zu of %zu sources (pool size %llu)%s; %s",
            s->name, (unsigned long long)kept, n - first, n,
            (unsigned long long)c->chunk_pool_size,
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
        char *key = lc_xstrdup(lc_chunk_source_key(in.source)); /* make_entry may unref */
        pool_source e;
        bool ours = make_entry(s, in.source, &e);
        lc_mutex_lock(&p->mu);
        p->since_anchor += total;
        note_key_locked(p, key);
        free(key);
        if (ours) {
            e.since_counted = true;
            e.anchor_gen = p->anchor_gen;
            append_locked(p, &e);
            evict_locked(s);
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
    lc_chunk_source *src;   /* one reference */
    uint32_t member, use;
    uint64_t global;
    lc_packed_chunk *packed; /* one reference when stored, else NULL */
    bool unfit;              /* did not fit in the store: do not pack it again */
} draw;

/* Draw the next chunk to load; false when stopping. Caller holds mu. */
static bool draw_locked(lc_stage *s, pool *p, draw *d, lc_load_meter *meter)
{
    const pool_config *c = s->config;
    for (;;) {
        if (lc_run_state_stopping(&s->run))
            return false;
        if (!p->initial_done || p->in_window == 0) {
            if (p->input_closed && p->initial_done && p->in_window == 0)
                return false; /* nothing will ever come */
            lc_load_idle(meter);
            lc_cond_wait(&p->cond, &p->mu);
            lc_load_busy(meter);
            continue;
        }
        if (p->n_pending == 0) {
            if (p->passes++ == 0)
                log_first_pass(s, p);
            uint64_t lower = window_lower(p, c);
            uint64_t first = ring_at(p, 0)->base;
            if (first < lower)
                first = lower;
            for (uint64_t i = first; i < p->upper; i++)
                pending_push(p, i);
            atomic_fetch_add(&p->n_reshuffles, 1);
            if (p->n_pending == 0)
                continue;
        }
        size_t r = (size_t)lc_rng_below(&p->rng, p->n_pending);
        uint64_t idx = p->pending[r];
        p->pending[r] = p->pending[--p->n_pending];
        uint32_t pos;
        pool_source *e = idx >= window_lower(p, c) ? find_locked(p, idx, &pos) : NULL;
        if (!e || e->uses[pos] == DROPPED) {
            atomic_fetch_add(&p->n_stale_draws, 1);
            continue;
        }
        uint32_t m = e->members ? e->members[pos] : pos;
        if (lc_chunk_source_is_bad(e->src, m)) { /* rejected downstream */
            drop_locked(p, e, pos);
            atomic_fetch_add(&p->n_dropped, 1);
            continue;
        }
        atomic_fetch_add(&p->n_emitted_total, 1);
        d->src = lc_chunk_source_ref(e->src);
        d->member = m;
        d->global = idx;
        d->use = e->uses[pos]++;
        d->packed = e->packed && e->packed[pos] ? lc_packed_chunk_ref(e->packed[pos]) : NULL;
        d->unfit = e->unfit && e->unfit[pos];
        if (e->uses[pos] == DROPPED) /* wrapped after 4 billion uses */
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
    uint32_t pos;
    pool_source *e = find_locked(p, idx, &pos);
    if (e && e->packed && e->packed[pos])
        e = NULL;
    bool first = e && e->uses[pos] != DROPPED;
    if (first)
        drop_locked(p, e, pos);
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
        held = p->in_window;
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
    uint32_t pos;
    pool_source *e = global >= window_lower(p, s->config) ? find_locked(p, global, &pos) : NULL;
    if (e && e->unfit)
        e->unfit[pos] = 1;
    lc_mutex_unlock(&p->mu);
    store_full(s);
}

/* Keep pk in the store as chunk `global`, if the chunk is still in the
 * window and not stored yet (two passes can hand one chunk to two threads)
 * and it fits. */
static void store_put(lc_stage *s, uint64_t global, lc_packed_chunk *pk)
{
    pool *p = s->priv;
    bool unfit = false;
    lc_mutex_lock(&p->mu);
    uint32_t pos;
    pool_source *e = global >= window_lower(p, s->config) ? find_locked(p, global, &pos) : NULL;
    if (e && e->packed && !e->packed[pos] && e->uses[pos] != DROPPED) {
        if (lc_chunk_store_admit(&p->store, pk)) {
            e->packed[pos] = lc_packed_chunk_ref(pk);
            lc_chunk_store_hold(&p->store, pk);
        } else {
            e->unfit[pos] = 1;
            unfit = true;
        }
    }
    lc_mutex_unlock(&p->mu);
    if (unfit)
        store_full(s);
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
                lc_chunk_source_path(d->src), lc_chunk_source_chunk_name(d->src, d->member),
                bad_at, reason ? reason : "bad record");
    }
}

/*
 * A chunk that is not in the store: read and inflate it; with a store, check
 * and pack it, and keep it if it fits. Fills the item's contents (records or
 * packed form); false when the chunk was dropped.
 */
static bool load_chunk(lc_stage *s, lc_pack_ctx *pack, const draw *d, lc_chunk_item *item)
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
        } else if (!load_chunk(s, pack, &d, &item)) {
            lc_chunk_source_unref(d.src);
            continue;
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
    lc_deque_init(&p->sources, sizeof(pool_source));
    if (c->anchor && c->anchor[0])
        p->anchor = lc_xstrdup(c->anchor);
    lc_rng_seed(&p->rng, s->env->seed, LC_RNG_STREAM_POOL);
    lc_chunk_store_init(&p->store, c->store_auto, c->store_limit);
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
    for (size_t i = 0; i < lc_deque_len(&p->sources); i++)
        free_entry(p, ring_at(p, i));
    lc_deque_fini(&p->sources);
    free(p->pending);
    free(p->anchor);
    free(p->newest_key);
    free(p->count_from);
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
    lc_metrics_add_count(m, "sources_evicted", atomic_exchange(&p->n_evicted, 0));
    lc_metrics_add_count(m, "sources_not_kept", atomic_exchange(&p->n_not_kept, 0));
    lc_metrics_add_count(m, "stale_draws", atomic_exchange(&p->n_stale_draws, 0));
    lc_metrics_add_count(m, "other_rank_chunks", atomic_exchange(&p->n_other_rank, 0));
    lc_mutex_lock(&p->mu);
    lc_metrics_set_gauge(m, "chunk_sources", (int64_t)lc_deque_len(&p->sources), 0, false);
    /* Whole sources are held, so the oldest may reach below the window:
     * the window itself holds at most chunk_pool_size of them. */
    uint64_t good = p->in_window - p->dropped_held;
    uint64_t in_window = good < c->chunk_pool_size ? good : c->chunk_pool_size;
    lc_metrics_set_gauge(m, "chunks_in_window", (int64_t)in_window, (int64_t)c->chunk_pool_size,
                         true);
    lc_metrics_set_gauge(m, "chunks_held", (int64_t)p->in_window, 0, false);
    lc_metrics_set_gauge(m, "chunks_total", (int64_t)p->upper, 0, false);
    lc_metrics_set_gauge(m, "initial_load_done", p->initial_done, 0, false);
    lc_metrics_set_gauge(m, "chunks_since_anchor", (int64_t)p->since_anchor, 0, false);
    lc_chunk_store_flush(&p->store, m);
    lc_metrics_set_text(m, "anchor", p->anchor);
    lc_metrics_set_text(m, "count_from", p->count_from);
    lc_metrics_set_text(m, "last_chunk_key", p->newest_key);
    lc_mutex_unlock(&p->mu);
}

/* The pool's row: the window, the count since the anchor; its loading
 * row: the chunk store (when it has a budget). */
#define BAD_REASON(r) {"bad_" #r, "chunks"},
static const lc_metric_info pool_metrics[] = {
    {"chunks_in_window", "chunks", LC_SHOW_FILL, 0, "in window"},
    {"chunks_since_anchor", "chunks", LC_SHOW_SINCE_ANCHOR},
    {"chunk_sources", "sources", LC_SHOW_VALUE, LC_SHOW_DIM, "sources", "src"},
    {"reshuffles", "passes", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "passes", ""},
    {"store_bytes", "bytes", LC_SHOW_FILL, 0, "in store", .row = "loading"},
    {"store_hits", "chunks", LC_SHOW_PERCENT, 0, "hits", .of = "store_misses", .row = "loading"},
    {"store_transcodes", "chunks", LC_SHOW_RATE, LC_SHOW_NONZERO, "packed/s", "/s",
     .row = "loading"},
    {"store_bytes_per_position", "bytes/position", LC_SHOW_VALUE, LC_SHOW_DIM | LC_SHOW_NONZERO,
     "B/position", "", .row = "loading"},
    {"anchor", ""},
    {"count_from", ""},
    {"last_chunk_key", ""},
    {"chunks_emitted", "chunks"},
    {"dropped_chunks", "chunks"},
    {"bad_unreadable_chunks", "chunks"},
    {"sources_added", "sources"},
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

static int pool_control(lc_stage *s, const Lcmon__StageControlRequest *req,
                        Lcmon__StageControlResponse *resp, lc_error *err)
{
    (void)err;
    const Lcmon__ShufflingChunkPoolControlRequest *r = req->chunk_pool_request;
    if (!r)
        return 0;
    pool *p = s->priv;
    lc_mutex_lock(&p->mu);
    if (r->set_chunk_anchor) {
        free(p->anchor);
        p->anchor = lc_xstrdup(r->set_chunk_anchor);
        LC_INFO("%s: anchor set to '%s' (count stays %llu)", s->name, p->anchor,
                (unsigned long long)p->since_anchor);
    }
    uint64_t count = p->since_anchor;
    if (r->has_reset_chunk_anchor && r->reset_chunk_anchor) {
        free(p->anchor);
        p->anchor = lc_xstrdup(p->newest_key ? p->newest_key : "");
        p->since_anchor = 0;
        p->anchor_gen++;
        free(p->count_from);
        p->count_from = lc_xstrdup(p->anchor);
        LC_INFO("%s: anchor reset to '%s' after %llu chunks", s->name, p->anchor,
                (unsigned long long)count);
    }
    Lcmon__ShufflingChunkPoolControlResponse *out = lc_xmalloc(sizeof *out);
    lcmon__shuffling_chunk_pool_control_response__init(out);
    out->chunk_anchor = lc_xstrdup(p->anchor ? p->anchor : "");
    out->has_chunks_since_anchor = true;
    out->chunks_since_anchor = (int64_t)count;
    lc_mutex_unlock(&p->mu);
    resp->chunk_pool_response = out;
    return 1;
}

/* Across a restart the anchor is kept (the count starts again). No anchor
 * ("") stays no anchor: nothing to carry. */
static char *pool_carry_out(lc_stage *s)
{
    pool *p = s->priv;
    lc_mutex_lock(&p->mu);
    char *a = p->anchor && p->anchor[0] ? lc_xstrdup(p->anchor) : NULL;
    lc_mutex_unlock(&p->mu);
    return a;
}

static int pool_carry_in(lc_stage *s, const char *carried, lc_error *err)
{
    (void)err;
    pool *p = s->priv;
    lc_mutex_lock(&p->mu);
    free(p->anchor);
    p->anchor = lc_xstrdup(carried);
    lc_mutex_unlock(&p->mu);
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
    .priv_size = sizeof(pool),
    .worker = loader_worker,
    .threads = pool_threads,
    .workers = "loading",
    .config_fields = pool_fields,
    .config_size = sizeof(pool_config),
    .config_check = pool_config_check,
    .init = pool_init,
    .fini = pool_fini,
    .start = pool_start,
    .stop = pool_stop,
    .flush_metrics = pool_flush,
    .metrics = pool_metrics,
    .control = pool_control,
    .carry_out = pool_carry_out,
    .carry_in = pool_carry_in,
};
