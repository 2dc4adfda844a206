/*
 * chess_tokens: see chess_tokens.h.
 *
 * The FEN parser sets the 64 squares to `empty`, then makes a single pass
 * over the placement that writes each piece's token straight into its slot
 * (a FEN lists rank 8 first, the tokens rank 1 first), then checks the
 * remaining fields; the castling token is read off the squares just written.
 * No allocation, no library calls.
 *
 * A decoder sample is built in two passes over the rows. The first makes the
 * random board draws, looks up both moves of every row and records each
 * move's index in the whole sequence, so that the start can be drawn without
 * materialising the sequence. The second writes only the tokens that fall
 * into the window [start, start + L) straight into the caller's row; it still
 * parses every FEN, inside the window or not, so that a malformed one makes
 * the game invalid whatever the draws were.
 */
#include "format/chess/chess_tokens.h"

#include <stdlib.h>
#include <string.h>

/*
 * What a placement character puts on the board: the token of its first
 * square (a piece, or `empty` for a digit) and how many files it covers; 0
 * files for anything else ('/' included). Every square is first set to
 * `empty`, so a digit's run needs no more stores than its first, which lets
 * pieces and digits share one branch-free path.
 */
typedef struct place_char {
    int16_t tok;
    int8_t files;
    int8_t digit;
} place_char;

/* clang-format off */
#define PIECE(t) {.tok = (t), .files = 1}
#define DIGIT(n) {.tok = LC_TOK_EMPTY, .files = (n), .digit = 1}
static const place_char place_table[256] = {
    ['K'] = PIECE(LC_TOK_WHITE_KING),   ['Q'] = PIECE(LC_TOK_WHITE_QUEEN),
    ['R'] = PIECE(LC_TOK_WHITE_ROOK),   ['B'] = PIECE(LC_TOK_WHITE_BISHOP),
    ['N'] = PIECE(LC_TOK_WHITE_KNIGHT), ['P'] = PIECE(LC_TOK_WHITE_PAWN),
    ['k'] = PIECE(LC_TOK_BLACK_KING),   ['q'] = PIECE(LC_TOK_BLACK_QUEEN),
    ['r'] = PIECE(LC_TOK_BLACK_ROOK),   ['b'] = PIECE(LC_TOK_BLACK_BISHOP),
    ['n'] = PIECE(LC_TOK_BLACK_KNIGHT), ['p'] = PIECE(LC_TOK_BLACK_PAWN),
    ['1'] = DIGIT(1), ['2'] = DIGIT(2), ['3'] = DIGIT(3), ['4'] = DIGIT(4),
    ['5'] = DIGIT(5), ['6'] = DIGIT(6), ['7'] = DIGIT(7), ['8'] = DIGIT(8),
};
#undef PIECE
#undef DIGIT
/* clang-format on */

/* How much of a bad string an error message quotes. */
#define QUOTE_MAX 120

static inline int is_blank(unsigned c)
{
    return c == ' ' || c == '\t';
}

static int fen_error(lc_error *err, const char *fen, size_t len, size_t at, const char *what)
{
    int shown = len > QUOTE_MAX ? QUOTE_MAX : (int)len;
    return lc_error_set(err, LC_EFORMAT, "malformed FEN \"%.*s%s\" at offset %zu: %s", shown, fen,
                        len > QUOTE_MAX ? "..." : "", at, what);
}

/* Skip the blanks at *pos; leave *pos at the next field and return its
 * length (0 when the string ends first). */
static size_t next_field(const unsigned char *s, size_t len, size_t *pos)
{
    size_t i = *pos;
    while (i < len && is_blank(s[i]))
        i++;
    size_t start = i;
    while (i < len && !is_blank(s[i]))
        i++;
    *pos = start;
    return i - start;
}

static int all_digits(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* The steps of lc_chess_fen_tokens below are forced inline: as calls they
 * cost the tokenizer 12% (lcmon_bench chess, fen_ns, side by side). */

/* Placement: ranks 8 down to 1, files a to h, into sq (a1 first); *i moves
 * to the blank after it. The loop over pieces and digits has no checks but
 * the end of the string: a rank's count of files and doubled digits are
 * checked where the rank ends, and until then a store stays inside the rank
 * (file & 7) however long it is. */
static inline __attribute__((always_inline)) int
fen_placement(const char *fen, size_t len, size_t *pos, int64_t *sq, lc_error *err)
{
    const unsigned char *s = (const unsigned char *)fen;
    size_t i = *pos;
    for (int k = 0; k < 64; k++)
        sq[k] = LC_TOK_EMPTY;
    int64_t *rank_sq = sq + 56;
    size_t file = 0;
    int rank = 7, prev_digit = 0, two_digits = 0;
    for (;; i++) {
        if (i == len)
            return fen_error(err, fen, len, i, "no side to move after the placement");
        place_char pc = place_table[s[i]];
        if (pc.files) {
            rank_sq[file & 7] = pc.tok;
            file += (size_t)pc.files;
            two_digits |= pc.digit & prev_digit;
            prev_digit = pc.digit;
            continue;
        }
        int slash = s[i] == '/';
        if (!slash && !is_blank(s[i]))
            return fen_error(err, fen, len, i, "unexpected character in the placement");
        if (file != 8 || two_digits)
            return fen_error(err, fen, len, i,
                             file > 8   ? "more than 8 files in a rank"
                             : file < 8 ? "a rank with fewer than 8 files"
                                        : "two digits in a row");
        if (!slash)
            break;
        if (rank == 0)
            return fen_error(err, fen, len, i, "more than 8 ranks");
        rank--;
        rank_sq -= 8;
        file = 0;
        prev_digit = 0;
    }
    if (rank != 0)
        return fen_error(err, fen, len, i, "fewer than 8 ranks");
    *pos = i;
    return 0;
}

/* The castling rights the FEN grants (absent means none) into *granted. */
static inline __attribute__((always_inline)) int
fen_castling(const char *fen, size_t len, size_t *pos, unsigned *granted, lc_error *err)
{
    const unsigned char *s = (const unsigned char *)fen;
    size_t i = *pos;
    size_t n = next_field(s, len, &i);
    *granted = 0;
    if (n && !(n == 1 && s[i] == '-')) {
        for (size_t k = 0; k < n; k++) {
            unsigned bit = s[i + k] == 'K'   ? LC_CASTLE_K
                           : s[i + k] == 'Q' ? LC_CASTLE_Q
                           : s[i + k] == 'k' ? LC_CASTLE_k
                           : s[i + k] == 'q' ? LC_CASTLE_q
                                             : 0;
            if (!bit)
                return fen_error(err, fen, len, i + k, "castling field is not - or KQkq");
            if (*granted & bit)
                return fen_error(err, fen, len, i + k, "castling right given twice");
            *granted |= bit;
        }
    }
    *pos = i + n;
    return 0;
}

/* En passant, the two clocks and nothing after them: checked, not
 * tokenized. */
static inline __attribute__((always_inline)) int fen_rest(const char *fen, size_t len, size_t i,
                                                          lc_error *err)
{
    const unsigned char *s = (const unsigned char *)fen;
    size_t n = next_field(s, len, &i);
    if (n && !(n == 1 && s[i] == '-') &&
        !(n == 2 && s[i] >= 'a' && s[i] <= 'h' && s[i + 1] >= '1' && s[i + 1] <= '8'))
        return fen_error(err, fen, len, i, "en-passant field is not - or a square");
    i += n;
    for (int clock = 0; clock < 2; clock++) {
        n = next_field(s, len, &i);
        if (!all_digits(s + i, n))
            return fen_error(err, fen, len, i, "move clock is not a number");
        i += n;
    }
    n = next_field(s, len, &i);
    if (n)
        return fen_error(err, fen, len, i, "text after the fullmove number");
    return 0;
}

/* A right counts only while the king and that rook are at home. */
static inline __attribute__((always_inline)) unsigned castling_at_home(const int64_t *sq,
                                                                       unsigned granted)
{
    unsigned rights = 0;
    if (sq[4] == LC_TOK_WHITE_KING) {
        if ((granted & LC_CASTLE_K) && sq[7] == LC_TOK_WHITE_ROOK)
            rights |= LC_CASTLE_K;
        if ((granted & LC_CASTLE_Q) && sq[0] == LC_TOK_WHITE_ROOK)
            rights |= LC_CASTLE_Q;
    }
    if (sq[60] == LC_TOK_BLACK_KING) {
        if ((granted & LC_CASTLE_k) && sq[63] == LC_TOK_BLACK_ROOK)
            rights |= LC_CASTLE_k;
        if ((granted & LC_CASTLE_q) && sq[56] == LC_TOK_BLACK_ROOK)
            rights |= LC_CASTLE_q;
    }
    return rights;
}

int lc_chess_fen_tokens(const char *fen, size_t len, int64_t out[LC_CHESS_POS_TOKENS],
                        lc_error *err)
{
    const unsigned char *s = (const unsigned char *)fen;
    int64_t *sq = out + 1;
    size_t i = 0;
    while (i < len && is_blank(s[i]))
        i++;
    int rc = fen_placement(fen, len, &i, sq, err);
    if (rc)
        return rc;
    size_t n = next_field(s, len, &i); /* the side to move */
    if (n != 1 || (s[i] != 'w' && s[i] != 'b'))
        return fen_error(err, fen, len, i, "side to move is not w or b");
    int64_t side = s[i] == 'w' ? LC_TOK_WHITE_TO_MOVE : LC_TOK_BLACK_TO_MOVE;
    i += n;
    unsigned granted;
    if ((rc = fen_castling(fen, len, &i, &granted, err)) != 0 ||
        (rc = fen_rest(fen, len, i, err)) != 0)
        return rc;
    out[0] = LC_TOK_START_POS;
    out[65] = LC_TOK_END_POS;
    out[66] = lc_chess_castling_token(castling_at_home(sq, granted));
    out[67] = side;
    return 0;
}

/* ---- decoder samples ---- */

typedef struct move_rec {
    size_t idx; /* index of the move token in the whole sequence */
    int16_t played, best;
    uint8_t board; /* the row's 68 board tokens precede the move */
    uint8_t valid; /* win, draw and loss all present */
    float w, d, l;
} move_rec;

struct lc_chess_decoder {
    size_t max_seq_len;
    double skip_board_prob;
    bool uci; /* map standard UCI spellings (lc_chess_uci_move_id) */
    move_rec *moves;
    size_t cap;
};

lc_chess_decoder *lc_chess_decoder_new(size_t max_seq_len, double skip_board_prob, lc_error *err)
{
    if (max_seq_len == 0)
        max_seq_len = LC_CHESS_DEFAULT_MAX_SEQ_LEN;
    if (!(skip_board_prob >= 0.0 && skip_board_prob <= 1.0)) {
        lc_error_set(err, LC_ECONFIG, "skip_board_prob %g is not in [0, 1]", skip_board_prob);
        return NULL;
    }
    if (max_seq_len > (size_t)1 << 30) {
        lc_error_set(err, LC_ECONFIG, "max_seq_len %zu is too large", max_seq_len);
        return NULL;
    }
    lc_chess_decoder *d = lc_xcalloc(1, sizeof *d);
    d->max_seq_len = max_seq_len;
    d->skip_board_prob = skip_board_prob;
    return d;
}

void lc_chess_decoder_free(lc_chess_decoder *d)
{
    if (!d)
        return;
    free(d->moves);
    free(d);
}

size_t lc_chess_decoder_max_seq_len(const lc_chess_decoder *d)
{
    return d->max_seq_len;
}

static int move_error(lc_error *err, const char *column, const char *s, size_t len)
{
    int shown = s ? (len > 32 ? 32 : (int)len) : 0;
    return lc_error_set(err, LC_CHESS_EOOV, "%s \"%.*s%s\" is not in the vocabulary", column, shown,
                        s ? s : "", shown < (int)len ? "..." : "");
}

/* Name the row (its place in ply order) in an error already set; returns rc. */
static int row_error(lc_error *err, size_t row, int rc)
{
    if (err)
        lc_error_prefix(err, "row %zu: ", row);
    return rc;
}

/* Copy the part of seq[0..n) that sits at sequence index at into the window
 * [start, start + L) of out. */
static void put_window(int64_t *out, size_t start, size_t L, size_t at, const int64_t *seq,
                       size_t n)
{
    size_t lo = at > start ? at : start, hi = at + n < start + L ? at + n : start + L;
    if (lo < hi)
        memcpy(out + (lo - start), seq + (lo - at), (hi - lo) * sizeof *out);
}

static int move_id(bool uci, const char *fen, size_t fen_len, const char *s, size_t len)
{
    return uci ? lc_chess_uci_move_id(fen, fen_len, s, len) : lc_chess_move_id(s, len);
}

void lc_chess_decoder_set_uci(lc_chess_decoder *d, bool on)
{
    d->uci = on;
}

int lc_chess_decoder_sample(lc_chess_decoder *d, const lc_chess_row *rows, size_t n, lc_rng *rng,
                            const lc_chess_decoder_out *out, lc_error *err)
{
    if (n == 0)
        return lc_error_set(err, LC_EEMPTY, "a game without rows");
    if (n > d->cap) {
        size_t cap = d->cap ? d->cap : 64;
        while (cap < n)
            cap *= 2;
        d->moves = lc_xrealloc(d->moves, cap * sizeof *d->moves);
        d->cap = cap;
    }

    /* Pass 1: board draws, move ids, move indices. */
    size_t pos = 0;
    for (size_t r = 0; r < n; r++) {
        const lc_chess_row *row = &rows[r];
        move_rec *m = &d->moves[r];
        int played = move_id(d->uci, row->fen, row->fen ? row->fen_len : 0, row->played,
                             row->played ? row->played_len : 0);
        if (played < 0)
            return row_error(err, r, move_error(err, "played_move", row->played, row->played_len));
        int best = move_id(d->uci, row->fen, row->fen ? row->fen_len : 0, row->best,
                           row->best ? row->best_len : 0);
        if (best < 0)
            return row_error(err, r, move_error(err, "best_move", row->best, row->best_len));
        m->board = r == 0 || lc_rng_double(rng) >= d->skip_board_prob;
        if (m->board)
            pos += LC_CHESS_POS_TOKENS;
        m->idx = pos++;
        m->played = (int16_t)played;
        m->best = (int16_t)best;
        m->w = row->has_win ? (float)row->win : 0.0f;
        m->d = row->has_draw ? (float)row->draw : 0.0f;
        m->l = row->has_loss ? (float)row->loss : 0.0f;
        m->valid = row->has_win && row->has_draw && row->has_loss;
    }
    size_t total = pos;

    /* The start: 0, or just after any move but the last. */
    uint64_t k = lc_rng_below(rng, n);
    size_t start = k == 0 ? 0 : d->moves[k - 1].idx + 1;
    size_t L = d->max_seq_len, end = start + L;

    /* Pass 2: tokens inside the window; every FEN is checked. */
    int64_t *in = out->input_ids;
    for (size_t r = 0; r < n; r++) {
        const move_rec *m = &d->moves[r];
        size_t at = m->idx - LC_CHESS_POS_TOKENS;
        int64_t board[LC_CHESS_POS_TOKENS];
        int64_t *dst = board;
        if (m->board && at >= start && m->idx <= end)
            dst = in + (at - start); /* wholly inside: parse in place */
        int rc = lc_chess_fen_tokens(rows[r].fen, rows[r].fen ? rows[r].fen_len : 0, dst, err);
        if (rc < 0)
            return row_error(err, r, rc);
        if (m->board && dst == board)
            put_window(in, start, L, at, board, LC_CHESS_POS_TOKENS);
        if (m->idx >= start && m->idx < end)
            in[m->idx - start] = m->played;
    }
    for (size_t i = total - start; i < L; i++)
        in[i] = LC_TOK_PAD;

    /* Targets: the next token, then the best move before each move. */
    memcpy(out->target_ids, in + 1, (L - 1) * sizeof *in);
    out->target_ids[L - 1] = 0;
    memset(out->wdl_targets, 0, 3 * L * sizeof *out->wdl_targets);
    memset(out->wdl_mask, 0, L);
    if (out->wdl_valid)
        memset(out->wdl_valid, 0, L);
    for (size_t r = 0; r < n; r++) {
        const move_rec *m = &d->moves[r];
        if (m->idx <= start)
            continue; /* before the window, or its first token: no position before it */
        if (m->idx >= end)
            break;
        size_t t = m->idx - start - 1;
        out->target_ids[t] = m->best;
        out->wdl_targets[3 * t] = m->w;
        out->wdl_targets[3 * t + 1] = m->d;
        out->wdl_targets[3 * t + 2] = m->l;
        out->wdl_mask[t] = 1;
        if (out->wdl_valid)
            out->wdl_valid[t] = m->valid;
    }
    return 0;
}

/* ---- encoder samples ---- */

int lc_chess_encoder_sample(const char *fen, size_t fen_len, const char *best, size_t best_len,
                            bool uci, int64_t input_ids[LC_CHESS_POS_TOKENS],
                            int64_t attention_mask[LC_CHESS_POS_TOKENS], int64_t *target,
                            lc_error *err)
{
    int id = move_id(uci, fen, fen ? fen_len : 0, best, best ? best_len : 0);
    if (id < 0)
        return move_error(err, "best_move", best, best_len);
    int rc = lc_chess_fen_tokens(fen, fen ? fen_len : 0, input_ids, err);
    if (rc < 0)
        return rc;
    for (int i = 0; i < LC_CHESS_POS_TOKENS; i++)
        attention_mask[i] = 1;
    *target = id;
    return 0;
}
