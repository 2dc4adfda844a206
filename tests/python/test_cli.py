"""The lcmon command line: help and version, the embedded default config,
--check-config explaining errors with the stage and the field, a bad config
stopping lcmon before anything starts, SIGINT/SIGTERM stopping a running
pipeline promptly with exit status 0, and the one-line status that headless
lcmon prints each second.

Environment: LCMON (the executable), LC_TEST_DATA (the sample data).
"""

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import yaml

LCMON = os.environ["LCMON"]
DATA = os.environ["LC_TEST_DATA"]


# Sanitized builds run lcmon several times slower (tests/meson.build).
SLOW = float(os.environ.get("LCMON_TEST_SLOW", "1"))

# The status line of the default chain (src/monitor/snapshot.c):
# [running] 1234 pos/s | queues files 0/256 ... | pool: chunks_in_window
# 43/50000, store_bytes 329 kB/6.32 GB, anchor '-' +43 | sampler:
# reservoir_size 20000/20000 | reader ...
STATUS = re.compile(
    r"^\[(?P<state>\w+)\] (?P<pos>[\d.]+[kM]?) pos/s"
    r" \| queues(?P<queues>( \w+ \d+/\d+)+)"
    r" \| pool: chunks_in_window (?P<window>\d+)/(?P<window_cap>\d+),"
    r"(?: store_bytes (?P<store>[\d.]+ [kMGTP]?B)/(?P<store_cap>[\d.]+ [kMGTP]?B),)?"
    r" anchor '(?P<anchor>[^']*)' \+(?P<since>\d+)"
    r" \| sampler: reservoir_size (?P<res>\d+)/(?P<res_cap>\d+)"
    r" \| reader (?P<reader>connected|waiting)$")


def rate(text):
    mult = {"k": 1e3, "M": 1e6}
    return float(text[:-1]) * mult[text[-1]] if text[-1] in mult else float(text)


class PipeDrain(threading.Thread):
    """The trainer's part, without numpy: opens the pipe and reads it all."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.bytes = 0

    def run(self):
        deadline = time.monotonic() + 60 * SLOW
        while not os.path.exists(self.path):
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
        with open(self.path, "rb") as f:
            while True:
                data = f.read1(1 << 20)
                if not data:
                    return
                self.bytes += len(data)


class StderrLines(threading.Thread):
    """Each stderr line with the time it arrived."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream = stream
        self.lines = []

    def run(self):
        for line in self.stream:
            self.lines.append((time.monotonic(), line.rstrip("\n")))


def run(*args, env=None, timeout=30):
    return subprocess.run(
        [LCMON, *args], capture_output=True, text=True, timeout=timeout, env=env
    )


class Cli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_help_and_version(self):
        r = run("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^lcmon \d+\.\d+")
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        for stage in ("file_path_provider", "shuffling_chunk_pool", "fifo_writer"):
            self.assertIn(stage, r.stdout)
        r = run("--no-such-option")
        self.assertEqual(r.returncode, 2)
        # Every key of the default pipeline is in the printed schema.
        r = run("--print-schema")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = yaml.safe_load(run("--print-default-config").stdout)
        for stage in doc["stages"]:
            for key, block in stage.items():
                self.assertIn("\n    %s:" % key, r.stdout)
                for field in (block or {}) if isinstance(block, dict) and key != "output" else ():
                    self.assertIn("\n      %s: " % field, r.stdout)

    def test_default_config_is_valid_yaml_and_checks(self):
        r = run("--print-default-config")
        self.assertEqual(r.returncode, 0)
        doc = yaml.safe_load(r.stdout)
        names = [s["name"] for s in doc["stages"]]
        self.assertEqual(names[0], "files")
        self.assertIn("fifo_writer", doc["stages"][-1])
        path = self.write("default.yaml", r.stdout)
        # The default reads ${LCMON_DATA:-tests/data}: checked on the file
        # system too, so point it at the data.
        r = run("--check-config", path, env=dict(os.environ, LCMON_DATA=DATA))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("valid, %d stages" % len(names), r.stdout)

    def test_check_config_names_stage_field_and_line(self):
        path = self.write(
            "bad.yaml",
            "stages:\n"
            "  - name: files\n"
            "    file_path_provider: {directory: x}\n"
            "  - name: loader\n"
            "    input: files\n"
            "    chunk_source_loader: {thread: 2}\n",
        )
        r = run("--check-config", path)
        self.assertEqual(r.returncode, 1)
        self.assertIn("bad.yaml:6:", r.stderr)
        # One program-name prefix on every error line.
        self.assertTrue(all(l.startswith("lcmon: ") and not l.startswith("lcmon: lcmon")
                            for l in r.stderr.splitlines()), r.stderr)
        self.assertIn("stage 'loader'", r.stderr)
        self.assertIn("thread", r.stderr)
        r = run("--no-such-option")
        self.assertEqual(r.stderr.count("lcmon"), 2, r.stderr)  # the prefix, and the hint

        path = self.write(
            "wiring.yaml",
            "stages:\n"
            "  - name: files\n"
            "    file_path_provider: {directory: x}\n"
            "  - name: pool\n"
            "    input: files\n"
            "    shuffling_chunk_pool: {chunk_pool_size: 10}\n",
        )
        r = run("--check-config", path)
        self.assertEqual(r.returncode, 1)
        self.assertIn("stage 'pool': input:", r.stderr)
        self.assertIn("'path' items", r.stderr)
        self.assertIn("'chunk_source' items", r.stderr)

    def test_check_config_every_problem_at_once_in_line_order(self):
        """Values of the wrong type (a word for a boolean, a
        word for a number, an unknown enum name, an empty path, a list for a
        value) are reported together with the range and wiring problems of
        every other field: all at once, in line order, each once."""
        path = self.write(
            "many.yaml",
            "seed: -5\n"
            "stages:\n"
            "  - {name: files, file_path_provider: {directory: x, watch: maybe}}\n"
            "  - name: sources\n"
            "    input: filez\n"
            "    chunk_source_loader: {threads: 0}\n"
            "  - {name: pool, input: sources, shuffling_chunk_pool: {chunk_pool_size: lots}}\n"
            "  - name: unpacker\n"
            "    input: pool\n"
            "    output: {overflow: drop_oldest}\n"
            "    chunk_unpacker: {sampling_rate: 2}\n"
            "  - {name: tensors, input: unpacker, tensor_generator: {batch_size: [1, 2]}}\n"
            "  - {name: writer, input: tensors, fifo_writer: {path: ''}}\n"
            "metrics_interval_ms: 0\n",
        )
        r = run("--check-config", path)
        self.assertEqual(r.returncode, 1)
        lines = r.stderr.splitlines()
        want = [
            (1, r"seed: -5 is negative"),
            (3, r"stage 'files': output: no stage reads it"),
            (3, r"stage 'files': file_path_provider\.watch: 'maybe' is not true or false"),
            (5, r"stage 'sources': input: no stage is named 'filez'"),
            (6, r"stage 'sources': chunk_source_loader\.threads: 0 is out of range"),
            (7, r"stage 'pool': shuffling_chunk_pool\.chunk_pool_size: 'lots' is not a whole "
                r"number"),
            (10, r"stage 'unpacker': output\.overflow: 'drop_oldest' is not known \(did you mean "
                 r"'drop_newest'\? use block, drop_newest or keep_newest\)"),
            (11, r"stage 'unpacker': chunk_unpacker\.sampling_rate: 2 is out of range"),
            (12, r"stage 'tensors': tensor_generator\.batch_size: a list, where a single value "
                 r"belongs"),
            (13, r"stage 'writer': fifo_writer\.path: is empty"),
            (14, r"metrics_interval_ms: 0 is out of range"),
        ]
        self.assertEqual(len(lines), len(want), r.stderr)
        for line, (n, pattern) in zip(lines, want):
            self.assertRegex(line, r"^lcmon: \S*many\.yaml:%d:\d+: %s" % (n, pattern))

    def test_check_config_looks_at_the_file_system(self):
        """--check-config also checks what it can without starting: the data
        directory, the pipe path; each problem has its line. A directory
        given as the config gets a clear message."""
        not_a_pipe = self.write("not-a-pipe", "text\n")
        path = self.write(
            "fs.yaml",
            "stages:\n"
            "  - name: files\n"
            "    file_path_provider: {directory: %s}\n"
            "  - name: sources\n"
            "    input: files\n"
            "    chunk_source_loader: {}\n"
            "  - name: chunks\n"
            "    input: sources\n"
            "    chunk_reader: {}\n"
            "  - name: unpacker\n"
            "    input: chunks\n"
            "    chunk_unpacker: {}\n"
            "  - name: tensors\n"
            "    input: unpacker\n"
            "    tensor_generator: {batch_size: 4}\n"
            "  - name: writer\n"
            "    input: tensors\n"
            "    fifo_writer: {path: %s}\n" % (os.path.join(self.dir, "nowhere"), not_a_pipe),
        )
        r = run("--check-config", path)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"fs\.yaml:3:\d+: stage 'files': file_path_provider\.directory: "
                         r".*nowhere: No such file or directory")
        self.assertRegex(r.stderr, r"fs\.yaml:18:\d+: stage 'writer': fifo_writer\.path: .*"
                         r"not-a-pipe exists and is not a named pipe")
        r = run("--check-config", self.dir)
        self.assertEqual(r.returncode, 1)
        self.assertIn("is a directory, not a configuration file", r.stderr)

    def test_check_config_looks_for_tablebases(self):
        """A rescorer's table folders must exist and hold tables of their
        library: --check-config says so with the line, not the start."""
        empty = os.path.join(self.dir, "no-tables")
        os.mkdir(empty)
        self.write(os.path.join("no-tables", "notes.txt"), "not a table\n")
        config = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(DATA))), "config",
                              "rescore.yaml")
        r = run("--check-config", config, env=dict(os.environ, LCMON_DATA=DATA))
        if "built without Gaviota" in r.stderr:
            self.skipTest("this lcmon was built without Gaviota")
        for folder, want in ((empty, r"gaviota_paths: no Gaviota table in .*no-tables"),
                             (os.path.join(self.dir, "nowhere"),
                              r"gaviota_paths: .*nowhere: No such file or directory")):
            r = run("--check-config", config,
                    env=dict(os.environ, LCMON_GAVIOTA=folder, LCMON_DATA=DATA))
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertRegex(r.stderr, r"rescore\.yaml:\d+:\d+: stage 'rescorer': chunk_rescorer\." + want)

    def test_bad_config_stops_before_starting(self):
        pipe = os.path.join(self.dir, "never.pipe")
        path = self.write(
            "bad.yaml",
            "stages:\n"
            "  - name: files\n"
            "    file_path_provider: {directory: '%s'}\n"
            "  - name: writer\n"
            "    input: files\n"
            "    fifo_writer: {path: '%s'}\n" % (DATA, pipe),
        )
        r = run("--no-ui", "--config", path)
        self.assertEqual(r.returncode, 1)
        self.assertIn("invalid configuration", r.stderr)
        self.assertIn("stage 'writer': input:", r.stderr)
        self.assertFalse(os.path.exists(pipe))

    def test_signals_stop_promptly(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            env = dict(os.environ)
            env["LCMON_DATA"] = DATA
            env["LCMON_PIPE"] = os.path.join(self.dir, "stop-%d.pipe" % sig)
            p = subprocess.Popen(
                [LCMON, "--no-ui", "--status-interval", "0"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            try:
                deadline = time.time() + 20
                while not os.path.exists(env["LCMON_PIPE"]) and time.time() < deadline:
                    time.sleep(0.05)
                self.assertTrue(os.path.exists(env["LCMON_PIPE"]))
                time.sleep(0.5)
                t0 = time.time()
                p.send_signal(sig)
                out, err = p.communicate(timeout=10)
                self.assertLess(time.time() - t0, 5)
                self.assertEqual(p.returncode, 0, err)
                self.assertIn("stopped after", err)
                self.assertIn("peak RSS", err)
                self.assertNotIn("pos/s", err)  # --quiet: no status lines
            finally:
                if p.poll() is None:
                    p.kill()
                    p.communicate()

    def test_finite_run_ends_at_once(self):
        """A pipeline that runs out of input ends lcmon at once, with exit
        status 0 and the totals, even with the slowest metrics interval: the
        end is signalled, not polled for."""
        path = self.write(
            "finite.yaml",
            "metrics_interval_ms: 10000\n"
            "stages:\n"
            "  - name: files\n"
            "    file_path_provider: {directory: '%s', watch: false}\n"
            "  - name: sources\n"
            "    input: files\n"
            "    chunk_source_loader: {threads: 2}\n" % DATA,
        )
        t0 = time.monotonic()
        r = run("--no-ui", "--status-interval", "0", "--config", path, timeout=120)
        took = time.monotonic() - t0
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pipeline finished", r.stderr)
        self.assertRegex(r.stderr, r"finished after [\d.]+ s; out: files \d+ paths, sources \d+ sources")
        # Loading the sample data takes a fraction of a second; a poll would
        # take the 10 s interval, and the headless loop's own timeout is 60 s.
        self.assertLess(took, 3 * SLOW, r.stderr)

    def test_quiet_and_mode_options(self):
        """--quiet: warnings and errors only (no info lines, no status
        lines). Options of the other mode are refused, naming both; -V and
        attach --help answer and exit 0; a ctl usage error is one line."""
        r = run("--no-ui", "--quiet", "--max-seconds", "1",
                env=dict(os.environ, LCMON_DATA=DATA, LCMON_PIPE=os.path.join(self.dir, "p")))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(" info ", r.stderr)
        self.assertNotIn("[running]", r.stderr)
        r = run("--no-ui", "--theme", "light")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.strip(),
                         "lcmon: --theme is for the screen; it does not apply with --no-ui")
        r = run("--socket", os.path.join(self.dir, "s"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("lcmon: --socket is for headless runs; add --no-ui", r.stderr)
        r = run("-V")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^lcmon \d+\.\d+\.\d+\ninflate: .*; Parquet codecs: "
                                   r"SNAPPY, GZIP, ZSTD.*\n$")
        r = run("attach", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("usage: lcmon attach SOCKET", r.stdout)
        r = run("ctl", os.path.join(self.dir, "s"), "bogus")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.count("\n"), 1)
        self.assertIn("lcmon ctl: 'bogus': unknown command", r.stderr)
        self.assertIn("metrics [--window W] [--json]", r.stderr)
        r = run("--help")
        for var in ("LCMON_DATA", "LCMON_PIPE", "LCMON_PARQUET", "NO_COLOR", "RANK",
                    "WORLD_SIZE", "Exit status"):
            self.assertIn(var, r.stdout)

    def test_man_page(self):
        """The man page (build/lcmon.1, made from man/lcmon.1.in) renders
        without warnings and carries lcmon's one version."""
        page = os.path.join(os.path.dirname(os.path.abspath(LCMON)), "lcmon.1")
        r = subprocess.run(["man", "--warnings", "-l", page], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, MANWIDTH="80", MANPAGER="cat"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertIn("LCMON_DATA", r.stdout)
        version = run("--version").stdout.split()[1]
        self.assertRegex(version, r"^\d+\.\d+\.\d+$")
        self.assertRegex(r.stdout, r"lcmon %s\s" % re.escape(version))

    def test_one_version(self):
        """lcmon, its man page and the Python package have one version (the
        man page's is checked above), and the monitor's hello and `ctl
        status` say it."""
        import lcmon
        version = run("--version").stdout.split()[1]
        self.assertEqual(lcmon.__version__, version)
        sock = os.path.join(self.dir, "v.sock")
        env = dict(os.environ, LCMON_DATA=DATA, LCMON_PIPE=os.path.join(self.dir, "v.pipe"))
        p = subprocess.Popen([LCMON, "--no-ui", "--status-interval", "0", "--socket", sock],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            with lcmon.Control(sock, timeout=30 * SLOW) as c:
                self.assertEqual(c.run()["lcmon_version"], version)
            r = run("ctl", sock, "status")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("lcmon %s" % version, r.stdout)
        finally:
            p.send_signal(signal.SIGINT)
            p.wait(30 * SLOW)

    def test_every_ctl_command_answers_and_is_documented(self):
        """The commands `lcmon ctl help` lists (ctl's one table) are each in
        the README and the man page, and each answers a running loader
        (exit 0, or 1 for a refusal such as an unknown stage; never 2, a
        usage error)."""
        r = run("ctl", "help")
        self.assertEqual(r.returncode, 0, r.stderr)
        commands = re.findall(r"^  (\S+(?: (?:get|set|reset))?)"
                              r"(?: (KEY|STAGE|\[--json\]|\[--window W\] \[--json\]))?  ",
                              r.stdout, re.M)
        self.assertIn(("metrics", "[--window W] [--json]"), commands)
        self.assertGreaterEqual(len(commands), 11, r.stdout)
        root = os.path.dirname(os.path.dirname(DATA))
        with open(os.path.join(root, "README.md")) as f:
            readme = f.read()
        with open(os.path.join(os.path.dirname(os.path.abspath(LCMON)), "lcmon.1")) as f:
            man = f.read().replace("\\fR", "").replace("\\fI", "").replace("\\-", "-")
        for words, _ in commands:
            self.assertIn(words.split()[-1], readme, words)
            self.assertIn(words.split()[-1], man, words)
        sock = os.path.join(self.dir, "c.sock")
        cfg = self.write("c.yaml", "stages:\n"
                         "  - {name: files, file_path_provider: {directory: '%s'}}\n"
                         "  - {name: sources, input: files, chunk_source_loader: {}}\n"
                         "  - {name: pool, input: sources, shuffling_chunk_pool: "
                         "{chunk_pool_size: 100}}\n" % DATA)
        p = subprocess.Popen([LCMON, "--no-ui", "--status-interval", "0", "--socket", sock,
                              "--config", cfg], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30 * SLOW
            while run("ctl", sock, "status").returncode != 0:
                self.assertLess(time.monotonic(), deadline, "no loader on the socket")
                time.sleep(0.1)
            args = {"KEY": ["game_000001.gz"], "STAGE": ["pool"], "[--json]": ["--json"],
                    "[--window W] [--json]": ["--window", "1m", "--json"], "": []}
            order = sorted(commands, key=lambda c: c[0] in ("stop", "start", "reload"))
            for words, arg in order:
                r = run("ctl", sock, *words.split(), *args[arg], timeout=60 * SLOW)
                self.assertIn(r.returncode, (0, 1), "%s: %s" % (words, r.stderr))
                if arg.startswith("["):  # the options are optional
                    r = run("ctl", sock, *words.split(), timeout=60 * SLOW)
                    self.assertEqual(r.returncode, 0, "%s: %s" % (words, r.stderr))
            r = run("ctl", sock, "anchor", "get", "extra")
            self.assertEqual(r.returncode, 2)
        finally:
            p.send_signal(signal.SIGINT)
            p.wait(30 * SLOW)

    def test_installed_lcmon_finds_its_data(self):
        """After `meson install` (here into a staging directory), lcmon run
        from any directory without --config finds its default pipeline's
        sample data installed beside it, and the man page is installed."""
        build = os.path.dirname(os.path.abspath(LCMON))
        dest = os.path.join(self.dir, "dest")
        r = subprocess.run(["meson", "install", "-C", build, "--no-rebuild", "--quiet",
                            "--destdir", dest], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        exe = [os.path.join(root, f) for root, _, files in os.walk(dest) for f in files
               if f == "lcmon" and os.access(os.path.join(root, f), os.X_OK)]
        self.assertEqual(len(exe), 1, exe)
        pages = [f for _, _, files in os.walk(dest) for f in files if f.startswith("lcmon.1")]
        self.assertTrue(pages)
        away = os.path.join(self.dir, "away")
        os.mkdir(away)
        env = {k: v for k, v in os.environ.items() if k not in ("LCMON_DATA", "LCMON_PIPE")}
        r = subprocess.run([exe[0], "--no-ui", "--status-interval", "0", "--max-seconds", "2"],
                           cwd=away, env=env, capture_output=True, text=True, timeout=60 * SLOW)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"scanning \S*share/lcmon/data")
        self.assertRegex(r.stderr, r"initial scan found [1-9]\d* files")
        # The samples lcmon found for itself are named as such, once.
        self.assertEqual(len(re.findall(r"warn .*LCMON_DATA is not set: reading \S*share/lcmon/"
                                        r"data, .*sample games", r.stderr)), 1, r.stderr)

    @contextlib.contextmanager
    def headless(self, env, config=None, cwd=None):
        """Headless lcmon while the block runs, stopped by SIGINT at its end;
        yields the process and its stderr lines as they come."""
        args = [LCMON, "--no-ui", "--status-interval", "0"] + (["--config", config] if config
                                                               else [])
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=env, cwd=cwd or os.path.dirname(os.path.dirname(DATA)))
        lines = StderrLines(p.stderr)
        lines.start()
        try:
            yield p, lines
        finally:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(10 * SLOW)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            lines.join(5)

    def headless_until(self, env, pattern, config=None):
        """Run headless lcmon until a stderr line matches pattern (or 30 s x
        SLOW); returns every stderr line so far."""
        with self.headless(env, config) as (p, lines):
            deadline = time.monotonic() + 30 * SLOW
            while time.monotonic() < deadline and p.poll() is None:
                if any(re.search(pattern, l) for _, l in lines.lines):
                    break
                time.sleep(0.05)
        text = "\n".join(l for _, l in lines.lines)
        self.assertRegex(text, pattern)
        return text

    def test_default_data_is_named_and_misspellings_caught(self):
        """The default pipeline on the bundled samples says so once, as a
        warning naming LCMON_DATA, and names a misspelt variable; with
        LCMON_DATA set it says nothing of the kind."""
        env = {k: v for k, v in os.environ.items() if k != "LCMON_DATA"}
        env["LCMON_DAT"] = "/data/run3"
        env["LCMON_PIPE"] = os.path.join(self.dir, "default.pipe")
        text = self.headless_until(env, r"initial scan loaded")
        warned = [l for l in text.split("\n") if "LCMON_DATA is not set" in l]
        self.assertEqual(len(warned), 1, text)
        self.assertRegex(warned[0], r" warn .*\(LCMON_DAT is set: a misspelling of LCMON_DATA\?\)"
                                    r": reading tests/data")
        env = dict(env, LCMON_DATA=DATA)
        del env["LCMON_DAT"]
        text = self.headless_until(env, r"initial scan loaded")
        self.assertNotIn("is not set", text)
        # The Parquet pipelines the same way, with LCMON_PARQUET.
        root = os.path.dirname(os.path.dirname(DATA))
        env = {k: v for k, v in env.items() if k != "LCMON_PARQUET"}
        env.update(LCMON_PARQUE="/data/games.parquet",
                   LCMON_PIPE=os.path.join(self.dir, "encoder.pipe"))
        text = self.headless_until(env, r"LCMON_PARQUET is not set",
                                   config=os.path.join(root, "config", "encoder.yaml"))
        self.assertRegex(text, r" warn .*LCMON_PARQUET is not set \(LCMON_PARQUE is set: a "
                               r"misspelling of LCMON_PARQUET\?\): reading tests/parquet/")

    def test_unreadable_folder_and_skipped_files_are_named(self):
        """A folder holding only files lcmon cannot read: each skipped file is
        named, and the initial scan that loaded nothing warns and says why."""
        data = os.path.join(self.dir, "data")
        os.mkdir(data)
        for name in ("notes.txt", "games.pgn"):
            self.write(os.path.join("data", name), "not a chunk\n")
        with open(os.path.join(data, "broken.gz"), "wb") as f:
            f.write(b"not gzip at all")
        old = time.time() - 60  # settled: no wait for files being written
        for name in os.listdir(data):
            os.utime(os.path.join(data, name), (old, old))
        env = dict(os.environ, LCMON_DATA=data, LCMON_PIPE=os.path.join(self.dir, "u.pipe"))
        text = self.headless_until(env, r"initial scan loaded")
        for name in ("notes.txt", "games.pgn"):
            self.assertRegex(text, r" info .*skipped \S*/%s: not a \.gz or \.tar file" % name)
        self.assertRegex(text, r" warn .*broken\.gz")
        self.assertRegex(text, r" warn .*the initial scan loaded no sources: of 3 files, 2 not "
                               r"\.gz or \.tar \(such as \S+\), 1 unreadable or empty")

    def test_no_reader_hint_runs_as_copied(self):
        """The writer's hint, copied as it is into a shell in another folder
        with no PYTHONPATH (another terminal), reads the stream: the
        interpreter lcmon was configured with, the package's folder and the
        pipe's absolute path; a pipe name with a space is quoted."""
        work = tempfile.mkdtemp(prefix="lcmon-hint-", dir=self.dir)
        env = dict(os.environ, LCMON_DATA=DATA, LCMON_PIPE="my batches.pipe")
        with self.headless(env, cwd=work) as (p, lines):
            deadline = time.monotonic() + 30 * SLOW
            cmd = None
            while cmd is None and time.monotonic() < deadline and p.poll() is None:
                for _, l in lines.lines:
                    m = re.search(r"waiting for a reader on my batches\.pipe; read it with: (.*)$", l)
                    if m:
                        cmd = m.group(1)
                time.sleep(0.05)
            self.assertIsNotNone(cmd, "\n".join(l for _, l in lines.lines))
            self.assertNotIn("  ", cmd)
            clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            r = subprocess.run(["sh", "-c", cmd + " --batches 3"], cwd="/", env=clean,
                               capture_output=True, text=True, timeout=60 * SLOW)
            self.assertEqual(r.returncode, 0, "%s\n%s%s" % (cmd, r.stdout, r.stderr))
            self.assertRegex(r.stdout + r.stderr, r"\b3 batches\b")

    def test_compact_status_line(self):
        """Without -v the status line fits 120 columns: state, rate, the
        warning that says what to do (no reader: the command), full queues,
        the window and anchor count, the reservoir, the reader."""
        pipe = os.path.join(self.dir, "compact.pipe")
        env = dict(os.environ, LCMON_DATA=DATA, LCMON_PIPE=pipe)
        r = run("--no-ui", "--max-seconds", str(3 * SLOW), env=env, timeout=60 * SLOW)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l for l in r.stderr.split("\n") if l.startswith("[")]
        self.assertTrue(lines, r.stderr)
        for l in lines:
            self.assertLessEqual(len(l), 120, l)
            self.assertRegex(l, r"^\[\w+\] [\d.]+[kM]? pos/s")
        # Nobody reads: the line says so first, with the command.
        self.assertIn("| writer: no reader: start one with PYTHONPATH=", lines[-1])

    def test_headless_status_line_each_second(self):
        """`lcmon --no-ui -v` prints a status line to stderr about once a
        second: state, positions/s, every queue's fill, the pool's window and
        anchor, the reservoir's fill."""
        r = run("--print-default-config")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = yaml.safe_load(r.stdout)
        stages = [st["name"] for st in doc["stages"]]
        block = {next(k for k in st if k not in ("name", "input", "output")): st
                 for st in doc["stages"]}
        pool_size = block["shuffling_chunk_pool"]["shuffling_chunk_pool"]["chunk_pool_size"]
        reservoir = block["shuffling_frame_sampler"]["shuffling_frame_sampler"]["reservoir_size"]

        env = dict(os.environ, LCMON_DATA=DATA, LCMON_PIPE=os.path.join(self.dir, "status.pipe"))
        p = subprocess.Popen([LCMON, "--no-ui", "-v"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, env=env)
        drain = PipeDrain(env["LCMON_PIPE"])
        drain.start()
        err = StderrLines(p.stderr)
        err.start()

        def status():
            return [(t, l) for t, l in list(err.lines) if " pos/s " in l]

        try:
            # Six lines once batches flow, then five more: about five seconds.
            deadline = time.monotonic() + 60 * SLOW
            flowing = None
            while time.monotonic() < deadline and p.poll() is None:
                lines = status()
                if flowing is None:
                    done = [i for i, (_, l) in enumerate(lines)
                            if "reader connected" in l and rate(l.split()[1]) > 0]
                    if done:
                        flowing = done[0]
                elif len(lines) >= flowing + 6:
                    break
                time.sleep(0.1)
            self.assertIsNone(p.poll(), "lcmon ended early")
            self.assertIsNotNone(flowing, "no status line with batches flowing:\n%s"
                                 % "\n".join(l for _, l in err.lines[-20:]))
            lines = status()[flowing:flowing + 6]
            self.assertEqual(len(lines), 6, "\n".join(l for _, l in err.lines[-20:]))
        finally:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            err.join(10)
            drain.join(10)
        self.assertEqual(p.returncode, 0)

        for _, line in lines:
            m = STATUS.match(line)
            self.assertIsNotNone(m, "not a status line: %r" % line)
            self.assertEqual(m.group("state"), "running")
            self.assertEqual(m.group("reader"), "connected")
            # Every stage that has an output queue, in flow order, each fill
            # within its capacity.
            queues = re.findall(r" (\w+) (\d+)/(\d+)", m.group("queues"))
            self.assertEqual([q[0] for q in queues], stages[:-1], line)
            for name, fill, cap in queues:
                self.assertLessEqual(int(fill), int(cap), line)
                self.assertGreater(int(cap), 0, line)
            # The sample data: 43 chunks, all counted (no anchor given).
            self.assertEqual(int(m.group("window")), 43, line)
            self.assertEqual(int(m.group("window_cap")), pool_size, line)
            self.assertEqual(m.group("anchor"), "-", line)
            self.assertEqual(int(m.group("since")), 43, line)
            self.assertEqual(int(m.group("res_cap")), reservoir, line)
            self.assertLessEqual(int(m.group("res")), reservoir, line)
        # Batches flow: positions every second, and the reservoir full.
        self.assertTrue(all(rate(STATUS.match(l).group("pos")) > 0 for _, l in lines[1:]),
                        "\n".join(l for _, l in lines))
        self.assertEqual(int(STATUS.match(lines[-1][1]).group("res")), reservoir)
        self.assertGreater(drain.bytes, 0)
        # About once a second: on average a second apart. The loop keeps its
        # schedule, so a line that came late (a loaded machine, sanitizers) is
        # followed by one that comes early; otherwise never two at once.
        times = [t for t, _ in lines]
        steps = [b - a for a, b in zip(times, times[1:])]
        self.assertTrue(all(x < 1.0 + SLOW for x in steps), steps)
        self.assertTrue(all(x > 0.25 or (i > 0 and steps[i - 1] > 1.25)
                            for i, x in enumerate(steps)), steps)
        self.assertAlmostEqual((times[-1] - times[0]) / (len(times) - 1), 1.0, delta=0.25)


if __name__ == "__main__":
    unittest.main(verbosity=2)
