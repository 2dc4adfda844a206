/*
 * test_cells: the fixed-size cell allocator (core/cells.h). Cells are
 * distinct, aligned and whole; freed cells are reused before anything new
 * is carved; cells allocated by 1 to 4 producer threads, written, passed by
 * pointer through a queue and freed by 1 to 4 other threads arrive intact
 * (no cell is handed out twice while in use), the live count comes back to
 * zero, a thread's cached cells go back to the depot when it exits, and the
 * cells carved stay within the bound the header states (the most out at
 * once, plus two magazines a thread and one) however many rounds of
 * threads come and go. Trimming: after a burst of cells held at once and
 * freed, a trim gives the memory back (regions unmapped, the other pages
 * no longer resident, by mincore) but for the slack, the cells stay
 * usable, and a pool trims by itself once its period has passed.
 */
#include "check.h"

#include "core/cells.h"
#include "core/queue.h"
#include "core/thread.h"

#include "testutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SIZE 1352 /* a frame's */
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

/* Bytes resident of the pages the cells lie on (a page counted once; an
 * unmapped page is not resident). */
static uint64_t resident(unsigned char **cells, size_t n)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uint64_t bytes = 0;
    uintptr_t last = 0;
    for (size_t i = 0; i < n; i++) {
        for (uintptr_t p = (uintptr_t)cells[i] & ~(page - 1); p < (uintptr_t)cells[i] + SIZE;
             p += page) {
            unsigned char in = 0;
            if (p == last)
                continue;
            last = p;
            if (mincore((void *)p, page, &in) == 0 && (in & 1))
                bytes += page;
        }
    }
    return bytes;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (unsigned char *const *)a;
    uintptr_t y = (uintptr_t) * (unsigned char *const *)b;
    return (x > y) - (x < y);
}

/* A burst: N cells out at once (about 29 MB), written, then freed, by a
 * thread that then exits (as a pipeline's do at a stop): its magazines go
 * back to the depot. */
enum { BURST = 20000 };
static unsigned char *burst[BURST];

static void *burst_thread(void *arg)
{
    lc_cells *c = arg;
    for (uint32_t i = 0; i < BURST; i++) {
        burst[i] = lc_cells_alloc(c);
        fill(burst[i], 1, i);
    }
    for (uint32_t i = 0; i < BURST; i++) /* in an order unlike the carving's */
        lc_cells_free(c, burst[(i * 7919u) % BURST]);
    return NULL;
}

static void hold_and_free(lc_cells *c)
{
    lc_thread t;
    lc_thread_start(&t, "burst", burst_thread, c);
    lc_thread_join(&t);
    qsort(burst, BURST, sizeof *burst, by_address);
}

static void test_trim(void)
{
    lc_cells *c = lc_cells_new("trim", SIZE);
    lc_cells_set_trim(c, 0, LC_CELLS_TRIM_SLACK); /* by hand only */
    hold_and_free(c);
    lc_cells_stats st;
    lc_cells_stats_get(c, &st);
    uint64_t mapped = st.mapped, held = resident(burst, BURST);
    CHECK(held >= (uint64_t)BURST * SIZE * 9 / 10);
    CHECK_EQ_U64(st.live, 0);
    /* The first trim has no period behind it: the depot was empty when the
     * pool was made. */
    lc_cells_trim(c);
    lc_cells_stats_get(c, &st);
    CHECK_EQ_U64(st.mapped, mapped);
    CHECK_EQ_U64(st.cold, 0);
    /* A period with no cell taken: all but the slack goes back. */
    lc_cells_trim(c);
    lc_cells_stats_get(c, &st);
    uint64_t left = resident(burst, BURST);
    if (getenv("LC_TEST_VERBOSE") || left > 3 * LC_CELLS_TRIM_SLACK)
        fprintf(stderr, "trim: %llu bytes resident before, %llu after; mapped %llu -> %llu\n",
                (unsigned long long)held, (unsigned long long)left, (unsigned long long)mapped,
                (unsigned long long)st.mapped);
    CHECK(left <= 3 * LC_CELLS_TRIM_SLACK);
    /* The region being carved stays mapped, and the one the slack is in. */
    CHECK(st.mapped <= 2 * LC_CELLS_REGION);
    CHECK(st.mapped < mapped);
    CHECK_EQ_U64(st.live, 0);
    CHECK_EQ_U64(st.depot, st.carved);
    CHECK(st.cold > 0 && st.released > 0);
    /* The cells left, the cold ones too, and new ones are usable. */
    hold_and_free(c);
    lc_cells_stats_get(c, &st);
    CHECK_EQ_U64(st.live, 0);
    CHECK_EQ_U64(st.depot, st.carved);
    lc_cells_destroy(c);
}

/* A pool trims by itself: with a short period, cells taken and freed a
 * few at a time after a burst bring its memory down. */
static void test_trim_by_itself(void)
{
    lc_cells *c = lc_cells_new("trim by itself", SIZE);
    lc_cells_set_trim(c, 0.05, LC_CELLS_TRIM_SLACK);
    hold_and_free(c); /* (it may trim already while the burst is freed) */
    double deadline = lc_now_seconds() + 10 * tu_slow();
    unsigned char *few[4 * LC_CELLS_MAGAZINE];
    uint64_t left;
    for (;;) {
        for (size_t i = 0; i < sizeof few / sizeof *few; i++)
            few[i] = lc_cells_alloc(c);
        for (size_t i = 0; i < sizeof few / sizeof *few; i++)
            lc_cells_free(c, few[i]);
        left = resident(burst, BURST);
        if (left <= 3 * LC_CELLS_TRIM_SLACK || lc_now_seconds() > deadline)
            break;
        lc_sleep_seconds(0.01);
    }
    /* Mapped too may stay: a region keeps its mapping while a cell of it
     * is in a thread's magazines, as this thread's first ones are. */
    CHECK(left <= 3 * LC_CELLS_TRIM_SLACK);
    lc_cells_stats st;
    lc_cells_stats_get(c, &st);
    CHECK_EQ_U64(st.live, 0);
    CHECK(st.released > 0);
    lc_cells_destroy(c);
}

int main(void)
{
    test_one_thread();
    test_trim();
    test_trim_by_itself();
    for (unsigned np = 1; np <= 4; np++)
        for (unsigned nc = 1; nc <= 4; nc++)
            if (np == nc || np + nc == 5)
                test_threads(np, nc);
    return check_finish();
}
