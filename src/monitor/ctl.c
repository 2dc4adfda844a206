/*
 * ctl: `lcmon ctl SOCKET COMMAND ...`, the scriptable client of a running
 * loader. Exit status: 0 done, 1 the loader refused (no such stage, ...),
 * 2 usage, 3 cannot reach the loader.
 */
#include "monitor/ctl.h"

#include "monitor/json.h"
#include "monitor/remote.h"
#include "monitor/snapshot.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        const Lcmon__StageMetricProto *l = lc_snapshot_find_stage(last, s->name);
        printf("%-12s %-24s %-8s out %llu (%.0f/s)", s->name, s->stage_type,
               lc_stage_state_name(s->state), (unsigned long long)s->items_out,
               l && last->duration_seconds > 0 ? (double)l->items_out / last->duration_seconds
                                               : 0.0);
        uint64_t bad = lc_snapshot_bad_input(s), dropped = lc_snapshot_dropped(s);
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
                printf("    %s %lld/%lld\n", g->name, (long long)g->value, (long long)g->capacity);
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

/* One command: its words, the arguments after them, its help, and what it
 * does with a monitor connected to the loader (returns the exit status). */
typedef struct ctl_command {
    const char *words; /* "anchor set" */
    const char *args;  /* "KEY", "[--json]", "" */
    int min_args, max_args;
    bool metrics;     /* needs snapshots */
    const char *help; /* lines joined by '\n' */
    int (*run)(lc_monitor *m, const char *path, char **args, int nargs);
} ctl_command;

static int refused(const lc_error *err)
{
    fprintf(stderr, "lcmon ctl: %s\n", err->msg);
    return 1;
}

static int anchor_command(lc_monitor *m, const char *set, bool reset)
{
    char *anchor = NULL;
    int64_t count = 0;
    lc_error err;
    lc_error_clear(&err);
    int status = 0;
    if (lc_monitor_anchor(m, set, reset, &anchor, &count, &err) != 0)
        status = refused(&err);
    else
        printf("%s\t%lld\n", anchor ? anchor : "", (long long)count);
    free(anchor);
    return status;
}

static int run_anchor_get(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)path, (void)args, (void)nargs;
    return anchor_command(m, NULL, false);
}

static int run_anchor_set(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)path, (void)nargs;
    return anchor_command(m, args[0], false);
}

static int run_anchor_reset(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)path, (void)args, (void)nargs;
    return anchor_command(m, NULL, true);
}

static int pause_command(lc_monitor *m, const char *stage, bool pause)
{
    lc_error err;
    lc_error_clear(&err);
    return lc_monitor_pause(m, stage, pause, &err) != 0 ? refused(&err) : 0;
}

static int run_pause(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)path, (void)nargs;
    return pause_command(m, args[0], true);
}

static int run_resume(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)path, (void)nargs;
    return pause_command(m, args[0], false);
}

static int pipeline_command(lc_monitor *m, bool start)
{
    lc_error err;
    lc_error_clear(&err);
    return lc_monitor_pipeline(m, start, &err) != 0 ? refused(&err) : 0;
}

static int run_stop(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)path, (void)args, (void)nargs;
    return pipeline_command(m, false);
}

static int run_start(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)path, (void)args, (void)nargs;
    return pipeline_command(m, true);
}

static int run_reload(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)path, (void)args, (void)nargs;
    char *said = NULL;
    lc_error err;
    lc_error_clear(&err);
    int status = 0;
    if (lc_monitor_reload(m, &said, &err) != 0) {
        print_lines(stderr, err.msg);
        status = 1;
    } else {
        printf("%s\n", said ? said : "reloaded");
    }
    free(said);
    return status;
}

static int run_stages(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)path, (void)args, (void)nargs;
    print_stages(lc_monitor_remote_hello(m));
    return 0;
}

/* The last second's and all-time snapshots (3 when none came). */
static int with_snapshots(lc_monitor *m, const char *path,
                          void (*show)(lc_monitor *m, const Lcmon__DataLoaderMetricsProto *last,
                                       const Lcmon__DataLoaderMetricsProto *all, bool json),
                          bool json)
{
    lc_snapshot *last_snap = NULL, *all_snap = NULL;
    if (lc_monitor_remote_wait_snapshot(m, 10)) {
        last_snap = lc_monitor_metrics(m, false);
        all_snap = lc_monitor_metrics(m, true);
    }
    const Lcmon__DataLoaderMetricsProto *last = last_snap ? lc_snapshot_msg(last_snap) : NULL;
    const Lcmon__DataLoaderMetricsProto *all = all_snap ? lc_snapshot_msg(all_snap) : NULL;
    int status = 0;
    if (!last || !all) {
        fprintf(stderr, "lcmon ctl: %s: no metrics from the loader\n", path);
        status = 3;
    } else {
        show(m, last, all, json);
    }
    lc_snapshot_unref(last_snap);
    lc_snapshot_unref(all_snap);
    return status;
}

static void show_status(lc_monitor *m, const Lcmon__DataLoaderMetricsProto *last,
                        const Lcmon__DataLoaderMetricsProto *all, bool json)
{
    (void)last, (void)json;
    const Lcmon__Hello *h = lc_monitor_remote_hello(m);
    const ProtobufCEnumValue *st =
        protobuf_c_enum_descriptor_get_value(&lcmon__pipeline_state__descriptor, all->state);
    printf("state %s\nrun %016llx\nseed %llu\nuptime %.1f\nrank %u of %u\n"
           "lcmon %s\npid %u\nconfig %s\n",
           st ? st->name : "?", (unsigned long long)all->run_id, (unsigned long long)all->seed,
           all->uptime_seconds, all->rank, all->world_size,
           h && h->lcmon_version ? h->lcmon_version : "-", h ? h->pid : 0,
           h && h->config ? h->config : "(built-in default)");
    if (all->error)
        printf("error %s\n", all->error);
}

static void show_metrics(lc_monitor *m, const Lcmon__DataLoaderMetricsProto *last,
                         const Lcmon__DataLoaderMetricsProto *all, bool json)
{
    (void)m;
    if (!json) {
        print_metrics_text(last, all);
        return;
    }
    lc_wire_buf out = {0};
    lc_wire_buf_append(&out, "{\"last_second\":", 15);
    lc_json_message(&out, &last->base);
    lc_wire_buf_append(&out, ",\"all_time\":", 12);
    lc_json_message(&out, &all->base);
    lc_wire_buf_append(&out, "}\n", 2);
    fwrite(out.data, 1, out.len, stdout);
    lc_wire_buf_fini(&out);
}

static int run_status(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)args, (void)nargs;
    return with_snapshots(m, path, show_status, false);
}

static int run_metrics(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)args;
    return with_snapshots(m, path, show_metrics, nargs == 1);
}

/* The commands, in the order `lcmon ctl help` lists them. */
static const ctl_command ctl_commands[] = {
    {"anchor get", "", 0, 0, false, "print the anchor and the chunks counted since it",
     run_anchor_get},
    {"anchor set", "KEY", 1, 1, false, "set the anchor (the count is kept)", run_anchor_set},
    {"anchor reset", "", 0, 0, false,
     "anchor at the newest chunk; print the new anchor\n"
     "and the number of chunks counted before the reset",
     run_anchor_reset},
    {"pause", "STAGE", 1, 1, false, "pause the stage (the queues before it fill up)", run_pause},
    {"resume", "STAGE", 1, 1, false, "let a paused stage run again", run_resume},
    {"stop", "", 0, 0, false, "stop the pipeline", run_stop},
    {"start", "", 0, 0, false, "build the pipeline anew and start it", run_start},
    {"reload", "", 0, 0, false,
     "read the configuration file again and check it as\n"
     "--check-config does; when all is well, restart the\n"
     "pipeline with it (the anchor and the pipe's reader are\n"
     "kept) and print what was loaded; else change nothing,\n"
     "print every problem and exit 1",
     run_reload},
    {"status", "", 0, 0, true,
     "the run: state, run id, seed, uptime, rank, the\n"
     "loader's version and pid and its configuration file,\n"
     "one KEY VALUE line each",
     run_status},
    {"metrics", "[--json]", 0, 1, true, "the last second and all-time metrics", run_metrics},
    {"stages", "", 0, 0, false,
     "the loader's pipeline: its version and pid, then one\n"
     "line per stage: NAME TYPE INPUT QUEUE CAPACITY ITEM",
     run_stages},
};
#define N_CTL_COMMANDS (sizeof ctl_commands / sizeof *ctl_commands)

static void ctl_usage(FILE *f)
{
    fprintf(f, "usage: lcmon ctl SOCKET COMMAND\n       lcmon ctl help\n\n");
    for (size_t i = 0; i < N_CTL_COMMANDS; i++) {
        const ctl_command *c = &ctl_commands[i];
        char head[40];
        snprintf(head, sizeof head, "%s%s%s", c->words, c->args[0] ? " " : "", c->args);
        const char *line = c->help;
        bool first = true;
        while (*line) {
            const char *nl = strchr(line, '\n');
            int n = nl ? (int)(nl - line) : (int)strlen(line);
            fprintf(f, "  %-20s  %.*s\n", first ? head : "", n, line);
            first = false;
            line += n + (nl ? 1 : 0);
        }
    }
    fprintf(f, "\nAnchor commands print one line: KEY<TAB>COUNT.\n"
               "Exit status: 0 done, 1 refused by the loader, 2 usage, 3 cannot connect.\n");
}

/* The command argv names: its words match and its argument count fits. */
static const ctl_command *find_command(char **argv, int argc, int *used)
{
    for (size_t i = 0; i < N_CTL_COMMANDS; i++) {
        const ctl_command *c = &ctl_commands[i];
        int k = 0;
        const char *w = c->words;
        while (*w && k < argc) {
            size_t len = strcspn(w, " ");
            if (strlen(argv[k]) != len || strncmp(argv[k], w, len) != 0)
                break;
            k++;
            w += len + (w[len] == ' ');
        }
        int nargs = argc - k;
        /* An option ("[--json]") is that word or nothing. */
        bool option_ok = true;
        if (c->args[0] == '[' && c->args[1] == '-' && nargs == 1) {
            size_t len = strlen(c->args) - 2;
            option_ok = strlen(argv[k]) == len && strncmp(argv[k], c->args + 1, len) == 0;
        }
        if (!*w && option_ok && nargs >= c->min_args && nargs <= c->max_args) {
            *used = k;
            return c;
        }
    }
    return NULL;
}

int lc_ctl_main(int argc, char **argv)
{
    if (argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0 ||
                      strcmp(argv[0], "help") == 0)) {
        ctl_usage(stdout);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "lcmon ctl: usage: lcmon ctl SOCKET COMMAND (lcmon ctl help lists the "
                        "commands)\n");
        return 2;
    }
    const char *path = argv[0];
    int used = 0;
    const ctl_command *c = find_command(argv + 1, argc - 1, &used);
    if (!c) {
        char list[512] = "";
        size_t len = 0;
        for (size_t i = 0; i < N_CTL_COMMANDS && len < sizeof list; i++) {
            int n = snprintf(list + len, sizeof list - len, "%s%s%s%s", i ? ", " : "",
                             ctl_commands[i].words, ctl_commands[i].args[0] ? " " : "",
                             ctl_commands[i].args);
            if (n > 0)
                len += (size_t)n;
        }
        fprintf(stderr,
                "lcmon ctl: '%s': unknown command or wrong arguments (commands: %s; lcmon ctl "
                "help says more)\n",
                argv[1], list);
        return 2;
    }
    lc_monitor *m = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_monitor_remote_new(path, c->metrics ? 100 : 0, false, &m, &err) != 0) {
        fprintf(stderr, "lcmon ctl: %s\n", err.msg);
        return 3;
    }
    int status = c->run(m, path, argv + 1 + used, argc - 1 - used);
    lc_monitor_free(m);
    return status;
}
