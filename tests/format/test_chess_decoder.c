/*
 * test_chess_decoder: the chess-transformer decoder's samples against
 * docs/chess-transformer-data.md: hand-built games, its errors, and a
 * straightforward model of the decoder steps (build the whole sequence,
 * slice, pad, shift, override) compared with the windowed builder over
 * many seeds, random starts included.
 */
#include "check.h"
#include "chess_test.h"

#include "core/rng.h"

/* ---- decoder ---- */

#define MAX_L 1100

typedef struct sample {
    int64_t in[MAX_L], tg[MAX_L];
    float wdl[3 * MAX_L];
    uint8_t mask[MAX_L], valid[MAX_L];
} sample;

static lc_chess_row row_of(const char *fen, const char *played, const char *best, double w,
                           double d, double l, int present /* bits: 1 w, 2 d, 4 l */)
{
    lc_chess_row r = {
        .fen = fen,
        .fen_len = strlen(fen),
        .played = played,
        .played_len = strlen(played),
        .best = best,
        .best_len = strlen(best),
        .win = w,
        .draw = d,
        .loss = l,
        .has_win = present & 1,
        .has_draw = (present & 2) != 0,
        .has_loss = (present & 4) != 0,
    };
    return r;
}

static const char *const game_fens[4] = {
    START_FEN,
    "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1",
    "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2",
    "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2",
};

static void small_game(lc_chess_row rows[4])
{
    rows[0] = row_of(game_fens[0], "e2e4", "d2d4", 0.3, 0.4, 0.3, 7);
    rows[1] = row_of(game_fens[1], "e7e5", "c7c5", 0.2, 0.0, 0.5, 5); /* draw is null */
    rows[2] = row_of(game_fens[2], "g1f3", "g1f3", 0.35, 0.4, 0.25, 7);
    rows[3] = row_of(game_fens[3], "b8c6", "g8f6", 0.1, 0.8, 0.1, 7);
}

static int sample_of(lc_chess_decoder *d, const lc_chess_row *rows, size_t n, uint64_t seed,
                     sample *s, lc_error *err)
{
    lc_rng r;
    lc_rng_seed(&r, seed, 1);
    memset(s, 0xab, sizeof *s);
    lc_chess_decoder_out out = {s->in, s->tg, s->wdl, s->mask, s->valid};
    return lc_chess_decoder_sample(d, rows, n, &r, &out, err);
}

/*
 * The doc's steps, literally: the whole sequence, the list of valid starts,
 * slice, pad or truncate, shift, override. The random draws are made in the
 * order the header documents. Returns the start.
 */
static size_t model_sample(const lc_chess_row *rows, size_t n, size_t L, double p, uint64_t seed,
                           sample *s)
{
    lc_rng r;
    lc_rng_seed(&r, seed, 1);
    static int64_t seq[69 * 512];
    size_t len = 0, midx[512];
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || lc_rng_double(&r) >= p) {
            lc_chess_fen_tokens(rows[i].fen, rows[i].fen_len, seq + len, NULL);
            len += 68;
        }
        midx[i] = len;
        seq[len++] = lc_chess_move_id(rows[i].played, rows[i].played_len);
    }
    size_t starts[512];
    starts[0] = 0;
    for (size_t i = 0; i + 1 < n; i++)
        starts[i + 1] = midx[i] + 1;
    size_t start = starts[lc_rng_below(&r, n)];
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < L; i++)
        s->in[i] = start + i < len ? seq[start + i] : LC_TOK_PAD;
    for (size_t i = 0; i + 1 < L; i++)
        s->tg[i] = s->in[i + 1];
    s->tg[L - 1] = 0;
    for (size_t i = 0; i < n; i++) {
        long adj = (long)midx[i] - (long)start;
        if (adj >= 0 && adj < (long)L && adj - 1 >= 0) {
            size_t t = (size_t)adj - 1;
            s->tg[t] = lc_chess_move_id(rows[i].best, rows[i].best_len);
            s->wdl[3 * t] = rows[i].has_win ? (float)rows[i].win : 0;
            s->wdl[3 * t + 1] = rows[i].has_draw ? (float)rows[i].draw : 0;
            s->wdl[3 * t + 2] = rows[i].has_loss ? (float)rows[i].loss : 0;
            s->mask[t] = 1;
            s->valid[t] = rows[i].has_win && rows[i].has_draw && rows[i].has_loss;
        }
    }
    return start;
}

static int same_sample(const sample *a, const sample *b, size_t L)
{
    return memcmp(a->in, b->in, L * sizeof *a->in) == 0 &&
           memcmp(a->tg, b->tg, L * sizeof *a->tg) == 0 &&
           memcmp(a->wdl, b->wdl, 3 * L * sizeof *a->wdl) == 0 &&
           memcmp(a->mask, b->mask, L) == 0 && memcmp(a->valid, b->valid, L) == 0;
}

/* Which start a sample has, from a model run with the same seed. */
static size_t start_of(const lc_chess_row *rows, size_t n, size_t L, double p, uint64_t seed)
{
    static sample m;
    return model_sample(rows, n, L, p, seed, &m);
}

static uint64_t seed_with_start(const lc_chess_row *rows, size_t n, size_t L, double p, size_t want)
{
    for (uint64_t seed = 1; seed < 100000; seed++)
        if (start_of(rows, n, L, p, seed) == want)
            return seed;
    return 0;
}

static void test_decoder_hand(void)
{
    static sample s;
    lc_chess_row rows[4];
    small_game(rows);
    lc_error err;
    lc_chess_decoder *d = lc_chess_decoder_new(0, 0.0, &err);
    CHECK(d != NULL);
    CHECK_EQ_INT(lc_chess_decoder_max_seq_len(d), 256);
    int64_t b0[68], b1[68], b3[68];
    fen_tokens(game_fens[0], b0, NULL);
    fen_tokens(game_fens[1], b1, NULL);
    fen_tokens(game_fens[3], b3, NULL);

    /* One row: start 0, board, move, pad. */
    CHECK_OK(sample_of(d, rows, 1, 3, &s, &err));
    CHECK(memcmp(s.in, b0, sizeof b0) == 0);
    CHECK_EQ_INT(s.in[68], 322);
    CHECK_EQ_INT(s.in[69], LC_TOK_PAD);
    CHECK_EQ_INT(s.in[255], LC_TOK_PAD);
    for (int i = 0; i < 66; i++)
        CHECK_EQ_INT(s.tg[i], s.in[i + 1]);
    CHECK_EQ_INT(s.tg[67], move_id("d2d4")); /* the best move, not e2e4 */
    CHECK_EQ_INT(s.tg[68], LC_TOK_PAD);
    CHECK_EQ_INT(s.tg[254], LC_TOK_PAD);
    CHECK_EQ_INT(s.tg[255], 0);
    CHECK_NEAR(s.wdl[3 * 67], 0.3, 1e-6);
    CHECK_NEAR(s.wdl[3 * 67 + 1], 0.4, 1e-6);
    CHECK_NEAR(s.wdl[3 * 67 + 2], 0.3, 1e-6);
    int masked = 0;
    for (int i = 0; i < 256; i++)
        masked += s.mask[i];
    CHECK_EQ_INT(masked, 1);
    CHECK_EQ_INT(s.mask[67], 1);
    CHECK_EQ_INT(s.valid[67], 1);

    /* Four rows, every board (skip 0): 4 * 69 = 276 tokens, truncated to 256. */
    uint64_t seed0 = seed_with_start(rows, 4, 256, 0.0, 0);
    CHECK(seed0 != 0);
    CHECK_OK(sample_of(d, rows, 4, seed0, &s, &err));
    CHECK(memcmp(s.in, b0, sizeof b0) == 0);
    CHECK_EQ_INT(s.in[68], move_id("e2e4"));
    CHECK(memcmp(s.in + 69, b1, sizeof b1) == 0);
    CHECK_EQ_INT(s.in[137], move_id("e7e5"));
    CHECK_EQ_INT(s.in[206], move_id("g1f3"));
    CHECK_EQ_INT(s.in[207], LC_TOK_START_POS);
    CHECK(memcmp(s.in + 207, b3, 49 * sizeof *b3) == 0); /* the fourth board, cut */
    CHECK_EQ_INT(s.tg[67], move_id("d2d4"));
    CHECK_EQ_INT(s.tg[68], LC_TOK_START_POS); /* after a move: the next token */
    CHECK_EQ_INT(s.tg[136], move_id("c7c5"));
    CHECK_EQ_INT(s.tg[205], move_id("g1f3"));
    CHECK_EQ_INT(s.tg[255], 0); /* past the end of the window, even though cut */
    /* Row 1 has a null draw: (w, 0, l), still masked, not valid. */
    CHECK_NEAR(s.wdl[3 * 136], 0.2, 1e-6);
    CHECK_NEAR(s.wdl[3 * 136 + 1], 0.0, 0);
    CHECK_NEAR(s.wdl[3 * 136 + 2], 0.5, 1e-6);
    CHECK_EQ_INT(s.mask[136], 1);
    CHECK_EQ_INT(s.valid[136], 0);
    CHECK_EQ_INT(s.valid[205], 1);
    masked = 0;
    for (int i = 0; i < 256; i++)
        masked += s.mask[i];
    CHECK_EQ_INT(masked, 3); /* the fourth move (index 275) is cut */

    /* The same game, start after e2e4: the window begins at the second board. */
    uint64_t seed69 = seed_with_start(rows, 4, 256, 0.0, 69);
    CHECK(seed69 != 0);
    CHECK_OK(sample_of(d, rows, 4, seed69, &s, &err));
    CHECK(memcmp(s.in, b1, sizeof b1) == 0);
    CHECK_EQ_INT(s.in[68], move_id("e7e5"));
    CHECK_EQ_INT(s.tg[67], move_id("c7c5"));
    CHECK_EQ_INT(s.in[206], move_id("b8c6"));
    CHECK_EQ_INT(s.tg[205], move_id("g8f6"));
    CHECK_EQ_INT(s.in[207], LC_TOK_PAD);
    CHECK_EQ_INT(s.tg[206], LC_TOK_PAD);
    CHECK_EQ_INT(s.tg[255], 0);
    lc_chess_decoder_free(d);

    /* skip_board_prob 1: only the first board; moves follow each other. */
    d = lc_chess_decoder_new(256, 1.0, &err);
    CHECK(d != NULL);
    for (uint64_t seed = 1; seed <= 50; seed++) {
        CHECK_OK(sample_of(d, rows, 4, seed, &s, &err));
        size_t start = start_of(rows, 4, 256, 1.0, seed);
        CHECK(start == 0 || start == 69 || start == 70 || start == 71);
        if (start == 0) {
            CHECK(memcmp(s.in, b0, sizeof b0) == 0);
            CHECK_EQ_INT(s.in[68], move_id("e2e4"));
            CHECK_EQ_INT(s.in[69], move_id("e7e5"));
            CHECK_EQ_INT(s.in[70], move_id("g1f3"));
            CHECK_EQ_INT(s.in[71], move_id("b8c6"));
            CHECK_EQ_INT(s.in[72], LC_TOK_PAD);
            CHECK_EQ_INT(s.tg[67], move_id("d2d4"));
            CHECK_EQ_INT(s.tg[68], move_id("c7c5"));
            CHECK_EQ_INT(s.tg[69], move_id("g1f3"));
            CHECK_EQ_INT(s.tg[70], move_id("g8f6"));
            CHECK_EQ_INT(s.tg[71], LC_TOK_PAD);
            CHECK_EQ_INT(s.mask[67] + s.mask[68] + s.mask[69] + s.mask[70], 4);
        } else if (start == 69) {
            /* The first move of the window has no position before it. */
            CHECK_EQ_INT(s.in[0], move_id("e7e5"));
            CHECK_EQ_INT(s.tg[0], move_id("g1f3"));
            CHECK_EQ_INT(s.tg[1], move_id("g8f6"));
            CHECK_EQ_INT(s.in[3], LC_TOK_PAD);
            CHECK_EQ_INT(s.mask[255], 0);
            int m = 0;
            for (int i = 0; i < 256; i++)
                m += s.mask[i];
            CHECK_EQ_INT(m, 2);
        }
    }
    lc_chess_decoder_free(d);

    /* Truncation at the edges: the second move sits at index 137, its target
     * at 136. With L = 137 the move is cut, and so is its target. */
    for (size_t L = 136; L <= 139; L++) {
        d = lc_chess_decoder_new(L, 0.0, &err);
        uint64_t seed = seed_with_start(rows, 4, L, 0.0, 0);
        CHECK_OK(sample_of(d, rows, 4, seed, &s, &err));
        CHECK_EQ_INT(s.tg[L - 1], 0);
        if (L > 136) {
            CHECK_EQ_INT(s.mask[136], L >= 138);
            CHECK_EQ_INT(s.tg[136], L >= 138 ? move_id("c7c5") : 0);
        }
        if (L > 137)
            CHECK_EQ_INT(s.in[137], move_id("e7e5"));
        CHECK_EQ_INT(s.mask[67], 1);
        lc_chess_decoder_free(d);
    }
    /* L = 1 is legal: one token, target 0. */
    d = lc_chess_decoder_new(1, 0.0, &err);
    CHECK_OK(sample_of(d, rows, 4, 5, &s, &err));
    CHECK_EQ_INT(s.in[0], LC_TOK_START_POS);
    CHECK_EQ_INT(s.tg[0], 0);
    CHECK_EQ_INT(s.mask[0], 0);
    CHECK_EQ_INT(s.in[1], (int64_t)0xabababababababab); /* nothing past L written */
    lc_chess_decoder_free(d);
}

static void test_decoder_errors(void)
{
    static sample s;
    lc_chess_row rows[4];
    lc_error err;
    lc_chess_decoder *d = lc_chess_decoder_new(256, 0.5, &err);

    small_game(rows);
    rows[2].played = "a1a1";
    rows[2].played_len = 4;
    lc_error_clear(&err);
    CHECK_EQ_INT(sample_of(d, rows, 4, 1, &s, &err), LC_CHESS_EOOV);
    CHECK(strstr(err.msg, "row 2") && strstr(err.msg, "played_move") && strstr(err.msg, "a1a1"));

    small_game(rows);
    rows[3].best = "resign";
    rows[3].best_len = 6;
    lc_error_clear(&err);
    CHECK_EQ_INT(sample_of(d, rows, 4, 1, &s, &err), LC_CHESS_EOOV);
    CHECK(strstr(err.msg, "row 3") && strstr(err.msg, "best_move"));

    small_game(rows);
    rows[1].best = NULL; /* a null best move */
    rows[1].best_len = 0;
    CHECK_EQ_INT(sample_of(d, rows, 4, 1, &s, NULL), LC_CHESS_EOOV);

    /* A bad FEN anywhere makes the game invalid, whatever the draws. */
    small_game(rows);
    rows[3].fen = "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R q KQkq - 1 2";
    rows[3].fen_len = strlen(rows[3].fen);
    int all = 1;
    for (uint64_t seed = 0; seed < 200; seed++)
        all &= sample_of(d, rows, 4, seed, &s, NULL) == LC_EFORMAT;
    CHECK(all);
    lc_error_clear(&err);
    CHECK_EQ_INT(sample_of(d, rows, 4, 1, &s, &err), LC_EFORMAT);
    CHECK(strstr(err.msg, "row 3: malformed FEN") != NULL);

    CHECK_EQ_INT(sample_of(d, rows, 0, 1, &s, NULL), LC_EEMPTY);
    lc_chess_decoder_free(d);

    CHECK(lc_chess_decoder_new(256, -0.1, &err) == NULL);
    CHECK_EQ_INT(err.code, LC_ECONFIG);
    CHECK(lc_chess_decoder_new(256, 1.5, NULL) == NULL);
    CHECK(lc_chess_decoder_new(256, 0.0 / 0.0, NULL) == NULL);
    lc_chess_decoder_free(NULL);
}

/* A long game of arbitrary (in-vocabulary) moves, for the randomized checks. */
static size_t long_game(lc_chess_row *rows, size_t n, uint64_t seed)
{
    lc_rng r;
    lc_rng_seed(&r, seed, 99);
    for (size_t i = 0; i < n; i++) {
        const char *played = lc_chess_token_name((int)lc_rng_below(&r, LC_CHESS_N_MOVES));
        const char *best = lc_chess_token_name((int)lc_rng_below(&r, LC_CHESS_N_MOVES));
        int present = (int)lc_rng_below(&r, 8);
        if (lc_rng_below(&r, 2))
            present = 7;
        rows[i] = row_of(game_fens[i % 4], played, best, lc_rng_double(&r), lc_rng_double(&r),
                         lc_rng_double(&r), present);
    }
    return n;
}

static void test_decoder_model(void)
{
    static sample a, b;
    static lc_chess_row rows[300];
    const size_t lens[] = {1, 2, 67, 68, 69, 70, 137, 138, 139, 256, 1024};
    const double probs[] = {0.0, 0.2, 0.5, 0.9, 1.0};
    const size_t games[] = {1, 2, 4, 30, 300};
    int mismatches = 0, runs = 0, bad_start = 0, bad_first = 0;
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        for (size_t pi = 0; pi < sizeof probs / sizeof *probs; pi++) {
            lc_chess_decoder *d = lc_chess_decoder_new(lens[li], probs[pi], NULL);
            for (size_t gi = 0; gi < sizeof games / sizeof *games; gi++) {
                size_t n = long_game(rows, games[gi], gi * 31 + li);
                for (uint64_t seed = 0; seed < 40; seed++) {
                    runs++;
                    if (sample_of(d, rows, n, seed, &a, NULL) != 0) {
                        mismatches++;
                        continue;
                    }
                    model_sample(rows, n, lens[li], probs[pi], seed, &b);
                    if (!same_sample(&a, &b, lens[li])) {
                        if (mismatches++ < 5)
                            fprintf(stderr, "mismatch: L %zu p %g n %zu seed %llu\n", lens[li],
                                    probs[pi], n, (unsigned long long)seed);
                    }
                    /* The window opens on a board or on a move: never mid-board. */
                    int64_t t0 = a.in[0];
                    if (!(t0 == LC_TOK_START_POS || t0 < LC_CHESS_N_MOVES))
                        bad_first++;
                    if (probs[pi] == 0.0 && t0 != LC_TOK_START_POS)
                        bad_start++;
                }
            }
            lc_chess_decoder_free(d);
        }
    }
    CHECK(runs > 2000);
    CHECK_EQ_INT(mismatches, 0);
    CHECK_EQ_INT(bad_first, 0);
    CHECK_EQ_INT(bad_start, 0);
}

/* Over many seeds, only allowed starts occur, and each of them does. */
static void test_random_start(void)
{
    static sample s;
    lc_chess_row rows[4];
    small_game(rows);
    lc_chess_decoder *d = lc_chess_decoder_new(256, 0.0, NULL);
    int seen[4] = {0}, other = 0;
    int64_t boards[4][68];
    for (int i = 0; i < 4; i++)
        fen_tokens(game_fens[i], boards[i], NULL);
    for (uint64_t seed = 0; seed < 4000; seed++) {
        CHECK_OK(sample_of(d, rows, 4, seed, &s, NULL));
        int which = -1;
        for (int i = 0; i < 4; i++)
            if (memcmp(s.in, boards[i], sizeof boards[i]) == 0)
                which = i;
        if (which < 0) {
            other++;
            continue;
        }
        seen[which]++;
        /* The shape: the remaining rows, then pad to 256. */
        size_t used = (size_t)(4 - which) * 69;
        if (used > 256)
            used = 256; /* from the start, the game is cut inside the fourth board */
        else if (s.in[used - 1] != lc_chess_move_id(rows[3].played, 4))
            other++;
        for (size_t i = used; i < 256; i++)
            other += s.in[i] != LC_TOK_PAD;
    }
    CHECK_EQ_INT(other, 0);
    for (int i = 0; i < 4; i++)
        CHECK(seen[i] > 800 && seen[i] < 1200); /* uniform over 4 starts */
    lc_chess_decoder_free(d);

    /* With boards skipped, every start is 0 or just after a move. */
    static lc_chess_row lrows[60];
    size_t n = long_game(lrows, 60, 5);
    d = lc_chess_decoder_new(256, 0.5, NULL);
    int bad = 0;
    for (uint64_t seed = 0; seed < 2000; seed++) {
        CHECK_OK(sample_of(d, lrows, n, seed, &s, NULL));
        /* Recompute the sequence's move indices for this seed. */
        lc_rng r;
        lc_rng_seed(&r, seed, 1);
        size_t pos = 0, idx[60];
        for (size_t i = 0; i < n; i++) {
            if (i == 0 || lc_rng_double(&r) >= 0.5)
                pos += 68;
            idx[i] = pos++;
        }
        size_t start = start_of(lrows, n, 256, 0.5, seed);
        int ok = start == 0;
        for (size_t i = 0; i + 1 < n; i++)
            ok |= start == idx[i] + 1;
        bad += !ok;
    }
    CHECK_EQ_INT(bad, 0);
    lc_chess_decoder_free(d);
}

int main(void)
{
    test_decoder_hand();
    test_decoder_errors();
    test_decoder_model();
    test_random_start();
    return check_finish();
}
