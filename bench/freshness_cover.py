"""How many of the awaited games' positions an 8-step cycle holds.

    /usr/bin/python3 bench/freshness_cover.py config/rl.yaml FRESH CYCLES
"""
import os, sys, gzip, shutil, tempfile, time, threading, statistics
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python")); sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
os.environ.setdefault("LCMON", os.path.join(ROOT, "build", "lcmon"))
import numpy as np
import lcmon
from lcmon import BatchReader
from lcmon.lczero import rl_cycles
from test_fresh import sample_games, write_marked, MARK, V6
cfg, fresh, cycles = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
work = tempfile.mkdtemp(); games = os.path.join(work, "g"); os.makedirs(games)
samples = sample_games()
for i, s in enumerate(samples): shutil.copy(s, os.path.join(games, "a_%04d.gz" % i))
npos = lambda k: len(gzip.open(samples[k % len(samples)]).read()) // V6
shares, firsts = [], []
k = 0
with lcmon.Loader(cfg, env={"LCMON_DATA": games}) as loader, BatchReader(loader.pipe, wait_for_pipe=60) as r:
    it = r.batches()
    for _ in range(40): next(it)
    loader.control.reset_anchor()
    cyc = rl_cycles(loader.control, it, 3, 8, cycles=cycles, timeout=60, fresh=fresh)
    for c in range(cycles):
        base = k
        for _ in range(3):
            write_marked(samples[k % len(samples)], k, os.path.join(games, "b_%04d.gz" % k)); k += 1
        cy = next(cyc)
        got = 0
        for b in cy.batches:
            m = b.tensors["values"][:, 1, 2] - MARK
            got += int(((m >= base) & (m < base + 3)).sum())
            time.sleep(0.05)
        shares.append(got / (0.25 * sum(npos(j) for j in range(base, base + 3))))
shutil.rmtree(work)
print("%s fresh=%d: awaited games' positions in their 8-step cycle, as a share of one use's (0.25 of each game): median %.2f (%.2f to %.2f)" % (
    os.path.basename(cfg), fresh, statistics.median(shares), min(shares), max(shares)))
