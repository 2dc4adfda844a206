/*
 * frame_tensors: the input planes, the value rows and the legacy targets of
 * a frame (see frame.h); the policy tensor is in frame.c, beside the sparse
 * policy it reads. Pure functions: any thread may call any of them on frames
 * it owns.
 *
 * Planes. lc_frame_input_planes writes 112 x 64 floats per frame in the hot
 * path. Each plane word is expanded 8 squares (one byte, one rank) at a time
 * through a constant 256 x 8 float table, so there are no per-square
 * branches; the format-dependent planes 104..108 are turned into words of the
 * same bit convention where they are masks, or filled with a constant. The
 * destination may be a row of a batch tensor directly (any float alignment).
 * Format 1's constant planes hold the byte as a float (0 or 1 in valid data).
 * An input format outside lc_input_format_known gets zeros in 104..110 (the
 * chunk validator rejects such records before they get here).
 *
 * Packed planes. Byte r of a plane word is what the packed row keeps at
 * bits[8 * p + r], so the history planes go out as the frame holds them, in
 * one copy (per byte only where the machine is big-endian).
 */
#include "format/lc0/frame.h"

#include <math.h>
#include <string.h>

/* ---- the input planes ---- */

/* Row b holds the 8 squares of one rank whose byte in a plane word is b:
 * file f is bit 7 - f (lc0 stores squares bit-reversed within each byte). */
#define ROW_(b)                                                                                    \
    {                                                                                              \
        (float)(((b) >> 7) & 1), (float)(((b) >> 6) & 1), (float)(((b) >> 5) & 1),                 \
            (float)(((b) >> 4) & 1), (float)(((b) >> 3) & 1), (float)(((b) >> 2) & 1),             \
            (float)(((b) >> 1) & 1), (float)(((b) >> 0) & 1)                                       \
    }
#define ROW4_(b) ROW_(b), ROW_((b) + 1), ROW_((b) + 2), ROW_((b) + 3)
#define ROW16_(b) ROW4_(b), ROW4_((b) + 4), ROW4_((b) + 8), ROW4_((b) + 12)
#define ROW64_(b) ROW16_(b), ROW16_((b) + 16), ROW16_((b) + 32), ROW16_((b) + 48)

static _Alignas(64) const float byte_squares[256][8] = {
    ROW64_(0),
    ROW64_(64),
    ROW64_(128),
    ROW64_(192),
};

/* Plane word (lc0's bit convention) to 64 floats. */
static inline void expand_word(float *restrict out, uint64_t w)
{
    for (unsigned r = 0; r < 8; r++)
        memcpy(out + 8 * r, byte_squares[(w >> (8 * r)) & 0xff], 8 * sizeof(float));
}

static inline void fill_plane(float *restrict out, float v)
{
    for (unsigned i = 0; i < 64; i++)
        out[i] = v;
}

static inline uint8_t reverse8(uint8_t b)
{
    b = (uint8_t)((b & 0xF0) >> 4 | (b & 0x0F) << 4);
    b = (uint8_t)((b & 0xCC) >> 2 | (b & 0x33) << 2);
    b = (uint8_t)((b & 0xAA) >> 1 | (b & 0x55) << 1);
    return b;
}

/* A word with file mask rank1 (file f = bit f) on rank 1 and rank8 on rank 8,
 * in the plane words' convention (square s is bit s ^ 7). */
static inline uint64_t edge_ranks_word(uint8_t rank1, uint8_t rank8)
{
    return (uint64_t)reverse8(rank1) | (uint64_t)reverse8(rank8) << 56;
}

bool lc_input_format_known(uint32_t input_format)
{
    switch (input_format) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 132:
    case 133:
        return true;
    default:
        return false;
    }
}

/*
 * Planes 104..111 as plane words and values: plane 104 + i is values[i] on
 * every square whose bit is set in words[i] and 0 elsewhere. A plane that is
 * one value everywhere has every bit set (even when the value is 0); a
 * square mask has the value 1.
 */
void lc_frame_aux_planes(const lc_frame *f, uint64_t words[8], float values[8])
{
    const uint64_t all = ~(uint64_t)0;
    for (unsigned i = 0; i < 8; i++) {
        words[i] = all;
        values[i] = 0.0f;
    }
    values[7] = 1.0f;
    const uint32_t fmt = f->input_format;
    if (!lc_input_format_known(fmt))
        return;
    if (fmt == 1) {
        values[0] = (float)f->castling_us_ooo;
        values[1] = (float)f->castling_us_oo;
        values[2] = (float)f->castling_them_ooo;
        values[3] = (float)f->castling_them_oo;
    } else {
        words[0] = edge_ranks_word(f->castling_us_ooo, f->castling_them_ooo);
        words[1] = edge_ranks_word(f->castling_us_oo, f->castling_them_oo);
        values[0] = values[1] = 1.0f;
    }
    if (fmt <= 2) {
        values[4] = (float)f->side_to_move_or_enpassant;
    } else {
        words[4] = edge_ranks_word(0, f->side_to_move_or_enpassant);
        values[4] = 1.0f;
    }
    values[5] = (float)f->rule50_count / (fmt <= 3 ? 99.0f : 100.0f);
    bool canonical_flip = (fmt == 132 || fmt == 133) && (f->invariance_info & 0x80);
    values[6] = canonical_flip ? 1.0f : 0.0f;
}

/*
 * Planes 104..111 as upstream's C++ loader writes them (its tensor
 * generator, in every version since planes 0..103 are read in lc0's bit
 * order), whatever the input format: each a constant plane, 104..107 the
 * castling bytes and 108 side_to_move_or_enpassant as floats (a rook-file
 * mask of 0x81 gives 129, an en-passant mask of 0x10 gives 16), 109
 * rule50_count / 99 in float, 110 zero, 111 one. The same as
 * lc_frame_aux_planes for format 1 only.
 */
static void aux_planes_upstream(const lc_frame *f, uint64_t words[8], float values[8])
{
    const uint8_t bytes[5] = {f->castling_us_ooo, f->castling_us_oo, f->castling_them_ooo,
                              f->castling_them_oo, f->side_to_move_or_enpassant};
    for (unsigned i = 0; i < 8; i++)
        words[i] = ~(uint64_t)0;
    for (unsigned i = 0; i < 5; i++)
        values[i] = (float)bytes[i];
    values[5] = (float)f->rule50_count / 99.0f;
    values[6] = 0.0f;
    values[7] = 1.0f;
}

static void aux_planes_of(const lc_frame *f, lc_planes_kind kind, uint64_t words[8],
                          float values[8])
{
    if (kind == LC_PLANES_UPSTREAM)
        aux_planes_upstream(f, words, values);
    else
        lc_frame_aux_planes(f, words, values);
}

void lc_frame_input_planes(const lc_frame *f, float *out)
{
    lc_frame_input_planes_as(f, LC_PLANES_INPUT_FORMAT, out);
}

void lc_frame_packed_planes(const lc_frame *f, uint8_t *bits, float *aux)
{
    lc_frame_packed_planes_as(f, LC_PLANES_INPUT_FORMAT, bits, aux);
}

void lc_frame_input_planes_as(const lc_frame *f, lc_planes_kind kind, float *out)
{
    for (unsigned p = 0; p < LC_HISTORY_PLANES; p++)
        expand_word(out + 64 * p, f->planes[p]);
    uint64_t words[8];
    float values[8];
    aux_planes_of(f, kind, words, values);
    float *aux = out + 64 * LC_HISTORY_PLANES; /* planes 104..111 */
    for (unsigned i = 0; i < 8; i++) {
        /* A plane of one value has every bit set; a mask has the value 1. */
        if (words[i] == ~(uint64_t)0)
            fill_plane(aux + 64 * i, values[i]);
        else
            expand_word(aux + 64 * i, words[i]);
    }
}

/* Byte r of each of the n words at src into dst[8 * p + r]: the words'
 * little-endian bytes, which on a little-endian machine are the words as
 * they lie in memory (one copy, no work per byte). */
static inline void put_words_le(uint8_t *restrict dst, const uint64_t *restrict src, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(dst, src, 8 * n);
#else
    for (size_t p = 0; p < n; p++)
        for (unsigned r = 0; r < 8; r++)
            dst[8 * p + r] = (uint8_t)(src[p] >> (8 * r));
#endif
}

void lc_frame_packed_planes_as(const lc_frame *f, lc_planes_kind kind, uint8_t *bits, float *aux)
{
    uint64_t words[8];
    aux_planes_of(f, kind, words, aux);
    put_words_le(bits, f->planes, LC_HISTORY_PLANES);
    put_words_le(bits + 8 * LC_HISTORY_PLANES, words, 8);
}

/* ---- the value targets ---- */

void lc_frame_values(const lc_frame *f, float *out)
{
    const float rows[18] = {
        f->result_q, f->result_d, f->plies_left, /* result */
        f->best_q,   f->best_d,   f->best_m,     /* best */
        f->played_q, f->played_d, f->played_m,   /* played */
        f->orig_q,   f->orig_d,   f->orig_m,     /* orig */
        f->root_q,   f->root_d,   f->root_m,     /* root */
        f->q_st,     f->d_st,     NAN,           /* st */
    };
    memcpy(out, rows, sizeof rows);
}

/* W, D, L from q and d as the legacy trainer's chunkparser makes them: in
 * double precision, (1 - d + q) / 2 and (1 - d - q) / 2 evaluated left to
 * right, rounded once to float32. Float arithmetic rounds twice and differs
 * in the last place for about half of real records. */
static void wdl(float q, float d, float out[3])
{
    double qd = q, dd = d;
    out[0] = (float)(0.5 * (1.0 - dd + qd));
    out[1] = d;
    out[2] = (float)(0.5 * (1.0 - dd - qd));
}

void lc_frame_legacy_targets(const lc_frame *f, float winner[3], float best_q[3], float *plies_left)
{
    if (f->version >= 6) {
        wdl(f->result_q, f->result_d, winner);
    } else {
        /* One-hot from the int8 result; a malformed value counts by its sign. */
        winner[0] = f->result > 0 ? 1.0f : 0.0f;
        winner[1] = f->result == 0 ? 1.0f : 0.0f;
        winner[2] = f->result < 0 ? 1.0f : 0.0f;
    }
    /* The legacy parser pads a V3 record with zeros where V4 has root_q,
     * best_q, root_d and best_d, and V3 and V4 where V5 has root_m, best_m
     * and plies_left; it reads the padding as values. */
    if (f->version == 3)
        wdl(0.0f, 0.0f, best_q);
    else
        wdl(f->best_q, f->best_d, best_q);
    /* Every version: a plies_left of 0 (padding, or stored 0) falls back to
     * the invariance byte (move_count before V5), as the legacy parser does;
     * a stored NaN stays NaN there too. */
    float pl = f->version < 5 ? 0.0f : f->plies_left;
    if (pl == 0.0f)
        pl = (float)f->invariance_info;
    *plies_left = pl;
}
