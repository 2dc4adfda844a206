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
 * The initial-scan marker must leave after every source of the initial scan,
 * although several threads work at once: the marker carries how many files
 * came before it, and the thread that takes it waits until that many initial
 * files are done (emitted or skipped) before passing it on, with the number
 * of sources actually emitted.
 */
#include "stages/stage.h"

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
} loader;

/* What became of one path. */
typedef enum { FILE_LOADED, FILE_SKIPPED, FILE_UNREADABLE } file_outcome;

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

/* Open one path into *out (one reference; NULL unless loaded). */
static file_outcome open_source(lc_stage *s, loader *ld, const char *path, size_t key_at,
                                lc_chunk_source **out)
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
    if (rc != 0) {
        atomic_fetch_add(&ld->n_unreadable, 1);
        LC_WARN("%s: cannot load %s", s->name, err.msg[0] ? err.msg : lc_strerror(rc));
        return FILE_UNREADABLE;
    }
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

static void loader_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    loader *ld = s->priv;
    lc_path_item in;
    while (lc_run_state_check(&s->run, meter) && lc_queue_get(s->input, &in, meter) == 0) {
        if (in.flags & LC_ITEM_SCAN_DONE) {
            lc_load_idle(meter);
            lc_mutex_lock(&ld->mu);
            while (ld->initial_done < in.seq && !lc_run_state_stopping(&s->run))
                lc_cond_wait(&ld->cond, &ld->mu);
            uint64_t emitted = ld->initial_emitted;
            lc_mutex_unlock(&ld->mu);
            if (emitted == 0)
                warn_nothing_loaded(s, ld, in.seq);
            lc_load_busy(meter);
            lc_source_item marker = {.source = NULL, .flags = LC_ITEM_SCAN_DONE, .seq = emitted};
            if (lc_stage_emit_marker(s, &marker, meter) != 0)
                return;
            LC_INFO("%s: initial scan loaded: %llu sources", s->name, (unsigned long long)emitted);
            continue;
        }
        lc_chunk_source *src;
        file_outcome outcome = open_source(s, ld, in.path, in.key_at, &src);
        bool initial = in.flags & LC_ITEM_INITIAL;
        free(in.path);
        if (src) {
            lc_source_item out = {
                .source = src, .flags = in.flags & LC_ITEM_INITIAL, .seq = in.seq};
            if (lc_stage_emit(s, &out, meter) != 0) {
                lc_chunk_source_unref(src);
                if (initial)
                    initial_file_done(ld, FILE_UNREADABLE);
                return;
            }
        }
        if (initial)
            initial_file_done(ld, outcome);
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
    lc_cond_destroy(&ld->cond);
    lc_mutex_destroy(&ld->mu);
}

static void loader_flush(lc_stage *s, lc_stage_metrics *m)
{
    loader *ld = s->priv;
    lc_metrics_add_count(m, "sources", atomic_exchange(&ld->n_sources, 0));
    lc_metrics_add_count(m, "tar_sources", atomic_exchange(&ld->n_tars, 0));
    lc_metrics_add_count(m, "chunks", atomic_exchange(&ld->n_chunks, 0));
    uint64_t skipped = atomic_exchange(&ld->n_skipped, 0);
    lc_metrics_add_count(m, "skipped_files", skipped);
    char last[LC_METRIC_TEXT_MAX];
    lc_mutex_lock(&ld->mu);
    snprintf(last, sizeof last, "%s", ld->last_skipped);
    lc_mutex_unlock(&ld->mu);
    if (last[0])
        lc_metrics_set_text(m, "last_skipped", last);
    lc_metrics_add_bad(m, "unreadable_files", atomic_exchange(&ld->n_unreadable, 0));
    lc_metrics_add_count(m, "raw_members", atomic_exchange(&ld->n_raw, 0));
    lc_metrics_add_count(m, "skipped_members", atomic_exchange(&ld->n_skipped_members, 0));
    lc_metrics_add_bad(m, "bad_empty_archives", atomic_exchange(&ld->n_empty, 0));
    lc_metrics_add_bad(m, "truncated_archives", atomic_exchange(&ld->n_truncated, 0));
    /* Benign tar entries: work, not bad input. */
    lc_metrics_add_count(m, "tar_directories", atomic_exchange(&ld->n_tar_dirs, 0));
    lc_metrics_add_count(m, "tar_pax_headers", atomic_exchange(&ld->n_tar_pax, 0));
    lc_metrics_add_count(m, "tar_long_names", atomic_exchange(&ld->n_tar_long_names, 0));
    lc_metrics_add_count(m, "tar_long_links", atomic_exchange(&ld->n_tar_long_links, 0));
    lc_metrics_add_count(m, "tar_other_entries", atomic_exchange(&ld->n_tar_other, 0));
}

static const lc_metric_info loader_metrics[] = {
    {"sources", "sources", LC_SHOW_TOTAL, 0, "sources", "src"},
    {"chunks", "chunks", LC_SHOW_TOTAL, 0, "chunks"},
    {"skipped_files", "files", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "files skipped",
     "skipped"},
    {"last_skipped", "", LC_SHOW_TEXT, LC_SHOW_DIM, "last"},
    {"tar_sources", "archives"},
    {"unreadable_files", "files"},
    {"raw_members", "members"},
    {"skipped_members", "members"},
    {"bad_empty_archives", "archives"},
    {"truncated_archives", "archives"},
    {"tar_directories", "entries"},
    {"tar_pax_headers", "entries"},
    {"tar_long_names", "entries"},
    {"tar_long_links", "entries"},
    {"tar_other_entries", "entries"},
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
