"""The first hour, second pass (issue 36): what a new user gets wrong is
named, with what to do.

- a misspelt LCMON_* variable (LCMON_PIEP) is warned about at start, naming
  the variable meant; every variable the shipped configs and the Python
  package read is known (and listed by --help); one a config reads itself
  is not warned about; LCMON_GAMES, the Parquet path's other name, is read
  as LCMON_PARQUET with a warning;
- a game file given as the data folder: the run stops at once (as
  --check-config does), naming the folder that holds it; a relative data
  folder that is missing is named with the working directory;
- the wrong kind of configuration: upstream's protobuf text (the
  convert-config command to run), lcmon YAML given to convert-config (the
  command to run it), a tab indenting YAML (its line and column), a misspelt
  required key (the misspelling first, not "missing");
- two games of one name in two subfolders are two keys: with WORLD_SIZE=2
  the ranks share the 50 chunks by the hash of each path relative to the
  data folder, and an anchor names a path (a bare name still works; one
  found in two folders is warned about); anchor-set to a key no game has
  says that the count stays;
- a pipe in a folder that does not exist: lcmon and the reader say to make
  the folder; python -m lcmon on a busy pipe prints the error alone;
- the run id prints one way (16 hex digits) in the log, ctl and Python; the
  plurals of `lcmon chunks check`.

Environment: LCMON (the executable), LCMON_TEST_DATA, LCMON_SOURCE_ROOT,
LCMON_TEST_SLOW, PYTHONPATH (python/).
"""

import fcntl
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import lcmon
from lcmon import Control, NotAStream
from test_split import fnv1a, mix64  # the rank shares' hash, as docs/pipelines.md states it

LCMON = os.environ["LCMON"]
DATA = os.path.abspath(os.environ["LCMON_TEST_DATA"])
ROOT = os.environ["LCMON_SOURCE_ROOT"]
SLOW = float(os.environ.get("LCMON_TEST_SLOW", "1"))
WAIT = 60 * SLOW


def share_of(key, member, world):
    """The rank that keeps chunk `member` of the source with this key
    (lc_share_of, src/stages/stage.c)."""
    return mix64(fnv1a(os.fsencode(key)) ^ mix64(member)) % world


def sample_games():
    games = []
    for root, _, files in sorted(os.walk(DATA)):
        games += [os.path.join(root, f) for f in sorted(files) if f.endswith(".gz")]
    return games


def read(path):
    with open(path) as f:
        return f.read()


def run(*args, env=None, cwd=None, timeout=30):
    return subprocess.run([LCMON, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout * SLOW)


def clean_env(**more):
    """The environment without the variables the shipped configs read."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LCMON_DATA", "LCMON_PIPE", "LCMON_PARQUET", "LCMON_GAMES")}
    env.update(more)
    return env


class Case(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lcmon-first-hour-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)


class Environment(Case):
    def test_misspelt_variable_named_at_start(self):
        """LCMON_PIEP: the run says at start which variable was meant
        (else it writes ./lcmon.pipe while the trainer waits on the other)."""
        env = clean_env(LCMON_DATA=DATA, LCMON_PIEP=self.path("trainer.pipe"))
        r = run("--no-ui", "--max-seconds", "1", "--status-interval", "0", env=env, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r" warn .*environment: LCMON_PIEP is set, but nothing reads "
                                   r"it: did you mean LCMON_PIPE\?")
        r = run("--check-config", os.path.join(ROOT, "config", "default.yaml"), env=env)
        self.assertIn("LCMON_PIEP is set, but nothing reads it: did you mean LCMON_PIPE?",
                      r.stderr)
        # The suite's own environment (LCMON_TEST_DATA, LCMON_SOURCE_ROOT, ...)
        # and a variable a configuration reads itself are known.
        config = self.write("mine.yaml", read(os.path.join(ROOT, "config", "default.yaml"))
                            .replace("${LCMON_PIPE", "${LCMON_PIPES"))
        env = clean_env(LCMON_DATA=DATA, LCMON_PIPES=self.path("mine.pipe"))
        r = run("--check-config", config, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("environment:", r.stderr)

    def test_every_variable_is_known_and_listed(self):
        """Each variable the shipped configs and the Python package read is
        in --help's list, and set all at once none is warned about."""
        names = set()
        for path in glob.glob(os.path.join(ROOT, "config", "*.yaml")):
            names |= set(re.findall(r"\$\{(LCMON_\w+)", read(path)))
        for path in glob.glob(os.path.join(ROOT, "python", "lcmon", "*.py")):
            names |= set(re.findall(r"environ(?:\.get\(|\[)\"(LCMON\w*)\"", read(path)))
        self.assertTrue({"LCMON_DATA", "LCMON_TRAIN_PIPE", "LCMON_TEST_PIPE", "LCMON"} <= names,
                        names)
        helptext = run("--help").stdout
        listed = helptext[helptext.index("Environment:"):helptext.index("Exit status")]
        for name in sorted(names):
            self.assertRegex(listed, r"\n  %s +\S" % name)
        page = os.path.join(os.path.dirname(os.path.abspath(LCMON)), "lcmon.1")
        man = subprocess.run(["man", "-l", page], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, MANWIDTH="80", MANPAGER="cat")).stdout
        environment = man[man.index("ENVIRONMENT"):man.index("EXIT STATUS")]
        for name in sorted(names):
            self.assertRegex(environment, r"\b%s\b" % name)
        env = clean_env(**{n: self.path("x") for n in names})
        r = run("--check-config", os.path.join(ROOT, "config", "train_test.yaml"), env=env)
        self.assertNotIn("environment:", r.stderr)

    def test_old_parquet_name(self):
        """LCMON_GAMES (the README's name for a while) is read as LCMON_PARQUET,
        saying so; with both set, LCMON_GAMES is ignored, saying so."""
        tables = self.path("tables")
        os.mkdir(tables)
        config = os.path.join(ROOT, "config", "encoder.yaml")
        r = run("--check-config", config, env=clean_env(LCMON_GAMES=tables))
        self.assertIn("environment: LCMON_GAMES is the old name of LCMON_PARQUET: read as "
                      "LCMON_PARQUET=%s" % tables, r.stderr)
        self.assertRegex(r.stderr + r.stdout, re.escape(tables))
        r = run("--check-config", config, env=clean_env(LCMON_GAMES=tables, LCMON_PARQUET=tables))
        self.assertIn("LCMON_GAMES is ignored: it is the old name of LCMON_PARQUET, which is set",
                      r.stderr)
        self.assertNotIn("LCMON_GAMES", run("--print-schema").stdout)


class DataFolder(Case):
    def test_game_file_as_the_data_folder(self):
        """LCMON_DATA=a game file: the run stops at once, exit status 1,
        saying which folder to give (it used to wait for ever for games)."""
        game = sample_games()[0]
        env = clean_env(LCMON_DATA=game, LCMON_PIPE=self.path("p.pipe"))
        want = ("directory: %s is a file, not a folder: give the folder that holds it: %s"
                % (game, os.path.dirname(game)))
        t0 = time.monotonic()
        r = run("--no-ui", "--max-seconds", str(20 * SLOW), env=env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertLess(time.monotonic() - t0, 10 * SLOW)
        self.assertIn(want, r.stderr)
        r = run("--check-config", os.path.join(ROOT, "config", "default.yaml"), env=env)
        self.assertEqual(r.returncode, 1)
        self.assertIn(want, r.stderr)

    def test_missing_relative_folder_names_the_working_directory(self):
        env = clean_env(LCMON_DATA="games/run3", LCMON_PIPE=self.path("p.pipe"))
        r = run("--check-config", os.path.join(ROOT, "config", "default.yaml"), env=env,
                cwd=self.tmp)
        self.assertIn("games/run3 (in the working directory %s): No such file or directory"
                      % os.path.realpath(self.tmp), r.stderr)


class WrongConfig(Case):
    def test_upstream_textproto_given_as_config(self):
        text = read(os.path.join(ROOT, "tests", "pipeline", "upstream", "typical.pbtxt"))
        path = self.write("run.textproto", text)
        want = ("run.textproto: this looks like protobuf text format (upstream lczero-training's "
                "configuration), not lcmon's YAML: convert it first with: lcmon convert-config "
                "%s -o %s" % (path, self.path("run.yaml")))
        for args in (("--check-config", path), ("--no-ui", "--config", path)):
            r = run(*args)
            self.assertEqual(r.returncode, 1, args)
            self.assertIn(want, r.stderr, args)
            self.assertNotIn("libyaml", r.stderr)
        # and the command it gives works
        r = subprocess.run([LCMON, "convert-config", path, "-o", self.path("run.yaml")],
                           capture_output=True, text=True)
        self.assertTrue(os.path.exists(self.path("run.yaml")), r.stderr)

    def test_lcmon_yaml_given_to_convert_config(self):
        path = self.write("my.yaml", run("--print-default-config").stdout)
        r = run("convert-config", path)
        self.assertEqual(r.returncode, 1)
        self.assertIn("%s: is lcmon YAML already (a 'stages' list), not upstream's protobuf "
                      "text: nothing to convert; run it with: lcmon --config %s" % (path, path),
                      r.stderr)
        self.assertNotIn("is not a number", r.stderr)

    def test_tab_indenting_yaml(self):
        for text, where in (("stages:\n  - name: files\n\tfile_path_provider: {}\n", "3:1"),
                            ("stages:\n\t- name: files\n", "2:1"),
                            ("seed: 1\nstages:\n  - name: files\n    file_path_provider:\n"
                             "  \t  directory: data\n", "5:3")):
            path = self.write("tab.yaml", text)
            r = run("--check-config", path)
            self.assertEqual(r.returncode, 1)
            self.assertIn("%s:%s: a tab indents this line, and tabs cannot indent YAML: indent "
                          "it with spaces" % (path, where), r.stderr)

    def test_misspelt_required_key_says_the_cause_first(self):
        """batch_sise: the problem is the misspelling, not batch_size missing
        (the screen's R shows the first problem)."""
        text = run("--print-default-config").stdout
        self.assertIn("batch_size:", text)
        path = self.write("sise.yaml", text.replace("batch_size:", "batch_sise:"))
        r = run("--check-config", path, env=clean_env(LCMON_DATA=DATA))
        self.assertEqual(r.returncode, 1)
        first = r.stderr.splitlines()[0]
        self.assertIn("tensor_generator.batch_sise: unknown key (did you mean 'batch_size'?)",
                      first)
        self.assertNotIn("missing", r.stderr)


def same_names_in_two_folders(root, folders, n=25):
    """game_00.gz .. game_NN.gz in each folder (2n chunks), settled."""
    games = sample_games()
    k = 0
    for folder in folders:
        os.makedirs(os.path.join(root, folder))
        for i in range(n):
            dst = os.path.join(root, folder, "game_%02d.gz" % i)
            shutil.copy(games[k % len(games)], dst)
            t = time.time() - 3600
            os.utime(dst, (t, t))
            k += 1


def pool_config(folder):
    return {
        "seed": 3,
        "stages": [
            {"name": "files", "file_path_provider": {"directory": folder}},
            {"name": "sources", "input": "files", "chunk_source_loader": {"threads": 1}},
            {"name": "pool", "input": "sources",
             "shuffling_chunk_pool": {"chunk_pool_size": 1000, "threads": 1}},
            {"name": "unpacker", "input": "pool", "chunk_unpacker": {"sampling_rate": 0.5}},
            {"name": "tensors", "input": "unpacker", "tensor_generator": {"batch_size": 8}},
            {"name": "writer", "input": "tensors", "fifo_writer": {"path": "set by Loader"}},
        ],
    }


def wait_loaded(test, control):
    deadline = time.monotonic() + WAIT
    while True:
        g = Control.find(control.metrics()["all_time"], "pool", "gauge_metrics",
                         "initial_load_done")
        if g is not None and g.get("value", 0) == 1:
            return
        test.assertLess(time.monotonic(), deadline, "the pool's initial load never ended")
        time.sleep(0.05)


def window(control):
    return Control.find(control.metrics()["all_time"], "pool", "gauge_metrics",
                        "chunks_in_window")["value"]


class Keys(Case):
    def test_ranks_share_same_named_games_by_their_paths(self):
        """WORLD_SIZE=2 over two folders of the same 25 names: each rank
        keeps the chunks the hash of their relative path gives it, the two
        together all 50; by name alone each pair went to one rank."""
        for folders in (("run1", "run2"), ("a", "b"), ("old", "new")):
            keys = ["%s/game_%02d.gz" % (f, i) for f in folders for i in range(25)]
            by_path = sum(share_of(k, 0, 2) == 0 for k in keys)
            by_name = sum(share_of(os.path.basename(k), 0, 2) == 0 for k in keys)
            if by_path != by_name:
                break
        self.assertNotEqual(by_path, by_name)
        data = self.path("data")
        same_names_in_two_folders(data, folders)
        got = []
        for rank in (0, 1):
            env = {"WORLD_SIZE": "2", "RANK": str(rank)}
            with lcmon.Loader(pool_config(data), env=env, start_timeout=WAIT) as L:
                wait_loaded(self, L.control)
                got.append(window(L.control))
        self.assertEqual(got, [by_path, 50 - by_path])

    def test_anchor_names_a_path(self):
        """The anchor b/game_10.gz counts the 28 chunks after it (game_11 to
        game_24 of both folders: names first, then folders); a bare name
        found in both folders counts from after the newest of them, with a
        warning; anchor-set to a key no game has says the count stays."""
        data = self.path("data")
        same_names_in_two_folders(data, ("a", "b"))
        log = self.path("lcmon.log")
        with lcmon.Loader(pool_config(data), anchor="b/game_10.gz", log=log,
                          start_timeout=WAIT) as L:
            wait_loaded(self, L.control)
            self.assertEqual(L.control.anchor(), ("b/game_10.gz", 28))
            key = Control.find(L.control.metrics()["all_time"], "pool", "text_metrics",
                               "last_chunk_key")
            self.assertEqual(key["value"], "b/game_24.gz")
            r = subprocess.run([LCMON, "ctl", L.socket, "anchor-set", "b/game_1O.gz"],
                               capture_output=True, text=True, timeout=WAIT)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("no game in the window has the key 'b/game_1O.gz'", r.stdout)
            self.assertIn("the count stays 28", r.stdout)
            self.assertEqual(L.control.anchor(), ("b/game_1O.gz", 28))
            L.control.set_anchor("a/game_03.gz")  # one it has: no word
        text = read(log)
        self.assertRegex(text, r" warn .*anchor-set: no game in the window has the key "
                               r"'b/game_1O\.gz'")
        self.assertNotIn("'a/game_03.gz' (misspelt", text)
        os.remove(log)
        with lcmon.Loader(pool_config(data), anchor="game_10.gz", log=log,
                          start_timeout=WAIT) as L:
            wait_loaded(self, L.control)
            self.assertEqual(L.control.anchor(), ("game_10.gz", 28))
        self.assertRegex(read(log), r" warn .*the anchor 'game_10\.gz' names games of "
                                           r"that name in several subfolders")


class Pipes(Case):
    def test_pipe_in_a_missing_folder(self):
        folder = self.path("nowhere", "sub")
        pipe = os.path.join(folder, "train.pipe")
        want = ("cannot make %s: the folder %s does not exist (make it first: mkdir -p %s"
                % (pipe, folder, folder))
        env = clean_env(LCMON_DATA=DATA, LCMON_PIPE=pipe)
        r = run("--no-ui", "--max-seconds", "5", env=env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(want, r.stderr)
        r = run("--check-config", os.path.join(ROOT, "config", "default.yaml"), env=env)
        self.assertIn(want, r.stderr)
        with self.assertRaisesRegex(NotAStream, r"its folder %s does not exist .*mkdir -p %s"
                                    % (re.escape(folder), re.escape(folder))):
            lcmon.BatchReader(pipe, wait_for_pipe=0)

    def test_busy_pipe_prints_the_error_alone(self):
        pipe = self.path("busy.pipe")
        os.mkfifo(pipe, 0o600)
        fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another reader's lock
        try:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.path.dirname(os.path.dirname(lcmon.__file__))
            r = subprocess.run([sys.executable, "-m", "lcmon", pipe], env=env,
                               capture_output=True, text=True, timeout=WAIT)
        finally:
            os.close(fd)
        self.assertEqual(r.returncode, 1)
        self.assertIn("is already being read by process %d" % os.getpid(), r.stderr)
        self.assertEqual(r.stdout, "")


class OneForm(Case):
    def test_run_id_in_hex_everywhere(self):
        """The log's "run 0123abcd...", ctl status's, Control.run()'s and the
        reader's, printed, are one string."""
        data = self.path("data")
        same_names_in_two_folders(data, ("a",), n=3)
        log = self.path("lcmon.log")
        with lcmon.Loader(pool_config(data), log=log, start_timeout=WAIT) as L:
            with lcmon.BatchReader(L.pipe, wait_for_pipe=WAIT) as reader:
                batch = reader.read_batch()
                ctl = subprocess.run([LCMON, "ctl", L.socket, "status"], capture_output=True,
                                     text=True, timeout=WAIT).stdout
                shown = {"ctl": re.search(r"^run (\S+)$", ctl, re.M).group(1),
                         "Control.run()": str(L.control.run()["run_id"]),
                         "in a dict": re.search(r"'run_id': (\w+)",
                                                repr(L.control.run())).group(1),
                         "reader": "%s" % reader.run_id,
                         "batch": str(batch.run_id)}
        shown["log"] = re.search(r"\brun ([0-9a-f]{16}), seed", read(log)).group(1)
        self.assertRegex(shown["log"], r"^[0-9a-f]{16}$")
        for where, text in shown.items():
            self.assertEqual(text, shown["log"], where)

    def test_plurals(self):
        """`lcmon chunks check` on one file, the Parquet source's epoch of one."""
        folder = self.path("one")
        os.mkdir(folder)
        shutil.copy(sample_games()[0], os.path.join(folder, "g.gz"))
        r = run("chunks", "check", folder)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout.splitlines()[-1], r": 1 file checked: 1 ok, 0 bad; 1 chunk, "
                                                    r"0 bad; \d+ positions; 0 tar members "
                                                    r"skipped; 0 other files not read$")
        table = os.path.join(ROOT, "tests", "parquet", "fixtures",
                             "duckdb_snappy_rowgroups.parquet")
        r = run("--no-ui", "--config", os.path.join(ROOT, "config", "encoder.yaml"),
                "--max-seconds", "1", "--status-interval", "0",
                env=clean_env(LCMON_PARQUET=table, LCMON_PIPE=self.path("e.pipe")))
        self.assertIn("epoch 1: 1 Parquet file under %s" % table, r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
