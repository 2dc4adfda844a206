/*
 * batcher: how a stage's worker threads fill batches row by row and hand
 * them on, shared by every stage that outputs batches.
 *
 * A stage keeps one lc_batch_sink (its buffer pool and counters); each worker
 * keeps one lc_batcher. A worker asks for the next free row (lc_batcher_row),
 * writes every byte of it, and commits it; a full batch is emitted. A row
 * that is not committed (a sample that turned out invalid) is simply
 * overwritten by the next one.
 *
 * The end of a finite run: with one worker (`hold` true), a full batch waits
 * until a row of the next batch is committed before it leaves, so that the
 * last batch of a run carries LC_ITEM_END_OF_STREAM even when the run fills
 * it exactly. lc_batcher_finish emits what is left: the held batch, then a
 * partial batch (rows < batch size, the unused rows zeroed).
 *
 * Deterministic mode (stage.h's turns), for a stage of several workers:
 * each worker takes the inputs of one batch at a time with a ticket and
 * fills its rows (turns true: a full batch is kept back, not emitted), then
 * lc_batcher_hand_on hands it on at the ticket's turn. The sink holds the
 * batch handed on last until the next turn, as one worker holds it, so that
 * the last batch of a run carries LC_ITEM_END_OF_STREAM here too.
 *
 * Freshness. A worker that knows where a row's game came from notes it
 * (lc_batcher_note, before the commit); a full batch's item carries the
 * summary (stages/items.h, lc_batch_origin: the newest game, the rows from
 * fresh draws, the oldest, median and newest arrival), which the writer
 * turns into the ages the stream tells. Rows never noted are unknown.
 */
#ifndef LC_STAGES_BATCHER_H
#define LC_STAGES_BATCHER_H

#include "format/batch.h"
#include "format/lc0/frame.h"
#include "stages/items.h"
#include "stages/stage.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct lc_batch_sink {
    lc_batch_pool *pool;                    /* recycled buffers: every byte of a row is written */
    atomic_uint_fast64_t seq;               /* next batch number */
    atomic_uint_fast64_t n_batches, n_rows; /* since the last flush: rows of its stage */
    lc_batch *held;                         /* in turns: the batch handed on last */
    lc_batch_origin held_origin;            /* and its freshness */
} lc_batch_sink;

/* Keeps up to 2 * threads + 16 idle buffers: enough for the output queue,
 * the consumer and the workers. */
void lc_batch_sink_init(lc_batch_sink *k, const lc_batch_layout *layout, unsigned threads);
void lc_batch_sink_fini(lc_batch_sink *k); /* batches still out keep the pool alive */

typedef struct lc_batcher {
    lc_stage *stage;
    lc_batch_sink *sink;
    bool hold;
    lc_batch *b;    /* the batch being filled, NULL before its first row */
    lc_batch *held; /* a full batch waiting (hold mode) */
    uint64_t row;   /* next row of b */
    bool turns;     /* deterministic mode: full batches wait in ready for the turn */
    lc_batch *ready;
    lc_batch_origin ready_origin;
    /* Freshness: each row's origin (batch size of them, made at the first
     * note; NULL: none noted), scratch for the median, held's summary. */
    lc_frame_origin *origins;
    uint32_t *ages;
    lc_batch_origin held_origin;
} lc_batcher;

void lc_batcher_init(lc_batcher *bt, lc_stage *s, lc_batch_sink *k, bool hold);
/* The batch and the index of the next row to fill. */
lc_batch *lc_batcher_row(lc_batcher *bt, uint64_t *row);
/* Make b (a batch of another layout holding the rows before the next one)
 * the batch being filled, in place of the current one, which the caller has
 * freed. Returns b. */
lc_batch *lc_batcher_replace(lc_batcher *bt, lc_batch *b);
/* Where the row being written comes from (its game's origin). */
void lc_batcher_note(lc_batcher *bt, const lc_frame_origin *o);
/* The rows written so far were made of items a `fresh` request discarded
 * (lc_stage_inbox.stale): drop them, and a held batch, and start again. */
void lc_batcher_restart(lc_batcher *bt);
/* The row is written: count it, and emit a batch that is due. False when
 * the output closed (the batch is freed; the worker should return). */
bool lc_batcher_commit(lc_batcher *bt, lc_load_meter *meter);
/* In turns: wait for the ticket's turn and hand on the full batch made
 * since the last call (last: the input ended, hand on the rows there are,
 * ending the stream). False when the output closed or the stage stops. */
bool lc_batcher_hand_on(lc_batcher *bt, uint64_t ticket, bool last, lc_load_meter *meter);
/* At the end of the input: emit what is left unless the stage is stopping
 * (then it is freed), and release everything. */
void lc_batcher_finish(lc_batcher *bt, lc_load_meter *meter);

#endif
