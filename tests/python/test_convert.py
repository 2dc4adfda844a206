"""lcmon convert-config: upstream's DataLoaderConfig text (tests/pipeline/
upstream/) turned into lcmon YAML. Every upstream field is converted to the
value lcmon needs or kept as a comment; the result loads in lcmon and, for
the typical file pointed at the sample data, runs and feeds a reader.
Unknown fields, wrong kinds and syntax errors are refused with file, line
and column, all at once and in line order, and nothing is printed.

Environment: LCMON, LCMON_TEST_DATA, LCMON_SOURCE_ROOT, PYTHONPATH (python/).
"""

import os
import re
import subprocess
import tempfile
import unittest

import yaml

from lcmon import Loader

LCMON = os.environ["LCMON"]
DATA = os.path.abspath(os.environ["LCMON_TEST_DATA"])
FIXTURES = os.path.join(os.environ["LCMON_SOURCE_ROOT"], "tests", "pipeline", "upstream")

# Upstream's fields, block by block (the converter's tables must know each).
UPSTREAM_FIELDS = {
    "stage": ["name", "input"],
    "queue": ["name", "queue_capacity", "overflow_behavior"],
    "file_path_provider": ["directory", "output"],
    "chunk_source_loader": ["threads", "frame_format", "output"],
    "shuffling_chunk_pool": ["chunk_pool_size", "source_ingestion_threads",
                             "chunk_loading_threads", "hanse_sampling_threshold",
                             "hanse_sampling_gamma", "position_sampling", "cachehit_output",
                             "position_cache_size", "caching_threads", "output"],
    "chunk_rescorer": ["threads", "syzygy_paths", "gaviota_paths", "dist_temp", "dist_offset",
                       "dtz_boost", "new_input_format", "deblunder_threshold",
                       "deblunder_width", "st_q_theta", "output"],
    "chunk_unpacker": ["threads", "position_sampling_rate", "position_count", "prefetch_count",
                       "prefetch_output", "position_sampling", "output"],
    "shuffling_frame_sampler": ["threads", "reservoir_size_per_thread", "output"],
    "tensor_generator": ["threads", "batch_size", "output"],
    "chunk_source_splitter": ["output", "weight"],
    "simple_chunk_extractor": ["output"],
    "join_positions": ["output"],
    "position_sampling": ["diff_focus_q_weight", "diff_focus_pol_scale", "diff_focus_alpha",
                          "diff_focus_beta", "diff_focus_gamma", "diff_focus_tau",
                          "default_weight"],
}

# every_field.pbtxt as lcmon stages (position_weights with the keys given,
# lcmon's defaults being upstream's).
EVERY_FIELD = [
    {"name": "files", "file_path_provider": {"directory": "/data/run3"},
     "output": {"capacity": 16, "overflow": "block"}},
    {"name": "loader", "input": "files", "chunk_source_loader": {"threads": 2},
     "output": {"capacity": 32}},
    {"name": "split", "input": "loader",
     "chunk_source_splitter": {"outputs": [{"name": "train", "weight": 19},
                                           {"name": "test", "weight": 1}]},
     "output": {"capacity": 8}},
    {"name": "pool", "input": "split.train",
     "shuffling_chunk_pool": {
         "chunk_pool_size": 250000, "threads": 3,
         "hanse": {"threshold": 100, "gamma": 0.5,
                   "position_weights": {"alpha": 2, "beta": 0.1, "gamma": 1.5, "tau": 4,
                                        "default_weight": 0.25, "q_weight": 6.0,
                                        "pol_scale": 3.5}}},
     "output": {"capacity": 16, "overflow": "keep_newest"}},
    {"name": "rescorer", "input": "pool",
     "chunk_rescorer": {"threads": 2, "syzygy_paths": "/tb/syzygy",
                        "gaviota_paths": "/tb/gaviota", "dist_temp": 0.9, "dist_offset": 0.1,
                        "dtz_boost": 0.2, "deblunder_threshold": 0.1, "deblunder_width": 0.03,
                        "new_input_format": 3, "st_targets": "compute",
                        "st_theta": 0.75},
     "output": {"capacity": 8}},
    {"name": "unpacker", "input": "rescorer",
     "chunk_unpacker": {"threads": 2, "positions_per_chunk": 1,
                        "position_weights": {"q_weight": 1}, "st_targets": "keep"},
     "output": {"capacity": 4096, "overflow": "drop_newest"}},
    {"name": "test_reader", "input": "split.test", "chunk_reader": {},
     "output": {"capacity": 8}},
    {"name": "test_unpacker", "input": "test_reader",
     "chunk_unpacker": {"sampling_rate": 1, "st_targets": "keep"}},
    {"name": "sampler", "input": "unpacker",
     "shuffling_frame_sampler": {"reservoir_size": 1000000, "threads": 2}},
    {"name": "tensors", "input": "sampler",
     "tensor_generator": {"batch_size": 512, "layout": "current", "planes": "upstream",
                          "threads": 2},
     "output": {"capacity": 4}},
    {"name": "test_tensors", "input": "test_unpacker",
     "tensor_generator": {"batch_size": 1024, "layout": "current", "planes": "upstream"}},
    {"name": "train", "input": "tensors", "fifo_writer": {"path": "train.pipe"}},
    {"name": "test", "input": "test_tensors", "fifo_writer": {"path": "test.pipe"}},
]

# The fields every_field.pbtxt gives that lcmon has no equivalent for, and
# the trainer's schedule: each kept as a comment naming it.
COMMENTED = ["frame_format", "source_ingestion_threads", "cachehit_output",
             "position_cache_size", "caching_threads", "prefetch_count", "prefetch_output",
             "steps_per_network", "chunks_per_network"]


def convert(path_or_text, *args, stdin=None):
    if stdin is not None:
        return subprocess.run([LCMON, "convert-config", "-", *args], input=stdin,
                              capture_output=True, text=True, timeout=60)
    return subprocess.run([LCMON, "convert-config", path_or_text, *args],
                          capture_output=True, text=True, timeout=60)


def fixture(name):
    return os.path.join(FIXTURES, name)


class ConvertTests(unittest.TestCase):
    def test_every_field(self):
        with open(fixture("every_field.pbtxt")) as f:
            text = f.read()
        # The fixture gives every field upstream has.
        given = set(re.findall(r"\b([a-z_]+)\s*[:{<\[]", re.sub(r"#.*", "", text)))
        for block, fields in UPSTREAM_FIELDS.items():
            for name in fields:
                self.assertIn(name, given, "every_field.pbtxt lacks %s.%s" % (block, name))
        r = convert(fixture("every_field.pbtxt"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(yaml.safe_load(r.stdout)["stages"], EVERY_FIELD)
        comments = re.findall(r"^ *#(?: +#)? +(\w+): .*\(line (\d+)\)", r.stdout, re.M)
        self.assertEqual(sorted(name for name, _ in comments), sorted(COMMENTED))
        # Each comment names the line the field is on.
        lines = text.split("\n")
        for name, line in comments:
            self.assertIn(name, lines[int(line) - 1])
        self.assertIn("Not the loader's, so not converted: name, model, training.", r.stdout)
        self.assertIn("13 stages and 2 outputs converted", r.stderr)
        self.assertIn("9 fields kept as comments", r.stderr)

    def test_syntax_spellings_order_and_names(self):
        r = convert(fixture("syntax.pbtxt"))
        self.assertEqual(r.returncode, 0, r.stderr)
        stages = yaml.safe_load(r.stdout)["stages"]
        self.assertEqual([s["name"] for s in stages],
                         ["files", "src", "split", "pool_a", "unpack_a", "pool-b", "unpack-b",
                          "joined", "tensors"])
        by = {s["name"]: s for s in stages}
        self.assertEqual(by["files"]["file_path_provider"], {"directory": "data/run3"})
        self.assertEqual(by["split"]["chunk_source_splitter"]["outputs"],
                         [{"name": "a", "weight": 3}, {"name": "b", "weight": 1}])
        self.assertEqual(by["pool_a"]["input"], "split.a")
        self.assertEqual(by["pool_a"]["shuffling_chunk_pool"],
                         {"chunk_pool_size": 1000, "threads": 4})
        self.assertEqual(by["unpack_a"]["chunk_unpacker"],
                         {"sampling_rate": 0.5, "st_targets": "keep"})
        self.assertEqual(by["unpack-b"]["chunk_unpacker"],
                         {"positions_per_chunk": 2, "st_targets": "keep"})
        self.assertEqual(by["joined"]["inputs"], ["unpack_a", "unpack-b"])
        self.assertEqual(by["joined"]["join"], {"mode": "available"})
        self.assertEqual(by["tensors"]["tensor_generator"]["batch_size"], 64)
        self.assertIn('# upstream\'s name: "pool a"', r.stdout)
        self.assertIn("names no output", r.stdout)

    def test_typical_runs_and_feeds_a_reader(self):
        with open(fixture("typical.pbtxt")) as f:
            text = f.read()
        # The sample data, and sizes that fill with its 43 games.
        text = (text.replace('"/data/run3"', '"%s"' % DATA)
                .replace("chunk_pool_size: 50000", "chunk_pool_size: 100")
                .replace("reservoir_size_per_thread: 1000000", "reservoir_size_per_thread: 500")
                .replace("position_sampling_rate: 0.03", "position_sampling_rate: 0.5"))
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "typical.yaml")
            r = convert(None, "-o", out, stdin=text)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "")
            self.assertIn("<stdin>: 7 stages and 1 output converted to " + out, r.stderr)
            check = subprocess.run([LCMON, "--check-config", out], capture_output=True,
                                   text=True, timeout=60, cwd=tmp)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
            with Loader(out) as L:
                n = 0
                for batch in L.batches():
                    self.assertEqual(batch["inputs"].shape, (128, 112, 8, 8))
                    self.assertEqual(batch["values"].shape, (128, 6, 3))
                    n += 1
                    if n == 3:
                        break

    def assert_refused(self, text, want):
        """Each of `want` (a line:col and a phrase) in the errors, in this
        order, and nothing on stdout."""
        r = convert(None, stdin=text)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")
        lines = r.stderr.strip().split("\n")
        self.assertIn("cannot convert; nothing was written", lines[0])
        self.assertEqual(len(lines) - 1, len(want), r.stderr)
        for line, (place, phrase) in zip(lines[1:], want):
            self.assertTrue(line.startswith("lcmon: <stdin>:%s: " % place), (line, place))
            self.assertIn(phrase, line)

    def test_unknown_fields_and_wrong_kinds(self):
        text = ('data_loader {\n'
                '  stage {\n'
                '    name: "files"\n'
                '    file_path_provider { directroy: "/d" output { queue_capacity: -4 } }\n'
                '  }\n'
                '  stage {\n'
                '    name: "pool"\n'
                '    input: "filez"\n'
                '    shuffling_chunk_pool { chunk_pool_size: 1.5 chunk_pool_size: 3 }\n'
                '    chunk_unpackr {}\n'
                '  }\n'
                '  stage { name: "pool" tensor_generator { batch_size: "2" } }\n'
                '  stage { name: "x" chunk_source_loader { frame_format: V5TrainingData } }\n'
                '  outptu: "a:pool"\n'
                '}\n')
        self.assert_refused(text, [
            ("4:26", "unknown field 'directroy' (did you mean 'directory'?)"),
            ("4:67", "output.queue_capacity: expects a whole number, 0 or more, found a number '-4'"),
            ("8:12", "stage 'pool': input 'filez': no stage has this name (did you mean 'files'?)"),
            ("9:45", "chunk_pool_size: expects a whole number, 0 or more, found a number '1.5'"),
            ("9:49", "chunk_pool_size: given twice (first at line 9)"),
            ("10:5", "unknown field 'chunk_unpackr' (did you mean 'chunk_unpacker'?)"),
            ("12:3", "two stages named 'pool' (the first at line 6)"),
            ("12:55", "batch_size: expects a whole number, 0 or more, found a string '2'"),
            ("13:57", "frame_format: expects one of its names (V6TrainingData, V7TrainingData)"),
            ("14:3", "unknown field 'outptu' (did you mean 'output'?)"),
        ])

    def test_structure_errors(self):
        self.assert_refused('stage { name: "a" input: "b" chunk_source_loader {} }\n'
                            'stage { name: "b" input: "a" chunk_source_loader {} }\n',
                            [("1:1", "the stages 'a', 'b' read one another in a cycle")])
        self.assert_refused('stage { name: "s" input: "f" chunk_source_splitter '
                            '{ output { name: "a" } weight: [1, 2] } }\n'
                            'stage { name: "f" file_path_provider { directory: "d" } }\n'
                            'stage { name: "p" input: "s" shuffling_chunk_pool {} }\n',
                            [("1:75", "output and weight arrays must have same size: 1 vs 2"),
                             ("3:26", "the splitter has several outputs: name one ('s.a')")])
        self.assert_refused('stage { name: "f" file_path_provider {} }\n'
                            'stage { name: "t" }\n',
                            [("1:19", "file_path_provider needs a directory"),
                             ("2:1", "stage 't': no stage block")])
        self.assert_refused('model { blocks: 10 }\n',
                            [("1:1", "no data_loader { ... } block and no stage { ... } blocks")])
        self.assert_refused("data_loader { output: \"a\" }\n", [("1:1", "data_loader holds no stage")])
        self.assert_refused('stage { name: "p" input: "q.cache" shuffling_chunk_pool {} }\n'
                            'stage { name: "q" shuffling_chunk_pool '
                            '{ cachehit_output { name: "cache" } } }\n',
                            [("1:26", "lcmon has no cachehit_output")])

    def test_syntax_errors(self):
        cases = [
            ('stage { name: "a" file_path_provider { directory: /d } }', "1:51",
             "unexpected character '/'"),
            ('stage {\n  name: "a"\n', "3:1", "a '}' is missing"),
            ('stage { name: "a\n" }', "1:15", "does not end on its line"),
            ('stage { name "a" }', "1:14", "expected ':' or '{' after 'name'"),
            ('stage { name: "\\q" }', "1:16", "unknown escape"),
            ('stage { name: [1 2] }', "1:18", "expected ',' or ']'"),
            ('stage { name: 1.2.3 }', "1:15", "is not a number"),
        ]
        for text, place, phrase in cases:
            with self.subTest(text=text):
                self.assert_refused(text, [(place, phrase)])

    def test_usage(self):
        r = subprocess.run([LCMON, "convert-config"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage: lcmon convert-config FILE", r.stderr)
        r = subprocess.run([LCMON, "convert-config", "--help"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0)
        self.assertIn("DataLoaderConfig", r.stdout)
        r = convert("/nonexistent/loader.pbtxt")
        self.assertEqual(r.returncode, 1)
        self.assertIn("/nonexistent/loader.pbtxt: cannot open config", r.stderr)
        # A result lcmon refuses is printed, to be fixed by hand, and says so.
        r = convert(None, stdin='stage { name: "f" file_path_provider { directory: "d" } }\n'
                               'stage { name: "s" input: "f" shuffling_frame_sampler {} }\n')
        self.assertEqual(r.returncode, 1)
        self.assertIn("shuffling_frame_sampler:", r.stdout)
        self.assertIn("converted, but lcmon refuses the result", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
