"""`lcmon chunks`: dump, stats and check on the real lcmon binary.

- dump of a sample game, as text and as JSON, every field checked against
  the record read here with struct from the gunzipped bytes (the offsets of
  docs/lc0-training-data.md), the board against the planes, the moves'
  names against lc0's policy order; a tar member by number and by name
  gives the records of the game it was made from; V3, V4, V5 and V7 records
  (made from the V6 samples as test_packed makes them) show the fields of
  their version and no other; a raw tar member dumps as its gzip twin.
- stats on a generated folder whose counts are known: versions, input
  formats, results, game lengths, a bad chunk, a bad record, a raw tar
  member and a member skipped with its reason; text histograms and JSON.
- check: one line a file, the bad chunk's member, record and reason, the
  summary, exit status 1 with a bad chunk and 0 without; the JSON parses.
- rescore: with the defaults a real game is written back unchanged beside
  its file (NAME_rescored.gz), a tar member after its name; with
  dist_temp, new_input_format and st_targets every record comes out V7 of
  format 3, and the counts it prints (and --list's lines) are the
  positions whose policy and planes differ here, record against record;
  a config's chunk_rescorer stage by --config and --stage; a game whose
  probabilities sum to 0.5 dropped (exit 1, nothing written, the reason)
  and written as read with invalid_games=keep; its errors (a
  threshold without a width under upstream's rules, an unknown key, --set
  and --config together, a tar without --member, the input as output).
  The stage's own records for the same game and settings are compared
  byte for byte in tests/stages/test_chunk_rescorer.c.
- weights: every position's weight computed here from best_q, orig_q and
  policy_kld (the current loader's formula, as a float): the count, mean,
  quantiles and the heaviest position as printed; a hand-worked case
  (alpha 0, beta 0.25: every position weighs 0.25); a config's unpacker
  (default_weight alone: every position weighs it) and pool (hanse: the
  chunk weights are the sums, acceptance (w / heaviest)^gamma).
- usage: no verb or an unknown one prints the usage (exit 2); a missing
  file or folder names it (exit 1); lcmon --help lists the subcommand.

Environment: LCMON (the executable), LC_TEST_DATA (the sample data).
"""

import gzip
import io
import json
import math
import os
import shutil
import struct
import subprocess
import tarfile
import tempfile
import unittest

from test_packed import SIZES, convert

LCMON = os.environ["LCMON"]
DATA = os.environ["LC_TEST_DATA"]
V6 = 8356
GAME = os.path.join(DATA, "lc0-v0.31.2-fmt1", "game_000002.gz")

# V6 scalar fields after the planes: (name, offset, struct format).
V6_FIELDS = [
    ("castling_us_ooo", 8272, "B"), ("castling_us_oo", 8273, "B"),
    ("castling_them_ooo", 8274, "B"), ("castling_them_oo", 8275, "B"),
    ("side_to_move_or_enpassant", 8276, "B"), ("rule50_count", 8277, "B"),
    ("invariance_info", 8278, "B"), ("dummy", 8279, "B"),
    ("root_q", 8280, "f"), ("best_q", 8284, "f"), ("root_d", 8288, "f"),
    ("best_d", 8292, "f"), ("root_m", 8296, "f"), ("best_m", 8300, "f"),
    ("plies_left", 8304, "f"), ("result_q", 8308, "f"), ("result_d", 8312, "f"),
    ("played_q", 8316, "f"), ("played_d", 8320, "f"), ("played_m", 8324, "f"),
    ("orig_q", 8328, "f"), ("orig_d", 8332, "f"), ("orig_m", 8336, "f"),
    ("visits", 8340, "I"), ("played_idx", 8344, "H"), ("best_idx", 8346, "H"),
    ("policy_kld", 8348, "f"), ("q_st", 8352, "f"),
]


def run(*args, check=None):
    p = subprocess.run([LCMON, "chunks", *args], capture_output=True, text=True, timeout=120)
    if check is not None and p.returncode != check:
        raise AssertionError("lcmon chunks %s: exit %d, wanted %d\n%s" %
                             (" ".join(args), p.returncode, check, p.stderr))
    return p


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def records(path):
    raw = gzip.decompress(read_bytes(path))
    return [raw[i:i + V6] for i in range(0, len(raw), V6)]


def same_float(test, got, want, what):
    if math.isnan(want):
        test.assertIsNone(got, what)
    else:
        # %.9g round-trips a float32 exactly.
        test.assertEqual(struct.unpack("<f", struct.pack("<f", got))[0], want, what)


def board_rows(rec, planes_at=7440):
    """The 8 ranks of the current position, rank 8 first, as the dump
    draws them: ours uppercase, theirs lowercase."""
    planes = struct.unpack_from("<12Q", rec, planes_at)
    rows = []
    for rank in range(7, -1, -1):
        row = []
        for f in range(8):
            sq = rank * 8 + f
            hit = [p for p in range(12) if (planes[p] >> (sq ^ 7)) & 1]
            row.append("PNBRQKpnbrqk"[hit[0]] if len(hit) == 1 else "." if not hit else "?")
        rows.append("  %d  %s" % (rank + 1, " ".join(row)))
    return rows


def policy_move_names():
    """lc0's policy index order for the 1792 plain moves: each from-square
    a1..h8, every square a queen or a knight reaches from it, ascending."""
    names = []
    for frm in range(64):
        fr, ff = divmod(frm, 8)
        for to in range(64):
            tr, tf = divmod(to, 8)
            dr, df = abs(tr - fr), abs(tf - ff)
            if to != frm and (dr == 0 or df == 0 or dr == df or {dr, df} == {1, 2}):
                names.append("abcdefgh"[ff] + str(fr + 1) + "abcdefgh"[tf] + str(tr + 1))
    return names


def tar_of(path, members):
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


class ChunksCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lcmon-chunks-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def dump_json(self, *args):
        out = run("dump", *args, "--json", check=0).stdout
        return [json.loads(line) for line in out.splitlines()]


class Dump(ChunksCase):
    def test_json_every_field(self):
        recs = records(GAME)
        rows = self.dump_json(GAME)
        self.assertEqual(len(rows), len(recs))
        big = False
        for k, (rec, row) in enumerate(zip(recs, rows)):
            self.assertEqual(row["position"], k)
            self.assertEqual(row["version"], 6)
            self.assertEqual(row["check"], "ok")
            self.assertEqual(row["input_format"], struct.unpack_from("<I", rec, 4)[0])
            # strings: a JSON number beyond 2**53 loses its low bits in jq
            self.assertEqual(row["planes"],
                             [str(w) for w in struct.unpack_from("<104Q", rec, 7440)])
            for name, off, fmt in V6_FIELDS:
                want = struct.unpack_from("<" + fmt, rec, off)[0]
                if fmt == "f":
                    same_float(self, row[name], want, "position %d %s" % (k, name))
                else:
                    self.assertEqual(row[name], want, "position %d %s" % (k, name))
            probs = struct.unpack_from("<1858f", rec, 8)
            big = big or any(int(w) >= 1 << 53 for w in row["planes"])
            want = [[i, p] for i, p in enumerate(probs) if p != -1.0]
            self.assertEqual([i for i, _ in row["policy"]], [i for i, _ in want])
            for (_, got), (i, p) in zip(row["policy"], want):
                same_float(self, got, p, "position %d policy %d" % (k, i))
            self.assertNotIn("d_st", row)  # a V7 field
            self.assertNotIn("move_count", row)  # a V3/V4 field
        self.assertTrue(big, "no plane word of 2**53 or more: the strings are not tested")

    def test_text(self):
        recs = records(GAME)
        out = run("dump", GAME, "--positions", "3-4", "--policy", check=0).stdout
        self.assertIn("V6, %d positions" % len(recs), out)
        blocks = out.split("position ")[1:]
        self.assertEqual(len(blocks), 2)
        names = policy_move_names()
        for k, block in zip((3, 4), blocks):
            rec = recs[k]
            self.assertTrue(block.startswith("%d of %d: version 6, input format 1 (classical)"
                                             % (k, len(recs))), block[:80])
            lines = block.splitlines()
            self.assertEqual(lines[1:9], board_rows(rec))
            self.assertIn("  rule50 %d" % rec[8277], lines)
            stm = "black" if rec[8276] else "white"
            self.assertIn("  side to move: %s (side_to_move_or_enpassant %d)" % (stm, rec[8276]),
                          lines)
            played, best = struct.unpack_from("<HH", rec, 8344)
            self.assertIn("  played %d %s, best %d %s" % (played, names[played], best,
                                                         names[best]), lines)
            visits = struct.unpack_from("<I", rec, 8340)[0]
            self.assertTrue(any(l.startswith("  visits %d " % visits) for l in lines))
            legal = [i for i, p in enumerate(struct.unpack_from("<1858f", rec, 8)) if p != -1.0]
            self.assertIn("  policy: %d legal moves" % len(legal), lines)
            at = lines.index("  policy: %d legal moves" % len(legal))
            listed = [l.split() for l in lines[at + 1:at + 1 + len(legal)]]
            self.assertEqual([int(f[1]) for f in listed], legal)
            self.assertEqual([f[0] for f in listed], [names[i] for i in legal])

    def test_text_canonical_format(self):
        """Format 5: castling bytes are rook-file masks, the side-to-move
        byte an en-passant mask, the side to move bit 7 of invariance_info."""
        game = os.path.join(DATA, "lc0-v0.31.2-fmt5", "game_000015.gz")
        files = lambda m: "".join("abcdefgh"[f] for f in range(8) if m >> f & 1) or "-"
        for k, rec in enumerate(records(game)):
            lines = run("dump", game, "--positions", str(k), check=0).stdout.splitlines()
            c = [files(b) for b in rec[8272:8276]]
            self.assertIn("  castling (rook files): us O-O-O %s O-O %s, them O-O-O %s O-O %s"
                          % tuple(c), lines)
            stm = "black" if rec[8278] & 0x80 else "white"
            self.assertIn("  en passant file: %s (mask 0x%02x); side to move: %s (invariance "
                          "bit 7)" % (files(rec[8276]), rec[8276], stm), lines)

    def test_tar_member_by_number_and_name(self):
        tar = os.path.join(DATA, "training-run-mini.tar")
        src = os.path.join(DATA, "lc0-v0.31.2-fmt5", "game_000015.gz")
        by_name = self.dump_json(tar, "--member", "training.100044.gz")
        by_number = self.dump_json(tar, "--member", "4")
        direct = self.dump_json(src)
        strip = lambda rows: [{k: v for k, v in r.items() if k not in ("file", "member", "chunk")}
                              for r in rows]
        self.assertEqual(strip(by_name), strip(direct))
        self.assertEqual(by_name, by_number)
        self.assertEqual({r["member"] for r in by_name}, {"training.100044.gz"})
        self.assertEqual(by_name[0]["input_format"], 5)
        every = self.dump_json(tar)
        self.assertEqual(len({r["member"] for r in every}), 8)

    def test_versions(self):
        recs = records(GAME)[:5]
        fields = {
            3: {"move_count", "result"},
            4: {"move_count", "result", "root_q", "best_q", "root_d", "best_d"},
            5: {"input_format", "invariance_info", "result", "root_q", "plies_left"},
            7: {"d_st", "opp_played_idx", "next_played_idx", "reserved", "visits"},
        }
        absent = {3: {"root_q", "input_format", "invariance_info", "plies_left"},
                  4: {"root_m", "input_format", "played_q"},
                  5: {"played_q", "visits", "result_q", "d_st"},
                  7: {"move_count", "result"}}
        for version in (3, 4, 5, 7):
            data = b"".join(convert(r, version, k) for k, r in enumerate(recs))
            path = self.path("v%d.gz" % version)
            with gzip.open(path, "wb") as f:
                f.write(data)
            rows = self.dump_json(path)
            self.assertEqual(len(rows), 5, version)
            for k, row in enumerate(rows):
                rec = data[k * SIZES[version]:(k + 1) * SIZES[version]]
                self.assertEqual(row["version"], version)
                self.assertTrue(fields[version] <= set(row), (version, set(row)))
                self.assertFalse(absent[version] & set(row), (version, absent[version] & set(row)))
                if version <= 4:
                    self.assertEqual(row["move_count"], rec[8274])
                    self.assertEqual(row["result"], struct.unpack_from("<b", rec, 8275)[0])
                    self.assertEqual(row["planes"],
                                     [str(w) for w in struct.unpack_from("<104Q", rec, 7436)])
                if version == 5:
                    self.assertEqual(row["result"], struct.unpack_from("<b", rec, 8279)[0])
                    same_float(self, row["plies_left"], struct.unpack_from("<f", rec, 8304)[0],
                               "V5 plies_left")
                if version == 7:
                    d_st, opp, nxt = struct.unpack_from("<fHH", rec, 8356)
                    same_float(self, row["d_st"], d_st, "V7 d_st")
                    self.assertEqual((row["opp_played_idx"], row["next_played_idx"]), (opp, nxt))
                    self.assertEqual(len(row["reserved"]), 8)
            text = run("dump", path, "--positions", "0", check=0).stdout
            self.assertIn("V%d, 5 positions" % version, text)

    def test_raw_member(self):
        raw = gzip.decompress(read_bytes(GAME))
        tar = self.path("raw.tar")
        tar_of(tar, [("game.gz", read_bytes(GAME)), ("game.raw", raw)])
        text = run("dump", tar, "--member", "game.raw", "--positions", "0", check=0).stdout
        self.assertIn("member 'game.raw' (chunk 1, raw records): V6", text)
        strip = lambda rows: [{k: v for k, v in r.items() if k not in ("member", "chunk")}
                              for r in rows]
        self.assertEqual(strip(self.dump_json(tar, "--member", "0")),
                         strip(self.dump_json(tar, "--member", "1")))


class Folder(ChunksCase):
    """A folder whose every count is known."""

    def setUp(self):
        super().setUp()
        d = self.path("data")
        os.makedirs(os.path.join(d, "sub"))
        self.games = [os.path.join(DATA, "lc0-v0.31.2-fmt1", "game_000002.gz"),
                      os.path.join(DATA, "lc0-v0.31.2-fmt2", "game_000008.gz"),
                      os.path.join(DATA, "lc0-v0.31.2-fmt5", "game_000015.gz")]
        for i, g in enumerate(self.games):
            shutil.copy(g, os.path.join(d, "sub" if i == 2 else "", "g%d.gz" % i))
        first = records(self.games[0])
        # A record whose played move is outside the policy: a bad record.
        bad = bytearray(b"".join(first[:4]))
        struct.pack_into("<H", bad, 2 * V6 + 8344, 5000)
        with gzip.open(os.path.join(d, "badrecord.gz"), "wb") as f:
            f.write(bytes(bad))
        # A corrupt game, a note, a hidden file.
        with open(os.path.join(d, "corrupt.gz"), "wb") as f:
            f.write(read_bytes(self.games[1])[:300])
        with open(os.path.join(d, "notes.txt"), "w") as f:
            f.write("not a game\n")
        shutil.copy(self.games[0], os.path.join(d, ".hidden.gz"))
        # An archive: a gzip game, the same game raw, a LICENSE.
        raw = gzip.decompress(read_bytes(self.games[1]))
        tar_of(os.path.join(d, "run.tar"), [("a.gz", read_bytes(self.games[0])),
                                             ("b.raw", raw), ("LICENSE", b"GPL-3.0\n")])
        self.data = d
        self.lengths = [len(records(g)) for g in self.games] + [len(raw) // V6, len(first)]
        self.results = []
        for g in self.games + [self.games[1], self.games[0]]:
            q = struct.unpack_from("<f", records(g)[0], 8308)[0]
            self.results.append("win" if q > 0.5 else "loss" if q < -0.5 else "draw")

    def test_stats_json(self):
        s = json.loads(run("stats", self.data, "--json", check=0).stdout)
        self.assertEqual(s["files"], 6)  # g0, g1, g2, badrecord, corrupt, run.tar
        self.assertEqual((s["gz_files"], s["tar_files"], s["other_files"]), (5, 1, 1))
        self.assertEqual(s["chunks"], 7)  # 5 .gz + 2 members
        self.assertEqual(s["good_chunks"], 5)
        self.assertEqual(s["raw_members"], 1)
        self.assertEqual(s["positions"], sum(self.lengths))
        self.assertEqual(s["versions"], {"V6": 5})
        self.assertEqual(s["input_formats"], {"1": 2, "2": 2, "5": 1})
        want = {r: self.results.count(r) for r in ("win", "draw", "loss")}
        want["unknown"] = 0
        self.assertEqual(s["results"], want)
        gl = s["game_lengths"]
        self.assertEqual((gl["games"], gl["min"], gl["max"]), (5, min(self.lengths),
                                                              max(self.lengths)))
        self.assertAlmostEqual(gl["mean"], sum(self.lengths) / 5, places=5)
        self.assertEqual(sum(b["count"] for b in gl["bins"]), 5)
        for n in self.lengths:
            b = [b for b in gl["bins"] if b["from"] <= n < b["from"] + gl["bin_width"]]
            self.assertEqual(len(b), 1, n)
        self.assertEqual(s["bad_chunks"], {"played_idx_out_of_range": 1, "corrupt_gzip": 1,
                                           "skipped_member": 1})
        self.assertEqual(s["bad_files"], {})

    def test_stats_text(self):
        out = run("stats", self.data, check=0).stdout
        self.assertIn("6 files (5 .gz, 1 .tar; 1 other files not read), 7 chunks (5 good, "
                      "1 raw tar members), %d positions" % sum(self.lengths), out)
        lines = out.splitlines()
        v6 = [l for l in lines if l.startswith("  V6 ")][0]
        self.assertTrue(v6.endswith(" 5 (100.0%)"), v6)
        self.assertEqual(v6.count("\u2588"), 60)  # the longest bar: 60 columns off a terminal
        fmt2 = [l for l in lines if l.startswith("  2 ")][0]
        self.assertEqual(fmt2.count("\u2588"), 60)
        fmt5 = [l for l in lines if l.startswith("  5 ")][0]
        self.assertEqual(fmt5.count("\u2588"), 30)
        self.assertTrue(fmt5.endswith(" 1 (20.0%)"), fmt5)
        self.assertTrue(any(l.startswith("  skipped_member ") for l in lines))
        self.assertIn("positions per game: min %d, mean %.1f, max %d" % (
            min(self.lengths), sum(self.lengths) / 5, max(self.lengths)), out)

    def test_check(self):
        p = run("check", self.data)
        self.assertEqual(p.returncode, 1, p.stderr)
        lines = p.stdout.splitlines()
        by_file = {l.split()[1].rstrip(":"): l for l in lines[:-1]}
        self.assertEqual(len(by_file), 6, lines)
        j = lambda *a: os.path.join(self.data, *a)
        self.assertTrue(by_file[j("g0.gz")].startswith("ok "))
        self.assertTrue(by_file[j("sub", "g2.gz")].startswith("ok "))
        self.assertIn("member 'badrecord.gz': record 2: played_idx_out_of_range",
                      by_file[j("badrecord.gz")])
        self.assertTrue(by_file[j("badrecord.gz")].startswith("BAD "))
        self.assertIn("member 'corrupt.gz': corrupt_gzip", by_file[j("corrupt.gz")])
        tar = by_file[j("run.tar")]
        self.assertTrue(tar.startswith("ok "), tar)  # a LICENSE makes nothing bad
        self.assertIn("2 chunks", tar)
        self.assertIn("member 'LICENSE' skipped: neither gzip", tar)
        self.assertEqual(lines[-1], "%s: 6 files checked: 4 ok, 2 bad; 7 chunks, 2 bad; %d "
                         "positions; 1 tar member skipped; 1 other file not read"
                         % (self.data, sum(self.lengths)))
        doc = json.loads(run("check", self.data, "--json", check=1).stdout)
        self.assertEqual(doc["summary"]["bad_files"], 2)
        self.assertEqual(doc["summary"]["skipped_members"], 1)
        bad = [f for f in doc["files"] if not f["ok"]]
        self.assertEqual(sorted(os.path.basename(f["path"]) for f in bad),
                         ["badrecord.gz", "corrupt.gz"])
        rec = [f for f in bad if f["path"].endswith("badrecord.gz")][0]["problems"]
        self.assertEqual([(p["member"], p["chunk"], p["record"], p["reason"]) for p in rec],
                         [("badrecord.gz", 0, 2, "played_idx_out_of_range")])
        # Without the bad ones, every file is good: exit status 0.
        os.unlink(j("badrecord.gz"))
        os.unlink(j("corrupt.gz"))
        p = run("check", self.data, check=0)
        self.assertTrue(p.stdout.splitlines()[-1].startswith("%s: 4 files checked: 4 ok, 0 bad"
                                                             % self.data), p.stdout)


POLICY_AT, PLANES_AT = 8, 8 + 4 * 1858


def policies(rec):
    return rec[POLICY_AT:PLANES_AT]


class Rescore(ChunksCase):
    def test_defaults_beside_the_file(self):
        game = self.path("g.gz")
        shutil.copy(GAME, game)
        p = run("rescore", game, check=0)
        n = len(records(GAME))
        out = self.path("g_rescored.gz")
        self.assertIn("%s: member 'g.gz': V6, %d positions; settings: defaults" % (game, n),
                      p.stdout)
        self.assertIn("changed: results (result_q, result_d) of 0 positions, plies_left of 0, "
                      "the policy of 0, the planes of 0", p.stdout)
        self.assertIn("written: %s (V6, %d positions)" % (out, n), p.stdout)
        # A valid game with upstream's defaults: the same records.
        self.assertEqual(gzip.decompress(read_bytes(out)), gzip.decompress(read_bytes(GAME)))

    def test_settings_change_the_records(self):
        out = self.path("out.gz")
        p = run("rescore", GAME, "-o", out, "--list", "--set", "dist_temp=0.5", "--set",
                "new_input_format=3", "--set", "st_targets=compute", check=0)
        before = records(GAME)
        raw = gzip.decompress(read_bytes(out))
        self.assertEqual(len(raw), len(before) * 8396)  # V7
        after = [raw[i:i + 8396] for i in range(0, len(raw), 8396)]
        for rec in after:
            self.assertEqual(struct.unpack_from("<II", rec, 0), (7, 3))
        policy = sum(policies(a) != policies(b) for a, b in zip(after, before))
        # The planes, or the input format they are read in.
        planes = sum(a[PLANES_AT:PLANES_AT + 832] != b[PLANES_AT:PLANES_AT + 832] or
                     a[4:8] != b[4:8] for a, b in zip(after, before))
        self.assertGreater(policy, 0)
        self.assertIn("the policy of %d, the planes of %d" % (policy, planes), p.stdout)
        self.assertIn("new_input_format: from 1 to 3: converted", p.stdout)
        self.assertIn("short-term targets: %d positions (V6 written as V7)" % len(before),
                      p.stdout)
        listed = [l for l in p.stdout.splitlines() if l.startswith("  ") and ":" in l]
        self.assertEqual(len(listed), max(policy, planes))
        self.assertIn("planes: input format 1 -> 3;", listed[0])

    def test_tar_member_and_config(self):
        tar = self.path("run.tar")
        shutil.copy(os.path.join(DATA, "training-run-mini.tar"), tar)
        p = run("rescore", tar, check=1)
        self.assertIn("holds 8 games: pick one with --member N|NAME", p.stderr)
        config = os.path.join(os.environ["LCMON_SOURCE_ROOT"], "config", "rescore.yaml")
        p = run("rescore", tar, "--member", "0", "--config", config, "--stage", "rescorer",
                check=0)
        self.assertIn("settings: stage 'rescorer' of %s" % config, p.stdout)
        self.assertIn("written: %s" % self.path("training.100014_rescored.gz"), p.stdout)
        p = run("rescore", tar, "--member", "0", "--config", config, "--stage", "pool", check=1)
        self.assertIn("stage 'pool' is a shuffling_chunk_pool, not a chunk_rescorer stage",
                      p.stderr)

    def test_invalid_game_dropped(self):
        # Record 5's probabilities halved: they sum to 0.5, which upstream's
        # Validate refuses (the sum must be within [0.99, 1.01]).
        recs = [bytearray(r) for r in records(GAME)]
        probs = struct.unpack_from("<1858f", recs[5], POLICY_AT)
        struct.pack_into("<1858f", recs[5], POLICY_AT,
                         *[p / 2 if p > 0 else p for p in probs])
        game = self.path("bad.gz")
        with gzip.open(game, "wb") as f:
            f.write(b"".join(bytes(r) for r in recs))
        p = run("rescore", game, check=1)
        self.assertIn("dropped: record 5: probabilities sum to 0.5", p.stdout)
        self.assertIn("--set invalid_games=keep", p.stdout)
        self.assertFalse(os.path.exists(self.path("bad_rescored.gz")))
        p = run("rescore", game, "--set", "invalid_games=keep", check=0)
        self.assertEqual(gzip.decompress(read_bytes(self.path("bad_rescored.gz"))),
                         b"".join(bytes(r) for r in recs))

    def test_errors(self):
        p = run("rescore", GAME, "-o", self.path("x.gz"), "--set", "deblunder_threshold=0.1",
                check=1)
        self.assertIn("upstream's loader deblunders only with both deblunder_threshold and "
                      "deblunder_width", p.stderr)
        self.assertFalse(os.path.exists(self.path("x.gz")))
        p = run("rescore", GAME, "-o", self.path("x.gz"), "--set", "deblunder_thresold=0.1",
                check=1)
        self.assertIn("deblunder_thresold", p.stderr)
        p = run("rescore", GAME, "--set", "dist_temp", check=2)
        self.assertIn("give KEY=VALUE", p.stderr)
        p = run("rescore", GAME, "--set", "dist_temp=2", "--config", "x.yaml", check=2)
        self.assertIn("not both", p.stderr)
        game = self.path("g.gz")
        shutil.copy(GAME, game)
        p = run("rescore", game, "-o", game, check=1)
        self.assertIn("is the input", p.stderr)


def weight(rec, alpha=1.0, beta=0.0, gamma=1.0, tau=1.0, q_weight=6.0, pol_scale=3.5):
    """The current loader's weight of a V6 record, as a float."""
    best_q, orig_q, kld = (struct.unpack_from("<f", rec, o)[0] for o in (8284, 8328, 8348))
    total = (q_weight * abs(best_q - orig_q) + kld) / (q_weight + pol_scale)
    base = alpha * total + beta
    w = 0.0 if not base > 0 else min(base ** gamma, tau)
    return struct.unpack("<f", struct.pack("<f", w))[0]


class Weights(ChunksCase):
    def setUp(self):
        super().setUp()
        self.dir = self.path("games")
        os.makedirs(self.dir)
        src = os.path.join(DATA, "lc0-v0.31.2-fmt1")
        self.games = sorted(os.path.join(src, f) for f in os.listdir(src)
                            if f.endswith(".gz"))[:3]
        for g in self.games:
            shutil.copy(g, self.dir)
        self.recs = [r for g in self.games for r in records(g)]

    def test_default_against_python(self):
        p = run("weights", self.dir, check=0)
        w = sorted(weight(r) for r in self.recs)
        n = len(w)
        self.assertIn("position_weights {alpha 1, beta 0, gamma 1, tau 1, default_weight 1, "
                      "q_weight 6, pol_scale 3.5} (defaults)", p.stdout)
        self.assertIn("%s: 3 files, 3 chunks (0 bad, skipped), %d positions" % (self.dir, n),
                      p.stdout)
        self.assertIn("position weights: count %d, mean %.6f, zero 0 (0.0%%)"
                      % (n, sum(w) / n), p.stdout)
        quantiles = " ".join("%d%% %.6f" % (q, w[(n - 1) * q // 100])
                             for q in (0, 1, 5, 10, 25, 50, 75, 90, 95, 99, 100))
        self.assertIn("  quantiles: " + quantiles, p.stdout)
        bars = [l for l in p.stdout.splitlines() if "█" in l]
        self.assertEqual(len(bars), 20)
        self.assertEqual(sum(int(l.split()[-2]) for l in bars), n)
        self.assertIn("heaviest: ", p.stdout)
        self.assertIn(", %.6f" % w[-1], p.stdout)

    def test_hand_worked(self):
        # alpha 0, beta 0.25: (0 * total + 0.25)^1 = 0.25 under tau 1, for
        # every position (all have orig_q and policy_kld).
        p = run("weights", self.dir, "--set", "alpha=0", "--set", "beta=0.25", check=0)
        self.assertIn("count %d, mean 0.250000, zero 0" % len(self.recs), p.stdout)
        self.assertIn("histogram: every one weighs 0.250000", p.stdout)
        # beta -1 with alpha 1: total is at most 1 (|best_q - orig_q| <= 2,
        # 6 * 2 / 9.5 + kld / 9.5): base <= 0 for the positions with
        # 6|dq| + kld <= 9.5, which weigh 0.
        p = run("weights", self.dir, "--set", "beta=-1", check=0)
        zero = sum(weight(r, beta=-1.0) == 0 for r in self.recs)
        self.assertIn("zero %d (%.1f%%)" % (zero, 100.0 * zero / len(self.recs)), p.stdout)

    def test_config_stages(self):
        config = self.path("w.yaml")
        with open(config, "w") as f:
            f.write("""stages:
  - name: files
    file_path_provider: {directory: %s}
  - name: sources
    input: files
    chunk_source_loader: {threads: 1}
  - name: pool
    input: sources
    shuffling_chunk_pool:
      chunk_pool_size: 100
      hanse: {threshold: 1, gamma: 2, position_weights: {q_weight: 6, pol_scale: 3.5}}
  - name: unpacker
    input: pool
    chunk_unpacker:
      positions_per_chunk: 1
      position_weights: {default_weight: 2}
""" % self.dir)
        # The unpacker: neither q_weight nor pol_scale, so default_weight.
        p = run("weights", self.dir, "--config", config, "--stage", "unpacker", check=0)
        self.assertIn("count %d, mean 2.000000" % len(self.recs), p.stdout)
        self.assertIn("every one weighs 2.000000", p.stdout)
        # The pool (the first that weighs): a chunk weighs its positions'
        # sum; a pass takes each with (w / heaviest)^2.
        p = run("weights", self.dir, "--config", config, check=0)
        self.assertIn("(stage 'unpacker' weighs too: --stage unpacker)", p.stdout)
        sums = sorted(sum(weight(r) for r in records(g)) for g in self.games)
        self.assertIn("chunk weights (hanse: the sum of a chunk's positions'): count 3, mean "
                      "%.6f" % (sum(sums) / 3), p.stdout)
        accept = sum((x / sums[-1]) ** 2 for x in sums) / 3
        self.assertIn("acceptance (weight / heaviest)^2: mean %.6f" % accept, p.stdout)
        p = run("weights", self.dir, "--config", config, "--stage", "files", check=1)
        self.assertIn("stage 'files' is a file_path_provider", p.stderr)


class Usage(ChunksCase):
    def test_usage_and_errors(self):
        for args in ((), ("frob",), ("dump",), ("stats",), ("dump", GAME, "--bogus"),
                     ("dump", GAME, "--positions", "5-2")):
            p = run(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("usage: lcmon chunks dump FILE", p.stderr)
        p = run("help", check=0)
        self.assertIn("lcmon chunks check DIR", p.stdout)
        missing = self.path("missing.gz")
        p = run("dump", missing, check=1)
        self.assertIn(missing, p.stderr)
        self.assertIn("check the path", p.stderr)
        p = run("stats", self.path("nowhere"), check=1)
        self.assertIn(self.path("nowhere"), p.stderr)
        p = run("dump", os.path.join(DATA, "training-run-mini.tar"), "--member", "99", check=1)
        self.assertIn("no member '99'", p.stderr)
        help_text = subprocess.run([LCMON, "--help"], capture_output=True, text=True).stdout
        self.assertIn("lcmon chunks dump|stats|check|rescore|weights", help_text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
