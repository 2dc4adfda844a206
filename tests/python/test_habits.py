"""What a port from upstream's DataLoader needs (issue 34, item 5), against
a real lcmon started by lcmon.Loader:

- reads that do not wait: maybe_next() (get(block=False)) gives whole
  batches, in order and intact, while lcmon writes at full speed (batches of
  2.3 MB, more than the pipe holds, so that many reads find half a batch),
  None at once when nothing is ready, and the reader stays open after it and
  after a timeout: the same reader goes on when batches come again;
- a train/test config (two writers) starts and serves both outputs by
  name;
- Loader.batches() gives packed batches expanded by default, equal bit for
  bit to the numpy expansion of the packed bytes that crossed the pipe;
  expand=False the packed ones;
- arrays of the caller's own (copy=True) survive the next reads, dense and
  expanded; the default views do not (as the docs say);
- torch's DataLoader(pin_memory=True) without CUDA gives batches of their
  own, with a warning that nothing is pinned;
- the package installed from a source tree whose build holds lcmon (what
  scripts/setup leaves) finds it without LCMON or PATH, and runs it; and
  the expansion's C kernel of that build, when it makes one.

Environment: LCMON (the executable), LCMON_TEST_DATA, LCMON_SOURCE_ROOT,
LCMON_TEST_SLOW, PYTHONPATH (python/ and this folder).
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import unittest
import warnings

import numpy as np

import lcmon
from lcmon import Loader
from test_loader import config_dict

DATA = os.path.abspath(os.environ["LCMON_TEST_DATA"])
LCMON = os.path.abspath(os.environ["LCMON"])
SOURCE_ROOT = os.path.abspath(os.environ["LCMON_SOURCE_ROOT"])
SLOW = float(os.environ.get("LCMON_TEST_SLOW", "1"))
WAIT = 60 * SLOW


def config(batch_size, packed=False):
    """test_loader's pipeline, dense or packed."""
    c = config_dict(batch_size)
    c["stages"][5]["tensor_generator"]["packed"] = packed
    return c


def check_batch(test, b, rows):
    """A whole, aligned batch of the current layout: 0/1 history planes,
    every policy row a distribution over its legal moves (-1 elsewhere)."""
    test.assertEqual(b["inputs"].shape, (rows, 112, 8, 8))
    test.assertEqual(b["policy"].shape, (rows, 1858))
    test.assertTrue(np.isin(b["inputs"][:, :104], (0.0, 1.0)).all())
    p = b["policy"]
    test.assertTrue(((p == -1) | (p >= 0)).all())
    np.testing.assert_allclose(np.where(p >= 0, p, 0).sum(axis=1), 1.0, atol=1e-3)


def snapshot(tensors):
    return {k: np.array(v, copy=True) for k, v in tensors.items()}


def same(a, b):
    """The same arrays, bit for bit (values holds NaN where a target is
    not known)."""
    return a.keys() == b.keys() and all(
        np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes() for k in a)


class NonBlocking(unittest.TestCase):
    def test_maybe_next_under_load(self):
        with Loader(config(64), start_timeout=WAIT) as L:
            reader = L.reader(timeout=5 * SLOW)
            # lcmon writes as fast as it can: every batch maybe_next gives
            # is whole and in order, none torn or lost.
            got, nones, deadline = 0, 0, time.monotonic() + WAIT
            while got < 40:
                self.assertLess(time.monotonic(), deadline, "40 batches did not come")
                b = L.maybe_next()
                if b is None:
                    nones += 1
                    time.sleep(0.001)
                    continue
                check_batch(self, b, 64)
                got += 1
            self.assertEqual(reader.batches_read, got)
            self.assertEqual(reader.torn_batches, 0)

            # Nothing more comes: the tensor generator is paused, what it
            # made is read.
            L.control.pause("tensors")
            drained = time.monotonic() + WAIT
            while L.get(timeout=2 * SLOW) is not None:
                self.assertLess(time.monotonic(), drained, "the pipe did not drain")
            took = []
            for _ in range(300):
                t0 = time.perf_counter()
                self.assertIsNone(L.maybe_next())
                took.append(time.perf_counter() - t0)
            self.assertLess(statistics.median(took), 0.002 * SLOW, "maybe_next waited")
            self.assertLess(max(took), 0.25 * SLOW, "maybe_next waited")
            # A read with a timeout returns None; the reader's own timeout
            # (a stalled loader) raises; neither closes it.
            t0 = time.monotonic()
            self.assertIsNone(L.get(timeout=0.3))
            self.assertGreaterEqual(time.monotonic() - t0, 0.29)
            with self.assertRaisesRegex(TimeoutError, "no data for"):
                L.get()

            # Batches come again: the same reader gives them.
            read_before = reader.batches_read
            L.control.resume("tensors")
            deadline = time.monotonic() + WAIT
            b = None
            while b is None:
                self.assertLess(time.monotonic(), deadline, "no batch after resume")
                b = L.maybe_next()
                if b is None:
                    time.sleep(0.001)
            check_batch(self, b, 64)
            self.assertIs(L.reader(), reader)
            self.assertEqual(reader.batches_read, read_before + 1)
            for _ in range(3):
                check_batch(self, L.get(), 64)
            self.assertEqual(reader.torn_batches, 0)


class Outputs(unittest.TestCase):
    def setUp(self):
        self.cwd = os.getcwd()
        self.tmp = tempfile.mkdtemp(prefix="lcmon-outputs-")
        os.chdir(self.tmp)  # a pipe the config names (train.pipe) lands here, not in the tree

    def tearDown(self):
        os.chdir(self.cwd)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_train_test_loader_serves_both(self):
        t0 = time.monotonic()
        with Loader(os.path.join(SOURCE_ROOT, "config", "train_test.yaml"),
                    env={"LCMON_DATA": DATA}, start_timeout=20 * SLOW) as L:
            self.assertLess(time.monotonic() - t0, 20 * SLOW)
            self.assertEqual(L.outputs, ["train", "test"])
            for name in L.outputs:  # private pipes, one an output
                self.assertEqual(os.path.dirname(L.pipes[name]), L.dir)
            with self.assertRaisesRegex(ValueError, r"2 outputs \(train, test\)"):
                L.get()
            with self.assertRaisesRegex(ValueError, "no output 'valid'"):
                L.get("valid")
            for _ in range(3):
                check_batch(self, L.get("train", timeout=WAIT), 256)
                check_batch(self, L.get("test", timeout=WAIT), 256)
            for name in ("train", "test"):
                n = 0
                for b in L.batches(name):
                    check_batch(self, b, 256)
                    n += 1
                    if n == 2:
                        break
                self.assertEqual(L.reader(name).batches_read, 5)
        self.assertEqual(os.listdir(self.tmp), [])


class Layout(unittest.TestCase):
    def test_batches_are_expanded_by_default(self):
        with Loader(config(16, packed=True), start_timeout=WAIT) as L:
            n = 0
            for b in L.batches():
                self.assertEqual(sorted(b), ["inputs", "policy", "values"])
                r = L.reader()
                self.assertEqual(r.header.expand, "lc0-packed-1")  # packed on the wire
                packed = {t.name: r.payload[t.offset:t.offset + t.nbytes].view(t.dtype)
                          .reshape(t.shape) for t in r.header.tensors}
                self.assertIn("inputs_bits", packed)
                want = lcmon.expand(packed, r.header.expand)  # what expand=True gave
                for k in want:
                    self.assertEqual(b[k].dtype, want[k].dtype, k)
                    self.assertEqual(b[k].tobytes(), want[k].tobytes(), k)
                check_batch(self, b, 16)
                n += 1
                if n == 5:
                    break
        with Loader(config(16, packed=True), start_timeout=WAIT) as L:
            b = next(L.batches(expand=False))
            self.assertEqual(sorted(b),
                             ["inputs_aux", "inputs_bits", "policy_idx", "policy_val", "values"])

    def test_owned_arrays_survive_the_next_read(self):
        for packed in (False, True):
            with self.subTest(packed=packed), Loader(config(16, packed), start_timeout=WAIT) as L:
                mine = L.get(copy=True)
                kept = snapshot(mine)
                view = L.get()
                seen = snapshot(view)
                later = [snapshot(L.get()) for _ in range(3)]
                self.assertTrue(same(mine, kept), "an array of the caller's own changed")
                # The default: views the next batch overwrites (as documented).
                self.assertFalse(same(view, seen))
                self.assertTrue(same(view, later[-1]))
                for b in later:
                    self.assertFalse(same(kept, b))
                mine = next(L.batches(copy=True))
                kept = snapshot(mine)
                L.get()
                self.assertTrue(same(mine, kept))

    def test_dataloader_pin_memory_without_cuda(self):
        torch = __import__("torch")
        from torch.utils.data import DataLoader

        if torch.cuda.is_available():
            self.skipTest("with CUDA torch pins (copies) the batches itself")
        with Loader(config(16), start_timeout=WAIT) as L:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                it = iter(DataLoader(L.dataset(), batch_size=None, num_workers=0,
                                     pin_memory=True))
                first = next(it)
            kept = {k: v.clone() for k, v in first.items()}
            for _ in range(3):
                next(it)
            for k in kept:
                self.assertEqual(first[k].numpy().tobytes(), kept[k].numpy().tobytes(), k)
            said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
            self.assertTrue(any("nothing is pinned" in m and "copies" in m for m in said), said)


class FindLcmon(unittest.TestCase):
    def test_found_after_setup_without_lcmon_or_path(self):
        """The README's set-up: scripts/setup builds lcmon into build/ of the
        source tree, the package is pip-installed from that tree's python/.
        The tree here is a copy whose build/ holds the real lcmon."""
        with tempfile.TemporaryDirectory(prefix="lcmon-setup-") as tmp:
            tree = os.path.join(tmp, "tree")
            shutil.copytree(os.path.join(SOURCE_ROOT, "python"), os.path.join(tree, "python"),
                            ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            os.mkdir(os.path.join(tree, "build"))
            os.symlink(LCMON, os.path.join(tree, "build", "lcmon"))
            kernel = os.environ.get("LCMON_EXPAND_LIB")  # the build's, when it makes one
            if kernel:
                os.mkdir(os.path.join(tree, "build", "python"))
                os.symlink(kernel, os.path.join(tree, "build", "python", "liblcmon_expand.so"))
            venv = os.path.join(tmp, "venv")
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                           check=True, timeout=300)
            py = os.path.join(venv, "bin", "python")
            r = subprocess.run([py, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                                "--no-index", os.path.join(tree, "python")],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            env = {k: v for k, v in os.environ.items()
                   if k not in ("LCMON", "PYTHONPATH", "LCMON_BUILD", "LCMON_EXPAND_LIB")}
            env["PATH"] = os.path.join(venv, "bin") + ":/usr/bin:/bin"
            env["LCMON_TEST_DATA"] = DATA
            script = (
                "import json, lcmon, lcmon.loader\n"
                "exe = lcmon.loader.find_lcmon()\n"
                "cfg = json.loads(%r)\n"
                "with lcmon.Loader(cfg) as L:\n"
                "    b = L.get()\n"
                "print(exe)\nprint(lcmon.__file__)\nprint(b['inputs'].shape)\n"
                "print(lcmon.expand_kernel())\n"
            ) % __import__("json").dumps(config(16))
            away = os.path.join(tmp, "elsewhere")
            os.mkdir(away)
            r = subprocess.run([py, "-c", script], cwd=away, env=env, capture_output=True,
                               text=True, timeout=WAIT)
            self.assertEqual(r.returncode, 0, r.stderr)
            exe, where, shape, found = r.stdout.split("\n")[:4]
            self.assertEqual(exe, os.path.join(tree, "build", "lcmon"))
            # The expansion's C kernel, from the same build.
            self.assertEqual(found, os.path.join(tree, "build", "python", "liblcmon_expand.so")
                             if kernel else "None")
            self.assertTrue(where.startswith(venv), where)
            self.assertEqual(shape, "(16, 112, 8, 8)")
            # Nothing of the machine is written into the tree's package.
            self.assertFalse(os.path.exists(os.path.join(tree, "python", "lcmon", "BUILD_DIR")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
