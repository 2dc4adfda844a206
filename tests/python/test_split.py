"""A training and a test stream end to end: the real lcmon binary splits
the sample games with chunk_source_splitter into two sequential chains,
each writing to its own named pipe, and two readers read them at once.

Which side each game goes to is computed here independently (FNV-1a of the
file's path relative to the data folder, splitmix64, the weights' boundaries, as docs/pipelines.md
states it); each reader must get exactly its side's records, in order, bit
for bit, and the two sides together every record once. The run is then
repeated with the chains' order swapped in the file and another seed: the
same games land on the same sides.

Environment as tests/python/test_end_to_end.py (whose helpers it uses).
"""

import os
import threading
import unittest

import numpy as np

from lcmon import BatchReader
from test_end_to_end import (
    DATA, TIMEOUT, V6ST, LcmonCase, chunk_records, assert_bits_equal, chunks_of, expected_current,
    sources_in_order,
)

M64 = (1 << 64) - 1
SPLIT_TAG = 0x73706C74  # "splt"


def mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


def side_of(key, member, weights):
    """The output (index) chunk `member` of the file named key goes to."""
    h = mix64(mix64(fnv1a(os.fsencode(key)) ^ SPLIT_TAG) ^ mix64(member))
    u = (h >> 11) * 2.0 ** -53
    total, acc = sum(weights), 0.0
    for k, w in enumerate(weights[:-1]):
        acc += w
        if u < acc / total:
            return k
    return len(weights) - 1


def expected_sides(root, weights):
    """Each side's records in the order its sequential chain emits them."""
    parts = [[] for _ in weights]
    for path in sources_in_order(root):
        key = os.path.relpath(path, root)  # the path relative to the data folder
        for member, chunk in enumerate(chunks_of(path)):
            parts[side_of(key, member, weights)].append(chunk_records(chunk, path))
    return [np.concatenate(p) if p else np.zeros(0, dtype=V6ST) for p in parts]


CHAIN = """\
  - name: {side}_chunks
    input: split.{side}
    chunk_reader: {{}}
  - name: {side}_unpacker
    input: {side}_chunks
    chunk_unpacker: {{sampling_rate: 1.0, shuffle: false}}
    output: {{capacity: 1024}}
  - name: {side}_tensors
    input: {side}_unpacker
    tensor_generator: {{batch_size: 64, layout: current, threads: 1}}
  - name: {side}_writer
    input: {side}_tensors
    fifo_writer: {{path: '{pipe}'}}
"""


class TrainTestSplit(LcmonCase):
    WEIGHTS = (0.7, 0.3)

    def config(self, data, pipes, seed, test_first):
        text = """\
seed: %d
stages:
  - name: files
    file_path_provider: {directory: '%s', watch: false}
  - name: sources
    input: files
    chunk_source_loader: {threads: 1}
  - name: split
    input: sources
    chunk_source_splitter:
      outputs: [{name: train, weight: %r}, {name: test, weight: %r}]
""" % (seed, data, self.WEIGHTS[0], self.WEIGHTS[1])
        chains = [CHAIN.format(side=s, pipe=pipes[s]) for s in ("train", "test")]
        if test_first:
            chains.reverse()
        return text + "".join(chains)

    def run_split(self, data, seed, test_first):
        pipes = {s: self.path("%s-%d.pipe" % (s, seed)) for s in ("train", "test")}
        self.start(self.write_config(self.config(data, pipes, seed, test_first)))
        got, errors = {}, []

        def read(side):
            try:
                rows = []
                with BatchReader(pipes[side], timeout=TIMEOUT) as r:
                    while True:
                        b = r.read_batch()
                        if b is None:
                            break
                        rows.append({k: np.array(v, copy=True) for k, v in b.tensors.items()})
                    if not r.done:
                        errors.append("%s: the stream ended without DONE" % side)
                got[side] = {k: np.concatenate([x[k] for x in rows]) if rows else None
                             for k in ("inputs", "policy", "values")}
            except Exception as e:  # reported below, with lcmon's log
                errors.append("%s: %r" % (side, e))

        for s in ("train", "test"):
            self.wait_for(pipes[s])
        threads = [threading.Thread(target=read, args=(s,)) for s in ("train", "test")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT * 6)
        self.assertFalse(errors, "%s\n%s" % (errors, self.lcmon_log()))
        self.wait_exit()
        self.log.close()
        self.log = None
        return got

    def wait_for(self, pipe):
        import time
        end = time.monotonic() + TIMEOUT
        while not os.path.exists(pipe):
            if self.proc.poll() is not None or time.monotonic() > end:
                self.fail("no pipe %s:\n%s" % (pipe, self.lcmon_log()))
            time.sleep(0.02)

    def test_each_side_gets_its_games(self):
        data = DATA
        want = expected_sides(data, self.WEIGHTS)
        n_all = sum(len(w) for w in want)
        self.assertTrue(len(want[0]) and len(want[1]), "the sample data must reach both sides")
        print("records: train %d, test %d of %d" % (len(want[0]), len(want[1]), n_all))
        first = self.run_split(data, seed=1, test_first=False)
        for k, side in enumerate(("train", "test")):
            self.assertEqual(len(first[side]["policy"]), len(want[k]), side)
            assert_bits_equal(self, first[side]["policy"], want[k]["probabilities"],
                              side + " policy")
            exp = expected_current(want[k])
            for name in ("inputs", "values"):
                assert_bits_equal(self, first[side][name], exp[name], side + " " + name)
        # Another seed, the chains in the other order: the same split.
        second = self.run_split(data, seed=99, test_first=True)
        for side in ("train", "test"):
            assert_bits_equal(self, second[side]["policy"], first[side]["policy"],
                              side + " again")


if __name__ == "__main__":
    unittest.main(verbosity=2)
