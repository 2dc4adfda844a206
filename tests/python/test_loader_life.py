"""lcmon.Loader's lifetime (issue 34): lcmon lives as long as the Python
process that made the Loader, whichever thread made it; a reader learns at
once (LoaderGone, with lcmon's last log lines) when lcmon dies; a trainer
killed before close() leaves no folder behind the next Loader; close() after
a finite run gives lcmon's real status.

Environment: LCMON (the executable), LCMON_TEST_DATA, LCMON_TEST_SLOW (the
sanitizer slow-down factor), PYTHONPATH (python/ and this folder).
"""

import importlib.util
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from lcmon import Loader, LoaderGone
from test_loader import YAML, alive, config_dict

DATA_DIR = os.path.abspath(os.environ["LCMON_TEST_DATA"])
SLOW = float(os.environ.get("LCMON_TEST_SLOW", "1"))
WAIT = 60 * SLOW
GONE_WITHIN = 1.0 * SLOW  # the "within a second", scaled for sanitizers
ENDLESS = YAML.replace("watch: false", "watch: true")  # a sequential run that never ends


def wait_until(what, condition, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("not within %.0f s: %s" % (timeout, what))
        time.sleep(0.02)


class ReadInThread:
    """Reads a Loader's batches (or its torch dataset) in a thread: how
    many, and how it ended (the exception, and when)."""

    def __init__(self, batches):
        self.batches = batches
        self.count = 0
        self.error = None
        self.ended_at = None
        self.thread = threading.Thread(target=self._run, daemon=True)  # may never end
        self.thread.start()

    def _run(self):
        try:
            for _ in self.batches:
                self.count += 1
        except BaseException as e:  # what the trainer's loop would see
            self.error = e
        self.ended_at = time.monotonic()


class LoaderLifeTests(unittest.TestCase):
    def setUp(self):
        # Loaders' folders (this process's and its trainers') in a folder of
        # the test's own: the killed trainers leave theirs behind on purpose,
        # and a Loader of another test running beside this one must not
        # sweep them (it logs the removal) before this test's next Loader.
        self.tmp = tempfile.mkdtemp(prefix="lcmon-life-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        saved = tempfile.tempdir
        tempfile.tempdir = self.tmp
        self.addCleanup(setattr, tempfile, "tempdir", saved)
        self.env = dict(os.environ, TMPDIR=self.tmp)

    def test_a_loader_made_in_a_thread_that_ended_serves(self):
        """A setup thread makes the Loader and ends: lcmon runs on and the
        main thread reads batches (PR_SET_PDEATHSIG stopped it as the
        thread ended)."""
        made = []
        t = threading.Thread(target=lambda: made.append(Loader(config_dict())))
        t.start()
        t.join(WAIT)
        self.assertEqual(len(made), 1, "the thread made no Loader")
        with made[0] as L:
            n = 0
            for batch in L.batches(expand=True, timeout=10 * SLOW, wait_for_pipe=10 * SLOW):
                self.assertEqual(batch["inputs"].shape, (16, 112, 8, 8))
                n += 1
                if n == 20:
                    break
            self.assertTrue(L.running)
            self.assertEqual(L.control.state(), "PIPELINE_RUNNING")
            self.assertEqual(L.close(), 0)

    def kill_under_reader(self, L, read):
        """SIGKILL lcmon while `read` (a ReadInThread on L) reads or waits:
        LoaderGone within GONE_WITHIN, naming the signal, with the log."""
        pid = L.proc.pid
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        read.thread.join(GONE_WITHIN + 5 * SLOW)  # more than the bound, to measure it
        self.assertIsNotNone(read.ended_at, "the reader still waits %.0f s after lcmon was "
                             "killed" % (time.monotonic() - killed))
        self.assertIsInstance(read.error, LoaderGone, repr(read.error))
        took = read.ended_at - killed
        self.assertLess(took, GONE_WITHIN, "LoaderGone %.2f s after the kill" % took)
        text = str(read.error)
        self.assertIn("lcmon (pid %d" % pid, text)
        self.assertIn("was killed by SIGKILL", text)
        self.assertEqual(read.error.returncode, -signal.SIGKILL)
        self.assertIn("writer", read.error.log_tail)  # lcmon's own lines
        self.assertFalse(L.running)
        return took

    def test_lcmon_killed_under_a_reading_loader(self):
        """lcmon SIGKILLed while batches flow (batches() and the torch
        dataset), and while the reader waits for a run that a stop ended:
        LoaderGone within a second, never a wait for ever."""
        paths = ["batches"]
        if importlib.util.find_spec("torch") is not None:
            paths.append("dataset")
        for path in paths:
            with self.subTest(path=path), Loader(config_dict()) as L:
                source = L.batches() if path == "batches" else L.dataset()
                read = ReadInThread(source)
                wait_until("batches flow", lambda: read.count >= 3 or read.ended_at)
                self.kill_under_reader(L, read)
        with Loader(config_dict()) as L:
            read = ReadInThread(L.batches())
            wait_until("batches flow", lambda: read.count >= 3 or read.ended_at)
            L.control.stop()
            wait_until("the reader waits for the next run",
                       lambda: L.control.state() == "PIPELINE_STOPPED")
            # The reader drains what the stop left in the pipe and settles
            # into its wait for the next run: its count stops moving.
            last = [read.count, time.monotonic()]

            def settled():
                if read.count != last[0]:
                    last[:] = [read.count, time.monotonic()]
                return time.monotonic() - last[1] >= 0.3

            wait_until("the reader drains the pipe and waits", settled)
            count = read.count
            self.assertIsNone(read.ended_at, read.error)
            self.kill_under_reader(L, read)
            self.assertLessEqual(read.count - count, 1)

    def test_lcmon_exiting_on_its_own_ends_the_read(self):
        """lcmon ends by itself (--max-seconds) under an endless read: the
        reader hears LoaderGone with status 0, not a wait for the next run."""
        with Loader(config_dict(), args=["--max-seconds", str(2 * SLOW)]) as L:
            read = ReadInThread(L.batches())
            wait_until("lcmon ends", lambda: not L.running)
            read.thread.join(GONE_WITHIN + 5 * SLOW)
            self.assertIsInstance(read.error, LoaderGone, repr(read.error))
            self.assertIn("exited with status 0", str(read.error))
            self.assertIn("--max-seconds reached", read.error.log_tail)

    def test_a_stalled_loader_is_not_silent(self):
        """A read that waits stall_warning seconds on a live lcmon (here a
        stopped pipeline) logs a warning with lcmon's state and stages,
        again every stall_warning seconds of the wait."""
        with Loader(config_dict(), stall_warning=0.5 * SLOW) as L:
            read = ReadInThread(L.batches())
            wait_until("batches flow", lambda: read.count >= 3 or read.ended_at)
            with self.assertLogs("lcmon.loader", level="WARNING") as logs:
                L.control.stop()
                wait_until("two warnings", lambda: len(
                    [m for m in logs.output if "no data on" in m]) >= 2)
            warning = [m for m in logs.output if "no data on" in m][0]
            self.assertIn("lcmon (pid %d) runs: PIPELINE_STOPPED" % L.proc.pid, warning)
            self.assertIn("pool: stopped", warning)
            self.assertIsNone(read.ended_at, read.error)

    def test_a_killed_trainers_folder_goes_with_the_next_loader(self):
        """A trainer that made its Loader in a thread is SIGKILLed: its lcmon
        stops, and the next Loader removes its private folder, but not the
        folder of a Loader that lives."""
        script = (
            "import sys, threading, time, lcmon\n"
            "made = []\n"
            "t = threading.Thread(target=lambda: made.append(lcmon.Loader(%r)))\n"
            "t.start(); t.join()\n"
            "print(made[0].proc.pid, made[0].dir, flush=True)\n"
            "time.sleep(600)\n" % ENDLESS
        )
        with Loader(config_dict()) as live:
            trainer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                       text=True, env=self.env)
            try:
                line = trainer.stdout.readline().split()
                self.assertEqual(len(line), 2, "the trainer did not start its loader")
                child, folder = int(line[0]), line[1]
                self.assertTrue(os.path.isdir(folder))
                time.sleep(0.5 * SLOW)  # lcmon lives on after the thread that made it
                self.assertTrue(alive(child), "lcmon died with the thread that made it")
                trainer.send_signal(signal.SIGKILL)
                trainer.wait(WAIT)
                wait_until("lcmon stops after its trainer was killed", lambda: not alive(child))
                self.assertTrue(os.path.isdir(folder))  # nobody has swept yet
                with Loader(config_dict()) as nxt:
                    self.assertFalse(os.path.exists(folder), "the dead trainer's folder is left")
                    self.assertTrue(os.path.isdir(live.dir), "a live Loader's folder was removed")
                    self.assertTrue(live.running and nxt.running)
                    next(iter(live.batches()))
            finally:
                if trainer.poll() is None:
                    trainer.kill()
                    trainer.wait()
                trainer.stdout.close()

    def test_a_forked_child_does_not_keep_lcmon(self):
        """A trainer forks a child that lives on (a DataLoader worker, a
        multiprocessing pool) and is SIGKILLed: lcmon stops all the same
        (the child let go of the lifetime pipe at the fork), and the
        child's close() leaves its parent's loader alone."""
        script = (
            "import os, time, lcmon\n"
            "L = lcmon.Loader(%r)\n"
            "c = os.fork()\n"
            "if c == 0:\n"
            "    os.write(1, b'child %%s\\n' %% str(L.close()).encode())\n"
            "    time.sleep(600)\n"
            "    os._exit(0)\n"
            "os.write(1, b'%%d %%d\\n' %% (L.proc.pid, c))\n"
            "time.sleep(600)\n" % ENDLESS
        )
        # stderr to a file: the child outlives the trainer, and must not hold
        # the test's own output open if the test fails.
        err = tempfile.TemporaryFile("w+")
        trainer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                   stderr=err, text=True, env=self.env)
        child = None
        try:
            lines = sorted([trainer.stdout.readline().split(), trainer.stdout.readline().split()])
            if lines[0][1:]:
                child = int(lines[0][1])
            err.seek(0)
            self.assertEqual(lines[1], ["child", "None"], (lines, err.read()))
            lc = int(lines[0][0])
            self.assertTrue(alive(lc), "the child's close() stopped its parent's lcmon")
            trainer.send_signal(signal.SIGKILL)
            trainer.wait(WAIT)
            wait_until("lcmon stops while the forked child lives", lambda: not alive(lc))
            self.assertTrue(alive(child))
        finally:
            if child is not None and alive(child):
                os.kill(child, signal.SIGKILL)
            if trainer.poll() is None:
                trainer.kill()
                trainer.wait()
            trainer.stdout.close()
            err.close()

    def test_parent_fd_option(self):
        """lcmon --no-ui --parent-fd 0 on its own: it stops with status 0,
        saying why, when the pipe on its stdin is closed; a descriptor that
        is not open and a run with the screen are refused (status 2)."""
        exe = os.environ["LCMON"]
        with tempfile.TemporaryDirectory() as tmp:
            pipe = os.path.join(tmp, "p")
            p = subprocess.Popen([exe, "--no-ui", "--status-interval", "0", "--parent-fd", "0"],
                                 stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, LCMON_PIPE=pipe, LCMON_DATA=DATA_DIR))
            try:
                wait_until("lcmon is up", lambda: os.path.exists(pipe))
                self.assertIsNone(p.poll())
                p.stdin.close()
                self.assertEqual(p.wait(WAIT), 0)
                self.assertIn("--parent-fd 0 reached its end (the parent process is gone): "
                              "stopping", p.stderr.read())
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
                p.stderr.close()
        r = subprocess.run([exe, "--no-ui", "--parent-fd", "97"], capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, timeout=WAIT)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--parent-fd: '97' is not an open descriptor", r.stderr)
        r = subprocess.run([exe, "--parent-fd", "0"], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=WAIT)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--parent-fd is for headless runs; add --no-ui", r.stderr)

    def test_close_after_a_finite_run_returns_0(self):
        """close() right after the last batch of a finite run, again and
        again: lcmon's status is 0 each time (a SIGINT racing the end of the
        run made it 130)."""
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(8):
                logfile = os.path.join(tmp, "run%d.log" % i)
                L = Loader(YAML, log=logfile)
                rows = sum(len(b["planes"]) for b in L.batches(restarts="end"))
                self.assertGreater(rows, 100)
                rc = L.close()
                with open(logfile) as f:
                    text = f.read()
                self.assertEqual(rc, 0, "run %d: status %s:\n%s" % (i, rc, text[-2000:]))
                self.assertNotIn("again while stopping", text)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    unittest.main(verbosity=2)
