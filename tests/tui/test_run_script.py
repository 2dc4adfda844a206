"""scripts/run, as a user runs it (issue 25): in a tmux pane (screen_harness.py)
it shows lcmon's screen with its own reader connected, and the terminal
comes back within 2 s of q, of Ctrl-C, and of lcmon failing at start, with
its reader gone; without a terminal it runs headless and ends with lcmon.

The script runs the lcmon of this build directory (LCMON_BUILD) and skips
scripts/setup (LCMON_SKIP_SETUP=1): a test installs nothing and builds
nothing; everything after setup is the script's own path. Its pipe is in a
temporary folder (LCMON_PIPE), not the source tree.

The 2 s after q is the bar a user sees, not scaled by LCMON_TEST_SLOW (only
the waits for the screen and the log are): what it times is lcmon's clean
stop and exit and the script ending its reader, which take a fraction of it
in the sanitizer builds too.
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
        """scripts/run in a pane; its pane and its pipe."""
        tmp = tempfile.mkdtemp(prefix="lcmon-run-")
        self.addCleanup(shutil.rmtree, tmp, True)
        env = self.env(tmp)
        # config="": the harness makes no pipe of its own (the script does).
        p = Pane(self, 160, 45, reader=False, config="", env=env,
                 command='%s %s; echo "DONE-$?"' % (SCRIPT, args))
        return p, env["LCMON_PIPE"]

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
        p, pipe = self.start()
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
        """Timed from lcmon's error on the screen (it has failed): the
        tmux server, the shell and the script starting before it are not
        the script's ending, and take longer than the bar under load."""
        p, pipe = self.start("--no-such-option")
        p.wait_for("lcmon's error", lambda t: "--no-such-option: unknown option" in t, timeout=20)
        t0 = time.monotonic()
        took, text = self.time_to_prompt(p, t0)
        sys.stderr.write("failing at start: the prompt %.2f s after lcmon's error\n" % took)
        self.assertIn("--no-such-option: unknown option", text)
        self.check_returned(p, text, pipe, 2)

    def test_headless_ends_with_lcmon(self):
        """No terminal (its output to a log file): lcmon runs headless, with
        status lines; once it ends the script ends its reader and exits with
        lcmon's status. The reader's lines and summary join lcmon's in the
        log, none written over; no traceback.

        lcmon is ended once the log shows the whole condition: a status
        line and the reader's layout line, which it prints on its first
        batch's header (it connected, and batches flow). A fixed run
        (--max-seconds 3) ended before the reader had even imported numpy
        on a loaded machine. --max-seconds is passed as the bound it is."""
        tmp = tempfile.mkdtemp(prefix="lcmon-run-")
        self.addCleanup(shutil.rmtree, tmp, True)
        env = dict(os.environ, **self.env(tmp))
        log = os.path.join(tmp, "run.log")
        with open(log, "w") as f:
            # A session of its own, so that a failure ends the reader too.
            proc = subprocess.Popen([SCRIPT, "--max-seconds", str(int(120 * SLOW))], env=env,
                                    stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                                    start_new_session=True)
        try:
            self.wait_in_log(proc, log, ("[running]", "layout lc0-current"), 60 * SLOW)
            t0 = time.monotonic()
            os.kill(self.lcmon_of(proc.pid), signal.SIGTERM)  # as a service manager stops it
            proc.wait(timeout=60 * SLOW)
        finally:
            if proc.poll() is None or processes_naming(env["LCMON_PIPE"]):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        took = time.monotonic() - t0
        sys.stderr.write("headless: ended %.2f s after lcmon's SIGTERM\n" % took)
        with open(log, encoding="utf-8", errors="replace") as f:
            text = f.read()
        self.assertEqual(proc.returncode, 0, text[-2000:])
        self.assertNotIn("\0", text)
        for line in ("pipeline started", "[running]", "Terminated received: stopping",
                     "stopped after", "layout lc0-current", "terminated after"):
            self.assertIn(line, text)  # lcmon's, then the reader's
        self.assertNotIn("Traceback", text)
        self.assertLess(took, BAR * SLOW)
        self.assertEqual(processes_naming(env["LCMON_PIPE"]), [])

    def wait_in_log(self, proc, log, lines, timeout):
        """Until every one of lines is in the log; fails with the log when
        the script ends first or after timeout seconds."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline and proc.poll() is None:
            with open(log, encoding="utf-8", errors="replace") as f:
                text = f.read()
            if all(l in text for l in lines):
                return
            time.sleep(0.05)
        self.fail("the log did not show %s (script %s):\n%s"
                  % (" and ".join(lines), "ended" if proc.poll() is not None else "running",
                     text[-2000:]))

    def lcmon_of(self, script):
        """The pid of the lcmon the script (pid script) runs."""
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % pid) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    exe = f.read().split(b"\0")[0]
            except (OSError, IndexError, ValueError):
                continue
            if ppid == script and exe == LCMON.encode():
                return int(pid)
        self.fail("the script (pid %d) runs no %s" % (script, LCMON))


if __name__ == "__main__":
    unittest.main(verbosity=2)
