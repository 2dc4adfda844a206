/*
 * lcmon_parquet_gen: benchmark data for the Parquet pipelines. Reads the chess
 * games of a small Parquet file with our own reader and writes a file of any
 * number of rows made of copies of those games, as pyarrow would lay it out
 * without dictionaries: every column OPTIONAL, data pages v1, PLAIN values,
 * RLE/bit-packed definition levels, ZSTD or no compression.
 *
 *   lcmon_parquet_gen OUT.parquet ROWS [--row-group N] [--codec zstd|uncompressed]
 *                     [--from FIXTURE.parquet] [--seed N] [--page-bytes N]
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
 * (default 1 MiB) of uncompressed values; ZSTD is level 1, pyarrow's default.
 *
 * Streaming: the source games are held in memory (they are meant to be a
 * small fixture); the output is written page by page. Per row group only a
 * map from output rows to source rows (16 bytes a row) is built, then each
 * column chunk is produced from it one page at a time, and the footer is
 * encoded row group by row group as the chunks are written.
 *
 * File layout and metadata are written from the Parquet format specification
 * (parquet.thrift, the Thrift compact protocol and the encodings document).
 */
#include "core/clock.h"
#include "core/error.h"
#include "core/rng.h"
#include "format/parquet.h"
#include "lc_config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define PROG "lcmon_parquet_gen"
#define DEFAULT_FROM "tests/parquet/fixtures/duckdb_snappy_rowgroups.parquet"
#define ZSTD_LEVEL 1
/* A page is closed when its rows reach this count whatever their bytes (a run
 * of nulls takes almost no bytes). */
#define PAGE_MAX_ROWS (1u << 20)

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

/* ---- growable byte buffer --------------------------------------------------- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void buf_reserve(buf *b, size_t more)
{
    if (more <= b->cap - b->n)
        return;
    size_t c = b->cap ? b->cap : 256;
    while (c - b->n < more)
        c *= 2;
    b->p = lc_xrealloc(b->p, c);
    b->cap = c;
}

static void buf_put(buf *b, const void *p, size_t n)
{
    buf_reserve(b, n);
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void buf_byte(buf *b, uint8_t v)
{
    buf_reserve(b, 1);
    b->p[b->n++] = v;
}

static void buf_le32(buf *b, uint32_t v)
{
    uint8_t t[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    buf_put(b, t, 4);
}

static void buf_le64(buf *b, uint64_t v)
{
    uint8_t t[8];
    for (int i = 0; i < 8; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    buf_put(b, t, 8);
}

static void buf_varint(buf *b, uint64_t v)
{
    while (v >= 0x80) {
        buf_byte(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    buf_byte(b, (uint8_t)v);
}

static void buf_free(buf *b)
{
    free(b->p);
    *b = (buf){0};
}

/* ---- Thrift compact protocol (writing) ---------------------------------------- */

enum {
    TC_I16 = 4,
    TC_I32 = 5,
    TC_I64 = 6,
    TC_BINARY = 8,
    TC_LIST = 9,
    TC_STRUCT = 12,
};

#define TW_MAX_DEPTH 16

typedef struct tw {
    buf *b;
    int depth;
    int16_t last[TW_MAX_DEPTH]; /* last field id written, per open struct */
} tw;

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static void tw_field(tw *t, int16_t id, int type)
{
    int16_t *last = &t->last[t->depth];
    if (id > *last && id - *last <= 15) {
        buf_byte(t->b, (uint8_t)((id - *last) << 4 | type));
    } else {
        buf_byte(t->b, (uint8_t)type);
        buf_varint(t->b, zigzag(id));
    }
    *last = id;
}

/* Open a struct: a field's value or a list element. */
static void tw_begin(tw *t)
{
    if (t->depth + 1 >= TW_MAX_DEPTH)
        lc_fatal("thrift writer nested too deeply");
    t->last[++t->depth] = 0;
}

static void tw_end(tw *t)
{
    buf_byte(t->b, 0); /* stop */
    t->depth--;
}

static void tw_i32(tw *t, int16_t id, int32_t v)
{
    tw_field(t, id, TC_I32);
    buf_varint(t->b, zigzag(v));
}

static void tw_i16(tw *t, int16_t id, int16_t v)
{
    tw_field(t, id, TC_I16);
    buf_varint(t->b, zigzag(v));
}

static void tw_i64(tw *t, int16_t id, int64_t v)
{
    tw_field(t, id, TC_I64);
    buf_varint(t->b, zigzag(v));
}

static void tw_raw_binary(tw *t, const char *s)
{
    size_t n = strlen(s);
    buf_varint(t->b, n);
    buf_put(t->b, s, n);
}

static void tw_binary(tw *t, int16_t id, const char *s)
{
    tw_field(t, id, TC_BINARY);
    tw_raw_binary(t, s);
}

static void tw_struct(tw *t, int16_t id)
{
    tw_field(t, id, TC_STRUCT);
    tw_begin(t);
}

/* A list field's header; the n elements follow. */
static void tw_list(tw *t, int16_t id, int elem_type, size_t n)
{
    tw_field(t, id, TC_LIST);
    if (n < 15) {
        buf_byte(t->b, (uint8_t)(n << 4 | (size_t)elem_type));
    } else {
        buf_byte(t->b, (uint8_t)(0xf0 | elem_type));
        buf_varint(t->b, n);
    }
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
    buf arena;
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
    const uint8_t *ar = sort_src->arena.p;
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
           memcmp(s->arena.p + x->gid_off, s->arena.p + y->gid_off, x->gid_len) == 0;
}

static uint64_t arena_add(source *s, const void *p, size_t n)
{
    uint64_t off = s->arena.n;
    buf_put(&s->arena, p, n);
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
    buf_free(&s->arena);
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

/* ---- pages and column chunks ------------------------------------------------------ */

typedef struct writer {
    const char *path;
    FILE *f;
    uint64_t off;
    int codec;
    size_t page_bytes;
    ZSTD_CCtx *zstd;
    const source *s;
    /* The page being filled. */
    buf vals;       /* PLAIN values of its non-null rows */
    uint8_t *valid; /* one byte a row */
    size_t rows, cap_valid;
    /* Page assembly. */
    buf body, comp, head;
    /* The chunk being written. */
    int64_t chunk_uncompressed, chunk_compressed;
    uint64_t pages;
} writer;

static void out_write(writer *w, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, w->f) != n)
        die(w->path, "cannot write: %s", strerror(errno));
    w->off += n;
}

/* Definition levels of bit width 1 in the RLE/bit-packed hybrid: runs of
 * eight or more equal values as repeated runs, the rest bit-packed in groups
 * of eight (the last group padded with zeros). */
static size_t run_length(const uint8_t *v, size_t n, size_t i, size_t max)
{
    size_t j = i + 1;
    while (j < n && j - i < max && v[j] == v[i])
        j++;
    return j - i;
}

static void encode_levels(buf *b, const uint8_t *v, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t run = run_length(v, n, i, SIZE_MAX);
        if (run >= 8) {
            buf_varint(b, (uint64_t)run << 1);
            buf_byte(b, v[i]);
            i += run;
            continue;
        }
        size_t j = i, groups = 0;
        do {
            j += 8;
            groups++;
        } while (j < n && run_length(v, n, j, 8) < 8);
        buf_varint(b, (uint64_t)groups << 1 | 1);
        for (size_t g = 0; g < groups; g++) {
            uint8_t byte = 0;
            for (size_t k = 0; k < 8; k++) {
                size_t at = i + g * 8 + k;
                if (at < n && v[at])
                    byte |= (uint8_t)(1u << k);
            }
            buf_byte(b, byte);
        }
        i = j < n ? j : n;
    }
}

static void flush_page(writer *w)
{
    if (w->rows == 0)
        return;
    /* v1: definition levels with their 4-byte length, then the values; the
     * whole body is compressed as one. */
    w->body.n = 0;
    buf_le32(&w->body, 0);
    encode_levels(&w->body, w->valid, w->rows);
    size_t lv = w->body.n - 4;
    w->body.p[0] = (uint8_t)lv;
    w->body.p[1] = (uint8_t)(lv >> 8);
    w->body.p[2] = (uint8_t)(lv >> 16);
    w->body.p[3] = (uint8_t)(lv >> 24);
    buf_put(&w->body, w->vals.p, w->vals.n);
    const uint8_t *data = w->body.p;
    size_t data_len = w->body.n;
    if (w->codec == LC_PARQUET_CODEC_ZSTD) {
        size_t bound = ZSTD_compressBound(w->body.n);
        w->comp.n = 0;
        buf_reserve(&w->comp, bound);
        size_t z = ZSTD_compressCCtx(w->zstd, w->comp.p, bound, w->body.p, w->body.n, ZSTD_LEVEL);
        if (ZSTD_isError(z))
            die(w->path, "zstd: %s", ZSTD_getErrorName(z));
        data = w->comp.p;
        data_len = z;
    }
    if (w->body.n > INT32_MAX || data_len > INT32_MAX)
        die(w->path, "a page of %zu bytes is too large for Parquet", w->body.n);
    w->head.n = 0;
    tw t = {.b = &w->head};
    tw_begin(&t);     /* PageHeader */
    tw_i32(&t, 1, 0); /* DATA_PAGE */
    tw_i32(&t, 2, (int32_t)w->body.n);
    tw_i32(&t, 3, (int32_t)data_len);
    tw_struct(&t, 5); /* DataPageHeader */
    tw_i32(&t, 1, (int32_t)w->rows);
    tw_i32(&t, 2, LC_PARQUET_ENC_PLAIN);
    tw_i32(&t, 3, LC_PARQUET_ENC_RLE); /* definition levels */
    tw_i32(&t, 4, LC_PARQUET_ENC_RLE); /* repetition levels (none) */
    tw_end(&t);
    tw_end(&t);
    out_write(w, w->head.p, w->head.n);
    out_write(w, data, data_len);
    w->chunk_uncompressed += (int64_t)(w->head.n + w->body.n);
    w->chunk_compressed += (int64_t)(w->head.n + data_len);
    w->pages++;
    w->rows = 0;
    w->vals.n = 0;
}

static void page_row(writer *w, bool valid)
{
    if (w->rows == w->cap_valid) {
        w->cap_valid = w->cap_valid ? 2 * w->cap_valid : 4096;
        w->valid = lc_xrealloc(w->valid, w->cap_valid);
    }
    w->valid[w->rows++] = valid;
}

static void page_check(writer *w)
{
    if (w->vals.n + w->rows / 8 >= w->page_bytes || w->rows >= PAGE_MAX_ROWS)
        flush_page(w);
}

static void game_id_text(uint64_t game, char *out, size_t cap)
{
    snprintf(out, cap, "g%09" PRIu64, game);
}

/* Write the column chunk of column col for the rows of m; describe it in the
 * footer as a ColumnChunk. */
static void write_chunk(writer *w, const row_map *m, int col, tw *footer)
{
    const source *s = w->s;
    uint64_t start = w->off;
    w->chunk_uncompressed = 0;
    w->chunk_compressed = 0;
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
            buf_le32(&w->vals, (uint32_t)gid_len);
            buf_put(&w->vals, gid, gid_len);
            page_row(w, true);
            break;
        case COL_PLY:
            buf_le64(&w->vals, m->ply[i]);
            page_row(w, true);
            break;
        case COL_FEN:
        case COL_PLAYED:
        case COL_BEST: {
            int k = col - COL_FEN;
            if (r->str_valid[k]) {
                buf_le32(&w->vals, r->str_len[k]);
                buf_put(&w->vals, s->arena.p + r->str_off[k], r->str_len[k]);
            }
            page_row(w, r->str_valid[k]);
            break;
        }
        default: {
            int k = col - COL_WIN;
            if (r->wdl_valid[k]) {
                uint64_t bits;
                memcpy(&bits, &r->wdl[k], sizeof bits);
                buf_le64(&w->vals, bits);
            }
            page_row(w, r->wdl_valid[k]);
            break;
        }
        }
        page_check(w);
    }
    flush_page(w);

    int type = col == COL_PLY   ? LC_PARQUET_INT64
               : col >= COL_WIN ? LC_PARQUET_DOUBLE
                                : LC_PARQUET_BYTE_ARRAY;
    tw_begin(footer); /* ColumnChunk */
    /* file_offset: deprecated; where the column metadata would follow the
     * chunk, as parquet-cpp writes it. */
    tw_i64(footer, 2, (int64_t)start + w->chunk_compressed);
    tw_struct(footer, 3); /* ColumnMetaData */
    tw_i32(footer, 1, type);
    tw_list(footer, 2, TC_I32, 2);
    buf_varint(footer->b, zigzag(LC_PARQUET_ENC_PLAIN));
    buf_varint(footer->b, zigzag(LC_PARQUET_ENC_RLE));
    tw_list(footer, 3, TC_BINARY, 1);
    tw_raw_binary(footer, col_names[col]);
    tw_i32(footer, 4, w->codec);
    tw_i64(footer, 5, (int64_t)m->n);
    tw_i64(footer, 6, w->chunk_uncompressed);
    tw_i64(footer, 7, w->chunk_compressed);
    tw_i64(footer, 9, (int64_t)start);
    tw_end(footer);
    tw_end(footer);
}

/* ---- the file ------------------------------------------------------------------------ */

static void write_schema(tw *t)
{
    tw_list(t, 2, TC_STRUCT, 1 + N_COLS);
    tw_begin(t); /* root */
    tw_binary(t, 4, "schema");
    tw_i32(t, 5, N_COLS);
    tw_end(t);
    for (int c = 0; c < N_COLS; c++) {
        bool str = c != COL_PLY && c < COL_WIN;
        tw_begin(t);
        tw_i32(t, 1,
               str            ? LC_PARQUET_BYTE_ARRAY
               : c == COL_PLY ? LC_PARQUET_INT64
                              : LC_PARQUET_DOUBLE);
        tw_i32(t, 3, 1); /* OPTIONAL */
        tw_binary(t, 4, col_names[c]);
        if (str) {
            tw_i32(t, 6, 0);  /* converted type UTF8 */
            tw_struct(t, 10); /* LogicalType */
            tw_struct(t, 1);  /* STRING: StringType {} */
            tw_end(t);
            tw_end(t);
        }
        tw_end(t);
    }
}

static void usage(void)
{
    fprintf(stderr,
            "usage: " PROG " OUT.parquet ROWS [--row-group ROWS_PER_GROUP (100000)]\n"
            "       [--codec zstd|uncompressed (zstd)] [--from FIXTURE.parquet]\n"
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

int main(int argc, char **argv)
{
    const char *out = NULL, *rows_arg = NULL, *from = DEFAULT_FROM;
    uint64_t rg_rows = 100000, seed = 0, page_bytes = 1 << 20;
    bool have_seed = false;
    int codec = LC_PARQUET_CODEC_ZSTD;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage();
        } else if (strcmp(a, "--row-group") == 0) {
            rg_rows = parse_u64("--row-group", val, 1, LC_PARQUET_MAX_ROWS);
            i++;
        } else if (strcmp(a, "--codec") == 0) {
            if (val && strcmp(val, "zstd") == 0)
                codec = LC_PARQUET_CODEC_ZSTD;
            else if (val && strcmp(val, "uncompressed") == 0)
                codec = LC_PARQUET_CODEC_UNCOMPRESSED;
            else
                die(NULL, "--codec: expected zstd or uncompressed, got '%s'", val ? val : "");
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
            page_bytes = parse_u64("--page-bytes", val, 1, (uint64_t)1 << 28);
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

    writer w = {.path = out, .codec = codec, .page_bytes = (size_t)page_bytes, .s = &s};
    if (codec == LC_PARQUET_CODEC_ZSTD && !(w.zstd = ZSTD_createCCtx()))
        lc_fatal("out of memory creating a zstd context");
    w.f = fopen(out, "wb");
    if (!w.f)
        die(out, "cannot create: %s", strerror(errno));
    out_path_for_cleanup = out;
    setvbuf(w.f, NULL, _IOFBF, 1 << 20);
    out_write(&w, "PAR1", 4);

    /* The footer is encoded as the row groups are written: its fields up to
     * the row group list first, then one RowGroup per row group. */
    uint64_t n_rgs = rows / rg_rows + (rows % rg_rows != 0);
    buf meta = {0};
    tw t = {.b = &meta};
    tw_begin(&t); /* FileMetaData */
    tw_i32(&t, 1, 1);
    write_schema(&t);
    tw_i64(&t, 3, (int64_t)rows);
    tw_list(&t, 4, TC_STRUCT, (size_t)n_rgs);

    cursor cur = {.s = &s, .shuffle = have_seed, .seed = seed};
    cur.src = plan(&cur, 0);
    row_map m = {0};
    uint64_t done = 0;
    for (uint64_t rg = 0; rg < n_rgs; rg++) {
        size_t n = (size_t)(rows - done < rg_rows ? rows - done : rg_rows);
        map_rows(&cur, &m, n);
        uint64_t rg_start = w.off;
        int64_t rg_uncompressed = 0;
        tw_begin(&t); /* RowGroup */
        tw_list(&t, 1, TC_STRUCT, N_COLS);
        for (int c = 0; c < N_COLS; c++) {
            write_chunk(&w, &m, c, &t);
            rg_uncompressed += w.chunk_uncompressed;
        }
        tw_i64(&t, 2, rg_uncompressed);
        tw_i64(&t, 3, (int64_t)n);
        tw_i64(&t, 5, (int64_t)rg_start);
        tw_i64(&t, 6, (int64_t)(w.off - rg_start));
        if (rg <= INT16_MAX)
            tw_i16(&t, 7, (int16_t)rg);
        tw_end(&t);
        done += n;
    }
    /* Games begun: the one in progress counts when it has rows. */
    uint64_t games_out = cur.game + (cur.ply > 0);
    tw_binary(&t, 6, "lcmon version " LC_VERSION " (lcmon_parquet_gen)");
    tw_end(&t);
    if (meta.n > UINT32_MAX)
        die(out, "file metadata of %zu bytes is too large", meta.n);
    out_write(&w, meta.p, meta.n);
    uint8_t tail[8] = {(uint8_t)meta.n,
                       (uint8_t)(meta.n >> 8),
                       (uint8_t)(meta.n >> 16),
                       (uint8_t)(meta.n >> 24),
                       'P',
                       'A',
                       'R',
                       '1'};
    out_write(&w, tail, sizeof tail);
    if (fflush(w.f) != 0 || ferror(w.f))
        die(out, "cannot write: %s", strerror(errno));
    if (fclose(w.f) != 0) {
        w.f = NULL;
        die(out, "cannot write: %s", strerror(errno));
    }
    out_path_for_cleanup = NULL;
    double secs = lc_now_seconds() - t0;
    if (s.skipped)
        fprintf(stderr, PROG ": %s: skipped %zu rows without a game_id\n", from, s.skipped);
    fprintf(stderr,
            PROG ": %s: %" PRIu64 " rows, %" PRIu64 " games (copies of %zu from %s), %" PRIu64
                 " row groups, %" PRIu64 " pages, %s, %" PRIu64 " bytes, %.3f s\n",
            out, rows, games_out, s.n_games, from, n_rgs, w.pages, lc_parquet_codec_name(codec),
            w.off, secs);

    free(m.pos);
    free(m.ply);
    free(m.game);
    free(cur.perm);
    buf_free(&meta);
    buf_free(&w.vals);
    buf_free(&w.body);
    buf_free(&w.comp);
    buf_free(&w.head);
    free(w.valid);
    ZSTD_freeCCtx(w.zstd);
    source_free(&s);
    return 0;
}
