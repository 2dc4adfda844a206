"""The lcmon command line: help and version, the embedded default config,
--check-config explaining errors with the stage and the field, a bad config
stopping lcmon before anything starts, and SIGINT/SIGTERM stopping a running
pipeline promptly with exit status 0.

Environment: LCMON (the executable), LC_TEST_DATA (the sample data).
"""

import os
import signal
import subprocess
import tempfile
import time
import unittest

import yaml

LCMON = os.environ["LCMON"]
DATA = os.environ["LC_TEST_DATA"]


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

    def test_default_config_is_valid_yaml_and_checks(self):
        r = run("--print-default-config")
        self.assertEqual(r.returncode, 0)
        doc = yaml.safe_load(r.stdout)
        names = [s["name"] for s in doc["stages"]]
        self.assertEqual(names[0], "files")
        self.assertIn("fifo_writer", doc["stages"][-1])
        path = self.write("default.yaml", r.stdout)
        r = run("--check-config", path)
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
        self.assertIn("stage 'loader'", r.stderr)
        self.assertIn("thread", r.stderr)

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
                [LCMON, "--no-ui", "--quiet"],
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
            finally:
                if p.poll() is None:
                    p.kill()
                    p.communicate()


if __name__ == "__main__":
    unittest.main(verbosity=2)
