/*
 * yaml_tree: see yaml_tree.h. A recursive descent over libyaml's events,
 * one node per scalar, mapping and sequence.
 */
#include "pipeline/yaml_tree.h"

#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef struct builder {
    yaml_parser_t parser;
    char *msg;
    size_t size;
    bool failed;
    const char *text; /* the input, to name a tab that indents a line */
    size_t len;
} builder;

static void fail_at(builder *b, const yaml_mark_t *m, const char *what)
{
    if (b->failed)
        return;
    b->failed = true;
    snprintf(b->msg, b->size, "%zu:%zu: %s", m->line + 1, m->column + 1, what);
}

/* The first tab in the indentation of a line up to line `last` (0-based),
 * as a mark; false when there is none. libyaml's words for it ("found
 * character that cannot start any token") do not say tab. */
static bool indenting_tab(const builder *b, size_t last, yaml_mark_t *at)
{
    size_t line = 0;
    for (size_t i = 0; i < b->len && line <= last; line++) {
        size_t col = 0;
        while (i + col < b->len && (b->text[i + col] == ' ' || b->text[i + col] == '\t')) {
            if (b->text[i + col] == '\t') {
                at->line = line;
                at->column = col;
                return true;
            }
            col++;
        }
        const char *nl = memchr(b->text + i, '\n', b->len - i);
        i = nl ? (size_t)(nl - b->text) + 1 : b->len;
    }
    return false;
}

static bool next_event(builder *b, yaml_event_t *ev)
{
    if (b->failed)
        return false;
    if (yaml_parser_parse(&b->parser, ev))
        return true;
    const yaml_parser_t *p = &b->parser;
    yaml_mark_t tab;
    if (indenting_tab(b, p->problem_mark.line, &tab)) {
        fail_at(b, &tab,
                "a tab indents this line, and tabs cannot indent YAML: indent it with spaces");
        return false;
    }
    char what[256];
    snprintf(what, sizeof what, "libyaml: %s%s%s", p->problem ? p->problem : "syntax error",
             p->context ? " " : "", p->context ? p->context : "");
    fail_at(b, &p->problem_mark, what);
    return false;
}

static lc_ynode *new_node(lc_ynode_kind kind, const yaml_event_t *ev)
{
    lc_ynode *n = lc_xcalloc(1, sizeof *n);
    n->kind = kind;
    n->line = (int)ev->start_mark.line + 1;
    n->col = (int)ev->start_mark.column + 1;
    return n;
}

static void add_kid(lc_ynode *parent, lc_ynode *kid, size_t *cap)
{
    if (parent->n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        parent->kids = lc_xrealloc(parent->kids, *cap * sizeof *parent->kids);
    }
    parent->kids[parent->n++] = kid;
}

/* The node that starts with ev (deleted by the caller); NULL on failure. */
static lc_ynode *build(builder *b, const yaml_event_t *ev, int depth)
{
    if (depth > LC_YAML_MAX_DEPTH) {
        fail_at(b, &ev->start_mark, "nested too deep");
        return NULL;
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        lc_ynode *n = new_node(LC_YNODE_SCALAR, ev);
        n->text = lc_xstrdup((const char *)ev->data.scalar.value);
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        return n;
    }
    case YAML_ALIAS_EVENT:
        fail_at(b, &ev->start_mark, "an alias (*name): aliases are not read (write the value out)");
        return NULL;
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
        break;
    default:
        fail_at(b, &ev->start_mark, "libyaml: unexpected event");
        return NULL;
    }
    bool map = ev->type == YAML_MAPPING_START_EVENT;
    lc_ynode *n = new_node(map ? LC_YNODE_MAP : LC_YNODE_SEQ, ev);
    size_t cap = 0;
    for (;;) {
        yaml_event_t kid;
        if (!next_event(b, &kid))
            break;
        if (kid.type == YAML_MAPPING_END_EVENT || kid.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&kid);
            break;
        }
        lc_ynode *k = build(b, &kid, depth + 1);
        yaml_event_delete(&kid);
        if (!k)
            break;
        add_kid(n, k, &cap);
    }
    if (b->failed) {
        lc_yaml_tree_free(n);
        return NULL;
    }
    return n;
}

/* The first document's root: NULL when there is none (or on failure). */
static lc_ynode *first_document(builder *b)
{
    lc_ynode *root = NULL;
    for (;;) {
        yaml_event_t ev;
        if (!next_event(b, &ev))
            break;
        yaml_event_type_t t = ev.type;
        if (t == YAML_SCALAR_EVENT || t == YAML_MAPPING_START_EVENT ||
            t == YAML_SEQUENCE_START_EVENT || t == YAML_ALIAS_EVENT) {
            if (root) {
                fail_at(b, &ev.start_mark,
                        "a second document: one configuration is one YAML document (remove "
                        "the '---' and what follows it)");
            } else {
                root = build(b, &ev, 1);
            }
        }
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT || b->failed)
            break;
    }
    if (b->failed) {
        lc_yaml_tree_free(root);
        return NULL;
    }
    return root;
}

int lc_yaml_tree_parse(const char *text, size_t len, lc_ynode **root, char *msg, size_t size)
{
    *root = NULL;
    builder b = {.msg = msg, .size = size, .text = text, .len = len};
    if (size)
        msg[0] = '\0';
    if (!yaml_parser_initialize(&b.parser)) {
        snprintf(msg, size, "libyaml: cannot start the parser");
        return -1;
    }
    yaml_parser_set_input_string(&b.parser, (const unsigned char *)text, len);
    *root = first_document(&b);
    yaml_parser_delete(&b.parser);
    return b.failed ? -1 : 0;
}

void lc_yaml_tree_free(lc_ynode *node)
{
    if (!node)
        return;
    for (size_t i = 0; i < node->n; i++)
        lc_yaml_tree_free(node->kids[i]);
    free(node->kids);
    free(node->text);
    free(node);
}

bool lc_ynode_is_null(const lc_ynode *node)
{
    return node->kind == LC_YNODE_SCALAR && node->plain &&
           (!node->text[0] || strcmp(node->text, "~") == 0 || strcmp(node->text, "null") == 0);
}
