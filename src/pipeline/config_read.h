/*
 * config_read: the configuration's YAML tree (yaml_tree.h) read into the
 * structs its settings tables describe (core/settings.h): the global keys,
 * each stage's keys and its class's block. The defaults are written first;
 * every value is checked against its row (type, range, an enum's names, a
 * list's length) and every key against its table (unknown ones with the
 * nearest valid key, a key given twice, a required one missing). Problems
 * do not stop the reading: each is kept as a record (core/problem.h) with
 * its key path, line and column, and the place of every key is kept too,
 * so that what validation finds later is placed on its line by its key
 * path (config.c).
 *
 * Paths name keys from the top: "seed", "stages[2]" (the stage's mapping),
 * "stages[2].name", "stages[2].shuffling_chunk_pool.threads",
 * "stages[2].output.capacity", "stages[1].chunk_source_splitter.outputs[0]".
 *
 * Internal to the pipeline layer. One thread.
 */
#ifndef LC_PIPELINE_CONFIG_READ_H
#define LC_PIPELINE_CONFIG_READ_H

#include "core/problem.h"
#include "core/settings.h"
#include "pipeline/yaml_tree.h"

#include <stdbool.h>
#include <stddef.h>

struct lc_config;

typedef struct lc_config_key {
    char path[160];
    int line, col; /* 1-based */
} lc_config_key;

/* What a reading found: where each key is, and the problems. */
typedef struct lc_config_marks {
    lc_config_key *keys;
    size_t n_keys, cap_keys;
    /* The reader's problems, each at the node it is about; at most
     * LC_PROBLEMS_MAX kept (more than a report can show), the rest counted,
     * so that a config of a million bad keys is read in linear time and
     * bounded memory and says "and N more". */
    lc_problems problems;
    /* By stage index: its own mapping held an unknown key (a misspelt
     * type, whose "did you mean" says why the type is missing). */
    bool *stage_unknown_key;
    size_t n_stages;
} lc_config_marks;

/* The global keys and a stage's own (name, input, inputs, output), and
 * the output queue's block: tables like the classes'. The type blocks of
 * a stage and the `stages` list itself are the reader's own. */
extern const lc_settings lc_config_top_settings;
extern const lc_settings lc_config_stage_settings;
extern const lc_settings lc_config_queue_settings;

/* Read the document's root into a new configuration (never NULL; free
 * with lc_config_free), its problems and places in marks (made empty here). */
struct lc_config *lc_config_read_tree(const lc_ynode *root, lc_config_marks *marks);

/* Read one block on its own (a stage built outside a pipeline): a new
 * struct of b->size bytes with its defaults and the values of map (NULL:
 * an empty block), problems in marks (made with lc_config_marks_init) with
 * paths under `path`. */
void *lc_settings_read_block(const lc_settings *b, const lc_ynode *map, const char *path,
                             lc_config_marks *marks);
/* Free what the block's rows own (texts, blocks, lists); then the block. */
void lc_settings_free_fields(const lc_settings *b, void *block);
void lc_settings_free_block(const lc_settings *b, void *block);

/* Empty marks; and their end. */
void lc_config_marks_init(lc_config_marks *m);
void lc_config_marks_fini(lc_config_marks *m);
/* Where the key at path is; NULL when the text has none. */
const lc_config_key *lc_config_marks_find(const lc_config_marks *m, const char *path);
/* Where the key at path is, or the nearest key above it the text holds
 * ("stages[2].chunk_unpacker.positions_per_chunk" left to its default:
 * the chunk_unpacker block); NULL when none is. */
const lc_config_key *lc_config_marks_place(const lc_config_marks *m, const char *path);

#endif
