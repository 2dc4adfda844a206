/*
 * tensor_generator's `planes: upstream`: planes 104..111 as upstream's
 * current loader writes them, whatever the input format, checked against
 * values worked out by hand from hand-built V6 records:
 * - format 3 (castling as rook-file masks, en passant in byte 8276): every
 *   plane 104..111 constant, the bytes as floats (1, 128, 129, 4, 16),
 *   rule50 50 / 99, zero, one; lcmon's default planes of the same record
 *   for contrast (masks on ranks 1 and 8);
 * - format 133 with the invariance bit: plane 110 zero and rule50 / 99
 *   (lcmon's: ones and / 100);
 * - format 1: the same 112 planes both ways;
 * - dense and packed (expanded here by hand: bit times aux) agree, and the
 *   history planes 0..103 are the record's;
 * - planes: upstream with layout: legacy is refused.
 */
#include "check.h"
#include "testutil.h"

#include "core/clock.h"
#include "format/batch.h"
#include "format/lc0/frame.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V6_SIZE 8356
#define PLANE_FLOATS (LC_INPUT_PLANES * 64)

static void put_u32(uint8_t *r, size_t off, uint32_t v)
{
    memcpy(r + off, &v, 4);
}

static void put_f32(uint8_t *r, size_t off, float v)
{
    memcpy(r + off, &v, 4);
}

/* A V6 record of input format fmt at the doc's offsets: one legal move,
 * distinct history planes, the given castling, side-to-move-or-en-passant,
 * rule50 and invariance bytes. */
static lc_frame frame_of(uint32_t fmt, const uint8_t castling[4], uint8_t stm, uint8_t rule50,
                         uint8_t invariance)
{
    uint8_t *r = calloc(1, V6_SIZE);
    put_u32(r, 0, 6);
    put_u32(r, 4, fmt);
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        put_f32(r, 8 + 4 * i, i == 100 ? 1.0f : -1.0f);
    for (unsigned p = 0; p < LC_HISTORY_PLANES; p++) {
        uint64_t w = 0x9E3779B97F4A7C15ull * (p + 1);
        memcpy(r + 7440 + 8 * p, &w, 8);
    }
    memcpy(r + 8272, castling, 4);
    r[8276] = stm;
    r[8277] = rule50;
    r[8278] = invariance;
    put_f32(r, 8308, 1.0f); /* result_q */
    lc_frame f;
    CHECK_OK(lc_frame_from_record(r, 6, &f, NULL));
    free(r);
    return f;
}

/* Run one frame through a tensor_generator of batch size 1; the batch's
 * planes tensor as 112 x 64 floats into out (packed batches expanded here:
 * a square is its bit times the plane's aux value, 1 for planes 0..103). */
static void planes_through(const char *settings, bool packed, const lc_frame *f, float *out)
{
    char yaml[256];
    snprintf(yaml, sizeof yaml, "batch_size: 1\nlayout: current\n%s%s", settings,
             packed ? "packed: true\n" : "");
    lc_queue *in = lc_queue_new("in", &lc_item_frame, 4, LC_OVERFLOW_BLOCK);
    lc_stage *s = NULL;
    lc_error err;
    if (lc_standalone_new(lc_stage_class_find("tensor_generator"), "tensors", yaml, in, 4, NULL, &s,
                          &err) != 0) {
        fprintf(stderr, "tensor_generator: %s\n", err.msg);
        exit(2);
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    lc_frame copy;
    lc_frame_copy(&copy, f);
    CHECK_OK(lc_queue_put(in, &copy, NULL));
    lc_queue_close(in); /* the stage takes frames in blocks: the end lets it go */
    lc_batch_item item;
    CHECK_OK(lc_queue_get_until(s->output, &item, NULL, lc_now_ns() + 30000000000ull));
    lc_batch *b = item.batch;
    if (!packed) {
        memcpy(out, lc_batch_tensor(b, 0), PLANE_FLOATS * sizeof(float));
    } else {
        const uint8_t *bits = lc_batch_tensor(b, 0);
        const float *aux = lc_batch_tensor(b, 1);
        for (unsigned p = 0; p < LC_INPUT_PLANES; p++)
            for (unsigned sq = 0; sq < 64; sq++) {
                float bit = (float)((bits[8 * p + sq / 8] >> (7 - sq % 8)) & 1);
                out[64 * p + sq] = p < LC_HISTORY_PLANES ? bit : bit * aux[p - LC_HISTORY_PLANES];
            }
    }
    lc_item_batch.dispose(&item);
    lc_standalone_stop(s);
    lc_standalone_free(s);
    lc_queue_free(in);
}

/* Plane p is v on every square. */
static void check_constant(const float *planes, unsigned p, float v, const char *what)
{
    for (unsigned sq = 0; sq < 64; sq++)
        if (planes[64 * p + sq] != v) {
            fprintf(stderr, "%s: plane %u square %u is %g, want %g\n", what, p, sq,
                    planes[64 * p + sq], v);
            CHECK(!"a plane differs");
            return;
        }
}

/* Planes 0..103: the record's words, square s = bit s ^ 7. */
static void check_history(const float *planes, const lc_frame *f)
{
    for (unsigned p = 0; p < LC_HISTORY_PLANES; p++)
        for (unsigned sq = 0; sq < 64; sq++)
            CHECK_EQ_INT((int)planes[64 * p + sq], (int)((f->planes[p] >> (sq ^ 7)) & 1));
}

/* planes: upstream, dense and packed: the history planes are the record's
 * and planes 104..111 the constants want[0..7]. */
static void check_upstream(const lc_frame *f, const float want[8], const char *what)
{
    float *got = malloc(PLANE_FLOATS * sizeof(float));
    for (int packed = 0; packed < 2; packed++) {
        char name[64];
        snprintf(name, sizeof name, "%s upstream%s", what, packed ? ", packed" : "");
        planes_through("planes: upstream\n", packed, f, got);
        check_history(got, f);
        for (unsigned i = 0; i < 8; i++)
            check_constant(got, 104 + i, want[i], name);
    }
    free(got);
}

static void test_format3(void)
{
    /* us_ooo a-file rook, us_oo h-file, them_ooo both, them_oo c-file;
     * en passant on the e-file (0x10); rule50 50: the bytes as floats. */
    const uint8_t castling[4] = {0x01, 0x80, 0x81, 0x04};
    lc_frame f = frame_of(3, castling, 0x10, 50, 0x03);
    const float want[8] = {1.0f, 128.0f, 129.0f, 4.0f, 16.0f, 50.0f / 99.0f, 0.0f, 1.0f};
    check_upstream(&f, want, "format 3");
    /* lcmon's own, for contrast: 104 is us_ooo's a1 and them_ooo's a8 and
     * h8; 108 the en-passant file on rank 8 (e8); rule50 / 99 (format 3). */
    float *got = malloc(PLANE_FLOATS * sizeof(float));
    planes_through("", false, &f, got);
    for (unsigned sq = 0; sq < 64; sq++) {
        CHECK_EQ_INT((int)got[64 * 104 + sq], sq == 0 || sq == 56 || sq == 63);
        CHECK_EQ_INT((int)got[64 * 108 + sq], sq == 60);
    }
    check_constant(got, 109, 50.0f / 99.0f, "format 3 input_format");
    free(got);
    lc_frame_fini(&f);
}

/* Format 133 with the invariance bit: upstream divides rule50 by 99 and
 * leaves plane 110 zero; lcmon's planes divide by 100 and fill 110. */
static void test_format133(void)
{
    const uint8_t castling[4] = {0x00, 0x80, 0x00, 0x00};
    lc_frame f = frame_of(133, castling, 0x00, 30, 0x80);
    const float want[8] = {0.0f, 128.0f, 0.0f, 0.0f, 0.0f, 30.0f / 99.0f, 0.0f, 1.0f};
    check_upstream(&f, want, "format 133");
    float *got = malloc(PLANE_FLOATS * sizeof(float));
    planes_through("planes: input_format\n", false, &f, got);
    check_constant(got, 109, 30.0f / 100.0f, "format 133 input_format");
    check_constant(got, 110, 1.0f, "format 133 input_format");
    free(got);
    lc_frame_fini(&f);
}

static void test_format1_same(void)
{
    const uint8_t castling[4] = {1, 0, 1, 1};
    lc_frame f = frame_of(1, castling, 1, 7, 0);
    float *a = malloc(PLANE_FLOATS * sizeof(float)), *b = malloc(PLANE_FLOATS * sizeof(float));
    planes_through("planes: upstream\n", false, &f, a);
    planes_through("", false, &f, b);
    CHECK(memcmp(a, b, PLANE_FLOATS * sizeof(float)) == 0);
    check_constant(a, 104, 1.0f, "format 1");
    check_constant(a, 105, 0.0f, "format 1");
    check_constant(a, 108, 1.0f, "format 1");
    check_constant(a, 109, 7.0f / 99.0f, "format 1");
    free(a);
    free(b);
    lc_frame_fini(&f);
}

static void test_config(void)
{
    lc_stage *s = NULL;
    lc_error err;
    CHECK(lc_standalone_new(lc_stage_class_find("tensor_generator"), "t",
                            "batch_size: 4\nlayout: legacy\nplanes: upstream\n", NULL, 4, NULL, &s,
                            &err) != 0);
    CHECK(tu_contains(err.msg, "planes: upstream"));
    CHECK(lc_standalone_new(lc_stage_class_find("tensor_generator"), "t",
                            "batch_size: 4\nplanes: classical\n", NULL, 4, NULL, &s, &err) != 0);
    CHECK(tu_contains(err.msg, "planes"));
}

int main(void)
{
    test_format3();
    test_format133();
    test_format1_same();
    test_config();
    return check_finish();
}
