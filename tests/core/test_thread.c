/*
 * test_thread: named threads and lc_run_state with real threads.
 * lc_thread_start names the thread (kernel name and log name, truncated to 15
 * bytes) and joining twice is safe; a worker looping on lc_run_state_check
 * runs, blocks while paused, resumes, and stops promptly even while paused;
 * lc_run_state_sleep returns early on stop; lc_cond_wait_until times out and
 * wakes on a signal.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "testutil.h"
#include "core/clock.h"
#include "core/load.h"
#include "core/log.h"
#include "core/thread.h"

/* ---- names ---- */

typedef struct name_probe {
    char kernel_name[32];
    char log_name[32];
    int getname_rc;
} name_probe;

static void *read_own_name(void *arg)
{
    name_probe *p = arg;
    p->getname_rc = pthread_getname_np(pthread_self(), p->kernel_name, sizeof p->kernel_name);
    snprintf(p->log_name, sizeof p->log_name, "%s", lc_thread_log_name());
    return NULL;
}

static void test_thread_names(void)
{
    name_probe p;
    memset(&p, 0, sizeof p);
    lc_thread t;
    memset(&t, 0, sizeof t);
    lc_thread_start(&t, "lc-test-7", read_own_name, &p);
    CHECK(t.started);
    CHECK_EQ_STR(t.name, "lc-test-7");
    lc_thread_join(&t);
    CHECK(!t.started);
    lc_thread_join(&t); /* the second join does nothing */
    CHECK_EQ_INT(p.getname_rc, 0);
    CHECK_EQ_STR(p.kernel_name, "lc-test-7");
    CHECK_EQ_STR(p.log_name, "lc-test-7");

    /* Longer names are cut to the 15 bytes the kernel keeps. */
    memset(&p, 0, sizeof p);
    lc_thread_start(&t, "lc-averyverylongname-3", read_own_name, &p);
    CHECK_EQ_STR(t.name, "lc-averyverylon");
    lc_thread_join(&t);
    lc_thread_join(&t);
    CHECK_EQ_INT(p.getname_rc, 0);
    CHECK_EQ_STR(p.kernel_name, "lc-averyverylon");
    CHECK_EQ_STR(p.log_name, "lc-averyverylon");

    /* A thread that never started joins as a no-op. */
    lc_thread never;
    memset(&never, 0, sizeof never);
    lc_thread_join(&never);
    CHECK(!never.started);

    CHECK_EQ_STR(lc_thread_log_name(), "main");
}

/* ---- run state: run, pause, resume, stop while paused ---- */

typedef struct worker {
    lc_run_state *rs;
    lc_load_meter meter;
    atomic_int iterations;
    atomic_int exited;
    atomic_ullong exit_ns;
} worker;

static void *check_loop(void *arg)
{
    worker *w = arg;
    lc_load_start(&w->meter);
    while (lc_run_state_check(w->rs, &w->meter))
        atomic_fetch_add(&w->iterations, 1);
    atomic_store(&w->exit_ns, lc_now_ns());
    lc_load_stop(&w->meter);
    atomic_store(&w->exited, 1);
    return NULL;
}

static bool wait_iterations_above(worker *w, int n)
{
    uint64_t t0 = lc_now_ns();
    while (atomic_load(&w->iterations) <= n) {
        if (tu_since(t0) > TU_PATIENCE_S)
            return false;
        tu_sleep_ms(1);
    }
    return true;
}

static void test_run_state_pause_resume_stop(void)
{
    lc_run_state rs;
    lc_run_state_init(&rs);
    CHECK(!lc_run_state_paused(&rs));
    CHECK(!lc_run_state_stopping(&rs));
    CHECK(lc_run_state_check(&rs, NULL));

    worker w;
    memset(&w, 0, sizeof w);
    w.rs = &rs;
    lc_load_init(&w.meter);
    lc_thread t;
    memset(&t, 0, sizeof t);
    lc_thread_start(&t, "lc-test-run", check_loop, &w);

    /* Running: check keeps returning true. */
    CHECK(wait_iterations_above(&w, 100));

    /* Paused: the worker goes idle in check and makes no progress. */
    lc_run_state_pause(&rs, true);
    CHECK(lc_run_state_paused(&rs));
    CHECK(tu_wait_meter_idle(&w.meter));
    int frozen = atomic_load(&w.iterations);
    tu_sleep_ms(100);
    CHECK_EQ_INT(atomic_load(&w.iterations), frozen);
    CHECK(tu_meter_idle(&w.meter));
    CHECK(!atomic_load(&w.exited));

    /* Resumed: progress again. */
    lc_run_state_pause(&rs, false);
    CHECK(wait_iterations_above(&w, frozen + 100));

    /* Paused again, then stopped: the paused worker wakes and exits. */
    lc_run_state_pause(&rs, true);
    CHECK(tu_wait_meter_idle(&w.meter));
    tu_sleep_ms(20);
    uint64_t stop_ns = lc_now_ns();
    lc_run_state_stop(&rs);
    CHECK(lc_run_state_stopping(&rs));
    CHECK(tu_wait_ge(&w.exited, 1));
    if (atomic_load(&w.exited)) {
        lc_thread_join(&t);
        uint64_t exit_ns = atomic_load(&w.exit_ns);
        CHECK(exit_ns >= stop_ns);
        CHECK((double)(exit_ns - stop_ns) * 1e-9 < 2.0);
    } else {
        fprintf(stderr, "test_thread: stop did not wake the paused worker\n");
        exit(check_finish());
    }

    /* Stopped: check says no, paused or not. */
    CHECK(!lc_run_state_check(&rs, NULL));
    lc_run_state_pause(&rs, false);
    CHECK(!lc_run_state_check(&rs, NULL));

    /* Reset clears both for a restart. */
    lc_run_state_pause(&rs, true);
    lc_run_state_reset(&rs);
    CHECK(!lc_run_state_stopping(&rs));
    CHECK(!lc_run_state_paused(&rs));
    CHECK(lc_run_state_check(&rs, NULL));

    lc_load_fini(&w.meter);
    lc_run_state_fini(&rs);
}

/* ---- run state sleep ---- */

typedef struct sleeper {
    lc_run_state *rs;
    lc_load_meter meter;
    double seconds;
    atomic_int result; /* 0 running, 1 returned true, 2 returned false */
    atomic_ullong return_ns;
} sleeper;

static void *sleep_once(void *arg)
{
    sleeper *s = arg;
    lc_load_start(&s->meter);
    bool go = lc_run_state_sleep(s->rs, s->seconds, &s->meter);
    atomic_store(&s->return_ns, lc_now_ns());
    lc_load_stop(&s->meter);
    atomic_store(&s->result, go ? 1 : 2);
    return NULL;
}

static void test_run_state_sleep(void)
{
    lc_run_state rs;
    lc_run_state_init(&rs);

    /* Without a stop the full time passes and the answer is true. */
    uint64_t t0 = lc_now_ns();
    CHECK(lc_run_state_sleep(&rs, 0.05, NULL));
    CHECK(tu_since(t0) >= 0.05);
    CHECK(tu_since(t0) < 5.0);

    /* A stop ends a 60 s sleep early with false. */
    sleeper s;
    memset(&s, 0, sizeof s);
    s.rs = &rs;
    s.seconds = 60.0;
    lc_load_init(&s.meter);
    lc_thread t;
    memset(&t, 0, sizeof t);
    lc_thread_start(&t, "lc-test-sleep", sleep_once, &s);
    CHECK(tu_wait_meter_idle(&s.meter));
    tu_sleep_ms(20);
    uint64_t stop_ns = lc_now_ns();
    lc_run_state_stop(&rs);
    CHECK(tu_wait_ge(&s.result, 1));
    if (atomic_load(&s.result) == 0) {
        fprintf(stderr, "test_thread: stop did not end lc_run_state_sleep\n");
        exit(check_finish());
    }
    lc_thread_join(&t);
    CHECK_EQ_INT(atomic_load(&s.result), 2);
    CHECK((double)(atomic_load(&s.return_ns) - stop_ns) * 1e-9 < 5.0);

    /* Once stopped, sleeping returns false at once. */
    t0 = lc_now_ns();
    CHECK(!lc_run_state_sleep(&rs, 60.0, NULL));
    CHECK(tu_since(t0) < 5.0);

    lc_load_fini(&s.meter);
    lc_run_state_fini(&rs);
}

/* ---- lc_cond_wait_until ---- */

typedef struct signaller {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool flag;
} signaller;

static void *set_flag_later(void *arg)
{
    signaller *s = arg;
    tu_sleep_ms(20);
    lc_mutex_lock(&s->mu);
    s->flag = true;
    lc_cond_signal(&s->cond);
    lc_mutex_unlock(&s->mu);
    return NULL;
}

static void test_cond_wait_until(void)
{
    signaller s;
    lc_mutex_init(&s.mu);
    lc_cond_init(&s.cond);
    s.flag = false;

    /* Nobody signals: false, never before the deadline. */
    lc_mutex_lock(&s.mu);
    uint64_t deadline = lc_now_ns() + 30000000ull;
    bool signalled = true;
    while (signalled)
        signalled = lc_cond_wait_until(&s.cond, &s.mu, deadline);
    CHECK(lc_now_ns() >= deadline);
    /* A deadline already past returns false at once. */
    CHECK(!lc_cond_wait_until(&s.cond, &s.mu, lc_now_ns() - 1000000ull));
    CHECK(!lc_cond_wait_until(&s.cond, &s.mu, 1));
    lc_mutex_unlock(&s.mu);

    /* Signalled well before a far deadline: true, and early. */
    lc_thread t;
    memset(&t, 0, sizeof t);
    uint64_t t0 = lc_now_ns();
    lc_thread_start(&t, "lc-test-signal", set_flag_later, &s);
    lc_mutex_lock(&s.mu);
    deadline = t0 + 60000000000ull;
    bool in_time = true;
    while (!s.flag && in_time)
        in_time = lc_cond_wait_until(&s.cond, &s.mu, deadline);
    bool flag = s.flag;
    lc_mutex_unlock(&s.mu);
    CHECK(flag);
    CHECK(in_time);
    CHECK(tu_since(t0) < 30.0);
    lc_thread_join(&t);

    lc_cond_destroy(&s.cond);
    lc_mutex_destroy(&s.mu);
}

int main(void)
{
    lc_log_set_stderr(false);
    test_thread_names();
    test_cond_wait_until();
    test_run_state_pause_resume_stop();
    test_run_state_sleep();
    return check_finish();
}
