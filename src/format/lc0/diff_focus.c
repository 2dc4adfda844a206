/*
 * diff_focus: see diff_focus.h.
 */
#include "format/lc0/diff_focus.h"

#include "format/lc0/record.h"

#include <math.h>
#include <string.h>

void lc_record_focus_fields(const uint8_t *rec, uint32_t version, float *best_q, float *orig_q,
                            float *policy_kld)
{
    *best_q = *orig_q = *policy_kld = NAN;
    if (version < 6)
        return;
    LC_REC_GET(rec, best_q, *best_q);
    LC_REC_GET(rec, orig_q, *orig_q);
    LC_REC_GET(rec, policy_kld, *policy_kld);
}

double lc_diff_total(float best_q, float orig_q, float policy_kld, double q_weight,
                     double pol_scale)
{
    if (!isfinite(best_q) || !isfinite(orig_q) || !isfinite(policy_kld))
        return NAN; /* unknown, or not a number to weigh by */
    return (q_weight * fabs((double)best_q - (double)orig_q) + (double)policy_kld) /
           (q_weight + pol_scale);
}

double lc_diff_keep_probability(float best_q, float orig_q, float policy_kld, double min,
                                double slope, double q_weight, double pol_scale)
{
    double total = lc_diff_total(best_q, orig_q, policy_kld, q_weight, pol_scale);
    if (isnan(total) || policy_kld == 0.0f)
        return 1.0;
    double p = min + slope * total;
    return p >= 1 ? 1.0 : (p > 0 ? p : 0.0);
}

double lc_position_weight(float best_q, float orig_q, float policy_kld, const lc_weight_params *w)
{
    if (w->uniform)
        return w->default_weight;
    double total = lc_diff_total(best_q, orig_q, policy_kld, w->q_weight, w->pol_scale);
    if (isnan(total))
        return w->default_weight;
    double base = w->alpha * total + w->beta;
    if (!(base > 0))
        return 0.0;
    double x = pow(base, w->gamma);
    return x < w->tau ? x : w->tau;
}
