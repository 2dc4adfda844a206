#include "core/metric_windows.h"

#include "core/error.h"

#include <stdlib.h>
#include <string.h>

/* Flushes kept for the last second: 1000 / interval, at most this. */
#define RING_MAX 128
#define TIERS 4

/* Tier k's slots, how many its ring keeps (its window's length in slots,
 * and one more: a slot may close a little short), and its window. */
static const double tier_seconds[TIERS] = {1, 10, 60, 600};
static const size_t tier_len[TIERS] = {11, 7, 11, 7};

static const char *const names[LC_WINDOW_COUNT] = {"1s", "10s", "1m", "10m", "1h", "all"};
static const double lengths[LC_WINDOW_COUNT] = {1, 10, 60, 600, 3600, 0};

typedef struct tier {
    lc_stage_metrics *slot; /* len * n, closed slots */
    double *from, *to;      /* the span of each */
    size_t head, count;
    lc_stage_metrics *open; /* n: the slot being gathered */
    double open_from, open_to;
    bool open_used;
} tier;

struct lc_metric_windows {
    size_t n;
    double interval, slack;
    double start, last; /* creation; the last flush (where the next one's span starts) */
    lc_stage_metrics *all;
    lc_stage_metrics *ring; /* ring_len * n: the flushes of the last second */
    double *ring_time;
    size_t ring_len, ring_head, ring_count;
    tier tiers[TIERS];
    uint64_t version;
};

const char *lc_window_name(lc_window w)
{
    return (unsigned)w < LC_WINDOW_COUNT ? names[w] : "?";
}

bool lc_window_parse(const char *name, lc_window *out)
{
    for (int w = 0; name && w < LC_WINDOW_COUNT; w++)
        if (strcmp(name, names[w]) == 0) {
            *out = (lc_window)w;
            return true;
        }
    return false;
}

double lc_window_seconds(lc_window w)
{
    return (unsigned)w < LC_WINDOW_COUNT ? lengths[w] : 0;
}

lc_metric_windows *lc_metric_windows_new(size_t n, double interval, double now)
{
    lc_metric_windows *w = lc_xcalloc(1, sizeof *w);
    w->n = n;
    w->interval = interval > 0 ? interval : 0.1;
    /* A slot closes at the first flush at most half an interval short of its
     * length: the flushes come at whole intervals, give or take. */
    w->slack = w->interval / 2;
    w->start = w->last = now;
    w->all = lc_xcalloc(n, sizeof *w->all);
    w->ring_len = (size_t)(1.0 / w->interval + 0.5);
    if (w->ring_len < 1)
        w->ring_len = 1;
    if (w->ring_len > RING_MAX)
        w->ring_len = RING_MAX;
    w->ring = lc_xcalloc(w->ring_len * n, sizeof *w->ring);
    w->ring_time = lc_xcalloc(w->ring_len, sizeof *w->ring_time);
    for (int k = 0; k < TIERS; k++) {
        tier *t = &w->tiers[k];
        t->slot = lc_xcalloc(tier_len[k] * n, sizeof *t->slot);
        t->from = lc_xcalloc(tier_len[k], sizeof *t->from);
        t->to = lc_xcalloc(tier_len[k], sizeof *t->to);
        t->open = lc_xcalloc(n, sizeof *t->open);
    }
    return w;
}

void lc_metric_windows_free(lc_metric_windows *w)
{
    if (!w)
        return;
    for (int k = 0; k < TIERS; k++) {
        free(w->tiers[k].slot);
        free(w->tiers[k].from);
        free(w->tiers[k].to);
        free(w->tiers[k].open);
    }
    free(w->all);
    free(w->ring);
    free(w->ring_time);
    free(w);
}

void lc_metric_windows_start(lc_metric_windows *w, double now)
{
    w->start = w->last = now;
}

static void merge_all(lc_stage_metrics *dst, const lc_stage_metrics *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        lc_stage_metrics_merge(&dst[i], &src[i]);
}

/* Merge m (covering from..to) into tier t's open slot. */
static void gather(tier *t, size_t n, const lc_stage_metrics *m, double from, double to)
{
    if (!t->open_used) {
        t->open_from = from;
        t->open_used = true;
    }
    merge_all(t->open, m, n);
    t->open_to = to;
}

/* Close tier k's open slot into its ring and into the open slot above,
 * closing that one too when it is long enough. */
static void close_tier(lc_metric_windows *w, int k)
{
    tier *t = &w->tiers[k];
    size_t n = w->n, s = t->head;
    memcpy(&t->slot[s * n], t->open, n * sizeof *t->open);
    t->from[s] = t->open_from;
    t->to[s] = t->open_to;
    t->head = (t->head + 1) % tier_len[k];
    if (t->count < tier_len[k])
        t->count++;
    if (k + 1 < TIERS) {
        tier *up = &w->tiers[k + 1];
        gather(up, n, t->open, t->open_from, t->open_to);
        if (up->open_to - up->open_from >= tier_seconds[k + 1] - w->slack)
            close_tier(w, k + 1);
    }
    memset(t->open, 0, n * sizeof *t->open);
    t->open_used = false;
}

void lc_metric_windows_add(lc_metric_windows *w, const lc_stage_metrics *fresh, double now)
{
    size_t n = w->n;
    merge_all(w->all, fresh, n);
    size_t slot = w->ring_head;
    memcpy(&w->ring[slot * n], fresh, n * sizeof *fresh);
    w->ring_time[slot] = now;
    w->ring_head = (w->ring_head + 1) % w->ring_len;
    if (w->ring_count < w->ring_len)
        w->ring_count++;
    tier *sec = &w->tiers[0];
    gather(sec, n, fresh, w->last, now);
    w->last = now;
    if (sec->open_to - sec->open_from >= tier_seconds[0] - w->slack) {
        close_tier(w, 0);
        w->version++;
    }
}

uint64_t lc_metric_windows_version(const lc_metric_windows *w)
{
    return w->version;
}

/* The flushes of the last second: on a loaded machine the flushing thread
 * runs late and the ring spans more than a second. Always the newest one.
 * Oldest first, so gauges end at the newest value. */
static double last_second(const lc_metric_windows *w, double now, lc_stage_metrics *out)
{
    size_t n = w->n, first = 0;
    double oldest = now;
#define AT(k) ((w->ring_head + w->ring_len - w->ring_count + (k)) % w->ring_len)
    while (first + 1 < w->ring_count && w->ring_time[AT(first)] < now - 1.0)
        first++;
    for (size_t k = first; k < w->ring_count; k++) {
        merge_all(out, &w->ring[AT(k) * n], n);
        if (k == first)
            oldest = w->ring_time[AT(k)] - w->interval;
    }
#undef AT
    double duration = w->ring_count ? now - oldest : 0;
    if (w->ring_count && w->ring_count < w->ring_len && oldest < w->start)
        duration = now - w->start;
    return duration;
}

/* A longer window, of tier k's slots: the open slots of tiers k..1 (the
 * newest whole seconds), after as many of tier k's closed slots as cover
 * the window. */
static double tier_window(const lc_metric_windows *w, int k, double length, lc_stage_metrics *out)
{
    const tier *sec = &w->tiers[0];
    if (!sec->count)
        return 0; /* not a whole second yet */
    size_t n = w->n;
    double end = sec->to[(sec->head + tier_len[0] - 1) % tier_len[0]], lo = end;
    for (int j = 1; j <= k; j++)
        if (w->tiers[j].open_used && w->tiers[j].open_from < lo)
            lo = w->tiers[j].open_from;
    const tier *t = &w->tiers[k];
    size_t take = 0;
    while (take < t->count && end - lo < length - w->slack) {
        take++;
        lo = t->from[(t->head + tier_len[k] - take) % tier_len[k]];
    }
    for (size_t i = take; i > 0; i--)
        merge_all(out, &t->slot[((t->head + tier_len[k] - i) % tier_len[k]) * n], n);
    for (int j = k; j >= 1; j--)
        if (w->tiers[j].open_used)
            merge_all(out, w->tiers[j].open, n);
    return end - lo;
}

double lc_metric_windows_get(const lc_metric_windows *w, lc_window win, double now,
                             lc_stage_metrics *out)
{
    memset(out, 0, w->n * sizeof *out);
    switch (win) {
    case LC_WINDOW_1S:
        return last_second(w, now, out);
    case LC_WINDOW_ALL:
        memcpy(out, w->all, w->n * sizeof *out);
        return now - w->start;
    default:
        return tier_window(w, (int)win - 1, lengths[win], out);
    }
}
