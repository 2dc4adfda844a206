/*
 * shuffling_chunk_pool's `order`: four one-game files whose orders by
 * name, by modification time and by the number in the name all differ.
 * For each order: a window of one chunk holds the newest file of that
 * order (and only its chunk is drawn), the newest key is that file's, an
 * anchor counts the files after it in that order (a file's name, and a
 * name no file has), a file arriving after the initial load moves the
 * newest key only when it is newer in that order. And the number read
 * from names, unit by unit.
 */
#include "check.h"
#include "testutil.h"

#include "core/clock.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/record.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"
#include "stages/pool/source_order.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The files, their tags (in visits) and modification times (seconds):
 *   name order    a_game_5 < game_10 < game_9 < zz
 *   number order  zz (no number) < a_game_5 (5) < game_9 < game_10
 *   mtime order   game_10 < zz < game_9 < a_game_5 */
static const struct {
    const char *name;
    uint32_t tag;
    time_t mtime;
} files[] = {
    {"a_game_5.gz", 5, 1700004000},
    {"game_10.gz", 10, 1700001000},
    {"game_9.gz", 9, 1700003000},
    {"zz.gz", 99, 1700002000},
};
#define N_FILES 4

static const char *const order_names[] = {"name", "mtime", "number"};
/* The newest file of each order, and the count after anchor game_10.gz. */
static const char *const newest[] = {"zz.gz", "a_game_5.gz", "game_10.gz"};
static const uint32_t newest_tag[] = {99, 5, 10};
static const uint64_t after_game_10[] = {2, 3, 0};
/* After game_7.gz, a name no file has: by name (mtime falls back to names
 * without the file's time) game_9 and zz; by number game_9 and game_10. */
static const uint64_t after_game_7[] = {2, 2, 2};

static void write_game(const char *path, uint32_t tag, time_t mtime)
{
    uint8_t rec[LC_V6_RECORD_SIZE] = {0};
    uint32_t six = 6, fmt = 1;
    memcpy(rec, &six, 4);
    memcpy(rec + 4, &fmt, 4);
    memcpy(rec + 8340, &tag, 4); /* visits */
    size_t gz_len;
    uint8_t *gz = tu_gzip(rec, sizeof rec, 1, &gz_len);
    tu_write_file(path, gz, gz_len);
    free(gz);
    struct timespec t[2] = {{mtime, 0}, {mtime, 0}};
    CHECK_EQ_INT(utimensat(AT_FDCWD, path, t, 0), 0);
}

static void feed(lc_queue *in, const char *path)
{
    lc_source_item item = {.source = tu_chunk_source(path)};
    CHECK_OK(lc_queue_put(in, &item, NULL));
}

static lc_stage *start_pool(const char *dir, const char *yaml, lc_queue *in)
{
    lc_stage *s = NULL;
    lc_error err;
    if (lc_standalone_new(lc_stage_class_find("shuffling_chunk_pool"), "pool", yaml, in, 4, NULL,
                          &s, &err) != 0) {
        fprintf(stderr, "pool: %s\n", err.msg);
        exit(2);
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    for (int i = N_FILES - 1; i >= 0; i--) { /* in no order of the three */
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[(i + 1) % N_FILES].name);
        feed(in, path);
    }
    lc_source_item marker = {.flags = LC_ITEM_SCAN_DONE, .seq = N_FILES};
    CHECK_OK(lc_queue_put(in, &marker, NULL));
    return s;
}

static int64_t gauge_of(const lc_stage_metrics *m, const char *name)
{
    const lc_metric_slot *g = lc_metrics_find(m, name);
    return g ? g->value : -1;
}

static void wait_loaded(lc_stage *s, lc_stage_metrics *m)
{
    double deadline = lc_now_seconds() + 30;
    do
        lc_standalone_flush(s, m);
    while (gauge_of(m, "initial_load_done") != 1 && lc_now_seconds() < deadline &&
           (lc_sleep_seconds(0.01), true));
    CHECK_EQ_INT(gauge_of(m, "initial_load_done"), 1);
}

static void stop_pool(lc_stage *s, lc_queue *in)
{
    lc_queue_close(in);
    lc_standalone_free(s);
    lc_queue_free(in);
}

/* A window of one chunk: the newest file of the order, alone. */
static void test_window(const char *dir, int o)
{
    char yaml[128];
    snprintf(yaml, sizeof yaml, "chunk_pool_size: 1\nthreads: 1\nstore_bytes: 0\norder: %s\n",
             order_names[o]);
    lc_queue *in = lc_queue_new("in", &lc_item_source, 16, LC_OVERFLOW_BLOCK);
    lc_stage *s = start_pool(dir, yaml, in);
    for (int k = 0; k < 5; k++) {
        lc_chunk_item c;
        if (lc_queue_get_until(s->output, &c, NULL, lc_now_ns() + 30000000000ull) != 0) {
            CHECK(!"the pool gave no chunk");
            break;
        }
        uint32_t tag;
        memcpy(&tag, c.data + 8340, 4);
        printf("order %s: drew %s (tag %u)\n", order_names[o], lc_chunk_source_key(c.source), tag);
        CHECK_EQ_STR(lc_chunk_source_key(c.source), newest[o]);
        CHECK_EQ_U64(tag, newest_tag[o]);
        lc_item_chunk.dispose(&c);
    }
    lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    const char *key = lc_metrics_find_text(&m, "last_chunk_key");
    CHECK(key && !strcmp(key, newest[o]));
    stop_pool(s, in);
}

static uint64_t count_after(const char *dir, int o, const char *anchor)
{
    char yaml[160];
    snprintf(yaml, sizeof yaml,
             "chunk_pool_size: 100\nthreads: 1\nstore_bytes: 0\norder: %s\nanchor: %s\n",
             order_names[o], anchor);
    lc_queue *in = lc_queue_new("in", &lc_item_source, 16, LC_OVERFLOW_BLOCK);
    lc_stage *s = start_pool(dir, yaml, in);
    lc_stage_metrics m;
    wait_loaded(s, &m);
    uint64_t n = (uint64_t)gauge_of(&m, "chunks_since_anchor");
    stop_pool(s, in);
    return n;
}

/* A file after the initial load: newest when newer in the order. */
static void test_late(const char *dir, int o, const char *late, time_t mtime, const char *want)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/late-%s/%s", dir, order_names[o], late);
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/late-%s", dir, order_names[o]);
    tu_mkdirs(sub);
    write_game(path, 1, mtime);
    char yaml[128];
    snprintf(yaml, sizeof yaml, "chunk_pool_size: 100\nthreads: 1\nstore_bytes: 0\norder: %s\n",
             order_names[o]);
    lc_queue *in = lc_queue_new("in", &lc_item_source, 16, LC_OVERFLOW_BLOCK);
    lc_stage *s = start_pool(dir, yaml, in);
    lc_stage_metrics m;
    wait_loaded(s, &m);
    feed(in, path);
    double deadline = lc_now_seconds() + 30;
    do
        lc_standalone_flush(s, &m);
    while (gauge_of(&m, "chunks_since_anchor") != N_FILES + 1 && lc_now_seconds() < deadline &&
           (lc_sleep_seconds(0.01), true));
    const char *key = lc_metrics_find_text(&m, "last_chunk_key");
    printf("order %s: %s arrives late, newest %s\n", order_names[o], late, key ? key : "-");
    CHECK(key && !strcmp(key, want));
    stop_pool(s, in);
}

static int cmp_names(lc_source_order o, const char *a, const char *b)
{
    lc_order_key x, y;
    lc_order_key_make(o, a, NULL, &x);
    lc_order_key_make(o, b, NULL, &y);
    int c = lc_order_compare(&x, &y);
    return c < 0 ? -1 : c > 0;
}

static void test_numbers(void)
{
    lc_order_key k;
    lc_order_key_make(LC_ORDER_NUMBER, "training.000123.gz", NULL, &k);
    CHECK(k.numbered && k.n_digits == 3 && !strncmp(k.digits, "123", 3));
    lc_order_key_make(LC_ORDER_NUMBER, "GAME-0.GZ", NULL, &k);
    CHECK(k.numbered && k.n_digits == 1 && k.digits[0] == '0');
    lc_order_key_make(LC_ORDER_NUMBER, "run3_game_1.gz", NULL, &k);
    CHECK(!k.numbered); /* "3_GAME_1" is not a number */
    lc_order_key_make(LC_ORDER_NUMBER, "game.gz", NULL, &k);
    CHECK(!k.numbered);
    CHECK_EQ_INT(cmp_names(LC_ORDER_NUMBER, "training.123.gz", "game_99.gz"), 1);
    CHECK_EQ_INT(cmp_names(LC_ORDER_NUMBER, "game_0099.gz", "game_99.gz"), -1); /* tie: name */
    CHECK_EQ_INT(cmp_names(LC_ORDER_NUMBER, "game.gz", "game_1.gz"), -1);
    CHECK_EQ_INT(cmp_names(LC_ORDER_NUMBER, "game_123456789012345678901.gz", "game_9.gz"), 1);
    CHECK_EQ_INT(cmp_names(LC_ORDER_NAME, "game_10.gz", "game_9.gz"), -1);
    CHECK_EQ_INT(cmp_names(LC_ORDER_MTIME, "b.gz", "a.gz"), 1); /* no files: by name */
}

/* Keys with folders (the path relative to the data folder): by name first,
 * as upstream's, then by folder, a bare name (an old anchor) after them;
 * the number is the name's, not the folder's. */
static void test_folders(void)
{
    CHECK_EQ_INT(cmp_names(LC_ORDER_NAME, "run2/game_1.gz", "run1/game_2.gz"), -1);
    CHECK_EQ_INT(cmp_names(LC_ORDER_NAME, "run1/game_2.gz", "run2/game_2.gz"), -1);
    CHECK_EQ_INT(cmp_names(LC_ORDER_NAME, "run2/game_2.gz", "game_2.gz"), -1);
    CHECK_EQ_INT(cmp_names(LC_ORDER_NAME, "game_2.gz", "a/b/game_2.gz"), 1);
    CHECK_EQ_INT(cmp_names(LC_ORDER_NAME, "game_2.gz", "run1/game_3.gz"), -1);
    CHECK_EQ_INT(cmp_names(LC_ORDER_NUMBER, "run9/game_10.gz", "run10/game_9.gz"), 1);
    lc_order_key k;
    lc_order_key_make(LC_ORDER_NUMBER, "run3/training.000123.gz", NULL, &k);
    CHECK(k.numbered && k.n_digits == 3 && !strncmp(k.digits, "123", 3));
    CHECK(lc_source_key_matches("run2/game_7.gz", "run2/game_7.gz"));
    CHECK(lc_source_key_matches("run2/game_7.gz", "game_7.gz")); /* a bare name */
    CHECK(!lc_source_key_matches("run2/game_7.gz", "run1/game_7.gz"));
    CHECK(!lc_source_key_matches("game_7.gz", "run2/game_7.gz"));
}

int main(void)
{
    test_folders();
    const char *dir = tu_path("order");
    tu_mkdirs(dir);
    for (int i = 0; i < N_FILES; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        write_game(path, files[i].tag, files[i].mtime);
    }
    for (int o = 0; o < 3; o++) {
        test_window(dir, o);
        uint64_t n10 = count_after(dir, o, "game_10.gz"), n7 = count_after(dir, o, "game_7.gz");
        printf("order %s: %llu after game_10.gz, %llu after game_7.gz\n", order_names[o],
               (unsigned long long)n10, (unsigned long long)n7);
        CHECK_EQ_U64(n10, after_game_10[o]);
        CHECK_EQ_U64(n7, after_game_7[o]);
    }
    /* name: a late "a.gz" is older by name; number: "game_3" older by
     * number; mtime: a file of an old time is older. */
    test_late(dir, 0, "a.gz", 1700009000, "zz.gz");
    test_late(dir, 2, "game_3.gz", 1700009000, "game_10.gz");
    test_late(dir, 1, "zzz_old.gz", 1600000000, "a_game_5.gz");
    /* And newer ones move it. */
    test_late(dir, 2, "game_11.gz", 1600000000, "game_11.gz");
    test_late(dir, 1, "b_new.gz", 1700009000, "b_new.gz");
    test_numbers();
    return check_finish();
}
