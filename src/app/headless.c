/*
 * headless: `lcmon --no-ui`, the production mode. The calling (main) thread
 * owns the loop: it polls a signalfd for SIGINT, SIGTERM and SIGHUP (they
 * are blocked in every thread), an eventfd that the pipeline's end hook
 * writes and the --parent-fd descriptor, prints the status line, appends the
 * metrics log, and so notices the end of a finite run the moment it happens.
 * --parent-fd is the read end of a pipe whose write end only the parent
 * process holds (lcmon.Loader passes its stdin): the kernel closes it when
 * the parent dies, however it dies and whichever of its threads started
 * lcmon, and lcmon stops as on SIGTERM. PR_SET_PDEATHSIG would fire when the
 * forking thread ends, not the process. The loader runs behind a
 * local monitor, which the socket server shares (the local monitor locks).
 */
#include "app/headless.h"

#include "monitor/snapshot.h"

#include "core/clock.h"
#include "core/exit.h"
#include "core/file.h"
#include "core/log.h"
#include "app/json.h"
#include "monitor/local.h"
#include "monitor/server.h"
#include "pipeline/config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

/* One line of the metrics log: the last second, all time and the windows
 * of the mask (in "windows", by name). `sock` (the socket server's counts,
 * as the snapshots it serves carry them) may be NULL. */
static void append_metrics_log(FILE *f, lc_monitor *m, Lcmon__MonitorSocketMetricsProto *sock,
                               unsigned windows)
{
    /* The windows first: all time, taken after, holds at least as much. */
    lc_snapshot *win[LC_WINDOW_COUNT] = {0};
    for (int w = 0; w < LC_WINDOW_COUNT; w++)
        win[w] = windows & 1u << w ? lc_monitor_window(m, (lc_window)w) : NULL;
    lc_snapshot *last_snap = lc_monitor_metrics(m, false);
    lc_snapshot *all_snap = lc_monitor_metrics(m, true);
    const Lcmon__DataLoaderMetricsProto *last = lc_snapshot_msg(last_snap);
    Lcmon__DataLoaderMetricsProto all_copy = *lc_snapshot_msg(all_snap); /* shallow: read only */
    all_copy.monitor_socket = sock;
    const Lcmon__DataLoaderMetricsProto *all = &all_copy;
    lc_wire_buf out = {0};
    char head[64];
    snprintf(head, sizeof head, "{\"time\":%.3f,\"last_second\":", lc_wall_seconds());
    lc_wire_buf_append(&out, head, strlen(head));
    lc_json_message(&out, &last->base);
    lc_wire_buf_append(&out, ",\"all_time\":", 12);
    lc_json_message(&out, &all->base);
    bool any = false;
    for (int w = 0; w < LC_WINDOW_COUNT; w++) {
        if (!win[w])
            continue;
        snprintf(head, sizeof head, "%s\"%s\":", any ? "," : ",\"windows\":{",
                 lc_window_name((lc_window)w));
        lc_wire_buf_append(&out, head, strlen(head));
        lc_json_message(&out, &lc_snapshot_msg(win[w])->base);
        lc_snapshot_unref(win[w]);
        any = true;
    }
    if (any)
        lc_wire_buf_append(&out, "}", 1);
    lc_wire_buf_append(&out, "}\n", 2);
    if (fwrite(out.data, 1, out.len, f) != out.len || fflush(f) != 0)
        LC_WARN("metrics log: write failed: %s", strerror(errno));
    lc_wire_buf_fini(&out);
    lc_snapshot_unref(last_snap);
    lc_snapshot_unref(all_snap);
}

static void summary(lc_monitor *m)
{
    lc_snapshot *snap = lc_monitor_metrics(m, true);
    const Lcmon__DataLoaderMetricsProto *total = lc_snapshot_msg(snap);
    char items[1024];
    size_t used = 0;
    items[0] = '\0';
    for (size_t i = 0; i < total->n_stage_metrics && used < sizeof items; i++) {
        const Lcmon__StageMetricProto *s = total->stage_metrics[i];
        int n = snprintf(items + used, sizeof items - used, "%s %s %llu %s", i ? "," : "", s->name,
                         (unsigned long long)s->items_out, lc_snapshot_stage_unit(s));
        if (n > 0)
            used += (size_t)n;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    LC_INFO("%s after %.1f s; out:%s; peak RSS %.1f MB", lc_pipeline_state_name(total->state),
            total->uptime_seconds, items, (double)ru.ru_maxrss / 1024.0);
    lc_snapshot_unref(snap);
}

/* The pipeline's end hook (its metrics thread): wake the main loop. */
static void wake_on_end(void *ctx)
{
    uint64_t one = 1;
    ssize_t n = write(*(int *)ctx, &one, sizeof one);
    (void)n; /* the counter cannot overflow from one write per pipeline */
}

/* wait_for_event's answer when the parent's descriptor reached its end. */
#define PARENT_GONE (-1)

/* What came on the parent's descriptor: PARENT_GONE at its end (or an
 * error), else 0 (bytes, read and ignored). */
static int parent_event(int pfd, short revents)
{
    if (revents & POLLIN) {
        char buf[256];
        ssize_t n = read(pfd, buf, sizeof buf);
        if (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN)))
            return 0;
        return PARENT_GONE;
    }
    return revents & (POLLHUP | POLLERR | POLLNVAL) ? PARENT_GONE : 0;
}

/* Wait up to `wait` seconds for a signal, the end hook or the end of the
 * parent's descriptor pfd (-1: none). The signal number, PARENT_GONE, or 0
 * for the end hook or the timeout. */
static int wait_for_event(int sfd, int efd, int pfd, double wait)
{
    struct pollfd fds[3] = {{.fd = sfd, .events = POLLIN},
                            {.fd = efd, .events = POLLIN},
                            {.fd = pfd, .events = POLLIN}}; /* poll skips a negative fd */
    int ms = (int)(wait * 1000.0 + 0.999);
    if (poll(fds, 3, ms) <= 0)
        return 0; /* timeout, or EINTR: the caller looks at the state */
    if (pfd >= 0 && parent_event(pfd, fds[2].revents) == PARENT_GONE)
        return PARENT_GONE;
    if (fds[1].revents & POLLIN) {
        uint64_t count;
        ssize_t n = read(efd, &count, sizeof count);
        (void)n;
    }
    if (fds[0].revents & POLLIN) {
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
            return (int)si.ssi_signo;
    }
    return 0;
}

/* A headless run's state: what the loop waits on and writes to. */
typedef struct headless {
    const lc_headless_options *o;
    int sfd, efd; /* signals; the pipeline's end hook */
    FILE *mlog;   /* --metrics-log, or NULL */
    lc_monitor *m;
    lc_server *server;                     /* --socket, or NULL */
    Lcmon__MonitorSocketMetricsProto sock; /* the server's counts, for the metrics log */
    double start, next_status, next_log;
    bool status; /* a status line every status_interval */
    bool asked;  /* the loop ended on a request to stop (a signal, the parent gone) */
} headless;

static void headless_close(headless *h)
{
    if (h->mlog)
        fclose(h->mlog);
    if (h->sfd >= 0)
        close(h->sfd);
    if (h->efd >= 0)
        close(h->efd);
}

/* The signalfd, the eventfd and the metrics log; false (said) when one
 * cannot be had. */
static bool headless_open(headless *h)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    h->sfd = signalfd(-1, &set, SFD_CLOEXEC);
    h->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (h->sfd < 0 || h->efd < 0) {
        fprintf(stderr, "lcmon: cannot wait for signals: %s\n", strerror(errno));
        return false;
    }
    if (h->o->metrics_log) {
        lc_error err;
        lc_error_clear(&err);
        h->mlog = lc_open_append(h->o->metrics_log, &err);
        if (!h->mlog) {
            fprintf(stderr, "lcmon: --metrics-log: cannot open %s\n", err.msg);
            return false;
        }
    }
    return true;
}

/* The pipeline started, and the socket serves it: true; else said. */
static bool headless_started(headless *h)
{
    lc_snapshot *snap = lc_monitor_metrics(h->m, false);
    const Lcmon__DataLoaderMetricsProto *first = lc_snapshot_msg(snap);
    bool failed = first->state == LCMON__PIPELINE_STATE__PIPELINE_FAILED;
    if (failed)
        fprintf(stderr, "lcmon: %s\n", first->error ? first->error : "the pipeline failed");
    lc_snapshot_unref(snap);
    if (failed)
        return false;
    if (h->o->socket_path) {
        lc_error err;
        lc_error_clear(&err);
        if (lc_server_start(h->o->socket_path, h->m, &h->server, &err) != 0) {
            fprintf(stderr, "lcmon: --socket: %s\n", err.msg);
            return false;
        }
    }
    return true;
}

/* Seconds until the loop has something to do: a status line, a metrics
 * log line, or --max-seconds. */
static double headless_wait(const headless *h, double now)
{
    double wait = 60.0;
    if (h->status && h->next_status - now < wait)
        wait = h->next_status - now;
    if (h->mlog && h->next_log - now < wait)
        wait = h->next_log - now;
    if (h->o->max_seconds > 0 && h->start + h->o->max_seconds - now < wait)
        wait = h->start + h->o->max_seconds - now;
    return wait < 0 ? 0 : wait;
}

/* The status line and the metrics log when due; the pipeline's state. */
static Lcmon__PipelineState headless_tick(headless *h, double now)
{
    lc_snapshot *snap = lc_monitor_metrics(h->m, false);
    const Lcmon__DataLoaderMetricsProto *last = lc_snapshot_msg(snap);
    Lcmon__PipelineState st = last->state;
    if (h->status && now >= h->next_status) {
        char line[2048];
        if (h->o->long_status)
            lc_status_line(last, line, sizeof line);
        else
            lc_status_line_compact(last, 120, line, sizeof line);
        fprintf(stderr, "%s\n", line);
        h->next_status += h->o->status_interval;
        if (h->next_status < now)
            h->next_status = now + h->o->status_interval;
    }
    lc_snapshot_unref(snap);
    if (h->mlog && now >= h->next_log) {
        if (h->server)
            lc_server_metrics(h->server, &h->sock);
        append_metrics_log(h->mlog, h->m, h->server ? &h->sock : NULL, h->o->metrics_windows);
        h->next_log += 1.0;
        if (h->next_log < now)
            h->next_log = now + 1.0;
    }
    return st;
}

/* Until a signal, the end of the run, or --max-seconds: the exit status. */
static int headless_loop(headless *h)
{
    h->start = lc_now_seconds();
    h->status = !h->o->quiet && h->o->status_interval > 0;
    h->next_status = h->start + (h->status ? h->o->status_interval : 0);
    h->next_log = h->start + 1.0;
    for (;;) {
        /* Signals and the end hook wake the loop; the timeout is for the
         * status line, the metrics log and --max-seconds. */
        int sig =
            wait_for_event(h->sfd, h->efd, h->o->parent_fd, headless_wait(h, lc_now_seconds()));
        if (sig > 0 || sig == PARENT_GONE) {
            if (sig > 0)
                LC_INFO("%s received: stopping", strsignal(sig));
            else
                LC_INFO("--parent-fd %d reached its end (the parent process is gone): stopping",
                        h->o->parent_fd);
            h->asked = true;
            return 0;
        }
        double now = lc_now_seconds();
        Lcmon__PipelineState st = headless_tick(h, now);
        /* A pipeline stopped through the socket stays stopped until a start
         * request; only a finished or failed one ends lcmon. */
        if (st == LCMON__PIPELINE_STATE__PIPELINE_FINISHED)
            return 0;
        if (st == LCMON__PIPELINE_STATE__PIPELINE_FAILED)
            return 1;
        if (h->o->max_seconds > 0 && now - h->start >= h->o->max_seconds) {
            LC_INFO("--max-seconds reached: stopping");
            return 0;
        }
    }
}

int lc_headless_run(lc_config *cfg, const lc_headless_options *o)
{
    headless h = {.o = o, .sfd = -1, .efd = -1};
    h.sock = (Lcmon__MonitorSocketMetricsProto)LCMON__MONITOR_SOCKET_METRICS_PROTO__INIT;
    if (!headless_open(&h)) {
        headless_close(&h);
        lc_config_free(cfg);
        return 1;
    }
    h.m = lc_monitor_local_new(cfg, o->source, wake_on_end, &h.efd); /* owns cfg */
    if (!headless_started(&h)) { /* nothing to stop, summarise or log */
        lc_monitor_free(h.m);
        headless_close(&h);
        return 1;
    }
    int exit_code = headless_loop(&h);
    /* From here a stop must end: a second signal, or a thread stuck past
     * the deadline, ends the process at once (core/exit.h). */
    lc_stop_deadline_start(lc_monitor_local_stop_deadline(h.m),
                           h.asked); /* of the config run last */
    bool served = h.server != NULL;
    if (h.server)
        lc_server_metrics(h.server, &h.sock); /* the last counts, for the last line */
    lc_server_stop(h.server);
    lc_monitor_pipeline(h.m, false, NULL);
    if (h.mlog)
        append_metrics_log(h.mlog, h.m, served ? &h.sock : NULL, o->metrics_windows);
    summary(h.m);
    lc_monitor_free(h.m);
    lc_stop_deadline_end();
    headless_close(&h);
    return exit_code;
}
