/*
 * parquet_game_source against the Parquet fixtures (tests/parquet): every
 * game of every file comes out exactly once, whole, sorted by ply, with the
 * values the writer was given (x.tsv.gz); in file order without shuffling;
 * exactly once across threads and distributed ranks; once per epoch; games
 * whose rows span several row groups, or are scattered through the file,
 * come out whole, each row group read once; the shuffle is one permutation
 * of the whole file; a damaged row group costs only the games at its edges;
 * a stop midway frees everything; malformed files are counted and skipped
 * while the good ones are read; rows with a null fen or move are passed on
 * with a NULL string and, through game_tokenizer, spoil only their position
 * in encoder mode but the whole game in decoder mode (a table written with
 * the Parquet writer of gen/ (gen/parquet_writer.h), as no fixture has such
 * nulls).
 */
#include "check.h"
#include "testutil.h"
#include "tsv.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/text.h"
#include "format/batch.h"
#include "format/chess/chess_tokens.h"
#include "pipeline/config.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fixtures[4096];

/* The readable game tables (arrow_lz4_raw uses a codec we do not read). */
static const char *const good[] = {
    "arrow_fallback_v1_snappy", "arrow_fallback_v2_zstd",
    "arrow_v2_gzip_delta",      "duckdb_gzip_ply1",
    "duckdb_snappy_rowgroups",  "duckdb_uncompressed_shuffled",
    "duckdb_v2_zstd_types",     "duckdb_zstd_extra_columns",
    "hyparquet_delta_gzip",     "hyparquet_types_uncompressed",
    "hyparquet_v2_snappy",      "own_dictionary_offsets",
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
    if (!p || strcmp(cell, "\\N") == 0)
        return !p && n == 0 && strcmp(cell, "\\N") == 0;
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
    int rc = lc_standalone_new(lc_stage_class_find("parquet_game_source"), "games", yaml, NULL, 64,
                               &env, &s, &err);
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
        CHECK_EQ_U64(count(&r.m, "bad_row_groups"), 0);
        CHECK_EQ_U64(count(&r.m, "bad_games_near_damage"), 0);
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
            other += count(&r.m, "other_rank_games");
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

/* Make OUT from the row-group fixture with the benchmark's generator
 * (LC_PARQUET_GEN): ROWS rows in row groups of RG rows. false (and a note)
 * when the generator is not given. */
static bool generate(const char *out, const char *rows, const char *rg, const char *codec)
{
    const char *gen = getenv("LC_PARQUET_GEN");
    if (!gen || !*gen) {
        fprintf(stderr, "LC_PARQUET_GEN not set: skipping a generated-table case\n");
        return false;
    }
    char src[4200];
    snprintf(src, sizeof src, "%s/duckdb_snappy_rowgroups.parquet", fixtures);
    char *argv[] = {(char *)gen, (char *)out,   (char *)rows, "--row-group", (char *)rg,
                    "--codec",   (char *)codec, "--from",     src,           NULL};
    int rc = tu_run(argv, NULL);
    CHECK_EQ_INT(rc, 0);
    return rc == 0;
}

/* The games of r are whole source games of w (the file's last game may be
 * cut short by the generator's row count), each id once; returns the rows. */
static uint64_t check_whole_games(const want *w, const run_result *r)
{
    uint64_t rows = 0;
    size_t unmatched = 0, cut = 0;
    for (size_t i = 0; i < r->n; i++) {
        rows += r->games[i].n_rows;
        const want_game *match = NULL;
        for (size_t k = 0; k < w->n_games && !match; k++)
            if (game_prefix_matches(&w->games[k], &r->games[i], true))
                match = &w->games[k];
        unmatched += !match;
        cut += match && match->n != r->games[i].n_rows;
    }
    /* A game split at a row-group boundary would give a piece that starts
     * mid-game and matches none, or one cut short. */
    CHECK_EQ_U64(unmatched, 0);
    CHECK(cut <= 1);
    bool unique = true;
    for (size_t i = 0; i < r->n && unique; i++)
        for (size_t j = i + 1; j < r->n; j++)
            if (strcmp(r->games[i].id, r->games[j].id) == 0) {
                unique = false;
                break;
            }
    CHECK(unique);
    return rows;
}

/* Games longer than a row group (row groups of 7 rows, so games span up to
 * dozens of them): whole, each row group read exactly once, and over 2 or 3
 * ranks every game exactly once with each rank reading only some of the
 * row groups. */
static void test_games_across_row_groups(void)
{
    const char *out = tu_path("spanning.parquet");
    if (!generate(out, "3000", "7", "uncompressed"))
        return;
    want w = {0};
    want_add(&w, "duckdb_snappy_rowgroups");
    const uint64_t n_rg = (3000 + 6) / 7;
    for (unsigned threads = 1; threads <= 2; threads++) {
        char yaml[4400];
        snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: %u}", out, threads);
        run_result r;
        run(yaml, 0, 1, &r);
        CHECK_EQ_U64(check_whole_games(&w, &r), 3000);
        CHECK_EQ_U64(count(&r.m, "games"), r.n);
        CHECK_EQ_U64(count(&r.m, "row_groups"), n_rg);
        run_free(&r);
    }
    for (uint32_t world = 2; world <= 3; world++) {
        char yaml[4400];
        snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 2}", out);
        run_result all = {0};
        size_t cap = 0;
        for (uint32_t rank = 0; rank < world; rank++) {
            run_result r;
            run(yaml, rank, world, &r);
            CHECK(r.n > 0);
            uint64_t read = count(&r.m, "row_groups");
            CHECK(read > 0 && read < n_rg);
            CHECK(count(&r.m, "other_rank_games") > 0);
            for (size_t i = 0; i < r.n; i++) {
                if (all.n == cap) {
                    cap = cap ? 2 * cap : 256;
                    all.games = realloc(all.games, cap * sizeof *all.games);
                }
                all.games[all.n++] = r.games[i];
            }
            free(r.games); /* the items now belong to all */
        }
        CHECK_EQ_U64(check_whole_games(&w, &all), 3000);
        run_free(&all);
    }
    want_free(&w);
}

/* The shuffle is one permutation of the whole file, not row group after row
 * group: with two row groups, the first half of the games emitted holds
 * games of both. */
static void test_file_wide_shuffle(void)
{
    const char *out = tu_path("two_groups.parquet");
    if (!generate(out, "4000", "2000", "zstd"))
        return;
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 2}", out);
    run_result r;
    run(yaml, 0, 1, &r);
    CHECK(r.n >= 40);
    /* Ids are g000000000, g000000001, ... in file order: the first half of
     * the file's games have the lower ids. */
    size_t low = 0, half = r.n / 2;
    for (size_t i = 0; i < half; i++) {
        char max_low[16];
        snprintf(max_low, sizeof max_low, "g%09zu", half);
        low += strcmp(r.games[i].id, max_low) < 0;
    }
    CHECK(low > half / 5 && low < half * 4 / 5);
    CHECK_EQ_U64(count(&r.m, "row_groups"), 2);
    run_free(&r);
}

/* Copy from to to (they may be one file) with bytes [len * at / 20,
 * + len / span) overwritten: a damaged middle that spares the footer.
 * false when from is missing or not above min_len bytes. */
static bool damage(const char *from, const char *to, size_t at, size_t span, size_t min_len)
{
    size_t len = 0;
    uint8_t *bytes = tu_read_file(from, &len);
    CHECK(bytes && len > min_len);
    if (!bytes || len <= min_len) {
        free(bytes);
        return false;
    }
    tu_fill(bytes + len * at / 20, len / span, 99);
    tu_write_file(to, bytes, len);
    free(bytes);
    return true;
}

/* A table with a damaged middle: the row groups that fail are counted, the
 * games at their edges (which may continue into them) are dropped and
 * counted, and every game emitted is whole. */
static void test_damaged_row_groups(void)
{
    const char *out = tu_path("damaged.parquet");
    if (!generate(out, "3000", "50", "zstd"))
        return;
    if (!damage(out, out, 10, 20, 10000))
        return;
    want w = {0};
    want_add(&w, "duckdb_snappy_rowgroups");
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 2}", out);
    run_result r;
    run(yaml, 0, 1, &r);
    uint64_t rows = check_whole_games(&w, &r);
    CHECK(rows > 1000 && rows < 3000);
    CHECK(count(&r.m, "bad_row_groups") >= 1);
    CHECK(count(&r.m, "bad_games_near_damage") >= 1);
    CHECK_EQ_U64(count(&r.m, "bad_files"), 0);
    run_free(&r);
    want_free(&w);
}

/* A stop in the middle of an endless run, with files planned, row groups
 * queued and a file being emitted: the stage stops promptly and frees
 * everything (the sanitizer builds check the leaks). */
static void test_stop_midway(void)
{
    const char *out = tu_path("spanning.parquet"); /* made by the row-group case */
    if (access(out, R_OK) != 0)
        return;
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', threads: 2}", tu_path(""));
    lc_stage_env env = {.seed = 7, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_new(lc_stage_class_find("parquet_game_source"), "games", yaml, NULL, 4,
                               &env, &s, &err));
    if (!s)
        return;
    CHECK_OK(lc_standalone_start(s, &err));
    lc_game_item it;
    size_t got = 0;
    uint64_t deadline = lc_now_ns() + 30000000000ull;
    while (got < 20 && lc_queue_get_until(s->output, &it, NULL, deadline) == 0) {
        free(it.mem);
        got++;
    }
    CHECK_EQ_U64(got, 20);
    uint64_t t0 = lc_now_ns();
    lc_standalone_stop(s);
    CHECK(lc_now_ns() - t0 < 10000000000ull);
    lc_standalone_free(s);
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
    snprintf(junk, sizeof junk, "%s/corrupt_pages.parquet", dir);
    damage(src, junk, 6, 5, 1000);

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
    /* Files that do not open (magic, footer, schema), and row groups that do
     * not read: each bad file is one or the other or both. */
    uint64_t bad_files = count(&r.m, "bad_files"), bad_units = count(&r.m, "bad_row_groups");
    CHECK(bad_files >= 6);
    CHECK(bad_files + bad_units >= n_bad + 2);
    CHECK(n_bad >= 15);
    run_free(&r);
    want_free(&w);
}

/* ---- a tiny table with null values ------------------------------------- */

/* What no fixture has, written by the Parquet writer
 * (gen/parquet_writer.h): one row group; columns game_id, fen,
 * played_move, best_move (OPTIONAL BYTE_ARRAY, UTF8) and ply (OPTIONAL
 * INT64), no win, draw or loss; uncompressed v1 data pages of PLAIN values,
 * the definition levels in the RLE/bit-packed hybrid. */
#include "format/parquet/parquet.h"
#include "parquet_writer.h"

typedef struct null_row {
    const char *id;
    int64_t ply;
    const char *fen, *played, *best; /* NULL: a null value */
} null_row;

enum { W_ID, W_PLY, W_FEN, W_PLAYED, W_BEST, W_COLS };

static void write_null_table(const char *path, const null_row *rows, size_t n)
{
    static const pqw_column_spec cols[W_COLS] = {
        {"game_id", PQW_STRING},     {"ply", PQW_INT64},        {"fen", PQW_STRING},
        {"played_move", PQW_STRING}, {"best_move", PQW_STRING},
    };
    pqw_options opt = pqw_default_options();
    opt.codec = LC_PARQUET_CODEC_UNCOMPRESSED;
    opt.dictionary = false;
    lc_error err;
    lc_error_clear(&err);
    pqw_writer *w = NULL;
    CHECK_OK(pqw_create(path, cols, W_COLS, &opt, &w, &err));
    if (!w)
        return;
    for (int c = 0; c < W_COLS; c++) {
        for (size_t i = 0; i < n; i++) {
            const char *v = c == W_ID       ? rows[i].id
                            : c == W_FEN    ? rows[i].fen
                            : c == W_PLAYED ? rows[i].played
                                            : rows[i].best;
            if (c == W_PLY)
                pqw_int64(w, rows[i].ply);
            else if (v)
                pqw_string(w, v, strlen(v));
            else
                pqw_null(w);
        }
        CHECK_OK(pqw_end_column(w, &err));
    }
    CHECK_OK(pqw_end_row_group(w, &err));
    CHECK_OK(pqw_close(w, &err));
}

#define FEN0 "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
#define FEN1 "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"
#define FEN2 "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2"

/* Game a: the best move of its second position is null. Game b: whole.
 * Game c: the played move of its first position is null. Rows out of ply
 * order, to show the null stays with its row. */
static const null_row null_rows[] = {
    {"a", 2, FEN2, "g1f3", "g1f3"}, {"a", 0, FEN0, "e2e4", "d2d4"}, {"a", 1, FEN1, "e7e5", NULL},
    {"b", 0, FEN0, "d2d4", "e2e4"}, {"b", 1, FEN1, "c7c5", "c7c5"}, {"c", 0, FEN0, NULL, "e2e4"},
    {"c", 1, FEN1, "e7e5", "e7e5"},
};
#define N_NULL_ROWS (sizeof null_rows / sizeof null_rows[0])

static const char *null_table(void)
{
    static char path[4200];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s", tu_path("nulls.parquet"));
        write_null_table(path, null_rows, N_NULL_ROWS);
    }
    return path;
}

/* The source passes every game on, nulls as NULL strings in their rows. */
static void test_null_values_passed_on(void)
{
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, shuffle: false}", null_table());
    run_result r;
    run(yaml, 0, 1, &r);
    CHECK_EQ_U64(r.n, 3);
    CHECK_EQ_U64(count(&r.m, "games"), 3);
    CHECK_EQ_U64(count(&r.m, "rows"), N_NULL_ROWS);
    CHECK_EQ_U64(count(&r.m, "bad_files") + count(&r.m, "bad_row_groups"), 0);
    if (r.n == 3) {
        const lc_game_item *a = &r.games[0], *c = &r.games[2];
        CHECK_EQ_STR(a->id, "a");
        CHECK_EQ_INT(a->n_rows, 3);
        if (a->n_rows == 3) {
            CHECK(same_text(a->rows[0].best, a->rows[0].best_len, "d2d4"));
            CHECK(a->rows[1].best == NULL && a->rows[1].best_len == 0);
            CHECK(same_text(a->rows[1].played, a->rows[1].played_len, "e7e5"));
            CHECK(same_text(a->rows[1].fen, a->rows[1].fen_len, FEN1));
            CHECK(same_text(a->rows[2].best, a->rows[2].best_len, "g1f3"));
        }
        CHECK_EQ_STR(c->id, "c");
        CHECK(c->n_rows == 2 && c->rows[0].played == NULL && c->rows[0].best != NULL);
    }
    run_free(&r);
}

/* The table through game_tokenizer: what a null value spoils depends on the
 * mode. Returns the targets (encoder) of the samples, in order. */
typedef struct tokenized {
    uint64_t samples;
    int64_t targets[16];
    lc_stage_metrics m;
} tokenized;

static void tokenize_null_table(const char *tok_yaml, tokenized *o)
{
    memset(o, 0, sizeof *o);
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, shuffle: false}", null_table());
    lc_stage_env env = {.seed = 7, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *src = NULL, *tok = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_new(lc_stage_class_find("parquet_game_source"), "games", yaml, NULL, 64,
                               &env, &src, &err));
    CHECK_OK(lc_standalone_new(lc_stage_class_find("game_tokenizer"), "tokens", tok_yaml,
                               src->output, 64, &env, &tok, &err));
    CHECK_OK(lc_standalone_start(tok, &err));
    CHECK_OK(lc_standalone_start(src, &err));
    lc_batch_item b;
    while (lc_queue_get_until(tok->output, &b, NULL, lc_now_ns() + 60000000000ull) == 0) {
        int t = lc_batch_layout_find(b.batch->layout, "target");
        for (uint64_t i = 0; t >= 0 && i < b.batch->rows; i++)
            if (o->samples + i < sizeof o->targets / sizeof o->targets[0])
                o->targets[o->samples + i] = ((int64_t *)lc_batch_tensor(b.batch, (unsigned)t))[i];
        o->samples += b.batch->rows;
        lc_batch_free(b.batch);
    }
    CHECK(lc_queue_closed(tok->output));
    lc_standalone_stop(src);
    lc_standalone_stop(tok);
    lc_standalone_flush(tok, &o->m);
    lc_standalone_free(tok);
    lc_standalone_free(src);
}

/* Encoder: only the position with the null best move is skipped and
 * counted; game a's other two positions are kept, and both of game c (its
 * null played move does not matter). Without the shuffle buffer, so that
 * the samples keep file order. */
static void test_null_values_encoder(void)
{
    tokenized o;
    tokenize_null_table("{mode: encoder, batch_size: 4, shuffle_buffer: 0}", &o);
    CHECK_EQ_U64(o.samples, N_NULL_ROWS - 1);
    CHECK_EQ_U64(count(&o.m, "bad_positions_missing_values"), 1);
    CHECK_EQ_U64(count(&o.m, "bad_positions_out_of_vocabulary"), 0);
    CHECK_EQ_U64(count(&o.m, "bad_positions_fen"), 0);
    CHECK_EQ_U64(count(&o.m, "positions"), N_NULL_ROWS - 1);
    /* File order, each game by ply: a (d2d4, [null], g1f3), b, c. */
    const char *const moves[] = {"d2d4", "g1f3", "e2e4", "c7c5", "e2e4", "e7e5"};
    for (size_t i = 0; i < sizeof moves / sizeof moves[0] && i < o.samples; i++)
        CHECK_EQ_INT((int)o.targets[i], lc_chess_move_id(moves[i], 4));
}

/* Decoder: a game with a null best or played move is skipped whole and
 * counted once; game b alone gives a sample. */
static void test_null_values_decoder(void)
{
    tokenized o;
    tokenize_null_table("{mode: decoder, batch_size: 4, max_seq_len: 160}", &o);
    CHECK_EQ_U64(o.samples, 1);
    CHECK_EQ_U64(count(&o.m, "bad_games_missing_values"), 2);
    CHECK_EQ_U64(count(&o.m, "bad_games_out_of_vocabulary"), 0);
    CHECK_EQ_U64(count(&o.m, "bad_games_fen"), 0);
    CHECK_EQ_U64(count(&o.m, "games"), 3);
    CHECK_EQ_U64(count(&o.m, "positions"), 2);
}

/* Columns of the wrong kind (a numeric fen, string outcomes): each file is
 * skipped and counted, named in the log, and nothing crashes. */
static void write_kinds_table(const char *path, bool fen_numeric, bool outcome_strings)
{
    pqw_column_spec cols[8] = {
        {"game_id", PQW_STRING},     {"ply", PQW_INT64},
        {"fen", fen_numeric ? PQW_INT64 : PQW_STRING},
        {"played_move", PQW_STRING}, {"best_move", PQW_STRING},
        {"win", outcome_strings ? PQW_STRING : PQW_DOUBLE},
        {"draw", PQW_DOUBLE},        {"loss", PQW_DOUBLE},
    };
    pqw_options opt = pqw_default_options();
    lc_error err;
    lc_error_clear(&err);
    pqw_writer *w = NULL;
    CHECK_OK(pqw_create(path, cols, 8, &opt, &w, &err));
    if (!w)
        return;
    for (int c = 0; c < 8; c++) {
        for (int i = 0; i < 3; i++) {
            if (cols[c].type == PQW_INT64)
                pqw_int64(w, i);
            else if (cols[c].type == PQW_DOUBLE)
                pqw_double(w, 0.5);
            else
                pqw_string(w, c == 2 ? FEN0 : c == 0 ? "g" : c == 5 ? "1" : "e2e4",
                           c == 2 ? strlen(FEN0) : c == 0 || c == 5 ? 1 : 4);
        }
        CHECK_OK(pqw_end_column(w, &err));
    }
    CHECK_OK(pqw_end_row_group(w, &err));
    CHECK_OK(pqw_close(w, &err));
}

static void test_wrong_column_kinds(void)
{
    const char *dir = tu_path("kinds");
    tu_mkdirs(dir);
    char path[4400];
    snprintf(path, sizeof path, "%s/numeric_fen.parquet", dir);
    write_kinds_table(path, true, false);
    snprintf(path, sizeof path, "%s/string_win.parquet", dir);
    write_kinds_table(path, false, true);
    snprintf(path, sizeof path, "%s/fine.parquet", dir);
    write_kinds_table(path, false, false);
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 1}", dir);
    run_result r;
    run(yaml, 0, 1, &r);
    CHECK_EQ_U64(count(&r.m, "bad_files"), 2);
    CHECK_EQ_U64(r.n, 1); /* the one game of fine.parquet */
    run_free(&r);
}

/* ---- endless epochs: no spin, no flood ---------------------------------- */

/* Run an endless (epochs: 0) source over dir for `seconds`, draining its
 * games; returns the epochs it started. */
static int64_t run_for(const char *dir, double seconds, size_t *games)
{
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 0, threads: 2}", dir);
    lc_stage_env env = {.seed = 7, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_new(lc_stage_class_find("parquet_game_source"), "games", yaml, NULL,
                               64, &env, &s, &err));
    if (!s)
        return -1;
    CHECK_OK(lc_standalone_start(s, &err));
    *games = 0;
    uint64_t end = lc_now_ns() + (uint64_t)(seconds * 1e9);
    lc_game_item it;
    while (lc_now_ns() < end) {
        if (lc_queue_get_until(s->output, &it, NULL, lc_now_ns() + 20000000ull) == 0) {
            free(it.mem);
            (*games)++;
        }
    }
    lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    const lc_metric_gauge *g = lc_metrics_find_gauge(&m, "epoch");
    int64_t epochs = g ? g->value : -1;
    lc_standalone_stop(s);
    lc_standalone_free(s);
    return epochs;
}

static void test_endless_epochs_quiet(void)
{
    /* Only bad files: each is warned about once, then the source waits
     * longer and longer instead of spinning through epochs. */
    const char *dir = tu_path("allbad");
    tu_mkdirs(dir);
    link_into(dir, "bad/schema_too_short.parquet");
    link_into(dir, "bad/bad_magic_tail.parquet");
    uint64_t mark = tu_log_mark();
    size_t games = 0;
    int64_t epochs = run_for(dir, 2.5, &games);
    CHECK_EQ_U64(games, 0);
    CHECK(epochs >= 1 && epochs <= 3); /* 1 s, then 2 s of waiting */
    CHECK_EQ_U64(tu_log_count(mark, LC_LOG_INFO, "schema_too_short"), 1);
    CHECK_EQ_U64(tu_log_count(mark, LC_LOG_INFO, "bad_magic_tail"), 1);
    CHECK_EQ_U64(tu_log_count(mark, LC_LOG_INFO, "none of the 2 .parquet files"), 1);
    printf("only bad files, 2.5 s: %lld epochs\n", (long long)epochs);

    /* A good file read over and over: many epochs, one info line. */
    dir = tu_path("onegood");
    tu_mkdirs(dir);
    link_into(dir, "duckdb_gzip_ply1.parquet");
    mark = tu_log_mark();
    epochs = run_for(dir, 1.5 * tu_slow(), &games);
    CHECK(games > 0);
    CHECK(epochs > 3);
    CHECK_EQ_U64(tu_log_count(mark, LC_LOG_INFO, ": epoch "), 1);
    printf("one good file, 1.5 s: %lld epochs, %zu games, one epoch line\n", (long long)epochs,
           games);
}

/* ---- ranks in balance --------------------------------------------------- */

/* A table of `games` games of 5 + (g * 7) % 40 rows each, written in
 * `groups` row groups, rows in game order or shuffled across the file. */
static uint64_t write_rank_table(const char *path, int games, int groups, bool shuffled)
{
    static const pqw_column_spec cols[5] = {
        {"game_id", PQW_STRING},     {"ply", PQW_INT64},        {"fen", PQW_STRING},
        {"played_move", PQW_STRING}, {"best_move", PQW_STRING},
    };
    size_t n = 0;
    for (int g = 0; g < games; g++)
        n += 5 + (size_t)(g * 7) % 40;
    uint32_t *game = malloc(n * sizeof *game), *ply = malloc(n * sizeof *ply);
    size_t k = 0;
    for (int g = 0; g < games; g++)
        for (int p = 0; p < 5 + (g * 7) % 40; p++, k++) {
            game[k] = (uint32_t)g;
            ply[k] = (uint32_t)p;
        }
    if (shuffled) {
        uint32_t x = 99;
        for (size_t i = n; i > 1; i--) {
            x = x * 1664525u + 1013904223u;
            size_t j = x % i;
            uint32_t t = game[i - 1];
            game[i - 1] = game[j];
            game[j] = t;
            t = ply[i - 1];
            ply[i - 1] = ply[j];
            ply[j] = t;
        }
    }
    pqw_options opt = pqw_default_options();
    lc_error err;
    lc_error_clear(&err);
    pqw_writer *w = NULL;
    CHECK_OK(pqw_create(path, cols, 5, &opt, &w, &err));
    size_t per = (n + (size_t)groups - 1) / (size_t)groups;
    for (size_t lo = 0; w && lo < n; lo += per) {
        size_t hi = lo + per < n ? lo + per : n;
        for (int c = 0; c < 5; c++) {
            for (size_t i = lo; i < hi; i++) {
                char id[16];
                snprintf(id, sizeof id, "g%04u", game[i]);
                if (c == 0)
                    pqw_string(w, id, strlen(id));
                else if (c == 1)
                    pqw_int64(w, ply[i]);
                else if (c == 2)
                    pqw_string(w, FEN0, strlen(FEN0));
                else
                    pqw_string(w, "e2e4", 4);
            }
            CHECK_OK(pqw_end_column(w, &err));
        }
        CHECK_OK(pqw_end_row_group(w, &err));
    }
    if (w)
        CHECK_OK(pqw_close(w, &err));
    free(game);
    free(ply);
    return n;
}

/* Every layout splits evenly: games in order or shuffled across the file,
 * many row groups or one. Each game goes to exactly one rank, each rank
 * within 5% of its share of the rows, and the ranks report it. */
static void test_ranks_in_balance(void)
{
    static const struct {
        const char *name;
        int groups;
        bool shuffled;
    } layouts[] = {{"ordered", 8, false}, {"shuffled", 8, true}, {"one_group", 1, false},
                   {"one_group_shuffled", 1, true}};
    enum { GAMES = 300, WORLD = 3 };
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
        char dir[4400], path[4600], yaml[4800];
        snprintf(dir, sizeof dir, "%s-%s", tu_path("ranks"), layouts[l].name);
        tu_mkdirs(dir);
        snprintf(path, sizeof path, "%s/t.parquet", dir);
        uint64_t rows = write_rank_table(path, GAMES, layouts[l].groups, layouts[l].shuffled);
        snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 1}", dir);
        int seen[GAMES] = {0};
        uint64_t got[WORLD] = {0};
        for (uint32_t rank = 0; rank < WORLD; rank++) {
            run_result r;
            run(yaml, rank, WORLD, &r);
            for (size_t i = 0; i < r.n; i++) {
                int g = atoi(r.games[i].id + 1);
                if (g >= 0 && g < GAMES)
                    seen[g]++;
                got[rank] += r.games[i].n_rows;
            }
            CHECK_EQ_U64(count(&r.m, "rank_rows"), got[rank]);
            CHECK_EQ_U64(count(&r.m, "all_ranks_rows"), rows);
            run_free(&r);
        }
        int once = 0;
        for (int g = 0; g < GAMES; g++)
            once += seen[g] == 1;
        CHECK_EQ_INT(once, GAMES);
        printf("ranks, %s: rows %llu/%llu/%llu of %llu\n", layouts[l].name,
               (unsigned long long)got[0], (unsigned long long)got[1],
               (unsigned long long)got[2], (unsigned long long)rows);
        for (int r = 0; r < WORLD; r++) {
            double share = (double)got[r] / (double)rows;
            CHECK(share > 1.0 / WORLD - 0.05 && share < 1.0 / WORLD + 0.05);
        }
    }
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
    CHECK_OK(
        lc_standalone_new(cls, "games", "{path: /nonexistent/games}", NULL, 4, NULL, &s, &err));
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
    test_file_wide_shuffle();
    test_damaged_row_groups();
    test_stop_midway();
    test_bad_files();
    test_null_values_passed_on();
    test_null_values_encoder();
    test_null_values_decoder();
    test_wrong_column_kinds();
    test_endless_epochs_quiet();
    test_ranks_in_balance();
    test_config_errors();
    return check_finish();
}
