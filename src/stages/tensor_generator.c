/*
 * tensor_generator: packs frames into batches of float32 tensors, all
 * tensors of a batch in one C-contiguous buffer (format/batch.h).
 *
 * Layouts (see docs/lc0-training-data.md):
 *   current: inputs [B,112,8,8], policy [B,1858], values [B,6,3]
 *   legacy:  planes [B,112,8,8], probs [B,1858], winner [B,3], best_q [B,3],
 *            plies_left [B]
 *
 * N worker threads each fill their own batch (stages/batcher.h). When the
 * input ends, a partial batch is emitted with `rows` set to the frames it
 * holds, and with one thread the last batch carries LC_ITEM_END_OF_STREAM.
 */
#include "stages/stage.h"

#include "core/log.h"
#include "format/batch.h"
#include "format/lc0/frame.h"
#include "stages/batcher.h"
#include "stages/items.h"

#include <stdlib.h>
#include <string.h>

typedef enum { LAYOUT_CURRENT = 0, LAYOUT_LEGACY = 1 } layout_kind;

static const cyaml_strval_t layout_strings[] = {
    {"current", LAYOUT_CURRENT},
    {"legacy", LAYOUT_LEGACY},
};

typedef struct tensor_config {
    uint64_t batch_size;
    int *layout_opt;
    unsigned *threads_opt;
    layout_kind layout;
    unsigned threads;
} tensor_config;

static const cyaml_schema_field_t tensor_fields[] = {
    CYAML_FIELD_UINT("batch_size", CYAML_FLAG_DEFAULT, tensor_config, batch_size),
    CYAML_FIELD_ENUM_PTR("layout", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, tensor_config,
                         layout_opt, layout_strings, CYAML_ARRAY_LEN(layout_strings)),
    CYAML_FIELD_UINT_PTR("threads", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, tensor_config,
                         threads_opt),
    CYAML_FIELD_END,
};

static int tensor_config_check(void *p, lc_error *err)
{
    tensor_config *c = p;
    int rc = lc_config_threads(&c->threads, c->threads_opt, 1, 64, err);
    if (c->batch_size < 1 || c->batch_size > 65536)
        rc = lc_error_add(err, LC_ECONFIG, "batch_size: %llu is out of range (use 1 to 65536)",
                          (unsigned long long)c->batch_size);
    c->layout = c->layout_opt ? (layout_kind)*c->layout_opt : LAYOUT_CURRENT;
    return rc;
}

typedef struct tensor_gen {
    lc_batch_layout layout;
    lc_batch_sink sink;
} tensor_gen;

static void fill_row(const tensor_config *c, lc_batch *b, uint64_t row, const lc_frame *f)
{
    float *planes = (float *)lc_batch_tensor(b, 0) + row * LC_INPUT_PLANES * 64;
    float *policy = (float *)lc_batch_tensor(b, 1) + row * LC_POLICY_SIZE;
    lc_frame_input_planes(f, planes);
    lc_frame_policy(f, policy);
    if (c->layout == LAYOUT_CURRENT) {
        lc_frame_values(f, (float *)lc_batch_tensor(b, 2) + row * LC_FRAME_VALUES);
    } else {
        float *winner = (float *)lc_batch_tensor(b, 2) + row * 3;
        float *best_q = (float *)lc_batch_tensor(b, 3) + row * 3;
        float *plies = (float *)lc_batch_tensor(b, 4) + row;
        lc_frame_legacy_targets(f, winner, best_q, plies);
    }
}

static void tensor_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    tensor_gen *t = s->priv;
    const tensor_config *c = s->config;
    lc_batcher bt;
    lc_batcher_init(&bt, s, &t->sink, c->threads == 1);
    lc_frame f;
    while (lc_run_state_check(&s->run, meter) && lc_queue_get(s->input, &f, meter) == 0) {
        uint64_t row;
        lc_batch *b = lc_batcher_row(&bt, &row);
        fill_row(c, b, row, &f);
        lc_frame_fini(&f);
        if (!lc_batcher_commit(&bt, meter))
            break;
    }
    lc_batcher_finish(&bt, meter);
}

static int tensor_init(lc_stage *s, lc_error *err)
{
    (void)err;
    tensor_gen *t = s->priv;
    const tensor_config *c = s->config;
    lc_batch_layout_init(&t->layout, c->batch_size);
    const uint64_t planes[3] = {LC_INPUT_PLANES, 8, 8};
    const uint64_t policy[1] = {LC_POLICY_SIZE};
    if (c->layout == LAYOUT_CURRENT) {
        const uint64_t values[2] = {6, 3};
        lc_batch_layout_add(&t->layout, "inputs", LC_DTYPE_F32, 3, planes);
        lc_batch_layout_add(&t->layout, "policy", LC_DTYPE_F32, 1, policy);
        lc_batch_layout_add(&t->layout, "values", LC_DTYPE_F32, 2, values);
    } else {
        const uint64_t wdl[1] = {3};
        lc_batch_layout_add(&t->layout, "planes", LC_DTYPE_F32, 3, planes);
        lc_batch_layout_add(&t->layout, "probs", LC_DTYPE_F32, 1, policy);
        lc_batch_layout_add(&t->layout, "winner", LC_DTYPE_F32, 1, wdl);
        lc_batch_layout_add(&t->layout, "best_q", LC_DTYPE_F32, 1, wdl);
        lc_batch_layout_add(&t->layout, "plies_left", LC_DTYPE_F32, 0, NULL);
    }
    lc_batch_sink_init(&t->sink, &t->layout, c->threads);
    return 0;
}

static void tensor_fini(lc_stage *s)
{
    tensor_gen *t = s->priv;
    lc_batch_sink_fini(&t->sink);
}

static void tensor_flush(lc_stage *s, lc_stage_metrics *m)
{
    tensor_gen *t = s->priv;
    lc_batch_sink_flush(&t->sink, m, "positions");
}

static const lc_metric_info tensor_metrics[] = {
    {"positions", "positions", LC_SHOW_RATE, 0, "positions/s", "pos/s"},
    {"batches", "batches"},
    {0},
};

static unsigned tensor_threads(const void *config)
{
    return ((const tensor_config *)config)->threads;
}

const lc_stage_class lc_tensor_generator_class = {
    .type_name = "tensor_generator",
    .summary = "packs positions into float32 tensor batches (current or legacy layout)",
    .input = &lc_item_frame,
    .output = &lc_item_batch,
    .priv_size = sizeof(tensor_gen),
    .worker = tensor_worker,
    .threads = tensor_threads,
    .workers = "workers",
    .config_fields = tensor_fields,
    .config_size = sizeof(tensor_config),
    .config_check = tensor_config_check,
    .init = tensor_init,
    .fini = tensor_fini,
    .flush_metrics = tensor_flush,
    .metrics = tensor_metrics,
};
