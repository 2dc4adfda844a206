/*
 * input_format_convert: a whole game re-encoded for another input format
 * (the rescorer's new_input_format), as lc0's rescorer converts one: the
 * game's positions are read (game_history.h: record 0's board alone, then
 * the moves between records), and every record gets the planes, castling
 * bytes, side_to_move_or_enpassant, transform and policy that lc0's encoder
 * gives its position with the history before it in the game
 * (input_format_encode.h). Every pair of the formats lcmon reads (1, 2, 3,
 * 4, 5, 132, 133) converts, a format to itself included (which rewrites the
 * history from the game too). docs/pipelines.md "new_input_format" says
 * what each format keeps and where lcmon differs from upstream's rescorer.
 *
 * Per record: the 104 planes and the three bytes as encoded; invariance_info
 * the transform and bit 7 for black to move in the canonical formats, 0 in
 * 1 and 2, bits 3-6 kept; when the transform changes, the policy moved over
 * the position's legal moves (entries of other indices become -1), and from
 * V6 on, when visits > 0, played_idx and best_idx moved with it. V7's
 * opp_played_idx and next_played_idx are moved as the records they name.
 * rule50_count and everything else is kept.
 */
#ifndef LC_FORMAT_LC0_RESCORE_INPUT_FORMAT_CONVERT_H
#define LC_FORMAT_LC0_RESCORE_INPUT_FORMAT_CONVERT_H

#include "core/error.h"
#include "format/lc0/frame.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether games of input format `from` can be converted to `to`: both are
 * formats lcmon reads. */
bool lc_input_format_convertible(uint32_t from, uint32_t to);

/*
 * The n records of one game (record_size apart, version 5..7, in ply
 * order) converted to new_format in place. All or nothing: on an error the
 * records are as they were. LC_EVERSION for V3 and V4 (no input_format
 * field); LC_ECONFIG when new_format is none lcmon reads; LC_EFORMAT (the
 * record named) when a record's input format is unknown or the records are
 * not one game (game_history.h).
 */
int lc_game_convert_format(uint8_t *records, size_t record_size, uint32_t n, uint32_t version,
                           uint32_t new_format, lc_error *err);

/*
 * For a stored game, whose positions are decoded one at a time: a table,
 * made once from the game's n frames, from which any one frame of the game
 * is converted alone. About 11 floats a position (their bits: the table is
 * copied, never computed with). malloc'd, *n_floats its length; NULL with
 * err set as lc_game_convert_format sets it.
 */
float *lc_game_format_table(const lc_frame *frames, uint32_t n, uint32_t new_format,
                            size_t *n_floats, lc_error *err);

/* Frame i of the table's game converted in place as its record would be
 * (frames keep no visits: played_idx and best_idx move whenever they name
 * a legal move). LC_EFORMAT when i is not a position of the game. */
int lc_game_format_table_apply(const float *table, uint32_t i, lc_frame *f, lc_error *err);

#endif
