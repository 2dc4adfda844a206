"""The CPU expansion of packed batches (issue 38, item 5) against a
straightforward reference written here from docs/batch-stream.md, bit for
bit: lcmon.expand and lcmon.Expander (numpy) and lcmon.torch.expand on the
CPU. test_packed also holds every packed batch of every record version and
both layouts that the real lcmon writes against this reference.

- made-up packed tensors: every byte value in the bit planes, batches of
  0, 1, 31, 32, 33 and 100 positions (around the rows expanded at a time),
  policies of 1, 80 and 128 slots whose padding repeats an entry, inputs
  that are slices of larger arrays (not contiguous), several plane/policy
  pairs in one batch;
- plane values with a sign bit, infinite or NaN;
- each of these with the C kernel of the build (python/lcmon_expand.c,
  when the build makes it: not with sanitizers) and with numpy;
- out=: the caller's arrays written in place and returned, for numpy and
  torch and for "widen-int64"; one of the wrong shape or dtype refused
  naming it; a policy index past 1857 refused naming the tensor (it would
  land in the next row's policy otherwise).

Environment: PYTHONPATH (python/ and this folder); LCMON_EXPAND_LIB (the
build's C kernel, when it makes one); torch is optional.
"""

import copy
import os
import unittest

import numpy as np

import lcmon
from lcmon import expand_kernel as kernel
from lcmon.expand import HISTORY_PLANES, PLANES, POLICY_SIZE

try:
    import torch

    import lcmon.torch as ltorch
except ImportError:  # torch is optional for the package
    torch = None


def reference_planes(bits, aux, multiply=False):
    """P float32 [B,112,8,8] the doc's way: square 8 * rank + file of plane
    p is bit (7 - file) of bits[b, p, rank]; for planes 104..111 the value
    aux[b, p - 104] where the bit is set and +0.0 elsewhere (multiply=True:
    the bit times the value, as lcmon.torch computes it, the same for the
    values a stream holds: finite and not negative)."""
    bits = np.asarray(bits)
    aux = np.asarray(aux)
    out = np.zeros(bits.shape[:1] + (PLANES, 8, 8), np.float32)
    for p in range(PLANES):
        for file in range(8):
            out[:, p, :, file] = (bits[:, p, :] >> (7 - file)) & 1
    for i in range(PLANES - HISTORY_PLANES):
        plane = out[:, HISTORY_PLANES + i]
        value = aux[:, i, None, None]
        if multiply:
            plane[...] = plane * value
        else:
            plane[...] = np.where(plane != 0, value, np.float32(0.0))
    return out


def reference_policy(idx, val):
    """Q float32 [B,1858]: -1 everywhere, then val[b, k] at idx[b, k]."""
    idx = np.asarray(idx).astype(np.int64)
    val = np.asarray(val)
    out = np.full((idx.shape[0], POLICY_SIZE), -1.0, np.float32)
    rows = np.arange(idx.shape[0])
    for k in range(idx.shape[1]):
        out[rows, idx[:, k]] = val[:, k]
    return out


def reference_expand(tensors, how, multiply=False):
    """The trainer's tensors of packed numpy tensors, the doc's way."""
    if how == "widen-int64":
        return {n: a.astype(np.int64) if a.dtype in (np.uint8, np.uint16) else a
                for n, a in tensors.items()}
    assert how == "lc0-packed-1", how
    out = {}
    for n, a in tensors.items():
        if n.endswith("_bits"):
            out[n[:-5]] = reference_planes(a, tensors[n[:-5] + "_aux"], multiply)
        elif n.endswith("_idx"):
            out[n[:-4]] = reference_policy(a, tensors[n[:-4] + "_val"])
        elif not (n.endswith("_aux") or n.endswith("_val")):
            out[n] = a
    return out


def torch_inputs(tensors):
    """Packed numpy tensors as lcmon.torch takes them (uint16 as int16)."""
    return {n: torch.from_numpy(np.ascontiguousarray(a).view(np.int16)
                                if a.dtype == np.uint16 else np.ascontiguousarray(a))
            for n, a in tensors.items()}


def assert_same_bits(test, got, want, what):
    test.assertEqual(sorted(got), sorted(want), what)
    for n in want:
        g = np.ascontiguousarray(got[n].numpy() if torch is not None and isinstance(
            got[n], torch.Tensor) else got[n])
        w = np.ascontiguousarray(want[n])
        test.assertEqual((g.dtype, g.shape), (w.dtype, w.shape), "%s: %s" % (what, n))
        if g.tobytes() != w.tobytes():
            bad = np.flatnonzero(g.view(np.uint8) != w.view(np.uint8))
            test.fail("%s: %s differs in %d bytes, first at byte %d"
                      % (what, n, len(bad), int(bad[0])))


def paths():
    """The ways this package can expand on the CPU: the C kernel of the
    build (when there is one) and numpy."""
    return (["kernel"] if kernel() else []) + ["numpy"]


def check_against_reference(test, tensors, how, what, multiply_ok=True):
    """lcmon.expand, a reusing Expander (twice: the second batch into the
    first's arrays) and lcmon.torch.expand on the CPU against the
    reference, bit for bit, with the C kernel and with numpy."""
    want = reference_expand(tensors, how)
    had = kernel()
    try:
        for path in paths():
            kernel(path == "kernel")
            w = "%s (%s)" % (what, path)
            assert_same_bits(test, lcmon.expand(tensors, how), want, w + ": lcmon.expand")
            ex = lcmon.Expander()
            ex(tensors, how)
            assert_same_bits(test, ex(tensors, how), want, w + ": Expander, reused")
            if torch is not None and multiply_ok:
                got = ltorch.expand(torch_inputs(tensors), how)
                assert_same_bits(test, got, reference_expand(tensors, how, multiply=True),
                                 w + ": lcmon.torch.expand")
    finally:
        kernel(had is not None)


def made_up(rows, slots, rng, pairs=("inputs",), policies=("policy",)):
    """Packed lc0 tensors of `rows` positions: random bit planes (every
    byte value, zero bytes and full ones among them), plane values that are
    finite and not negative (zero among them), a policy of `slots` slots of
    distinct indices whose last ones repeat the first (the padding)."""
    t = {}
    for name in pairs:
        bits = rng.integers(0, 256, size=(rows, PLANES, 8), dtype=np.uint8)
        bits[:, ::7] = 0
        bits[:, 1::9] = 255
        aux = rng.random((rows, 8), dtype=np.float32) * 100
        aux[:, 2] = 0.0
        aux[:, 3] = 1.0
        t[name + "_bits"], t[name + "_aux"] = bits, aux
    for name in policies:
        idx = np.empty((rows, slots), np.uint16)
        val = rng.random((rows, slots), dtype=np.float32)
        for r in range(rows):
            legal = max(1, slots - r % 5)
            idx[r, :legal] = rng.choice(POLICY_SIZE, size=legal, replace=False)
            idx[r, legal:] = idx[r, 0]
            val[r, legal:] = val[r, 0]
        t[name + "_idx"], t[name + "_val"] = idx, val
    t["values"] = rng.random((rows, 6, 3), dtype=np.float32)
    return t


class Reference(unittest.TestCase):
    def test_made_up_batches(self):
        rng = np.random.default_rng(38)
        for rows in (0, 1, 31, 32, 33, 100):
            for slots in (1, 80, 128):
                t = made_up(rows, slots, rng)
                check_against_reference(self, t, "lc0-packed-1",
                                        "%d rows, %d slots" % (rows, slots))

    def test_every_byte_value(self):
        """Plane p of position r has byte (p * 8 + rank + r) % 256: all 256
        values at every rank, in history and value planes."""
        rows = 40
        r = np.arange(rows)[:, None, None]
        p = np.arange(PLANES)[None, :, None]
        rank = np.arange(8)[None, None, :]
        t = made_up(rows, 80, np.random.default_rng(1))
        t["inputs_bits"] = ((p * 8 + rank + r) % 256).astype(np.uint8)
        check_against_reference(self, t, "lc0-packed-1", "every byte value")

    def test_slices_and_several_pairs(self):
        """Inputs that are views with steps (rows of a larger batch), and
        two plane pairs and two policies in one batch."""
        rng = np.random.default_rng(2)
        big = made_up(90, 80, rng, pairs=("inputs", "more"), policies=("policy", "opp"))
        t = {n: a[::3] for n, a in big.items()}
        self.assertFalse(t["inputs_bits"].flags.c_contiguous)
        check_against_reference(self, t, "lc0-packed-1", "slices, two pairs")

    def test_odd_values(self):
        """Plane values with a sign bit, infinite or NaN (lcmon writes none):
        numpy's rule, the value where the bit is set and +0.0 elsewhere, in
        the kernel as in numpy; torch's rule, the bit times the value, for
        negative values and -0.0."""
        t = made_up(40, 80, np.random.default_rng(8))
        t["inputs_aux"][:, 0] = -0.0
        t["inputs_aux"][:, 1] = -3.5
        check_against_reference(self, t, "lc0-packed-1", "negative values")
        t["inputs_aux"][:, 4] = np.inf
        t["inputs_aux"][:, 5] = -np.inf
        t["inputs_aux"][:, 6] = np.float32(np.nan)
        t["inputs_aux"][::2, 7] = np.frombuffer(b"\x01\x00\xc0\x7f", np.float32)[0]
        check_against_reference(self, t, "lc0-packed-1", "infinite and NaN values",
                                multiply_ok=False)

    def test_kernel_built(self):
        """The build's C kernel is the one the package uses (meson passes
        it as LCMON_EXPAND_LIB; none in sanitizer builds)."""
        lib = os.environ.get("LCMON_EXPAND_LIB")
        if not lib:
            self.skipTest("this build makes no C kernel (LCMON_EXPAND_LIB is not set)")
        self.assertEqual(kernel(), os.path.abspath(lib))

    def test_widen(self):
        rng = np.random.default_rng(3)
        t = {"tokens": rng.integers(0, 32768, size=(33, 70), dtype=np.uint16),
             "mask": rng.integers(0, 2, size=(33, 70), dtype=np.uint8),
             "target": rng.random((33, 4), dtype=np.float32)}
        check_against_reference(self, t, "widen-int64", "widen-int64")


class Out(unittest.TestCase):
    """Each test with the C kernel (when the build made one) and numpy."""

    path = None

    def run(self, result=None):
        if self.path is not None:
            return super().run(result)
        had = kernel()
        try:
            for path in paths():  # a copy each, so that a failure names its path
                kernel(path == "kernel")
                one = copy.copy(self)
                one.path = path
                one.run(result)
        finally:
            kernel(had is not None)
        return result

    def __str__(self):
        return "%s [%s]" % (super().__str__(), self.path)

    def test_numpy_out(self):
        t = made_up(50, 80, np.random.default_rng(4))
        want = reference_expand(t, "lc0-packed-1")
        planes = np.full((50, PLANES, 8, 8), 7.0, np.float32)
        policy = np.full((50, POLICY_SIZE), 7.0, np.float32)
        got = lcmon.expand(t, "lc0-packed-1", out={"inputs": planes, "policy": policy})
        self.assertIs(got["inputs"], planes)
        self.assertIs(got["policy"], policy)
        assert_same_bits(self, got, want, "lcmon.expand(out=)")
        ex = lcmon.Expander(reuse=False)
        only = np.empty((50, POLICY_SIZE), np.float32)
        got = ex(t, "lc0-packed-1", out={"policy": only})
        self.assertIs(got["policy"], only)
        self.assertIsNot(got["inputs"], planes)
        assert_same_bits(self, got, want, "Expander(out=) for one tensor")
        # Without out= the next call writes arrays of its own.
        self.assertIsNot(ex(t, "lc0-packed-1")["policy"], only)

    def test_numpy_out_widen(self):
        t = {"tokens": np.arange(60, dtype=np.uint16).reshape(3, 20)}
        w = np.zeros((3, 20), np.int64)
        got = lcmon.expand(t, "widen-int64", out={"tokens": w})
        self.assertIs(got["tokens"], w)
        self.assertEqual(w.tolist(), t["tokens"].astype(np.int64).tolist())

    def test_numpy_out_refused(self):
        t = made_up(10, 80, np.random.default_rng(5))
        for bad in (np.empty((11, PLANES, 8, 8), np.float32),
                    np.empty((10, PLANES, 8, 8), np.float64),
                    np.empty((10, PLANES, 8, 16), np.float32)[..., ::2]):
            with self.assertRaises(ValueError) as e:
                lcmon.expand(t, "lc0-packed-1", out={"inputs": bad})
            self.assertIn("out['inputs']", str(e.exception))
            self.assertIn("[10, 112, 8, 8]", str(e.exception))

    def test_index_past_the_policy(self):
        t = made_up(4, 80, np.random.default_rng(6))
        t["policy_idx"][2, 5] = POLICY_SIZE
        with self.assertRaises(IndexError) as e:
            lcmon.expand(t, "lc0-packed-1")
        self.assertIn("policy_idx", str(e.exception))
        self.assertIn("1858", str(e.exception))

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_torch_out(self):
        t = made_up(50, 80, np.random.default_rng(7))
        want = reference_expand(t, "lc0-packed-1", multiply=True)
        planes = torch.full((50, PLANES, 8, 8), 7.0)
        policy = torch.full((50, POLICY_SIZE), 7.0)
        got = ltorch.expand(torch_inputs(t), "lc0-packed-1",
                            out={"inputs": planes, "policy": policy})
        self.assertIs(got["inputs"], planes)
        self.assertIs(got["policy"], policy)
        assert_same_bits(self, got, want, "lcmon.torch.expand(out=)")
        with self.assertRaises(ValueError) as e:
            ltorch.expand(torch_inputs(t), "lc0-packed-1",
                          out={"inputs": torch.empty(50, PLANES, 64)})
        self.assertIn("out['inputs']", str(e.exception))
        self.assertIn("[50, 112, 8, 8]", str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
