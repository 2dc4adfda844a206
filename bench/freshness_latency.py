"""Freshness latency: batches and seconds from a game's arrival (its file
renamed into the watched folder) to its first position in a batch the
trainer reads, with and without a fresh request.

    /usr/bin/python3 bench/freshness_latency.py config/rl.yaml FRESH STEP GAMES [packed]

FRESH 1 makes the fresh request after each wait, 0 not; STEP is the
trainer's step in seconds; GAMES how many games to time (docs/performance.md,
"Freshness").
"""
import os, sys, gzip, shutil, tempfile, time, struct, statistics
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python")); sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
os.environ.setdefault("LCMON", os.path.join(ROOT, "build", "lcmon"))
import lcmon
from lcmon import BatchReader
from test_fresh import sample_games, write_marked, marks
cfg, fresh, step, reps = sys.argv[1], sys.argv[2] == "1", float(sys.argv[3]), int(sys.argv[4])
packed = len(sys.argv) > 5
name = os.path.basename(cfg) + (" packed" if packed else "")
if packed: cfg = open(cfg).read().replace("layout: current,", "layout: current, packed: true,")
work = tempfile.mkdtemp(); games = os.path.join(work, "g"); os.makedirs(games)
samples = sample_games()
for i, s in enumerate(samples): shutil.copy(s, os.path.join(games, "a_%04d.gz" % i))
res = []
with lcmon.Loader(cfg, env={"LCMON_DATA": games}) as loader, BatchReader(loader.pipe, wait_for_pipe=60) as r:
    it = r.batches()
    for _ in range(60 if step < 0.05 else 25): next(it); time.sleep(step)
    for k in range(reps):
        loader.control.reset_anchor()
        write_marked(samples[k % len(samples)], k, os.path.join(games, "b_%04d.gz" % k))
        t0 = time.monotonic()
        loader.control.wait_for_new_chunks(1, timeout=60)
        if fresh: loader.control.fresh()
        n = 0
        while True:
            b = next(it); n += 1
            if k in marks(b): break
            time.sleep(step)
            if n > 2000: break
        res.append((n, time.monotonic() - t0))
        for _ in range(30): next(it); time.sleep(step)
shutil.rmtree(work)
ns = [a for a, _ in res]; ss = [b for _, b in res]
print("%s fresh=%d step=%.3f: batches median %g (min %d max %d), seconds median %.2f (max %.2f)  %s" % (
    name, fresh, step, statistics.median(ns), min(ns), max(ns), statistics.median(ss), max(ss), ns))
