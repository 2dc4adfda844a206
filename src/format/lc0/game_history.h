/*
 * game_history: the positions of one game (a chunk's records, or their
 * frames, in ply order) as lc0's rescorer finds them: record 0's board read
 * from its planes, every later position the child of the one before by the
 * legal move whose board is the next record's, with the castling rights,
 * en-passant flag, fifty-move counter and repetition count lc0's
 * PositionHistory gives them.
 *
 * Boards are in the plane frame of their own side to move (position.h)
 * with any canonical transform undone, so that position k's moves, its
 * board and its history can be encoded for any input format
 * (input_format_encode.h). The side to move of record 0 is its
 * side_to_move byte (formats 1, 2) or invariance_info bit 7 (the canonical
 * formats); it alternates from there.
 *
 * What is read from the records: record 0's board, castling bytes,
 * en-passant file (the canonical byte, or formats 1 and 2's double push
 * between history steps 1 and 0), fifty-move counter and side to move;
 * every other record's board only (history step 0). Everything else is
 * played, as lc0 does.
 *
 * Pure functions on caller-owned values: any thread may call them.
 */
#ifndef LC_FORMAT_GAME_HISTORY_H
#define LC_FORMAT_GAME_HISTORY_H

#include "core/error.h"
#include "format/lc0/frame.h"
#include "format/lc0/position.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lc_game_pos {
    lc_position pos;     /* its side to move's plane frame, no transform */
    bool black;          /* black to move */
    uint8_t repetitions; /* lc0's count: how often this position stood before */
    int8_t ep_flag;      /* lc0's en-passant flag: the file a pawn of ours may take on, or -1 */
    uint8_t transform;   /* the record's own canonical transform (0 for formats 1, 2) */
    lc_move move;        /* the move to the next position; unset for the last */
} lc_game_pos;

/*
 * The n positions of the records (record_size apart, version 3..7) into
 * out (room for n). LC_EFORMAT naming the record when a board is not one
 * (lc_position_from_planes) or no legal move leads from a position to the
 * next record's board; LC_EVERSION for an unknown version.
 */
int lc_game_history_read(const uint8_t *records, size_t record_size, uint32_t n, uint32_t version,
                         lc_game_pos *out, lc_error *err);
/* The same from the game's frames. */
int lc_game_history_frames(const lc_frame *frames, uint32_t n, lc_game_pos *out, lc_error *err);

/* Whether two positions are one for lc0's repetition rule: the same
 * pieces, castling rights and en-passant flag (the same side to move is
 * the caller's: repetitions are looked for two plies apart). */
bool lc_game_pos_same(const lc_game_pos *a, const lc_game_pos *b);

#endif
