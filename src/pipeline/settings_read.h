/*
 * settings_read: one block of settings read from its YAML node by its
 * table (core/settings.h), for config_read.c: the defaults, the values,
 * the checks of each row, the places of the keys. See config_read.h.
 *
 * Internal to the pipeline layer. One thread.
 */
#ifndef LC_PIPELINE_SETTINGS_READ_H
#define LC_PIPELINE_SETTINGS_READ_H

#include "pipeline/config_read.h"

/* A reading in progress: where problems and places go, and the stage the
 * nodes belong to (-1: none). */
typedef struct lc_reading {
    lc_config_marks *marks;
    int stage;
    bool defaults; /* reading a row's default: not held against its range */
} lc_reading;

void lc_reading_key(lc_reading *r, const char *path, int line, int col);
/* A problem about the key at path, at line and col (the node it is about):
 * its text says what is wrong and what to do, without the key (messages
 * show it from the path). */
void lc_reading_problem(lc_reading *r, int line, int col, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Stage `stage`'s own mapping holds an unknown key. */
void lc_reading_stage_unknown_key(lc_reading *r, int stage);
/* The problems kept are at their limit (LC_PROBLEMS_MAX): the next are
 * only counted, so no work need go into their wording. */
bool lc_reading_full(const lc_reading *r);

/* Write the defaults of every row of b into block (zeroed, b->size
 * bytes); a new block with them. */
void lc_settings_defaults(const lc_settings *b, void *block);
void *lc_settings_new_block(const lc_settings *b);
/* Read one key's value (node) by its row into block: checked, given
 * flag set; range problems are placed on the key (key_line, key_col). */
void lc_settings_read_value(lc_reading *r, const lc_setting *row, const lc_ynode *node, void *block,
                            const char *path, int key_line, int key_col);
/* Read a mapping into block (its defaults already written) by b: every
 * key's value, unknown keys (with the nearest valid one), keys given
 * twice, required keys missing. map NULL: nothing given, nothing
 * required (a block whose node was refused). */
void lc_settings_read_map(lc_reading *r, const lc_settings *b, const lc_ynode *map, void *block,
                          const char *path);
/* A row's range for messages and docs: "1 to 256", "a value in (0, 1]",
 * "at least 0"; whole: the bounds as whole numbers. */
void lc_setting_range_text(const lc_setting *row, bool whole, char *buf, size_t size);
/* An unknown key: the nearest of names (NULL-ended), or the names when
 * they are few. */
void lc_reading_unknown_key(lc_reading *r, const lc_ynode *key, const char *path,
                            const char *const *names);

#endif
