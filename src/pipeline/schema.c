/*
 * schema: `lcmon --print-schema`, printed from the settings tables the
 * reader reads the configuration with (config_read.c, each class's table),
 * so that it cannot drift from what lcmon reads: as YAML-shaped text, as
 * the README's "Stage types" tables (markdown) and as the man page's STAGE
 * TYPES section (man). scripts/settings-docs puts the last two in place.
 */
#include "pipeline/config.h"
#include "pipeline/config_read.h"
#include "pipeline/settings_read.h"

#include "stages/items.h"
#include "stages/registry.h"
#include "stages/stage.h"

#include <string.h>

/* "whole number, 1 to 256", "one of block, drop_newest or keep_newest", ... */
static void type_text(const lc_setting *row, lc_setting_type type, char *buf, size_t size)
{
    char range[96] = "";
    bool whole = type == LC_SETTING_WHOLE || type == LC_SETTING_SIGNED;
    if (row->range && type != LC_SETTING_LIST)
        lc_setting_range_text(row, whole, range, sizeof range);
    switch (type) {
    case LC_SETTING_BOOL:
        snprintf(buf, size, "true or false");
        break;
    case LC_SETTING_WHOLE:
        snprintf(buf, size, "whole number, %s", range[0] ? range : "0 or more");
        break;
    case LC_SETTING_SIGNED:
        snprintf(buf, size, "integer%s%s", range[0] ? ", " : "", range);
        break;
    case LC_SETTING_REAL:
        snprintf(buf, size, "number%s%s", range[0] ? ", " : "", range);
        break;
    case LC_SETTING_TEXT:
        snprintf(buf, size, "text");
        break;
    case LC_SETTING_SIZE:
        snprintf(buf, size, "a size (512M, 6G, 8GiB)%s", row->auto_ok ? " or auto" : "");
        break;
    case LC_SETTING_ENUM: {
        int n = snprintf(buf, size, "one of");
        for (size_t i = 0; row->values[i].name && n > 0 && (size_t)n < size; i++)
            n += snprintf(buf + n, size - (size_t)n, "%s %s", i ? "," : "", row->values[i].name);
        break;
    }
    case LC_SETTING_BLOCK:
        snprintf(buf, size, "a block");
        break;
    case LC_SETTING_LIST: {
        char item[160], count[48] = "";
        if (row->max_items)
            snprintf(count, sizeof count, " of %u to %u", row->min_items, row->max_items);
        if (row->item == LC_SETTING_BLOCK) {
            snprintf(buf, size, "a list%s blocks", count[0] ? count : " of");
            break;
        }
        type_text(row, row->item, item, sizeof item);
        snprintf(buf, size, "a list%s, each %s", count, item);
        break;
    }
    }
}

/* "1", "required", "off": what a key is when it is absent. */
static const char *default_text(const lc_setting *row)
{
    if (row->off)
        return row->off;
    if (row->required)
        return "required";
    if (row->def && !strcmp(row->def, "{}"))
        return "its own defaults";
    return row->def ? row->def : "none";
}

/* A default that is a value (in backticks in markdown), not words. */
static bool default_is_value(const lc_setting *row)
{
    return row->def && !row->off && row->type != LC_SETTING_BLOCK;
}

/* What default_text is: "default 1", "absent: off", "required". */
static const char *absent_label(const lc_setting *row)
{
    if (row->off)
        return "absent: ";
    return default_is_value(row) ? "default " : "";
}

/* ---- text ---- */

static void print_rows(FILE *out, const lc_settings *b, int depth);

static void print_row(FILE *out, const lc_setting *row, int depth)
{
    char type[300];
    if (row->type == LC_SETTING_BLOCK) {
        fprintf(out, "%*s%s:  # %s (absent: %s)\n", depth * 2, "", row->key, row->meaning,
                default_text(row));
        print_rows(out, row->block, depth + 1);
        return;
    }
    if (row->type == LC_SETTING_LIST && row->item == LC_SETTING_BLOCK) {
        fprintf(out, "%*s%s:  # a list of: %s (%s)\n%*s-\n", depth * 2, "", row->key, row->meaning,
                default_text(row), depth * 2 + 2, "");
        print_rows(out, row->block, depth + 2);
        return;
    }
    type_text(row, row->type, type, sizeof type);
    fprintf(out, "%*s%s: %s (%s%s)  # %s\n", depth * 2, "", row->key, type, absent_label(row),
            default_text(row), row->meaning);
}

static void print_rows(FILE *out, const lc_settings *b, int depth)
{
    for (const lc_setting *row = b->rows; row->key; row++)
        print_row(out, row, depth);
}

static const char *reads_text(const lc_stage_class *cls)
{
    if (!cls->input)
        return "nothing";
    return cls->input == &lc_item_any ? "items of one type" : cls->input->unit;
}

static const char *writes_text(const lc_stage_class *cls)
{
    if (!cls->output)
        return "to a pipe or a file";
    return cls->output == &lc_item_any ? "what it reads" : cls->output->unit;
}

static void print_text(FILE *out)
{
    fprintf(out, "# The keys an lcmon configuration may hold, printed from the settings tables\n"
                 "# lcmon reads it with. Every stage has a name, an input (but producers), an\n"
                 "# optional output queue and exactly one stage-type block. Each key: its\n"
                 "# type and range, (its default, or what it is when absent), # its meaning.\n"
                 "# Text may use ${VAR} and ${VAR:-default}.\n");
    fprintf(out, "stages:  # a list of:\n  -\n");
    print_rows(out, &lc_config_stage_settings, 2);
    for (size_t i = 0; lc_stage_registry[i]; i++) {
        const lc_stage_class *cls = lc_stage_registry[i];
        fprintf(out, "    %s:  # stage type: %s (reads %s, writes %s)\n", cls->type_name,
                cls->summary, reads_text(cls), writes_text(cls));
        print_rows(out, &cls->settings, 3);
    }
    print_rows(out, &lc_config_top_settings, 0);
}

/* ---- markdown and man ---- */

/* Markdown table cells and man text: '|' and '\' escaped. */
static void put_escaped(FILE *out, const char *s, bool man)
{
    for (; *s; s++) {
        if (!man && *s == '|')
            fputs("\\|", out);
        else if (man && *s == '\\')
            fputs("\\e", out);
        else if (man && *s == '-')
            fputs("\\-", out);
        else
            fputc(*s, out);
    }
}

/* One row per key, nested blocks' keys as block.key. */
static void doc_rows(FILE *out, const lc_settings *b, const char *prefix, bool man)
{
    for (const lc_setting *row = b->rows; row->key; row++) {
        char key[128], type[300];
        snprintf(key, sizeof key, "%s%s", prefix, row->key);
        type_text(row, row->type, type, sizeof type);
        if (man) {
            fputs(".TP\n.B ", out);
            put_escaped(out, key, true);
            fputs("\n", out);
            put_escaped(out, type, true);
            fputs("; ", out);
            fputs(absent_label(row), out);
            put_escaped(out, default_text(row), true);
            fputs(". ", out);
            put_escaped(out, row->meaning, true);
            fputs(row->example ? " (e.g. " : ".\n", out);
            if (row->example) {
                put_escaped(out, row->example, true);
                fputs(").\n", out);
            }
        } else {
            fprintf(out, "| `%s` | ", key);
            put_escaped(out, type, false);
            const char *tick = default_is_value(row) ? "`" : "";
            fprintf(out, " | %s", tick);
            put_escaped(out, default_text(row), false);
            fprintf(out, "%s | ", tick);
            put_escaped(out, row->meaning, false);
            fputs(" | ", out);
            if (row->example) {
                fputs("`", out);
                put_escaped(out, row->example, false);
                fputs("`", out);
            }
            fputs(" |\n", out);
        }
        if (row->block) {
            char sub[140];
            snprintf(sub, sizeof sub, "%s%s.", key, row->type == LC_SETTING_LIST ? "[]" : "");
            doc_rows(out, row->block, sub, man);
        }
    }
}

static void md_block(FILE *out, const char *title, const char *what, const lc_settings *b)
{
    fprintf(out, "\n**%s** — %s\n\n", title, what);
    if (!b->rows[0].key) {
        fprintf(out, "No settings: give `{}`.\n");
        return;
    }
    fprintf(out, "| setting | type | default | meaning | example |\n|---|---|---|---|---|\n");
    doc_rows(out, b, "", false);
}

static void print_markdown(FILE *out)
{
    fprintf(out, "| type | reads | writes | what it does |\n|---|---|---|---|\n");
    for (size_t i = 0; lc_stage_registry[i]; i++) {
        const lc_stage_class *cls = lc_stage_registry[i];
        fprintf(out, "| `%s` | %s | %s%s | ", cls->type_name, reads_text(cls), writes_text(cls),
                cls->outputs ? ", one stream per named output" : "");
        put_escaped(out, cls->summary, false);
        fputs(" |\n", out);
    }
    md_block(out, "Global keys", "at the top of the file", &lc_config_top_settings);
    md_block(out, "Every stage", "beside its type's block", &lc_config_stage_settings);
    for (size_t i = 0; lc_stage_registry[i]; i++) {
        const lc_stage_class *cls = lc_stage_registry[i];
        char title[80];
        snprintf(title, sizeof title, "`%s`", cls->type_name);
        md_block(out, title, cls->summary, &cls->settings);
    }
}

static void man_block(FILE *out, const char *title, const char *what, const lc_settings *b)
{
    fprintf(out, ".SS %s\n", title);
    put_escaped(out, what, true);
    fputs(b->rows[0].key ? ".\n" : ". No settings: give {}.\n", out);
    doc_rows(out, b, "", true);
}

static void print_man(FILE *out)
{
    man_block(out, "Global keys", "At the top of the file", &lc_config_top_settings);
    man_block(out, "Every stage", "Beside its type's block", &lc_config_stage_settings);
    for (size_t i = 0; lc_stage_registry[i]; i++) {
        const lc_stage_class *cls = lc_stage_registry[i];
        man_block(out, cls->type_name, cls->summary, &cls->settings);
    }
}

int lc_config_print_schema(FILE *out, const char *format)
{
    if (!format || !strcmp(format, "text"))
        print_text(out);
    else if (!strcmp(format, "markdown"))
        print_markdown(out);
    else if (!strcmp(format, "man"))
        print_man(out);
    else
        return -1;
    return 0;
}
