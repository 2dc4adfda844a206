/*
 * st_targets: see st_targets.h.
 */
#include "format/lc0/st_targets.h"

#include <stddef.h>

void lc_st_targets(const float *root_q, const float *root_d, const uint16_t *played_idx, uint32_t n,
                   double theta, float *q_st, float *d_st, uint16_t *opp_played_idx,
                   uint16_t *next_played_idx)
{
    double q = 0, d = 0;
    for (uint32_t i = n; i-- > 0;) {
        if (i + 1 == n) {
            q = root_q[i];
            d = root_d[i];
        } else {
            q = (1 - theta) * root_q[i] - theta * q;
            d = (1 - theta) * root_d[i] + theta * d;
        }
        if (q_st)
            q_st[i] = (float)q;
        if (d_st)
            d_st[i] = (float)d;
        if (opp_played_idx)
            opp_played_idx[i] = i + 1 < n ? played_idx[i + 1] : 0xFFFF;
        if (next_played_idx)
            next_played_idx[i] = i + 2 < n ? played_idx[i + 2] : 0xFFFF;
    }
}
