/*
 * Metrics describe themselves: every count, gauge, text and statistic a
 * stage reports is listed in its class's metrics table (with a unit), and
 * every entry the screen is told to show is well formed. Checked against
 * real runs of every stage type: the lc0 chain with a chunk store and the
 * writer writing a regular file, the sequential chunk_reader chain, a
 * splitter's two outputs (a pool with hanse, a reader) joined and
 * rescored, and the Parquet chain on a fixture as encoder and decoder.
 * The snapshots carry the units and kinds; the hello's descriptions carry
 * the display, in the class's order. And every row is written: each row
 * of each class's table is in some run's snapshot, so a row that no flush
 * sets (or sets only under settings no chain here has) fails, naming it.
 */
#include "check.h"
#include "standalone.h"
#include "testutil.h"

#include "core/clock.h"
#include "monitor/snapshot.h"
#include "pipeline/config.h"
#include "pipeline/describe.h"
#include "pipeline/pipeline.h"
#include "stages/registry.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every table is well formed: units given, display entries labelled as
 * their kind needs, a PERCENT's other count listed, names unique per kind
 * of display (a metric may be shown twice, e.g. a rate and a total). */
static void test_tables(void)
{
    size_t shown_somewhere = 0;
    for (size_t i = 0; lc_stage_registry[i]; i++) {
        const lc_stage_class *cls = lc_stage_registry[i];
        CHECK(cls->metrics != NULL);
        if (!cls->metrics) {
            fprintf(stderr, "%s lists no metrics\n", cls->type_name);
            continue;
        }
        for (const lc_metric_info *m = cls->metrics; m->name; m++) {
            CHECK(m->unit != NULL);
            CHECK(strlen(m->name) < LC_METRIC_NAME_MAX);
            if (m->show == LC_SHOW_NONE)
                continue;
            shown_somewhere++;
            if (m->show == LC_SHOW_PERCENT) {
                CHECK(m->of && lc_metric_info_find(cls->metrics, m->of));
            }
            if (m->show != LC_SHOW_TEXT && m->show != LC_SHOW_SINCE_ANCHOR &&
                m->show != LC_SHOW_FILL)
                CHECK(m->label && m->label[0]);
            if (m->flags & LC_SHOW_ETA)
                CHECK_EQ_INT(m->show, LC_SHOW_FILL);
        }
    }
    CHECK(shown_somewhere >= 20);

    /* Every role the readers look for is declared by some class, and no
     * class declares one twice (the readers take the first). */
    for (int role = LC_ROLE_POSITIONS; role < LC_METRIC_ROLE_COUNT_; role++) {
        size_t declared = 0;
        for (size_t i = 0; lc_stage_registry[i]; i++) {
            size_t here = 0;
            for (const lc_metric_info *m = lc_stage_registry[i]->metrics; m && m->name; m++)
                here += m->role == (lc_metric_role)role;
            CHECK(here <= 1);
            declared += here;
        }
        if (!declared)
            fprintf(stderr, "no stage class declares role %d\n", role);
        CHECK(declared >= 1);
    }
}

/* The rows each class (by its index in the registry) wrote in some run:
 * a row is written when its snapshot has it. */
static uint64_t rows_seen[64];
static bool class_ran[64];
_Static_assert(LC_METRICS_MAX_ROWS <= 64, "a bit a row");

/* The row of that name in s's class, marked seen; NULL when none. */
static const lc_metric_info *seen(const Lcmon__StageMetricProto *s, const char *name)
{
    for (size_t i = 0; lc_stage_registry[i]; i++) {
        const lc_stage_class *cls = lc_stage_registry[i];
        if (strcmp(cls->type_name, s->stage_type) != 0)
            continue;
        class_ran[i] = true;
        const lc_metric_info *m = lc_metric_info_find(cls->metrics, name);
        if (m)
            rows_seen[i] |= UINT64_C(1) << (m - cls->metrics);
        return m;
    }
    return NULL;
}

/* Every metric of every stage in the snapshot is listed by its class. */
static void check_listed(const Lcmon__DataLoaderMetricsProto *all, size_t want_stages)
{
    CHECK_EQ_INT(all->n_stage_metrics, want_stages);
    for (size_t i = 0; i < all->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *s = all->stage_metrics[i];
        const lc_stage_class *cls = lc_stage_class_find(s->stage_type);
        CHECK(cls != NULL);
        if (!cls)
            continue;
        for (size_t k = 0; k < s->n_count_metrics; k++) {
            const Lcmon__CountMetricProto *c = s->count_metrics[k];
            const lc_metric_info *m = seen(s, c->name);
            /* The pipeline's own count on the last stage says its unit too. */
            bool drained = strcmp(c->name, "drained") == 0;
            if (!m && !drained)
                fprintf(stderr, "%s (%s): count %s is not in its class's table\n", s->name,
                        s->stage_type, c->name);
            CHECK(m || drained);
            if (m && m->unit[0])
                CHECK(c->unit && strcmp(c->unit, m->unit) == 0);
        }
        for (size_t k = 0; k < s->n_gauge_metrics; k++) {
            const Lcmon__GaugeMetricProto *g = s->gauge_metrics[k];
            const lc_metric_info *m = seen(s, g->name);
            if (!m)
                fprintf(stderr, "%s (%s): gauge %s is not in its class's table\n", s->name,
                        s->stage_type, g->name);
            CHECK(m != NULL);
            if (m && m->unit[0])
                CHECK(g->unit && strcmp(g->unit, m->unit) == 0);
        }
        for (size_t k = 0; k < s->n_text_metrics; k++) {
            const Lcmon__TextMetricProto *t = s->text_metrics[k];
            if (!seen(s, t->name))
                fprintf(stderr, "%s (%s): text %s is not in its class's table\n", s->name,
                        s->stage_type, t->name);
            CHECK(lc_metric_info_find(cls->metrics, t->name) != NULL);
        }
        for (size_t k = 0; k < s->n_statistics_metrics; k++) {
            const Lcmon__StatisticsMetricProto *t = s->statistics_metrics[k];
            if (!seen(s, t->name))
                fprintf(stderr, "%s (%s): statistic %s is not in its class's table\n", s->name,
                        s->stage_type, t->name);
            CHECK(lc_metric_info_find(cls->metrics, t->name) != NULL);
        }
    }
}

/* The description the hello sends: each stage's displayed metrics, in
 * its class's order, with the flags as the table says. */
static void check_described(const lc_config *cfg)
{
    size_t n = 0;
    Lcmon__StageDescription **d = lc_config_describe(cfg, &n);
    CHECK_EQ_INT(n, cfg->n_stages);
    for (size_t i = 0; i < n; i++) {
        const lc_stage_class *cls = lc_stage_class_find(d[i]->stage_type);
        size_t k = 0;
        for (const lc_metric_info *m = cls->metrics; m && m->name; m++) {
            if (m->show == LC_SHOW_NONE)
                continue;
            CHECK(k < d[i]->n_details);
            if (k >= d[i]->n_details)
                break;
            const Lcmon__MetricDisplay *e = d[i]->details[k++];
            CHECK_EQ_STR(e->metric, m->name);
            CHECK_EQ_INT(e->as, m->show);
            CHECK(e->dim == ((m->flags & LC_SHOW_DIM) != 0));
            CHECK(e->nonzero_only == ((m->flags & LC_SHOW_NONZERO) != 0));
            CHECK(e->eta == ((m->flags & LC_SHOW_ETA) != 0));
            CHECK((e->row == NULL) == (m->row == NULL));
        }
        CHECK_EQ_INT(k, d[i]->n_details);
    }
    lc_config_describe_free(d, n);
}

/* The writer's bytes so far, in the published all-time snapshot. */
static uint64_t written(lc_pipeline *p)
{
    lc_shared *snap = lc_pipeline_snapshot(p, true);
    uint64_t n = lc_snapshot_count(lc_snapshot_find_stage(lc_shared_get(snap), "writer"), "bytes");
    lc_shared_unref(snap);
    return n;
}

/* Run until the run ends or the writer wrote `bytes`; stop; check. */
static void run_and_check(const char *yaml, uint64_t bytes)
{
    lc_config *cfg = lc_test_config(yaml);
    check_described(cfg);
    lc_pipeline *p = NULL;
    CHECK_OK(lc_pipeline_new(cfg, &p, NULL));
    CHECK_OK(lc_pipeline_start(p, NULL));
    double deadline = lc_now_seconds() + 60 * tu_slow();
    while (!lc_pipeline_wait(p, 0.05) && written(p) < bytes && lc_now_seconds() < deadline)
        ;
    lc_pipeline_stop(p);
    Lcmon__DataLoaderMetricsProto *all = lc_pipeline_metrics(p, true);
    check_listed(all, cfg->n_stages);
    /* The writer wrote, so every stage before it ran. */
    const Lcmon__StageMetricProto *w = lc_snapshot_find_stage(all, "writer");
    CHECK(w && lc_snapshot_count(w, "bytes") > 0);
    lcmon__data_loader_metrics_proto__free_unpacked(all, NULL);
    lc_pipeline_free(p);
    lc_config_free(cfg);
}

static void test_lc0_chain(void)
{
    char yaml[2048];
    snprintf(yaml, sizeof yaml,
             "metrics_interval_ms: 50\n"
             "stages:\n"
             "  - name: files\n" /* watching: its activity says the folders */
             "    file_path_provider: {directory: '%s'}\n"
             "  - name: sources\n"
             "    input: files\n"
             "    chunk_source_loader: {threads: 1}\n"
             "  - name: pool\n"
             "    input: sources\n"
             "    shuffling_chunk_pool: {chunk_pool_size: 200, threads: 1, store_bytes: 8M}\n"
             "  - name: validator\n"
             "    input: pool\n"
             "    chunk_validator: {threads: 1}\n"
             "  - name: unpacker\n"
             "    input: validator\n"
             "    chunk_unpacker: {sampling_rate: 0.5, threads: 1}\n"
             "  - name: sampler\n"
             "    input: unpacker\n"
             "    shuffling_frame_sampler: {reservoir_size: 100}\n"
             "  - name: tensors\n"
             "    input: sampler\n"
             "    tensor_generator: {batch_size: 16, threads: 1}\n"
             "  - name: writer\n"
             "    input: tensors\n"
             "    fifo_writer: {path: '%s', regular_file: true}\n",
             tu_test_data(), tu_path("lc0.out"));
    /* It runs on (the pool reshuffles): until a few batches are written. */
    run_and_check(yaml, 200000);
}

static void test_sequential_chain(void)
{
    char yaml[2048];
    snprintf(yaml, sizeof yaml,
             "metrics_interval_ms: 50\n"
             "stages:\n"
             "  - name: files\n"
             "    file_path_provider: {directory: '%s', watch: false}\n"
             "  - name: sources\n"
             "    input: files\n"
             "    chunk_source_loader: {threads: 1}\n"
             "  - name: reader\n"
             "    input: sources\n"
             "    chunk_reader: {}\n"
             "  - name: unpacker\n"
             "    input: reader\n"
             "    chunk_unpacker: {sampling_rate: 1, threads: 1}\n"
             "  - name: tensors\n"
             "    input: unpacker\n"
             "    tensor_generator: {batch_size: 16, threads: 1}\n"
             "  - name: writer\n"
             "    input: tensors\n"
             "    fifo_writer: {path: '%s', regular_file: true}\n",
             tu_test_data(), tu_path("seq.out"));
    run_and_check(yaml, UINT64_MAX); /* to its end */
}

/* The types and settings the chains above leave out: a splitter's two
 * outputs, one through a pool weighing chunks (hanse), one through a
 * reader, joined, then rescored. */
static void test_split_chain(void)
{
    char yaml[2048];
    snprintf(yaml, sizeof yaml,
             "metrics_interval_ms: 50\n"
             "stages:\n"
             "  - {name: files, file_path_provider: {directory: '%s', watch: false}}\n"
             "  - {name: sources, input: files, chunk_source_loader: {threads: 1}}\n"
             "  - name: split\n"
             "    input: sources\n"
             "    chunk_source_splitter: {outputs: [{name: a}, {name: b}]}\n"
             "  - name: pool\n"
             "    input: split.a\n"
             "    shuffling_chunk_pool: {chunk_pool_size: 200, threads: 1, hanse: {threshold: 1}}\n"
             "  - {name: reader, input: split.b, chunk_reader: {}}\n"
             "  - {name: both, inputs: [pool, reader], join: {}}\n"
             "  - {name: rescorer, input: both, chunk_rescorer: {threads: 1}}\n"
             "  - {name: unpacker, input: rescorer, chunk_unpacker: {threads: 1}}\n"
             "  - {name: tensors, input: unpacker, tensor_generator: {batch_size: 16}}\n"
             "  - name: writer\n"
             "    input: tensors\n"
             "    fifo_writer: {path: '%s', regular_file: true}\n",
             tu_test_data(), tu_path("split.out"));
    run_and_check(yaml, 200000);
}

/* The Parquet chain to the end of one epoch, the tokenizer as `tokenizer`
 * says. */
static void run_parquet_chain(const char *tokenizer, const char *out)
{
    char yaml[2048];
    snprintf(yaml, sizeof yaml,
             "metrics_interval_ms: 50\n"
             "stages:\n"
             "  - name: games\n"
             "    parquet_game_source: {path: '%s', epochs: 1, shuffle: false}\n"
             "  - name: tokens\n"
             "    input: games\n"
             "    game_tokenizer: %s\n"
             "  - name: writer\n"
             "    input: tokens\n"
             "    fifo_writer: {path: '%s', regular_file: true}\n",
             getenv("LC_PARQUET_FIXTURE"), tokenizer, tu_path(out));
    run_and_check(yaml, UINT64_MAX);
}

static void test_parquet_chain(void)
{
    run_parquet_chain("{mode: encoder, batch_size: 4, shuffle_buffer: 8}", "tokens.out");
    /* A decoder counts its bad samples as games. */
    run_parquet_chain("{mode: decoder, batch_size: 4, max_seq_len: 80}", "games.out");
}

/* Every stage type ran in some chain, and wrote each of its rows in
 * some run: a row no flush ever sets fails here. */
static void check_every_row_written(void)
{
    for (size_t i = 0; lc_stage_registry[i]; i++) {
        const lc_stage_class *cls = lc_stage_registry[i];
        if (!class_ran[i])
            fprintf(stderr, "no chain here runs a %s\n", cls->type_name);
        CHECK(class_ran[i]);
        for (int r = 0; cls->metrics && cls->metrics[r].name; r++) {
            bool written = rows_seen[i] >> r & 1;
            if (class_ran[i] && !written)
                fprintf(stderr, "%s: row %s was never written\n", cls->type_name,
                        cls->metrics[r].name);
            CHECK(written);
        }
    }
}

int main(void)
{
    test_tables();
    test_lc0_chain();
    test_sequential_chain();
    test_split_chain();
    test_parquet_chain();
    check_every_row_written();
    return check_finish();
}
