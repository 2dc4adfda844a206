"""bench/default's work (run it through bench/default): the default pipeline
at each sampling mode, dense and packed, into the Python reader; positions/s
and what bounds each run. See bench/default for the environment."""

import glob
import gzip
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

LCMON = os.environ["LCMON"]
PY = os.environ.get("LCMON_PYTHON", "/usr/bin/python3")
GAMES = int(os.environ.get("GAMES", "2000"))
BATCHES = int(os.environ.get("BATCHES", "600"))
SKIP = int(os.environ.get("SKIP", "200"))
REPEAT = int(os.environ.get("REPEAT", "2"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODES = {
    "1.0": "sampling_rate: 1.0",
    "0.25": "sampling_rate: 0.25",
    "1/32": "sampling_rate: 0.03125",
    "one": "positions_per_chunk: 1",
}
LABELS = {"1.0": "every position (1.0)", "0.25": "1/4 (the default)", "1/32": "1/32",
          "one": "one position a use"}


def say(*a):
    print(*a, file=sys.stderr, flush=True)


def corpus(work):
    samples = sorted(glob.glob(os.path.join(ROOT, "tests", "data", "**", "game_*.gz"),
                               recursive=True))
    if not samples:
        sys.exit("bench/default: no game_*.gz under tests/data")
    out = os.path.join(work, "corpus")
    os.mkdir(out)
    for i in range(GAMES):
        shutil.copyfile(samples[i % len(samples)], os.path.join(out, "game_%06d.gz" % i))
    packed = sum(os.path.getsize(s) for s in samples)
    plain = 0
    for s in samples:
        with gzip.open(s) as f:
            plain += len(f.read())
    return out, plain / packed, len(samples)


def config(work, data, pipe, mode, packed):
    text = subprocess.run([LCMON, "--print-default-config"], capture_output=True, text=True,
                          check=True).stdout
    text = text.replace("${LCMON_DATA:-tests/data}", data)
    text = text.replace("'${LCMON_PIPE:-lcmon.pipe}'", "'%s'" % pipe)
    text, n = re.subn(r"chunk_unpacker: \{sampling_rate: [\d.]+", "chunk_unpacker: {" + mode,
                      text)
    assert n == 1, "the default config's unpacker line changed"
    if packed:
        text, n = re.subn(r"(tensor_generator: \{[^}]*)\}", r"\1, packed: true}", text)
        assert n == 1
    # The settings the page's "how to go faster" names, when asked for.
    if os.environ.get("POOL_EXTRA"):
        text, n = re.subn(r"(shuffling_chunk_pool: \{[^}]*)\}",
                          r"\1, %s}" % os.environ["POOL_EXTRA"], text)
        assert n == 1
    if os.environ.get("UNPACK_THREADS"):
        text, n = re.subn(r"(chunk_unpacker: \{[^}]*threads: )\d+",
                          r"\g<1>%s" % os.environ["UNPACK_THREADS"], text)
        assert n == 1
    path = os.path.join(work, "bench.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busiest(mlog, t0, t1):
    """The stage whose pools were busiest between t0 and t1 (wall clock), as
    (name, busy share per thread), from the metrics log's last-second loads."""
    share = {}
    lines = []
    with open(mlog) as f:
        for line in f:
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
    # The log has a line a second; each says the second before it.
    chosen = [m for m in lines if t0 + 1 <= m.get("time", 0) <= t1 + 0.5]
    if not chosen:
        chosen = [m for m in lines if m.get("time", 0) <= t1 + 0.5][-2:]
    for m in chosen:
            for s in m.get("last_second", {}).get("stage_metrics", []):
                for l in s.get("load_metrics", []):
                    total = l.get("total_seconds", 0) or 0
                    if total > 0:
                        share.setdefault(s["name"], []).append(l.get("load_seconds", 0) / total)
    if not share:
        return ("?", 0.0)
    name = max(share, key=lambda k: statistics.mean(share[k]))
    return (name, statistics.mean(share[name]))


def batch_size(cfg):
    with open(cfg) as f:
        return int(re.search(r"batch_size: (\d+)", f.read()).group(1))


def wait_for_pipe(lc, pipe):
    """Until lcmon (the Popen lc) has made its pipe (a minute at most)."""
    deadline = time.monotonic() + 60
    while not os.path.exists(pipe):
        if time.monotonic() > deadline or lc.poll() is not None:
            raise RuntimeError("lcmon did not make its pipe")
        time.sleep(0.05)


def one_run(work, data, mode, packed):
    pipe = os.path.join(work, "bench.pipe")
    mlog = os.path.join(work, "metrics.jsonl")
    for p in (pipe, mlog):
        if os.path.exists(p):
            os.unlink(p)
    cfg = config(work, data, pipe, MODES[mode], packed)
    lc = subprocess.Popen([LCMON, "--no-ui", "--quiet", "--config", cfg, "--metrics-log", mlog],
                          stderr=subprocess.DEVNULL)
    try:
        wait_for_pipe(lc, pipe)
        reader = subprocess.Popen([PY, "-m", "lcmon", pipe, "--batches", str(SKIP + BATCHES),
                                   "--skip", str(SKIP)], stdout=subprocess.PIPE, text=True)
        # The reader's own CPU, sampled as it goes: its share of a core over
        # the timed batches (the last BATCHES of them) is read off afterwards.
        samples = []
        while reader.poll() is None:
            try:
                samples.append((time.time(), cpu_seconds(reader.pid), cpu_seconds(lc.pid)))
            except (OSError, IndexError):
                break
            time.sleep(0.1)
        out = reader.communicate()[0]
        m = re.search(r"([\d.]+) rows/s", out)
        if not m:
            raise RuntimeError("the reader said: %s" % out)
        rate = float(m.group(1))
        t_end = samples[-1][0] if samples else time.time()
        t_begin = t_end - BATCHES * batch_size(cfg) / rate
        window = [x for x in samples if x[0] >= t_begin]
        def share(k):
            if len(window) < 2 or window[-1][0] <= window[0][0]:
                return 0.0
            return (window[-1][k] - window[0][k]) / (window[-1][0] - window[0][0])
        reader_share, lcmon_cores = share(1), share(2)
        stage, busy = busiest(mlog, t_begin, t_end)
        return rate, stage, busy, reader_share, lcmon_cores
    finally:
        lc.send_signal(signal.SIGINT)
        try:
            lc.wait(20)
        except subprocess.TimeoutExpired:
            lc.kill()
            lc.wait()


def main():
    work = tempfile.mkdtemp(prefix="lcmon-default-bench.")
    os.environ["XDG_RUNTIME_DIR"] = work  # a killed lcmon's lock file goes with it
    try:
        data, ratio, n = corpus(work)
        say("corpus: %d copies of the %d sample games in tests/data, compressed %.1f:1 "
            "(production lc0 data: about 45:1)" % (GAMES, n, ratio))
        say("machine: %d cores; the default pipeline (lcmon --print-default-config), its "
            "unpacker's sampling changed, dense and packed, into python3 -m lcmon" %
            os.cpu_count())
        modes = os.environ.get("MODES", "1.0 0.25 1/32 one").split()
        results = {}
        for r in range(REPEAT):
            for mode in modes:
                for packed in (False, True):
                    rate, stage, busy, reader, cores = one_run(work, data, mode, packed)
                    results.setdefault((mode, packed), []).append((rate, stage, busy, reader,
                                                                   cores))
                    say("run %d: %-22s %-6s %9.0f positions/s  busiest: %s %.0f%%; cores: "
                        "lcmon %.2f, reader %.2f" % (r + 1, LABELS[mode], "packed" if packed
                                                     else "dense", rate, stage, 100 * busy,
                                                     cores, reader))
        print("| sampling | dense, positions/s | packed, positions/s | busiest stage "
              "(dense / packed) | cores used, lcmon + reader (dense / packed) |")
        print("|---|---|---|---|---|")
        for mode in modes:
            cells = []
            for packed in (False, True):
                rates = [x[0] for x in results[(mode, packed)]]
                cells.append("%s (%s-%s)" % (f"{statistics.median(rates):,.0f}",
                                             f"{min(rates):,.0f}", f"{max(rates):,.0f}"))
            bound = []
            core = []
            for packed in (False, True):
                last = results[(mode, packed)]
                names = [x[1] for x in last]
                top = max(set(names), key=names.count)
                bound.append("%s %.0f%%" % (top, 100 * statistics.median(
                    x[2] for x in last if x[1] == top)))
                core.append("%.2f + %.2f" % (statistics.median(x[4] for x in last),
                                             statistics.median(x[3] for x in last)))
            print("| %s | %s | %s | %s | %s |" % (LABELS[mode], cells[0], cells[1],
                                                   " / ".join(bound), " / ".join(core)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
