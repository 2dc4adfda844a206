/*
 * test_cells: the fixed-size cell allocator (core/cells.h). Cells are
 * distinct, aligned and whole; freed cells are reused before anything new
 * is carved; cells allocated by 1 to 4 producer threads, written, passed by
 * pointer through a queue and freed by 1 to 4 other threads arrive intact
 * (no cell is handed out twice while in use), the live count comes back to
 * zero, a thread's cached cells go back to the depot when it exits, and the
 * cells carved stay within the bound the header states (the most out at
 * once, plus two magazines a thread and one) however many rounds of
 * threads come and go.
 */
#include "check.h"

#include "core/cells.h"
#include "core/queue.h"
#include "core/thread.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SIZE 1448 /* a frame's */
#define QCAP 256
#define PER_PRODUCER 10000

static const lc_item_type ptr_item = {"cell", sizeof(void *), NULL, "cells"};

/* A cell's contents: who made it, which, and bytes that follow from both. */
static void fill(unsigned char *cell, uint32_t who, uint32_t seq)
{
    memcpy(cell, &who, 4);
    memcpy(cell + 4, &seq, 4);
    for (size_t i = 8; i < SIZE; i++)
        cell[i] = (unsigned char)(who * 131u + seq * 7u + i);
}

static bool intact(const unsigned char *cell)
{
    uint32_t who, seq;
    memcpy(&who, cell, 4);
    memcpy(&seq, cell + 4, 4);
    for (size_t i = 8; i < SIZE; i++)
        if (cell[i] != (unsigned char)(who * 131u + seq * 7u + i))
            return false;
    return true;
}

static void test_one_thread(void)
{
    lc_cells *c = lc_cells_new("one", SIZE);
    enum { N = 1000 };
    unsigned char *cells[N];
    for (uint32_t i = 0; i < N; i++) {
        cells[i] = lc_cells_alloc(c);
        CHECK(((uintptr_t)cells[i] & 7) == 0);
        fill(cells[i], 0, i);
    }
    int whole = 0;
    for (uint32_t i = 0; i < N; i++)
        whole += intact(cells[i]); /* distinct: none overwrote another */
    CHECK_EQ_INT(whole, N);
    lc_cells_stats st;
    lc_cells_stats_get(c, &st);
    CHECK_EQ_U64(st.live, N);
    CHECK_EQ_U64(st.cell, SIZE);
    uint64_t carved = st.carved;
    CHECK(carved >= N && carved < N + LC_CELLS_MAGAZINE);
    for (uint32_t i = 0; i < N; i++)
        lc_cells_free(c, cells[i]);
    lc_cells_stats_get(c, &st);
    CHECK_EQ_U64(st.live, 0);
    for (uint32_t i = 0; i < N; i++)
        cells[i] = lc_cells_alloc(c);
    lc_cells_stats_get(c, &st);
    CHECK_EQ_U64(st.carved, carved); /* reused, nothing new */
    for (uint32_t i = 0; i < N; i++)
        lc_cells_free(c, cells[i]);
    lc_cells_free(c, NULL);
    lc_cells_destroy(c);
}

typedef struct party {
    lc_cells *c;
    lc_queue *q;
    uint32_t who;
    uint64_t got, bad;
} party;

static void *produce(void *arg)
{
    party *p = arg;
    for (uint32_t i = 0; i < PER_PRODUCER; i++) {
        unsigned char *cell = lc_cells_alloc(p->c);
        fill(cell, p->who, i);
        if (lc_queue_put(p->q, &cell, NULL) != 0)
            p->bad++;
    }
    lc_queue_producer_done(p->q);
    return NULL;
}

static void *consume(void *arg)
{
    party *p = arg;
    void *cells[32];
    size_t got;
    while (lc_queue_get_many(p->q, cells, 32, &got, NULL) == 0) {
        for (size_t i = 0; i < got; i++) {
            p->bad += !intact(cells[i]);
            lc_cells_free(p->c, cells[i]);
        }
        p->got += got;
    }
    return NULL;
}

/* One round: np producers to nc consumers through a queue of QCAP. */
static void round_of(lc_cells *c, unsigned np, unsigned nc)
{
    lc_queue *q = lc_queue_new("cells", &ptr_item, QCAP, LC_OVERFLOW_BLOCK);
    party parties[8];
    lc_thread threads[8];
    for (unsigned i = 0; i < np; i++)
        lc_queue_add_producer(q);
    for (unsigned i = 0; i < np + nc; i++) {
        parties[i] = (party){.c = c, .q = q, .who = i};
        lc_thread_start(&threads[i], i < np ? "producer" : "consumer", i < np ? produce : consume,
                        &parties[i]);
    }
    uint64_t got = 0, bad = 0;
    for (unsigned i = 0; i < np + nc; i++) {
        lc_thread_join(&threads[i]);
        got += parties[i].got;
        bad += parties[i].bad;
    }
    CHECK_EQ_U64(got, (uint64_t)np * PER_PRODUCER);
    CHECK_EQ_U64(bad, 0);
    lc_queue_free(q);
}

static void test_threads(unsigned np, unsigned nc)
{
    lc_cells *c = lc_cells_new("threads", SIZE);
    /* Out at once: the queue's, one in each producer's hand (waiting to put
     * it), a block in each consumer's. */
    uint64_t most_out = QCAP + np + 32 * nc;
    uint64_t bound = most_out + 2 * LC_CELLS_MAGAZINE * (np + nc) + LC_CELLS_MAGAZINE;
    lc_cells_stats st;
    for (int r = 0; r < 3; r++) {
        round_of(c, np, nc);
        lc_cells_stats_get(c, &st);
        CHECK_EQ_U64(st.live, 0);
        /* Every thread exited: every free cell is in the depot. */
        CHECK_EQ_U64(st.depot, st.carved);
        if (st.carved > bound || getenv("LC_TEST_VERBOSE"))
            fprintf(stderr, "%u to %u threads, round %d: %llu cells carved, bound %llu\n", np, nc,
                    r, (unsigned long long)st.carved, (unsigned long long)bound);
        CHECK(st.carved <= bound);
        CHECK(st.mapped <= (st.carved * st.cell / LC_CELLS_REGION + 1) * LC_CELLS_REGION);
    }
    lc_cells_destroy(c);
}

int main(void)
{
    test_one_thread();
    for (unsigned np = 1; np <= 4; np++)
        for (unsigned nc = 1; nc <= 4; nc++)
            if (np == nc || np + nc == 5)
                test_threads(np, nc);
    return check_finish();
}
