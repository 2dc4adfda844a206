/*
 * input_format_convert on games built by hand, whose converted planes are
 * worked out below from lc0's encoder rules (docs/pipelines.md
 * "new_input_format"): a pawnless game whose positions are transposed (the
 * policy and played move moved with the board), an en-passant file and the
 * history it ends, castling rights lost mid-history with Chess960 rook
 * masks, the hectoplies and armageddon planes, and format 5's history of
 * repetitions.
 *
 * Each game is written as FENs, one a record; the records hold history
 * step 0 only (the conversion takes every other step from the game). The
 * expected boards are written as "views": a FEN placement seen from the
 * side to move (upper case ours, its first rank at the bottom), after the
 * transform.
 */
#include "check.h"
#include "records.h"
#include "testutil.h"

#include "format/chess/chess_vocab.h"
#include "format/lc0/rescore/input_format_convert.h"
#include "format/lc0/record.h"

#include <ctype.h>

#define V6 LC_V6_RECORD_SIZE
#define OFF(field) offsetof(lc_v6_record, field)

static int move_id(const char *uci)
{
    return lc_chess_move_id(uci, strlen(uci));
}

/* A FEN placement as 64 characters (square rank * 8 + file; '.' empty). */
static void placement(const char *fen, char sq[64])
{
    memset(sq, '.', 64);
    int r = 7, f = 0;
    for (const char *c = fen; *c && *c != ' '; c++) {
        if (*c == '/') {
            r--;
            f = 0;
        } else if (isdigit((unsigned char)*c)) {
            f += *c - '0';
        } else {
            sq[r * 8 + f++] = *c;
        }
    }
}

/* The 12 plane words of a view (upper case ours). */
static void view_words(const char sq[64], uint64_t w[12])
{
    memset(w, 0, 12 * sizeof *w);
    for (int s = 0; s < 64; s++) {
        if (sq[s] == '.')
            continue;
        int piece = (int)(strchr("PNBRQK", toupper((unsigned char)sq[s])) - "PNBRQK");
        w[(isupper((unsigned char)sq[s]) ? 0 : 6) + piece] |= 1ULL << (s ^ 7);
    }
}

/* A record of input format fmt for the FEN (its side to move and
 * fifty-move counter), history step 0 only; castling the four bytes from
 * the side to move's view; the policy 1 on `played` (the side to move's
 * view), -1 elsewhere. */
static void put_position(uint8_t *r, uint32_t fmt, const char *fen, const uint8_t castling[4],
                         const char *played)
{
    memset(r, 0, V6);
    rec_put_u32(r, OFF(version), 6);
    rec_put_u32(r, OFF(input_format), fmt);
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        rec_put_prob(r, i, -1.0f);
    char board[64], view[64];
    placement(fen, board);
    const char *side = strchr(fen, ' ') + 1;
    bool black = *side == 'b';
    for (int s = 0; s < 64; s++) {
        char c = black ? board[s ^ 56] : board[s];
        view[s] = isupper((unsigned char)c) ? (char)tolower(c) : (char)toupper(c);
        if (!black)
            view[s] = c;
    }
    uint64_t w[12];
    view_words(view, w);
    for (int i = 0; i < 12; i++)
        rec_put_u64(r, OFF(planes) + 8 * (size_t)i, w[i]);
    memcpy(r + OFF(castling_us_ooo), castling, 4);
    rec_put_u8(r, OFF(side_to_move_or_enpassant), black);
    unsigned rule50 = 0;
    sscanf(side, "%*s %*s %*s %u", &rule50);
    rec_put_u8(r, OFF(rule50_count), (uint8_t)rule50);
    int id = move_id(played);
    CHECK(id >= 0 && id < LC_POLICY_SIZE);
    rec_put_prob(r, (unsigned)id, 1.0f);
    rec_put_u16(r, OFF(played_idx), (uint16_t)id);
    rec_put_u16(r, OFF(best_idx), (uint16_t)id);
    rec_put_u32(r, OFF(visits), 100);
}

static const uint8_t no_castling[4] = {0, 0, 0, 0};

static uint8_t *game_of(uint32_t fmt, const char *const *fens, const char *const *played,
                        uint32_t n)
{
    uint8_t *g = malloc((size_t)n * V6);
    for (uint32_t k = 0; k < n; k++)
        put_position(g + (size_t)k * V6, fmt, fens[k], no_castling, played[k]);
    return g;
}

static void convert(uint8_t *g, uint32_t n, uint32_t to)
{
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_game_convert_format(g, V6, n, 6, to, &err);
    if (rc)
        fprintf(stderr, "%s\n", err.msg);
    CHECK_EQ_INT(rc, 0);
}

/* History step `step` of record k is the view (plane 12, the repetition
 * plane, all ones when rep). */
static void check_step(const uint8_t *g, uint32_t k, int step, const char *view, bool rep)
{
    char sq[64];
    placement(view, sq);
    uint64_t w[12];
    view_words(sq, w);
    const uint8_t *r = g + (size_t)k * V6;
    for (int i = 0; i < 12; i++)
        CHECK_EQ_U64(lc_rec_plane(r, (size_t)(13 * step + i)), w[i]);
    CHECK_EQ_U64(lc_rec_plane(r, (size_t)(13 * step + 12)), rep ? ~0ULL : 0);
}

/* Record k holds exactly `steps` history steps. */
static void check_steps(const uint8_t *g, uint32_t k, int steps)
{
    const uint8_t *r = g + (size_t)k * V6;
    int held = 0;
    for (int p = 0; p < LC_RECORD_PLANES; p++)
        if (lc_rec_plane(r, (size_t)p))
            held = p / 13 + 1;
    CHECK_EQ_INT(held, steps);
}

static uint8_t byte_at(const uint8_t *g, uint32_t k, size_t off)
{
    return g[(size_t)k * V6 + off];
}

static uint16_t played_at(const uint8_t *g, uint32_t k)
{
    uint16_t v;
    LC_REC_GET(g + (size_t)k * V6, played_idx, v);
    return v;
}

static void test_transpose(void)
{
    /* White Kb6 Qd4, Black Kh8; 1. Qd7 Kg8 2. Qe7. */
    const char *fens[3] = {"7k/8/1K6/8/3Q4/8/8/8 w - - 10 60", "7k/3Q4/1K6/8/8/8/8/8 b - - 11 60",
                           "6k1/3Q4/1K6/8/8/8/8/8 w - - 12 61"};
    const char *played[3] = {"d4d7", "h1g1", "d7e7"}; /* Kh8-g8 from Black's side: h1g1 */
    uint8_t *g = game_of(1, fens, played, 3), *direct = game_of(1, fens, played, 3);
    convert(g, 3, 3);
    /* Record 0: no castling right; our king b6 is on files a-d: flip (b6
     * -> g6); no pawns and on rank 6: mirror (g6 -> g3); g3 is above the
     * a8-h1 diagonal: transpose ((r, f) -> (7 - f, 7 - r): g3 = (2, 6) ->
     * (1, 5) = f2). Transform 7. Qd4 = (3, 3) -> e4 -> e5 = (4, 4) ->
     * (3, 3) = d4; Kh8 -> a8 -> a1 = (0, 0) -> (7, 7) = h8. One step (the
     * history starts at record 0). The played move d4d7: d7 = (6, 3) ->
     * e7 -> e2 = (1, 4) -> (3, 6) = g4: d4g4, where the policy's 1 goes. */
    check_step(g, 0, 0, "7k/8/8/8/3Q4/8/5K2/8", false);
    check_steps(g, 0, 1);
    CHECK_EQ_U64(byte_at(g, 0, OFF(invariance_info)), 7);
    CHECK_EQ_INT(played_at(g, 0), move_id("d4g4"));
    CHECK(lc_rec_probability(g, (size_t)move_id("d4g4")) == 1.0f);
    CHECK(lc_rec_probability(g, (size_t)move_id("d4d7")) == -1.0f);
    /* Record 1, Black to move: ours Kh1, theirs Kb3 Qd2 (ranks mirrored).
     * Our king on h1: no flip, no mirror, on the diagonal: all pieces as a
     * mask, h1 | b3 | d2 = bits 7, 17, 11, against transposed h1 | f7 |
     * g5 = bits 7, 53, 38: smaller as it is, no transpose. Transform 0,
     * invariance 0x80. Step 1 is record 0 from Black's side: Kh1, Kb3,
     * Qd5 (rule50 11, no castling, no en passant: kept); nothing before. */
    check_step(g, 1, 0, "8/8/8/8/8/1k6/3q4/7K", false);
    check_step(g, 1, 1, "8/8/8/3q4/8/1k6/8/7K", false);
    check_steps(g, 1, 2);
    CHECK_EQ_U64(byte_at(g, 1, OFF(invariance_info)), 0x80);
    CHECK_EQ_INT(played_at(g, 1), move_id("h1g1"));
    /* Record 2: as record 0, transform 7: Kb6 -> f2, Qd7 -> g4, Kg8 =
     * (7, 6) -> b8 -> b1 = (0, 1) -> (6, 7) = h7. Step 1 (record 1 from
     * White's side: Kb6 Qd7, Kh8) -> f2, g4, h8; step 2 = record 0's
     * step 0. Played d7e7: e7 = (6, 4) -> d7 -> d2 = (1, 3) -> (4, 6) =
     * g5: g4g5. */
    check_step(g, 2, 0, "8/7k/8/8/6Q1/8/5K2/8", false);
    check_step(g, 2, 1, "7k/8/8/8/6Q1/8/5K2/8", false);
    check_step(g, 2, 2, "7k/8/8/8/3Q4/8/5K2/8", false);
    check_steps(g, 2, 3);
    CHECK_EQ_INT(played_at(g, 2), move_id("g4g5"));
    /* Back to 1: the records as the game gives them in format 1 (their
     * history steps filled from the game), the transform undone. */
    convert(g, 3, 1);
    convert(direct, 3, 1);
    CHECK(memcmp(g, direct, 3 * (size_t)V6) == 0);
    check_steps(direct, 2, 3);
    CHECK_EQ_INT(played_at(direct, 2), move_id("d7e7"));
    /* Hectoplies (4): plane 109 is rule50 / 100 (record 1: 0.11);
     * armageddon (132): plane 110 all ones when Black is to move. */
    convert(g, 3, 4);
    lc_frame f;
    lc_error err;
    CHECK_OK(lc_frame_from_record(g + V6, 6, &f, &err));
    uint64_t words[8];
    float values[8];
    lc_frame_aux_planes(&f, words, values);
    CHECK(values[5] == 11 / 100.0f && values[6] == 0.0f);
    convert(g, 3, 132);
    for (uint32_t k = 0; k < 2; k++) {
        CHECK_OK(lc_frame_from_record(g + (size_t)k * V6, 6, &f, &err));
        lc_frame_aux_planes(&f, words, values);
        CHECK(values[6] == (k == 1 ? 1.0f : 0.0f) && words[6] == ~0ULL);
        CHECK(values[5] == (10 + k) / 100.0f);
    }
    free(g);
    free(direct);
}

static void test_en_passant(void)
{
    /* Black to move: 1... d5 (e5 beside it: en passant possible) 2. Ke2
     * Ke7 3. Ke3. */
    const char *fens[4] = {
        "4k3/3p4/8/4P3/8/8/8/4K3 b - - 3 40", "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 41",
        "4k3/8/8/3pP3/8/8/4K3/8 b - - 1 41", "8/4k3/8/3pP3/8/8/4K3/8 w - - 2 42"};
    const char *played[4] = {"d2d4", "e1e2", "e1e2", "e2e3"};
    uint8_t *g = game_of(1, fens, played, 4);
    convert(g, 4, 3);
    /* Record 1: the en-passant file d (1 << 3 = 8); our king e1 (file
     * e): no flip, and pawns: transform 0. rule50 0: step 0 alone. */
    CHECK_EQ_U64(byte_at(g, 1, OFF(side_to_move_or_enpassant)), 8);
    CHECK_EQ_U64(byte_at(g, 1, OFF(invariance_info)), 0);
    check_step(g, 1, 0, "4k3/8/8/3pP3/8/8/8/4K3", false);
    check_steps(g, 1, 1);
    /* Record 2 (Black): step 1 would be record 1, which has an en-passant
     * flag: the history ends before it. */
    check_step(g, 2, 0, "8/4k3/8/8/3Pp3/8/8/4K3", false);
    check_steps(g, 2, 1);
    CHECK_EQ_U64(byte_at(g, 2, OFF(side_to_move_or_enpassant)), 0);
    CHECK_EQ_U64(byte_at(g, 2, OFF(invariance_info)), 0x80);
    /* Record 3: itself and record 2 (from White's side), then record 1
     * ends it. */
    check_step(g, 3, 0, "8/4k3/8/3pP3/8/8/4K3/8", false);
    check_step(g, 3, 1, "4k3/8/8/3pP3/8/8/4K3/8", false);
    check_steps(g, 3, 2);
    /* Format 1 keeps every position back to the game's start. The game
     * starts with Black to move, which format 3's record 0 says in
     * invariance_info bit 7 (upstream takes White): record 0 and 2 get
     * side_to_move 1, records 1 and 3 0. */
    CHECK_EQ_U64(byte_at(g, 0, OFF(invariance_info)), 0x80);
    convert(g, 4, 1);
    CHECK_EQ_U64(byte_at(g, 0, OFF(side_to_move_or_enpassant)), 1);
    CHECK_EQ_U64(byte_at(g, 1, OFF(side_to_move_or_enpassant)), 0);
    check_step(g, 3, 3, "4k3/3p4/8/4P3/8/8/8/4K3", false);
    check_steps(g, 3, 4);
    CHECK_EQ_U64(byte_at(g, 3, OFF(side_to_move_or_enpassant)), 0);
    CHECK_EQ_U64(byte_at(g, 2, OFF(side_to_move_or_enpassant)), 1);
    free(g);
    /* No pawn of ours beside it (e4 is a rank behind): no flag, and
     * record 2 keeps record 1 (rule50 0: the last step). */
    const char *fens2[3] = {"4k3/3p4/8/8/4P3/8/8/4K3 b - - 3 40",
                            "4k3/8/8/3p4/4P3/8/8/4K3 w - - 0 41",
                            "4k3/8/8/3p4/4P3/8/4K3/8 b - - 1 41"};
    const char *played2[3] = {"d2d4", "e1e2", "e1e2"};
    g = game_of(1, fens2, played2, 3);
    convert(g, 3, 3);
    CHECK_EQ_U64(byte_at(g, 1, OFF(side_to_move_or_enpassant)), 0);
    check_steps(g, 2, 2);
    free(g);
}

static void test_castling(void)
{
    /* Chess960 rooks on b and g, format 2 (rook masks 0x02, 0x40): 1. Rh1
     * Kf8 2. Rg1. */
    const char *fens[4] = {"1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 w - - 0 1",
                           "1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K2R b - - 1 1",
                           "1r3kr1/pppppppp/8/8/8/8/PPPPPPPP/1R2K2R w - - 2 2",
                           "1r3kr1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 b - - 3 2"};
    const char *played[4] = {"g1h1", "e1f1", "h1g1", "b1a1"};
    const uint8_t all[4] = {0x02, 0x40, 0x02, 0x40};
    uint8_t *g = malloc(4 * (size_t)V6);
    for (uint32_t k = 0; k < 4; k++) /* only record 0's castling bytes are read */
        put_position(g + (size_t)k * V6, 2, fens[k], k ? no_castling : all, played[k]);
    convert(g, 4, 3);
    /* Record 1 (Black): Black keeps b and g, White lost g (its rook left
     * g1): us 0x02 0x40, them 0x02 0. Record 0 from Black's side had
     * them 0x40 too: the history ends. Record 2 (White): us 0x02 0, them
     * 0 0 (the king moved); record 3 (Black): us 0 0, them 0x02 0, the
     * same as record 2 had (Rh1-g1 changes no right): step 1 kept, then
     * record 1 ends it. Castling rights left: no transform. */
    const uint8_t want[4][4] = {
        {0x02, 0x40, 0x02, 0x40}, {0x02, 0x40, 0x02, 0}, {0x02, 0, 0, 0}, {0, 0, 0x02, 0}};
    const int steps[4] = {1, 1, 1, 2};
    for (uint32_t k = 0; k < 4; k++) {
        CHECK(memcmp(g + (size_t)k * V6 + OFF(castling_us_ooo), want[k], 4) == 0);
        check_steps(g, k, steps[k]);
        CHECK_EQ_U64(byte_at(g, k, OFF(invariance_info)) & 7, 0);
    }
    /* Format 1: flags; every position back to the start. */
    convert(g, 4, 1);
    const uint8_t flags[4] = {1, 1, 1, 0};
    CHECK(memcmp(g + V6 + OFF(castling_us_ooo), flags, 4) == 0);
    check_steps(g, 3, 4);
    /* Back to 2 from format 1, the rook files are lost: format 1's flags
     * are read as lc0's classical rooks (a and h). */
    convert(g, 4, 2);
    const uint8_t guessed[4] = {0x01, 0x80, 0x01, 0x80};
    CHECK(memcmp(g + OFF(castling_us_ooo), guessed, 4) == 0);
    free(g);
}

static void test_repetitions(void)
{
    /* 1. Nf3 Kd8 2. Ng1 Ke8 3. Nf3: record 4 is record 0 again, record 5
     * record 1. lc0's counts: record 4 (rule50 4) equals record 0 two
     * steps of two back: 1; record 5 (rule50 5) equals record 1: 1. */
    const char *fens[6] = {"4k3/8/8/8/8/8/8/4K1N1 w - - 0 1", "4k3/8/8/8/8/5N2/8/4K3 b - - 1 1",
                           "3k4/8/8/8/8/5N2/8/4K3 w - - 2 2", "3k4/8/8/8/8/8/8/4K1N1 b - - 3 2",
                           "4k3/8/8/8/8/8/8/4K1N1 w - - 4 3", "4k3/8/8/8/8/5N2/8/4K3 b - - 5 3"};
    const char *played[6] = {"g1f3", "e1d1", "f3g1", "d1e1", "g1f3", "e1d1"};
    uint8_t *g = game_of(1, fens, played, 6);
    convert(g, 6, 5);
    /* Format 5, record 5 (Black; no flip, no pawns, king e1: transform 0):
     * itself (a repetition), record 4 (a repetition), then records 3 to 1
     * skipped (no repetition), record 0 skipped with rule50 0: the end. */
    check_step(g, 5, 0, "4k3/8/5n2/8/8/8/8/4K3", true);
    check_step(g, 5, 1, "4k1n1/8/8/8/8/8/8/4K3", true);
    check_steps(g, 5, 2);
    check_steps(g, 4, 1); /* itself; record 3 to 0 skipped */
    check_step(g, 4, 0, "4k3/8/8/8/8/8/8/4K1N1", true);
    check_steps(g, 3, 1);
    /* Format 3 keeps all six of record 5's, back to record 0 (rule50 0). */
    convert(g, 6, 3);
    check_steps(g, 5, 6);
    check_step(g, 5, 1, "4k1n1/8/8/8/8/8/8/4K3", true);
    check_step(g, 5, 2, "4k1n1/8/8/8/8/8/8/3K4", false); /* record 3: Black's own side */
    check_step(g, 5, 5, "4k1n1/8/8/8/8/8/8/4K3", false);
    free(g);
}

int main(void)
{
    test_transpose();
    test_en_passant();
    test_castling();
    test_repetitions();
    return check_finish();
}
