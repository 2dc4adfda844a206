"""What the screen's tests share (test_screen.py, test_screen_life.py):
the real lcmon in a pane of a fixed size on a private tmux server (tmux -L
<unique>), on the bundled sample data, with the numpy reader on its pipe so
batches flow; reading the pane (capture-pane), sending keys (send-keys),
rows and rates of a capture, golden screens (GENERATE=1 rewrites them).

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
# The panes open now. A tmux server is a daemon outside the test's process
# group: when meson test ends the test with SIGTERM (scripts/test's Ctrl-C,
# a timeout), the handler below ends each server and reader, not left for
# an hour.
_live = set()


def _on_sigterm(signum, frame):
    for pane in list(_live):
        pane.close()
    os._exit(128 + signum)


signal.signal(signal.SIGTERM, _on_sigterm)


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
        _live.add(self)
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

    def capture(self, escapes=False, joined=False):
        """The pane's text; `joined`: lines the terminal wrapped are joined
        again (what a program printed after the screen closed: a path in it
        can be longer than the pane is wide)."""
        args = ["capture-pane", "-p", "-t", "0"] + (["-e"] if escapes else []) + (
            ["-J"] if joined else [])
        return self.tmux(*args)

    def lines(self):
        return self.capture().split("\n")[:self.height]

    def send(self, *keys):
        self.tmux("send-keys", "-t", "0", *keys)

    def resize(self, width, height):
        self.width, self.height = width, height
        self.tmux("resize-window", "-t", "0", "-x", str(width), "-y", str(height))

    def wait_for(self, what, predicate, timeout=10, joined=False):
        """Poll the pane until predicate(screen text) is true (`joined`: as
        capture's)."""
        deadline = time.monotonic() + timeout * SLOW
        text, why = "", ""
        while time.monotonic() < deadline:
            text = self.capture(joined=joined)
            # A capture can catch the screen between two rows of a redraw;
            # a row the predicate looks for and does not find yet is "not
            # yet", not a failure: the whole condition is waited for.
            try:
                if predicate(text):
                    return text
                why = ""
            except (AssertionError, StopIteration, ValueError, IndexError) as e:
                why = "\n(last check: %s)" % str(e).split("\n")[0]
            time.sleep(0.05)
        raise AssertionError("timed out waiting for %s%s; the screen:\n%s" % (what, why, text))

    def wait_rows(self):
        # The header's reader, not the log's "reader connected to" line: the
        # log shows it at once, the header at the next snapshot.
        return self.wait_for("the stage rows and a reader", lambda t: all(
            re.search(r"^. %s\b" % s, t, re.M) for s in STAGES)
            and "reader connected" in t.split("\n")[0], timeout=20)

    def close(self):
        _live.discard(self)
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
    """Times change from run to run: clock times and the uptime; and each
    run draws its id."""
    text = re.sub(r"\b\d\d:\d\d:\d\d\b", "HH:MM:SS", text)
    text = re.sub(r"\brun [0-9a-f]{16}\b", "run RUN_ID", text)
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
    numbers masked (a number of any length is one 9: "log: 9 lines" and
    "log: 10 lines" are the same line), and which region it belongs to."""
    out = []
    for l in lines:
        l = re.sub(r"\d+", "9", l)
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


class ScreenCase(unittest.TestCase):
    def select(self, pane, name):
        """Move the selection to stage `name`, a key at a time, each time
        waiting for the screen to show the move before the next key (a
        fixed pause overshoots on a loaded machine)."""
        deadline = time.monotonic() + 20 * SLOW
        while time.monotonic() < deadline:
            try:
                text = pane.capture()
                if row(text, name).startswith("▶"):
                    return
                at = self.selected_index(text)
            except AssertionError:  # caught between two rows of a redraw
                time.sleep(0.05)
                continue
            pane.send("j" if STAGES.index(name) > at else "k")
            while time.monotonic() < deadline:
                time.sleep(0.05)
                try:
                    if self.selected_index(pane.capture()) != at:
                        break
                except (AssertionError, StopIteration, ValueError, IndexError):
                    pass  # caught between two rows of a redraw
        self.fail("cannot select %s" % name)

    def selected_index(self, text):
        for i, s in enumerate(STAGES):
            if row(text, s).startswith("▶"):
                return i
        return -1
