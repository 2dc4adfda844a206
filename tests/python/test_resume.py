"""Resuming a training run from a checkpoint's anchor (issue 34, item 1):
the anchor is taken before lcmon's start, so the pool's initial load counts
exactly the games after it, whether the files in the folder are settled
(older than settle_seconds: the scan hands them over at once and the
initial load is done before any client could speak) or still being written.

- a folder of games, a run that moves its anchor, lcmon stopped, 7 games
  written while it is down, then a new lcmon.Loader(config, anchor=saved)
  counts 7 (not the whole window), and so does rl_cycles on it (its first
  cycle's new games), which leaves the anchor as the start set it;
- rl_cycles(anchor=saved) on a loader started without the anchor counts 7
  too: it sets the anchor at run time with anchor-recount (the count made
  again from the window), settled files or not;
- the plain program: `lcmon --no-ui --anchor KEY`, then `lcmon ctl SOCKET
  anchor-get` and the pool's chunks_since_anchor metric say KEY and 7, and
  the log says what the initial load counted from; --anchor over a config
  with no chunk pool is refused, naming it;
- the anchor commands' meanings side by side: anchor-set keeps the count
  (upstream's), anchor-recount counts again from the window (a key whose
  game is in the window: exact; one older than the window: the window's
  games), and with sharding anchor-recount is refused, saying what to do.

Environment: LCMON (the executable), LCMON_TEST_DATA, LCMON_TEST_SLOW,
PYTHONPATH (python/).
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import lcmon
from lcmon import Control, ControlError
from lcmon.lczero import rl_cycles

LCMON = os.environ["LCMON"]
DATA = os.path.abspath(os.environ["LCMON_TEST_DATA"])
SLOW = float(os.environ.get("LCMON_TEST_SLOW", "1"))
WAIT = 60 * SLOW


def sample_games():
    games = []
    for root, _, files in sorted(os.walk(DATA)):
        games += [os.path.join(root, f) for f in sorted(files) if f.endswith(".gz")]
    return games


def name(k):
    return "game_%06d.gz" % k


def write_games(folder, first, n, settled):
    """Games first .. first+n-1 into folder, one game (one chunk) a file,
    as self-play writes them (a temporary name, then a rename); settled:
    dated an hour back, so the loader's scan takes them at once."""
    games = sample_games()
    for k in range(first, first + n):
        part = os.path.join(folder, "." + name(k) + ".part")
        shutil.copy(games[k % len(games)], part)
        if settled:
            t = time.time() - 3600
            os.utime(part, (t, t))
        os.rename(part, os.path.join(folder, name(k)))


def config(folder, pool_size=1000):
    return {
        "seed": 5,
        "stages": [
            {"name": "files", "file_path_provider": {"directory": folder}},
            {"name": "sources", "input": "files", "chunk_source_loader": {"threads": 1}},
            {"name": "pool", "input": "sources",
             "shuffling_chunk_pool": {"chunk_pool_size": pool_size, "threads": 1}},
            {"name": "unpacker", "input": "pool", "chunk_unpacker": {"sampling_rate": 0.5}},
            {"name": "sampler", "input": "unpacker",
             "shuffling_frame_sampler": {"reservoir_size": 64}},
            {"name": "tensors", "input": "sampler",
             "tensor_generator": {"batch_size": 8, "packed": True}},
            {"name": "writer", "input": "tensors", "fifo_writer": {"path": "set by Loader"}},
        ],
    }


def loaded(control):
    """Has the pool's initial load been counted?"""
    g = Control.find(control.metrics()["all_time"], "pool", "gauge_metrics", "initial_load_done")
    return g is not None and g.get("value", 0) == 1


def wait_loaded(test, control):
    deadline = time.monotonic() + WAIT
    while not loaded(control):
        test.assertLess(time.monotonic(), deadline, "the pool's initial load never ended")
        time.sleep(0.05)


class Resume(unittest.TestCase):
    N, DOWN = 30, 7  # games before the stop; games written while lcmon is down

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lcmon-resume-")
        self.games = os.path.join(self.tmp, "games")
        os.makedirs(self.games)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def first_run(self, settled=True):
        """N games, a run whose first RL cycle anchors at the newest (game
        N-1), lcmon stopped, DOWN more games written: the saved anchor."""
        write_games(self.games, 0, self.N, settled)
        with lcmon.Loader(config(self.games), start_timeout=WAIT) as L:
            cycle = next(rl_cycles(L.control, L.batches(), self.N, 1, timeout=WAIT))
            self.assertEqual((cycle.anchor, cycle.new_games), (name(self.N - 1), self.N))
            self.assertEqual(len(list(cycle.batches)), 1)
        write_games(self.games, self.N, self.DOWN, settled)
        return cycle.anchor

    def resume_with_anchor_at_start(self, settled):
        saved = self.first_run(settled)
        with lcmon.Loader(config(self.games), anchor=saved, start_timeout=WAIT) as L:
            wait_loaded(self, L.control)
            self.assertEqual(L.control.anchor(), (saved, self.DOWN))
            cycle = next(rl_cycles(L.control, L.batches(), 1, 1, anchor=saved, timeout=WAIT))
            self.assertEqual((cycle.new_games, cycle.anchor),
                             (self.DOWN, name(self.N + self.DOWN - 1)))
            self.assertEqual(len(list(cycle.batches)), 1)

    def test_settled_files_anchor_given_at_start(self):
        """The issue's case: settled files, Loader(anchor=saved): 7 new
        games, not the whole window (37)."""
        self.resume_with_anchor_at_start(settled=True)

    def test_files_being_written_anchor_given_at_start(self):
        self.resume_with_anchor_at_start(settled=False)

    def resume_without_anchor_at_start(self, settled):
        saved = self.first_run(settled)
        with lcmon.Loader(config(self.games), start_timeout=WAIT) as L:
            if settled:  # the load was counted before rl_cycles asks
                wait_loaded(self, L.control)
                self.assertEqual(L.control.anchor(), ("", self.N + self.DOWN))
            cycle = next(rl_cycles(L.control, L.batches(), 1, 1, anchor=saved, timeout=WAIT))
            self.assertEqual((cycle.new_games, cycle.anchor),
                             (self.DOWN, name(self.N + self.DOWN - 1)))

    def test_settled_files_anchor_recounted_at_run_time(self):
        """rl_cycles(anchor=saved) on a loader started without it: the
        count is made again from the window (was: the whole window kept)."""
        self.resume_without_anchor_at_start(settled=True)

    def test_files_being_written_anchor_recounted_at_run_time(self):
        self.resume_without_anchor_at_start(settled=False)


class PlainLcmon(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lcmon-resume-")
        self.games = os.path.join(self.tmp, "games")
        os.makedirs(self.games)
        write_games(self.games, 0, 20, settled=True)
        self.cfg = os.path.join(self.tmp, "run.yaml")
        cfg = config(self.games)
        cfg["stages"][-1]["fifo_writer"]["path"] = os.path.join(self.tmp, "lcmon.pipe")
        with open(self.cfg, "w") as f:
            json.dump(cfg, f)  # JSON is YAML
        self.sock = os.path.join(self.tmp, "lcmon.sock")
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
                try:
                    p.wait(WAIT)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, *args, env=None):
        """lcmon --no-ui with args, its log in a file (read by stop), once
        its pool's initial load is counted; (process, Control)."""
        self.log = open(os.path.join(self.tmp, "lcmon.log"), "w+")
        p = subprocess.Popen([LCMON, "--no-ui", "--status-interval", "0", "--config", self.cfg,
                              "--socket", self.sock, *args],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=self.log, env=dict(os.environ, **(env or {})))
        self.procs.append(p)
        deadline = time.monotonic() + WAIT
        while not os.path.exists(self.sock):
            self.assertIsNone(p.poll(), "lcmon exited early")
            self.assertLess(time.monotonic(), deadline, "no socket")
            time.sleep(0.02)
        c = Control(self.sock, timeout=WAIT)
        wait_loaded(self, c)
        return p, c

    def ctl(self, *args):
        return subprocess.run([LCMON, "ctl", self.sock, *args], capture_output=True, text=True,
                              timeout=WAIT)

    def stop(self, p):
        """Stop lcmon; its log."""
        p.send_signal(signal.SIGINT)
        self.assertEqual(p.wait(WAIT), 0)
        self.log.seek(0)
        text = self.log.read()
        self.log.close()
        return text

    def test_anchor_option_counts_from_the_start(self):
        p, c = self.start("--anchor", name(12))
        with c:
            r = self.ctl("anchor-get")
            self.assertEqual((r.returncode, r.stdout), (0, "%s\t7\n" % name(12)), r.stderr)
            m = c.metrics()["all_time"]
            self.assertEqual(Control.find(m, "pool", "gauge_metrics",
                                          "chunks_since_anchor").get("value"), 7)
        self.assertIn("pool: anchor '%s': 7 chunks of the initial window come after it"
                      % name(12), self.stop(p))

    def test_anchor_option_needs_a_chunk_pool(self):
        with open(self.cfg, "w") as f:
            f.write("stages:\n  - name: files\n    file_path_provider: {directory: %s}\n"
                    "  - name: sources\n    input: files\n    chunk_source_loader: {}\n"
                    % self.games)
        r = subprocess.run([LCMON, "--no-ui", "--config", self.cfg, "--anchor", name(3)],
                           capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--anchor %s: %s has no stage that keeps an anchor (a shuffling_chunk_pool)"
                      % (name(3), self.cfg), r.stderr)
        r = subprocess.run([LCMON, "--help"], capture_output=True, text=True, timeout=WAIT)
        self.assertIn("--anchor KEY", r.stdout)

    def test_set_keeps_the_count_recount_counts_again(self):
        p, c = self.start()
        with c:
            self.assertEqual(c.anchor(), ("", 20))
            # anchor-set: the key moves, the count stays (upstream's SetAnchor).
            self.assertEqual(c.set_anchor(name(12)), (name(12), 20))
            # anchor-recount: the games of the window after the key.
            self.assertEqual(c.set_anchor(name(12), recount=True), (name(12), 7))
            self.assertEqual(c.anchor(), (name(12), 7))
            r = self.ctl("anchor-recount", name(17))
            self.assertEqual((r.returncode, r.stdout), (0, "%s\t2\n" % name(17)), r.stderr)
            # Older than every game in the window: all of the window's.
            self.assertEqual(c.set_anchor("game_.gz", recount=True), ("game_.gz", 20))
            # Newer than every game: none yet; a new game then counts.
            self.assertEqual(c.set_anchor(name(99), recount=True), (name(99), 0))
            write_games(self.games, 100, 1, settled=False)
            self.assertEqual(c.wait_for_new_chunks(1, timeout=WAIT), 1)
            self.assertEqual(c.reset_anchor(), (name(100), 1))
        err = self.stop(p)
        self.assertIn("anchor recounted from '%s': 7 chunks of the window come after it"
                      % name(12), err)
        self.assertIn("anchor recounted from 'game_.gz': 20 chunks of the window come after "
                      "it (its game is not in the window", err)

    def test_recount_refused_with_sharding(self):
        p, c = self.start(env={"RANK": "0", "WORLD_SIZE": "2"})
        with c:
            with self.assertRaisesRegex(ControlError, r"world size 2\), so it cannot count the "
                                        r"others': give the anchor before the start instead "
                                        r"\(lcmon --anchor KEY"):
                c.set_anchor(name(12), recount=True)
        self.stop(p)
        # Given at the start, every rank counts the games of all ranks.
        p, c = self.start("--anchor", name(12), env={"RANK": "1", "WORLD_SIZE": "2"})
        with c:
            self.assertEqual(c.anchor(), (name(12), 7))
        self.stop(p)


if __name__ == "__main__":
    unittest.main(verbosity=2)
