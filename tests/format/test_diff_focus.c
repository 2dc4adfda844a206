/*
 * diff_focus: the legacy keep probability and the current loader's weight
 * on positions whose fields give known totals, worked out by hand, and the
 * cases always kept or given the default weight.
 */
#include "check.h"

#include "format/lc0/diff_focus.h"

#include <math.h>

#define EPS 1e-9

static void test_total(void)
{
    /* (6 * |0.5 - 0.3| + 0.5) / (6 + 3.5) = 1.7 / 9.5 */
    CHECK(fabs(lc_diff_total(0.5f, 0.3f, 0.5f, 6.0, 3.5) - 1.7 / 9.5) < 1e-7);
    CHECK(isnan(lc_diff_total(0.5f, NAN, 0.5f, 6.0, 3.5)));
    CHECK(isnan(lc_diff_total(0.5f, 0.3f, NAN, 6.0, 3.5)));
}

static void test_keep_probability(void)
{
    /* min 0.2, slope 2: 0.2 + 2 * 1.7 / 9.5 = 0.557894... */
    double p = lc_diff_keep_probability(0.5f, 0.3f, 0.5f, 0.2, 2.0, 6.0, 3.5);
    CHECK(fabs(p - (0.2 + 3.4 / 9.5)) < 1e-7);
    /* The defaults (min 1, slope 0) keep everything. */
    CHECK(lc_diff_keep_probability(0.5f, 0.3f, 0.5f, 1.0, 0.0, 6.0, 3.5) == 1.0);
    /* NaN orig_q, zero policy_kld: always kept. */
    CHECK(lc_diff_keep_probability(0.5f, NAN, 0.5f, 0.0, 0.0, 6.0, 3.5) == 1.0);
    CHECK(lc_diff_keep_probability(0.5f, 0.3f, 0.0f, 0.0, 0.0, 6.0, 3.5) == 1.0);
    /* Capped at 1, floored at 0. */
    CHECK(lc_diff_keep_probability(1.0f, -1.0f, 2.0f, 0.5, 10.0, 6.0, 3.5) == 1.0);
    CHECK(lc_diff_keep_probability(0.5f, 0.5f, 0.1f, 0.0, 0.0, 6.0, 3.5) == 0.0);
}

static void test_weight(void)
{
    lc_weight_params w = {.alpha = 2,
                          .beta = 0.5,
                          .gamma = 2,
                          .tau = 100,
                          .default_weight = 0.75,
                          .q_weight = 6,
                          .pol_scale = 3.5};
    /* (2 * 1.7 / 9.5 + 0.5)^2 */
    double t = 2 * 1.7 / 9.5 + 0.5;
    CHECK(fabs(lc_position_weight(0.5f, 0.3f, 0.5f, &w) - t * t) < 1e-6);
    CHECK(lc_position_weight(0.5f, NAN, 0.5f, &w) == 0.75);
    w.tau = 0.5; /* the cap */
    CHECK(lc_position_weight(0.5f, 0.3f, 0.5f, &w) == 0.5);
    w.beta = -10; /* a base at or below 0 weighs 0 */
    CHECK(lc_position_weight(0.5f, 0.3f, 0.5f, &w) == 0.0);
}

int main(void)
{
    test_total();
    test_keep_probability();
    test_weight();
    return check_finish();
}
