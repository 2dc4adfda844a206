/*
 * server: serves a monitor (metrics snapshots, control, log lines) on a Unix
 * socket; see server.c for the guarantees and proto/monitor.proto for the
 * protocol. Started and stopped by the thread that owns the monitor.
 */
#ifndef LC_MONITOR_SERVER_H
#define LC_MONITOR_SERVER_H

#include "core/error.h"
#include "monitor/monitor.h"

typedef struct lc_server lc_server;

/* Create the socket (mode 0600; refusing a live socket, replacing a stale
 * one) and start serving `monitor` (which must be safe to share across
 * threads, as the local monitor is). The hello carries the monitor's (its
 * stages), taken on the server's thread: while the server runs, it is the
 * one thread that sends the monitor control requests. */
int lc_server_start(const char *path, lc_monitor *monitor, lc_server **out, lc_error *err);
/* The server's counts: clients connected now, connections accepted, clients
 * refused (every place taken) and closed for misbehaving. Any thread. */
void lc_server_metrics(lc_server *s, Lcmon__MonitorSocketMetricsProto *out);
/* Close every client, remove the socket file. NULL is fine. */
void lc_server_stop(lc_server *s);

#endif
