/*
 * config: see config.h. The text is parsed once (yaml_tree.h) and read by
 * the settings tables (config_read.h); the reader's problems and
 * validation's are placed on their lines from the places the reader kept,
 * and reported together in line order.
 */
#include "pipeline/config.h"
#include "pipeline/config_read.h"
#include "pipeline/yaml_tree.h"

#include "core/exit.h"
#include "core/file.h"
#include "core/log.h"
#include "stages/registry.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Where a validation problem is: the key it names, as the reader found it. The
 * problem's text starts "stage 'NAME': FIELD: ", "stage #N ...: FIELD: "
 * or "FIELD: "; a field that is not a key ("stage type") falls back on the
 * stage's own line. 0 when unknown. */
static const lc_config_key *locate(const lc_config_marks *marks, const char *text, int *line,
                                   int *col, int *stage)
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
        idx = lc_config_marks_stage_index(marks, name);
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
    const lc_config_key *k = NULL;
    if (idx >= 0) {
        if (field[0]) {
            snprintf(path, sizeof path, "stages[%d].%s", idx, field);
            k = lc_config_marks_find(marks, path);
            char *dot = strchr(path + 7, '.') ? strchr(strchr(path, '.') + 1, '.') : NULL;
            if (!k && dot) { /* the block, when its field is not in the text */
                *dot = '\0';
                k = lc_config_marks_find(marks, path);
            }
        }
        if (!k) {
            snprintf(path, sizeof path, "stages[%d]", idx);
            k = lc_config_marks_find(marks, path);
        }
    } else if (field[0]) {
        k = lc_config_marks_find(marks, field);
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

/* The placed problems into err, a line each while they fit, and a last
 * line saying how many more there are (those that did not fit, and the
 * `more` the reader counted without keeping). */
static int write_placed(const placed *v, size_t n, size_t more, const char *origin, lc_error *err)
{
    char out[LC_ERROR_MSG_MAX];
    const size_t tail = 200; /* room for the last line */
    size_t used = 0, shown = 0;
    out[0] = '\0';
    for (; shown < n; shown++) {
        char where[32] = "", line[LC_ERROR_MSG_MAX];
        if (v[shown].line)
            snprintf(where, sizeof where, ":%d:%d", v[shown].line, v[shown].col);
        int w = snprintf(line, sizeof line, "%s%s%s: %s", used ? "\n" : "", origin, where,
                         v[shown].text);
        bool last = shown + 1 == n && more == 0;
        if (w < 0 || used + (size_t)w + (last ? 0 : tail) >= sizeof out)
            break;
        memcpy(out + used, line, (size_t)w + 1);
        used += (size_t)w;
    }
    more += n - shown;
    if (more)
        snprintf(out + used, sizeof out - used,
                 "%s%s: and %zu more problem%s (the first %zu are shown: fix them and check "
                 "again)",
                 used ? "\n" : "", origin, more, more == 1 ? "" : "s", shown);
    return lc_error_set(err, LC_ECONFIG, "%s", out);
}

/* The reader's problems and validation's (or preflight's) lines in
 * `found`, placed, merged and written to err. What the reader already said
 * is not said again: a problem about the same key, or a stage's missing
 * type when the reader found an unknown key in that stage's mapping (a
 * misspelt type). */
static int report(const lc_config_marks *marks, const char *origin, const char *found,
                  lc_error *err)
{
    placed *v = NULL;
    size_t n = 0;
    for (size_t i = 0; i < marks->n_problems; i++) {
        const lc_config_problem *p = &marks->problems[i];
        char label[96] = "", text[LC_ERROR_MSG_MAX / 2];
        if (p->stage >= 0) {
            const char *name =
                (size_t)p->stage < marks->n_stages ? marks->stage_names[p->stage] : "";
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
        const lc_config_key *k = locate(marks, text, &line, &col, &stage);
        bool said = false;
        for (size_t i = 0; i < marks->n_problems; i++) {
            const lc_config_problem *lp = &marks->problems[i];
            said = said || (k && strcmp(lp->path, k->path) == 0) ||
                   (lp->stage_key && lp->stage == stage && strstr(text, ": stage type: missing"));
        }
        if (!said)
            add_placed(&v, &n, line, col, text);
        p += len + (nl ? 1 : 0);
    }
    qsort(v, n, sizeof *v, compare_placed);
    int rc = write_placed(v, n, marks->n_more_problems, origin, err);
    free(v);
    return rc;
}

/* Whether text is protobuf text format (upstream's configuration) rather
 * than YAML: a line that opens a message, `name {`, which lcmon's YAML
 * never has. */
static bool looks_like_textproto(const char *text, size_t len)
{
    for (size_t i = 0; i < len;) {
        const char *line = text + i;
        const char *nl = memchr(line, '\n', len - i);
        size_t n = nl ? (size_t)(nl - line) : len - i;
        i += n + 1;
        size_t k = 0;
        while (k < n && (line[k] == ' ' || line[k] == '\t'))
            k++;
        size_t start = k;
        while (k < n && (isalnum((unsigned char)line[k]) || line[k] == '_'))
            k++;
        if (k == start || isdigit((unsigned char)line[start]))
            continue;
        while (k < n && (line[k] == ' ' || line[k] == '\t'))
            k++;
        if (k < n && line[k] == '{')
            return true;
    }
    return false;
}

/* A configuration that is upstream's protobuf text: say so, and how to
 * convert it (into a file named after it, .yaml). */
static int textproto_given(const char *origin, lc_error *err)
{
    const char *base = strrchr(origin, '/') ? strrchr(origin, '/') + 1 : origin;
    const char *dot = strrchr(base, '.');
    int stem = dot && dot > base ? (int)(dot - origin) : (int)strlen(origin);
    return lc_error_set(err, LC_ECONFIG,
                        "%s: this looks like protobuf text format (upstream lczero-training's "
                        "configuration), not lcmon's YAML: convert it first with: lcmon "
                        "convert-config %s -o %.*s.yaml",
                        origin, origin, stem, origin);
}

bool lc_config_text_is_lcmon(const char *text, size_t len)
{
    lc_ynode *root = NULL;
    char msg[256];
    bool yes = false;
    if (lc_yaml_tree_parse(text, len, &root, msg, sizeof msg) == 0 && root &&
        root->kind == LC_YNODE_MAP)
        for (size_t i = 0; i + 1 < root->n; i += 2)
            yes = yes || (!strcmp(root->kids[i]->text, "stages") &&
                          root->kids[i + 1]->kind == LC_YNODE_SEQ);
    lc_yaml_tree_free(root);
    return yes;
}

int lc_config_load_string(const char *yaml, size_t len, const char *origin, lc_config **out,
                          lc_error *err)
{
    *out = NULL;
    lc_ynode *root = NULL;
    char msg[LC_ERROR_MSG_MAX / 2];
    if (lc_yaml_tree_parse(yaml, len, &root, msg, sizeof msg) != 0)
        return looks_like_textproto(yaml, len)
                   ? textproto_given(origin, err)
                   : lc_error_set(err, LC_ECONFIG, "%s:%s", origin, msg);
    if (!root)
        return lc_error_set(err, LC_ECONFIG,
                            "%s: the document is empty (it needs at least a 'stages' list)",
                            origin);
    if (root->kind != LC_YNODE_MAP && looks_like_textproto(yaml, len)) {
        lc_yaml_tree_free(root);
        return textproto_given(origin, err);
    }
    lc_config_marks *marks = lc_xmalloc(sizeof *marks);
    lc_config *cfg = lc_config_read_tree(root, marks);
    /* A document that is not a mapping has nothing to validate. */
    bool mapping = root->kind == LC_YNODE_MAP;
    lc_yaml_tree_free(root);
    cfg->origin = lc_xstrdup(origin);
    cfg->keys = marks;
    lc_error verr;
    lc_error_clear(&verr);
    int vrc = mapping ? lc_config_validate(cfg, &verr) : 0;
    int result = 0;
    if (vrc != 0 || marks->n_problems || marks->n_more_problems)
        result = report(marks, origin, vrc ? verr.msg : NULL, err);
    if (result != 0) {
        lc_config_free(cfg);
        cfg = NULL;
    }
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
    lc_config_marks none = {0};
    return report(cfg->keys ? cfg->keys : &none, cfg->origin, all.msg, err);
}

int lc_config_load_default(lc_config **out, lc_error *err)
{
    return lc_config_load_string(lc_default_config_yaml, strlen(lc_default_config_yaml),
                                 "<default config>", out, err);
}

/* --anchor KEY over the configuration: the `anchor` setting of every stage
 * whose type has one (a text), before anything starts, so that the pool's
 * initial load counts from it. LC_ECONFIG when no stage has one. */
static int apply_anchor(lc_config *cfg, const char *key, lc_error *err)
{
    unsigned set = 0;
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        lc_stage_config *s = &cfg->stages[i];
        const lc_setting *row = lc_setting_find(&s->cls->settings, "anchor");
        if (!row || row->type != LC_SETTING_TEXT || !s->block)
            continue;
        char **field = (char **)((char *)s->block + row->offset);
        if (*field && **field && strcmp(*field, key) != 0)
            LC_INFO("stage '%s': --anchor '%s' over the configuration's anchor '%s'", s->name, key,
                    *field);
        free(*field);
        *field = lc_xstrdup(key);
        set++;
    }
    if (set)
        return 0;
    return lc_error_add(err, LC_ECONFIG,
                        "--anchor %s: %s has no stage that keeps an anchor (a "
                        "shuffling_chunk_pool): add one, or run without --anchor",
                        key, cfg->origin ? cfg->origin : "the configuration");
}

int lc_config_source_load(const lc_config_source *src, lc_config **out, lc_error *err)
{
    int rc =
        src->path ? lc_config_load_file(src->path, out, err) : lc_config_load_default(out, err);
    if (rc == 0 && src->seed_given) {
        (*out)->seed = src->seed;
        (*out)->seed_pinned = true;
    }
    if (rc == 0 && src->anchor && (rc = apply_anchor(*out, src->anchor, err)) != 0) {
        lc_config_free(*out);
        *out = NULL;
    }
    if (rc == 0 && src->deterministic)
        (*out)->deterministic = true;
    return rc;
}

void lc_config_free(lc_config *cfg)
{
    if (!cfg)
        return;
    if (cfg->keys) {
        lc_config_marks_fini(cfg->keys);
        free(cfg->keys);
    }
    free(cfg->origin);
    for (unsigned i = 0; cfg->stages && i < cfg->n_stages; i++) {
        lc_stage_config *s = &cfg->stages[i];
        for (size_t k = 0; lc_stage_registry[k]; k++)
            lc_settings_free_block(&lc_stage_registry[k]->settings, s->blocks[k]);
        lc_settings_free_fields(&lc_config_stage_settings, s);
    }
    free(cfg->stages);
    lc_settings_free_block(&lc_config_top_settings, cfg);
}

const lc_stage_config *lc_config_stage(const lc_config *cfg, const char *name)
{
    for (unsigned i = 0; i < cfg->n_stages; i++)
        if (cfg->stages[i].name && strcmp(cfg->stages[i].name, name) == 0)
            return &cfg->stages[i];
    return NULL;
}

int lc_config_parse_block(const struct lc_stage_class *cls, const char *yaml, void **block,
                          lc_error *err)
{
    *block = NULL;
    lc_ynode *root = NULL;
    char msg[LC_ERROR_MSG_MAX / 2];
    if (lc_yaml_tree_parse(yaml, strlen(yaml), &root, msg, sizeof msg) != 0)
        return lc_error_set(err, LC_ECONFIG, "%s:%s", cls->type_name, msg);
    lc_config_marks marks;
    memset(&marks, 0, sizeof marks);
    void *b = lc_settings_read_block(&cls->settings, root, cls->type_name, &marks);
    lc_yaml_tree_free(root);
    lc_error_clear(err);
    int rc = 0;
    for (size_t i = 0; i < marks.n_problems; i++)
        rc = lc_error_add(err, LC_ECONFIG, "%s", marks.problems[i].text);
    if (marks.n_more_problems)
        rc = lc_error_add(err, LC_ECONFIG, "and %zu more problems", marks.n_more_problems);
    lc_config_marks_fini(&marks);
    lc_error cerr;
    lc_error_clear(&cerr);
    if (cls->config_check && cls->config_check(b, &cerr) != 0) {
        for (char *line = cerr.msg, *next; line; line = next) {
            next = strchr(line, '\n');
            if (next)
                *next++ = '\0';
            rc = lc_error_add(err, LC_ECONFIG, "%s.%s", cls->type_name, line);
        }
    }
    if (rc != 0) {
        lc_settings_free_block(&cls->settings, b);
        return LC_ECONFIG;
    }
    *block = b;
    return 0;
}

void lc_config_free_block(const struct lc_stage_class *cls, void *block)
{
    lc_settings_free_block(&cls->settings, block);
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
