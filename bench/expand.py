"""Packed batches expanded on the CPU, this package against a baseline
commit's in one run (docs/performance.md).

    PYTHONPATH=python LCMON=build/lcmon /usr/bin/python3 bench/expand.py

1. streams: a sequential lcmon run over the sample games in tests/data
   (every position once), `packed: true`, batches of BATCH_SIZE, in each
   layout (current and legacy), written to a stream file;
2. the baseline: python/lcmon of BASELINE (a commit of this repository;
   default the one before the faster expansion) taken out with `git
   archive` into a scratch folder and imported as the package lcmon_base;
3. every batch of both streams expanded by both packages, numpy and torch
   (this one with its C kernel and without), and checked equal bit for bit
   (and numpy's equal to torch's);
4. each way of expanding (below) timed call by call, the baseline's and
   this package's (with numpy alone and with the C kernel of the build,
   build/python/liblcmon_expand.so, when there is one) alternated batch by
   batch, ROUNDS passes over the batches of the LAYOUT stream: positions/s
   from the median call, both in wall time and in the calling thread's CPU
   time (the machine may be shared: CPU time is what a core of its own
   would give, as long as torch uses one thread; TORCH_THREADS sets
   torch's threads).

5. (unless E2E=0) end to end: lcmon's default pipeline at sampling 1.0,
   packed, over GAMES copies of the sample games (bench/default's corpus
   and config), into `python3 -m lcmon PIPE --expand` with the baseline's
   package, this one with numpy alone and with its C kernel, and without
   --expand (the packed rate), alternated REPEAT times: positions/s over
   E2E_BATCHES batches after E2E_SKIP, medians.

Ways: "lcmon.expand" (new arrays each call), "Expander" (arrays reused
batch after batch, as BatchReader(expand=True) does), "BatchReader file"
(BatchReader(expand=True) reading the stream file: read and expansion),
"torch expand" (lcmon.torch.expand of CPU tensors), "BatchDataset file"
(lcmon.torch.BatchDataset(device="cpu") reading the stream file).
"""

import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LCMON = os.environ.get("LCMON", os.path.join(ROOT, "build", "lcmon"))
DATA = os.environ.get("LCMON_DATA", os.path.join(ROOT, "tests", "data"))
BASELINE = os.environ.get("BASELINE", "1329de7890798bd7da6c2dc0cccc947fcddf7577")
BATCH_SIZE = int(os.environ.get("BATCH_SIZE", "256"))
ROUNDS = int(os.environ.get("ROUNDS", "40"))
LAYOUT = os.environ.get("LAYOUT", "current")
E2E = os.environ.get("E2E", "1") != "0"
E2E_SKIP = int(os.environ.get("E2E_SKIP", "200"))
E2E_BATCHES = int(os.environ.get("E2E_BATCHES", "1000"))
REPEAT = int(os.environ.get("REPEAT", "3"))
PY = os.environ.get("LCMON_PYTHON", sys.executable)

sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from test_end_to_end import sequential_yaml  # noqa: E402 (the tests' sequential run)

def say(*a):
    print(*a, file=sys.stderr, flush=True)


def stream(work, layout):
    path = os.path.join(work, layout + ".bin")
    cfg = os.path.join(work, layout + ".yaml")
    with open(cfg, "w") as f:
        f.write(sequential_yaml(DATA, path, "batch_size: %d, layout: %s, packed: true"
                                % (BATCH_SIZE, layout), writer=", regular_file: true"))
    subprocess.run([LCMON, "--no-ui", "--config", cfg], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=300)
    return path


def baseline(work):
    """The baseline's package, importable as lcmon_base."""
    tar = subprocess.run(["git", "-C", ROOT, "archive", BASELINE, "python/lcmon"],
                         check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", work], input=tar, check=True)
    os.rename(os.path.join(work, "python", "lcmon"), os.path.join(work, "lcmon_base"))
    sys.path.insert(0, work)
    import lcmon_base

    return lcmon_base


def end_to_end(work):
    """Step 5: the reader's rate with each package, lcmon feeding it."""
    os.environ.setdefault("LCMON", LCMON)
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import default as bd  # bench/default.py: the corpus and the default config

    tree = os.path.join(work, "base-tree")
    os.mkdir(tree)
    tar = subprocess.run(["git", "-C", ROOT, "archive", BASELINE, "python/lcmon"],
                         check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", tree], input=tar, check=True)
    data, ratio, n = bd.corpus(work)
    say("end to end: %d copies of the %d sample games (%.1f:1), the default pipeline at "
        "sampling 1.0, packed, into python3 -m lcmon" % (bd.GAMES, n, ratio))
    this = os.path.join(ROOT, "python")
    readers = [("packed, not expanded", this, [], {}),
               ("--expand, baseline", os.path.join(tree, "python"), ["--expand"], {}),
               ("--expand, this, numpy", this, ["--expand"], {"LCMON_EXPAND": "numpy"}),
               ("--expand, this, C kernel", this, ["--expand"], {})]
    rates = {name: [] for name, *_ in readers}
    for r in range(REPEAT):
        for name, path, args, env in (readers if r % 2 == 0 else readers[::-1]):
            pipe = os.path.join(work, "e2e.pipe")
            if os.path.exists(pipe):
                os.unlink(pipe)
            cfg = bd.config(work, data, pipe, "sampling_rate: 1.0", True)
            lc = subprocess.Popen([LCMON, "--no-ui", "--quiet", "--config", cfg],
                                  stderr=subprocess.DEVNULL)
            try:
                bd.wait_for_pipe(lc, pipe)
                out = subprocess.run(
                    [PY, "-m", "lcmon", pipe, "--skip", str(E2E_SKIP), "--batches",
                     str(E2E_SKIP + E2E_BATCHES)] + args, capture_output=True, text=True,
                    env=dict(os.environ, PYTHONPATH=path, **env), timeout=600).stdout
            finally:
                lc.send_signal(signal.SIGINT)
                lc.wait(30)
            m = re.search(r"([\d.]+) rows/s", out)
            if not m:
                raise RuntimeError("the reader said: %s" % out)
            rates[name].append(float(m.group(1)))
            say("run %d: %-26s %9.0f positions/s" % (r + 1, name, rates[name][-1]))
    base = statistics.median(rates["--expand, baseline"])
    print("\nend to end, sampling 1.0, packed, %d batches after %d, medians of %d runs:"
          % (E2E_BATCHES, E2E_SKIP, REPEAT))
    print("| reader | positions/s | against the baseline's --expand |")
    print("|---|---|---|")
    for name, *_ in readers:
        med = statistics.median(rates[name])
        print("| %s | %.0f (%s) | %.2f |" % (name, med, ", ".join("%.0f" % x for x in rates[name]),
                                            med / base))


def torch_tensors(torch, b):
    return {n: torch.from_numpy(a.view(np.int16) if a.dtype == np.dtype("<u2") else a)
            for n, a in b.tensors.items()}


def same(a, b):
    return sorted(a) == sorted(b) and all(
        np.ascontiguousarray(np.asarray(a[n])).tobytes()
        == np.ascontiguousarray(np.asarray(b[n])).tobytes() for n in a)


def check(pkgs, torch_mods, torch, path):
    import lcmon

    with lcmon.BatchReader(path, copy=True) as r:
        batches = list(r.batches())
    kernel = lcmon.expand_kernel
    for on in (True, False):  # this package with its C kernel (if built), and numpy alone
        kernel(on)
        for b in batches:
            got = [p.expand(b) for p in pkgs]
            assert same(got[0], got[1]), "numpy: baseline and this differ"
            if torch is not None:
                tg = [{n: t.numpy() for n, t in m.expand(torch_tensors(torch, b),
                                                         b.expand).items()}
                      for m in torch_mods]
                assert same(tg[0], tg[1]), "torch: baseline and this differ"
                assert same(tg[1], got[1]), "torch and numpy differ"
    kernel(True)
    return batches


class Cycle:
    """Items of an iterable made again whenever it ends."""

    def __init__(self, make):
        self.make = make
        self.it = iter(make())

    def __call__(self):
        try:
            return next(self.it)
        except StopIteration:
            self.it = iter(self.make())
            return next(self.it)


def ways(pkg, tmod, torch, batches, path):
    full = [b for b in batches if b.rows == BATCH_SIZE]
    out = {}
    k = [0]

    def nxt():
        b = full[k[0] % len(full)]
        k[0] += 1
        return b

    out["lcmon.expand"] = lambda: pkg.expand(nxt())
    ex = pkg.Expander()
    out["Expander"] = lambda: (lambda b: ex(b.tensors, b.expand))(nxt())
    def read():
        with pkg.BatchReader(path, expand=True, restarts="end") as r:
            yield from r.batches()

    out["BatchReader file"] = Cycle(read)
    if torch is not None:
        tb = [(torch_tensors(torch, b), b.expand) for b in full]
        kt = [0]

        def texp():
            t, how = tb[kt[0] % len(tb)]
            kt[0] += 1
            return tmod.expand(t, how)

        out["torch expand"] = texp
        out["BatchDataset file"] = Cycle(
            lambda: tmod.BatchDataset(path, device="cpu", restarts="end"))
    return out


def rows_of(item):
    if hasattr(item, "rows"):
        return item.rows
    return next(iter((item.tensors if hasattr(item, "tensors") else item).values())).shape[0]


def main():
    import lcmon

    try:
        import torch

        import lcmon.torch as tnew
    except ImportError:
        torch = tnew = None
    if torch is not None and os.environ.get("TORCH_THREADS"):
        torch.set_num_threads(int(os.environ["TORCH_THREADS"]))
    with tempfile.TemporaryDirectory(prefix="lcmon-bench-expand-") as work:
        os.environ["XDG_RUNTIME_DIR"] = work  # a killed lcmon's lock file goes with it
        base = baseline(work)
        told = None
        if torch is not None:
            import lcmon_base.torch as told
        paths = {lay: stream(work, lay) for lay in ("current", "legacy")}
        batches = {}
        for lay, path in paths.items():
            batches[lay] = check((base, lcmon), (told, tnew), torch, path)
            say("%s: %d positions in %d batches, numpy and torch equal bit for bit, "
                "baseline and this, C kernel and numpy"
                % (lay, sum(b.rows for b in batches[lay]), len(batches[lay])))
        b = next(x for x in batches[LAYOUT] if x.rows == BATCH_SIZE)
        dense = lcmon.expand(b)
        packed_b = sum(a.nbytes for a in b.tensors.values()) / b.rows
        dense_b = sum(a.nbytes for a in dense.values()) / b.rows
        print("layout %s, batches of %d: %.0f bytes a position packed, %.0f expanded (%s)"
              % (LAYOUT, BATCH_SIZE, packed_b, dense_b,
                 ", ".join("%s %s %s" % (n, a.dtype, list(a.shape)) for n, a in dense.items())))
        print("baseline %s; torch %s with %d threads; %d rounds; median call"
              % (BASELINE[:10], torch.__version__ if torch else "(none)",
                 torch.get_num_threads() if torch else 0, ROUNDS))
        # A file each: a reader locks the file it reads.
        shutil.copyfile(paths[LAYOUT], paths[LAYOUT] + ".old")
        w = {"old": ways(base, told, torch, batches[LAYOUT], paths[LAYOUT] + ".old"),
             "new": ways(lcmon, tnew, torch, batches[LAYOUT], paths[LAYOUT])}
        kernel = lcmon.expand_kernel
        whos = ["old", "numpy"] + (["kernel"] if kernel() else [])
        print("C kernel: %s" % (kernel() or "none (build it: ninja -C build)"))
        n = len([x for x in batches[LAYOUT] if x.rows == BATCH_SIZE])
        print("| way | baseline, positions/s (wall / thread CPU) | this, numpy | this, C kernel "
              "| ratio numpy (wall / CPU) | ratio kernel |")
        print("|---|---|---|---|---|---|")
        for way in w["new"]:
            took = {who: ([], []) for who in whos}
            for _ in range(ROUNDS * n):
                for who in whos:
                    kernel(who == "kernel")
                    f = w["old" if who == "old" else "new"][way]
                    t0, c0 = time.perf_counter(), time.thread_time()
                    item = f()
                    c1, t1 = time.thread_time(), time.perf_counter()
                    rows = rows_of(item)
                    del item
                    took[who][0].append((t1 - t0) / rows)
                    took[who][1].append((c1 - c0) / rows)
            kernel(True)
            rate = {who: [1 / statistics.median(x) for x in took[who]] for who in took}
            rate.setdefault("kernel", [float("nan")] * 2)
            cells = ["%.0f / %.0f" % tuple(rate[who]) for who in ("old", "numpy", "kernel")]
            cells += ["**%.2f** / **%.2f**" % (rate[who][0] / rate["old"][0],
                                               rate[who][1] / rate["old"][1])
                      for who in ("numpy", "kernel")]
            print("| %s | %s |" % (way, " | ".join(cells)), flush=True)
        if E2E:
            end_to_end(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
