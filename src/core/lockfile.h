/*
 * lockfile: a file whose flock() says which process owns something (the
 * writer's end of a pipe, a socket path), holding that process's pid so
 * that whoever is turned away can be told by whom.
 *
 * flock() is tied to the open file, so the lock goes when its holder exits
 * or is killed, however it ends: a lock file left behind is free to take.
 */
#ifndef LC_CORE_LOCKFILE_H
#define LC_CORE_LOCKFILE_H

#include <stdbool.h>
#include <sys/types.h>

/* Take the lock file at path, created with `mode` if missing (never through
 * a symlink), and write our pid into it. Returns its fd (keep it open to
 * hold the lock); -EWOULDBLOCK when another process holds it, with *holder
 * set to the pid it wrote (0 when it wrote none); another negative errno
 * when it cannot be opened or locked. A file replaced or removed while we
 * waited for it is opened again, so that two processes never both hold
 * "the" lock of one path. Until it is given back, a stop cut short
 * (core/exit.h) removes the file as lc_lockfile_release would. */
int lc_lockfile_take(const char *path, mode_t mode, long *holder);

/* Give the lock back. With `remove`, the file goes first if it is still the
 * one we locked (removed while locked: nobody can take the old one in
 * between). fd < 0 is fine. */
void lc_lockfile_release(int fd, const char *path, bool remove);

#endif
