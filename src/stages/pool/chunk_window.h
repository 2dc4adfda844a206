/*
 * chunk_window: the shuffling chunk pool's window, as a data structure: the
 * sources it holds, the global indices of their chunks, the draws of a pass
 * and the anchor's count. The pool (shuffling_chunk_pool.c) owns the
 * threads and the lock; every function here is called with the pool's
 * mutex held (or, for an entry not yet appended, by its only owner).
 *
 * Window. Kept chunks get global indices in the order their sources are
 * appended (the initial load appends the newest sources oldest first; later
 * sources come at the current upper bound). The window is [upper - size,
 * upper); a source whose chunks all fall below it is evicted whole (the
 * source's memory and file handle go with it), and a source of many chunks
 * (a tar) straddling the lower bound lets its chunks below the window leave
 * the chunk store one by one.
 *
 * Draws. Indices are drawn uniformly without replacement from the window: a
 * pass keeps the indices not yet drawn in an array, and a draw swaps a
 * random entry to the end and pops it (Fisher-Yates, one step at a time).
 * New indices join the current pass; indices that left the window are
 * skipped when drawn (the caller checks); when the array runs empty a new
 * pass starts over the window. Each chunk keeps a use count, which travels
 * with the chunk so that the unpacker picks different positions on each
 * use; a chunk found bad is marked DROPPED for good.
 *
 * Sharding. With world size N > 1, a source keeps only the chunks whose
 * identity hash (source key and member index) is its rank modulo N.
 *
 * Fresh lane. A `fresh` request (lc_chunk_window_fresh) takes the chunks
 * that joined since the previous one (or since the initial load, or, when
 * that counted games since an anchor, since the first of those) into a
 * list that the pool draws from before the pass, in random order: their
 * games reach the trainer first. Such a draw is one more use of the chunk
 * (its turn in the pass stays).
 *
 * Anchor. since_anchor counts the chunks of sources newer than the anchor
 * (the pool adds them as sources arrive); a chunk found bad leaves the
 * count if its source was counted since the last reset. `set` changes the
 * key and leaves the count; `reset` sets the key to the newest source key
 * seen, returns the count and zeroes it; count_from is the key the count
 * runs from (the anchor of the initial load or of the last reset).
 */
#ifndef LC_STAGES_POOL_CHUNK_WINDOW_H
#define LC_STAGES_POOL_CHUNK_WINDOW_H

#include "core/deque.h"
#include "core/rng.h"
#include "format/lc0/chunk_source.h"
#include "stages/pool/chunk_store.h"

#include <stdbool.h>
#include <stdint.h>

/* A chunk's use count once it was found bad. */
#define LC_CHUNK_WINDOW_DROPPED UINT32_MAX

typedef struct lc_chunk_window_source {
    lc_chunk_source *src;
    uint64_t base;            /* global index of its first kept chunk */
    uint32_t n;               /* kept chunks */
    uint32_t *members;        /* kept member indices; NULL: all, in order */
    uint32_t *uses;           /* per kept chunk; LC_CHUNK_WINDOW_DROPPED when bad */
    lc_packed_chunk **packed; /* per kept chunk: its stored form, or NULL */
    uint8_t *unfit;           /* per kept chunk: did not fit in the store when first used */
    float *weight;            /* per kept chunk: its Hanse weight, NaN until weighed; NULL: none */
    uint32_t released;        /* leading chunks below the window whose stored form is gone */
    uint32_t n_dropped;       /* kept chunks found bad */
    bool since_counted;       /* its chunks were counted in since_anchor ... */
    uint64_t anchor_gen;      /* ... before this many resets */
    uint32_t arrived_ms;      /* when it was appended: monotonic ms mod 2^32 */
} lc_chunk_window_source;

typedef struct lc_chunk_window {
    uint64_t size;         /* chunk_pool_size */
    lc_chunk_store *store; /* where the chunks' stored forms are accounted */
    lc_deque sources;      /* lc_chunk_window_source, oldest first */
    uint64_t upper;        /* next global index */
    uint64_t in_window;    /* kept chunks of the sources held */
    uint64_t dropped_held; /* chunks found bad in the sources held */
    uint64_t *pending;     /* undrawn indices of the current pass */
    size_t n_pending, cap_pending;
    lc_rng rng;
    char *anchor;
    char *newest_key;
    char *count_from; /* the key since_anchor counts from (NULL: the start) */
    uint64_t since_anchor;
    uint64_t anchor_gen; /* anchor resets so far */
    /* The fresh lane: chunks from fresh_from on are the next request's;
     * fresh holds the indices a request took and not yet drawn. */
    uint64_t fresh_from;
    uint64_t *fresh;
    size_t n_fresh, cap_fresh;
    /* The paths of the sources held, for lc_chunk_window_find_path: an open
     * addressing table of (hash of the path, base of its source); hash 0
     * is an empty slot, 1 a removed one. */
    struct lc_chunk_window_path {
        uint64_t hash, base;
    } * paths;
    size_t paths_cap, paths_used;
} lc_chunk_window;

/* anchor may be NULL or "" (none). */
void lc_chunk_window_init(lc_chunk_window *w, uint64_t size, lc_chunk_store *store,
                          const char *anchor, uint64_t seed);
void lc_chunk_window_fini(lc_chunk_window *w);

/* The lowest global index inside the window. */
uint64_t lc_chunk_window_lower(const lc_chunk_window *w);
lc_chunk_window_source *lc_chunk_window_at(lc_chunk_window *w, size_t i);

/* The entry for a source: which of its chunks this rank keeps (*other_rank:
 * how many it does not). false (and the source unref'd) when none. */
bool lc_chunk_window_entry(lc_chunk_window *w, lc_chunk_source *src, uint32_t world, uint32_t rank,
                           lc_chunk_window_source *e, uint64_t *other_rank);
void lc_chunk_window_entry_free(lc_chunk_window *w, lc_chunk_window_source *e);
/* Let chunk pos of a source leave the store. */
void lc_chunk_window_unstore(lc_chunk_window *w, lc_chunk_window_source *e, uint32_t pos);

/* Append a kept source at the upper bound; its chunks join the pass. */
void lc_chunk_window_append(lc_chunk_window *w, lc_chunk_window_source *e);
/* The source held for path (a file written again), or NULL. */
lc_chunk_window_source *lc_chunk_window_find_path(lc_chunk_window *w, const char *path);
/* A file written again with other content: its old source's chunks leave
 * the window for good (not drawn again; the anchor's count keeps them: they
 * were games once). */
void lc_chunk_window_retire(lc_chunk_window *w, lc_chunk_window_source *e);
/* Note a source's key: the newest is the largest seen (by name). */
void lc_chunk_window_note_key(lc_chunk_window *w, const char *key);
/* The newest source's key is key (the pool's order decided it). */
void lc_chunk_window_set_newest(lc_chunk_window *w, const char *key);
/* Evict whole sources that fell out of the window; how many went. */
size_t lc_chunk_window_evict(lc_chunk_window *w);
/* Chunk pos of a held source is bad: dropped for good, out of the store,
 * out of the window's count and, when counted there, the anchor's. */
void lc_chunk_window_drop(lc_chunk_window *w, lc_chunk_window_source *e, uint32_t pos);
/* The source holding global index idx (*pos its chunk), NULL when evicted. */
lc_chunk_window_source *lc_chunk_window_find(lc_chunk_window *w, uint64_t idx, uint32_t *pos);

/* The source holding idx when idx is still inside the window, else NULL. */
lc_chunk_window_source *lc_chunk_window_find_live(lc_chunk_window *w, uint64_t idx, uint32_t *pos);
/* Chunk idx is bad: dropped (lc_chunk_window_drop) unless it left the window,
 * was dropped already or is stored (then it was read and checked: a file
 * that vanished since does not make it bad). true when this call dropped
 * it. */
bool lc_chunk_window_drop_unstored(lc_chunk_window *w, uint64_t idx);
/* Keep pk (a new reference) as chunk idx's stored form, if idx is in the
 * window, not dropped, not stored yet (two passes can hand one chunk to
 * two threads) and the store admits it. false when it did not fit (idx
 * then never tries again: lc_chunk_window_note_unfit). */
bool lc_chunk_window_store(lc_chunk_window *w, uint64_t idx, lc_packed_chunk *pk);
/* Chunk idx does not fit in the store: its later uses read it from disk
 * without packing it again, for its life in the window. */
void lc_chunk_window_note_unfit(lc_chunk_window *w, uint64_t idx);
/* Chunk idx's Hanse weight (the pool's stages/pool/hanse.h), kept for its life
 * in the window (entries' `weight`, NaN until set). */
void lc_chunk_window_set_weight(lc_chunk_window *w, uint64_t idx, double weight);

/* A new pass over the window (when the current one is empty). */
void lc_chunk_window_new_pass(lc_chunk_window *w);
/* Draw an index of the current pass (not empty). */
uint64_t lc_chunk_window_take(lc_chunk_window *w);

/* A fresh request: the chunks that joined since fresh_from (those still in
 * the window and not bad) go to the fresh list; fresh_from moves to the
 * upper bound. Returns how many were added; *first and *last are their
 * lowest and highest global indices (untouched when none). */
uint64_t lc_chunk_window_fresh(lc_chunk_window *w, uint64_t *first, uint64_t *last);
/* Take an index of the fresh list (in random order); false when empty. */
bool lc_chunk_window_take_fresh(lc_chunk_window *w, uint64_t *idx);

/* Set the anchor's key (the count stays). */
void lc_chunk_window_set_anchor(lc_chunk_window *w, const char *key);
/* Reset the anchor to the newest key; returns the count it had. */
uint64_t lc_chunk_window_reset_anchor(lc_chunk_window *w);

#endif
