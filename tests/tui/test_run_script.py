"""scripts/run, as a user runs it (issue 25): in a tmux pane (screen_harness.py)
it shows lcmon's screen with its own reader connected, and the terminal
comes back within 2 s of q, of Ctrl-C, and of lcmon failing at start, with
its reader gone; without a terminal it runs headless and ends with lcmon.

The script runs the lcmon of this build directory (LCMON_BUILD) and skips
scripts/setup (LCMON_SKIP_SETUP=1): a test installs nothing and builds
nothing; everything after setup is the script's own path. Its pipe is in a
temporary folder (LCMON_PIPE), not the source tree.

The 2 s after q is the bar a user sees, not scaled by LCMON_TEST_SLOW (only
the wait for the screen is): what it times is lcmon's clean stop and exit
and the script ending its reader, which take a fraction of it in the
sanitizer builds too.
"""

from screen_harness import *  # noqa: F401,F403  (the harness is this test's)

SCRIPT = os.path.join(SOURCE_ROOT, "scripts", "run")
BAR = 2.0  # seconds from the key (or the start) to the shell's prompt


def processes_naming(path):
    """The pids whose command line names path (the script's reader)."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if path.encode() in args:
            pids.append(int(pid))
    return pids


class RunScript(ScreenCase):
    def env(self, tmp):
        return {
            "LCMON_BUILD": os.path.dirname(LCMON),
            "LCMON_SKIP_SETUP": "1",
            "LCMON_PIPE": os.path.join(tmp, "run.pipe"),
            "LCMON_PYTHON": os.environ.get("LCMON_PYTHON", PYTHON),
        }

    def start(self, args=""):
        """scripts/run in a pane; its pane, the time it started, its pipe."""
        tmp = tempfile.mkdtemp(prefix="lcmon-run-")
        self.addCleanup(shutil.rmtree, tmp, True)
        env = self.env(tmp)
        t0 = time.monotonic()
        # config="": the harness makes no pipe of its own (the script does).
        p = Pane(self, 160, 45, reader=False, config="", env=env,
                 command='%s %s; echo "DONE-$?"' % (SCRIPT, args))
        return p, t0, env["LCMON_PIPE"]

    def time_to_prompt(self, p, since):
        """Seconds from since until the script has ended (DONE-status in the
        pane); fails after BAR, with the screen."""
        text = ""
        while time.monotonic() - since < BAR:
            text = p.capture()
            if re.search(r"^DONE-\d+$", text, re.M):
                return time.monotonic() - since, text
            time.sleep(0.02)
        self.fail("the terminal did not come back within %.1f s; the screen:\n%s" % (BAR, text))

    def check_returned(self, p, text, pipe, status):
        self.assertIn("DONE-%d" % status, text)
        self.assertNotIn("STAGE", text)  # the normal screen is back
        info = p.tmux("display-message", "-p", "-t", "0", "#{alternate_on} #{cursor_flag}")
        self.assertEqual(info.strip(), "0 1")
        self.assertEqual(processes_naming(pipe), [], "the script's reader is still running")

    def quit_with(self, key):
        p, _, pipe = self.start()
        p.wait_rows()  # the stage rows, and the script's reader connected
        t0 = time.monotonic()
        p.send(key)
        took, text = self.time_to_prompt(p, t0)
        sys.stderr.write("%s: the prompt %.2f s after the key\n" % (key, took))
        self.check_returned(p, text, pipe, 0)

    def test_q_returns_the_terminal(self):
        self.quit_with("q")

    def test_ctrl_c_returns_the_terminal(self):
        self.quit_with("C-c")

    def test_lcmon_failing_at_start_returns_the_terminal(self):
        p, t0, pipe = self.start("--no-such-option")
        took, text = self.time_to_prompt(p, t0)
        sys.stderr.write("failing at start: the prompt %.2f s after the start\n" % took)
        self.assertIn("--no-such-option: unknown option", text)
        self.check_returned(p, text, pipe, 2)

    def test_headless_ends_with_lcmon(self):
        """No terminal (its output to a log file): lcmon runs headless, with
        status lines; once it ends (--max-seconds) the script ends its
        reader and exits with lcmon's status. The reader's lines and
        summary join lcmon's in the log, none written over; no traceback."""
        tmp = tempfile.mkdtemp(prefix="lcmon-run-")
        self.addCleanup(shutil.rmtree, tmp, True)
        env = dict(os.environ, **self.env(tmp))
        seconds = 3
        log = os.path.join(tmp, "run.log")
        t0 = time.monotonic()
        with open(log, "w") as f:
            # A session of its own, so that a failure ends the reader too.
            proc = subprocess.Popen([SCRIPT, "--max-seconds", str(seconds)], env=env,
                                    stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                                    start_new_session=True)
        try:
            proc.wait(timeout=60 * SLOW)
        finally:
            if proc.poll() is None or processes_naming(env["LCMON_PIPE"]):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        took = time.monotonic() - t0
        sys.stderr.write("headless: ended %.2f s after the start\n" % took)
        with open(log, encoding="utf-8", errors="replace") as f:
            text = f.read()
        self.assertEqual(proc.returncode, 0, text[-2000:])
        self.assertNotIn("\0", text)
        for line in ("pipeline started", "[running]", "--max-seconds reached", "stopped after",
                     "layout lc0-current", "terminated after"):  # lcmon's, then the reader's
            self.assertIn(line, text)
        self.assertNotIn("Traceback", text)
        self.assertLess(took, seconds + BAR * SLOW)
        self.assertEqual(processes_naming(env["LCMON_PIPE"]), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
