/*
 * rescore_validate: upstream's Validate in lc_rescore_game, check by check.
 * A legal three-record game (game_test.h: White Kc3 Bb2 against Kh8,
 * counter 5; 1. Kd3 Kg8, a draw) passes; each check is then broken in one
 * field of one record: the game is dropped (LC_RESCORE_DROPPED, counted),
 * untouched, with a reason naming the record and the field; with
 * keep_invalid the same game is kept. No tables are needed: upstream's
 * checks do not ask them.
 */
#include "check.h"
#include "game_test.h"

#include "format/lc0/rescore/rescore.h"

static gt_game g;
static char why[256];

static void build(void)
{
    gt_build(&g, 6, "Kc3 Bb2", "Kh8", false, 5, "c3d3 h8g8", 0);
}

/* Run g with the defaults, then with keep_invalid; the default's result. */
static int run_both(void)
{
    lc_rescore_config cfg;
    lc_rescore_config_init(&cfg);
    lc_rescore_counts c = {0};
    static uint8_t before[GT_MAX_PLIES * LC_V6_RECORD_SIZE];
    size_t bytes = (size_t)g.n * g.size;
    memcpy(before, g.rec, bytes);
    int rc = lc_rescore_game(&cfg, g.rec, g.size, g.n, g.version, &c, why, sizeof why);
    CHECK_EQ_U64(c.dropped, rc == LC_RESCORE_DROPPED);
    if (rc == LC_RESCORE_DROPPED)
        CHECK(memcmp(before, g.rec, bytes) == 0 || strstr(why, "result_q is") != NULL);
    char kept_why[256];
    cfg.keep_invalid = true;
    memcpy(g.rec, before, bytes);
    CHECK_EQ_INT(
        lc_rescore_game(&cfg, g.rec, g.size, g.n, g.version, &c, kept_why, sizeof kept_why),
        LC_RESCORE_KEPT);
    CHECK_EQ_STR(kept_why, why); /* the reason is still told */
    return rc;
}

static void expect_drop(const char *what, const char *reason)
{
    int rc = run_both();
    CHECK_EQ_INT(rc, LC_RESCORE_DROPPED);
    if (!strstr(why, reason))
        fprintf(stderr, "%s: reason \"%s\", want \"%s\"\n", what, why, reason);
    CHECK(strstr(why, reason) != NULL);
}

static void expect_kept(const char *what)
{
    int rc = run_both();
    if (rc != LC_RESCORE_KEPT)
        fprintf(stderr, "%s: dropped: %s\n", what, why);
    CHECK_EQ_INT(rc, LC_RESCORE_KEPT);
    CHECK_EQ_STR(why, "");
}

#define OFF(field) offsetof(lc_v6_record, field)

/* A float field of one record, and the reason it must give. */
typedef struct float_case {
    uint32_t record;
    size_t off;
    float value;
    const char *reason;
} float_case;

static void test_fields(void)
{
    build();
    expect_kept("the game as built");
    static const float_case cases[] = {
        {0, OFF(best_d), 1.5f, "record 0: best_d is 1.5, outside [0, 1]"},
        {1, OFF(root_d), -0.25f, "record 1: root_d is -0.25, outside [0, 1]"},
        {2, OFF(best_q), 1.5f, "record 2: best_q is 1.5, outside [-1, 1]"},
        {0, OFF(root_q), -1.5f, "record 0: root_q is -1.5"},
        {0, OFF(root_m), -1.0f, "record 0: root_m is -1, under 0"},
        {1, OFF(best_m), -1.0f, "record 1: best_m is -1, under 0"},
        {2, OFF(plies_left), -1.0f, "record 2: plies_left is -1, under 0"},
        {1, OFF(plies_left), NAN, "record 1: plies_left is nan"},
        {0, OFF(result_q), 1.5f, "record 0: result_q is 1.5, outside [-1, 1]"},
        {1, OFF(result_d), -0.5f, "record 1: result_d is -0.5, under 0"},
        {2, OFF(played_q), 2.0f, "record 2: played_q is 2"},
        {0, OFF(played_d), -1.0f, "record 0: played_d is -1"},
        {0, OFF(played_m), -1.0f, "record 0: played_m is -1"},
        {1, OFF(orig_q), 2.0f, "record 1: orig_q is 2"},
        {1, OFF(orig_d), 1.5f, "record 1: orig_d is 1.5"},
        {2, OFF(orig_m), -3.0f, "record 2: orig_m is -3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        build();
        rec_put_f32(gt_rec(&g, cases[i].record), cases[i].off, cases[i].value);
        expect_drop(cases[i].reason, cases[i].reason);
    }
    /* orig_* NaN (as built: unknown) and 0 pass. */
    build();
    rec_put_f32(gt_rec(&g, 1), OFF(orig_q), 0.0f);
    expect_kept("orig_q 0");
}

static void test_bytes(void)
{
    build();
    rec_put_u32(gt_rec(&g, 1), OFF(input_format), 7);
    expect_drop("format 7", "record 1: input_format 7");
    build();
    rec_put_u8(gt_rec(&g, 0), OFF(castling_us_oo), 2);
    expect_drop("castling 2", "record 0: castling_us_oo is 2 (format 1: 0 or 1");
    build();
    rec_put_u8(gt_rec(&g, 2), OFF(side_to_move_or_enpassant), 2);
    expect_drop("stm 2", "record 2: side_to_move_or_enpassant is 2");
    build();
    rec_put_u8(gt_rec(&g, 1), OFF(rule50_count), 101);
    expect_drop("rule50 101", "record 1: rule50_count is 101, over 100");
    build();
    rec_put_u16(gt_rec(&g, 0), OFF(best_idx), 1900);
    expect_drop("best_idx", "record 0: best_idx is 1900, over 1858");
}

/* Index of a move not legal at record 0 (a1a2 is not White's). */
static unsigned illegal_index(void)
{
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++) {
        float v;
        memcpy(&v, gt_rec(&g, 0) + 8 + 4 * (size_t)i, 4);
        if (v == -1.0f)
            return i;
    }
    return 0;
}

static void test_policy(void)
{
    build();
    unsigned bad = illegal_index();
    char reason[128];
    rec_put_prob(gt_rec(&g, 0), bad, 1.5f);
    snprintf(reason, sizeof reason, "record 0: probability %u is 1.5", bad);
    expect_drop("probability 1.5", reason);
    build();
    rec_put_prob(gt_rec(&g, 0), bad, -0.5f);
    snprintf(reason, sizeof reason, "record 0: probability %u is -0.5", bad);
    expect_drop("probability -0.5", reason);
    /* NaN is allowed, and not summed. */
    build();
    rec_put_prob(gt_rec(&g, 0), bad, NAN);
    expect_kept("a NaN entry");
    /* The sum: the played move alone at 0.93. */
    build();
    gt_zero_policy(&g, 1);
    gt_set_prob(&g, 1, "h8g8", 0.93f);
    expect_drop("sum", "record 1: probabilities sum to 0.93 (upstream drops games outside "
                       "0.99..1.01)");
    /* 0.995 is inside. */
    gt_set_prob(&g, 1, "h8g8", 0.995f);
    expect_kept("sum 0.995");
    /* The played move (and best, the same here) marked illegal in a
     * searched record; not searched: the move check says so instead; with
     * invariance_info bit 6 (a record kept only for the history) it may. */
    build();
    float share = gt_prob(&g, 0, "c3d3");
    gt_set_prob(&g, 0, "c3d3", -1.0f);
    gt_set_prob(&g, 0, "c3c4", 2.0f * share); /* the sum stays whole */
    expect_drop("played illegal", "record 0: the played move (index");
    rec_put_u32(gt_rec(&g, 0), OFF(visits), 0);
    expect_drop("move illegal", "record 0: the move to record 1 (index");
    rec_put_u8(gt_rec(&g, 0), OFF(invariance_info), 64);
    expect_kept("history-only record");
}

static void test_moves(void)
{
    /* played_idx of a searched record is the move to the next record. */
    build();
    lc_move other = gt_move(&g.pos[0], false, "c3c4", 4);
    rec_put_u16(gt_rec(&g, 0), OFF(played_idx), other.policy);
    char reason[128];
    lc_move m = gt_move(&g.pos[0], false, "c3d3", 4);
    snprintf(reason, sizeof reason, "record 0: played_idx is %u, but the move to record 1 is %u",
             other.policy, m.policy);
    expect_drop("played_idx", reason);
    /* Records out of order: r1 and r2 swapped. */
    build();
    uint8_t tmp[LC_V6_RECORD_SIZE];
    memcpy(tmp, gt_rec(&g, 1), sizeof tmp);
    memcpy(gt_rec(&g, 1), gt_rec(&g, 2), sizeof tmp);
    memcpy(gt_rec(&g, 2), tmp, sizeof tmp);
    expect_drop("order", "record 1: no legal move of record 0 leads to its board");
    /* A board with two white kings. */
    build();
    uint64_t kings = lc_rec_plane(gt_rec(&g, 2), 5) | bt_plane_word(1ull << 63);
    rec_put_u64(gt_rec(&g, 2), OFF(planes) + 8 * 5, kings);
    expect_drop("two kings", "record 2: its planes are not a board");
    /* Empty; an unknown version. */
    lc_rescore_config cfg;
    lc_rescore_config_init(&cfg);
    lc_rescore_counts c = {0};
    CHECK_EQ_INT(lc_rescore_game(&cfg, g.rec, g.size, 0, 6, &c, why, sizeof why),
                 LC_RESCORE_DROPPED);
    CHECK(strstr(why, "no records") != NULL);
    CHECK_EQ_INT(lc_rescore_game(&cfg, g.rec, g.size, 3, 9, &c, why, sizeof why),
                 LC_RESCORE_DROPPED);
    CHECK(strstr(why, "version 9") != NULL);
    CHECK_EQ_U64(c.dropped, 2);
    CHECK_EQ_U64(c.games, 2);
}

/*
 * ResultForData: upstream refuses a game when a result it reads is not -1,
 * 0 or 1, and which it reads depends on the steps: record 0's always (the
 * first pass counts it); then, before the plies_left corrections, every
 * record's up to the first that is not a draw (IsAllDraws).
 */
static void test_whole_results(void)
{
    build();
    rec_put_f32(gt_rec(&g, 0), OFF(result_q), 0.5f);
    rec_put_f32(gt_rec(&g, 0), OFF(result_d), 0.5f);
    expect_drop("r0 0.5", "record 0: result_q is 0.5, not -1, 0 or 1");
    /* r2 0.5 behind draws: IsAllDraws reaches it. */
    build();
    rec_put_f32(gt_rec(&g, 2), OFF(result_q), 0.5f);
    rec_put_f32(gt_rec(&g, 2), OFF(result_d), 0.5f);
    expect_drop("r2 0.5", "record 2: result_q is 0.5");
    /* r2 0.5 behind a win at r0: IsAllDraws stops at r0, and without
     * tables nothing else reads r2: upstream takes the game. */
    build();
    const int white[3] = {1, 1, 1};
    gt_set_results(&g, white);
    rec_put_f32(gt_rec(&g, 2), OFF(result_q), 0.5f);
    rec_put_f32(gt_rec(&g, 2), OFF(result_d), 0.5f);
    expect_kept("r2 0.5 unread");
    /* V5: the result byte must be -1, 0 or 1 (lc0's reader refuses others). */
    gt_build(&g, 5, "Kc3 Bb2", "Kh8", false, 5, "c3d3 h8g8", 0);
    expect_kept("V5 game");
    gt_rec(&g, 1)[OFF(dummy)] = 2;
    expect_drop("V5 result 2", "record 1: the result byte is 2");
}

int main(void)
{
    test_fields();
    test_bytes();
    test_policy();
    test_moves();
    test_whole_results();
    return check_finish();
}
