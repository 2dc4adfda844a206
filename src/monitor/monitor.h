/*
 * monitor: the one small interface through which the screen sees a loader
 * and steers it, wherever the loader runs.
 *
 * A monitor hands out metrics snapshots (DataLoaderMetricsProto, the
 * last second or all time), carries out control requests (ControlRequest:
 * pipeline stop, start and reload, stage pause and resume, anchors), and reads the
 * loader's log. The screen never touches stages or the pipeline directly, so
 * the same screen shows a loader in this process (monitor/local.h) or in
 * another one over its socket.
 *
 * Threads: a monitor is used by one thread at a time (the screen's).
 */
#ifndef LC_MONITOR_MONITOR_H
#define LC_MONITOR_MONITOR_H

#include "core/error.h"
#include "core/log.h"
#include "monitor/snapshot.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "monitor.pb-c.h"
#include "stage_control.pb-c.h"
#include "training_metrics.pb-c.h"

typedef struct lc_monitor lc_monitor;

typedef struct lc_monitor_ops {
    /* A reference to the latest snapshot (shared, immutable), or NULL when
     * none is available (a remote loader that went away). Drop it with
     * lc_snapshot_unref. */
    lc_snapshot *(*metrics)(lc_monitor *m, bool all_time);
    /* *resp is malloc'd; free with lcmon__control_response__free_unpacked. */
    void (*control)(lc_monitor *m, const Lcmon__ControlRequest *req, Lcmon__ControlResponse **resp);
    /* Log lines with seq > after, oldest first (see lc_log_read). */
    size_t (*read_log)(lc_monitor *m, uint64_t after, lc_log_entry *out, size_t max,
                       uint64_t *next_after);
    /* Where the loader is, for the header: "in-process", a socket path. */
    const char *(*where)(lc_monitor *m);
    /* What the loader says of itself (its stages, and how to show each
     * one's metrics, the configuration file), as a socket's hello carries
     * it; NULL when unknown. Owned by the monitor; valid until the next
     * call on it from the thread that uses it (a reload, or a new hello
     * from a remote loader, replaces it): take it again each time. */
    const Lcmon__Hello *(*hello)(lc_monitor *m);
    void (*free)(lc_monitor *m);
} lc_monitor_ops;

struct lc_monitor {
    const lc_monitor_ops *ops;
};

static inline lc_snapshot *lc_monitor_metrics(lc_monitor *m, bool all_time)
{
    return m->ops->metrics(m, all_time);
}

static inline void lc_monitor_control(lc_monitor *m, const Lcmon__ControlRequest *req,
                                      Lcmon__ControlResponse **resp)
{
    m->ops->control(m, req, resp);
}

static inline size_t lc_monitor_read_log(lc_monitor *m, uint64_t after, lc_log_entry *out,
                                         size_t max, uint64_t *next_after)
{
    return m->ops->read_log(m, after, out, max, next_after);
}

static inline const char *lc_monitor_where(lc_monitor *m)
{
    return m->ops->where(m);
}

static inline const Lcmon__Hello *lc_monitor_hello(lc_monitor *m)
{
    return m->ops->hello(m);
}

static inline void lc_monitor_free(lc_monitor *m)
{
    if (m)
        m->ops->free(m);
}

/* Convenience requests; each returns 0 or a negative code with err set from
 * the response. *anchor and *count (when not NULL) receive the pool's answer
 * for anchor requests; *anchor is malloc'd. */
int lc_monitor_pause(lc_monitor *m, const char *stage, bool pause, lc_error *err);
int lc_monitor_pipeline(lc_monitor *m, bool start, lc_error *err);
int lc_monitor_anchor(lc_monitor *m, const char *set_key, bool reset, char **anchor, int64_t *count,
                      lc_error *err);
/* Reload the configuration (ControlRequest.reload_config): 0 with *message
 * (malloc'd, may be NULL) saying what was loaded, or a negative code with
 * err holding every problem, one a line, the first saying nothing changed
 * when nothing did. message may be NULL. */
int lc_monitor_reload(lc_monitor *m, char **message, lc_error *err);

#endif
