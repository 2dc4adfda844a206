/*
 * Frames by reference (stages/items.h): the chain chunk_unpacker ->
 * shuffling_frame_sampler -> tensor_generator, each stage with 1, 2 or 4
 * threads, dense and packed, fed games of every record version (3 to 7,
 * made from the sample games of every input format), gives every frame's
 * row exactly once: the multiset of its rows is the multiset of the rows
 * made here from each record with the frame functions alone (the tensors a
 * frame by value made). When the stages are freed no frame cell is left.
 * A chain stopped mid-flight, with its frame queues discarded (as a
 * `fresh` request does) while it runs, leaves no cell either, round after
 * round, and reuses its cells (the cells carved stay within what the
 * chain can hold at once). A queue of frames that drops (both policies)
 * or is freed full frees the cells it drops.
 */
#include "check.h"
#include "frames.h"
#include "testutil.h"

#include "core/cells.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/thread.h"
#include "format/batch.h"
#include "format/lc0/chunk.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/frame.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_NS (60ull * 1000000000ull)
#define RESERVOIR 300
#define QCAP 256

static const char *const folders[] = {"lc0-909a408-fmt1", "lc0-v0.31.2-fmt1", "lc0-v0.31.2-fmt2",
                                      "lc0-v0.31.2-fmt3", "lc0-v0.31.2-fmt5"};
#define N_FOLDERS (sizeof folders / sizeof folders[0])

/* The input: one game of each folder as records of each version 3..7. */
typedef struct games {
    lc_chunk_item chunks[N_FOLDERS * 5];
    size_t n;
    uint64_t positions;
} games;

static void make_games(games *g)
{
    memset(g, 0, sizeof *g);
    for (size_t i = 0; i < N_FOLDERS; i++) {
        char *dir = lc_xasprintf("%s/%s", tu_test_data(), folders[i]);
        char *path = tu_first_gz(dir);
        if (!path) {
            fprintf(stderr, "no game in %s\n", dir);
            exit(2);
        }
        lc_chunk_source *src = tu_chunk_source(path);
        lc_chunk_data d;
        CHECK_OK(lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, &d, NULL));
        lc_frame *f = calloc(d.n_records, sizeof *f);
        for (size_t r = 0; r < d.n_records; r++)
            CHECK_OK(lc_frame_from_record(d.data + r * d.record_size, d.version, &f[r], NULL));
        for (uint32_t v = 3; v <= 7; v++) {
            size_t size;
            uint8_t *recs = tf_records(f, (uint32_t)d.n_records, v, &size);
            g->chunks[g->n] = (lc_chunk_item){.data = recs,
                                              .version = v,
                                              .record_size = (uint32_t)size,
                                              .n_records = (uint32_t)d.n_records,
                                              .global_index = g->n,
                                              .flags = LC_ITEM_CHECKED};
            g->n++;
            g->positions += d.n_records;
        }
        for (size_t r = 0; r < d.n_records; r++)
            lc_frame_fini(&f[r]);
        free(f);
        lc_chunk_data_fini(&d);
        lc_chunk_source_unref(src);
        free(path);
        free(dir);
    }
}

static void free_games(games *g)
{
    for (size_t i = 0; i < g->n; i++)
        free(g->chunks[i].data);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

#define FNV0 0xcbf29ce484222325ull

/* A packed row's policy: its k slots trimmed of the padding that repeats
 * the last entry (indices ascend, so an entry never repeats). */
static uint64_t hash_sparse(uint64_t h, const uint16_t *idx, const float *val, unsigned k)
{
    unsigned m = k;
    while (m > 1 && idx[m - 1] == idx[m - 2] && memcmp(&val[m - 1], &val[m - 2], 4) == 0)
        m--;
    if (m == 1 && idx[0] == 0 && val[0] == -1.0f)
        m = 0; /* no entry at all */
    h = fnv(h, idx, m * sizeof *idx);
    return fnv(h, val, m * sizeof *val);
}

/* The row a frame makes, hashed, from the frame functions alone. */
static uint64_t frame_row(const lc_frame *f, bool packed)
{
    uint64_t h = FNV0;
    float values[LC_FRAME_VALUES];
    if (!packed) {
        static float planes[LC_INPUT_PLANES * 64], policy[LC_POLICY_SIZE];
        lc_frame_input_planes_as(f, LC_PLANES_INPUT_FORMAT, planes);
        lc_frame_policy(f, policy);
        h = fnv(fnv(h, planes, sizeof planes), policy, sizeof policy);
    } else {
        uint8_t bits[LC_INPUT_PLANES * 8];
        float aux[8];
        static uint16_t idx[LC_POLICY_SIZE];
        static float val[LC_POLICY_SIZE];
        lc_frame_packed_planes_as(f, LC_PLANES_INPUT_FORMAT, bits, aux);
        unsigned k = f->n_policy ? f->n_policy : 1;
        lc_frame_policy_sparse(f, idx, val, k);
        h = hash_sparse(fnv(fnv(h, bits, sizeof bits), aux, sizeof aux), idx, val, k);
    }
    lc_frame_values(f, values);
    return fnv(h, values, sizeof values);
}

/* Row r of a batch, hashed the same way. */
static uint64_t batch_row(lc_batch *b, uint64_t r, bool packed)
{
    uint64_t h = FNV0;
    unsigned t = 0;
    if (!packed) {
        h = fnv(h, (const float *)lc_batch_tensor(b, 0) + r * LC_INPUT_PLANES * 64,
                LC_INPUT_PLANES * 64 * sizeof(float));
        h = fnv(h, (const float *)lc_batch_tensor(b, 1) + r * LC_POLICY_SIZE,
                LC_POLICY_SIZE * sizeof(float));
        t = 2;
    } else {
        unsigned k = (unsigned)b->layout->tensors[2].shape[1];
        h = fnv(h, (const uint8_t *)lc_batch_tensor(b, 0) + r * LC_INPUT_PLANES * 8,
                LC_INPUT_PLANES * 8);
        h = fnv(h, (const float *)lc_batch_tensor(b, 1) + r * 8, 8 * sizeof(float));
        h = hash_sparse(h, (const uint16_t *)lc_batch_tensor(b, 2) + r * k,
                        (const float *)lc_batch_tensor(b, 3) + r * k, k);
        t = 4;
    }
    return fnv(h, (const float *)lc_batch_tensor(b, t) + r * LC_FRAME_VALUES,
               LC_FRAME_VALUES * sizeof(float));
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Every row the records make, as the unpacker keeps them (a known input
 * format), hashed, sorted; how many into *n. */
static uint64_t *reference_rows(const games *g, bool packed, size_t *n)
{
    uint64_t *rows = calloc(g->positions, sizeof *rows);
    *n = 0;
    for (size_t i = 0; i < g->n; i++) {
        const lc_chunk_item *c = &g->chunks[i];
        for (uint32_t r = 0; r < c->n_records; r++) {
            lc_frame f;
            CHECK_OK(
                lc_frame_from_record(c->data + (size_t)r * c->record_size, c->version, &f, NULL));
            if (lc_input_format_known(f.input_format))
                rows[(*n)++] = frame_row(&f, packed);
            lc_frame_fini(&f);
        }
    }
    qsort(rows, *n, sizeof *rows, cmp_u64);
    return rows;
}

typedef struct chain {
    lc_queue *in;
    lc_stage *unpacker, *sampler, *tensors;
} chain;

static void chain_start(chain *ch, unsigned threads, bool packed)
{
    char yaml[160];
    ch->in = lc_queue_new("chunks", &lc_item_chunk, 16, LC_OVERFLOW_BLOCK);
    snprintf(yaml, sizeof yaml, "{sampling_rate: 1.0, st_targets: keep, threads: %u}", threads);
    ch->unpacker = lc_standalone_running("chunk_unpacker", "unpacker", yaml, ch->in, QCAP, 7);
    snprintf(yaml, sizeof yaml, "{reservoir_size: %d, threads: %u}", RESERVOIR, threads);
    ch->sampler = lc_standalone_running("shuffling_frame_sampler", "sampler", yaml,
                                        ch->unpacker->output, QCAP, 7);
    snprintf(yaml, sizeof yaml, "{batch_size: 64, packed: %s, threads: %u}",
             packed ? "true" : "false", threads);
    ch->tensors =
        lc_standalone_running("tensor_generator", "tensors", yaml, ch->sampler->output, 4, 7);
}

/* As a pipeline stops: every stage, which closes every queue. */
static void chain_stop(chain *ch)
{
    lc_standalone_stop(ch->unpacker);
    lc_standalone_stop(ch->sampler);
    lc_standalone_stop(ch->tensors);
}

static void chain_free(chain *ch)
{
    chain_stop(ch);
    lc_standalone_free(ch->tensors);
    lc_standalone_free(ch->sampler);
    lc_standalone_free(ch->unpacker);
    lc_queue_free(ch->in);
}

static uint64_t frames_live(void)
{
    lc_cells_stats st;
    lc_frame_cells_stats(&st);
    return st.live;
}

static void test_rows_once(const games *g, unsigned threads, bool packed)
{
    size_t n_ref;
    uint64_t *ref = reference_rows(g, packed, &n_ref);
    chain ch;
    chain_start(&ch, threads, packed);
    for (size_t i = 0; i < g->n; i++) {
        lc_chunk_item c = g->chunks[i];
        c.data = malloc((size_t)c.n_records * c.record_size);
        memcpy(c.data, g->chunks[i].data, (size_t)c.n_records * c.record_size);
        CHECK_OK(lc_queue_put(ch.in, &c, NULL));
    }
    lc_queue_close(ch.in);
    uint64_t *rows = calloc(g->positions + 1, sizeof *rows);
    size_t n = 0;
    lc_batch_item item;
    while (lc_queue_get_until(ch.tensors->output, &item, NULL, lc_now_ns() + WAIT_NS) == 0) {
        for (uint64_t r = 0; r < item.batch->rows && n <= g->positions; r++)
            rows[n++] = batch_row(item.batch, r, packed);
        lc_item_batch.dispose(&item);
    }
    qsort(rows, n, sizeof *rows, cmp_u64);
    if (n != n_ref || memcmp(rows, ref, n * sizeof *rows) != 0)
        fprintf(stderr, "threads %u, %s: %zu rows, %zu made from the records\n", threads,
                packed ? "packed" : "dense", n, n_ref);
    CHECK_EQ_U64(n, n_ref);
    CHECK(n == n_ref && memcmp(rows, ref, n * sizeof *rows) == 0);
    chain_free(&ch);
    CHECK_EQ_U64(frames_live(), 0);
    free(rows);
    free(ref);
}

typedef struct feeder {
    lc_queue *in;
    const games *g;
} feeder;

/* Chunks round and round until the input closes (a stop). */
static void *feed(void *arg)
{
    feeder *fd = arg;
    for (size_t i = 0;; i = (i + 1) % fd->g->n) {
        lc_chunk_item c = fd->g->chunks[i];
        c.data = malloc((size_t)c.n_records * c.record_size);
        memcpy(c.data, fd->g->chunks[i].data, (size_t)c.n_records * c.record_size);
        if (lc_queue_put(fd->in, &c, NULL) != 0) {
            free(c.data);
            return NULL;
        }
    }
}

/* Take n batches (the chain runs); false when it stopped giving them. */
static bool take_batches(chain *ch, int n)
{
    lc_batch_item item;
    for (int i = 0; i < n; i++) {
        if (lc_queue_get_until(ch->tensors->output, &item, NULL, lc_now_ns() + WAIT_NS) != 0)
            return false;
        lc_item_batch.dispose(&item);
    }
    return true;
}

static void test_stop_mid_flight(const games *g, unsigned threads)
{
    /* What the chain holds at once: the reservoir, two frame queues, a
     * block in each box (an unpacker's outbox holds a chunk's frames), the
     * frames of a batch being taken in turns; and two magazines a thread
     * and one more (core/cells.h). */
    uint64_t most = RESERVOIR + 2 * QCAP + threads * (3 * 64 + 2 * 512) + 64;
    uint64_t bound = most + 2 * LC_CELLS_MAGAZINE * (3 * threads + 2) + LC_CELLS_MAGAZINE;
    for (int round = 0; round < 3; round++) {
        chain ch;
        chain_start(&ch, threads, round % 2 == 1);
        feeder fd = {.in = ch.in, .g = g};
        lc_thread t;
        lc_thread_start(&t, "feeder", feed, &fd);
        CHECK(take_batches(&ch, 20));
        /* A fresh request's discard of everything below the pool. */
        lc_queue_discard(ch.unpacker->output);
        lc_queue_discard(ch.sampler->output);
        CHECK(take_batches(&ch, 10));
        lc_queue_discard(ch.sampler->output);
        chain_stop(&ch); /* mid-flight: every queue and box holds frames */
        lc_thread_join(&t);
        chain_free(&ch);
        lc_cells_stats st;
        lc_frame_cells_stats(&st);
        CHECK_EQ_U64(st.live, 0);
        /* In all, this test's earlier calls (fewer threads) included. */
        if (st.carved > bound || getenv("LC_TEST_VERBOSE"))
            fprintf(stderr, "threads %u, round %d: %llu cells carved, bound %llu\n", threads, round,
                    (unsigned long long)st.carved, (unsigned long long)bound);
        CHECK(st.carved <= bound);
    }
}

static void test_dropping_queues(void)
{
    static const lc_overflow policies[] = {LC_OVERFLOW_DROP_NEWEST, LC_OVERFLOW_KEEP_NEWEST};
    for (int p = 0; p < 2; p++) {
        lc_queue *q = lc_queue_new("frames", &lc_item_frame, 4, policies[p]);
        lc_frame f;
        memset(&f, 0, sizeof f);
        for (int i = 0; i < 10; i++) {
            f.plies_left = (float)i;
            CHECK_OK(lc_standalone_put_frame(q, &f));
        }
        CHECK_EQ_U64(frames_live(), 4);
        CHECK_OK(lc_standalone_get_frame(q, &f, lc_now_ns() + WAIT_NS));
        CHECK_EQ_INT((int)f.plies_left, p == 0 ? 0 : 6);
        CHECK_EQ_U64(frames_live(), 3);
        lc_queue_free(q);
        CHECK_EQ_U64(frames_live(), 0);
    }
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    games g;
    make_games(&g);
    CHECK(g.n == N_FOLDERS * 5);
    test_dropping_queues();
    /* First, while the cells carved are this test's alone. */
    test_stop_mid_flight(&g, 1);
    test_stop_mid_flight(&g, 3);
    static const unsigned threads[] = {1, 2, 4};
    for (int packed = 0; packed <= 1; packed++)
        for (size_t t = 0; t < 3; t++)
            test_rows_once(&g, threads[t], packed);
    free_games(&g);
    return check_finish();
}
