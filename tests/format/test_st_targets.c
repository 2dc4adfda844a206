/*
 * st_targets: the recurrence of st_targets.h on a 4-ply game whose targets
 * were worked out by hand (docs/pipelines.md shows the working), for theta
 * 1/2, the default 5/6 and 0; the played-move neighbours; games of one and
 * two positions.
 */
#include "check.h"

#include "format/lc0/st_targets.h"

#include <math.h>

#define EPS 1e-6

static const float root_q[4] = {0.5f, -0.2f, 0.3f, 0.8f};
static const float root_d[4] = {0.2f, 0.4f, 0.1f, 0.0f};
static const uint16_t played[4] = {10, 20, 30, 40};

static void check_game(double theta, const double *want_q, const double *want_d)
{
    float q[4], d[4];
    lc_st_targets(root_q, root_d, played, 4, theta, q, d, NULL, NULL);
    for (int t = 0; t < 4; t++) {
        if (fabs(q[t] - want_q[t]) > EPS || fabs(d[t] - want_d[t]) > EPS)
            fprintf(stderr, "theta %g, ply %d: q_st %.7f d_st %.7f, want %.7f %.7f\n", theta, t,
                    q[t], d[t], want_q[t], want_d[t]);
        CHECK(fabs(q[t] - want_q[t]) <= EPS);
        CHECK(fabs(d[t] - want_d[t]) <= EPS);
    }
}

static void test_four_plies(void)
{
    /* theta 1/2, by hand from the last ply back:
     *   t=3: q 0.8                           d 0
     *   t=2: q 0.15 - 0.4    = -0.25         d 0.05 + 0      = 0.05
     *   t=1: q -0.1 + 0.125  =  0.025        d 0.2 + 0.025   = 0.225
     *   t=0: q 0.25 - 0.0125 =  0.2375       d 0.1 + 0.1125  = 0.2125 */
    const double q_half[4] = {0.2375, 0.025, -0.25, 0.8};
    const double d_half[4] = {0.2125, 0.225, 0.05, 0.0};
    check_game(0.5, q_half, d_half);
    /* theta 5/6 (the default): weights 1/6 on the ply, 5/6 on what follows.
     *   t=2: q 0.05 - 2/3          = -0.6166667    d 1/60             = 0.0166667
     *   t=1: q -1/30 + 0.5138889   =  0.4805556    d 1/15 + 1/72      = 0.0805556
     *   t=0: q 1/12 - 0.4004630    = -0.3171296    d 1/30 + 0.0671296 = 0.1004630 */
    const double q_def[4] = {-0.3171296, 0.4805556, -0.6166667, 0.8};
    const double d_def[4] = {0.1004630, 0.0805556, 0.0166667, 0.0};
    check_game(LC_ST_THETA_DEFAULT, q_def, d_def);
    /* theta 0: the root values themselves. */
    const double q_zero[4] = {0.5, -0.2, 0.3, 0.8};
    const double d_zero[4] = {0.2, 0.4, 0.1, 0.0};
    check_game(0.0, q_zero, d_zero);
}

static void test_neighbours(void)
{
    uint16_t opp[4], next[4];
    lc_st_targets(root_q, root_d, played, 4, 0.5, NULL, NULL, opp, next);
    const uint16_t want_opp[4] = {20, 30, 40, 0xFFFF}, want_next[4] = {30, 40, 0xFFFF, 0xFFFF};
    for (int t = 0; t < 4; t++) {
        CHECK_EQ_INT(opp[t], want_opp[t]);
        CHECK_EQ_INT(next[t], want_next[t]);
    }
}

static void test_short_games(void)
{
    float q[2], d[2];
    uint16_t opp[2], next[2];
    lc_st_targets(root_q + 3, root_d + 3, played + 3, 1, 0.5, q, d, opp, next);
    CHECK(q[0] == 0.8f && d[0] == 0.0f && opp[0] == 0xFFFF && next[0] == 0xFFFF);
    lc_st_targets(root_q + 2, root_d + 2, played + 2, 2, 0.5, q, d, opp, next);
    CHECK(fabs(q[0] - -0.25) <= EPS && fabs(d[0] - 0.05) <= EPS);
    CHECK(opp[0] == 40 && next[0] == 0xFFFF);
    lc_st_targets(root_q, root_d, played, 0, 0.5, q, d, opp, next); /* nothing to do */
}

int main(void)
{
    test_four_plies();
    test_neighbours();
    test_short_games();
    return check_finish();
}
