/*
 * game: one game's records read as lc0's rescorer reads them, as a history
 * of positions: record 0's board, then each next position reached by the
 * legal move that gives the next record's board. The rescorer
 * (format/lc0/rescore/rescore.h) needs it for upstream's checks (every record
 * after the first is one legal move from the one before) and for what a
 * single record does not hold: the fifty-move counter, castling rights and
 * en passant as the moves make them, and lc0's repetition count of every
 * position.
 *
 * Frames. Positions are kept in the "true" frame: the side to move is "us",
 * moving up the board (position.h's plane frame) with a canonical format's
 * transform (invariance_info bits 0-2: flip, mirror, transpose) undone, so
 * that the positions of consecutive records, which may have different
 * transforms, can be compared and played on. The move to the next record
 * is kept as its policy index in the record's own frame (the frame its
 * planes and policy are written in), where lc0 wrote played_idx.
 *
 * Cost: one board read a record, one legal-move generation a ply, the
 * candidate moves (those that empty a square of ours) played and compared.
 * The plies live in one buffer the game owns, grown when a longer game
 * comes (lc_game_fini frees it); a game may be read again into it.
 *
 * Not thread-safe per object: one lc_game per thread.
 */
#ifndef LC_FORMAT_LC0_RESCORE_GAME_H
#define LC_FORMAT_LC0_RESCORE_GAME_H

#include "format/lc0/rescore/position.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* No move: the last record, or a game read record by record. */
#define LC_GAME_NO_MOVE 0xFFFFu

typedef struct lc_game_ply {
    lc_position pos;   /* the true frame; castling rights, counter and en passant of the history */
    int rule50;        /* the history's fifty-move counter (pos.rule50 stops at 255) */
    uint16_t move;     /* policy index, in this record's frame, of the move to the next record */
    uint8_t transform; /* the record's canonical transform (0 for formats 1 and 2) */
    uint8_t reps;      /* lc0's repetition count (Position::GetRepetitions) */
    bool readable;     /* the planes are a board (always, for a history) */
} lc_game_ply;

typedef struct lc_game {
    lc_game_ply *ply; /* n of them, one a record */
    uint32_t n, cap;
    uint32_t moves; /* the moves found: ply[i].move for i < moves (n - 1 for a history) */
    bool history;   /* read as a history: moves and repetitions known */
} lc_game;

void lc_game_init(lc_game *g);
void lc_game_fini(lc_game *g);

/*
 * Read the n records (record_size apart, version 3..7) as a history. False
 * when they are not one, with the first reason in why (naming the record):
 * a record whose planes are not a board, or a record that no legal move of
 * the one before leads to. n may be 0.
 */
bool lc_game_read(lc_game *g, const uint8_t *records, size_t record_size, uint32_t n,
                  uint32_t version, char *why, size_t why_size);

/* Read every record on its own (for a game that is not a history): its own
 * counter and castling rights, no moves, repetitions unknown. */
void lc_game_read_records(lc_game *g, const uint8_t *records, size_t record_size, uint32_t n,
                          uint32_t version);

/*
 * lc0's rescorer's repetition check at record k: none of the positions
 * from k back over its fifty-move counter's plies (k, k-1, ... k-steps+1)
 * has a repetition; false when the history is shorter than that (lc0:
 * "assume there were repetitions before"), or unknown (read record by
 * record) and the counter is not 0.
 */
bool lc_game_no_reps(const lc_game *g, uint32_t k);

/* lc0's PositionHistory::DidRepeatSinceLastZeroingMove for the history up
 * to record k; record by record: true when a repetition is possible (the
 * counter at 4 or more). */
bool lc_game_repeated_since_zeroing(const lc_game *g, uint32_t k);

/* The canonical transform t (bits 0-2) undone on a position of a record's
 * frame, or (apply) made. */
void lc_position_transform(lc_position *p, unsigned t, bool apply);

#endif
