/*
 * command: a control command and its answer as plain C data.
 *
 * A command is a row of a table: a stage class's (stages/stage.h: the
 * pool's anchor-get, anchor-set, anchor-reset), the one every stage has
 * (pause, resume: pipeline/command.c) or the loader's own (stop, start,
 * restart, reload: monitor/local.c). A request names the command, the
 * stage it is for (none: every stage that has it) and its arguments; the
 * answer is one reply a stage that ran it, each a few name/value fields,
 * and for the loader's commands a message in words. `lcmon ctl`, the
 * screen's keys and the monitor socket all pass these; protobuf appears
 * only where bytes leave the process (monitor/command_wire.c).
 */
#ifndef LC_CORE_COMMAND_H
#define LC_CORE_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

#define LC_COMMAND_MAX_ARGS 8
#define LC_REPLY_MAX_FIELDS 8

/* A command as a table lists it: what `lcmon ctl help`, the monitor's
 * hello and the screen show. */
typedef struct lc_command_info {
    const char *name; /* one word: "anchor-set" */
    const char *args; /* its arguments as usage shows them: "KEY"; "" for none */
    unsigned min_args, max_args;
    const char *help; /* what it does: lines joined by '\n' */
    /* For one named stage only (pause): never "every stage that has it". */
    bool one_stage;
} lc_command_info;

/* A request: the command, the stage it is for (NULL: the loader's command,
 * or every stage that has it), its arguments. */
typedef struct lc_command_request {
    const char *name;
    const char *stage;
    unsigned argc;
    const char *const *argv;
} lc_command_request;

typedef struct lc_reply_field {
    char *name, *value; /* malloc'd */
} lc_reply_field;

/* One stage's answer: the fields it filled, or why it refused. */
typedef struct lc_reply {
    char *stage; /* malloc'd; NULL for the loader's own */
    char *error; /* malloc'd; NULL when it did what was asked */
    size_t n_fields;
    lc_reply_field fields[LC_REPLY_MAX_FIELDS];
} lc_reply;

/* A field, its value formatted; past LC_REPLY_MAX_FIELDS it is a bug. */
void lc_reply_add(lc_reply *r, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The value of the field of that name, or NULL. */
const char *lc_reply_get(const lc_reply *r, const char *name);
void lc_reply_fini(lc_reply *r);

/* What running a request came to: rc 0 and one reply a stage that ran it
 * (a message for the loader's commands), or rc a negative code and error
 * every problem, one a line (a refused stage's reply is kept too). */
typedef struct lc_command_result {
    int rc;
    char *error;   /* malloc'd, or NULL */
    char *message; /* malloc'd, or NULL: what was done, in words ("reloaded ...") */
    size_t n;
    lc_reply *replies; /* n of them, malloc'd */
} lc_command_result;

/* A new reply at the end of res (zeroed, for `stage`). */
lc_reply *lc_command_result_add(lc_command_result *res, const char *stage);
/* Refuse: rc and the error (formatted; one a result: a later one replaces it). */
int lc_command_refuse(lc_command_result *res, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void lc_command_result_fini(lc_command_result *res);

/* The row named `name` in a table ended by a NULL name, or NULL. Rows are
 * of `size` bytes and start with the name (an lc_command_info, or a class's
 * row that starts like one). */
const void *lc_command_find(const void *table, size_t size, const char *name);

/* Whether argc fits the row: 0, or -EINVAL with res refused with the usage
 * ("anchor-set takes KEY"). */
int lc_command_check_args(const lc_command_info *c, unsigned argc, lc_command_result *res);

#endif
