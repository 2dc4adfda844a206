/*
 * test_frame: the compact frame (format/lc0/frame.h).
 *
 * Records are built by hand at the documented offsets (docs/lc0-training-data.md),
 * placed at odd addresses in buffers of exactly the record's size (so that the
 * sanitizers catch a read past the end), and the expected tensors are computed
 * here square by square from the doc's rules, never by calling the code under
 * test. Pre-V6 records and lc0's own games: test_frame_legacy.c.
 */
#include "frame_test.h"

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

    /* 300 entries: the overflow path (the first 64 inline, the rest in the
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
        rec_put_f32(rec, 8 + 4 * i, i % 31 ? -1.0f : 0.01f);
    CHECK_OK(lc_frame_from_record(rec, 6, &f, NULL));
    CHECK_EQ_U64(f.n_policy, 60);
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
                w = 0.0f; /* V6 has no d_st: upstream's 0.0 */
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
            CHECK(dst == 0.0f);
        }
        rec_free(out);
        check_round_trip(&f);

        /* In V6+ too, a zero plies_left falls back to the invariance byte
         * (0x85 here) in the legacy layout, as the legacy chunkparser does;
         * the values layout keeps the 0. A NaN stays NaN. */
        rec_put_f32(rec, 8304, 0.0f);
        lc_frame g;
        CHECK_OK(lc_frame_from_record(rec, version, &g, NULL));
        lc_frame_legacy_targets(&g, winner, best_q, &plies);
        CHECK_NEAR(plies, 0x85, 0);
        lc_frame_values(&g, v);
        CHECK_NEAR(v[2], 0, 0);
        lc_frame_fini(&g);
        rec_put_f32(rec, 8304, NAN);
        CHECK_OK(lc_frame_from_record(rec, version, &g, NULL));
        lc_frame_legacy_targets(&g, winner, best_q, &plies);
        CHECK(isnan(plies));
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

int main(void)
{
    CHECK(sizeof(lc_frame) <= 2560);
    test_input_formats();
    test_policy();
    test_v6_v7();
    test_record_check();
    return check_finish();
}
