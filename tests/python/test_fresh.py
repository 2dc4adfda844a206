"""Freshness: how old the positions a trainer gets are, and the fresh
request that brings the games it waited for (lcmon.Control.fresh, the
pool's `fresh` command), against a real headless lcmon on config/rl.yaml:

- the reinforcement-learning loop (lcmon.lczero.rl_cycles, 3 new games and
  8 steps a cycle): every cycle's rows hold positions of each of the games
  it waited for, the first of them within the cycle's first 4 batches. The
  new games carry a value no other game has (best_m = 5000 + their number,
  values[:, 1, 2] in the batch), so the rows say which game they are; the
  batches' freshness says the same (newest_seq from Cycle.fresh.first_seq
  on, rows drawn fresh). Without the fresh request (rl_cycles(...,
  fresh=False)) the same loop gets none of them in 3 cycles: the queues and
  the reservoir hold tens of batches of older games.
- the writer's metrics: the median and largest age of the positions
  written (gauges with their roles, the screen's text), the newest game's
  age well under that of the initial games;
- `lcmon ctl SOCKET fresh` answers with the games and their numbers.

Environment: LCMON (the binary), LCMON_SOURCE_ROOT, LC_TEST_DATA,
LCMON_TEST_SLOW.
"""

import gzip
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import time
import unittest

import lcmon
from lcmon import BatchReader
from lcmon.lczero import rl_cycles

SOURCE_ROOT = os.environ.get("LCMON_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..",
                                                               ".."))
DATA = os.environ.get("LC_TEST_DATA", os.path.join(SOURCE_ROOT, "tests", "data"))
SLOW = float(os.environ.get("LCMON_TEST_SLOW", "1") or 1)
RL_YAML = os.path.join(SOURCE_ROOT, "config", "rl.yaml")
V6 = 8356
BEST_M = 8300  # the V6 record's best_m: values[:, 1, 2] of the current layout
MARK = 5000.0
NEW_GAMES, STEPS, CYCLES = 3, 8, 3


def sample_games():
    """The sample .gz games that are whole V6 games (not the cut-short one)."""
    out = []
    for d, _, files in sorted(os.walk(DATA)):
        for f in sorted(files):
            if f.endswith(".gz"):
                path = os.path.join(d, f)
                try:
                    raw = gzip.open(path).read()
                except (OSError, EOFError):
                    continue
                if raw and len(raw) % V6 == 0:
                    out.append(path)
    return out


def write_marked(src, k, path):
    """Game src with best_m = MARK + k at every position, written whole (a
    temporary name, then a rename, as self-play writes)."""
    raw = bytearray(gzip.open(src).read())
    for off in range(0, len(raw), V6):
        struct.pack_into("<f", raw, off + BEST_M, MARK + k)
    part = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".part")
    with gzip.open(part, "wb") as f:
        f.write(bytes(raw))
    os.rename(part, path)


def marks(batch):
    """The marked games (k) that rows of the batch come from."""
    m = batch.tensors["values"][:, 1, 2]
    return {int(x - MARK) for x in m[m >= MARK]}


class Games(unittest.TestCase):
    """A folder of the sample games that lcmon watches, and new marked
    games written into it."""

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="lcmon-fresh-")
        self.games = os.path.join(self.work, "games")
        os.makedirs(self.games)
        self.samples = sample_games()
        self.assertGreater(len(self.samples), 10)
        settled = time.time() - 60  # written a minute ago: all in the initial scan
        for i, src in enumerate(self.samples):
            path = os.path.join(self.games, "a_%04d.gz" % i)
            shutil.copy(src, path)
            os.utime(path, (settled, settled))
        self.next_game = 0

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def write_games(self, n):
        """n new marked games, one at a time, as self-play writes them."""
        for _ in range(n):
            k = self.next_game
            write_marked(self.samples[k % len(self.samples)], k,
                         os.path.join(self.games, "b_%04d.gz" % k))
            self.next_game += 1
            time.sleep(0.05)


class RlCase(Games):
    def run_cycles(self, fresh):
        """CYCLES cycles of rl_cycles on config/rl.yaml, the games of each
        written while it waits; per cycle (the games it waited for, its
        Cycle, the marks and freshness of each of its batches)."""
        out = []
        with lcmon.Loader(RL_YAML, env={"LCMON_DATA": self.games},
                          start_timeout=60 * SLOW) as loader, \
                BatchReader(loader.pipe, wait_for_pipe=60 * SLOW, timeout=60 * SLOW) as reader:
            batches = reader.batches()
            for _ in range(20):  # the loader runs ahead: its queues fill up
                next(batches)
            deadline = time.monotonic() + 30 * SLOW
            while True:  # anchor at the initial load's newest game
                try:
                    loader.control.reset_anchor()
                    break
                except lcmon.ControlError:
                    self.assertLess(time.monotonic(), deadline)
                    time.sleep(0.05)
            cycles = rl_cycles(loader.control, batches, NEW_GAMES, STEPS, cycles=CYCLES,
                               timeout=60 * SLOW, fresh=fresh)
            for _ in range(CYCLES):
                first = self.next_game
                writer = threading.Thread(target=self.write_games, args=(NEW_GAMES,))
                writer.start()
                try:
                    cycle = next(cycles)
                finally:
                    writer.join()
                seen = [(marks(b), b.freshness) for b in cycle.batches]
                self.assertEqual(len(seen), STEPS)
                out.append((set(range(first, self.next_game)), cycle, seen))
                time.sleep(0.1)  # a trainer's checkpoint: the loader fills up again
        return out

    def test_cycle_trains_on_the_games_it_waited_for(self):
        for awaited, cycle, seen in self.run_cycles(fresh=True):
            what = "cycle %d (games %s): %s" % (cycle.index, sorted(awaited), seen)
            self.assertEqual(cycle.new_games, NEW_GAMES, what)
            self.assertIsNotNone(cycle.fresh)
            self.assertEqual(cycle.fresh.games, NEW_GAMES, what)
            self.assertEqual(cycle.fresh.last_seq - cycle.fresh.first_seq, NEW_GAMES - 1, what)
            got = set().union(*(m for m, _ in seen))
            # Positions of each game it waited for are in the cycle's rows ...
            self.assertTrue(awaited <= got, what)
            # ... the first within 4 batches of the wait ...
            first = min(i for i, (m, _) in enumerate(seen) if m & awaited)
            self.assertLess(first, 4, what)
            # ... and the batches' freshness tells it: the newest game among
            # the rows is one of those, some rows came fresh, young games.
            fresh_batches = [f for m, f in seen if m & awaited]
            for f in fresh_batches:
                self.assertGreaterEqual(f.newest_seq, cycle.fresh.first_seq, what)
                self.assertLessEqual(f.age_min_ms, f.age_median_ms)
                self.assertLessEqual(f.age_median_ms, f.age_max_ms)
            self.assertGreaterEqual(sum(f.fresh_rows for _, f in seen), NEW_GAMES, what)
            self.assertLess(min(f.age_min_ms for f in fresh_batches), 30000 * SLOW, what)

    def test_without_fresh_the_games_come_late(self):
        """Today's order (upstream's): the games a cycle waited for are
        behind what the queues and the reservoir hold. What the fresh
        request changes, so the test above means something."""
        late = 0
        for awaited, cycle, seen in self.run_cycles(fresh=False):
            self.assertIsNone(cycle.fresh)
            got = set().union(*(m for m, _ in seen))
            late += len(awaited - got)
        self.assertGreater(late, NEW_GAMES * CYCLES // 2)


class Metrics(Games):
    def test_ages_in_metrics_and_ctl_fresh(self):
        with lcmon.Loader(RL_YAML, env={"LCMON_DATA": self.games},
                          start_timeout=60 * SLOW) as loader, \
                BatchReader(loader.pipe, wait_for_pipe=60 * SLOW, timeout=60 * SLOW) as reader:
            batches = reader.batches()
            for _ in range(10):
                next(batches)
            time.sleep(0.5)
            for _ in range(10):
                next(batches)
            deadline = time.monotonic() + 30 * SLOW
            while True:
                stages = {s["name"]: s for s in loader.control.metrics()["last_second"]
                          ["stage_metrics"]}
                gauges = {g["name"]: g for g in stages["writer"].get("gauge_metrics", [])}
                # The snapshot may still hold a flush from before the sleep
                # (ages of 0.1 s): wait for one of a batch written after it.
                if gauges.get("position_age_median_ms", {}).get("value", 0) > 300:
                    break
                self.assertLess(time.monotonic(), deadline)
                next(batches)
            median = gauges["position_age_median_ms"]
            largest = gauges["position_age_max_ms"]
            self.assertEqual(median.get("role"), "ROLE_POSITION_AGE")
            self.assertEqual(largest.get("role"), "ROLE_POSITION_AGE_MAX")
            self.assertEqual(median.get("unit"), "ms")
            self.assertGreaterEqual(largest.get("value", 0), median.get("value", 0))
            texts = {t["name"]: t.get("value", "") for t in stages["writer"].get("text_metrics",
                                                                                  [])}
            self.assertRegex(texts.get("position_age", ""), r"^\d+\.\d s median, \d+\.\d s max$")

            # ctl: the command and its answer, for the games written since.
            loader.control.reset_anchor()
            self.write_games(2)
            loader.control.wait_for_new_chunks(2, timeout=30 * SLOW)
            out = subprocess.run([os.environ["LCMON"], "ctl", loader.socket, "fresh"],
                                 capture_output=True, text=True, timeout=30 * SLOW)
            self.assertEqual(out.returncode, 0, out.stderr)
            # games, first_seq, last_seq, dropped: the games after the
            # initial ones, numbered on from them.
            n = len(self.samples)
            self.assertRegex(out.stdout, r"^2\t%d\t%d\t\d+\n$" % (n + 1, n + 2))
            # Asked again at once: nothing new since, so nothing is dropped
            # (the games of the first request are still on their way).
            self.assertEqual(loader.control.fresh(), lcmon.control.Fresh(0, 0, 0, 0))
            # The next batches hold both (the one being written may not).
            got = set()
            for _ in range(3):
                b = next(batches)
                got |= marks(b)
                if b.freshness.newest_seq > len(self.samples):
                    self.assertLess(b.freshness.age_min_ms, 30000 * SLOW)
            self.assertEqual(got, {0, 1})


if __name__ == "__main__":
    unittest.main(verbosity=2)
