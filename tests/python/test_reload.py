"""Reloading the configuration of a running headless lcmon (issue 25):

- `lcmon ctl SOCKET reload` after the YAML was edited: the pipeline restarts
  with it (batches of the new size, a new stage name in `ctl stages` and
  the hello), the anchor moved at run time and --seed are kept, and one
  BatchReader reads on across it, run after run;
- a YAML with problems (two bad values, a data directory that is not
  there, the file gone): every problem printed, exit 1, and nothing
  changes: the same run goes on, its batches keep coming; once the file is
  fixed the reload goes through;
- an anchor: edited in the file takes effect, unless one was set at run
  time (that one is kept, and the log says so);
- lcmon.Control.reload(): what was loaded, and the new stages in its hello;
  its refusal as a ControlError naming every problem; a moved pipe logged;
- the built-in default configuration has no file: nothing to reload.

Environment: LCMON, LCMON_TEST_DATA, LCMON_TEST_SLOW, PYTHONPATH (python/
and tests/python, for test_restarts' chain and trainer thread).
"""

import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

from lcmon import Control, ControlError
from test_restarts import CONFIG, DATA, LCMON, WAIT, Trainer

class Reload(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lcmon-reload-")
        self.pipe = os.path.join(self.dir, "lcmon.pipe")
        self.sock = os.path.join(self.dir, "lcmon.sock")
        self.config = os.path.join(self.dir, "config.yaml")
        self.stderr = os.path.join(self.dir, "stderr.log")
        self.proc = None
        self.trainer = None

    def tearDown(self):
        # The trainer first, while batches come: it stops at the next one
        # (after lcmon it would wait for a next run).
        if self.trainer:
            self.trainer.stop = True
            self.trainer.join(WAIT)
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(2)
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(WAIT)
        log = self.log() if self.proc else ""
        shutil.rmtree(self.dir, ignore_errors=True)
        # A clean stop (under the sanitizers: nothing leaked or misused).
        if self.proc:
            self.assertEqual(self.proc.returncode, 0, log[-3000:])

    def write(self, batch=16, rate=0.5, sampler="sampler", data=DATA, anchor=None, pipe=None):
        """test_restarts' chain, changed as asked, saved whole (as an editor
        saves it)."""
        text = (CONFIG % (data, batch, "current", pipe or self.pipe)).replace(
            "sampling_rate: 0.5", "sampling_rate: %s" % rate).replace(
            "name: sampler", "name: " + sampler).replace("input: sampler", "input: " + sampler)
        if anchor:
            text = text.replace("store_bytes: 64M}", "store_bytes: 64M, anchor: '%s'}" % anchor)
        with open(self.config + ".new", "w") as f:
            f.write(text)
        os.replace(self.config + ".new", self.config)

    def start(self, *extra, config=True, env=None):
        with open(self.stderr, "w") as err:
            self.proc = subprocess.Popen(
                [LCMON, "--no-ui", "--status-interval", "0", "--socket", self.sock,
                 *(["--config", self.config] if config else []), *extra],
                stdout=subprocess.DEVNULL, stderr=err, env=env)
        deadline = time.monotonic() + WAIT
        while not os.path.exists(self.sock):
            self.assertIsNone(self.proc.poll(), self.log())
            self.assertLess(time.monotonic(), deadline, "no socket: " + self.log())
            time.sleep(0.02)

    def read(self):
        self.trainer = Trainer(self.pipe)
        self.trainer.start()

    def wait_for(self, run, n):
        """n batches of the trainer's run `run` (0: the first); lcmon's log
        with the failure."""
        try:
            self.trainer.wait_for(run, n)
        except AssertionError as e:
            r = self.trainer.reader
            how = r and "reader: done %s, stopped %s, truncated %s, %d runs, %d headers, %d " \
                "batches, %d torn" % (r.done, r.stopped, r.truncated, r.runs, r.headers_read,
                                      r.batches_read, r.torn_batches)
            raise AssertionError("%s; %s; lcmon's log:\n%s" % (e, how, self.log()[-4000:])) \
                from None

    def log(self):
        with open(self.stderr) as f:
            return f.read()

    def ctl(self, *args):
        return subprocess.run([LCMON, "ctl", self.sock, *args], capture_output=True, text=True,
                              timeout=WAIT)

    def status(self):
        r = self.ctl("status")
        self.assertEqual(r.returncode, 0, r.stderr)
        return dict(l.split(" ", 1) for l in r.stdout.strip().split("\n"))

    def stages(self):
        r = self.ctl("stages")
        self.assertEqual(r.returncode, 0, r.stderr)
        return [l.split("\t")[0] for l in r.stdout.strip().split("\n")[1:]]

    def anchor(self):
        r = self.ctl("anchor", "get")
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.rstrip("\n").split("\t")

    def test_ctl_reload_keeps_the_anchor_and_the_reader(self):
        self.write(batch=16)
        self.start("--seed", "5")  # over the file's seed 1, at start and at reload
        self.read()
        self.wait_for(0, 3)
        before = self.status()
        self.assertEqual(before["config"], self.config)
        self.assertEqual(before["seed"], "5")
        key = "game_000010.gz"
        r = self.ctl("anchor", "set", key)
        self.assertEqual(r.returncode, 0, r.stderr)

        self.write(batch=32, sampler="frames")
        r = self.ctl("reload")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "reloaded %s: 7 stages\n" % self.config)

        # The reader follows to the new run, which has the new batch size.
        self.wait_for(1, 3)
        t = self.trainer
        self.assertIsNone(t.error)
        for run, rows in ((0, 16), (1, 32)):
            got = t.batches_of_run(run)
            self.assertEqual([g[1] for g in got], list(range(len(got))), "run %d" % run)
            self.assertTrue(all(g[2] == rows for g in got), "run %d: %r" % (run, got))
        self.assertEqual(t.reader.torn_batches, 0)
        after = self.status()
        self.assertNotEqual(after["run"], before["run"])
        self.assertEqual(after["run"], "%016x" % t.batches_of_run(1)[0][0])
        self.assertEqual(after["state"], "PIPELINE_RUNNING")
        self.assertEqual(after["seed"], "5")
        # The new stage list, in the hello; the anchor moved at run time kept.
        self.assertEqual(self.stages(), ["files", "sources", "pool", "unpacker", "frames",
                                         "tensors", "writer"])
        self.assertEqual(self.anchor()[0], key)
        log = self.log()
        self.assertIn("config reloaded from %s: 7 stages" % self.config, log)
        self.assertIn("pool: the anchor '%s' is kept" % key, log)

    def test_a_broken_config_changes_nothing(self):
        self.write(batch=16)
        self.start()
        self.read()
        self.wait_for(0, 3)
        before = self.status()
        stages = self.stages()

        def refused(what, *problems):
            r = self.ctl("reload")
            self.assertEqual(r.returncode, 1, what + ": " + r.stdout + r.stderr)
            lines = r.stderr.rstrip("\n").split("\n")
            self.assertRegex(lines[0], r"^lcmon ctl: not reloaded \(nothing changed%s\): " %
                             ("; %d problems" % len(problems) if len(problems) > 1 else ""))
            self.assertEqual(len(lines), len(problems), "%s: %r" % (what, lines))
            for line, problem in zip(lines, problems):
                self.assertRegex(line, problem, what)
            # The same run, still running, with the same stages; batches come.
            self.assertEqual(self.status()["run"], before["run"], what)
            self.assertEqual(self.status()["state"], "PIPELINE_RUNNING", what)
            self.assertEqual(self.stages(), stages, what)
            n = len(self.trainer.batches_of_run(0))
            self.wait_for(0, n + 2)
            self.assertEqual(len(self.trainer.batches_of_run(1)), 0, what)

        self.write(batch=0, rate=7)
        where = re.escape(self.config)
        refused("two bad values",
                where + r":14:\d+: stage 'unpacker': chunk_unpacker.sampling_rate: 7 ",
                "^lcmon ctl: " + where + r":20:\d+: stage 'tensors': "
                "tensor_generator.batch_size: 0 ")
        self.write(data=os.path.join(self.dir, "nowhere"))
        refused("a data directory that is not there (as --check-config checks)",
                "stage 'files': file_path_provider.directory: %s: No such file" %
                re.escape(os.path.join(self.dir, "nowhere")))
        os.unlink(self.config)
        refused("the file gone", where)
        log = self.log()
        self.assertIn("config not reloaded from %s: 2 problems; nothing changed" % self.config,
                      log)
        self.assertRegex(log, "config reload: " + where + r":20:\d+: stage 'tensors'")

        # Fixed: it goes through.
        self.write(batch=8)
        r = self.ctl("reload")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.wait_for(1, 2)
        self.assertTrue(all(g[2] == 8 for g in self.trainer.batches_of_run(1)))

    def test_an_edited_anchor_applies_unless_one_was_set_at_run_time(self):
        self.write()
        self.start()
        self.assertEqual(self.anchor()[0], "")
        self.write(anchor="game_000010.gz")
        self.assertEqual(self.ctl("reload").returncode, 0)
        self.assertEqual(self.anchor()[0], "game_000010.gz")
        # Set at run time, it is what the trainer counts from: it stays.
        r = self.ctl("anchor", "set", "game_000020.gz")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.write(anchor="game_000030.gz")
        self.assertEqual(self.ctl("reload").returncode, 0)
        self.assertEqual(self.anchor()[0], "game_000020.gz")
        self.assertIn("pool: the anchor 'game_000020.gz' set at run time is kept across the "
                      "restart, over the configuration's 'game_000030.gz'", self.log())

    def test_control_reload(self):
        self.write(batch=16)
        self.start()
        with Control(self.sock, timeout=WAIT) as c:
            self.assertEqual(c.hello.get("config"), self.config)
            self.assertIn("sampler", c.stages())
            self.write(batch=16, sampler="frames")
            self.assertEqual(c.reload(), "reloaded %s: 7 stages" % self.config)
            self.assertIn("frames", c.stages())
            self.assertNotIn("sampler", c.stages())
            self.write(batch=0)
            with self.assertRaises(ControlError) as e:
                c.reload()
            self.assertIn("not reloaded (nothing changed)", str(e.exception))  # one problem
            self.assertIn("tensor_generator.batch_size: 0", str(e.exception))
            self.assertEqual(c.state(), "PIPELINE_RUNNING")
            self.assertIn("frames", c.stages())
            # A pipe moved: the log says where the batches go now.
            other = os.path.join(self.dir, "other.pipe")
            self.write(pipe=other)
            c.reload()
        self.assertIn("writer: the batches go to %s now, no longer to %s" % (other, self.pipe),
                      self.log())

    def test_the_default_config_has_nothing_to_reload(self):
        env = dict(os.environ, LCMON_DATA=DATA, LCMON_PIPE=self.pipe)
        self.start(config=False, env=env)
        self.assertEqual(self.status()["config"], "(built-in default)")
        r = self.ctl("reload")
        self.assertEqual(r.returncode, 1)
        self.assertIn("nothing to reload: lcmon runs its built-in default configuration",
                      r.stderr)
        self.assertEqual(self.status()["state"], "PIPELINE_RUNNING")


if __name__ == "__main__":
    unittest.main(verbosity=2)
