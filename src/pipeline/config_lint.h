/*
 * config_lint: a pass over the configuration's YAML with libyaml, against
 * the libcyaml schema, before libcyaml loads it. libcyaml stops at the first
 * unknown key or bad value, reads "-5" into an unsigned field as a huge
 * number and any word but a false one as true; the lint finds every unknown
 * key (with the nearest valid one) and every value libcyaml would refuse or
 * misread (a negative or malformed number, a word that is not a boolean or
 * one of an enum's names, an empty string, a list or mapping where a value
 * belongs), each with its line and column, and keeps where every key is, so
 * that the problems validation finds later can be given their lines too.
 *
 * Each bad value also gets a patch: a valid stand-in of its type for the
 * text libcyaml then loads, so that one pass reports the value problems of
 * every other field too (what validation says about a patched key is not
 * said again: the lint's problem stands for it).
 *
 * Paths name keys from the top: "seed", "stages[2]" (the stage's mapping),
 * "stages[2].name", "stages[2].shuffling_chunk_pool.threads",
 * "stages[2].output.capacity".
 *
 * Internal to the pipeline layer (config.c). One thread.
 */
#ifndef LC_PIPELINE_CONFIG_LINT_H
#define LC_PIPELINE_CONFIG_LINT_H

#include <cyaml/cyaml.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct lc_lint_key {
    char path[160];
    int line, col; /* 1-based */
} lc_lint_key;

typedef struct lc_lint_problem {
    int line, col;
    int stage;      /* index in stages, or -1 */
    char path[160]; /* the key it is about */
    bool stage_key; /* an unknown key of a stage's own mapping (a misspelt type?) */
    char text[320];
} lc_lint_problem;

/* Replace yaml[start, end) with text. */
typedef struct lc_lint_patch {
    size_t start, end;
    char text[8];
} lc_lint_patch;

typedef struct lc_lint {
    lc_lint_patch *patches; /* in text order */
    size_t n_patches, cap_patches;
    lc_lint_key *keys;
    size_t n_keys, cap_keys;
    lc_lint_problem *problems;
    size_t n_problems, cap_problems;
    char (*stage_names)[64]; /* by stage index; "" when it has none */
    size_t n_stages;
} lc_lint;

/* Walk yaml against schema (the top mapping's value schema). Syntax errors
 * end the walk quietly: libcyaml reports them. */
void lc_lint_run(lc_lint *l, const char *yaml, size_t len, const cyaml_schema_value_t *schema);
void lc_lint_fini(lc_lint *l);
/* yaml with the lint's patches applied (malloc'd, NUL-terminated), its
 * length in *out_len. */
char *lc_lint_patched(const lc_lint *l, const char *yaml, size_t len, size_t *out_len);

/* Where the key at path is; NULL when the text has none. */
const lc_lint_key *lc_lint_find(const lc_lint *l, const char *path);
/* The index of the stage named name; -1 when none is. */
int lc_lint_stage_index(const lc_lint *l, const char *name);

#endif
