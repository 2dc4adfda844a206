/*
 * ctl: `lcmon ctl SOCKET COMMAND ...`, the scriptable client of a running
 * loader. Exit status: 0 done, 1 the loader refused (no such stage, ...),
 * 2 usage, 3 cannot reach the loader.
 *
 * Besides its own few commands (status, metrics, stages, help: what it
 * shows of the snapshots and the hello), ctl runs any command of the
 * loader's tables by name (core/command.h): it knows them from the hello
 * (their arguments, which stages have them), and this build's from the
 * catalogue (monitor/local.h), which decides before connecting whether a
 * word is a command at all and which `lcmon ctl help` prints. A new
 * command of a stage class needs nothing here.
 */
#include "app/ctl.h"

#include "app/json.h"
#include "monitor/local.h"
#include "monitor/remote.h"
#include "monitor/snapshot.h"

#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A gauge's values over the window, when it had several: "(min 3, max 12,
 * mean 7.5)". */
static void print_gauge_values(const Lcmon__GaugeMetricProto *g)
{
    const Lcmon__StatisticsProtoInt64 *v = g->values;
    if (v && v->count > 1 && v->has_min && v->has_max && v->min != v->max)
        printf(" (min %lld, max %lld, mean %.4g)", (long long)v->min, (long long)v->max,
               (double)v->sum / (double)v->count);
}

/* A stage's statistics: "    chunk_weight min 0.5 max 3 mean 1.2 weight (812 values)". */
static void print_statistics(const Lcmon__StageMetricProto *s)
{
    for (size_t k = 0; k < s->n_statistics_metrics; k++) {
        const Lcmon__StatisticsMetricProto *st = s->statistics_metrics[k];
        const Lcmon__StatisticsProtoDouble *v = st->stats;
        if (!v || !v->count)
            continue;
        printf("    %s min %.6g max %.6g mean %.6g%s%s (%llu values)\n", st->name, v->min, v->max,
               v->sum / (double)v->count, st->unit ? " " : "", st->unit ? st->unit : "",
               (unsigned long long)v->count);
    }
}

/* One window's stages: what each made in it and at what rate, its counts
 * (rates), gauges (newest value, and their range over the window) and
 * statistics. */
static void print_window_text(const Lcmon__DataLoaderMetricsProto *w, const char *name)
{
    double d = w->duration_seconds;
    char line[2048];
    lc_status_line(w, line, sizeof line);
    printf("%s\nwindow %s: %.1f s\n", line, name, d);
    for (size_t i = 0; i < w->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = w->stage_metrics[i];
        printf("%-12s %-24s %-8s out %llu (%.0f/s)\n", s->name, s->stage_type,
               lc_stage_state_name(s->state), (unsigned long long)s->items_out,
               d > 0 ? (double)s->items_out / d : 0.0);
        for (size_t k = 0; k < s->n_count_metrics; k++)
            if (s->count_metrics[k]->count)
                printf("    %s %llu (%.4g/s)\n", s->count_metrics[k]->name,
                       (unsigned long long)s->count_metrics[k]->count,
                       d > 0 ? (double)s->count_metrics[k]->count / d : 0.0);
        for (size_t k = 0; k < s->n_gauge_metrics; k++) {
            const Lcmon__GaugeMetricProto *g = s->gauge_metrics[k];
            printf("    %s %lld", g->name, (long long)g->value);
            if (g->has_capacity)
                printf("/%lld", (long long)g->capacity);
            print_gauge_values(g);
            printf("\n");
        }
        print_statistics(s);
    }
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
        print_statistics(s);
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

/* One of ctl's own commands (what it does with what the loader sends: its
 * snapshots, its hello): its words, the arguments after them, its help,
 * and what it does with a monitor connected to the loader (returns the
 * exit status). The loader's commands come from its tables (the hello). */
typedef struct ctl_command {
    const char *words; /* "metrics" */
    const char *args;  /* "[--json]", "" */
    int min_args, max_args;
    bool metrics;     /* needs snapshots */
    const char *help; /* lines joined by '\n' */
    int (*run)(lc_monitor *m, const char *path, char **args, int nargs);
    /* Its own options' check, before connecting: 0, or 2 (said). NULL: its
     * args are one option word or nothing. */
    int (*check)(char **args, int nargs);
} ctl_command;

static int run_stages(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)path, (void)args, (void)nargs;
    print_stages(lc_monitor_remote_hello(m));
    return 0;
}

/* What ctl shows of the snapshots: as JSON or text, and which window
 * besides the last second and all time (-1: none). */
typedef struct ctl_show {
    bool json;
    int window;
} ctl_show;

typedef void (*show_fn)(lc_monitor *m, const Lcmon__DataLoaderMetricsProto *last,
                        const Lcmon__DataLoaderMetricsProto *all,
                        const Lcmon__DataLoaderMetricsProto *win, const ctl_show *how);

/* The last second's and all-time snapshots, and the window's when one is
 * asked for (3 when none came). */
static int with_snapshots(lc_monitor *m, const char *path, show_fn show, const ctl_show *how)
{
    lc_snapshot *last_snap = NULL, *all_snap = NULL, *win_snap = NULL;
    bool ok = lc_monitor_remote_wait_snapshot(m, 10);
    if (ok && how->window >= 0)
        ok = lc_monitor_remote_wait_window(m, (lc_window)how->window, 10);
    if (ok) {
        last_snap = lc_monitor_metrics(m, false);
        all_snap = lc_monitor_metrics(m, true);
        win_snap = how->window >= 0 ? lc_monitor_window(m, (lc_window)how->window) : NULL;
    }
    const Lcmon__DataLoaderMetricsProto *last = last_snap ? lc_snapshot_msg(last_snap) : NULL;
    const Lcmon__DataLoaderMetricsProto *all = all_snap ? lc_snapshot_msg(all_snap) : NULL;
    const Lcmon__DataLoaderMetricsProto *win = win_snap ? lc_snapshot_msg(win_snap) : NULL;
    int status = 0;
    if (lc_monitor_remote_refused(m)) {
        fprintf(stderr, "lcmon ctl: %s: the loader refused this connection: %s\n", path,
                lc_monitor_remote_refused(m));
        status = 3;
    } else if (!last || !all || (how->window >= 0 && !win)) {
        fprintf(stderr, "lcmon ctl: %s: no %smetrics from the loader%s\n", path,
                how->window >= 0 && last ? "windowed " : "",
                how->window >= 0 && last ? " (an lcmon older than windows?)" : "");
        status = 3;
    } else {
        show(m, last, all, win, how);
    }
    lc_snapshot_unref(last_snap);
    lc_snapshot_unref(all_snap);
    lc_snapshot_unref(win_snap);
    return status;
}

static void show_status(lc_monitor *m, const Lcmon__DataLoaderMetricsProto *last,
                        const Lcmon__DataLoaderMetricsProto *all,
                        const Lcmon__DataLoaderMetricsProto *win, const ctl_show *how)
{
    (void)last, (void)win, (void)how;
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
                         const Lcmon__DataLoaderMetricsProto *all,
                         const Lcmon__DataLoaderMetricsProto *win, const ctl_show *how)
{
    (void)m;
    if (!how->json && win) {
        print_window_text(win, lc_window_name((lc_window)how->window));
        return;
    }
    if (!how->json) {
        print_metrics_text(last, all);
        return;
    }
    lc_wire_buf out = {0};
    lc_wire_buf_append(&out, "{\"last_second\":", 15);
    lc_json_message(&out, &last->base);
    lc_wire_buf_append(&out, ",\"all_time\":", 12);
    lc_json_message(&out, &all->base);
    if (win) {
        lc_wire_buf_append(&out, ",\"window\":", 10);
        lc_json_message(&out, &win->base);
    }
    lc_wire_buf_append(&out, "}\n", 2);
    fwrite(out.data, 1, out.len, stdout);
    lc_wire_buf_fini(&out);
}

static int run_status(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)args, (void)nargs;
    ctl_show how = {.json = false, .window = -1};
    return with_snapshots(m, path, show_status, &how);
}

/* metrics' options: --json, --window NAME (or --window=NAME). 0, or 2
 * with the problem said. */
static int metrics_options(char **args, int nargs, ctl_show *how)
{
    *how = (ctl_show){.json = false, .window = -1};
    for (int k = 0; k < nargs; k++) {
        const char *name = NULL;
        lc_window w;
        if (strcmp(args[k], "--json") == 0 && !how->json) {
            how->json = true;
            continue;
        }
        if (strcmp(args[k], "--window") == 0 && k + 1 < nargs)
            name = args[++k];
        else if (strncmp(args[k], "--window=", 9) == 0)
            name = args[k] + 9;
        if (!name || how->window >= 0) {
            fprintf(stderr, "lcmon ctl: metrics: '%s': takes [--window NAME] [--json]\n", args[k]);
            return 2;
        }
        if (!lc_window_parse(name, &w)) {
            fprintf(stderr, "lcmon ctl: metrics --window '%s': no such window (the windows: %s)\n",
                    name, LC_WINDOW_NAMES);
            return 2;
        }
        how->window = (int)w;
    }
    return 0;
}

static int check_metrics(char **args, int nargs)
{
    ctl_show how;
    return metrics_options(args, nargs, &how);
}

static int run_metrics(lc_monitor *m, const char *path, char **args, int nargs)
{
    ctl_show how;
    int status = metrics_options(args, nargs, &how);
    return status ? status : with_snapshots(m, path, show_metrics, &how);
}

static void print_help(FILE *f, const Lcmon__Hello *h, bool catalog);

static int run_help(lc_monitor *m, const char *path, char **args, int nargs)
{
    (void)path, (void)args, (void)nargs;
    print_help(stdout, lc_monitor_remote_hello(m), false);
    return 0;
}

/* ctl's own commands, in the order `lcmon ctl help` lists them. */
static const ctl_command ctl_commands[] = {
    {"status", "", 0, 0, true,
     "the run: state, run id, seed, uptime, rank, the\n"
     "loader's version and pid and its configuration file,\n"
     "one KEY VALUE line each",
     run_status},
    {"metrics", "[--window W] [--json]", 0, 3, true,
     "the last second and all-time metrics; --window W:\n"
     "those of window W (" LC_WINDOW_NAMES "):\n"
     "counts and rates over it, gauges with their range,\n"
     "statistics (JSON: its snapshot as \"window\")",
     run_metrics, check_metrics},
    {"stages", "", 0, 0, false,
     "the loader's pipeline: its version and pid, then one\n"
     "line per stage: NAME TYPE INPUT QUEUE CAPACITY ITEM",
     run_stages},
    {"help", "", 0, 0, false,
     "the commands of the loader on SOCKET (its own and its\n"
     "stages', from its hello), as below",
     run_help},
};
#define N_CTL_COMMANDS (sizeof ctl_commands / sizeof *ctl_commands)

/* The older spellings of the anchor commands, kept working. */
static const char *const spellings[][2] = {
    {"anchor get", "anchor-get"},
    {"anchor set", "anchor-set"},
    {"anchor reset", "anchor-reset"},
};
#define N_SPELLINGS (sizeof spellings / sizeof *spellings)

/* One line of the help: head, then each line of help below the first. */
static void help_line(FILE *f, const char *head, const char *help)
{
    bool first = true;
    for (const char *line = help ? help : ""; *line || first;) {
        const char *nl = strchr(line, '\n');
        int n = nl ? (int)(nl - line) : (int)strlen(line);
        fprintf(f, "  %-20s  %.*s\n", first ? head : "", n, line);
        first = false;
        line += n + (nl ? 1 : 0);
    }
}

/* A command's head: "anchor-set KEY", "pause STAGE". */
static void command_head(const Lcmon__CommandDescription *c, char *head, size_t size)
{
    const char *args = c->args ? c->args : "";
    snprintf(head, size, "%s%s%s%s", c->name, c->one_stage ? " STAGE" : "", args[0] ? " " : "",
             args);
}

/* The first description of command `name` in the hello's stages (from
 * `from` on), or NULL; *stage gets the stage's. */
static const Lcmon__CommandDescription *stage_command(const Lcmon__Hello *h, const char *name,
                                                      size_t from, size_t *stage)
{
    for (size_t i = from; h && i < h->n_stages; i++)
        for (size_t k = 0; k < h->stages[i]->n_commands; k++)
            if (h->stages[i]->commands[k]->name &&
                strcmp(h->stages[i]->commands[k]->name, name) == 0) {
                *stage = i;
                return h->stages[i]->commands[k];
            }
    return NULL;
}

/* The stages' commands, each once: those every stage has (pause) when
 * `every`, else the others, with the stages that have them. */
static void print_stage_commands(FILE *f, const Lcmon__Hello *h, bool every)
{
    for (size_t i = 0; i < h->n_stages; i++)
        for (size_t k = 0; k < h->stages[i]->n_commands; k++) {
            const Lcmon__CommandDescription *c = h->stages[i]->commands[k];
            size_t first, j, n = 0;
            if (!c->name || (stage_command(h, c->name, 0, &first) && first < i))
                continue; /* listed already */
            char who[256] = "(";
            for (j = i; stage_command(h, c->name, j, &j); j++, n++)
                snprintf(who + strlen(who), sizeof who - strlen(who), "%s%s", n ? ", " : "",
                         h->stages[j]->name);
            if ((n == h->n_stages) != every)
                continue;
            char head[64];
            command_head(c, head, sizeof head);
            help_line(f, head, c->help);
            if (!every)
                fprintf(f, "  %-20s  %s)\n", "", who);
        }
}

/* The help: ctl's own commands, then the loader's and its stages' from a
 * hello: the loader's on SOCKET, or (catalog) every stage type's. */
static void print_help(FILE *f, const Lcmon__Hello *h, bool catalog)
{
    fprintf(f, "usage: lcmon ctl SOCKET COMMAND [--stage NAME] [ARGS]\n"
               "       lcmon ctl [SOCKET] help\n\n");
    for (size_t i = 0; i < N_CTL_COMMANDS; i++) {
        char head[40];
        const ctl_command *c = &ctl_commands[i];
        snprintf(head, sizeof head, "%s%s%s", c->words, c->args[0] ? " " : "", c->args);
        help_line(f, head, c->help);
    }
    fprintf(f, "\nThe loader's commands:\n");
    for (size_t i = 0; h && i < h->n_commands; i++) {
        char head[64];
        command_head(h->commands[i], head, sizeof head);
        help_line(f, head, h->commands[i]->help);
    }
    fprintf(f, "\nEvery stage's (STAGE names the stage):\n");
    print_stage_commands(f, h, true);
    fprintf(f, "\n%s (--stage NAME: that stage only; else each that has it):\n",
            catalog ? "A stage type's" : "A stage's");
    print_stage_commands(f, h, false);
    fprintf(f,
            "\nThe anchor commands may also be spelled anchor get, anchor set KEY, anchor reset.\n"
            "A stage's command prints a line for each stage that ran it: the values\n"
            "of its answer, tab-separated (anchor commands: KEY<TAB>COUNT).\n"
            "Exit status: 0 done, 1 refused by the loader, 2 usage, 3 cannot connect.\n");
}

/* Without a loader: what this build's loader answers. */
static void print_catalog_help(FILE *f)
{
    Lcmon__Hello *h = lc_monitor_local_catalog();
    print_help(f, h, true);
    lcmon__hello__free_unpacked(h, NULL);
}

/* The own command argv names: its words match and its argument count fits. */
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
        if (!c->check && c->args[0] == '[' && c->args[1] == '-' && nargs == 1) {
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

/* A loader's command as ctl was given it: the name (an older spelling
 * turned into it), --stage NAME, the arguments. */
typedef struct loader_call {
    const char *name, *stage;
    const char *args[LC_COMMAND_MAX_ARGS + 1];
    unsigned argc;
} loader_call;

/* Parse argv as a loader's command: false when it is not one (too many
 * arguments, a --stage without a name). */
static bool parse_call(char **argv, int argc, loader_call *call)
{
    *call = (loader_call){.name = argv[0]};
    int k = 1;
    for (size_t i = 0; i < N_SPELLINGS && argc > 1; i++) {
        size_t len = strcspn(spellings[i][0], " ");
        if (strncmp(argv[0], spellings[i][0], len) == 0 && !argv[0][len] &&
            strcmp(argv[1], spellings[i][0] + len + 1) == 0) {
            call->name = spellings[i][1];
            k = 2;
        }
    }
    for (; k < argc; k++) {
        if (strcmp(argv[k], "--stage") == 0 && k + 1 < argc && !call->stage)
            call->stage = argv[++k];
        else if (strncmp(argv[k], "--stage=", 8) == 0 && argv[k][8] && !call->stage)
            call->stage = argv[k] + 8;
        else if (strncmp(argv[k], "--stage", 7) == 0 || call->argc == LC_COMMAND_MAX_ARGS)
            return false;
        else
            call->args[call->argc++] = argv[k];
    }
    return true;
}

/* The description of the call's command in a hello, or NULL: the loader's
 * own (*loader), else a stage's (its --stage's when given). */
static const Lcmon__CommandDescription *describe_call(const Lcmon__Hello *h,
                                                      const loader_call *call, bool *loader)
{
    *loader = false;
    for (size_t i = 0; h && i < h->n_commands; i++)
        if (h->commands[i]->name && strcmp(h->commands[i]->name, call->name) == 0)
            return *loader = true, h->commands[i];
    size_t at = 0;
    while (h) {
        const Lcmon__CommandDescription *c = stage_command(h, call->name, at, &at);
        if (!c || !call->stage || strcmp(h->stages[at]->name, call->stage) == 0)
            return c;
        at++;
    }
    return NULL;
}

/* "status, metrics [--json], ..., anchor-set KEY": every command there is. */
static void list_commands(char *list, size_t size)
{
    Lcmon__Hello *h = lc_monitor_local_catalog();
    size_t len = 0;
    list[0] = '\0';
    for (size_t i = 0; i < N_CTL_COMMANDS && len < size; i++)
        len += (size_t)snprintf(list + len, size - len, "%s%s%s%s", i ? ", " : "",
                                ctl_commands[i].words, ctl_commands[i].args[0] ? " " : "",
                                ctl_commands[i].args);
    const Lcmon__CommandDescription *all[64];
    size_t n = 0, at;
    for (size_t i = 0; i < h->n_commands && n < 64; i++)
        all[n++] = h->commands[i];
    for (size_t i = 0; i < h->n_stages; i++)
        for (size_t k = 0; k < h->stages[i]->n_commands && n < 64; k++)
            if (stage_command(h, h->stages[i]->commands[k]->name, 0, &at) && at == i)
                all[n++] = h->stages[i]->commands[k];
    for (size_t i = 0; i < n && len < size; i++) {
        char head[64];
        command_head(all[i], head, sizeof head);
        len += (size_t)snprintf(list + len, size - len, ", %s", head);
    }
    lcmon__hello__free_unpacked(h, NULL);
}

static int unknown_command(const char *word)
{
    char list[1024];
    list_commands(list, sizeof list);
    fprintf(stderr,
            "lcmon ctl: '%s': unknown command or wrong arguments (commands: %s; lcmon ctl "
            "help says more)\n",
            word, list);
    return 2;
}

/* Whether this build's loader has the command at all (else a usage error,
 * before connecting). */
static bool known_command(const loader_call *call)
{
    Lcmon__Hello *h = lc_monitor_local_catalog();
    loader_call any = *call;
    any.stage = NULL; /* a stage's name, not its type */
    bool loader;
    bool known = describe_call(h, &any, &loader) != NULL;
    lcmon__hello__free_unpacked(h, NULL);
    return known;
}

/* Check the call against the loader's description of the command: the
 * arguments fit (pause's first is its stage when --stage is not given). 0,
 * or 2 (usage, said). */
static int check_call(const Lcmon__CommandDescription *c, bool loader, loader_call *call)
{
    if (c && c->one_stage && !call->stage && call->argc == c->max_args + 1) {
        call->stage = call->args[0];
        memmove(call->args, call->args + 1, --call->argc * sizeof *call->args);
    }
    char head[64];
    if (c)
        command_head(c, head, sizeof head);
    if (c && c->one_stage && !call->stage) {
        fprintf(stderr, "lcmon ctl: %s is for one stage: lcmon ctl SOCKET %s\n", c->name, head);
        return 2;
    }
    if (c && loader && call->stage) {
        fprintf(stderr, "lcmon ctl: %s is the loader's command: it takes no --stage\n", c->name);
        return 2;
    }
    if (c && (call->argc < c->min_args || call->argc > c->max_args)) {
        fprintf(stderr, "lcmon ctl: %s takes %s: lcmon ctl SOCKET %s%s\n", c->name,
                c->args && c->args[0] ? c->args : "no arguments", head,
                c->one_stage || loader ? "" : " [--stage NAME]");
        return 2;
    }
    return 0;
}

/* Run the loader's command: its message, and a line for each stage's
 * answer (the values of its fields, tab-separated); its refusal on stderr. */
static int run_call(lc_monitor *m, loader_call *call)
{
    bool loader;
    const Lcmon__CommandDescription *c = describe_call(lc_monitor_remote_hello(m), call, &loader);
    int status = check_call(c, loader, call);
    if (status != 0)
        return status;
    lc_command_result res = {0};
    lc_command_request req = {call->name, call->stage, call->argc, call->args};
    if (lc_monitor_command(m, &req, &res) != 0) {
        print_lines(stderr, res.error ? res.error : "refused by the loader");
        status = 1;
    } else {
        if (res.message)
            printf("%s\n", res.message);
        for (size_t i = 0; i < res.n; i++)
            for (size_t k = 0; k < res.replies[i].n_fields; k++)
                printf("%s%s", res.replies[i].fields[k].value,
                       k + 1 < res.replies[i].n_fields ? "\t" : "\n");
    }
    lc_command_result_fini(&res);
    return status;
}

int lc_ctl_main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN); /* a loader that goes away is an error, not a death */
    argc--;                   /* "ctl" */
    argv++;
    if (argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0 ||
                      strcmp(argv[0], "help") == 0)) {
        print_catalog_help(stdout);
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
    loader_call call;
    if (!c && (!parse_call(argv + 1, argc - 1, &call) || !known_command(&call)))
        return unknown_command(argv[1]);
    if (c && c->check) {
        int status = c->check(argv + 1 + used, argc - 1 - used);
        if (status != 0)
            return status;
    }
    lc_monitor *m = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_monitor_remote_new(path, c && c->metrics ? 100 : 0, false, &m, &err) != 0) {
        fprintf(stderr, "lcmon ctl: %s\n", err.msg);
        return 3;
    }
    int status = c ? c->run(m, path, argv + 1 + used, argc - 1 - used) : run_call(m, &call);
    lc_monitor_free(m);
    return status;
}
