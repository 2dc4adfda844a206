/*
 * yaml_tree: a YAML text parsed once with libyaml into a tree that keeps
 * the line and column of every node, for the configuration reader
 * (config_read.c) and its messages.
 *
 * One document is read. Aliases are refused (a configuration
 * writes its values out; an alias would let a short text expand without
 * bound), as is nesting deeper than LC_YAML_MAX_DEPTH.
 *
 * Internal to the pipeline layer. One thread.
 */
#ifndef LC_PIPELINE_YAML_TREE_H
#define LC_PIPELINE_YAML_TREE_H

#include <stdbool.h>
#include <stddef.h>

#define LC_YAML_MAX_DEPTH 64

typedef enum lc_ynode_kind { LC_YNODE_SCALAR, LC_YNODE_MAP, LC_YNODE_SEQ } lc_ynode_kind;

typedef struct lc_ynode lc_ynode;
struct lc_ynode {
    lc_ynode_kind kind;
    int line, col; /* 1-based, where the node starts */
    char *text;    /* a scalar's value ("" for an empty one) */
    bool plain;    /* a scalar written without quotes */
    /* A mapping's keys and values alternate (key 0, value 0, key 1, ...);
     * a sequence's items in order. */
    lc_ynode **kids;
    size_t n;
};

/* Parse text (len bytes). 0 with *root (NULL for a text without a
 * document: empty, or only comments); else -1 with "LINE:COL: what" in
 * msg (size bytes; "LINE:COL: " left out where libyaml gives no place) and
 * *root NULL. */
int lc_yaml_tree_parse(const char *text, size_t len, lc_ynode **root, char *msg, size_t size);
void lc_yaml_tree_free(lc_ynode *node);

/* A plain empty scalar, "~" or "null": YAML's null. */
bool lc_ynode_is_null(const lc_ynode *node);

#endif
