/*
 * test_metrics: lc_stage_metrics building and merging. Loads and counts add
 * up, gauges keep the latest value, queue counters add and fullness samples
 * merge as statistics, statistics merge, texts take the newer flush's value
 * when it has one (an empty text too) and are kept otherwise, each by its
 * row's kind; lc_metrics_add_queue reads and resets a real queue's
 * counters.
 */
#include <string.h>

#include "check.h"
#include "core/metrics.h"
#include "core/queue.h"

static const lc_item_type u32_type = {"u32", sizeof(uint32_t), NULL};

static const lc_metric_queue *find_queue(const lc_stage_metrics *m, const char *name)
{
    for (int i = 0; i < m->n_queue; i++)
        if (strcmp(m->queue[i].name, name) == 0)
            return &m->queue[i];
    return NULL;
}

static const lc_metric_load *find_load(const lc_stage_metrics *m, const char *name)
{
    for (int i = 0; i < m->n_load; i++)
        if (strcmp(m->load[i].name, name) == 0)
            return &m->load[i];
    return NULL;
}

/* A class's rows, as a stage's table lists them. */
enum { FILES, BYTES, POOL, SIZE, ONLY_DST, ONLY_SRC, LEVEL_DST, DROPPED, BAD, ANCHOR, KEY, N_ROWS };
static const lc_metric_info rows[] = {
    [FILES] = {"files", "files"},
    [BYTES] = {"bytes", "bytes"},
    [POOL] = {"pool", "chunks", .kind = LC_METRIC_GAUGE},
    [SIZE] = {"size", "bytes", .kind = LC_METRIC_STAT},
    [ONLY_DST] = {"only-dst", "files"},
    [ONLY_SRC] = {"only-src", "files"},
    [LEVEL_DST] = {"level-dst", "files", .kind = LC_METRIC_GAUGE},
    [DROPPED] = {"dropped", "chunks", .kind = LC_METRIC_DROP},
    [BAD] = {"bad", "chunks", .kind = LC_METRIC_BAD},
    [ANCHOR] = {"anchor", "", .kind = LC_METRIC_TEXT},
    [KEY] = {"key", "", .kind = LC_METRIC_TEXT},
    {0},
};

static void test_build(void)
{
    static lc_stage_metrics m;
    memset(&m, 0xab, sizeof m);
    lc_stage_metrics_clear(&m);
    CHECK_EQ_INT(m.n_load + m.n_queue + m.n_rows + m.n_text, 0);
    lc_stage_metrics_begin(&m, rows, N_ROWS);
    CHECK_EQ_INT(lc_metric_info_rows(rows), N_ROWS);
    CHECK(lc_metrics_find(&m, "files") == NULL);
    CHECK(lc_metrics_find(&m, "pool") == NULL);

    lc_metrics_add_load(&m, "workers", 0.5, 1.0, 2);
    lc_metrics_add_load(&m, "workers", 0.25, 1.0, 3);
    CHECK_EQ_INT(m.n_load, 1);
    CHECK_NEAR(m.load[0].busy_seconds, 0.75, 1e-12);
    CHECK_NEAR(m.load[0].total_seconds, 2.0, 1e-12);
    CHECK_EQ_INT(m.load[0].threads, 3);

    lc_metric_add(&m, FILES, 3);
    lc_metric_add(&m, FILES, 4);
    lc_metric_add(&m, BYTES, 0);
    CHECK(m.slot[FILES].set && m.slot[BYTES].set && !m.slot[ONLY_DST].set);
    const lc_metric_slot *c = lc_metrics_find(&m, "files");
    CHECK(c != NULL);
    CHECK_EQ_U64(c ? c->count : 0, 7);
    c = lc_metrics_find(&m, "bytes");
    CHECK(c != NULL);
    CHECK_EQ_U64(c ? c->count : 1, 0);

    lc_metric_gauge_of(&m, POOL, 10, 100);
    lc_metric_gauge(&m, POOL, 20);
    const lc_metric_slot *g = lc_metrics_find(&m, "pool");
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(g->value, 20);
        CHECK(!g->has_capacity);
    }

    lc_stats s;
    lc_stats_reset(&s);
    lc_stats_add(&s, 2.0);
    lc_stats_add(&s, 4.0);
    lc_metric_stat(&m, SIZE, &s);
    lc_stats_reset(&s);
    lc_stats_add(&s, 9.0);
    lc_metric_stat(&m, SIZE, &s);
    const lc_metric_slot *st = lc_metrics_find(&m, "size");
    CHECK(st != NULL);
    if (st) {
        CHECK_EQ_U64(st->stats.count, 3);
        CHECK_NEAR(st->stats.min, 2.0, 0.0);
        CHECK_NEAR(st->stats.max, 9.0, 0.0);
        CHECK_NEAR(st->stats.latest, 9.0, 0.0);
    }
}

/* A load's name of LC_METRIC_NAME_MAX bytes or more is stored cut; adding
 * to it again must find that entry rather than add a second one (repeated
 * adds would otherwise fill the table and end in lc_fatal). */
static void test_long_names(void)
{
    static lc_stage_metrics m;
    lc_stage_metrics_clear(&m);
    char longname[LC_METRIC_NAME_MAX + 20];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';

    lc_metrics_add_load(&m, longname, 1.0, 1.0, 1);
    lc_metrics_add_load(&m, longname, 1.0, 1.0, 1);
    CHECK_EQ_INT(m.n_load, 1);
}

static void test_merge(void)
{
    static lc_stage_metrics dst, src;
    lc_stage_metrics_begin(&dst, rows, N_ROWS);
    lc_stage_metrics_begin(&src, rows, N_ROWS);

    snprintf(dst.name, sizeof dst.name, "old-name");
    dst.state = 1;
    lc_metrics_add_load(&dst, "workers", 1.0, 2.0, 2);
    lc_metric_add(&dst, FILES, 5);
    lc_metric_add(&dst, ONLY_DST, 1);
    lc_metric_gauge_of(&dst, POOL, 10, 100);
    lc_metric_gauge(&dst, LEVEL_DST, 3);
    lc_stats s;
    lc_stats_reset(&s);
    lc_stats_add(&s, 5.0);
    lc_metric_stat(&dst, SIZE, &s);
    dst.queue[0] = (lc_metric_queue){.put = 10, .get = 8, .drop = 1, .capacity = 16};
    snprintf(dst.queue[0].name, sizeof dst.queue[0].name, "out");
    snprintf(dst.queue[0].item_type, sizeof dst.queue[0].item_type, "chunk");
    lc_stats_reset(&dst.queue[0].fullness);
    lc_stats_add(&dst.queue[0].fullness, 2.0);
    dst.n_queue = 1;
    lc_metric_add(&dst, DROPPED, 1);
    lc_metric_add(&dst, BAD, 2);
    dst.items_out = 100;
    lc_metric_text(&dst, ANCHOR, "old-anchor");
    lc_metric_text(&dst, KEY, "old-key");

    snprintf(src.name, sizeof src.name, "stage");
    snprintf(src.type, sizeof src.type, "chunk_source_loader");
    src.state = 2;
    lc_metrics_add_load(&src, "workers", 0.5, 1.0, 4);
    lc_metrics_add_load(&src, "reader", 0.1, 1.0, 1);
    lc_metric_add(&src, FILES, 3);
    lc_metric_add(&src, ONLY_SRC, 9);
    lc_metric_gauge_of(&src, POOL, 20, 200);
    lc_stats_reset(&s);
    lc_stats_add(&s, 1.0);
    lc_stats_add(&s, 3.0);
    lc_metric_stat(&src, SIZE, &s);
    src.queue[0] = (lc_metric_queue){.put = 5, .get = 6, .drop = 2, .capacity = 32};
    snprintf(src.queue[0].name, sizeof src.queue[0].name, "out");
    snprintf(src.queue[0].item_type, sizeof src.queue[0].item_type, "chunk");
    lc_stats_reset(&src.queue[0].fullness);
    lc_stats_add(&src.queue[0].fullness, 12.0);
    src.n_queue = 1;
    lc_metric_add(&src, DROPPED, 3);
    lc_metric_add(&src, BAD, 1);
    src.items_out = 50;
    /* No texts in this flush: dst keeps its own. */

    lc_stage_metrics_merge(&dst, &src);

    CHECK_EQ_STR(dst.name, "stage");
    CHECK_EQ_STR(dst.type, "chunk_source_loader");
    CHECK_EQ_INT(dst.state, 2);

    /* Loads add; the thread count is the newer one; new loads appear. */
    CHECK_EQ_INT(dst.n_load, 2);
    const lc_metric_load *l = find_load(&dst, "workers");
    CHECK(l != NULL);
    if (l) {
        CHECK_NEAR(l->busy_seconds, 1.5, 1e-12);
        CHECK_NEAR(l->total_seconds, 3.0, 1e-12);
        CHECK_EQ_INT(l->threads, 4);
    }
    l = find_load(&dst, "reader");
    CHECK(l != NULL && l->threads == 1);

    /* Counts add; counts only one side has survive. */
    const lc_metric_slot *c = lc_metrics_find(&dst, "files");
    CHECK_EQ_U64(c ? c->count : 0, 8);
    c = lc_metrics_find(&dst, "only-dst");
    CHECK_EQ_U64(c ? c->count : 0, 1);
    c = lc_metrics_find(&dst, "only-src");
    CHECK_EQ_U64(c ? c->count : 0, 9);

    /* Gauges keep the latest value. */
    const lc_metric_slot *g = lc_metrics_find(&dst, "pool");
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(g->value, 20);
        CHECK_EQ_INT(g->capacity, 200);
        CHECK(g->has_capacity);
    }
    g = lc_metrics_find(&dst, "level-dst");
    CHECK(g != NULL && g->value == 3);

    /* Statistics merge. */
    const lc_metric_slot *st = lc_metrics_find(&dst, "size");
    CHECK(st != NULL);
    if (st) {
        CHECK_EQ_U64(st->stats.count, 3);
        CHECK_NEAR(st->stats.min, 1.0, 0.0);
        CHECK_NEAR(st->stats.max, 5.0, 0.0);
        CHECK_NEAR(st->stats.sum, 9.0, 1e-12);
        CHECK_NEAR(st->stats.latest, 3.0, 0.0);
    }

    /* Queue counters add; fullness samples merge; capacity is the newer. */
    CHECK_EQ_INT(dst.n_queue, 1);
    const lc_metric_queue *q = find_queue(&dst, "out");
    CHECK(q != NULL);
    if (q) {
        CHECK_EQ_U64(q->put, 15);
        CHECK_EQ_U64(q->get, 14);
        CHECK_EQ_U64(q->drop, 3);
        CHECK_EQ_U64(q->capacity, 32);
        CHECK_EQ_STR(q->item_type, "chunk");
        CHECK_EQ_U64(q->fullness.count, 2);
        CHECK_NEAR(q->fullness.min, 2.0, 0.0);
        CHECK_NEAR(q->fullness.max, 12.0, 0.0);
        CHECK_NEAR(q->fullness.latest, 12.0, 0.0);
        CHECK_NEAR(lc_stats_mean(&q->fullness), 7.0, 1e-12);
    }

    /* Counts keep their kind as they add up. */
    c = lc_metrics_find(&dst, "dropped");
    CHECK(c != NULL && c->count == 4 && dst.rows[DROPPED].kind == LC_METRIC_DROP);
    c = lc_metrics_find(&dst, "bad");
    CHECK(c != NULL && c->count == 3 && dst.rows[BAD].kind == LC_METRIC_BAD);
    CHECK_EQ_U64(dst.items_out, 150);
    CHECK_EQ_STR(lc_metrics_find_text(&dst, "anchor"), "old-anchor");
    CHECK_EQ_STR(lc_metrics_find_text(&dst, "key"), "old-key");
    CHECK(lc_metrics_find_text(&dst, "none") == NULL);

    /* A flush with texts replaces them; an empty text is a value too. */
    lc_stage_metrics_begin(&src, rows, N_ROWS);
    lc_metric_text(&src, ANCHOR, "new-anchor");
    lc_metric_text(&src, KEY, NULL);
    lc_stage_metrics_merge(&dst, &src);
    CHECK_EQ_STR(lc_metrics_find_text(&dst, "anchor"), "new-anchor");
    CHECK_EQ_STR(lc_metrics_find_text(&dst, "key"), "");
    /* An empty flush leaves the sums alone. */
    CHECK_EQ_U64(dst.items_out, 150);
    c = lc_metrics_find(&dst, "files");
    CHECK_EQ_U64(c ? c->count : 0, 8);

    /* Merging into a cleared record copies the source. */
    static lc_stage_metrics fresh;
    lc_stage_metrics_clear(&fresh);
    lc_stage_metrics_merge(&fresh, &dst);
    CHECK_EQ_INT(fresh.n_load, dst.n_load);
    CHECK_EQ_INT(fresh.n_rows, dst.n_rows);
    for (int r = 0; r < N_ROWS; r++)
        CHECK(fresh.slot[r].set == dst.slot[r].set && fresh.slot[r].count == dst.slot[r].count);
    CHECK_EQ_INT(fresh.n_queue, dst.n_queue);
    CHECK_EQ_U64(fresh.items_out, 150);
    CHECK_EQ_INT(fresh.n_text, dst.n_text);
    CHECK_EQ_STR(lc_metrics_find_text(&fresh, "anchor"), "new-anchor");
    q = find_queue(&fresh, "out");
    CHECK(q != NULL && q->put == 15 && q->fullness.count == 2 && q->fullness.min == 2.0);
}

static void test_add_queue(void)
{
    lc_queue *q = lc_queue_new("chunks", &u32_type, 8, LC_OVERFLOW_DROP_NEWEST);
    uint32_t v = 0;
    for (int i = 0; i < 10; i++)
        CHECK_OK(lc_queue_put(q, &v, NULL)); /* 8 fit, 2 dropped */
    for (int i = 0; i < 3; i++)
        CHECK_OK(lc_queue_get(q, &v, NULL));

    static lc_stage_metrics m;
    lc_stage_metrics_clear(&m);
    lc_metrics_add_queue(&m, "out", q);
    CHECK_EQ_INT(m.n_queue, 1);
    const lc_metric_queue *mq = find_queue(&m, "out");
    CHECK(mq != NULL);
    if (!mq) {
        lc_queue_free(q);
        return;
    }
    CHECK_EQ_STR(mq->item_type, "u32");
    CHECK_EQ_U64(mq->put, 8);
    CHECK_EQ_U64(mq->get, 3);
    CHECK_EQ_U64(mq->drop, 2);
    CHECK_EQ_U64(mq->capacity, 8);
    CHECK_EQ_U64(mq->fullness.count, 1);
    CHECK_NEAR(mq->fullness.latest, 5.0, 0.0);

    /* The queue's counters were reset by the read. */
    lc_queue_counters c;
    lc_queue_flush_counters(q, &c);
    CHECK_EQ_U64(c.put, 0);
    CHECK_EQ_U64(c.get, 0);
    CHECK_EQ_U64(c.drop, 0);
    CHECK_EQ_U64(c.size, 5);

    /* A second read adds only what happened since, and one more sample. */
    CHECK_OK(lc_queue_get(q, &v, NULL));
    lc_metrics_add_queue(&m, "out", q);
    CHECK_EQ_INT(m.n_queue, 1);
    CHECK_EQ_U64(mq->put, 8);
    CHECK_EQ_U64(mq->get, 4);
    CHECK_EQ_U64(mq->drop, 2);
    CHECK_EQ_U64(mq->fullness.count, 2);
    CHECK_NEAR(mq->fullness.min, 4.0, 0.0);
    CHECK_NEAR(mq->fullness.max, 5.0, 0.0);
    CHECK_NEAR(mq->fullness.latest, 4.0, 0.0);
    lc_queue_free(q);
}

int main(void)
{
    test_build();
    test_long_names();
    test_merge();
    test_add_queue();
    return check_finish();
}
