"""torch: lcmon's batch stream as a torch IterableDataset.

    from torch.utils.data import DataLoader
    from lcmon.torch import BatchDataset

    ds = BatchDataset("/tmp/lcmon.pipe")
    loader = DataLoader(ds, batch_size=None, num_workers=0, pin_memory=True)
    for batch in loader:                     # dict: name -> torch.Tensor
        inputs = batch["inputs"].cuda(non_blocking=True)

Each item is a whole batch, already batched by lcmon: the DataLoader must not
batch again (batch_size=None) and must not start workers (num_workers=0: a
pipe has one reader, and lcmon already loads in parallel). BatchDataset
refuses both mistakes with a clear error when it starts iterating.
lcmon.torch.loader(path) makes such a DataLoader.

The tensors are made with torch.from_numpy over the reader's buffer: no
copy, and valid until the next batch is read. With pin_memory=True the
DataLoader copies each batch into pinned memory at once, so what the loop
holds is its own; otherwise pass copy=True if the loop keeps batches past
the next one.
"""

import sys
from typing import Dict, Iterator, Optional

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from .stream import BatchReader

__all__ = ["BatchDataset", "loader"]


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


class BatchDataset(IterableDataset):
    """The batches of one lcmon pipe, as dicts of tensors.

    path: the named pipe lcmon's fifo_writer writes.
    copy: give each batch tensors of their own (default: zero-copy views,
        valid until the next batch).
    Other keyword arguments go to lcmon.BatchReader (timeout, restarts,
    restart_timeout, on_run, ...); by default the dataset waits for the
    loader's next run when it is restarted.

    `reader` is the BatchReader while iterating (run_id, runs,
    batches_read, ...).
    """

    def __init__(self, path, copy: bool = False, **reader_kwargs):
        super().__init__()
        self.path = path
        self.copy = copy
        self.reader_kwargs = reader_kwargs
        self.reader: Optional[BatchReader] = None

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
        return self._batches()

    def _batches(self) -> Iterator[Dict[str, torch.Tensor]]:
        with BatchReader(self.path, copy=self.copy, **self.reader_kwargs) as reader:
            self.reader = reader
            for tensors in reader:
                yield {name: torch.from_numpy(a) for name, a in tensors.items()}


def loader(path, pin_memory: bool = False, **kwargs) -> DataLoader:
    """A DataLoader over BatchDataset(path, **kwargs) with the right
    settings: batch_size=None, num_workers=0."""
    return DataLoader(
        BatchDataset(path, **kwargs), batch_size=None, num_workers=0, pin_memory=pin_memory
    )
