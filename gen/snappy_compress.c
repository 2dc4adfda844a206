/*
 * snappy_compress: the Snappy compressor of the Parquet writer
 * (parquet_writer.h says what it writes: the raw block format, greedy
 * matching of 4-byte sequences through a hash table, 64 KiB fragments).
 */
#include "parquet_writer.h"

#include <stdlib.h>
#include <string.h>

#define SNAPPY_FRAGMENT ((size_t)1 << 16)
#define SNAPPY_HASH_BITS 14

size_t pqw_snappy_bound(size_t n)
{
    return 32 + n + n / 6;
}

static uint32_t load32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint8_t *snappy_literal(uint8_t *op, const uint8_t *p, size_t n)
{
    if (n == 0)
        return op;
    size_t m = n - 1;
    if (m < 60) {
        *op++ = (uint8_t)(m << 2);
    } else {
        int nb = m < (1u << 8) ? 1 : m < (1u << 16) ? 2 : m < (1u << 24) ? 3 : 4;
        *op++ = (uint8_t)((59 + nb) << 2);
        for (int i = 0; i < nb; i++)
            *op++ = (uint8_t)(m >> (8 * i));
    }
    memcpy(op, p, n);
    return op + n;
}

/* One copy element of 1..64 bytes from offset back (offset < 65536). */
static uint8_t *snappy_copy1(uint8_t *op, size_t offset, size_t len)
{
    if (len >= 4 && len <= 11 && offset < 2048) {
        *op++ = (uint8_t)(1 | (len - 4) << 2 | (offset >> 8) << 5);
        *op++ = (uint8_t)offset;
    } else {
        *op++ = (uint8_t)(2 | (len - 1) << 2);
        *op++ = (uint8_t)offset;
        *op++ = (uint8_t)(offset >> 8);
    }
    return op;
}

/* A match of len >= 4 bytes: elements of 64, leaving a last one of 4..64. */
static uint8_t *snappy_copy(uint8_t *op, size_t offset, size_t len)
{
    while (len >= 68) {
        op = snappy_copy1(op, offset, 64);
        len -= 64;
    }
    if (len > 64) {
        op = snappy_copy1(op, offset, 60);
        len -= 60;
    }
    return snappy_copy1(op, offset, len);
}

static uint32_t snappy_hash(uint32_t v)
{
    return (v * 0x1e35a7bdu) >> (32 - SNAPPY_HASH_BITS);
}

static uint8_t *snappy_fragment(uint8_t *op, const uint8_t *in, size_t n, uint16_t *table)
{
    if (n < 16)
        return snappy_literal(op, in, n);
    memset(table, 0, sizeof *table << SNAPPY_HASH_BITS);
    size_t ip = 1, lit = 0, skip = 32; /* the zeroed table already points at 0 */
    while (ip + 4 <= n) {
        uint32_t cur = load32(in + ip);
        uint32_t h = snappy_hash(cur);
        size_t cand = table[h];
        table[h] = (uint16_t)ip;
        if (cand >= ip || load32(in + cand) != cur) {
            ip += skip++ >> 5; /* move faster through data that does not match */
            continue;
        }
        size_t len = 4;
        while (ip + len < n && in[cand + len] == in[ip + len])
            len++;
        op = snappy_literal(op, in + lit, ip - lit);
        op = snappy_copy(op, ip - cand, len);
        ip += len;
        lit = ip;
        skip = 32;
        if (ip + 3 <= n) /* the match's last position, for the next one */
            table[snappy_hash(load32(in + ip - 1))] = (uint16_t)(ip - 1);
    }
    return snappy_literal(op, in + lit, n - lit);
}

size_t pqw_snappy_compress(const uint8_t *in, size_t n, uint8_t *out)
{
    if (n > UINT32_MAX)
        lc_fatal("snappy: a block of %zu bytes is over the format's limit", n);
    uint8_t *op = out;
    size_t v = n;
    while (v >= 0x80) {
        *op++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *op++ = (uint8_t)v;
    uint16_t *table = lc_xmalloc(sizeof *table << SNAPPY_HASH_BITS);
    for (size_t at = 0; at < n; at += SNAPPY_FRAGMENT) {
        size_t len = n - at < SNAPPY_FRAGMENT ? n - at : SNAPPY_FRAGMENT;
        op = snappy_fragment(op, in + at, len, table);
    }
    free(table);
    return (size_t)(op - out);
}
