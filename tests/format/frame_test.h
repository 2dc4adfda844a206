/*
 * What test_frame.c and test_frame_legacy.c share: records built by hand at
 * the documented offsets (docs/lc0-training-data.md) in buffers of exactly
 * the record's size at odd addresses, the planes expected square by square
 * from the doc's rules, and the round trip through a V7 record.
 */
#ifndef LC_TESTS_FRAME_TEST_H
#define LC_TESTS_FRAME_TEST_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "records.h"
#include "testutil.h"
#include "frames.h"
#include "format/lc0/frame.h"

#define NPLANE_FLOATS (LC_INPUT_PLANES * 64)

/* ---- writing records ---- */

static inline uint32_t f32_bits(float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    return b;
}

/* The bit of square s (rank*8 + file) in a plane word, per the doc:
 * square s is (word >> (s ^ 7)) & 1. */
static inline uint64_t sq(unsigned s)
{
    return 1ULL << (s ^ 7);
}

/* A record buffer of exactly size bytes (plus one in front so that the record
 * starts at an odd address); free with rec_free. */
static inline uint8_t *rec_alloc(size_t size)
{
    uint8_t *p = calloc(1, size + 1);
    return p + 1;
}

static inline void rec_free(uint8_t *rec)
{
    free(rec - 1);
}

/* All probabilities -1 at off, then a few legal moves. */
static inline void put_policy_default(uint8_t *rec, size_t off)
{
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        rec_put_f32(rec, off + 4 * i, -1.0f);
    rec_put_f32(rec, off + 4 * 0, 0.25f);
    rec_put_f32(rec, off + 4 * 100, 0.5f);
    rec_put_f32(rec, off + 4 * 101, 0.0f);
    rec_put_f32(rec, off + 4 * 1857, 0.25f);
}

/* A valid V6 (or V7) record with distinct values in every field the frame
 * keeps. visits and policy_kld stay zero (the frame does not keep them). */
static inline uint8_t *make_v6(uint32_t version, uint32_t fmt)
{
    size_t size = version == 7 ? LC_V7_RECORD_SIZE : LC_V6_RECORD_SIZE;
    uint8_t *rec = rec_alloc(size);
    rec_put_u32(rec, 0, version);
    rec_put_u32(rec, 4, fmt);
    put_policy_default(rec, 8);
    for (unsigned p = 0; p < 104; p++)
        rec_put_u64(rec, 7440 + 8 * p, 0x9E3779B97F4A7C15ULL * (p + 1) >> (p % 17));
    rec[8272] = 1;
    rec[8273] = 0;
    rec[8274] = 1;
    rec[8275] = 1;
    rec[8276] = 1;
    rec[8277] = 50;
    rec[8278] = 0x85;
    rec[8279] = 0;
    rec_put_f32(rec, 8280, 0.1f);     /* root_q */
    rec_put_f32(rec, 8284, -0.5f);    /* best_q */
    rec_put_f32(rec, 8288, 0.3f);     /* root_d */
    rec_put_f32(rec, 8292, 0.25f);    /* best_d */
    rec_put_f32(rec, 8296, 33.5f);    /* root_m */
    rec_put_f32(rec, 8300, 31.0f);    /* best_m */
    rec_put_f32(rec, 8304, 42.0f);    /* plies_left */
    rec_put_f32(rec, 8308, 0.25f);    /* result_q */
    rec_put_f32(rec, 8312, 0.5f);     /* result_d */
    rec_put_f32(rec, 8316, 0.2f);     /* played_q */
    rec_put_f32(rec, 8320, 0.35f);    /* played_d */
    rec_put_f32(rec, 8324, 30.0f);    /* played_m */
    rec_put_f32(rec, 8328, NAN);      /* orig_q */
    rec_put_f32(rec, 8332, 0.45f);    /* orig_d */
    rec_put_f32(rec, 8336, 29.0f);    /* orig_m */
    rec_put_u16(rec, 8344, 100);      /* played_idx */
    rec_put_u16(rec, 8346, 1857);     /* best_idx */
    rec_put_f32(rec, 8352, -0.0625f); /* q_st */
    if (version == 7)
        rec_put_f32(rec, 8356, 0.125f); /* d_st */
    return rec;
}

/* ---- expected tensors, square by square from the doc ---- */

static inline void expected_planes(const uint64_t planes[104], uint32_t fmt,
                                   const uint8_t castling[4], uint8_t stm_or_ep, uint8_t rule50,
                                   uint8_t invariance, float *e)
{
    for (unsigned p = 0; p < 104; p++)
        for (unsigned s = 0; s < 64; s++)
            e[p * 64 + s] = (float)((planes[p] >> (s ^ 7)) & 1);
    for (unsigned s = 0; s < 64; s++) {
        float *x = e + 104 * 64 + s;
        unsigned rank = s / 8, file = s % 8;
        if (fmt == 1) {
            for (unsigned k = 0; k < 4; k++)
                x[k * 64] = (float)castling[k];
            x[4 * 64] = (float)stm_or_ep;
        } else {
            /* 104: us_ooo on rank 1, them_ooo on rank 8; 105 the same for oo. */
            float ooo = 0, oo = 0;
            if (rank == 0) {
                ooo = (float)((castling[0] >> file) & 1);
                oo = (float)((castling[1] >> file) & 1);
            } else if (rank == 7) {
                ooo = (float)((castling[2] >> file) & 1);
                oo = (float)((castling[3] >> file) & 1);
            }
            x[0] = ooo;
            x[64] = oo;
            x[2 * 64] = 0;
            x[3 * 64] = 0;
            if (fmt == 2)
                x[4 * 64] = (float)stm_or_ep;
            else
                x[4 * 64] = rank == 7 ? (float)((stm_or_ep >> file) & 1) : 0.0f;
        }
        x[5 * 64] = fmt <= 3 ? (float)rule50 / 99.0f : (float)rule50 / 100.0f;
        x[6 * 64] = ((fmt == 132 || fmt == 133) && (invariance & 0x80)) ? 1.0f : 0.0f;
        x[7 * 64] = 1.0f;
    }
}

/* Compare two plane tensors value by value; report the first few differences. */
static inline void check_planes_equal(const float *got, const float *want, const char *what)
{
    int shown = 0, bad = 0;
    for (unsigned i = 0; i < NPLANE_FLOATS; i++) {
        if (f32_bits(got[i]) != f32_bits(want[i])) {
            bad++;
            if (shown++ < 5)
                fprintf(stderr, "%s: plane %u square %u: got %.9g want %.9g\n", what, i / 64,
                        i % 64, got[i], want[i]);
        }
    }
    CHECK_EQ_INT(bad, 0);
}

/* Frame -> V7 record -> frame; the V7 reading says version 7, so the
 * original version is put back before comparing (to_record_v7 writes it). */
static inline void check_round_trip(const lc_frame *f)
{
    uint8_t *buf = rec_alloc(LC_V7_RECORD_SIZE);
    lc_frame_to_record_v7(f, buf);
    uint32_t v;
    memcpy(&v, buf, 4);
    CHECK_EQ_U64(v, f->version);
    lc_frame g;
    CHECK_OK(lc_frame_from_record(buf, 7, &g, NULL));
    CHECK_EQ_U64(g.version, 7);
    g.version = f->version;
    tf_check_same_fields(f, &g, true);
    tf_check_same_tensors(f, &g);
    lc_frame_fini(&g);
    rec_free(buf);
}

#endif
