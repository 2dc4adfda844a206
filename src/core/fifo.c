/*
 * fifo: see fifo.h.
 */
#include "core/fifo.h"

#include "core/lockfile.h"
#include "core/rng.h"

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
                                "path: %s exists and is not a named pipe (remove it, choose "
                                "another path, or set regular_file: true to write a file)",
                                path);
        if (regular_file && !S_ISREG(st.st_mode))
            return lc_error_set(err, code ? code : -EEXIST,
                                "path: %s exists and is not a regular file (regular_file is "
                                "set: remove it, or point path elsewhere)",
                                path);
        return 0;
    }
    if (errno != ENOENT)
        return lc_error_set(err, code ? code : -errno, "path: cannot use %s: %s", path,
                            strerror(errno));
    if (!create)
        return lc_error_set(err, code ? code : -ENOENT,
                            "path: %s does not exist (create it%s, or set create: true)", path,
                            regular_file ? "" : " with mkfifo");
    char *dir = lc_xstrdup(path);
    char *slash = strrchr(dir, '/');
    const char *parent = slash ? (slash == dir ? "/" : (*slash = '\0', dir)) : ".";
    int rc = 0;
    struct stat pst;
    if (stat(parent, &pst) != 0 && errno == ENOENT) /* what to do: make it */
        rc = lc_error_set(err, code ? code : -ENOENT,
                          "path: cannot make %s: the folder %s does not exist (make it first: "
                          "mkdir -p %s; or choose a path in a folder that exists)",
                          path, parent, parent);
    else if (make && !regular_file && mkfifo(path, 0600) != 0 && errno != EEXIST)
        rc = lc_error_set(err, code ? code : -errno, "path: cannot create the named pipe %s: %s",
                          path, strerror(errno));
    else if (!make && access(parent, W_OK | X_OK) != 0) /* would we be allowed to make it? */
        rc = lc_error_set(err, code ? code : -errno, "path: cannot make %s: %s: %s", path, parent,
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

void lc_fifo_drain_sigpipe(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&set, NULL, &zero) == SIGPIPE) {
    }
}

int lc_fifo_writer_lock(const char *path, lc_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return lc_error_set(err, -errno, "%s: %s", path, strerror(errno));
    /* Named by the pipe's device, inode and canonical path: a pipe deleted
     * while its writer runs frees its inode for the next file made, so the
     * inode alone would make a new pipe elsewhere look taken. */
    char *real = realpath(path, NULL);
    const char *canonical = real ? real : path;
    uint64_t h = lc_fnv1a(canonical, strlen(canonical));
    free(real);
    const char *dir = getenv("XDG_RUNTIME_DIR");
    char lock[512];
    snprintf(lock, sizeof lock, "%s/lcmon-writer-%llx-%llx-%016llx.lock",
             dir && *dir ? dir : "/tmp", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino, (unsigned long long)h);
    long pid;
    int fd = lc_lockfile_take(lock, 0644, &pid);
    if (fd < 0 && fd != -EWOULDBLOCK && dir && *dir) {
        /* a runtime directory we may not write: /tmp */
        snprintf(lock, sizeof lock, "/tmp/lcmon-writer-%llx-%llx-%016llx.lock",
                 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                 (unsigned long long)h);
        fd = lc_lockfile_take(lock, 0644, &pid);
    }
    if (fd == -EWOULDBLOCK) {
        if (pid > 0)
            return lc_error_set(err, -EBUSY,
                                "path: another lcmon (process %ld) already writes to %s: a pipe "
                                "has one writer (stop that one, or give this one another path)",
                                pid, path);
        return lc_error_set(err, -EBUSY,
                            "path: another lcmon already writes to %s: a pipe has one writer "
                            "(stop that one, or give this one another path)",
                            path);
    }
    if (fd < 0) /* no lock to be had: write unguarded, as before */
        return -1;
    return fd;
}
