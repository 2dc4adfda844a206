/*
 * The chunk pool's window (stages/pool/chunk_window.h) on its own: sources get
 * global indices in order and whole sources leave once below the window; a
 * pass draws every index of the window exactly once, in an order the seed
 * fixes; a bad chunk leaves the window's and the anchor's counts once;
 * set and reset move the anchor as the pool's control requests do; ranks
 * split a tar's chunks between them.
 */
#include "check.h"
#include "testutil.h"

#include "stages/pool/chunk_window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE 10

/* game_%06u.gz: one chunk each (its bytes are not read here). */
static lc_chunk_source *game(unsigned i)
{
    char name[64];
    snprintf(name, sizeof name, "game_%06u.gz", i);
    const char *path = tu_path(name);
    size_t len;
    uint8_t *gz = tu_gzip("x", 1, 6, &len);
    tu_write_file(path, gz, len);
    free(gz);
    return tu_chunk_source(path);
}

static void add(lc_chunk_window *w, unsigned i, size_t *evicted)
{
    lc_chunk_window_source e;
    uint64_t other;
    lc_chunk_source *src = game(i);
    lc_chunk_window_note_key(w, lc_chunk_source_key(src));
    CHECK(lc_chunk_window_entry(w, src, 1, 0, &e, &other));
    CHECK_EQ_U64(other, 0);
    e.since_counted = true;
    e.anchor_gen = w->anchor_gen;
    w->since_anchor += e.n;
    lc_chunk_window_append(w, &e);
    *evicted += lc_chunk_window_evict(w);
}

static void test_window_and_passes(lc_chunk_store *store)
{
    lc_chunk_window w;
    lc_chunk_window_init(&w, SIZE, store, NULL, 7);
    size_t evicted = 0;
    for (unsigned i = 0; i < 12; i++)
        add(&w, i, &evicted);
    /* Twelve one-chunk sources in a window of ten: the two oldest left. */
    CHECK_EQ_U64(w.upper, 12);
    CHECK_EQ_U64(lc_chunk_window_lower(&w), 2);
    CHECK_EQ_INT(evicted, 2);
    CHECK_EQ_U64(w.in_window, SIZE);
    uint32_t pos = 99;
    CHECK(lc_chunk_window_find(&w, 1, &pos) == NULL);
    lc_chunk_window_source *e = lc_chunk_window_find(&w, 5, &pos);
    CHECK(e && e->base == 5 && pos == 0);
    CHECK_EQ_STR(w.newest_key, "game_000011.gz");

    /* The appends' pass, then two fresh passes: each draws the window once. */
    while (w.n_pending)
        lc_chunk_window_take(&w);
    uint64_t order[2][SIZE];
    for (int pass = 0; pass < 2; pass++) {
        lc_chunk_window_new_pass(&w);
        CHECK_EQ_INT(w.n_pending, SIZE);
        int seen[12] = {0};
        for (int k = 0; k < SIZE; k++) {
            uint64_t idx = lc_chunk_window_take(&w);
            CHECK(idx >= 2 && idx < 12);
            if (idx < 12)
                seen[idx]++;
            order[pass][k] = idx;
        }
        CHECK_EQ_INT(w.n_pending, 0);
        for (int i = 2; i < 12; i++)
            CHECK_EQ_INT(seen[i], 1);
    }
    CHECK(memcmp(order[0], order[1], sizeof order[0]) != 0); /* passes differ */
    lc_chunk_window_fini(&w);

    /* The same seed, the same draws. */
    lc_chunk_window v;
    lc_chunk_window_init(&v, SIZE, store, NULL, 7);
    evicted = 0;
    for (unsigned i = 0; i < 12; i++)
        add(&v, i, &evicted);
    while (v.n_pending)
        lc_chunk_window_take(&v);
    lc_chunk_window_new_pass(&v);
    for (int k = 0; k < SIZE; k++)
        CHECK_EQ_U64(lc_chunk_window_take(&v), order[0][k]);
    lc_chunk_window_fini(&v);
}

static void test_drops_and_anchor(lc_chunk_store *store)
{
    lc_chunk_window w;
    lc_chunk_window_init(&w, SIZE, store, "game_000002.gz", 1);
    CHECK_EQ_STR(w.anchor, "game_000002.gz");
    size_t evicted = 0;
    for (unsigned i = 0; i < 5; i++)
        add(&w, i, &evicted);
    CHECK_EQ_U64(w.since_anchor, 5);
    /* A bad chunk leaves both counts, once. */
    uint32_t pos;
    lc_chunk_window_source *e = lc_chunk_window_find(&w, 3, &pos);
    lc_chunk_window_drop(&w, e, pos);
    lc_chunk_window_drop(&w, e, pos);
    CHECK_EQ_U64(w.since_anchor, 4);
    CHECK_EQ_U64(w.dropped_held, 1);
    CHECK_EQ_U64(e->uses[pos], LC_CHUNK_WINDOW_DROPPED);
    /* Set moves the key, not the count; reset takes the newest key and
     * returns the count. */
    lc_chunk_window_set_anchor(&w, "game_000001.gz");
    CHECK_EQ_U64(w.since_anchor, 4);
    CHECK_EQ_U64(lc_chunk_window_reset_anchor(&w), 4);
    CHECK_EQ_STR(w.anchor, "game_000004.gz");
    CHECK_EQ_STR(w.count_from, "game_000004.gz");
    CHECK_EQ_U64(w.since_anchor, 0);
    /* A chunk counted before the reset does not leave the new count. */
    e = lc_chunk_window_find(&w, 4, &pos);
    lc_chunk_window_drop(&w, e, pos);
    CHECK_EQ_U64(w.since_anchor, 0);
    add(&w, 5, &evicted);
    CHECK_EQ_U64(w.since_anchor, 1);
    e = lc_chunk_window_find(&w, 5, &pos);
    lc_chunk_window_drop(&w, e, pos);
    CHECK_EQ_U64(w.since_anchor, 0);
    lc_chunk_window_fini(&w);
}

/* Two ranks split a tar's chunks: every chunk kept by exactly one. */
static void test_sharding(lc_chunk_store *store)
{
    char *tar = lc_xasprintf("%s/training-run-mini.tar", tu_test_data());
    lc_chunk_window w;
    lc_chunk_window_init(&w, SIZE, store, NULL, 1);
    size_t total = 0, kept = 0;
    uint8_t *owner = NULL;
    for (uint32_t rank = 0; rank < 2; rank++) {
        lc_chunk_source *src = tu_chunk_source(tar);
        total = lc_chunk_source_count(src);
        if (!owner)
            owner = calloc(total, 1);
        lc_chunk_window_source e;
        uint64_t other;
        CHECK(lc_chunk_window_entry(&w, src, 2, rank, &e, &other));
        CHECK_EQ_U64(e.n + other, total);
        for (uint32_t k = 0; k < e.n; k++)
            owner[e.members[k]]++;
        kept += e.n;
        lc_chunk_window_entry_free(&w, &e);
    }
    CHECK(total > 4);
    CHECK_EQ_INT(kept, total);
    for (size_t m = 0; m < total; m++)
        CHECK_EQ_INT(owner[m], 1);
    free(owner);
    lc_chunk_window_fini(&w);
    free(tar);
}

int main(void)
{
    lc_chunk_store store;
    lc_chunk_store_init(&store, false, 0); /* no store: the window alone */
    test_window_and_passes(&store);
    test_drops_and_anchor(&store);
    test_sharding(&store);
    return check_finish();
}
