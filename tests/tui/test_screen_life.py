"""The lcmon screen's life, driven through tmux (screen_harness.py): stop
and start, a restart that keeps the trainer, warnings for a missing data
directory and for no reader, quitting and restoring the terminal (q,
Ctrl-C, a crash signal), attaching to a headless loader and that loader
going away, data and configuration errors on the screen, reloading the
edited configuration (R), refusing a broken one, and loading one that had
failed at start.
"""

from screen_harness import *  # noqa: F401,F403  (the harness is this test's)


class ScreenLife(ScreenCase):
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
        # The interpreter lcmon was built with and the package's folder.
        cmd = "PYTHONPATH=%s/python %s -m lcmon %s" % (os.path.realpath(SOURCE_ROOT), PYTHON,
                                                      p.pipe)
        text = p.wait_for("the hint", lambda t: "no reader: start one with PYTHONPATH=" in
                          t.split("\n")[0] and cmd in "".join(t.split("\n")))
        self.assertIn("writer: no reader: start one with", text.split("\n")[0])
        self.assertNotIn("blocked on the reader", row(text, "writer"))

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

    def start_headless(self, tmp=None):
        """A headless lcmon serving a socket, with a reader on its pipe;
        stopped at the end of the test. Returns (process, socket path).
        tmp: the folder of an earlier one (the same socket path)."""
        if tmp is None:
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
        # The whole help, drawn to its last line (a sanitized build draws
        # slowly enough to be caught half way).
        help_text = p.wait_for("the help", lambda t: "lcmon: keys" in t and "Press any key" in t)
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

        # w: the attached screen asks the loader for the window it names.
        for name in ("10s", "1m"):
            p.send("w")
            p.wait_for("the window %s" % name, lambda t, n=name: "pos/s (%s)" % n in
                       t.split("\n")[0])
        p.send("w", "w", "w", "w")  # 10m, 1h, all time, and the last second again
        p.wait_for("the last second", lambda t: "pos/s (" not in t.split("\n")[0]
                   and "over the last second" in t)

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
        # A new loader on the same socket: the screen connects to it and
        # shows it, saying how long it was gone.
        loader2, sock2 = self.start_headless(tmp=os.path.dirname(sock))
        self.assertEqual(sock2, sock)
        p.wait_for("connected again", lambda t: t.startswith(" lcmon  RUNNING"),
                   timeout=30 * SLOW)
        # The log says when it came back (above the new loader's first
        # lines): page back until it shows (pages overlap by two rows; one
        # page a second, so that the screen shows each before the next).
        paged = [0.0]

        def back_in_view(t):
            if "is back" in t and "(process %d) after" % loader2.pid in t:  # the line may wrap
                return True
            if time.monotonic() - paged[0] > 1.0 * SLOW:
                p.send("PPage")
                paged[0] = time.monotonic()
            return False
        p.wait_for("the gap in the log", back_in_view)
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
        # The problems name the file: joined, however long its path.
        text = p.wait_for("lcmon exited", lambda t: "lcmon exited" in t, joined=True)
        self.assertIn("lcmon exited 1", text)
        self.assertIn("tensor_generator.batch_size: 0 is out of range", text)

    def edit_config(self, path, old_new):
        """Replace text in the configuration file at path, saved whole (as
        an editor saves it)."""
        with open(path) as f:
            text = f.read()
        for old, new in old_new:
            self.assertIn(old, text)
            text = text.replace(old, new)
        with open(path + ".new", "w") as f:
            f.write(text)
        os.replace(path + ".new", path)
        return path

    def test_reload_key(self):
        """R reads the edited configuration again and restarts with it: a
        stage renamed in the file shows under its new name; the message line
        and the log say what was loaded. The key bar has R at 120 columns."""
        p = Pane(self, 120, 45)
        text = p.wait_rows()
        check_layout(self, p, text)
        self.assertIn("R reload", last_line(text))
        path = self.edit_config(os.path.join(p.tmp, "pipeline.yaml"), [("name: sampler", "name: frames"),
                                    ("input: sampler", "input: frames"),
                                    ("batch_size: 64", "batch_size: 32")])
        p.send("R")
        text = p.wait_for("the new pipeline running", lambda t:
                          "reloaded %s: 8 stages" % path in t
                          and re.search(r"^. frames\b", t, re.M)
                          and not re.search(r"^. sampler\b", t, re.M)
                          and t.startswith(" lcmon  RUNNING")
                          and "config reloaded from %s" % path in t)
        check_layout(self, p, text)
        # (The pane's reader ends with the first run; a trainer that reads on
        # across a reload is test_reload's.)
        p.send("q")
        self.assertIn("lcmon exited 0", p.wait_for("lcmon exited", lambda t: "lcmon exited" in t))

    def test_reload_from_an_attached_screen(self):
        """R on a screen attached to a headless loader reloads the loader's
        configuration; the loader's new hello reaches the screen, which
        shows the renamed stage with its details."""
        loader, sock = self.start_headless()
        p = Pane(self, 160, 45, config="", reader=False, command="%s attach %s" % (LCMON, sock))
        p.wait_rows()
        path = self.edit_config(os.path.join(os.path.dirname(sock), "pipeline.yaml"),
                                [("name: sampler", "name: frames"),
                                 ("input: sampler", "input: frames")])
        p.send("R")
        p.wait_for("the new pipeline, described", lambda t:
                   "reloaded %s: 8 stages" % path in t
                   and "in reservoir" in row(t, "frames")
                   and t.startswith(" lcmon  RUNNING"))
        self.assertIsNone(loader.poll())
        loader.send_signal(signal.SIGINT)
        _, err = loader.communicate(timeout=30 * SLOW)
        self.assertEqual(loader.returncode, 0, err.decode()[-3000:])

    def test_reload_refuses_a_broken_config(self):
        """R on a configuration with two problems changes nothing: the
        message line says so with the first, the log pane shows both, and
        the pipeline runs on."""
        p = Pane(self, 160, 45)
        p.wait_rows()
        path = self.edit_config(os.path.join(p.tmp, "pipeline.yaml"), [("batch_size: 64", "batch_size: 0"),
                                    ("sampling_rate: 0.25", "sampling_rate: 7")])
        p.send("R")
        text = p.wait_for("the refusal and both problems in the log", lambda t:
                          "not reloaded (nothing changed; 2 problems)" in t
                          and "chunk_unpacker.sampling_rate: 7 is out of range" in t
                          and "tensor_generator.batch_size: 0 is out of range" in t
                          and "config not reloaded from %s" % path in t)
        self.assertTrue(text.startswith(" lcmon  RUNNING"), text.split("\n")[0])
        for s in STAGES:
            row(text, s)
        self.assertIn("error", [l for l in text.split("\n")
                                if "batch_size: 0 is out of range" in l][-1])
        p.send("q")
        self.assertIn("lcmon exited 0", p.wait_for("lcmon exited", lambda t: "lcmon exited" in t))

    def test_reload_after_a_config_error(self):
        """A configuration that did not load at start, fixed in the file:
        R loads it and the pipeline runs; q then exits 0."""
        good = CONFIG.format(data=DATA, pipe="x.pipe", reservoir=RESERVOIR)
        bad = good.replace("tensor_generator: {batch_size: 64", "tensor_generator: {batch_size: 0")
        p = Pane(self, 160, 45, config=bad, reader=False)
        p.wait_for("the failed state", lambda t: t.startswith(" lcmon  FAILED")
                   and "invalid configuration" in t)
        path = self.edit_config(os.path.join(p.tmp, "pipeline.yaml"), [(bad, good)])
        p.send("R")
        p.wait_for("the pipeline running", lambda t: t.startswith(" lcmon  RUNNING")
                   and "reloaded %s: 8 stages" % path in t
                   and all(re.search(r"^. %s\b" % s, t, re.M) for s in STAGES))
        p.send("q")
        self.assertIn("lcmon exited 0", p.wait_for("lcmon exited", lambda t: "lcmon exited" in t))

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
