/*
 * chunk_unpacker: successive uses of a chunk emit disjoint positions, so that
 * over 1/p uses every position comes out exactly once; positions_per_chunk
 * takes fixed-size disjoint slices; the choice depends only on the run seed
 * and the chunk's global index; file order without shuffling.
 */
#include "check.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "format/frame.h"
#include "format/record.h"
#include "pipeline/standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_RECORDS 37

/* A chunk whose record i has plies_left = i (the tag we read back). */
static lc_chunk_item make_chunk(uint64_t global, uint32_t use)
{
    lc_chunk_item c = {0};
    c.version = 6;
    c.record_size = LC_V6_RECORD_SIZE;
    c.n_records = N_RECORDS;
    c.data = calloc(N_RECORDS, LC_V6_RECORD_SIZE);
    for (uint32_t i = 0; i < N_RECORDS; i++) {
        uint8_t *r = c.data + (size_t)i * LC_V6_RECORD_SIZE;
        uint32_t six = 6, fmt = 1;
        float plies = (float)i;
        memcpy(r, &six, 4);
        memcpy(r + 4, &fmt, 4);
        memcpy(r + 8304, &plies, 4);
    }
    c.global_index = global;
    c.use_count = use;
    return c;
}

static lc_stage *new_unpacker(const char *yaml, lc_queue *in, uint64_t seed)
{
    lc_stage_env env = {.seed = seed, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_standalone_new(lc_stage_class_find("chunk_unpacker"), "unpack", yaml, in, 4096, &env,
                          &s, &err) != 0) {
        fprintf(stderr, "unpacker: %s\n", err.msg);
        exit(2);
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    return s;
}

/* Feed one use of a chunk and collect the tags that come out, in order. */
static int use_chunk(lc_stage *s, lc_queue *in, uint64_t global, uint32_t use, int *tags)
{
    lc_chunk_item c = make_chunk(global, use);
    CHECK_OK(lc_queue_put(in, &c, NULL));
    int n = 0;
    lc_frame f;
    /* The unpacker emits every picked position before it takes more input;
     * wait until its output stays empty for a moment. */
    while (lc_queue_get_until(s->output, &f, NULL, lc_now_ns() + 300000000u) == 0) {
        tags[n++] = (int)f.plies_left;
        lc_frame_fini(&f);
    }
    return n;
}

static void test_rate_disjoint(double rate, int uses)
{
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 16, LC_OVERFLOW_BLOCK);
    char yaml[128];
    snprintf(yaml, sizeof yaml, "sampling_rate: %g\nthreads: 2\n", rate);
    lc_stage *s = new_unpacker(yaml, in, 5);
    int seen[N_RECORDS] = {0};
    int total = 0;
    for (int u = 0; u < uses; u++) {
        int tags[N_RECORDS];
        int n = use_chunk(s, in, 1234, (uint32_t)u, tags);
        /* About p*n each: the blocks differ by at most one. */
        CHECK(n >= (int)(N_RECORDS / uses) && n <= (int)(N_RECORDS / uses) + 1);
        for (int i = 0; i < n; i++)
            seen[tags[i]]++;
        total += n;
    }
    CHECK_EQ_INT(total, N_RECORDS);
    for (int i = 0; i < N_RECORDS; i++)
        CHECK_EQ_INT(seen[i], 1);
    /* The next round starts over with the same blocks. */
    int again[N_RECORDS], first[N_RECORDS];
    int n1 = use_chunk(s, in, 1234, (uint32_t)uses, again);
    int n0 = use_chunk(s, in, 1234, 0, first);
    CHECK_EQ_INT(n1, n0);
    CHECK(memcmp(again, first, sizeof(int) * (size_t)n0) == 0);
    lc_queue_close(in);
    lc_standalone_free(s);
    lc_queue_free(in);
}

static void test_fixed_count_and_determinism(void)
{
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 16, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_unpacker("positions_per_chunk: 5\n", in, 9);
    int seen[N_RECORDS] = {0};
    for (int u = 0; u < N_RECORDS / 5; u++) {
        int tags[N_RECORDS];
        CHECK_EQ_INT(use_chunk(s, in, 77, (uint32_t)u, tags), 5);
        for (int i = 0; i < 5; i++)
            seen[tags[i]]++;
    }
    for (int i = 0; i < N_RECORDS; i++)
        CHECK(seen[i] <= 1);
    /* Same seed and index: same positions; another chunk index: others. */
    int a[N_RECORDS], b[N_RECORDS], c[N_RECORDS];
    use_chunk(s, in, 77, 0, a);
    use_chunk(s, in, 77, 0, b);
    use_chunk(s, in, 78, 0, c);
    CHECK(memcmp(a, b, sizeof(int) * 5) == 0);
    CHECK(memcmp(a, c, sizeof(int) * 5) != 0);
    lc_queue_close(in);
    lc_standalone_free(s);
    lc_queue_free(in);
}

static void test_file_order(void)
{
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 16, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_unpacker("sampling_rate: 1.0\nshuffle: false\n", in, 1);
    int tags[N_RECORDS];
    CHECK_EQ_INT(use_chunk(s, in, 3, 0, tags), N_RECORDS);
    for (int i = 0; i < N_RECORDS; i++)
        CHECK_EQ_INT(tags[i], i);
    lc_queue_close(in);
    lc_standalone_free(s);
    lc_queue_free(in);
}

static void test_config_errors(void)
{
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_standalone_new(lc_stage_class_find("chunk_unpacker"), "u",
                                   "sampling_rate: 0.5\npositions_per_chunk: 3\n", NULL, 4, NULL,
                                   &s, &err),
                 LC_ECONFIG);
    CHECK(tu_contains(err.msg, "not both"));
    CHECK_EQ_INT(lc_standalone_new(lc_stage_class_find("chunk_unpacker"), "u",
                                   "sampling_rate: 1.5\n", NULL, 4, NULL, &s, &err),
                 LC_ECONFIG);
    CHECK(tu_contains(err.msg, "sampling_rate"));
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    test_rate_disjoint(0.25, 4);
    test_rate_disjoint(0.1, 10);
    test_rate_disjoint(1.0, 1);
    test_fixed_count_and_determinism();
    test_file_order();
    test_config_errors();
    return check_finish();
}
