/*
 * st_targets: see st_targets.h.
 */
#include "format/lc0/st_targets.h"

#include <stddef.h>

/*
 * Upstream's float arithmetic. Each product and the sum is its own
 * statement, assigned to a float: C11 (6.5p8) lets a compiler contract a*b+c
 * into one fused multiply-add only within one expression, and an assignment
 * (like a cast) must drop any excess precision (5.1.2.3p12, 6.3.1.8p2). The
 * build is -std=c11, which for GCC also means -ffp-contract=off and
 * -fexcess-precision=standard; clang contracts only within an expression.
 * So the result does not depend on -march (an FMA) or on x87 registers
 * (where each product of two floats is exact in extended precision, and a
 * sum rounded to 64 bits and then to 24 is rounded correctly, as 64 >=
 * 2 * 24 + 2).
 */
static void st_float(const float *root_q, const float *root_d, uint32_t n, double theta,
                     float *q_st, float *d_st)
{
    const float th = (float)theta;
    const float be = 1.0f - th;
    float sq = 0.0f, sd = 0.0f;
    for (uint32_t i = n; i-- > 0;) {
        const float sign = (i % 2 != 0) ? -1.0f : 1.0f;
        const float cur = root_q[i] * sign;
        if (i + 1 == n) {
            sq = cur;
            sd = root_d[i];
        } else {
            float a = th * sq;
            float b = be * cur;
            sq = a + b;
            float c = th * sd;
            float e = be * root_d[i];
            sd = c + e;
        }
        if (q_st)
            q_st[i] = sq * sign;
        if (d_st)
            d_st[i] = sd < 0.0f ? 0.0f : sd; /* std::max(sd, 0.0f) */
    }
}

/* lcmon's earlier sum, in double. */
static void st_double(const float *root_q, const float *root_d, uint32_t n, double theta,
                      float *q_st, float *d_st)
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
    }
}

void lc_st_targets(const float *root_q, const float *root_d, const uint16_t *played_idx, uint32_t n,
                   double theta, int math, float *q_st, float *d_st, uint16_t *opp_played_idx,
                   uint16_t *next_played_idx)
{
    if (q_st || d_st) {
        if (math == LC_ST_DOUBLE)
            st_double(root_q, root_d, n, theta, q_st, d_st);
        else
            st_float(root_q, root_d, n, theta, q_st, d_st);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (opp_played_idx)
            opp_played_idx[i] = i + 1 < n ? played_idx[i + 1] : 0xFFFF;
        if (next_played_idx)
            next_played_idx[i] = i + 2 < n ? played_idx[i + 2] : 0xFFFF;
    }
}
