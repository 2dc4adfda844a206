/*
 * lcmon_parquet_gen: benchmark data for the Parquet pipelines. Reads the chess
 * games of a small Parquet file with our own reader and writes a file of any
 * number of rows made of copies of those games, laid out by default as
 * pyarrow lays a file out with its defaults: every column OPTIONAL, data
 * pages v1, dictionary encoding (a PLAIN dictionary page, then RLE_DICTIONARY
 * pages, falling back to PLAIN pages partway through a column chunk once the
 * dictionary reaches 1 MiB), RLE/bit-packed definition levels, Snappy.
 *
 *   lcmon_parquet_gen OUT.parquet ROWS [--row-group N]
 *                     [--codec snappy|zstd|uncompressed] [--encoding dictionary|plain]
 *                     [--from FIXTURE.parquet] [--seed N] [--page-bytes N]
 *
 * --codec and --encoding choose the other layouts: ZSTD (level 1, pyarrow's
 * default level) or no compression; PLAIN pages only (pyarrow's
 * use_dictionary=False).
 *
 * The games of --from (rows grouped by game_id, each sorted by ply; games in
 * the order of their first row in the file) are replicated round-robin under
 * new game ids g000000000, g000000001, ..., with ply renumbered from 0 and
 * fen, played_move, best_move, win, draw and loss (nulls included) kept. With
 * --seed every round over the games takes them in a fresh random order. The
 * last game is cut so that exactly ROWS rows are written; rows of a game are
 * contiguous (a game may straddle two row groups).
 *
 * Output columns: game_id, fen, played_move, best_move (BYTE_ARRAY, UTF8
 * string), ply (INT64), win, draw, loss (DOUBLE), in the order game_id, ply,
 * fen, played_move, best_move, win, draw, loss. Pages hold about --page-bytes
 * (default 1 MiB) of encoded values and at most 20,000 rows, pyarrow's
 * limits.
 *
 * Streaming: the source games are held in memory (they are meant to be a
 * small fixture); the output is written page by page by the shared
 * Parquet writer (gen/parquet_writer.c). Per row group only a map from
 * output rows to source rows (16 bytes a row) is built, then each column
 * chunk is produced from it.
 */
#include "core/clock.h"
#include "core/error.h"
#include "core/rng.h"
#include "format/parquet/parquet.h"
#include "lc_config.h"
#include "parquet_writer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "lcmon_parquet_gen"
#define DEFAULT_FROM "tests/parquet/fixtures/duckdb_snappy_rowgroups.parquet"

static const char *out_path_for_cleanup;

static _Noreturn void die(const char *file, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static _Noreturn void die(const char *file, const char *fmt, ...)
{
    char msg[LC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (file)
        fprintf(stderr, PROG ": %s: %s\n", file, msg);
    else
        fprintf(stderr, PROG ": %s\n", msg);
    if (out_path_for_cleanup)
        unlink(out_path_for_cleanup);
    exit(1);
}

/* ---- the source games --------------------------------------------------------- */

enum { COL_GAME, COL_PLY, COL_FEN, COL_PLAYED, COL_BEST, COL_WIN, COL_DRAW, COL_LOSS, N_COLS };

static const char *const col_names[N_COLS] = {"game_id",   "ply", "fen",  "played_move",
                                              "best_move", "win", "draw", "loss"};

/* One row of the source: strings live in the arena. */
typedef struct src_row {
    uint64_t gid_off, str_off[3];
    uint32_t gid_len, str_len[3];
    int64_t ply;
    double wdl[3];
    uint8_t str_valid[3], wdl_valid[3];
    bool ply_valid;
    uint32_t index; /* position in the file */
} src_row;

typedef struct src_game {
    size_t start, len; /* in order[] */
    uint32_t first;    /* smallest file position of its rows */
} src_game;

typedef struct source {
    src_row *rows;
    size_t n_rows, cap_rows;
    uint8_t *arena; /* the strings, back to back */
    size_t arena_n, arena_cap;
    size_t skipped;  /* rows without a game_id */
    uint32_t *order; /* rows by game (in order of first appearance), then ply */
    src_game *games;
    size_t n_games;
} source;

static const source *sort_src;

static int cmp_rows(const void *a, const void *b)
{
    const src_row *x = &sort_src->rows[*(const uint32_t *)a];
    const src_row *y = &sort_src->rows[*(const uint32_t *)b];
    const uint8_t *ar = sort_src->arena;
    size_t m = x->gid_len < y->gid_len ? x->gid_len : y->gid_len;
    int c = memcmp(ar + x->gid_off, ar + y->gid_off, m);
    if (c)
        return c;
    if (x->gid_len != y->gid_len)
        return x->gid_len < y->gid_len ? -1 : 1;
    /* Null plies last. */
    if (x->ply_valid != y->ply_valid)
        return x->ply_valid ? -1 : 1;
    if (x->ply_valid && x->ply != y->ply)
        return x->ply < y->ply ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_games(const void *a, const void *b)
{
    const src_game *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

static bool same_game(const source *s, const src_row *x, const src_row *y)
{
    return x->gid_len == y->gid_len &&
           memcmp(s->arena + x->gid_off, s->arena + y->gid_off, x->gid_len) == 0;
}

static uint64_t arena_add(source *s, const void *p, size_t n)
{
    if (n > s->arena_cap - s->arena_n) {
        size_t cap = s->arena_cap ? s->arena_cap : 1 << 16;
        while (n > cap - s->arena_n)
            cap *= 2;
        s->arena = lc_xrealloc(s->arena, cap);
        s->arena_cap = cap;
    }
    uint64_t off = s->arena_n;
    if (n)
        memcpy(s->arena + off, p, n);
    s->arena_n += n;
    return off;
}

static void load_source(const char *path, source *s)
{
    lc_error err;
    lc_error_clear(&err);
    lc_parquet_file *f;
    if (lc_parquet_open(path, &f, &err) < 0)
        die(NULL, "%s", err.msg); /* the reader's messages name the file */
    int cols[N_COLS];
    for (int c = 0; c < N_COLS; c++) {
        cols[c] = lc_parquet_find_column(f, col_names[c]);
        if (cols[c] == -ENOENT)
            die(path, "no column '%s'", col_names[c]);
        if (cols[c] < 0)
            die(path, "column '%s' has a type or nesting we cannot read", col_names[c]);
        lc_parquet_kind k = lc_parquet_column_at(f, (size_t)cols[c])->kind;
        bool ok = c == COL_GAME   ? k == LC_PARQUET_KIND_STRING || k == LC_PARQUET_KIND_INT64
                  : c == COL_PLY  ? k == LC_PARQUET_KIND_INT64
                  : c <= COL_BEST ? k == LC_PARQUET_KIND_STRING
                                  : k == LC_PARQUET_KIND_DOUBLE;
        if (!ok)
            die(path, "column '%s' has type %s, not what a game table holds", col_names[c],
                lc_parquet_type_name(lc_parquet_column_at(f, (size_t)cols[c])->type));
    }
    lc_parquet_column v[N_COLS];
    for (int c = 0; c < N_COLS; c++)
        lc_parquet_column_init(&v[c]);
    for (size_t rg = 0; rg < lc_parquet_num_row_groups(f); rg++) {
        for (int c = 0; c < N_COLS; c++)
            if (lc_parquet_read_column(f, rg, (size_t)cols[c], &v[c], &err) < 0)
                die(NULL, "%s", err.msg);
        size_t n = v[0].n;
        for (int c = 1; c < N_COLS; c++)
            if (v[c].n != n)
                die(path, "row group %zu: column '%s' has %zu rows, '%s' %zu", rg, col_names[c],
                    v[c].n, col_names[0], n);
        for (size_t i = 0; i < n; i++) {
            if (!v[COL_GAME].valid[i]) {
                s->skipped++;
                continue;
            }
            if (s->n_rows >= UINT32_MAX)
                die(path, "more than %u rows: too many for a source", UINT32_MAX);
            if (s->n_rows == s->cap_rows) {
                s->cap_rows = s->cap_rows ? 2 * s->cap_rows : 4096;
                s->rows = lc_xrealloc(s->rows, s->cap_rows * sizeof *s->rows);
            }
            src_row *r = &s->rows[s->n_rows];
            *r = (src_row){.index = (uint32_t)s->n_rows};
            size_t len;
            if (v[COL_GAME].kind == LC_PARQUET_KIND_STRING) {
                const char *g = lc_parquet_string(&v[COL_GAME], i, &len);
                r->gid_off = arena_add(s, g, len);
            } else {
                char g[32];
                len = (size_t)snprintf(g, sizeof g, "%" PRId64, v[COL_GAME].i64[i]);
                r->gid_off = arena_add(s, g, len);
            }
            if (len > UINT32_MAX)
                die(path, "row %zu of row group %zu: game_id too long", i, rg);
            r->gid_len = (uint32_t)len;
            r->ply_valid = v[COL_PLY].valid[i];
            r->ply = v[COL_PLY].i64[i];
            for (int k = 0; k < 3; k++) {
                const lc_parquet_column *sc = &v[COL_FEN + k];
                r->str_valid[k] = sc->valid[i];
                const char *p = lc_parquet_string(sc, i, &len);
                if (len > UINT32_MAX)
                    die(path, "row %zu of row group %zu: %s too long", i, rg,
                        col_names[COL_FEN + k]);
                r->str_off[k] = arena_add(s, p, len);
                r->str_len[k] = (uint32_t)len;
                r->wdl_valid[k] = v[COL_WIN + k].valid[i];
                r->wdl[k] = v[COL_WIN + k].f64[i];
            }
            s->n_rows++;
        }
    }
    for (int c = 0; c < N_COLS; c++)
        lc_parquet_column_fini(&v[c]);
    lc_parquet_close(f);
    if (s->n_rows == 0)
        die(path, "no rows with a game_id: nothing to replicate");

    /* Group: sort by (game_id, ply, position), cut at game_id changes, then
     * put the games in the order of their first row in the file. */
    s->order = lc_xmalloc(s->n_rows * sizeof *s->order);
    for (size_t i = 0; i < s->n_rows; i++)
        s->order[i] = (uint32_t)i;
    sort_src = s;
    qsort(s->order, s->n_rows, sizeof *s->order, cmp_rows);
    size_t cap = 0;
    for (size_t i = 0; i < s->n_rows; i++) {
        const src_row *r = &s->rows[s->order[i]];
        if (i == 0 || !same_game(s, &s->rows[s->order[i - 1]], r)) {
            if (s->n_games == cap) {
                cap = cap ? 2 * cap : 256;
                s->games = lc_xrealloc(s->games, cap * sizeof *s->games);
            }
            s->games[s->n_games++] = (src_game){.start = i, .len = 0, .first = r->index};
        }
        src_game *g = &s->games[s->n_games - 1];
        g->len++;
        if (r->index < g->first)
            g->first = r->index;
    }
    qsort(s->games, s->n_games, sizeof *s->games, cmp_games);
    /* Lay the rows out game after game so that a game is one range. */
    uint32_t *laid = lc_xmalloc(s->n_rows * sizeof *laid);
    size_t at = 0;
    for (size_t g = 0; g < s->n_games; g++) {
        memcpy(laid + at, s->order + s->games[g].start, s->games[g].len * sizeof *laid);
        s->games[g].start = at;
        at += s->games[g].len;
    }
    free(s->order);
    s->order = laid;
}

static void source_free(source *s)
{
    free(s->rows);
    free(s->order);
    free(s->games);
    free(s->arena);
}

/* ---- which source row each output row copies ------------------------------------ */

typedef struct cursor {
    const source *s;
    uint64_t game; /* output game number */
    size_t ply;    /* within it */
    size_t src;    /* the source game it copies */
    bool shuffle;
    uint64_t seed;
    uint64_t round; /* of perm */
    uint32_t *perm; /* shuffle: the order of the current round */
} cursor;

static size_t plan(cursor *c, uint64_t game)
{
    size_t g = c->s->n_games;
    if (!c->shuffle)
        return (size_t)(game % g);
    uint64_t round = game / g;
    if (!c->perm || round != c->round) {
        if (!c->perm)
            c->perm = lc_xmalloc(g * sizeof *c->perm);
        lc_rng rng;
        lc_rng_seed(&rng, c->seed, round);
        for (size_t i = 0; i < g; i++)
            c->perm[i] = (uint32_t)i;
        for (size_t i = g; i > 1; i--) {
            size_t j = (size_t)lc_rng_below(&rng, i);
            uint32_t t = c->perm[i - 1];
            c->perm[i - 1] = c->perm[j];
            c->perm[j] = t;
        }
        c->round = round;
    }
    return c->perm[game % g];
}

/* Rows of one row group: position in source order[], output game, ply. */
typedef struct row_map {
    uint32_t *pos;
    uint32_t *ply;
    uint64_t *game;
    size_t n, cap;
} row_map;

static void map_rows(cursor *c, row_map *m, size_t n)
{
    if (n > m->cap) {
        m->pos = lc_xrealloc(m->pos, n * sizeof *m->pos);
        m->ply = lc_xrealloc(m->ply, n * sizeof *m->ply);
        m->game = lc_xrealloc(m->game, n * sizeof *m->game);
        m->cap = n;
    }
    const src_game *games = c->s->games;
    for (size_t i = 0; i < n; i++) {
        const src_game *g = &games[c->src];
        m->pos[i] = (uint32_t)(g->start + c->ply);
        m->ply[i] = (uint32_t)c->ply;
        m->game[i] = c->game;
        if (++c->ply == g->len) {
            c->game++;
            c->ply = 0;
            c->src = plan(c, c->game);
        }
    }
    m->n = n;
}

/* ---- column chunks ------------------------------------------------------------ */

static void game_id_text(uint64_t game, char *out, size_t cap)
{
    snprintf(out, cap, "g%09" PRIu64, game);
}

/* Write the column chunk of column col for the rows of m. */
static void write_chunk(pqw_writer *w, const source *s, const row_map *m, int col)
{
    char gid[32] = "";
    uint64_t gid_of = UINT64_MAX;
    size_t gid_len = 0;
    for (size_t i = 0; i < m->n; i++) {
        const src_row *r = &s->rows[s->order[m->pos[i]]];
        switch (col) {
        case COL_GAME:
            if (m->game[i] != gid_of) {
                gid_of = m->game[i];
                game_id_text(gid_of, gid, sizeof gid);
                gid_len = strlen(gid);
            }
            pqw_string(w, gid, gid_len);
            break;
        case COL_PLY:
            pqw_int64(w, m->ply[i]);
            break;
        case COL_FEN:
        case COL_PLAYED:
        case COL_BEST: {
            int k = col - COL_FEN;
            if (r->str_valid[k])
                pqw_string(w, s->arena + r->str_off[k], r->str_len[k]);
            else
                pqw_null(w);
            break;
        }
        default: {
            int k = col - COL_WIN;
            if (r->wdl_valid[k])
                pqw_double(w, r->wdl[k]);
            else
                pqw_null(w);
            break;
        }
        }
    }
}

static void usage(void)
{
    fprintf(stderr,
            "usage: " PROG " OUT.parquet ROWS [--row-group ROWS_PER_GROUP (100000)]\n"
            "       [--codec snappy|zstd|uncompressed (snappy)]\n"
            "       [--encoding dictionary|plain (dictionary)] [--from FIXTURE.parquet]\n"
            "       [--seed N] [--page-bytes BYTES (1048576)]\n"
            "Writes ROWS rows of copies of the games of FIXTURE (default\n" DEFAULT_FROM ")\n"
            "under new game ids; --seed shuffles the order of the games in every round.\n");
    exit(1);
}

static uint64_t parse_u64(const char *what, const char *s, uint64_t min, uint64_t max)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-')
        die(NULL, "%s: expected a number, got '%s'", what, s ? s : "");
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        die(NULL, "%s: '%s' is not a number in [%" PRIu64 ", %" PRIu64 "]", what, s, min, max);
    return v;
}

/* The index of val among the n names, or die naming the option. */
static int choice(const char *what, const char *val, const char *const *names, int n)
{
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        if (val && strcmp(val, names[i]) == 0)
            return i;
        const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
        size_t at = strlen(list);
        snprintf(list + at, sizeof list - at, "%s%s", sep, names[i]);
    }
    die(NULL, "%s: expected %s, got '%s'", what, list, val ? val : "");
}

int main(int argc, char **argv)
{
    const char *out = NULL, *rows_arg = NULL, *from = DEFAULT_FROM;
    uint64_t rg_rows = 100000, seed = 0;
    bool have_seed = false;
    pqw_options opt = pqw_default_options();
    opt.created_by = "lcmon version " LC_VERSION " (lcmon_parquet_gen)";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage();
        } else if (strcmp(a, "--row-group") == 0) {
            rg_rows = parse_u64("--row-group", val, 1, LC_PARQUET_MAX_ROWS);
            i++;
        } else if (strcmp(a, "--codec") == 0) {
            static const char *const names[] = {"snappy", "zstd", "uncompressed"};
            static const int codecs[] = {LC_PARQUET_CODEC_SNAPPY, LC_PARQUET_CODEC_ZSTD,
                                         LC_PARQUET_CODEC_UNCOMPRESSED};
            opt.codec = codecs[choice("--codec", val, names, 3)];
            i++;
        } else if (strcmp(a, "--encoding") == 0) {
            static const char *const names[] = {"dictionary", "plain"};
            opt.dictionary = choice("--encoding", val, names, 2) == 0;
            i++;
        } else if (strcmp(a, "--from") == 0) {
            if (!val)
                die(NULL, "--from: expected a file");
            from = val;
            i++;
        } else if (strcmp(a, "--seed") == 0) {
            seed = parse_u64("--seed", val, 0, UINT64_MAX);
            have_seed = true;
            i++;
        } else if (strcmp(a, "--page-bytes") == 0) {
            opt.page_bytes = (size_t)parse_u64("--page-bytes", val, 1, (uint64_t)1 << 28);
            i++;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, PROG ": unknown option %s\n", a);
            usage();
        } else if (!out) {
            out = a;
        } else if (!rows_arg) {
            rows_arg = a;
        } else {
            fprintf(stderr, PROG ": unexpected argument %s\n", a);
            usage();
        }
    }
    if (!out || !rows_arg)
        usage();
    uint64_t rows = parse_u64("ROWS", rows_arg, 0, (uint64_t)INT64_MAX);
    double t0 = lc_now_seconds();

    source s = {0};
    load_source(from, &s);

    static const pqw_column_spec cols[N_COLS] = {
        {"game_id", PQW_STRING},     {"ply", PQW_INT64},        {"fen", PQW_STRING},
        {"played_move", PQW_STRING}, {"best_move", PQW_STRING}, {"win", PQW_DOUBLE},
        {"draw", PQW_DOUBLE},        {"loss", PQW_DOUBLE},
    };
    lc_error err;
    lc_error_clear(&err);
    pqw_writer *w;
    if (pqw_create(out, cols, N_COLS, &opt, &w, &err) < 0)
        die(NULL, "%s", err.msg); /* the writer's messages name the file */
    out_path_for_cleanup = out;

    uint64_t n_rgs = rows / rg_rows + (rows % rg_rows != 0);
    cursor cur = {.s = &s, .shuffle = have_seed, .seed = seed};
    cur.src = plan(&cur, 0);
    row_map m = {0};
    uint64_t done = 0;
    for (uint64_t rg = 0; rg < n_rgs; rg++) {
        size_t n = (size_t)(rows - done < rg_rows ? rows - done : rg_rows);
        map_rows(&cur, &m, n);
        for (int c = 0; c < N_COLS; c++) {
            write_chunk(w, &s, &m, c);
            if (pqw_end_column(w, &err) < 0)
                die(NULL, "%s", err.msg);
        }
        if (pqw_end_row_group(w, &err) < 0)
            die(NULL, "%s", err.msg);
        done += n;
    }
    /* Games begun: the one in progress counts when it has rows. */
    uint64_t games_out = cur.game + (cur.ply > 0);
    uint64_t pages = pqw_pages(w);
    if (pqw_close(w, &err) < 0)
        die(NULL, "%s", err.msg);
    out_path_for_cleanup = NULL;
    double secs = lc_now_seconds() - t0;
    struct stat st;
    uint64_t bytes = stat(out, &st) == 0 ? (uint64_t)st.st_size : 0;
    if (s.skipped)
        fprintf(stderr, PROG ": %s: skipped %zu rows without a game_id\n", from, s.skipped);
    fprintf(stderr,
            PROG ": %s: %" PRIu64 " rows, %" PRIu64 " games (copies of %zu from %s), %" PRIu64
                 " row groups, %" PRIu64 " pages, %s, %s, %" PRIu64 " bytes, %.3f s\n",
            out, rows, games_out, s.n_games, from, n_rgs, pages, lc_parquet_codec_name(opt.codec),
            opt.dictionary ? "dictionary" : "plain", bytes, secs);

    free(m.pos);
    free(m.ply);
    free(m.game);
    free(cur.perm);
    source_free(&s);
    return 0;
}
