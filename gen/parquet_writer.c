/*
 * parquet_writer: see parquet_writer.h. Written from the Parquet format
 * specification (parquet.thrift, the Thrift compact protocol, the encodings
 * document) and the Snappy format description.
 *
 * A file: "PAR1", the row groups' column chunks, the FileMetaData in the
 * Thrift compact protocol, its length (4 bytes little-endian), "PAR1". A
 * column chunk is a run of pages, each a Thrift PageHeader followed by its
 * (compressed) body. The footer is kept encoded as it grows: every finished
 * column chunk adds a ColumnChunk struct to its row group's, every finished
 * row group a RowGroup struct to the file's list, which pqw_close frames.
 */
#include "parquet_writer.h"

#include "format/parquet/parquet.h"
#include "format/parquet/thrift.h" /* the compact protocol's type codes */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define ZSTD_LEVEL 1 /* pyarrow's default */

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

static void buf_le(buf *b, uint64_t v, int bytes)
{
    buf_reserve(b, (size_t)bytes);
    for (int i = 0; i < bytes; i++)
        b->p[b->n++] = (uint8_t)(v >> (8 * i));
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

/* Open a struct: a field's value, a list element or a top-level struct. */
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
    tw_field(t, id, LC_THRIFT_I32);
    buf_varint(t->b, zigzag(v));
}

static void tw_i16(tw *t, int16_t id, int16_t v)
{
    tw_field(t, id, LC_THRIFT_I16);
    buf_varint(t->b, zigzag(v));
}

static void tw_i64(tw *t, int16_t id, int64_t v)
{
    tw_field(t, id, LC_THRIFT_I64);
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
    tw_field(t, id, LC_THRIFT_BINARY);
    tw_raw_binary(t, s);
}

static void tw_struct(tw *t, int16_t id)
{
    tw_field(t, id, LC_THRIFT_STRUCT);
    tw_begin(t);
}

/* A list field's header; the n elements follow. */
static void tw_list(tw *t, int16_t id, int elem_type, size_t n)
{
    tw_field(t, id, LC_THRIFT_LIST);
    if (n < 15) {
        buf_byte(t->b, (uint8_t)(n << 4 | (size_t)elem_type));
    } else {
        buf_byte(t->b, (uint8_t)(0xf0 | elem_type));
        buf_varint(t->b, n);
    }
}

/* ---- the RLE/bit-packed hybrid -------------------------------------------------- */

static size_t run_length(const uint32_t *v, size_t n, size_t i, size_t max)
{
    size_t j = i + 1;
    while (j < n && j - i < max && v[j] == v[i])
        j++;
    return j - i;
}

/* Runs of eight or more equal values as RLE runs, the rest bit-packed in
 * groups of eight (at most 63 groups a run; the last group padded with
 * zeros, which the reader never decodes as it knows the value count). */
static void put_hybrid(buf *b, const uint32_t *v, size_t n, int width)
{
    int value_bytes = (width + 7) / 8;
    size_t i = 0;
    while (i < n) {
        size_t run = run_length(v, n, i, SIZE_MAX);
        if (run >= 8) {
            buf_varint(b, (uint64_t)run << 1);
            buf_le(b, v[i], value_bytes);
            i += run;
            continue;
        }
        size_t j = i, groups = 0;
        do {
            j += 8;
            groups++;
        } while (j < n && groups < 63 && run_length(v, n, j, 8) < 8);
        buf_varint(b, (uint64_t)groups << 1 | 1);
        uint64_t acc = 0;
        int bits = 0;
        for (size_t k = i; k < i + groups * 8; k++) {
            acc |= (uint64_t)(k < n ? v[k] : 0) << bits;
            bits += width;
            while (bits >= 8) {
                buf_byte(b, (uint8_t)acc);
                acc >>= 8;
                bits -= 8;
            }
        }
        i = j < n ? j : n;
    }
}

/* Bits for dictionary indices 0..n-1; at least 1. */
static int index_width(size_t n)
{
    int w = 1;
    while (w < 32 && ((size_t)1 << w) < n)
        w++;
    return w;
}

/* ---- the writer ----------------------------------------------------------------- */

/* A dictionary entry: its key bytes in dict (after the length prefix of a
 * string), their length and hash. */
typedef struct dict_entry {
    uint64_t off;
    uint32_t len;
    uint32_t hash;
} dict_entry;

struct pqw_writer {
    char *path;
    FILE *f;
    uint64_t off;
    pqw_options opt;
    pqw_column_spec *cols;
    size_t n_cols;
    ZSTD_CCtx *zstd;
    int rc; /* the first write error */
    lc_error err;
    uint64_t pages;

    /* Footer: the finished row groups, the finished chunks of this one. */
    buf row_groups;
    size_t n_row_groups;
    int64_t rows;
    buf chunks;
    size_t col; /* the column being written */
    int64_t rg_rows, rg_uncompressed, rg_compressed;
    uint64_t rg_start;

    /* The column chunk being written. */
    bool in_chunk, dict_mode;
    uint64_t chunk_start;
    int64_t chunk_rows, chunk_uncompressed, chunk_compressed;
    int64_t data_page_offset, dict_page_offset; /* -1: none yet */
    uint32_t encodings;                         /* bit (1 << e) */
    buf pending; /* dictionary-encoded pages before their dictionary page */

    /* The page being filled. */
    uint32_t *levels; /* one a row: 1 value, 0 null */
    uint32_t *idx;    /* dictionary mode: one a value */
    size_t page_rows, page_values, cap_rows;
    buf vals; /* PLAIN mode: the values */

    /* The dictionary: PLAIN-encoded entries, and a hash table of entry + 1. */
    buf dict;
    dict_entry *entries;
    size_t n_entries, cap_entries;
    uint32_t *table;
    size_t table_cap; /* a power of two */

    /* Page assembly. */
    buf body, comp, head;
};

pqw_options pqw_default_options(void)
{
    return (pqw_options){
        .codec = LC_PARQUET_CODEC_SNAPPY,
        .dictionary = true,
        .page_bytes = PQW_PAGE_BYTES,
        .page_rows = PQW_PAGE_ROWS,
        .dictionary_bytes = PQW_DICTIONARY_BYTES,
    };
}

static void write_failed(pqw_writer *w)
{
    int e = errno ? errno : EIO;
    w->rc = lc_error_set(&w->err, -e, "%s: cannot write: %s", w->path, strerror(e));
}

static void out_write(pqw_writer *w, const void *p, size_t n)
{
    errno = 0;
    if (w->rc == 0 && n && fwrite(p, 1, n, w->f) != n)
        write_failed(w);
    w->off += n;
}

static int report(const pqw_writer *w, lc_error *err)
{
    if (w->rc < 0 && err)
        *err = w->err;
    return w->rc;
}

int pqw_create(const char *path, const pqw_column_spec *cols, size_t n_cols, const pqw_options *opt,
               pqw_writer **out, lc_error *err)
{
    *out = NULL;
    if (opt->codec != LC_PARQUET_CODEC_UNCOMPRESSED && opt->codec != LC_PARQUET_CODEC_SNAPPY &&
        opt->codec != LC_PARQUET_CODEC_ZSTD)
        lc_fatal("parquet_writer: codec %d is not one it writes", opt->codec);
    if (n_cols == 0 || opt->page_bytes == 0 || opt->page_rows == 0)
        lc_fatal("parquet_writer: no columns, or a page limit of 0");
    FILE *f = fopen(path, "wb");
    if (!f)
        return lc_error_set(err, -errno, "%s: cannot create: %s", path, strerror(errno));
    pqw_writer *w = lc_xcalloc(1, sizeof *w);
    w->path = lc_xstrdup(path);
    w->f = f;
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    w->opt = *opt;
    w->opt.created_by = lc_xstrdup(opt->created_by ? opt->created_by : "lcmon parquet_writer");
    w->cols = lc_xcalloc(n_cols, sizeof *w->cols);
    for (size_t c = 0; c < n_cols; c++)
        w->cols[c] = (pqw_column_spec){.name = lc_xstrdup(cols[c].name), .type = cols[c].type};
    w->n_cols = n_cols;
    if (opt->codec == LC_PARQUET_CODEC_ZSTD && !(w->zstd = ZSTD_createCCtx()))
        lc_fatal("out of memory creating a zstd context");
    out_write(w, "PAR1", 4);
    *out = w;
    return report(w, err);
}

uint64_t pqw_bytes(const pqw_writer *w)
{
    return w->off;
}

uint64_t pqw_pages(const pqw_writer *w)
{
    return w->pages;
}

/* The compressed form of p[0..n): p itself when uncompressed. */
static const uint8_t *compress(pqw_writer *w, const uint8_t *p, size_t n, size_t *out_n)
{
    w->comp.n = 0;
    if (w->opt.codec == LC_PARQUET_CODEC_SNAPPY) {
        buf_reserve(&w->comp, pqw_snappy_bound(n));
        *out_n = pqw_snappy_compress(p, n, w->comp.p);
        return w->comp.p;
    }
    if (w->opt.codec == LC_PARQUET_CODEC_ZSTD) {
        size_t bound = ZSTD_compressBound(n);
        buf_reserve(&w->comp, bound);
        size_t z = ZSTD_compressCCtx(w->zstd, w->comp.p, bound, p, n, ZSTD_LEVEL);
        if (ZSTD_isError(z))
            lc_fatal("zstd: %s", ZSTD_getErrorName(z));
        *out_n = z;
        return w->comp.p;
    }
    *out_n = n;
    return p;
}

/* Compress w->body and emit it as a page: into dest, or the file when dest
 * is NULL. type is a PageHeader type; for a data page values counts its
 * rows, for a dictionary page its entries. */
static void emit_page(pqw_writer *w, int type, size_t values, int encoding, buf *dest)
{
    size_t data_len;
    const uint8_t *data = compress(w, w->body.p, w->body.n, &data_len);
    if (w->body.n > INT32_MAX || data_len > INT32_MAX || values > INT32_MAX)
        lc_fatal("parquet_writer: a page of %zu bytes is too large for Parquet", w->body.n);
    w->head.n = 0;
    tw t = {.b = &w->head};
    tw_begin(&t); /* PageHeader */
    tw_i32(&t, 1, type);
    tw_i32(&t, 2, (int32_t)w->body.n);
    tw_i32(&t, 3, (int32_t)data_len);
    if (type == LC_PARQUET_PAGE_DICTIONARY) {
        tw_struct(&t, 7); /* DictionaryPageHeader */
        tw_i32(&t, 1, (int32_t)values);
        tw_i32(&t, 2, LC_PARQUET_ENC_PLAIN);
    } else {
        tw_struct(&t, 5); /* DataPageHeader */
        tw_i32(&t, 1, (int32_t)values);
        tw_i32(&t, 2, encoding);
        tw_i32(&t, 3, LC_PARQUET_ENC_RLE); /* definition levels */
        tw_i32(&t, 4, LC_PARQUET_ENC_RLE); /* repetition levels (none) */
    }
    tw_end(&t);
    tw_end(&t);
    if (dest) {
        buf_put(dest, w->head.p, w->head.n);
        buf_put(dest, data, data_len);
    } else {
        out_write(w, w->head.p, w->head.n);
        out_write(w, data, data_len);
    }
    w->chunk_uncompressed += (int64_t)(w->head.n + w->body.n);
    w->chunk_compressed += (int64_t)(w->head.n + data_len);
    w->encodings |= 1u << encoding;
    w->pages++;
}

/* Close the page being filled (nothing when it is empty). A dictionary-mode
 * page waits in pending for the dictionary page. */
static void flush_page(pqw_writer *w)
{
    if (w->page_rows == 0)
        return;
    /* v1: definition levels with their 4-byte length, then the values. */
    w->body.n = 0;
    buf_le(&w->body, 0, 4);
    put_hybrid(&w->body, w->levels, w->page_rows, 1);
    size_t lv = w->body.n - 4;
    for (int i = 0; i < 4; i++)
        w->body.p[i] = (uint8_t)(lv >> (8 * i));
    if (w->dict_mode) {
        int width = index_width(w->n_entries);
        buf_byte(&w->body, (uint8_t)width);
        put_hybrid(&w->body, w->idx, w->page_values, width);
        emit_page(w, LC_PARQUET_PAGE_DATA, w->page_rows, LC_PARQUET_ENC_RLE_DICTIONARY,
                  &w->pending);
    } else {
        buf_put(&w->body, w->vals.p, w->vals.n);
        if (w->data_page_offset < 0)
            w->data_page_offset = (int64_t)w->off;
        emit_page(w, LC_PARQUET_PAGE_DATA, w->page_rows, LC_PARQUET_ENC_PLAIN, NULL);
    }
    w->page_rows = 0;
    w->page_values = 0;
    w->vals.n = 0;
}

/* Write the dictionary page, then the pages that waited for it; the chunk
 * carries on in PLAIN (after a fallback) or ends. */
static void write_dictionary(pqw_writer *w)
{
    w->dict_page_offset = (int64_t)w->off;
    w->body.n = 0;
    buf_put(&w->body, w->dict.p, w->dict.n);
    emit_page(w, LC_PARQUET_PAGE_DICTIONARY, w->n_entries, LC_PARQUET_ENC_PLAIN, NULL);
    w->data_page_offset = (int64_t)w->off;
    out_write(w, w->pending.p, w->pending.n);
    w->pending.n = 0;
    w->dict_mode = false;
}

static void begin_chunk(pqw_writer *w)
{
    if (w->col >= w->n_cols)
        lc_fatal("parquet_writer: a value after the last column of the row group");
    if (w->col == 0) {
        w->rg_start = w->off;
        w->rg_uncompressed = w->rg_compressed = 0;
        w->chunks.n = 0;
    }
    w->in_chunk = true;
    w->dict_mode = w->opt.dictionary;
    w->chunk_start = w->off;
    w->chunk_rows = w->chunk_uncompressed = w->chunk_compressed = 0;
    w->data_page_offset = w->dict_page_offset = -1;
    w->encodings = 1u << LC_PARQUET_ENC_RLE;
    w->pending.n = 0;
    w->dict.n = 0;
    w->n_entries = 0;
    if (w->table)
        memset(w->table, 0, w->table_cap * sizeof *w->table);
}

/* Start a row of the current column, whose type must be type. */
static void begin_row(pqw_writer *w, int type, bool valid)
{
    if (!w->in_chunk)
        begin_chunk(w);
    if (type >= 0 && w->cols[w->col].type != (pqw_type)type)
        lc_fatal("parquet_writer: a value of the wrong type for column '%s'", w->cols[w->col].name);
    if (w->page_rows == w->cap_rows) {
        w->cap_rows = w->cap_rows ? 2 * w->cap_rows : 4096;
        w->levels = lc_xrealloc(w->levels, w->cap_rows * sizeof *w->levels);
        w->idx = lc_xrealloc(w->idx, w->cap_rows * sizeof *w->idx);
    }
    w->levels[w->page_rows++] = valid;
    w->chunk_rows++;
}

/* Close the page when it is full: by rows, or by its estimated size (the
 * definition levels at a bit a row, plus the values as they will be
 * encoded). */
static void end_row(pqw_writer *w)
{
    size_t values =
        w->dict_mode ? (w->page_values * (size_t)index_width(w->n_entries) + 7) / 8 : w->vals.n;
    if (w->page_rows >= w->opt.page_rows || values + w->page_rows / 8 >= w->opt.page_bytes)
        flush_page(w);
}

static uint32_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ n;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    uint64_t v = 0;
    memcpy(&v, p, n);
    h = (h ^ v) * 0xc4ceb9fe1a85ec53u;
    return (uint32_t)(h ^ h >> 29);
}

static void table_insert(pqw_writer *w, uint32_t entry)
{
    size_t mask = w->table_cap - 1;
    size_t at = w->entries[entry].hash & mask;
    while (w->table[at])
        at = (at + 1) & mask;
    w->table[at] = entry + 1;
}

/* The dictionary index of the key p[0..n) (its PLAIN encoding is prefix then
 * p), adding it when it is new. */
static uint32_t dict_index(pqw_writer *w, const void *p, size_t n, bool prefix)
{
    uint32_t h = hash_bytes(p, n);
    if (w->table_cap) {
        size_t mask = w->table_cap - 1;
        for (size_t at = h & mask; w->table[at]; at = (at + 1) & mask) {
            const dict_entry *e = &w->entries[w->table[at] - 1];
            if (e->hash == h && e->len == n && memcmp(w->dict.p + e->off, p, n) == 0)
                return w->table[at] - 1;
        }
    }
    if (n > UINT32_MAX || w->n_entries >= INT32_MAX)
        lc_fatal("parquet_writer: a dictionary entry of %zu bytes or too many entries", n);
    if (w->n_entries == w->cap_entries) {
        w->cap_entries = w->cap_entries ? 2 * w->cap_entries : 1024;
        w->entries = lc_xrealloc(w->entries, w->cap_entries * sizeof *w->entries);
    }
    if (prefix)
        buf_le(&w->dict, n, 4);
    uint32_t id = (uint32_t)w->n_entries++;
    w->entries[id] = (dict_entry){.off = w->dict.n, .len = (uint32_t)n, .hash = h};
    buf_put(&w->dict, p, n);
    if (2 * w->n_entries > w->table_cap) {
        free(w->table);
        w->table_cap = w->table_cap ? 2 * w->table_cap : 4096;
        w->table = lc_xcalloc(w->table_cap, sizeof *w->table);
        for (uint32_t e = 0; e < w->n_entries; e++)
            table_insert(w, e);
    } else {
        table_insert(w, id);
    }
    return id;
}

/* One value, PLAIN-encoded as prefix (a 4-byte length) then p[0..n). */
static void put_value(pqw_writer *w, int type, const void *p, size_t n, bool prefix)
{
    begin_row(w, type, true);
    if (w->dict_mode) {
        w->idx[w->page_values++] = dict_index(w, p, n, prefix);
        if (w->dict.n >= w->opt.dictionary_bytes) {
            /* Fallback: this page ends the dictionary-encoded part. */
            flush_page(w);
            write_dictionary(w);
        }
    } else {
        if (prefix)
            buf_le(&w->vals, n, 4);
        buf_put(&w->vals, p, n);
        w->page_values++;
    }
    end_row(w);
}

void pqw_string(pqw_writer *w, const void *s, size_t len)
{
    if (len > UINT32_MAX)
        lc_fatal("parquet_writer: a string of %zu bytes", len);
    put_value(w, PQW_STRING, s, len, true);
}

/* A fixed-width value of 8 bytes, little-endian. */
static void put_u64(pqw_writer *w, int type, uint64_t bits)
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(bits >> (8 * i));
    put_value(w, type, le, 8, false);
}

void pqw_int64(pqw_writer *w, int64_t v)
{
    put_u64(w, PQW_INT64, (uint64_t)v);
}

void pqw_double(pqw_writer *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_u64(w, PQW_DOUBLE, bits);
}

void pqw_null(pqw_writer *w)
{
    begin_row(w, -1, false);
    end_row(w);
}

static int physical_type(pqw_type t)
{
    return t == PQW_STRING  ? LC_PARQUET_BYTE_ARRAY
           : t == PQW_INT64 ? LC_PARQUET_INT64
                            : LC_PARQUET_DOUBLE;
}

int pqw_end_column(pqw_writer *w, lc_error *err)
{
    if (!w->in_chunk)
        lc_fatal("parquet_writer: a column without rows");
    flush_page(w);
    if (w->dict_mode)
        write_dictionary(w);
    if (w->col == 0)
        w->rg_rows = w->chunk_rows;
    else if (w->chunk_rows != w->rg_rows)
        lc_fatal("parquet_writer: column '%s' has %lld rows, the first column %lld",
                 w->cols[w->col].name, (long long)w->chunk_rows, (long long)w->rg_rows);

    const pqw_column_spec *c = &w->cols[w->col];
    tw t = {.b = &w->chunks};
    tw_begin(&t); /* ColumnChunk */
    /* file_offset: deprecated; where the column metadata would follow the
     * chunk, as parquet-cpp writes it. */
    tw_i64(&t, 2, (int64_t)w->chunk_start + w->chunk_compressed);
    tw_struct(&t, 3); /* ColumnMetaData */
    tw_i32(&t, 1, physical_type(c->type));
    size_t n_enc = 0;
    for (int e = 0; e < 32; e++)
        n_enc += (w->encodings >> e) & 1;
    tw_list(&t, 2, LC_THRIFT_I32, n_enc);
    for (int e = 0; e < 32; e++)
        if ((w->encodings >> e) & 1)
            buf_varint(t.b, zigzag(e));
    tw_list(&t, 3, LC_THRIFT_BINARY, 1);
    tw_raw_binary(&t, c->name);
    tw_i32(&t, 4, w->opt.codec);
    tw_i64(&t, 5, w->chunk_rows);
    tw_i64(&t, 6, w->chunk_uncompressed);
    tw_i64(&t, 7, w->chunk_compressed);
    tw_i64(&t, 9, w->data_page_offset);
    if (w->dict_page_offset >= 0)
        tw_i64(&t, 11, w->dict_page_offset);
    tw_end(&t);
    tw_end(&t);

    w->rg_uncompressed += w->chunk_uncompressed;
    w->rg_compressed += w->chunk_compressed;
    w->in_chunk = false;
    w->col++;
    return report(w, err);
}

int pqw_end_row_group(pqw_writer *w, lc_error *err)
{
    if (w->in_chunk || w->col != w->n_cols)
        lc_fatal("parquet_writer: a row group ended with %zu of its %zu columns", w->col,
                 w->n_cols);
    tw t = {.b = &w->row_groups};
    tw_begin(&t); /* RowGroup */
    tw_list(&t, 1, LC_THRIFT_STRUCT, w->n_cols);
    buf_put(t.b, w->chunks.p, w->chunks.n);
    tw_i64(&t, 2, w->rg_uncompressed);
    tw_i64(&t, 3, w->rg_rows);
    tw_i64(&t, 5, (int64_t)w->rg_start);
    tw_i64(&t, 6, w->rg_compressed);
    if (w->n_row_groups <= INT16_MAX)
        tw_i16(&t, 7, (int16_t)w->n_row_groups);
    tw_end(&t);
    w->n_row_groups++;
    w->rows += w->rg_rows;
    w->col = 0;
    return report(w, err);
}

static void write_schema(const pqw_writer *w, tw *t)
{
    tw_list(t, 2, LC_THRIFT_STRUCT, 1 + w->n_cols);
    tw_begin(t); /* root */
    tw_binary(t, 4, "schema");
    tw_i32(t, 5, (int32_t)w->n_cols);
    tw_end(t);
    for (size_t c = 0; c < w->n_cols; c++) {
        tw_begin(t);
        tw_i32(t, 1, physical_type(w->cols[c].type));
        tw_i32(t, 3, 1); /* OPTIONAL */
        tw_binary(t, 4, w->cols[c].name);
        if (w->cols[c].type == PQW_STRING) {
            tw_i32(t, 6, 0);  /* converted type UTF8 */
            tw_struct(t, 10); /* LogicalType */
            tw_struct(t, 1);  /* STRING: StringType {} */
            tw_end(t);
            tw_end(t);
        }
        tw_end(t);
    }
}

static void writer_free(pqw_writer *w)
{
    for (size_t c = 0; c < w->n_cols; c++)
        free((char *)w->cols[c].name);
    free(w->cols);
    free((char *)w->opt.created_by);
    free(w->path);
    ZSTD_freeCCtx(w->zstd);
    buf *bufs[] = {&w->row_groups, &w->chunks, &w->pending, &w->vals,
                   &w->dict,       &w->body,   &w->comp,    &w->head};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        buf_free(bufs[i]);
    free(w->levels);
    free(w->idx);
    free(w->entries);
    free(w->table);
    free(w);
}

int pqw_close(pqw_writer *w, lc_error *err)
{
    if (w->in_chunk || w->col != 0)
        lc_fatal("parquet_writer: closed inside a row group");
    buf meta = {0};
    tw t = {.b = &meta};
    tw_begin(&t);     /* FileMetaData */
    tw_i32(&t, 1, 2); /* version, as pyarrow's format 2.x files say */
    write_schema(w, &t);
    tw_i64(&t, 3, w->rows);
    tw_list(&t, 4, LC_THRIFT_STRUCT, w->n_row_groups);
    buf_put(t.b, w->row_groups.p, w->row_groups.n);
    tw_binary(&t, 6, w->opt.created_by);
    tw_end(&t);
    if (meta.n > UINT32_MAX)
        lc_fatal("parquet_writer: file metadata of %zu bytes", meta.n);
    out_write(w, meta.p, meta.n);
    uint8_t tail[8] = {0, 0, 0, 0, 'P', 'A', 'R', '1'};
    for (int i = 0; i < 4; i++)
        tail[i] = (uint8_t)(meta.n >> (8 * i));
    out_write(w, tail, sizeof tail);
    buf_free(&meta);
    errno = 0;
    if ((fflush(w->f) != 0 || ferror(w->f)) && w->rc == 0)
        write_failed(w);
    if (fclose(w->f) != 0 && w->rc == 0)
        write_failed(w);
    int rc = report(w, err);
    writer_free(w);
    return rc;
}
