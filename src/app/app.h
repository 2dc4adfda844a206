/*
 * app: what the program's faces share (src/app/: main.c and the
 * subcommands): the row of the subcommand table and how errors are said.
 */
#ifndef LC_APP_APP_H
#define LC_APP_APP_H

/* One subcommand, `lcmon NAME ...`: its name, its main (argv[0] is the
 * name; it returns the exit status) and its line of lcmon's usage (after
 * "lcmon "). main.c's table lists them; --help prints their lines. */
typedef struct app_subcommand {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *usage;
} app_subcommand;

/* Errors on stderr, one per line of msg, each with the program's name
 * first. */
void app_print_errors(const char *msg);

#endif
