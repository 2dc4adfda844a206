/*
 * packed_chunk: one game (chunk) in the chunk store's compact form, built
 * once from its inflated records and read back position by position, each
 * bit for bit the lc_frame that lc_frame_from_record makes of the record.
 *
 * The form. A chunk's positions are cut into blocks of `block` positions
 * (the last may be shorter). Each block is one independent LZ4 block or
 * zstd frame (the codec, below, is the chunk's), so a
 * use that needs a few positions of a game decodes only the blocks that hold
 * them. Inside a block, before compression:
 *
 *   heads    93 bytes per position: the predictor (see below), input format,
 *            castling, side to move or en passant, rule 50, invariance and
 *            the int8 result; the 18 floats (root, best and played q/d/m
 *            side by side, so that a played move that was the best one
 *            repeats 12 bytes zstd finds at once; plies_left, result q/d,
 *            orig q/d/m, q_st, d_st, policy_kld); played_idx, best_idx, n_policy,
 *            opp_played_idx, next_played_idx (u16);
 *   masks    13 bytes per position: a bit for each of the 104 plane words
 *            that is not zero (after prediction);
 *   words    those words, 8 bytes each, position after position;
 *   indices  the ascending policy indices of every position, as u8 deltas
 *            from the previous index of that position (from 0), 255 being an
 *            escape followed by the index as u16;
 *   values   the policy values of every position, as stored (4 bytes each).
 *
 * Planes prediction. History step t (t >= 1) of a position is the board the
 * previous position saw at step t - 1, seen from the other side: colours
 * swapped (our pieces become theirs) and the board mirrored, in a way that
 * depends on the input format's canonical transform. The encoder finds, for
 * each position after the first of its block, one of the 8 symmetries of the
 * square that maps the previous position's step 0 onto this one's step 1
 * exactly (trying the symmetry the previous position used first), and for
 * each step t where that leaves fewer non-zero words, stores the XOR of the
 * step with the prediction (a bit per step says which). XOR is its own
 * inverse, so the decoder rebuilds every word exactly whatever the data:
 * the prediction only decides how well it compresses. Most words then are
 * zero and are left out (the masks), so zstd sees about 400 bytes a
 * position instead of 1,080, which makes packing and decoding cheaper, not
 * only smaller. Literals are stored raw (zstd's Huffman stage off): on
 * blocks this small its tables cost a fifth of the time for 5% of the size.
 *
 * Size and block. Measured with `lcmon_bench pack` on the 108,860
 * positions of the lc0 samples (one thread of this project's 2-core
 * machine; docs/chunk-store.md has the table): bytes a position are 231,
 * 152, 128, 114 and 105 for blocks of 1, 4, 8, 16 and 32 (gzip: 169);
 * decoding costs about 0.7 us a position, so a use that needs one position
 * pays for its whole block: 1.3, 4.0, 5.9, 9.4 and 16.6 us. Blocks of 8 are
 * the default: the smallest within the budget of 150 bytes a
 * position with room to spare, and a single-position use (the RL mode's
 * positions_per_chunk 1) costs less than the tensors it becomes.
 *
 * Threads. A packed chunk is immutable and reference counted: any thread may
 * read it while it holds a reference. Building and decoding need a context
 * each (zstd's state and scratch space), one per thread.
 */
#ifndef LC_FORMAT_LC0_PACKED_CHUNK_H
#define LC_FORMAT_LC0_PACKED_CHUNK_H

#include "core/error.h"
#include "format/lc0/frame.h"
#include "lc_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LC_PACK_BLOCK_DEFAULT 8
#define LC_PACK_BLOCK_MAX 64
#define LC_PACK_LEVEL_DEFAULT 1

/*
 * The codec of a chunk's blocks. LZ4 (liblz4's high-compression encoder at
 * LC_PACK_LZ4_LEVEL, its plain decoder) where lcmon is built with liblz4,
 * else zstd at the context's level. Measured with callgrind on the
 * samples of tests/data, blocks of 8 (2026-11-29): LZ4 decodes a block in
 * about half of zstd's instructions (a position at 1/32, its block
 * decoded for it: 45,500 -> 19,400; at 1.0 about 6,150 -> 2,930 with the
 * copy out) for 7% more bytes (148.7 a position against 139.2) and 60%
 * more instructions to pack (30,500 against 19,100 a position, once in a
 * chunk's life in the store). zstd's cost in a block this small is its
 * entropy tables, built for every block (a quarter of its instructions),
 * and its sequences; LZ4 has neither.
 */
enum { LC_PACK_ZSTD = 0, LC_PACK_LZ4 = 1 };
#define LC_PACK_LZ4_LEVEL 4
#if LC_HAVE_LZ4
#define LC_PACK_CODEC_DEFAULT LC_PACK_LZ4
#else
#define LC_PACK_CODEC_DEFAULT LC_PACK_ZSTD
#endif

typedef struct lc_packed_chunk lc_packed_chunk;
typedef struct lc_pack_ctx lc_pack_ctx;
typedef struct lc_unpack_ctx lc_unpack_ctx;

/* A building context: zstd level (1..19) and positions per block
 * (1..LC_PACK_BLOCK_MAX), with the default codec. */
lc_pack_ctx *lc_pack_ctx_new(int level, unsigned block);
/* The same with the given codec (LC_PACK_ZSTD, or LC_PACK_LZ4 where
 * lc_pack_codec_built says so; else zstd). */
lc_pack_ctx *lc_pack_ctx_new_codec(int codec, int level, unsigned block);
/* Whether this build can pack and decode blocks of the codec. */
bool lc_pack_codec_built(int codec);
void lc_pack_ctx_free(lc_pack_ctx *ctx);
/* Give back the codec's state (LZ4's, 256 KB) until the next build makes it
 * again (about 0.1 ms): for a thread that will not pack for a while. */
void lc_pack_ctx_rest(lc_pack_ctx *ctx);

/*
 * Check n records of the given version at `records` (record_size apart) by
 * the chunk validator's rules (lc_record_check) and pack them. 0 and *out
 * (one reference) when every record passes; else lc_record_check's code,
 * *reason its reason and *bad_at the first bad record, *out NULL. n > 0.
 */
int lc_packed_chunk_build(lc_pack_ctx *ctx, const uint8_t *records, size_t record_size, uint32_t n,
                          uint32_t version, lc_packed_chunk **out, const char **reason,
                          uint32_t *bad_at);

lc_packed_chunk *lc_packed_chunk_ref(lc_packed_chunk *c);
/* NULL is allowed; frees at zero. */
void lc_packed_chunk_unref(lc_packed_chunk *c);

uint32_t lc_packed_chunk_positions(const lc_packed_chunk *c);
uint32_t lc_packed_chunk_version(const lc_packed_chunk *c);
/* Bytes of memory the chunk holds (its one allocation). */
size_t lc_packed_chunk_bytes(const lc_packed_chunk *c);

lc_unpack_ctx *lc_unpack_ctx_new(void);
void lc_unpack_ctx_free(lc_unpack_ctx *ctx);

/*
 * Position i (< positions) of c as a frame, exactly as lc_frame_from_record
 * makes it of the original record (*out is filled whole; lc_frame_fini it).
 * The context keeps the blocks it decoded for the last chunk it was asked
 * about (while that chunk is referenced by the caller), so the positions of
 * one use cost one decode per block they touch, in any order. Errors (a
 * block that does not decode: memory corruption, never expected) are
 * LC_EFORMAT with a message; *out then holds nothing.
 */
int lc_packed_chunk_frame(const lc_packed_chunk *c, lc_unpack_ctx *ctx, uint32_t i, lc_frame *out,
                          lc_error *err);

/*
 * Floats a reader computes once for a chunk and keeps with it, in slots:
 * LC_AUX_FOCUS, chunk_unpacker's diff-focus weights (one a position);
 * LC_AUX_ST, its short-term targets (stages/short_term.c says the layout);
 * LC_AUX_RESCORE, chunk_rescorer's patch (format/lc0/rescore/rescore_patch.h).
 * NULL until attached. Attaching takes a malloc'd array; the first attach
 * to a slot wins, a later one frees its array and gets the first. Any
 * thread. The arrays are freed with the chunk and are not counted in
 * lc_packed_chunk_bytes.
 */
enum { LC_AUX_FOCUS = 0, LC_AUX_ST = 1, LC_AUX_RESCORE = 2, LC_AUX_SLOTS = 3 };
const float *lc_packed_chunk_aux(const lc_packed_chunk *c, unsigned slot);
const float *lc_packed_chunk_attach_aux(lc_packed_chunk *c, unsigned slot, float *values);

/* Blocks decoded by ctx so far (for tests and metrics). */
uint64_t lc_unpack_ctx_blocks_decoded(const lc_unpack_ctx *ctx);

#endif
