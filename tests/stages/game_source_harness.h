/*
 * The harness of parquet_game_source's tests (test_parquet_game_source.c,
 * test_parquet_game_source_bad.c): the fixtures, what their writers were
 * given (x.tsv.gz) and the comparison of games against it, running the
 * stage to the end of its output.
 */
#ifndef LC_TESTS_GAME_SOURCE_HARNESS_H
#define LC_TESTS_GAME_SOURCE_HARNESS_H

#include "check.h"
#include "testutil.h"
#include "tsv.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/text.h"
#include "format/batch.h"
#include "format/chess/chess_tokens.h"
#include "lc_config.h"
#include "pipeline/config.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The start position. */
#define FEN0 "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"

static char fixtures[4096] __attribute__((unused));

/* The game tables this build reads: those in LZ4, LZ4_RAW and BROTLI only
 * with their libraries (test_parquet.c checks that a build without them
 * refuses them). */
__attribute__((unused)) static const char *const good[] = {
    "arrow_fallback_v1_snappy",
    "arrow_fallback_v2_zstd",
    "arrow_v2_gzip_delta",
    "duckdb_gzip_ply1",
    "duckdb_snappy_rowgroups",
    "duckdb_uncompressed_shuffled",
    "duckdb_v2_zstd_types",
    "duckdb_zstd_extra_columns",
    "hyparquet_delta_gzip",
    "hyparquet_types_uncompressed",
    "hyparquet_v2_snappy",
    "own_dictionary_offsets",
#if LC_HAVE_LZ4
    "arrow_lz4_raw",
    "duckdb_lz4_raw",
    "arrow_lz4_hadoop",
    "hyparquet_lz4_frame",
    "hyparquet_lz4_block",
#endif
#if LC_HAVE_BROTLI
    "duckdb_brotli",
    "arrow_brotli_v2",
    "hyparquet_brotli",
#endif
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

static const tsv *sort_tsv __attribute__((unused));
static int sort_ply_col __attribute__((unused));
static inline int by_ply(const void *a, const void *b)
{
    long long x = atoll(tsv_cell(sort_tsv, *(const size_t *)a, sort_ply_col));
    long long y = atoll(tsv_cell(sort_tsv, *(const size_t *)b, sort_ply_col));
    return x < y ? -1 : x > y;
}

static inline void want_add(want *w, const char *name)
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

static inline void want_free(want *w)
{
    for (size_t k = 0; k < w->n_games; k++)
        free(w->games[k].lines);
    free(w->games);
    for (size_t i = 0; i < w->n_tables; i++)
        tsv_free(&w->tables[i]);
}

static inline want_game *want_find(want *w, const char *file, const char *id)
{
    for (size_t k = 0; k < w->n_games; k++)
        if (strcmp(w->games[k].id, id) == 0 && strcmp(w->games[k].file, file) == 0)
            return &w->games[k];
    return NULL;
}

static inline bool same_text(const char *p, size_t n, const char *cell)
{
    if (!p || strcmp(cell, "\\N") == 0)
        return !p && n == 0 && strcmp(cell, "\\N") == 0;
    return strlen(cell) == n && memcmp(p, cell, n) == 0;
}

static inline bool same_number(double v, bool has, const char *cell)
{
    if (strcmp(cell, "\\N") == 0)
        return !has && v == 0.0;
    return has && v == strtod(cell, NULL);
}

/* The game's rows are the first of the wanted ones, in ply order, value by
 * value. */
static inline bool game_prefix_matches(const want_game *g, const lc_game_item *it, bool quiet)
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
static inline bool game_matches(const want_game *g, const lc_game_item *it)
{
    return it->n_rows == g->n && game_prefix_matches(g, it, false);
}

/* ---- running the stage -------------------------------------------------- */

typedef struct run_result {
    lc_game_item *games;
    size_t n;
    lc_stage_metrics m;
} run_result;

static inline void run_free(run_result *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->games[i].mem);
    free(r->games);
}

static inline uint64_t count(const lc_stage_metrics *m, const char *name)
{
    const lc_metric_slot *c = lc_metrics_find(m, name);
    return c ? c->count : 0;
}

/* Run the stage until its output closes (it must: epochs > 0). */
static inline void run(const char *yaml, uint32_t rank, uint32_t world, run_result *r)
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

static inline void link_into(const char *dir, const char *name)
{
    char from[4200], to[4200];
    snprintf(from, sizeof from, "%s/%s", fixtures, name);
    snprintf(to, sizeof to, "%s/%s", dir, lc_basename(name));
    CHECK(symlink(from, to) == 0);
}

/* Copy from to to (they may be one file) with bytes [len * at / 20,
 * + len / span) overwritten: a damaged middle that spares the footer.
 * false when from is missing or not above min_len bytes. */
static inline bool damage(const char *from, const char *to, size_t at, size_t span, size_t min_len)
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

/* The fixtures' folder, or 1 after saying why not. */
static inline int find_fixtures(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    snprintf(fixtures, sizeof fixtures, "%s/../parquet/fixtures", tu_test_data());
    if (!tu_is_dir(fixtures)) {
        fprintf(stderr, "no fixtures at %s\n", fixtures);
        return 1;
    }
    return 0;
}

#endif
