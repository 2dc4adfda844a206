/*
 * test_queue: the bounded queue with real threads. Many producers and
 * consumers deliver every item exactly once; close wakes every blocked getter
 * and putter; getters drain after close while putters keep their item; the
 * two dropping policies dispose of the right item; a queue closes when its
 * last registered producer is done; the non-blocking and timed calls; counter
 * flushing; lc_queue_free disposing of what is left (heap items, so that ASan
 * reports a leak if it does not); overflow names.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "testutil.h"
#include "core/error.h"
#include "core/load.h"
#include "core/queue.h"
#include "core/thread.h"

/* ---- item types ---- */

/* A plain item for the traffic tests: no heap data. */
typedef struct pitem {
    uint32_t producer;
    uint32_t seq;
} pitem;

static const lc_item_type pitem_type = {"pitem", sizeof(pitem), NULL, "pitems"};

/* An item that owns heap memory: its disposer frees it and records which item
 * it disposed of, so the tests can tell which item a policy dropped. */
typedef struct hitem {
    uint32_t id;
    char *heap;
} hitem;

#define MAX_DISPOSED 64
static atomic_int disposed_count;
static atomic_uint disposed_ids[MAX_DISPOSED];

static void hitem_dispose(void *p)
{
    hitem *h = p;
    free(h->heap);
    h->heap = NULL;
    int i = atomic_fetch_add(&disposed_count, 1);
    if (i < MAX_DISPOSED)
        atomic_store(&disposed_ids[i], h->id);
}

static const lc_item_type hitem_type = {"hitem", sizeof(hitem), hitem_dispose, "hitems"};

static hitem make_hitem(uint32_t id)
{
    hitem h = {id, malloc(16)};
    memcpy(h.heap, "payload", 8);
    return h;
}

static void reset_disposed(void)
{
    atomic_store(&disposed_count, 0);
    for (int i = 0; i < MAX_DISPOSED; i++)
        atomic_store(&disposed_ids[i], 0);
}

/* ---- (1) many producers x many consumers ---- */

#define MP_PRODUCERS 4
#define MP_CONSUMERS 4
#define MP_PER_PRODUCER (TU_SANITIZED ? 20000u : 50000u)
#define MP_CAPACITY 8

typedef struct mpmc {
    lc_queue *q;
    bool blocks; /* odd producers put_many, odd consumers get_many */
    atomic_int consumer_ids;
    _Atomic uint8_t *seen; /* how often each (producer, seq) was received */
    atomic_int bad_items;
    atomic_int order_errors;
    atomic_int bad_rc;
    atomic_int received;
} mpmc;

typedef struct mp_producer {
    mpmc *shared;
    uint32_t id;
} mp_producer;

static void *mp_produce(void *arg)
{
    mp_producer *p = arg;
    for (uint32_t seq = 0; seq < MP_PER_PRODUCER;) {
        if (p->shared->blocks && p->id % 2) {
            pitem block[7];
            size_t n = 0, taken = 0;
            for (; n < 7 && seq < MP_PER_PRODUCER; n++, seq++)
                block[n] = (pitem){p->id, seq};
            if (lc_queue_put_many(p->shared->q, block, n, &taken, NULL) != 0 || taken != n)
                atomic_fetch_add(&p->shared->bad_rc, 1);
            continue;
        }
        pitem it = {p->id, seq++};
        if (lc_queue_put(p->shared->q, &it, NULL) != 0)
            atomic_fetch_add(&p->shared->bad_rc, 1);
    }
    lc_queue_producer_done(p->shared->q);
    return NULL;
}

static void *mp_consume(void *arg)
{
    mpmc *s = arg;
    int64_t last[MP_PRODUCERS];
    for (int i = 0; i < MP_PRODUCERS; i++)
        last[i] = -1;
    bool blocks = s->blocks && atomic_fetch_add(&s->consumer_ids, 1) % 2;
    pitem block[5];
    size_t got = 0, next = 0;
    pitem it;
    int rc;
    int n = 0;
    for (;;) {
        if (!blocks) {
            rc = lc_queue_get(s->q, &it, NULL);
        } else {
            rc = 0;
            if (next == got) {
                next = 0;
                rc = lc_queue_get_many(s->q, block, 5, &got, NULL);
                if (rc == 0 && (got == 0 || got > 5))
                    atomic_fetch_add(&s->bad_rc, 1);
            }
            if (rc == 0)
                it = block[next++];
        }
        if (rc != 0)
            break;
        if (it.producer >= MP_PRODUCERS || it.seq >= MP_PER_PRODUCER) {
            atomic_fetch_add(&s->bad_items, 1);
            continue;
        }
        atomic_fetch_add(&s->seen[(size_t)it.producer * MP_PER_PRODUCER + it.seq], 1);
        /* One FIFO under one lock: what one consumer takes from one producer
         * comes in the order that producer put it. */
        if ((int64_t)it.seq <= last[it.producer])
            atomic_fetch_add(&s->order_errors, 1);
        last[it.producer] = it.seq;
        n++;
    }
    if (rc != LC_ECLOSED)
        atomic_fetch_add(&s->bad_rc, 1);
    atomic_fetch_add(&s->received, n);
    return NULL;
}

static void test_many_producers_consumers(bool blocks)
{
    const size_t total = (size_t)MP_PRODUCERS * MP_PER_PRODUCER;
    mpmc s;
    memset(&s, 0, sizeof s);
    s.blocks = blocks;
    s.q = lc_queue_new("mpmc", &pitem_type, MP_CAPACITY, LC_OVERFLOW_BLOCK);
    s.seen = calloc(total, sizeof *s.seen);
    for (int i = 0; i < MP_PRODUCERS; i++)
        lc_queue_add_producer(s.q);

    lc_thread consumers[MP_CONSUMERS], producers[MP_PRODUCERS];
    mp_producer pargs[MP_PRODUCERS];
    memset(consumers, 0, sizeof consumers);
    memset(producers, 0, sizeof producers);
    for (int i = 0; i < MP_CONSUMERS; i++)
        lc_thread_start(&consumers[i], "lc-test-get", mp_consume, &s);
    for (int i = 0; i < MP_PRODUCERS; i++) {
        pargs[i] = (mp_producer){&s, (uint32_t)i};
        lc_thread_start(&producers[i], "lc-test-put", mp_produce, &pargs[i]);
    }
    for (int i = 0; i < MP_PRODUCERS; i++)
        lc_thread_join(&producers[i]);
    for (int i = 0; i < MP_CONSUMERS; i++)
        lc_thread_join(&consumers[i]);

    size_t missing = 0, duplicated = 0;
    for (size_t i = 0; i < total; i++) {
        uint8_t n = atomic_load(&s.seen[i]);
        missing += n == 0;
        duplicated += n > 1;
    }
    CHECK_EQ_U64(missing, 0);
    CHECK_EQ_U64(duplicated, 0);
    CHECK_EQ_INT(atomic_load(&s.received), total);
    CHECK_EQ_INT(atomic_load(&s.bad_items), 0);
    CHECK_EQ_INT(atomic_load(&s.order_errors), 0);
    CHECK_EQ_INT(atomic_load(&s.bad_rc), 0);
    CHECK(lc_queue_closed(s.q));

    lc_queue_counters c;
    lc_queue_flush_counters(s.q, &c);
    CHECK_EQ_U64(c.put, total);
    CHECK_EQ_U64(c.get, total);
    CHECK_EQ_U64(c.drop, 0);
    CHECK_EQ_U64(c.size, 0);
    CHECK_EQ_U64(c.capacity, MP_CAPACITY);

    free(s.seen);
    lc_queue_free(s.q);
}

/* ---- (2) close wakes every waiter; a get admits a blocked putter ---- */

#define N_WAITERS 4

typedef struct waiters {
    lc_queue *empty; /* getters block here */
    lc_queue *full;  /* putters block here */
    atomic_int entering;
    atomic_int returned;
    atomic_int rc_closed;
    atomic_int rc_ok;
    atomic_int rc_other;
} waiters;

static void record_rc(waiters *w, int rc)
{
    if (rc == LC_ECLOSED)
        atomic_fetch_add(&w->rc_closed, 1);
    else if (rc == 0)
        atomic_fetch_add(&w->rc_ok, 1);
    else
        atomic_fetch_add(&w->rc_other, 1);
    atomic_fetch_add(&w->returned, 1);
}

static void *blocked_getter(void *arg)
{
    waiters *w = arg;
    pitem it;
    atomic_fetch_add(&w->entering, 1);
    record_rc(w, lc_queue_get(w->empty, &it, NULL));
    return NULL;
}

static void *blocked_timed_getter(void *arg)
{
    waiters *w = arg;
    pitem it;
    atomic_fetch_add(&w->entering, 1);
    record_rc(w, lc_queue_get_until(w->empty, &it, NULL, lc_now_ns() + 60000000000ull));
    return NULL;
}

static void *blocked_putter(void *arg)
{
    waiters *w = arg;
    pitem it = {99, 99};
    atomic_fetch_add(&w->entering, 1);
    record_rc(w, lc_queue_put(w->full, &it, NULL));
    return NULL;
}

/* Give up on a test whose threads never came back: report and exit without
 * joining them (joining would hang until the meson timeout). */
static void bail_out_if(bool hung, const char *what)
{
    if (hung) {
        fprintf(stderr, "test_queue: %s: threads still blocked after %.0f s\n", what,
                TU_PATIENCE_S);
        CHECK(!hung);
        exit(check_finish());
    }
}

static void test_close_wakes_every_waiter(void)
{
    waiters w;
    memset(&w, 0, sizeof w);
    w.empty = lc_queue_new("empty", &pitem_type, 4, LC_OVERFLOW_BLOCK);
    w.full = lc_queue_new("full", &pitem_type, 1, LC_OVERFLOW_BLOCK);
    pitem filler = {7, 7};
    CHECK_OK(lc_queue_put(w.full, &filler, NULL));

    const int n = 2 * N_WAITERS + 1;
    lc_thread t[2 * N_WAITERS + 1];
    memset(t, 0, sizeof t);
    for (int i = 0; i < N_WAITERS; i++) {
        lc_thread_start(&t[i], "lc-test-get", blocked_getter, &w);
        lc_thread_start(&t[N_WAITERS + i], "lc-test-put", blocked_putter, &w);
    }
    lc_thread_start(&t[2 * N_WAITERS], "lc-test-until", blocked_timed_getter, &w);

    /* Every thread is about to call; after a pause it is surely waiting (if
     * one is not yet, the close below still has to turn it away). */
    bail_out_if(!tu_wait_ge(&w.entering, n), "starting waiters");
    tu_sleep_ms(100);
    CHECK_EQ_INT(atomic_load(&w.returned), 0);

    lc_queue_close(w.empty);
    lc_queue_close(w.full);
    bail_out_if(!tu_wait_ge(&w.returned, n), "after close");
    for (int i = 0; i < n; i++)
        lc_thread_join(&t[i]);
    CHECK_EQ_INT(atomic_load(&w.rc_closed), n);
    CHECK_EQ_INT(atomic_load(&w.rc_ok), 0);
    CHECK_EQ_INT(atomic_load(&w.rc_other), 0);

    /* None of the putters got in; the filler is still there to drain. */
    CHECK_EQ_U64(lc_queue_size(w.full), 1);
    pitem got = {0, 0};
    CHECK_OK(lc_queue_get(w.full, &got, NULL));
    CHECK_EQ_INT(got.seq, 7);
    CHECK_EQ_INT(lc_queue_get(w.full, &got, NULL), LC_ECLOSED);
    lc_queue_free(w.empty);
    lc_queue_free(w.full);
}

static void test_get_admits_blocked_putters(void)
{
    waiters w;
    memset(&w, 0, sizeof w);
    w.full = lc_queue_new("full", &pitem_type, 1, LC_OVERFLOW_BLOCK);
    pitem filler = {7, 7};
    CHECK_OK(lc_queue_put(w.full, &filler, NULL));

    lc_thread t[N_WAITERS];
    memset(t, 0, sizeof t);
    for (int i = 0; i < N_WAITERS; i++)
        lc_thread_start(&t[i], "lc-test-put", blocked_putter, &w);
    bail_out_if(!tu_wait_ge(&w.entering, N_WAITERS), "starting putters");
    tu_sleep_ms(50);
    CHECK_EQ_INT(atomic_load(&w.returned), 0);

    /* Each get makes room for one putter; blocking gets collect them all. */
    int got_filler = 0, got_putters = 0;
    for (int i = 0; i < N_WAITERS + 1; i++) {
        pitem it = {0, 0};
        CHECK_OK(lc_queue_get(w.full, &it, NULL));
        got_filler += it.seq == 7;
        got_putters += it.seq == 99;
    }
    bail_out_if(!tu_wait_ge(&w.returned, N_WAITERS), "after gets");
    for (int i = 0; i < N_WAITERS; i++)
        lc_thread_join(&t[i]);
    CHECK_EQ_INT(got_filler, 1);
    CHECK_EQ_INT(got_putters, N_WAITERS);
    CHECK_EQ_INT(atomic_load(&w.rc_ok), N_WAITERS);
    CHECK_EQ_U64(lc_queue_size(w.full), 0);
    lc_queue_free(w.full);
}

/* ---- (3) drain after close ---- */

static void test_drain_after_close(void)
{
    reset_disposed();
    lc_queue *q = lc_queue_new("drain", &hitem_type, 8, LC_OVERFLOW_BLOCK);
    for (uint32_t i = 1; i <= 5; i++) {
        hitem h = make_hitem(i);
        CHECK_OK(lc_queue_put(q, &h, NULL));
    }
    lc_queue_close(q);
    CHECK(lc_queue_closed(q));

    /* A putter after close keeps its item: not queued, not disposed. */
    hitem late = make_hitem(100);
    CHECK_EQ_INT(lc_queue_put(q, &late, NULL), LC_ECLOSED);
    CHECK_EQ_INT(lc_queue_try_put(q, &late), LC_ECLOSED);
    CHECK_EQ_INT(atomic_load(&disposed_count), 0);
    CHECK(late.heap != NULL && strcmp(late.heap, "payload") == 0);
    free(late.heap);

    /* Getters still receive everything queued before close, in order. */
    hitem h;
    CHECK_OK(lc_queue_get(q, &h, NULL));
    CHECK_EQ_INT(h.id, 1);
    free(h.heap);
    CHECK_OK(lc_queue_try_get(q, &h));
    CHECK_EQ_INT(h.id, 2);
    free(h.heap);
    CHECK_OK(lc_queue_get_until(q, &h, NULL, lc_now_ns() + 1000000000ull));
    CHECK_EQ_INT(h.id, 3);
    free(h.heap);
    for (uint32_t want = 4; want <= 5; want++) {
        CHECK_OK(lc_queue_get(q, &h, NULL));
        CHECK_EQ_INT(h.id, want);
        free(h.heap);
    }
    CHECK_EQ_INT(lc_queue_get(q, &h, NULL), LC_ECLOSED);
    CHECK_EQ_INT(lc_queue_try_get(q, &h), LC_ECLOSED);
    CHECK_EQ_INT(lc_queue_get_until(q, &h, NULL, lc_now_ns() + 1000000000ull), LC_ECLOSED);
    CHECK_EQ_INT(atomic_load(&disposed_count), 0);
    lc_queue_free(q);
    CHECK_EQ_INT(atomic_load(&disposed_count), 0);
}

/* ---- (4) DROP_NEWEST and (5) KEEP_NEWEST ---- */

static void test_drop_newest(void)
{
    reset_disposed();
    lc_queue *q = lc_queue_new("drop", &hitem_type, 3, LC_OVERFLOW_DROP_NEWEST);
    CHECK_EQ_INT(lc_queue_overflow(q), LC_OVERFLOW_DROP_NEWEST);
    for (uint32_t i = 1; i <= 3; i++) {
        hitem h = make_hitem(i);
        CHECK_OK(lc_queue_put(q, &h, NULL));
    }
    CHECK_EQ_INT(atomic_load(&disposed_count), 0);

    /* Full: the new item is taken (rc 0) and disposed of at once. */
    hitem h4 = make_hitem(4);
    CHECK_OK(lc_queue_put(q, &h4, NULL));
    CHECK_EQ_INT(atomic_load(&disposed_count), 1);
    CHECK_EQ_INT(atomic_load(&disposed_ids[0]), 4);
    hitem h5 = make_hitem(5);
    CHECK_OK(lc_queue_put(q, &h5, NULL));
    CHECK_EQ_INT(atomic_load(&disposed_count), 2);
    CHECK_EQ_INT(atomic_load(&disposed_ids[1]), 5);
    CHECK_EQ_U64(lc_queue_size(q), 3);

    lc_queue_counters c;
    lc_queue_flush_counters(q, &c);
    CHECK_EQ_U64(c.drop, 2);
    CHECK_EQ_U64(c.put, 3); /* items that entered the queue */
    CHECK_EQ_U64(c.size, 3);

    /* The queue still holds the first three, oldest first. */
    for (uint32_t want = 1; want <= 3; want++) {
        hitem h;
        CHECK_OK(lc_queue_try_get(q, &h));
        CHECK_EQ_INT(h.id, want);
        free(h.heap);
    }
    lc_queue_free(q);
    CHECK_EQ_INT(atomic_load(&disposed_count), 2);
}

static void test_keep_newest(void)
{
    reset_disposed();
    lc_queue *q = lc_queue_new("keep", &hitem_type, 3, LC_OVERFLOW_KEEP_NEWEST);
    for (uint32_t i = 1; i <= 5; i++) {
        hitem h = make_hitem(i);
        CHECK_OK(lc_queue_put(q, &h, NULL));
    }
    /* Each put into a full queue evicted the oldest: 1, then 2. */
    CHECK_EQ_INT(atomic_load(&disposed_count), 2);
    CHECK_EQ_INT(atomic_load(&disposed_ids[0]), 1);
    CHECK_EQ_INT(atomic_load(&disposed_ids[1]), 2);
    CHECK_EQ_U64(lc_queue_size(q), 3);

    lc_queue_counters c;
    lc_queue_flush_counters(q, &c);
    CHECK_EQ_U64(c.drop, 2);
    CHECK_EQ_U64(c.put, 5);
    CHECK_EQ_U64(c.size, 3);

    for (uint32_t want = 3; want <= 5; want++) {
        hitem h;
        CHECK_OK(lc_queue_try_get(q, &h));
        CHECK_EQ_INT(h.id, want);
        free(h.heap);
    }

    /* The ring has wrapped; eviction keeps working across the wrap. */
    for (uint32_t i = 6; i <= 12; i++) {
        hitem h = make_hitem(i);
        CHECK_OK(lc_queue_put(q, &h, NULL));
    }
    CHECK_EQ_INT(atomic_load(&disposed_count), 6);
    for (int i = 2; i < 6; i++)
        CHECK_EQ_INT(atomic_load(&disposed_ids[i]), 6 + (i - 2));
    for (uint32_t want = 10; want <= 12; want++) {
        hitem h;
        CHECK_OK(lc_queue_try_get(q, &h));
        CHECK_EQ_INT(h.id, want);
        free(h.heap);
    }
    lc_queue_free(q);

    /* Capacity 1 keeps exactly the newest. */
    reset_disposed();
    q = lc_queue_new("keep1", &hitem_type, 1, LC_OVERFLOW_KEEP_NEWEST);
    for (uint32_t i = 1; i <= 3; i++) {
        hitem h = make_hitem(i);
        CHECK_OK(lc_queue_put(q, &h, NULL));
    }
    CHECK_EQ_INT(atomic_load(&disposed_count), 2);
    hitem h;
    CHECK_OK(lc_queue_try_get(q, &h));
    CHECK_EQ_INT(h.id, 3);
    free(h.heap);
    lc_queue_free(q);
}

/* ---- (6) producer registration ---- */

typedef struct reg_producer {
    lc_queue *q;
    uint32_t id;
    int items;
} reg_producer;

static void *reg_produce(void *arg)
{
    reg_producer *p = arg;
    for (int i = 0; i < p->items; i++) {
        pitem it = {p->id, (uint32_t)i};
        if (lc_queue_put(p->q, &it, NULL) != 0)
            break;
    }
    lc_queue_producer_done(p->q);
    return NULL;
}

static void test_producer_registration(void)
{
    /* Sequentially: closed only after the third producer is done. */
    lc_queue *q = lc_queue_new("reg", &pitem_type, 4, LC_OVERFLOW_BLOCK);
    for (int i = 0; i < 3; i++)
        lc_queue_add_producer(q);
    CHECK(!lc_queue_closed(q));
    lc_queue_producer_done(q);
    CHECK(!lc_queue_closed(q));
    lc_queue_producer_done(q);
    CHECK(!lc_queue_closed(q));
    pitem it = {0, 0};
    CHECK_OK(lc_queue_put(q, &it, NULL));
    lc_queue_producer_done(q);
    CHECK(lc_queue_closed(q));
    CHECK_EQ_INT(lc_queue_put(q, &it, NULL), LC_ECLOSED);
    CHECK_OK(lc_queue_get(q, &it, NULL));
    CHECK_EQ_INT(lc_queue_get(q, &it, NULL), LC_ECLOSED);
    lc_queue_free(q);

    /* With threads: a consumer sees every item, then LC_ECLOSED, once all
     * three producers are done. */
    q = lc_queue_new("reg-threads", &pitem_type, 2, LC_OVERFLOW_BLOCK);
    reg_producer args[3];
    lc_thread t[3];
    memset(t, 0, sizeof t);
    for (int i = 0; i < 3; i++) {
        lc_queue_add_producer(q);
        args[i] = (reg_producer){q, (uint32_t)i, 200 * (i + 1)};
    }
    for (int i = 0; i < 3; i++)
        lc_thread_start(&t[i], "lc-test-reg", reg_produce, &args[i]);
    int counts[3] = {0, 0, 0};
    int rc;
    while ((rc = lc_queue_get(q, &it, NULL)) == 0) {
        if (it.producer < 3)
            counts[it.producer]++;
    }
    CHECK_EQ_INT(rc, LC_ECLOSED);
    for (int i = 0; i < 3; i++) {
        lc_thread_join(&t[i]);
        CHECK_EQ_INT(counts[i], 200 * (i + 1));
    }
    lc_queue_free(q);
}

/* ---- (7) non-blocking and timed calls ---- */

static void test_try_and_timeout(void)
{
    lc_queue *q = lc_queue_new("try", &pitem_type, 2, LC_OVERFLOW_DROP_NEWEST);
    pitem it = {1, 1};
    CHECK_EQ_INT(lc_queue_try_get(q, &it), -EAGAIN);
    CHECK_OK(lc_queue_try_put(q, &it));
    it.seq = 2;
    CHECK_OK(lc_queue_try_put(q, &it));
    /* Full: try_put refuses even though the policy would drop. */
    it.seq = 3;
    CHECK_EQ_INT(lc_queue_try_put(q, &it), -EAGAIN);
    lc_queue_counters c;
    lc_queue_flush_counters(q, &c);
    CHECK_EQ_U64(c.put, 2);
    CHECK_EQ_U64(c.drop, 0);

    /* get_until with an item present returns it at once, deadline or not. */
    CHECK_OK(lc_queue_get_until(q, &it, NULL, 1));
    CHECK_EQ_INT(it.seq, 1);
    CHECK_OK(lc_queue_get_until(q, &it, NULL, lc_now_ns() + 1000000000ull));
    CHECK_EQ_INT(it.seq, 2);

    /* Empty: times out, never before the deadline. */
    uint64_t deadline = lc_now_ns() + 50000000ull;
    CHECK_EQ_INT(lc_queue_get_until(q, &it, NULL, deadline), -ETIMEDOUT);
    uint64_t now = lc_now_ns();
    CHECK(now >= deadline);
    CHECK((double)(now - deadline) * 1e-9 < 5.0);
    /* A deadline in the past (0 included) returns at once. */
    uint64_t t0 = lc_now_ns();
    CHECK_EQ_INT(lc_queue_get_until(q, &it, NULL, 0), -ETIMEDOUT);
    CHECK_EQ_INT(lc_queue_get_until(q, &it, NULL, t0 - 1000000ull), -ETIMEDOUT);
    CHECK(tu_since(t0) < 5.0);
    lc_queue_free(q);
}

/* A getter with a far deadline is woken by a put from another thread. */
static void *late_putter(void *arg)
{
    lc_queue *q = arg;
    tu_sleep_ms(30);
    pitem it = {5, 5};
    lc_queue_put(q, &it, NULL);
    return NULL;
}

static void test_get_until_woken_by_put(void)
{
    lc_queue *q = lc_queue_new("until", &pitem_type, 2, LC_OVERFLOW_BLOCK);
    lc_thread t = {0};
    lc_thread_start(&t, "lc-test-late", late_putter, q);
    pitem it = {0, 0};
    uint64_t t0 = lc_now_ns();
    CHECK_OK(lc_queue_get_until(q, &it, NULL, t0 + 60000000000ull));
    CHECK_EQ_INT(it.seq, 5);
    CHECK(tu_since(t0) < 30.0);
    lc_thread_join(&t);
    lc_queue_free(q);
}

/* ---- (8) counters ---- */

static void test_flush_counters(void)
{
    lc_queue *q = lc_queue_new("counters", &pitem_type, 5, LC_OVERFLOW_BLOCK);
    pitem it = {0, 0};
    for (int i = 0; i < 3; i++)
        CHECK_OK(lc_queue_put(q, &it, NULL));
    CHECK_OK(lc_queue_get(q, &it, NULL));
    lc_queue_counters c;
    memset(&c, 0xff, sizeof c);
    lc_queue_flush_counters(q, &c);
    CHECK_EQ_U64(c.put, 3);
    CHECK_EQ_U64(c.get, 1);
    CHECK_EQ_U64(c.drop, 0);
    CHECK_EQ_U64(c.size, 2);
    CHECK_EQ_U64(c.capacity, 5);

    /* Reset: counts start over, size and capacity are still sampled. */
    lc_queue_flush_counters(q, &c);
    CHECK_EQ_U64(c.put, 0);
    CHECK_EQ_U64(c.get, 0);
    CHECK_EQ_U64(c.drop, 0);
    CHECK_EQ_U64(c.size, 2);
    CHECK_EQ_U64(c.capacity, 5);

    CHECK_OK(lc_queue_get(q, &it, NULL));
    lc_queue_flush_counters(q, &c);
    CHECK_EQ_U64(c.put, 0);
    CHECK_EQ_U64(c.get, 1);
    CHECK_EQ_U64(c.size, 1);
    lc_queue_free(q);
}

/* ---- (9) free disposes of what is left ---- */

static void test_free_disposes(void)
{
    reset_disposed();
    lc_queue *q = lc_queue_new("free", &hitem_type, 5, LC_OVERFLOW_BLOCK);
    for (uint32_t i = 1; i <= 5; i++) {
        hitem h = make_hitem(i);
        CHECK_OK(lc_queue_put(q, &h, NULL));
    }
    for (uint32_t i = 1; i <= 2; i++) {
        hitem h;
        CHECK_OK(lc_queue_get(q, &h, NULL));
        free(h.heap);
    }
    /* Wrap the ring so that the leftovers straddle its end. */
    for (uint32_t i = 6; i <= 7; i++) {
        hitem h = make_hitem(i);
        CHECK_OK(lc_queue_put(q, &h, NULL));
    }
    lc_queue_free(q);
    CHECK_EQ_INT(atomic_load(&disposed_count), 5);
    unsigned seen = 0;
    for (int i = 0; i < 5; i++)
        seen |= 1u << atomic_load(&disposed_ids[i]);
    CHECK_EQ_INT(seen, (1u << 3) | (1u << 4) | (1u << 5) | (1u << 6) | (1u << 7));

    /* Without a disposer nothing is called; NULL is fine. */
    q = lc_queue_new("plain", &pitem_type, 2, LC_OVERFLOW_BLOCK);
    pitem it = {0, 0};
    CHECK_OK(lc_queue_put(q, &it, NULL));
    lc_queue_free(q);
    lc_queue_free(NULL);
}

/* ---- (10) names and accessors ---- */

static void test_names(void)
{
    const lc_overflow all[] = {LC_OVERFLOW_BLOCK, LC_OVERFLOW_DROP_NEWEST, LC_OVERFLOW_KEEP_NEWEST};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        lc_overflow back = (lc_overflow)-1;
        CHECK(lc_overflow_parse(lc_overflow_name(all[i]), &back));
        CHECK_EQ_INT(back, all[i]);
    }
    CHECK_EQ_STR(lc_overflow_name(LC_OVERFLOW_BLOCK), "block");
    CHECK_EQ_STR(lc_overflow_name(LC_OVERFLOW_DROP_NEWEST), "drop_newest");
    CHECK_EQ_STR(lc_overflow_name(LC_OVERFLOW_KEEP_NEWEST), "keep_newest");
    CHECK_EQ_STR(lc_overflow_name((lc_overflow)42), "?");
    lc_overflow o = LC_OVERFLOW_KEEP_NEWEST;
    CHECK(!lc_overflow_parse("drop", &o));
    CHECK(!lc_overflow_parse("", &o));
    CHECK(!lc_overflow_parse("?", &o));
    CHECK_EQ_INT(o, LC_OVERFLOW_KEEP_NEWEST);

    lc_queue *q = lc_queue_new("named", &pitem_type, 3, LC_OVERFLOW_KEEP_NEWEST);
    CHECK_EQ_STR(lc_queue_name(q), "named");
    CHECK(lc_queue_item_type(q) == &pitem_type);
    CHECK_EQ_U64(lc_queue_capacity(q), 3);
    CHECK_EQ_INT(lc_queue_overflow(q), LC_OVERFLOW_KEEP_NEWEST);
    CHECK_EQ_U64(lc_queue_size(q), 0);
    CHECK(!lc_queue_closed(q));
    lc_queue_free(q);
}

/* ---- (3) blocks: a lone item is not held back; closed queues ---- */

static void *put_one_later(void *arg)
{
    lc_sleep_seconds(0.05);
    pitem it = {1, 1};
    CHECK_OK(lc_queue_put(arg, &it, NULL));
    return NULL;
}

static void test_blocks(void)
{
    lc_queue *q = lc_queue_new("blocks", &pitem_type, 64, LC_OVERFLOW_BLOCK);
    pitem in[10], out[32];
    for (uint32_t i = 0; i < 10; i++)
        in[i] = (pitem){0, i};
    size_t taken = 0, got = 0;
    CHECK_OK(lc_queue_put_many(q, in, 10, &taken, NULL));
    CHECK_EQ_U64(taken, 10);
    /* 10 items there, a block of 16 wanted: they come after the short wait. */
    uint64_t t0 = lc_now_ns();
    CHECK_OK(lc_queue_get_many(q, out, 32, &got, NULL));
    CHECK_EQ_U64(got, 10);
    CHECK(lc_now_ns() - t0 < 10 * LC_QUEUE_BLOCK_WAIT_NS + TU_PATIENCE_S * 1e9 / 10);
    for (uint32_t i = 0; i < got; i++)
        CHECK_EQ_INT(out[i].seq, i);
    /* An empty queue: a getter waits, and gets a lone item soon after it
     * comes (the first item wakes it; it waits at most the block wait). */
    lc_thread t;
    lc_thread_start(&t, "lc-test-put1", put_one_later, q);
    CHECK_OK(lc_queue_get_many(q, out, 32, &got, NULL));
    CHECK_EQ_U64(got, 1);
    lc_thread_join(&t);
    /* More than fits: put_many waits for room; a plain getter makes it. */
    pitem many[100];
    for (uint32_t i = 0; i < 100; i++)
        many[i] = (pitem){2, i};
    CHECK_OK(lc_queue_put_many(q, many, 64, &taken, NULL));
    CHECK_EQ_U64(taken, 64);
    pitem one;
    CHECK_EQ_INT(lc_queue_try_put(q, &many[0]), -EAGAIN);
    CHECK_OK(lc_queue_get(q, &one, NULL));
    CHECK_EQ_INT(one.seq, 0);
    lc_queue_close(q);
    /* Closed: put_many takes nothing; get_many drains, then says closed. */
    CHECK_EQ_INT(lc_queue_put_many(q, many, 3, &taken, NULL), LC_ECLOSED);
    CHECK_EQ_U64(taken, 0);
    size_t total = 0;
    while (lc_queue_get_many(q, out, 32, &got, NULL) == 0) {
        CHECK(got >= 1 && got <= 32);
        total += got;
    }
    CHECK_EQ_U64(total, 63);
    CHECK_EQ_U64(got, 0);
    lc_queue_free(q);
}

int main(void)
{
    test_names();
    test_flush_counters();
    test_try_and_timeout();
    test_get_until_woken_by_put();
    test_drain_after_close();
    test_drop_newest();
    test_keep_newest();
    test_free_disposes();
    test_producer_registration();
    test_close_wakes_every_waiter();
    test_get_admits_blocked_putters();
    test_many_producers_consumers(false);
    test_many_producers_consumers(true);
    test_blocks();
    return check_finish();
}
