/*
 * requests: running a command by name, and the shorthands over it, once
 * for every monitor.
 */
#include "monitor/monitor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lc_monitor_run(lc_monitor *m, const char *name, const char *stage, unsigned argc,
                   const char *const *argv, lc_command_result *res, lc_error *err)
{
    lc_command_result mine = {0};
    lc_command_result *r = res ? res : &mine;
    lc_command_request req = {.name = name, .stage = stage, .argc = argc, .argv = argv};
    int rc = lc_monitor_command(m, &req, r);
    if (rc != 0)
        lc_error_set(err, rc, "%s", r->error ? r->error : "no answer from the loader");
    lc_command_result_fini(&mine);
    return rc;
}

int lc_monitor_pause(lc_monitor *m, const char *stage, bool pause, lc_error *err)
{
    return lc_monitor_run(m, pause ? "pause" : "resume", stage, 0, NULL, NULL, err);
}

int lc_monitor_pipeline(lc_monitor *m, bool start, lc_error *err)
{
    return lc_monitor_run(m, start ? "start" : "stop", NULL, 0, NULL, NULL, err);
}

int lc_monitor_reload(lc_monitor *m, char **message, lc_error *err)
{
    lc_command_result res = {0};
    int rc = lc_monitor_run(m, "reload", NULL, 0, NULL, &res, err);
    if (message)
        *message = rc == 0 && res.message ? lc_xstrdup(res.message) : NULL;
    lc_command_result_fini(&res);
    return rc;
}

int lc_monitor_anchor(lc_monitor *m, const char *set_key, bool reset, char **anchor, int64_t *count,
                      lc_error *err)
{
    lc_command_result res = {0};
    const char *name = set_key ? "anchor-set" : reset ? "anchor-reset" : "anchor-get";
    int rc = lc_monitor_run(m, name, NULL, set_key ? 1 : 0, &set_key, &res, err);
    if (rc == 0 && anchor)
        *anchor = NULL;
    /* The first stage that answered with an anchor (a pipeline has one pool). */
    for (size_t i = 0; rc == 0 && i < res.n; i++) {
        const char *a = lc_reply_get(&res.replies[i], "anchor");
        const char *c = lc_reply_get(&res.replies[i], "count");
        if (!a)
            continue;
        if (anchor)
            *anchor = lc_xstrdup(a);
        if (count)
            *count = c ? strtoll(c, NULL, 10) : 0;
        break;
    }
    lc_command_result_fini(&res);
    return rc;
}
