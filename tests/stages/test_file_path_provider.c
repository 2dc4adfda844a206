/*
 * file_path_provider: the initial scan in sort-key order with its marker,
 * then inotify: a file written slowly is emitted once, after it is closed; a
 * file moved in is emitted; a new subdirectory is watched; dot-files are
 * ignored; a file still changing at start-up is held until it settles, and
 * joins the initial scan when it settles soon; a directory that does not
 * exist yet, then one without files, are warning states until files come.
 */
#include "check.h"
#include "standalone.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "pipeline/config.h"
#include "pipeline/pipeline.h"
#include "stages/items.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static lc_config *make_config(const char *dir, bool watch, double settle)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "stages:\n"
             "  - name: files\n"
             "    file_path_provider: {directory: '%s', watch: %s, settle_seconds: %g}\n"
             "    output: {capacity: 64}\n",
             dir, watch ? "true" : "false", settle);
    return lc_test_config(yaml);
}

/* Next item within `seconds`, or false. */
static bool next_item(lc_queue *q, lc_path_item *item, double seconds)
{
    int rc = lc_queue_get_until(q, item, NULL, lc_now_ns() + (uint64_t)(seconds * 1e9));
    return rc == 0;
}

static void set_old_mtime(const char *path)
{
    struct timeval tv[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    utimes(path, tv);
}

static void test_initial_scan_order(void)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/scan", tu_tmpdir());
    tu_mkdirs(dir);
    /* Sort key is the basename, not the path: z/a.gz sorts before b.gz. */
    const char *files[] = {"b.gz",       "z/a.gz",    "c.tar",   "y/x/d.gz",
                           ".hidden.gz", ".git/e.gz", "a/README"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", path);
        *strrchr(parent, '/') = '\0';
        tu_mkdirs(parent);
        tu_write_file(path, "x", 1);
        set_old_mtime(path);
    }
    lc_config *cfg = make_config(dir, false, 2.0);
    lc_pipeline *p = NULL;
    CHECK_OK(lc_pipeline_new(cfg, &p, NULL));
    lc_queue *out = lc_pipeline_take_output(p);
    CHECK(out != NULL);
    CHECK_OK(lc_pipeline_start(p, NULL));
    const char *expect[] = {"README", "a.gz", "b.gz", "c.tar", "d.gz"};
    lc_path_item item;
    for (size_t i = 0; i < 5; i++) {
        CHECK(next_item(out, &item, 10));
        CHECK_EQ_INT(item.flags, LC_ITEM_INITIAL);
        CHECK_EQ_U64(item.seq, i);
        CHECK_EQ_STR(strrchr(item.path, '/') + 1, expect[i]);
        free(item.path);
    }
    CHECK(next_item(out, &item, 10));
    CHECK_EQ_INT(item.flags, LC_ITEM_SCAN_DONE);
    CHECK_EQ_U64(item.seq, 5);
    CHECK(item.path == NULL);
    /* Without watching, the stage finishes and closes its output. */
    CHECK_EQ_INT(lc_queue_get(out, &item, NULL), LC_ECLOSED);
    CHECK(lc_pipeline_wait(p, 10));
    CHECK_EQ_INT(lc_pipeline_state(p), LCMON__PIPELINE_STATE__PIPELINE_FINISHED);
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

/* Start a watching provider on an empty directory and consume its marker. */
static lc_pipeline *start_watching(const char *dir, double settle, lc_config **cfg, lc_queue **out)
{
    *cfg = make_config(dir, true, settle);
    lc_pipeline *p = NULL;
    CHECK_OK(lc_pipeline_new(*cfg, &p, NULL));
    *out = lc_pipeline_take_output(p);
    CHECK_OK(lc_pipeline_start(p, NULL));
    return p;
}

static void expect_path(lc_queue *out, const char *path, double seconds)
{
    lc_path_item item;
    if (!next_item(out, &item, seconds)) {
        CHECK(!"an item arrived");
        fprintf(stderr, "  expected %s\n", path);
        return;
    }
    CHECK_EQ_STR(item.path, path);
    CHECK_EQ_INT(item.flags, 0);
    free(item.path);
}

static void expect_nothing(lc_queue *out, double seconds)
{
    lc_path_item item;
    bool got = next_item(out, &item, seconds);
    CHECK(!got);
    if (got) {
        fprintf(stderr, "  unexpected item %s\n", item.path ? item.path : "(marker)");
        free(item.path);
    }
}

static void test_watch(void)
{
    char dir[4096], outside[4096];
    snprintf(dir, sizeof dir, "%s/watch", tu_tmpdir());
    snprintf(outside, sizeof outside, "%s/outside", tu_tmpdir());
    tu_mkdirs(dir);
    tu_mkdirs(outside);
    lc_config *cfg;
    lc_queue *out;
    lc_pipeline *p = start_watching(dir, 0.3, &cfg, &out);
    lc_path_item item;
    CHECK(next_item(out, &item, 10));
    CHECK_EQ_INT(item.flags, LC_ITEM_SCAN_DONE);
    CHECK_EQ_U64(item.seq, 0);

    /* A file written slowly: nothing while it is open, one item after close. */
    char slow[4096];
    snprintf(slow, sizeof slow, "%s/game_000001.gz", dir);
    int fd = open(slow, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(write(fd, "abcd", 4), 4);
        expect_nothing(out, 0.25);
    }
    close(fd);
    expect_path(out, slow, 10);
    expect_nothing(out, 0.3);

    /* A file moved in from elsewhere on the same file system. */
    char src[4096], moved[4096];
    snprintf(src, sizeof src, "%s/game_000002.gz", outside);
    snprintf(moved, sizeof moved, "%s/game_000002.gz", dir);
    tu_write_file(src, "data", 4);
    CHECK_EQ_INT(rename(src, moved), 0);
    expect_path(out, moved, 10);

    /* Dot-files are ignored. */
    char hidden[4096];
    snprintf(hidden, sizeof hidden, "%s/.partial.gz", dir);
    tu_write_file(hidden, "x", 1);
    expect_nothing(out, 0.3);

    /* A new subdirectory is watched: a file written there later is seen. */
    char sub[4096], subfile[4096];
    snprintf(sub, sizeof sub, "%s/run2", dir);
    CHECK_EQ_INT(mkdir(sub, 0755), 0);
    usleep(300 * 1000);
    snprintf(subfile, sizeof subfile, "%s/game_000003.gz", sub);
    tu_write_file(subfile, "data", 4);
    expect_path(out, subfile, 10);

    /* A directory moved in with files already inside: they are emitted
     * once they have settled (they were complete before the move). */
    char prepared[4096], prepared_file[4096], moved_dir[4096], moved_file[4096];
    snprintf(prepared, sizeof prepared, "%s/run3", outside);
    tu_mkdirs(prepared);
    snprintf(prepared_file, sizeof prepared_file, "%s/game_000004.gz", prepared);
    tu_write_file(prepared_file, "data", 4);
    set_old_mtime(prepared_file);
    snprintf(moved_dir, sizeof moved_dir, "%s/run3", dir);
    snprintf(moved_file, sizeof moved_file, "%s/game_000004.gz", moved_dir);
    CHECK_EQ_INT(rename(prepared, moved_dir), 0);
    expect_path(out, moved_file, 10);
    /* And a file written in it afterwards. */
    char later[4096];
    snprintf(later, sizeof later, "%s/game_000005.gz", moved_dir);
    tu_write_file(later, "data", 4);
    expect_path(out, later, 10);
    expect_nothing(out, 0.5);

    lc_pipeline_stop(p);
    Lcmon__DataLoaderMetricsProto *m = lc_pipeline_metrics(p, true);
    CHECK_EQ_INT(m->n_stage_metrics, 1);
    lcmon__data_loader_metrics_proto__free_unpacked(m, NULL);
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

static void expect_initial(lc_queue *out, const char *path, uint64_t seq, double seconds)
{
    lc_path_item item;
    CHECK(next_item(out, &item, seconds));
    CHECK_EQ_INT(item.flags, LC_ITEM_INITIAL);
    CHECK_EQ_U64(item.seq, seq);
    CHECK(item.path && strcmp(item.path, path) == 0);
    free(item.path);
}

/* A file that is still changing when the scan finds it is held back until
 * it settles or is closed. One that settles soon is part of the initial set
 * (before the marker); one written on past the wait comes after it, once. */
static void test_settle_at_startup(void)
{
    char dir[4096], old[4096], young[4096], fresh[4096];
    snprintf(dir, sizeof dir, "%s/settle", tu_tmpdir());
    tu_mkdirs(dir);
    snprintf(old, sizeof old, "%s/game_000007.gz", dir);
    tu_write_file(old, "done", 4);
    set_old_mtime(old);
    /* Written just before the start and left alone: it settles. */
    snprintf(young, sizeof young, "%s/game_000008.gz", dir);
    tu_write_file(young, "done", 4);
    lc_config *cfg;
    lc_queue *out;
    double t0 = lc_now_seconds();
    lc_pipeline *p = start_watching(dir, 0.4, &cfg, &out);
    expect_initial(out, old, 0, 10);
    expect_initial(out, young, 1, 10);
    CHECK(lc_now_seconds() - t0 >= 0.35); /* it was held until quiet */
    lc_path_item item;
    CHECK(next_item(out, &item, 10));
    CHECK_EQ_INT(item.flags, LC_ITEM_SCAN_DONE);
    CHECK_EQ_U64(item.seq, 2);
    lc_pipeline_free(p);
    lc_config_free(cfg);

    /* Still being written past the wait (twice the settle time): written
     * every 0.1 s, ten times more often than it would take to settle, so
     * that a loaded machine's late wake-up cannot make it look quiet; the
     * writes go on until the marker has come and five more were made (or
     * a deadline passes, and the CHECK after the loop fails). */
    snprintf(dir, sizeof dir, "%s/settle-slow", tu_tmpdir());
    tu_mkdirs(dir);
    snprintf(fresh, sizeof fresh, "%s/game_000009.gz", dir);
    int fd = open(fresh, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK_EQ_INT(write(fd, "part", 4), 4);
    p = start_watching(dir, 1.0, &cfg, &out);
    bool marker = false;
    int after = 0;
    for (double until = lc_now_seconds() + 20; after < 5 && lc_now_seconds() < until;) {
        usleep(100 * 1000);
        CHECK_EQ_INT(write(fd, "more", 4), 4);
        after += marker;
        lc_path_item early;
        if (lc_queue_try_get(out, &early) == 0) {
            CHECK(early.flags == LC_ITEM_SCAN_DONE && !marker); /* never the file */
            CHECK_EQ_U64(early.seq, 0); /* the file is not part of the scan */
            marker = true;
            free(early.path);
        }
    }
    CHECK(marker);
    close(fd); /* IN_CLOSE_WRITE releases it */
    expect_path(out, fresh, 10);
    expect_nothing(out, 1.0); /* and only once, although it also settles */
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

/* The stage's warning in the pipeline's newest snapshot ("" for none). */
static void current_warning(lc_pipeline *p, char *out, size_t len)
{
    Lcmon__DataLoaderMetricsProto *m = lc_pipeline_metrics(p, false);
    const char *w =
        m->n_stage_metrics && m->stage_metrics[0]->warning ? m->stage_metrics[0]->warning : "";
    snprintf(out, len, "%s", w);
    lcmon__data_loader_metrics_proto__free_unpacked(m, NULL);
}

/* Wait (bounded) until the warning is `want`; false when it never was. */
static bool wait_warning(lc_pipeline *p, const char *want, double seconds)
{
    char w[512] = "";
    double end = lc_now_seconds() + seconds * tu_slow();
    while (lc_now_seconds() < end) {
        current_warning(p, w, sizeof w);
        if (strcmp(w, want) == 0)
            return true;
        lc_sleep_seconds(0.05);
    }
    fprintf(stderr, "warning is \"%s\", not \"%s\"\n", w, want);
    return false;
}

/* Waits that last are said: a directory that does not exist yet, then one
 * without a file; each on the stage's warning (the screen's row and
 * header) and in the log; a file arriving ends it. */
static void test_warning_states(void)
{
    char dir[4096], want[4300];
    snprintf(dir, sizeof dir, "%s/later", tu_tmpdir());
    lc_config *cfg;
    lc_queue *out;
    uint64_t mark = tu_log_mark();
    lc_pipeline *p = start_watching(dir, 0.2, &cfg, &out);
    snprintf(want, sizeof want, "waiting for %s to exist", dir);
    CHECK(wait_warning(p, want, 10));
    CHECK_EQ_U64(tu_log_count(mark, LC_LOG_WARN, "does not exist yet"), 1);
    tu_mkdirs(dir);
    lc_path_item item;
    CHECK(next_item(out, &item, 10 * tu_slow()));
    CHECK_EQ_INT(item.flags, LC_ITEM_SCAN_DONE);
    snprintf(want, sizeof want, "no .gz or .tar files in %s", dir);
    CHECK(wait_warning(p, want, 10));
    CHECK_EQ_U64(tu_log_count(mark, LC_LOG_WARN, "no .gz or .tar files in"), 1);
    char game[4400];
    snprintf(game, sizeof game, "%s/game_000001.gz", dir);
    tu_write_file(game, "data", 4);
    expect_path(out, game, 10 * tu_slow());
    CHECK(wait_warning(p, "", 10));
    lc_pipeline_stop(p);
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    test_initial_scan_order();
    test_watch();
    test_settle_at_startup();
    test_warning_states();
    return check_finish();
}
