/*
 * parquet_values: the values of a data page into the output column: plain,
 * dictionary (the dictionary page and its indices), the delta encodings and
 * byte-stream-split, decoded densely and then spread over the rows.
 */
#include "format/parquet/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/parquet/parquet_decode.h"

/* ---- output vectors ------------------------------------------------------- */

/* Room for rows more rows. */
void pq_reserve_rows(pq_read *r, size_t rows)
{
    lc_parquet_column *o = r->out;
    size_t need = o->n + rows;
    if (need == 0)
        need = 1; /* so that the buffers exist even for an empty row group */
    if (need <= o->cap_rows)
        return;
    size_t cap = o->cap_rows ? o->cap_rows : 1024;
    while (cap < need)
        cap *= 2;
    o->valid = lc_xrealloc(o->valid, cap);
    if (o->kind == LC_PARQUET_KIND_INT64)
        o->i64 = lc_xrealloc(o->i64, cap * sizeof *o->i64);
    else if (o->kind == LC_PARQUET_KIND_DOUBLE)
        o->f64 = lc_xrealloc(o->f64, cap * sizeof *o->f64);
    else
        o->offsets = lc_xrealloc(o->offsets, (cap + 1) * sizeof *o->offsets);
    o->cap_rows = cap;
}

int pq_reserve_bytes(pq_read *r, uint64_t more)
{
    lc_parquet_column *o = r->out;
    if (more > LC_PARQUET_MAX_STRING_BYTES - o->n_bytes)
        return pq_read_fail(r, LC_EFORMAT, "strings of the column chunk exceed %zu bytes",
                            LC_PARQUET_MAX_STRING_BYTES);
    size_t need = o->n_bytes + (size_t)more;
    if (need > o->cap_bytes) {
        size_t cap = o->cap_bytes ? o->cap_bytes : 4096;
        while (cap < need)
            cap *= 2;
        o->bytes = lc_xrealloc(o->bytes, cap);
        o->cap_bytes = cap;
    }
    return 0;
}

/* Append one string as dense value k of the page (base is the page's first row). */
int pq_put_string(pq_read *r, size_t base, size_t k, const void *s, size_t len)
{
    int rc = pq_reserve_bytes(r, len);
    if (rc < 0)
        return rc;
    lc_parquet_column *o = r->out;
    if (len)
        memcpy(o->bytes + o->n_bytes, s, len);
    o->n_bytes += len;
    o->offsets[base + 1 + k] = o->n_bytes;
    return 0;
}

int64_t *pq_scratch(pq_read *r, size_t n)
{
    r->scratch = pq_grow(r->scratch, &r->scratch_cap, n ? n : 1, sizeof *r->scratch);
    return r->scratch;
}

/* ---- plain values --------------------------------------------------------- */

static int64_t plain_int(const pq_read *r, const uint8_t *p)
{
    return r->leaf->info.type == LC_PARQUET_INT32 ? (int64_t)(int32_t)lc_pq_le32(p)
                                                  : (int64_t)lc_pq_le64(p);
}

static double plain_double(const pq_read *r, const uint8_t *p)
{
    if (r->leaf->info.type == LC_PARQUET_FLOAT) {
        uint32_t bits = lc_pq_le32(p);
        float v;
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    uint64_t bits = lc_pq_le64(p);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* nn PLAIN values of the fixed-width type at p into the dense slots. */
static int plain_fixed(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base, size_t nn)
{
    size_t w = (size_t)r->width;
    if (nn > n / w)
        return pq_decode_fail(r, encoding, "fewer values than the page announces");
    lc_parquet_column *o = r->out;
    for (size_t k = 0; k < nn; k++) {
        if (o->kind == LC_PARQUET_KIND_INT64)
            o->i64[base + k] = plain_int(r, p + k * w);
        else
            o->f64[base + k] = plain_double(r, p + k * w);
    }
    return 0;
}

static int plain_strings(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base,
                         size_t nn)
{
    size_t pos = 0;
    for (size_t k = 0; k < nn; k++) {
        if (n - pos < 4)
            return pq_decode_fail(r, encoding, "a string length runs past the end of the page");
        size_t len = lc_pq_le32(p + pos);
        pos += 4;
        if (len > n - pos)
            return pq_decode_fail(r, encoding, "a string runs past the end of the page");
        int rc = pq_put_string(r, base, k, p + pos, len);
        if (rc < 0)
            return rc;
        pos += len;
    }
    return 0;
}

/* ---- dictionary --------------------------------------------------------- */

int pq_read_dictionary(pq_read *r, const pq_page_header *h, const uint8_t *p, size_t n)
{
    if (r->have_dict)
        return pq_read_fail(r, LC_EFORMAT, "a second dictionary page");
    if (h->dict_encoding != LC_PARQUET_ENC_PLAIN &&
        h->dict_encoding != LC_PARQUET_ENC_PLAIN_DICTIONARY)
        return pq_read_fail(r, LC_EFORMAT, "dictionary page in encoding %s (%d)",
                            lc_parquet_encoding_name(h->dict_encoding), h->dict_encoding);
    if (h->dict_values < 0)
        return pq_read_fail(r, LC_EFORMAT, "dictionary page with %d values", (int)h->dict_values);
    size_t dn = (size_t)h->dict_values;
    size_t w = r->out->kind == LC_PARQUET_KIND_STRING ? 4 : (size_t)r->width;
    if (dn > n / w)
        return pq_read_fail(r, LC_EFORMAT, "dictionary page of %zu bytes cannot hold %zu values", n,
                            dn);
    r->have_dict = true;
    r->dict_n = dn;
    switch (r->out->kind) {
    case LC_PARQUET_KIND_INT64:
        r->dict_i64 = lc_xmalloc((dn ? dn : 1) * sizeof *r->dict_i64);
        for (size_t i = 0; i < dn; i++)
            r->dict_i64[i] = plain_int(r, p + i * w);
        break;
    case LC_PARQUET_KIND_DOUBLE:
        r->dict_f64 = lc_xmalloc((dn ? dn : 1) * sizeof *r->dict_f64);
        for (size_t i = 0; i < dn; i++)
            r->dict_f64[i] = plain_double(r, p + i * w);
        break;
    default: {
        r->dict_off = lc_xmalloc((dn + 1) * sizeof *r->dict_off);
        r->dict_bytes = lc_xmalloc(n ? n : 1);
        size_t pos = 0, used = 0;
        r->dict_off[0] = 0;
        for (size_t i = 0; i < dn; i++) {
            if (n - pos < 4)
                return pq_read_fail(r, LC_EFORMAT,
                                    "dictionary string %zu: length past the page end", i);
            size_t len = lc_pq_le32(p + pos);
            pos += 4;
            if (len > n - pos)
                return pq_read_fail(r, LC_EFORMAT, "dictionary string %zu runs past the page end",
                                    i);
            memcpy(r->dict_bytes + used, p + pos, len);
            pos += len;
            used += len;
            r->dict_off[i + 1] = used;
        }
        break;
    }
    }
    return 0;
}

static int dict_values(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base, size_t nn)
{
    if (!r->have_dict)
        return pq_decode_fail(r, encoding, "dictionary-encoded page without a dictionary page");
    if (n < 1)
        return pq_decode_fail(r, encoding, "no bit width before the indices");
    int bw = p[0];
    if (bw > 32)
        return pq_read_fail(r, LC_EFORMAT, "%s values: impossible bit width %d",
                            lc_parquet_encoding_name(encoding), bw);
    lc_pq_hybrid h;
    lc_pq_hybrid_init(&h, p + 1, n - 1, bw);
    lc_parquet_column *o = r->out;
    for (size_t done = 0; done < nn;) {
        size_t m = nn - done < PQ_BATCH ? nn - done : PQ_BATCH;
        const char *why;
        if (lc_pq_hybrid_get(&h, r->idx, m, &why) < 0)
            return pq_decode_fail(r, encoding, why);
        for (size_t k = 0; k < m; k++) {
            uint32_t ix = r->idx[k];
            if (ix >= r->dict_n)
                return pq_read_fail(r, LC_EFORMAT,
                                    "dictionary index %u out of range (the dictionary has %zu "
                                    "values)",
                                    ix, r->dict_n);
            size_t at = done + k;
            if (o->kind == LC_PARQUET_KIND_INT64) {
                o->i64[base + at] = r->dict_i64[ix];
            } else if (o->kind == LC_PARQUET_KIND_DOUBLE) {
                o->f64[base + at] = r->dict_f64[ix];
            } else {
                int rc = pq_put_string(r, base, at, r->dict_bytes + r->dict_off[ix],
                                       (size_t)(r->dict_off[ix + 1] - r->dict_off[ix]));
                if (rc < 0)
                    return rc;
            }
        }
        done += m;
    }
    return 0;
}

/* ---- delta and byte-stream-split ---------------------------------------- */

static int delta_ints(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base, size_t nn)
{
    size_t count, used;
    const char *why;
    bool is32 = r->leaf->info.type == LC_PARQUET_INT32;
    if (lc_pq_delta_binary(p, n, is32, r->out->i64 + base, nn, &count, &used, &why) < 0)
        return pq_decode_fail(r, encoding, why);
    if (count != nn)
        return pq_read_fail(r, LC_EFORMAT, "%s values: %zu values where the page has %zu",
                            lc_parquet_encoding_name(encoding), count, nn);
    return 0;
}

/* Decode nn lengths (a DELTA_BINARY_PACKED run) at p into out; *used bytes. */
static int delta_lengths(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t nn,
                         int64_t *out, size_t *used)
{
    size_t count;
    const char *why;
    if (lc_pq_delta_binary(p, n, true, out, nn, &count, used, &why) < 0)
        return pq_decode_fail(r, encoding, why);
    if (count != nn)
        return pq_read_fail(r, LC_EFORMAT, "%s values: %zu lengths where the page has %zu values",
                            lc_parquet_encoding_name(encoding), count, nn);
    for (size_t k = 0; k < nn; k++)
        if (out[k] < 0)
            return pq_decode_fail(r, encoding, "negative length");
    return 0;
}

static int delta_length_strings(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base,
                                size_t nn)
{
    int64_t *lens = pq_scratch(r, nn);
    size_t used;
    int rc = delta_lengths(r, encoding, p, n, nn, lens, &used);
    if (rc < 0)
        return rc;
    size_t pos = used;
    for (size_t k = 0; k < nn; k++) {
        if ((uint64_t)lens[k] > n - pos)
            return pq_decode_fail(r, encoding, "string data runs past the end of the page");
        if ((rc = pq_put_string(r, base, k, p + pos, (size_t)lens[k])) < 0)
            return rc;
        pos += (size_t)lens[k];
    }
    return 0;
}

static int delta_strings(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base,
                         size_t nn)
{
    int64_t *s = pq_scratch(r, 2 * nn);
    int64_t *prefix = s, *suffix = s + nn;
    size_t used1, used2;
    int rc = delta_lengths(r, encoding, p, n, nn, prefix, &used1);
    if (rc < 0)
        return rc;
    if ((rc = delta_lengths(r, encoding, p + used1, n - used1, nn, suffix, &used2)) < 0)
        return rc;
    size_t pos = used1 + used2;
    lc_parquet_column *o = r->out;
    uint64_t prev_off = o->n_bytes, prev_len = 0;
    for (size_t k = 0; k < nn; k++) {
        uint64_t pl = (uint64_t)prefix[k], sl = (uint64_t)suffix[k];
        if (pl > prev_len)
            return pq_decode_fail(r, encoding, "prefix longer than the previous value");
        if (sl > n - pos)
            return pq_decode_fail(r, encoding, "suffix data runs past the end of the page");
        if ((rc = pq_reserve_bytes(r, pl + sl)) < 0)
            return rc;
        uint64_t start = o->n_bytes;
        memcpy(o->bytes + start, o->bytes + prev_off, (size_t)pl);
        memcpy(o->bytes + start + pl, p + pos, (size_t)sl);
        pos += (size_t)sl;
        o->n_bytes += (size_t)(pl + sl);
        o->offsets[base + 1 + k] = o->n_bytes;
        prev_off = start;
        prev_len = pl + sl;
    }
    return 0;
}

static int byte_stream_split(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base,
                             size_t nn)
{
    size_t w = (size_t)r->width;
    if (n % w != 0 || n / w != nn)
        return pq_read_fail(r, LC_EFORMAT, "%s values: %zu bytes are not %zu values of %zu bytes",
                            lc_parquet_encoding_name(encoding), n, nn, w);
    uint8_t v[8];
    lc_parquet_column *o = r->out;
    for (size_t k = 0; k < nn; k++) {
        for (size_t b = 0; b < w; b++)
            v[b] = p[b * nn + k];
        if (o->kind == LC_PARQUET_KIND_INT64)
            o->i64[base + k] = plain_int(r, v);
        else
            o->f64[base + k] = plain_double(r, v);
    }
    return 0;
}

/* Decode nn non-null values of a page into the dense slots base..base+nn. */
int pq_decode_values(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base, size_t nn)
{
    if (encoding < 0 || encoding > LC_PARQUET_ENC_BYTE_STREAM_SPLIT || encoding == 1)
        return pq_read_fail(r, LC_EFORMAT, "unknown value encoding %d", encoding);
    r->out->data_encodings |= 1u << encoding;
    if (nn == 0)
        return 0;
    lc_parquet_kind kind = r->out->kind;
    switch (encoding) {
    case LC_PARQUET_ENC_PLAIN:
        return kind == LC_PARQUET_KIND_STRING ? plain_strings(r, encoding, p, n, base, nn)
                                              : plain_fixed(r, encoding, p, n, base, nn);
    case LC_PARQUET_ENC_PLAIN_DICTIONARY:
    case LC_PARQUET_ENC_RLE_DICTIONARY:
        return dict_values(r, encoding, p, n, base, nn);
    case LC_PARQUET_ENC_DELTA_BINARY_PACKED:
        if (kind == LC_PARQUET_KIND_INT64)
            return delta_ints(r, encoding, p, n, base, nn);
        break;
    case LC_PARQUET_ENC_DELTA_LENGTH_BYTE_ARRAY:
        if (kind == LC_PARQUET_KIND_STRING)
            return delta_length_strings(r, encoding, p, n, base, nn);
        break;
    case LC_PARQUET_ENC_DELTA_BYTE_ARRAY:
        if (kind == LC_PARQUET_KIND_STRING)
            return delta_strings(r, encoding, p, n, base, nn);
        break;
    case LC_PARQUET_ENC_BYTE_STREAM_SPLIT:
        if (kind != LC_PARQUET_KIND_STRING)
            return byte_stream_split(r, encoding, p, n, base, nn);
        break;
    default:
        break;
    }
    return pq_read_fail(r, LC_EFORMAT, "value encoding %s is not valid for type %s",
                        lc_parquet_encoding_name(encoding),
                        lc_parquet_type_name(r->leaf->info.type));
}

/* Spread the nn dense values at base over the page's n rows (valid[] set),
 * from the back so that every value moves to a slot at or after its own. */
void pq_spread(pq_read *r, size_t base, size_t n, size_t nn)
{
    lc_parquet_column *o = r->out;
    if (nn == n)
        return;
    size_t j = nn; /* dense values not yet placed: 0..j-1 */
    for (size_t i = n; i-- > 0;) {
        bool v = o->valid[base + i];
        switch (o->kind) {
        case LC_PARQUET_KIND_INT64:
            o->i64[base + i] = v ? o->i64[base + --j] : 0;
            break;
        case LC_PARQUET_KIND_DOUBLE:
            o->f64[base + i] = v ? o->f64[base + --j] : 0.0;
            break;
        default:
            /* A null row ends where the last value before it ends. */
            if (v)
                o->offsets[base + 1 + i] = o->offsets[base + 1 + --j];
            else
                o->offsets[base + 1 + i] = o->offsets[base + j];
            break;
        }
    }
}
