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
#ifndef LC_FORMAT_DEBLUNDER_H
#define LC_FORMAT_DEBLUNDER_H

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

#endif
