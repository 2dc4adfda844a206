/*
 * bench_corpus: the games lcmon_bench measures with: every chunk of every
 * .gz and .tar under a folder, walked as the loader walks it, and how much
 * the files hold on disk (for the compression ratio the results state).
 */
#ifndef LC_BENCH_CORPUS_H
#define LC_BENCH_CORPUS_H

#include "format/lc0/chunk_source.h"

#include <stddef.h>
#include <stdint.h>

typedef struct bench_chunk {
    lc_chunk_source *src; /* one reference */
    size_t member;
} bench_chunk;

typedef struct bench_corpus {
    bench_chunk *chunks;
    size_t n, cap;
    uint64_t file_bytes; /* the sizes of the files the chunks come from */
} bench_corpus;

/* Add every chunk under dir (a file or a folder) to c (zeroed at first). */
void bench_corpus_walk(bench_corpus *c, const char *dir);
void bench_corpus_fini(bench_corpus *c);

#endif
