/*
 * hanse: see hanse.h.
 */
#include "stages/pool/hanse.h"

#include "core/rng.h"

#include <math.h>
#include <string.h>

/* The stream of the acceptance coins, xored into the seed ("hans"). */
#define HANSE_TAG 0x68616e73u

static const lc_setting hanse_rows[] = {
    {.key = "threshold",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(lc_hanse_config, threshold),
     .required = true,
     .meaning = "Hanse sampling is on when above 0, off at 0 (upstream's "
                "hanse_sampling_threshold, whose value only switches it)",
     .example = "1"},
    LC_SETTING_ROW_RANGE(lc_hanse_config, gamma, "gamma", LC_SETTING_REAL, "1", 0, 100,
                         "a drawn chunk is taken with probability (weight / max_weight)^gamma",
                         "1"),
    {.key = "position_weights",
     .type = LC_SETTING_BLOCK,
     LC_SETTING_AT(lc_hanse_config, weights),
     .def = "{}",
     .block = &lc_weights_settings,
     .meaning = "how a position weighs; a chunk weighs the sum of its positions'",
     .example = "{q_weight: 6, pol_scale: 3.5}"},
    {0},
};

const lc_settings lc_hanse_settings = {hanse_rows, sizeof(lc_hanse_config)};

int lc_hanse_config_check(lc_hanse_config *c, lc_problems *ps)
{
    return lc_weights_config_check(c->weights, "hanse.position_weights", ps);
}

void lc_hanse_init(lc_hanse *h, const lc_hanse_config *cfg, uint64_t seed)
{
    h->cfg = cfg && cfg->threshold > 0 ? cfg : NULL;
    h->seed = seed;
    h->max_weight = 0;
    lc_stats_reset(&h->weights);
    atomic_init(&h->n_accepted, 0);
    atomic_init(&h->n_rejected, 0);
}

double lc_hanse_chunk_weight(const lc_hanse *h, const uint8_t *records, size_t record_size,
                             uint32_t n, uint32_t version)
{
    const lc_weights_config *wc = h->cfg->weights;
    double sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        float best_q, orig_q, kld;
        lc_record_focus_fields(records + (size_t)i * record_size, version, &best_q, &orig_q, &kld);
        sum += lc_position_weight(best_q, orig_q, kld, &wc->p);
    }
    return sum;
}

void lc_hanse_note(lc_hanse *h, double weight)
{
    if (weight > h->max_weight)
        h->max_weight = weight;
    lc_stats_add(&h->weights, weight);
}

void lc_hanse_new_pass(lc_hanse *h)
{
    if (h->pass_judged)
        h->max_weight = h->pass_max;
    h->pass_max = 0;
    h->pass_judged = 0;
}

bool lc_hanse_accept(lc_hanse *h, double weight, uint64_t global, uint32_t use, uint64_t pass)
{
    if (weight > h->pass_max)
        h->pass_max = weight;
    h->pass_judged++;
    double p = h->max_weight > 0 ? pow(weight / h->max_weight, h->cfg->gamma) : 1.0;
    uint64_t x = lc_mix64(lc_mix64(h->seed ^ HANSE_TAG) ^ lc_mix64(global) ^
                          lc_mix64((uint64_t)use << 32 ^ lc_mix64(pass)));
    bool yes = lc_unit(x) < p;
    atomic_fetch_add(yes ? &h->n_accepted : &h->n_rejected, 1);
    return yes;
}

void lc_hanse_flush(lc_hanse *h, lc_stage_metrics *m, int row)
{
    lc_metric_add(m, row + LC_HANSE_ACCEPTED, atomic_exchange(&h->n_accepted, 0));
    lc_metric_add(m, row + LC_HANSE_REJECTED, atomic_exchange(&h->n_rejected, 0));
    lc_metric_stat(m, row + LC_HANSE_WEIGHT, &h->weights);
    lc_stats_reset(&h->weights);
    /* In thousandths: gauges are whole numbers. */
    lc_metric_gauge(m, row + LC_HANSE_MAX_WEIGHT, (int64_t)llround(h->max_weight * 1000));
}
