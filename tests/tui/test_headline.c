/*
 * The headline as one table: the screen's header (drawn by curses into a
 * pad, read back as characters) and the status lines say the same facts
 * from the same snapshot (the state, the rate, the stage warning, the
 * reader, in the same words), and the one fitting leaves the status line's
 * items out in the table's order of priority as the width narrows, never
 * the state, the rate or the reader. No terminal needed: the pad is drawn
 * for a vt100 that writes to /dev/null.
 */
#include "check.h"

#include "monitor/snapshot.h"
#include "tui/header.h"

#include <stdio.h>
#include <string.h>

typedef struct loader {
    Lcmon__DataLoaderMetricsProto m;
    Lcmon__StageMetricProto pool, sampler, tensors, writer, *stages[4];
    Lcmon__CountMetricProto positions, bad, *tcounts[1], *pcounts[1];
    Lcmon__GaugeMetricProto window, reservoir, connected, waiting, age;
    Lcmon__GaugeMetricProto *pgauges[1], *sgauges[1], *wgauges[3];
    Lcmon__QueueMetricProto queue, *queues[1];
    Lcmon__StatisticsProtoInt64 fill;
} loader;

static Lcmon__GaugeMetricProto gauge(const char *name, int64_t v, int64_t cap,
                                     Lcmon__MetricRole role)
{
    Lcmon__GaugeMetricProto g = LCMON__GAUGE_METRIC_PROTO__INIT;
    g.name = (char *)name;
    g.has_value = true;
    g.value = v;
    g.has_capacity = cap > 0;
    g.capacity = cap;
    g.has_role = true;
    g.role = role;
    return g;
}

/* A running loader making 123456 positions a second: the pool's window,
 * a full queue, the reservoir half full, a paused sampler, 3 bad chunks,
 * the positions' age, and a writer waiting for a reader. */
static void loader_init(loader *l)
{
    memset(l, 0, sizeof *l);
    lcmon__data_loader_metrics_proto__init(&l->m);
    Lcmon__StageMetricProto *st[] = {&l->pool, &l->sampler, &l->tensors, &l->writer};
    const char *names[] = {"pool", "sampler", "tensors", "writer"};
    for (int i = 0; i < 4; i++) {
        lcmon__stage_metric_proto__init(st[i]);
        st[i]->name = (char *)names[i];
        l->stages[i] = st[i];
    }
    l->m.state = LCMON__PIPELINE_STATE__PIPELINE_RUNNING;
    l->m.duration_seconds = 1;
    l->m.uptime_seconds = 83;
    l->m.n_stage_metrics = 4;
    l->m.stage_metrics = l->stages;

    l->window = gauge("chunks_in_window", 43, 50000, LCMON__METRIC_ROLE__ROLE_WINDOW_FILL);
    l->pgauges[0] = &l->window;
    l->pool.n_gauge_metrics = 1;
    l->pool.gauge_metrics = l->pgauges;
    lcmon__count_metric_proto__init(&l->bad);
    l->bad.name = "bad_chunks";
    l->bad.count = 3;
    l->bad.kind = LCMON__COUNT_KIND__COUNT_BAD_INPUT;
    l->pcounts[0] = &l->bad;
    l->pool.n_count_metrics = 1;
    l->pool.count_metrics = l->pcounts;
    lcmon__queue_metric_proto__init(&l->queue);
    lcmon__statistics_proto_int64__init(&l->fill);
    l->fill.has_latest = true;
    l->fill.latest = 16;
    l->queue.queue_capacity = 16;
    l->queue.queue_fullness = &l->fill;
    l->queues[0] = &l->queue;
    l->pool.n_queue_metrics = 1;
    l->pool.queue_metrics = l->queues;

    l->reservoir = gauge("reservoir_size", 500, 1000, LCMON__METRIC_ROLE__ROLE_RESERVOIR_FILL);
    l->sgauges[0] = &l->reservoir;
    l->sampler.n_gauge_metrics = 1;
    l->sampler.gauge_metrics = l->sgauges;
    l->sampler.state = LCMON__STAGE_STATE__STAGE_PAUSED;

    lcmon__count_metric_proto__init(&l->positions);
    l->positions.name = "positions";
    l->positions.count = 123456;
    l->positions.has_role = true;
    l->positions.role = LCMON__METRIC_ROLE__ROLE_POSITIONS;
    l->tcounts[0] = &l->positions;
    l->tensors.n_count_metrics = 1;
    l->tensors.count_metrics = l->tcounts;

    l->connected = gauge("reader_connected", 0, 0, LCMON__METRIC_ROLE__ROLE_READER_CONNECTED);
    l->waiting = gauge("reader_waiting", 1, 0, LCMON__METRIC_ROLE__ROLE_READER_WAITING);
    l->age = gauge("position_age_ms", 2500, 0, LCMON__METRIC_ROLE__ROLE_POSITION_AGE);
    l->wgauges[0] = &l->connected;
    l->wgauges[1] = &l->waiting;
    l->wgauges[2] = &l->age;
    l->writer.n_gauge_metrics = 3;
    l->writer.gauge_metrics = l->wgauges;
    l->writer.detail = "/tmp/run/lcmon.pipe";
}

/* The header's line at cols columns, as drawn. */
static void header_text(const lc_headline_in *in, int cols, char *buf)
{
    WINDOW *pad = newpad(1, cols);
    CHECK(pad != NULL);
    tui_header_draw(in, pad);
    mvwinnstr(pad, 0, 0, buf, cols);
    delwin(pad);
}

static bool has(const char *line, const char *fact)
{
    return strstr(line, fact) != NULL;
}

/* The same facts, in the same words, on the header, the compact status line
 * and the long one. */
static void test_same_facts(loader *l)
{
    lc_headline_in in = {.m = &l->m};
    char head[512], status[1024], longer[2048];
    const char *facts[] = {"123k pos/s", "waiting for a reader"};
    header_text(&in, 240, head);
    lc_status_line_compact(&l->m, 240, status, sizeof status);
    lc_status_line(&l->m, longer, sizeof longer);
    CHECK(has(head, " RUNNING ") && has(status, "[running]") && has(longer, "[running]"));
    for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++) {
        CHECK(has(head, facts[i]));
        CHECK(has(status, facts[i]));
        CHECK(has(longer, facts[i]));
    }

    /* A connected reader, a rate under 10. */
    l->connected.value = 1;
    l->positions.count = 5;
    l->m.duration_seconds = 2;
    header_text(&in, 240, head);
    lc_status_line_compact(&l->m, 240, status, sizeof status);
    lc_status_line(&l->m, longer, sizeof longer);
    CHECK(has(head, "  2.5 pos/s") && has(status, " 2.5 pos/s") && has(longer, " 2.5 pos/s"));
    CHECK(has(head, "reader connected") && has(status, "reader connected") &&
          has(longer, "reader connected"));

    /* The writer's warning says what to do, on every line, and the reader
     * is then its to say. */
    l->writer.warning = "no reader: start one with python3 -m lcmon /tmp/run/lcmon.pipe";
    header_text(&in, 240, head);
    lc_status_line_compact(&l->m, 240, status, sizeof status);
    lc_status_line(&l->m, longer, sizeof longer);
    const char *said = "writer: no reader: start one with python3 -m lcmon /tmp/run/lcmon.pipe";
    CHECK(has(head, said) && has(status, said) && has(longer, said));
    CHECK(!has(head, "reader connected") && !has(status, "reader connected") &&
          !has(longer, "reader connected"));
    l->writer.warning = NULL;

    /* Stopped: no rate and no reader anywhere. */
    l->m.state = LCMON__PIPELINE_STATE__PIPELINE_STOPPED;
    header_text(&in, 240, head);
    lc_status_line_compact(&l->m, 240, status, sizeof status);
    lc_status_line(&l->m, longer, sizeof longer);
    CHECK(has(head, " STOPPED ") && has(status, "[stopped]") && has(longer, "[stopped]"));
    CHECK(!has(head, "pos/s") && !has(status, "pos/s") && !has(longer, "pos/s"));
    CHECK(!has(head, "reader") && !has(status, "reader") && !has(longer, "reader"));
    l->m.state = LCMON__PIPELINE_STATE__PIPELINE_RUNNING;
}

/* Narrowed a column at a time, the compact line leaves its items out in
 * the table's order: bad input, the age, the paused stage, the reservoir,
 * the pool's window, the full queues; never the state, the rate or the
 * reader; " ..." says something went, and the line always fits. */
static void test_priorities(loader *l)
{
    const char *facts[] = {"bad 3",         "age 2.5s",        "sampler PAUSED",
                           "reservoir 50%", "window 43/50000", "1 queue full, last pool"};
    enum { N = sizeof facts / sizeof facts[0] };
    int gone[N] = {0};
    char line[1024];
    lc_status_line_compact(&l->m, 240, line, sizeof line);
    CHECK_EQ_STR(line, "[running] 123k pos/s | 1 queue full, last pool | window 43/50000 | "
                       "reservoir 50% | sampler PAUSED | waiting for a reader | age 2.5s | bad 3");
    for (int width = 240; width >= 47; width--) { /* the kept ones and " ..." */
        lc_status_line_compact(&l->m, (size_t)width, line, sizeof line);
        CHECK((int)strlen(line) <= width);
        CHECK(has(line, "[running] 123k pos/s") && has(line, "waiting for a reader"));
        bool any_gone = false;
        for (int i = 0; i < N; i++) {
            if (!has(line, facts[i]) && !gone[i])
                gone[i] = width;
            if (gone[i])
                CHECK(!has(line, facts[i])); /* nothing comes back */
            any_gone |= gone[i] != 0;
        }
        size_t n = strlen(line);
        CHECK(any_gone == (n >= 4 && strcmp(line + n - 4, " ...") == 0));
    }
    for (int i = 1; i < N; i++)
        CHECK(gone[i - 1] > gone[i]);
    CHECK(gone[N - 1] > 0);
    /* At several widths, what is left. */
    lc_status_line_compact(&l->m, 100, line, sizeof line);
    CHECK_EQ_STR(line, "[running] 123k pos/s | 1 queue full, last pool | window 43/50000 | "
                       "waiting for a reader ...");
    lc_status_line_compact(&l->m, 60, line, sizeof line);
    CHECK_EQ_STR(line, "[running] 123k pos/s | waiting for a reader ...");
}

int main(void)
{
    FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
    SCREEN *scr = out && in ? newterm("vt100", out, in) : NULL;
    CHECK(scr != NULL);
    if (!scr)
        return check_finish();
    loader l;
    loader_init(&l);
    test_priorities(&l);
    test_same_facts(&l);
    endwin();
    delscreen(scr);
    fclose(out);
    fclose(in);
    return check_finish();
}
