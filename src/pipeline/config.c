/*
 * config: see config.h. The text is parsed once (yaml_tree.h) and read by
 * the settings tables (config_read.h); the reader's problems are at their
 * nodes, validation's are placed by their key paths on the places the
 * reader kept, and all are reported together in line order.
 */
#include "pipeline/config.h"
#include "pipeline/config_read.h"
#include "pipeline/yaml_tree.h"

#include "core/exit.h"
#include "core/file.h"
#include "core/text.h"
#include "core/log.h"
#include "stages/registry.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* How messages name stage i: "stage 'pool'", or by its place and type
 * when its name is missing or not valid ("stage #3 (chunk_unpacker)"). */
static void stage_label(const lc_config *cfg, int i, char *buf, size_t size)
{
    const lc_stage_config *s = (unsigned)i < cfg->n_stages ? &cfg->stages[i] : NULL;
    if (s && s->name && lc_valid_name(s->name, 40)) {
        snprintf(buf, size, "stage '%s'", s->name);
        return;
    }
    const char *type = NULL;
    for (size_t k = 0; s && !type && lc_stage_registry[k]; k++)
        if (s->blocks[k])
            type = lc_stage_registry[k]->type_name;
    snprintf(buf, size, "stage #%d%s%s%s", i + 1, type ? " (" : "", type ? type : "",
             type ? ")" : "");
}

/* The key path as messages show it: inside a stage, without the
 * "stages[N]" its label says. */
static const char *shown_path(const lc_problem *p)
{
    if (p->stage < 0)
        return p->path;
    char prefix[32];
    int n = snprintf(prefix, sizeof prefix, "stages[%d]", p->stage);
    if (strncmp(p->path, prefix, (size_t)n) != 0)
        return p->path;
    return p->path + n + (p->path[n] == '.');
}

/* One problem as a line: "origin:LINE:COL: stage 'pool': key: text"
 * (without the place when it has none). */
static int format_problem(const lc_config *cfg, const char *origin, const lc_problem *p, char *buf,
                          size_t size)
{
    char where[32] = "", label[96] = "";
    if (p->line)
        snprintf(where, sizeof where, ":%d:%d", p->line, p->col);
    if (p->stage >= 0) {
        stage_label(cfg, p->stage, label, sizeof label - 2);
        strcat(label, ": ");
    }
    const char *key = shown_path(p);
    return snprintf(buf, size, "%s%s: %s%s%s%s", origin, where, label, key, key[0] ? ": " : "",
                    p->text);
}

/* The problems (placed and sorted) into err, a line each while they fit,
 * and a last line saying how many more there are (those that did not fit,
 * and the `more` counted without keeping). */
static int write_placed(const lc_config *cfg, const lc_problems *all, size_t more,
                        const char *origin, lc_error *err)
{
    char out[LC_ERROR_MSG_MAX];
    const size_t tail = 200; /* room for the last line */
    size_t used = 0, shown = 0;
    out[0] = '\0';
    for (; shown < all->n; shown++) {
        char line[LC_ERROR_MSG_MAX];
        int w = format_problem(cfg, origin, &all->v[shown], line, sizeof line);
        size_t need = (size_t)w + (used ? 1 : 0);
        bool last = shown + 1 == all->n && more == 0;
        if (w < 0 || used + need + (last ? 0 : tail) >= sizeof out)
            break;
        snprintf(out + used, sizeof out - used, "%s%s", used ? "\n" : "", line);
        used += need;
    }
    more += all->n - shown;
    if (more)
        snprintf(out + used, sizeof out - used,
                 "%s%s: and %zu more problem%s (the first %zu are shown: fix them and check "
                 "again)",
                 used ? "\n" : "", origin, more, more == 1 ? "" : "s", shown);
    return lc_error_set(err, LC_ECONFIG, "%s", out);
}

/* p into all at line, col. */
static void copy_problem(lc_problems *all, const lc_problem *p, int line, int col)
{
    all->stage = p->stage;
    lc_problem_add_at(all, line, col, p->path, "%s", p->text);
}

/* The reader's problems (at their nodes; NULL: none) and validation's or
 * preflight's (`found`, placed here by their key paths on the key the
 * marks hold, or the nearest above it), merged in line order and written
 * to err, and into `placed` when not NULL. What the reader already said is
 * not said again: a problem placed on a key the reader found a problem
 * with. */
static int report(const lc_config *cfg, const lc_config_marks *marks, const lc_problems *reader,
                  const lc_problems *found, lc_problems *placed, lc_error *err)
{
    lc_problems all = LC_PROBLEMS_INIT;
    all.max = SIZE_MAX; /* both lists are bounded */
    size_t more = found->more;
    for (size_t i = 0; reader && i < reader->n; i++)
        copy_problem(&all, &reader->v[i], reader->v[i].line, reader->v[i].col);
    more += reader ? reader->more : 0;
    for (size_t i = 0; i < found->n; i++) {
        const lc_problem *p = &found->v[i];
        const lc_config_key *k = p->line ? NULL : lc_config_marks_place(marks, p->path);
        bool said = false;
        for (size_t j = 0; k && reader && j < reader->n && !said; j++)
            said = strcmp(reader->v[j].path, k->path) == 0;
        if (!said)
            copy_problem(&all, p, k ? k->line : p->line, k ? k->col : p->col);
    }
    lc_problems_sort(&all);
    all.more = more;
    int rc = write_placed(cfg, &all, more, cfg->origin, err);
    if (placed) {
        lc_problems_fini(placed);
        *placed = all;
    } else {
        lc_problems_fini(&all);
    }
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
    return lc_config_load_records(yaml, len, origin, out, NULL, err);
}

int lc_config_load_records(const char *yaml, size_t len, const char *origin, lc_config **out,
                           lc_problems *problems, lc_error *err)
{
    *out = NULL;
    if (problems)
        lc_problems_init(problems);
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
    lc_problems found = LC_PROBLEMS_INIT;
    if (mapping)
        lc_config_validate(cfg, &found);
    int result = 0;
    if (lc_problems_count(&found) || lc_problems_count(&marks->problems))
        result = report(cfg, marks, &marks->problems, &found, problems, err);
    lc_problems_fini(&found);
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
    lc_problems found = LC_PROBLEMS_INIT;
    for (unsigned i = 0; i < cfg->n_stages; i++) {
        const lc_stage_config *s = &cfg->stages[i];
        if (!s->cls->preflight)
            continue;
        lc_problems_under(&found, (int)i, "stages[%u].%s", i, s->cls->type_name);
        s->cls->preflight(s->block, &found);
    }
    int rc = 0;
    if (lc_problems_count(&found)) {
        lc_config_marks none;
        lc_config_marks_init(&none);
        rc = report(cfg, cfg->keys ? cfg->keys : &none, NULL, &found, NULL, err);
        lc_config_marks_fini(&none);
    }
    lc_problems_fini(&found);
    return rc;
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
    lc_config_marks_init(&marks);
    void *b = lc_settings_read_block(&cls->settings, root, cls->type_name, &marks);
    lc_yaml_tree_free(root);
    if (cls->config_check) {
        lc_problems_under(&marks.problems, -1, "%s", cls->type_name);
        cls->config_check(b, &marks.problems);
    }
    lc_error_clear(err);
    int rc = lc_problems_to_error(&marks.problems, err);
    lc_config_marks_fini(&marks);
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
