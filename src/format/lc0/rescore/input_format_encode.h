/*
 * input_format_encode: position k of a game (game_history.h) encoded for an
 * input format as lc0's encoder (EncodePositionForNN, with no filling of
 * empty history) encodes it for a training record: the 104 history planes,
 * the castling bytes, side_to_move_or_enpassant and the canonical transform.
 * docs/pipelines.md "new_input_format" gives every rule.
 *
 * Squares are lc0's: s = rank * 8 + file from the side to move's view (a1
 * = 0); a record's plane word keeps square s at bit s ^ 7 (record.h,
 * lc_plane_squares). lc0's canonical transform is three bits applied in
 * order: flip (file f to 7 - f), mirror (rank r to 7 - r), transpose
 * (across the a8-h1 diagonal: (r, f) to (7 - f, 7 - r)).
 *
 * Pure functions: any thread may call them.
 */
#ifndef LC_FORMAT_LC0_RESCORE_INPUT_FORMAT_ENCODE_H
#define LC_FORMAT_LC0_RESCORE_INPUT_FORMAT_ENCODE_H

#include "format/lc0/rescore/game_history.h"
#include "format/lc0/record.h"

#include <stdbool.h>
#include <stdint.h>

enum { LC_T_FLIP = 1, LC_T_MIRROR = 2, LC_T_TRANSPOSE = 4 };

/* 3, 4, 5, 132 and 133: the board may be transformed, the history stops
 * early and side_to_move_or_enpassant holds the en-passant file. */
bool lc_input_format_canonical(uint32_t format);

/* A plane word (record form) with transform t applied. */
uint64_t lc_transform_word(uint64_t w, int t);

/* The index, as transform to_t writes it, of the legal move (of moves, n
 * of them) whose index under from_t is idx; -1 when no legal move has it.
 * Indices of a transform are lc_move_policy_transformed's (position.h). */
int lc_transform_move_index(const lc_move *moves, unsigned n, int from_t, int to_t, unsigned idx);

typedef struct lc_encoded {
    uint64_t planes[LC_RECORD_PLANES]; /* record words, transformed */
    uint8_t castling[4];               /* us_ooo, us_oo, them_ooo, them_oo */
    uint8_t stm_or_ep;                 /* side to move (1, 2), en-passant file mask (canonical) */
    uint8_t transform;                 /* 0 for formats 1 and 2 */
} lc_encoded;

/*
 * Position k of g encoded for `format` (one of 1, 2, 3, 4, 5, 132, 133).
 * It reads g[first .. k] only (first from lc_game_encode_first; their pos,
 * black, repetitions and ep_flag), and nothing before first changes the
 * result: a caller may pass just those positions (g pointing at position
 * first, k counted from it).
 */
void lc_game_encode(const lc_game_pos *g, uint32_t k, uint32_t format, lc_encoded *out);

/* The first position lc_game_encode reads for position k: k - 7 (not below
 * 0), or for formats 5 and 133, which keep only repeated positions, the
 * last position up to k whose fifty-move counter is 0 (0 when none).
 * Position j's counter is the byte rule50[j * stride]. */
uint32_t lc_game_encode_first(const uint8_t *rule50, size_t stride, uint32_t k, uint32_t format);

#endif
