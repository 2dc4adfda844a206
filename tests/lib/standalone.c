/*
 * standalone: see standalone.h.
 */
#include "standalone.h"

#include "format/lc0/frame.h"
#include "pipeline/commands.h"
#include "pipeline/config.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct standalone {
    lc_stage stage; /* first: the stage is the harness */
    lc_stage_env env;
} standalone;

int lc_standalone_new(const lc_stage_class *cls, const char *name, const char *yaml_block,
                      lc_queue *input, size_t out_capacity, const lc_stage_env *env, lc_stage **out,
                      lc_error *err)
{
    return lc_standalone_new_inputs(cls, name, yaml_block, &input, input ? 1 : 0, out_capacity, env,
                                    out, err);
}

int lc_standalone_new_inputs(const lc_stage_class *cls, const char *name, const char *yaml_block,
                             lc_queue *const *inputs, unsigned n_inputs, size_t out_capacity,
                             const lc_stage_env *env, lc_stage **out, lc_error *err)
{
    *out = NULL;
    void *block = NULL;
    int rc = lc_config_parse_block(cls, yaml_block, &block, err);
    if (rc != 0)
        return rc;
    standalone *sa = lc_xcalloc(1, sizeof *sa);
    if (env)
        sa->env = *env;
    else
        sa->env = (lc_stage_env){.seed = 0, .rank = 0, .world_size = 1, .rank_source = "default"};
    rc = lc_stage_init_inputs(&sa->stage, cls, name, block, &sa->env, inputs, n_inputs,
                              out_capacity ? out_capacity : 16, LC_OVERFLOW_BLOCK, err);
    if (rc != 0) {
        lc_config_free_block(cls, block);
        free(sa);
        return rc;
    }
    *out = &sa->stage;
    return 0;
}

int lc_standalone_start(lc_stage *s, lc_error *err)
{
    return lc_stage_start(s, err);
}

lc_stage *lc_standalone_running(const char *type, const char *name, const char *yaml_block,
                                lc_queue *input, size_t out_capacity, uint64_t seed)
{
    lc_stage_env env = {.seed = seed, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_standalone_new(lc_stage_class_find(type), name, yaml_block, input, out_capacity, &env,
                          &s, &err) != 0 ||
        lc_standalone_start(s, &err) != 0) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        exit(2);
    }
    return s;
}

void lc_standalone_stop(lc_stage *s)
{
    if (!s->started)
        return;
    lc_run_state_stop(&s->run);
    /* As in a pipeline stop: closing both queues wakes every wait on them. */
    for (unsigned i = 0; i < s->n_inputs; i++)
        lc_queue_close(s->inputs[i]);
    lc_stage_close_outputs(s);
    lc_stage_stop(s);
}

void lc_standalone_free(lc_stage *s)
{
    if (!s)
        return;
    lc_standalone_stop(s);
    const lc_stage_class *cls = s->cls;
    void *block = (void *)s->config;
    lc_stage_fini(s);
    lc_config_free_block(cls, block);
    free((standalone *)s);
}

void lc_standalone_flush(lc_stage *s, lc_stage_metrics *m)
{
    lc_stage_flush(s, m);
}

int lc_standalone_command(lc_stage *s, const char *name, unsigned argc, const char *const *argv,
                          lc_command_result *res)
{
    lc_command_request req = {.name = name, .argc = argc, .argv = argv};
    return lc_stages_command(s, 1, &req, res);
}

lc_config *lc_test_config(const char *yaml)
{
    lc_config *cfg = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_config_load_string(yaml, strlen(yaml), "test", &cfg, &err) != 0) {
        fprintf(stderr, "config: %s\n", err.msg);
        exit(2);
    }
    return cfg;
}

int lc_standalone_put_frame(lc_queue *q, const lc_frame *f)
{
    lc_frame *cell = lc_frame_cell_dup(f);
    int rc = lc_queue_put(q, &cell, NULL);
    if (rc != 0)
        lc_frame_cell_free(cell);
    return rc;
}

int lc_standalone_get_frame(lc_queue *q, lc_frame *out, uint64_t deadline_ns)
{
    lc_frame *cell;
    int rc = lc_queue_get_until(q, &cell, NULL, deadline_ns);
    if (rc != 0)
        return rc;
    lc_frame_copy(out, cell);
    lc_frame_cell_free(cell);
    return 0;
}
