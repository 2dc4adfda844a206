/*
 * Hanse sampling in shuffling_chunk_pool: 100 one-position games whose
 * weights are 1, 2, 3 and 4 (25 of each, by their policy_kld) come out in
 * proportion 1:2:3:4 over 20,000 draws (within 4 standard deviations, seed
 * fixed), with and without the chunk store; the counts add up; gamma 0
 * takes everything; upstream's default weights take every game alike;
 * threshold 0 is off; the block's checks (threshold required).
 */
#include "check.h"
#include "standalone.h"
#include "testutil.h"

#include "core/clock.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/record.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GAMES 100

/* n games, game i one V6 record with policy_kld = 1 + i % 4 (its weight;
 * 0 with `zero`), best_q = orig_q = 0, played and best index 0 with
 * probability 1. */
static void write_games(const char *dir, int n, bool zero)
{
    tu_mkdirs(dir);
    for (int i = 0; i < n; i++) {
        uint8_t rec[LC_V6_RECORD_SIZE] = {0};
        uint32_t six = 6, fmt = 1;
        float kld = zero ? 0.0f : (float)(1 + i % 4), one = 1.0f;
        memcpy(rec, &six, 4);
        memcpy(rec + 4, &fmt, 4);
        memcpy(rec + 8, &one, 4);
        memcpy(rec + offsetof(lc_v6_record, policy_kld), &kld, 4);
        size_t gz_len;
        uint8_t *gz = tu_gzip(rec, sizeof rec, 1, &gz_len);
        char path[4096];
        snprintf(path, sizeof path, "%s/game_%06d.gz", dir, i);
        tu_write_file(path, gz, gz_len);
        free(gz);
    }
}

static void run(const char *dir, const char *yaml, int draws, uint64_t *per_class,
                lc_stage_metrics *m)
{
    lc_queue *in = lc_queue_new("in", &lc_item_source, GAMES + 2, LC_OVERFLOW_BLOCK);
    lc_stage_env env = {.seed = 11, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *s = NULL;
    lc_error err;
    if (lc_standalone_new(lc_stage_class_find("shuffling_chunk_pool"), "pool", yaml, in, 64, &env,
                          &s, &err) != 0) {
        fprintf(stderr, "pool: %s\n", err.msg);
        exit(2);
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    for (int i = 0; i < GAMES; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/game_%06d.gz", dir, i);
        lc_source_item it = {.source = tu_chunk_source(path)};
        CHECK_OK(lc_queue_put(in, &it, NULL));
    }
    lc_source_item marker = {.flags = LC_ITEM_SCAN_DONE, .seq = GAMES};
    CHECK_OK(lc_queue_put(in, &marker, NULL));
    memset(per_class, 0, 4 * sizeof *per_class);
    lc_stage_metrics total;
    lc_stage_metrics_clear(&total);
    for (int k = 0; k < draws; k++) {
        lc_chunk_item c;
        if (lc_queue_get_until(s->output, &c, NULL, lc_now_ns() + 30000000000ull) != 0) {
            CHECK(!"the pool stopped giving chunks");
            break;
        }
        int i = atoi(lc_chunk_source_key(c.source) + 5);
        per_class[i % 4]++;
        lc_item_chunk.dispose(&c);
        if (k % 1000 == 0) {
            lc_standalone_flush(s, m);
            lc_stage_metrics_merge(&total, m);
        }
    }
    lc_standalone_stop(s);
    lc_standalone_flush(s, m);
    lc_stage_metrics_merge(&total, m);
    *m = total;
    lc_standalone_free(s);
    lc_queue_free(in);
}

static void test_proportions(const char *dir, const char *store)
{
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "chunk_pool_size: 1000\nthreads: 1\nstore_bytes: %s\n"
             "hanse: {threshold: 1, position_weights: {q_weight: 1, pol_scale: 0, tau: 1e9}}\n",
             store);
    enum { DRAWS = 20000 };
    uint64_t n[4];
    lc_stage_metrics m;
    run(dir, yaml, DRAWS, n, &m);
    for (int k = 0; k < 4; k++) {
        double want = (k + 1) / 10.0, got = (double)n[k] / DRAWS;
        double sd = sqrt(want * (1 - want) / DRAWS);
        printf("store %s: weight %d drawn %.4f, want %.4f (sd %.4f)\n", store, k + 1, got, want,
               sd);
        CHECK(fabs(got - want) <= 4 * sd);
    }
    const lc_metric_slot *acc = lc_metrics_find(&m, "hanse_accepted");
    const lc_metric_slot *rej = lc_metrics_find(&m, "hanse_rejected");
    CHECK(acc && rej);
    if (acc && rej) {
        printf("accepted %llu, rejected %llu\n", (unsigned long long)acc->count,
               (unsigned long long)rej->count);
        CHECK(acc->count >= DRAWS);
        /* Accepted 1/4..4/4 of draws by class: 2.5/4 on average, so
         * rejections are about 0.6 of acceptances. */
        double r = (double)rej->count / (double)acc->count;
        CHECK(r > 0.5 && r < 0.7);
    }
    const lc_metric_slot *w = lc_metrics_find(&m, "chunk_weight");
    CHECK(w && w->stats.min == 1 && w->stats.max == 4);
}

static void test_gamma_zero(const char *dir)
{
    uint64_t n[4];
    lc_stage_metrics m;
    run(dir,
        "chunk_pool_size: 1000\nthreads: 2\nstore_bytes: 0\n"
        "hanse: {threshold: 1, gamma: 0, position_weights: {q_weight: 1, pol_scale: 0, tau: "
        "1e9}}\n",
        2000, n, &m);
    /* Every draw accepted: each pass gives every game once. */
    CHECK_EQ_U64(lc_metrics_find(&m, "hanse_rejected")->count, 0);
    for (int k = 0; k < 4; k++)
        CHECK(n[k] >= 450 && n[k] <= 550);
}

/* Every weight 0 (policy_kld 0, beta 0): nothing is heavier than anything,
 * so everything is accepted (no pass of rejections without end). */
static void test_all_zero(void)
{
    char *dir = lc_xasprintf("%s/zero", tu_tmpdir());
    write_games(dir, 20, true);
    lc_queue *in = lc_queue_new("in", &lc_item_source, 32, LC_OVERFLOW_BLOCK);
    lc_stage *s = NULL;
    lc_error err;
    CHECK_OK(lc_standalone_new(
        lc_stage_class_find("shuffling_chunk_pool"), "pool",
        "chunk_pool_size: 100\nstore_bytes: 0\n"
        "hanse: {threshold: 1, position_weights: {q_weight: 1, pol_scale: 0, tau: 1e9}}\n",
        in, 16, NULL, &s, &err));
    CHECK_OK(lc_standalone_start(s, NULL));
    for (int i = 0; i < 20; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/game_%06d.gz", dir, i);
        lc_source_item it = {.source = tu_chunk_source(path)};
        CHECK_OK(lc_queue_put(in, &it, NULL));
    }
    lc_source_item marker = {.flags = LC_ITEM_SCAN_DONE, .seq = 20};
    CHECK_OK(lc_queue_put(in, &marker, NULL));
    int got = 0;
    lc_chunk_item c;
    while (got < 400 &&
           lc_queue_get_until(s->output, &c, NULL, lc_now_ns() + 30000000000ull) == 0) {
        lc_item_chunk.dispose(&c);
        got++;
    }
    CHECK_EQ_INT(got, 400);
    lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    CHECK_EQ_U64(lc_metrics_find(&m, "hanse_rejected")->count, 0);
    lc_standalone_free(s);
    lc_queue_free(in);
    free(dir);
}

/* Upstream's defaults (threshold given, nothing else): neither q_weight
 * nor pol_scale is given, so every position weighs default_weight 1, every
 * game 1, and every draw is accepted: the four classes come out evenly. */
static void test_upstream_defaults(const char *dir)
{
    uint64_t n[4];
    lc_stage_metrics m;
    run(dir, "chunk_pool_size: 1000\nthreads: 1\nstore_bytes: 0\nhanse: {threshold: 1}\n", 4000, n,
        &m);
    CHECK_EQ_U64(lc_metrics_find(&m, "hanse_rejected")->count, 0);
    const lc_metric_slot *w = lc_metrics_find(&m, "chunk_weight");
    CHECK(w && w->stats.min == 1 && w->stats.max == 1);
    for (int k = 0; k < 4; k++)
        CHECK(n[k] >= 900 && n[k] <= 1100);
}

/* threshold 0: off, as upstream's 0: no judging, no Hanse counts. */
static void test_threshold_zero(const char *dir)
{
    uint64_t n[4];
    lc_stage_metrics m;
    run(dir,
        "chunk_pool_size: 1000\nthreads: 1\nstore_bytes: 0\n"
        "hanse: {threshold: 0, position_weights: {q_weight: 1, pol_scale: 0, tau: 1e9}}\n",
        400, n, &m);
    CHECK(lc_metrics_find(&m, "hanse_accepted") == NULL);
    CHECK(lc_metrics_find(&m, "hanse_rejected") == NULL);
    CHECK(lc_metrics_find(&m, "chunk_weight") == NULL);
    for (int k = 0; k < 4; k++)
        CHECK_EQ_U64(n[k], 100);
}

static void test_config(void)
{
    lc_stage *s = NULL;
    lc_error err;
    CHECK(lc_standalone_new(lc_stage_class_find("shuffling_chunk_pool"), "p",
                            "chunk_pool_size: 10\nhanse: {threshold: 1, gamma: -1}\n", NULL, 4,
                            NULL, &s, &err) != 0);
    CHECK(tu_contains(err.msg, "hanse.gamma: -1 is out of range"));
    CHECK(lc_standalone_new(
              lc_stage_class_find("shuffling_chunk_pool"), "p",
              "chunk_pool_size: 10\nhanse: {threshold: 1, position_weights: {tau: -1}}\n", NULL, 4,
              NULL, &s, &err) != 0);
    CHECK(tu_contains(err.msg, "hanse.position_weights.tau"));
    /* A block without its threshold is refused (lcmon before issue 27 took
     * the block alone as on; upstream takes the unset threshold as off). */
    CHECK(lc_standalone_new(lc_stage_class_find("shuffling_chunk_pool"), "p",
                            "chunk_pool_size: 10\nhanse: {gamma: 2}\n", NULL, 4, NULL, &s,
                            &err) != 0);
    CHECK(tu_contains(err.msg, "hanse.threshold: missing (required"));
}

int main(void)
{
    char *dir = lc_xasprintf("%s/games", tu_tmpdir());
    write_games(dir, GAMES, false);
    test_proportions(dir, "0");
    test_proportions(dir, "64M");
    test_gamma_zero(dir);
    test_upstream_defaults(dir);
    test_threshold_zero(dir);
    test_all_zero();
    test_config();
    free(dir);
    return check_finish();
}
