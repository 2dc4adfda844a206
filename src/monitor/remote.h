/*
 * remote: a monitor for a loader in another process, reached through its
 * socket (lcmon --no-ui --socket PATH).
 */
#ifndef LC_MONITOR_REMOTE_H
#define LC_MONITOR_REMOTE_H

#include "monitor/monitor.h"

#include "monitor.pb-c.h"

/* Connect, read the hello, subscribe to snapshots every interval_ms (and to
 * log lines when `logs`). Errors name the path and say what to check. */
int lc_monitor_remote_new(const char *path, uint32_t interval_ms, bool logs, lc_monitor **out,
                          lc_error *err);
/* Why the loader turned this client away (every place, or every place
 * for a subscriber, taken), or NULL. */
const char *lc_monitor_remote_refused(lc_monitor *m);
/* The loader's hello (its pipeline). */
const Lcmon__Hello *lc_monitor_remote_hello(lc_monitor *m);
/* Wait until the first snapshot arrived (true), at most `seconds`. */
bool lc_monitor_remote_wait_snapshot(lc_monitor *m, double seconds);
/* The same for window w, which it subscribes to. */
bool lc_monitor_remote_wait_window(lc_monitor *m, lc_window w, double seconds);

#endif
