/*
 * headless: the `lcmon --no-ui` loop: the pipeline, the status line, the
 * metrics log and the monitoring socket, until a signal, the end of a
 * finite run, or the end of --parent-fd (the parent process is gone).
 */
#ifndef LC_APP_HEADLESS_H
#define LC_APP_HEADLESS_H

#include "monitor/local.h" /* the configuration's opaque handles */
#include "monitor/monitor.h"

#include <stdbool.h>

typedef struct lc_headless_options {
    double max_seconds;             /* 0: until stopped or finished */
    double status_interval;         /* seconds between status lines; 0: none */
    bool quiet;                     /* no status lines */
    bool long_status;               /* every queue and gauge (-v), not the 120-column form */
    const char *socket_path;        /* serve the monitor socket here (NULL: no) */
    const char *metrics_log;        /* append a JSON line per second here (NULL: no) */
    unsigned metrics_windows;       /* its windows besides 1 s and all time (bit w) */
    int parent_fd;                  /* stop when it reaches its end (--parent-fd); -1: none */
    const lc_config_source *source; /* where cfg came from, for reloads (NULL: none) */
} lc_headless_options;

/* Runs the pipeline cfg describes, and owns cfg from here on (the local
 * monitor frees it, or the one a reload put in its place). Expects SIGINT,
 * SIGTERM and SIGHUP blocked in every thread. Returns the exit status: 0
 * after a stop or the end of a finite run, 1 on failure. */
int lc_headless_run(lc_config *cfg, const lc_headless_options *o);

#endif
