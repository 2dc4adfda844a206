/*
 * chunk_store: the accounting of the shuffling chunk pool's store of packed
 * chunks (format/lc0/packed_chunk.h): its budget, what it holds, its counters
 * and metrics, and the one warning it gives when full. The pool keeps the
 * packed chunks themselves, one slot per chunk of its window, and asks the
 * store before it packs or keeps one (see shuffling_chunk_pool.c for how
 * the two work together).
 *
 * Threads: every function may be called from any thread at any time; the
 * numbers are atomics, and a chunk is admitted by an atomic add against the
 * budget, so what is held never exceeds the budget.
 */
#ifndef LC_STAGES_CHUNK_STORE_H
#define LC_STAGES_CHUNK_STORE_H

#include "core/metrics.h"
#include "format/lc0/frame.h"
#include "format/lc0/packed_chunk.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lc_chunk_store {
    uint64_t budget; /* bytes; 0: no store */
    char why[128];   /* where the budget came from, for the log */
    atomic_uint_fast64_t used, chunks, positions;
    atomic_uint_fast64_t hits, misses, transcodes, over_budget;
    atomic_uint_fast64_t bad[LC_RECORD_CHECK_REASONS + 1];
    atomic_bool full_logged;
} lc_chunk_store;

/* A budget of `bytes`, or with `automatic` the default one: a quarter of
 * the memory this process may use (core/machine.h), shared by the ranks
 * that run on this machine (LOCAL_WORLD_SIZE, as torchrun sets it). */
void lc_chunk_store_init(lc_chunk_store *st, bool automatic, uint64_t bytes);
static inline bool lc_chunk_store_on(const lc_chunk_store *st)
{
    return st->budget > 0;
}

/* Is there room for a chunk of n positions, judged by the bytes a position
 * has cost so far (a first guess before anything is stored)? */
bool lc_chunk_store_has_room(lc_chunk_store *st, uint32_t n);
/* Take a packed chunk's bytes from the budget; false when they do not fit.
 * Then either lc_chunk_store_hold (the pool kept it) or _refund. */
bool lc_chunk_store_admit(lc_chunk_store *st, const lc_packed_chunk *pk);
void lc_chunk_store_hold(lc_chunk_store *st, const lc_packed_chunk *pk);
void lc_chunk_store_refund(lc_chunk_store *st, const lc_packed_chunk *pk);
/* A held chunk leaves the store: its bytes return to the budget, and the
 * store's reference is dropped (items in flight keep theirs). */
void lc_chunk_store_release(lc_chunk_store *st, lc_packed_chunk *pk);

/* A use of a chunk that does not fit: counted, and the first time, a
 * warning naming `who` with what would hold a window of `window_chunks`
 * (read only for that first time). */
void lc_chunk_store_full(lc_chunk_store *st, const char *who, uint64_t window_chunks);

/* "chunk store of up to 6.32 GB (a quarter of ...)" or "no chunk store". */
void lc_chunk_store_describe(const lc_chunk_store *st, char *buf, size_t len);
/* "the store holds 1999 chunks in 63.9 MB (123.2 bytes a position)". */
void lc_chunk_store_describe_fill(lc_chunk_store *st, char *buf, size_t len);

/* Counts since the last flush and the gauges, when the store is on. */
void lc_chunk_store_flush(lc_chunk_store *st, lc_stage_metrics *m);

#endif
