/*
 * epoch_files: see epoch_files.h.
 */
#include "stages/epoch_files.h"

#include "core/clock.h"
#include "core/dirwalk.h"
#include "core/file.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/text.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void lc_epoch_files_init(lc_epoch_files *ef, const char *name, const char *path,
                         pthread_mutex_t *mu, pthread_cond_t *cond)
{
    memset(ef, 0, sizeof *ef);
    ef->name = name;
    ef->path = path;
    ef->mu = mu;
    ef->cond = cond;
}

static void free_all(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
}

static void push_seen(lc_epoch_files *ef, const char *path)
{
    if (ef->n_seen == ef->cap_seen) {
        ef->cap_seen = ef->cap_seen ? 2 * ef->cap_seen : 64;
        ef->seen = lc_xrealloc(ef->seen, ef->cap_seen * sizeof *ef->seen);
    }
    ef->seen[ef->n_seen++] = lc_xstrdup(path);
}

static void not_regular(void *ctx, const char *path, mode_t mode)
{
    lc_epoch_files *ef = ctx;
    for (size_t i = 0; i < ef->n_skipped; i++)
        if (!strcmp(ef->skipped[i], path))
            return;
    ef->skipped = lc_xrealloc(ef->skipped, (ef->n_skipped + 1) * sizeof *ef->skipped);
    ef->skipped[ef->n_skipped++] = lc_xstrdup(path);
    atomic_fetch_add(&ef->n_not_regular, 1);
    LC_WARN("%s: %s: is %s, not a Parquet file: skipped", ef->name, path, lc_file_kind(mode));
}

void lc_epoch_files_list(lc_epoch_files *ef, bool shuffle, uint64_t seed, uint64_t epoch)
{
    free_all(ef->paths, ef->n);
    free(ef->paths);
    ef->paths = lc_list_files(ef->path, ".parquet", &ef->n, not_regular, ef);
    ef->next = 0;
    ef->listed = true;
    if (shuffle && ef->n > 1) {
        lc_rng rng;
        lc_rng_seed(&rng, seed, epoch - 1);
        lc_rng_shuffle(&rng, ef->paths, ef->n, sizeof *ef->paths);
    }
    free_all(ef->seen, ef->n_seen);
    ef->n_seen = 0;
    for (size_t i = 0; i < ef->n; i++)
        push_seen(ef, ef->paths[i]);
    atomic_store(&ef->total, ef->n);
    if (ef->n) {
        /* The first epoch at info level, later ones at most once a minute. */
        uint64_t now = lc_now_ns();
        bool info = ef->logged_ns == 0 || now - ef->logged_ns >= 60000000000ull;
        if (info)
            ef->logged_ns = now;
        lc_log(info ? LC_LOG_INFO : LC_LOG_DEBUG, "%s: epoch %llu: %zu Parquet file%s under %s",
               ef->name, (unsigned long long)epoch, ef->n, ef->n == 1 ? "" : "s", ef->path);
        ef->warned_empty = false;
    } else if (!ef->warned_empty) {
        LC_WARN("%s: no .parquet files under %s; looking again every second", ef->name, ef->path);
        ef->warned_empty = true;
    }
}

char *lc_epoch_files_next(lc_epoch_files *ef)
{
    if (ef->next >= ef->n)
        return NULL;
    char *path = ef->paths[ef->next];
    ef->paths[ef->next++] = NULL;
    return path;
}

/* A file the watch saw: into the epoch under way, unless it has it. */
static void noticed(void *ctx, char *path)
{
    lc_epoch_files *ef = ctx;
    if (!lc_has_suffix(path, ".parquet")) {
        free(path);
        return;
    }
    lc_mutex_lock(ef->mu);
    /* Before the first listing, the listing will find it. */
    bool known = ef->closed || !ef->listed;
    for (size_t i = 0; i < ef->n_seen && !known; i++)
        known = strcmp(ef->seen[i], path) == 0;
    if (!known) {
        push_seen(ef, path);
        ef->paths = lc_xrealloc(ef->paths, (ef->n + 1) * sizeof *ef->paths);
        ef->paths[ef->n++] = path;
        atomic_fetch_add(&ef->total, 1);
        atomic_fetch_add(&ef->n_noticed, 1);
        lc_cond_broadcast(ef->cond);
        LC_DEBUG("%s: new file %s joins the epoch", ef->name, path);
    } else {
        free(path);
    }
    lc_mutex_unlock(ef->mu);
}

static bool on_file(void *ctx, char *path)
{
    noticed(ctx, path);
    return true;
}

/* A new directory: watched, and its files (one may still be being
 * written: its close reports it again) are noticed. */
static bool on_dir(void *ctx, char *path)
{
    lc_epoch_files *ef = ctx;
    lc_dirwatch_add_tree(ef->watch, path, noticed, ef);
    free(path);
    return true;
}

static void on_overflow(void *ctx)
{
    lc_epoch_files *ef = ctx;
    if (atomic_fetch_add(&ef->n_overflows, 1) == 0)
        LC_WARN("%s: the inotify queue overflowed: new files may wait for the next epoch "
                "(raise fs.inotify.max_queued_events)",
                ef->name);
}

static void *watch_main(void *arg)
{
    lc_epoch_files *ef = arg;
    static const lc_dirwatch_ops ops = {.file = on_file, .dir = on_dir, .overflow = on_overflow};
    struct pollfd pfd = {.fd = lc_dirwatch_fd(ef->watch), .events = POLLIN};
    while (!lc_run_state_stopping(ef->run)) {
        int n = poll(&pfd, 1, 200); /* the stop flag is looked at this often */
        if (n < 0 && errno != EINTR) {
            LC_ERROR("%s: watching %s failed: %s; new files wait for the next epoch", ef->name,
                     ef->path, strerror(errno));
            break;
        }
        if (n > 0)
            lc_dirwatch_read(ef->watch, &ops, ef);
    }
    return NULL;
}

int lc_epoch_files_watch(lc_epoch_files *ef, lc_run_state *run, lc_error *err)
{
    struct stat st;
    if (stat(ef->path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    ef->watch = lc_dirwatch_new(err);
    if (!ef->watch) { /* not fatal: new files wait for the next epoch */
        LC_WARN("%s: cannot watch %s for new files (%s); they will be read from the next "
                "epoch on",
                ef->name, ef->path, err->msg);
        lc_error_clear(err);
        return 0;
    }
    lc_dirwatch_add_tree(ef->watch, ef->path, NULL, NULL);
    ef->run = run;
    lc_thread_start(&ef->thread, "pq-watch", watch_main, ef);
    return 0;
}

void lc_epoch_files_stop(lc_epoch_files *ef)
{
    if (ef->watch && ef->run) {
        lc_thread_join(&ef->thread);
        ef->run = NULL;
    }
}

void lc_epoch_files_fini(lc_epoch_files *ef)
{
    lc_epoch_files_stop(ef);
    lc_dirwatch_free(ef->watch);
    free_all(ef->paths, ef->n);
    free(ef->paths);
    free_all(ef->seen, ef->n_seen);
    free(ef->seen);
    free_all(ef->skipped, ef->n_skipped);
    free(ef->skipped);
}
