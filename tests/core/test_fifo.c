/*
 * Named pipes as a sink sees them (core/fifo.h): the path checks and what
 * they tell the user; a pipe is made when asked; opening without a reader
 * says so and does not block; with a reader it opens, grows its buffer and
 * counts the unread bytes; bytes left unread by an earlier writer, and a
 * path that is not a pipe, are told apart; unread bytes counted from the
 * reading side disturb no reader's end of file or poll. One writer a pipe under all its
 * names (a hard link, a symlink), and no lock file left behind.
 */
#include "check.h"
#include "testutil.h"

#include "core/fifo.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_checks(void)
{
    lc_error err;
    const char *pipe_path = tu_path("out.pipe"), *file = tu_path("plain.txt");
    tu_write_file(file, "x", 1);
    /* Missing, create off: what to do. */
    lc_error_clear(&err);
    CHECK(lc_fifo_check(pipe_path, false, false, true, 0, &err) < 0);
    CHECK(tu_contains(err.msg, "does not exist (create it with mkfifo, or set create: true)"));
    /* --check-config with create on: the directory would let us. */
    CHECK_OK(lc_fifo_check(pipe_path, false, true, false, LC_ECONFIG, &err));
    struct stat st;
    CHECK(stat(pipe_path, &st) != 0); /* not made by a check */
    CHECK(lc_fifo_check("/nonexistent-dir/x.pipe", false, true, false, LC_ECONFIG, &err) ==
          LC_ECONFIG);
    CHECK(tu_contains(err.msg, "cannot make /nonexistent-dir/x.pipe"));
    /* Made at start. */
    CHECK_OK(lc_fifo_check(pipe_path, false, true, true, 0, &err));
    CHECK(stat(pipe_path, &st) == 0 && S_ISFIFO(st.st_mode));
    /* The wrong kind, either way. */
    lc_error_clear(&err);
    CHECK(lc_fifo_check(file, false, true, true, 0, &err) < 0);
    CHECK(tu_contains(err.msg, "exists and is not a named pipe"));
    lc_error_clear(&err);
    CHECK(lc_fifo_check(pipe_path, true, true, true, 0, &err) < 0);
    CHECK(tu_contains(err.msg, "exists and is not a regular file"));
    CHECK_OK(lc_fifo_check(file, true, false, true, 0, &err));
}

static void test_open(void)
{
    const char *path = tu_path("open.pipe");
    int fd = -1;
    /* Missing: made when asked, then nobody reads. */
    CHECK_EQ_INT(lc_fifo_try_open(path, false, &fd), LC_FIFO_FAILED);
    CHECK_EQ_INT(lc_fifo_try_open(path, true, &fd), LC_FIFO_MADE);
    CHECK_EQ_INT(lc_fifo_try_open(path, true, &fd), LC_FIFO_NO_READER);
    CHECK_EQ_INT(fd, -1);
    int rd = open(path, O_RDONLY | O_NONBLOCK);
    CHECK(rd >= 0);
    CHECK_EQ_INT(lc_fifo_try_open(path, true, &fd), LC_FIFO_OPENED);
    CHECK(fd >= 0);
    CHECK(lc_fifo_grow(fd, 1 << 16) >= 4096);
    uint64_t unread = 99;
    CHECK(lc_fifo_unread(fd, &unread) && unread == 0);
    CHECK_EQ_INT(write(fd, "hello", 5), 5);
    CHECK(lc_fifo_unread(fd, &unread) && unread == 5);
    /* An earlier writer's bytes still unread: told apart, and counted from
     * the reading side too. */
    close(fd);
    CHECK(lc_fifo_unread_at(path, &unread) && unread == 5);
    CHECK_EQ_INT(lc_fifo_try_open(path, true, &fd), LC_FIFO_UNREAD);
    int probes = 1;
    CHECK(!lc_fifo_drained(path, &probes, 2) && probes == 1);
    char buf[8];
    CHECK_EQ_INT(read(rd, buf, sizeof buf), 5);
    /* Drained only after two probes in a row found it empty. */
    CHECK(!lc_fifo_drained(path, &probes, 2));
    CHECK(lc_fifo_drained(path, &probes, 2) && probes == 0);
    /* Drained: the reader's next read is its end of file, and a reader that
     * opens now waits in poll (no hang-up) for the next writer. Asking from
     * the reading side changes neither; an open for writing, even closed at
     * once, would show that reader a hang-up. */
    int rd2 = open(path, O_RDONLY | O_NONBLOCK);
    CHECK(lc_fifo_unread_at(path, &unread) && unread == 0);
    struct pollfd p = {.fd = rd2, .events = POLLIN};
    CHECK_EQ_INT(poll(&p, 1, 0), 0);
    CHECK_EQ_INT(read(rd, buf, sizeof buf), 0);
    CHECK_EQ_INT(lc_fifo_try_open(path, true, &fd), LC_FIFO_OPENED);
    close(fd);
    CHECK_EQ_INT(poll(&p, 1, 0), 1);
    CHECK(p.revents & POLLHUP);
    close(rd2);
    close(rd);
    /* A regular file where the pipe was. */
    unlink(path);
    tu_write_file(path, "x", 1);
    CHECK_EQ_INT(lc_fifo_try_open(path, true, &fd), LC_FIFO_NOT_FIFO);
    CHECK_EQ_INT(fd, -1);
    CHECK(!lc_fifo_unread_at(path, &unread));
    CHECK(!lc_fifo_unread_at(tu_path("missing.pipe"), &unread));
    probes = 1; /* no pipe there now: drained, the open says what */
    CHECK(lc_fifo_drained(path, &probes, 2) && probes == 0);
}

/* The writer lock files in dir. */
static int lock_files(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        n += strncmp(e->d_name, "lcmon-writer-", 13) == 0;
    if (d)
        closedir(d);
    return n;
}

static void test_writer_lock(void)
{
    const char *dir = tu_path("locks");
    mkdir(dir, 0700);
    setenv("XDG_RUNTIME_DIR", dir, 1);
    const char *a = tu_path("a.pipe"), *b = tu_path("b.pipe"), *c = tu_path("c.pipe");
    CHECK(mkfifo(a, 0600) == 0 && link(a, b) == 0 && symlink(a, c) == 0);
    lc_fifo_lock first, second;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_fifo_writer_lock(a, &first, &err));
    CHECK(lc_fifo_writer_locked(&first, a) && lc_fifo_writer_locked(&first, b));
    /* every other name of the pipe finds the lock taken, naming us */
    const char *names[] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        lc_error_clear(&err);
        CHECK(lc_fifo_writer_lock(names[i], &second, &err) == -EBUSY);
        CHECK(second.fd < 0 && second.pin < 0);
        CHECK(tu_contains(err.msg, "another lcmon (process ") &&
              tu_contains(err.msg, "a pipe has one writer"));
    }
    /* a pipe made again at the path is another pipe */
    CHECK(unlink(a) == 0 && mkfifo(a, 0600) == 0);
    CHECK(!lc_fifo_writer_locked(&first, a) && lc_fifo_writer_locked(&first, b));
    CHECK_OK(lc_fifo_writer_lock(a, &second, &err));
    CHECK_EQ_U64(lock_files(dir), 2);
    /* given back: nothing left behind, and free to take again */
    lc_fifo_writer_unlock(&second);
    lc_fifo_writer_unlock(&first);
    lc_fifo_writer_unlock(&first); /* idempotent */
    CHECK_EQ_U64(lock_files(dir), 0);
    CHECK_OK(lc_fifo_writer_lock(b, &first, &err));
    lc_fifo_writer_unlock(&first);
    CHECK_EQ_U64(lock_files(dir), 0);
    unsetenv("XDG_RUNTIME_DIR");
}

int main(void)
{
    test_checks();
    test_writer_lock();
    test_open();
    return check_finish();
}
