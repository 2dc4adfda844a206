/*
 * command: see command.h.
 */
#include "core/command.h"

#include "core/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *vformat(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *s = lc_xmalloc((size_t)(n > 0 ? n : 0) + 1);
    vsnprintf(s, (size_t)(n > 0 ? n : 0) + 1, fmt, again);
    va_end(again);
    return s;
}

void lc_reply_add(lc_reply *r, const char *name, const char *fmt, ...)
{
    if (r->n_fields == LC_REPLY_MAX_FIELDS)
        lc_fatal("reply of %s: more than %d fields", r->stage ? r->stage : "the loader",
                 LC_REPLY_MAX_FIELDS);
    va_list ap;
    va_start(ap, fmt);
    lc_reply_field *f = &r->fields[r->n_fields++];
    f->name = lc_xstrdup(name);
    f->value = vformat(fmt, ap);
    va_end(ap);
}

const char *lc_reply_get(const lc_reply *r, const char *name)
{
    for (size_t i = 0; i < r->n_fields; i++)
        if (strcmp(r->fields[i].name, name) == 0)
            return r->fields[i].value;
    return NULL;
}

void lc_reply_fini(lc_reply *r)
{
    for (size_t i = 0; i < r->n_fields; i++) {
        free(r->fields[i].name);
        free(r->fields[i].value);
    }
    free(r->stage);
    free(r->error);
    memset(r, 0, sizeof *r);
}

lc_reply *lc_command_result_add(lc_command_result *res, const char *stage)
{
    res->replies = lc_xrealloc(res->replies, (res->n + 1) * sizeof *res->replies);
    lc_reply *r = &res->replies[res->n++];
    memset(r, 0, sizeof *r);
    r->stage = stage ? lc_xstrdup(stage) : NULL;
    return r;
}

int lc_command_refuse(lc_command_result *res, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(res->error);
    res->error = vformat(fmt, ap);
    va_end(ap);
    res->rc = rc < 0 ? rc : -EINVAL;
    return res->rc;
}

void lc_command_result_fini(lc_command_result *res)
{
    for (size_t i = 0; i < res->n; i++)
        lc_reply_fini(&res->replies[i]);
    free(res->replies);
    free(res->error);
    free(res->message);
    memset(res, 0, sizeof *res);
}

const void *lc_command_find(const void *table, size_t size, const char *name)
{
    for (const char *row = table; row && *(const char *const *)row; row += size)
        if (name && strcmp(*(const char *const *)row, name) == 0)
            return row;
    return NULL;
}

int lc_command_check_args(const lc_command_info *c, unsigned argc, lc_command_result *res)
{
    if (argc >= c->min_args && argc <= c->max_args)
        return 0;
    if (c->max_args == 0)
        return lc_command_refuse(res, -EINVAL, "%s takes no arguments (%u given)", c->name, argc);
    return lc_command_refuse(res, -EINVAL, "%s takes %s (%u argument%s given)", c->name, c->args,
                             argc, argc == 1 ? "" : "s");
}
