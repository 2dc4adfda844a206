/*
 * weights: see weights.h.
 */
#include "stages/weights.h"

#include <math.h>

#define WEIGHT_ROW(k, f, d, lo, hi, what, ex)                                                      \
    {                                                                                              \
        .key = (k), .type = LC_SETTING_REAL, LC_SETTING_AT(lc_weights_config, p.f), .def = (d),    \
        LC_SETTING_RANGE(lo, hi), .meaning = (what), .example = (ex)                               \
    }

static const lc_setting weights_rows[] = {
    WEIGHT_ROW("alpha", alpha, "1", 0, 1e9, "scale of the difference total", "1"),
    WEIGHT_ROW("beta", beta, "0", -1e9, 1e9, "added to alpha * total", "0.1"),
    WEIGHT_ROW("gamma", gamma, "1", 0, 100, "power of (alpha * total + beta)", "2"),
    WEIGHT_ROW("tau", tau, "1e9", 1e-9, 1e9, "the largest weight", "10"),
    WEIGHT_ROW("default_weight", default_weight, "1", 0, 1e9,
               "weight of a position whose orig_q is unknown", "1"),
    WEIGHT_ROW("q_weight", q_weight, "6", 0, 1e9, "weight of |best_q - orig_q| in the total", "6"),
    WEIGHT_ROW("pol_scale", pol_scale, "3.5", 0, 1e9, "weight of the policy divergence", "3.5"),
    {0},
};

const lc_settings lc_weights_settings = {weights_rows, sizeof(lc_weights_config)};

#define FOCUS_ROW(k, f, d, lo, hi, what, ex)                                                       \
    {                                                                                              \
        .key = (k), .type = LC_SETTING_REAL, LC_SETTING_AT(lc_diff_focus_config, f), .def = (d),   \
        LC_SETTING_RANGE(lo, hi), .meaning = (what), .example = (ex)                               \
    }

static const lc_setting diff_focus_rows[] = {
    FOCUS_ROW("min", min, "1", 0, 1, "the least keep probability", "0.5"),
    FOCUS_ROW("slope", slope, "0", 0, 1e9, "keep probability gained per unit of total", "2"),
    FOCUS_ROW("q_weight", q_weight, "6", 0, 1e9, "weight of |best_q - orig_q| in the total", "6"),
    FOCUS_ROW("pol_scale", pol_scale, "3.5", 0, 1e9, "weight of the policy divergence", "3.5"),
    {0},
};

const lc_settings lc_diff_focus_settings = {diff_focus_rows, sizeof(lc_diff_focus_config)};

/* Both blocks divide by q_weight + pol_scale. */
static int finish(int rc, double q_weight, double pol_scale, const char *field, lc_error *err)
{
    if (rc == 0 && q_weight + pol_scale <= 0)
        rc = lc_error_add(err, LC_ECONFIG,
                          "%s.q_weight: q_weight + pol_scale must be above 0 (they divide)", field);
    return rc ? LC_ECONFIG : 0;
}

int lc_weights_config_check(lc_weights_config *c, const char *field, lc_error *err)
{
    if (!c)
        return 0;
    const lc_weight_params *p = &c->p;
    int rc = 0;
    if (!(p->alpha > 0) && !(p->beta > 0))
        rc = lc_error_add(err, LC_ECONFIG,
                          "%s.alpha: with alpha %g and beta %g every known position weighs 0 "
                          "(give alpha or beta above 0)",
                          field, p->alpha, p->beta);
    return finish(rc, p->q_weight, p->pol_scale, field, err);
}

int lc_diff_focus_config_check(lc_diff_focus_config *c, const char *field, lc_error *err)
{
    if (!c)
        return 0;
    return finish(0, c->q_weight, c->pol_scale, field, err);
}
