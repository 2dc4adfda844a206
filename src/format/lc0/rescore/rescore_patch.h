/*
 * rescore_patch: what the chunk_rescorer changed in a stored game, kept
 * with its packed form (format/lc0/packed_chunk.h, slot LC_AUX_RESCORE) so
 * that chunk_unpacker gives each position it decodes the rescored values
 * without the game being decoded whole again.
 *
 * The rescorer decodes a stored game once, rescores it (format/lc0/
 * rescore.h), converts its format (input_format_convert.h) and computes its
 * short-term targets (st_targets.h), and keeps the difference: per position
 * up to the last one changed its result_q, result_d, plies_left and int8
 * result; the new policy values of the positions it sharpened (the same
 * entries, other values); the input format to convert to; the short-term
 * targets of every position when it made them (the positions then read as
 * V7); or that the game is dropped (upstream's Validate refuses it). The
 * planes a conversion rewrites are not kept: the patch keeps the game's
 * boards, a few words a position (lc_game_format_table), from which each
 * decoded frame is converted as its record would be.
 *
 * A patch is a float array (the packed chunk's aux slots hold floats; every
 * count and index in it is below 2^24 and so exact) that starts with a
 * 64-bit key of the settings that made it, so that a rescorer with other
 * settings reading the same store tells its own from another's.
 */
#ifndef LC_FORMAT_LC0_RESCORE_RESCORE_PATCH_H
#define LC_FORMAT_LC0_RESCORE_RESCORE_PATCH_H

#include "core/error.h"
#include "format/lc0/frame.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * A patch turning the n frames `before` into `after` (the same game after
 * rescoring, before any format conversion): the fields above that differ
 * (before NULL: nothing differs).
 * new_format: the input format to convert to (0: keep; a game whose frames
 * are not one game, lc_game_format_table, is not converted). st: NULL, or the
 * short-term targets of every position after the conversion, 4 a position
 * (q_st, d_st, opp_played_idx, next_played_idx). malloc'd; *changed (may
 * be NULL) gets the number of positions whose results or policy differ.
 */
float *lc_rescore_patch_make(uint64_t key, uint32_t new_format, const lc_frame *before,
                             const lc_frame *after, uint32_t n, const float *st, uint32_t *changed);

/* A patch saying the game of n positions is dropped (upstream's Validate
 * refuses it): kept with the packed game, so that later uses drop it
 * without rescoring it again. malloc'd. */
float *lc_rescore_patch_dropped(uint64_t key, uint32_t n);

uint64_t lc_rescore_patch_key(const float *patch);
/* The input format it converts to (0: none) and whether it carries
 * short-term targets (the positions then become V7). */
uint32_t lc_rescore_patch_format(const float *patch);
bool lc_rescore_patch_has_st(const float *patch);
/* Nothing to do: a game the rescorer leaves as it is. */
bool lc_rescore_patch_is_empty(const float *patch);
/* A game the rescorer drops (lc_rescore_patch_dropped): never empty, and
 * lc_rescore_patch_apply refuses its positions. */
bool lc_rescore_patch_is_dropped(const float *patch);

/*
 * Position i of the patched game, decoded from the packed chunk into f:
 * its new results and policy, then the conversion, then its short-term
 * targets. LC_EFORMAT when i is not a position of the patch's game or the
 * policy does not have the entries the patch was made for (a patch of
 * another game: never expected); a conversion's error as it gives it.
 */
int lc_rescore_patch_apply(const float *patch, uint32_t i, lc_frame *f, lc_error *err);

/* An FNV-1a hash step over bytes, for the key. */
uint64_t lc_rescore_patch_hash(uint64_t h, const void *bytes, size_t n);
#define LC_RESCORE_PATCH_HASH_INIT 0xcbf29ce484222325ull

#endif
