/*
 * Every setting of every table (the global keys, a stage's keys, its
 * output queue, each stage type's block and the blocks nested in it) is in
 * `lcmon --print-schema`, in the README's "Stage types" tables and in the
 * man page's STAGE TYPES section, each under its own stage type. (The
 * settings_docs test checks that the README and the man page hold exactly
 * what lcmon prints; this one that what it prints, and they hold, names
 * every setting.)
 *
 * Usage: test_settings_docs README.md man/lcmon.1.in
 */
#include "check.h"

#include "pipeline/config.h"
#include "pipeline/config_read.h"
#include "stages/registry.h"
#include "stages/stage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap + 1);
    while ((n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

static char *schema(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK_EQ_INT(lc_config_print_schema(f, NULL), 0);
    fclose(f);
    return text;
}

/* The part of text from `title` to the next `next` (or the end), copied. */
static char *section(const char *text, const char *title, const char *next)
{
    const char *at = text ? strstr(text, title) : NULL;
    if (!at) {
        fprintf(stderr, "no section '%s'\n", title);
        CHECK(at != NULL);
        return NULL;
    }
    const char *end = strstr(at + strlen(title), next);
    size_t n = end ? (size_t)(end - at) : strlen(at);
    char *out = malloc(n + 1);
    memcpy(out, at, n);
    out[n] = '\0';
    return out;
}

static void expect(const char *where, const char *part, const char *needle)
{
    bool ok = part && strstr(part, needle);
    if (!ok)
        fprintf(stderr, "%s lacks \"%s\"\n", where, needle);
    CHECK(ok);
}

/* Every row of b (nested blocks' as block.key, a list's blocks' as
 * list[].key) in the three sections. */
static void check_rows(const lc_settings *b, const char *prefix, const char *text,
                       const char *readme, const char *man)
{
    for (const lc_setting *row = b->rows; row->key; row++) {
        char key[160], needle[200];
        snprintf(key, sizeof key, "%s%s", prefix, row->key);
        snprintf(needle, sizeof needle, "\n%s:", row->key); /* a global key */
        if (!text || !strstr(text, needle))
            snprintf(needle, sizeof needle, " %s:", row->key);
        expect("--print-schema", text, needle);
        snprintf(needle, sizeof needle, "| `%s` |", key);
        expect("README.md", readme, needle);
        snprintf(needle, sizeof needle, ".B %s\n", key);
        expect("the man page", man, needle);
        if (row->block) {
            char sub[170];
            snprintf(sub, sizeof sub, "%s%s.", key, row->type == LC_SETTING_LIST ? "[]" : "");
            check_rows(row->block, sub, text, readme, man);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_settings_docs README.md man/lcmon.1.in\n");
        return 2;
    }
    char *readme_all = read_all(argv[1]), *man_all = read_all(argv[2]), *text = schema();
    CHECK(readme_all && man_all && text);
    /* The global keys and a stage's own. */
    char *t = section(text, "\nstages:", "  # stage type:");
    char *top = section(text, "\nseed:", "\nzzz");
    char *r = section(readme_all, "**Global keys**", "\n**");
    char *m = section(man_all, ".SS Global keys\n", ".SS ");
    check_rows(&lc_config_top_settings, "", top, r, m);
    free(r);
    free(m);
    r = section(readme_all, "**Every stage**", "\n**");
    m = section(man_all, ".SS Every stage\n", ".SS ");
    check_rows(&lc_config_stage_settings, "", t, r, m);
    free(t);
    free(top);
    free(r);
    free(m);
    for (size_t i = 0; lc_stage_registry[i]; i++) {
        const lc_stage_class *cls = lc_stage_registry[i];
        char title[96];
        snprintf(title, sizeof title, "\n    %s:  # stage type:", cls->type_name);
        t = section(text, title, "  # stage type:");
        snprintf(title, sizeof title, "**`%s`**", cls->type_name);
        r = section(readme_all, title, "\n**");
        snprintf(title, sizeof title, ".SS %s\n", cls->type_name);
        m = section(man_all, title, ".SS ");
        check_rows(&cls->settings, "", t, r, m);
        free(t);
        free(r);
        free(m);
    }
    free(readme_all);
    free(man_all);
    free(text);
    return check_finish();
}
