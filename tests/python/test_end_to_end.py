"""End to end: the real lcmon binary, configured by YAML files written here,
reading the bundled lc0 sample games and writing batches to a named pipe that
lcmon.BatchReader (python/lcmon) reads.

- A shuffled chain (like config/default.yaml, small): names, dtypes and
  shapes, the value ranges the doc and the sample data guarantee, every row
  being an exact rendering of one sample record, and SIGINT stopping lcmon
  with status 0.
- The chunk store: the shuffled chain run with the pool's store and without
  it, the same seed, for several passes over the window: every batch the
  same, byte for byte, in both layouts.
- Sequential runs (like config/sequential.yaml) over copies of a few sample
  folders and the sample tar: every record exactly once, in sort-key order,
  each row equal to what docs/lc0-training-data.md says, computed here
  independently from the raw records with numpy (current and legacy layout).

Environment: LCMON (the executable), LCMON_TEST_DATA (tests/data),
LCMON_SOURCE_ROOT (the source tree), PYTHONPATH (python/). Every wait is
bounded: the reader has a timeout, lcmon is waited for with one.
"""

import gzip
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

import numpy as np

from lcmon import BatchReader, Progress

LCMON = os.path.abspath(os.environ["LCMON"]) if os.environ.get("LCMON") else ""
SOURCE_ROOT = os.environ.get("LCMON_SOURCE_ROOT", "")
DATA = os.environ.get("LCMON_TEST_DATA", "") or (
    os.path.join(SOURCE_ROOT, "tests", "data") if SOURCE_ROOT else ""
)
TIMEOUT = 10  # seconds: reader reads, pipe creation, lcmon exits

POLICY = 1858
V6_SIZE = 8356

# The V6 record, at the offsets of docs/lc0-training-data.md.
_FIELDS = [
    ("version", "<u4", 0),
    ("input_format", "<u4", 4),
    ("probabilities", ("<f4", (POLICY,)), 8),
    ("planes", ("<u8", (104,)), 7440),
    ("castling_us_ooo", "u1", 8272),
    ("castling_us_oo", "u1", 8273),
    ("castling_them_ooo", "u1", 8274),
    ("castling_them_oo", "u1", 8275),
    ("side_to_move_or_enpassant", "u1", 8276),
    ("rule50_count", "u1", 8277),
    ("invariance_info", "u1", 8278),
    ("dummy", "u1", 8279),
    ("root_q", "<f4", 8280),
    ("best_q", "<f4", 8284),
    ("root_d", "<f4", 8288),
    ("best_d", "<f4", 8292),
    ("root_m", "<f4", 8296),
    ("best_m", "<f4", 8300),
    ("plies_left", "<f4", 8304),
    ("result_q", "<f4", 8308),
    ("result_d", "<f4", 8312),
    ("played_q", "<f4", 8316),
    ("played_d", "<f4", 8320),
    ("played_m", "<f4", 8324),
    ("orig_q", "<f4", 8328),
    ("orig_d", "<f4", 8332),
    ("orig_m", "<f4", 8336),
    ("visits", "<u4", 8340),
    ("played_idx", "<u2", 8344),
    ("best_idx", "<u2", 8346),
    ("policy_kld", "<f4", 8348),
    ("q_st", "<f4", 8352),
]
V6 = np.dtype(
    {
        "names": [f[0] for f in _FIELDS],
        "formats": [f[1] for f in _FIELDS],
        "offsets": [f[2] for f in _FIELDS],
        "itemsize": V6_SIZE,
    }
)

# The records as read here: V6 and, behind each, the short-term targets
# lcmon computes for V6 by default (st_targets: compute, theta 5/6, st_math:
# float).
V6ST = np.dtype(
    {
        "names": [f[0] for f in _FIELDS] + ["st_q", "st_d"],
        "formats": [f[1] for f in _FIELDS] + ["<f4", "<f4"],
        "offsets": [f[2] for f in _FIELDS] + [V6_SIZE, V6_SIZE + 4],
        "itemsize": V6_SIZE + 8,
    }
)
ST_THETA = 5.0 / 6.0

CANONICAL = (3, 4, 5, 132, 133)
GZIP_MAGIC = b"\x1f\x8b"


# ---- the records, read independently of lcmon ----


def sources_in_order(root):
    """Every file under root (names starting with '.' skipped), sorted by
    sort key: the basename as bytes (the full path breaks ties)."""
    found = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        for name in files:
            if not name.startswith("."):
                path = os.path.join(d, name)
                found.append((os.fsencode(name), os.fsencode(path), path))
    found.sort()
    return [f[2] for f in found]


def chunks_of(path):
    """The decompressed chunks of one source, in order: a .gz is one chunk
    (all its gzip members), a .tar one chunk per gzip member."""
    if path.endswith(".gz"):
        with open(path, "rb") as f:
            return [gzip.decompress(f.read())]
    if path.endswith(".tar"):
        out = []
        with tarfile.open(path, "r:") as t:
            for m in t.getmembers():
                if not m.isfile():
                    continue
                data = t.extractfile(m).read()
                if data[:2] == GZIP_MAGIC:
                    out.append(gzip.decompress(data))
        return out
    return []


def st_targets(root_q, root_d, theta=ST_THETA):
    """q_st and d_st of one game, per docs/pipelines.md (upstream's float
    rule, lcmon's default st_math: float): theta as a float32; q in
    position 0's view (negated at odd plies); from the last ply back,
    st = theta * st + (1 - theta) * cur, each product and the sum rounded
    to float32; the signs put back; d the same without signs, clamped as
    std::max(d, 0) (negative to +0)."""
    f32 = np.float32
    n = len(root_q)
    q_st = np.empty(n, dtype=np.float32)
    d_st = np.empty(n, dtype=np.float32)
    th = f32(theta)
    be = f32(f32(1.0) - th)
    sq = sd = f32(0.0)
    for i in range(n - 1, -1, -1):
        sign = f32(-1.0) if i % 2 else f32(1.0)
        cur = f32(f32(root_q[i]) * sign)
        if i == n - 1:
            sq, sd = cur, f32(root_d[i])
        else:
            sq = f32(f32(th * sq) + f32(be * cur))
            sd = f32(f32(th * sd) + f32(be * f32(root_d[i])))
        q_st[i] = f32(sq * sign)
        d_st[i] = f32(0.0) if sd < f32(0.0) else sd
    return q_st, d_st


def chunk_records(chunk, path="a chunk"):
    """The V6 records of one chunk (one game), each with the short-term
    targets of the game (st_q, st_d)."""
    assert len(chunk) % V6_SIZE == 0, path
    raw = np.frombuffer(chunk, dtype=np.uint8).reshape(-1, V6_SIZE)
    part = np.zeros(len(raw), dtype=V6ST)
    part.view(np.uint8).reshape(-1, V6_SIZE + 8)[:, :V6_SIZE] = raw
    part["st_q"], part["st_d"] = st_targets(part["root_q"], part["root_d"])
    return part


def read_records(root):
    """All records under root, in the order a sequential run emits them,
    each with the short-term targets of its game (st_q, st_d)."""
    parts = [chunk_records(chunk, path) for path in sources_in_order(root)
             for chunk in chunks_of(path)]
    recs = np.concatenate(parts)
    assert (recs["version"] == 6).all()
    return recs


# ---- the tensors, per docs/lc0-training-data.md ----

_SHIFTS = (np.arange(64, dtype=np.uint64) ^ np.uint64(7)).astype(np.uint64)


def expected_planes(recs):
    """[N, 112, 8, 8] float32 input planes."""
    n = len(recs)
    out = np.zeros((n, 112, 64), dtype=np.float32)
    words = recs["planes"].astype(np.uint64)
    # Plane p, square s: (planes[p] >> (s ^ 7)) & 1
    out[:, :104, :] = ((words[:, :, None] >> _SHIFTS[None, None, :]) & np.uint64(1)).astype(
        np.float32
    )
    files = np.arange(8)
    for i, r in enumerate(recs):
        fmt = int(r["input_format"])
        us_ooo, us_oo = int(r["castling_us_ooo"]), int(r["castling_us_oo"])
        them_ooo, them_oo = int(r["castling_them_ooo"]), int(r["castling_them_oo"])
        stm = int(r["side_to_move_or_enpassant"])
        if fmt == 1:
            out[i, 104, :] = us_ooo
            out[i, 105, :] = us_oo
            out[i, 106, :] = them_ooo
            out[i, 107, :] = them_oo
            out[i, 108, :] = stm
        elif fmt == 2 or fmt in CANONICAL:
            # Rook-file masks: file f = bit f, ours on rank 1, theirs on rank 8.
            out[i, 104, 0:8] = (us_ooo >> files) & 1
            out[i, 104, 56:64] = (them_ooo >> files) & 1
            out[i, 105, 0:8] = (us_oo >> files) & 1
            out[i, 105, 56:64] = (them_oo >> files) & 1
            if fmt == 2:
                out[i, 108, :] = stm
            else:
                out[i, 108, 56:64] = (stm >> files) & 1  # en-passant file mask
        else:
            raise AssertionError("input_format %d in the sample data" % fmt)
        div = np.float32(99.0) if fmt <= 3 else np.float32(100.0)
        out[i, 109, :] = np.float32(r["rule50_count"]) / div
        if fmt in (132, 133) and int(r["invariance_info"]) & 0x80:
            out[i, 110, :] = 1.0
        out[i, 111, :] = 1.0
    return out.reshape(n, 112, 8, 8)


def expected_values(recs):
    """[N, 6, 3] float32: result, best, played, orig, root, st."""
    nan = np.full(len(recs), np.nan, dtype=np.float32)
    rows = [
        ("result_q", "result_d", "plies_left"),
        ("best_q", "best_d", "best_m"),
        ("played_q", "played_d", "played_m"),
        ("orig_q", "orig_d", "orig_m"),
        ("root_q", "root_d", "root_m"),
    ]
    out = np.empty((len(recs), 6, 3), dtype=np.float32)
    for j, row in enumerate(rows):
        for k, name in enumerate(row):
            out[:, j, k] = recs[name]
    # Computed for V6 by default (with st_targets: keep, q_st would be the
    # record's last 4 bytes as a float and d_st 0.0).
    out[:, 5, 0] = recs["st_q"]
    out[:, 5, 1] = recs["st_d"]
    out[:, 5, 2] = nan
    return out


def wdl(q, d):
    """W = 0.5 * (1 - d + q), D = d, L = 0.5 * (1 - d - q): computed in
    float64 from the float32 fields and rounded once to float32, as the
    legacy trainer's chunkparser does (Python floats)."""
    q = q.astype(np.float32).astype(np.float64)
    d = d.astype(np.float32).astype(np.float64)
    w = (0.5 * (1.0 - d + q)).astype(np.float32)
    l = (0.5 * (1.0 - d - q)).astype(np.float32)
    return np.stack([w, d.astype(np.float32), l], axis=1)


def expected_current(recs):
    return {
        "inputs": expected_planes(recs),
        "policy": recs["probabilities"].astype(np.float32),
        "values": expected_values(recs),
    }


def expected_legacy(recs):
    return {
        "planes": expected_planes(recs),
        "probs": recs["probabilities"].astype(np.float32),
        "winner": wdl(recs["result_q"], recs["result_d"]),
        "best_q": wdl(recs["best_q"], recs["best_d"]),
        # A plies_left of 0 falls back to the invariance byte, every version
        # (as the legacy chunkparser reads it).
        "plies_left": np.where(recs["plies_left"] == 0,
                               recs["invariance_info"].astype(np.float32),
                               recs["plies_left"]).astype(np.float32),
    }


def assert_bits_equal(test, got, want, what):
    """Bit-exact float32 comparison (NaN only matches NaN, -0 only -0...),
    reporting the first difference."""
    g = np.ascontiguousarray(got, dtype=np.float32)
    w = np.ascontiguousarray(want, dtype=np.float32)
    test.assertEqual(g.shape, w.shape, what)
    gb, wb = g.view(np.uint32), w.view(np.uint32)
    both_nan = np.isnan(g) & np.isnan(w)
    bad = (gb != wb) & ~both_nan
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        test.fail(
            "%s: %d of %d values differ; first at %s: got %r, want %r"
            % (what, int(bad.sum()), bad.size, idx, float(g[idx]), float(w[idx]))
        )


# ---- running lcmon ----


def sequential_yaml(directory, pipe, tensors, unpacker="", writer=""):
    """A sequential run (every position of every chunk once, in file order)
    over directory into pipe; tensors, unpacker and writer add settings to
    those blocks (", regular_file: true" writes a stream file)."""
    return """\
stages:
  - name: files
    file_path_provider: {directory: '%s', watch: false}
  - name: sources
    input: files
    chunk_source_loader: {threads: 1}
  - name: chunks
    input: sources
    chunk_reader: {}
  - name: unpacker
    input: chunks
    chunk_unpacker: {sampling_rate: 1.0, shuffle: false%s}
    output: {capacity: 1024}
  - name: tensors
    input: unpacker
    tensor_generator: {threads: 1, %s}
  - name: writer
    input: tensors
    fifo_writer: {path: '%s'%s}
""" % (directory, unpacker, tensors, pipe, writer)


class LcmonCase(unittest.TestCase):
    def setUp(self):
        self.assertTrue(LCMON and os.access(LCMON, os.X_OK), "LCMON must name the lcmon executable")
        self.assertTrue(DATA and os.path.isdir(DATA), "LCMON_TEST_DATA must name tests/data")
        self.dir = tempfile.mkdtemp(prefix="lcmon-e2e-")
        self.proc = None
        self.log = None
        self.reader = None

    def tearDown(self):
        if self.reader is not None:
            self.reader.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(TIMEOUT)
        if self.log is not None:
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def write_config(self, text):
        cfg = self.path("config.yaml")
        with open(cfg, "w") as f:
            f.write(text)
        return cfg

    def start(self, cfg, env=None):
        self.log = open(self.path("lcmon.log"), "w+")
        self.proc = subprocess.Popen(
            [LCMON, "--no-ui", "--status-interval", "0", "--config", cfg],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.dir,
            env=env,
        )

    def lcmon_log(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def open_reader(self, pipe):
        """Wait (bounded) for lcmon to make the pipe, then attach."""
        end = time.monotonic() + TIMEOUT
        while not os.path.exists(pipe):
            if self.proc.poll() is not None:
                self.fail("lcmon exited with %d before making the pipe:\n%s"
                          % (self.proc.returncode, self.lcmon_log()))
            if time.monotonic() > end:
                self.fail("lcmon made no pipe in %d s:\n%s" % (TIMEOUT, self.lcmon_log()))
            time.sleep(0.02)
        self.reader = BatchReader(pipe, timeout=TIMEOUT)
        return self.reader

    def wait_exit(self, timeout=TIMEOUT):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.fail("lcmon did not exit within %d s:\n%s" % (timeout, self.lcmon_log()))
        self.assertEqual(rc, 0, "lcmon exited with %d:\n%s" % (rc, self.lcmon_log()))


def layout_spec(layout, bs):
    if layout == "current":
        return [
            ("inputs", "float32", (bs, 112, 8, 8)),
            ("policy", "float32", (bs, 1858)),
            ("values", "float32", (bs, 6, 3)),
        ]
    return [
        ("planes", "float32", (bs, 112, 8, 8)),
        ("probs", "float32", (bs, 1858)),
        ("winner", "float32", (bs, 3)),
        ("best_q", "float32", (bs, 3)),
        ("plies_left", "float32", (bs,)),
    ]


class Shuffled(LcmonCase):
    BATCH = 64
    N_BATCHES = 20

    def config(self, pipe):
        return """\
seed: 7
metrics_interval_ms: 100
stages:
  - name: files
    file_path_provider: {directory: '%s'}
    output: {capacity: 256}
  - name: sources
    input: files
    chunk_source_loader: {threads: 1}
    output: {capacity: 64}
  - name: pool
    input: sources
    shuffling_chunk_pool: {chunk_pool_size: 1000, threads: 1}
    output: {capacity: 16}
  - name: validator
    input: pool
    chunk_validator: {threads: 1}
    output: {capacity: 16}
  - name: unpacker
    input: validator
    chunk_unpacker: {sampling_rate: 0.5, threads: 1}
    output: {capacity: 2048}
  - name: sampler
    input: unpacker
    shuffling_frame_sampler: {reservoir_size: 2000}
    output: {capacity: 2048}
  - name: tensors
    input: sampler
    tensor_generator: {batch_size: %d, layout: current, threads: 1}
    output: {capacity: 4}
  - name: writer
    input: tensors
    fifo_writer: {path: '%s'}
""" % (DATA, self.BATCH, pipe)

    def test_shuffled_batches_then_sigint(self):
        pipe = self.path("lcmon.pipe")
        self.start(self.write_config(self.config(pipe)))
        # Every row must be the rendering of one record of the sample data:
        # look rows up by their policy bytes.
        recs = read_records(DATA)
        by_policy = {}
        for i in range(len(recs)):
            by_policy.setdefault(recs["probabilities"][i].tobytes(), []).append(i)
        r = self.open_reader(pipe)
        self.assertEqual(
            [(t.name, t.dtype.name, t.shape) for t in r.header.tensors],
            layout_spec("current", self.BATCH),
        )
        seen = []
        for n in range(self.N_BATCHES):
            b = r.read_batch()
            self.assertIsNotNone(b, "the stream ended after %d batches" % n)
            self.assertEqual(b.seq, n)
            self.assertEqual(b.rows, self.BATCH)
            self.assertFalse(b.last)
            self.assertEqual(b.progress, Progress(), "a pool's run has no end to measure")
            t = b.tensors
            self.assertEqual(sorted(t), ["inputs", "policy", "values"])
            for name, dtype, shape in layout_spec("current", self.BATCH):
                self.assertEqual(t[name].dtype.name, dtype, name)
                self.assertEqual(t[name].shape, shape, name)
            self.check_ranges(n, t)
            # Each row is exactly one sample record, per the doc.
            rows = []
            for j in range(self.BATCH):
                cands = by_policy.get(t["policy"][j].tobytes())
                self.assertIsNotNone(cands, "batch %d row %d: policy of no sample record" % (n, j))
                rows.append(cands[0])
            want = expected_current(recs[rows])
            for name in ("inputs", "policy", "values"):
                assert_bits_equal(self, t[name], want[name], "batch %d %s" % (n, name))
            seen.extend(rows)
        # Shuffled across games: many different records, from several games.
        self.assertGreater(len(set(seen)), self.N_BATCHES * self.BATCH // 2)

        self.proc.send_signal(signal.SIGINT)
        self.wait_exit()

    def check_ranges(self, n, t):
        x = t["inputs"]
        binary = np.concatenate([x[:, :109], x[:, 110:]], axis=1)
        self.assertTrue(np.isin(binary, (0.0, 1.0)).all(), "batch %d: planes not 0/1" % n)
        r50 = x[:, 109]
        self.assertTrue(((r50 >= 0.0) & (r50 <= 1.0)).all(), "batch %d: plane 109" % n)
        # Plane 109 is constant per row.
        self.assertTrue((r50 == r50[:, :1, :1]).all())
        self.assertTrue((x[:, 111] == 1.0).all(), "batch %d: plane 111" % n)
        p = t["policy"]
        legal = p != -1.0
        self.assertTrue(((p == -1.0) | ((p >= 0.0) & (p <= 1.0))).all(), "batch %d: policy" % n)
        self.assertTrue(legal.any(axis=1).all())
        sums = np.where(legal, p, 0.0).astype(np.float64).sum(axis=1)
        np.testing.assert_allclose(sums, 1.0, atol=1e-4, err_msg="batch %d: policy sums" % n)
        v = t["values"]
        # The sample data has every field; q_st and d_st are computed for
        # V6 by default; the st row's third value is NaN by definition.
        self.assertTrue(np.isfinite(v[:, :5, :]).all(), "batch %d: values rows 0-4" % n)
        self.assertTrue(np.isfinite(v[:, 5, :2]).all(), "batch %d: q_st, d_st" % n)
        self.assertTrue((np.abs(v[:, 5, 0]) <= 1.0).all(), "batch %d: q_st" % n)
        self.assertTrue(np.isnan(v[:, 5, 2]).all(), "batch %d: st row third value" % n)
        # WDL sanity of the result row: q in [-1, 1], d in [0, 1].
        self.assertTrue((np.abs(v[:, 0, 0]) <= 1.0).all())
        self.assertTrue(((v[:, 0, 1] >= 0.0) & (v[:, 0, 1] <= 1.0)).all())


class Store(LcmonCase):
    """With the chunk store and without it, the same seed and one thread per
    stage: the same batches, bit for bit, in both layouts, over several
    passes (from the second pass on, every chunk comes from the store)."""

    BATCH = 64
    N_BATCHES = 60  # about 3 passes at sampling rate 0.5 over tests/data

    def run_chain(self, store, layout):
        pipe = self.path("store-%s-%s.pipe" % (store, layout))
        text = Shuffled.config(self, pipe).replace(
            "chunk_pool_size: 1000, threads: 1}",
            "chunk_pool_size: 1000, threads: 1, store_bytes: '%s'}" % store,
        ).replace("layout: current", "layout: " + layout)
        self.assertIn("store_bytes: '%s'" % store, text)
        self.start(self.write_config(text))
        r = self.open_reader(pipe)
        out = []
        for n in range(self.N_BATCHES):
            b = r.read_batch()
            self.assertIsNotNone(b, "the stream ended after %d batches" % n)
            out.append({k: v.copy() for k, v in b.tensors.items()})
        r.close()
        self.reader = None
        self.proc.send_signal(signal.SIGINT)
        self.wait_exit()
        log = self.lcmon_log()
        self.log.close()
        self.log = None
        return out, log

    def test_same_batches_with_and_without_store(self):
        for layout in ("current", "legacy"):
            with_store, log = self.run_chain("64M", layout)
            self.assertIn("chunk store of up to 64.0 MB", log)
            self.assertRegex(log, r"first pass over the window done .* the store holds \d+ chunks")
            without, log = self.run_chain("0", layout)
            self.assertIn("no chunk store", log)
            names = [t[0] for t in layout_spec(layout, self.BATCH)]
            for n, (a, b) in enumerate(zip(with_store, without)):
                self.assertEqual(sorted(a), sorted(names))
                for name in names:
                    self.assertEqual(a[name].tobytes(), b[name].tobytes(),
                                     "%s batch %d: %s differs" % (layout, n, name))


class Sequential(LcmonCase):
    def copy_data(self, folders, with_tar):
        root = self.path("data")
        for folder in folders:
            os.makedirs(os.path.join(root, folder))
            for name in sorted(os.listdir(os.path.join(DATA, folder))):
                if name.endswith(".gz"):
                    shutil.copy(os.path.join(DATA, folder, name), os.path.join(root, folder, name))
        if with_tar:
            shutil.copy(os.path.join(DATA, "training-run-mini.tar"), root)
        return root

    def config(self, data, pipe, batch_size, layout):
        return sequential_yaml(data, pipe, "batch_size: %d, layout: %s" % (batch_size, layout))

    def run_sequential(self, folders, with_tar, batch_size, layout, shipped=False):
        """Run lcmon over a copy of the folders; return (records, the
        concatenated valid rows per tensor, the batches' (seq, rows, last)).
        shipped: run config/sequential.yaml itself, pointed at the copy and
        the pipe through LCMON_DATA and LCMON_PIPE."""
        data = self.copy_data(folders, with_tar)
        recs = read_records(data)
        pipe = self.path("lcmon.pipe")
        if shipped:
            env = dict(os.environ, LCMON_DATA=data, LCMON_PIPE=pipe)
            self.start(os.path.join(SOURCE_ROOT, "config", "sequential.yaml"), env=env)
        else:
            self.start(self.write_config(self.config(data, pipe, batch_size, layout)))
        r = self.open_reader(pipe)
        self.assertEqual(
            [(t.name, t.dtype.name, t.shape) for t in r.header.tensors],
            layout_spec(layout, batch_size),
        )
        parts = {t.name: [] for t in r.header.tensors}
        frames = []
        while True:
            b = r.read_batch()
            if b is None:
                break
            frames.append((b.seq, b.rows, b.last, b.progress))
            for name, arr in b.tensors.items():
                self.assertEqual(arr.shape[0], b.rows, name)
                parts[name].append(np.array(arr, copy=True))
        self.assertTrue(r.done, "the stream ended without DONE")
        self.assertFalse(r.truncated)
        self.wait_exit()
        got = {name: np.concatenate(p) for name, p in parts.items()}
        return recs, got, frames

    def check_progress(self, frames, data, records_known):
        """The frames' progress: epoch 1 of 1; files and chunks read never
        go back and end at the totals (the chunks' total is known when every
        file is a .gz and one process reads them all)."""
        sources = [p for p in sources_in_order(data) if p.endswith((".gz", ".tar"))]
        chunks = sum(len(chunks_of(p)) for p in sources)
        progress = [f[3] for f in frames]
        for a, b in zip(progress, progress[1:]):
            self.assertLessEqual(a.files_done, b.files_done)
            self.assertLessEqual(a.records, b.records)
        last = progress[-1]
        self.assertEqual((last.epoch, last.epochs), (1, 1))
        self.assertEqual(last.files_total, len(sources))
        self.assertEqual(last.files_done, len(sources))
        self.assertEqual(last.records_total, chunks if records_known else 0)
        self.assertLessEqual(last.records, chunks)
        self.assertGreater(last.records, 0)
        self.assertEqual(last.fraction, 1.0)
        return last

    def check_frames(self, frames, n_rows, batch_size):
        n_batches = (n_rows + batch_size - 1) // batch_size
        self.assertEqual([f[0] for f in frames], list(range(n_batches)))
        for seq, rows, last, _ in frames[:-1]:
            self.assertEqual(rows, batch_size, "batch %d" % seq)
            self.assertFalse(last, "batch %d" % seq)
        self.assertEqual(frames[-1][1], n_rows - batch_size * (n_batches - 1))
        self.assertTrue(frames[-1][2], "the last batch carries no last-batch flag")

    def test_reader_cli_on_a_finite_run(self):
        """python -m lcmon reading a finite run's stream ends its summary
        with how far the run got (the progress each batch carries), and
        exits 0: it once failed formatting that progress."""
        data = self.copy_data(["lc0-v0.31.2-fmt1"], False)
        stream = self.path("stream.bin")
        self.start(self.write_config(sequential_yaml(data, stream, "batch_size: 64", "",
                                                     ", regular_file: true")))
        self.wait_exit()
        env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE_ROOT, "python"))
        out = subprocess.run([sys.executable, "-m", "lcmon", stream, "--batches", "0"], env=env,
                             capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertNotIn("Traceback", out.stderr)
        files = len([p for p in sources_in_order(data) if p.endswith(".gz")])
        self.assertRegex(out.stdout, r"end of stream \(DONE\); epoch 1 of 1, %d of %d files, "
                         r"\d+ of \d+ records, 100.0%%" % (files, files))

    def test_current_layout_every_record_in_order(self):
        bs = 128
        recs, got, frames = self.run_sequential(
            ["lc0-v0.31.2-fmt1", "lc0-v0.31.2-fmt3"], True, bs, "current"
        )
        n = len(recs)
        self.assertEqual(sorted(set(recs["input_format"].tolist())), [1, 2, 3, 5])
        self.assertEqual(len(got["inputs"]), n, "rows vs records")
        self.check_frames(frames, n, bs)
        # A tar archive among the files: the chunks' total is not known.
        last = self.check_progress(frames, self.path("data"), records_known=False)
        self.assertIn("%d of %d files, %d records, 100.0%%" % (
            last.files_done, last.files_total, last.records), str(last))
        # policy: the record's probabilities, bit for bit (-1 entries too).
        assert_bits_equal(self, got["policy"], recs["probabilities"], "policy")
        want = expected_current(recs)
        # Planes 0..103 from the bits, 104..111 per input_format, separately
        # so that a failure says which.
        assert_bits_equal(self, got["inputs"][:, :104], want["inputs"][:, :104], "planes 0-103")
        for p in range(104, 112):
            for fmt in (1, 2, 3, 5):
                sel = recs["input_format"] == fmt
                assert_bits_equal(
                    self, got["inputs"][sel, p], want["inputs"][sel, p],
                    "plane %d, input_format %d" % (p, fmt),
                )
        assert_bits_equal(self, got["values"], want["values"], "values")

    def test_shipped_sequential_config(self):
        # config/sequential.yaml as shipped (batch size 256, current layout).
        self.assertTrue(SOURCE_ROOT, "LCMON_SOURCE_ROOT must name the source tree")
        recs, got, frames = self.run_sequential(
            ["lc0-v0.31.2-fmt2"], False, 256, "current", shipped=True
        )
        self.assertEqual(len(got["inputs"]), len(recs), "rows vs records")
        self.check_frames(frames, len(recs), 256)
        want = expected_current(recs)
        for name in ("inputs", "policy", "values"):
            assert_bits_equal(self, got[name], want[name], name)

    def test_exact_multiple_marks_last_batch(self):
        # A run whose record count is a multiple of the batch size ends with
        # a full batch; that batch is still the last one and must say so
        # (Batch.last), like the partial last batch of other runs.
        n = len(read_records(os.path.join(DATA, "lc0-v0.31.2-fmt2")))
        k = max(d for d in range(1, 9) if n % d == 0)
        bs = n // k
        recs, got, frames = self.run_sequential(["lc0-v0.31.2-fmt2"], False, bs, "current")
        self.assertEqual(len(recs), n)
        self.assertEqual(len(got["policy"]), n, "rows vs records")
        assert_bits_equal(self, got["policy"], recs["probabilities"], "policy")
        self.assertEqual(len(frames), k)
        self.check_frames(frames, n, bs)
        last = self.check_progress(frames, self.path("data"), records_known=True)
        self.assertEqual(last.records, last.records_total)

    def test_progress_counts_what_reached_the_batches(self):
        """A finite run's progress is what the batches read so far hold,
        not what lcmon has read ahead into its queues (issue 34: 63-99% at
        the halfway batch). Every file here is one .gz chunk, read in
        order, every record becomes one row in order: after batch k the
        chunks (and files) counted are exactly those with a row in batches
        0..k, worked out here from each chunk's record count."""
        folders = ["lc0-v0.31.2-fmt1", "lc0-v0.31.2-fmt2", "lc0-v0.31.2-fmt3"]
        bs = 64
        recs, got, frames = self.run_sequential(folders, False, bs, "current")
        sizes = [len(chunk_records(chunk, path))
                 for path in sources_in_order(self.path("data"))
                 for chunk in chunks_of(path)]
        self.assertEqual(sum(sizes), len(recs))
        first_row = np.cumsum([0] + sizes[:-1])  # each chunk's first row
        self.assertGreater(len(frames), 4)
        rows_so_far = 0
        for seq, rows, last, progress in frames:
            rows_so_far += rows
            started = int(np.searchsorted(first_row, rows_so_far, side="left"))
            self.assertEqual(progress.records, started, "batch %d" % seq)
            self.assertEqual(progress.files_done, started, "batch %d" % seq)
        half = frames[len(frames) // 2][3]
        self.assertLess(half.fraction, 0.75, "the halfway batch: %s" % (half,))
        self.assertEqual(frames[-1][3].fraction, 1.0)

    def test_ranks_split_a_sequential_run(self):
        """Under WORLD_SIZE=2 each rank's sequential run reads its own share
        of the chunks (as the pool shards them): the two are disjoint, cover
        every record once, and each keeps file order."""
        data = self.copy_data(["lc0-v0.31.2-fmt1", "lc0-v0.31.2-fmt3"], True)
        recs = read_records(data)
        order = {r.tobytes(): i for i, r in enumerate(recs["probabilities"])}
        self.assertEqual(len(order), len(recs), "sample policies are distinct")
        seen = []
        for rank in (0, 1):
            out = self.path("rank%d.bin" % rank)
            cfg = self.write_config(sequential_yaml(data, out, "batch_size: 64, layout: current",
                                                    writer=", regular_file: true"))
            self.start(cfg, env=dict(os.environ, RANK=str(rank), WORLD_SIZE="2"))
            self.wait_exit()
            self.assertIn("serving share %d of 2" % rank, self.lcmon_log())
            self.log.close()
            self.log = None
            self.proc = None
            with BatchReader(out) as r:
                rows = []
                for b in r.batches():
                    rows += [order[row.tobytes()] for row in b.tensors["policy"]]
                # Each rank reads every file (a share of its chunks), so
                # the files count; the chunks' total is not known.
                self.assertEqual(r.progress.files_done, r.progress.files_total)
                self.assertEqual(r.progress.records_total, 0)
            self.assertGreater(len(rows), len(recs) // 4, "rank %d: a fair share" % rank)
            self.assertEqual(rows, sorted(rows), "rank %d: file order" % rank)
            seen.append(rows)
        self.assertEqual(set(seen[0]) & set(seen[1]), set())
        self.assertEqual(sorted(seen[0] + seen[1]), list(range(len(recs))))

    def test_legacy_layout(self):
        bs = 64
        recs, got, frames = self.run_sequential(
            ["lc0-909a408-fmt1", "lc0-v0.31.2-fmt5"], False, bs, "legacy"
        )
        n = len(recs)
        self.assertEqual(sorted(set(recs["input_format"].tolist())), [1, 5])
        self.assertEqual(len(got["planes"]), n, "rows vs records")
        self.check_frames(frames, n, bs)
        want = expected_legacy(recs)
        for name in ("planes", "probs", "winner", "best_q", "plies_left"):
            assert_bits_equal(self, got[name], want[name], name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
