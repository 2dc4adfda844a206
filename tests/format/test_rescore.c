/*
 * rescore: lc_rescore_game (format/lc0/rescore.h) on games built by hand
 * from positions of the Gaviota 3-piece endings (tests/format/board_test.h
 * writes them as V6 or V5 records), with the real tables Debian's gaviotatb
 * ships (or LCMON_GAVIOTA_PATH). The boards of a game need not follow one
 * another by legal moves: the rescorer reads every record's board on its
 * own. Expected values are worked out in the comments. Without Gaviota or
 * its tables only the tempering (no tablebases) runs and the test says it
 * skipped the rest (77).
 */
#include "board_test.h"
#include "check.h"

#include "format/chess/chess_vocab.h"
#include "format/lc0/rescore.h"
#include "format/lc0/tablebase.h"

#include <math.h>

enum { MAXREC = 4 };
static uint8_t game[MAXREC * LC_V6_RECORD_SIZE];
static lc_tablebases *tb;

typedef struct ply {
    const char *white, *black;
    bool black_to_move;
    uint8_t rule50;
    int result; /* as recorded, for the side to move */
} ply;

static size_t rec_size(uint32_t version)
{
    return version == 5 ? LC_V5_RECORD_SIZE : LC_V6_RECORD_SIZE;
}

static void build(const ply *plies, uint32_t n, uint32_t version)
{
    for (uint32_t i = 0; i < n; i++) {
        lc_position p = bt_position(plies[i].white, plies[i].black, plies[i].black_to_move);
        bt_record(game + i * rec_size(version), version, &p, plies[i].black_to_move,
                  plies[i].rule50, plies[i].result);
    }
}

/* The result of record i: result_q (V6, with result_d checked against it)
 * or the int8 result (V5). */
static int result_of(uint32_t i, uint32_t version)
{
    const uint8_t *rec = game + i * rec_size(version);
    if (version == 5)
        return (int8_t)rec[offsetof(lc_v6_record, dummy)];
    float q, d;
    memcpy(&q, rec + offsetof(lc_v6_record, result_q), 4);
    memcpy(&d, rec + offsetof(lc_v6_record, result_d), 4);
    CHECK(d == (q == 0.0f ? 1.0f : 0.0f));
    return (int)q;
}

static lc_rescore_config tb_config(void)
{
    lc_rescore_config cfg;
    lc_rescore_config_init(&cfg);
    cfg.tb = tb;
    return cfg;
}

/* A KRKN position, then the knight gone: from the capture (rule50 0)
 * Black, to move, loses KRK. The recorded draw is wrong: r1 becomes -1,
 * r0 (White to move) +1; r2 and r3 come after the last probe (rule50 1, 2)
 * and keep the recorded result. One probe, one hit, two results changed. */
static void test_result_backwards(uint32_t version)
{
    const ply plies[4] = {
        {"Kc3 Rb2", "Kg8 Nb7", false, 5, 0},
        {"Kc3 Rb7", "Kg8", true, 0, 0},
        {"Kc3 Rb7", "Kf8", false, 1, 0},
        {"Kd3 Rb7", "Kf8", true, 2, 0},
    };
    build(plies, 4, version);
    lc_rescore_config cfg = tb_config();
    lc_rescore_counts c = {0};
    (void)lc_rescore_game(&cfg, game, rec_size(version), 4, version, &c, NULL, 0);
    const int want[4] = {1, -1, 0, 0};
    for (uint32_t i = 0; i < 4; i++)
        CHECK_EQ_INT(result_of(i, version), want[i]);
    CHECK_EQ_U64(c.games, 1);
    CHECK_EQ_U64(c.positions, 4);
    CHECK_EQ_U64(c.probed, 1);
    CHECK_EQ_U64(c.hits, 1);
    CHECK_EQ_U64(c.results_changed, 2);
    CHECK_EQ_U64(c.games_rescored, 1);
    /* Rescoring again changes nothing more. */
    (void)lc_rescore_game(&cfg, game, rec_size(version), 4, version, &c, NULL, 0);
    CHECK_EQ_U64(c.results_changed, 2);
    CHECK_EQ_U64(c.games_rescored, 1);
}

/* Two probes: r0 (White Kc3 Pa6 against Kh1, rule50 0) wins; r2 (White Ka8
 * Pa7 against Kc7, White to move) is stalemate, a draw. Each probe gives
 * its result back to the one before: r2 0, r1 -0 = 0, r0 +1 (its own);
 * r3 (rule50 1) keeps its recorded +1. Recorded was a white loss
 * (-1, +1, -1, +1): three results change. */
static void test_two_probes(void)
{
    const ply plies[4] = {
        {"Kc3 Pa6", "Kh1", false, 0, -1},
        {"Kc3 Pa6", "Kg2", true, 3, 1},
        {"Ka8 Pa7", "Kc7", false, 0, -1},
        {"Kb6 Pa7", "Kb8", true, 1, 1},
    };
    build(plies, 4, 6);
    lc_rescore_config cfg = tb_config();
    lc_rescore_counts c = {0};
    (void)lc_rescore_game(&cfg, game, LC_V6_RECORD_SIZE, 4, 6, &c, NULL, 0);
    const int want[4] = {1, 0, 0, 1};
    for (uint32_t i = 0; i < 4; i++)
        CHECK_EQ_INT(result_of(i, 6), want[i]);
    CHECK_EQ_U64(c.probed, 2);
    CHECK_EQ_U64(c.hits, 2);
    CHECK_EQ_U64(c.results_changed, 3);
    CHECK_EQ_U64(c.games_rescored, 1);
}

static float prob(uint32_t i, const char *uci)
{
    float v;
    int id = lc_chess_move_id(uci, strlen(uci));
    memcpy(&v, game + i * LC_V6_RECORD_SIZE + 8 + 4 * (size_t)id, 4);
    return v;
}

static void set_prob(uint32_t i, const char *uci, float v)
{
    rec_put_prob(game + i * LC_V6_RECORD_SIZE, (unsigned)lc_chess_move_id(uci, strlen(uci)), v);
}

static unsigned legal_entries(uint32_t i)
{
    unsigned n = 0;
    for (unsigned k = 0; k < LC_POLICY_SIZE; k++) {
        float v;
        memcpy(&v, game + i * LC_V6_RECORD_SIZE + 8 + 4 * (size_t)k, 4);
        n += v != -1.0f;
    }
    return n;
}

/* Sharpening, by hand.
 * r0: Black Kd1 to move against White Re2 (king h8). In Black's plane
 * frame (ranks mirrored) the moves are d8c8 (Kc1: loses) and d8e7 (Kxe2:
 * draws). Recorded 0.7 and 0.3. The best result is the draw: Kc1 gets 0,
 * Kxe2 all of it: 1.0. (Its result: a draw, as recorded.)
 * r1: Black Ka1 to move against White Bc4 (king h8), a KBK draw. Frame
 * moves a8b8 (Kb1) and a8b7 (Kb2); a7 (a2) is the bishop's. Recorded 0.2
 * and 0.8; dist_temp 2, dist_offset 0.1, dtz_boost 0.4. Both moves draw and
 * tie by distance, so both keep and share the boost (0.2 each):
 *   Kb1: sqrt(0.2 + 0.1 + 0.2) = sqrt(0.5) = 0.70710678
 *   Kb2: sqrt(0.8 + 0.1 + 0.2) = sqrt(1.1) = 1.04880885
 *   sum 1.75591563: Kb1 0.40270, Kb2 0.59730.
 * r0 with those settings: Kxe2 alone kept (and boosted): 1.0. */
static void test_sharpening(void)
{
    const ply plies[2] = {
        {"Kh8 Re2", "Kd1", true, 0, 0},
        {"Kh8 Bc4", "Ka1", true, 0, 0},
    };
    build(plies, 2, 6);
    CHECK_EQ_INT(legal_entries(0), 2);
    CHECK_EQ_INT(legal_entries(1), 2);
    set_prob(0, "d8c8", 0.7f);
    set_prob(0, "d8e7", 0.3f);
    set_prob(1, "a8b8", 0.2f);
    set_prob(1, "a8b7", 0.8f);
    lc_rescore_config cfg = tb_config();
    cfg.dist_temp = 2.0;
    cfg.dist_offset = 0.1;
    cfg.dtz_boost = 0.4;
    lc_rescore_counts c = {0};
    (void)lc_rescore_game(&cfg, game, LC_V6_RECORD_SIZE, 2, 6, &c, NULL, 0);
    CHECK_NEAR(prob(0, "d8c8"), 0.0, 1e-7);
    CHECK_NEAR(prob(0, "d8e7"), 1.0, 1e-7);
    CHECK_NEAR(prob(1, "a8b8"), 0.40270, 1e-5);
    CHECK_NEAR(prob(1, "a8b7"), 0.59730, 1e-5);
    CHECK_EQ_INT(legal_entries(0), 2); /* illegal moves stay -1 */
    CHECK_EQ_INT(legal_entries(1), 2);
    CHECK_EQ_U64(c.policies_sharpened, 2);
    CHECK_EQ_U64(c.results_changed, 0);
}

/* Without tablebases, dist_temp and dist_offset still shape every policy
 * (upstream's rescorer does): 0.2 and 0.8 with offset 0.1, temperature 2:
 * sqrt(0.3) = 0.54772256, sqrt(0.9) = 0.94868330, sum 1.49640586:
 * 0.36602540 and 0.63397460. The defaults leave the policy alone. */
static void test_tempering(void)
{
    const ply plies[1] = {{"Kh8 Bc4", "Ka1", true, 0, 0}};
    build(plies, 1, 6);
    set_prob(0, "a8b8", 0.2f);
    set_prob(0, "a8b7", 0.8f);
    lc_rescore_config cfg;
    lc_rescore_config_init(&cfg);
    lc_rescore_counts c = {0};
    (void)lc_rescore_game(&cfg, game, LC_V6_RECORD_SIZE, 1, 6, &c, NULL, 0);
    CHECK(prob(0, "a8b8") == 0.2f && prob(0, "a8b7") == 0.8f);
    CHECK_EQ_U64(c.policies_sharpened, 0);
    cfg.dist_temp = 2.0;
    cfg.dist_offset = 0.1;
    (void)lc_rescore_game(&cfg, game, LC_V6_RECORD_SIZE, 1, 6, &c, NULL, 0);
    CHECK_NEAR(prob(0, "a8b8"), 0.36602540, 1e-6);
    CHECK_NEAR(prob(0, "a8b7"), 0.63397460, 1e-6);
    CHECK_EQ_U64(c.policies_sharpened, 1);
    CHECK_EQ_U64(c.probed, 0);
}

/* A game that never reaches the tables costs one look at its last record
 * and is left as it was; records that are not boards end the tail. */
static void test_untouched(void)
{
    const ply plies[2] = {
        {"Ke1 Qd1 Ra1", "Ke8 Qd8", false, 0, 1},
        {"Ke1 Qd1 Ra1", "Ke8", true, 0, -1},
    };
    build(plies, 2, 6);
    uint8_t copy[2 * LC_V6_RECORD_SIZE];
    memcpy(copy, game, sizeof copy);
    lc_rescore_config cfg = tb_config();
    lc_rescore_counts c = {0};
    (void)lc_rescore_game(&cfg, game, LC_V6_RECORD_SIZE, 2, 6, &c, NULL, 0);
    CHECK(memcmp(copy, game, sizeof copy) == 0);
    CHECK_EQ_U64(c.probed, 0);
    /* Two white kings: not a board; nothing probed, nothing changed. */
    const ply bad[1] = {{"Ke1 Kd4", "Ke8", false, 0, 1}};
    build(bad, 1, 6);
    memcpy(copy, game, LC_V6_RECORD_SIZE);
    (void)lc_rescore_game(&cfg, game, LC_V6_RECORD_SIZE, 1, 6, &c, NULL, 0);
    CHECK(memcmp(copy, game, LC_V6_RECORD_SIZE) == 0);
    CHECK_EQ_U64(c.probed, 0);
}

/* The first of two V6 records played a move 1.4 of q worse than the best
 * (best_q 0.9, played_q -0.5); both searched (V5 upgrades have 0 visits). */
static void blunder_at_first(void)
{
    rec_put_f32(game, offsetof(lc_v6_record, best_q), 0.9f);
    rec_put_f32(game, offsetof(lc_v6_record, played_q), -0.5f);
    for (int i = 0; i < 2; i++)
        rec_put_u32(game + i * LC_V6_RECORD_SIZE, offsetof(lc_v6_record, visits), 100);
}

/* Deblunder runs as step 3 when a threshold is set: r0's played move lost
 * 1.4 of q against the best (0.9 - -0.5) > 0.5, one blunder (four and five
 * pieces: before any tablebase position). */
static void test_deblunder_called(void)
{
    const ply plies[2] = {
        {"Ke1 Qd1 Ra1", "Ke8 Qd8", false, 0, -1},
        {"Ke1 Qd1 Ra1", "Ke8 Qd8", true, 0, 1},
    };
    build(plies, 2, 6);
    blunder_at_first();
    lc_rescore_config cfg = tb_config();
    cfg.deblunder_threshold = 0.5;
    lc_rescore_counts c = {0};
    (void)lc_rescore_game(&cfg, game, LC_V6_RECORD_SIZE, 2, 6, &c, NULL, 0);
    CHECK_EQ_U64(c.blunders, 1);
    /* The same blunder in a position the tables answer (the tail) is left
     * to the tablebase: the deblunder walks only the positions before it. */
    const ply tail[2] = {
        {"Kc3 Rb7", "Kg8", false, 0, -1},
        {"Kc3 Rb7", "Kf8", true, 1, 1},
    };
    build(tail, 2, 6);
    blunder_at_first();
    (void)lc_rescore_game(&cfg, game, LC_V6_RECORD_SIZE, 2, 6, &c, NULL, 0);
    CHECK_EQ_U64(c.blunders, 1);
    CHECK_EQ_INT(result_of(0, 6), 1); /* the tablebase's win for White */
    /* A tail no table answers (the fifty-move counter never 0 there: no
     * probe) is the game's own: the deblunder walks it, finds the blunder,
     * and r0 learns its best line's q, 0.9. */
    const ply unanswered[2] = {
        {"Kc3 Rb7", "Kg8", false, 3, -1},
        {"Kc3 Rb7", "Kf8", true, 4, 1},
    };
    build(unanswered, 2, 6);
    blunder_at_first();
    (void)lc_rescore_game(&cfg, game, LC_V6_RECORD_SIZE, 2, 6, &c, NULL, 0);
    CHECK_EQ_U64(c.hits, 1); /* the first tail's one probe; none here */
    CHECK_EQ_U64(c.blunders, 2);
    float q0;
    memcpy(&q0, game + offsetof(lc_v6_record, result_q), 4);
    CHECK(q0 == 0.9f);
}

int main(void)
{
    test_tempering();
    const char *dir = bt_gaviota_dir();
    if (!dir)
        return check_failures() ? check_finish() : 77;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_tablebases_open(NULL, dir, &tb, &err));
    if (!tb)
        return check_finish();
    test_result_backwards(6);
    test_result_backwards(5);
    test_two_probes();
    test_sharpening();
    test_untouched();
    test_deblunder_called();
    lc_tablebases_close(tb);
    return check_finish();
}
