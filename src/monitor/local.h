/*
 * local: the monitor of a loader in this process (see monitor.h), which
 * builds, starts, stops and restarts the pipeline a configuration
 * describes, and answers the loader's own commands (stop, start, restart,
 * reload). The monitor's one door to the pipeline: local.c is the only
 * file of monitor/ that includes pipeline/ headers or calls a function
 * they declare (scripts/check-layers fails the build otherwise). This
 * header names the pipeline's configuration only as opaque handles: the
 * program (src/app/) loads one with pipeline/config.h and hands it over;
 * the monitor frees it. The screen and the server see only monitor.h.
 */
#ifndef LC_MONITOR_LOCAL_H
#define LC_MONITOR_LOCAL_H

#include "monitor/monitor.h"

#include <stdbool.h>

/* A configuration that loaded (pipeline/config.h's lc_config_load_*), and
 * where it came from, for reloads (lc_config_source): opaque here. */
typedef struct lc_config lc_config;
typedef struct lc_config_source lc_config_source;
/* Called from the pipeline's metrics thread when a pipeline finishes by
 * itself (lc_pipeline_on_end). */
typedef void (*lc_monitor_end_fn)(void *ctx);

/* The loader in this process: builds the pipeline `cfg` describes and
 * starts it. The monitor owns cfg from here on (it frees it, or the one a
 * reload put in its place). A pipeline stop request stops the pipeline; a
 * start request builds a fresh one from the same config; a reload request
 * reads src again (src may be NULL: nothing to reload; the monitor keeps a
 * copy) and, when it checks out, restarts the pipeline with it. A pipeline
 * that fails to build or start is reported in the snapshots (state FAILED,
 * with the error), not here. on_end (may be NULL) is given to each pipeline
 * it builds (lc_pipeline_on_end): called from the pipeline's metrics thread
 * when a pipeline finishes by itself. */
lc_monitor *lc_monitor_local_new(lc_config *cfg, const lc_config_source *src,
                                 lc_monitor_end_fn on_end, void *ctx);

/* The stop deadline of the configuration the monitor runs now (it may have
 * been reloaded): lc_config_stop_deadline. Any thread. */
double lc_monitor_local_stop_deadline(lc_monitor *m);

/* A local monitor for a configuration that did not load: no pipeline, the
 * state FAILED with a one-line summary of `errors` (one problem a line),
 * and each problem logged as an error, so that the screen shows them in its
 * header and log pane. Start requests fail with the same summary, until a
 * reload request reads src (may be NULL) again and it loads: the monitor
 * then runs it as lc_monitor_local_new's does. */
lc_monitor *lc_monitor_failed_new(const char *errors, const lc_config_source *src);
/* What a loader of this build answers, with no loader at hand (`lcmon ctl
 * help`): a hello (as monitor.h's hello) whose commands are the loader's
 * own and whose stages are every stage type there is, each named after its
 * type, with its commands. Free with lcmon__hello__free_unpacked. */
Lcmon__Hello *lc_monitor_local_catalog(void);

/* Whether the monitor has a configuration to run: false for
 * lc_monitor_failed_new's until a reload loaded one. Any thread. */
bool lc_monitor_local_configured(lc_monitor *m);

#endif
