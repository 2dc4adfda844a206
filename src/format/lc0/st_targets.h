/*
 * st_targets: the short-term value targets that V7 records carry, computed
 * for a game of V6 records (upstream computes them when its chunk_rescorer
 * converts V6 data to V7; lcmon's chunk_unpacker does it with
 * `st_targets: compute`, its chunk_rescorer with the same setting).
 *
 * For a game of n positions in ply order, root_q[t] and root_d[t] being the
 * root's values from the side to move at t, and theta in [0, 1), a
 * backward exponential average of the values still to come, each from the
 * side to move at t. Two ways of computing it:
 *
 * LC_ST_FLOAT (the default: upstream's arithmetic, bit for bit). In float:
 * th = (float)theta once, be = 1.0f - th. q is taken in a sign domain
 * fixed by the ply index, so that every value is from position 0's side:
 * s(t) = +1 at even t, -1 at odd t, c(t) = root_q[t] * s(t). Walking back
 * from the last position:
 *
 *   sq = c(n-1)                       sd = root_d[n-1]
 *   sq = th * sq + be * c(t)          sd = th * sd + be * root_d[t]
 *   q_st[t] = sq * s(t)               d_st[t] = sd < 0 ? 0 : sd
 *
 * each product rounded to float, then their sum (theta's product first).
 * The clamp is C++'s std::max(sd, 0.0f): a negative sd becomes +0, a -0
 * or NaN stays as it is. sd can only be negative when some root_d is (both
 * products of non-negative values are >= 0 and so is their rounded sum).
 * The sign domain follows the game's own ply index (position 0 even), so
 * a caller that starts part way must start at an even position.
 *
 * LC_ST_DOUBLE (lcmon's earlier sum, `st_math: double`): in double, in the
 * side to move's own domain, no clamp; each stored as float:
 *
 *   q_st[n-1] = root_q[n-1]            d_st[n-1] = root_d[n-1]
 *   q_st[t]   = (1 - theta) root_q[t] - theta q_st[t+1]
 *   d_st[t]   = (1 - theta) root_d[t] + theta d_st[t+1]
 *
 * Both are the same average: the position k plies ahead weighs
 * (1 - theta) theta^k and the last one the rest, so the weights sum to 1
 * and |q_st| <= 1. With theta = 5/6 (the default) the mean horizon is 5
 * plies; theta = 0 gives root_q itself. They differ in the last bits only
 * (docs/pipelines.md has the measured difference).
 *
 *   opp_played_idx[t]  = played_idx[t+1]   (0xFFFF for the last position)
 *   next_played_idx[t] = played_idx[t+2]   (0xFFFF for the last two)
 *
 * docs/pipelines.md works a 4-ply game through by hand.
 */
#ifndef LC_FORMAT_LC0_ST_TARGETS_H
#define LC_FORMAT_LC0_ST_TARGETS_H

#include <stdint.h>

#define LC_ST_THETA_DEFAULT (5.0 / 6.0)

/* How the averages are computed (see above). */
enum { LC_ST_FLOAT = 0, LC_ST_DOUBLE = 1 };

/* Every output array has n entries; any output may be NULL. math is
 * LC_ST_FLOAT or LC_ST_DOUBLE. */
void lc_st_targets(const float *root_q, const float *root_d, const uint16_t *played_idx, uint32_t n,
                   double theta, int math, float *q_st, float *d_st, uint16_t *opp_played_idx,
                   uint16_t *next_played_idx);

#endif
