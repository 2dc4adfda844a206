/*
 * st_targets: the short-term value targets that V7 records carry, computed
 * for a game of V6 records (upstream computes them when it converts V6 data
 * to V7; chunk_unpacker does it with `st_targets: compute`).
 *
 * For a game of n positions in ply order, root_q[t] and root_d[t] being the
 * root's values from the side to move at t, and theta in [0, 1):
 *
 *   q_st[n-1] = root_q[n-1]            d_st[n-1] = root_d[n-1]
 *   q_st[t]   = (1 - theta) root_q[t] - theta q_st[t+1]
 *   d_st[t]   = (1 - theta) root_d[t] + theta d_st[t+1]
 *
 * a backward exponential average of the values still to come, each from
 * the side to move at t (the next position's q is the opponent's, hence
 * the minus). The position k plies ahead weighs (1 - theta) theta^k and
 * the last one the rest, so the weights sum to 1 and |q_st| <= 1. With
 * theta = 5/6 (the default) the mean horizon is 5 plies; theta = 0 gives
 * root_q itself. Computed in double, stored as float.
 *
 *   opp_played_idx[t]  = played_idx[t+1]   (0xFFFF for the last position)
 *   next_played_idx[t] = played_idx[t+2]   (0xFFFF for the last two)
 *
 * docs/pipelines.md works a 4-ply game through by hand.
 */
#ifndef LC_FORMAT_ST_TARGETS_H
#define LC_FORMAT_ST_TARGETS_H

#include <stdint.h>

#define LC_ST_THETA_DEFAULT (5.0 / 6.0)

/* Every output array has n entries; any output may be NULL. */
void lc_st_targets(const float *root_q, const float *root_d, const uint16_t *played_idx, uint32_t n,
                   double theta, float *q_st, float *d_st, uint16_t *opp_played_idx,
                   uint16_t *next_played_idx);

#endif
