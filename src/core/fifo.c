/*
 * fifo: see fifo.h.
 */
#include "core/fifo.h"

#include "core/lockfile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int lc_fifo_check(const char *path, bool regular_file, bool create, bool make, int code,
                  lc_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (!regular_file && !S_ISFIFO(st.st_mode))
            return lc_error_set(err, code ? code : -EEXIST,
                                "%s exists and is not a named pipe (remove it, choose "
                                "another path, or set regular_file: true to write a file)",
                                path);
        if (regular_file && !S_ISREG(st.st_mode))
            return lc_error_set(err, code ? code : -EEXIST,
                                "%s exists and is not a regular file (regular_file is "
                                "set: remove it, or point path elsewhere)",
                                path);
        return 0;
    }
    if (errno != ENOENT)
        return lc_error_set(err, code ? code : -errno, "cannot use %s: %s", path, strerror(errno));
    if (!create)
        return lc_error_set(err, code ? code : -ENOENT,
                            "%s does not exist (create it%s, or set create: true)", path,
                            regular_file ? "" : " with mkfifo");
    char *dir = lc_xstrdup(path);
    char *slash = strrchr(dir, '/');
    const char *parent = slash ? (slash == dir ? "/" : (*slash = '\0', dir)) : ".";
    int rc = 0;
    struct stat pst;
    if (stat(parent, &pst) != 0 && errno == ENOENT) /* what to do: make it */
        rc = lc_error_set(err, code ? code : -ENOENT,
                          "cannot make %s: the folder %s does not exist (make it first: "
                          "mkdir -p %s; or choose a path in a folder that exists)",
                          path, parent, parent);
    else if (make && !regular_file && mkfifo(path, 0600) != 0 && errno != EEXIST)
        rc = lc_error_set(err, code ? code : -errno, "cannot create the named pipe %s: %s", path,
                          strerror(errno));
    else if (!make && access(parent, W_OK | X_OK) != 0) /* would we be allowed to make it? */
        rc = lc_error_set(err, code ? code : -errno, "cannot make %s: %s: %s", path, parent,
                          strerror(errno));
    free(dir);
    return rc;
}

lc_fifo_open lc_fifo_try_open(const char *path, bool create, int *fd)
{
    *fd = -1;
    int f = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (f >= 0) {
        struct stat st;
        bool fifo = fstat(f, &st) == 0 && S_ISFIFO(st.st_mode);
        uint64_t unread = 0;
        if (fifo && (!lc_fifo_unread(f, &unread) || unread == 0)) {
            *fd = f;
            return LC_FIFO_OPENED;
        }
        close(f);
        return fifo ? LC_FIFO_UNREAD : LC_FIFO_NOT_FIFO;
    }
    if (errno == ENOENT && create) {
        if (mkfifo(path, 0600) == 0 || errno == EEXIST)
            return LC_FIFO_MADE;
        return LC_FIFO_NOT_MADE;
    }
    if (errno == ENXIO || errno == EINTR)
        return LC_FIFO_NO_READER;
    return LC_FIFO_FAILED;
}

uint64_t lc_fifo_grow(int fd, int want)
{
    /* Raising the buffer fails when the system limit is lower; then the
     * default serves, in more writes. */
    (void)fcntl(fd, F_SETPIPE_SZ, want);
    int size = fcntl(fd, F_GETPIPE_SZ);
    return size > 0 ? (uint64_t)size : (uint64_t)want;
}

bool lc_fifo_unread(int fd, uint64_t *n)
{
    int unread = 0;
    *n = 0;
    if (ioctl(fd, FIONREAD, &unread) != 0 || unread < 0)
        return false;
    *n = (uint64_t)unread;
    return true;
}

bool lc_fifo_unread_at(const char *path, uint64_t *n)
{
    *n = 0;
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0)
        return false;
    struct stat st;
    bool ok = fstat(f, &st) == 0 && S_ISFIFO(st.st_mode) && lc_fifo_unread(f, n);
    close(f);
    return ok;
}

bool lc_fifo_drained(const char *path, int *probes, int empty)
{
    uint64_t left;
    if (!lc_fifo_unread_at(path, &left))
        *probes = 0;
    else if (left > 0)
        *probes = 1;
    else if ((*probes)++ >= empty)
        *probes = 0;
    return *probes == 0;
}

void lc_fifo_drain_sigpipe(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&set, NULL, &zero) == SIGPIPE) {
    }
}

/* The lock file of the file st describes, in dir. */
static char *lock_name(const char *dir, const struct stat *st)
{
    return lc_xasprintf("%s/lcmon-writer-%llx-%llx.lock", dir, (unsigned long long)st->st_dev,
                        (unsigned long long)st->st_ino);
}

int lc_fifo_writer_lock(const char *path, lc_fifo_lock *lock, lc_error *err)
{
    *lock = (lc_fifo_lock)LC_FIFO_LOCK_NONE;
    /* Pinned first, then named by what the pin holds: the inode cannot
     * change hands between the two. */
    int pin = open(path, O_PATH | O_CLOEXEC);
    struct stat st;
    if (pin < 0 || fstat(pin, &st) != 0) {
        int e = errno;
        if (pin >= 0)
            close(pin);
        return lc_error_set(err, -e, "%s: %s", path, strerror(e));
    }
    const char *dir = getenv("XDG_RUNTIME_DIR");
    char *file = lock_name(dir && *dir ? dir : "/tmp", &st);
    long pid;
    int fd = lc_lockfile_take(file, 0644, &pid);
    if (fd < 0 && fd != -EWOULDBLOCK && dir && *dir) {
        /* a runtime directory we may not write: /tmp */
        free(file);
        file = lock_name("/tmp", &st);
        fd = lc_lockfile_take(file, 0644, &pid);
    }
    if (fd < 0) {
        free(file);
        close(pin);
    }
    if (fd == -EWOULDBLOCK) {
        char who[48] = "";
        if (pid > 0)
            snprintf(who, sizeof who, " (process %ld)", pid);
        return lc_error_set(err, -EBUSY,
                            "path: another lcmon%s already writes to %s, under this name or "
                            "another (a hard link, a bind mount): a pipe has one writer (stop "
                            "that one, or give this one another pipe)",
                            who, path);
    }
    if (fd < 0) /* no lock to be had: write unguarded, as before */
        return -1;
    *lock = (lc_fifo_lock){.fd = fd, .pin = pin, .file = file, .dev = st.st_dev, .ino = st.st_ino};
    return 0;
}

bool lc_fifo_writer_locked(const lc_fifo_lock *lock, const char *path)
{
    struct stat st;
    return lock->fd >= 0 && stat(path, &st) == 0 && st.st_dev == lock->dev &&
           st.st_ino == lock->ino;
}

void lc_fifo_writer_unlock(lc_fifo_lock *lock)
{
    if (lock->fd >= 0)
        lc_lockfile_release(lock->fd, lock->file, true);
    if (lock->pin >= 0)
        close(lock->pin);
    free(lock->file);
    *lock = (lc_fifo_lock)LC_FIFO_LOCK_NONE;
}
