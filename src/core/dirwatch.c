/*
 * dirwatch: see dirwatch.h.
 */
#include "core/dirwatch.h"

#include "core/dirwalk.h"
#include "core/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct watched {
    int wd;
    char *path;
    dev_t dev;
    ino_t ino;
} watched;

struct lc_dirwatch {
    int fd;
    watched *dirs;
    size_t n_dirs, cap_dirs;
};

lc_dirwatch *lc_dirwatch_new(lc_error *err)
{
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        lc_error_set(err, -e, "inotify_init1: %s (raise fs.inotify.max_user_instances)",
                     strerror(e));
        return NULL;
    }
    lc_dirwatch *w = lc_xcalloc(1, sizeof *w);
    w->fd = fd;
    return w;
}

void lc_dirwatch_free(lc_dirwatch *w)
{
    if (!w)
        return;
    close(w->fd);
    for (size_t i = 0; i < w->n_dirs; i++)
        free(w->dirs[i].path);
    free(w->dirs);
    free(w);
}

int lc_dirwatch_fd(const lc_dirwatch *w)
{
    return w->fd;
}

size_t lc_dirwatch_dirs(const lc_dirwatch *w)
{
    return w->n_dirs;
}

/* Does the path a directory was watched under still lead to it? */
static bool still_there(const watched *d)
{
    struct stat st;
    return d->ino && stat(d->path, &st) == 0 && st.st_dev == d->dev && st.st_ino == d->ino;
}

int lc_dirwatch_add(lc_dirwatch *w, const char *dir)
{
    int wd = inotify_add_watch(w->fd, dir,
                               IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF |
                                   IN_MOVE_SELF | IN_ONLYDIR);
    if (wd < 0)
        return -errno;
    struct stat st = {0};
    if (stat(dir, &st) != 0)
        st.st_ino = 0; /* gone meanwhile: its events say so */
    for (size_t i = 0; i < w->n_dirs; i++) {
        if (w->dirs[i].wd == wd) {           /* the same directory reached again */
            if (!still_there(&w->dirs[i])) { /* moved: known by its new path */
                free(w->dirs[i].path);
                w->dirs[i].path = lc_xstrdup(dir);
            }
            return 0;
        }
    }
    if (w->n_dirs == w->cap_dirs) {
        w->cap_dirs = w->cap_dirs ? 2 * w->cap_dirs : 16;
        w->dirs = lc_xrealloc(w->dirs, w->cap_dirs * sizeof *w->dirs);
    }
    w->dirs[w->n_dirs] =
        (watched){.wd = wd, .path = lc_xstrdup(dir), .dev = st.st_dev, .ino = st.st_ino};
    w->n_dirs++;
    return 0;
}

const char *lc_dirwatch_known(const lc_dirwatch *w, const struct stat *st)
{
    for (size_t i = 0; i < w->n_dirs; i++)
        if (w->dirs[i].ino == st->st_ino && w->dirs[i].dev == st->st_dev &&
            still_there(&w->dirs[i]))
            return w->dirs[i].path;
    return NULL;
}

typedef struct tree_ctx {
    lc_dirwatch *w;
    void (*found)(void *ctx, char *path);
    void *ctx;
    size_t n;
} tree_ctx;

static void tree_dir(void *p, const char *path)
{
    tree_ctx *t = p;
    int rc = lc_dirwatch_add(t->w, path);
    if (rc < 0)
        LC_WARN("cannot watch %s: %s (files written there will not be seen)", path, strerror(-rc));
}

static const char *tree_known(void *p, const struct stat *st)
{
    return lc_dirwatch_known(((tree_ctx *)p)->w, st);
}

static void tree_file(void *p, char *path, const char *name)
{
    (void)name;
    tree_ctx *t = p;
    if (t->found) {
        t->found(t->ctx, path);
        t->n++;
    } else {
        free(path);
    }
}

size_t lc_dirwatch_add_tree(lc_dirwatch *w, const char *dir, void (*found)(void *ctx, char *path),
                            void *ctx)
{
    tree_ctx t = {.w = w, .found = found, .ctx = ctx};
    lc_walk_ops ops = {.dir = tree_dir, .file = tree_file, .known = tree_known};
    lc_walk_tree(dir, &ops, &t);
    return t.n;
}

static const char *dir_of(const lc_dirwatch *w, int wd)
{
    for (size_t i = 0; i < w->n_dirs; i++)
        if (w->dirs[i].wd == wd)
            return w->dirs[i].path;
    return NULL;
}

static void forget(lc_dirwatch *w, int wd)
{
    for (size_t i = 0; i < w->n_dirs; i++) {
        if (w->dirs[i].wd == wd) {
            free(w->dirs[i].path);
            w->dirs[i] = w->dirs[--w->n_dirs];
            return;
        }
    }
}

/* One event; false when a callback said stop. */
static bool dispatch(lc_dirwatch *w, const struct inotify_event *ev, const lc_dirwatch_ops *ops,
                     void *ctx)
{
    if (ev->mask & IN_Q_OVERFLOW) {
        if (ops->overflow)
            ops->overflow(ctx);
        return true;
    }
    if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
        const char *gone = dir_of(w, ev->wd);
        if ((ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) && gone && ops->gone)
            ops->gone(ctx, gone);
        if (ev->mask & IN_IGNORED)
            forget(w, ev->wd);
        return true;
    }
    const char *dir = dir_of(w, ev->wd);
    if (!dir || ev->len == 0 || ev->name[0] == '.')
        return true;
    char *path = lc_xasprintf("%s/%s", dir, ev->name);
    if (ev->mask & IN_ISDIR) {
        if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && ops->dir)
            return ops->dir(ctx, path);
        free(path);
        return true;
    }
    if (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO))
        return ops->file(ctx, path);
    free(path); /* a file created: wait for its close */
    return true;
}

long lc_dirwatch_read(lc_dirwatch *w, const lc_dirwatch_ops *ops, void *ctx)
{
    _Alignas(struct inotify_event) char buf[64 * 1024];
    long n = 0;
    ssize_t len;
    while ((len = read(w->fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + len;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            p += sizeof *ev + ev->len;
            n++;
            if (!dispatch(w, ev, ops, ctx))
                return -1;
        }
    }
    return n;
}
