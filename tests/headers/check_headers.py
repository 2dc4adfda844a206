#!/usr/bin/python3
"""Every header of lcmon compiles on its own: a file that includes only it
(twice, for the include guard) is valid C11 with the project's warnings.
A header that leans on something its includer happened to include first
fails here, naming the header and the compiler's complaint. Its include
guard is named after its path (src/stages/pool/hanse.h:
LC_STAGES_POOL_HANSE_H), so that a moved header cannot keep a name another
one may take.

Usage: check_headers.py SOURCE_ROOT BUILD_ROOT CC [CC ARGS...]
"""
import os
import re
import subprocess
import sys
import tempfile


def main():
    root, build, cc = sys.argv[1], sys.argv[2], sys.argv[3:]
    headers = []
    for top in ("src", "tui"):
        for d, _, files in os.walk(os.path.join(root, top)):
            headers += [os.path.join(d, f) for f in sorted(files) if f.endswith(".h")]
    flags = ["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-Wstrict-prototypes",
             "-Wmissing-prototypes", "-fsyntax-only",
             "-I" + os.path.join(root, "src"), "-I" + root,
             "-I" + os.path.join(build, "proto"), "-I" + build]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for h in headers:
            rel = os.path.relpath(h, root)
            inc = os.path.relpath(h, os.path.join(root, "src")) if rel.startswith("src/") else rel
            want = "LC_" + re.sub(r"[/.]", "_", inc).upper()
            with open(h) as f:
                m = re.search(r"^#ifndef (\w+)\n#define \1\b", f.read(), re.M)
            if not m or m.group(1) != want:
                bad += 1
                print("%s: its include guard is %s; name it %s (after its path)"
                      % (rel, m.group(1) if m else "missing", want))
                continue
            c = os.path.join(tmp, "one.c")
            with open(c, "w") as f:
                f.write('#include "%s"\n#include "%s"\n' % (inc, inc))
            r = subprocess.run(cc + flags + [c], capture_output=True, text=True)
            if r.returncode != 0:
                bad += 1
                first = [l for l in r.stderr.splitlines() if "error" in l][:3]
                print("%s does not compile on its own:\n  %s" % (rel, "\n  ".join(first)))
    print("%d headers, %d do not compile on their own or misname their guard"
          % (len(headers), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
