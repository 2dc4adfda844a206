/*
 * fifo: the named pipe a sink writes batches to, as the operating system
 * sees it: checking or making the path, opening it for writing without
 * blocking while nobody reads, growing its buffer, asking how much of what
 * was written is still unread, and swallowing the SIGPIPE of a write to a
 * pipe whose reader left. fifo_writer (stages/) decides what to do with
 * each outcome; this file only says what happened.
 */
#ifndef LC_CORE_FIFO_H
#define LC_CORE_FIFO_H

#include "core/error.h"

#include <stdbool.h>
#include <stdint.h>

/* Check `path` for a sink: a named pipe, or with regular_file a regular
 * file; when absent and `create` is set, make the pipe (make) or check that
 * its directory would let us (not make: --check-config). Errors name the
 * path and say what to do (the caller says which setting it is), with
 * `code` (or -errno). */
int lc_fifo_check(const char *path, bool regular_file, bool create, bool make, int code,
                  lc_error *err);

/*
 * One writer a pipe: the writer's lock of the file at path (it must exist),
 * a lock file named after the file's device and inode alone, so that every
 * name of one pipe (a hard link, a bind mount, a symlink) finds the same
 * lock, in $XDG_RUNTIME_DIR or /tmp, holding the writer's pid. While the
 * lock is held, `pin` (an O_PATH descriptor of the pipe) keeps its inode
 * from being freed and given to another file that would then look taken.
 * The lock file is removed when given back (a writer killed leaves its
 * file, free to take: flock goes with the process).
 */
typedef struct lc_fifo_lock {
    int fd, pin; /* the lock file's and the pipe's; -1: none */
    char *file;  /* the lock file's path */
    uint64_t dev, ino;
} lc_fifo_lock;
#define LC_FIFO_LOCK_NONE                                                                          \
    {                                                                                              \
        .fd = -1, .pin = -1                                                                        \
    }

/* Take it into *lock: 0; -EBUSY with err naming the process that holds it;
 * -1 (err untouched, nothing held) when no lock can be had at all (a file
 * system without locks): the caller writes unguarded. */
int lc_fifo_writer_lock(const char *path, lc_fifo_lock *lock, lc_error *err);
/* The lock is held and is still that of the file at path (not one made
 * again at that path since). */
bool lc_fifo_writer_locked(const lc_fifo_lock *lock, const char *path);
/* Give it back, removing its file. Idempotent. */
void lc_fifo_writer_unlock(lc_fifo_lock *lock);

typedef enum lc_fifo_open {
    LC_FIFO_OPENED,    /* a reader is there: *fd is the write end */
    LC_FIFO_NO_READER, /* nobody reads yet (or EINTR): try again later */
    LC_FIFO_UNREAD,    /* an earlier writer's bytes are still in the pipe */
    LC_FIFO_NOT_FIFO,  /* the path is something else now */
    LC_FIFO_MADE,      /* the pipe was missing and was made: try again */
    LC_FIFO_NOT_MADE,  /* it was missing and could not be made (errno set) */
    LC_FIFO_FAILED     /* it could not be opened (errno set) */
} lc_fifo_open;

/* One attempt to open the pipe for writing without blocking (O_NONBLOCK
 * fails with ENXIO while nobody reads); with `create`, a missing pipe is
 * made (mode 0600). */
lc_fifo_open lc_fifo_try_open(const char *path, bool create, int *fd);
/* Ask for a buffer of `want` bytes (refused above the system's limit);
 * the capacity the pipe has (want when it cannot say). */
uint64_t lc_fifo_grow(int fd, int want);
/* Bytes written and not yet read into *n; false when the pipe cannot say
 * (not a pipe, or an error). */
bool lc_fifo_unread(int fd, uint64_t *n);
/* The bytes unread in the pipe at path, asked from the reading side: an
 * open for reading that neither a reader's end of file nor its poll can
 * see (an open for writing, even one closed at once, keeps a reader that
 * drained the pipe from its end of file, and shows the readers that open
 * after it a hang-up). False when path is no pipe or cannot be opened. */
bool lc_fifo_unread_at(const char *path, uint64_t *n);
/* A writer that found an earlier writer's bytes unread in the pipe at path
 * asks, every so often, whether the reader has drained them: true once
 * `empty` probes in a row (lc_fifo_unread_at) found the pipe empty, or
 * when path is no pipe now (the open then says what). *probes counts from
 * 1 (set it to 1 when the bytes are found) and is 0 once drained. The
 * reader's end of file is the read after the last byte; a writer that
 * opened before it would take it away (the reader would take the new
 * run's bytes for the rest of a torn batch), hence probes that do not
 * open for writing, and more than one. lcmon's reader also reads no
 * further than what was unread when it saw the earlier writer gone. */
bool lc_fifo_drained(const char *path, int *probes, int empty);
/* A SIGPIPE raised by this thread's failed write (it is blocked here) is
 * consumed, so that it never reaches anyone. */
void lc_fifo_drain_sigpipe(void);

#endif
