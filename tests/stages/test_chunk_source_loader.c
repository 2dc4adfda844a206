/*
 * chunk_source_loader inside a real two-stage pipeline: .gz and .tar sources
 * are opened and counted, other files are skipped and counted, a truncated
 * archive and a member that is no chunk are logged and counted, archives of
 * raw-record members load with their chunks counted (raw_members), a file that vanishes
 * before it is loaded is logged with its name and counted, the initial-scan
 * marker comes after every initial source although several threads load,
 * and the pipeline keeps running through all of it. Archives made by GNU tar
 * in gnu, pax and ustar formats, with directories, long member names and
 * links, get one log line each naming the file and what it held, and the
 * tar_* counters (directories, pax headers, GNU long names and links, other
 * entries) add up to what the tar index saw.
 */
#include "check.h"
#include "standalone.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/tar.h"
#include "pipeline/config.h"
#include "monitor/snapshot.h"
#include "pipeline/pipeline.h"
#include "stages/items.h"

#include <fcntl.h>
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
    return lc_test_config(yaml);
}

/* The pipeline of cfg, started, and its output queue in *out. */
static lc_pipeline *start_loader(lc_config *cfg, lc_queue **out)
{
    lc_pipeline *p = NULL;
    CHECK_OK(lc_pipeline_new(cfg, &p, NULL));
    *out = lc_pipeline_take_output(p);
    CHECK_OK(lc_pipeline_start(p, NULL));
    return p;
}

static void old_file(const char *path, const void *data, size_t len)
{
    tu_write_file(path, data, len);
    struct timeval tv[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    utimes(path, tv);
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
    char *argv[] = {"tar",
                    "--format=gnu",
                    "-cf",
                    tar_path,
                    "-C",
                    stage,
                    "training.000000.gz",
                    "training.000001.gz",
                    "LICENSE",
                    "training.000002.gz",
                    NULL};
    CHECK_EQ_INT(tu_run(argv, NULL), 0);
    size_t tar_len;
    uint8_t *tar = tu_read_file(tar_path, &tar_len);
    struct timeval tv[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    utimes(tar_path, tv);
    /* Cut inside the second member's data: one complete member survives. */
    snprintf(path, sizeof path, "%s/run-001.tar", dir);
    old_file(path, tar, 512 + (gz_len + 511) / 512 * 512 + 512 + gz_len / 2);
    /* A tar without a game, and a text file named like a game: both are
     * bad input, said when they are opened. */
    snprintf(tar_path, sizeof tar_path, "%s/empty.tar", dir);
    char *argv2[] = {"tar", "--format=gnu", "-cf", tar_path, "-C", stage, "LICENSE", NULL};
    CHECK_EQ_INT(tu_run(argv2, NULL), 0);
    utimes(tar_path, tv);
    snprintf(path, sizeof path, "%s/x.gz", dir);
    old_file(path, "not a game at all\n", 18);
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
    lc_command_request req = {.name = "pause", .stage = "sources"};
    lc_command_result res = {0};
    CHECK_OK(lc_pipeline_command(p, &req, &res));
    lc_command_result_fini(&res);
    CHECK_OK(lc_pipeline_start(p, NULL));
    usleep(300 * 1000);
    char gone[4096];
    snprintf(gone, sizeof gone, "%s/gone.gz", dir);
    CHECK_EQ_INT(unlink(gone), 0);
    req.name = "resume";
    CHECK_OK(lc_pipeline_command(p, &req, &res));
    lc_command_result_fini(&res);

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
                CHECK_EQ_U64(lc_chunk_source_skipped_members(item.source), 1);
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
    const Lcmon__StageMetricProto *files = lc_snapshot_find_stage(m, "files");
    const Lcmon__StageMetricProto *src = lc_snapshot_find_stage(m, "sources");
    CHECK(files && src);
    if (files && src) {
        CHECK_EQ_U64(lc_snapshot_count(files, "files"), 11);
        CHECK_EQ_U64(files->items_out, 11); /* the end-of-scan marker is not an item */
        CHECK_EQ_U64(lc_snapshot_count(src, "sources"), 7);
        CHECK_EQ_U64(lc_snapshot_count(src, "tar_sources"), 2);
        CHECK_EQ_U64(lc_snapshot_count(src, "chunks"), 9);
        CHECK_EQ_U64(lc_snapshot_count(src, "skipped_files"), 1);
        /* Skipped by name is work, not bad input; unreadable, empty and
         * truncated files are. */
        CHECK_EQ_INT(lc_snapshot_find_count(src, "skipped_files")->kind,
                     LCMON__COUNT_KIND__COUNT_WORK);
        CHECK_EQ_U64(lc_snapshot_bad_input(src), lc_snapshot_count(src, "unreadable_files") +
                                                     lc_snapshot_count(src, "bad_empty_archives") +
                                                     lc_snapshot_count(src, "truncated_archives"));
        CHECK_EQ_STR(lc_snapshot_find_count(src, "skipped_files")->unit, "files");
        CHECK_EQ_U64(lc_snapshot_count(src, "unreadable_files"), 2); /* gone.gz, x.gz */
        CHECK_EQ_U64(lc_snapshot_count(src, "bad_empty_archives"), 1);
        /* The LICENSE of run-000.tar, and empty.tar's only member. */
        CHECK_EQ_U64(lc_snapshot_count(src, "skipped_members"), 2);
        CHECK_EQ_U64(lc_snapshot_count(src, "raw_members"), 0);
        CHECK_EQ_U64(lc_snapshot_count(src, "truncated_archives"), 1);
        CHECK_EQ_U64(src->items_out, 7);
        CHECK_EQ_INT(src->state, LCMON__STAGE_STATE__STAGE_FINISHED);
        /* Queue counters: everything put was taken. */
        CHECK_EQ_INT(files->n_queue_metrics, 1);
        CHECK_EQ_U64(files->queue_metrics[0]->put_count, 12);
        CHECK_EQ_U64(files->queue_metrics[0]->get_count, 12);
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
    CHECK(tu_log_has("gone.gz"));
    CHECK(tu_log_has("LICENSE"));
    CHECK(tu_log_has("run-001.tar"));
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

/* A log line after `after` that contains all three words. */
static bool logged(uint64_t after, const char *w1, const char *w2, const char *w3)
{
    static lc_log_entry entries[LC_LOG_RING_DEFAULT];
    size_t n = lc_log_read(after, entries, LC_LOG_RING_DEFAULT, NULL);
    for (size_t i = 0; i < n; i++)
        if (strstr(entries[i].text, w1) && strstr(entries[i].text, w2) &&
            strstr(entries[i].text, w3))
            return true;
    return false;
}

static char *repeat_char(char c, size_t n)
{
    char *s = malloc(n + 1);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* What each archive of test_tar_formats holds besides its members. */
typedef struct format_case {
    const char *format;
    size_t chunks, directories, long_names, long_links, other;
    size_t min_pax; /* GNU tar may add pax headers for times too */
    bool pax_exact_zero;
} format_case;

static const format_case format_cases[] = {
    /* run/A/B/ (126 bytes), run/A/B/training..., run/F...gz: 'L'; the
     * symlink with a 110-byte target: 'K'; both symlinks are "other". */
    {"gnu", 3, 3, 3, 1, 2, 0, true},
    /* The same three long paths and the long link target as pax records. */
    {"pax", 3, 3, 0, 0, 2, 4, false},
    /* Names up to 255 bytes split into prefix and name: no extended headers;
     * the 120-byte basename and the long link cannot be stored, so they are
     * left out of this one. */
    {"ustar", 2, 3, 0, 0, 1, 0, true},
};
#define N_FORMATS (sizeof format_cases / sizeof format_cases[0])

/*
 * A tree with nested directories whose paths need more than the 100 bytes of
 * a tar name field, a gzip member under them, a LICENSE, a member whose
 * basename alone is 124 bytes, a short and a long symlink; archived by GNU
 * tar in each format (entries listed one by one, --no-recursion).
 */
static const char *make_format_corpus(void)
{
    const char *dir = tu_path("formats");
    tu_mkdirs(dir);
    char *src = lc_xstrdup(tu_path("formats-src"));
    char *a = repeat_char('a', 60), *b = repeat_char('b', 60), *f = repeat_char('f', 120);
    char *target = repeat_char('t', 110);
    char *d_ab = lc_xasprintf("run/%s/%s", a, b);
    char *d_a = lc_xasprintf("run/%s", a);
    char *deep = lc_xasprintf("%s/training.000001.gz", d_ab);
    char *huge = lc_xasprintf("run/%s.gz", f);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", src, d_ab);
    tu_mkdirs(path);

    uint8_t rec[8356];
    tu_fill(rec, sizeof rec, 3);
    uint32_t six = 6;
    memcpy(rec, &six, 4);
    size_t gz_len;
    uint8_t *gz = tu_gzip(rec, sizeof rec, 6, &gz_len);
    const char *gz_files[] = {deep, "run/short.gz", huge};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", src, gz_files[i]);
        tu_write_file(path, gz, gz_len);
    }
    free(gz);
    snprintf(path, sizeof path, "%s/run/LICENSE", src);
    tu_write_file(path, "license text\n", 13);
    snprintf(path, sizeof path, "%s/run/latest.gz", src);
    CHECK_EQ_INT(symlink("short.gz", path), 0);
    snprintf(path, sizeof path, "%s/run/far", src);
    CHECK_EQ_INT(symlink(target, path), 0);

    for (size_t i = 0; i < N_FORMATS; i++) {
        const char *format = format_cases[i].format;
        bool ustar = strcmp(format, "ustar") == 0;
        char *fmt = lc_xasprintf("--format=%s", format);
        char *out = lc_xasprintf("%s/fmt-%s.tar", dir, format);
        /* ustar cannot store the 124-byte basename nor the long link. */
        char *argv[] = {"tar",
                        fmt,
                        "--no-recursion",
                        "--owner=0",
                        "--group=0",
                        "--mtime=@1000000000",
                        "-C",
                        src,
                        "-cf",
                        out,
                        "run",
                        d_a,
                        d_ab,
                        deep,
                        "run/LICENSE",
                        "run/short.gz",
                        "run/latest.gz",
                        ustar ? NULL : huge,
                        "run/far",
                        NULL};
        CHECK_EQ_INT(tu_run(argv, NULL), 0);
        struct timeval tv[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
        utimes(out, tv);
        free(out);
        free(fmt);
    }
    free(a);
    free(b);
    free(f);
    free(target);
    free(d_ab);
    free(d_a);
    free(deep);
    free(huge);
    free(src);
    return dir;
}

static const format_case *find_format_case(const char *key)
{
    for (size_t i = 0; i < N_FORMATS; i++) {
        char want[64];
        snprintf(want, sizeof want, "fmt-%s.tar", format_cases[i].format);
        if (strcmp(key, want) == 0)
            return &format_cases[i];
    }
    return NULL;
}

static void test_tar_formats(void)
{
    printf("tar formats\n");
    const char *dir = make_format_corpus();
    uint64_t log_before = lc_log_last_seq();
    lc_config *cfg = make_config(dir, 2);
    lc_queue *out = NULL;
    lc_pipeline *p = start_loader(cfg, &out);

    lc_tar_entry_counts sum = {0};
    size_t n_sources = 0, n_chunks = 0;
    bool seen[N_FORMATS] = {false};
    lc_source_item item;
    while (lc_queue_get(out, &item, NULL) == 0) {
        if (item.flags & LC_ITEM_SCAN_DONE)
            continue;
        n_sources++;
        const char *key = lc_chunk_source_key(item.source);
        const format_case *fc = find_format_case(key);
        CHECK(fc != NULL);
        if (!fc) {
            lc_chunk_source_unref(item.source);
            continue;
        }
        seen[fc - format_cases] = true;
        n_chunks += lc_chunk_source_count(item.source);
        CHECK_EQ_U64(lc_chunk_source_count(item.source), fc->chunks);
        CHECK_EQ_U64(lc_chunk_source_skipped_members(item.source), 1);
        CHECK(!lc_chunk_source_truncated(item.source));
        /* The deep member keeps its full name in every format. */
        CHECK(strstr(lc_chunk_source_chunk_name(item.source, 0), "/training.000001.gz") != NULL);
        CHECK(strlen(lc_chunk_source_chunk_name(item.source, 0)) > 100);

        lc_tar_entry_counts e = lc_chunk_source_tar_entries(item.source);
        printf("  %s: %zu directories, %zu pax headers, %zu long names, %zu long links, %zu "
               "other\n",
               key, e.directories, e.pax_headers, e.long_names, e.long_links, e.other);
        CHECK_EQ_U64(e.directories, fc->directories);
        CHECK_EQ_U64(e.long_names, fc->long_names);
        CHECK_EQ_U64(e.long_links, fc->long_links);
        CHECK_EQ_U64(e.other, fc->other);
        if (fc->pax_exact_zero)
            CHECK_EQ_U64(e.pax_headers, 0);
        else
            CHECK(e.pax_headers >= fc->min_pax);
        /* Exactly what the tar index of the same file counts. */
        lc_tar_index idx;
        int fd = open(lc_chunk_source_path(item.source), O_RDONLY);
        CHECK(fd >= 0);
        CHECK_OK(lc_tar_index_fd(fd, lc_chunk_source_path(item.source), &idx, NULL));
        CHECK_EQ_U64(e.directories, idx.n_directories);
        CHECK_EQ_U64(e.pax_headers, idx.n_pax_headers);
        CHECK_EQ_U64(e.long_names, idx.n_long_names);
        CHECK_EQ_U64(e.long_links, idx.n_long_links);
        CHECK_EQ_U64(e.other, idx.n_other);
        lc_tar_index_fini(&idx);
        close(fd);
        sum.directories += e.directories;
        sum.pax_headers += e.pax_headers;
        sum.long_names += e.long_names;
        sum.long_links += e.long_links;
        sum.other += e.other;

        /* One line naming the file and what it held. */
        const char *path = lc_chunk_source_path(item.source);
        CHECK(logged(log_before, path, "skipped 3 directory members", ""));
        if (fc->long_names)
            CHECK(logged(log_before, path, "3 entries had GNU long names", ""));
        if (fc->long_links)
            CHECK(logged(log_before, path, "1 GNU long link", ""));
        if (e.pax_headers)
            CHECK(logged(log_before, path, "pax headers", ""));
        else
            CHECK(!logged(log_before, path, "pax header", ""));
        CHECK(logged(log_before, path,
                     fc->other == 1 ? "1 other entry (link" : "2 other entries (links", ""));
        lc_chunk_source_unref(item.source);
    }
    for (size_t i = 0; i < N_FORMATS; i++)
        CHECK(seen[i]);
    CHECK_EQ_U64(n_sources, N_FORMATS);
    CHECK(lc_pipeline_wait(p, 10));
    lc_pipeline_stop(p);

    Lcmon__DataLoaderMetricsProto *m = lc_pipeline_metrics(p, true);
    const Lcmon__StageMetricProto *src = lc_snapshot_find_stage(m, "sources");
    CHECK(src != NULL);
    if (src) {
        CHECK_EQ_U64(lc_snapshot_count(src, "sources"), N_FORMATS);
        CHECK_EQ_U64(lc_snapshot_count(src, "tar_sources"), N_FORMATS);
        CHECK_EQ_U64(lc_snapshot_count(src, "chunks"), n_chunks);
        CHECK_EQ_U64(n_chunks, 3 + 3 + 2);
        CHECK_EQ_U64(lc_snapshot_count(src, "skipped_members"), N_FORMATS);
        CHECK_EQ_U64(lc_snapshot_count(src, "tar_directories"), 9);
        CHECK_EQ_U64(lc_snapshot_count(src, "tar_long_names"), 3);
        CHECK_EQ_U64(lc_snapshot_count(src, "tar_long_links"), 1);
        CHECK_EQ_U64(lc_snapshot_count(src, "tar_other_entries"), 5);
        CHECK_EQ_U64(lc_snapshot_count(src, "tar_pax_headers"), sum.pax_headers);
        CHECK(sum.pax_headers >= 4);
        CHECK_EQ_U64(sum.directories, 9);
        /* Benign: nothing dropped, nothing unreadable or truncated. */
        CHECK_EQ_U64(lc_snapshot_count(src, "unreadable_files"), 0);
        CHECK_EQ_U64(lc_snapshot_count(src, "truncated_archives"), 0);
        CHECK_EQ_U64(lc_snapshot_dropped(src), 0);
        CHECK_EQ_U64(lc_snapshot_bad_input(src), 0);
        CHECK_EQ_INT(src->state, LCMON__STAGE_STATE__STAGE_FINISHED);
    }
    lcmon__data_loader_metrics_proto__free_unpacked(m, NULL);
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

/* Archives of raw records: one all raw (V6 and V5 members: two chunks, not
 * an empty archive), one gzip and raw mixed with a raw member of a bad size
 * (skipped, named with its archive and reason), one whose only member has a
 * bad size (an empty archive). */
static void test_raw_archives(void)
{
    const char *dir = tu_path("rawcorpus"), *stage = tu_path("rawsrc");
    tu_mkdirs(dir);
    tu_mkdirs(stage);
    uint8_t rec[8356 * 2];
    tu_fill(rec, sizeof rec, 5);
    uint32_t six = 6, five = 5;
    memcpy(rec, &six, 4);
    memcpy(rec + 8356, &six, 4);
    size_t gz_len;
    uint8_t *gz = tu_gzip(rec, sizeof rec, 6, &gz_len);
    uint8_t v5[8308];
    tu_fill(v5, sizeof v5, 6);
    memcpy(v5, &five, 4);
    char path[4096];
    const struct {
        const char *name;
        const void *data;
        size_t len;
    } members[] = {{"g.gz", gz, gz_len},
                   {"r6.bin", rec, sizeof rec},
                   {"r5.bin", v5, sizeof v5},
                   {"bad.bin", rec, sizeof rec - 1}};
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", stage, members[i].name);
        tu_write_file(path, members[i].data, members[i].len);
    }
    char a[4096], b[4096], c[4096];
    snprintf(a, sizeof a, "%s/all-raw.tar", dir);
    snprintf(b, sizeof b, "%s/mixed.tar", dir);
    snprintf(c, sizeof c, "%s/bad-only.tar", dir);
    char *args_a[] = {"tar",         "--format=gnu", "-cf",    a,   "-C",
                      (char *)stage, "r6.bin",       "r5.bin", NULL};
    char *args_b[] = {"tar",         "--format=gnu", "-cf",     b,        "-C",
                      (char *)stage, "g.gz",         "bad.bin", "r6.bin", NULL};
    char *args_c[] = {"tar", "--format=gnu", "-cf", c, "-C", (char *)stage, "bad.bin", NULL};
    CHECK_EQ_INT(tu_run(args_a, NULL), 0);
    CHECK_EQ_INT(tu_run(args_b, NULL), 0);
    CHECK_EQ_INT(tu_run(args_c, NULL), 0);
    free(gz);

    uint64_t log_before = lc_log_last_seq();
    lc_config *cfg = make_config(dir, 2);
    lc_queue *out = NULL;
    lc_pipeline *p = start_loader(cfg, &out);
    lc_source_item item;
    size_t n_chunks = 0;
    while (lc_queue_get(out, &item, NULL) == 0) {
        if (item.flags & LC_ITEM_SCAN_DONE)
            continue;
        n_chunks += lc_chunk_source_count(item.source);
        lc_chunk_source_unref(item.source);
    }
    CHECK_EQ_U64(n_chunks, 2 + 2);
    CHECK(lc_pipeline_wait(p, 10));
    lc_pipeline_stop(p);
    Lcmon__DataLoaderMetricsProto *m = lc_pipeline_metrics(p, true);
    const Lcmon__StageMetricProto *src = lc_snapshot_find_stage(m, "sources");
    CHECK(src != NULL);
    if (src) {
        CHECK_EQ_U64(lc_snapshot_count(src, "sources"), 2);
        CHECK_EQ_U64(lc_snapshot_count(src, "chunks"), 4);
        CHECK_EQ_U64(lc_snapshot_count(src, "raw_members"), 3);
        CHECK_EQ_U64(lc_snapshot_count(src, "skipped_members"), 2);
        CHECK_EQ_U64(lc_snapshot_count(src, "bad_empty_archives"), 1);
    }
    lcmon__data_loader_metrics_proto__free_unpacked(m, NULL);
    CHECK(logged(log_before, "mixed.tar", "'bad.bin' skipped", "not a whole number of 8356-byte"));
    CHECK(logged(log_before, "bad-only.tar", "holds no game chunks", "raw-record"));
    CHECK(!logged(log_before, "all-raw.tar", "", ""));
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    test_loader(1);
    test_loader(3);
    test_tar_formats();
    test_raw_archives();
    return check_finish();
}
