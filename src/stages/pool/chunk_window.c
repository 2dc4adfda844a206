/*
 * chunk_window: see chunk_window.h.
 */
#include "stages/pool/chunk_window.h"

#include "core/clock.h"
#include "core/error.h"
#include "core/rng.h"
#include "stages/stage.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void lc_chunk_window_init(lc_chunk_window *w, uint64_t size, lc_chunk_store *store,
                          const char *anchor, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->size = size;
    w->store = store;
    lc_deque_init(&w->sources, sizeof(lc_chunk_window_source));
    if (anchor && anchor[0])
        w->anchor = lc_xstrdup(anchor);
    lc_rng_seed(&w->rng, seed, LC_RNG_STREAM_POOL);
}

void lc_chunk_window_fini(lc_chunk_window *w)
{
    for (size_t i = 0; i < lc_deque_len(&w->sources); i++)
        lc_chunk_window_entry_free(w, lc_chunk_window_at(w, i));
    lc_deque_fini(&w->sources);
    free(w->pending);
    free(w->fresh);
    free(w->anchor);
    free(w->newest_key);
    free(w->count_from);
    free(w->paths);
    memset(w, 0, sizeof *w);
}

lc_chunk_window_source *lc_chunk_window_at(lc_chunk_window *w, size_t i)
{
    return lc_deque_at(&w->sources, i);
}

uint64_t lc_chunk_window_lower(const lc_chunk_window *w)
{
    return w->upper > w->size ? w->upper - w->size : 0;
}

static void pending_push(lc_chunk_window *w, uint64_t idx)
{
    if (w->n_pending == w->cap_pending) {
        w->cap_pending = w->cap_pending ? 2 * w->cap_pending : 1024;
        w->pending = lc_xrealloc(w->pending, w->cap_pending * sizeof *w->pending);
    }
    w->pending[w->n_pending++] = idx;
}

bool lc_chunk_window_entry(lc_chunk_window *w, lc_chunk_source *src, uint32_t world, uint32_t rank,
                           lc_chunk_window_source *e, uint64_t *other_rank)
{
    memset(e, 0, sizeof *e);
    *other_rank = 0;
    size_t total = lc_chunk_source_count(src);
    if (world > 1) {
        const char *key = lc_chunk_source_key(src);
        e->members = lc_xmalloc((total ? total : 1) * sizeof *e->members);
        for (size_t m = 0; m < total; m++) {
            /* By the member's index in its file: a view (a splitter's
             * output) shards as the file would. */
            if (lc_share_of(key, lc_chunk_source_member(src, m), world) == rank)
                e->members[e->n++] = (uint32_t)m;
        }
        *other_rank = total - e->n;
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
    if (lc_chunk_store_on(w->store)) {
        e->packed = lc_xcalloc(e->n, sizeof *e->packed);
        e->unfit = lc_xcalloc(e->n, sizeof *e->unfit);
    }
    return true;
}

void lc_chunk_window_unstore(lc_chunk_window *w, lc_chunk_window_source *e, uint32_t pos)
{
    if (e->packed && e->packed[pos]) {
        lc_chunk_store_release(w->store, e->packed[pos]);
        e->packed[pos] = NULL;
    }
}

void lc_chunk_window_entry_free(lc_chunk_window *w, lc_chunk_window_source *e)
{
    for (uint32_t i = 0; e->packed && i < e->n; i++)
        lc_chunk_window_unstore(w, e, i);
    lc_chunk_source_unref(e->src);
    free(e->members);
    free(e->weight);
    free(e->uses);
    free(e->packed);
    free(e->unfit);
}

/* ---- the paths of the sources held ---- */

static uint64_t path_hash(const char *path)
{
    uint64_t h = lc_fnv1a(path, strlen(path));
    return h > 1 ? h : h + 2; /* 0 and 1 mark slots */
}

static void paths_insert(lc_chunk_window *w, uint64_t hash, uint64_t base)
{
    if (2 * (w->paths_used + 1) > w->paths_cap) {
        /* Grow (or sweep the removed slots away). */
        size_t cap = w->paths_cap ? w->paths_cap : 64;
        while (cap < 4 * (lc_deque_len(&w->sources) + 1))
            cap *= 2;
        struct lc_chunk_window_path *old = w->paths;
        size_t old_cap = w->paths_cap;
        w->paths = lc_xcalloc(cap, sizeof *w->paths);
        w->paths_cap = cap;
        w->paths_used = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].hash > 1)
                paths_insert(w, old[i].hash, old[i].base);
        free(old);
    }
    size_t i = hash & (w->paths_cap - 1);
    while (w->paths[i].hash > 1)
        i = (i + 1) & (w->paths_cap - 1);
    if (w->paths[i].hash == 0)
        w->paths_used++;
    w->paths[i].hash = hash;
    w->paths[i].base = base;
}

static void paths_remove(lc_chunk_window *w, const lc_chunk_window_source *e)
{
    if (!w->paths_cap || !e->n)
        return;
    uint64_t hash = path_hash(lc_chunk_source_path(e->src));
    for (size_t i = hash & (w->paths_cap - 1); w->paths[i].hash; i = (i + 1) & (w->paths_cap - 1))
        if (w->paths[i].hash == hash && w->paths[i].base == e->base) {
            w->paths[i].hash = 1;
            return;
        }
}

lc_chunk_window_source *lc_chunk_window_find_path(lc_chunk_window *w, const char *path)
{
    if (!w->paths_cap)
        return NULL;
    uint64_t hash = path_hash(path);
    for (size_t i = hash & (w->paths_cap - 1); w->paths[i].hash; i = (i + 1) & (w->paths_cap - 1)) {
        if (w->paths[i].hash != hash)
            continue;
        uint32_t pos;
        lc_chunk_window_source *e = lc_chunk_window_find(w, w->paths[i].base, &pos);
        if (e && e->base == w->paths[i].base && !strcmp(lc_chunk_source_path(e->src), path))
            return e;
    }
    return NULL;
}

/* Chunk pos of e leaves for good; false when it had already. */
static bool drop_chunk(lc_chunk_window *w, lc_chunk_window_source *e, uint32_t pos)
{
    if (e->uses[pos] == LC_CHUNK_WINDOW_DROPPED)
        return false;
    e->uses[pos] = LC_CHUNK_WINDOW_DROPPED;
    lc_chunk_window_unstore(w, e, pos);
    e->n_dropped++;
    w->dropped_held++;
    return true;
}

void lc_chunk_window_retire(lc_chunk_window *w, lc_chunk_window_source *e)
{
    for (uint32_t pos = 0; pos < e->n; pos++)
        drop_chunk(w, e, pos);
    paths_remove(w, e);
}

void lc_chunk_window_append(lc_chunk_window *w, lc_chunk_window_source *e)
{
    e->base = w->upper;
    e->arrived_ms = (uint32_t)(lc_now_ns() / 1000000u);
    *(lc_chunk_window_source *)lc_deque_push_back(&w->sources) = *e;
    for (uint32_t i = 0; i < e->n; i++)
        pending_push(w, w->upper + i);
    w->upper += e->n;
    w->in_window += e->n;
    if (e->n)
        paths_insert(w, path_hash(lc_chunk_source_path(e->src)), e->base);
}

void lc_chunk_window_note_key(lc_chunk_window *w, const char *key)
{
    if (!w->newest_key || lc_source_key_compare(key, w->newest_key) > 0)
        lc_chunk_window_set_newest(w, key);
}

void lc_chunk_window_set_newest(lc_chunk_window *w, const char *key)
{
    char *copy = lc_xstrdup(key);
    free(w->newest_key);
    w->newest_key = copy;
}

size_t lc_chunk_window_evict(lc_chunk_window *w)
{
    uint64_t lower = lc_chunk_window_lower(w);
    size_t evicted = 0;
    while (lc_deque_len(&w->sources) > 1) {
        lc_chunk_window_source *front = lc_chunk_window_at(w, 0);
        if (front->base + front->n > lower)
            break;
        w->in_window -= front->n;
        w->dropped_held -= front->n_dropped;
        paths_remove(w, front);
        lc_chunk_window_entry_free(w, front);
        lc_deque_pop_front(&w->sources);
        evicted++;
    }
    /* A source of many chunks (a tar) straddling the lower bound: its chunks
     * below the window leave the store now, not when the whole source goes. */
    if (lc_deque_len(&w->sources) && lc_chunk_store_on(w->store)) {
        lc_chunk_window_source *front = lc_chunk_window_at(w, 0);
        for (; front->released < front->n && front->base + front->released < lower;
             front->released++)
            lc_chunk_window_unstore(w, front, front->released);
    }
    /* Keep the pass array from filling with evicted indices. */
    if (w->n_pending > 2 * w->in_window + 1024) {
        size_t k = 0;
        uint64_t first = lc_deque_len(&w->sources) ? lc_chunk_window_at(w, 0)->base : w->upper;
        for (size_t i = 0; i < w->n_pending; i++)
            if (w->pending[i] >= first && w->pending[i] >= lower)
                w->pending[k++] = w->pending[i];
        w->n_pending = k;
    }
    return evicted;
}

void lc_chunk_window_drop(lc_chunk_window *w, lc_chunk_window_source *e, uint32_t pos)
{
    if (drop_chunk(w, e, pos) && e->since_counted && e->anchor_gen == w->anchor_gen &&
        w->since_anchor > 0)
        w->since_anchor--;
}

lc_chunk_window_source *lc_chunk_window_find(lc_chunk_window *w, uint64_t idx, uint32_t *pos)
{
    size_t lo = 0, hi = lc_deque_len(&w->sources);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        lc_chunk_window_source *e = lc_chunk_window_at(w, mid);
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

void lc_chunk_window_new_pass(lc_chunk_window *w)
{
    uint64_t lower = lc_chunk_window_lower(w);
    uint64_t first = lc_deque_len(&w->sources) ? lc_chunk_window_at(w, 0)->base : w->upper;
    if (first < lower)
        first = lower;
    for (uint64_t i = first; i < w->upper; i++)
        pending_push(w, i);
}

uint64_t lc_chunk_window_take(lc_chunk_window *w)
{
    size_t r = (size_t)lc_rng_below(&w->rng, w->n_pending);
    uint64_t idx = w->pending[r];
    w->pending[r] = w->pending[--w->n_pending];
    return idx;
}

void lc_chunk_window_set_anchor(lc_chunk_window *w, const char *key)
{
    free(w->anchor);
    w->anchor = lc_xstrdup(key);
}

uint64_t lc_chunk_window_reset_anchor(lc_chunk_window *w)
{
    uint64_t count = w->since_anchor;
    lc_chunk_window_set_anchor(w, w->newest_key ? w->newest_key : "");
    w->since_anchor = 0;
    w->anchor_gen++;
    free(w->count_from);
    w->count_from = lc_xstrdup(w->anchor);
    return count;
}

lc_chunk_window_source *lc_chunk_window_find_live(lc_chunk_window *w, uint64_t idx, uint32_t *pos)
{
    return idx >= lc_chunk_window_lower(w) ? lc_chunk_window_find(w, idx, pos) : NULL;
}

bool lc_chunk_window_drop_unstored(lc_chunk_window *w, uint64_t idx)
{
    uint32_t pos;
    lc_chunk_window_source *e = lc_chunk_window_find(w, idx, &pos);
    if (!e || (e->packed && e->packed[pos]) || e->uses[pos] == LC_CHUNK_WINDOW_DROPPED)
        return false;
    lc_chunk_window_drop(w, e, pos);
    return true;
}

bool lc_chunk_window_store(lc_chunk_window *w, uint64_t idx, lc_packed_chunk *pk)
{
    uint32_t pos;
    lc_chunk_window_source *e = lc_chunk_window_find_live(w, idx, &pos);
    if (!e || !e->packed || e->packed[pos] || e->uses[pos] == LC_CHUNK_WINDOW_DROPPED)
        return true;
    if (!lc_chunk_store_admit(w->store, pk)) {
        e->unfit[pos] = 1;
        return false;
    }
    e->packed[pos] = lc_packed_chunk_ref(pk);
    lc_chunk_store_hold(w->store, pk);
    return true;
}

void lc_chunk_window_note_unfit(lc_chunk_window *w, uint64_t idx)
{
    uint32_t pos;
    lc_chunk_window_source *e = lc_chunk_window_find_live(w, idx, &pos);
    if (e && e->unfit)
        e->unfit[pos] = 1;
}

void lc_chunk_window_set_weight(lc_chunk_window *w, uint64_t idx, double weight)
{
    uint32_t pos;
    lc_chunk_window_source *e = lc_chunk_window_find_live(w, idx, &pos);
    if (!e)
        return;
    if (!e->weight) {
        e->weight = lc_xmalloc(e->n * sizeof *e->weight);
        for (uint32_t i = 0; i < e->n; i++)
            e->weight[i] = NAN;
    }
    e->weight[pos] = (float)weight;
}

uint64_t lc_chunk_window_fresh(lc_chunk_window *w, uint64_t *first, uint64_t *last)
{
    uint64_t lower = lc_chunk_window_lower(w), from = w->fresh_from > lower ? w->fresh_from : lower;
    uint64_t added = 0;
    for (uint64_t idx = from; idx < w->upper; idx++) {
        uint32_t pos;
        lc_chunk_window_source *e = lc_chunk_window_find_live(w, idx, &pos);
        if (!e || e->uses[pos] == LC_CHUNK_WINDOW_DROPPED)
            continue;
        if (w->n_fresh == w->cap_fresh) {
            w->cap_fresh = w->cap_fresh ? 2 * w->cap_fresh : 64;
            w->fresh = lc_xrealloc(w->fresh, w->cap_fresh * sizeof *w->fresh);
        }
        w->fresh[w->n_fresh++] = idx;
        if (!added++)
            *first = idx;
        *last = idx;
    }
    w->fresh_from = w->upper;
    return added;
}

bool lc_chunk_window_take_fresh(lc_chunk_window *w, uint64_t *idx)
{
    if (w->n_fresh == 0)
        return false;
    size_t k = (size_t)lc_rng_below(&w->rng, w->n_fresh);
    *idx = w->fresh[k];
    w->fresh[k] = w->fresh[--w->n_fresh];
    return true;
}
