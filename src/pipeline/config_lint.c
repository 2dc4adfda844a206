/*
 * config_lint: see config_lint.h. A recursive descent over libyaml's events:
 * each node is read with the schema value that describes it (NULL where the
 * schema says nothing, as under an unknown key), so mappings check their
 * keys against the schema's fields and scalars their sign.
 */
#include "pipeline/config_lint.h"

#include "core/error.h"
#include "core/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

typedef struct walker {
    lc_lint *l;
    yaml_parser_t parser;
    bool failed; /* a syntax error: stop */
} walker;

static bool next_event(walker *w, yaml_event_t *ev)
{
    if (w->failed || !yaml_parser_parse(&w->parser, ev)) {
        w->failed = true;
        return false;
    }
    return true;
}

static void add_key(lc_lint *l, const char *path, const yaml_mark_t *m)
{
    if (l->n_keys == l->cap_keys) {
        l->cap_keys = l->cap_keys ? 2 * l->cap_keys : 64;
        l->keys = lc_xrealloc(l->keys, l->cap_keys * sizeof *l->keys);
    }
    lc_lint_key *k = &l->keys[l->n_keys++];
    snprintf(k->path, sizeof k->path, "%s", path);
    k->line = (int)m->line + 1;
    k->col = (int)m->column + 1;
}

static void add_problem(lc_lint *l, const yaml_mark_t *m, int stage, const char *path,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void add_problem(lc_lint *l, const yaml_mark_t *m, int stage, const char *path,
                        const char *fmt, ...)
{
    if (l->n_problems == l->cap_problems) {
        l->cap_problems = l->cap_problems ? 2 * l->cap_problems : 16;
        l->problems = lc_xrealloc(l->problems, l->cap_problems * sizeof *l->problems);
    }
    lc_lint_problem *p = &l->problems[l->n_problems++];
    p->line = (int)m->line + 1;
    p->col = (int)m->column + 1;
    p->stage = stage;
    snprintf(p->path, sizeof p->path, "%s", path);
    p->stage_key = stage >= 0 && strncmp(path, "stages[", 7) == 0 && strchr(path, '.') &&
                   strchr(strchr(path, '.') + 1, '.') == NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->text, sizeof p->text, fmt, ap);
    va_end(ap);
}

static void add_patch(lc_lint *l, size_t start, size_t end, const char *text)
{
    if (l->n_patches == l->cap_patches) {
        l->cap_patches = l->cap_patches ? 2 * l->cap_patches : 8;
        l->patches = lc_xrealloc(l->patches, l->cap_patches * sizeof *l->patches);
    }
    lc_lint_patch *p = &l->patches[l->n_patches++];
    p->start = start;
    p->end = end;
    snprintf(p->text, sizeof p->text, "%s", text);
}

static void set_stage_name(lc_lint *l, int stage, const char *name)
{
    if (stage < 0)
        return;
    if ((size_t)stage >= l->n_stages) {
        l->stage_names = lc_xrealloc(l->stage_names, (size_t)(stage + 1) * sizeof *l->stage_names);
        for (size_t i = l->n_stages; i <= (size_t)stage; i++)
            l->stage_names[i][0] = '\0';
        l->n_stages = (size_t)stage + 1;
    }
    snprintf(l->stage_names[stage], sizeof l->stage_names[0], "%s", name);
}

/* Skip the rest of a node whose first event was `first`; the offset just
 * past the node. */
static size_t skip_node(walker *w, const yaml_event_t *first)
{
    size_t end = first->end_mark.index;
    if (first->type != YAML_MAPPING_START_EVENT && first->type != YAML_SEQUENCE_START_EVENT)
        return end;
    int depth = 1;
    while (depth > 0) {
        yaml_event_t ev;
        if (!next_event(w, &ev))
            return end;
        if (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT)
            depth++;
        else if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT)
            depth--;
        end = ev.end_mark.index;
        yaml_event_delete(&ev);
    }
    return end;
}

/* The path shown in messages: inside a stage, without "stages[N]." */
static const char *shown(const char *path)
{
    if (strncmp(path, "stages[", 7) == 0) {
        const char *dot = strchr(path, '.');
        return dot ? dot + 1 : path;
    }
    return path;
}

/* What libcyaml reads as false; any other word it reads as true, so the
 * lint accepts only these and their true counterparts. */
static bool is_bool_word(const char *v)
{
    static const char *const words[] = {"true", "false", "yes", "no",     "on",
                                        "off",  "1",     "0",   "enable", "disable"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcasecmp(v, words[i]) == 0)
            return true;
    return false;
}

/* A scalar against the type its schema gives: a problem and a stand-in for
 * what libcyaml would refuse or misread. */
static void check_scalar(walker *w, const yaml_event_t *ev, const cyaml_schema_value_t *schema,
                         const char *path, int stage)
{
    const char *v = (const char *)ev->data.scalar.value;
    const char *name = shown(path);
    const yaml_mark_t *m = &ev->start_mark;
    size_t start = ev->start_mark.index, end = ev->end_mark.index;
    char *rest = NULL;
    errno = 0;
    switch (schema->type) {
    case CYAML_INT:
    case CYAML_UINT: {
        bool uint = schema->type == CYAML_UINT;
        if (uint && v[0] == '-' && v[1] >= '0' && v[1] <= '9') {
            add_problem(w->l, m, stage, path, "%s: %s is negative (give a whole number, 0 or more)",
                        name, v);
            add_patch(w->l, start, end, "0");
            break;
        }
        bool big = false;
        if (uint) {
            unsigned long long x = strtoull(v, &rest, 0);
            big = errno == ERANGE || (schema->data_size < 8 && x >> (8 * schema->data_size));
        } else {
            long long x = strtoll(v, &rest, 0);
            long long lim = schema->data_size < 8 ? 1ll << (8 * schema->data_size - 1) : 0;
            big = errno == ERANGE || (lim && (x >= lim || x < -lim));
        }
        if (!v[0] || rest == v || *rest) {
            add_problem(w->l, m, stage, path, "%s: '%s' is not a whole number", name, v);
            add_patch(w->l, start, end, "0");
        } else if (big) {
            add_problem(w->l, m, stage, path, "%s: %s is too large", name, v);
            add_patch(w->l, start, end, "0");
        }
        break;
    }
    case CYAML_FLOAT:
        strtod(v, &rest);
        if (!v[0] || rest == v || *rest) {
            add_problem(w->l, m, stage, path, "%s: '%s' is not a number", name, v);
            add_patch(w->l, start, end, "0");
        }
        break;
    case CYAML_BOOL:
        if (!is_bool_word(v)) {
            add_problem(w->l, m, stage, path, "%s: '%s' is not true or false", name, v);
            add_patch(w->l, start, end, "false");
        }
        break;
    case CYAML_ENUM: {
        const char *names[32];
        uint32_t n = schema->enumeration.count < 31 ? schema->enumeration.count : 31;
        bool known = false;
        for (uint32_t i = 0; i < n; i++) {
            names[i] = schema->enumeration.strings[i].str;
            known = known || strcmp(v, names[i]) == 0;
        }
        names[n] = NULL;
        if (known || n == 0)
            break;
        char list[200] = "";
        size_t used = 0;
        for (uint32_t i = 0; i < n && used < sizeof list; i++) {
            int k = snprintf(list + used, sizeof list - used, "%s%s",
                             i == 0       ? ""
                             : i + 1 == n ? " or "
                                          : ", ",
                             names[i]);
            if (k > 0)
                used += (size_t)k;
        }
        const char *near = lc_closest_word(v, names);
        if (near)
            add_problem(w->l, m, stage, path, "%s: '%s' is not known (did you mean '%s'? use %s)",
                        name, v, near, list);
        else
            add_problem(w->l, m, stage, path, "%s: '%s' is not known (use %s)", name, v, list);
        add_patch(w->l, start, end, names[0]);
        break;
    }
    case CYAML_STRING:
        if (strlen(v) < schema->string.min) {
            add_problem(w->l, m, stage, path, "%s: is empty", name);
            add_patch(w->l, start, end, "x");
        }
        break;
    default:
        break;
    }
}

static bool is_scalar_type(enum cyaml_type t)
{
    return t == CYAML_INT || t == CYAML_UINT || t == CYAML_FLOAT || t == CYAML_BOOL ||
           t == CYAML_ENUM || t == CYAML_STRING;
}

static void walk(walker *w, yaml_event_t *ev, const cyaml_schema_value_t *schema, const char *path,
                 int stage);

static void walk_mapping(walker *w, const cyaml_schema_field_t *fields, const char *path, int stage)
{
    const char *names[96];
    size_t n_names = 0;
    for (size_t i = 0; fields && fields[i].key && n_names + 1 < 96; i++)
        names[n_names++] = fields[i].key;
    names[n_names] = NULL;
    for (;;) {
        yaml_event_t key;
        if (!next_event(w, &key))
            return;
        if (key.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&key);
            return;
        }
        yaml_event_t value;
        if (key.type != YAML_SCALAR_EVENT) { /* a complex key: libcyaml complains */
            skip_node(w, &key);
            yaml_event_delete(&key);
            if (!next_event(w, &value))
                return;
            skip_node(w, &value);
            yaml_event_delete(&value);
            continue;
        }
        const char *k = (const char *)key.data.scalar.value;
        char sub[160];
        snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", k);
        const cyaml_schema_field_t *f = NULL;
        for (size_t i = 0; fields && fields[i].key; i++)
            if (strcmp(fields[i].key, k) == 0)
                f = &fields[i];
        add_key(w->l, sub, &key.start_mark);
        if (!next_event(w, &value)) {
            yaml_event_delete(&key);
            return;
        }
        if (f) {
            if (stage >= 0 && strcmp(k, "name") == 0 && value.type == YAML_SCALAR_EVENT &&
                strchr(shown(sub), '.') == NULL)
                set_stage_name(w->l, stage, (const char *)value.data.scalar.value);
            walk(w, &value, &f->value, sub, stage);
        } else if (fields) {
            const char *near = lc_closest_word(k, names);
            char list[400] = "";
            if (!near && n_names <= 10) {
                size_t used = 0;
                for (size_t i = 0; i < n_names && used < sizeof list; i++) {
                    int m =
                        snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
                    if (m > 0)
                        used += (size_t)m;
                }
            }
            char where[160] = "";
            if (strchr(shown(sub), '.'))
                snprintf(where, sizeof where, "%.*s.", (int)(strrchr(shown(sub), '.') - shown(sub)),
                         shown(sub));
            if (near)
                add_problem(w->l, &key.start_mark, stage, sub,
                            "%s%s: unknown key (did you mean '%s'?)", where, k, near);
            else if (list[0])
                add_problem(w->l, &key.start_mark, stage, sub,
                            "%s%s: unknown key (the keys are %s)", where, k, list);
            else if (stage >= 0 && strchr(shown(sub), '.') == NULL)
                add_problem(w->l, &key.start_mark, stage, sub,
                            "%s: unknown key (a stage has name, input, output and one stage type "
                            "block; `lcmon --help` lists the types)",
                            k);
            else
                add_problem(w->l, &key.start_mark, stage, sub, "%s%s: unknown key", where, k);
            skip_node(w, &value);
            yaml_event_delete(&value);
        } else {
            skip_node(w, &value);
            yaml_event_delete(&value);
        }
        yaml_event_delete(&key);
    }
}

/* Read the node that starts with ev (consumed and deleted here). */
static void walk(walker *w, yaml_event_t *ev, const cyaml_schema_value_t *schema, const char *path,
                 int stage)
{
    if (schema && is_scalar_type(schema->type) &&
        (ev->type == YAML_MAPPING_START_EVENT || ev->type == YAML_SEQUENCE_START_EVENT)) {
        bool map = ev->type == YAML_MAPPING_START_EVENT;
        add_problem(w->l, &ev->start_mark, stage, path, "%s: a %s, where a single value belongs",
                    shown(path), map ? "mapping" : "list");
        size_t start = ev->start_mark.index, end = skip_node(w, ev);
        add_patch(w->l, start, end, schema->type == CYAML_STRING ? "x" : "0");
        yaml_event_delete(ev);
        return;
    }
    if (schema && ev->type == YAML_SCALAR_EVENT &&
        (schema->type == CYAML_MAPPING || schema->type == CYAML_SEQUENCE ||
         schema->type == CYAML_SEQUENCE_FIXED)) {
        bool map = schema->type == CYAML_MAPPING;
        add_problem(w->l, &ev->start_mark, stage, path, "%s: '%s' where a %s belongs", shown(path),
                    (const char *)ev->data.scalar.value, map ? "mapping" : "list");
        add_patch(w->l, ev->start_mark.index, ev->end_mark.index, map ? "{}" : "[]");
        yaml_event_delete(ev);
        return;
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        if (schema)
            check_scalar(w, ev, schema, path, stage);
        break;
    case YAML_MAPPING_START_EVENT:
        if (stage >= 0 && strchr(path, '.') == NULL) /* the stage's own mapping */
            add_key(w->l, path, &ev->start_mark);
        walk_mapping(w, schema && schema->type == CYAML_MAPPING ? schema->mapping.fields : NULL,
                     path, stage);
        break;
    case YAML_SEQUENCE_START_EVENT: {
        const cyaml_schema_value_t *entry =
            schema && (schema->type == CYAML_SEQUENCE || schema->type == CYAML_SEQUENCE_FIXED)
                ? schema->sequence.entry
                : NULL;
        bool stages = strcmp(path, "stages") == 0;
        for (int i = 0;; i++) {
            yaml_event_t item;
            if (!next_event(w, &item))
                break;
            if (item.type == YAML_SEQUENCE_END_EVENT) {
                yaml_event_delete(&item);
                break;
            }
            char sub[160];
            snprintf(sub, sizeof sub, "%s[%d]", path, i);
            if (stages)
                set_stage_name(w->l, i, "");
            walk(w, &item, entry, sub, stages ? i : stage);
        }
        break;
    }
    default:
        break;
    }
    yaml_event_delete(ev);
}

void lc_lint_run(lc_lint *l, const char *yaml, size_t len, const cyaml_schema_value_t *schema)
{
    memset(l, 0, sizeof *l);
    walker w = {.l = l};
    if (!yaml_parser_initialize(&w.parser))
        return;
    yaml_parser_set_input_string(&w.parser, (const unsigned char *)yaml, len);
    for (;;) {
        yaml_event_t ev;
        if (!next_event(&w, &ev))
            break;
        yaml_event_type_t t = ev.type;
        if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT ||
            t == YAML_SCALAR_EVENT) {
            walk(&w, &ev, schema, "", -1); /* the document's root */
            continue;
        }
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&w.parser);
}

char *lc_lint_patched(const lc_lint *l, const char *yaml, size_t len, size_t *out_len)
{
    size_t cap = len + 1;
    for (size_t i = 0; i < l->n_patches; i++)
        cap += strlen(l->patches[i].text);
    char *out = lc_xmalloc(cap);
    size_t at = 0, used = 0;
    for (size_t i = 0; i < l->n_patches; i++) {
        const lc_lint_patch *p = &l->patches[i];
        if (p->start < at || p->end > len || p->end < p->start)
            continue; /* out of order: cannot happen in one pass */
        memcpy(out + used, yaml + at, p->start - at);
        used += p->start - at;
        size_t n = strlen(p->text);
        memcpy(out + used, p->text, n);
        used += n;
        at = p->end;
    }
    memcpy(out + used, yaml + at, len - at);
    used += len - at;
    out[used] = '\0';
    *out_len = used;
    return out;
}

void lc_lint_fini(lc_lint *l)
{
    free(l->patches);
    free(l->keys);
    free(l->problems);
    free(l->stage_names);
    memset(l, 0, sizeof *l);
}

const lc_lint_key *lc_lint_find(const lc_lint *l, const char *path)
{
    for (size_t i = 0; i < l->n_keys; i++)
        if (strcmp(l->keys[i].path, path) == 0)
            return &l->keys[i];
    return NULL;
}

int lc_lint_stage_index(const lc_lint *l, const char *name)
{
    for (size_t i = 0; i < l->n_stages; i++)
        if (strcmp(l->stage_names[i], name) == 0)
            return (int)i;
    return -1;
}
