/*
 * The orchestrator: a running two-stage pipeline on the bundled sample data
 * reports sensible metrics (counts match the files, load between 0 and 1,
 * a last-second view about a second long); stop is prompt even when every
 * queue is full; control requests reach the right stage and say why when
 * they cannot; rank and world size come from the environment; the end of a
 * finite run is seen at once, not at the next metrics tick.
 */
#include "check.h"
#include "standalone.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/dirwalk.h"
#include "core/text.h"
#include "core/log.h"
#include "pipeline/config.h"
#include "monitor/snapshot.h"
#include "pipeline/pipeline.h"

#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Count .gz and .tar files under dir, walked as the loader walks it. */
typedef struct source_counts {
    size_t gz, tar, other;
} source_counts;

static void count_file(void *ctx, char *path, const char *name)
{
    source_counts *n = ctx;
    if (lc_has_suffix(name, ".gz"))
        n->gz++;
    else if (lc_has_suffix(name, ".tar"))
        n->tar++;
    else
        n->other++;
    free(path);
}

static void count_sources(const char *dir, size_t *gz, size_t *tar, size_t *other)
{
    source_counts n = {0};
    lc_walk_tree(dir, &(lc_walk_ops){.file = count_file}, &n);
    *gz = n.gz;
    *tar = n.tar;
    *other = n.other;
}

/* Files found in dir, and a loader of two threads reading them. */
static lc_config *files_and_sources(const char *dir, unsigned interval_ms, bool watch)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "metrics_interval_ms: %u\n"
             "stages:\n"
             "  - name: files\n"
             "    file_path_provider: {directory: '%s', watch: %s}\n"
             "  - name: sources\n"
             "    input: files\n"
             "    chunk_source_loader: {threads: 2}\n",
             interval_ms, dir, watch ? "true" : "false");
    return lc_test_config(yaml);
}

static void test_sample_data_metrics(void)
{
    const char *data = tu_test_data();
    size_t gz = 0, tar = 0, other = 0;
    count_sources(data, &gz, &tar, &other);
    CHECK(gz > 10);
    lc_config *cfg = files_and_sources(data, 50, true);
    lc_pipeline *p = NULL;
    CHECK_OK(lc_pipeline_new(cfg, &p, NULL));
    CHECK_EQ_INT(lc_pipeline_stage_count(p), 2);
    CHECK_EQ_STR(lc_pipeline_stage_name(p, 1), "sources");
    CHECK_EQ_STR(lc_pipeline_stage_type(p, 1), "chunk_source_loader");
    CHECK_OK(lc_pipeline_start(p, NULL));
    CHECK_EQ_INT(lc_pipeline_state(p), LCMON__PIPELINE_STATE__PIPELINE_RUNNING);
    /* Watching: the pipeline runs on after the initial files are loaded. */
    uint64_t want = gz + tar + 1; /* sources and the scan marker */
    double deadline = lc_now_seconds() + 20;
    while (lc_pipeline_drained(p) < want && lc_now_seconds() < deadline)
        lc_sleep_seconds(0.05);
    CHECK_EQ_U64(lc_pipeline_drained(p), want);
    lc_sleep_seconds(1.2); /* a full last-second window */
    CHECK(!lc_pipeline_wait(p, 0.1));
    CHECK_EQ_INT(lc_pipeline_state(p), LCMON__PIPELINE_STATE__PIPELINE_RUNNING);

    Lcmon__DataLoaderMetricsProto *last = lc_pipeline_metrics(p, false);
    CHECK(last->duration_seconds > 0.8 && last->duration_seconds < 1.5);
    CHECK_EQ_INT(last->n_stage_metrics, 2);
    for (size_t i = 0; i < last->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = last->stage_metrics[i];
        CHECK_EQ_INT(s->state, LCMON__STAGE_STATE__STAGE_RUNNING);
        for (size_t k = 0; k < s->n_load_metrics; k++) {
            const Lcmon__LoadMetricProto *l = s->load_metrics[k];
            double load = l->total_seconds > 0 ? l->load_seconds / l->total_seconds : -1;
            CHECK(load >= 0 && load <= 1);
            /* Idle once the files are loaded: the window holds no work. */
            CHECK(load < 0.5);
            /* Thread time of the window: about a second per thread. */
            CHECK(l->total_seconds > 0.7 * l->threads && l->total_seconds < 1.6 * l->threads);
        }
    }
    lcmon__data_loader_metrics_proto__free_unpacked(last, NULL);

    lc_pipeline_stop(p);
    CHECK_EQ_INT(lc_pipeline_state(p), LCMON__PIPELINE_STATE__PIPELINE_STOPPED);
    Lcmon__DataLoaderMetricsProto *all = lc_pipeline_metrics(p, true);
    const Lcmon__StageMetricProto *files = lc_snapshot_find_stage(all, "files");
    const Lcmon__StageMetricProto *src = lc_snapshot_find_stage(all, "sources");
    CHECK(files && src);
    if (files && src) {
        CHECK_EQ_U64(lc_snapshot_count(files, "files"), gz + tar + other);
        CHECK_EQ_U64(lc_snapshot_count(files, "initial_files"), gz + tar + other);
        CHECK_EQ_U64(lc_snapshot_count(src, "sources"), gz + tar);
        CHECK_EQ_U64(lc_snapshot_count(src, "tar_sources"), tar);
        CHECK_EQ_U64(lc_snapshot_count(src, "skipped_files"), other);
        CHECK_EQ_U64(lc_snapshot_count(src, "unreadable_files"), 0);
        CHECK(lc_snapshot_count(src, "chunks") >= gz + tar);
        CHECK_EQ_U64(lc_snapshot_count(src, "drained"), want);
        CHECK_EQ_INT(src->state, LCMON__STAGE_STATE__STAGE_STOPPED);
        const Lcmon__GaugeMetricProto *done = lc_snapshot_find_gauge(files, "initial_scan_done");
        CHECK(done && done->value == 1);
        for (size_t k = 0; k < src->n_load_metrics; k++) {
            const Lcmon__LoadMetricProto *l = src->load_metrics[k];
            CHECK(l->load_seconds >= 0 && l->load_seconds <= l->total_seconds);
        }
    }
    CHECK(all->uptime_seconds > 1);
    CHECK_EQ_INT(all->world_size, 1);
    lcmon__data_loader_metrics_proto__free_unpacked(all, NULL);

    /* Readers share the published snapshot until the next flush publishes
     * another; it packs and unpacks to the same message. */
    lc_shared *a = lc_pipeline_snapshot(p, true), *b = lc_pipeline_snapshot(p, true);
    CHECK(a == b);
    lc_pipeline_flush_metrics(p);
    lc_shared *c = lc_pipeline_snapshot(p, true);
    CHECK(c != a);
    const Lcmon__DataLoaderMetricsProto *shared = lc_shared_get(a);
    size_t len = lcmon__data_loader_metrics_proto__get_packed_size(shared);
    uint8_t *buf = malloc(len);
    lcmon__data_loader_metrics_proto__pack(shared, buf);
    Lcmon__DataLoaderMetricsProto *round = lcmon__data_loader_metrics_proto__unpack(NULL, len, buf);
    CHECK(round != NULL);
    if (round) {
        CHECK_EQ_INT(round->n_stage_metrics, 2);
        CHECK_EQ_STR(round->stage_metrics[1]->name, "sources");
        lcmon__data_loader_metrics_proto__free_unpacked(round, NULL);
    }
    free(buf);
    lc_shared_unref(a);
    lc_shared_unref(b);
    lc_shared_unref(c); /* the pipeline still holds its own */

    /* A longer window: built when asked, shared until a second closes or a
     * command publishes; it says which window it is, and holds no more
     * than all time. */
    lc_shared *w1 = lc_pipeline_window_snapshot(p, LC_WINDOW_10S);
    lc_shared *w2 = lc_pipeline_window_snapshot(p, LC_WINDOW_10S);
    CHECK(w1 == w2);
    const Lcmon__DataLoaderMetricsProto *wm = lc_shared_get(w1);
    lc_shared *as = lc_pipeline_snapshot(p, true);
    const Lcmon__DataLoaderMetricsProto *am = lc_shared_get(as);
    CHECK(wm->has_window && wm->window == LCMON__METRIC_WINDOW__WINDOW_10S);
    CHECK(am->has_window && am->window == LCMON__METRIC_WINDOW__WINDOW_ALL);
    CHECK(wm->duration_seconds > 0 && wm->duration_seconds <= am->duration_seconds);
    CHECK_EQ_INT(wm->n_stage_metrics, 2);
    CHECK(lc_snapshot_count(wm->stage_metrics[1], "chunks") <=
          lc_snapshot_count(am->stage_metrics[1], "chunks"));
    lc_shared_unref(w1);
    lc_shared_unref(w2);
    lc_shared_unref(as);
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

/* Every queue full and nobody reading: stop still returns promptly. */
static void test_prompt_stop_with_full_queues(void)
{
    const char *dir = tu_path("many");
    tu_mkdirs(dir);
    for (int i = 0; i < 50; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/f%03d.txt", dir, i);
        tu_write_file(path, "x", 1);
    }
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "stages:\n"
             "  - name: files\n"
             "    file_path_provider: {directory: '%s', settle_seconds: 0}\n"
             "    output: {capacity: 2}\n"
             "  - name: sources\n"
             "    input: files\n"
             "    chunk_source_loader: {threads: 2}\n"
             "    output: {capacity: 1}\n",
             dir);
    lc_config *cfg = lc_test_config(yaml);
    lc_pipeline *p = NULL;
    CHECK_OK(lc_pipeline_new(cfg, &p, NULL));
    lc_queue *out = lc_pipeline_take_output(p); /* never read */
    CHECK(out != NULL);
    CHECK_OK(lc_pipeline_start(p, NULL));
    lc_sleep_seconds(0.3);
    double t0 = lc_now_seconds();
    lc_pipeline_stop(p);
    CHECK(lc_now_seconds() - t0 < 2.0);
    CHECK_EQ_INT(lc_pipeline_state(p), LCMON__PIPELINE_STATE__PIPELINE_STOPPED);
    lc_pipeline_free(p); /* frees what is still queued (ASan checks) */
    lc_config_free(cfg);
}

static void test_control_errors(void)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "stages:\n"
             "  - name: files\n"
             "    file_path_provider: {directory: '%s', watch: false}\n",
             tu_test_data());
    lc_config *cfg = lc_test_config(yaml);
    lc_pipeline *p = NULL;
    CHECK_OK(lc_pipeline_new(cfg, &p, NULL));
    lc_command_request req = {.name = "pause", .stage = "nope"};
    lc_command_result res = {0};
    CHECK(lc_pipeline_command(p, &req, &res) < 0);
    CHECK(tu_contains(res.error, "no stage named 'nope' (the stages are files)"));
    lc_command_result_fini(&res);

    req.stage = NULL; /* pause is for one stage */
    CHECK(lc_pipeline_command(p, &req, &res) < 0);
    CHECK(tu_contains(res.error, "pause needs a stage name"));
    lc_command_result_fini(&res);

    /* An anchor command when no stage keeps anchors, for every stage or
     * for one. */
    req.name = "anchor-reset";
    CHECK(lc_pipeline_command(p, &req, &res) < 0);
    CHECK(tu_contains(res.error, "no stage has the command 'anchor-reset'"));
    lc_command_result_fini(&res);
    req.stage = "files";
    CHECK(lc_pipeline_command(p, &req, &res) < 0);
    CHECK(tu_contains(res.error, "stage 'files' (file_path_provider) has no command "
                                 "'anchor-reset' (its commands: pause, resume)"));
    lc_command_result_fini(&res);

    /* The wrong number of arguments: the stage's refusal says the usage. */
    const char *extra[] = {"x"};
    req.name = "pause";
    req.argc = 1;
    req.argv = extra;
    CHECK(lc_pipeline_command(p, &req, &res) < 0);
    CHECK(tu_contains(res.error, "stage 'files': pause takes no arguments (1 given)"));
    CHECK_EQ_INT(res.n, 1);
    lc_command_result_fini(&res);

    /* Pause and resume a stage by name. */
    req.argc = 0;
    CHECK_OK(lc_pipeline_command(p, &req, &res));
    CHECK_EQ_INT(res.n, 1);
    CHECK_EQ_STR(res.replies[0].stage, "files");
    CHECK(res.replies[0].error == NULL);
    lc_command_result_fini(&res);
    Lcmon__DataLoaderMetricsProto *m = lc_pipeline_metrics(p, false);
    CHECK_EQ_INT(m->stage_metrics[0]->state, LCMON__STAGE_STATE__STAGE_PAUSED);
    lcmon__data_loader_metrics_proto__free_unpacked(m, NULL);
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

static void test_rank_from_environment(void)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "stages:\n"
             "  - name: files\n"
             "    file_path_provider: {directory: '%s', watch: false}\n",
             tu_test_data());
    lc_config *cfg = lc_test_config(yaml);
    lc_pipeline *p = NULL;
    setenv("RANK", "2", 1);
    setenv("LOCAL_RANK", "1", 1);
    setenv("WORLD_SIZE", "4", 1);
    CHECK_OK(lc_pipeline_new(cfg, &p, NULL));
    CHECK_EQ_INT(lc_pipeline_rank(p), 2); /* RANK wins over LOCAL_RANK */
    CHECK_EQ_INT(lc_pipeline_world_size(p), 4);
    lc_pipeline_free(p);
    unsetenv("RANK");
    CHECK_OK(lc_pipeline_new(cfg, &p, NULL));
    CHECK_EQ_INT(lc_pipeline_rank(p), 1);
    lc_pipeline_free(p);
    setenv("LOCAL_RANK", "4", 1);
    lc_error err;
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_pipeline_new(cfg, &p, &err), LC_ECONFIG);
    CHECK(tu_contains(err.msg, "LOCAL_RANK"));
    setenv("LOCAL_RANK", "x", 1);
    CHECK_EQ_INT(lc_pipeline_new(cfg, &p, &err), LC_ECONFIG);
    CHECK(tu_contains(err.msg, "LOCAL_RANK='x'"));
    unsetenv("LOCAL_RANK");
    unsetenv("WORLD_SIZE");
    CHECK_OK(lc_pipeline_new(cfg, &p, NULL));
    CHECK_EQ_INT(lc_pipeline_rank(p), 0);
    CHECK_EQ_INT(lc_pipeline_world_size(p), 1);
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

static void count_end(void *ctx)
{
    atomic_fetch_add((atomic_int *)ctx, 1);
}

/* A finite run ends the moment its last stage does: with a metrics interval
 * of 10 s, the end is still seen within a second, the end hook runs once,
 * and the totals are flushed at the end rather than lost with the tick that
 * never came. */
static void test_end_seen_at_once(void)
{
    const char *data = tu_test_data();
    size_t gz = 0, tar = 0, other = 0;
    count_sources(data, &gz, &tar, &other);
    lc_config *cfg = files_and_sources(data, 10000, false);
    lc_pipeline *p = NULL;
    CHECK_OK(lc_pipeline_new(cfg, &p, NULL));
    atomic_int ends = 0;
    lc_pipeline_on_end(p, count_end, &ends);
    double t0 = lc_now_seconds();
    CHECK_OK(lc_pipeline_start(p, NULL));
    CHECK(lc_pipeline_wait(p, 20));
    double took = lc_now_seconds() - t0;
    CHECK_EQ_INT(lc_pipeline_state(p), LCMON__PIPELINE_STATE__PIPELINE_FINISHED);
    CHECK(took < 5.0);
    if (took >= 5.0)
        fprintf(stderr, "the end was seen after %.2f s\n", took);
    /* The hook runs just after the state changes: give it a moment. */
    double deadline = lc_now_seconds() + 5;
    while (atomic_load(&ends) == 0 && lc_now_seconds() < deadline)
        lc_sleep_seconds(0.01);
    CHECK_EQ_INT(atomic_load(&ends), 1);
    CHECK_EQ_U64(lc_pipeline_drained(p), gz + tar + 1); /* the sources and the scan marker */
    Lcmon__DataLoaderMetricsProto *all = lc_pipeline_metrics(p, true);
    const Lcmon__StageMetricProto *src = lc_snapshot_find_stage(all, "sources");
    CHECK(src != NULL);
    if (src)
        CHECK_EQ_U64(src->items_out, gz + tar); /* the marker is drained, not counted */
    CHECK_EQ_INT(all->state, LCMON__PIPELINE_STATE__PIPELINE_FINISHED);
    lcmon__data_loader_metrics_proto__free_unpacked(all, NULL);
    lc_pipeline_stop(p);
    CHECK_EQ_INT(atomic_load(&ends), 1); /* not again on stop */
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    test_sample_data_metrics();
    test_prompt_stop_with_full_queues();
    test_control_errors();
    test_rank_from_environment();
    test_end_seen_at_once();
    return check_finish();
}
