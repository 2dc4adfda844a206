"""Read the batch stream that lcmon's fifo_writer stage writes.

The stream (format version 1, described in full in src/format/batch_stream.h)
is a header naming every tensor with its dtype, shape and offset, then one
frame per batch followed by the batch payload, then a DONE marker at the end
of a finite run. This module needs only the standard library and numpy.

    from lcmon_reader import BatchReader

    with BatchReader("/tmp/lcmon.pipe") as reader:
        for tensors in reader:            # dict: name -> numpy array
            train_step(tensors["planes"], tensors["probs"])

Each payload is read with readinto() straight into one preallocated,
64-byte aligned buffer, and the arrays are numpy views of that buffer: the
only copy is the one out of the pipe. The arrays therefore stay valid only
until the next batch is read (which overwrites the buffer); pass copy=True
to get arrays of your own. The last batch of a finite run may hold fewer
rows than the batch size: its arrays are sliced to the valid rows.

A stream that ends without the DONE marker (the writer was stopped or died)
raises StreamTruncated, unless the reader was made with
tolerate_truncation=True: iteration then simply ends and `truncated` is set.
A new stream header between two batches (the writer's layout changed) is
taken in stride. On a named pipe, the writer starts every new reader with a
fresh header at a batch boundary; a reader that finds anything else first
has attached to the pipe its predecessor just left, so it closes the pipe and
opens it again (a few times, briefly) until it gets a fresh stream.

Command line, to look at a stream and measure its rate:

    PYTHONPATH=python python3 -m lcmon_reader PIPE --batches N

prints each tensor's name, dtype and shape once, then the rate (batches/s,
rows/s, MB/s) at the end, timed from the first batch's arrival and counting
the batches after it; --batches 0 reads until the end of the stream.
"""

import argparse
import io
import os
import select
import stat
import struct
import sys
import time
from typing import Dict, NamedTuple, Optional, Tuple

import numpy as np

__all__ = [
    "BatchReader",
    "Batch",
    "Header",
    "TensorSpec",
    "StreamError",
    "StreamTruncated",
    "MAGIC",
    "VERSION",
    "FLAG_LAST",
]

MAGIC = b"LCMONBS\0"
VERSION = 1
FLAG_LAST = 1  # frame flag: last batch of a finite stream

_PREFIX = struct.Struct("<8sII")  # magic, version, header_bytes
_FIXED = struct.Struct("<IQQ")  # n_tensors, batch_size, payload_bytes
_FRAME_REST = struct.Struct("<IQQQ")  # after "BTCH": flags, seq, rows, payload_bytes
_DONE_REST = struct.Struct("<IQ")  # after "DONE": zero, batches
_HEADER_MAX = 65536
_ALIGN = 64
_DTYPES = {
    0: np.dtype("<f4"),
    1: np.dtype("<i8"),
    2: np.dtype(np.bool_),
    3: np.dtype("<i4"),
}


class StreamError(Exception):
    """The bytes are not a valid lcmon batch stream."""


class StreamTruncated(StreamError):
    """The stream ended without its DONE marker: the writer stopped or died."""


class TensorSpec(NamedTuple):
    name: str
    dtype: np.dtype
    shape: Tuple[int, ...]  # shape[0] is the batch size
    offset: int  # in the payload, a multiple of 64
    nbytes: int


class Header(NamedTuple):
    version: int
    batch_size: int
    payload_bytes: int
    tensors: Tuple[TensorSpec, ...]


class Batch(NamedTuple):
    seq: int  # batch number from 0
    rows: int  # valid rows (the arrays are sliced to them)
    flags: int
    tensors: Dict[str, np.ndarray]

    @property
    def last(self) -> bool:
        """The writer marked this batch as the last of a finite stream."""
        return bool(self.flags & FLAG_LAST)


def parse_header(prefix: bytes, rest: bytes) -> Header:
    """Decode a stream header from its 16-byte prefix and the rest."""
    magic, version, header_bytes = _PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise StreamError(
            "not an lcmon batch stream: the first bytes are %r, not the magic %r"
            % (magic, MAGIC)
        )
    if version != VERSION:
        raise StreamError(
            "batch stream version %d is not supported (this reader knows version %d)"
            % (version, VERSION)
        )
    if len(rest) != header_bytes:
        raise StreamError("batch stream header: %d of its %d bytes" % (len(rest), header_bytes))
    if header_bytes < _FIXED.size:
        raise StreamError("batch stream header: header_bytes %d is too small" % header_bytes)
    n_tensors, batch_size, payload_bytes = _FIXED.unpack_from(rest, 0)
    pos = _FIXED.size
    tensors = []
    try:
        for i in range(n_tensors):
            (name_len,) = struct.unpack_from("<H", rest, pos)
            pos += 2
            name = rest[pos : pos + name_len].decode("utf-8")
            if len(name.encode("utf-8")) != name_len or name_len == 0:
                raise StreamError("batch stream header: tensor %d has a bad name" % i)
            pos += name_len
            code, ndim = struct.unpack_from("<BB", rest, pos)
            pos += 2
            if code not in _DTYPES:
                raise StreamError("batch stream header: tensor %r: unknown dtype %d" % (name, code))
            if not 1 <= ndim <= 4:
                raise StreamError("batch stream header: tensor %r: %d dimensions" % (name, ndim))
            shape = struct.unpack_from("<%dQ" % ndim, rest, pos)
            pos += 8 * ndim
            offset, nbytes = struct.unpack_from("<QQ", rest, pos)
            pos += 16
            dtype = _DTYPES[code]
            if shape[0] != batch_size:
                raise StreamError(
                    "batch stream header: tensor %r: first dimension %d is not the batch size %d"
                    % (name, shape[0], batch_size)
                )
            if nbytes != int(np.prod(shape, dtype=np.uint64)) * dtype.itemsize:
                raise StreamError(
                    "batch stream header: tensor %r: nbytes %d does not match shape %s"
                    % (name, nbytes, shape)
                )
            if offset % _ALIGN or offset + nbytes > payload_bytes:
                raise StreamError(
                    "batch stream header: tensor %r: bytes %d..%d are not an aligned range "
                    "of the %d-byte payload" % (name, offset, offset + nbytes, payload_bytes)
                )
            tensors.append(TensorSpec(name, dtype, tuple(shape), offset, nbytes))
    except (struct.error, UnicodeDecodeError) as e:
        raise StreamError("batch stream header: corrupt tensor list (%s)" % e) from None
    return Header(version, batch_size, payload_bytes, tuple(tensors))


class BatchReader:
    """Reads batches from a named pipe or a file written by fifo_writer.

    path: the named pipe (or a regular file holding a stream).
    copy: give each batch arrays of its own (default: views of a buffer that
        the next batch overwrites).
    tolerate_truncation: end iteration quietly, setting `truncated`, when the
        stream ends without DONE (default: raise StreamTruncated).
    timeout: seconds to wait for the writer when opening and for each piece
        of data afterwards before raising TimeoutError (default: wait as long
        as it takes, which is what a trainer usually wants).
    resync_attempts, resync_delay: how often and how long apart to reopen a
        pipe that does not start with a stream header.

    Opening reads the stream header (so it waits for the writer); `header`
    then describes the tensors. Not thread-safe: one thread reads.
    """

    def __init__(
        self,
        path,
        copy: bool = False,
        tolerate_truncation: bool = False,
        timeout: Optional[float] = None,
        resync_attempts: int = 50,
        resync_delay: float = 0.1,
    ):
        self.path = os.fspath(path)
        self.copy = copy
        self.tolerate_truncation = tolerate_truncation
        self.timeout = timeout
        self.header: Optional[Header] = None
        self.done = False  # DONE was read
        self.truncated = False  # ended without DONE (tolerate_truncation)
        self.batches_read = 0
        self.rows_read = 0
        self.bytes_read = 0
        self.headers_read = 0
        self._f: Optional[io.FileIO] = None
        self._conn_batches = 0
        self._buffer = None
        self._views: Dict[str, np.ndarray] = {}
        self._small = bytearray(16)
        try:
            self._open(resync_attempts, resync_delay)
        except BaseException:
            self.close()
            raise

    # -- opening ---------------------------------------------------------

    def _open(self, attempts: int, delay: float) -> None:
        for attempt in range(max(1, attempts)):
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            is_fifo = stat.S_ISFIFO(os.fstat(fd).st_mode)
            # The open did not wait for a writer; reads wait in poll() when a
            # timeout is set, else in a blocking read.
            if self.timeout is None:
                os.set_blocking(fd, True)
            self._f = io.FileIO(fd, "rb", closefd=True)
            if is_fifo and self.timeout is None:
                self._wait_readable(None)  # a blocking read on a writer-less FIFO sees EOF
            prefix = bytearray(16)
            got = self._fill(memoryview(prefix))
            seen = min(got, len(MAGIC))
            if is_fifo and (got == 0 or bytes(prefix[:seen]) != MAGIC[:seen]):
                # The tail of a stream whose reader just left (or its end):
                # reopen until the writer has noticed and starts us afresh.
                self._f.close()
                self._f = None
                if attempt + 1 < attempts:
                    time.sleep(delay)
                continue
            if got < len(prefix):
                if got == 0:
                    self._truncated("the stream is empty: no stream header")
                else:
                    self._truncated("the stream ended in the middle of the stream header")
                return  # tolerated
            self._read_header(bytes(prefix))
            self._conn_batches = 0  # DONE counts the batches since this header
            return
        raise StreamError(
            "%s: the pipe did not start with a stream header in %d attempts "
            "(is another reader attached, or is the writer not lcmon?)" % (self.path, attempts)
        )

    def _wait_readable(self, timeout: Optional[float]) -> None:
        p = select.poll()
        p.register(self._f.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        ms = None if timeout is None else max(0, int(timeout * 1000))
        while True:
            try:
                if p.poll(ms):
                    return
            except InterruptedError:
                continue
            raise TimeoutError("%s: no data for %.1f s" % (self.path, timeout))

    # -- low-level reads --------------------------------------------------

    def _fill(self, mv: memoryview) -> int:
        """Read into all of mv; returns bytes read (fewer only at end of file)."""
        n = 0
        total = len(mv)
        while n < total:
            if self.timeout is not None:
                self._wait_readable(self.timeout)
            try:
                got = self._f.readinto(mv[n:])
            except InterruptedError:
                continue
            if got is None:  # non-blocking and nothing yet
                continue
            if got == 0:
                break
            n += got
        self.bytes_read += n
        return n

    def _truncated(self, msg: str):
        self.truncated = True
        self.close()
        if self.tolerate_truncation:
            return None
        raise StreamTruncated("%s: %s" % (self.path, msg))

    def _read_exact(self, n: int, what: str) -> Optional[bytes]:
        buf = self._small if n == len(self._small) else bytearray(n)
        got = self._fill(memoryview(buf))
        if got == n:
            return bytes(buf)
        if got == 0:
            return self._truncated(
                "the stream ended after %d batches without the DONE marker "
                "(the writer was stopped or died)" % self.batches_read
            )
        return self._truncated("the stream ended in the middle of %s" % what)

    def _read_header(self, prefix: bytes) -> bool:
        magic, version, header_bytes = _PREFIX.unpack(prefix)
        if magic == MAGIC and version == VERSION and not 0 < header_bytes <= _HEADER_MAX - 16:
            raise StreamError("batch stream header: header_bytes %d is out of range" % header_bytes)
        rest = b""
        if magic == MAGIC and version == VERSION:
            rest = self._read_exact(header_bytes, what="the stream header")
            if rest is None:
                return False
        header = parse_header(prefix, rest)
        if header != self.header:
            self._set_layout(header)
        self.headers_read += 1
        return True

    def _set_layout(self, header: Header) -> None:
        self.header = header
        raw = np.empty(header.payload_bytes + _ALIGN, dtype=np.uint8)
        skip = (-raw.ctypes.data) % _ALIGN
        self._buffer = raw[skip : skip + header.payload_bytes]
        self._views = {}
        for t in header.tensors:
            self._views[t.name] = (
                self._buffer[t.offset : t.offset + t.nbytes].view(t.dtype).reshape(t.shape)
            )

    # -- batches ---------------------------------------------------------

    def read_batch(self) -> Optional[Batch]:
        """The next batch, or None at the end of the stream (DONE, or a
        tolerated truncation). Raises StreamTruncated, StreamError (the
        reader is then closed) or TimeoutError."""
        try:
            return self._next()
        except StreamError:
            self.close()
            raise

    def _next(self) -> Optional[Batch]:
        while self._f is not None:
            rec = self._read_exact(16, what="a batch frame")
            if rec is None:
                return None
            kind = rec[:4]
            if kind == b"BTCH":
                more = self._read_exact(16, what="a batch frame")
                if more is None:
                    return None
                flags, seq, rows, payload_bytes = _FRAME_REST.unpack(rec[4:] + more)
                return self._read_payload(flags, seq, rows, payload_bytes)
            if kind == b"DONE":
                zero, count = _DONE_REST.unpack(rec[4:])
                if zero != 0:
                    raise StreamError("%s: malformed DONE marker" % self.path)
                if count != self._conn_batches:
                    raise StreamError(
                        "%s: the DONE marker counts %d batches but %d were read"
                        % (self.path, count, self._conn_batches)
                    )
                self.done = True
                self.close()
                return None
            if rec[:8] == MAGIC:
                if not self._read_header(rec):
                    return None
                continue
            raise StreamError(
                "%s: unknown record %r after %d batches (expected a batch frame, DONE or "
                "a stream header)" % (self.path, kind, self.batches_read)
            )
        return None

    def _read_payload(self, flags: int, seq: int, rows: int, payload_bytes: int) -> Optional[Batch]:
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
        got = self._fill(memoryview(self._buffer))
        if got != payload_bytes:
            return self._truncated(
                "the stream ended in the middle of batch %d (%d of %d payload bytes)"
                % (seq, got, payload_bytes)
            )
        tensors = {}
        for name, v in self._views.items():
            a = v if rows == h.batch_size else v[:rows]
            tensors[name] = a.copy() if self.copy else a
        self.batches_read += 1
        self._conn_batches += 1
        self.rows_read += rows
        return Batch(seq, rows, flags, tensors)

    def batches(self):
        """Iterate over Batch records (seq, rows, flags, tensors)."""
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
        if self._f is not None:
            self._f.close()
            self._f = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _describe(header: Header) -> str:
    lines = [
        "stream: batch size %d, %d payload bytes per batch"
        % (header.batch_size, header.payload_bytes)
    ]
    for t in header.tensors:
        lines.append("  %s: %s %s" % (t.name, t.dtype.name, list(t.shape)))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python3 -m lcmon_reader",
        description="Read an lcmon batch stream (a named pipe or a file) and report its rate.",
    )
    ap.add_argument("path", help="the named pipe (or a file holding a stream)")
    ap.add_argument(
        "--batches", type=int, default=0, help="batches to read (0: until the end of the stream)"
    )
    ap.add_argument(
        "--skip",
        type=int,
        default=0,
        help="batches read before the timing starts (a loader's warm-up, such as the chunk "
        "pool's first pass); --batches counts them too",
    )
    ap.add_argument("--copy", action="store_true", help="copy each batch's arrays")
    ap.add_argument(
        "--tolerate-truncation",
        action="store_true",
        help="treat a stream ending without DONE as a normal end",
    )
    ap.add_argument(
        "--timeout", type=float, default=None, help="seconds to wait for data before giving up"
    )
    args = ap.parse_args(argv)
    try:
        reader = BatchReader(
            args.path,
            copy=args.copy,
            tolerate_truncation=args.tolerate_truncation,
            timeout=args.timeout,
        )
    except (StreamError, OSError) as e:
        print("lcmon_reader: %s" % e, file=sys.stderr)
        return 1
    shown = None
    n = rows = nbytes = 0
    # The rate is timed from the arrival of the first batch after the
    # skipped ones and counts the batches after it, so that the loader's
    # warm-up (filling its shuffle buffers, and whatever --skip covers) does
    # not count against it.
    t0 = None
    began = None  # Unix time of t0, for timing against other processes
    timed = timed_rows = timed_bytes = 0
    status = 0
    with reader:
        try:
            while args.batches <= 0 or n < args.batches:
                if reader.header is not None and reader.header != shown:
                    shown = reader.header
                    print(_describe(shown), flush=True)
                b = reader.read_batch()
                if b is None:
                    break
                n += 1
                rows += b.rows
                nbytes += reader.header.payload_bytes
                if t0 is None:
                    if n > args.skip:
                        t0 = time.perf_counter()
                        began = time.time()
                else:
                    timed += 1
                    timed_rows += b.rows
                    timed_bytes += reader.header.payload_bytes
        except StreamError as e:
            print("lcmon_reader: %s" % e, file=sys.stderr)
            status = 1
        ended = (
            "end of stream (DONE)"
            if reader.done
            else "truncated stream" if reader.truncated else "stopped after %d batches" % n
        )
    dt = max(time.perf_counter() - t0, 1e-9) if t0 is not None else 1e-9
    after = "the first batch" if args.skip <= 0 else "batch %d" % (args.skip + 1)
    skipped = ""
    if args.skip > 0 and began is not None:
        skipped = "; timing began at %.3f (Unix time)" % began
    print(
        "%d batches, %d rows, %.1f MB; after %s: %.3f s, "
        "%.1f batches/s, %.0f rows/s, %.1f MB/s; %s%s"
        % (n, rows, nbytes / 1e6, after, dt, timed / dt, timed_rows / dt, timed_bytes / 1e6 / dt,
           ended, skipped)
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
