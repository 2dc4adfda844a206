"""lcmon.Loader: lcmon started from Python with a config given as a dict, as
YAML text and as a file; batches read and the loader steered through it;
stopped with the block; a bad config raising lcmon's own words; and no lcmon
left behind when the Python process that started it is killed with SIGKILL.

Environment: LCMON (the executable), LCMON_TEST_DATA, PYTHONPATH (python/).
"""

import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import lcmon
from lcmon import Loader, LoaderError
from test_end_to_end import sequential_yaml

DATA = os.path.abspath(os.environ["LCMON_TEST_DATA"])
SLOW = float(os.environ.get("LCMON_TEST_SLOW", "1"))
WAIT = 60 * SLOW


def config_dict(batch_size=16):
    return {
        "seed": 3,
        "stages": [
            {"name": "files", "file_path_provider": {"directory": DATA}},
            {"name": "sources", "input": "files", "chunk_source_loader": {"threads": 1}},
            {"name": "pool", "input": "sources",
             "shuffling_chunk_pool": {"chunk_pool_size": 100, "threads": 1}},
            {"name": "unpacker", "input": "pool", "chunk_unpacker": {"sampling_rate": 0.5}},
            {"name": "sampler", "input": "unpacker",
             "shuffling_frame_sampler": {"reservoir_size": 100}},
            {"name": "tensors", "input": "sampler",
             "tensor_generator": {"batch_size": batch_size, "packed": True}},
            {"name": "writer", "input": "tensors", "fifo_writer": {"path": "set by Loader"}},
        ],
    }


YAML = sequential_yaml(os.path.join(DATA, "lc0-v0.31.2-fmt1"), "${LCMON_PIPE}",
                       "batch_size: 64, layout: legacy")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:  # a zombie is not alive
        return f.read().split(") ")[-1][0] != "Z"


class LoaderTests(unittest.TestCase):
    def test_dict_config_batches_and_control(self):
        with self.assertLogs("lcmon.loader", level="INFO") as logs:
            with Loader(config_dict()) as L:
                self.assertTrue(L.running)
                pid = L.proc.pid
                self.assertEqual(L.control.hello["pid"], pid)
                n = 0
                for batch in L.batches(expand=True):
                    self.assertEqual(batch["inputs"].shape, (16, 112, 8, 8))
                    self.assertEqual(batch["policy"].shape, (16, 1858))
                    n += 1
                    if n == 5:
                        break
                key, count = L.control.anchor()
                self.assertGreater(count, 0)
                self.assertEqual(L.control.state(), "PIPELINE_RUNNING")
                d = L.dir
            self.assertFalse(alive(pid), "lcmon still runs after the block")
            self.assertFalse(os.path.exists(d))
        self.assertTrue(any("pipeline" in m or "pool" in m for m in logs.output), logs.output)
        # Each record is "[thread] message": logging has its own time and
        # level, lcmon's are not repeated; the end that close() asked for is
        # not an "Interrupt received".
        # (The Loader's own sweep of a folder another process left, one of
        # a test run beside this one, is not lcmon's.)
        for r in logs.records:
            if "left by a process that ended without closing its Loader" in r.getMessage():
                continue
            self.assertRegex(r.getMessage(), r"^\[[\w-]+\] ", r.getMessage())
        self.assertTrue(any(r.getMessage() == "[main] stopping: Loader.close()"
                            for r in logs.records), logs.output)
        self.assertFalse(any("Interrupt" in m for m in logs.output), logs.output)

    def test_log_levels_through_logging(self):
        """lcmon's warnings are warnings in Python's logging, without
        lcmon's own time and level in the message."""
        cfg = config_dict()
        cfg["stages"][0]["file_path_provider"]["directory"] = os.path.join(
            tempfile.gettempdir(), "lcmon-no-such-dir-%d" % os.getpid())
        with self.assertLogs("lcmon.loader", level="INFO") as logs:
            with Loader(cfg):
                deadline = time.monotonic() + WAIT
                while time.monotonic() < deadline and not any(
                        r.levelno == logging.WARNING for r in logs.records):
                    time.sleep(0.05)
        warns = [r.getMessage() for r in logs.records if r.levelno == logging.WARNING]
        self.assertTrue(warns, logs.output)
        self.assertRegex(warns[0], r"^\[[\w-]+\] files: ")

    def test_yaml_text_and_file_finite_run(self):
        want = None
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "seq.yaml")
            with open(path, "w") as f:
                f.write(YAML)
            logfile = os.path.join(tmp, "lcmon.log")
            for config in (YAML, path):
                with Loader(config, log=logfile) as L:
                    rows = sum(len(b["planes"]) for b in L.batches(restarts="end"))
                if want is None:
                    want = rows
                self.assertEqual(rows, want)
            self.assertGreater(want, 100)
            with open(logfile) as f:
                self.assertIn("stream complete", f.read())

    def test_bad_config_raises_lcmons_words(self):
        bad = config_dict()
        bad["stages"][5]["tensor_generator"]["batch_size"] = 0
        bad["stages"][4]["shuffling_frame_sampler"]["reservoir_size"] = -3
        with self.assertRaises(LoaderError) as cm:
            Loader(bad, start_timeout=WAIT)
        text = str(cm.exception)
        self.assertIn("batch_size", text)
        self.assertIn("reservoir_size", text)

    def test_a_second_writer_is_refused(self):
        """Two loaders on one pipe would interleave their batches (and the
        reader would blame a second reader): the second lcmon refuses to
        start, naming the first."""
        with tempfile.TemporaryDirectory() as tmp:
            pipe = os.path.join(tmp, "shared.pipe")
            with Loader(config_dict(), pipe=pipe) as first:
                cfg = config_dict()
                cfg["stages"][6]["fifo_writer"]["path"] = pipe
                with self.assertRaises(LoaderError) as cm:
                    Loader(cfg, pipe=pipe, start_timeout=WAIT)
                self.assertIn("another lcmon (process %d) already writes to %s"
                              % (first.proc.pid, pipe), str(cm.exception))
                self.assertTrue(first.running)
            # The first gone, the pipe is free for another.
            with Loader(config_dict(), pipe=pipe) as again:
                self.assertTrue(again.running)

    def test_rl_example(self):
        """examples/rl_loop.py: three short cycles of waiting for new games,
        moving the anchor and training, then a resumed run from its
        checkpoint's anchor, its self-play numbering on in the same folder:
        each cycle counts exactly the folder's games between its anchors,
        the resumed run's first one too (the anchor given at the start)."""
        root = os.environ.get("LCMON_SOURCE_ROOT") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..")
        example = os.path.join(root, "examples", "rl_loop.py")
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt.pt")
            args = [sys.executable, example, "--cycles", "3", "--new-games", "2", "--steps", "3",
                    "--batch-size", "16", "--every", "0.1", "--samples", DATA,
                    "--checkpoint", ckpt, "--timeout", str(WAIT)]
            for run in range(2):
                r = subprocess.run(args, capture_output=True, text=True, timeout=4 * WAIT)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                cycles = [l for l in r.stdout.splitlines() if l.startswith("cycle ")]
                self.assertEqual(len(cycles), 3, r.stdout)
                anchors = [l.split("anchor ")[1].split(",")[0] for l in cycles]
                self.assertEqual(anchors, sorted(anchors), "the anchor only moves forward")
                self.assertTrue(all("3 steps" in l for l in cycles), cycles)
                for l in cycles:
                    m = re.search(r"(\d+) new games \((\d+) in the folder since", l)
                    self.assertTrue(m and m.group(1) == m.group(2), l)
                if run == 1:
                    self.assertIn("resuming from %s: anchor %s" % (ckpt, last), r.stdout)
                    self.assertGreater(anchors[0], last, "the names go on after the last run's")
                last = anchors[-1]

    def test_rl_example_names_the_interpreter_to_use(self):
        """examples/rl_loop.py run by a python3 without numpy and torch (a
        pyenv's, a conda's, a bare venv's) says which interpreter it is, what
        it lacks and the command that works, in place of a traceback."""
        root = os.environ.get("LCMON_SOURCE_ROOT") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..")
        with tempfile.TemporaryDirectory() as tmp:
            venv = os.path.join(tmp, "bare")
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True,
                           timeout=WAIT)
            bare = os.path.join(venv, "bin", "python")
            r = subprocess.run([bare, os.path.join("examples", "rl_loop.py")], cwd=root,
                               capture_output=True, text=True, timeout=WAIT)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertNotIn("Traceback", r.stderr)
            self.assertIn("rl_loop: %s cannot import numpy" % bare, r.stderr)
            self.assertIn("/usr/bin/python3 examples/rl_loop.py", r.stderr)

    def test_no_lcmon_left_when_the_parent_is_killed(self):
        """A Python process that started a Loader is killed with SIGKILL:
        its lcmon goes too (it watches its stdin, --parent-fd 0), no orphan
        keeps running."""
        script = (
            "import sys, time, lcmon\n"
            "L = lcmon.Loader(%r)\n"
            "print(L.proc.pid, flush=True)\n"
            "time.sleep(600)\n" % YAML.replace("watch: false", "watch: true")
        )
        parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                  text=True, env=dict(os.environ))
        try:
            line = parent.stdout.readline()
            self.assertTrue(line.strip(), "the parent did not start its loader")
            child = int(line)
            self.assertTrue(alive(child))
            parent.send_signal(signal.SIGKILL)
            parent.wait(WAIT)
            deadline = time.monotonic() + WAIT
            while alive(child):
                self.assertLess(time.monotonic(), deadline, "lcmon outlived its parent")
                time.sleep(0.05)
        finally:
            if parent.poll() is None:
                parent.kill()
                parent.wait()
            parent.stdout.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    unittest.main(verbosity=2)
