/*
 * dirwalk: see dirwalk.h.
 */
#include "core/dirwalk.h"

#include "core/error.h"
#include "core/log.h"
#include "core/text.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The directories a walk has listed, by device and inode. */
typedef struct visited {
    struct {
        dev_t dev;
        ino_t ino;
        char *path;
    } * v;
    size_t n, cap;
} visited;

/* Where (dev, ino) was listed, or NULL (then it is recorded as path). */
static const char *visit(visited *seen, const struct stat *st, const char *path)
{
    for (size_t i = 0; i < seen->n; i++)
        if (seen->v[i].dev == st->st_dev && seen->v[i].ino == st->st_ino)
            return seen->v[i].path;
    if (seen->n == seen->cap) {
        seen->cap = seen->cap ? 2 * seen->cap : 16;
        seen->v = lc_xrealloc(seen->v, seen->cap * sizeof *seen->v);
    }
    seen->v[seen->n].dev = st->st_dev;
    seen->v[seen->n].ino = st->st_ino;
    seen->v[seen->n].path = lc_xstrdup(path);
    seen->n++;
    return NULL;
}

static void walk(const char *dir, const lc_walk_ops *ops, void *ctx, visited *seen)
{
    if (ops->dir)
        ops->dir(ctx, dir);
    DIR *d = opendir(dir);
    if (!d) {
        if (ops->error)
            ops->error(ctx, dir, errno, true);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && !(ops->stop && ops->stop(ctx))) {
        if (e->d_name[0] == '.')
            continue;
        char *path = lc_xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if ((ops->nofollow ? lstat(path, &st) : stat(path, &st)) != 0) {
            /* Vanished between readdir and stat: nothing to say. */
            if (errno != ENOENT && ops->error)
                ops->error(ctx, path, errno, false);
            free(path);
        } else if (S_ISDIR(st.st_mode)) {
            const char *first = ops->known ? ops->known(ctx, &st) : NULL;
            if (!first)
                first = visit(seen, &st, path);
            if (!first)
                walk(path, ops, ctx, seen);
            else if (ops->again)
                ops->again(ctx, path, first);
            free(path);
        } else if (S_ISREG(st.st_mode)) {
            ops->file(ctx, path, strrchr(path, '/') + 1);
        } else {
            if (ops->other)
                ops->other(ctx, path, st.st_mode);
            free(path);
        }
    }
    closedir(d);
}

void lc_walk_tree(const char *dir, const lc_walk_ops *ops, void *ctx)
{
    visited seen = {0};
    struct stat st;
    const char *first = NULL;
    if (stat(dir, &st) == 0) {
        first = ops->known ? ops->known(ctx, &st) : NULL;
        if (!first)
            visit(&seen, &st, dir);
    }
    if (!first)
        walk(dir, ops, ctx, &seen);
    else if (ops->again)
        ops->again(ctx, dir, first);
    for (size_t i = 0; i < seen.n; i++)
        free(seen.v[i].path);
    free(seen.v);
}

typedef struct file_list {
    const char *suffix;
    void (*other)(void *ctx, const char *path, mode_t mode);
    void *ctx;
    char **v;
    size_t n, cap;
} file_list;

static void list_add(file_list *l, char *path)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = lc_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = path;
}

static void list_file(void *ctx, char *path, const char *name)
{
    file_list *l = ctx;
    if (lc_has_suffix(name, l->suffix))
        list_add(l, path);
    else
        free(path);
}

static void list_other(void *ctx, const char *path, mode_t mode)
{
    file_list *l = ctx;
    if (l->other && lc_has_suffix(path, l->suffix))
        l->other(l->ctx, path, mode);
}

static void list_error(void *ctx, const char *path, int err, bool listing)
{
    (void)ctx;
    if (listing)
        LC_WARN("cannot list %s: %s", path, strerror(err));
}

/* By base name, the full path breaking ties. */
static int compare_paths(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    int c = strcmp(lc_basename(x), lc_basename(y));
    return c ? c : strcmp(x, y);
}

char **lc_list_files(const char *path, const char *suffix, size_t *n,
                     void (*other)(void *ctx, const char *path, mode_t mode), void *ctx)
{
    file_list l = {.suffix = suffix, .other = other, .ctx = ctx};
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        list_add(&l, lc_xstrdup(path));
    } else if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
        if (other)
            other(ctx, path, st.st_mode);
    } else {
        static const lc_walk_ops ops = {
            .file = list_file, .error = list_error, .other = list_other};
        lc_walk_tree(path, &ops, &l);
    }
    if (l.n > 1)
        qsort(l.v, l.n, sizeof *l.v, compare_paths);
    *n = l.n;
    return l.v;
}
