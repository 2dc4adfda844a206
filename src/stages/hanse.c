/*
 * hanse: see hanse.h.
 */
#include "stages/hanse.h"

#include "core/rng.h"

#include <math.h>
#include <string.h>

/* The stream of the acceptance coins, xored into the seed ("hans"). */
#define HANSE_TAG 0x68616e73u

const cyaml_schema_field_t lc_hanse_fields[] = {
    CYAML_FIELD_FLOAT_PTR("gamma", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_hanse_config,
                          gamma_opt),
    CYAML_FIELD_MAPPING_PTR("position_weights", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
                            lc_hanse_config, weights, lc_weights_fields),
    CYAML_FIELD_END,
};

int lc_hanse_config_check(lc_hanse_config *c, lc_error *err)
{
    int rc = 0;
    c->gamma = c->gamma_opt ? *c->gamma_opt : 1.0;
    if (!(c->gamma >= 0 && c->gamma <= 100))
        rc = lc_error_add(err, LC_ECONFIG, "hanse.gamma: %g is out of range (use 0 to 100)",
                          c->gamma);
    memset(&c->default_weights, 0, sizeof c->default_weights);
    lc_weights_config *w = c->weights ? c->weights : &c->default_weights;
    if (lc_weights_config_check(w, "hanse.position_weights", err) != 0)
        rc = LC_ECONFIG;
    return rc ? LC_ECONFIG : 0;
}

void lc_hanse_init(lc_hanse *h, const lc_hanse_config *cfg, uint64_t seed)
{
    h->cfg = cfg;
    h->seed = seed;
    h->max_weight = 0;
    lc_stats_reset(&h->weights);
    atomic_init(&h->n_accepted, 0);
    atomic_init(&h->n_rejected, 0);
}

double lc_hanse_chunk_weight(const lc_hanse *h, const uint8_t *records, size_t record_size,
                             uint32_t n, uint32_t version)
{
    const lc_weights_config *wc = h->cfg->weights ? h->cfg->weights : &h->cfg->default_weights;
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

void lc_hanse_flush(lc_hanse *h, lc_stage_metrics *m)
{
    lc_metrics_add_count(m, "hanse_accepted", atomic_exchange(&h->n_accepted, 0));
    lc_metrics_add_count(m, "hanse_rejected", atomic_exchange(&h->n_rejected, 0));
    lc_metrics_add_stat(m, "chunk_weight", &h->weights);
    lc_stats_reset(&h->weights);
    /* In thousandths: gauges are whole numbers. */
    lc_metrics_set_gauge(m, "max_chunk_weight_milli", (int64_t)llround(h->max_weight * 1000), 0,
                         false);
}
