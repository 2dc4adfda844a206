"""The monitoring socket of headless lcmon: `lcmon ctl` round trips every
control request, the metrics log, several clients at once, clients that
misbehave (vanish, send garbage, announce oversize frames, stop reading)
without stalling or crashing the loader, socket permissions, refusing a live
socket and replacing a stale one.

Environment: LCMON (the executable), LC_TEST_DATA (the sample data),
PYTHONPATH (python/, for the batch reader).
"""

import json
import os
import socket
import stat
import struct
import subprocess
import tempfile
import threading
import time
import unittest

from lcmon_reader import BatchReader

LCMON = os.environ["LCMON"]
DATA = os.environ["LC_TEST_DATA"]


SMALL_CONFIG = """
seed: 1
stages:
  - name: files
    file_path_provider: {directory: '%s'}
  - name: sources
    input: files
    chunk_source_loader: {threads: 1}
  - name: pool
    input: sources
    shuffling_chunk_pool: {chunk_pool_size: 100, threads: 1}
  - name: validator
    input: pool
    chunk_validator: {}
  - name: unpacker
    input: validator
    chunk_unpacker: {sampling_rate: 0.5}
  - name: sampler
    input: unpacker
    shuffling_frame_sampler: {reservoir_size: 500}
  - name: tensors
    input: sampler
    tensor_generator: {batch_size: 16}
  - name: writer
    input: tensors
    fifo_writer: {path: '%s'}
"""


def ctl(sock, *args, timeout=30):
    return subprocess.run(
        [LCMON, "ctl", sock, *args], capture_output=True, text=True, timeout=timeout
    )


class Reader(threading.Thread):
    """The trainer: counts batches until told to stop."""

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe = pipe
        self.batches = 0
        self.stop = False
        self.error = None

    def run(self):
        try:
            with BatchReader(self.pipe, tolerate_truncation=True, timeout=30) as r:
                for _ in r:
                    self.batches += 1
                    if self.stop:
                        return
        except Exception as e:  # reported by the test
            self.error = e


class Loader:
    def __init__(self, tmp, extra=()):
        self.sock = os.path.join(tmp, "lcmon.sock")
        self.pipe = os.path.join(tmp, "lcmon.pipe")
        self.log = os.path.join(tmp, "metrics.jsonl")
        # The default chain, small enough to flow at once under sanitizers.
        self.config = os.path.join(tmp, "small.yaml")
        with open(self.config, "w") as f:
            f.write(SMALL_CONFIG % (DATA, self.pipe))
        env = dict(os.environ)
        # Under AddressSanitizer, freed memory waits in a quarantine (256 MB
        # by default), which would hide our own memory use behind its.
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=8"
        self.proc = subprocess.Popen(
            [LCMON, "--no-ui", "--quiet", "--config", self.config, "--socket", self.sock,
             "--metrics-log", self.log, *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.time() + 20
        while not (os.path.exists(self.sock) and os.path.exists(self.pipe)):
            if self.proc.poll() is not None or time.time() > deadline:
                raise AssertionError("lcmon did not start: %s" % self.proc.stderr.read())
            time.sleep(0.05)
        self.reader = Reader(self.pipe)
        self.reader.start()

    def metrics(self):
        r = ctl(self.sock, "metrics", "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def stage(self, m, name, view="all_time"):
        for s in m[view]["stage_metrics"]:
            if s["name"] == name:
                return s
        raise KeyError(name)

    def batches_flow(self, seconds=30):
        start = self.reader.batches
        deadline = time.time() + seconds
        while time.time() < deadline:
            if self.reader.batches > start + 2:
                return True
            time.sleep(0.05)
        return False

    def close(self):
        self.reader.stop = True
        if self.proc.poll() is None:
            self.proc.send_signal(2)
        try:
            out, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return self.proc.returncode, err


class Monitor(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.loader = Loader(self.tmp.name)

    def tearDown(self):
        rc, err = self.loader.close()
        self.tmp.cleanup()
        self.assertEqual(rc, 0, err)

    def test_controls_round_trip(self):
        L = self.loader
        self.assertTrue(L.batches_flow())
        r = ctl(L.sock, "anchor", "get")
        self.assertEqual(r.returncode, 0, r.stderr)
        key, count = r.stdout.rstrip("\n").split("\t")
        self.assertGreater(int(count), 0)

        r = ctl(L.sock, "anchor", "set", "game_000010.gz")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split("\t")[0], "game_000010.gz")
        self.assertEqual(int(r.stdout.split("\t")[1]), int(count))  # set keeps it

        r = ctl(L.sock, "anchor", "reset")
        self.assertEqual(r.returncode, 0, r.stderr)
        new_key, counted = r.stdout.rstrip("\n").split("\t")
        self.assertEqual(int(counted), int(count))
        self.assertTrue(new_key)  # the newest source
        r = ctl(L.sock, "anchor", "get")
        self.assertEqual(r.stdout.rstrip("\n"), "%s\t0" % new_key)

        r = ctl(L.sock, "pause", "unpacker")
        self.assertEqual(r.returncode, 0, r.stderr)
        m = L.metrics()
        self.assertEqual(L.stage(m, "unpacker", "last_second")["state"], "STAGE_PAUSED")
        r = ctl(L.sock, "resume", "unpacker")
        self.assertEqual(r.returncode, 0, r.stderr)
        m = L.metrics()
        self.assertEqual(L.stage(m, "unpacker", "last_second")["state"], "STAGE_RUNNING")

        r = ctl(L.sock, "pause", "no_such_stage")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no stage named 'no_such_stage'", r.stderr)
        r = ctl(L.sock, "bogus")
        self.assertEqual(r.returncode, 2)

        r = ctl(L.sock, "stop")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(L.metrics()["all_time"]["state"], "PIPELINE_STOPPED")
        r = ctl(L.sock, "start")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(L.metrics()["all_time"]["state"], "PIPELINE_RUNNING")

        r = ctl(L.sock, "metrics")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[running]", r.stdout)
        self.assertIn("shuffling_chunk_pool", r.stdout)

    def test_metrics_log(self):
        L = self.loader
        deadline = time.time() + 10
        lines = []
        while time.time() < deadline and len(lines) < 2:
            time.sleep(0.2)
            with open(L.log) as f:
                lines = [l for l in f.read().splitlines() if l]
        self.assertGreaterEqual(len(lines), 2)
        for line in lines:
            d = json.loads(line)
            self.assertIn("time", d)
            names = [s["name"] for s in d["all_time"]["stage_metrics"]]
            self.assertEqual(names[0], "files")
            self.assertIn("duration_seconds", d["last_second"])

    def test_misbehaving_clients(self):
        L = self.loader
        self.assertTrue(L.batches_flow())

        def connect():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(L.sock)
            return s

        # Vanishes at once, and mid-frame.
        connect().close()
        s = connect()
        s.sendall(struct.pack("<I", 100) + b"\x0a\x02")
        s.close()
        # Garbage that is not a monitor message.
        s = connect()
        s.sendall(struct.pack("<I", 8) + b"\xff" * 8)
        s.settimeout(5)
        try:
            while s.recv(65536):
                pass  # the hello, then the server closes
        except OSError:
            pass
        s.close()
        # An oversize frame announced.
        s = connect()
        s.sendall(struct.pack("<I", 0xFFFFFFF0))
        s.settimeout(5)
        try:
            while s.recv(65536):
                pass
        except OSError:
            pass
        s.close()
        # Subscribes fast and never reads, with a tiny receive buffer.
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(L.sock)
        # ClientMessage{subscribe{interval_ms: 50, logs: true}}
        sub = b"\x08\x32" + b"\x18\x01"
        msg = b"\x0a" + bytes([len(sub)]) + sub
        slow.sendall(struct.pack("<I", len(msg)) + msg)
        rss = []
        for _ in range(8):
            time.sleep(0.5)
            with open("/proc/%d/status" % L.proc.pid) as f:
                for line in f:
                    if line.startswith("VmRSS"):
                        rss.append(int(line.split()[1]))
        # The loader goes on, answers others, and its memory stays flat
        # (after the first second of warm-up).
        self.assertTrue(L.batches_flow())
        m = L.metrics()
        self.assertEqual(m["all_time"]["state"], "PIPELINE_RUNNING")
        self.assertLess(rss[-1] - rss[2], 64 * 1024, rss)
        # What waited for the stalled client is bounded: a few snapshots,
        # not four seconds' worth at 20 a second.
        slow.setblocking(False)
        queued = 0
        try:
            while True:
                chunk = slow.recv(1 << 20)
                if not chunk:
                    break
                queued += len(chunk)
        except BlockingIOError:
            pass
        self.assertLess(queued, 2 << 20)
        slow.close()
        self.assertTrue(L.batches_flow())
        self.assertIsNone(L.reader.error)

    def test_several_clients(self):
        L = self.loader
        results = []

        def one():
            results.append(ctl(L.sock, "metrics", "--json").returncode)

        threads = [threading.Thread(target=one) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual(results, [0] * 8)
        self.assertTrue(L.batches_flow())

    def test_socket_permissions_and_live_socket(self):
        L = self.loader
        mode = stat.S_IMODE(os.stat(L.sock).st_mode)
        self.assertEqual(mode, 0o600)
        self.assertTrue(stat.S_ISSOCK(os.stat(L.sock).st_mode))
        # A second loader must not take over the live socket.
        r = subprocess.run(
            [LCMON, "--no-ui", "--quiet", "--socket", L.sock, "--max-seconds", "5"],
            capture_output=True,
            text=True,
            timeout=30,
            env=dict(os.environ, LCMON_DATA=DATA,
                     LCMON_PIPE=os.path.join(self.tmp.name, "other.pipe")),
        )
        self.assertEqual(r.returncode, 1)
        self.assertIn("another lcmon is serving", r.stderr)
        self.assertEqual(ctl(L.sock, "anchor", "get").returncode, 0)


class StaleSocket(unittest.TestCase):
    def test_stale_socket_replaced(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "lcmon.sock")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            s.close()  # the file stays, nobody listens
            self.assertTrue(os.path.exists(path))
            pipe = os.path.join(tmp, "p.pipe")
            p = subprocess.Popen(
                [LCMON, "--no-ui", "--quiet", "--socket", path],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=dict(os.environ, LCMON_DATA=DATA, LCMON_PIPE=pipe),
            )
            try:
                deadline = time.time() + 20
                ok = False
                while time.time() < deadline and p.poll() is None:
                    if ctl(path, "anchor", "get").returncode == 0:
                        ok = True
                        break
                    time.sleep(0.1)
                self.assertTrue(ok)
            finally:
                p.send_signal(2)
                out, err = p.communicate(timeout=15)
            self.assertEqual(p.returncode, 0, err)
            self.assertIn("replacing the stale socket", err)
            self.assertFalse(os.path.exists(path))  # removed at exit

    def test_path_that_is_not_a_socket(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "file")
            open(path, "w").close()
            r = subprocess.run(
                [LCMON, "--no-ui", "--quiet", "--socket", path, "--max-seconds", "3"],
                capture_output=True,
                text=True,
                timeout=30,
                env=dict(os.environ, LCMON_DATA=DATA, LCMON_PIPE=os.path.join(tmp, "p")),
            )
            self.assertEqual(r.returncode, 1)
            self.assertIn("is not a socket", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
