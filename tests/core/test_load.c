/*
 * test_load: load meters measured on real threads. A thread busy for about
 * 100 ms then idle for about 100 ms reports a load near one half over a total
 * near the time it ran; a thread blocked in lc_queue_get or lc_queue_put
 * counts as idle; a flush resets; NULL meters are accepted. Timing bounds are
 * deliberately loose: a descheduled thread still counts its wall time.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "testutil.h"
#include "core/clock.h"
#include "core/load.h"
#include "core/queue.h"
#include "core/thread.h"

typedef struct half_busy {
    lc_load_meter meter;
    atomic_ullong start_ns, stop_ns;
} half_busy;

static void *busy_then_idle(void *arg)
{
    half_busy *h = arg;
    atomic_store(&h->start_ns, lc_now_ns());
    lc_load_start(&h->meter);
    uint64_t until = lc_now_ns() + 100000000ull;
    while (lc_now_ns() < until) {
    }
    lc_load_idle(&h->meter);
    lc_sleep_seconds(0.1);
    lc_load_busy(&h->meter);
    lc_load_stop(&h->meter);
    atomic_store(&h->stop_ns, lc_now_ns());
    return NULL;
}

static void test_half_busy(void)
{
    half_busy h;
    memset(&h, 0, sizeof h);
    lc_load_init(&h.meter);
    lc_thread t;
    memset(&t, 0, sizeof t);
    lc_thread_start(&t, "lc-test-load", busy_then_idle, &h);
    lc_thread_join(&t);

    double busy = -1, total = -1;
    lc_load_flush(&h.meter, &busy, &total);
    double ran = (double)(atomic_load(&h.stop_ns) - atomic_load(&h.start_ns)) * 1e-9;
    CHECK(total >= 0.19);
    CHECK(total <= ran + 1e-6);
    CHECK(busy >= 0.099);
    CHECK(busy <= total);
    double load = total > 0 ? busy / total : 0;
    if (load < 0.2 || load > 0.8)
        fprintf(stderr, "  busy %.3f s of %.3f s\n", busy, total);
    CHECK(load >= 0.2 && load <= 0.8);

    /* The flush reset the meter, and a stopped meter counts no more time. */
    tu_sleep_ms(20);
    lc_load_flush(&h.meter, &busy, &total);
    CHECK_EQ_INT(busy == 0.0, 1);
    CHECK_EQ_INT(total == 0.0, 1);
    lc_load_fini(&h.meter);
}

/* A running meter with no transitions: all busy; flush splits intervals. */
static void test_flush_splits_intervals(void)
{
    lc_load_meter m;
    lc_load_init(&m);
    double busy = -1, total = -1;
    lc_load_flush(&m, &busy, &total); /* not started: nothing counted */
    CHECK_EQ_INT(total == 0.0, 1);
    CHECK_EQ_INT(busy == 0.0, 1);

    lc_load_start(&m);
    tu_sleep_ms(30);
    lc_load_flush(&m, &busy, &total);
    CHECK(total >= 0.03);
    CHECK(busy == total);
    tu_sleep_ms(30);
    lc_load_idle(&m);
    tu_sleep_ms(30);
    lc_load_flush(&m, &busy, &total);
    CHECK(total >= 0.06);
    CHECK(busy >= 0.03 && busy < total);
    lc_load_flush(&m, &busy, &total);
    CHECK(total < 1.0);
    CHECK(busy == 0.0); /* still idle */
    lc_load_stop(&m);
    lc_load_fini(&m);
}

/* ---- waits in the queue count as idle ---- */

typedef struct blocked {
    lc_queue *q;
    lc_load_meter meter;
    bool put; /* block in put (full queue) rather than get (empty queue) */
    atomic_int rc;
    atomic_int done;
} blocked;

static void *block_in_queue(void *arg)
{
    blocked *b = arg;
    lc_load_start(&b->meter);
    uint32_t v = 1;
    int rc = b->put ? lc_queue_put(b->q, &v, &b->meter) : lc_queue_get(b->q, &v, &b->meter);
    lc_load_stop(&b->meter);
    atomic_store(&b->rc, rc);
    atomic_store(&b->done, 1);
    return NULL;
}

static const lc_item_type u32_type = {"u32", sizeof(uint32_t), NULL};

static void check_blocked_is_idle(bool put)
{
    blocked b;
    memset(&b, 0, sizeof b);
    b.put = put;
    b.q = lc_queue_new("load", &u32_type, 1, LC_OVERFLOW_BLOCK);
    uint32_t v = 7;
    if (put)
        CHECK_OK(lc_queue_put(b.q, &v, NULL));
    lc_load_init(&b.meter);
    lc_thread t;
    memset(&t, 0, sizeof t);
    lc_thread_start(&t, put ? "lc-test-lput" : "lc-test-lget", block_in_queue, &b);

    CHECK(tu_wait_meter_idle(&b.meter));
    double busy, total;
    lc_load_flush(&b.meter, &busy, &total); /* drop the start-up interval */
    tu_sleep_ms(200);
    lc_load_flush(&b.meter, &busy, &total);
    CHECK(total >= 0.19);
    if (!(busy <= 0.2 * total))
        fprintf(stderr, "  blocked %s: busy %.3f s of %.3f s\n", put ? "put" : "get", busy, total);
    CHECK(busy <= 0.2 * total);
    CHECK(!atomic_load(&b.done));

    /* Release it. */
    if (put)
        CHECK_OK(lc_queue_get(b.q, &v, NULL));
    else
        CHECK_OK(lc_queue_put(b.q, &v, NULL));
    CHECK(tu_wait_ge(&b.done, 1));
    if (!atomic_load(&b.done)) {
        fprintf(stderr, "test_load: blocked thread was not released\n");
        exit(check_finish());
    }
    lc_thread_join(&t);
    CHECK_OK(atomic_load(&b.rc));
    lc_load_fini(&b.meter);
    lc_queue_free(b.q);
}

static void test_blocked_in_queue_is_idle(void)
{
    check_blocked_is_idle(false);
    check_blocked_is_idle(true);
}

/* ---- NULL meters ---- */

static void test_null_meter(void)
{
    lc_load_start(NULL);
    lc_load_busy(NULL);
    lc_load_idle(NULL);
    lc_load_stop(NULL);
    lc_load_fini(NULL);

    /* Queue and run-state waits take a NULL meter. */
    lc_queue *q = lc_queue_new("nullmeter", &u32_type, 1, LC_OVERFLOW_BLOCK);
    uint32_t v = 3;
    CHECK_OK(lc_queue_put(q, &v, NULL));
    CHECK_OK(lc_queue_get(q, &v, NULL));
    lc_queue_free(q);
    CHECK(true);
}

/* load.h: "NULL meters are accepted everywhere and do nothing", which includes
 * lc_load_flush. Run it in a child so that a crash is reported as one failed
 * check rather than ending the test. */
static void test_null_meter_flush(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        double busy = -1, total = -1;
        lc_load_flush(NULL, &busy, &total);
        _exit(0);
    }
    int status = 0;
    CHECK(pid > 0);
    if (pid > 0)
        CHECK(waitpid(pid, &status, 0) == pid);
    bool clean = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!clean)
        fprintf(stderr, "  lc_load_flush(NULL, ...) crashed the child (status %#x)\n", status);
    CHECK(clean);
}

int main(void)
{
    test_null_meter();
    test_null_meter_flush();
    test_flush_splits_intervals();
    test_half_busy();
    test_blocked_in_queue_is_idle();
    return check_finish();
}
