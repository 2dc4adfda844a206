/*
 * dirwatch: see dirwatch.h.
 */
#include "core/dirwatch.h"

#include "core/dirwalk.h"
#include "core/log.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

typedef struct watched {
    int wd;
    char *path;
} watched;

struct lc_dirwatch {
    int fd;
    watched *dirs;
    size_t n_dirs, cap_dirs;
};

static void add_watch(lc_dirwatch *w, const char *dir)
{
    int wd = inotify_add_watch(w->fd, dir,
                               IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_ONLYDIR);
    if (wd < 0) {
        LC_WARN("cannot watch %s: %s (files written there will be seen at the next listing)",
                dir, strerror(errno));
        return;
    }
    for (size_t i = 0; i < w->n_dirs; i++) {
        if (w->dirs[i].wd == wd) { /* reached again (a link, a rename) */
            free(w->dirs[i].path);
            w->dirs[i].path = lc_xstrdup(dir);
            return;
        }
    }
    if (w->n_dirs == w->cap_dirs) {
        w->cap_dirs = w->cap_dirs ? 2 * w->cap_dirs : 16;
        w->dirs = lc_xrealloc(w->dirs, w->cap_dirs * sizeof *w->dirs);
    }
    w->dirs[w->n_dirs].wd = wd;
    w->dirs[w->n_dirs].path = lc_xstrdup(dir);
    w->n_dirs++;
}

/* A walk of a new tree: watch its directories, report its files. */
typedef struct walk_ctx {
    lc_dirwatch *w;
    void (*found)(void *ctx, char *path);
    void *ctx;
    int n;
} walk_ctx;

static void walk_dir(void *p, const char *path)
{
    add_watch(((walk_ctx *)p)->w, path);
}

static void walk_file(void *p, char *path, const char *name)
{
    (void)name;
    walk_ctx *c = p;
    if (c->found) {
        c->found(c->ctx, path);
        c->n++;
    } else {
        free(path);
    }
}

lc_dirwatch *lc_dirwatch_new(const char *dir, lc_error *err)
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
    walk_ctx c = {.w = w};
    lc_walk_ops ops = {.dir = walk_dir, .file = walk_file};
    lc_walk_tree(dir, &ops, &c);
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

size_t lc_dirwatch_dirs(const lc_dirwatch *w)
{
    return w->n_dirs;
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

int lc_dirwatch_wait(lc_dirwatch *w, int timeout_ms, void (*found)(void *ctx, char *path),
                     void *ctx, bool *overflowed)
{
    *overflowed = false;
    struct pollfd pfd = {.fd = w->fd, .events = POLLIN};
    int n = poll(&pfd, 1, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -1;
    if (n == 0)
        return 0;
    _Alignas(struct inotify_event) char buf[16 * 1024];
    walk_ctx c = {.w = w, .found = found, .ctx = ctx};
    ssize_t len;
    while ((len = read(w->fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + len;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            p += sizeof *ev + ev->len;
            if (ev->mask & IN_Q_OVERFLOW) {
                *overflowed = true;
                continue;
            }
            if (ev->mask & IN_IGNORED) {
                forget(w, ev->wd);
                continue;
            }
            const char *dir = dir_of(w, ev->wd);
            if (!dir || ev->len == 0 || ev->name[0] == '.')
                continue;
            char *path = lc_xasprintf("%s/%s", dir, ev->name);
            if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
                lc_walk_ops ops = {.dir = walk_dir, .file = walk_file};
                lc_walk_tree(path, &ops, &c); /* its files, and watch it */
                free(path);
            } else if (!(ev->mask & IN_ISDIR) && (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO))) {
                found(ctx, path);
                c.n++;
            } else {
                free(path); /* a file created: wait for its close */
            }
        }
    }
    return c.n;
}
