/*
 * sockfile: see sockfile.h.
 */
#include "monitor/sockfile.h"

#include "core/lockfile.h"
#include "core/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>

/* The socket's directory must be one nobody else can write to, or one with
 * the sticky bit (as /tmp has): otherwise another user could replace the
 * socket with theirs and take the requests of our clients. Its owner must be
 * us or root either way, since the sticky bit does not hold back the owner. */
static int check_directory(const char *path, lc_error *err)
{
    char *copy = lc_xstrdup(path);
    char *slash = strrchr(copy, '/');
    const char *dir = !slash ? "." : slash == copy ? "/" : (*slash = '\0', copy);
    struct stat st;
    int rc = 0;
    if (stat(dir, &st) != 0) {
        rc = lc_error_set(err, -errno, "%s: the socket's directory %s: %s", path, dir,
                          strerror(errno));
    } else if ((st.st_uid != getuid() && st.st_uid != 0) ||
               (!(st.st_mode & S_ISVTX) && (st.st_mode & (S_IWGRP | S_IWOTH)))) {
        rc = lc_error_set(err, -EPERM,
                          "%s: other users can write to the directory %s (mode %04o, owner "
                          "uid %u), so they could replace the socket; choose a directory only "
                          "you can write to, or one of yours or root's with the sticky bit "
                          "such as /tmp",
                          path, dir, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
    }
    free(copy);
    return rc;
}

/* Whether something accepts connections on the socket at path: 1 yes (or
 * its backlog is full, which only a listener has), 0 nobody listens, or a
 * negative errno when we cannot tell. Never blocks: a stuck listener must
 * not hang our start. */
static int probe_listener(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    int rc = connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0 ? 1 : -errno;
    close(fd);
    if (rc == -EAGAIN || rc == -EINPROGRESS)
        return 1;
    return rc == -ECONNREFUSED ? 0 : rc;
}

/* Ask the kernel (sock_diag, what `ss -x` uses) whether a live socket is
 * bound to the file `st` describes, listening or not. 1 yes (*sock_ino: the
 * socket's own inode, to find its process by), 0 no, or a negative errno
 * when the kernel cannot say (no unix_diag in this kernel). */
static int bound_socket(const struct stat *st, unsigned long *sock_ino)
{
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0)
        return -errno;
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct {
        struct nlmsghdr nlh;
        struct unix_diag_req req;
    } msg = {
        .nlh = {.nlmsg_len = sizeof msg,
                .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
                .nlmsg_seq = 1},
        .req = {.sdiag_family = AF_UNIX, .udiag_states = ~0u, .udiag_show = UDIAG_SHOW_VFS},
    };
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, &msg, sizeof msg, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    int found = 0;
    for (;;) {
        long buf[8192 / sizeof(long)]; /* aligned for the headers */
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            found = n < 0 ? -errno : -EPROTO;
            break;
        }
        int len = (int)n;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, len);
             h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_type == NLMSG_DONE) {
                close(fd);
                return found;
            }
            if (h->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                close(fd);
                return e->error ? e->error : -EPROTO;
            }
            const struct unix_diag_msg *m = NLMSG_DATA(h);
            int alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
            for (const struct rtattr *a = (const struct rtattr *)(m + 1); RTA_OK(a, alen);
                 a = RTA_NEXT(a, alen)) {
                if (a->rta_type != UNIX_DIAG_VFS || RTA_PAYLOAD(a) < sizeof(struct unix_diag_vfs))
                    continue;
                const struct unix_diag_vfs *v = RTA_DATA(a);
                /* The kernel gives its own device number: major in the top
                 * 12 bits, minor in the low 20. */
                dev_t dev = makedev(v->udiag_vfs_dev >> 20, v->udiag_vfs_dev & 0xfffff);
                if (v->udiag_vfs_ino == st->st_ino && dev == st->st_dev && !found) {
                    found = 1;
                    *sock_ino = m->udiag_ino;
                }
            }
        }
    }
    close(fd);
    return found;
}

/* " (pid N, COMM)" of a process, or " (pid N)" if it cannot be looked at;
 * "" for none (pid 0). */
static void process_name(long pid, char *who, size_t size)
{
    who[0] = '\0';
    if (pid <= 0)
        return;
    char comm[32] = "", path[64];
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    FILE *c = fopen(path, "re");
    if (c) {
        if (fgets(comm, sizeof comm, c))
            comm[strcspn(comm, "\n")] = '\0';
        fclose(c);
    }
    snprintf(who, size, comm[0] ? " (pid %ld, %s)" : " (pid %ld)", pid, comm);
}

/* " (pid N, COMM)" of a process that has the socket with inode sock_ino
 * open, or "" when none of those we may look into has. */
static void socket_owner(unsigned long sock_ino, char *who, size_t size)
{
    who[0] = '\0';
    char want[64];
    snprintf(want, sizeof want, "socket:[%lu]", sock_ino);
    DIR *proc = opendir("/proc");
    if (!proc)
        return;
    struct dirent *p;
    while (!who[0] && (p = readdir(proc))) {
        char *end;
        long pid = strtol(p->d_name, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid())
            continue;
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
        DIR *fds = opendir(dir);
        if (!fds)
            continue; /* gone, or another user's */
        struct dirent *d;
        while ((d = readdir(fds))) {
            char link[320], target[64];
            snprintf(link, sizeof link, "%s/%s", dir, d->d_name);
            ssize_t n = readlink(link, target, sizeof target - 1);
            if (n <= 0)
                continue;
            target[n] = '\0';
            if (strcmp(target, want) != 0)
                continue;
            process_name(pid, who, size);
            break;
        }
        closedir(fds);
    }
    closedir(proc);
}

/* Who holds the socket file st describes: LIVE_LISTENING (something accepts
 * connections), LIVE_BOUND (a running process has it bound, not listening
 * yet), STALE, or a negative errno when a connect cannot tell; *who names
 * the process of a live one when it can be found (else ""). */
enum { STALE = 0, LIVE_LISTENING = 1, LIVE_BOUND = 2 };
static int socket_state(const char *path, const struct stat *st, char *who, size_t size)
{
    unsigned long sock_ino = 0;
    who[0] = '\0';
    int live = probe_listener(path);
    if (live == 1) {
        if (bound_socket(st, &sock_ino) == 1)
            socket_owner(sock_ino, who, size);
        return LIVE_LISTENING;
    }
    if (live < 0)
        return live;
    /* Nobody accepts connections; a process may still have it bound (and
     * be about to listen): that is not a stale socket. */
    int held = bound_socket(st, &sock_ino);
    if (held == 1) {
        socket_owner(sock_ino, who, size);
        return LIVE_BOUND;
    }
    if (held < 0)
        LC_INFO("%s: the kernel cannot say whether a process holds this socket (%s); nobody "
                "accepts connections on it, so it is taken as stale",
                path, strerror(-held));
    return STALE;
}

/* The path is ours to bind once the lock is held: look at what is there. */
static int clear_path(lc_sockfile *f, lc_error *err)
{
    const char *path = f->path;
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : lc_error_set(err, -errno, "%s: %s", path, strerror(errno));
    if (!S_ISSOCK(st.st_mode))
        return lc_error_set(
            err, -EEXIST, "%s exists and is not a socket (remove it or choose another path)", path);
    char who[128];
    int state = socket_state(path, &st, who, sizeof who);
    if (state == LIVE_LISTENING)
        return lc_error_set(err, -EADDRINUSE,
                            "%s: a program is already listening on this socket%s; stop it, or "
                            "choose another path",
                            path, who[0] ? who : " (another lcmon?)");
    if (state < 0)
        return lc_error_set(err, state,
                            "%s: cannot connect to the socket there to tell whether it is live: "
                            "%s (remove it if nothing uses it, or choose another path)",
                            path, strerror(-state));
    if (state == LIVE_BOUND)
        return lc_error_set(err, -EADDRINUSE,
                            "%s: a running process%s has this socket bound, though it does not "
                            "accept connections (yet): it is not stale, so it is left alone; "
                            "stop that process, or choose another path",
                            path, who);
    LC_INFO("replacing the stale socket %s", path);
    if (unlink(path) != 0)
        return lc_error_set(err, -errno, "%s: cannot remove the stale socket: %s", path,
                            strerror(errno));
    return 0;
}

/* Whether `at` is free for our bind: nothing there, or a stale socket (one
 * left by a run that died between its bind and its rename: removed). A
 * file of someone else's, or another program's live socket, is left
 * alone (said once, at info level). */
static bool staging_free(const char *at)
{
    struct stat st;
    if (lstat(at, &st) != 0)
        return errno == ENOENT;
    char who[128];
    if (!S_ISSOCK(st.st_mode)) {
        LC_INFO("%s exists and is not a socket: left alone (lcmon binds its socket under another "
                "name first)",
                at);
        return false;
    }
    int state = socket_state(at, &st, who, sizeof who);
    if (state != STALE) {
        LC_INFO("%s is a socket %s%s: left alone (lcmon binds its socket under another name "
                "first)",
                at, state < 0 ? "that cannot be probed" : "in use", who);
        return false;
    }
    return unlink(at) == 0;
}

void lc_sockfile_staging(const lc_sockfile *f, char *at, size_t size)
{
    /* PATH.new, else PATH.PID.new, else PATH itself (cleared by the claim;
     * the only cost: a client may find it a moment before it listens). */
    if (snprintf(at, size, "%s.new", f->path) < (int)size && staging_free(at))
        return;
    if (snprintf(at, size, "%s.%ld.new", f->path, (long)getpid()) < (int)size && staging_free(at))
        return;
    snprintf(at, size, "%s", f->path);
}

int lc_sockfile_claim(lc_sockfile *f, const char *path, lc_error *err)
{
    memset(f, 0, sizeof *f);
    f->lock_fd = -1;
    int rc = check_directory(path, err);
    if (rc != 0)
        return rc;
    f->path = lc_xstrdup(path);
    f->lock_path = lc_xasprintf("%s.lock", path);
    long holder;
    f->lock_fd = lc_lockfile_take(f->lock_path, 0600, &holder);
    if (f->lock_fd == -EWOULDBLOCK) {
        char who[128];
        process_name(holder, who, sizeof who);
        rc = lc_error_set(err, -EADDRINUSE,
                          "%s: the process%s that holds its lock file %s serves this socket or "
                          "is starting to; stop it, or choose another path",
                          path, who[0] ? who : " (another lcmon?)", f->lock_path);
    } else if (f->lock_fd < 0) {
        rc = lc_error_set(err, f->lock_fd,
                          "%s: cannot take the socket's lock file %s: %s (lcmon keeps it beside "
                          "the socket while it serves: choose a path in a directory you can "
                          "write to)",
                          path, f->lock_path, strerror(-f->lock_fd));
    } else {
        rc = clear_path(f, err);
    }
    if (rc != 0)
        lc_sockfile_release(f);
    return rc;
}

void lc_sockfile_bound(lc_sockfile *f, const struct stat *st)
{
    f->bound = true;
    f->dev = st->st_dev;
    f->ino = st->st_ino;
}

void lc_sockfile_release(lc_sockfile *f)
{
    if (!f->path)
        return;
    struct stat st;
    if (f->bound && lstat(f->path, &st) == 0) {
        if (S_ISSOCK(st.st_mode) && st.st_dev == f->dev && st.st_ino == f->ino)
            unlink(f->path);
        else /* someone put their own file there: theirs to remove */
            LC_INFO("%s is not the socket this lcmon made any more (it was replaced while "
                    "lcmon ran): left in place",
                    f->path);
    }
    lc_lockfile_release(f->lock_fd, f->lock_path, true);
    free(f->path);
    free(f->lock_path);
    memset(f, 0, sizeof *f);
    f->lock_fd = -1;
}
