/*
 * test_chunk_store: the shuffling chunk pool's store of packed chunks.
 *
 *   - Exactness: the pool and an unpacker chained, with the store and
 *     without, the same seed, one thread each: every frame of several
 *     passes is the same, field by field and in every tensor of both
 *     layouts, over the real games of tests/data (input formats 1, 2, 3, 5,
 *     .gz and tar) and generated games of versions 3, 4, 5 and 7 (as .gz,
 *     and as tar members of raw records), with a
 *     sampling rate and with positions_per_chunk. So the store changes
 *     nothing that is emitted: which positions a use takes (disjoint across
 *     uses, covering the game) is the same with and without it. Each chunk
 *     is read and inflated once; later uses are hits.
 *   - Budget: a window four times the budget runs, never holds more than
 *     the budget, reads the rest from disk at each use (counted, checked,
 *     and packed at most once), drops nothing, and warns once.
 *   - Eviction: chunks leave the store with their sources, and the chunks
 *     of a tar one by one as they fall below the window; later uses are
 *     hits.
 *   - Faults: a stored chunk whose file vanished is still served; one that
 *     was never stored is dropped and counted; a chunk that fails the
 *     validator's checks is dropped for good, counted by reason, and never
 *     emitted, even without a chunk_validator, whether or not the store had
 *     room for it.
 *   - Concurrency (run under TSan by scripts/test): eight loading threads,
 *     new files and evictions while four unpacker threads decode; every
 *     frame is checked against the position it must be.
 */
#include "check.h"
#include "frames.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/text.h"
#include "core/thread.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/packed_chunk.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED 7

/* ---- games ---- */

/* Write n frames as a game file of records of `version`, gzipped or (raw)
 * as the records alone, as a tar member of raw records holds them. */
static void write_frames_as(const char *path, const lc_frame *f, uint32_t n, uint32_t version,
                            bool raw)
{
    size_t size;
    uint8_t *recs = tf_records(f, n, version, &size);
    size_t gz_len;
    uint8_t *gz = raw ? NULL : tu_gzip(recs, (size_t)n * size, 1, &gz_len);
    tu_write_file(path, raw ? recs : gz, raw ? (size_t)n * size : gz_len);
    free(gz);
    free(recs);
}

static void write_frames(const char *path, const lc_frame *f, uint32_t n, uint32_t version)
{
    write_frames_as(path, f, n, version, false);
}

/* Position `pos` of game `game`: planes and values that follow from the
 * two (so a frame can be checked alone), plies_left = game * 1000 + pos. */
static void tagged_frame(lc_frame *f, uint32_t game, uint32_t pos)
{
    memset(f, 0, sizeof *f);
    f->version = 6;
    f->input_format = 1;
    uint64_t x = 0x9E3779B97F4A7C15ull * (game * 1000u + pos + 1);
    for (unsigned p = 0; p < LC_HISTORY_PLANES; p++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        f->planes[p] = p % 13 == 12 ? 0 : x;
    }
    f->plies_left = (float)(game * 1000 + pos);
    f->root_q = (float)pos / 100.0f;
    f->n_policy = 3;
    f->policy_idx[0] = (uint16_t)(pos % 50);
    f->policy_idx[1] = (uint16_t)(100 + game % 100);
    f->policy_idx[2] = 1857;
    f->policy_val[0] = 0.5f;
    f->policy_val[1] = 0.25f;
    f->policy_val[2] = 0.25f;
    f->played_idx = f->policy_idx[0];
    f->best_idx = 1857;
}

static const char *game_path(const char *dir, uint32_t game)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/game_%06u.gz", dir, game);
    return path;
}

/* Games first..last of n positions each, tagged, in dir. */
static void tagged_games(const char *dir, uint32_t first, uint32_t last, uint32_t n)
{
    tu_mkdirs(dir);
    lc_frame *f = calloc(n, sizeof *f);
    for (uint32_t g = first; g <= last; g++) {
        for (uint32_t i = 0; i < n; i++)
            tagged_frame(&f[i], g, i);
        write_frames(game_path(dir, g), f, n, 6);
    }
    free(f);
}

/* Is f exactly position (plies_left) of its tagged game? */
static bool tag_matches(const lc_frame *f)
{
    uint32_t tag = (uint32_t)f->plies_left;
    lc_frame want;
    tagged_frame(&want, tag / 1000, tag % 1000);
    return memcmp(want.planes, f->planes, sizeof want.planes) == 0 &&
           tf_bits(want.root_q) == tf_bits(f->root_q) && f->n_policy == 3 &&
           f->policy_idx[0] == want.policy_idx[0] && f->policy_idx[1] == want.policy_idx[1];
}

/* ---- stages ---- */

static lc_stage *start_stage(const char *type, const char *name, const char *yaml, lc_queue *in,
                             size_t out_cap)
{
    return lc_standalone_running(type, name, yaml, in, out_cap, SEED);
}

static void feed(lc_queue *in, const char *path)
{
    lc_source_item item = {.source = tu_chunk_source(path)};
    CHECK_OK(lc_queue_put(in, &item, NULL));
}

static void feed_marker(lc_queue *in)
{
    lc_source_item item = {.flags = LC_ITEM_SCAN_DONE};
    CHECK_OK(lc_queue_put(in, &item, NULL));
}

static uint64_t count(const lc_stage_metrics *m, const char *name)
{
    const lc_metric_slot *c = lc_metrics_find(m, name);
    return c ? c->count : 0;
}

static int64_t gauge(const lc_stage_metrics *m, const char *name)
{
    const lc_metric_slot *g = lc_metrics_find(m, name);
    return g ? g->value : -1;
}

/* Counts add up across flushes (a flush takes them); gauges are the last. */
typedef struct totals {
    lc_stage_metrics last;
    uint64_t hits, misses, transcodes, over_budget, dropped, bad_probability, evicted;
    int64_t max_store_bytes;
} totals;

static void flush_into(lc_stage *pool, totals *t)
{
    lc_standalone_flush(pool, &t->last);
    t->hits += count(&t->last, "store_hits");
    t->misses += count(&t->last, "store_misses");
    t->transcodes += count(&t->last, "store_transcodes");
    t->over_budget += count(&t->last, "store_over_budget");
    t->evicted += count(&t->last, "sources_evicted");
    t->dropped += count(&t->last, "dropped_chunks");
    t->bad_probability += count(&t->last, "bad_bad_probability");
    int64_t b = gauge(&t->last, "store_bytes");
    if (b > t->max_store_bytes)
        t->max_store_bytes = b;
}

static bool take_chunk(lc_stage *pool, lc_chunk_item *c)
{
    return lc_queue_get_until(pool->output, c, NULL, lc_now_ns() + 30000000000ull) == 0;
}

/* ---- exactness ---- */

/* Every .gz and .tar under dir, sorted, into paths. */
static void list_sources(const char *dir, char ***paths, size_t *n)
{
    struct dirent **names;
    int k = scandir(dir, &names, NULL, alphasort);
    for (int i = 0; i < k; i++) {
        const char *name = names[i]->d_name;
        char *path = lc_xasprintf("%s/%s", dir, name);
        if (name[0] != '.' && tu_is_dir(path)) {
            list_sources(path, paths, n);
            free(path);
        } else if (lc_has_suffix(name, ".gz") || lc_has_suffix(name, ".tar")) {
            *paths = realloc(*paths, (*n + 1) * sizeof **paths);
            (*paths)[(*n)++] = path;
        } else {
            free(path);
        }
        free(names[i]);
    }
    free(names);
}

/* Real games rewritten as records of versions 3, 4, 5 and 7: each a .gz,
 * and all four again as raw-record members of one tar. */
static void version_games(const char *dir, char ***paths, size_t *n)
{
    tu_mkdirs(dir);
    char *raw_dir = lc_xasprintf("%s-raw", dir);
    tu_mkdirs(raw_dir);
    char *raw_names[5] = {0};
    char **real = NULL;
    size_t n_real = 0;
    list_sources(tu_test_data(), &real, &n_real);
    int made = 0;
    for (size_t i = 0; i < n_real && made < 4; i++) {
        if (!lc_has_suffix(real[i], ".gz"))
            continue;
        lc_chunk_source *src = NULL;
        lc_chunk_data c;
        CHECK_OK(lc_chunk_source_open(real[i], &src, NULL));
        CHECK_OK(lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, &c, NULL));
        lc_frame *f = calloc(c.n_records, sizeof *f);
        for (size_t r = 0; r < c.n_records; r++)
            CHECK_OK(lc_frame_from_record(c.data + r * c.record_size, c.version, &f[r], NULL));
        static const uint32_t versions[] = {3, 4, 5, 7};
        uint32_t v = versions[made++];
        char *path = lc_xasprintf("%s/v%u_%s", dir, v, lc_basename(real[i]));
        write_frames(path, f, (uint32_t)c.n_records, v);
        raw_names[made - 1] = lc_xasprintf("v%u.raw", v);
        char *raw = lc_xasprintf("%s/%s", raw_dir, raw_names[made - 1]);
        write_frames_as(raw, f, (uint32_t)c.n_records, v, true);
        free(raw);
        *paths = realloc(*paths, (*n + 1) * sizeof **paths);
        (*paths)[(*n)++] = path;
        for (size_t r = 0; r < c.n_records; r++)
            lc_frame_fini(&f[r]);
        free(f);
        lc_chunk_data_fini(&c);
        lc_chunk_source_unref(src);
        /* Skip to another folder (another input format) for the next. */
        const char *folder = strrchr(real[i], '/');
        while (i + 1 < n_real && strncmp(real[i + 1], real[i], (size_t)(folder - real[i])) == 0)
            i++;
    }
    CHECK_EQ_INT(made, 4);
    char *tar = lc_xasprintf("%s/raw-versions.tar", dir);
    char *argv[] = {"tar",        "-cf",        tar,          "-C",         raw_dir,
                    raw_names[0], raw_names[1], raw_names[2], raw_names[3], NULL};
    CHECK_EQ_INT(tu_run(argv, NULL), 0);
    *paths = realloc(*paths, (*n + 1) * sizeof **paths);
    (*paths)[(*n)++] = tar;
    for (int i = 0; i < 4; i++)
        free(raw_names[i]);
    free(raw_dir);
    for (size_t i = 0; i < n_real; i++)
        free(real[i]);
    free(real);
}

/* The pool (one loading thread) and an unpacker (one thread) over paths;
 * the first `want` frames, in order; the pool's totals. */
static lc_frame *run_chain(const char *store_bytes, const char *unpacker_yaml, char **paths,
                           size_t n_paths, size_t want, totals *t)
{
    lc_queue *in = lc_queue_new("in", &lc_item_source, 256, LC_OVERFLOW_BLOCK);
    char yaml[256];
    snprintf(yaml, sizeof yaml, "chunk_pool_size: 100000\nthreads: 1\nstore_bytes: %s\n",
             store_bytes);
    lc_stage *pool = start_stage("shuffling_chunk_pool", "pool", yaml, in, 4);
    lc_stage *unpacker = start_stage("chunk_unpacker", "unpacker", unpacker_yaml, pool->output, 64);
    for (size_t i = 0; i < n_paths; i++)
        feed(in, paths[i]);
    feed_marker(in);
    lc_frame *frames = calloc(want, sizeof *frames);
    size_t got = 0;
    while (got < want && lc_standalone_get_frame(unpacker->output, &frames[got],
                                                 lc_now_ns() + 30000000000ull) == 0)
        got++;
    CHECK_EQ_U64(got, want);
    memset(t, 0, sizeof *t);
    flush_into(pool, t);
    lc_standalone_free(unpacker);
    lc_standalone_free(pool);
    lc_queue_free(in);
    return frames;
}

static void test_exact_with_and_without_store(void)
{
    char **paths = NULL;
    size_t n_paths = 0;
    list_sources(tu_test_data(), &paths, &n_paths);
    version_games(tu_path("versions"), &paths, &n_paths);
    CHECK(n_paths >= 40);
    /* The positions of every chunk, for the number of frames in 5 passes. */
    size_t positions = 0;
    for (size_t i = 0; i < n_paths; i++) {
        lc_chunk_source *src = NULL;
        CHECK_OK(lc_chunk_source_open(paths[i], &src, NULL));
        for (size_t m = 0; src && m < lc_chunk_source_count(src); m++) {
            lc_chunk_data c;
            if (lc_chunk_source_load(src, m, LC_INFLATE_AUTO, &c, NULL) == 0)
                positions += c.n_records;
            lc_chunk_data_fini(&c);
        }
        lc_chunk_source_unref(src);
    }
    static const struct {
        const char *name, *yaml;
        double per_pass; /* share of the positions a pass emits */
    } modes[] = {
        {"sampling_rate 0.25", "sampling_rate: 0.25\nthreads: 1\n", 0.25},
        {"positions_per_chunk 3", "positions_per_chunk: 3\nthreads: 1\n", 0},
    };
    for (size_t k = 0; k < 2; k++) {
        size_t chunks = 43 + 4 + 4; /* tests/data, the four versions, raw in a tar */
        size_t want = modes[k].per_pass > 0 ? (size_t)(positions * modes[k].per_pass * 5) - 100
                                            : chunks * 3 * 5 - 10;
        totals on, off;
        lc_frame *a = run_chain("auto", modes[k].yaml, paths, n_paths, want, &on);
        lc_frame *b = run_chain("0", modes[k].yaml, paths, n_paths, want, &off);
        size_t differ = 0;
        for (size_t i = 0; i < want; i++) {
            int before = atomic_load(&check_failed_);
            tf_check_same_fields(&b[i], &a[i], true);
            tf_check_same_tensors(&b[i], &a[i]);
            if (atomic_load(&check_failed_) != before && differ++ < 3)
                fprintf(stderr, "  frame %zu differs (%s)\n", i, modes[k].name);
            lc_frame_fini(&a[i]);
            lc_frame_fini(&b[i]);
        }
        free(a);
        free(b);
        printf("%s: %zu frames the same; store: %llu transcodes, %llu hits, %llu misses, "
               "%lld bytes a position\n",
               modes[k].name, want, (unsigned long long)on.transcodes, (unsigned long long)on.hits,
               (unsigned long long)on.misses,
               (long long)gauge(&on.last, "store_bytes_per_position"));
        /* Each chunk read once (the loader may be one ahead), then hits. */
        CHECK(on.transcodes >= chunks - 2 && on.transcodes <= chunks);
        CHECK_EQ_U64(on.misses, on.transcodes);
        CHECK(on.hits >= 3 * chunks);
        CHECK_EQ_U64(on.dropped, 0);
        CHECK(gauge(&on.last, "store_bytes") > 0);
        /* Without a store the pool reports none. */
        CHECK(lc_metrics_find(&off.last, "store_bytes") == NULL);
        CHECK_EQ_U64(off.hits + off.misses, 0);
    }
    for (size_t i = 0; i < n_paths; i++)
        free(paths[i]);
    free(paths);
}

/* ---- budget ---- */

/* Bytes of game g's packed form (blocks of 8). */
static size_t packed_size(uint32_t game, uint32_t n)
{
    lc_frame *f = calloc(n, sizeof *f);
    for (uint32_t i = 0; i < n; i++)
        tagged_frame(&f[i], game, i);
    size_t size;
    uint8_t *recs = tf_records(f, n, 6, &size);
    lc_pack_ctx *pc = lc_pack_ctx_new(LC_PACK_LEVEL_DEFAULT, LC_PACK_BLOCK_DEFAULT);
    lc_packed_chunk *pk = NULL;
    CHECK_OK(lc_packed_chunk_build(pc, recs, LC_V6_RECORD_SIZE, n, 6, &pk, NULL, NULL));
    size_t bytes = pk ? lc_packed_chunk_bytes(pk) : 0;
    lc_packed_chunk_unref(pk);
    lc_pack_ctx_free(pc);
    free(recs);
    free(f);
    return bytes;
}

static void test_budget(void)
{
    const char *dir = tu_path("budget");
    enum { GAMES = 40, N = 30, PASSES = 5 };
    tagged_games(dir, 0, GAMES - 1, N);
    size_t one = 0, least = SIZE_MAX;
    for (uint32_t g = 0; g < GAMES; g++) {
        size_t b = packed_size(g, N);
        one = b > one ? b : one;
        least = b < least ? b : least;
    }
    uint64_t budget = (uint64_t)one * GAMES / 4; /* about a quarter of the window */
    char yaml[256];
    snprintf(yaml, sizeof yaml, "chunk_pool_size: %d\nthreads: 2\nstore_bytes: %llu\n", GAMES,
             (unsigned long long)budget);
    size_t full_before = tu_log_count(0, LC_LOG_DEBUG, "the chunk store is full");
    lc_queue *in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    lc_stage *pool = start_stage("shuffling_chunk_pool", "pool", yaml, in, 4);
    for (uint32_t g = 0; g < GAMES; g++)
        feed(in, game_path(dir, g));
    feed_marker(in);
    totals t = {0};
    int seen[GAMES] = {0};
    size_t from_store = 0, from_disk = 0;
    for (int k = 0; k < GAMES * PASSES; k++) {
        lc_chunk_item c;
        CHECK(take_chunk(pool, &c));
        int g = atoi(lc_chunk_source_key(c.source) + 5);
        if (g >= 0 && g < GAMES)
            seen[g]++;
        CHECK_EQ_U64(c.n_records, N);
        if (c.packed)
            from_store++;
        else
            from_disk++;
        CHECK((c.flags & LC_ITEM_CHECKED) != 0); /* checked in the pool, stored or not */
        lc_item_chunk.dispose(&c);
        if (k % 10 == 0)
            flush_into(pool, &t);
    }
    flush_into(pool, &t);
    /* Every chunk comes out every pass, stored or not (two threads may
     * put one a draw ahead of another at a pass's edge). */
    for (int g = 0; g < GAMES; g++)
        CHECK(seen[g] >= PASSES - 1 && seen[g] <= PASSES + 1);
    CHECK(t.max_store_bytes > 0 && (uint64_t)t.max_store_bytes <= budget);
    int64_t stored = gauge(&t.last, "store_chunks");
    CHECK(stored >= 1 && (uint64_t)stored <= budget / least);
    const lc_metric_slot *g = lc_metrics_find(&t.last, "store_bytes");
    CHECK(g && g->has_capacity && (uint64_t)g->capacity == budget);
    CHECK(t.over_budget > 0);
    CHECK_EQ_U64(t.dropped, 0);
    /* Chunks outside the store are read at each use: misses every pass. */
    CHECK(from_disk >= (size_t)(GAMES - stored) * (PASSES - 1));
    CHECK(from_store >= (size_t)stored * (PASSES - 2));
    CHECK(t.misses >= from_disk);
    /* A chunk that did not fit is not packed again at its next uses (two
     * threads may both pack one at a pass's edge). */
    CHECK(t.transcodes <= GAMES + 2);
    CHECK_EQ_U64(tu_log_count(0, LC_LOG_DEBUG, "the chunk store is full"), full_before + 1);
    printf("budget %llu bytes (a quarter of the window): %zu uses from the store, %zu from "
           "disk, %llu over budget\n",
           (unsigned long long)budget, from_store, from_disk, (unsigned long long)t.over_budget);
    lc_queue_close(in);
    lc_standalone_free(pool);
    lc_queue_free(in);
}

/* ---- eviction ---- */

/* Take chunks until the pool's store holds `want` chunks (or time runs out). */
static void drain_until_stored(lc_stage *pool, int64_t want, totals *t)
{
    double deadline = lc_now_seconds() + 30 * tu_slow();
    do {
        lc_chunk_item c;
        while (lc_queue_try_get(pool->output, &c) == 0)
            lc_item_chunk.dispose(&c);
        flush_into(pool, t);
        lc_sleep_seconds(0.005);
    } while (gauge(&t->last, "store_chunks") != want && lc_now_seconds() < deadline);
}

static void test_eviction(void)
{
    const char *dir = tu_path("evict");
    enum { W = 10, N = 12 };
    tagged_games(dir, 0, 2 * W - 1, N);
    lc_queue *in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    char yaml[128];
    snprintf(yaml, sizeof yaml, "chunk_pool_size: %d\nthreads: 2\nstore_bytes: 100M\n", W);
    lc_stage *pool = start_stage("shuffling_chunk_pool", "pool", yaml, in, 4);
    for (uint32_t g = 0; g < W; g++)
        feed(in, game_path(dir, g));
    feed_marker(in);
    totals t = {0};
    drain_until_stored(pool, W, &t);
    CHECK_EQ_INT(gauge(&t.last, "store_chunks"), W);
    CHECK_EQ_INT(gauge(&t.last, "store_positions"), W * N);
    int64_t bytes_full = gauge(&t.last, "store_bytes");
    /* Ten new games push the ten old ones out of the window, and out of
     * the store: it holds the new ten, and only them. */
    for (uint32_t g = W; g < 2 * W; g++)
        feed(in, game_path(dir, g));
    double deadline = lc_now_seconds() + 30 * tu_slow();
    do
        drain_until_stored(pool, W, &t);
    while ((gauge(&t.last, "chunks_total") != 2 * W || gauge(&t.last, "store_chunks") != W) &&
           lc_now_seconds() < deadline);
    CHECK_EQ_INT(gauge(&t.last, "chunks_total"), 2 * W);
    CHECK_EQ_INT(gauge(&t.last, "store_chunks"), W);
    CHECK_EQ_INT(gauge(&t.last, "store_positions"), W * N);
    /* About the same bytes as before (other games, the same shape). */
    int64_t bytes_now = gauge(&t.last, "store_bytes");
    CHECK(bytes_now > bytes_full / 2 && bytes_now < bytes_full * 2);
    /* And what comes out now is the new games only, all hits: nothing is
     * read from disk any more. */
    uint64_t misses = t.misses, hits = t.hits;
    for (int k = 0; k < 4 * W; k++) {
        lc_chunk_item c;
        CHECK(take_chunk(pool, &c));
        if (k >= 8) /* what was in flight before */
            CHECK(atoi(lc_chunk_source_key(c.source) + 5) >= W);
        lc_item_chunk.dispose(&c);
    }
    flush_into(pool, &t);
    CHECK_EQ_U64(t.misses, misses);
    CHECK(t.hits >= hits + 4 * W - 8);
    lc_queue_close(in);
    lc_standalone_free(pool);
    lc_queue_free(in);
}

/* A tar of games first..last of n positions at path. */
static void tar_games(const char *dir, const char *path, uint32_t first, uint32_t last, uint32_t n)
{
    tagged_games(dir, first, last, n);
    char *argv[64] = {"tar", "--format=gnu", "-C", (char *)dir, "-cf", (char *)path};
    int k = 6;
    for (uint32_t g = first; g <= last && k < 62; g++)
        argv[k++] = lc_xstrdup(lc_basename(game_path(dir, g)));
    argv[k] = NULL;
    CHECK(tu_run(argv, NULL) == 0);
    for (int i = 6; i < k; i++)
        free(argv[i]);
}

static void test_tar_eviction(void)
{
    enum { W = 10, N = 8, LATE = 5 };
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s", tu_path("tarwin/a.tar"));
    snprintf(b, sizeof b, "%s", tu_path("tarwin/b.tar"));
    tar_games(tu_path("tarwin/a"), a, 0, W - 1, N);
    tar_games(tu_path("tarwin/b"), b, W, W + LATE - 1, N);
    lc_queue *in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    char yaml[128];
    snprintf(yaml, sizeof yaml, "chunk_pool_size: %d\nthreads: 2\nstore_bytes: 100M\n", W);
    lc_stage *pool = start_stage("shuffling_chunk_pool", "pool", yaml, in, 4);
    feed(in, a);
    feed_marker(in);
    totals t = {0};
    drain_until_stored(pool, W, &t);
    CHECK_EQ_INT(gauge(&t.last, "store_chunks"), W);
    /* A second tar of five: the window is the newer half of the first and
     * all of the second. The first's older half leaves the store now,
     * though its source stays in the window. */
    feed(in, b);
    double deadline = lc_now_seconds() + 30 * tu_slow();
    do
        drain_until_stored(pool, W, &t);
    while ((t.transcodes < W + LATE || gauge(&t.last, "store_chunks") != W) &&
           lc_now_seconds() < deadline);
    /* Two threads may both pack one chunk at a pass's edge. */
    CHECK(t.transcodes >= W + LATE && t.transcodes <= W + LATE + 2);
    CHECK_EQ_INT(gauge(&t.last, "store_chunks"), W);
    CHECK_EQ_INT(gauge(&t.last, "store_positions"), W * N);
    CHECK_EQ_U64(t.evicted, 0);
    for (int k = 0; k < 3 * W; k++) {
        lc_chunk_item c;
        CHECK(take_chunk(pool, &c));
        if (k >= 8 && strcmp(lc_chunk_source_path(c.source), a) == 0)
            CHECK(c.member >= LATE);
        lc_item_chunk.dispose(&c);
    }
    lc_queue_close(in);
    lc_standalone_free(pool);
    lc_queue_free(in);
}

/* ---- faults ---- */

static void test_vanished_files(void)
{
    const char *dir = tu_path("vanish");
    enum { W = 6, N = 10 };
    tagged_games(dir, 0, W - 1, N);
    uint64_t two = packed_size(0, N) + packed_size(1, N) + 64; /* room for about two */
    char yaml[160];
    snprintf(yaml, sizeof yaml, "chunk_pool_size: %d\nthreads: 1\nstore_bytes: %llu\n", W,
             (unsigned long long)two);
    lc_queue *in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    lc_stage *pool = start_stage("shuffling_chunk_pool", "pool", yaml, in, 2);
    for (uint32_t g = 0; g < W; g++)
        feed(in, game_path(dir, g));
    feed_marker(in);
    totals t = {0};
    /* A pass or two, so that the store is as full as it gets. */
    for (int k = 0; k < 2 * W; k++) {
        lc_chunk_item c;
        CHECK(take_chunk(pool, &c));
        lc_item_chunk.dispose(&c);
    }
    flush_into(pool, &t);
    int64_t stored = gauge(&t.last, "store_chunks");
    CHECK(stored >= 1 && stored < W);
    for (uint32_t g = 0; g < W; g++)
        CHECK(remove(game_path(dir, g)) == 0);
    /* The stored chunks go on coming; the others are dropped, one each. */
    int served = 0;
    for (int k = 0; k < 20; k++) {
        lc_chunk_item c;
        CHECK(take_chunk(pool, &c));
        served += c.packed != NULL;
        lc_item_chunk.dispose(&c);
    }
    CHECK(served >= 20 - 3); /* what was read before the removal */
    flush_into(pool, &t);
    CHECK_EQ_U64(t.dropped, (uint64_t)(W - stored));
    CHECK_EQ_INT(gauge(&t.last, "store_chunks"), stored);
    lc_queue_close(in);
    lc_standalone_free(pool);
    lc_queue_free(in);
}

/* store_bytes: "64M" (room for all), "1" (room for nothing: every chunk
 * goes out as read from disk) or "0" (no store: nothing checks; not run). */
static void test_bad_chunk_without_validator(const char *store_bytes)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s-%s", tu_path("badcheck"), store_bytes);
    enum { N = 8 };
    tagged_games(dir, 0, 2, N);
    /* Game 3: record 5 holds a probability of 1.5. */
    lc_frame f[N];
    for (uint32_t i = 0; i < N; i++)
        tagged_frame(&f[i], 3, i);
    f[5].policy_val[1] = 1.5f;
    write_frames(game_path(dir, 3), f, N, 6);
    lc_queue *in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    char yaml[128];
    snprintf(yaml, sizeof yaml, "chunk_pool_size: 10\nthreads: 2\nstore_bytes: %s\n", store_bytes);
    lc_stage *pool = start_stage("shuffling_chunk_pool", "pool", yaml, in, 4);
    /* A pool and an unpacker, no validator between them. */
    lc_stage *unpacker =
        start_stage("chunk_unpacker", "unpacker", "threads: 2\n", pool->output, 64);
    for (uint32_t g = 0; g <= 3; g++)
        feed(in, game_path(dir, g));
    feed_marker(in);
    for (int k = 0; k < 20 * N; k++) {
        lc_frame fr;
        CHECK(lc_standalone_get_frame(unpacker->output, &fr, lc_now_ns() + 30000000000ull) == 0);
        CHECK((uint32_t)fr.plies_left / 1000 < 3);
        CHECK(tag_matches(&fr));
        lc_frame_fini(&fr);
    }
    totals t = {0};
    flush_into(pool, &t);
    CHECK_EQ_U64(t.dropped, 1);
    CHECK_EQ_U64(t.bad_probability, 1);
    if (strcmp(store_bytes, "1") == 0)
        CHECK(t.transcodes == 0 && t.over_budget > 0);
    else
        CHECK(t.hits > 0);
    CHECK(tu_log_count(0, LC_LOG_DEBUG, "game_000003.gz") >= 1);
    CHECK(tu_log_count(0, LC_LOG_DEBUG, "record 5: bad_probability") >= 1);
    lc_standalone_free(unpacker);
    lc_queue_close(in);
    lc_standalone_free(pool);
    lc_queue_free(in);
}

/* ---- concurrency ---- */

typedef struct feeder {
    lc_thread thread;
    lc_queue *in;
    const char *dir;
    uint32_t first, last;
} feeder;

static void *feed_late(void *arg)
{
    feeder *fd = arg;
    for (uint32_t g = fd->first; g <= fd->last; g++) {
        feed(fd->in, game_path(fd->dir, g));
        lc_sleep_seconds(0.002);
    }
    return NULL;
}

static void test_concurrency(void)
{
    const char *dir = tu_path("busy");
    enum { W = 30, LATE = 40, N = 24 };
    tagged_games(dir, 0, W + LATE - 1, N);
    uint64_t budget = (uint64_t)packed_size(0, N) * W / 2;
    char yaml[160];
    snprintf(yaml, sizeof yaml, "chunk_pool_size: %d\nthreads: 8\nstore_bytes: %llu\n", W,
             (unsigned long long)budget);
    lc_queue *in = lc_queue_new("in", &lc_item_source, 64, LC_OVERFLOW_BLOCK);
    lc_stage *pool = start_stage("shuffling_chunk_pool", "pool", yaml, in, 8);
    lc_stage *unpacker = start_stage("chunk_unpacker", "unpacker",
                                     "sampling_rate: 0.5\nthreads: 4\n", pool->output, 256);
    for (uint32_t g = 0; g < W; g++)
        feed(in, game_path(dir, g));
    feed_marker(in);
    feeder fd = {.in = in, .dir = dir, .first = W, .last = W + LATE - 1};
    lc_thread_start(&fd.thread, "feeder", feed_late, &fd);
    totals t = {0};
    size_t frames = 0, wrong = 0;
    double deadline = lc_now_seconds() + 60 * tu_slow();
    while (frames < 20000 && lc_now_seconds() < deadline) {
        lc_frame fr;
        if (lc_standalone_get_frame(unpacker->output, &fr, lc_now_ns() + 100000000ull) != 0)
            continue;
        wrong += !tag_matches(&fr);
        frames++;
        lc_frame_fini(&fr);
        if (frames % 500 == 0)
            flush_into(pool, &t);
    }
    lc_thread_join(&fd.thread);
    flush_into(pool, &t);
    CHECK_EQ_U64(frames, 20000);
    CHECK_EQ_U64(wrong, 0);
    CHECK_EQ_U64(t.dropped, 0);
    CHECK(t.hits > 0 && t.transcodes > 0);
    CHECK(t.evicted > 0); /* the late files pushed old ones out meanwhile */
    CHECK(t.max_store_bytes > 0 && (uint64_t)t.max_store_bytes <= budget);
    printf("8 loading threads, 4 unpackers, %d late files: %zu frames checked, %llu hits, "
           "%llu transcodes\n",
           LATE, frames, (unsigned long long)t.hits, (unsigned long long)t.transcodes);
    lc_standalone_free(unpacker);
    lc_queue_close(in);
    lc_standalone_free(pool);
    lc_queue_free(in);
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    test_exact_with_and_without_store();
    test_budget();
    test_eviction();
    test_tar_eviction();
    test_vanished_files();
    test_bad_chunk_without_validator("64M");
    test_bad_chunk_without_validator("1");
    test_concurrency();
    return check_finish();
}
