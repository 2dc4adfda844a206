/*
 * dirwatch: the files that appear in a directory tree, as inotify reports
 * them: a file closed after writing (IN_CLOSE_WRITE) or moved in
 * (IN_MOVED_TO: a writer that renames its finished file into place), and
 * every file of a directory created or moved in, which is watched from then
 * on. Names starting with '.' are ignored, as core/dirwalk.h ignores them.
 * A file is reported when a close after writing or a rename says it is
 * whole; only the files already in a new directory when its watch begins
 * are reported as found (one may still be being written: its close then
 * reports it again). file_path_provider, which also holds back files a
 * scan finds still changing, keeps its own watch.
 *
 * One thread uses a watcher; lc_dirwatch_wait returns at least every
 * timeout so that the caller can look at its stop flag.
 */
#ifndef LC_CORE_DIRWATCH_H
#define LC_CORE_DIRWATCH_H

#include "core/error.h"

#include <stdbool.h>

typedef struct lc_dirwatch lc_dirwatch;

/* Watch dir and every directory under it; NULL, with err saying why (no
 * inotify instance to be had: raise fs.inotify.max_user_instances). A
 * directory that cannot be watched is logged and left out. */
lc_dirwatch *lc_dirwatch_new(const char *dir, lc_error *err);
void lc_dirwatch_free(lc_dirwatch *w);
/* Directories watched. */
size_t lc_dirwatch_dirs(const lc_dirwatch *w);

/* Wait up to timeout_ms for events, then call found(ctx, path) for each
 * new file (path malloc'd, the callee's). Returns the files found, or -1
 * when polling failed (errno). *overflowed is set when the kernel's queue
 * overflowed: files written meanwhile may have been missed (a caller that
 * lists the tree again catches up). */
int lc_dirwatch_wait(lc_dirwatch *w, int timeout_ms, void (*found)(void *ctx, char *path),
                     void *ctx, bool *overflowed);

#endif
