/*
 * Named pipes as a sink sees them (core/fifo.h): the path checks and what
 * they tell the user; a pipe is made when asked; opening without a reader
 * says so and does not block; with a reader it opens, grows its buffer and
 * counts the unread bytes; bytes left unread by an earlier writer, and a
 * path that is not a pipe, are told apart.
 */
#include "check.h"
#include "testutil.h"

#include "core/fifo.h"

#include <fcntl.h>
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
    /* An earlier writer's bytes still unread: told apart. */
    close(fd);
    CHECK_EQ_INT(lc_fifo_try_open(path, true, &fd), LC_FIFO_UNREAD);
    char buf[8];
    CHECK_EQ_INT(read(rd, buf, sizeof buf), 5);
    CHECK_EQ_INT(lc_fifo_try_open(path, true, &fd), LC_FIFO_OPENED);
    close(fd);
    close(rd);
    /* A regular file where the pipe was. */
    unlink(path);
    tu_write_file(path, "x", 1);
    CHECK_EQ_INT(lc_fifo_try_open(path, true, &fd), LC_FIFO_NOT_FIFO);
    CHECK_EQ_INT(fd, -1);
}

int main(void)
{
    test_checks();
    test_open();
    return check_finish();
}
