/*
 * The converter's schema of upstream's loader fields
 * (src/app/convert/upstream_schema.c) against the project's list of them
 * (docs/upstream.md, its table): every field of every stage block the list
 * names is in the schema with the list's type, and every field the schema
 * knows (stage blocks, and the blocks inside them: `queue` for an output
 * block, `position_sampling`; and `schedule`, training.schedule) is in the
 * list. Only the first table is the list of fields (the later ones, such as
 * the stage-control messages, are not configuration). Rows of `(top level)`,
 * `data_loader` and `stage` are read by the converter's own code, not its
 * tables: tests/python/test_upstream_fields.py converts each of them.
 *
 * Usage: test_upstream_schema DOCS/upstream.md
 */
#include "check.h"

#include "app/convert/upstream_conv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 256

typedef struct row {
    char block[48], field[48], type[96];
    bool seen; /* matched by a schema field */
} row;

static row rows[MAX_ROWS];
static unsigned n_rows;

/* The text between the first pair of backticks of cell (or the cell). */
static void unquote(const char *cell, char *out, size_t n)
{
    const char *a = strchr(cell, '`');
    const char *b = a ? strchr(a + 1, '`') : NULL;
    if (!a || !b) {
        a = cell - 1;
        b = cell + strlen(cell);
    }
    size_t len = (size_t)(b - a - 1);
    if (len >= n)
        len = n - 1;
    memcpy(out, a + 1, len);
    out[len] = '\0';
}

/* The table's rows: | block | field | type | lcmon |. */
static void read_rows(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open it\n", path);
        exit(2);
    }
    char line[2048];
    bool in_table = false; /* the first table (the fields), not the later ones */
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "| block | field", 15)) {
            in_table = true;
            continue;
        }
        if (line[0] != '|') {
            if (in_table && n_rows)
                break;
            continue;
        }
        if (!in_table || strstr(line, "---") == line + 1)
            continue;
        char *cells[5] = {0};
        unsigned k = 0;
        for (char *p = strtok(line + 1, "|"); p && k < 5; p = strtok(NULL, "|"))
            cells[k++] = p;
        if (k < 4 || n_rows == MAX_ROWS)
            continue;
        row *r = &rows[n_rows++];
        for (unsigned i = 0; i < 3; i++) {
            while (*cells[i] == ' ')
                cells[i]++;
            char *end = cells[i] + strlen(cells[i]);
            while (end > cells[i] && end[-1] == ' ')
                *--end = '\0';
        }
        unquote(cells[0], r->block, sizeof r->block);
        unquote(cells[1], r->field, sizeof r->field);
        snprintf(r->type, sizeof r->type, "%s", cells[2]);
    }
    fclose(f);
}

static row *find_row(const char *block, const char *field)
{
    for (unsigned i = 0; i < n_rows; i++)
        if (!strcmp(rows[i].block, block) && !strcmp(rows[i].field, field))
            return &rows[i];
    return NULL;
}

/* The list's type for a schema field: uint, int, double (or float),
 * string, enum (with each of its values), block (or queue); "repeated"
 * when it is. */
static bool same_type(const row *r, const upstream_field *f)
{
    const char *t = r->type;
    bool ok;
    switch (f->type) {
    case U_UINT:
        ok = !strncmp(t, "uint", 4);
        break;
    case U_INT:
        ok = !strncmp(t, "int", 3);
        break;
    case U_DOUBLE:
        ok = !strncmp(t, "double", 6) || !strncmp(t, "float", 5);
        break;
    case U_STRING:
        ok = !strncmp(t, "string", 6);
        break;
    case U_ENUM:
        ok = !strncmp(t, "enum", 4);
        for (const char *const *v = f->enums; ok && v && *v; v++) {
            char quoted[64];
            snprintf(quoted, sizeof quoted, "`%s`", *v);
            ok = strstr(t, quoted) != NULL;
        }
        break;
    default:
        ok = !strncmp(t, "block", 5) || !strncmp(t, "queue", 5);
    }
    return ok && (strstr(t, "repeated") != NULL) == f->repeated;
}

/* A block inside a stage block: `queue` for an output, else its name. */
static const char *sub_block_name(const upstream_field *f)
{
    for (const upstream_field *g = f->sub; g && g->name; g++)
        if (!strcmp(g->name, "queue_capacity"))
            return "queue";
    return f->name;
}

static void check_table(const char *block, const upstream_field *fields, unsigned depth)
{
    for (const upstream_field *f = fields; f->name; f++) {
        row *r = find_row(block, f->name);
        if (!r) {
            fprintf(stderr, "docs/upstream.md lacks %s.%s, which the converter's schema knows\n",
                    block, f->name);
            CHECK(!"a schema field is not in the list");
            continue;
        }
        r->seen = true;
        if (!same_type(r, f)) {
            fprintf(stderr, "%s.%s: the list says '%s', the schema another type\n", block, f->name,
                    r->type);
            CHECK(!"a type differs");
        }
        if (f->type == U_BLOCK && f->sub && depth == 0)
            check_table(sub_block_name(f), f->sub, depth + 1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s docs/upstream.md\n", argv[0]);
        return 2;
    }
    read_rows(argv[1]);
    printf("%u rows in %s\n", n_rows, argv[1]);
    CHECK(n_rows >= 50); /* the table was read */
    for (size_t i = 0; i < up_n_stage_types; i++)
        check_table(up_stage_types[i].name, up_stage_types[i].fields, 0);
    check_table("schedule", up_schedule_fields, 1); /* training { schedule { } } */
    /* Every row of a block the tables hold was matched; the others are the
     * converter's own code's (checked by converting them). */
    static const char *const by_code[] = {"(top level)", "data_loader", "stage"};
    for (unsigned i = 0; i < n_rows; i++) {
        bool code = false;
        for (unsigned k = 0; k < 3; k++)
            code |= !strcmp(rows[i].block, by_code[k]);
        if (!rows[i].seen && !code) {
            fprintf(stderr, "docs/upstream.md lists %s.%s, which the converter's schema lacks\n",
                    rows[i].block, rows[i].field);
            CHECK(!"a listed field is not in the schema");
        }
    }
    /* Each stage block is listed. */
    for (size_t i = 0; i < up_n_stage_types; i++) {
        bool any = false;
        for (unsigned k = 0; k < n_rows; k++)
            any |= !strcmp(rows[k].block, up_stage_types[i].name);
        if (!any)
            fprintf(stderr, "docs/upstream.md lists no field of %s\n", up_stage_types[i].name);
        CHECK(any);
    }
    return check_finish();
}
