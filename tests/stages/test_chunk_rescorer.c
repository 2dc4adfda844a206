/*
 * test_chunk_rescorer: the chunk_rescorer stage between the shuffling chunk
 * pool and chunk_unpacker, with Debian's Gaviota 3-piece tables.
 *
 *   - Rescoring end to end: generated games that end in KQ against K (a
 *     win for the side with the queen wherever it is to move) after a few
 *     positions with a black rook too (four pieces: no 3-piece table
 *     answers), every game recorded as a draw. Through pool -> rescorer ->
 *     unpacker every position comes out with the tablebase's result (+1
 *     where the queen's side is to move, -1 elsewhere, the positions before
 *     the first tablebase position included), as V7 with short-term targets;
 *     in the tablebase positions with white to move, Qg7 and Qh8 (the queen
 *     given away: a draw) get 0.
 *   - The pool's records and the chunk store give the same frames, bit for
 *     bit, over several passes (from the second, every chunk comes from the
 *     store with its patch); the store's patches are made once a chunk and
 *     reused after.
 *   - Real games (tests/data) pass unchanged but for the short-term targets,
 *     which are those the unpacker computes alone (the rescorer makes them
 *     once, the unpacker does not again).
 *   - A stored game without its file (the patch made from the packed form):
 *     each position as the records path gives it, V6 and V5.
 *   - Real games of input formats 1 and 3 converted to 3 (targets kept and
 *     computed), deblundered, and their policies tempered (dist_temp,
 *     dist_offset, without tables): the same frames from pool and store.
 *   - Settings: a missing folder, a folder without tables, dist_temp 0,
 *     deblunder_width alone, deblunder_threshold alone under upstream's
 *     rules, an unknown input format or switch value, each refused with the
 *     field named; a library the build lacks. The four switches reach
 *     lc_rescore_game's config (upstream's rules by default) and the key.
 *   - A stored game whose kept patch says "dropped": not passed on,
 *     counted, logged with its file, marked bad on its source. A game
 *     whose probabilities sum to 0.5 (upstream's Validate refuses it):
 *     dropped from records and from the store (a later use by its patch),
 *     kept with invalid_games: keep.
 *   - `lcmon chunks rescore` (the binary) gives the stage's records byte
 *     for byte, or drops what the stage drops.
 *
 * Skipped (exit 77) when lcmon is built without Gaviota, or the gaviotatb
 * package's tables are not installed.
 */
#include "check.h"
#include "frames.h"
#include "records.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/text.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/packed_chunk.h"
#include "format/lc0/rescore/position.h"
#include "format/lc0/rescore/rescore_patch.h"
#include "format/lc0/rescore/tablebase.h"
#include "standalone.h"
#include "pipeline/config.h"
#include "stages/chunk_rescorer_settings.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <dirent.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED 11
#define GAMES 12
#define TAG 1000000 /* orig_m of the endgames' positions: TAG + game * 1000 + position */
#define GTB "/usr/share/gaviotatb/gtb4"
/* The endgames' checks read Gaviota's results and the losing moves zeroed:
 * lcmon's choices (upstream uses Gaviota for distance to mate only and
 * zeroes no move). The endgames repeat one board with no move between
 * positions, which upstream's Validate refuses: they are kept. */
#define LCMON_RULES "gaviota_results: true\nzero_losing_moves: true\ninvalid_games: keep\n"

/* ---- games ---- */

static void put(lc_frame *f, unsigned plane, unsigned square)
{
    f->planes[plane] |= 1ull << (square ^ 7); /* a record's bit order */
}

/*
 * Position pos of game g: white Kc3 and Qd4 against black Kh7 (and a black
 * rook on a8 before position `rook_until`), seen from the side to move
 * (white at even positions); the legal moves' equal shares as the policy.
 * Recorded a draw. orig_m tags it: TAG + g * 1000 + pos.
 */
static void endgame_frame(lc_frame *f, uint32_t g, uint32_t pos, uint32_t rook_until)
{
    memset(f, 0, sizeof *f);
    f->version = 6;
    f->input_format = 1;
    bool white = pos % 2 == 0;
    unsigned mirror = white ? 0 : 56; /* black to move: the board upside down */
    unsigned us = white ? LC_OURS : LC_THEIRS, them = white ? LC_THEIRS : LC_OURS;
    put(f, us + LC_KING, 18 ^ mirror);
    put(f, us + LC_QUEEN, 27 ^ mirror);
    put(f, them + LC_KING, 55 ^ mirror);
    if (pos < rook_until)
        put(f, them + LC_ROOK, 56 ^ mirror);
    f->side_to_move_or_enpassant = white ? 0 : 1;
    f->root_q = white ? 0.8f : -0.8f;
    f->best_q = f->played_q = f->root_q;
    f->root_d = f->best_d = f->played_d = 0.1f;
    f->plies_left = (float)(40 - pos);
    f->result_q = 0;
    f->result_d = 1;
    f->orig_q = f->orig_d = NAN;
    f->orig_m = (float)(TAG + g * 1000 + pos);
    f->policy_kld = 0.1f;
    lc_position p;
    CHECK(lc_position_from_frame(f, &p));
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&p, moves);
    CHECK(n > 0 && n <= LC_FRAME_INLINE_POLICY);
    f->n_policy = (uint16_t)n;
    for (unsigned k = 0; k < n; k++) {
        f->policy_idx[k] = moves[k].policy;
        f->policy_val[k] = 1.0f / (float)n;
    }
    f->played_idx = f->best_idx = moves[0].policy;
}

/* The endgames, each a .gz in dir: 8 to 13 positions, 2 to 4 with the rook. */
static void endgames(const char *dir, char ***paths, size_t *n_paths)
{
    tu_mkdirs(dir);
    for (uint32_t g = 0; g < GAMES; g++) {
        uint32_t n = 8 + g % 6, rook_until = 2 + g % 3;
        lc_frame f[16];
        for (uint32_t i = 0; i < n; i++)
            endgame_frame(&f[i], g, i, rook_until);
        size_t size, gz_len;
        uint8_t *recs = tf_records(f, n, 6, &size);
        uint8_t *gz = tu_gzip(recs, (size_t)n * size, 1, &gz_len);
        char *path = lc_xasprintf("%s/endgame_%02u.gz", dir, g);
        tu_write_file(path, gz, gz_len);
        free(gz);
        free(recs);
        *paths = realloc(*paths, (*n_paths + 1) * sizeof **paths);
        (*paths)[(*n_paths)++] = path;
    }
}

/* Two real games (V6, no ending in the tables) as well. */
static void real_games(char ***paths, size_t *n_paths)
{
    char *dir = lc_xasprintf("%s/lc0-v0.31.2-fmt1", tu_test_data());
    char *first = tu_first_gz(dir);
    CHECK(first != NULL);
    *paths = realloc(*paths, (*n_paths + 1) * sizeof **paths);
    (*paths)[(*n_paths)++] = first;
    free(dir);
}

static bool is_endgame(const lc_frame *f)
{
    return f->orig_m >= TAG && f->orig_m < TAG + GAMES * 1000;
}

/* ---- the chain ---- */

static lc_stage *start_stage(const char *type, const char *name, const char *yaml, lc_queue *in,
                             size_t out_cap)
{
    return lc_standalone_running(type, name, yaml, in, out_cap, SEED);
}

static uint64_t count(const lc_stage_metrics *m, const char *name)
{
    const lc_metric_slot *c = lc_metrics_find(m, name);
    return c ? c->count : 0;
}

/* pool (store_bytes) -> rescorer (NULL: none) -> unpacker over paths: the
 * first `want` frames; the rescorer's counts in *m. */
static lc_frame *run_chain(const char *store_bytes, const char *rescorer_yaml, char **paths,
                           size_t n_paths, size_t want, lc_stage_metrics *m)
{
    lc_queue *in = lc_queue_new("in", &lc_item_source, 256, LC_OVERFLOW_BLOCK);
    char yaml[256];
    snprintf(yaml, sizeof yaml, "chunk_pool_size: 1000\nthreads: 1\nstore_bytes: %s\n",
             store_bytes);
    lc_stage *pool = start_stage("shuffling_chunk_pool", "pool", yaml, in, 4);
    lc_stage *rescorer =
        rescorer_yaml ? start_stage("chunk_rescorer", "rescorer", rescorer_yaml, pool->output, 4)
                      : NULL;
    lc_stage *unpacker = start_stage("chunk_unpacker", "unpacker", "threads: 1\n",
                                     rescorer ? rescorer->output : pool->output, 64);
    for (size_t i = 0; i < n_paths; i++) {
        lc_source_item item = {.source = tu_chunk_source(paths[i])};
        CHECK_OK(lc_queue_put(in, &item, NULL));
    }
    lc_source_item marker = {.flags = LC_ITEM_SCAN_DONE};
    CHECK_OK(lc_queue_put(in, &marker, NULL));
    lc_frame *frames = calloc(want, sizeof *frames);
    size_t got = 0;
    while (got < want && lc_standalone_get_frame(unpacker->output, &frames[got],
                                                 lc_now_ns() + 30000000000ull) == 0)
        got++;
    CHECK_EQ_U64(got, want);
    memset(m, 0, sizeof *m);
    if (rescorer)
        lc_standalone_flush(rescorer, m);
    lc_standalone_free(unpacker);
    lc_standalone_free(rescorer);
    lc_standalone_free(pool);
    lc_queue_free(in);
    return frames;
}

/* In a tablebase position with white to move (no rook), Qg7 and Qh8 give
 * the queen away (a draw where the rest win): 0; the rest share 1. True
 * when f's policy is that, bit for bit as the rescorer computes it. */
static bool sharpened(const lc_frame *f)
{
    lc_position p;
    CHECK(lc_position_from_frame(f, &p));
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&p, moves);
    if (n != f->n_policy)
        return false;
    for (unsigned k = 0; k < n; k++) {
        bool hangs = moves[k].from == 27 && (moves[k].to == 54 || moves[k].to == 63);
        float want = hangs ? 0.0f : 1.0f / (float)(n - 2);
        if (f->policy_idx[k] != moves[k].policy || fabsf(f->policy_val[k] - want) > 1e-6f)
            return false;
    }
    return true;
}

/* Every endgame frame has the tablebase's result, and the tablebase
 * positions with white to move the sharpened policy; returns how many
 * of those there were. */
static size_t check_results(const lc_frame *f, size_t n, uint32_t version)
{
    size_t endgame = 0, wrong = 0, sharp = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_endgame(&f[i]))
            continue;
        endgame++;
        uint32_t tag = (uint32_t)f[i].orig_m - TAG, pos = tag % 1000, g = tag / 1000;
        float want = pos % 2 == 0 ? 1.0f : -1.0f;
        if ((f[i].result_q != want || f[i].result_d != 0) && wrong++ < 3)
            fprintf(stderr, "game %u position %u: result %g/%g, want %g/0\n", g, pos, f[i].result_q,
                    f[i].result_d, want);
        CHECK(f[i].result_q == want && f[i].result_d == 0);
        CHECK_EQ_U64(f[i].version, version);
        if (pos % 2 == 0 && pos >= 2 + g % 3) {
            CHECK(sharpened(&f[i]));
            sharp++;
        }
    }
    CHECK(endgame > n / 2);
    return sharp;
}

/* The frames of pool records (a) and of the store (b) are the same, bit
 * for bit; those of real games are c's (no rescorer) but for the version
 * when same_version is false. Returns how many real games' frames. */
static size_t compare(lc_frame *a, lc_frame *b, lc_frame *c, size_t n, bool same_version)
{
    size_t differ = 0, real = 0;
    for (size_t i = 0; i < n; i++) {
        int before = atomic_load(&check_failed_);
        tf_check_same_fields(&a[i], &b[i], true);
        tf_check_same_tensors(&a[i], &b[i]);
        if (!is_endgame(&a[i])) {
            tf_check_same_fields(&a[i], &c[i], same_version);
            real++;
        }
        if (atomic_load(&check_failed_) != before && differ++ < 3)
            fprintf(stderr, "  frame %zu differs\n", i);
    }
    return real;
}

static void free_frames(lc_frame *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        lc_frame_fini(&f[i]);
    free(f);
}

/* st_targets keep (the default: V6 stays V6, the unpacker computes the
 * targets) and compute (V7 from the rescorer, not computed again). */
static void test_rescored_from_pool_and_store(void)
{
    char **paths = NULL;
    size_t n_paths = 0;
    endgames(tu_path("endgames"), &paths, &n_paths);
    real_games(&paths, &n_paths);
    size_t positions = 0;
    for (uint32_t g = 0; g < GAMES; g++)
        positions += 8 + g % 6;
    size_t want = positions * 4; /* about four passes (with the real game's) */
    lc_stage_metrics none;
    lc_frame *c = run_chain("0", NULL, paths, n_paths, want, &none);
    static const char *const yaml[] = {"gaviota_paths: " GTB "\nthreads: 1\n" LCMON_RULES,
                                       "gaviota_paths: " GTB "\nst_targets: compute\n" LCMON_RULES};
    for (unsigned k = 0; k < 2; k++) {
        lc_stage_metrics on, off;
        lc_frame *a = run_chain("0", yaml[k], paths, n_paths, want, &off);
        lc_frame *b = run_chain("64M", yaml[k], paths, n_paths, want, &on);
        uint32_t version = k ? 7 : 6;
        size_t sharp = check_results(a, want, version);
        CHECK(sharp > 0);
        check_results(b, want, version);
        size_t real = compare(a, b, c, want, k == 0);
        CHECK(real > 0);
        printf("st_targets %s: %zu frames, the tablebase's results (%zu sharpened), the same "
               "from pool and store (%zu of a real game, as without a rescorer)\n",
               k ? "compute" : "keep", want, sharp, real);
        free_frames(a, want);
        free_frames(b, want);
        /* Records: every use rescored; the store: a patch a chunk, then
         * reused. */
        CHECK(count(&off, "hits") > 0);
        CHECK(count(&off, "games_rescored") >= GAMES);
        CHECK(count(&off, "results_changed") > 0);
        CHECK_EQ_U64(count(&off, "st_targets") > 0, k == 1);
        CHECK_EQ_U64(count(&off, "patches_made"), 0);
        CHECK(count(&on, "patches_made") >= GAMES && count(&on, "patches_made") <= GAMES + 1);
        CHECK(count(&on, "patches_reused") > count(&on, "patches_made"));
        CHECK_EQ_U64(count(&on, "games_rescored"), GAMES);
        CHECK_EQ_U64(count(&on, "patches_other_settings"), 0);
        printf("store: %llu probed, %llu hits; %llu patches made, %llu reused\n",
               (unsigned long long)count(&on, "probed"), (unsigned long long)count(&on, "hits"),
               (unsigned long long)count(&on, "patches_made"),
               (unsigned long long)count(&on, "patches_reused"));
    }
    free_frames(c, want);
    for (size_t i = 0; i < n_paths; i++)
        free(paths[i]);
    free(paths);
}

/* Real games of input formats 1 and 3, their positions counted. */
static size_t format_games(char ***paths, size_t *n_paths)
{
    size_t positions = 0;
    const char *folders[] = {"lc0-v0.31.2-fmt1", "lc0-v0.31.2-fmt3"};
    for (unsigned k = 0; k < 2; k++) {
        char *dir = lc_xasprintf("%s/%s", tu_test_data(), folders[k]);
        char *path = tu_first_gz(dir);
        CHECK(path != NULL);
        lc_chunk_source *src = tu_chunk_source(path);
        lc_chunk_data c;
        CHECK_OK(lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, &c, NULL));
        positions += c.n_records;
        lc_chunk_data_fini(&c);
        lc_chunk_source_unref(src);
        *paths = realloc(*paths, (*n_paths + 1) * sizeof **paths);
        (*paths)[(*n_paths)++] = path;
        free(dir);
    }
    return positions;
}

/* new_input_format (targets kept and computed) and the deblunder on real
 * games: the same frames from the pool's records and from the store. */
static void test_converted_and_deblundered(void)
{
    char **paths = NULL;
    size_t n_paths = 0;
    size_t want = format_games(&paths, &n_paths) * 3;
    static const char *const yaml[] = {
        "new_input_format: 3\n",
        "new_input_format: 3\nst_targets: compute\n",
        "deblunder_threshold: 0.05\ndeblunder_width: 0.02\n",
        "dist_temp: 0.5\ndist_offset: 0.01\n",
    };
    for (unsigned k = 0; k < 4; k++) {
        lc_stage_metrics on, off;
        lc_frame *a = run_chain("0", yaml[k], paths, n_paths, want, &off);
        lc_frame *b = run_chain("64M", yaml[k], paths, n_paths, want, &on);
        size_t differ = 0;
        for (size_t i = 0; i < want; i++) {
            int before = atomic_load(&check_failed_);
            tf_check_same_fields(&a[i], &b[i], true);
            tf_check_same_tensors(&a[i], &b[i]);
            if (k < 2)
                CHECK_EQ_U64(a[i].input_format, 3);
            CHECK_EQ_U64(a[i].version, k == 1 ? 7 : 6);
            if (atomic_load(&check_failed_) != before && differ++ < 3)
                fprintf(stderr, "  %s: frame %zu differs\n", yaml[k], i);
        }
        free_frames(a, want);
        free_frames(b, want);
        if (k < 2) {
            CHECK(count(&off, "converted") > 0);
            CHECK_EQ_U64(count(&on, "converted"), 1); /* the format-1 game, once */
        } else if (k == 3) {
            CHECK(count(&on, "policies_sharpened") > 0); /* tempered, tables or not */
        } else {
            CHECK(count(&on, "blunders") > 0);
            CHECK(count(&on, "deblundered") > 0);
        }
        printf("%.*s: %zu frames the same from pool and store; store: %llu converted, %llu "
               "blunders, %llu positions deblundered, %llu patches made\n",
               (int)strcspn(yaml[k], "\n"), yaml[k], want,
               (unsigned long long)count(&on, "converted"),
               (unsigned long long)count(&on, "blunders"),
               (unsigned long long)count(&on, "deblundered"),
               (unsigned long long)count(&on, "patches_made"));
    }
    for (size_t i = 0; i < n_paths; i++)
        free(paths[i]);
    free(paths);
}

/* A stored game whose file is gone (no source: the rescorer works from the
 * packed form alone): its patch gives each position what the records path
 * gives it, bit for bit, for records of versions 6 and 5 (the int8 result). */
static void test_packed_without_file(void)
{
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 8, LC_OVERFLOW_BLOCK);
    lc_stage *r =
        start_stage("chunk_rescorer", "rescorer", "gaviota_paths: " GTB "\n" LCMON_RULES, in, 8);
    lc_pack_ctx *pack = lc_pack_ctx_new(1, 8);
    lc_unpack_ctx *unpack = lc_unpack_ctx_new();
    static const uint32_t versions[] = {6, 5};
    for (unsigned k = 0; k < 2; k++) {
        uint32_t n = 11, version = versions[k];
        lc_frame f[16];
        for (uint32_t i = 0; i < n; i++)
            endgame_frame(&f[i], 3, i, 3);
        size_t size;
        uint8_t *recs = tf_records(f, n, version, &size);
        lc_packed_chunk *packed = NULL;
        const char *reason = NULL;
        uint32_t bad_at = 0;
        CHECK_OK(lc_packed_chunk_build(pack, recs, size, n, version, &packed, &reason, &bad_at));
        lc_chunk_item a = {
            .data = recs, .version = version, .record_size = (uint32_t)size, .n_records = n};
        lc_chunk_item b = {.packed = packed, .version = version, .n_records = n};
        CHECK_OK(lc_queue_put(in, &a, NULL));
        CHECK_OK(lc_queue_put(in, &b, NULL));
        CHECK_OK(lc_queue_get_until(r->output, &a, NULL, lc_now_ns() + 30000000000ull));
        CHECK_OK(lc_queue_get_until(r->output, &b, NULL, lc_now_ns() + 30000000000ull));
        CHECK(b.packed != NULL && b.patch != NULL);
        for (uint32_t i = 0; i < n && b.patch; i++) {
            lc_frame fa, fb;
            CHECK_OK(
                lc_frame_from_record(a.data + (size_t)i * a.record_size, a.version, &fa, NULL));
            CHECK_OK(lc_packed_chunk_frame(b.packed, unpack, i, &fb, NULL));
            CHECK_OK(lc_rescore_patch_apply(b.patch, i, &fb, NULL));
            tf_check_same_fields(&fa, &fb, true);
            CHECK(fa.result_q == (i % 2 ? -1.0f : 1.0f));
            lc_frame_fini(&fa);
            lc_frame_fini(&fb);
        }
        lc_item_chunk.dispose(&a);
        lc_item_chunk.dispose(&b);
        for (uint32_t i = 0; i < n; i++)
            lc_frame_fini(&f[i]);
    }
    lc_stage_metrics m;
    lc_standalone_flush(r, &m);
    CHECK_EQ_U64(count(&m, "patches_from_store"), 2);
    printf("without its file: the patch from the packed form as the records (V6, V5)\n");
    lc_unpack_ctx_free(unpack);
    lc_pack_ctx_free(pack);
    lc_standalone_free(r);
    lc_queue_free(in);
}

/* ---- settings ---- */

/* The block refused, at load or at start, with each of `want` in the
 * message. */
static void refused(const char *yaml, const char *want1, const char *want2)
{
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_standalone_new(lc_stage_class_find("chunk_rescorer"), "r", yaml, NULL, 4, NULL, &s,
                               &err);
    if (rc == 0) {
        rc = lc_standalone_start(s, &err);
        lc_standalone_free(s);
    }
    CHECK(rc != 0);
    if (!tu_contains(err.msg, want1) || (want2 && !tu_contains(err.msg, want2)))
        fprintf(stderr, "for '%s': got '%s'\n", yaml, err.msg);
    CHECK(tu_contains(err.msg, want1));
    CHECK(!want2 || tu_contains(err.msg, want2));
}

static void test_settings(void)
{
    refused("gaviota_paths: /no/such/tables\n", "gaviota_paths: /no/such/tables", "No such file");
    tu_mkdirs(tu_path("empty"));
    char *empty = lc_xasprintf("gaviota_paths: %s\n", tu_path("empty"));
    refused(empty, "gaviota_paths", tu_path("empty"));
    free(empty);
    refused("gaviota_paths: " GTB "\ndist_temp: 0\n", "dist_temp", NULL);
    refused("deblunder_width: 0.1\n", "deblunder_width: only used with deblunder_threshold", NULL);
    refused("new_input_format: 6\n", "new_input_format: 6 is not an input format", NULL);
    /* Upstream's loader deblunders only with both settings. */
    refused("deblunder_threshold: 0.1\n",
            "deblunder_threshold: upstream's loader deblunders only with both",
            "deblunder_rules: lcmon");
    refused("deblunder_rules: both\n", "deblunder_rules", "lcmon");
    refused("invalid_games: skip\n", "invalid_games", "keep");
    refused("zero_losing_moves: 2\n", "zero_losing_moves", NULL);
    refused("st_targets: keep\nst_theta: 0.5\n", "st_theta: only used with st_targets", NULL);
    if (!lc_tablebases_have_syzygy())
        refused("syzygy_paths: /tmp\n", "built without Syzygy", "libfathom-dev");
    else
        printf("this build has Syzygy: the refusal of syzygy_paths without it is not tried\n");
}

/* The switches as lc_rescore_game takes them: the defaults are upstream's
 * (every switch off, the threshold NaN: no deblunder); each row sets its
 * own; lcmon's deblunder takes a threshold alone (width 0). */
static void test_switches(void)
{
    const lc_stage_class *cls = lc_stage_class_find("chunk_rescorer");
    static const char *const yaml[] = {
        "threads: 1\n",
        "zero_losing_moves: true\ngaviota_results: true\ndeblunder_rules: lcmon\n"
        "invalid_games: keep\ndeblunder_threshold: 0.25\n",
        "deblunder_threshold: 0.1\ndeblunder_width: 0\n",
    };
    uint64_t keys[3];
    for (unsigned k = 0; k < 3; k++) {
        void *block = NULL;
        lc_error err;
        lc_error_clear(&err);
        CHECK_OK(lc_config_parse_block(cls, yaml[k], &block, &err));
        if (!block) {
            fprintf(stderr, "%s: %s\n", yaml[k], err.msg);
            continue;
        }
        const lc_rescorer_config *c = block;
        lc_rescore_config rc;
        lc_rescorer_rescore_config(c, NULL, &rc);
        CHECK_EQ_U64(rc.zero_losing_moves, k == 1);
        CHECK_EQ_U64(rc.gaviota_results, k == 1);
        CHECK_EQ_U64(rc.deblunder_lcmon, k == 1);
        CHECK_EQ_U64(rc.keep_invalid, k == 1);
        CHECK(k == 0 ? isnan(rc.deblunder_threshold)
                     : rc.deblunder_threshold == (k == 1 ? 0.25 : 0.1));
        CHECK(rc.deblunder_width == 0);
        /* Validation alone is work; keep with nothing else is none. */
        CHECK(lc_rescorer_has_work(&rc));
        keys[k] = lc_rescorer_key(c);
        lc_config_free_block(cls, block);
    }
    CHECK(keys[0] != keys[1] && keys[1] != keys[2] && keys[0] != keys[2]);
    void *block = NULL;
    CHECK_OK(lc_config_parse_block(cls, "invalid_games: keep\n", &block, NULL));
    lc_rescore_config rc;
    lc_rescorer_rescore_config(block, NULL, &rc);
    CHECK(!lc_rescorer_has_work(&rc));
    lc_config_free_block(cls, block);
    printf("switches: upstream's by default, each row its own field, deblunder off as NaN\n");
}

/* A line of the log since seq holding both strings. */
static bool logged(uint64_t seq, const char *a, const char *b)
{
    static lc_log_entry lines[64];
    size_t n = lc_log_read(seq, lines, 64, NULL);
    for (size_t i = 0; i < n; i++)
        if (tu_contains(lines[i].text, a) && (!b || tu_contains(lines[i].text, b)))
            return true;
    return false;
}

/*
 * A stored game whose kept patch says "dropped" (what an earlier use
 * leaves when upstream's Validate refused the game): the rescorer drops it
 * without rescoring (not passed on: the next chunk is the first out),
 * counts it in dropped_invalid, logs it with its file, and marks it bad on
 * its source, which makes the pool drop it for good; the same game without
 * the patch, and with a dropped patch of other settings, is passed on
 * (rescored afresh: a valid game). test_invalid_game drops one by the
 * rules themselves.
 */
static void test_dropped_game(void)
{
    const lc_stage_class *cls = lc_stage_class_find("chunk_rescorer");
    const char *yaml = "threads: 1\n";
    void *block = NULL;
    CHECK_OK(lc_config_parse_block(cls, yaml, &block, NULL));
    uint64_t key = lc_rescorer_key(block);
    lc_config_free_block(cls, block);
    char *dir = lc_xasprintf("%s/lc0-v0.31.2-fmt1", tu_test_data());
    char *path = tu_first_gz(dir);
    lc_chunk_source *src = tu_chunk_source(path);
    lc_chunk_data d;
    CHECK_OK(lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, &d, NULL));
    lc_pack_ctx *pack = lc_pack_ctx_new(1, 8);
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 8, LC_OVERFLOW_BLOCK);
    lc_stage *r = start_stage("chunk_rescorer", "rescorer", yaml, in, 8);
    uint64_t seq = lc_log_last_seq();
    /* 0: dropped (its patch, this key); 1: no patch; 2: a dropped patch of
     * other settings (rescored afresh: a valid game, kept). */
    for (unsigned k = 0; k < 3; k++) {
        lc_packed_chunk *packed = NULL;
        const char *reason = NULL;
        uint32_t bad_at = 0;
        CHECK_OK(lc_packed_chunk_build(pack, d.data, d.record_size, d.n_records, d.version, &packed,
                                       &reason, &bad_at));
        if (k != 1)
            lc_packed_chunk_attach_aux(
                packed, LC_AUX_RESCORE,
                lc_rescore_patch_dropped(k == 0 ? key : key ^ 1, d.n_records));
        lc_chunk_item c = {.packed = packed,
                           .version = d.version,
                           .n_records = d.n_records,
                           .global_index = 100 + k,
                           .source = lc_chunk_source_ref(src),
                           .member = 0};
        CHECK_OK(lc_queue_put(in, &c, NULL));
    }
    for (unsigned k = 1; k < 3; k++) {
        lc_chunk_item out;
        CHECK_OK(lc_queue_get_until(r->output, &out, NULL, lc_now_ns() + 30000000000ull));
        CHECK_EQ_U64(out.global_index, 100 + k);
        CHECK(out.patch == NULL || !lc_rescore_patch_is_dropped(out.patch));
        lc_item_chunk.dispose(&out);
    }
    lc_stage_metrics m;
    lc_standalone_flush(r, &m);
    CHECK_EQ_U64(count(&m, "dropped_invalid"), 1);
    CHECK_EQ_U64(count(&m, "chunks"), 3); /* in: the two passed on and the one dropped */
    CHECK_EQ_U64(count(&m, "patches_other_settings"), 1);
    CHECK(lc_chunk_source_is_bad(src, 0));
    CHECK(logged(seq, "dropping", path));
    printf("a stored game whose patch says dropped: dropped, counted, logged, marked bad\n");
    lc_standalone_free(r);
    lc_queue_free(in);
    lc_pack_ctx_free(pack);
    lc_chunk_data_fini(&d);
    lc_chunk_source_unref(src);
    free(path);
    free(dir);
}

/* A real game with record 5's probabilities halved (they sum to 0.5:
 * upstream's Validate refuses the game), written to a .gz; its path. */
static char *invalid_game(void)
{
    char *path = lc_xasprintf("%s", tu_path("invalid.gz"));
    tu_invalid_game(path);
    return path;
}

/* One use of the game at path through a rescorer (yaml): from its records
 * (packed NULL), or from the packed chunk; whether it came out, and the
 * counts in *m. */
static bool one_use(const char *yaml, const char *path, lc_packed_chunk *packed,
                    lc_stage_metrics *m)
{
    lc_chunk_source *src = tu_chunk_source(path);
    lc_chunk_data d;
    CHECK_OK(lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, &d, NULL));
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 4, LC_OVERFLOW_BLOCK);
    lc_stage *r = start_stage("chunk_rescorer", "rescorer", yaml, in, 4);
    lc_chunk_item c = {.version = d.version, .n_records = (uint32_t)d.n_records, .source = src};
    if (packed) {
        c.packed = lc_packed_chunk_ref(packed);
        lc_chunk_data_fini(&d);
    } else {
        c.data = d.data;
        c.record_size = (uint32_t)d.record_size;
    }
    /* And a valid chunk after it: when it is out, the first was handled. */
    char *dir = lc_xasprintf("%s/lc0-v0.31.2-fmt5", tu_test_data());
    char *other = tu_first_gz(dir);
    lc_chunk_source *src2 = tu_chunk_source(other);
    lc_chunk_data d2;
    CHECK_OK(lc_chunk_source_load(src2, 0, LC_INFLATE_AUTO, &d2, NULL));
    lc_chunk_item c2 = {.data = d2.data,
                        .version = d2.version,
                        .record_size = (uint32_t)d2.record_size,
                        .n_records = (uint32_t)d2.n_records,
                        .global_index = 7,
                        .source = src2};
    CHECK_OK(lc_queue_put(in, &c, NULL));
    CHECK_OK(lc_queue_put(in, &c2, NULL));
    lc_chunk_item out;
    bool came = false;
    for (unsigned k = 0; k < 2; k++) {
        CHECK_OK(lc_queue_get_until(r->output, &out, NULL, lc_now_ns() + 30000000000ull));
        bool last = out.global_index == 7;
        came |= !last;
        lc_item_chunk.dispose(&out);
        if (last)
            break;
    }
    lc_standalone_flush(r, m);
    lc_standalone_free(r);
    lc_queue_free(in);
    free(other);
    free(dir);
    return came;
}

/*
 * A game upstream's Validate refuses (probabilities summing to 0.5), end
 * to end: from the pool's records it is dropped (not passed on, counted,
 * logged with its file and the reason, its source marked bad so that the
 * pool drops it for good); from the store its patch says "dropped" and a
 * later use of the same packed chunk drops it by that patch alone
 * (patches_reused, no new probe of the game); invalid_games: keep passes
 * it on.
 */
static void test_invalid_game(void)
{
    char *path = invalid_game();
    lc_stage_metrics m;
    uint64_t seq = lc_log_last_seq();
    CHECK(!one_use("threads: 1\n", path, NULL, &m));
    CHECK_EQ_U64(count(&m, "dropped_invalid"), 1);
    CHECK_EQ_U64(count(&m, "chunks"), 2);
    CHECK(logged(seq, path, "sum to"));
    CHECK(one_use("invalid_games: keep\n", path, NULL, &m));
    CHECK_EQ_U64(count(&m, "dropped_invalid"), 0);
    /* The store: the packed form, the file still there. */
    lc_chunk_source *src = tu_chunk_source(path);
    lc_chunk_data d;
    CHECK_OK(lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, &d, NULL));
    lc_pack_ctx *pack = lc_pack_ctx_new(1, 8);
    lc_packed_chunk *packed = NULL;
    const char *reason = NULL;
    uint32_t bad_at = 0;
    CHECK_OK(lc_packed_chunk_build(pack, d.data, d.record_size, d.n_records, d.version, &packed,
                                   &reason, &bad_at));
    CHECK(!one_use("threads: 1\n", path, packed, &m));
    CHECK_EQ_U64(count(&m, "dropped_invalid"), 1);
    CHECK_EQ_U64(count(&m, "patches_made"), 1);
    const float *kept = lc_packed_chunk_aux(packed, LC_AUX_RESCORE);
    CHECK(kept && lc_rescore_patch_is_dropped(kept));
    CHECK(!one_use("threads: 1\n", path, packed, &m));
    CHECK_EQ_U64(count(&m, "dropped_invalid"), 1);
    CHECK_EQ_U64(count(&m, "patches_reused"), 1);
    CHECK_EQ_U64(count(&m, "games"), 1); /* the valid one only: the dropped one not again */
    printf("a game whose probabilities sum to 0.5: dropped from records and from the store "
           "(the second use by its patch), kept with invalid_games: keep\n");
    lc_packed_chunk_unref(packed);
    lc_pack_ctx_free(pack);
    lc_chunk_data_fini(&d);
    lc_chunk_source_unref(src);
    free(path);
}

/* ---- `lcmon chunks rescore` against the stage ---- */

/* The stage's records for the game at path with these settings (KEY=VALUE
 * pairs): a chunk of its records, as the pool without a store hands it
 * on, through a rescorer; the chunk that comes out in *out, or false when
 * the rescorer dropped it (its dropped_invalid count). */
static bool stage_records(const char *path, const char *const *sets, unsigned n_sets,
                          lc_chunk_item *out)
{
    char yaml[2048] = "threads: 1\n";
    for (unsigned k = 0; k < n_sets; k++) {
        size_t at = strlen(yaml), key = strcspn(sets[k], "=");
        snprintf(yaml + at, sizeof yaml - at, "%.*s: %s\n", (int)key, sets[k], sets[k] + key + 1);
    }
    lc_chunk_source *src = tu_chunk_source(path);
    lc_chunk_data d;
    CHECK_OK(lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, &d, NULL));
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 4, LC_OVERFLOW_BLOCK);
    lc_stage *r = start_stage("chunk_rescorer", "rescorer", yaml, in, 4);
    lc_chunk_item c = {.data = d.data,
                       .version = d.version,
                       .record_size = (uint32_t)d.record_size,
                       .n_records = (uint32_t)d.n_records,
                       .source = src};
    CHECK_OK(lc_queue_put(in, &c, NULL));
    int kept = -1;
    uint64_t until = lc_now_ns() + 30000000000ull;
    while (kept < 0 && lc_now_ns() < until) {
        if (lc_queue_get_until(r->output, out, NULL, lc_now_ns() + 20000000ull) == 0) {
            kept = 1;
        } else {
            lc_stage_metrics m;
            lc_standalone_flush(r, &m);
            if (count(&m, "dropped_invalid") == 1)
                kept = 0;
        }
    }
    CHECK(kept >= 0);
    lc_standalone_free(r);
    lc_queue_free(in);
    return kept == 1;
}

/* The tool's output for the same: `lcmon chunks rescore PATH -o OUT --set
 * ...`, read back as the loader reads a chunk into *out. Its exit status:
 * 0 written, 1 dropped (then it says why and writes nothing). */
static int tool_records(const char *lcmon, const char *path, const char *const *sets,
                        unsigned n_sets, lc_chunk_data *out)
{
    const char *out_path = tu_path("rescored.gz");
    unlink(out_path);
    char *argv[64] = {(char *)lcmon, "chunks", "rescore", (char *)path, "-o", (char *)out_path};
    unsigned argc = 6;
    for (unsigned k = 0; k < n_sets; k++) {
        argv[argc++] = "--set";
        argv[argc++] = (char *)sets[k];
    }
    argv[argc] = NULL;
    const char *said = tu_path("rescore.txt");
    int rc = tu_run(argv, said);
    size_t len = 0;
    char *text = (char *)tu_read_file(said, &len);
    if (rc == 0) {
        lc_chunk_source *src = tu_chunk_source(out_path);
        CHECK_OK(lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, out, NULL));
        lc_chunk_source_unref(src);
    } else {
        CHECK_EQ_INT(rc, 1);
        CHECK(text && tu_contains(text, "dropped: "));
        CHECK(access(out_path, F_OK) != 0);
    }
    free(text);
    return rc;
}

/*
 * `lcmon chunks rescore` gives the records the stage gives a chunk from the
 * pool, byte for byte, for the same game and settings: the endgames (their
 * results from the tables), real games of formats 1 and 3, with the
 * defaults, Gaviota with lcmon's choices, Syzygy with tempering, a boost
 * and the deblunder, a conversion with targets, and lcmon's deblunder.
 * The endgames (one board repeated, no move between positions) are
 * refused by upstream's Validate: where invalid_games is drop, the stage
 * drops them and the tool says so, exit status 1, nothing written. Needs
 * the lcmon binary (LCMON, set by meson).
 */
static void test_tool_equals_stage(void)
{
    const char *lcmon = getenv("LCMON");
    if (!lcmon) {
        printf("LCMON not set: `lcmon chunks rescore` not compared with the stage\n");
        return;
    }
    char **paths = NULL;
    size_t n_paths = 0;
    endgames(tu_path("tool_endgames"), &paths, &n_paths);
    format_games(&paths, &n_paths);
    const char *tables = getenv("LCMON_SYZYGY_PATH"); /* meson sets it: tests/syzygy */
    char *syzygy = tables ? lc_xasprintf("syzygy_paths=%s", tables)
                          : lc_xasprintf("syzygy_paths=%s/../syzygy", tu_test_data());
    const char *const settings[][8] = {
        {NULL},
        {"gaviota_paths=" GTB, "gaviota_results=true", "zero_losing_moves=true",
         "invalid_games=keep"},
        {syzygy, "dist_temp=0.5", "dist_offset=0.01", "dtz_boost=0.1", "deblunder_threshold=0.05",
         "deblunder_width=0.02", "invalid_games=keep"},
        {"new_input_format=3", "st_targets=compute", "st_theta=0.9"},
        {"deblunder_rules=lcmon", "deblunder_threshold=0.1", "invalid_games=keep"},
    };
    size_t compared = 0, changed = 0, dropped = 0;
    for (unsigned k = 0; k < sizeof settings / sizeof *settings; k++) {
        if (k == 2 && !lc_tablebases_have_syzygy())
            continue;
        unsigned n_sets = 0;
        while (n_sets < 8 && settings[k][n_sets])
            n_sets++;
        for (size_t g = 0; g < n_paths; g += g < GAMES - 1 ? 3 : 1) {
            lc_chunk_item a;
            bool kept = stage_records(paths[g], settings[k], n_sets, &a);
            lc_chunk_data b;
            int rc = tool_records(lcmon, paths[g], settings[k], n_sets, &b);
            CHECK_EQ_INT(rc, kept ? 0 : 1);
            dropped += !kept && rc == 1;
            if (kept && rc == 0) {
                CHECK_EQ_U64(b.version, a.version);
                CHECK_EQ_U64(b.n_records, a.n_records);
                bool same = b.version == a.version && b.n_records == a.n_records &&
                            memcmp(a.data, b.data, b.n_records * b.record_size) == 0;
                if (!same)
                    fprintf(stderr, "%s with setting set %u: the tool's records differ\n", paths[g],
                            k);
                CHECK(same);
                lc_chunk_source *src = tu_chunk_source(paths[g]);
                lc_chunk_data d;
                CHECK_OK(lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, &d, NULL));
                changed += d.record_size != b.record_size ||
                           memcmp(d.data, b.data, d.n_records * d.record_size) != 0;
                lc_chunk_data_fini(&d);
                lc_chunk_source_unref(src);
                lc_chunk_data_fini(&b);
                compared++;
            }
            if (kept)
                lc_item_chunk.dispose(&a);
        }
    }
    CHECK(changed > compared / 2);
    /* The endgames (no move between positions) with invalid_games: drop. */
    CHECK(dropped >= 4);
    printf("lcmon chunks rescore: %zu games the same as the stage's records, byte for byte (%zu "
           "changed by the rescorer), %zu dropped by both\n",
           compared, changed, dropped);
    free(syzygy);
    for (size_t i = 0; i < n_paths; i++)
        free(paths[i]);
    free(paths);
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    if (!lc_tablebases_have_gaviota()) {
        printf("skipped: this lcmon is built without Gaviota tablebases (libgaviotatb-dev)\n");
        return 77;
    }
    if (!tu_is_dir(GTB)) {
        printf("skipped: no Gaviota tables in %s (Debian's gaviotatb package)\n", GTB);
        return 77;
    }
    test_settings();
    test_switches();
    test_dropped_game();
    test_rescored_from_pool_and_store();
    test_packed_without_file();
    test_converted_and_deblundered();
    test_invalid_game();
    test_tool_equals_stage();
    return check_finish();
}
