/*
 * frames: test helpers for compact frames (format/lc0/frame.h): two frames
 * compared field by field and tensor by tensor (both layouts, bit for bit),
 * and a frame written back as a record of any version 3..7, so that tests
 * can make records of every version (and input format) from real games.
 */
#ifndef LC_TEST_FRAMES_H
#define LC_TEST_FRAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "format/lc0/frame.h"
#include "format/lc0/record.h"

static inline uint32_t tf_bits(float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    return b;
}

/* Store policy entry e of a frame (inline, or in the overflow arrays the
 * caller allocated for entries LC_FRAME_INLINE_POLICY and up). */
static inline void tf_policy_put(lc_frame *f, unsigned e, uint16_t idx, float val)
{
    if (e < LC_FRAME_INLINE_POLICY) {
        f->policy_idx[e] = idx;
        f->policy_val[e] = val;
    } else {
        f->overflow_idx[e - LC_FRAME_INLINE_POLICY] = idx;
        f->overflow_val[e - LC_FRAME_INLINE_POLICY] = val;
    }
}

/* Every field the frame keeps, bit for bit (floats by their bits, so NaN
 * payloads count). same_version: compare the version too. */
static inline void tf_check_same_fields(const lc_frame *a, const lc_frame *b, bool same_version)
{
    if (same_version)
        CHECK_EQ_U64(a->version, b->version);
    CHECK_EQ_U64(a->input_format, b->input_format);
    CHECK(memcmp(a->planes, b->planes, sizeof a->planes) == 0);
    CHECK_EQ_U64(a->castling_us_ooo, b->castling_us_ooo);
    CHECK_EQ_U64(a->castling_us_oo, b->castling_us_oo);
    CHECK_EQ_U64(a->castling_them_ooo, b->castling_them_ooo);
    CHECK_EQ_U64(a->castling_them_oo, b->castling_them_oo);
    CHECK_EQ_U64(a->side_to_move_or_enpassant, b->side_to_move_or_enpassant);
    CHECK_EQ_U64(a->rule50_count, b->rule50_count);
    CHECK_EQ_U64(a->invariance_info, b->invariance_info);
    CHECK_EQ_INT(a->result, b->result);
    const float fa[] = {a->root_q,   a->best_q,     a->root_d,    a->best_d,   a->root_m,
                        a->best_m,   a->plies_left, a->result_q,  a->result_d, a->played_q,
                        a->played_d, a->played_m,   a->orig_q,    a->orig_d,   a->orig_m,
                        a->q_st,     a->d_st,       a->policy_kld};
    const float fb[] = {b->root_q,   b->best_q,     b->root_d,    b->best_d,   b->root_m,
                        b->best_m,   b->plies_left, b->result_q,  b->result_d, b->played_q,
                        b->played_d, b->played_m,   b->orig_q,    b->orig_d,   b->orig_m,
                        b->q_st,     b->d_st,       b->policy_kld};
    for (size_t i = 0; i < sizeof fa / sizeof fa[0]; i++)
        if (tf_bits(fa[i]) != tf_bits(fb[i]))
            fprintf(stderr, "float field %zu differs: %g vs %g\n", i, fa[i], fb[i]);
    CHECK(memcmp(fa, fb, sizeof fa) == 0);
    CHECK_EQ_U64(a->played_idx, b->played_idx);
    CHECK_EQ_U64(a->best_idx, b->best_idx);
    CHECK_EQ_U64(a->opp_played_idx, b->opp_played_idx);
    CHECK_EQ_U64(a->next_played_idx, b->next_played_idx);
    CHECK_EQ_U64(a->n_policy, b->n_policy);
    if (a->n_policy == b->n_policy) {
        size_t n = a->n_policy, in = n < LC_FRAME_INLINE_POLICY ? n : LC_FRAME_INLINE_POLICY;
        CHECK(memcmp(a->policy_idx, b->policy_idx, in * sizeof *a->policy_idx) == 0);
        CHECK(memcmp(a->policy_val, b->policy_val, in * sizeof *a->policy_val) == 0);
        CHECK((a->overflow_idx != NULL) == (n > LC_FRAME_INLINE_POLICY));
        CHECK((b->overflow_idx != NULL) == (n > LC_FRAME_INLINE_POLICY));
        if (n > LC_FRAME_INLINE_POLICY && a->overflow_idx && b->overflow_idx) {
            CHECK(memcmp(a->overflow_idx, b->overflow_idx, (n - in) * sizeof *a->overflow_idx) ==
                  0);
            CHECK(memcmp(a->overflow_val, b->overflow_val, (n - in) * sizeof *a->overflow_val) ==
                  0);
        }
    }
}

/* Every tensor of both layouts (current: inputs, policy, values; legacy:
 * winner, best_q, plies_left), compared bit by bit. Returns true when all
 * are the same (and counts one check). */
static inline bool tf_check_same_tensors(const lc_frame *a, const lc_frame *b)
{
    enum { N = LC_INPUT_PLANES * 64 };
    float *ta = malloc(N * sizeof(float));
    float *tb = malloc(N * sizeof(float));
    bool same = true;
    lc_frame_input_planes(a, ta);
    lc_frame_input_planes(b, tb);
    same &= memcmp(ta, tb, N * sizeof(float)) == 0;
    lc_frame_policy(a, ta);
    lc_frame_policy(b, tb);
    same &= memcmp(ta, tb, LC_POLICY_SIZE * sizeof(float)) == 0;
    lc_frame_values(a, ta);
    lc_frame_values(b, tb);
    same &= memcmp(ta, tb, 18 * sizeof(float)) == 0;
    lc_frame_legacy_targets(a, ta, ta + 3, ta + 6);
    lc_frame_legacy_targets(b, tb, tb + 3, tb + 6);
    same &= memcmp(ta, tb, 7 * sizeof(float)) == 0;
    CHECK(same);
    free(ta);
    free(tb);
    return same;
}

/*
 * Write f as a record of `version` (3..7) into rec (room for
 * LC_V7_RECORD_SIZE bytes); returns the record's size. Fields the version
 * has come from f; V5 and older keep f->result as their int8 result, V4
 * and V3 have no input format (readers take 1) and keep f->invariance_info
 * as their move count. Reading the record back as `version` gives f again
 * in every field that version has.
 */
static inline size_t tf_write_record(const lc_frame *f, uint32_t version, uint8_t *rec)
{
    lc_frame g = *f;
    g.version = version;
    if (version >= 5) {
        uint8_t v7[LC_V7_RECORD_SIZE];
        lc_frame_to_record_v7(&g, v7);
        size_t size = lc_record_size_for_version(version);
        memcpy(rec, v7, size);
        return size;
    }
    /* V4 and V3: no input_format, so everything sits 4 bytes lower. */
    size_t size = lc_record_size_for_version(version);
    memset(rec, 0, size);
    memcpy(rec, &version, 4);
    const uint32_t minus_one = 0xBF800000u;
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        memcpy(rec + 4 + 4 * i, &minus_one, 4);
    for (unsigned k = 0; k < f->n_policy; k++) {
        uint16_t idx = k < LC_FRAME_INLINE_POLICY ? f->policy_idx[k]
                                                  : f->overflow_idx[k - LC_FRAME_INLINE_POLICY];
        float val = k < LC_FRAME_INLINE_POLICY ? f->policy_val[k]
                                               : f->overflow_val[k - LC_FRAME_INLINE_POLICY];
        memcpy(rec + 4 + 4 * (size_t)idx, &val, 4);
    }
    memcpy(rec + 7436, f->planes, sizeof f->planes);
    rec[8268] = f->castling_us_ooo;
    rec[8269] = f->castling_us_oo;
    rec[8270] = f->castling_them_ooo;
    rec[8271] = f->castling_them_oo;
    rec[8272] = f->side_to_move_or_enpassant;
    rec[8273] = f->rule50_count;
    rec[8274] = f->invariance_info;
    rec[8275] = (uint8_t)f->result;
    if (version == 4) {
        memcpy(rec + 8276, &f->root_q, 4);
        memcpy(rec + 8280, &f->best_q, 4);
        memcpy(rec + 8284, &f->root_d, 4);
        memcpy(rec + 8288, &f->best_d, 4);
    }
    return size;
}

/* n frames as records of `version`, back to back (record_size apart):
 * malloc'd, the caller frees. */
static inline uint8_t *tf_records(const lc_frame *frames, uint32_t n, uint32_t version,
                                  size_t *record_size)
{
    size_t size = lc_record_size_for_version(version);
    uint8_t *recs = malloc((size_t)n * size + 1);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t tmp[LC_V7_RECORD_SIZE];
        tf_write_record(&frames[i], version, tmp);
        memcpy(recs + (size_t)i * size, tmp, size);
    }
    *record_size = size;
    return recs;
}

/* What tf_each_form hands on: n records of `version`, record_size apart. */
typedef void (*tf_records_fn)(const uint8_t *recs, size_t record_size, uint32_t n, uint32_t version,
                              void *ctx);

/*
 * The n frames as records of every version 3..7 but `skip` (0: none), then
 * as V7 records of the input formats no sample has (4, 132 and 133: the
 * same planes, read otherwise; the frames keep the last), each handed to fn.
 */
static inline void tf_each_form(lc_frame *frames, uint32_t n, uint32_t skip, tf_records_fn fn,
                                void *ctx)
{
    size_t size;
    for (uint32_t v = 3; v <= 7; v++) {
        if (v == skip)
            continue;
        uint8_t *recs = tf_records(frames, n, v, &size);
        fn(recs, size, n, v, ctx);
        free(recs);
    }
    static const uint32_t formats[] = {4, 132, 133};
    for (size_t k = 0; k < 3; k++) {
        for (uint32_t i = 0; i < n; i++)
            frames[i].input_format = formats[k];
        uint8_t *recs = tf_records(frames, n, 7, &size);
        fn(recs, size, n, 7, ctx);
        free(recs);
    }
}

#endif
