/*
 * packed_chunk: see packed_chunk.h for the form. Here: the symmetries of the
 * square on plane words, the block encoder and decoder, and the decoder's
 * per-thread memory of the blocks it decoded.
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
#include "format/lc0/packed_chunk.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
/* For ZSTD_c_literalCompressionMode, a parameter zstd calls experimental;
 * it is set through the stable ZSTD_CCtx_setParameter, which refuses what
 * a library does not know (then literals are compressed as usual). */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
/* zstd 1.5.1 renamed the enum (ZSTD_lcm_uncompressed became ZSTD_ps_disable);
 * the value, 2, is the same in both. */
#if ZSTD_VERSION_NUMBER >= 10501
#define LITERALS_RAW ZSTD_ps_disable
#else
#define LITERALS_RAW ZSTD_lcm_uncompressed
#endif

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
    uint32_t n_blocks;
    uint32_t bytes;                     /* the whole allocation */
    uint64_t serial;                    /* unique in the process: the decoder's memory key */
    _Atomic(float *) aux[LC_AUX_SLOTS]; /* a reader's floats (lc_packed_chunk_attach_aux) */
    uint32_t off[]; /* n_blocks + 1 offsets of the blocks in the data that follows */
};

static atomic_uint_fast64_t next_serial = 1;

static const uint8_t *chunk_data(const lc_packed_chunk *c)
{
    return (const uint8_t *)(c->off + c->n_blocks + 1);
}

/* ---- symmetries ---- */

static inline uint64_t flip_files(uint64_t x)
{
    x = (x >> 1 & 0x5555555555555555ull) | (x & 0x5555555555555555ull) << 1;
    x = (x >> 2 & 0x3333333333333333ull) | (x & 0x3333333333333333ull) << 2;
    return (x >> 4 & 0x0F0F0F0F0F0F0F0Full) | (x & 0x0F0F0F0F0F0F0F0Full) << 4;
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

/* The symmetry that maps prev's step 0 onto cur's step 1 exactly, trying
 * `first` before the others; NO_SYMMETRY when none does. */
static unsigned find_symmetry(const uint64_t *prev, const uint64_t *cur, unsigned first)
{
    for (unsigned a = 0; a <= 8; a++) {
        unsigned k = a == 0 ? first : a - 1;
        if (a > 0 && k == first)
            continue;
        bool same = true, any = false;
        for (unsigned j = 0; j < STEP_PLANES && same; j++) {
            uint64_t p = prev[other_side[j]];
            any |= p != 0;
            same = cur[STEP_PLANES + j] == symmetry(p, k);
        }
        if (same && any)
            return k;
    }
    return NO_SYMMETRY;
}

/* XOR the prediction into each step of planes (a copy of cur) where that
 * leaves fewer non-zero words; the mask of those steps. */
static uint8_t predict_steps(const uint64_t *prev, uint64_t *planes, unsigned k)
{
    uint8_t mask = 0;
    for (unsigned t = 1; t < 8; t++) {
        uint64_t x[STEP_PLANES];
        unsigned raw = 0, left = 0;
        for (unsigned j = 0; j < STEP_PLANES; j++) {
            uint64_t w = planes[t * STEP_PLANES + j];
            x[j] = w ^ predicted(prev, t, j, k);
            raw += w != 0;
            left += x[j] != 0;
        }
        if (left < raw) {
            memcpy(planes + t * STEP_PLANES, x, sizeof x);
            mask |= (uint8_t)(1u << t);
        }
    }
    return mask;
}

/* Undo predict_steps on planes, given the previous position's planes. */
static void unpredict_steps(const uint64_t *prev, uint64_t *planes, unsigned k, uint8_t mask)
{
    for (unsigned t = 1; t < 8; t++)
        if (mask & (1u << t))
            for (unsigned j = 0; j < STEP_PLANES; j++)
                planes[t * STEP_PLANES + j] ^= predicted(prev, t, j, k);
}

/* ---- growable scratch ---- */

static void reserve(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    *buf = lc_xrealloc(*buf, c);
    *cap = c;
}

/* ---- building ---- */

struct lc_pack_ctx {
    ZSTD_CCtx *cctx;
    unsigned block;
    uint8_t *raw, *words, *idx, *vals, *out; /* a block, its sections, the chunk */
    size_t raw_cap, words_cap, idx_cap, vals_cap, out_cap;
    uint32_t *offs;
    size_t offs_cap;
};

lc_pack_ctx *lc_pack_ctx_new(int level, unsigned block)
{
    lc_pack_ctx *ctx = lc_xcalloc(1, sizeof *ctx);
    ctx->cctx = ZSTD_createCCtx();
    if (!ctx->cctx)
        lc_fatal("out of memory creating a zstd compression context");
    ZSTD_CCtx_setParameter(ctx->cctx, ZSTD_c_compressionLevel, level);
    /* Literals (mostly float bytes) raw: Huffman coding them saves about 5%
     * of the bytes but costs a table to build in every block, which for
     * blocks this small is a fifth of packing and of decoding. */
    ZSTD_CCtx_setParameter(ctx->cctx, ZSTD_c_literalCompressionMode, LITERALS_RAW);
    ctx->block = block < 1 ? 1 : block > LC_PACK_BLOCK_MAX ? LC_PACK_BLOCK_MAX : block;
    return ctx;
}

void lc_pack_ctx_free(lc_pack_ctx *ctx)
{
    if (!ctx)
        return;
    ZSTD_freeCCtx(ctx->cctx);
    free(ctx->raw);
    free(ctx->words);
    free(ctx->idx);
    free(ctx->vals);
    free(ctx->out);
    free(ctx->offs);
    free(ctx);
}

static void put_u16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, 2);
}

static void write_head(uint8_t *h, const lc_frame *f, unsigned sym, uint8_t mask)
{
    h[H_SYM] = (uint8_t)sym;
    h[H_MASK] = mask;
    h[H_INPUT_FORMAT] = (uint8_t)f->input_format; /* checked: a known format, <= 133 */
    h[H_CASTLING + 0] = f->castling_us_ooo;
    h[H_CASTLING + 1] = f->castling_us_oo;
    h[H_CASTLING + 2] = f->castling_them_ooo;
    h[H_CASTLING + 3] = f->castling_them_oo;
    h[H_STM] = f->side_to_move_or_enpassant;
    h[H_RULE50] = f->rule50_count;
    h[H_INVARIANCE] = f->invariance_info;
    h[H_RESULT] = (uint8_t)f->result;
    const float v[18] = {
        f->root_q,   f->root_d,   f->root_m,   f->best_q,     f->best_d,   f->best_m,
        f->played_q, f->played_d, f->played_m, f->plies_left, f->result_q, f->result_d,
        f->orig_q,   f->orig_d,   f->orig_m,   f->q_st,       f->d_st,     f->policy_kld,
    };
    memcpy(h + H_FLOATS, v, sizeof v);
    put_u16(h + H_PLAYED_IDX, f->played_idx);
    put_u16(h + H_BEST_IDX, f->best_idx);
    put_u16(h + H_N_POLICY, f->n_policy);
    put_u16(h + H_OPP_IDX, f->opp_played_idx);
    put_u16(h + H_NEXT_IDX, f->next_played_idx);
}

/* Policy entry k of a frame. */
static inline uint16_t entry_index(const lc_frame *f, unsigned k)
{
    return k < LC_FRAME_INLINE_POLICY ? f->policy_idx[k]
                                      : f->overflow_idx[k - LC_FRAME_INLINE_POLICY];
}

static inline float entry_value(const lc_frame *f, unsigned k)
{
    return k < LC_FRAME_INLINE_POLICY ? f->policy_val[k]
                                      : f->overflow_val[k - LC_FRAME_INLINE_POLICY];
}

/* Append the non-zero words of planes to ctx->words (at *len) and set
 * their bits in mask. */
static void put_words(lc_pack_ctx *ctx, const uint64_t *planes, uint8_t *mask, size_t *len)
{
    memset(mask, 0, MASK_BYTES);
    reserve(&ctx->words, &ctx->words_cap, *len + PLANES_BYTES);
    uint8_t *w = ctx->words + *len;
    for (unsigned i = 0; i < LC_HISTORY_PLANES; i++) {
        if (!planes[i])
            continue;
        mask[i / 8] |= (uint8_t)(1u << (i % 8));
        memcpy(w, &planes[i], 8);
        w += 8;
    }
    *len = (size_t)(w - ctx->words);
}

/* Append the policy of f to ctx->idx and ctx->vals. */
static void put_policy(lc_pack_ctx *ctx, const lc_frame *f, size_t *idx_len, size_t *vals_len)
{
    /* At most 3 bytes of index and 4 of value per entry. */
    reserve(&ctx->idx, &ctx->idx_cap, *idx_len + 3 * (size_t)f->n_policy);
    reserve(&ctx->vals, &ctx->vals_cap, *vals_len + 4 * (size_t)f->n_policy);
    uint8_t *q = ctx->idx + *idx_len, *v = ctx->vals + *vals_len;
    uint16_t last = 0;
    for (unsigned k = 0; k < f->n_policy; k++) {
        uint16_t i = entry_index(f, k);
        unsigned d = (unsigned)(i - last); /* ascending, so i >= last */
        if (i >= last && d < INDEX_ESCAPE) {
            *q++ = (uint8_t)d;
        } else {
            *q++ = INDEX_ESCAPE;
            put_u16(q, i);
            q += 2;
        }
        last = i;
        float val = entry_value(f, k);
        memcpy(v, &val, 4);
        v += 4;
    }
    *idx_len = (size_t)(q - ctx->idx);
    *vals_len = (size_t)(v - ctx->vals);
}

/*
 * Encode positions [first, first + nb) into ctx->raw as a block before
 * compression: heads, plane masks, plane words, indices, values. Checks
 * each record; on a bad one returns its code.
 */
static int encode_block(lc_pack_ctx *ctx, const uint8_t *records, size_t record_size,
                        uint32_t first, uint32_t nb, uint32_t version, size_t *raw_len,
                        const char **reason, uint32_t *bad_at)
{
    size_t fixed = (size_t)nb * (HEAD_BYTES + MASK_BYTES);
    size_t words_len = 0, idx_len = 0, vals_len = 0;
    uint64_t prev[LC_HISTORY_PLANES];
    unsigned hint = 2; /* a flip of the ranks: the usual case */
    reserve(&ctx->raw, &ctx->raw_cap, fixed);
    for (uint32_t p = 0; p < nb; p++) {
        lc_frame f;
        const uint8_t *rec = records + (size_t)(first + p) * record_size;
        int rc = lc_frame_from_checked_record(rec, version, &f, reason);
        if (rc != 0) {
            *bad_at = first + p;
            return rc;
        }
        uint64_t planes[LC_HISTORY_PLANES];
        memcpy(planes, f.planes, sizeof planes);
        unsigned sym = NO_SYMMETRY;
        uint8_t mask = 0;
        if (p > 0) {
            sym = find_symmetry(prev, f.planes, hint);
            if (sym != NO_SYMMETRY) {
                hint = sym;
                mask = predict_steps(prev, planes, sym);
            }
        }
        memcpy(prev, f.planes, sizeof prev);
        write_head(ctx->raw + (size_t)p * HEAD_BYTES, &f, sym, mask);
        put_words(ctx, planes, ctx->raw + (size_t)nb * HEAD_BYTES + (size_t)p * MASK_BYTES,
                  &words_len);
        put_policy(ctx, &f, &idx_len, &vals_len);
        lc_frame_fini(&f);
    }
    *raw_len = fixed + words_len + idx_len + vals_len;
    reserve(&ctx->raw, &ctx->raw_cap, *raw_len);
    uint8_t *r = ctx->raw + fixed;
    /* Sections that may be empty (no policy at all) may be unallocated. */
    if (words_len)
        memcpy(r, ctx->words, words_len);
    if (idx_len)
        memcpy(r + words_len, ctx->idx, idx_len);
    if (vals_len)
        memcpy(r + words_len + idx_len, ctx->vals, vals_len);
    return 0;
}

int lc_packed_chunk_build(lc_pack_ctx *ctx, const uint8_t *records, size_t record_size, uint32_t n,
                          uint32_t version, lc_packed_chunk **out, const char **reason,
                          uint32_t *bad_at)
{
    *out = NULL;
    if (reason)
        *reason = NULL;
    uint32_t block = ctx->block;
    uint32_t n_blocks = n ? (n + block - 1) / block : 0;
    if (ctx->offs_cap < (size_t)n_blocks + 1) {
        ctx->offs_cap = (size_t)n_blocks + 1;
        ctx->offs = lc_xrealloc(ctx->offs, ctx->offs_cap * sizeof *ctx->offs);
    }
    size_t out_len = 0;
    for (uint32_t b = 0; b < n_blocks; b++) {
        uint32_t first = b * block;
        uint32_t nb = n - first < block ? n - first : block;
        size_t raw_len;
        int rc =
            encode_block(ctx, records, record_size, first, nb, version, &raw_len, reason, bad_at);
        if (rc != 0)
            return rc;
        size_t bound = ZSTD_compressBound(raw_len);
        reserve(&ctx->out, &ctx->out_cap, out_len + bound);
        size_t c = ZSTD_compress2(ctx->cctx, ctx->out + out_len, bound, ctx->raw, raw_len);
        if (ZSTD_isError(c))
            lc_fatal("zstd could not compress a block of %zu bytes: %s", raw_len,
                     ZSTD_getErrorName(c));
        ctx->offs[b] = (uint32_t)out_len;
        out_len += c;
    }
    ctx->offs[n_blocks] = (uint32_t)out_len;
    size_t head = sizeof(lc_packed_chunk) + ((size_t)n_blocks + 1) * sizeof(uint32_t);
    lc_packed_chunk *c = lc_xmalloc(head + out_len);
    atomic_init(&c->refs, 1);
    c->version = version;
    c->n = n;
    c->block = block;
    c->n_blocks = n_blocks;
    c->bytes = (uint32_t)(head + out_len);
    c->serial = atomic_fetch_add_explicit(&next_serial, 1, memory_order_relaxed);
    for (unsigned i = 0; i < LC_AUX_SLOTS; i++)
        atomic_init(&c->aux[i], NULL);
    memcpy(c->off, ctx->offs, ((size_t)n_blocks + 1) * sizeof(uint32_t));
    memcpy((uint8_t *)chunk_data(c), ctx->out, out_len);
    *out = c;
    return 0;
}

lc_packed_chunk *lc_packed_chunk_ref(lc_packed_chunk *c)
{
    if (c)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    return c;
}

void lc_packed_chunk_unref(lc_packed_chunk *c)
{
    if (c && atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) {
        for (unsigned i = 0; i < LC_AUX_SLOTS; i++)
            free(atomic_load_explicit(&c->aux[i], memory_order_acquire));
        free(c);
    }
}

const float *lc_packed_chunk_aux(const lc_packed_chunk *c, unsigned slot)
{
    return atomic_load_explicit(&((lc_packed_chunk *)c)->aux[slot], memory_order_acquire);
}

const float *lc_packed_chunk_attach_aux(lc_packed_chunk *c, unsigned slot, float *values)
{
    float *expected = NULL;
    if (atomic_compare_exchange_strong_explicit(&c->aux[slot], &expected, values,
                                                memory_order_acq_rel, memory_order_acquire))
        return values;
    free(values);
    return expected;
}

uint32_t lc_packed_chunk_positions(const lc_packed_chunk *c)
{
    return c->n;
}

uint32_t lc_packed_chunk_version(const lc_packed_chunk *c)
{
    return c->version;
}

size_t lc_packed_chunk_bytes(const lc_packed_chunk *c)
{
    return c->bytes;
}

/* ---- decoding ---- */

#define NOT_DECODED UINT32_MAX

struct lc_unpack_ctx {
    ZSTD_DCtx *dctx;
    uint8_t *raw; /* a block as decompressed */
    size_t raw_cap;
    uint64_t serial; /* the chunk whose blocks are held; 0 for none */
    uint8_t *buf;    /* decoded blocks, each at an 8-byte aligned offset */
    size_t cap, used;
    uint32_t *block_at; /* per block of that chunk: its offset in buf */
    uint32_t *idx_at;   /* per position of a decoded block: its indices in buf */
    uint32_t *val_at;   /* and its values */
    size_t cap_blocks, cap_positions;
    uint64_t decoded;
};

lc_unpack_ctx *lc_unpack_ctx_new(void)
{
    lc_unpack_ctx *ctx = lc_xcalloc(1, sizeof *ctx);
    ctx->dctx = ZSTD_createDCtx();
    if (!ctx->dctx)
        lc_fatal("out of memory creating a zstd decompression context");
    return ctx;
}

void lc_unpack_ctx_free(lc_unpack_ctx *ctx)
{
    if (!ctx)
        return;
    ZSTD_freeDCtx(ctx->dctx);
    free(ctx->raw);
    free(ctx->buf);
    free(ctx->block_at);
    free(ctx->idx_at);
    free(ctx->val_at);
    free(ctx);
}

uint64_t lc_unpack_ctx_blocks_decoded(const lc_unpack_ctx *ctx)
{
    return ctx->decoded;
}

/* Forget the blocks held unless they are c's. */
static void begin_chunk(lc_unpack_ctx *ctx, const lc_packed_chunk *c)
{
    if (ctx->serial == c->serial)
        return;
    ctx->serial = c->serial;
    ctx->used = 0;
    if (ctx->cap_blocks < c->n_blocks) {
        ctx->cap_blocks = c->n_blocks;
        ctx->block_at = lc_xrealloc(ctx->block_at, ctx->cap_blocks * sizeof *ctx->block_at);
    }
    if (ctx->cap_positions < c->n) {
        ctx->cap_positions = c->n;
        ctx->idx_at = lc_xrealloc(ctx->idx_at, ctx->cap_positions * sizeof *ctx->idx_at);
        ctx->val_at = lc_xrealloc(ctx->val_at, ctx->cap_positions * sizeof *ctx->val_at);
    }
    for (uint32_t b = 0; b < c->n_blocks; b++)
        ctx->block_at[b] = NOT_DECODED;
}

static uint16_t get_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static int bad_block(lc_error *err, const lc_packed_chunk *c, uint32_t b, const char *what)
{
    return lc_error_set(err, LC_EFORMAT, "packed chunk: block %u of %u %s", b, c->n_blocks, what);
}

/*
 * Decode block b of c into ctx->buf as [planes][heads][indices][values]
 * (planes whole and rebuilt, each position from the one before it), and
 * note where each position's indices and values start.
 */
static int decode_block(const lc_packed_chunk *c, lc_unpack_ctx *ctx, uint32_t b, lc_error *err)
{
    const uint8_t *src = chunk_data(c) + c->off[b];
    size_t src_len = c->off[b + 1] - c->off[b];
    unsigned long long size = ZSTD_getFrameContentSize(src, src_len);
    uint32_t first = b * c->block;
    uint32_t nb = c->n - first < c->block ? c->n - first : c->block;
    size_t fixed = (size_t)nb * (HEAD_BYTES + MASK_BYTES);
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR || size < fixed ||
        size > UINT32_MAX)
        return bad_block(err, c, b, "has a bad header");
    reserve(&ctx->raw, &ctx->raw_cap, (size_t)size);
    size_t got = ZSTD_decompressDCtx(ctx->dctx, ctx->raw, (size_t)size, src, src_len);
    if (ZSTD_isError(got) || got != size)
        return bad_block(err, c, b, ZSTD_isError(got) ? ZSTD_getErrorName(got) : "is short");
    const uint8_t *heads = ctx->raw, *masks = ctx->raw + (size_t)nb * HEAD_BYTES;
    size_t n_words = 0;
    for (size_t i = 0; i < (size_t)nb * MASK_BYTES; i++)
        n_words += (size_t)__builtin_popcount(masks[i]);
    const uint8_t *words = ctx->raw + fixed;
    size_t tail = fixed + 8 * n_words; /* indices and values follow the words */
    if (tail > size)
        return bad_block(err, c, b, "is inconsistent");
    size_t tail_len = (size_t)size - tail;
    size_t image = (size_t)nb * (PLANES_BYTES + HEAD_BYTES) + tail_len;
    size_t at = (ctx->used + 7) & ~(size_t)7;
    if (at + image > UINT32_MAX)
        return lc_error_set(err, LC_EFORMAT, "packed chunk: too large to decode");
    reserve(&ctx->buf, &ctx->cap, at + image);
    uint8_t *dst = ctx->buf + at;
    /* Planes: the non-zero words where the mask says (visiting the set
     * bits only: most words are zero), then the prediction from the
     * position before, decoded in place. */
    for (uint32_t p = 0; p < nb; p++) {
        const uint8_t *m = masks + (size_t)p * MASK_BYTES;
        uint64_t cur[LC_HISTORY_PLANES];
        memset(cur, 0, sizeof cur);
        for (unsigned byte = 0; byte < MASK_BYTES; byte++) {
            for (unsigned bits = m[byte]; bits; bits &= bits - 1) {
                memcpy(&cur[8 * byte + (unsigned)__builtin_ctz(bits)], words, 8);
                words += 8;
            }
        }
        const uint8_t *h = heads + (size_t)p * HEAD_BYTES;
        if (p > 0 && h[H_SYM] != NO_SYMMETRY && h[H_MASK]) {
            uint64_t prev[LC_HISTORY_PLANES];
            memcpy(prev, dst + (size_t)(p - 1) * PLANES_BYTES, sizeof prev);
            unpredict_steps(prev, cur, h[H_SYM] & 7u, h[H_MASK]);
        }
        memcpy(dst + (size_t)p * PLANES_BYTES, cur, sizeof cur);
    }
    size_t fixed_image = (size_t)nb * (PLANES_BYTES + HEAD_BYTES);
    memcpy(dst + (size_t)nb * PLANES_BYTES, heads, (size_t)nb * HEAD_BYTES);
    memcpy(dst + fixed_image, ctx->raw + tail, tail_len);
    /* Indices: variable length, so walk them; values: 4 bytes an entry. */
    size_t q = fixed_image, total = 0;
    for (uint32_t p = 0; p < nb; p++) {
        unsigned n = get_u16(heads + (size_t)p * HEAD_BYTES + H_N_POLICY);
        ctx->idx_at[first + p] = (uint32_t)(at + q);
        for (unsigned k = 0; k < n && q < image; k++)
            q += dst[q] == INDEX_ESCAPE ? 3 : 1;
        total += n;
    }
    if (q + 4 * total != image)
        return bad_block(err, c, b, "is inconsistent");
    size_t v = q;
    for (uint32_t p = 0; p < nb; p++) {
        ctx->val_at[first + p] = (uint32_t)(at + v);
        v += 4 * (size_t)get_u16(heads + (size_t)p * HEAD_BYTES + H_N_POLICY);
    }
    ctx->block_at[b] = (uint32_t)at;
    ctx->used = at + image;
    ctx->decoded++;
    return 0;
}

static void read_head(const uint8_t *h, lc_frame *f)
{
    f->input_format = h[H_INPUT_FORMAT];
    f->castling_us_ooo = h[H_CASTLING + 0];
    f->castling_us_oo = h[H_CASTLING + 1];
    f->castling_them_ooo = h[H_CASTLING + 2];
    f->castling_them_oo = h[H_CASTLING + 3];
    f->side_to_move_or_enpassant = h[H_STM];
    f->rule50_count = h[H_RULE50];
    f->invariance_info = h[H_INVARIANCE];
    f->result = (int8_t)h[H_RESULT];
    float v[18];
    memcpy(v, h + H_FLOATS, sizeof v);
    f->root_q = v[0];
    f->root_d = v[1];
    f->root_m = v[2];
    f->best_q = v[3];
    f->best_d = v[4];
    f->best_m = v[5];
    f->played_q = v[6];
    f->played_d = v[7];
    f->played_m = v[8];
    f->plies_left = v[9];
    f->result_q = v[10];
    f->result_d = v[11];
    f->orig_q = v[12];
    f->orig_d = v[13];
    f->orig_m = v[14];
    f->q_st = v[15];
    f->d_st = v[16];
    f->policy_kld = v[17];
    f->played_idx = get_u16(h + H_PLAYED_IDX);
    f->best_idx = get_u16(h + H_BEST_IDX);
    f->n_policy = get_u16(h + H_N_POLICY);
    f->opp_played_idx = get_u16(h + H_OPP_IDX);
    f->next_played_idx = get_u16(h + H_NEXT_IDX);
}

int lc_packed_chunk_frame(const lc_packed_chunk *c, lc_unpack_ctx *ctx, uint32_t i, lc_frame *out,
                          lc_error *err)
{
    out->n_policy = 0;
    out->overflow_idx = NULL;
    out->overflow_val = NULL;
    if (i >= c->n)
        return lc_error_set(err, LC_EFORMAT, "packed chunk: position %u of %u", i, c->n);
    begin_chunk(ctx, c);
    uint32_t b = i / c->block, p = i % c->block;
    if (ctx->block_at[b] == NOT_DECODED) {
        int rc = decode_block(c, ctx, b, err);
        if (rc != 0)
            return rc;
    }
    uint32_t first = b * c->block;
    uint32_t nb = c->n - first < c->block ? c->n - first : c->block;
    const uint8_t *base = ctx->buf + ctx->block_at[b];
    memcpy(out->planes, base + (size_t)p * PLANES_BYTES, PLANES_BYTES);
    read_head(base + (size_t)nb * PLANES_BYTES + (size_t)p * HEAD_BYTES, out);
    out->version = c->version;
    unsigned n = out->n_policy;
    if (n > LC_FRAME_INLINE_POLICY) {
        out->overflow_idx = lc_xmalloc((n - LC_FRAME_INLINE_POLICY) * sizeof *out->overflow_idx);
        out->overflow_val = lc_xmalloc((n - LC_FRAME_INLINE_POLICY) * sizeof *out->overflow_val);
    }
    const uint8_t *q = ctx->buf + ctx->idx_at[i];
    const uint8_t *vals = ctx->buf + ctx->val_at[i];
    uint16_t last = 0;
    for (unsigned k = 0; k < n; k++) {
        uint16_t idx;
        if (*q == INDEX_ESCAPE) {
            idx = get_u16(q + 1);
            q += 3;
        } else {
            idx = (uint16_t)(last + *q++);
        }
        last = idx;
        float v;
        memcpy(&v, vals + 4 * (size_t)k, 4);
        if (k < LC_FRAME_INLINE_POLICY) {
            out->policy_idx[k] = idx;
            out->policy_val[k] = v;
        } else {
            out->overflow_idx[k - LC_FRAME_INLINE_POLICY] = idx;
            out->overflow_val[k - LC_FRAME_INLINE_POLICY] = v;
        }
    }
    return 0;
}
