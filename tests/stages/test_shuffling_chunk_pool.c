/*
 * shuffling_chunk_pool: window fill (newest sources first), eviction of whole
 * old sources, draws without replacement over a pass, use counts, bad chunks
 * dropped for good, anchor counting (initial load, new files, set, reset,
 * restart from a stored anchor; no reset taken before the initial load is
 * counted) and sharding across ranks (every chunk
 * exactly once, whatever order each rank discovers the files in; the same
 * anchor count and newest key on every rank).
 */
#include "check.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/text.h"
#include "core/thread.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/record.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const lc_stage_class *pool_class(void)
{
    return lc_stage_class_find("shuffling_chunk_pool");
}

/* A game file: n V6 records whose first played_q float tags the game. */
static void write_game(const char *path, uint32_t n, uint32_t tag)
{
    size_t len = (size_t)n * LC_V6_RECORD_SIZE;
    uint8_t *rec = calloc(1, len);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t six = 6, fmt = 1;
        memcpy(rec + (size_t)i * LC_V6_RECORD_SIZE, &six, 4);
        memcpy(rec + (size_t)i * LC_V6_RECORD_SIZE + 4, &fmt, 4);
        memcpy(rec + (size_t)i * LC_V6_RECORD_SIZE + 8340, &tag, 4); /* visits */
    }
    size_t gz_len;
    uint8_t *gz = tu_gzip(rec, len, 1, &gz_len);
    tu_write_file(path, gz, gz_len);
    free(gz);
    free(rec);
}

static void feed(lc_queue *in, const char *path)
{
    lc_source_item item = {.source = tu_chunk_source(path), .flags = 0, .seq = 0};
    CHECK_OK(lc_queue_put(in, &item, NULL));
}

static void feed_marker(lc_queue *in, uint64_t n)
{
    lc_source_item item = {.source = NULL, .flags = LC_ITEM_SCAN_DONE, .seq = n};
    CHECK_OK(lc_queue_put(in, &item, NULL));
}

static bool take(lc_stage *s, lc_chunk_item *c)
{
    return lc_queue_get_until(s->output, c, NULL, lc_now_ns() + 10000000000ull) == 0;
}

/* Key number of a drawn chunk: game_0000NN.gz -> NN. */
static int key_number(const lc_chunk_item *c)
{
    const char *key = lc_chunk_source_key(c->source);
    return atoi(key + 5);
}

static void games(const char *dir, int first, int last)
{
    tu_mkdirs(dir);
    for (int i = first; i <= last; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/game_%06d.gz", dir, i);
        write_game(path, 3, (uint32_t)i);
    }
}

static const char *game_path(const char *dir, int i)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/game_%06d.gz", dir, i);
    return path;
}

static lc_stage *new_pool(const char *yaml, lc_queue *in, const lc_stage_env *env)
{
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_standalone_new(pool_class(), "pool", yaml, in, 4, env, &s, &err) != 0) {
        fprintf(stderr, "pool: %s\n", err.msg);
        exit(2);
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    return s;
}

static uint64_t count_of(lc_stage *s, const char *name, lc_stage_metrics *m)
{
    lc_standalone_flush(s, m);
    const lc_metric_slot *c = lc_metrics_find(m, name);
    return c ? c->count : 0;
}

static int64_t gauge_of(const lc_stage_metrics *m, const char *name)
{
    const lc_metric_slot *g = lc_metrics_find(m, name);
    return g ? g->value : -1;
}

/* The pool's count since the anchor, and its texts ("" when absent). */
static uint64_t since_anchor(const lc_stage_metrics *m)
{
    return (uint64_t)gauge_of(m, "chunks_since_anchor");
}

static const char *text_of(const lc_stage_metrics *m, const char *name)
{
    const char *t = lc_metrics_find_text(m, name);
    return t ? t : "(absent)";
}

/* The pool's answer to an anchor command (anchor-get, anchor-set KEY,
 * anchor-reset), run as a pipeline runs it. */
typedef struct anchor_answer {
    char key[256];
    int64_t count;
} anchor_answer;

static anchor_answer anchor_request(lc_stage *s, bool reset, const char *set)
{
    const char *name = set ? "anchor-set" : reset ? "anchor-reset" : "anchor-get";
    lc_command_result res = {0};
    CHECK_EQ_INT(lc_standalone_command(s, name, set ? 1 : 0, &set, &res), 0);
    anchor_answer a = {"(none)", -1};
    CHECK_EQ_INT(res.n, 1);
    if (res.n == 1 && lc_reply_get(&res.replies[0], "anchor") &&
        lc_reply_get(&res.replies[0], "count")) {
        snprintf(a.key, sizeof a.key, "%s", lc_reply_get(&res.replies[0], "anchor"));
        a.count = strtoll(lc_reply_get(&res.replies[0], "count"), NULL, 10);
    }
    lc_command_result_fini(&res);
    return a;
}

/* anchor-recount KEY: the count made again from the window. */
static anchor_answer anchor_recount(lc_stage *s, const char *key)
{
    lc_command_result res = {0};
    CHECK_EQ_INT(lc_standalone_command(s, "anchor-recount", 1, &key, &res), 0);
    anchor_answer a = {"(none)", -1};
    CHECK_EQ_INT(res.n, 1);
    if (res.n == 1 && lc_reply_get(&res.replies[0], "count")) {
        snprintf(a.key, sizeof a.key, "%s", lc_reply_get(&res.replies[0], "anchor"));
        a.count = strtoll(lc_reply_get(&res.replies[0], "count"), NULL, 10);
    }
    lc_command_result_fini(&res);
    return a;
}

static void test_window_passes_eviction_and_anchor(void)
{
    const char *dir = tu_path("pool1");
    games(dir, 0, 29);
    lc_queue *in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    /* Each game holds 1 chunk; a window of 10 keeps games 20..29. The
     * stored anchor game_000025 counts the 4 newer games of the window. */
    /* One loading thread, so that draw order is emission order. */
    lc_stage *s = new_pool("chunk_pool_size: 10\nthreads: 1\nanchor: game_000025.gz\n", in, NULL);
    /* Sources arrive in any order; the marker ends the initial scan. */
    for (int i = 29; i >= 0; i -= 2)
        feed(in, game_path(dir, i));
    for (int i = 0; i < 30; i += 2)
        feed(in, game_path(dir, i));
    lc_chunk_item c;
    lc_sleep_seconds(0.2);
    CHECK(lc_queue_try_get(s->output, &c) == -EAGAIN); /* nothing before the marker */
    feed_marker(in, 30);

    /* Two passes: each draws every chunk of the window exactly once. */
    for (int pass = 0; pass < 2; pass++) {
        int seen[30] = {0};
        for (int k = 0; k < 10; k++) {
            CHECK(take(s, &c));
            int g = key_number(&c);
            CHECK(g >= 20 && g <= 29);
            if (g >= 0 && g < 30)
                seen[g]++;
            CHECK_EQ_U64(c.use_count, (uint64_t)pass);
            CHECK_EQ_U64(c.global_index, (uint64_t)(g - 20)); /* oldest first */
            CHECK_EQ_U64(c.n_records, 3);
            lc_item_chunk.dispose(&c);
        }
        for (int g = 20; g < 30; g++)
            CHECK_EQ_INT(seen[g], 1);
    }
    lc_stage_metrics m;
    CHECK(count_of(s, "reshuffles", &m) >= 1);
    CHECK_EQ_INT(gauge_of(&m, "chunks_in_window"), 10);
    CHECK_EQ_INT(gauge_of(&m, "chunk_sources"), 10);
    CHECK_EQ_INT(gauge_of(&m, "chunks_total"), 10);
    CHECK_EQ_STR(text_of(&m, "anchor"), "game_000025.gz");
    CHECK_EQ_U64(since_anchor(&m), 4);
    CHECK_EQ_STR(text_of(&m, "last_chunk_key"), "game_000029.gz");
    CHECK_EQ_U64(lc_metrics_find(&m, "sources_not_kept")->count, 20);

    /* New games: appended, counted, and the oldest whole sources leave. */
    games(dir, 30, 32);
    for (int i = 30; i <= 32; i++)
        feed(in, game_path(dir, i));
    double deadline = lc_now_seconds() + 10;
    int64_t total = 0;
    while (total != 13 && lc_now_seconds() < deadline) {
        lc_standalone_flush(s, &m);
        total = gauge_of(&m, "chunks_total");
        /* Keep draining so that loaders are not stuck on a full output. */
        while (lc_queue_try_get(s->output, &c) == 0)
            lc_item_chunk.dispose(&c);
        lc_sleep_seconds(0.01);
    }
    CHECK_EQ_INT(total, 13);
    CHECK_EQ_INT(gauge_of(&m, "chunks_in_window"), 10);
    CHECK_EQ_INT(gauge_of(&m, "chunk_sources"), 10);
    CHECK_EQ_U64(since_anchor(&m), 7);
    /* Once what was drawn before the eviction has left (the output queue
     * holds 4 and the loader 1), only games 23..32 come out. */
    for (int k = 0; k < 5; k++) {
        CHECK(take(s, &c));
        lc_item_chunk.dispose(&c);
    }
    for (int k = 0; k < 40; k++) {
        CHECK(take(s, &c));
        int g = key_number(&c);
        CHECK(g >= 23 && g <= 32);
        lc_item_chunk.dispose(&c);
    }

    /* set keeps the count; query reports; reset returns and zeroes it. */
    anchor_answer r = anchor_request(s, false, "game_000031.gz");
    CHECK_EQ_STR(r.key, "game_000031.gz");
    CHECK_EQ_INT(r.count, 7);
    r = anchor_request(s, false, NULL);
    CHECK_EQ_INT(r.count, 7);
    /* The metrics say what the count runs from: not the key just set. */
    lc_standalone_flush(s, &m);
    CHECK_EQ_STR(text_of(&m, "anchor"), "game_000031.gz");
    CHECK(strcmp(text_of(&m, "count_from"), "game_000031.gz") != 0);
    r = anchor_request(s, true, NULL);
    CHECK_EQ_STR(r.key, "game_000032.gz");
    CHECK_EQ_INT(r.count, 7);
    r = anchor_request(s, false, NULL);
    CHECK_EQ_STR(r.key, "game_000032.gz");
    CHECK_EQ_INT(r.count, 0);
    lc_standalone_flush(s, &m); /* after a reset the count runs from the anchor */
    CHECK_EQ_STR(text_of(&m, "count_from"), "game_000032.gz");
    games(dir, 33, 33);
    feed(in, game_path(dir, 33));
    deadline = lc_now_seconds() + 10;
    do {
        while (lc_queue_try_get(s->output, &c) == 0)
            lc_item_chunk.dispose(&c);
        lc_standalone_flush(s, &m);
        lc_sleep_seconds(0.01);
    } while (since_anchor(&m) != 1 && lc_now_seconds() < deadline);
    CHECK_EQ_U64(since_anchor(&m), 1);
    lc_standalone_free(s);
    lc_queue_free(in);

    /* A restart with the anchor stored at the reset: only game 33 counts. */
    in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    s = new_pool("chunk_pool_size: 10\nanchor: game_000032.gz\n", in, NULL);
    for (int i = 0; i <= 33; i++)
        feed(in, game_path(dir, i));
    feed_marker(in, 34);
    CHECK(take(s, &c));
    lc_item_chunk.dispose(&c);
    lc_standalone_flush(s, &m);
    CHECK_EQ_U64(since_anchor(&m), 1);
    CHECK_EQ_STR(text_of(&m, "anchor"), "game_000032.gz");
    lc_standalone_free(s);
    lc_queue_free(in);

    /* No anchor at all: every chunk of the window counts. */
    in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    s = new_pool("chunk_pool_size: 5\n", in, NULL);
    for (int i = 0; i <= 33; i++)
        feed(in, game_path(dir, i));
    feed_marker(in, 34);
    CHECK(take(s, &c));
    lc_item_chunk.dispose(&c);
    lc_standalone_flush(s, &m);
    CHECK_EQ_U64(since_anchor(&m), 5);
    lc_standalone_free(s);
    lc_queue_free(in);
}

/* Every kind of bad chunk is logged with its file, counted, dropped for
 * good, and the pool goes on with the good ones. */
static void test_bad_chunks_dropped_for_good(void)
{
    const char *dir = tu_path("pool2");
    games(dir, 0, 3);
    char corrupt[4096], truncated[4096], ragged[4096], version[4096];
    snprintf(corrupt, sizeof corrupt, "%s/game_000004.gz", dir);
    tu_write_file(corrupt, "\x1f\x8b this is not deflate", 22);
    /* A valid game cut short: the gzip stream ends early. */
    snprintf(truncated, sizeof truncated, "%s/game_000005.gz", dir);
    {
        size_t len = 0;
        uint8_t *whole = tu_read_file(game_path(dir, 0), &len);
        tu_write_file(truncated, whole, len / 2);
        free(whole);
    }
    /* Not a whole number of records, and an unknown record version. */
    snprintf(ragged, sizeof ragged, "%s/game_000006.gz", dir);
    snprintf(version, sizeof version, "%s/game_000007.gz", dir);
    {
        uint8_t rec[LC_V6_RECORD_SIZE + 100];
        memset(rec, 0, sizeof rec);
        uint32_t six = 6, ninety = 90;
        memcpy(rec, &six, 4);
        size_t gz_len;
        uint8_t *gz = tu_gzip(rec, sizeof rec, 1, &gz_len);
        tu_write_file(ragged, gz, gz_len);
        free(gz);
        memcpy(rec, &ninety, 4);
        gz = tu_gzip(rec, LC_V6_RECORD_SIZE, 1, &gz_len);
        tu_write_file(version, gz, gz_len);
        free(gz);
    }
    lc_queue *in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_pool("chunk_pool_size: 100\nthreads: 2\n", in, NULL);
    for (int i = 0; i <= 7; i++)
        feed(in, game_path(dir, i));
    feed_marker(in, 8);
    lc_chunk_item c;
    for (int k = 0; k < 60; k++) {
        CHECK(take(s, &c));
        CHECK(key_number(&c) < 4);
        lc_item_chunk.dispose(&c);
    }
    lc_stage_metrics m;
    CHECK_EQ_U64(count_of(s, "dropped_chunks", &m), 4);
    CHECK_EQ_INT(lc_metric_info_find(m.rows, "dropped_chunks")->kind, LC_METRIC_DROP);
    /* They leave the window's count and the anchor's (a trainer waits for
     * good games), and count as bad input (the screen's BAD column). */
    CHECK_EQ_INT(gauge_of(&m, "chunks_in_window"), 4);
    CHECK_EQ_INT(gauge_of(&m, "chunks_since_anchor"), 4);
    CHECK_EQ_U64(since_anchor(&m), 4);
    uint64_t bad = 0;
    for (int i = 0; i < m.n_rows; i++)
        if (strncmp(m.rows[i].name, "bad_", 4) == 0)
            bad += m.slot[i].count;
    CHECK_EQ_U64(bad, 4);
    for (int i = 4; i <= 7; i++) {
        char name[32];
        snprintf(name, sizeof name, "game_%06d.gz", i);
        CHECK(tu_log_has(name));
    }
    /* A chunk that reads fine but that a stage downstream rejects (the
     * validator marks it on its source) is dropped for good too. What was
     * drawn before the mark may still come out: at most the output queue (4)
     * and one chunk in each loading thread's hands (2), whenever a thread
     * gets its turn; without the mark it would be about a quarter of 100. */
    bool marked = false;
    for (int k = 0; k < 200 && !marked; k++) {
        CHECK(take(s, &c));
        if (key_number(&c) == 2) {
            lc_chunk_source_mark_bad(c.source, c.member);
            marked = true;
        }
        lc_item_chunk.dispose(&c);
    }
    CHECK(marked);
    int late = 0;
    for (int k = 0; k < 100; k++) {
        CHECK(take(s, &c));
        CHECK(key_number(&c) < 4);
        late += key_number(&c) == 2;
        lc_item_chunk.dispose(&c);
    }
    CHECK(late <= 6);
    CHECK_EQ_U64(count_of(s, "dropped_chunks", &m), 1);
    CHECK_EQ_INT(gauge_of(&m, "chunks_in_window"), 3);
    CHECK_EQ_INT(gauge_of(&m, "chunks_since_anchor"), 3);
    /* A recount counts the good games only: after game 0, games 1 and 3
     * (2 was marked, 4 to 7 failed); anchor-set then keeps the count; a
     * chunk found bad after a recount leaves it. */
    anchor_answer a = anchor_recount(s, "game_000000.gz");
    CHECK_EQ_STR(a.key, "game_000000.gz");
    CHECK_EQ_INT(a.count, 2);
    CHECK_EQ_INT(anchor_request(s, false, "game_000003.gz").count, 2);
    CHECK_EQ_INT(anchor_recount(s, "game_000002.gz").count, 1);
    bool bad3 = false;
    for (int k = 0; k < 200 && !bad3; k++) {
        CHECK(take(s, &c));
        if (key_number(&c) == 3) {
            lc_chunk_source_mark_bad(c.source, c.member);
            bad3 = true;
        }
        lc_item_chunk.dispose(&c);
    }
    for (int k = 0; k < 100 && gauge_of(&m, "chunks_in_window") != 2; k++) {
        CHECK(take(s, &c)); /* game 3 is dropped at its next draw */
        lc_item_chunk.dispose(&c);
        lc_standalone_flush(s, &m);
    }
    CHECK_EQ_INT(gauge_of(&m, "chunks_in_window"), 2);
    CHECK_EQ_INT(anchor_request(s, false, NULL).count, 0);
    lc_standalone_free(s);
    lc_queue_free(in);
}

/* One rank's first pass over a tar corpus, fed in a rank-specific order. */
static void collect_rank(const char *const *tars, size_t n_tars, uint32_t rank, uint32_t world,
                         int *hits /* [n_tars][20] */)
{
    lc_queue *in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    lc_stage_env env = {.seed = 7 + rank, .rank = rank, .world_size = world, .rank_source = "test"};
    lc_stage *s = new_pool("chunk_pool_size: 1000\nthreads: 1\n", in, &env);
    size_t order[8];
    for (size_t i = 0; i < n_tars; i++)
        order[i] = i;
    lc_rng rng;
    lc_rng_seed(&rng, rank, 99);
    for (size_t i = n_tars - 1; i > 0; i--) {
        size_t j = (size_t)lc_rng_below(&rng, i + 1);
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < n_tars; i++)
        feed(in, tars[order[i]]);
    feed_marker(in, n_tars);
    lc_chunk_item c;
    /* Count this rank's window: the first pass is exactly one window. */
    CHECK(take(s, &c));
    lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    int64_t window = gauge_of(&m, "chunks_in_window");
    for (int64_t k = 0; k < window; k++) {
        if (k > 0)
            CHECK(take(s, &c));
        const char *key = lc_chunk_source_key(c.source);
        for (size_t t = 0; t < n_tars; t++)
            if (strcmp(key, lc_basename(tars[t])) == 0)
                hits[t * 20 + c.member]++;
        lc_item_chunk.dispose(&c);
    }
    lc_standalone_free(s);
    lc_queue_free(in);
}

static void test_sharding(void)
{
    const char *dir = tu_path("shard");
    const char *src = tu_path("shard-src");
    tu_mkdirs(dir);
    tu_mkdirs(src);
    static char tar_paths[3][4096];
    const char *tars[3];
    for (int t = 0; t < 3; t++) {
        char *argv[32];
        int a = 0;
        static char names[20][64];
        argv[a++] = "tar";
        argv[a++] = "--format=gnu";
        argv[a++] = "-cf";
        snprintf(tar_paths[t], sizeof tar_paths[t], "%s/run-%d.tar", dir, t);
        argv[a++] = tar_paths[t];
        argv[a++] = "-C";
        argv[a++] = (char *)src;
        for (int i = 0; i < 20; i++) {
            snprintf(names[i], sizeof names[i], "training.%d%05d.gz", t, i);
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", src, names[i]);
            write_game(path, 2, (uint32_t)(t * 100 + i));
            argv[a++] = names[i];
        }
        argv[a] = NULL;
        CHECK_EQ_INT(tu_run(argv, NULL), 0);
        tars[t] = tar_paths[t];
    }
    for (uint32_t world = 1; world <= 4; world += 3) {
        int hits[3 * 20] = {0};
        for (uint32_t rank = 0; rank < world; rank++)
            collect_rank(tars, 3, rank, world, hits);
        for (int i = 0; i < 60; i++)
            CHECK_EQ_INT(hits[i], 1);
    }
}

/* Note one drawn chunk of the files in paths: seen[file * 20 + member].
 * Anything else coming out of the pool is an error. */
static void record_chunk(const char *const *paths, size_t n_paths, lc_chunk_item *c, int *seen,
                         int64_t *distinct)
{
    const char *key = lc_chunk_source_key(c->source);
    bool known = false;
    for (size_t t = 0; t < n_paths; t++)
        if (strcmp(key, lc_basename(paths[t])) == 0 && c->member < 20) {
            known = true;
            if (seen[t * 20 + c->member]++ == 0)
                (*distinct)++;
        }
    CHECK(known);
    lc_item_chunk.dispose(c);
}

/* One rank of `world` over the same files, discovered in a rank-specific
 * order: the first part in the initial scan, the rest after the scan-done
 * marker, as new files appear while the loader runs. The pool (1000 chunks,
 * more than all of them: nothing is evicted) keeps this rank's chunks; the
 * distinct chunks this rank emits are added to hits[file * 20 + member].
 * *window is the rank's final window, *late what the late files added. */
static void collect_rank_late(const char *const *paths, size_t n_paths, uint32_t total_chunks,
                              uint32_t rank, uint32_t world, int *hits, int64_t *window,
                              int64_t *late)
{
    lc_queue *in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    lc_stage_env env = {
        .seed = 11 + rank, .rank = rank, .world_size = world, .rank_source = "test"};
    lc_stage *s = new_pool("chunk_pool_size: 1000\nthreads: 2\n", in, &env);
    size_t order[32];
    CHECK(n_paths >= 2 && n_paths <= 32);
    for (size_t i = 0; i < n_paths; i++)
        order[i] = i;
    lc_rng rng;
    lc_rng_seed(&rng, 1000 + rank, 5);
    for (size_t i = n_paths - 1; i > 0; i--) {
        size_t j = (size_t)lc_rng_below(&rng, i + 1);
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    /* Both parts hold at least one file; where the cut falls differs by rank. */
    size_t initial = 1 + (size_t)lc_rng_below(&rng, n_paths - 1);
    for (size_t i = 0; i < initial; i++)
        feed(in, paths[order[i]]);
    feed_marker(in, initial);

    int *seen = calloc(n_paths * 20, sizeof *seen);
    int64_t distinct = 0;
    lc_chunk_item c;
    /* Let the first part load and flow before the rest appears. Flushing
     * takes the counts, so other_rank_chunks is summed from here on. */
    uint64_t other = 0;
    lc_stage_metrics m;
    double deadline = lc_now_seconds() + 30;
    for (;;) {
        lc_standalone_flush(s, &m);
        other += lc_metrics_find(&m, "other_rank_chunks")->count;
        while (lc_queue_try_get(s->output, &c) == 0)
            record_chunk(paths, n_paths, &c, seen, &distinct);
        if (gauge_of(&m, "initial_load_done") == 1 || lc_now_seconds() > deadline)
            break;
        lc_sleep_seconds(0.01);
    }
    CHECK_EQ_INT(gauge_of(&m, "initial_load_done"), 1);
    int64_t initial_window = gauge_of(&m, "chunks_in_window");
    for (size_t i = initial; i < n_paths; i++)
        feed(in, paths[order[i]]);

    /* Wait until every file is in: this rank's chunks are in the window,
     * the others' are counted as another rank's. Keep draining meanwhile. */
    int64_t in_window = 0;
    deadline = lc_now_seconds() + 30;
    for (;;) {
        lc_standalone_flush(s, &m);
        other += lc_metrics_find(&m, "other_rank_chunks")->count;
        in_window = gauge_of(&m, "chunks_in_window");
        if ((uint64_t)in_window + other == total_chunks || lc_now_seconds() > deadline)
            break;
        while (lc_queue_try_get(s->output, &c) == 0)
            record_chunk(paths, n_paths, &c, seen, &distinct);
        lc_sleep_seconds(0.01);
    }
    CHECK_EQ_U64((uint64_t)in_window + other, total_chunks);
    CHECK_EQ_INT(gauge_of(&m, "chunks_total"), in_window); /* nothing evicted */

    /* New chunks join the current pass, so within about one more window of
     * draws (plus what waits in the queue) every chunk of this rank is out. */
    for (int64_t k = 0; distinct < in_window && k < 3 * in_window + 16; k++) {
        CHECK(take(s, &c));
        record_chunk(paths, n_paths, &c, seen, &distinct);
    }
    CHECK_EQ_INT(distinct, in_window);
    for (size_t i = 0; i < n_paths * 20; i++)
        hits[i] += seen[i] ? 1 : 0;
    *window = in_window;
    *late = in_window - initial_window;
    free(seen);
    lc_standalone_free(s);
    lc_queue_free(in);
}

/* Ranks that each find part of the files in the initial scan and the rest
 * later, in different orders and with the cut in different places, still
 * cover every chunk exactly once between them. */
static void test_sharding_late_files(void)
{
    const char *tar_dir = tu_path("shard"); /* run-0.tar .. run-2.tar, 20 chunks each */
    const char *game_dir = tu_path("shard-late");
    games(game_dir, 100, 111); /* 12 single-chunk games */
    static char paths_buf[15][4096];
    const char *paths[15];
    size_t n = 0;
    for (int t = 0; t < 3; t++) {
        snprintf(paths_buf[n], sizeof paths_buf[n], "%s/run-%d.tar", tar_dir, t);
        paths[n] = paths_buf[n];
        n++;
    }
    for (int g = 100; g <= 111; g++) {
        snprintf(paths_buf[n], sizeof paths_buf[n], "%s", game_path(game_dir, g));
        paths[n] = paths_buf[n];
        n++;
    }
    /* Chunks per file: 20 members per tar, one per game. */
    int members[15];
    uint32_t total = 0;
    for (size_t i = 0; i < n; i++) {
        members[i] = i < 3 ? 20 : 1;
        total += (uint32_t)members[i];
    }
    const uint32_t worlds[] = {2, 3, 4};
    for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
        uint32_t world = worlds[w];
        int hits[15 * 20] = {0};
        int64_t sum = 0, late = 0;
        for (uint32_t rank = 0; rank < world; rank++) {
            int64_t window = 0, rank_late = 0;
            collect_rank_late(paths, n, total, rank, world, hits, &window, &rank_late);
            sum += window;
            late += rank_late;
        }
        CHECK_EQ_INT(sum, (int64_t)total);
        CHECK(late > 0); /* chunks really arrived after the initial scan */
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < 20; k++) {
                if (hits[i * 20 + k] != (k < members[i] ? 1 : 0))
                    fprintf(stderr, "world %u: %s member %d came out of %d ranks\n", world,
                            paths[i], k, hits[i * 20 + k]);
                CHECK_EQ_INT(hits[i * 20 + k], k < members[i] ? 1 : 0);
            }
    }
}

/* Wait until the pool's initial load is done; its metrics then. */
static void wait_initial_load(lc_stage *s, lc_stage_metrics *m)
{
    double deadline = lc_now_seconds() + 30;
    do
        lc_standalone_flush(s, m);
    while (gauge_of(m, "initial_load_done") != 1 && lc_now_seconds() < deadline &&
           (lc_sleep_seconds(0.01), true));
    CHECK_EQ_INT(gauge_of(m, "initial_load_done"), 1);
}

/* Anchors with sharding: every rank counts the chunks of every rank, so all
 * ranks report the same count, and a reset gives every rank the same key:
 * the largest one seen (a late file with an older name does not pull it
 * back). Each rank finds the files in its own order. */
static void test_anchor_with_sharding(void)
{
    const char *dir = tu_path("shard-anchor");
    games(dir, 200, 211); /* 12 single-chunk games */
    const char *yaml[] = {
        /* Everything is in the window: games 205..211 (7) are newer. */
        "chunk_pool_size: 1000\nthreads: 1\nanchor: game_000204.gz\n",
        /* The window of all ranks: the newest 2 * world games. */
        "chunk_pool_size: 2\nthreads: 1\nanchor: game_000204.gz\n",
    };
    for (uint32_t world = 1; world <= 3; world++)
        for (size_t k = 0; k < 2; k++) {
            uint64_t want = k == 0 || 2 * world > 7 ? 7 : 2 * world;
            for (uint32_t rank = 0; rank < world; rank++) {
                lc_queue *in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
                lc_stage_env env = {
                    .seed = 5 + rank, .rank = rank, .world_size = world, .rank_source = "test"};
                lc_stage *s = new_pool(yaml[k], in, &env);
                /* Games 201..211 in a rank-specific rotation; 200 comes late. */
                for (int i = 0; i < 11; i++)
                    feed(in, game_path(dir, 201 + (i + 4 * (int)rank) % 11));
                feed_marker(in, 11);
                lc_stage_metrics m;
                wait_initial_load(s, &m);
                CHECK_EQ_U64(since_anchor(&m), want);
                CHECK_EQ_STR(text_of(&m, "last_chunk_key"), "game_000211.gz");
                /* A late file with an older name counts as new (it arrived
                 * after the initial load), and leaves the newest key alone. */
                feed(in, game_path(dir, 200));
                double deadline = lc_now_seconds() + 30;
                do {
                    lc_standalone_flush(s, &m);
                    lc_chunk_item c;
                    while (lc_queue_try_get(s->output, &c) == 0)
                        lc_item_chunk.dispose(&c);
                } while (since_anchor(&m) != want + 1 && lc_now_seconds() < deadline &&
                         (lc_sleep_seconds(0.01), true));
                CHECK_EQ_U64(since_anchor(&m), want + 1);
                anchor_answer r = anchor_request(s, true, NULL);
                CHECK_EQ_STR(r.key, "game_000211.gz");
                CHECK_EQ_INT(r.count, (int64_t)want + 1);
                lc_queue_close(in);
                lc_standalone_free(s);
                lc_queue_free(in);
            }
        }
}

/* A trainer's reset sent over and over from before the first source (as
 * test_control retries one while the pool refuses it) until one is taken:
 * its answer, the refusals before it, and a refusal other than the initial
 * load's (checked by the test's thread: CHECK is not for two threads). */
typedef struct resetter {
    lc_stage *s;
    uint64_t refused;
    char key[64], count[32];
    char other[512];
} resetter;

static void *reset_until_taken(void *arg)
{
    resetter *r = arg;
    double deadline = lc_now_seconds() + 60 * tu_slow();
    for (;;) {
        lc_command_result res = {0};
        int rc = lc_standalone_command(r->s, "anchor-reset", 0, NULL, &res);
        if (rc == 0 || lc_now_seconds() > deadline) {
            const char *key = res.n == 1 ? lc_reply_get(&res.replies[0], "anchor") : NULL;
            const char *count = res.n == 1 ? lc_reply_get(&res.replies[0], "count") : NULL;
            snprintf(r->key, sizeof r->key, "%s", rc == 0 && key ? key : "(refused)");
            snprintf(r->count, sizeof r->count, "%s", rc == 0 && count ? count : "(refused)");
            lc_command_result_fini(&res);
            return NULL;
        }
        if (!r->other[0] && !(res.error && strstr(res.error, "initial load is under way")))
            snprintf(r->other, sizeof r->other, "%s", res.error ? res.error : "(no error)");
        r->refused++;
        lc_command_result_fini(&res);
        /* A pause between tries: a reset spinning on the pool's lock hands
         * it over to the ingestion thread, which on a busy machine then
         * keeps the resetter's core until its load is over: the resets
         * would see nothing in between. */
        lc_sleep_seconds(20e-6);
    }
}

/* A reset is taken only once the initial load is counted. 1000
 * single-chunk games and no anchor: the initial load counts all 1000 (by
 * hand: with no anchor every source is newer), so the first reset taken
 * returns 1000 and anchors at the newest game, game_001999, and the count
 * after it is 0 (nothing arrives later). The pool used to name its newest
 * game, which let resets through, before it added the count and the
 * window: a reset in between (some 0.2 ms for 1000 sources) answered 0,
 * and the 1000 were added after it, as new games the trainer had already
 * seen. 10 rounds: with the old pool 4 to 7 of them were caught in between
 * (on a loaded 2-core machine), every run failed. The queue holds every
 * source, so the pool takes them as fast as it can. */
static void test_reset_waits_for_the_initial_load(void)
{
    const char *dir = tu_path("reset-early");
    games(dir, 1000, 1999);
    for (int round = 0; round < 10; round++) {
        lc_queue *in = lc_queue_new("in", &lc_item_source, 2048, LC_OVERFLOW_BLOCK);
        lc_stage *s = new_pool("chunk_pool_size: 100000\nthreads: 1\n", in, NULL);
        resetter r = {.s = s};
        lc_thread t;
        lc_thread_start(&t, "resetter", reset_until_taken, &r);
        for (int i = 1000; i <= 1999; i++)
            feed(in, game_path(dir, i));
        feed_marker(in, 1000);
        lc_thread_join(&t);
        CHECK_EQ_STR(r.other, "");
        CHECK_EQ_STR(r.key, "game_001999.gz");
        CHECK_EQ_STR(r.count, "1000");
        lc_stage_metrics m;
        wait_initial_load(s, &m);
        CHECK_EQ_U64(since_anchor(&m), 0);
        anchor_answer a = anchor_request(s, false, NULL);
        CHECK_EQ_STR(a.key, "game_001999.gz");
        CHECK_EQ_INT(a.count, 0);
        if (getenv("LC_TEST_VERBOSE"))
            fprintf(stderr, "round %d: %llu resets refused before one was taken\n", round,
                    (unsigned long long)r.refused);
        lc_queue_close(in);
        lc_standalone_free(s);
        lc_queue_free(in);
    }
}

/* A window smaller than a tar: the whole newest source is held, but the
 * window gauge never reads above its capacity. */
static void test_window_gauge_with_tars(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/run-2.tar", tu_path("shard")); /* 20 chunks */
    lc_queue *in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_pool("chunk_pool_size: 10\nthreads: 1\n", in, NULL);
    feed(in, path);
    feed_marker(in, 1);
    lc_stage_metrics m;
    wait_initial_load(s, &m);
    CHECK_EQ_INT(gauge_of(&m, "chunks_in_window"), 10);
    CHECK_EQ_INT(gauge_of(&m, "chunks_held"), 20);
    const lc_metric_slot *g = lc_metrics_find(&m, "chunks_in_window");
    CHECK(g && g->has_capacity && g->capacity == 10);
    lc_queue_close(in);
    lc_standalone_free(s);
    lc_queue_free(in);
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    test_window_passes_eviction_and_anchor();
    test_bad_chunks_dropped_for_good();
    test_sharding();
    test_sharding_late_files(); /* uses the tars test_sharding made */
    test_anchor_with_sharding();
    test_reset_waits_for_the_initial_load();
    test_window_gauge_with_tars(); /* uses a tar test_sharding made */
    return check_finish();
}
