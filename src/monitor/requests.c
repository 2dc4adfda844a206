/*
 * requests: the common control requests, built once for every monitor.
 */
#include "monitor/monitor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int finish(Lcmon__ControlResponse *resp, lc_error *err)
{
    int rc = 0;
    if (!resp || (resp->has_ok && !resp->ok))
        rc = lc_error_set(err, -EINVAL, "%s",
                          resp && resp->error ? resp->error : "no answer from the loader");
    return rc;
}

int lc_monitor_pause(lc_monitor *m, const char *stage, bool pause, lc_error *err)
{
    Lcmon__ControlRequest req = LCMON__CONTROL_REQUEST__INIT;
    Lcmon__StageControlRequest sreq = LCMON__STAGE_CONTROL_REQUEST__INIT;
    sreq.stage = (char *)stage;
    sreq.has_command = true;
    sreq.command = pause ? LCMON__STAGE_COMMAND__STAGE_COMMAND_PAUSE
                         : LCMON__STAGE_COMMAND__STAGE_COMMAND_RESUME;
    req.stage_request = &sreq;
    Lcmon__ControlResponse *resp = NULL;
    lc_monitor_control(m, &req, &resp);
    int rc = finish(resp, err);
    lcmon__control_response__free_unpacked(resp, NULL);
    return rc;
}

int lc_monitor_pipeline(lc_monitor *m, bool start, lc_error *err)
{
    Lcmon__ControlRequest req = LCMON__CONTROL_REQUEST__INIT;
    req.has_pipeline_command = true;
    req.pipeline_command = start ? LCMON__PIPELINE_COMMAND__PIPELINE_COMMAND_START
                                 : LCMON__PIPELINE_COMMAND__PIPELINE_COMMAND_STOP;
    Lcmon__ControlResponse *resp = NULL;
    lc_monitor_control(m, &req, &resp);
    int rc = finish(resp, err);
    lcmon__control_response__free_unpacked(resp, NULL);
    return rc;
}

int lc_monitor_reload(lc_monitor *m, char **message, lc_error *err)
{
    Lcmon__ControlRequest req = LCMON__CONTROL_REQUEST__INIT;
    req.has_reload_config = true;
    req.reload_config = true;
    Lcmon__ControlResponse *resp = NULL;
    lc_monitor_control(m, &req, &resp);
    int rc = finish(resp, err);
    if (message)
        *message = rc == 0 && resp->message ? lc_xstrdup(resp->message) : NULL;
    lcmon__control_response__free_unpacked(resp, NULL);
    return rc;
}

int lc_monitor_anchor(lc_monitor *m, const char *set_key, bool reset, char **anchor, int64_t *count,
                      lc_error *err)
{
    Lcmon__ControlRequest req = LCMON__CONTROL_REQUEST__INIT;
    Lcmon__StageControlRequest sreq = LCMON__STAGE_CONTROL_REQUEST__INIT;
    Lcmon__ShufflingChunkPoolControlRequest pool =
        LCMON__SHUFFLING_CHUNK_POOL_CONTROL_REQUEST__INIT;
    pool.set_chunk_anchor = (char *)set_key;
    pool.has_reset_chunk_anchor = reset;
    pool.reset_chunk_anchor = reset;
    pool.has_query_chunk_anchor = !set_key && !reset;
    pool.query_chunk_anchor = !set_key && !reset;
    sreq.chunk_pool_request = &pool;
    req.stage_request = &sreq;
    Lcmon__ControlResponse *resp = NULL;
    lc_monitor_control(m, &req, &resp);
    int rc = finish(resp, err);
    if (rc == 0 && anchor)
        *anchor = NULL;
    for (size_t i = 0; rc == 0 && i < resp->n_stage_responses; i++) {
        const Lcmon__ShufflingChunkPoolControlResponse *p =
            resp->stage_responses[i]->chunk_pool_response;
        if (!p)
            continue;
        if (anchor && !*anchor)
            *anchor = strdup(p->chunk_anchor ? p->chunk_anchor : "");
        if (count)
            *count = p->chunks_since_anchor;
        break;
    }
    lcmon__control_response__free_unpacked(resp, NULL);
    return rc;
}
