"""The data folder, second pass (issue 35): a data-folder symlink re-pointed
at another run's folder; a huge sparse file named .gz; a subfolder that
appears mid-run with a link back to the data folder (and the data folder
moved away afterwards); a game truncated and written again with the same
bytes while the chunk store is off. Each time lcmon goes on reading, counts
every game once in the window and the anchor, and says what it did once.

Environment: LCMON, LC_TEST_DATA, LCMON_SOURCE_ROOT, LCMON_TEST_SLOW, PYTHONPATH
(python/).
"""

import os
import shutil
import subprocess
import tempfile
import time
import unittest

from test_folder import GAMES, Run, Trickle, copy_games
from test_hostile import wait_for
from test_monitor import LCMON, SLOW

# A sparse file costs no disk: this is the size lcmon must not read through.
HUGE = 1 << 40


def repoint(link, target):
    """`ln -sfn target link`: a new link renamed over the old one."""
    tmp = link + ".new"
    os.symlink(target, tmp)
    os.replace(tmp, link)


def huge_file(path, gzip_header):
    """A sparse file of HUGE bytes: zeros, or zeros after a gzip header."""
    with open(path, "wb") as f:
        if gzip_header:
            f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03")
        f.truncate(HUGE)
    os.utime(path, (time.time() - 3600, time.time() - 3600))


class WatchTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lcmon-watch-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def start(self, data, **kw):
        run = Run(self.tmp, data, **kw)
        self.addCleanup(lambda: run.proc.poll() is None and run.stop())
        Trickle(run.pipe, pause=0, size=1 << 16).start()  # the pool keeps drawing
        return run

    def window(self, run):
        return run.gauge("chunks_in_window")

    def test_repointed_symlink(self):
        """data -> runA, then `ln -sfn runB data`: lcmon says so once and
        reads runB; runB's hard links to runA's games (the same files at the
        same names) are not read or counted again; the games read from runA
        stay in the window, still read from runA with the store off (two of
        them have no file in runB); a game written to runB later is
        found."""
        run_a, run_b = os.path.join(self.tmp, "runA"), os.path.join(self.tmp, "runB")
        os.makedirs(run_a)
        os.makedirs(run_b)
        copy_games(run_a, GAMES[:4])
        for name in sorted(os.listdir(run_a))[:2]:
            os.link(os.path.join(run_a, name), os.path.join(run_b, name))
        copy_games(run_b, GAMES[4:6])
        data = os.path.join(self.tmp, "data")
        os.symlink("runA", data)
        run = self.start(data, pool=", store_bytes: 0")
        wait_for("the window of runA", lambda: self.window(run) == 4, 30)
        self.assertEqual(run.anchor_count(), 4)
        repoint(data, "runB")
        wait_for("the re-pointed link said",
                 lambda: "now leads to another folder" in run.log(), 10)
        wait_for("runB's two new games", lambda: run.anchor_count() == 6, 30)
        wait_for("the window of both", lambda: self.window(run) == 6, 30)
        copy_games(data, GAMES[6:7], old=False)
        wait_for("a game written to runB", lambda: run.anchor_count() == 7, 30)
        # Every chunk read again and again since: runA's games still read.
        drawn = run.count("chunks_emitted", "pool")
        wait_for("more draws", lambda: run.count("chunks_emitted", "pool") > drawn + 50, 30)
        self.assertEqual(self.window(run), 7)
        self.assertEqual(run.anchor_count(), 7)
        self.assertEqual(run.count("bad_unreadable_chunks", "pool"), 0, run.log()[-3000:])
        self.assertEqual(run.stop(), 0, run.log()[-2000:])
        log = run.log()
        self.assertEqual(log.count("now leads to another folder"), 1, log[-3000:])
        self.assertIn("2 files of %s are those of the folder before" % data, log)

    def test_huge_sparse_gz(self):
        """Files of a terabyte named .gz (zeros, and a gzip header before
        zeros) are refused from their first bytes and their size, each said
        once; the games after them are read at once; a stop is prompt; and
        `lcmon chunks dump` of one answers at once."""
        data = os.path.join(self.tmp, "data")
        os.makedirs(data)
        huge_file(os.path.join(data, "a_zeros.gz"), False)
        huge_file(os.path.join(data, "a_header.gz"), True)
        copy_games(data, GAMES[:3])
        run = self.start(data)
        wait_for("the 3 games after the huge files", lambda: self.window(run) == 3, 20)
        # One more, after a third huge file written while lcmon runs.
        huge_file(os.path.join(data, "b_header.gz"), True)
        copy_games(data, GAMES[3:4], old=False)
        wait_for("the game after the third", lambda: self.window(run) == 4, 20)
        t0 = time.monotonic()
        rc = run.stop()
        self.assertLess(time.monotonic() - t0, 5 * SLOW)
        self.assertEqual(rc, 0, run.log()[-2000:])
        log = run.log()
        self.assertEqual(log.count("a_zeros.gz: not a gzip file"), 1, log[-3000:])
        for name in ("a_header.gz", "b_header.gz"):
            self.assertEqual(log.count("%s: %d compressed bytes is more than" % (name, HUGE)), 1,
                             log[-3000:])
        t0 = time.monotonic()
        r = subprocess.run([LCMON, "chunks", "dump", os.path.join(data, "a_header.gz")],
                           capture_output=True, text=True, timeout=60 * SLOW)
        self.assertLess(time.monotonic() - t0, 5 * SLOW)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("a_header.gz: %d compressed bytes is more than" % HUGE, r.stderr)

    def test_subfolder_linking_back(self):
        """A subfolder moved in mid-run holding a game and a link back to the
        data folder: its game is read, the data folder is not read again
        through the link (window and anchor 5, not 9), the link is said
        once; then the data folder moved away is still noticed."""
        data = os.path.join(self.tmp, "data")
        os.makedirs(data)
        copy_games(data, GAMES[:4])
        run = self.start(data)
        wait_for("the first window", lambda: self.window(run) == 4, 30)
        sub = os.path.join(self.tmp, "sub")
        os.makedirs(sub)
        copy_games(sub, GAMES[4:5])
        os.symlink(data, os.path.join(sub, "back"))
        os.rename(sub, os.path.join(data, "sub"))
        wait_for("the subfolder's game", lambda: self.window(run) >= 5, 30)
        wait_for("every file found loaded",
                 lambda: run.count("sources", "sources") == run.count("files"), 30)
        self.assertEqual(run.count("files"), 5, run.log()[-3000:])
        self.assertEqual(self.window(run), 5)
        self.assertEqual(run.anchor_count(), 5)
        os.rename(data, data + ".moved")
        wait_for("the data folder's move said",
                 lambda: "was deleted or moved away" in run.log(), 10)
        self.assertEqual(run.stop(), 0, run.log()[-2000:])
        log = run.log()
        self.assertEqual(log.count("back: leads to %s, a directory already" % data), 1,
                         log[-3000:])

    def test_truncated_and_rewritten_store_off(self):
        """With the chunk store off, a game truncated (and drawn while
        empty: dropped) then written again with the same bytes is back in
        the window, and the anchor's count is what it was."""
        data = os.path.join(self.tmp, "data")
        os.makedirs(data)
        copy_games(data, GAMES[:4])
        run = self.start(data, pool=", store_bytes: 0")
        wait_for("the first window", lambda: self.window(run) == 4, 30)
        self.assertEqual(run.anchor_count(), 4)
        game = os.path.join(data, sorted(os.listdir(data))[1])
        with open(game, "rb") as f:
            same = f.read()
        open(game, "wb").close()
        wait_for("the empty game drawn and dropped",
                 lambda: run.count("bad_unreadable_chunks", "pool") == 1, 30)
        self.assertEqual(self.window(run), 3)
        with open(game, "wb") as f:
            f.write(same)
        wait_for("the game back in the window", lambda: self.window(run) == 4, 30)
        self.assertEqual(run.anchor_count(), 4)
        self.assertEqual(run.stop(), 0, run.log()[-2000:])
        self.assertEqual(run.log().count("written again with the same games after"), 1,
                         run.log()[-3000:])


if __name__ == "__main__":
    unittest.main(verbosity=2)
