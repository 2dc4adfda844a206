/*
 * tensor_generator: packs frames into batches of float32 tensors, all
 * tensors of a batch in one C-contiguous buffer (format/batch.h).
 *
 * Layouts (see docs/lc0-training-data.md):
 *   current: inputs [B,112,8,8], policy [B,1858], values [B,6,3]
 *   legacy:  planes [B,112,8,8], probs [B,1858], winner [B,3], best_q [B,3],
 *            plies_left [B]
 * Planes 104..111 follow the input format, or with `planes: upstream` are
 * written as upstream's C++ loader writes them, whatever the format
 * (format/lc0/frame.h, lc_planes_kind): in either layout, dense and packed
 * alike (upstream's loader has made both layouts with the same planes).
 *
 * With `packed: true` the same positions travel in about 1.4 KB instead of
 * 36 KB, and the reader expands them (expansion "lc0-packed-1",
 * docs/batch-stream.md). The planes tensor P ("inputs" or "planes") becomes
 *   P_bits uint8 [B,112,8]: byte r of plane p's word (lc_frame_packed_planes)
 *   P_aux  float32 [B,8]:   the value of planes 104..111's set bits
 * and the policy tensor Q ("policy" or "probs")
 *   Q_idx uint16 [B,K], Q_val float32 [B,K]: the entries that are not -1,
 *   then padding that repeats the last one (lc_frame_policy_sparse);
 * the targets stay as they are. K is `policy_slots` (80). A batch holding a
 * position with more entries than K is widened, never cut: it goes out with
 * K the next power of two that holds them (at most 2048), a layout of its
 * own that the stream announces with a header, and the next batch is back
 * to K. Self-play positions have 25 entries on average and rarely over 70.
 *
 * N worker threads each fill their own batch (stages/batcher.h). When the
 * input ends, a partial batch is emitted with `rows` set to the frames it
 * holds, and with one thread the last batch carries LC_ITEM_END_OF_STREAM.
 * In deterministic mode several threads take a batch's frames at once and
 * hand the batches on in turns (worker_in_turns): the batches one thread
 * makes, the last one marked too.
 */
#include "stages/stage.h"

#include "core/log.h"
#include "format/batch.h"
#include "format/lc0/frame.h"
#include "stages/batcher.h"
#include "stages/items.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { LAYOUT_CURRENT = 0, LAYOUT_LEGACY = 1 } layout_kind;

static const lc_setting_value layout_values[] = {
    {"current", LAYOUT_CURRENT},
    {"legacy", LAYOUT_LEGACY},
    {0},
};

#define DEFAULT_POLICY_SLOTS 80
/* Widened layouts: K = 2^(WIDE_MIN_SHIFT + i), enough for any policy. */
#define WIDE_MIN_SHIFT 7
#define WIDE_LAYOUTS 5
_Static_assert((1u << (WIDE_MIN_SHIFT + WIDE_LAYOUTS - 1)) >= LC_POLICY_SIZE,
               "the widest layout holds every policy entry");

static const lc_setting_value planes_values[] = {
    {"input_format", LC_PLANES_INPUT_FORMAT},
    {"upstream", LC_PLANES_UPSTREAM},
    {0},
};

typedef struct generator_config {
    uint64_t batch_size;
    layout_kind layout;
    lc_planes_kind planes;
    unsigned threads;
    bool packed;
    unsigned policy_slots;
    bool policy_slots_given;
} generator_config;

static const lc_setting generator_settings[] = {
    {.key = "batch_size",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(generator_config, batch_size),
     .required = true,
     LC_SETTING_RANGE(1, 65536),
     .meaning = "positions a batch",
     .example = "1024"},
    {.key = "layout",
     .type = LC_SETTING_ENUM,
     LC_SETTING_AT(generator_config, layout),
     .def = "current",
     .values = layout_values,
     .meaning = "the tensors' names and shapes: current (inputs, policy, values) or legacy",
     .example = "legacy"},
    {.key = "planes",
     .type = LC_SETTING_ENUM,
     LC_SETTING_AT(generator_config, planes),
     .def = "input_format",
     .values = planes_values,
     .meaning = "planes 104-111: as each record's input_format defines them, or as upstream's "
                "C++ loader writes them whatever the format (the same for format 1 only)",
     .example = "upstream"},
    LC_SETTING_ROW(generator_config, packed, "packed", LC_SETTING_BOOL, "false",
                   "planes as bits and the policy as its legal moves, expanded by the reader",
                   "true"),
    {.key = "policy_slots",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(generator_config, policy_slots),
     LC_SETTING_GIVEN(generator_config, policy_slots_given),
     .def = LC_SETTING_STR(DEFAULT_POLICY_SLOTS),
     LC_SETTING_RANGE(1, LC_POLICY_SIZE),
     .meaning = "policy entries a position of a packed batch (longer ones are widened)",
     .example = "96"},
    LC_SETTING_THREADS(generator_config, threads, "1", 64),
    {0},
};

static int generator_config_check(void *p, lc_problems *ps)
{
    generator_config *c = p;
    if (c->policy_slots_given && !c->packed)
        return lc_problem_add(ps, "policy_slots",
                              "only packed batches have policy slots (add packed: true, or "
                              "remove policy_slots)");
    return 0;
}

typedef struct generator {
    lc_batch_layout layout;
    lc_batch_sink sink;
    /* packed: the widened layouts, made when first needed */
    pthread_mutex_t wide_mu;
    lc_batch_layout wide_layout[WIDE_LAYOUTS];
    lc_batch_pool *wide_pool[WIDE_LAYOUTS];
    atomic_uint_fast64_t n_widened;
} generator;

/* The tensors after the planes and policy: the targets. */
static void fill_targets(const generator_config *c, lc_batch *b, unsigned first, uint64_t row,
                         const lc_frame *f)
{
    if (c->layout == LAYOUT_CURRENT) {
        lc_frame_values(f, (float *)lc_batch_tensor(b, first) + row * LC_FRAME_VALUES);
    } else {
        float *winner = (float *)lc_batch_tensor(b, first) + row * 3;
        float *best_q = (float *)lc_batch_tensor(b, first + 1) + row * 3;
        float *plies = (float *)lc_batch_tensor(b, first + 2) + row;
        lc_frame_legacy_targets(f, winner, best_q, plies);
    }
}

static void fill_row(const generator_config *c, lc_batch *b, uint64_t row, const lc_frame *f)
{
    float *planes = (float *)lc_batch_tensor(b, 0) + row * LC_INPUT_PLANES * 64;
    float *policy = (float *)lc_batch_tensor(b, 1) + row * LC_POLICY_SIZE;
    lc_frame_input_planes_as(f, c->planes, planes);
    lc_frame_policy(f, policy);
    fill_targets(c, b, 2, row, f);
}

/* Policy slots of a packed batch: the second dimension of its Q_idx. */
static unsigned slots_of(const lc_batch *b)
{
    return (unsigned)b->layout->tensors[2].shape[1];
}

static void fill_packed_row(const generator_config *c, lc_batch *b, uint64_t row, const lc_frame *f)
{
    unsigned k = slots_of(b);
    lc_frame_packed_planes_as(f, c->planes,
                              (uint8_t *)lc_batch_tensor(b, 0) + row * LC_INPUT_PLANES * 8,
                              (float *)lc_batch_tensor(b, 1) + row * 8);
    lc_frame_policy_sparse(f, (uint16_t *)lc_batch_tensor(b, 2) + row * k,
                           (float *)lc_batch_tensor(b, 3) + row * k, k);
    fill_targets(c, b, 4, row, f);
}

/* Lay out the tensors of a batch of policy_slots k; packed or dense. */
static void make_layout(const generator_config *c, unsigned k, lc_batch_layout *l)
{
    static const char *const names[2][2] = {{"inputs", "policy"}, {"planes", "probs"}};
    const char *planes_name = names[c->layout][0], *policy_name = names[c->layout][1];
    lc_batch_layout_init(l, c->batch_size);
    const uint64_t planes[3] = {LC_INPUT_PLANES, 8, 8};
    const uint64_t policy[1] = {LC_POLICY_SIZE};
    if (!c->packed) {
        lc_batch_layout_name(l, c->layout == LAYOUT_CURRENT ? "lc0-current" : "lc0-legacy", NULL);
        lc_batch_layout_add(l, planes_name, LC_DTYPE_F32, 3, planes);
        lc_batch_layout_add(l, policy_name, LC_DTYPE_F32, 1, policy);
    } else {
        lc_batch_layout_name(
            l, c->layout == LAYOUT_CURRENT ? "lc0-current-packed" : "lc0-legacy-packed",
            LC_EXPAND_LC0);
        char name[LC_BATCH_NAME_MAX];
        const uint64_t bits[2] = {LC_INPUT_PLANES, 8}, aux[1] = {8}, slots[1] = {k};
        snprintf(name, sizeof name, "%s_bits", planes_name);
        lc_batch_layout_add(l, name, LC_DTYPE_U8, 2, bits);
        snprintf(name, sizeof name, "%s_aux", planes_name);
        lc_batch_layout_add(l, name, LC_DTYPE_F32, 1, aux);
        snprintf(name, sizeof name, "%s_idx", policy_name);
        lc_batch_layout_add(l, name, LC_DTYPE_U16, 1, slots);
        snprintf(name, sizeof name, "%s_val", policy_name);
        lc_batch_layout_add(l, name, LC_DTYPE_F32, 1, slots);
    }
    if (c->layout == LAYOUT_CURRENT) {
        const uint64_t values[2] = {6, 3};
        lc_batch_layout_add(l, "values", LC_DTYPE_F32, 2, values);
    } else {
        const uint64_t wdl[1] = {3};
        lc_batch_layout_add(l, "winner", LC_DTYPE_F32, 1, wdl);
        lc_batch_layout_add(l, "best_q", LC_DTYPE_F32, 1, wdl);
        lc_batch_layout_add(l, "plies_left", LC_DTYPE_F32, 0, NULL);
    }
}

/*
 * Row `row` of packed batch b needs n policy slots, more than b has: move
 * rows 0..row-1 to a batch of the widened layout that holds n, make that the
 * batcher's batch and return it. Rare: a position with more legal moves
 * than policy_slots.
 */
static lc_batch *widen(generator *t, lc_batcher *bt, lc_batch *b, uint64_t row, unsigned n)
{
    unsigned w = 0;
    while ((1u << (WIDE_MIN_SHIFT + w)) < n || (1u << (WIDE_MIN_SHIFT + w)) <= slots_of(b))
        w++;
    lc_mutex_lock(&t->wide_mu);
    if (!t->wide_pool[w]) {
        make_layout(bt->stage->config, 1u << (WIDE_MIN_SHIFT + w), &t->wide_layout[w]);
        t->wide_pool[w] = lc_batch_pool_new(&t->wide_layout[w], 2);
    }
    lc_batch *wide = lc_batch_pool_get(t->wide_pool[w]);
    lc_mutex_unlock(&t->wide_mu);
    const lc_batch_layout *from = b->layout;
    unsigned k_from = slots_of(b), k_to = slots_of(wide);
    for (uint32_t i = 0; i < from->n_tensors; i++) {
        const uint8_t *src = lc_batch_tensor(b, i);
        uint8_t *dst = lc_batch_tensor(wide, i);
        if (i == 2 || i == 3) { /* the policy: rows of k_to slots, padded */
            size_t e = lc_dtype_size(from->tensors[i].dtype);
            for (uint64_t r = 0; r < row; r++) {
                memcpy(dst + r * k_to * e, src + r * k_from * e, k_from * e);
                for (unsigned j = k_from; j < k_to; j++)
                    memcpy(dst + (r * k_to + j) * e, src + (r * k_from + k_from - 1) * e, e);
            }
        } else {
            memcpy(dst, src, from->tensors[i].nbytes / from->batch_size * row);
        }
    }
    if (k_from == ((const generator_config *)bt->stage->config)->policy_slots)
        atomic_fetch_add(&t->n_widened, 1); /* batches, not widenings */
    lc_batch_free(b);
    return lc_batcher_replace(bt, wide);
}

/* Write frame f into the batcher's next row, reading it where it is, and
 * free it (its cell goes back: stages/items.h). */
static void put_row(generator *t, const generator_config *c, lc_batcher *bt, lc_frame *f)
{
    uint64_t row;
    lc_batch *b = lc_batcher_row(bt, &row);
    lc_batcher_note(bt, &f->origin);
    if (!c->packed) {
        fill_row(c, b, row, f);
    } else {
        if (f->n_policy > slots_of(b))
            b = widen(t, bt, b, row, f->n_policy);
        fill_packed_row(c, b, row, f);
    }
    lc_frame_cell_free(f);
}

/* Deterministic mode with several workers (stage.h's turns): each batch is
 * the next batch_size frames of the input, taken at once, and the batches
 * leave in the order their frames were taken: what one worker makes. */
static void worker_in_turns(lc_stage *s, lc_load_meter *meter)
{
    generator *t = s->priv;
    const generator_config *c = s->config;
    lc_batcher bt;
    lc_batcher_init(&bt, s, &t->sink, false);
    bt.turns = true;
    size_t want = (size_t)c->batch_size;
    lc_frame **frames = lc_xmalloc(want * sizeof *frames);
    bool last = false;
    while (!last && lc_run_state_check(&s->run, meter)) {
        size_t n = 0, got = 0;
        lc_stage_take_begin(s, meter);
        while (n < want && lc_queue_get_many(s->input, frames + n, want - n, &got, meter) == 0)
            n += got;
        uint64_t ticket = lc_stage_take_end(s);
        last = n < want; /* the input ended */
        for (size_t i = 0; i < n; i++) {
            if (i + 1 < n)
                lc_frame_cell_prefetch(frames[i + 1]);
            put_row(t, c, &bt, frames[i]);
            lc_batcher_commit(&bt, meter); /* in turns: never emits */
        }
        if (!lc_batcher_hand_on(&bt, ticket, last, meter))
            break;
    }
    free(frames);
    lc_batcher_finish(&bt, meter);
}

static void generator_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    generator *t = s->priv;
    const generator_config *c = s->config;
    if (lc_stage_in_turns(s)) {
        worker_in_turns(s, meter);
        return;
    }
    lc_batcher bt;
    lc_batcher_init(&bt, s, &t->sink, c->threads == 1);
    lc_stage_inbox ib;
    lc_stage_inbox_init(&ib, s->input, 64); /* frames a block */
    lc_frame *f;
    while (lc_run_state_check(&s->run, meter) && lc_stage_inbox_get(&ib, &f, NULL, meter) == 0) {
        /* The next frame's cell fetched while this one is read (items.h). */
        const void *next = lc_stage_inbox_peek(&ib, 0);
        if (next)
            lc_frame_cell_prefetch(*(lc_frame *const *)next);
        if (ib.stale) { /* a fresh request: the rows so far are of the past */
            ib.stale = false;
            lc_batcher_restart(&bt);
        }
        put_row(t, c, &bt, f);
        if (!lc_batcher_commit(&bt, meter))
            break;
    }
    lc_stage_inbox_fini(&ib);
    lc_batcher_finish(&bt, meter);
}

static int generator_init(lc_stage *s, lc_error *err)
{
    (void)err;
    generator *t = s->priv;
    const generator_config *c = s->config;
    make_layout(c, c->policy_slots, &t->layout);
    lc_batch_sink_init(&t->sink, &t->layout, c->threads);
    lc_mutex_init(&t->wide_mu);
    atomic_init(&t->n_widened, 0);
    return 0;
}

static void generator_fini(lc_stage *s)
{
    generator *t = s->priv;
    lc_batch_sink_fini(&t->sink);
    for (unsigned w = 0; w < WIDE_LAYOUTS; w++)
        lc_batch_pool_unref(t->wide_pool[w]); /* batches still out keep theirs */
    lc_mutex_destroy(&t->wide_mu);
}

static const lc_metric_info generator_metrics[] = {
    {"positions", "positions", LC_SHOW_RATE, 0, "positions/s", "pos/s", .role = LC_ROLE_POSITIONS,
     LC_METRIC_AT(generator, sink.n_rows)},
    {"batches", "batches", LC_METRIC_AT(generator, sink.n_batches)},
    /* 0 but with packed: true */
    {"widened_batches", "batches", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "widened", "wide",
     LC_METRIC_AT(generator, n_widened)},
    {0},
};

static unsigned generator_threads(const void *config)
{
    return ((const generator_config *)config)->threads;
}

const lc_stage_class lc_tensor_generator_class = {
    .type_name = "tensor_generator",
    .summary = "packs positions into tensor batches (current or legacy layout, dense or packed)",
    .input = &lc_item_frame,
    .output = &lc_item_batch,
    .priv_size = sizeof(generator),
    .worker = generator_worker,
    .threads = generator_threads,
    .workers = "workers",
    .settings = {generator_settings, sizeof(generator_config)},
    .config_check = generator_config_check,
    .init = generator_init,
    .fini = generator_fini,
    .metrics = generator_metrics,
};
