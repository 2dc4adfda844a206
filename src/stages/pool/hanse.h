/*
 * hanse: the shuffling chunk pool's Hanse sampling, the RL mode's way of
 * spending the one position a chunk use gives on the games that teach
 * most.
 *
 * A chunk's weight is the sum of its positions' diff-focus weights
 * (format/lc0/diff_focus.h, with the block's `position_weights`), computed
 * once, when the pool first reads the chunk (with the chunk store: when it
 * packs it), and kept with the chunk for its life in the window. A drawn
 * chunk whose weight is known is accepted with probability
 * (weight / max_weight)^gamma; a rejected chunk is skipped for the rest of
 * the pass (its use count does not move). max_weight is the largest weight
 * judged in the previous pass (so it follows the window: an outlier that
 * left it stops weighing on the others), raised at once by any heavier
 * chunk weighed; when every weight is 0 everything is accepted. Every pass
 * thus accepts at least its heaviest chunks. The coin is a hash of (seed,
 * global index, use count, pass), so a chunk rejected in one pass gets a
 * fresh coin in the next. A chunk drawn before its weight is known (its
 * first draw) is read, weighed, then judged the same way, its use count
 * already counted; those first judgements depend on which chunks were
 * weighed before, so on thread timing; later ones do not.
 *
 * Thread safety: the counters are atomic; max_weight and the statistics
 * are only touched under the pool's mutex.
 */
#ifndef LC_STAGES_POOL_HANSE_H
#define LC_STAGES_POOL_HANSE_H

#include "core/metrics.h"
#include "core/stats.h"
#include "stages/weights.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* hanse: {threshold, gamma, position_weights: {...}} in the pool's block.
 * threshold must be given: Hanse sampling is on when it is above 0, as
 * upstream's hanse_sampling_threshold (upstream reads nothing else from
 * its value); a block that does not give it is refused rather than taken
 * silently one way or the other. */
typedef struct lc_hanse_config {
    uint64_t threshold;
    double gamma;
    lc_weights_config *weights; /* position_weights, with its defaults when absent */
} lc_hanse_config;
extern const lc_settings lc_hanse_settings;
/* What joins its settings (position_weights' rules), as "hanse.<key>". */
int lc_hanse_config_check(lc_hanse_config *c, lc_problems *ps);

typedef struct lc_hanse {
    const lc_hanse_config *cfg; /* NULL: Hanse sampling off (no block, or threshold 0) */
    uint64_t seed;
    double max_weight;    /* under the pool's mutex */
    double pass_max;      /* the largest weight judged in this pass (mutex) */
    uint64_t pass_judged; /* weights judged in this pass (mutex) */
    lc_stats weights;     /* chunk weights computed since the last flush (mutex) */
    atomic_uint_fast64_t n_accepted, n_rejected;
} lc_hanse;

/* cfg NULL or its threshold 0: off (h->cfg NULL). */
void lc_hanse_init(lc_hanse *h, const lc_hanse_config *cfg, uint64_t seed);

/* The weight of a chunk of n records of `version`, record_size apart:
 * the sum of its positions' weights. */
double lc_hanse_chunk_weight(const lc_hanse *h, const uint8_t *records, size_t record_size,
                             uint32_t n, uint32_t version);
/* A chunk was weighed (caller holds the pool's mutex). */
void lc_hanse_note(lc_hanse *h, double weight);
/* The pool begins a pass (caller holds the pool's mutex): max_weight
 * becomes the largest weight judged in the pass before. */
void lc_hanse_new_pass(lc_hanse *h);
/* Accept chunk `global` of this weight, drawn in pass `pass` at use count
 * `use`? Counts the answer. Caller holds the pool's mutex (max_weight). */
bool lc_hanse_accept(lc_hanse *h, double weight, uint64_t global, uint32_t use, uint64_t pass);
/* accepted, rejected, chunk_weight (statistics), max_chunk_weight
 * (caller holds the pool's mutex). */
/* Its metric rows, in this order from a row of the owner's table
 * (LC_HANSE_METRIC_ROWS lists them), written by lc_hanse_flush. */
enum { LC_HANSE_ACCEPTED, LC_HANSE_REJECTED, LC_HANSE_WEIGHT, LC_HANSE_MAX_WEIGHT, LC_HANSE_ROWS_ };
#define LC_HANSE_METRIC_ROWS                                                                       \
    {"hanse_accepted", "chunks", LC_SHOW_TOTAL, LC_SHOW_NONZERO, "Hanse accepted", "accepted"},    \
        {"hanse_rejected", "chunks",   LC_SHOW_PERCENT, LC_SHOW_NONZERO,                           \
         "rejected",       "rejected", "hanse_accepted"},                                          \
        {"chunk_weight", "weight", .kind = LC_METRIC_STAT},                                        \
        {"max_chunk_weight_milli", "thousandths", .kind = LC_METRIC_GAUGE},
void lc_hanse_flush(lc_hanse *h, lc_stage_metrics *m, int row);

#endif
