/*
 * join: exact weighted turns (3:1 gives three of the first input in every
 * four items), a plain round robin by default, inputs that end, one scan
 * marker for all inputs, the "available" mode that never waits on a quiet
 * input, and a weights list that does not match the inputs.
 */
#include "check.h"
#include "standalone.h"
#include "testutil.h"

#include "pipeline/config.h"
#include "stages/items.h"

#include <stdlib.h>

#include "training_metrics.pb-c.h"
#include <string.h>

extern const lc_stage_class lc_join_class;

/* A path item named "<tag><i>". */
static void put_path(lc_queue *q, char tag, int i)
{
    lc_path_item it = {.path = lc_xasprintf("%c%d", tag, i), .seq = (uint64_t)i};
    CHECK_OK(lc_queue_put(q, &it, NULL));
}

static lc_stage *new_join(const char *block, lc_queue **in, unsigned n)
{
    lc_stage *s = NULL;
    lc_error err;
    CHECK_OK(lc_standalone_new_inputs(&lc_join_class, "join", block, in, n, 16, NULL, &s, &err));
    if (s)
        CHECK_OK(lc_standalone_start(s, &err));
    return s;
}

/* The first `want` tags out of the join (0 at the end). */
static int read_tags(lc_stage *s, char *tags, int want)
{
    int n = 0;
    lc_path_item it;
    while (n < want && lc_queue_get(s->output, &it, NULL) == 0) {
        tags[n++] = it.path ? it.path[0] : '!';
        free(it.path);
    }
    tags[n] = '\0';
    return n;
}

static void test_weighted(void)
{
    lc_queue *in[2] = {lc_queue_new("a.out", &lc_item_path, 1000, LC_OVERFLOW_BLOCK),
                       lc_queue_new("b.out", &lc_item_path, 1000, LC_OVERFLOW_BLOCK)};
    for (int i = 0; i < 600; i++)
        put_path(in[0], 'a', i);
    for (int i = 0; i < 300; i++)
        put_path(in[1], 'b', i);
    lc_stage *s = new_join("weights: [3, 1]", in, 2);
    char tags[1001];
    CHECK_EQ_INT(read_tags(s, tags, 400), 400);
    /* Every aligned four holds exactly three a's. */
    int bad = 0;
    for (int k = 0; k < 400; k += 4) {
        int a = 0;
        for (int i = 0; i < 4; i++)
            a += tags[k + i] == 'a';
        bad += a != 3;
    }
    CHECK_EQ_INT(bad, 0);
    printf("weights 3:1, first 12: %.12s\n", tags);
    /* b runs out after 300 of it; then only a's: 600 + 300 in all. */
    lc_queue_close(in[1]);
    lc_queue_close(in[0]);
    int rest = read_tags(s, tags, 1000);
    CHECK_EQ_INT(rest, 500);
    int b = 0;
    for (int i = 0; i < rest; i++)
        b += tags[i] == 'b';
    CHECK_EQ_INT(b, 200);
    lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    CHECK(tu_contains(lc_metrics_find_text(&m, "items_by_input"), "a 600 (66.7%)"));
    CHECK(tu_contains(lc_metrics_find_text(&m, "items_by_input"), "b 300 (33.3%)"));
    CHECK_EQ_INT(lc_stage_state(s), LCMON__STAGE_STATE__STAGE_FINISHED);
    lc_standalone_free(s);
    lc_queue_free(in[0]);
    lc_queue_free(in[1]);
}

static void test_round_robin(void)
{
    lc_queue *in[3];
    for (int k = 0; k < 3; k++) {
        in[k] = lc_queue_new("in.out", &lc_item_path, 100, LC_OVERFLOW_BLOCK);
        for (int i = 0; i < 10; i++)
            put_path(in[k], (char)('a' + k), i);
        lc_queue_close(in[k]);
    }
    lc_stage *s = new_join("{}", in, 3);
    char tags[64];
    CHECK_EQ_INT(read_tags(s, tags, 63), 30);
    CHECK(strncmp(tags, "abcabcabc", 9) == 0);
    lc_standalone_free(s);
    for (int k = 0; k < 3; k++)
        lc_queue_free(in[k]);
}

/* Two loaders' scan markers become one, counting both. */
static void test_markers(void)
{
    lc_queue *in[2] = {lc_queue_new("a.out", &lc_item_source, 10, LC_OVERFLOW_BLOCK),
                       lc_queue_new("b.out", &lc_item_source, 10, LC_OVERFLOW_BLOCK)};
    lc_source_item ma = {.flags = LC_ITEM_SCAN_DONE, .seq = 5};
    lc_source_item mb = {.flags = LC_ITEM_SCAN_DONE, .seq = 7};
    CHECK_OK(lc_queue_put(in[0], &ma, NULL));
    CHECK_OK(lc_queue_put(in[1], &mb, NULL));
    lc_queue_close(in[0]);
    lc_queue_close(in[1]);
    lc_stage *s = new_join("mode: available", in, 2);
    lc_source_item it;
    int markers = 0;
    uint64_t seq = 0;
    while (lc_queue_get(s->output, &it, NULL) == 0) {
        markers += (it.flags & LC_ITEM_SCAN_DONE) != 0;
        seq = it.seq;
    }
    CHECK_EQ_INT(markers, 1);
    CHECK_EQ_U64(seq, 12);
    lc_standalone_free(s);
    lc_queue_free(in[0]);
    lc_queue_free(in[1]);
}

/* mode: available keeps taking from a busy input while another is open
 * and empty; weighted would wait on the quiet one. */
static void test_available(void)
{
    lc_queue *in[2] = {lc_queue_new("busy.out", &lc_item_path, 100, LC_OVERFLOW_BLOCK),
                       lc_queue_new("quiet.out", &lc_item_path, 100, LC_OVERFLOW_BLOCK)};
    for (int i = 0; i < 50; i++)
        put_path(in[0], 'a', i);
    lc_stage *s = new_join("mode: available", in, 2);
    char tags[64];
    CHECK_EQ_INT(read_tags(s, tags, 50), 50); /* blocks for ever if it waited on b */
    put_path(in[1], 'b', 0);
    CHECK_EQ_INT(read_tags(s, tags, 1), 1);
    CHECK_EQ_INT(tags[0], 'b');
    lc_standalone_free(s); /* stops with an input open */
    lc_queue_free(in[0]);
    lc_queue_free(in[1]);
}

static void test_bad_weights(void)
{
    lc_queue *in[2] = {lc_queue_new("a.out", &lc_item_path, 4, LC_OVERFLOW_BLOCK),
                       lc_queue_new("b.out", &lc_item_path, 4, LC_OVERFLOW_BLOCK)};
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK(lc_standalone_new_inputs(&lc_join_class, "join", "weights: [1, 2, 3]", in, 2, 4, NULL, &s,
                                   &err) != 0);
    CHECK(tu_contains(err.msg, "join.weights: 3 given for 2 inputs"));
    void *block = NULL;
    CHECK(lc_config_parse_block(&lc_join_class, "weights: [1, -2]", &block, &err) != 0);
    CHECK(tu_contains(err.msg, "weights[1]"));
    lc_queue_free(in[0]);
    lc_queue_free(in[1]);

    /* In a configuration: every input the same type. */
    const char *mixed = "stages:\n"
                        "  - {name: f1, file_path_provider: {directory: /tmp}}\n"
                        "  - {name: f2, file_path_provider: {directory: /tmp}}\n"
                        "  - {name: load, input: f2, chunk_source_loader: {}}\n"
                        "  - {name: both, inputs: [f1, load], join: {}}\n";
    lc_config *cfg;
    CHECK(lc_config_load_string(mixed, strlen(mixed), "mixed.yaml", &cfg, &err) != 0);
    CHECK(tu_contains(err.msg, "inputs: load carries 'chunk_source' items but f1 carries 'path'"));
    const char *twin = "stages:\n"
                       "  - {name: f, file_path_provider: {directory: /tmp}}\n"
                       "  - {name: l, input: f, chunk_source_loader: {}}\n"
                       "  - {name: s, input: l, chunk_source_splitter: "
                       "{outputs: [{name: a}, {name: b}]}}\n"
                       "  - {name: j, inputs: [s.a, s.b], join: {}}\n";
    CHECK(lc_config_load_string(twin, strlen(twin), "twin.yaml", &cfg, &err) != 0);
    CHECK(tu_contains(err.msg, "inputs 1 and 2 both come from one stage's outputs"));
    /* Through stages that do not decouple (a reader on each side), too. */
    const char *through = "stages:\n"
                          "  - {name: f, file_path_provider: {directory: /tmp}}\n"
                          "  - {name: l, input: f, chunk_source_loader: {}}\n"
                          "  - {name: s, input: l, chunk_source_splitter: "
                          "{outputs: [{name: a}, {name: b}]}}\n"
                          "  - {name: ra, input: s.a, chunk_reader: {}}\n"
                          "  - {name: rb, input: s.b, chunk_reader: {}}\n"
                          "  - {name: j, inputs: [ra, rb], join: {}}\n";
    CHECK(lc_config_load_string(through, strlen(through), "through.yaml", &cfg, &err) != 0);
    CHECK(tu_contains(err.msg, "inputs 1 and 2 both come from one stage's outputs"));
    /* A pool on each side takes its sources in whatever it emits: fine. */
    const char *pools = "stages:\n"
                        "  - {name: f, file_path_provider: {directory: /tmp}}\n"
                        "  - {name: l, input: f, chunk_source_loader: {}}\n"
                        "  - {name: s, input: l, chunk_source_splitter: "
                        "{outputs: [{name: a}, {name: b}]}}\n"
                        "  - {name: pa, input: s.a, shuffling_chunk_pool: {chunk_pool_size: 9}}\n"
                        "  - {name: pb, input: s.b, shuffling_chunk_pool: {chunk_pool_size: 9}}\n"
                        "  - {name: j, inputs: [pa, pb], join: {}}\n";
    CHECK_OK(lc_config_load_string(pools, strlen(pools), "pools.yaml", &cfg, &err));
    lc_config_free(cfg);
    const char *twin_ok = "stages:\n"
                          "  - {name: f, file_path_provider: {directory: /tmp}}\n"
                          "  - {name: l, input: f, chunk_source_loader: {}}\n"
                          "  - {name: s, input: l, chunk_source_splitter: "
                          "{outputs: [{name: a}, {name: b}]}}\n"
                          "  - {name: j, inputs: [s.a, s.b], join: {mode: available}}\n";
    CHECK_OK(lc_config_load_string(twin_ok, strlen(twin_ok), "twin_ok.yaml", &cfg, &err));
    lc_config_free(cfg);
    const char *count = "stages:\n"
                        "  - {name: f1, file_path_provider: {directory: /tmp}}\n"
                        "  - {name: f2, file_path_provider: {directory: /tmp}}\n"
                        "  - {name: j, inputs: [f1, f2], join: {weights: [1]}}\n";
    CHECK(lc_config_load_string(count, strlen(count), "count.yaml", &cfg, &err) != 0);
    CHECK(tu_contains(err.msg, "stage 'j': join.weights: 1 given for 2 inputs"));
    const char *both = "stages:\n"
                       "  - {name: f1, file_path_provider: {directory: /tmp}}\n"
                       "  - {name: f2, file_path_provider: {directory: /tmp}}\n"
                       "  - {name: j, input: f1, inputs: [f2], join: {}}\n";
    CHECK(lc_config_load_string(both, strlen(both), "both.yaml", &cfg, &err) != 0);
    CHECK(tu_contains(err.msg, "give 'input' (one) or 'inputs' (a list), not both"));
    const char *many = "stages:\n"
                       "  - {name: f1, file_path_provider: {directory: /tmp}}\n"
                       "  - {name: f2, file_path_provider: {directory: /tmp}}\n"
                       "  - {name: l, inputs: [f1, f2], chunk_source_loader: {}}\n";
    CHECK(lc_config_load_string(many, strlen(many), "many.yaml", &cfg, &err) != 0);
    CHECK(tu_contains(err.msg, "chunk_source_loader reads 1 input, 2 given"));
}

int main(void)
{
    test_weighted();
    test_round_robin();
    test_markers();
    test_available();
    test_bad_weights();
    return check_finish();
}
