#include "core/load.h"

#include "core/clock.h"
#include "core/thread.h"

void lc_load_init(lc_load_meter *m)
{
    lc_mutex_init(&m->mu);
    m->busy = false;
    m->running = false;
    m->since_ns = lc_now_ns();
    m->busy_ns = 0;
    m->total_ns = 0;
}

void lc_load_fini(lc_load_meter *m)
{
    if (m)
        lc_mutex_destroy(&m->mu);
}

/* Close the interval in progress at `now`. Caller holds the lock. */
static void account(lc_load_meter *m, uint64_t now)
{
    if (m->running && now > m->since_ns) {
        uint64_t d = now - m->since_ns;
        m->total_ns += d;
        if (m->busy)
            m->busy_ns += d;
    }
    m->since_ns = now;
}

static void set_state(lc_load_meter *m, bool running, bool busy)
{
    if (!m)
        return;
    uint64_t now = lc_now_ns();
    lc_mutex_lock(&m->mu);
    account(m, now);
    m->running = running;
    m->busy = busy;
    lc_mutex_unlock(&m->mu);
}

void lc_load_start(lc_load_meter *m)
{
    set_state(m, true, true);
}

void lc_load_stop(lc_load_meter *m)
{
    set_state(m, false, false);
}

void lc_load_busy(lc_load_meter *m)
{
    if (m)
        set_state(m, m->running, true);
}

void lc_load_idle(lc_load_meter *m)
{
    if (m)
        set_state(m, m->running, false);
}

void lc_load_flush(lc_load_meter *m, double *busy_seconds, double *total_seconds)
{
    if (!m) {
        *busy_seconds = *total_seconds = 0;
        return;
    }
    uint64_t now = lc_now_ns();
    lc_mutex_lock(&m->mu);
    account(m, now);
    *busy_seconds = (double)m->busy_ns * 1e-9;
    *total_seconds = (double)m->total_ns * 1e-9;
    m->busy_ns = 0;
    m->total_ns = 0;
    lc_mutex_unlock(&m->mu);
}
