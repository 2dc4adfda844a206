"""What lcmon.Loader.maybe_next() costs (docs/performance.md).

    PYTHONPATH=python LCMON=build/lcmon /usr/bin/python3 bench/maybe_next.py

The default pipeline's shape (batches of 256, current layout, dense; and
packed) on the sample games in tests/data, started by lcmon.Loader:

1. nothing ready: the tensor generator paused and the pipe drained, CALLS
   calls of maybe_next() timed one by one (wall time: median, 99th
   percentile, max) and together (process CPU time a call), and as many
   bare poll(0) calls on the same pipe (the system call it makes) timed
   together;
2. batches flowing: BATCHES batches read with get() and with a loop that
   calls maybe_next() until it gives one, alternated REPEAT times:
   positions/s each way, and the calls that found nothing.
"""

import os
import select
import statistics
import sys
import time

import lcmon

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("LCMON_DATA", os.path.join(ROOT, "tests", "data"))
CALLS = int(os.environ.get("CALLS", "100000"))
BATCHES = int(os.environ.get("BATCHES", "300"))
REPEAT = int(os.environ.get("REPEAT", "3"))


def config(packed):
    return {
        "stages": [
            {"name": "files", "file_path_provider": {"directory": DATA}},
            {"name": "sources", "input": "files", "chunk_source_loader": {"threads": 1}},
            {"name": "pool", "input": "sources",
             "shuffling_chunk_pool": {"chunk_pool_size": 50000, "threads": 2}},
            {"name": "unpacker", "input": "pool", "chunk_unpacker": {"sampling_rate": 1.0}},
            {"name": "sampler", "input": "unpacker",
             "shuffling_frame_sampler": {"reservoir_size": 20000}},
            {"name": "tensors", "input": "sampler",
             "tensor_generator": {"batch_size": 256, "layout": "current", "packed": packed}},
            {"name": "writer", "input": "tensors", "fifo_writer": {"path": "set by Loader"}},
        ],
    }


def nothing_ready(L):
    L.control.pause("tensors")
    while L.get(timeout=2.0) is not None:
        pass
    took = []
    for _ in range(1000):  # warm up
        L.maybe_next()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(CALLS):
        L.maybe_next()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    for _ in range(CALLS // 10):
        t0 = time.perf_counter()
        b = L.maybe_next()
        took.append(time.perf_counter() - t0)
        assert b is None
    took.sort()
    p = select.poll()
    p.register(L.reader()._f.fileno(), select.POLLIN)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(CALLS):
        p.poll(0)
    poll_cpu, poll_wall = time.process_time() - cpu0, time.perf_counter() - wall0
    L.control.resume("tensors")
    return {
        "poll_mean_us": 1e6 * poll_wall / CALLS,
        "poll_cpu_us": 1e6 * poll_cpu / CALLS,
        "median_us": 1e6 * statistics.median(took),
        "p99_us": 1e6 * took[int(0.99 * len(took))],
        "max_us": 1e6 * took[-1],
        "mean_us": 1e6 * wall / CALLS,
        "cpu_us": 1e6 * cpu / CALLS,
    }


def flowing(L, how):
    n, empty = 0, 0
    t0 = time.perf_counter()
    while n < BATCHES:
        if how == "get":
            L.get()
            n += 1
        elif L.maybe_next() is None:
            empty += 1
        else:
            n += 1
    return 256 * BATCHES / (time.perf_counter() - t0), empty


def main():
    for packed in (False, True):
        name = "packed" if packed else "dense"
        with lcmon.Loader(config(packed)) as L:
            for _ in range(BATCHES):  # the reservoir filled, the queues full
                L.get()
            idle = nothing_ready(L)
            print("%s, nothing ready: maybe_next() median %.1f us, 99%% %.1f us, max %.0f us; "
                  "mean %.1f us, %.1f us of CPU a call (a bare poll(0): %.1f us, %.1f us of CPU)"
                  % (name, idle["median_us"], idle["p99_us"], idle["max_us"], idle["mean_us"],
                     idle["cpu_us"], idle["poll_mean_us"], idle["poll_cpu_us"]), flush=True)
            rates = {"get": [], "maybe_next": []}
            empties = []
            for _ in range(REPEAT):
                for how in ("get", "maybe_next"):
                    rate, empty = flowing(L, how)
                    rates[how].append(rate)
                    if how == "maybe_next":
                        empties.append(empty)
            for how, r in rates.items():
                print("%s, batches flowing, %s: %.0f positions/s (median of %s)%s"
                      % (name, how, statistics.median(r), " / ".join("%.0f" % x for x in r),
                         "; calls that found nothing: %s" % " / ".join(map(str, empties))
                         if how == "maybe_next" else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
