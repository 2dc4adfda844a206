/*
 * describe: the stages of a configuration as the monitor's hello shows them
 * (proto/monitor.proto, StageDescription: their metrics and commands),
 * built here, where the stage classes are known, so that the monitor needs
 * nothing of them.
 */
#include "pipeline/describe.h"

#include "core/error.h"
#include "pipeline/commands.h"
#include "stages/registry.h"
#include "stages/stage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_or_null(const char *s)
{
    return s ? lc_xstrdup(s) : NULL;
}

/* "a,b,c" */
static char *join(char *const *parts, unsigned n)
{
    size_t len = 1;
    for (unsigned i = 0; i < n; i++)
        len += strlen(parts[i]) + 1;
    char *out = lc_xmalloc(len), *p = out;
    for (unsigned i = 0; i < n; i++)
        p += sprintf(p, "%s%s", i ? "," : "", parts[i]);
    *p = '\0';
    return out;
}

/* The metrics a class lists with a way to show them, in its order. */
static void describe_details(Lcmon__StageDescription *s, const lc_metric_info *table)
{
    size_t n = 0;
    for (const lc_metric_info *i = table; i && i->name; i++)
        n += i->show != LC_SHOW_NONE;
    s->details = n ? lc_xcalloc(n, sizeof *s->details) : NULL;
    for (const lc_metric_info *i = table; i && i->name; i++) {
        if (i->show == LC_SHOW_NONE)
            continue;
        Lcmon__MetricDisplay *d = lc_xmalloc(sizeof *d);
        lcmon__metric_display__init(d);
        d->metric = lc_xstrdup(i->name);
        d->has_as = true;
        d->as = (Lcmon__MetricDisplay__As)i->show; /* the same list: test_enums */
        d->label = dup_or_null(i->label);
        d->brief = dup_or_null(i->brief);
        d->has_dim = d->dim = (i->flags & LC_SHOW_DIM) != 0;
        d->has_warn = d->warn = (i->flags & LC_SHOW_WARN) != 0;
        d->has_nonzero_only = d->nonzero_only = (i->flags & LC_SHOW_NONZERO) != 0;
        d->has_eta = d->eta = (i->flags & LC_SHOW_ETA) != 0;
        d->of = dup_or_null(i->of);
        d->row = dup_or_null(i->row);
        s->details[s->n_details++] = d;
    }
}

Lcmon__CommandDescription *lc_command_describe(const lc_command_info *c)
{
    Lcmon__CommandDescription *d = lc_xmalloc(sizeof *d);
    lcmon__command_description__init(d);
    d->name = lc_xstrdup(c->name);
    d->args = lc_xstrdup(c->args ? c->args : "");
    d->help = dup_or_null(c->help);
    d->has_min_args = d->has_max_args = true;
    d->min_args = c->min_args;
    d->max_args = c->max_args;
    d->has_one_stage = d->one_stage = c->one_stage;
    return d;
}

/* The commands a stage of the class answers: every stage's, then its own. */
static void describe_commands(Lcmon__StageDescription *s, const lc_stage_class *cls)
{
    const lc_stage_command *tables[2] = {lc_every_stage_commands, cls->commands};
    size_t n = 0;
    for (int t = 0; t < 2; t++)
        for (const lc_stage_command *c = tables[t]; c && c->c.name; c++)
            n++;
    s->commands = lc_xcalloc(n, sizeof *s->commands);
    for (int t = 0; t < 2; t++)
        for (const lc_stage_command *c = tables[t]; c && c->c.name; c++)
            s->commands[s->n_commands++] = lc_command_describe(&c->c);
}

Lcmon__StageDescription **lc_config_describe(const lc_config *cfg, size_t *n)
{
    *n = cfg->n_stages;
    Lcmon__StageDescription **d = lc_xcalloc(cfg->n_stages ? cfg->n_stages : 1, sizeof *d);
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        const lc_stage_config *sc = &cfg->stages[i];
        Lcmon__StageDescription *s = lc_xmalloc(sizeof *s);
        lcmon__stage_description__init(s);
        s->name = lc_xstrdup(sc->name);
        s->stage_type = lc_xstrdup(sc->cls->type_name);
        if (sc->input)
            s->input = lc_xstrdup(sc->input);
        else if (sc->inputs)
            s->input = join(sc->inputs, sc->n_inputs_given);
        if (sc->n_out) {
            char *names[LC_STAGE_MAX_OUTPUTS];
            for (unsigned k = 0; k < sc->n_out; k++)
                names[k] = lc_stage_output_queue_name(sc->name, sc->out_names[k]);
            s->queue_name = join(names, sc->n_out);
            for (unsigned k = 0; k < sc->n_out; k++)
                free(names[k]);
            s->has_queue_capacity = true;
            s->queue_capacity = sc->capacity;
            s->item_type = lc_xstrdup(sc->out_type->name);
        }
        describe_details(s, sc->cls->metrics);
        describe_commands(s, sc->cls);
        d[i] = s;
    }
    return d;
}

void lc_config_describe_free(Lcmon__StageDescription **d, size_t n)
{
    for (size_t i = 0; d && i < n; i++)
        lcmon__stage_description__free_unpacked(d[i], NULL);
    free(d);
}

Lcmon__StageDescription **lc_registry_describe(size_t *n)
{
    *n = lc_stage_registry_count();
    Lcmon__StageDescription **d = lc_xcalloc(*n, sizeof *d);
    for (size_t i = 0; i < *n; i++) {
        d[i] = lc_xmalloc(sizeof *d[i]);
        lcmon__stage_description__init(d[i]);
        d[i]->name = lc_xstrdup(lc_stage_registry[i]->type_name);
        d[i]->stage_type = lc_xstrdup(lc_stage_registry[i]->type_name);
        describe_commands(d[i], lc_stage_registry[i]);
    }
    return d;
}
