/*
 * parquet_read: reading one column chunk of one row group (see parquet.c's
 * comment for the walk): page headers, the codecs, definition levels, v1
 * and v2 data pages, and the checks that keep a chunk inside its file.
 */
#include "format/parquet/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gzip.h"
#include "format/parquet/codec.h"
#include "format/parquet/parquet_decode.h"
#include "format/parquet/snappy.h"
#include "format/parquet/thrift.h"

/* ---- reading a column chunk ----------------------------------------------- */

int pq_read_fail(pq_read *r, int code, const char *fmt, ...)
{
    char msg[LC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->page_off)
        return lc_error_set(r->err, code, "%s: column '%s', row group %zu, page at offset %llu: %s",
                            r->f->path, r->leaf->name, r->rg, (unsigned long long)r->page_off, msg);
    return lc_error_set(r->err, code, "%s: column '%s', row group %zu: %s", r->f->path,
                        r->leaf->name, r->rg, msg);
}

int pq_decode_fail(pq_read *r, int encoding, const char *why)
{
    return pq_read_fail(r, LC_EFORMAT, "%s values: %s", lc_parquet_encoding_name(encoding), why);
}

static void read_fini(pq_read *r)
{
    free(r->page);
    free(r->scratch);
    free(r->dict_i64);
    free(r->dict_f64);
    free(r->dict_off);
    free(r->dict_bytes);
    if (r->zstd)
        ZSTD_freeDCtx(r->zstd);
}

static int parse_page_header(pq_read *r, const uint8_t *p, size_t n, pq_page_header *h,
                             size_t *used)
{
    *h = (pq_page_header){.type = -1, .uncompressed = -1, .compressed = -1, .v2_compressed = true};
    lc_thrift t;
    lc_thrift_init(&t, p, n);
    int16_t last = 0, id;
    int ty;
    lc_thrift_begin(&t);
    while (lc_thrift_field(&t, &last, &id, &ty)) {
        switch (id) {
        case 1:
            h->type = lc_thrift_i32(&t, ty);
            break;
        case 2:
            h->uncompressed = lc_thrift_i32(&t, ty);
            break;
        case 3:
            h->compressed = lc_thrift_i32(&t, ty);
            break;
        case 5:
        case 7:
        case 8: {
            if (ty != LC_THRIFT_STRUCT) {
                lc_thrift_fail(&t, "page sub-header is not a struct");
                break;
            }
            lc_thrift_begin(&t);
            int16_t l2 = 0, id2;
            int ty2;
            unsigned seen = 0;
            while (lc_thrift_field(&t, &l2, &id2, &ty2)) {
                if (id2 > 0 && id2 < 32)
                    seen |= 1u << id2;
                if (id == 5 && id2 == 1)
                    h->v1_values = lc_thrift_i32(&t, ty2);
                else if (id == 5 && id2 == 2)
                    h->v1_encoding = lc_thrift_i32(&t, ty2);
                else if (id == 5 && id2 == 3)
                    h->v1_def_encoding = lc_thrift_i32(&t, ty2);
                else if (id == 7 && id2 == 1)
                    h->dict_values = lc_thrift_i32(&t, ty2);
                else if (id == 7 && id2 == 2)
                    h->dict_encoding = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 1)
                    h->v2_values = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 2)
                    h->v2_nulls = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 3)
                    h->v2_rows = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 4)
                    h->v2_encoding = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 5)
                    h->v2_def_len = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 6)
                    h->v2_rep_len = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 7)
                    h->v2_compressed = lc_thrift_bool(&t, ty2);
                else
                    lc_thrift_skip(&t, ty2);
            }
            lc_thrift_end(&t);
            unsigned need = id == 5 ? 0xe : id == 7 ? 0x6 : 0x7e;
            if (lc_thrift_ok(&t) && (seen & need) != need)
                lc_thrift_fail(&t, "page sub-header lacks a required field");
            if (id == 5)
                h->has_v1 = true;
            else if (id == 7)
                h->has_dict = true;
            else
                h->has_v2 = true;
            break;
        }
        default:
            lc_thrift_skip(&t, ty);
        }
    }
    lc_thrift_end(&t);
    if (lc_thrift_ok(&t) && (h->type < 0 || h->uncompressed < 0 || h->compressed < 0))
        lc_thrift_fail(&t, "page header lacks its type or sizes");
    if (!lc_thrift_ok(&t))
        return pq_read_fail(r, LC_EFORMAT, "malformed page header at byte %zu: %s", t.error_at,
                            lc_thrift_error(&t));
    *used = lc_thrift_pos(&t);
    return 0;
}

/* Decompress in[0..in_len) into exactly out_len bytes at *outp (r->page,
 * grown as needed; or in itself when there is nothing to do). */
static int decompress(pq_read *r, const uint8_t *in, size_t in_len, size_t out_len,
                      const uint8_t **outp)
{
    int codec = r->chunk->codec;
    if (codec == LC_PARQUET_CODEC_UNCOMPRESSED || (in_len == 0 && out_len == 0)) {
        if (in_len != out_len)
            return pq_read_fail(r, LC_EFORMAT,
                                "uncompressed page of %zu bytes claims to hold %zu bytes", in_len,
                                out_len);
        *outp = in;
        return 0;
    }
    if (out_len > LC_PARQUET_MAX_PAGE_BYTES)
        return pq_read_fail(r, LC_EFORMAT, "page decompresses to %zu bytes, above the %zu limit",
                            out_len, LC_PARQUET_MAX_PAGE_BYTES);
    /* Where the compressed data states its own size, check it before
     * allocating for the size the page header claims. */
    if (codec == LC_PARQUET_CODEC_SNAPPY) {
        size_t announced;
        lc_error e;
        if (lc_snappy_uncompressed_length(in, in_len, &announced, &e) < 0)
            return pq_read_fail(r, LC_EFORMAT, "%s", e.msg);
        if (announced != out_len)
            return pq_read_fail(r, LC_EFORMAT,
                                "SNAPPY page decompresses to %zu bytes, the header says %zu",
                                announced, out_len);
    } else if (codec == LC_PARQUET_CODEC_ZSTD) {
        /* The first frame's size; a page of several frames is rare, and the
         * exact total is checked after decompression anyway. */
        unsigned long long z = ZSTD_getFrameContentSize(in, in_len);
        if (z == ZSTD_CONTENTSIZE_ERROR)
            return pq_read_fail(r, LC_EFORMAT, "corrupt ZSTD page (not a zstd frame)");
        if (z != ZSTD_CONTENTSIZE_UNKNOWN && z > out_len)
            return pq_read_fail(r, LC_EFORMAT,
                                "ZSTD page decompresses to %llu bytes, the header says %zu", z,
                                out_len);
    } else if ((codec == LC_PARQUET_CODEC_LZ4_RAW || codec == LC_PARQUET_CODEC_LZ4) &&
               out_len / LC_PQ_LZ4_MAX_RATIO > in_len) {
        return pq_read_fail(r, LC_EFORMAT,
                            "%s page of %zu bytes cannot decompress to the %zu bytes its header "
                            "gives (LZ4 expands at most %dx)",
                            lc_parquet_codec_name(codec), in_len, out_len, LC_PQ_LZ4_MAX_RATIO);
    }
    r->page = pq_grow(r->page, &r->page_cap, out_len ? out_len : 1, 1);
    *outp = r->page;
    /* The codecs whose decoders report in an lc_error of their own. */
    int (*decode)(const uint8_t *, size_t, uint8_t *, size_t, lc_error *) =
        codec == LC_PARQUET_CODEC_SNAPPY    ? lc_snappy_decompress
        : codec == LC_PARQUET_CODEC_LZ4_RAW ? lc_pq_lz4_raw
        : codec == LC_PARQUET_CODEC_LZ4     ? lc_pq_lz4
        : codec == LC_PARQUET_CODEC_BROTLI  ? lc_pq_brotli
                                            : NULL;
    lc_error e;
    lc_error_clear(&e);
    if (decode) {
        int rc = decode(in, in_len, r->page, out_len, &e);
        return rc < 0 ? pq_read_fail(r, rc, "%s", e.msg) : 0;
    }
    switch (codec) {
    case LC_PARQUET_CODEC_GZIP:
        if (lc_inflate_exact(in, in_len, r->page, out_len, &e) < 0)
            return pq_read_fail(r, LC_EFORMAT, "GZIP page %s", e.msg);
        return 0;
    case LC_PARQUET_CODEC_ZSTD: {
        if (!r->zstd && !(r->zstd = ZSTD_createDCtx()))
            lc_fatal("out of memory creating a zstd context");
        size_t z = ZSTD_decompressDCtx(r->zstd, r->page, out_len, in, in_len);
        if (ZSTD_isError(z))
            return pq_read_fail(r, LC_EFORMAT, "corrupt ZSTD page (%s; the header says %zu bytes)",
                                ZSTD_getErrorName(z), out_len);
        if (z != out_len)
            return pq_read_fail(r, LC_EFORMAT,
                                "ZSTD page decompresses to %zu bytes, the header says %zu", z,
                                out_len);
        return 0;
    }
    default:
        return pq_read_fail(r, -ENOTSUP, "codec %s (%d) is not supported",
                            lc_parquet_codec_name(codec), codec);
    }
}

/* ---- levels --------------------------------------------------------------- */

/* Turn n decoded definition levels into validity bytes; count the values. */
static int levels_to_valid(pq_read *r, const uint32_t *lv, size_t m, uint8_t *valid, size_t *nn)
{
    uint32_t max = (uint32_t)r->leaf->max_def;
    for (size_t k = 0; k < m; k++) {
        if (lv[k] > max)
            return pq_read_fail(r, LC_EFORMAT, "definition level %u above the column's maximum %u",
                                lv[k], max);
        valid[k] = lv[k] == max;
        *nn += valid[k];
    }
    return 0;
}

static int hybrid_levels(pq_read *r, const uint8_t *p, size_t len, size_t base, size_t n,
                         size_t *nn)
{
    lc_pq_hybrid h;
    lc_pq_hybrid_init(&h, p, len, 1);
    for (size_t done = 0; done < n;) {
        size_t m = n - done < PQ_BATCH ? n - done : PQ_BATCH;
        const char *why;
        if (lc_pq_hybrid_get(&h, r->idx, m, &why) < 0)
            return pq_read_fail(r, LC_EFORMAT, "definition levels: %s", why);
        int rc = levels_to_valid(r, r->idx, m, r->out->valid + base + done, nn);
        if (rc < 0)
            return rc;
        done += m;
    }
    return 0;
}

/* ---- pages ---------------------------------------------------------------- */

static int check_page_rows(pq_read *r, int64_t values, int64_t rows_left)
{
    if (values < 0)
        return pq_read_fail(r, LC_EFORMAT, "data page with %lld values", (long long)values);
    if (values > rows_left)
        return pq_read_fail(r, LC_EFORMAT,
                            "data pages hold more values than the row group's %lld rows",
                            (long long)r->f->rgs[r->rg].rows);
    return 0;
}

static int data_page_v1(pq_read *r, const pq_page_header *h, const uint8_t *raw, size_t rows_left)
{
    int rc = check_page_rows(r, h->v1_values, (int64_t)rows_left);
    if (rc < 0)
        return rc;
    const uint8_t *p;
    if ((rc = decompress(r, raw, (size_t)h->compressed, (size_t)h->uncompressed, &p)) < 0)
        return rc;
    size_t n = (size_t)h->uncompressed, pos = 0;
    size_t rows = (size_t)h->v1_values, base = r->out->n, nn = 0;
    pq_reserve_rows(r, rows);
    if (r->leaf->max_def == 0) {
        memset(r->out->valid + base, 1, rows);
        nn = rows;
    } else if (h->v1_def_encoding == LC_PARQUET_ENC_RLE) {
        if (n < 4)
            return pq_read_fail(r, LC_EFORMAT, "definition levels: length past the page end");
        size_t len = lc_pq_le32(p);
        if (len > n - 4)
            return pq_read_fail(r, LC_EFORMAT,
                                "definition levels of %zu bytes run past the page end (%zu bytes)",
                                len, n);
        if ((rc = hybrid_levels(r, p + 4, len, base, rows, &nn)) < 0)
            return rc;
        pos = 4 + len;
    } else if (h->v1_def_encoding == LC_PARQUET_ENC_BIT_PACKED) {
        pos = (rows + 7) / 8;
        if (pos > n)
            return pq_read_fail(r, LC_EFORMAT,
                                "bit-packed definition levels run past the page end");
        for (size_t done = 0; done < rows;) {
            size_t m = rows - done < PQ_BATCH ? rows - done : PQ_BATCH;
            lc_pq_bit_packed_msb(p, n, 1, done, r->idx, m);
            if ((rc = levels_to_valid(r, r->idx, m, r->out->valid + base + done, &nn)) < 0)
                return rc;
            done += m;
        }
    } else {
        return pq_read_fail(r, LC_EFORMAT, "definition levels in encoding %s (%d)",
                            lc_parquet_encoding_name(h->v1_def_encoding), h->v1_def_encoding);
    }
    if ((rc = pq_decode_values(r, h->v1_encoding, p + pos, n - pos, base, nn)) < 0)
        return rc;
    pq_spread(r, base, rows, nn);
    r->out->n += rows;
    return 0;
}

static int data_page_v2(pq_read *r, const pq_page_header *h, const uint8_t *raw, size_t rows_left)
{
    int rc = check_page_rows(r, h->v2_values, (int64_t)rows_left);
    if (rc < 0)
        return rc;
    if (h->v2_rows != h->v2_values)
        return pq_read_fail(r, LC_EFORMAT,
                            "data page v2 of a flat column with %d rows but %d values",
                            (int)h->v2_rows, (int)h->v2_values);
    if (h->v2_def_len < 0 || h->v2_rep_len < 0 ||
        (int64_t)h->v2_def_len + h->v2_rep_len > h->compressed ||
        (int64_t)h->v2_def_len + h->v2_rep_len > h->uncompressed)
        return pq_read_fail(r, LC_EFORMAT,
                            "data page v2 levels (%d + %d bytes) do not fit in the page (%d bytes)",
                            (int)h->v2_rep_len, (int)h->v2_def_len, (int)h->compressed);
    size_t lv_len = (size_t)h->v2_rep_len + (size_t)h->v2_def_len;
    size_t rows = (size_t)h->v2_values, base = r->out->n, nn = 0;
    pq_reserve_rows(r, rows);
    /* Levels come first and are never compressed; repetition levels of a
     * flat column are meaningless and skipped. */
    if (r->leaf->max_def == 0) {
        memset(r->out->valid + base, 1, rows);
        nn = rows;
    } else if ((rc = hybrid_levels(r, raw + h->v2_rep_len, (size_t)h->v2_def_len, base, rows,
                                   &nn)) < 0) {
        return rc;
    }
    if (h->v2_nulls < 0 || (size_t)h->v2_nulls != rows - nn)
        return pq_read_fail(r, LC_EFORMAT, "data page v2 says %d nulls, its levels %zu",
                            (int)h->v2_nulls, rows - nn);
    const uint8_t *vals = raw + lv_len;
    size_t in_len = (size_t)h->compressed - lv_len, out_len = (size_t)h->uncompressed - lv_len;
    const uint8_t *p = vals;
    if (h->v2_compressed) {
        if ((rc = decompress(r, vals, in_len, out_len, &p)) < 0)
            return rc;
    } else if (in_len != out_len) {
        return pq_read_fail(r, LC_EFORMAT, "uncompressed values of %zu bytes claim %zu bytes",
                            in_len, out_len);
    }
    if ((rc = pq_decode_values(r, h->v2_encoding, p, out_len, base, nn)) < 0)
        return rc;
    pq_spread(r, base, rows, nn);
    r->out->n += rows;
    return 0;
}

static int read_pages(pq_read *r, const uint8_t *buf, size_t len, uint64_t file_off, size_t rows)
{
    size_t pos = 0;
    while (r->out->n < rows) {
        r->page_off = file_off + pos;
        if (pos >= len)
            return pq_read_fail(r, LC_EFORMAT, "column chunk ends after %zu of %zu rows", r->out->n,
                                rows);
        pq_page_header h;
        size_t hl = 0;
        int rc = parse_page_header(r, buf + pos, len - pos, &h, &hl);
        if (rc < 0)
            return rc;
        if ((size_t)h.compressed > len - pos - hl)
            return pq_read_fail(r, LC_ETRUNC,
                                "page of %d bytes runs past the end of the column chunk (%zu bytes "
                                "left)",
                                (int)h.compressed, len - pos - hl);
        const uint8_t *raw = buf + pos + hl;
        r->out->page_types |= h.type >= 0 && h.type < 32 ? 1u << h.type : 0;
        switch (h.type) {
        case LC_PARQUET_PAGE_DICTIONARY: {
            if (!h.has_dict)
                return pq_read_fail(r, LC_EFORMAT, "dictionary page without its header");
            if (r->out->n > 0)
                return pq_read_fail(r, LC_EFORMAT, "dictionary page after data pages");
            const uint8_t *p;
            if ((rc = decompress(r, raw, (size_t)h.compressed, (size_t)h.uncompressed, &p)) < 0 ||
                (rc = pq_read_dictionary(r, &h, p, (size_t)h.uncompressed)) < 0)
                return rc;
            break;
        }
        case LC_PARQUET_PAGE_DATA:
            if (!h.has_v1)
                return pq_read_fail(r, LC_EFORMAT, "data page without its header");
            if ((rc = data_page_v1(r, &h, raw, rows - r->out->n)) < 0)
                return rc;
            break;
        case LC_PARQUET_PAGE_DATA_V2:
            if (!h.has_v2)
                return pq_read_fail(r, LC_EFORMAT, "data page v2 without its header");
            if ((rc = data_page_v2(r, &h, raw, rows - r->out->n)) < 0)
                return rc;
            break;
        case LC_PARQUET_PAGE_INDEX:
            break;
        default:
            return pq_read_fail(r, LC_EFORMAT, "unknown page type %d", h.type);
        }
        pos += hl + (size_t)h.compressed;
    }
    return 0;
}

static int check_chunk(pq_read *r, uint64_t *start, uint64_t *len)
{
    const pq_column_chunk *c = r->chunk;
    const lc_parquet_file *f = r->f;
    int64_t rows = f->rgs[r->rg].rows;
    if (c->external)
        return pq_read_fail(r, -ENOTSUP, "column chunk stored in another file");
    if (!c->has_meta)
        return pq_read_fail(r, LC_EFORMAT, "column chunk without metadata (encrypted?)");
    if (rows > LC_PARQUET_MAX_ROWS)
        return pq_read_fail(r, LC_EFORMAT, "row group of %lld rows, above the limit of %lld",
                            (long long)rows, (long long)LC_PARQUET_MAX_ROWS);
    if (c->num_values != rows)
        return pq_read_fail(r, LC_EFORMAT, "column chunk holds %lld values for %lld rows",
                            (long long)c->num_values, (long long)rows);
    if (c->codec < LC_PARQUET_CODEC_UNCOMPRESSED || c->codec > LC_PARQUET_CODEC_LZ4_RAW)
        return pq_read_fail(r, LC_EFORMAT, "unknown codec %d", c->codec);
    if (!lc_parquet_codec_supported(c->codec))
        return pq_read_fail(r, -ENOTSUP, "%s", lc_parquet_codec_missing(c->codec));
    /* The chunk starts at its dictionary page when the offset is set, else at
     * its first data page; some writers leave the dictionary offset 0 and
     * start with the dictionary page at the data page offset. */
    int64_t s = c->data_off;
    if (c->dict_off > 0 && c->dict_off < s)
        s = c->dict_off;
    if (s < 4 || c->total_compressed <= 0 || (uint64_t)s >= f->meta_start ||
        (uint64_t)c->total_compressed > f->meta_start - (uint64_t)s)
        return pq_read_fail(r, LC_ETRUNC,
                            "column chunk at offset %lld, %lld bytes long, runs outside the data "
                            "(which ends at %llu)",
                            (long long)s, (long long)c->total_compressed,
                            (unsigned long long)f->meta_start);
    *start = (uint64_t)s;
    *len = (uint64_t)c->total_compressed;
    return 0;
}

int lc_parquet_read_column(const lc_parquet_file *f, size_t rg, size_t col, lc_parquet_column *out,
                           lc_error *err)
{
    out->n = 0;
    out->n_bytes = 0;
    out->data_encodings = 0;
    out->page_types = 0;
    out->codec = -1;
    if (rg >= f->n_rgs || col >= f->n_leaves)
        return lc_error_set(err, -EINVAL,
                            "%s: no column %zu in row group %zu (%zu columns, %zu row groups)",
                            f->path, col, rg, f->n_leaves, f->n_rgs);
    pq_read r = {.f = f,
                 .rg = rg,
                 .col = col,
                 .leaf = &f->leaves[col],
                 .chunk = &f->rgs[rg].chunks[col],
                 .out = out,
                 .err = err};
    const pq_leaf *l = r.leaf;
    if (l->info.kind == LC_PARQUET_KIND_NONE)
        return pq_read_fail(&r, -ENOTSUP, "%s column of type %s cannot be read",
                            l->flat ? "a" : "a nested or repeated",
                            lc_parquet_type_name(l->info.type));
    /* Switching kinds drops the buffers of the old kind. */
    if (out->kind != l->info.kind) {
        lc_parquet_column_fini(out);
        out->kind = l->info.kind;
    }
    out->codec = r.chunk->codec;
    r.width = l->info.type == LC_PARQUET_INT32 || l->info.type == LC_PARQUET_FLOAT ? 4 : 8;
    uint64_t start = 0, len = 0;
    int rc = check_chunk(&r, &start, &len);
    if (rc < 0)
        return rc;
    size_t rows = (size_t)f->rgs[rg].rows;
    pq_reserve_rows(&r, 0);
    if (out->kind == LC_PARQUET_KIND_STRING)
        out->offsets[0] = 0;
    uint8_t *buf = lc_xmalloc((size_t)len);
    if ((rc = pq_pread_full(f->fd, buf, (size_t)len, start)) < 0) {
        rc = pq_read_fail(&r, rc, "cannot read %llu bytes at offset %llu: %s",
                          (unsigned long long)len, (unsigned long long)start, lc_strerror(rc));
    } else {
        rc = read_pages(&r, buf, (size_t)len, start, rows);
    }
    free(buf);
    read_fini(&r);
    if (rc < 0) {
        out->n = 0;
        out->n_bytes = 0;
    }
    return rc;
}

void lc_parquet_column_fini(lc_parquet_column *c)
{
    if (!c)
        return;
    free(c->valid);
    free(c->i64);
    free(c->f64);
    free(c->offsets);
    free(c->bytes);
    *c = (lc_parquet_column){0};
}
