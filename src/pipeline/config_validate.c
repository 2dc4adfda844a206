/*
 * config_validate: everything that can be checked in a parsed configuration
 * without starting anything (see config.h): names, one type block a stage,
 * each class's own checks, queues, the wiring of inputs and outputs, and
 * the global settings. Every problem is a record (core/problem.h): the
 * stage, the key path it is about and what to do; config.c places each on
 * its line by its key path.
 */
#include "pipeline/config.h"
#include "pipeline/config_read.h"

#include "core/text.h"
#include "stages/registry.h"
#include "stages/items.h"
#include "stages/stage.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void type_list(char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; lc_stage_registry[i]; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", i ? ", " : "", lc_stage_registry[i]->type_name);
    }
}

/* Whether the reader found a problem in stage i's `type` block. */
static bool block_refused(const lc_config *cfg, unsigned i, const char *type)
{
    char prefix[96];
    int n = snprintf(prefix, sizeof prefix, "stages[%u].%s", i, type);
    for (size_t k = 0; cfg->keys && k < cfg->keys->problems.n; k++) {
        const char *path = cfg->keys->problems.v[k].path;
        if (!strncmp(path, prefix, (size_t)n) && (path[n] == '.' || path[n] == '\0'))
            return true;
    }
    return false;
}

/* Whether the reader found an unknown key in stage i's own mapping: a
 * misspelt type, whose "did you mean" says why the type is missing. */
static bool unknown_key_in_stage(const lc_config *cfg, unsigned i)
{
    const lc_config_marks *m = cfg->keys;
    return m && i < m->n_stages && m->stage_unknown_key[i];
}

/* A check of the class on stage i's block (config_check, check_inputs),
 * its keys under the block: what it found, into ps. */
static void under_block(lc_problems *ps, unsigned i, const lc_stage_class *cls)
{
    lc_problems_under(ps, (int)i, "stages[%u].%s", i, cls->type_name);
}

/* Checks and resolves one stage's own settings (type block, name, queue). */
/* Returns true when the stage is whole enough for the wiring to be checked:
 * a valid unique name, one type, and settings its outputs can be read from. */
static bool validate_stage(lc_config *cfg, unsigned i, lc_problems *ps)
{
    bool outputs_known = true;
    lc_stage_config *s = &cfg->stages[i];
    s->input_index = -1;
    int nblocks = 0;
    const char *first = NULL, *second = NULL;
    for (size_t k = 0; lc_stage_registry[k]; k++) {
        if (s->blocks[k]) {
            nblocks++;
            if (!first) {
                first = lc_stage_registry[k]->type_name;
                s->cls = lc_stage_registry[k];
                s->block = s->blocks[k];
            } else if (!second) {
                second = lc_stage_registry[k]->type_name;
            }
        }
    }
    lc_problems_under(ps, (int)i, "stages[%u]", i);
    if (!s->name)
        lc_problem_add(ps, "name", "missing (give every stage a unique name)");
    else if (!lc_valid_name(s->name, 40))
        lc_problem_add(ps, "name",
                       "'%s' is not a valid name (use 1 to 40 letters, digits, '_' or '-')",
                       s->name);
    else {
        for (unsigned j = 0; j < i; j++) {
            if (cfg->stages[j].name && strcmp(cfg->stages[j].name, s->name) == 0) {
                lc_problem_add(ps, "name",
                               "duplicate, stage #%u has the same name (names must be unique)",
                               j + 1);
                break;
            }
        }
    }
    if (nblocks == 0) {
        char types[512];
        type_list(types, sizeof types);
        if (!unknown_key_in_stage(cfg, i))
            lc_problem_add(ps, "", "stage type: missing (add exactly one of: %s)", types);
        s->cls = NULL;
    } else if (nblocks > 1) {
        lc_problem_add(ps, "",
                       "stage type: %d given (%s, %s%s); give exactly one type block per stage",
                       nblocks, first, second, nblocks > 2 ? ", ..." : "");
        s->cls = NULL;
    }
    /* A splitter's outputs come from its settings: not known when the
     * reader refused some of them, or its check does (below). */
    if (s->cls && s->cls->outputs && block_refused(cfg, i, s->cls->type_name))
        outputs_known = false;
    if (s->cls && s->cls->config_check) {
        under_block(ps, i, s->cls);
        if (s->cls->config_check(s->block, ps) != 0)
            outputs_known = !s->cls->outputs;
        lc_problems_under(ps, (int)i, "stages[%u]", i);
    }

    /* The queue's settings were read and checked with their rows. */
    s->capacity = (size_t)s->output->capacity;
    s->overflow = (lc_overflow)s->output->overflow;
    if (s->output_given && s->cls && !s->cls->output)
        lc_problem_add(ps, "output", "%s has no output queue (remove the output block)",
                       s->cls->type_name);
    return s->cls && s->name && lc_valid_name(s->name, 40) && outputs_known;
}

/* The name a reference gives an output: "out" for the default one. */
static const char *output_label(const lc_stage_config *s, unsigned k)
{
    return s->out_names[k] ? s->out_names[k] : "out";
}

/* "a, b, c": the outputs of s, for messages. */
static void output_list(const lc_stage_config *s, char *buf, size_t len)
{
    buf[0] = '\0';
    for (unsigned k = 0; k < s->n_out; k++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s.%s", k ? ", " : "", s->name, output_label(s, k));
    }
}

/* Resolves one reference ("stage" or "stage.output") of stage i into *in:
 * false, with the problem told, when it names nothing that stage may read. */
static bool resolve_input(lc_config *cfg, unsigned i, const char *ref, lc_stage_input *in,
                          lc_problems *ps)
{
    const char *dot = strrchr(ref, '.');
    size_t len = dot ? (size_t)(dot - ref) : strlen(ref);
    int found = -1;
    for (unsigned j = 0; j < cfg->n_stages; j++)
        if (cfg->stages[j].name && strlen(cfg->stages[j].name) == len &&
            strncmp(cfg->stages[j].name, ref, len) == 0)
            found = (int)j;
    if (found < 0) {
        lc_problem_add(ps, "input", "no stage is named '%.*s'", (int)len, ref);
        return false;
    }
    if (found == (int)i) {
        lc_problem_add(ps, "input", "a stage cannot read its own output");
        return false;
    }
    if (found > (int)i) {
        lc_problem_add(ps, "input",
                       "stage '%.*s' comes later in the list; an input must name an earlier "
                       "stage (reorder the stages)",
                       (int)len, ref);
        return false;
    }
    const lc_stage_config *up = &cfg->stages[found];
    if (up->n_out == 0) {
        lc_problem_add(ps, "input", "stage '%s' (%s) has no output", up->name, up->cls->type_name);
        return false;
    }
    char outs[256];
    output_list(up, outs, sizeof outs);
    unsigned k = 0;
    if (dot) {
        for (k = 0; k < up->n_out && strcmp(output_label(up, k), dot + 1) != 0; k++)
            ;
        if (k == up->n_out) {
            lc_problem_add(ps, "input", "stage '%s' has no output '%s' (read one of: %s)", up->name,
                           dot + 1, outs);
            return false;
        }
    } else if (up->n_out > 1) {
        lc_problem_add(ps, "input", "stage '%s' has %u outputs; name the one to read (one of: %s)",
                       up->name, up->n_out, outs);
        return false;
    }
    in->stage = found;
    in->output = k;
    return true;
}

/* Where input stage `at` really comes from (see check_inputs in
 * stages/stage.h): the nearest stage at or above it with several outputs,
 * up through stages of one input that do not decouple; else -1 - at. */
static int fan_out_origin(const lc_config *cfg, int at)
{
    int first = at;
    for (;;) {
        const lc_stage_config *sc = &cfg->stages[at];
        if (sc->n_out > 1)
            return at;
        if (sc->cls->decouples || sc->n_in != 1)
            return -1 - first;
        at = sc->in[0].stage;
    }
}

/* Checks how the stages connect: inputs exist, come earlier, carry the
 * right items, and every output but the last stage's one is read by
 * exactly one stage. */
/* A stage's input references against its class: both forms given, an
 * input to a source, none, or too many. True when they can be resolved. */
static bool input_refs_ok(const lc_stage_config *s, char **refs, unsigned n_refs, lc_problems *ps)
{
    const lc_stage_class *cls = s->cls;
    if (s->input && s->inputs) {
        lc_problem_add(ps, "inputs", "give 'input' (one) or 'inputs' (a list), not both");
        return false;
    }
    if (!cls->input) {
        if (n_refs)
            lc_problem_add(ps, "input", "%s reads no input (remove 'input: %s')", cls->type_name,
                           refs[0]);
        return false;
    }
    if (!n_refs) {
        lc_problem_add(ps, "input",
                       "missing (%s reads '%s' items; name the earlier stage that produces them)",
                       cls->type_name, cls->input->name);
        return false;
    }
    unsigned max = cls->max_inputs ? cls->max_inputs : 1;
    if (n_refs > max) {
        lc_problem_add(ps, "inputs", "%s reads %u input%s, %u given (a join stage merges several)",
                       cls->type_name, max, max == 1 ? "" : "s at most", n_refs);
        return false;
    }
    return true;
}

/* Resolve stage i's references into s->in: each an output no other stage
 * reads, of the item type the stage takes. False (said) on the first that
 * is not. */
static bool connect_inputs(lc_config *cfg, unsigned i, char **refs, unsigned n_refs,
                           unsigned (*readers)[LC_STAGE_MAX_OUTPUTS], lc_problems *ps)
{
    lc_stage_config *s = &cfg->stages[i];
    const lc_stage_class *cls = s->cls;
    for (unsigned r = 0; r < n_refs; r++) {
        lc_stage_input in;
        if (!resolve_input(cfg, i, refs[r], &in, ps))
            return false;
        const lc_stage_config *up = &cfg->stages[in.stage];
        if (readers[in.stage][in.output]++) {
            lc_problem_add(ps, "input",
                           "%s '%s' already feeds another stage (each output feeds one stage)",
                           strchr(refs[r], '.') ? "output" : "stage", refs[r]);
            return false;
        }
        const lc_item_type *want = cls->input == &lc_item_any
                                       ? (r ? cfg->stages[s->in[0].stage].out_type : NULL)
                                       : cls->input;
        if (want && up->out_type && strcmp(up->out_type->name, want->name) != 0) {
            if (cls->input == &lc_item_any)
                lc_problem_add(ps, "inputs",
                               "%s carries '%s' items but %s carries '%s' (every input of %s "
                               "carries the same type)",
                               refs[r], up->out_type->name, refs[0], want->name, cls->type_name);
            else
                lc_problem_add(
                    ps, "input", "stage '%s' (%s) produces '%s' items but %s reads '%s' items",
                    up->name, up->cls->type_name, up->out_type->name, cls->type_name, want->name);
            return false;
        }
        s->in[s->n_in++] = in;
    }
    return true;
}

/* Stage i's inputs: resolved, checked by its class, and its output's type
 * when it passes on what it reads. */
static void wire_stage(lc_config *cfg, unsigned i, unsigned (*readers)[LC_STAGE_MAX_OUTPUTS],
                       lc_problems *ps)
{
    lc_stage_config *s = &cfg->stages[i];
    const lc_stage_class *cls = s->cls;
    char *one[1] = {s->input};
    char **refs = s->inputs ? s->inputs : one;
    unsigned n_refs = s->inputs ? s->n_inputs_given : (s->input ? 1 : 0);
    lc_problems_under(ps, (int)i, "stages[%u]", i);
    if (!input_refs_ok(s, refs, n_refs, ps))
        return;
    if (!connect_inputs(cfg, i, refs, n_refs, readers, ps)) {
        s->n_in = 0;
        return;
    }
    s->input_index = s->in[0].stage;
    if (cls->check_inputs) {
        int up[LC_STAGE_MAX_INPUTS];
        for (unsigned r = 0; r < s->n_in; r++)
            up[r] = fan_out_origin(cfg, s->in[r].stage);
        under_block(ps, i, cls);
        cls->check_inputs(s->block, up, s->n_in, ps);
    }
    if (cls->output == &lc_item_any)
        s->out_type = cfg->stages[s->in[0].stage].out_type;
}

static void validate_wiring(lc_config *cfg, lc_problems *ps)
{
    unsigned(*readers)[LC_STAGE_MAX_OUTPUTS] = lc_xcalloc(cfg->n_stages, sizeof *readers);
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        lc_stage_config *s = &cfg->stages[i];
        s->n_out = lc_stage_class_outputs(s->cls, s->block, s->out_names);
        s->out_type = s->cls->output;
        s->n_in = 0;
    }
    for (unsigned i = 0; i < cfg->n_stages; i++)
        wire_stage(cfg, i, readers, ps);
    /* Every output is read, but the last stage's one. A named output is
     * no key: said on the stage. */
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        const lc_stage_config *s = &cfg->stages[i];
        bool last = i + 1 == cfg->n_stages && s->n_out == 1;
        lc_problems_under(ps, (int)i, "stages[%u]", i);
        for (unsigned k = 0; k < s->n_out && !last; k++) {
            if (readers[i][k])
                continue;
            if (s->n_out > 1)
                lc_problem_add(ps, "",
                               "output %s: no stage reads it, so it would fill up and stall "
                               "(only the last stage's one output may be left unread)",
                               output_label(s, k));
            else
                lc_problem_add(ps, "output",
                               "no stage reads it, so it would fill up and stall (only the last "
                               "stage's one output may be left unread)");
        }
    }
    free(readers);
}

int lc_config_validate(lc_config *cfg, lc_problems *ps)
{
    size_t before = lc_problems_count(ps);
    lc_problems_under(ps, -1, "%s", "");
    if (cfg->n_stages == 0)
        lc_problem_add(ps, "stages", "empty (list at least one stage)");
    /* The wiring is checked whenever every stage is whole, also when some
     * settings are wrong: every problem at once. */
    bool whole = true;
    for (unsigned i = 0; i < cfg->n_stages; i++)
        whole = validate_stage(cfg, i, ps) && whole;
    for (unsigned i = 0; whole && i < cfg->n_stages; i++)
        for (unsigned j = 0; j < i; j++)
            if (strcmp(cfg->stages[i].name, cfg->stages[j].name) == 0)
                whole = false;
    if (whole)
        validate_wiring(cfg, ps);
    unsigned threads = 0;
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        const lc_stage_class *cls = cfg->stages[i].cls;
        if (cls && cls->worker && cfg->stages[i].block)
            threads += cls->threads ? cls->threads(cfg->stages[i].block) : 1;
    }
    lc_problems_under(ps, -1, "%s", "");
    if (threads > LC_MAX_THREADS)
        lc_problem_add(ps, "stages",
                       "%u worker threads in all; a pipeline has at most %d (lower the stages' "
                       "threads, or split the pipeline over several lcmon)",
                       threads, LC_MAX_THREADS);

    /* The global settings were read and checked with their rows (without
     * seed: a fresh one at every start, lc_pipeline_new); what joins two: */
    if (cfg->rank >= 0 && cfg->world_size >= 1 && cfg->rank >= cfg->world_size)
        lc_problem_add(ps, "rank", "%lld must be below world_size %lld", (long long)cfg->rank,
                       (long long)cfg->world_size);
    return lc_problems_count(ps) > before ? LC_ECONFIG : 0;
}
