/*
 * test_record: the V6/V7 layout (offsets checked at run time as well as at
 * compile time), LC_REC_GET on unaligned bytes, and the fields of real lc0
 * records: the first game of lc0-v0.31.2-fmt1 from the sample set
 * LCMON_SAMPLES names (when it holds that folder), else from tests/data.
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "testutil.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/record.h"

#define OFF6(f, o) CHECK_EQ_U64(offsetof(lc_v6_record, f), o)
#define OFF7(f, o) CHECK_EQ_U64(offsetof(lc_v7_record, f), o)

static void test_offsets(void)
{
    CHECK_EQ_U64(sizeof(lc_v6_record), 8356);
    CHECK_EQ_U64(sizeof(lc_v7_record), 8396);
    OFF6(version, 0);
    OFF6(input_format, 4);
    OFF6(probabilities, 8);
    OFF6(planes, 7440);
    OFF6(castling_us_ooo, 8272);
    OFF6(castling_us_oo, 8273);
    OFF6(castling_them_ooo, 8274);
    OFF6(castling_them_oo, 8275);
    OFF6(side_to_move_or_enpassant, 8276);
    OFF6(rule50_count, 8277);
    OFF6(invariance_info, 8278);
    OFF6(dummy, 8279);
    OFF6(root_q, 8280);
    OFF6(best_q, 8284);
    OFF6(root_d, 8288);
    OFF6(best_d, 8292);
    OFF6(root_m, 8296);
    OFF6(best_m, 8300);
    OFF6(plies_left, 8304);
    OFF6(result_q, 8308);
    OFF6(result_d, 8312);
    OFF6(played_q, 8316);
    OFF6(played_d, 8320);
    OFF6(played_m, 8324);
    OFF6(orig_q, 8328);
    OFF6(orig_d, 8332);
    OFF6(orig_m, 8336);
    OFF6(visits, 8340);
    OFF6(played_idx, 8344);
    OFF6(best_idx, 8346);
    OFF6(policy_kld, 8348);
    OFF6(q_st, 8352);
    OFF7(played_idx, 8344);
    OFF7(q_st, 8352);
    OFF7(d_st, 8356);
    OFF7(opp_played_idx, 8360);
    OFF7(next_played_idx, 8362);
    OFF7(reserved, 8364);
}

/* Write known values at the documented offsets of a record placed at an odd
 * address, and read them back with the macros. */
static void test_unaligned_get(void)
{
    uint8_t *buf = calloc(1, LC_V7_RECORD_SIZE + 3);
    uint8_t *rec = buf + 3;
    uint32_t v = 7, fmt = 3, visits = 812;
    uint16_t played = 1234, best = 57, opp = 999, next = 1857;
    float q = -0.25f, dst = 0.125f, p10 = 0.5f;
    uint64_t plane5 = 0x0123456789abcdefULL;
    memcpy(rec + 0, &v, 4);
    memcpy(rec + 4, &fmt, 4);
    memcpy(rec + 8 + 4 * 10, &p10, 4);
    memcpy(rec + 7440 + 8 * 5, &plane5, 8);
    rec[8277] = 42;
    memcpy(rec + 8308, &q, 4);
    memcpy(rec + 8340, &visits, 4);
    memcpy(rec + 8344, &played, 2);
    memcpy(rec + 8346, &best, 2);
    memcpy(rec + 8356, &dst, 4);
    memcpy(rec + 8360, &opp, 2);
    memcpy(rec + 8362, &next, 2);

    uint32_t gv, gfmt, gvisits;
    uint16_t gplayed, gbest, gopp, gnext;
    uint8_t r50;
    float gq, gdst;
    LC_REC_GET(rec, version, gv);
    LC_REC_GET(rec, input_format, gfmt);
    LC_REC_GET(rec, rule50_count, r50);
    LC_REC_GET(rec, result_q, gq);
    LC_REC_GET(rec, visits, gvisits);
    LC_REC_GET(rec, played_idx, gplayed);
    LC_REC_GET(rec, best_idx, gbest);
    LC_REC7_GET(rec, d_st, gdst);
    LC_REC7_GET(rec, opp_played_idx, gopp);
    LC_REC7_GET(rec, next_played_idx, gnext);
    CHECK_EQ_U64(gv, 7);
    CHECK_EQ_U64(gfmt, 3);
    CHECK_EQ_U64(r50, 42);
    CHECK_NEAR(gq, -0.25, 0);
    CHECK_EQ_U64(gvisits, 812);
    CHECK_EQ_U64(gplayed, 1234);
    CHECK_EQ_U64(gbest, 57);
    CHECK_NEAR(gdst, 0.125, 0);
    CHECK_EQ_U64(gopp, 999);
    CHECK_EQ_U64(gnext, 1857);

    float probs[LC_POLICY_SIZE];
    uint64_t planes[LC_RECORD_PLANES];
    LC_REC_GET(rec, probabilities, probs);
    LC_REC_GET(rec, planes, planes);
    CHECK_NEAR(probs[10], 0.5, 0);
    CHECK_NEAR(probs[11], 0, 0);
    CHECK_EQ_U64(planes[5], plane5);
    CHECK_NEAR(lc_rec_probability(rec, 10), 0.5, 0);
    CHECK_EQ_U64(lc_rec_plane(rec, 5), plane5);
    free(buf);
}

static void test_real_records(void)
{
    const char *samples = getenv("LCMON_SAMPLES");
    char *dir = NULL;
    if (samples && *samples) {
        dir = lc_xasprintf("%s/lc0-v0.31.2-fmt1", samples);
        if (!tu_is_dir(dir)) {
            free(dir);
            dir = NULL;
        }
    }
    if (!dir)
        dir = lc_xasprintf("%s/lc0-v0.31.2-fmt1", tu_test_data());
    char *path = tu_first_gz(dir);
    CHECK(path != NULL);
    if (!path) {
        fprintf(stderr, "no .gz in %s\n", dir);
        free(dir);
        return;
    }
    printf("sample game: %s\n", path);

    lc_chunk_source *src;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_chunk_source_open(path, &src, &err));
    lc_chunk_data c;
    int rc = lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, &c, &err);
    CHECK_OK(rc);
    if (rc == 0) {
        CHECK_EQ_INT(c.version, 6);
        CHECK_EQ_U64(c.record_size, LC_V6_RECORD_SIZE);
        CHECK(c.n_records > 0);
        size_t bad_prob = 0, bad_sum = 0, bad_played = 0, bad_best = 0;
        float prev_plies = 0;
        for (size_t r = 0; r < c.n_records; r++) {
            const uint8_t *rec = c.data + r * c.record_size;
            uint32_t version, input_format;
            LC_REC_GET(rec, version, version);
            LC_REC_GET(rec, input_format, input_format);
            CHECK_EQ_U64(version, 6);
            CHECK_EQ_U64(input_format, 1);
            double sum = 0;
            for (size_t i = 0; i < LC_POLICY_SIZE; i++) {
                float p = lc_rec_probability(rec, i);
                if (p == -1.0f)
                    continue;
                if (!(p >= 0.0f))
                    bad_prob++;
                else
                    sum += p;
            }
            if (fabs(sum - 1.0) > 1e-3)
                bad_sum++;
            uint16_t played, best;
            LC_REC_GET(rec, played_idx, played);
            LC_REC_GET(rec, best_idx, best);
            if (played >= LC_POLICY_SIZE || !(lc_rec_probability(rec, played) >= 0.0f))
                bad_played++;
            if (best >= LC_POLICY_SIZE || !(lc_rec_probability(rec, best) >= 0.0f))
                bad_best++;
            /* Castling bytes are 0/1 in format 1. */
            uint8_t c_ooo, c_oo;
            LC_REC_GET(rec, castling_us_ooo, c_ooo);
            LC_REC_GET(rec, castling_them_oo, c_oo);
            CHECK(c_ooo <= 1 && c_oo <= 1);
            float plies;
            LC_REC_GET(rec, plies_left, plies);
            if (r > 0)
                CHECK_NEAR(prev_plies - plies, 1.0, 1e-3);
            prev_plies = plies;
            /* Planes 0 and 6 (our and their pawns) never overlap. */
            CHECK((lc_rec_plane(rec, 0) & lc_rec_plane(rec, 6)) == 0);
        }
        CHECK_EQ_U64(bad_prob, 0);
        CHECK_EQ_U64(bad_sum, 0);
        CHECK_EQ_U64(bad_played, 0);
        CHECK_EQ_U64(bad_best, 0);
        printf("%zu records checked\n", c.n_records);
        lc_chunk_data_fini(&c);
    } else {
        fprintf(stderr, "%s\n", err.msg);
    }
    lc_chunk_source_unref(src);
    free(path);
    free(dir);
}

int main(void)
{
    test_offsets();
    test_unaligned_get();
    CHECK_EQ_INT(LC_POLICY_SIZE, 1858);
    CHECK_EQ_INT(LC_RECORD_PLANES, 104);
    test_real_records();
    return check_finish();
}
