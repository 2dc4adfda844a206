"""lcmon.Control, the Python client of the monitoring socket, against a real
headless lcmon (test_monitor's Loader: the small shuffled chain with a
reader draining its pipe):

- its message table equals proto/*.proto, field by field (its enum lists:
  test_enums);
- every request: hello and stages, metrics and state, anchor get, set and
  reset, pause and resume, stop and start;
- the windows of time: each through Control.metrics(window=) and `lcmon
  ctl SOCKET metrics --window`, what each covers and counts against all
  time; an unknown window refused naming the valid ones; a subscriber
  that asks for none (an older client) gets the messages it always got;
- wait_for_new_chunks while games are copied into the watched directory,
  seen within a fraction of a second of the last one;
- reconnecting across `stop`/`start` and across SIGKILL plus a new lcmon on
  the same socket, and after the loader closed a connection left unused;
- errors: no socket, a socket that is not lcmon's, a silent one, a request
  the loader refuses; the request forms protocol 3 dropped, refused.

Environment: as test_monitor (LCMON, LC_TEST_DATA, LCMON_SOURCE_ROOT).
"""

import json
import os
import re
import select
import shutil
import signal
import socket
import struct
import tempfile
import threading
import time
import unittest

from lcmon import Control, ControlError, LoaderGone, ProtocolError
from lcmon.control import SCHEMA, WINDOWS, decode, encode
from lcmon.wire import PROTOCOL_VERSION, frame, unframe
from test_monitor import DATA, SLOW, Frames, Loader, ctl, subscribe

SOURCE_ROOT = os.environ.get("LCMON_SOURCE_ROOT", "")
WAIT = 30 * SLOW


def proto_messages():
    """{message: {number: name}} from proto/*.proto."""
    out = {}
    for name in ("monitor.proto", "stage_control.proto", "training_metrics.proto"):
        with open(os.path.join(SOURCE_ROOT, "proto", name)) as f:
            text = f.read()
        text = re.sub(r"//[^\n]*", "", text)
        for m in re.finditer(r"message\s+(\w+)\s*\{", text):
            depth, i = 1, m.end()
            while depth:
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            body = re.sub(r"enum\s+\w+\s*\{[^}]*\}", "", text[m.end():i - 1])
            fields = {}
            for f in re.finditer(r"(optional|repeated|required)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)",
                                 body):
                fields[int(f.group(4))] = (f.group(3), f.group(1) == "repeated")
            out[m.group(1)] = fields
    return out


def sample_games():
    """The sample games, in a fixed order (their names repeat between
    folders: copies get names of their own, game_NN.gz)."""
    games = []
    for root, _, files in sorted(os.walk(DATA)):
        games += [os.path.join(root, f) for f in sorted(files) if f.endswith(".gz")]
    return games


def copy_game(src, k, into, via=None):
    """Game src as into/game_KK.gz; through `via` and a rename (as a writer
    of games would move a finished file in) when given."""
    name = "game_%02d.gz" % k
    if via is None:
        shutil.copy(src, os.path.join(into, name))
        return name
    shutil.copy(src, os.path.join(via, name))
    os.rename(os.path.join(via, name), os.path.join(into, name))
    return name


class Schema(unittest.TestCase):
    def test_table_matches_the_proto_files(self):
        self.assertTrue(SOURCE_ROOT, "LCMON_SOURCE_ROOT must name the source tree")
        protos = proto_messages()
        for message, fields in SCHEMA.items():
            self.assertIn(message, protos, message)
            want = protos[message]
            got = {num: (name, rep) for num, (name, _, rep) in fields.items()}
            self.assertEqual(got, want, message)

    def test_round_trip(self):
        msg = {"control": {"command": "anchor-set", "args": ["g.gz"], "stage": "pool"},
               "request_id": 2 ** 40 + 3}
        self.assertEqual(decode("ClientMessage", encode("ClientMessage", msg)), msg)
        g = {"name": "x", "value": -5, "capacity": 7}
        self.assertEqual(decode("GaugeMetricProto", encode("GaugeMetricProto", g)), g)
        buf = bytearray(frame(b"abc") + frame(b"") + b"\x05\x00")
        self.assertEqual([unframe(buf), unframe(buf), unframe(buf)], [b"abc", b"", None])
        self.assertEqual(buf, b"\x05\x00")  # a frame not whole yet stays


class AgainstLcmon(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lcmon-control-")
        self.data = os.path.join(self.tmp, "games")
        os.makedirs(self.data)
        self.games = sample_games()
        for k, g in enumerate(self.games[:10]):
            copy_game(g, k, self.data)
        self.L = Loader(self.tmp, data=self.data)

    def tearDown(self):
        self.L.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def wait_state(self, c, state):
        deadline = time.monotonic() + WAIT
        while c.state() != state:
            self.assertLess(time.monotonic(), deadline, "never %s" % state)
            time.sleep(0.05)

    def test_requests(self):
        with Control(self.L.sock, timeout=WAIT) as c:
            self.assertEqual(c.hello["protocol_version"], 3)
            self.assertEqual(PROTOCOL_VERSION, 3)
            self.assertEqual(c.stages(), ["files", "sources", "pool", "validator", "unpacker",
                                          "sampler", "tensors", "writer"])
            self.wait_state(c, "PIPELINE_RUNNING")
            deadline = time.monotonic() + WAIT
            while True:  # the metrics of the first second
                m = c.metrics()
                window = Control.find(m["all_time"], "pool", "gauge_metrics", "chunks_in_window")
                if window is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            names = [s["name"] for s in m["all_time"]["stage_metrics"]]
            self.assertIn("pool", names)
            self.assertIsNotNone(window)
            self.assertEqual(window.get("unit"), "chunks")
            # The anchor: the initial load counts every game newer than none.
            deadline = time.monotonic() + WAIT
            while c.anchor()[1] < 10:
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.05)
            key, count = c.anchor()
            self.assertEqual(count, 10)
            self.assertEqual(c.set_anchor("game_00.gz"), ("game_00.gz", 10))
            new_key, counted = c.reset_anchor()
            self.assertEqual(counted, 10)
            self.assertEqual(c.anchor(), (new_key, 0))
            c.pause("unpacker")
            m = c.metrics()
            unp = [s for s in m["last_second"]["stage_metrics"] if s["name"] == "unpacker"][0]
            self.assertEqual(unp.get("state"), "STAGE_PAUSED")
            c.resume("unpacker")
            with self.assertRaisesRegex(ControlError, "nosuchstage"):
                c.pause("nosuchstage")
            # Batches flow (a stop before the first one leaves the reader
            # waiting for the next run), then the stop ends the reader's run.
            self.assertTrue(self.L.batches_flow(WAIT))
            # The run: the id the stream's header names, and the config's seed.
            run = c.run()
            self.assertEqual((run["seed"], run["rank"], run["world_size"], run["state"]),
                             (1, 0, 1, "PIPELINE_RUNNING"))
            self.assertEqual(run["run_id"], self.L.reader.run_id)
            # A new connection's hello names the run it meets, and its seed.
            with Control(self.L.sock, timeout=WAIT) as c2:
                self.assertEqual((c2.hello["run_id"], c2.hello["seed"]),
                                 (run["run_id"], run["seed"]))
            c.stop()
            self.wait_state(c, "PIPELINE_STOPPED")
            self.L.new_reader()
            c.start()
            self.wait_state(c, "PIPELINE_RUNNING")
            self.assertNotIn(c.run()["run_id"], (0, run["run_id"]))  # a new run
            self.assertEqual(c.anchor()[0], new_key)  # kept across the restart
            self.assertEqual(c.reconnects, 0)  # one connection throughout

    # A sample value for each kind of argument the tables' commands take
    # (their usage words); a command with an argument of a new kind fails
    # the test below until its sample is added here.
    SAMPLE_ARGS = {"KEY": "game_03.gz"}

    def test_every_command_answers_through_the_socket_and_ctl(self):
        """Every command of the loader's tables, as its hello lists them (its
        own, every stage's, each stage type's), answers through
        Control.command and through `lcmon ctl SOCKET NAME [--stage S]
        ARGS`, and both say the same: a line of ctl a stage that answered,
        its fields' values. Nothing here names a stage type's command: a
        new one is tested by being in the table."""
        with Control(self.L.sock, timeout=WAIT) as c:
            table = c.commands()
            self.assertLessEqual({"stop", "start", "restart", "reload", "pause", "resume",
                                  "anchor-get", "anchor-set", "anchor-reset"}, set(table))
            deadline = time.monotonic() + WAIT
            while c.anchor()[1] < 10:  # loaded: anchor-reset has a game to anchor at
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.05)
            # The stages' commands first, pause before resume; the loader's
            # (stop, start, restart, reload) last.
            for name in sorted(table, key=lambda n: (not table[n]["stages"], n == "resume")):
                row = table[name]
                args = [self.SAMPLE_ARGS[a] for a in row["args"].split()]
                stage = row["stages"][-1] if row["one_stage"] else None
                got = c.command(name, *args, stage=stage)
                if row["stages"] and not row["one_stage"]:  # every stage that has it
                    self.assertEqual(sorted(got["replies"]), sorted(row["stages"]), name)
                r = ctl(self.L.sock, name, *(["--stage", stage] if stage else []), *args,
                        timeout=WAIT)
                self.assertEqual(r.returncode, 0, "%s: %s" % (name, r.stderr))
                lines = r.stdout.splitlines()
                if got["message"]:
                    self.assertEqual(lines.pop(0).split(":")[0], got["message"].split(":")[0])
                self.assertEqual([len(l.split("\t")) for l in lines],
                                 [len(f) for f in got["replies"].values() if f], name)
            # anchor-get says the same both ways.
            key, count = c.anchor()
            self.assertEqual(ctl(self.L.sock, "anchor-get").stdout, "%s\t%d\n" % (key, count))
            # A command the tables lack, or the wrong arguments: refused.
            with self.assertRaisesRegex(ControlError, "no stage has the command 'no-such'"):
                c.command("no-such")
            with self.assertRaisesRegex(ControlError, "anchor-set takes KEY"):
                c.command("anchor-set")
            with self.assertRaisesRegex(ControlError, "no stage named 'nope'"):
                c.command("anchor-get", stage="nope")
            self.assertEqual(ctl(self.L.sock, "anchor-set").returncode, 2)

    def test_older_request_forms_are_refused(self):
        """The request forms protocol 3 dropped (ControlRequest's fields 1
        to 3: pipeline_command, stage_request, reload_config), which no
        client sends since the command form, do nothing and are refused as
        naming no command."""
        with Control(self.L.sock, timeout=WAIT) as c:
            self.wait_state(c, "PIPELINE_RUNNING")
            pause = b"\x12\x08unpacker\x18\x01"  # StageControlRequest{stage, command}
            older = {
                "PIPELINE_COMMAND_STOP": b"\x08\x01",
                "STAGE_COMMAND_PAUSE": b"\x12" + bytes([len(pause)]) + pause,
                "chunk_pool_request set": b"\x12\x06\x0a\x04\x12\x02g1",
                "reload_config": b"\x18\x01",
            }
            raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            raw.connect(self.L.sock)
            raw.settimeout(WAIT)
            buf, answers = bytearray(), {}
            for rid, body in enumerate(older.values(), 1):
                raw.sendall(frame(b"\x12" + bytes([len(body)]) + body + b"\x18" + bytes([rid])))
            while len(answers) < len(older):
                body = unframe(buf)
                if body is None:
                    chunk = raw.recv(1 << 16)
                    self.assertTrue(chunk, "the loader closed the connection")
                    buf += chunk
                    continue
                msg = decode("ServerMessage", body)
                if "control_response" in msg:
                    answers[msg["request_id"]] = msg["control_response"]
            raw.close()
            for rid, what in enumerate(older, 1):
                self.assertFalse(answers[rid]["ok"], what)
                self.assertIn("names no command", answers[rid]["error"], what)
            # Nothing was done: the pipeline runs, the unpacker too, the
            # anchor is where it was.
            self.assertEqual(c.state(), "PIPELINE_RUNNING")
            self.assertNotEqual(c.anchor()[0], "g1")
            m = c.metrics()["last_second"]
            self.assertEqual([s.get("state") for s in m["stage_metrics"]
                              if s["name"] == "unpacker"], ["STAGE_RUNNING"])
            self.assertEqual(self.L.proc.poll(), None)

    # What each window may cover at most beyond its length: one slot of its
    # tier (core/metric_windows.h), and a flush interval of slack.
    WINDOW_SECONDS = {"1s": (1, 0.2), "10s": (10, 0.2), "1m": (60, 10.2), "10m": (600, 60.2),
                      "1h": (3600, 600.2)}

    @staticmethod
    def positions(snapshot_part):
        s = [s for s in snapshot_part["stage_metrics"] if s["name"] == "tensors"][0]
        return [c for c in s["count_metrics"] if c["name"] == "positions"][0]["count"]

    def test_windows(self):
        with Control(self.L.sock, timeout=WAIT) as c:
            self.wait_state(c, "PIPELINE_RUNNING")
            self.assertTrue(self.L.batches_flow(WAIT))
            deadline = time.monotonic() + WAIT
            while True:  # whole seconds with positions in them
                ten = c.metrics("10s")["window"]
                if ten.get("duration_seconds", 0) >= 2 and self.positions(ten) > 0:
                    break
                self.assertLess(time.monotonic(), deadline, "no whole seconds of positions")
                time.sleep(0.1)
            for name in WINDOWS:
                m = c.metrics(window=name)
                w, all_time = m["window"], m["all_time"]
                self.assertEqual(w.get("window"), "WINDOW_" + name.upper(), name)
                covers = w.get("duration_seconds", 0)
                self.assertGreater(covers, 0, name)
                self.assertLessEqual(covers, all_time["uptime_seconds"] + 0.5, name)
                if name != "all":
                    length, slot = self.WINDOW_SECONDS[name]
                    self.assertLessEqual(covers, length + slot, name)
                # The window's positions are all time's, or fewer; taken
                # after it, all time's can only have grown.
                self.assertLessEqual(self.positions(w), self.positions(all_time), name)
                if name in ("1h", "all"):  # the whole run (the hour: but the open second)
                    self.assertGreaterEqual(self.positions(w), self.positions(ten), name)
                    self.assertGreater(covers, all_time["uptime_seconds"] - 1.5, name)
                # ctl shows the same window, as JSON and as text.
                r = ctl(self.L.sock, "metrics", "--window", name, "--json", timeout=WAIT)
                self.assertEqual(r.returncode, 0, r.stderr)
                j = json.loads(r.stdout)
                self.assertEqual(j["window"]["window"], "WINDOW_" + name.upper())
                self.assertLessEqual(self.positions(j["window"]), self.positions(j["all_time"]))
                r = ctl(self.L.sock, "metrics", "--window=" + name, timeout=WAIT)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertRegex(r.stdout, r"(?m)^window %s: [0-9.]+ s$" % name)
                self.assertRegex(r.stdout, r"(?m)^tensors .* out [0-9]+ \([0-9]+/s\)$")
            # The 10 s window's gauges carry their range over it.
            m = c.metrics("10s")["window"]
            fill = Control.find(m, "sampler", "gauge_metrics", "reservoir_size")
            v = fill["values"]
            self.assertLessEqual(v["min"], fill["value"])
            self.assertLessEqual(fill["value"], v["max"])
            self.assertGreater(v["count"], 1)
            # Unknown windows: refused, naming the valid ones.
            with self.assertRaisesRegex(ValueError, "1s, 10s, 1m, 10m, 1h, all"):
                c.metrics(window="5m")
            r = ctl(self.L.sock, "metrics", "--window", "5m")
            self.assertEqual(r.returncode, 2)
            self.assertIn("'5m': no such window (the windows: 1s, 10s, 1m, 10m, 1h, all)",
                          r.stderr)
            self.assertEqual(ctl(self.L.sock, "metrics", "--window").returncode, 2)
        # A subscriber that names no window (as every client before windows)
        # gets the last second and all time, and nothing more.
        with socket.socket(socket.AF_UNIX) as raw:
            raw.connect(self.L.sock)
            raw.sendall(subscribe(100))
            frames = Frames(raw)
            msgs = []
            deadline = time.monotonic() + WAIT
            while sum(1 for m in msgs if any(n == 3 for n, _ in m)) < 2:
                self.assertLess(time.monotonic(), deadline)
                msgs += frames.read(0.2)
            for m in msgs:
                nums = {n for n, _ in m}
                self.assertNotIn(7, nums)
                if 3 in nums:
                    self.assertIn(2, nums)

    def wait_stage(self, c, stage, state):
        deadline = time.monotonic() + WAIT
        while True:
            m = c.metrics()["last_second"]
            if [s.get("state") for s in m["stage_metrics"] if s["name"] == stage] == [state]:
                return
            self.assertLess(time.monotonic(), deadline, "%s never %s" % (stage, state))
            time.sleep(0.05)

    def test_wait_for_new_chunks(self):
        with Control(self.L.sock, timeout=WAIT) as c:
            deadline = time.monotonic() + WAIT
            while True:  # a reset is taken once the initial load is counted
                try:
                    c.reset_anchor()
                    break
                except ControlError:
                    self.assertLess(time.monotonic(), deadline)
                    time.sleep(0.05)
            self.assertEqual(c.anchor()[1], 0)
            new = self.games[10:14]
            done = {}

            def copy_in():
                for k, g in enumerate(new):
                    time.sleep(0.2)
                    copy_game(g, 10 + k, self.data, via=self.tmp)
                done["t"] = time.monotonic()

            t = threading.Thread(target=copy_in)
            t.start()
            try:
                with self.assertRaises(TimeoutError):
                    c.wait_for_new_chunks(len(new), timeout=0.1)
                count = c.wait_for_new_chunks(len(new), timeout=WAIT)
                seen = time.monotonic()
            finally:
                t.join()
            self.assertEqual(count, len(new))
            # Seen soon after the last game came (the file provider, the
            # loader and the pool take their part of it too).
            self.assertLess(seen - done["t"], 2.0 * SLOW)
            print("wait_for_new_chunks: the last game seen %.0f ms after it was moved in"
                  % ((seen - done["t"]) * 1000))
            # The metrics say the same count, found by its role.
            while c.new_chunks() != len(new):
                self.assertLess(time.monotonic(), seen + WAIT, c.new_chunks())
                time.sleep(0.05)

    def test_reconnects_to_a_new_loader(self):
        with Control(self.L.sock, timeout=WAIT, reconnect=WAIT) as c:
            pid = c.hello["pid"]
            self.assertEqual(pid, self.L.proc.pid)
            self.L.proc.send_signal(signal.SIGKILL)
            self.L.proc.wait(WAIT)
            self.L.reader.stop = True
            restarted = {}

            def start_again():
                time.sleep(0.5)
                restarted["L"] = Loader(self.tmp, data=self.data)

            t = threading.Thread(target=start_again)
            t.start()
            try:
                key, _ = c.anchor()  # waits for the new loader
            finally:
                t.join()
            self.L = restarted["L"]
            self.assertEqual(c.reconnects, 1)
            self.assertEqual(c.hello["pid"], self.L.proc.pid)
            self.assertIsInstance(key, str)


    def test_unused_connection_closed_by_the_loader(self):
        """The loader closes a connection without a subscription once it has
        been idle for 10 s. A Control left unused that long, even one told
        not to reconnect, connects again before its next request; the same
        loader is no reconnect."""
        with Control(self.L.sock, timeout=WAIT, reconnect=0) as c:
            c.anchor()
            first = c._sock

            def closed_by_loader():
                if not select.select([first], [], [], 0)[0]:
                    return False
                try:
                    return first.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    return True
            deadline = time.monotonic() + 10 + WAIT
            while not closed_by_loader():
                self.assertLess(time.monotonic(), deadline, "the loader kept an idle connection")
                time.sleep(0.1)
            key, count = c.anchor()
            self.assertIsInstance(count, int)
            self.assertIsNot(c._sock, first)
            self.assertEqual(c.reconnects, 0)
            self.assertEqual(c.hello["pid"], self.L.proc.pid)


class Errors(unittest.TestCase):
    def test_no_socket(self):
        with self.assertRaisesRegex(LoaderGone, "no such socket"):
            Control("/nonexistent/lcmon.sock", reconnect=0)

    def serve(self, answer):
        """A socket that is not lcmon's: it sends `answer` (None: nothing)
        to whoever connects."""
        tmp = tempfile.mkdtemp(prefix="lcmon-notours-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "other.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        self.addCleanup(srv.close)

        def run():
            conn, _ = srv.accept()
            if answer is not None:
                conn.sendall(answer)
            time.sleep(2)
            conn.close()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        return path

    def test_not_lcmon(self):
        path = self.serve(b"HTTP/1.0 200 OK\r\n\r\nhello")
        with self.assertRaises(ProtocolError):
            Control(path, timeout=1, reconnect=0)

    def test_another_protocol_version(self):
        body = encode("ServerMessage", {"hello": {"protocol_version": 9,
                                                  "lcmon_version": "9.9"}})
        path = self.serve(struct.pack("<I", len(body)) + body)
        with self.assertRaisesRegex(ProtocolError, "protocol 9"):
            Control(path, timeout=1, reconnect=0)

    def test_silent(self):
        path = self.serve(None)
        t0 = time.monotonic()
        with self.assertRaisesRegex(TimeoutError, "no answer"):
            Control(path, timeout=0.5, reconnect=0)
        self.assertLess(time.monotonic() - t0, 1.9)


if __name__ == "__main__":
    unittest.main(verbosity=2)
