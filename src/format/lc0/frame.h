/*
 * frame: one training position in the compact in-memory form that the
 * reservoir and the queues after the unpacker carry, and everything the
 * tensors are made from.
 *
 * A V6 record is 8356 bytes, 7432 of them the policy: 1858 floats of which
 * usually 20 to 60 are not -1 (the legal moves). The compact frame keeps the
 * 104 history planes and scalar fields as they are, and the policy sparsely:
 * the indices and values of every entry whose bits are not exactly those of
 * -1.0f, in index order. The first LC_FRAME_INLINE_POLICY (64) entries are
 * stored inline; a position with more (chess allows up to 218 legal moves;
 * the 117,593 positions of tests/data have 30.7 on average and 63 at most,
 * 1.8% more than 48) keeps the rest in heap arrays that the frame owns, one
 * allocation each. 64 rather than 80: 96 bytes less in every frame a
 * reservoir or queue holds (7% of a frame). Inline room for 218 would make every
 * frame 2.2 KB and a reservoir of a million frames 2.2 GB; with 64 it is
 * 1,352 bytes, and a frame with 218 entries, heap included, is still under
 * 2.5 KB (both checked at compile time). Every field the tensors use is
 * reconstructed bit-exactly (lc_frame_to_record_v7 round-trips those fields).
 * Frames are
 * plain values: copying one copies it; lc_frame_fini frees the overflow array
 * (frames move with queue items, so exactly one copy is finied).
 *
 * Records of versions 3, 4 and 5 are read too. Versions 3 and 4 have no
 * input_format field (it is 1, classical), so every later field sits 4
 * bytes lower: move_count is where later versions keep invariance_info, and
 * the int8 game result is the byte after it; see frame.c.
 */
#ifndef LC_FORMAT_LC0_FRAME_H
#define LC_FORMAT_LC0_FRAME_H

#include "core/error.h"
#include "format/lc0/record.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LC_FRAME_INLINE_POLICY 64
#define LC_INPUT_PLANES 112
#define LC_HISTORY_PLANES 104

/* Where a position's game came from, for the freshness the batch stream
 * tells (docs/batch-stream.md): the stages stamp it on the chunk item (the
 * pool from its window, chunk_reader as it reads) and chunk_unpacker copies
 * it to every frame of the chunk. 16 bytes, copied, never looked into by the
 * format layer; all 0 when unknown (frames made here start so). */
typedef struct lc_frame_origin {
    uint64_t seq;        /* the game's ingest sequence in its run, from 1 (0: unknown) */
    uint32_t arrived_ms; /* when its game arrived: monotonic milliseconds, mod 2^32 */
    uint32_t flags;      /* LC_ORIGIN_* */
} lc_frame_origin;

enum {
    /* Its game was drawn through the pool's fresh lane (a `fresh` request). */
    LC_ORIGIN_FRESH = 1u << 0,
    /* The first position of such a draw: the sampler passes it on at once,
     * around its reservoir. */
    LC_ORIGIN_LEAD = 1u << 1,
};

typedef struct lc_frame {
    uint64_t planes[LC_HISTORY_PLANES];
    uint32_t version;
    uint32_t input_format;
    uint8_t castling_us_ooo, castling_us_oo, castling_them_ooo, castling_them_oo;
    uint8_t side_to_move_or_enpassant;
    uint8_t rule50_count;
    uint8_t invariance_info;
    int8_t result; /* pre-V6: game result from the side to move's view */
    float root_q, best_q, root_d, best_d, root_m, best_m;
    float plies_left;
    float result_q, result_d;
    float played_q, played_d, played_m;
    float orig_q, orig_d, orig_m;
    float q_st, d_st; /* d_st: 0.0 in V6 (upstream's value), NaN before V6 */
    float policy_kld; /* V6 and V7 (diff focus); NaN before */
    uint16_t played_idx, best_idx;
    /* V7, or computed for V6 (chunk_unpacker's st_targets): the move the
     * opponent played next, and ours after it; 0xFFFF when unknown (no
     * such move, or older data). Neither tensor layout carries them. */
    uint16_t opp_played_idx, next_played_idx;
    uint16_t n_policy;                           /* entries that are not -1 */
    uint16_t policy_idx[LC_FRAME_INLINE_POLICY]; /* ascending */
    float policy_val[LC_FRAME_INLINE_POLICY];
    /* Entries LC_FRAME_INLINE_POLICY .. n_policy - 1 (ascending after the
     * inline ones); non-NULL when n_policy > LC_FRAME_INLINE_POLICY. */
    uint16_t *overflow_idx;
    float *overflow_val;
    lc_frame_origin origin;
} lc_frame;

/* Entry k (below n_policy) of f's sparse policy, inline or in the overflow
 * arrays: its index and its value. */
static inline uint16_t *lc_frame_policy_idx_at(lc_frame *f, unsigned k)
{
    return k < LC_FRAME_INLINE_POLICY ? &f->policy_idx[k]
                                      : &f->overflow_idx[k - LC_FRAME_INLINE_POLICY];
}
static inline float *lc_frame_policy_val_at(lc_frame *f, unsigned k)
{
    return k < LC_FRAME_INLINE_POLICY ? &f->policy_val[k]
                                      : &f->overflow_val[k - LC_FRAME_INLINE_POLICY];
}

/* Compact one record of the given version (3..7). LC_EVERSION for others. */
int lc_frame_from_record(const uint8_t *rec, uint32_t version, lc_frame *out, lc_error *err);
void lc_frame_fini(lc_frame *f);
/* Deep copy (the overflow array too). */
void lc_frame_copy(lc_frame *dst, const lc_frame *src);

/* Write a V7 record (8396 bytes) holding every field the frame keeps; the
 * version field says f->version. Unused bytes are zero. For tests. */
void lc_frame_to_record_v7(const lc_frame *f, uint8_t *rec);

/* The tensors: the planes, the values and the legacy targets are made in
 * frame_tensors.c, the policy in frame.c (from the sparse policy it keeps). */

/* The 112 x 8 x 8 input planes as floats, per input_format (see the doc). */
void lc_frame_input_planes(const lc_frame *f, float *out /* 112*64 */);
/* Planes 104..111 as words (lc0's bit convention) and values: plane 104 + i
 * is values[i] where words[i] has a bit set, 0 elsewhere. A plane of one
 * value has every bit set; a square mask has the value 1. */
void lc_frame_aux_planes(const lc_frame *f, uint64_t words[8], float values[8]);
/* The packed input planes: bits[8 * p + r] is byte r (rank r + 1) of plane
 * p's word, so that numpy's unpackbits(bitorder="big") gives the 64 squares
 * in the dense order; aux[i] is the value of plane 104 + i's set bits (the
 * history planes' is 1). Expanding gives lc_frame_input_planes exactly. */
void lc_frame_packed_planes(const lc_frame *f, uint8_t *bits /* 112*8 */, float *aux /* 8 */);
/* Which planes 104..111: per input_format (what lc0's encoder means by each
 * format, with rule50 scaled as the legacy chunkparser does: right for every
 * format), or as upstream's C++ loader writes them whatever the format (the
 * castling and side-to-move bytes as constant planes, rule50 / 99, a zero
 * plane, a ones plane: the same for format 1 only; for upstream's tensors).
 * docs/lc0-training-data.md has both rules format by format. */
typedef enum lc_planes_kind { LC_PLANES_INPUT_FORMAT = 0, LC_PLANES_UPSTREAM = 1 } lc_planes_kind;
void lc_frame_input_planes_as(const lc_frame *f, lc_planes_kind kind, float *out /* 112*64 */);
void lc_frame_packed_planes_as(const lc_frame *f, lc_planes_kind kind, uint8_t *bits /* 112*8 */,
                               float *aux /* 8 */);
/* The policy's stored entries with an index below 1858 (the dense policy's
 * non -1 values), at most `slots` of them, in index order; slots past them
 * repeat the last entry (or hold index 0 and -1 when there is none), so
 * that -1 everywhere, then val[k] at idx[k] for every k, is the dense
 * policy. Returns how many entries there are (at most n_policy). */
unsigned lc_frame_policy_sparse(const lc_frame *f, uint16_t *idx, float *val, unsigned slots);
/* The entries of the 1858 policy floats at probs (a record's, unaligned)
 * that are not -1: the first `cap` of them, index and value, into idx and
 * val in index order; returns how many there are in all (more than cap:
 * only cap written). Blocks of eight -1 entries are skipped at once, so
 * this costs a look at the memory for most of the policy. */
unsigned lc_policy_entries(const uint8_t *probs, uint16_t *idx, float *val, unsigned cap);
/* The 1858 policy floats: stored entries, -1 elsewhere. */
void lc_frame_policy(const lc_frame *f, float *out /* 1858 */);
/* current layout: values [6][3] rows result, best, played, orig, root, st. */
#define LC_FRAME_VALUES (6 * 3)
void lc_frame_values(const lc_frame *f, float *out /* LC_FRAME_VALUES */);
/* legacy layout: winner, best_q as WDL, plies_left, as the legacy
 * chunkparser reads them: V3's best_q from its zero padding (0, 0: WDL 0.5,
 * 0, 0.5); a plies_left of 0 (V3 and V4: padding) falls back to the
 * invariance byte in every version. */
void lc_frame_legacy_targets(const lc_frame *f, float winner[3], float best_q[3],
                             float *plies_left);

/* Validation for chunk_validator: 0 when the record is well formed, else a
 * negative code and *reason set to a short static reason name used as a
 * metric ("unknown_version", "unknown_input_format", "bad_probability",
 * "played_idx_out_of_range", "best_idx_out_of_range", "played_idx_illegal",
 * "best_idx_illegal"). */
int lc_record_check(const uint8_t *rec, uint32_t version, const char **reason);

/* The reasons lc_record_check gives, in the order it checks them, and the
 * index of one in that list (LC_RECORD_CHECK_REASONS for anything else):
 * the stages that check count each reason on its own. */
#define LC_RECORD_CHECK_REASONS 7
/* The same list for X-macros (X(reason) each), so that tables of the
 * stages' "bad_<reason>" counts cannot drift from it. */
#define LC_RECORD_CHECK_REASON_LIST(X)                                                             \
    X(unknown_version)                                                                             \
    X(unknown_input_format)                                                                        \
    X(bad_probability)                                                                             \
    X(played_idx_out_of_range)                                                                     \
    X(best_idx_out_of_range)                                                                       \
    X(played_idx_illegal)                                                                          \
    X(best_idx_illegal)
extern const char *const lc_record_check_reasons[LC_RECORD_CHECK_REASONS];
size_t lc_record_check_reason_index(const char *reason);

/* lc_record_check and lc_frame_from_record in one pass over the record: 0
 * and *out filled when the record passes the checks, else lc_record_check's
 * code and *reason, with nothing to free. */
int lc_frame_from_checked_record(const uint8_t *rec, uint32_t version, lc_frame *out,
                                 const char **reason);

/* Input formats the planes are defined for. */
bool lc_input_format_known(uint32_t input_format);

#endif
