/*
 * config: see config.h. The libcyaml schema for a stage is built once from
 * the registry (pthread_once); libcyaml reports problems through a log
 * callback, which we collect into the error record so that the person reading
 * it sees the library's account of which key or value is wrong.
 */
#include "pipeline/config.h"
#include "pipeline/config_lint.h"

#include "core/exit.h"
#include "core/file.h"
#include "core/log.h"
#include "stages/registry.h"

#include <cyaml/cyaml.h>
#include <yaml.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const cyaml_strval_t overflow_strings[] = {
    {"block", LC_OVERFLOW_BLOCK},
    {"drop_newest", LC_OVERFLOW_DROP_NEWEST},
    {"keep_newest", LC_OVERFLOW_KEEP_NEWEST},
};

static const cyaml_schema_field_t queue_fields[] = {
    CYAML_FIELD_INT_PTR("capacity", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_queue_config,
                        capacity_opt),
    CYAML_FIELD_ENUM_PTR("overflow", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_queue_config,
                         overflow_opt, overflow_strings, CYAML_ARRAY_LEN(overflow_strings)),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t input_name_schema = {
    CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 0, CYAML_UNLIMITED),
};

static cyaml_schema_field_t stage_fields[5 + LC_MAX_STAGE_TYPES];
static cyaml_schema_value_t stage_schema;
static cyaml_schema_field_t top_fields[6];
static cyaml_schema_value_t top_schema;
static pthread_once_t schema_once = PTHREAD_ONCE_INIT;

static void build_schema(void)
{
    size_t n = 0;
    stage_fields[n++] = (cyaml_schema_field_t)CYAML_FIELD_STRING_PTR(
        "name", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_stage_config, name, 0,
        CYAML_UNLIMITED);
    stage_fields[n++] = (cyaml_schema_field_t)CYAML_FIELD_STRING_PTR(
        "input", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_stage_config, input, 0,
        CYAML_UNLIMITED);
    stage_fields[n++] = (cyaml_schema_field_t)CYAML_FIELD_SEQUENCE_COUNT(
        "inputs", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_stage_config, inputs, n_inputs_given,
        &input_name_schema, 1, LC_STAGE_MAX_INPUTS);
    stage_fields[n++] = (cyaml_schema_field_t)CYAML_FIELD_MAPPING_PTR(
        "output", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_stage_config, output, queue_fields);
    size_t nclasses = lc_stage_registry_count();
    if (nclasses > LC_MAX_STAGE_TYPES)
        lc_fatal("more stage types (%zu) than LC_MAX_STAGE_TYPES", nclasses);
    for (size_t i = 0; i < nclasses; i++) {
        const lc_stage_class *cls = lc_stage_registry[i];
        cyaml_schema_field_t *f = &stage_fields[n++];
        memset(f, 0, sizeof *f);
        f->key = cls->type_name;
        f->data_offset = (uint32_t)(offsetof(lc_stage_config, blocks) + i * sizeof(void *));
        f->value.type = CYAML_MAPPING;
        f->value.flags = (enum cyaml_flag)(CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL);
        f->value.data_size = (uint32_t)cls->config_size;
        f->value.mapping.fields = cls->config_fields;
    }
    memset(&stage_fields[n], 0, sizeof stage_fields[n]); /* CYAML_FIELD_END */

    stage_schema = (cyaml_schema_value_t){
        CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, lc_stage_config, stage_fields),
    };
    size_t t = 0;
    top_fields[t++] = (cyaml_schema_field_t)CYAML_FIELD_SEQUENCE_COUNT(
        "stages", CYAML_FLAG_POINTER, lc_config, stages, n_stages, &stage_schema, 0,
        CYAML_UNLIMITED);
    top_fields[t++] = (cyaml_schema_field_t)CYAML_FIELD_UINT_PTR(
        "seed", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_config, seed_opt);
    top_fields[t++] = (cyaml_schema_field_t)CYAML_FIELD_UINT_PTR(
        "metrics_interval_ms", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_config,
        metrics_interval_opt);
    top_fields[t++] = (cyaml_schema_field_t)CYAML_FIELD_INT_PTR(
        "rank", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_config, rank_opt);
    top_fields[t++] = (cyaml_schema_field_t)CYAML_FIELD_INT_PTR(
        "world_size", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, lc_config, world_size_opt);
    memset(&top_fields[t], 0, sizeof top_fields[t]);
    top_schema = (cyaml_schema_value_t){
        CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, lc_config, top_fields),
    };
}

const cyaml_schema_value_t *lc_config_schema(void)
{
    pthread_once(&schema_once, build_schema);
    return &top_schema;
}

/* Collects libcyaml's error lines. */
#define YAML_LOG_LINES 24
typedef struct yaml_log {
    char lines[YAML_LOG_LINES][200];
    size_t n;
} yaml_log;

__attribute__((format(printf, 3, 0))) static void yaml_log_fn(cyaml_log_t level, void *ctx,
                                                              const char *fmt, va_list args)
{
    if (level < CYAML_LOG_ERROR)
        return;
    yaml_log *log = ctx;
    if (log->n >= YAML_LOG_LINES)
        return;
    char line[256];
    vsnprintf(line, sizeof line, fmt, args);
    const char *p = strncmp(line, "Load: ", 6) == 0 ? line + 6 : line;
    while (*p == ' ')
        p++;
    size_t n = strlen(p);
    while (n && (p[n - 1] == '\n' || p[n - 1] == ' '))
        n--;
    if (n == 0 || strncmp(p, "Backtrace", 9) == 0)
        return;
    snprintf(log->lines[log->n++], sizeof log->lines[0], "%.*s", (int)n, p);
}

/* Where each stage's mapping starts in the text, and its name, read with
 * libyaml so that libcyaml's complaints can be pinned to a stage by name. */
typedef struct stage_mark {
    int line; /* 1-based */
    char name[64];
} stage_mark;

static size_t find_stage_marks(const char *yaml, size_t len, stage_mark *marks, size_t max)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return 0;
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    /* depth 1: the top mapping; stages is a sequence at depth 2 whose
     * mappings are at depth 3. `expect_key` alternates inside mappings. */
    int depth = 0, stages_depth = -1;
    bool is_map[64] = {false};
    bool expect_key[64] = {false};
    char last_key[64][32];
    size_t n = 0;
    bool done = false;
    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev))
            break;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            if (depth > 0 && is_map[depth])
                expect_key[depth] = true; /* this value is done after its end */
            if (ev.type == YAML_SEQUENCE_START_EVENT && depth == 1 &&
                strcmp(last_key[1], "stages") == 0)
                stages_depth = depth + 1;
            if (depth < 63)
                depth++;
            is_map[depth] = ev.type == YAML_MAPPING_START_EVENT;
            expect_key[depth] = true;
            last_key[depth][0] = '\0';
            if (is_map[depth] && stages_depth > 0 && depth == stages_depth + 1 && n < max) {
                marks[n].line = (int)ev.start_mark.line + 1;
                marks[n].name[0] = '\0';
                n++;
            }
            break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT:
            if (depth == stages_depth)
                stages_depth = -1;
            if (depth > 0)
                depth--;
            break;
        case YAML_SCALAR_EVENT: {
            const char *v = (const char *)ev.data.scalar.value;
            if (depth > 0 && is_map[depth]) {
                if (expect_key[depth]) {
                    snprintf(last_key[depth], sizeof last_key[0], "%s", v);
                    expect_key[depth] = false;
                } else {
                    if (stages_depth > 0 && depth == stages_depth + 1 && n > 0 &&
                        strcmp(last_key[depth], "name") == 0)
                        snprintf(marks[n - 1].name, sizeof marks[0].name, "%s", v);
                    expect_key[depth] = true;
                }
            }
            break;
        }
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return n;
}

/* Allowed values of the enum fields, for the messages. */
static const char *enum_hint(const char *field)
{
    if (strcmp(field, "overflow") == 0)
        return " (use block, drop_newest or keep_newest)";
    if (strcmp(field, "layout") == 0)
        return " (use current or legacy)";
    return "";
}

/* Turn libcyaml's lines into one message: where, which stage, which field,
 * what is wrong. */
static int yaml_failure(const char *yaml, size_t len, const char *origin, cyaml_err_t rc,
                        const yaml_log *log, lc_error *err)
{
    const char *what = log->n ? log->lines[0] : cyaml_strerror(rc);
    char path[160] = "";
    char innermost[64] = "";
    int line = 0, col = 0, stage_line = 0;
    /* Backtrace lines run from the innermost outwards. */
    for (size_t i = 1; i < log->n; i++) {
        const char *l = log->lines[i];
        int ln = 0, cl = 0;
        const char *at = strstr(l, "(line: ");
        if (at)
            sscanf(at, "(line: %d, column: %d)", &ln, &cl);
        if (line == 0 && ln) {
            line = ln;
            col = cl;
        }
        const char *q = strstr(l, "mapping field '");
        if (q) {
            char field[64];
            if (sscanf(q, "mapping field '%63[^']'", field) == 1 && strcmp(field, "stages") != 0) {
                if (!innermost[0])
                    snprintf(innermost, sizeof innermost, "%s", field);
                char joined[160];
                snprintf(joined, sizeof joined, "%s%s%s", field, path[0] ? "." : "", path);
                memcpy(path, joined, sizeof path);
            }
        } else if (strstr(l, "sequence entry") && ln) {
            stage_line = ln;
        }
    }
    char stage[96] = "";
    if (stage_line) {
        stage_mark marks[256];
        size_t n = find_stage_marks(yaml, len, marks, 256);
        for (size_t i = 0; i < n; i++) {
            if (marks[i].line == stage_line) {
                if (marks[i].name[0])
                    snprintf(stage, sizeof stage, "stage '%s': ", marks[i].name);
                else
                    snprintf(stage, sizeof stage, "stage #%zu: ", i + 1);
            }
        }
    }
    const char *hint = enum_hint(innermost);
    if (hint[0] && strncmp(what, "Invalid INT value: ", 19) == 0) {
        static _Thread_local char reworded[200];
        snprintf(reworded, sizeof reworded, "invalid value %s", what + 19);
        what = reworded;
    }
    char where[64] = "";
    if (line)
        snprintf(where, sizeof where, ":%d:%d", line, col);
    return lc_error_set(err, LC_ECONFIG, "%s%s: %s%s%s%s%s", origin, where, stage, path,
                        path[0] ? ": " : "", what, hint);
}

static const cyaml_config_t *yaml_config(yaml_log *log)
{
    static _Thread_local cyaml_config_t c;
    c = (cyaml_config_t){
        .log_fn = yaml_log_fn,
        .log_ctx = log,
        .mem_fn = cyaml_mem,
        .log_level = CYAML_LOG_ERROR,
        .flags = CYAML_CFG_NO_ALIAS | CYAML_CFG_IGNORE_UNKNOWN_KEYS,
    };
    return &c;
}

/* Where a validation problem is: the key it names, found by the lint. The
 * problem's text starts "stage 'NAME': FIELD: ", "stage #N ...: FIELD: "
 * or "FIELD: "; a field that is not a key ("stage type") falls back on the
 * stage's own line. 0 when unknown. */
static const lc_lint_key *locate(const lc_lint *lint, const char *text, int *line, int *col,
                                 int *stage)
{
    *line = *col = 0;
    *stage = -1;
    int idx = -1;
    const char *rest = text;
    if (strncmp(text, "stage '", 7) == 0) {
        const char *q = strstr(text + 7, "': ");
        if (!q)
            return NULL;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(q - text - 7), text + 7);
        idx = lc_lint_stage_index(lint, name);
        rest = q + 3;
    } else if (strncmp(text, "stage #", 7) == 0) {
        idx = atoi(text + 7) - 1;
        const char *q = strstr(text, ": ");
        if (!q)
            return NULL;
        rest = q + 2;
    }
    *stage = idx;
    const char *colon = strstr(rest, ": ");
    char field[128] = "";
    if (colon && !memchr(rest, ' ', (size_t)(colon - rest)))
        snprintf(field, sizeof field, "%.*s", (int)(colon - rest), rest);
    char path[200];
    const lc_lint_key *k = NULL;
    if (idx >= 0) {
        if (field[0]) {
            snprintf(path, sizeof path, "stages[%d].%s", idx, field);
            k = lc_lint_find(lint, path);
            char *dot = strchr(path + 7, '.') ? strchr(strchr(path, '.') + 1, '.') : NULL;
            if (!k && dot) { /* the block, when its field is not in the text */
                *dot = '\0';
                k = lc_lint_find(lint, path);
            }
        }
        if (!k) {
            snprintf(path, sizeof path, "stages[%d]", idx);
            k = lc_lint_find(lint, path);
        }
    } else if (field[0]) {
        k = lc_lint_find(lint, field);
    }
    if (k) {
        *line = k->line;
        *col = k->col;
    }
    return k;
}

/* All problems, each "origin:line:col: text" (or "origin: text" when the
 * text has no place), in the order of their lines. */
typedef struct placed {
    int line, col;
    size_t order;
    char text[LC_ERROR_MSG_MAX / 2];
} placed;

static int compare_placed(const void *a, const void *b)
{
    const placed *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static void add_placed(placed **v, size_t *n, int line, int col, const char *text)
{
    *v = lc_xrealloc(*v, (*n + 1) * sizeof **v);
    placed *p = &(*v)[*n];
    p->line = line;
    p->col = col;
    p->order = *n;
    snprintf(p->text, sizeof p->text, "%s", text);
    (*n)++;
}

/* The lint's problems and (validate's or libcyaml's) lines in `found`,
 * placed, merged and written to err. What the lint already said is not
 * said again: a problem about the same key (a negative number, then out of
 * range), or a stage's missing type when the lint found an unknown key in
 * that stage's mapping (a misspelt type). */
static int report(const lc_lint *lint, const char *origin, const char *found, lc_error *err)
{
    placed *v = NULL;
    size_t n = 0;
    for (size_t i = 0; i < lint->n_problems; i++) {
        const lc_lint_problem *p = &lint->problems[i];
        char label[96] = "", text[LC_ERROR_MSG_MAX / 2];
        if (p->stage >= 0) {
            const char *name = (size_t)p->stage < lint->n_stages ? lint->stage_names[p->stage] : "";
            if (name[0])
                snprintf(label, sizeof label, "stage '%s': ", name);
            else
                snprintf(label, sizeof label, "stage #%d: ", p->stage + 1);
        }
        snprintf(text, sizeof text, "%s%s", label, p->text);
        add_placed(&v, &n, p->line, p->col, text);
    }
    for (const char *p = found; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char text[LC_ERROR_MSG_MAX / 2];
        snprintf(text, sizeof text, "%.*s", (int)len, p);
        int line, col, stage;
        const lc_lint_key *k = locate(lint, text, &line, &col, &stage);
        bool said = false;
        for (size_t i = 0; i < lint->n_problems; i++) {
            const lc_lint_problem *lp = &lint->problems[i];
            said = said || (k && strcmp(lp->path, k->path) == 0) ||
                   (lp->stage_key && lp->stage == stage && strstr(text, ": stage type: missing"));
        }
        if (!said)
            add_placed(&v, &n, line, col, text);
        p += len + (nl ? 1 : 0);
    }
    qsort(v, n, sizeof *v, compare_placed);
    char out[LC_ERROR_MSG_MAX];
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && used + 1 < sizeof out; i++) {
        char where[32] = "";
        if (v[i].line)
            snprintf(where, sizeof where, ":%d:%d", v[i].line, v[i].col);
        int w = snprintf(out + used, sizeof out - used, "%s%s%s: %s", used ? "\n" : "", origin,
                         where, v[i].text);
        if (w < 0)
            break;
        used += (size_t)w < sizeof out - used ? (size_t)w : sizeof out - used - 1;
    }
    free(v);
    return lc_error_set(err, LC_ECONFIG, "%s", out);
}

int lc_config_load_string(const char *yaml, size_t len, const char *origin, lc_config **out,
                          lc_error *err)
{
    pthread_once(&schema_once, build_schema);
    *out = NULL;
    /* The lint first: every unknown key and negative number, with lines;
     * libcyaml then skips unknown keys, so that its own checks and
     * validation's can report the rest in the same run. */
    lc_lint lint;
    lc_lint_run(&lint, yaml, len, &top_schema);
    /* The values the lint refused are replaced by stand-ins of their types,
     * so that libcyaml loads the rest and validation checks it in the same
     * run: every problem at once. */
    size_t patched_len = len;
    char *patched = lint.n_patches ? lc_lint_patched(&lint, yaml, len, &patched_len) : NULL;
    yaml_log log = {.n = 0};
    lc_config *cfg = NULL;
    cyaml_err_t rc = cyaml_load_data((const uint8_t *)(patched ? patched : yaml), patched_len,
                                     yaml_config(&log), &top_schema, (cyaml_data_t **)&cfg, NULL);
    int result = 0;
    if (rc != CYAML_OK) {
        lc_error cy;
        lc_error_clear(&cy);
        yaml_failure(patched ? patched : yaml, patched_len, origin, rc, &log, &cy);
        if (lint.n_problems == 0) {
            if (err)
                *err = cy;
            result = LC_ECONFIG;
        } else { /* libcyaml's line, after the lint's, as it stands */
            result = report(&lint, origin, NULL, err);
            if (err) {
                size_t used = strlen(err->msg);
                snprintf(err->msg + used, sizeof err->msg - used, "\n%s", cy.msg);
            }
        }
    } else if (!cfg) {
        result =
            lc_error_set(err, LC_ECONFIG,
                         "%s: the document is empty (it needs at least a 'stages' list)", origin);
    } else {
        cfg->origin = lc_xstrdup(origin);
        cfg->keys = lc_xmalloc(sizeof *cfg->keys);
        *cfg->keys = lint;
        memset(&lint, 0, sizeof lint); /* the config owns it now */
        lc_error verr;
        lc_error_clear(&verr);
        int vrc = lc_config_validate(cfg, &verr);
        if (vrc != 0 || cfg->keys->n_problems)
            result = report(cfg->keys, origin, vrc ? verr.msg : NULL, err);
        if (result != 0) {
            lc_config_free(cfg);
            cfg = NULL;
        }
    }
    lc_lint_fini(&lint);
    free(patched);
    *out = cfg;
    return result;
}

/* A configuration is a page or two of YAML; a file past this is the wrong
 * file (refused before it is read when its size says so). */
#define CONFIG_MAX_BYTES (16u << 20)

static int config_too_large(const char *path, lc_error *err)
{
    return lc_error_set(err, LC_ECONFIG,
                        "%s: config larger than 16 MiB: a configuration is a small YAML file; "
                        "is this the right path? (lcmon --print-default-config prints one)",
                        path);
}

int lc_config_read_text(const char *path, char **text, size_t *len_out, lc_error *err)
{
    *text = NULL;
    *len_out = 0;
    struct stat st;
    FILE *f;
    if (!strcmp(path, "-")) {
        f = stdin; /* asked for: a pipe from another command is fine */
    } else {
        /* Never a blocking open: a FIFO named as the config would wait
         * for a writer for ever, with the signals blocked. */
        lc_error oerr;
        lc_error_clear(&oerr);
        int fd = lc_open_regular(path, &st, &oerr);
        if (fd == LC_ENOTREG && S_ISDIR(st.st_mode))
            return lc_error_set(err, LC_ECONFIG,
                                "%s: is a directory, not a configuration file (give a YAML file, "
                                "such as config/default.yaml; lcmon --print-default-config prints "
                                "one)",
                                path);
        if (fd == LC_ENOTREG)
            return lc_error_set(err, LC_ECONFIG,
                                "%s: is %s, not a configuration file (give a YAML file; lcmon "
                                "--print-default-config prints one)",
                                path, lc_file_kind(st.st_mode));
        if (fd < 0)
            return lc_error_set(err, fd, "%s: cannot open config: %s", path, lc_strerror(fd));
        if (st.st_size >= (off_t)CONFIG_MAX_BYTES) {
            close(fd);
            return config_too_large(path, err);
        }
        f = fdopen(fd, "rb");
        if (!f) {
            int e = errno;
            close(fd);
            return lc_error_set(err, -e, "%s: cannot open config: %s", path, strerror(e));
        }
    }
    size_t cap = 4096, len = 0;
    char *buf = lc_xmalloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            if (cap >= CONFIG_MAX_BYTES) { /* a pipe that does not end */
                if (f != stdin)
                    fclose(f);
                free(buf);
                return config_too_large(path, err);
            }
            cap *= 2;
            buf = lc_xrealloc(buf, cap);
        }
    }
    bool failed = ferror(f);
    if (f != stdin)
        fclose(f);
    if (failed) {
        free(buf);
        return lc_error_set(err, -EIO, "%s: read error", path);
    }
    *text = buf;
    *len_out = len;
    return 0;
}

int lc_config_load_file(const char *path, lc_config **out, lc_error *err)
{
    *out = NULL;
    char *buf;
    size_t len;
    int rc = lc_config_read_text(path, &buf, &len, err);
    if (rc != 0)
        return rc;
    rc = lc_config_load_string(buf, len, path, out, err);
    free(buf);
    return rc;
}

int lc_config_preflight(const lc_config *cfg, lc_error *err)
{
    lc_error all;
    lc_error_clear(&all);
    int count = 0;
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        const lc_stage_config *s = &cfg->stages[i];
        lc_error e;
        lc_error_clear(&e);
        if (!s->cls->preflight || s->cls->preflight(s->block, &e) == 0)
            continue;
        for (char *line = e.msg, *next; line; line = next) {
            next = strchr(line, '\n');
            if (next)
                *next++ = '\0';
            lc_error_add(&all, LC_ECONFIG, "stage '%s': %s.%s", s->name, s->cls->type_name, line);
            count++;
        }
    }
    if (!count)
        return 0;
    lc_lint none = {0};
    return report(cfg->keys ? cfg->keys : &none, cfg->origin, all.msg, err);
}

int lc_config_load_default(lc_config **out, lc_error *err)
{
    return lc_config_load_string(lc_default_config_yaml, strlen(lc_default_config_yaml),
                                 "<default config>", out, err);
}

int lc_config_source_load(const lc_config_source *src, lc_config **out, lc_error *err)
{
    int rc =
        src->path ? lc_config_load_file(src->path, out, err) : lc_config_load_default(out, err);
    if (rc == 0 && src->seed_given) {
        (*out)->seed = src->seed;
        (*out)->seed_pinned = true;
    }
    return rc;
}

void lc_config_free(lc_config *cfg)
{
    if (cfg && cfg->keys) {
        lc_lint_fini(cfg->keys);
        free(cfg->keys);
        cfg->keys = NULL;
    }
    if (!cfg)
        return;
    free(cfg->origin);
    cfg->origin = NULL;
    /* Resolved pointers alias memory libcyaml owns; clear them first. */
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        cfg->stages[i].block = NULL;
        cfg->stages[i].cls = NULL;
    }
    yaml_log log = {.n = 0};
    cyaml_free(yaml_config(&log), &top_schema, cfg, 0);
}

const lc_stage_config *lc_config_stage(const lc_config *cfg, const char *name)
{
    for (unsigned i = 0; i < cfg->n_stages; i++)
        if (cfg->stages[i].name && strcmp(cfg->stages[i].name, name) == 0)
            return &cfg->stages[i];
    return NULL;
}

static cyaml_schema_value_t block_schema(const lc_stage_class *cls)
{
    cyaml_schema_value_t v;
    memset(&v, 0, sizeof v);
    v.type = CYAML_MAPPING;
    v.flags = (enum cyaml_flag)CYAML_FLAG_POINTER;
    v.data_size = (uint32_t)cls->config_size;
    v.mapping.fields = cls->config_fields;
    return v;
}

int lc_config_parse_block(const struct lc_stage_class *cls, const char *yaml, void **block,
                          lc_error *err)
{
    *block = NULL;
    yaml_log log = {.n = 0};
    cyaml_schema_value_t schema = block_schema(cls);
    cyaml_err_t rc = cyaml_load_data((const uint8_t *)yaml, strlen(yaml), yaml_config(&log),
                                     &schema, (cyaml_data_t **)block, NULL);
    if (rc != CYAML_OK)
        return yaml_failure(yaml, strlen(yaml), cls->type_name, rc, &log, err);
    if (!*block)
        *block = lc_xcalloc(1, cls->config_size ? cls->config_size : 1);
    lc_error cerr;
    lc_error_clear(&cerr);
    if (cls->config_check && cls->config_check(*block, &cerr) != 0) {
        lc_config_free_block(cls, *block);
        *block = NULL;
        lc_error_clear(err);
        for (char *line = cerr.msg, *next; line; line = next) {
            next = strchr(line, '\n');
            if (next)
                *next++ = '\0';
            lc_error_add(err, LC_ECONFIG, "%s.%s", cls->type_name, line);
        }
        return LC_ECONFIG;
    }
    return 0;
}

void lc_config_free_block(const struct lc_stage_class *cls, void *block)
{
    if (!block)
        return;
    yaml_log log = {.n = 0};
    cyaml_schema_value_t schema = block_schema(cls);
    cyaml_free(yaml_config(&log), &schema, block, 0);
}

double lc_config_stop_deadline(const lc_config *cfg)
{
    double d = LC_STOP_DEADLINE_S;
    for (unsigned i = 0; cfg && i < cfg->n_stages; i++) {
        const lc_stage_config *s = &cfg->stages[i];
        if (s->cls && s->cls->stop_seconds && s->cls->stop_seconds(s->block) + 1.0 > d)
            d = s->cls->stop_seconds(s->block) + 1.0;
    }
    return d;
}
