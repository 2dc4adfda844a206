/*
 * test_chunk_rescorer_memo: what the chunk_rescorer remembers of a game
 * from the pool's records (remember_games, the source's memo words) changes
 * nothing it hands on.
 *
 *   - Pool (store_bytes: 0, one loading thread) -> rescorer -> unpacker
 *     over the games of tests/data (the 35 .gz of formats 1, 2, 3 and 5,
 *     and the 8 members of training-run-mini.tar), a real game whose
 *     record 5 has its probabilities halved (they sum to 0.5: upstream's
 *     Validate refuses it) and, with the Syzygy tables of tests/data, five
 *     endgame-rich games of gen/lc0_games.h (one per ending; the tables
 *     change their results and plies_left). About five passes of the
 *     window at sampling 1/8, with remember_games true and false: the
 *     frames are the same, bit for bit, and so is every count but the
 *     work counters `probed`, `hits`, `misses` (a remembered game makes no
 *     probe) and `known_as_is`, `known_valid` (the uses the memo spared).
 *     With the memo, real games are passed on as they come from their
 *     second use on (known_as_is), the endgames rescored without
 *     Validate's checks (known_valid); the invalid game is dropped at its
 *     first use either way (and marked bad: the pool drops it for good).
 *     Settings: upstream's defaults with Syzygy; and with st_targets:
 *     compute and new_input_format: 3 (every game changed: known_valid
 *     only).
 *   - A file written again under the same source (the pool has not seen
 *     it yet): a valid game used twice (the second known as is), then its
 *     file replaced by the invalid game of the same length: the next use
 *     reads the new bytes, whose fingerprint differs, and drops it.
 */
#include "check.h"
#include "frames.h"
#include "records.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/text.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/record.h"
#include "format/lc0/rescore/tablebase.h"
#include "lc0_games.h"
#include "standalone.h"
#include "stages/items.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED 5

static uint64_t count(const lc_stage_metrics *m, const char *name)
{
    const lc_metric_slot *c = lc_metrics_find(m, name);
    return c ? c->count : 0;
}

static void add_path(char ***paths, size_t *n, char *path)
{
    *paths = realloc(*paths, (*n + 1) * sizeof **paths);
    (*paths)[(*n)++] = path;
}

/* The .gz of tests/data's game folders and its tar; their positions (the
 * tar's 8 games counted by loading them) added to *positions. */
static void data_games(char ***paths, size_t *n, size_t *positions)
{
    static const char *const dirs[] = {"lc0-909a408-fmt1", "lc0-v0.31.2-fmt1", "lc0-v0.31.2-fmt2",
                                       "lc0-v0.31.2-fmt3", "lc0-v0.31.2-fmt5"};
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
        char *dir = lc_xasprintf("%s/%s", tu_test_data(), dirs[d]);
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "ls %s/game_*.gz", dir);
        FILE *ls = popen(cmd, "r");
        CHECK(ls != NULL);
        char line[1024];
        while (fgets(line, sizeof line, ls)) {
            line[strcspn(line, "\n")] = '\0';
            add_path(paths, n, lc_xasprintf("%s", line));
        }
        pclose(ls);
        free(dir);
    }
    add_path(paths, n, lc_xasprintf("%s/training-run-mini.tar", tu_test_data()));
    for (size_t i = 0; i < *n; i++) {
        lc_chunk_source *src = tu_chunk_source((*paths)[i]);
        for (size_t k = 0; k < lc_chunk_source_count(src); k++) {
            lc_chunk_data d;
            CHECK_OK(lc_chunk_source_load(src, k, LC_INFLATE_AUTO, &d, NULL));
            CHECK(d.content != 0); /* gzip members: fingerprinted */
            *positions += d.n_records;
            lc_chunk_data_fini(&d);
        }
        lc_chunk_source_unref(src);
    }
}

/* The first game of lc0-v0.31.2-fmt1 with record 5's probabilities halved
 * (they sum to 0.5), written to name; its records' count. */
static size_t invalid_game(const char *name)
{
    return tu_invalid_game(name);
}

/* Five endgame-rich games (one per ending) in the temporary folder; their
 * positions. */
static size_t endgame_games(const char *syzygy, char ***paths, size_t *n)
{
    lc_error err;
    lc_gen_openings o;
    lc_tablebases *tb = NULL;
    CHECK_OK(lc_gen_openings_load(tu_test_data(), &o, &err));
    CHECK_OK(lc_tablebases_open(syzygy, NULL, &tb, &err));
    size_t positions = 0;
    for (int e = 0; e < LC_GEN_ENDINGS; e++) {
        lc_gen_game g;
        CHECK_OK(lc_gen_game_make(&o, tb, SEED, (uint64_t)e, e, &g, &err));
        char *path = lc_xasprintf("%s", tu_path(lc_gen_ending_name(e)));
        char *gz = lc_xasprintf("%s.gz", path);
        CHECK_OK(lc_gen_write_gz(gz, g.records, g.n, &err));
        add_path(paths, n, gz);
        positions += g.n;
        free(path);
        lc_gen_game_free(&g);
    }
    lc_tablebases_close(tb);
    lc_gen_openings_free(&o);
    return positions;
}

/* Move the frames the unpacker has made to frames[*got ..]. */
static void take_frames(lc_stage *unpacker, lc_frame **frames, size_t *got, size_t *cap)
{
    lc_frame *f; /* a frame cell (stages/items.h) */
    while (lc_queue_try_get(unpacker->output, &f) == 0) {
        if (*got == *cap)
            *frames = realloc(*frames, (*cap = *cap ? 2 * *cap : 4096) * sizeof **frames);
        lc_frame_copy(&(*frames)[(*got)++], f);
        lc_frame_cell_free(f);
    }
}

/*
 * pool (no store, one loading thread) -> rescorer -> unpacker at sampling
 * 1/8 over paths, for `uses` chunks drawn from the pool; every frame they
 * give in *frames (how many returned), the rescorer's counts in *m. The
 * test hands each chunk on by itself and waits until the rescorer passed
 * it on or dropped it (marked its source bad), so that the pool's draws
 * ahead do not make the counts depend on timing: a chunk whose source is
 * marked bad by then is skipped, as the pool's next draw would skip it.
 */
static size_t run_chain(const char *rescorer_yaml, char **paths, size_t n_paths, size_t uses,
                        lc_frame **frames, lc_stage_metrics *m)
{
    lc_queue *in = lc_queue_new("in", &lc_item_source, 256, LC_OVERFLOW_BLOCK);
    lc_queue *to_rescorer = lc_queue_new("to_rescorer", &lc_item_chunk, 4, LC_OVERFLOW_BLOCK);
    lc_queue *to_unpacker = lc_queue_new("to_unpacker", &lc_item_chunk, 4, LC_OVERFLOW_BLOCK);
    lc_stage *pool =
        lc_standalone_running("shuffling_chunk_pool", "pool",
                              "chunk_pool_size: 1000\nthreads: 1\nstore_bytes: 0\n", in, 4, SEED);
    lc_stage *rescorer =
        lc_standalone_running("chunk_rescorer", "rescorer", rescorer_yaml, to_rescorer, 4, SEED);
    lc_stage *unpacker =
        lc_standalone_running("chunk_unpacker", "unpacker", "threads: 1\nsampling_rate: 0.125\n",
                              to_unpacker, 4096, SEED);
    for (size_t i = 0; i < n_paths; i++) {
        lc_source_item item = {.source = tu_chunk_source(paths[i])};
        CHECK_OK(lc_queue_put(in, &item, NULL));
    }
    lc_source_item marker = {.flags = LC_ITEM_SCAN_DONE};
    CHECK_OK(lc_queue_put(in, &marker, NULL));
    *frames = NULL;
    size_t got = 0, cap = 0;
    for (size_t k = 0; k < uses;) {
        lc_chunk_item c;
        CHECK_OK(lc_queue_get_until(pool->output, &c, NULL, lc_now_ns() + 30000000000ull));
        lc_chunk_source *src = lc_chunk_source_ref(c.source);
        uint32_t member = c.member;
        uint64_t index = c.global_index;
        if (lc_chunk_source_is_bad(src, member)) {
            lc_item_chunk.dispose(&c);
            lc_chunk_source_unref(src);
            continue;
        }
        k++;
        CHECK_OK(lc_queue_put(to_rescorer, &c, NULL));
        for (;;) { /* passed on, or dropped */
            lc_chunk_item out;
            if (lc_queue_try_get(rescorer->output, &out) == 0) {
                CHECK_EQ_U64(out.global_index, index);
                CHECK_OK(lc_queue_put(to_unpacker, &out, NULL));
                break;
            }
            if (lc_chunk_source_is_bad(src, member))
                break;
            tu_sleep_ms(0.05);
        }
        lc_chunk_source_unref(src);
        take_frames(unpacker, frames, &got, &cap);
    }
    lc_queue_close(to_unpacker); /* the unpacker's output closes when it has done */
    while (!lc_queue_closed(unpacker->output) || lc_queue_size(unpacker->output) > 0) {
        take_frames(unpacker, frames, &got, &cap);
        tu_sleep_ms(1);
    }
    take_frames(unpacker, frames, &got, &cap);
    memset(m, 0, sizeof *m);
    lc_standalone_flush(rescorer, m);
    lc_standalone_free(pool);
    lc_standalone_free(unpacker);
    lc_standalone_free(rescorer);
    lc_queue_free(to_unpacker);
    lc_queue_free(to_rescorer);
    lc_queue_free(in);
    return got;
}

/* Every count but the work counters is the same. */
static void same_counts(const lc_stage_metrics *a, const lc_stage_metrics *b)
{
    for (int i = 0; i < a->n_rows; i++) {
        const char *name = a->rows[i].name;
        if (!strcmp(name, "probed") || !strcmp(name, "hits") || !strcmp(name, "misses") ||
            !strcmp(name, "known_as_is") || !strcmp(name, "known_valid"))
            continue;
        if (count(a, name) != count(b, name))
            fprintf(stderr, "  %s: %llu with the memo, %llu without\n", name,
                    (unsigned long long)count(a, name), (unsigned long long)count(b, name));
        CHECK_EQ_U64(count(a, name), count(b, name));
    }
}

static void compare_runs(const char *label, const char *settings, char **paths, size_t n_paths,
                         size_t uses, bool endgames, bool changes_all)
{
    char on_yaml[1024], off_yaml[1024];
    snprintf(on_yaml, sizeof on_yaml, "threads: 1\n%s", settings);
    snprintf(off_yaml, sizeof off_yaml, "threads: 1\nremember_games: false\n%s", settings);
    lc_stage_metrics on, off;
    lc_frame *a, *b;
    size_t want = run_chain(on_yaml, paths, n_paths, uses, &a, &on);
    CHECK_EQ_U64(run_chain(off_yaml, paths, n_paths, uses, &b, &off), want);
    CHECK(want > uses);
    size_t differ = 0;
    for (size_t i = 0; i < want; i++) {
        int before = atomic_load(&check_failed_);
        tf_check_same_fields(&a[i], &b[i], true);
        tf_check_same_tensors(&a[i], &b[i]);
        if (atomic_load(&check_failed_) != before && differ++ < 3)
            fprintf(stderr, "  frame %zu differs\n", i);
    }
    same_counts(&on, &off);
    same_counts(&off, &on);
    /* The invalid game: dropped at its first use, then never drawn. */
    CHECK_EQ_U64(count(&on, "dropped_invalid"), 1);
    CHECK_EQ_U64(count(&off, "known_as_is") + count(&off, "known_valid"), 0);
    uint64_t chunks = count(&on, "chunks");
    CHECK_EQ_U64(chunks, uses);
    if (changes_all)
        CHECK_EQ_U64(count(&on, "known_as_is"), 0);
    else
        CHECK(count(&on, "known_as_is") > chunks / 2);
    if (endgames || changes_all)
        CHECK(count(&on, "known_valid") > 0);
    if (endgames && !changes_all)
        CHECK(count(&on, "results_changed") > 0 && count(&on, "plies_left_changed") > 0);
    /* A game passed on as it came makes no probe. */
    if (endgames && !changes_all)
        CHECK(count(&on, "probed") < count(&off, "probed"));
    printf("%s: %zu frames the same with and without the memo; %llu chunks, %llu dropped, "
           "%llu passed on as they came, %llu not validated again; %llu probes against %llu\n",
           label, want, (unsigned long long)chunks,
           (unsigned long long)count(&on, "dropped_invalid"),
           (unsigned long long)count(&on, "known_as_is"),
           (unsigned long long)count(&on, "known_valid"), (unsigned long long)count(&on, "probed"),
           (unsigned long long)count(&off, "probed"));
    for (size_t i = 0; i < want; i++) {
        lc_frame_fini(&a[i]);
        lc_frame_fini(&b[i]);
    }
    free(a);
    free(b);
}

static void test_same_with_and_without(void)
{
    char **paths = NULL;
    size_t n_paths = 0, positions = 0;
    data_games(&paths, &n_paths, &positions);
    char *invalid = lc_xasprintf("%s", tu_path("invalid.gz"));
    positions += invalid_game(invalid);
    add_path(&paths, &n_paths, invalid);
    const char *tables = getenv("LCMON_SYZYGY_PATH"); /* meson sets it: tests/syzygy */
    char *syzygy =
        tables ? lc_xasprintf("%s", tables) : lc_xasprintf("%s/../syzygy", tu_test_data());
    bool endgames = lc_tablebases_have_syzygy() && tu_is_dir(syzygy);
    char settings[1024] = "";
    if (endgames) {
        positions += endgame_games(syzygy, &paths, &n_paths);
        snprintf(settings, sizeof settings, "syzygy_paths: %s\n", syzygy);
    } else {
        printf("no Syzygy (this build, or %s): the endgames left out\n", syzygy);
    }
    size_t chunks = n_paths + 7; /* the tar holds 8 */
    printf("%zu games, %zu positions\n", chunks, positions);
    compare_runs(endgames ? "syzygy" : "defaults", settings, paths, n_paths, 5 * chunks, endgames,
                 false); /* five passes */
    char more[1200];
    snprintf(more, sizeof more, "%sst_targets: compute\nnew_input_format: 3\n", settings);
    compare_runs("st_targets: compute, new_input_format: 3", more, paths, n_paths, 5 * chunks,
                 endgames, true);
    for (size_t i = 0; i < n_paths; i++)
        free(paths[i]);
    free(paths);
    free(syzygy);
}

/* One use of chunk 0 of src (its records as they are on disk now) through
 * the rescorer r: whether it came out. A valid chunk (global index 7)
 * follows it: when that is out, the first was handled. in: r's input. */
static bool use_once(lc_stage *r, lc_queue *in, lc_chunk_source *src, lc_chunk_source *valid)
{
    lc_chunk_source *both[2] = {src, valid};
    for (unsigned k = 0; k < 2; k++) {
        lc_chunk_data d;
        CHECK_OK(lc_chunk_source_load(both[k], 0, LC_INFLATE_AUTO, &d, NULL));
        lc_chunk_item c = {.data = d.data,
                           .version = d.version,
                           .record_size = (uint32_t)d.record_size,
                           .n_records = (uint32_t)d.n_records,
                           .global_index = k ? 7 : 1,
                           .source = lc_chunk_source_ref(both[k]),
                           .content = d.content};
        CHECK_OK(lc_queue_put(in, &c, NULL));
    }
    bool came = false;
    for (;;) {
        lc_chunk_item out;
        CHECK_OK(lc_queue_get_until(r->output, &out, NULL, lc_now_ns() + 30000000000ull));
        bool last = out.global_index == 7;
        came |= !last;
        lc_item_chunk.dispose(&out);
        if (last)
            return came;
    }
}

static void test_file_written_again(void)
{
    char *dir = lc_xasprintf("%s/lc0-v0.31.2-fmt1", tu_test_data());
    char *first = tu_first_gz(dir);
    char *other_dir = lc_xasprintf("%s/lc0-v0.31.2-fmt5", tu_test_data());
    char *other = tu_first_gz(other_dir);
    char *path = lc_xasprintf("%s", tu_path("again.gz"));
    char *invalid = lc_xasprintf("%s", tu_path("again-invalid.gz"));
    invalid_game(invalid);
    size_t len;
    uint8_t *bytes = tu_read_file(first, &len);
    tu_write_file(path, bytes, len);
    free(bytes);
    lc_chunk_source *src = tu_chunk_source(path), *valid = tu_chunk_source(other);
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 8, LC_OVERFLOW_BLOCK);
    lc_stage *r = lc_standalone_running("chunk_rescorer", "rescorer", "threads: 1\n", in, 8, SEED);
    CHECK(use_once(r, in, src, valid));
    CHECK(use_once(r, in, src, valid));
    bytes = tu_read_file(invalid, &len);
    tu_write_file(path, bytes, len); /* the same source, other bytes */
    free(bytes);
    CHECK(!use_once(r, in, src, valid));
    lc_stage_metrics m;
    lc_standalone_flush(r, &m);
    /* The valid chunk: its first use validated, then two as they came;
     * the game at path: once as it came, then dropped. */
    CHECK_EQ_U64(count(&m, "known_as_is"), 3);
    CHECK_EQ_U64(count(&m, "dropped_invalid"), 1);
    CHECK(lc_chunk_source_is_bad(src, 0));
    printf("a file written again under its source: the new bytes validated, dropped\n");
    lc_standalone_free(r);
    lc_queue_free(in);
    lc_chunk_source_unref(src);
    lc_chunk_source_unref(valid);
    free(path);
    free(invalid);
    free(other);
    free(other_dir);
    free(first);
    free(dir);
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    test_file_written_again();
    test_same_with_and_without();
    return check_finish();
}
