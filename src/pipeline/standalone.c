#include "pipeline/standalone.h"

#include "pipeline/config.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct standalone {
    lc_stage stage;
    lc_stage_env env;
    bool started, stopped;
} standalone;

int lc_standalone_new(const lc_stage_class *cls, const char *name, const char *yaml_block,
                      lc_queue *input, size_t out_capacity, const lc_stage_env *env,
                      lc_stage **out, lc_error *err)
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
    lc_stage *s = &sa->stage;
    s->cls = cls;
    s->name = lc_xstrdup(name);
    s->config = block;
    s->env = &sa->env;
    s->input = input;
    lc_run_state_init(&s->run);
    if (cls->output) {
        s->output_name = lc_stage_queue_name(name);
        s->output = lc_queue_new(s->output_name, cls->output, out_capacity ? out_capacity : 16,
                                 LC_OVERFLOW_BLOCK);
    }
    s->priv = lc_xcalloc(1, cls->priv_size ? cls->priv_size : 1);
    rc = cls->init ? cls->init(s, err) : 0;
    if (rc != 0) {
        free(s->priv);
        s->priv = NULL;
        lc_standalone_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int lc_standalone_start(lc_stage *s, lc_error *err)
{
    standalone *sa = (standalone *)s;
    int rc = s->cls->start ? s->cls->start(s, err) : 0;
    sa->started = rc == 0;
    return rc;
}

void lc_standalone_stop(lc_stage *s)
{
    standalone *sa = (standalone *)s;
    if (!sa->started || sa->stopped)
        return;
    sa->stopped = true;
    lc_run_state_stop(&s->run);
    /* As in a pipeline stop: closing both queues wakes every wait on them. */
    if (s->input)
        lc_queue_close(s->input);
    if (s->output)
        lc_queue_close(s->output);
    if (s->cls->stop)
        s->cls->stop(s);
}

void lc_standalone_free(lc_stage *s)
{
    if (!s)
        return;
    lc_standalone_stop(s);
    if (s->priv && s->cls->fini)
        s->cls->fini(s);
    free(s->priv);
    lc_queue_free(s->output);
    free(s->output_name);
    free(s->name);
    lc_config_free_block(s->cls, (void *)s->config);
    lc_run_state_fini(&s->run);
    free((standalone *)s);
}

void lc_standalone_flush(lc_stage *s, lc_stage_metrics *m)
{
    lc_stage_metrics_clear(m);
    snprintf(m->name, sizeof m->name, "%s", s->name);
    snprintf(m->type, sizeof m->type, "%s", s->cls->type_name);
    m->items_out = atomic_exchange(&s->items_out, 0);
    if (s->output)
        lc_metrics_add_queue(m, s->output_name, s->output);
    if (s->cls->flush_metrics)
        s->cls->flush_metrics(s, m);
}

int lc_standalone_control(lc_stage *s, const Lcmon__StageControlRequest *req,
                          Lcmon__StageControlResponse *resp, lc_error *err)
{
    return s->cls->control ? s->cls->control(s, req, resp, err) : 0;
}
