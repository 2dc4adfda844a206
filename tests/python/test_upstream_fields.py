"""Every field of docs/upstream.md (the project's list of upstream's loader
fields) through `lcmon convert-config`, one at a time: a small upstream
config with every stage type is converted with the field added (or its
value changed, for a field the config has), and

- a field the list maps must turn up as the lcmon setting the row names,
  absent or different without it, with the very value given (a scalar);
- a field the list marks "not supported" must be kept as a comment naming
  it and its line;
- either way upstream's schema must take it (no error), and `lcmon
  --check-config` must take the converted configuration (the folders are
  real ones: the sample data, tests/syzygy, Debian's Gaviota tables).

Then what the list's introduction says of every conversion: `planes:
upstream` on the tensor generators, `st_targets: keep` on the unpackers and
`compute` on the rescorers; what upstream refuses refused with upstream's
words (rate and count together or neither, prefetch mode's rules, a
splitter's weights), a deblunder threshold without a width left out with a
line saying so; the lines printed for each lcmon choice not turned on; and
one run end to end: a converted configuration with a rescorer, run on
sample games of formats 3 and 5, gives exactly the tensors of the same
pipeline written by hand with upstream's settings (and not those of
lcmon's defaults).

The other direction (every field the converter's schema knows is in the
list) is tests/pipeline/test_upstream_schema.c.

chunk_rescorer rows are checked like the others when lcmon has the
chunk_rescorer stage type (it has since issue 27); a build without it would
have the converter comment the stage out, and those rows would be checked
for the schema only, the test saying so.

Environment: LCMON, LCMON_SOURCE_ROOT, LCMON_TEST_DATA, PYTHONPATH (python/).
"""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

from lcmon import Loader

LCMON = os.environ["LCMON"]
DOC = os.path.join(os.environ["LCMON_SOURCE_ROOT"], "docs", "upstream.md")
DATA = os.path.abspath(os.environ.get("LCMON_TEST_DATA") or
                       os.path.join(os.environ["LCMON_SOURCE_ROOT"], "tests", "data"))
SYZYGY = os.path.join(os.environ["LCMON_SOURCE_ROOT"], "tests", "syzygy")
GAVIOTA = "/usr/share/gaviotatb/gtb4"  # Debian's gaviotatb (3-piece tables)

BASE = """data_loader {
  stage { name: "files" file_path_provider { directory: "DATA" } }
  stage { name: "loader" input: "files" chunk_source_loader { } }
  stage { name: "split" input: "loader"
          chunk_source_splitter { output { name: "train" } output { name: "test" }
                                  weight: 1 weight: 1 } }
  stage { name: "pool" input: "split.train" shuffling_chunk_pool { chunk_pool_size: 1000 } }
  RESCORER
  stage { name: "unpacker" input: "UNPACKER_INPUT" chunk_unpacker { position_count: 2 } }
  stage { name: "reader" input: "split.test" simple_chunk_extractor { } }
  stage { name: "test_unpacker" input: "reader" chunk_unpacker { position_sampling_rate: 1 } }
  stage { name: "join" input: "unpacker" input: "test_unpacker" join_positions { } }
  stage { name: "sampler" input: "join" shuffling_frame_sampler { } }
  stage { name: "tensors" input: "sampler" tensor_generator { } }
  output: "train:tensors"
}
""".replace("DATA", DATA)
EXTRA_CHAIN = """  stage { name: "extra_reader" input: "split.extra" simple_chunk_extractor { } }
  stage { name: "extra_unpacker" input: "extra_reader" chunk_unpacker { position_count: 1 } }
"""
RESCORER = 'stage { name: "rescorer" input: "pool" chunk_rescorer { } }'

# The stage of BASE that holds each block.
STAGE_OF = {
    "file_path_provider": "files", "chunk_source_loader": "loader",
    "chunk_source_splitter": "split", "shuffling_chunk_pool": "pool",
    "chunk_rescorer": "rescorer", "chunk_unpacker": "unpacker",
    "simple_chunk_extractor": "reader", "join_positions": "join",
    "shuffling_frame_sampler": "sampler", "tensor_generator": "tensors",
    "queue": "files", "position_sampling": "unpacker",
}
# Rows that are the converter's own code, not a stage's table.
BY_CODE = ("(top level)", "data_loader", "stage")


def read_rows():
    """The rows of the first table (the fields); the later tables are not
    configuration."""
    rows = []
    in_table = False
    with open(DOC) as f:
        for line in f:
            if line.startswith("| block | field"):
                in_table = True
                continue
            if not line.startswith("|"):
                if in_table and rows:
                    break
                continue
            if not in_table or line.startswith("|---"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            block, field = (c.strip("`") for c in cells[:2])
            rows.append((block, field, cells[2], cells[3]))
    return rows


def convert(text):
    return subprocess.run([LCMON, "convert-config", "-"], input=text, capture_output=True,
                          text=True, timeout=60)


def stages_of(out):
    return {s["name"]: s for s in yaml.safe_load(out)["stages"]}


def value_for(field, kind):
    """An upstream value of the type, as text and as lcmon should write it
    (None: checked otherwise). Folders are real ones, for --check-config."""
    if field == "directory":
        return '"%s"' % os.path.join(DATA, "lc0-v0.31.2-fmt1"), os.path.join(DATA, "lc0-v0.31.2-fmt1")
    if field == "syzygy_paths":
        return '"%s"' % SYZYGY, SYZYGY
    if field == "gaviota_paths":
        return '"%s"' % GAVIOTA, GAVIOTA
    if kind.startswith("uint"):
        return "7", 7
    if kind.startswith("int"):
        return "3", 3
    if kind.startswith(("double", "float")):
        return "0.25", 0.25
    if kind.startswith("string"):
        return '"/tb/x"', "/tb/x"
    if kind.startswith("enum"):
        second = re.findall(r"`(\w+)`", kind)[1]  # not the default
        return second, None
    if kind.startswith("queue"):
        return "{ queue_capacity: 3 }", None
    return "{ diff_focus_alpha: 2 }", None  # position_sampling


def with_field(block, field, kind, lcmon, rescorer):
    """BASE with the field given in its block (and what the row says it
    needs, and what upstream needs with it); the value lcmon should write."""
    text = BASE.replace("RESCORER", RESCORER if rescorer else "")
    text = text.replace("UNPACKER_INPUT", "rescorer" if rescorer else "pool")
    value, want = value_for(field, kind)
    need = re.search(r"only with `(\w+)`", lcmon)
    extra = " %s: 1" % need.group(1) if need and need.group(1) != "position_count" else ""
    if block == "schedule":  # training { schedule { } } of a whole training config
        return "training { schedule { %s: %s } }\n" % (field, value) + text, want
    if block == "queue":
        if field == "name":  # the splitter's outputs are named
            return text.replace('name: "train"', 'name: "learn"').replace(
                "split.train", "split.learn"), "learn"
        return text.replace('file_path_provider { directory: "%s" }' % DATA,
                            'file_path_provider { directory: "%s" output { %s: %s } }'
                            % (DATA, field, value)), want
    if block == "position_sampling":
        return text.replace("position_count: 2",
                            "position_count: 2 position_sampling { %s: %s }" % (field, value)), want
    if field == "position_sampling_rate":  # the test unpacker's: the other has a count
        return text.replace("position_sampling_rate: 1", "%s: %s" % (field, value)), want
    if field in ("prefetch_count", "prefetch_output"):  # prefetch mode as upstream takes it
        return text.replace("position_count: 2", 'position_count: 1 prefetch_count: 7 '
                            'prefetch_output { name: "cache" }'), want
    if block == "chunk_source_splitter":
        if field == "weight":
            return text.replace("weight: 1 weight: 1", "weight: 7 weight: 3"), [7, 3]
        # A third output, and a chain reading it into the join.
        text = text.replace('output { name: "test" }',
                            'output { name: "test" } output { name: "extra" }')
        text = text.replace("weight: 1 weight: 1", "weight: 1 weight: 1 weight: 1")
        text = text.replace('input: "test_unpacker" join_positions',
                            'input: "test_unpacker" input: "extra_unpacker" join_positions')
        return text.replace('  output: "train:tensors"', EXTRA_CHAIN + '  output: "train:tensors"'), None
    opener = "%s { " % block
    start = text.index(opener) + len(opener)
    body = text[start:text.index("}", start)]
    if re.search(r"\b%s:" % field, body):  # BASE gives it: another value
        new_body = re.sub(r"\b%s: \S+" % field, "%s: %s" % (field, value), body)
        return text[:start] + new_body + text[start + len(body):], want
    return text[:start] + "%s: %s%s " % (field, value, extra) + text[start:], want


def check_config(yaml_text):
    """lcmon --check-config on the converted configuration."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "converted.yaml")
        with open(path, "w") as f:
            f.write(yaml_text)
        return subprocess.run([LCMON, "--check-config", path], capture_output=True, text=True,
                              timeout=60, cwd=tmp)


def walk(stage, path):
    """The value at path (stage type or `output` first) in a converted
    stage; KeyError when absent."""
    parts = path.split(".")
    node = stage["output"] if parts[0] == "output" else stage[next(
        k for k in stage if k not in ("name", "input", "inputs", "output"))]
    for p in parts[1:]:
        node = node[p]
    return node


class UpstreamFieldsTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        schema = subprocess.run([LCMON, "--print-schema"], capture_output=True, text=True,
                                timeout=60).stdout
        cls.has_rescorer = re.search(r"^\s+chunk_rescorer:\s+# stage type", schema,
                                     re.M) is not None
        cls.rows = read_rows()
        base = convert(BASE.replace("RESCORER", "").replace("UNPACKER_INPUT", "pool"))
        assert base.returncode == 0, base.stderr
        cls.base = base.stdout

    def test_the_list_is_read(self):
        self.assertGreater(len(self.rows), 50)
        for block, field, kind, lcmon in self.rows:
            self.assertTrue(kind and lcmon, "%s.%s: a row without type or lcmon" % (block, field))
        # The stage-control table after it is not read as fields.
        self.assertNotIn("reset_chunk_anchor", [field for _, field, _, _ in self.rows])

    def test_structure(self):
        """(top level), data_loader and stage rows: BASE uses each of them."""
        stages = stages_of(self.base)
        self.assertEqual(len(stages), 11)  # ten stages and the output's writer
        self.assertIn("fifo_writer", stages["train"])  # data_loader.output
        self.assertEqual(stages["train"]["input"], "tensors")
        self.assertEqual(stages["pool"]["input"], "split.train")  # stage.input
        self.assertEqual(stages["join"]["inputs"], ["unpacker", "test_unpacker"])
        for block, field, _, lcmon in self.rows:
            if block in BY_CODE:
                self.assertFalse(lcmon.startswith("not supported"), field)
        check = check_config(self.base)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_every_field(self):
        skipped = []
        gaviota = os.path.isdir(GAVIOTA) and "gaviota_paths" in subprocess.run(
            [LCMON, "--print-schema"], capture_output=True, text=True, timeout=60).stdout
        for block, field, kind, lcmon in self.rows:
            if block in BY_CODE:
                continue
            with self.subTest(field="%s.%s" % (block, field)):
                rescorer = block == "chunk_rescorer"
                text, want = with_field(block, field, kind, lcmon, rescorer)
                r = convert(text)
                self.assertTrue(r.stdout.startswith("#"),
                                "%s.%s refused: %s" % (block, field, r.stderr))
                if rescorer and not self.has_rescorer:
                    skipped.append(field)
                    continue
                self.assertEqual(r.returncode, 0, r.stderr)
                if field != "gaviota_paths" or gaviota:
                    check = check_config(r.stdout)
                    self.assertEqual(check.returncode, 0, "%s.%s: --check-config: %s" % (
                        block, field, check.stdout + check.stderr))
                if lcmon.startswith("not supported"):
                    at = re.search(r"\b%s\s*[:{]" % field, text).start()
                    line = text[:at].count("\n") + 1
                    self.assertRegex(r.stdout, r"#\s*%s: .*\(line %d\)" % (field, line))
                    continue
                self.check_mapped(block, field, lcmon, r.stdout, want)
        if skipped:
            print("chunk_rescorer: this lcmon has no such stage type yet; its fields %s were "
                  "checked against the schema only" % ", ".join(skipped))

    def check_mapped(self, block, field, lcmon, out, want):
        path = re.match(r"`([\w.]+)`", lcmon).group(1)
        name = "test_unpacker" if field == "position_sampling_rate" else STAGE_OF[block]
        if block == "queue" and field == "name":
            name = "split"
        if block == "position_sampling":
            path = "chunk_unpacker." + path
        try:
            got = walk(stages_of(out)[name], path)
        except (KeyError, StopIteration):
            self.fail("%s.%s: the converted stage '%s' has no %s (docs/upstream.md says it "
                      "becomes that):\n%s" % (block, field, name, path, out))
        before = None
        if name in stages_of(self.base):
            try:
                before = walk(stages_of(self.base)[name], path)
            except (KeyError, StopIteration):
                before = None
        self.assertNotEqual(got, before, "%s.%s: %s is the same without it" % (block, field, path))
        if path.endswith(".outputs"):
            if field == "weight":
                self.assertEqual([o["weight"] for o in got], want)
            elif field == "name":
                self.assertEqual(got[0]["name"], want)
            else:
                self.assertEqual([o["name"] for o in got], ["train", "test", "extra"])
        elif want is not None:  # the value given, as lcmon writes it
            self.assertEqual(got, want, "%s.%s -> %s" % (block, field, path))

    # -- what every conversion writes -------------------------------------

    def test_parity_switches_written(self):
        """planes: upstream on every tensor generator; st_targets: keep on
        every unpacker, compute on every rescorer (st_theta when given)."""
        text = BASE.replace("RESCORER", RESCORER).replace("UNPACKER_INPUT", "rescorer")
        r = convert(text)
        self.assertEqual(r.returncode, 0, r.stderr)
        stages = stages_of(r.stdout)
        tg = stages["tensors"]["tensor_generator"]
        self.assertEqual((tg["layout"], tg["planes"]), ("current", "upstream"))
        for name in ("unpacker", "test_unpacker"):
            self.assertEqual(stages[name]["chunk_unpacker"]["st_targets"], "keep")
        rs = stages["rescorer"]["chunk_rescorer"]
        self.assertEqual(rs["st_targets"], "compute")
        self.assertNotIn("st_theta", rs)  # lcmon's default theta is upstream's
        r = convert(text.replace("chunk_rescorer { }", "chunk_rescorer { st_q_theta: 0.9 }"))
        self.assertEqual(stages_of(r.stdout)["rescorer"]["chunk_rescorer"]["st_theta"], 0.9)
        # Nothing else of the rescorer's switches is written: the defaults
        # are upstream's.
        self.assertEqual(sorted(rs), ["st_targets"])

    # -- what upstream refuses --------------------------------------------

    def assert_refused(self, text, at, phrase):
        """Refused, nothing printed, one error at the first `at` of the
        text (its line and column), saying phrase."""
        r = convert(text)
        k = text.index(at)
        place = "%d:%d" % (text.count("\n", 0, k) + 1, k - text.rfind("\n", 0, k))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")
        lines = r.stderr.strip().split("\n")
        self.assertEqual(len(lines), 2, r.stderr)
        self.assertTrue(lines[1].startswith("lcmon: <stdin>:%s: " % place), (lines[1], place))
        self.assertIn(phrase, lines[1])

    def test_unpacker_refusals(self):
        one = 'stage { name: "u" input: "p" chunk_unpacker { %s } }\n'
        pool = 'stage { name: "p" shuffling_chunk_pool { } }\n'
        exactly = ('stage \'u\': chunk_unpacker: upstream refuses it ("Exactly one of '
                   'position_sampling_rate or position_count must be set."); ')
        # Both: the later of the two is pointed at.
        self.assert_refused(pool + one % "position_count: 4 position_sampling_rate: 0.5",
                            "position_sampling_rate", exactly + "keep one")
        self.assert_refused(pool + one % "threads: 2", "chunk_unpacker",
                            exactly + "give position_sampling_rate: 1.0 for every position")
        prefetch = 'prefetch_output { name: "cache" }'
        cases = [
            ("position_count: 1 prefetch_count: 4", "chunk_unpacker",
             "prefetch_count and prefetch_output must both be set or both unset."),
            ("prefetch_count: 4 " + prefetch, "chunk_unpacker",
             "position_count must be set when using prefetch mode."),
            ("position_count: 1 position_sampling_rate: 1 prefetch_count: 4 " + prefetch,
             "position_sampling_rate", "position_sampling_rate cannot be used in prefetch mode."),
            ("position_count: 2 prefetch_count: 4 " + prefetch, "position_count",
             "position_count must equal 1 in prefetch mode"),
            ("position_count: 1 prefetch_count: 4 prefetch_output { } output { }",
             "prefetch_output", "ChunkUnpacker output names must be different"),
        ]
        for body, place, phrase in cases:
            with self.subTest(body=body):
                self.assert_refused(pool + one % body, place, phrase)
        # Prefetch mode as upstream takes it converts (the prefetch fields
        # as comments).
        r = convert(pool + one % ("position_count: 1 prefetch_count: 4 " + prefetch))
        self.assertEqual(r.returncode, 1, r.stderr)  # lcmon: a pool without a provider
        self.assertRegex(r.stdout, r"# prefetch_count: 4 \(line 2\)")

    def test_splitter_refusals(self):
        split = ('stage { name: "f" file_path_provider { directory: "d" } }\n'
                 'stage { name: "s" input: "f" chunk_source_splitter { %s } }\n')
        self.assert_refused(split % 'output { name: "a" } output { name: "b" }',
                            "chunk_source_splitter",
                            "\"ChunkSourceSplitter output and weight arrays must have same "
                            "size: 2 vs 0\"); give one weight an output")
        self.assert_refused(split % 'output { name: "a" } output { name: "b" } weight: 3',
                            "weight",
                            "must have same size: 2 vs 1")
        self.assert_refused(split % 'output { name: "a" } output { name: "b" } weight: [0, 0]',
                            "weight", "\"ChunkSourceSplitter requires at least one output with "
                            "positive weight.\"")
        self.assert_refused(split % "", "chunk_source_splitter",
                            "\"ChunkSourceSplitter requires at least 1 output.\"")

    # -- what the converter says -------------------------------------------

    def notices(self, stderr):
        return [line.split(": ", 2)[2] for line in stderr.strip().split("\n")[1:]]

    def test_printed_lines(self):
        """One line for each lcmon choice not turned on, on stderr and at the
        head of the YAML; none twice."""
        planes = ("planes 104-111 as upstream's loader writes them, whatever the input "
                  "format (right for format 1 only); `planes: input_format` on the "
                  "tensor_generator writes them as each record's format defines them")
        kept_v6 = ("V6 records' short-term targets kept as stored (q_st as read, d_st 0), as "
                   "upstream's loader without a chunk_rescorer; `st_targets: compute` on the "
                   "chunk_unpacker computes them over the game")
        r = convert(BASE.replace("RESCORER", "").replace("UNPACKER_INPUT", "pool"))
        self.assertEqual(self.notices(r.stderr), [planes, kept_v6])  # two unpackers, one line
        for line in (planes, kept_v6):
            self.assertIn("# - " + line + "\n", r.stdout)
        # A chain whose every unpacker follows a rescorer with tables.
        chain = ('stage { name: "f" file_path_provider { directory: "%s" } }\n'
                 'stage { name: "l" input: "f" chunk_source_loader { } }\n'
                 'stage { name: "p" input: "l" shuffling_chunk_pool { } }\n'
                 'stage { name: "r" input: "p" chunk_rescorer { %%s } }\n'
                 'stage { name: "u" input: "r" chunk_unpacker { position_count: 1 } }\n'
                 'stage { name: "t" input: "u" tensor_generator { } }\n' % DATA)
        r = convert(chain % ('syzygy_paths: "%s" deblunder_threshold: 0.1 deblunder_width: 0.05'
                             % SYZYGY))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.notices(r.stderr), [
            "deblunder by upstream's rules (its region, its starting values, the last "
            "position's visits); `deblunder_rules: lcmon` on the chunk_rescorer uses lcmon's "
            "(docs/pipelines.md)",
            "short-term targets summed in float, as upstream's rescorer; `st_math: double` on "
            "the chunk_rescorer sums them in double",
            "games upstream's rescorer refuses (its Validate) are dropped, as upstream; "
            "`invalid_games: keep` on the chunk_rescorer passes them on",
            "losing moves are not zeroed at tablebase positions, as upstream; "
            "`zero_losing_moves: true` on the chunk_rescorer zeroes them",
            planes])
        # Gaviota: distances to mate only, and upstream's need of every table.
        r = convert(chain % 'gaviota_paths: "/tb/g3:/tb/g45"')
        got = self.notices(r.stderr)
        self.assertIn("Gaviota tables give distances to mate only, as upstream; "
                      "`gaviota_results: true` on the chunk_rescorer rescores results with them "
                      "too", got)
        self.assertIn("upstream's loader starts only when gaviota_paths holds every Gaviota "
                      "table of 3, 4 and 5 pieces (\"UNEXPECTED gaviota availability\"); lcmon "
                      "takes any set of tables", got)
        # A ',' in a folder list: lc0 reads one folder.
        r = convert(chain % 'syzygy_paths: "/tb/a,/tb/b"')
        self.assertIn("chunk_rescorer 'r': syzygy_paths holds ',': lc0 splits folders on ':' "
                      "only, so upstream reads the whole text as one folder, where lcmon splits "
                      "on ',' too; write ':' between folders", self.notices(r.stderr))

    def test_deblunder_threshold_alone(self):
        text = BASE.replace("RESCORER", RESCORER).replace("UNPACKER_INPUT", "rescorer")
        r = convert(text.replace("chunk_rescorer { }", "chunk_rescorer { deblunder_threshold: 0.1 }"))
        self.assertEqual(r.returncode, 0, r.stderr)
        rs = stages_of(r.stdout)["rescorer"]["chunk_rescorer"]
        self.assertNotIn("deblunder_threshold", rs)  # upstream would not deblunder
        line = text.count("\n", 0, text.index("chunk_rescorer { }")) + 1
        self.assertRegex(r.stdout, r"# deblunder_threshold: 0.1 \(line %d\): not converted: "
                         r"upstream deblunders only with deblunder_width too" % line)
        self.assertIn("chunk_rescorer 'rescorer': deblunder_threshold without deblunder_width: "
                      "upstream does not deblunder then, so this configuration does not either; "
                      "to deblunder, give both (deblunder_width: 0 for a sharp threshold)",
                      self.notices(r.stderr))
        # Both: both written, as given.
        r = convert(text.replace("chunk_rescorer { }", "chunk_rescorer { deblunder_threshold: 0.1 "
                                 "deblunder_width: 0 }"))
        rs = stages_of(r.stdout)["rescorer"]["chunk_rescorer"]
        self.assertEqual((rs["deblunder_threshold"], rs["deblunder_width"]), (0.1, 0))


# -- end to end ---------------------------------------------------------------

# An upstream loader with a rescorer, every position of every game once
# (the extractor, then rate 1), and lcmon's hand-written equivalent with
# upstream's settings: rescorer st_targets compute, unpacker keep, planes
# upstream. The converted one runs with its provider told not to watch, so
# that the run ends (the tensors do not depend on it).
UPSTREAM_RUN = """data_loader {
  stage { name: "files" file_path_provider { directory: "DIR" } }
  stage { name: "loader" input: "files" chunk_source_loader { threads: 1 } }
  stage { name: "games" input: "loader" simple_chunk_extractor { } }
  stage { name: "rescorer" input: "games" chunk_rescorer { syzygy_paths: "SYZYGY" } }
  stage { name: "unpacker" input: "rescorer" chunk_unpacker { position_sampling_rate: 1 } }
  stage { name: "tensors" input: "unpacker" tensor_generator { batch_size: 32 } }
  output: "train:tensors"
}
"""
HAND_RUN = """stages:
  - name: files
    file_path_provider: {directory: 'DIR', watch: false}
  - name: loader
    input: files
    chunk_source_loader: {threads: 1}
  - name: games
    input: loader
    chunk_reader: {}
  - name: rescorer
    input: games
    chunk_rescorer: {syzygy_paths: 'SYZYGY', st_targets: compute}
  - name: unpacker
    input: rescorer
    chunk_unpacker: {sampling_rate: 1.0, shuffle: false, st_targets: ST}
  - name: tensors
    input: unpacker
    tensor_generator: {batch_size: 32, layout: current PLANES}
  - name: train
    input: tensors
    fifo_writer: {path: '${LCMON_PIPE:-train.pipe}'}
"""


def run_rows(config):
    """Every row lcmon writes for the configuration (YAML text), as bytes
    of inputs, policy and values, sorted (the orders of the two runs may
    differ; the rows may not)."""
    rows = []
    with Loader(config) as loader:
        for batch in loader.batches(timeout=60):
            for k in range(batch["inputs"].shape[0]):
                rows.append(batch["inputs"][k].tobytes() + batch["policy"][k].tobytes() +
                            batch["values"][k].tobytes())
    return sorted(rows)


class EndToEndTests(unittest.TestCase):
    def test_converted_run_gives_upstreams_tensors(self):
        with tempfile.TemporaryDirectory() as tmp:
            games = os.path.join(tmp, "games")
            # V6 games of formats 3 and 5: planes 104-111 and st targets
            # differ between upstream's settings and lcmon's defaults there.
            for folder in ("lc0-v0.31.2-fmt3", "lc0-v0.31.2-fmt5"):
                shutil.copytree(os.path.join(DATA, folder), os.path.join(games, folder))
            r = convert(UPSTREAM_RUN.replace("DIR", games).replace("SYZYGY", SYZYGY))
            self.assertEqual(r.returncode, 0, r.stderr)
            converted = r.stdout.replace('directory: "%s"' % games,
                                         'directory: "%s"\n      watch: false' % games)
            self.assertIn("watch: false", converted)
            hand = HAND_RUN.replace("DIR", games).replace("SYZYGY", SYZYGY)
            got = run_rows(converted)
            want = run_rows(hand.replace("ST", "keep").replace(" PLANES", ", planes: upstream"))
            self.assertGreater(len(got), 500)
            self.assertEqual(len(got), len(want))
            self.assertTrue(got == want, "the converted configuration's tensors differ from "
                            "upstream's settings written by hand")
            # lcmon's own defaults give other tensors on these games: the
            # comparison can fail.
            own = run_rows(hand.replace("ST", "compute").replace(" PLANES", ""))
            self.assertEqual(len(own), len(want))
            self.assertNotEqual(own, want)


if __name__ == "__main__":
    unittest.main()
