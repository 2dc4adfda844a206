"""The soak run (scripts/soak): a headless lcmon for a while, with everything a
weeks-long run meets happening around it, and its health measured.

Around the loader: a companion copies new games into the data folder (the
oldest go past MAX_GAMES), writes
some again with the same bytes and with other bytes, deletes some, and once
each drops a named pipe named like a game (and writes to it) and a symbolic
link loop; monitor clients come and go (ctl requests, connections that hang
up, connections that stay silent); the trainer reads every batch and
restarts its reader now and then; the pipeline is stopped and started every
--stop-every seconds. Once a second the loader's resident memory, open
descriptors and threads are sampled.

Beside it, a second, quiet loader (the chunk store off, its own folder, a
symbolic link `data` to `runA`, a reader of its own) meets the hostile
events of issue 35, one after the other, each checked exactly (WatchEvents):
a game truncated and written again with the same bytes, a sparse file of a
terabyte named .gz, a subfolder moved in with a link back to the data
folder, and the link re-pointed at `runB` (hard links to runA's games and
two new ones). Each must leave the window and the anchor's count at what
the games say (nothing lost, nothing counted twice) and be logged once.

An operator's hostile events (issue 35, items 5 and 6; operator_events):
once, a second lcmon is started on a hard link of the pipe and must be
refused, naming the first; once, files whose names hold a newline, an
escape sequence and invalid UTF-8 are dropped in, and the log, `ctl metrics`
and its JSON must stay well-formed (no forged line, no escape byte, strict
UTF-8 that decodes).

At the end it prints those over time and the batches read, lost (a gap in a
run's sequence numbers) and read twice, and exits 1 if any batch was lost or
duplicated, none was read, lcmon did not stop cleanly, memory, descriptors
or threads grew between the first and the last third of the run after its
first minute (a quarter of a shorter run), or a hostile event went otherwise
than it must. Environment: LCMON_PYTHON (this interpreter), LCMON (the
binary; else build/lcmon), LCMON_TEST_SLOW (sanitizer builds).

Memory. Everything lcmon holds fills at once: the data folder starts with
more games than the window holds (the store then packs them within seconds;
the sampler's reservoir is mapped whole at start). So after the warm-up the
resident memory must stay flat: the last third's peak at most
RSS_SLACK_KIB above the first third's. glibc's malloc would blur that:
by default each thread's arena keeps up to twice the largest block it ever
freed from the system's mapping (a chunk's inflated records, about 1 MB
here) resident, and at each stop and start the new threads take the arenas
in another order, so over tens of restarts the resident memory creeps up
to about (threads) x 2 MB more than lcmon uses, and a small leak hides in
that. The soak's loader therefore runs with glibc's thresholds fixed
(MALLOC_TUNABLES below; a GLIBC_TUNABLES of the caller's own is kept, and
--default-malloc runs it as a user would): its resident memory is then what
lcmon holds, and a leak of a few kB a game shows (docs/performance.md).
A sanitizer build's allocator keeps freed memory in a quarantine that
fills for a long time, so for one the bound is looser (sanitized()).
"""

import argparse
import glob
import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

from lcmon import BatchReader  # noqa: E402

SLOW = float(os.environ.get("LCMON_TEST_SLOW", "1"))

# {data}, {pipe}, {pool}: the pool's settings (POOL for the soak's loader).
CONFIG = """\
seed: 1
stages:
  - name: files
    file_path_provider: {{directory: '{data}', settle_seconds: 0.3}}
  - name: sources
    input: files
    chunk_source_loader: {{threads: 1}}
  - name: pool
    input: sources
    shuffling_chunk_pool: {{{pool}}}
  - name: validator
    input: pool
    chunk_validator: {{}}
  - name: unpacker
    input: validator
    chunk_unpacker: {{sampling_rate: 0.25}}
  - name: sampler
    input: unpacker
    shuffling_frame_sampler: {{reservoir_size: 2000}}
  - name: tensors
    input: sampler
    tensor_generator: {{batch_size: 64, packed: true}}
  - name: writer
    input: tensors
    fifo_writer: {{path: '{pipe}'}}
"""
POOL = "chunk_pool_size: 100, threads: 2"
# Games in the data folder at start: more than the window (100) holds; and
# at most, past which each new game pushes the oldest out (a folder pruned
# as a training run's is: a restart's initial load lists every file, about
# half a kB each, so a folder that only grew would raise the memory).
INITIAL_GAMES, MAX_GAMES = 200, 250
# glibc's malloc with its thresholds fixed at their defaults (no dynamic
# raise): a freed block above 128 kB goes back to the system at once.
MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072"
# How much the resident memory may rise from the first to the last third
# of the run after its warm-up (KiB).
RSS_SLACK_KIB = 3 * 1024


def sanitized(binary):
    """Whether the loader is an address or thread sanitizer build: their
    allocators keep freed memory in a quarantine that fills for a long time
    (and ignore glibc's thresholds), so its resident memory grows without a
    leak; the soak then allows a quarter more plus 16 MB, as it did before
    it measured lcmon's own memory."""
    try:
        with open(binary, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return b"__asan_init" in data or b"__tsan_init" in data


# -- the hostile events of issue 35, items 1-4 (a quiet second loader) -------

# What each event must log, once in the run.
WATCH_EVENT_LINES = {
    "truncated and rewritten": "written again with the same games after some could not be read",
    "huge sparse .gz": "h_huge.gz: %d compressed bytes is more than" % (1 << 40),
    "linking subfolder": "back: leads to ",
    "re-pointed symlink": "now leads to another folder",
}


class WatchEvents:
    """A loader with the chunk store off reading data -> runA, its reader
    (checked for lost and doubled batches like the trainer), and the events
    of issue 35 items 1-4 done to its folder one after the other, each
    followed by exact checks of the window and the anchor's count."""

    def __init__(self, soak):
        self.soak = soak
        self.dir = os.path.join(soak.tmp, "events")
        self.data = os.path.join(self.dir, "data")
        self.pipe = os.path.join(self.dir, "events.pipe")
        self.sock = os.path.join(self.dir, "events.sock")
        self.log_path = os.path.join(self.dir, "events.log")
        self.k = 0
        self.games = 0  # the games the window and the anchor must hold
        self.failed = []
        self.done = []
        self.read = self.lost = self.duplicated = 0
        self.proc = None

    def game(self, folder, old=True):
        name = os.path.join(folder, "g%03d.gz" % self.k)
        shutil.copy(self.soak.games[self.k % len(self.soak.games)], name)
        self.k += 1
        if old:
            os.utime(name, (time.time() - 3600, time.time() - 3600))
        return name

    def start(self):
        run_a = os.path.join(self.dir, "runA")
        os.makedirs(run_a)
        for _ in range(6):
            self.game(run_a)
        self.games = 6
        os.symlink("runA", self.data)
        cfg = os.path.join(self.dir, "events.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(data=self.data, pipe=self.pipe,
                                  pool="chunk_pool_size: 1000, threads: 1, store_bytes: 0"))
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([self.soak.lcmon, "--no-ui", "--status-interval", "0",
                                      "--config", cfg, "--socket", self.sock],
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        threading.Thread(target=self.reader, name="events reader", daemon=True).start()

    def reader(self):
        seen, last = set(), {}
        try:
            with BatchReader(self.pipe, timeout=30 * SLOW, wait_for_pipe=30 * SLOW) as r:
                for b in r.batches():
                    key = (b.run_id, b.seq)
                    self.duplicated += key in seen
                    seen.add(key)
                    if b.run_id in last and b.seq > last[b.run_id] + 1:
                        self.lost += b.seq - last[b.run_id] - 1
                    last[b.run_id] = b.seq
                    self.read += 1
                    time.sleep(0.01)  # a trainer, not a spinning loop
        except Exception as e:  # noqa: BLE001 (reported at the end)
            if self.proc.poll() is None:
                self.failed.append("events reader: %s: %s" % (type(e).__name__, e))

    # -- asking the loader --

    def pool(self):
        r = subprocess.run([self.soak.lcmon, "ctl", self.sock, "metrics", "--json"],
                           capture_output=True, text=True, timeout=30 * SLOW)
        for st in json.loads(r.stdout)["all_time"]["stage_metrics"]:
            if st["name"] == "pool":
                counts = {c["name"]: int(c.get("count", 0)) for c in st.get("count_metrics", [])}
                counts.update((g["name"], int(g.get("value", 0)))
                              for g in st.get("gauge_metrics", []))
                return counts
        return {}

    def anchor(self):
        r = subprocess.run([self.soak.lcmon, "ctl", self.sock, "anchor", "get"],
                           capture_output=True, text=True, timeout=30 * SLOW)
        return int(r.stdout.split("\t")[1])

    def wait(self, what, cond, seconds=20):
        deadline = time.monotonic() + seconds * SLOW
        while time.monotonic() < deadline:
            try:
                if cond():
                    return True
            except (OSError, ValueError, IndexError, KeyError, subprocess.TimeoutExpired):
                pass
            time.sleep(0.1)
        self.failed.append("timed out waiting for %s" % what)
        return False

    def exact(self, event):
        """The window and the anchor's count hold self.games, and stay so."""
        if not self.wait("%s: window and anchor %d" % (event, self.games),
                         lambda: self.pool()["chunks_in_window"] == self.games
                         and self.anchor() == self.games):
            return
        time.sleep(1.0)  # nothing more comes (a folder read twice would)
        window, anchor = self.pool()["chunks_in_window"], self.anchor()
        if (window, anchor) != (self.games, self.games):
            self.failed.append("%s: window %d and anchor %d, not %d" % (event, window, anchor,
                                                                       self.games))
        self.done.append(event)

    # -- the events --

    def truncated_and_rewritten(self):
        """Item 4: a game emptied (drawn while empty: dropped), then the same
        bytes again: back in the window, the anchor as it was."""
        game = os.path.join(self.data, "g001.gz")
        with open(game, "rb") as f:
            same = f.read()
        dropped = self.pool().get("bad_unreadable_chunks", 0)
        open(game, "wb").close()
        self.wait("the emptied game dropped",
                  lambda: self.pool()["bad_unreadable_chunks"] > dropped)
        with open(game, "wb") as f:
            f.write(same)
        self.exact("truncated and rewritten")

    def huge_sparse_gz(self):
        """Item 2: a terabyte named .gz (a gzip header, then a hole), then a
        game: refused at once, the game read."""
        huge = os.path.join(self.data, "h_huge.gz")
        with open(huge, "wb") as f:
            f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03")
            f.truncate(1 << 40)
        self.game(self.data, old=False)
        self.games += 1
        self.exact("huge sparse .gz")
        os.unlink(huge)

    def linking_subfolder(self):
        """Item 3: a subfolder moved in with a game and a link back to the
        data folder: its game read, the data folder not read again."""
        sub = os.path.join(self.dir, "sub")
        os.makedirs(sub)
        self.game(sub)
        os.symlink(self.data, os.path.join(sub, "back"))
        os.rename(sub, os.path.join(self.data, "sub"))
        self.games += 1
        self.exact("linking subfolder")

    def repointed_symlink(self):
        """Item 1: `ln -sfn runB data`, runB holding hard links to runA's
        games and two new ones: those two are new, runA's games stay."""
        run_a, run_b = os.path.join(self.dir, "runA"), os.path.join(self.dir, "runB")
        os.makedirs(run_b)
        for name in os.listdir(run_a):
            if name.endswith(".gz"):
                os.link(os.path.join(run_a, name), os.path.join(run_b, name))
        for _ in range(2):
            self.game(run_b)
        self.games += 2
        os.symlink("runB", self.data + ".new")
        os.replace(self.data + ".new", self.data)
        self.exact("re-pointed symlink")

    def run(self, stop):
        """The events, once each, unless the soak ends first."""
        if not self.wait("the events loader's first window",
                         lambda: self.pool()["chunks_in_window"] == self.games, 30):
            return
        for event in (self.truncated_and_rewritten, self.huge_sparse_gz,
                      self.linking_subfolder, self.repointed_symlink):
            if stop.wait(1.0):
                return
            try:
                event()
            except OSError as e:
                self.failed.append("%s: %s" % (event.__name__, e))

    def finish(self):
        """Stop the loader; what went otherwise than it must."""
        if self.proc is None:
            return ["the events loader never started"]
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            rc = self.proc.wait(timeout=15 * SLOW)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = "killed after 15 s"
        self.log.close()
        with open(self.log_path) as f:
            log = f.read()
        failed = list(self.failed)
        if rc != 0:
            failed.append("the events loader's stop: status %s" % rc)
        for event in self.done:
            n = log.count(WATCH_EVENT_LINES[event])
            if n != 1:
                failed.append("%s: logged %d times, not once" % (event, n))
        if len(self.done) < len(WATCH_EVENT_LINES):
            failed.append("events done: %s of %d" % (", ".join(self.done) or "none",
                                                      len(WATCH_EVENT_LINES)))
        if not self.read or self.lost or self.duplicated:
            failed.append("events loader: %d batches read, %d lost, %d read twice"
                          % (self.read, self.lost, self.duplicated))
        print("hostile events (a second loader, store off): %s; batches read %d, lost %d, "
              "read twice %d" % (", ".join(self.done) or "none", self.read, self.lost,
                                 self.duplicated))
        return ["%s (log: %s)" % (f, self.log_path) for f in failed]


class Soak:
    def __init__(self, args):
        self.args = args
        self.lcmon = os.environ.get("LCMON") or os.path.join(ROOT, "build", "lcmon")
        self.tmp = tempfile.mkdtemp(prefix="lcmon-soak-")
        # The fifo writers' lock files go with the scratch folder (a loader
        # killed after 15 s leaves its own).
        os.environ["XDG_RUNTIME_DIR"] = self.tmp
        self.data = os.path.join(self.tmp, "data")
        self.pipe = os.path.join(self.tmp, "lcmon.pipe")
        self.sock = os.path.join(self.tmp, "lcmon.sock")
        self.games = sorted(glob.glob(os.path.join(args.samples, "**", "*.gz"), recursive=True))
        if len(self.games) < 10:
            sys.exit("soak: %s holds %d games; give --samples a folder of at least 10"
                     % (args.samples, len(self.games)))
        self.stop = threading.Event()
        self.rng = random.Random(7)
        self.names = []  # the games in the data folder
        self.k = 0
        self.samples = []  # (t, rss KiB, fds, threads)
        self.restarts = []  # (t of the stop, t when the start returned)
        self.seen = set()  # (run_id, seq)
        self.read = self.lost = self.duplicated = self.torn = 0
        self.actions = {}
        self.errors = []
        self.events_failed = []  # WatchEvents.finish
        self.operator_failures = []  # operator_events' findings
        self.malloc = None  # the GLIBC_TUNABLES the loader runs with

    # -- the data folder -------------------------------------------------

    def new_game(self, old=False):
        name = os.path.join(self.data, "game_%06d.gz" % self.k)
        self.k += 1
        part = os.path.join(self.data, "." + os.path.basename(name) + ".part")
        shutil.copy(self.games[self.k % len(self.games)], part)
        if old:
            os.utime(part, (time.time() - 3600, time.time() - 3600))
        os.replace(part, name)
        self.names.append(name)

    def companion(self):
        fifo_at = self.args.seconds * 0.3
        loop_at = self.args.seconds * 0.5
        t0 = time.monotonic()
        while not self.stop.wait(0.2):
            now = time.monotonic() - t0
            try:
                if fifo_at and now > fifo_at:
                    fifo_at = 0
                    path = os.path.join(self.data, "not_a_game.gz")
                    os.mkfifo(path)
                    fd = os.open(path, os.O_RDWR)
                    os.write(fd, b"x" * 100)
                    os.close(fd)
                    self.count("fifo")
                if loop_at and now > loop_at:
                    loop_at = 0
                    os.symlink(".", os.path.join(self.data, "loop"))
                    self.count("symlink loop")
                r = self.rng.random()
                if r < 0.5 or len(self.names) < 12:
                    self.new_game()
                    self.count("new game")
                    if len(self.names) > MAX_GAMES:
                        os.unlink(self.names.pop(0))
                        self.count("oldest pruned")
                elif r < 0.65:
                    p = self.rng.choice(self.names)
                    with open(p, "rb") as f:
                        same = f.read()
                    with open(p, "wb") as f:
                        f.write(same)
                    self.count("same bytes again")
                elif r < 0.8:
                    p = self.rng.choice(self.names)
                    part = p + ".part"
                    shutil.copy(self.rng.choice(self.games), part)
                    os.replace(part, p)
                    self.count("other bytes")
                else:
                    p = self.names.pop(self.rng.randrange(len(self.names)))
                    os.unlink(p)
                    self.count("deleted")
            except OSError as e:
                self.errors.append("companion: %s" % e)

    def count(self, what):
        self.actions[what] = self.actions.get(what, 0) + 1

    # -- monitor clients, stops and starts ---------------------------------

    def ctl(self, *args):
        return subprocess.run([self.lcmon, "ctl", self.sock, *args], capture_output=True,
                              text=True, timeout=30 * SLOW)

    def clients(self):
        silent = []
        while not self.stop.wait(0.5):
            r = self.rng.random()
            try:
                if r < 0.4:
                    self.ctl("metrics", "--json")
                    self.count("ctl metrics")
                elif r < 0.7:
                    s = socket.socket(socket.AF_UNIX)
                    s.connect(self.sock)
                    s.close()
                    self.count("hang-up client")
                else:
                    s = socket.socket(socket.AF_UNIX)
                    s.connect(self.sock)
                    silent.append((time.monotonic(), s))
                    self.count("silent client")
            except (OSError, subprocess.TimeoutExpired):
                pass  # the loader may be between a stop and a start
            while silent and time.monotonic() - silent[0][0] > 2:
                silent.pop(0)[1].close()
        for _, s in silent:
            s.close()

    def stops(self):
        while not self.stop.wait(self.args.stop_every):
            t = time.monotonic() - self.t0
            for cmd in ("stop", "start"):
                r = self.ctl(cmd)
                if r.returncode != 0:
                    self.errors.append("ctl %s: %s" % (cmd, r.stderr.strip()))
            self.restarts.append((t, time.monotonic() - self.t0))
            self.count("stop and start")

    # -- an operator's hostile events (issue 35, items 5 and 6) -------------

    FORGED = "12:00:00.000 error [main] forged"

    def operator_events(self):
        """A second lcmon on a hard link of the pipe, then names that would
        forge log lines, retitle a terminal or break JSON."""
        t0 = time.monotonic()
        for at, event in ((0.4, self.pipe_link_event), (0.6, self.name_event)):
            if self.stop.wait(max(0, t0 + self.args.seconds * at - time.monotonic())):
                return
            try:
                event()
            except Exception as e:  # any: an event that fails is a finding, never silent
                self.operator_failures.append("%s: %s: %s" % (event.__name__,
                                                              type(e).__name__, e))

    def pipe_link_event(self):
        link = os.path.join(self.tmp, "linked.pipe")
        os.link(self.pipe, link)
        cfg = os.path.join(self.tmp, "second.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(data=self.data, pipe=link, pool=POOL))
        try:
            r = subprocess.run([self.lcmon, "--no-ui", "--status-interval", "0", "--config", cfg,
                                "--max-seconds", "10"], capture_output=True, text=True,
                               timeout=60 * SLOW)
        finally:
            os.unlink(link)
        self.count("second lcmon on a hard-linked pipe")
        if r.returncode == 0 or "already writes to %s" % link not in r.stderr:
            self.operator_failures.append(
                "a second lcmon on a hard link of the pipe was not refused (status %d): %s"
                % (r.returncode, r.stderr.strip()[-300:]))

    def name_event(self):
        data = os.fsencode(self.data)
        game = self.games[0]
        for name in (b"zz\x1b]0;retitled\x07\xff.gz", ("bad\n%s.gz" % self.FORGED).encode()):
            shutil.copy(game, os.path.join(data, name))
        with open(os.path.join(data, ("notes\n%s.txt" % self.FORGED).encode()), "w") as f:
            f.write("not a game\n")
        self.count("file names with control characters")
        deadline = time.monotonic() + 30 * SLOW
        while time.monotonic() < deadline and not self.stop.is_set():
            r = subprocess.run([self.lcmon, "ctl", self.sock, "metrics", "--json"],
                               capture_output=True, timeout=30 * SLOW)
            if r.returncode == 0:
                if b"\x1b" in r.stdout:
                    self.operator_failures.append("ctl metrics --json holds an escape byte")
                json.loads(r.stdout.decode("utf-8"))  # ValueError: said
                if b"zz\\\\x1b]0;retitled" in r.stdout:  # the newest game, escaped
                    return
            time.sleep(0.5)
        self.operator_failures.append("the game named with an escape sequence never showed in "
                                      "ctl metrics (last_chunk_key)")

    def operator_checks(self, log_path):
        """What the operator's events leave in lcmon's log."""
        failed = list(self.operator_failures)
        for what in ("second lcmon on a hard-linked pipe", "file names with control characters"):
            if not self.actions.get(what) and not failed:
                failed.append("the operator's event never ran: %s" % what)
        with open(log_path, "rb") as f:
            log = f.read()
        if b"\x1b" in log:
            failed.append("an escape byte reached lcmon's log")
        try:
            log.decode("utf-8")
        except UnicodeDecodeError as e:
            failed.append("lcmon's log is not UTF-8: %s" % e)
        if any(line.startswith(self.FORGED.encode()) for line in log.split(b"\n")):
            failed.append("a file name forged a line of lcmon's log")
        return failed

    # -- the trainer ---------------------------------------------------------

    def trainer(self):
        while not self.stop.is_set():
            try:
                with BatchReader(self.pipe, timeout=30 * SLOW, restart_timeout=60 * SLOW,
                                 wait_for_pipe=30 * SLOW) as r:
                    until = time.monotonic() + self.rng.uniform(5, 15)
                    last = {}
                    for b in r.batches():
                        key = (b.run_id, b.seq)
                        if key in self.seen:
                            self.duplicated += 1
                        self.seen.add(key)
                        prev = last.get(b.run_id, self.first_seq(b.run_id))
                        if prev is not None and b.seq > prev + 1:
                            self.lost += b.seq - prev - 1
                        last[b.run_id] = b.seq
                        self.highest[b.run_id] = max(self.highest.get(b.run_id, -1), b.seq)
                        self.read += 1
                        if self.stop.is_set() or time.monotonic() > until:
                            break
                    self.torn += r.torn_batches
                self.count("trainer restart")
            except Exception as e:  # noqa: BLE001 (reported at the end)
                if not self.stop.is_set():
                    self.errors.append("trainer: %s: %s" % (type(e).__name__, e))
                    time.sleep(0.5)

    def first_seq(self, run_id):
        """The highest seq read of this run by an earlier reader: a new reader
        continues right after it."""
        return self.highest.get(run_id)

    # -- the loader's health ----------------------------------------------

    def sample(self, pid, t0):
        while not self.stop.wait(1.0):
            try:
                with open("/proc/%d/status" % pid) as f:
                    st = {l.split(":")[0]: l.split()[1] for l in f
                          if l.startswith(("VmRSS:", "Threads:"))}
                fds = len(os.listdir("/proc/%d/fd" % pid))
                self.samples.append((time.monotonic() - t0, int(st["VmRSS"]), fds,
                                     int(st["Threads"])))
            except (OSError, KeyError, ValueError):
                pass

    def run(self):
        os.makedirs(self.data)
        for _ in range(INITIAL_GAMES):
            self.new_game(old=True)
        cfg = os.path.join(self.tmp, "soak.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(data=self.data, pipe=self.pipe, pool=POOL))
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=8"
        if not self.args.default_malloc and not env.get("GLIBC_TUNABLES"):
            env["GLIBC_TUNABLES"] = MALLOC_TUNABLES
        self.malloc = env.get("GLIBC_TUNABLES") and "GLIBC_TUNABLES=" + env["GLIBC_TUNABLES"]
        log = open(os.path.join(self.tmp, "lcmon.log"), "w")
        proc = subprocess.Popen([self.lcmon, "--no-ui", "--status-interval", "0", "--config",
                                 cfg, "--socket", self.sock], stdout=subprocess.DEVNULL,
                                stderr=log, env=env)
        t0 = self.t0 = time.monotonic()
        self.highest = {}
        threads = [threading.Thread(target=fn, name=fn.__name__, daemon=True) for fn in
                   (self.companion, self.clients, self.stops, self.trainer,
                    self.operator_events)]
        threads.append(threading.Thread(target=self.sample, args=(proc.pid, t0), daemon=True))
        deadline = time.monotonic() + 20 * SLOW
        while not os.path.exists(self.sock) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        for t in threads:
            t.start()
        events = WatchEvents(self)
        events.start()
        threading.Thread(target=self.watch_events, args=(events,), name="events",
                         daemon=True).start()
        try:
            while time.monotonic() - t0 < self.args.seconds and proc.poll() is None:
                time.sleep(0.5)
        finally:
            self.stop.set()
            died = proc.poll()
            if died is None:
                proc.send_signal(signal.SIGINT)
            try:
                rc = proc.wait(timeout=15 * SLOW)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = "killed after 15 s"
            # The trainer may wait for a next run that will not come: it is
            # a daemon thread; the others end within a beat.
            for t in threads:
                t.join(timeout=(5 if t.name == "trainer" else 60) * SLOW)
            log.close()
            self.events_failed = events.finish()
        return self.report(rc, died, os.path.join(self.tmp, "lcmon.log"))

    def watch_events(self, events):
        """Issue 35's events 1-4, on the second loader, from a fifth of the
        run (at most a minute in)."""
        if not self.stop.wait(min(self.args.seconds * 0.2, 60)):
            events.run(self.stop)

    def print_samples(self):
        """The samples a row an interval: the least and the most of each
        (one sample a row would show the dip of a restart whenever the rows
        fall in step with the stops: memory is lower while the new pipeline
        fills its window and reservoir), and the restarts in it."""
        secs = self.args.seconds
        every = 5 if secs <= 120 else 30 if secs <= 900 else 60
        print("%8s %15s %9s %9s %9s" % ("until s", "RSS MB min-max", "fds", "threads",
                                         "restarts"))
        rows = {}
        for s in self.samples:
            rows.setdefault(int(s[0] // every), []).append(s)
        for k in sorted(rows):
            r = rows[k]
            lo, hi = k * every, (k + 1) * every
            n = sum(1 for t, _ in self.restarts if lo <= t < hi)
            print("%8.0f %7.1f-%-7.1f %4d-%-4d %4d-%-4d %9d"
                  % (min(hi, r[-1][0]), min(x[1] for x in r) / 1024, max(x[1] for x in r) / 1024,
                     min(x[2] for x in r), max(x[2] for x in r), min(x[3] for x in r),
                     max(x[3] for x in r), n))

    def report(self, rc, died, log_path):
        failed = []
        print("soak: %.0f s; actions: %s" % (self.args.seconds, ", ".join(
            "%s %d" % kv for kv in sorted(self.actions.items()))))
        print("the loader's malloc: %s" % (self.malloc or "glibc's, as configured"))
        self.print_samples()
        print("batches read %d, lost %d, read twice %d (torn by a stop or restart: %d)"
              % (self.read, self.lost, self.duplicated, self.torn))
        if died is not None:
            failed.append("lcmon died during the run (status %s)" % died)
        elif rc != 0:
            failed.append("lcmon's stop: status %s" % rc)
        if not self.read:
            failed.append("no batch was read")
        if self.lost or self.duplicated:
            failed.append("%d batches lost, %d read twice" % (self.lost, self.duplicated))
        # Flat: the last third against the first third after a warm-up of
        # a minute (a quarter of a shorter run): the window, the store and
        # the reservoir are full by then (the module's note on memory).
        warm = min(60, self.args.seconds * 0.25)
        rest = [s for s in self.samples if s[0] >= warm]
        if len(rest) >= 6:
            third = len(rest) // 3
            first, last = rest[:third], rest[-third:]
            loose = sanitized(self.lcmon)
            for i, (what, slack) in enumerate((("RSS KiB", RSS_SLACK_KIB), ("descriptors", 8),
                                               ("threads", 4)), start=1):
                a, b = max(s[i] for s in first), max(s[i] for s in last)
                if i == 1 and loose:
                    slack = a // 4 + 16 * 1024
                if b > a + slack:
                    failed.append("%s grew: %s in the first third after %.0f s, %s in the last"
                                  % (what, a, warm, b))
        else:
            failed.append("too few samples (%d) to judge growth" % len(rest))
        failed.extend(self.events_failed)
        failed += self.operator_checks(log_path)
        for e in self.errors[:10]:
            print("soak: %s" % e)
        if failed:
            print("soak: FAILED: %s (lcmon's log: %s)" % ("; ".join(failed), log_path))
            return 1
        print("soak: passed")
        shutil.rmtree(self.tmp, ignore_errors=True)
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1800, help="how long (default 30 min)")
    ap.add_argument("--stop-every", type=float, default=60,
                    help="seconds between a stop and start of the pipeline (default 60)")
    ap.add_argument("--default-malloc", action="store_true",
                    help="run the loader with glibc's malloc as configured (its thresholds "
                         "rise with use: memory creeps up within a bound; see the module)")
    ap.add_argument("--samples", default=os.path.join(ROOT, "tests", "data"),
                    help="the games to copy in (default tests/data)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)  # the reader's notes on each run
    sys.exit(Soak(args).run())


if __name__ == "__main__":
    main()
