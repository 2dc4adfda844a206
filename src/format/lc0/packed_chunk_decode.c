/*
 * packed_chunk_decode: the decoder of packed chunks (see packed_chunk.h),
 * with its per-thread memory of the blocks it decoded; the encoder is
 * packed_chunk.c, and what both share is packed_chunk_layout.h.
 */
#include "format/lc0/packed_chunk_layout.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Undo predict_steps on planes, given the previous position's planes. */
static void unpredict_steps(const uint64_t *prev, uint64_t *planes, unsigned k, uint8_t mask)
{
    for (unsigned t = 1; t < 8; t++)
        if (mask & (1u << t))
            for (unsigned j = 0; j < STEP_PLANES; j++)
                planes[t * STEP_PLANES + j] ^= predicted(prev, t, j, k);
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
    f->origin = (lc_frame_origin){0};
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
