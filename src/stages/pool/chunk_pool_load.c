/*
 * chunk_pool_load: the shuffling chunk pool's draws and loads
 * (stages/pool/chunk_pool.h). A loading thread draws an index of the current
 * pass under the lock (skipping indices that left the window or went bad,
 * and, with Hanse sampling, those whose weight says no), then reads,
 * inflates, checks and packs the chunk outside it; a chunk that fails is
 * dropped for good, counted by reason.
 */
#include "stages/pool/chunk_pool.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/text.h"
#include "format/lc0/chunk.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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

bool lc_chunk_pool_draw_locked(lc_stage *s, pool *p, draw *d, lc_load_meter *meter)
{
    unsigned rejected = 0;
    for (;;) {
        if (lc_run_state_stopping(&s->run))
            return false;
        if (!p->initial_done || p->win.in_window == 0 || p->weighing) {
            if (p->input_closed && p->initial_done && p->win.in_window == 0)
                return false; /* nothing will ever come */
            lc_load_idle(meter);
            lc_cond_wait(&p->cond, &p->mu);
            lc_load_busy(meter);
            continue;
        }
        /* The fresh lane first (a fresh request's games), then the pass;
         * the pass waits while fresh draws load, so that no chunk drawn
         * after a request reaches the queue before its games. */
        uint64_t idx;
        bool fresh = lc_chunk_window_take_fresh(&p->win, &idx);
        if (!fresh && p->fresh_loading) {
            lc_load_idle(meter);
            lc_cond_wait(&p->cond, &p->mu);
            lc_load_busy(meter);
            continue;
        }
        if (!fresh && p->win.n_pending == 0) {
            if (p->passes++ == 0)
                log_first_pass(s, p);
            lc_chunk_window_new_pass(&p->win);
            if (p->hanse.cfg)
                lc_hanse_new_pass(&p->hanse);
            atomic_fetch_add(&p->n_reshuffles, 1);
            if (p->win.n_pending == 0)
                continue;
        }
        if (!fresh)
            idx = lc_chunk_window_take(&p->win);
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
        if (p->hanse.cfg && !fresh) { /* a fresh draw was asked for: taken */
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
        if (d->weigh && lc_stage_in_turns(s))
            p->weighing++;
        atomic_fetch_add(&p->n_emitted_total, 1);
        d->src = lc_chunk_source_ref(e->src);
        d->member = m;
        d->global = idx;
        d->use = e->uses[pos]++;
        d->packed = e->packed && e->packed[pos] ? lc_packed_chunk_ref(e->packed[pos]) : NULL;
        d->unfit = e->unfit && e->unfit[pos];
        d->fresh = fresh;
        d->arrived_ms = e->arrived_ms;
        p->fresh_loading += fresh;
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

bool lc_chunk_pool_load(lc_stage *s, lc_pack_ctx *pack, const draw *d, lc_chunk_item *item,
                        bool *rejected)
{
    pool *p = s->priv;
    const pool_config *c = s->config;
    lc_chunk_data data = {0};
    lc_error err;
    lc_error_clear(&err);
    if (lc_chunk_store_on(&p->store))
        atomic_fetch_add(&p->store.misses, 1);
    /* A chunk the store will likely keep is inflated into pages of its own,
     * given back as soon as it is packed: from the loading threads' heaps,
     * which hold the packed chunks, those megabytes would not go back (about
     * 3 MB resident over a window of 2000 games, docs/performance.md). */
    int rc = lc_chunk_source_load_as(d->src, d->member, c->backend, pack && !d->unfit, &data, &err);
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
            const char *reason = NULL;
            uint32_t bad_at = 0;
            if (lc_chunk_check(&data, &bad_at, &reason) != 0) {
                lc_chunk_data_fini(&data);
                drop_bad(s, d, reason, bad_at);
                return false;
            }
            item->flags |= LC_ITEM_CHECKED;
            if (!d->unfit)
                note_unfit(s, d->global);
            else
                store_full(s);
        }
        if (data.pages) { /* items' records are the heap's (lc_chunk_item_fini) */
            uint8_t *heap = lc_xmalloc(data.size);
            memcpy(heap, data.data, data.size);
            lc_gunzip_pages_free(data.data, data.size);
            data.data = heap;
            data.pages = false;
        }
        item->data = data.data; /* without a store: a validator checks it */
        item->content = data.content;
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
