/*
 * The DETAILS column's renderers, one per display kind: every kind the
 * proto declares has one, and each says its metric as the screen shows it
 * (full and brief forms), or nothing when the metric is absent or hidden.
 * No terminal needed.
 */
#include "check.h"

#include "tui/details.h"

#include <stdio.h>
#include <string.h>

/* ---- a stage's metrics, on the stack ---- */

static void set_count(Lcmon__CountMetricProto *c, const char *name, uint64_t v, const char *unit)
{
    lcmon__count_metric_proto__init(c);
    c->name = (char *)name;
    c->has_count = true;
    c->count = v;
    c->unit = (char *)unit;
}

static void set_gauge(Lcmon__GaugeMetricProto *g, const char *name, int64_t v, int64_t capacity,
                      const char *unit)
{
    lcmon__gauge_metric_proto__init(g);
    g->name = (char *)name;
    g->value = v;
    g->has_capacity = capacity > 0;
    g->capacity = capacity;
    g->unit = (char *)unit;
}

enum { N_COUNTS = 6, N_GAUGES = 7, N_TEXTS = 2 };

typedef struct stage {
    Lcmon__StageMetricProto s;
    Lcmon__CountMetricProto c[N_COUNTS], *cp[N_COUNTS];
    Lcmon__GaugeMetricProto g[N_GAUGES], *gp[N_GAUGES];
    Lcmon__TextMetricProto t[N_TEXTS], *tp[N_TEXTS];
} stage;

static void stage_init(stage *st)
{
    memset(st, 0, sizeof *st);
    lcmon__stage_metric_proto__init(&st->s);
    st->s.name = "pool";
    st->s.has_state = true;
    st->s.state = LCMON__STAGE_STATE__STAGE_RUNNING;
    set_count(&st->c[0], "files", 12345, "files");
    set_count(&st->c[1], "chunks_in", 425, "chunks");
    set_count(&st->c[2], "bytes_out", 600000000, "bytes");
    set_count(&st->c[3], "blocked_ms", 60, "ms");
    set_count(&st->c[4], "hits", 97, NULL);
    set_count(&st->c[5], "misses", 3, NULL);
    set_gauge(&st->g[0], "chunks_in_window", 43, 50000, "chunks");
    set_gauge(&st->g[1], "store_bytes", 1200000000, 6320000000, "bytes");
    set_gauge(&st->g[2], "reservoir_size", 20000, 20000, "frames");
    set_gauge(&st->g[3], "sources", 12, 0, NULL);
    set_gauge(&st->g[4], "empty", 0, 0, NULL);
    set_gauge(&st->g[5], "waiting", 1, 0, NULL);
    set_gauge(&st->g[6], "chunks_since_anchor", 12, 0, "chunks");
    st->g[6].has_role = true;
    st->g[6].role = LCMON__METRIC_ROLE__ROLE_ANCHOR_COUNT;
    lcmon__text_metric_proto__init(&st->t[0]);
    st->t[0].name = "last_file";
    st->t[0].value = "README.md";
    lcmon__text_metric_proto__init(&st->t[1]);
    st->t[1].name = "anchor";
    st->t[1].value = "game_0001.gz";
    st->t[1].has_role = true;
    st->t[1].role = LCMON__METRIC_ROLE__ROLE_ANCHOR;
    for (int i = 0; i < N_COUNTS; i++)
        st->cp[i] = &st->c[i];
    for (int i = 0; i < N_GAUGES; i++)
        st->gp[i] = &st->g[i];
    for (int i = 0; i < N_TEXTS; i++)
        st->tp[i] = &st->t[i];
    st->s.n_count_metrics = N_COUNTS;
    st->s.count_metrics = st->cp;
    st->s.n_gauge_metrics = N_GAUGES;
    st->s.gauge_metrics = st->gp;
    st->s.n_text_metrics = N_TEXTS;
    st->s.text_metrics = st->tp;
}

/* ---- rendering one entry ---- */

static tui_view screen;
static stage last, all;

/* The segments of one MetricDisplay entry. */
static tui_segs render(Lcmon__MetricDisplay__As as, const char *metric, const char *label,
                       const char *brief)
{
    Lcmon__MetricDisplay e = LCMON__METRIC_DISPLAY__INIT;
    e.metric = (char *)metric;
    e.has_as = true;
    e.as = as;
    e.label = (char *)label;
    e.brief = (char *)brief;
    tui_segs ss = {.n = 0};
    tui_details_metric(&screen, &ss, &e, &last.s, &all.s);
    return ss;
}

/* "hits" as a PERCENT against itself plus "misses". */
static tui_segs hits_of_misses(void)
{
    Lcmon__MetricDisplay e = LCMON__METRIC_DISPLAY__INIT;
    e.metric = "hits";
    e.has_as = true;
    e.as = LCMON__METRIC_DISPLAY__AS__PERCENT;
    e.label = "hits";
    e.of = "misses";
    tui_segs ss = {.n = 0};
    tui_details_metric(&screen, &ss, &e, &last.s, &all.s);
    return ss;
}

/* One segment, with that full and brief form. */
static void check_one(tui_segs ss, const char *text, const char *brief)
{
    CHECK_EQ_INT(ss.n, 1);
    if (ss.n < 1)
        return;
    CHECK_EQ_STR(ss.v[0].text, text);
    CHECK_EQ_STR(ss.v[0].brief, brief);
}

static void test_every_kind_has_a_renderer(void)
{
    const ProtobufCEnumDescriptor *d = &lcmon__metric_display__as__descriptor;
    CHECK(d->n_values >= 10);
    for (unsigned i = 0; i < d->n_values; i++) {
        int as = d->values[i].value;
        bool renders = as == LCMON__METRIC_DISPLAY__AS__NONE || tui_details_renders(as);
        CHECK(renders);
        if (!renders)
            fprintf(stderr, "display kind %s has no renderer\n", d->values[i].name);
    }
    CHECK(!tui_details_renders(LCMON__METRIC_DISPLAY__AS__NONE));
    CHECK(!tui_details_renders(-1) && !tui_details_renders(1000));
    CHECK_EQ_INT(render(LCMON__METRIC_DISPLAY__AS__NONE, "files", "files", NULL).n, 0);
    CHECK_EQ_INT(render((Lcmon__MetricDisplay__As)1000, "files", "files", NULL).n, 0);
}

static void test_numbers(void)
{
    /* A total comes from the all-time view, a rate from the last second's. */
    all.c[0].count = 123456;
    check_one(render(LCMON__METRIC_DISPLAY__AS__TOTAL, "files", "files", NULL), "123k files",
              "123k files");
    check_one(render(LCMON__METRIC_DISPLAY__AS__RATE, "chunks_in", "chunks/s in", ""),
              "850 chunks/s in", "");
    check_one(render(LCMON__METRIC_DISPLAY__AS__RATE, "bytes_out", "/s", NULL), "1.20 GB/s",
              "1.20 GB/s");
    /* An absent count is 0, hidden when nonzero_only. */
    check_one(render(LCMON__METRIC_DISPLAY__AS__TOTAL, "nothing", "skipped", NULL), "0 skipped",
              "0 skipped");
    check_one(render(LCMON__METRIC_DISPLAY__AS__VALUE, "sources", "sources", "src"), "12 sources",
              "12 src");
    CHECK_EQ_INT(render(LCMON__METRIC_DISPLAY__AS__VALUE, "absent", "x", NULL).n, 0);
    check_one(render(LCMON__METRIC_DISPLAY__AS__SHARE_OF_TIME, "blocked_ms",
                     "blocked on the reader", "blocked"),
              "blocked on the reader 12%", "blocked 12%");
    check_one(render(LCMON__METRIC_DISPLAY__AS__PERCENT, "hits", "hits", NULL), "100% hits",
              "100% hits");
    /* Against itself plus the count `of`. */
    check_one(hits_of_misses(), "97% hits", "97% hits");
}

static void test_fills(void)
{
    tui_segs ss = render(LCMON__METRIC_DISPLAY__AS__FILL, "chunks_in_window", "in window", NULL);
    check_one(ss, "43/50000 in window", "43/50000");
    CHECK_EQ_INT(ss.v[0].bar, 8);
    CHECK_NEAR(ss.v[0].frac, 43.0 / 50000, 1e-12);
    check_one(render(LCMON__METRIC_DISPLAY__AS__FILL, "store_bytes", "in store", NULL),
              "1.20 GB/6.32 GB in store", "1.20 GB in store");
    CHECK_EQ_INT(render(LCMON__METRIC_DISPLAY__AS__FILL, "sources", "no capacity", NULL).n, 0);
}

static void test_flags_texts_anchor(void)
{
    check_one(render(LCMON__METRIC_DISPLAY__AS__FLAG, "waiting", "waiting for a reader", NULL),
              "waiting for a reader", "waiting for a reader");
    CHECK_EQ_INT(render(LCMON__METRIC_DISPLAY__AS__FLAG, "empty", "never", NULL).n, 0);
    last.s.warning = "no reader: start one"; /* the stage's warning says it better */
    CHECK_EQ_INT(render(LCMON__METRIC_DISPLAY__AS__FLAG, "waiting", "waiting", NULL).n, 0);
    last.s.warning = NULL;
    check_one(render(LCMON__METRIC_DISPLAY__AS__TEXT, "last_file", "last", NULL), "last README.md",
              "last README.md");
    check_one(render(LCMON__METRIC_DISPLAY__AS__TEXT, "last_file", "last", ""), "last README.md",
              "");
    CHECK_EQ_INT(render(LCMON__METRIC_DISPLAY__AS__TEXT, "absent", "last", NULL).n, 0);
    check_one(render(LCMON__METRIC_DISPLAY__AS__SINCE_ANCHOR, "chunks_since_anchor", NULL, NULL),
              "12 since anchor game_0001.gz", "+12 since game_0001.gz");
}

/* The window the screen shows (w): rates, shares and percentages come from
 * its snapshot, totals still from all time; a stage's statistics show as
 * their mean and range over it. */
static void test_window(void)
{
    static stage win;
    stage_init(&win);
    win.c[1].count = 6000;  /* chunks_in over a minute */
    win.c[3].count = 15000; /* blocked_ms */
    win.c[4].count = 1;     /* hits */
    win.c[5].count = 3;     /* misses */
    Lcmon__StageMetricProto *stages[1] = {&win.s};
    Lcmon__DataLoaderMetricsProto m = LCMON__DATA_LOADER_METRICS_PROTO__INIT;
    m.duration_seconds = 60;
    m.n_stage_metrics = 1;
    m.stage_metrics = stages;
    screen.rate = &m;
    check_one(render(LCMON__METRIC_DISPLAY__AS__RATE, "chunks_in", "chunks/s in", ""),
              "100 chunks/s in", "");
    check_one(render(LCMON__METRIC_DISPLAY__AS__SHARE_OF_TIME, "blocked_ms", "blocked", "b"),
              "blocked 25%", "b 25%");
    check_one(hits_of_misses(), "25% hits", "25% hits");
    tui_segs ss = {.n = 0};
    all.c[0].count = 123456;
    check_one(render(LCMON__METRIC_DISPLAY__AS__TOTAL, "files", "files", NULL), "123k files",
              "123k files");
    /* A stage the window lacks (a restart between them): the last second. */
    win.s.name = "other";
    check_one(render(LCMON__METRIC_DISPLAY__AS__RATE, "chunks_in", "chunks/s in", ""),
              "850 chunks/s in", "");
    win.s.name = "pool";

    Lcmon__StatisticsProtoDouble v = LCMON__STATISTICS_PROTO_DOUBLE__INIT;
    v.min = 0.5, v.max = 3.25, v.sum = 12, v.count = 8;
    Lcmon__StatisticsMetricProto st = LCMON__STATISTICS_METRIC_PROTO__INIT, *stp[1] = {&st};
    st.name = "chunk_weight";
    st.stats = &v;
    win.s.n_statistics_metrics = 1;
    win.s.statistics_metrics = stp;
    ss.n = 0;
    tui_details_statistics(&ss, &win.s);
    check_one(ss, "chunk_weight 1.5 (0.5 to 3.25)", "chunk_weight 1.5");
    v.count = 0; /* none measured in the window: nothing */
    ss.n = 0;
    tui_details_statistics(&ss, &win.s);
    CHECK_EQ_INT(ss.n, 0);
    screen.rate = NULL;

    /* A queue: how full now (the last second's), its mean and peak over
     * the window. */
    Lcmon__StatisticsProtoInt64 now = LCMON__STATISTICS_PROTO_INT64__INIT,
                                over = LCMON__STATISTICS_PROTO_INT64__INIT;
    now.latest = 11, now.has_latest = true, now.sum = 160, now.count = 10, now.max = 16;
    over.sum = 300, over.count = 100, over.max = 16;
    Lcmon__QueueMetricProto q = LCMON__QUEUE_METRIC_PROTO__INIT,
                            qr = LCMON__QUEUE_METRIC_PROTO__INIT;
    q.queue_capacity = qr.queue_capacity = 16;
    q.queue_fullness = &now;
    qr.queue_fullness = &over;
    ss.n = 0;
    tui_details_queue(&ss, &q, &qr, NULL, true);
    CHECK_EQ_INT(ss.n, 2);
    CHECK_EQ_STR(ss.v[0].text, "11/16 queued");
    CHECK_EQ_STR(ss.v[1].text, "mean 3, peak 16");
}

int main(void)
{
    stage_init(&last);
    stage_init(&all);
    Lcmon__DataLoaderMetricsProto m = LCMON__DATA_LOADER_METRICS_PROTO__INIT;
    m.duration_seconds = 0.5;
    screen.last = &m;
    tui_history *hist = tui_history_new();
    screen.hist = hist;
    test_every_kind_has_a_renderer();
    test_numbers();
    test_fills();
    test_flags_texts_anchor();
    test_window();
    tui_history_free(hist);
    return check_finish();
}
