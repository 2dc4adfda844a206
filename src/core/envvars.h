/*
 * envvars: every environment variable named LCMON_* that lcmon, its
 * shipped configurations, its Python package and its own scripts and tests
 * read, in one table, and the check at start that catches a misspelt one
 * (LCMON_PIEP for LCMON_PIPE would otherwise be ignored without a word).
 */
#ifndef LC_CORE_ENVVARS_H
#define LC_CORE_ENVVARS_H

#include <stdbool.h>

typedef struct lc_env_var {
    const char *name;
    const char *meaning;
    /* An old name: the variable it stands for (read in its place, with a
     * warning, when that one is unset); NULL for a current name. */
    const char *renamed_to;
    /* Read only by lcmon's own test suite, benchmarks and scripts: known,
     * so never warned about, but not the user's. */
    bool internal;
} lc_env_var;

/* NULL-name terminated. */
extern const lc_env_var lc_env_vars[];

/*
 * At start: warn once about each set variable whose name begins LCMON_
 * that neither the table nor the configuration's text (its ${NAME}s;
 * config_text may be NULL) knows, naming the closest known one when it
 * looks like a misspelling; and take an old name's value for its new name
 * when that is unset (LCMON_GAMES for LCMON_PARQUET), saying so. Call it
 * before any thread starts (it may set a variable). Returns the number of
 * warnings.
 */
unsigned lc_env_check(const char *config_text);

#endif
