/*
 * frame: see frame.h. Compacting records (every version 3..7), writing them
 * back, the policy tensor (it reads the frame's sparse policy, kept here) and
 * validating raw records; the input planes and the value targets are in
 * frame_tensors.c. Pure functions: any thread may call any of them on frames
 * it owns.
 *
 * Versions. V6 and V7 are read with LC_REC_GET at the offsets of record.h.
 * V5 is V6's layout cut at offset 8308 (it ends with plies_left) and keeps
 * the int8 game result at byte 8279. V4 has no input_format field, so every
 * later offset moves down by 4: probabilities at 4, planes at 7436, the four
 * castling bytes, side to move, rule50, move_count (where later versions keep
 * invariance_info), the int8 result, then root_q, best_q, root_d, best_d.
 * V3 is V4 without those four floats. For V3 and V4 the input format is 1
 * and move_count is kept in the frame's invariance_info byte (it is what the
 * legacy plies_left fallback reads). Fields a version does not have are NaN;
 * played_idx and best_idx are 0xFFFF ("unknown") before V6. Before V6 the
 * result target is derived from the int8 result: result_q = result,
 * result_d = 1 for a draw, else 0.
 *
 * f->version is the version the record was read as (the caller's argument,
 * which is the chunk's version); lc_record_check verifies that it matches the
 * record's own version field.
 *
 * Policy. Every entry whose bit pattern is not exactly that of -1.0f is kept,
 * in index order, so zeros, negative zeros, NaNs and out-of-range values all
 * survive a round trip. The first LC_FRAME_INLINE_POLICY entries live inline;
 * when a (malformed) record has more, the rest go to two malloc'd overflow
 * arrays.
 *
 * Checking. lc_record_check and lc_frame_from_checked_record apply the
 * validator's rules with one pass over the probabilities: the pass that
 * skips runs of -1 eight at a time checks the range of the entries it keeps,
 * so checking a record costs about what compacting it does, and checking
 * while compacting costs one pass, not two.
 *
 * Ownership. lc_frame_from_record fills *out whole (no need to initialise it)
 * and, when it fails, leaves nothing to free. lc_frame_copy overwrites *dst
 * without finishing what it held. lc_frame_fini may be called twice.
 */
#include "format/lc0/frame.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(lc_frame) <= 2560, "lc_frame must stay at most 2.5 KB");

#define MINUS_ONE_BITS 0xBF800000u /* the bit pattern of -1.0f */

/* ---- unaligned little-endian reads and writes at explicit offsets ---- */

static inline float rd_f32(const uint8_t *rec, size_t off)
{
    float v;
    memcpy(&v, rec + off, sizeof v);
    return v;
}

static inline uint32_t rd_u32(const uint8_t *rec, size_t off)
{
    uint32_t v;
    memcpy(&v, rec + off, sizeof v);
    return v;
}

static inline uint16_t rd_u16(const uint8_t *rec, size_t off)
{
    uint16_t v;
    memcpy(&v, rec + off, sizeof v);
    return v;
}

/* Write the lvalue src into the V7 record's field; sizes must agree. */
#define FIELD_SIZE_(field) sizeof(((const lc_v7_record *)0)->field)
#define PUT(rec, field, src)                                                                       \
    do {                                                                                           \
        _Static_assert(sizeof(src) == FIELD_SIZE_(field), "PUT: size differs from " #field);       \
        memcpy((rec) + offsetof(lc_v7_record, field), &(src), sizeof(src));                        \
    } while (0)

/* ---- the pre-V6 layouts ---- */

/* V5: V6's layout up to and including plies_left (see record.h). */
_Static_assert(offsetof(lc_v6_record, plies_left) + 4 == LC_V5_RECORD_SIZE, "V5 ends at 8308");

/* V4 and V3: no input_format, so everything sits 4 bytes lower. */
enum {
    V4_PROBABILITIES = 4,
    V4_PLANES = V4_PROBABILITIES + 4 * LC_POLICY_SIZE,     /* 7436 */
    V4_CASTLING_US_OOO = V4_PLANES + 8 * LC_RECORD_PLANES, /* 8268 */
    V4_CASTLING_US_OO = V4_CASTLING_US_OOO + 1,            /* 8269 */
    V4_CASTLING_THEM_OOO = V4_CASTLING_US_OOO + 2,         /* 8270 */
    V4_CASTLING_THEM_OO = V4_CASTLING_US_OOO + 3,          /* 8271 */
    V4_SIDE_TO_MOVE = V4_CASTLING_US_OOO + 4,              /* 8272 */
    V4_RULE50 = V4_CASTLING_US_OOO + 5,                    /* 8273 */
    V4_MOVE_COUNT = V4_CASTLING_US_OOO + 6,                /* 8274 */
    V4_RESULT = V4_CASTLING_US_OOO + 7,                    /* 8275 */
    V4_ROOT_Q = V4_CASTLING_US_OOO + 8,                    /* 8276 = end of V3 */
    V4_BEST_Q = V4_ROOT_Q + 4,
    V4_ROOT_D = V4_ROOT_Q + 8,
    V4_BEST_D = V4_ROOT_Q + 12, /* ends at 8292 */
};
_Static_assert(V4_ROOT_Q == LC_V3_RECORD_SIZE, "V3 ends where V4's floats start");
_Static_assert(V4_BEST_D + 4 == LC_V4_RECORD_SIZE, "V4 ends at 8292");

/* ---- policy ---- */

static void policy_fini(lc_frame *f)
{
    free(f->overflow_idx);
    free(f->overflow_val);
    f->overflow_idx = NULL;
    f->overflow_val = NULL;
}

/* Two entries' bits at p + 4 * i. */
static inline uint64_t pair_at(const uint8_t *p, unsigned i)
{
    uint64_t w;
    memcpy(&w, p + 4 * (size_t)i, sizeof w);
    return w;
}

/* What scan_policy keeps of one entry that is not -1. */
typedef struct scan_state {
    uint16_t *idx;
    float *val;
    unsigned n, skip, cap;
    bool *bad;
} scan_state;

static inline void scan_entry(scan_state *st, const uint8_t *p, unsigned i)
{
    uint32_t bits;
    memcpy(&bits, p + 4 * (size_t)i, 4);
    if (bits == MINUS_ONE_BITS)
        return;
    if (st->bad) {
        float v;
        memcpy(&v, &bits, 4);
        if (!(v >= -1.0f && v <= 1.0f))
            *st->bad = true;
    }
    if (st->n >= st->skip && st->n - st->skip < st->cap) {
        st->idx[st->n - st->skip] = (uint16_t)i;
        memcpy(&st->val[st->n - st->skip], &bits, 4);
    }
    st->n++;
}

/*
 * Write the index and bits of every entry of the 1858 floats at p that is not
 * -1 into idx/val, at most cap of them (from the skip-th on); return how many
 * there are in all. Most entries are -1, so 16 entries at a time are compared
 * with the -1 pattern first (eight 64-bit words, kept in registers) and a
 * block that is all -1 is skipped without branching on each entry; in the
 * others only the pairs that are not both -1 are looked at. When `bad` is not
 * NULL, each entry that is not -1 is also checked to lie in [-1, 1] (NaN does
 * not), and *bad is set when one does not: the validator's probability rule,
 * at the cost of the scan alone.
 */
static unsigned scan_policy(const uint8_t *p, uint16_t *idx, float *val, unsigned skip,
                            unsigned cap, bool *bad)
{
    const uint64_t m = (uint64_t)MINUS_ONE_BITS << 32 | MINUS_ONE_BITS;
    scan_state st = {idx, val, 0, skip, cap, bad};
    unsigned i = 0;
    for (; i + 16 <= LC_POLICY_SIZE; i += 16) {
        uint64_t any = (pair_at(p, i) ^ m) | (pair_at(p, i + 2) ^ m) | (pair_at(p, i + 4) ^ m) |
                       (pair_at(p, i + 6) ^ m) | (pair_at(p, i + 8) ^ m) |
                       (pair_at(p, i + 10) ^ m) | (pair_at(p, i + 12) ^ m) |
                       (pair_at(p, i + 14) ^ m);
        if (!any)
            continue;
        for (unsigned k = i; k < i + 16; k += 2)
            if (pair_at(p, k) != m) {
                scan_entry(&st, p, k);
                scan_entry(&st, p, k + 1);
            }
    }
    for (; i < LC_POLICY_SIZE; i++)
        scan_entry(&st, p, i);
    return st.n;
}

unsigned lc_policy_entries(const uint8_t *probs, uint16_t *idx, float *val, unsigned cap)
{
    return scan_policy(probs, idx, val, 0, cap, NULL);
}

/* The policy of the 1858 floats at p, whose first n entries that are not -1
 * a scan already put inline (up to LC_FRAME_INLINE_POLICY): the rest, if
 * any, go to the heap. */
static void finish_policy(lc_frame *f, const uint8_t *p, unsigned n)
{
    f->n_policy = (uint16_t)n;
    f->overflow_idx = NULL;
    f->overflow_val = NULL;
    if (n <= LC_FRAME_INLINE_POLICY)
        return;
    /* Rare (more legal moves than almost any position has): a second pass
     * for the entries past the inline ones, into exactly sized arrays. */
    unsigned extra = n - LC_FRAME_INLINE_POLICY;
    f->overflow_idx = lc_xmalloc(extra * sizeof *f->overflow_idx);
    f->overflow_val = lc_xmalloc(extra * sizeof *f->overflow_val);
    scan_policy(p, f->overflow_idx, f->overflow_val, LC_FRAME_INLINE_POLICY, extra, NULL);
}

/* Keep the entries of the 1858 floats at rec + off that are not -1: the
 * first LC_FRAME_INLINE_POLICY inline, the rest (if any) in the heap. */
static void read_policy(lc_frame *f, const uint8_t *rec, size_t off)
{
    const uint8_t *p = rec + off;
    finish_policy(f, p,
                  scan_policy(p, f->policy_idx, f->policy_val, 0, LC_FRAME_INLINE_POLICY, NULL));
}

/* Entries past the inline ones, in the heap arrays. */
static inline unsigned policy_extra(const lc_frame *f)
{
    return f->n_policy > LC_FRAME_INLINE_POLICY ? f->n_policy - LC_FRAME_INLINE_POLICY : 0;
}

/* Write the 4 bytes of every stored entry at out + 4 * index. */
static void scatter_policy(const lc_frame *f, uint8_t *out)
{
    unsigned inline_n = f->n_policy - policy_extra(f);
    for (unsigned k = 0; k < inline_n; k++)
        if (f->policy_idx[k] < LC_POLICY_SIZE)
            memcpy(out + 4 * f->policy_idx[k], &f->policy_val[k], 4);
    for (unsigned k = 0; k < policy_extra(f) && f->overflow_idx; k++)
        if (f->overflow_idx[k] < LC_POLICY_SIZE)
            memcpy(out + 4 * f->overflow_idx[k], &f->overflow_val[k], 4);
}

/* A legal position has at most 218 moves: its frame stays within 2.5 KB,
 * heap entries included. */
_Static_assert(sizeof(lc_frame) +
                       (218 - LC_FRAME_INLINE_POLICY) * (sizeof(uint16_t) + sizeof(float)) + 32 <=
                   2560,
               "a frame with 218 policy entries exceeds 2.5 KB");

/* ---- compacting ---- */

static void read_v6_common(const uint8_t *rec, lc_frame *f)
{
    LC_REC_GET(rec, input_format, f->input_format);
    LC_REC_GET(rec, planes, f->planes);
    LC_REC_GET(rec, castling_us_ooo, f->castling_us_ooo);
    LC_REC_GET(rec, castling_us_oo, f->castling_us_oo);
    LC_REC_GET(rec, castling_them_ooo, f->castling_them_ooo);
    LC_REC_GET(rec, castling_them_oo, f->castling_them_oo);
    LC_REC_GET(rec, side_to_move_or_enpassant, f->side_to_move_or_enpassant);
    LC_REC_GET(rec, rule50_count, f->rule50_count);
    LC_REC_GET(rec, invariance_info, f->invariance_info);
    uint8_t result_byte;
    LC_REC_GET(rec, dummy, result_byte);
    f->result = (int8_t)result_byte;
    LC_REC_GET(rec, root_q, f->root_q);
    LC_REC_GET(rec, best_q, f->best_q);
    LC_REC_GET(rec, root_d, f->root_d);
    LC_REC_GET(rec, best_d, f->best_d);
    LC_REC_GET(rec, root_m, f->root_m);
    LC_REC_GET(rec, best_m, f->best_m);
    LC_REC_GET(rec, plies_left, f->plies_left);
}

static void set_result_from_int8(lc_frame *f)
{
    f->result_q = (float)f->result;
    f->result_d = f->result == 0 ? 1.0f : 0.0f;
}

static void set_unknown_v6_fields(lc_frame *f)
{
    f->played_q = f->played_d = f->played_m = NAN;
    f->orig_q = f->orig_d = f->orig_m = NAN;
    f->q_st = f->d_st = NAN;
    f->policy_kld = NAN;
    f->played_idx = f->best_idx = 0xFFFF;
    f->opp_played_idx = f->next_played_idx = 0xFFFF;
}

static void read_v3_v4(const uint8_t *rec, uint32_t version, lc_frame *f)
{
    f->input_format = 1;
    memcpy(f->planes, rec + V4_PLANES, sizeof f->planes);
    f->castling_us_ooo = rec[V4_CASTLING_US_OOO];
    f->castling_us_oo = rec[V4_CASTLING_US_OO];
    f->castling_them_ooo = rec[V4_CASTLING_THEM_OOO];
    f->castling_them_oo = rec[V4_CASTLING_THEM_OO];
    f->side_to_move_or_enpassant = rec[V4_SIDE_TO_MOVE];
    f->rule50_count = rec[V4_RULE50];
    f->invariance_info = rec[V4_MOVE_COUNT];
    f->result = (int8_t)rec[V4_RESULT];
    if (version == 4) {
        f->root_q = rd_f32(rec, V4_ROOT_Q);
        f->best_q = rd_f32(rec, V4_BEST_Q);
        f->root_d = rd_f32(rec, V4_ROOT_D);
        f->best_d = rd_f32(rec, V4_BEST_D);
    } else {
        f->root_q = f->best_q = f->root_d = f->best_d = NAN;
    }
    f->root_m = f->best_m = NAN;
    f->plies_left = NAN;
}

/* Where a version's probabilities start. */
static size_t policy_offset(uint32_t version)
{
    return version >= 5 ? offsetof(lc_v6_record, probabilities) : V4_PROBABILITIES;
}

/* Every field but the policy (and version, set last); false for a version
 * other than 3..7. */
static bool read_fields(const uint8_t *rec, uint32_t version, lc_frame *f)
{
    f->origin = (lc_frame_origin){0};
    switch (version) {
    case 6:
    case 7:
        read_v6_common(rec, f);
        LC_REC_GET(rec, result_q, f->result_q);
        LC_REC_GET(rec, result_d, f->result_d);
        LC_REC_GET(rec, played_q, f->played_q);
        LC_REC_GET(rec, played_d, f->played_d);
        LC_REC_GET(rec, played_m, f->played_m);
        LC_REC_GET(rec, orig_q, f->orig_q);
        LC_REC_GET(rec, orig_d, f->orig_d);
        LC_REC_GET(rec, orig_m, f->orig_m);
        LC_REC_GET(rec, played_idx, f->played_idx);
        LC_REC_GET(rec, best_idx, f->best_idx);
        LC_REC_GET(rec, q_st, f->q_st);
        LC_REC_GET(rec, policy_kld, f->policy_kld);
        if (version == 7) {
            LC_REC7_GET(rec, d_st, f->d_st);
            LC_REC7_GET(rec, opp_played_idx, f->opp_played_idx);
            LC_REC7_GET(rec, next_played_idx, f->next_played_idx);
        } else {
            /* V6 has no d_st: 0.0, as upstream's V7 frame of a V6 record
             * holds (its bytes are zero there); the unpacker computes it
             * with st_targets: compute. */
            f->d_st = 0.0f;
            f->opp_played_idx = f->next_played_idx = 0xFFFF;
        }
        break;
    case 5:
        read_v6_common(rec, f);
        set_unknown_v6_fields(f);
        set_result_from_int8(f);
        break;
    case 3:
    case 4:
        read_v3_v4(rec, version, f);
        set_unknown_v6_fields(f);
        set_result_from_int8(f);
        break;
    default:
        return false;
    }
    f->version = version;
    return true;
}

int lc_frame_from_record(const uint8_t *rec, uint32_t version, lc_frame *out, lc_error *err)
{
    if (!read_fields(rec, version, out)) {
        out->n_policy = 0;
        out->overflow_idx = NULL;
        out->overflow_val = NULL;
        return lc_error_set(err, LC_EVERSION, "unknown record version %u (0x%08x)", version,
                            version);
    }
    read_policy(out, rec, policy_offset(version));
    return 0;
}

void lc_frame_fini(lc_frame *f)
{
    if (!f)
        return;
    policy_fini(f);
    f->n_policy = 0;
}

void lc_frame_copy(lc_frame *dst, const lc_frame *src)
{
    *dst = *src;
    if (!src->overflow_idx)
        return;
    size_t n = policy_extra(src);
    dst->overflow_idx = lc_xmalloc(n * sizeof *dst->overflow_idx);
    dst->overflow_val = lc_xmalloc(n * sizeof *dst->overflow_val);
    memcpy(dst->overflow_idx, src->overflow_idx, n * sizeof *dst->overflow_idx);
    memcpy(dst->overflow_val, src->overflow_val, n * sizeof *dst->overflow_val);
}

void lc_frame_to_record_v7(const lc_frame *f, uint8_t *rec)
{
    memset(rec, 0, LC_V7_RECORD_SIZE);
    PUT(rec, version, f->version);
    PUT(rec, input_format, f->input_format);
    uint8_t *probs = rec + offsetof(lc_v7_record, probabilities);
    const uint32_t minus_one = MINUS_ONE_BITS;
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        memcpy(probs + 4 * i, &minus_one, 4);
    scatter_policy(f, probs);
    PUT(rec, planes, f->planes);
    PUT(rec, castling_us_ooo, f->castling_us_ooo);
    PUT(rec, castling_us_oo, f->castling_us_oo);
    PUT(rec, castling_them_ooo, f->castling_them_ooo);
    PUT(rec, castling_them_oo, f->castling_them_oo);
    PUT(rec, side_to_move_or_enpassant, f->side_to_move_or_enpassant);
    PUT(rec, rule50_count, f->rule50_count);
    PUT(rec, invariance_info, f->invariance_info);
    PUT(rec, dummy, f->result);
    PUT(rec, root_q, f->root_q);
    PUT(rec, best_q, f->best_q);
    PUT(rec, root_d, f->root_d);
    PUT(rec, best_d, f->best_d);
    PUT(rec, root_m, f->root_m);
    PUT(rec, best_m, f->best_m);
    PUT(rec, plies_left, f->plies_left);
    PUT(rec, result_q, f->result_q);
    PUT(rec, result_d, f->result_d);
    PUT(rec, played_q, f->played_q);
    PUT(rec, played_d, f->played_d);
    PUT(rec, played_m, f->played_m);
    PUT(rec, orig_q, f->orig_q);
    PUT(rec, orig_d, f->orig_d);
    PUT(rec, orig_m, f->orig_m);
    PUT(rec, played_idx, f->played_idx);
    PUT(rec, best_idx, f->best_idx);
    PUT(rec, q_st, f->q_st);
    PUT(rec, policy_kld, f->policy_kld);
    PUT(rec, d_st, f->d_st);
    PUT(rec, opp_played_idx, f->opp_played_idx);
    PUT(rec, next_played_idx, f->next_played_idx);
}

/* ---- the policy tensor ---- */

/* Slots m..slots-1 of a sparse policy whose first m entries are written:
 * the last entry again, or -1 at index 0 when there is none, so that
 * scattering every slot gives the dense policy whatever the order of the
 * writes. */
static void pad_sparse(uint16_t *idx, float *val, unsigned m, unsigned slots)
{
    uint16_t pad_idx = m ? idx[m - 1] : 0;
    float pad_val = m ? val[m - 1] : -1.0f;
    uint32_t bits;
    memcpy(&bits, &pad_val, 4);
    /* Four slots a step, in 8-byte stores of the repeated entry. */
    const uint64_t idx4 = pad_idx * 0x0001000100010001ull, val2 = (uint64_t)bits << 32 | bits;
    unsigned k = m;
    for (; k + 4 <= slots; k += 4) {
        memcpy(idx + k, &idx4, 8);
        memcpy(val + k, &val2, 8);
        memcpy(val + k + 2, &val2, 8);
    }
    for (; k < slots; k++) {
        idx[k] = pad_idx;
        val[k] = pad_val;
    }
}

/* True when every entry is inline, fits the slots and has an index below
 * 1858: the usual case, copied whole. */
static bool sparse_as_stored(const lc_frame *f, unsigned slots)
{
    unsigned n = f->n_policy;
    if (n > slots || n > LC_FRAME_INLINE_POLICY)
        return false;
    unsigned out_of_range = 0;
    for (unsigned k = 0; k < n; k++)
        out_of_range |= f->policy_idx[k] >= LC_POLICY_SIZE;
    return !out_of_range;
}

unsigned lc_frame_policy_sparse(const lc_frame *f, uint16_t *idx, float *val, unsigned slots)
{
    if (sparse_as_stored(f, slots)) {
        unsigned n = f->n_policy;
        memcpy(idx, f->policy_idx, n * sizeof *idx);
        memcpy(val, f->policy_val, n * sizeof *val);
        pad_sparse(idx, val, n, slots);
        return n;
    }
    unsigned m = 0, inline_n = f->n_policy - policy_extra(f);
    for (unsigned k = 0; k < inline_n && m < slots; k++)
        if (f->policy_idx[k] < LC_POLICY_SIZE) {
            idx[m] = f->policy_idx[k];
            val[m++] = f->policy_val[k];
        }
    for (unsigned k = 0; k < policy_extra(f) && f->overflow_idx && m < slots; k++)
        if (f->overflow_idx[k] < LC_POLICY_SIZE) {
            idx[m] = f->overflow_idx[k];
            val[m++] = f->overflow_val[k];
        }
    pad_sparse(idx, val, m, slots);
    return m;
}

void lc_frame_policy(const lc_frame *f, float *out)
{
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        out[i] = -1.0f;
    scatter_policy(f, (uint8_t *)out);
}

/* ---- validation ---- */

static int reject(const char **reason, const char *why, int code)
{
    if (reason)
        *reason = why;
    return code;
}

#define REASON_NAME(r) #r,
const char *const lc_record_check_reasons[LC_RECORD_CHECK_REASONS] = {
    LC_RECORD_CHECK_REASON_LIST(REASON_NAME)};
#undef REASON_NAME

size_t lc_record_check_reason_index(const char *reason)
{
    for (size_t i = 0; i < LC_RECORD_CHECK_REASONS; i++)
        if (reason && strcmp(reason, lc_record_check_reasons[i]) == 0)
            return i;
    return LC_RECORD_CHECK_REASONS;
}

/* The checks of a record that come before its probabilities: its version
 * (known and the chunk's) and, from V5 on, its input format. */
static int check_head(const uint8_t *rec, uint32_t version, const char **reason)
{
    if (reason)
        *reason = NULL;
    if (lc_record_size_for_version(version) == 0 || rd_u32(rec, 0) != version)
        return reject(reason, "unknown_version", LC_EVERSION);
    if (version >= 5 && !lc_input_format_known(rd_u32(rec, offsetof(lc_v6_record, input_format))))
        return reject(reason, "unknown_input_format", LC_EFORMAT);
    return 0;
}

/* The checks after the probabilities (at probs): from V6 on, the played and
 * best moves are policy indices of legal moves. */
static int check_moves(const uint8_t *rec, uint32_t version, const uint8_t *probs,
                       const char **reason)
{
    if (version < 6)
        return 0;
    uint16_t played = rd_u16(rec, offsetof(lc_v6_record, played_idx));
    uint16_t best = rd_u16(rec, offsetof(lc_v6_record, best_idx));
    if (played >= LC_POLICY_SIZE)
        return reject(reason, "played_idx_out_of_range", LC_EFORMAT);
    if (best >= LC_POLICY_SIZE)
        return reject(reason, "best_idx_out_of_range", LC_EFORMAT);
    if (!(rd_f32(probs, 4 * (size_t)played) >= 0.0f))
        return reject(reason, "played_idx_illegal", LC_EFORMAT);
    if (!(rd_f32(probs, 4 * (size_t)best) >= 0.0f))
        return reject(reason, "best_idx_illegal", LC_EFORMAT);
    return 0;
}

int lc_record_check(const uint8_t *rec, uint32_t version, const char **reason)
{
    int rc = check_head(rec, version, reason);
    if (rc)
        return rc;
    const uint8_t *probs = rec + policy_offset(version);
    bool bad = false;
    scan_policy(probs, NULL, NULL, 0, 0, &bad);
    if (bad)
        return reject(reason, "bad_probability", LC_EFORMAT);
    return check_moves(rec, version, probs, reason);
}

int lc_frame_from_checked_record(const uint8_t *rec, uint32_t version, lc_frame *out,
                                 const char **reason)
{
    int rc = check_head(rec, version, reason);
    if (rc)
        return rc;
    const uint8_t *probs = rec + policy_offset(version);
    bool bad = false;
    unsigned n =
        scan_policy(probs, out->policy_idx, out->policy_val, 0, LC_FRAME_INLINE_POLICY, &bad);
    if (bad)
        return reject(reason, "bad_probability", LC_EFORMAT);
    rc = check_moves(rec, version, probs, reason);
    if (rc)
        return rc;
    read_fields(rec, version, out); /* the version is known: check_head */
    finish_policy(out, probs, n);
    return 0;
}
