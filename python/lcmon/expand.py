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

On the CPU the expansion writes each output byte once: with the C kernel
of the source tree's build (python/lcmon_expand.c, built by meson into
build/python/liblcmon_expand.so, loaded with ctypes; LCMON_EXPAND_LIB names
another file) when there is one, else with numpy, chunk by chunk into the
output. Both give the same bits; lcmon.expand_kernel() (kernel() here)
says which is used, and LCMON_EXPAND=numpy (or expand_kernel(False)) keeps
to numpy.
"""

import ctypes
import logging
import os
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

__all__ = ["expand", "Expander", "packed_groups", "kernel", "POLICY_SIZE", "PLANES",
           "HISTORY_PLANES"]

log = logging.getLogger("lcmon.expand")

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


KERNEL_ABI = 1  # lcmon_expand_abi() of the C kernel this file calls
KERNEL_NAME = os.path.join("python", "liblcmon_expand.so")  # in a build directory
_kernel: Optional[ctypes.CDLL] = None
_kernel_path: Optional[str] = None
_kernel_state = {"looked": False, "on": os.environ.get("LCMON_EXPAND", "") != "numpy"}


def _load_kernel() -> None:
    global _kernel, _kernel_path
    _kernel_state["looked"] = True
    given = os.environ.get("LCMON_EXPAND_LIB")
    if given:
        places = [given]
    else:
        from .loader import build_dirs

        places = [p for p in (os.path.join(d, KERNEL_NAME) for d in build_dirs())
                  if os.path.exists(p)]
    for path in places:
        try:
            lib = ctypes.CDLL(path)
            abi = lib.lcmon_expand_abi()
        except (OSError, AttributeError) as e:
            log.warning("%s: the C kernel of lcmon.expand did not load (%s); expanding with "
                        "numpy. Build it again (ninja -C build) or unset LCMON_EXPAND_LIB",
                        path, e)
            continue
        if abi != KERNEL_ABI:
            log.warning("%s: a C kernel of lcmon.expand of another version (%d, this package "
                        "calls %d); expanding with numpy. Build it again (ninja -C build)",
                        path, abi, KERNEL_ABI)
            continue
        lib.lcmon_expand_planes.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                            ctypes.c_int64, ctypes.c_int]
        lib.lcmon_expand_planes.restype = None
        lib.lcmon_expand_policy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                            ctypes.c_int64, ctypes.c_int64]
        lib.lcmon_expand_policy.restype = ctypes.c_int64
        _kernel, _kernel_path = lib, os.path.abspath(path)
        return


def kernel(enable: Optional[bool] = None) -> Optional[str]:
    """The C kernel's file when expansions on the CPU use it, else None
    (numpy). enable=False: numpy from now on; True: the kernel again, when
    there is one."""
    if enable is not None:
        _kernel_state["on"] = bool(enable)
    if not _kernel_state["on"]:
        return None
    if not _kernel_state["looked"]:
        _load_kernel()
    return _kernel_path


def _lib() -> Optional[ctypes.CDLL]:
    return _kernel if kernel() else None


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def kernel_planes(bits_addr: int, aux_addr: int, out_addr: int, rows: int,
                  multiply: bool) -> bool:
    """The C kernel's planes, from and into C-contiguous memory at those
    addresses (uint8 [rows,112,8], float32 [rows,8], float32
    [rows,112,8,8]); multiply: bit times value (torch's rule) instead of
    value where set. False when there is no kernel."""
    lib = _lib()
    if lib is None:
        return False
    lib.lcmon_expand_planes(bits_addr, aux_addr, out_addr, rows, int(multiply))
    return True


def kernel_policy(idx_addr: int, val_addr: int, out_addr: int, rows: int,
                  slots: int) -> Optional[int]:
    """The C kernel's policy (2-byte indices [rows,slots], float32 values
    [rows,slots], float32 [rows,1858], C-contiguous): -1, or the position
    of the first index past the policy; None when there is no kernel."""
    lib = _lib()
    if lib is None:
        return None
    return lib.lcmon_expand_policy(idx_addr, val_addr, out_addr, rows, slots)


def bad_index(name: str, index: int) -> IndexError:
    return IndexError(
        "%s_idx holds index %d, outside the policy's 0..%d: the batch is not lc0-packed-1 "
        "(check the stream's layout and that the reader is as new as the writer)"
        % (name, index, POLICY_SIZE - 1))


# Positions expanded at a time: the 0/1 bytes of 32 positions' planes
# (229 KB) stay in the cache between unpacking them and widening them to
# float32, instead of a batch-sized temporary going out to memory and back.
CHUNK_ROWS = 32


def planes_into(bits: np.ndarray, aux: np.ndarray, out: np.ndarray) -> np.ndarray:
    """P_bits uint8 [B,112,8] and P_aux float32 [B,8] expanded into `out`,
    a C-contiguous float32 [B,112,8,8]; returns out."""
    b = bits.shape[0]
    bits = np.ascontiguousarray(bits).reshape(b, PLANES * 8)
    aux = np.ascontiguousarray(aux, dtype=np.float32)
    if b and kernel_planes(_addr(bits), _addr(aux), _addr(out), b, False):
        return out
    flat = out.reshape(b, PLANES, 64)
    # Planes 104..111: the value where the bit is set, +0.0 elsewhere. For
    # values that are finite and without a sign bit (what lcmon writes)
    # that is the 0.0 or 1.0 square times the value; others are copied
    # where the bit is set (a product would give -0.0 or NaN for the rest).
    # The product is one pass over the batch's value planes at the end
    # (faster than one a chunk: numpy's loops over 64 squares are short).
    plain = bool(np.isfinite(aux).all() and not np.signbit(aux).any())
    for s in range(0, b, CHUNK_ROWS):
        e = min(b, s + CHUNK_ROWS)
        sq = np.unpackbits(bits[s:e].reshape(-1)).reshape(e - s, PLANES, 64)  # 0/1 bytes
        np.copyto(flat[s:e], sq, casting="unsafe")
        if not plain:
            np.copyto(flat[s:e, HISTORY_PLANES:], aux[s:e, :, None],
                      where=sq[:, HISTORY_PLANES:].view(np.bool_))
    if plain:
        np.multiply(flat[:, HISTORY_PLANES:], aux[:, :, None], out=flat[:, HISTORY_PLANES:])
    return out


def policy_into(name: str, idx: np.ndarray, val: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Q_idx [B,K] (uint16, or int16 as torch views it) and Q_val float32
    [B,K] expanded into `out`, a C-contiguous float32 [B,1858]; returns
    out. `name` names the policy in the error for an index past 1857."""
    b = idx.shape[0]
    if idx.size == 0:
        out.fill(-1.0)
        return out
    if idx.dtype.itemsize == 2:
        idx = np.ascontiguousarray(idx)
        val = np.ascontiguousarray(val, dtype=np.float32)
        bad = kernel_policy(_addr(idx), _addr(val), _addr(out), b, idx.shape[1])
        if bad is not None:
            if bad >= 0:
                raise bad_index(name, int(idx.reshape(-1)[bad]))
            return out
    out.fill(-1.0)
    top = int(idx.max())
    low = int(idx.min()) if idx.dtype.kind == "i" else 0
    if top >= POLICY_SIZE or low < 0:
        raise bad_index(name, top if top >= POLICY_SIZE else low)
    # Flat indices into out: each row's offset added. Padding slots repeat
    # an entry of their row, so the writes' order is moot.
    flat = np.add(idx, np.arange(0, b * POLICY_SIZE, POLICY_SIZE, dtype=np.intp)[:, None],
                  dtype=np.intp)
    out.reshape(-1)[flat.reshape(-1)] = val.reshape(-1)
    return out


def _check_out(name: str, a: np.ndarray, shape: Tuple[int, ...], dtype) -> np.ndarray:
    if not isinstance(a, np.ndarray) or a.shape != shape or a.dtype != dtype \
            or not a.flags.c_contiguous or not a.flags.writeable:
        raise ValueError(
            "out[%r] must be a writeable C-contiguous numpy array of %s %s for this batch, "
            "not %s" % (name, np.dtype(dtype).name, list(shape),
                        "%s %s" % (a.dtype, list(a.shape)) if isinstance(a, np.ndarray)
                        else type(a).__name__))
    return a


class Expander:
    """Expands batch after batch into output arrays it reuses (reuse=True:
    like the reader's views, valid until the next batch) or new ones; or
    into the caller's arrays: out={name: array} (each of the expanded
    tensor's shape and dtype, C-contiguous), for the tensors it names."""

    def __init__(self, reuse: bool = True):
        self.reuse = reuse
        self._out: Dict[Tuple[str, Tuple[int, ...]], np.ndarray] = {}

    def _buffer(self, name: str, shape: Tuple[int, ...], dtype,
                given: Mapping[str, np.ndarray]) -> np.ndarray:
        if name in given:
            return _check_out(name, given[name], shape, dtype)
        if not self.reuse:
            return np.empty(shape, dtype=dtype)
        key = (name, shape)
        a = self._out.get(key)
        if a is None:
            if len(self._out) > 64:
                self._out.clear()
            a = self._out[key] = np.empty(shape, dtype=dtype)
        return a

    def __call__(self, tensors: Mapping[str, np.ndarray], how: Optional[str] = None,
                 out: Optional[Mapping[str, np.ndarray]] = None):
        if how is None:
            how = _infer(tensors)
        if how == "":
            return dict(tensors)
        given = out or {}
        if how == WIDEN:
            res = {}
            for n, a in tensors.items():
                if a.dtype in (np.uint8, np.uint16):
                    w = self._buffer(n, a.shape, np.int64, given)
                    np.copyto(w, a)
                    res[n] = w
                else:
                    res[n] = a
            return res
        if how != LC0:
            raise ValueError("unknown expansion %r (lcmon knows %r and %r)" % (how, LC0, WIDEN))
        return expand_lc0(
            tensors,
            lambda n, bits, aux: planes_into(
                bits, aux, self._buffer(n, (bits.shape[0], PLANES, 8, 8), np.float32, given)),
            lambda n, idx, val: policy_into(
                n, idx, val, self._buffer(n, (idx.shape[0], POLICY_SIZE), np.float32, given)),
        )


def expand(batch, how: Optional[str] = None,
           out: Optional[Mapping[str, np.ndarray]] = None) -> Dict[str, np.ndarray]:
    """The trainer's tensors of one batch: a Batch (its header's expansion
    is used) or a dict of arrays (the expansion is `how`, or told from the
    tensor names: *_bits means "lc0-packed-1", uint8/uint16 "widen-int64").
    A dense batch is returned as it is. New arrays each call, except those
    `out` names: {name: array} of the expanded tensor's shape and dtype
    (C-contiguous), written in place (ValueError when one does not fit)."""
    if how is None and hasattr(batch, "expand") and hasattr(batch, "tensors"):
        how = batch.expand
    tensors = batch.tensors if hasattr(batch, "tensors") else batch
    return Expander(reuse=False)(tensors, how, out)
