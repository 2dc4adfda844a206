/*
 * parquet_game_source against the Parquet fixtures (tests/parquet): every
 * game of every file comes out exactly once, whole, sorted by ply, with the
 * values the writer was given (x.tsv.gz); in file order without shuffling;
 * exactly once across threads and distributed ranks; once per epoch; games
 * whose rows span several row groups, or are scattered through the file,
 * come out whole; malformed files are counted and skipped while the good
 * ones are read.
 */
#include "check.h"
#include "testutil.h"
#include "tsv.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/text.h"
#include "format/chess_tokens.h"
#include "pipeline/config.h"
#include "pipeline/standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char fixtures[4096];

/* The readable game tables (arrow_lz4_raw uses a codec we do not read). */
static const char *const good[] = {
    "arrow_fallback_v1_snappy",  "arrow_fallback_v2_zstd",       "arrow_v2_gzip_delta",
    "duckdb_gzip_ply1",          "duckdb_snappy_rowgroups",      "duckdb_uncompressed_shuffled",
    "duckdb_v2_zstd_types",      "duckdb_zstd_extra_columns",    "hyparquet_delta_gzip",
    "hyparquet_types_uncompressed", "hyparquet_v2_snappy",       "own_dictionary_offsets",
};
#define N_GOOD (sizeof good / sizeof good[0])

/* ---- what the writers were given ---------------------------------------- */

typedef struct want_game {
    char file[96]; /* basename */
    char id[64];
    size_t first_line; /* line of its first row in the tsv, for file order */
    size_t n;
    size_t *lines; /* rows sorted by ply */
    const tsv *t;
    int seen;
} want_game;

typedef struct want {
    tsv tables[N_GOOD + 1];
    size_t n_tables;
    want_game *games;
    size_t n_games;
    int c_id, c_ply;
} want;

static const tsv *sort_tsv;
static int sort_ply_col;
static int by_ply(const void *a, const void *b)
{
    long long x = atoll(tsv_cell(sort_tsv, *(const size_t *)a, sort_ply_col));
    long long y = atoll(tsv_cell(sort_tsv, *(const size_t *)b, sort_ply_col));
    return x < y ? -1 : x > y;
}

static void want_add(want *w, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.tsv.gz", fixtures, name);
    tsv *t = &w->tables[w->n_tables++];
    CHECK(tsv_load(path, t));
    int c_id = tsv_col(t, "game_id"), c_ply = tsv_col(t, "ply");
    CHECK(c_id >= 0 && c_ply >= 0);
    size_t first = w->n_games;
    for (size_t r = 0; r < t->n_rows; r++) {
        const char *id = tsv_cell(t, r, c_id);
        want_game *g = NULL;
        for (size_t k = first; k < w->n_games; k++)
            if (strcmp(w->games[k].id, id) == 0)
                g = &w->games[k];
        if (!g) {
            w->games = realloc(w->games, (w->n_games + 1) * sizeof *w->games);
            g = &w->games[w->n_games++];
            memset(g, 0, sizeof *g);
            snprintf(g->file, sizeof g->file, "%s.parquet", name);
            snprintf(g->id, sizeof g->id, "%s", id);
            g->first_line = r;
            g->t = t;
        }
        g->lines = realloc(g->lines, (g->n + 1) * sizeof *g->lines);
        g->lines[g->n++] = r;
    }
    sort_tsv = t;
    sort_ply_col = c_ply;
    for (size_t k = first; k < w->n_games; k++)
        qsort(w->games[k].lines, w->games[k].n, sizeof(size_t), by_ply);
}

static void want_free(want *w)
{
    for (size_t k = 0; k < w->n_games; k++)
        free(w->games[k].lines);
    free(w->games);
    for (size_t i = 0; i < w->n_tables; i++)
        tsv_free(&w->tables[i]);
}

static want_game *want_find(want *w, const char *file, const char *id)
{
    for (size_t k = 0; k < w->n_games; k++)
        if (strcmp(w->games[k].id, id) == 0 && strcmp(w->games[k].file, file) == 0)
            return &w->games[k];
    return NULL;
}

static bool same_text(const char *p, size_t n, const char *cell)
{
    return strlen(cell) == n && memcmp(p, cell, n) == 0;
}

static bool same_number(double v, bool has, const char *cell)
{
    if (strcmp(cell, "\\N") == 0)
        return !has && v == 0.0;
    return has && v == strtod(cell, NULL);
}

/* The game's rows are the first of the wanted ones, in ply order, value by
 * value. */
static bool game_prefix_matches(const want_game *g, const lc_game_item *it, bool quiet)
{
    if (it->n_rows > g->n)
        return false;
    const tsv *t = g->t;
    int fen = tsv_col(t, "fen"), played = tsv_col(t, "played_move"), best = tsv_col(t, "best_move");
    int win = tsv_col(t, "win"), draw = tsv_col(t, "draw"), loss = tsv_col(t, "loss");
    for (size_t i = 0; i < it->n_rows; i++) {
        const lc_chess_row *r = &it->rows[i];
        size_t line = g->lines[i];
        if (!same_text(r->fen, r->fen_len, tsv_cell(t, line, fen)) ||
            !same_text(r->played, r->played_len, tsv_cell(t, line, played)) ||
            !same_text(r->best, r->best_len, tsv_cell(t, line, best)) ||
            !same_number(r->win, r->has_win, tsv_cell(t, line, win)) ||
            !same_number(r->draw, r->has_draw, tsv_cell(t, line, draw)) ||
            !same_number(r->loss, r->has_loss, tsv_cell(t, line, loss))) {
            if (!quiet)
                fprintf(stderr, "%s %s: row %zu (ply order) differs\n", g->file, g->id, i);
            return false;
        }
    }
    return true;
}

/* The game's rows are exactly the wanted ones. */
static bool game_matches(const want_game *g, const lc_game_item *it)
{
    return it->n_rows == g->n && game_prefix_matches(g, it, false);
}

/* ---- running the stage -------------------------------------------------- */

typedef struct run_result {
    lc_game_item *games;
    size_t n;
    lc_stage_metrics m;
} run_result;

static void run_free(run_result *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->games[i].mem);
    free(r->games);
}

static uint64_t count(const lc_stage_metrics *m, const char *name)
{
    const lc_metric_count *c = lc_metrics_find_count(m, name);
    return c ? c->count : 0;
}

/* Run the stage until its output closes (it must: epochs > 0). */
static void run(const char *yaml, uint32_t rank, uint32_t world, run_result *r)
{
    memset(r, 0, sizeof *r);
    lc_stage_env env = {.seed = 7, .rank = rank, .world_size = world, .rank_source = "test"};
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_standalone_new(lc_stage_class_find("parquet_game_source"), "games", yaml, NULL,
                               64, &env, &s, &err);
    CHECK_OK(rc);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    CHECK_OK(lc_standalone_start(s, &err));
    size_t cap = 0;
    lc_game_item it;
    lc_stage_metrics m;
    lc_stage_metrics_clear(&r->m);
    uint64_t deadline = lc_now_ns() + 60000000000ull;
    while (lc_queue_get_until(s->output, &it, NULL, deadline) == 0) {
        if (r->n == cap) {
            cap = cap ? 2 * cap : 256;
            r->games = realloc(r->games, cap * sizeof *r->games);
        }
        r->games[r->n++] = it;
    }
    CHECK(lc_queue_closed(s->output));
    lc_standalone_stop(s);
    lc_standalone_flush(s, &m);
    lc_stage_metrics_merge(&r->m, &m);
    lc_standalone_free(s);
}

static void link_into(const char *dir, const char *name)
{
    char from[4200], to[4200];
    snprintf(from, sizeof from, "%s/%s", fixtures, name);
    snprintf(to, sizeof to, "%s/%s", dir, lc_basename(name));
    CHECK(symlink(from, to) == 0);
}

/* ---- the cases ------------------------------------------------------------ */

/* One file at a time, in file order: every game once, whole and exact. */
static void test_each_fixture(void)
{
    for (size_t f = 0; f < N_GOOD; f++) {
        want w = {0};
        want_add(&w, good[f]);
        char path[4200], yaml[4400];
        snprintf(path, sizeof path, "%s/%s.parquet", fixtures, good[f]);
        snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, shuffle: false}", path);
        run_result r;
        run(yaml, 0, 1, &r);
        CHECK_EQ_U64(r.n, w.n_games);
        size_t last_first = 0;
        bool in_order = true, exact = true;
        for (size_t i = 0; i < r.n; i++) {
            want_game *g = want_find(&w, lc_basename(path), r.games[i].id);
            if (!g) {
                fprintf(stderr, "%s: unexpected game %s\n", good[f], r.games[i].id);
                exact = false;
                continue;
            }
            g->seen++;
            exact = exact && game_matches(g, &r.games[i]);
            in_order = in_order && (i == 0 || g->first_line > last_first);
            last_first = g->first_line;
        }
        for (size_t k = 0; k < w.n_games; k++)
            exact = exact && w.games[k].seen == 1;
        if (!exact || !in_order)
            fprintf(stderr, "fixture %s\n", good[f]);
        CHECK(exact);
        CHECK(in_order);
        CHECK_EQ_U64(count(&r.m, "games"), w.n_games);
        CHECK_EQ_U64(count(&r.m, "bad_files"), 0);
        CHECK_EQ_U64(count(&r.m, "bad_units"), 0);
        /* Only the shuffled table is read as one unit. */
        CHECK_EQ_U64(count(&r.m, "scattered_files"),
                     strcmp(good[f], "duckdb_uncompressed_shuffled") == 0);
        run_free(&r);
        want_free(&w);
    }
}

/* Every good fixture in one directory, 2 threads, shuffled, over `world`
 * ranks: together the ranks emit every game exactly once. */
static void test_threads_and_ranks(void)
{
    const char *dir = tu_path("all");
    tu_mkdirs(dir);
    want w = {0};
    for (size_t f = 0; f < N_GOOD; f++) {
        char name[200];
        snprintf(name, sizeof name, "%s.parquet", good[f]);
        link_into(dir, name);
        want_add(&w, good[f]);
    }
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 2}", dir);
    for (uint32_t world = 1; world <= 3; world++) {
        for (size_t k = 0; k < w.n_games; k++)
            w.games[k].seen = 0;
        bool exact = true;
        uint64_t other = 0;
        for (uint32_t rank = 0; rank < world; rank++) {
            run_result r;
            run(yaml, rank, world, &r);
            CHECK(r.n > 0);
            for (size_t i = 0; i < r.n; i++) {
                want_game *g = want_find(&w, r.games[i].file, r.games[i].id);
                if (!g) {
                    exact = false;
                    continue;
                }
                g->seen++;
                exact = exact && game_matches(g, &r.games[i]);
            }
            other += count(&r.m, "other_rank_units");
            run_free(&r);
        }
        for (size_t k = 0; k < w.n_games; k++)
            if (w.games[k].seen != 1) {
                fprintf(stderr, "world %u: %s %s seen %d times\n", world, w.games[k].file,
                        w.games[k].id, w.games[k].seen);
                exact = false;
            }
        CHECK(exact);
        if (world > 1)
            CHECK(other > 0);
    }
    want_free(&w);
}

/* Two epochs: every game twice, in another order the second time. */
static void test_epochs(void)
{
    want w = {0};
    want_add(&w, "duckdb_snappy_rowgroups");
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s/duckdb_snappy_rowgroups.parquet', epochs: 2}",
             fixtures);
    run_result r;
    run(yaml, 0, 1, &r);
    CHECK_EQ_U64(r.n, 2 * w.n_games);
    bool twice = true;
    for (size_t i = 0; i < r.n; i++) {
        want_game *g = want_find(&w, r.games[i].file, r.games[i].id);
        if (g)
            g->seen++;
        else
            twice = false;
    }
    for (size_t k = 0; k < w.n_games; k++)
        twice = twice && w.games[k].seen == 2;
    CHECK(twice);
    size_t same = 0, n = w.n_games;
    for (size_t i = 0; i < n && r.n == 2 * n; i++)
        same += strcmp(r.games[i].id, r.games[n + i].id) == 0;
    CHECK(same < n / 2);
    /* Shuffled within the file: not the file's order. */
    size_t in_order = 0;
    for (size_t i = 1; i < n && r.n == 2 * n; i++)
        in_order += strcmp(r.games[i - 1].id, r.games[i].id) < 0;
    CHECK(in_order < n - 1);
    CHECK_EQ_U64(count(&r.m, "files"), 2);
    run_free(&r);
    want_free(&w);
}

/* Games longer than a row group: made by the benchmark's generator with row
 * groups of 7 rows, so games span up to dozens of row groups. */
static void test_games_across_row_groups(void)
{
    const char *gen = getenv("LC_PARQUET_GEN");
    if (!gen || !*gen) {
        fprintf(stderr, "LC_PARQUET_GEN not set: skipping the row-group case\n");
        return;
    }
    want w = {0};
    want_add(&w, "duckdb_snappy_rowgroups");
    const char *out = tu_path("spanning.parquet");
    char src[4200];
    snprintf(src, sizeof src, "%s/duckdb_snappy_rowgroups.parquet", fixtures);
    char *argv[] = {(char *)gen, (char *)out, "3000", "--row-group", "7", "--codec",
                    "uncompressed", "--from", src, NULL};
    CHECK_EQ_INT(tu_run(argv, NULL), 0);
    for (unsigned threads = 1; threads <= 2; threads++) {
        char yaml[4400];
        snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: %u}", out, threads);
        run_result r;
        run(yaml, 0, 1, &r);
        /* Every game is a whole source game (the last one may be cut
         * short by the row count): a game split at a row-group boundary
         * would give a piece that starts mid-game and matches none. */
        uint64_t rows = 0;
        size_t unmatched = 0, cut = 0;
        for (size_t i = 0; i < r.n; i++) {
            rows += r.games[i].n_rows;
            const want_game *match = NULL;
            for (size_t k = 0; k < w.n_games && !match; k++)
                if (game_prefix_matches(&w.games[k], &r.games[i], true))
                    match = &w.games[k];
            unmatched += !match;
            cut += match && match->n != r.games[i].n_rows;
        }
        CHECK_EQ_U64(rows, 3000);
        CHECK_EQ_U64(unmatched, 0);
        CHECK(cut <= 1);
        CHECK_EQ_U64(count(&r.m, "games"), r.n);
        /* Each game id once. */
        bool unique = true;
        for (size_t i = 0; i < r.n && unique; i++)
            for (size_t j = i + 1; j < r.n; j++)
                if (strcmp(r.games[i].id, r.games[j].id) == 0) {
                    unique = false;
                    break;
                }
        CHECK(unique);
        run_free(&r);
    }
    want_free(&w);
}

/* Malformed files next to a good one: each is counted and skipped; the good
 * file's games all come out; the stage ends normally. */
static void test_bad_files(void)
{
    const char *dir = tu_path("mixed");
    tu_mkdirs(dir);
    char bad_dir[4200];
    snprintf(bad_dir, sizeof bad_dir, "%s/bad", fixtures);
    DIR *d = opendir(bad_dir);
    CHECK(d != NULL);
    size_t n_bad = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strstr(e->d_name, ".parquet") || strcmp(e->d_name, "good.parquet") == 0)
            continue;
        char name[400];
        snprintf(name, sizeof name, "bad/%s", e->d_name);
        link_into(dir, name);
        n_bad++;
    }
    if (d)
        closedir(d);
    link_into(dir, "arrow_lz4_raw.parquet");
    link_into(dir, "duckdb_gzip_ply1.parquet");
    char junk[4400];
    snprintf(junk, sizeof junk, "%s/not_parquet.parquet", dir);
    tu_write_file(junk, "hello, not a table\n", 19);
    snprintf(junk, sizeof junk, "%s/empty.parquet", dir);
    tu_write_file(junk, "", 0);

    /* A game table whose middle (pages, not the footer) is overwritten:
     * some of its row groups fail to read. */
    char src[4200];
    snprintf(src, sizeof src, "%s/hyparquet_v2_snappy.parquet", fixtures);
    size_t len = 0;
    uint8_t *bytes = tu_read_file(src, &len);
    CHECK(bytes && len > 1000);
    if (bytes) {
        tu_fill(bytes + len * 3 / 10, len / 5, 99);
        snprintf(junk, sizeof junk, "%s/corrupt_pages.parquet", dir);
        tu_write_file(junk, bytes, len);
        free(bytes);
    }

    want w = {0};
    want_add(&w, "duckdb_gzip_ply1");
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 2}", dir);
    run_result r;
    run(yaml, 0, 1, &r);
    size_t from_good = 0;
    bool exact = true;
    for (size_t i = 0; i < r.n; i++) {
        if (strcmp(r.games[i].file, "duckdb_gzip_ply1.parquet") != 0)
            continue; /* games of row groups of the bad files that do read */
        want_game *g = want_find(&w, r.games[i].file, r.games[i].id);
        if (!g) {
            exact = false;
            continue;
        }
        g->seen++;
        from_good++;
        exact = exact && game_matches(g, &r.games[i]);
    }
    for (size_t k = 0; k < w.n_games; k++)
        exact = exact && w.games[k].seen == 1;
    CHECK(exact);
    CHECK_EQ_U64(from_good, w.n_games);
    /* Files that do not open (magic, footer, schema), and units that do not
     * read: each bad file is one or the other or both. */
    uint64_t bad_files = count(&r.m, "bad_files"), bad_units = count(&r.m, "bad_units");
    CHECK(bad_files >= 6);
    CHECK(bad_files + bad_units >= n_bad + 2);
    CHECK(n_bad >= 15);
    run_free(&r);
    want_free(&w);
}

static void test_config_errors(void)
{
    const lc_stage_class *cls = lc_stage_class_find("parquet_game_source");
    void *block = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK(lc_config_parse_block(cls, "{path: x, threads: 0}", &block, &err) != 0);
    CHECK(strstr(err.msg, "threads") != NULL);
    lc_error_clear(&err);
    CHECK(lc_config_parse_block(cls, "{threads: 1}", &block, &err) != 0);
    CHECK(strstr(err.msg, "path") != NULL);
    /* A path that does not exist: refused at start, naming it. */
    lc_stage *s = NULL;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_new(cls, "games", "{path: /nonexistent/games}", NULL, 4, NULL, &s,
                               &err));
    lc_error_clear(&err);
    CHECK(lc_standalone_start(s, &err) != 0);
    CHECK(strstr(err.msg, "/nonexistent/games") != NULL);
    lc_standalone_free(s);
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    snprintf(fixtures, sizeof fixtures, "%s/../parquet/fixtures", tu_test_data());
    if (!tu_is_dir(fixtures)) {
        fprintf(stderr, "no fixtures at %s\n", fixtures);
        return 1;
    }
    test_each_fixture();
    test_threads_and_ranks();
    test_epochs();
    test_games_across_row_groups();
    test_bad_files();
    test_config_errors();
    return check_finish();
}
