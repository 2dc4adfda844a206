/*
 * parquet_game_source against the Parquet fixtures (tests/parquet): every
 * game of every file comes out exactly once, whole, sorted by ply, with the
 * values the writer was given (x.tsv.gz); in file order without shuffling;
 * exactly once across threads and distributed ranks; once per epoch; games
 * whose rows span several row groups, or are scattered through the file,
 * come out whole; malformed files are counted and skipped while the good
 * ones are read; rows with a null fen or move are passed on with a NULL
 * string and, through game_tokenizer, spoil only their position in encoder
 * mode but the whole game in decoder mode (a table written here by a tiny
 * Parquet writer, as no fixture has such nulls).
 */
#include "check.h"
#include "testutil.h"
#include "tsv.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/text.h"
#include "format/batch.h"
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

/* ---- a tiny table with null values ------------------------------------- */

/* A minimal Parquet writer, from the format specification, for what no
 * fixture has: one row group; columns game_id, fen, played_move, best_move
 * (OPTIONAL BYTE_ARRAY, UTF8) and ply (OPTIONAL INT64), no win, draw or
 * loss; one uncompressed v1 data page of PLAIN values per column, the
 * definition levels bit-packed. */
typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
} bytes;

static void b_put(bytes *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = 2 * (b->n + n) + 256;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void b_byte(bytes *b, uint8_t v)
{
    b_put(b, &v, 1);
}

static void b_varint(bytes *b, uint64_t v)
{
    for (; v >= 0x80; v >>= 7)
        b_byte(b, (uint8_t)(v | 0x80));
    b_byte(b, (uint8_t)v);
}

static void b_le(bytes *b, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        b_byte(b, (uint8_t)(v >> (8 * i)));
}

/* Thrift compact protocol: field headers carry the id as a delta from the
 * previous field of the same struct. */
enum { T_I32 = 5, T_I64 = 6, T_BINARY = 8, T_LIST = 9, T_STRUCT = 12 };
typedef struct thrift {
    bytes *b;
    int last[8];
    int depth;
} thrift;

static void t_field(thrift *t, int id, int type)
{
    int delta = id - t->last[t->depth];
    if (delta > 0 && delta <= 15) {
        b_byte(t->b, (uint8_t)(delta << 4 | type));
    } else {
        b_byte(t->b, (uint8_t)type);
        b_varint(t->b, (uint64_t)((id << 1) ^ (id >> 31)));
    }
    t->last[t->depth] = id;
}

static void t_begin(thrift *t) /* a struct: top level, list element or after t_field */
{
    t->last[++t->depth] = 0;
}

static void t_end(thrift *t)
{
    b_byte(t->b, 0);
    t->depth--;
}

static void t_i64(thrift *t, int id, int64_t v)
{
    t_field(t, id, T_I64);
    b_varint(t->b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void t_i32(thrift *t, int id, int32_t v)
{
    t_field(t, id, T_I32);
    b_varint(t->b, (uint32_t)(((uint32_t)v << 1) ^ (uint32_t)(v >> 31)));
}

static void t_string(thrift *t, int id, const char *s) /* id 0: a list element */
{
    if (id)
        t_field(t, id, T_BINARY);
    b_varint(t->b, strlen(s));
    b_put(t->b, s, strlen(s));
}

static void t_list(thrift *t, int id, int type, size_t n)
{
    t_field(t, id, T_LIST);
    b_byte(t->b, (uint8_t)((n < 15 ? n : 15) << 4 | (size_t)type));
    if (n >= 15)
        b_varint(t->b, n);
}

typedef struct null_row {
    const char *id;
    int64_t ply;
    const char *fen, *played, *best; /* NULL: a null value */
} null_row;

enum { W_ID, W_PLY, W_FEN, W_PLAYED, W_BEST, W_COLS };

static void write_null_table(const char *path, const null_row *rows, size_t n)
{
    static const char *const names[W_COLS] = {"game_id", "ply", "fen", "played_move",
                                              "best_move"};
    bytes file = {0}, meta = {0};
    b_put(&file, "PAR1", 4);
    int64_t start[W_COLS], size[W_COLS];
    for (int c = 0; c < W_COLS; c++) {
        bytes body = {0}, values = {0}, head = {0};
        uint8_t levels[64] = {0};
        CHECK(n <= 8 * sizeof levels);
        for (size_t i = 0; i < n; i++) {
            const char *v = c == W_ID       ? rows[i].id
                            : c == W_FEN    ? rows[i].fen
                            : c == W_PLAYED ? rows[i].played
                            : c == W_BEST   ? rows[i].best
                                            : "";
            if (!v)
                continue;
            levels[i / 8] |= (uint8_t)(1u << (i % 8));
            if (c == W_PLY) {
                b_le(&values, (uint64_t)rows[i].ply, 8);
            } else {
                b_le(&values, strlen(v), 4);
                b_put(&values, v, strlen(v));
            }
        }
        size_t groups = (n + 7) / 8;
        bytes lv = {0};
        b_varint(&lv, groups << 1 | 1); /* one bit-packed run */
        b_put(&lv, levels, groups);
        b_le(&body, lv.n, 4);
        b_put(&body, lv.p, lv.n);
        b_put(&body, values.p, values.n);
        thrift t = {.b = &head};
        t_begin(&t);      /* PageHeader */
        t_i32(&t, 1, 0);  /* DATA_PAGE */
        t_i32(&t, 2, (int32_t)body.n);
        t_i32(&t, 3, (int32_t)body.n);
        t_field(&t, 5, T_STRUCT); /* DataPageHeader */
        t_begin(&t);
        t_i32(&t, 1, (int32_t)n);
        t_i32(&t, 2, 0); /* PLAIN */
        t_i32(&t, 3, 3); /* RLE definition levels */
        t_i32(&t, 4, 3); /* RLE repetition levels (none) */
        t_end(&t);
        t_end(&t);
        start[c] = (int64_t)file.n;
        size[c] = (int64_t)(head.n + body.n);
        b_put(&file, head.p, head.n);
        b_put(&file, body.p, body.n);
        free(body.p);
        free(values.p);
        free(head.p);
        free(lv.p);
    }
    thrift t = {.b = &meta};
    t_begin(&t);     /* FileMetaData */
    t_i32(&t, 1, 1); /* version */
    t_list(&t, 2, T_STRUCT, 1 + W_COLS);
    t_begin(&t); /* the root */
    t_string(&t, 4, "schema");
    t_i32(&t, 5, W_COLS);
    t_end(&t);
    for (int c = 0; c < W_COLS; c++) {
        t_begin(&t);
        t_i32(&t, 1, c == W_PLY ? 2 : 6); /* INT64 or BYTE_ARRAY */
        t_i32(&t, 3, 1);                  /* OPTIONAL */
        t_string(&t, 4, names[c]);
        if (c != W_PLY)
            t_i32(&t, 6, 0); /* UTF8 */
        t_end(&t);
    }
    t_i64(&t, 3, (int64_t)n);
    t_list(&t, 4, T_STRUCT, 1);
    t_begin(&t); /* RowGroup */
    t_list(&t, 1, T_STRUCT, W_COLS);
    int64_t total = 0;
    for (int c = 0; c < W_COLS; c++) {
        t_begin(&t); /* ColumnChunk */
        t_i64(&t, 2, start[c] + size[c]);
        t_field(&t, 3, T_STRUCT); /* ColumnMetaData */
        t_begin(&t);
        t_i32(&t, 1, c == W_PLY ? 2 : 6);
        t_list(&t, 2, T_I32, 2);
        b_varint(&meta, 0); /* PLAIN */
        b_varint(&meta, 6); /* RLE (zigzag 3) */
        t_list(&t, 3, T_BINARY, 1);
        t_string(&t, 0, names[c]);
        t_i32(&t, 4, 0); /* UNCOMPRESSED */
        t_i64(&t, 5, (int64_t)n);
        t_i64(&t, 6, size[c]);
        t_i64(&t, 7, size[c]);
        t_i64(&t, 9, start[c]);
        t_end(&t);
        t_end(&t);
        total += size[c];
    }
    t_i64(&t, 2, total);
    t_i64(&t, 3, (int64_t)n);
    t_end(&t);
    t_end(&t);
    b_put(&file, meta.p, meta.n);
    b_le(&file, meta.n, 4);
    b_put(&file, "PAR1", 4);
    tu_write_file(path, file.p, file.n);
    free(file.p);
    free(meta.p);
}

#define FEN0 "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
#define FEN1 "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"
#define FEN2 "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2"

/* Game a: the best move of its second position is null. Game b: whole.
 * Game c: the played move of its first position is null. Rows out of ply
 * order, to show the null stays with its row. */
static const null_row null_rows[] = {
    {"a", 2, FEN2, "g1f3", "g1f3"}, {"a", 0, FEN0, "e2e4", "d2d4"}, {"a", 1, FEN1, "e7e5", NULL},
    {"b", 0, FEN0, "d2d4", "e2e4"}, {"b", 1, FEN1, "c7c5", "c7c5"},
    {"c", 0, FEN0, NULL, "e2e4"},   {"c", 1, FEN1, "e7e5", "e7e5"},
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
    CHECK_EQ_U64(count(&r.m, "bad_files") + count(&r.m, "bad_units"), 0);
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
    CHECK_OK(lc_standalone_new(lc_stage_class_find("parquet_game_source"), "games", yaml, NULL,
                               64, &env, &src, &err));
    CHECK_OK(lc_standalone_new(lc_stage_class_find("game_tokenizer"), "tokens", tok_yaml,
                               src->output, 64, &env, &tok, &err));
    CHECK_OK(lc_standalone_start(tok, &err));
    CHECK_OK(lc_standalone_start(src, &err));
    lc_batch_item b;
    while (lc_queue_get_until(tok->output, &b, NULL, lc_now_ns() + 60000000000ull) == 0) {
        int t = lc_batch_layout_find(b.batch->layout, "target");
        for (uint64_t i = 0; t >= 0 && i < b.batch->rows; i++)
            if (o->samples + i < sizeof o->targets / sizeof o->targets[0])
                o->targets[o->samples + i] =
                    ((int64_t *)lc_batch_tensor(b.batch, (unsigned)t))[i];
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
 * null played move does not matter). */
static void test_null_values_encoder(void)
{
    tokenized o;
    tokenize_null_table("{mode: encoder, batch_size: 4}", &o);
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
    test_null_values_passed_on();
    test_null_values_encoder();
    test_null_values_decoder();
    test_config_errors();
    return check_finish();
}
