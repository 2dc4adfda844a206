"""The batch stream's format (docs/batch-stream.md): its constants, the
types a reader gives (Header and its TensorSpecs, Batch with its Progress
and Freshness), parse_header and describe. lcmon.BatchReader (stream.py)
reads a stream with them; the names are importable from lcmon.stream too.

A stream is a header (every tensor's name, dtype, shape and offset in a
batch's payload; the layout and how to expand it; the writing run), then
a frame ("BTCH": flags, seq, rows, payload bytes; from version 4 a finite
run's progress, from version 5 the rows' freshness) and the payload for
each batch, and a "DONE" marker (reason, batches) when a run ends. Only
numpy and the standard library are needed.
"""

import struct
from typing import Dict, NamedTuple, Optional, Tuple

import numpy as np

from .errors import NotAStream, StreamError, StreamVersionError
from .wire import RunId

__all__ = [
    "Batch",
    "Header",
    "Progress",
    "Freshness",
    "TensorSpec",
    "parse_header",
    "describe",
    "MAGIC",
    "VERSION",
    "FLAG_LAST",
]

MAGIC = b"LCMONBS\0"
VERSION = 5  # versions 1 (no run fields), 2, 3 (layout and expansion), 4 (progress), 5 (freshness)
FLAG_LAST = 1  # frame flag: last batch of a finite stream
END_DATA = 0  # DONE reason: the data ended; nothing more comes
END_STOPPED = 1  # DONE reason: the run was stopped; another may follow

PREFIX = struct.Struct("<8sII")  # magic, version, header_bytes
FIXED_V1 = struct.Struct("<IQQ")  # n_tensors, batch_size, payload_bytes
FIXED_V2 = struct.Struct("<IQQQQ")  # ... run_id, run_started_ms
FRAME_REST = struct.Struct("<IQQQ")  # after "BTCH": flags, seq, rows, payload_bytes
DONE_REST = struct.Struct("<IQ")  # after "DONE": reason, batches
PROGRESS = struct.Struct("<IIQQQQ")  # version 4, after the frame: a finite run's progress
FRESHNESS = struct.Struct("<QIIII")  # version 5, after the progress: how fresh the rows are
HEADER_MAX = 65536
ALIGN = 64
DTYPES = {
    0: np.dtype("<f4"),
    1: np.dtype("<i8"),
    2: np.dtype(np.bool_),
    3: np.dtype("<i4"),
    4: np.dtype(np.uint8),  # version 3 on
    5: np.dtype("<u2"),  # version 3 on
}
V2_DTYPES = 4  # codes below this are all versions 1 and 2 have
# How a reader makes the trainer's tensors of a layout (the header's
# "expand"): "" they are those tensors already; the others: lcmon.expand.
EXPANSIONS = ("", "widen-int64", "lc0-packed-1")


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
    run_id: int = 0  # the writing run (0 in version 1)
    run_started_ms: int = 0  # Unix time in ms (0 in version 1)
    layout: str = ""  # the layout's name ("lc0-current", ...; "" before version 3)
    expand: str = ""  # how to make the trainer's tensors ("": they are; lcmon.expand)
    seed: int = 0  # the run's seed (version 4 on)

    def same_layout(self, other: Optional["Header"]) -> bool:
        return (
            other is not None
            and self.batch_size == other.batch_size
            and self.payload_bytes == other.payload_bytes
            and self.tensors == other.tensors
            and self.layout == other.layout
            and self.expand == other.expand
        )


class Progress(NamedTuple):
    """How far a finite run was when a batch was made (stream version 4).
    Zero where the run cannot tell: a run without end (a pool), several
    sources, a splitter, or a total not known (a scan that watches, tar
    archives, Parquet games)."""

    epoch: int = 0  # the epoch being read, from 1
    epochs: int = 0  # epochs in the run
    files_done: int = 0  # files read to their end
    files_total: int = 0
    records: int = 0  # records read: lc0 chunks (games), Parquet games
    records_total: int = 0

    @property
    def fraction(self) -> Optional[float]:
        """Records of the total, else files of the total; None when neither
        total is known."""
        if self.records_total:
            return min(1.0, self.records / self.records_total)
        if self.files_total:
            return min(1.0, self.files_done / self.files_total)
        return None

    def __str__(self) -> str:
        parts = []
        if self.epochs:
            parts.append("epoch %d of %d" % (self.epoch, self.epochs))
        if self.files_total:
            parts.append("%d of %d files" % (self.files_done, self.files_total))
        if self.records_total:
            parts.append("%d of %d records" % (self.records, self.records_total))
        elif self.records:
            parts.append("%d records" % self.records)
        f = self.fraction
        if f is not None:
            parts.append("%.1f%%" % (100 * f))
        return ", ".join(parts) if parts else "progress not known"


class Freshness(NamedTuple):
    """How fresh a batch's rows are (stream version 5), as the writer saw
    them when it wrote the batch: the newest game among them by its ingest
    sequence (the pool numbers a run's games from 1 as they arrive:
    Control.fresh() says which numbers the games it asked for have), the
    rows of games drawn by a fresh request, and the ages of the rows' games
    (milliseconds since each arrived in the pool). All 0 (known False) in an
    older stream, or where the rows' origin is not known (Parquet
    pipelines)."""

    newest_seq: int = 0
    fresh_rows: int = 0
    age_min_ms: int = 0  # the rows' newest game
    age_median_ms: int = 0
    age_max_ms: int = 0  # the rows' oldest game

    @property
    def known(self) -> bool:
        return self.newest_seq > 0

    def __str__(self) -> str:
        if not self.known:
            return "freshness not known"
        return "newest game %d, ages %.1f s median (%.1f to %.1f s), %d rows fresh" % (
            self.newest_seq, self.age_median_ms / 1e3, self.age_min_ms / 1e3,
            self.age_max_ms / 1e3, self.fresh_rows)


class Batch(NamedTuple):
    seq: int  # batch number from 0 within its run
    rows: int  # valid rows (the arrays are sliced to them)
    flags: int
    tensors: Dict[str, np.ndarray]
    run_id: int = 0  # the run that wrote it
    expand: str = ""  # the header's expansion: "" when the tensors are the trainer's
    progress: Progress = Progress()  # a finite run's, when the batch was made
    freshness: Freshness = Freshness()  # how old its rows' games are (version 5)

    @property
    def last(self) -> bool:
        """The writer marked this batch as the last of a finite stream."""
        return bool(self.flags & FLAG_LAST)


def check_version(version: int) -> None:
    if version > VERSION:
        raise StreamVersionError(
            "batch stream version %d is newer than this reader (it reads versions 1 to %d): "
            "install the Python package of the lcmon that writes the stream" % (version, VERSION)
        )
    if version < 1:
        raise StreamError("batch stream version %d is not valid" % version)


def parse_header(prefix: bytes, rest: bytes) -> Header:
    """Decode a stream header from its 16-byte prefix and the rest."""
    magic, version, header_bytes = PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise NotAStream(
            "not an lcmon batch stream: the first bytes are %r, not the magic %r" % (magic, MAGIC)
        )
    check_version(version)
    fixed = FIXED_V1 if version == 1 else FIXED_V2
    if len(rest) != header_bytes:
        raise StreamError("batch stream header: %d of its %d bytes" % (len(rest), header_bytes))
    if header_bytes < fixed.size:
        raise StreamError("batch stream header: header_bytes %d is too small" % header_bytes)
    run_id = run_started = 0
    if version == 1:
        n_tensors, batch_size, payload_bytes = fixed.unpack_from(rest, 0)
    else:
        n_tensors, batch_size, payload_bytes, run_id, run_started = fixed.unpack_from(rest, 0)
    run_id = RunId(run_id)  # printed in hex, as lcmon prints it
    pos = fixed.size
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
            if code not in DTYPES or (version < 3 and code >= V2_DTYPES):
                raise StreamError("batch stream header: tensor %r: unknown dtype %d" % (name, code))
            if not 1 <= ndim <= 4:
                raise StreamError("batch stream header: tensor %r: %d dimensions" % (name, ndim))
            shape = struct.unpack_from("<%dQ" % ndim, rest, pos)
            pos += 8 * ndim
            offset, nbytes = struct.unpack_from("<QQ", rest, pos)
            pos += 16
            dtype = DTYPES[code]
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
            if offset % ALIGN or offset + nbytes > payload_bytes:
                raise StreamError(
                    "batch stream header: tensor %r: bytes %d..%d are not an aligned range "
                    "of the %d-byte payload" % (name, offset, offset + nbytes, payload_bytes)
                )
            tensors.append(TensorSpec(name, dtype, tuple(shape), offset, nbytes))
        layout = expand = ""
        if version >= 3:
            names = []
            for _ in range(2):
                (n,) = struct.unpack_from("<H", rest, pos)
                if pos + 2 + n > len(rest):
                    raise struct.error("the layout's names run past header_bytes")
                names.append(rest[pos + 2 : pos + 2 + n].decode("utf-8"))
                pos += 2 + n
            layout, expand = names
        seed = 0
        if version >= 4 and pos + 8 <= len(rest):
            (seed,) = struct.unpack_from("<Q", rest, pos)
    except (struct.error, UnicodeDecodeError) as e:
        raise StreamError("batch stream header: corrupt tensor list (%s)" % e) from None
    if expand not in EXPANSIONS:
        raise StreamVersionError(
            "batch stream layout %r needs the expansion %r, which this reader does not know "
            "(it knows %s): install the Python package of the lcmon that writes the stream"
            % (layout, expand, ", ".join(repr(e) for e in EXPANSIONS[1:]))
        )
    return Header(
        version, batch_size, payload_bytes, tuple(tensors), run_id, run_started, layout, expand,
        seed,
    )


def describe(header: Header) -> str:
    """The tensors of a header, one line each, for people."""
    lines = [
        "stream: version %d, batch size %d, %d payload bytes per batch (%.0f a row), run %016x"
        % (header.version, header.batch_size, header.payload_bytes,
           header.payload_bytes / max(header.batch_size, 1), header.run_id)
    ]
    if header.layout or header.expand:
        lines.append(
            "layout %s%s"
            % (header.layout or "(unnamed)",
               ", expanded by %s" % header.expand if header.expand else "")
        )
    for t in header.tensors:
        lines.append("  %s: %s %s" % (t.name, t.dtype.name, list(t.shape)))
    return "\n".join(lines)
