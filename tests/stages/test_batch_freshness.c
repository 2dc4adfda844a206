/*
 * A batch's freshness (stages/batcher.h, the summary its item carries and
 * the stream's batch frame tells): tensor_generator run standalone on
 * frames whose origins are set here, the summary of every batch checked
 * exactly against one worked out by sorting the batch's arrivals: the
 * newest game's sequence, the rows of fresh draws, the rows of known
 * origin, and the newest, median ((n - 1) / 2-th youngest) and oldest
 * arrival. The arrivals of a batch come in the shapes a run makes and a
 * selection can get wrong: all of one game, a few games each many times
 * (a batch at sampling 1.0), all different, in order and in reverse, with
 * rows of unknown origin among them, and a partial last batch.
 */
#include "check.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "format/batch.h"
#include "format/lc0/frame.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 256
#define GET_TIMEOUT_NS (10ull * 1000000000ull)

enum { ONE_GAME, FEW_GAMES, ALL_DIFFERENT, ASCENDING, DESCENDING, SOME_UNKNOWN, N_SHAPES };

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t next_rand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* The origin of row r of a batch of the given shape; base: now in ms, and
 * every arrival up to a minute before it. */
static lc_frame_origin origin_of(int shape, uint32_t r, uint32_t base, const uint32_t *games)
{
    lc_frame_origin o = {.seq = 1000 + r};
    uint32_t g;
    switch (shape) {
    case ONE_GAME:
        g = 0;
        break;
    case FEW_GAMES:
    case SOME_UNKNOWN:
        g = next_rand() % 7;
        break;
    case ALL_DIFFERENT:
        g = 8 + r;
        break;
    case ASCENDING:
        g = 8 + r;
        o.arrived_ms = base - 60000 + r * 37;
        break;
    default: /* DESCENDING */
        g = 8 + r;
        o.arrived_ms = base - r * 41;
        break;
    }
    if (shape != ASCENDING && shape != DESCENDING)
        o.arrived_ms = base - games[g];
    if (g < 8)
        o.seq = 10 + g; /* the rows of one game share its sequence */
    if (next_rand() % 5 == 0)
        o.flags = LC_ORIGIN_FRESH;
    if (shape == SOME_UNKNOWN && next_rand() % 3 == 0)
        o = (lc_frame_origin){0};
    return o;
}

static int by_arrival_newest_first(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x < y) - (x > y);
}

/* The summary worked out by sorting. */
static lc_batch_origin expected(const lc_frame_origin *o, uint32_t rows)
{
    lc_batch_origin e = {0};
    uint32_t *arrived = malloc(rows * sizeof *arrived), n = 0;
    for (uint32_t r = 0; r < rows; r++) {
        if (!o[r].seq)
            continue;
        arrived[n++] = o[r].arrived_ms;
        e.newest_seq = o[r].seq > e.newest_seq ? o[r].seq : e.newest_seq;
        e.fresh_rows += (o[r].flags & LC_ORIGIN_FRESH) != 0;
    }
    if (n) {
        qsort(arrived, n, sizeof *arrived, by_arrival_newest_first);
        e.rows_known = n;
        e.arrived_newest_ms = arrived[0];
        e.arrived_median_ms = arrived[(n - 1) / 2];
        e.arrived_oldest_ms = arrived[n - 1];
    }
    free(arrived);
    return e;
}

static lc_stage *new_generator(lc_queue *in)
{
    char yaml[64];
    snprintf(yaml, sizeof yaml, "batch_size: %d\nthreads: 1\npacked: true\n", BATCH);
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_standalone_new(lc_stage_class_find("tensor_generator"), "tensors", yaml, in, 64, NULL,
                          &s, &err) != 0) {
        fprintf(stderr, "tensor_generator: %s\n", err.msg);
        exit(2);
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    return s;
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    enum { ROUNDS = 3, PARTIAL = 100 };
    const uint32_t n_batches = ROUNDS * N_SHAPES + 1;
    lc_frame_origin *origins = calloc((size_t)n_batches * BATCH, sizeof *origins);
    uint32_t base = (uint32_t)(lc_now_ns() / 1000000u);
    lc_queue *in = lc_queue_new("in", &lc_item_frame, (size_t)n_batches * BATCH, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_generator(in);
    uint32_t total = 0;
    for (uint32_t b = 0; b < n_batches; b++) {
        uint32_t games[8 + BATCH], rows = b + 1 < n_batches ? BATCH : PARTIAL;
        for (uint32_t g = 0; g < 8 + BATCH; g++)
            games[g] = next_rand() % 60000;
        for (uint32_t r = 0; r < rows; r++) {
            lc_frame f;
            memset(&f, 0, sizeof f);
            f.version = 6;
            f.input_format = 1;
            f.origin = origin_of((int)(b % N_SHAPES), r, base, games);
            origins[total++] = f.origin;
            CHECK_OK(lc_standalone_put_frame(in, &f));
        }
    }
    lc_queue_close(in);
    uint32_t at = 0;
    for (uint32_t b = 0; b < n_batches; b++) {
        lc_batch_item item;
        int rc = lc_queue_get_until(s->output, &item, NULL, lc_now_ns() + GET_TIMEOUT_NS);
        CHECK_OK(rc);
        if (rc != 0)
            break;
        uint32_t rows = (uint32_t)item.batch->rows;
        CHECK_EQ_U64(rows, b + 1 < n_batches ? BATCH : PARTIAL);
        lc_batch_origin want = expected(origins + at, rows), got = item.origin;
        at += rows;
        CHECK_EQ_U64(got.newest_seq, want.newest_seq);
        CHECK_EQ_U64(got.rows_known, want.rows_known);
        CHECK_EQ_U64(got.fresh_rows, want.fresh_rows);
        CHECK_EQ_U64(got.arrived_newest_ms, want.arrived_newest_ms);
        CHECK_EQ_U64(got.arrived_median_ms, want.arrived_median_ms);
        CHECK_EQ_U64(got.arrived_oldest_ms, want.arrived_oldest_ms);
        if (got.arrived_median_ms != want.arrived_median_ms)
            fprintf(stderr, "batch %u (shape %u): median arrival %u, want %u\n", b, b % N_SHAPES,
                    got.arrived_median_ms, want.arrived_median_ms);
        lc_batch_free(item.batch);
    }
    CHECK_EQ_U64(at, total);
    lc_standalone_free(s);
    lc_queue_free(in);
    free(origins);
    return check_finish();
}
