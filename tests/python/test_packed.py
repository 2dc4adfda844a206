"""Packed batches: the real lcmon binary writes the same positions dense and
packed (tensor_generator `packed: true`), and every way the trainer's side
expands the packed ones gives the dense tensors bit for bit.

- Sequential runs over every record version (V3, V4, V5 and V7 made here from
  the V6 sample games by the layouts of docs/lc0-training-data.md, and the
  V6 samples of input formats 1, 2, 3 and 5), both tensor layouts, short-term
  targets kept and computed: lcmon.expand (numpy), BatchReader(expand=True)
  and lcmon.torch.BatchDataset(device="cpu") against the dense run; every
  packed batch also against test_expand's reference expansion.
- policy_slots smaller than many positions' legal moves: batches widen (a
  header between batches), nothing is cut, and the next batch narrows.
- The bytes a position on the stream: at most 1.5 KB packed.
- A pipe whose loader restarts with the other layout (dense, then packed,
  then dense): the reader follows, and every row expands to a real record.
- A stream of version 2 is still read; an unknown expansion stops the reader
  with StreamVersionError.

Environment: as test_end_to_end (LCMON, LCMON_TEST_DATA, PYTHONPATH).
"""

import gzip
import os
import shutil
import signal
import struct
import time
import unittest

import numpy as np

import lcmon
from lcmon import BatchReader, StreamVersionError
from test_expand import check_against_reference
from test_end_to_end import DATA as _DATA, TIMEOUT, V6_SIZE, LcmonCase, read_records, \
    sequential_yaml

DATA = os.path.abspath(_DATA)

try:
    import torch

    from lcmon.torch import BatchDataset
except ImportError:  # torch is optional for the package
    torch = None

SIZES = {3: 8276, 4: 8292, 5: 8308, 6: 8356, 7: 8396}
FORMATS = ["lc0-909a408-fmt1", "lc0-v0.31.2-fmt1", "lc0-v0.31.2-fmt2", "lc0-v0.31.2-fmt3",
           "lc0-v0.31.2-fmt5"]


def convert(rec: bytes, version: int, k: int) -> bytes:
    """A V6 record as a record of `version`, by the doc's layouts."""
    result = struct.pack("<b", (k % 3) - 1)  # the int8 game result of V3-V5
    if version == 7:
        extra = struct.pack("<fHH", 0.125 + (k % 7) / 64.0, k % 1858, (k * 7) % 1858)
        return struct.pack("<I", 7) + rec[4:] + extra + bytes(40 - len(extra))
    if version == 5:
        return struct.pack("<I", 5) + rec[4:8279] + result + rec[8280:8308]
    # V4: no input_format; move_count where invariance_info was, then the result.
    body = struct.pack("<I", version) + rec[8:8278] + rec[8278:8279] + result
    if version == 4:
        body += rec[8280:8296]
    assert len(body) == SIZES[version], (version, len(body))
    return body


def make_versions(root):
    """Folders v3, v4, v5, v7 of games made from the V6 samples (format 1
    for V3 and V4, which have no input_format; formats 3 and 5 for V5 and
    V7), 4 games each."""
    plan = {3: "lc0-v0.31.2-fmt1", 4: "lc0-909a408-fmt1", 5: "lc0-v0.31.2-fmt3",
            7: "lc0-v0.31.2-fmt5"}
    for version, folder in plan.items():
        out = os.path.join(root, "v%d" % version)
        os.makedirs(out)
        names = sorted(n for n in os.listdir(os.path.join(DATA, folder)) if n.endswith(".gz"))
        for g, name in enumerate(names[:4]):
            with gzip.open(os.path.join(DATA, folder, name), "rb") as f:
                raw = f.read()
            recs = [raw[i : i + V6_SIZE] for i in range(0, len(raw), V6_SIZE)]
            data = b"".join(convert(r, version, k) for k, r in enumerate(recs))
            with gzip.open(os.path.join(out, "game_%d.gz" % g), "wb") as f:
                f.write(data)


def concat(batches):
    """{name: the batches' rows concatenated} (copies)."""
    out = {}
    for t in batches:
        for n, a in t.items():
            out.setdefault(n, []).append(np.array(a, copy=True))
    return {n: np.concatenate(p) for n, p in out.items()}


def assert_same_bits(test, got, want, what):
    test.assertEqual(sorted(got), sorted(want), what)
    for n in want:
        g, w = np.ascontiguousarray(got[n]), np.ascontiguousarray(want[n])
        test.assertEqual((g.dtype, g.shape), (w.dtype, w.shape), "%s: %s" % (what, n))
        if g.tobytes() != w.tobytes():
            bad = np.flatnonzero(g.view(np.uint8) != w.view(np.uint8))
            test.fail("%s: %s differs in %d bytes, first at byte %d"
                      % (what, n, len(bad), int(bad[0])))


class Packed(LcmonCase):
    @classmethod
    def setUpClass(cls):
        import tempfile

        cls.data = tempfile.mkdtemp(prefix="lcmon-packed-data-")
        for folder in FORMATS:
            shutil.copytree(os.path.join(DATA, folder), os.path.join(cls.data, folder))
        make_versions(cls.data)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.data, ignore_errors=True)

    def run_to_file(self, name, layout, packed, st="keep", slots=None, bs=64):
        """A sequential run over the data into a stream file; its path."""
        out = self.path(name)
        extra = ", packed: true" if packed else ""
        if slots is not None:
            extra += ", policy_slots: %d" % slots
        cfg = self.write_config(sequential_yaml(
            self.data, out, "batch_size: %d, layout: %s%s" % (bs, layout, extra),
            ", st_targets: %s" % st, ", regular_file: true"))
        self.start(cfg)
        self.wait_exit(timeout=4 * TIMEOUT)
        self.log.close()
        self.log = None
        self.proc = None
        return out

    def read_all(self, path, **kw):
        with BatchReader(path, copy=True, **kw) as r:
            batches = list(r.batches())
            self.assertTrue(r.done)
            return r, batches

    def check_layouts(self, layout, st, slots=None, bs=64):
        dense_path = self.run_to_file("dense.bin", layout, False, st, bs=bs)
        packed_path = self.run_to_file("packed.bin", layout, True, st, slots, bs=bs)
        _, dense_b = self.read_all(dense_path)
        dense = concat(b.tensors for b in dense_b)
        what = "%s, st_targets %s%s" % (layout, st, ", slots %s" % slots if slots else "")
        # The records really are of every version.
        self.assertGreater(len(next(iter(dense.values()))), 1000)

        r, packed_b = self.read_all(packed_path)
        self.assertEqual(r.header.expand, "lc0-packed-1")
        self.assertEqual(r.header.layout, "lc0-%s-packed" % layout)
        for b in packed_b:
            self.assertEqual(b.expand, "lc0-packed-1")
        assert_same_bits(self, concat(lcmon.expand(b) for b in packed_b), dense,
                         what + ": lcmon.expand")
        # And against test_expand's reference (numpy, a reusing Expander,
        # torch on the CPU; the C kernel and numpy): the batches of each
        # policy width together (rows expand alone; the reference's cost is
        # by the call).
        widths = {}
        for b in packed_b:
            k = next(a.shape[1] for n, a in b.tensors.items() if n.endswith("_idx"))
            widths.setdefault(k, []).append(b.tensors)
        for k, group in sorted(widths.items()):
            check_against_reference(self, concat(group), "lc0-packed-1",
                                    "%s: %d batches of %d slots" % (what, len(group), k))
        r, expanded_b = self.read_all(packed_path, expand=True)
        assert_same_bits(self, concat(b.tensors for b in expanded_b), dense,
                         what + ": BatchReader(expand=True)")
        self.assertEqual([b.rows for b in expanded_b], [b.rows for b in dense_b])
        if torch is not None:
            got = concat({n: t.numpy() for n, t in item.items()}
                         for item in BatchDataset(packed_path, device="cpu", restarts="end"))
            assert_same_bits(self, got, dense, what + ": lcmon.torch on the CPU")
            # copy=True: each payload copied whole and the next one read
            # ahead (the path a GPU takes); items kept past the next one.
            items = list(BatchDataset(packed_path, device="cpu", copy=True, restarts="end"))
            got = concat({n: t.numpy() for n, t in item.items()} for item in items)
            assert_same_bits(self, got, dense, what + ": lcmon.torch, copies read ahead")
            got = concat({n: t.numpy() for n, t in item.items()}
                         for item in BatchDataset(dense_path, device="cpu", restarts="end"))
            assert_same_bits(self, got, dense, what + ": lcmon.torch, dense")
        return packed_path, packed_b

    def test_versions_and_formats_current(self):
        for st in ("keep", "compute"):
            self.check_layouts("current", st)

    def test_versions_and_formats_legacy(self):
        for st in ("keep", "compute"):
            self.check_layouts("legacy", st)

    def test_bytes_a_position(self):
        path = self.run_to_file("packed.bin", "legacy", True, bs=1024)
        with BatchReader(path) as r:
            per_row = r.header.payload_bytes / r.header.batch_size
            list(r.batches())
        print("packed legacy layout: %.0f bytes a position" % per_row)
        self.assertLessEqual(per_row, 1536)
        path = self.run_to_file("packed.bin", "current", True, bs=1024)
        with BatchReader(path) as r:
            per_row = r.header.payload_bytes / r.header.batch_size
        print("packed current layout: %.0f bytes a position" % per_row)
        self.assertLessEqual(per_row, 1536)

    def test_widened_batches(self):
        """policy_slots 32, 4 positions a batch: many positions have more
        legal moves; their batches widen to 128 slots, with a header before
        each change, and expand to the dense rows all the same."""
        path, batches = self.check_layouts("current", "keep", slots=32, bs=4)
        with BatchReader(path) as r:
            slots = []
            for b in r.batches():
                slots.append(b.tensors["policy_idx"].shape[1])
                self.assertEqual(r.header.tensors[2].shape[1], slots[-1])
            headers = r.headers_read
        self.assertEqual(set(slots), {32, 128})
        changes = sum(1 for a, b in zip(slots, slots[1:]) if a != b)
        self.assertGreater(changes, 0)
        self.assertEqual(headers, 1 + changes)


class LayoutSwitch(LcmonCase):
    def config(self, pipe, packed):
        return """\
seed: 3
stages:
  - name: files
    file_path_provider: {directory: '%s/lc0-v0.31.2-fmt2'}
  - name: sources
    input: files
    chunk_source_loader: {threads: 1}
  - name: pool
    input: sources
    shuffling_chunk_pool: {chunk_pool_size: 100}
  - name: unpacker
    input: pool
    chunk_unpacker: {sampling_rate: 1.0}
  - name: sampler
    input: unpacker
    shuffling_frame_sampler: {reservoir_size: 64}
  - name: tensors
    input: sampler
    tensor_generator: {batch_size: 16, layout: legacy, packed: %s}
  - name: writer
    input: tensors
    fifo_writer: {path: '%s'}
""" % (DATA, "true" if packed else "false", pipe)

    def test_restart_with_the_other_layout(self):
        recs = read_records(os.path.join(DATA, "lc0-v0.31.2-fmt2"))
        known = {r.tobytes() for r in recs["probabilities"]}
        pipe = self.path("lcmon.pipe")
        runs = []
        reader = None
        try:
            for packed in (False, True, False):
                self.start(self.write_config(self.config(pipe, packed)))
                if reader is None:
                    end = time.monotonic() + TIMEOUT
                    while not os.path.exists(pipe) and time.monotonic() < end:
                        self.assertIsNone(self.proc.poll(), self.lcmon_log())
                        time.sleep(0.02)
                    reader = BatchReader(pipe, timeout=TIMEOUT, expand=True)
                # Batches of the run before may still be in the pipe: read
                # on until 5 of this run have come.
                seen = 0
                earlier = {i for i, _ in runs}
                while seen < 5:
                    b = reader.read_batch()
                    self.assertIsNotNone(b)
                    self.assertEqual(b.tensors["probs"].shape, (16, 1858))
                    self.assertEqual(b.tensors["planes"].dtype, np.float32)
                    self.assertEqual(b.tensors["planes"].shape, (16, 112, 8, 8))
                    for row in b.tensors["probs"]:
                        self.assertIn(row.tobytes(), known, "a row that is no record's policy")
                    if b.run_id not in earlier:
                        seen += 1
                runs.append((reader.run_id, reader.header.expand))
                self.proc.send_signal(signal.SIGINT)
                self.wait_exit()
                self.log.close()
                self.log = None
                self.proc = None
        finally:
            if reader is not None:
                reader.close()
                self.reader = None
        self.assertEqual([e for _, e in runs], ["", "lc0-packed-1", ""])
        self.assertEqual(len({i for i, _ in runs}), 3, "three runs")


def frame_bytes(version):
    return 96 if version >= 5 else 72 if version == 4 else 32


def rewrite_headers(data, fn):
    """The stream with every header's bytes after the 16-byte prefix
    replaced by fn(version, rest, header) -> (version, rest)."""
    out, p = bytearray(), 0
    src_version = new_version = 0
    while p < len(data):
        if data[p : p + 8] == b"LCMONBS\0":
            _, src_version, n = struct.unpack_from("<8sII", data, p)
            rest = bytes(data[p + 16 : p + 16 + n])
            h = lcmon.parse_header(bytes(data[p : p + 16]), rest)
            new_version, rest = fn(src_version, rest, h)
            out += struct.pack("<8sII", b"LCMONBS\0", new_version, len(rest)) + rest
            p += 16 + n
        elif data[p : p + 4] == b"BTCH":
            # Frames of 96 bytes from version 5 on (the freshness), 72 in
            # version 4 (the progress), 32 before; a newer one's first bytes.
            (payload,) = struct.unpack_from("<Q", data, p + 24)
            frame = frame_bytes(src_version)
            out += data[p : p + frame_bytes(new_version)]
            out += data[p + frame : p + frame + payload]
            p += frame + payload
        else:
            assert data[p : p + 4] == b"DONE", data[p : p + 4]
            out += data[p : p + 16]
            p += 16
    return bytes(out)


class Versions(LcmonCase):
    def stream(self):
        out = self.path("s.bin")
        cfg = self.write_config(sequential_yaml(
            os.path.join(DATA, "lc0-v0.31.2-fmt1"), out, "batch_size: 32, layout: current",
            writer=", regular_file: true"))
        self.start(cfg)
        self.wait_exit()
        with open(out, "rb") as f:
            return f.read()

    def test_version_2_still_read(self):
        data = self.stream()
        self.assertEqual(struct.unpack_from("<I", data, 8)[0], lcmon.VERSION)
        # The header names the run's seed (drawn: the config pins none), as the log does.
        seed = lcmon.parse_header(data[:16], data[16:16 + struct.unpack_from("<I", data, 12)[0]]).seed
        self.assertIn("seed %d (drawn for this run" % seed, self.lcmon_log())
        layouts = []

        def to_v2(version, rest, h):
            # Version 2: the same header without the layout's two names and
            # the seed (and batch frames without the progress).
            layouts.append(h.layout)
            self.assertEqual(rest[-12 - len(h.layout) :],
                             struct.pack("<H", len(h.layout)) + h.layout.encode() + b"\0\0"
                             + struct.pack("<Q", h.seed))
            return 2, rest[: -(12 + len(h.layout))]

        path = self.path("v2.bin")
        with open(path, "wb") as f:
            f.write(rewrite_headers(data, to_v2))
        self.assertIn("lc0-current", layouts)
        with BatchReader(path) as r:
            old_batches = [b.tensors["policy"].copy() for b in r.batches()]
            self.assertEqual((r.header.version, r.header.layout, r.header.expand), (2, "", ""))
        with BatchReader(self.path("s.bin")) as r:
            new_batches = [b.tensors["policy"].copy() for b in r.batches()]
        self.assertGreater(len(new_batches), 2)
        self.assertEqual(len(old_batches), len(new_batches))
        for a, b in zip(old_batches, new_batches):
            self.assertEqual(a.tobytes(), b.tobytes())

    def test_version_4_still_read(self):
        """Version 5's frames tell how fresh each batch is (Batch.freshness);
        the same stream as version 4 (frames without it) and 3 (without the
        progress either) reads the same tensors, its freshness not known."""
        data = self.stream()
        with BatchReader(self.path("s.bin")) as r:
            new = [(b.tensors["inputs"].copy(), b.progress, b.freshness) for b in r.batches()]
            self.assertEqual(r.freshness, new[-1][2])
        self.assertGreater(len(new), 2)
        seqs = [f.newest_seq for _, _, f in new]
        # A sequential run: chunk_reader numbers the games as it reads them,
        # in file order, so the newest game of each batch only grows; every
        # row's origin is known and none was drawn fresh.
        self.assertTrue(all(f.known for _, _, f in new), new[0][2])
        self.assertEqual(seqs, sorted(seqs))
        self.assertGreater(seqs[-1], seqs[0])
        for _, _, f in new:
            self.assertLessEqual(f.age_min_ms, f.age_median_ms)
            self.assertLessEqual(f.age_median_ms, f.age_max_ms)
            self.assertLess(f.age_max_ms, 600000)  # a run of seconds: no wrapped stamp
            self.assertEqual(f.fresh_rows, 0)
        for version in (4, 3):
            path = self.path("v%d.bin" % version)
            with open(path, "wb") as f:
                f.write(rewrite_headers(data, lambda v, rest, h: (version, rest)))
            with BatchReader(path) as r:
                old = [(b.tensors["inputs"].copy(), b.progress, b.freshness) for b in r.batches()]
                self.assertEqual(r.header.version, version)
            self.assertEqual(len(old), len(new))
            for (a, pa, fa), (b, pb, fb) in zip(old, new):
                self.assertEqual(a.tobytes(), b.tobytes())
                self.assertEqual(pa, pb if version >= 4 else lcmon.Progress())
                self.assertFalse(fa.known)
                self.assertEqual(fa, lcmon.Freshness())

    def test_unknown_expansion_stops(self):
        data = self.stream()

        def unknown(version, rest, h):
            # An expansion no reader knows, in place of none.
            name = b"lc0-packed-9"
            return version, rest[:-10] + struct.pack("<H", len(name)) + name + rest[-8:]

        path = self.path("bad.bin")
        with open(path, "wb") as f:
            f.write(rewrite_headers(data, unknown))
        with self.assertRaisesRegex(StreamVersionError, "lc0-packed-9"):
            with BatchReader(path) as r:
                list(r.batches())


if __name__ == "__main__":
    unittest.main(verbosity=2)
