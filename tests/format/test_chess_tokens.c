/*
 * test_chess_tokens: the chess-transformer vocabulary, FEN tokens and
 * encoder samples against docs/chess-transformer-data.md: its check values
 * and hand-built positions. The decoder: test_chess_decoder.c.
 */
#include "check.h"
#include "chess_test.h"

#include "core/rng.h"
#include "format/chess/chess_tokens.h"
#include "format/chess/chess_vocab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- vocabulary ---- */

static void test_check_values(void)
{
    CHECK_EQ_INT(move_id("e2e4"), 322);
    CHECK_EQ_INT(move_id("g1f3"), 159);
    CHECK_EQ_INT(move_id("a7a8"), 1401);
    CHECK_EQ_INT(move_id("a7a8q"), 1792);
    CHECK_EQ_INT(move_id("h2h1b"), 1923);
    CHECK_EQ_INT(move_id("e1h1"), 103);
    CHECK_EQ_INT(move_id("e8a8"), 1713);
    CHECK_EQ_INT(LC_TOK_PAD, 1941);
    CHECK_EQ_STR(lc_chess_token_name(1941), "pad");
    CHECK_EQ_STR(lc_chess_token_name(0), "a1b1");
    CHECK_EQ_STR(lc_chess_token_name(1791), "h8g8");
    CHECK_EQ_STR(lc_chess_token_name(1924), "white_king");
    CHECK_EQ_STR(lc_chess_token_name(1929), "white_pawn");
    CHECK_EQ_STR(lc_chess_token_name(1930), "black_king");
    CHECK_EQ_STR(lc_chess_token_name(1935), "black_pawn");
    CHECK_EQ_STR(lc_chess_token_name(1936), "start_pos");
    CHECK_EQ_STR(lc_chess_token_name(1937), "end_pos");
    CHECK_EQ_STR(lc_chess_token_name(1938), "white_to_move");
    CHECK_EQ_STR(lc_chess_token_name(1939), "black_to_move");
    CHECK_EQ_STR(lc_chess_token_name(1940), "empty");
    CHECK_EQ_STR(lc_chess_token_name(1942), "bos");
    CHECK_EQ_STR(lc_chess_token_name(1943), "eos");
    CHECK_EQ_STR(lc_chess_token_name(1944), "K");
    CHECK_EQ_STR(lc_chess_token_name(1958), "KQkq");
    CHECK_EQ_STR(lc_chess_token_name(1959), "no_castling_rights");
    CHECK(lc_chess_token_name(-1) == NULL);
    CHECK(lc_chess_token_name(1960) == NULL);
}

static int square_of(const char *s)
{
    return (s[1] - '1') * 8 + (s[0] - 'a');
}

/* The plain moves, re-derived from the rule; then the promotion blocks. */
static void test_move_table(void)
{
    int prev_from = -1, prev_to = -1, bad_rule = 0, bad_order = 0, bad_len = 0;
    for (int id = 0; id < LC_CHESS_N_PLAIN_MOVES; id++) {
        const char *n = lc_chess_token_name(id);
        if (strlen(n) != 4) {
            bad_len++;
            continue;
        }
        int from = square_of(n), to = square_of(n + 2);
        int df = abs(from % 8 - to % 8), dr = abs(from / 8 - to / 8);
        int line = from != to && (df == 0 || dr == 0 || df == dr);
        int knight = (df == 1 && dr == 2) || (df == 2 && dr == 1);
        if (!line && !knight)
            bad_rule++;
        if (from < prev_from || (from == prev_from && to <= prev_to))
            bad_order++;
        prev_from = from;
        prev_to = to;
    }
    CHECK_EQ_INT(bad_len, 0);
    CHECK_EQ_INT(bad_rule, 0);
    CHECK_EQ_INT(bad_order, 0);
    /* Every (from, to) pair that follows the rule has a plain id: 1792. */
    int pairs = 0, found = 0;
    for (int from = 0; from < 64; from++) {
        for (int to = 0; to < 64; to++) {
            int df = abs(from % 8 - to % 8), dr = abs(from / 8 - to / 8);
            if (from == to ||
                !(df == 0 || dr == 0 || df == dr || (df == 1 && dr == 2) || (df == 2 && dr == 1)))
                continue;
            pairs++;
            char s[5] = {(char)('a' + from % 8), (char)('1' + from / 8), (char)('a' + to % 8),
                         (char)('1' + to / 8), 0};
            found += move_id(s) >= 0 && move_id(s) < LC_CHESS_N_PLAIN_MOVES;
        }
    }
    CHECK_EQ_INT(pairs, 1792);
    CHECK_EQ_INT(found, 1792);

    /* Promotions: (from-file, to-file) pairs in order, q r b within a pair. */
    const char *first_white[] = {"a7a8q", "a7a8r", "a7a8b", "a7b8q", "a7b8r", "a7b8b", "b7a8q",
                                 "b7a8r", "b7a8b", "b7b8q", "b7b8r", "b7b8b", "b7c8q"};
    for (int i = 0; i < (int)(sizeof first_white / sizeof *first_white); i++)
        CHECK_EQ_STR(lc_chess_token_name(1792 + i), first_white[i]);
    CHECK_EQ_STR(lc_chess_token_name(1857), "h7h8b");
    CHECK_EQ_STR(lc_chess_token_name(1852), "h7g8q");
    CHECK_EQ_STR(lc_chess_token_name(1858), "a2a1q");
    CHECK_EQ_STR(lc_chess_token_name(1861), "a2b1q");
    CHECK_EQ_STR(lc_chess_token_name(1864), "b2a1q");
    CHECK_EQ_STR(lc_chess_token_name(1923), "h2h1b");
    int white = 0, black = 0;
    for (int id = LC_CHESS_N_PLAIN_MOVES; id < LC_CHESS_N_MOVES; id++) {
        const char *n = lc_chess_token_name(id);
        CHECK_EQ_INT(strlen(n), 5);
        CHECK(n[4] == "qrb"[(id - 1792) % 3]);
        int df = abs(n[0] - n[2]);
        CHECK(df <= 1);
        if (n[1] == '7' && n[3] == '8') {
            white++;
            CHECK(id < 1858);
        } else if (n[1] == '2' && n[3] == '1') {
            black++;
            CHECK(id >= 1858);
        }
    }
    CHECK_EQ_INT(white, 66);
    CHECK_EQ_INT(black, 66);

    /* Knight promotions are the plain moves; "n" is not a suffix. */
    CHECK(move_id("e7e8") >= 0 && move_id("e7e8") < 1792);
    CHECK(move_id("d7e8") >= 0 && move_id("d7e8") < 1792);
    CHECK(move_id("e2d1") >= 0 && move_id("e2d1") < 1792);
    CHECK_EQ_INT(move_id("e7e8n"), LC_CHESS_EOOV);
    CHECK_EQ_INT(move_id("e7e8q"), 1792 + 3 * (2 + 3 * 3 + 1));
    CHECK_EQ_INT(move_id("e7e8r"), move_id("e7e8q") + 1);
    CHECK_EQ_INT(move_id("e7e8b"), move_id("e7e8q") + 2);
    CHECK_EQ_INT(move_id("e2e1q"), 1858 + 3 * (2 + 3 * 3 + 1));
}

static void test_round_trip(void)
{
    int bad = 0;
    for (int id = 0; id < LC_CHESS_VOCAB_SIZE; id++) {
        const char *n = lc_chess_token_name(id);
        if (!n || lc_chess_token_id(n, strlen(n)) != id)
            bad++;
        if (id < LC_CHESS_N_MOVES && move_id(n) != id)
            bad++;
        if (id >= LC_CHESS_N_MOVES && move_id(n) != LC_CHESS_EOOV)
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(lc_chess_token_id("pad", 3), LC_TOK_PAD);
    CHECK_EQ_INT(lc_chess_token_id("padx", 4), LC_CHESS_EOOV);
    CHECK_EQ_INT(lc_chess_token_id("pa", 2), LC_CHESS_EOOV);
    /* A move string inside a longer buffer: only len bytes are read. */
    CHECK_EQ_INT(lc_chess_move_id("e2e4e5", 4), 322);
    CHECK_EQ_INT(lc_chess_move_id("a7a8qq", 5), 1792);
}

static void test_castling_moves(void)
{
    /* King takes rook: the four castling moves are ordinary rank moves. */
    CHECK_EQ_INT(move_id("e1h1"), 103);
    CHECK(move_id("e1a1") >= 0 && move_id("e1a1") < move_id("e1h1"));
    CHECK(move_id("e8h8") > move_id("e8a8"));
    CHECK_EQ_INT(move_id("e8a8"), 1713);
    /* e1g1 is its own ordinary token, looked up as written (no translation). */
    int e1g1 = move_id("e1g1");
    CHECK(e1g1 >= 0 && e1g1 < 1792);
    CHECK(e1g1 != move_id("e1h1"));
    CHECK_EQ_INT(e1g1, 102);
    CHECK_EQ_STR(lc_chess_token_name(e1g1), "e1g1");
    CHECK(move_id("e8c8") >= 0);
    static const unsigned want[16] = {1959, 1944, 1945, 1948, 1946, 1949, 1951, 1954,
                                      1947, 1950, 1952, 1955, 1953, 1956, 1957, 1958};
    for (unsigned r = 0; r < 16; r++)
        CHECK_EQ_INT(lc_chess_castling_token(r), want[r]);
}

static void test_out_of_vocabulary(void)
{
    const char *bad[] = {
        "a1a1", "",     "e2e",  "e2e4q", "a7a8n", "a7a8k",  "E2E4",  "e2e4 ",
        "i1a1", "a9a1", "a1b4", "a7c8q", "a1a8q", "e2e1r ", "e7e8Q", "\xff\xff\xff\xff",
        "e1e1", "h2h1n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int id = move_id(bad[i]);
        if (id != LC_CHESS_EOOV)
            fprintf(stderr, "\"%s\" -> %d\n", bad[i], id);
        CHECK_EQ_INT(id, LC_CHESS_EOOV);
    }
    CHECK_EQ_INT(lc_chess_move_id("a2a1q", 6), LC_CHESS_EOOV);
    CHECK_EQ_INT(lc_chess_move_id(NULL, 0), LC_CHESS_EOOV);
    CHECK_EQ_INT(move_id("a1h8"), move_id("a1h8")); /* diagonal: in the table */
    CHECK(move_id("a1h8") >= 0);
    CHECK(move_id("b1c3") >= 0);
    CHECK_EQ_STR(lc_chess_strerror(LC_CHESS_EOOV), "move not in the chess vocabulary");
    CHECK_EQ_STR(lc_chess_strerror(LC_EFORMAT), lc_strerror(LC_EFORMAT));
}

/* Standard UCI spellings mapped to the vocabulary's: a knight promotion is
 * the plain move; castling e1g1/e1c1/e8g8/e8c8 is the king taking its rook,
 * only with the king on its start square; everything else as written. */
static void test_uci_spellings(void)
{
    static const char start[] = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
    static const char castle[] = "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1";
    static const char moved[] = "r4rk1/pppppppp/8/8/8/8/PPPPPPPP/R4RK1 w - - 0 1";
    static const char promo[] = "8/P7/8/8/8/8/7p/K6k w - - 0 1";
#define UCI(fen, m) lc_chess_uci_move_id(fen, strlen(fen), m, strlen(m))
    CHECK_EQ_INT(UCI(promo, "a7a8n"), move_id("a7a8"));
    CHECK_EQ_INT(UCI(promo, "h2h1n"), move_id("h2h1"));
    CHECK_EQ_INT(UCI(promo, "a7a8q"), move_id("a7a8q")); /* others as written */
    CHECK_EQ_INT(UCI(castle, "e1g1"), move_id("e1h1"));
    CHECK_EQ_INT(UCI(castle, "e1c1"), move_id("e1a1"));
    CHECK_EQ_INT(UCI(castle, "e8g8"), move_id("e8h8"));
    CHECK_EQ_INT(UCI(castle, "e8c8"), move_id("e8a8"));
    CHECK_EQ_INT(UCI(castle, "e1h1"), move_id("e1h1")); /* already the vocabulary's */
    /* No king on e1 (a rook there, or nothing): the two-square move stays. */
    CHECK_EQ_INT(UCI(moved, "e1g1"), move_id("e1g1"));
    CHECK_EQ_INT(UCI("8/8/8/8/8/8/8/4R2K w - - 0 1", "e1g1"), move_id("e1g1"));
    /* A black king on e1 is not the white king's castling. */
    CHECK_EQ_INT(UCI("8/8/8/8/8/8/8/4k2K b - - 0 1", "e1g1"), move_id("e1g1"));
    CHECK_EQ_INT(UCI(start, "e2e4"), move_id("e2e4"));
    CHECK_EQ_INT(UCI(start, "a7a8k"), LC_CHESS_EOOV);
    CHECK_EQ_INT(lc_chess_uci_move_id(NULL, 0, "e1g1", 4), move_id("e1g1"));
    /* The encoder takes the spelling flag. */
    int64_t in[LC_CHESS_POS_TOKENS], mask[LC_CHESS_POS_TOKENS], target = -1;
    CHECK_OK(
        lc_chess_encoder_sample(promo, strlen(promo), "a7a8n", 5, true, in, mask, &target, NULL));
    CHECK_EQ_INT(target, move_id("a7a8"));
    CHECK_EQ_INT(
        lc_chess_encoder_sample(promo, strlen(promo), "a7a8n", 5, false, in, mask, &target, NULL),
        LC_CHESS_EOOV);
#undef UCI
}

/* ---- positions ---- */

static void test_start_position(void)
{
    int64_t t[68];
    lc_error err;
    CHECK_OK(fen_tokens(START_FEN, t, &err));
    int64_t want[68];
    const int back_w[8] = {LC_TOK_WHITE_ROOK,   LC_TOK_WHITE_KNIGHT, LC_TOK_WHITE_BISHOP,
                           LC_TOK_WHITE_QUEEN,  LC_TOK_WHITE_KING,   LC_TOK_WHITE_BISHOP,
                           LC_TOK_WHITE_KNIGHT, LC_TOK_WHITE_ROOK};
    want[0] = 1936;
    for (int f = 0; f < 8; f++) {
        want[1 + f] = back_w[f];
        want[1 + 8 + f] = 1929;
        want[1 + 48 + f] = 1935;
        want[1 + 56 + f] = back_w[f] + 6;
    }
    for (int sq = 16; sq < 48; sq++)
        want[1 + sq] = 1940;
    want[65] = 1937;
    want[66] = 1958;
    want[67] = 1938;
    for (int i = 0; i < 68; i++)
        CHECK_EQ_INT(t[i], want[i]);
    CHECK_EQ_INT(t[1 + 4], 1924);  /* e1: white king */
    CHECK_EQ_INT(t[1 + 59], 1931); /* d8: black queen */
}

static int64_t castling_of(const char *fen)
{
    int64_t t[68];
    lc_error err;
    int rc = fen_tokens(fen, t, &err);
    if (rc)
        fprintf(stderr, "%s: %s\n", fen, err.msg);
    return rc ? rc : t[66];
}

static void test_castling_rights(void)
{
    CHECK_EQ_INT(castling_of(START_FEN), 1958);
    CHECK_EQ_INT(castling_of("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w - - 0 1"), 1959);
    CHECK_EQ_INT(castling_of("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w"), 1959);
    CHECK_EQ_INT(castling_of("r3k2r/8/8/8/8/8/8/R3K2R w Kq - 0 1"), 1950);
    CHECK_EQ_INT(castling_of("r3k2r/8/8/8/8/8/8/R3K2R w qK - 0 1"), 1950);
    CHECK_EQ_INT(castling_of("r3k2r/8/8/8/8/8/8/R3K2R b KQk - 3 20"), 1954);
    /* The h1 rook is gone while the FEN still says K. */
    CHECK_EQ_INT(castling_of("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN1 w KQkq - 0 1"), 1957);
    /* The rook moved to h2 (a right the FEN should have dropped). */
    CHECK_EQ_INT(castling_of("r3k2r/8/8/8/8/8/7R/R3K3 w KQkq - 0 1"), 1957);
    /* A black rook on h1 is not the white king's rook. */
    CHECK_EQ_INT(castling_of("r3k2r/8/8/8/8/8/8/R3K2r w KQkq - 0 1"), 1957);
    /* The king is not on e1: no white right at all. */
    CHECK_EQ_INT(castling_of("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQ1KNR w KQkq - 0 1"), 1953);
    CHECK_EQ_INT(castling_of("r3k2r/8/8/8/8/8/8/R2K3R w KQkq - 0 1"), 1953);
    /* Black's a8 rook gone, king still home: only k of black's. */
    CHECK_EQ_INT(castling_of("4k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"), 1954);
    /* Black king away: only white's. */
    CHECK_EQ_INT(castling_of("r4k1r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"), 1948);
    /* Pieces at home but the FEN grants nothing. */
    CHECK_EQ_INT(castling_of("r3k2r/8/8/8/8/8/8/R3K2R w - - 0 1"), 1959);
    CHECK_EQ_INT(castling_of("r3k2r/8/8/8/8/8/8/R3K2R w q - 0 1"), 1947);
}

static void test_black_to_move(void)
{
    int64_t t[68];
    CHECK_OK(fen_tokens("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1", t, NULL));
    CHECK_EQ_INT(t[67], LC_TOK_BLACK_TO_MOVE);
    CHECK_EQ_INT(t[1 + 28], LC_TOK_WHITE_PAWN); /* e4 */
    CHECK_EQ_INT(t[1 + 12], LC_TOK_EMPTY);      /* e2 */
    CHECK_EQ_INT(t[66], 1958);
    /* Extra blanks between fields are accepted; the string need not end. */
    const char *s = "8/8/8/8/8/8/8/K6k  b\t-  -  0 1   trailing";
    CHECK_OK(lc_chess_fen_tokens(s, strlen(s) - strlen("trailing"), t, NULL));
    CHECK_EQ_INT(t[1], LC_TOK_WHITE_KING);
    CHECK_EQ_INT(t[8], LC_TOK_BLACK_KING);
    CHECK_EQ_INT(t[66], 1959);
    CHECK_EQ_INT(t[67], LC_TOK_BLACK_TO_MOVE);
}

static void test_malformed_fens(void)
{
    const char *bad[] = {
        "",
        "   ",
        "garbage",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1",            /* 7 ranks */
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR/8 w KQkq - 0 1", /* 9 ranks */
        "rnbqkbnr/ppppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",  /* 9 files */
        "rnbqkbnr/ppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",    /* 7 files */
        "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "rnbqkbnr/pppppppp/44/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN0 w KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR white KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KX - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KKq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e9 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - x 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 -1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 extra",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR\nw KQkq - 0 1",
        "/rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR/ w KQkq - 0 1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int64_t t[68];
        lc_error err;
        lc_error_clear(&err);
        int rc = fen_tokens(bad[i], t, &err);
        if (rc != LC_EFORMAT)
            fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
        CHECK_EQ_INT(rc, LC_EFORMAT);
        CHECK(strstr(err.msg, "malformed FEN") != NULL);
    }
    /* Every prefix of a good FEN, without a NUL after it: an answer, no overread. */
    const char *good = "r3k2r/pp3ppp/8/8/8/8/PP3PPP/R3K2R w KQkq - 10 42";
    int ok_prefixes = 0;
    for (size_t n = 0; n <= strlen(good); n++) {
        char *p = malloc(n ? n : 1);
        memcpy(p, good, n);
        int64_t t[68];
        int rc = lc_chess_fen_tokens(p, n, t, NULL);
        CHECK(rc == 0 || rc == LC_EFORMAT);
        ok_prefixes += rc == 0;
        free(p);
    }
    /* "... w", "... w KQkq", "... w KQkq -", "... - 1", "... - 10", "... 10 4", "... 10 42",
     * plus the same with a trailing blank for the first four fields. */
    CHECK(ok_prefixes >= 7);
    /* Random corruption of a good FEN: never a crash, never a wrong code. */
    lc_rng r;
    lc_rng_seed(&r, 7, 0);
    size_t glen = strlen(good);
    for (int it = 0; it < 20000; it++) {
        char *p = malloc(glen);
        memcpy(p, good, glen);
        int flips = 1 + (int)lc_rng_below(&r, 3);
        for (int f = 0; f < flips; f++)
            p[lc_rng_below(&r, glen)] = (char)lc_rng_below(&r, 256);
        size_t n = lc_rng_below(&r, glen + 1);
        int64_t t[68];
        int rc = lc_chess_fen_tokens(p, n, t, NULL);
        CHECK(rc == 0 || rc == LC_EFORMAT);
        if (rc == 0) {
            int bad_tok = 0;
            for (int i = 1; i <= 64; i++)
                bad_tok += t[i] < 1924 || t[i] > 1940 || (t[i] > 1935 && t[i] != 1940);
            CHECK_EQ_INT(bad_tok, 0);
        }
        free(p);
    }
}

/* ---- encoder ---- */

static void test_encoder(void)
{
    int64_t in[68], mask[68], target = -1, want[68];
    lc_error err;
    CHECK_OK(fen_tokens(START_FEN, want, NULL));
    CHECK_OK(lc_chess_encoder_sample(START_FEN, strlen(START_FEN), "e2e4", 4, false, in, mask,
                                     &target, &err));
    CHECK_EQ_INT(target, 322);
    CHECK(memcmp(in, want, sizeof want) == 0);
    int ones = 0;
    for (int i = 0; i < 68; i++)
        ones += mask[i] == 1;
    CHECK_EQ_INT(ones, 68);
    const char *promo_fen = "8/P6k/8/8/8/8/7p/K7 w - - 0 1";
    CHECK_OK(lc_chess_encoder_sample(promo_fen, strlen(promo_fen), "a7a8q", 5, false, in, mask,
                                     &target, NULL));
    CHECK_EQ_INT(target, 1792);
    CHECK_OK(lc_chess_encoder_sample(promo_fen, strlen(promo_fen), "a7a8", 4, false, in, mask,
                                     &target, NULL));
    CHECK_EQ_INT(target, 1401);
    /* Skipped: best move outside the vocabulary; a distinct code. */
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_chess_encoder_sample(START_FEN, strlen(START_FEN), "a1a1", 4, false, in, mask,
                                         &target, &err),
                 LC_CHESS_EOOV);
    CHECK(strstr(err.msg, "a1a1") != NULL);
    CHECK_EQ_INT(lc_chess_encoder_sample(START_FEN, strlen(START_FEN), "zz", 2, false, in, mask,
                                         &target, NULL),
                 LC_CHESS_EOOV);
    CHECK_EQ_INT(lc_chess_encoder_sample(START_FEN, strlen(START_FEN), NULL, 0, false, in, mask,
                                         &target, NULL),
                 LC_CHESS_EOOV);
    CHECK_EQ_INT(lc_chess_encoder_sample("bad fen", 7, "e2e4", 4, false, in, mask, &target, NULL),
                 LC_EFORMAT);
    /* King-takes-rook castling as the best move. */
    const char *c_fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1";
    CHECK_OK(
        lc_chess_encoder_sample(c_fen, strlen(c_fen), "e1h1", 4, false, in, mask, &target, NULL));
    CHECK_EQ_INT(target, 103);
}

int main(void)
{
    test_check_values();
    test_move_table();
    test_round_trip();
    test_castling_moves();
    test_out_of_vocabulary();
    test_uci_spellings();
    test_start_position();
    test_castling_rights();
    test_black_to_move();
    test_malformed_fens();
    test_encoder();
    return check_finish();
}
