/*
 * tensor_generator, run standalone on frames made from hand-built V6 and V7
 * records: batch boundaries, sequence numbers and the end-of-stream flag,
 * the tensor names, dtypes and shapes of both layouts, every row against
 * the frame functions (lc_frame_input_planes, _policy, _values,
 * _legacy_targets) AND against a reference written here from
 * docs/lc0-training-data.md that reads the raw record bytes at the doc's
 * offsets, the zeroed tail of a partial last batch made from a recycled
 * buffer, and a stream of 50 batches whose buffers the consumer scribbles
 * over before freeing them (the pool must hand them back fully rewritten).
 */
#include "check.h"
#include "records.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/thread.h"
#include "format/batch.h"
#include "format/lc0/frame.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLICY 1858
#define PLANES 112
#define V6_SIZE 8356
#define V7_SIZE 8396
#define GET_TIMEOUT_NS (10ull * 1000000000ull)

/* ---- hand-built records, at the offsets of the doc ---- */

static uint8_t get_u8(const uint8_t *r, size_t off)
{
    return r[off];
}

static uint32_t get_u32(const uint8_t *r, size_t off)
{
    uint32_t v;
    memcpy(&v, r + off, 4);
    return v;
}

static uint64_t get_u64(const uint8_t *r, size_t off)
{
    uint64_t v;
    memcpy(&v, r + off, 8);
    return v;
}

static float get_f32(const uint8_t *r, size_t off)
{
    float v;
    memcpy(&v, r + off, 4);
    return v;
}

static uint64_t splitmix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static const uint32_t formats[] = {1, 2, 3, 4, 5, 132, 133};

static uint32_t version_of(int k)
{
    return k % 2 ? 7 : 6;
}

static size_t size_of_version(uint32_t v)
{
    return v == 7 ? V7_SIZE : V6_SIZE;
}

/*
 * Record k: every field depends on k so that rows are told apart. Its input
 * format cycles through every known one; record 3 has 100 legal entries (more
 * than a frame keeps inline); record 0 has chosen (q, d) pairs whose WDL is
 * exact in binary.
 */
static void make_record(uint8_t *r, int k)
{
    uint32_t version = version_of(k);
    memset(r, 0, size_of_version(version));
    uint32_t fmt = formats[k % 7];
    rec_put_u32(r, 0, version);
    rec_put_u32(r, 4, fmt);
    for (unsigned i = 0; i < POLICY; i++)
        rec_put_f32(r, 8 + 4 * i, -1.0f);
    unsigned n_legal = k == 3 ? 100 : 20 + (unsigned)k % 50;
    unsigned first = 0;
    for (unsigned j = 0; j < n_legal; j++) {
        unsigned idx = ((unsigned)k * 37 + j * 29) % POLICY; /* distinct: 29 is odd, not 929 */
        if (j == 0)
            first = idx;
        rec_put_f32(r, 8 + 4 * idx, (float)(k * 1000 + (int)j + 1) / 1048576.0f);
    }
    for (unsigned p = 0; p < 104; p++)
        rec_put_u64(r, 7440 + 8 * p, splitmix((uint64_t)k * 104 + p));
    if (fmt == 1) {
        rec_put_u8(r, 8272, (uint8_t)(k & 1));
        rec_put_u8(r, 8273, (uint8_t)((k >> 1) & 1));
        rec_put_u8(r, 8274, (uint8_t)((k >> 2) & 1));
        rec_put_u8(r, 8275, (uint8_t)((k >> 3) & 1));
    } else {
        rec_put_u8(r, 8272, (uint8_t)(1u << (k % 8)));
        rec_put_u8(r, 8273, (uint8_t)(0x80u >> (k % 8)));
        rec_put_u8(r, 8274, (uint8_t)((k * 13) & 0xff));
        rec_put_u8(r, 8275, (uint8_t)((k * 71) & 0xff));
    }
    rec_put_u8(r, 8276, fmt <= 2 ? (uint8_t)(k & 1) : (uint8_t)(1u << ((k / 7) % 8)));
    rec_put_u8(r, 8277, (uint8_t)(k % 100));
    rec_put_u8(r, 8278, (uint8_t)(((k / 7) % 2 ? 0x80 : 0) | (k & 7)));
    float base = (float)k / 256.0f;
    rec_put_f32(r, 8280, 0.01f + base);                    /* root_q */
    rec_put_f32(r, 8284, 0.02f + base);                    /* best_q */
    rec_put_f32(r, 8288, 0.03f + base);                    /* root_d */
    rec_put_f32(r, 8292, 0.04f + base);                    /* best_d */
    rec_put_f32(r, 8296, 5.0f + base);                     /* root_m */
    rec_put_f32(r, 8300, 6.0f + base);                     /* best_m */
    rec_put_f32(r, 8304, 7.0f + base);                     /* plies_left */
    rec_put_f32(r, 8308, 0.08f + base);                    /* result_q */
    rec_put_f32(r, 8312, 0.09f + base);                    /* result_d */
    rec_put_f32(r, 8316, 0.10f + base);                    /* played_q */
    rec_put_f32(r, 8320, 0.11f + base);                    /* played_d */
    rec_put_f32(r, 8324, 12.0f + base);                    /* played_m */
    rec_put_f32(r, 8328, k % 5 == 4 ? NAN : 0.13f + base); /* orig_q, NaN when unknown */
    rec_put_f32(r, 8332, 0.14f + base);                    /* orig_d */
    rec_put_f32(r, 8336, 15.0f + base);                    /* orig_m */
    rec_put_u32(r, 8340, 800 + (uint32_t)k);
    rec_put_u16(r, 8344, (uint16_t)first);
    rec_put_u16(r, 8346, (uint16_t)first);
    rec_put_f32(r, 8348, 0.5f);
    rec_put_f32(r, 8352, 0.17f + base); /* q_st */
    if (version == 7)
        rec_put_f32(r, 8356, 0.18f + base); /* d_st */
    if (k == 0) {
        rec_put_f32(r, 8308, 0.25f); /* result_q */
        rec_put_f32(r, 8312, 0.5f);  /* result_d */
        rec_put_f32(r, 8284, -0.5f); /* best_q */
        rec_put_f32(r, 8292, 0.25f); /* best_d */
    }
}

/* ---- the reference, from the doc, on raw record bytes ---- */

static void ref_planes(const uint8_t *r, float *out)
{
    for (unsigned p = 0; p < 104; p++) {
        uint64_t w = get_u64(r, 7440 + 8 * p);
        for (unsigned s = 0; s < 64; s++)
            out[64 * p + s] = (float)((w >> (s ^ 7)) & 1);
    }
    uint32_t fmt = get_u32(r, 4);
    uint8_t us_ooo = get_u8(r, 8272), us_oo = get_u8(r, 8273);
    uint8_t them_ooo = get_u8(r, 8274), them_oo = get_u8(r, 8275);
    uint8_t stm = get_u8(r, 8276), rule50 = get_u8(r, 8277), inv = get_u8(r, 8278);
    float *aux = out + 64 * 104;
    memset(aux, 0, 8 * 64 * sizeof(float));
    for (unsigned s = 0; s < 64; s++) {
        unsigned rank = s / 8, file = s % 8;
        if (fmt == 1) {
            aux[0 * 64 + s] = (float)us_ooo;
            aux[1 * 64 + s] = (float)us_oo;
            aux[2 * 64 + s] = (float)them_ooo;
            aux[3 * 64 + s] = (float)them_oo;
        } else {
            /* Rook-file masks: file f = bit f, ours on rank 1, theirs on 8. */
            if (rank == 0) {
                aux[0 * 64 + s] = (float)((us_ooo >> file) & 1);
                aux[1 * 64 + s] = (float)((us_oo >> file) & 1);
            } else if (rank == 7) {
                aux[0 * 64 + s] = (float)((them_ooo >> file) & 1);
                aux[1 * 64 + s] = (float)((them_oo >> file) & 1);
            }
        }
        if (fmt <= 2)
            aux[4 * 64 + s] = (float)stm;
        else if (rank == 7)
            aux[4 * 64 + s] = (float)((stm >> file) & 1); /* en-passant file mask */
        aux[5 * 64 + s] = (float)rule50 / (fmt <= 3 ? 99.0f : 100.0f);
        aux[6 * 64 + s] = (fmt == 132 || fmt == 133) && (inv & 0x80) ? 1.0f : 0.0f;
        aux[7 * 64 + s] = 1.0f;
    }
}

static void ref_policy(const uint8_t *r, float *out)
{
    memcpy(out, r + 8, 4 * POLICY);
}

static void ref_values(const uint8_t *r, float *out)
{
    const size_t off[17] = {8308, 8312, 8304, 8284, 8292, 8300, 8316, 8320, 8324,
                            8328, 8332, 8336, 8280, 8288, 8296, 8352, 0};
    for (unsigned i = 0; i < 16; i++)
        out[i] = get_f32(r, off[i]);
    out[16] = get_u32(r, 0) == 7 ? get_f32(r, 8356) : 0.0f; /* V6: upstream's 0.0 */
    out[17] = NAN;
}

/* As the legacy chunkparser: in double precision, rounded once. */
static void ref_wdl(float q, float d, float *out)
{
    out[0] = (float)(0.5 * (1.0 - (double)d + (double)q));
    out[1] = d;
    out[2] = (float)(0.5 * (1.0 - (double)d - (double)q));
}

/* ---- comparison ---- */

static bool same_f32(float a, float b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y;
}

/* Count differing floats; print the first. */
static int diff_f32(const char *what, int batch, uint64_t row, const float *got, const float *want,
                    size_t n)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (same_f32(got[i], want[i]))
            continue;
        if (bad++ == 0)
            fprintf(stderr, "batch %d row %llu %s[%zu]: got %.9g, want %.9g\n", batch,
                    (unsigned long long)row, what, i, got[i], want[i]);
    }
    return bad;
}

typedef enum { CURRENT, LEGACY } layout_kind;

typedef struct fixture {
    layout_kind layout;
    int n;            /* records */
    uint8_t **recs;   /* raw records, V6 or V7 */
    lc_frame *frames; /* frames of them, kept for the expected values */
} fixture;

static void fixture_init(fixture *fx, layout_kind layout, int n)
{
    fx->layout = layout;
    fx->n = n;
    fx->recs = calloc((size_t)n, sizeof *fx->recs);
    fx->frames = calloc((size_t)n, sizeof *fx->frames);
    for (int k = 0; k < n; k++) {
        fx->recs[k] = malloc(V7_SIZE);
        make_record(fx->recs[k], k);
        lc_error err;
        lc_error_clear(&err);
        CHECK_OK(lc_frame_from_record(fx->recs[k], version_of(k), &fx->frames[k], &err));
    }
}

static void fixture_fini(fixture *fx)
{
    for (int k = 0; k < fx->n; k++) {
        free(fx->recs[k]);
        lc_frame_fini(&fx->frames[k]);
    }
    free(fx->recs);
    free(fx->frames);
}

static void put_frame(lc_queue *in, const fixture *fx, int k)
{
    CHECK_OK(lc_standalone_put_frame(in, &fx->frames[k]));
}

static lc_stage *new_generator(layout_kind layout, unsigned batch_size, lc_queue *in,
                               size_t out_capacity)
{
    char yaml[128];
    snprintf(yaml, sizeof yaml, "batch_size: %u\nlayout: %s\nthreads: 1\n", batch_size,
             layout == CURRENT ? "current" : "legacy");
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_standalone_new(lc_stage_class_find("tensor_generator"), "tensors", yaml, in,
                          out_capacity, NULL, &s, &err) != 0) {
        fprintf(stderr, "tensor_generator: %s\n", err.msg);
        exit(2);
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    return s;
}

static int get_batch(lc_stage *s, lc_batch_item *item)
{
    return lc_queue_get_until(s->output, item, NULL, lc_now_ns() + GET_TIMEOUT_NS);
}

/* Names, dtypes and shapes exactly as the doc gives them. */
static void check_layout(const lc_batch *b, layout_kind layout, uint64_t bs)
{
    const lc_batch_layout *l = b->layout;
    CHECK_EQ_U64(l->batch_size, bs);
    if (layout == CURRENT) {
        CHECK_EQ_INT(l->n_tensors, 3);
        if (l->n_tensors != 3)
            return;
        CHECK_EQ_STR(l->tensors[0].name, "inputs");
        CHECK_EQ_STR(l->tensors[1].name, "policy");
        CHECK_EQ_STR(l->tensors[2].name, "values");
    } else {
        CHECK_EQ_INT(l->n_tensors, 5);
        if (l->n_tensors != 5)
            return;
        CHECK_EQ_STR(l->tensors[0].name, "planes");
        CHECK_EQ_STR(l->tensors[1].name, "probs");
        CHECK_EQ_STR(l->tensors[2].name, "winner");
        CHECK_EQ_STR(l->tensors[3].name, "best_q");
        CHECK_EQ_STR(l->tensors[4].name, "plies_left");
    }
    for (uint32_t i = 0; i < l->n_tensors; i++) {
        CHECK_EQ_INT(l->tensors[i].dtype, LC_DTYPE_F32);
        CHECK_EQ_STR(lc_dtype_name(l->tensors[i].dtype), "float32");
        CHECK_EQ_U64(l->tensors[i].shape[0], bs);
        CHECK_EQ_U64(l->tensors[i].offset % 64, 0);
    }
    const lc_tensor_desc *t = l->tensors;
    CHECK_EQ_INT(t[0].ndim, 4);
    CHECK_EQ_U64(t[0].shape[1], 112);
    CHECK_EQ_U64(t[0].shape[2], 8);
    CHECK_EQ_U64(t[0].shape[3], 8);
    CHECK_EQ_U64(t[0].nbytes, bs * 112 * 64 * 4);
    CHECK_EQ_INT(t[1].ndim, 2);
    CHECK_EQ_U64(t[1].shape[1], 1858);
    CHECK_EQ_U64(t[1].nbytes, bs * 1858 * 4);
    if (layout == CURRENT) {
        CHECK_EQ_INT(t[2].ndim, 3);
        CHECK_EQ_U64(t[2].shape[1], 6);
        CHECK_EQ_U64(t[2].shape[2], 3);
        CHECK_EQ_U64(t[2].nbytes, bs * 18 * 4);
    } else {
        CHECK_EQ_INT(t[2].ndim, 2);
        CHECK_EQ_U64(t[2].shape[1], 3);
        CHECK_EQ_INT(t[3].ndim, 2);
        CHECK_EQ_U64(t[3].shape[1], 3);
        CHECK_EQ_INT(t[4].ndim, 1);
        CHECK_EQ_U64(t[4].nbytes, bs * 4);
    }
}

/* Row `row` of batch b holds frame k: against the frame functions and the
 * reference. Returns the number of differing floats. */
static int check_row(lc_batch *b, int batch, uint64_t row, const fixture *fx, int k)
{
    static float want_planes[PLANES * 64], ref_pl[PLANES * 64];
    float want_policy[POLICY], ref_pol[POLICY];
    const lc_frame *f = &fx->frames[k];
    const uint8_t *r = fx->recs[k];
    int bad = 0;
    const float *planes = (const float *)lc_batch_tensor(b, 0) + row * PLANES * 64;
    const float *policy = (const float *)lc_batch_tensor(b, 1) + row * POLICY;
    lc_frame_input_planes(f, want_planes);
    ref_planes(r, ref_pl);
    bad += diff_f32("planes(frame fn)", batch, row, planes, want_planes, PLANES * 64);
    bad += diff_f32("planes(doc)", batch, row, planes, ref_pl, PLANES * 64);
    lc_frame_policy(f, want_policy);
    ref_policy(r, ref_pol);
    bad += diff_f32("policy(frame fn)", batch, row, policy, want_policy, POLICY);
    bad += diff_f32("policy(doc)", batch, row, policy, ref_pol, POLICY);
    if (fx->layout == CURRENT) {
        float want[18], ref[18];
        const float *values = (const float *)lc_batch_tensor(b, 2) + row * 18;
        lc_frame_values(f, want);
        ref_values(r, ref);
        bad += diff_f32("values(frame fn)", batch, row, values, want, 18);
        bad += diff_f32("values(doc)", batch, row, values, ref, 18);
    } else {
        float w[3], bq[3], pl, rw[3], rbq[3];
        lc_frame_legacy_targets(f, w, bq, &pl);
        ref_wdl(get_f32(r, 8308), get_f32(r, 8312), rw);
        ref_wdl(get_f32(r, 8284), get_f32(r, 8292), rbq);
        float rpl = get_f32(r, 8304);
        const float *winner = (const float *)lc_batch_tensor(b, 2) + row * 3;
        const float *best_q = (const float *)lc_batch_tensor(b, 3) + row * 3;
        const float *plies = (const float *)lc_batch_tensor(b, 4) + row;
        bad += diff_f32("winner(frame fn)", batch, row, winner, w, 3);
        bad += diff_f32("winner(doc)", batch, row, winner, rw, 3);
        bad += diff_f32("best_q(frame fn)", batch, row, best_q, bq, 3);
        bad += diff_f32("best_q(doc)", batch, row, best_q, rbq, 3);
        bad += diff_f32("plies_left(frame fn)", batch, row, plies, &pl, 1);
        bad += diff_f32("plies_left(doc)", batch, row, plies, &rpl, 1);
    }
    return bad;
}

/* Spot checks by hand, from the doc, of batch b's row 0 = record 0 (V6,
 * format 1, result (0.25, 0.5), best (-0.5, 0.25)) and row 1 = record 1 (V7,
 * format 2, rule50 1). */
static void spot_check_first_batch(lc_batch *b, layout_kind layout)
{
    const float *planes = lc_batch_tensor(b, 0);
    for (unsigned row = 0; row < 2; row++)
        for (unsigned s = 0; s < 64; s++)
            CHECK(planes[row * PLANES * 64 + 111 * 64 + s] == 1.0f);
    /* Record 0: rule50 0, format 1: plane 109 zero, 110 zero. */
    CHECK(planes[109 * 64 + 5] == 0.0f);
    CHECK(planes[110 * 64 + 5] == 0.0f);
    /* Record 1: format 2, rule50 1 over 99; us_ooo = 1 << 1: b1 only on
     * rank 1 of plane 104 (square 1); them_ooo = 13 = files a, c, d on rank 8. */
    const float *p1 = planes + PLANES * 64;
    CHECK(p1[109 * 64 + 63] == 1.0f / 99.0f);
    for (unsigned s = 0; s < 8; s++)
        CHECK(p1[104 * 64 + s] == (s == 1 ? 1.0f : 0.0f));
    for (unsigned s = 8; s < 56; s++)
        CHECK(p1[104 * 64 + s] == 0.0f);
    CHECK(p1[104 * 64 + 56] == 1.0f);
    CHECK(p1[104 * 64 + 57] == 0.0f);
    CHECK(p1[104 * 64 + 58] == 1.0f);
    CHECK(p1[104 * 64 + 59] == 1.0f);
    CHECK(p1[104 * 64 + 60] == 0.0f);
    /* Plane 0 square 0 of record 0 is bit 7 of its first plane word. */
    uint64_t w0 = splitmix(0);
    CHECK(planes[0] == (float)((w0 >> 7) & 1));
    CHECK(planes[63] == (float)((w0 >> 56) & 1));
    const float *policy = lc_batch_tensor(b, 1);
    /* Record 0's first legal entry is index 0 with 1/2^20; index 1 is -1. */
    CHECK(policy[0] == 1.0f / 1048576.0f);
    CHECK(policy[1] == -1.0f);
    if (layout == CURRENT) {
        const float *v = lc_batch_tensor(b, 2);
        CHECK(v[0] == 0.25f && v[1] == 0.5f && v[2] == 7.0f);
        CHECK(v[3] == -0.5f && v[4] == 0.25f && v[5] == 6.0f);
        CHECK(v[16] == 0.0f); /* V6: no d_st, upstream's 0.0 */
        CHECK(isnan(v[17]));
        CHECK(!isnan(v[18 + 16])); /* V7 d_st */
        CHECK(v[18 + 16] == 0.18f + 1.0f / 256.0f);
        CHECK(isnan(v[18 + 17]));
    } else {
        const float *winner = lc_batch_tensor(b, 2);
        const float *best_q = lc_batch_tensor(b, 3);
        const float *plies = lc_batch_tensor(b, 4);
        /* W = (1 - d + q) / 2, D = d, L = (1 - d - q) / 2 */
        CHECK(winner[0] == 0.375f && winner[1] == 0.5f && winner[2] == 0.125f);
        CHECK(best_q[0] == 0.125f && best_q[1] == 0.25f && best_q[2] == 0.625f);
        CHECK(plies[0] == 7.0f);
    }
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* The consumer owns a batch until it frees it: scribble over all of it, so
 * that a recycled buffer that is not fully rewritten shows. */
static void scribble_and_free(lc_batch *b)
{
    memset(b->data, 0xA5, b->layout->total_bytes);
    lc_batch_free(b);
}

/* 10 frames, batch size 4, all queued at once: 3 batches (4, 4, 2 rows). */
static void test_ten_frames(layout_kind layout)
{
    fixture fx;
    fixture_init(&fx, layout, 10);
    lc_queue *in = lc_queue_new("in", &lc_item_frame, 64, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_generator(layout, 4, in, 16);
    for (int k = 0; k < 10; k++)
        put_frame(in, &fx, k);
    lc_queue_close(in);
    const uint64_t want_rows[3] = {4, 4, 2};
    int k = 0;
    for (int i = 0; i < 3; i++) {
        lc_batch_item item;
        int rc = get_batch(s, &item);
        CHECK_OK(rc);
        if (rc != 0)
            break;
        CHECK_EQ_U64(item.seq, (uint64_t)i);
        CHECK_EQ_U64(item.batch->rows, want_rows[i]);
        CHECK_EQ_INT(item.flags, i == 2 ? LC_ITEM_END_OF_STREAM : 0);
        check_layout(item.batch, layout, 4);
        if (i == 0)
            spot_check_first_batch(item.batch, layout);
        for (uint64_t r = 0; r < item.batch->rows && k < 10; r++, k++)
            CHECK_EQ_INT(check_row(item.batch, i, r, &fx, k), 0);
        if (i == 2) {
            const lc_batch_layout *l = item.batch->layout;
            for (uint32_t t = 0; t < l->n_tensors; t++) {
                uint64_t row_bytes = l->tensors[t].nbytes / 4;
                CHECK(all_zero((uint8_t *)lc_batch_tensor(item.batch, t) + 2 * row_bytes,
                               2 * row_bytes));
            }
        }
        lc_batch_free(item.batch);
    }
    CHECK_EQ_INT(k, 10);
    lc_batch_item extra;
    CHECK_EQ_INT(get_batch(s, &extra), LC_ECLOSED);
    lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    const lc_metric_slot *nb = lc_metrics_find(&m, "batches");
    const lc_metric_slot *np = lc_metrics_find(&m, "positions");
    CHECK(nb && nb->count == 3);
    CHECK(np && np->count == 10);
    lc_standalone_free(s);
    lc_queue_free(in);
    fixture_fini(&fx);
}

/* The partial last batch comes from a recycled buffer that the consumer
 * filled with junk: its unused rows must still be zero. */
static void test_partial_batch_recycled(layout_kind layout)
{
    fixture fx;
    fixture_init(&fx, layout, 10);
    lc_queue *in = lc_queue_new("in", &lc_item_frame, 64, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_generator(layout, 4, in, 16);
    /* A full batch leaves when the next frame arrives (so that the last one
     * of a run can be flagged): the ninth frame releases the second batch. */
    for (int k = 0; k < 9; k++)
        put_frame(in, &fx, k);
    for (int i = 0; i < 2; i++) {
        lc_batch_item item;
        int rc = get_batch(s, &item);
        CHECK_OK(rc);
        if (rc != 0)
            continue;
        CHECK_EQ_U64(item.seq, (uint64_t)i);
        CHECK_EQ_INT(item.flags, 0);
        for (uint64_t r = 0; r < 4; r++)
            CHECK_EQ_INT(check_row(item.batch, i, r, &fx, 4 * i + (int)r), 0);
        scribble_and_free(item.batch);
    }
    put_frame(in, &fx, 9);
    lc_queue_close(in);
    lc_batch_item item;
    int rc = get_batch(s, &item);
    CHECK_OK(rc);
    if (rc == 0) {
        CHECK_EQ_U64(item.seq, 2);
        CHECK_EQ_U64(item.batch->rows, 2);
        CHECK_EQ_INT(item.flags, LC_ITEM_END_OF_STREAM);
        CHECK_EQ_INT(check_row(item.batch, 2, 0, &fx, 8), 0);
        CHECK_EQ_INT(check_row(item.batch, 2, 1, &fx, 9), 0);
        const lc_batch_layout *l = item.batch->layout;
        for (uint32_t t = 0; t < l->n_tensors; t++) {
            uint64_t row_bytes = l->tensors[t].nbytes / 4;
            CHECK(
                all_zero((uint8_t *)lc_batch_tensor(item.batch, t) + 2 * row_bytes, 2 * row_bytes));
        }
        lc_batch_free(item.batch);
    }
    CHECK_EQ_INT(get_batch(s, &item), LC_ECLOSED);
    lc_standalone_free(s);
    lc_queue_free(in);
    fixture_fini(&fx);
}

/* ---- a stream of 50 batches through a small output queue ---- */

#define STREAM_BATCHES 50
#define STREAM_BS 4

typedef struct feeder {
    lc_queue *in;
    const fixture *fx;
    int n;
} feeder;

static void *feed(void *arg)
{
    feeder *fd = arg;
    for (int k = 0; k < fd->n; k++)
        put_frame(fd->in, fd->fx, k);
    lc_queue_close(fd->in);
    return NULL;
}

/* Frames are fed by a thread while this one reads each batch, checks every
 * row, scribbles over the buffer and frees it. With an output queue of 2,
 * buffers must come back from the pool; each must still be right. */
static void run_stream(layout_kind layout, int n_frames, int *out_batches, uint32_t *last_flags)
{
    fixture fx;
    fixture_init(&fx, layout, n_frames);
    lc_queue *in = lc_queue_new("in", &lc_item_frame, 8, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_generator(layout, STREAM_BS, in, 2);
    feeder fd = {.in = in, .fx = &fx, .n = n_frames};
    lc_thread t;
    lc_thread_start(&t, "test-feeder", feed, &fd);
    uint8_t *seen[STREAM_BATCHES * 2];
    int n_seen = 0, distinct = 0, k = 0, nb = 0;
    *last_flags = 0xFFFFFFFFu;
    lc_batch_item item;
    while (get_batch(s, &item) == 0) {
        CHECK_EQ_U64(item.seq, (uint64_t)nb);
        uint64_t want_rows =
            (uint64_t)(n_frames - k) < STREAM_BS ? (uint64_t)(n_frames - k) : STREAM_BS;
        CHECK_EQ_U64(item.batch->rows, want_rows);
        for (uint64_t r = 0; r < item.batch->rows && k < n_frames; r++, k++)
            CHECK_EQ_INT(check_row(item.batch, nb, r, &fx, k), 0);
        bool known = false;
        for (int i = 0; i < n_seen; i++)
            known = known || seen[i] == item.batch->data;
        if (!known && n_seen < (int)(sizeof seen / sizeof seen[0])) {
            seen[n_seen++] = item.batch->data;
            distinct++;
        }
        *last_flags = item.flags;
        scribble_and_free(item.batch);
        nb++;
    }
    lc_thread_join(&t);
    CHECK_EQ_INT(k, n_frames);
    /* Recycled: far fewer buffers than batches. */
    CHECK(distinct < 10);
    *out_batches = nb;
    lc_standalone_free(s);
    lc_queue_free(in);
    fixture_fini(&fx);
}

static void test_stream(layout_kind layout)
{
    int nb;
    uint32_t last;
    /* 50 batches, the last one partial (2 rows). */
    run_stream(layout, (STREAM_BATCHES - 1) * STREAM_BS + 2, &nb, &last);
    CHECK_EQ_INT(nb, STREAM_BATCHES);
    CHECK_EQ_INT(last, LC_ITEM_END_OF_STREAM);
}

/*
 * A finite run whose frame count is a multiple of the batch size: the last
 * batch is full, and it is still the last one of the run, so it must carry
 * LC_ITEM_END_OF_STREAM (items.h: "on the last one of a finite run"; the
 * fifo writer turns it into the stream's last-batch flag).
 */
static void test_end_flag_on_full_last_batch(void)
{
    int nb;
    uint32_t last;
    run_stream(CURRENT, STREAM_BATCHES * STREAM_BS, &nb, &last);
    CHECK_EQ_INT(nb, STREAM_BATCHES);
    CHECK_EQ_INT(last, LC_ITEM_END_OF_STREAM);
}

/* ---- packed batches ---- */

/* The dense layout of batch size bs, as check_row reads it. */
static void dense_layout(layout_kind layout, uint64_t bs, lc_batch_layout *l)
{
    const uint64_t planes[3] = {PLANES, 8, 8}, policy[1] = {POLICY}, values[2] = {6, 3},
                   wdl[1] = {3};
    lc_batch_layout_init(l, bs);
    lc_batch_layout_add(l, layout == CURRENT ? "inputs" : "planes", LC_DTYPE_F32, 3, planes);
    lc_batch_layout_add(l, layout == CURRENT ? "policy" : "probs", LC_DTYPE_F32, 1, policy);
    if (layout == CURRENT) {
        lc_batch_layout_add(l, "values", LC_DTYPE_F32, 2, values);
    } else {
        lc_batch_layout_add(l, "winner", LC_DTYPE_F32, 1, wdl);
        lc_batch_layout_add(l, "best_q", LC_DTYPE_F32, 1, wdl);
        lc_batch_layout_add(l, "plies_left", LC_DTYPE_F32, 0, NULL);
    }
}

/* Expand row `row` of packed batch p into row `row` of dense batch d, by the
 * rule docs/batch-stream.md gives for "lc0-packed-1", written here from the
 * doc: square 8 * rank + file of plane q is bit 7 - file of byte
 * bits[q][rank], times aux[q - 104] from plane 104 on; the policy is -1
 * with val[k] written at idx[k] for every slot. */
static void expand_row(const lc_batch *p, uint64_t row, lc_batch *d)
{
    const lc_batch_layout *l = p->layout;
    uint64_t k = l->tensors[2].shape[1];
    const uint8_t *bits = (const uint8_t *)lc_batch_tensor((lc_batch *)p, 0) + row * PLANES * 8;
    const float *aux = (const float *)lc_batch_tensor((lc_batch *)p, 1) + row * 8;
    const uint16_t *idx = (const uint16_t *)lc_batch_tensor((lc_batch *)p, 2) + row * k;
    const float *val = (const float *)lc_batch_tensor((lc_batch *)p, 3) + row * k;
    float *planes = (float *)lc_batch_tensor(d, 0) + row * PLANES * 64;
    float *policy = (float *)lc_batch_tensor(d, 1) + row * POLICY;
    for (unsigned q = 0; q < PLANES; q++)
        for (unsigned sq = 0; sq < 64; sq++) {
            float bit = (float)((bits[8 * q + sq / 8] >> (7 - sq % 8)) & 1);
            planes[64 * q + sq] = q < 104 ? bit : bit * aux[q - 104];
        }
    for (unsigned i = 0; i < POLICY; i++)
        policy[i] = -1.0f;
    for (uint64_t j = 0; j < k; j++) {
        CHECK(idx[j] < POLICY);
        if (idx[j] < POLICY)
            policy[idx[j]] = val[j];
    }
    /* The targets travel as they are. */
    for (uint32_t t = 4; t < l->n_tensors; t++) {
        uint64_t row_bytes = l->tensors[t].nbytes / l->batch_size;
        memcpy((uint8_t *)lc_batch_tensor(d, t - 2) + row * row_bytes,
               (const uint8_t *)lc_batch_tensor((lc_batch *)p, t) + row * row_bytes, row_bytes);
    }
}

/* Names, dtypes and shapes of a packed batch; its policy slots. */
static uint64_t check_packed_layout(const lc_batch *b, layout_kind layout, uint64_t bs)
{
    const lc_batch_layout *l = b->layout;
    CHECK_EQ_STR(l->name, layout == CURRENT ? "lc0-current-packed" : "lc0-legacy-packed");
    CHECK_EQ_STR(l->expand, LC_EXPAND_LC0);
    CHECK_EQ_INT(l->n_tensors, layout == CURRENT ? 5 : 7);
    if (l->n_tensors < 5)
        return 0;
    const char *base = layout == CURRENT ? "inputs" : "planes";
    const char *pol = layout == CURRENT ? "policy" : "probs";
    char want[64];
    snprintf(want, sizeof want, "%s_bits", base);
    CHECK_EQ_STR(l->tensors[0].name, want);
    snprintf(want, sizeof want, "%s_aux", base);
    CHECK_EQ_STR(l->tensors[1].name, want);
    snprintf(want, sizeof want, "%s_idx", pol);
    CHECK_EQ_STR(l->tensors[2].name, want);
    snprintf(want, sizeof want, "%s_val", pol);
    CHECK_EQ_STR(l->tensors[3].name, want);
    CHECK_EQ_INT(l->tensors[0].dtype, LC_DTYPE_U8);
    CHECK_EQ_U64(l->tensors[0].nbytes, bs * PLANES * 8);
    CHECK_EQ_INT(l->tensors[1].dtype, LC_DTYPE_F32);
    CHECK_EQ_U64(l->tensors[1].nbytes, bs * 8 * 4);
    CHECK_EQ_INT(l->tensors[2].dtype, LC_DTYPE_U16);
    CHECK_EQ_INT(l->tensors[3].dtype, LC_DTYPE_F32);
    CHECK_EQ_U64(l->tensors[2].shape[1], l->tensors[3].shape[1]);
    return l->tensors[2].shape[1];
}

/*
 * Packed batches, expanded here, equal the dense rows the frames give, for
 * every input format, V6 and V7, both layouts, through recycled buffers the
 * consumer scribbles over. policy_slots 48: frames with more entries (up to
 * 69, and record 3's 100) widen their batch to 128 slots, and the
 * batch after a wide one is back to 48.
 */
static void test_packed(layout_kind layout)
{
    const int n = 200;
    const uint64_t bs = 4;
    fixture fx;
    fixture_init(&fx, layout, n);
    lc_queue *in = lc_queue_new("in", &lc_item_frame, 8, LC_OVERFLOW_BLOCK);
    char yaml[160];
    snprintf(yaml, sizeof yaml,
             "batch_size: %llu\nlayout: %s\nthreads: 1\npacked: true\npolicy_slots: 48\n",
             (unsigned long long)bs, layout == CURRENT ? "current" : "legacy");
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_new(lc_stage_class_find("tensor_generator"), "tensors", yaml, in, 2,
                               NULL, &s, &err));
    if (!s) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    feeder fd = {.in = in, .fx = &fx, .n = n};
    lc_thread t;
    lc_thread_start(&t, "test-feeder", feed, &fd);
    lc_batch_layout dl;
    dense_layout(layout, bs, &dl);
    lc_batch *dense = lc_batch_new(&dl);
    fixture dense_fx = fx; /* check_row reads fx.layout */
    int k = 0, nb = 0, widened = 0, narrow_after_wide = 0;
    uint64_t prev_slots = 48;
    lc_batch_item item;
    while (get_batch(s, &item) == 0) {
        uint64_t slots = check_packed_layout(item.batch, layout, bs);
        unsigned most = 0;
        for (uint64_t r = 0; r < item.batch->rows && k + (int)r < n; r++)
            if (fx.frames[k + r].n_policy > most)
                most = fx.frames[k + r].n_policy;
        /* 48, or the widened layouts' 128 (the next power of two, at least 128). */
        CHECK_EQ_U64(slots, most <= 48 ? 48 : 128);
        widened += slots != 48;
        narrow_after_wide += slots == 48 && prev_slots != 48;
        prev_slots = slots;
        dense->rows = item.batch->rows;
        for (uint64_t r = 0; r < item.batch->rows && k < n; r++, k++) {
            expand_row(item.batch, r, dense);
            CHECK_EQ_INT(check_row(dense, nb, r, &dense_fx, k), 0);
        }
        scribble_and_free(item.batch);
        nb++;
    }
    lc_thread_join(&t);
    CHECK_EQ_INT(k, n);
    CHECK_EQ_INT(nb, n / (int)bs);
    CHECK(widened > 0);
    CHECK(narrow_after_wide > 0);
    lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    const lc_metric_slot *w = lc_metrics_find(&m, "widened_batches");
    CHECK(w && w->count == (uint64_t)widened);
    lc_batch_free(dense);
    lc_standalone_free(s);
    lc_queue_free(in);
    fixture_fini(&fx);
}

/* policy_slots is checked, and only taken with packed: true. */
static void test_packed_config(void)
{
    const char *bad[] = {
        "batch_size: 4\npolicy_slots: 48\n",
        "batch_size: 4\npacked: true\npolicy_slots: 0\n",
        "batch_size: 4\npacked: true\npolicy_slots: 1859\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lc_stage *s = NULL;
        lc_error err;
        lc_error_clear(&err);
        lc_queue *in = lc_queue_new("in", &lc_item_frame, 8, LC_OVERFLOW_BLOCK);
        int rc = lc_standalone_new(lc_stage_class_find("tensor_generator"), "tensors", bad[i], in,
                                   2, NULL, &s, &err);
        CHECK(rc != 0);
        CHECK(strstr(err.msg, "policy_slots") != NULL);
        if (s)
            lc_standalone_free(s);
        lc_queue_free(in);
    }
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    for (int layout = CURRENT; layout <= LEGACY; layout++) {
        test_ten_frames((layout_kind)layout);
        test_partial_batch_recycled((layout_kind)layout);
        test_stream((layout_kind)layout);
        test_packed((layout_kind)layout);
    }
    test_packed_config();
    test_end_flag_on_full_last_batch();
    return check_finish();
}
