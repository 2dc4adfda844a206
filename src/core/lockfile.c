/*
 * lockfile: see lockfile.h.
 */
#include "core/lockfile.h"

#include "core/exit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The open file is still the one at path (nobody removed or replaced it
 * since we opened it). */
static bool same_file(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

int lc_lockfile_take(const char *path, mode_t mode, long *holder)
{
    *holder = 0;
    /* A holder that removes the file at exit (lc_lockfile_release) may do
     * so between our open and our flock: the lock we then get is of a file
     * nobody else will look at, so open the path again. A few turns are
     * plenty; more means someone is playing with the file. */
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
            return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            char buf[32] = {0};
            ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
            long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
            close(fd);
            if (e == EWOULDBLOCK)
                *holder = pid > 0 ? pid : 0;
            return -e;
        }
        if (!same_file(fd, path)) {
            close(fd);
            continue;
        }
        char pid[32];
        int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
            /* the pid is for the message of who comes next only */
        }
        lc_exit_remove_at_exit(path); /* a stop cut short removes it as well */
        return fd;
    }
    return -EAGAIN;
}

void lc_lockfile_release(int fd, const char *path, bool remove)
{
    if (fd < 0)
        return;
    lc_exit_forget(path);
    if (remove && same_file(fd, path))
        unlink(path);
    close(fd);
}
