/*
 * chunks_verbs: the verbs of `lcmon chunks`, each in its file, which
 * chunks_tool.c calls after reading its options.
 */
#ifndef LC_APP_CHUNKS_CHUNKS_VERBS_H
#define LC_APP_CHUNKS_CHUNKS_VERBS_H

#include "app/chunks/chunks_common.h"

typedef struct dump_options {
    const char *path;
    bool json, policy;
    const char *member; /* a tar member by number (0-based) or name; NULL: all */
    long first, last;   /* positions first..last (0-based, inclusive); last -1: to the end */
} dump_options;

int chunks_dump(const dump_options *o);
int chunks_stats(const char *dir, bool json);
int chunks_check(const char *dir, bool json);

/* rescore (chunks_rescore.c): one game, as chunk_rescorer would. */
typedef struct rescore_options {
    const char *path, *member, *out;
    bool list; /* a line a changed position */
    chunks_settings set;
} rescore_options;
int chunks_rescore(const rescore_options *o);

/* weights (chunks_weights.c): the sampling weights a config gives DIR. */
typedef struct weights_options {
    const char *dir;
    chunks_settings set;
} weights_options;
int chunks_weights(const weights_options *o);

#endif
