/*
 * weights: see weights.h.
 */
#include "stages/weights.h"

#include <math.h>
#include <stdio.h>

static const lc_setting weights_rows[] = {
    LC_SETTING_ROW_RANGE(lc_weights_config, p.alpha, "alpha", LC_SETTING_REAL, "1", 0, 1e9,
                         "scale of the difference total", "1"),
    LC_SETTING_ROW_RANGE(lc_weights_config, p.beta, "beta", LC_SETTING_REAL, "0", -1e9, 1e9,
                         "added to alpha * total", "0.1"),
    LC_SETTING_ROW_RANGE(lc_weights_config, p.gamma, "gamma", LC_SETTING_REAL, "1", 0, 100,
                         "power of (alpha * total + beta)", "2"),
    LC_SETTING_ROW_RANGE(lc_weights_config, p.tau, "tau", LC_SETTING_REAL, "1", 1e-9, 1e9,
                         "the largest weight", "10"),
    LC_SETTING_ROW_RANGE(lc_weights_config, p.default_weight, "default_weight", LC_SETTING_REAL,
                         "1", 0, 1e9, "weight of a position whose orig_q is unknown", "1"),
    {.key = "q_weight",
     .type = LC_SETTING_REAL,
     LC_SETTING_AT(lc_weights_config, p.q_weight),
     LC_SETTING_GIVEN(lc_weights_config, q_weight_given),
     .def = "0",
     LC_SETTING_RANGE(0, 1e9),
     .meaning = "weight of |best_q - orig_q| in the total; without q_weight and pol_scale "
                "every position weighs default_weight",
     .example = "6"},
    {.key = "pol_scale",
     .type = LC_SETTING_REAL,
     LC_SETTING_AT(lc_weights_config, p.pol_scale),
     LC_SETTING_GIVEN(lc_weights_config, pol_scale_given),
     .def = "1",
     LC_SETTING_RANGE(0, 1e9),
     .meaning = "weight of the policy divergence in the total",
     .example = "3.5"},
    {0},
};

const lc_settings lc_weights_settings = {weights_rows, sizeof(lc_weights_config)};

static const lc_setting diff_focus_rows[] = {
    LC_SETTING_ROW_RANGE(lc_diff_focus_config, min, "min", LC_SETTING_REAL, "1", 0, 1,
                         "the least keep probability", "0.5"),
    LC_SETTING_ROW_RANGE(lc_diff_focus_config, slope, "slope", LC_SETTING_REAL, "0", 0, 1e9,
                         "keep probability gained per unit of total", "2"),
    LC_SETTING_ROW_RANGE(lc_diff_focus_config, q_weight, "q_weight", LC_SETTING_REAL, "6", 0, 1e9,
                         "weight of |best_q - orig_q| in the total", "6"),
    LC_SETTING_ROW_RANGE(lc_diff_focus_config, pol_scale, "pol_scale", LC_SETTING_REAL, "3.5", 0,
                         1e9, "weight of the policy divergence", "3.5"),
    {0},
};

const lc_settings lc_diff_focus_settings = {diff_focus_rows, sizeof(lc_diff_focus_config)};

/* Both blocks divide by q_weight + pol_scale. */
static int finish(int rc, double q_weight, double pol_scale, const char *field, lc_problems *ps)
{
    char key[96];
    snprintf(key, sizeof key, "%s.q_weight", field);
    if (rc == 0 && q_weight + pol_scale <= 0)
        rc = lc_problem_add(ps, key, "q_weight + pol_scale must be above 0 (they divide)");
    return rc ? LC_ECONFIG : 0;
}

int lc_weights_config_check(lc_weights_config *c, const char *field, lc_problems *ps)
{
    if (!c)
        return 0;
    lc_weight_params *p = &c->p;
    p->uniform = !c->q_weight_given && !c->pol_scale_given;
    int rc = 0;
    char key[96];
    snprintf(key, sizeof key, "%s.alpha", field);
    if (!p->uniform && !(p->alpha > 0) && !(p->beta > 0))
        rc = lc_problem_add(ps, key,
                            "with alpha %g and beta %g every known position weighs 0 (give alpha "
                            "or beta above 0)",
                            p->alpha, p->beta);
    return finish(rc, p->q_weight, p->pol_scale, field, ps);
}

int lc_diff_focus_config_check(lc_diff_focus_config *c, const char *field, lc_problems *ps)
{
    if (!c)
        return 0;
    return finish(0, c->q_weight, c->pol_scale, field, ps);
}
