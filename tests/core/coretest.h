/*
 * coretest: helpers shared by the core tests.
 *
 * The tests never assert that something happens within a short time: they
 * wait for it with a generous bound (CT_PATIENCE_S), which only a hung or
 * broken implementation reaches, so that they pass on a loaded two-core
 * machine and under sanitizers that slow threads down 5-20x. To know that a
 * worker has reached a blocking wait, a test watches the worker's load meter:
 * every blocking call in the core marks the meter idle just before it waits
 * and busy again once it returns. Single-threaded use (the test's main thread)
 * unless a helper says otherwise.
 */
#ifndef LC_TEST_CORETEST_H
#define LC_TEST_CORETEST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/load.h"
#include "core/thread.h"

/* Sanitized builds run slower: tests shrink their bulk loops there. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define CT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define CT_SANITIZED 1
#endif
#endif
#ifndef CT_SANITIZED
#define CT_SANITIZED 0
#endif

/* How long to wait for something that should happen promptly. */
#define CT_PATIENCE_S 10.0

static inline void ct_sleep_ms(double ms)
{
    lc_sleep_seconds(ms / 1000.0);
}

/* Seconds elapsed since the monotonic time t0. */
static inline double ct_since(uint64_t t0)
{
    return (double)(lc_now_ns() - t0) * 1e-9;
}

/* Poll until *v >= want; false when CT_PATIENCE_S passed first. */
static inline bool ct_wait_ge(atomic_int *v, int want)
{
    uint64_t t0 = lc_now_ns();
    while (atomic_load(v) < want) {
        if (ct_since(t0) > CT_PATIENCE_S)
            return false;
        ct_sleep_ms(1);
    }
    return true;
}

/* Whether the meter's owner is in an idle (waiting) interval. */
static inline bool ct_meter_idle(lc_load_meter *m)
{
    lc_mutex_lock(&m->mu);
    bool idle = m->running && !m->busy;
    lc_mutex_unlock(&m->mu);
    return idle;
}

/* Poll until the meter's owner has started a wait; false on patience. */
static inline bool ct_wait_meter_idle(lc_load_meter *m)
{
    uint64_t t0 = lc_now_ns();
    while (!ct_meter_idle(m)) {
        if (ct_since(t0) > CT_PATIENCE_S)
            return false;
        ct_sleep_ms(1);
    }
    return true;
}

#endif
