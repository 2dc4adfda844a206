/*
 * ctl: `lcmon ctl SOCKET COMMAND ...`, the scriptable client of a running
 * loader. Exit status: 0 done, 1 the loader refused (no such stage, ...),
 * 2 usage, 3 cannot reach the loader.
 */
#include "monitor/ctl.h"

#include "monitor/json.h"
#include "monitor/remote.h"
#include "monitor/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ctl_usage(FILE *f)
{
    fprintf(f, "usage: lcmon ctl SOCKET COMMAND\n"
               "\n"
               "  anchor get            print the anchor and the chunks counted since it\n"
               "  anchor set KEY        set the anchor (the count is kept)\n"
               "  anchor reset          anchor at the newest chunk; print the new anchor\n"
               "                        and the number of chunks counted before the reset\n"
               "  pause STAGE | resume STAGE\n"
               "  stop | start          stop the pipeline; build it anew and start it\n"
               "  reload                read the configuration file again and check it as\n"
               "                        --check-config does; when all is well, restart the\n"
               "                        pipeline with it (the anchor and the pipe's reader are\n"
               "                        kept) and print what was loaded; else change nothing,\n"
               "                        print every problem and exit 1\n"
               "  status                the run: state, run id, seed, uptime, rank, the\n"
               "                        loader's version and pid and its configuration file,\n"
               "                        one KEY VALUE line each\n"
               "  metrics [--json]      the last second and all-time metrics\n"
               "  stages                the loader's pipeline: its version and pid, then one\n"
               "                        line per stage: NAME TYPE INPUT QUEUE CAPACITY ITEM\n"
               "\n"
               "Anchor commands print one line: KEY<TAB>COUNT.\n"
               "Exit status: 0 done, 1 refused by the loader, 2 usage, 3 cannot connect.\n");
}

static void print_metrics_text(const Lcmon__DataLoaderMetricsProto *last,
                               const Lcmon__DataLoaderMetricsProto *all)
{
    char line[2048];
    lc_status_line(last, line, sizeof line);
    printf("%s\n", line);
    printf("uptime %.1f s, rank %u of %u\n", all->uptime_seconds, all->rank, all->world_size);
    if (all->error)
        printf("error: %s\n", all->error);
    if (all->monitor_socket)
        printf("monitor socket: %u clients, %llu connections, %llu refused (every place "
               "taken), %llu closed (misbehaving, idle, or to make room)\n",
               all->monitor_socket->clients, (unsigned long long)all->monitor_socket->connections,
               (unsigned long long)all->monitor_socket->refused,
               (unsigned long long)all->monitor_socket->closed);
    for (size_t i = 0; i < all->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = all->stage_metrics[i];
        const Lcmon__StageMetricProto *l = lc_proto_find_stage(last, s->name);
        printf("%-12s %-24s %-8s out %llu (%.0f/s)", s->name, s->stage_type,
               lc_stage_state_name(s->state), (unsigned long long)s->items_out,
               l && last->duration_seconds > 0 ? (double)l->items_out / last->duration_seconds
                                               : 0.0);
        uint64_t bad = lc_proto_bad_input(s), dropped = lc_proto_dropped(s);
        if (bad)
            printf(" bad %llu", (unsigned long long)bad);
        if (dropped)
            printf(" dropped %llu", (unsigned long long)dropped);
        printf("\n");
        for (size_t k = 0; k < s->n_count_metrics; k++)
            if (s->count_metrics[k]->count)
                printf("    %s %llu\n", s->count_metrics[k]->name,
                       (unsigned long long)s->count_metrics[k]->count);
        for (size_t k = 0; k < s->n_gauge_metrics; k++) {
            const Lcmon__GaugeMetricProto *g = s->gauge_metrics[k];
            if (g->has_capacity)
                printf("    %s %lld/%lld\n", g->name, (long long)g->value,
                       (long long)g->capacity);
            else
                printf("    %s %lld\n", g->name, (long long)g->value);
        }
        for (size_t k = 0; k < s->n_text_metrics; k++)
            printf("    %s '%s'\n", s->text_metrics[k]->name,
                   s->text_metrics[k]->value ? s->text_metrics[k]->value : "");
    }
}

/* Lines of text, each as "lcmon ctl: LINE". */
static void print_lines(FILE *f, const char *text)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(f, "lcmon ctl: %.*s\n", n, p);
        p += n + (nl ? 1 : 0);
    }
}

/* The hello: what the loader runs. Absent fields print as "-". */
static void print_stages(const Lcmon__Hello *h)
{
    printf("lcmon %s, pid %u, protocol %u\n", h->lcmon_version ? h->lcmon_version : "-", h->pid,
           h->protocol_version);
    for (size_t i = 0; i < h->n_stages; i++) {
        const Lcmon__StageDescription *d = h->stages[i];
        char cap[24] = "-";
        if (d->has_queue_capacity)
            snprintf(cap, sizeof cap, "%llu", (unsigned long long)d->queue_capacity);
        printf("%s\t%s\t%s\t%s\t%s\t%s\n", d->name ? d->name : "-",
               d->stage_type ? d->stage_type : "-", d->input && d->input[0] ? d->input : "-",
               d->queue_name ? d->queue_name : "-", cap, d->item_type ? d->item_type : "-");
    }
}

int lc_ctl_main(int argc, char **argv)
{
    if (argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        ctl_usage(stdout);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "lcmon ctl: usage: lcmon ctl SOCKET COMMAND (lcmon ctl --help lists the "
                        "commands)\n");
        return 2;
    }
    const char *path = argv[0];
    const char *cmd = argv[1];
    int nargs = argc - 2;
    char **args = argv + 2;
    bool ok_usage = (strcmp(cmd, "anchor") == 0 && nargs >= 1 &&
                     ((strcmp(args[0], "get") == 0 && nargs == 1) ||
                      (strcmp(args[0], "reset") == 0 && nargs == 1) ||
                      (strcmp(args[0], "set") == 0 && nargs == 2))) ||
                    ((strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0) && nargs == 1) ||
                    ((strcmp(cmd, "stop") == 0 || strcmp(cmd, "start") == 0) && nargs == 0) ||
                    (strcmp(cmd, "reload") == 0 && nargs == 0) ||
                    (strcmp(cmd, "stages") == 0 && nargs == 0) ||
                    (strcmp(cmd, "status") == 0 && nargs == 0) ||
                    (strcmp(cmd, "metrics") == 0 &&
                     (nargs == 0 || (nargs == 1 && strcmp(args[0], "--json") == 0)));
    if (!ok_usage) {
        fprintf(stderr,
                "lcmon ctl: '%s': unknown command or wrong arguments (commands: anchor get, "
                "anchor set KEY, anchor reset, pause STAGE, resume STAGE, stop, start, reload, "
                "status, metrics [--json], stages; lcmon ctl --help says more)\n",
                cmd);
        return 2;
    }
    bool status_cmd = strcmp(cmd, "status") == 0;
    bool metrics = strcmp(cmd, "metrics") == 0 || status_cmd;
    lc_monitor *m = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_monitor_remote_new(path, metrics ? 100 : 0, false, &m, &err) != 0) {
        fprintf(stderr, "lcmon ctl: %s\n", err.msg);
        return 3;
    }
    int status = 0;
    if (strcmp(cmd, "stages") == 0) {
        print_stages(lc_monitor_remote_hello(m));
    } else if (metrics) {
        lc_snapshot *last_snap = NULL, *all_snap = NULL;
        if (lc_monitor_remote_wait_snapshot(m, 10)) {
            last_snap = lc_monitor_metrics(m, false);
            all_snap = lc_monitor_metrics(m, true);
        }
        const Lcmon__DataLoaderMetricsProto *last = last_snap ? lc_snapshot_msg(last_snap) : NULL;
        const Lcmon__DataLoaderMetricsProto *all = all_snap ? lc_snapshot_msg(all_snap) : NULL;
        if (!last || !all) {
            fprintf(stderr, "lcmon ctl: %s: no metrics from the loader\n", path);
            status = 3;
        } else if (status_cmd) {
            const Lcmon__Hello *h = lc_monitor_remote_hello(m);
            const ProtobufCEnumValue *st =
                protobuf_c_enum_descriptor_get_value(&lcmon__pipeline_state__descriptor, all->state);
            printf("state %s\nrun %016llx\nseed %llu\nuptime %.1f\nrank %u of %u\n"
                   "lcmon %s\npid %u\nconfig %s\n",
                   st ? st->name : "?", (unsigned long long)all->run_id,
                   (unsigned long long)all->seed, all->uptime_seconds, all->rank,
                   all->world_size, h && h->lcmon_version ? h->lcmon_version : "-",
                   h ? h->pid : 0, h && h->config ? h->config : "(built-in default)");
            if (all->error)
                printf("error %s\n", all->error);
        } else if (nargs == 1) {
            lc_wire_buf out = {0};
            lc_wire_buf_append(&out, "{\"last_second\":", 15);
            lc_json_message(&out, &last->base);
            lc_wire_buf_append(&out, ",\"all_time\":", 12);
            lc_json_message(&out, &all->base);
            lc_wire_buf_append(&out, "}\n", 2);
            fwrite(out.data, 1, out.len, stdout);
            lc_wire_buf_fini(&out);
        } else {
            print_metrics_text(last, all);
        }
        lc_snapshot_unref(last_snap);
        lc_snapshot_unref(all_snap);
    } else if (strcmp(cmd, "anchor") == 0) {
        char *anchor = NULL;
        int64_t count = 0;
        const char *set = strcmp(args[0], "set") == 0 ? args[1] : NULL;
        bool reset = strcmp(args[0], "reset") == 0;
        if (lc_monitor_anchor(m, set, reset, &anchor, &count, &err) != 0) {
            fprintf(stderr, "lcmon ctl: %s\n", err.msg);
            status = 1;
        } else {
            printf("%s\t%lld\n", anchor ? anchor : "", (long long)count);
        }
        free(anchor);
    } else if (strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0) {
        if (lc_monitor_pause(m, args[0], strcmp(cmd, "pause") == 0, &err) != 0) {
            fprintf(stderr, "lcmon ctl: %s\n", err.msg);
            status = 1;
        }
    } else if (strcmp(cmd, "reload") == 0) {
        char *said = NULL;
        if (lc_monitor_reload(m, &said, &err) != 0) {
            print_lines(stderr, err.msg);
            status = 1;
        } else {
            printf("%s\n", said ? said : "reloaded");
        }
        free(said);
    } else {
        if (lc_monitor_pipeline(m, strcmp(cmd, "start") == 0, &err) != 0) {
            fprintf(stderr, "lcmon ctl: %s\n", err.msg);
            status = 1;
        }
    }
    lc_monitor_free(m);
    return status;
}
