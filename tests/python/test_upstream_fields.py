"""Every field of docs/upstream.md (the project's list of upstream's loader
fields) through `lcmon convert-config`, one at a time: a small upstream
config with every stage type is converted with the field added (or its
value changed, for a field the config has), and

- a field the list maps must turn up as the lcmon setting the row names,
  absent or different without it (with the very value given when the row
  names the setting and nothing more);
- a field the list marks "not supported" must be kept as a comment naming
  it and its line;
- either way upstream's schema must take it (no error).

The other direction (every field the converter's schema knows is in the
list) is tests/pipeline/test_upstream_schema.c.

chunk_rescorer rows are checked like the others when lcmon has the
chunk_rescorer stage type (it has since issue 27); a build without it would
have the converter comment the stage out, and those rows would be checked
for the schema only, the test saying so.

Environment: LCMON, LCMON_SOURCE_ROOT.
"""

import os
import re
import subprocess
import unittest

import yaml

LCMON = os.environ["LCMON"]
DOC = os.path.join(os.environ["LCMON_SOURCE_ROOT"], "docs", "upstream.md")

BASE = """data_loader {
  stage { name: "files" file_path_provider { directory: "/data/run" } }
  stage { name: "loader" input: "files" chunk_source_loader { } }
  stage { name: "split" input: "loader"
          chunk_source_splitter { output { name: "train" } output { name: "test" } } }
  stage { name: "pool" input: "split.train" shuffling_chunk_pool { chunk_pool_size: 1000 } }
  RESCORER
  stage { name: "unpacker" input: "UNPACKER_INPUT" chunk_unpacker { position_count: 2 } }
  stage { name: "reader" input: "split.test" simple_chunk_extractor { } }
  stage { name: "test_unpacker" input: "reader" chunk_unpacker { } }
  stage { name: "join" input: "unpacker" input: "test_unpacker" join_positions { } }
  stage { name: "sampler" input: "join" shuffling_frame_sampler { } }
  stage { name: "tensors" input: "sampler" tensor_generator { } }
  output: "train:tensors"
}
"""
EXTRA_CHAIN = """  stage { name: "extra_reader" input: "split.extra" simple_chunk_extractor { } }
  stage { name: "extra_unpacker" input: "extra_reader" chunk_unpacker { } }
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


def read_rows():
    rows = []
    with open(DOC) as f:
        for line in f:
            if not line.startswith("| ") or line.startswith("| block | field"):
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


def value_for(kind):
    """An upstream value of the type, as text and as lcmon should write it."""
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
    needs); the value lcmon should write."""
    text = BASE.replace("RESCORER", RESCORER if rescorer else "")
    text = text.replace("UNPACKER_INPUT", "rescorer" if rescorer else "pool")
    value, want = value_for(kind)
    need = re.search(r"only with `(\w+)`", lcmon)
    extra = " %s: 1" % need.group(1) if need and need.group(1) != "position_count" else ""
    if block == "queue":
        if field == "name":  # the splitter's outputs are named
            return text.replace('name: "train"', 'name: "learn"').replace(
                "split.train", "split.learn"), "learn"
        return text.replace('directory: "/data/run"',
                            'directory: "/data/run" output { %s: %s }' % (field, value)), want
    if block == "position_sampling":
        return text.replace("position_count: 2",
                            "position_count: 2 position_sampling { %s: %s }" % (field, value)), want
    if field == "position_sampling_rate":  # with position_count the count wins
        return text.replace("chunk_unpacker { }", "chunk_unpacker { %s: %s }" % (field, value)), want
    if block == "chunk_source_splitter":
        if field == "weight":
            return text.replace('output { name: "test" }',
                                'output { name: "test" } weight: 7 weight: 3'), [7, 3]
        # A third output, and a chain reading it into the join.
        text = text.replace('output { name: "test" }',
                            'output { name: "test" } output { name: "extra" }')
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

    def test_structure(self):
        """(top level), data_loader and stage rows: BASE uses each of them."""
        stages = stages_of(self.base)
        self.assertEqual(len(stages), 11)  # ten stages and the output's writer
        self.assertIn("fifo_writer", stages["train"])  # data_loader.output
        self.assertEqual(stages["train"]["input"], "tensors")
        self.assertEqual(stages["pool"]["input"], "split.train")  # stage.input
        self.assertEqual(stages["join"]["inputs"], ["unpacker", "test_unpacker"])
        for block, field, _, lcmon in self.rows:
            if block in ("(top level)", "data_loader", "stage"):
                self.assertFalse(lcmon.startswith("not supported"), field)

    def test_every_field(self):
        skipped = []
        for block, field, kind, lcmon in self.rows:
            if block in ("(top level)", "data_loader", "stage"):
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
                if not rescorer:
                    self.assertEqual(r.returncode, 0, r.stderr)
                if lcmon.startswith("not supported"):
                    line = text[:text.index(field + ":")].count("\n") + 1
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
        elif re.fullmatch(r"`[\w.]+`", lcmon) and want is not None:
            self.assertEqual(got, want, "%s.%s -> %s" % (block, field, path))


if __name__ == "__main__":
    unittest.main()
