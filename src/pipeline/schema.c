/*
 * schema: `lcmon --print-schema`, the configuration's description printed
 * from the libcyaml schema that loading uses (config.c assembles it from
 * the stage registry), so that it cannot drift from what lcmon reads.
 */
#include "pipeline/config.h"

#include "stages/items.h"
#include "stages/registry.h"
#include "stages/stage.h"

#include <string.h>

static void print_value(FILE *out, const cyaml_schema_value_t *v, int depth);

static void print_fields(FILE *out, const cyaml_schema_field_t *f, int depth)
{
    for (; f->key; f++) {
        fprintf(out, "%*s%s:", depth * 2, "", f->key);
        bool optional = f->value.flags & CYAML_FLAG_OPTIONAL;
        const lc_stage_class *cls = depth == 2 ? lc_stage_class_find(f->key) : NULL;
        if (cls) {
            fprintf(out, "  # stage type: %s (reads %s, writes %s)\n", cls->summary,
                    cls->input ? cls->input->unit : "nothing",
                    cls->output == &lc_item_any ? "what it reads"
                    : cls->output               ? cls->output->unit
                                                : "to a pipe or a file");
            print_value(out, &f->value, depth + 1);
            continue;
        }
        if (f->value.type == CYAML_MAPPING) {
            fprintf(out, "%s\n", optional ? "  # optional" : "");
            print_value(out, &f->value, depth + 1);
            continue;
        }
        if (depth == 2 && !strcmp(f->key, "inputs")) {
            fprintf(out, " a list of inputs as for input, for a stage that reads several "
                         "(join)\n");
            continue;
        }
        if ((f->value.type == CYAML_SEQUENCE || f->value.type == CYAML_SEQUENCE_FIXED) &&
            f->value.sequence.entry->type != CYAML_MAPPING) {
            fprintf(out, " a list of: ");
            print_value(out, f->value.sequence.entry, depth);
            fprintf(out, "%s\n", optional ? " (optional)" : "");
            continue;
        }
        if (f->value.type == CYAML_SEQUENCE || f->value.type == CYAML_SEQUENCE_FIXED) {
            fprintf(out, "  # a list of:\n");
            fprintf(out, "%*s-\n", depth * 2 + 2, "");
            print_value(out, f->value.sequence.entry, depth + 2);
            continue;
        }
        /* What validation adds to the schema, for the two keys of a stage. */
        if (depth == 2 && !strcmp(f->key, "name")) {
            fprintf(out, " text, unique: letters, digits, '_' and '-' (required)\n");
            continue;
        }
        if (depth == 2 && !strcmp(f->key, "input")) {
            fprintf(out, " an earlier stage's name, or stage.output for a named output "
                         "(none for a producer)\n");
            continue;
        }
        fputc(' ', out);
        print_value(out, &f->value, depth);
        fprintf(out, "%s\n", optional ? " (optional)" : "");
    }
}

static void print_value(FILE *out, const cyaml_schema_value_t *v, int depth)
{
    switch (v->type) {
    case CYAML_INT:
        fprintf(out, "integer");
        break;
    case CYAML_UINT:
        fprintf(out, "whole number, 0 or more");
        break;
    case CYAML_BOOL:
        fprintf(out, "true or false");
        break;
    case CYAML_FLOAT:
        fprintf(out, "number");
        break;
    case CYAML_STRING:
        fprintf(out, "text");
        break;
    case CYAML_ENUM:
        fprintf(out, "one of");
        for (uint32_t i = 0; i < v->enumeration.count; i++)
            fprintf(out, "%s %s", i ? "," : "", v->enumeration.strings[i].str);
        break;
    case CYAML_MAPPING:
        print_fields(out, v->mapping.fields, depth);
        break;
    default:
        fprintf(out, "(see the README)");
        break;
    }
}

void lc_config_print_schema(FILE *out)
{
    fprintf(out, "# The keys an lcmon configuration may hold, printed from the schema lcmon\n"
                 "# loads it with. Every stage has a name, an input (but producers), an\n"
                 "# optional output queue and exactly one stage-type block; the README's\n"
                 "# \"Stage types\" gives each setting's meaning, default and range. Text\n"
                 "# may use ${VAR} and ${VAR:-default}.\n");
    print_value(out, lc_config_schema(), 0);
}
