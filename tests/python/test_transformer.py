"""End to end for the chess-transformer pipelines: the real lcmon binary
reads a Parquet fixture (parquet_game_source), tokenizes it (game_tokenizer)
and writes batches to a named pipe that the lcmon Python package (python/lcmon) reads.

The expected samples are computed here, independently, from the values the
fixture's writer was given (tests/parquet/fixtures/x.tsv.gz) and from the
rules of docs/chess-transformer-data.md: the vocabulary of 1960, 68-token
positions with the castling rule, decoder sequences with the target shift,
best moves and WDL masks, encoder samples with the best move.

Environment: LCMON, LCMON_TEST_DATA, LCMON_SOURCE_ROOT, PYTHONPATH (python/).
"""

import gzip
import os
import subprocess
import unittest
from collections import OrderedDict

import numpy as np

from test_end_to_end import DATA, LCMON, SOURCE_ROOT, LcmonCase

FIXTURES = os.path.join(DATA, "..", "parquet", "fixtures")

# ---- the vocabulary, from the doc ---------------------------------------


def square(name):
    return (ord(name[0]) - ord("a")) + 8 * (int(name[1]) - 1)


def square_name(sq):
    return "abcdefgh"[sq % 8] + str(sq // 8 + 1)


def build_vocab():
    moves = []
    for frm in range(64):
        fx, fy = frm % 8, frm // 8
        for to in range(64):
            if to == frm:
                continue
            tx, ty = to % 8, to // 8
            dx, dy = abs(tx - fx), abs(ty - fy)
            if dx == 0 or dy == 0 or dx == dy or (dx, dy) in ((1, 2), (2, 1)):
                moves.append(square_name(frm) + square_name(to))
    assert len(moves) == 1792, len(moves)
    for from_rank, to_rank in (("7", "8"), ("2", "1")):
        for f in range(8):
            for t in (f - 1, f, f + 1):
                if 0 <= t < 8:
                    for suffix in "qrb":
                        moves.append("abcdefgh"[f] + from_rank + "abcdefgh"[t] + to_rank + suffix)
    assert len(moves) == 1924, len(moves)
    ids = {m: i for i, m in enumerate(moves)}
    names = ["white_king", "white_queen", "white_rook", "white_bishop", "white_knight",
             "white_pawn", "black_king", "black_queen", "black_rook", "black_bishop",
             "black_knight", "black_pawn", "start_pos", "end_pos", "white_to_move",
             "black_to_move", "empty", "pad", "bos", "eos"]
    castling = ["K", "Q", "k", "q", "KQ", "Kk", "Kq", "Qk", "Qq", "kq", "KQk", "KQq", "Kkq",
                "Qkq", "KQkq", "no_castling_rights"]
    for i, n in enumerate(names + castling):
        ids[n] = 1924 + i
    assert len(ids) == 1960
    return ids


VOCAB = build_vocab()


def piece_at(fen, sq):
    """The piece letter on square sq ("e1") of a FEN's placement, or None."""
    rank, file = 7, 0
    for c in fen.split(" ")[0]:
        if c == "/":
            rank, file = rank - 1, 0
        elif c.isdigit():
            file += int(c)
        else:
            if (file, rank) == (ord(sq[0]) - ord("a"), int(sq[1]) - 1):
                return c
            file += 1
    return None


def uci_spelling(fen, move):
    """The vocabulary's spelling of a standard UCI move, as the doc says the
    tokenizer maps it (uci_spellings, on by default): a knight promotion is
    the plain move; e1g1, e1c1, e8g8, e8c8 are the king taking its rook when
    the FEN has that side's king on its start square."""
    if move is None:
        return None
    if len(move) == 5 and move[4] == "n":
        return move[:4]
    if move in ("e1g1", "e1c1", "e8g8", "e8c8") and fen:
        if piece_at(fen, move[:2]) == ("K" if move[1] == "1" else "k"):
            return move[:2] + ("h" if move[2] == "g" else "a") + move[3]
    return move


def mv(row, key):
    return uci_spelling(row.get("fen"), row[key])
PAD = VOCAB["pad"]
PIECES = {c: VOCAB[n] for c, n in zip("KQRBNPkqrbnp", [
    "white_king", "white_queen", "white_rook", "white_bishop", "white_knight", "white_pawn",
    "black_king", "black_queen", "black_rook", "black_bishop", "black_knight", "black_pawn"])}


def fen_tokens(fen):
    fields = fen.split()
    board = [VOCAB["empty"]] * 64
    for r, rank in enumerate(fields[0].split("/")):
        f = 0
        for ch in rank:
            if ch.isdigit():
                f += int(ch)
            else:
                board[(7 - r) * 8 + f] = PIECES[ch]
                f += 1
    granted = fields[2] if len(fields) > 2 else "-"
    keep = ""
    for right, king_sq, rook_sq, king, rook in (("K", "e1", "h1", "K", "R"),
                                                ("Q", "e1", "a1", "K", "R"),
                                                ("k", "e8", "h8", "k", "r"),
                                                ("q", "e8", "a8", "k", "r")):
        if right in granted and board[square(king_sq)] == PIECES[king] \
                and board[square(rook_sq)] == PIECES[rook]:
            keep += right
    side = VOCAB["white_to_move"] if fields[1] == "w" else VOCAB["black_to_move"]
    return ([VOCAB["start_pos"]] + board + [VOCAB["end_pos"], VOCAB[keep or "no_castling_rights"],
                                            side])


class VocabTest(unittest.TestCase):
    def test_check_values(self):
        for move, want in (("e2e4", 322), ("g1f3", 159), ("a7a8", 1401), ("a7a8q", 1792),
                           ("h2h1b", 1923), ("e1h1", 103), ("e8a8", 1713)):
            self.assertEqual(VOCAB[move], want, move)
        self.assertEqual(PAD, 1941)


# ---- the fixture's games ------------------------------------------------


def load_games(name):
    """Games in file order (of their first row), rows sorted by ply."""
    with gzip.open(os.path.join(FIXTURES, name + ".tsv.gz"), "rt") as f:
        lines = f.read().rstrip("\n").split("\n")
    cols = lines[0].split("\t")
    games = OrderedDict()
    for line in lines[1:]:
        row = dict(zip(cols, line.split("\t")))
        games.setdefault(row["game_id"], []).append(row)
    out = []
    for gid, rows in games.items():
        rows.sort(key=lambda r: int(r["ply"]))
        out.append((gid, rows))
    return out


def value(cell):
    return None if cell == "\\N" else float(cell)


def decoder_sequence(rows):
    """(tokens, moves) of the whole game with every board (skip 0); moves
    lists (index, best id, (w, d, l))."""
    seq, moves = [], []
    for row in rows:
        seq += fen_tokens(row["fen"])
        seq.append(VOCAB[mv(row, "played_move")])
        wdl = tuple(value(row[k]) or 0.0 for k in ("win", "draw", "loss"))
        moves.append((len(seq) - 1, VOCAB[mv(row, "best_move")], wdl))
    return seq, moves


def decoder_sample(seq, moves, start, L):
    inp = (seq[start:start + L] + [PAD] * L)[:L]
    tgt = inp[1:] + [0]
    wdl = np.zeros((L, 3), np.float32)
    mask = np.zeros(L, bool)
    for m, best, w in moves:
        m -= start
        if 1 <= m < L:
            tgt[m - 1] = best
            wdl[m - 1] = w
            mask[m - 1] = True
    return np.array(inp), np.array(tgt), wdl, mask


def in_vocab(rows):
    return all(mv(r, "played_move") in VOCAB and mv(r, "best_move") in VOCAB for r in rows)


# ---- the runs -------------------------------------------------------------


class TransformerPipelines(LcmonCase):
    FIXTURE = "duckdb_snappy_rowgroups"

    def run_pipeline(self, tokenizer, batch_size, header=None, epochs=1, progress=None):
        pipe = self.path("lcmon.pipe")
        cfg = self.write_config(
            "seed: 5\n"
            "stages:\n"
            "  - name: games\n"
            "    parquet_game_source: {path: '%s/%s.parquet', epochs: %d, shuffle: false}\n"
            "  - name: tokens\n"
            "    input: games\n"
            "    game_tokenizer: %s\n"
            "  - name: writer\n"
            "    input: tokens\n"
            "    fifo_writer: {path: '%s'}\n" % (FIXTURES, self.FIXTURE, epochs, tokenizer, pipe))
        self.start(cfg)
        r = self.open_reader(pipe)
        parts = {t.name: [] for t in r.header.tensors}
        specs = [(t.name, t.dtype.name, t.shape) for t in r.header.tensors]
        if header is not None:
            header.append(r.header)
        rows = []
        while True:
            b = r.read_batch()
            if b is None:
                break
            rows.append(b.rows)
            if progress is not None:
                progress.append(b.progress)
            for name, arr in b.tensors.items():
                parts[name].append(np.array(arr, copy=True))
        self.assertTrue(r.done, "the stream ended without DONE")
        self.wait_exit()
        self.assertTrue(all(n == batch_size for n in rows[:-1]))
        return specs, {name: np.concatenate(p) for name, p in parts.items()}

    def encoder_samples(self):
        """The expected (input_ids, target) of every position in file order,
        and how many positions are skipped."""
        want_inp, want_tgt = [], []
        skipped = 0
        for _, rows in load_games(self.FIXTURE):
            for row in rows:
                if mv(row, "best_move") not in VOCAB:
                    skipped += 1
                    continue
                want_inp.append(fen_tokens(row["fen"]))
                want_tgt.append(VOCAB[mv(row, "best_move")])
        return np.array(want_inp), np.array(want_tgt), skipped

    def test_encoder_every_position_in_order(self):
        want_inp, want_tgt, skipped = self.encoder_samples()
        specs, got = self.run_pipeline("{mode: encoder, batch_size: 100, shuffle_buffer: 0}", 100)
        self.assertEqual(specs, [("input_ids", "int64", (100, 68)),
                                 ("attention_mask", "int64", (100, 68)),
                                 ("target", "int64", (100,))])
        self.assertEqual(got["input_ids"].shape[0], len(want_inp))
        np.testing.assert_array_equal(got["input_ids"], want_inp)
        np.testing.assert_array_equal(got["target"], want_tgt)
        np.testing.assert_array_equal(got["attention_mask"], np.ones((len(want_inp), 68)))
        if skipped:
            self.assertIn("skipping", self.lcmon_log())

    def test_progress_over_epochs(self):
        """A finite Parquet run tells its epoch, the files read of the total
        (the file times the epochs) and the games read, never going back."""
        games = len(load_games(self.FIXTURE))
        progress = []
        self.run_pipeline("{mode: decoder, batch_size: 4, max_seq_len: 512}", 4, epochs=2,
                          progress=progress)
        self.assertEqual({p.epochs for p in progress}, {2})
        self.assertEqual([p.epoch for p in progress], sorted(p.epoch for p in progress))
        self.assertEqual(progress[0].epoch, 1)
        self.assertEqual(progress[-1].epoch, 2)
        for a, b in zip(progress, progress[1:]):
            self.assertLessEqual((a.files_done, a.records), (b.files_done, b.records))
        last = progress[-1]
        self.assertEqual((last.files_done, last.files_total), (2, 2))
        self.assertEqual(last.records, 2 * games)
        self.assertEqual(last.records_total, 0)  # games are not counted ahead
        self.assertEqual(last.fraction, 1.0)

    def test_encoder_shuffle_buffer(self):
        """Through the shuffle buffer: every position exactly once, in
        another order."""
        want_inp, want_tgt, _ = self.encoder_samples()
        _, got = self.run_pipeline("{mode: encoder, batch_size: 100, shuffle_buffer: 500}", 100)
        want = np.column_stack([want_inp, want_tgt])
        rows = np.column_stack([got["input_ids"], got["target"]])
        self.assertEqual(rows.shape, want.shape)
        self.assertFalse(np.array_equal(rows, want), "the samples kept file order")
        np.testing.assert_array_equal(rows[np.lexsort(rows.T[::-1])],
                                      want[np.lexsort(want.T[::-1])])
        np.testing.assert_array_equal(got["attention_mask"], np.ones((len(want), 68)))

    def check_decoder(self, L, skip):
        games = [(g, rows) for g, rows in load_games(self.FIXTURE) if in_vocab(rows)]
        specs, got = self.run_pipeline(
            "{mode: decoder, batch_size: 32, max_seq_len: %d, skip_board_prob: %g}" % (L, skip), 32)
        self.assertEqual(specs, [("input_ids", "int64", (32, L)), ("target_ids", "int64", (32, L)),
                                 ("wdl_targets", "float32", (32, L, 3)),
                                 ("wdl_mask", "bool", (32, L))])
        self.assertEqual(got["input_ids"].shape[0], len(games))
        starts_used = set()
        for i, (gid, rows) in enumerate(games):
            if skip == 0:
                seq, moves = decoder_sequence(rows)
            else:  # skip 1: the first board only, then every move
                seq = fen_tokens(rows[0]["fen"])
                moves = []
                for row in rows:
                    seq.append(VOCAB[mv(row, "played_move")])
                    wdl = tuple(value(row[k]) or 0.0 for k in ("win", "draw", "loss"))
                    moves.append((len(seq) - 1, VOCAB[mv(row, "best_move")], wdl))
            # The start: 0 or just after a move but the last; find the one used.
            starts = [0] + [m + 1 for m, _, _ in moves[:-1]]
            match = None
            for s in starts:
                inp, tgt, wdl, mask = decoder_sample(seq, moves, s, L)
                if np.array_equal(inp, got["input_ids"][i]):
                    match = (s, inp, tgt, wdl, mask)
                    break
            self.assertIsNotNone(match, "game %s: input_ids are no window of its sequence" % gid)
            s, inp, tgt, wdl, mask = match
            starts_used.add(s > 0)
            np.testing.assert_array_equal(got["target_ids"][i], tgt, gid)
            np.testing.assert_array_equal(got["wdl_mask"][i], mask, gid)
            np.testing.assert_allclose(got["wdl_targets"][i], wdl, rtol=0, atol=1e-7, err_msg=gid)
        self.assertEqual(starts_used, {True, False}, "random starts: both 0 and later ones")

    def test_decoder_padding(self):
        self.check_decoder(2048, 0.0)

    def test_decoder_truncation(self):
        self.check_decoder(100, 0.0)

    def test_decoder_skip_every_later_board(self):
        self.check_decoder(64, 1.0)

    def test_packed_token_layouts(self):
        """packed: true sends ids as uint16 and the encoder's mask as uint8;
        widened by lcmon.expand and by lcmon.torch they are the dense
        batches, bit for bit (the same seed and one thread: the same
        samples)."""
        from lcmon import expand

        try:
            import torch
            from lcmon.torch import expand as torch_expand
        except ImportError:
            torch = None
        cases = [
            # (the WDL targets, float32, keep the decoder's share at 17 of 29
            # bytes a token)
            ("{mode: encoder, batch_size: 100, shuffle_buffer: 300%s}", 100, "chess-encoder", 0.25,
             [("input_ids", "uint16", (100, 68)), ("attention_mask", "uint8", (100, 68)),
              ("target", "uint16", (100,))]),
            ("{mode: decoder, batch_size: 32, max_seq_len: 100%s}", 32, "chess-decoder", 0.62,
             [("input_ids", "uint16", (32, 100)), ("target_ids", "uint16", (32, 100)),
              ("wdl_targets", "float32", (32, 100, 3)), ("wdl_mask", "bool", (32, 100))]),
        ]
        for tok, bs, name, share, packed_specs in cases:
            h = []
            _, dense = self.run_pipeline(tok % "", bs, h)
            self.assertEqual((h[0].layout, h[0].expand), (name, ""))
            self.tearDown()
            self.setUp()
            specs, packed = self.run_pipeline(tok % ", packed: true", bs, h)
            self.assertEqual(specs, packed_specs)
            self.assertEqual((h[1].layout, h[1].expand), (name + "-packed", "widen-int64"))
            self.assertLess(h[1].payload_bytes, share * h[0].payload_bytes)
            widened = expand(packed, "widen-int64")
            self.assertEqual(sorted(widened), sorted(dense))
            for n, a in dense.items():
                self.assertEqual((widened[n].dtype, widened[n].shape), (a.dtype, a.shape), n)
                self.assertEqual(widened[n].tobytes(), a.tobytes(), "%s: %s" % (name, n))
            if torch is not None:
                t = torch_expand({n: torch.from_numpy(a.view(np.int16) if a.dtype == np.uint16
                                                      else a) for n, a in packed.items()},
                                 "widen-int64")
                for n, a in dense.items():
                    self.assertEqual(t[n].numpy().tobytes(), a.tobytes(), "torch: %s" % n)
            self.tearDown()
            self.setUp()

    def test_shipped_configs_check(self):
        for name in ("decoder", "encoder"):
            cfg = os.path.join(SOURCE_ROOT, "config", name + ".yaml")
            # From the repository's root, where their relative paths point
            # (the check looks at the file system too).
            r = subprocess.run([LCMON, "--check-config", cfg], capture_output=True, text=True,
                               timeout=30, cwd=SOURCE_ROOT)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("game_tokenizer", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
