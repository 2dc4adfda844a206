/*
 * chunk_unpacker: every use of a chunk emits floor(p*n) or ceil(p*n) of its
 * n positions for any sampling rate p (0.1, 0.25, 0.3, 0.4, 0.7, 1.0), and
 * successive uses walk around one fixed order of the positions, so that they
 * are disjoint until the order wraps and one pass of ceil(1/p) uses emits
 * every position; the first use is unbiased over many chunks; the arithmetic
 * holds across the wrap of the use count; positions_per_chunk takes
 * fixed-size disjoint slices; the choice depends only on the run seed and the
 * chunk's global index; file order without shuffling; records of an unknown
 * input format or another version are dropped and counted; st targets
 * computed for a V6 game from its records and from its packed form, kept
 * from V7 records and from V6 ones with st_targets: keep; computed by default.
 */
#include "check.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/thread.h"
#include "format/lc0/frame.h"
#include "format/lc0/packed_chunk.h"
#include "format/lc0/record.h"
#include "frames.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_RECORDS 37

/* A chunk whose record i has plies_left = base + i (the tag we read back). */
static lc_chunk_item make_tagged_chunk(uint64_t global, uint32_t use, int base)
{
    lc_chunk_item c = {0};
    c.version = 6;
    c.record_size = LC_V6_RECORD_SIZE;
    c.n_records = N_RECORDS;
    c.data = calloc(N_RECORDS, LC_V6_RECORD_SIZE);
    for (uint32_t i = 0; i < N_RECORDS; i++) {
        uint8_t *r = c.data + (size_t)i * LC_V6_RECORD_SIZE;
        uint32_t six = 6, fmt = 1;
        float plies = (float)(base + (int)i);
        memcpy(r, &six, 4);
        memcpy(r + 4, &fmt, 4);
        memcpy(r + 8304, &plies, 4);
    }
    c.global_index = global;
    c.use_count = use;
    return c;
}

static lc_chunk_item make_chunk(uint64_t global, uint32_t use)
{
    return make_tagged_chunk(global, use, 0);
}

static lc_stage *new_unpacker(const char *yaml, lc_queue *in, uint64_t seed)
{
    lc_stage_env env = {.seed = seed, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_standalone_new(lc_stage_class_find("chunk_unpacker"), "unpack", yaml, in, 4096, &env, &s,
                          &err) != 0) {
        fprintf(stderr, "unpacker: %s\n", err.msg);
        exit(2);
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    return s;
}

/*
 * Feed one use of a chunk and collect the tags that come out, in order (at
 * most N_RECORDS are kept; the count is of all). The stage must have one
 * worker: a marker chunk follows the chunk, tagged 1000*m + i for this
 * call's number m, and the first marker frame means the chunk is done.
 * Marker frames of earlier calls are skipped.
 */
static int use_chunk(lc_stage *s, lc_queue *in, uint64_t global, uint32_t use, int *tags)
{
    static int calls;
    int m = ++calls;
    lc_chunk_item c = make_chunk(global, use);
    CHECK_OK(lc_queue_put(in, &c, NULL));
    lc_chunk_item marker = make_tagged_chunk(UINT64_MAX - (uint64_t)m, 0, 1000 * m);
    CHECK_OK(lc_queue_put(in, &marker, NULL));
    int n = 0;
    lc_frame f;
    for (;;) {
        int rc = lc_standalone_get_frame(s->output, &f, lc_now_ns() + 20000000000ull);
        CHECK_OK(rc);
        if (rc != 0)
            break;
        int tag = (int)f.plies_left;
        lc_frame_fini(&f);
        if (tag >= 1000) {
            if (tag / 1000 == m)
                break;
            continue;
        }
        if (n < N_RECORDS)
            tags[n] = tag;
        n++;
    }
    return n;
}

/* Bounds of one use's count at rate p: floor(p*n) and ceil(p*n), with a
 * little slack for p*n that is a whole number in decimal but not in binary. */
static void use_bounds(double rate, int *lo, int *hi)
{
    *lo = (int)floor(rate * N_RECORDS + 1e-9);
    *hi = (int)ceil(rate * N_RECORDS - 1e-9);
}

/*
 * Uses first .. first+uses-1 (the use count wraps at 2^32 like the pool's)
 * of one chunk, concatenated into stream[] (room for uses * N_RECORDS);
 * counts[u] gets each use's count. Returns the stream's length.
 */
static int run_uses(lc_stage *s, lc_queue *in, uint64_t global, uint32_t first, int uses,
                    int *stream, int *counts)
{
    int len = 0;
    for (int u = 0; u < uses; u++) {
        counts[u] = use_chunk(s, in, global, first + (uint32_t)u, stream + len);
        len += counts[u];
    }
    return len;
}

/* What every rate must give: per-use counts within rounding, no repeat inside
 * a use, one fixed order walked around (stream[j + n] == stream[j]), the
 * first n places a permutation, so uses are disjoint until the order wraps
 * and a pass of ceil(1/p) uses covers every position. */
static void check_stream(double rate, const int *stream, int len, const int *counts, int uses)
{
    int lo, hi;
    use_bounds(rate, &lo, &hi);
    int pos = 0;
    for (int u = 0; u < uses; u++) {
        CHECK(counts[u] >= lo && counts[u] <= hi);
        int inside[N_RECORDS] = {0};
        for (int i = 0; i < counts[u]; i++) {
            CHECK(stream[pos + i] >= 0 && stream[pos + i] < N_RECORDS);
            inside[stream[pos + i]]++;
            CHECK(inside[stream[pos + i]] == 1);
        }
        pos += counts[u];
    }
    CHECK(len >= N_RECORDS);
    int seen[N_RECORDS] = {0};
    for (int j = 0; j < N_RECORDS && j < len; j++)
        seen[stream[j]]++;
    for (int i = 0; i < N_RECORDS; i++)
        CHECK_EQ_INT(seen[i], 1);
    for (int j = 0; j + N_RECORDS < len; j++)
        CHECK_EQ_INT(stream[j + N_RECORDS], stream[j]);
    /* Successive uses share nothing while together they fit in one round. */
    pos = 0;
    for (int u = 0; u + 1 < uses; u++) {
        if (counts[u] + counts[u + 1] <= N_RECORDS) {
            for (int i = 0; i < counts[u]; i++)
                for (int j = 0; j < counts[u + 1]; j++)
                    CHECK(stream[pos + i] != stream[pos + counts[u] + j]);
        }
        pos += counts[u];
    }
}

static void test_rate(double rate)
{
    printf("sampling_rate %g\n", rate);
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 16, LC_OVERFLOW_BLOCK);
    char yaml[128];
    snprintf(yaml, sizeof yaml, "sampling_rate: %g\nthreads: 1\n", rate);
    lc_stage *s = new_unpacker(yaml, in, 5);
    const int pass = (int)ceil(1.0 / rate - 1e-9);
    /* Two passes and a bit: the order must wrap at least once. */
    const int uses = 2 * pass + 2;
    int *stream = calloc((size_t)uses * N_RECORDS, sizeof *stream);
    int *counts = calloc((size_t)uses, sizeof *counts);
    int len = run_uses(s, in, 1234, 0, uses, stream, counts);
    check_stream(rate, stream, len, counts, uses);

    /* One pass of ceil(1/p) uses emits every position, and repeats only the
     * last use's spill past the end of the order. */
    int in_pass = 0, seen[N_RECORDS] = {0};
    for (int u = 0; u < pass; u++)
        in_pass += counts[u];
    for (int j = 0; j < in_pass; j++)
        seen[stream[j]]++;
    int lo, hi;
    use_bounds(rate, &lo, &hi);
    for (int i = 0; i < N_RECORDS; i++)
        CHECK(seen[i] >= 1 && seen[i] <= 2);
    CHECK(in_pass >= N_RECORDS && in_pass < N_RECORDS + hi);
    /* Over the uses, the rate is p to within one position. */
    CHECK(fabs((double)len - rate * N_RECORDS * uses) <= 1.0 + 1e-9);

    /* When 1/p is a whole number, a pass is one round: exactly n positions,
     * and the next pass repeats its blocks. */
    if (fabs(1.0 / rate - pass) < 1e-9) {
        CHECK_EQ_INT(in_pass, N_RECORDS);
        int at = 0;
        for (int u = 0; u < pass; u++) {
            CHECK_EQ_INT(counts[pass + u], counts[u]);
            CHECK(memcmp(stream + in_pass + at, stream + at, sizeof(int) * (size_t)counts[u]) == 0);
            at += counts[u];
        }
    }

    /* The same use twice gives the same positions. */
    int again[N_RECORDS];
    CHECK_EQ_INT(use_chunk(s, in, 1234, 1, again), counts[1]);
    CHECK(memcmp(again, stream + counts[0], sizeof(int) * (size_t)counts[1]) == 0);

    /* Across the wrap of the 32-bit use count the walk goes on unbroken. */
    int wrap_uses = pass + 2;
    len = run_uses(s, in, 99, UINT32_MAX - (uint32_t)pass, wrap_uses, stream, counts);
    check_stream(rate, stream, len, counts, wrap_uses);

    free(stream);
    free(counts);
    lc_queue_close(in);
    lc_standalone_free(s);
    lc_queue_free(in);
}

typedef struct many_feeder {
    lc_queue *in;
    int chunks;
} many_feeder;

static void *feed_many(void *arg)
{
    many_feeder *f = arg;
    for (int i = 0; i < f->chunks; i++) {
        lc_chunk_item c = make_chunk(100000 + (uint64_t)i, 0);
        CHECK_OK(lc_queue_put(f->in, &c, NULL));
    }
    lc_queue_close(f->in);
    return NULL;
}

/* The first use of many chunks: p*n positions on average, not floor(p*n). */
static void test_first_use_unbiased(double rate, int chunks)
{
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 16, LC_OVERFLOW_BLOCK);
    char yaml[128];
    snprintf(yaml, sizeof yaml, "sampling_rate: %g\nthreads: 2\n", rate);
    lc_stage *s = new_unpacker(yaml, in, 11);
    many_feeder f = {.in = in, .chunks = chunks};
    lc_thread t;
    lc_thread_start(&t, "test-feeder", feed_many, &f);
    uint64_t frames = 0;
    lc_frame fr;
    while (lc_standalone_get_frame(s->output, &fr, lc_now_ns() + 10000000000ull) == 0) {
        frames++;
        lc_frame_fini(&fr);
    }
    lc_thread_join(&t);
    double mean = (double)frames / chunks, want = rate * N_RECORDS;
    printf("sampling_rate %g: first uses emit %.3f positions on average (p*n = %.3f)\n", rate, mean,
           want);
    /* floor(p*n) or ceil(p*n), ceil with probability frac(p*n): the mean's
     * standard deviation is below 0.5/sqrt(chunks). */
    CHECK(fabs(mean - want) < 4 * 0.5 / sqrt((double)chunks));
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

/* Records the planes are not defined for never become frames, even without a
 * chunk_validator in the chain: an unknown input format, and a record whose
 * version is not its chunk's. They are counted as bad_records. */
static void test_bad_records_dropped(void)
{
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 16, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_unpacker("sampling_rate: 1.0\nshuffle: false\n", in, 1);
    lc_chunk_item c = make_chunk(5, 0);
    uint32_t fmt = 7, seven = 7, canonical = 133;
    memcpy(c.data + 3 * LC_V6_RECORD_SIZE + 4, &fmt, 4);        /* no such format */
    memcpy(c.data + 10 * LC_V6_RECORD_SIZE, &seven, 4);         /* a V7 header in a V6 chunk */
    memcpy(c.data + 20 * LC_V6_RECORD_SIZE + 4, &canonical, 4); /* fine */
    CHECK_OK(lc_queue_put(in, &c, NULL));
    lc_queue_close(in);
    int n = 0;
    bool seen[N_RECORDS] = {false};
    lc_frame f;
    while (lc_standalone_get_frame(s->output, &f, lc_now_ns() + 20000000000ull) == 0) {
        int tag = (int)f.plies_left;
        if (tag >= 0 && tag < N_RECORDS)
            seen[tag] = true;
        lc_frame_fini(&f);
        n++;
    }
    CHECK_EQ_INT(n, N_RECORDS - 2);
    CHECK(!seen[3] && !seen[10] && seen[20]);
    lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    CHECK_EQ_U64(lc_metrics_find(&m, "bad_records")->count, 2);
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

/* A 4-ply game (the one of tests/format/test_st_targets.c) as frames of
 * `version`, with their own st fields set to values the computation never
 * gives. */
static void st_game(lc_frame *f, uint32_t version)
{
    const float q[4] = {0.5f, -0.2f, 0.3f, 0.8f}, d[4] = {0.2f, 0.4f, 0.1f, 0.0f};
    for (int t = 0; t < 4; t++) {
        memset(&f[t], 0, sizeof f[t]);
        f[t].version = version;
        f[t].input_format = 1;
        f[t].root_q = q[t];
        f[t].root_d = d[t];
        f[t].plies_left = (float)t; /* the tag */
        f[t].played_idx = f[t].best_idx = (uint16_t)(10 * (t + 1));
        f[t].n_policy = 1;
        f[t].policy_idx[0] = f[t].played_idx;
        f[t].policy_val[0] = 1.0f;
        f[t].q_st = 0.777f;
        f[t].d_st = version == 7 ? 0.555f : NAN;
        f[t].opp_played_idx = version == 7 ? 7 : 0xFFFF;
        f[t].next_played_idx = version == 7 ? 8 : 0xFFFF;
    }
}

/* The game through an unpacker with this block (as records, or packed as
 * the pool's store keeps it); the frames by tag into out. */
static void run_st(const char *yaml, uint32_t version, bool packed, uint32_t use, int want,
                   lc_frame *out)
{
    lc_frame game[4];
    st_game(game, version);
    size_t size;
    uint8_t *recs = tf_records(game, 4, version, &size);
    lc_chunk_item c = {.version = version, .n_records = 4, .global_index = 9, .use_count = use};
    if (packed) {
        lc_pack_ctx *ctx = lc_pack_ctx_new(1, 2); /* blocks of 2: the picks span two */
        const char *why = NULL;
        uint32_t bad_at = 0;
        CHECK_OK(lc_packed_chunk_build(ctx, recs, size, 4, version, &c.packed, &why, &bad_at));
        lc_pack_ctx_free(ctx);
        free(recs);
    } else {
        c.data = recs;
        c.record_size = (uint32_t)size;
    }
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 4, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_unpacker(yaml, in, 3);
    CHECK_OK(lc_queue_put(in, &c, NULL));
    lc_queue_close(in);
    lc_frame f;
    int n = 0;
    while (lc_standalone_get_frame(s->output, &f, lc_now_ns() + 20000000000ull) == 0) {
        int t = (int)f.plies_left;
        CHECK(t >= 0 && t < 4);
        if (t >= 0 && t < 4)
            out[t] = f;
        n++;
    }
    CHECK_EQ_INT(n, want);
    lc_standalone_free(s);
    lc_queue_free(in);
}

static void test_st_targets(void)
{
    const double q_half[4] = {0.2375, 0.025, -0.25, 0.8}, d_half[4] = {0.2125, 0.225, 0.05, 0};
    const uint16_t opp[4] = {20, 30, 40, 0xFFFF}, next[4] = {30, 40, 0xFFFF, 0xFFFF};
    for (int packed = 0; packed < 2; packed++) {
        lc_frame f[4];
        run_st("sampling_rate: 1.0\nst_targets: compute\nst_theta: 0.5\n", 6, packed, 0, 4, f);
        for (int t = 0; t < 4; t++) {
            CHECK(fabs(f[t].q_st - q_half[t]) < 1e-6);
            CHECK(fabs(f[t].d_st - d_half[t]) < 1e-6);
            CHECK_EQ_INT(f[t].opp_played_idx, opp[t]);
            CHECK_EQ_INT(f[t].next_played_idx, next[t]);
        }
        /* A V7 game keeps its own. */
        run_st("sampling_rate: 1.0\nst_targets: compute\n", 7, packed, 0, 4, f);
        for (int t = 0; t < 4; t++) {
            CHECK(f[t].q_st == 0.777f && f[t].d_st == 0.555f);
            CHECK(f[t].opp_played_idx == 7 && f[t].next_played_idx == 8);
        }
        /* With st_targets: keep, V6 keeps its q_st, and its d_st (which V6
         * does not have) is 0.0, upstream's value. */
        run_st("sampling_rate: 1.0\nst_targets: keep\n", 6, packed, 0, 4, f);
        for (int t = 0; t < 4; t++)
            CHECK(f[t].q_st == 0.777f && f[t].d_st == 0.0f && !signbit(f[t].d_st) &&
                  f[t].opp_played_idx == 0xFFFF);
        /* By default they are computed (theta 5/6): as st_targets: compute. */
        lc_frame g[4];
        run_st("sampling_rate: 1.0\n", 6, packed, 0, 4, f);
        run_st("sampling_rate: 1.0\nst_targets: compute\nst_theta: 0.8333333333333334\n", 6, packed,
               0, 4, g);
        for (int t = 0; t < 4; t++) {
            CHECK(f[t].q_st == g[t].q_st && f[t].d_st == g[t].d_st && !isnan(f[t].d_st));
            CHECK(f[t].q_st != 0.777f && f[t].opp_played_idx == opp[t]);
        }
    }
    /* A use that picks only the last two positions (the second use of two
     * a game, in file order) computes the same for them, from both forms. */
    for (int packed = 0; packed < 2; packed++) {
        lc_frame f[4];
        run_st("positions_per_chunk: 2\nshuffle: false\nst_targets: compute\nst_theta: 0.5\n", 6,
               packed, 1, 2, f);
        for (int t = 2; t < 4; t++)
            CHECK(fabs(f[t].q_st - q_half[t]) < 1e-6 && fabs(f[t].d_st - d_half[t]) < 1e-6);
    }
    lc_stage *s = NULL;
    lc_error err;
    CHECK(lc_standalone_new(lc_stage_class_find("chunk_unpacker"), "u",
                            "sampling_rate: 1.0\nst_targets: keep\nst_theta: 0.5\n", NULL, 4, NULL,
                            &s, &err) != 0);
    CHECK(tu_contains(err.msg, "st_theta: only used with st_targets: compute"));
    CHECK(lc_standalone_new(lc_stage_class_find("chunk_unpacker"), "u",
                            "st_targets: compute\nst_theta: 1\n", NULL, 4, NULL, &s, &err) != 0);
    CHECK(tu_contains(err.msg, "st_theta: 1 is out of range"));
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    test_rate(0.25);
    test_rate(0.1);
    test_rate(1.0);
    test_rate(0.3);
    test_rate(0.7);
    test_rate(0.4);
    test_rate(0.5);
    test_first_use_unbiased(0.7, 2000);
    test_first_use_unbiased(0.3, 2000);
    test_fixed_count_and_determinism();
    test_file_order();
    test_bad_records_dropped();
    test_config_errors();
    test_st_targets();
    return check_finish();
}
