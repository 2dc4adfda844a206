/*
 * fuzz_chess: FEN and UCI strings from any Parquet writer, into tokens.
 *
 * Input: one byte of options (UCI spellings on or off, the sequence length,
 * the board-skip probability), then a game as lines "fen|played|best" (a
 * missing field is a null value). Each row's FEN and moves are tokenised
 * alone, each row makes an encoder sample, and the whole game a decoder
 * sample, drawn twice with different seeds.
 *
 * Invariants: every token is inside the vocabulary and of the kind its
 * place calls for (squares hold pieces or empty, the castling and side
 * tokens theirs, targets are moves); a move id names itself back; the
 * decoder's verdict does not depend on the random draws, and its window is
 * the input shifted by one; nothing is read past a string's length (the
 * strings point into the input and are not NUL-terminated).
 */
#include "fuzz.h"

#include "format/chess/chess_tokens.h"
#include "format/chess/chess_vocab.h"

#include <math.h>
#include <string.h>

#define MAX_ROWS 64

static void check_position(const int64_t *t)
{
    FUZZ_CHECK(t[0] == LC_TOK_START_POS && t[65] == LC_TOK_END_POS);
    for (int i = 1; i <= 64; i++)
        FUZZ_CHECK((t[i] >= LC_TOK_WHITE_KING && t[i] <= LC_TOK_BLACK_PAWN) ||
                   t[i] == LC_TOK_EMPTY);
    FUZZ_CHECK(t[66] >= LC_TOK_CASTLING_FIRST && t[66] <= LC_TOK_NO_CASTLING);
    FUZZ_CHECK(t[67] == LC_TOK_WHITE_TO_MOVE || t[67] == LC_TOK_BLACK_TO_MOVE);
}

static void check_move(const char *s, size_t len, const char *fen, size_t fen_len)
{
    int id = lc_chess_move_id(s, len);
    if (id != LC_CHESS_EOOV) {
        FUZZ_CHECK(id >= 0 && id < LC_CHESS_N_MOVES);
        const char *name = lc_chess_token_name(id);
        FUZZ_CHECK(name && strlen(name) == len && memcmp(name, s, len) == 0);
        FUZZ_CHECK(lc_chess_token_id(s, len) == id);
    }
    int uci = lc_chess_uci_move_id(fen, fen_len, s, len);
    FUZZ_CHECK(uci == LC_CHESS_EOOV || (uci >= 0 && uci < LC_CHESS_N_MOVES));
    int any = lc_chess_token_id(s, len);
    FUZZ_CHECK(any == LC_CHESS_EOOV || (any >= 0 && any < LC_CHESS_VOCAB_SIZE));
    if (any != LC_CHESS_EOOV)
        FUZZ_CHECK(lc_chess_token_name(any) != NULL);
}

/* The next field of a line, up to '|' or the line's end; NULL for an empty
 * field (a null value). */
static const char *field(const char **p, const char *end, size_t *len)
{
    const char *s = *p, *q = s;
    while (q < end && *q != '|')
        q++;
    *len = (size_t)(q - s);
    *p = q < end ? q + 1 : end;
    return *len ? s : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t opt = data[0];
    bool uci = opt & 1;
    size_t max_seq = (size_t)1 + ((opt >> 1) & 7) * 37; /* 1 .. 260 */
    double skip = ((opt >> 4) & 3) / 3.0;

    static lc_chess_row rows[MAX_ROWS];
    size_t n = 0;
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    while (p < end && n < MAX_ROWS) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        lc_chess_row *r = &rows[n++];
        memset(r, 0, sizeof *r);
        r->fen = field(&p, eol, &r->fen_len);
        r->played = field(&p, eol, &r->played_len);
        r->best = field(&p, eol, &r->best_len);
        r->win = 0.25 * (double)(n % 5);
        r->draw = 0.5;
        r->loss = 1.0 - r->win;
        r->has_win = r->has_draw = true;
        r->has_loss = n % 3 != 0;
        p = eol < end ? eol + 1 : end;
    }

    int64_t pos[LC_CHESS_POS_TOKENS], ids[LC_CHESS_POS_TOKENS], mask[LC_CHESS_POS_TOKENS];
    for (size_t i = 0; i < n; i++) {
        const lc_chess_row *r = &rows[i];
        lc_error err = {0};
        bool fen_ok = r->fen && lc_chess_fen_tokens(r->fen, r->fen_len, pos, &err) == 0;
        if (fen_ok)
            check_position(pos);
        else if (r->fen)
            FUZZ_CHECK(err.msg[0] != '\0');
        if (r->played)
            check_move(r->played, r->played_len, r->fen, r->fen_len);
        if (r->best)
            check_move(r->best, r->best_len, r->fen, r->fen_len);
        if (!r->fen || !r->best)
            continue;
        int64_t target = -1;
        err = (lc_error){0};
        int rc = lc_chess_encoder_sample(r->fen, r->fen_len, r->best, r->best_len, uci, ids, mask,
                                         &target, &err);
        if (rc == 0) {
            FUZZ_CHECK(fen_ok);
            FUZZ_CHECK(memcmp(ids, pos, sizeof pos) == 0);
            for (int k = 0; k < LC_CHESS_POS_TOKENS; k++)
                FUZZ_CHECK(mask[k] == 1);
            FUZZ_CHECK(target >= 0 && target < LC_CHESS_N_MOVES);
        } else {
            FUZZ_CHECK(rc == LC_CHESS_EOOV || rc == LC_EFORMAT);
            FUZZ_CHECK(rc != LC_EFORMAT || !fen_ok);
        }
    }
    if (n == 0)
        return 0;

    lc_error err = {0};
    lc_chess_decoder *d = lc_chess_decoder_new(max_seq, skip, &err);
    FUZZ_CHECK(d != NULL);
    lc_chess_decoder_set_uci(d, uci);
    size_t L = lc_chess_decoder_max_seq_len(d);
    FUZZ_CHECK(L == max_seq);
    int64_t *in_ids = malloc(L * sizeof *in_ids), *tgt = malloc(L * sizeof *tgt);
    float *wdl = malloc(3 * L * sizeof *wdl);
    uint8_t *wmask = malloc(L), *wvalid = malloc(L);
    lc_chess_decoder_out out = {in_ids, tgt, wdl, wmask, wvalid};
    int verdict = 1;
    for (uint64_t seed = 1; seed <= 2; seed++) {
        lc_rng rng;
        lc_rng_seed(&rng, seed, 7);
        err = (lc_error){0};
        int rc = lc_chess_decoder_sample(d, rows, n, &rng, &out, &err);
        if (verdict != 1)
            FUZZ_CHECK(rc == verdict);
        verdict = rc;
        if (rc < 0) {
            FUZZ_CHECK(rc == LC_CHESS_EOOV || rc == LC_EFORMAT || rc == LC_EEMPTY);
            FUZZ_CHECK(err.msg[0] != '\0');
            continue;
        }
        for (size_t i = 0; i < L; i++) {
            FUZZ_CHECK(in_ids[i] >= 0 && in_ids[i] < LC_CHESS_VOCAB_SIZE);
            FUZZ_CHECK(tgt[i] >= 0 && tgt[i] < LC_CHESS_VOCAB_SIZE);
            FUZZ_CHECK(wmask[i] <= 1 && wvalid[i] <= wmask[i]);
            if (!wmask[i]) {
                FUZZ_CHECK(i + 1 == L ? tgt[i] == 0 : tgt[i] == in_ids[i + 1]);
                FUZZ_CHECK(wdl[3 * i] == 0 && wdl[3 * i + 1] == 0 && wdl[3 * i + 2] == 0);
            } else {
                FUZZ_CHECK(tgt[i] < LC_CHESS_N_MOVES);
                for (int k = 0; k < 3; k++)
                    FUZZ_CHECK(isfinite(wdl[3 * i + k]));
            }
        }
    }
    free(in_ids);
    free(tgt);
    free(wdl);
    free(wmask);
    free(wvalid);
    lc_chess_decoder_free(d);
    return 0;
}
