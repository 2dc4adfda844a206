/*
 * test_parquet: the Parquet reader against the fixtures of tests/parquet.
 *
 * Good files were written by three independent writers (DuckDB, the
 * hyparquet-writer JavaScript library, arrow-rs through parquet-wasm) and by
 * our own byte-level writer; each x.parquet has x.tsv.gz with the values the
 * writer was given, and every row of every column is compared with it. A
 * file of a codec this build lacks the library for (LZ4, LZ4_RAW, BROTLI)
 * must instead be refused chunk by chunk, naming the Debian package. The
 * tests also check that the fixtures really contain what they are meant to
 * cover (encodings, page versions, codecs, the dictionary-to-plain fallback),
 * so that a regenerated set cannot silently lose coverage.
 *
 * Malformed files (tests/parquet/fixtures/bad) must give the right error,
 * naming the file, the column and the row group, and leave the other column
 * chunks readable. Truncations and seeded random corruptions of good files
 * must never crash (run this under ASan + UBSan). Then: streaming one row
 * group at a time with one reused column, and concurrent readers of one
 * open file. The decoders on their own: test_parquet_decoders.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "check.h"
#include "testutil.h"
#include "format/parquet/parquet.h"
#include "format/parquet/parquet_decode.h"
#include "format/parquet/snappy.h"
#include "format/parquet/thrift.h"
#include "lc_config.h"
#include "tsv.h"

#define ENC(x) (1u << LC_PARQUET_ENC_##x)
#define PAGE(x) (1u << LC_PARQUET_PAGE_##x)

static char fixtures_dir[4096];

static const char *fixture(const char *rel)
{
    static char bufs[4][4096];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s", fixtures_dir, rel);
    return b;
}

/* Expected values: tests/lib/tsv.h. */

/* ---- good fixtures, row by row --------------------------------------------- */

typedef struct fixture_spec {
    const char *name;
    size_t min_row_groups;
    int codec;            /* of every chunk */
    uint32_t encodings;   /* each must appear in some data page of the file */
    uint32_t pages;       /* each page type must appear */
    const char *fallback; /* a column whose first chunk must mix dictionary and other pages */
} fixture_spec;

static const fixture_spec good[] = {
    {"duckdb_snappy_rowgroups", 2, LC_PARQUET_CODEC_SNAPPY, ENC(PLAIN) | ENC(PLAIN_DICTIONARY),
     PAGE(DATA) | PAGE(DICTIONARY), NULL},
    {"duckdb_zstd_extra_columns", 1, LC_PARQUET_CODEC_ZSTD, ENC(PLAIN) | ENC(PLAIN_DICTIONARY),
     PAGE(DATA) | PAGE(DICTIONARY), NULL},
    {"duckdb_gzip_ply1", 1, LC_PARQUET_CODEC_GZIP, ENC(PLAIN) | ENC(PLAIN_DICTIONARY),
     PAGE(DATA) | PAGE(DICTIONARY), NULL},
    {"duckdb_uncompressed_shuffled", 1, LC_PARQUET_CODEC_UNCOMPRESSED,
     ENC(PLAIN) | ENC(PLAIN_DICTIONARY), PAGE(DATA) | PAGE(DICTIONARY), NULL},
    {"duckdb_v2_zstd_types", 2, LC_PARQUET_CODEC_ZSTD,
     ENC(RLE_DICTIONARY) | ENC(BYTE_STREAM_SPLIT) | ENC(DELTA_LENGTH_BYTE_ARRAY) |
         ENC(DELTA_BINARY_PACKED),
     PAGE(DATA) | PAGE(DICTIONARY), NULL},
    {"hyparquet_v2_snappy", 3, LC_PARQUET_CODEC_SNAPPY, ENC(PLAIN) | ENC(RLE_DICTIONARY),
     PAGE(DATA_V2) | PAGE(DICTIONARY), NULL},
    {"hyparquet_delta_gzip", 2, LC_PARQUET_CODEC_GZIP,
     ENC(DELTA_BINARY_PACKED) | ENC(DELTA_BYTE_ARRAY) | ENC(DELTA_LENGTH_BYTE_ARRAY) |
         ENC(BYTE_STREAM_SPLIT),
     PAGE(DATA_V2), NULL},
    {"hyparquet_types_uncompressed", 1, LC_PARQUET_CODEC_UNCOMPRESSED,
     ENC(DELTA_BINARY_PACKED) | ENC(BYTE_STREAM_SPLIT) | ENC(RLE_DICTIONARY),
     PAGE(DATA_V2) | PAGE(DICTIONARY), NULL},
    {"arrow_fallback_v1_snappy", 2, LC_PARQUET_CODEC_SNAPPY, ENC(PLAIN) | ENC(RLE_DICTIONARY),
     PAGE(DATA) | PAGE(DICTIONARY), "fen"},
    {"arrow_fallback_v2_zstd", 2, LC_PARQUET_CODEC_ZSTD,
     ENC(PLAIN) | ENC(RLE_DICTIONARY) | ENC(DELTA_BYTE_ARRAY), PAGE(DATA_V2) | PAGE(DICTIONARY),
     "fen"},
    {"arrow_v2_gzip_delta", 2, LC_PARQUET_CODEC_GZIP,
     ENC(DELTA_BINARY_PACKED) | ENC(DELTA_BYTE_ARRAY) | ENC(DELTA_LENGTH_BYTE_ARRAY) |
         ENC(BYTE_STREAM_SPLIT),
     PAGE(DATA_V2), NULL},
    {"own_dictionary_offsets", 2, -1, ENC(PLAIN) | ENC(PLAIN_DICTIONARY) | ENC(RLE_DICTIONARY),
     PAGE(DATA) | PAGE(DATA_V2) | PAGE(DICTIONARY), NULL},
    /* The codecs of optional libraries. */
    {"arrow_lz4_raw", 1, LC_PARQUET_CODEC_LZ4_RAW, ENC(RLE_DICTIONARY),
     PAGE(DATA) | PAGE(DICTIONARY), NULL},
    {"duckdb_lz4_raw", 1, LC_PARQUET_CODEC_LZ4_RAW, ENC(PLAIN) | ENC(PLAIN_DICTIONARY),
     PAGE(DATA) | PAGE(DICTIONARY), NULL},
    {"arrow_lz4_hadoop", 1, LC_PARQUET_CODEC_LZ4, ENC(RLE_DICTIONARY),
     PAGE(DATA) | PAGE(DICTIONARY), NULL},
    {"hyparquet_lz4_frame", 1, LC_PARQUET_CODEC_LZ4, ENC(PLAIN) | ENC(RLE_DICTIONARY),
     PAGE(DATA_V2) | PAGE(DICTIONARY), NULL},
    {"hyparquet_lz4_block", 1, LC_PARQUET_CODEC_LZ4, ENC(PLAIN) | ENC(RLE_DICTIONARY),
     PAGE(DATA_V2) | PAGE(DICTIONARY), NULL},
    {"duckdb_brotli", 1, LC_PARQUET_CODEC_BROTLI, ENC(PLAIN) | ENC(PLAIN_DICTIONARY),
     PAGE(DATA) | PAGE(DICTIONARY), NULL},
    {"arrow_brotli_v2", 1, LC_PARQUET_CODEC_BROTLI, ENC(RLE_DICTIONARY),
     PAGE(DATA_V2) | PAGE(DICTIONARY), NULL},
    {"hyparquet_brotli", 1, LC_PARQUET_CODEC_BROTLI, ENC(PLAIN) | ENC(RLE_DICTIONARY),
     PAGE(DATA_V2) | PAGE(DICTIONARY), NULL},
};

static uint32_t all_encodings, all_pages, all_codecs;

/* Compare row i of a column with its expected text; report the first few. */
static bool same_value(const lc_parquet_column *c, size_t i, const char *want)
{
    bool want_null = strcmp(want, "\\N") == 0;
    if (!c->valid[i] || want_null)
        return !c->valid[i] && want_null;
    switch (c->kind) {
    case LC_PARQUET_KIND_INT64:
        return c->i64[i] == strtoll(want, NULL, 10);
    case LC_PARQUET_KIND_DOUBLE:
        return c->f64[i] == strtod(want, NULL);
    default: {
        size_t len;
        const char *s = lc_parquet_string(c, i, &len);
        return len == strlen(want) && memcmp(s, want, len) == 0;
    }
    }
}

static void describe(const lc_parquet_column *c, size_t i, char *buf, size_t n)
{
    if (!c->valid[i]) {
        snprintf(buf, n, "null");
    } else if (c->kind == LC_PARQUET_KIND_INT64) {
        snprintf(buf, n, "%" PRId64, c->i64[i]);
    } else if (c->kind == LC_PARQUET_KIND_DOUBLE) {
        snprintf(buf, n, "%.17g", c->f64[i]);
    } else {
        size_t len;
        const char *s = lc_parquet_string(c, i, &len);
        snprintf(buf, n, "'%.*s'", (int)len, s);
    }
}

static void test_good_fixture(const fixture_spec *spec)
{
    char rel[256];
    snprintf(rel, sizeof rel, "%s.parquet", spec->name);
    const char *path = fixture(rel);
    snprintf(rel, sizeof rel, "%s.tsv.gz", spec->name);
    tsv want;
    bool loaded = tsv_load(fixture(rel), &want);
    CHECK(loaded);
    if (!loaded) {
        fprintf(stderr, "  cannot load %s\n", fixture(rel));
        tsv_free(&want);
        return;
    }
    lc_parquet_file *f = tu_parquet_open(path);
    CHECK(f != NULL);
    if (!f) {
        tsv_free(&want);
        return;
    }
    size_t n_rg = lc_parquet_num_row_groups(f);
    CHECK(n_rg >= spec->min_row_groups);
    CHECK_EQ_INT(lc_parquet_num_rows(f), want.n_rows);
    int64_t sum = 0;
    for (size_t g = 0; g < n_rg; g++)
        sum += lc_parquet_row_group_rows(f, g);
    CHECK_EQ_INT(sum, want.n_rows);

    uint32_t encodings = 0, pages = 0;
    bool fallback_seen = spec->fallback == NULL;
    lc_parquet_column col = {0};
    size_t mismatches = 0, compared = 0;
    for (size_t k = 0; k < want.n_cols; k++) {
        int ci = lc_parquet_find_column(f, want.names[k]);
        if (ci < 0)
            fprintf(stderr, "  %s: column %s not found (%d)\n", spec->name, want.names[k], ci);
        CHECK(ci >= 0);
        if (ci < 0)
            continue;
        CHECK_EQ_STR(lc_parquet_column_at(f, (size_t)ci)->name, want.names[k]);
        size_t row0 = 0;
        for (size_t g = 0; g < n_rg; g++) {
            lc_error err;
            int rc = lc_parquet_read_column(f, g, (size_t)ci, &col, &err);
            if (rc < 0)
                fprintf(stderr, "  %s\n", err.msg);
            CHECK_OK(rc);
            if (rc < 0)
                break;
            CHECK_EQ_U64(col.n, lc_parquet_row_group_rows(f, g));
            if (spec->codec >= 0)
                CHECK_EQ_INT(col.codec, spec->codec);
            all_codecs |= 1u << col.codec;
            encodings |= col.data_encodings;
            pages |= col.page_types;
            if (spec->fallback && g == 0 && strcmp(want.names[k], spec->fallback) == 0) {
                uint32_t dict = ENC(PLAIN_DICTIONARY) | ENC(RLE_DICTIONARY);
                fallback_seen = (col.data_encodings & dict) && (col.data_encodings & ~dict);
            }
            for (size_t i = 0; i < col.n && row0 + i < want.n_rows; i++) {
                const char *w = want.cells[(row0 + i) * want.n_cols + k];
                compared++;
                if (!same_value(&col, i, w)) {
                    if (mismatches++ < 5) {
                        char got[256];
                        describe(&col, i, got, sizeof got);
                        fprintf(stderr, "  %s: row %zu column %s: got %s, want '%s'\n", spec->name,
                                row0 + i, want.names[k], got, w);
                    }
                }
            }
            row0 += col.n;
        }
        CHECK_EQ_U64(row0, want.n_rows);
    }
    CHECK_EQ_U64(mismatches, 0);
    CHECK_EQ_U64(compared, want.n_rows * want.n_cols);
    if ((encodings & spec->encodings) != spec->encodings)
        fprintf(stderr, "  %s: encodings seen %#x, expected at least %#x\n", spec->name, encodings,
                spec->encodings);
    CHECK((encodings & spec->encodings) == spec->encodings);
    if ((pages & spec->pages) != spec->pages)
        fprintf(stderr, "  %s: page types seen %#x, expected %#x\n", spec->name, pages,
                spec->pages);
    CHECK((pages & spec->pages) == spec->pages);
    CHECK(fallback_seen);
    all_encodings |= encodings;
    all_pages |= pages;
    printf("%-32s %zu row groups, %zu rows x %zu columns, encodings %#05x, pages %#x\n", spec->name,
           n_rg, want.n_rows, want.n_cols, encodings, pages);
    lc_parquet_column_fini(&col);
    lc_parquet_close(f);
    tsv_free(&want);
}

static void test_coverage(void)
{
    /* Across all fixtures from real writers and ours: everything the reader
     * claims to read has been read. */
    uint32_t enc = ENC(PLAIN) | ENC(PLAIN_DICTIONARY) | ENC(RLE_DICTIONARY) |
                   ENC(DELTA_BINARY_PACKED) | ENC(DELTA_LENGTH_BYTE_ARRAY) | ENC(DELTA_BYTE_ARRAY) |
                   ENC(BYTE_STREAM_SPLIT);
    CHECK_EQ_U64(all_encodings & enc, enc);
    CHECK_EQ_U64(all_pages & (PAGE(DATA) | PAGE(DATA_V2) | PAGE(DICTIONARY)),
                 PAGE(DATA) | PAGE(DATA_V2) | PAGE(DICTIONARY));
    uint32_t codecs = 1u << LC_PARQUET_CODEC_UNCOMPRESSED | 1u << LC_PARQUET_CODEC_SNAPPY |
                      1u << LC_PARQUET_CODEC_GZIP | 1u << LC_PARQUET_CODEC_ZSTD;
    if (LC_HAVE_LZ4)
        codecs |= 1u << LC_PARQUET_CODEC_LZ4 | 1u << LC_PARQUET_CODEC_LZ4_RAW;
    if (LC_HAVE_BROTLI)
        codecs |= 1u << LC_PARQUET_CODEC_BROTLI;
    CHECK_EQ_U64(all_codecs & codecs, codecs);
}

/* ---- the schema: extra, nested and unsupported columns ---------------------- */

static void test_extra_columns(void)
{
    lc_parquet_file *f = NULL;
    lc_error err;
    const char *path = fixture("duckdb_zstd_extra_columns.parquet");
    CHECK_OK(lc_parquet_open(path, &f, &err));
    if (!f)
        return;
    CHECK_EQ_INT(lc_parquet_find_column(f, "tags"), -ENOTSUP);     /* list<string> */
    CHECK_EQ_INT(lc_parquet_find_column(f, "info"), -ENOTSUP);     /* struct */
    CHECK_EQ_INT(lc_parquet_find_column(f, "is_white"), -ENOTSUP); /* boolean */
    CHECK_EQ_INT(lc_parquet_find_column(f, "nope"), -ENOENT);
    CHECK_EQ_INT(lc_parquet_find_column(f, "info.depth"), -ENOENT);
    /* Column order: site, game_id, ply, fen, tags (one leaf), played_move,
     * info (two leaves), best_move, is_white, win, draw, loss, white_elo, eval_cp. */
    CHECK_EQ_U64(lc_parquet_num_columns(f), 15);
    CHECK_EQ_INT(lc_parquet_find_column(f, "site"), 0);
    CHECK_EQ_INT(lc_parquet_find_column(f, "played_move"), 5);
    CHECK_EQ_INT(lc_parquet_find_column(f, "best_move"), 8);
    CHECK_EQ_INT(lc_parquet_find_column(f, "eval_cp"), 14);
    const lc_parquet_column_info *ci = lc_parquet_column_at(f, 4);
    CHECK(ci != NULL && ci->kind == LC_PARQUET_KIND_NONE);
    CHECK(ci != NULL && strncmp(ci->name, "tags.", 5) == 0);
    ci = lc_parquet_column_at(f, 6);
    CHECK(ci != NULL && ci->kind == LC_PARQUET_KIND_NONE && ci->type == LC_PARQUET_INT64);
    CHECK_EQ_STR(ci ? ci->name : NULL, "info.depth");
    CHECK(lc_parquet_column_at(f, 15) == NULL);
    ci = lc_parquet_column_at(f, 13);
    CHECK(ci != NULL && ci->type == LC_PARQUET_INT32 && ci->kind == LC_PARQUET_KIND_INT64 &&
          ci->optional);

    /* Reading an unreadable column is a clear error, not a crash. */
    lc_parquet_column col = {0};
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_parquet_read_column(f, 0, 4, &col, &err), -ENOTSUP);
    CHECK(tu_contains(err.msg, "tags.") && tu_contains(err.msg, "row group 0"));
    CHECK_EQ_INT(lc_parquet_read_column(f, 5, 0, &col, &err), -EINVAL);
    CHECK_EQ_INT(lc_parquet_read_column(f, 0, 99, &col, &err), -EINVAL);
    /* One column struct serves columns of different kinds in turn. */
    CHECK_OK(lc_parquet_read_column(f, 0, 0, &col, &err));
    CHECK_EQ_INT(col.kind, LC_PARQUET_KIND_STRING);
    CHECK_OK(lc_parquet_read_column(f, 0, 2, &col, &err));
    CHECK_EQ_INT(col.kind, LC_PARQUET_KIND_INT64);
    CHECK_EQ_INT(lc_parquet_read_column(f, 0, 9, &col, &err), -ENOTSUP); /* is_white */
    CHECK_OK(lc_parquet_read_column(f, 0, 10, &col, &err));
    CHECK_EQ_INT(col.kind, LC_PARQUET_KIND_DOUBLE);
    CHECK_OK(lc_parquet_read_column(f, 0, 1, &col, &err));
    CHECK_EQ_INT(col.kind, LC_PARQUET_KIND_STRING);
    lc_parquet_column_fini(&col);
    lc_parquet_column_fini(&col); /* twice is fine */
    lc_parquet_column_fini(NULL);
    lc_parquet_close(f);
    lc_parquet_close(NULL);
}

/* ---- malformed files ------------------------------------------------------- */

typedef struct bad_case {
    const char *name;
    int code;
    const char *column; /* NULL: open must fail */
    int row_group;
    const char *words; /* in the message */
} bad_case;

static const bad_case bad[] = {
    {"bad_magic_head", LC_EFORMAT, NULL, -1, "no PAR1 magic at the start"},
    {"bad_magic_tail", LC_EFORMAT, NULL, -1, "no PAR1 magic at the end"},
    {"truncated", LC_EFORMAT, NULL, -1, "truncated"},
    {"footer_length_past_end", LC_ETRUNC, NULL, -1, "footer length"},
    {"metadata_cut", LC_EFORMAT, NULL, -1, "malformed file metadata"},
    {"schema_too_short", LC_EFORMAT, NULL, -1, "schema"},
    {"chunk_type_mismatch", LC_EFORMAT, NULL, -1, "column 'ply', row group 1"},
    {"unknown_codec", LC_EFORMAT, "win", 1, "unknown codec 42"},
    {"unknown_encoding", LC_EFORMAT, "ply", 0, "unknown value encoding 42"},
    {"page_past_chunk", LC_ETRUNC, "game_id", 1, "runs past the end of the column chunk"},
    {"chunk_past_end", LC_ETRUNC, "ply", 1, "runs outside the data"},
    {"dictionary_index_out_of_range", LC_EFORMAT, "game_id", 0, "dictionary index 4 out of range"},
    {"impossible_bit_width", LC_EFORMAT, "game_id", 1, "impossible bit width 40"},
    {"impossible_definition_level", LC_EFORMAT, "win", 0, "definition levels"},
    {"gzip_wrong_size", LC_EFORMAT, "draw", 1, "GZIP page decompresses to fewer bytes"},
    /* Read, or refused by a build without the library. */
    {"lz4_raw_wrong_size", LC_HAVE_LZ4 ? LC_EFORMAT : -ENOTSUP, "draw", 1,
     LC_HAVE_LZ4 ? "LZ4_RAW page decompresses to 399 bytes, the header says 406" : "liblz4-dev"},
    {"brotli_wrong_size", LC_HAVE_BROTLI ? LC_EFORMAT : -ENOTSUP, "draw", 1,
     LC_HAVE_BROTLI ? "BROTLI page decompresses to 399 bytes, the header says 406"
                    : "libbrotli-dev"},
    {"lz4_raw_page_too_large", LC_HAVE_LZ4 ? LC_EFORMAT : -ENOTSUP, "draw", 1,
     LC_HAVE_LZ4 ? "cannot decompress to the 1048975 bytes its header gives" : "liblz4-dev"},
    {"lzo_codec", -ENOTSUP, "win", 1, "codec LZO is not supported"},
    {"uncompressed_wrong_size", LC_EFORMAT, "win", 1, "claims to hold"},
    {"values_short", LC_EFORMAT, "ply", 0, "fewer values"},
    {"chunk_values_mismatch", LC_EFORMAT, "draw", 0, "55 values for 54 rows"},
    {"too_many_values", LC_EFORMAT, "win", 0, "more values than"},
    {"page_header_garbage", LC_EFORMAT, "game_id", 0, "malformed page header"},
};

static void expect_words(const lc_error *err, const char *a, const char *b, const char *c,
                         const char *d)
{
    const char *w[] = {a, b, c, d};
    for (int i = 0; i < 4; i++) {
        if (w[i] && !tu_contains(err->msg, w[i]))
            fprintf(stderr, "  message lacks '%s': %s\n", w[i], err->msg);
        CHECK(!w[i] || tu_contains(err->msg, w[i]));
    }
}

static void test_bad_file(const bad_case *bc)
{
    char rel[256];
    snprintf(rel, sizeof rel, "bad/%s.parquet", bc->name);
    const char *path = fixture(rel);
    lc_parquet_file *f = NULL;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_parquet_open(path, &f, &err);
    if (!bc->column) {
        CHECK_EQ_INT(rc, bc->code);
        CHECK_EQ_INT(err.code, bc->code);
        CHECK(f == NULL);
        expect_words(&err, path, bc->words, NULL, NULL);
        printf("%-32s open: %s\n", bc->name, err.msg);
        lc_parquet_close(f);
        return;
    }
    CHECK_OK(rc);
    if (rc < 0) {
        fprintf(stderr, "  %s\n", err.msg);
        return;
    }
    /* Exactly the broken chunk fails; every other chunk still reads. */
    lc_parquet_column col = {0};
    int failures = 0;
    for (size_t g = 0; g < lc_parquet_num_row_groups(f); g++) {
        for (size_t c = 0; c < lc_parquet_num_columns(f); c++) {
            lc_error_clear(&err);
            rc = lc_parquet_read_column(f, g, c, &col, &err);
            bool target = strcmp(lc_parquet_column_at(f, c)->name, bc->column) == 0 &&
                          (int)g == bc->row_group;
            if (!target) {
                if (rc < 0)
                    fprintf(stderr, "  %s: unexpected: %s\n", bc->name, err.msg);
                CHECK_OK(rc);
                continue;
            }
            failures++;
            CHECK_EQ_INT(rc, bc->code);
            CHECK_EQ_INT(col.n, 0);
            char colw[128], rgw[64];
            snprintf(colw, sizeof colw, "column '%s'", bc->column);
            snprintf(rgw, sizeof rgw, "row group %d", bc->row_group);
            expect_words(&err, path, colw, rgw, bc->words);
            printf("%-32s read: %s\n", bc->name, err.msg);
        }
    }
    CHECK_EQ_INT(failures, 1);
    lc_parquet_column_fini(&col);
    lc_parquet_close(f);
}

/* A good file of a codec this build has no library for: every chunk is
 * refused with -ENOTSUP, naming the file, the column, the row group, the
 * codec and the Debian package to install. */
static void test_refused_fixture(const fixture_spec *spec)
{
    char rel[256];
    snprintf(rel, sizeof rel, "%s.parquet", spec->name);
    const char *path = fixture(rel);
    lc_parquet_file *f = NULL;
    lc_error err;
    CHECK_OK(lc_parquet_open(path, &f, &err));
    if (!f)
        return;
    lc_parquet_column col = {0};
    for (size_t c = 0; c < lc_parquet_num_columns(f); c++) {
        lc_error_clear(&err);
        CHECK_EQ_INT(lc_parquet_read_column(f, 0, c, &col, &err), -ENOTSUP);
        CHECK_EQ_INT(col.n, 0);
        char colw[128], codecw[64];
        snprintf(colw, sizeof colw, "column '%s'", lc_parquet_column_at(f, c)->name);
        snprintf(codecw, sizeof codecw, "codec %s is not supported by this build",
                 lc_parquet_codec_name(spec->codec));
        expect_words(&err, path, colw, "row group 0", codecw);
        expect_words(&err, spec->codec == LC_PARQUET_CODEC_BROTLI ? "libbrotli-dev" : "liblz4-dev",
                     NULL, NULL, NULL);
    }
    printf("%-32s refused: %s\n", spec->name, err.msg);
    lc_parquet_column_fini(&col);
    lc_parquet_close(f);
}

static void test_not_parquet(void)
{
    lc_parquet_file *f = NULL;
    lc_error err;
    const char *p = tu_path("tiny.parquet");
    tu_write_file(p, "PAR1PAR1", 8);
    CHECK_EQ_INT(lc_parquet_open(p, &f, &err), LC_EFORMAT);
    CHECK(tu_contains(err.msg, "too short") && tu_contains(err.msg, p));
    /* A zero footer length. */
    tu_write_file(p, "PAR1\0\0\0\0\0\0\0\0PAR1", 16);
    CHECK_EQ_INT(lc_parquet_open(p, &f, &err), LC_EFORMAT);
    CHECK_EQ_INT(lc_parquet_open(tu_path("missing.parquet"), &f, &err), -ENOENT);
    CHECK(tu_contains(err.msg, "missing.parquet"));
    CHECK_EQ_INT(lc_parquet_open(tu_tmpdir(), &f, &err), LC_ENOTREG);
    CHECK(tu_contains(err.msg, "is a directory, not a regular file"));
    /* A named pipe is refused at once, not waited on for a writer. */
    const char *fifo = tu_path("fifo.parquet");
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    CHECK_EQ_INT(lc_parquet_open(fifo, &f, &err), LC_ENOTREG);
    CHECK(tu_contains(err.msg, "fifo.parquet: is a named pipe (FIFO)"));
    /* An encrypted footer ("PARE") is refused as unsupported. */
    tu_write_file(p, "PAR1xxxxxxxx\4\0\0\0PARE", 20);
    CHECK_EQ_INT(lc_parquet_open(p, &f, &err), -ENOTSUP);
    CHECK(f == NULL);
    /* Metadata written by hand (Thrift compact): the schema, an empty list
     * of structs (field 2: 0x29, list header 0x0C), given twice (the second
     * time with the long field header: 0x09, zigzag id 4); then row groups
     * (field 4) as a list of one i32 (0x15, value 0). */
    static const struct {
        const char *bytes;
        size_t len;
        const char *words;
    } meta[] = {
        {"PAR1\x29\x0c\x09\x04\x0c\x00\6\0\0\0PAR1", 18, "two schemas"},
        {"PAR1\x29\x0c\x29\x15\x00\x00\6\0\0\0PAR1", 18, "row groups are not structs"},
    };
    for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++) {
        tu_write_file(p, meta[i].bytes, meta[i].len);
        CHECK_EQ_INT(lc_parquet_open(p, &f, &err), LC_EFORMAT);
        expect_words(&err, p, "file metadata", meta[i].words, NULL);
        CHECK(f == NULL);
    }
}

/* ---- robustness: truncations and corruptions never crash ------------------- */

/* Open and read every chunk; return 1 when all of it worked, 0 on an error
 * (whose message must name the file), never crash. */
static int read_everything(const char *path)
{
    lc_parquet_file *f = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_parquet_open(path, &f, &err) < 0) {
        CHECK(err.code < 0 && tu_contains(err.msg, path));
        return 0;
    }
    int ok = 1;
    lc_parquet_column col = {0};
    for (size_t g = 0; g < lc_parquet_num_row_groups(f); g++) {
        for (size_t c = 0; c < lc_parquet_num_columns(f); c++) {
            if (lc_parquet_column_at(f, c)->kind == LC_PARQUET_KIND_NONE)
                continue;
            lc_error_clear(&err);
            int rc = lc_parquet_read_column(f, g, c, &col, &err);
            if (rc < 0) {
                ok = 0;
                if (!tu_contains(err.msg, path) || !tu_contains(err.msg, "row group"))
                    fprintf(stderr, "  poor message: %s\n", err.msg);
                CHECK(tu_contains(err.msg, path) && tu_contains(err.msg, "row group"));
                CHECK_EQ_INT(col.n, 0);
            } else {
                CHECK_EQ_U64(col.n, lc_parquet_row_group_rows(f, g));
            }
        }
    }
    lc_parquet_column_fini(&col);
    lc_parquet_close(f);
    return ok;
}

static uint32_t xorshift(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static void test_truncations(const char *rel, size_t step)
{
    size_t len;
    uint8_t *data = tu_read_file(fixture(rel), &len);
    CHECK(data != NULL);
    if (!data)
        return;
    const char *p = tu_path("cut.parquet");
    int opened = 0;
    for (size_t n = 0; n < len; n += step) {
        tu_write_file(p, data, n);
        opened += read_everything(p);
    }
    /* Without its last bytes, a file has no trailing magic. */
    CHECK_EQ_INT(opened, 0);
    free(data);
}

/* Overwrite a few bytes at seeded random places, with a bias towards the
 * footer (the metadata) and the start of the file (page headers). */
static void test_corruptions(const char *rel, int rounds, uint32_t seed)
{
    size_t len;
    uint8_t *data = tu_read_file(fixture(rel), &len);
    CHECK(data != NULL);
    if (!data)
        return;
    uint8_t *copy = malloc(len);
    const char *p = tu_path("corrupt.parquet");
    uint32_t s = seed;
    size_t meta_len = lc_pq_le32(data + len - 8);
    int intact = 0;
    for (int round = 0; round < rounds; round++) {
        memcpy(copy, data, len);
        int edits = 1 + (int)(xorshift(&s) % 4);
        for (int e = 0; e < edits; e++) {
            size_t at;
            uint32_t where = xorshift(&s) % 4;
            if (where < 2 && meta_len + 8 < len)
                at = len - 8 - meta_len + xorshift(&s) % meta_len;
            else if (where == 2)
                at = xorshift(&s) % (len < 512 ? len : 512);
            else
                at = xorshift(&s) % len;
            uint32_t how = xorshift(&s) % 3;
            if (how == 0)
                copy[at] ^= (uint8_t)(1u << (xorshift(&s) % 8));
            else if (how == 1)
                copy[at] = (uint8_t)xorshift(&s);
            else
                copy[at] = (xorshift(&s) & 1) ? 0xff : 0x00;
        }
        tu_write_file(p, copy, len);
        intact += read_everything(p);
    }
    printf("%-32s %d corruptions, %d still read whole\n", rel, rounds, intact);
    free(copy);
    free(data);
}

/* ---- streaming and threads -------------------------------------------------- */

static void test_streaming(void)
{
    const char *path = fixture("duckdb_snappy_rowgroups.parquet");
    tsv want;
    if (!tsv_load(fixture("duckdb_snappy_rowgroups.tsv.gz"), &want)) {
        CHECK(0);
        tsv_free(&want);
        return;
    }
    lc_parquet_file *f = NULL;
    lc_error err;
    CHECK_OK(lc_parquet_open(path, &f, &err));
    if (!f) {
        tsv_free(&want);
        return;
    }
    int fen = lc_parquet_find_column(f, "fen"), ply = lc_parquet_find_column(f, "ply");
    CHECK(fen >= 0 && ply >= 0);
    /* One column struct per column, reused for every row group: the buffers
     * grow once and the values always match the rows of that group. */
    lc_parquet_column fc = {0}, pc = {0};
    size_t row0 = 0;
    uint8_t *first_buffer = NULL;
    for (size_t g = 0; g < lc_parquet_num_row_groups(f); g++) {
        CHECK_OK(lc_parquet_read_column(f, g, (size_t)fen, &fc, &err));
        CHECK_OK(lc_parquet_read_column(f, g, (size_t)ply, &pc, &err));
        if (g == 0)
            first_buffer = fc.valid;
        else if ((int64_t)fc.n <= lc_parquet_row_group_rows(f, 0))
            CHECK(fc.valid == first_buffer); /* reused, not reallocated */
        CHECK_EQ_U64(fc.n, pc.n);
        for (size_t i = 0; i < fc.n; i++) {
            size_t len;
            const char *s = lc_parquet_string(&fc, i, &len);
            const char *w = want.cells[(row0 + i) * want.n_cols + 2];
            if (len != strlen(w) || memcmp(s, w, len) != 0) {
                CHECK(0);
                break;
            }
            CHECK(pc.i64[i] == strtoll(want.cells[(row0 + i) * want.n_cols + 1], NULL, 10));
        }
        row0 += fc.n;
    }
    CHECK_EQ_U64(row0, want.n_rows);
    lc_parquet_column_fini(&fc);
    lc_parquet_column_fini(&pc);
    lc_parquet_close(f);
    tsv_free(&want);
}

typedef struct reader_arg {
    const lc_parquet_file *f;
    size_t worker, workers;
    uint64_t checksum;
    int errors;
} reader_arg;

static uint64_t checksum_column(const lc_parquet_column *c)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < c->n; i++) {
        uint64_t v = 0;
        if (c->valid[i]) {
            if (c->kind == LC_PARQUET_KIND_INT64) {
                v = (uint64_t)c->i64[i];
            } else if (c->kind == LC_PARQUET_KIND_DOUBLE) {
                memcpy(&v, &c->f64[i], sizeof v);
            } else {
                size_t len;
                const char *s = lc_parquet_string(c, i, &len);
                for (size_t k = 0; k < len; k++)
                    v = v * 31 + (uint8_t)s[k];
            }
        }
        h = (h ^ v ^ c->valid[i]) * 1099511628211ull;
    }
    return h;
}

/* Worker w reads the (row group, column) pairs numbered w mod workers, twice. */
static void *reader(void *p)
{
    reader_arg *a = p;
    lc_parquet_column col = {0};
    lc_error err;
    size_t k = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t g = 0; g < lc_parquet_num_row_groups(a->f); g++) {
            for (size_t c = 0; c < lc_parquet_num_columns(a->f); c++, k++) {
                if (k % a->workers != a->worker)
                    continue;
                if (lc_parquet_read_column(a->f, g, c, &col, &err) < 0)
                    a->errors++;
                else
                    a->checksum += checksum_column(&col);
            }
        }
    }
    lc_parquet_column_fini(&col);
    return NULL;
}

static void test_threads(void)
{
    lc_parquet_file *f = NULL;
    lc_error err;
    CHECK_OK(lc_parquet_open(fixture("arrow_fallback_v2_zstd.parquet"), &f, &err));
    if (!f)
        return;
    reader_arg one = {.f = f, .worker = 0, .workers = 1};
    reader(&one);
    CHECK_EQ_INT(one.errors, 0);
    enum { N = 4 };
    pthread_t th[N];
    reader_arg args[N];
    for (size_t i = 0; i < N; i++) {
        args[i] = (reader_arg){.f = f, .worker = i, .workers = N};
        CHECK_EQ_INT(pthread_create(&th[i], NULL, reader, &args[i]), 0);
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(args[i].errors, 0);
        sum += args[i].checksum;
    }
    CHECK_EQ_U64(sum, one.checksum);
    lc_parquet_close(f);
}

int main(void)
{
    snprintf(fixtures_dir, sizeof fixtures_dir, "%s/../parquet/fixtures", tu_test_data());
    if (!tu_is_dir(fixtures_dir)) {
        fprintf(stderr, "no fixtures at %s\n", fixtures_dir);
        return 1;
    }
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        if (good[i].codec >= 0 && !lc_parquet_codec_supported(good[i].codec))
            test_refused_fixture(&good[i]);
        else
            test_good_fixture(&good[i]);
    }
    test_coverage();
    test_extra_columns();
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        test_bad_file(&bad[i]);
    test_not_parquet();
    CHECK_EQ_INT(read_everything(fixture("bad/good.parquet")), 1);
    test_streaming();
    test_threads();
    test_truncations("bad/good.parquet", 1);
    test_truncations("own_dictionary_offsets.parquet", 7);
    test_truncations("hyparquet_v2_snappy.parquet", 31);
    test_corruptions("bad/good.parquet", 3000, 1);
    test_corruptions("own_dictionary_offsets.parquet", 1500, 2);
    test_corruptions("hyparquet_delta_gzip.parquet", 500, 3);
    test_corruptions("arrow_fallback_v2_zstd.parquet", 300, 4);
    test_corruptions("duckdb_zstd_extra_columns.parquet", 300, 5);
    test_corruptions("duckdb_snappy_rowgroups.parquet", 200, 6);
    /* The codecs of optional libraries (refused quickly without them). */
    test_truncations("arrow_lz4_hadoop.parquet", 13);
    test_corruptions("arrow_lz4_hadoop.parquet", 300, 7);
    test_corruptions("duckdb_lz4_raw.parquet", 300, 8);
    test_corruptions("hyparquet_lz4_frame.parquet", 300, 9);
    test_corruptions("hyparquet_lz4_block.parquet", 200, 10);
    test_truncations("arrow_brotli_v2.parquet", 13);
    test_corruptions("arrow_brotli_v2.parquet", 300, 11);
    test_corruptions("duckdb_brotli.parquet", 300, 12);
    return check_finish();
}
