"""The monitoring socket of headless lcmon: `lcmon ctl` round trips every
control request, the metrics log, several clients at once, clients that
misbehave (vanish, send garbage, announce oversize frames, stop reading)
without stalling or crashing the loader, socket permissions, refusing a live
socket (listening, or bound by a running process, or its lock held) and
replacing a stale one, leaving at exit what others put at the path.

Environment: LCMON (the executable), LC_TEST_DATA (the sample data),
PYTHONPATH (python/, for the batch reader).
"""

import json
import os
import shutil
import socket
import stat
import struct
import subprocess
import tempfile
import threading
import time
import unittest

from lcmon import BatchReader

LCMON = os.environ["LCMON"]
DATA = os.environ["LC_TEST_DATA"]


# Sanitized builds run lcmon several times slower (tests/meson.build).
SLOW = float(os.environ.get("LCMON_TEST_SLOW", "1"))


def sample_keys():
    """The chunk sources of the sample data: key -> chunks (a game file is
    one chunk, the tar holds the rest of the 43)."""
    keys = []
    for root, _, files in os.walk(DATA):
        keys += [f for f in files if f.endswith(".gz")]
    return keys


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


# --- a little of the socket's protobuf, by hand (no protobuf module) ---

def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def read_varint(buf, i):
    """The varint at buf[i]: (value, the index after it)."""
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def fields(buf):
    """The top-level fields of a message: (number, value) pairs; value is an
    int for varints and bytes for the rest."""
    i, out = 0, []
    while i < len(buf):
        key, i = read_varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = read_varint(buf, i)
            out.append((num, v))
        elif wire == 2:
            n, i = read_varint(buf, i)
            out.append((num, buf[i:i + n]))
            i += n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            out.append((num, buf[i:i + n]))
            i += n
        else:
            raise ValueError("wire type %d" % wire)
    return out


def client_frame(body):
    return struct.pack("<I", len(body)) + body


def subscribe(interval_ms, logs=False):
    """ClientMessage{subscribe{interval_ms, logs}}."""
    sub = b"\x08" + varint(interval_ms) + b"\x18" + (b"\x01" if logs else b"\x00")
    return client_frame(b"\x0a" + varint(len(sub)) + sub)


class Frames:
    """Server messages off a raw connection, as lists of fields."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def read(self, seconds):
        out, deadline = [], time.monotonic() + seconds
        while True:
            while len(self.buf) >= 4:
                n = struct.unpack("<I", self.buf[:4])[0]
                if len(self.buf) < 4 + n:
                    break
                out.append(fields(self.buf[4:4 + n]))
                self.buf = self.buf[4 + n:]
            left = deadline - time.monotonic()
            if left <= 0:
                return out
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                return out
            if not chunk:
                return out
            self.buf += chunk


def snapshots(messages):
    return sum(1 for m in messages if any(num == 2 for num, _ in m))


def log_texts(messages):
    """The text of every LogLine (ServerMessage field 6, LogLine field 5)."""
    return [v.decode() for m in messages for num, line in m if num == 6
            for n2, v in fields(line) if n2 == 5]


class Reader(threading.Thread):
    """The trainer: counts batches until told to stop."""

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe = pipe
        self.batches = 0
        self.stop = False
        self.error = None
        self.run_id = 0  # the stream header's

    def run(self):
        try:
            with BatchReader(self.pipe, tolerate_truncation=True, timeout=30,
                             restarts="end") as r:
                self.run_id = r.run_id
                for _ in r:
                    self.batches += 1
                    if self.stop:
                        return
        except Exception as e:  # reported by the test
            self.error = e


class Loader:
    def __init__(self, tmp, extra=(), data=None):
        self.sock = os.path.join(tmp, "lcmon.sock")
        self.pipe = os.path.join(tmp, "lcmon.pipe")
        self.log = os.path.join(tmp, "metrics.jsonl")
        # The default chain, small enough to flow at once under sanitizers.
        self.config = os.path.join(tmp, "small.yaml")
        with open(self.config, "w") as f:
            f.write(SMALL_CONFIG % (data or DATA, self.pipe))
        env = dict(os.environ)
        # Under AddressSanitizer, freed memory waits in a quarantine (256 MB
        # by default), which would hide our own memory use behind its.
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=8"
        self.proc = subprocess.Popen(
            [LCMON, "--no-ui", "--status-interval", "0", "--config", self.config, "--socket", self.sock,
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

    def rss(self):
        """The loader's resident memory, in KiB."""
        with open("/proc/%d/status" % self.proc.pid) as f:
            return [int(l.split()[1]) for l in f if l.startswith("VmRSS")][0]

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

    def new_reader(self):
        """A stop ends the stream (the reader sees its end); the restarted
        pipeline's writer waits for a new reader."""
        self.reader.join(30)
        assert not self.reader.is_alive(), "the reader did not see the stream end"
        assert self.reader.error is None, self.reader.error
        self.reader = Reader(self.pipe)
        self.reader.start()

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
        # The writer's output is its batches: the same number in ctl as on
        # the screen (it used to say 0 here).
        deadline = time.time() + 30 * SLOW
        while True:  # the all-time numbers are aggregated once a second
            w = L.stage(L.metrics(), "writer")
            batches = [c["count"] for c in w.get("count_metrics", []) if c["name"] == "batches"]
            if (batches and batches[0] > 0) or time.time() > deadline:
                break
            time.sleep(0.1)
        self.assertGreater(batches[0], 0)
        self.assertEqual(w.get("items_out", 0), batches[0])
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
        self.assertEqual(m["all_time"]["state"], "PIPELINE_PAUSED")
        r = ctl(L.sock, "resume", "unpacker")
        self.assertEqual(r.returncode, 0, r.stderr)
        m = L.metrics()
        self.assertEqual(L.stage(m, "unpacker", "last_second")["state"], "STAGE_RUNNING")
        self.assertEqual(m["all_time"]["state"], "PIPELINE_RUNNING")

        r = ctl(L.sock, "pause", "no_such_stage")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no stage named 'no_such_stage' (the stages are files, sources, pool, "
                      "validator, unpacker, sampler, tensors, writer)", r.stderr)
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

    def test_anchor_survives_stop_and_start(self):
        """An anchor moved at run time outlives `ctl stop` and `ctl start`:
        the new pipeline counts from it, as a restart from a stored anchor."""
        L = self.loader
        self.assertTrue(L.batches_flow())
        key = "game_000010.gz"
        r = ctl(L.sock, "anchor", "set", key)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split("\t")[0], key)
        self.assertEqual(ctl(L.sock, "stop").returncode, 0)
        self.assertEqual(L.metrics()["all_time"]["state"], "PIPELINE_STOPPED")
        self.assertEqual(ctl(L.sock, "start").returncode, 0)
        self.assertEqual(L.metrics()["all_time"]["state"], "PIPELINE_RUNNING")
        # The initial load counts the chunks newer than the anchor: every
        # game file whose key sorts after it, and the tar's chunks. Until the
        # new pipeline's initial scan is done the count is 0: wait for it.
        games = sample_keys()
        tar_chunks = 43 - len(games)
        newer = sum(1 for g in games if g > key) + tar_chunks * ("training-run-mini.tar" > key)
        deadline = time.monotonic() + 10 * SLOW
        while True:
            r = ctl(L.sock, "anchor", "get")
            self.assertEqual(r.returncode, 0, r.stderr)
            got, count = r.stdout.rstrip("\n").split("\t")
            if int(count) == newer or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(got, key)
        self.assertEqual(int(count), newer)
        L.new_reader()
        self.assertTrue(L.batches_flow())

        # A reset anchors at the newest source; after a restart nothing in the
        # window is newer, so the count starts again from 0.
        r = ctl(L.sock, "anchor", "reset")
        self.assertEqual(r.returncode, 0, r.stderr)
        newest = r.stdout.split("\t")[0]
        self.assertEqual(newest, "training-run-mini.tar")
        self.assertEqual(ctl(L.sock, "stop").returncode, 0)
        self.assertEqual(ctl(L.sock, "start").returncode, 0)
        r = ctl(L.sock, "anchor", "get")
        self.assertEqual(r.stdout, "%s\t0\n" % newest)
        # The metrics (what the screen and the status line show) say so too,
        # from the first flush of the new pipeline on.
        deadline = time.monotonic() + 10 * SLOW
        anchor = None
        while anchor is None and time.monotonic() < deadline:
            texts = {t["name"]: t.get("value", "")
                     for t in L.stage(L.metrics(), "pool").get("text_metrics", [])}
            anchor = texts.get("anchor")
            time.sleep(0.1)
        self.assertEqual(anchor, newest)
        L.new_reader()
        self.assertTrue(L.batches_flow())

    def test_metrics_log(self):
        """One JSON line a second: the last second and all time, for plotting."""
        L = self.loader
        self.assertTrue(L.batches_flow())
        want = 6
        deadline = time.monotonic() + (want + 10) * SLOW
        lines = []
        while time.monotonic() < deadline and len(lines) < want:
            time.sleep(0.2)
            with open(L.log) as f:
                lines = [l for l in f.read().split("\n")[:-1]]  # whole lines only
        self.assertGreaterEqual(len(lines), want)
        docs = [json.loads(l) for l in lines]
        stages = ["files", "sources", "pool", "validator", "unpacker", "sampler", "tensors",
                  "writer"]
        for d in docs:
            self.assertEqual(sorted(d), ["all_time", "last_second", "time"])
            last, total = d["last_second"], d["all_time"]
            self.assertEqual([s["name"] for s in total["stage_metrics"]], stages)
            self.assertEqual([s["name"] for s in last["stage_metrics"]], stages)
            # The last second lasts about a second; all time, since the start.
            # A line written late is followed by one on schedule, whose window
            # is the rest of its second: under load that can be a third of one
            # (the same bound as the steps between lines below).
            self.assertGreater(last["duration_seconds"], 0.2)
            self.assertLess(last["duration_seconds"], 1.0 + SLOW)
            self.assertAlmostEqual(total["duration_seconds"], total["uptime_seconds"], delta=0.5)
            for ls in last["stage_metrics"]:
                ts = L.stage(d, ls["name"])
                self.assertLessEqual(ls.get("items_out", 0), ts.get("items_out", 0), ls["name"])
        # About one a second: wall times and uptimes a second apart on average
        # (the loop keeps to its schedule, so one late line does not drift the
        # next), and never two for the same second.
        times = [d["time"] for d in docs]
        ups = [d["all_time"]["uptime_seconds"] for d in docs]
        steps = [b - a for a, b in zip(times, times[1:])]
        self.assertTrue(all(0.2 < x < 1.0 + SLOW for x in steps), steps)
        self.assertAlmostEqual((times[-1] - times[0]) / (len(times) - 1), 1.0, delta=0.25)
        self.assertAlmostEqual((ups[-1] - ups[0]) / (len(ups) - 1), 1.0, delta=0.25)
        # The first line comes about a second after the start.
        self.assertLess(ups[0], 1.0 + SLOW)
        # All-time totals only grow, and batches were written while logging.
        for name in stages:
            outs = [L.stage(d, name).get("items_out", 0) for d in docs]
            self.assertEqual(outs, sorted(outs), name)
        def batches(d, view):
            w = L.stage(d, "writer", view)
            return [c.get("count", 0) for c in w["count_metrics"] if c["name"] == "batches"][0]

        self.assertGreater(max(batches(d, "last_second") for d in docs), 0)
        self.assertGreater(batches(docs[-1], "all_time"), batches(docs[0], "all_time"))
        for d in docs:
            self.assertLessEqual(batches(d, "last_second"), batches(d, "all_time"))

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
        # Garbage that is not a monitor message, then a frame announcing more
        # than the limit: each time the server sends at most its hello and
        # closes the connection (recv gives b""), and the loader goes on.
        for what, data in (("garbage", struct.pack("<I", 8) + b"\xff" * 8),
                           ("an oversize frame", struct.pack("<I", 0xFFFFFFF0))):
            s = connect()
            s.sendall(data)
            got = self.closed_by_server(s, what)
            s.close()
            if got:  # the hello, whole: a length and that many bytes
                n = struct.unpack("<I", got[:4])[0]
                self.assertEqual(len(got), 4 + n, what)
            self.assertTrue(L.batches_flow(), "no batches after %s" % what)
            self.assertEqual(ctl(L.sock, "anchor", "get").returncode, 0)
        # Subscribes fast (with the log) and never reads, with a tiny receive
        # buffer. Once the kernel's buffers are full, what waits for it in the
        # loader passes the soft limit and the server skips its snapshots,
        # which it logs; the loader's memory stays flat meanwhile.
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(L.sock)
        slow.sendall(subscribe(50, logs=True))

        time.sleep(1)
        first = L.rss()
        watcher = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        watcher.connect(L.sock)
        watcher.sendall(subscribe(0, logs=True))
        watching = Frames(watcher)
        texts, deadline = [], time.monotonic() + 60 * SLOW
        while not any("is not reading: its snapshots are skipped" in t for t in texts):
            self.assertLess(time.monotonic(), deadline, "the server never skipped: %s"
                            % texts[-10:])
            texts += log_texts(watching.read(1))
        time.sleep(2)  # and it goes on skipping
        watcher.close()
        # The loader goes on, answers others, and its memory stays flat.
        self.assertTrue(L.batches_flow())
        m = L.metrics()
        self.assertEqual(m["all_time"]["state"], "PIPELINE_RUNNING")
        self.assertLess(L.rss() - first, 64 * 1024)
        # What waited for the stalled client is bounded: the soft limit and
        # the kernel's buffers, whatever the time it did not read.
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

    def test_hello_and_stages(self):
        L = self.loader
        r = ctl(L.sock, "stages")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.rstrip("\n").split("\n")
        self.assertRegex(lines[0], r"^lcmon \S+, pid %d, protocol 3$" % L.proc.pid)
        rows = [l.split("\t") for l in lines[1:]]
        names = [x[0] for x in rows]
        with open(L.config) as f:
            want = [line.split(":", 1)[1].strip() for line in f if line.startswith("  - name:")]
        self.assertEqual(names, want)
        by_name = {x[0]: x for x in rows}
        self.assertEqual(by_name["writer"][1:3], ["fifo_writer", "tensors"])
        self.assertEqual(by_name["tensors"][3], "tensors.out")
        self.assertEqual(by_name["tensors"][5], "batch")
        self.assertEqual(by_name[names[0]][2], "-")  # the first stage reads no queue

    def test_subscription_interval(self):
        """Snapshots come at the interval the client asks for, and a new
        subscription changes it."""
        L = self.loader
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(L.sock)
        self.addCleanup(s.close)
        f = Frames(s)
        hello = f.read(2)
        self.assertTrue(hello and any(num == 1 for num, _ in hello[0]), "no hello first")
        for interval, seconds in ((200, 3.0), (1000, 4.0)):
            s.sendall(subscribe(interval))
            got = snapshots(f.read(seconds))
            want = seconds * 1000 / interval
            self.assertGreaterEqual(got, want * 0.6, (interval, got))
            self.assertLessEqual(got, want * 1.3 + 1, (interval, got))

    def test_client_that_never_reads_replies_is_closed(self):
        """Replies are always queued (unlike snapshots), so a client that
        sends requests and never reads would grow the loader's memory: past
        a limit the server closes it, and the loader goes on."""
        L = self.loader
        self.assertTrue(L.batches_flow())

        before = L.rss()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(L.sock)
        # ClientMessage{control{command: "pause", stage: NAME}, request_id}:
        # a request for a stage with a long name, refused with a reply of
        # about 2 KB that names it; 8 MiB of replies take about 4000 of them.
        name = b"x" * 2000
        ctrl = b"\x22\x05pause" + b"\x32" + varint(len(name)) + name
        closed = False
        s.settimeout(10 * SLOW)
        for k in range(12):  # up to 12000 requests: three times the limit
            burst = b"".join(client_frame(b"\x12" + varint(len(ctrl)) + ctrl + b"\x18" +
                                          varint(k * 1000 + i + 1)) for i in range(1000))
            try:
                s.sendall(burst)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            except socket.timeout:  # it stopped reading us: it must close us
                break
        if not closed:
            self.closed_by_server(s, "a flood of unread replies")
        s.close()
        # The close is the proof; memory is a sanity check (sanitizers add
        # shadow memory in proportion, ThreadSanitizer several times over).
        self.assertLess(L.rss() - before, 48 * 1024 * SLOW)
        self.assertTrue(L.batches_flow())
        self.assertEqual(ctl(L.sock, "anchor", "get").returncode, 0)

    def closed_by_server(self, s, what):
        """Read until the server closes the connection; what it sent."""
        got = b""
        deadline = time.monotonic() + 10 * SLOW
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail("the server kept the connection open after %s" % what)
            s.settimeout(left)
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                self.fail("the server kept the connection open after %s" % what)
            if not chunk:
                return got
            got += chunk

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
            [LCMON, "--no-ui", "--status-interval", "0", "--socket", L.sock, "--max-seconds", "5"],
            capture_output=True,
            text=True,
            timeout=30,
            env=dict(os.environ, LCMON_DATA=DATA,
                     LCMON_PIPE=os.path.join(self.tmp.name, "other.pipe")),
        )
        self.assertEqual(r.returncode, 1)
        # Refused at its lock, before it looks at the socket: naming the
        # first, which holds it.
        self.assertIn("%s: the process (pid %d, lcmon) that holds its lock file %s.lock serves "
                      "this socket or is starting to" % (L.sock, L.proc.pid, L.sock), r.stderr)
        self.assertEqual(ctl(L.sock, "anchor", "get").returncode, 0)


class AnchorBeforeLoad(unittest.TestCase):
    def test_reset_refused_until_a_game_is_loaded(self):
        """`anchor reset` before the pool has loaded anything would anchor at
        nothing (every game would then count as new): it is refused, saying
        why, and works once a game is there."""
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "games")  # does not exist yet
            L = Loader(tmp, data=data)
            try:
                r = ctl(L.sock, "anchor", "reset")
                self.assertNotEqual(r.returncode, 0, r.stdout)
                self.assertIn("no game is loaded yet", r.stderr)
                r = ctl(L.sock, "anchor", "get")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stdout.rstrip("\n"), "\t0")  # nothing moved
                os.makedirs(os.path.join(tmp, "incoming"))
                name = sorted(sample_keys())[0]
                for root, _, files in os.walk(DATA):
                    if name in files:
                        shutil.copy(os.path.join(root, name), os.path.join(tmp, "incoming"))
                        break
                os.rename(os.path.join(tmp, "incoming"), data)
                deadline = time.time() + 30 * SLOW
                while True:
                    r = ctl(L.sock, "anchor", "reset")
                    if r.returncode == 0 or time.time() > deadline:
                        break
                    time.sleep(0.1)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stdout.split("\t")[0], name)
            finally:
                L.close()


class MetricsLogWindows(unittest.TestCase):
    def test_windows_in_the_log(self):
        """--metrics-log-windows 10s,1h: each line holds those windows too,
        under "windows" by name, each saying which it is and covering no
        more than the run; the last second and all time as ever."""
        with tempfile.TemporaryDirectory() as tmp:
            L = Loader(tmp, extra=("--metrics-log-windows", "10s,1h,all"))
            try:
                self.assertTrue(L.batches_flow())
                deadline = time.monotonic() + 15 * SLOW
                docs = []
                while time.monotonic() < deadline and len(docs) < 3:
                    time.sleep(0.2)
                    with open(L.log) as f:
                        docs = [json.loads(l) for l in f.read().split("\n")[:-1]]
                self.assertGreaterEqual(len(docs), 3)
                for d in docs:
                    self.assertEqual(sorted(d), ["all_time", "last_second", "time", "windows"])
                    self.assertEqual(sorted(d["windows"]), ["10s", "1h"])
                    for name, w in d["windows"].items():
                        self.assertEqual(w["window"], "WINDOW_" + name.upper())
                        self.assertLessEqual(w.get("duration_seconds", 0),
                                             d["all_time"]["uptime_seconds"] + 0.5)
                        for s in w["stage_metrics"]:
                            self.assertLessEqual(s.get("items_out", 0),
                                                 L.stage(d, s["name"]).get("items_out", 0))
                # Whole seconds by the last line: the hour holds them.
                self.assertGreater(docs[-1]["windows"]["1h"]["duration_seconds"], 1.0)
            finally:
                L.close()
        r = subprocess.run([LCMON, "--no-ui", "--metrics-log", "/dev/null",
                            "--metrics-log-windows", "10s,5m"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("'5m' is not a window (the windows: 1s, 10s, 1m, 10m, 1h, all", r.stderr)
        r = subprocess.run([LCMON, "--no-ui", "--metrics-log-windows", "1m"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("add --metrics-log FILE", r.stderr)


class CtlErrors(unittest.TestCase):
    def test_no_such_socket(self):
        path = "/nonexistent/socket"
        r = ctl(path, "anchor", "get")
        self.assertEqual(r.returncode, 3)  # ctl.c: 3, cannot reach the loader
        self.assertEqual(r.stdout, "")
        self.assertIn("lcmon ctl: %s: no such socket" % path, r.stderr)

    def test_nobody_listening(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "stale.sock")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            s.close()
            r = ctl(path, "metrics")
            self.assertEqual(r.returncode, 3)
            self.assertIn(path, r.stderr)
            self.assertIn("nobody is listening", r.stderr)


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
                [LCMON, "--no-ui", "--status-interval", "0", "--socket", path],
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

    def test_other_files_put_at_the_path_are_left_at_exit(self):
        """The socket is removed at exit only if it is still the one lcmon
        bound: a file, or another program's socket, put at its path while
        lcmon ran stays."""
        for what in ("a file", "another socket"):
            with tempfile.TemporaryDirectory() as tmp:
                L = Loader(tmp)
                other = None
                try:
                    os.unlink(L.sock)
                    if what == "a file":
                        with open(L.sock, "w") as f:
                            f.write("not lcmon's\n")
                    else:
                        other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                        other.bind(L.sock)
                        other.listen(1)
                    before = os.lstat(L.sock)
                finally:
                    rc, err = L.close()
                self.assertEqual(rc, 0, err)
                self.assertTrue(os.path.lexists(L.sock), "lcmon removed %s at exit" % what)
                after = os.lstat(L.sock)
                self.assertEqual((after.st_dev, after.st_ino), (before.st_dev, before.st_ino))
                self.assertIn("%s is not the socket this lcmon made any more" % L.sock, err)
                self.assertFalse(os.path.exists(L.sock + ".lock"))  # its own lock file goes
                if other:
                    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    c.connect(L.sock)  # still the other program's, and live
                    c.close()
                    other.close()

    def run_briefly(self, tmp, path):
        return subprocess.run(
            [LCMON, "--no-ui", "--status-interval", "0", "--socket", path, "--max-seconds", "3"],
            capture_output=True, text=True, timeout=60 * SLOW,
            env=dict(os.environ, LCMON_DATA=DATA, LCMON_PIPE=os.path.join(tmp, "p.pipe")))

    def test_bound_socket_of_a_live_process_is_not_replaced(self):
        """A socket that refuses connections is not necessarily stale: its
        process may have bound it and not listen yet. While that process
        lives, lcmon refuses to start, naming it, and leaves the socket."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "lcmon.sock")
            held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            held.bind(path)  # bound, not listening
            try:
                before = os.lstat(path)
                r = self.run_briefly(tmp, path)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn("lcmon: --socket: %s: a running process (pid %d, " % (path, os.getpid()),
                              r.stderr)
                self.assertIn("has this socket bound, though it does not accept connections (yet)",
                              r.stderr)
                self.assertNotIn("replacing the stale socket", r.stderr)
                after = os.lstat(path)
                self.assertEqual((after.st_dev, after.st_ino), (before.st_dev, before.st_ino))
                held.listen(1)  # it was live all along: it can still serve
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                c.connect(path)
                c.close()
            finally:
                held.close()
            # Once its process lets go, the same file is stale and replaced.
            r = self.run_briefly(tmp, path)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("replacing the stale socket %s" % path, r.stderr)
            self.assertFalse(os.path.lexists(path))
            self.assertFalse(os.path.exists(path + ".lock"))

    def test_lock_held_refuses_at_start(self):
        """Whoever holds PATH.lock owns the path (an lcmon between its bind
        and its listen, say): lcmon refuses, naming the holder's pid from
        the lock file, and touches neither the lock nor the socket."""
        import fcntl
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "lcmon.sock")
            stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            stale.bind(path)
            stale.close()  # a stale socket, as a killed lcmon leaves
            fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.write(fd, b"%d\n" % os.getpid())
                r = self.run_briefly(tmp, path)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn("lcmon: --socket: %s: the process (pid %d, " % (path, os.getpid()),
                              r.stderr)
                self.assertIn("that holds its lock file %s.lock serves this socket or is starting "
                              "to; stop it, or choose another path" % path, r.stderr)
                self.assertTrue(stat.S_ISSOCK(os.lstat(path).st_mode))
                self.assertTrue(os.path.exists(path + ".lock"))
            finally:
                os.close(fd)
            # Let go (as a killed lcmon's lock is): the stale socket is replaced.
            r = self.run_briefly(tmp, path)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("replacing the stale socket %s" % path, r.stderr)

    def test_path_that_is_not_a_socket(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "file")
            open(path, "w").close()
            r = subprocess.run(
                [LCMON, "--no-ui", "--status-interval", "0", "--socket", path, "--max-seconds", "3"],
                capture_output=True,
                text=True,
                timeout=30,
                env=dict(os.environ, LCMON_DATA=DATA, LCMON_PIPE=os.path.join(tmp, "p")),
            )
            self.assertEqual(r.returncode, 1)
            self.assertIn("is not a socket", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
