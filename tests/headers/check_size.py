"""No C file of src/ and tui/ is over 700 lines, and no function in them
over 100, so that each stays readable at a sitting (docs/architecture.md).
On a failure it names each file or function, its length and the bound.

A function is counted from the line of its name (a line at column 0 that
opens a parameter list) to the brace that closes its body at column 0, as
.clang-format lays functions out.

Usage: check_size.py SOURCE_ROOT [--self-test]
"""

import re
import subprocess
import sys

MAX_FILE = 700
MAX_FUNCTION = 100
NAME = re.compile(r"(\w+)\s*\(")


def functions(lines):
    """(name, first line, length) of each function definition: a body's
    opening brace alone at column 0, the lines of its name and parameters
    above it, and its closing brace at column 0."""
    out = []
    for i, line in enumerate(lines):
        if line.rstrip() != "{":
            continue
        head = i - 1
        while head > 0 and lines[head][:1] in (" ", "\t"):
            head -= 1  # parameters continued on more lines
        m = NAME.search(lines[head])
        if not m or "=" in lines[head].split("(")[0]:
            continue  # an initializer, not a function
        end = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("}")), None)
        if end is not None:
            out.append((m.group(1), head + 1, end - head + 1))
    return out


def problems(path, text):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    found = []
    if len(lines) > MAX_FILE:
        found.append("%s: %d lines (at most %d)" % (path, len(lines), MAX_FILE))
    for name, first, n in functions(lines):
        if n > MAX_FUNCTION:
            found.append("%s:%d: %s is %d lines (at most %d)" % (path, first, name, n, MAX_FUNCTION))
    return found


def self_test():
    body = ["    x++;"] * (MAX_FUNCTION - 3)  # with its name and braces: the bound
    ok = "int f(void)\n{\n" + "\n".join(body) + "\n}\n"
    long = "static int g(int a,\n             int b)\n{\n" + "\n".join(body + ["    y++;"]) + "\n}\n"
    proto = "int h(void);\nstatic const int t[] = {\n    1,\n};\n"
    assert problems("ok.c", ok) == [], problems("ok.c", ok)
    got = problems("long.c", proto + long)
    assert len(got) == 1 and "g is %d lines" % (MAX_FUNCTION + 2) in got[0], got
    konst = "const char *k(void)\n{\n" + "\n".join(body + ["    y++;"] * 2) + "\n}\n"
    assert len(problems("konst.c", konst)) == 1, problems("konst.c", konst)
    table = "static const int t[] =\n{\n" + "    1,\n" * (MAX_FUNCTION + 5) + "};\n"
    assert problems("table.c", table) == []
    assert problems("big.c", "int x;\n" * (MAX_FILE + 1)) != []
    assert problems("fits.c", "int x;\n" * MAX_FILE) == []


def main():
    root = sys.argv[1]
    self_test()
    files = subprocess.run(["git", "-C", root, "ls-files", "src/*.c", "src/*.h", "tui/*.c",
                            "tui/*.h"], capture_output=True, text=True, check=True).stdout.split()
    if not files:
        print("no C files listed by git under src/ and tui/ in %s" % root)
        return 1
    found = []
    n_functions = 0
    for f in files:
        with open("%s/%s" % (root, f), encoding="utf-8") as fh:
            text = fh.read()
        n_functions += len(functions(text.split("\n")))
        found += problems(f, text)
    for p in found:
        print(p)
    if found:
        print("split them along what they do (docs/architecture.md)")
        return 1
    print("%d files and %d functions within %d and %d lines" % (len(files), n_functions, MAX_FILE,
                                                               MAX_FUNCTION))
    return 0


if __name__ == "__main__":
    sys.exit(main())
