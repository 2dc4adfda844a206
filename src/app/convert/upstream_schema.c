/*
 * upstream_schema: upstream's DataLoaderConfig schema (the tables below,
 * as upstream's parser reads it) and pass 1 of the conversion: every field
 * checked against it, every problem collected. See upstream_conv.h.
 */
#include "app/convert/upstream_conv.h"

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

const char *const up_overflow_values[] = {"BLOCK", "DROP_NEW", "KEEP_NEWEST", NULL};
const char *const up_overflow_lcmon[] = {"block", "drop_newest", "keep_newest"};
static const char *const frame_values[] = {"V6TrainingData", "V7TrainingData", NULL};

static const upstream_field queue_fields[] = {
    {"name", U_STRING, false, NULL, NULL},
    {"queue_capacity", U_UINT, false, NULL, NULL},
    {"overflow_behavior", U_ENUM, false, up_overflow_values, NULL},
    {NULL, 0, false, NULL, NULL},
};

static const upstream_field sampling_fields[] = {
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

static const upstream_field fpp_fields[] = {
    {"directory", U_STRING, false, NULL, NULL}, OUTPUT_FIELD, END_FIELD};
static const upstream_field loader_fields[] = {{"threads", U_UINT, false, NULL, NULL},
                                               {"frame_format", U_ENUM, false, frame_values, NULL},
                                               OUTPUT_FIELD,
                                               END_FIELD};
static const upstream_field pool_fields[] = {
    {"chunk_pool_size", U_UINT, false, NULL, NULL},
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
static const upstream_field rescorer_fields[] = {
    {"threads", U_UINT, false, NULL, NULL},
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
static const upstream_field unpacker_fields[] = {
    {"threads", U_UINT, false, NULL, NULL},
    {"position_sampling_rate", U_DOUBLE, false, NULL, NULL},
    {"position_count", U_UINT, false, NULL, NULL},
    {"prefetch_count", U_UINT, false, NULL, NULL},
    {"prefetch_output", U_BLOCK, false, NULL, queue_fields},
    {"position_sampling", U_BLOCK, false, NULL, sampling_fields},
    OUTPUT_FIELD,
    END_FIELD};
static const upstream_field sampler_fields[] = {
    {"threads", U_UINT, false, NULL, NULL},
    {"reservoir_size_per_thread", U_UINT, false, NULL, NULL},
    OUTPUT_FIELD,
    END_FIELD};
static const upstream_field tensor_fields[] = {{"threads", U_UINT, false, NULL, NULL},
                                               {"batch_size", U_UINT, false, NULL, NULL},
                                               OUTPUT_FIELD,
                                               END_FIELD};
static const upstream_field splitter_fields[] = {
    {"output", U_BLOCK, true, NULL, queue_fields}, {"weight", U_UINT, true, NULL, NULL}, END_FIELD};
static const upstream_field output_only_fields[] = {OUTPUT_FIELD, END_FIELD};
/* training.schedule (proto3 int32s): what upstream's daemon reads of it. */
const upstream_field up_schedule_fields[] = {{"steps_per_network", U_INT, false, NULL, NULL},
                                             {"chunks_per_network", U_INT, false, NULL, NULL},
                                             END_FIELD};

const upstream_stage_type up_stage_types[] = {
    {"file_path_provider", fpp_fields, "file_path_provider", UP_MAP_PROVIDER},
    {"chunk_source_loader", loader_fields, "chunk_source_loader", UP_MAP_LOADER},
    {"shuffling_chunk_pool", pool_fields, "shuffling_chunk_pool", UP_MAP_POOL},
    {"chunk_rescorer", rescorer_fields, "chunk_rescorer", UP_MAP_RESCORER},
    {"chunk_unpacker", unpacker_fields, "chunk_unpacker", UP_MAP_UNPACKER},
    {"shuffling_frame_sampler", sampler_fields, "shuffling_frame_sampler", UP_MAP_SAMPLER},
    {"tensor_generator", tensor_fields, "tensor_generator", UP_MAP_TENSORS},
    {"chunk_source_splitter", splitter_fields, "chunk_source_splitter", UP_MAP_SPLITTER},
    {"simple_chunk_extractor", output_only_fields, "chunk_reader", UP_MAP_NOTHING},
    {"join_positions", output_only_fields, "join", UP_MAP_NOTHING},
};
const size_t up_n_stage_types = sizeof up_stage_types / sizeof up_stage_types[0];
_Static_assert(sizeof up_stage_types / sizeof up_stage_types[0] <= UP_MAX_STAGE_TYPES,
               "UP_MAX_STAGE_TYPES holds every stage type");

/* ---- values ---- */

bool up_valid_utf8(const char *s, size_t n)
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
void up_put_yaml_string(FILE *f, const char *s, size_t n, size_t max)
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

bool up_parse_uint(const char *s, unsigned long long *v)
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
        if (!up_parse_uint(s, &u))
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
void up_value_yaml(const lc_textproto_field *f, upstream_type t, char *buf, size_t n)
{
    unsigned long long u;
    long long i;
    double d;
    if (t == U_UINT && up_parse_uint(f->value, &u))
        snprintf(buf, n, "%llu", u);
    else if (t == U_INT && parse_int(f->value, &i))
        snprintf(buf, n, "%lld", i);
    else if (parse_double(f->value, &d))
        format_double(d, buf, n);
    else
        snprintf(buf, n, "%s", f->value);
}

/* ---- pass 1: upstream's schema ---- */

static const upstream_field *find_ufield(const upstream_field *table, const char *name)
{
    for (const upstream_field *u = table; u->name; u++)
        if (!strcmp(u->name, name))
            return u;
    return NULL;
}

static void unknown_field(conversion *c, const lc_textproto_field *f, const char *where,
                          const upstream_field *table)
{
    const char *words[40];
    unsigned n = 0;
    for (const upstream_field *u = table; u->name && n < 39; u++)
        words[n++] = u->name;
    words[n] = NULL;
    const char *near = lc_closest_word(f->name, words);
    char hint[96] = "";
    if (near)
        snprintf(hint, sizeof hint, " (did you mean '%s'?)", near);
    up_error_at(c, f->line, f->col, "%s: unknown field '%s'%s; upstream refuses it too", where,
                f->name, hint);
}

static void check_value(conversion *c, const lc_textproto_field *f, const upstream_field *u,
                        const char *where)
{
    unsigned long long uv;
    long long iv;
    double dv;
    const char *want = NULL;
    switch (u->type) {
    case U_UINT:
        if (f->kind != LC_TEXTPROTO_NUMBER || !up_parse_uint(f->value, &uv))
            want = "a whole number, 0 or more";
        break;
    case U_INT:
        if (f->kind != LC_TEXTPROTO_NUMBER || !parse_int(f->value, &iv))
            want = "a whole number";
        break;
    case U_DOUBLE:
        if (f->kind != LC_TEXTPROTO_NUMBER || !parse_double(f->value, &dv))
            want = "a number";
        break;
    case U_STRING:
        if (f->kind != LC_TEXTPROTO_STRING)
            want = "a string in double quotes";
        else if (!up_valid_utf8(f->value, f->value_len))
            want = "text in UTF-8";
        break;
    case U_ENUM:
        if (f->kind != LC_TEXTPROTO_IDENT) {
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
        if (f->kind != LC_TEXTPROTO_BLOCK) {
            want = "a block { ... }";
        } else {
            char sub[160];
            snprintf(sub, sizeof sub, "%s.%s", where, f->name);
            up_check_fields(c, f, u->sub, sub);
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
    if (f->kind == LC_TEXTPROTO_BLOCK)
        up_error_at(c, f->value_line, f->value_col, "%s.%s: expects %s%s, found a block", where,
                    f->name, want, enums);
    else
        up_error_at(c, f->value_line, f->value_col, "%s.%s: expects %s%s, found %s '%.40s'", where,
                    f->name, want, enums, lc_textproto_kind_name(f->kind), f->value);
}

void up_check_fields(conversion *c, const lc_textproto_field *block, const upstream_field *table,
                     const char *where)
{
    for (unsigned i = 0; i < block->n_fields; i++) {
        const lc_textproto_field *f = &block->fields[i];
        const upstream_field *u = find_ufield(table, f->name);
        if (!u) {
            unknown_field(c, f, where, table);
            continue;
        }
        if (!u->repeated) {
            for (unsigned j = 0; j < i; j++)
                if (!strcmp(block->fields[j].name, f->name)) {
                    up_error_at(c, f->line, f->col,
                                "%s.%s: given twice (first at line %u); it holds one value", where,
                                f->name, block->fields[j].line);
                    break;
                }
        }
        check_value(c, f, u, where);
    }
}

const lc_textproto_field *up_get(const lc_textproto_field *block, const char *name)
{
    if (!block)
        return NULL;
    for (unsigned i = 0; i < block->n_fields; i++)
        if (!strcmp(block->fields[i].name, name))
            return &block->fields[i];
    return NULL;
}
