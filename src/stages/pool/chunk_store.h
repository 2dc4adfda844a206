/*
 * chunk_store: the accounting of the shuffling chunk pool's store of packed
 * chunks (format/lc0/packed_chunk.h): its budget, what it holds, its counters
 * and metrics, and the one warning it gives when full. The pool keeps the
 * packed chunks themselves, one slot per chunk of its window, and asks the
 * store before it packs or keeps one (how the two work together follows).
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
 * Threads: every function may be called from any thread at any time; the
 * numbers are atomics, and a chunk is admitted by an atomic add against the
 * budget, so what is held never exceeds the budget.
 */
#ifndef LC_STAGES_POOL_CHUNK_STORE_H
#define LC_STAGES_POOL_CHUNK_STORE_H

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

/* Where the store's metrics are in its owner's table: a row each, and the
 * first of LC_RECORD_CHECK_REASONS + 1 rows "bad_<reason>" ... "bad_other"
 * (LC_RECORD_CHECK_REASON_LIST). */
typedef struct lc_chunk_store_rows {
    int hits, misses, transcodes, over_budget, bytes, chunks, positions, bytes_per_position, bad;
} lc_chunk_store_rows;

/* Counts since the last flush and the gauges, when the store is on. */
void lc_chunk_store_flush(lc_chunk_store *st, lc_stage_metrics *m, const lc_chunk_store_rows *r);

#endif
