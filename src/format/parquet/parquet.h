/*
 * parquet: read the columns of a Parquet file one row group at a time.
 *
 * lc_parquet_open reads the footer (the Thrift-encoded file metadata) and
 * keeps the schema and, for every row group, where each column chunk lives;
 * lc_parquet_read_column then reads one column chunk with pread, walks its
 * pages from the start and decodes them into a typed vector. Only one column
 * chunk (compressed) and one page (decompressed) are in memory at a time, on
 * top of the output, so a file is never read whole.
 *
 * Scope: flat columns, that is top-level REQUIRED or OPTIONAL primitives of
 * type INT32, INT64, FLOAT, DOUBLE or BYTE_ARRAY; nested or repeated columns
 * and other types are listed but cannot be read. Data pages v1 and v2;
 * encodings PLAIN, PLAIN_DICTIONARY and RLE_DICTIONARY (a chunk may fall back
 * from dictionary to plain pages partway), DELTA_BINARY_PACKED,
 * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT; codecs
 * UNCOMPRESSED, SNAPPY, GZIP and ZSTD, and where the build found their
 * libraries LZ4_RAW and LZ4 (liblz4) and BROTLI (libbrotlidec): see
 * lc_parquet_codec_supported. Encrypted files are refused.
 *
 * Threads: after open the file is immutable and every read uses pread, so
 * several threads may read row groups (or columns) of one open file at once,
 * each into its own lc_parquet_column. Open and close are not concurrent with
 * anything else on the same file.
 *
 * Errors: functions return 0 or a negative code (LC_EFORMAT for a malformed
 * file, LC_ETRUNC for offsets or lengths past the end of the file, -ENOTSUP
 * for something valid that we do not read, such as an LZO page, a negated
 * errno for I/O) and fill err with a message that names the file and, when
 * it concerns a column chunk, the column, the row group and the byte offset.
 * A malformed file is never a crash: every length and offset is checked, and
 * allocations are bounded by the file size or by the limits below.
 */
#ifndef LC_FORMAT_PARQUET_PARQUET_H
#define LC_FORMAT_PARQUET_PARQUET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* Sanity limits for one row group of one column, far above real files (about
 * a million rows of FEN strings, some 60 MB). A file that exceeds them is
 * refused with LC_EFORMAT rather than trusted with the memory. */
#define LC_PARQUET_MAX_ROWS ((int64_t)1 << 25)
#define LC_PARQUET_MAX_STRING_BYTES ((size_t)1 << 31)
#define LC_PARQUET_MAX_PAGE_BYTES ((size_t)256 << 20)

/* Physical types, encodings, codecs and page types: the numbers of the
 * Parquet format (parquet.thrift). */
typedef enum {
    LC_PARQUET_BOOLEAN = 0,
    LC_PARQUET_INT32 = 1,
    LC_PARQUET_INT64 = 2,
    LC_PARQUET_INT96 = 3,
    LC_PARQUET_FLOAT = 4,
    LC_PARQUET_DOUBLE = 5,
    LC_PARQUET_BYTE_ARRAY = 6,
    LC_PARQUET_FIXED_LEN_BYTE_ARRAY = 7,
} lc_parquet_type;

enum {
    LC_PARQUET_ENC_PLAIN = 0,
    LC_PARQUET_ENC_PLAIN_DICTIONARY = 2,
    LC_PARQUET_ENC_RLE = 3,
    LC_PARQUET_ENC_BIT_PACKED = 4,
    LC_PARQUET_ENC_DELTA_BINARY_PACKED = 5,
    LC_PARQUET_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
    LC_PARQUET_ENC_DELTA_BYTE_ARRAY = 7,
    LC_PARQUET_ENC_RLE_DICTIONARY = 8,
    LC_PARQUET_ENC_BYTE_STREAM_SPLIT = 9,
};

enum {
    LC_PARQUET_CODEC_UNCOMPRESSED = 0,
    LC_PARQUET_CODEC_SNAPPY = 1,
    LC_PARQUET_CODEC_GZIP = 2,
    LC_PARQUET_CODEC_LZO = 3,
    LC_PARQUET_CODEC_BROTLI = 4,
    LC_PARQUET_CODEC_LZ4 = 5,
    LC_PARQUET_CODEC_ZSTD = 6,
    LC_PARQUET_CODEC_LZ4_RAW = 7,
};

enum {
    LC_PARQUET_PAGE_DATA = 0,
    LC_PARQUET_PAGE_INDEX = 1,
    LC_PARQUET_PAGE_DICTIONARY = 2,
    LC_PARQUET_PAGE_DATA_V2 = 3,
};

/* "PLAIN", "RLE_DICTIONARY", ... ("?" when unknown). */
const char *lc_parquet_encoding_name(int encoding);
/* "SNAPPY", "ZSTD", ... ("?" when unknown). */
const char *lc_parquet_codec_name(int codec);
/* "INT64", "BYTE_ARRAY", ... ("?" when unknown). */
const char *lc_parquet_type_name(int type);

/* Whether this build reads pages of codec: UNCOMPRESSED, SNAPPY, GZIP and
 * ZSTD always, LZ4 and LZ4_RAW when built with liblz4, BROTLI when built
 * with libbrotlidec, LZO never (codec.c). */
bool lc_parquet_codec_supported(int codec);
/* Why a codec is not read, as a sentence for a message: for LZ4, LZ4_RAW
 * and BROTLI, the library this build lacks and the Debian package that
 * brings it. */
const char *lc_parquet_codec_missing(int codec);

/* What a column reads as: integers widen to int64, floats to double. */
typedef enum {
    LC_PARQUET_KIND_NONE = 0, /* not readable (nested, repeated or another type) */
    LC_PARQUET_KIND_INT64,
    LC_PARQUET_KIND_DOUBLE,
    LC_PARQUET_KIND_STRING,
} lc_parquet_kind;

/* One leaf column of the schema, in file order. */
typedef struct lc_parquet_column_info {
    const char *name; /* the top-level field's name; for a nested leaf, its dotted path */
    lc_parquet_type type;
    lc_parquet_kind kind; /* NONE when the column cannot be read */
    bool optional;        /* nullable (max definition level 1) */
} lc_parquet_column_info;

/*
 * The values of one column in one row group. Exactly one of i64, f64 or
 * (offsets, bytes) is used, by kind. A null row has valid[i] == 0, a value of
 * 0 (or an empty string) and is otherwise ignorable.
 *
 * Zero it before first use ({0} or lc_parquet_column_init); after that,
 * lc_parquet_read_column reuses its buffers from call to call, so a reader
 * that walks row groups pays for allocation once. lc_parquet_column_fini
 * frees everything. The struct belongs to one thread at a time.
 */
typedef struct lc_parquet_column {
    lc_parquet_kind kind;
    size_t n;          /* rows */
    uint8_t *valid;    /* n bytes: 1 = value present, 0 = null */
    int64_t *i64;      /* KIND_INT64: n values */
    double *f64;       /* KIND_DOUBLE: n values */
    uint64_t *offsets; /* KIND_STRING: n + 1 offsets; row i is bytes[offsets[i], offsets[i+1]) */
    char *bytes;       /* KIND_STRING: the strings back to back, not NUL-terminated */
    size_t n_bytes;
    /* What the chunk was made of, for tests and diagnostics: bit (1 << e) for
     * every encoding e of a data page, bit (1 << t) for every page type t. */
    uint32_t data_encodings;
    uint32_t page_types;
    int codec;
    /* Capacities (private). */
    size_t cap_rows, cap_bytes;
} lc_parquet_column;

typedef struct lc_parquet_file lc_parquet_file;

/* Open path and read its footer. Errors: the file cannot be opened or read
 * (negated errno), it is too short or lacks the PAR1 magic at either end
 * (LC_EFORMAT), the footer length points outside the file (LC_ETRUNC), or the
 * metadata or schema is malformed (LC_EFORMAT, with the offset). */
int lc_parquet_open(const char *path, lc_parquet_file **out, lc_error *err);
/* Close and free; accepts NULL. */
void lc_parquet_close(lc_parquet_file *f);

/* Total rows as the footer states them. */
int64_t lc_parquet_num_rows(const lc_parquet_file *f);
size_t lc_parquet_num_row_groups(const lc_parquet_file *f);
/* Rows of row group rg (0 when rg is out of range). */
int64_t lc_parquet_row_group_rows(const lc_parquet_file *f, size_t rg);
/* Leaf columns of the schema. */
size_t lc_parquet_num_columns(const lc_parquet_file *f);
/* Column col (NULL when out of range). */
const lc_parquet_column_info *lc_parquet_column_at(const lc_parquet_file *f, size_t col);

/* The index of the readable top-level column called name; -ENOENT when there
 * is none, -ENOTSUP when there is one we cannot read (nested, repeated, or a
 * type such as BOOLEAN). */
int lc_parquet_find_column(const lc_parquet_file *f, const char *name);

/*
 * Read column col of row group rg into out (see lc_parquet_column). On error
 * out->n is 0 and its buffers are kept for reuse. Errors name the file, the
 * column, the row group and, for a page, its offset in the file. Thread-safe
 * for distinct out.
 */
int lc_parquet_read_column(const lc_parquet_file *f, size_t rg, size_t col, lc_parquet_column *out,
                           lc_error *err);

static inline void lc_parquet_column_init(lc_parquet_column *c)
{
    *c = (lc_parquet_column){0};
}
/* Free the buffers and zero c; accepts NULL. */
void lc_parquet_column_fini(lc_parquet_column *c);

/* Row i of a string column and its length. */
static inline const char *lc_parquet_string(const lc_parquet_column *c, size_t i, size_t *len)
{
    *len = (size_t)(c->offsets[i + 1] - c->offsets[i]);
    return c->bytes + c->offsets[i];
}

#endif
