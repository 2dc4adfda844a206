/*
 * fuzz_config: a YAML configuration written by hand, loaded and validated
 * the way `lcmon --check-config` loads it (the text parsed once into a
 * tree with lines and columns, read by the settings tables, every class's
 * own checks), with no stage built and nothing touched on disk.
 *
 * Invariants: a refused text says why and leaves nothing allocated; an
 * accepted one describes a pipeline the factory can build: at least one
 * stage, each with a name, exactly one class and its block, names unique,
 * inputs that name an earlier stage, queue capacities within bounds.
 */
#include "fuzz.h"

#include "pipeline/config.h"
#include "stages/stage.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lc_config *cfg = (lc_config *)1;
    lc_error err = {0};
    int rc = lc_config_load_string((const char *)data, size, "fuzz.yaml", &cfg, &err);
    if (rc < 0) {
        FUZZ_CHECK(err.msg[0] != '\0');
        return 0;
    }
    FUZZ_CHECK(cfg && cfg->n_stages >= 1 && cfg->stages);
    FUZZ_CHECK(cfg->metrics_interval_ms > 0);
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        const lc_stage_config *s = &cfg->stages[i];
        FUZZ_CHECK(s->name && s->name[0]);
        FUZZ_CHECK(s->cls && s->block);
        FUZZ_CHECK(lc_config_stage(cfg, s->name) == s);
        FUZZ_CHECK(s->capacity >= 1 && s->capacity <= LC_QUEUE_CAPACITY_MAX);
        /* Every input is an earlier stage's output, named as written. */
        FUZZ_CHECK(s->n_in == (s->inputs ? s->n_inputs_given : s->input ? 1u : 0u));
        FUZZ_CHECK(s->input_index == (s->n_in ? s->in[0].stage : -1));
        for (unsigned r = 0; r < s->n_in; r++) {
            const lc_stage_config *up = &cfg->stages[s->in[r].stage];
            const char *ref = s->inputs ? s->inputs[r] : s->input;
            size_t len = strlen(up->name);
            FUZZ_CHECK((unsigned)s->in[r].stage < i && s->in[r].output < up->n_out);
            FUZZ_CHECK(!strncmp(ref, up->name, len) && (ref[len] == '\0' || ref[len] == '.'));
        }
        FUZZ_CHECK(!s->n_out || s->out_type);
        unsigned blocks = 0;
        for (unsigned k = 0; k < LC_MAX_STAGE_TYPES; k++)
            blocks += s->blocks[k] != NULL;
        FUZZ_CHECK(blocks == 1);
    }
    lc_config_free(cfg);
    return 0;
}
