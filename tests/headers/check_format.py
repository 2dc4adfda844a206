"""Every C source and header of the repository is formatted as .clang-format
says (clang-format --dry-run --Werror). On a failure it names the files, the
command that shows how each differs, and the command that formats them.

Usage: check_format.py SOURCE_ROOT
"""

import shutil
import subprocess
import sys


def main():
    root = sys.argv[1]
    tool = shutil.which("clang-format")
    if not tool:
        print("clang-format is not installed (scripts/setup --tests installs it)")
        return 1
    files = subprocess.run(["git", "-C", root, "ls-files", "*.c", "*.h"], capture_output=True,
                           text=True, check=True).stdout.split()
    if not files:
        print("no C files listed by git in %s" % root)
        return 1
    r = subprocess.run([tool, "--dry-run", "--Werror"] + files, cwd=root, capture_output=True,
                       text=True)
    bad = sorted({line.split(":")[0] for line in r.stderr.splitlines() if ": error:" in line})
    if r.returncode != 0 or bad:
        print("%d of %d files are not formatted as .clang-format says:" % (len(bad), len(files)))
        for f in bad:
            print("  " + f)
        print("see the difference: for f in %s; do clang-format \"$f\" | diff -u \"$f\" -; done"
              % " ".join(bad))
        print("format them with: git ls-files '*.c' '*.h' | xargs clang-format -i")
        return 1
    print("%d files formatted as .clang-format says" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
