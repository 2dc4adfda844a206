/*
 * config_validate: everything that can be checked in a parsed configuration
 * without starting anything (see config.h): names, one type block a stage,
 * each class's own checks, queues, the wiring of inputs and outputs, and
 * the global settings. Every problem is reported, one a line, each naming
 * the stage and the field and saying what to do; config.c places them on
 * their lines.
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

/* Appends one problem to err, one per line. */
static void problem(lc_error *err, int *count, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(lc_error *err, int *count, const char *fmt, ...)
{
    char line[LC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (err) {
        size_t len = strlen(err->msg);
        if (*count == 0)
            len = 0;
        snprintf(err->msg + len, sizeof err->msg - len, "%s%s", len ? "\n" : "", line);
        err->code = LC_ECONFIG;
    }
    (*count)++;
}

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
    for (size_t k = 0; cfg->keys && k < cfg->keys->n_problems; k++) {
        const char *path = cfg->keys->problems[k].path;
        if (!strncmp(path, prefix, (size_t)n) && (path[n] == '.' || path[n] == '\0'))
            return true;
    }
    return false;
}

/* Checks and resolves one stage's own settings (type block, name, queue). */
/* Returns true when the stage is whole enough for the wiring to be checked:
 * a valid unique name, one type, and settings its outputs can be read from. */
static bool validate_stage(lc_config *cfg, unsigned i, lc_error *err, int *count)
{
    bool outputs_known = true;
    lc_stage_config *s = &cfg->stages[i];
    char label[96];
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
    if (s->name && lc_valid_name(s->name, 40))
        snprintf(label, sizeof label, "stage '%s'", s->name);
    else
        snprintf(label, sizeof label, "stage #%u%s%s%s", i + 1, first ? " (" : "",
                 first ? first : "", first ? ")" : "");

    if (!s->name)
        problem(err, count, "%s: name: missing (give every stage a unique name)", label);
    else if (!lc_valid_name(s->name, 40))
        problem(err, count,
                "%s: name: '%s' is not a valid name (use 1 to 40 letters, digits, '_' or '-')",
                label, s->name);
    else {
        for (unsigned j = 0; j < i; j++) {
            if (cfg->stages[j].name && strcmp(cfg->stages[j].name, s->name) == 0) {
                problem(err, count,
                        "%s: name: duplicate, stage #%u has the same name (names must be "
                        "unique)",
                        label, j + 1);
                break;
            }
        }
    }
    if (nblocks == 0) {
        char types[512];
        type_list(types, sizeof types);
        problem(err, count, "%s: stage type: missing (add exactly one of: %s)", label, types);
        s->cls = NULL;
    } else if (nblocks > 1) {
        problem(err, count,
                "%s: stage type: %d given (%s, %s%s); give exactly one type block per stage", label,
                nblocks, first, second, nblocks > 2 ? ", ..." : "");
        s->cls = NULL;
    }
    /* A splitter's outputs come from its settings: not known when the
     * reader refused some of them, or its check does (below). */
    if (s->cls && s->cls->outputs && block_refused(cfg, i, s->cls->type_name))
        outputs_known = false;
    if (s->cls) {
        lc_error cerr;
        lc_error_clear(&cerr);
        if (s->cls->config_check && s->cls->config_check(s->block, &cerr) != 0) {
            outputs_known = !s->cls->outputs;
            /* One problem per line: a check reports all it finds. */
            for (char *line = cerr.msg, *next; line; line = next) {
                next = strchr(line, '\n');
                if (next)
                    *next++ = '\0';
                problem(err, count, "%s: %s.%s", label, s->cls->type_name, line);
            }
        }
    }

    /* The queue's settings were read and checked with their rows. */
    s->capacity = (size_t)s->output->capacity;
    s->overflow = (lc_overflow)s->output->overflow;
    if (s->output_given && s->cls && !s->cls->output)
        problem(err, count, "%s: output: %s has no output queue (remove the output block)", label,
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
                          lc_error *err, int *count)
{
    const lc_stage_config *s = &cfg->stages[i];
    const char *dot = strrchr(ref, '.');
    size_t len = dot ? (size_t)(dot - ref) : strlen(ref);
    int found = -1;
    for (unsigned j = 0; j < cfg->n_stages; j++)
        if (cfg->stages[j].name && strlen(cfg->stages[j].name) == len &&
            strncmp(cfg->stages[j].name, ref, len) == 0)
            found = (int)j;
    if (found < 0) {
        problem(err, count, "stage '%s': input: no stage is named '%.*s'", s->name, (int)len, ref);
        return false;
    }
    if (found == (int)i) {
        problem(err, count, "stage '%s': input: a stage cannot read its own output", s->name);
        return false;
    }
    if (found > (int)i) {
        problem(err, count,
                "stage '%s': input: stage '%.*s' comes later in the list; an input must "
                "name an earlier stage (reorder the stages)",
                s->name, (int)len, ref);
        return false;
    }
    const lc_stage_config *up = &cfg->stages[found];
    if (up->n_out == 0) {
        problem(err, count, "stage '%s': input: stage '%s' (%s) has no output", s->name, up->name,
                up->cls->type_name);
        return false;
    }
    char outs[256];
    output_list(up, outs, sizeof outs);
    unsigned k = 0;
    if (dot) {
        for (k = 0; k < up->n_out && strcmp(output_label(up, k), dot + 1) != 0; k++)
            ;
        if (k == up->n_out) {
            problem(err, count,
                    "stage '%s': input: stage '%s' has no output '%s' (read one of: %s)", s->name,
                    up->name, dot + 1, outs);
            return false;
        }
    } else if (up->n_out > 1) {
        problem(err, count,
                "stage '%s': input: stage '%s' has %u outputs; name the one to read (one of: %s)",
                s->name, up->name, up->n_out, outs);
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
static bool input_refs_ok(const lc_stage_config *s, char **refs, unsigned n_refs, lc_error *err,
                          int *count)
{
    const lc_stage_class *cls = s->cls;
    if (s->input && s->inputs) {
        problem(err, count, "stage '%s': inputs: give 'input' (one) or 'inputs' (a list), not both",
                s->name);
        return false;
    }
    if (!cls->input) {
        if (n_refs)
            problem(err, count, "stage '%s': input: %s reads no input (remove 'input: %s')",
                    s->name, cls->type_name, refs[0]);
        return false;
    }
    if (!n_refs) {
        problem(err, count,
                "stage '%s': input: missing (%s reads '%s' items; name the earlier stage "
                "that produces them)",
                s->name, cls->type_name, cls->input->name);
        return false;
    }
    unsigned max = cls->max_inputs ? cls->max_inputs : 1;
    if (n_refs > max) {
        problem(err, count,
                "stage '%s': inputs: %s reads %u input%s, %u given (a join stage merges "
                "several)",
                s->name, cls->type_name, max, max == 1 ? "" : "s at most", n_refs);
        return false;
    }
    return true;
}

/* Resolve stage i's references into s->in: each an output no other stage
 * reads, of the item type the stage takes. False (said) on the first that
 * is not. */
static bool connect_inputs(lc_config *cfg, unsigned i, char **refs, unsigned n_refs,
                           unsigned (*readers)[LC_STAGE_MAX_OUTPUTS], lc_error *err, int *count)
{
    lc_stage_config *s = &cfg->stages[i];
    const lc_stage_class *cls = s->cls;
    for (unsigned r = 0; r < n_refs; r++) {
        lc_stage_input in;
        if (!resolve_input(cfg, i, refs[r], &in, err, count))
            return false;
        const lc_stage_config *up = &cfg->stages[in.stage];
        if (readers[in.stage][in.output]++) {
            problem(err, count,
                    "stage '%s': input: %s '%s' already feeds another stage (each output "
                    "feeds one stage)",
                    s->name, strchr(refs[r], '.') ? "output" : "stage", refs[r]);
            return false;
        }
        const lc_item_type *want = cls->input == &lc_item_any
                                       ? (r ? cfg->stages[s->in[0].stage].out_type : NULL)
                                       : cls->input;
        if (want && up->out_type && strcmp(up->out_type->name, want->name) != 0) {
            if (cls->input == &lc_item_any)
                problem(err, count,
                        "stage '%s': inputs: %s carries '%s' items but %s carries '%s' "
                        "(every input of %s carries the same type)",
                        s->name, refs[r], up->out_type->name, refs[0], want->name, cls->type_name);
            else
                problem(err, count,
                        "stage '%s': input: stage '%s' (%s) produces '%s' items but %s "
                        "reads '%s' items",
                        s->name, up->name, up->cls->type_name, up->out_type->name, cls->type_name,
                        want->name);
            return false;
        }
        s->in[s->n_in++] = in;
    }
    return true;
}

/* Stage i's inputs: resolved, checked by its class, and its output's type
 * when it passes on what it reads. */
static void wire_stage(lc_config *cfg, unsigned i, unsigned (*readers)[LC_STAGE_MAX_OUTPUTS],
                       lc_error *err, int *count)
{
    lc_stage_config *s = &cfg->stages[i];
    const lc_stage_class *cls = s->cls;
    char *one[1] = {s->input};
    char **refs = s->inputs ? s->inputs : one;
    unsigned n_refs = s->inputs ? s->n_inputs_given : (s->input ? 1 : 0);
    if (!input_refs_ok(s, refs, n_refs, err, count))
        return;
    if (!connect_inputs(cfg, i, refs, n_refs, readers, err, count)) {
        s->n_in = 0;
        return;
    }
    s->input_index = s->in[0].stage;
    if (cls->check_inputs) {
        lc_error cerr;
        lc_error_clear(&cerr);
        int up[LC_STAGE_MAX_INPUTS];
        for (unsigned r = 0; r < s->n_in; r++)
            up[r] = fan_out_origin(cfg, s->in[r].stage);
        if (cls->check_inputs(s->block, up, s->n_in, &cerr) != 0)
            problem(err, count, "stage '%s': %s.%s", s->name, cls->type_name, cerr.msg);
    }
    if (cls->output == &lc_item_any)
        s->out_type = cfg->stages[s->in[0].stage].out_type;
}

static void validate_wiring(lc_config *cfg, lc_error *err, int *count)
{
    unsigned(*readers)[LC_STAGE_MAX_OUTPUTS] = lc_xcalloc(cfg->n_stages, sizeof *readers);
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        lc_stage_config *s = &cfg->stages[i];
        s->n_out = lc_stage_class_outputs(s->cls, s->block, s->out_names);
        s->out_type = s->cls->output;
        s->n_in = 0;
    }
    for (unsigned i = 0; i < cfg->n_stages; i++)
        wire_stage(cfg, i, readers, err, count);
    /* Every output is read, but the last stage's one. */
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        const lc_stage_config *s = &cfg->stages[i];
        bool last = i + 1 == cfg->n_stages && s->n_out == 1;
        for (unsigned k = 0; k < s->n_out && !last; k++)
            if (!readers[i][k])
                problem(err, count,
                        "stage '%s': output%s%s: no stage reads it, so it would fill up and "
                        "stall (only the last stage's one output may be left unread)",
                        s->name, s->n_out > 1 ? " " : "", s->n_out > 1 ? output_label(s, k) : "");
    }
    free(readers);
}

int lc_config_validate(lc_config *cfg, lc_error *err)
{
    int count = 0;
    if (err)
        lc_error_clear(err);
    if (cfg->n_stages == 0)
        problem(err, &count, "stages: empty (list at least one stage)");
    /* The wiring is checked whenever every stage is whole, also when some
     * settings are wrong: every problem at once. */
    bool whole = true;
    for (unsigned i = 0; i < cfg->n_stages; i++)
        whole = validate_stage(cfg, i, err, &count) && whole;
    for (unsigned i = 0; whole && i < cfg->n_stages; i++)
        for (unsigned j = 0; j < i; j++)
            if (strcmp(cfg->stages[i].name, cfg->stages[j].name) == 0)
                whole = false;
    if (whole)
        validate_wiring(cfg, err, &count);
    unsigned threads = 0;
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        const lc_stage_class *cls = cfg->stages[i].cls;
        if (cls && cls->worker && cfg->stages[i].block)
            threads += cls->threads ? cls->threads(cfg->stages[i].block) : 1;
    }
    if (threads > LC_MAX_THREADS)
        problem(err, &count,
                "stages: %u worker threads in all; a pipeline has at most %d (lower the "
                "stages' threads, or split the pipeline over several lcmon)",
                threads, LC_MAX_THREADS);

    /* The global settings were read and checked with their rows (without
     * seed: a fresh one at every start, lc_pipeline_new); what joins two: */
    if (cfg->rank >= 0 && cfg->world_size >= 1 && cfg->rank >= cfg->world_size)
        problem(err, &count, "rank: %lld must be below world_size %lld", (long long)cfg->rank,
                (long long)cfg->world_size);
    return count ? LC_ECONFIG : 0;
}
