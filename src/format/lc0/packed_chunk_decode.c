/*
 * packed_chunk_decode: the decoder of packed chunks (see packed_chunk.h),
 * with its per-thread memory of the blocks it decoded; the encoder is
 * packed_chunk.c, and what both share is packed_chunk_layout.h.
 */
#include "format/lc0/packed_chunk_layout.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#if LC_HAVE_LZ4
#include <lz4.h>
#endif

/* Undo predict_steps on planes (in place), given the previous position's
 * planes, for the symmetry K (a constant where it is inlined: the
 * symmetry's branches fold away). */
static inline void unpredict_as(const uint64_t *prev, uint64_t *planes, unsigned K, uint8_t mask)
{
    for (unsigned t = 1; t < 8; t++) {
        if (!(mask & (1u << t)))
            continue;
        /* predicted(), its other_side table unrolled: our 6 planes from
         * their 6, theirs from ours, the repetitions' plane from itself:
         * no table to read, and loops of a fixed length. */
        uint64_t *out = planes + t * STEP_PLANES;
        const uint64_t *in = prev + (t - 1) * STEP_PLANES;
        for (unsigned j = 0; j < 6; j++)
            out[j] ^= symmetry(in[6 + j], K);
        for (unsigned j = 0; j < 6; j++)
            out[6 + j] ^= symmetry(in[j], K);
        out[12] ^= symmetry(in[12], K);
    }
}

/* unpredict_as for symmetry k (0..7), one specialised loop each. */
static void unpredict_steps(const uint64_t *prev, uint64_t *planes, unsigned k, uint8_t mask)
{
    switch (k & 7u) {
    case 0:
        unpredict_as(prev, planes, 0, mask);
        break;
    case 1:
        unpredict_as(prev, planes, 1, mask);
        break;
    case 2:
        unpredict_as(prev, planes, 2, mask);
        break;
    case 3:
        unpredict_as(prev, planes, 3, mask);
        break;
    case 4:
        unpredict_as(prev, planes, 4, mask);
        break;
    case 5:
        unpredict_as(prev, planes, 5, mask);
        break;
    case 6:
        unpredict_as(prev, planes, 6, mask);
        break;
    default:
        unpredict_as(prev, planes, 7, mask);
        break;
    }
}

/* Bits set in the n bytes at p, eight bytes at a time in plain integer
 * arithmetic: no popcount instruction is needed (the build targets every
 * x86-64, where a __builtin_popcount is a call into libgcc). */
static size_t popcount_bytes(const uint8_t *p, size_t n)
{
    size_t total = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, p + i, 8);
        x -= (x >> 1) & 0x5555555555555555ull;
        x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
        total += (size_t)((x * 0x0101010101010101ull) >> 56);
    }
    for (; i < n; i++)
        for (unsigned b = p[i]; b; b &= b - 1)
            total++;
    return total;
}

/* ---- decoding ---- */

#define NOT_DECODED UINT32_MAX

/* A block decoded (decompressed) for the chunk held: where it lies in the
 * context's buf (offsets, as buf moves when it grows) and how far its
 * frames are made. A frame is made when it or one after it in its block
 * is asked for (a position's planes are predicted from the one before
 * it), so a use that wants one position of a block makes the frames up to
 * it, half the block on average, not all of them. */
typedef struct block_state {
    uint32_t at;   /* its frames; NOT_DECODED */
    uint32_t done; /* frames made, from its first */
    uint32_t nb;   /* its positions */
    /* The sections, and how far the frames made have read them. */
    uint32_t heads, masks, words, indices, vals, values, extra;
} block_state;

struct lc_unpack_ctx {
    ZSTD_DCtx *dctx;
    uint64_t serial; /* the chunk whose blocks are held; 0 for none */
    uint8_t *buf;    /* decoded blocks, each at an 8-byte aligned offset */
    size_t cap, used;
    block_state *blocks; /* per block of that chunk */
    /* Per position of a decoded block with more than LC_FRAME_INLINE_POLICY
     * entries: where the rest of its indices (u16) and values lie in buf. */
    uint32_t *idx_at, *val_at;
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
    free(ctx->buf);
    free(ctx->blocks);
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
        ctx->blocks = lc_xrealloc(ctx->blocks, ctx->cap_blocks * sizeof *ctx->blocks);
    }
    if (ctx->cap_positions < c->n) {
        ctx->cap_positions = c->n;
        ctx->idx_at = lc_xrealloc(ctx->idx_at, ctx->cap_positions * sizeof *ctx->idx_at);
        ctx->val_at = lc_xrealloc(ctx->val_at, ctx->cap_positions * sizeof *ctx->val_at);
    }
    for (uint32_t b = 0; b < c->n_blocks; b++)
        ctx->blocks[b].at = NOT_DECODED;
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

/* Slack after a block's raw bytes: the plane loop reads a word ahead. */
#define RAW_SLACK 8

/* A position's 104 plane words: each the next of *words where its mask bit
 * is set, else 0, chosen without a branch (the word ahead is read either
 * way: RAW_SLACK); eight zero words at once where a mask byte is 0 (most
 * are: the prediction leaves few words). */
static const uint8_t *decode_words(uint64_t *planes, const uint8_t *mask, const uint8_t *words)
{
    for (unsigned byte = 0; byte < MASK_BYTES; byte++) {
        unsigned bits = mask[byte];
        uint64_t *out = planes + 8 * byte;
        if (!bits) {
            memset(out, 0, 8 * sizeof *out);
            continue;
        }
        for (unsigned j = 0; j < 8; j++, bits >>= 1) {
            uint64_t w;
            memcpy(&w, words, 8);
            uint64_t set = bits & 1u;
            out[j] = w & (0 - set);
            words += 8 * set;
        }
    }
    return words;
}

/* The fields of a position's head (all but the planes and the policy). */
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
    f->overflow_idx = NULL;
    f->overflow_val = NULL;
    f->origin = (lc_frame_origin){0};
}

/*
 * A position's n policy indices from the u8 deltas and escapes at *q (up to
 * end): the first LC_FRAME_INLINE_POLICY into f with their values (from
 * vals: entry by entry, which for a few dozen costs less than a copy's
 * start), the rest into extra; *q moved past them. False when they run
 * past end.
 */
static bool decode_indices(const uint8_t **q, const uint8_t *end, unsigned n, const uint8_t *vals,
                           lc_frame *f, uint16_t *extra)
{
    const uint8_t *r = *q;
    if ((size_t)(end - r) < n)
        return false;
    uint16_t last = 0;
    for (unsigned k = 0; k < n; k++) {
        if (__builtin_expect(*r == INDEX_ESCAPE, 0)) {
            if (end - r < 3)
                return false;
            last = get_u16(r + 1);
            r += 3;
        } else {
            last = (uint16_t)(last + *r++);
        }
        if (__builtin_expect(k < LC_FRAME_INLINE_POLICY, 1)) {
            f->policy_idx[k] = last;
            memcpy(&f->policy_val[k], vals + 4 * (size_t)k, 4);
        } else {
            extra[k - LC_FRAME_INLINE_POLICY] = last;
        }
    }
    *q = r;
    return true;
}

/*
 * The frames of block b (state st) up to position upto (exclusive) of the
 * block, each whole but for the overflow of a long policy, whose indices
 * go to the block's extra (u16, in buf) and whose place ctx->idx_at and
 * ctx->val_at note. False when the indices run past their section, or,
 * once the block's last frame is made, do not fill it exactly.
 */
static bool decode_frames(lc_unpack_ctx *ctx, block_state *st, uint32_t first, uint32_t upto,
                          uint32_t version)
{
    uint8_t *buf = ctx->buf;
    lc_frame *frames = (lc_frame *)(void *)(buf + st->at);
    const uint8_t *words = buf + st->words, *q = buf + st->indices, *vals = buf + st->vals;
    const uint8_t *end = buf + st->values;
    uint16_t *extra = (uint16_t *)(void *)(buf + st->extra);
    for (uint32_t p = st->done; p < upto; p++) {
        lc_frame *f = &frames[p];
        const uint8_t *h = buf + st->heads + (size_t)p * HEAD_BYTES;
        words = decode_words(f->planes, buf + st->masks + (size_t)p * MASK_BYTES, words);
        if (p > 0 && h[H_SYM] != NO_SYMMETRY && h[H_MASK])
            unpredict_steps(frames[p - 1].planes, f->planes, h[H_SYM] & 7u, h[H_MASK]);
        read_head(h, f);
        f->version = version;
        unsigned n = f->n_policy;
        if (!decode_indices(&q, end, n, vals, f, extra))
            return false;
        unsigned inl = n < LC_FRAME_INLINE_POLICY ? n : LC_FRAME_INLINE_POLICY;
        if (n > inl) {
            ctx->idx_at[first + p] = (uint32_t)((uint8_t *)extra - buf);
            ctx->val_at[first + p] = (uint32_t)(vals + 4 * (size_t)inl - buf);
            extra += n - inl;
        }
        vals += 4 * (size_t)n;
    }
    st->done = upto;
    st->words = (uint32_t)(words - buf);
    st->indices = (uint32_t)(q - buf);
    st->vals = (uint32_t)(vals - buf);
    st->extra = (uint32_t)((uint8_t *)extra - buf);
    return upto < st->nb || q == end;
}

/* Block b of c decompressed to raw (room for `most` bytes), its size in
 * *size: 0, or LC_EFORMAT when it does not decode to between fixed and
 * most bytes. An LZ4 block does not say its size: it is what the block
 * decodes to. */
static int decompress(const lc_packed_chunk *c, lc_unpack_ctx *ctx, uint32_t b, uint8_t *raw,
                      size_t fixed, size_t most, size_t *size, lc_error *err)
{
    const uint8_t *src = chunk_data(c) + c->off[b];
    size_t src_len = c->off[b + 1] - c->off[b];
    if (c->codec == LC_PACK_LZ4) {
#if LC_HAVE_LZ4
        int got = LZ4_decompress_safe((const char *)src, (char *)raw, (int)src_len, (int)most);
        if (got < 0 || (size_t)got < fixed)
            return bad_block(err, c, b, got < 0 ? "does not decode (LZ4)" : "is short");
        *size = (size_t)got;
        return 0;
#else
        return bad_block(err, c, b, "is LZ4, which this build cannot decode");
#endif
    }
    unsigned long long want = ZSTD_getFrameContentSize(src, src_len);
    if (want == ZSTD_CONTENTSIZE_UNKNOWN || want == ZSTD_CONTENTSIZE_ERROR || want < fixed ||
        want > most)
        return bad_block(err, c, b, "has a bad header");
    size_t got = ZSTD_decompressDCtx(ctx->dctx, raw, (size_t)want, src, src_len);
    if (ZSTD_isError(got) || got != want)
        return bad_block(err, c, b, ZSTD_isError(got) ? ZSTD_getErrorName(got) : "is short");
    *size = got;
    return 0;
}

/*
 * Decompress block b of c into ctx->buf as [room for its positions as
 * frames][the block as decompressed: heads, masks, words, indices,
 * values][room for the indices of long policies past the inline ones,
 * u16], and check its sections; decode_frames makes the frames, each
 * then one copy of what lies there (and of its overflow, rarely).
 */
static int decode_block(const lc_packed_chunk *c, lc_unpack_ctx *ctx, uint32_t b, lc_error *err)
{
    uint32_t first = b * c->block;
    uint32_t nb = c->n - first < c->block ? c->n - first : c->block;
    size_t fixed = (size_t)nb * (HEAD_BYTES + MASK_BYTES);
    /* At most: every word, and every policy index escaped. */
    size_t most = fixed + (size_t)nb * (PLANES_BYTES + (3 + 4) * LC_POLICY_SIZE);
    /* Room for the most a block holds; what it uses is known once it is
     * decoded. An entry takes at least 5 bytes (an index byte and a value),
     * so there are at most size / 5 of them and their u16 indices fit. */
    size_t at = (ctx->used + 7) & ~(size_t)7;
    size_t frames_len = (size_t)nb * sizeof(lc_frame);
    size_t room = frames_len + ((most + RAW_SLACK + 7) & ~(size_t)7) + 2 * (most / 5);
    if (at + room > UINT32_MAX)
        return lc_error_set(err, LC_EFORMAT, "packed chunk: too large to decode");
    reserve(&ctx->buf, &ctx->cap, at + room);
    uint8_t *raw = ctx->buf + at + frames_len;
    size_t size = 0;
    int rc = decompress(c, ctx, b, raw, fixed, most, &size, err);
    if (rc != 0)
        return rc;
    size_t raw_room = (size + RAW_SLACK + 7) & ~(size_t)7;
    size_t image = frames_len + raw_room + 2 * (size / 5);
    memset(raw + size, 0, RAW_SLACK);
    size_t tail =
        fixed + 8 * popcount_bytes(raw + (size_t)nb * HEAD_BYTES, (size_t)nb * MASK_BYTES);
    size_t total = 0; /* policy entries of the block */
    for (uint32_t p = 0; p < nb; p++)
        total += get_u16(raw + (size_t)p * HEAD_BYTES + H_N_POLICY);
    /* The words, then at least a byte of index and 4 of value an entry. */
    if (tail > size || 5 * total > size - tail)
        return bad_block(err, c, b, "is inconsistent");
    uint32_t r = (uint32_t)(at + frames_len);
    ctx->blocks[b] = (block_state){
        .at = (uint32_t)at,
        .nb = nb,
        .heads = r,
        .masks = r + nb * HEAD_BYTES,
        .words = r + (uint32_t)fixed,
        .indices = r + (uint32_t)tail,
        .vals = r + (uint32_t)(size - 4 * total),
        .values = r + (uint32_t)(size - 4 * total),
        .extra = r + (uint32_t)raw_room,
    };
    ctx->used = at + image;
    ctx->decoded++;
    return 0;
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
    block_state *st = &ctx->blocks[b];
    if (st->at == NOT_DECODED) {
        int rc = decode_block(c, ctx, b, err);
        if (rc != 0)
            return rc;
    }
    if (st->done <= p && !decode_frames(ctx, st, b * c->block, p + 1, c->version)) {
        st->at = NOT_DECODED; /* decoded again if asked again: refused again */
        return bad_block(err, c, b, "is inconsistent");
    }
    memcpy(out, ctx->buf + st->at + (size_t)p * sizeof *out, sizeof *out);
    if (out->n_policy > LC_FRAME_INLINE_POLICY) {
        size_t extra = out->n_policy - LC_FRAME_INLINE_POLICY;
        out->overflow_idx = lc_xmalloc(extra * sizeof *out->overflow_idx);
        out->overflow_val = lc_xmalloc(extra * sizeof *out->overflow_val);
        memcpy(out->overflow_idx, ctx->buf + ctx->idx_at[i], extra * sizeof *out->overflow_idx);
        memcpy(out->overflow_val, ctx->buf + ctx->val_at[i], extra * sizeof *out->overflow_val);
    }
    return 0;
}
