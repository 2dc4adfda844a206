/*
 * tsv: the expected values of a Parquet fixture (tests/parquet/fixtures/
 * x.tsv.gz): a header of column names, then one tab-separated line per row,
 * "\\N" for null. Header-only, for the tests.
 */
#ifndef LC_TEST_TSV_H
#define LC_TEST_TSV_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct tsv {
    char *text;
    size_t n_cols, n_rows;
    char **names; /* n_cols */
    char **cells; /* n_rows * n_cols; "\\N" is null */
} tsv;

static inline char *gunzip_file(const char *path)
{
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    int got;
    while ((got = gzread(gz, buf + n, (unsigned)(cap - n - 1))) > 0) {
        n += (size_t)got;
        if (cap - n < 2)
            buf = realloc(buf, cap *= 2);
    }
    gzclose(gz);
    buf[n] = '\0';
    return buf;
}

static inline size_t split(char *s, char sep, char **out, size_t max)
{
    size_t n = 0;
    for (;;) {
        if (n < max)
            out[n] = s;
        n++;
        char *e = strchr(s, sep);
        if (!e)
            return n;
        *e = '\0';
        s = e + 1;
    }
}

static inline bool tsv_load(const char *path, tsv *t)
{
    memset(t, 0, sizeof *t);
    t->text = gunzip_file(path);
    if (!t->text)
        return false;
    size_t n_lines = 1;
    for (char *p = t->text; *p; p++)
        n_lines += *p == '\n';
    char **lines = calloc(n_lines, sizeof *lines);
    n_lines = split(t->text, '\n', lines, n_lines);
    if (n_lines > 0 && lines[n_lines - 1][0] == '\0')
        n_lines--;
    t->n_cols = 1;
    for (const char *p = lines[0]; *p; p++)
        t->n_cols += *p == '\t';
    t->names = calloc(t->n_cols, sizeof *t->names);
    split(lines[0], '\t', t->names, t->n_cols);
    t->n_rows = n_lines - 1;
    t->cells = calloc(t->n_rows * t->n_cols + 1, sizeof *t->cells);
    bool ok = true;
    for (size_t r = 0; r < t->n_rows; r++)
        if (split(lines[r + 1], '\t', t->cells + r * t->n_cols, t->n_cols) != t->n_cols)
            ok = false;
    free(lines);
    return ok;
}

static inline void tsv_free(tsv *t)
{
    free(t->text);
    free(t->names);
    free(t->cells);
}

/* The column called name, or -1. */
static inline int tsv_col(const tsv *t, const char *name)
{
    for (size_t i = 0; i < t->n_cols; i++)
        if (strcmp(t->names[i], name) == 0)
            return (int)i;
    return -1;
}

static inline const char *tsv_cell(const tsv *t, size_t row, int col)
{
    return t->cells[row * t->n_cols + (size_t)col];
}

#endif
