/*
 * chunk_source_loader inside a real two-stage pipeline: .gz and .tar sources
 * are opened and counted, other files are skipped and counted, a truncated
 * archive and a non-gzip member are logged and counted, a file that vanishes
 * before it is loaded is logged with its name and counted, the initial-scan
 * marker comes after every initial source although several threads load,
 * and the pipeline keeps running through all of it.
 */
#include "check.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "format/chunk_source.h"
#include "pipeline/config.h"
#include "pipeline/metrics_proto.h"
#include "pipeline/pipeline.h"
#include "stages/items.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static lc_config *make_config(const char *dir, unsigned threads)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "stages:\n"
             "  - name: files\n"
             "    file_path_provider: {directory: '%s', watch: false}\n"
             "    output: {capacity: 1000}\n"
             "  - name: sources\n"
             "    input: files\n"
             "    chunk_source_loader: {threads: %u}\n"
             "    output: {capacity: 1000}\n",
             dir, threads);
    lc_config *cfg = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_config_load_string(yaml, strlen(yaml), "test", &cfg, &err) != 0) {
        fprintf(stderr, "config: %s\n", err.msg);
        exit(2);
    }
    return cfg;
}

static void old_file(const char *path, const void *data, size_t len)
{
    tu_write_file(path, data, len);
    struct timeval tv[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    utimes(path, tv);
}

static bool log_mentions(const char *needle)
{
    static lc_log_entry entries[LC_LOG_RING_DEFAULT];
    size_t n = lc_log_read(0, entries, LC_LOG_RING_DEFAULT, NULL);
    for (size_t i = 0; i < n; i++)
        if (strstr(entries[i].text, needle))
            return true;
    return false;
}

/* A corpus with every kind of file the loader meets. */
static const char *make_corpus(void)
{
    const char *dir = tu_path("corpus");
    tu_mkdirs(dir);
    uint8_t rec[8356 * 2];
    tu_fill(rec, sizeof rec, 7);
    uint32_t six = 6;
    memcpy(rec, &six, 4);
    memcpy(rec + 8356, &six, 4);
    size_t gz_len;
    uint8_t *gz = tu_gzip(rec, sizeof rec, 6, &gz_len);
    char path[4096];
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/game_%06d.gz", dir, i);
        old_file(path, gz, gz_len);
    }
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    old_file(path, "hello", 5);
    snprintf(path, sizeof path, "%s/gone.gz", dir);
    old_file(path, gz, gz_len);

    /* A GNU tar with three gzip members and a LICENSE, and a truncated copy. */
    char stage[4096];
    snprintf(stage, sizeof stage, "%s", tu_path("tarsrc"));
    tu_mkdirs(stage);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/training.%06d.gz", stage, i);
        tu_write_file(path, gz, gz_len);
    }
    snprintf(path, sizeof path, "%s/LICENSE", stage);
    tu_write_file(path, "license text", 12);
    char tar_path[4096];
    snprintf(tar_path, sizeof tar_path, "%s/run-000.tar", dir);
    char *argv[] = {"tar", "--format=gnu", "-cf", tar_path, "-C", stage, "training.000000.gz",
                    "training.000001.gz", "LICENSE", "training.000002.gz", NULL};
    CHECK_EQ_INT(tu_run(argv, NULL), 0);
    size_t tar_len;
    uint8_t *tar = tu_read_file(tar_path, &tar_len);
    struct timeval tv[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    utimes(tar_path, tv);
    /* Cut inside the second member's data: one complete member survives. */
    snprintf(path, sizeof path, "%s/run-001.tar", dir);
    old_file(path, tar, 512 + (gz_len + 511) / 512 * 512 + 512 + gz_len / 2);
    free(tar);
    free(gz);
    return dir;
}

static void test_loader(unsigned threads)
{
    const char *dir = make_corpus();
    lc_config *cfg = make_config(dir, threads);
    lc_pipeline *p = NULL;
    CHECK_OK(lc_pipeline_new(cfg, &p, NULL));
    lc_queue *out = lc_pipeline_take_output(p);
    /* Hold the loader until the scan has emitted everything, then remove a
     * file it has not opened yet. */
    Lcmon__StageControlRequest req = LCMON__STAGE_CONTROL_REQUEST__INIT;
    req.stage = "sources";
    req.has_command = true;
    req.command = LCMON__STAGE_COMMAND__STAGE_COMMAND_PAUSE;
    Lcmon__ControlResponse *resp = NULL;
    lc_pipeline_control(p, &req, &resp);
    CHECK(resp->ok);
    lcmon__control_response__free_unpacked(resp, NULL);
    CHECK_OK(lc_pipeline_start(p, NULL));
    usleep(300 * 1000);
    char gone[4096];
    snprintf(gone, sizeof gone, "%s/gone.gz", dir);
    CHECK_EQ_INT(unlink(gone), 0);
    req.command = LCMON__STAGE_COMMAND__STAGE_COMMAND_RESUME;
    lc_pipeline_control(p, &req, &resp);
    CHECK(resp->ok);
    lcmon__control_response__free_unpacked(resp, NULL);

    size_t n_sources = 0, n_chunks = 0, n_tars = 0;
    bool saw_marker = false;
    lc_source_item item;
    while (lc_queue_get(out, &item, NULL) == 0) {
        if (item.flags & LC_ITEM_SCAN_DONE) {
            CHECK(!saw_marker);
            saw_marker = true;
            CHECK_EQ_U64(item.seq, n_sources); /* every initial source came first */
            continue;
        }
        CHECK(!saw_marker);
        CHECK(item.flags & LC_ITEM_INITIAL);
        n_sources++;
        n_chunks += lc_chunk_source_count(item.source);
        if (lc_chunk_source_kind(item.source) == LC_SOURCE_TAR) {
            n_tars++;
            const char *key = lc_chunk_source_key(item.source);
            if (strcmp(key, "run-000.tar") == 0) {
                CHECK_EQ_U64(lc_chunk_source_count(item.source), 3);
                CHECK_EQ_U64(lc_chunk_source_non_gzip(item.source), 1);
                CHECK_EQ_STR(lc_chunk_source_chunk_name(item.source, 2), "training.000002.gz");
            } else {
                CHECK_EQ_STR(key, "run-001.tar");
                CHECK(lc_chunk_source_truncated(item.source));
                CHECK_EQ_U64(lc_chunk_source_count(item.source), 1);
            }
        }
        lc_chunk_source_unref(item.source);
    }
    CHECK(saw_marker);
    CHECK_EQ_U64(n_sources, 7); /* 5 .gz + 2 .tar */
    CHECK_EQ_U64(n_tars, 2);
    CHECK_EQ_U64(n_chunks, 5 + 3 + 1);
    CHECK(lc_pipeline_wait(p, 10));
    CHECK_EQ_INT(lc_pipeline_state(p), LCMON__PIPELINE_STATE__PIPELINE_FINISHED);
    lc_pipeline_stop(p);

    Lcmon__DataLoaderMetricsProto *m = lc_pipeline_metrics(p, true);
    const Lcmon__StageMetricProto *files = lc_proto_find_stage(m, "files");
    const Lcmon__StageMetricProto *src = lc_proto_find_stage(m, "sources");
    CHECK(files && src);
    if (files && src) {
        CHECK_EQ_U64(lc_proto_count(files, "files"), 9);
        CHECK_EQ_U64(files->items_out, 10); /* with the marker */
        CHECK_EQ_U64(lc_proto_count(src, "sources"), 7);
        CHECK_EQ_U64(lc_proto_count(src, "tar_sources"), 2);
        CHECK_EQ_U64(lc_proto_count(src, "chunks"), 9);
        CHECK_EQ_U64(lc_proto_count(src, "skipped_files"), 1);
        CHECK_EQ_U64(src->skipped_files_count, 1);
        CHECK_EQ_U64(lc_proto_count(src, "unreadable_files"), 1);
        CHECK_EQ_U64(lc_proto_count(src, "non_gzip_members"), 1);
        CHECK_EQ_U64(lc_proto_count(src, "truncated_archives"), 1);
        CHECK_EQ_U64(src->items_out, 8);
        CHECK_EQ_INT(src->state, LCMON__STAGE_STATE__STAGE_FINISHED);
        /* Queue counters: everything put was taken. */
        CHECK_EQ_INT(files->n_queue_metrics, 1);
        CHECK_EQ_U64(files->queue_metrics[0]->put_count, 10);
        CHECK_EQ_U64(files->queue_metrics[0]->get_count, 10);
        CHECK_EQ_U64(src->queue_metrics[0]->put_count, 8);
        CHECK_EQ_U64(src->queue_metrics[0]->get_count, 8);
        /* Load is a fraction of the pool's thread time. */
        CHECK_EQ_INT(src->n_load_metrics, 1);
        const Lcmon__LoadMetricProto *l = src->load_metrics[0];
        CHECK_EQ_INT(l->threads, threads);
        CHECK(l->total_seconds > 0);
        CHECK(l->load_seconds >= 0 && l->load_seconds <= l->total_seconds);
    }
    lcmon__data_loader_metrics_proto__free_unpacked(m, NULL);
    CHECK(log_mentions("gone.gz"));
    CHECK(log_mentions("LICENSE"));
    CHECK(log_mentions("run-001.tar"));
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    test_loader(1);
    test_loader(3);
    return check_finish();
}
