/*
 * describe: the stages of a configuration as the monitor's hello shows them
 * (proto/monitor.proto, StageDescription), built here, where the stage
 * classes are known, so that the monitor needs nothing of them.
 */
#include "pipeline/describe.h"

#include "core/error.h"
#include "stages/stage.h"

#include <stdlib.h>

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
        if (sc->cls->output) {
            s->queue_name = lc_stage_queue_name(sc->name);
            s->has_queue_capacity = true;
            s->queue_capacity = sc->capacity;
            s->item_type = lc_xstrdup(sc->cls->output->name);
        }
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
