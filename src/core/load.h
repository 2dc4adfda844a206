/*
 * load: how much of its time a thread spends working.
 *
 * Each worker thread owns one lc_load_meter and marks the moments it starts
 * waiting (lc_load_idle: blocked on a queue, paused, sleeping) and resumes
 * working (lc_load_busy). The metrics thread calls lc_load_flush(), which
 * closes the interval in progress at the current time, returns busy and total
 * seconds since the previous flush, and starts a new interval. The result per
 * thread pool is the sum over its threads, so a pool of 4 threads that are
 * all busy reports load 4 s per 1 s of wall time; the screen divides by the
 * thread count.
 *
 * A meter is marked only on transitions, so its cost is a clock read and an
 * uncontended lock per wait, not per item. NULL meters are accepted
 * everywhere and do nothing.
 */
#ifndef LC_CORE_LOAD_H
#define LC_CORE_LOAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct lc_load_meter {
    pthread_mutex_t mu;
    bool busy;
    bool running; /* between lc_load_start and lc_load_stop */
    uint64_t since_ns;
    uint64_t busy_ns;
    uint64_t total_ns;
} lc_load_meter;

void lc_load_init(lc_load_meter *m);
void lc_load_fini(lc_load_meter *m);
/* The owning thread starts (busy) or ends (no more time is counted). */
void lc_load_start(lc_load_meter *m);
void lc_load_stop(lc_load_meter *m);
void lc_load_busy(lc_load_meter *m);
void lc_load_idle(lc_load_meter *m);
/* Busy and total seconds since the last flush; resets them. */
void lc_load_flush(lc_load_meter *m, double *busy_seconds, double *total_seconds);

#endif
