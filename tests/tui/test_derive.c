/*
 * The screen's numbers: compact formats, what counts as items, bad and
 * dropped for a stage, busy fractions, and the history behind sparklines
 * and the reservoir's time left. No terminal needed.
 */
#include "check.h"

#include "monitor/snapshot.h"
#include "tui/derive.h"
#include "tui/history.h"

#include <stdlib.h>
#include <string.h>

static void test_formats(void)
{
    char b[32];
    tui_fmt_count(b, sizeof b, 0);
    CHECK_EQ_STR(b, "0");
    tui_fmt_count(b, sizeof b, 2.5);
    CHECK_EQ_STR(b, "2.5");
    tui_fmt_count(b, sizeof b, 9999);
    CHECK_EQ_STR(b, "9999");
    tui_fmt_count(b, sizeof b, 38512);
    CHECK_EQ_STR(b, "38.5k");
    tui_fmt_count(b, sizeof b, 770000);
    CHECK_EQ_STR(b, "770k");
    tui_fmt_count(b, sizeof b, 1250000);
    CHECK_EQ_STR(b, "1.25M");
    tui_fmt_count(b, sizeof b, -3);
    CHECK_EQ_STR(b, "0");
    tui_fmt_bytes(b, sizeof b, 512);
    CHECK_EQ_STR(b, "512 B");
    tui_fmt_bytes(b, sizeof b, 1388286656);
    CHECK_EQ_STR(b, "1.39 GB");
    tui_fmt_clock(b, sizeof b, 7);
    CHECK_EQ_STR(b, "0:07");
    tui_fmt_clock(b, sizeof b, 3723);
    CHECK_EQ_STR(b, "1:02:03");
    tui_fmt_clock(b, sizeof b, 3 * 86400 + 4 * 3600);
    CHECK_EQ_STR(b, "3d 04h");
    tui_fmt_eta(b, sizeof b, 3.2);
    CHECK_EQ_STR(b, "4s");
    tui_fmt_eta(b, sizeof b, 190);
    CHECK_EQ_STR(b, "3m10s");
    tui_fmt_eta(b, sizeof b, 1e9);
    CHECK_EQ_STR(b, "> 9 days");
}

static Lcmon__CountMetricProto *count(const char *name, uint64_t v, Lcmon__CountKind kind)
{
    Lcmon__CountMetricProto *c = calloc(1, sizeof *c);
    lcmon__count_metric_proto__init(c);
    c->name = strdup(name);
    c->has_count = true;
    c->count = v;
    c->has_kind = kind != LCMON__COUNT_KIND__COUNT_WORK;
    c->kind = kind;
    return c;
}

static void test_stage_numbers(void)
{
    Lcmon__StageMetricProto *s = calloc(1, sizeof *s);
    lcmon__stage_metric_proto__init(s);
    s->name = strdup("writer");
    /* Bad input and drops are what the counts say they count, whatever
     * their names; a queue's drops are the stage's too. */
    const Lcmon__CountKind W = LCMON__COUNT_KIND__COUNT_WORK,
                           B = LCMON__COUNT_KIND__COUNT_BAD_INPUT,
                           D = LCMON__COUNT_KIND__COUNT_DROP;
    s->n_count_metrics = 7;
    s->count_metrics = calloc(7, sizeof *s->count_metrics);
    s->count_metrics[0] = count("batches", 149, W);
    s->count_metrics[1] = count("bad_probability", 2, B);
    s->count_metrics[2] = count("scan_errors", 1, B);
    s->count_metrics[3] = count("unreadable_files", 3, B);
    s->count_metrics[4] = count("bad_looking_but_work", 40, W);
    s->count_metrics[5] = count("dropped_batches", 4, D);
    s->count_metrics[6] = count("also_dropped", 1, D);
    s->n_queue_metrics = 1;
    s->queue_metrics = calloc(1, sizeof *s->queue_metrics);
    s->queue_metrics[0] = calloc(1, sizeof *s->queue_metrics[0]);
    lcmon__queue_metric_proto__init(s->queue_metrics[0]);
    s->queue_metrics[0]->has_drop_count = true;
    s->queue_metrics[0]->drop_count = 2;
    /* A sink's items are its items out (the writer counts its batches
     * there), the same number ctl and the exit summary give. */
    CHECK_EQ_U64(tui_stage_items(s), 0);
    CHECK_EQ_U64(lc_snapshot_bad_input(s), 6);
    CHECK_EQ_U64(lc_snapshot_dropped(s), 7);
    s->has_items_out = true;
    s->items_out = 7;
    CHECK_EQ_U64(tui_stage_items(s), 7);

    Lcmon__DataLoaderMetricsProto m = LCMON__DATA_LOADER_METRICS_PROTO__INIT;
    m.duration_seconds = 0.5;
    CHECK(tui_per_second(&m, 10) == 20.0);
    m.duration_seconds = 0; /* no window yet: counts as one second */
    CHECK(tui_per_second(&m, 10) == 10.0);

    Lcmon__LoadMetricProto l = LCMON__LOAD_METRIC_PROTO__INIT;
    CHECK(tui_load_fraction(&l) == 0);
    l.load_seconds = 0.25;
    l.total_seconds = 1.0;
    CHECK(tui_load_fraction(&l) == 0.25);
    l.load_seconds = 2;
    CHECK(tui_load_fraction(&l) == 1.0);
    lcmon__stage_metric_proto__free_unpacked(s, NULL);
}

static Lcmon__DataLoaderMetricsProto *snapshot(double items_per_second)
{
    Lcmon__DataLoaderMetricsProto *m = calloc(1, sizeof *m);
    lcmon__data_loader_metrics_proto__init(m);
    m->duration_seconds = 1.0;
    m->n_stage_metrics = 1;
    m->stage_metrics = calloc(1, sizeof *m->stage_metrics);
    Lcmon__StageMetricProto *s = calloc(1, sizeof *s);
    lcmon__stage_metric_proto__init(s);
    s->name = strdup("unpacker");
    s->has_items_out = true;
    s->items_out = (uint64_t)items_per_second;
    m->stage_metrics[0] = s;
    return m;
}

static void test_history(void)
{
    tui_history *h = tui_history_new();
    double v[TUI_HISTORY_SECONDS], peak;
    CHECK_EQ_INT(tui_history_series(h, "unpacker", v, TUI_HISTORY_SECONDS, &peak), 0);
    for (int i = 0; i < 70; i++) {
        Lcmon__DataLoaderMetricsProto *m = snapshot(i * 10.0);
        tui_history_sample(h, m);
        lcmon__data_loader_metrics_proto__free_unpacked(m, NULL);
    }
    /* The last 60 seconds, oldest first. */
    size_t n = tui_history_series(h, "unpacker", v, TUI_HISTORY_SECONDS, &peak);
    CHECK_EQ_INT(n, 60);
    CHECK(v[0] == 100.0);
    CHECK(v[59] == 690.0);
    CHECK(peak == 690.0);
    n = tui_history_series(h, "unpacker", v, 5, &peak);
    CHECK_EQ_INT(n, 5);
    CHECK(v[4] == 690.0);

    /* A reservoir filling at 1000 a second; a restart starts over. */
    double rate;
    CHECK(!tui_history_fill_rate(h, "sampler", &rate));
    for (int i = 0; i <= 10; i++)
        tui_history_fill(h, "sampler", 1000LL * i / 10, 10.0 + i / 10.0);
    CHECK(tui_history_fill_rate(h, "sampler", &rate));
    CHECK(fabs(rate - 1000.0) < 1e-6);
    tui_history_fill(h, "sampler", 5, 11.1);
    CHECK(!tui_history_fill_rate(h, "sampler", &rate));
    tui_history_free(h);
}

int main(void)
{
    test_formats();
    test_stage_numbers();
    test_history();
    return check_finish();
}
