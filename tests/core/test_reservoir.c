/*
 * test_reservoir: the shuffle buffer shared by shuffling_frame_sampler and
 * game_tokenizer: it keeps elements while it fills, then swaps each new one
 * for a random held one; take() empties it; every element put in comes out
 * exactly once, in an order that is not the input's; a reservoir of 0 slots
 * hands its input straight back; the same seed gives the same order.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/reservoir.h"

/* Put 0..n-1 through a reservoir of cap slots; out gets the order. */
static void shuffle_through(uint64_t cap, uint32_t n, uint64_t seed, uint32_t *out)
{
    lc_reservoir r;
    CHECK_OK(lc_reservoir_init(&r, sizeof(uint32_t), cap));
    lc_rng rng;
    lc_rng_seed(&rng, seed, 1);
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t got;
        bool evicted = lc_reservoir_put(&r, &i, &got, &rng);
        CHECK_EQ_INT(evicted, i >= cap);
        if (evicted)
            out[k++] = got;
        CHECK_EQ_U64(r.fill, i + 1 < cap ? i + 1 : cap);
    }
    uint32_t got;
    while (lc_reservoir_take(&r, &got, &rng))
        out[k++] = got;
    CHECK_EQ_U64(r.fill, 0);
    CHECK(!lc_reservoir_take(&r, &got, &rng));
    CHECK_EQ_U64(k, n);
    lc_reservoir_fini(&r);
}

static void test_every_element_once(void)
{
    const uint32_t n = 5000;
    uint32_t *out = malloc(n * sizeof *out);
    uint8_t *seen = calloc(n, 1);
    const uint64_t caps[] = {1, 7, 100, 4999, 5000, 20000};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        memset(seen, 0, n);
        shuffle_through(caps[c], n, 42, out);
        size_t in_place = 0, dup = 0;
        for (uint32_t i = 0; i < n; i++) {
            dup += out[i] >= n || seen[out[i]]++;
            in_place += out[i] == i;
        }
        CHECK_EQ_U64(dup, 0);
        if (caps[c] >= 100)
            CHECK(in_place < n / 10); /* shuffled, not the input order */
    }
    free(seen);
    free(out);
}

static void test_zero_slots_pass_through(void)
{
    uint32_t out[50];
    shuffle_through(0, 50, 1, out);
    for (uint32_t i = 0; i < 50; i++)
        CHECK_EQ_U64(out[i], i);
}

static void test_reproducible(void)
{
    uint32_t a[1000], b[1000], c[1000];
    shuffle_through(64, 1000, 9, a);
    shuffle_through(64, 1000, 9, b);
    shuffle_through(64, 1000, 10, c);
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, c, sizeof a) != 0);
}

int main(void)
{
    test_every_element_once();
    test_zero_slots_pass_through();
    test_reproducible();
    return check_finish();
}
