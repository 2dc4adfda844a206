/*
 * dirwatch: an inotify instance watching directories, and what its events
 * say, for the stages that find data files (file_path_provider, and
 * parquet_game_source through stages/epoch_files.h): a file closed after
 * writing (IN_CLOSE_WRITE) or moved in (IN_MOVED_TO: a writer that renames
 * its finished file into place), a directory created or moved in (the
 * caller decides whether to watch and scan it), a watched directory that
 * was itself deleted or moved away, and the kernel's queue overflowing.
 * Names starting with '.' are ignored, as core/dirwalk.h ignores them.
 *
 * One thread uses a watcher. It keeps the path, device and inode of every
 * watch, so that an event names whole paths and a directory reached a
 * second way (a link back up the tree) is known as watched.
 */
#ifndef LC_CORE_DIRWATCH_H
#define LC_CORE_DIRWATCH_H

#include "core/error.h"

#include <stdbool.h>
#include <stddef.h>

struct stat;

typedef struct lc_dirwatch lc_dirwatch;

/* An inotify instance with no watch yet; NULL, with err saying why (raise
 * fs.inotify.max_user_instances). */
lc_dirwatch *lc_dirwatch_new(lc_error *err);
void lc_dirwatch_free(lc_dirwatch *w);
/* The descriptor to poll for events (readable when some are waiting). */
int lc_dirwatch_fd(const lc_dirwatch *w);
/* Directories watched. */
size_t lc_dirwatch_dirs(const lc_dirwatch *w);

/* Watch one directory (not below it). 0, or a negated errno. A directory
 * watched already keeps the path it was watched under while that path
 * still leads to it (dir is a second way in: a link, a bind mount); else
 * (it was moved) it is known by dir from now on. */
int lc_dirwatch_add(lc_dirwatch *w, const char *dir);
/* The path of the watched directory with st's device and inode, while that
 * path still leads to it; else NULL. For core/dirwalk.h's `known`: a walk
 * does not list a watched directory again through another way in. */
const char *lc_dirwatch_known(const lc_dirwatch *w, const struct stat *st);
/* Watch dir and every directory below it, passing each file found to
 * found(ctx, path) (path the callee's; found may be NULL). A directory
 * that cannot be watched is logged; one watched already is not walked
 * again (lc_dirwatch_known). Returns the files found. */
size_t lc_dirwatch_add_tree(lc_dirwatch *w, const char *dir, void (*found)(void *ctx, char *path),
                            void *ctx);

typedef struct lc_dirwatch_ops {
    /* A file closed after writing or moved in; path the callee's. false
     * stops the reading (the output closed). */
    bool (*file)(void *ctx, char *path);
    /* A directory created or moved in; path the callee's (watch and scan
     * it). false stops the reading. May be NULL (the path is freed). */
    bool (*dir)(void *ctx, char *path);
    /* A watched directory was itself deleted or moved away. May be NULL. */
    void (*gone)(void *ctx, const char *dir);
    /* The kernel's queue overflowed: events were lost. May be NULL. */
    void (*overflow)(void *ctx);
} lc_dirwatch_ops;

/* Read the events waiting (never blocks) and pass each on. Returns the
 * events read, or -1 when a callback returned false. */
long lc_dirwatch_read(lc_dirwatch *w, const lc_dirwatch_ops *ops, void *ctx);

#endif
