/*
 * upstream_config: upstream's DataLoaderConfig text to lcmon YAML.
 *
 * Three passes over the text-format tree (format/textproto):
 *   1. check: every field against upstream's schema (upstream_schema.c),
 *      as upstream's parser would; every problem is collected;
 *   2. map (upstream_map.c): each stage block to an lcmon stage (its settings written as
 *      YAML lines, fields without an equivalent as comments); inputs and
 *      outputs resolved by name, readers of a stage lcmon has no type for
 *      given that stage's input instead;
 *   3. print (this file, with the reading and wiring): in an order where every input comes first
 * (upstream allows any order; lcmon wants inputs earlier), a fifo_writer per output.
 */
#include "app/convert/upstream_config.h"
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

/* ---- reading the stages ---- */

static void read_stage(conversion *c, const lc_textproto_field *def, lcmon_stage *s)
{
    memset(s, 0, sizeof *s);
    s->def = def;
    s->bf = open_memstream(&s->body, &s->body_len);
    if (!s->bf)
        lc_fatal("out of memory");
    if (def->kind != LC_TEXTPROTO_BLOCK) {
        up_error_at(c, def->value_line, def->value_col, "stage: expects a block { ... }");
        return;
    }
    const lc_textproto_field *name = NULL;
    for (unsigned i = 0; i < def->n_fields; i++) {
        const lc_textproto_field *f = &def->fields[i];
        if (!strcmp(f->name, "name")) {
            if (name)
                up_error_at(c, f->line, f->col, "stage: name given twice (first at line %u)",
                            name->line);
            else if (f->kind != LC_TEXTPROTO_STRING || !up_valid_utf8(f->value, f->value_len))
                up_error_at(c, f->value_line, f->value_col,
                            "stage: name expects a string in double quotes");
            else
                name = f;
            continue;
        }
        if (!strcmp(f->name, "input")) {
            if (f->kind != LC_TEXTPROTO_STRING)
                up_error_at(c, f->value_line, f->value_col,
                            "stage: input expects a string in double quotes (\"stage\" or "
                            "\"stage.output\")");
            else if (s->n_inputs == MAX_INPUTS)
                up_error_at(c, f->line, f->col, "stage: more than %d inputs", MAX_INPUTS);
            else
                s->input_refs[s->n_inputs++] = f;
            continue;
        }
        const upstream_stage_type *t = NULL;
        for (unsigned k = 0; k < up_n_stage_types; k++)
            if (!strcmp(up_stage_types[k].name, f->name))
                t = &up_stage_types[k];
        if (!t) {
            const char *words[UP_MAX_STAGE_TYPES + 3] = {"name", "input"};
            for (unsigned k = 0; k < up_n_stage_types; k++)
                words[k + 2] = up_stage_types[k].name;
            words[up_n_stage_types + 2] = NULL;
            const char *near = lc_closest_word(f->name, words);
            up_error_at(c, f->line, f->col,
                        "stage: unknown field '%s'%s%s%s; upstream refuses it too", f->name,
                        near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
            continue;
        }
        if (s->type) {
            up_error_at(c, f->line, f->col,
                        "stage: two stage blocks (%s at line %u and %s); give one", s->type->name,
                        s->block->line, f->name);
            continue;
        }
        s->type = t;
        s->block = f;
    }
    s->up_name = name ? name->value : NULL;
    if (!name)
        up_error_at(c, def->line, def->col, "stage: no name (name: \"pool\")");
    if (!s->type)
        up_error_at(c, def->line, def->col,
                    "stage '%s': no stage block (one of file_path_provider, "
                    "chunk_source_loader, shuffling_chunk_pool, ...)",
                    name ? name->value : "?");
    else if (s->block->kind != LC_TEXTPROTO_BLOCK)
        up_error_at(c, s->block->value_line, s->block->value_col,
                    "stage: %s expects a block { ... }", s->type->name);
}

/* Which stage (index) an input or output string names, and which of its
 * outputs (lcmon's name, "" for the only one). -1 when none, with an
 * error. */
static int resolve(conversion *c, const char *who, const lc_textproto_field *ref_field,
                   const char *ref, char *out_name, size_t out_len)
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
        up_error_at(c, ref_field->value_line, ref_field->value_col,
                    "%s '%s': no stage has this name%s%s%s", who, ref,
                    near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
        return -1;
    }
    lcmon_stage *s = &c->st[found];
    if (s->type && !strcmp(s->type->name, "chunk_source_splitter")) {
        if (!suffix) {
            up_error_at(c, ref_field->value_line, ref_field->value_col,
                        "%s '%s': the splitter has several outputs: name one ('%s.%s')", who, ref,
                        ref, s->n_out ? s->out_up[0] : "train");
            return -1;
        }
        for (unsigned k = 0; k < s->n_out; k++)
            if (!strcmp(s->out_up[k], suffix)) {
                snprintf(out_name, out_len, "%s", s->out_lc[k]);
                return found;
            }
        up_error_at(c, ref_field->value_line, ref_field->value_col,
                    "%s '%s': stage '%s' has no output named '%s'", who, ref, s->up_name, suffix);
        return -1;
    }
    if (suffix && s->block) {
        const char *extra[] = {"cachehit_output", "prefetch_output"};
        for (unsigned k = 0; k < 2; k++) {
            const lc_textproto_field *q = up_get(s->block, extra[k]);
            const lc_textproto_field *qn = up_get(q, "name");
            if (qn && qn->kind == LC_TEXTPROTO_STRING && !strcmp(qn->value, suffix)) {
                up_error_at(c, ref_field->value_line, ref_field->value_col,
                            "%s '%s': lcmon has no %s; read the stage's main output ('%s')", who,
                            ref, extra[k], s->up_name);
                return -1;
            }
        }
    }
    return found;
}

/* ---- pass 3: printing ---- */

static void print_ref(FILE *f, const conversion *c, const lcmon_stage *s, unsigned k)
{
    fputs(c->st[s->in_stage[k]].name, f);
    if (s->in_out[k][0])
        fprintf(f, ".%s", s->in_out[k]);
}

static void print_stage(FILE *f, conversion *c, lcmon_stage *s)
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
        up_put_yaml_string(f, s->up_name, strlen(s->up_name), 60);
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
static void name_stages(conversion *c)
{
    for (unsigned i = 0; i < c->n_st; i++) {
        lcmon_stage *s = &c->st[i];
        up_clean_name(s->up_name ? s->up_name : "stage", s->name, NAME_MAX_LEN);
        for (unsigned n = 2;; n++) {
            bool clash = false;
            for (unsigned j = 0; j < i; j++)
                clash |= !strcmp(c->st[j].name, s->name);
            if (!clash)
                break;
            char base[NAME_MAX_LEN + 1];
            up_clean_name(s->up_name ? s->up_name : "stage", base, NAME_MAX_LEN - 4);
            snprintf(s->name, sizeof s->name, "%s_%u", base, n);
        }
    }
}

static void free_conv(conversion *c)
{
    for (unsigned i = 0; i < c->n_st; i++) {
        if (c->st[i].bf)
            fclose(c->st[i].bf);
        free(c->st[i].body);
    }
    free(c->st);
    if (c->nf)
        fclose(c->nf);
}

/* The DataLoaderConfig: data_loader { } of a whole training config (the
 * other sections named in `ignored`), or the file itself. NULL with an
 * error when neither. */
static const lc_textproto_field *find_loader(conversion *c, const lc_textproto_field *root,
                                             char *ignored, size_t ignored_len)
{
    const lc_textproto_field *dl = up_get(root, "data_loader");
    ignored[0] = '\0';
    if (!dl) {
        if (up_get(root, "stage"))
            return root;
        up_error_at(c, 1, 1,
                    "no data_loader { ... } block and no stage { ... } blocks: is this "
                    "upstream's DataLoaderConfig (or a training config holding one)?");
        return NULL;
    }
    size_t o = 0;
    for (unsigned i = 0; i < root->n_fields; i++) {
        const lc_textproto_field *f = &root->fields[i];
        if (!strcmp(f->name, "data_loader")) {
            if (f != dl)
                up_error_at(c, f->line, f->col, "data_loader given twice (first at line %u)",
                            dl->line);
            continue;
        }
        if (strstr(ignored, f->name) || o >= ignored_len - 1)
            continue;
        o += (size_t)snprintf(ignored + o, ignored_len - o, "%s%s", o ? ", " : "", f->name);
    }
    /* The daemon's schedule steers the loader: checked as upstream would,
     * kept as comments. The trainer's other fields are not looked at. */
    const lc_textproto_field *tr = up_get(root, "training");
    const lc_textproto_field *sched =
        tr && tr->kind == LC_TEXTPROTO_BLOCK ? up_get(tr, "schedule") : NULL;
    if (sched && sched->kind != LC_TEXTPROTO_BLOCK)
        up_error_at(c, sched->value_line, sched->value_col,
                    "training.schedule: expects a block { ... }");
    else if (sched)
        up_check_fields(c, sched, up_schedule_fields, "training.schedule");
    c->schedule = sched && sched->kind == LC_TEXTPROTO_BLOCK ? sched : NULL;
    if (dl->kind != LC_TEXTPROTO_BLOCK) {
        up_error_at(c, dl->value_line, dl->value_col, "data_loader: expects a block { ... }");
        return NULL;
    }
    return dl;
}

/* Its stages (read, checked against upstream's schema, mapped) and
 * outputs. false when it holds no stage. */
static bool read_loader(conversion *c, const lc_textproto_field *dl)
{
    unsigned n_defs = 0;
    for (unsigned i = 0; i < dl->n_fields; i++) {
        const lc_textproto_field *f = &dl->fields[i];
        if (!strcmp(f->name, "stage")) {
            n_defs++;
        } else if (!strcmp(f->name, "output")) {
            if (f->kind != LC_TEXTPROTO_STRING)
                up_error_at(c, f->value_line, f->value_col,
                            "output expects a string (\"alias:stage\" or \"stage\")");
            else if (c->n_outputs < sizeof c->outputs / sizeof c->outputs[0])
                c->outputs[c->n_outputs++] = f;
        } else {
            const char *words[] = {"stage", "output", "data_loader", NULL};
            const char *near = lc_closest_word(f->name, words);
            up_error_at(c, f->line, f->col,
                        "unknown field '%s'%s%s%s: a DataLoaderConfig holds stage "
                        "and output",
                        f->name, near ? " (did you mean '" : "", near ? near : "",
                        near ? "'?)" : "");
        }
    }
    if (!n_defs) {
        if (!lc_problems_count(&c->errs))
            up_error_at(c, dl->line, dl->col, "data_loader holds no stage { ... } blocks");
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
                up_error_at(c, c->st[i].def->line, c->st[i].def->col,
                            "two stages named '%s' (the first at line %u)", c->st[i].up_name,
                            c->st[j].def->line);
    /* Upstream's schema, then each stage's settings. */
    for (unsigned i = 0; i < c->n_st; i++) {
        lcmon_stage *s = &c->st[i];
        if (!s->type || s->block->kind != LC_TEXTPROTO_BLOCK)
            continue;
        char where[160];
        snprintf(where, sizeof where, "stage '%s': %s", s->up_name ? s->up_name : "?",
                 s->type->name);
        size_t before = lc_problems_count(&c->errs);
        up_check_fields(c, s->block, s->type->fields, where);
        if (lc_problems_count(&c->errs) != before || !s->up_name)
            continue;
        if (strcmp(s->type->name, "chunk_source_splitter") != 0)
            up_map_queue(s, up_get(s->block, "output"));
        up_map(c, s);
    }
    return true;
}

/* A fifo_writer for each output, named after its alias (once every
 * stage has its lcmon name). */
static void add_writers(conversion *c)
{
    for (unsigned k = 0; k < c->n_outputs; k++) {
        const lc_textproto_field *o = c->outputs[k];
        lcmon_stage *w = &c->st[c->n_st++];
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
        lcmon_stage *w = &c->st[c->n_stage_defs + k];
        const char *v = c->outputs[k]->value;
        const char *colon = strchr(v, ':');
        char *alias = colon ? lc_xstrndup(v, (size_t)(colon - v)) : lc_xstrdup(v);
        char *dot = colon ? NULL : strchr(alias, '.');
        if (dot)
            *dot = '\0';
        char base[NAME_MAX_LEN + 1];
        up_clean_name(alias, base, NAME_MAX_LEN - 6);
        snprintf(w->name, sizeof w->name, "%s", base);
        for (unsigned j = 0; j < c->n_st; j++)
            if (j != c->n_stage_defs + k && !strcmp(c->st[j].name, w->name)) {
                snprintf(w->name, sizeof w->name, "%s_pipe", base);
                break;
            }
        if (c->n_outputs == 1)
            up_set(w, "path", "'${LCMON_PIPE:-%s.pipe}'", base);
        else
            up_set(w, "path", "%s.pipe", base);
        free(alias);
    }
}

/* Every input (and output) to the stage and output it names. */
static void resolve_inputs(conversion *c)
{
    for (unsigned i = 0; i < c->n_st; i++) {
        lcmon_stage *s = &c->st[i];
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
 * input. */
static int leave_out(conversion *c)
{
    for (unsigned i = 0; i < c->n_st; i++) {
        lcmon_stage *s = &c->st[i];
        for (unsigned k = 0; k < s->n_inputs; k++) {
            lcmon_stage *up = &c->st[s->in_stage[k]];
            for (unsigned hops = 0; up->type && !up->type->lcmon; hops++) {
                if (!up->n_inputs || hops > c->n_st) {
                    up_error_at(
                        c, up->def->line, up->def->col,
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
static int print_config(conversion *c, const char *ignored, FILE *out)
{
    fprintf(out, "# lcmon configuration converted by `lcmon convert-config` from upstream's\n"
                 "# DataLoaderConfig in ");
    up_put_yaml_string(out, c->origin, strlen(c->origin), 120);
    fprintf(out, ".\n"
                 "# Check it with `lcmon --check-config FILE`; the README's \"Stage types\"\n"
                 "# gives each setting. A comment marks every field lcmon has no\n"
                 "# equivalent for, and every upstream default written out because\n"
                 "# lcmon's differs. Queues without queue_capacity take lcmon's default\n"
                 "# (16; upstream's is 4).\n");
    if (ignored[0])
        fprintf(out, "# Not the loader's, so not converted: %s.\n", ignored);
    up_print_schedule(c, out);
    fflush(c->nf);
    if (c->notes && c->notes[0]) {
        fputs("# Upstream's behaviour kept where lcmon has its own choice (each line says\n"
              "# how to turn lcmon's on):\n",
              out);
        for (const char *p = c->notes; *p;) {
            const char *nl = strchr(p, '\n');
            int n = nl ? (int)(nl - p) : (int)strlen(p);
            fprintf(out, "# - %.*s\n", n, p);
            p += n + (nl ? 1 : 0);
        }
    }
    if (!c->n_outputs)
        fprintf(out, "# The config names no output: add a fifo_writer stage to feed a trainer.\n");
    fprintf(out, "stages:\n");
    unsigned placed = 0;
    while (placed < c->n_st) {
        int pick = -1;
        for (unsigned i = 0; i < c->n_st && pick < 0; i++) {
            lcmon_stage *s = &c->st[i];
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
            up_error_at(c, line, col, "the stages %s read one another in a cycle", names);
            return LC_ECONFIG;
        }
        c->st[pick].placed = true;
        placed++;
        print_stage(out, c, &c->st[pick]);
    }
    return 0;
}

static int convert(conversion *c, const lc_textproto_field *root, FILE *out)
{
    char ignored[256];
    const lc_textproto_field *dl = find_loader(c, root, ignored, sizeof ignored);
    if (!dl || !read_loader(c, dl))
        return LC_ECONFIG;
    /* Inputs are resolved even after errors: all problems at once. */
    add_writers(c);
    resolve_inputs(c);
    if (lc_problems_count(&c->errs) || leave_out(c) != 0)
        return LC_ECONFIG;
    up_map_wired(c);
    return print_config(c, ignored, out);
}

/* The errors, "origin:LINE:COL: what" a line (without the place for one
 * about the whole text), in the order of the text as lcmon's own
 * configuration errors are ("" when there are none). */
static char *error_lines(conversion *c)
{
    lc_problems_sort(&c->errs);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        lc_fatal("out of memory");
    for (size_t i = 0; i < c->errs.n; i++) {
        const lc_problem *p = &c->errs.v[i];
        fprintf(f, "%s%s", i ? "\n" : "", c->origin);
        if (p->line)
            fprintf(f, ":%d:%d", p->line, p->col);
        fprintf(f, ": %s", p->text);
    }
    fclose(f);
    return text ? text : lc_xstrdup("");
}

int lc_upstream_convert(const char *text, size_t len, const char *origin, lc_upstream_result *out)
{
    memset(out, 0, sizeof *out);
    conversion c = {.origin = origin};
    lc_problems_init(&c.errs);
    c.errs.max = SIZE_MAX; /* upstream's parser says them all too */
    c.nf = open_memstream(&c.notes, &c.notes_len);
    if (!c.nf)
        lc_fatal("out of memory");
    lc_textproto_field root;
    lc_error perr = {0};
    int rc;
    char *parse_error = NULL; /* the parser's one, placed by it */
    int prc = lc_textproto_parse(text, len, &root, &perr);
    if (prc < 0) {
        out->not_textproto = true;
        parse_error = lc_xasprintf("%s:%s (protobuf text format)", origin, perr.msg);
        rc = LC_ECONFIG;
    } else {
        char *yaml = NULL;
        size_t yaml_len = 0;
        FILE *yf = open_memstream(&yaml, &yaml_len);
        if (!yf)
            lc_fatal("out of memory");
        rc = convert(&c, &root, yf);
        fclose(yf);
        if (rc == 0 && !lc_problems_count(&c.errs)) {
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
    free_conv(&c); /* closes the notes' stream */
    if (rc == 0 && c.notes && c.notes[0])
        out->notes = c.notes;
    else
        free(c.notes);
    if (rc < 0)
        out->errors = parse_error ? parse_error : error_lines(&c);
    lc_problems_fini(&c.errs);
    return rc;
}

void lc_upstream_result_free(lc_upstream_result *r)
{
    free(r->yaml);
    free(r->errors);
    free(r->notes);
    memset(r, 0, sizeof *r);
}
