/*
 * Diff-focus sampling in chunk_unpacker, on records with known fields:
 * - diff_focus (the legacy keep probability): over 2,000 chunks the share of
 *   positions kept matches the formula within 4 standard deviations (seed
 *   fixed), positions with NaN orig_q or zero policy_kld are all kept, and
 *   the counts say so, from the records and the packed form alike;
 * - position_weights with positions_per_chunk 1: positions of weights 1, 2,
 *   3 and 4 (and one of unknown orig_q at default_weight 2) come out in
 *   proportion over 20,000 uses, from the records and from the packed
 *   form alike, the same picks both ways;
 * - upstream's defaults: without q_weight and pol_scale every position
 *   weighs default_weight; with pol_scale alone, tau 1 caps the weights.
 */
#include "check.h"
#include "frames.h"
#include "standalone.h"
#include "testutil.h"

#include "core/clock.h"
#include "format/lc0/diff_focus.h"
#include "format/lc0/packed_chunk.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* n frames tagged by plies_left = i, with the given diff-focus fields. */
static void make_frames(lc_frame *f, uint32_t n, const float *best_q, const float *orig_q,
                        const float *kld)
{
    for (uint32_t t = 0; t < n; t++) {
        memset(&f[t], 0, sizeof f[t]);
        f[t].version = 6;
        f[t].input_format = 1;
        f[t].plies_left = (float)t;
        f[t].played_idx = f[t].best_idx = 10;
        f[t].n_policy = 1;
        f[t].policy_idx[0] = 10;
        f[t].policy_val[0] = 1.0f;
        f[t].best_q = best_q[t];
        f[t].orig_q = orig_q[t];
        f[t].policy_kld = kld[t];
        f[t].q_st = f[t].d_st = NAN;
        f[t].opp_played_idx = f[t].next_played_idx = 0xFFFF;
    }
}

static lc_chunk_item chunk_of(const lc_frame *f, uint32_t n, bool packed, uint64_t global,
                              uint32_t use)
{
    size_t size;
    uint8_t *recs = tf_records(f, n, 6, &size);
    lc_chunk_item c = {.version = 6, .n_records = n, .global_index = global, .use_count = use};
    if (packed) {
        lc_pack_ctx *ctx = lc_pack_ctx_new(1, 8);
        const char *why;
        uint32_t bad_at;
        CHECK_OK(lc_packed_chunk_build(ctx, recs, size, n, 6, &c.packed, &why, &bad_at));
        lc_pack_ctx_free(ctx);
        free(recs);
    } else {
        c.data = recs;
        c.record_size = (uint32_t)size;
    }
    return c;
}

typedef struct feed {
    lc_queue *in;
    const lc_frame *f;
    uint32_t n, chunks, uses;
    bool packed;
} feed;

/* Feeds `chunks` chunks, each `uses` times (one packed chunk shared by
 * its uses, as the store does). */
static void *feeder(void *arg)
{
    feed *fd = arg;
    for (uint32_t g = 0; g < fd->chunks; g++) {
        lc_chunk_item base = chunk_of(fd->f, fd->n, fd->packed, g, 0);
        for (uint32_t u = 0; u < fd->uses; u++) {
            lc_chunk_item c = base;
            c.use_count = u;
            if (fd->packed)
                c.packed = lc_packed_chunk_ref(base.packed);
            else {
                c.data = malloc((size_t)fd->n * base.record_size);
                memcpy(c.data, base.data, (size_t)fd->n * base.record_size);
            }
            CHECK_OK(lc_queue_put(fd->in, &c, NULL));
        }
        lc_item_chunk.dispose(&base);
    }
    lc_queue_close(fd->in);
    return NULL;
}

/* Run the unpacker over the feed; counts[tag] of the frames out, in the
 * order they came into seq (when not NULL). */
static void run(const char *yaml, feed *fd, uint64_t *counts, uint32_t *seq, size_t seq_max,
                lc_stage_metrics *m)
{
    fd->in = lc_queue_new("in", &lc_item_chunk, 64, LC_OVERFLOW_BLOCK);
    lc_stage_env env = {.seed = 7, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *s = NULL;
    lc_error err;
    if (lc_standalone_new(lc_stage_class_find("chunk_unpacker"), "unpack", yaml, fd->in, 4096, &env,
                          &s, &err) != 0) {
        fprintf(stderr, "unpacker: %s\n", err.msg);
        exit(2);
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    pthread_t t;
    pthread_create(&t, NULL, feeder, fd);
    lc_frame f;
    size_t k = 0;
    while (lc_standalone_get_frame(s->output, &f, lc_now_ns() + 60000000000ull) == 0) {
        uint32_t tag = (uint32_t)f.plies_left;
        if (tag < fd->n)
            counts[tag]++;
        if (seq && k < seq_max)
            seq[k] = tag;
        k++;
        lc_frame_fini(&f);
    }
    pthread_join(t, NULL);
    lc_standalone_flush(s, m);
    lc_standalone_free(s);
    lc_queue_free(fd->in);
}

static void test_keep_probability(void)
{
    /* Position 0: total 1.7 / 9.5, kept with p = 0.2 + 2 * that; 1: NaN
     * orig_q; 2: zero policy_kld; 3: p capped at 1. */
    const float best[4] = {0.5f, 0.5f, 0.5f, 1.0f}, orig[4] = {0.3f, NAN, 0.3f, -1.0f},
                kld[4] = {0.5f, 0.5f, 0.0f, 2.0f};
    lc_frame f[4];
    make_frames(f, 4, best, orig, kld);
    uint64_t first[4] = {0};
    for (int packed = 0; packed < 2; packed++) {
        feed fd = {.f = f, .n = 4, .chunks = 2000, .uses = 1, .packed = packed};
        uint64_t counts[4] = {0};
        lc_stage_metrics m;
        run("sampling_rate: 1.0\ndiff_focus: {min: 0.2, slope: 2}\n", &fd, counts, NULL, 0, &m);
        double p = lc_diff_keep_probability(0.5f, 0.3f, 0.5f, 0.2, 2.0, 6.0, 3.5);
        double got = (double)counts[0] / 2000, sd = sqrt(p * (1 - p) / 2000);
        printf("diff_focus (%s): kept %.4f of position 0, formula %.4f (sd %.4f)\n",
               packed ? "packed" : "records", got, p, sd);
        CHECK(fabs(got - p) <= 4 * sd);
        CHECK_EQ_U64(counts[1], 2000);
        CHECK_EQ_U64(counts[2], 2000);
        CHECK_EQ_U64(counts[3], 2000);
        CHECK_EQ_U64(lc_metrics_find(&m, "focus_kept")->count,
                     counts[0] + counts[1] + counts[2] + counts[3]);
        CHECK_EQ_U64(lc_metrics_find(&m, "focus_skipped")->count, 2000 - counts[0]);
        /* The same coins from both forms. */
        if (packed)
            CHECK(memcmp(first, counts, sizeof first) == 0);
        else
            memcpy(first, counts, sizeof first);
    }
}

static void test_weights(void)
{
    /* q_weight 1, pol_scale 0: total = |best_q - orig_q| + policy_kld; with
     * alpha 1, beta 0, gamma 1 the weights are 1, 2, 3, 4, and position 4
     * (orig_q NaN) gets default_weight 2: shares 1:2:3:4:2 of 12. */
    const float best[5] = {0, 0, 0, 0, 0}, orig[5] = {0, 0, 0, 0, NAN}, kld[5] = {1, 2, 3, 4, 1};
    lc_frame f[5];
    make_frames(f, 5, best, orig, kld);
    const char *yaml =
        "positions_per_chunk: 1\n"
        "position_weights: {q_weight: 1, pol_scale: 0, tau: 1e9, default_weight: 2}\n";
    enum { USES = 20000 };
    uint32_t *seq[2];
    for (int packed = 0; packed < 2; packed++) {
        feed fd = {.f = f, .n = 5, .chunks = 100, .uses = USES / 100, .packed = packed};
        uint64_t counts[5] = {0};
        lc_stage_metrics m;
        seq[packed] = calloc(USES, sizeof *seq[packed]);
        run(yaml, &fd, counts, seq[packed], USES, &m);
        const double share[5] = {1 / 12.0, 2 / 12.0, 3 / 12.0, 4 / 12.0, 2 / 12.0};
        for (int t = 0; t < 5; t++) {
            double got = (double)counts[t] / USES, sd = sqrt(share[t] * (1 - share[t]) / USES);
            printf("weights (%s): position %d drawn %.4f, want %.4f (sd %.4f)\n",
                   packed ? "packed" : "records", t, got, share[t], sd);
            CHECK(fabs(got - share[t]) <= 4 * sd);
        }
        CHECK_EQ_U64(lc_metrics_find(&m, "weighted")->count, USES);
    }
    /* The same picks from both forms (one worker: the same order). */
    CHECK(memcmp(seq[0], seq[1], USES * sizeof *seq[0]) == 0);
    free(seq[0]);
    free(seq[1]);
}

/* K at least the positions of weight above 0, with weights 1e-4 to 1:
 * every one of them, at once (rejection sampling would take about 10^4
 * tries for the last); weight 0 never. */
static void test_take_all_positive(void)
{
    const float best[6] = {0, 0, 0, 0, 0, 0}, orig[6] = {0, 0, 0, 0, 0, 0},
                kld[6] = {1e-4f, 1, 0.5f, 0, 0.01f, 0.2f};
    lc_frame f[6];
    make_frames(f, 6, best, orig, kld);
    feed fd = {.f = f, .n = 6, .chunks = 50, .uses = 2};
    uint64_t counts[6] = {0};
    lc_stage_metrics m;
    run("positions_per_chunk: 6\nposition_weights: {q_weight: 1, pol_scale: 0}\n", &fd, counts,
        NULL, 0, &m);
    for (int t = 0; t < 6; t++)
        CHECK_EQ_U64(counts[t], t == 3 ? 0 : 100);
}

/* Upstream's defaults. position_weights: {} gives neither q_weight nor
 * pol_scale: every position weighs default_weight, so the five are drawn
 * evenly whatever their policy_kld. With pol_scale given (1, q_weight 0):
 * total = policy_kld, capped at tau 1: weights 0.25, 0.5, 1, 1, and 1
 * (default_weight, orig_q NaN), shares of 3.75. */
static void test_upstream_defaults(void)
{
    const float best[5] = {0, 0, 0, 0, 0}, orig[5] = {0, 0, 0, 0, NAN},
                kld[5] = {0.25f, 0.5f, 1, 4, 1};
    lc_frame f[5];
    make_frames(f, 5, best, orig, kld);
    enum { USES = 10000 };
    const char *yaml[2] = {"positions_per_chunk: 1\nposition_weights: {}\n",
                           "positions_per_chunk: 1\nposition_weights: {pol_scale: 1}\n"};
    const double share[2][5] = {{0.2, 0.2, 0.2, 0.2, 0.2},
                                {0.25 / 3.75, 0.5 / 3.75, 1 / 3.75, 1 / 3.75, 1 / 3.75}};
    for (int k = 0; k < 2; k++) {
        feed fd = {.f = f, .n = 5, .chunks = 100, .uses = USES / 100};
        uint64_t counts[5] = {0};
        lc_stage_metrics m;
        run(yaml[k], &fd, counts, NULL, 0, &m);
        for (int t = 0; t < 5; t++) {
            double got = (double)counts[t] / USES,
                   sd = sqrt(share[k][t] * (1 - share[k][t]) / USES);
            printf("defaults %d: position %d drawn %.4f, want %.4f (sd %.4f)\n", k, t, got,
                   share[k][t], sd);
            CHECK(fabs(got - share[k][t]) <= 4 * sd);
        }
    }
}

static void test_config(void)
{
    lc_stage *s = NULL;
    lc_error err;
    CHECK(lc_standalone_new(lc_stage_class_find("chunk_unpacker"), "u",
                            "sampling_rate: 0.5\nposition_weights: {}\n", NULL, 4, NULL, &s,
                            &err) != 0);
    CHECK(tu_contains(err.msg, "position_weights: draws positions_per_chunk"));
    CHECK(lc_standalone_new(lc_stage_class_find("chunk_unpacker"), "u", "diff_focus: {min: 1.5}\n",
                            NULL, 4, NULL, &s, &err) != 0);
    CHECK(tu_contains(err.msg, "diff_focus.min: 1.5 is out of range"));
    CHECK(lc_standalone_new(lc_stage_class_find("chunk_unpacker"), "u",
                            "positions_per_chunk: 1\ndiff_focus: {}\nposition_weights: {}\n", NULL,
                            4, NULL, &s, &err) != 0);
    CHECK(tu_contains(err.msg, "not both"));
}

int main(void)
{
    test_keep_probability();
    test_weights();
    test_take_all_positive();
    test_upstream_defaults();
    test_config();
    return check_finish();
}
