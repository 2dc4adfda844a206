/*
 * parquet_writer: a small Parquet writer for the tests and the benchmark data
 * (bench/parquet_gen.c), written from the format specification
 * (parquet.thrift, the Thrift compact protocol and the encodings document).
 *
 * What it writes is what pyarrow writes with its defaults, for flat tables:
 *
 *   - every column OPTIONAL (nullable): BYTE_ARRAY strings (UTF8 / STRING),
 *     INT64 or DOUBLE; nulls through definition levels in the RLE/bit-packed
 *     hybrid (bit width 1);
 *   - data pages v1 (levels and values compressed together), closed when
 *     their estimated size reaches page_bytes or their rows page_rows;
 *   - dictionary encoding: per column chunk a PLAIN dictionary page, then
 *     RLE_DICTIONARY pages of indices; once the dictionary's PLAIN size
 *     reaches dictionary_bytes the chunk falls back to PLAIN pages for the
 *     rest of its values (the page being filled is closed first). Without
 *     dictionary encoding every data page is PLAIN;
 *   - codecs UNCOMPRESSED, SNAPPY (the compressor below) or ZSTD (level 1).
 *
 * Not written: statistics, page indexes, key-value metadata (pyarrow's
 * ARROW:schema), data pages v2, other encodings.
 *
 * Use: pqw_create, then per row group every column in schema order: its
 * values (pqw_string, pqw_int64, pqw_double, pqw_null), then pqw_end_column;
 * pqw_end_row_group; finally pqw_close, which writes the footer. The file is
 * written page by page as it goes: a chunk's dictionary-encoded pages wait in
 * memory only until its dictionary page is written. Every column of a row
 * group must get the same number of rows, at least one; a value of the wrong
 * type for its column or a call out of order is a bug (lc_fatal).
 *
 * Errors: writing the file is the only thing that fails. The first failure
 * is kept, later writes are skipped, and pqw_end_column, pqw_end_row_group
 * and pqw_close return it (a negated errno, the message naming the file).
 * pqw_close always frees the writer; the caller removes a failed file.
 * One thread at a time per writer.
 */
#ifndef LC_TEST_PARQUET_WRITER_H
#define LC_TEST_PARQUET_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* pyarrow's defaults. */
#define PQW_PAGE_BYTES ((size_t)1 << 20)
#define PQW_PAGE_ROWS ((size_t)20000)
#define PQW_DICTIONARY_BYTES ((size_t)1 << 20)

typedef enum {
    PQW_STRING, /* BYTE_ARRAY, UTF8 */
    PQW_INT64,
    PQW_DOUBLE,
} pqw_type;

typedef struct pqw_column_spec {
    const char *name;
    pqw_type type;
} pqw_column_spec;

typedef struct pqw_options {
    int codec;               /* LC_PARQUET_CODEC_UNCOMPRESSED, _SNAPPY or _ZSTD */
    bool dictionary;         /* dictionary encoding with the PLAIN fallback */
    size_t page_bytes;       /* a data page is closed at this estimated size ... */
    size_t page_rows;        /* ... or at this many rows */
    size_t dictionary_bytes; /* fall back to PLAIN at this dictionary size */
    const char *created_by;  /* NULL: "lcmon parquet_writer" */
} pqw_options;

/* pyarrow's defaults: SNAPPY, dictionary, the limits above. */
pqw_options pqw_default_options(void);

typedef struct pqw_writer pqw_writer;

/* Create path (truncating it) for a table of the n_cols columns cols (their
 * names are copied); write the leading magic. */
int pqw_create(const char *path, const pqw_column_spec *cols, size_t n_cols, const pqw_options *opt,
               pqw_writer **out, lc_error *err);

/* The next row of the current column: a value, or a null. */
void pqw_string(pqw_writer *w, const void *s, size_t len);
void pqw_int64(pqw_writer *w, int64_t v);
void pqw_double(pqw_writer *w, double v);
void pqw_null(pqw_writer *w);

/* Finish the current column's chunk: its last pages (and its dictionary). */
int pqw_end_column(pqw_writer *w, lc_error *err);
/* Finish the row group once every column is finished. */
int pqw_end_row_group(pqw_writer *w, lc_error *err);
/* Write the footer, close the file and free w (also on error). Only between
 * row groups. */
int pqw_close(pqw_writer *w, lc_error *err);

/* Bytes written so far, pages written so far. */
uint64_t pqw_bytes(const pqw_writer *w);
uint64_t pqw_pages(const pqw_writer *w);

/*
 * Snappy, the raw block format: the uncompressed length as a varint, then
 * literals and copies found by greedy matching of 4-byte sequences through a
 * hash table, in fragments of 64 KiB (so that every copy offset fits two
 * bytes). out must hold pqw_snappy_bound(n) bytes; returns the length
 * written. n must be below 2^32.
 */
size_t pqw_snappy_bound(size_t n);
size_t pqw_snappy_compress(const uint8_t *in, size_t n, uint8_t *out);

#endif
