"""torch: lcmon's batch stream as a torch IterableDataset.

    from torch.utils.data import DataLoader
    from lcmon.torch import BatchDataset

    ds = BatchDataset("/tmp/lcmon.pipe", device="cuda")
    loader = DataLoader(ds, batch_size=None, num_workers=0)
    for batch in loader:                     # dict: name -> torch.Tensor on the device
        loss = step(batch["inputs"], batch["policy"], batch["values"])

Each item is a whole batch, already batched by lcmon: the DataLoader must not
batch again (batch_size=None) and must not start workers (num_workers=0: a
pipe has one reader, and lcmon already loads in parallel). BatchDataset
refuses both mistakes with a clear error when it starts iterating.
lcmon.torch.loader(path) makes such a DataLoader.

Packed layouts (`packed: true` in lcmon's config) are expanded with plain
torch operations where the tensors are used: with device="cuda" the packed
bytes (about 1.4 KB a position instead of 36 KB) are copied into a pinned
host buffer, sent to the GPU with a non-blocking copy on a stream of their
own, and expanded there; the next batch's copy is started before the
current one is handed out (prefetch=1) when lcmon has it ready, so it
overlaps the training step. The result is the dense layout's tensors, same
names, shapes, dtypes and values bit for bit. With device=None or "cpu"
everything happens on the CPU.

On the CPU, dense batches are torch.from_numpy views of the reader's buffer:
no copy, valid until the next batch is read; pass copy=True if the loop
keeps batches past the next one (each payload is then copied whole, and the
next one read ahead when it is there, as for a GPU). Expanded batches and
batches on a GPU are new tensors each batch. A DataLoader made with
pin_memory=True where torch has no CUDA device cannot pin: torch then hands
the dataset's tensors on as they are, so the dataset gives copies itself
(as pinned batches would be the loop's own) and warns once that nothing is
pinned.
"""

import fcntl
import sys
import termios
import warnings
from typing import Dict, Iterator, Optional

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from .expand import (CHUNK_ROWS, HISTORY_PLANES, LC0, PLANES, POLICY_SIZE, WIDEN, bad_index,
                     expand_lc0, kernel_planes, kernel_policy)
from .stream import BatchReader, Header

__all__ = ["BatchDataset", "loader", "expand", "square_table"]

# numpy dtype -> the torch dtype its bytes are viewed as. torch before 2.3
# has no uint16: ids (below 32768) are viewed as int16, then widened.
_TORCH = {
    np.dtype("<f4"): torch.float32,
    np.dtype("<i8"): torch.int64,
    np.dtype(np.bool_): torch.bool,
    np.dtype("<i4"): torch.int32,
    np.dtype(np.uint8): torch.uint8,
    np.dtype("<u2"): torch.int16,
}

_tables: Dict[torch.device, torch.Tensor] = {}


def square_table(device) -> torch.Tensor:
    """[256, 8] float32: row b holds the 8 squares of a rank whose byte is b
    (file f is bit 7 - f), so that gathering rows by the packed bytes gives
    the planes in one pass."""
    device = torch.device(device)
    t = _tables.get(device)
    if t is None:
        b = torch.arange(256, dtype=torch.int64)
        shifts = torch.arange(7, -1, -1, dtype=torch.int64)
        t = ((b.unsqueeze(1) >> shifts) & 1).to(torch.float32).to(device)
        _tables[device] = t
    return t


def _expand_planes(bits: torch.Tensor, aux: torch.Tensor, out=None, name="inputs") -> torch.Tensor:
    b = bits.shape[0]
    if bits.device.type == "cpu":
        return _expand_planes_cpu(bits, aux, out, name)
    table = square_table(bits.device)
    if out is None:
        dense = torch.nn.functional.embedding(bits.reshape(b, PLANES * 8).long(), table)
    else:
        dense = _check_out(name, out, (b, PLANES, 8, 8), bits.device)
        torch.index_select(table, 0, bits.reshape(-1).long(), out=dense.view(-1, 8))
    dense = dense.view(b, PLANES, 8, 8)
    # Planes 104..111: 1.0 or 0.0 times their value; the values are finite
    # and not negative (they come from bytes), so the product is exact.
    dense[:, HISTORY_PLANES:] *= aux.view(b, 8, 1, 1)
    return dense


def _expand_planes_cpu(bits: torch.Tensor, aux: torch.Tensor, out, name) -> torch.Tensor:
    """The planes on the CPU: by lcmon.expand's C kernel when there is one
    (bit times value for planes 104..111, as on a GPU); else numpy unpacks
    the bits of CHUNK_ROWS positions at a time into 0/1 bytes (which stay in
    the cache), torch widens them into the output (with its intra-op
    threads) and multiplies planes 104..111 by their values."""
    b = bits.shape[0]
    if out is None:
        dense = torch.empty((b, PLANES, 8, 8), dtype=torch.float32)
    else:
        dense = _check_out(name, out, (b, PLANES, 8, 8), bits.device)
    bits = bits.contiguous()
    aux_c = aux.contiguous()
    if b and aux_c.dtype == torch.float32 and kernel_planes(
            bits.data_ptr(), aux_c.data_ptr(), dense.data_ptr(), b, True):
        return dense
    packed = bits.numpy().reshape(b, PLANES * 8)
    flat = dense.view(b, PLANES * 64)
    for s in range(0, b, CHUNK_ROWS):
        e = min(b, s + CHUNK_ROWS)
        flat[s:e].view(-1).copy_(torch.from_numpy(np.unpackbits(packed[s:e].reshape(-1))))
    dense[:, HISTORY_PLANES:] *= aux.view(b, 8, 1, 1)
    return dense


def _expand_policy(idx: torch.Tensor, val: torch.Tensor, out=None, name="policy") -> torch.Tensor:
    if idx.device.type == "cpu" and idx.dtype == torch.int16 and val.dtype == torch.float32:
        b = idx.shape[0]
        if out is None:
            dense = torch.empty((b, POLICY_SIZE), dtype=torch.float32)
        else:
            dense = _check_out(name, out, (b, POLICY_SIZE), idx.device)
        idx_c, val_c = idx.contiguous(), val.contiguous()
        bad = kernel_policy(idx_c.data_ptr(), val_c.data_ptr(), dense.data_ptr(), b,
                            idx.shape[1]) if idx.numel() else None
        if bad is not None:
            if bad >= 0:
                raise bad_index(name, int(idx_c.view(-1)[bad]))
            return dense
    if out is None:
        dense = torch.full((idx.shape[0], POLICY_SIZE), -1.0, dtype=torch.float32,
                           device=idx.device)
    else:
        dense = _check_out(name, out, (idx.shape[0], POLICY_SIZE), idx.device).fill_(-1.0)
    # Padding slots repeat an entry of the row: every write of an index
    # writes the same value, in whatever order they land.
    dense.scatter_(1, idx.long(), val)
    return dense


def _check_out(name: str, t, shape, device) -> torch.Tensor:
    if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape or t.dtype != torch.float32 \
            or t.device != device or not t.is_contiguous():
        raise ValueError(
            "out[%r] must be a contiguous float32 tensor %s on %s for this batch, not %s"
            % (name, list(shape), device, "%s %s on %s" % (t.dtype, list(t.shape), t.device)
               if isinstance(t, torch.Tensor) else type(t).__name__))
    return t


def expand(tensors: Dict[str, torch.Tensor], how: str,
           out: Optional[Dict[str, torch.Tensor]] = None) -> Dict[str, torch.Tensor]:
    """The trainer's tensors of a packed batch (torch tensors on any
    device, uint16 tensors given as int16), by the header's expansion `how`
    (see lcmon.expand); "" returns them as they are. New tensors, except
    the planes and policy tensors `out` names ({name: tensor}, contiguous
    float32 of the expanded shape on the batch's device), written in place."""
    out = out or {}
    if how == "":
        return dict(tensors)
    if how == WIDEN:
        return {
            n: a.long() if a.dtype in (torch.uint8, torch.int16) else a for n, a in tensors.items()
        }
    if how != LC0:
        raise ValueError("unknown expansion %r" % (how,))
    return expand_lc0(
        tensors,
        lambda n, bits, aux: _expand_planes(bits, aux, out.get(n), n),
        lambda n, idx, val: _expand_policy(idx, val, out.get(n), n),
    )


def _views(buf: torch.Tensor, header: Header, rows: int) -> Dict[str, torch.Tensor]:
    """Typed views of a payload held as a uint8 tensor, sliced to rows."""
    out = {}
    for t in header.tensors:
        v = buf[t.offset : t.offset + t.nbytes].view(_TORCH[t.dtype]).view(t.shape)
        out[t.name] = v if rows == header.batch_size else v[:rows]
    return out


def _unpinned_caller() -> bool:
    """True when the DataLoader that is starting to iterate us was asked to
    pin memory (pin_memory=True) but will not: torch pins only where it has
    a CUDA device (or a pin_memory_device). Its single-process iterator
    makes the fetcher that calls iter() on the dataset; its frame holds the
    DataLoader as `loader` and itself, the pin decision made, as `self`."""
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return False
        loader = frame.f_locals.get("loader")
        it = frame.f_locals.get("self")
        if isinstance(loader, DataLoader) and hasattr(it, "_pin_memory"):
            return bool(getattr(loader, "pin_memory", False)) and not it._pin_memory
        frame = frame.f_back
    return False


def _auto_collation_of_caller() -> Optional[bool]:
    """True when the DataLoader that is starting to iterate us batches the
    items (batch_size is not None). torch's iterable fetcher calls iter()
    on the dataset from its __init__, whose arguments include
    auto_collation; None when it cannot be told."""
    frame = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            return None
        if "auto_collation" in frame.f_locals:
            v = frame.f_locals["auto_collation"]
            return bool(v) if isinstance(v, bool) else None
        frame = frame.f_back
    return None


def _ready(reader: BatchReader) -> bool:
    """A whole next batch is in the pipe already, so that reading it will
    not wait (not for the loader, nor for the next run after a DONE)."""
    f = reader._f
    h = reader.header
    if f is None or h is None:
        return False
    if not reader._fifo:
        return True  # a file: reading never waits
    try:
        buf = bytearray(4)
        fcntl.ioctl(f.fileno(), termios.FIONREAD, buf)
        # A full pipe also says the batch is coming: its writer is blocked
        # on the pipe, not waiting for data.
        room = fcntl.fcntl(f.fileno(), getattr(fcntl, "F_GETPIPE_SZ", 1032))
    except OSError:
        return False
    return int.from_bytes(buf, "little") >= min(32 + h.payload_bytes, room)


class _DeviceFeed:
    """Payloads to a device: pinned staging buffers, a copy stream, and the
    events that say when a staging buffer may be written again."""

    def __init__(self, device: torch.device, pin: bool):
        self.device = device
        self.cuda = device.type == "cuda"
        self.pin = pin and self.cuda
        self.stream = torch.cuda.Stream(device) if self.cuda else None
        self.staging = [None, None]
        self.events = [None, None]
        self.turn = 0

    def send(self, payload: np.ndarray):
        """Start copying one payload to the device; returns (tensor, event)."""
        i = self.turn
        self.turn ^= 1
        n = payload.nbytes
        if not self.cuda:  # a copy of its own, on the device
            return torch.from_numpy(payload).to(self.device, copy=True), None
        st = self.staging[i]
        if self.events[i] is not None:
            self.events[i].synchronize()  # its last copy is done
        if st is None or st.numel() < n:
            st = self.staging[i] = torch.empty(n, dtype=torch.uint8, pin_memory=self.pin)
        st = st[:n]
        st.copy_(torch.from_numpy(payload))
        with torch.cuda.stream(self.stream):
            d = st.to(self.device, non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(self.stream)
        self.events[i] = ev
        return d, ev

    def receive(self, d: torch.Tensor, ev) -> torch.Tensor:
        if ev is not None:
            cur = torch.cuda.current_stream(self.device)
            cur.wait_event(ev)
            d.record_stream(cur)
        return d


class BatchDataset(IterableDataset):
    """The batches of one lcmon pipe, as dicts of tensors.

    path: the named pipe lcmon's fifo_writer writes.
    copy: give each batch tensors of their own (default: zero-copy views,
        valid until the next batch; only matters for dense batches without
        a device).
    device: where the tensors go ("cuda", "cuda:1", "cpu", a torch.device);
        None: the CPU, with dense batches as zero-copy views.
    expand: expand packed layouts into the dense layout's tensors (default);
        False gives the packed tensors as they travel (uint16 as int16).
    prefetch: with a GPU device, start the next batch's copy before handing
        out the current one (1, the default) when it is ready; 0: never.
    pin_memory: stage copies to a GPU in pinned host memory (default True).
    Other keyword arguments go to lcmon.BatchReader (timeout, restarts,
    restart_timeout, on_run, ...); by default the dataset waits for the
    loader's next run when it is restarted.

    `reader` is the BatchReader while iterating (run_id, runs,
    batches_read, ...); `header` the stream header of the last batch.
    """

    def __init__(
        self,
        path,
        copy: bool = False,
        device=None,
        expand: bool = True,
        prefetch: int = 1,
        pin_memory: bool = True,
        **reader_kwargs,
    ):
        super().__init__()
        self.path = path
        self.copy = copy
        self.device = torch.device(device) if device is not None else None
        self.expand = expand
        self.prefetch = prefetch
        self.pin_memory = pin_memory
        self.reader_kwargs = reader_kwargs
        self.reader: Optional[BatchReader] = None
        self.header: Optional[Header] = None

    def __iter__(self) -> Iterator[Dict[str, torch.Tensor]]:
        info = get_worker_info()
        if info is not None:
            raise RuntimeError(
                "lcmon.torch.BatchDataset runs in DataLoader worker %d of %d: a pipe has one "
                "reader and lcmon already loads in parallel; make the DataLoader with "
                "num_workers=0" % (info.id, info.num_workers)
            )
        if _auto_collation_of_caller():
            raise RuntimeError(
                "lcmon.torch.BatchDataset yields whole batches, but this DataLoader would batch "
                "them again: make it with batch_size=None (and num_workers=0)"
            )
        copy = self.copy
        if not copy and _unpinned_caller() and (self.device is None or self.device.type == "cpu"):
            warnings.warn(
                "DataLoader(pin_memory=True) over lcmon.torch.BatchDataset: torch sees no CUDA "
                "device, so nothing is pinned; the dataset gives batches of their own (copies, "
                "as pinned ones would be) instead of views of its buffer",
                RuntimeWarning,
                stacklevel=3,
            )
            copy = True
        if self.device is not None and (self.device.type != "cpu" or copy):
            return self._device_batches()
        return self._cpu_batches(copy)

    def _finish(self, tensors: Dict[str, torch.Tensor], header: Header):
        self.header = header
        if self.expand and header.expand:
            return expand(tensors, header.expand)
        return tensors

    def _cpu_batches(self, copy: bool) -> Iterator[Dict[str, torch.Tensor]]:
        with BatchReader(self.path, copy=copy, **self.reader_kwargs) as reader:
            self.reader = reader
            for b in reader.batches():
                tensors = {
                    n: torch.from_numpy(a.view(np.int16) if a.dtype == np.dtype("<u2") else a)
                    for n, a in b.tensors.items()
                }
                yield self._finish(tensors, reader.header)

    def _device_batches(self) -> Iterator[Dict[str, torch.Tensor]]:
        feed = _DeviceFeed(self.device, self.pin_memory)
        with BatchReader(self.path, **self.reader_kwargs) as reader:
            self.reader = reader
            pending = None  # (device bytes, event, header, rows) of a batch sent ahead
            while True:
                if pending is None:
                    b = reader.read_batch()
                    if b is None:
                        return
                    pending = feed.send(reader.payload) + (reader.header, b.rows)
                d, ev, header, rows = pending
                pending = None
                failed = None
                if self.prefetch > 0 and _ready(reader):
                    try:
                        b = reader.read_batch()
                    except Exception as e:  # hand out the batch in hand first
                        failed, b = e, None
                    if b is not None:
                        pending = feed.send(reader.payload) + (reader.header, b.rows)
                d = feed.receive(d, ev)
                yield self._finish(_views(d, header, rows), header)
                if failed is not None:
                    raise failed
                if pending is None and reader.done:
                    return


def loader(path, pin_memory: bool = False, **kwargs) -> DataLoader:
    """A DataLoader over BatchDataset(path, **kwargs) with the right
    settings: batch_size=None, num_workers=0. pin_memory=True gives the loop
    batches of its own (copies), pinned where CUDA exists; without CUDA it
    warns once that it cannot pin and copies all the same."""
    if pin_memory:
        kwargs.setdefault("copy", True)
        if not torch.cuda.is_available():
            warnings.warn(
                "lcmon.torch.loader(pin_memory=True): torch sees no CUDA device, so nothing can be "
                "pinned; the batches are copies of their own all the same",
                RuntimeWarning,
                stacklevel=2,
            )
            pin_memory = False
    return DataLoader(
        BatchDataset(path, **kwargs), batch_size=None, num_workers=0, pin_memory=pin_memory
    )
