/*
 * chunk_store: see chunk_store.h.
 */
#include "stages/pool/chunk_store.h"

#include "core/log.h"
#include "core/machine.h"
#include "core/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lc_chunk_store_init(lc_chunk_store *st, bool automatic, uint64_t bytes)
{
    st->budget = bytes;
    snprintf(st->why, sizeof st->why, "store_bytes");
    if (!automatic)
        return;
    uint64_t mem = lc_memory_limit();
    const char *local = getenv("LOCAL_WORLD_SIZE");
    unsigned long ranks = local && *local ? strtoul(local, NULL, 10) : 1;
    if (ranks < 1 || ranks > 4096)
        ranks = 1;
    char m[32];
    lc_format_bytes(m, sizeof m, (double)mem);
    if (ranks > 1)
        snprintf(st->why, sizeof st->why, "a quarter of %s, shared by LOCAL_WORLD_SIZE=%lu ranks",
                 m, ranks);
    else
        snprintf(st->why, sizeof st->why, "a quarter of this machine's %s", m);
    st->budget = mem / 4 / ranks;
    if (mem == 0)
        snprintf(st->why, sizeof st->why,
                 "the memory this machine gives the process is unknown: set store_bytes");
}

bool lc_chunk_store_has_room(lc_chunk_store *st, uint32_t n)
{
    uint64_t used = atomic_load(&st->used);
    uint64_t positions = atomic_load(&st->positions);
    uint64_t per = positions ? used / positions + 1 : 160;
    return used + per * n <= st->budget;
}

bool lc_chunk_store_admit(lc_chunk_store *st, const lc_packed_chunk *pk)
{
    uint64_t bytes = lc_packed_chunk_bytes(pk);
    uint64_t used = atomic_load(&st->used);
    do {
        if (used + bytes > st->budget)
            return false;
    } while (!atomic_compare_exchange_weak(&st->used, &used, used + bytes));
    return true;
}

void lc_chunk_store_hold(lc_chunk_store *st, const lc_packed_chunk *pk)
{
    atomic_fetch_add(&st->chunks, 1);
    atomic_fetch_add(&st->positions, lc_packed_chunk_positions(pk));
}

void lc_chunk_store_refund(lc_chunk_store *st, const lc_packed_chunk *pk)
{
    atomic_fetch_sub(&st->used, lc_packed_chunk_bytes(pk));
}

void lc_chunk_store_release(lc_chunk_store *st, lc_packed_chunk *pk)
{
    atomic_fetch_sub(&st->chunks, 1);
    atomic_fetch_sub(&st->positions, lc_packed_chunk_positions(pk));
    lc_chunk_store_refund(st, pk);
    lc_packed_chunk_unref(pk);
}

void lc_chunk_store_full(lc_chunk_store *st, const char *who, uint64_t window_chunks)
{
    atomic_fetch_add(&st->over_budget, 1);
    if (atomic_exchange(&st->full_logged, true))
        return;
    uint64_t chunks = atomic_load(&st->chunks), positions = atomic_load(&st->positions);
    uint64_t used = atomic_load(&st->used);
    char budget[32], whole[32];
    lc_format_bytes(budget, sizeof budget, (double)st->budget);
    lc_format_bytes(whole, sizeof whole,
                    chunks ? (double)used * (double)window_chunks / (double)chunks : 0);
    LC_WARN("%s: the chunk store is full (%s: %llu chunks, %.0f bytes a position); chunks it "
            "cannot hold are read from disk at each use (store_over_budget). The window would "
            "need about %s: raise store_bytes to hold it",
            who, budget, (unsigned long long)chunks,
            positions ? (double)used / (double)positions : 0.0, whole);
}

void lc_chunk_store_describe(const lc_chunk_store *st, char *buf, size_t len)
{
    if (!st->budget) {
        snprintf(buf, len, "no chunk store (%s)",
                 strcmp(st->why, "store_bytes") == 0 ? "store_bytes: 0" : st->why);
        return;
    }
    char b[32];
    lc_format_bytes(b, sizeof b, (double)st->budget);
    snprintf(buf, len, "chunk store of up to %s (%s)", b, st->why);
}

void lc_chunk_store_describe_fill(lc_chunk_store *st, char *buf, size_t len)
{
    uint64_t used = atomic_load(&st->used), positions = atomic_load(&st->positions);
    char b[32];
    lc_format_bytes(b, sizeof b, (double)used);
    snprintf(buf, len, "the store holds %llu chunks in %s (%.1f bytes a position)",
             (unsigned long long)atomic_load(&st->chunks), b,
             positions ? (double)used / (double)positions : 0.0);
}

void lc_chunk_store_flush(lc_chunk_store *st, lc_stage_metrics *m, const lc_chunk_store_rows *r)
{
    if (!st->budget)
        return;
    lc_metric_add(m, r->hits, atomic_exchange(&st->hits, 0));
    lc_metric_add(m, r->misses, atomic_exchange(&st->misses, 0));
    lc_metric_add(m, r->transcodes, atomic_exchange(&st->transcodes, 0));
    lc_metric_add(m, r->over_budget, atomic_exchange(&st->over_budget, 0));
    for (int i = 0; i <= LC_RECORD_CHECK_REASONS; i++)
        lc_metric_add(m, r->bad + i, atomic_exchange(&st->bad[i], 0));
    uint64_t used = atomic_load(&st->used), positions = atomic_load(&st->positions);
    lc_metric_gauge_of(m, r->bytes, (int64_t)used, (int64_t)st->budget);
    lc_metric_gauge(m, r->chunks, (int64_t)atomic_load(&st->chunks));
    lc_metric_gauge(m, r->positions, (int64_t)positions);
    lc_metric_gauge(m, r->bytes_per_position,
                    positions ? (int64_t)((used + positions / 2) / positions) : 0);
}
