/*
 * parquet/internal: what the three parts of the Parquet reader share, and
 * nothing else includes. parquet.c opens a file (footer, Thrift metadata,
 * schema); parquet_read.c reads a column chunk (page headers, codecs,
 * levels, pages); parquet_values.c decodes the values of a page (plain,
 * dictionary, delta, byte-stream-split) into the output column.
 */
#ifndef LC_FORMAT_PARQUET_INTERNAL_H
#define LC_FORMAT_PARQUET_INTERNAL_H

#include "core/error.h"
#include "format/parquet/parquet.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

/* ---- the open file (parquet.c) ---- */

typedef struct pq_leaf {
    lc_parquet_column_info info;
    char *name;  /* owned; info.name points here */
    char *top;   /* owned: name of the top-level field this leaf belongs to */
    int max_def; /* 0 required, 1 optional (flat leaves) */
    bool flat;   /* a direct child of the root, not repeated */
} pq_leaf;

typedef struct pq_column_chunk {
    bool has_meta; /* ColumnMetaData present */
    bool external; /* file_path set: the chunk lives in another file */
    int type;      /* physical type the chunk claims */
    int codec;
    int64_t num_values;
    int64_t total_compressed;
    int64_t data_off;
    int64_t dict_off; /* 0 when unset */
} pq_column_chunk;

typedef struct pq_row_group {
    int64_t rows;
    size_t n_chunks;
    pq_column_chunk *chunks;
} pq_row_group;

struct lc_parquet_file {
    char *path;
    int fd;
    uint64_t size;
    uint64_t meta_start; /* first byte of the footer metadata */
    int64_t num_rows;
    pq_leaf *leaves;
    size_t n_leaves;
    pq_row_group *rgs;
    size_t n_rgs;
};

/* Grow *p (of *cap elements of elem bytes) to hold need; doubles. */
static inline void *pq_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 4;
    while (c < need)
        c *= 2;
    p = lc_xrealloc(p, c * elem);
    *cap = c;
    return p;
}

/* pread exactly n bytes at off: 0, LC_ETRUNC at the end of the file, or a
 * negated errno. */
int pq_pread_full(int fd, void *buf, size_t n, uint64_t off);

/* ---- reading a column chunk (parquet_read.c) ---- */

#define PQ_BATCH 1024

typedef struct pq_page_header {
    int type;
    int32_t uncompressed, compressed;
    /* v1 data page */
    bool has_v1;
    int32_t v1_values;
    int v1_encoding, v1_def_encoding;
    /* dictionary page */
    bool has_dict;
    int32_t dict_values;
    int dict_encoding;
    /* v2 data page */
    bool has_v2;
    int32_t v2_values, v2_nulls, v2_rows;
    int v2_encoding;
    int32_t v2_def_len, v2_rep_len;
    bool v2_compressed;
} pq_page_header;

typedef struct pq_read {
    const lc_parquet_file *f;
    size_t rg, col;
    const pq_leaf *leaf;
    const pq_column_chunk *chunk;
    lc_parquet_column *out;
    lc_error *err;
    uint64_t page_off; /* file offset of the page being read; 0 before the first */
    int width;         /* bytes of a fixed-width physical value */
    /* Decompression output, reused page to page. */
    uint8_t *page;
    size_t page_cap;
    ZSTD_DCtx *zstd;
    /* Integers decoded by the delta encodings. */
    int64_t *scratch;
    size_t scratch_cap;
    uint32_t idx[PQ_BATCH];
    /* The dictionary, in the output's representation. */
    bool have_dict;
    size_t dict_n;
    int64_t *dict_i64;
    double *dict_f64;
    uint64_t *dict_off;
    char *dict_bytes;
} pq_read;

/* Fail the read with a message naming the file, column, row group and
 * page; returns code. */
int pq_read_fail(pq_read *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The values of an encoding are malformed: why. */
int pq_decode_fail(pq_read *r, int encoding, const char *why);

/* ---- values (parquet_values.c) ---- */

/* Room in the output for rows more rows. */
void pq_reserve_rows(pq_read *r, size_t rows);
int pq_reserve_bytes(pq_read *r, uint64_t more);
int pq_put_string(pq_read *r, size_t base, size_t k, const void *s, size_t len);
int64_t *pq_scratch(pq_read *r, size_t n);
int pq_read_dictionary(pq_read *r, const pq_page_header *h, const uint8_t *p, size_t n);
/* Decode n values of encoding at p into the output densely from row base,
 * nn of them present. */
int pq_decode_values(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base, size_t nn);
/* Spread nn dense values over the n rows from base, by the validity bytes. */
void pq_spread(pq_read *r, size_t base, size_t n, size_t nn);

#endif
