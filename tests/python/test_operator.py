"""What an operator meets on a long run, second pass (issue 35, items 5 to
10): two lcmon on one pipe under two names (a hard link), file names that
would forge log lines, retitle a terminal or break JSON, `lcmon chunks`
on damaged tars and on what is no folder, configs of absurd size, a
monitor socket held by subscribers or blocked at SOCKET.new, a game that
cannot be read for a while, and one Ctrl-C delivered twice.

Environment: LCMON, LC_TEST_DATA, LCMON_SOURCE_ROOT, LCMON_TEST_SLOW,
PYTHONPATH (python/).
"""

import ctypes
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import time
import unittest

from test_folder import CONFIG, GAMES, Run, Trickle, copy_games
from test_hostile import closed_by_server, wait_for
from test_monitor import LCMON, SLOW, Frames, client_frame, ctl, subscribe


def write_config(tmp, name, data, pipe):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(CONFIG.format(data=data, pipe=pipe, extra="", pool="",
                              tensors="batch_size: 32, packed: true"))
    return path


class Case(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lcmon-operator-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.data = os.path.join(self.tmp, "data")
        os.makedirs(self.data)


class PipeLock(Case):
    def test_second_writer_through_a_hard_link_is_refused(self):
        """Item 5: the second lcmon, given a hard link to the first one's
        pipe, is refused at start naming the first; the lock file goes
        with the first lcmon."""
        copy_games(self.data, GAMES[:3])
        locks = os.path.join(self.tmp, "locks")
        os.makedirs(locks, 0o700)
        env = {"XDG_RUNTIME_DIR": locks}
        run = Run(self.tmp, self.data, env=env)
        try:
            wait_for("the first lcmon's pipe", lambda: os.path.exists(run.pipe), 20)
            wait_for("its lock", lambda: os.listdir(locks), 20)
            link = os.path.join(self.tmp, "link.pipe")
            os.link(run.pipe, link)
            cfg = write_config(self.tmp, "second", self.data, link)
            r = subprocess.run([LCMON, "--no-ui", "--status-interval", "0", "--config", cfg,
                                "--max-seconds", "5"], capture_output=True, text=True,
                               timeout=30 * SLOW, env=dict(os.environ, **env))
            self.assertNotEqual(r.returncode, 0, "a second writer of one pipe ran: " +
                                r.stderr[-2000:])
            self.assertIn("another lcmon (process %d) already writes to %s" %
                          (run.proc.pid, link), r.stderr)
        finally:
            rc = run.stop()
        self.assertEqual(rc, 0, run.log()[-2000:])
        self.assertEqual([f for f in os.listdir(locks) if f.startswith("lcmon-writer-")], [],
                         "the writer's lock file was left behind")


class Names(Case):
    # A name that would forge a log line, one that would retitle a
    # terminal, in invalid UTF-8 (the newest game, so the pool's
    # last_chunk_key shows it), and a file that is no game (the loader's
    # last_skipped and its log line).
    FORGED = "12:00:00.000 error [main] forged"

    def test_control_characters_in_file_names(self):
        """Item 6: the log stays one line an event, ctl metrics and its
        JSON carry no control character, and the JSON decodes."""
        copy_games(self.data, GAMES[:3])
        data = os.fsencode(self.data)
        evil = b"zz\x1b]0;retitled\x07\xff.gz"
        shutil.copy(GAMES[3], os.path.join(data, evil))
        with open(os.path.join(data, ("notes\n%s.txt" % self.FORGED).encode()), "w") as f:
            f.write("not a game")
        with open(os.path.join(data, ("bad\n%s.gz" % self.FORGED).encode()), "wb") as f:
            f.write(b"\x1f\x8b not really gzip")
        for name in os.listdir(data):
            os.utime(os.path.join(data, name), (time.time() - 3600,) * 2)
        run = Run(self.tmp, self.data)
        try:
            def newest():
                r = subprocess.run([LCMON, "ctl", run.sock, "metrics", "--json"],
                                   capture_output=True, timeout=30)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertNotIn(b"\x1b", r.stdout)
                m = json.loads(r.stdout.decode("utf-8"))  # strict: it used to fail here
                texts = {t["name"]: t.get("value", "") for s in m["all_time"]["stage_metrics"]
                         for t in s.get("text_metrics", [])}
                return texts if texts.get("last_chunk_key", "").startswith("zz") else None
            texts = wait_for("the newest game in the metrics", newest, 30)
            self.assertEqual(texts["last_chunk_key"], "zz\\x1b]0;retitled\\x07\\xff.gz")
            self.assertEqual(texts["last_skipped"], "notes\\n%s.txt" % self.FORGED)
            r = subprocess.run([LCMON, "ctl", run.sock, "metrics"], capture_output=True,
                               timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn(b"\x1b", r.stdout)
            r.stdout.decode("utf-8")
            self.assertIn(b"last_chunk_key 'zz\\x1b]0;retitled\\x07\\xff.gz'", r.stdout)
        finally:
            rc = run.stop()
        self.assertEqual(rc, 0)
        with open(run.err_path, "rb") as f:
            log = f.read()
        self.assertNotIn(b"\x1b", log)
        log.decode("utf-8")
        self.assertEqual([l for l in log.split(b"\n") if l.startswith(self.FORGED.encode())], [],
                         "a file name forged a log line")
        self.assertIn(("notes\\n%s.txt: not a .gz or .tar file" % self.FORGED).encode(), log)


class ChunksTool(Case):
    def chunks(self, *args):
        return subprocess.run([LCMON, "chunks", *args], capture_output=True, text=True,
                              timeout=60 * SLOW)

    def test_damaged_tar_and_what_is_no_folder(self):
        """Item 7: a tar cut short inside its third member is BAD with
        truncated_archive (it said ok and exit 0), as stats counts it;
        check and stats refuse a FIFO and /dev/null instead of saying
        "0 files, 0 bad"."""
        tar = os.path.join(self.data, "run.tar")
        with tarfile.open(tar, "w", format=tarfile.GNU_FORMAT) as t:
            for i, g in enumerate(GAMES[:3]):
                t.add(g, arcname="g%d.gz" % i)
        third = 2 * 512 + sum(-(-os.path.getsize(g) // 512) * 512 for g in GAMES[:2])
        os.truncate(tar, third + 512 + 100)  # its header and 100 bytes of it
        stats = json.loads(self.chunks("stats", self.data, "--json").stdout)
        self.assertEqual(stats["bad_files"], {"truncated_archive": 1})
        p = self.chunks("check", self.data)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        line = p.stdout.splitlines()[0]
        self.assertTrue(line.startswith("BAD  %s: 2 chunks" % tar), line)
        self.assertIn("truncated_archive (%s: archive truncated at offset" % tar, line)
        self.assertIn("1 file checked: 0 ok, 1 bad", p.stdout.splitlines()[-1])
        p = self.chunks("check", self.data, "--json")
        self.assertEqual(p.returncode, 1)
        f = json.loads(p.stdout)["files"][0]
        self.assertFalse(f["ok"])
        self.assertEqual([(q["member"], q["reason"]) for q in f["problems"]],
                         [(None, "truncated_archive")])
        fifo = os.path.join(self.tmp, "fifo")
        os.mkfifo(fifo)
        for verb in ("check", "stats"):
            for what, name in ((fifo, "a named pipe (FIFO)"), ("/dev/null", "a character device")):
                p = self.chunks(verb, what)
                self.assertEqual(p.returncode, 1, "%s %s: %s" % (verb, what, p.stdout))
                self.assertEqual(p.stdout, "")
                self.assertIn("lcmon: chunks: %s is %s, not a folder or a file" % (what, name),
                              p.stderr)


class ConfigScale(Case):
    def check_config(self, text):
        path = os.path.join(self.tmp, "big.yaml")
        with open(path, "w") as f:
            f.write(text)
        t0 = time.monotonic()
        p = subprocess.Popen([LCMON, "--check-config", path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=60 * SLOW)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise AssertionError("--check-config did not end in %d s" % (60 * SLOW))
        return p.returncode, err, time.monotonic() - t0

    def test_a_million_problems_and_ten_thousand_stages(self):
        """Item 8: 300,000 unknown keys in a stage's block are read in
        linear time, the first problems said and the rest counted (it took
        minutes and gigabytes, and said no more than fitted); 10,000
        stages, or 1,281 worker threads, are refused naming the limit."""
        keys = "".join("      unknown_key_%07d: 1\n" % i for i in range(300000))
        rc, err, took = self.check_config(
            "stages:\n  - name: files\n    file_path_provider:\n      directory: /tmp\n" + keys)
        self.assertEqual(rc, 1)
        self.assertLess(took, 20 * SLOW)
        lines = err.splitlines()
        self.assertIn(":5:7: stage 'files': file_path_provider.unknown_key_0000000: unknown key",
                      lines[0])
        m = re.search(r"big.yaml: and (\d+) more problems \(the first (\d+) are shown: fix "
                      r"them and check again\)$", lines[-1])
        self.assertIsNotNone(m, lines[-1])
        self.assertEqual(int(m.group(1)) + int(m.group(2)), 300000)
        self.assertEqual(int(m.group(2)), len(lines) - 1)
        stages = "".join("  - name: f%d\n    file_path_provider: {directory: /tmp}\n" % i
                         for i in range(10000))
        rc, err, took = self.check_config("stages:\n" + stages)
        self.assertEqual(rc, 1)
        self.assertLess(took, 20 * SLOW)
        self.assertEqual(err.strip().splitlines(), [
            "lcmon: %s:2:3: stages: 10000 of them; a pipeline has at most 256 (split it over "
            "several lcmon, or join the stages that do the same)"
            % os.path.join(self.tmp, "big.yaml")])
        loaders = "".join("  - name: s%d\n    input: %s\n    chunk_validator: {threads: 256}\n"
                          % (i, "pool" if i == 0 else "s%d" % (i - 1)) for i in range(5))
        rc, err, _ = self.check_config(
            "stages:\n  - name: files\n    file_path_provider: {directory: /tmp}\n"
            "  - name: sources\n    input: files\n    chunk_source_loader: {}\n"
            "  - name: pool\n    input: sources\n    shuffling_chunk_pool: {}\n" + loaders)
        self.assertEqual(rc, 1, err)
        self.assertRegex(err, r"stages: 128\d worker threads in all; a pipeline has at most 1024")

    def test_the_largest_pipeline_runs_and_reports(self):
        """Item 8: a chain of 256 stages (the limit) runs, and ctl metrics
        answers with every stage (10,000 made it fail)."""
        copy_games(self.data, GAMES[:4])
        chain = "".join("  - name: v%d\n    input: %s\n    chunk_validator: {}\n"
                        % (i, "pool" if i == 0 else "v%d" % (i - 1)) for i in range(249))
        cfg = os.path.join(self.tmp, "long.yaml")
        pipe, sock = os.path.join(self.tmp, "long.pipe"), os.path.join(self.tmp, "long.sock")
        with open(cfg, "w") as f:
            f.write("stages:\n  - name: files\n    file_path_provider: {directory: '%s'}\n"
                    "  - name: sources\n    input: files\n    chunk_source_loader: {}\n"
                    "  - name: pool\n    input: sources\n    shuffling_chunk_pool: "
                    "{chunk_pool_size: 100}\n%s"
                    "  - name: unpacker\n    input: v248\n    chunk_unpacker: {}\n"
                    "  - name: sampler\n    input: unpacker\n    shuffling_frame_sampler: "
                    "{reservoir_size: 100}\n"
                    "  - name: tensors\n    input: sampler\n    tensor_generator: {batch_size: 16}\n"
                    "  - name: writer\n    input: tensors\n    fifo_writer: {path: '%s'}\n"
                    % (self.data, chain, pipe))
        p = subprocess.Popen([LCMON, "--no-ui", "--status-interval", "0", "--config", cfg,
                              "--socket", sock], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        try:
            wait_for("the socket", lambda: os.path.exists(sock) or p.poll() is not None, 30)
            self.assertIsNone(p.poll(), p.stderr.read() if p.poll() is not None else "")
            r = ctl(sock, "metrics", "--json", timeout=60 * SLOW)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(len(json.loads(r.stdout)["all_time"]["stage_metrics"]), 256)
        finally:
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=30 * SLOW)
        self.assertEqual(p.returncode, 0, err[-2000:])


def refusal(sock, seconds):
    """Read until the server closes: its ServerMessage.refused (field 8),
    or None when it closed without one."""
    frames = Frames(sock)
    got, deadline = None, time.monotonic() + seconds * SLOW
    while time.monotonic() < deadline:
        msgs = frames.read(0.2)
        for m in msgs:
            for num, v in m:
                if num == 8:
                    got = v.decode()
        try:
            sock.setblocking(False)
            if sock.recv(1, socket.MSG_PEEK) == b"" and not frames.buf:
                return got
        except BlockingIOError:
            pass
        except ConnectionResetError:
            return got
        finally:
            sock.setblocking(True)
    raise AssertionError("the server did not close the connection")


class MonitorPlaces(Case):
    def connect(self, path):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        self.addCleanup(s.close)
        return s

    def test_subscribers_do_not_lock_ctl_out(self):
        """Item 9: 64 clients subscribe and read; a 65th subscriber is
        refused and told why; `lcmon ctl stop` still gets in (it was
        refused with only "the loader closed the connection"), and a ctl
        that needs a subscription says why it is refused."""
        copy_games(self.data, GAMES[:3])
        run = Run(self.tmp, self.data)
        try:
            subs = []
            for _ in range(64):
                s = self.connect(run.sock)
                s.sendall(subscribe(60000))
                subs.append(s)
            for s in subs:  # each has its hello: all 64 hold a place
                s.settimeout(10 * SLOW)
                self.assertTrue(s.recv(4))
            extra = self.connect(run.sock)
            extra.sendall(subscribe(60000))
            why = refusal(extra, 10)
            self.assertIsNotNone(why, "the 65th subscriber was closed without a word")
            self.assertIn("every place for a subscriber is taken (64 subscribers", why)
            r = ctl(run.sock, "stop")
            self.assertEqual(r.returncode, 0, r.stderr)
            r = ctl(run.sock, "metrics")
            self.assertEqual(r.returncode, 3)
            self.assertIn("the loader refused this connection: every place for a subscriber is "
                          "taken", r.stderr)
            for s in subs:  # none of the readers was dropped for it
                s.setblocking(False)
                try:
                    self.assertNotEqual(s.recv(65536, socket.MSG_PEEK), b"")
                except BlockingIOError:
                    pass
        finally:
            rc = run.stop()
        self.assertEqual(rc, 0, run.log()[-2000:])
        said = re.findall(r"monitor socket: refused (\d+) subscriptions? in the last 10 s: 64 "
                          r"subscribers read already \(4 places are kept for control requests\)",
                          run.log())
        self.assertEqual(sum(int(n) for n in said), 2, run.log()[-2000:])

    def test_socket_new_taken_by_others(self):
        """Item 9: a stray file at SOCKET.new, then another program's live
        socket there: lcmon starts anyway (it said "Address already in
        use") and leaves both alone (it deleted the live socket)."""
        copy_games(self.data, GAMES[:3])
        sock = os.path.join(self.tmp, "run.sock")
        with open(sock + ".new", "w") as f:
            f.write("someone's notes\n")
        run = Run(self.tmp, self.data)
        try:
            self.assertEqual(ctl(run.sock, "status").returncode, 0)
        finally:
            self.assertEqual(run.stop(), 0, run.log()[-2000:])
        with open(sock + ".new") as f:
            self.assertEqual(f.read(), "someone's notes\n")
        os.unlink(sock + ".new")
        other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(other.close)
        other.bind(sock + ".new")
        other.listen(4)
        run = Run(self.tmp, self.data, name="run")
        try:
            self.assertEqual(ctl(run.sock, "status").returncode, 0)
        finally:
            self.assertEqual(run.stop(), 0, run.log()[-2000:])
        self.assertTrue(stat_is_socket(sock + ".new"), "another program's socket was deleted")
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(sock + ".new")  # still theirs, still live
        c.close()
        self.assertFalse(os.path.exists(sock))


def without_root_reads():
    """For a child run as root: drop the capabilities that read any file
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) from the bounding set, so that
    a file's mode holds for it as for any user. Nothing to do otherwise."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


class Small(Case):
    def test_game_unreadable_for_a_while_is_retried(self):
        """Item 10: a game whose permissions are set a few seconds late is
        loaded then (it was never tried again), with one warning and one
        line when it loads."""
        copy_games(self.data, GAMES[:3])
        late = os.path.join(self.data, "late.gz")
        shutil.copy(GAMES[3], late)
        os.chmod(late, 0)
        os.utime(late, (time.time() - 3600,) * 2)
        sock = os.path.join(self.tmp, "run.sock")
        cfg = write_config(self.tmp, "run", self.data, os.path.join(self.tmp, "run.pipe"))
        log = open(os.path.join(self.tmp, "run.log"), "w+")
        self.addCleanup(log.close)
        p = subprocess.Popen([LCMON, "--no-ui", "--status-interval", "0", "--config", cfg,
                              "--socket", sock], stdout=subprocess.DEVNULL, stderr=log,
                             preexec_fn=without_root_reads)
        try:
            def said(text):
                log.seek(0)
                return text in log.read()
            wait_for("the warning", lambda: said("late.gz: cannot open: Permission denied"), 30)
            time.sleep(1.5)  # tried again at least once meanwhile
            os.chmod(late, 0o644)
            def sources():
                r = ctl(sock, "metrics", "--json")
                for st in json.loads(r.stdout)["all_time"]["stage_metrics"]:
                    if st["name"] == "sources":
                        return {c["name"]: int(c.get("count", 0))
                                for c in st.get("count_metrics", [])}.get("sources", 0)
            wait_for("the late game loaded", lambda: sources() == 4, 60)
        finally:
            p.send_signal(signal.SIGINT)
            p.wait(30 * SLOW)
        self.assertEqual(p.returncode, 0)
        log.seek(0)
        text = log.read()
        self.assertEqual(text.count("late.gz: cannot open: Permission denied"), 1, text[-3000:])
        self.assertRegex(text, r"sources: %s loads now, after \d+ tries" % re.escape(late))

    def test_one_ctrl_c_delivered_twice_stops_gracefully(self):
        """Item 10: a second SIGINT right after the first (a terminal and a
        process group at once) is the same request: the stop waits for the
        reader as a single one does, and ends 0 (it ended at once with
        130)."""
        copy_games(self.data, GAMES)
        # Dense batches of 9 MB for a trickling reader: the stop waits for it.
        run = Run(self.tmp, self.data, tensors="batch_size: 256")
        reader = Trickle(run.pipe)
        reader.start()
        wait_for("the reader to take bytes", lambda: reader.read > 100000, 30)
        run.proc.send_signal(signal.SIGINT)
        wait_for("the stop", lambda: "Interrupt received: stopping" in run.log(), 10)
        run.proc.send_signal(signal.SIGINT)
        rc = run.stop(send=False)
        self.assertEqual(rc, 0, run.log()[-2000:])
        self.assertIn("Interrupt again within 0.25 s of the stop: taken as the same one",
                      run.log())


def stat_is_socket(path):
    import stat
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


if __name__ == "__main__":
    unittest.main()
