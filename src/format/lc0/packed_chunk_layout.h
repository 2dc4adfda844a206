/*
 * packed_chunk_layout: what the encoder (packed_chunk.c) and the decoder
 * (packed_chunk_decode.c) of packed chunks share, and nothing else
 * includes: the sizes and the head's offsets (see packed_chunk.h for the
 * form), the chunk's struct, the symmetries of the square on plane words
 * and the prediction of a position's history from the one before it.
 *
 * Plane words keep square s = rank * 8 + file at bit s ^ 7: byte r is rank r,
 * with file f at bit 7 - f. The symmetries used are compositions of three
 * involutions on such a word: a flip of the files (reverse the bits of each
 * byte), a flip of the ranks (reverse the bytes) and a flip about a diagonal
 * (transpose the 8 x 8 bit matrix). Together they give all 8 symmetries of
 * the square, whichever diagonal the transpose is about, which is all the
 * encoder needs: it only looks for the one that predicts best, and the
 * decoder applies the same one.
 */
#ifndef LC_FORMAT_LC0_PACKED_CHUNK_LAYOUT_H
#define LC_FORMAT_LC0_PACKED_CHUNK_LAYOUT_H

#include "core/error.h"
#include "format/lc0/packed_chunk.h"
#include "format/lc0/record.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum {
    PLANES_BYTES = 8 * LC_HISTORY_PLANES, /* 832 */
    STEP_PLANES = 13,                     /* planes of one history step */
    MASK_BYTES = LC_HISTORY_PLANES / 8,   /* 13: a bit per plane word */
    HEAD_BYTES = 93,
    NO_SYMMETRY = 0xFF,
    INDEX_ESCAPE = 255,
};

/* Head offsets (see packed_chunk.h). */
enum {
    H_SYM = 0,
    H_MASK = 1,
    H_INPUT_FORMAT = 2,
    H_CASTLING = 3, /* us_ooo, us_oo, them_ooo, them_oo */
    H_STM = 7,
    H_RULE50 = 8,
    H_INVARIANCE = 9,
    H_RESULT = 10,
    H_FLOATS = 11, /* 18 floats */
    H_PLAYED_IDX = H_FLOATS + 18 * 4,
    H_BEST_IDX = H_PLAYED_IDX + 2,
    H_N_POLICY = H_BEST_IDX + 2,
    H_OPP_IDX = H_N_POLICY + 2,
    H_NEXT_IDX = H_OPP_IDX + 2,
};
_Static_assert(H_NEXT_IDX + 2 == HEAD_BYTES, "a head is 93 bytes");

struct lc_packed_chunk {
    atomic_uint refs;
    uint32_t version;
    uint32_t n;     /* positions */
    uint32_t block; /* positions per block */
    uint32_t codec; /* LC_PACK_ZSTD or LC_PACK_LZ4 */
    uint32_t n_blocks;
    uint32_t bytes;                     /* the whole allocation */
    uint64_t serial;                    /* unique in the process: the decoder's memory key */
    _Atomic(float *) aux[LC_AUX_SLOTS]; /* a reader's floats (lc_packed_chunk_attach_aux) */
    uint32_t off[]; /* n_blocks + 1 offsets of the blocks in the data that follows */
};

static inline const uint8_t *chunk_data(const lc_packed_chunk *c)
{
    return (const uint8_t *)(c->off + c->n_blocks + 1);
}

/* ---- symmetries ---- */

static inline uint64_t flip_files(uint64_t x)
{
    return lc_plane_squares(x); /* the bits of every rank reversed */
}

static inline uint64_t flip_diagonal(uint64_t x)
{
    const uint64_t k1 = 0x5500550055005500ull, k2 = 0x3333000033330000ull,
                   k4 = 0x0F0F0F0F00000000ull;
    uint64_t t = k4 & (x ^ (x << 28));
    x ^= t ^ (t >> 28);
    t = k2 & (x ^ (x << 14));
    x ^= t ^ (t >> 14);
    t = k1 & (x ^ (x << 7));
    return x ^ t ^ (t >> 7);
}

/* Symmetry k (0..7): bit 2 diagonal, then bit 0 files, then bit 1 ranks. */
static inline uint64_t symmetry(uint64_t x, unsigned k)
{
    if (k & 4)
        x = flip_diagonal(x);
    if (k & 1)
        x = flip_files(x);
    if (k & 2)
        x = __builtin_bswap64(x);
    return x;
}

/* Plane j of a step seen from the other side: our pieces are theirs. */
static const uint8_t other_side[STEP_PLANES] = {6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 12};

/* Step t's plane j of a position as the previous position (prev) predicts it. */
static inline uint64_t predicted(const uint64_t *prev, unsigned t, unsigned j, unsigned k)
{
    return symmetry(prev[(t - 1) * STEP_PLANES + other_side[j]], k);
}

/* ---- growable scratch ---- */

static inline void reserve(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    *buf = lc_xrealloc(*buf, c);
    *cap = c;
}

#endif
