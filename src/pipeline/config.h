/*
 * config: the pipeline configuration, read from YAML by the settings tables
 * (core/settings.h; config_read.h).
 *
 * The YAML (`lcmon --print-schema` lists every key):
 *
 *   seed: 42                     # optional global settings
 *   metrics_interval_ms: 100
 *   stages:
 *     - name: files
 *       file_path_provider: {directory: data}
 *       output: {capacity: 64, overflow: block}
 *     - name: sources
 *       input: files
 *       chunk_source_loader: {threads: 2}
 *
 * A stage with named outputs (chunk_source_splitter) is read as
 * `input: split.train`; a stage that reads several (join) lists them
 * under `inputs:`.
 *
 * The text is parsed once into a tree that keeps every node's line and
 * column (yaml_tree.h); the global keys, each stage's keys and each class's
 * block are read from it by their settings tables (config_read.h), which
 * write the defaults and check every value. Loading then checks everything that can be checked
 * without starting anything (lc_config_validate): exactly one type block per stage, unique names,
 * inputs that exist, come earlier and carry the right item type, every output read by exactly one
 * stage (the last stage's one output may be left to the pipeline), queue settings, and each class's
 * own field ranges. Every error names the stage and the field and says what to do.
 */
#ifndef LC_PIPELINE_CONFIG_H
#define LC_PIPELINE_CONFIG_H

#include "core/error.h"
#include "core/problem.h"
#include "core/queue.h"
#include "stages/stage.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

struct lc_stage_class;

#define LC_MAX_STAGE_TYPES 32
/* A pipeline's size: more stages, or more worker threads in all, are
 * refused at reading (a config of 10,000 stages started 10,011 threads
 * and 1.66 GB, and its snapshots no longer fit the monitor's frames). */
#define LC_MAX_STAGES 256
#define LC_MAX_THREADS 1024
#define LC_QUEUE_CAPACITY_MAX 10000000u

typedef struct lc_queue_config {
    uint64_t capacity;
    int overflow; /* lc_overflow */
} lc_queue_config;

/* Where a stage reads from: an earlier stage's output. */
typedef struct lc_stage_input {
    int stage;       /* index of the stage */
    unsigned output; /* which of its outputs */
} lc_stage_input;

typedef struct lc_stage_config {
    char *name;
    char *input;   /* "stage" or "stage.output" */
    char **inputs; /* several of them (a join) */
    unsigned n_inputs_given;
    lc_queue_config *output; /* settings of every output queue (defaults when absent) */
    bool output_given;
    void *blocks[LC_MAX_STAGE_TYPES]; /* by registry index; one is set */
    /* Resolved by validation. */
    const struct lc_stage_class *cls;
    void *block;
    int input_index; /* index of the (first) input stage, -1 for producers */
    lc_stage_input in[LC_STAGE_MAX_INPUTS];
    unsigned n_in;
    const char *out_names[LC_STAGE_MAX_OUTPUTS]; /* NULL: the default "out" */
    unsigned n_out;
    const lc_item_type *out_type; /* what every output carries; NULL for a sink */
    size_t capacity;
    lc_overflow overflow;
} lc_stage_config;

typedef struct lc_config {
    lc_stage_config *stages;
    unsigned n_stages;
    uint64_t seed;      /* when seed_pinned */
    bool seed_pinned;   /* seed: (or --seed) given; else each start draws one */
    bool deterministic; /* stages keep their input's order (stages/stage.h's turns) */
    uint32_t metrics_interval_ms;
    int64_t rank;                 /* -1: take it from the environment */
    int64_t world_size;           /* -1: take it from the environment */
    char *origin;                 /* file name, or "<default>", for messages */
    struct lc_config_marks *keys; /* where each key is in the text, for messages */
} lc_config;

/* Parse and validate. `origin` names the text in messages. On failure
 * returns LC_ECONFIG (or a read error) with err explaining every problem
 * found, one per line. */
int lc_config_load_string(const char *yaml, size_t len, const char *origin, lc_config **out,
                          lc_error *err);
int lc_config_load_file(const char *path, lc_config **out, lc_error *err);
/* As lc_config_load_string, and the problems as records besides
 * (core/problem.h): each with its stage and key path, placed (line, col)
 * on the key the path names (or the nearest key above it the text holds),
 * in the order of the text, those counted past the bound in `more`.
 * problems is made empty here (free it with lc_problems_fini); a text that
 * is not YAML, or holds no document, has none: err says why. */
int lc_config_load_records(const char *yaml, size_t len, const char *origin, lc_config **out,
                           lc_problems *problems, lc_error *err);
/* A configuration file's text (malloc'd; not NUL-terminated; "-" reads stdin), read the way
 * lc_config_load_file reads it: a directory or a text of 16 MiB or more is
 * refused with a message naming the path. */
int lc_config_read_text(const char *path, char **text, size_t *len, lc_error *err);
/* Whether text is lcmon's own YAML (a mapping with a `stages` list), which
 * upstream's protobuf text cannot be: for convert-config to say so. */
bool lc_config_text_is_lcmon(const char *text, size_t len);
/* The embedded default (config/default.yaml). */
int lc_config_load_default(lc_config **out, lc_error *err);
extern const char lc_default_config_yaml[];
void lc_config_free(lc_config *cfg);

/* Where a loader's configuration comes from, so that a reload reads it
 * again exactly as the start did: the file, and what the command line sets
 * over it. */
typedef struct lc_config_source {
    const char *path; /* NULL: the embedded default */
    bool seed_given;  /* --seed N: pins the seed over the file's */
    uint64_t seed;
    /* --anchor KEY: the anchor of every stage whose type has an `anchor`
     * setting (the shuffling_chunk_pool), over the file's; NULL: none. A
     * configuration with no such stage is refused (LC_ECONFIG). */
    const char *anchor;
    bool deterministic; /* --deterministic: deterministic mode whatever the file says */
} lc_config_source;

/* Load src's configuration and apply its overrides (what lcmon does at
 * start): as lc_config_load_file or lc_config_load_default. */
int lc_config_source_load(const lc_config_source *src, lc_config **out, lc_error *err);

/* Parse and check one stage-type block on its own ("threads: 2"), for
 * stages built outside a pipeline (tests, tools). Free with
 * lc_config_free_block. */
int lc_config_parse_block(const struct lc_stage_class *cls, const char *yaml, void **block,
                          lc_error *err);
void lc_config_free_block(const struct lc_stage_class *cls, void *block);

/* For --check-config: what each stage can check on the file system (the
 * data directory exists and is readable, the pipe path is a pipe or
 * absent, ...), every problem with its line, as loading reports them. 0
 * when all is well, else LC_ECONFIG. */
int lc_config_preflight(const lc_config *cfg, lc_error *err);

/* `lcmon --print-schema[=FORMAT]`, printed from the settings tables: every
 * key the configuration may hold, its type, default, range and meaning,
 * and each stage type with its summary. format NULL or "text": YAML
 * shaped; "markdown": the README's "Stage types" tables; "man": the man
 * page's STAGE TYPES section. 0, or -1 (nothing printed) for another
 * format. */
int lc_config_print_schema(FILE *out, const char *format);

/* Resolve and check a parsed configuration (config_validate.c): 0, or
 * LC_ECONFIG with every problem added to ps, each with its stage and key
 * path (core/problem.h). Loading calls it and places them. */
int lc_config_validate(lc_config *cfg, lc_problems *ps);

/* How long a stop of this pipeline must be given: the stop deadline
 * (core/exit.h's LC_STOP_DEADLINE_S), or more when a stage may rightly take
 * longer (a fifo_writer's stop_grace, plus a second). */
double lc_config_stop_deadline(const lc_config *cfg);

/* Find a stage config by name; NULL when absent. */
const lc_stage_config *lc_config_stage(const lc_config *cfg, const char *name);

#endif
