/*
 * file_path_provider: discovers training files and emits their paths.
 *
 * One thread. At start it walks the directory tree, adding an inotify watch
 * to every directory before listing it (so nothing written meanwhile is
 * missed), sorts what it found by sort key (basename, compared as bytes; the
 * full path breaks ties) and emits the paths, then a LC_ITEM_SCAN_DONE marker
 * carrying the number of files emitted. With `watch` on it then waits for
 * inotify events: a file closed after writing (IN_CLOSE_WRITE) or moved in
 * (IN_MOVED_TO) is emitted; a new subdirectory is watched and scanned.
 * Names starting with '.' (files and directories) are ignored.
 *
 * Half-written files. inotify tells us when a writer closes a file, but a
 * scan cannot know whether a file it finds is still open for writing. A file
 * found by a scan whose last change is younger than `settle_seconds` is
 * therefore held as pending: it is emitted when its IN_CLOSE_WRITE arrives,
 * or once it has stayed unchanged for settle_seconds. Without watching,
 * every scanned file is emitted (nothing could tell us more). Files the
 * initial scan holds are waited for (up to twice settle_seconds, at least
 * settle_seconds + 1) before the scan-done marker, so that files written
 * just before a restart are part of the initial set, sorted with the rest;
 * one still written after that comes later, as a new file.
 *
 * Stopping: the poll() also waits on an eventfd that `stop` signals.
 *
 * Files. This file holds the stage: its settings, the files held until
 * they settle, the watch loop, the worker, the life cycle and metrics; the
 * scan of a tree is path_provider_scan.c, sharing the state through
 * stages/path_provider.h.
 */
#include "stages/path_provider.h"

#include "core/clock.h"
#include "core/dirwatch.h"
#include "core/file.h"
#include "core/log.h"
#include "stages/items.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

static const lc_setting provider_settings[] = {
    {.key = "directory",
     .type = LC_SETTING_TEXT,
     LC_SETTING_AT(provider_config, directory),
     .required = true,
     .nonempty = true,
     .meaning = "the tree of training files",
     .example = "${LCMON_DATA:-tests/data}"},
    LC_SETTING_ROW(provider_config, watch, "watch", LC_SETTING_BOOL, "true",
                   "after the scan, watch for new files (false: the run ends)", "false"),
    LC_SETTING_ROW_RANGE(provider_config, settle_seconds, "settle_seconds", LC_SETTING_REAL, "2.0",
                         0, 3600, "how long a file must be quiet before it is read", "5"),
    LC_SETTING_ROW(provider_config, follow_symlinks, "follow_symlinks", LC_SETTING_BOOL, "true",
                   "follow symbolic links (false: skip and count them)", "false"),
    {0},
};

static int provider_config_check(void *p, lc_problems *ps)
{
    provider_config *c = p;
    if (!c->directory) /* missing: the reader said so */
        return 0;
    return lc_config_expand_path_noting(&c->directory, "directory", "the data directory",
                                        c->defaulted, sizeof c->defaulted, ps);
}

/* Problems that last, shown on the screen while they do and logged again
 * every WARN_AGAIN_S. */
enum {
    WARN_NONE,
    WARN_NO_DIRECTORY,
    WARN_NO_FILES,
    WARN_DIR_GONE,
    WARN_DIR_NOT_DIR,
    WARN_DIR_REPLACED
};
#define WARN_AGAIN_S 60.0

/* Emit a path; takes ownership. Returns false when the output is closed. */
/* Where path's key begins: after the data folder and its slashes (the path
 * relative to it); 0 for a path not under it. */
static uint32_t key_at(const char *dir, const char *path)
{
    size_t n = strlen(dir);
    if (n == 0 || strncmp(path, dir, n) != 0 || (dir[n - 1] != '/' && path[n] != '/'))
        return 0;
    while (path[n] == '/')
        n++;
    return path[n] && n < UINT32_MAX ? (uint32_t)n : 0;
}

static bool emit_path(provider *f, lc_stage *s, char *path, uint32_t flags, lc_load_meter *meter)
{
    const provider_config *c = s->config;
    lc_path_item item = {
        .path = path, .key_at = key_at(c->directory, path), .flags = flags, .seq = f->seq};
    if (lc_stage_emit(s, &item, meter) != 0) {
        free(path);
        return false;
    }
    f->seq++;
    atomic_fetch_add(&f->n_found, 1);
    if (flags & LC_ITEM_INITIAL)
        atomic_fetch_add(&f->n_initial, 1);
    return true;
}

static ssize_t find_pending(provider *f, const char *path)
{
    for (size_t i = 0; i < f->n_pending; i++)
        if (strcmp(f->pending[i].path, path) == 0)
            return (ssize_t)i;
    return -1;
}

static void drop_pending(provider *f, size_t i)
{
    free(f->pending[i].path);
    f->pending[i] = f->pending[--f->n_pending];
    atomic_store(&f->g_pending, (int_fast64_t)f->n_pending);
}

static void add_pending(provider *f, char *path, const struct stat *st)
{
    if (find_pending(f, path) >= 0) {
        free(path);
        return;
    }
    if (f->n_pending == f->cap_pending) {
        f->cap_pending = f->cap_pending ? 2 * f->cap_pending : 16;
        f->pending = lc_xrealloc(f->pending, f->cap_pending * sizeof *f->pending);
    }
    pending_file *p = &f->pending[f->n_pending++];
    p->path = path;
    p->size = st->st_size;
    p->mtime = st->st_mtim;
    p->quiet_since = lc_now_seconds();
    atomic_store(&f->g_pending, (int_fast64_t)f->n_pending);
}

/* While the folder now at the data folder's path is scanned: is the file at
 * path (st) one the folder before held at the same place, the same file (a
 * hard link) or a copy of the same size and time (cp -a, rsync -a)? Its
 * games were read from there: they are not read again. */
static bool same_as_before(const provider *f, const provider_config *c, const char *path,
                           const struct stat *st)
{
    size_t n = strlen(c->directory);
    if (f->prev_root_fd < 0 || strncmp(path, c->directory, n) != 0)
        return false;
    const char *rel = path + n;
    while (*rel == '/')
        rel++;
    struct stat old;
    if (!*rel || fstatat(f->prev_root_fd, rel, &old, 0) != 0 || !S_ISREG(old.st_mode))
        return false;
    return (old.st_dev == st->st_dev && old.st_ino == st->st_ino) ||
           (old.st_size == st->st_size && old.st_mtim.tv_sec == st->st_mtim.tv_sec &&
            old.st_mtim.tv_nsec == st->st_mtim.tv_nsec);
}

/* A file the scan found (stages/path_provider.h): emitted, or held until it
 * settles; not at all when the folder before held it (same_as_before). */
bool lc_path_provider_offer(provider *f, lc_stage *s, char *path, uint32_t flags,
                            lc_load_meter *meter)
{
    const provider_config *c = s->config;
    struct stat st;
    if (stat(path, &st) != 0) {
        free(path);
        return true;
    }
    if (same_as_before(f, c, path, &st)) {
        f->n_same_as_before++;
        free(path);
        return true;
    }
    double age =
        lc_wall_seconds() - ((double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec * 1e-9);
    if (f->watch && age < c->settle_seconds) {
        add_pending(f, path, &st);
        return true;
    }
    return emit_path(f, s, path, flags, meter);
}

/* Emit pending files that stayed unchanged for settle_seconds. */
static bool check_pending(provider *f, lc_stage *s, lc_load_meter *meter)
{
    const provider_config *c = s->config;
    double now = lc_now_seconds();
    for (size_t i = 0; i < f->n_pending;) {
        pending_file *p = &f->pending[i];
        struct stat st;
        if (stat(p->path, &st) != 0) {
            drop_pending(f, i);
            continue;
        }
        if (st.st_size != p->size || st.st_mtim.tv_sec != p->mtime.tv_sec ||
            st.st_mtim.tv_nsec != p->mtime.tv_nsec) {
            p->size = st.st_size;
            p->mtime = st.st_mtim;
            p->quiet_since = now;
        } else if (now - p->quiet_since >= c->settle_seconds) {
            char *path = p->path;
            p->path = NULL;
            f->pending[i] = f->pending[--f->n_pending];
            atomic_store(&f->g_pending, (int_fast64_t)f->n_pending);
            if (!emit_path(f, s, path, f->emit_flags, meter))
                return false;
            continue;
        }
        i++;
    }
    return true;
}

/* The data directory itself went (its watch said so): say what is at its
 * path now, and again whenever that changes (a file put there after the
 * directory was moved away). The chunks already loaded go on; no new file
 * is found until a directory is there again (watch_again). */
static void note_directory_gone(provider *f, lc_stage *s)
{
    const provider_config *c = s->config;
    struct stat st;
    int warn = stat(c->directory, &st) != 0 ? WARN_DIR_GONE
               : !S_ISDIR(st.st_mode)       ? WARN_DIR_NOT_DIR
                                            : WARN_DIR_REPLACED;
    if (atomic_exchange(&f->warn, warn) == warn || warn == WARN_DIR_REPLACED)
        return; /* a directory again: the watch loop takes it up and says so */
    LC_WARN("%s: data directory %s %s; no new files are found until a directory is there again "
            "(the chunks loaded go on)",
            s->name, c->directory,
            warn == WARN_DIR_GONE ? "was deleted or moved away"
                                  : "is not a directory any more (replaced by a file?)");
}

static bool directory_gone(const provider *f)
{
    int w = atomic_load(&f->warn);
    return w == WARN_DIR_GONE || w == WARN_DIR_NOT_DIR || w == WARN_DIR_REPLACED;
}

/* The watch's events (core/dirwatch.h), for the stage's worker. */
typedef struct watch_ctx {
    provider *f;
    lc_stage *s;
    lc_load_meter *meter;
} watch_ctx;

static bool on_file(void *p, char *path)
{
    watch_ctx *w = p;
    const provider_config *c = w->s->config;
    ssize_t i = find_pending(w->f, path);
    if (i >= 0)
        drop_pending(w->f, (size_t)i);
    /* A FIFO's writer closing it, a link made: not a game file. */
    struct stat st;
    if ((c->follow_symlinks ? stat(path, &st) : lstat(path, &st)) == 0 && !S_ISREG(st.st_mode)) {
        if (!S_ISDIR(st.st_mode))
            lc_path_provider_skip_other(w->f, path, st.st_mode);
        free(path);
        return true;
    }
    return emit_path(w->f, w->s, path, w->f->emit_flags, w->meter);
}

static bool on_dir(void *p, char *path)
{
    watch_ctx *w = p;
    LC_INFO("watching new directory %s", path);
    bool ok = lc_path_provider_scan(w->f, w->s, path, w->f->emit_flags, w->meter);
    free(path);
    return ok;
}

static void on_gone(void *p, const char *dir)
{
    watch_ctx *w = p;
    const provider_config *c = w->s->config;
    if (strcmp(dir, c->directory) == 0) {
        atomic_fetch_add(&w->f->n_scan_errors, 1);
        note_directory_gone(w->f, w->s);
    }
}

static void on_overflow(void *p)
{
    watch_ctx *w = p;
    atomic_fetch_add(&w->f->n_overflows, 1);
    LC_WARN("inotify queue overflowed: files written meanwhile may be missed "
            "(raise fs.inotify.max_queued_events)");
}

/* The data folder about to be scanned and watched: a handle on it, its
 * device and inode. */
static void note_root(provider *f, const provider_config *c)
{
    if (f->root_fd >= 0)
        close(f->root_fd);
    f->root_fd = open(c->directory, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (f->root_fd >= 0 && fstat(f->root_fd, &st) == 0) {
        f->root_dev = st.st_dev;
        f->root_ino = st.st_ino;
    }
    f->root_checked = lc_now_seconds();
}

/* Watch the folder at the data folder's path afresh (the old watches
 * followed the old folder wherever it went) and offer its files, but for
 * those the folder before held (same_as_before). False on a stop or a
 * closed output. */
static bool rewatch(provider *f, lc_stage *s, lc_load_meter *meter)
{
    const provider_config *c = s->config;
    lc_error err;
    lc_error_clear(&err);
    lc_dirwatch *w = lc_dirwatch_new(&err);
    if (!w) {
        LC_ERROR("%s: cannot watch %s again: %s", s->name, c->directory, err.msg);
        return true; /* it stays a warning on the screen */
    }
    lc_dirwatch_free(f->watch);
    f->watch = w;
    f->prev_root_fd = f->root_fd;
    f->root_fd = -1;
    note_root(f, c);
    f->n_same_as_before = 0;
    bool ok = lc_path_provider_scan(f, s, c->directory, f->emit_flags, meter);
    if (f->n_same_as_before)
        LC_INFO("%s: %zu files of %s are those of the folder before (the same files, or copies "
                "of the same size and time): not read again",
                s->name, f->n_same_as_before, c->directory);
    if (f->prev_root_fd >= 0)
        close(f->prev_root_fd);
    f->prev_root_fd = -1;
    return ok;
}

/* A directory is at the data directory's path again (re-created, or moved
 * back): watch it afresh and offer its files. False on a stop or a closed
 * output. */
static bool watch_again(provider *f, lc_stage *s, lc_load_meter *meter)
{
    atomic_store(&f->warn, WARN_NONE);
    LC_WARN("%s: data directory %s is there again: watching it and reading its files", s->name,
            ((const provider_config *)s->config)->directory);
    return rewatch(f, s, meter);
}

/* Once a second: does the data folder's path lead to another folder than
 * the one watched, with no event to say so (a symbolic link re-pointed:
 * `ln -sfn runB data`, the usual way to switch runs)? Then it is said once
 * and the new folder watched and read (rewatch). The games read from the
 * folder before stay in the window (their sources read them where they
 * were, core/chunk_source.h) until newer ones push them out; the anchor's
 * count keeps them and counts the new folder's games that are new. A path
 * that leads nowhere now, or to a file, is the folder gone. False on a
 * stop or a closed output. */
static bool check_root(provider *f, lc_stage *s, lc_load_meter *meter)
{
    const provider_config *c = s->config;
    double now = lc_now_seconds();
    if (directory_gone(f) || now - f->root_checked < 1.0)
        return true;
    f->root_checked = now;
    struct stat st;
    if (stat(c->directory, &st) != 0 || !S_ISDIR(st.st_mode)) {
        note_directory_gone(f, s);
        return true;
    }
    if (st.st_dev == f->root_dev && st.st_ino == f->root_ino)
        return true;
    LC_WARN("%s: data directory %s now leads to another folder (a symbolic link re-pointed?): "
            "watching it and reading its new files; the games read from the folder before stay "
            "in the window until newer ones push them out",
            s->name, c->directory);
    return rewatch(f, s, meter);
}

/* Watch until stopped; or, with until > 0, until no file is pending or that
 * moment passes (true then). False on a stop or a closed output. */
static bool watch_loop(provider *f, lc_stage *s, double until, lc_load_meter *meter)
{
    static const lc_dirwatch_ops ops = {on_file, on_dir, on_gone, on_overflow};
    watch_ctx ctx = {f, s, meter};
    struct pollfd fds[2] = {{.fd = lc_dirwatch_fd(f->watch), .events = POLLIN},
                            {.fd = f->wake_fd, .events = POLLIN}};
    while (lc_run_state_check(&s->run, meter)) {
        if (until > 0 && (f->n_pending == 0 || lc_now_seconds() >= until))
            return true;
        lc_load_idle(meter);
        int n = poll(fds, 2, f->n_pending ? 200 : 1000);
        lc_load_busy(meter);
        if (n < 0 && errno != EINTR) {
            LC_ERROR("poll on inotify failed: %s; no longer watching", strerror(errno));
            return false;
        }
        if (lc_run_state_stopping(&s->run))
            return false;
        if (n > 0 && (fds[0].revents & POLLIN)) {
            long events = lc_dirwatch_read(f->watch, &ops, &ctx);
            atomic_store(&f->g_dirs, (int_fast64_t)lc_dirwatch_dirs(f->watch));
            if (events < 0)
                return false;
            atomic_fetch_add(&f->n_watch_events, (uint_fast64_t)events);
        }
        if (f->n_pending && !check_pending(f, s, meter))
            return false;
        if (!check_root(f, s, meter))
            return false;
        fds[0].fd = lc_dirwatch_fd(f->watch);
        if (directory_gone(f)) {
            note_directory_gone(f, s);
            if (atomic_load(&f->warn) == WARN_DIR_REPLACED) {
                if (!watch_again(f, s, meter))
                    return false;
                fds[0].fd = lc_dirwatch_fd(f->watch);
            }
        }
        if (atomic_load(&f->warn) == WARN_NO_FILES) {
            if (f->seq > 0) {
                atomic_store(&f->warn, WARN_NONE);
                LC_INFO("%s: files have arrived in %s", s->name,
                        ((const provider_config *)s->config)->directory);
            } else if (lc_now_seconds() - f->warned_at >= WARN_AGAIN_S) {
                f->warned_at = lc_now_seconds();
                LC_WARN("%s: still no .gz or .tar files in %s", s->name,
                        ((const provider_config *)s->config)->directory);
            }
        }
    }
    return false;
}

static void provider_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    provider *f = s->priv;
    const provider_config *c = s->config;
    struct stat st;
    double since = lc_now_seconds();
    lc_stage_warn_default_path(s, c->defaulted, c->directory, "data folder");
    while (stat(c->directory, &st) != 0 && errno == ENOENT && c->watch) {
        /* Started before the data exists (a fresh training run): wait, and
         * say so, on the screen and now and then in the log. */
        if (atomic_load(&f->warn) != WARN_NO_DIRECTORY) {
            atomic_store(&f->warn, WARN_NO_DIRECTORY);
            f->warned_at = lc_now_seconds();
            char where[4200];
            lc_path_provider_describe_dir(c->directory, where, sizeof where);
            LC_WARN("%s: data directory %s does not exist yet; waiting for it (create it, or "
                    "point directory at your games)",
                    s->name, where);
        } else if (lc_now_seconds() - f->warned_at >= WARN_AGAIN_S) {
            f->warned_at = lc_now_seconds();
            LC_WARN("%s: still waiting for data directory %s (%.0f min)", s->name, c->directory,
                    (lc_now_seconds() - since) / 60);
        }
        if (!lc_run_state_sleep(&s->run, 1.0, meter))
            return;
    }
    atomic_store(&f->warn, WARN_NONE);
    if (stat(c->directory, &st) != 0) {
        LC_ERROR("%s: data directory %s: %s", s->name, c->directory, strerror(errno));
        atomic_fetch_add(&f->n_scan_errors, 1);
    } else if (!S_ISDIR(st.st_mode)) {
        LC_ERROR("%s: data directory %s is not a directory", s->name, c->directory);
        atomic_fetch_add(&f->n_scan_errors, 1);
    }
    if (f->watch)
        note_root(f, c);
    LC_INFO("%s: scanning %s%s", s->name, c->directory, c->watch ? " (then watching)" : "");
    double t0 = lc_now_seconds();
    if (!lc_path_provider_scan(f, s, c->directory, LC_ITEM_INITIAL, meter))
        return;
    /* Files the scan found still changing belong to the initial set when they
     * settle soon: wait for them (a little longer than they need) before the
     * marker, so the pool's first window and anchor count see them. One still
     * written after that follows as a new file. */
    if (f->n_pending) {
        double wait = c->settle_seconds * 2 > c->settle_seconds + 1 ? c->settle_seconds * 2
                                                                    : c->settle_seconds + 1;
        LC_INFO("%s: waiting up to %.1f s for %zu files still being written", s->name, wait,
                f->n_pending);
        f->emit_flags = LC_ITEM_INITIAL;
        bool ok = watch_loop(f, s, lc_now_seconds() + wait, meter);
        f->emit_flags = 0;
        if (!ok)
            return;
    }
    uint64_t initial = f->seq;
    lc_path_item marker = {.path = NULL, .flags = LC_ITEM_SCAN_DONE, .seq = initial};
    if (lc_stage_emit_marker(s, &marker, meter) != 0)
        return;
    atomic_store(&f->scan_done, true);
    LC_INFO("%s: initial scan found %llu files in %.2f s%s", s->name, (unsigned long long)initial,
            lc_now_seconds() - t0,
            f->n_pending ? "; files still being written will follow when closed" : "");
    if (initial == 0 && !f->n_pending && !directory_gone(f)) { /* gone: it says so */
        atomic_store(&f->warn, WARN_NO_FILES);
        f->warned_at = lc_now_seconds();
        LC_WARN("%s: no .gz or .tar files in %s%s", s->name, c->directory,
                c->watch ? "; waiting for some (copy games there, or point directory at them)"
                         : "");
    }
    if (f->watch)
        watch_loop(f, s, 0, meter);
}

static int provider_init(lc_stage *s, lc_error *err)
{
    provider *f = s->priv;
    const provider_config *c = s->config;
    f->root_fd = f->prev_root_fd = -1;
    /* A file where the folder should be: refused, as --check-config does. */
    struct stat st;
    if (stat(c->directory, &st) == 0 && !S_ISDIR(st.st_mode)) {
        lc_path_provider_not_a_folder(c->directory, st.st_mode, err);
        return lc_error_prefix(err, "directory: ");
    }
    f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (f->wake_fd < 0)
        return lc_error_set(err, -errno, "eventfd: %s", strerror(errno));
    if (c->watch) {
        f->watch = lc_dirwatch_new(err);
        if (!f->watch) {
            close(f->wake_fd);
            f->wake_fd = -1;
            return err->code;
        }
    }
    return 0;
}

static void provider_stop(lc_stage *s)
{
    provider *f = s->priv;
    uint64_t one = 1;
    if (f->wake_fd >= 0 && write(f->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        LC_WARN("%s: cannot wake the watcher: %s", s->name, strerror(errno));
}

static void provider_fini(lc_stage *s)
{
    provider *f = s->priv;
    for (size_t i = 0; i < f->n_pending; i++)
        free(f->pending[i].path);
    free(f->pending);
    for (size_t i = 0; i < sizeof f->skip_warned / sizeof *f->skip_warned; i++)
        free(f->skip_warned[i]);
    lc_dirwatch_free(f->watch);
    if (f->wake_fd >= 0)
        close(f->wake_fd);
    if (f->root_fd >= 0)
        close(f->root_fd);
}

enum {
    F_FILES,
    F_PENDING,
    F_ACTIVITY,
    F_INITIAL,
    F_EVENTS,
    F_ERRORS,
    F_OVERFLOWS,
    F_NOT_REGULAR,
    F_AGAIN,
    F_DIRS,
    F_SCAN_DONE
};

static void provider_flush(lc_stage *s, lc_stage_metrics *m)
{
    provider *f = s->priv;
    const provider_config *c = s->config;
    snprintf(m->detail, sizeof m->detail, "%s", c->directory);
    int warn = atomic_load(&f->warn);
    if (warn == WARN_NO_DIRECTORY)
        snprintf(m->warning, sizeof m->warning, "waiting for %s to exist", c->directory);
    else if (warn == WARN_NO_FILES)
        snprintf(m->warning, sizeof m->warning, "no .gz or .tar files in %s", c->directory);
    else if (warn == WARN_DIR_GONE)
        snprintf(m->warning, sizeof m->warning, "%s was deleted or moved: restart lcmon",
                 c->directory);
    else if (warn == WARN_DIR_NOT_DIR)
        snprintf(m->warning, sizeof m->warning, "%s is not a directory any more", c->directory);
    else if (warn == WARN_DIR_REPLACED)
        snprintf(m->warning, sizeof m->warning, "%s was replaced: restart lcmon to watch it",
                 c->directory);
    lc_metric_gauge(m, F_SCAN_DONE, atomic_load(&f->scan_done));
    /* What it is doing, for people, unless a warning says more. */
    if (m->warning[0])
        ;
    else if (!atomic_load(&f->scan_done) && m->state == LC_STAGE_RUNNING)
        lc_metric_text(m, F_ACTIVITY, "scanning");
    else if (atomic_load(&f->g_dirs)) {
        char text[64];
        snprintf(text, sizeof text, "watching %lld dirs", (long long)atomic_load(&f->g_dirs));
        lc_metric_text(m, F_ACTIVITY, text);
    }
}

static const lc_metric_info provider_metrics[] = {
    [F_FILES] = {"files", "files", LC_SHOW_TOTAL, 0, "files", LC_METRIC_AT(provider, n_found)},
    [F_PENDING] = {"pending_files", "files", LC_SHOW_VALUE, LC_SHOW_DIM | LC_SHOW_NONZERO,
                   "settling", .kind = LC_METRIC_GAUGE, LC_METRIC_AT(provider, g_pending)},
    [F_ACTIVITY] = {"activity", "", LC_SHOW_TEXT, LC_SHOW_DIM, NULL, "", .kind = LC_METRIC_TEXT},
    [F_INITIAL] = {"initial_files", "files", LC_METRIC_AT(provider, n_initial)},
    [F_EVENTS] = {"watch_events", "events", LC_METRIC_AT(provider, n_watch_events)},
    [F_ERRORS] = {"scan_errors", "errors", .kind = LC_METRIC_BAD,
                  LC_METRIC_AT(provider, n_scan_errors)},
    [F_OVERFLOWS] = {"inotify_overflows", "overflows", LC_METRIC_AT(provider, n_overflows)},
    [F_NOT_REGULAR] = {"not_regular_files", "files", .kind = LC_METRIC_BAD,
                       LC_METRIC_AT(provider, n_not_regular)},
    [F_AGAIN] = {"directories_again", "directories", .kind = LC_METRIC_BAD,
                 LC_METRIC_AT(provider, n_dir_again)},
    [F_DIRS] = {"watched_dirs", "directories", .kind = LC_METRIC_GAUGE,
                LC_METRIC_AT(provider, g_dirs)},
    [F_SCAN_DONE] = {"initial_scan_done", "", .kind = LC_METRIC_GAUGE},
    {0},
};

/* --check-config: the directory is there and can be listed. */
static int provider_preflight(const void *config, lc_problems *ps)
{
    const provider_config *c = config;
    struct stat st;
    if (stat(c->directory, &st) != 0) {
        int e = errno;
        char where[4200];
        lc_path_provider_describe_dir(c->directory, where, sizeof where);
        return lc_problem_add(ps, "directory",
                              "%s: %s (lcmon would wait for it to appear; create it, or point "
                              "directory at your games)",
                              where, strerror(e));
    }
    if (!S_ISDIR(st.st_mode)) {
        lc_error one;
        lc_error_clear(&one);
        lc_path_provider_not_a_folder(c->directory, st.st_mode, &one);
        return lc_problem_add(ps, "directory", "%s", one.msg);
    }
    if (access(c->directory, R_OK | X_OK) != 0)
        return lc_problem_add(ps, "directory", "%s cannot be read: %s", c->directory,
                              strerror(errno));
    return 0;
}

const lc_stage_class lc_file_path_provider_class = {
    .type_name = "file_path_provider",
    .summary = "lists training files in a directory tree, then watches it for new ones",
    .input = NULL,
    .output = &lc_item_path,
    .priv_size = sizeof(provider),
    .worker = provider_worker,
    .workers = "scanner",
    .settings = {provider_settings, sizeof(provider_config)},
    .config_check = provider_config_check,
    .preflight = provider_preflight,
    .init = provider_init,
    .fini = provider_fini,
    .stop = provider_stop,
    .flush_metrics = provider_flush,
    .metrics = provider_metrics,
};
