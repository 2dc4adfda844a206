/*
 * config_read: see config_read.h. The global keys, a stage's keys and its
 * output queue are tables like a class's; this file reads the `stages`
 * list and, in each stage's mapping, the one key that is not a row: the
 * stage type's block, by its class's table.
 */
#include "pipeline/config_read.h"
#include "pipeline/config.h"
#include "pipeline/settings_read.h"

#include "core/error.h"
#include "core/text.h"
#include "stages/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const lc_setting_value overflow_values[] = {
    {"block", LC_OVERFLOW_BLOCK},
    {"drop_newest", LC_OVERFLOW_DROP_NEWEST},
    {"keep_newest", LC_OVERFLOW_KEEP_NEWEST},
    {0},
};

static const lc_setting queue_rows[] = {
    LC_SETTING_ROW_RANGE(lc_queue_config, capacity, "capacity", LC_SETTING_WHOLE, "16", 1,
                         LC_QUEUE_CAPACITY_MAX, "items the queue holds", "64"),
    {.key = "overflow",
     .type = LC_SETTING_ENUM,
     LC_SETTING_AT(lc_queue_config, overflow),
     .def = "block",
     .values = overflow_values,
     .meaning =
         "when it is full: wait (block, backpressure), or drop the newest or the oldest item",
     .example = "drop_newest"},
    {0},
};

const lc_settings lc_config_queue_settings = {queue_rows, sizeof(lc_queue_config)};

static const lc_setting stage_rows[] = {
    {.key = "name",
     .type = LC_SETTING_TEXT,
     LC_SETTING_AT(lc_stage_config, name),
     .required = true, /* said by validation, which knows the stage by its place */
     .meaning = "the stage's name, unique: 1 to 40 letters, digits, '_' and '-'",
     .example = "pool"},
    {.key = "input",
     .type = LC_SETTING_TEXT,
     LC_SETTING_AT(lc_stage_config, input),
     .off = "none: a producer",
     .meaning = "an earlier stage's name, or stage.output for a named output",
     .example = "files"},
    {.key = "inputs",
     LC_SETTING_LIST_OF(lc_stage_config, inputs, n_inputs_given, LC_SETTING_TEXT),
     .min_items = 1,
     .max_items = LC_STAGE_MAX_INPUTS,
     .off = "none",
     .meaning = "several inputs as for input, for a stage that reads several (join)",
     .example = "[pool_a, pool_b]"},
    {.key = "output",
     .type = LC_SETTING_BLOCK,
     LC_SETTING_AT(lc_stage_config, output),
     LC_SETTING_GIVEN(lc_stage_config, output_given),
     .def = "{}",
     .block = &lc_config_queue_settings,
     .meaning = "the settings of every output queue",
     .example = "{capacity: 64, overflow: block}"},
    {0},
};

const lc_settings lc_config_stage_settings = {stage_rows, sizeof(lc_stage_config)};

static const lc_setting top_rows[] = {
    {.key = "seed",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(lc_config, seed),
     LC_SETTING_GIVEN(lc_config, seed_pinned),
     .off = "a new one at each start, logged",
     .meaning = "pins every random choice (--seed N pins one too)",
     .example = "42"},
    LC_SETTING_ROW(lc_config, deterministic, "deterministic", LC_SETTING_BOOL, "false",
                   "the same stream on every run at any thread count, for a pinned seed and the "
                   "same files (--deterministic too); costs speed",
                   "true"),
    LC_SETTING_ROW_RANGE(lc_config, metrics_interval_ms, "metrics_interval_ms", LC_SETTING_WHOLE,
                         "100", 10, 10000, "milliseconds between two metrics snapshots", "250"),
    {.key = "rank",
     .type = LC_SETTING_SIGNED,
     LC_SETTING_AT(lc_config, rank),
     .def = "-1",
     .off = "RANK or LOCAL_RANK, else 0",
     .range = LC_RANGE_MIN,
     .min = 0,
     .meaning = "this process's share of the data",
     .example = "0"},
    {.key = "world_size",
     .type = LC_SETTING_SIGNED,
     LC_SETTING_AT(lc_config, world_size),
     .def = "-1",
     .off = "WORLD_SIZE, else 1",
     LC_SETTING_RANGE(1, 65536),
     .meaning = "how many shares the data is cut into",
     .example = "8"},
    {0},
};

const lc_settings lc_config_top_settings = {top_rows, sizeof(lc_config)};

/* The keys of a stage's mapping: its rows, then every stage type. */
static void stage_key_names(const char **names, size_t max)
{
    size_t n = 0;
    for (const lc_setting *row = stage_rows; row->key && n + 1 < max; row++)
        names[n++] = row->key;
    for (size_t i = 0; lc_stage_registry[i] && n + 1 < max; i++)
        names[n++] = lc_stage_registry[i]->type_name;
    names[n] = NULL;
}

static void read_type_block(lc_reading *r, lc_stage_config *s, size_t k, const lc_ynode *value,
                            const char *path)
{
    const lc_stage_class *cls = lc_stage_registry[k];
    if (!s->blocks[k])
        s->blocks[k] = lc_settings_new_block(&cls->settings);
    if (value->kind != LC_YNODE_MAP)
        lc_reading_problem(r, value->line, value->col, path, "'%s' where a mapping belongs",
                           value->kind == LC_YNODE_SCALAR ? value->text : "");
    lc_settings_read_map(r, &cls->settings, value->kind == LC_YNODE_MAP ? value : NULL,
                         s->blocks[k], path);
}

static void read_stage(lc_reading *r, lc_stage_config *s, const lc_ynode *map, const char *path)
{
    const char *names[LC_MAX_STAGE_TYPES + 8];
    stage_key_names(names, sizeof names / sizeof *names);
    const char *known[LC_MAX_STAGE_TYPES + 16];
    size_t n_known = 0;
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const lc_ynode *key = map->kids[i], *value = map->kids[i + 1];
        if (key->kind != LC_YNODE_SCALAR) {
            lc_reading_problem(r, key->line, key->col, path, "a key that is not a word");
            continue;
        }
        char sub[160];
        snprintf(sub, sizeof sub, "%s.%s", path, key->text);
        const lc_setting *row = lc_setting_find(&lc_config_stage_settings, key->text);
        const lc_stage_class *cls = row ? NULL : lc_stage_class_find(key->text);
        if (!row && !cls) {
            lc_reading_stage_unknown_key(r, r->stage);
            if (lc_reading_full(r))
                lc_reading_problem(r, key->line, key->col, sub, "unknown key"); /* counted */
            else if (lc_closest_word(key->text, names))
                lc_reading_unknown_key(r, key, sub, names);
            else
                lc_reading_problem(r, key->line, key->col, sub,
                                   "unknown key (a stage has name, input, output and one stage "
                                   "type block; `lcmon --help` lists the types)");
            continue;
        }
        /* Among the known keys seen so far (each once: a few): linear in
         * the mapping, however long. */
        bool twice = false;
        for (size_t j = 0; j < n_known && !twice; j++)
            twice = !strcmp(known[j], key->text);
        if (twice) {
            lc_reading_problem(r, key->line, key->col, sub, "given twice (keep one)");
            continue;
        }
        if (n_known < sizeof known / sizeof *known)
            known[n_known++] = key->text;
        lc_reading_key(r, sub, key->line, key->col);
        if (row) {
            lc_settings_read_value(r, row, value, s, sub, key->line, key->col);
            continue;
        }
        for (size_t k = 0; lc_stage_registry[k]; k++)
            if (lc_stage_registry[k] == cls)
                read_type_block(r, s, k, value, sub);
    }
}

static void read_stages(lc_reading *r, lc_config *cfg, const lc_ynode *seq)
{
    if (seq->kind != LC_YNODE_SEQ) {
        if (seq->kind == LC_YNODE_MAP)
            lc_reading_problem(r, seq->line, seq->col, "stages", "a mapping, where a list belongs");
        else
            lc_reading_problem(r, seq->line, seq->col, "stages", "'%s' where a list belongs",
                               seq->text);
        return;
    }
    if (seq->n > LC_MAX_STAGES) { /* none is read: "stages" is the one problem */
        lc_reading_problem(r, seq->line, seq->col, "stages",
                           "%zu of them; a pipeline has at most %d (split it over "
                           "several lcmon, or join the stages that do the same)",
                           seq->n, LC_MAX_STAGES);
        return;
    }
    free(cfg->stages);
    cfg->n_stages = (unsigned)seq->n;
    cfg->stages = lc_xcalloc(seq->n ? seq->n : 1, sizeof *cfg->stages);
    for (size_t i = 0; i < seq->n; i++) {
        const lc_ynode *item = seq->kids[i];
        lc_stage_config *s = &cfg->stages[i];
        lc_settings_defaults(&lc_config_stage_settings, s);
        char path[32];
        snprintf(path, sizeof path, "stages[%zu]", i);
        r->stage = (int)i;
        lc_reading_key(r, path, item->line, item->col);
        if (item->kind != LC_YNODE_MAP)
            lc_reading_problem(r, item->line, item->col, path,
                               "a %s where a stage's mapping belongs (name: ..., input: ..., and "
                               "its type's block)",
                               item->kind == LC_YNODE_SEQ ? "list" : "single value");
        else
            read_stage(r, s, item, path);
    }
    r->stage = -1;
}

lc_config *lc_config_read_tree(const lc_ynode *root, lc_config_marks *marks)
{
    lc_config_marks_init(marks);
    lc_reading r = {.marks = marks, .stage = -1};
    lc_config *cfg = lc_settings_new_block(&lc_config_top_settings);
    if (root->kind != LC_YNODE_MAP) {
        lc_reading_problem(&r, root->line, root->col, "",
                           "the document is a %s: a configuration is a mapping with a 'stages' "
                           "list (lcmon --print-default-config prints one)",
                           root->kind == LC_YNODE_SEQ ? "list" : "single value");
        return cfg;
    }
    const char *names[16] = {"stages"};
    size_t n = 1;
    for (const lc_setting *row = top_rows; row->key && n + 1 < 16; row++)
        names[n++] = row->key;
    names[n] = NULL;
    bool stages_seen = false;
    for (size_t i = 0; i + 1 < root->n; i += 2) {
        const lc_ynode *key = root->kids[i], *value = root->kids[i + 1];
        if (key->kind != LC_YNODE_SCALAR) {
            lc_reading_problem(&r, key->line, key->col, "", "a key that is not a word");
            continue;
        }
        const lc_setting *row = lc_setting_find(&lc_config_top_settings, key->text);
        if (!row && strcmp(key->text, "stages") != 0) {
            lc_reading_unknown_key(&r, key, key->text, names);
            continue;
        }
        lc_reading_key(&r, key->text, key->line, key->col);
        if (row) {
            lc_settings_read_value(&r, row, value, cfg, key->text, key->line, key->col);
        } else if (stages_seen) {
            lc_reading_problem(&r, key->line, key->col, "stages", "given twice (keep one)");
        } else {
            stages_seen = true;
            read_stages(&r, cfg, value);
        }
    }
    return cfg;
}

void *lc_settings_read_block(const lc_settings *b, const lc_ynode *map, const char *path,
                             lc_config_marks *marks)
{
    lc_reading r = {.marks = marks, .stage = -1};
    void *block = lc_settings_new_block(b);
    if (map && map->kind != LC_YNODE_MAP && !lc_ynode_is_null(map)) {
        lc_reading_problem(&r, map->line, map->col, path, "a mapping belongs here");
        return block;
    }
    lc_ynode empty = {.kind = LC_YNODE_MAP};
    lc_settings_read_map(&r, b, map && map->kind == LC_YNODE_MAP ? map : &empty, block, path);
    return block;
}
