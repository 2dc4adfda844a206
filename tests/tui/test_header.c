/*
 * The header's items as a table: the fitting gives way in priority order
 * (a shrink as far as needed, a drop), and the real header, narrowed a
 * column at a time, leaves its items out in the order its table says, and
 * takes none back. No terminal needed (the ASCII glyphs).
 */
#include "check.h"

#include "tui/header.h"

#include <string.h>

/* ---- the fitting alone ---- */

static void test_fit(void)
{
    /* a kept 10, b goes at 20, c shrinks at 5 (to 6) and goes at 30, d on
     * the right goes at 10 (with it the margin). */
    tui_header_size sz[4] = {
        {.width = 10, .drop = TUI_HEADER_KEPT},
        {.width = 8, .drop = 20},
        {.width = 16, .least = 6, .shrink = 5, .drop = 30},
        {.width = 5, .drop = 10, .right = true},
    };
    tui_header_size s[4];

    memcpy(s, sz, sizeof s);
    tui_header_fit(s, 4, 40); /* 10 + 8 + 16 + 5 + 1 = 40: all of it */
    CHECK(s[0].width == 10 && s[1].width == 8 && s[2].width == 16 && s[3].width == 5);

    memcpy(s, sz, sizeof s);
    tui_header_fit(s, 4, 37); /* c shrinks by what is over, no more */
    CHECK(s[0].width == 10 && s[1].width == 8 && s[2].width == 13 && s[3].width == 5);

    memcpy(s, sz, sizeof s);
    tui_header_fit(s, 4, 28); /* c down to its least, then d goes, margin too */
    CHECK(s[2].width == 6 && s[3].width == 0 && s[1].width == 8);

    memcpy(s, sz, sizeof s);
    tui_header_fit(s, 4, 12); /* b, then c: a is kept even when it does not fit */
    CHECK(s[0].width == 10 && s[1].width == 0 && s[2].width == 0 && s[3].width == 0);
    memcpy(s, sz, sizeof s);
    tui_header_fit(s, 4, 5);
    CHECK(s[0].width == 10);
}

/* ---- the real header ---- */

typedef struct loader {
    Lcmon__DataLoaderMetricsProto m;
    Lcmon__StageMetricProto tensors, writer;
    Lcmon__StageMetricProto *stages[2];
    Lcmon__CountMetricProto positions, *counts[1];
    Lcmon__GaugeMetricProto connected, *gauges[1];
} loader;

/* A running rank 1 of 4 making positions, its writer on a long path with
 * its reader connected. */
static void loader_init(loader *l)
{
    memset(l, 0, sizeof *l);
    lcmon__data_loader_metrics_proto__init(&l->m);
    lcmon__stage_metric_proto__init(&l->tensors);
    lcmon__stage_metric_proto__init(&l->writer);
    lcmon__count_metric_proto__init(&l->positions);
    lcmon__gauge_metric_proto__init(&l->connected);
    l->m.state = LCMON__PIPELINE_STATE__PIPELINE_RUNNING;
    l->m.uptime_seconds = 83;
    l->m.rank = 1;
    l->m.world_size = 4;
    l->m.duration_seconds = 1;
    l->positions.name = "positions";
    l->positions.has_count = l->positions.has_role = true;
    l->positions.count = 38500;
    l->positions.role = LCMON__METRIC_ROLE__ROLE_POSITIONS;
    l->counts[0] = &l->positions;
    l->tensors.name = "tensors";
    l->tensors.n_count_metrics = 1;
    l->tensors.count_metrics = l->counts;
    l->connected.name = "reader_connected";
    l->connected.value = 1;
    l->connected.has_role = true;
    l->connected.role = LCMON__METRIC_ROLE__ROLE_READER_CONNECTED;
    l->gauges[0] = &l->connected;
    l->writer.name = "writer";
    l->writer.detail = "/tmp/lcmon-run-20261127/training/window/lcmon.pipe";
    l->writer.n_gauge_metrics = 1;
    l->writer.gauge_metrics = l->gauges;
    l->stages[0] = &l->tensors;
    l->stages[1] = &l->writer;
    l->m.n_stage_metrics = 2;
    l->m.stage_metrics = l->stages;
}

static size_t item(const char *name)
{
    for (size_t i = 0; i < tui_header_items(); i++)
        if (strcmp(tui_header_item_name(i), name) == 0)
            return i;
    CHECK(!"no such header item");
    return 0;
}

enum { WIDEST = 240, N_MAX = 32 };

/* Narrow the line from WIDEST columns to 20, one column at a time: the
 * width at which each item went (0: never) and at which each first shrank
 * (0: never). Once gone an item stays gone, and the line fits whenever
 * something could still give way. */
static void narrow(const tui_header_in *in, int *gone_at, int *shrunk_at, int *full)
{
    size_t n = tui_header_items();
    CHECK(n <= N_MAX);
    int w[N_MAX];
    tui_header_layout(in, WIDEST, full);
    for (size_t i = 0; i < n; i++)
        gone_at[i] = shrunk_at[i] = 0;
    for (int cols = WIDEST; cols >= 20; cols--) {
        tui_header_layout(in, cols, w);
        for (size_t i = 0; i < n; i++) {
            if (!w[i] && full[i] && !gone_at[i])
                gone_at[i] = cols;
            if (w[i] && w[i] < full[i] && !shrunk_at[i])
                shrunk_at[i] = cols;
            if (gone_at[i])
                CHECK(w[i] == 0); /* nothing comes back */
        }
    }
}

static void test_drop_order(void)
{
    loader l;
    loader_init(&l);
    tui_header_in in = {.m = &l.m, .log_errors = 2, .where = "in-process"};
    int gone[N_MAX], shrunk[N_MAX], full[N_MAX];
    narrow(&in, gone, shrunk, full);
    /* The widths of the whole line (ASCII): " lcmon ", " RUNNING ",
     * "  up 1:23", "  rank 1/4", "  38.5k pos/s", "  -> " and the path,
     * "  reader connected", "  2 errors in the log", "  in-process" and
     * the margin. */
    CHECK_EQ_INT(full[item("title")], 7);
    CHECK_EQ_INT(full[item("state")], 9);
    CHECK_EQ_INT(full[item("uptime")], 9);
    CHECK_EQ_INT(full[item("rank")], 10);
    CHECK_EQ_INT(full[item("rate")], 13);
    CHECK_EQ_INT(full[item("output")], 5 + (int)strlen(l.writer.detail));
    CHECK_EQ_INT(full[item("reader")], 18);
    CHECK_EQ_INT(full[item("problem")], 21);
    CHECK_EQ_INT(full[item("where")], 12);
    int total = 0;
    for (size_t i = 0; i < tui_header_items(); i++)
        total += full[i];
    /* Where the loader runs goes first, then the path shrinks, then the
     * uptime, the rank, the log's count, the path. */
    CHECK_EQ_INT(gone[item("where")], total);
    CHECK(gone[item("where")] > shrunk[item("output")]);
    CHECK(shrunk[item("output")] > gone[item("uptime")]);
    CHECK(gone[item("uptime")] > gone[item("rank")]);
    CHECK(gone[item("rank")] > gone[item("problem")]);
    CHECK(gone[item("problem")] > gone[item("output")]);
    CHECK(gone[item("output")] > 0);
    /* The path keeps its last 12 columns until it goes. */
    int w[N_MAX];
    tui_header_layout(&in, gone[item("output")] + 1, w);
    CHECK_EQ_INT(w[item("output")], 5 + 12);
    /* The title, the state, the rate and the reader stay. */
    CHECK(!gone[item("title")] && !gone[item("state")]);
    CHECK(!gone[item("rate")] && !gone[item("reader")]);

    /* The only rank says little: it goes before the uptime. */
    l.m.rank = 0;
    l.m.world_size = 1;
    narrow(&in, gone, shrunk, full);
    CHECK(gone[item("rank")] > gone[item("uptime")]);
    CHECK(gone[item("where")] > gone[item("rank")]);

    /* A stopped pipeline has no rate and no reader. */
    l.m.state = LCMON__PIPELINE_STATE__PIPELINE_STOPPED;
    tui_header_layout(&in, WIDEST, w);
    CHECK(w[item("rate")] == 0 && w[item("reader")] == 0);
    CHECK(w[item("uptime")] > 0);
}

static void test_warnings(void)
{
    loader l;
    loader_init(&l);
    tui_header_in in = {.m = &l.m, .log_errors = 2, .where = "in-process"};
    int gone[N_MAX], shrunk[N_MAX], full[N_MAX];

    /* The writer's warning names the pipe: the path goes first, the reader
     * is not shown, and the warning is cut to 40 columns before where the
     * loader runs goes. */
    l.writer.warning = "no reader: start one with  python3 -m lcmon "
                       "/tmp/lcmon-run-20261127/training/window/lcmon.pipe";
    narrow(&in, gone, shrunk, full);
    CHECK_EQ_INT(full[item("reader")], 0);
    CHECK_EQ_INT(full[item("problem")],
                 2 + (int)strlen("writer: ") + (int)strlen(l.writer.warning));
    CHECK(gone[item("output")] > shrunk[item("problem")]);
    CHECK(shrunk[item("problem")] > gone[item("where")]);
    CHECK(gone[item("where")] > gone[item("uptime")]);
    int w[N_MAX];
    tui_header_layout(&in, gone[item("where")], w);
    CHECK_EQ_INT(w[item("problem")], 2 + 40);

    /* An attached loader gone: its hint to start a reader was its own; the
     * log's count says what there is. */
    in.disconnected = true;
    tui_header_layout(&in, WIDEST, full);
    CHECK_EQ_INT(full[item("problem")], 2 + (int)strlen("2 errors in the log"));
    in.disconnected = false;

    /* Another stage's warning matters more than the path: the path goes
     * first (the log's count went after it). */
    l.writer.warning = NULL;
    l.tensors.warning = "waiting for its input";
    narrow(&in, gone, shrunk, full);
    CHECK(full[item("reader")] > 0);
    CHECK(gone[item("output")] > gone[item("problem")]);
}

/* The window the rate is over follows it, unless the last second, and
 * stays as long as the rate does; the rate is the window's. */
static void test_window(void)
{
    loader l, win;
    loader_init(&l);
    loader_init(&win);
    win.positions.count = 60 * 1000;
    win.m.duration_seconds = 60;
    int full[N_MAX], gone[N_MAX], shrunk[N_MAX];
    tui_header_in in = {.m = &l.m, .where = "in-process", .window = "1s"};
    tui_header_layout(&in, WIDEST, full);
    CHECK_EQ_INT(full[item("window")], 0);
    in.window = "1m";
    in.rate = &win.m;
    tui_header_layout(&in, WIDEST, full);
    CHECK_EQ_INT(full[item("rate")], 12);  /* "  1000 pos/s": the window's, not 38.5k */
    CHECK_EQ_INT(full[item("window")], 5); /* " (1m)" */
    in.window = "all";
    narrow(&in, gone, shrunk, full);
    CHECK_EQ_INT(full[item("window")], 14); /* " (since start)" */
    CHECK_EQ_INT(gone[item("window")], 0);
    l.m.state = LCMON__PIPELINE_STATE__PIPELINE_STOPPED; /* no rate: no window */
    tui_header_layout(&in, WIDEST, full);
    CHECK_EQ_INT(full[item("window")], 0);
}

int main(void)
{
    test_fit();
    test_window();
    test_drop_order();
    test_warnings();
    return check_finish();
}
