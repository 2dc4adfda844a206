/*
 * chunk_source_splitter: the split's proportions against the weights, the
 * same split whatever the order, seed or rank, views that partition each
 * file, the scan marker on every output, and the checks of its block.
 */
#include "check.h"
#include "standalone.h"
#include "testutil.h"

#include "format/lc0/chunk_source.h"
#include "pipeline/config.h"
#include "stages/items.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

extern const lc_stage_class lc_chunk_source_splitter_class;

#define N_TARS 4
#define PER_TAR 500

static char *tars[N_TARS];

/* N_TARS tars of PER_TAR tiny gzip members each (the splitter reads no
 * chunk, only the index), made with tar(1). */
static void make_tars(void)
{
    size_t gzlen;
    uint8_t *gz = tu_gzip("x", 1, 1, &gzlen);
    for (int t = 0; t < N_TARS; t++) {
        char *dir = lc_xasprintf("%s/m%d", tu_tmpdir(), t);
        tu_mkdirs(dir);
        for (int i = 0; i < PER_TAR; i++) {
            char *p = lc_xasprintf("%s/game.%d.%04d.gz", dir, t, i);
            tu_write_file(p, gz, gzlen);
            free(p);
        }
        tars[t] = lc_xasprintf("%s/run-%d.tar", tu_tmpdir(), t);
        char *argv[] = {"tar", "--sort=name", "-cf", tars[t], "-C", dir, ".", NULL};
        if (tu_run(argv, NULL) != 0) {
            fprintf(stderr, "tar failed\n");
            exit(2);
        }
        free(dir);
    }
    free(gz);
}

/* Which output each (file, member) went to: side[t][member], -1 unseen. */
typedef struct split_result {
    int side[N_TARS][PER_TAR];
    uint64_t markers[2], marker_seq[2];
    uint64_t views[2];
} split_result;

static int tar_of(const char *key)
{
    for (int t = 0; t < N_TARS; t++)
        if (strcmp(key, strrchr(tars[t], '/') + 1) == 0)
            return t;
    return -1;
}

/* Feed the tars (in `order`) to a splitter with this block, with the
 * scan marker after `initial` of them; collect both outputs. */
static void run_split(const char *block, const int *order, int initial, const lc_stage_env *env,
                      split_result *r)
{
    memset(r, 0, sizeof *r);
    for (int t = 0; t < N_TARS; t++)
        for (int i = 0; i < PER_TAR; i++)
            r->side[t][i] = -1;
    lc_queue *in = lc_queue_new("in", &lc_item_source, 16, LC_OVERFLOW_BLOCK);
    lc_stage *s;
    lc_error err;
    CHECK_OK(
        lc_standalone_new(&lc_chunk_source_splitter_class, "split", block, in, 64, env, &s, &err));
    CHECK_EQ_INT(s->n_outputs, 2);
    CHECK_EQ_STR(s->output_names[0], "split.train");
    CHECK_EQ_STR(s->output_names[1], "split.test");
    CHECK_OK(lc_standalone_start(s, &err));
    for (int k = 0; k < N_TARS; k++) {
        if (k == initial) {
            lc_source_item m = {.flags = LC_ITEM_SCAN_DONE, .seq = (uint64_t)initial};
            CHECK_OK(lc_queue_put(in, &m, NULL));
        }
        lc_source_item it = {.source = tu_chunk_source(tars[order[k]]),
                             .flags = k < initial ? LC_ITEM_INITIAL : 0};
        CHECK_OK(lc_queue_put(in, &it, NULL));
    }
    lc_queue_close(in);
    for (int k = 0; k < 2; k++) {
        lc_source_item it;
        while (lc_queue_get(s->outputs[k], &it, NULL) == 0) {
            if (it.flags & LC_ITEM_SCAN_DONE) {
                r->markers[k]++;
                r->marker_seq[k] = it.seq;
                continue;
            }
            r->views[k]++;
            int t = tar_of(lc_chunk_source_key(it.source));
            CHECK(t >= 0);
            CHECK(lc_chunk_source_count(it.source) > 0);
            for (size_t i = 0; t >= 0 && i < lc_chunk_source_count(it.source); i++) {
                size_t m = lc_chunk_source_member(it.source, i);
                CHECK(m < PER_TAR);
                if (m >= PER_TAR)
                    continue;
                CHECK_EQ_INT(r->side[t][m], -1); /* each chunk once */
                r->side[t][m] = k;
                /* The view reads the file's member. */
                char want[64];
                snprintf(want, sizeof want, "./game.%d.%04zu.gz", t, m);
                CHECK_EQ_STR(lc_chunk_source_chunk_name(it.source, i), want);
            }
            lc_chunk_source_unref(it.source);
        }
    }
    lc_stage_metrics mt;
    lc_standalone_flush(s, &mt);
    CHECK_EQ_U64(lc_metrics_find(&mt, "chunks")->count, N_TARS * PER_TAR);
    CHECK_EQ_U64(lc_metrics_find(&mt, "sources")->count, N_TARS);
    const char *text = lc_metrics_find_text(&mt, "chunks_by_output");
    CHECK(tu_contains(text, "train ") && tu_contains(text, "test "));
    lc_standalone_free(s);
    lc_queue_free(in);
}

static void test_proportions_and_partition(void)
{
    const int order[N_TARS] = {0, 1, 2, 3};
    split_result r;
    run_split("outputs: [{name: train, weight: 0.8}, {name: test, weight: 0.2}]", order, 2, NULL,
              &r);
    uint64_t n[2] = {0, 0};
    for (int t = 0; t < N_TARS; t++)
        for (int i = 0; i < PER_TAR; i++) {
            CHECK(r.side[t][i] == 0 || r.side[t][i] == 1); /* every chunk somewhere */
            if (r.side[t][i] >= 0)
                n[r.side[t][i]]++;
        }
    /* 2000 chunks, p = 0.2: sd = sqrt(2000 * 0.2 * 0.8) = 17.9; allow 4 sd. */
    double test_share = (double)n[1] / (N_TARS * PER_TAR);
    printf("test share %.4f of %d chunks (weight 0.2)\n", test_share, N_TARS * PER_TAR);
    CHECK(fabs((double)n[1] - 400.0) <= 4 * 17.9);
    /* Every tar has chunks on both sides: one view each. */
    CHECK_EQ_U64(r.views[0], N_TARS);
    CHECK_EQ_U64(r.views[1], N_TARS);
    /* One marker per output, counting the initial views on it. */
    CHECK_EQ_U64(r.markers[0], 1);
    CHECK_EQ_U64(r.markers[1], 1);
    CHECK_EQ_U64(r.marker_seq[0], 2);
    CHECK_EQ_U64(r.marker_seq[1], 2);
}

/* The same chunks land on the same side in another order, with another
 * seed and on another rank: the split depends on the data only. */
static void test_stable(void)
{
    const char *block = "outputs: [{name: train, weight: 0.9}, {name: test, weight: 0.1}]";
    const int order_a[N_TARS] = {0, 1, 2, 3}, order_b[N_TARS] = {3, 1, 0, 2};
    lc_stage_env env_b = {.seed = 12345, .rank = 3, .world_size = 4, .rank_source = "config"};
    split_result *a = malloc(sizeof *a), *b = malloc(sizeof *b), *c = malloc(sizeof *c);
    run_split(block, order_a, 0, NULL, a);
    run_split(block, order_b, 4, &env_b, b);
    CHECK(memcmp(a->side, b->side, sizeof a->side) == 0);
    /* More weight on test moves chunks only from train to test. */
    run_split("outputs: [{name: train, weight: 0.8}, {name: test, weight: 0.2}]", order_a, 0, NULL,
              c);
    int moved = 0, wrong_way = 0;
    for (int t = 0; t < N_TARS; t++)
        for (int i = 0; i < PER_TAR; i++) {
            moved += a->side[t][i] == 0 && c->side[t][i] == 1;
            wrong_way += a->side[t][i] == 1 && c->side[t][i] == 0;
        }
    printf("0.1 -> 0.2: %d chunks moved to test, %d back\n", moved, wrong_way);
    CHECK_EQ_INT(wrong_way, 0);
    CHECK(moved > 100);
    free(a);
    free(b);
    free(c);
}

/* A source whose chunks all go one way is passed on whole, not viewed. */
static void test_whole_source(void)
{
    char *gzp = lc_xasprintf("%s/m0/game.0.0000.gz", tu_tmpdir());
    lc_queue *in = lc_queue_new("in", &lc_item_source, 4, LC_OVERFLOW_BLOCK);
    lc_stage *s;
    lc_error err;
    CHECK_OK(lc_standalone_new(&lc_chunk_source_splitter_class, "split",
                               "outputs: [{name: a}, {name: b}]", in, 4, NULL, &s, &err));
    CHECK_OK(lc_standalone_start(s, &err));
    lc_chunk_source *src = tu_chunk_source(gzp);
    lc_source_item it = {.source = lc_chunk_source_ref(src)};
    CHECK_OK(lc_queue_put(in, &it, NULL));
    lc_queue_close(in);
    int got = 0;
    for (int k = 0; k < 2; k++) {
        lc_source_item o;
        while (lc_queue_get(s->outputs[k], &o, NULL) == 0) {
            got++;
            CHECK(o.source == src);
            lc_chunk_source_unref(o.source);
        }
    }
    CHECK_EQ_INT(got, 1);
    lc_chunk_source_unref(src);
    lc_standalone_free(s);
    lc_queue_free(in);
    free(gzp);
}

static void check_bad_block(const char *block, const char *want)
{
    void *cfg = NULL;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_config_parse_block(&lc_chunk_source_splitter_class, block, &cfg, &err);
    CHECK(rc != 0);
    if (!tu_contains(err.msg, want))
        fprintf(stderr, "for '%s': got '%s', want '%s'\n", block, err.msg, want);
    CHECK(tu_contains(err.msg, want));
    if (rc == 0)
        lc_config_free_block(&lc_chunk_source_splitter_class, cfg);
}

static void test_bad_blocks(void)
{
    check_bad_block("outputs: [{name: train}]", "outputs: 1 given");
    check_bad_block("outputs: [{name: a}, {name: a}]", "'a' is used twice");
    check_bad_block("outputs: [{name: a, weight: 0}, {name: b}]", "outputs[0].weight");
    check_bad_block("outputs: [{name: 'a.b'}, {name: b}]", "not a valid name");
    check_bad_block("outputs: [{name: out}, {name: b}]", "'out' names a stage's one unnamed");
}

/* In a pipeline: each output is addressed as split.<name>, and a bare
 * `split` is refused with the names to use. */
static void test_wiring(void)
{
    lc_config *cfg = lc_test_config(
        "stages:\n"
        "  - {name: files, file_path_provider: {directory: /tmp, watch: false}}\n"
        "  - {name: load, input: files, chunk_source_loader: {}}\n"
        "  - name: split\n"
        "    input: load\n"
        "    chunk_source_splitter: {outputs: [{name: train, weight: 9}, {name: test}]}\n"
        "  - {name: a, input: split.train, chunk_reader: {}}\n"
        "  - {name: b, input: split.test, chunk_reader: {}}\n"
        "  - {name: both, inputs: [a, b], join: {mode: available}}\n");
    const lc_stage_config *a = lc_config_stage(cfg, "a"), *b = lc_config_stage(cfg, "b");
    CHECK_EQ_INT(a->in[0].stage, 2);
    CHECK_EQ_INT(a->in[0].output, 0);
    CHECK_EQ_INT(b->in[0].output, 1);
    lc_config_free(cfg);

    lc_error err;
    const char *bare = "stages:\n"
                       "  - {name: files, file_path_provider: {directory: /tmp}}\n"
                       "  - {name: load, input: files, chunk_source_loader: {}}\n"
                       "  - {name: split, input: load, chunk_source_splitter: "
                       "{outputs: [{name: train}, {name: test}]}}\n"
                       "  - {name: a, input: split, chunk_reader: {}}\n";
    CHECK(lc_config_load_string(bare, strlen(bare), "bare.yaml", &cfg, &err) != 0);
    CHECK(tu_contains(err.msg, "stage 'split' has 2 outputs; name the one to read (one of: "
                               "split.train, split.test)"));
    const char *unread = "stages:\n"
                         "  - {name: files, file_path_provider: {directory: /tmp}}\n"
                         "  - {name: load, input: files, chunk_source_loader: {}}\n"
                         "  - {name: split, input: load, chunk_source_splitter: "
                         "{outputs: [{name: train}, {name: test}]}}\n"
                         "  - {name: a, input: split.train, chunk_reader: {}}\n";
    CHECK(lc_config_load_string(unread, strlen(unread), "unread.yaml", &cfg, &err) != 0);
    CHECK(tu_contains(err.msg, "stage 'split': output test: no stage reads it"));
    const char *nope = "stages:\n"
                       "  - {name: files, file_path_provider: {directory: /tmp}}\n"
                       "  - {name: load, input: files, chunk_source_loader: {}}\n"
                       "  - {name: split, input: load, chunk_source_splitter: "
                       "{outputs: [{name: train}, {name: test}]}}\n"
                       "  - {name: a, input: split.valid, chunk_reader: {}}\n"
                       "  - {name: b, input: split.test, chunk_reader: {}}\n";
    CHECK(lc_config_load_string(nope, strlen(nope), "nope.yaml", &cfg, &err) != 0);
    CHECK(tu_contains(err.msg, "stage 'split' has no output 'valid'"));
}

int main(void)
{
    make_tars();
    test_proportions_and_partition();
    test_stable();
    test_whole_source();
    test_bad_blocks();
    test_wiring();
    return check_finish();
}
