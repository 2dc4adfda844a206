"""Read the batch stream that lcmon's fifo_writer stage writes.

The stream (format version 5; docs/batch-stream.md) is a header naming every
tensor with its dtype, shape and offset, the layout and how to expand it, and
the run that writes it, then one
frame per batch followed by the batch payload, and a DONE marker when a run
ends: "data" when a finite run is complete, "stopped" when the pipeline was
stopped or restarted. Only the standard library and numpy are needed.

    from lcmon import BatchReader

    with BatchReader("/tmp/lcmon.pipe") as reader:
        for tensors in reader:            # dict: name -> numpy array
            train_step(tensors["inputs"], tensors["policy"])

Each payload is read with readinto() straight into one preallocated,
64-byte aligned buffer, and the arrays are numpy views of that buffer: the
only copy is the one out of the pipe. The arrays therefore stay valid only
until the next batch is read (which overwrites the buffer); pass copy=True
(to the reader, or to one get()) to get arrays of your own, as upstream's
DataLoader.get_next() gives them. The last batch of a finite run may hold
fewer rows than the batch size: its arrays are sliced to the valid rows.

Reads that do not wait. reader.get() is the next batch's tensors (as
iteration gives them); reader.maybe_next(), the same as get(block=False),
returns None at once when no batch is ready, as upstream's
DataLoader.maybe_get_next() does, and get(timeout=SECONDS) returns None
when none came in that time. Neither closes the reader, nor does a timeout
of any kind: the bytes of a batch read so far are kept, and the next read
goes on from there. A batch already on its way (its first bytes in the
pipe: lcmon writes only whole batches it holds) is read to its end.

Runs. The loader may stop and start again while the trainer runs (a restart
from lcmon's screen or `lcmon ctl`, or lcmon killed and started again). By
default (restarts="wait") the reader then logs that it waits, and waits (up
to restart_timeout seconds; None: for ever) for the next run on the same
pipe, and goes on with its first batch: every batch the stopped run wrote
whole is read, a batch torn by a killed writer is dropped, nothing is read
twice. `run_id` and `runs` say which run the last batch came from, and
on_run(reader) is called when a new one begins. With restarts="end",
iteration ends when a run stops (StreamTruncated when it ends without its
DONE marker, unless tolerate_truncation). A DONE "data" marker (a finite
run is complete) always ends iteration.

One reader per pipe: the reader holds an exclusive lock on the pipe while it
is open. A second BatchReader on the same pipe raises PipeBusy, naming the
process that holds it, instead of reading interleaved bytes. For several
trainer processes, give each its own lcmon (RANK and WORLD_SIZE) and pipe.
"""

import array
import fcntl
import io
import logging
import math
import os
import select
import termios
import time
from typing import Callable, Dict, Optional

import numpy as np

from .errors import (NotAStream, PipeBusy, StreamError, StreamTruncated,  # noqa: F401
                     StreamVersionError, WriterTimeout)
from .pipe import lock_pipe, wait_for_path
# The format's names stay importable from here, as before it had a module.
from .stream_format import (ALIGN, DONE_REST, END_DATA, END_STOPPED, EXPANSIONS,  # noqa: F401
                            FLAG_LAST, FRAME_REST, FRESHNESS, HEADER_MAX, MAGIC, PREFIX,
                            PROGRESS, VERSION, Batch, Freshness, Header, Progress, TensorSpec,
                            check_version, describe, parse_header)
from .wire import RunId

__all__ = [
    "BatchReader",
    "Batch",
    "Header",
    "Progress",
    "Freshness",
    "TensorSpec",
    "StreamError",
    "StreamTruncated",
    "StreamVersionError",
    "NotAStream",
    "PipeBusy",
    "WriterTimeout",
    "parse_header",
    "MAGIC",
    "VERSION",
    "FLAG_LAST",
]

log = logging.getLogger("lcmon")

# A read that may not wait still reads a record whose first bytes are in to
# its end while its bytes keep coming (lcmon writes only whole batches it
# holds: they wait only for room in the pipe): this long at most between two.
_IN_FLIGHT = 0.5
WATCH_EVERY_MS = 200  # BatchReader(watch=...): the hook's period while a read waits


class _WouldBlock(Exception):
    """Internal: the read may not wait longer (get's block or timeout)."""


class _RunEnded(Exception):
    """Internal: the current run ended (how: 'stopped', 'eof' or 'torn')."""

    def __init__(self, how: str, detail: str):
        super().__init__(detail)
        self.how = how
        self.detail = detail


def _unread(fd: int) -> int:
    """Bytes in the pipe that fd reads, not read yet."""
    buf = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return buf[0]


class BatchReader:
    """Reads batches from a named pipe or a file written by fifo_writer.

    path: the named pipe (or a regular file holding a stream).
    copy: give each batch arrays of its own (default: views of a buffer that
        the next batch overwrites).
    timeout: seconds to wait for the writer when opening and for each piece
        of data of a run before raising TimeoutError (a stalled writer;
        default: wait as long as it takes, which is what a trainer usually
        wants).
    restarts: "wait" (default) to wait for the next run when a run stops or
        its writer dies, "end" to end iteration there.
    restart_timeout: seconds to wait for the next run before raising
        WriterTimeout (None: for ever).
    on_run: called as on_run(reader) when a new run begins (also the first).
    tolerate_truncation: with restarts="end", end iteration quietly (setting
        `truncated`) when a run ends without DONE, instead of raising
        StreamTruncated.
    resync_attempts, resync_delay: how often and how long apart to reopen a
        pipe that does not start with a stream header.
    wait_for_pipe: seconds to wait for the path to appear (a trainer that
        starts lcmon itself may open the reader first); None: for ever;
        0 (the default): it must exist now (NotAStream otherwise).
    expand: give the trainer's tensors of a packed layout (numpy, into
        buffers reused from batch to batch, like the views) instead of the
        packed ones; see lcmon.expand. A dense layout is given as it is
        either way.
    wait_for_writer: False: return without waiting for the stream header
        (the first read waits for it; maybe_next() returns None until it
        is there). `header` is None until then.
    watch: a hook for the one who runs the writer (lcmon.Loader): called as
        watch(waited) every WATCH_EVERY_MS milliseconds or more often while
        a read waits (for the pipe, a writer or data), with the seconds this
        wait has lasted, and as watch(None) when the writer went away in the
        middle of a run. It raises to end the read (lcmon.LoaderGone when the
        loader died) and may log (a stalled loader).

    Opening takes the pipe's lock and reads the stream header (so it waits
    for the writer); `header` then describes the tensors. Not thread-safe:
    one thread reads.
    """

    def __init__(
        self,
        path,
        copy: bool = False,
        tolerate_truncation: bool = False,
        timeout: Optional[float] = None,
        restarts: str = "wait",
        restart_timeout: Optional[float] = None,
        on_run: Optional[Callable[["BatchReader"], None]] = None,
        resync_attempts: int = 50,
        resync_delay: float = 0.1,
        expand: bool = False,
        wait_for_pipe: Optional[float] = 0,
        wait_for_writer: bool = True,
        watch: Optional[Callable[[Optional[float]], None]] = None,
    ):
        if restarts not in ("wait", "end"):
            raise ValueError("restarts must be 'wait' or 'end', not %r" % (restarts,))
        self.path = os.fspath(path)
        self.copy = copy
        self.tolerate_truncation = tolerate_truncation
        self.timeout = timeout
        self.restarts = restarts
        self.restart_timeout = restart_timeout
        self.on_run = on_run
        self.wait_for_pipe = wait_for_pipe
        self.watch = watch
        self.expand = expand
        self._expander = None
        if expand:
            from .expand import Expander

            self._expander = Expander(reuse=not copy)
        self.resync_attempts = max(1, resync_attempts)
        self.resync_delay = resync_delay
        self.header: Optional[Header] = None
        self.done = False  # DONE "data" was read: the stream is complete
        self.stopped = False  # iteration ended at a stopped run (restarts="end")
        self.truncated = False  # ended without DONE (tolerate_truncation)
        self.run_id = RunId(0)
        self.runs = 0  # runs seen
        self.batches_read = 0
        self.rows_read = 0
        self.bytes_read = 0
        self.headers_read = 0
        self.torn_batches = 0  # batches dropped because their writer died mid-batch
        self.progress = Progress()  # the last batch's: how far a finite run is
        self.freshness = Freshness()  # the last batch's: how old its rows' games are
        self._f: Optional[io.FileIO] = None
        self._poll = None  # a poll object on _f
        self._tail: Optional[int] = None  # bytes left of a writer seen gone (_read_some)
        self._lock_fd = -1
        self._fifo = False
        self._closed = False
        self._conn_batches = 0
        self._buffer = None
        # The last batch's whole payload (uint8, valid until the next batch).
        self.payload: Optional[np.ndarray] = None
        self._views: Dict[str, np.ndarray] = {}
        self._small = bytearray(16)
        # The record being read: its bytes before the payload and how much
        # of the payload is in, kept when a read stops before its end (a
        # read that may not wait, a timeout) so that the next one goes on.
        self._rec = bytearray()
        self._rec_pos = 0  # bytes of _rec handed out again by this read
        self._payload_got = 0
        self._call_deadline: Optional[float] = None  # this read's own limit
        self._opening: Optional[bool] = None  # waiting for a header: next_run
        self._open_wait: Optional[float] = None
        self._open_deadline: Optional[float] = None
        self._attempts = 0
        try:
            self._check_path()
            self._begin_open(self.timeout)
            if wait_for_writer:
                self._open()
        except BaseException:
            self.close()
            raise

    # -- opening ---------------------------------------------------------

    def _check_path(self) -> None:
        self._fifo = wait_for_path(self.path, self.wait_for_pipe, self.watch)

    def _take_lock(self) -> None:
        if self._lock_fd < 0 and self._fifo:
            self._lock_fd = lock_pipe(self.path)

    def _release_lock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def _open_data(self) -> None:
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        self._f = io.FileIO(fd, "rb", closefd=True)
        self._poll = None
        self._tail = None

    def _close_data(self) -> None:
        self._poll = None
        if self._f is not None:
            self._f.close()
            self._f = None

    def _begin_open(self, wait: Optional[float], next_run: bool = False) -> None:
        """From now on the reader waits for a stream header: on a pipe up to
        `wait` seconds (None: for ever) for a writer."""
        self._opening = next_run
        self._open_wait = wait
        self._open_deadline = None if wait is None else time.monotonic() + wait
        self._attempts = 0

    def _open(self) -> None:
        """Open the stream and read its header (after _begin_open). A pipe
        that starts with something else than a header is the tail of a
        writer's stream to a reader that just left: let go of the pipe and
        open it again. A read that may not wait stops here with the pipe
        open and goes on at the next read."""
        while self._attempts < self.resync_attempts:
            self._take_lock()
            if self._f is None:
                self._open_data()
            prefix = bytearray(16)
            got = self._fill(memoryview(prefix))
            seen = min(got, len(MAGIC))
            if self._fifo and (got == 0 or bytes(prefix[:seen]) != MAGIC[:seen]):
                self._record_done()
                self._close_data()
                self._release_lock()  # so that the writer sees its reader leave
                self._attempts += 1
                if self._attempts < self.resync_attempts:
                    time.sleep(self.resync_delay)
                continue
            if got < len(prefix):
                if got == 0:
                    raise NotAStream("%s is empty: no stream header" % self.path)
                raise StreamTruncated("%s: the stream ended in the stream header" % self.path)
            if bytes(prefix[:8]) != MAGIC:
                raise NotAStream(
                    "%s is not an lcmon batch stream (it starts with %r)"
                    % (self.path, bytes(prefix[:8]))
                )
            self._conn_batches = 0  # DONE counts the batches since this connection's header
            self._read_header(bytes(prefix))
            self._record_done()
            self._opening = None
            return
        self._opening = None
        raise StreamError(
            "%s: the pipe did not start with a stream header in %d attempts "
            "(is a reader that is not lcmon's attached, or is the writer not lcmon?)"
            % (self.path, self.resync_attempts)
        )

    def _poller(self):
        p = self._poll
        if p is None:
            p = self._poll = select.poll()
            p.register(self._f.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        return p

    def _wait_readable(self) -> int:
        """Wait until the pipe has bytes (or its writer closed it); returns
        the poll events. Within this read's limits: the reader's timeout
        for a piece of data, the wait for a writer or the next run, and the
        read's own (get's block and timeout; a record on its way may take
        _IN_FLIGHT more)."""
        p = self._poller()
        now = time.monotonic()
        started = len(self._rec) > 0 or self._payload_got > 0
        limits = []
        if self._call_deadline is not None:
            d = max(self._call_deadline, now + _IN_FLIGHT) if started else self._call_deadline
            limits.append((d, "read"))
        if self._opening is not None and not started:
            if self._open_deadline is not None:
                limits.append((self._open_deadline, "run" if self._opening else "open"))
        elif self.timeout is not None:
            limits.append((now + self.timeout, "piece"))
        deadline, kind = min(limits) if limits else (None, "")
        start = now
        while True:
            ms = None if deadline is None else max(0, math.ceil((deadline - time.monotonic()) * 1000))
            if self.watch is not None:  # in slices, the hook between them
                ms = WATCH_EVERY_MS if ms is None else min(ms, WATCH_EVERY_MS)
            try:
                ready = p.poll(ms)
                if ready:
                    return ready[0][1]
            except InterruptedError:
                continue
            if self.watch is not None:
                self.watch(time.monotonic() - start)
            if deadline is not None and time.monotonic() >= deadline:
                break
        if kind == "read":
            raise _WouldBlock()
        if kind == "run":
            raise WriterTimeout("%s: no new run began within %.1f s" % (self.path, self._open_wait))
        raise TimeoutError("%s: no data for %.1f s (is the loader stalled?)"
                           % (self.path, self._open_wait if kind == "open" else self.timeout))

    # -- low-level reads --------------------------------------------------

    def _read_some(self, mv: memoryview) -> int:
        """One read into mv, waiting for bytes; 0 at end of file. Once the
        writer is seen gone (a hang-up), what the pipe holds then is all
        that is left of its run: the reader reads that much and no more,
        then takes it as the end of file. A next writer opens the pipe only
        when it is empty, but may come before the read that would have met
        the end of file; its bytes must not complete a torn batch."""
        while True:
            if self._fifo:
                self._note_hangup(self._wait_readable())
                if self._tail is not None:
                    if self._tail <= 0:
                        return 0
                    mv = mv[: self._tail]
            try:
                got = self._f.readinto(mv)
            except InterruptedError:
                continue
            if got is None:  # nothing yet: poll again
                continue
            if self._tail is not None:
                self._tail -= got
            elif self._fifo and got < len(mv):
                got += self._read_drained(mv[got:])
            self.bytes_read += got
            return got

    def _read_drained(self, mv: memoryview) -> int:
        """A read just emptied the pipe: read again at once. End of file
        (no writer) is then all that is left of this writer's run, though
        the poll before never said hang-up (had it gone after that poll,
        or had this descriptor been opened after it went, which a poll
        never reports): the next poll could come after a next writer's
        open. Returns what the read got."""
        try:
            more = self._f.readinto(mv)
        except InterruptedError:
            return 0
        if more == 0:
            self._tail = 0
        return more or 0

    def _note_hangup(self, ev: int) -> None:
        """ev: poll events. At the first hang-up, what is unread then is
        all that is left of the writer that went."""
        if ev & select.POLLHUP and self._tail is None:
            self._tail = _unread(self._f.fileno()) if ev & select.POLLIN else 0

    def _fill(self, mv: memoryview) -> int:
        """Read into all of mv; returns bytes read (fewer only at end of
        file). The record's bytes kept from a read that stopped early are
        handed out again first; new ones are kept in turn."""
        total = len(mv)
        n = max(0, min(total, len(self._rec) - self._rec_pos))
        if n:
            mv[:n] = self._rec[self._rec_pos : self._rec_pos + n]
            self._rec_pos += n
        while n < total:
            got = self._read_some(mv[n:])
            if got == 0:
                break
            self._rec += mv[n : n + got]
            self._rec_pos += got
            n += got
        return n

    def _fill_payload(self) -> int:
        """Read the payload into the buffer, on from the bytes already in;
        returns the bytes in (fewer than the payload only at end of file)."""
        mv = memoryview(self._buffer)
        while self._payload_got < len(mv):
            got = self._read_some(mv[self._payload_got :])
            if got == 0:
                break
            self._payload_got += got
        return self._payload_got

    def _record_done(self) -> None:
        """The record is read whole (or dropped): keep nothing of it."""
        self._rec = bytearray()
        self._rec_pos = 0
        self._payload_got = 0

    def _read_exact(self, n: int, what: str) -> bytes:
        buf = self._small if n == len(self._small) else bytearray(n)
        got = self._fill(memoryview(buf))
        if got == n:
            return bytes(buf)
        if got == 0 and what == "a record":
            raise _RunEnded("eof", "the stream ended after %d batches of this run without a DONE "
                            "marker (the writer was stopped or died)" % self._conn_batches)
        raise _RunEnded("torn", "the stream ended in the middle of %s" % what)

    def _read_header(self, prefix: bytes) -> None:
        magic, version, header_bytes = PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise NotAStream("%s: not an lcmon batch stream header" % self.path)
        check_version(version)
        if not 0 < header_bytes <= HEADER_MAX - 16:
            raise StreamError("batch stream header: header_bytes %d is out of range" % header_bytes)
        rest = self._read_exact(header_bytes, what="the stream header")
        header = parse_header(prefix, rest)
        if not header.same_layout(self.header):
            self._set_layout(header)
        new_run = header.run_id != self.run_id or self.runs == 0
        self.header = header
        self.headers_read += 1
        if new_run:
            self.run_id = header.run_id
            self.runs += 1
            if self.runs > 1:
                log.warning("lcmon: a new run (%016x) began on %s", header.run_id, self.path)
            if self.on_run is not None:
                self.on_run(self)

    def _set_layout(self, header: Header) -> None:
        raw = np.empty(header.payload_bytes + ALIGN, dtype=np.uint8)
        skip = (-raw.ctypes.data) % ALIGN
        self._buffer = raw[skip : skip + header.payload_bytes]
        self._views = {}
        for t in header.tensors:
            self._views[t.name] = (
                self._buffer[t.offset : t.offset + t.nbytes].view(t.dtype).reshape(t.shape)
            )

    # -- batches ---------------------------------------------------------

    def read_batch(self, block: bool = True, timeout: Optional[float] = None) -> Optional[Batch]:
        """The next batch, or None at the end of the stream; with
        block=False, None at once when no batch is ready, and with a
        timeout, None when none came within it (see get()). Raises
        StreamTruncated, StreamError (the reader is then closed),
        TimeoutError or WriterTimeout (the reader stays open: the next read
        goes on where this one stopped)."""
        if not block:
            if (self._fifo and self._f is not None and self._opening is None and not self._rec
                    and not self._payload_got and not self._poller().poll(0)):
                return None  # the short way: nothing in the pipe
            self._call_deadline = time.monotonic()
        elif timeout is not None:
            self._call_deadline = time.monotonic() + max(0.0, timeout)
        try:
            return self._next()
        except _WouldBlock:
            self._rec_pos = 0  # the next read hands the kept bytes out again
            return None
        except TimeoutError:
            self._rec_pos = 0
            raise
        except StreamError:
            self.close()
            raise
        finally:
            self._call_deadline = None

    def get(self, block: bool = True, timeout: Optional[float] = None,
            copy: Optional[bool] = None) -> Optional[Dict[str, np.ndarray]]:
        """The next batch's tensors (a dict, as iteration gives them).

        block=False: None at once when no batch is ready (maybe_next()).
        timeout: seconds to wait for a batch before returning None (None:
            as long as it takes). A batch already on its way is read to its
            end either way. Neither closes the reader.
        copy: arrays of the caller's own, which the next read leaves alone
            (None: as the reader was made; its default gives views that
            the next batch overwrites).

        None also at the end of the stream (`done`, or `stopped` and
        `truncated` with restarts="end")."""
        b = self.read_batch(block, timeout)
        if b is None:
            return None
        if copy and not self.copy:
            return {n: np.array(a, copy=True) for n, a in b.tensors.items()}
        return b.tensors

    def maybe_next(self, copy: Optional[bool] = None) -> Optional[Dict[str, np.ndarray]]:
        """The next batch's tensors if one is ready, else None at once (as
        upstream's DataLoader.maybe_get_next()): get(block=False)."""
        return self.get(block=False, copy=copy)

    def _next(self) -> Optional[Batch]:
        while True:
            if self._opening is not None:
                self._open()
            if self._f is None:
                return None
            try:
                b = self._next_in_run()
            except _RunEnded as end:
                self._record_done()
                if not self._run_ended(end):
                    return None
                continue
            self._record_done()
            if b is not None or self._f is None:
                return b

    def _run_ended(self, end: _RunEnded) -> bool:
        """A run ended; True when the reader goes on with the next run."""
        if end.how == "torn":
            self.torn_batches += 1
        if self.watch is not None and end.how != "stopped":
            self.watch(None)  # the writer went away mid-run: did the loader die?
        if not self._fifo or self.restarts == "end":
            self._close_data()
            if end.how == "stopped":
                self.stopped = True
                return False
            self.truncated = True
            if self.tolerate_truncation:
                return False
            raise StreamTruncated("%s: %s" % (self.path, end.detail))
        log.warning(
            "lcmon: the run on %s %s after %d batches; waiting for the next run%s",
            self.path,
            "stopped" if end.how == "stopped" else "ended without its DONE marker (%s)" % end.how,
            self._conn_batches,
            "" if self.restart_timeout is None else " (up to %.0f s)" % self.restart_timeout,
        )
        self._close_data()
        self._begin_open(self.restart_timeout, next_run=True)
        return True

    def _next_in_run(self) -> Optional[Batch]:
        rec = self._read_exact(16, what="a record")
        kind = rec[:4]
        if kind == b"BTCH":
            version = self.header.version if self.header is not None else 0
            v4, v5 = version >= 4, version >= 5
            more = self._read_exact(16 + (PROGRESS.size if v4 else 0)
                                    + (FRESHNESS.size if v5 else 0), what="a batch frame")
            flags, seq, rows, payload_bytes = FRAME_REST.unpack(rec[4:] + more[:16])
            end = 16 + PROGRESS.size
            progress = Progress(*PROGRESS.unpack(more[16:end])) if v4 else Progress()
            fresh = Freshness(*FRESHNESS.unpack(more[end:])) if v5 else Freshness()
            return self._read_payload(flags, seq, rows, payload_bytes, progress, fresh)
        if kind == b"DONE":
            reason, count = DONE_REST.unpack(rec[4:])
            if reason not in (END_DATA, END_STOPPED):
                raise StreamError("%s: DONE marker with an unknown reason %d" % (self.path, reason))
            if count != self._conn_batches:
                raise StreamError(
                    "%s: the DONE marker counts %d batches but %d were read"
                    % (self.path, count, self._conn_batches)
                )
            if reason == END_STOPPED:
                raise _RunEnded("stopped", "the run was stopped")
            self.done = True
            self._close_data()
            return None
        if rec[:8] == MAGIC:
            self._read_header(rec)
            return None
        raise StreamError(
            "%s: unknown record %r after %d batches (expected a batch frame, DONE or a stream "
            "header): is another program reading this pipe, or writing it (lcmon refuses a "
            "second lcmon on one pipe, but not other programs)?"
            % (self.path, kind, self.batches_read)
        )

    def _read_payload(
        self, flags: int, seq: int, rows: int, payload_bytes: int, progress: Progress,
        fresh: Freshness = Freshness()
    ) -> Batch:
        h = self.header
        if h is None or payload_bytes != h.payload_bytes:
            raise StreamError(
                "%s: batch %d has %d payload bytes; the header says %s"
                % (self.path, seq, payload_bytes, None if h is None else h.payload_bytes)
            )
        if rows > h.batch_size:
            raise StreamError(
                "%s: batch %d has %d rows, more than the batch size %d"
                % (self.path, seq, rows, h.batch_size)
            )
        got = self._fill_payload()
        self.payload = self._buffer
        if got != payload_bytes:
            raise _RunEnded(
                "torn",
                "the stream ended in the middle of batch %d (%d of %d payload bytes)"
                % (seq, got, payload_bytes),
            )
        tensors = {}
        for name, v in self._views.items():
            a = v if rows == h.batch_size else v[:rows]
            tensors[name] = a.copy() if self.copy else a
        self.batches_read += 1
        self._conn_batches += 1
        self.rows_read += rows
        self.progress = progress
        self.freshness = fresh
        if self.expand and h.expand:
            tensors = self._expander(tensors, h.expand)
        return Batch(seq, rows, flags, tensors, self.run_id, "" if self.expand else h.expand,
                     progress, fresh)

    def batches(self):
        """Iterate over Batch records (seq, rows, flags, tensors, run_id)."""
        while True:
            b = self.read_batch()
            if b is None:
                return
            yield b

    def __iter__(self):
        """Iterate over the batches as dicts: tensor name -> numpy array."""
        for b in self.batches():
            yield b.tensors

    # -- closing ---------------------------------------------------------

    def close(self) -> None:
        self._opening = None
        self._record_done()
        self._close_data()
        self._release_lock()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
