/*
 * chunk_pool_ingest: the shuffling chunk pool's ingestion thread
 * (stages/pool/chunk_pool.h). Until the scan-done marker it collects the
 * sources; then the initial load keeps the newest of them holding
 * chunk_pool_size chunks (and counts the anchor's chunks over the window of
 * all ranks); afterwards each new source joins the window at once. A file
 * the window holds already, written again, is matched by its path: with
 * the same chunks it is ignored, with others its old chunks are retired;
 * with the same chunks after some of them were dropped because the file
 * could not be read (truncated or vanished when drawn), it takes the old
 * source's place and the anchor's count gets back what it lost.
 */
#include "stages/pool/chunk_pool.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/text.h"

#include <stdlib.h>
#include <string.h>

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

/* A source with its place in the pool's order (stages/pool/source_order.h). */
typedef struct ordered {
    lc_chunk_source *src;
    lc_order_key key;
} ordered;

static int compare_ordered(const void *a, const void *b)
{
    const ordered *x = a, *y = b;
    int c = lc_order_compare(&x->key, &y->key);
    return c ? c : strcmp(lc_chunk_source_path(x->src), lc_chunk_source_path(y->src));
}

/* Sort srcs oldest first in the pool's order; *anchor gets the anchor's key
 * (that of a source it names, else made from the name: no mtime), when
 * there is an anchor. Returns how many sources the anchor names: more than
 * one when it is a bare name found in several subfolders (it then sorts
 * after them all, and takes the newest one's mtime). */
static size_t sort_sources(const pool_config *c, lc_chunk_source **srcs, size_t n,
                           const char *anchor, lc_order_key *anchor_key)
{
    size_t named = 0;
    ordered *v = lc_xmalloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[i].src = srcs[i];
        lc_order_key_make(c->order, lc_chunk_source_key(srcs[i]), lc_chunk_source_path(srcs[i]),
                          &v[i].key);
    }
    if (n)
        qsort(v, n, sizeof *v, compare_ordered);
    if (anchor)
        lc_order_key_make(c->order, anchor, NULL, anchor_key);
    for (size_t i = 0; i < n; i++) {
        srcs[i] = v[i].src;
        if (anchor && lc_source_key_matches(v[i].key.name, anchor)) {
            named++;
            /* the file's mtime, in a key that points into the caller's
             * copy of the anchor: the source may be let go before the key
             * is used */
            lc_order_key_make(c->order, anchor, NULL, anchor_key);
            anchor_key->mtime_ns = v[i].key.mtime_ns;
        }
    }
    free(v);
    return named;
}

/* Is src newer than the anchor (key `anchor`, NULL: none) in the order? */
static bool after_anchor(const pool_config *c, const lc_chunk_source *src,
                         const lc_order_key *anchor)
{
    if (!anchor)
        return true;
    lc_order_key k;
    lc_order_key_make(c->order, lc_chunk_source_key(src), lc_chunk_source_path(src), &k);
    return lc_order_compare(&k, anchor) > 0;
}

uint64_t lc_chunk_pool_recount_locked(lc_stage *s, const char *key, bool *held)
{
    pool *p = s->priv;
    const pool_config *c = s->config;
    lc_chunk_window *w = &p->win;
    char *copy = lc_xstrdup(key); /* key may be w->anchor, replaced below */
    size_t n = lc_deque_len(&w->sources);
    lc_order_key anchor;
    lc_order_key_make(c->order, copy, NULL, &anchor);
    *held = false;
    for (size_t i = n; i > 0 && !*held; i--) { /* KEY's file: its mtime (mtime order) */
        const lc_chunk_source *src = lc_chunk_window_at(w, i - 1)->src;
        if (lc_source_key_matches(lc_chunk_source_key(src), copy)) {
            lc_order_key_make(c->order, copy, lc_chunk_source_path(src), &anchor);
            *held = true;
        }
    }
    w->anchor_gen++; /* the sources counted are stamped anew */
    uint64_t count = 0;
    for (size_t i = 0; i < n; i++) {
        lc_chunk_window_source *e = lc_chunk_window_at(w, i);
        e->since_counted = after_anchor(c, e->src, &anchor);
        e->anchor_gen = w->anchor_gen;
        if (e->since_counted)
            count += e->n - e->n_dropped;
    }
    lc_chunk_window_set_anchor(w, copy);
    free(w->count_from);
    w->count_from = copy;
    w->since_anchor = count;
    return count;
}

/* A source (key k) joined after the initial load: the newest so far in
 * the order? (what `reset anchor` anchors at). Caller holds mu. */
static void note_newest(pool *p, const lc_order_key *k)
{
    if (p->win.newest_key) {
        lc_order_key newest;
        lc_order_key_make(k->order, p->win.newest_key, NULL, &newest);
        newest.mtime_ns = p->newest_mtime_ns;
        if (lc_order_compare(k, &newest) <= 0)
            return;
    }
    lc_chunk_window_set_newest(&p->win, k->name);
    p->newest_mtime_ns = k->mtime_ns;
}

enum { REWRITTEN_NO, REWRITTEN_SAME, REWRITTEN_OTHER, REWRITTEN_BACK };

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

/* The chunks of a held source dropped because they could not be read (the
 * file truncated, vanished or half written when drawn; not found bad:
 * those are marked on the source), and of them those the anchor's count
 * lost (*uncounted). */
static size_t lost_to_reading(const lc_chunk_window *w, const lc_chunk_window_source *e,
                              size_t *uncounted)
{
    size_t lost = 0;
    for (uint32_t pos = 0; e->n_dropped && pos < e->n; pos++)
        lost += e->uses[pos] == LC_CHUNK_WINDOW_DROPPED &&
                !lc_chunk_source_is_bad(e->src, e->members ? e->members[pos] : pos);
    *uncounted = e->since_counted && e->anchor_gen == w->anchor_gen ? lost : 0;
    return lost;
}

/* A source whose path the window holds already (compare_with). The same
 * chunks after some of them could not be read (a game truncated, then
 * written again with the same bytes) are REWRITTEN_BACK: the new source
 * takes the old one's place, and *fresh is what the anchor's count lost
 * with them (it gets them back: nothing is counted twice). */
static int rewritten(lc_chunk_window *w, const lc_chunk_source *src, size_t *fresh)
{
    lc_chunk_window_source *old = lc_chunk_window_find_path(w, lc_chunk_source_path(src));
    if (!old)
        return REWRITTEN_NO;
    int again = compare_with(old->src, src, fresh);
    size_t uncounted;
    if (again == REWRITTEN_SAME && lost_to_reading(w, old, &uncounted)) {
        *fresh = uncounted;
        return REWRITTEN_BACK;
    }
    return again;
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
    lc_mutex_lock(&p->mu); /* the anchor may be set meanwhile */
    char *anchor_then = p->win.anchor ? lc_xstrdup(p->win.anchor) : NULL;
    lc_mutex_unlock(&p->mu);
    lc_order_key anchor_key;
    if (sort_sources(c, srcs, n, anchor_then, &anchor_key) > 1)
        LC_WARN("%s: the anchor '%s' names games of that name in several subfolders of the data "
                "folder: counting from after the newest of them (give the anchor with its folder, "
                "as last_chunk_key shows keys: 'run2/%s')",
                s->name, anchor_then, anchor_then);
    const lc_order_key *anchor = anchor_then ? &anchor_key : NULL;
    /* The anchor's count: the chunks of every rank newer than the anchor in
     * the newest sources that hold the window of all ranks (the same on every
     * rank: it depends on the files alone). */
    uint32_t world = s->env->world_size ? s->env->world_size : 1;
    uint64_t since = 0, all_ranks = 0;
    size_t since_from = n; /* sources from here on were counted (when newer) */
    for (size_t i = n; i > 0 && all_ranks < c->chunk_pool_size * world; i--) {
        size_t count = lc_chunk_source_count(srcs[i - 1]);
        all_ranks += count;
        if (after_anchor(c, srcs[i - 1], anchor))
            since += count;
        since_from = i - 1;
    }
    /* The newest source, whichever rank keeps its chunks (copied: make_entry
     * may let it go). It is named with the count below, not before: a named
     * newest source lets an anchor reset through. */
    char *newest = n ? lc_xstrdup(lc_chunk_source_key(srcs[n - 1])) : NULL;
    lc_order_key newest_order;
    if (n)
        lc_order_key_make(c->order, newest, lc_chunk_source_path(srcs[n - 1]), &newest_order);
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
    /* The first fresh request takes the games counted since an anchor, or
     * (no anchor: the whole window counts) those that come after. */
    uint64_t fresh_from = UINT64_MAX;
    for (size_t i = first; i < n; i++) {
        if (!entries[i].src)
            continue;
        entries[i].since_counted = i >= since_from && after_anchor(c, entries[i].src, anchor);
        entries[i].anchor_gen = p->win.anchor_gen;
        lc_chunk_window_append(&p->win, &entries[i]);
        if (anchor && entries[i].since_counted && fresh_from == UINT64_MAX)
            fresh_from = entries[i].base;
        atomic_fetch_add(&p->n_sources_added, 1);
    }
    p->win.fresh_from = fresh_from != UINT64_MAX ? fresh_from : p->win.upper;
    p->win.since_anchor += since;
    if (newest) {
        lc_chunk_window_set_newest(&p->win, newest);
        p->newest_mtime_ns = newest_order.mtime_ns;
    }
    /* The count runs from the anchor it was counted from; an anchor-recount
     * meanwhile counts again from its key (anchor-set keeps the count). */
    free(p->win.count_from);
    p->win.count_from = anchor_then ? lc_xstrdup(anchor_then) : NULL;
    bool held = false;
    if (p->recount_due && p->win.anchor)
        lc_chunk_pool_recount_locked(s, p->win.anchor, &held);
    p->recount_due = false;
    uint64_t counted = p->win.since_anchor;
    char *from = p->win.count_from ? lc_xstrdup(p->win.count_from) : NULL;
    p->initial_done = true;
    p->initial_done_ns = lc_now_ns();
    lc_rng_seed(&p->win.rng, s->env->seed, LC_RNG_STREAM_POOL);
    lc_cond_broadcast(&p->cond);
    lc_mutex_unlock(&p->mu);
    if (from) /* what a resume counts from, and how many came since */
        LC_INFO("%s: anchor '%s': %llu chunks of the initial window come after it", s->name, from,
                (unsigned long long)counted);
    free(from);
    free(anchor_then);
    free(newest);
    free(entries);
    char store[192];
    lc_chunk_store_describe(&p->store, store, sizeof store);
    LC_INFO("%s: initial window: %llu chunks from %zu of %zu sources (pool size %llu)%s; %s",
            s->name, (unsigned long long)kept, n - first, n, (unsigned long long)c->chunk_pool_size,
            kept < c->chunk_pool_size ? "; the window fills as new files arrive" : "", store);
}

void *lc_chunk_pool_ingest(void *arg)
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
        lc_order_key order_key; /* before the lock: mtime order stat()s the file */
        lc_order_key_make(((const pool_config *)s->config)->order, key, path, &order_key);
        lc_chunk_window_source e;
        bool ours = make_entry(s, in.source, &e);
        lc_mutex_lock(&p->mu);
        if (again == REWRITTEN_OTHER || again == REWRITTEN_BACK) {
            lc_chunk_window_source *old = lc_chunk_window_find_path(&p->win, path);
            if (old)
                lc_chunk_window_retire(&p->win, old);
        }
        if (again == REWRITTEN_OTHER) {
            atomic_fetch_add(&p->n_rewritten_replaced, 1);
            LC_INFO("%s: %s written again with other games: its %zu chunks replace the old "
                    "ones (%zu of them new)",
                    s->name, path, total, fresh);
        } else if (again == REWRITTEN_BACK) {
            atomic_fetch_add(&p->n_rewritten_same, 1);
            LC_INFO("%s: %s written again with the same games after some could not be read "
                    "(truncated or vanished when drawn): its %zu chunks are back in the window",
                    s->name, path, total);
        }
        free(path);
        p->win.since_anchor += fresh;
        note_newest(p, &order_key);
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
