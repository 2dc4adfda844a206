/*
 * items: the item types that travel on queues between stages.
 *
 * Every item type has a name that the factory checks when it wires a stage to
 * its input, and a disposer that frees the item's heap data when a queue
 * drops or discards it. Ownership of that data passes with the item.
 */
#ifndef LC_STAGES_ITEMS_H
#define LC_STAGES_ITEMS_H

#include "core/queue.h"
#include "format/batch_stream.h"

#include <stdint.h>

struct lc_chunk_source;
struct lc_packed_chunk;

enum {
    /* The file was found by the initial scan (not by watching). */
    LC_ITEM_INITIAL = 1u << 0,
    /* Not a file: the initial scan is complete. `seq` then holds the number
     * of files the initial scan emitted before this marker. */
    LC_ITEM_SCAN_DONE = 1u << 1,
};

/* "path": a file to load. */
typedef struct lc_path_item {
    char *path; /* owned; NULL for the marker */
    /* Where the source's key begins in path: the path relative to the data
     * folder, so that two games of one name in two subfolders are two keys
     * (0: the key is the basename; format/lc0/chunk_source.h). */
    uint32_t key_at;
    uint32_t flags;
    uint64_t seq; /* position in the provider's output, from 0 */
} lc_path_item;

/* "chunk_source": an opened source (a .gz or an indexed .tar). */
typedef struct lc_source_item {
    struct lc_chunk_source *source; /* one reference, owned; NULL for the marker */
    uint32_t flags;
    uint64_t seq; /* with LC_ITEM_SCAN_DONE: number of initial sources emitted */
} lc_source_item;

/* "chunk": one chunk (game) with its identity in the pool: its records as
 * inflated (data), or, from a pool with a chunk store, its packed form
 * (format/lc0/packed_chunk.h), one of the two. */
typedef struct lc_chunk_item {
    uint8_t *data;                  /* owned: n_records * record_size bytes; NULL with packed */
    struct lc_packed_chunk *packed; /* one reference, owned; NULL with data */
    uint32_t version;
    uint32_t record_size; /* of data; 0 with packed */
    uint32_t n_records;
    uint32_t use_count;             /* times this chunk was drawn before, from 0 */
    uint64_t global_index;          /* its index in the pool (stable while it lives) */
    struct lc_chunk_source *source; /* one reference, owned: names it in logs */
    uint32_t member;                /* chunk index within the source */
    uint32_t flags;                 /* LC_ITEM_* */
    /* A fingerprint of the bytes data was read from (lc_chunk_data's
     * content: the gzip member as stored), 0 when unknown: with the source
     * and member, what chunk_rescorer remembers a game by. */
    uint64_t content;
    /* With packed: chunk_rescorer's changes to the game (format/lc0/
     * rescore_patch.h), which chunk_unpacker applies to each position it
     * decodes; NULL for none. The packed chunk's (LC_AUX_RESCORE), or, with
     * LC_ITEM_OWN_PATCH, the item's own. */
    const float *patch;
    /* Its arrival, for the freshness of the batches (format/lc0/frame.h,
     * lc_frame_origin): the game's ingest sequence in this run, from 1 (the
     * pool's global index + 1, chunk_reader's count; 0: unknown), and when
     * it arrived (monotonic ms mod 2^32: the pool's ingestion of its source,
     * chunk_reader's read). With LC_ITEM_FRESH: drawn by a fresh request. */
    uint64_t seq;
    uint32_t arrived_ms;
} lc_chunk_item;

/*
 * "frame": one position in compact form (format/lc0/frame.h), by
 * reference: the item is a pointer (struct lc_frame *) to a frame in a cell
 * of the frame cells (core/cells.h), which the item owns.
 *
 * Where a frame's bytes live, from the store to the pipe: chunk_unpacker
 * takes a cell (lc_frame_cell_new, from its thread's magazine) and decodes
 * the position into it, once; from then on only the pointer moves: through
 * the unpacker's outbox, the queue's ring, the sampler's inbox, its
 * reservoir's slot (8 bytes a frame), its outbox, the next queue, the
 * tensor generator's inbox. The tensor generator reads the frame where it
 * is, writes its row of the batch (dense or packed), and frees it
 * (lc_frame_cell_free: the overflow policy arrays, then the cell back to
 * that thread's magazine). Whoever holds the pointer owns the frame: a
 * queue that drops or discards it, an inbox or outbox at a stop, a
 * sampler's reservoir at fini dispose of it (lc_item_frame's dispose), so
 * no cell outlives its pipeline. The batch is the only copy after that.
 */
struct lc_frame;
/* Bytes of a frame (sizeof(lc_frame), checked in items.c). */
#define LC_FRAME_CELL_BYTES 1352
/* A cell for a frame: its contents undefined, but overflow_idx and
 * overflow_val NULL, so that lc_frame_cell_free is right for a frame
 * whose making failed. */
struct lc_frame *lc_frame_cell_new(void);
/* lc_frame_fini, then the cell back; NULL is fine. */
void lc_frame_cell_free(struct lc_frame *f);
/* A new cell holding a deep copy of f (tests, benchmarks: a frame made by
 * value, put on a queue of frames). */
struct lc_frame *lc_frame_cell_dup(const struct lc_frame *f);
/* Ask the memory for the frame's bytes, to read them soon (a frame read
 * first by the tensor generator, long after it was written, is in no
 * cache: fetched a frame ahead, its lines arrive while the one before is
 * written out). */
static inline void lc_frame_cell_prefetch(const struct lc_frame *f)
{
    for (size_t at = 0; at < LC_FRAME_CELL_BYTES; at += 64)
        __builtin_prefetch((const char *)f + at, 0, 3);
}
/* Frames in cells now (made and not freed), and the cells' memory. */
struct lc_cells_stats;
void lc_frame_cells_stats(struct lc_cells_stats *out);

/* "batch": a batch of tensors (format/batch.h). */
struct lc_batch;
/* What a batch's rows say of their games' arrival, summed up by the batcher
 * (stages/batcher.h) from the frames' origins; the writer turns it into
 * the stream's freshness (format/batch_stream.h) when it writes the batch.
 * Times are monotonic milliseconds mod 2^32, of the rows whose origin is
 * known (rows_known of them; none: all 0). */
typedef struct lc_batch_origin {
    uint64_t newest_seq; /* the newest game's ingest sequence among the rows */
    uint32_t rows_known;
    uint32_t fresh_rows; /* rows of games drawn by a fresh request */
    uint32_t arrived_oldest_ms, arrived_median_ms, arrived_newest_ms;
} lc_batch_origin;

/* The stream's freshness of a batch of that origin, written now: the ages
 * of its games, in ms (all 0 when no row's origin is known). */
void lc_batch_origin_freshness(const lc_batch_origin *o, lc_stream_freshness *out);

typedef struct lc_batch_item {
    struct lc_batch *batch; /* owned */
    uint64_t seq;           /* batch number from 0 */
    uint32_t flags;         /* LC_ITEM_END_OF_STREAM on the last one of a finite run */
    lc_batch_origin origin;
} lc_batch_item;

/* "game": the rows of one game of a Parquet table, sorted by ply. One
 * allocation (`mem`) holds the rows and every string they point to. */
struct lc_chess_row;
typedef struct lc_game_item {
    struct lc_chess_row *rows; /* n_rows, inside mem */
    uint32_t n_rows;
    const char *file; /* basename of the Parquet file, inside mem */
    const char *id;   /* game_id as text, inside mem */
    void *mem;        /* owned */
    uint64_t seq;     /* game number from 0 on this stage's output */
} lc_game_item;

enum {
    /* A finite (sequential) run ends after this item. */
    LC_ITEM_END_OF_STREAM = 1u << 2,
    /* A chunk whose every record passed the validator's checks upstream
     * (the pool's chunk store checks what it stores): chunk_validator
     * passes it on. */
    LC_ITEM_CHECKED = 1u << 3,
    /* The chunk's patch is its own (freed with it), not its packed chunk's:
     * a rescorer whose settings differ from those of the patch kept with it. */
    LC_ITEM_OWN_PATCH = 1u << 4,
    /* A chunk the pool drew through its fresh lane: a game that arrived
     * since the last `fresh` request, drawn before the others
     * (shuffling_chunk_pool.c). */
    LC_ITEM_FRESH = 1u << 5,
};

extern const lc_item_type lc_item_path;
extern const lc_item_type lc_item_source;
extern const lc_item_type lc_item_chunk;
extern const lc_item_type lc_item_frame;
extern const lc_item_type lc_item_batch;
extern const lc_item_type lc_item_game;
/* Not an item: in a class table, "any type" (see lc_stage_class). */
extern const lc_item_type lc_item_any;

#endif
