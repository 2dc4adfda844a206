/*
 * deblunder: undo what temperature blunders teach. Self-play picks some
 * moves at random (temperature) to explore; a move that throws away a win
 * then makes every earlier position learn the lost game's result. Walking
 * back from the last position, a position whose played move lost more
 * than `threshold` of q against the best move (best_q - played_q, both
 * from the side to move) is a blunder: from it backwards, positions learn
 * the value of the best line at the blunder (best_q, best_d, and best_m
 * for the plies left) instead of the game's result, the sign alternating
 * with the side to move and the plies left growing by one a ply. With a
 * width w > 0 the switch is soft: a loss of q of `threshold - w/2` starts
 * it and `threshold + w/2` makes it whole, blending linearly in between.
 * docs/pipelines.md "chunk_rescorer" works an example through by hand.
 */
#ifndef LC_FORMAT_LC0_RESCORE_DEBLUNDER_H
#define LC_FORMAT_LC0_RESCORE_DEBLUNDER_H

#include <stddef.h>
#include <stdint.h>

/*
 * The n records (record_size apart, version 6 or 7: older ones have no
 * played_q and are left alone) of one game in ply order, in place:
 * result_q, result_d and plies_left. Adds the blunders found to *blunders
 * and the positions whose targets changed to *changed.
 */
void lc_deblunder(uint8_t *records, size_t record_size, uint32_t n, uint32_t version,
                  double threshold, double width, uint64_t *blunders, uint64_t *changed);

/*
 * Upstream's deblunder (lc0's rescorer, the rescorer's default): only when
 * the game's last record has visits > 0 (a V6 search; records upgraded from
 * V5 have 0); the walk covers records region-1 down to 0 (the rescorer's
 * region: before the first record after record 0 with no castling right
 * and at most the Syzygy tables' pieces); the running target starts from
 * the LAST record's (result_q, result_d, plies_left), even when the region
 * ends earlier, and turns (q negated, m + 1) at every step, blunder or not;
 * a blunder's blend ratio is min(1, (L - T) / w + 0.5) for w > 0 (not
 * clamped at 0), 1 for a terminal one or w <= 0. Every other record's
 * visits are not looked at. Same arguments and counts as lc_deblunder.
 */
void lc_deblunder_upstream(uint8_t *records, size_t record_size, uint32_t n, uint32_t region,
                           uint32_t version, double threshold, double width, uint64_t *blunders,
                           uint64_t *changed);

#endif
