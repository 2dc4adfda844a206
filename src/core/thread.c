#include "core/thread.h"

#include "core/clock.h"
#include "core/error.h"
#include "core/load.h"
#include "core/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void check(int rc, const char *what)
{
    if (rc != 0)
        lc_fatal("%s failed: %s", what, strerror(rc));
}

void lc_mutex_init(pthread_mutex_t *m)
{
    check(pthread_mutex_init(m, NULL), "pthread_mutex_init");
}

void lc_mutex_destroy(pthread_mutex_t *m)
{
    check(pthread_mutex_destroy(m), "pthread_mutex_destroy");
}

void lc_mutex_lock(pthread_mutex_t *m)
{
    check(pthread_mutex_lock(m), "pthread_mutex_lock");
}

void lc_mutex_unlock(pthread_mutex_t *m)
{
    check(pthread_mutex_unlock(m), "pthread_mutex_unlock");
}

void lc_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t attr;
    check(pthread_condattr_init(&attr), "pthread_condattr_init");
    check(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC), "pthread_condattr_setclock");
    check(pthread_cond_init(c, &attr), "pthread_cond_init");
    pthread_condattr_destroy(&attr);
}

void lc_cond_destroy(pthread_cond_t *c)
{
    check(pthread_cond_destroy(c), "pthread_cond_destroy");
}

void lc_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    check(pthread_cond_wait(c, m), "pthread_cond_wait");
}

bool lc_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, uint64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000u),
                          .tv_nsec = (long)(deadline_ns % 1000000000u)};
    int rc = pthread_cond_timedwait(c, m, &ts);
    if (rc == ETIMEDOUT)
        return false;
    check(rc, "pthread_cond_timedwait");
    return true;
}

void lc_cond_signal(pthread_cond_t *c)
{
    check(pthread_cond_signal(c), "pthread_cond_signal");
}

void lc_cond_broadcast(pthread_cond_t *c)
{
    check(pthread_cond_broadcast(c), "pthread_cond_broadcast");
}

struct thread_start {
    void *(*fn)(void *);
    void *arg;
    char name[16];
};

static void *thread_trampoline(void *p)
{
    struct thread_start st = *(struct thread_start *)p;
    free(p);
    pthread_setname_np(pthread_self(), st.name);
    lc_thread_set_log_name(st.name);
    return st.fn(st.arg);
}

void lc_thread_start(lc_thread *t, const char *name, void *(*fn)(void *), void *arg)
{
    struct thread_start *st = lc_xmalloc(sizeof *st);
    st->fn = fn;
    st->arg = arg;
    snprintf(st->name, sizeof st->name, "%s", name);
    memcpy(t->name, st->name, sizeof t->name);
    check(pthread_create(&t->tid, NULL, thread_trampoline, st), "pthread_create");
    t->started = true;
}

void lc_thread_join(lc_thread *t)
{
    if (!t->started)
        return;
    check(pthread_join(t->tid, NULL), "pthread_join");
    t->started = false;
}

void lc_run_state_init(lc_run_state *rs)
{
    lc_mutex_init(&rs->mu);
    lc_cond_init(&rs->cond);
    atomic_init(&rs->stopping, false);
    atomic_init(&rs->paused, false);
}

void lc_run_state_fini(lc_run_state *rs)
{
    lc_cond_destroy(&rs->cond);
    lc_mutex_destroy(&rs->mu);
}

void lc_run_state_reset(lc_run_state *rs)
{
    lc_mutex_lock(&rs->mu);
    atomic_store(&rs->stopping, false);
    atomic_store(&rs->paused, false);
    lc_mutex_unlock(&rs->mu);
}

void lc_run_state_stop(lc_run_state *rs)
{
    lc_mutex_lock(&rs->mu);
    atomic_store(&rs->stopping, true);
    lc_cond_broadcast(&rs->cond);
    lc_mutex_unlock(&rs->mu);
}

void lc_run_state_pause(lc_run_state *rs, bool paused)
{
    lc_mutex_lock(&rs->mu);
    atomic_store(&rs->paused, paused);
    lc_cond_broadcast(&rs->cond);
    lc_mutex_unlock(&rs->mu);
}

bool lc_run_state_stopping(const lc_run_state *rs)
{
    return atomic_load(&rs->stopping);
}

bool lc_run_state_paused(const lc_run_state *rs)
{
    return atomic_load(&rs->paused);
}

bool lc_run_state_check(lc_run_state *rs, struct lc_load_meter *meter)
{
    if (!atomic_load(&rs->paused))
        return !atomic_load(&rs->stopping);
    lc_load_idle(meter);
    lc_mutex_lock(&rs->mu);
    while (atomic_load(&rs->paused) && !atomic_load(&rs->stopping))
        lc_cond_wait(&rs->cond, &rs->mu);
    bool go = !atomic_load(&rs->stopping);
    lc_mutex_unlock(&rs->mu);
    lc_load_busy(meter);
    return go;
}

bool lc_run_state_sleep(lc_run_state *rs, double seconds, struct lc_load_meter *meter)
{
    uint64_t deadline = lc_now_ns() + (uint64_t)(seconds * 1e9);
    lc_load_idle(meter);
    lc_mutex_lock(&rs->mu);
    while (!atomic_load(&rs->stopping)) {
        if (!lc_cond_wait_until(&rs->cond, &rs->mu, deadline))
            break;
    }
    bool go = !atomic_load(&rs->stopping);
    lc_mutex_unlock(&rs->mu);
    lc_load_busy(meter);
    return go;
}
