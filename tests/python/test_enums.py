"""Every enum of the proto against its copies: the C enums that mirror it
(core/metrics.h, core/metric_windows.h, printed by tests/core/print_enums)
and the package's lists (lcmon.wire.ENUMS, WINDOWS), name for name and
number for number; a failure names the enum and what differs.

- each of the wire's lists is its proto enum (a name's index is its
  number); every enum of the protos is there (a client reads each), and
  every enum a field of SCHEMA names;
- each C list is its proto enum, names and numbers, and its sentinel
  (LC_METRIC_ROLE_COUNT_ ...) is the number of values; every proto enum is
  mirrored in C or named here as one the C code uses as protoc made it;
- the windows' short names: C's lc_window_name and WINDOWS, in
  MetricWindow's order;
- every enum value the package's code names in a string ("PIPELINE_RUNNING")
  is a value of the protos.

Environment: LCMON_SOURCE_ROOT (the source tree), LC_PRINT_ENUMS (the
tests/core/print_enums program).
"""

import glob
import os
import re
import subprocess
import unittest

from lcmon.wire import ENUMS, SCHEMA, WINDOWS

SOURCE_ROOT = os.environ.get("LCMON_SOURCE_ROOT", "")
PRINT_ENUMS = os.environ.get("LC_PRINT_ENUMS", "")
# Proto enums the C code uses as protoc-c made them (Lcmon__PipelineState),
# with no C enum of its own to drift.
C_USES_THE_PROTOS = {"PipelineState"}


def proto_enums():
    """{enum: {name: number}} from proto/*.proto, nested ones (MetricDisplay's
    As) by their own name."""
    out = {}
    for path in sorted(glob.glob(os.path.join(SOURCE_ROOT, "proto", "*.proto"))):
        with open(path) as f:
            text = re.sub(r"//[^\n]*", "", f.read())
        for m in re.finditer(r"\benum\s+(\w+)\s*\{([^}]*)\}", text):
            assert m.group(1) not in out, "two enums named %s" % m.group(1)
            out[m.group(1)] = {v.group(1): int(v.group(2))
                               for v in re.finditer(r"(\w+)\s*=\s*(\d+)\s*;", m.group(2))}
    return out


def c_enums():
    """({enum: {name: number}}, {enum: sentinel}) as print_enums prints the
    C lists; WINDOWS is the windows' short names."""
    out = subprocess.run([PRINT_ENUMS], check=True, capture_output=True, text=True).stdout
    values, sentinels = {}, {}
    for line in out.splitlines():
        enum, name, number = line.split(" ")
        if name == "-":
            sentinels[enum] = int(number)
        else:
            assert name not in values.setdefault(enum, {}), line
            values[enum][name] = int(number)
    return values, sentinels


class Enums(unittest.TestCase):
    def setUp(self):
        self.assertTrue(SOURCE_ROOT, "LCMON_SOURCE_ROOT must name the source tree")
        self.protos = proto_enums()
        self.assertGreaterEqual(len(self.protos), 6, self.protos.keys())  # the parser found them

    def test_python_lists_match_the_proto(self):
        self.assertEqual(sorted(ENUMS), sorted(self.protos))
        for enum, names in ENUMS.items():
            self.assertEqual({n: i for i, n in enumerate(names)}, self.protos[enum],
                             "lcmon.wire.ENUMS[%r] and the proto differ" % enum)
        used = {typ[5:] for fields in SCHEMA.values() for _, typ, _ in fields.values()
                if typ.startswith("enum:")}
        self.assertEqual(used - set(ENUMS), set())
        self.assertEqual(["WINDOW_" + w.upper() for w in WINDOWS], ENUMS["MetricWindow"])

    def test_c_enums_match_the_proto(self):
        self.assertTrue(PRINT_ENUMS, "LC_PRINT_ENUMS must name tests/core/print_enums")
        values, sentinels = c_enums()
        windows = values.pop("WINDOWS")
        self.assertEqual(set(values) | C_USES_THE_PROTOS, set(self.protos),
                         "a proto enum with no C list (or a C list of no proto enum)")
        for enum, names in values.items():
            self.assertEqual(names, self.protos[enum],
                             "the C list of %s (core/metrics.h) and the proto differ" % enum)
            if enum in sentinels:
                self.assertEqual(sentinels[enum], len(names), "%s's sentinel" % enum)
        # lc_metric_kind goes on past CountKind (gauge, text, statistic).
        self.assertEqual(set(sentinels), set(values) - {"CountKind"})
        self.assertEqual(windows, {w: i for i, w in enumerate(WINDOWS)},
                         "lc_window_name and lcmon.wire.WINDOWS differ")

    def test_package_names_only_proto_values(self):
        known = {n for names in self.protos.values() for n in names}
        prefixes = sorted({n.split("_")[0] + "_" for e, names in self.protos.items()
                           if e != "As" for n in names})
        pattern = re.compile(r"[\"'](%s)[A-Z0-9_]+[\"']" % "|".join(prefixes))
        found = 0
        for path in sorted(glob.glob(os.path.join(SOURCE_ROOT, "python", "lcmon", "*.py"))):
            with open(path) as f:
                for k, line in enumerate(f, 1):
                    for m in pattern.finditer(line):
                        found += 1
                        self.assertIn(m.group(0)[1:-1], known, "%s:%d" % (path, k))
        self.assertGreater(found, 30)  # the pattern found the lists


if __name__ == "__main__":
    unittest.main(verbosity=2)
