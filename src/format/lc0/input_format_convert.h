/*
 * input_format_convert: a position's planes, castling and side-to-move
 * bytes, transform and policy rewritten for another input format (the
 * rescorer's new_input_format), between the formats lcmon reads: 1
 * (classical), 2 (castling planes), 3, 4, 5 (canonical) and 132, 133
 * (canonical, armageddon). docs/lc0-training-data.md says what each format
 * stores; docs/pipelines.md "chunk_rescorer" says what a conversion keeps,
 * what it cannot know (a Chess960 rook file in format 1) and how the
 * canonical transform is chosen.
 *
 * A conversion to the format a position already has changes nothing.
 * Records must be V5 or later (V3 and V4 have no input_format field).
 */
#ifndef LC_FORMAT_INPUT_FORMAT_CONVERT_H
#define LC_FORMAT_INPUT_FORMAT_CONVERT_H

#include "core/error.h"
#include "format/lc0/frame.h"

#include <stdbool.h>
#include <stdint.h>

/* Whether positions of input format `from` can be converted to `to`. */
bool lc_input_format_convertible(uint32_t from, uint32_t to);

/* One record of the given version (5..7), in place. LC_ECONFIG (message
 * naming both formats) when the conversion is not one lcmon knows. */
int lc_record_convert_format(uint8_t *rec, uint32_t version, uint32_t new_format, lc_error *err);

/* The same for a compact frame, in place (its policy stays ascending). */
int lc_frame_convert_format(lc_frame *f, uint32_t new_format, lc_error *err);

#endif
