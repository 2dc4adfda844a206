/*
 * headless: `lcmon --no-ui`, the production mode. The calling (main) thread
 * owns the loop: it waits for SIGINT, SIGTERM and SIGHUP with sigtimedwait
 * (they are blocked in every thread), prints the status line, appends the
 * metrics log, and notices the end of a finite run. The loader runs behind a
 * local monitor, which the socket server shares (the local monitor locks).
 */
#include "monitor/headless.h"

#include "core/clock.h"
#include "core/log.h"
#include "monitor/json.h"
#include "monitor/server.h"
#include "pipeline/status.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static void append_metrics_log(FILE *f, lc_monitor *m)
{
    Lcmon__DataLoaderMetricsProto *last = lc_monitor_metrics(m, false);
    Lcmon__DataLoaderMetricsProto *all = lc_monitor_metrics(m, true);
    lc_wire_buf out = {0};
    char head[64];
    snprintf(head, sizeof head, "{\"time\":%.3f,\"last_second\":", lc_wall_seconds());
    lc_wire_buf_append(&out, head, strlen(head));
    lc_json_message(&out, &last->base);
    lc_wire_buf_append(&out, ",\"all_time\":", 12);
    lc_json_message(&out, &all->base);
    lc_wire_buf_append(&out, "}\n", 2);
    if (fwrite(out.data, 1, out.len, f) != out.len || fflush(f) != 0)
        LC_WARN("metrics log: write failed: %s", strerror(errno));
    lc_wire_buf_fini(&out);
    lcmon__data_loader_metrics_proto__free_unpacked(last, NULL);
    lcmon__data_loader_metrics_proto__free_unpacked(all, NULL);
}

static void summary(lc_monitor *m)
{
    Lcmon__DataLoaderMetricsProto *total = lc_monitor_metrics(m, true);
    char items[1024];
    size_t used = 0;
    items[0] = '\0';
    for (size_t i = 0; i < total->n_stage_metrics && used < sizeof items; i++) {
        const Lcmon__StageMetricProto *s = total->stage_metrics[i];
        int n = snprintf(items + used, sizeof items - used, " %s %llu", s->name,
                         (unsigned long long)s->items_out);
        if (n > 0)
            used += (size_t)n;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    LC_INFO("%s after %.1f s; items out:%s; peak RSS %.1f MB",
            lc_pipeline_state_name(total->state), total->uptime_seconds, items,
            (double)ru.ru_maxrss / 1024.0);
    lcmon__data_loader_metrics_proto__free_unpacked(total, NULL);
}

int lc_headless_run(const lc_config *cfg, const lc_headless_options *o)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);

    FILE *mlog = NULL;
    if (o->metrics_log) {
        mlog = fopen(o->metrics_log, "a");
        if (!mlog) {
            fprintf(stderr, "lcmon: --metrics-log: cannot open %s: %s\n", o->metrics_log,
                    strerror(errno));
            return 1;
        }
    }
    lc_monitor *m = lc_monitor_local_new(cfg);
    {
        Lcmon__DataLoaderMetricsProto *first = lc_monitor_metrics(m, false);
        bool failed = first->state == LCMON__PIPELINE_STATE__PIPELINE_FAILED;
        if (failed)
            fprintf(stderr, "lcmon: %s\n", first->error ? first->error : "the pipeline failed");
        lcmon__data_loader_metrics_proto__free_unpacked(first, NULL);
        if (failed) {
            lc_monitor_free(m);
            if (mlog)
                fclose(mlog);
            return 1;
        }
    }
    lc_server *server = NULL;
    if (o->socket_path) {
        lc_error err;
        lc_error_clear(&err);
        if (lc_server_start(o->socket_path, m, cfg, &server, &err) != 0) {
            fprintf(stderr, "lcmon: --socket: %s\n", err.msg);
            lc_monitor_free(m);
            if (mlog)
                fclose(mlog);
            return 1;
        }
    }

    double start = lc_now_seconds();
    bool status = !o->quiet && o->status_interval > 0;
    double next_status = start + (status ? o->status_interval : 0);
    double next_log = start + 1.0;
    int exit_code = 0;
    for (;;) {
        /* Wake at least every 200 ms to notice the end of the pipeline. */
        double now = lc_now_seconds();
        double wait = 0.2;
        if (status && next_status - now < wait)
            wait = next_status - now;
        if (mlog && next_log - now < wait)
            wait = next_log - now;
        if (wait < 0)
            wait = 0;
        struct timespec ts = {.tv_sec = (time_t)wait,
                              .tv_nsec = (long)((wait - (double)(time_t)wait) * 1e9)};
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig > 0) {
            LC_INFO("%s received: stopping", strsignal(sig));
            break;
        }
        now = lc_now_seconds();
        Lcmon__DataLoaderMetricsProto *last = lc_monitor_metrics(m, false);
        Lcmon__PipelineState st = last->state;
        if (status && now >= next_status) {
            char line[2048];
            lc_status_line(last, line, sizeof line);
            fprintf(stderr, "%s\n", line);
            next_status += o->status_interval;
            if (next_status < now)
                next_status = now + o->status_interval;
        }
        lcmon__data_loader_metrics_proto__free_unpacked(last, NULL);
        if (mlog && now >= next_log) {
            append_metrics_log(mlog, m);
            next_log += 1.0;
            if (next_log < now)
                next_log = now + 1.0;
        }
        /* A pipeline stopped through the socket stays stopped until a start
         * request; only a finished or failed one ends lcmon. */
        if (st == LCMON__PIPELINE_STATE__PIPELINE_FINISHED)
            break;
        if (st == LCMON__PIPELINE_STATE__PIPELINE_FAILED) {
            exit_code = 1;
            break;
        }
        if (o->max_seconds > 0 && now - start >= o->max_seconds) {
            LC_INFO("--max-seconds reached: stopping");
            break;
        }
    }
    lc_server_stop(server);
    lc_monitor_pipeline(m, false, NULL);
    if (mlog) {
        append_metrics_log(mlog, m);
        fclose(mlog);
    }
    summary(m);
    lc_monitor_free(m);
    return exit_code;
}
