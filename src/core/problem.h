/*
 * problem: what is wrong in a configuration, as records rather than lines
 * of text: the stage it is about, the key path (where in the
 * configuration) and the text (what is wrong and what to do). The
 * configuration's reader, its validation and each stage type's checks
 * append them to a list; the loader (pipeline/config.c) places each on its
 * line and column by its key path, with no reading of the text; the
 * upstream converter gives each the place of the field it is about.
 *
 * Key paths name keys from the top, as the reader does: "seed",
 * "stages[2]" (the stage's mapping), "stages[2].shuffling_chunk_pool.threads",
 * "stages[1].chunk_source_splitter.outputs[0].name". A check adds keys under
 * its list's base: "inflate" in a stage's block is
 * "stages[2].shuffling_chunk_pool.inflate". A path to a key the text does
 * not hold (a setting left to its default) is placed on the nearest key
 * above it that the text holds.
 *
 * The text does not repeat the key: messages show it from the path
 * ("shuffling_chunk_pool.threads: 0 is out of range (use 1 to 256)"). What
 * is about no one key (a stage's missing type, an output nobody reads)
 * names its enclosing mapping ("stages[2]") and says the rest in its text.
 *
 * A list keeps at most `max` problems (LC_PROBLEMS_MAX unless set): past
 * them only their number is kept, so that a configuration of a million bad
 * keys is checked in linear time and bounded memory and says "and N more".
 *
 * One thread per list.
 */
#ifndef LC_CORE_PROBLEM_H
#define LC_CORE_PROBLEM_H

#include "core/error.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#define LC_PROBLEMS_MAX 100
#define LC_PROBLEM_PATH_MAX 160

typedef struct lc_problem {
    int stage;                      /* index in the configuration's stages; -1: none */
    char path[LC_PROBLEM_PATH_MAX]; /* the key it is about; "": the whole configuration */
    int line, col;                  /* 1-based where the producer knows it; 0: place by path */
    size_t order;                   /* when it was added, for a stable sort */
    char *text;                     /* what is wrong and what to do, without the key */
} lc_problem;

typedef struct lc_problems {
    lc_problem *v;
    size_t n, cap;
    size_t more; /* found past max: counted, not kept */
    size_t max;  /* kept at most; 0: LC_PROBLEMS_MAX */
    /* What each problem added gets: the stage (-1: none), and the path its
     * key is under ("": from the top). Set with lc_problems_under. */
    int stage;
    char base[LC_PROBLEM_PATH_MAX];
} lc_problems;

#define LC_PROBLEMS_INIT                                                                           \
    {                                                                                              \
        .stage = -1                                                                                \
    }

void lc_problems_init(lc_problems *ps);
void lc_problems_fini(lc_problems *ps);

/* The problems added next are about stage (-1: none), their keys under the
 * path fmt makes ("" for the top). */
void lc_problems_under(lc_problems *ps, int stage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Add a problem about key (under the base; "" for the base itself), to be
 * placed by its path. Returns LC_ECONFIG, for `return lc_problem_add(...)`. */
int lc_problem_add(lc_problems *ps, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same, at a place the producer knows (line and col 1-based). */
int lc_problem_add_at(lc_problems *ps, int line, int col, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int lc_problem_vadd_at(lc_problems *ps, int line, int col, const char *key, const char *fmt,
                       va_list ap) __attribute__((format(printf, 5, 0)));

/* The list keeps no more: the next are only counted, so that no work need
 * go into their wording. */
bool lc_problems_full(const lc_problems *ps);
/* Kept and counted. */
size_t lc_problems_count(const lc_problems *ps);

/* In the order of the text: by line, then column (those without a place
 * first), then as they were added. */
void lc_problems_sort(lc_problems *ps);

/* Every problem into err (LC_ECONFIG), a line each, "path: text" (the text
 * alone for the path ""), and "and N more problems" for those counted: for
 * a list made without a configuration's text around it (a block parsed on
 * its own, a stage's start). 0 when the list is empty. */
int lc_problems_to_error(const lc_problems *ps, lc_error *err);

#endif
