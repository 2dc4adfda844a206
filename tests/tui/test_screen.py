"""The lcmon screen, driven through tmux (tmux's regress style).

Each test starts the real lcmon (screen mode) in a pane of a fixed size on a
private tmux server (tmux -L <unique>), on the bundled sample data, with the
numpy reader on its pipe so batches flow; it then reads the pane with
capture-pane, sends keys with send-keys, and checks what the screen shows:
the stage rows, fills and anchor; pause and resume; anchor reset; themes
(and --theme, --no-color); the log pane (l, PgUp/PgDn, Home, End); the
refresh rate (+, -); stop and start; resizes; quitting; and what the
screen's own thread costs in CPU. Screens whose content is deterministic
(the help screen, a pipeline that fails to start) are compared with golden
files in tests/tui/golden; GENERATE=1 rewrites them.

Environment: LCMON (the executable), LCMON_TEST_DATA (tests/data),
LCMON_SOURCE_ROOT (the source tree, for python/). Every wait is bounded.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

LCMON = os.path.abspath(os.environ.get("LCMON", "build/lcmon"))
SOURCE_ROOT = os.environ.get("LCMON_SOURCE_ROOT", os.getcwd())
DATA = os.environ.get("LCMON_TEST_DATA", os.path.join(SOURCE_ROOT, "tests", "data"))
PYTHON = "/usr/bin/python3"
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
GENERATE = os.environ.get("GENERATE") == "1"
# Sanitizer builds run slower; every wait scales with this.
SLOW = float(os.environ.get("LCMON_TEST_SLOW", "1"))

# Small, so that batches flow soon even under ThreadSanitizer.
RESERVOIR = 2000
STAGES = ["files", "sources", "pool", "validator", "unpacker", "sampler", "tensors", "writer"]

CONFIG = """\
seed: 42
metrics_interval_ms: 100
stages:
  - name: files
    file_path_provider: {{directory: '{data}'}}
    output: {{capacity: 256}}
  - name: sources
    input: files
    chunk_source_loader: {{threads: 1}}
    output: {{capacity: 64}}
  - name: pool
    input: sources
    shuffling_chunk_pool: {{chunk_pool_size: 50000, threads: 1}}
    output: {{capacity: 16}}
  - name: validator
    input: pool
    chunk_validator: {{threads: 1}}
    output: {{capacity: 16}}
  - name: unpacker
    input: validator
    chunk_unpacker: {{sampling_rate: 0.25, threads: 1}}
    output: {{capacity: 2048}}
  - name: sampler
    input: unpacker
    shuffling_frame_sampler: {{reservoir_size: {reservoir}}}
    output: {{capacity: 2048}}
  - name: tensors
    input: sampler
    tensor_generator: {{batch_size: 64, layout: current, threads: 1}}
    output: {{capacity: 4}}
  - name: writer
    input: tensors
    fifo_writer: {{path: '{pipe}'}}
"""

TMUX_CONF = """\
set -g default-terminal tmux-256color
set -g status off
set -g history-limit 0
set -g remain-on-exit on
"""

_counter = 0


class Pane:
    """One lcmon in one tmux pane on a private server."""

    def __init__(self, test, width, height, args=(), env=None, config=None, reader=True,
                 cwd=None, command=None, data=DATA):
        global _counter
        _counter += 1
        self.sock = "lcmon-tui-%d-%d" % (os.getpid(), _counter)
        self.tmp = tempfile.mkdtemp(prefix="lcmon-tui-")
        self.width, self.height = width, height
        self.pipe = os.path.join(self.tmp, "batches.pipe")
        self.reader = None
        conf = os.path.join(self.tmp, "tmux.conf")
        with open(conf, "w") as f:
            f.write(TMUX_CONF)
        if config is None:
            os.mkfifo(self.pipe, 0o600)
            config = CONFIG.format(data=data, pipe=self.pipe, reservoir=RESERVOIR)
        cfg = os.path.join(self.tmp, "pipeline.yaml")
        with open(cfg, "w") as f:
            f.write(config)
        # The shell traps SIGINT (a handler, which exec resets) so that Ctrl-C
        # reaches lcmon and the shell lives on to report its exit status.
        if command is None:
            command = "%s --config %s --max-seconds %d %s" % (LCMON, cfg, int(120 * SLOW),
                                                            " ".join(args))
        cmd = "trap : INT; %s; echo \"lcmon exited $?\"; exec sleep 3600" % command
        tmux_env = ["-e", "LANG=C.UTF-8"]
        for k, v in (env or {}).items():
            tmux_env += ["-e", "%s=%s" % (k, v)]
        self.tmux("-f", conf, "new-session", "-d", "-x", str(width), "-y", str(height),
                  "-c", cwd or self.tmp, *tmux_env, "sh -c '%s'" % cmd)
        test.addCleanup(self.close)
        if reader:
            renv = dict(os.environ, PYTHONPATH=os.path.join(SOURCE_ROOT, "python"))
            self.reader = subprocess.Popen(
                [PYTHON, "-m", "lcmon", self.pipe, "--tolerate-truncation"],
                env=renv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def tmux(self, *args, check=True):
        r = subprocess.run(["tmux", "-L", self.sock, *args], capture_output=True, text=True,
                           timeout=10)
        if check and r.returncode != 0:
            raise AssertionError("tmux %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout

    def capture(self, escapes=False):
        args = ["capture-pane", "-p", "-t", "0"] + (["-e"] if escapes else [])
        return self.tmux(*args)

    def lines(self):
        return self.capture().split("\n")[:self.height]

    def send(self, *keys):
        self.tmux("send-keys", "-t", "0", *keys)

    def resize(self, width, height):
        self.width, self.height = width, height
        self.tmux("resize-window", "-t", "0", "-x", str(width), "-y", str(height))

    def wait_for(self, what, predicate, timeout=10):
        """Poll the pane until predicate(screen text) is true."""
        deadline = time.monotonic() + timeout * SLOW
        text = ""
        while time.monotonic() < deadline:
            text = self.capture()
            if predicate(text):
                return text
            time.sleep(0.05)
        raise AssertionError("timed out waiting for %s; the screen:\n%s" % (what, text))

    def wait_rows(self):
        return self.wait_for("the stage rows and a reader", lambda t: all(
            re.search(r"^. %s\b" % s, t, re.M) for s in STAGES) and "reader connected" in t,
            timeout=20)

    def close(self):
        self.tmux("kill-server", check=False)
        if self.reader:
            self.reader.kill()
            self.reader.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


# ---- reading the screen ----

def row(text, name):
    """The stage row of name (marker and name at the start)."""
    for line in text.split("\n"):
        if re.match(r"^. %s\b" % re.escape(name), line):
            return line
    raise AssertionError("no row for %s in:\n%s" % (name, text))


# An SGR sequence that sets an 8- or 16-colour foreground or background.
COLOUR_SGR = r"\x1b\[[0-9;]*(3[0-7]|4[0-7]|9[0-7]|10[0-7])m"


def last_line(text):
    return text.rstrip("\n").split("\n")[-1]


def items_per_second(text, name):
    line = row(text, name)
    head = next(l for l in text.split("\n") if "STAGE" in l and "STATE" in l)
    if "  PER SECOND" in head:  # the number, right-aligned in 7 columns, then its unit
        start = head.index("  PER SECOND")
        return line[start:start + 7].strip()
    end = head.index("ITEMS/S") + len("ITEMS/S")
    return line[:end].split()[-1]


def rate_value(s):
    mult = {"k": 1e3, "M": 1e6, "G": 1e9}
    if s and s[-1] in mult:
        return float(s[:-1]) * mult[s[-1]]
    return float(s)


def mask(text):
    """Times change from run to run: clock times and the uptime."""
    text = re.sub(r"\b\d\d:\d\d:\d\d\b", "HH:MM:SS", text)
    text = re.sub(r"up \d+:\d\d", "up M:SS", text)
    return "\n".join(l.rstrip() for l in text.rstrip("\n").split("\n")) + "\n"


def golden(test, name, text):
    path = os.path.join(GOLDEN, name)
    if GENERATE:
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return
    with open(path, encoding="utf-8") as f:
        want = f.read()
    test.maxDiff = None
    test.assertEqual(text, want, "the screen differs from %s (GENERATE=1 rewrites it)" % path)


def skeleton(lines):
    """What must not depend on timing: each line's first columns with the
    numbers masked, and which region it belongs to."""
    out = []
    for l in lines:
        l = re.sub(r"\d", "9", l)
        out.append(l[:12].rstrip())
    return out


def check_layout(test, pane, text):
    lines = text.split("\n")[:pane.height]
    test.assertEqual(len(lines), pane.height)
    test.assertTrue(lines[0].startswith(" lcmon "), lines[0])
    test.assertIn("STAGE", lines[1])
    test.assertIn("q quit", lines[-1])
    test.assertTrue(lines[-1].rstrip().endswith("/s"), lines[-1])
    for l in lines:
        test.assertLessEqual(len(l), pane.width)
    # Below the log title every line is a log line, a continuation, or blank.
    title = [i for i, l in enumerate(lines) if l.startswith("── log")]
    if title:
        for l in lines[title[0] + 1:-2]:
            test.assertTrue(l == "" or re.match(r"^(\d\d:\d\d:\d\d |\s{9})", l), repr(l))


class Screen(unittest.TestCase):
    def select(self, pane, name):
        for _ in range(len(STAGES) + 1):
            text = pane.capture()
            if row(text, name).startswith("▶"):
                return
            pane.send("j" if STAGES.index(name) > self.selected_index(text) else "k")
            time.sleep(0.15)
        self.fail("cannot select %s" % name)

    def selected_index(self, text):
        for i, s in enumerate(STAGES):
            if row(text, s).startswith("▶"):
                return i
        return -1

    def test_rows_fills_and_anchor(self):
        p = Pane(self, 160, 45)
        text = p.wait_rows()
        lines = text.split("\n")
        self.assertTrue(lines[0].startswith(" lcmon  RUNNING"), lines[0])
        self.assertIn("pos/s", lines[0])
        self.assertIn("batches.pipe", lines[0])
        for s in STAGES:
            self.assertIn(s, text)
        for q in ("↓ path", "↓ chunk_source", "↓ chunk", "↓ frame", "↓ batch"):
            self.assertIn(q, text)
        self.assertIn("ingestion", text)
        self.assertIn("loading", text)
        # The sample data: 43 chunks in a window of 50000, counted since the
        # start (no anchor given); the reservoir fills to its capacity.
        self.assertRegex(row(text, "pool"), r"43/50000")
        self.assertRegex(row(text, "pool"), r"\+?43 since start")
        full = "%d/%d" % (RESERVOIR, RESERVOIR)
        text = p.wait_for("a full reservoir", lambda t: full in row(t, "sampler"))
        self.assertIn("full", row(text, "sampler"))
        # The pool's loading row: its chunk store's fill against its budget,
        # and, once every chunk is stored, every use a hit.
        loading = lambda t: next(l for l in t.split("\n") if re.match(r"^\s+loading\b", l))
        text = p.wait_for("the chunk store serving every use",
                          lambda t: re.search(r"[\d.]+ kB(/[\d.]+ [MGT]B)? in store\s+100% hits",
                                              loading(t)))
        self.assertIn("tests/data", row(text, "files"))
        self.assertRegex(row(text, "writer"), r"B/s")
        self.assertRegex(row(text, "writer"), r"blocked")
        check_layout(self, p, text)

    def test_pause_and_resume(self):
        p = Pane(self, 160, 45)
        p.wait_rows()
        p.wait_for("unpacker moving", lambda t: rate_value(items_per_second(t, "unpacker")) > 0)
        self.select(p, "unpacker")
        p.send("Space")
        # The message line says what happened.
        p.wait_for("unpacker PAUSED at 0 items/s", lambda t: "PAUSED" in row(t, "unpacker")
                   and items_per_second(t, "unpacker") == "0" and "paused" in t, timeout=8)
        # Upstream fills and blocks: the queue into the unpacker is full.
        p.wait_for("the queue before the unpacker full", lambda t: "FULL" in t, timeout=8)
        p.send("Space")
        p.wait_for("unpacker running again", lambda t: "PAUSED" not in row(t, "unpacker")
                   and rate_value(items_per_second(t, "unpacker")) > 0, timeout=8)

    def test_anchor_reset(self):
        p = Pane(self, 160, 45)
        p.wait_rows()
        before = int(re.search(r"\+?(\d+) since", row(p.capture(), "pool")).group(1))
        self.assertEqual(before, 43)
        p.send("r")
        # The message line and the log pane are written in one refresh, but
        # a capture can land between the two: wait for both.
        text = p.wait_for("the reset count", lambda t: "chunks were counted since the last" in t
                          and "counted since the previous anchor" in t)
        self.assertIn("anchor reset to training-run-mini.tar: 43 chunks were counted", text)
        # The log pane keeps it.
        self.assertRegex(text, r"note .*anchor reset to training-run-mini.tar; 43 chunks")
        text = p.wait_for("the count restarting", lambda t: re.search(
            r"\+?(\d+) since (?!start)", row(t, "pool")))
        after = int(re.search(r"\+?(\d+) since", row(text, "pool")).group(1))
        self.assertLess(after, 5)

    def test_anchor_set_prompt(self):
        p = Pane(self, 160, 45)
        p.wait_rows()
        p.send("a")
        # It offers the newest key.
        p.wait_for("the prompt with the newest key",
                   lambda t: "anchor key: training-run-mini.tar" in t)
        p.send("Escape")
        p.wait_for("the prompt gone", lambda t: "anchor unchanged" in t)
        # Set: the anchor moves, the count does not start again, and the row
        # says what it counts from rather than "+43 since <the new key>".
        p.send("a")
        p.wait_for("the prompt", lambda t: "anchor key: training-run-mini.tar" in t)
        p.send("Enter")
        text = p.wait_for("the anchor set", lambda t: "since start, anchor" in row(t, "pool"))
        self.assertRegex(row(text, "pool"), r"\+?43 since start, anchor")
        self.assertNotIn("since training-run", row(text, "pool"))

    def test_themes(self):
        p = Pane(self, 160, 45)
        p.wait_rows()
        before = p.capture(escapes=True)
        self.assertIn("default", p.lines()[-1])
        self.assertRegex(before, r"\x1b\[[0-9;]*4[0-7]m")  # coloured backgrounds
        p.send("t")
        p.wait_for("the monochrome theme", lambda t: "monochrome" in last_line(t))
        time.sleep(0.3 * SLOW)
        mono = p.capture(escapes=True)
        self.assertNotEqual(before, mono)
        self.assertNotRegex(mono, COLOUR_SGR)
        self.assertIn("·", mono)  # monochrome's own bar glyph for empty cells
        p.send("t")
        p.wait_for("the light theme", lambda t: "light" in last_line(t))
        time.sleep(0.3 * SLOW)
        light = p.capture(escapes=True)
        self.assertRegex(light, r"\x1b\[[0-9;]*(107|47)m")  # white background

    def test_no_color_and_ascii(self):
        p = Pane(self, 120, 40, args=["--ascii"], env={"NO_COLOR": "1"})
        p.wait_rows()
        time.sleep(0.3 * SLOW)
        text = p.capture(escapes=True)
        self.assertNotRegex(text, COLOUR_SGR)
        self.assertIn("monochrome", p.lines()[-1])
        plain = p.capture()
        for glyph in "█▏▎▍▌▋▊▉░▒▓▁▂▃▄▅▆▇↓▶─":
            self.assertNotIn(glyph, plain)
        self.assertIn("[", row(plain, "validator"))
        # Without colour, t has no colour theme to offer.
        p.send("t")
        p.wait_for("the theme staying", lambda t: "theme stays" in t)
        self.assertIn("monochrome", p.lines()[-1])

    def log_title(self, text):
        """The log pane's title row and its index, or (None, -1)."""
        for i, l in enumerate(text.split("\n")):
            if l.startswith("── log"):
                return l, i
        return None, -1

    def test_log_pane_hides_and_shows(self):
        p = Pane(self, 160, 45)
        text = p.wait_rows()
        p.wait_for("the log pane", lambda t: self.log_title(t)[0] and "pipeline started" in t)
        self.assertIn("l log", last_line(text))
        p.send("l")

        def below_table(t):
            """The lines between the last stage row and the message line."""
            lines = t.split("\n")[:p.height]
            last_row = max(i for i, l in enumerate(lines)
                           if re.match(r"^. (%s)\b" % "|".join(STAGES), l))
            return lines[last_row + 1:-2]

        # The rows stay, the pane is gone: nothing between the table and the
        # message line. Waited for whole: tmux may capture a frame whose
        # title is redrawn but whose old log lines are not cleared yet.
        text = p.wait_for("the log pane hidden", lambda t: self.log_title(t)[0] is None
                          and all(l.strip() == "" for l in below_table(t)))
        self.assertNotIn("pipeline started", text)
        check_layout(self, p, text)
        p.send("l")
        text = p.wait_for("the log pane back", lambda t: self.log_title(t)[0] is not None
                          and "pipeline started" in t)
        check_layout(self, p, text)
        for s in STAGES:
            row(text, s)

    def test_log_scrolling(self):
        """PgUp scrolls back by a page less two rows, PgDn forward, Home goes
        to the oldest line (as far as PgUp goes), End back to the newest."""
        p = Pane(self, 120, 32)
        p.wait_rows()
        # More log lines than the pane shows: each anchor reset logs two (the
        # screen's note at once, the pool's line when the log is next read).
        def log_count(t):
            m = re.search(r"── log: (\d+) lines", t)
            return int(m.group(1)) if m else -1

        text = p.wait_for("the startup lines", lambda t: "reader connected to" in t)
        start = log_count(text)
        for i in range(8):
            p.send("r")
            p.wait_for("reset %d in the log" % (i + 1),
                       lambda t, n=i + 1: log_count(t) >= start + 2 * n)
        newest = "pool: anchor reset to 'training-run-mini.tar' after 0 chunks"
        text = p.wait_for("the newest line at the bottom", lambda t: self.log_rows(p, t)
                          and newest in self.log_rows(p, t)[-1])
        self.assertIn("PgUp/PgDn scroll", self.log_title(text)[0])
        bottom = self.log_rows(p, text)
        page = len(bottom) + 1 - 2  # the pane's height (title included) less two
        self.assertGreater(page, 0)

        fast = [False]

        def settle(key):
            """Send key, then + or - as a marker: keys are handled in order
            and the screen drawn after, so once the marker's rate shows, so
            does what key did."""
            fast[0] = not fast[0]
            want = "10" if fast[0] else "5"
            p.send(key, "+" if fast[0] else "-")
            text = p.wait_for("%s handled" % key, lambda t: self.keybar_rate(t) == want)
            return (self.log_title(text)[0] or ""), self.log_rows(p, text)

        def scrolled(title):
            m = re.search(r"scrolled back (\d+) rows \(End: newest\)", title)
            return int(m.group(1)) if m else 0

        title, back = settle("PPage")
        self.assertEqual(scrolled(title), page, title)
        # What was at the top is now `page` rows lower.
        self.assertEqual(back[page:], bottom[:len(bottom) - page])
        title, rows = settle("NPage")
        self.assertIn("PgUp/PgDn scroll", title)
        self.assertEqual(rows, bottom)

        # Home: the oldest lines, the first lcmon logged.
        title, top = settle("Home")
        oldest = scrolled(title)
        self.assertGreater(oldest, page)
        self.assertIn("files: scanning", "\n".join(top))
        self.assertIn("pipeline started", "\n".join(top))
        self.assertNotIn("files: scanning", "\n".join(bottom))
        # Nothing before them: PgUp stays there.
        self.assertEqual(settle("PPage"), (title, top))
        # End: the newest again.
        title, rows = settle("End")
        self.assertIn("PgUp/PgDn scroll", title)
        self.assertEqual(rows, bottom)
        # PgUp after PgUp reaches the same place as Home, a page at a time.
        k = 0
        while k * page < oldest:
            k += 1
            title, rows = settle("PPage")
            self.assertEqual(scrolled(title), min(k * page, oldest), title)
        self.assertEqual(rows, top)
        title, rows = settle("End")
        self.assertEqual(rows, bottom)
        self.assertIn(newest, rows[-1])

    def log_rows(self, pane, text):
        """The log pane's rows below its title, down to the message line."""
        _, i = self.log_title(text)
        if i < 0:
            return []
        return [l.rstrip() for l in text.split("\n")[i + 1:pane.height - 2]]

    def keybar_rate(self, text):
        m = re.search(r"\s(\d+(?:\.\d+)?)/s\s*$", last_line(text))
        return m and m.group(1)

    def test_refresh_rate_keys(self):
        p = Pane(self, 160, 45)
        text = p.wait_rows()
        self.assertEqual(self.keybar_rate(text), "5")  # the default, at most 10
        # + up to 10 a second and no further; - down to 0.5 and no further.
        for key, want in (("+", "10"), ("+", "10"), ("-", "5"), ("-", "2"), ("-", "1"),
                          ("-", "0.5"), ("-", "0.5"), ("=", "1")):
            p.send(key)
            text = p.wait_for("%s/s after %s" % (want, key), lambda t, w=want:
                              self.keybar_rate(t) == w and "%s redraws per second" % w in t)
        check_layout(self, p, text)

    def test_theme_option_light(self):
        p = Pane(self, 160, 45, args=["--theme", "light"])
        p.wait_rows()
        self.assertIn("light", p.lines()[-1])
        time.sleep(0.3 * SLOW)
        esc = p.capture(escapes=True).split("\n")
        plain = p.capture().split("\n")
        # Black text on a white background in every stage row.
        for s in STAGES:
            i = next(k for k, l in enumerate(plain) if re.match(r"^. %s\b" % s, l))
            self.assertRegex(esc[i], r"\x1b\[[0-9;]*107m", s)
            self.assertRegex(esc[i], r"\x1b\[[0-9;]*30m", s)
        # t goes on from light: back to the default theme.
        p.send("t")
        p.wait_for("the default theme", lambda t: "default" in last_line(t)
                   and "theme: default" in t)
        time.sleep(0.3 * SLOW)
        esc = p.capture(escapes=True)
        self.assertNotRegex(esc, r"\x1b\[[0-9;]*107m")

    def test_no_color_option(self):
        # The flag alone: NO_COLOR empty counts as unset.
        p = Pane(self, 120, 40, args=["--no-color"], env={"NO_COLOR": ""})
        p.wait_rows()
        time.sleep(0.3 * SLOW)
        text = p.capture(escapes=True)
        self.assertNotRegex(text, COLOUR_SGR)
        self.assertNotRegex(text, r"\x1b\[[0-9;]*[34]8;")  # nor 256 or RGB colours
        self.assertIn("monochrome", p.lines()[-1])
        plain = p.capture()
        self.assertIn("▶", plain)  # Unicode stays: only colour is off
        self.assertIn("·", plain)  # monochrome's own glyph for empty bar cells
        p.send("t")
        p.wait_for("the theme staying", lambda t: "theme stays" in t)
        self.assertIn("monochrome", p.lines()[-1])
        text = p.capture(escapes=True)
        self.assertNotRegex(text, COLOUR_SGR)

    def test_screen_thread_cpu(self):
        """The screen's own thread (lcmon's main thread) at the default
        refresh, on a running pipeline: under 3% of one core. Measured from
        /proc over 5 seconds; under sanitizers the number is only reported."""
        p = Pane(self, 160, 45)
        text = p.wait_rows()
        rate = float(self.keybar_rate(text))
        self.assertLessEqual(rate, 10)
        full = "%d/%d" % (RESERVOIR, RESERVOIR)
        p.wait_for("a full reservoir", lambda t: full in row(t, "sampler"))
        shell = p.tmux("display-message", "-p", "-t", "0", "#{pane_pid}").strip()
        pid = int(subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True,
                                 check=True).stdout.split()[0])

        def comm(tid):
            with open("/proc/%d/task/%d/comm" % (pid, tid)) as f:
                return f.read().strip()

        # The pipeline's threads carry their own names (pool-in, lc-metrics,
        # ...); the screen runs in the thread that kept the process's name,
        # the main one (a sanitizer's helper thread may share the name).
        tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
        names = {t: comm(t) for t in tids}
        self.assertEqual(names[pid], "lcmon", names)
        self.assertIn("lc-metrics", names.values())
        self.assertIn(pid, [t for t in tids if names[t] == names[pid]])
        tick = os.sysconf("SC_CLK_TCK")

        def cpu_seconds():
            with open("/proc/%d/task/%d/stat" % (pid, pid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / tick  # utime + stime

        def measure(seconds=5.0):
            c0, t0 = cpu_seconds(), time.monotonic()
            time.sleep(seconds)
            c1, t1 = cpu_seconds(), time.monotonic()
            return (c1 - c0) / (t1 - t0)

        def uptime():
            return re.match(r" lcmon  RUNNING +up (\d+:\d\d)", p.capture()).group(1)

        for label, key, hz in (("the default refresh", None, rate), ("the fastest", "+", 10)):
            if key:
                p.send(key)
                p.wait_for("%g/s" % hz, lambda t: self.keybar_rate(t) == "%g" % hz)
            before = uptime()
            share = measure()
            # The screen went on redrawing a live pipeline all the while.
            self.assertNotEqual(uptime(), before)
            print("screen thread at %s (%g/s): %.2f%% of a core" % (label, hz, 100 * share),
                  file=sys.stderr)
            if SLOW == 1:  # sanitizers multiply the cost: only reported there
                self.assertLess(share, 0.03)

    def test_stop_and_start(self):
        p = Pane(self, 160, 45)
        p.wait_rows()
        p.send("S")
        states = set()

        def saw_running_again(t):
            m = re.match(r" lcmon  (\w+)", t)
            if m:
                states.add(m.group(1))
            return m and m.group(1) == "RUNNING" and ({"STOPPING", "STOPPED"} & states)

        p.wait_for("stopped, then running again", saw_running_again, timeout=10)
        text = p.wait_for("the restart in the log", lambda t: "started again" in t)
        self.assertIn("pipeline stopped (S)", text)
        # A new pipeline: its rows are back.
        for s in STAGES:
            row(text, s)

    def test_restart_keeps_the_trainer(self):
        """S restarts the pipeline while one BatchReader keeps reading the
        pipe: every batch of the first run arrives (its end marker counts
        them), none twice or partial, then the second run from seq 0."""
        sys.path.insert(0, os.path.join(SOURCE_ROOT, "python"))
        import threading
        from lcmon import BatchReader

        p = Pane(self, 160, 45, reader=False)
        got, state = [], {"stop": False, "error": None, "reader": None}

        def trainer():
            try:
                with BatchReader(p.pipe, timeout=60 * SLOW, restart_timeout=60 * SLOW) as r:
                    state["reader"] = r
                    for b in r.batches():
                        got.append((b.run_id, b.seq, b.rows))
                        if state["stop"]:
                            return
            except Exception as e:  # reported below
                state["error"] = e

        t = threading.Thread(target=trainer, daemon=True)
        t.start()

        def wait(what, cond):
            deadline = time.monotonic() + 60 * SLOW
            while not cond():
                self.assertIsNone(state["error"])
                self.assertLess(time.monotonic(), deadline, "waiting for " + what)
                time.sleep(0.05)

        wait("batches of the first run", lambda: len(got) >= 3)
        p.send("S")
        runs = lambda: list(dict.fromkeys(g[0] for g in got))
        wait("batches of the second run",
             lambda: len(runs()) == 2 and sum(g[0] == runs()[1] for g in got) >= 3)
        state["stop"] = True
        t.join(60 * SLOW)
        self.assertIsNone(state["error"])
        for run in runs():
            mine = [g for g in got if g[0] == run]
            self.assertEqual([g[1] for g in mine], list(range(len(mine))))
            self.assertTrue(all(g[2] == 64 for g in mine))
        self.assertEqual(state["reader"].runs, 2)
        self.assertEqual(state["reader"].torn_batches, 0)

    def test_missing_data_directory_is_a_warning(self):
        """A data directory that does not exist yet: the files row and the
        header say what lcmon waits for, instead of a silent 'scanning'."""
        missing = os.path.join(tempfile.gettempdir(), "lcmon-no-such-dir-%d" % os.getpid())
        p = Pane(self, 160, 45, data=missing)
        text = p.wait_for("the warning", lambda t: "waiting for %s" % missing[:30] in t
                          and re.search(r"^. files\b.*waiting for", t, re.M))
        self.assertIn("files: waiting for", text.split("\n")[0])
        self.assertNotIn("scanning", row(text, "files"))

    def test_no_reader_says_what_to_run(self):
        """Without a reader, the header and the writer row say so and give
        the command that starts one; no 'blocked on the reader 0%'."""
        p = Pane(self, 200, 45, reader=False)
        cmd = "python3 -m lcmon %s" % p.pipe
        text = p.wait_for("the hint", lambda t: cmd in t.split("\n")[0] and
                          "no reader: start one with  python3 -m lcmon" in row(t, "writer"))
        self.assertIn("writer: no reader: start one with", text.split("\n")[0])
        self.assertNotIn("blocked on the reader", row(text, "writer"))

    def test_resize(self):
        p = Pane(self, 200, 60)
        p.wait_rows()
        fresh_big = p.capture()
        check_layout(self, p, fresh_big)
        p.resize(80, 24)
        small = p.wait_for("the 80x24 layout", lambda t: len(t.split("\n")[0]) <= 80
                           and "q quit" in t and "TYPE" not in t)
        time.sleep(0.5 * SLOW)
        small = p.capture()
        check_layout(self, p, small)
        # The log keeps a place at 80x24: its title and the newest lines.
        self.assertTrue(any(l.startswith("── log") for l in small.split("\n")), small)
        fresh = Pane(self, 80, 24)
        fresh.wait_rows()
        self.assertEqual(skeleton(p.lines()), skeleton(fresh.lines()))
        self.assertEqual(p.lines()[1], fresh.lines()[1])  # the headings
        p.resize(200, 60)
        p.wait_for("the 200x60 layout", lambda t: "TYPE" in t and re.search(r"LAST \d+ s", t))
        time.sleep(0.5 * SLOW)
        big = p.capture()
        check_layout(self, p, big)
        self.assertEqual(skeleton(p.lines()), skeleton(fresh_big.split("\n")[:60]))
        self.assertEqual(p.lines()[1], fresh_big.split("\n")[1])

    def test_help_golden(self):
        p = Pane(self, 100, 32)
        p.wait_rows()
        p.send("?")
        text = p.wait_for("the help", lambda t: "lcmon: keys" in t and "Press any key" in t)
        golden(self, "help-100x32.txt", mask(text))
        p.send("x")
        p.wait_for("the table again", lambda t: "STAGE" in t)

    def test_failure_golden(self):
        # A fifo_writer path that is a regular file: the pipeline fails to
        # start. Relative paths keep the screen the same on every machine.
        tmp = tempfile.mkdtemp(prefix="lcmon-tui-fail-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.symlink(DATA, os.path.join(tmp, "data"))
        open(os.path.join(tmp, "out.pipe"), "w").close()
        config = CONFIG.format(data="data", pipe="out.pipe", reservoir=RESERVOIR)
        # A chunk store of a fixed size: the default depends on the memory.
        config = config.replace("chunk_pool_size: 50000, threads: 1}",
                                "chunk_pool_size: 50000, threads: 1, store_bytes: 1G}")
        self.assertIn("store_bytes: 1G", config)
        p = Pane(self, 100, 32, config=config, reader=False, cwd=tmp)
        text = p.wait_for("the failure", lambda t: "FAILED" in t and "log: " in t
                          and "not a named" in t)
        self.assertIn("error:", text.split("\n")[1])
        time.sleep(0.5 * SLOW)
        golden(self, "failure-100x32.txt", mask(p.capture()))
        p.send("q")
        p.wait_for("lcmon exiting 1", lambda t: "lcmon exited 1" in t)

    def test_quit_restores_the_terminal(self):
        p = Pane(self, 120, 40)
        p.wait_rows()
        p.send("q")
        text = p.wait_for("lcmon exiting", lambda t: "lcmon exited" in t)
        self.assertIn("lcmon exited 0", text)
        self.assertNotIn("STAGE", text)  # the normal screen is back
        self.assertNotIn("lcmon  RUNNING", text)
        info = p.tmux("display-message", "-p", "-t", "0", "#{alternate_on} #{cursor_flag}")
        self.assertEqual(info.strip(), "0 1")

    def start_headless(self):
        """A headless lcmon serving a socket, with a reader on its pipe;
        stopped at the end of the test. Returns (process, socket path)."""
        tmp = tempfile.mkdtemp(prefix="lcmon-attach-")
        self.addCleanup(shutil.rmtree, tmp, True)
        pipe = os.path.join(tmp, "batches.pipe")
        sock = os.path.join(tmp, "lcmon.sock")
        cfg = os.path.join(tmp, "pipeline.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(data=DATA, pipe=pipe, reservoir=RESERVOIR))
        loader = subprocess.Popen([LCMON, "--no-ui", "--status-interval", "0", "--config", cfg, "--socket", sock],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

        def stop_loader():
            if loader.poll() is None:
                loader.send_signal(signal.SIGINT)
            loader.communicate(timeout=30)
        self.addCleanup(stop_loader)
        deadline = time.monotonic() + 20 * SLOW
        while not (os.path.exists(sock) and os.path.exists(pipe)):
            self.assertLess(time.monotonic(), deadline, "the headless loader did not start")
            time.sleep(0.05)
        renv = dict(os.environ, PYTHONPATH=os.path.join(SOURCE_ROOT, "python"))
        reader = subprocess.Popen([PYTHON, "-m", "lcmon", pipe, "--tolerate-truncation"],
                                  env=renv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(reader.wait)
        self.addCleanup(reader.kill)

        return loader, sock

    def test_attach_to_a_headless_loader(self):
        """lcmon attach shows a headless loader over its socket: the same
        numbers as lcmon ctl metrics, keys that reach it, and quitting
        leaves it running."""
        loader, sock = self.start_headless()

        p = Pane(self, 160, 45, config="", reader=False, command="%s attach %s" % (LCMON, sock))
        p.wait_rows()
        # Attached right after the loader started: wait for its initial load
        # (the pool's window filled) before comparing numbers with ctl.
        text = p.wait_for("the pool's window", lambda t: re.search(r"\b[1-9]\d*/\d+\b",
                                                                     row(t, "pool")))
        self.assertIn(sock, text.split("\n")[0])
        # q detaches here, and the key bar and the help say so.
        self.assertRegex(p.lines()[-1], r"q detach")
        self.assertNotIn("quit", p.lines()[-1])
        p.send("?")
        help_text = p.wait_for("the help", lambda t: "lcmon: keys" in t)
        self.assertIn("detach: leave this screen; the loader keeps running", help_text)
        self.assertNotIn("stop the pipeline cleanly", help_text)
        p.send("Escape")
        p.wait_rows()

        def ctl_metrics():
            r = subprocess.run([LCMON, "ctl", sock, "metrics", "--json"], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            return json.loads(r.stdout)

        def stage(m, name):
            return [s for s in m["all_time"]["stage_metrics"] if s["name"] == name][0]

        m = ctl_metrics()
        pool = stage(m, "pool")
        window = [g for g in pool["gauge_metrics"] if g["name"] == "chunks_in_window"][0]
        self.assertRegex(row(text, "pool"), r"%d/%d" % (window["value"], window["capacity"]))
        files_total = stage(m, "files")["items_out"]
        self.assertRegex(row(text, "files"), r"\b%d\b" % files_total)

        # A key on the attached screen reaches the loader.
        self.select(p, "unpacker")
        p.send("Space")
        p.wait_for("unpacker PAUSED", lambda t: "PAUSED" in row(t, "unpacker"), timeout=8)
        self.assertEqual(stage(ctl_metrics(), "unpacker")["state"], "STAGE_PAUSED")
        p.send("Space")
        p.wait_for("unpacker running", lambda t: "PAUSED" not in row(t, "unpacker"), timeout=8)

        # The anchor keys: a sets the offered newest key, r resets and counts.
        p.send("a")
        p.wait_for("the prompt", lambda t: "anchor key: training-run-mini.tar" in t)
        p.send("Enter")
        p.wait_for("the anchor set", lambda t: re.search(r"since start, anchor", row(t, "pool")),
                   timeout=8)
        r = subprocess.run([LCMON, "ctl", sock, "anchor", "get"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.stdout.split("\t")[0], "training-run-mini.tar")
        p.send("r")
        p.wait_for("the reset count", lambda t: "chunks were counted" in t)
        r = subprocess.run([LCMON, "ctl", sock, "anchor", "get"], capture_output=True, text=True,
                           timeout=30)
        self.assertLess(int(r.stdout.split("\t")[1]), 5)

        # S stops the loader's pipeline and starts it again.
        p.send("S")
        states = set()

        def saw_running_again(t):
            m = re.match(r" lcmon  (\w+)", t)
            if m:
                states.add(m.group(1))
            return m and m.group(1) == "RUNNING" and ({"STOPPING", "STOPPED"} & states)

        p.wait_for("stopped, then running again", saw_running_again, timeout=15)
        self.assertEqual(ctl_metrics()["all_time"]["state"], "PIPELINE_RUNNING")

        # Detaching leaves the loader running.
        p.send("q")
        p.wait_for("attach exited", lambda t: "lcmon exited 0" in t, timeout=10)
        self.assertIsNone(loader.poll())
        self.assertEqual(ctl_metrics()["all_time"]["state"], "PIPELINE_RUNNING")

    def test_attached_loader_going_away(self):
        """When the loader an attached screen shows goes away, the header
        says DISCONNECTED and the log says so, instead of frozen numbers
        that look alive."""
        loader, sock = self.start_headless()
        # Rows enough for a log pane that keeps the (wrapped) line in view
        # while the loader's last lines of its own stop arrive after it.
        p = Pane(self, 80, 34, config="", reader=False, command="%s attach %s" % (LCMON, sock))
        p.wait_rows()
        loader.send_signal(signal.SIGINT)
        loader.wait(timeout=30 * SLOW)
        p.wait_for("DISCONNECTED and why", lambda t: t.startswith(" lcmon  DISCONNECTED")
                   and "lost the loader" in t)
        p.send("q")
        p.wait_for("attach exited", lambda t: "lcmon exited" in t, timeout=10)

    def test_data_error_reaches_log_and_header(self):
        """A chunk that cannot be read is named in the log pane, counted on
        the pool's row, and, with the log hidden, counted in the header."""
        tmp = tempfile.mkdtemp(prefix="lcmon-tui-bad-")
        self.addCleanup(shutil.rmtree, tmp, True)
        data = os.path.join(tmp, "data")
        shutil.copytree(DATA, data)
        with open(os.path.join(data, "game_999999.gz"), "wb") as f:
            f.write(b"\x1f\x8b this is not deflate")
        p = Pane(self, 160, 45, data=data)
        text = p.wait_for("the bad chunk in the log", lambda t: "game_999999.gz" in t)
        line = [l for l in text.split("\n") if "game_999999.gz" in l][0]
        self.assertRegex(line, r"^\d\d:\d\d:\d\d ")  # a log line, with its time
        self.assertRegex(text, r"log: \d+ lines?, (\d+ errors?, )?\d+ warnings?")
        # The pool's DROP column (right-aligned under its heading) counts it,
        # from the next metrics flush on.
        def dropped(t):
            heading = t.split("\n")[1]
            at = heading.index("DROP") if "DROP" in heading else -1
            return at >= 0 and row(t, "pool")[at:at + 4].strip() == "1"
        p.wait_for("the pool's drop count", dropped)
        p.send("l")
        p.wait_for("the header counting it", lambda t: re.search(
            r"\d+ (errors?|warnings?) in the log", t.split("\n")[0]))

    def test_config_error_on_the_screen(self):
        """A configuration that does not load is shown on the screen: FAILED
        in the header with the first problem, every problem in the log pane;
        q exits 1 and leaves the problems on the terminal."""
        bad = CONFIG.format(data=DATA, pipe="x.pipe", reservoir=RESERVOIR).replace(
            "chunk_source_loader: {threads: 1}", "chunk_source_loader: {threads: 0}").replace(
            "tensor_generator: {batch_size: 64", "tensor_generator: {batch_size: 0")
        p = Pane(self, 160, 45, config=bad, reader=False)
        # tmux may capture a frame half written (the header before the
        # rest), so wait for the whole of it.
        text = p.wait_for("the failed state", lambda t: t.startswith(" lcmon  FAILED")
                          and "invalid configuration" in t)
        self.assertIn("and 1 more problem", text)
        text = p.wait_for("both problems in the log", lambda t:
                          "chunk_source_loader.threads: 0 is out of range" in t
                          and "tensor_generator.batch_size: 0 is out of range" in t)
        p.send("q")
        text = p.wait_for("lcmon exited", lambda t: "lcmon exited" in t)
        self.assertIn("lcmon exited 1", text)
        self.assertIn("tensor_generator.batch_size: 0 is out of range", text)

    def test_crash_signal_restores_the_terminal(self):
        # A fault, and SIGQUIT (Ctrl-\\: cbreak leaves it on; sent to lcmon
        # alone here, as the key would also end the shell that reports).
        for sig in (signal.SIGSEGV, signal.SIGQUIT):
            with self.subTest(signal=sig.name):
                p = Pane(self, 120, 40)
                p.wait_rows()
                shell = p.tmux("display-message", "-p", "-t", "0", "#{pane_pid}").strip()
                pid = int(subprocess.run(["pgrep", "-P", shell], capture_output=True,
                                         text=True, check=True).stdout.split()[0])
                os.kill(pid, sig)
                text = p.wait_for("lcmon dying", lambda t: "lcmon exited" in t)
                self.assertNotIn("lcmon exited 0", text)
                self.assertNotIn("STAGE", text)
                info = p.tmux("display-message", "-p", "-t", "0",
                              "#{alternate_on} #{cursor_flag}")
                self.assertEqual(info.strip(), "0 1")

    def test_ctrl_c_quits_like_q(self):
        p = Pane(self, 120, 40)
        p.wait_rows()
        p.send("C-c")
        text = p.wait_for("lcmon exiting", lambda t: "lcmon exited" in t)
        self.assertIn("lcmon exited 0", text)
        self.assertNotIn("STAGE", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
