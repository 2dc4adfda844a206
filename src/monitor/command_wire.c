/*
 * command_wire: see command_wire.h.
 */
#include "monitor/command_wire.h"

#include <errno.h>

static const char *stage_or_null(const char *stage)
{
    return stage && stage[0] ? stage : NULL;
}

/* The command a request names; NULL when it names none (a request of the
 * older forms, which protocol 3 dropped, names none). */
static const char *request_command(const Lcmon__ControlRequest *in, lc_command_request *out)
{
    *out = (lc_command_request){0};
    if (!in->command)
        return NULL;
    out->stage = stage_or_null(in->stage);
    out->argc = (unsigned)in->n_args;
    out->argv = (const char *const *)in->args;
    return in->command;
}

static char *dup_or_null(const char *s)
{
    return s ? lc_xstrdup(s) : NULL;
}

static Lcmon__StageControlResponse *stage_response(const lc_reply *r)
{
    Lcmon__StageControlResponse *s = lc_xmalloc(sizeof *s);
    lcmon__stage_control_response__init(s);
    s->stage = dup_or_null(r->stage);
    s->has_ok = true;
    s->ok = r->error == NULL;
    s->error = dup_or_null(r->error);
    s->fields = lc_xcalloc(r->n_fields ? r->n_fields : 1, sizeof *s->fields);
    for (size_t i = 0; i < r->n_fields; i++) {
        Lcmon__ReplyField *f = lc_xmalloc(sizeof *f);
        lcmon__reply_field__init(f);
        f->name = lc_xstrdup(r->fields[i].name);
        f->value = lc_xstrdup(r->fields[i].value);
        s->fields[s->n_fields++] = f;
    }
    return s;
}

static Lcmon__ControlResponse *response(const lc_command_result *res)
{
    Lcmon__ControlResponse *resp = lc_xmalloc(sizeof *resp);
    lcmon__control_response__init(resp);
    resp->has_ok = true;
    resp->ok = res->rc == 0;
    resp->error = dup_or_null(res->error);
    resp->message = dup_or_null(res->message);
    resp->stage_responses = lc_xcalloc(res->n ? res->n : 1, sizeof *resp->stage_responses);
    for (size_t i = 0; i < res->n; i++)
        resp->stage_responses[resp->n_stage_responses++] = stage_response(&res->replies[i]);
    return resp;
}

Lcmon__ControlResponse *lc_command_wire_serve(lc_monitor *m, const Lcmon__ControlRequest *req,
                                              const char **name)
{
    lc_command_request c;
    lc_command_result res = {0};
    *name = request_command(req, &c);
    c.name = *name;
    if (!c.name)
        lc_command_refuse(&res, -EINVAL,
                          "empty request: it names no command (ControlRequest.command; the "
                          "older request forms are gone since protocol 3)");
    else if (c.argc > LC_COMMAND_MAX_ARGS)
        lc_command_refuse(&res, -E2BIG, "%s: %u arguments, at most %d", c.name, c.argc,
                          LC_COMMAND_MAX_ARGS);
    else
        lc_monitor_command(m, &c, &res);
    Lcmon__ControlResponse *resp = response(&res);
    lc_command_result_fini(&res);
    return resp;
}

void lc_command_wire_request(const lc_command_request *req, Lcmon__ControlRequest *out)
{
    lcmon__control_request__init(out);
    out->command = (char *)req->name;
    out->stage = (char *)req->stage;
    out->n_args = req->argc;
    out->args = lc_xcalloc(req->argc ? req->argc : 1, sizeof *out->args);
    for (unsigned i = 0; i < req->argc; i++)
        out->args[i] = (char *)req->argv[i];
}

int lc_command_wire_result(const Lcmon__ControlResponse *resp, lc_command_result *res)
{
    for (size_t i = 0; i < resp->n_stage_responses; i++) {
        const Lcmon__StageControlResponse *s = resp->stage_responses[i];
        lc_reply *r = lc_command_result_add(res, s->stage);
        r->error = s->has_ok && !s->ok ? lc_xstrdup(s->error ? s->error : "refused") : NULL;
        for (size_t k = 0; k < s->n_fields && k < LC_REPLY_MAX_FIELDS; k++)
            lc_reply_add(r, s->fields[k]->name ? s->fields[k]->name : "", "%s",
                         s->fields[k]->value ? s->fields[k]->value : "");
    }
    res->message = dup_or_null(resp->message);
    if (resp->has_ok && !resp->ok)
        lc_command_refuse(res, -EINVAL, "%s", resp->error ? resp->error : "refused by the loader");
    return res->rc;
}
