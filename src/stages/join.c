/*
 * join: merges several streams of one item type (two data directories'
 * sources, two pools' chunks, two samplers' frames) into one.
 *
 * Which input the next item comes from is a smooth weighted round robin:
 * every input gains its weight in credit, the one with the most credit is
 * read and pays the sum of the weights. Equal weights (the default) give a
 * plain round robin; weights 3 and 1 give a b-free run of at most three,
 * exactly three a's in every four items, and no randomness at all.
 *
 * mode: weighted (the default) holds the proportions exactly: it waits for
 * the input whose turn it is, so a slow input slows the join (and a quiet
 * one, such as a directory watched for new files, stops it). mode: available
 * never waits on one input while another has an item: it takes the turn's
 * input if that has one, else the next in turn that has, and sleeps only
 * when all are empty; proportions then hold while every input keeps up.
 * Weighted mode refuses two inputs fed by one stage's outputs with no pool
 * between (that stage's worker would block on the side the join is not
 * reading while the join waits on the other).
 * An input that ends (closed and drained) leaves the turn; the join ends
 * when all have.
 *
 * Paths and chunk sources carry an end-of-initial-scan marker: the join
 * passes one on, once every input that sends one has, counting all their
 * initial items, so a pool downstream sees one initial scan.
 */
#include "stages/stage.h"

#include "core/clock.h"
#include "stages/items.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { JOIN_WEIGHTED = 0, JOIN_AVAILABLE = 1 };

static const lc_setting_value mode_values[] = {
    {"weighted", JOIN_WEIGHTED},
    {"available", JOIN_AVAILABLE},
    {0},
};

typedef struct join_config {
    double *weights;
    unsigned n_weights;
    int mode;
} join_config;

static const lc_setting join_settings[] = {
    {.key = "weights",
     LC_SETTING_LIST_OF(join_config, weights, n_weights, LC_SETTING_REAL),
     .min_items = 1,
     .max_items = LC_STAGE_MAX_INPUTS,
     .range = LC_RANGE_MIN | LC_RANGE_MIN_OPEN | LC_RANGE_MAX,
     .min = 0,
     .max = 1e9,
     .off = "all 1",
     .meaning = "one per input, in the order of inputs: the share each gives",
     .example = "[3, 1]"},
    {.key = "mode",
     .type = LC_SETTING_ENUM,
     LC_SETTING_AT(join_config, mode),
     .def = "weighted",
     .values = mode_values,
     .meaning = "weighted: the weights exactly, waiting for the input whose turn it is; "
                "available: the next input that has an item",
     .example = "available"},
    {0},
};

typedef struct join {
    double weight[LC_STAGE_MAX_INPUTS];
    double credit[LC_STAGE_MAX_INPUTS];
    bool live[LC_STAGE_MAX_INPUTS];
    bool marker_seen[LC_STAGE_MAX_INPUTS];
    uint64_t initial; /* initial items counted by the markers seen */
    unsigned markers;
    atomic_uint_fast64_t n_from[LC_STAGE_MAX_INPUTS]; /* since the last flush */
    uint64_t total_from[LC_STAGE_MAX_INPUTS];         /* all time (flush thread) */
    atomic_uint_fast64_t n_waits;
} join;

static int join_check_inputs(const void *config, const int *upstream, unsigned n_inputs,
                             lc_problems *ps)
{
    const join_config *c = config;
    if (c->n_weights && c->n_weights != n_inputs)
        return lc_problem_add(ps, "weights",
                              "%u given for %u inputs (give one per input, in the order of "
                              "inputs)",
                              c->n_weights, n_inputs);
    /* Two outputs of one stage, read in strict turns: the stage's worker
     * blocks on the output the join is not reading while the join waits on
     * the other. */
    for (unsigned i = 0; upstream && c->mode == JOIN_WEIGHTED && i < n_inputs; i++)
        for (unsigned k = 0; k < i; k++)
            if (upstream[i] == upstream[k])
                return lc_problem_add(ps, "mode",
                                      "inputs %u and %u both come from one stage's outputs with "
                                      "no pool between; in mode weighted the join and that stage "
                                      "would wait on each other (use mode: available, or a pool "
                                      "on each side)",
                                      k + 1, i + 1);
    return 0;
}

static int join_init(lc_stage *s, lc_error *err)
{
    const join_config *c = s->config;
    join *j = s->priv;
    lc_problems ps = LC_PROBLEMS_INIT;
    lc_problems_under(&ps, -1, "join");
    join_check_inputs(c, NULL, s->n_inputs, &ps);
    int rc = lc_problems_to_error(&ps, err);
    lc_problems_fini(&ps);
    if (rc != 0)
        return rc;
    for (unsigned i = 0; i < s->n_inputs; i++) {
        j->weight[i] = c->n_weights ? c->weights[i] : 1.0;
        j->live[i] = true;
    }
    return 0;
}

/* Live inputs in turn order (smooth weighted round robin: the most
 * credit after this round's gain first) into order; returns how many. */
static unsigned turn_order(const join *j, unsigned n, unsigned *order)
{
    unsigned m = 0;
    for (unsigned i = 0; i < n; i++) {
        if (!j->live[i])
            continue;
        unsigned k = m++;
        for (; k > 0 &&
               j->credit[order[k - 1]] + j->weight[order[k - 1]] < j->credit[i] + j->weight[i];
             k--)
            order[k] = order[k - 1];
        order[k] = i;
    }
    return m;
}

/* Input i gave the item: every live input gains its weight, i pays the
 * sum. */
static void pay_turn(join *j, unsigned n, unsigned i)
{
    double total = 0;
    for (unsigned k = 0; k < n; k++)
        if (j->live[k]) {
            j->credit[k] += j->weight[k];
            total += j->weight[k];
        }
    j->credit[i] -= total;
}

/* Paths and sources may be the end-of-scan marker; other types never are. */
static bool is_marker(const lc_item_type *t, const void *item, uint64_t *seq)
{
    if (t == &lc_item_path && (((const lc_path_item *)item)->flags & LC_ITEM_SCAN_DONE)) {
        *seq = ((const lc_path_item *)item)->seq;
        return true;
    }
    if (t == &lc_item_source && (((const lc_source_item *)item)->flags & LC_ITEM_SCAN_DONE)) {
        *seq = ((const lc_source_item *)item)->seq;
        return true;
    }
    return false;
}

/* The join's own marker goes out, once, when some input sent one and
 * every live input has. Returns the put's result (0 when nothing to put). */
static int send_marker_when_ready(lc_stage *s, join *j, lc_load_meter *meter)
{
    bool any = false;
    for (unsigned k = 0; k < s->n_inputs; k++) {
        if (j->live[k] && !j->marker_seen[k])
            return 0;
        any |= j->marker_seen[k];
    }
    if (!any || j->markers++)
        return 0;
    const lc_item_type *t = lc_queue_item_type(s->output);
    if (t == &lc_item_path) {
        lc_path_item m = {.flags = LC_ITEM_SCAN_DONE, .seq = j->initial};
        return lc_stage_emit_marker(s, &m, meter);
    }
    lc_source_item m = {.flags = LC_ITEM_SCAN_DONE, .seq = j->initial};
    return lc_stage_emit_marker(s, &m, meter);
}

/* A marker from input i, counting seq initial items. */
static int take_marker(lc_stage *s, join *j, unsigned i, uint64_t seq, lc_load_meter *meter)
{
    j->marker_seen[i] = true;
    j->initial += seq;
    return send_marker_when_ready(s, j, meter);
}

/* Input i ended: it leaves the turn; a marker waiting only for it goes. */
static int input_ended(lc_stage *s, join *j, unsigned i, lc_load_meter *meter)
{
    j->live[i] = false;
    j->credit[i] = 0;
    return send_marker_when_ready(s, j, meter);
}

/* One item from the input whose turn it is (weighted), or from the first
 * in turn that has one (available): 0 and *from, or LC_ECLOSED when every
 * input ended or the stage stops. */
static int get_next(lc_stage *s, join *j, void *item, unsigned *from, lc_load_meter *meter)
{
    const join_config *c = s->config;
    unsigned order[LC_STAGE_MAX_INPUTS];
    for (;;) {
        unsigned n = turn_order(j, s->n_inputs, order);
        if (n == 0 || lc_run_state_stopping(&s->run))
            return LC_ECLOSED;
        unsigned tried = c->mode == JOIN_WEIGHTED ? 1 : n;
        int rc = -EAGAIN;
        unsigned r = 0;
        for (; r < tried; r++) {
            rc = c->mode == JOIN_WEIGHTED ? lc_queue_get(s->inputs[order[r]], item, meter)
                                          : lc_queue_try_get(s->inputs[order[r]], item);
            if (rc != -EAGAIN)
                break;
        }
        if (rc == -EAGAIN) { /* available, and every input empty: wait a little */
            atomic_fetch_add(&j->n_waits, 1);
            r = 0;
            rc = lc_queue_get_until(s->inputs[order[0]], item, meter, lc_now_ns() + 2000000u);
            if (rc == -ETIMEDOUT)
                continue;
        }
        if (rc == 0) {
            pay_turn(j, s->n_inputs, order[r]);
            *from = order[r];
            return 0;
        }
        /* Closed and drained: that input ended (or the stage stops). */
        if (lc_run_state_stopping(&s->run) || input_ended(s, j, order[r], meter) != 0)
            return LC_ECLOSED;
    }
}

static void join_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    join *j = s->priv;
    const lc_item_type *t = lc_queue_item_type(s->output);
    void *item = lc_xmalloc(t->size);
    unsigned from;
    while (lc_run_state_check(&s->run, meter) && get_next(s, j, item, &from, meter) == 0) {
        uint64_t seq;
        if (is_marker(t, item, &seq)) {
            if (take_marker(s, j, from, seq, meter) != 0)
                break;
            continue;
        }
        if (lc_stage_emit(s, item, meter) != 0) {
            if (t->dispose)
                t->dispose(item);
            break;
        }
        atomic_fetch_add(&j->n_from[from], 1);
    }
    free(item);
}

enum { J_BY_INPUT, J_WAITS };

static void join_flush(lc_stage *s, lc_stage_metrics *m)
{
    join *j = s->priv;
    /* "a 750 (75.0%) · b 250 (25.0%)", all time, inputs named by their
     * queues ("a" for "a.out"). */
    uint64_t total = 0;
    for (unsigned i = 0; i < s->n_inputs; i++)
        total += j->total_from[i] += atomic_exchange(&j->n_from[i], 0);
    char text[LC_METRIC_TEXT_MAX] = "";
    size_t len = 0;
    for (unsigned i = 0; i < s->n_inputs && len < sizeof text; i++) {
        const char *name = lc_queue_name(s->inputs[i]);
        size_t nl = strlen(name);
        if (nl > 4 && strcmp(name + nl - 4, ".out") == 0)
            nl -= 4;
        len += (size_t)snprintf(text + len, sizeof text - len, "%s%.*s %llu (%.1f%%)",
                                i ? " · " : "", (int)nl, name, (unsigned long long)j->total_from[i],
                                total ? 100.0 * (double)j->total_from[i] / (double)total : 0.0);
    }
    lc_metric_text(m, J_BY_INPUT, text);
}

static const lc_metric_info join_metrics[] = {
    [J_BY_INPUT] = {"items_by_input", "", LC_SHOW_TEXT, 0, "from", "from", .kind = LC_METRIC_TEXT},
    [J_WAITS] = {"waits", "waits", LC_SHOW_NONE, LC_METRIC_AT(join, n_waits)},
    {0},
};

const lc_stage_class lc_join_class = {
    .type_name = "join",
    .summary = "merges several streams of one item type, round robin or by weights",
    .input = &lc_item_any,
    .output = &lc_item_any,
    .max_inputs = LC_STAGE_MAX_INPUTS,
    .check_inputs = join_check_inputs,
    .priv_size = sizeof(join),
    .worker = join_worker,
    .workers = "workers",
    .settings = {join_settings, sizeof(join_config)},
    .config_check = NULL,
    .init = join_init,
    .flush_metrics = join_flush,
    .metrics = join_metrics,
};
