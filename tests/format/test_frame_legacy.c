/*
 * test_frame_legacy: the compact frame (format/lc0/frame.h) from the record
 * versions before V6 (V5, V4, V3), hand-built as test_frame.c builds V6;
 * the legacy trainer's WDL targets rounded once; and the real games of
 * tests/data, lc0's own output: every record passes lc_record_check and
 * survives a round trip.
 */
#include <dirent.h>

#include "frame_test.h"
#include "format/lc0/chunk_source.h"

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

    /* A stored NaN is not 0: the legacy parser keeps it (no fallback). */
    rec_put_f32(rec, 8304, NAN);
    CHECK_OK(lc_frame_from_record(rec, 5, &f, NULL));
    lc_frame_legacy_targets(&f, winner, best_q, &plies);
    CHECK(isnan(plies));
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
                /* The legacy parser's zero padding: best_q 0, best_d 0 give
                 * W = 0.5, D = 0, L = 0.5 (the frame keeps NaN: unknown). */
                CHECK_NEAR(best_q[0], 0.5, 0);
                CHECK_NEAR(best_q[1], 0, 0);
                CHECK_NEAR(best_q[2], 0.5, 0);
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

        /* Written back, the record is the original except for visits,
         * which the frame does not keep. */
        lc_frame_to_record_v7(&f, out);
        memcpy(orig, rec, LC_V6_RECORD_SIZE);
        memset(orig + 8340, 0, 4);
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
    test_legacy_wdl_rounding();
    test_v5();
    test_v4_v3();
    test_real_game("lc0-909a408-fmt1", 1);
    test_real_game("lc0-v0.31.2-fmt5", 5);
    return check_finish();
}
