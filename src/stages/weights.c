/*
 * weights: see weights.h.
 */
#include "stages/weights.h"

#include <math.h>

const cyaml_schema_field_t lc_weights_fields[] = {
    CYAML_FIELD_FLOAT_PTR("alpha", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_weights_config,
                          alpha_opt),
    CYAML_FIELD_FLOAT_PTR("beta", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_weights_config,
                          beta_opt),
    CYAML_FIELD_FLOAT_PTR("gamma", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_weights_config,
                          gamma_opt),
    CYAML_FIELD_FLOAT_PTR("tau", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_weights_config,
                          tau_opt),
    CYAML_FIELD_FLOAT_PTR("default_weight", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
                          lc_weights_config, default_opt),
    CYAML_FIELD_FLOAT_PTR("q_weight", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_weights_config,
                          q_weight_opt),
    CYAML_FIELD_FLOAT_PTR("pol_scale", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_weights_config,
                          pol_scale_opt),
    CYAML_FIELD_END,
};

const cyaml_schema_field_t lc_diff_focus_fields[] = {
    CYAML_FIELD_FLOAT_PTR("min", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_diff_focus_config,
                          min_opt),
    CYAML_FIELD_FLOAT_PTR("slope", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_diff_focus_config,
                          slope_opt),
    CYAML_FIELD_FLOAT_PTR("q_weight", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
                          lc_diff_focus_config, q_weight_opt),
    CYAML_FIELD_FLOAT_PTR("pol_scale", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
                          lc_diff_focus_config, pol_scale_opt),
    CYAML_FIELD_END,
};

/* *out = *opt or def; a problem unless lo <= value <= hi (finite). */
static int take(double *out, const double *opt, double def, double lo, double hi, const char *field,
                const char *key, lc_error *err)
{
    *out = opt ? *opt : def;
    if (isfinite(*out) && *out >= lo && *out <= hi)
        return 0;
    return lc_error_add(err, LC_ECONFIG, "%s.%s: %g is out of range (use %g to %g)", field, key,
                        *out, lo, hi);
}

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
    lc_weight_params *p = &c->p;
    int rc = 0;
    rc |= take(&p->alpha, c->alpha_opt, 1.0, 0, 1e9, field, "alpha", err);
    rc |= take(&p->beta, c->beta_opt, 0.0, -1e9, 1e9, field, "beta", err);
    rc |= take(&p->gamma, c->gamma_opt, 1.0, 0, 100, field, "gamma", err);
    rc |= take(&p->tau, c->tau_opt, 1e9, 1e-9, 1e9, field, "tau", err);
    rc |= take(&p->default_weight, c->default_opt, 1.0, 0, 1e9, field, "default_weight", err);
    rc |= take(&p->q_weight, c->q_weight_opt, 6.0, 0, 1e9, field, "q_weight", err);
    rc |= take(&p->pol_scale, c->pol_scale_opt, 3.5, 0, 1e9, field, "pol_scale", err);
    if (rc == 0 && !(p->alpha > 0) && !(p->beta > 0))
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
    int rc = 0;
    rc |= take(&c->min, c->min_opt, 1.0, 0, 1, field, "min", err);
    rc |= take(&c->slope, c->slope_opt, 0.0, 0, 1e9, field, "slope", err);
    rc |= take(&c->q_weight, c->q_weight_opt, 6.0, 0, 1e9, field, "q_weight", err);
    rc |= take(&c->pol_scale, c->pol_scale_opt, 3.5, 0, 1e9, field, "pol_scale", err);
    return finish(rc, c->q_weight, c->pol_scale, field, err);
}
