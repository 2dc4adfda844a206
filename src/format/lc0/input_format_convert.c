/*
 * input_format_convert: see input_format_convert.h; docs/pipelines.md
 * "new_input_format" gives every rule with its reasons.
 *
 * Squares here are lc0's: s = rank * 8 + file from the side to move's view
 * (a1 = 0), so a plane word (bit s ^ 7 is square s) is read square by
 * square. lc0's canonical transform is three bits applied in order: flip
 * (file f to 7 - f), mirror (rank r to 7 - r), transpose (across the
 * a8-h1 diagonal: (r, f) to (7 - f, 7 - r)). The policy is permuted by the
 * same square map; its order is ids 0..1857 of format/chess/chess_vocab.h,
 * whose names give each id's squares.
 *
 * Conversions work on a copy of the fields (conv_pos) and write back only
 * when everything succeeded: a refused record or frame is left as it was.
 */
#include "format/lc0/input_format_convert.h"

#include "core/error.h"
#include "format/chess/chess_vocab.h"
#include "format/lc0/record.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { T_FLIP = 1, T_MIRROR = 2, T_TRANSPOSE = 4 };
enum { GROUP_NONE, GROUP_PLAIN, GROUP_CANONICAL, GROUP_V2 };

/* Piece planes of one history step, from the side to move's view. */
enum { P_OUR_PAWN, P_OUR_KNIGHT, P_OUR_BISHOP, P_OUR_ROOK, P_OUR_QUEEN, P_OUR_KING };
enum { P_THEIR_PAWN = 6, P_THEIR_ROOK = 9, P_THEIR_KING = 11, P_STEP = 13, STEPS = 8 };

/* The fields a conversion reads and writes, records and frames alike. */
typedef struct conv_pos {
    uint32_t format;
    uint64_t planes[LC_RECORD_PLANES];
    uint8_t castling[4]; /* us_ooo, us_oo, them_ooo, them_oo */
    uint8_t stm_or_ep, rule50, invariance;
    int undo, apply;    /* the policy's square maps: undo one transform, apply another */
    bool frame_changes; /* plain <-> canonical: the neighbours' frames change too */
} conv_pos;

static int format_group(uint32_t f)
{
    switch (f) {
    case 1:
    case 2:
        return GROUP_PLAIN;
    case 3:
    case 4:
    case 132:
        return GROUP_CANONICAL;
    case 5:
    case 133:
        return GROUP_V2;
    default:
        return GROUP_NONE;
    }
}

bool lc_input_format_convertible(uint32_t from, uint32_t to)
{
    int a = format_group(from), b = format_group(to);
    if (a == GROUP_NONE || b == GROUP_NONE)
        return false;
    if (a == b)
        return true;
    return a != GROUP_V2 && b != GROUP_V2; /* plain <-> canonical */
}

static int refuse(uint32_t from, uint32_t to, lc_error *err)
{
    return lc_error_set(err, LC_ECONFIG,
                        "new_input_format: input_format %u cannot be converted to %u; lcmon "
                        "converts 1 <-> 2, between 3, 4 and 132, 5 <-> 133, and from 1 or 2 to "
                        "3, 4 or 132 and back (formats 5 and 133 keep only repeated positions "
                        "in their history, which the others cannot give or take); set "
                        "new_input_format to one of those, or leave it unset",
                        from, to);
}

/* ---- squares and transforms ---- */

static int sq_apply(int t, int s)
{
    int r = s >> 3, f = s & 7;
    if (t & T_FLIP)
        f = 7 - f;
    if (t & T_MIRROR)
        r = 7 - r;
    if (t & T_TRANSPOSE) {
        int nr = 7 - f;
        f = 7 - r;
        r = nr;
    }
    return r * 8 + f;
}

static int sq_undo(int t, int s)
{
    int r = s >> 3, f = s & 7;
    if (t & T_TRANSPOSE) {
        int nr = 7 - f;
        f = 7 - r;
        r = nr;
    }
    if (t & T_MIRROR)
        r = 7 - r;
    if (t & T_FLIP)
        f = 7 - f;
    return r * 8 + f;
}

/* Move every square of a mask (bit s = square s) by t, or back. */
static uint64_t mask_map(uint64_t m, int t, bool undo)
{
    if (t == 0 || m == 0 || m == ~0ULL)
        return m;
    uint64_t out = 0;
    while (m) {
        int s = __builtin_ctzll(m);
        m &= m - 1;
        out |= 1ULL << (undo ? sq_undo(t, s) : sq_apply(t, s));
    }
    return out;
}

static uint64_t word_map(uint64_t w, int t, bool undo)
{
    return lc_plane_squares(mask_map(lc_plane_squares(w), t, undo));
}

static uint64_t sq_mask(const conv_pos *p, int step, int plane)
{
    return lc_plane_squares(p->planes[step * P_STEP + plane]);
}

/* ---- the policy's square map ---- */

static pthread_once_t maps_once = PTHREAD_ONCE_INIT;
/* maps[t][0][id]: id with transform t applied; maps[t][1][id]: undone.
 * -1 where the moved move is none of the 1858 (a promotion turned off
 * the promotion ranks, which no legal position needs). */
static int16_t maps[8][2][LC_POLICY_SIZE];

static void build_maps(void)
{
    for (int id = 0; id < LC_POLICY_SIZE; id++) {
        const char *name = lc_chess_token_name(id);
        int from = (name[1] - '1') * 8 + (name[0] - 'a');
        int to = (name[3] - '1') * 8 + (name[2] - 'a');
        for (int t = 0; t < 8; t++) {
            for (int u = 0; u < 2; u++) {
                int nf = u ? sq_undo(t, from) : sq_apply(t, from);
                int nt = u ? sq_undo(t, to) : sq_apply(t, to);
                char s[5] = {(char)('a' + (nf & 7)), (char)('1' + (nf >> 3)),
                             (char)('a' + (nt & 7)), (char)('1' + (nt >> 3)), name[4]};
                int nid = lc_chess_move_id(s, name[4] ? 5 : 4);
                maps[t][u][id] = (int16_t)(nid >= 0 && nid < LC_POLICY_SIZE ? nid : -1);
            }
        }
    }
}

/* The new index of policy index i, or -1. */
static int policy_map(const conv_pos *p, unsigned i)
{
    if (i >= LC_POLICY_SIZE)
        return -1;
    int id = (int)i;
    if (p->undo)
        id = maps[p->undo][1][id];
    if (id >= 0 && p->apply)
        id = maps[p->apply][0][id];
    return id;
}

/* A played or best move's index: moved when it maps, else as it was. */
static uint16_t move_map(const conv_pos *p, uint16_t i)
{
    int n = policy_map(p, i);
    return n >= 0 ? (uint16_t)n : i;
}

/* ---- lc0's canonical transform ---- */

/* -1 when the board needs no transpose, 1 when it does, 0 on a tie. */
static int compare_transposing(uint64_t m, int t)
{
    uint64_t v = mask_map(m, t & (T_FLIP | T_MIRROR), false);
    uint64_t alt = mask_map(v, T_TRANSPOSE, false);
    return v < alt ? -1 : v > alt ? 1 : 0;
}

/* lc0's rule, on step 0: none while any castling right is left; flip when
 * our king is on files a-d; without pawns, mirror when it is on ranks 5-8,
 * and transpose when it is then above the a8-h1 diagonal, or on it and the
 * pieces (all, ours, kings, queens, rooks, knights, bishops, first that
 * differs) are smaller transposed. */
static int choose_transform(const conv_pos *p, const uint8_t castling[4])
{
    if (castling[0] | castling[1] | castling[2] | castling[3])
        return 0;
    uint64_t pl[12];
    for (int i = 0; i < 12; i++)
        pl[i] = sq_mask(p, 0, i);
    uint64_t king = pl[P_OUR_KING];
    int t = 0;
    if (king & 0x0F0F0F0F0F0F0F0FULL) {
        t |= T_FLIP;
        king = mask_map(king, T_FLIP, false);
    }
    if (pl[P_OUR_PAWN] | pl[P_THEIR_PAWN])
        return t;
    if (king & 0xFFFFFFFF00000000ULL) {
        t |= T_MIRROR;
        king = mask_map(king, T_MIRROR, false);
    }
    if (king & 0xE0C08000ULL)
        return t | T_TRANSPOSE;
    if (!(king & 0x10204080ULL))
        return t;
    uint64_t ours = pl[0] | pl[1] | pl[2] | pl[3] | pl[4] | pl[5];
    uint64_t theirs = pl[6] | pl[7] | pl[8] | pl[9] | pl[10] | pl[11];
    const uint64_t order[7] = {ours | theirs, ours,          pl[5] | pl[11], pl[4] | pl[10],
                               pl[3] | pl[9], pl[1] | pl[7], pl[2] | pl[8]};
    for (int i = 0; i < 7; i++) {
        int c = compare_transposing(order[i], t);
        if (c)
            return c > 0 ? t | T_TRANSPOSE : t;
    }
    return t;
}

/* ---- history: what lc0's canonical encoding keeps ---- */

static bool step_empty(const conv_pos *p, int step)
{
    for (int i = 0; i < 12; i++)
        if (p->planes[step * P_STEP + i])
            return false;
    return true;
}

/* The file of a double pawn push into step `step` (from step + 1) that a
 * pawn beside it can take en passant, or -1. The move into an even step
 * was theirs (rank 7 to 5 in our view), into an odd one ours (2 to 4). */
static int capturable_double_push(const conv_pos *p, int step)
{
    if (step + 1 >= STEPS || step_empty(p, step + 1))
        return -1;
    bool theirs = (step & 1) == 0;
    int mover = theirs ? P_THEIR_PAWN : P_OUR_PAWN, other = theirs ? P_OUR_PAWN : P_THEIR_PAWN;
    uint64_t before = sq_mask(p, step + 1, mover), after = sq_mask(p, step, mover);
    uint64_t from = before & ~after, to = after & ~before;
    if (__builtin_popcountll(from) != 1 || __builtin_popcountll(to) != 1)
        return -1;
    int fs = __builtin_ctzll(from), ts = __builtin_ctzll(to);
    if (fs >> 3 != (theirs ? 6 : 1) || ts != fs + (theirs ? -16 : 16))
        return -1;
    uint64_t beside = 0, others = sq_mask(p, step, other);
    if ((ts & 7) > 0)
        beside |= 1ULL << (ts - 1);
    if ((ts & 7) < 7)
        beside |= 1ULL << (ts + 1);
    return (others & beside) ? ts & 7 : -1;
}

/* Whether castling right k (us_ooo, us_oo, them_ooo, them_oo) has its king
 * and rook on their standard squares at a step. */
static bool right_home(const conv_pos *p, int step, int k)
{
    static const int king_sq[4] = {4, 4, 60, 60}, rook_sq[4] = {0, 7, 56, 63};
    int king = k < 2 ? P_OUR_KING : P_THEIR_KING, rook = k < 2 ? P_OUR_ROOK : P_THEIR_ROOK;
    return (sq_mask(p, step, king) >> king_sq[k] & 1) && (sq_mask(p, step, rook) >> rook_sq[k] & 1);
}

/* The first history step whose castling rights differ from step 0's: a
 * right the position lacks whose king and rook stood home from that step
 * back to the oldest step held, and not one step later. */
static int castling_cut(const conv_pos *p, const uint8_t castling[4], int oldest)
{
    int cut = STEPS;
    for (int k = 0; k < 4; k++) {
        if (castling[k])
            continue;
        int last_away = -1;
        for (int j = 0; j <= oldest; j++)
            if (!right_home(p, j, k))
                last_away = j;
        if (last_away >= 0 && last_away < oldest && last_away + 1 < cut)
            cut = last_away + 1;
    }
    return cut;
}

/* How many steps lc0's canonical encoding keeps (1..8): back to the last
 * irreversible move (fifty-move counter), stopping before a step with an
 * en-passant square or other castling rights. */
static int canonical_steps(const conv_pos *p, const uint8_t castling[4])
{
    int oldest = 0;
    for (int j = 1; j < STEPS; j++)
        if (!step_empty(p, j))
            oldest = j;
    int keep = (p->rule50 < STEPS - 1 ? p->rule50 : STEPS - 1) + 1;
    if (keep > oldest + 1)
        keep = oldest + 1;
    int cut = castling_cut(p, castling, oldest);
    if (cut < keep)
        keep = cut;
    for (int i = 1; i < keep; i++)
        if (capturable_double_push(p, i) >= 0)
            return i;
    return keep;
}

/* ---- the conversions ---- */

/* Castling bytes as rook-file masks (format 1's flags: a and h files). */
static void castling_masks(conv_pos *p, uint8_t out[4])
{
    for (int k = 0; k < 4; k++)
        out[k] = p->format != 1 ? p->castling[k] : p->castling[k] ? (k & 1 ? 0x80 : 0x01) : 0;
}

static void plain_to_canonical(conv_pos *p)
{
    uint8_t castling[4];
    castling_masks(p, castling);
    int ep = p->rule50 == 0 ? capturable_double_push(p, 0) : -1;
    int keep = canonical_steps(p, castling);
    for (int i = keep * P_STEP; i < LC_RECORD_PLANES; i++)
        p->planes[i] = 0;
    int t = choose_transform(p, castling);
    for (int i = 0; i < LC_RECORD_PLANES; i++)
        p->planes[i] = word_map(p->planes[i], t, false);
    uint8_t stm = p->stm_or_ep & 1;
    memcpy(p->castling, castling, 4);
    p->stm_or_ep = ep < 0 ? 0 : (uint8_t)(1u << ((t & T_FLIP) ? 7 - ep : ep));
    p->invariance = (uint8_t)((p->invariance & 0x78) | t | (stm ? 0x80 : 0));
    p->apply = t;
    p->frame_changes = true;
}

/* Step 1 of a position whose en-passant file is f: step 0 with their pawn
 * back on rank 7 (what lc0's canonical encoding leaves out). */
static void restore_double_push(conv_pos *p, int f)
{
    if (!step_empty(p, 1))
        return;
    for (int i = 0; i < 12; i++)
        p->planes[P_STEP + i] = p->planes[i];
    uint64_t pawns = sq_mask(p, 1, P_THEIR_PAWN);
    pawns = (pawns & ~(1ULL << (32 + f))) | 1ULL << (48 + f);
    p->planes[P_STEP + P_THEIR_PAWN] = lc_plane_squares(pawns);
}

static void canonical_to_plain(conv_pos *p, uint32_t to)
{
    int t = p->invariance & 7;
    for (int i = 0; i < LC_RECORD_PLANES; i++)
        p->planes[i] = word_map(p->planes[i], t, true);
    if (p->stm_or_ep) {
        int f = __builtin_ctz(p->stm_or_ep);
        restore_double_push(p, (t & T_FLIP) ? 7 - f : f);
    }
    for (int k = 0; k < 4 && to == 1; k++)
        p->castling[k] = p->castling[k] ? 1 : 0;
    p->stm_or_ep = (uint8_t)(p->invariance >> 7);
    p->invariance &= 0x78;
    p->undo = t;
    p->frame_changes = true;
}

static int convert_fields(conv_pos *p, uint32_t to, lc_error *err)
{
    uint32_t from = p->format;
    if (from == to)
        return 0;
    if (format_group(from) == GROUP_NONE)
        return lc_error_set(err, LC_EFORMAT,
                            "new_input_format: the position's input_format %u is none that lcmon "
                            "reads (1, 2, 3, 4, 5, 132, 133); it is left as it was",
                            from);
    if (!lc_input_format_convertible(from, to))
        return refuse(from, to, err);
    pthread_once(&maps_once, build_maps);
    int a = format_group(from), b = format_group(to);
    if (a == GROUP_PLAIN && b == GROUP_PLAIN) {
        for (int k = 0; k < 4; k++)
            p->castling[k] = to == 1          ? p->castling[k] != 0
                             : p->castling[k] ? (k & 1 ? 0x80 : 0x01)
                                              : 0;
    } else if (a == GROUP_PLAIN) {
        plain_to_canonical(p);
    } else if (b == GROUP_PLAIN) {
        canonical_to_plain(p, to);
    }
    p->format = to;
    return 0;
}

/* ---- records and frames ---- */

#define REC_OFF(field) offsetof(lc_v6_record, field)

static void rec_read(const uint8_t *rec, conv_pos *p)
{
    memset(p, 0, sizeof *p);
    LC_REC_GET(rec, input_format, p->format);
    LC_REC_GET(rec, planes, p->planes);
    memcpy(p->castling, rec + REC_OFF(castling_us_ooo), 4);
    LC_REC_GET(rec, side_to_move_or_enpassant, p->stm_or_ep);
    LC_REC_GET(rec, rule50_count, p->rule50);
    LC_REC_GET(rec, invariance_info, p->invariance);
}

static void rec_write(uint8_t *rec, const conv_pos *p)
{
    memcpy(rec + REC_OFF(input_format), &p->format, 4);
    memcpy(rec + REC_OFF(planes), p->planes, sizeof p->planes);
    memcpy(rec + REC_OFF(castling_us_ooo), p->castling, 4);
    rec[REC_OFF(side_to_move_or_enpassant)] = p->stm_or_ep;
    rec[REC_OFF(invariance_info)] = p->invariance;
}

static bool is_minus_one(float v)
{
    static const float m1 = -1.0f;
    return memcmp(&v, &m1, sizeof v) == 0;
}

static int bad_policy(unsigned i, lc_error *err)
{
    return lc_error_set(err, LC_EFORMAT,
                        "new_input_format: policy index %u has a value but no square-mapped move "
                        "(a promotion in a position without pawns); the record is left as it was",
                        i);
}

/* The record's 1858 floats permuted into out; LC_EFORMAT when one that is
 * not -1 has nowhere to go. */
static int rec_policy(const uint8_t *rec, const conv_pos *p, float *out, lc_error *err)
{
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        out[i] = -1.0f;
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++) {
        float v = lc_rec_probability(rec, i);
        if (is_minus_one(v))
            continue;
        int n = policy_map(p, i);
        if (n < 0)
            return bad_policy(i, err);
        out[n] = v;
    }
    return 0;
}

static void rec_moves(uint8_t *rec, uint32_t version, const conv_pos *p)
{
    uint16_t idx;
    const size_t offs[2] = {REC_OFF(played_idx), REC_OFF(best_idx)};
    for (int k = 0; k < 2; k++) {
        memcpy(&idx, rec + offs[k], 2);
        idx = move_map(p, idx);
        memcpy(rec + offs[k], &idx, 2);
    }
    if (version == 7 && p->frame_changes) {
        /* The next positions' moves, in their own frames: unknown here. */
        const uint16_t none = 0xFFFF;
        memcpy(rec + offsetof(lc_v7_record, opp_played_idx), &none, 2);
        memcpy(rec + offsetof(lc_v7_record, next_played_idx), &none, 2);
    }
}

int lc_record_convert_format(uint8_t *rec, uint32_t version, uint32_t new_format, lc_error *err)
{
    if (version < 5 || version > 7)
        return lc_error_set(err, LC_EVERSION,
                            "new_input_format: record version %u has no input_format field "
                            "(only V5 to V7 records can be converted)",
                            version);
    conv_pos p;
    rec_read(rec, &p);
    uint32_t from = p.format;
    int rc = convert_fields(&p, new_format, err);
    if (rc < 0 || from == new_format)
        return rc;
    if (p.undo || p.apply) {
        float probs[LC_POLICY_SIZE];
        rc = rec_policy(rec, &p, probs, err);
        if (rc < 0)
            return rc;
        memcpy(rec + REC_OFF(probabilities), probs, sizeof probs);
    }
    rec_write(rec, &p);
    if (version >= 6)
        rec_moves(rec, version, &p);
    return 0;
}

/* ---- frames ---- */

typedef struct policy_entry {
    uint16_t idx;
    float val;
} policy_entry;

static int entry_cmp(const void *a, const void *b)
{
    const policy_entry *x = a, *y = b;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static void frame_entry_slot(lc_frame *f, unsigned k, uint16_t **idx, float **val)
{
    if (k < LC_FRAME_INLINE_POLICY) {
        *idx = &f->policy_idx[k];
        *val = &f->policy_val[k];
    } else {
        *idx = &f->overflow_idx[k - LC_FRAME_INLINE_POLICY];
        *val = &f->overflow_val[k - LC_FRAME_INLINE_POLICY];
    }
}

/* The frame's sparse policy permuted and sorted again (indices past the
 * 1858 stay as they are, last). */
static int frame_policy(lc_frame *f, const conv_pos *p, lc_error *err)
{
    unsigned n = f->n_policy;
    policy_entry *e = lc_xmalloc((n ? n : 1) * sizeof *e);
    for (unsigned k = 0; k < n; k++) {
        uint16_t *idx;
        float *val;
        frame_entry_slot(f, k, &idx, &val);
        int m = *idx < LC_POLICY_SIZE ? policy_map(p, *idx) : *idx;
        if (m < 0) {
            unsigned bad = *idx;
            free(e);
            return bad_policy(bad, err);
        }
        e[k] = (policy_entry){(uint16_t)m, *val};
    }
    qsort(e, n, sizeof *e, entry_cmp);
    for (unsigned k = 0; k < n; k++) {
        uint16_t *idx;
        float *val;
        frame_entry_slot(f, k, &idx, &val);
        *idx = e[k].idx;
        *val = e[k].val;
    }
    free(e);
    return 0;
}

int lc_frame_convert_format(lc_frame *f, uint32_t new_format, lc_error *err)
{
    conv_pos p; /* frames of V3 and V4 records too: theirs is input format 1 */
    memset(&p, 0, sizeof p);
    p.format = f->input_format;
    memcpy(p.planes, f->planes, sizeof p.planes);
    const uint8_t castling[4] = {f->castling_us_ooo, f->castling_us_oo, f->castling_them_ooo,
                                 f->castling_them_oo};
    memcpy(p.castling, castling, 4);
    p.stm_or_ep = f->side_to_move_or_enpassant;
    p.rule50 = f->rule50_count;
    p.invariance = f->invariance_info;
    int rc = convert_fields(&p, new_format, err);
    if (rc < 0 || f->input_format == new_format)
        return rc;
    if (p.undo || p.apply) {
        rc = frame_policy(f, &p, err);
        if (rc < 0)
            return rc;
    }
    f->input_format = p.format;
    memcpy(f->planes, p.planes, sizeof p.planes);
    f->castling_us_ooo = p.castling[0];
    f->castling_us_oo = p.castling[1];
    f->castling_them_ooo = p.castling[2];
    f->castling_them_oo = p.castling[3];
    f->side_to_move_or_enpassant = p.stm_or_ep;
    f->invariance_info = p.invariance;
    if (f->version >= 6) {
        f->played_idx = move_map(&p, f->played_idx);
        f->best_idx = move_map(&p, f->best_idx);
    }
    if (p.frame_changes)
        f->opp_played_idx = f->next_played_idx = 0xFFFF;
    return 0;
}
