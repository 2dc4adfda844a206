/*
 * chunk_pool: what the files of the shuffling chunk pool share, and no other
 * file includes: its settings and state, and the entry points of its two
 * halves besides the stage's life cycle (shuffling_chunk_pool.c, which
 * tells the whole design). The ingestion thread (chunk_pool_ingest.c) takes
 * chunk sources from the input: the initial load, then each new source, and
 * the files written again. The loading threads (chunk_pool_load.c) draw
 * chunks from the window and read, check and pack them. Every window
 * access is under the pool's `mu`.
 */
#ifndef LC_STAGES_POOL_CHUNK_POOL_H
#define LC_STAGES_POOL_CHUNK_POOL_H

#include "core/thread.h"
#include "format/gzip.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/packed_chunk.h"
#include "stages/pool/chunk_store.h"
#include "stages/pool/chunk_window.h"
#include "stages/pool/hanse.h"
#include "stages/items.h"
#include "stages/pool/source_order.h"
#include "stages/stage.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct pool_config {
    uint64_t chunk_pool_size;
    unsigned threads;
    char *anchor;
    char *inflate;              /* "auto", "zlib", "libdeflate" */
    uint64_t store_bytes;       /* LC_SETTING_SIZE_AUTO: sized at init; 0: no store */
    unsigned store_block;       /* positions per packed block */
    int store_codec;            /* LC_PACK_LZ4 or LC_PACK_ZSTD */
    lc_hanse_config *hanse;     /* Hanse sampling; NULL: off */
    lc_source_order order;      /* which sources are the newest */
    lc_inflate_backend backend; /* inflate, resolved */
} pool_config;

typedef struct pool {
    lc_thread ingest_thread;
    lc_load_meter ingest_meter;

    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool initial_done;
    bool input_closed;
    lc_chunk_window win; /* the sources, the pass, the anchor's count */
    bool anchor_moved;   /* set or reset at run time (or carried in): kept at a restart */
    bool recount_due;    /* anchor-recount before the initial load: it recounts at its end */

    atomic_uint_fast64_t n_emitted_total; /* chunks handed out since start, never reset */
    /* Files in the window written again: with the same chunks (ignored),
     * with others (the old ones retired). */
    atomic_uint_fast64_t n_rewritten_same, n_rewritten_replaced;
    atomic_uint_fast64_t n_emitted, n_dropped, n_reshuffles, n_sources_added, n_evicted, n_not_kept,
        n_stale_draws, n_other_rank, n_unreadable;
    atomic_uint_fast64_t n_fresh_drawn; /* chunks drawn through the fresh lane */

    lc_chunk_store store;     /* the accounting; the packed chunks are in `sources` */
    uint64_t passes;          /* passes begun after the first; under mu */
    uint64_t initial_done_ns; /* when the initial window was set; under mu */
    lc_hanse hanse;           /* Hanse sampling (stages/pool/hanse.h) */
    int64_t newest_mtime_ns;  /* order mtime: win.newest_key's file's (-1: unknown); mu */
    /* Deterministic mode with Hanse sampling: draws whose weight is being
     * computed; no other draw is made meanwhile, so that every judgement
     * sees the weights one loading thread would have seen (mu). */
    unsigned weighing;
    unsigned fresh_loading; /* fresh draws not yet emitted (the pass waits); mu */
} pool;

/* What a draw hands a loading thread. */
typedef struct draw {
    lc_chunk_source *src; /* one reference */
    uint32_t member, use;
    uint64_t global;
    lc_packed_chunk *packed; /* one reference when stored, else NULL */
    bool unfit;              /* did not fit in the store: do not pack it again */
    bool weigh;              /* Hanse: weight unknown, judge it once read */
    bool fresh;              /* drawn through the fresh lane */
    uint32_t arrived_ms;     /* when its source joined the window */
} draw;

/* The ingestion thread's body; arg is the stage. */
void *lc_chunk_pool_ingest(void *arg);

/* anchor-recount KEY: the anchor becomes KEY and its count the chunks of
 * the window's sources after KEY in the pool's order, less those found
 * bad (what a start with that anchor would count now); returns it. With
 * *held: KEY's own source is in the window (then every game after it is:
 * the count is exact). One rank's window only (world size 1: the caller
 * checks); under mtime order each source held is stat()ed. Caller holds
 * p->mu. */
uint64_t lc_chunk_pool_recount_locked(lc_stage *s, const char *key, bool *held);

/* Draw the next chunk to load; false when stopping. Caller holds p->mu. */
bool lc_chunk_pool_draw_locked(lc_stage *s, pool *p, draw *d, lc_load_meter *meter);

/* A chunk that is not in the store: read and inflate it; with a store, check
 * and pack it (pack: NULL without a store), and keep it if it fits. Fills
 * the item's contents (records or packed form); false when the chunk was
 * dropped. *rejected: Hanse weighed it and did not take it. */
bool lc_chunk_pool_load(lc_stage *s, lc_pack_ctx *pack, const draw *d, lc_chunk_item *item,
                        bool *rejected);

#endif
