/*
 * test_packed_row: the packed row the tensor generator writes (bits, aux,
 * sparse policy; docs/batch-stream.md and docs/lc0-training-data.md), made
 * from the frame the chunk store decodes (lc_packed_chunk_frame), against
 * the row written the straightforward way from the frame made of the record
 * (lc_frame_from_record):
 *
 *   - bits: byte r of plane p's word at bits[8 * p + r], taken byte by
 *     byte with shifts, for the 104 history planes;
 *   - every plane, aux planes included: the bits expanded as numpy's
 *     unpackbits(bitorder="big") expands them, each set bit made the
 *     plane's aux value (1 for the history planes), equal bit for bit to the
 *     dense planes (lc_frame_input_planes_as);
 *   - the policy: the entries of the dense policy (lc_frame_policy) that
 *     are not -1, in index order, cut at the slots or padded with the last
 *     one (index 0 and -1 when there is none), for 1, 8, 80 and 128 slots.
 *
 * Over every position of the sample games of tests/data (input formats 1,
 * 2, 3 and 5; sample_games.h), written as records of every version 3..7 and, as V7, with
 * input formats 4, 132 and 133, with both plane kinds (input_format and
 * upstream). The frames themselves must agree field by field too.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "frames.h"
#include "sample_games.h"
#include "testutil.h"

#include "format/lc0/packed_chunk.h"

enum { DENSE = LC_INPUT_PLANES * 64 };

static const unsigned slot_counts[] = {1, 8, 80, 128};
#define N_SLOTS (sizeof slot_counts / sizeof slot_counts[0])
#define MAX_SLOTS 128

typedef struct counts {
    size_t rows, entries, positions;
    lc_frame model; /* the first position (no overflow: real games have none) */
    bool have_model;
} counts;

/* The planes of a packed row (bits and aux) against the straightforward
 * frame's words and dense planes. */
static bool same_planes(const lc_frame *want, const lc_frame *got, lc_planes_kind kind,
                        float *dense)
{
    uint8_t bits[LC_INPUT_PLANES * 8];
    float aux[8];
    lc_frame_packed_planes_as(got, kind, bits, aux);
    bool same = true;
    for (unsigned p = 0; p < LC_HISTORY_PLANES; p++)
        for (unsigned r = 0; r < 8; r++)
            same &= bits[8 * p + r] == (uint8_t)((want->planes[p] >> (8 * r)) & 0xff);
    lc_frame_input_planes_as(want, kind, dense);
    for (unsigned p = 0; p < LC_INPUT_PLANES; p++) {
        float value = p < LC_HISTORY_PLANES ? 1.0f : aux[p - LC_HISTORY_PLANES];
        for (unsigned sq = 0; sq < 64; sq++) {
            bool set = (bits[8 * p + sq / 8] >> (7 - sq % 8)) & 1;
            float v = set ? value : 0.0f;
            same &= tf_bits(v) == tf_bits(dense[64 * p + sq]);
        }
    }
    return same;
}

/* The sparse policy of got, with each slot count, against the entries of
 * want's dense policy that are not -1. */
static bool same_policy(const lc_frame *want, const lc_frame *got, counts *t)
{
    float dense[LC_POLICY_SIZE];
    lc_frame_policy(want, dense);
    uint16_t ref_idx[LC_POLICY_SIZE];
    float ref_val[LC_POLICY_SIZE];
    unsigned n = 0;
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        if (tf_bits(dense[i]) != tf_bits(-1.0f)) {
            ref_idx[n] = (uint16_t)i;
            ref_val[n++] = dense[i];
        }
    t->entries += n;
    bool same = true;
    for (size_t s = 0; s < N_SLOTS; s++) {
        unsigned slots = slot_counts[s];
        uint16_t idx[MAX_SLOTS];
        float val[MAX_SLOTS];
        unsigned m = lc_frame_policy_sparse(got, idx, val, slots);
        unsigned want_m = n < slots ? n : slots;
        same &= m == want_m;
        for (unsigned k = 0; k < slots; k++) {
            /* Past the entries: the last again, or -1 at index 0. */
            unsigned e = k < want_m ? k : want_m - 1;
            uint16_t wi = want_m ? ref_idx[e] : 0;
            uint32_t wv = want_m ? tf_bits(ref_val[e]) : tf_bits(-1.0f);
            same &= idx[k] == wi && tf_bits(val[k]) == wv;
        }
    }
    return same;
}

/* Pack n records of a version, read every position back from the store's
 * form and check its rows. */
static void check_records(const uint8_t *recs, size_t record_size, uint32_t n, uint32_t version,
                          counts *t)
{
    lc_pack_ctx *pc = lc_pack_ctx_new(LC_PACK_LEVEL_DEFAULT, LC_PACK_BLOCK_DEFAULT);
    lc_packed_chunk *pk = NULL;
    const char *reason = NULL;
    uint32_t bad_at = 0;
    CHECK_OK(lc_packed_chunk_build(pc, recs, record_size, n, version, &pk, &reason, &bad_at));
    lc_pack_ctx_free(pc);
    if (!pk)
        return;
    lc_unpack_ctx *uc = lc_unpack_ctx_new();
    float *dense = malloc(DENSE * sizeof *dense);
    size_t wrong = 0;
    for (uint32_t i = n; i-- > 0;) { /* backwards: blocks decoded out of order */
        lc_frame want, got;
        CHECK_OK(lc_frame_from_record(recs + (size_t)i * record_size, version, &want, NULL));
        CHECK_OK(lc_packed_chunk_frame(pk, uc, i, &got, NULL));
        int failed_before = atomic_load(&check_failed_);
        tf_check_same_fields(&want, &got, true);
        bool same = same_policy(&want, &got, t);
        for (int kind = LC_PLANES_INPUT_FORMAT; kind <= LC_PLANES_UPSTREAM; kind++) {
            same &= same_planes(&want, &got, (lc_planes_kind)kind, dense);
            t->rows++;
        }
        CHECK(same);
        if (atomic_load(&check_failed_) != failed_before && wrong++ < 3)
            fprintf(stderr, "  position %u of %u differs (version %u, input format %u)\n", i, n,
                    version, want.input_format);
        t->positions++;
        lc_frame_fini(&want);
        lc_frame_fini(&got);
    }
    free(dense);
    lc_unpack_ctx_free(uc);
    lc_packed_chunk_unref(pk);
}

static void check_form(const uint8_t *recs, size_t size, uint32_t n, uint32_t version, void *ctx)
{
    check_records(recs, size, n, version, ctx);
}

/* One game, as every version, then as V7 of the input formats no sample
 * has; its first position is kept as the model of the hand-made ones. */
static void check_game(const lc_chunk_data *c, const char *path, void *ctx)
{
    (void)path;
    counts *t = ctx;
    uint32_t n = (uint32_t)c->n_records;
    if (!c->data || n == 0)
        return;
    lc_frame *frames = calloc(n, sizeof *frames);
    for (uint32_t i = 0; i < n; i++)
        CHECK_OK(lc_frame_from_record(c->data + (size_t)i * c->record_size, c->version, &frames[i],
                                      NULL));
    if (!t->have_model) {
        t->model = frames[0];
        t->have_model = true;
    }
    tf_each_form(frames, n, 0, check_form, t);
    for (uint32_t i = 0; i < n; i++)
        lc_frame_fini(&frames[i]);
    free(frames);
}

/* A V7 frame of the sample's first position with k policy entries spread
 * over the 1858 indices (inline and, past 80, in the heap). */
static void long_policy(lc_frame *f, unsigned k)
{
    f->n_policy = (uint16_t)k;
    f->overflow_idx = NULL;
    f->overflow_val = NULL;
    if (k > LC_FRAME_INLINE_POLICY) {
        f->overflow_idx = malloc((k - LC_FRAME_INLINE_POLICY) * sizeof *f->overflow_idx);
        f->overflow_val = malloc((k - LC_FRAME_INLINE_POLICY) * sizeof *f->overflow_val);
    }
    for (unsigned e = 0; e < k; e++) {
        uint16_t idx = (uint16_t)(k == 1 ? 1857 : (uint32_t)e * (LC_POLICY_SIZE - 1) / (k - 1));
        float val = (float)e / (float)k;
        tf_policy_put(f, e, idx, val);
    }
    f->played_idx = f->best_idx = k ? f->policy_idx[0] : 0;
}

/* Policies of 1 to 1858 entries through the store (V7 wants the played
 * move among them), and stored indices of 1858 and more (no record has
 * them; the rows leave them out). */
static void check_edges(const lc_frame *model, counts *t)
{
    /* Around the frame's inline entries and the row's slots. */
    static const unsigned sizes[] = {1,
                                     LC_FRAME_INLINE_POLICY - 1,
                                     LC_FRAME_INLINE_POLICY + 1,
                                     79,
                                     80,
                                     81,
                                     128,
                                     129,
                                     200,
                                     LC_POLICY_SIZE};
    enum { N = sizeof sizes / sizeof sizes[0] };
    lc_frame frames[N];
    for (unsigned i = 0; i < N; i++) {
        frames[i] = *model;
        frames[i].version = 7;
        long_policy(&frames[i], sizes[i]);
    }
    size_t size;
    uint8_t *recs = tf_records(frames, N, 7, &size);
    check_records(recs, size, N, 7, t);
    free(recs);
    /* Out of range: index 1858 among inline entries, then 4000 near the
     * end (an 80-entry frame). */
    lc_frame *f = &frames[4];
    f->policy_idx[40] = LC_POLICY_SIZE;
    *lc_frame_policy_idx_at(f, 78) = 4000;
    CHECK(same_policy(f, f, t));
    for (unsigned i = 0; i < N; i++)
        lc_frame_fini(&frames[i]);
}

int main(void)
{
    counts t = {0};
    sg_each_game(tu_test_data(), check_game, &t);
    CHECK(t.have_model);
    if (t.have_model)
        check_edges(&t.model, &t);
    printf("%zu positions (every version and input format), %zu packed rows, %zu policy "
           "entries checked\n",
           t.positions, t.rows, t.entries);
    CHECK(t.positions > 8 * 1500);
    return check_finish();
}
