/*
 * sockfile: the file of the monitoring socket, taken and given back so that
 * no other program's socket is ever taken over or removed.
 *
 * While lcmon serves a path it holds PATH.lock (flock, with its pid in it),
 * taken before it looks at the path: a second lcmon on the same path is
 * refused there, naming the first, even while the first has bound its
 * socket but does not listen yet. A socket already at the path is replaced
 * only when no live process holds it: one that accepts a connection, or
 * one that the kernel says is bound by a running process (listening or
 * not), is refused, naming that process when it can be found. At exit the
 * socket is removed only if the path still holds the one this lcmon bound
 * (same device and inode), then the lock file. The server binds and listens
 * under a name of its own (PATH.new) and then renames the socket to PATH,
 * so that a client never finds it before it listens, and the file taken
 * for ours is the one bound even when something else is put at the path at
 * once. A stale socket at PATH.new is removed; anything else there (a
 * stray file, another program's live socket) is left alone, and
 * PATH.PID.new is used instead (or PATH itself).
 */
#ifndef LC_MONITOR_SOCKFILE_H
#define LC_MONITOR_SOCKFILE_H

#include "core/error.h"

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct lc_sockfile {
    char *path, *lock_path;
    int lock_fd;
    bool bound; /* dev and ino are those of the socket file we made */
    dev_t dev;
    ino_t ino;
} lc_sockfile;

/* Make the path ready for bind(): refuse a directory other users could
 * write to, take the lock, refuse a live socket or anything that is not a
 * socket, remove a stale one. On failure everything is given back. */
int lc_sockfile_claim(lc_sockfile *f, const char *path, lc_error *err);
/* Where to bind before the rename to the claimed path, into at (size
 * bytes: a socket address's): PATH.new when it is free or holds a stale
 * socket (removed), else PATH.PID.new, else the path itself (when at ==
 * the path, no rename is needed). */
void lc_sockfile_staging(const lc_sockfile *f, char *at, size_t size);
/* Once the socket is at the path: remember which file is ours, as lstat
 * saw it where it was bound (before anyone else could reach it). */
void lc_sockfile_bound(lc_sockfile *f, const struct stat *st);
/* Remove the socket if it is still ours, and the lock. Idempotent. */
void lc_sockfile_release(lc_sockfile *f);

#endif
