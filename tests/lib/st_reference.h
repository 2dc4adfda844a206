/*
 * st_reference: upstream's rule for the short-term targets (its
 * chunk_rescorer's V6 to V7 conversion), written again for the tests
 * independently of format/lc0/st_targets.c, as the reference the float
 * mode must equal bit for bit: the q values are first turned into position
 * 0's point of view (negated at odd plies), the backward average then runs
 * over that array in float (theta as a float; theta's product, then
 * (1 - theta)'s, then their sum, each rounded to float: separate
 * statements, so nothing is fused), and the signs are put back. d is
 * clamped as C++'s std::max(d, 0.0f) does: (d < 0) ? 0 : d, so -0 and NaN
 * pass.
 */
#ifndef LC_TEST_ST_REFERENCE_H
#define LC_TEST_ST_REFERENCE_H

#include <stdint.h>
#include <stdlib.h>

static inline void st_reference(const float *rq, const float *rd, uint32_t n, double theta,
                                float *q, float *d)
{
    if (n == 0)
        return;
    float *view = malloc(n * sizeof *view);
    for (uint32_t t = 0; t < n; t++)
        view[t] = t % 2 ? -rq[t] : rq[t];
    const float th = (float)theta;
    const float rest = 1.0f - th;
    float avg_q = view[n - 1], avg_d = rd[n - 1];
    for (uint32_t t = n; t-- > 0;) {
        if (t + 1 < n) {
            float keep_q = th * avg_q, new_q = rest * view[t];
            float keep_d = th * avg_d, new_d = rest * rd[t];
            avg_q = keep_q + new_q;
            avg_d = keep_d + new_d;
        }
        q[t] = t % 2 ? -avg_q : avg_q;
        d[t] = avg_d < 0.0f ? 0.0f : avg_d;
    }
    free(view);
}

#endif
