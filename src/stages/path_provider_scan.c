/*
 * path_provider_scan: the file_path_provider's scan of a tree
 * (stages/path_provider.h). Every directory is watched before it is listed,
 * so nothing written meanwhile is missed; every regular file is collected
 * and the list sorted by sort key (basename, compared as bytes; the full
 * path breaks ties) before the files are offered. Names starting with '.'
 * are ignored (core/dirwalk.h); entries that are not regular files, and
 * directories reached a second time (a link loop, or a link to a directory
 * watched already: a subfolder linking back to the data folder), are
 * skipped, counted and logged once; problems listing or reading are logged and counted.
 */
#include "stages/path_provider.h"

#include "core/dirwalk.h"
#include "core/file.h"
#include "core/log.h"
#include "core/text.h"
#include "stages/items.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>
#include <strings.h>

typedef struct found_file {
    char *path;
    const char *key; /* points into path */
} found_file;

static void add_watch(provider *f, const char *dir)
{
    if (!f->watch)
        return;
    int rc = lc_dirwatch_add(f->watch, dir);
    if (rc < 0) {
        LC_WARN("cannot watch %s: %s (files written there will not be seen)", dir, strerror(-rc));
        atomic_fetch_add(&f->n_scan_errors, 1);
        return;
    }
    atomic_store(&f->g_dirs, (int_fast64_t)lc_dirwatch_dirs(f->watch));
}

typedef struct file_list {
    found_file *v;
    size_t n, cap;
} file_list;

/* The scan: every directory watched before it is listed, every regular
 * file found, problems logged and counted. */
typedef struct scan_ctx {
    provider *f;
    lc_stage *s;
    file_list *out;
} scan_ctx;

static void scan_dir(void *ctx, const char *path)
{
    add_watch(((scan_ctx *)ctx)->f, path);
}

static void scan_file(void *ctx, char *path, const char *name)
{
    file_list *out = ((scan_ctx *)ctx)->out;
    (void)name;
    if (out->n == out->cap) {
        out->cap = out->cap ? 2 * out->cap : 256;
        out->v = lc_xrealloc(out->v, out->cap * sizeof *out->v);
    }
    out->v[out->n].path = path;
    out->v[out->n].key = lc_basename(path);
    out->n++;
}

static void scan_error(void *ctx, const char *path, int err, bool listing)
{
    /* A symlink loop, a permission problem: worth a word. */
    if (listing)
        LC_WARN("cannot list %s: %s", path, strerror(err));
    else
        LC_WARN("cannot read %s: %s (skipped)", path, strerror(err));
    atomic_fetch_add(&((scan_ctx *)ctx)->f->n_scan_errors, 1);
}

/* Whether path was logged as skipped lately; if not, it is now. Worker
 * thread only. */
static bool skip_logged(provider *f, const char *path)
{
    for (unsigned i = 0; i < sizeof f->skip_warned / sizeof *f->skip_warned; i++)
        if (f->skip_warned[i] && !strcmp(f->skip_warned[i], path))
            return true;
    unsigned k = f->skip_next++ % (sizeof f->skip_warned / sizeof *f->skip_warned);
    free(f->skip_warned[k]);
    f->skip_warned[k] = lc_xstrdup(path);
    return false;
}

void lc_path_provider_skip_other(provider *f, const char *path, mode_t mode)
{
    atomic_fetch_add(&f->n_not_regular, 1);
    if (!skip_logged(f, path))
        LC_WARN("%s: is %s, not a game file: skipped", path, lc_file_kind(mode));
}

static void scan_other(void *ctx, const char *path, mode_t mode)
{
    lc_path_provider_skip_other(((scan_ctx *)ctx)->f, path, mode);
}

static void scan_again(void *ctx, const char *path, const char *first)
{
    provider *f = ((scan_ctx *)ctx)->f;
    atomic_fetch_add(&f->n_dir_again, 1);
    if (!skip_logged(f, path))
        LC_WARN("%s: leads to %s, a directory already listed (a symbolic link loop, or a second "
                "link to it): skipped",
                path, first);
}

static const char *scan_known(void *ctx, const struct stat *st)
{
    provider *f = ((scan_ctx *)ctx)->f;
    return f->watch ? lc_dirwatch_known(f->watch, st) : NULL;
}

static bool scan_stop(void *ctx)
{
    return lc_run_state_stopping(&((scan_ctx *)ctx)->s->run);
}

static void scan_tree(provider *f, lc_stage *s, const char *dir, file_list *out)
{
    const provider_config *c = s->config;
    const lc_walk_ops ops = {scan_dir,   scan_file,  scan_error,          scan_stop,
                             scan_again, scan_other, !c->follow_symlinks, scan_known};
    scan_ctx ctx = {f, s, out};
    lc_walk_tree(dir, &ops, &ctx);
}

static int compare_found(const void *a, const void *b)
{
    const found_file *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->path, y->path);
}

bool lc_path_provider_scan(provider *f, lc_stage *s, const char *dir, uint32_t flags,
                           lc_load_meter *meter)
{
    file_list list = {0};
    scan_tree(f, s, dir, &list);
    if (list.n)
        qsort(list.v, list.n, sizeof *list.v, compare_found);
    lc_run_progress *progress = s->env->progress;
    if (progress && !f->watch && (flags & LC_ITEM_INITIAL)) {
        /* Without watching, the scan is the run: its files are the total. */
        uint64_t files = 0, archives = 0;
        for (size_t i = 0; i < list.n; i++) {
            size_t len = strlen(list.v[i].path);
            const char *end = list.v[i].path + (len >= 4 ? len - 4 : 0);
            bool gz = len >= 3 && !strcasecmp(list.v[i].path + len - 3, ".gz");
            bool tar = !strcasecmp(end, ".tar");
            files += gz || tar;
            archives += tar;
        }
        atomic_store(&progress->scan_files, files);
        atomic_store(&progress->scan_archives, archives);
        atomic_store(&progress->scan_done, true);
    }
    bool ok = true;
    for (size_t i = 0; i < list.n; i++) {
        if (ok && !lc_run_state_stopping(&s->run))
            ok = lc_path_provider_offer(f, s, list.v[i].path, flags, meter);
        else
            free(list.v[i].path);
    }
    free(list.v);
    return ok;
}

/* dir, with the working directory a relative one is under, for messages. */
void lc_path_provider_describe_dir(const char *dir, char *buf, size_t size)
{
    char cwd[2048];
    if (dir[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(buf, size, "%s (in the working directory %s)", dir, cwd);
    else
        snprintf(buf, size, "%s", dir);
}

/* The data folder's path leads to a file: a game file given for its folder
 * (LCMON_DATA=run3/training.123.gz) is told the folder that holds it (the
 * caller names the setting). */
int lc_path_provider_not_a_folder(const char *dir, mode_t mode, lc_error *err)
{
    if (!S_ISREG(mode))
        return lc_error_add(err, LC_ECONFIG,
                            "%s is %s, not a folder (give the folder of your games)", dir,
                            lc_file_kind(mode));
    char holder[2048] = "/";
    const char *slash = strrchr(dir, '/');
    if (slash && slash > dir)
        snprintf(holder, sizeof holder, "%.*s", (int)(slash - dir), dir);
    else if (!slash && !getcwd(holder, sizeof holder))
        snprintf(holder, sizeof holder, ".");
    return lc_error_add(err, LC_ECONFIG,
                        "%s is a file, not a folder: give the folder that holds it: %s", dir,
                        holder);
}
