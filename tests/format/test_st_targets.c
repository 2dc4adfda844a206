/*
 * st_targets: the short-term targets of st_targets.h.
 *
 *   - Float (the default, upstream's arithmetic): bit for bit equal to the
 *     reference of tests/lib/st_reference.h, written on its own (the sign
 *     domain as an array, the average, the signs put back), on a 4-ply game whose float values are
 *     worked out below step by step, on 1000 random games of 1 to 300
 *     plies (fixed seed), on games whose sums are exactly zero (the sign
 *     of a zero follows upstream's sign domain) and on every game of the
 *     real samples in tests/data.
 *   - The clamp of d_st at 0 (upstream's std::max(d, 0.0f)): a negative sum
 *     becomes +0, -0 and NaN pass; double mode does not clamp.
 *   - Double (`st_math: double`, lcmon's earlier sum): the values worked
 *     out by hand in docs/pipelines.md, to 1e-6.
 *   - The played-move neighbours; games of zero, one and two positions.
 *
 * With LCMON_SAMPLES naming a larger sample set laid out as tests/data
 * (folders of one-game .gz files), the test also reports how many of its
 * positions' q_st and d_st differ between the float and the double sums,
 * and by how much (a measurement, printed; docs/pipelines.md quotes it).
 */
#include "check.h"
#include "st_reference.h"
#include "testutil.h"

#include "format/lc0/chunk.h"
#include "format/lc0/record.h"
#include "format/lc0/st_targets.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-6

static const float root_q[4] = {0.5f, -0.2f, 0.3f, 0.8f};
static const float root_d[4] = {0.2f, 0.4f, 0.1f, 0.0f};
static const uint16_t played[4] = {10, 20, 30, 40};

static uint32_t bits(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* lc_st_targets in float against the reference, bit for bit; returns the
 * number of positions that differ (each reported). */
static uint32_t check_float(const float *rq, const float *rd, uint32_t n, double theta,
                            const char *what)
{
    float *q = malloc((n ? n : 1) * sizeof *q), *d = malloc((n ? n : 1) * sizeof *d);
    float *wq = malloc((n ? n : 1) * sizeof *wq), *wd = malloc((n ? n : 1) * sizeof *wd);
    uint16_t *idx = calloc(n ? n : 1, sizeof *idx);
    lc_st_targets(rq, rd, idx, n, theta, LC_ST_FLOAT, q, d, NULL, NULL);
    st_reference(rq, rd, n, theta, wq, wd);
    uint32_t bad = 0;
    for (uint32_t t = 0; t < n; t++)
        if (bits(q[t]) != bits(wq[t]) || bits(d[t]) != bits(wd[t])) {
            if (bad++ < 3)
                fprintf(stderr, "%s: ply %u of %u: q_st %08x d_st %08x, reference %08x %08x\n",
                        what, t, n, bits(q[t]), bits(d[t]), bits(wq[t]), bits(wd[t]));
        }
    CHECK_EQ_U64(bad, 0);
    free(q);
    free(d);
    free(wq);
    free(wd);
    free(idx);
    return bad;
}

/*
 * The 4-ply game in float, worked step by step (each product and sum
 * rounded to the nearest float; the decimals are the floats' own values).
 *
 * theta 1/2: th = be = 0.5, so every product is exact; only the sums round.
 * root_q as floats: 0.5, -0.200000003, 0.300000012, 0.800000012.
 * In position 0's view (odd plies negated): 0.5, 0.2, 0.3, -0.8.
 *   t=3: sq = -0.800000012                  q_st = +0.800000012  0x3F4CCCCD
 *        sd = 0                             d_st = 0             0x00000000
 *   t=2: sq = -0.400000006 + 0.150000006 = -0.25 (exact)
 *                                           q_st = -0.25         0xBE800000
 *        sd = 0 + 0.0500000007              d_st = 0.0500000007  0x3D4CCCCD
 *   t=1: sq = -0.125 + 0.100000001 = -0.0249999985 (exact)
 *                                           q_st = 0.0249999985  0x3CCCCCCC
 *        sd = 0.0250000004 + 0.200000003 = 0.225000003352..., rounded
 *                                           d_st = 0.225000009   0x3E666667
 *   t=0: sq = -0.0124999993 + 0.25 = 0.237500000745..., rounded
 *                                           q_st = 0.237499997   0x3E733333
 *        sd = 0.112500004 + 0.100000001 = 0.212500006 (exact)
 *                                           d_st = 0.212500006   0x3E59999A
 * (the double sum gives the same floats here).
 *
 * theta 5/6: th = 0.833333313 (13981013 / 2^24), be = 1 - th =
 * 0.166666687 (2796203 / 2^24, exact).
 *   t=3: sq = -0.800000012, sd = 0          q_st 0x3F4CCCCD, d_st 0
 *   t=2: th*sq = -0.666666687 (of -0.66666666071), be*0.3 = 0.0500000082
 *        sq = -0.616666678..., rounded      q_st = -0.616666675  0xBF1DDDDE
 *        sd = 0 + be*0.1 = 0.0166666694    d_st = 0.0166666694  0x3C88888A
 *   t=1: th*sq = -0.513888896, be*0.2 = 0.0333333388
 *        sq = -0.480555557..., rounded      q_st = 0.480555564   0x3EF60B61
 *        sd = 0.0138888909 + 0.0666666776 = 0.0805555684..., rounded
 *                                           d_st = 0.0805555657  0x3DA4FA51
 *   t=0: th*sq = -0.400462955, be*0.5 = 0.0833333433
 *        sq = -0.317129612 (exact)          q_st = -0.317129612  0xBEA25ED0
 *        sd = 0.0671296343 + 0.0333333388 = 0.100462973 (exact)
 *                                           d_st = 0.100462973   0x3DCDBF88
 * The double sum, rounded once at the end, gives d_st 0x3C888889,
 * 0x3DA4FA50, 0x3DCDBF87 and q_st[0] 0xBEA25ED1 instead: one unit in the
 * last place each, the difference this switch is about.
 */
static void test_four_plies_float(void)
{
    const uint32_t q_half[4] = {0x3E733333, 0x3CCCCCCC, 0xBE800000, 0x3F4CCCCD};
    const uint32_t d_half[4] = {0x3E59999A, 0x3E666667, 0x3D4CCCCD, 0x00000000};
    const uint32_t q_def[4] = {0xBEA25ED0, 0x3EF60B61, 0xBF1DDDDE, 0x3F4CCCCD};
    const uint32_t d_def[4] = {0x3DCDBF88, 0x3DA4FA51, 0x3C88888A, 0x00000000};
    float q[4], d[4];
    lc_st_targets(root_q, root_d, played, 4, 0.5, LC_ST_FLOAT, q, d, NULL, NULL);
    for (int t = 0; t < 4; t++) {
        CHECK_EQ_U64(bits(q[t]), q_half[t]);
        CHECK_EQ_U64(bits(d[t]), d_half[t]);
    }
    lc_st_targets(root_q, root_d, played, 4, LC_ST_THETA_DEFAULT, LC_ST_FLOAT, q, d, NULL, NULL);
    for (int t = 0; t < 4; t++) {
        CHECK_EQ_U64(bits(q[t]), q_def[t]);
        CHECK_EQ_U64(bits(d[t]), d_def[t]);
    }
    /* Upstream's setting is the float nearest 0.8333333333, the same float
     * as 5/6's. */
    CHECK((float)0.8333333333 == (float)LC_ST_THETA_DEFAULT);
    lc_st_targets(root_q, root_d, played, 4, 0.8333333333, LC_ST_FLOAT, q, d, NULL, NULL);
    CHECK_EQ_U64(bits(q[0]), q_def[0]);
    CHECK_EQ_U64(bits(d[0]), d_def[0]);
    /* The double sum differs from these in the last bit where the comment
     * says. */
    lc_st_targets(root_q, root_d, played, 4, LC_ST_THETA_DEFAULT, LC_ST_DOUBLE, q, d, NULL, NULL);
    CHECK_EQ_U64(bits(q[0]), 0xBEA25ED1);
    CHECK_EQ_U64(bits(d[2]), 0x3C888889);
    check_float(root_q, root_d, 4, 0.5, "4 plies, theta 1/2");
    check_float(root_q, root_d, 4, LC_ST_THETA_DEFAULT, "4 plies, theta 5/6");
    check_float(root_q, root_d, 4, 0.0, "4 plies, theta 0");
}

/* xorshift64*: the random games' own generator, fixed seed. */
static uint64_t rng_state = 0x5eed5eed12345678ull;
static uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}
static float rng_unit(void) /* [0, 1), 24 random bits */
{
    return (float)(rng_next() >> 40) / 16777216.0f;
}

/* 1000 games of 1 to 300 plies, root_q in [-1, 1], root_d in [0, 1]
 * (some exactly 0, 1 and -1 as real games have them), at the default
 * theta and at a few others. */
static void test_random_games(void)
{
    float rq[300], rd[300];
    const double thetas[] = {LC_ST_THETA_DEFAULT, 0.9, 0.5, 0.1};
    uint32_t bad = 0;
    for (int g = 0; g < 1000; g++) {
        uint32_t n = 1 + (uint32_t)(rng_next() % 300);
        for (uint32_t t = 0; t < n; t++) {
            uint64_t kind = rng_next() % 16;
            rq[t] = kind == 0 ? 0.0f : kind == 1 ? 1.0f : kind == 2 ? -1.0f : 2 * rng_unit() - 1;
            rd[t] = kind == 3 ? 0.0f : kind == 4 ? 1.0f : rng_unit();
        }
        char what[64];
        snprintf(what, sizeof what, "random game %d", g);
        bad += check_float(rq, rd, n, thetas[g % 4], what);
    }
    printf("random games: 1000, %u positions differ from the reference\n", bad);
}

/*
 * A sum that is exactly zero is +0 in round-to-nearest, whichever order;
 * putting the sign back then makes it -0 at an odd ply. theta 1/2, root_q
 * = (0.5, 0.3, 0.3): t=2 sq = 0.3; t=1 sq = 0.5*0.3 + 0.5*(-0.3) = +0,
 * q_st[1] = +0 * -1 = -0 (the double sum, in the side to move's own view,
 * gives 0.15 - 0.15 = +0). t=0: sq = 0 + 0.25, q_st[0] = 0.25.
 */
static void test_zero_signs(void)
{
    const float rq[3] = {0.5f, 0.3f, 0.3f}, rd[3] = {0, 0, 0};
    float q[3], d[3];
    lc_st_targets(rq, rd, played, 3, 0.5, LC_ST_FLOAT, q, d, NULL, NULL);
    CHECK_EQ_U64(bits(q[1]), 0x80000000u);
    CHECK(q[0] == 0.25f && q[2] == 0.3f);
    lc_st_targets(rq, rd, played, 3, 0.5, LC_ST_DOUBLE, q, d, NULL, NULL);
    CHECK_EQ_U64(bits(q[1]), 0);
    check_float(rq, rd, 3, 0.5, "zero sum");
    /* A drawn ending of zeros: every zero's sign as upstream's. */
    const float zq[5] = {0, 0, -0.0f, 0, 0}, zd[5] = {1, 1, 1, 1, 1};
    check_float(zq, zd, 5, LC_ST_THETA_DEFAULT, "zeros");
}

/*
 * The clamp. Both products of non-negative values are >= 0 and so is their
 * rounded sum, so with root_d in [0, 1] (upstream's Validate, and every
 * real game) the clamp never changes anything; it is reached only by a
 * negative root_d, as a record with a tiny negative draw value would have.
 * root_d = (0.3, -1e-30, -1e-7, 0.2, -1e-9), theta 1/2, float:
 *   t=4: sd = -1e-9            -> d_st = +0 (clamped)
 *   t=3: sd = -5e-10 + 0.1 > 0 -> d_st = sd
 *   t=2: sd = 0.05 - 5e-8 > 0  -> d_st = sd
 *   t=1: sd = 0.025 - 5e-31    -> d_st = sd
 * and a game of one position of root_d -1e-7 -> +0; -0 stays -0 and NaN
 * stays NaN (std::max returns its first argument unless it is less than
 * the second). The double sum passes -1e-9 on.
 */
static void test_clamp(void)
{
    const float rq[5] = {0, 0, 0, 0, 0}, rd[5] = {0.3f, -1e-30f, -1e-7f, 0.2f, -1e-9f};
    float q[5], d[5];
    lc_st_targets(rq, rd, played, 5, 0.5, LC_ST_FLOAT, q, d, NULL, NULL);
    CHECK_EQ_U64(bits(d[4]), 0);
    CHECK(d[3] > 0 && d[2] > 0 && d[1] > 0 && d[0] > 0);
    CHECK(d[3] == 0.5f * -1e-9f + 0.5f * 0.2f);
    check_float(rq, rd, 5, 0.5, "clamp");
    lc_st_targets(rq, rd, played, 5, 0.5, LC_ST_DOUBLE, q, d, NULL, NULL);
    CHECK(d[4] == -1e-9f);
    const float neg = -1e-7f, mzero = -0.0f, nan = NAN;
    lc_st_targets(rq, &neg, played, 1, 0.5, LC_ST_FLOAT, q, d, NULL, NULL);
    CHECK_EQ_U64(bits(d[0]), 0);
    lc_st_targets(rq, &mzero, played, 1, 0.5, LC_ST_FLOAT, q, d, NULL, NULL);
    CHECK_EQ_U64(bits(d[0]), 0x80000000u);
    lc_st_targets(rq, &nan, played, 1, 0.5, LC_ST_FLOAT, q, d, NULL, NULL);
    CHECK(isnan(d[0]));
    /* A run of negative values: every d_st clamped. */
    const float all_neg[3] = {-0.1f, -0.2f, -0.3f};
    lc_st_targets(rq, all_neg, played, 3, LC_ST_THETA_DEFAULT, LC_ST_FLOAT, q, d, NULL, NULL);
    CHECK(bits(d[0]) == 0 && bits(d[1]) == 0 && bits(d[2]) == 0);
}

static void check_double(double theta, const double *want_q, const double *want_d)
{
    float q[4], d[4];
    lc_st_targets(root_q, root_d, played, 4, theta, LC_ST_DOUBLE, q, d, NULL, NULL);
    for (int t = 0; t < 4; t++) {
        if (fabs(q[t] - want_q[t]) > EPS || fabs(d[t] - want_d[t]) > EPS)
            fprintf(stderr, "theta %g, ply %d: q_st %.7f d_st %.7f, want %.7f %.7f\n", theta, t,
                    q[t], d[t], want_q[t], want_d[t]);
        CHECK(fabs(q[t] - want_q[t]) <= EPS);
        CHECK(fabs(d[t] - want_d[t]) <= EPS);
    }
}

static void test_four_plies_double(void)
{
    /* theta 1/2, by hand from the last ply back:
     *   t=3: q 0.8                           d 0
     *   t=2: q 0.15 - 0.4    = -0.25         d 0.05 + 0      = 0.05
     *   t=1: q -0.1 + 0.125  =  0.025        d 0.2 + 0.025   = 0.225
     *   t=0: q 0.25 - 0.0125 =  0.2375       d 0.1 + 0.1125  = 0.2125 */
    const double q_half[4] = {0.2375, 0.025, -0.25, 0.8};
    const double d_half[4] = {0.2125, 0.225, 0.05, 0.0};
    check_double(0.5, q_half, d_half);
    /* theta 5/6 (the default): weights 1/6 on the ply, 5/6 on what follows.
     *   t=2: q 0.05 - 2/3          = -0.6166667    d 1/60             = 0.0166667
     *   t=1: q -1/30 + 0.5138889   =  0.4805556    d 1/15 + 1/72      = 0.0805556
     *   t=0: q 1/12 - 0.4004630    = -0.3171296    d 1/30 + 0.0671296 = 0.1004630 */
    const double q_def[4] = {-0.3171296, 0.4805556, -0.6166667, 0.8};
    const double d_def[4] = {0.1004630, 0.0805556, 0.0166667, 0.0};
    check_double(LC_ST_THETA_DEFAULT, q_def, d_def);
    /* theta 0: the root values themselves. */
    const double q_zero[4] = {0.5, -0.2, 0.3, 0.8};
    const double d_zero[4] = {0.2, 0.4, 0.1, 0.0};
    check_double(0.0, q_zero, d_zero);
}

static void test_neighbours(void)
{
    for (int math = LC_ST_FLOAT; math <= LC_ST_DOUBLE; math++) {
        uint16_t opp[4], next[4];
        lc_st_targets(root_q, root_d, played, 4, 0.5, math, NULL, NULL, opp, next);
        const uint16_t want_opp[4] = {20, 30, 40, 0xFFFF}, want_next[4] = {30, 40, 0xFFFF, 0xFFFF};
        for (int t = 0; t < 4; t++) {
            CHECK_EQ_INT(opp[t], want_opp[t]);
            CHECK_EQ_INT(next[t], want_next[t]);
        }
    }
}

static void test_short_games(void)
{
    for (int math = LC_ST_FLOAT; math <= LC_ST_DOUBLE; math++) {
        float q[2], d[2];
        uint16_t opp[2], next[2];
        lc_st_targets(root_q + 3, root_d + 3, played + 3, 1, 0.5, math, q, d, opp, next);
        CHECK(q[0] == 0.8f && d[0] == 0.0f && opp[0] == 0xFFFF && next[0] == 0xFFFF);
        lc_st_targets(root_q + 2, root_d + 2, played + 2, 2, 0.5, math, q, d, opp, next);
        CHECK(fabs(q[0] - -0.25) <= EPS && fabs(d[0] - 0.05) <= EPS);
        CHECK(opp[0] == 40 && next[0] == 0xFFFF);
        lc_st_targets(root_q, root_d, played, 0, 0.5, math, q, d, opp, next); /* nothing */
    }
}

/* Float against double over the games of one folder, added into the
 * tallies: positions, and per target those that differ, the largest
 * difference and the largest in units in the last place. */
typedef struct tally {
    uint64_t games, positions, q_diff, d_diff;
    double q_max, d_max;
    uint32_t q_ulp, d_ulp;
} tally;

static uint32_t ulps(float a, float b)
{
    /* Floats as a monotonic integer line (negatives mirrored). */
    int64_t ia = (int32_t)bits(a), ib = (int32_t)bits(b);
    ia = ia < 0 ? INT32_MIN - ia : ia;
    ib = ib < 0 ? INT32_MIN - ib : ib;
    return (uint32_t)(ia > ib ? ia - ib : ib - ia);
}

/* One game's records: the float sum against the reference (counted in the
 * checks), and against the double sum (into *k). */
static void one_game(const lc_chunk_data *c, const char *path, tally *k)
{
    uint32_t n = (uint32_t)c->n_records;
    float *rq = malloc(n * sizeof *rq), *rd = malloc(n * sizeof *rd);
    float *fq = malloc(n * sizeof *fq), *fd = malloc(n * sizeof *fd);
    float *dq = malloc(n * sizeof *dq), *dd = malloc(n * sizeof *dd);
    uint16_t *idx = calloc(n, sizeof *idx);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *rec = c->data + (size_t)i * c->record_size;
        LC_REC_GET(rec, root_q, rq[i]);
        LC_REC_GET(rec, root_d, rd[i]);
    }
    check_float(rq, rd, n, LC_ST_THETA_DEFAULT, path);
    lc_st_targets(rq, rd, idx, n, LC_ST_THETA_DEFAULT, LC_ST_FLOAT, fq, fd, NULL, NULL);
    lc_st_targets(rq, rd, idx, n, LC_ST_THETA_DEFAULT, LC_ST_DOUBLE, dq, dd, NULL, NULL);
    for (uint32_t i = 0; i < n; i++) {
        if (bits(fq[i]) != bits(dq[i])) {
            k->q_diff++;
            k->q_max = fmax(k->q_max, fabs((double)fq[i] - dq[i]));
            uint32_t u = ulps(fq[i], dq[i]);
            k->q_ulp = u > k->q_ulp ? u : k->q_ulp;
        }
        if (bits(fd[i]) != bits(dd[i])) {
            k->d_diff++;
            k->d_max = fmax(k->d_max, fabs((double)fd[i] - dd[i]));
            uint32_t u = ulps(fd[i], dd[i]);
            k->d_ulp = u > k->d_ulp ? u : k->d_ulp;
        }
    }
    k->games++;
    k->positions += n;
    free(rq);
    free(rd);
    free(fq);
    free(fd);
    free(dq);
    free(dd);
    free(idx);
}

/* Every .gz of every folder of root (each one V6 game). */
static void sample_games(const char *root, tally *k)
{
    DIR *top = opendir(root);
    CHECK(top != NULL);
    if (!top)
        return;
    struct dirent *e;
    while ((e = readdir(top))) {
        char *dir = lc_xasprintf("%s/%s", root, e->d_name);
        DIR *sub = e->d_name[0] != '.' ? opendir(dir) : NULL;
        struct dirent *g;
        while (sub && (g = readdir(sub))) {
            size_t len = strlen(g->d_name);
            if (len < 3 || strcmp(g->d_name + len - 3, ".gz") != 0)
                continue;
            char *path = lc_xasprintf("%s/%s", dir, g->d_name);
            size_t gz_len;
            uint8_t *gz = tu_read_file(path, &gz_len);
            lc_chunk_data c;
            lc_error err;
            lc_error_clear(&err);
            CHECK(gz != NULL);
            if (gz && lc_chunk_decode(gz, gz_len, LC_INFLATE_AUTO, 0, &c, &err) == 0) {
                CHECK_EQ_U64(c.version, 6);
                if (c.version == 6)
                    one_game(&c, path, k);
                lc_chunk_data_fini(&c);
            } else {
                CHECK(!"a sample game decodes");
            }
            free(gz);
            free(path);
        }
        if (sub)
            closedir(sub);
        free(dir);
    }
    closedir(top);
}

static void report(const char *what, const tally *k)
{
    printf("%s: %llu games, %llu positions; float vs double: q_st differs on %llu (%.1f%%), "
           "max %.3g, %u ulp; d_st on %llu (%.1f%%), max %.3g, %u ulp\n",
           what, (unsigned long long)k->games, (unsigned long long)k->positions,
           (unsigned long long)k->q_diff, 100.0 * (double)k->q_diff / (double)k->positions,
           k->q_max, k->q_ulp, (unsigned long long)k->d_diff,
           100.0 * (double)k->d_diff / (double)k->positions, k->d_max, k->d_ulp);
}

static void test_real_games(void)
{
    tally k = {0};
    sample_games(tu_test_data(), &k);
    CHECK(k.games >= 35); /* 7 games in each of 5 folders */
    report("tests/data", &k);
    const char *samples = getenv("LCMON_SAMPLES");
    if (samples && *samples && tu_is_dir(samples)) {
        tally all = {0};
        sample_games(samples, &all);
        report("LCMON_SAMPLES", &all);
    }
}

int main(void)
{
    test_four_plies_float();
    test_random_games();
    test_zero_signs();
    test_clamp();
    test_four_plies_double();
    test_neighbours();
    test_short_games();
    test_real_games();
    return check_finish();
}
