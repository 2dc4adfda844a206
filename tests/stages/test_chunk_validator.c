/*
 * chunk_validator, run standalone: well-formed V6 and V7 chunks pass through
 * unchanged and in order (one thread); a chunk with one malformed record,
 * wherever it sits, is dropped whole and counted under the reason of its
 * first bad record ("bad_<reason>") and in the stage's dropped total. A
 * chunk checked upstream (LC_ITEM_CHECKED: the pool's chunk store checked
 * it) passes unchecked, packed or not, counted as checked_upstream.
 */
#include "check.h"
#include "records.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "format/lc0/packed_chunk.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLICY 1858
#define V6_SIZE 8356
#define V7_SIZE 8396
#define N_RECORDS 5
#define GET_TIMEOUT_NS (10ull * 1000000000ull)

/* Offsets from docs/lc0-training-data.md. */
#define OFF_VERSION 0
#define OFF_INPUT_FORMAT 4
#define OFF_PROBS 8
#define OFF_PLAYED_IDX 8344
#define OFF_BEST_IDX 8346

/* A well-formed record: legal moves at 100..119 (119 has 0 visits, still
 * legal), best = 100, played = 119; probabilities -1, 0, 1 and in between. */
/* The chunks counted as bad input, every reason together. */
static uint64_t bad_input(const lc_stage_metrics *m)
{
    uint64_t n = 0;
    for (int i = 0; i < m->n_rows; i++)
        if (m->rows[i].kind == LC_METRIC_BAD)
            n += m->slot[i].count;
    return n;
}

static void make_record(uint8_t *r, uint32_t version, uint32_t fmt, uint64_t tag)
{
    memset(r, 0, version == 7 ? V7_SIZE : V6_SIZE);
    rec_put_u32(r, OFF_VERSION, version);
    rec_put_u32(r, OFF_INPUT_FORMAT, fmt);
    for (unsigned i = 0; i < POLICY; i++)
        rec_put_prob(r, i, -1.0f);
    rec_put_prob(r, 100, 1.0f);
    for (unsigned i = 101; i < 119; i++)
        rec_put_prob(r, i, 0.0f);
    rec_put_prob(r, 119, 0.0f);
    rec_put_prob(r, 1857, 0.5f);
    rec_put_u16(r, OFF_PLAYED_IDX, 119);
    rec_put_u16(r, OFF_BEST_IDX, 100);
    memcpy(r + 7440, &tag, sizeof tag); /* first plane word: tells chunks apart */
}

static lc_chunk_item make_chunk(uint32_t version, uint32_t fmt, uint64_t tag)
{
    lc_chunk_item c = {0};
    c.version = version;
    c.record_size = version == 7 ? V7_SIZE : V6_SIZE;
    c.n_records = N_RECORDS;
    c.data = malloc((size_t)N_RECORDS * c.record_size);
    for (uint32_t i = 0; i < N_RECORDS; i++)
        make_record(c.data + (size_t)i * c.record_size, version, fmt, tag * 100 + i);
    c.global_index = tag;
    c.use_count = (uint32_t)tag % 3;
    c.member = (uint32_t)tag;
    c.source = NULL;
    return c;
}

static uint8_t *rec_at(lc_chunk_item *c, uint32_t i)
{
    return c->data + (size_t)i * c->record_size;
}

typedef enum {
    BAD_NONE,
    BAD_FORMAT_9,
    BAD_FORMAT_0,
    BAD_PROB_NAN,
    BAD_PROB_1_5,
    BAD_PROB_MINUS_1_5,
    BAD_PROB_INF,
    BAD_PLAYED_2000,
    BAD_BEST_1858,
    BAD_BEST_ILLEGAL,
    BAD_PLAYED_ILLEGAL,
    BAD_VERSION_FIELD,
    BAD_CHUNK_VERSION,
} bad_kind;

static const struct {
    bad_kind kind;
    const char *metric;
} cases[] = {
    {BAD_FORMAT_9, "bad_unknown_input_format"},
    {BAD_FORMAT_0, "bad_unknown_input_format"},
    {BAD_PROB_NAN, "bad_bad_probability"},
    {BAD_PROB_1_5, "bad_bad_probability"},
    {BAD_PROB_MINUS_1_5, "bad_bad_probability"},
    {BAD_PROB_INF, "bad_bad_probability"},
    {BAD_PLAYED_2000, "bad_played_idx_out_of_range"},
    {BAD_BEST_1858, "bad_best_idx_out_of_range"},
    {BAD_BEST_ILLEGAL, "bad_best_idx_illegal"},
    {BAD_PLAYED_ILLEGAL, "bad_played_idx_illegal"},
    {BAD_VERSION_FIELD, "bad_unknown_version"},
    {BAD_CHUNK_VERSION, "bad_unknown_version"},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* Break record `at` of chunk c in the given way. */
static void spoil(lc_chunk_item *c, bad_kind kind, uint32_t at)
{
    uint8_t *r = rec_at(c, at);
    switch (kind) {
    case BAD_NONE:
        break;
    case BAD_FORMAT_9:
        rec_put_u32(r, OFF_INPUT_FORMAT, 9);
        break;
    case BAD_FORMAT_0:
        rec_put_u32(r, OFF_INPUT_FORMAT, 0);
        break;
    case BAD_PROB_NAN:
        rec_put_prob(r, 500, NAN);
        break;
    case BAD_PROB_1_5:
        rec_put_prob(r, 110, 1.5f);
        break;
    case BAD_PROB_MINUS_1_5:
        rec_put_prob(r, 3, -1.5f);
        break;
    case BAD_PROB_INF:
        rec_put_prob(r, 1857, INFINITY);
        break;
    case BAD_PLAYED_2000:
        rec_put_u16(r, OFF_PLAYED_IDX, 2000);
        break;
    case BAD_BEST_1858:
        rec_put_u16(r, OFF_BEST_IDX, 1858);
        break;
    case BAD_BEST_ILLEGAL:
        rec_put_u16(r, OFF_BEST_IDX, 7); /* probability -1 */
        break;
    case BAD_PLAYED_ILLEGAL:
        rec_put_u16(r, OFF_PLAYED_IDX, 1000); /* probability -1 */
        break;
    case BAD_VERSION_FIELD:
        rec_put_u32(r, OFF_VERSION, c->version == 6 ? 7 : 6); /* not the chunk's version */
        break;
    case BAD_CHUNK_VERSION:
        /* A chunk claiming a version no record layout has, every record
         * saying so too. */
        c->version = 9;
        for (uint32_t i = 0; i < c->n_records; i++)
            rec_put_u32(rec_at(c, i), OFF_VERSION, 9);
        break;
    }
}

static lc_stage *new_validator(lc_queue *in)
{
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_standalone_new(lc_stage_class_find("chunk_validator"), "validator", "threads: 1\n", in,
                          64, NULL, &s, &err) != 0) {
        fprintf(stderr, "chunk_validator: %s\n", err.msg);
        exit(2);
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    return s;
}

static uint64_t count_of(const lc_stage_metrics *m, const char *name)
{
    const lc_metric_slot *c = lc_metrics_find(m, name);
    return c ? c->count : 0;
}

/*
 * Valid chunks (V6 and V7, every known input format) interleaved with one
 * bad chunk per case; the bad record sits first, in the middle or last.
 */
static void test_mixed_stream(void)
{
    static const uint32_t fmts[] = {1, 2, 3, 4, 5, 132, 133};
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 256, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_validator(in);

    /* Copies of the valid chunks' bytes, to check they pass unchanged. */
    enum { MAX_VALID = 64 };
    uint8_t *want_bytes[MAX_VALID];
    lc_chunk_item want[MAX_VALID];
    int n_valid = 0;
    uint64_t tag = 1;
    for (size_t i = 0; i <= N_CASES; i++) {
        /* Two valid chunks, then a bad one. */
        for (int j = 0; j < 2; j++) {
            uint32_t version = (tag % 2) ? 6 : 7;
            lc_chunk_item c = make_chunk(version, fmts[tag % 7], tag);
            size_t bytes = (size_t)c.n_records * c.record_size;
            want[n_valid] = c;
            want_bytes[n_valid] = malloc(bytes);
            memcpy(want_bytes[n_valid], c.data, bytes);
            n_valid++;
            CHECK_OK(lc_queue_put(in, &c, NULL));
            tag++;
        }
        if (i == N_CASES)
            break;
        lc_chunk_item bad = make_chunk(i % 2 ? 7 : 6, fmts[i % 7], 1000 + i);
        spoil(&bad, cases[i].kind, (uint32_t)(i % 3 == 0 ? 0 : i % 3 == 1 ? 2 : N_RECORDS - 1));
        CHECK_OK(lc_queue_put(in, &bad, NULL));
    }
    lc_queue_close(in);

    int got = 0;
    lc_chunk_item c;
    while (lc_queue_get_until(s->output, &c, NULL, lc_now_ns() + GET_TIMEOUT_NS) == 0) {
        if (got < n_valid) {
            const lc_chunk_item *w = &want[got];
            CHECK_EQ_U64(c.global_index, w->global_index);
            CHECK(c.data == w->data); /* the same buffer, handed on */
            CHECK_EQ_INT(c.version, w->version);
            CHECK_EQ_INT(c.record_size, w->record_size);
            CHECK_EQ_INT(c.n_records, w->n_records);
            CHECK_EQ_INT(c.use_count, w->use_count);
            CHECK_EQ_INT(c.member, w->member);
            CHECK(c.source == NULL);
            CHECK(memcmp(c.data, want_bytes[got], (size_t)c.n_records * c.record_size) == 0);
        } else {
            fprintf(stderr, "unexpected chunk %llu passed\n", (unsigned long long)c.global_index);
            CHECK(got < n_valid);
        }
        lc_item_chunk.dispose(&c);
        got++;
    }
    CHECK_EQ_INT(got, n_valid);
    CHECK(lc_queue_closed(s->output));

    lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    CHECK_EQ_U64(count_of(&m, "valid_chunks"), (uint64_t)n_valid);
    CHECK_EQ_U64(bad_input(&m), N_CASES);
    static const char *const metrics[] = {
        "bad_unknown_version",       "bad_unknown_input_format",
        "bad_bad_probability",       "bad_played_idx_out_of_range",
        "bad_best_idx_out_of_range", "bad_played_idx_illegal",
        "bad_best_idx_illegal",      "bad_other",
    };
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++) {
        uint64_t want_n = 0;
        for (size_t j = 0; j < N_CASES; j++)
            want_n += strcmp(cases[j].metric, metrics[i]) == 0;
        const lc_metric_slot *mc = lc_metrics_find(&m, metrics[i]);
        CHECK(mc != NULL);
        if (mc && mc->count != want_n)
            fprintf(stderr, "%s: ", metrics[i]);
        CHECK_EQ_U64(count_of(&m, metrics[i]), want_n);
    }
    /* Counts are reset by a flush. */
    lc_standalone_flush(s, &m);
    CHECK_EQ_U64(bad_input(&m), 0);
    CHECK_EQ_U64(count_of(&m, "valid_chunks"), 0);

    lc_standalone_free(s);
    lc_queue_free(in);
    for (int i = 0; i < n_valid; i++)
        free(want_bytes[i]);
}

/* Each reason alone, in a fresh stage: exactly its counter moves. */
static void test_each_reason_alone(void)
{
    for (size_t i = 0; i < N_CASES; i++) {
        lc_queue *in = lc_queue_new("in", &lc_item_chunk, 4, LC_OVERFLOW_BLOCK);
        lc_stage *s = new_validator(in);
        lc_chunk_item bad = make_chunk(6, 1, 5000 + i);
        spoil(&bad, cases[i].kind, 1);
        CHECK_OK(lc_queue_put(in, &bad, NULL));
        lc_queue_close(in);
        lc_chunk_item c;
        int rc = lc_queue_get_until(s->output, &c, NULL, lc_now_ns() + GET_TIMEOUT_NS);
        CHECK_EQ_INT(rc, LC_ECLOSED);
        if (rc == 0)
            lc_item_chunk.dispose(&c);
        lc_stage_metrics m;
        lc_standalone_flush(s, &m);
        if (count_of(&m, cases[i].metric) != 1)
            fprintf(stderr, "case %zu (%s):\n", i, cases[i].metric);
        CHECK_EQ_U64(count_of(&m, cases[i].metric), 1);
        CHECK_EQ_U64(bad_input(&m), 1);
        CHECK_EQ_U64(count_of(&m, "valid_chunks"), 0);
        lc_standalone_free(s);
        lc_queue_free(in);
    }
}

/* A V7 chunk of one record in the newest canonical format passes. */
static void test_single_record(void)
{
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 4, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_validator(in);
    lc_chunk_item one = make_chunk(7, 133, 1);
    one.n_records = 1;
    CHECK_OK(lc_queue_put(in, &one, NULL));
    lc_queue_close(in);
    lc_chunk_item c;
    CHECK_OK(lc_queue_get_until(s->output, &c, NULL, lc_now_ns() + GET_TIMEOUT_NS));
    CHECK_EQ_U64(c.global_index, 1);
    CHECK_EQ_INT(c.n_records, 1);
    lc_item_chunk.dispose(&c);
    CHECK_EQ_INT(lc_queue_get_until(s->output, &c, NULL, lc_now_ns() + GET_TIMEOUT_NS), LC_ECLOSED);
    lc_standalone_free(s);
    lc_queue_free(in);
}

/* Checked upstream: passed on as it is, even a chunk whose records would
 * fail (the flag is the pool's word that it checked them), and a packed
 * chunk with no records to read. */
static void test_checked_upstream(void)
{
    lc_queue *in = lc_queue_new("in", &lc_item_chunk, 4, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_validator(in);
    lc_chunk_item spoilt = make_chunk(6, 1, 70);
    spoil(&spoilt, cases[0].kind, 2);
    spoilt.flags = LC_ITEM_CHECKED;
    CHECK_OK(lc_queue_put(in, &spoilt, NULL));
    lc_chunk_item raw = make_chunk(6, 1, 71);
    lc_pack_ctx *pc = lc_pack_ctx_new(LC_PACK_LEVEL_DEFAULT, 8);
    lc_chunk_item packed = {
        .version = 6, .n_records = N_RECORDS, .global_index = 72, .flags = LC_ITEM_CHECKED};
    CHECK_OK(lc_packed_chunk_build(pc, raw.data, raw.record_size, N_RECORDS, 6, &packed.packed,
                                   NULL, NULL));
    lc_pack_ctx_free(pc);
    lc_item_chunk.dispose(&raw);
    CHECK_OK(lc_queue_put(in, &packed, NULL));
    lc_queue_close(in);
    lc_chunk_item c;
    CHECK_OK(lc_queue_get_until(s->output, &c, NULL, lc_now_ns() + GET_TIMEOUT_NS));
    CHECK_EQ_U64(c.global_index, 70);
    lc_item_chunk.dispose(&c);
    CHECK_OK(lc_queue_get_until(s->output, &c, NULL, lc_now_ns() + GET_TIMEOUT_NS));
    CHECK_EQ_U64(c.global_index, 72);
    CHECK(c.packed != NULL && c.data == NULL);
    lc_item_chunk.dispose(&c);
    CHECK_EQ_INT(lc_queue_get_until(s->output, &c, NULL, lc_now_ns() + GET_TIMEOUT_NS), LC_ECLOSED);
    lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    CHECK_EQ_U64(count_of(&m, "checked_upstream"), 2);
    CHECK_EQ_U64(count_of(&m, "valid_chunks"), 0);
    CHECK_EQ_U64(bad_input(&m), 0);
    lc_standalone_free(s);
    lc_queue_free(in);
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    test_checked_upstream();
    test_mixed_stream();
    test_each_reason_alone();
    test_single_record();
    return check_finish();
}
