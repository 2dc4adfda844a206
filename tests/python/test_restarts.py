"""The trainer's side across loader restarts, and the Python package:

- `lcmon ctl stop` then `start` while one BatchReader keeps reading: every
  batch of the first run arrives (the DONE "stopped" marker counts them),
  none twice, none partial, then the second run (another run id) from seq 0;
- lcmon killed with SIGKILL and started again: the same reader goes on with
  the new run; a batch the killed writer left torn is dropped, never
  yielded;
- lcmon stopped mid-step under a trainer that reads a batch, then leaves the
  pipe alone for 1.5 s: the batch begun (9.3 MB dense, larger than the pipe,
  or packed) is finished, then DONE; with a step longer than stop_grace the
  stop gives up within stop_grace, warns why, and the reader drops the torn
  batch;
- the package installed with Debian's pip into a fresh virtual environment
  (numpy and torch visible through --system-site-packages) and imported from
  outside the repository;
- lcmon.torch.BatchDataset under a DataLoader, and its refusal of
  batch_size and num_workers that cannot work;
- the lczero-training adapters: the legacy ChunkParser tuple and the current
  loader's (inputs, policy, values), shapes, dtypes and values against the
  sample records (computed here from the record bytes).

Environment: LCMON, LCMON_TEST_DATA, LCMON_SOURCE_ROOT, LCMON_TEST_SLOW,
PYTHONPATH (python/ and tests/python, for the record helpers).
"""

import array
import fcntl
import gc
import importlib.util
import logging
import os
import shutil
import re
import signal
import subprocess
import sys
import tempfile
import termios
import threading
import time
import unittest
import warnings

import numpy as np

import lcmon
from lcmon import BatchReader
from test_end_to_end import assert_bits_equal, expected_current, expected_legacy, read_records

LCMON = os.environ["LCMON"]
DATA = os.environ["LCMON_TEST_DATA"]
SOURCE_ROOT = os.environ["LCMON_SOURCE_ROOT"]
SLOW = float(os.environ.get("LCMON_TEST_SLOW", "1"))
WAIT = 60 * SLOW
BATCH = 16

CONFIG = """
seed: 1
stages:
  - name: files
    file_path_provider: {directory: '%s'}
  - name: sources
    input: files
    chunk_source_loader: {threads: 1}
  - name: pool
    input: sources
    shuffling_chunk_pool: {chunk_pool_size: 100, threads: 1, store_bytes: 64M}
  - name: unpacker
    input: pool
    chunk_unpacker: {sampling_rate: 0.5}
  - name: sampler
    input: unpacker
    shuffling_frame_sampler: {reservoir_size: 200}
  - name: tensors
    input: sampler
    tensor_generator: {batch_size: %d, layout: %s}
    output: {capacity: 2}
  - name: writer
    input: tensors
    fifo_writer: {path: '%s'}
"""


class Log(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


class Trainer(threading.Thread):
    """Reads one pipe across runs, keeping (run_id, seq, rows, policy sums)
    of every batch, until told to stop."""

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe = pipe
        self.got = []
        self.stop = False
        self.error = None
        self.reader = None

    def run(self):
        try:
            deadline = time.monotonic() + WAIT
            while not os.path.exists(self.pipe):
                if time.monotonic() > deadline:
                    raise TimeoutError("no pipe")
                time.sleep(0.02)
            with BatchReader(self.pipe, timeout=WAIT, restart_timeout=WAIT) as r:
                self.reader = r
                for b in r.batches():
                    p = b.tensors["policy"]
                    sums = np.where(p >= 0, p, 0).astype(np.float64).sum(axis=1)
                    self.got.append((b.run_id, b.seq, b.rows, float(np.abs(sums - 1).max())))
                    if self.stop:
                        return
        except Exception as e:  # reported by the test
            self.error = e

    def batches_of_run(self, index):
        runs = []
        for run_id, *_ in self.got:
            if not runs or runs[-1] != run_id:
                runs.append(run_id)
        if index >= len(runs):
            return []
        return [g for g in self.got if g[0] == runs[index]]

    def wait_for(self, run_index, n):
        deadline = time.monotonic() + WAIT
        while len(self.batches_of_run(run_index)) < n:
            if self.error is not None or not self.is_alive():
                raise AssertionError("the trainer stopped: %r" % self.error)
            if time.monotonic() > deadline:
                raise AssertionError(
                    "run %d: %d batches after %.0f s" % (run_index, len(self.batches_of_run(run_index)), WAIT))
            time.sleep(0.02)


class Restarts(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lcmon-restarts-")
        self.pipe = os.path.join(self.dir, "lcmon.pipe")
        self.sock = os.path.join(self.dir, "lcmon.sock")
        self.config = os.path.join(self.dir, "config.yaml")
        with open(self.config, "w") as f:
            f.write(CONFIG % (DATA, BATCH, "current", self.pipe))
        self.procs = []
        self.log = Log()
        logging.getLogger("lcmon").addHandler(self.log)

    def tearDown(self):
        logging.getLogger("lcmon").removeHandler(self.log)
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait(30)
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, *extra):
        p = subprocess.Popen(
            [LCMON, "--no-ui", "--quiet", "--config", self.config, *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def ctl(self, *args):
        r = subprocess.run([LCMON, "ctl", self.sock, *args], capture_output=True, text=True,
                           timeout=WAIT)
        self.assertEqual(r.returncode, 0, r.stderr)

    def check_runs(self, t, runs):
        self.assertIsNone(t.error)
        ids = []
        for i in range(runs):
            got = t.batches_of_run(i)
            ids.append(got[0][0])
            # From seq 0, each once, whole, and real positions.
            self.assertEqual([g[1] for g in got], list(range(len(got))), "run %d" % i)
            self.assertTrue(all(g[2] == BATCH for g in got), "a partial batch in run %d" % i)
            self.assertLess(max(g[3] for g in got), 1e-3, "run %d: policy sums" % i)
        self.assertEqual(len(set(ids)), runs)
        self.assertEqual(t.reader.runs, runs)

    def test_ctl_stop_and_start_keep_the_trainer(self):
        self.start("--socket", self.sock)
        deadline = time.monotonic() + WAIT
        while not os.path.exists(self.sock) and time.monotonic() < deadline:
            time.sleep(0.02)
        t = Trainer(self.pipe)
        t.start()
        t.wait_for(0, 5)
        self.ctl("stop")
        self.ctl("start")
        t.wait_for(1, 5)
        t.stop = True
        t.join(WAIT)
        self.check_runs(t, 2)
        # The first run ended with its marker: the reader counted all of its
        # batches against it (a mismatch raises), and nothing was torn.
        self.assertEqual(t.reader.torn_batches, 0)
        self.assertTrue(any("stopped after" in l for l in self.log.lines), self.log.lines)
        self.assertTrue(any("a new run" in l for l in self.log.lines), self.log.lines)

    def test_killed_and_started_again(self):
        p = self.start()
        t = Trainer(self.pipe)
        t.start()
        t.wait_for(0, 5)
        p.kill()
        p.wait(WAIT)
        self.start()
        t.wait_for(1, 5)
        t.stop = True
        t.join(WAIT)
        self.check_runs(t, 2)
        self.assertLessEqual(t.reader.torn_batches, 1)
        self.assertTrue(any("without its DONE marker" in l for l in self.log.lines),
                        self.log.lines)


def seconds_between(log, first, then):
    """Seconds from the log line holding `first` to the next holding `then`
    (their HH:MM:SS.mmm times)."""
    times = []
    for line in log.splitlines():
        if (not times and first in line) or (times and then in line):
            h, m, sec = line.split()[0].split(":")
            times.append(int(h) * 3600 + int(m) * 60 + float(sec))
            if len(times) == 2:
                return (times[1] - times[0]) % 86400
    raise AssertionError("no %r then %r in the log:\n%s" % (first, then, log))


def pipe_unread(path):
    """Bytes written to the named pipe and not read yet (FIONREAD on a
    descriptor of our own, which reads nothing)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        buf = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, buf)
        return buf[0]
    finally:
        os.close(fd)


class SlowTrainer(unittest.TestCase):
    """A trainer whose step is longer than lcmon needs for a batch: it reads
    a batch, then leaves the pipe alone for its step, so the writer is always
    in the middle of the next batch (the pipe holds 1 MiB) when lcmon is
    stopped. The stop must finish that batch, then DONE, for any step up to
    stop_grace; past it the stop is bounded and says why."""

    def slow_stop(self, layout, step, grace):
        """lcmon writing batches of 256 positions (in layout) with stop_grace
        grace to a trainer of step seconds, stopped by SIGINT early in a step
        while the next batch is half written. Returns the reader (closed),
        the batches it yielded after the stop, the seconds from the signal to
        lcmon's exit, its exit status and its log."""
        tmp = tempfile.mkdtemp(prefix="lcmon-slow-")
        self.addCleanup(shutil.rmtree, tmp, True)
        pipe = os.path.join(tmp, "lcmon.pipe")
        cfg = os.path.join(tmp, "slow.yaml")
        with open(cfg, "w") as f:
            f.write((CONFIG % (DATA, 256, layout, pipe)).replace(
                "fifo_writer: {path: '%s'}" % pipe,
                "fifo_writer: {path: '%s', stop_grace: %g}" % (pipe, grace)))
        log_path = os.path.join(tmp, "lcmon.log")
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [LCMON, "--no-ui", "--status-interval", "0", "--config", cfg],
                stdout=subprocess.DEVNULL, stderr=log)
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))

        def read_log():
            with open(log_path) as f:
                return f.read()
        deadline = time.monotonic() + WAIT
        while not os.path.exists(pipe):
            if proc.poll() is not None:
                self.fail("lcmon ended: %s" % read_log())
            self.assertLess(time.monotonic(), deadline, "no pipe")
            time.sleep(0.02)
        exited = []  # when lcmon's process ended, seen by a thread of its own
        waiter = threading.Thread(target=lambda: exited.append((proc.wait(), time.monotonic())),
                                  daemon=True)
        after = []
        with BatchReader(pipe, timeout=WAIT, restarts="end", wait_for_pipe=WAIT,
                         tolerate_truncation=True) as r:
            # Two steps: the writer learns the trainer's pace from the first.
            for i in range(2):
                self.assertEqual(r.read_batch().rows, 256)
                t = time.monotonic()
                if i == 1:
                    deadline = t + WAIT
                    while pipe_unread(pipe) == 0:  # the next batch has begun
                        self.assertLess(time.monotonic(), deadline, "no next batch")
                        time.sleep(0.01)
                    time.sleep(max(0.0, t + 0.2 * step - time.monotonic()))
                    proc.send_signal(signal.SIGINT)  # the stop comes mid-step
                    t_signal = time.monotonic()
                    waiter.start()
                    # The step's rest, 0.8 of a step at least: under a
                    # sanitizer on a loaded machine the next batch can begin
                    # late in the step, and a step counted from the read
                    # alone then left the writer less than its stop_grace.
                    t = max(t, t_signal - 0.2 * step)
                time.sleep(max(0.0, t + step - time.monotonic()))  # the training step
            while True:
                b = r.read_batch()
                if b is None:
                    break
                after.append(b)
                time.sleep(step)
        waiter.join(WAIT)
        self.assertTrue(exited, "lcmon did not exit")
        rc, t_exit = exited[0]
        return r, after, t_exit - t_signal, rc, read_log()

    def check_clean(self, layout, step, grace):
        r, after, took, rc, log = self.slow_stop(layout, step, grace)
        self.assertEqual(rc, 0, log)
        # Every batch whole (a torn one is dropped, never yielded: counted),
        # then DONE (stopped), whose count matches the batches read.
        self.assertTrue(r.stopped, "the run did not end with DONE (stopped): %s" % log)
        self.assertEqual(r.torn_batches, 0, log)
        self.assertFalse(r.truncated, log)
        self.assertGreaterEqual(len(after), 1, "the batch begun before the stop is finished")
        self.assertTrue(all(b.rows == 256 for b in after))
        self.assertIn("stop in the middle of a batch: finishing it", log)
        self.assertNotIn("warn", log, "a clean stop logs no warning")
        # lcmon exits once the trainer has taken the batch (0.8 steps on),
        # and DONE: a bound with room for a loaded machine (seen: 2.57 s for
        # a 1.5 s step at load 10), still far below stop_grace's 2 x 3 s.
        self.assertLess(took, (step + 2) * SLOW)

    def test_dense_stop_with_a_step_of_1_5_s(self):
        """A dense batch of 256 positions is 9.3 MB: the reader's waits are
        one long one (its step) and about nine short ones inside each batch
        (it used to forget the step over those and tear the batch)."""
        self.check_clean("current", 1.5, 3 * SLOW)

    def test_packed_stop_with_a_step_of_1_5_s(self):
        """A packed batch (about 380 kB) fits the pipe: two and a half wait
        there, and the stop waits for the trainer to take one."""
        self.check_clean("current, packed: true", 1.5, 3 * SLOW)

    def test_step_longer_than_stop_grace(self):
        """A trainer whose step (2 s) is longer than stop_grace (0.5 s): the
        stop gives up at stop_grace, says why and what to do, and the
        reader drops the torn batch (never yields it)."""
        r, after, took, rc, log = self.slow_stop("current", 2.0, 0.5)
        self.assertEqual(rc, 0, log)
        # The writer gave up: a stop is bounded at 2 x stop_grace (1 s); one
        # that waited for the reader would take the 2 s step or more. The
        # margin is for a loaded machine (1.52 s measured beside a soak).
        self.assertLess(took, 1.9 * SLOW)
        # The writer's wait for the reader began with the stop: the pipeline
        # wakes every stage before it joins any (it used to wake the writer
        # only once the stages before it were joined, or at its poll's 1 s
        # timeout).
        self.assertLess(seconds_between(log, "Interrupt received: stopping",
                                        "stop in the middle of a batch"), 0.3 * SLOW, log)
        self.assertEqual([b.seq for b in after], [], log)
        self.assertEqual(r.torn_batches, 1)
        self.assertTrue(r.truncated)
        self.assertFalse(r.stopped)
        self.assertRegex(log, r"warn .* stop: no read from %s for [\d.]+ s \((steps lately [\d.]+ s|steps not known[^,]*), "
                              r"stop_grace 0\.5 s\)" % re.escape(r.path))
        self.assertRegex(log, r"batch \d+ left torn at \d+ of 9261\d+ bytes, the reader drops it; "
                              r"if the trainer still reads, raise stop_grace above its longest step")


class Package(unittest.TestCase):
    def test_install_into_a_venv(self):
        with tempfile.TemporaryDirectory(prefix="lcmon-venv-") as tmp:
            venv = os.path.join(tmp, "venv")
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                           check=True, timeout=300)
            py = os.path.join(venv, "bin", "python")
            # A copy: pip builds in the directory it is given.
            src = os.path.join(tmp, "python")
            shutil.copytree(os.path.join(SOURCE_ROOT, "python"), src,
                            ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            r = subprocess.run(
                [py, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-index", src],
                capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            away = os.path.join(tmp, "elsewhere")
            os.mkdir(away)
            # Every module of the source tree is installed, and the PEP 561
            # marker that tells type checkers to read the annotations.
            package = os.path.join(SOURCE_ROOT, "python", "lcmon")
            modules = sorted(f[:-3] for f in os.listdir(package)
                             if f.endswith(".py") and f not in ("__init__.py", "__main__.py"))
            self.assertIn("wire", modules)
            r = subprocess.run(
                [py, "-c", "import lcmon, %s; print(lcmon.__file__)"
                 % ", ".join("lcmon." + m for m in modules
                             if m != "torch" or importlib.util.find_spec("torch"))],
                cwd=away, env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.strip().startswith(venv), r.stdout)
            installed = os.path.dirname(r.stdout.strip())
            self.assertTrue(os.path.isfile(os.path.join(installed, "py.typed")),
                            sorted(os.listdir(installed)))
            r = subprocess.run([os.path.join(venv, "bin", "lcmon-read"), "--help"], cwd=away,
                               env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("batch stream", r.stdout)


class Adapters(unittest.TestCase):
    """torch and lczero-training: real lcmon runs, rows looked up among the
    sample records by their policy bytes and compared with what the docs
    say, computed here."""

    @classmethod
    def setUpClass(cls):
        cls.recs = read_records(DATA)
        cls.by_policy = {}
        for i in range(len(cls.recs)):
            cls.by_policy.setdefault(cls.recs["probabilities"][i].tobytes(), i)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lcmon-adapters-")
        self.proc = None

    def tearDown(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_lcmon(self, layout, packed=False):
        pipe = os.path.join(self.dir, "%s%s.pipe" % (layout, "-packed" if packed else ""))
        cfg = os.path.join(self.dir, "%s.yaml" % layout)
        with open(cfg, "w") as f:
            f.write(CONFIG % (DATA, BATCH, layout + (", packed: true" if packed else ""), pipe))
        self.proc = subprocess.Popen([LCMON, "--no-ui", "--quiet", "--config", cfg],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + WAIT
        while not os.path.exists(pipe):
            self.assertLess(time.monotonic(), deadline, "no pipe")
            time.sleep(0.02)
        return pipe

    def rows_of(self, policy):
        rows = [self.by_policy.get(policy[j].tobytes()) for j in range(len(policy))]
        self.assertNotIn(None, rows)
        return self.recs[rows]

    def test_chunkparser_tuples(self):
        self.check_chunkparser_tuples(False)

    def test_chunkparser_tuples_packed(self):
        self.check_chunkparser_tuples(True)

    def check_chunkparser_tuples(self, packed):
        from lcmon.lczero import chunkparser_batches

        pipe = self.run_lcmon("legacy", packed)
        n = 0
        for tup in chunkparser_batches(pipe, timeout=WAIT, restarts="end"):
            self.assertEqual(len(tup), 5)
            self.assertTrue(all(isinstance(x, bytes) for x in tup))
            sizes = [BATCH * 112 * 64 * 4, BATCH * 1858 * 4, BATCH * 12, BATCH * 12, BATCH * 4]
            self.assertEqual([len(x) for x in tup], sizes)
            planes, probs, winner, best_q, plies = (np.frombuffer(x, "<f4") for x in tup)
            want = expected_legacy(self.rows_of(probs.reshape(BATCH, 1858)))
            assert_bits_equal(self, planes.reshape(BATCH, 112, 8, 8), want["planes"], "planes")
            assert_bits_equal(self, winner.reshape(BATCH, 3), want["winner"], "winner")
            assert_bits_equal(self, best_q.reshape(BATCH, 3), want["best_q"], "best_q")
            assert_bits_equal(self, plies, want["plies_left"], "plies_left")
            n += 1
            if n == 4:
                break

    def test_loader_tuples(self):
        self.check_loader_tuples(False)

    def test_loader_tuples_packed(self):
        self.check_loader_tuples(True)

    def check_loader_tuples(self, packed):
        from lcmon.lczero import loader_batches

        pipe = self.run_lcmon("current", packed)
        n = 0
        for inputs, policy, values in loader_batches(pipe, timeout=WAIT, restarts="end"):
            self.assertEqual((inputs.shape, policy.shape, values.shape),
                             ((BATCH, 112, 8, 8), (BATCH, 1858), (BATCH, 6, 3)))
            self.assertTrue(all(a.dtype == np.float32 for a in (inputs, policy, values)))
            want = expected_current(self.rows_of(policy))
            assert_bits_equal(self, inputs, want["inputs"], "inputs")
            assert_bits_equal(self, values, want["values"], "values")
            n += 1
            if n == 4:
                break
        gc.collect()
        # The wrong layout is named.
        with self.assertRaisesRegex(ValueError, "layout: legacy"):
            from lcmon.lczero import chunkparser_batches
            next(chunkparser_batches(pipe, timeout=WAIT, restarts="end"))

    def test_torch_dataset(self):
        import torch
        from torch.utils.data import DataLoader
        from lcmon.torch import BatchDataset, loader

        pipe = self.run_lcmon("current")
        # Misuse, refused before the pipe is touched.
        with self.assertRaisesRegex(RuntimeError, "batch_size=None"):
            next(iter(DataLoader(BatchDataset(pipe))))
        with self.assertRaisesRegex(Exception, "num_workers=0"):
            next(iter(DataLoader(BatchDataset(pipe), batch_size=None, num_workers=1)))
        n = 0
        # pin_memory=True: batches of the loop's own; without CUDA it says
        # it cannot pin.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            it = iter(loader(pipe, pin_memory=True, timeout=WAIT, restarts="end"))
        if not torch.cuda.is_available():
            self.assertTrue(any("no CUDA" in str(w.message) for w in caught),
                            [str(w.message) for w in caught])
        kept = []
        for batch in it:
            kept.append(batch)
            self.assertEqual(sorted(batch), ["inputs", "policy", "values"])
            self.assertTrue(all(isinstance(t, torch.Tensor) for t in batch.values()))
            self.assertEqual(tuple(batch["inputs"].shape), (BATCH, 112, 8, 8))
            self.assertEqual(batch["values"].dtype, torch.float32)
            want = expected_current(self.rows_of(batch["policy"].numpy()))
            assert_bits_equal(self, batch["inputs"].numpy(), want["inputs"], "inputs")
            n += 1
            if n == 3:
                break
        for batch in kept:  # copies: still right after later batches came
            want = expected_current(self.rows_of(batch["policy"].numpy()))
            assert_bits_equal(self, batch["inputs"].numpy(), want["inputs"], "inputs (kept)")
        del it, batch, kept
        gc.collect()  # the reader closes: the pipe is free for the next
        # Zero-copy without pinning: the tensors share the reader's buffer.
        ds = BatchDataset(pipe, timeout=WAIT, restarts="end")
        it = iter(DataLoader(ds, batch_size=None, num_workers=0))
        b = next(it)
        self.assertEqual(b["inputs"].data_ptr() % 64, 0)
        self.assertEqual(b["inputs"].data_ptr(),
                         ds.reader._views["inputs"].ctypes.data)
        del it

    def test_torch_dataset_packed(self):
        """A packed stream, expanded on the CPU by the dataset (device "cpu",
        pinned staging where torch can pin) into the rows the doc gives."""
        import torch
        from lcmon.torch import BatchDataset

        pipe = self.run_lcmon("current", packed=True)
        # copy=True: whole payloads copied and the next one read ahead when
        # the pipe holds it (the path a GPU takes); kept batches stay right.
        for copy in (False, True):
            it = iter(BatchDataset(pipe, device="cpu", copy=copy, timeout=WAIT, restarts="end"))
            kept = []
            for batch in it:
                self.assertEqual(sorted(batch), ["inputs", "policy", "values"])
                self.assertEqual(tuple(batch["inputs"].shape), (BATCH, 112, 8, 8))
                self.assertEqual(tuple(batch["policy"].shape), (BATCH, 1858))
                self.assertTrue(all(t.dtype == torch.float32 for t in batch.values()))
                self.check_rows(batch)
                kept.append(batch)
                if len(kept) == 6:
                    break
            it.close()  # the reader lets go of the pipe
            self.assertEqual(len(kept), 6)
            if copy:  # (without, "values" is a view the next batch overwrites)
                for batch in kept:
                    self.check_rows(batch)

    def check_rows(self, batch):
        want = expected_current(self.rows_of(batch["policy"].numpy()))
        for name in ("inputs", "values"):
            assert_bits_equal(self, batch[name].numpy(), want[name], name)

    def test_torch_on_a_gpu(self):
        """Packed batches copied to a GPU and expanded there: the same
        tensors as on the CPU. Runs only where torch sees a GPU."""
        import torch
        from lcmon.torch import BatchDataset

        if not torch.cuda.is_available():
            self.skipTest("no GPU: torch.cuda.is_available() is False")
        pipe = self.run_lcmon("current", packed=True)
        n = 0
        for batch in BatchDataset(pipe, device="cuda", timeout=WAIT, restarts="end"):
            self.assertTrue(all(t.is_cuda for t in batch.values()))
            cpu = {k: v.cpu().numpy() for k, v in batch.items()}
            want = expected_current(self.rows_of(cpu["policy"]))
            for name in ("inputs", "values"):
                assert_bits_equal(self, cpu[name], want[name], name)
            n += 1
            if n == 5:
                break
        self.assertEqual(n, 5)


if __name__ == "__main__":
    unittest.main(verbosity=2)
