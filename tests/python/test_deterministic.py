"""Deterministic mode (issue 34): with a pinned seed and `deterministic: true`
(or --deterministic), the stream is the same bit for bit on every run and at
any thread count.

- The shuffled chain of config/default.yaml, small, with two threads in
  every stage that has workers (loader, pool, validator, unpacker, sampler,
  tensors): the payloads of the first 60 batches (3,840 positions, well past
  the reservoir's 1,000) are the same on two runs, one set by the config and
  one by --deterministic, and the same again with one and with three threads
  a stage.
- A finite chain (chunk_reader, as config/sequential.yaml, with sampling and
  a reservoir) with two threads a stage: the whole stream, to its last
  batch, the same as with one thread, its last batch marked last.

Without the mode two such runs differ (the threads hand on in the order they
finish); that is not asserted here, since a run may by chance keep order.

Environment: LCMON, LC_TEST_DATA, LCMON_TEST_SLOW, PYTHONPATH (python/).
"""

import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

from lcmon import BatchReader
from test_hostile import wait_for
from test_monitor import DATA, LCMON, SLOW

# The chains' common parts; {threads}, {data}, {pipe}, {extra}.
HEAD = """\
{extra}
stages:
  - name: files
    file_path_provider: {{directory: '{data}', watch: false}}
  - name: sources
    input: files
    chunk_source_loader: {{threads: {threads}}}
"""
# From the unpacker on: {source} (its input), {reservoir}, {batch}.
TAIL = """\
  - name: unpacker
    input: {source}
    chunk_unpacker: {{{{sampling_rate: 0.5, threads: {{threads}}}}}}
  - name: sampler
    input: unpacker
    shuffling_frame_sampler: {{{{reservoir_size: {reservoir}, threads: {{threads}}}}}}
  - name: tensors
    input: sampler
    tensor_generator: {{{{batch_size: {batch}, threads: {{threads}}}}}}
  - name: writer
    input: tensors
    fifo_writer: {{{{path: '{{pipe}}'}}}}
"""

SHUFFLED = "seed: 7\n" + HEAD + """\
  - name: pool
    input: sources
    shuffling_chunk_pool: {{chunk_pool_size: 1000, threads: {threads}}}
  - name: validator
    input: pool
    chunk_validator: {{threads: {threads}}}
""" + TAIL.format(source="validator", reservoir=1000, batch="64, packed: true")

FINITE = "seed: 11\n" + HEAD + """\
  - name: chunks
    input: sources
    chunk_reader: {{}}
""" + TAIL.format(source="chunks", reservoir=500, batch=100)


class Deterministic(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lcmon-determ-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.runs = 0

    def stream(self, template, threads, extra="deterministic: true", args=(), n=None):
        """Run lcmon on the template; the payload of each batch (a hash of its
        tensors' bytes, in the header's order), the first n or all of a finite run,
        with the last batch's flag and whether the stream was complete."""
        self.runs += 1
        name = "run%d" % self.runs
        pipe = os.path.join(self.tmp, name + ".pipe")
        config = os.path.join(self.tmp, name + ".yaml")
        with open(config, "w") as f:
            f.write(template.format(threads=threads, data=DATA, pipe=pipe, extra=extra))
        log_path = os.path.join(self.tmp, name + ".log")
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [LCMON, "--no-ui", "--status-interval", "0", "--config", config, *args],
                stdout=subprocess.DEVNULL, stderr=log)
        try:
            wait_for("the pipe, or lcmon's end",
                     lambda: os.path.exists(pipe) or proc.poll() is not None, 30)
            if proc.poll() is not None and not os.path.exists(pipe):
                with open(log_path) as f:
                    self.fail("lcmon ended at start: " + f.read()[-2000:])
            got = []
            with BatchReader(pipe, timeout=30 * SLOW, wait_for_pipe=30 * SLOW) as r:
                last = False
                for b in r.batches():
                    got.append(hashlib.sha256(b"".join(
                        a.tobytes() for a in b.tensors.values())).hexdigest())
                    last = b.last
                    if n is not None and len(got) == n:
                        break
                done = r.done
        finally:
            if n is not None and proc.poll() is None:  # a finite run ends by itself
                proc.send_signal(signal.SIGINT)
            try:
                rc = proc.wait(timeout=15 * SLOW)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        with open(log_path) as f:
            text = f.read()
        self.assertEqual(rc, 0, text[-2000:])
        seed = re.match(r"seed: (\d+)", template).group(1)
        self.assertIn("seed %s, deterministic" % seed, text)
        return got, last, done, text

    def assertSameStream(self, a, b, what):
        self.assertEqual(len(a), len(b), what + ": not as many batches")
        for i, (x, y) in enumerate(zip(a, b)):
            self.assertEqual(x, y, "%s: batch %d differs" % (what, i))

    def test_shuffled_chain_at_any_thread_count(self):
        n = 60
        first, _, _, log = self.stream(SHUFFLED, 2, n=n)
        self.assertEqual(len(first), n)
        self.assertIn("reservoir full (1000 frames)", log)
        self.assertIn("deterministic: one reservoir of 1000 frames", log)
        again, _, _, _ = self.stream(SHUFFLED, 2, extra="", args=("--deterministic",), n=n)
        self.assertSameStream(first, again, "two threads a stage, run again")
        one, _, _, _ = self.stream(SHUFFLED, 1, n=n)
        self.assertSameStream(first, one, "one thread a stage")
        three, _, _, _ = self.stream(SHUFFLED, 3, n=n)
        self.assertSameStream(first, three, "three threads a stage")

    def test_finite_chain_to_its_end(self):
        two, last2, done2, _ = self.stream(FINITE, 2)
        one, last1, done1, _ = self.stream(FINITE, 1)
        self.assertTrue(done1 and done2, "a finite stream did not end with DONE")
        self.assertTrue(last1 and last2, "the last batch is not marked last")
        self.assertGreater(len(one), 10)
        self.assertSameStream(one, two, "two threads a stage against one")


if __name__ == "__main__":
    unittest.main(verbosity=2)
