/*
 * short_term: see short_term.h. Moved out of chunk_unpacker.c when
 * chunk_rescorer came to compute the same targets for whole games.
 */
#include "stages/short_term.h"

#include "core/error.h"
#include "format/lc0/frame.h"
#include "format/lc0/record.h"
#include "format/lc0/rescore/rescore_patch.h"
#include "format/lc0/st_targets.h"

#include <stdlib.h>
#include <string.h>

const lc_setting_value lc_st_values[] = {
    {"keep", LC_ST_KEEP},
    {"compute", LC_ST_COMPUTE},
    {0},
};

const lc_setting_value lc_st_math_values[] = {
    {"float", LC_ST_FLOAT},
    {"double", LC_ST_DOUBLE},
    {0},
};

void lc_st_scratch_fini(lc_st_scratch *st)
{
    free(st->root_q);
    free(st->root_d);
    free(st->q_st);
    free(st->d_st);
    free(st->played);
    free(st->opp);
    free(st->next);
    free(st->own);
}

/* Room for n positions in every array of st. */
static void st_reserve(lc_st_scratch *st, uint32_t n)
{
    if (n <= st->cap)
        return;
    st->cap = n;
    st->root_q = lc_xrealloc(st->root_q, n * sizeof *st->root_q);
    st->root_d = lc_xrealloc(st->root_d, n * sizeof *st->root_d);
    st->q_st = lc_xrealloc(st->q_st, n * sizeof *st->q_st);
    st->d_st = lc_xrealloc(st->d_st, n * sizeof *st->d_st);
    st->played = lc_xrealloc(st->played, n * sizeof *st->played);
    st->opp = lc_xrealloc(st->opp, n * sizeof *st->opp);
    st->next = lc_xrealloc(st->next, n * sizeof *st->next);
}

void lc_st_rows(const float *root_q, const float *root_d, const uint16_t *played, uint32_t n,
                double theta, int math, float *out, lc_st_scratch *st)
{
    st_reserve(st, n);
    lc_st_targets(root_q, root_d, played, n, theta, math, st->q_st, st->d_st, st->opp, st->next);
    for (uint32_t k = 0; k < n; k++) {
        out[4 * (size_t)k] = st->q_st[k];
        out[4 * (size_t)k + 1] = st->d_st[k];
        out[4 * (size_t)k + 2] = st->opp[k];
        out[4 * (size_t)k + 3] = st->next[k];
    }
}

/* The key before a stored chunk's targets, in the room of ST_HEAD floats:
 * theta's double (its bytes: a theta that differs only past float's
 * precision still changes the double sum), the input format the rescorer's
 * patch converts to (0: none; the played moves are then those of the
 * converted frames) and the math (LC_ST_FLOAT or LC_ST_DOUBLE). */
#define ST_HEAD 4

static void st_head(float *head, double theta, uint32_t format, int math)
{
    memcpy(head, &theta, sizeof theta);
    head[2] = (float)format;
    head[3] = (float)math;
}

/* A stored V6 chunk's targets for the whole game, computed once (decoding
 * it whole) and kept with it: the key, then 4 floats a position. NULL when
 * a position does not decode. */
static const float *stored_st(double theta, int math, const lc_chunk_item *c, lc_unpack_ctx **uctx,
                              lc_st_scratch *st)
{
    uint32_t format = c->patch ? lc_rescore_patch_format(c->patch) : 0;
    float head[ST_HEAD];
    st_head(head, theta, format, math);
    const float *kept = lc_packed_chunk_aux(c->packed, LC_AUX_ST);
    if (kept && memcmp(kept, head, sizeof head) == 0)
        return kept;
    uint32_t n = c->n_records;
    st_reserve(st, n ? n : 1);
    for (uint32_t i = 0; i < n; i++) {
        lc_frame f;
        lc_error err;
        if (!*uctx)
            *uctx = lc_unpack_ctx_new();
        if (lc_packed_chunk_frame(c->packed, *uctx, i, &f, &err) != 0)
            return NULL;
        if (format && lc_rescore_patch_apply(c->patch, i, &f, &err) != 0) {
            lc_frame_fini(&f);
            return NULL;
        }
        st->root_q[i] = f.root_q;
        st->root_d[i] = f.root_d;
        st->played[i] = f.played_idx;
        lc_frame_fini(&f);
    }
    float *out = lc_xmalloc((ST_HEAD + 4 * (size_t)n) * sizeof *out);
    memcpy(out, head, sizeof head);
    lc_st_rows(st->root_q, st->root_d, st->played, n, theta, math, out + ST_HEAD, st);
    if (!kept) /* the first to compute them keeps them with the chunk */
        return lc_packed_chunk_attach_aux(c->packed, LC_AUX_ST, out);
    free(st->own);
    st->own = out;
    return out;
}

void lc_st_for_picks(double theta, int math, const lc_chunk_item *c, const uint32_t *picks,
                     uint32_t k, lc_unpack_ctx **uctx, lc_st_scratch *st)
{
    st->valid = false;
    if (c->version != 6 || k == 0)
        return;
    uint32_t first = picks[0];
    for (uint32_t j = 1; j < k; j++)
        first = picks[j] < first ? picks[j] : first;
    /* Upstream's sign domain goes by the game's ply index: from an even
     * position, the same parity (a zero sum's sign depends on it). */
    first &= ~1u;
    uint32_t n = c->n_records - first;
    if (c->packed) {
        const float *kept = stored_st(theta, math, c, uctx, st);
        if (!kept)
            return; /* a position did not decode: its own decode reports it */
        st_reserve(st, n);
        for (uint32_t i = 0; i < n; i++) {
            const float *v = kept + ST_HEAD + 4 * (size_t)(first + i);
            st->q_st[i] = v[0];
            st->d_st[i] = v[1];
            st->opp[i] = (uint16_t)v[2];
            st->next[i] = (uint16_t)v[3];
        }
    } else {
        st_reserve(st, n);
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *rec = c->data + (size_t)(first + i) * c->record_size;
            LC_REC_GET(rec, root_q, st->root_q[i]);
            LC_REC_GET(rec, root_d, st->root_d[i]);
            LC_REC_GET(rec, played_idx, st->played[i]);
        }
        lc_st_targets(st->root_q, st->root_d, st->played, n, theta, math, st->q_st, st->d_st,
                      st->opp, st->next);
    }
    st->first = first;
    st->valid = true;
}

uint8_t *lc_st_records_v7(uint8_t *v6, uint32_t n, double theta, int math, lc_st_scratch *st)
{
    st_reserve(st, n ? n : 1);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *rec = v6 + (size_t)i * LC_V6_RECORD_SIZE;
        LC_REC_GET(rec, root_q, st->root_q[i]);
        LC_REC_GET(rec, root_d, st->root_d[i]);
        LC_REC_GET(rec, played_idx, st->played[i]);
    }
    lc_st_targets(st->root_q, st->root_d, st->played, n, theta, math, st->q_st, st->d_st, st->opp,
                  st->next);
    /* In place, last record first: record i moves up by 40 i bytes, past
     * where record i - 1 ends, so nothing is overwritten before it moved
     * (a large buffer grows by remapping its pages, without a copy). */
    uint8_t *out = lc_xrealloc(v6, (n ? n : 1) * (size_t)LC_V7_RECORD_SIZE);
    const uint32_t seven = 7;
    for (uint32_t i = n; i-- > 0;) {
        uint8_t *rec = out + (size_t)i * LC_V7_RECORD_SIZE;
        memmove(rec, out + (size_t)i * LC_V6_RECORD_SIZE, LC_V6_RECORD_SIZE);
        memset(rec + LC_V6_RECORD_SIZE, 0, LC_V7_RECORD_SIZE - LC_V6_RECORD_SIZE);
        memcpy(rec + offsetof(lc_v7_record, version), &seven, sizeof seven);
        memcpy(rec + offsetof(lc_v7_record, q_st), &st->q_st[i], sizeof st->q_st[i]);
        memcpy(rec + offsetof(lc_v7_record, d_st), &st->d_st[i], sizeof st->d_st[i]);
        memcpy(rec + offsetof(lc_v7_record, opp_played_idx), &st->opp[i], sizeof st->opp[i]);
        memcpy(rec + offsetof(lc_v7_record, next_played_idx), &st->next[i], sizeof st->next[i]);
    }
    return out;
}
