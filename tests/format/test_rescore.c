/*
 * rescore: lc_rescore_game's results, plies_left and deblunder by
 * upstream's rules (docs/pipelines.md "chunk_rescorer: the rules for one
 * game") on legal games built by hand (game_test.h), probing the real
 * Syzygy tables of tests/syzygy (LCMON_SYZYGY_PATH) and Debian's
 * Gaviota 3-piece tables. The tables' own answers (WDL, DTZ as lc0's
 * probe_dtz gives it, DTM) are quoted where a rule uses them; what the
 * rules make of them is worked out by hand in the comments. Without the
 * Syzygy tables (or a build without Fathom) the test skips (77); without
 * Gaviota only its part is skipped.
 */
#include "check.h"
#include "game_test.h"

#include "format/lc0/rescore/game.h"
#include "format/lc0/rescore/rescore.h"
#include "format/lc0/rescore/tablebase.h"

static gt_game g;
static lc_tablebases *tb;

static lc_rescore_config config(void)
{
    return gt_config(tb);
}

static int run(const lc_rescore_config *cfg, lc_rescore_counts *c)
{
    return gt_rescore(&g, cfg, c);
}

/* Results from White's view: record i's own result times the side. */
static void check_results(const int *white)
{
    for (uint32_t i = 0; i < g.n; i++) {
        int r = gt_result(&g, i), want = g.black[i] ? -white[i] : white[i];
        if (r != want)
            fprintf(stderr, "record %u: result %d, want %d\n", i, r, want);
        CHECK_EQ_INT(r, want);
    }
}

static void check_plies_left(const float *want)
{
    for (uint32_t i = 0; i < g.n; i++) {
        float m = gt_plies_left(&g, i);
        if (m != want[i])
            fprintf(stderr, "record %u: plies_left %g, want %g\n", i, m, want[i]);
        CHECK(m == want[i]);
    }
}

/*
 * Game B: White Kc3 Pa5 against Kh1, White to move; 1. a6 Kg2 2. a7 Kf3
 * 3. a8=Q Ke3, seven records, recorded as a draw throughout.
 *
 * First pass (counter 0, record 0 never probed): r1 (after a6, Black to
 * move) Syzygy: loss, -1; it goes to r1 and back to record 0 (+1). r3
 * (after a7): -1, to r3 and back to the last probe: r2 +1. r5 (after
 * a8=Q, KQK): -1, r4 +1. Second pass (counter not 0): r2 and r4 (White,
 * counter 1): Syzygy win, as the first pass wrote: kept (DTZ 1, 1 + 1 is
 * no fifty-move draw). r6 (White to move after Ke3, counter 1): a win where
 * the game says draw; no repetition (counter 1, r6 itself), DTZ 11:
 * 1 + 11 < 99 proves it: +1. White wins everywhere now.
 * Counts: probed 3 + 3, all answered; 7 results changed; one by the
 * second pass, a DTZ proof.
 *
 * plies_left (were 7 down to 1), Syzygy's DTZ correction: 3-piece pawnless
 * positions only, r5 and r6. r5: DTZ -14, counter 0: r5 14, and back to
 * record 0: r4 15, r3 16, r2 17, r1 18, r0 19. r6: DTZ 11, 1 + 11 < 99: 11.
 */
static void build_b(uint32_t version)
{
    gt_build(&g, version, "Kc3 Pa5", "Kh1", false, 0, "a5a6 h1g2 a6a7 g2f3 a7a8q f3e3", 0);
}

static void test_passes(uint32_t version)
{
    build_b(version);
    lc_rescore_config cfg = config();
    lc_rescore_counts c = {0};
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    const int white[7] = {1, 1, 1, 1, 1, 1, 1};
    check_results(white);
    CHECK_EQ_U64(c.probed, 6);
    CHECK_EQ_U64(c.hits, 6);
    CHECK_EQ_U64(c.results_changed, 7);
    CHECK_EQ_U64(c.games_rescored, 1);
    CHECK_EQ_U64(c.second_pass, 1);
    CHECK_EQ_U64(c.dtz_proofs, 1);
    /* V5 has plies_left (0 as built: the estimate gives 7 - k first). */
    const float plies[7] = {19, 18, 17, 16, 15, 14, 11};
    check_plies_left(plies);
    CHECK_EQ_U64(c.plies_left_changed, 7);
    /* Again: nothing more to change. */
    (void)run(&cfg, &c);
    CHECK_EQ_U64(c.results_changed, 7);
    CHECK_EQ_U64(c.plies_left_changed, 7);
}

/*
 * Game C, KBK: White Kc3 Bb2 against Kh8, counter 5; 1. Kd3 Kg8. Recorded
 * a White win. No counter is 0: no first pass. Second pass: r1 and r2,
 * Syzygy: draw. The game disagrees: a draw (no DTZ needed, the tables
 * saying draw). Record 0 is never probed and keeps its +1.
 */
static void test_disagreement(void)
{
    gt_build(&g, 6, "Kc3 Bb2", "Kh8", false, 5, "c3d3 h8g8", 1);
    lc_rescore_config cfg = config();
    lc_rescore_counts c = {0};
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    const int white[3] = {1, 0, 0};
    check_results(white);
    CHECK_EQ_U64(c.second_pass, 2);
    CHECK_EQ_U64(c.dtz_proofs, 0);
    const float plies[3] = {3, 2, 1}; /* draws: no DTZ correction */
    check_plies_left(plies);
}

/*
 * Game D, KRK with the counter at 68: White Ka1 Rh1 against Ke5;
 * 1. Rh2 Kd4 2. Rh3 Ke4 3. Rh2. Recorded a White win, as the tables say.
 * Second pass, where the game agrees, a DTZ too long for the fifty-move
 * rule makes a draw: counter + |DTZ| > 101.
 *   r1 (Black): 69 + 32 = 101, not over: -1 kept (the rule's edge)
 *   r2 (White): 70 + 29 = 99: +1 kept
 *   r3 (Black): 71 + 32 = 103: draw
 *   r4 (White): 72 + 31 = 103: draw
 *   r5 (Black): 73 + 32 = 105: draw
 * Record 0 keeps +1. The DTZ correction of plies_left needs no repetition
 * over the counter's 69 and more plies, which a 6-record history cannot
 * show: lc0 assumes there were some, nothing changes.
 */
static void test_fifty_moves(void)
{
    gt_build(&g, 6, "Ka1 Rh1", "Ke5", false, 68, "h1h2 e5d4 h2h3 d4e4 h3h2", 1);
    lc_rescore_config cfg = config();
    lc_rescore_counts c = {0};
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    const int white[6] = {1, 1, 1, 0, 0, 0};
    check_results(white);
    CHECK_EQ_U64(c.second_pass, 3);
    CHECK_EQ_U64(c.dtz_proofs, 3);
    const float plies[6] = {6, 5, 4, 3, 2, 1};
    check_plies_left(plies);
}

/*
 * Game E: White Kc3 Rb2 against Kg8 Nb7, counter 5; 1. Rxb7 Kh8 2. Kd3
 * Kg8 3. Kc3 Kh8: r5 is r1's position again, r6 r2's. Recorded a draw.
 *
 * Repetitions (lc0's): r5 (counter 4) equals r1, 4 plies back: 1; r6
 * (counter 5) equals r2: 1; the others 0.
 * First pass: r1 (after Rxb7, counter 0): Syzygy loss for Black: r1 -1,
 * r0 +1. Second pass, the game saying draw where Syzygy says win:
 *   r2 (counter 1; r2 no repetition): DTZ 11, 1 + 11 < 99: +1
 *   r3 (counter 2; r3, r2 none): DTZ -14: -1 for Black
 *   r4 (counter 3; r4, r3, r2 none): DTZ 13: +1
 *   r5 (counter 4): r5 repeats: no proof, the disagreement a draw: 0
 *   r6 (counter 5): r6 repeats: 0
 * plies_left (7 down to 1), DTZ correction: r1 DTZ -16 at counter 0:
 * r1 16, r0 17; r2 11, r3 14, r4 13 (no repetition over their counters);
 * r5 and r6 keep 2 and 1.
 */
static void test_repetition(void)
{
    gt_build(&g, 6, "Kc3 Rb2", "Kg8 Nb7", false, 5, "b2b7 g8h8 c3d3 h8g8 d3c3 g8h8", 0);
    lc_game game;
    lc_game_init(&game);
    char why[256];
    CHECK(lc_game_read(&game, g.rec, g.size, g.n, g.version, why, sizeof why));
    const uint8_t reps[7] = {0, 0, 0, 0, 0, 1, 1};
    const bool no_reps[7] = {false, true, true, true, true, false, false};
    for (uint32_t i = 0; i < 7; i++) {
        CHECK_EQ_INT(game.ply[i].reps, reps[i]);
        CHECK_EQ_INT(lc_game_no_reps(&game, i), no_reps[i]); /* r0: counter 5, history 1 */
        CHECK_EQ_INT(lc_game_repeated_since_zeroing(&game, i), i >= 5);
    }
    lc_game_fini(&game);
    lc_rescore_config cfg = config();
    lc_rescore_counts c = {0};
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    const int white[7] = {1, 1, 1, 1, 1, 0, 0};
    check_results(white);
    CHECK_EQ_U64(c.second_pass, 3);
    CHECK_EQ_U64(c.dtz_proofs, 3);
    CHECK_EQ_U64(c.results_changed, 5);
    const float plies[7] = {17, 16, 11, 14, 13, 2, 1};
    check_plies_left(plies);
}

/*
 * The deblunder game: White Kc3 Rb2 Bf1 against Kg8 Nb7 (5 pieces);
 * 1. Be2 Kh8 2. Rxb7 Kg8 3. Bc4+, six records (r5: Black to move, in
 * check), a White win recorded and confirmed by the tables. r2 (White)
 * played a move 1.0 of q worse than the best (best_q 0.5, played_q -0.5,
 * best_d 0.25, best_m 10); r4 (White) one 1.5 worse (0.75 and -0.75,
 * best_d 0.5, best_m 3). Threshold 1, width 1: a loss over 0.5 starts the
 * switch, ratio min(1, L - 1 + 0.5): r2 0.5, r4 1.
 */
static void build_deblunder(void)
{
    gt_build(&g, 6, "Kc3 Rb2 Bf1", "Kg8 Nb7", false, 0, "f1e2 g8h8 b2b7 h8g8 e2c4", 1);
    const float q[6][4] = {/* best_q, played_q, best_d, best_m */
                           {0, 0, 0, 0},
                           {0, 0, 0, 0},
                           {0.5f, -0.5f, 0.25f, 10},
                           {0, 0, 0, 0},
                           {0.75f, -0.75f, 0.5f, 3},
                           {0, 0, 0, 0}};
    for (uint32_t i = 0; i < 6; i++) {
        rec_put_f32(gt_rec(&g, i), offsetof(lc_v6_record, best_q), q[i][0]);
        rec_put_f32(gt_rec(&g, i), offsetof(lc_v6_record, played_q), q[i][1]);
        rec_put_f32(gt_rec(&g, i), offsetof(lc_v6_record, best_d), q[i][2]);
        rec_put_f32(gt_rec(&g, i), offsetof(lc_v6_record, best_m), q[i][3]);
    }
}

typedef struct target {
    float q, d, m;
} target;

static void check_targets(const target *want)
{
    for (uint32_t i = 0; i < g.n; i++) {
        float q = gt_f32(&g, i, offsetof(lc_v6_record, result_q));
        float d = gt_f32(&g, i, offsetof(lc_v6_record, result_d));
        float m = gt_plies_left(&g, i);
        if (q != want[i].q || d != want[i].d || m != want[i].m)
            fprintf(stderr, "record %u: %g %g %g, want %g %g %g\n", i, q, d, m, want[i].q,
                    want[i].d, want[i].m);
        CHECK(q == want[i].q && d == want[i].d && m == want[i].m);
    }
}

/*
 * Upstream's deblunder. The region: the records before the first one after
 * record 0 with no castling right and at most the tables' 4 pieces: r3
 * (after Rxb7): records 0-2. The start: the LAST record's targets, r5's
 * (-1, 0, 1) (Black to move), carried back unchanged to r2 although r2 is
 * White's. r4's blunder is past the region.
 *   r2: ratio 0.5: q 0.5 * -1 + 0.5 * 0.5 = -0.25, d 0.5 * 0 + 0.5 * 0.25
 *       = 0.125, m 0.5 * 1 + 0.5 * 10 = 5.5
 *   r1: (0.25, 0.125, 6.5)       r0: (-0.25, 0.125, 7.5)
 * Without tables the region is the whole game (k = 5 down): r5 no
 * blunder, then (1, 0, 2) at r4: ratio 1: (0.75, 0.5, 3); r3 (-0.75, 0.5,
 * 4); r2 carried (0.75, 0.5, 5), ratio 0.5: q 0.375 + 0.25 = 0.625,
 * d 0.25 + 0.125 = 0.375, m 2.5 + 5 = 7.5; r1 (-0.625, 0.375, 8.5); r0
 * (0.625, 0.375, 9.5).
 */
static void test_deblunder_upstream(void)
{
    build_deblunder();
    lc_rescore_config cfg = config();
    cfg.deblunder_threshold = 1.0;
    cfg.deblunder_width = 1.0;
    lc_rescore_counts c = {0};
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    const target want[6] = {{-0.25f, 0.125f, 7.5f},
                            {0.25f, 0.125f, 6.5f},
                            {-0.25f, 0.125f, 5.5f},
                            {-1, 0, 3},
                            {1, 0, 2},
                            {-1, 0, 1}};
    check_targets(want);
    CHECK_EQ_U64(c.blunders, 1);
    CHECK_EQ_U64(c.deblundered, 3);

    build_deblunder();
    cfg.tb = NULL;
    c = (lc_rescore_counts){0};
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    const target whole[6] = {{0.625f, 0.375f, 9.5f}, {-0.625f, 0.375f, 8.5f},
                             {0.625f, 0.375f, 7.5f}, {-0.75f, 0.5f, 4},
                             {0.75f, 0.5f, 3},       {-1, 0, 1}};
    check_targets(whole);
    CHECK_EQ_U64(c.blunders, 2);

    /* The last record not searched (visits 0, as V5 upgrades have): no
     * deblunder at all. A NaN threshold: none either. */
    build_deblunder();
    rec_put_u32(gt_rec(&g, 5), offsetof(lc_v6_record, visits), 0);
    cfg.tb = tb;
    c = (lc_rescore_counts){0};
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    const target untouched[6] = {{1, 0, 6},  {-1, 0, 5}, {1, 0, 4},
                                 {-1, 0, 3}, {1, 0, 2},  {-1, 0, 1}};
    check_targets(untouched);
    CHECK_EQ_U64(c.blunders, 0);
    build_deblunder();
    cfg.deblunder_threshold = NAN;
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    check_targets(untouched);
    CHECK_EQ_U64(c.blunders, 0);

    /* Other records' visits are not looked at: r1, unsearched (visits 0),
     * lost 1.8 (best 0.9, played -0.9, best_d 0, best_m 0): ratio
     * min(1, 0.8 + 0.5) = 1. r2 as above (0.25, 0.125, 6.5) reaches r1,
     * blended whole: (0.9, 0, 0); r0 (-0.9, 0, 1). */
    build_deblunder();
    rec_put_u32(gt_rec(&g, 1), offsetof(lc_v6_record, visits), 0);
    rec_put_f32(gt_rec(&g, 1), offsetof(lc_v6_record, best_q), 0.9f);
    rec_put_f32(gt_rec(&g, 1), offsetof(lc_v6_record, played_q), -0.9f);
    cfg.deblunder_threshold = 1.0;
    c = (lc_rescore_counts){0};
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    const target searched[6] = {{-0.9f, 0, 1}, {0.9f, 0, 0}, {-0.25f, 0.125f, 5.5f},
                                {-1, 0, 3},    {1, 0, 2},    {-1, 0, 1}};
    check_targets(searched);
    CHECK_EQ_U64(c.blunders, 2);
}

/*
 * deblunder_lcmon: lcmon's region (before the first record a table
 * answered: r3, the same here), start (the blunder's own targets: r2's
 * (1, 0, 4)) and visits (each record's). r2: q 0.5 * 1 + 0.25 = 0.75,
 * d 0.125, m 0.5 * 4 + 5 = 7; r1 (-0.75, 0.125, 8); r0 (0.75, 0.125, 9).
 * r1 unsearched with its blunder: skipped, the same values; the last
 * record unsearched: no matter.
 */
static void test_deblunder_lcmon(void)
{
    build_deblunder();
    rec_put_u32(gt_rec(&g, 5), offsetof(lc_v6_record, visits), 0);
    rec_put_u32(gt_rec(&g, 1), offsetof(lc_v6_record, visits), 0);
    rec_put_f32(gt_rec(&g, 1), offsetof(lc_v6_record, best_q), 0.9f);
    rec_put_f32(gt_rec(&g, 1), offsetof(lc_v6_record, played_q), -0.9f);
    lc_rescore_config cfg = config();
    cfg.deblunder_threshold = 1.0;
    cfg.deblunder_width = 1.0;
    cfg.deblunder_lcmon = true;
    lc_rescore_counts c = {0};
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    const target want[6] = {{0.75f, 0.125f, 9}, {-0.75f, 0.125f, 8}, {0.75f, 0.125f, 7},
                            {-1, 0, 3},         {1, 0, 2},           {-1, 0, 1}};
    check_targets(want);
    CHECK_EQ_U64(c.blunders, 1);
}

/*
 * With Gaviota's tables too, plies_left comes from the distance to mate
 * and not from Syzygy's DTZ. Game B after both passes: every result a
 * White win. Gaviota, records 1 to 6 (all mates within reach, counters 0
 * or 1, no repetition): DTM 18, 17, 16, 15, 14, 11. Each goes to the
 * records back to the previous one (upstream's loop starts from record 0
 * as "previous"): r1's reaches none, r2's r2 (17), r3 16, r4 15, r5 14,
 * r6 11. r0 and r1 keep 7 and 6.
 */
static void test_gaviota_plies_left(void)
{
    build_b(6);
    lc_rescore_config cfg = config();
    lc_rescore_counts c = {0};
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    const float plies[7] = {7, 6, 17, 16, 15, 14, 11};
    check_plies_left(plies);
    CHECK_EQ_U64(c.plies_left_changed, 5);
    const int white[7] = {1, 1, 1, 1, 1, 1, 1};
    check_results(white);
}

/*
 * gaviota_results, with Gaviota's tables alone: Gaviota's WDL gives the
 * first pass's results (upstream would leave them). White Kc3 Rb2 against
 * Kg8 Nb7, counter 5; 1. Rxb7 Kf8 2. Kd3, recorded a draw. r1 (after the
 * capture, counter 0), KRK: Black loses: r1 -1, r0 +1; r2, r3 after the
 * last probe keep 0 (no Syzygy: no second pass). Without the switch:
 * nothing changes.
 */
static void test_gaviota_results(uint32_t version)
{
    gt_build(&g, version, "Kc3 Rb2", "Kg8 Nb7", false, 5, "b2b7 g8f8 c3d3", 0);
    lc_rescore_config cfg = config();
    lc_rescore_counts c = {0};
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    const int none[4] = {0, 0, 0, 0};
    check_results(none);
    CHECK_EQ_U64(c.probed, 0);
    cfg.gaviota_results = true;
    CHECK_EQ_INT(run(&cfg, &c), LC_RESCORE_KEPT);
    const int white[4] = {1, 1, 0, 0};
    check_results(white);
    CHECK_EQ_U64(c.probed, 1);
    CHECK_EQ_U64(c.hits, 1);
    CHECK_EQ_U64(c.results_changed, 2);
}

static bool open_tables(const char *syzygy, const char *gaviota)
{
    return (tb = gt_open(syzygy, gaviota)) != NULL;
}

int main(void)
{
    const char *syzygy = getenv("LCMON_SYZYGY_PATH");
    if (!lc_tablebases_have_syzygy() || !syzygy || !*syzygy) {
        printf("SKIP: no Syzygy (a build without libfathom-dev, or LCMON_SYZYGY_PATH unset)\n");
        return 77;
    }
    if (!open_tables(syzygy, NULL))
        return check_finish();
    test_passes(6);
    test_passes(5);
    test_disagreement();
    test_fifty_moves();
    test_repetition();
    test_deblunder_upstream();
    test_deblunder_lcmon();
    lc_tablebases_close(tb);
    const char *gaviota = bt_gaviota_dir();
    if (gaviota && open_tables(syzygy, gaviota)) {
        test_gaviota_plies_left();
        lc_tablebases_close(tb);
    }
    if (gaviota && open_tables(NULL, gaviota)) {
        test_gaviota_results(6);
        test_gaviota_results(5);
        lc_tablebases_close(tb);
    }
    return check_finish();
}
