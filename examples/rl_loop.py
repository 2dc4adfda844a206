#!/usr/bin/env python3
"""The reinforcement-learning loop with lcmon, end to end, on the bundled
sample games: a small network trains for a few cycles while new games
arrive, as self-play would write them.

    /usr/bin/python3 examples/rl_loop.py              # 3 cycles, from the repository
    /usr/bin/python3 examples/rl_loop.py --cycles 5 --new-games 4 --steps 20

Each cycle waits until `--new-games` games have arrived since the anchor
(lcmon's pool counts them), moves the anchor to the newest game, trains
`--steps` batches and saves a checkpoint with the anchor in it. A run that
finds a checkpoint resumes from it: the saved anchor is given to the loader
at its start (lcmon.Loader(config, anchor=saved)), so its first cycle
counts exactly the games that came after it, while the trainer was down
and since, not the whole folder:

    /usr/bin/python3 examples/rl_loop.py --checkpoint /tmp/rl/ckpt.pt   # run, stop...
    /usr/bin/python3 examples/rl_loop.py --checkpoint /tmp/rl/ckpt.pt   # ...and resume

Here a thread plays self-play: it copies a sample game into the watched
folder (`--games`, by default `games` beside the checkpoint) every
`--every` seconds, numbering on after the games already there, as a
self-play client that ran on while the trainer was down would have. Each
cycle's line says how many games it counted and how many of the folder's
names lie between its two anchors: the same. The network is tiny (the 112 input planes to
a policy over 1858 moves and a win/draw/loss head) and trains on the CPU
unless a GPU is there; the batches come packed and are expanded where the
network runs (lcmon.torch). Needs torch; lcmon from $LCMON, PATH or the
repository's build.
"""

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

try:
    import numpy  # noqa: E402,F401
    import torch  # noqa: E402
    import torch.nn.functional as F  # noqa: E402
except ImportError as e:
    sys.exit("rl_loop: %s cannot import %s; run the example with an interpreter that has "
             "numpy and torch, such as Debian's: /usr/bin/python3 %s" % (
                 sys.executable, e.name, os.path.relpath(os.path.abspath(__file__))))

import lcmon  # noqa: E402
from lcmon.lczero import rl_cycles  # noqa: E402


def sample_games(root):
    games = []
    for d, _, files in sorted(os.walk(root)):
        games += [os.path.join(d, f) for f in sorted(files) if f.endswith(".gz")]
    return games


def game_number(name):
    """game_000123.gz: 123; None for another name."""
    if name.startswith("game_") and name.endswith(".gz") and name[5:-3].isdigit():
        return int(name[5:-3])
    return None


def games_between(folder, after, upto=None):
    """The folder's games whose names sort after `after` (None: all) and up
    to `upto` (None: all): the games an anchor moved from `after` to `upto`
    counts."""
    return sum(1 for n in os.listdir(folder) if game_number(n) is not None
               and (after is None or n > after) and (upto is None or n <= upto))


def self_play(games, into, every, stop):
    """Write one game at a time into `into` (a temporary name, then a
    rename: a finished file appears whole), as a self-play client would,
    until stopped (the sample games over and over, under new names that
    go on after the games already there)."""
    numbers = [game_number(n) for n in os.listdir(into)]
    k = max([n for n in numbers if n is not None], default=-1) + 1
    while not stop.is_set():
        name = "game_%06d.gz" % k
        part = os.path.join(into, "." + name + ".part")
        shutil.copy(games[k % len(games)], part)
        os.rename(part, os.path.join(into, name))
        k += 1
        stop.wait(every)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Conv2d(112, 16, 3, padding=1), torch.nn.ReLU())
        self.policy = torch.nn.Linear(16 * 64, 1858)
        self.value = torch.nn.Linear(16 * 64, 3)

    def forward(self, planes):
        x = self.body(planes).flatten(1)
        return self.policy(x), self.value(x)


def loss_of(net, batch):
    policy_logits, value_logits = net(batch["inputs"])
    target = batch["policy"]
    legal = target >= 0
    p = torch.where(legal, target, torch.zeros_like(target))
    policy_logits = policy_logits.masked_fill(~legal, -1e9)
    policy_loss = -(p * F.log_softmax(policy_logits, dim=1)).sum(1).mean()
    q, d = batch["values"][:, 0, 0], batch["values"][:, 0, 1]
    wdl = torch.stack([(1 - d + q) / 2, d, (1 - d - q) / 2], dim=1)
    value_loss = -(wdl * F.log_softmax(value_logits, dim=1)).sum(1).mean()
    return policy_loss + value_loss


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--new-games", type=int, default=3, help="games to wait for each cycle")
    ap.add_argument("--steps", type=int, default=10, help="batches to train each cycle")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--every", type=float, default=0.2, help="seconds between new games")
    ap.add_argument("--samples", default=os.path.join(HERE, "..", "tests", "data"))
    ap.add_argument("--checkpoint", default=None, help="file (default: in a temporary folder)")
    ap.add_argument("--games", default=None,
                    help="the self-play folder (default: games beside the checkpoint)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds one wait may take")
    args = ap.parse_args(argv)

    work = None if args.checkpoint else tempfile.mkdtemp(prefix="lcmon-rl-")
    checkpoint = args.checkpoint or os.path.join(work, "checkpoint.pt")
    games_dir = args.games or os.path.join(os.path.dirname(os.path.abspath(checkpoint)), "games")
    os.makedirs(games_dir, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    config = {
        "stages": [
            {"name": "files", "file_path_provider": {"directory": games_dir}},
            {"name": "sources", "input": "files", "chunk_source_loader": {}},
            {"name": "pool", "input": "sources",
             "shuffling_chunk_pool": {"chunk_pool_size": 1000}},
            {"name": "unpacker", "input": "pool", "chunk_unpacker": {"sampling_rate": 0.5}},
            {"name": "sampler", "input": "unpacker",
             "shuffling_frame_sampler": {"reservoir_size": 500}},
            {"name": "tensors", "input": "sampler",
             "tensor_generator": {"batch_size": args.batch_size, "packed": True}},
            {"name": "writer", "input": "tensors", "fifo_writer": {"path": "(the Loader's)"}},
        ]
    }
    net = Net().to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    anchor = None
    if os.path.exists(checkpoint):
        saved = torch.load(checkpoint)
        net.load_state_dict(saved["net"])
        anchor = saved["anchor"]
        print("resuming from %s: anchor %s, %d games of %s after it" % (
            checkpoint, anchor, games_between(games_dir, anchor), games_dir), flush=True)
    stop = threading.Event()
    games = sample_games(args.samples)
    player = threading.Thread(target=self_play, args=(games, games_dir, args.every, stop),
                              daemon=True)
    player.start()
    try:
        # The saved anchor goes to the loader's start: its pool counts the
        # games after it (rl_cycles then leaves the anchor as it is).
        with lcmon.Loader(config, anchor=anchor) as loader:
            batches = iter(loader.dataset(device=device))
            for cycle in rl_cycles(loader.control, batches, args.new_games, args.steps,
                                   anchor=anchor, cycles=args.cycles, timeout=args.timeout):
                in_folder = games_between(games_dir, anchor, cycle.anchor)
                anchor = cycle.anchor
                losses = []
                for batch in cycle.batches:
                    loss = loss_of(net, batch)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    losses.append(loss.item())
                torch.save({"net": net.state_dict(), "anchor": cycle.anchor}, checkpoint)
                print("cycle %d: %d new games (%d in the folder since the last anchor), "
                      "anchor %s, %d steps, loss %.3f -> %.3f"
                      % (cycle.index, cycle.new_games, in_folder, cycle.anchor, len(losses),
                         losses[0], losses[-1]), flush=True)
    finally:
        stop.set()
        player.join()
        if work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
