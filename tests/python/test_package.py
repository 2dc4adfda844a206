"""The lcmon package itself, without a loader:

- every name the docs give the trainer (python/README.md, README.md and
  docs/*.md: lcmon.X.Y, `from lcmon... import ...`, Control.method) and
  every name of the package's and its modules' __all__ imports;
- every error class the package defines is an lcmon.Error, and keeps the
  base an `except` clause may name (LoaderGone is still a ConnectionError,
  WriterTimeout a TimeoutError, LoaderError a RuntimeError, the stream's
  a StreamError);
- every module within 700 lines (the house's rule for a file);
- the PEP 561 marker py.typed is in the package and in what it installs
  (test_restarts installs it into a venv and looks).

Environment: LCMON_SOURCE_ROOT (the source tree).
"""

import glob
import importlib
import importlib.util
import inspect
import os
import re
import unittest

import lcmon

SOURCE_ROOT = os.environ.get("LCMON_SOURCE_ROOT", "")
PACKAGE = os.path.join(SOURCE_ROOT, "python", "lcmon")
MAX_LINES = 700
HAVE_TORCH = importlib.util.find_spec("torch") is not None


def modules():
    """The package's modules by name ("lcmon", "lcmon.wire", ...), the
    torch adapter only where torch is installed."""
    names = ["lcmon"]
    for path in sorted(glob.glob(os.path.join(PACKAGE, "*.py"))):
        base = os.path.basename(path)[:-3]
        if base in ("__init__", "__main__") or (base == "torch" and not HAVE_TORCH):
            continue
        names.append("lcmon." + base)
    return names


def resolve(dotted):
    """The object a dotted name (lcmon.torch.expand) names: the longest
    importable module, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(dotted)


# Files the docs name lcmon.SOMETHING that are not Python names.
NOT_NAMES = {"pipe", "sock", "yaml", "log", "1", "service"}


def documented_names():
    """{dotted name: where} of every Python name the docs give."""
    docs = [os.path.join(SOURCE_ROOT, "python", "README.md"),
            os.path.join(SOURCE_ROOT, "README.md")]
    docs += sorted(glob.glob(os.path.join(SOURCE_ROOT, "docs", "*.md")))
    out = {}
    for path in docs:
        with open(path) as f:
            text = f.read()
        where = os.path.relpath(path, SOURCE_ROOT)
        # lcmon.X.Y, not inside a path or a file name ("lcmon.pipe", x/lcmon.sock).
        for m in re.finditer(r"(?<![\w./\"'-])lcmon((?:\.[A-Za-z_]\w*)+)", text):
            parts = m.group(1)[1:].split(".")
            if parts[0] not in NOT_NAMES:
                out.setdefault("lcmon." + ".".join(parts), where)
        for m in re.finditer(r"^\s*from (lcmon(?:\.\w+)*) import ([\w, ]+)", text, re.M):
            for name in m.group(2).split(","):
                out.setdefault("%s.%s" % (m.group(1), name.strip()), where)
        for m in re.finditer(r"\b(Control|Loader|BatchReader)\.([a-z_]\w*)\(", text):
            out.setdefault("lcmon.%s.%s" % m.groups(), where)
    return out


class Names(unittest.TestCase):
    def test_documented_names_import(self):
        self.assertTrue(SOURCE_ROOT, "LCMON_SOURCE_ROOT must name the source tree")
        names = documented_names()
        # The scan finds what the docs are known to give.
        for want in ("lcmon.Loader", "lcmon.BatchReader", "lcmon.Control", "lcmon.LoaderGone",
                     "lcmon.torch.BatchDataset", "lcmon.lczero.rl_cycles",
                     "lcmon.Control.set_anchor", "lcmon.expand_kernel"):
            self.assertIn(want, names)
        for name, where in sorted(names.items()):
            if name.startswith("lcmon.torch") and not HAVE_TORCH:
                continue
            with self.subTest(name=name, where=where):
                resolve(name)

    def test_every_all_name_imports(self):
        for mod in modules():
            m = importlib.import_module(mod)
            for name in getattr(m, "__all__", []):
                with self.subTest(module=mod, name=name):
                    self.assertTrue(hasattr(m, name))

    def test_modules_keep_their_names(self):
        """Names that moved to a module of their own stay where they were."""
        import lcmon.control
        import lcmon.loader
        import lcmon.stream
        for mod, names in {
            lcmon.control: ["Control", "ControlError", "LoaderGone", "ProtocolError", "Fresh",
                            "SCHEMA", "ENUMS", "WINDOWS", "PROTOCOL_VERSION", "MAX_FRAME",
                            "RunId", "encode", "decode"],
            lcmon.stream: ["BatchReader", "Batch", "Header", "Progress", "Freshness",
                           "TensorSpec", "StreamError", "StreamTruncated", "StreamVersionError",
                           "NotAStream", "PipeBusy", "WriterTimeout", "parse_header", "describe",
                           "MAGIC", "VERSION", "FLAG_LAST", "EXPANSIONS", "WATCH_EVERY_MS"],
            lcmon.loader: ["Loader", "LoaderError", "LoaderGone", "find_lcmon", "build_dirs"],
        }.items():
            for name in names:
                with self.subTest(module=mod.__name__, name=name):
                    self.assertTrue(hasattr(mod, name))


class Errors(unittest.TestCase):
    # The bases an except clause may name today, besides lcmon.Error.
    BASES = {
        "ControlError": (),
        "ProtocolError": (),
        "LoaderGone": (ConnectionError, OSError),
        "LoaderError": (RuntimeError,),
        "StreamError": (),
        "StreamTruncated": ("StreamError",),
        "StreamVersionError": ("StreamError",),
        "NotAStream": ("StreamError",),
        "PipeBusy": ("StreamError",),
        "WriterTimeout": (TimeoutError, OSError),
    }

    def defined(self):
        """Every public exception class a module of the package defines."""
        out = {}
        for mod in modules():
            for name, obj in vars(importlib.import_module(mod)).items():
                if (inspect.isclass(obj) and issubclass(obj, BaseException)
                        and obj.__module__.startswith("lcmon") and not name.startswith("_")):
                    out[name] = obj
        return out

    def test_every_error_is_an_lcmon_error(self):
        found = self.defined()
        self.assertIn("Error", found)
        self.assertIs(found.pop("Error"), lcmon.Error)
        self.assertEqual(sorted(found), sorted(self.BASES))
        for name, cls in found.items():
            with self.subTest(error=name):
                self.assertTrue(issubclass(cls, lcmon.Error))
                self.assertIs(getattr(lcmon, name), cls)  # lcmon.NAME, as documented
                for base in self.BASES[name]:
                    base = getattr(lcmon, base) if isinstance(base, str) else base
                    self.assertTrue(issubclass(cls, base), base)

    def test_old_except_clauses_still_catch(self):
        try:
            raise lcmon.LoaderGone("lcmon (pid 1) exited with status 1")
        except OSError as e:  # as `except ConnectionError` or OSError did
            self.assertEqual(str(e), "lcmon (pid 1) exited with status 1")
            self.assertIsNone(e.errno)
        try:
            raise lcmon.WriterTimeout("no new run")
        except TimeoutError:
            pass
        for cls in (lcmon.LoaderError, lcmon.PipeBusy, lcmon.ControlError):
            with self.assertRaises(lcmon.Error):
                raise cls("x")


class Layout(unittest.TestCase):
    def test_modules_within_700_lines(self):
        paths = glob.glob(os.path.join(PACKAGE, "*.py"))
        self.assertGreaterEqual(len(paths), 8)  # the glob found the package
        for path in paths:
            with open(path) as f:
                n = sum(1 for _ in f)
            with self.subTest(module=os.path.basename(path)):
                self.assertLessEqual(n, MAX_LINES, "%s: %d lines" % (path, n))

    def test_py_typed(self):
        self.assertTrue(os.path.isfile(os.path.join(PACKAGE, "py.typed")))
        with open(os.path.join(SOURCE_ROOT, "python", "pyproject.toml")) as f:
            text = f.read()
        m = re.search(r"^\[tool\.setuptools\.package-data\]\s*\nlcmon = \[([^\]]*)\]", text, re.M)
        self.assertIsNotNone(m, "pyproject.toml: no package-data for lcmon")
        self.assertIn('"py.typed"', m.group(1))


if __name__ == "__main__":
    unittest.main()
