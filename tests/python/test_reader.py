"""The Python reader (the lcmon package, python/lcmon) against streams written
by the real fifo_writer stage, through tests/stages/fifo_writer_demo (its
path in LCMON_FIFO_DEMO): regular files (values, a partial last batch, a
layout change mid-stream, truncation, junk, a newer version, paths that are
not streams), and a named pipe whose readers leave mid-payload and at a
batch boundary and come back, a second reader refused, a stalled writer,
then the command line (and Ctrl-C in it).
Every wait is bounded: subprocesses have timeouts, pipe readers run in
threads joined with a timeout.
"""

import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

import signal

import lcmon
from lcmon import (BatchReader, NotAStream, PipeBusy, StreamError, StreamTruncated,
                   StreamVersionError)
from lcmon.stream import _unread as pipe_unread  # bytes in the pipe an fd reads, unread

DEMO = os.environ.get("LCMON_FIFO_DEMO", "")
TIMEOUT = 60


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def expected(seq, batch_size, rows, relayout=False):
    """The demo's values for batch seq (see fifo_writer_demo.c)."""
    r = np.arange(batch_size, dtype=np.int64)
    x = (seq * 1000 + r[:, None] * 3 + np.arange(3)[None, :]).astype(np.float32)
    y = seq * 1000000 + r
    out = {"x": x[:rows], "y": y[:rows]}
    if relayout:
        z = ((seq + r[:, None] + np.arange(2)[None, :]) % 2).astype(np.bool_)
        out["z"] = z[:rows]
    return out


class DemoCase(unittest.TestCase):
    def setUp(self):
        if not DEMO or not os.access(DEMO, os.X_OK):
            self.skipTest("LCMON_FIFO_DEMO does not name the fifo_writer_demo executable")
        self.dir = tempfile.mkdtemp(prefix="lcmon-reader-")
        self.procs = []

    def tearDown(self):
        for p, log in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)
            log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def demo(self, path, n, *args):
        """Start the demo writing n batches to path; returns the process."""
        log = open(self.path("demo-%d.log" % len(self.procs)), "w+")
        p = subprocess.Popen(
            [DEMO, path, str(n), "--timeout", str(TIMEOUT)] + [str(a) for a in args],
            stdout=log,
            stderr=log,
        )
        self.procs.append((p, log))
        return p

    def finish(self, p):
        rc = p.wait(TIMEOUT)
        if rc != 0:
            for q, log in self.procs:
                if q is p:
                    log.seek(0)
                    sys.stderr.write(log.read())
        self.assertEqual(rc, 0)

    def write_file(self, name, n, *args):
        path = self.path(name)
        self.finish(self.demo(path, n, "--regular", *args))
        return path

    def check_batch(self, b, seq, batch_size, rows=None, relayout=False):
        rows = batch_size if rows is None else rows
        self.assertEqual(b.seq, seq)
        self.assertEqual(b.rows, rows)
        want = expected(seq, batch_size, rows, relayout)
        self.assertEqual(sorted(b.tensors), sorted(want))
        for name, arr in want.items():
            got = b.tensors[name]
            self.assertEqual(got.dtype, arr.dtype, name)
            self.assertEqual(got.shape, arr.shape, name)
            np.testing.assert_array_equal(got, arr, err_msg="batch %d, %s" % (seq, name))


class FileStreams(DemoCase):
    def test_values_and_partial_last_batch(self):
        path = self.write_file("s.bin", 5, "--last-rows", 7)
        with BatchReader(path) as r:
            h = r.header
            self.assertEqual(h.version, lcmon.VERSION)
            self.assertNotEqual(h.run_id, 0)
            self.assertGreater(h.run_started_ms, 1700000000000)
            self.assertEqual(h.batch_size, 64)
            self.assertEqual([(t.name, t.dtype.name, t.shape) for t in h.tensors],
                             [("x", "float32", (64, 3)), ("y", "int64", (64,))])
            for t in h.tensors:
                self.assertEqual(t.offset % 64, 0)
            batches = list(r.batches())
            self.assertTrue(r.done)
            self.assertFalse(r.truncated)
        self.assertEqual(len(batches), 5)
        for seq, b in enumerate(batches[:4]):
            self.assertFalse(b.last)
        # Views: every batch's arrays share the one buffer, so only the last
        # batch read is intact. Check each as it comes instead.
        with BatchReader(path) as r:
            for seq, b in enumerate(r.batches()):
                self.check_batch(b, seq, 64, 7 if seq == 4 else None)
                self.assertEqual(b.last, seq == 4)
                self.assertEqual(b.tensors["x"].ctypes.data % 64, 0)

    def test_copy_keeps_arrays(self):
        path = self.write_file("s.bin", 4)
        with BatchReader(path, copy=True) as r:
            kept = list(r)
        for seq, t in enumerate(kept):
            np.testing.assert_array_equal(t["y"], expected(seq, 64, 64)["y"])

    def test_layout_change_mid_stream(self):
        path = self.write_file("s.bin", 6, "--relayout", 3, "--last-rows", 5)
        with BatchReader(path) as r:
            for seq, b in enumerate(r.batches()):
                if seq < 3:
                    self.check_batch(b, seq, 64)
                else:
                    self.check_batch(b, seq, 72, 5 if seq == 5 else None, relayout=True)
                    self.assertEqual(r.header.batch_size, 72)
            self.assertEqual(r.batches_read, 6)
            self.assertEqual(r.headers_read, 2)
            self.assertTrue(r.done)

    def test_empty_stream(self):
        path = self.write_file("s.bin", 0)
        with BatchReader(path) as r:
            self.assertEqual(r.header.tensors, ())
            self.assertIsNone(r.read_batch())
            self.assertTrue(r.done)

    def test_truncation(self):
        path = self.write_file("s.bin", 3)
        data = read_bytes(path)
        cut = self.path("cut.bin")
        write_bytes(cut, data[:-16])  # without DONE
        with self.assertRaisesRegex(StreamTruncated, "without a DONE marker"):
            list(BatchReader(cut))
        with BatchReader(cut, tolerate_truncation=True) as r:
            self.assertEqual(len(list(r)), 3)
        self.assertTrue(r.truncated)
        self.assertFalse(r.done)
        write_bytes(cut, data[:-16 - 100])  # inside the last payload
        with self.assertRaisesRegex(StreamTruncated, "middle of batch 2"):
            list(BatchReader(cut))
        write_bytes(cut, b"")
        with self.assertRaisesRegex(NotAStream, "empty"):
            BatchReader(cut)
        write_bytes(cut, data[:10])
        with self.assertRaisesRegex(StreamTruncated, "in the stream header"):
            BatchReader(cut)

    def test_wait_for_pipe(self):
        """A reader opened before its stream exists waits for it
        (wait_for_pipe), and says how long it waited when it gives up."""
        src = self.write_file("made.bin", 3)
        later = self.path("later.bin")

        def appear():
            time.sleep(0.3)
            os.rename(src, later)

        t = threading.Thread(target=appear)
        t.start()
        try:
            with BatchReader(later, wait_for_pipe=TIMEOUT) as r:
                self.assertEqual(len(list(r.batches())), 3)
        finally:
            t.join()
        t0 = time.monotonic()
        with self.assertRaisesRegex(NotAStream, r"does not exist after 0.2 s.*wait_for_pipe"):
            BatchReader(self.path("never.pipe"), wait_for_pipe=0.2)
        self.assertGreaterEqual(time.monotonic() - t0, 0.2)
        with self.assertRaisesRegex(NotAStream, "does not exist: start lcmon"):
            BatchReader(self.path("never.pipe"))

    def test_not_a_stream(self):
        junk = self.path("junk.bin")
        write_bytes(junk, b"this is not a batch stream at all")
        with self.assertRaisesRegex(StreamError, "not an lcmon batch stream"):
            BatchReader(junk)
        path = self.write_file("s.bin", 1)
        data = bytearray(read_bytes(path))
        struct.pack_into("<I", data, 8, 7)
        bad = self.path("v7.bin")
        write_bytes(bad, data)
        with self.assertRaisesRegex(StreamVersionError, "version 7 is newer than this reader"):
            BatchReader(bad)
        with self.assertRaisesRegex(NotAStream, "is a directory"):
            BatchReader(self.dir)
        with self.assertRaisesRegex(NotAStream, "does not exist"):
            BatchReader(self.path("missing.pipe"))


def read_exact_raw(fd, n, timeout=10.0):
    """n bytes from a non-blocking fd, waiting in poll; fails on EOF."""
    out = bytearray()
    end = time.monotonic() + timeout
    p = select.poll()
    p.register(fd, select.POLLIN)
    while len(out) < n:
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError("read timed out")
        if not p.poll(int(left * 1000)):
            continue
        try:
            chunk = os.read(fd, n - len(out))
        except BlockingIOError:
            continue
        if not chunk:
            raise EOFError("end of file after %d of %d bytes" % (len(out), n))
        out += chunk
    return bytes(out)


def run_bounded(test, fn, timeout=TIMEOUT):
    """Run fn in a thread; fail the test if it does not end in time or
    raises."""
    box = {}

    def body():
        try:
            fn()
        except BaseException as e:  # handed to the test thread
            box["error"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(timeout)
    test.assertFalse(t.is_alive(), "the reader did not finish within %d s" % timeout)
    if "error" in box:
        raise box["error"]


class PipeStreams(DemoCase):
    BATCH = 4096  # 80 KiB payloads: 40 of them do not fit in a 1 MiB pipe

    def test_readers_leave_and_come_back(self):
        pipe = self.path("pipe")
        n = 40
        p = self.demo(pipe, n, "--batch-size", self.BATCH)

        def readers():
            while not os.path.exists(pipe):
                time.sleep(0.01)
            # Reader 1, by hand: the header, three batches, then half of the
            # fourth batch's payload, and away.
            fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
            prefix = read_exact_raw(fd, 16)
            (rest_len,) = struct.unpack_from("<I", prefix, 12)
            h = lcmon.parse_header(prefix, read_exact_raw(fd, rest_len))
            for seq in range(3):
                frame = read_exact_raw(fd, 96)  # a batch frame of version 5
                self.assertEqual(frame[:4], b"BTCH")
                self.assertEqual(struct.unpack_from("<Q", frame, 8)[0], seq)
                read_exact_raw(fd, h.payload_bytes)
            read_exact_raw(fd, 96 + h.payload_bytes // 2)
            os.close(fd)
            # Reader 2 at once (it may first meet the old pipe's tail and
            # must resynchronise): batch 3 again, whole; leaves at a batch
            # boundary after batch 19.
            r = BatchReader(pipe, timeout=10)
            for seq in range(3, 20):
                self.check_batch(r.read_batch(), seq, self.BATCH)
            r.close()
            # Reader 3: the rest, the last flag, and DONE.
            r = BatchReader(pipe, timeout=10)
            for seq in range(20, n):
                b = r.read_batch()
                self.check_batch(b, seq, self.BATCH)
                self.assertEqual(b.last, seq == n - 1)
            self.assertIsNone(r.read_batch())
            self.assertTrue(r.done)
            self.assertEqual(r.batches_read, n - 20)

        run_bounded(self, readers)
        self.finish(p)
        # Readers that close the pipe are ordinary: logged as information,
        # never as warnings (a trainer's normal exit is not a problem). The
        # writer may also say that it waits for the old pipe's tail to be
        # drained: when it notices a reader leaving only after the next one
        # has opened the pipe (a loaded machine), it reconnects to a pipe
        # that still holds its bytes, and waits until that reader, which
        # resynchronises, lets go of them. Every line is one of the two.
        log = self.procs[0][1]
        log.seek(0)
        lines = [l for l in log.read().split("\n") if "the reader of" in l]
        for l in lines:
            self.assertRegex(l, r" info .*(closed the pipe|is still reading an earlier run; "
                             r"waiting$)", l)
        closed = [l for l in lines if "closed the pipe" in l]
        self.assertGreaterEqual(len(closed), 2, lines)

    def test_resync_after_stale_tail(self):
        # A reader that opens the pipe before the writer has noticed its
        # predecessor leaving meets the old stream's tail: it must close,
        # reopen, and take the fresh stream. Played here by a hand-made
        # writer around a real (empty) stream from the demo.
        stream = read_bytes(self.write_file("empty.bin", 0))
        pipe = self.path("pipe")
        os.mkfifo(pipe, 0o600)
        opens = []

        def writer():
            fd = os.open(pipe, os.O_WRONLY)  # waits for the reader
            opens.append(1)
            os.write(fd, b"BTCH" + bytes(60))  # the tail of an older stream
            while True:  # until the reader has gone
                try:
                    os.write(fd, bytes(16))
                except BrokenPipeError:
                    break
                time.sleep(0.005)
            os.close(fd)
            fd = os.open(pipe, os.O_WRONLY)
            opens.append(2)
            os.write(fd, stream)
            os.close(fd)

        threading.Thread(target=writer, daemon=True).start()

        def reader():
            with BatchReader(pipe, timeout=10) as r:
                self.assertEqual(r.header.tensors, ())
                self.assertIsNone(r.read_batch())
                self.assertTrue(r.done)

        run_bounded(self, reader)
        self.assertEqual(opens, [1, 2])

    def test_next_run_before_the_end_of_file(self):
        """A writer leaves a batch torn; the reader drains the tail, and
        before its next read (the one that would meet the end of file) the
        next run's writer opens the pipe, as lcmon's does once it is empty,
        and writes. The reader must read no further than what the first
        writer left: the torn batch is dropped, never completed with the
        next run's bytes, and the next run comes whole."""
        batch = 64  # payloads of 1.25 KiB: the whole tail fits the pipe
        first = read_bytes(self.write_file("first.bin", 4, "--batch-size", batch))
        second = read_bytes(self.write_file("second.bin", 3, "--batch-size", batch))
        (rest_len,) = struct.unpack_from("<I", first, 12)
        record = 96 + batch * 20
        cut = 16 + rest_len + 2 * record + 96 + 600  # in batch 2's payload
        pipe = self.path("pipe")
        os.mkfifo(pipe, 0o600)
        left, drained, written, done = (threading.Event() for _ in range(4))

        def writers():
            fd = os.open(pipe, os.O_WRONLY)  # waits for the reader
            os.write(fd, first[:cut])
            os.close(fd)
            left.set()
            if drained.wait(TIMEOUT):
                fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
                os.write(fd, second)
                written.set()
                done.wait(TIMEOUT)  # held open, as a running writer does
                os.close(fd)

        class Stalled(BatchReader):
            """Reads once the first writer has gone, as a reader that took
            nothing for a while, the reason a stop leaves a batch torn;
            stops after the read that drains its tail until the next writer
            has written."""
            def _read_some(self, mv):
                left.wait(TIMEOUT)
                got = super()._read_some(mv)
                if (left.is_set() and not drained.is_set() and self._f is not None
                        and pipe_unread(self._f.fileno()) == 0):
                    drained.set()
                    written.wait(TIMEOUT)
                return got

        threading.Thread(target=writers, daemon=True).start()
        got = []

        def reader():
            try:
                with Stalled(pipe, timeout=10, restart_timeout=10, copy=True) as r:
                    for b in r.batches():
                        got.append((r.runs, b))
                    self.assertTrue(r.done)
                    self.assertEqual(r.torn_batches, 1)
            finally:
                done.set()

        with self.assertLogs("lcmon", "WARNING") as logs:
            run_bounded(self, reader)
        self.assertTrue(written.is_set(), "the next writer did not come before the end of file")
        self.assertEqual([(runs, b.seq) for runs, b in got], [(1, 0), (1, 1), (2, 0), (2, 1), (2, 2)])
        for _, b in got:
            self.check_batch(b, b.seq, batch)
        self.assertIn("ended without its DONE marker", logs.output[0])

    def test_second_reader_refused(self):
        pipe = self.path("pipe")
        p = self.demo(pipe, 6, "--batch-size", self.BATCH)

        def readers():
            while not os.path.exists(pipe):
                time.sleep(0.01)
            with BatchReader(pipe, timeout=10) as first:
                self.check_batch(first.read_batch(), 0, self.BATCH)
                # What DataLoader(num_workers=2) would do: a second reader of
                # the same pipe. It is refused, naming the holder, and the
                # first reader's stream stays whole.
                with self.assertRaisesRegex(PipeBusy, r"already being read by process %d"
                                            % os.getpid()):
                    BatchReader(pipe, timeout=10)
                for seq in range(1, 6):
                    self.check_batch(first.read_batch(), seq, self.BATCH)
                self.assertIsNone(first.read_batch())
                self.assertTrue(first.done)

        run_bounded(self, readers)
        self.finish(p)

    def test_stalled_writer(self):
        # A writer that opens the pipe and sends nothing: the reader's
        # timeout ends the wait with TimeoutError.
        pipe = self.path("pipe")
        os.mkfifo(pipe, 0o600)
        held = []

        def writer():
            fd = os.open(pipe, os.O_WRONLY)  # waits for the reader
            held.append(fd)

        threading.Thread(target=writer, daemon=True).start()

        def reader():
            t0 = time.monotonic()
            with self.assertRaisesRegex(TimeoutError, "no data for 0.5 s"):
                BatchReader(pipe, timeout=0.5)
            self.assertLess(time.monotonic() - t0, 30)

        run_bounded(self, reader)
        for fd in held:
            os.close(fd)

    def test_cli(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(lcmon.__file__))
        path = self.write_file("s.bin", 5)
        out = subprocess.run(
            [sys.executable, "-m", "lcmon", path, "--batches", "0"],
            env=env, capture_output=True, text=True, timeout=TIMEOUT,
        )
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("x: float32 [64, 3]", out.stdout)
        self.assertIn("y: int64 [64]", out.stdout)
        # The rate line counts the batches it timed (how it times them is
        # the CLI's business): rows must match them.
        m = re.search(r"^(\d+) batches, (\d+) rows, ", out.stdout, re.M)
        self.assertIsNotNone(m, out.stdout)
        self.assertIn(int(m.group(1)), (4, 5))
        self.assertEqual(int(m.group(2)), 64 * int(m.group(1)))
        self.assertIn("batches/s", out.stdout)
        self.assertIn("MB/s", out.stdout)
        self.assertIn("end of stream (DONE)", out.stdout)
        self.assertEqual(out.stdout.count("x: float32"), 1)

        # On a pipe: the CLI takes 3 batches and leaves; a second reader
        # gets the rest from batch 3 on.
        pipe = self.path("pipe")
        p = self.demo(pipe, 10, "--batch-size", self.BATCH)
        while not os.path.exists(pipe):
            time.sleep(0.01)
        out = subprocess.run(
            [sys.executable, "-m", "lcmon", pipe, "--batches", "3", "--timeout", "10"],
            env=env, capture_output=True, text=True, timeout=TIMEOUT,
        )
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("stopped after 3 batches", out.stdout)

        def rest():
            with BatchReader(pipe, timeout=10) as r:
                seqs = [b.seq for b in r.batches()]
                self.assertTrue(r.done)
            # It continues where the CLI left off (after batch 3 or 4).
            self.assertIn(seqs[:1], ([3], [4]))
            self.assertEqual(seqs, list(range(seqs[0], 10)))

        run_bounded(self, rest)
        self.finish(p)

        # Ctrl-C while waiting: no traceback, the one-line summary.
        pipe2 = self.path("pipe2")
        os.mkfifo(pipe2, 0o600)
        proc = subprocess.Popen(
            [sys.executable, "-m", "lcmon", pipe2], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        # Wait until it waits on the pipe (it has it open), not while Python
        # is still importing numpy.
        deadline = time.monotonic() + TIMEOUT

        def has_pipe_open():
            fds = "/proc/%d/fd" % proc.pid
            try:
                return any(os.readlink(os.path.join(fds, f)) == pipe2 for f in os.listdir(fds))
            except OSError:
                return False

        while not has_pipe_open() and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertTrue(has_pipe_open())
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
        self.assertEqual(proc.returncode, 130, err)
        self.assertNotIn("Traceback", err)
        self.assertIn("0 batches", out)
        self.assertIn("interrupted", out)

    def test_cli_sigterm_in_the_background(self):
        """As scripts/run starts it: in a script's background, where SIGINT
        is ignored. SIGTERM ends it promptly while it waits for the next
        run, with the one-line summary and no traceback."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(lcmon.__file__))
        pipe = self.path("pipe")
        os.mkfifo(pipe, 0o600)
        proc = subprocess.Popen(
            [sys.executable, "-m", "lcmon", pipe, "--restarts", "wait"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        fds = "/proc/%d/fd" % proc.pid

        def has_pipe_open():
            try:
                return any(os.readlink(os.path.join(fds, f)) == pipe for f in os.listdir(fds))
            except OSError:
                return False

        deadline = time.monotonic() + TIMEOUT
        while not has_pipe_open() and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertTrue(has_pipe_open())
        proc.send_signal(signal.SIGINT)  # ignored: what scripts/run's kill -INT met
        time.sleep(0.3)
        self.assertIsNone(proc.poll())
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=TIMEOUT)
        self.assertLess(time.monotonic() - t0, 2.0)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertNotIn("Traceback", err)
        self.assertIn("0 batches", out)
        self.assertIn("terminated after 0 batches", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
