"""Shuffle quality: how often two rows of a batch, or of consecutive
batches, come from the same game, against independent draws.

    /usr/bin/python3 bench/freshness_shuffle.py RESERVOIR FRESH_EVERY BATCHES

config/rl.yaml with its reservoir_size set to RESERVOIR, a fresh request
(with a new game) every FRESH_EVERY batches (0: none).
"""
import os, sys, shutil, tempfile, time, collections
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python")); sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
os.environ.setdefault("LCMON", os.path.join(ROOT, "build", "lcmon"))
import numpy as np
import lcmon
from lcmon import BatchReader
from test_fresh import sample_games, write_marked, MARK
res_size, fresh_every, nb = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cfg = open(os.path.join(ROOT, "config", "rl.yaml")).read().replace("reservoir_size: 4096", "reservoir_size: %d" % res_size)
work = tempfile.mkdtemp(); games = os.path.join(work, "g"); os.makedirs(games)
samples = sample_games()
NG = 300
for k in range(NG): write_marked(samples[k % len(samples)], k, os.path.join(games, "m_%04d.gz" % k))
rows = []
with lcmon.Loader(cfg, env={"LCMON_DATA": games}) as loader, BatchReader(loader.pipe, wait_for_pipe=60) as r:
    it = r.batches()
    for _ in range(200 + res_size // 256 * 3): next(it)   # past the reservoir's fill
    if fresh_every: loader.control.reset_anchor()
    k = NG
    for i in range(nb):
        if fresh_every and i % fresh_every == 0:
            write_marked(samples[k % len(samples)], k, os.path.join(games, "m_%04d.gz" % k)); k += 1
            loader.control.wait_for_new_chunks(1, timeout=60); loader.control.reset_anchor(); loader.control.fresh()
        b = next(it)
        rows.append((b.tensors["values"][:, 1, 2] - MARK).astype(np.int64))
shutil.rmtree(work)
B = len(rows[0])
allg = np.concatenate(rows)
freq = np.bincount(allg) / len(allg)
base = float((freq ** 2).sum())   # two independent rows: same game
same = []; cons = []
for t, g in enumerate(rows):
    c = np.bincount(g)
    same.append(float((c * (c - 1)).sum()) / (B * (B - 1)))
    if t:
        prev = set(rows[t - 1].tolist())
        cons.append(np.mean([x in prev for x in g.tolist()]))
# baseline for consecutive: P(row's game in a set of B independent draws)
cons_base = float((freq * (1 - (1 - freq) ** B)).sum())
print("reservoir %6d fresh every %d: same game, two rows of a batch %.4f (independent %.4f, x%.1f); "
      "rows whose game is in the previous batch %.3f (independent %.3f)" % (
      res_size, fresh_every, np.mean(same), base, np.mean(same) / base, np.mean(cons), cons_base))
