/*
 * bench_corpus: see bench_corpus.h.
 */
#include "bench_corpus.h"

#include "core/dirwalk.h"
#include "core/error.h"
#include "core/text.h"

#include <stdlib.h>
#include <sys/stat.h>

static void add_file(bench_corpus *c, const char *path)
{
    if (!lc_has_suffix(path, ".gz") && !lc_has_suffix(path, ".tar"))
        return;
    lc_chunk_source *src;
    if (lc_chunk_source_open(path, &src, NULL) != 0)
        return;
    struct stat st;
    if (stat(path, &st) == 0)
        c->file_bytes += (uint64_t)st.st_size;
    for (size_t m = 0; m < lc_chunk_source_count(src); m++) {
        if (c->n == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 1024;
            c->chunks = lc_xrealloc(c->chunks, c->cap * sizeof *c->chunks);
        }
        c->chunks[c->n].src = lc_chunk_source_ref(src);
        c->chunks[c->n].member = m;
        c->n++;
    }
    lc_chunk_source_unref(src);
}

static void walk_file(void *ctx, char *path, const char *name)
{
    (void)name;
    add_file(ctx, path);
    free(path);
}

void bench_corpus_walk(bench_corpus *c, const char *dir)
{
    lc_walk_tree(dir, &(lc_walk_ops){.file = walk_file}, c);
}

void bench_corpus_fini(bench_corpus *c)
{
    for (size_t i = 0; i < c->n; i++)
        lc_chunk_source_unref(c->chunks[i].src);
    free(c->chunks);
    *c = (bench_corpus){0};
}
