/*
 * path_provider: what the files of the file_path_provider stage share, and
 * no other file includes: its settings and state, the scan
 * (path_provider_scan.c) and the one call it makes back into the stage
 * (file_path_provider.c, which tells the whole design). All of it runs on
 * the stage's one worker thread; the counters and gauges are atomics the
 * metrics read.
 */
#ifndef LC_STAGES_PATH_PROVIDER_H
#define LC_STAGES_PATH_PROVIDER_H

#include "core/dirwatch.h"
#include "stages/stage.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

typedef struct provider_config {
    char *directory;
    bool watch;
    double settle_seconds;
    bool follow_symlinks;
    char defaulted[64]; /* the variable whose default names the directory, or "" */
} provider_config;

typedef struct pending_file {
    char *path;
    off_t size;
    struct timespec mtime;
    double quiet_since; /* monotonic seconds when last seen changed */
} pending_file;

typedef struct provider {
    lc_dirwatch *watch; /* NULL with watch: false */
    int wake_fd;
    pending_file *pending;
    size_t n_pending, cap_pending;
    uint64_t seq;
    uint32_t emit_flags; /* LC_ITEM_INITIAL while the initial scan settles */
    atomic_uint_fast64_t n_found, n_initial, n_watch_events, n_scan_errors, n_overflows;
    /* Entries skipped: not a regular file (a FIFO, a socket, a device; a
     * link without follow_symlinks), a directory reached a second time (a
     * link loop). Each path is logged once (skip_warned, a ring). */
    atomic_uint_fast64_t n_not_regular, n_dir_again;
    char *skip_warned[32];
    unsigned skip_next;
    atomic_int_fast64_t g_dirs, g_pending;
    atomic_bool scan_done;
    atomic_int warn;  /* the warning state: WARN_* (file_path_provider.c) */
    double warned_at; /* when it was last logged; worker thread */
    /* The data folder watched (with watch on): a handle (O_PATH), its
     * device and inode, when its path was last checked (a symbolic link
     * re-pointed leads elsewhere); while the folder found at that path
     * instead is scanned, the one before (its files are not read again). */
    int root_fd, prev_root_fd;
    dev_t root_dev;
    ino_t root_ino;
    double root_checked;
    size_t n_same_as_before;
} provider;

/* Scan the tree at dir (watching each directory before listing it), sort
 * its files by key and offer each (lc_path_provider_offer) with flags;
 * without watching, the initial scan also sets the run's progress totals.
 * False on a stop or a closed output. */
bool lc_path_provider_scan(provider *f, lc_stage *s, const char *dir, uint32_t flags,
                           lc_load_meter *meter);

/* An entry that is not a regular file (a FIFO, a socket, a device; a link
 * without follow_symlinks): counted, and logged once in a while. */
void lc_path_provider_skip_other(provider *f, const char *path, mode_t mode);

/* A file found by a scan (file_path_provider.c): emit now if it has been
 * quiet long enough (or it cannot be watched), else hold it as pending.
 * Takes ownership of path; false when the output is closed. */
bool lc_path_provider_offer(provider *f, lc_stage *s, char *path, uint32_t flags,
                            lc_load_meter *meter);

/* dir, with the working directory a relative one is under, for messages. */
void lc_path_provider_describe_dir(const char *dir, char *buf, size_t size);

/* The data folder's path leads to something not a folder: an error saying
 * what it is, or for a game file the folder that holds it (the caller names
 * the setting). */
int lc_path_provider_not_a_folder(const char *dir, mode_t mode, lc_error *err);

#endif
