/*
 * weights: the settings blocks of diff-focus sampling, shared by the
 * stages that use them (chunk_unpacker's `diff_focus` and
 * `position_weights`, shuffling_chunk_pool's `hanse`), with their
 * defaults and range checks. The arithmetic is format/lc0/diff_focus.h's.
 */
#ifndef LC_STAGES_WEIGHTS_H
#define LC_STAGES_WEIGHTS_H

#include "core/error.h"
#include "core/problem.h"
#include "format/lc0/diff_focus.h"

#include "core/settings.h"

/* position_weights: {alpha, beta, gamma, tau, default_weight, q_weight,
 * pol_scale}, every one optional, upstream's defaults (alpha 1, beta 0,
 * gamma 1, tau 1, default_weight 1, q_weight 0, pol_scale 1). As upstream,
 * a block that gives neither q_weight nor pol_scale weighs every position
 * default_weight (p.uniform, set by lc_weights_config_check). */
typedef struct lc_weights_config {
    lc_weight_params p;
    bool q_weight_given, pol_scale_given;
} lc_weights_config;
extern const lc_settings lc_weights_settings;

/* diff_focus: {min, slope, q_weight, pol_scale} (the legacy chunkparser's
 * diff_focus_min, diff_focus_slope, diff_focus_q_weight,
 * diff_focus_pol_scale). */
typedef struct lc_diff_focus_config {
    double min, slope, q_weight, pol_scale;
} lc_diff_focus_config;
extern const lc_settings lc_diff_focus_settings;

/* What joins the settings of a block (the table checks each one): problems
 * are added to err as "<field>.<key>: ..." (field names the block, e.g.
 * "position_weights"). A NULL block is left alone. 0 or LC_ECONFIG. */
int lc_weights_config_check(lc_weights_config *c, const char *field, lc_problems *ps);
int lc_diff_focus_config_check(lc_diff_focus_config *c, const char *field, lc_problems *ps);

#endif
