/*
 * test_rescore_patch: the chunk_rescorer's patch of a stored game
 * (format/lc0/rescore/rescore_patch.h), made from frames before and after changes
 * written by hand and applied to the frames before: every changed field
 * comes out as after, bit for bit (NaN payloads too), every other as
 * before; the short-term targets make the position V7; a game with nothing
 * changed gives an empty patch that changes nothing; the key survives;
 * a position outside the game and a policy of another length are refused;
 * a dropped game's patch keeps its key and says dropped (not empty, no
 * format, no targets) and refuses every position, and no other patch says
 * dropped; a conversion's patch converts each frame of a real game as the
 * game's records convert (none for frames that are not a game).
 */
#include "check.h"
#include "frames.h"
#include "testutil.h"

#include "format/gzip.h"
#include "format/lc0/rescore/input_format_convert.h"
#include "format/lc0/rescore/rescore_patch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 6

static void frame(lc_frame *f, uint32_t pos)
{
    memset(f, 0, sizeof *f);
    f->version = 6;
    f->input_format = 1;
    f->planes[0] = 0x1234u + pos;
    f->result_q = 0;
    f->result_d = 1;
    f->plies_left = (float)(30 - pos);
    f->n_policy = 3;
    for (unsigned k = 0; k < 3; k++) {
        f->policy_idx[k] = (uint16_t)(10 * k + pos);
        f->policy_val[k] = 1.0f / 3;
    }
    f->q_st = 0.5f;
    f->d_st = NAN;
    f->opp_played_idx = f->next_played_idx = 0xFFFF;
}

static uint32_t bits(float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    return b;
}

static void test_round_trip(void)
{
    lc_frame before[N], after[N];
    for (uint32_t i = 0; i < N; i++) {
        frame(&before[i], i);
        frame(&after[i], i);
    }
    /* Results of positions 0..3 changed (position 2 with a NaN payload);
     * the policy of positions 3 and 5; 4 untouched. */
    for (uint32_t i = 0; i < 4; i++) {
        after[i].result_q = i % 2 ? -1.0f : 1.0f;
        after[i].result_d = 0;
        after[i].result = (int8_t)(i % 2 ? -1 : 1);
    }
    uint32_t payload = 0x7fc01234u;
    memcpy(&after[2].plies_left, &payload, 4);
    after[3].policy_val[0] = 0;
    after[3].policy_val[1] = 0.75f;
    after[5].policy_val[2] = 0.125f;
    float st[4 * N];
    for (uint32_t i = 0; i < N; i++) {
        st[4 * i] = 0.1f * (float)i;
        st[4 * i + 1] = 0.2f;
        st[4 * i + 2] = (float)(100 + i);
        st[4 * i + 3] = i + 2 < N ? (float)(200 + i) : 65535.0f;
    }
    uint64_t key = 0xfedcba9876543210ull;
    uint32_t changed = 0;
    float *p = lc_rescore_patch_make(key, 0, before, after, N, st, &changed);
    CHECK_EQ_U64(changed, 5);
    CHECK_EQ_U64(lc_rescore_patch_key(p), key);
    CHECK(lc_rescore_patch_has_st(p));
    CHECK(!lc_rescore_patch_is_empty(p));
    CHECK_EQ_U64(lc_rescore_patch_format(p), 0);
    for (uint32_t i = 0; i < N; i++) {
        lc_frame f = before[i];
        CHECK_OK(lc_rescore_patch_apply(p, i, &f, NULL));
        CHECK_EQ_U64(bits(f.result_q), bits(after[i].result_q));
        CHECK_EQ_U64(bits(f.result_d), bits(after[i].result_d));
        CHECK_EQ_U64(bits(f.plies_left), bits(after[i].plies_left));
        CHECK_EQ_INT(f.result, after[i].result);
        for (unsigned k = 0; k < 3; k++) {
            CHECK_EQ_U64(bits(f.policy_val[k]), bits(after[i].policy_val[k]));
            CHECK_EQ_U64(f.policy_idx[k], before[i].policy_idx[k]);
        }
        CHECK(memcmp(f.planes, before[i].planes, sizeof f.planes) == 0);
        CHECK_EQ_U64(f.version, 7);
        CHECK_EQ_U64(bits(f.q_st), bits(st[4 * i]));
        CHECK_EQ_U64(bits(f.d_st), bits(st[4 * i + 1]));
        CHECK_EQ_U64(f.opp_played_idx, 100 + i);
        CHECK_EQ_U64(f.next_played_idx, i + 2 < N ? 200 + i : 0xFFFF);
    }
    lc_error err;
    lc_frame f = before[0];
    CHECK(lc_rescore_patch_apply(p, N, &f, &err) == LC_EFORMAT);
    f = before[3];
    f.n_policy = 2;
    CHECK(lc_rescore_patch_apply(p, 3, &f, &err) == LC_EFORMAT);
    printf("%s\n", err.msg);
    free(p);
}

static void test_nothing_changed(void)
{
    lc_frame before[N];
    for (uint32_t i = 0; i < N; i++)
        frame(&before[i], i);
    uint32_t changed = 9;
    float *p = lc_rescore_patch_make(7, 0, before, before, N, NULL, &changed);
    CHECK_EQ_U64(changed, 0);
    CHECK(lc_rescore_patch_is_empty(p));
    CHECK_EQ_U64(lc_rescore_patch_key(p), 7);
    for (uint32_t i = 0; i < N; i++) {
        lc_frame f = before[i];
        CHECK_OK(lc_rescore_patch_apply(p, i, &f, NULL));
        CHECK(memcmp(&f, &before[i], sizeof f) == 0);
    }
    free(p);
    /* No frames at all: the same. */
    p = lc_rescore_patch_make(7, 0, NULL, NULL, N, NULL, NULL);
    CHECK(lc_rescore_patch_is_empty(p));
    free(p);
    /* A conversion needs the game: with no frames, or frames that are not
     * one game (these: no kings), none is made. */
    p = lc_rescore_patch_make(7, 3, NULL, NULL, N, NULL, NULL);
    CHECK(lc_rescore_patch_is_empty(p));
    free(p);
    p = lc_rescore_patch_make(7, 3, before, before, N, NULL, NULL);
    CHECK(lc_rescore_patch_is_empty(p));
    CHECK_EQ_U64(lc_rescore_patch_format(p), 0);
    free(p);
}

static void test_conversion(void)
{
    /* A real game (lc0's, format 3): a conversion alone is not empty, and
     * each frame comes out as its record converted with the game
     * (input_format_convert.h). */
    char *dir = lc_xasprintf("%s/lc0-v0.31.2-fmt3", tu_test_data());
    char *path = tu_first_gz(dir);
    size_t glen = 0, rlen = 0;
    uint8_t *gz = tu_read_file(path, &glen), *recs = NULL;
    CHECK(gz != NULL);
    lc_error err;
    CHECK_OK(lc_gunzip(gz, glen, LC_INFLATE_AUTO, 1 << 26, &recs, &rlen, &err));
    uint32_t n = (uint32_t)(rlen / LC_V6_RECORD_SIZE);
    lc_frame *fr = calloc(n, sizeof *fr);
    for (uint32_t i = 0; i < n; i++)
        CHECK_OK(lc_frame_from_record(recs + (size_t)i * LC_V6_RECORD_SIZE, 6, &fr[i], &err));
    float *p = lc_rescore_patch_make(7, 1, fr, fr, n, NULL, NULL);
    CHECK(!lc_rescore_patch_is_empty(p));
    CHECK_EQ_U64(lc_rescore_patch_format(p), 1);
    CHECK_OK(lc_game_convert_format(recs, LC_V6_RECORD_SIZE, n, 6, 1, &err));
    for (uint32_t i = 0; i < n; i++) {
        lc_frame want;
        CHECK_OK(lc_rescore_patch_apply(p, i, &fr[i], &err));
        CHECK_OK(lc_frame_from_record(recs + (size_t)i * LC_V6_RECORD_SIZE, 6, &want, &err));
        tf_check_same_fields(&fr[i], &want, true);
        lc_frame_fini(&want);
        lc_frame_fini(&fr[i]);
    }
    free(p);
    free(fr);
    free(recs);
    free(gz);
    free(path);
    free(dir);
}

static void test_dropped(void)
{
    lc_frame before[N];
    for (uint32_t i = 0; i < N; i++)
        frame(&before[i], i);
    float *p = lc_rescore_patch_dropped(0xfedcba9876543210ull, N);
    CHECK(lc_rescore_patch_is_dropped(p));
    CHECK(!lc_rescore_patch_is_empty(p)); /* handed on, so that it is seen */
    CHECK_EQ_U64(lc_rescore_patch_key(p), 0xfedcba9876543210ull);
    CHECK_EQ_U64(lc_rescore_patch_format(p), 0);
    CHECK(!lc_rescore_patch_has_st(p));
    for (uint32_t i = 0; i < N; i++) {
        lc_frame f = before[i];
        lc_error err;
        lc_error_clear(&err);
        CHECK(lc_rescore_patch_apply(p, i, &f, &err) == LC_EFORMAT);
        CHECK(strstr(err.msg, "dropped") != NULL);
        CHECK(memcmp(&f, &before[i], sizeof f) == 0);
    }
    free(p);
    /* Patches of kept games never say dropped: empty, a conversion, and
     * one with results, policies and targets. */
    float st[4 * N] = {0};
    lc_frame after[N];
    memcpy(after, before, sizeof after);
    after[2].result_q = 1;
    after[4].policy_val[1] = 0;
    float *kept[] = {lc_rescore_patch_make(1, 0, NULL, NULL, N, NULL, NULL),
                     lc_rescore_patch_make(1, 3, NULL, NULL, N, NULL, NULL),
                     lc_rescore_patch_make(1, 0, before, after, N, st, NULL)};
    for (unsigned k = 0; k < 3; k++) {
        CHECK(!lc_rescore_patch_is_dropped(kept[k]));
        free(kept[k]);
    }
}

int main(void)
{
    test_round_trip();
    test_nothing_changed();
    test_dropped();
    test_conversion();
    return check_finish();
}
