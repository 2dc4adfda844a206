#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

const char *lc_file_kind(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG:
        return "a regular file";
    case S_IFDIR:
        return "a directory";
    case S_IFIFO:
        return "a named pipe (FIFO)";
    case S_IFSOCK:
        return "a socket";
    case S_IFCHR:
        return "a character device";
    case S_IFBLK:
        return "a block device";
    case S_IFLNK:
        return "a symbolic link";
    default:
        return "not a regular file";
    }
}

int lc_open_regular(const char *path, struct stat *st, lc_error *err)
{
    /* O_NONBLOCK: opening a FIFO for reading returns at once instead of
     * waiting for a writer; a device is not waited on either. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        return lc_error_set(err, -e, "%s: cannot open: %s", path, strerror(e));
    }
    struct stat own;
    struct stat *s = st ? st : &own;
    if (fstat(fd, s) != 0) {
        int e = errno;
        close(fd);
        return lc_error_set(err, -e, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(s->st_mode)) {
        close(fd);
        return lc_error_set(err, LC_ENOTREG, "%s: is %s, not a regular file (skipped)", path,
                            lc_file_kind(s->st_mode));
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

FILE *lc_open_append(const char *path, lc_error *err)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0644);
    if (fd < 0) {
        int e = errno;
        if (e == ENXIO) /* a FIFO nobody reads */
            lc_error_set(err, -e, "%s: a named pipe with no reader (start its reader first)", path);
        else
            lc_error_set(err, -e, "%s: %s", path, strerror(e));
        return NULL;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK); /* a slow reader slows the log */
    FILE *f = fdopen(fd, "a");
    if (!f) {
        int e = errno;
        close(fd);
        lc_error_set(err, -e, "%s: %s", path, strerror(e));
    }
    return f;
}
