/*
 * options: lcmon's command line (the program's and `lcmon attach`'s): the
 * usage text, the options and their checks. main.c runs what they ask for.
 */
#ifndef LC_APP_OPTIONS_H
#define LC_APP_OPTIONS_H

#include <stdbool.h>

typedef struct options {
    bool no_ui;
    const char *config_path;
    const char *check_path;
    bool print_default;
    const char *print_schema; /* its format: text, markdown or man */
    double max_seconds;       /* 0: run until stopped or finished */
    bool seed_given;          /* --seed: pins the seed over the config's */
    unsigned long long seed;
    const char *anchor; /* --anchor KEY: the pool's anchor, over the config's */
    bool deterministic; /* --deterministic: deterministic mode over the config's */
    double status_interval;
    bool status_interval_given;
    bool quiet;
    bool verbose; /* -v: the long status line */
    bool log_level_given;
    const char *socket_path;
    const char *metrics_log;
    unsigned metrics_windows; /* --metrics-log-windows: the log's windows (bit w), 0: none */
    bool metrics_windows_given;
    int parent_fd; /* --parent-fd: stop when it reaches its end */
    bool parent_fd_given;
    /* The screen. */
    const char *theme;
    bool no_color;
    bool ascii;
    double refresh_hz;
} options;

/* Read argv into *o (zeroed by the caller): 0, or 2 (a usage error) after
 * saying what is wrong on stderr. --help and --version print and exit 0
 * (--help lists the subcommands' usage lines, a table ended by a row
 * without a name). getopt starts after argv[0]. */
struct app_subcommand;
int options_parse(int argc, char **argv, options *o, const struct app_subcommand *subcommands);
/* Options that do not apply to the mode chosen are refused, naming both:
 * the screen's with --no-ui, the headless ones without it, and under
 * `lcmon attach` (attach) all but the screen's and --max-seconds. 0 or 2. */
int options_check_mode(const options *o, bool attach);

#endif
