/*
 * thread: pthread wrappers that abort on failure, named threads, and the run
 * state that lets a stage pause and stop its workers promptly.
 *
 * A failed lock or join is a bug, not a condition, so the wrappers abort with
 * a message (libuv's way). Condition variables use CLOCK_MONOTONIC so that
 * timed waits are immune to wall-clock jumps.
 *
 * lc_run_state is shared by the workers of one stage and whoever controls it
 * (the orchestrator). Workers call lc_run_state_check() between items: it
 * returns at once while running, blocks (counted as idle in the load meter)
 * while paused, and returns false once a stop was requested. Every wait it
 * offers wakes on stop.
 */
#ifndef LC_CORE_THREAD_H
#define LC_CORE_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct lc_load_meter;

void lc_mutex_init(pthread_mutex_t *m);
void lc_mutex_destroy(pthread_mutex_t *m);
void lc_mutex_lock(pthread_mutex_t *m);
void lc_mutex_unlock(pthread_mutex_t *m);
void lc_cond_init(pthread_cond_t *c);
void lc_cond_destroy(pthread_cond_t *c);
void lc_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
/* Wait until the monotonic deadline (lc_now_ns() based); false on timeout. */
bool lc_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, uint64_t deadline_ns);
void lc_cond_signal(pthread_cond_t *c);
void lc_cond_broadcast(pthread_cond_t *c);

typedef struct lc_thread {
    pthread_t tid;
    bool started;
    char name[16];
} lc_thread;

/* Start a thread named `name` (truncated to 15 bytes, as the kernel keeps);
 * the name is also used in its log lines. Aborts if the thread cannot start. */
void lc_thread_start(lc_thread *t, const char *name, void *(*fn)(void *), void *arg);
/* Join if started; safe to call twice. */
void lc_thread_join(lc_thread *t);

typedef struct lc_run_state {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    atomic_bool stopping;
    atomic_bool paused;
} lc_run_state;

void lc_run_state_init(lc_run_state *rs);
void lc_run_state_fini(lc_run_state *rs);
/* Clear stop and pause, for a restart. */
void lc_run_state_reset(lc_run_state *rs);
void lc_run_state_stop(lc_run_state *rs);
void lc_run_state_pause(lc_run_state *rs, bool paused);
bool lc_run_state_stopping(const lc_run_state *rs);
bool lc_run_state_paused(const lc_run_state *rs);
/* Between items: true to go on; blocks while paused; false once stopping.
 * Time spent paused is counted idle on `meter` (may be NULL). */
bool lc_run_state_check(lc_run_state *rs, struct lc_load_meter *meter);
/* Sleep up to `seconds`; returns false early if stopping. Counted idle. */
bool lc_run_state_sleep(lc_run_state *rs, double seconds, struct lc_load_meter *meter);

#endif
