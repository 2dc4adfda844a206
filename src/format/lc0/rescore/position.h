/*
 * position: the board of an lc0 record (or compact frame) as bitboards, in
 * the plane frame, and its legal moves with their policy indices.
 *
 * The plane frame is the frame the record's planes and policy are written
 * in: the side to move is "us" and moves up the board (rank increasing),
 * square s = rank * 8 + file. Canonical input formats (3, 4, 5, 132, 133)
 * may store the board flipped left-right, mirrored top-bottom or transposed
 * (invariance_info bits 0-2; a flip only without castling rights, mirror and
 * transpose only without pawns as well). The tablebase result and the set of
 * legal moves do not change under those transforms when they are allowed,
 * and the policy is written in the same frame, so everything here works in
 * the frame as stored and never undoes a transform.
 *
 * Bitboards here have square s at bit s (a1 = bit 0); a record's plane word
 * has it at bit s ^ 7 (the bits of every byte reversed), which
 * lc_position_from_planes converts.
 *
 * En passant: canonical formats store the file mask of the en-passant file
 * in side_to_move_or_enpassant; formats 1 and 2 do not, so it is read from
 * the history: their pawn that stood on rank 7 at history step 1 and stands
 * on rank 5 at step 0 (its two squares empty before, the square it crossed
 * empty now) has just moved two squares.
 *
 * Castling rights are kept per side as rook-file masks (format 1's 0/1
 * flags become the a-file and h-file rooks), so that the move generator
 * can give castling as lc0 encodes it: the king taking its own rook.
 *
 * Pure functions on caller-owned values: any thread may call them.
 */
#ifndef LC_FORMAT_LC0_RESCORE_POSITION_H
#define LC_FORMAT_LC0_RESCORE_POSITION_H

#include "format/lc0/frame.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { LC_PAWN, LC_KNIGHT, LC_BISHOP, LC_ROOK, LC_QUEEN, LC_KING };
/* bb[LC_OURS + piece] and bb[LC_THEIRS + piece]. */
enum { LC_OURS = 0, LC_THEIRS = 6 };

typedef struct lc_position {
    uint64_t bb[12];       /* our P N B R Q K, their P N B R Q K; square s is bit s */
    uint64_t ours, theirs; /* the union of each side's six */
    uint8_t pieces;        /* kings included */
    bool castling;         /* any of the four castling bytes is non-zero */
    uint8_t castle[4];     /* rook-file masks: us ooo, us oo, them ooo, them oo */
    uint8_t rule50;
    int8_t ep_file; /* the file their pawn just crossed two squares on; -1: none */
} lc_position;

/*
 * The position of a record of the given version (3..7). False when the
 * planes of history step 0 do not describe a board (not exactly one king a
 * side, two pieces on a square, a pawn on the first or last rank) or the
 * version is unknown; *out is then unspecified.
 */
bool lc_position_from_record(const uint8_t *rec, uint32_t version, lc_position *out);
bool lc_position_from_frame(const lc_frame *f, lc_position *out);
/* The shared part: planes 0..25 (history steps 0 and 1), the castling bytes
 * in record order, side_to_move_or_enpassant, rule50 and the input format. */
bool lc_position_from_planes(const uint64_t *planes, const uint8_t castling[4], uint8_t ep_byte,
                             uint8_t rule50, uint32_t input_format, lc_position *out);

/* The cheap look the rescorer's scan takes at a record: the pieces on the
 * board (popcount of planes 0..11) and whether any castling right is set.
 * False for an unknown version. */
bool lc_record_board_summary(const uint8_t *rec, uint32_t version, unsigned *pieces,
                             bool *castling);

/* The square (40 + file) one of our pawns could take en passant on, or -1
 * (no en-passant file, or no pawn of ours beside their pawn). */
int lc_position_ep_square(const lc_position *p);

/* ---- moves ---- */

/* More than the most legal moves a chess position has (218). */
#define LC_MAX_MOVES 256

typedef struct lc_move {
    uint8_t from, to;  /* squares of the plane frame; castling: the king takes its rook */
    uint8_t promotion; /* LC_KNIGHT..LC_QUEEN, or 0 */
    uint8_t flags;     /* LC_MOVE_* */
    uint16_t policy;   /* the lc0 policy index, 0..1857 */
} lc_move;

enum {
    LC_MOVE_CAPTURE = 1, /* en passant included */
    LC_MOVE_EN_PASSANT = 2,
    LC_MOVE_CASTLE = 4,
    LC_MOVE_DOUBLE_PUSH = 8,
};

/* The legal moves of p into out (room for LC_MAX_MOVES), returning how many,
 * ordered by policy index. A knight promotion has the plain move's index
 * (as lc0 encodes it), the queen, rook and bishop promotions their own. */
unsigned lc_position_legal_moves(const lc_position *p, lc_move *out);

/* The policy index of move m (one of a position's legal moves) in the frame
 * a canonical transform t makes of that position (invariance_info bits 0-2:
 * flip 1, mirror 2, transpose 4, applied in that order, as lc0's encoder
 * applies them): its two squares moved by t, the promotion kept. t 0 gives
 * m->policy. */
uint16_t lc_move_policy_transformed(const lc_move *m, unsigned t);

/* Square s of a position moved by the canonical transform t. */
int lc_square_transformed(int s, unsigned t);

/* The legal moves of the pieces on the squares of `from` (bit s = square
 * s), and every legal castling, into out, in no particular order: what a
 * caller that knows which piece moved needs, at a fraction of the cost. */
unsigned lc_position_legal_moves_from(const lc_position *p, uint64_t from, lc_move *out);

/* Whether our king is attacked. */
bool lc_position_in_check(const lc_position *p);

/* The position after move m (one of p's legal moves), in the next side's
 * plane frame (mirrored top-bottom, sides swapped). */
void lc_position_play(const lc_position *p, const lc_move *m, lc_position *child);

#endif
