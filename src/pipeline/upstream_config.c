/*
 * upstream_config: upstream's DataLoaderConfig text to lcmon YAML.
 *
 * Three passes over the text-format tree (format/textproto):
 *   1. check: every field against upstream's schema (the tables below),
 *      as upstream's parser would; every problem is collected;
 *   2. map: each stage block to an lcmon stage (its settings written as
 *      YAML lines, fields without an equivalent as comments); inputs and
 *      outputs resolved by name, readers of a stage lcmon has no type for
 *      (the rescorer) given that stage's input instead;
 *   3. print: in an order where every input comes first (upstream allows
 *      any order; lcmon wants inputs earlier), a fifo_writer per output.
 */
#include "pipeline/upstream_config.h"

#include "core/error.h"
#include "core/text.h"
#include "format/textproto.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- upstream's schema ---- */

typedef enum utype { U_UINT, U_INT, U_DOUBLE, U_STRING, U_ENUM, U_BLOCK } utype;

typedef struct ufield {
    const char *name;
    utype type;
    bool repeated;
    const char *const *enums; /* U_ENUM: the values */
    const struct ufield *sub; /* U_BLOCK: its fields */
} ufield;

static const char *const overflow_values[] = {"BLOCK", "DROP_NEW", "KEEP_NEWEST", NULL};
static const char *const overflow_lcmon[] = {"block", "drop_newest", "keep_newest"};
static const char *const frame_values[] = {"V6TrainingData", "V7TrainingData", NULL};

static const ufield queue_fields[] = {
    {"name", U_STRING, false, NULL, NULL},
    {"queue_capacity", U_UINT, false, NULL, NULL},
    {"overflow_behavior", U_ENUM, false, overflow_values, NULL},
    {NULL, 0, false, NULL, NULL},
};

/* position_sampling { }: upstream's names, lcmon's, upstream's defaults
 * (written out: lcmon's differ, see the README). */
static const struct {
    const char *upstream, *lcmon, *dflt;
} weight_keys[] = {
    {"diff_focus_alpha", "alpha", "1"},         {"diff_focus_beta", "beta", "0"},
    {"diff_focus_gamma", "gamma", "1"},         {"diff_focus_tau", "tau", "1"},
    {"default_weight", "default_weight", "1"},  {"diff_focus_q_weight", "q_weight", "0"},
    {"diff_focus_pol_scale", "pol_scale", "1"},
};
#define N_WEIGHT_KEYS (sizeof weight_keys / sizeof weight_keys[0])

static const ufield sampling_fields[] = {
    {"diff_focus_q_weight", U_DOUBLE, false, NULL, NULL},
    {"diff_focus_pol_scale", U_DOUBLE, false, NULL, NULL},
    {"diff_focus_alpha", U_DOUBLE, false, NULL, NULL},
    {"diff_focus_beta", U_DOUBLE, false, NULL, NULL},
    {"diff_focus_gamma", U_DOUBLE, false, NULL, NULL},
    {"diff_focus_tau", U_DOUBLE, false, NULL, NULL},
    {"default_weight", U_DOUBLE, false, NULL, NULL},
    {NULL, 0, false, NULL, NULL},
};

#define OUTPUT_FIELD                                                                               \
    {                                                                                              \
        "output", U_BLOCK, false, NULL, queue_fields                                               \
    }
#define END_FIELD                                                                                  \
    {                                                                                              \
        NULL, 0, false, NULL, NULL                                                                 \
    }

static const ufield fpp_fields[] = {
    {"directory", U_STRING, false, NULL, NULL}, OUTPUT_FIELD, END_FIELD};
static const ufield loader_fields[] = {{"threads", U_UINT, false, NULL, NULL},
                                       {"frame_format", U_ENUM, false, frame_values, NULL},
                                       OUTPUT_FIELD,
                                       END_FIELD};
static const ufield pool_fields[] = {{"chunk_pool_size", U_UINT, false, NULL, NULL},
                                     {"source_ingestion_threads", U_UINT, false, NULL, NULL},
                                     {"chunk_loading_threads", U_UINT, false, NULL, NULL},
                                     {"hanse_sampling_threshold", U_UINT, false, NULL, NULL},
                                     {"hanse_sampling_gamma", U_DOUBLE, false, NULL, NULL},
                                     {"position_sampling", U_BLOCK, false, NULL, sampling_fields},
                                     {"cachehit_output", U_BLOCK, false, NULL, queue_fields},
                                     {"position_cache_size", U_UINT, false, NULL, NULL},
                                     {"caching_threads", U_UINT, false, NULL, NULL},
                                     OUTPUT_FIELD,
                                     END_FIELD};
static const ufield rescorer_fields[] = {{"threads", U_UINT, false, NULL, NULL},
                                         {"syzygy_paths", U_STRING, false, NULL, NULL},
                                         {"gaviota_paths", U_STRING, false, NULL, NULL},
                                         {"dist_temp", U_DOUBLE, false, NULL, NULL},
                                         {"dist_offset", U_DOUBLE, false, NULL, NULL},
                                         {"dtz_boost", U_DOUBLE, false, NULL, NULL},
                                         {"new_input_format", U_INT, false, NULL, NULL},
                                         {"deblunder_threshold", U_DOUBLE, false, NULL, NULL},
                                         {"deblunder_width", U_DOUBLE, false, NULL, NULL},
                                         {"st_q_theta", U_DOUBLE, false, NULL, NULL},
                                         OUTPUT_FIELD,
                                         END_FIELD};
static const ufield unpacker_fields[] = {
    {"threads", U_UINT, false, NULL, NULL},
    {"position_sampling_rate", U_DOUBLE, false, NULL, NULL},
    {"position_count", U_UINT, false, NULL, NULL},
    {"prefetch_count", U_UINT, false, NULL, NULL},
    {"prefetch_output", U_BLOCK, false, NULL, queue_fields},
    {"position_sampling", U_BLOCK, false, NULL, sampling_fields},
    OUTPUT_FIELD,
    END_FIELD};
static const ufield sampler_fields[] = {{"threads", U_UINT, false, NULL, NULL},
                                        {"reservoir_size_per_thread", U_UINT, false, NULL, NULL},
                                        OUTPUT_FIELD,
                                        END_FIELD};
static const ufield tensor_fields[] = {{"threads", U_UINT, false, NULL, NULL},
                                       {"batch_size", U_UINT, false, NULL, NULL},
                                       OUTPUT_FIELD,
                                       END_FIELD};
static const ufield splitter_fields[] = {
    {"output", U_BLOCK, true, NULL, queue_fields}, {"weight", U_UINT, true, NULL, NULL}, END_FIELD};
static const ufield output_only_fields[] = {OUTPUT_FIELD, END_FIELD};

struct conv;
struct lstage;
typedef void (*map_fn)(struct conv *c, struct lstage *s);

static void map_fpp(struct conv *, struct lstage *);
static void map_loader(struct conv *, struct lstage *);
static void map_pool(struct conv *, struct lstage *);
static void map_rescorer(struct conv *, struct lstage *);
static void map_unpacker(struct conv *, struct lstage *);
static void map_sampler(struct conv *, struct lstage *);
static void map_tensors(struct conv *, struct lstage *);
static void map_splitter(struct conv *, struct lstage *);
static void map_nothing(struct conv *, struct lstage *);

typedef struct ustage_type {
    const char *name; /* upstream's block */
    const ufield *fields;
    const char *lcmon; /* lcmon's stage type; NULL: none (commented out) */
    map_fn map;
} ustage_type;

static const ustage_type stage_types[] = {
    {"file_path_provider", fpp_fields, "file_path_provider", map_fpp},
    {"chunk_source_loader", loader_fields, "chunk_source_loader", map_loader},
    {"shuffling_chunk_pool", pool_fields, "shuffling_chunk_pool", map_pool},
    {"chunk_rescorer", rescorer_fields, NULL, map_rescorer},
    {"chunk_unpacker", unpacker_fields, "chunk_unpacker", map_unpacker},
    {"shuffling_frame_sampler", sampler_fields, "shuffling_frame_sampler", map_sampler},
    {"tensor_generator", tensor_fields, "tensor_generator", map_tensors},
    {"chunk_source_splitter", splitter_fields, "chunk_source_splitter", map_splitter},
    {"simple_chunk_extractor", output_only_fields, "chunk_reader", map_nothing},
    {"join_positions", output_only_fields, "join", map_nothing},
};
#define N_STAGE_TYPES (sizeof stage_types / sizeof stage_types[0])

/* ---- the conversion's state ---- */

#define MAX_INPUTS 8
#define MAX_OUTPUTS 8
#define NAME_MAX_LEN 40 /* lcmon's limit for a stage's name */

typedef struct lstage {
    const lc_tp_field *def; /* stage { } (NULL for a writer) */
    const char *up_name;    /* upstream's name (a writer: the output's alias) */
    char name[NAME_MAX_LEN + 8];
    const ustage_type *type;  /* NULL for a writer */
    const lc_tp_field *block; /* the stage-type block */
    const lc_tp_field *input_refs[MAX_INPUTS];
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
    char output[96];             /* the output queue's flow mapping, "" for none */
    const lc_tp_field *st_theta; /* a rescorer's st_q_theta */
    bool placed;
} lstage;

typedef struct conv {
    const char *origin;
    char *errs;
    size_t errs_len;
    FILE *ef;
    unsigned n_errors;
    lstage *st;
    unsigned n_st, n_stage_defs;
    unsigned n_unmapped, n_dropped;
    const lc_tp_field *outputs[MAX_OUTPUTS * 4];
    unsigned n_outputs;
} conv;

static void error_at(conv *c, unsigned line, unsigned col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void error_at(conv *c, unsigned line, unsigned col, const char *fmt, ...)
{
    va_list ap;
    char msg[1024];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Names and values from the text may hold any byte: one error, one
     * line. */
    fprintf(c->ef, "%s:%u:%u: ", c->origin, line, col);
    for (const char *p = msg; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            fprintf(c->ef, "\\x%02x", (unsigned char)*p);
        else
            fputc(*p, c->ef);
    }
    fputc('\n', c->ef);
    c->n_errors++;
}

/* ---- values ---- */

static bool valid_utf8(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char b = (unsigned char)s[i];
        size_t k = b < 0x80 ? 0 : (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : 9;
        if (k == 9 || (k == 1 && b < 0xc2) || i + k >= n + (k == 0))
            return false;
        for (size_t j = 1; j <= k; j++)
            if (((unsigned char)s[i + j] >> 6) != 2)
                return false;
        i += k + 1;
    }
    return true;
}

/* A YAML double-quoted scalar (valid UTF-8 passes as it is). */
static void put_yaml_string(FILE *f, const char *s, size_t n, size_t max)
{
    fputc('"', f);
    for (size_t i = 0; i < n && i < max; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(f, "\\x%02x", ch);
        else
            fputc(ch, f);
    }
    if (n > max)
        fputs("...", f);
    fputc('"', f);
}

static bool parse_uint(const char *s, unsigned long long *v)
{
    if (!s[0] || s[0] == '-' || s[0] == '+')
        return false;
    errno = 0;
    char *end;
    *v = strtoull(s, &end, 0);
    return !errno && *end == '\0';
}

static bool parse_int(const char *s, long long *v)
{
    errno = 0;
    char *end;
    *v = strtoll(s, &end, 0);
    return s[0] && !errno && *end == '\0';
}

static bool parse_double(const char *s, double *v)
{
    unsigned long long u;
    if (s[0] != '-' && (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2))) {
        if (!parse_uint(s, &u))
            return false;
        *v = (double)u;
        return true;
    }
    char *end;
    *v = strtod(s, &end);
    return s[0] && *end == '\0';
}

/* A number the way YAML (and lcmon) read it: the shortest decimal that
 * reads back as the same double. */
static void format_double(double v, char *buf, size_t n)
{
    if (isnan(v)) {
        snprintf(buf, n, ".nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, n, v < 0 ? "-.inf" : ".inf");
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* A field's value as YAML text for lcmon: numbers cleaned up. */
static void value_yaml(const lc_tp_field *f, utype t, char *buf, size_t n)
{
    unsigned long long u;
    long long i;
    double d;
    if (t == U_UINT && parse_uint(f->value, &u))
        snprintf(buf, n, "%llu", u);
    else if (t == U_INT && parse_int(f->value, &i))
        snprintf(buf, n, "%lld", i);
    else if (parse_double(f->value, &d))
        format_double(d, buf, n);
    else
        snprintf(buf, n, "%s", f->value);
}

/* ---- pass 1: upstream's schema ---- */

static const ufield *find_ufield(const ufield *table, const char *name)
{
    for (const ufield *u = table; u->name; u++)
        if (!strcmp(u->name, name))
            return u;
    return NULL;
}

static void unknown_field(conv *c, const lc_tp_field *f, const char *where, const ufield *table)
{
    const char *words[40];
    unsigned n = 0;
    for (const ufield *u = table; u->name && n < 39; u++)
        words[n++] = u->name;
    words[n] = NULL;
    const char *near = lc_closest_word(f->name, words);
    char hint[96] = "";
    if (near)
        snprintf(hint, sizeof hint, " (did you mean '%s'?)", near);
    error_at(c, f->line, f->col, "%s: unknown field '%s'%s; upstream refuses it too", where,
             f->name, hint);
}

static void check_fields(conv *c, const lc_tp_field *block, const ufield *table, const char *where);

static void check_value(conv *c, const lc_tp_field *f, const ufield *u, const char *where)
{
    unsigned long long uv;
    long long iv;
    double dv;
    const char *want = NULL;
    switch (u->type) {
    case U_UINT:
        if (f->kind != LC_TP_NUMBER || !parse_uint(f->value, &uv))
            want = "a whole number, 0 or more";
        break;
    case U_INT:
        if (f->kind != LC_TP_NUMBER || !parse_int(f->value, &iv))
            want = "a whole number";
        break;
    case U_DOUBLE:
        if (f->kind != LC_TP_NUMBER || !parse_double(f->value, &dv))
            want = "a number";
        break;
    case U_STRING:
        if (f->kind != LC_TP_STRING)
            want = "a string in double quotes";
        else if (!valid_utf8(f->value, f->value_len))
            want = "text in UTF-8";
        break;
    case U_ENUM:
        if (f->kind != LC_TP_IDENT) {
            want = "one of its names";
        } else {
            bool ok = false;
            for (const char *const *e = u->enums; *e; e++)
                ok |= !strcmp(*e, f->value);
            if (!ok)
                want = "one of its names";
        }
        break;
    case U_BLOCK:
        if (f->kind != LC_TP_BLOCK) {
            want = "a block { ... }";
        } else {
            char sub[160];
            snprintf(sub, sizeof sub, "%s.%s", where, f->name);
            check_fields(c, f, u->sub, sub);
        }
        break;
    }
    if (!want)
        return;
    char enums[160] = "";
    if (u->type == U_ENUM) {
        size_t o = 0;
        for (const char *const *e = u->enums; *e && o < sizeof enums; e++)
            o += (size_t)snprintf(enums + o, sizeof enums - o, "%s%s", o ? ", " : " (", *e);
        if (o < sizeof enums)
            snprintf(enums + o, sizeof enums - o, ")");
    }
    if (f->kind == LC_TP_BLOCK)
        error_at(c, f->value_line, f->value_col, "%s.%s: expects %s%s, found a block", where,
                 f->name, want, enums);
    else
        error_at(c, f->value_line, f->value_col, "%s.%s: expects %s%s, found %s '%.40s'", where,
                 f->name, want, enums, lc_tp_kind_name(f->kind), f->value);
}

static void check_fields(conv *c, const lc_tp_field *block, const ufield *table, const char *where)
{
    for (unsigned i = 0; i < block->n_fields; i++) {
        const lc_tp_field *f = &block->fields[i];
        const ufield *u = find_ufield(table, f->name);
        if (!u) {
            unknown_field(c, f, where, table);
            continue;
        }
        if (!u->repeated) {
            for (unsigned j = 0; j < i; j++)
                if (!strcmp(block->fields[j].name, f->name)) {
                    error_at(c, f->line, f->col,
                             "%s.%s: given twice (first at line %u); it holds one value", where,
                             f->name, block->fields[j].line);
                    break;
                }
        }
        check_value(c, f, u, where);
    }
}

static const lc_tp_field *get(const lc_tp_field *block, const char *name)
{
    if (!block)
        return NULL;
    for (unsigned i = 0; i < block->n_fields; i++)
        if (!strcmp(block->fields[i].name, name))
            return &block->fields[i];
    return NULL;
}

/* ---- pass 2: mapping ---- */

static void set(lstage *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set(lstage *s, const char *key, const char *fmt, ...)
{
    va_list ap;
    fprintf(s->bf, "      %s: ", key);
    va_start(ap, fmt);
    vfprintf(s->bf, fmt, ap);
    va_end(ap);
    fputc('\n', s->bf);
}

/* A scalar field converted under an lcmon key. */
static void set_field(lstage *s, const char *key, const lc_tp_field *f, utype t)
{
    char v[64];
    value_yaml(f, t, v, sizeof v);
    set(s, key, "%s", v);
}

/* A field kept as a comment: what was written, where, and why. */
static void note(conv *c, lstage *s, const lc_tp_field *f, const char *why, ...)
    __attribute__((format(printf, 4, 5)));
static void note(conv *c, lstage *s, const lc_tp_field *f, const char *why, ...)
{
    va_list ap;
    fprintf(s->bf, "      # %s: ", f->name);
    if (f->kind == LC_TP_BLOCK)
        fputs("{...}", s->bf);
    else if (f->kind == LC_TP_STRING)
        put_yaml_string(s->bf, f->value, f->value_len, 60);
    else
        fprintf(s->bf, "%.40s", f->value);
    fprintf(s->bf, " (line %u): ", f->line);
    va_start(ap, why);
    vfprintf(s->bf, why, ap);
    va_end(ap);
    fputc('\n', s->bf);
    c->n_unmapped++;
}

static void map_queue(lstage *s, const lc_tp_field *q)
{
    const lc_tp_field *cap = get(q, "queue_capacity"), *ov = get(q, "overflow_behavior");
    size_t o = 0;
    s->output[0] = '\0';
    if (!cap && !ov)
        return;
    o += (size_t)snprintf(s->output + o, sizeof s->output - o, "{");
    if (cap) {
        char v[32];
        value_yaml(cap, U_UINT, v, sizeof v);
        o += (size_t)snprintf(s->output + o, sizeof s->output - o, "capacity: %s", v);
    }
    if (ov) {
        unsigned k = 0;
        while (overflow_values[k] && strcmp(overflow_values[k], ov->value))
            k++;
        o += (size_t)snprintf(s->output + o, sizeof s->output - o, "%soverflow: %s",
                              cap ? ", " : "", overflow_values[k] ? overflow_lcmon[k] : "block");
    }
    snprintf(s->output + o, sizeof s->output - o, "}");
}

/* position_sampling { } as lcmon's position_weights: every key written,
 * upstream's defaults where the block leaves one out. */
static void put_weights(FILE *f, const lc_tp_field *ps)
{
    fputs("{", f);
    for (unsigned k = 0; k < N_WEIGHT_KEYS; k++) {
        const lc_tp_field *w = get(ps, weight_keys[k].upstream);
        char v[64];
        if (w)
            value_yaml(w, U_DOUBLE, v, sizeof v);
        else
            snprintf(v, sizeof v, "%s", weight_keys[k].dflt);
        fprintf(f, "%s%s: %s", k ? ", " : "", weight_keys[k].lcmon, v);
    }
    fputs("}", f);
}

static void map_fpp(conv *c, lstage *s)
{
    const lc_tp_field *d = get(s->block, "directory");
    if (!d) {
        error_at(c, s->block->line, s->block->col,
                 "stage '%s': file_path_provider needs a directory (upstream's too)", s->up_name);
        return;
    }
    fprintf(s->bf, "      directory: ");
    put_yaml_string(s->bf, d->value, d->value_len, (size_t)-1);
    fputc('\n', s->bf);
}

static void map_loader(conv *c, lstage *s)
{
    const lc_tp_field *f;
    if ((f = get(s->block, "threads")))
        set_field(s, "threads", f, U_UINT);
    if ((f = get(s->block, "frame_format")))
        note(c, s, f,
             "no equivalent: lcmon reads each record's version (V3 to V7) from the record");
}

static void map_pool(conv *c, lstage *s)
{
    const lc_tp_field *f, *threshold = get(s->block, "hanse_sampling_threshold");
    if ((f = get(s->block, "chunk_pool_size")))
        set_field(s, "chunk_pool_size", f, U_UINT);
    else
        set(s, "chunk_pool_size", "100000  # upstream's default");
    if ((f = get(s->block, "chunk_loading_threads")))
        set_field(s, "threads", f, U_UINT);
    else
        set(s, "threads", "4  # upstream's default chunk_loading_threads");
    if ((f = get(s->block, "source_ingestion_threads")))
        note(c, s, f, "no equivalent: lcmon indexes sources in chunk_source_loader (its threads)");
    const lc_tp_field *gamma = get(s->block, "hanse_sampling_gamma");
    const lc_tp_field *ps = get(s->block, "position_sampling");
    if (threshold) {
        fprintf(s->bf, "      hanse:\n        gamma: ");
        if (gamma) {
            char v[64];
            value_yaml(gamma, U_DOUBLE, v, sizeof v);
            fputs(v, s->bf);
        } else {
            fputs("1", s->bf);
        }
        fputs("\n        position_weights: ", s->bf);
        put_weights(s->bf, ps);
        fputc('\n', s->bf);
        note(c, s, threshold,
             "no equivalent: lcmon's Hanse sampling (hanse:, on because this is set) weighs every "
             "chunk");
    } else {
        if (gamma)
            note(c, s, gamma, "not converted: upstream uses it only with hanse_sampling_threshold");
        if (ps)
            note(c, s, ps, "not converted: upstream uses it only with hanse_sampling_threshold");
    }
    const char *cache[] = {"cachehit_output", "position_cache_size", "caching_threads"};
    for (unsigned k = 0; k < 3; k++)
        if ((f = get(s->block, cache[k])))
            note(c, s, f, "no equivalent: lcmon has no position cache");
}

static void map_rescorer(conv *c, lstage *s)
{
    c->n_dropped++;
    for (unsigned i = 0; i < s->block->n_fields; i++) {
        const lc_tp_field *f = &s->block->fields[i];
        if (!strcmp(f->name, "st_q_theta")) {
            s->st_theta = f;
            note(c, s, f,
                 "given as st_theta to the chunk_unpacker reading this stage (lcmon's "
                 "unpacker computes the V6 short-term targets)");
        } else {
            note(c, s, f, "no equivalent yet: lcmon has no chunk_rescorer");
        }
    }
}

static void map_unpacker(conv *c, lstage *s)
{
    const lc_tp_field *f, *count = get(s->block, "position_count");
    if ((f = get(s->block, "threads")))
        set_field(s, "threads", f, U_UINT);
    if (count)
        set_field(s, "positions_per_chunk", count, U_UINT);
    if ((f = get(s->block, "position_sampling_rate"))) {
        if (count)
            note(c, s, f, "not converted: position_count takes its place (as upstream)");
        else
            set_field(s, "sampling_rate", f, U_DOUBLE);
    }
    if ((f = get(s->block, "position_sampling"))) {
        if (count) {
            fputs("      position_weights: ", s->bf);
            put_weights(s->bf, f);
            fputc('\n', s->bf);
        } else {
            note(c, s, f,
                 "not converted: lcmon draws by weight with positions_per_chunk (upstream's "
                 "position_count); with a rate, see diff_focus in the README");
        }
    }
    if ((f = get(s->block, "prefetch_count")))
        note(c, s, f, "no equivalent: lcmon has no prefetch output");
    if ((f = get(s->block, "prefetch_output")))
        note(c, s, f, "no equivalent: lcmon has no prefetch output");
}

static void map_sampler(conv *c, lstage *s)
{
    (void)c;
    const lc_tp_field *t = get(s->block, "threads"),
                      *per = get(s->block, "reservoir_size_per_thread");
    unsigned long long threads = 1, size = 1000000;
    if (t)
        parse_uint(t->value, &threads);
    if (per)
        parse_uint(per->value, &size);
    unsigned long long total = threads ? size * threads : size;
    if (threads && total / threads != size)
        total = size;
    set(s, "reservoir_size", "%llu  # %llu a thread (%s) x %llu thread%s", total, size,
        per ? "reservoir_size_per_thread" : "upstream's default", threads, threads == 1 ? "" : "s");
    if (t)
        set_field(s, "threads", t, U_UINT);
}

static void map_tensors(conv *c, lstage *s)
{
    (void)c;
    const lc_tp_field *f;
    if ((f = get(s->block, "batch_size")))
        set_field(s, "batch_size", f, U_UINT);
    else
        set(s, "batch_size", "1024  # upstream's default");
    set(s, "layout", "current  # upstream's tensors");
    if ((f = get(s->block, "threads")))
        set_field(s, "threads", f, U_UINT);
}

/* A name lcmon accepts: letters, digits, '_' and '-', at most max. */
static void clean_name(const char *in, char *out, size_t max)
{
    size_t o = 0;
    for (const char *p = in; *p && o < max; p++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
        out[o++] = ok ? ch : '_';
    }
    if (!o)
        out[o++] = 'x';
    out[o] = '\0';
}

static void map_splitter(conv *c, lstage *s)
{
    const lc_tp_field *weights[MAX_OUTPUTS * 4];
    unsigned n_w = 0;
    const lc_tp_field *first_queue = NULL;
    s->n_out = 0;
    for (unsigned i = 0; i < s->block->n_fields; i++) {
        const lc_tp_field *f = &s->block->fields[i];
        if (!strcmp(f->name, "weight")) {
            if (n_w < MAX_OUTPUTS * 4)
                weights[n_w++] = f;
            continue;
        }
        if (strcmp(f->name, "output") != 0 || f->kind != LC_TP_BLOCK)
            continue;
        const lc_tp_field *name = get(f, "name");
        if (!name || name->kind != LC_TP_STRING) {
            error_at(c, f->line, f->col,
                     "stage '%s': chunk_source_splitter: every output needs a name (output { name: "
                     "\"train\" })",
                     s->up_name);
            continue;
        }
        if (s->n_out == MAX_OUTPUTS) {
            error_at(c, f->line, f->col, "stage '%s': more than %d outputs", s->up_name,
                     MAX_OUTPUTS);
            continue;
        }
        s->out_up[s->n_out] = name->value;
        clean_name(name->value, s->out_lc[s->n_out], 20);
        for (unsigned k = 0; k < s->n_out; k++)
            if (!strcmp(s->out_lc[k], s->out_lc[s->n_out]))
                error_at(c, name->value_line, name->value_col, "stage '%s': two outputs named '%s'",
                         s->up_name, s->out_lc[k]);
        s->n_out++;
        if (!first_queue) {
            first_queue = f;
            map_queue(s, f);
        } else {
            char other[sizeof s->output];
            memcpy(other, s->output, sizeof other);
            map_queue(s, f);
            if (strcmp(other, s->output) != 0) {
                note(c, s, f,
                     "not converted: lcmon gives all of a stage's outputs one queue "
                     "setting (the first output's)");
                memcpy(s->output, other, sizeof other);
            }
        }
    }
    if (!s->n_out) {
        error_at(c, s->block->line, s->block->col,
                 "stage '%s': chunk_source_splitter needs its outputs (output { name: \"train\" })",
                 s->up_name);
        return;
    }
    if (n_w && n_w != s->n_out)
        error_at(c, weights[0]->line, weights[0]->col,
                 "stage '%s': %u weights for %u outputs (one weight an output, in the same order)",
                 s->up_name, n_w, s->n_out);
    fputs("      outputs:\n", s->bf);
    for (unsigned k = 0; k < s->n_out; k++) {
        char v[64] = "1";
        if (n_w == s->n_out)
            value_yaml(weights[k], U_UINT, v, sizeof v);
        fprintf(s->bf, "        - {name: %s, weight: %s}\n", s->out_lc[k], v);
    }
}

static void map_nothing(conv *c, lstage *s)
{
    (void)c;
    if (!strcmp(s->type->lcmon, "join"))
        set(s, "mode", "available  # takes whichever input has positions, as upstream's join");
}

/* ---- reading the stages ---- */

static void read_stage(conv *c, const lc_tp_field *def, lstage *s)
{
    memset(s, 0, sizeof *s);
    s->def = def;
    s->bf = open_memstream(&s->body, &s->body_len);
    if (!s->bf)
        lc_fatal("out of memory");
    if (def->kind != LC_TP_BLOCK) {
        error_at(c, def->value_line, def->value_col, "stage: expects a block { ... }");
        return;
    }
    const lc_tp_field *name = NULL;
    for (unsigned i = 0; i < def->n_fields; i++) {
        const lc_tp_field *f = &def->fields[i];
        if (!strcmp(f->name, "name")) {
            if (name)
                error_at(c, f->line, f->col, "stage: name given twice (first at line %u)",
                         name->line);
            else if (f->kind != LC_TP_STRING || !valid_utf8(f->value, f->value_len))
                error_at(c, f->value_line, f->value_col,
                         "stage: name expects a string in double quotes");
            else
                name = f;
            continue;
        }
        if (!strcmp(f->name, "input")) {
            if (f->kind != LC_TP_STRING)
                error_at(c, f->value_line, f->value_col,
                         "stage: input expects a string in double quotes (\"stage\" or "
                         "\"stage.output\")");
            else if (s->n_inputs == MAX_INPUTS)
                error_at(c, f->line, f->col, "stage: more than %d inputs", MAX_INPUTS);
            else
                s->input_refs[s->n_inputs++] = f;
            continue;
        }
        const ustage_type *t = NULL;
        for (unsigned k = 0; k < N_STAGE_TYPES; k++)
            if (!strcmp(stage_types[k].name, f->name))
                t = &stage_types[k];
        if (!t) {
            const char *words[N_STAGE_TYPES + 3] = {"name", "input"};
            for (unsigned k = 0; k < N_STAGE_TYPES; k++)
                words[k + 2] = stage_types[k].name;
            words[N_STAGE_TYPES + 2] = NULL;
            const char *near = lc_closest_word(f->name, words);
            error_at(c, f->line, f->col, "stage: unknown field '%s'%s%s%s; upstream refuses it too",
                     f->name, near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
            continue;
        }
        if (s->type) {
            error_at(c, f->line, f->col, "stage: two stage blocks (%s at line %u and %s); give one",
                     s->type->name, s->block->line, f->name);
            continue;
        }
        s->type = t;
        s->block = f;
    }
    s->up_name = name ? name->value : NULL;
    if (!name)
        error_at(c, def->line, def->col, "stage: no name (name: \"pool\")");
    if (!s->type)
        error_at(c, def->line, def->col,
                 "stage '%s': no stage block (one of file_path_provider, "
                 "chunk_source_loader, shuffling_chunk_pool, ...)",
                 name ? name->value : "?");
    else if (s->block->kind != LC_TP_BLOCK)
        error_at(c, s->block->value_line, s->block->value_col, "stage: %s expects a block { ... }",
                 s->type->name);
}

/* Which stage (index) an input or output string names, and which of its
 * outputs (lcmon's name, "" for the only one). -1 when none, with an
 * error. */
static int resolve(conv *c, const char *who, const lc_tp_field *ref_field, const char *ref,
                   char *out_name, size_t out_len)
{
    out_name[0] = '\0';
    int found = -1;
    const char *suffix = NULL;
    for (unsigned i = 0; i < c->n_stage_defs; i++)
        if (c->st[i].up_name && !strcmp(c->st[i].up_name, ref))
            found = (int)i;
    if (found < 0) {
        const char *dot = strrchr(ref, '.');
        if (dot)
            for (unsigned i = 0; i < c->n_stage_defs; i++)
                if (c->st[i].up_name && strlen(c->st[i].up_name) == (size_t)(dot - ref) &&
                    !strncmp(c->st[i].up_name, ref, (size_t)(dot - ref))) {
                    found = (int)i;
                    suffix = dot + 1;
                }
    }
    if (found < 0) {
        const char *words[64];
        unsigned n = 0;
        for (unsigned i = 0; i < c->n_stage_defs && n < 63; i++)
            if (c->st[i].up_name)
                words[n++] = c->st[i].up_name;
        words[n] = NULL;
        const char *near = lc_closest_word(ref, words);
        error_at(c, ref_field->value_line, ref_field->value_col,
                 "%s '%s': no stage has this name%s%s%s", who, ref, near ? " (did you mean '" : "",
                 near ? near : "", near ? "'?)" : "");
        return -1;
    }
    lstage *s = &c->st[found];
    if (s->type && !strcmp(s->type->name, "chunk_source_splitter")) {
        if (!suffix) {
            error_at(c, ref_field->value_line, ref_field->value_col,
                     "%s '%s': the splitter has several outputs: name one ('%s.%s')", who, ref, ref,
                     s->n_out ? s->out_up[0] : "train");
            return -1;
        }
        for (unsigned k = 0; k < s->n_out; k++)
            if (!strcmp(s->out_up[k], suffix)) {
                snprintf(out_name, out_len, "%s", s->out_lc[k]);
                return found;
            }
        error_at(c, ref_field->value_line, ref_field->value_col,
                 "%s '%s': stage '%s' has no output named '%s'", who, ref, s->up_name, suffix);
        return -1;
    }
    if (suffix && s->block) {
        const char *extra[] = {"cachehit_output", "prefetch_output"};
        for (unsigned k = 0; k < 2; k++) {
            const lc_tp_field *q = get(s->block, extra[k]);
            const lc_tp_field *qn = get(q, "name");
            if (qn && qn->kind == LC_TP_STRING && !strcmp(qn->value, suffix)) {
                error_at(c, ref_field->value_line, ref_field->value_col,
                         "%s '%s': lcmon has no %s; read the stage's main output ('%s')", who, ref,
                         extra[k], s->up_name);
                return -1;
            }
        }
    }
    return found;
}

/* ---- pass 3: printing ---- */

static void print_ref(FILE *f, const conv *c, const lstage *s, unsigned k)
{
    fputs(c->st[s->in_stage[k]].name, f);
    if (s->in_out[k][0])
        fprintf(f, ".%s", s->in_out[k]);
}

static void print_stage(FILE *f, conv *c, lstage *s)
{
    fflush(s->bf);
    if (s->type && !s->type->lcmon) {
        fprintf(f,
                "  # - name: %s  (line %u: %s, which lcmon does not have yet; its readers read "
                "its input)\n",
                s->name, s->def->line, s->type->name);
        fprintf(f, "  #   %s:\n", s->type->name);
        for (const char *p = s->body; p && *p;) {
            const char *nl = strchr(p, '\n');
            size_t n = nl ? (size_t)(nl - p) : strlen(p);
            /* The body's lines are comments already ("      # ..."). */
            const char *text = p;
            while (n && *text == ' ')
                text++, n--;
            if (n >= 2 && text[0] == '#' && text[1] == ' ')
                text += 2, n -= 2;
            fprintf(f, "  #     %.*s\n", (int)n, text);
            p += (size_t)(text - p) + n + (nl ? 1 : 0);
        }
        return;
    }
    fprintf(f, "  - name: %s", s->name);
    if (s->up_name && strcmp(s->up_name, s->name) != 0) {
        fputs("  # upstream's ", f);
        fputs(s->def ? "name: " : "output: ", f);
        put_yaml_string(f, s->up_name, strlen(s->up_name), 60);
    }
    fputc('\n', f);
    if (s->n_inputs == 1) {
        fputs("    input: ", f);
        print_ref(f, c, s, 0);
        fputc('\n', f);
    } else if (s->n_inputs > 1) {
        fputs("    inputs: [", f);
        for (unsigned k = 0; k < s->n_inputs; k++) {
            if (k)
                fputs(", ", f);
            print_ref(f, c, s, k);
        }
        fputs("]\n", f);
    }
    const char *type = s->type ? s->type->lcmon : "fifo_writer";
    bool has_setting = false;
    for (const char *p = s->body; p && *p;) {
        const char *q = p;
        while (*q == ' ')
            q++;
        if (*q != '#')
            has_setting = true;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : p + strlen(p);
    }
    fprintf(f, "    %s:%s\n", type, has_setting ? "" : " {}");
    if (s->body)
        fputs(s->body, f);
    if (s->output[0])
        fprintf(f, "    output: %s\n", s->output);
}

/* The lcmon names: upstream's, cleaned, unique. */
static void name_stages(conv *c)
{
    for (unsigned i = 0; i < c->n_st; i++) {
        lstage *s = &c->st[i];
        clean_name(s->up_name ? s->up_name : "stage", s->name, NAME_MAX_LEN);
        for (unsigned n = 2;; n++) {
            bool clash = false;
            for (unsigned j = 0; j < i; j++)
                clash |= !strcmp(c->st[j].name, s->name);
            if (!clash)
                break;
            char base[NAME_MAX_LEN + 1];
            clean_name(s->up_name ? s->up_name : "stage", base, NAME_MAX_LEN - 4);
            snprintf(s->name, sizeof s->name, "%s_%u", base, n);
        }
    }
}

static void free_conv(conv *c)
{
    for (unsigned i = 0; i < c->n_st; i++) {
        if (c->st[i].bf)
            fclose(c->st[i].bf);
        free(c->st[i].body);
    }
    free(c->st);
    if (c->ef)
        fclose(c->ef);
}

/* The DataLoaderConfig: data_loader { } of a whole training config (the
 * other sections named in `ignored`), or the file itself. NULL with an
 * error when neither. */
static const lc_tp_field *find_loader(conv *c, const lc_tp_field *root, char *ignored,
                                      size_t ignored_len)
{
    const lc_tp_field *dl = get(root, "data_loader");
    ignored[0] = '\0';
    if (!dl) {
        if (get(root, "stage"))
            return root;
        error_at(c, 1, 1,
                 "no data_loader { ... } block and no stage { ... } blocks: is this "
                 "upstream's DataLoaderConfig (or a training config holding one)?");
        return NULL;
    }
    size_t o = 0;
    for (unsigned i = 0; i < root->n_fields; i++) {
        const lc_tp_field *f = &root->fields[i];
        if (!strcmp(f->name, "data_loader")) {
            if (f != dl)
                error_at(c, f->line, f->col, "data_loader given twice (first at line %u)",
                         dl->line);
            continue;
        }
        if (strstr(ignored, f->name) || o >= ignored_len - 1)
            continue;
        o += (size_t)snprintf(ignored + o, ignored_len - o, "%s%s", o ? ", " : "", f->name);
    }
    if (dl->kind != LC_TP_BLOCK) {
        error_at(c, dl->value_line, dl->value_col, "data_loader: expects a block { ... }");
        return NULL;
    }
    return dl;
}

/* Its stages (read, checked against upstream's schema, mapped) and
 * outputs. false when it holds no stage. */
static bool read_loader(conv *c, const lc_tp_field *dl)
{
    unsigned n_defs = 0;
    for (unsigned i = 0; i < dl->n_fields; i++) {
        const lc_tp_field *f = &dl->fields[i];
        if (!strcmp(f->name, "stage")) {
            n_defs++;
        } else if (!strcmp(f->name, "output")) {
            if (f->kind != LC_TP_STRING)
                error_at(c, f->value_line, f->value_col,
                         "output expects a string (\"alias:stage\" or \"stage\")");
            else if (c->n_outputs < sizeof c->outputs / sizeof c->outputs[0])
                c->outputs[c->n_outputs++] = f;
        } else {
            const char *words[] = {"stage", "output", "data_loader", NULL};
            const char *near = lc_closest_word(f->name, words);
            error_at(c, f->line, f->col,
                     "unknown field '%s'%s%s%s: a DataLoaderConfig holds stage "
                     "and output",
                     f->name, near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
        }
    }
    if (!n_defs) {
        if (!c->n_errors)
            error_at(c, dl->line, dl->col, "data_loader holds no stage { ... } blocks");
        return false;
    }
    c->st = lc_xcalloc(n_defs + c->n_outputs, sizeof *c->st);
    for (unsigned i = 0; i < dl->n_fields; i++)
        if (!strcmp(dl->fields[i].name, "stage"))
            read_stage(c, &dl->fields[i], &c->st[c->n_st++]);
    c->n_stage_defs = c->n_st;
    /* Names: unique upstream, then as lcmon spells them. */
    for (unsigned i = 0; i < c->n_st; i++)
        for (unsigned j = 0; j < i; j++)
            if (c->st[i].up_name && c->st[j].up_name && !strcmp(c->st[i].up_name, c->st[j].up_name))
                error_at(c, c->st[i].def->line, c->st[i].def->col,
                         "two stages named '%s' (the first at line %u)", c->st[i].up_name,
                         c->st[j].def->line);
    /* Upstream's schema, then each stage's settings. */
    for (unsigned i = 0; i < c->n_st; i++) {
        lstage *s = &c->st[i];
        if (!s->type || s->block->kind != LC_TP_BLOCK)
            continue;
        char where[160];
        snprintf(where, sizeof where, "stage '%s': %s", s->up_name ? s->up_name : "?",
                 s->type->name);
        unsigned before = c->n_errors;
        check_fields(c, s->block, s->type->fields, where);
        if (c->n_errors != before || !s->up_name)
            continue;
        if (strcmp(s->type->name, "chunk_source_splitter") != 0)
            map_queue(s, get(s->block, "output"));
        s->type->map(c, s);
    }
    return true;
}

/* A fifo_writer for each output, named after its alias (once every
 * stage has its lcmon name). */
static void add_writers(conv *c)
{
    for (unsigned k = 0; k < c->n_outputs; k++) {
        const lc_tp_field *o = c->outputs[k];
        lstage *w = &c->st[c->n_st++];
        memset(w, 0, sizeof *w);
        w->bf = open_memstream(&w->body, &w->body_len);
        if (!w->bf)
            lc_fatal("out of memory");
        w->up_name = o->value;
        w->input_refs[0] = o;
        w->n_inputs = 1;
    }
    name_stages(c);
    /* The writers' names and pipes: the output's alias. */
    for (unsigned k = 0; k < c->n_outputs; k++) {
        lstage *w = &c->st[c->n_stage_defs + k];
        const char *v = c->outputs[k]->value;
        const char *colon = strchr(v, ':');
        char *alias = colon ? lc_xstrndup(v, (size_t)(colon - v)) : lc_xstrdup(v);
        char *dot = colon ? NULL : strchr(alias, '.');
        if (dot)
            *dot = '\0';
        char base[NAME_MAX_LEN + 1];
        clean_name(alias, base, NAME_MAX_LEN - 6);
        snprintf(w->name, sizeof w->name, "%s", base);
        for (unsigned j = 0; j < c->n_st; j++)
            if (j != c->n_stage_defs + k && !strcmp(c->st[j].name, w->name)) {
                snprintf(w->name, sizeof w->name, "%s_pipe", base);
                break;
            }
        if (c->n_outputs == 1)
            set(w, "path", "'${LCMON_PIPE:-%s.pipe}'", base);
        else
            set(w, "path", "%s.pipe", base);
        free(alias);
    }
}

/* Every input (and output) to the stage and output it names. */
static void resolve_inputs(conv *c)
{
    for (unsigned i = 0; i < c->n_st; i++) {
        lstage *s = &c->st[i];
        for (unsigned k = 0; k < s->n_inputs; k++) {
            const char *ref = s->input_refs[k]->value;
            if (i >= c->n_stage_defs && strchr(ref, ':'))
                ref = strchr(ref, ':') + 1;
            char who[96];
            if (i >= c->n_stage_defs)
                snprintf(who, sizeof who, "output");
            else
                snprintf(who, sizeof who, "stage '%.40s': input", s->up_name ? s->up_name : "?");
            s->in_stage[k] =
                resolve(c, who, s->input_refs[k], ref, s->in_out[k], sizeof s->in_out[k]);
        }
    }
}

/* Stages lcmon has no type for are left out: their readers read their
 * input; a rescorer's st_q_theta goes to the unpackers reading it. */
static int leave_out(conv *c)
{
    for (unsigned i = 0; i < c->n_st; i++) {
        lstage *s = &c->st[i];
        for (unsigned k = 0; k < s->n_inputs; k++) {
            lstage *up = &c->st[s->in_stage[k]];
            if (up->st_theta && s->type && !strcmp(s->type->name, "chunk_unpacker")) {
                char v[64];
                value_yaml(up->st_theta, U_DOUBLE, v, sizeof v);
                set(s, "st_theta", "%s  # chunk_rescorer '%s''s st_q_theta", v, up->name);
            }
            for (unsigned hops = 0; up->type && !up->type->lcmon; hops++) {
                if (!up->n_inputs || hops > c->n_st) {
                    error_at(c, up->def->line, up->def->col,
                             "stage '%s': a %s that reads nothing cannot be left out; give it an "
                             "input",
                             up->up_name, up->type->name);
                    return LC_ECONFIG;
                }
                s->in_stage[k] = up->in_stage[0];
                memcpy(s->in_out[k], up->in_out[0], sizeof s->in_out[k]);
                up = &c->st[s->in_stage[k]];
            }
        }
    }
    return 0;
}

/* The YAML: a header, then the stages, every input before its readers. */
static int print_config(conv *c, const char *ignored, FILE *out)
{
    fprintf(out, "# lcmon configuration converted by `lcmon convert-config` from upstream's\n"
                 "# DataLoaderConfig in ");
    put_yaml_string(out, c->origin, strlen(c->origin), 120);
    fprintf(out, ".\n"
                 "# Check it with `lcmon --check-config FILE`; the README's \"Stage types\"\n"
                 "# gives each setting. A comment marks every field lcmon has no\n"
                 "# equivalent for, and every upstream default written out because\n"
                 "# lcmon's differs. Queues without queue_capacity take lcmon's default\n"
                 "# (16; upstream's is 4).\n");
    if (ignored[0])
        fprintf(out, "# Not the loader's, so not converted: %s.\n", ignored);
    if (!c->n_outputs)
        fprintf(out, "# The config names no output: add a fifo_writer stage to feed a trainer.\n");
    fprintf(out, "stages:\n");
    unsigned placed = 0;
    while (placed < c->n_st) {
        int pick = -1;
        for (unsigned i = 0; i < c->n_st && pick < 0; i++) {
            lstage *s = &c->st[i];
            if (s->placed)
                continue;
            bool ready = true;
            for (unsigned k = 0; k < s->n_inputs; k++)
                ready &= c->st[s->in_stage[k]].placed;
            /* A left-out stage's readers do not wait for it: print it after
             * its own input. */
            if (ready)
                pick = (int)i;
        }
        if (pick < 0) {
            char names[256];
            size_t o = 0;
            for (unsigned i = 0; i < c->n_st && o < sizeof names - 1; i++)
                if (!c->st[i].placed)
                    o += (size_t)snprintf(names + o, sizeof names - o, "%s'%s'", o ? ", " : "",
                                          c->st[i].up_name);
            unsigned line = 1, col = 1;
            for (unsigned i = 0; i < c->n_st; i++)
                if (!c->st[i].placed && c->st[i].def) {
                    line = c->st[i].def->line;
                    col = c->st[i].def->col;
                    break;
                }
            error_at(c, line, col, "the stages %s read one another in a cycle", names);
            return LC_ECONFIG;
        }
        c->st[pick].placed = true;
        placed++;
        print_stage(out, c, &c->st[pick]);
    }
    return 0;
}

static int convert(conv *c, const lc_tp_field *root, FILE *out)
{
    char ignored[256];
    const lc_tp_field *dl = find_loader(c, root, ignored, sizeof ignored);
    if (!dl || !read_loader(c, dl))
        return LC_ECONFIG;
    /* Inputs are resolved even after errors: all problems at once. */
    add_writers(c);
    resolve_inputs(c);
    if (c->n_errors || leave_out(c) != 0)
        return LC_ECONFIG;
    return print_config(c, ignored, out);
}

typedef struct err_line {
    unsigned line, col, order;
    const char *text;
    size_t len;
} err_line;

static int by_place(const void *a, const void *b)
{
    const err_line *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The error lines ("origin:LINE:COL: ...", the place after `skip` bytes)
 * in the order of the text, as lcmon's own configuration errors are. */
static void sort_lines(char *text, size_t skip)
{
    if (!text)
        return;
    unsigned n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    err_line *v = lc_xcalloc(n + 1, sizeof *v);
    unsigned k = 0;
    for (const char *p = text; *p && k <= n;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        v[k].text = p;
        v[k].len = len;
        v[k].order = k;
        if (len > skip)
            sscanf(p + skip, "%u:%u", &v[k].line, &v[k].col);
        k++;
        p += len + (nl ? 1 : 0);
    }
    qsort(v, k, sizeof *v, by_place);
    size_t total = strlen(text);
    char *sorted = lc_xmalloc(total + 1), *o = sorted;
    for (unsigned i = 0; i < k; i++) {
        memcpy(o, v[i].text, v[i].len);
        o += v[i].len;
        *o++ = '\n';
    }
    *o = '\0';
    memcpy(text, sorted, total < (size_t)(o - sorted) ? total : (size_t)(o - sorted));
    text[total] = '\0';
    free(sorted);
    free(v);
}

int lc_upstream_convert(const char *text, size_t len, const char *origin, lc_upstream_result *out)
{
    memset(out, 0, sizeof *out);
    conv c = {.origin = origin};
    c.ef = open_memstream(&c.errs, &c.errs_len);
    if (!c.ef)
        lc_fatal("out of memory");
    lc_tp_field root;
    lc_error perr = {0};
    int rc;
    if (lc_textproto_parse(text, len, &root, &perr) < 0) {
        fprintf(c.ef, "%s:%s (protobuf text format)\n", origin, perr.msg);
        c.n_errors++;
        rc = LC_ECONFIG;
    } else {
        char *yaml = NULL;
        size_t yaml_len = 0;
        FILE *yf = open_memstream(&yaml, &yaml_len);
        if (!yf)
            lc_fatal("out of memory");
        rc = convert(&c, &root, yf);
        fclose(yf);
        if (rc == 0 && !c.n_errors) {
            out->yaml = yaml;
            out->n_stages = 0;
            for (unsigned i = 0; i < c.n_st; i++)
                out->n_stages += !c.st[i].type || c.st[i].type->lcmon != NULL;
            out->n_outputs = c.n_outputs;
            out->n_unmapped = c.n_unmapped;
            out->n_dropped = c.n_dropped;
        } else {
            free(yaml);
            rc = LC_ECONFIG;
        }
        lc_textproto_free(&root);
    }
    free_conv(&c); /* closes the errors' stream */
    if (rc < 0) {
        sort_lines(c.errs, strlen(origin) + 1);
        out->errors = c.errs;
        /* Drop the last newline. */
        if (out->errors && c.errs_len && out->errors[c.errs_len - 1] == '\n')
            out->errors[c.errs_len - 1] = '\0';
    } else {
        free(c.errs);
    }
    return rc;
}

void lc_upstream_result_free(lc_upstream_result *r)
{
    free(r->yaml);
    free(r->errors);
    memset(r, 0, sizeof *r);
}
