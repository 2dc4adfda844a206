/*
 * deblunder: the walk back through one game of deblunder.h. The rule is
 * upstream's (lc0's rescorer) with one difference, written out in
 * docs/pipelines.md "Deblunder": the target a blunder is blended with is
 * the blunder position's own (result_q, result_d, plies_left), not the
 * last position's carried back; for a game whose targets agree with each
 * other (every game lc0 writes) the two are the same.
 *
 * The arithmetic is single precision, as upstream's, so that the same
 * records give the same bits.
 */
#include "format/lc0/deblunder.h"

#include "format/lc0/record.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

/* The targets the walk carries back: from the side to move's view. */
typedef struct target {
    float q, d, m;
} target;

static float rec_f32(const uint8_t *r, size_t off)
{
    float v;
    memcpy(&v, r + off, sizeof v);
    return v;
}

static void rec_put(uint8_t *r, size_t off, float v)
{
    memcpy(r + off, &v, sizeof v);
}

/*
 * How much of the best line's value record r takes: -1 when its played
 * move is no blunder, 1 for a whole one, in [0, 1) inside the width. A
 * terminal blunder (the best move was a proven win, or the played move a
 * proven loss, and the other was not the same) is always whole.
 */
static float blunder_ratio(const uint8_t *r, float threshold, float width)
{
    uint32_t visits;
    uint8_t invariance;
    LC_REC_GET(r, visits, visits);
    LC_REC_GET(r, invariance_info, invariance);
    if (visits == 0)
        return -1.0f; /* a record upgraded from V5: played_q is not a search's */
    float best_q = rec_f32(r, offsetof(lc_v6_record, best_q));
    float played_q = rec_f32(r, offsetof(lc_v6_record, played_q));
    float loss = best_q - played_q;
    bool terminal = best_q > -1.0f && played_q < 1.0f &&
                    ((best_q == 1.0f && (invariance & 8u) != 0) || played_q == -1.0f);
    bool over = (double)loss > (double)threshold - (double)width / 2.0;
    if (terminal)
        return 1.0f;
    if (!over)
        return -1.0f;
    if (width > 0.0f)
        return fmaxf(0.0f, fminf(1.0f, (loss - threshold) / width + 0.5f));
    return 1.0f;
}

static target rec_target(const uint8_t *r)
{
    target t = {rec_f32(r, offsetof(lc_v6_record, result_q)),
                rec_f32(r, offsetof(lc_v6_record, result_d)),
                rec_f32(r, offsetof(lc_v6_record, plies_left))};
    return t;
}

/* Write t into r; whether any of the three fields' bits changed. */
static bool rec_set_target(uint8_t *r, target t)
{
    uint8_t before[12];
    const size_t off = offsetof(lc_v6_record, plies_left);
    _Static_assert(offsetof(lc_v6_record, result_q) == offsetof(lc_v6_record, plies_left) + 4 &&
                       offsetof(lc_v6_record, result_d) == offsetof(lc_v6_record, plies_left) + 8,
                   "plies_left, result_q and result_d are adjacent");
    memcpy(before, r + off, sizeof before);
    rec_put(r, offsetof(lc_v6_record, result_q), t.q);
    rec_put(r, offsetof(lc_v6_record, result_d), t.d);
    rec_put(r, offsetof(lc_v6_record, plies_left), t.m);
    return memcmp(before, r + off, sizeof before) != 0;
}

void lc_deblunder(uint8_t *records, size_t record_size, uint32_t n, uint32_t version,
                  double threshold, double width, uint64_t *blunders, uint64_t *changed)
{
    if ((version != 6 && version != 7) || n == 0 || isnan(threshold))
        return;
    const float thr = (float)threshold, w = isnan(width) || width < 0 ? 0.0f : (float)width;
    bool started = false;
    target active = {0};
    for (uint32_t i = n; i-- > 0;) {
        uint8_t *r = records + (size_t)i * record_size;
        if (started) { /* one ply back: the other side to move, one ply more to go */
            active.q = -active.q;
            active.m += 1.0f;
        }
        float ratio = blunder_ratio(r, thr, w);
        if (ratio >= 0.0f) {
            if (!started)
                active = rec_target(r);
            const float best_q = rec_f32(r, offsetof(lc_v6_record, best_q));
            const float best_d = rec_f32(r, offsetof(lc_v6_record, best_d));
            const float best_m = rec_f32(r, offsetof(lc_v6_record, best_m));
            active.q = (1.0f - ratio) * active.q + ratio * best_q;
            active.d = (1.0f - ratio) * active.d + ratio * best_d;
            active.m = (1.0f - ratio) * active.m + ratio * best_m;
            started = true;
            if (blunders)
                (*blunders)++;
        }
        if (started && rec_set_target(r, active) && changed)
            (*changed)++;
    }
}
