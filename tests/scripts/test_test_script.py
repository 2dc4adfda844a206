"""scripts/test itself (issue 36): one Ctrl-C in its terminal stops the
whole command within 2 s, ending the test that runs, with a one-line
summary of what ran and exit status 130, and no traceback of a broken
pipe; piped into another program its lines arrive one by one as they are
written; uninterrupted it ends "N passed, N failed" with the right exit
status; --help, and an unknown option refused before anything runs.

LCMON_TEST_TINY=DIR makes the real script build and run the tiny meson
project of tests/scripts/tiny in DIR (a test that passes, one that runs
until it is stopped) in place of the set-up and lcmon's three builds: the
same steps, filter, counting and signal handling, in seconds.

Environment: LCMON_SOURCE_ROOT (the source tree).
"""

import os
import pty
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

ROOT = os.environ.get("LCMON_SOURCE_ROOT") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "test")
BAR = 2.0  # seconds from the Ctrl-C to the end of the command (issue 36)
WAIT = 60  # for meson to set up the tiny project and start its tests


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


class TestScript(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lcmon-test-script-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.mark = os.path.join(self.dir, "long.pid")
        self.env = dict(os.environ, LCMON_TEST_TINY=os.path.join(self.dir, "tiny"),
                        LCMON_TINY_MARK=self.mark)
        self.env.pop("MESON_TEST_ARGS", None)

    def wait_for_long_test(self, out):
        """The long test's pid, once it runs and the quick one has passed
        (the two run side by side: a Ctrl-C before the quick one's end
        would interrupt both); out() reads what came so far."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            text = out()
            if os.path.exists(self.mark) and re.search(r"\bquick\s+OK\b", text):
                with open(self.mark) as f:
                    return int(f.read())
            time.sleep(0.05)
        self.fail("the tiny project's long test did not start, or its quick test did not pass; "
                  "the output:\n%s" % out())

    def test_ctrl_c_in_a_terminal_stops_it(self):
        pid, fd = pty.fork()
        if pid == 0:  # the child: a session of its own, the pty its terminal
            os.chdir(ROOT)
            os.execve("/bin/bash", ["bash", SCRIPT], self.env)
        data = b""

        def out():
            nonlocal data
            while select.select([fd], [], [], 0)[0]:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: the terminal's last user is gone
                    break
                if not chunk:
                    break
                data += chunk
            return data.decode(errors="replace")

        try:
            long_pid = self.wait_for_long_test(out)
            t0 = time.monotonic()
            os.write(fd, b"\x03")  # Ctrl-C: SIGINT to the terminal's foreground
            status = None
            while time.monotonic() - t0 < BAR and status is None:
                out()
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = st
                time.sleep(0.02)
            took = time.monotonic() - t0
            text = out()
            self.assertIsNotNone(status, "still running %.1f s after Ctrl-C:\n%s" % (BAR, text))
            pid = None
        finally:
            if pid:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            os.close(fd)
        self.assertEqual(os.waitstatus_to_exitcode(status), 130, text)
        self.assertLess(took, BAR)
        self.assertNotIn("Traceback", text)
        self.assertNotIn("BrokenPipeError", text)
        self.assertNotIn("Received SIGTERM", text)  # meson's words for it, left out
        lines = [l for l in text.replace("\r", "").split("\n") if l.strip() and l != "^C"]
        self.assertRegex(lines[-1], r"^scripts/test: interrupted after \d+ s in the tiny "
                                    r"build's tests: 1 passed, 0 failed, 1 interrupted$")
        self.assertEqual(sum("interrupted after" in l for l in lines), 1, text)
        self.assertFalse(alive(long_pid), "the interrupted test still runs")

    def test_lines_arrive_one_by_one_into_a_pipe(self):
        """Piped (into tee), each line arrives when it is written: the quick
        test's line while the long one still runs, not in 4 KB bursts at the
        end. SIGINT to the command's process group (a Ctrl-C where it runs)
        ends it as in a terminal."""
        p = subprocess.Popen(["bash", SCRIPT], cwd=ROOT, env=self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)
        data = b""

        def out():
            nonlocal data
            while select.select([p.stdout], [], [], 0)[0]:
                chunk = os.read(p.stdout.fileno(), 65536)
                if not chunk:
                    break
                data += chunk
            return data.decode(errors="replace")

        try:
            self.assertTrue(out() is not None)
            long_pid = self.wait_for_long_test(out)
            deadline = time.monotonic() + WAIT
            while "quick OK" not in re.sub(r" +", " ", out()) and time.monotonic() < deadline:
                time.sleep(0.05)
            text = out()
            self.assertIn("quick OK", re.sub(r" +", " ", text))
            self.assertTrue(alive(long_pid) and p.poll() is None)
            self.assertTrue(text.startswith("scripts/test: "), text)
            os.killpg(p.pid, signal.SIGINT)
            p.wait(BAR * 5)
            rest = out() + p.stdout.read().decode(errors="replace")
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            p.stdout.close()
        self.assertEqual(p.returncode, 130, rest)
        self.assertIn("1 passed, 0 failed, 1 interrupted", rest)

    def test_counts_and_exit_status(self):
        for fail, last, code in (("0", "2 passed, 0 failed", 0), ("1", "1 passed, 1 failed", 1)):
            env = dict(self.env, LCMON_TINY_SECONDS="0", LCMON_TINY_FAIL=fail)
            r = subprocess.run(["bash", SCRIPT], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=WAIT)
            self.assertEqual(r.returncode, code, r.stdout + r.stderr)
            self.assertEqual(r.stdout.rstrip("\n").split("\n")[-1], last, r.stdout)

    def test_help_and_the_first_line(self):
        r = subprocess.run(["bash", SCRIPT, "--help"], capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        for word in ("Usage: scripts/test", "--quick", "--fuzz", "Ctrl-C", "20 minutes",
                     "LCMON_TEST_TINY"):
            self.assertIn(word, r.stdout)
        r = subprocess.run(["bash", SCRIPT, "--no-such"], capture_output=True, text=True,
                           timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown option --no-such (use --quick, --fuzz[=SECONDS], --help)", r.stderr)
        self.assertEqual(r.stdout, "", "nothing ran before the refusal")


if __name__ == "__main__":
    unittest.main(verbosity=2)
