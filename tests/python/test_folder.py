"""What other programs do to a weeks-long run's data folder, and stops that
must stop (issue 24): a named pipe named like a game in the folder (at the
start and written to later) and given as the config; symbolic links back up
the tree; the folder deleted and made again; a stop held up by a slow
reader, cut short by a second SIGINT or by the stop deadline; a fresh seed
at every start unless one is pinned, and a pinned seed giving the same
stream again.

Also: a Parquet table that opens but does not read is said once in a run.

Environment: LCMON, LC_TEST_DATA, LCMON_SOURCE_ROOT, LCMON_TEST_SLOW, PYTHONPATH
(python/).
"""

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
import threading
import time
import unittest

from lcmon import BatchReader
from test_hostile import wait_for
from test_monitor import DATA, LCMON, SLOW, ctl

GAMES = sorted(glob.glob(os.path.join(DATA, "*", "*.gz")))
PARQUET_TABLE = os.path.join(os.environ["LCMON_SOURCE_ROOT"], "tests", "parquet", "fixtures",
                             "duckdb_snappy_rowgroups.parquet")

# The default chain, small, one thread a stage; {data}, {pipe}, {extra},
# {tensors}, {pool} (more pool settings, each after ", ").
CONFIG = """\
{extra}
stages:
  - name: files
    file_path_provider: {{directory: '{data}', settle_seconds: 0.2}}
  - name: sources
    input: files
    chunk_source_loader: {{threads: 1}}
  - name: pool
    input: sources
    shuffling_chunk_pool: {{chunk_pool_size: 1000, threads: 1{pool}}}
  - name: unpacker
    input: pool
    chunk_unpacker: {{sampling_rate: 0.5}}
  - name: sampler
    input: unpacker
    shuffling_frame_sampler: {{reservoir_size: 300}}
  - name: tensors
    input: sampler
    tensor_generator: {{{tensors}}}
  - name: writer
    input: tensors
    fifo_writer: {{path: '{pipe}'}}
"""


def copy_games(into, games, old=True):
    for g in games:
        dst = os.path.join(into, "%s_%s" % (os.path.basename(os.path.dirname(g)),
                                            os.path.basename(g)))
        shutil.copy(g, dst)
        if old:  # settled at once
            os.utime(dst, (time.time() - 3600, time.time() - 3600))


class Run:
    """A headless lcmon on a config, its socket, and its stderr in a file."""

    def __init__(self, tmp, data, extra="", args=(), env=None, name="run",
                 tensors="batch_size: 32, packed: true", pool=""):
        self.tmp = tmp
        self.pipe = os.path.join(tmp, name + ".pipe")
        self.sock = os.path.join(tmp, name + ".sock")
        self.config = os.path.join(tmp, name + ".yaml")
        with open(self.config, "w") as f:
            f.write(CONFIG.format(data=data, pipe=self.pipe, extra=extra, tensors=tensors,
                                  pool=pool))
        self.err_path = os.path.join(tmp, name + ".log")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(
            [LCMON, "--no-ui", "--status-interval", "0", "--config", self.config, "--socket",
             self.sock, *args], stdout=subprocess.DEVNULL, stderr=self.err,
            env=dict(os.environ, **(env or {})))
        wait_for("lcmon's socket", lambda: os.path.exists(self.sock) or self.proc.poll() is not None,
                 20)
        assert self.proc.poll() is None, self.log()

    def log(self):
        with open(self.err_path) as f:
            return f.read()

    def files_stage(self, name="files"):
        r = ctl(self.sock, "metrics", "--json")
        assert r.returncode == 0, r.stderr
        for s in json.loads(r.stdout)["all_time"]["stage_metrics"]:
            if s["name"] == name:
                return s
        raise KeyError(name)

    def gauge(self, name, stage="pool"):
        s = self.files_stage(stage)
        return {g["name"]: int(g.get("value", 0))
                for g in s.get("gauge_metrics", [])}.get(name, 0)

    def anchor_count(self):
        r = ctl(self.sock, "anchor", "get")
        assert r.returncode == 0, r.stderr
        return int(r.stdout.split("\t")[1])

    def count(self, name, stage="files"):
        s = self.files_stage(stage)
        return {c["name"]: int(c.get("count", 0))
                for c in s.get("count_metrics", [])}.get(name, 0)

    def stop(self, timeout=15, send=True):
        """SIGINT (unless send is false: one was sent), then its exit status."""
        if send and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            rc = self.proc.wait(timeout=timeout * SLOW)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.err.close()
        return rc


class FolderTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lcmon-folder-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.data = os.path.join(self.tmp, "data")
        os.makedirs(self.data)

    def test_fifos_links_and_a_fifo_config(self):
        """A FIFO named like a game, at the start and written to while lcmon
        runs, is skipped with one warning each and counted; games copied in
        after it are still found; two links to the folder are listed once;
        SIGINT still stops lcmon at once."""
        copy_games(self.data, GAMES[:5])
        os.mkfifo(os.path.join(self.data, "early.gz"))
        os.symlink(".", os.path.join(self.data, "loop1"))
        os.symlink(".", os.path.join(self.data, "loop2"))
        run = Run(self.tmp, self.data)
        try:
            wait_for("the first 5 games", lambda: run.count("files") >= 5, 30)
            late = os.path.join(self.data, "late.gz")
            os.mkfifo(late)
            for _ in range(3):  # each writer's close is an event on the folder
                fd = os.open(late, os.O_RDWR)  # does not wait for a reader
                os.write(fd, b"x" * 100)
                os.close(fd)
                time.sleep(0.2)
            copy_games(self.data, GAMES[5:8], old=False)
            wait_for("the 3 games copied after the FIFO", lambda: run.count("files") >= 8, 30)
            wait_for("the late FIFO counted", lambda: run.count("not_regular_files") >= 2, 30)
            self.assertEqual(run.count("files"), 8, "a game listed twice through the links?")
            self.assertEqual(run.count("directories_again"), 2)
        finally:
            t0 = time.monotonic()
            rc = run.stop()
            took = time.monotonic() - t0
        self.assertEqual(rc, 0, run.log()[-2000:])
        self.assertLess(took, 5 * SLOW)
        log = run.log()
        for name in ("early.gz", "late.gz"):
            self.assertEqual(log.count("%s: is a named pipe (FIFO), not a game file" % name), 1,
                             log[-3000:])
        for name in ("loop1", "loop2"):
            self.assertEqual(log.count("%s: leads to %s, a directory already listed" %
                                       (name, self.data)), 1, log[-3000:])
        # The FIFO as the config: refused at once, naming it.
        cfg = os.path.join(self.tmp, "config.fifo")
        os.mkfifo(cfg)
        for args in (["--no-ui", "--config", cfg], ["--check-config", cfg]):
            r = subprocess.run([LCMON, *args], capture_output=True, text=True, timeout=10 * SLOW)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("%s: is a named pipe (FIFO), not a configuration file" % cfg, r.stderr)
        # A FIFO nobody reads as a log: refused at once, not waited on with
        # the signals blocked.
        for opt in ("--metrics-log", "--log-file"):
            r = subprocess.run([LCMON, "--no-ui", "--max-seconds", "1", opt, cfg],
                               capture_output=True, text=True, timeout=10 * SLOW)
            self.assertNotEqual(r.returncode, 0, r.stderr)
            self.assertIn("%s: cannot open %s: a named pipe with no reader" % (opt, cfg), r.stderr)

    def run_parquet_folder(self):
        """lcmon over the data folder's tables, three epochs into a file of
        batches: its stderr, after checking it ended well and wrote some."""
        out = os.path.join(self.tmp, "out.bin")
        cfg = os.path.join(self.tmp, "pq.yaml")
        with open(cfg, "w") as f:
            f.write("stages:\n"
                    "  - name: games\n"
                    "    parquet_game_source: {path: '%s', epochs: 3, watch: false}\n"
                    "  - name: tokens\n"
                    "    input: games\n"
                    "    game_tokenizer: {mode: decoder, batch_size: 4}\n"
                    "  - name: writer\n"
                    "    input: tokens\n"
                    "    fifo_writer: {path: '%s', regular_file: true}\n" % (self.data, out))
        r = subprocess.run([LCMON, "--no-ui", "--status-interval", "0", "--config", cfg],
                           capture_output=True, text=True, timeout=60 * SLOW)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        with BatchReader(out) as reader:
            self.assertGreater(sum(1 for _ in reader), 0)
            self.assertTrue(reader.done)
        return r.stderr

    def test_fifo_among_parquet_files(self):
        """A FIFO named x.parquet beside a table: every epoch skips it, the
        log says so once, the run completes."""
        shutil.copy(PARQUET_TABLE, self.data)
        os.mkfifo(os.path.join(self.data, "x.parquet"))
        err = self.run_parquet_folder()
        self.assertEqual(err.count("x.parquet: is a named pipe (FIFO), not a Parquet file"), 1,
                         err[-2000:])

    def test_unreadable_parquet_file_said_once(self):
        """Issue 25: a table that opens but none of whose row groups reads
        (every page overwritten, the footer whole) was warned about at every
        epoch; over three epochs it is warned about once, and the run
        completes on the good table beside it."""
        shutil.copy(PARQUET_TABLE, self.data)
        with open(PARQUET_TABLE, "rb") as f:
            table = bytearray(f.read())
        footer = int.from_bytes(table[-8:-4], "little")
        table[4:len(table) - 8 - footer] = b"\xff" * (len(table) - 12 - footer)
        with open(os.path.join(self.data, "unreadable.parquet"), "wb") as f:
            f.write(table)
        err = self.run_parquet_folder()
        said = [line for line in err.splitlines() if "unreadable.parquet" in line]
        self.assertEqual(len(said), 1, err[-3000:])
        self.assertIn("skipping row group", said[0])
        self.assertIn("malformed page header", said[0])

    def test_folder_deleted_and_made_again(self):
        copy_games(self.data, GAMES[:4])
        run = Run(self.tmp, self.data)
        try:
            wait_for("the first games", lambda: run.count("files") >= 4, 30)
            shutil.rmtree(self.data)
            wait_for("the loss said", lambda: "was deleted or moved away" in run.log(), 30)
            os.makedirs(self.data)
            wait_for("the folder watched again", lambda: "is there again" in run.log(), 30)
            copy_games(self.data, GAMES[4:7], old=False)
            wait_for("the games of the new folder", lambda: run.count("files") >= 7, 30)
        finally:
            rc = run.stop()
        self.assertEqual(rc, 0, run.log()[-2000:])


class RewriteTests(unittest.TestCase):
    """A file already in the window written again: the same bytes are the
    same games (ignored); other bytes replace the old games, and the anchor
    counts only the games that are new; a tar that grows adds its new
    members."""

    def test_files_written_again(self):
        tmp = tempfile.mkdtemp(prefix="lcmon-rewrite-")
        self.addCleanup(shutil.rmtree, tmp, True)
        data = os.path.join(tmp, "data")
        os.makedirs(data)
        games = GAMES[:6]
        names = []
        for k, g in enumerate(games[:4]):
            names.append(os.path.join(data, "g%d.gz" % k))
            shutil.copy(g, names[-1])
            os.utime(names[-1], (time.time() - 3600, time.time() - 3600))
        tar_path = os.path.join(data, "run.tar")
        with tarfile.open(tar_path, "w") as t:
            for k in range(3):
                t.add(GAMES[10 + k], arcname="m%d.gz" % k)
        os.utime(tar_path, (time.time() - 3600, time.time() - 3600))
        run = Run(tmp, data)
        try:
            wait_for("the initial window", lambda: run.gauge("chunks_in_window") == 7, 30)
            self.assertEqual(run.anchor_count(), 7)
            # The same bytes copied over a game (as cp or a sync does).
            with open(games[1], "rb") as f:
                same = f.read()
            with open(names[1], "wb") as f:
                f.write(same)
            wait_for("the same game known", lambda: run.count("rewritten_same", "pool") == 1, 30)
            # Other bytes, through a rename (as rsync does).
            shutil.copy(games[5], os.path.join(data, ".g2.part"))
            os.replace(os.path.join(data, ".g2.part"), names[2])
            wait_for("the replacement", lambda: run.count("rewritten_replaced", "pool") == 1, 30)
            # The tar grows by two members.
            with tarfile.open(tar_path, "a") as t:
                for k in range(3, 5):
                    t.add(GAMES[10 + k], arcname="m%d.gz" % k)
            wait_for("the grown tar", lambda: run.count("rewritten_replaced", "pool") == 2, 30)
            wait_for("the window's count", lambda: run.gauge("chunks_in_window") == 9, 30)
            # Counted once each: 7 at first, 1 replaced game, 2 new members.
            self.assertEqual(run.anchor_count(), 10)
            self.assertEqual(run.count("rewritten_same", "pool"), 1)
        finally:
            rc = run.stop()
        self.assertEqual(rc, 0, run.log()[-2000:])


class Trickle(threading.Thread):
    """A trainer that takes the pipe 4 KB every 50 ms: a stop waits for it
    (the writer's grace) up to stop_grace. With pause 0 and size 64 KB, a
    trainer that reads as fast as it can (the pool keeps drawing)."""

    def __init__(self, path, pause=0.05, size=4096):
        super().__init__(daemon=True)
        self.path = path
        self.pause, self.size = pause, size
        self.read = 0

    def run(self):
        while not os.path.exists(self.path):
            time.sleep(0.05)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            while True:
                b = os.read(fd, self.size)
                if not b:
                    return
                self.read += len(b)
                if self.pause:
                    time.sleep(self.pause)
        finally:
            os.close(fd)


class WithGames(unittest.TestCase):
    """A data folder holding every sample game, settled."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lcmon-games-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.data = os.path.join(self.tmp, "data")
        os.makedirs(self.data)
        copy_games(self.data, GAMES)


class StopTests(WithGames):

    def slow_stop(self, env=None):
        """lcmon in the middle of a batch for a trickling reader, then
        SIGINT: the stop waits for the reader. The run and the time of
        the signal."""
        # The writer's lock file, in a runtime directory of the test's own.
        self.locks = os.path.join(self.tmp, "runtime")
        os.mkdir(self.locks, 0o700)
        env = dict(env or {}, XDG_RUNTIME_DIR=self.locks)
        # Dense batches of 9 MB: the pipe holds a part of one, so the stop
        # finds a batch half written and waits for the reader to take it
        # (stop_grace: the default 4 s).
        run = Run(self.tmp, self.data, env=env, tensors="batch_size: 256")
        reader = Trickle(run.pipe)
        reader.start()
        wait_for("the reader to take bytes", lambda: reader.read > 100000, 30)
        self.assertEqual(len(self.lock_files()), 1, os.listdir(self.locks))
        self.assertTrue(os.path.exists(run.sock + ".lock"))
        run.proc.send_signal(signal.SIGINT)
        return run, time.monotonic()

    def lock_files(self):
        return glob.glob(os.path.join(self.locks, "lcmon-writer-*.lock"))

    def test_second_sigint_exits_at_once(self):
        run, t0 = self.slow_stop()
        time.sleep(0.5)
        self.assertIsNone(run.proc.poll(), "the stop did not wait for the reader")
        t1 = time.monotonic()
        run.proc.send_signal(signal.SIGINT)
        rc = run.stop(send=False)
        self.assertEqual(rc, 128 + signal.SIGINT, run.log()[-2000:])
        self.assertLess(time.monotonic() - t1, 2 * SLOW)
        self.assertIn("Interrupt again while stopping: exiting at once", run.log())
        self.assertFalse(os.path.exists(run.sock), "the socket outlived a stop cut short")
        self.assertFalse(os.path.exists(run.sock + ".lock"), "its lock file outlived the stop")
        self.assertEqual(self.lock_files(), [], "the writer's lock file outlived the stop")

    def test_stop_deadline(self):
        """A stop that does not end in time (here the reader holds it up
        past a deadline of 1 s; in life, a thread stuck in a system call)
        ends the process at the deadline."""
        run, t0 = self.slow_stop(env={"LCMON_STOP_DEADLINE": "1"})
        rc = run.stop(send=False)
        self.assertEqual(rc, 1, run.log()[-2000:])
        self.assertLess(time.monotonic() - t0, 1 + 2 * SLOW)
        self.assertIn("the stop did not end within 1 s", run.log())
        self.assertFalse(os.path.exists(run.sock), "the socket outlived a stop cut short")
        self.assertFalse(os.path.exists(run.sock + ".lock"), "its lock file outlived the stop")
        self.assertEqual(self.lock_files(), [], "the writer's lock file outlived the stop")


class SeedTests(WithGames):
    def first_batches(self, name, extra="", args=(), n=4):
        run = Run(self.tmp, self.data, extra=extra, args=args, name=name)
        try:
            r = ctl(run.sock, "status")
            self.assertEqual(r.returncode, 0, r.stderr)
            status = dict(l.split(" ", 1) for l in r.stdout.strip().split("\n"))
            self.assertIn(status["state"], ("PIPELINE_RUNNING", "PIPELINE_STARTING"))
            with BatchReader(run.pipe, timeout=30 * SLOW, wait_for_pipe=30 * SLOW) as r:
                seed = r.header.seed
                got = []
                for b in r.batches():
                    got.append(b"".join(a.tobytes() for a in b.tensors.values()))
                    if len(got) == n:
                        break
        finally:
            self.assertEqual(run.stop(), 0)
        m = re.search(r"run ([0-9a-f]{16}), seed (\d+)( \(drawn for this run\))?", run.log())
        self.assertIsNotNone(m, run.log()[-2000:])
        self.assertEqual(int(m.group(2)), seed, "the header names the seed the log says")
        self.assertEqual(status["seed"], str(seed), "ctl status names the seed the log says")
        self.assertEqual(status["run"], m.group(1))
        return seed, bool(m.group(3)), got

    def test_fresh_seed_unless_pinned(self):
        s1, drawn1, b1 = self.first_batches("a")
        s2, drawn2, b2 = self.first_batches("b")
        self.assertTrue(drawn1 and drawn2)
        self.assertNotEqual(s1, s2)
        self.assertNotEqual(b1, b2, "two runs with their own seeds gave the same batches")
        # Pinned, by the config or by --seed (which wins): the same stream.
        s3, drawn3, b3 = self.first_batches("c", extra="seed: 7")
        s4, drawn4, b4 = self.first_batches("d", args=("--seed", "7"), extra="seed: 99")
        self.assertEqual((s3, s4), (7, 7))
        self.assertFalse(drawn3 or drawn4)
        self.assertEqual(b3, b4, "a pinned seed with one thread a stage did not repeat the stream")


if __name__ == "__main__":
    unittest.main(verbosity=2)
