"""Expand packed batches into the tensors a trainer takes (numpy).

lcmon's packed layouts (tensor_generator or game_tokenizer with
`packed: true`) send the same positions in far fewer bytes; the stream
header names how to expand them (docs/batch-stream.md), and expanding gives
exactly, bit for bit, the tensors of the dense layout:

    "lc0-packed-1"  P_bits uint8 [B,112,8] and P_aux float32 [B,8] become
                    P float32 [B,112,8,8]: square s = 8 * rank + file of
                    plane p is bit (7 - file) of P_bits[b, p, rank], times
                    P_aux[b, p - 104] for planes 104..111 (1 for the rest);
                    Q_idx uint16 [B,K] and Q_val float32 [B,K] become
                    Q float32 [B,1858]: -1 everywhere, then Q_val[b, k] at
                    Q_idx[b, k] for every k (the padding slots repeat an
                    entry, so every slot may be written). Other tensors
                    stay as they are.
    "widen-int64"   every uint8 and uint16 tensor becomes int64.

    import lcmon
    with lcmon.BatchReader("/tmp/lcmon.pipe") as reader:
        for b in reader.batches():
            tensors = lcmon.expand(b)     # dict: name -> numpy array

BatchReader(path, expand=True) does the same for every batch. For torch
(on any device), lcmon.torch.BatchDataset expands there instead.
"""

from typing import Dict, Mapping, Optional, Tuple, Union

import numpy as np

__all__ = ["expand", "Expander", "packed_groups", "POLICY_SIZE", "PLANES", "HISTORY_PLANES"]

POLICY_SIZE = 1858
PLANES = 112
HISTORY_PLANES = 104  # planes 0..103 are 0/1; 104..111 carry the aux values

LC0 = "lc0-packed-1"
WIDEN = "widen-int64"


def _infer(tensors: Mapping[str, np.ndarray]) -> str:
    """The expansion a dict of packed tensors needs, from its names and
    dtypes (for a dict without its Batch)."""
    if any(n.endswith("_bits") for n in tensors):
        return LC0
    if any(a.dtype in (np.uint8, np.uint16) for a in tensors.values()):
        return WIDEN
    return ""


def packed_groups(names) -> Tuple[Dict[str, str], Dict[str, str]]:
    """The lc0 packed layout's groups: ({planes: bits name}, {policy: idx
    name}) for every P_bits with its P_aux and Q_idx with its Q_val."""
    names = list(names)
    planes = {n[:-5]: n for n in names if n.endswith("_bits") and n[:-5] + "_aux" in names}
    policy = {n[:-4]: n for n in names if n.endswith("_idx") and n[:-4] + "_val" in names}
    if not planes or not policy:
        raise ValueError(
            "not an lc0 packed batch: its tensors %s lack a *_bits/*_aux or *_idx/*_val pair"
            % sorted(names)
        )
    return planes, policy


def expand_lc0(tensors: Mapping, planes_fn, policy_fn) -> dict:
    """The "lc0-packed-1" expansion of tensors of any array type: each
    P_bits/P_aux pair becomes P = planes_fn(P, bits, aux), each Q_idx/Q_val
    pair Q = policy_fn(Q, idx, val), in the packed tensors' order; the
    rest is kept."""
    planes, policy = packed_groups(tensors)
    skip = {n + "_aux" for n in planes} | {n + "_val" for n in policy}
    out = {}
    for n, a in tensors.items():
        if n in skip:
            continue
        if n.endswith("_bits") and n[:-5] in planes:
            out[n[:-5]] = planes_fn(n[:-5], a, tensors[n[:-5] + "_aux"])
        elif n.endswith("_idx") and n[:-4] in policy:
            out[n[:-4]] = policy_fn(n[:-4], a, tensors[n[:-4] + "_val"])
        else:
            out[n] = a
    return out


class Expander:
    """Expands batch after batch into output arrays it reuses (reuse=True:
    like the reader's views, valid until the next batch) or new ones."""

    def __init__(self, reuse: bool = True):
        self.reuse = reuse
        self._out: Dict[Tuple[str, Tuple[int, ...]], np.ndarray] = {}

    def _buffer(self, name: str, shape: Tuple[int, ...], dtype) -> np.ndarray:
        if not self.reuse:
            return np.empty(shape, dtype=dtype)
        key = (name, shape)
        a = self._out.get(key)
        if a is None:
            if len(self._out) > 64:
                self._out.clear()
            a = self._out[key] = np.empty(shape, dtype=dtype)
        return a

    def __call__(self, tensors: Mapping[str, np.ndarray], how: Optional[str] = None):
        if how is None:
            how = _infer(tensors)
        if how == "":
            return dict(tensors)
        if how == WIDEN:
            out = {}
            for n, a in tensors.items():
                if a.dtype in (np.uint8, np.uint16):
                    w = self._buffer(n, a.shape, np.int64)
                    w[...] = a
                    out[n] = w
                else:
                    out[n] = a
            return out
        if how != LC0:
            raise ValueError("unknown expansion %r (lcmon knows %r and %r)" % (how, LC0, WIDEN))
        return expand_lc0(tensors, self._planes, self._policy)

    def _planes(self, name: str, bits: np.ndarray, aux: np.ndarray) -> np.ndarray:
        b = bits.shape[0]
        dense = self._buffer(name, (b, PLANES, 8, 8), np.float32)
        flat = dense.reshape(b, PLANES, 64)
        sq = np.unpackbits(bits, axis=-1, bitorder="big")  # [B,112,64] of 0/1
        flat[...] = sq
        # Planes 104..111: the value where the bit is set, +0.0 elsewhere.
        flat[:, HISTORY_PLANES:] = np.where(
            sq[:, HISTORY_PLANES:] != 0, aux[:, :, None], np.float32(0.0)
        )
        return dense

    def _policy(self, name: str, idx: np.ndarray, val: np.ndarray) -> np.ndarray:
        b = idx.shape[0]
        dense = self._buffer(name, (b, POLICY_SIZE), np.float32)
        dense.fill(-1.0)
        np.put_along_axis(dense, idx.astype(np.intp), val, axis=1)
        return dense


def expand(batch, how: Optional[str] = None) -> Dict[str, np.ndarray]:
    """The trainer's tensors of one batch: a Batch (its header's expansion
    is used) or a dict of arrays (the expansion is `how`, or told from the
    tensor names: *_bits means "lc0-packed-1", uint8/uint16 "widen-int64").
    A dense batch is returned as it is. New arrays each call."""
    if how is None and hasattr(batch, "expand") and hasattr(batch, "tensors"):
        how = batch.expand
    tensors = batch.tensors if hasattr(batch, "tensors") else batch
    return Expander(reuse=False)(tensors, how)
