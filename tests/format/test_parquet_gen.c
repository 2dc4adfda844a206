/*
 * test_parquet_gen: the benchmark data generator (bench/parquet_gen.c), run as
 * a program, its output read back with our Parquet reader.
 *
 * The expected rows come from the fixtures' .tsv.gz files (the values the
 * fixture writers were given), not from the reader, so the grouping into
 * games, the ply order and the values are checked independently: every
 * output game must be a whole source game (the last one a prefix of one),
 * copied row for row with its nulls, under the id g%09d of its number and
 * with ply counting from 0. Without --seed game k copies source game k mod G
 * (games in the order of their first row in the source file); with --seed
 * every round of G games is a permutation of the source games.
 *
 * Also: row group sizes, schema, codec and encoding (by default pyarrow's:
 * Snappy, a dictionary page then RLE_DICTIONARY pages; with --encoding plain
 * PLAIN pages only), several pages per
 * chunk (--page-bytes), the default --from, same seed same bytes, and errors
 * that name the file and exit 1 without leaving an output behind.
 *
 * LC_PARQUET_GEN is the generator's path, LC_TEST_DATA as for the other
 * format tests (the fixtures are in its ../parquet/fixtures).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "testutil.h"
#include "format/parquet/parquet.h"

static char fixtures_dir[4096];
static const char *gen;

static const char *fixture(const char *name, const char *ext)
{
    static char bufs[4][4096];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s%s", fixtures_dir, name, ext);
    return b;
}

/* ---- expected games from x.tsv.gz ------------------------------------------- */

enum { C_GAME, C_PLY, C_FEN, C_PLAYED, C_BEST, C_WIN, C_DRAW, C_LOSS, N_C };
static const char *const names[N_C] = {"game_id",   "ply", "fen",  "played_move",
                                       "best_move", "win", "draw", "loss"};

/* One row: strings (NULL for null) and outcomes. */
typedef struct row {
    char *s[3]; /* fen, played, best */
    double wdl[3];
    bool wdl_valid[3];
} row;

typedef struct game {
    char *id;
    size_t first; /* first row in the file */
    row *rows;
    long long *ply;
    size_t n, cap;
} game;

typedef struct games {
    game *g;
    size_t n, cap;
    size_t rows;
} games;

static char *gunzip_file(const char *path)
{
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    int got;
    while ((got = gzread(gz, b + n, (unsigned)(cap - n - 1))) > 0) {
        n += (size_t)got;
        if (cap - n < 2)
            b = realloc(b, cap *= 2);
    }
    gzclose(gz);
    b[n] = '\0';
    return b;
}

static bool is_null(const char *s)
{
    return strcmp(s, "\\N") == 0;
}

static game *game_of(games *gs, const char *id, size_t line)
{
    for (size_t i = 0; i < gs->n; i++)
        if (strcmp(gs->g[i].id, id) == 0)
            return &gs->g[i];
    if (gs->n == gs->cap)
        gs->g = realloc(gs->g, (gs->cap = gs->cap ? 2 * gs->cap : 64) * sizeof *gs->g);
    game *g = &gs->g[gs->n++];
    *g = (game){.id = strdup(id), .first = line};
    return g;
}

/* Sort the rows of a game by ply, stable (insertion sort; games are short). */
static void sort_game(game *g)
{
    for (size_t i = 1; i < g->n; i++) {
        for (size_t j = i; j > 0 && g->ply[j - 1] > g->ply[j]; j--) {
            row r = g->rows[j];
            g->rows[j] = g->rows[j - 1];
            g->rows[j - 1] = r;
            long long p = g->ply[j];
            g->ply[j] = g->ply[j - 1];
            g->ply[j - 1] = p;
        }
    }
}

static bool load_games(const char *name, games *gs)
{
    *gs = (games){0};
    char *text = gunzip_file(fixture(name, ".tsv.gz"));
    if (!text)
        return false;
    int col[N_C];
    for (int c = 0; c < N_C; c++)
        col[c] = -1;
    char *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    int n_fields = 0;
    {
        char *fs = NULL;
        for (char *f = strtok_r(line, "\t", &fs); f; f = strtok_r(NULL, "\t", &fs), n_fields++)
            for (int c = 0; c < N_C; c++)
                if (strcmp(f, names[c]) == 0)
                    col[c] = n_fields;
    }
    for (int c = 0; c < N_C; c++)
        if (col[c] < 0) {
            free(text);
            return false;
        }
    char **field = calloc((size_t)n_fields, sizeof *field);
    size_t at = 0;
    while ((line = strtok_r(NULL, "\n", &save))) {
        int n = 0;
        for (char *p = line; n < n_fields; n++) {
            field[n] = p;
            char *tab = strchr(p, '\t');
            if (!tab) {
                n++;
                break;
            }
            *tab = '\0';
            p = tab + 1;
        }
        if (n != n_fields)
            continue;
        game *g = game_of(gs, field[col[C_GAME]], at++);
        if (g->n == g->cap) {
            g->cap = g->cap ? 2 * g->cap : 16;
            g->rows = realloc(g->rows, g->cap * sizeof *g->rows);
            g->ply = realloc(g->ply, g->cap * sizeof *g->ply);
        }
        row *r = &g->rows[g->n];
        g->ply[g->n] = strtoll(field[col[C_PLY]], NULL, 10);
        for (int k = 0; k < 3; k++) {
            const char *s = field[col[C_FEN + k]];
            r->s[k] = is_null(s) ? NULL : strdup(s);
            const char *w = field[col[C_WIN + k]];
            r->wdl_valid[k] = !is_null(w);
            r->wdl[k] = r->wdl_valid[k] ? strtod(w, NULL) : 0.0;
        }
        g->n++;
        gs->rows++;
    }
    free(field);
    free(text);
    for (size_t i = 0; i < gs->n; i++)
        sort_game(&gs->g[i]);
    return gs->n > 0;
}

static void row_free(row *r)
{
    for (int k = 0; k < 3; k++)
        free(r->s[k]);
}

static void games_free(games *gs)
{
    for (size_t i = 0; i < gs->n; i++) {
        for (size_t j = 0; j < gs->g[i].n; j++)
            row_free(&gs->g[i].rows[j]);
        free(gs->g[i].rows);
        free(gs->g[i].ply);
        free(gs->g[i].id);
    }
    free(gs->g);
}

static bool same_row(const row *a, const row *b)
{
    for (int k = 0; k < 3; k++) {
        if (!a->s[k] != !b->s[k] || (a->s[k] && strcmp(a->s[k], b->s[k]) != 0))
            return false;
        if (a->wdl_valid[k] != b->wdl_valid[k] || (a->wdl_valid[k] && a->wdl[k] != b->wdl[k]))
            return false;
    }
    return true;
}

/* ---- running the generator ------------------------------------------------------ */

/* Run the generator with stderr to err_path; returns the exit status. */
static int run_gen(const char *const *args, const char *err_path)
{
    char *argv[32];
    size_t n = 0;
    argv[n++] = (char *)gen;
    for (; *args && n < 31; args++)
        argv[n++] = (char *)*args;
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawn(&pid, gen, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "cannot run %s: %s\n", gen, strerror(rc));
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *slurp_text(const char *path)
{
    size_t n;
    uint8_t *b = tu_read_file(path, &n);
    if (!b)
        return strdup("");
    b = realloc(b, n + 1);
    b[n] = '\0';
    return (char *)b;
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- reading the output back ------------------------------------------------------ */

typedef struct out_file {
    size_t n;
    char **id;
    long long *ply;
    bool *ply_valid;
    row *rows;
} out_file;

static void out_free(out_file *o)
{
    for (size_t i = 0; i < o->n; i++) {
        free(o->id[i]);
        row_free(&o->rows[i]);
    }
    free(o->id);
    free(o->ply);
    free(o->ply_valid);
    free(o->rows);
    *o = (out_file){0};
}

static char *dup_string(const lc_parquet_column *c, size_t i)
{
    if (!c->valid[i])
        return NULL;
    size_t len;
    const char *s = lc_parquet_string(c, i, &len);
    return strndup(s, len);
}

/* Read path, checking what every generated file must be; false when it
 * cannot be read at all. */
static bool read_output(const char *path, size_t rows, size_t rg_rows, int codec, bool dictionary,
                        out_file *o)
{
    *o = (out_file){0};
    lc_parquet_file *f = tu_parquet_open(path);
    CHECK(f != NULL);
    if (!f)
        return false;
    CHECK_EQ_INT(lc_parquet_num_rows(f), rows);
    size_t n_rg = lc_parquet_num_row_groups(f);
    CHECK_EQ_INT(n_rg, (rows + rg_rows - 1) / rg_rows);
    CHECK_EQ_INT(lc_parquet_num_columns(f), N_C);
    for (int c = 0; c < N_C && c < (int)lc_parquet_num_columns(f); c++) {
        const lc_parquet_column_info *ci = lc_parquet_column_at(f, (size_t)c);
        CHECK_EQ_STR(ci->name, names[c]);
        CHECK(ci->optional);
        CHECK_EQ_INT(ci->type, c == C_PLY   ? LC_PARQUET_INT64
                               : c >= C_WIN ? LC_PARQUET_DOUBLE
                                            : LC_PARQUET_BYTE_ARRAY);
        CHECK_EQ_INT(lc_parquet_find_column(f, names[c]), c);
    }
    o->id = calloc(rows + 1, sizeof *o->id);
    o->ply = calloc(rows + 1, sizeof *o->ply);
    o->ply_valid = calloc(rows + 1, sizeof *o->ply_valid);
    o->rows = calloc(rows + 1, sizeof *o->rows);
    lc_parquet_column v[N_C];
    for (int c = 0; c < N_C; c++)
        lc_parquet_column_init(&v[c]);
    bool ok = lc_parquet_num_columns(f) == N_C;
    for (size_t rg = 0; ok && rg < n_rg; rg++) {
        size_t want = rows - rg * rg_rows < rg_rows ? rows - rg * rg_rows : rg_rows;
        CHECK_EQ_INT(lc_parquet_row_group_rows(f, rg), want);
        for (int c = 0; c < N_C; c++) {
            lc_error err;
            int rc = lc_parquet_read_column(f, rg, (size_t)c, &v[c], &err);
            CHECK_OK(rc);
            if (rc < 0) {
                fprintf(stderr, "  %s\n", err.msg);
                ok = false;
                break;
            }
            CHECK_EQ_INT(v[c].n, want);
            CHECK_EQ_INT(v[c].codec, codec);
            if (dictionary) {
                /* The fixtures' few games never fill a 1 MiB dictionary. */
                CHECK_EQ_INT(v[c].data_encodings, 1u << LC_PARQUET_ENC_RLE_DICTIONARY);
                CHECK_EQ_INT(v[c].page_types,
                             1u << LC_PARQUET_PAGE_DICTIONARY | 1u << LC_PARQUET_PAGE_DATA);
            } else {
                CHECK_EQ_INT(v[c].data_encodings, 1u << LC_PARQUET_ENC_PLAIN);
                CHECK_EQ_INT(v[c].page_types, 1u << LC_PARQUET_PAGE_DATA);
            }
            if (v[c].n != want)
                ok = false;
        }
        for (size_t i = 0; ok && i < want && o->n < rows; i++, o->n++) {
            o->id[o->n] = dup_string(&v[C_GAME], i);
            o->ply_valid[o->n] = v[C_PLY].valid[i];
            o->ply[o->n] = v[C_PLY].i64[i];
            row *r = &o->rows[o->n];
            for (int k = 0; k < 3; k++) {
                r->s[k] = dup_string(&v[C_FEN + k], i);
                r->wdl_valid[k] = v[C_WIN + k].valid[i];
                r->wdl[k] = v[C_WIN + k].f64[i];
            }
        }
    }
    for (int c = 0; c < N_C; c++)
        lc_parquet_column_fini(&v[c]);
    lc_parquet_close(f);
    CHECK_EQ_INT(o->n, rows);
    return ok && o->n == rows;
}

/* Check the rows against the source games; seeded: rounds are permutations. */
static void check_games(const out_file *o, const games *src, bool seeded)
{
    size_t G = src->n, k = 0, bad = 0, nulls = 0;
    bool *used = calloc(G, sizeof *used);
    for (size_t i = 0; i < o->n; k++) {
        /* Game k spans rows i..j-1. */
        size_t j = i + 1;
        while (j < o->n && o->id[j] && o->id[i] && strcmp(o->id[j], o->id[i]) == 0)
            j++;
        char want_id[32];
        snprintf(want_id, sizeof want_id, "g%09zu", k);
        if (!o->id[i] || strcmp(o->id[i], want_id) != 0) {
            if (bad++ < 5)
                fprintf(stderr, "  row %zu: game id %s, want %s\n", i, o->id[i] ? o->id[i] : "null",
                        want_id);
        }
        for (size_t r = i; r < j; r++)
            if (!o->ply_valid[r] || o->ply[r] != (long long)(r - i)) {
                if (bad++ < 5)
                    fprintf(stderr, "  row %zu: ply %lld, want %zu\n", r, o->ply[r], r - i);
            }
        if (k % G == 0)
            memset(used, 0, G * sizeof *used);
        size_t len = j - i, match = SIZE_MAX;
        for (size_t cand = seeded ? 0 : k % G; cand < G && match == SIZE_MAX; cand++) {
            const game *g = &src->g[cand];
            bool whole = len == g->n || (j == o->n && len < g->n);
            bool same = whole && !used[cand];
            for (size_t r = 0; same && r < len; r++)
                same = same_row(&o->rows[i + r], &g->rows[r]);
            if (same)
                match = cand;
            if (!seeded)
                break;
        }
        if (match == SIZE_MAX) {
            if (bad++ < 5)
                fprintf(stderr, "  game %zu (rows %zu..%zu) copies no source game%s\n", k, i, j - 1,
                        seeded ? " unused in its round" : "");
        } else {
            used[match] = true;
        }
        for (size_t r = i; r < j; r++)
            nulls += !o->rows[r].wdl_valid[0] + !o->rows[r].wdl_valid[1] +
                     !o->rows[r].wdl_valid[2] + !o->rows[r].s[0] + !o->rows[r].s[1] +
                     !o->rows[r].s[2];
        i = j;
    }
    CHECK_EQ_INT(bad, 0);
    if (o->n >= 100)
        CHECK(nulls > 0); /* the fixtures' nulls came through */
    free(used);
}

typedef struct gen_case {
    const char *from; /* fixture name */
    size_t rows, rg_rows;
    const char *codec;      /* or NULL: the default, snappy */
    const char *encoding;   /* or NULL: the default, dictionary */
    const char *seed;       /* or NULL */
    const char *page_bytes; /* or NULL */
} gen_case;

static void test_case(const gen_case *gc, const char *out)
{
    games src;
    bool loaded = load_games(gc->from, &src);
    CHECK(loaded);
    if (!loaded) {
        fprintf(stderr, "  cannot load %s\n", fixture(gc->from, ".tsv.gz"));
        games_free(&src);
        return;
    }
    char rows[32], rg[32];
    snprintf(rows, sizeof rows, "%zu", gc->rows);
    snprintf(rg, sizeof rg, "%zu", gc->rg_rows);
    const char *args[16] = {out, rows, "--row-group", rg, "--from", fixture(gc->from, ".parquet")};
    size_t n = 6;
    const char *const opts[][2] = {{"--codec", gc->codec},
                                   {"--encoding", gc->encoding},
                                   {"--seed", gc->seed},
                                   {"--page-bytes", gc->page_bytes}};
    for (size_t k = 0; k < sizeof opts / sizeof *opts; k++) {
        if (opts[k][1]) {
            args[n++] = opts[k][0];
            args[n++] = opts[k][1];
        }
    }
    const char *err = tu_path("stderr.txt");
    int rc = run_gen(args, err);
    CHECK_EQ_INT(rc, 0);
    char *msg = slurp_text(err);
    char want[64];
    snprintf(want, sizeof want, "%zu rows", gc->rows);
    CHECK(tu_contains(msg, want));
    if (rc != 0 || !tu_contains(msg, want))
        fprintf(stderr, "  %s %s %s: %s\n", gc->from, gc->codec ? gc->codec : "default",
                gc->encoding ? gc->encoding : "default", msg);
    free(msg);
    int codec = !gc->codec || strcmp(gc->codec, "snappy") == 0 ? LC_PARQUET_CODEC_SNAPPY
                : strcmp(gc->codec, "zstd") == 0               ? LC_PARQUET_CODEC_ZSTD
                                                               : LC_PARQUET_CODEC_UNCOMPRESSED;
    bool dictionary = !gc->encoding || strcmp(gc->encoding, "dictionary") == 0;
    out_file o = {0};
    if (rc == 0 && read_output(out, gc->rows, gc->rg_rows, codec, dictionary, &o))
        check_games(&o, &src, gc->seed != NULL);
    out_free(&o);
    games_free(&src);
}

static bool same_bytes(const char *a, const char *b)
{
    size_t na, nb;
    uint8_t *pa = tu_read_file(a, &na), *pb = tu_read_file(b, &nb);
    bool same = pa && pb && na == nb && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
}

static void test_generated(void)
{
    static const gen_case cases[] = {
        /* The default layout (pyarrow's): Snappy, dictionary. */
        {"duckdb_snappy_rowgroups", 2500, 700, NULL, NULL, NULL, NULL},
        {"duckdb_snappy_rowgroups", 2500, 700, "zstd", NULL, NULL, NULL},
        {"duckdb_snappy_rowgroups", 2500, 700, "uncompressed", "dictionary", NULL, NULL},
        {"duckdb_snappy_rowgroups", 2500, 700, "snappy", "plain", NULL, NULL},
        {"duckdb_snappy_rowgroups", 2500, 700, "zstd", "plain", NULL, NULL},
        {"duckdb_snappy_rowgroups", 2500, 700, "uncompressed", "plain", NULL, NULL},
        /* Several pages per chunk (about 25 rows a page for fen when plain). */
        {"duckdb_snappy_rowgroups", 2500, 700, "zstd", "plain", NULL, "2048"},
        {"duckdb_snappy_rowgroups", 2500, 700, "uncompressed", "plain", NULL, "100"},
        {"duckdb_snappy_rowgroups", 2500, 700, NULL, NULL, NULL, "100"},
        /* Rows in random order; ply from 1; int64 game ids, int32 ply, floats. */
        {"duckdb_uncompressed_shuffled", 1500, 400, "zstd", NULL, NULL, NULL},
        {"duckdb_gzip_ply1", 1000, 1000, "uncompressed", "plain", NULL, NULL},
        {"duckdb_v2_zstd_types", 777, 250, NULL, NULL, NULL, NULL},
        /* Shuffled rounds. */
        {"duckdb_snappy_rowgroups", 2500, 700, NULL, NULL, "7", NULL},
        /* One row; the last game cut short. */
        {"duckdb_snappy_rowgroups", 1, 700, NULL, NULL, NULL, NULL},
        {"duckdb_snappy_rowgroups", 1, 700, "zstd", "plain", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[64];
        snprintf(name, sizeof name, "case%zu.parquet", i);
        test_case(&cases[i], tu_path(name));
    }
    /* Same seed, same bytes; another seed, other bytes. */
    const char *a = tu_path("seed_a.parquet"), *b = tu_path("seed_b.parquet");
    const char *c = tu_path("seed_c.parquet"); /* with err below: 4 of tu_path's 8 buffers */
    const char *from = fixture("duckdb_snappy_rowgroups", ".parquet");
    const char *args_a[] = {a, "2500", "--seed", "7", "--from", from, NULL};
    const char *args_b[] = {b, "2500", "--from", from, "--seed", "7", NULL};
    const char *args_c[] = {c, "2500", "--from", from, "--seed", "8", NULL};
    const char *err = tu_path("stderr.txt");
    CHECK_EQ_INT(run_gen(args_a, err), 0);
    CHECK_EQ_INT(run_gen(args_b, err), 0);
    CHECK_EQ_INT(run_gen(args_c, err), 0);
    CHECK(same_bytes(a, b));
    CHECK(!same_bytes(a, c));
}

/* Zero rows: a valid file with no row groups. */
static void test_empty(void)
{
    const char *out = tu_path("empty.parquet");
    const char *args[] = {out, "0", "--from", fixture("duckdb_snappy_rowgroups", ".parquet"), NULL};
    CHECK_EQ_INT(run_gen(args, tu_path("stderr.txt")), 0);
    lc_parquet_file *f = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_parquet_open(out, &f, &err));
    if (f) {
        CHECK_EQ_INT(lc_parquet_num_rows(f), 0);
        CHECK_EQ_INT(lc_parquet_num_row_groups(f), 0);
        CHECK_EQ_INT(lc_parquet_num_columns(f), N_C);
        lc_parquet_close(f);
    }
}

/* Without --from the fixture is found relative to the current directory (the
 * source root); the file equals one made with --from. */
static void test_default_from(void)
{
    const char *a = tu_path("default.parquet"), *b = tu_path("explicit.parquet");
    const char *err = tu_path("stderr.txt"); /* 3 of tu_path's 8 buffers */
    const char *args_b[] = {b,     "1234",   "--row-group",
                            "500", "--from", fixture("duckdb_snappy_rowgroups", ".parquet"),
                            NULL};
    CHECK_EQ_INT(run_gen(args_b, err), 0);
    char cwd[4096], root[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(root, sizeof root, "%s/../..", tu_test_data());
    CHECK_OK(chdir(root) == 0 ? 0 : -errno);
    const char *args_a[] = {a, "1234", "--row-group", "500", NULL};
    CHECK_EQ_INT(run_gen(args_a, err), 0);
    CHECK_OK(chdir(cwd) == 0 ? 0 : -errno);
    CHECK(same_bytes(a, b));
}

static void expect_failure(const char *const *args, const char *must_name, const char *out)
{
    const char *err = tu_path("stderr.txt");
    CHECK_EQ_INT(run_gen(args, err), 1);
    char *msg = slurp_text(err);
    CHECK(tu_contains(msg, must_name));
    if (!tu_contains(msg, must_name))
        fprintf(stderr, "  message '%s' does not name '%s'\n", msg, must_name);
    free(msg);
    if (out)
        CHECK(!file_exists(out));
}

static void test_errors(void)
{
    /* tu_path and fixture() rotate a few static buffers: keep copies. */
    char *out = strdup(tu_path("fail.parquet"));
    char *missing = strdup(tu_path("no_such.parquet"));
    char *no_dir = strdup(tu_path("no_dir/x.parquet"));
    char *from = strdup(fixture("duckdb_snappy_rowgroups", ".parquet"));
    /* A games table none of whose pages reads. */
    char *garbled = strdup(tu_path("garbled.parquet"));
    CHECK(tu_parquet_garble_pages(fixture("duckdb_snappy_rowgroups", ".parquet"), garbled) > 0);
    char *bad = strdup(fixture("bad/truncated", ".parquet"));
    char *extra = strdup(fixture("hyparquet_types_uncompressed", ".parquet"));
    const char *no_file[] = {out, "10", "--from", missing, NULL};
    expect_failure(no_file, missing, out);
    const char *unreadable[] = {out, "10", "--from", garbled, NULL};
    expect_failure(unreadable, garbled, out);
    const char *truncated[] = {out, "10", "--from", bad, NULL};
    expect_failure(truncated, bad, out);
    const char *dir_out[] = {no_dir, "10", "--from", from, NULL};
    expect_failure(dir_out, "no_dir/x.parquet", NULL);
    const char *codec[] = {out, "10", "--codec", "lz4", "--from", from, NULL};
    expect_failure(codec, "lz4", out);
    const char *encoding[] = {out, "10", "--encoding", "delta", "--from", from, NULL};
    expect_failure(encoding, "delta", out);
    const char *rows[] = {out, "ten", "--from", from, NULL};
    expect_failure(rows, "ten", out);
    const char *rg[] = {out, "10", "--row-group", "0", "--from", from, NULL};
    expect_failure(rg, "--row-group", out);
    const char *usage[] = {out, NULL};
    expect_failure(usage, "usage", out);
    /* A table with REQUIRED columns reads as well (a source, not an error). */
    const char *required[] = {out, "100", "--from", extra, NULL};
    CHECK_EQ_INT(run_gen(required, tu_path("stderr.txt")), 0);
    free(out);
    free(missing);
    free(no_dir);
    free(from);
    free(garbled);
    free(bad);
    free(extra);
}

int main(void)
{
    snprintf(fixtures_dir, sizeof fixtures_dir, "%s/../parquet/fixtures", tu_test_data());
    gen = getenv("LC_PARQUET_GEN");
    if (!gen || !*gen) {
        fprintf(stderr, "LC_PARQUET_GEN is not set\n");
        return 1;
    }
    if (!tu_is_dir(fixtures_dir)) {
        fprintf(stderr, "no fixtures at %s\n", fixtures_dir);
        return 1;
    }
    test_generated();
    test_empty();
    test_default_from();
    test_errors();
    return check_finish();
}
