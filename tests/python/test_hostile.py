"""The hostile runtime (issue 13): what a loader that runs for weeks meets.

More monitor clients than the limit; clients that announce a 4 GiB frame,
cut a frame short, send random bytes, subscribe and unsubscribe as fast as
they can, or hang up in the middle of a reply; a trainer stopped with
SIGSTOP for 30 s; data files deleted, truncated or replaced while they are
read; the data directory replaced by a file; a configuration path that is
a directory or a 100 MB file; a socket path another program listens on; a
socket directory other users can write to. Each time lcmon either goes on
(still delivering batches, its memory flat, the log and the metrics saying
what happened) or refuses clearly at start.

Environment: LCMON, LC_TEST_DATA, LCMON_TEST_SLOW, PYTHONPATH (python/).
"""

import os
import random
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from test_monitor import DATA, LCMON, SLOW, SMALL_CONFIG, Loader, client_frame, ctl, subscribe

PYTHON = sys.executable

# Memory bounds, in KiB. The sanitizers' allocators keep what is freed and
# their shadow memory grows with every address touched, so their builds get
# four times the room; an unbounded buffer (a flood kept whole) would still
# pass far beyond it.
MEM_SCALE = 1 if SLOW == 1 else 4


def wait_for(what, cond, seconds):
    """Wait for the whole condition, with a deadline scaled for sanitizers."""
    deadline = time.monotonic() + seconds * SLOW
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out after %.0f s waiting for %s" % (seconds * SLOW, what))


def closed_by_server(s, seconds):
    """Read until the server closes; the bytes it sent first (its hello)."""
    s.settimeout(seconds * SLOW)
    got = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return got
        got += chunk


class Clients(unittest.TestCase):
    """Monitor clients that misbehave, against a loader delivering batches."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.loader = Loader(self.tmp.name)
        self.assertTrue(self.loader.batches_flow())

    def tearDown(self):
        rc, self.err = self.loader.close()
        self.tmp.cleanup()
        self.assertEqual(rc, 0, self.err)

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.loader.sock)
        return s

    def test_more_clients_than_the_limit(self):
        L = self.loader
        first = L.rss()
        socks, gone = [], []
        for _ in range(70):
            s = self.connect()
            try:
                s.sendall(subscribe(0))  # says something, so it is not closed as idle
            except (BrokenPipeError, ConnectionResetError):
                gone.append(s)  # refused and closed already, before it could speak
                continue
            socks.append(s)
        # Each connection gets the hello, or is closed at once: 64 and 6.
        served, refused = 0, len(gone)
        for s in socks:
            s.settimeout(10 * SLOW)
            try:
                got = s.recv(4)
            except ConnectionResetError:
                got = b""
            if got:
                served += 1
            else:
                refused += 1
        socks += gone
        self.assertEqual((served, refused), (64, 6))
        self.assertTrue(L.batches_flow(), "no batches with every place taken")
        for s in socks:
            s.close()
        # Places free again: a client is served.
        wait_for("ctl to be served again", lambda: ctl(L.sock, "anchor", "get").returncode == 0, 20)
        self.assertLess(L.rss() - first, 32 * 1024 * MEM_SCALE)
        rc, err = L.close()
        self.assertEqual(rc, 0, err)
        self.assertIn("refusing a client (already 64 connected)", err)

    def fast_client(self):
        """One client that subscribes and unsubscribes as fast as the socket
        takes it for two seconds while a thread reads what comes (snapshots,
        log lines); then it half-closes, and the server answers and closes."""
        s = self.connect()
        got = [0]

        def drain():
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        return
                    got[0] += len(chunk)
            except OSError:
                return
        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        stop = time.monotonic() + 2
        while time.monotonic() < stop:
            s.sendall(subscribe(50, logs=True) + subscribe(0))
        s.shutdown(socket.SHUT_WR)
        reader.join(30 * SLOW)
        self.assertFalse(reader.is_alive(), "the server never closed the fast client")
        self.assertGreater(got[0], 0)
        s.close()

    def test_hostile_bytes_and_fast_clients(self):
        L = self.loader
        first = L.rss()
        # A 4 GiB length prefix, a frame cut short, random bytes: each is
        # closed after the hello, and the loader goes on.
        rng = random.Random(13)
        noise = bytes(rng.getrandbits(8) for _ in range(65536))
        for what, data in (("a 4 GiB frame", struct.pack("<I", 0xFFFFFFFF) + b"\x0a"),
                           ("random bytes", noise),
                           ("a frame of random bytes", client_frame(noise[:1000]))):
            s = self.connect()
            try:
                s.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # it stopped listening at the bad frame: that is the point
            try:
                got = closed_by_server(s, 10)
            except ConnectionResetError:
                got = b""
            s.close()
            if got:
                self.assertEqual(len(got), 4 + struct.unpack("<I", got[:4])[0], what)
        s = self.connect()
        s.sendall(subscribe(50)[:5])  # a frame cut short, then gone
        s.close()
        # Subscribe and unsubscribe as fast as it can, for two seconds, twice:
        # the first flood brings the server's buffers for a client to their
        # bounds (4 MiB of input, 8 MiB of replies at most); the second must
        # not grow the loader any further.
        self.fast_client()
        warmed = L.rss()
        self.fast_client()
        self.assertLess(L.rss() - warmed, 16 * 1024 * MEM_SCALE,
                        "memory grew with a second flood")
        for _ in range(20):
            s = self.connect()
            s.sendall(subscribe(50, logs=True))
            s.settimeout(10 * SLOW)
            s.recv(100)  # part of the hello or of a snapshot
            s.close()
        # Still delivering, still answering, memory flat.
        self.assertIsNone(L.proc.poll())
        self.assertTrue(L.batches_flow())
        self.assertEqual(ctl(L.sock, "anchor", "get").returncode, 0)
        self.assertLess(L.rss() - first, 64 * 1024 * MEM_SCALE)
        rc, err = L.close()
        self.assertEqual(rc, 0, err)
        self.assertIn("it announced a frame over the size limit", err)
        self.assertIn("it sent bytes that are not a monitor message", err)


READER = r"""
import sys
from lcmon import BatchReader
with BatchReader(sys.argv[1], timeout=120, restarts="end", tolerate_truncation=True) as r:
    for i, _ in enumerate(r):
        print(i + 1, flush=True)
"""


class StoppedReader(unittest.TestCase):
    def test_reader_stopped_for_30_s(self):
        """A trainer stopped with SIGSTOP for 30 s: the writer waits on the
        full pipe, logs and shows that the reader is not reading, its memory
        stays flat; once continued, the reader gets batches again."""
        with tempfile.TemporaryDirectory() as tmp:
            pipe = os.path.join(tmp, "lcmon.pipe")
            sock = os.path.join(tmp, "lcmon.sock")
            config = os.path.join(tmp, "small.yaml")
            with open(config, "w") as f:
                f.write(SMALL_CONFIG % (DATA, pipe))
            env = dict(os.environ)
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=8"
            lc = subprocess.Popen([LCMON, "--no-ui", "--status-interval", "0", "--config", config,
                                   "--socket", sock], stderr=subprocess.PIPE, text=True, env=env)
            reader = None
            try:
                wait_for("lcmon to make its pipe", lambda: os.path.exists(pipe), 20)
                reader = subprocess.Popen([PYTHON, "-c", READER, pipe], stdout=subprocess.PIPE,
                                          text=True)
                count = [0]

                def follow():
                    for line in reader.stdout:
                        count[0] = int(line)

                threading.Thread(target=follow, daemon=True).start()
                wait_for("the first batches", lambda: count[0] > 3, 30)

                def rss():
                    with open("/proc/%d/status" % lc.pid) as f:
                        return [int(l.split()[1]) for l in f if l.startswith("VmRSS")][0]

                def writer():
                    r = ctl(sock, "metrics", "--json")
                    if r.returncode != 0:
                        return None
                    import json
                    m = json.loads(r.stdout)
                    return [s for s in m["all_time"]["stage_metrics"] if s["name"] == "writer"][0]

                reader.send_signal(signal.SIGSTOP)
                stopped_at = time.monotonic()
                time.sleep(3)  # the pipe and the queues fill
                full = rss()
                w = wait_for("the writer's warning", lambda: (lambda w: w if w and "is not reading"
                             in w.get("warning", "") else None)(writer()), 20)
                self.assertIn(pipe, w["warning"])
                time.sleep(max(0.0, 30 - (time.monotonic() - stopped_at)))
                self.assertIsNone(lc.poll(), "lcmon ended while the reader was stopped")
                self.assertLess(rss() - full, 16 * 1024 * MEM_SCALE,
                                "memory grew while the reader was stopped")
                before = count[0]
                reader.send_signal(signal.SIGCONT)
                wait_for("batches after SIGCONT", lambda: count[0] > before + 3, 30)
                w = wait_for("the warning to clear", lambda: (lambda w: w if w and
                             "is not reading" not in w.get("warning", "") else None)(writer()), 20)
                counts = {c["name"]: int(c.get("count", 0)) for c in w["count_metrics"]}
                self.assertEqual(counts.get("reader_stalls"), 1)
            finally:
                if reader:
                    reader.send_signal(signal.SIGCONT)
                lc.send_signal(signal.SIGINT)
                try:
                    _, err = lc.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    lc.kill()
                    _, err = lc.communicate()
                if reader:
                    reader.kill()
                    reader.wait()
            self.assertEqual(lc.returncode, 0, err)
            self.assertIn("has read nothing for", err)
            self.assertIn("reads again after", err)


class BadData(unittest.TestCase):
    """Data that changes under a running loader."""

    def start(self, tmp, data, store="0"):
        pipe = os.path.join(tmp, "lcmon.pipe")
        sock = os.path.join(tmp, "lcmon.sock")
        config = os.path.join(tmp, "c.yaml")
        text = SMALL_CONFIG % (data, pipe)
        # No chunk store: every use of a chunk reads its file again.
        text = text.replace("threads: 1}\n  - name: validator",
                            "threads: 1, store_bytes: '%s'}\n  - name: validator" % store)
        with open(config, "w") as f:
            f.write(text)
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=8"
        L = Loader.__new__(Loader)
        L.sock, L.pipe, L.config = sock, pipe, config
        L.proc = subprocess.Popen([LCMON, "--no-ui", "--status-interval", "0", "--config", config,
                                   "--socket", sock], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        wait_for("lcmon to start", lambda: os.path.exists(sock) and os.path.exists(pipe), 20)
        from test_monitor import Reader
        L.reader = Reader(pipe)
        L.reader.start()
        return L

    def test_files_deleted_truncated_replaced_while_read(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            shutil.copytree(DATA, data)
            games = sorted(os.path.join(d, f) for d, _, fs in os.walk(data) for f in fs
                           if f.endswith(".gz"))
            L = self.start(tmp, data)
            try:
                self.assertTrue(L.batches_flow())
                first = L.rss()
                deleted, cut, replaced = games[0:8], games[8:16], games[16:24]
                for p in deleted:
                    os.unlink(p)
                for p in cut:
                    with open(p, "r+b") as f:
                        f.truncate(os.path.getsize(p) // 2)
                for p in replaced:
                    size = os.path.getsize(p)
                    with open(p + ".new", "wb") as f:
                        f.write(bytes(random.Random(p).getrandbits(8) for _ in range(size)))
                    os.replace(p + ".new", p)

                def bad():
                    m = L.metrics()
                    pool = L.stage(m, "pool")
                    counts = {c["name"]: int(c.get("count", 0)) for c in pool["count_metrics"]}
                    return counts.get("bad_unreadable_chunks", 0) >= 3
                wait_for("the pool to count unreadable chunks", bad, 60)
                self.assertIsNone(L.proc.poll())
                self.assertTrue(L.batches_flow(), "no batches from the files left")
                self.assertLess(L.rss() - first, 32 * 1024 * MEM_SCALE)
            finally:
                rc, err = L.close()
            self.assertEqual(rc, 0, err)
            # The log names the files: a vanished one, a cut one, a replaced one.
            named = [p for p in deleted + cut + replaced if os.path.basename(p) in err]
            self.assertTrue(any(os.path.basename(p) in err for p in deleted), err[-3000:])
            self.assertTrue(any(os.path.basename(p) in err for p in cut + replaced), err[-3000:])
            self.assertGreater(len(named), 2)

    def test_data_directory_replaced_by_a_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            shutil.copytree(DATA, data)
            L = self.start(tmp, data, store="auto")
            try:
                self.assertTrue(L.batches_flow())
                first = L.rss()
                os.rename(data, data + ".old")
                with open(data, "w") as f:
                    f.write("not a directory\n")
                # The chunks in the window (held by the store) keep flowing.
                self.assertTrue(L.batches_flow(), "no batches once the directory went")
                m = wait_for("the files stage's warning", lambda: (lambda s: s if "is not a "
                             "directory any more" in s.get("warning", "") else None)(
                                 L.stage(L.metrics(), "files")), 30)
                self.assertIn(data, m["warning"])
                self.assertIsNone(L.proc.poll())
                self.assertLess(L.rss() - first, 32 * 1024 * MEM_SCALE)
            finally:
                rc, err = L.close()
            self.assertEqual(rc, 0, err)
            self.assertIn("data directory %s is not a directory any more" % data, err)


class RefusedAtStart(unittest.TestCase):
    def run_lcmon(self, *args, env=None, seconds=30):
        return subprocess.run([LCMON, *args], capture_output=True, text=True,
                              timeout=seconds * SLOW, env=env)

    def test_config_path_that_is_a_directory_or_100_mb(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = self.run_lcmon("--check-config", tmp)
            self.assertEqual(r.returncode, 1)
            self.assertIn("%s: is a directory, not a configuration file" % tmp, r.stderr)
            r = self.run_lcmon("--no-ui", "--config", tmp)
            self.assertEqual(r.returncode, 1)
            self.assertIn("is a directory", r.stderr)
            big = os.path.join(tmp, "big.yaml")
            with open(big, "wb") as f:
                f.write(b"# " + b"a" * (100 << 20) + b"\n")
            t0 = time.monotonic()
            r = self.run_lcmon("--no-ui", "--config", big)
            self.assertEqual(r.returncode, 1)
            self.assertIn("%s: config larger than 16 MiB" % big, r.stderr)
            self.assertLess(time.monotonic() - t0, 10 * SLOW, "it read the 100 MB before refusing")

    def test_socket_held_by_another_program(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "held.sock")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            s.listen(1)
            env = dict(os.environ, LCMON_DATA=DATA, LCMON_PIPE=os.path.join(tmp, "p.pipe"))
            r = self.run_lcmon("--no-ui", "--status-interval", "0", "--socket", path,
                               "--max-seconds", "5", env=env)
            s.close()
            self.assertEqual(r.returncode, 1)
            self.assertIn("%s: a program is already listening on this socket" % path, r.stderr)
            self.assertTrue(stat.S_ISSOCK(os.stat(path).st_mode), "the other program's socket went")

    def test_socket_directory_others_can_write(self):
        with tempfile.TemporaryDirectory() as tmp:
            open_dir = os.path.join(tmp, "open")
            os.mkdir(open_dir)
            os.chmod(open_dir, 0o777)
            env = dict(os.environ, LCMON_DATA=DATA, LCMON_PIPE=os.path.join(tmp, "p.pipe"))
            path = os.path.join(open_dir, "lcmon.sock")
            r = self.run_lcmon("--no-ui", "--status-interval", "0", "--socket", path,
                               "--max-seconds", "5", env=env)
            self.assertEqual(r.returncode, 1)
            self.assertIn("%s: other users can write to the directory %s" % (path, open_dir),
                          r.stderr)
            self.assertFalse(os.path.exists(path))
            # With the sticky bit (as /tmp has), others cannot replace it.
            os.chmod(open_dir, 0o1777)
            r = self.run_lcmon("--no-ui", "--status-interval", "0", "--socket", path,
                               "--max-seconds", "1", env=env)
            self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
