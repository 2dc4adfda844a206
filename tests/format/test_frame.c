/*
 * test_frame: the compact frame (format/lc0/frame.h).
 *
 * Records are built by hand at the documented offsets (docs/lc0-training-data.md),
 * placed at odd addresses in buffers of exactly the record's size (so that the
 * sanitizers catch a read past the end), and the expected tensors are computed
 * here square by square from the doc's rules, never by calling the code under
 * test. The real games of tests/data check the same properties on lc0's own
 * output: every record passes lc_record_check and survives a round trip.
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "records.h"
#include "testutil.h"
#include "frames.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/frame.h"

#define NPLANE_FLOATS (LC_INPUT_PLANES * 64)

/* ---- writing records ---- */

static uint32_t f32_bits(float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    return b;
}

/* The bit of square s (rank*8 + file) in a plane word, per the doc:
 * square s is (word >> (s ^ 7)) & 1. */
static uint64_t sq(unsigned s)
{
    return 1ULL << (s ^ 7);
}

/* A record buffer of exactly size bytes (plus one in front so that the record
 * starts at an odd address); free with rec_free. */
static uint8_t *rec_alloc(size_t size)
{
    uint8_t *p = calloc(1, size + 1);
    return p + 1;
}

static void rec_free(uint8_t *rec)
{
    free(rec - 1);
}

/* All probabilities -1 at off, then a few legal moves. */
static void put_policy_default(uint8_t *rec, size_t off)
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
static uint8_t *make_v6(uint32_t version, uint32_t fmt)
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

static void expected_planes(const uint64_t planes[104], uint32_t fmt, const uint8_t castling[4],
                            uint8_t stm_or_ep, uint8_t rule50, uint8_t invariance, float *e)
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
static void check_planes_equal(const float *got, const float *want, const char *what)
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

static void test_input_formats(void)
{
    static const uint32_t fmts[] = {1, 2, 3, 4, 5, 132, 133};
    float *got = malloc(NPLANE_FLOATS * sizeof(float));
    float *want = malloc(NPLANE_FLOATS * sizeof(float));
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        for (int inv_bit = 0; inv_bit < 2; inv_bit++) {
            uint32_t fmt = fmts[k];
            uint8_t *rec = make_v6(6, fmt);
            uint64_t planes[104] = {0};
            /* Our pawns on a2, b2, e2, h2; our king on e1 as lc0 stores it
             * (0x08: e1 is file 4, bit 4 ^ 7 = 3). */
            planes[0] = sq(8) | sq(9) | sq(12) | sq(15);
            planes[5] = 0x08;
            planes[6] = sq(48) | sq(55); /* their pawns on a7, h7 */
            planes[12] = ~0ULL;          /* repetition plane: all set */
            planes[50] = 0x0123456789abcdefULL;
            planes[103] = sq(0) | sq(63);
            for (unsigned p = 0; p < 104; p++)
                rec_put_u64(rec, 7440 + 8 * p, planes[p]);
            uint8_t castling[4], stm;
            if (fmt == 1) {
                castling[0] = 1, castling[1] = 0, castling[2] = 1, castling[3] = 1;
                stm = 1;
            } else {
                /* Rook-file masks: a-file rook (bit 0), h-file (bit 7), both. */
                castling[0] = 0x01, castling[1] = 0x80, castling[2] = 0x81, castling[3] = 0x04;
                stm = fmt == 2 ? 1 : 0x10; /* canonical: en passant on the e-file */
            }
            uint8_t inv = inv_bit ? 0x80 | 0x03 : 0x03;
            memcpy(rec + 8272, castling, 4);
            rec[8276] = stm;
            rec[8277] = 50;
            rec[8278] = inv;

            lc_frame f;
            lc_error err;
            CHECK_OK(lc_frame_from_record(rec, 6, &f, &err));
            CHECK_EQ_U64(f.input_format, fmt);
            lc_frame_input_planes(&f, got);
            expected_planes(planes, fmt, castling, stm, 50, inv, want);
            char what[64];
            snprintf(what, sizeof what, "format %u invariance 0x%02x", fmt, inv);
            check_planes_equal(got, want, what);

            /* A few facts written out by hand, as a check on the rules above. */
            CHECK_EQ_INT(got[0 * 64 + 8], 1);  /* a2 pawn */
            CHECK_EQ_INT(got[0 * 64 + 12], 1); /* e2 pawn */
            CHECK_EQ_INT(got[0 * 64 + 10], 0); /* c2 empty */
            CHECK_EQ_INT(got[5 * 64 + 4], 1);  /* king on e1 */
            CHECK_EQ_INT(got[5 * 64 + 3], 0);
            CHECK_EQ_INT(got[6 * 64 + 48], 1); /* their pawn a7 */
            CHECK_NEAR(got[109 * 64 + 17], fmt <= 3 ? 0.50505051 : 0.5, 1e-7);
            CHECK_EQ_INT(got[111 * 64 + 33], 1);
            CHECK_EQ_INT(got[110 * 64 + 5], (fmt == 132 || fmt == 133) && inv_bit);
            if (fmt == 1) {
                CHECK_EQ_INT(got[104 * 64 + 20], 1);
                CHECK_EQ_INT(got[105 * 64 + 20], 0);
                CHECK_EQ_INT(got[108 * 64 + 40], 1);
            } else {
                CHECK_EQ_INT(got[104 * 64 + 0], 1);  /* us_ooo 0x01: a1 */
                CHECK_EQ_INT(got[104 * 64 + 7], 0);  /* not h1 */
                CHECK_EQ_INT(got[105 * 64 + 7], 1);  /* us_oo 0x80: h1 */
                CHECK_EQ_INT(got[104 * 64 + 56], 1); /* them_ooo 0x81: a8 and h8 */
                CHECK_EQ_INT(got[104 * 64 + 63], 1);
                CHECK_EQ_INT(got[105 * 64 + 58], 1); /* them_oo 0x04: c8 */
                CHECK_EQ_INT(got[106 * 64 + 0], 0);
                if (fmt == 2) {
                    CHECK_EQ_INT(got[108 * 64 + 30], 1);
                } else {
                    CHECK_EQ_INT(got[108 * 64 + 60], 1); /* en passant e-file on rank 8 */
                    CHECK_EQ_INT(got[108 * 64 + 4], 0);
                    CHECK_EQ_INT(got[108 * 64 + 59], 0);
                }
            }

            /* The same into a float row that is not 16-byte aligned. */
            float *odd = malloc((NPLANE_FLOATS + 1) * sizeof(float));
            lc_frame_input_planes(&f, odd + 1);
            CHECK(memcmp(odd + 1, want, NPLANE_FLOATS * sizeof(float)) == 0);
            free(odd);
            lc_frame_fini(&f);
            rec_free(rec);
        }
    }

    /* An unknown format (callers validate first): 104..110 zero, 111 ones. */
    uint8_t *rec = make_v6(6, 7);
    lc_frame f;
    CHECK_OK(lc_frame_from_record(rec, 6, &f, NULL));
    lc_frame_input_planes(&f, got);
    int bad = 0;
    for (unsigned s = 0; s < 7 * 64; s++)
        bad += got[104 * 64 + s] != 0.0f;
    for (unsigned s = 0; s < 64; s++)
        bad += got[111 * 64 + s] != 1.0f;
    CHECK_EQ_INT(bad, 0);
    lc_frame_fini(&f);
    rec_free(rec);

    CHECK(lc_input_format_known(1));
    CHECK(lc_input_format_known(5));
    CHECK(lc_input_format_known(132));
    CHECK(lc_input_format_known(133));
    CHECK(!lc_input_format_known(0));
    CHECK(!lc_input_format_known(6));
    CHECK(!lc_input_format_known(131));
    CHECK(!lc_input_format_known(134));
    free(got);
    free(want);
}

/* Frame -> V7 record -> frame; the V7 reading says version 7, so the
 * original version is put back before comparing (to_record_v7 writes it). */
static void check_round_trip(const lc_frame *f)
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

/* ---- policy ---- */

static void test_policy(void)
{
    uint8_t *rec = make_v6(6, 1);
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        rec_put_f32(rec, 8 + 4 * i, -1.0f);
    const unsigned idx[] = {0, 3, 4, 77, 500, 1000, 1856, 1857};
    const float val[] = {0.0f, -0.0f, 1e-30f, 1.4e-45f /* denormal */, 0.5f, 1.0f, NAN, -0.5f};
    for (size_t k = 0; k < 8; k++)
        rec_put_f32(rec, 8 + 4 * idx[k], val[k]);
    rec_put_u16(rec, 8344, 500);
    rec_put_u16(rec, 8346, 1000);
    lc_frame f;
    CHECK_OK(lc_frame_from_record(rec, 6, &f, NULL));
    CHECK_EQ_U64(f.n_policy, 8);
    CHECK(f.overflow_idx == NULL && f.overflow_val == NULL);
    for (size_t k = 0; k < 8 && k < f.n_policy; k++) {
        CHECK_EQ_U64(f.policy_idx[k], idx[k]);
        CHECK_EQ_U64(f32_bits(f.policy_val[k]), f32_bits(val[k]));
    }
    float *pol = malloc(LC_POLICY_SIZE * sizeof(float));
    lc_frame_policy(&f, pol);
    CHECK(memcmp(pol, rec + 8, LC_POLICY_SIZE * 4) == 0);
    check_round_trip(&f);
    lc_frame_fini(&f);

    /* 300 entries: the overflow path (the first 80 inline, the rest in the
     * heap arrays). */
    for (unsigned i = 0; i < 300; i++)
        rec_put_f32(rec, 8 + 4 * (i * 6 + 1), (float)i / 1000.0f);
    CHECK_OK(lc_frame_from_record(rec, 6, &f, NULL));
    unsigned n_expected = 0;
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++) {
        float v;
        memcpy(&v, rec + 8 + 4 * i, 4);
        n_expected += f32_bits(v) != f32_bits(-1.0f);
    }
    CHECK_EQ_U64(f.n_policy, n_expected);
    CHECK(n_expected > LC_FRAME_INLINE_POLICY);
    CHECK(f.overflow_idx != NULL && f.overflow_val != NULL);
    lc_frame_policy(&f, pol);
    CHECK(memcmp(pol, rec + 8, LC_POLICY_SIZE * 4) == 0);
    for (unsigned k = 1; k < LC_FRAME_INLINE_POLICY; k++)
        if (f.policy_idx[k] <= f.policy_idx[k - 1])
            CHECK(!"inline indices ascend");
    CHECK(f.overflow_idx[0] > f.policy_idx[LC_FRAME_INLINE_POLICY - 1]);
    for (unsigned k = 1; k < (unsigned)f.n_policy - LC_FRAME_INLINE_POLICY; k++)
        if (f.overflow_idx[k] <= f.overflow_idx[k - 1])
            CHECK(!"overflow indices ascend");

    lc_frame c;
    lc_frame_copy(&c, &f);
    CHECK(c.overflow_idx != f.overflow_idx && c.overflow_val != f.overflow_val);
    tf_check_same_fields(&f, &c, true);
    lc_frame_fini(&f); /* the copy must not depend on the original */
    CHECK(f.overflow_idx == NULL);
    lc_frame_policy(&c, pol);
    CHECK(memcmp(pol, rec + 8, LC_POLICY_SIZE * 4) == 0);
    check_round_trip(&c);
    lc_frame_fini(&c);
    lc_frame_fini(&c); /* twice is harmless */
    lc_frame_fini(NULL);

    /* Every entry kept (no -1 at all). */
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        rec_put_f32(rec, 8 + 4 * i, 0.0f);
    CHECK_OK(lc_frame_from_record(rec, 6, &f, NULL));
    CHECK_EQ_U64(f.n_policy, LC_POLICY_SIZE);
    lc_frame_policy(&f, pol);
    CHECK(memcmp(pol, rec + 8, LC_POLICY_SIZE * 4) == 0);
    lc_frame_fini(&f);

    /* A copy of an inline frame has no heap arrays either. */
    rec_put_f32(rec, 8 + 4 * 3, -1.0f);
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        rec_put_f32(rec, 8 + 4 * i, i % 25 ? -1.0f : 0.01f);
    CHECK_OK(lc_frame_from_record(rec, 6, &f, NULL));
    CHECK_EQ_U64(f.n_policy, 75);
    CHECK(f.overflow_idx == NULL);
    lc_frame_copy(&c, &f);
    CHECK(c.overflow_idx == NULL && c.overflow_val == NULL);
    tf_check_same_fields(&f, &c, true);
    tf_check_same_tensors(&f, &c);
    lc_frame_fini(&c);
    lc_frame_fini(&f);
    free(pol);
    rec_free(rec);
}

/* ---- V6 / V7 values, legacy targets and the exact round trip ---- */

static void test_v6_v7(void)
{
    for (uint32_t version = 6; version <= 7; version++) {
        uint8_t *rec = make_v6(version, 5);
        lc_frame f;
        CHECK_OK(lc_frame_from_record(rec, version, &f, NULL));
        CHECK_EQ_U64(f.version, version);
        CHECK_EQ_U64(f.n_policy, 4);
        float v[18];
        lc_frame_values(&f, v);
        const float want[18] = {0.25f, 0.5f,  42.0f, -0.5f, 0.25f, 31.0f, 0.2f,     0.35f,  30.0f,
                                NAN,   0.45f, 29.0f, 0.1f,  0.3f,  33.5f, -0.0625f, 0.125f, NAN};
        for (int i = 0; i < 18; i++) {
            float w = want[i];
            if (i == 16 && version == 6)
                w = NAN; /* d_st does not exist before V7 */
            if (isnan(w))
                CHECK(isnan(v[i]));
            else
                CHECK_NEAR(v[i], w, 0);
        }
        float winner[3], best_q[3], plies;
        lc_frame_legacy_targets(&f, winner, best_q, &plies);
        /* result (0.25, 0.5): W = (1 - 0.5 + 0.25)/2, D = 0.5, L = (1 - 0.5 - 0.25)/2 */
        CHECK_NEAR(winner[0], 0.375, 0);
        CHECK_NEAR(winner[1], 0.5, 0);
        CHECK_NEAR(winner[2], 0.125, 0);
        /* best (-0.5, 0.25) */
        CHECK_NEAR(best_q[0], 0.125, 0);
        CHECK_NEAR(best_q[1], 0.25, 0);
        CHECK_NEAR(best_q[2], 0.625, 0);
        CHECK_NEAR(plies, 42, 0);

        /* The V7 record written back holds exactly the original bytes (the
         * test record leaves visits and policy_kld zero, as the writer does). */
        uint8_t *out = rec_alloc(LC_V7_RECORD_SIZE);
        lc_frame_to_record_v7(&f, out);
        size_t size = version == 7 ? LC_V7_RECORD_SIZE : LC_V6_RECORD_SIZE;
        CHECK(memcmp(out, rec, size) == 0);
        if (version == 6) {
            float dst;
            memcpy(&dst, out + 8356, 4);
            CHECK(isnan(dst));
        }
        rec_free(out);
        check_round_trip(&f);

        /* In V6+ a zero plies_left stays zero (no fallback). */
        rec_put_f32(rec, 8304, 0.0f);
        lc_frame g;
        CHECK_OK(lc_frame_from_record(rec, version, &g, NULL));
        lc_frame_legacy_targets(&g, winner, best_q, &plies);
        CHECK_NEAR(plies, 0, 0);
        lc_frame_fini(&g);
        lc_frame_fini(&f);
        rec_free(rec);
    }

    lc_error err;
    lc_error_clear(&err);
    uint8_t *rec = make_v6(6, 1);
    lc_frame f;
    CHECK_EQ_INT(lc_frame_from_record(rec, 8, &f, &err), LC_EVERSION);
    CHECK(err.msg[0] != '\0');
    CHECK_EQ_INT(lc_frame_from_record(rec, 2, &f, NULL), LC_EVERSION);
    lc_frame_fini(&f);
    rec_free(rec);
}

/* ---- pre-V6 records ---- */

static void check_nan(float v, const char *what)
{
    if (!isnan(v))
        fprintf(stderr, "%s: %g, expected NaN\n", what, v);
    CHECK(isnan(v));
}

static void check_v6_fields_unknown(const lc_frame *f)
{
    check_nan(f->played_q, "played_q");
    check_nan(f->played_d, "played_d");
    check_nan(f->played_m, "played_m");
    check_nan(f->orig_q, "orig_q");
    check_nan(f->orig_d, "orig_d");
    check_nan(f->orig_m, "orig_m");
    check_nan(f->q_st, "q_st");
    check_nan(f->d_st, "d_st");
    CHECK_EQ_U64(f->played_idx, 0xFFFF);
    CHECK_EQ_U64(f->best_idx, 0xFFFF);
    float v[18];
    lc_frame_values(f, v);
    for (int i = 6; i < 12; i++)
        CHECK(isnan(v[i]));
    CHECK(isnan(v[15]) && isnan(v[16]) && isnan(v[17]));
}

static void test_v5(void)
{
    uint8_t *rec = rec_alloc(LC_V5_RECORD_SIZE);
    rec_put_u32(rec, 0, 5);
    rec_put_u32(rec, 4, 3);
    put_policy_default(rec, 8);
    rec_put_u64(rec, 7440, sq(8) | sq(9));
    rec_put_u64(rec, 7440 + 8 * 103, 0xF0F0ULL);
    rec[8272] = 0x01;
    rec[8273] = 0x80;
    rec[8274] = 0x00;
    rec[8275] = 0x80;
    rec[8276] = 0x04; /* en passant on the c-file */
    rec[8277] = 9;
    rec[8278] = 37;   /* invariance byte: the plies_left fallback */
    rec[8279] = 0xFF; /* result -1 */
    rec_put_f32(rec, 8280, 0.1f);
    rec_put_f32(rec, 8284, 0.2f);
    rec_put_f32(rec, 8288, 0.3f);
    rec_put_f32(rec, 8292, 0.4f);
    rec_put_f32(rec, 8296, 5.0f);
    rec_put_f32(rec, 8300, 6.0f);
    rec_put_f32(rec, 8304, 0.0f);
    CHECK_EQ_INT(lc_record_check(rec, 5, NULL), 0);

    lc_frame f;
    CHECK_OK(lc_frame_from_record(rec, 5, &f, NULL));
    CHECK_EQ_U64(f.version, 5);
    CHECK_EQ_U64(f.input_format, 3);
    CHECK_EQ_INT(f.result, -1);
    CHECK_NEAR(f.result_q, -1, 0);
    CHECK_NEAR(f.result_d, 0, 0);
    CHECK_NEAR(f.root_q, 0.1f, 0);
    CHECK_NEAR(f.best_d, 0.4f, 0);
    CHECK_NEAR(f.root_m, 5, 0);
    CHECK_NEAR(f.best_m, 6, 0);
    CHECK_EQ_U64(f.n_policy, 4);
    CHECK_EQ_U64(f.planes[103], 0xF0F0ULL);
    check_v6_fields_unknown(&f);
    float v[18];
    lc_frame_values(&f, v);
    CHECK_NEAR(v[0], -1, 0);
    CHECK_NEAR(v[1], 0, 0);
    CHECK_NEAR(v[2], 0, 0); /* the values layout carries plies_left as stored */
    CHECK_NEAR(v[3], 0.2f, 0);
    CHECK_NEAR(v[12], 0.1f, 0);

    float winner[3], best_q[3], plies;
    lc_frame_legacy_targets(&f, winner, best_q, &plies);
    CHECK(winner[0] == 0 && winner[1] == 0 && winner[2] == 1);
    CHECK_NEAR(best_q[1], 0.4f, 0);
    CHECK_NEAR(plies, 37, 0);

    float *got = malloc(NPLANE_FLOATS * sizeof(float));
    float *want = malloc(NPLANE_FLOATS * sizeof(float));
    uint64_t planes[104];
    memcpy(planes, rec + 7440, sizeof planes);
    expected_planes(planes, 3, rec + 8272, 0x04, 9, 37, want);
    lc_frame_input_planes(&f, got);
    check_planes_equal(got, want, "V5 format 3");
    check_round_trip(&f);
    lc_frame_fini(&f);

    /* A plies_left that is there is used as it is. */
    rec_put_f32(rec, 8304, 17.0f);
    rec[8279] = 0; /* a draw */
    CHECK_OK(lc_frame_from_record(rec, 5, &f, NULL));
    lc_frame_legacy_targets(&f, winner, best_q, &plies);
    CHECK_NEAR(plies, 17, 0);
    CHECK(winner[0] == 0 && winner[1] == 1 && winner[2] == 0);
    CHECK_NEAR(f.result_q, 0, 0);
    CHECK_NEAR(f.result_d, 1, 0);
    lc_frame_fini(&f);

    /* V5 has an input_format: an unknown one is rejected. */
    rec_put_u32(rec, 4, 9);
    const char *reason = NULL;
    CHECK(lc_record_check(rec, 5, &reason) < 0);
    CHECK_EQ_STR(reason, "unknown_input_format");
    free(got);
    free(want);
    rec_free(rec);
}

/* V4: no input_format; probabilities at 4, planes at 7436, then castling x4,
 * side to move, rule50, move_count, int8 result, root_q, best_q, root_d,
 * best_d. V3 stops before the four floats. */
static uint8_t *make_v4(uint32_t version, int8_t result, uint8_t move_count)
{
    size_t size = version == 4 ? LC_V4_RECORD_SIZE : LC_V3_RECORD_SIZE;
    uint8_t *rec = rec_alloc(size);
    rec_put_u32(rec, 0, version);
    put_policy_default(rec, 4);
    rec_put_u64(rec, 7436, sq(8) | sq(15));
    rec_put_u64(rec, 7436 + 8 * 5, 0x08);
    rec_put_u64(rec, 7436 + 8 * 103, 0x8000000000000001ULL);
    rec[8268] = 1; /* us_ooo */
    rec[8269] = 1; /* us_oo */
    rec[8270] = 0; /* them_ooo */
    rec[8271] = 1; /* them_oo */
    rec[8272] = 1; /* side to move */
    rec[8273] = 20;
    rec[8274] = move_count;
    rec[8275] = (uint8_t)result;
    if (version == 4) {
        rec_put_f32(rec, 8276, 0.5f);
        rec_put_f32(rec, 8280, -0.25f);
        rec_put_f32(rec, 8284, 0.125f);
        rec_put_f32(rec, 8288, 0.75f);
    }
    return rec;
}

static void test_v4_v3(void)
{
    float *got = malloc(NPLANE_FLOATS * sizeof(float));
    float *want = malloc(NPLANE_FLOATS * sizeof(float));
    for (uint32_t version = 3; version <= 4; version++) {
        static const int8_t results[] = {1, 0, -1};
        for (int r = 0; r < 3; r++) {
            int8_t result = results[r];
            uint8_t *rec = make_v4(version, result, 60);
            const char *reason = "x";
            CHECK_EQ_INT(lc_record_check(rec, version, &reason), 0);
            CHECK(reason == NULL);
            lc_frame f;
            CHECK_OK(lc_frame_from_record(rec, version, &f, NULL));
            CHECK_EQ_U64(f.version, version);
            CHECK_EQ_U64(f.input_format, 1);
            CHECK_EQ_INT(f.result, result);
            CHECK_EQ_U64(f.invariance_info, 60);
            CHECK_EQ_U64(f.rule50_count, 20);
            CHECK_EQ_U64(f.n_policy, 4);
            CHECK_EQ_U64(f.planes[0], sq(8) | sq(15));
            check_nan(f.plies_left, "plies_left");
            check_nan(f.root_m, "root_m");
            check_nan(f.best_m, "best_m");
            check_v6_fields_unknown(&f);
            CHECK_NEAR(f.result_q, result, 0);
            CHECK_NEAR(f.result_d, result == 0 ? 1 : 0, 0);
            if (version == 4) {
                CHECK_NEAR(f.root_q, 0.5, 0);
                CHECK_NEAR(f.best_q, -0.25, 0);
                CHECK_NEAR(f.root_d, 0.125, 0);
                CHECK_NEAR(f.best_d, 0.75, 0);
            } else {
                check_nan(f.root_q, "root_q");
                check_nan(f.best_q, "best_q");
                check_nan(f.root_d, "root_d");
                check_nan(f.best_d, "best_d");
            }

            float winner[3], best_q[3], plies;
            lc_frame_legacy_targets(&f, winner, best_q, &plies);
            CHECK_EQ_INT(winner[0], result == 1);
            CHECK_EQ_INT(winner[1], result == 0);
            CHECK_EQ_INT(winner[2], result == -1);
            CHECK_NEAR(plies, 60, 0); /* fallback: the move_count byte */
            if (version == 4) {
                /* best (-0.25, 0.75): W = 0, D = 0.75, L = 0.25 */
                CHECK_NEAR(best_q[0], 0, 0);
                CHECK_NEAR(best_q[1], 0.75, 0);
                CHECK_NEAR(best_q[2], 0.25, 0);
            } else {
                CHECK(isnan(best_q[0]) && isnan(best_q[1]) && isnan(best_q[2]));
            }

            uint64_t planes[104];
            memcpy(planes, rec + 7436, sizeof planes);
            expected_planes(planes, 1, rec + 8268, 1, 20, 60, want);
            lc_frame_input_planes(&f, got);
            check_planes_equal(got, want, version == 4 ? "V4" : "V3");
            float pol[LC_POLICY_SIZE];
            lc_frame_policy(&f, pol);
            CHECK(memcmp(pol, rec + 4, sizeof pol) == 0);
            check_round_trip(&f);
            lc_frame_fini(&f);

            /* A bad probability is caught at V4's offsets. */
            rec_put_f32(rec, 4 + 4 * 7, 2.0f);
            CHECK(lc_record_check(rec, version, &reason) < 0);
            CHECK_EQ_STR(reason, "bad_probability");
            rec_free(rec);
        }
    }
    free(got);
    free(want);
}

/* ---- lc_record_check ---- */

static void expect_reason(const uint8_t *rec, uint32_t version, const char *want)
{
    const char *reason = NULL;
    int rc = lc_record_check(rec, version, &reason);
    CHECK(rc < 0);
    CHECK_EQ_STR(reason, want);
}

static void test_record_check(void)
{
    for (uint32_t version = 6; version <= 7; version++) {
        size_t size = version == 7 ? LC_V7_RECORD_SIZE : LC_V6_RECORD_SIZE;
        uint8_t *good = make_v6(version, 1);
        uint8_t *rec = rec_alloc(size);
        const char *reason = "x";
        CHECK_EQ_INT(lc_record_check(good, version, &reason), 0);
        CHECK(reason == NULL);
        CHECK_EQ_INT(lc_record_check(good, version, NULL), 0);

#define MUTATE(stmt, want)                                                                         \
    do {                                                                                           \
        memcpy(rec, good, size);                                                                   \
        stmt;                                                                                      \
        expect_reason(rec, version, want);                                                         \
    } while (0)

        MUTATE(rec_put_u32(rec, 0, 8), "unknown_version");
        MUTATE(rec_put_u32(rec, 0, version == 6 ? 7 : 6), "unknown_version");
        MUTATE(rec_put_u32(rec, 4, 6), "unknown_input_format");
        MUTATE(rec_put_u32(rec, 4, 0), "unknown_input_format");
        MUTATE(rec_put_f32(rec, 8 + 4 * 33, NAN), "bad_probability");
        MUTATE(rec_put_f32(rec, 8 + 4 * 33, 1.5f), "bad_probability");
        MUTATE(rec_put_f32(rec, 8 + 4 * 1857, -1.5f), "bad_probability");
        MUTATE(rec_put_f32(rec, 8, INFINITY), "bad_probability");
        MUTATE(rec_put_u16(rec, 8344, 1858), "played_idx_out_of_range");
        MUTATE(rec_put_u16(rec, 8344, 0xFFFF), "played_idx_out_of_range");
        MUTATE(rec_put_u16(rec, 8346, 1858), "best_idx_out_of_range");
        MUTATE(rec_put_u16(rec, 8344, 5), "played_idx_illegal"); /* entry 5 is -1 */
        MUTATE(rec_put_u16(rec, 8346, 1856), "best_idx_illegal");
#undef MUTATE
        /* The chunk's version must be a known one. */
        expect_reason(good, 8, "unknown_version");
        expect_reason(good, 2, "unknown_version");
        /* Every known input format passes. */
        static const uint32_t fmts[] = {2, 3, 4, 5, 132, 133};
        for (size_t k = 0; k < 6; k++) {
            memcpy(rec, good, size);
            rec_put_u32(rec, 4, fmts[k]);
            CHECK_EQ_INT(lc_record_check(rec, version, NULL), 0);
        }
        /* Zero and one are legal probabilities, as are indices at a zero. */
        memcpy(rec, good, size);
        rec_put_u16(rec, 8344, 101); /* probability 0 */
        rec_put_f32(rec, 8 + 4 * 1857, 1.0f);
        CHECK_EQ_INT(lc_record_check(rec, version, NULL), 0);
        rec_free(rec);
        rec_free(good);
    }
}

/* ---- real lc0 games ---- */

static void test_real_game(const char *folder, uint32_t want_format)
{
    char *dir = lc_xasprintf("%s/%s", tu_test_data(), folder);
    char *path = tu_first_gz(dir);
    CHECK(path != NULL);
    free(dir);
    if (!path)
        return;
    lc_chunk_source *src = NULL;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_chunk_source_open(path, &src, &err);
    CHECK_OK(rc);
    lc_chunk_data c;
    memset(&c, 0, sizeof c);
    if (rc == 0)
        rc = lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, &c, &err);
    CHECK_OK(rc);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        lc_chunk_source_unref(src);
        free(path);
        return;
    }
    CHECK_EQ_U64(c.version, 6);
    CHECK(c.n_records > 0);
    float *planes = malloc(NPLANE_FLOATS * sizeof(float));
    float pol[LC_POLICY_SIZE];
    uint8_t *out = rec_alloc(LC_V7_RECORD_SIZE);
    uint8_t *orig = rec_alloc(LC_V6_RECORD_SIZE);
    size_t bad_check = 0, bad_sum = 0, bad_bits = 0, bad_edge = 0, bad_bytes = 0, bad_n = 0;
    size_t bad_r50 = 0;
    for (size_t r = 0; r < c.n_records; r++) {
        const uint8_t *rec = c.data + r * c.record_size;
        const char *reason = NULL;
        if (lc_record_check(rec, c.version, &reason) != 0) {
            if (bad_check++ < 3)
                fprintf(stderr, "%s record %zu: %s\n", path, r, reason);
        }
        lc_frame f;
        CHECK_OK(lc_frame_from_record(rec, c.version, &f, NULL));
        CHECK_EQ_U64(f.input_format, want_format);
        bad_n += f.n_policy > 218;

        lc_frame_policy(&f, pol);
        double sum = 0;
        for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
            if (pol[i] >= 0.0f)
                sum += pol[i];
        bad_sum += fabs(sum - 1.0) > 1e-3;

        lc_frame_input_planes(&f, planes);
        for (unsigned i = 0; i < 104 * 64; i++)
            bad_bits += planes[i] != 0.0f && planes[i] != 1.0f;
        for (unsigned i = 0; i < 64; i++)
            bad_edge += planes[111 * 64 + i] != 1.0f;
        float r50 = planes[109 * 64];
        float want_r50 = (float)f.rule50_count / (want_format <= 3 ? 99.0f : 100.0f);
        bad_r50 += r50 != want_r50;
        if (r == 0 && want_format == 1 && f.planes[0] == 0xFF00ULL) {
            /* The start position as lc0 encodes it: our king on e1, queen d1. */
            CHECK_EQ_INT(planes[5 * 64 + 4], 1);
            CHECK_EQ_INT(planes[4 * 64 + 3], 1);
            CHECK_EQ_INT(planes[3 * 64 + 0], 1);   /* rook a1 */
            CHECK_EQ_INT(planes[3 * 64 + 7], 1);   /* rook h1 */
            CHECK_EQ_INT(planes[11 * 64 + 60], 1); /* their king e8 */
        }

        /* Written back, the record is the original except for visits and
         * policy_kld, which the frame does not keep. */
        lc_frame_to_record_v7(&f, out);
        memcpy(orig, rec, LC_V6_RECORD_SIZE);
        memset(orig + 8340, 0, 4);
        memset(orig + 8348, 0, 4);
        bad_bytes += memcmp(orig, out, LC_V6_RECORD_SIZE) != 0;
        lc_frame g;
        CHECK_OK(lc_frame_from_record(out, 7, &g, NULL));
        g.version = f.version;
        tf_check_same_fields(&f, &g, true);
        tf_check_same_tensors(&f, &g);
        lc_frame_fini(&g);
        lc_frame_fini(&f);
    }
    printf("%s: %zu records\n", path, c.n_records);
    CHECK_EQ_U64(bad_check, 0);
    CHECK_EQ_U64(bad_sum, 0);
    CHECK_EQ_U64(bad_bits, 0);
    CHECK_EQ_U64(bad_edge, 0);
    CHECK_EQ_U64(bad_r50, 0);
    CHECK_EQ_U64(bad_bytes, 0);
    CHECK_EQ_U64(bad_n, 0);
    rec_free(out);
    rec_free(orig);
    free(planes);
    lc_chunk_data_fini(&c);
    lc_chunk_source_unref(src);
    free(path);
}

/* The legacy WDL targets round once, from double precision, as the legacy
 * chunkparser does (Python floats): records chosen so that float arithmetic
 * would give a different last bit. */
static void test_legacy_wdl_rounding(void)
{
    uint8_t *rec = make_v6(6, 1);
    uint32_t x = 12345, tested = 0;
    for (int i = 0; i < 100000 && tested < 500; i++) {
        x = x * 1664525u + 1013904223u;
        float q = (float)((int32_t)x) / 2147483648.0f; /* [-1, 1) */
        x = x * 1664525u + 1013904223u;
        float d = (float)(x >> 8) / 16777216.0f * (1.0f - fabsf(q)); /* [0, 1 - |q|) */
        volatile float one = 1.0f, two = 2.0f; /* float arithmetic, as before */
        float wf = (one - d + q) / two, lf = (one - d - q) / two;
        float wd = (float)(0.5 * (1.0 - (double)d + (double)q));
        float ld = (float)(0.5 * (1.0 - (double)d - (double)q));
        if (wf == wd && lf == ld)
            continue;
        tested++;
        rec_put_f32(rec, 8284, q); /* best_q */
        rec_put_f32(rec, 8292, d); /* best_d */
        rec_put_f32(rec, 8308, q); /* result_q */
        rec_put_f32(rec, 8312, d); /* result_d */
        lc_frame f;
        CHECK_OK(lc_frame_from_record(rec, 6, &f, NULL));
        float winner[3], best_q[3], plies;
        lc_frame_legacy_targets(&f, winner, best_q, &plies);
        CHECK(memcmp(&winner[0], &wd, 4) == 0 && memcmp(&winner[2], &ld, 4) == 0);
        CHECK(memcmp(&best_q[0], &wd, 4) == 0 && memcmp(&best_q[2], &ld, 4) == 0);
        CHECK(memcmp(&winner[1], &d, 4) == 0 && memcmp(&best_q[1], &d, 4) == 0);
        lc_frame_fini(&f);
    }
    CHECK_EQ_U64(tested, 500); /* such records are common */
    rec_free(rec);
}

int main(void)
{
    CHECK(sizeof(lc_frame) <= 2560);
    test_input_formats();
    test_policy();
    test_v6_v7();
    test_legacy_wdl_rounding();
    test_v5();
    test_v4_v3();
    test_record_check();
    test_real_game("lc0-909a408-fmt1", 1);
    test_real_game("lc0-v0.31.2-fmt5", 5);
    return check_finish();
}
