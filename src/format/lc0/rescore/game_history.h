/*
 * game_history: the positions of one game (a chunk's records, or their
 * frames, in ply order) as the input-format encoder needs them
 * (input_format_encode.h), read by the game reader (game.h: record 0's
 * board from its planes, every later position the child of the one before
 * by the legal move whose board is the next record's, castling rights, en
 * passant, fifty-move counter and repetitions as lc0's PositionHistory
 * makes them, canonical transforms undone), with what that reader does not
 * keep: the side to move and lc0's en-passant flag.
 *
 * The side to move of record 0 is its side_to_move byte (formats 1, 2) or
 * invariance_info bit 7 (the canonical formats); it alternates from there.
 *
 * Pure functions on caller-owned values: any thread may call them.
 */
#ifndef LC_FORMAT_LC0_RESCORE_GAME_HISTORY_H
#define LC_FORMAT_LC0_RESCORE_GAME_HISTORY_H

#include "core/error.h"
#include "format/lc0/frame.h"
#include "format/lc0/rescore/game.h"
#include "format/lc0/rescore/position.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lc_game_pos {
    lc_position pos;     /* its side to move's plane frame, no transform */
    bool black;          /* black to move */
    uint8_t repetitions; /* lc0's count: how often this position stood before */
    int8_t ep_flag;      /* lc0's en-passant flag: the file a pawn of ours may take on, or -1 */
    uint8_t transform;   /* the record's own canonical transform (0 for formats 1, 2) */
    uint16_t move;       /* the move to the next record, its policy index in this record's
                            frame (LC_GAME_NO_MOVE for the last) */
} lc_game_pos;

/*
 * The n positions of the records (record_size apart, version 3..7) into
 * out (room for n). LC_EFORMAT naming the record when a board is not one
 * or no legal move leads from a position to the next record's board (the
 * game reader's reason); LC_EVERSION for an unknown version.
 */
int lc_game_history_read(const uint8_t *records, size_t record_size, uint32_t n, uint32_t version,
                         lc_game_pos *out, lc_error *err);
/* The same from the game's frames. */
int lc_game_history_frames(const lc_frame *frames, uint32_t n, lc_game_pos *out, lc_error *err);

#endif
