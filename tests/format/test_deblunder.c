/*
 * deblunder: a five-ply game of hand-built V6 (and V7) records whose
 * targets after lc_deblunder were worked out by hand below, for a sharp
 * threshold, for a width (two blunders, one blended on top of the other),
 * and for a terminal blunder; a game without a blunder, records of 0
 * visits and V5 records come out bit-identical; the counts are checked.
 * Upstream's rule (lc_deblunder_upstream) on the same game: the same
 * targets over the whole game, its own where the region ends early.
 * docs/pipelines.md "Deblunder" gives the rules.
 */
#include "check.h"
#include "records.h"

#include "format/lc0/rescore/deblunder.h"
#include "format/lc0/record.h"

#include <stdlib.h>

#define PLIES 5

/* One position's fields that the deblunder reads. */
typedef struct pos {
    float best_q, played_q, best_d, best_m;
    uint8_t invariance;
} pos;

/*
 * White wins in five plies: positions 0, 2, 4 are white's (result_q +1),
 * 1 and 3 black's (-1); result_d 0; plies_left 5, 4, 3, 2, 1. Position 3
 * (black) played a move that lost 1.0 of q (best 0.5, played -0.5);
 * position 1 (black) one that lost 0.5 (best 0.75, played 0.25); the
 * others lost nothing.
 */
static const pos game[PLIES] = {
    {0.25f, 0.25f, 0.5f, 30.0f, 0}, {0.75f, 0.25f, 0.5f, 20.0f, 0}, {0.25f, 0.25f, 0.5f, 30.0f, 0},
    {0.5f, -0.5f, 0.25f, 10.0f, 0}, {0.75f, 0.75f, 0.0f, 1.0f, 0},
};

static uint8_t *build(const pos *p, uint32_t version, size_t size, uint32_t visits)
{
    uint8_t *buf = calloc(PLIES, size);
    for (int i = 0; i < PLIES; i++) {
        uint8_t *r = buf + (size_t)i * size;
        for (size_t b = 0; b < size; b++) /* every other byte non-zero: nothing else may move */
            r[b] = (uint8_t)(b * 7 + (size_t)i);
        rec_put_u32(r, offsetof(lc_v6_record, version), version);
        if (size < LC_V6_RECORD_SIZE)
            continue; /* a V5 record: only its version and bytes */
        rec_put_u8(r, offsetof(lc_v6_record, invariance_info), p[i].invariance);
        rec_put_f32(r, offsetof(lc_v6_record, best_q), p[i].best_q);
        rec_put_f32(r, offsetof(lc_v6_record, played_q), p[i].played_q);
        rec_put_f32(r, offsetof(lc_v6_record, best_d), p[i].best_d);
        rec_put_f32(r, offsetof(lc_v6_record, best_m), p[i].best_m);
        rec_put_f32(r, offsetof(lc_v6_record, result_q), i % 2 ? -1.0f : 1.0f);
        rec_put_f32(r, offsetof(lc_v6_record, result_d), 0.0f);
        rec_put_f32(r, offsetof(lc_v6_record, plies_left), (float)(PLIES - i));
        rec_put_u32(r, offsetof(lc_v6_record, visits), visits);
    }
    return buf;
}

/* The targets expected after the deblunder, position by position. */
typedef struct want {
    float q, d, m;
} want;

static void check_targets(const uint8_t *buf, size_t size, const want *w)
{
    for (int i = 0; i < PLIES; i++) {
        const uint8_t *r = buf + (size_t)i * size;
        float q, d, m;
        LC_REC_GET(r, result_q, q);
        LC_REC_GET(r, result_d, d);
        LC_REC_GET(r, plies_left, m);
        if (q != w[i].q || d != w[i].d || m != w[i].m)
            fprintf(stderr, "position %d: %g %g %g, want %g %g %g\n", i, q, d, m, w[i].q, w[i].d,
                    w[i].m);
        CHECK(q == w[i].q && d == w[i].d && m == w[i].m); /* every value is exact in binary */
    }
}

/* Everything but result_q, result_d and plies_left as before. */
static void check_rest_unchanged(const uint8_t *a, const uint8_t *b, size_t size)
{
    const size_t lo = offsetof(lc_v6_record, plies_left), hi = lo + 12;
    for (int i = 0; i < PLIES; i++) {
        const uint8_t *ra = a + (size_t)i * size, *rb = b + (size_t)i * size;
        CHECK(memcmp(ra, rb, lo) == 0);
        CHECK(memcmp(ra + hi, rb + hi, size - hi) == 0);
    }
}

static void test_sharp(uint32_t version, size_t size)
{
    /* Threshold 0.75, no width. Walking back from position 4:
     *   4: lost 0 of q, no blunder, untouched        ( 1,    0,    1)
     *   3: lost 1.0 > 0.75, a whole blunder: the best line's value
     *      (best_q, best_d, best_m)                   ( 0.5,  0.25, 10)
     *   2: one ply back: q negated, one more ply      (-0.5,  0.25, 11)
     *   1: lost 0.5, not > 0.75: carried on           ( 0.5,  0.25, 12)
     *   0:                                             (-0.5,  0.25, 13)
     * One blunder, four positions changed. */
    const want w[PLIES] = {
        {-0.5f, 0.25f, 13}, {0.5f, 0.25f, 12}, {-0.5f, 0.25f, 11}, {0.5f, 0.25f, 10}, {1, 0, 1},
    };
    uint8_t *buf = build(game, version, size, 100), *orig = build(game, version, size, 100);
    uint64_t blunders = 7, changed = 9; /* added to, not reset */
    lc_deblunder(buf, size, PLIES, version, 0.75, 0.0, &blunders, &changed);
    check_targets(buf, size, w);
    check_rest_unchanged(buf, orig, size);
    CHECK_EQ_U64(blunders, 8);
    CHECK_EQ_U64(changed, 13);
    free(buf);
    free(orig);
}

static void test_width(void)
{
    /* Threshold 0.75, width 1: a loss over 0.75 - 1/2 = 0.25 starts the
     * switch, ratio = min(1, (loss - 0.75) / 1 + 0.5).
     *   4: lost 0, untouched                           ( 1,        0,        1)
     *   3: lost 1.0: ratio 0.75, blended with its own target (-1, 0, 2):
     *      q 0.25 * -1 + 0.75 * 0.5  =  0.125
     *      d 0.25 *  0 + 0.75 * 0.25 =  0.1875
     *      m 0.25 *  2 + 0.75 * 10   =  8               ( 0.125,    0.1875,   8)
     *   2: one ply back                                 (-0.125,    0.1875,   9)
     *   1: carried in: (0.125, 0.1875, 10); lost 0.5 > 0.25, ratio
     *      (0.5 - 0.75) + 0.5 = 0.25, blended with (0.75, 0.5, 20):
     *      q 0.75 * 0.125  + 0.25 * 0.75 = 0.28125
     *      d 0.75 * 0.1875 + 0.25 * 0.5  = 0.265625
     *      m 0.75 * 10     + 0.25 * 20   = 12.5         ( 0.28125,  0.265625, 12.5)
     *   0:                                              (-0.28125,  0.265625, 13.5)
     * Two blunders, four positions changed. */
    const want w[PLIES] = {
        {-0.28125f, 0.265625f, 13.5f},
        {0.28125f, 0.265625f, 12.5f},
        {-0.125f, 0.1875f, 9},
        {0.125f, 0.1875f, 8},
        {1, 0, 1},
    };
    uint8_t *buf = build(game, 6, LC_V6_RECORD_SIZE, 100);
    uint64_t blunders = 0, changed = 0;
    lc_deblunder(buf, LC_V6_RECORD_SIZE, PLIES, 6, 0.75, 1.0, &blunders, &changed);
    check_targets(buf, LC_V6_RECORD_SIZE, w);
    CHECK_EQ_U64(blunders, 2);
    CHECK_EQ_U64(changed, 4);
    free(buf);
}

static void test_terminal(void)
{
    /* Threshold 1.5 (no loss of q reaches it), width 1. Position 2's best
     * move was a proven win (best_q 1, invariance bit 3) and it played a
     * move of q 0.25: a terminal blunder, always whole whatever the width.
     *   4, 3: untouched                (1, 0, 1), (-1, 0, 2)
     *   2: the best line's value        ( 1,   0.5, 30)
     *   1: lost 0.5, under 1.5 - 0.5:   (-1,   0.5, 31)
     *   0:                              ( 1,   0.5, 32)
     * Position 0 keeps result_q 1 but its result_d and plies_left change. */
    pos g[PLIES];
    memcpy(g, game, sizeof g);
    g[2] = (pos){1.0f, 0.25f, 0.5f, 30.0f, 8};
    g[3].played_q = g[3].best_q; /* no other loss */
    const want w[PLIES] = {{1, 0.5f, 32}, {-1, 0.5f, 31}, {1, 0.5f, 30}, {-1, 0, 2}, {1, 0, 1}};
    uint8_t *buf = build(g, 6, LC_V6_RECORD_SIZE, 100);
    uint64_t blunders = 0, changed = 0;
    lc_deblunder(buf, LC_V6_RECORD_SIZE, PLIES, 6, 1.5, 1.0, &blunders, &changed);
    check_targets(buf, LC_V6_RECORD_SIZE, w);
    CHECK_EQ_U64(blunders, 1);
    CHECK_EQ_U64(changed, 3);
    /* The same proven win without bit 3 is no blunder: nothing moves. */
    g[2].invariance = 0;
    uint8_t *plain = build(g, 6, LC_V6_RECORD_SIZE, 100),
            *orig = build(g, 6, LC_V6_RECORD_SIZE, 100);
    blunders = changed = 0;
    lc_deblunder(plain, LC_V6_RECORD_SIZE, PLIES, 6, 1.5, 1.0, &blunders, &changed);
    CHECK(memcmp(plain, orig, (size_t)PLIES * LC_V6_RECORD_SIZE) == 0);
    CHECK_EQ_U64(blunders, 0);
    CHECK_EQ_U64(changed, 0);
    free(buf);
    free(plain);
    free(orig);
}

/* Records left bit-identical, and nothing counted. */
static void check_untouched(uint32_t version, size_t size, uint32_t visits, double threshold,
                            double width)
{
    uint8_t *buf = build(game, version, size, visits), *orig = build(game, version, size, visits);
    uint64_t blunders = 0, changed = 0;
    lc_deblunder(buf, size, PLIES, version, threshold, width, &blunders, &changed);
    CHECK(memcmp(buf, orig, (size_t)PLIES * size) == 0);
    CHECK_EQ_U64(blunders, 0);
    CHECK_EQ_U64(changed, 0);
    free(buf);
    free(orig);
}

static void check_untouched_upstream(void)
{
    uint8_t *buf = build(game, 6, LC_V6_RECORD_SIZE, 100), *orig;
    rec_put_u32(buf + (PLIES - 1) * LC_V6_RECORD_SIZE, offsetof(lc_v6_record, visits), 0);
    orig = malloc((size_t)PLIES * LC_V6_RECORD_SIZE);
    memcpy(orig, buf, (size_t)PLIES * LC_V6_RECORD_SIZE);
    uint64_t blunders = 0, changed = 0;
    lc_deblunder_upstream(buf, LC_V6_RECORD_SIZE, PLIES, PLIES, 6, 0.75, 0.0, &blunders, &changed);
    CHECK(memcmp(buf, orig, (size_t)PLIES * LC_V6_RECORD_SIZE) == 0);
    CHECK_EQ_U64(blunders, 0);
    free(buf);
    free(orig);
}

static void test_untouched(void)
{
    /* No loss over 1.5, none over 1.5 - 0.5 with a width. */
    check_untouched(6, LC_V6_RECORD_SIZE, 100, 1.5, 0.0);
    check_untouched(6, LC_V6_RECORD_SIZE, 100, 1.5, 1.0);
    /* A loss exactly at the threshold is not over it. */
    check_untouched(6, LC_V6_RECORD_SIZE, 100, 1.0, 0.0);
    /* Records of 0 visits (upgraded from V5): played_q is no search's. */
    check_untouched(6, LC_V6_RECORD_SIZE, 0, 0.75, 0.0);
    /* V5 records have no played_q; NaN threshold is "no deblunder". */
    check_untouched(5, LC_V5_RECORD_SIZE, 100, 0.75, 0.0);
    check_untouched(6, LC_V6_RECORD_SIZE, 100, NAN, 0.0);
    /* NULL counters are allowed. */
    uint8_t *buf = build(game, 6, LC_V6_RECORD_SIZE, 100);
    lc_deblunder(buf, LC_V6_RECORD_SIZE, PLIES, 6, 0.75, 0.0, NULL, NULL);
    float q;
    LC_REC_GET(buf, result_q, q);
    CHECK(q == -0.5f);
    free(buf);
}

static void test_upstream(void)
{
    /* Upstream's walk over the whole game, threshold 0.75 and no width:
     * the start is the last position's (1, 0, 1), turned every step:
     * (-1, 0, 2) at 3, where the blunder takes the best line's value; from
     * there as lcmon's (the game's targets agree): the same as test_sharp. */
    const want sharp[PLIES] = {
        {-0.5f, 0.25f, 13}, {0.5f, 0.25f, 12}, {-0.5f, 0.25f, 11}, {0.5f, 0.25f, 10}, {1, 0, 1},
    };
    uint8_t *buf = build(game, 6, LC_V6_RECORD_SIZE, 100);
    uint64_t blunders = 0, changed = 0;
    lc_deblunder_upstream(buf, LC_V6_RECORD_SIZE, PLIES, PLIES, 6, 0.75, 0.0, &blunders, &changed);
    check_targets(buf, LC_V6_RECORD_SIZE, sharp);
    CHECK_EQ_U64(blunders, 1);
    CHECK_EQ_U64(changed, 4);
    free(buf);
    /* A region of positions 0-2, width 1: the start (1, 0, 1) is position
     * 4's, not turned for the two positions between (upstream's rule).
     *   2: no blunder, not started; turned: (-1, 0, 2)
     *   1: lost 0.5 > 0.25, ratio 0.25: q 0.75 * -1 + 0.25 * 0.75 = -0.5625,
     *      d 0.25 * 0.5 = 0.125, m 0.75 * 2 + 0.25 * 20 = 6.5
     *   0: (0.5625, 0.125, 7.5)
     * Positions 2-4 keep theirs (3's blunder is outside the region). */
    const want region[PLIES] = {
        {0.5625f, 0.125f, 7.5f}, {-0.5625f, 0.125f, 6.5f}, {1, 0, 3}, {-1, 0, 2}, {1, 0, 1},
    };
    buf = build(game, 6, LC_V6_RECORD_SIZE, 100);
    blunders = changed = 0;
    lc_deblunder_upstream(buf, LC_V6_RECORD_SIZE, PLIES, 3, 6, 0.75, 1.0, &blunders, &changed);
    check_targets(buf, LC_V6_RECORD_SIZE, region);
    CHECK_EQ_U64(blunders, 1);
    CHECK_EQ_U64(changed, 2);
    free(buf);
    /* The last position unsearched: nothing, whatever the others. */
    check_untouched_upstream();
}

int main(void)
{
    test_sharp(6, LC_V6_RECORD_SIZE);
    test_sharp(7, LC_V7_RECORD_SIZE);
    test_width();
    test_terminal();
    test_untouched();
    test_upstream();
    return check_finish();
}
