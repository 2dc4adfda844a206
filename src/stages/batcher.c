#include "stages/batcher.h"

#include "core/clock.h"
#include "stages/items.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void lc_batch_sink_init(lc_batch_sink *k, const lc_batch_layout *layout, unsigned threads)
{
    k->pool = lc_batch_pool_new(layout, 2 * (size_t)threads + 16);
    atomic_init(&k->seq, 0);
    atomic_init(&k->n_batches, 0);
    atomic_init(&k->n_rows, 0);
}

void lc_batch_sink_fini(lc_batch_sink *k)
{
    lc_batch_free(k->held);
    k->held = NULL;
    lc_batch_pool_unref(k->pool);
    k->pool = NULL;
}

void lc_batcher_init(lc_batcher *bt, lc_stage *s, lc_batch_sink *k, bool hold)
{
    *bt = (lc_batcher){.stage = s, .sink = k, .hold = hold};
}

/* The k-th smallest of a[0 .. n - 1] (k < n), exactly, reordering a: a
 * quickselect with three-way partitions, so that the many equal ages of a
 * batch (the rows of one game) cost one pass. Expected linear time: per
 * batch, where sorting the ages showed as a tenth of the tensors' CPU. */
static uint32_t nth_smallest(uint32_t *a, uint32_t n, uint32_t k)
{
    uint32_t lo = 0, hi = n;
    while (hi - lo > 1) {
        uint32_t x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
        uint32_t pivot = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
        uint32_t lt = lo, i = lo, gt = hi; /* [lo, lt) < pivot, [lt, i) ==, [gt, hi) > */
        while (i < gt) {
            uint32_t v = a[i];
            if (v < pivot) {
                a[i++] = a[lt];
                a[lt++] = v;
            } else if (v > pivot) {
                a[i] = a[--gt];
                a[gt] = v;
            } else {
                i++;
            }
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return pivot;
    }
    return a[lo];
}

/* The freshness of rows 0 .. rows - 1 (the arrivals of those whose origin
 * is known, as monotonic ms mod 2^32). */
static lc_batch_origin sum_up(const lc_batcher *bt, uint64_t rows)
{
    lc_batch_origin o = {0};
    if (!bt->origins)
        return o;
    uint32_t now = (uint32_t)(lc_now_ns() / 1000000u), n = 0, youngest = UINT32_MAX, oldest = 0;
    for (uint64_t r = 0; r < rows; r++) {
        const lc_frame_origin *f = &bt->origins[r];
        if (!f->seq)
            continue;
        uint32_t age = now - f->arrived_ms; /* mod 2^32: right for 49 days */
        bt->ages[n++] = age;
        youngest = age < youngest ? age : youngest;
        oldest = age > oldest ? age : oldest;
        if (f->seq > o.newest_seq)
            o.newest_seq = f->seq;
        o.fresh_rows += (f->flags & LC_ORIGIN_FRESH) != 0;
    }
    if (!n)
        return o;
    o.rows_known = n;
    o.arrived_newest_ms = now - youngest;
    o.arrived_median_ms = now - nth_smallest(bt->ages, n, (n - 1) / 2);
    o.arrived_oldest_ms = now - oldest;
    return o;
}

void lc_batcher_note(lc_batcher *bt, const lc_frame_origin *o)
{
    if (!bt->origins) {
        uint64_t n = bt->b->layout->batch_size;
        bt->origins = lc_xcalloc(n, sizeof *bt->origins);
        bt->ages = lc_xcalloc(n, sizeof *bt->ages);
    }
    bt->origins[bt->row] = *o;
}

void lc_batcher_restart(lc_batcher *bt)
{
    lc_batch_free(bt->held);
    bt->held = NULL;
    bt->row = 0;
}

static bool emit(lc_batcher *bt, lc_batch *b, uint32_t flags, const lc_batch_origin *origin,
                 lc_load_meter *meter)
{
    lc_batch_item item = {
        .batch = b, .seq = atomic_fetch_add(&bt->sink->seq, 1), .flags = flags, .origin = *origin};
    /* Once on the queue the batch is the consumer's: it may be freed and
     * recycled by another worker before lc_stage_emit returns. */
    uint64_t rows = b->rows;
    if (lc_stage_emit(bt->stage, &item, meter) != 0) {
        lc_batch_free(b);
        return false;
    }
    atomic_fetch_add(&bt->sink->n_batches, 1);
    atomic_fetch_add(&bt->sink->n_rows, rows);
    return true;
}

/* A recycled buffer as the last batch of a run: its rows, the unused ones
 * cleared. Returns b. */
static lc_batch *partial(lc_batch *b, uint64_t rows)
{
    const lc_batch_layout *l = b->layout;
    b->rows = rows;
    for (uint32_t i = 0; i < l->n_tensors; i++) {
        const lc_tensor_desc *d = &l->tensors[i];
        uint64_t row_bytes = d->nbytes / l->batch_size;
        memset((uint8_t *)lc_batch_tensor(b, i) + rows * row_bytes, 0,
               (l->batch_size - rows) * row_bytes);
    }
    return b;
}

lc_batch *lc_batcher_row(lc_batcher *bt, uint64_t *row)
{
    if (!bt->b) {
        bt->b = lc_batch_pool_get(bt->sink->pool);
        bt->row = 0;
    }
    *row = bt->row;
    return bt->b;
}

lc_batch *lc_batcher_replace(lc_batcher *bt, lc_batch *b)
{
    bt->b = b;
    return b;
}

bool lc_batcher_commit(lc_batcher *bt, lc_load_meter *meter)
{
    if (bt->held) {
        /* A row of the next batch exists: the held one is not the last. */
        lc_batch *h = bt->held;
        bt->held = NULL;
        if (!emit(bt, h, 0, &bt->held_origin, meter))
            return false;
    }
    if (++bt->row < bt->b->layout->batch_size)
        return true;
    lc_batch *full = bt->b;
    lc_batch_origin origin = sum_up(bt, bt->row);
    bt->b = NULL;
    bt->row = 0;
    if (bt->turns) {
        bt->ready = full;
        bt->ready_origin = origin;
        return true;
    }
    if (bt->hold) {
        bt->held = full;
        bt->held_origin = origin;
        return true;
    }
    return emit(bt, full, 0, &origin, meter);
}

void lc_batcher_finish(lc_batcher *bt, lc_load_meter *meter)
{
    bool stopping = lc_run_state_stopping(&bt->stage->run);
    lc_batch_free(bt->ready); /* in turns: a stop before its turn */
    bt->ready = NULL;
    lc_batch *b = bt->b;
    uint64_t rows = bt->row;
    lc_batch_origin origin = sum_up(bt, rows);
    free(bt->origins);
    free(bt->ages);
    bt->origins = NULL;
    bt->ages = NULL;
    bt->b = NULL;
    if (stopping || rows == 0) {
        lc_batch_free(b);
        b = NULL;
    }
    if (bt->held) {
        lc_batch *h = bt->held;
        bt->held = NULL;
        if (stopping) {
            lc_batch_free(h);
        } else if (!emit(bt, h, b ? 0 : LC_ITEM_END_OF_STREAM, &bt->held_origin, meter)) {
            lc_batch_free(b);
            return;
        }
    }
    if (!b)
        return;
    partial(b, rows);
    emit(bt, b, bt->hold ? LC_ITEM_END_OF_STREAM : 0, &origin, meter);
}

bool lc_batcher_hand_on(lc_batcher *bt, uint64_t ticket, bool last, lc_load_meter *meter)
{
    lc_batch *b = bt->ready;
    lc_batch_origin origin = bt->ready_origin;
    bt->ready = NULL;
    if (last && bt->b) {
        if (bt->row) {
            origin = sum_up(bt, bt->row);
            b = partial(bt->b, bt->row);
        } else {
            lc_batch_free(bt->b);
        }
        bt->b = NULL;
        bt->row = 0;
    }
    if (!lc_stage_turn_wait(bt->stage, ticket, meter)) {
        lc_batch_free(b);
        return false;
    }
    lc_batch_sink *k = bt->sink;
    lc_batch *h = k->held;
    k->held = NULL;
    bool ok = !h || emit(bt, h, last && !b ? LC_ITEM_END_OF_STREAM : 0, &k->held_origin, meter);
    if (!ok) {
        lc_batch_free(b);
    } else if (b && last) {
        ok = emit(bt, b, LC_ITEM_END_OF_STREAM, &origin, meter);
    } else {
        k->held = b;
        k->held_origin = origin;
    }
    lc_stage_turn_end(bt->stage);
    return ok;
}
