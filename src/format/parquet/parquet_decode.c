/*
 * parquet_decode: see parquet_decode.h. Written from the encodings section of
 * the Parquet format specification. Bit-packed values are gathered through a
 * 64-bit little-endian window; near the end of a buffer the window is filled
 * byte by byte so that nothing past the buffer is ever touched.
 */
#include "format/parquet/parquet_decode.h"

#include <string.h>

#include "core/error.h"

bool lc_pq_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v)
{
    uint64_t r = 0;
    size_t i = *pos;
    for (int shift = 0; shift < 64; shift += 7) {
        if (i >= n)
            return false;
        uint8_t b = p[i++];
        if (shift == 63 && (b & 0x7e))
            return false;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pos = i;
            *v = r;
            return true;
        }
    }
    return false;
}

/* 64 bits starting at byte i of p (n bytes), zero beyond the end. */
static uint64_t window64(const uint8_t *p, size_t n, size_t i)
{
    if (i < n && n - i >= 8)
        return lc_pq_le64(p + i);
    uint64_t v = 0;
    for (size_t k = 0; k < 8 && i + k < n; k++)
        v |= (uint64_t)p[i + k] << (8 * k);
    return v;
}

/* Value number idx of width bw (0..64) in an LSB-first bit-packed buffer;
 * the caller has checked that its bits lie inside p[0..n). */
static uint64_t unpack_lsb(const uint8_t *p, size_t n, uint64_t idx, int bw)
{
    if (bw == 0)
        return 0;
    uint64_t bit = idx * (uint64_t)bw;
    size_t byte = (size_t)(bit >> 3);
    int shift = (int)(bit & 7);
    uint64_t v = window64(p, n, byte) >> shift;
    if (shift + bw > 64)
        v |= window64(p, n, byte + 8) << (64 - shift);
    return bw == 64 ? v : v & (((uint64_t)1 << bw) - 1);
}

void lc_pq_hybrid_init(lc_pq_hybrid *h, const uint8_t *p, size_t n, int bw)
{
    *h = (lc_pq_hybrid){.p = p, .end = p + n, .bw = bw};
}

/* Read the next run header and set the run up. */
static int next_run(lc_pq_hybrid *h, const char **why)
{
    size_t n = (size_t)(h->end - h->p), pos = 0;
    uint64_t header;
    if (n == 0) {
        *why = "the RLE/bit-packed runs end before all values";
        return LC_EFORMAT;
    }
    if (!lc_pq_varint(h->p, n, &pos, &header)) {
        *why = "malformed RLE/bit-packed run header";
        return LC_EFORMAT;
    }
    if (header & 1) {
        uint64_t groups = header >> 1; /* < 2^63 */
        uint64_t values = groups > UINT64_MAX / 64 ? UINT64_MAX / 8 : groups * 8;
        uint64_t bytes = groups > UINT64_MAX / 64 ? UINT64_MAX : groups * (uint64_t)h->bw;
        size_t avail = n - pos;
        /* A last run may be cut short by its writer; keep the whole values
         * that are there, and fail only if more are needed. */
        h->bits = h->p + pos;
        h->bits_len = bytes < avail ? (size_t)bytes : avail;
        h->packed = true;
        h->left = values;
        if (h->bw > 0 && (uint64_t)h->bits_len * 8 / (uint64_t)h->bw < values)
            h->left = (uint64_t)h->bits_len * 8 / (uint64_t)h->bw;
        h->bit_index = 0;
        h->p += pos + h->bits_len;
    } else {
        size_t vbytes = ((size_t)h->bw + 7) / 8;
        if (n - pos < vbytes) {
            *why = "RLE run value runs past the end of its buffer";
            return LC_EFORMAT;
        }
        uint32_t v = 0;
        for (size_t k = 0; k < vbytes; k++)
            v |= (uint32_t)h->p[pos + k] << (8 * k);
        if (h->bw < 32 && (v >> h->bw) != 0) {
            *why = "RLE run value wider than its bit width";
            return LC_EFORMAT;
        }
        h->packed = false;
        h->value = v;
        h->left = header >> 1;
        h->p += pos + vbytes;
    }
    return 0;
}

int lc_pq_hybrid_get(lc_pq_hybrid *h, uint32_t *out, size_t n, const char **why)
{
    size_t i = 0;
    while (i < n) {
        if (h->left == 0) {
            int rc = next_run(h, why);
            if (rc < 0)
                return rc;
            continue;
        }
        size_t take = n - i;
        if (take > h->left)
            take = (size_t)h->left;
        if (h->packed) {
            for (size_t k = 0; k < take; k++)
                out[i + k] = (uint32_t)unpack_lsb(h->bits, h->bits_len, h->bit_index + k, h->bw);
            h->bit_index += take;
        } else {
            for (size_t k = 0; k < take; k++)
                out[i + k] = h->value;
        }
        h->left -= take;
        i += take;
    }
    return 0;
}

void lc_pq_bit_packed_msb(const uint8_t *p, size_t n, int bw, size_t first, uint32_t *out,
                          size_t count)
{
    for (size_t i = 0; i < count; i++) {
        uint32_t v = 0;
        uint64_t bit = (uint64_t)(first + i) * (uint64_t)bw;
        for (int k = 0; k < bw; k++, bit++) {
            size_t byte = (size_t)(bit >> 3);
            v = v << 1 | (byte < n ? (p[byte] >> (7 - (bit & 7))) & 1 : 0);
        }
        out[i] = v;
    }
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

int lc_pq_delta_binary(const uint8_t *p, size_t n, bool is32, int64_t *out, size_t cap,
                       size_t *count, size_t *used, const char **why)
{
    size_t pos = 0;
    uint64_t block, minis, total, first_z;
    *count = 0;
    *used = 0;
    if (!lc_pq_varint(p, n, &pos, &block) || !lc_pq_varint(p, n, &pos, &minis) ||
        !lc_pq_varint(p, n, &pos, &total) || !lc_pq_varint(p, n, &pos, &first_z)) {
        *why = "malformed or truncated DELTA_BINARY_PACKED header";
        return LC_EFORMAT;
    }
    if (block == 0 || block % 128 != 0 || block > ((uint64_t)1 << 31) || minis == 0 ||
        block % minis != 0 || (block / minis) % 32 != 0) {
        *why = "impossible DELTA_BINARY_PACKED block or miniblock size";
        return LC_EFORMAT;
    }
    if (total > cap) {
        *why = "DELTA_BINARY_PACKED holds more values than the page";
        return LC_EFORMAT;
    }
    uint64_t per_mini = block / minis;
    int maxbw = is32 ? 32 : 64;
    uint64_t last = (uint64_t)unzigzag(first_z);
    if (is32)
        last = (uint64_t)(int64_t)(int32_t)(uint32_t)last;
    size_t got = 0;
    if (total > 0)
        out[got++] = (int64_t)last;
    while (got < total) {
        uint64_t md_z;
        if (!lc_pq_varint(p, n, &pos, &md_z)) {
            *why = "DELTA_BINARY_PACKED block header runs past the end";
            return LC_EFORMAT;
        }
        uint64_t min_delta = (uint64_t)unzigzag(md_z);
        if (n - pos < minis) {
            *why = "DELTA_BINARY_PACKED bit widths run past the end";
            return LC_EFORMAT;
        }
        const uint8_t *widths = p + pos;
        pos += (size_t)minis;
        for (uint64_t m = 0; m < minis && got < total; m++) {
            int bw = widths[m];
            if (bw > maxbw) {
                *why = "DELTA_BINARY_PACKED bit width wider than the type";
                return LC_EFORMAT;
            }
            uint64_t take = total - got < per_mini ? total - got : per_mini;
            uint64_t need_bytes = (take * (uint64_t)bw + 7) / 8;
            uint64_t full_bytes = per_mini * (uint64_t)bw / 8;
            if (need_bytes > n - pos) {
                *why = "DELTA_BINARY_PACKED miniblock runs past the end";
                return LC_EFORMAT;
            }
            /* The last miniblock is padded to its full size, but a reader
             * must not need the padding: take what is there. */
            size_t span = full_bytes < n - pos ? (size_t)full_bytes : n - pos;
            for (uint64_t k = 0; k < take; k++) {
                uint64_t d = unpack_lsb(p + pos, span, k, bw);
                last = last + min_delta + d;
                if (is32)
                    last = (uint64_t)(int64_t)(int32_t)(uint32_t)last;
                out[got++] = (int64_t)last;
            }
            pos += span;
        }
    }
    *count = (size_t)total;
    *used = pos;
    return 0;
}
