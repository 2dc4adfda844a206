/*
 * chess_tokens: positions, decoder samples and encoder samples of the
 * chess-transformer pipelines, exactly as docs/chess-transformer-data.md
 * describes them. A pure library: no threads, no I/O, no allocation on the
 * per-sample path.
 *
 * Position (68 tokens): start_pos; the 64 squares a1, b1, ..., h1, a2, ...,
 * h8, each `empty` or a piece token; end_pos; one castling token; the
 * side-to-move token. A castling right counts only if the FEN grants it and
 * the king and that rook still stand on their original squares (e1 and h1
 * for K, e1 and a1 for Q, e8 and h8 for k, e8 and a8 for q).
 *
 * Strings come as pointer and length (Parquet byte arrays are not
 * NUL-terminated). Token arrays are int64_t, the dtype of the batches, so
 * that samples are written straight into batch rows.
 *
 * Failures: LC_EFORMAT for a malformed FEN, LC_CHESS_EOOV (chess_vocab.h)
 * for a move outside the vocabulary, LC_EEMPTY for a game without rows. Each
 * fills the optional lc_error with the row and the offending text. The
 * outputs are then unspecified.
 */
#ifndef LC_FORMAT_CHESS_CHESS_TOKENS_H
#define LC_FORMAT_CHESS_CHESS_TOKENS_H

#include "core/error.h"
#include "core/rng.h"
#include "format/chess/chess_vocab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LC_CHESS_POS_TOKENS 68
#define LC_CHESS_DEFAULT_MAX_SEQ_LEN 256

/*
 * The 68 tokens of the FEN fen[0..len) into out. Accepted: the placement
 * (8 ranks of 8 files, pieces KQRBNPkqrbnp, digits 1-8), then the side to
 * move (w or b), then optionally the castling field (- or letters of KQkq,
 * each at most once, in any order; missing means -), the en-passant field
 * (- or a square) and the two clocks (digits), separated by spaces or tabs.
 * Anything else is LC_EFORMAT. Kings are not required: the tokens of a board
 * are defined without them. Safe to call from any thread.
 */
int lc_chess_fen_tokens(const char *fen, size_t len, int64_t out[LC_CHESS_POS_TOKENS],
                        lc_error *err);

/* One row of a game, as the Parquet source hands it over. A null fen,
 * played or best (NULL, length 0) is a missing value; the functions below
 * take it for a malformed FEN or a move outside the vocabulary, so callers
 * that count missing values apart check for NULL first. */
typedef struct lc_chess_row {
    const char *fen; /* NULL when null */
    size_t fen_len;
    const char *played; /* UCI; NULL when null */
    size_t played_len;
    const char *best; /* UCI; NULL when null */
    size_t best_len;
    double win, draw, loss;
    bool has_win, has_draw, has_loss; /* false for a null value */
} lc_chess_row;

/*
 * Where one decoder sample goes: arrays of max_seq_len (L) entries each,
 * wdl_targets of 3 * L (w, d, l per position). wdl_valid is optional (NULL
 * for none) and not part of the doc's batch: it is 1 where wdl_mask is and
 * the row had all three of win, draw and loss.
 */
typedef struct lc_chess_decoder_out {
    int64_t *input_ids;
    int64_t *target_ids;
    float *wdl_targets;
    uint8_t *wdl_mask; /* 0 or 1: torch.bool */
    uint8_t *wdl_valid;
} lc_chess_decoder_out;

/*
 * A decoder sample builder: its parameters and the per-game scratch (which
 * grows to the longest game seen and is then reused). One per thread.
 */
typedef struct lc_chess_decoder lc_chess_decoder;

/* max_seq_len >= 1 (0 means the default 256); skip_board_prob in [0, 1].
 * Returns NULL (with err filled, LC_ECONFIG) for values outside those. */
lc_chess_decoder *lc_chess_decoder_new(size_t max_seq_len, double skip_board_prob, lc_error *err);
void lc_chess_decoder_free(lc_chess_decoder *d);
/* Map standard UCI spellings of moves (lc_chess_uci_move_id) before the
 * lookup; off by default (the moves as written). */
void lc_chess_decoder_set_uci(lc_chess_decoder *d, bool on);
size_t lc_chess_decoder_max_seq_len(const lc_chess_decoder *d);

/*
 * One sample from a game: rows sorted by ply (the caller sorts), n >= 1.
 *
 * The whole sequence is: for each row, the 68 tokens of its FEN (always for
 * the first row, for later rows when lc_rng_double >= skip_board_prob, one
 * draw per later row in row order), then the played move's token. The start
 * is drawn next (one lc_rng_below) from 0 and the index just after each
 * move but the last. From there input_ids holds L tokens, padded with pad.
 * target_ids[i] = input_ids[i + 1] for i < L - 1 and target_ids[L - 1] = 0;
 * then for each move whose index m relative to the start has 1 <= m < L,
 * target_ids[m - 1] is its best move, wdl_targets[m - 1] its (win, draw,
 * loss) with nulls as 0 and wdl_mask[m - 1] = 1, whether or not all three
 * were present. Everything else of wdl_targets and wdl_mask is 0.
 *
 * Every row is checked whether or not its tokens land in the window, so that
 * whether a game is valid does not depend on the random draws: a played or
 * best move outside the vocabulary is LC_CHESS_EOOV, a malformed FEN
 * LC_EFORMAT; the caller skips the game and counts it.
 */
int lc_chess_decoder_sample(lc_chess_decoder *d, const lc_chess_row *rows, size_t n, lc_rng *rng,
                            const lc_chess_decoder_out *out, lc_error *err);

/*
 * One encoder sample: input_ids = the FEN's 68 tokens, attention_mask = 68
 * ones, *target = the best move's id (with uci, through
 * lc_chess_uci_move_id). A best move outside the vocabulary is
 * LC_CHESS_EOOV (skip the position and count it); a malformed FEN is
 * LC_EFORMAT. Safe to call from any thread.
 */
int lc_chess_encoder_sample(const char *fen, size_t fen_len, const char *best, size_t best_len,
                            bool uci, int64_t input_ids[LC_CHESS_POS_TOKENS],
                            int64_t attention_mask[LC_CHESS_POS_TOKENS], int64_t *target,
                            lc_error *err);

#endif
