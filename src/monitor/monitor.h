/*
 * monitor: the one small interface through which the screen sees a loader
 * and steers it, wherever the loader runs.
 *
 * A monitor hands out metrics snapshots (DataLoaderMetricsProto, the
 * last second, all time, or another window of time), runs commands by name (core/command.h: the
 * loader's stop, start, restart and reload, every stage's pause and resume,
 * a stage class's own such as the pool's anchor-set; the hello lists them),
 * and reads the loader's log. The screen never touches stages or the pipeline directly, so
 * the same screen shows a loader in this process (monitor/local.h) or in
 * another one over its socket.
 *
 * Threads: a monitor is used by one thread at a time (the screen's).
 */
#ifndef LC_MONITOR_MONITOR_H
#define LC_MONITOR_MONITOR_H

#include "core/command.h"
#include "core/error.h"
#include "core/log.h"
#include "core/metric_windows.h"
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
    /* The same of any window (core/metric_windows.h). NULL also while a
     * remote loader has not sent that window yet (asking for it is what
     * makes it send it): show the last second meanwhile. */
    lc_snapshot *(*window)(lc_monitor *m, lc_window w);
    /* Run a command: fills res (a zeroed result; free it with
     * lc_command_result_fini) and returns res->rc. */
    int (*command)(lc_monitor *m, const lc_command_request *req, lc_command_result *res);
    /* Log lines with seq > after, oldest first (see lc_log_read). */
    size_t (*read_log)(lc_monitor *m, uint64_t after, lc_log_entry *out, size_t max,
                       uint64_t *next_after);
    /* Where the loader is, for the header: "in-process", a socket path. */
    const char *(*where)(lc_monitor *m);
    /* What the loader says of itself (its stages, how to show each one's
     * metrics, the commands of each and its own, the configuration file),
     * as a socket's hello carries
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

static inline lc_snapshot *lc_monitor_window(lc_monitor *m, lc_window w)
{
    return m->ops->window(m, w);
}

static inline int lc_monitor_command(lc_monitor *m, const lc_command_request *req,
                                     lc_command_result *res)
{
    return m->ops->command(m, req, res);
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

/* Run the command `name` with its arguments (argc of argv) for `stage`
 * (NULL: the loader's command, or every stage that has it): 0, or a
 * negative code with err holding every problem, one a line. res (may be
 * NULL) takes the answer; free it with lc_command_result_fini. */
int lc_monitor_run(lc_monitor *m, const char *name, const char *stage, unsigned argc,
                   const char *const *argv, lc_command_result *res, lc_error *err);

/* Shorthands over lc_monitor_run for what the screen and main do; each
 * returns 0 or a negative code with err set. *anchor and *count (when not
 * NULL) receive the pool's answer for the anchor commands (anchor-set
 * with set_key, anchor-reset with reset, else anchor-get); *anchor is
 * malloc'd. */
int lc_monitor_pause(lc_monitor *m, const char *stage, bool pause, lc_error *err);
int lc_monitor_pipeline(lc_monitor *m, bool start, lc_error *err);
int lc_monitor_anchor(lc_monitor *m, const char *set_key, bool reset, char **anchor, int64_t *count,
                      lc_error *err);
/* Reload the configuration (the command "reload"): 0 with *message
 * (malloc'd, may be NULL) saying what was loaded, or a negative code with
 * err holding every problem, one a line, the first saying nothing changed
 * when nothing did. message may be NULL. */
int lc_monitor_reload(lc_monitor *m, char **message, lc_error *err);

#endif
