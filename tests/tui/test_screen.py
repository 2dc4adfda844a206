"""The lcmon screen, driven through tmux (tmux's regress style;
screen_harness.py starts it): the stage rows, fills and anchor; pause and
resume; anchor reset and set; themes (and --theme, --no-color, ASCII); the
log pane (l, PgUp/PgDn, Home, End); the refresh rate (+, -); the window
of the rates (w); resizes; what
the screen's own thread costs in CPU. Screens whose content is
deterministic (the help screen, a pipeline that fails to start) are
compared with golden files in tests/tui/golden; the README's screenshots'
screens with theirs, by layout (scripts/screenshots --check). Stopping, restarting,
attaching and quitting: test_screen_life.py.
"""

from screen_harness import *  # noqa: F401,F403  (the harness is this test's)


class Screen(ScreenCase):
    def test_rows_fills_and_anchor(self):
        # The data through a short link: the files row shows the directory
        # only when it fits, and a clone's path may be of any length.
        short = tempfile.mkdtemp(prefix="l")
        self.addCleanup(shutil.rmtree, short, True)
        data = os.path.join(short, "d")
        os.symlink(DATA, data)
        p = Pane(self, 160, 45, data=data)
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
        self.assertIn(data, row(text, "files"))
        self.assertRegex(row(text, "writer"), r"B/s")
        self.assertRegex(row(text, "writer"), r"blocked")
        check_layout(self, p, text)

    def test_split_and_join_rows(self):
        # A splitter's named outputs are queue rows of their own, labelled
        # with the output's name; the split and the join say where their
        # items went and came from.
        d = tempfile.mkdtemp(prefix="lcmon-tui-split-")
        self.addCleanup(shutil.rmtree, d, True)
        config = """\
seed: 1
metrics_interval_ms: 100
stages:
  - {name: files, file_path_provider: {directory: '%s'}}
  - {name: sources, input: files, chunk_source_loader: {}}
  - name: split
    input: sources
    chunk_source_splitter: {outputs: [{name: train, weight: 1}, {name: test, weight: 1}]}
  - {name: train_pool, input: split.train, shuffling_chunk_pool: {chunk_pool_size: 1000}}
  - {name: test_pool, input: split.test, shuffling_chunk_pool: {chunk_pool_size: 1000}}
  - {name: both, inputs: [train_pool, test_pool], join: {weights: [3, 1]}}
  - {name: unpacker, input: both, chunk_unpacker: {sampling_rate: 0.5}}
  - {name: tensors, input: unpacker, tensor_generator: {batch_size: 64}}
  - {name: writer, input: tensors, fifo_writer: {path: '%s/split.pipe'}}
""" % (DATA, d)
        p = Pane(self, 160, 45, config=config, reader=False)
        text = p.wait_for("the split's queues and the join's sources", lambda t: (
            re.search(r"\n\s+↓ train\s+.*\d+ sources", t)
            and re.search(r"\n\s+↓ test\s+.*\d+ sources", t)
            and re.search(r"train \d+ \([\d.]+%\) · test \d+", row(t, "split"))
            and re.search(r"train_pool \d+ \([\d.]+%\) · test_pool \d+", row(t, "both"))))
        self.assertIn("chunk_source_splitter", row(text, "split"))
        self.assertIn("join", row(text, "both"))

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
        # The pool's initial load counts every game: wait for it (the rows
        # come first, the count once the load is done).
        text = p.wait_for("the count since the start", lambda t: re.search(
            r"\+?(\d+) since", row(t, "pool")))
        before = int(re.search(r"\+?(\d+) since", row(text, "pool")).group(1))
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

    def test_window_key(self):
        """w cycles the window the rates are over: the header names it after
        the rate ("(10s)" ... "(since start)"), the message line says it in
        words, and after all time the last second comes back, unnamed."""
        def head(t):
            return t.split("\n")[0]

        p = Pane(self, 160, 45)
        text = p.wait_for("unpacker moving", lambda t: rate_value(items_per_second(t, "unpacker")) > 0)
        self.assertNotIn("pos/s (", head(text))  # the last second, unnamed
        for name, words in (("10s", "the last 10 seconds"), ("1m", "the last minute"),
                            ("10m", "the last 10 minutes"), ("1h", "the last hour"),
                            ("since start", "all time, since the start")):
            p.send("w")
            # The unpacker's rate over the window: whole seconds of work.
            p.wait_for("the header names %s" % name, lambda t, n=name, w=words:
                       "pos/s (%s)" % n in head(t)
                       and "rates, loads and shares over %s" % w in t
                       and rate_value(items_per_second(t, "unpacker")) > 0)
        p.send("w")
        p.wait_for("the last second again", lambda t: "pos/s (" not in head(t)
                   and "over the last second" in t)
        check_layout(self, p, p.wait_rows())

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

    def test_screenshot_goldens(self):
        """The screens of the README's screenshots, as scripts/screenshots
        captures them (its shots, keys and themes, with this lcmon), have
        the layout of their goldens (tests/tui/golden/shot-*: the numbers,
        bars and log lines masked); GENERATE=1 rewrites them, and then
        test_screenshots.py asks for the pictures again."""
        script = os.path.join(SOURCE_ROOT, "scripts", "screenshots")
        r = subprocess.run([PYTHON, script, "--check", "--lcmon", LCMON,
                            "--timeout", str(30 * SLOW)], capture_output=True, text=True,
                           timeout=200 * SLOW)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count("as its golden" if not GENERATE else "golden written"),
                         3, r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
