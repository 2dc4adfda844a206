/*
 * commands: see commands.h.
 */
#include "pipeline/commands.h"

#include "core/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pause and resume: a stage on hold stops taking items between two (its
 * workers wait in lc_run_state_check); the queues before it fill up. */
static int stage_pause(lc_stage *s, const lc_command_request *req, lc_reply *reply, lc_error *err)
{
    (void)reply, (void)err;
    bool pause = strcmp(req->name, "pause") == 0;
    lc_run_state_pause(&s->run, pause);
    LC_INFO("stage %s %s", s->name, pause ? "paused" : "resumed");
    return 0;
}

const lc_stage_command lc_every_stage_commands[] = {
    {{"pause", "", 0, 0, "pause the stage (the queues before it fill up)", true}, stage_pause},
    {{"resume", "", 0, 0, "let a paused stage run again", true}, stage_pause},
    {{0}},
};

const lc_stage_command *lc_stage_command_find(const lc_stage_class *cls, const char *name)
{
    const lc_stage_command *c =
        lc_command_find(lc_every_stage_commands, sizeof *lc_every_stage_commands, name);
    return c ? c : lc_command_find(cls->commands, sizeof *cls->commands, name);
}

/* "a, b, c": the stages' names, or the commands of one stage. */
static void list_names(char *out, size_t size, const lc_stage *stages, size_t n,
                       const lc_stage_class *cls)
{
    size_t used = 0;
    out[0] = '\0';
    const lc_stage_command *tables[2] = {lc_every_stage_commands, cls ? cls->commands : NULL};
    for (size_t t = 0; cls && t < 2; t++)
        for (const lc_stage_command *c = tables[t]; c && c->c.name && used < size; c++)
            used += (size_t)snprintf(out + used, size - used, "%s%s", used ? ", " : "", c->c.name);
    for (size_t i = 0; !cls && i < n && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%s", i ? ", " : "", stages[i].name);
}

/* Run the row on one stage, its reply added to res; a refusal is added to
 * res->error, a line a stage. */
static void run_on(lc_stage *s, const lc_stage_command *c, const lc_command_request *req,
                   lc_command_result *res)
{
    lc_reply *reply = lc_command_result_add(res, s->name);
    lc_command_result check = {0};
    int rc = lc_command_check_args(&c->c, req->argc, &check);
    lc_error err;
    lc_error_clear(&err);
    if (rc == 0)
        rc = c->run(s, req, reply, &err);
    if (rc == 0) {
        lc_command_result_fini(&check);
        return;
    }
    reply->error = lc_xstrdup(check.error ? check.error : err.msg[0] ? err.msg : lc_strerror(rc));
    lc_command_result_fini(&check);
    if (res->error)
        lc_command_refuse(res, rc, "%s\nstage '%s': %s", res->error, s->name, reply->error);
    else
        lc_command_refuse(res, rc, "stage '%s': %s", s->name, reply->error);
}

int lc_stages_command(lc_stage *stages, size_t n, const lc_command_request *req,
                      lc_command_result *res)
{
    char names[512];
    lc_stage *one = NULL;
    for (size_t i = 0; req->stage && i < n && !one; i++)
        if (strcmp(stages[i].name, req->stage) == 0)
            one = &stages[i];
    if (req->stage && !one) {
        list_names(names, sizeof names, stages, n, NULL);
        return lc_command_refuse(res, -ENOENT, "no stage named '%s' (the stages are %s)",
                                 req->stage, names);
    }
    const lc_stage_command *every =
        lc_command_find(lc_every_stage_commands, sizeof *lc_every_stage_commands, req->name);
    if (every && every->c.one_stage && !one)
        return lc_command_refuse(res, -EINVAL, "%s needs a stage name (%s STAGE)", req->name,
                                 req->name);
    for (size_t i = 0; i < n; i++) {
        if (one && &stages[i] != one)
            continue;
        const lc_stage_command *c = lc_stage_command_find(stages[i].cls, req->name);
        if (c)
            run_on(&stages[i], c, req, res);
    }
    if (res->n == 0 && one) {
        list_names(names, sizeof names, NULL, 0, one->cls);
        return lc_command_refuse(res, -ENOTSUP,
                                 "stage '%s' (%s) has no command '%s' (its commands: %s)",
                                 one->name, one->cls->type_name, req->name, names);
    }
    if (res->n == 0)
        return lc_command_refuse(res, -ENOTSUP, "no stage has the command '%s'", req->name);
    return res->rc;
}

/* Whether one of s's inputs is among the n queues of below. */
static bool fed_from(const lc_stage *s, lc_queue *const *below, size_t n)
{
    for (unsigned i = 0; i < s->n_inputs; i++)
        for (size_t k = 0; k < n; k++)
            if (s->inputs[i] == below[k])
                return true;
    return false;
}

uint64_t lc_stages_drain_below(lc_stage *stages, size_t n, const lc_stage *from)
{
    /* The queues below: from's outputs, then those of each stage they feed,
     * until no stage adds any (a graph is no deeper than its stages). */
    size_t cap = LC_STAGE_MAX_OUTPUTS * (n + 1), nq = 0;
    lc_queue **below = lc_xcalloc(cap, sizeof *below);
    bool *taken = lc_xcalloc(n ? n : 1, sizeof *taken);
    for (unsigned k = 0; k < from->n_outputs; k++)
        below[nq++] = from->outputs[k];
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t i = 0; i < n; i++) {
            if (taken[i] || &stages[i] == from || !fed_from(&stages[i], below, nq))
                continue;
            taken[i] = grew = true;
            for (unsigned k = 0; k < stages[i].n_outputs; k++)
                below[nq++] = stages[i].outputs[k];
        }
    }
    uint64_t dropped = 0;
    for (size_t k = 0; k < nq; k++)
        dropped += lc_queue_discard(below[k]);
    free(below);
    free(taken);
    return dropped;
}
