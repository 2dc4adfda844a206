/*
 * diff_focus: how much a position teaches, from how far the search moved
 * away from the network's first opinion, and the two ways upstream users
 * sample by it (docs/pipelines.md has the exact rules and defaults).
 *
 *   total = (q_weight * |best_q - orig_q| + policy_kld) / (q_weight + pol_scale)
 *
 * orig_q is the value before the search (NaN when unknown), policy_kld the
 * divergence between the search's visits and the prior policy.
 *
 * The legacy chunkparser keeps a record with probability
 *   min(1, diff_focus_min + diff_focus_slope * total),
 * and always keeps one whose orig_q is NaN or whose policy_kld is 0 (or
 * unknown). The current loader weighs a position
 *   min((alpha * total + beta)^gamma, tau),
 * or `default_weight` where orig_q (or policy_kld) is unknown, and
 * everywhere when the configuration gives neither q_weight nor pol_scale.
 */
#ifndef LC_FORMAT_LC0_DIFF_FOCUS_H
#define LC_FORMAT_LC0_DIFF_FOCUS_H

#include <stdbool.h>
#include <stdint.h>

/* A record's best_q, orig_q and policy_kld (version 6 and 7; NaN for
 * older ones, which have neither orig_q nor policy_kld). */
void lc_record_focus_fields(const uint8_t *rec, uint32_t version, float *best_q, float *orig_q,
                            float *policy_kld);

/* total, or NaN when orig_q or policy_kld is NaN (or any field is not
 * finite: a broken record weighs as an unknown one). */
double lc_diff_total(float best_q, float orig_q, float policy_kld, double q_weight,
                     double pol_scale);

/* The legacy keep probability, in [0, 1]; 1 for a record always kept. */
double lc_diff_keep_probability(float best_q, float orig_q, float policy_kld, double min,
                                double slope, double q_weight, double pol_scale);

typedef struct lc_weight_params {
    double alpha, beta, gamma, tau, default_weight, q_weight, pol_scale;
    bool uniform; /* every position weighs default_weight (upstream: neither
                   * diff_focus_q_weight nor diff_focus_pol_scale given) */
} lc_weight_params;

/* The current loader's weight, >= 0 (0 when alpha * total + beta <= 0;
 * default_weight when w->uniform). */
double lc_position_weight(float best_q, float orig_q, float policy_kld, const lc_weight_params *w);

#endif
