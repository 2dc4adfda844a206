/*
 * chunk_source_loader: opens the files that file_path_provider finds.
 *
 * N worker threads take paths, open each as a chunk source (a .gz is one
 * chunk; a .tar is indexed, one chunk per gzip member) and emit the source.
 * Files with other extensions are skipped and counted, the first ones of a
 * run named in the log and the last one in the metrics (a user asks which);
 * unreadable or vanished files are logged and counted, never fatal. An
 * initial scan that loads no source at all says why, as a warning. A tar's entries that
 * are not chunks are benign and expected (directories, pax headers, GNU long
 * names and links, other entry types): each source with any gets one info
 * line naming the file and what it held, and counters tar_directories,
 * tar_pax_headers, tar_long_names, tar_long_links and tar_other_entries.
 * Members that are neither gzip nor raw records are logged one by one as
 * warnings, with the reason, when the source opens, and counted
 * (skipped_members).
 *
 * A file refused for want of permission (EACCES, EPERM: a copy that sets
 * its mode last, a folder made readable later) is tried again, at 1 s,
 * then 2, 4 ... 64 s apart, for an hour: one warning when it is first
 * refused, one line when it loads or is given up (counted unreadable
 * then); files_to_retry counts those waiting. A worker waits for input
 * only until the next one is due.
 *
 * The initial-scan marker must leave after every source of the initial scan,
 * although several threads work at once: the marker carries how many files
 * came before it, and the thread that takes it waits until that many initial
 * files are done (emitted or skipped) before passing it on, with the number
 * of sources actually emitted.
 *
 * Deterministic mode (stage.h's turns): with several threads the sources
 * leave in the order of their paths, as with one (the chunk pool sorts the
 * initial ones anyway; a chunk_reader takes them as they come).
 */
#include "stages/stage.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/text.h"
#include "format/lc0/chunk_source.h"
#include "stages/items.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct loader_config {
    unsigned threads;
} loader_config;

static const lc_setting loader_settings[] = {
    LC_SETTING_THREADS(loader_config, threads, "1", 256),
    {0},
};

#define RETRY_FIRST_NS 1000000000ull
#define RETRY_GAP_MAX_NS 64000000000ull
#define RETRY_FOR_NS 3600000000000ull
#define RETRY_MAX 4096 /* files waiting at most; past them, unreadable at once */

/* A file to open again (in ld->retries, under mu). */
typedef struct retry_file {
    char *path;
    size_t key_at; /* where its key begins in path */
    uint64_t seq, first_ns, due_ns, gap_ns;
    unsigned tries;
} retry_file;

typedef struct loader {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    uint64_t initial_done;                        /* initial files finished (under mu) */
    uint64_t initial_emitted;                     /* initial sources emitted (under mu) */
    uint64_t initial_skipped, initial_unreadable; /* initial files not loaded (under mu) */
    uint64_t named_skips;                         /* skipped files named in the log (under mu) */
    char last_skipped[LC_METRIC_TEXT_MAX];        /* the newest skipped file (under mu) */
    atomic_uint_fast64_t n_empty;                 /* archives without a chunk */
    atomic_uint_fast64_t n_sources, n_tars, n_chunks, n_skipped, n_unreadable, n_skipped_members,
        n_raw, n_truncated;
    atomic_uint_fast64_t n_tar_dirs, n_tar_pax, n_tar_long_names, n_tar_long_links, n_tar_other;
    retry_file *retries; /* refused for want of permission, to try again (under mu) */
    size_t n_retries, cap_retries;
} loader;

/* What became of one path. */
typedef enum { FILE_LOADED, FILE_SKIPPED, FILE_UNREADABLE, FILE_RETRY } file_outcome;

static void initial_file_done(loader *ld, file_outcome outcome)
{
    lc_mutex_lock(&ld->mu);
    ld->initial_done++;
    if (outcome == FILE_LOADED)
        ld->initial_emitted++;
    else if (outcome == FILE_SKIPPED)
        ld->initial_skipped++;
    else
        ld->initial_unreadable++;
    lc_cond_broadcast(&ld->cond);
    lc_mutex_unlock(&ld->mu);
}

/* Append ", N thing(s)" (or "N thing(s)" first) to buf when n > 0. */
static void append_count(char *buf, size_t size, size_t *len, size_t n, const char *one,
                         const char *many)
{
    if (n == 0 || *len >= size)
        return;
    int w = snprintf(buf + *len, size - *len, "%s%zu %s", *len ? ", " : "", n, n == 1 ? one : many);
    if (w > 0)
        *len += (size_t)w;
}

/* Count a tar's entries that are not chunks and say so in one line. */
static void report_tar_entries(lc_stage *s, loader *ld, const lc_chunk_source *src)
{
    lc_tar_entry_counts e = lc_chunk_source_tar_entries(src);
    atomic_fetch_add(&ld->n_tar_dirs, e.directories);
    atomic_fetch_add(&ld->n_tar_pax, e.pax_headers);
    atomic_fetch_add(&ld->n_tar_long_names, e.long_names);
    atomic_fetch_add(&ld->n_tar_long_links, e.long_links);
    atomic_fetch_add(&ld->n_tar_other, e.other);
    if (!e.directories && !e.pax_headers && !e.long_names && !e.long_links && !e.other)
        return;
    char skipped[200];
    size_t len = 0;
    skipped[0] = '\0';
    append_count(skipped, sizeof skipped, &len, e.directories, "directory member",
                 "directory members");
    append_count(skipped, sizeof skipped, &len, e.pax_headers, "pax header", "pax headers");
    append_count(skipped, sizeof skipped, &len, e.long_links, "GNU long link", "GNU long links");
    append_count(skipped, sizeof skipped, &len, e.other,
                 "other entry (link, device, fifo or sparse file)",
                 "other entries (links, devices, fifos or sparse files)");
    char named[80] = "";
    if (e.long_names)
        snprintf(named, sizeof named, "%s%zu %s GNU long names", len ? "; " : "", e.long_names,
                 e.long_names == 1 ? "entry had a" : "entries had");
    LC_INFO("%s: %s: %s%s%s", s->name, lc_chunk_source_path(src), len ? "skipped " : "", skipped,
            named);
}

/* The first skipped files of a run are named in the log; after these, the
 * metrics name the newest. */
#define NAMED_SKIPS 10

/* A file that is not a .gz or a .tar: counted, remembered, named. */
static void skip_file(lc_stage *s, loader *ld, const char *path)
{
    atomic_fetch_add(&ld->n_skipped, 1);
    lc_mutex_lock(&ld->mu);
    snprintf(ld->last_skipped, sizeof ld->last_skipped, "%s", lc_basename(path));
    uint64_t named = ld->named_skips++;
    lc_mutex_unlock(&ld->mu);
    if (named < NAMED_SKIPS)
        LC_INFO("%s: skipped %s: not a .gz or .tar file", s->name, path);
    else if (named == NAMED_SKIPS)
        LC_INFO("%s: skipped %s: not a .gz or .tar file (further skipped files are counted, "
                "not named: the stage's last_skipped metric shows the newest)",
                s->name, path);
    else
        LC_DEBUG("%s: skipped %s: not a .gz or .tar file", s->name, path);
}

/* Drop retry r (under mu). */
static void forget_retry(loader *ld, retry_file *r)
{
    free(r->path);
    *r = ld->retries[--ld->n_retries];
}

/* The path came again from the provider (written again): it is opened
 * now, so its retry goes. */
static void cancel_retry(loader *ld, const char *path)
{
    lc_mutex_lock(&ld->mu);
    for (size_t i = 0; i < ld->n_retries; i++)
        if (!strcmp(ld->retries[i].path, path)) {
            forget_retry(ld, &ld->retries[i]);
            break;
        }
    lc_mutex_unlock(&ld->mu);
}

/* A retry due now, taken out of the list (its path moved to *out: the
 * caller's; retry_later puts it back with its times), or false with
 * *next_due the earliest one (0: none). */
static bool take_due_retry(loader *ld, retry_file *out, uint64_t *next_due)
{
    uint64_t now = lc_now_ns();
    *next_due = 0;
    bool got = false;
    lc_mutex_lock(&ld->mu);
    for (size_t i = 0; i < ld->n_retries && !got; i++) {
        retry_file *r = &ld->retries[i];
        if (r->due_ns <= now) {
            *out = *r;
            out->path = lc_xstrdup(r->path);
            r->due_ns = UINT64_MAX; /* being tried: no other worker takes it */
            got = true;
        } else if (r->due_ns != UINT64_MAX && (!*next_due || r->due_ns < *next_due)) {
            *next_due = r->due_ns;
        }
    }
    lc_mutex_unlock(&ld->mu);
    return got;
}

/* Keep path to open again: at the next gap after `tries` tries. False when
 * it has been tried for RETRY_FOR_NS, or too many wait already. */
static bool retry_later(loader *ld, const char *path, size_t key_at, uint64_t seq, unsigned tries)
{
    uint64_t now = lc_now_ns();
    lc_mutex_lock(&ld->mu);
    retry_file *r = NULL;
    for (size_t i = 0; i < ld->n_retries && !r; i++)
        if (!strcmp(ld->retries[i].path, path))
            r = &ld->retries[i];
    bool ok = r ? now - r->first_ns < RETRY_FOR_NS : ld->n_retries < RETRY_MAX;
    if (ok && !r) {
        if (ld->n_retries == ld->cap_retries) {
            ld->cap_retries = ld->cap_retries ? 2 * ld->cap_retries : 16;
            ld->retries = lc_xrealloc(ld->retries, ld->cap_retries * sizeof *ld->retries);
        }
        r = &ld->retries[ld->n_retries++];
        *r = (retry_file){.path = lc_xstrdup(path), .key_at = key_at, .seq = seq, .first_ns = now};
    }
    if (ok) {
        /* 1 s first (or for one whose entry went meanwhile), then doubling */
        r->gap_ns = tries == 0 || r->gap_ns == 0       ? RETRY_FIRST_NS
                    : 2 * r->gap_ns < RETRY_GAP_MAX_NS ? 2 * r->gap_ns
                                                       : RETRY_GAP_MAX_NS;
        r->due_ns = now + r->gap_ns;
        r->tries = tries + 1;
    } else if (r) {
        forget_retry(ld, r);
    }
    lc_mutex_unlock(&ld->mu);
    return ok;
}

/* Open one path into *out (one reference; NULL unless loaded); its key is
 * the path from key_at on. tries: how often it was tried before (a retry of
 * a permission error). */
static file_outcome open_source(lc_stage *s, loader *ld, const char *path, size_t key_at,
                                uint64_t seq, unsigned tries, lc_chunk_source **out)
{
    lc_chunk_source *src = NULL;
    lc_error err;
    lc_error_clear(&err);
    *out = NULL;
    int rc = lc_chunk_source_open_keyed(path, key_at, &src, &err);
    if (rc == -ENOTSUP) {
        skip_file(s, ld, path);
        return FILE_SKIPPED;
    }
    if ((rc == -EACCES || rc == -EPERM) && retry_later(ld, path, key_at, seq, tries)) {
        if (tries == 0)
            LC_WARN("%s: cannot load %s; trying again at 1 s, then 2, 4 ... 64 s apart, for an "
                    "hour (a file's permissions are often set last)",
                    s->name, err.msg[0] ? err.msg : lc_strerror(rc));
        return FILE_RETRY;
    }
    if (rc != 0) {
        atomic_fetch_add(&ld->n_unreadable, 1);
        LC_WARN("%s: cannot load %s%s", s->name, err.msg[0] ? err.msg : lc_strerror(rc),
                tries ? " (given up after trying for an hour)" : "");
        return FILE_UNREADABLE;
    }
    if (tries)
        LC_INFO("%s: %s loads now, after %u tries", s->name, path, tries + 1);
    /* Members that are no chunk were named as the source opened. */
    atomic_fetch_add(&ld->n_skipped_members, lc_chunk_source_skipped_members(src));
    if (lc_chunk_source_count(src) == 0) { /* nothing to train on: say so */
        atomic_fetch_add(&ld->n_empty, 1);
        LC_WARN("%s: %s holds no game chunks (%s); skipped", s->name, path,
                lc_chunk_source_kind(src) == LC_SOURCE_TAR
                    ? "an archive without gzip or raw-record members"
                    : "empty");
        lc_chunk_source_unref(src);
        return FILE_UNREADABLE;
    }
    atomic_fetch_add(&ld->n_sources, 1);
    atomic_fetch_add(&ld->n_chunks, lc_chunk_source_count(src));
    atomic_fetch_add(&ld->n_raw, lc_chunk_source_raw_members(src));
    if (lc_chunk_source_kind(src) == LC_SOURCE_TAR)
        atomic_fetch_add(&ld->n_tars, 1);
    if (lc_chunk_source_kind(src) == LC_SOURCE_TAR)
        report_tar_entries(s, ld, src);
    if (lc_chunk_source_truncated(src))
        atomic_fetch_add(&ld->n_truncated, 1);
    *out = src;
    return FILE_LOADED;
}

/* The initial scan loaded nothing: say why, once, so that a folder of files
 * lcmon cannot read is not mistaken for a slow start. */
static void warn_nothing_loaded(lc_stage *s, loader *ld, uint64_t files)
{
    lc_mutex_lock(&ld->mu);
    uint64_t skipped = ld->initial_skipped, unreadable = ld->initial_unreadable;
    char example[LC_METRIC_TEXT_MAX];
    snprintf(example, sizeof example, "%s", ld->last_skipped);
    lc_mutex_unlock(&ld->mu);
    if (files == 0) {
        LC_WARN("%s: the initial scan loaded no sources: the folder holds no files yet; waiting "
                "for .gz or .tar files to arrive",
                s->name);
        return;
    }
    char why[LC_METRIC_TEXT_MAX + 160];
    size_t len = 0;
    why[0] = '\0';
    if (skipped)
        len += (size_t)snprintf(why, sizeof why, "%llu not .gz or .tar (such as %s)",
                                (unsigned long long)skipped, example);
    if (unreadable && len < sizeof why)
        snprintf(why + len, sizeof why - len, "%s%llu unreadable or empty (see the warnings above)",
                 len ? ", " : "", (unsigned long long)unreadable);
    LC_WARN("%s: the initial scan loaded no sources: of %llu files, %s; waiting for .gz or .tar "
            "files to arrive",
            s->name, (unsigned long long)files, why);
}

/* The next path (or -ETIMEDOUT at next_due, when a retry is waiting), in
 * deterministic mode with its ticket (stage.h's turns). */
static int take_path(lc_stage *s, bool turns, uint64_t next_due, lc_path_item *in, uint64_t *ticket,
                     lc_load_meter *meter)
{
    if (turns)
        lc_stage_take_begin(s, meter);
    int rc = next_due ? lc_queue_get_until(s->input, in, meter, next_due)
                      : lc_queue_get(s->input, in, meter);
    if (!turns)
        return rc;
    if (rc != 0) {
        lc_mutex_unlock(&s->turns.take_mu);
        return rc;
    }
    *ticket = lc_stage_take_end(s);
    return 0;
}

/* One retry that came due: opened again, emitted when it loads. False
 * when the stage must end (its output closed). A retry's time is the
 * clock's, so it takes no turn even in deterministic mode (which a file
 * that cannot be read yet makes timing-dependent anyway). */
static bool retry_one(lc_stage *s, loader *ld, retry_file *r, lc_load_meter *meter)
{
    lc_chunk_source *src;
    file_outcome outcome = open_source(s, ld, r->path, r->key_at, r->seq, r->tries, &src);
    if (outcome != FILE_RETRY)
        cancel_retry(ld, r->path);
    free(r->path);
    if (!src)
        return true;
    lc_source_item out = {.source = src, .flags = 0, .seq = r->seq};
    if (lc_stage_emit(s, &out, meter) != 0) {
        lc_chunk_source_unref(src);
        return false;
    }
    return true;
}

/* The initial scan's marker: passed on once every initial file before it
 * is done, with the number of sources emitted. False when the stage must
 * end. */
static bool pass_marker(lc_stage *s, loader *ld, const lc_path_item *in, lc_load_meter *meter)
{
    lc_load_idle(meter);
    lc_mutex_lock(&ld->mu);
    while (ld->initial_done < in->seq && !lc_run_state_stopping(&s->run))
        lc_cond_wait(&ld->cond, &ld->mu);
    uint64_t emitted = ld->initial_emitted;
    lc_mutex_unlock(&ld->mu);
    if (emitted == 0)
        warn_nothing_loaded(s, ld, in->seq);
    lc_load_busy(meter);
    lc_source_item marker = {.source = NULL, .flags = LC_ITEM_SCAN_DONE, .seq = emitted};
    if (lc_stage_emit_marker(s, &marker, meter) != 0)
        return false;
    LC_INFO("%s: initial scan loaded: %llu sources", s->name, (unsigned long long)emitted);
    return true;
}

/* In deterministic mode the sources leave in the order of their paths: a
 * worker opens its file alongside the others, then waits for its turn. */
static void loader_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    loader *ld = s->priv;
    bool turns = lc_stage_in_turns(s);
    uint64_t ticket = 0;
    lc_path_item in;
    while (lc_run_state_check(&s->run, meter)) {
        retry_file due;
        uint64_t next_due;
        if (take_due_retry(ld, &due, &next_due)) {
            if (!retry_one(s, ld, &due, meter))
                return;
            continue;
        }
        /* Input, or the next retry's time. */
        int rc = take_path(s, turns, next_due, &in, &ticket, meter);
        if (rc == -ETIMEDOUT)
            continue;
        if (rc != 0)
            return;
        if (in.flags & LC_ITEM_SCAN_DONE) {
            if (turns && !lc_stage_turn_wait(s, ticket, meter))
                return;
            bool ok = pass_marker(s, ld, &in, meter);
            if (turns)
                lc_stage_turn_end(s);
            if (!ok)
                return;
            continue;
        }
        cancel_retry(ld, in.path); /* written again: opened now */
        lc_chunk_source *src;
        file_outcome outcome = open_source(s, ld, in.path, in.key_at, in.seq, 0, &src);
        bool initial = in.flags & LC_ITEM_INITIAL;
        free(in.path);
        if (turns && !lc_stage_turn_wait(s, ticket, meter)) {
            lc_chunk_source_unref(src);
            return;
        }
        lc_source_item out = {.source = src, .flags = in.flags & LC_ITEM_INITIAL, .seq = in.seq};
        bool ok = !src || lc_stage_emit(s, &out, meter) == 0;
        if (!ok) {
            lc_chunk_source_unref(src);
            outcome = FILE_UNREADABLE;
        }
        if (initial) /* one to retry counts as not loaded by the scan */
            initial_file_done(ld, outcome == FILE_RETRY ? FILE_UNREADABLE : outcome);
        if (turns)
            lc_stage_turn_end(s);
        if (!ok)
            return;
    }
}

static int loader_init(lc_stage *s, lc_error *err)
{
    (void)err;
    loader *ld = s->priv;
    lc_mutex_init(&ld->mu);
    lc_cond_init(&ld->cond);
    return 0;
}

static void loader_stop(lc_stage *s)
{
    loader *ld = s->priv;
    lc_mutex_lock(&ld->mu);
    lc_cond_broadcast(&ld->cond);
    lc_mutex_unlock(&ld->mu);
}

static void loader_fini(lc_stage *s)
{
    loader *ld = s->priv;
    for (size_t i = 0; i < ld->n_retries; i++)
        free(ld->retries[i].path);
    free(ld->retries);
    lc_cond_destroy(&ld->cond);
    lc_mutex_destroy(&ld->mu);
}

enum { L_SOURCES, L_CHUNKS, L_SKIPPED, L_LAST_SKIPPED, L_TARS, L_UNREADABLE, L_RETRY };

static void loader_flush(lc_stage *s, lc_stage_metrics *m)
{
    loader *ld = s->priv;
    char last[LC_METRIC_TEXT_MAX];
    lc_mutex_lock(&ld->mu);
    snprintf(last, sizeof last, "%s", ld->last_skipped);
    lc_mutex_unlock(&ld->mu);
    if (last[0])
        lc_metric_text(m, L_LAST_SKIPPED, last);
    lc_mutex_lock(&ld->mu);
    int64_t waiting = (int64_t)ld->n_retries;
    lc_mutex_unlock(&ld->mu);
    lc_metric_gauge(m, L_RETRY, waiting);
    /* Benign tar entries: work, not bad input. */
}

static const lc_metric_info loader_metrics[] = {
    [L_SOURCES] = {"sources", "sources", LC_SHOW_TOTAL, 0, "sources", "src",
                   LC_METRIC_AT(loader, n_sources)},
    [L_CHUNKS] = {"chunks", "chunks", LC_SHOW_TOTAL, 0, "chunks", LC_METRIC_AT(loader, n_chunks)},
    [L_SKIPPED] = {"skipped_files", "files", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
                   "files skipped", "skipped", LC_METRIC_AT(loader, n_skipped)},
    [L_LAST_SKIPPED] = {"last_skipped", "", LC_SHOW_TEXT, LC_SHOW_DIM, "last",
                        .kind = LC_METRIC_TEXT},
    [L_TARS] = {"tar_sources", "archives", LC_METRIC_AT(loader, n_tars)},
    [L_UNREADABLE] = {"unreadable_files", "files", .kind = LC_METRIC_BAD,
                      LC_METRIC_AT(loader, n_unreadable)},
    [L_RETRY] = {"files_to_retry", "files", LC_SHOW_VALUE, LC_SHOW_WARN | LC_SHOW_NONZERO,
                 "to retry", .kind = LC_METRIC_GAUGE},
    {"raw_members", "members", LC_METRIC_AT(loader, n_raw)},
    {"skipped_members", "members", LC_METRIC_AT(loader, n_skipped_members)},
    {"bad_empty_archives", "archives", .kind = LC_METRIC_BAD, LC_METRIC_AT(loader, n_empty)},
    {"truncated_archives", "archives", .kind = LC_METRIC_BAD, LC_METRIC_AT(loader, n_truncated)},
    {"tar_directories", "entries", LC_METRIC_AT(loader, n_tar_dirs)},
    {"tar_pax_headers", "entries", LC_METRIC_AT(loader, n_tar_pax)},
    {"tar_long_names", "entries", LC_METRIC_AT(loader, n_tar_long_names)},
    {"tar_long_links", "entries", LC_METRIC_AT(loader, n_tar_long_links)},
    {"tar_other_entries", "entries", LC_METRIC_AT(loader, n_tar_other)},
    {0},
};

static unsigned loader_threads(const void *config)
{
    return ((const loader_config *)config)->threads;
}

const lc_stage_class lc_chunk_source_loader_class = {
    .type_name = "chunk_source_loader",
    .summary = "opens .gz and .tar files as chunk sources (tar archives are indexed)",
    .input = &lc_item_path,
    .output = &lc_item_source,
    .priv_size = sizeof(loader),
    .worker = loader_worker,
    .threads = loader_threads,
    .workers = "loaders",
    .settings = {loader_settings, sizeof(loader_config)},
    .config_check = NULL,
    .init = loader_init,
    .fini = loader_fini,
    .stop = loader_stop,
    .flush_metrics = loader_flush,
    .metrics = loader_metrics,
};
