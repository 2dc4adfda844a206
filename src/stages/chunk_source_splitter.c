/*
 * chunk_source_splitter: splits the stream of chunk sources into named
 * outputs (a training and a test set, say), chunk by chunk.
 *
 * Each chunk goes to the output its identity picks: a 64-bit hash of the
 * source's sort key (the file's name) and the chunk's index in that file,
 * read as a number u in [0, 1), falls in one output's share of the
 * cumulative weights. Nothing else enters the hash (not the seed, the rank,
 * the order of arrival or the time), so a game lands on the same side in
 * every run, after every restart and on every rank; changing the weights
 * moves only the games whose u falls between the old and the new
 * boundaries. The hash is not the one that shards chunks between ranks
 * (lc_share_of), so the two choices are independent.
 *
 * A source becomes one view per output that got any of its chunks
 * (lc_chunk_source_view: the same file, a subset of its members), so each
 * output can feed a shuffling_chunk_pool of its own. The initial scan's end
 * marker goes to every output. One worker: sources are cheap to split, and
 * one thread keeps each output's order the input's.
 */
#include "stages/stage.h"

#include "core/rng.h"
#include "core/text.h"
#include "format/lc0/chunk_source.h"
#include "stages/items.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Mixed into the hash so that it differs from the rank shards' ("splt"). */
#define SPLIT_TAG 0x73706c74u

typedef struct split_output {
    char *name;
    double weight;
} split_output;

typedef struct splitter_config {
    split_output *outputs;
    unsigned n_outputs;
    double bound[LC_STAGE_MAX_OUTPUTS]; /* resolved: cumulative share, the last 1 */
} splitter_config;

static const lc_setting output_rows[] = {
    {.key = "name",
     .type = LC_SETTING_TEXT,
     LC_SETTING_AT(split_output, name),
     .required = true,
     .meaning = "the output's name: 1 to 20 letters, digits, '_' or '-' (not out)",
     .example = "train"},
    {.key = "weight",
     .type = LC_SETTING_REAL,
     LC_SETTING_AT(split_output, weight),
     .def = "1",
     .range = LC_RANGE_MIN | LC_RANGE_MIN_OPEN | LC_RANGE_MAX,
     .min = 0,
     .max = 1e9,
     .meaning = "its share: the weights over their sum",
     .example = "0.95"},
    {0},
};

static const lc_settings output_settings = {output_rows, sizeof(split_output)};

static const lc_setting splitter_settings[] = {
    {.key = "outputs",
     LC_SETTING_LIST_OF(splitter_config, outputs, n_outputs, LC_SETTING_BLOCK),
     .block = &output_settings,
     .required = true,
     .min_items = 2,
     .max_items = LC_STAGE_MAX_OUTPUTS,
     .meaning = "the named outputs, each {name, weight}",
     .example = "[{name: train, weight: 0.95}, {name: test, weight: 0.05}]"},
    {0},
};

static int splitter_config_check(void *p, lc_problems *ps)
{
    splitter_config *c = p;
    int rc = 0;
    if (c->n_outputs < 2 || c->n_outputs > LC_STAGE_MAX_OUTPUTS)
        return lc_problem_add(ps, "outputs",
                              "%u given (list 2 to %u, e.g. {name: train, weight: 0.95} and "
                              "{name: test, weight: 0.05})",
                              c->n_outputs, LC_STAGE_MAX_OUTPUTS);
    double total = 0;
    for (unsigned i = 0; i < c->n_outputs; i++) {
        split_output *o = &c->outputs[i];
        if (!o->name) /* missing: said by the reader */
            continue;
        char key[32];
        snprintf(key, sizeof key, "outputs[%u].name", i);
        if (!lc_valid_name(o->name, 20))
            rc = lc_problem_add(ps, key,
                                "'%s' is not a valid name (use 1 to 20 letters, digits, '_' or "
                                "'-')",
                                o->name);
        if (strcmp(o->name, "out") == 0)
            rc = lc_problem_add(ps, key,
                                "'out' names a stage's one unnamed output (choose another name)");
        for (unsigned j = 0; j < i; j++)
            if (c->outputs[j].name && strcmp(c->outputs[j].name, o->name) == 0)
                rc = lc_problem_add(ps, key, "'%s' is used twice (names must be unique)", o->name);
        total += o->weight;
    }
    double acc = 0;
    for (unsigned i = 0; i < c->n_outputs && rc == 0; i++) {
        acc += c->outputs[i].weight;
        c->bound[i] = i + 1 == c->n_outputs ? 1.0 : acc / total;
    }
    return rc;
}

static unsigned splitter_outputs(const void *config, const char **names)
{
    const splitter_config *c = config;
    for (unsigned i = 0; i < c->n_outputs; i++)
        names[i] = c->outputs[i].name;
    return c->n_outputs;
}

/* The output chunk `member` of the file with this sort key goes to. */
static unsigned pick_output(const splitter_config *c, uint64_t key_hash, uint64_t member)
{
    uint64_t h = lc_mix64(lc_mix64(key_hash ^ SPLIT_TAG) ^ lc_mix64(member));
    double u = lc_unit(h);
    unsigned k = 0;
    while (k + 1 < c->n_outputs && u >= c->bound[k])
        k++;
    return k;
}

typedef struct splitter {
    atomic_uint_fast64_t n_sources, n_chunks;
    atomic_uint_fast64_t chunks_to[LC_STAGE_MAX_OUTPUTS]; /* all time, for the text */
    uint32_t *members[LC_STAGE_MAX_OUTPUTS];              /* the worker's buffers */
    size_t cap;
    uint64_t initial[LC_STAGE_MAX_OUTPUTS]; /* views of the initial scan, per output */
} splitter;

/* Put a source's views on their outputs; false when an output closed. */
static bool split_source(lc_stage *s, splitter *sp, const lc_source_item *in, lc_load_meter *meter)
{
    const splitter_config *c = s->config;
    lc_chunk_source *src = in->source;
    size_t n = lc_chunk_source_count(src);
    if (n > sp->cap) {
        sp->cap = n;
        for (unsigned k = 0; k < c->n_outputs; k++)
            sp->members[k] = lc_xrealloc(sp->members[k], n * sizeof *sp->members[k]);
    }
    size_t count[LC_STAGE_MAX_OUTPUTS] = {0};
    const char *key = lc_chunk_source_key(src);
    uint64_t key_hash = lc_fnv1a(key, strlen(key));
    for (size_t i = 0; i < n; i++) {
        unsigned k = pick_output(c, key_hash, lc_chunk_source_member(src, i));
        sp->members[k][count[k]++] = (uint32_t)i;
    }
    atomic_fetch_add(&sp->n_sources, 1);
    atomic_fetch_add(&sp->n_chunks, n);
    bool ok = true;
    for (unsigned k = 0; k < c->n_outputs && ok; k++) {
        if (!count[k])
            continue;
        lc_source_item out = *in;
        out.source = count[k] == n ? lc_chunk_source_ref(src)
                                   : lc_chunk_source_view(src, sp->members[k], count[k]);
        if (lc_stage_emit_to(s, k, &out, meter) != 0) {
            lc_chunk_source_unref(out.source);
            ok = false;
            break;
        }
        atomic_fetch_add(&sp->chunks_to[k], count[k]);
        if (in->flags & LC_ITEM_INITIAL)
            sp->initial[k]++;
    }
    lc_chunk_source_unref(src);
    return ok;
}

static void splitter_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    splitter *sp = s->priv;
    lc_source_item in;
    while (lc_run_state_check(&s->run, meter) && lc_queue_get(s->input, &in, meter) == 0) {
        if (in.flags & LC_ITEM_SCAN_DONE) {
            for (unsigned k = 0; k < s->n_outputs; k++) {
                lc_source_item marker = {.flags = LC_ITEM_SCAN_DONE, .seq = sp->initial[k]};
                if (lc_queue_put(s->outputs[k], &marker, meter) != 0)
                    return;
            }
            continue;
        }
        if (!split_source(s, sp, &in, meter))
            return;
    }
}

static void splitter_fini(lc_stage *s)
{
    splitter *sp = s->priv;
    for (unsigned k = 0; k < LC_STAGE_MAX_OUTPUTS; k++)
        free(sp->members[k]);
}

enum { SP_SOURCES, SP_CHUNKS, SP_BY_OUTPUT };

static void splitter_flush(lc_stage *s, lc_stage_metrics *m)
{
    splitter *sp = s->priv;
    const splitter_config *c = s->config;
    /* "train 9,512 (95.1%) · test 488 (4.9%)": all time, as the queues
     * carry sources (views), not chunks. */
    uint64_t total = 0, n[LC_STAGE_MAX_OUTPUTS];
    for (unsigned k = 0; k < c->n_outputs; k++)
        total += n[k] = atomic_load(&sp->chunks_to[k]);
    char text[LC_METRIC_TEXT_MAX] = "";
    size_t len = 0;
    for (unsigned k = 0; k < c->n_outputs && len < sizeof text; k++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s%s %llu (%.1f%%)", k ? " · " : "",
                                c->outputs[k].name, (unsigned long long)n[k],
                                total ? 100.0 * (double)n[k] / (double)total : 0.0);
    lc_metric_text(m, SP_BY_OUTPUT, text);
}

static const lc_metric_info splitter_metrics[] = {
    [SP_SOURCES] = {"sources", "sources", LC_SHOW_TOTAL, LC_SHOW_DIM, "sources split", "",
                    LC_METRIC_AT(splitter, n_sources)},
    [SP_CHUNKS] = {"chunks", "chunks", LC_SHOW_TOTAL, 0, "chunks", "chunks",
                   LC_METRIC_AT(splitter, n_chunks)},
    [SP_BY_OUTPUT] = {"chunks_by_output", "", LC_SHOW_TEXT, 0, "to", "to", .kind = LC_METRIC_TEXT},
    {0},
};

const lc_stage_class lc_chunk_source_splitter_class = {
    .type_name = "chunk_source_splitter",
    .summary = "splits chunk sources into named outputs (train, test) by a stable hash of "
               "each chunk's file and index, with weights",
    .flags = LC_STAGE_MIXES,
    .input = &lc_item_source,
    .output = &lc_item_source,
    .outputs = splitter_outputs,
    .priv_size = sizeof(splitter),
    .worker = splitter_worker,
    .workers = "workers",
    .settings = {splitter_settings, sizeof(splitter_config)},
    .config_check = splitter_config_check,
    .fini = splitter_fini,
    .flush_metrics = splitter_flush,
    .metrics = splitter_metrics,
};
