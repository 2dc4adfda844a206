#include "core/envvars.h"

#include "core/error.h"
#include "core/log.h"
#include "core/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const lc_env_var lc_env_vars[] = {
    /* lcmon's and its shipped configurations' (config/); the meanings are
     * --help's, lines of at most 54 characters. */
    {"LCMON_DATA",
     "the data folder of the default pipeline and the\nshipped configs (else tests/data, else the "
     "sample\n"
     "data installed with lcmon)",
     NULL, false},
    {"LCMON_PIPE",
     "the named pipe of the default pipeline and the\nshipped configs (default: lcmon.pipe)", NULL,
     false},
    {"LCMON_TRAIN_PIPE", "config/train_test.yaml's training pipe", NULL, false},
    {"LCMON_TEST_PIPE", "config/train_test.yaml's test pipe", NULL, false},
    {"LCMON_PARQUET",
     "the Parquet tables of config/decoder.yaml and\nconfig/encoder.yaml (LCMON_GAMES, its old "
     "name, too)",
     NULL, false},
    {"LCMON_GAVIOTA", "config/rescore.yaml's Gaviota tablebases", NULL, false},
    /* The Python package's (lcmon.Loader: the executable it runs). */
    {"LCMON", "the lcmon program Python's lcmon.Loader runs", NULL, false},
    {"LCMON_BUILD",
     "the build folder scripts/setup makes (default:\nbuild), where lcmon.Loader looks for lcmon",
     NULL, false},
    {"LCMON_EXPAND",
     "numpy: the Python package expands packed batches\nwith numpy, not its C kernel", NULL, false},
    {"LCMON_EXPAND_LIB",
     "the Python package's expansion kernel (a .so),\nover the one in the build", NULL, false},
    /* Old names. */
    {"LCMON_GAMES", "an old name of LCMON_PARQUET", "LCMON_PARQUET", false},
    /* lcmon's own tests, benchmarks and scripts. */
    {"LCMON_STOP_DEADLINE", "seconds a stop may take (tests scale it)", NULL, true},
    {"LCMON_TEST_SLOW", "the tests' time scale (sanitizers)", NULL, true},
    {"LCMON_TEST_DATA", "the tests' sample games", NULL, true},
    {"LCMON_SOURCE_ROOT", "the source tree, for the tests", NULL, true},
    {"LCMON_SAMPLES", "the tests' sample games", NULL, true},
    {"LCMON_PYTHON", "the scripts' Python", NULL, true},
    {"LCMON_BUILD", "the scripts' build folder", NULL, true},
    {"LCMON_SKIP_SETUP", "scripts/run without its set-up", NULL, true},
    {"LCMON_SYZYGY_PATH", "the tests' Syzygy tablebases", NULL, true},
    {"LCMON_GAVIOTA_PATH", "the tests' Gaviota tablebases", NULL, true},
    {"LCMON_RULES", "a rescorer test's rules", NULL, true},
    {"LCMON_REF_SHOW", "a rescorer test's output", NULL, true},
    {"LCMON_REF_GAMES", "a rescorer test's games", NULL, true},
    {"LCMON_FIFO_DEMO", "a Python test's pipe", NULL, true},
    {"LCMON_TB_EVERY", "a tablebase test's sampling", NULL, true},
    {NULL, NULL, NULL, false},
};

extern char **environ;

#define MAX_NAMES 96

/* The names known: the table's and those the configuration's text reads
 * (${NAME} and ${NAME:-default}). */
typedef struct known_names {
    const char *v[MAX_NAMES + 1];
    char *owned[MAX_NAMES];
    size_t n, n_owned;
    size_t n_table; /* v[n_table ..] are the configuration's */
} known_names;

static void add_name(known_names *k, const char *name, size_t len)
{
    if (k->n >= MAX_NAMES || len == 0)
        return;
    for (size_t i = k->n_table; i < k->n; i++)
        if (strlen(k->v[i]) == len && !strncmp(k->v[i], name, len))
            return;
    char *copy = lc_xstrndup(name, len);
    k->owned[k->n_owned++] = copy;
    k->v[k->n++] = copy;
}

static void collect_names(known_names *k, const char *config_text)
{
    for (size_t i = 0; lc_env_vars[i].name && k->n < MAX_NAMES; i++)
        k->v[k->n++] = lc_env_vars[i].name;
    k->n_table = k->n;
    for (const char *p = config_text; p && (p = strstr(p, "${")) != NULL;) {
        p += 2;
        size_t len = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
        add_name(k, p, len);
        p += len;
    }
    k->v[k->n] = NULL;
}

static bool known(const known_names *k, const char *name)
{
    for (size_t i = 0; i < k->n; i++)
        if (!strcmp(k->v[i], name))
            return true;
    return false;
}

/* An old name given: read for its new one when that is unset. */
static unsigned check_renamed(const known_names *k, const lc_env_var *v)
{
    const char *value = getenv(v->name);
    if (!value || !*value)
        return 0;
    /* A configuration that reads the old name itself uses it as it is. */
    for (size_t i = k->n_table; i < k->n; i++)
        if (!strcmp(k->v[i], v->name))
            return 0;
    const char *now = getenv(v->renamed_to);
    if (now && *now) {
        LC_WARN("environment: %s is ignored: it is the old name of %s, which is set (unset %s)",
                v->name, v->renamed_to, v->name);
        return 1;
    }
    setenv(v->renamed_to, value, 1);
    LC_WARN("environment: %s is the old name of %s: read as %s=%s (rename it)", v->name,
            v->renamed_to, v->renamed_to, value);
    return 1;
}

static unsigned check_unknown(const known_names *k, const char *name)
{
    const char *near = lc_closest_word(name, k->v);
    if (near) {
        LC_WARN("environment: %s is set, but nothing reads it: did you mean %s? (rename it; "
                "lcmon --help lists the variables lcmon reads)",
                name, near);
    } else {
        LC_WARN("environment: %s is set, but neither lcmon nor its configuration reads it "
                "(lcmon --help lists the variables lcmon reads)",
                name);
    }
    return 1;
}

unsigned lc_env_check(const char *config_text)
{
    known_names k = {0};
    collect_names(&k, config_text);
    unsigned warnings = 0;
    for (size_t i = 0; lc_env_vars[i].name; i++)
        if (lc_env_vars[i].renamed_to)
            warnings += check_renamed(&k, &lc_env_vars[i]);
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : 0;
        if (len < 6 || len >= 64 || strncmp(*e, "LCMON_", 6) != 0)
            continue;
        char name[64];
        memcpy(name, *e, len);
        name[len] = '\0';
        if (!known(&k, name))
            warnings += check_unknown(&k, name);
    }
    for (size_t i = 0; i < k.n_owned; i++)
        free(k.owned[i]);
    return warnings;
}
