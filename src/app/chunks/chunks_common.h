/*
 * chunks_common: what the verbs of `lcmon chunks` share (chunks_tool.h
 * says what the tool is): JSON helpers, the walk over a folder, the
 * progress line and histogram rows, a stage's settings from --set or
 * --config. It calls no verb.
 */
#ifndef LC_APP_CHUNKS_CHUNKS_COMMON_H
#define LC_APP_CHUNKS_CHUNKS_COMMON_H

#include "format/lc0/chunk.h"
#include "format/lc0/chunk_source.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A JSON string literal of s; a number, or null for NaN and infinities. */
void chunks_json_string(FILE *f, const char *s);
void chunks_json_number(FILE *f, double v);

/* A short name for why a chunk did not load (lc_chunk_source_load's code):
 * "corrupt_gzip", "empty", "unknown_version", "malformed", "truncated" or
 * "unreadable". */
const char *chunks_load_reason(int code);

/* One chunk met by chunks_walk: loaded and checked (data and no reason), or
 * bad (reason set: a load reason, a record-check reason with the record, or
 * "skipped_member" for a tar member that is no chunk). */
typedef struct chunk_visit {
    const char *path;
    const lc_chunk_source *src;
    size_t chunk;              /* index in src; skipped members: their index among those */
    const char *member;        /* the tar member, or the .gz's name */
    const lc_chunk_data *data; /* the records of a good chunk, else NULL */
    const char *reason;        /* NULL for a good chunk */
    const char *detail;        /* the message, for a chunk that did not load or a skip */
    long record;               /* the first bad record, or -1 */
} chunk_visit;

/* What chunks_walk calls, in order, for each file: file() once (src NULL
 * and why set when the file did not open; an "other" file, not .gz or
 * .tar, has src NULL and why NULL), then chunk() for each skipped member
 * and each chunk, then file_done(). */
typedef struct chunk_walk_hooks {
    void (*file)(void *ctx, const char *path, const lc_chunk_source *src, const char *reason,
                 const char *why);
    void (*chunk)(void *ctx, const chunk_visit *v);
    void (*file_done)(void *ctx, const char *path, const lc_chunk_source *src);
} chunk_walk_hooks;

/* Every file under dir (a tree, or one file), as file_path_provider finds
 * them (core/dirwalk.h: names starting with '.' skipped, sorted by base
 * name), each .gz and .tar opened, loaded and checked; log lines go to
 * stderr only while the folder is listed (the hooks report the rest). With
 * a terminal on stderr, a line there counts the files done. Returns the files found, or
 * -1 when dir does not exist or is neither a folder nor a file (a FIFO, a
 * device such as /dev/null: said on stderr). */
long chunks_walk(const char *dir, const chunk_walk_hooks *h, void *ctx);

/* A line that updates on stderr when it is a terminal (a no-op else);
 * done clears it. */
void chunks_progress(size_t done, size_t total, uint64_t chunks);
void chunks_progress_done(void);

/* One histogram row on stdout: the label, a bar of n against max (as wide
 * as the terminal leaves, 60 columns into a file), n and its share of
 * total. */
void chunks_bar_row(const char *label, int label_width, uint64_t n, uint64_t max, uint64_t total);

/* Which chunk of src `want` names: a member's name, or a number from 0;
 * -1 (said on stderr, naming path) when none. */
long chunks_find_member(const lc_chunk_source *src, const char *want, const char *path);

/* ---- a stage's settings, for rescore and weights ---- */

#define CHUNKS_MAX_SETS 64

/* --set KEY=VALUE (repeated), or --config FILE with --stage NAME. */
typedef struct chunks_settings {
    const char *config, *stage;
    const char *sets[CHUNKS_MAX_SETS]; /* "KEY=VALUE", as given */
    unsigned n;
} chunks_settings;

/* The --set pairs as YAML lines "KEY: VALUE", each after indent;
 * malloc'd. */
char *chunks_settings_yaml(const chunks_settings *s, const char *indent);

/* A stage's settings block: from a pipeline config (cfg holds it), or
 * parsed here (cfg NULL: the block is ours). */
struct lc_config;
struct lc_stage_class;
struct lc_stage_config;
typedef struct chunks_block {
    const struct lc_stage_class *cls;
    void *block;
    struct lc_config *cfg;
    char origin[512]; /* "stage 'NAME' of FILE", or "--set" */
} chunks_block;

/* From --config: the stage --stage names, or the first for which fits()
 * is true (what: the kind of stage wanted, for messages); the stage must
 * fit. 0, or 1 with the error said (the file, the stage, what to do). */
int chunks_block_from_config(const chunks_settings *s,
                             bool (*fits)(const struct lc_stage_config *sc), const char *what,
                             chunks_block *b);
/* type's block parsed from yaml (made from s's --set pairs, which the
 * origin names): 0, or 1 said. */
int chunks_block_from_yaml(const char *type, const char *yaml, const chunks_settings *s,
                           chunks_block *b);
void chunks_block_fini(chunks_block *b);

#endif
