"""The named pipe under a BatchReader: waiting for it to appear, and the
lock that makes its reader the only one (docs/batch-stream.md, "One reader
per pipe"): a flock on a descriptor of its own, which the reader keeps
while it opens the pipe again between runs.
"""

import errno
import fcntl
import os
import stat
import time
from typing import Callable, Optional

from .errors import NotAStream, PipeBusy

__all__ = ["wait_for_path", "lock_pipe", "lock_holder"]


def wait_for_path(path: str, wait: Optional[float],
                  watch: Optional[Callable[[float], None]]) -> bool:
    """Wait up to `wait` seconds (None: for ever) for path to appear,
    calling watch(seconds waited) meanwhile; True when it is a named pipe,
    False for a regular file. NotAStream otherwise, and when it does not
    appear in time (at once when its folder does not exist)."""
    start = time.monotonic()
    deadline = None if wait is None else start + max(0.0, wait)
    while True:
        try:
            st = os.stat(path)
            break
        except FileNotFoundError:
            if watch is not None:
                watch(time.monotonic() - start)
            folder = os.path.dirname(os.path.abspath(path))
            if deadline is not None and not os.path.isdir(folder):
                raise NotAStream(
                    "%s: its folder %s does not exist (lcmon's fifo_writer makes the pipe, "
                    "not its folder: mkdir -p %s, or check the path)"
                    % (path, folder, folder)
                ) from None
            if deadline is not None and time.monotonic() >= deadline:
                raise NotAStream(
                    "%s does not exist%s: start lcmon first (its fifo_writer creates the "
                    "pipe), check the path, or pass wait_for_pipe=SECONDS"
                    % (path, " after %.1f s" % wait if wait else "")
                ) from None
            time.sleep(0.05)
    if stat.S_ISDIR(st.st_mode):
        raise NotAStream("%s is a directory, not a named pipe or a stream file" % path)
    if not (stat.S_ISFIFO(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise NotAStream("%s is not a named pipe or a regular file" % path)
    return stat.S_ISFIFO(st.st_mode)


def lock_pipe(path: str) -> int:
    """A descriptor of the pipe that holds its exclusive lock (flock), so
    that a second reader is told instead of reading interleaved bytes;
    PipeBusy naming the holder when another process has it. On a file
    system without locks the descriptor holds none."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.ENOLCK, errno.EINVAL, errno.EOPNOTSUPP):
            return fd  # no locks on this file system: read unguarded
        st = os.fstat(fd)
        os.close(fd)
        if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        pid = lock_holder(st)
        who = "process %d" % pid if pid else "another process"
        raise PipeBusy(
            "%s is already being read by %s: a pipe has one reader (with DataLoader, "
            "use num_workers=0; for several trainer processes, run one lcmon with its own "
            "pipe per process, RANK and WORLD_SIZE set)" % (path, who)
        ) from None
    return fd


def lock_holder(st: os.stat_result) -> Optional[int]:
    """The pid holding a flock on the file of st, from /proc/locks."""
    want = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    try:
        with open("/proc/locks") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == want:
                    return int(parts[4])
    except (OSError, ValueError):
        pass
    return None
