/*
 * test_metric_windows: the windows of time over metric flushes, driven by
 * an injected clock (the flushes' times are the test's): one stage flushed
 * every 0.1 s, each flush counting `per` items, setting a gauge to its own
 * number and a load half busy. The windows after 5 s, 15 s, 70 s and 75 s
 * (a window covers at least its length and less than one slot more), and
 * after hours, where the rings have rolled over and the old hours' counts
 * must be gone from the newest hour; flushes further apart than a second.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "core/metric_windows.h"

static lc_stage_metrics out;

enum { ITEMS, LEVEL };
static const lc_metric_info rows[] = {
    [ITEMS] = {"items", "items"},
    [LEVEL] = {"level", "items", .kind = LC_METRIC_GAUGE},
    {0},
};

/* A flush of the stage's rows. */
static void begin(lc_stage_metrics *m)
{
    lc_stage_metrics_begin(m, rows, 2);
    snprintf(m->name, sizeof m->name, "s");
}

/* Flushes from+1 .. to (flush i at i * 0.1 s), each counting `per`. */
static void run(lc_metric_windows *w, long from, long to, uint64_t per)
{
    static lc_stage_metrics fresh;
    for (long i = from + 1; i <= to; i++) {
        begin(&fresh);
        lc_metric_add(&fresh, ITEMS, per);
        lc_metric_gauge(&fresh, LEVEL, i);
        lc_metrics_add_load(&fresh, "workers", 0.05, 0.1, 1);
        lc_metric_windows_add(w, &fresh, (double)i * 0.1);
    }
}

static uint64_t items(lc_metric_windows *w, lc_window win, double now, double *seconds)
{
    *seconds = lc_metric_windows_get(w, win, now, &out);
    const lc_metric_slot *c = lc_metrics_find(&out, "items");
    return c ? c->count : 0;
}

/* The window's count and the seconds it covers. */
#define CHECK_WINDOW(w, win, now, count, seconds)                                                  \
    do {                                                                                           \
        double got_s;                                                                              \
        CHECK_EQ_U64(items((w), (win), (now), &got_s), (count));                                   \
        CHECK_NEAR(got_s, (seconds), 1e-6);                                                        \
    } while (0)

static void test_names(void)
{
    lc_window w;
    for (int k = 0; k < LC_WINDOW_COUNT; k++) {
        CHECK(lc_window_parse(lc_window_name((lc_window)k), &w));
        CHECK_EQ_INT(w, k);
    }
    CHECK(!lc_window_parse("5m", &w));
    CHECK(!lc_window_parse("", &w));
    CHECK(!lc_window_parse(NULL, &w));
    CHECK_EQ_STR(lc_window_name(LC_WINDOW_1M), "1m");
    CHECK_NEAR(lc_window_seconds(LC_WINDOW_1H), 3600, 0);
    CHECK_NEAR(lc_window_seconds(LC_WINDOW_ALL), 0, 0);
}

static void test_first_minutes(void)
{
    lc_metric_windows *w = lc_metric_windows_new(1, 0.1, 0);
    run(w, 0, 5, 1); /* half a second: no whole second for the long windows */
    CHECK_WINDOW(w, LC_WINDOW_1S, 0.5, 5, 0.5);
    CHECK_WINDOW(w, LC_WINDOW_10S, 0.5, 0, 0);
    CHECK_EQ_U64(lc_metric_windows_version(w), 0);

    run(w, 5, 50, 1); /* 5 s */
    CHECK_EQ_U64(lc_metric_windows_version(w), 5);
    CHECK_WINDOW(w, LC_WINDOW_1S, 5.0, 10, 1.0);
    for (int k = LC_WINDOW_10S; k <= LC_WINDOW_1H; k++)
        CHECK_WINDOW(w, (lc_window)k, 5.0, 50, 5.0);
    CHECK_WINDOW(w, LC_WINDOW_ALL, 5.0, 50, 5.0);
    /* The gauge: the newest value, and the statistics of every value. */
    lc_metric_windows_get(w, LC_WINDOW_10S, 5.0, &out);
    const lc_metric_slot *g = lc_metrics_find(&out, "level");
    CHECK(g != NULL);
    CHECK_EQ_INT(g->value, 50);
    CHECK_NEAR(g->stats.min, 1, 0);
    CHECK_NEAR(g->stats.max, 50, 0);
    CHECK_NEAR(lc_stats_mean(&g->stats), 25.5, 1e-9);
    CHECK_NEAR(out.load[0].busy_seconds / out.load[0].total_seconds, 0.5, 1e-9);
    CHECK_EQ_STR(out.name, "s");

    run(w, 50, 150, 1); /* 15 s */
    CHECK_WINDOW(w, LC_WINDOW_10S, 15.0, 100, 10.0);
    lc_metric_windows_get(w, LC_WINDOW_10S, 15.0, &out);
    g = lc_metrics_find(&out, "level");
    CHECK_NEAR(g->stats.min, 51, 0); /* seconds 5 to 15 */
    CHECK_NEAR(g->stats.max, 150, 0);
    CHECK_WINDOW(w, LC_WINDOW_1M, 15.0, 150, 15.0);
    CHECK_WINDOW(w, LC_WINDOW_ALL, 15.0, 150, 15.0);

    run(w, 150, 700, 1); /* 70 s: the minute is six whole 10 s slots */
    CHECK_WINDOW(w, LC_WINDOW_10S, 70.0, 100, 10.0);
    CHECK_WINDOW(w, LC_WINDOW_1M, 70.0, 600, 60.0);
    lc_metric_windows_get(w, LC_WINDOW_1M, 70.0, &out);
    CHECK_NEAR(lc_metrics_find(&out, "level")->stats.min, 101, 0);
    CHECK_WINDOW(w, LC_WINDOW_10M, 70.0, 700, 70.0);
    CHECK_WINDOW(w, LC_WINDOW_1H, 70.0, 700, 70.0);

    /* 75.05 s: the open 10 s slot's five seconds, after six whole slots (a
     * window is less than one slot of its tier longer than its length);
     * the open second is in no window but the last second. */
    run(w, 700, 751, 1);
    CHECK_WINDOW(w, LC_WINDOW_1M, 75.1, 650, 65.0);
    CHECK_WINDOW(w, LC_WINDOW_10S, 75.1, 100, 10.0);
    CHECK_WINDOW(w, LC_WINDOW_ALL, 75.1, 751, 75.1);
    lc_metric_windows_free(w);
}

/* Three hours at 1, 3 and 5 items a flush: each window holds the newest
 * hour's alone once the rings have gone round. */
static void test_rollover(void)
{
    lc_metric_windows *w = lc_metric_windows_new(1, 0.1, 0);
    run(w, 0, 36000, 1);
    run(w, 36000, 72000, 3);
    CHECK_WINDOW(w, LC_WINDOW_1H, 7200.0, 3 * 36000, 3600.0);
    CHECK_WINDOW(w, LC_WINDOW_10M, 7200.0, 3 * 6000, 600.0);
    CHECK_WINDOW(w, LC_WINDOW_1S, 7200.0, 30, 1.0);
    run(w, 72000, 75000, 5); /* 7500 s: 5 minutes of the open 10 min slot */
    CHECK_WINDOW(w, LC_WINDOW_1H, 7500.0, 5 * 3000 + 3 * 36000, 3900.0);
    run(w, 75000, 108000, 5);
    CHECK_WINDOW(w, LC_WINDOW_1H, 10800.0, 5 * 36000, 3600.0);
    CHECK_WINDOW(w, LC_WINDOW_1M, 10800.0, 5 * 600, 60.0);
    CHECK_WINDOW(w, LC_WINDOW_ALL, 10800.0, 36000 + 3 * 36000 + 5 * 36000, 10800.0);
    lc_metric_windows_get(w, LC_WINDOW_1H, 10800.0, &out);
    const lc_metric_slot *g = lc_metrics_find(&out, "level");
    CHECK_EQ_INT(g->value, 108000);
    CHECK_NEAR(g->stats.min, 72001, 0);
    CHECK_EQ_U64(g->stats.count, 36000);
    lc_metric_windows_free(w);
}

/* A flushing thread that ran late (the machine was suspended for 20 s):
 * the late flush is one slot, and the windows say what they cover, so the
 * rates stay right. */
static void test_late_flush(void)
{
    lc_metric_windows *w = lc_metric_windows_new(1, 0.1, 100.0);
    static lc_stage_metrics fresh;
    for (int i = 1; i <= 20; i++) {
        begin(&fresh);
        lc_metric_add(&fresh, ITEMS, 1);
        lc_metric_windows_add(w, &fresh, 100.0 + i * 0.1);
    }
    begin(&fresh);
    lc_metric_add(&fresh, ITEMS, 200);
    lc_metric_windows_add(w, &fresh, 122.0);
    CHECK_WINDOW(w, LC_WINDOW_10S, 122.0, 200, 20.0); /* the late second alone */
    CHECK_WINDOW(w, LC_WINDOW_1M, 122.0, 220, 22.0);
    double s;
    uint64_t n = items(w, LC_WINDOW_1S, 122.0, &s);
    CHECK_EQ_U64(n, 200);
    lc_metric_windows_free(w);
}

/* Flushes 2.5 s apart (metrics_interval_ms 2500): every flush closes a
 * second, four make 10 s, and the windows still cover their lengths. */
static void test_long_interval(void)
{
    lc_metric_windows *w = lc_metric_windows_new(1, 2.5, 0);
    static lc_stage_metrics fresh;
    for (int i = 1; i <= 100; i++) {
        begin(&fresh);
        lc_metric_add(&fresh, ITEMS, 1);
        lc_metric_windows_add(w, &fresh, i * 2.5);
    }
    CHECK_EQ_U64(lc_metric_windows_version(w), 100);
    CHECK_WINDOW(w, LC_WINDOW_1S, 250.0, 1, 2.5);
    CHECK_WINDOW(w, LC_WINDOW_10S, 250.0, 4, 10.0);
    CHECK_WINDOW(w, LC_WINDOW_1M, 250.0, 24, 60.0);
    CHECK_WINDOW(w, LC_WINDOW_1H, 250.0, 100, 250.0);
    lc_metric_windows_free(w);
}

int main(void)
{
    test_long_interval();
    test_names();
    test_first_minutes();
    test_rollover();
    test_late_flush();
    return check_finish();
}
