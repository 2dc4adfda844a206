/*
 * test_parquet_writer: the Parquet writer the tests and benchmarks share (gen/parquet_writer)
 * read back with the project's reader (src/format/parquet/parquet.h).
 *
 * For every codec (UNCOMPRESSED, SNAPPY, ZSTD) and encoding (dictionary,
 * plain) a table of seven nullable columns (strings, INT64, DOUBLE; few
 * distinct values or all distinct; random nulls, runs of nulls, a chunk of
 * nulls only; empty strings, a string with a NUL byte, a 3000-byte string,
 * INT64 extremes, NaN, infinities and -0.0) over four row groups (1, 1500,
 * 4000 and 2600 rows) with small page and dictionary limits is written, then
 * every value and null of every row is compared with what was written (doubles
 * bit for bit). The reader's page and encoding record of each chunk shows the
 * layout: PLAIN data pages only; or a dictionary page and RLE_DICTIONARY
 * pages, plus PLAIN pages where the dictionary overflowed and the chunk fell
 * back partway. A table with pyarrow's default limits (1 MiB dictionary)
 * shows the same fallback at full size. Write errors are reported.
 *
 * The Snappy compressor against the decoder (src/format/parquet/snappy.c): empty,
 * tiny, random (incompressible), repetitive (runs, a short period, text,
 * overlapping copies) and mixed inputs, across the 64 KiB fragment size;
 * every output within the bound, decoding to the input; repetitive inputs
 * must come out smaller.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "testutil.h"
#include "format/parquet/parquet.h"
#include "format/parquet/snappy.h"
#include "parquet_writer.h"

#define ENC(x) (1u << LC_PARQUET_ENC_##x)
#define PAGE(x) (1u << LC_PARQUET_PAGE_##x)

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* ---- the table -------------------------------------------------------------- */

enum {
    C_NAME,    /* string, 50 distinct, 10% null */
    C_MOVE,    /* string, a few distinct (empty, one with a NUL), runs of nulls */
    C_UNIQUE,  /* string, all distinct: overflows the dictionary */
    C_PLY,     /* int64, 300 distinct, never null */
    C_COUNTER, /* int64, all distinct (extremes included), 5% null: overflows */
    C_SCORE,   /* double, all distinct, 30% null: overflows */
    C_WIN,     /* double, 6 distinct (NaN, inf, -0.0), all null in row group 2 */
    N_COLS
};

static const pqw_column_spec cols[N_COLS] = {
    {"name", PQW_STRING},   {"move", PQW_STRING},  {"unique", PQW_STRING}, {"ply", PQW_INT64},
    {"counter", PQW_INT64}, {"score", PQW_DOUBLE}, {"win", PQW_DOUBLE},
};

/* Columns whose dictionary overflows the small limit of the test. */
static bool overflows(int c)
{
    return c == C_UNIQUE || c == C_COUNTER || c == C_SCORE;
}

static const size_t rg_rows[] = {1, 1500, 4000, 2600};
#define N_RG (sizeof rg_rows / sizeof rg_rows[0])

typedef struct cell {
    bool valid;
    int64_t i;
    double d;
    size_t len;
    char s[4096];
} cell;

/* The value of column c in row i of row group rg. */
static void cell_at(int c, size_t rg, size_t i, cell *v)
{
    uint64_t h = mix((uint64_t)c << 56 ^ (uint64_t)rg << 40 ^ i);
    v->valid = true;
    v->len = 0;
    switch (c) {
    case C_NAME:
        v->valid = h % 10 != 0;
        v->len = (size_t)snprintf(v->s, sizeof v->s, "player-%02u", (unsigned)(h >> 8) % 50);
        break;
    case C_MOVE: {
        static const char *const moves[] = {"e2e4", "", "d2d4", "g1f3", "a7a8q"};
        v->valid = i % 100 < 40 || i % 100 >= 60;
        unsigned k = (unsigned)(h >> 8) % 6;
        if (k == 5) {
            memcpy(v->s, "nul\0byte", 8);
            v->len = 8;
        } else {
            v->len = strlen(moves[k]);
            memcpy(v->s, moves[k], v->len);
        }
        break;
    }
    case C_UNIQUE:
        v->valid = h % 7 != 0;
        v->len =
            (size_t)snprintf(v->s, sizeof v->s, "row %zu of group %zu: %016" PRIx64, i, rg, mix(h));
        if (i == 7) { /* a long one */
            memset(v->s + v->len, 'x', 3000 - v->len);
            v->len = 3000;
        }
        break;
    case C_PLY:
        v->i = (int64_t)(i % 300) - 5;
        break;
    case C_COUNTER:
        v->valid = h % 20 != 0;
        v->i = i == 3 ? INT64_MIN : i == 4 ? INT64_MAX : (int64_t)mix(h);
        break;
    case C_SCORE:
        v->valid = h % 10 >= 3;
        v->d = (double)(int64_t)(mix(h) >> 11) / 1e6 - 4e9;
        break;
    default: {
        static const double wins[] = {0.0, 0.5, 1.0, -0.0, INFINITY, -INFINITY};
        v->valid = rg != 2 && h % 4 != 0;
        v->d = (h >> 8) % 7 == 6 ? NAN : wins[(h >> 8) % 7];
        break;
    }
    }
}

static void write_cell(pqw_writer *w, int c, const cell *v)
{
    if (!v->valid)
        pqw_null(w);
    else if (cols[c].type == PQW_STRING)
        pqw_string(w, v->s, v->len);
    else if (cols[c].type == PQW_INT64)
        pqw_int64(w, v->i);
    else
        pqw_double(w, v->d);
}

static bool write_table(const char *path, const pqw_options *opt)
{
    lc_error err;
    lc_error_clear(&err);
    pqw_writer *w = NULL;
    int rc = pqw_create(path, cols, N_COLS, opt, &w, &err);
    CHECK_OK(rc);
    if (rc < 0)
        return false;
    cell v;
    for (size_t rg = 0; rg < N_RG; rg++) {
        for (int c = 0; c < N_COLS; c++) {
            for (size_t i = 0; i < rg_rows[rg]; i++) {
                cell_at(c, rg, i, &v);
                write_cell(w, c, &v);
            }
            CHECK_OK(pqw_end_column(w, &err));
        }
        CHECK_OK(pqw_end_row_group(w, &err));
    }
    /* Small pages: several to a chunk. */
    CHECK(pqw_pages(w) > N_RG * N_COLS * 2);
    rc = pqw_close(w, &err);
    CHECK_OK(rc);
    return rc == 0;
}

static bool same_double(double a, double b)
{
    uint64_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    return x == y;
}

/* Compare column c of row group rg with cell_at; the count of mismatches. */
static size_t compare_chunk(const lc_parquet_column *col, int c, size_t rg)
{
    size_t bad = 0;
    cell v;
    for (size_t i = 0; i < col->n; i++) {
        cell_at(c, rg, i, &v);
        bool ok = col->valid[i] == v.valid;
        if (ok && v.valid) {
            if (cols[c].type == PQW_STRING) {
                size_t len;
                const char *s = lc_parquet_string(col, i, &len);
                ok = len == v.len && memcmp(s, v.s, len) == 0;
            } else if (cols[c].type == PQW_INT64) {
                ok = col->i64[i] == v.i;
            } else {
                ok = same_double(col->f64[i], v.d);
            }
        }
        if (!ok && bad++ < 3)
            fprintf(stderr, "  column %s, row group %zu, row %zu differs\n", cols[c].name, rg, i);
    }
    return bad;
}

static void read_table(const char *path, const pqw_options *opt, const char *what)
{
    lc_parquet_file *f = tu_parquet_open(path);
    CHECK(f != NULL);
    if (!f) {
        fprintf(stderr, "  (%s)\n", what);
        return;
    }
    size_t total = 0;
    for (size_t rg = 0; rg < N_RG; rg++)
        total += rg_rows[rg];
    CHECK_EQ_INT(lc_parquet_num_rows(f), total);
    CHECK_EQ_INT(lc_parquet_num_row_groups(f), N_RG);
    CHECK_EQ_INT(lc_parquet_num_columns(f), N_COLS);
    for (int c = 0; c < N_COLS && c < (int)lc_parquet_num_columns(f); c++) {
        const lc_parquet_column_info *ci = lc_parquet_column_at(f, (size_t)c);
        CHECK_EQ_STR(ci->name, cols[c].name);
        CHECK(ci->optional);
        CHECK_EQ_INT(ci->kind, cols[c].type == PQW_STRING  ? LC_PARQUET_KIND_STRING
                               : cols[c].type == PQW_INT64 ? LC_PARQUET_KIND_INT64
                                                           : LC_PARQUET_KIND_DOUBLE);
        CHECK_EQ_INT(lc_parquet_find_column(f, cols[c].name), c);
    }
    lc_parquet_column col;
    lc_parquet_column_init(&col);
    size_t fell_back = 0;
    for (size_t rg = 0; rg < N_RG && rg < lc_parquet_num_row_groups(f); rg++) {
        CHECK_EQ_INT(lc_parquet_row_group_rows(f, rg), rg_rows[rg]);
        for (int c = 0; c < N_COLS; c++) {
            lc_error err;
            int rc = lc_parquet_read_column(f, rg, (size_t)c, &col, &err);
            CHECK_OK(rc);
            if (rc < 0) {
                fprintf(stderr, "  %s: %s\n", what, err.msg);
                continue;
            }
            CHECK_EQ_INT(col.n, rg_rows[rg]);
            CHECK_EQ_INT(col.codec, opt->codec);
            size_t bad = compare_chunk(&col, c, rg);
            CHECK_EQ_U64(bad, 0);
            if (bad)
                fprintf(stderr, "  %s: column %s, row group %zu: %zu rows differ\n", what,
                        cols[c].name, rg, bad);
            if (!opt->dictionary) {
                CHECK_EQ_INT(col.data_encodings, ENC(PLAIN));
                CHECK_EQ_INT(col.page_types, PAGE(DATA));
                continue;
            }
            CHECK_EQ_INT(col.page_types, PAGE(DICTIONARY) | PAGE(DATA));
            /* The first row group has one row: nothing overflows there. */
            bool fallback = overflows(c) && rg > 0;
            CHECK_EQ_INT(col.data_encodings,
                         fallback ? ENC(RLE_DICTIONARY) | ENC(PLAIN) : ENC(RLE_DICTIONARY));
            fell_back += col.data_encodings == (ENC(RLE_DICTIONARY) | ENC(PLAIN));
        }
    }
    if (opt->dictionary)
        CHECK_EQ_U64(fell_back, 3 * (N_RG - 1));
    lc_parquet_column_fini(&col);
    lc_parquet_close(f);
}

static void test_layouts(void)
{
    static const int codecs[] = {LC_PARQUET_CODEC_UNCOMPRESSED, LC_PARQUET_CODEC_SNAPPY,
                                 LC_PARQUET_CODEC_ZSTD};
    for (size_t k = 0; k < sizeof codecs / sizeof *codecs; k++) {
        for (int dict = 0; dict <= 1; dict++) {
            pqw_options opt = pqw_default_options();
            opt.codec = codecs[k];
            opt.dictionary = dict;
            opt.page_rows = 700;
            opt.page_bytes = 8192;
            opt.dictionary_bytes = 3000;
            char what[64], name[64];
            snprintf(what, sizeof what, "%s %s", lc_parquet_codec_name(codecs[k]),
                     dict ? "dictionary" : "plain");
            snprintf(name, sizeof name, "table_%d_%d.parquet", codecs[k], dict);
            const char *path = tu_path(name);
            if (write_table(path, &opt))
                read_table(path, &opt, what);
        }
    }
}

/* pyarrow's limits: a column of 30,000 distinct 50-byte strings passes the
 * 1 MiB dictionary and falls back; one of 100 distinct strings does not. */
static void test_default_limits(void)
{
    const char *path = tu_path("defaults.parquet");
    static const pqw_column_spec two[] = {{"distinct", PQW_STRING}, {"few", PQW_STRING}};
    pqw_options opt = pqw_default_options();
    CHECK_EQ_INT(opt.codec, LC_PARQUET_CODEC_SNAPPY);
    CHECK(opt.dictionary);
    CHECK_EQ_U64(opt.dictionary_bytes, 1u << 20);
    CHECK_EQ_U64(opt.page_bytes, 1u << 20);
    CHECK_EQ_U64(opt.page_rows, 20000);
    enum { ROWS = 30000 };
    lc_error err;
    lc_error_clear(&err);
    pqw_writer *w = NULL;
    CHECK_OK(pqw_create(path, two, 2, &opt, &w, &err));
    if (!w)
        return;
    char s[64];
    for (int c = 0; c < 2; c++) {
        for (size_t i = 0; i < ROWS; i++) {
            int n = snprintf(s, sizeof s, "%s %08zu %032" PRIx64, c ? "few" : "distinct",
                             c ? i % 100 : i, mix(c ? i % 100 : i));
            pqw_string(w, s, (size_t)n);
        }
        CHECK_OK(pqw_end_column(w, &err));
    }
    CHECK_OK(pqw_end_row_group(w, &err));
    CHECK_OK(pqw_close(w, &err));

    lc_parquet_file *f = NULL;
    CHECK_OK(lc_parquet_open(path, &f, &err));
    if (!f)
        return;
    lc_parquet_column col;
    lc_parquet_column_init(&col);
    for (int c = 0; c < 2; c++) {
        CHECK_OK(lc_parquet_read_column(f, 0, (size_t)c, &col, &err));
        CHECK_EQ_INT(col.n, ROWS);
        CHECK_EQ_INT(col.codec, LC_PARQUET_CODEC_SNAPPY);
        CHECK_EQ_INT(col.page_types, PAGE(DICTIONARY) | PAGE(DATA));
        CHECK_EQ_INT(col.data_encodings,
                     c ? ENC(RLE_DICTIONARY) : ENC(RLE_DICTIONARY) | ENC(PLAIN));
        size_t bad = 0;
        for (size_t i = 0; i < col.n; i++) {
            int n = snprintf(s, sizeof s, "%s %08zu %032" PRIx64, c ? "few" : "distinct",
                             c ? i % 100 : i, mix(c ? i % 100 : i));
            size_t len;
            const char *got = lc_parquet_string(&col, i, &len);
            bad += !col.valid[i] || len != (size_t)n || memcmp(got, s, len) != 0;
        }
        CHECK_EQ_U64(bad, 0);
    }
    lc_parquet_column_fini(&col);
    lc_parquet_close(f);
}

/* Write errors: a file that cannot be created, a disk that is full. */
static void test_errors(void)
{
    static const pqw_column_spec one[] = {{"x", PQW_INT64}};
    pqw_options opt = pqw_default_options();
    lc_error err;
    lc_error_clear(&err);
    pqw_writer *w = NULL;
    const char *missing = tu_path("no_dir/x.parquet");
    CHECK_EQ_INT(pqw_create(missing, one, 1, &opt, &w, &err), -ENOENT);
    CHECK(w == NULL);
    CHECK(tu_contains(err.msg, missing));
    if (access("/dev/full", W_OK) != 0)
        return;
    lc_error_clear(&err);
    CHECK_OK(pqw_create("/dev/full", one, 1, &opt, &w, &err));
    if (!w)
        return;
    for (int64_t i = 0; i < 300000; i++)
        pqw_int64(w, i);
    pqw_end_column(w, &err);
    pqw_end_row_group(w, &err);
    lc_error_clear(&err);
    CHECK_EQ_INT(pqw_close(w, &err), -ENOSPC);
    CHECK(tu_contains(err.msg, "/dev/full"));
}

/* ---- Snappy ------------------------------------------------------------------- */

/* Compress, check the bound, decompress with the decoder; the compressed
 * length, or SIZE_MAX when the round trip fails. */
static size_t snappy_round_trip(const uint8_t *in, size_t n, const char *what)
{
    size_t bound = pqw_snappy_bound(n);
    uint8_t *z = malloc(bound);
    uint8_t *back = malloc(n ? n : 1);
    size_t zn = pqw_snappy_compress(in, n, z);
    CHECK(zn <= bound);
    lc_error err;
    lc_error_clear(&err);
    size_t announced = SIZE_MAX;
    CHECK_OK(lc_snappy_uncompressed_length(z, zn, &announced, &err));
    CHECK_EQ_U64(announced, n);
    int rc = lc_snappy_decompress(z, zn, back, n, &err);
    CHECK_OK(rc);
    bool same = rc == 0 && (n == 0 || memcmp(back, in, n) == 0);
    CHECK(same);
    if (!same)
        fprintf(stderr, "  snappy %s (%zu bytes): %s\n", what, n, rc ? err.msg : "differs");
    free(z);
    free(back);
    return same ? zn : SIZE_MAX;
}

static void test_snappy(void)
{
    enum { MAX = 300000 };
    uint8_t *b = calloc(MAX, 1);
    /* Empty and tiny. */
    CHECK_EQ_U64(snappy_round_trip(b, 0, "empty"), 1);
    static const size_t sizes[] = {1,  2,  3,    4,     5,     15,    16,     17,     63,
                                   64, 65, 4095, 65535, 65536, 65537, 131072, 131075, MAX};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        /* Random: incompressible; at most the bound, decodes. */
        for (size_t i = 0; i < n; i++)
            b[i] = (uint8_t)mix(i * 31 + n);
        size_t z = snappy_round_trip(b, n, "random");
        CHECK(z != SIZE_MAX);
        /* One byte repeated. */
        memset(b, 'a', n);
        z = snappy_round_trip(b, n, "run");
        if (n >= 256) /* copies of 64 bytes in 3 */
            CHECK(z < n / 16);
        /* A short period: copies that overlap their own output. */
        for (size_t i = 0; i < n; i++)
            b[i] = "abc"[i % 3];
        z = snappy_round_trip(b, n, "period 3");
        if (n >= 256)
            CHECK(z < n / 16);
        else if (n >= 16)
            CHECK(z < n);
        /* Text: FENs and moves, as in a page of strings. */
        static const char *const words[] = {
            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1", "e2e4", "g1f3",
            "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"};
        size_t at = 0;
        for (size_t i = 0; at < n; i++) {
            const char *w = words[mix(i) % 4];
            size_t len = strlen(w) < n - at ? strlen(w) : n - at;
            memcpy(b + at, w, len);
            at += len;
        }
        z = snappy_round_trip(b, n, "text");
        if (n >= 1000)
            CHECK(z < n / 2);
        /* Mixed: random stretches and copies of earlier stretches, at every
         * distance (also past a fragment's start). */
        at = 0;
        for (size_t i = 0; at < n; i++) {
            uint64_t h = mix(i ^ 0xabcdef);
            size_t len = 1 + h % 300;
            if (len > n - at)
                len = n - at;
            if (at > 0 && h % 3 != 0) {
                size_t from = (size_t)(mix(h) % at);
                for (size_t j = 0; j < len; j++)
                    b[at + j] = b[from + j]; /* may overlap */
            } else {
                for (size_t j = 0; j < len; j++)
                    b[at + j] = (uint8_t)mix(h + j);
            }
            at += len;
        }
        z = snappy_round_trip(b, n, "mixed");
        if (n >= 65536)
            CHECK(z < n);
    }
    free(b);
}

int main(void)
{
    test_snappy();
    test_layouts();
    test_default_limits();
    test_errors();
    return check_finish();
}
