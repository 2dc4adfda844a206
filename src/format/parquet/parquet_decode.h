/*
 * parquet_decode: the value and level encodings of Parquet pages, on plain
 * byte buffers, for parquet.c (and its tests).
 *
 * Every decoder reads only inside the buffer it is given and reports the
 * first problem as LC_EFORMAT with a static description in *why; none
 * allocates. Stateless apart from the caller-owned decoder structs, so any
 * thread may use them.
 */
#ifndef LC_FORMAT_PARQUET_PARQUET_DECODE_H
#define LC_FORMAT_PARQUET_PARQUET_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The RLE / bit-packed hybrid (definition levels and dictionary indices):
 * runs, each a varint header whose low bit says bit-packed (groups of eight
 * values, bw bits each, least significant bit first) or repeated (one value
 * in ceil(bw / 8) little-endian bytes, repeated header >> 1 times).
 */
typedef struct lc_pq_hybrid {
    const uint8_t *p, *end; /* the next run header */
    int bw;                 /* 0..32 */
    uint64_t left;          /* values left in the current run */
    bool packed;
    uint32_t value;      /* repeated run: its value */
    const uint8_t *bits; /* bit-packed run: its bytes */
    size_t bits_len;     /* their number (a last run may be cut short) */
    uint64_t bit_index;  /* next value's index within the run */
} lc_pq_hybrid;

void lc_pq_hybrid_init(lc_pq_hybrid *h, const uint8_t *p, size_t n, int bw);
/* The next n values into out; LC_EFORMAT when the runs end first. */
int lc_pq_hybrid_get(lc_pq_hybrid *h, uint32_t *out, size_t n, const char **why);

/* The deprecated BIT_PACKED level encoding: values of bw bits, most
 * significant bit first, no header. Decodes values first..first+count-1;
 * bits past the n bytes of p read as 0 (the caller checks the length). */
void lc_pq_bit_packed_msb(const uint8_t *p, size_t n, int bw, size_t first, uint32_t *out,
                          size_t count);

/*
 * DELTA_BINARY_PACKED: a header (block size, miniblocks per block, value
 * count, first value), then blocks of a minimum delta, one bit width per
 * miniblock and the bit-packed deltas. Decodes the values into out (at most
 * cap; more is an error), sets *count and *used (the bytes the encoding
 * takes, so that what follows can be found). is32 makes the arithmetic wrap
 * at 32 bits, as for an INT32 column.
 */
int lc_pq_delta_binary(const uint8_t *p, size_t n, bool is32, int64_t *out, size_t cap,
                       size_t *count, size_t *used, const char **why);

/* Read a ULEB128 varint at *pos (advanced); false when malformed or past n. */
bool lc_pq_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v);

static inline uint32_t lc_pq_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t lc_pq_le64(const uint8_t *p)
{
    return (uint64_t)lc_pq_le32(p) | (uint64_t)lc_pq_le32(p + 4) << 32;
}

#endif
