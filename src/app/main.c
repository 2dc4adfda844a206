/*
 * lcmon: the program. Its modes (the screen, headless, --check-config, the
 * printing options) and the table of its subcommands (attach here, ctl in
 * ctl.c, convert-config in convert_config.c, chunks in chunks/); the
 * options themselves are read and checked in options.c.
 *
 * Signals are handled in one place: the main thread blocks SIGINT, SIGTERM
 * and SIGHUP before any other thread exists (so every thread inherits the
 * mask) and waits for them with sigtimedwait between status lines. SIGPIPE is
 * ignored process-wide: a reader that goes away is an error return, not a
 * death. The screen also takes SIGWINCH (resize) and SIGTSTP (Ctrl-Z) that
 * way, so they are blocked too when it runs.
 */
#include "core/clock.h"
#include "core/envvars.h"
#include "core/error.h"
#include "core/exit.h"
#include "core/file.h"
#include "core/log.h"
#include "core/text.h"
#include "lc_config.h"
#include "pipeline/config.h"
#include "pipeline/pipeline.h"
#include "monitor/snapshot.h"
#include "app/app.h"
#include "app/convert_config.h"
#include "app/ctl.h"
#include "app/headless.h"
#include "monitor/local.h"
#include "monitor/remote.h"
#include "app/chunks/chunks_tool.h"
#include "app/options.h"
#include "tui/tui.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The default pipeline's data when LCMON_DATA is not set: tests/data under
 * the working directory (a source tree) if it is there, else the sample data
 * installed beside the executable (BINDIR/../DATADIR/lcmon/data, so an
 * installed lcmon finds it from any directory, wherever it was installed). */
static void default_data_dir(void)
{
    const char *env = getenv("LCMON_DATA");
    struct stat st;
    if ((env && *env) || (stat("tests/data", &st) == 0 && S_ISDIR(st.st_mode)))
        return;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = '\0';
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/../%s/lcmon/data", exe, LC_INSTALL_DATADIR);
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        lc_env_supply("LCMON_DATA", dir);
}

/* Misspelt LCMON_* variables, and old names, against every variable lcmon
 * knows and those the configuration at path (NULL: the default) reads. */
static void check_environment(const char *path)
{
    if (!path) {
        lc_env_check(lc_default_config_yaml);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    lc_error err;
    lc_error_clear(&err);
    /* stdin is read once, by the loading itself */
    if (strcmp(path, "-") != 0 && lc_config_read_text(path, &text, &len, &err) == 0) {
        text = lc_xrealloc(text, len + 1);
        text[len] = '\0';
    }
    lc_env_check(text);
    free(text);
}

static int check_config(const char *path)
{
    lc_config *cfg = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_config_load_file(path, &cfg, &err) != 0) {
        app_print_errors(err.msg);
        return 1;
    }
    /* What can be checked on the file system, without starting anything. */
    if (lc_config_preflight(cfg, &err) != 0) {
        app_print_errors(err.msg);
        lc_config_free(cfg);
        return 1;
    }
    printf("%s: valid, %u stages:\n", path, cfg->n_stages);
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        const lc_stage_config *s = &cfg->stages[i];
        printf("  %-16s %-24s", s->name, s->cls->type_name);
        if (s->input)
            printf(" <- %s", s->input);
        for (unsigned r = 0; s->inputs && r < s->n_inputs_given; r++)
            printf("%s%s", r ? ", " : " <- ", s->inputs[r]);
        for (unsigned k = 0; k < s->n_out; k++)
            printf("  [%s%s%s queue %zu, %s]", s->out_names[k] ? s->out_names[k] : "",
                   s->out_names[k] ? ": " : "", s->out_type->name, s->capacity,
                   lc_overflow_name(s->overflow));
        printf("\n");
    }
    lc_config_free(cfg);
    return 0;
}

/* The screen on a loader in this process. Log lines go only to the log
 * pane from before the pipeline's threads start until they are joined, so
 * nothing writes over the screen (and the switch never races a logger). */
static tui_options screen_options(const options *o)
{
    const char *no_color_env = getenv("NO_COLOR");
    tui_options to = {
        .theme = o->theme,
        .no_colour = o->no_color || (no_color_env && no_color_env[0]),
        .ascii = o->ascii,
        .refresh_hz = o->refresh_hz,
        .max_seconds = o->max_seconds,
    };
    return to;
}

static void block_signals(bool screen)
{
    /* Before any thread exists, so that every thread inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    if (screen) {
        sigaddset(&set, SIGWINCH);
        sigaddset(&set, SIGTSTP);
        tui_prepare();
    }
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static int attach_main(int argc, char **argv);

/* lcmon's subcommands, `lcmon NAME ...`, each with its line of --help. */
static const app_subcommand subcommands[] = {
    {"attach", attach_main, "attach SOCKET [screen options]"},
    {"ctl", lc_ctl_main, "ctl SOCKET COMMAND ...   (lcmon ctl help)"},
    {"convert-config", convert_config_main,
     "convert-config FILE      (upstream's loader config as lcmon YAML)"},
    {"chunks", chunks_main,
     "chunks dump|stats|check|rescore|weights  (look at training data:\n"
     "                                      lcmon chunks help)"},
    {0},
};

/* `lcmon attach SOCKET [screen options]`: the screen on a loader in
 * another process. Quitting detaches; the loader runs on. */
static int attach_main(int argc, char **argv)
{
    static const char usage_line[] =
        "usage: lcmon attach SOCKET [--theme NAME] [--no-color] [--ascii] [--refresh HZ]\n";
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("%s\nShows the screen of a headless lcmon (lcmon --no-ui --socket SOCKET) over its\n"
               "socket. Its keys reach the loader; q detaches and leaves the loader running.\n",
               usage_line);
        return 0;
    }
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "lcmon: %s", usage_line);
        return 2;
    }
    const char *path = argv[1];
    options o = {0};
    /* getopt starts after argv[0]: let the socket path stand in for it. */
    int rc = options_parse(argc - 1, argv + 1, &o, subcommands);
    if (rc == 0)
        rc = options_check_mode(&o, true);
    if (rc)
        return rc;
    block_signals(true);
    char msg[256];
    if (tui_check_terminal(msg, sizeof msg) != 0) {
        fprintf(stderr, "lcmon: %s\n", msg);
        return 1;
    }
    lc_monitor *m = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_monitor_remote_new(path, 200, true, &m, &err) != 0) {
        fprintf(stderr, "lcmon attach: %s\n", err.msg);
        return 3;
    }
    lc_monitor_remote_wait_snapshot(m, 5);
    tui_options to = screen_options(&o);
    to.attached = true;
    lc_log_set_stderr(false);
    rc = tui_run(m, &to);
    lc_monitor_free(m);
    lc_log_set_stderr(true);
    return rc;
}

/* The screen on the pipeline cfg describes (its monitor owns cfg; src is
 * where it came from, for reloads); with cfg NULL, the screen shows
 * config_errors (a configuration that did not load) and, unless a reload
 * (R) loaded it meanwhile, says them again on stderr once the terminal is
 * back, and lcmon exits 1. */
static int run_screen(lc_config *cfg, const lc_config_source *src, const char *config_errors,
                      const options *o)
{
    tui_options to = screen_options(o);
    char msg[256];
    if (tui_check_terminal(msg, sizeof msg) != 0) {
        fprintf(stderr, "lcmon: %s\n", msg);
        lc_config_free(cfg);
        return 1;
    }
    lc_log_set_stderr(false);
    lc_monitor *m = cfg ? lc_monitor_local_new(cfg, src, NULL, NULL)
                        : lc_monitor_failed_new(config_errors, src);
    int rc = tui_run(m, &to);
    bool failed = !lc_monitor_local_configured(m);
    lc_stop_deadline_start(lc_monitor_local_stop_deadline(m), true); /* q or a signal */
    lc_monitor_free(m); /* stops the pipeline and joins its threads */
    lc_stop_deadline_end();
    lc_log_set_stderr(true);
    if (failed) {
        /* The screen said the first; the terminal keeps them all. */
        fprintf(stderr, "lcmon: every problem of the configuration:\n%s\n", config_errors);
        return 1;
    }
    return rc;
}

int main(int argc, char **argv)
{
    for (const app_subcommand *s = subcommands; argc >= 2 && s->name; s++)
        if (!strcmp(argv[1], s->name))
            return s->main(argc - 1, argv + 1);
    options o = {0};
    int rc = options_parse(argc, argv, &o, subcommands);
    if (rc == 0)
        rc = options_check_mode(&o, false);
    if (rc)
        return rc;
    default_data_dir();
    if (o.print_default) {
        fputs(lc_default_config_yaml, stdout);
        return 0;
    }
    if (o.print_schema) {
        int bad = lc_config_print_schema(stdout, o.print_schema);
        if (bad)
            fprintf(stderr, "lcmon: --print-schema=%s: not text, markdown or man\n",
                    o.print_schema);
        return bad ? 2 : 0;
    }
    check_environment(o.check_path ? o.check_path : o.config_path);
    if (o.check_path)
        return check_config(o.check_path);

    block_signals(!o.no_ui);

    lc_config *cfg = NULL;
    lc_error err;
    lc_error_clear(&err);
    /* Read again as it is here on a reload (the screen's R, `lcmon ctl reload`),
     * with --seed, --anchor and --deterministic over it. */
    lc_config_source src = {.path = o.config_path,
                            .seed_given = o.seed_given,
                            .seed = o.seed,
                            .anchor = o.anchor,
                            .deterministic = o.deterministic};
    rc = lc_config_source_load(&src, &cfg, &err);
    if (rc != 0) {
        /* On a terminal the screen shows the problems (and lcmon exits 1
         * after it); elsewhere they go to stderr before anything starts. */
        char msg[256];
        if (!o.no_ui && tui_check_terminal(msg, sizeof msg) == 0)
            return run_screen(NULL, &src, err.msg, &o);
        fprintf(stderr, "lcmon: invalid configuration; nothing was started:\n");
        app_print_errors(err.msg);
        return 1;
    }
    if (!o.no_ui)
        return run_screen(cfg, &src, NULL, &o); /* which owns cfg */
    lc_headless_options ho = {
        .max_seconds = o.max_seconds,
        .status_interval = o.status_interval,
        .quiet = o.quiet,
        .long_status = o.verbose,
        .socket_path = o.socket_path,
        .metrics_log = o.metrics_log,
        .metrics_windows = o.metrics_windows,
        .parent_fd = o.parent_fd_given ? o.parent_fd : -1,
        .source = &src,
    };
    return lc_headless_run(cfg, &ho); /* which owns cfg */
}
