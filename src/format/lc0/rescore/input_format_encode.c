/*
 * input_format_encode: see input_format_encode.h.
 *
 * The history, walking back from position k (step 0) over positions k - 1,
 * k - 2, ... of the game, each seen from position k's side to move (every
 * other one with the colours swapped and the board turned top to bottom):
 *
 *   - canonical formats stop before a position whose castling rights
 *     differ from position k's, and before one (other than k) with an
 *     en-passant flag;
 *   - the game's first position is the last one (no filling);
 *   - formats 5 and 133 skip a position (other than k) that is no
 *     repetition, and stop at a skipped one whose fifty-move counter is 0;
 *   - a position written gets its 12 piece planes and plane 12 all ones
 *     when it is a repetition; canonical formats stop after one whose
 *     fifty-move counter is 0;
 *   - at most 8 positions are written.
 *
 * Then, for canonical formats, lc0's transform (choose_transform) is
 * applied to every history plane and to the en-passant file.
 */
#include "format/lc0/rescore/input_format_encode.h"

#include <string.h>

enum { STEPS = 8, P_STEP = 13 };

bool lc_input_format_canonical(uint32_t format)
{
    return format == 3 || format == 4 || format == 5 || format == 132 || format == 133;
}

static bool keeps_repeats_only(uint32_t format)
{
    return format == 5 || format == 133;
}

/* ---- transforms ---- */

/* Every square of a mask (bit s = square s) moved by t. */
static uint64_t mask_map(uint64_t m, int t)
{
    if (t == 0 || m == 0 || m == ~0ULL)
        return m;
    uint64_t out = 0;
    while (m) {
        int s = __builtin_ctzll(m);
        m &= m - 1;
        out |= 1ULL << lc_square_transformed(s, (unsigned)t);
    }
    return out;
}

uint64_t lc_transform_word(uint64_t w, int t)
{
    if (t == 0)
        return w;
    return lc_plane_squares(mask_map(lc_plane_squares(w), t));
}

int lc_transform_move_index(const lc_move *moves, unsigned n, int from_t, int to_t, unsigned idx)
{
    for (unsigned m = 0; m < n; m++)
        if (lc_move_policy_transformed(&moves[m], (unsigned)from_t) == idx)
            return lc_move_policy_transformed(&moves[m], (unsigned)to_t);
    return -1;
}

/* ---- lc0's canonical transform ---- */

/* -1 when the board needs no transpose, 1 when it does, 0 on a tie. */
static int compare_transposing(uint64_t m, int t)
{
    uint64_t v = mask_map(m, t & (LC_T_FLIP | LC_T_MIRROR));
    uint64_t alt = mask_map(v, LC_T_TRANSPOSE);
    return v < alt ? -1 : v > alt ? 1 : 0;
}

/* lc0's rule, on the position's board (square masks, our pieces then
 * theirs), with no castling right left: flip when our king is on files
 * a-d; without pawns, mirror when it is on ranks 5-8, and transpose when
 * it is then above the a8-h1 diagonal, or on it and the pieces (all, ours,
 * kings, queens, rooks, knights, bishops, first that differs) are smaller
 * transposed. */
static int choose_transform(const uint64_t *pl)
{
    uint64_t king = pl[LC_OURS + LC_KING];
    int t = 0;
    if (king & 0x0F0F0F0F0F0F0F0FULL) {
        t |= LC_T_FLIP;
        king = mask_map(king, LC_T_FLIP);
    }
    if (pl[LC_OURS + LC_PAWN] | pl[LC_THEIRS + LC_PAWN])
        return t;
    if (king & 0xFFFFFFFF00000000ULL) {
        t |= LC_T_MIRROR;
        king = mask_map(king, LC_T_MIRROR);
    }
    if (king & 0xE0C08000ULL)
        return t | LC_T_TRANSPOSE;
    if (!(king & 0x10204080ULL))
        return t;
    uint64_t ours = pl[0] | pl[1] | pl[2] | pl[3] | pl[4] | pl[5];
    uint64_t theirs = pl[6] | pl[7] | pl[8] | pl[9] | pl[10] | pl[11];
    const uint64_t order[7] = {ours | theirs, ours,          pl[5] | pl[11], pl[4] | pl[10],
                               pl[3] | pl[9], pl[1] | pl[7], pl[2] | pl[8]};
    for (int i = 0; i < 7; i++) {
        int c = compare_transposing(order[i], t);
        if (c)
            return c > 0 ? t | LC_T_TRANSPOSE : t;
    }
    return t;
}

/* ---- the history ---- */

/* Position j's board and castling rights seen from the side to move of a
 * position `plies` later: the same, or (odd) colours swapped and the board
 * turned top to bottom. */
static void view(const lc_game_pos *p, uint32_t plies, uint64_t bb[12], uint8_t castle[4])
{
    if (!(plies & 1)) {
        memcpy(bb, p->pos.bb, 12 * sizeof *bb);
        memcpy(castle, p->pos.castle, 4);
        return;
    }
    for (int i = 0; i < 6; i++) {
        bb[LC_OURS + i] = __builtin_bswap64(p->pos.bb[LC_THEIRS + i]);
        bb[LC_THEIRS + i] = __builtin_bswap64(p->pos.bb[LC_OURS + i]);
    }
    const uint8_t swapped[4] = {p->pos.castle[2], p->pos.castle[3], p->pos.castle[0],
                                p->pos.castle[1]};
    memcpy(castle, swapped, 4);
}

static void encode_history(const lc_game_pos *g, uint32_t k, uint32_t format, uint64_t *planes)
{
    bool canonical = lc_input_format_canonical(format);
    bool repeats_only = keeps_repeats_only(format);
    int64_t j = k;
    for (int step = 0; step < STEPS && j >= 0; j--) {
        const lc_game_pos *p = &g[j];
        uint64_t bb[12];
        uint8_t castle[4];
        view(p, k - (uint32_t)j, bb, castle);
        if (canonical && memcmp(castle, g[k].pos.castle, 4) != 0)
            break;
        if (canonical && j != k && p->ep_flag >= 0)
            break;
        if (repeats_only && step > 0 && p->repetitions == 0) {
            if (p->pos.rule50 == 0)
                break;
            continue;
        }
        uint64_t *out = planes + P_STEP * step;
        for (int i = 0; i < 12; i++)
            out[i] = lc_plane_squares(bb[i]);
        if (p->repetitions >= 1)
            out[12] = ~0ULL;
        step++;
        if (canonical && p->pos.rule50 == 0)
            break;
    }
}

uint32_t lc_game_encode_first(const uint8_t *rule50, size_t stride, uint32_t k, uint32_t format)
{
    if (!keeps_repeats_only(format))
        return k >= STEPS - 1 ? k - (STEPS - 1) : 0;
    uint32_t j = k;
    while (j > 0 && rule50[(size_t)j * stride] != 0)
        j--;
    return j;
}

void lc_game_encode(const lc_game_pos *g, uint32_t k, uint32_t format, lc_encoded *out)
{
    memset(out, 0, sizeof *out);
    const lc_game_pos *p = &g[k];
    encode_history(g, k, format, out->planes);
    bool canonical = lc_input_format_canonical(format);
    bool castling = p->pos.castle[0] | p->pos.castle[1] | p->pos.castle[2] | p->pos.castle[3];
    int t = canonical && !castling ? choose_transform(p->pos.bb) : 0;
    for (int i = 0; i < LC_RECORD_PLANES && t; i++)
        out->planes[i] = lc_transform_word(out->planes[i], t);
    for (int i = 0; i < 4; i++)
        out->castling[i] = format == 1 ? p->pos.castle[i] != 0 : p->pos.castle[i];
    if (canonical) {
        int f = p->ep_flag;
        out->stm_or_ep = f < 0 ? 0 : (uint8_t)(1u << ((t & LC_T_FLIP) ? 7 - f : f));
    } else {
        out->stm_or_ep = p->black;
    }
    out->transform = (uint8_t)t;
}
