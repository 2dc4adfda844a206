/*
 * upstream_conv: the pieces of `lcmon convert-config` (upstream_config.h)
 * shared by its files: upstream's schema and the values read against it
 * (upstream_schema.c, pass 1), the mapping of each upstream stage to
 * lcmon's (upstream_map.c, pass 2), and the conversion's state, reading,
 * wiring and printing (upstream_config.c, pass 3), and what a conversion
 * says, its errors and notes (upstream_report.c). The calls go one way:
 * config -> map -> schema -> report.
 *
 * Internal to src/app/convert/.
 */
#ifndef LC_APP_CONVERT_UPSTREAM_CONV_H
#define LC_APP_CONVERT_UPSTREAM_CONV_H

#include "core/problem.h"
#include "format/textproto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* ---- upstream's schema (upstream_schema.c) ---- */

typedef enum upstream_type { U_UINT, U_INT, U_DOUBLE, U_STRING, U_ENUM, U_BLOCK } upstream_type;

typedef struct upstream_field {
    const char *name;
    upstream_type type;
    bool repeated;
    const char *const *enums;         /* U_ENUM: the values */
    const struct upstream_field *sub; /* U_BLOCK: its fields */
} upstream_field;

/* Pass 2 for one upstream stage type: which mapping (upstream_map.c's
 * up_map runs it), named here so that the schema's table calls nothing. */
typedef enum up_map_kind {
    UP_MAP_PROVIDER,
    UP_MAP_LOADER,
    UP_MAP_POOL,
    UP_MAP_RESCORER,
    UP_MAP_UNPACKER,
    UP_MAP_SAMPLER,
    UP_MAP_TENSORS,
    UP_MAP_SPLITTER,
    UP_MAP_NOTHING, /* output-only stages: nothing to map */
    UP_MAP_KINDS
} up_map_kind;

typedef struct upstream_stage_type {
    const char *name; /* upstream's block */
    const upstream_field *fields;
    const char *lcmon; /* lcmon's stage type; NULL: none (commented out) */
    up_map_kind map;
} upstream_stage_type;

/* Upstream's stage blocks, with lcmon's type and the mapping of each. */
extern const upstream_stage_type up_stage_types[];
extern const size_t up_n_stage_types; /* at most UP_MAX_STAGE_TYPES */
#define UP_MAX_STAGE_TYPES 16
/* training { schedule { } } of a whole training config: the daemon's
 * fields that steer the loader (kept as comments). */
extern const upstream_field up_schedule_fields[];
/* Upstream's overflow names and lcmon's, in the same order (NULL-ended). */
extern const char *const up_overflow_values[];
extern const char *const up_overflow_lcmon[];

/* ---- the conversion's state (upstream_config.c) ---- */

#define MAX_INPUTS 8
#define MAX_OUTPUTS 8
#define NAME_MAX_LEN 40 /* lcmon's limit for a stage's name */

/* One stage of the lcmon YAML being written, from an upstream stage (or a
 * writer, from an output). */
typedef struct lcmon_stage {
    const lc_textproto_field *def; /* stage { } (NULL for a writer) */
    const char *up_name;           /* upstream's name (a writer: the output's alias) */
    char name[NAME_MAX_LEN + 8];
    const upstream_stage_type *type; /* NULL for a writer */
    const lc_textproto_field *block; /* the stage-type block */
    const lc_textproto_field *input_refs[MAX_INPUTS];
    unsigned n_inputs;
    int in_stage[MAX_INPUTS];    /* resolved */
    char in_out[MAX_INPUTS][24]; /* lcmon output name, "" for the only one */
    /* A splitter's outputs: upstream's names and lcmon's. */
    const char *out_up[MAX_OUTPUTS];
    char out_lc[MAX_OUTPUTS][24];
    unsigned n_out;
    char *body; /* settings and comments, each line indented by 6 */
    size_t body_len;
    FILE *bf;
    char output[96]; /* the output queue's flow mapping, "" for none */
    bool placed;
} lcmon_stage;

/* One run of convert-config: its input, errors and stages. */
typedef struct conversion {
    const char *origin;
    lc_problems errs; /* each at the place of its field, all kept */
    lcmon_stage *st;
    unsigned n_st, n_stage_defs;
    unsigned n_unmapped, n_dropped;
    const lc_textproto_field *outputs[MAX_OUTPUTS * 4];
    unsigned n_outputs;
    /* What the converted configuration keeps of upstream's where lcmon has
     * a better choice, and how to turn it on: a line each, no line twice. */
    char *notes;
    size_t notes_len;
    FILE *nf;
    /* training { schedule { } } of a whole training config, or NULL. */
    const lc_textproto_field *schedule;
} conversion;

/* ---- what a conversion says (upstream_report.c) ---- */

/* One error at LINE:COL of the text (a record of c->errs), one line. */
void up_error_at(conversion *c, unsigned line, unsigned col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* One line of c->notes (unless it is there already). */
void up_notice(conversion *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- values (upstream_schema.c) ---- */

bool up_valid_utf8(const char *s, size_t n);
/* A whole number, 0 or more (no sign), as strtoull base 0 reads it. */
bool up_parse_uint(const char *s, unsigned long long *v);
/* A YAML double-quoted scalar of s (n bytes, at most max shown). */
void up_put_yaml_string(FILE *f, const char *s, size_t n, size_t max);
/* A field's value as YAML text for lcmon: numbers cleaned up. */
void up_value_yaml(const lc_textproto_field *f, upstream_type t, char *buf, size_t n);
/* Pass 1: every field of block against table; problems via up_error_at. */
void up_check_fields(conversion *c, const lc_textproto_field *block, const upstream_field *table,
                     const char *where);
/* The field of block named name; NULL when absent (or block NULL). */
const lc_textproto_field *up_get(const lc_textproto_field *block, const char *name);

/* ---- mapping (upstream_map.c) ---- */

/* A setting line "key: value" of the lcmon stage's block. */
void up_set(lcmon_stage *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The output queue's flow mapping from upstream's queue block. */
void up_map_queue(lcmon_stage *s, const lc_textproto_field *q);
/* A name lcmon accepts: letters, digits, '_' and '-', at most max. */
void up_clean_name(const char *in, char *out, size_t max);
/* Pass 2 for stage s: its type's mapping (s->type->map). */
void up_map(conversion *c, lcmon_stage *s);
/* Pass 2b, once inputs are resolved: the notes that depend on the
 * stages' order (an unpacker with or without a rescorer before it). */
void up_map_wired(conversion *c);
/* training.schedule's fields as comments of the YAML's header. */
void up_print_schedule(conversion *c, FILE *out);

#endif
