/*
 * options: see options.h. The usage text (--help), the version (--version),
 * getopt's table of the options and the checks of their values and of the
 * mode they apply to.
 */
#include "app/options.h"

#include "app/app.h"

#include "core/envvars.h"
#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "core/metric_windows.h"
#include "format/gzip.h"
#include "format/parquet/parquet.h"
#include "lc_config.h"
#include "stages/registry.h"
#include "tui/tui.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f, const app_subcommand *subcommands)
{
    fprintf(f, "usage: lcmon [options]\n");
    for (const app_subcommand *s = subcommands; s && s->name; s++)
        fprintf(f, "       lcmon %s\n", s->usage);
    fprintf(f,
            "\n"
            "Runs the lc0 training-data pipeline a YAML config describes (the embedded\n"
            "default when no --config is given) and shows it on a live screen.\n"
            "\n"
            "  --no-ui                 run headless, printing a status line every second\n"
            "  --theme NAME            (screen) %s\n"
            "  --no-color              (screen) no colours; also when NO_COLOR is set\n"
            "  --ascii                 (screen) ASCII bars instead of Unicode block glyphs\n"
            "  --refresh HZ            (screen) redraws per second, %g to %g (default %g)\n"
            "  --socket PATH           (headless) serve metrics and control on a Unix socket\n"
            "  --metrics-log FILE      (headless) append one JSON line of metrics per second\n"
            "  --metrics-log-windows LIST\n"
            "                          (headless) the windows of time each line holds besides\n"
            "                          the last second and all time: some of 10s, 1m, 10m, 1h,\n"
            "                          comma-separated (default: none)\n"
            "  --parent-fd N           (headless) stop, as on SIGTERM, when descriptor N (the\n"
            "                          read end of a pipe the parent process keeps open)\n"
            "                          reaches its end: lcmon lives as long as its parent\n"
            "  --config FILE           the pipeline to run\n"
            "  --check-config FILE     validate FILE, explain every error, and exit\n"
            "  --print-default-config  print the embedded default pipeline and exit\n"
            "  --print-schema[=F]      print every key a configuration may hold and exit\n"
            "                          (F: text, markdown or man)\n"
            "  --max-seconds N         stop after N seconds (for scripts and tests)\n"
            "  --seed N                the run's seed, over the config's (default: a new one\n"
            "                          at every start, logged)\n"
            "  --anchor KEY            the chunk pool's anchor, over the config's anchor:\n"
            "                          the initial load counts the games after KEY (the key\n"
            "                          a checkpoint stored: how a trainer resumes)\n"
            "  --deterministic         the same stream on every run at any thread count (with\n"
            "                          a pinned seed and the same files), at a cost in speed\n"
            "  --status-interval S     seconds between status lines (default 1; 0 = none)\n"
            "  --log-level LEVEL       debug, info, warn or error (default info)\n"
            "  --log-file FILE         also append log lines to FILE\n"
            "  --quiet                 (headless) warnings and errors only, no status lines\n"
            "  -v, --verbose           (headless) long status lines: every queue and gauge\n"
            "  -V, --version           print the version and exit\n"
            "  -h, --help              this text\n"
            "\n"
            "Environment:\n",
            tui_theme_names(), TUI_REFRESH_MIN, TUI_REFRESH_MAX, TUI_REFRESH_DEFAULT);
    /* lcmon's own variables, from the one table that knows them */
    for (size_t i = 0; lc_env_vars[i].name; i++)
        if (!lc_env_vars[i].internal && !lc_env_vars[i].renamed_to)
            for (const char *m = lc_env_vars[i].meaning, *line = lc_env_vars[i].name; *m;
                 line = "") {
                size_t n = strcspn(m, "\n");
                fprintf(f, "  %-23s %.*s\n", line, (int)n, m);
                m += n + (m[n] == '\n');
            }
    fprintf(f, "  RANK or LOCAL_RANK, WORLD_SIZE\n"
               "                          this process's share of the data, when the config\n"
               "                          does not set rank and world_size (torchrun sets them)\n"
               "  LOCAL_WORLD_SIZE        ranks on this machine: they share the chunk store's\n"
               "                          default budget\n"
               "  NO_COLOR                (screen) no colours when set and not empty\n"
               "  Configs may use ${VAR} and ${VAR:-default} anywhere. A variable named LCMON_*\n"
               "  that neither lcmon nor the config reads is warned about at start (a\n"
               "  misspelling); LCMON_GAMES is read as LCMON_PARQUET, its old name.\n"
               "\n"
               "Exit status: 0 stopped cleanly (SIGINT, SIGTERM, q) or every stage ran out of\n"
               "input; 1 a configuration or start-up error, or the pipeline failed; 2 a usage\n"
               "error. lcmon ctl: 3 when it cannot reach the loader.\n"
               "\n"
               "Stage types:\n");
    for (size_t i = 0; lc_stage_registry[i]; i++)
        fprintf(f, "  %-24s %s\n", lc_stage_registry[i]->type_name, lc_stage_registry[i]->summary);
}

/* The long options without a one-letter form. */
enum {
    OPT_NO_UI = 256,
    OPT_CONFIG,
    OPT_CHECK,
    OPT_PRINT_DEFAULT,
    OPT_PRINT_SCHEMA,
    OPT_MAX_SECONDS,
    OPT_SEED,
    OPT_ANCHOR,
    OPT_DETERMINISTIC,
    OPT_STATUS_INTERVAL,
    OPT_LOG_LEVEL,
    OPT_LOG_FILE,
    OPT_QUIET,
    OPT_SOCKET,
    OPT_METRICS_LOG,
    OPT_METRICS_WINDOWS,
    OPT_PARENT_FD,
    OPT_THEME,
    OPT_NO_COLOR,
    OPT_ASCII,
    OPT_REFRESH,
    OPT_VERSION,
    OPT_HELP,
};

/* The version, then what this build reads with (optional libraries are
 * found at build time). */
static void print_version(void)
{
    printf("lcmon %s\n", LC_VERSION);
    static const int codecs[] = {LC_PARQUET_CODEC_SNAPPY,  LC_PARQUET_CODEC_GZIP,
                                 LC_PARQUET_CODEC_ZSTD,    LC_PARQUET_CODEC_LZ4,
                                 LC_PARQUET_CODEC_LZ4_RAW, LC_PARQUET_CODEC_BROTLI,
                                 LC_PARQUET_CODEC_LZO};
    char read[128] = "", not_read[128] = "";
    for (size_t i = 0; i < sizeof codecs / sizeof *codecs; i++) {
        char *list = lc_parquet_codec_supported(codecs[i]) ? read : not_read;
        size_t len = strlen(list);
        snprintf(list + len, 128 - len, "%s%s", len ? ", " : "", lc_parquet_codec_name(codecs[i]));
    }
    /* A file in a codec not read says which Debian package brings it. */
    printf("inflate: %s; Parquet codecs: %s (not read: %s)\n",
           lc_inflate_backend_available(LC_INFLATE_LIBDEFLATE) ? "libdeflate, zlib" : "zlib", read,
           not_read);
}

/* An option with a number: 0, or 2 after saying what is wrong. */
static int parse_number_option(int c, const char *arg, options *o)
{
    char *end;
    switch (c) {
    case OPT_MAX_SECONDS:
        o->max_seconds = strtod(arg, &end);
        if (*end || o->max_seconds < 0) {
            fprintf(stderr, "lcmon: --max-seconds: '%s' is not a number of seconds\n", arg);
            return 2;
        }
        return 0;
    case OPT_SEED:
        errno = 0;
        o->seed = strtoull(arg, &end, 0);
        if (*end || !arg[0] || arg[0] == '-' || errno) {
            fprintf(stderr, "lcmon: --seed: '%s' is not a whole number (0 or more)\n", arg);
            return 2;
        }
        o->seed_given = true;
        return 0;
    case OPT_STATUS_INTERVAL:
        o->status_interval_given = true;
        o->status_interval = strtod(arg, &end);
        if (*end || o->status_interval < 0) {
            fprintf(stderr, "lcmon: --status-interval: '%s' is not a number of seconds\n", arg);
            return 2;
        }
        return 0;
    case OPT_PARENT_FD: {
        errno = 0;
        long fd = strtol(arg, &end, 10);
        if (*end || !arg[0] || errno || fd < 0 || fd > INT_MAX || fcntl((int)fd, F_GETFD) < 0) {
            fprintf(stderr,
                    "lcmon: --parent-fd: '%s' is not an open descriptor (give the number of the "
                    "read end of a pipe whose write end the parent keeps open)\n",
                    arg);
            return 2;
        }
        o->parent_fd = (int)fd;
        o->parent_fd_given = true;
        return 0;
    }
    default: /* OPT_REFRESH */
        o->refresh_hz = strtod(arg, &end);
        if (*end || !(o->refresh_hz >= TUI_REFRESH_MIN && o->refresh_hz <= TUI_REFRESH_MAX)) {
            fprintf(stderr, "lcmon: --refresh: '%s' is not a rate from %g to %g per second\n", arg,
                    TUI_REFRESH_MIN, TUI_REFRESH_MAX);
            return 2;
        }
        return 0;
    }
}

/* --metrics-log-windows 10s,1m: 0, or 2 after saying what is wrong. */
static int parse_windows(const char *arg, options *o)
{
    o->metrics_windows_given = true;
    o->metrics_windows = 0;
    for (const char *p = arg;;) {
        size_t len = strcspn(p, ",");
        char name[16];
        lc_window w;
        snprintf(name, sizeof name, "%.*s", (int)(len < 15 ? len : 15), p);
        if (len >= sizeof name || !lc_window_parse(name, &w)) {
            fprintf(stderr,
                    "lcmon: --metrics-log-windows: '%.*s' is not a window (the windows: %s; "
                    "several comma-separated)\n",
                    (int)len, p, LC_WINDOW_NAMES);
            return 2;
        }
        /* The last second and all time are in every line anyway. */
        if (w != LC_WINDOW_1S && w != LC_WINDOW_ALL)
            o->metrics_windows |= 1u << w;
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

/* --log-level, --log-file, --theme, --socket, --metrics-log and its
 * windows, --anchor: 0, or 2 after saying what is wrong. */
static int parse_named_option(int c, const char *arg, options *o)
{
    if (c == OPT_ANCHOR) {
        if (!arg[0]) {
            fprintf(stderr, "lcmon: --anchor: give the key of a game (a file name such as "
                            "training.123456.gz), not an empty one\n");
            return 2;
        }
        o->anchor = arg;
    } else if (c == OPT_SOCKET) {
        o->socket_path = arg;
    } else if (c == OPT_METRICS_LOG) {
        o->metrics_log = arg;
    } else if (c == OPT_METRICS_WINDOWS) {
        return parse_windows(arg, o);
    } else if (c == OPT_LOG_LEVEL) {
        lc_log_level level;
        if (!lc_log_level_parse(arg, &level)) {
            fprintf(stderr, "lcmon: --log-level: '%s' is not debug, info, warn or error\n", arg);
            return 2;
        }
        lc_log_set_level(level);
        o->log_level_given = true;
    } else if (c == OPT_LOG_FILE) {
        lc_error err;
        lc_error_clear(&err);
        FILE *f = lc_open_append(arg, &err);
        if (!f) {
            fprintf(stderr, "lcmon: --log-file: cannot open %s\n", err.msg);
            return 2;
        }
        lc_log_set_file(f);
    } else { /* OPT_THEME */
        if (!tui_theme_known(arg)) {
            fprintf(stderr, "lcmon: --theme: '%s' is not one of %s\n", arg, tui_theme_names());
            return 2;
        }
        o->theme = arg;
    }
    return 0;
}

/* An option without a value: true when c is one (set in o). */
static bool parse_flag_option(int c, options *o)
{
    bool *flag = c == OPT_NO_UI           ? &o->no_ui
                 : c == OPT_PRINT_DEFAULT ? &o->print_default
                 : c == OPT_QUIET         ? &o->quiet
                 : c == OPT_DETERMINISTIC ? &o->deterministic
                 : c == OPT_NO_COLOR      ? &o->no_color
                 : c == OPT_ASCII         ? &o->ascii
                 : c == 'v'               ? &o->verbose
                                          : NULL;
    if (flag)
        *flag = true;
    return flag != NULL;
}

int options_parse(int argc, char **argv, options *o, const app_subcommand *subcommands)
{
    static const struct option longopts[] = {
        {"no-ui", no_argument, NULL, OPT_NO_UI},
        {"config", required_argument, NULL, OPT_CONFIG},
        {"check-config", required_argument, NULL, OPT_CHECK},
        {"print-default-config", no_argument, NULL, OPT_PRINT_DEFAULT},
        {"print-schema", optional_argument, NULL, OPT_PRINT_SCHEMA},
        {"max-seconds", required_argument, NULL, OPT_MAX_SECONDS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"anchor", required_argument, NULL, OPT_ANCHOR},
        {"deterministic", no_argument, NULL, OPT_DETERMINISTIC},
        {"status-interval", required_argument, NULL, OPT_STATUS_INTERVAL},
        {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
        {"log-file", required_argument, NULL, OPT_LOG_FILE},
        {"quiet", no_argument, NULL, OPT_QUIET},
        {"socket", required_argument, NULL, OPT_SOCKET},
        {"metrics-log", required_argument, NULL, OPT_METRICS_LOG},
        {"metrics-log-windows", required_argument, NULL, OPT_METRICS_WINDOWS},
        {"parent-fd", required_argument, NULL, OPT_PARENT_FD},
        {"theme", required_argument, NULL, OPT_THEME},
        {"no-color", no_argument, NULL, OPT_NO_COLOR},
        {"ascii", no_argument, NULL, OPT_ASCII},
        {"refresh", required_argument, NULL, OPT_REFRESH},
        {"version", no_argument, NULL, OPT_VERSION},
        {"help", no_argument, NULL, OPT_HELP},
        {"verbose", no_argument, NULL, 'v'},
        {NULL, 0, NULL, 0},
    };
    o->status_interval = 1.0;
    opterr = 0; /* our own message: getopt's would name argv[0], a socket under attach */
    int c;
    while ((c = getopt_long(argc, argv, "hVv", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_CONFIG:
            o->config_path = optarg;
            break;
        case OPT_CHECK:
            o->check_path = optarg;
            break;
        case OPT_PRINT_SCHEMA:
            o->print_schema = optarg ? optarg : "text";
            break;
        case OPT_MAX_SECONDS:
        case OPT_SEED:
        case OPT_STATUS_INTERVAL:
        case OPT_PARENT_FD:
        case OPT_REFRESH:
            if (parse_number_option(c, optarg, o))
                return 2;
            break;
        case OPT_LOG_LEVEL:
        case OPT_LOG_FILE:
        case OPT_THEME:
        case OPT_SOCKET:
        case OPT_METRICS_LOG:
        case OPT_METRICS_WINDOWS:
        case OPT_ANCHOR:
            if (parse_named_option(c, optarg, o))
                return 2;
            break;
        case 'V':
        case OPT_VERSION:
            print_version();
            exit(0);
        case 'h':
        case OPT_HELP:
            usage(stdout, subcommands);
            exit(0);
        default:
            if (parse_flag_option(c, o))
                break;
            fprintf(stderr,
                    "lcmon: %s: unknown option, or its value is missing. Try 'lcmon --help'.\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "lcmon: unexpected argument '%s'. Try 'lcmon --help'.\n", argv[optind]);
        return 2;
    }
    /* --quiet: warnings and errors only, unless --log-level says otherwise. */
    if (o->quiet && !o->log_level_given)
        lc_log_set_level(LC_LOG_WARN);
    return 0;
}

int options_check_mode(const options *o, bool attach)
{
    if (o->check_path || o->print_default || o->print_schema)
        return 0;
    const char *screen = o->theme            ? "--theme"
                         : o->no_color       ? "--no-color"
                         : o->ascii          ? "--ascii"
                         : o->refresh_hz > 0 ? "--refresh"
                                             : NULL;
    if (o->metrics_windows_given && !o->metrics_log) {
        fprintf(stderr, "lcmon: --metrics-log-windows says what --metrics-log writes: add "
                        "--metrics-log FILE\n");
        return 2;
    }
    const char *headless = o->socket_path             ? "--socket"
                           : o->metrics_log           ? "--metrics-log"
                           : o->parent_fd_given       ? "--parent-fd"
                           : o->status_interval_given ? "--status-interval"
                           : o->quiet                 ? "--quiet"
                           : o->verbose               ? "-v"
                                                      : NULL;
    if (attach) {
        const char *bad = o->no_ui           ? "--no-ui"
                          : o->config_path   ? "--config"
                          : o->seed_given    ? "--seed"
                          : o->anchor        ? "--anchor"
                          : o->deterministic ? "--deterministic"
                                             : headless;
        if (bad) {
            fprintf(stderr,
                    "lcmon: attach: %s does not apply (attach takes --theme, --no-color, "
                    "--ascii, --refresh and --max-seconds)\n",
                    bad);
            return 2;
        }
        return 0;
    }
    if (o->no_ui && screen) {
        fprintf(stderr, "lcmon: %s is for the screen; it does not apply with --no-ui\n", screen);
        return 2;
    }
    if (!o->no_ui && headless) {
        fprintf(stderr, "lcmon: %s is for headless runs; add --no-ui\n", headless);
        return 2;
    }
    return 0;
}
