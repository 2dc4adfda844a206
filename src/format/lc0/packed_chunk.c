/*
 * packed_chunk: see packed_chunk.h for the form. Here: the block encoder
 * (finding the symmetry that predicts a position best) and the chunk's
 * reference count and accessors. The decoder is packed_chunk_decode.c;
 * what both share (the layout, the symmetries) is packed_chunk_layout.h.
 */
#include "format/lc0/packed_chunk_layout.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
/* For ZSTD_c_literalCompressionMode, a parameter zstd calls experimental;
 * it is set through the stable ZSTD_CCtx_setParameter, which refuses what
 * a library does not know (then literals are compressed as usual). */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#if LC_HAVE_LZ4
#include <lz4hc.h>
#include <sys/mman.h>
#endif
/* zstd 1.5.1 renamed the enum (ZSTD_lcm_uncompressed became ZSTD_ps_disable);
 * the value, 2, is the same in both. */
#if ZSTD_VERSION_NUMBER >= 10501
#define LITERALS_RAW ZSTD_ps_disable
#else
#define LITERALS_RAW ZSTD_lcm_uncompressed
#endif

static atomic_uint_fast64_t next_serial = 1;

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

/* ---- building ---- */

struct lc_pack_ctx {
    ZSTD_CCtx *cctx;
#if LC_HAVE_LZ4
    /* Reset cheaply at each block (LZ4_resetStreamHC_fast); made at the
     * first block, given back by lc_pack_ctx_rest (lz4_state). */
    LZ4_streamHC_t *lz4;
#endif
    int codec;
    unsigned block;
    uint8_t *raw, *words, *idx, *vals, *out; /* a block, its sections, the chunk */
    size_t raw_cap, words_cap, idx_cap, vals_cap, out_cap;
    uint32_t *offs;
    size_t offs_cap;
};

bool lc_pack_codec_built(int codec)
{
    return codec == LC_PACK_ZSTD || (codec == LC_PACK_LZ4 && LC_HAVE_LZ4);
}

lc_pack_ctx *lc_pack_ctx_new(int level, unsigned block)
{
    return lc_pack_ctx_new_codec(LC_PACK_CODEC_DEFAULT, level, block);
}

lc_pack_ctx *lc_pack_ctx_new_codec(int codec, int level, unsigned block)
{
    lc_pack_ctx *ctx = lc_xcalloc(1, sizeof *ctx);
    ctx->codec = lc_pack_codec_built(codec) ? codec : LC_PACK_ZSTD;
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
    lc_pack_ctx_rest(ctx);
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

#if LC_HAVE_LZ4
/* LZ4's compression state: 256 KB, in pages of its own so that a rest
 * (lc_pack_ctx_rest) gives them back to the system, not to a heap that
 * would keep them resident. */
static LZ4_streamHC_t *lz4_state(lc_pack_ctx *ctx)
{
    if (!ctx->lz4) {
        void *m = mmap(NULL, sizeof(LZ4_streamHC_t), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED || !(ctx->lz4 = LZ4_initStreamHC(m, sizeof(LZ4_streamHC_t))))
            lc_fatal("out of memory creating an LZ4 compression state");
    }
    return ctx->lz4;
}
#endif

void lc_pack_ctx_rest(lc_pack_ctx *ctx)
{
#if LC_HAVE_LZ4
    if (ctx && ctx->lz4) {
        munmap(ctx->lz4, sizeof(LZ4_streamHC_t));
        ctx->lz4 = NULL;
    }
#else
    (void)ctx;
#endif
}

/* The block of raw_len bytes in ctx->raw compressed to ctx->out at out_len;
 * its length. */
static size_t compress_block(lc_pack_ctx *ctx, size_t raw_len, size_t out_len)
{
#if LC_HAVE_LZ4
    if (ctx->codec == LC_PACK_LZ4) {
        int bound = LZ4_compressBound((int)raw_len);
        reserve(&ctx->out, &ctx->out_cap, out_len + (size_t)bound);
        /* A new stream for each block (blocks decode alone), without
         * clearing its tables: positions of the last block are out of its
         * window. */
        LZ4_streamHC_t *lz4 = lz4_state(ctx);
        LZ4_resetStreamHC_fast(lz4, LC_PACK_LZ4_LEVEL);
        int c = LZ4_compress_HC_continue(lz4, (const char *)ctx->raw, (char *)ctx->out + out_len,
                                         (int)raw_len, bound);
        if (c <= 0)
            lc_fatal("LZ4 could not compress a block of %zu bytes", raw_len);
        return (size_t)c;
    }
#endif
    size_t bound = ZSTD_compressBound(raw_len);
    reserve(&ctx->out, &ctx->out_cap, out_len + bound);
    size_t c = ZSTD_compress2(ctx->cctx, ctx->out + out_len, bound, ctx->raw, raw_len);
    if (ZSTD_isError(c))
        lc_fatal("zstd could not compress a block of %zu bytes: %s", raw_len, ZSTD_getErrorName(c));
    return c;
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
        ctx->offs[b] = (uint32_t)out_len;
        out_len += compress_block(ctx, raw_len, out_len);
    }
    ctx->offs[n_blocks] = (uint32_t)out_len;
    size_t head = sizeof(lc_packed_chunk) + ((size_t)n_blocks + 1) * sizeof(uint32_t);
    lc_packed_chunk *c = lc_xmalloc(head + out_len);
    atomic_init(&c->refs, 1);
    c->version = version;
    c->n = n;
    c->block = block;
    c->codec = (uint32_t)ctx->codec;
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
