/*
 * test_snapshot: the numbers the status line, the screen's header and the
 * exit summary share. pos/s counts positions wherever a stage counts them
 * (the tensor generator, or the tokenizer, whose rows are samples: in
 * decoder mode a sample is a whole game), and falls back on the writer's
 * rows; the status line says it.
 */
#include "check.h"

#include "monitor/snapshot.h"

#include <stdbool.h>
#include <string.h>

static Lcmon__StageMetricProto stage(const char *name, Lcmon__CountMetricProto **counts, size_t n)
{
    Lcmon__StageMetricProto s = LCMON__STAGE_METRIC_PROTO__INIT;
    s.name = (char *)name;
    s.count_metrics = counts;
    s.n_count_metrics = n;
    return s;
}

/* A count with a role: readers find it by the role, whatever its name. */
static Lcmon__CountMetricProto count(const char *name, uint64_t v, Lcmon__MetricRole role)
{
    Lcmon__CountMetricProto c = LCMON__COUNT_METRIC_PROTO__INIT;
    c.name = (char *)name;
    c.has_count = true;
    c.count = v;
    c.has_role = role != LCMON__METRIC_ROLE__ROLE_NONE;
    c.role = role;
    return c;
}

int main(void)
{
    /* A decoder chain: the tokenizer made 40 samples (games) of 1000
     * positions; the writer wrote those 40 rows. Over 2 s: 500 pos/s. */
    Lcmon__CountMetricProto samples = count("samples", 40, LCMON__METRIC_ROLE__ROLE_NONE),
                            positions =
                                count("positions", 1000, LCMON__METRIC_ROLE__ROLE_POSITIONS),
                            rows = count("rows", 40, LCMON__METRIC_ROLE__ROLE_ROWS),
                            batches = count("batches", 5, LCMON__METRIC_ROLE__ROLE_NONE);
    Lcmon__CountMetricProto *tok_counts[] = {&samples, &positions};
    Lcmon__CountMetricProto *wr_counts[] = {&rows, &batches};
    Lcmon__StageMetricProto tok = stage("tokenizer", tok_counts, 2),
                            wr = stage("writer", wr_counts, 2);
    Lcmon__StageMetricProto *stages[] = {&tok, &wr};
    Lcmon__DataLoaderMetricsProto m = LCMON__DATA_LOADER_METRICS_PROTO__INIT;
    m.stage_metrics = stages;
    m.n_stage_metrics = 2;
    m.has_duration_seconds = true;
    m.duration_seconds = 2.0;
    CHECK_NEAR(lc_status_positions_per_second(&m), 500.0, 1e-9);
    char line[1024];
    lc_status_line(&m, line, sizeof line);
    CHECK(strstr(line, " 500 pos/s") != NULL);

    /* Without a stage that counts positions: the writer's rows. */
    m.stage_metrics = &stages[1];
    m.n_stage_metrics = 1;
    CHECK_NEAR(lc_status_positions_per_second(&m), 20.0, 1e-9);
    /* Nothing that counts either: unknown. */
    m.n_stage_metrics = 0;
    CHECK(lc_status_positions_per_second(&m) < 0);

    /* The compact line: a stopped pipeline has no rate and no reader. */
    Lcmon__GaugeMetricProto conn = LCMON__GAUGE_METRIC_PROTO__INIT;
    conn.name = (char *)"reader_connected";
    conn.has_value = true;
    conn.value = 1;
    conn.has_role = true;
    conn.role = LCMON__METRIC_ROLE__ROLE_READER_CONNECTED;
    Lcmon__GaugeMetricProto *wr_gauges[] = {&conn};
    wr.gauge_metrics = wr_gauges;
    wr.n_gauge_metrics = 1;
    m.stage_metrics = stages;
    m.n_stage_metrics = 2;
    m.state = LCMON__PIPELINE_STATE__PIPELINE_RUNNING;
    lc_status_line_compact(&m, 120, line, sizeof line);
    CHECK_EQ_STR(line, "[running] 500 pos/s | reader connected");
    m.state = LCMON__PIPELINE_STATE__PIPELINE_STOPPED;
    lc_status_line_compact(&m, 120, line, sizeof line);
    CHECK_EQ_STR(line, "[stopped]");
    lc_status_line(&m, line, sizeof line);
    CHECK(strstr(line, "pos/s") == NULL && strstr(line, "reader") == NULL);

    /* Too long for the width: items give way by the headline's priorities
     * (the header's: the state, the rate and the reader stay), never half a
     * word, and " ..." says so; a warning is cut after a word, down to 40
     * columns, before it goes. */
    Lcmon__StageMetricProto warned = stage("writer", wr_counts, 2);
    warned.warning = (char *)"no reader: start one with python3 -m lcmon /a/long/path/to/the.pipe";
    Lcmon__StageMetricProto *with_warning[] = {&tok, &warned, &wr};
    m.stage_metrics = with_warning;
    m.n_stage_metrics = 3;
    m.state = LCMON__PIPELINE_STATE__PIPELINE_RUNNING;
    lc_status_line_compact(&m, 200, line, sizeof line);
    CHECK_EQ_STR(line, "[running] 500 pos/s | writer: no reader: start one with python3 -m lcmon "
                       "/a/long/path/to/the.pipe | reader connected");
    lc_status_line_compact(&m, 102, line, sizeof line);
    CHECK_EQ_STR(line, "[running] 500 pos/s | writer: no reader: start one with python3 -m lcmon "
                       "... | reader connected");
    CHECK(strlen(line) <= 102);
    lc_status_line_compact(&m, 60, line, sizeof line);
    CHECK_EQ_STR(line, "[running] 500 pos/s | reader connected ...");
    lc_status_line_compact(&m, 14, line, sizeof line);
    CHECK_EQ_STR(line, "[running] ...");
    CHECK(strlen(line) <= 14);
    /* Without the other writer's reader: the warning keeps its start. */
    m.n_stage_metrics = 2;
    lc_status_line_compact(&m, 80, line, sizeof line);
    CHECK_EQ_STR(line,
                 "[running] 500 pos/s | writer: no reader: start one with python3 -m lcmon ...");
    CHECK(strlen(line) <= 80);
    lc_status_line_compact(&m, 50, line, sizeof line);
    CHECK_EQ_STR(line, "[running] 500 pos/s ...");

    /* Roles, not names: a metric of another name with the role is what the
     * readers use; one with the name and no role is not. */
    m.stage_metrics = stages;
    m.n_stage_metrics = 2;
    conn.name = (char *)"pipe_open";
    lc_status_line_compact(&m, 120, line, sizeof line);
    CHECK_EQ_STR(line, "[running] 500 pos/s | reader connected");
    conn.name = (char *)"reader_connected";
    conn.has_role = false;
    conn.role = LCMON__METRIC_ROLE__ROLE_NONE;
    positions.has_role = false;
    positions.role = LCMON__METRIC_ROLE__ROLE_NONE;
    lc_status_line_compact(&m, 120, line, sizeof line);
    CHECK_EQ_STR(line, "[running] 20 pos/s"); /* the writer's rows, and no reader */
    return check_finish();
}
