/*
 * test_stats_rng: running statistics (add, merge, reset, mean; merging an
 * empty series either way) and the PRNG: the published xoshiro256** and
 * splitmix64 outputs, reproducible (seed, stream) sequences, independent
 * streams, and the ranges and rough uniformity of lc_rng_below and
 * lc_rng_double. lc_hash64, the fingerprint of a chunk's bytes: the same
 * bytes the same hash, and one bit changed anywhere (each of the four
 * lanes, the bytes after the last whole step of 32) or one byte more, all
 * different.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"
#include "core/stats.h"

static void test_stats_add(void)
{
    lc_stats s;
    lc_stats_reset(&s);
    CHECK_EQ_U64(s.count, 0);
    CHECK_NEAR(lc_stats_mean(&s), 0.0, 0.0);

    lc_stats_add(&s, 5.0);
    CHECK_EQ_U64(s.count, 1);
    CHECK_NEAR(s.min, 5.0, 0.0);
    CHECK_NEAR(s.max, 5.0, 0.0);
    CHECK_NEAR(s.latest, 5.0, 0.0);
    CHECK_NEAR(lc_stats_mean(&s), 5.0, 0.0);

    lc_stats_add(&s, -2.5);
    lc_stats_add(&s, 10.0);
    lc_stats_add(&s, 1.5);
    CHECK_EQ_U64(s.count, 4);
    CHECK_NEAR(s.min, -2.5, 0.0);
    CHECK_NEAR(s.max, 10.0, 0.0);
    CHECK_NEAR(s.sum, 14.0, 1e-12);
    CHECK_NEAR(s.latest, 1.5, 0.0);
    CHECK_NEAR(lc_stats_mean(&s), 3.5, 1e-12);

    /* A first value above zero still becomes the minimum (no stale 0). */
    lc_stats_reset(&s);
    lc_stats_add(&s, 7.0);
    lc_stats_add(&s, 9.0);
    CHECK_NEAR(s.min, 7.0, 0.0);
    CHECK_NEAR(s.max, 9.0, 0.0);
    /* And a first value below zero becomes the maximum. */
    lc_stats_reset(&s);
    lc_stats_add(&s, -7.0);
    lc_stats_add(&s, -9.0);
    CHECK_NEAR(s.max, -7.0, 0.0);
    CHECK_NEAR(s.min, -9.0, 0.0);

    lc_stats_reset(&s);
    CHECK_EQ_U64(s.count, 0);
    CHECK_NEAR(s.sum, 0.0, 0.0);
    CHECK_NEAR(s.min, 0.0, 0.0);
    CHECK_NEAR(s.max, 0.0, 0.0);
    CHECK_NEAR(s.latest, 0.0, 0.0);
}

static void test_stats_merge(void)
{
    lc_stats a, b, empty;
    lc_stats_reset(&a);
    lc_stats_reset(&b);
    lc_stats_reset(&empty);
    lc_stats_add(&a, 3.0);
    lc_stats_add(&a, 4.0);
    lc_stats_add(&b, 10.0);
    lc_stats_add(&b, 1.0);
    lc_stats_add(&b, 6.0);

    lc_stats m = a;
    lc_stats_merge(&m, &b);
    CHECK_EQ_U64(m.count, 5);
    CHECK_NEAR(m.min, 1.0, 0.0);
    CHECK_NEAR(m.max, 10.0, 0.0);
    CHECK_NEAR(m.sum, 24.0, 1e-12);
    CHECK_NEAR(m.latest, 6.0, 0.0); /* src's latest */
    CHECK_NEAR(lc_stats_mean(&m), 4.8, 1e-12);

    /* Merging an empty series changes nothing, latest included. */
    lc_stats before = m;
    lc_stats_merge(&m, &empty);
    CHECK(memcmp(&before, &m, sizeof m) == 0);

    /* Merging into an empty series copies the source. */
    lc_stats e;
    lc_stats_reset(&e);
    lc_stats_merge(&e, &b);
    CHECK_EQ_U64(e.count, 3);
    CHECK_NEAR(e.min, 1.0, 0.0);
    CHECK_NEAR(e.max, 10.0, 0.0);
    CHECK_NEAR(e.sum, 17.0, 1e-12);
    CHECK_NEAR(e.latest, 6.0, 0.0);

    /* Empty into empty stays empty. */
    lc_stats z;
    lc_stats_reset(&z);
    lc_stats_merge(&z, &empty);
    CHECK_EQ_U64(z.count, 0);
    CHECK_NEAR(lc_stats_mean(&z), 0.0, 0.0);

    /* A positive-only source into an empty destination keeps its minimum. */
    lc_stats p;
    lc_stats_reset(&p);
    lc_stats_add(&p, 42.0);
    lc_stats_reset(&z);
    lc_stats_merge(&z, &p);
    CHECK_NEAR(z.min, 42.0, 0.0);
    CHECK_NEAR(z.max, 42.0, 0.0);
}

static void test_rng_known_answers(void)
{
    /* splitmix64 from state 0 and xoshiro256** from {1, 2, 3, 4}: the values
     * published with the reference implementations. */
    CHECK_EQ_U64(lc_mix64(0), 0xe220a8397b1dcdafull);
    lc_rng r = {{1, 2, 3, 4}};
    CHECK_EQ_U64(lc_rng_next(&r), 11520u);
    CHECK_EQ_U64(lc_rng_next(&r), 0u);
    CHECK_EQ_U64(lc_rng_next(&r), 1509978240u);
    CHECK_EQ_U64(lc_rng_next(&r), 1215971899390074240ull);
    CHECK(lc_mix64(1) != lc_mix64(2));
}

static void test_rng_streams(void)
{
    lc_rng a, b;
    lc_rng_seed(&a, 12345, 0);
    lc_rng_seed(&b, 12345, 0);
    int same = 1;
    for (int i = 0; i < 1000; i++)
        same &= lc_rng_next(&a) == lc_rng_next(&b);
    CHECK(same);

    /* Other streams and other seeds differ (and do not just lag by a step). */
    uint64_t ref[64];
    lc_rng_seed(&a, 12345, 0);
    for (int i = 0; i < 64; i++)
        ref[i] = lc_rng_next(&a);
    const struct {
        uint64_t seed, stream;
    } others[] = {{12345, 1}, {12345, 2}, {12346, 0}, {0, 0}, {0, 12345}};
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++) {
        lc_rng_seed(&b, others[k].seed, others[k].stream);
        int common = 0;
        for (int i = 0; i < 64; i++) {
            uint64_t x = lc_rng_next(&b);
            for (int j = 0; j < 64; j++)
                common += x == ref[j];
        }
        CHECK_EQ_INT(common, 0);
    }

    /* Seed 0, stream 0 does not produce the all-zero state. */
    lc_rng_seed(&b, 0, 0);
    CHECK(b.s[0] | b.s[1] | b.s[2] | b.s[3]);
}

static void test_rng_below(void)
{
    lc_rng r;
    lc_rng_seed(&r, 7, 3);
    int nonzero = 0;
    for (int i = 0; i < 1000; i++)
        nonzero += lc_rng_below(&r, 1) != 0;
    CHECK_EQ_INT(nonzero, 0);

    /* n = 10 over 1e5 draws: chi-square with 9 degrees of freedom has mean 9;
     * 40 is far out in the tail, yet a biased generator blows past it. */
    enum { N = 10, DRAWS = 100000 };
    uint64_t counts[N] = {0};
    int out_of_range = 0;
    for (int i = 0; i < DRAWS; i++) {
        uint64_t v = lc_rng_below(&r, N);
        if (v >= N)
            out_of_range++;
        else
            counts[v]++;
    }
    CHECK_EQ_INT(out_of_range, 0);
    double expected = (double)DRAWS / N, chi2 = 0;
    for (int i = 0; i < N; i++)
        chi2 += ((double)counts[i] - expected) * ((double)counts[i] - expected) / expected;
    if (chi2 >= 40.0)
        fprintf(stderr, "  chi-square %.2f\n", chi2);
    CHECK(chi2 < 40.0);

    /* Large and awkward bounds stay in range. */
    const uint64_t bounds[] = {2, 3, 1000003, (1ull << 63) + 1, UINT64_MAX};
    for (size_t k = 0; k < sizeof bounds / sizeof bounds[0]; k++) {
        int bad = 0;
        for (int i = 0; i < 2000; i++)
            bad += lc_rng_below(&r, bounds[k]) >= bounds[k];
        CHECK_EQ_INT(bad, 0);
    }
    /* n = 2^63 + 1: about half the draws are at least 2^62 (binomial with
     * sd 22 around 1000; a generator stuck in the low half fails). */
    int high = 0;
    for (int i = 0; i < 2000; i++)
        high += lc_rng_below(&r, (1ull << 63) + 1) >= (1ull << 62);
    if (!(high > 850 && high < 1150))
        fprintf(stderr, "  %d of 2000 draws in the upper half\n", high);
    CHECK(high > 850 && high < 1150);
}

static void test_rng_double(void)
{
    lc_rng r;
    lc_rng_seed(&r, 99, 0);
    int bad = 0;
    double sum = 0, lo = 1, hi = 0;
    for (int i = 0; i < 100000; i++) {
        double d = lc_rng_double(&r);
        bad += !(d >= 0.0 && d < 1.0);
        sum += d;
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_NEAR(sum / 100000, 0.5, 0.01);
    CHECK(lo < 0.001);
    CHECK(hi > 0.999);
}

static void test_hash64(void)
{
    enum { N = 77 }; /* two steps of 32 and 13 bytes after them */
    uint8_t b[N + 1];
    for (unsigned i = 0; i < sizeof b; i++)
        b[i] = (uint8_t)(i * 37 + 11);
    uint64_t h = lc_hash64(b, N);
    CHECK_EQ_U64(lc_hash64(b, N), h);
    static uint64_t seen[N * 8 + 2];
    size_t n = 0;
    seen[n++] = h;
    seen[n++] = lc_hash64(b, N + 1);
    for (unsigned i = 0; i < N; i++)
        for (unsigned bit = 0; bit < 8; bit++) {
            b[i] ^= (uint8_t)(1u << bit);
            seen[n++] = lc_hash64(b, N);
            b[i] ^= (uint8_t)(1u << bit);
        }
    CHECK_EQ_U64(lc_hash64(b, N), h);
    unsigned same = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            same += seen[i] == seen[j];
    CHECK_EQ_U64(same, 0);
}

int main(void)
{
    test_stats_add();
    test_stats_merge();
    test_rng_known_answers();
    test_rng_streams();
    test_rng_below();
    test_rng_double();
    test_hash64();
    return check_finish();
}
