"""No metric is found by its name outside its own stage: the readers of
metrics (the monitor, the screen, the program, the Python package) find
what they show by a row's role, its display or its unit, which the row
publishes (docs/architecture.md). A metric row's name (a name in a class's
lc_metric_info table in src/stages/) compared as a string literal outside
the file that lists it, or its room (src/stages/pool/), fails here, named
with its place: in C a literal given to strcmp, strncmp or a lookup
(lc_snapshot_*, lc_metrics_find*, lc_metric_info_find); in Python a
literal beside ==, != or `in`. A "bad_" prefix compared anywhere fails too
(a bad count is a row of kind LC_METRIC_BAD). Tests may look metrics up by
name, and are not read.

Usage: check_metric_names.py SOURCE_ROOT [--self-test]
"""

import glob
import os
import re
import sys

ROW = re.compile(r'\{"(\w+)", "\w*"')
C_MATCH = re.compile(r'\b(?:strn?cmp|lc_snapshot_\w+|lc_metrics_find\w*|lc_metric_info_find)'
                     r'\s*\(([^;]*)')
PY_MATCH = re.compile(r'(?:==|!=|\bin\b)\s*\(?\s*["\'](\w+)["\']|["\'](\w+)["\']\s*(?:==|!=|\bin\b)')
LITERAL = re.compile(r'"(\w+)"')
# Literals that are a metric's name and also something else, compared as
# that: a command's reply field (the pool's anchor-get says "anchor" and
# "games") and a unit.
ALLOWED = {
    ("python/lcmon/control.py", "anchor"): "the anchor-get reply's field",
    ("python/lcmon/control.py", "games"): "the anchor-get reply's field",
    ("src/monitor/snapshot.c", "bytes"): "a unit",
}


def owner(path):
    """What may name a row of the file at path: the file, or its room."""
    d = os.path.dirname(path)
    return d if d != "src/stages" else path


def rows(files):
    """{name: {owner}} of every metric row in the stage files."""
    out = {}
    for path, text in files.items():
        if path.startswith("src/stages/"):
            for m in ROW.finditer(text):
                out.setdefault(m.group(1), set()).add(owner(path))
    return out


def matches(files):
    """(path, line, name) of each metric name compared outside its stage."""
    names = rows(files)
    bad = []
    for path, text in sorted(files.items()):
        for k, line in enumerate(text.splitlines(), 1):
            if path.endswith(".py"):
                found = [g for m in PY_MATCH.finditer(line) for g in m.groups() if g]
            else:
                found = [n for m in C_MATCH.finditer(line) for n in LITERAL.findall(m.group(1))]
            for n in found:
                mine = owner(path) in names.get(n, {owner(path)})
                if (not mine or n.startswith("bad_")) and (path, n) not in ALLOWED:
                    bad.append((path, k, n))
    return bad


def read(root):
    files = {}
    for pattern in ("src/**/*.[ch]", "tui/**/*.[ch]", "python/lcmon/*.py"):
        for path in glob.glob(os.path.join(root, pattern), recursive=True):
            with open(path, encoding="utf-8") as f:
                files[os.path.relpath(path, root)] = f.read()
    return files


def self_test(files):
    """Each kind of match fails a scratch copy of the tree."""
    assert len(rows(files)) > 100, "the row pattern finds the tables"
    for path, line in (
            ("tui/table.c", 'x = lc_snapshot_count(s, "chunks_in_window");'),
            ("src/monitor/headline.c", 'if (strncmp(c->name, "bad_", 4) == 0)'),
            ("src/stages/join.c", 'if (!strcmp(g->name, "reservoir_size"))'),
            ("python/lcmon/loader.py", '    if g.get("name") == "chunks_since_anchor":')):
        scratch = dict(files)
        scratch[path] = scratch[path] + "\n" + line + "\n"
        assert [m[0] for m in matches(scratch)] == [path], (path, matches(scratch))


def main():
    root = sys.argv[1]
    files = read(root)
    if "--self-test" in sys.argv[2:]:
        self_test(files)
    bad = matches(files)
    for path, k, n in bad:
        print("%s:%d: metric %s matched by its name: read its role, display or unit "
              "(docs/architecture.md, metric rows)" % (path, k, n))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
