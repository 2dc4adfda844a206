/*
 * deblunder: the walk back through one game of deblunder.h, by upstream's
 * rule (lc_deblunder_upstream, lc0's rescorer) and by lcmon's
 * (lc_deblunder, the rescorer's deblunder_lcmon), which differs where
 * docs/pipelines.md "Deblunder" says: its region is the records before the
 * first one a table answered; the target a blunder is blended with is the
 * blunder record's own (result_q, result_d, plies_left), not the last
 * record's carried back; and each record's own visits say whether it was
 * searched. For a game whose targets agree with each other (every game lc0
 * writes) the two targets are the same.
 *
 * The arithmetic is single precision, as upstream's, so that the same
 * records give the same bits.
 */
#include "format/lc0/rescore/deblunder.h"

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
 * Whether record r's played move is a blunder, and how much of the best
 * line's value it takes (*ratio): 1 for a whole one, less inside the width. A
 * terminal blunder (the best move was a proven win, or the played move a
 * proven loss, and the other was not the same) is always whole. The loss
 * is compared in double with threshold - width / 2 (as upstream: float
 * settings, a double 2.0); the ratio min(1, (L - T) / w + 0.5) is float,
 * clamped at 0 when clamp (lcmon's; upstream's is never below 0 in
 * practice, the threshold already being passed).
 */
static bool blunder(const uint8_t *r, float threshold, float width, bool clamp, float *ratio)
{
    uint8_t invariance;
    LC_REC_GET(r, invariance_info, invariance);
    float best_q = rec_f32(r, offsetof(lc_v6_record, best_q));
    float played_q = rec_f32(r, offsetof(lc_v6_record, played_q));
    float loss = best_q - played_q;
    bool terminal = best_q > -1.0f && played_q < 1.0f &&
                    ((best_q == 1.0f && (invariance & 8u) != 0) || played_q == -1.0f);
    bool over = (double)loss > (double)threshold - (double)width / 2.0;
    *ratio = 1.0f;
    if (terminal || !over)
        return terminal;
    if (width > 0.0f) {
        float x = (loss - threshold) / width + 0.5f;
        x = x < 1.0f ? x : 1.0f; /* std::min(1.0f, x) */
        *ratio = clamp ? fmaxf(0.0f, x) : x;
    }
    return true;
}

static uint32_t rec_visits(const uint8_t *r)
{
    uint32_t visits;
    LC_REC_GET(r, visits, visits);
    return visits;
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

/* The blunder at r blended into t. */
static void blend(target *t, const uint8_t *r, float ratio)
{
    const float best_q = rec_f32(r, offsetof(lc_v6_record, best_q));
    const float best_d = rec_f32(r, offsetof(lc_v6_record, best_d));
    const float best_m = rec_f32(r, offsetof(lc_v6_record, best_m));
    t->q = (1.0f - ratio) * t->q + ratio * best_q;
    t->d = (1.0f - ratio) * t->d + ratio * best_d;
    t->m = (1.0f - ratio) * t->m + ratio * best_m;
}

/*
 * The walk back from record end - 1 to 0 with the running target starting
 * at start. lcmon's rule (lcmon): a record of 0 visits (upgraded from V5:
 * played_q is no search's) is no blunder, the first blunder replaces the
 * target with its own, the ratio is clamped at 0. Turning the target
 * before the first blunder changes nothing for lcmon's (it is replaced).
 */
static void walk(uint8_t *records, size_t record_size, uint32_t end, float thr, float w, bool lcmon,
                 target active, uint64_t *blunders, uint64_t *changed)
{
    bool started = false;
    for (uint32_t i = end; i-- > 0;) {
        uint8_t *r = records + (size_t)i * record_size;
        float ratio;
        if ((!lcmon || rec_visits(r) != 0) && blunder(r, thr, w, lcmon, &ratio)) {
            if (lcmon && !started)
                active = rec_target(r);
            blend(&active, r, ratio);
            started = true;
            if (blunders)
                (*blunders)++;
        }
        if (started && rec_set_target(r, active) && changed)
            (*changed)++;
        active.q = -active.q; /* one ply back: the other side to move, one ply more */
        active.m += 1.0f;
    }
}

void lc_deblunder(uint8_t *records, size_t record_size, uint32_t n, uint32_t version,
                  double threshold, double width, uint64_t *blunders, uint64_t *changed)
{
    if ((version != 6 && version != 7) || n == 0 || isnan(threshold))
        return;
    const float thr = (float)threshold, w = isnan(width) || width < 0 ? 0.0f : (float)width;
    walk(records, record_size, n, thr, w, true, (target){0}, blunders, changed);
}

void lc_deblunder_upstream(uint8_t *records, size_t record_size, uint32_t n, uint32_t region,
                           uint32_t version, double threshold, double width, uint64_t *blunders,
                           uint64_t *changed)
{
    if ((version != 6 && version != 7) || n == 0 || region == 0 || region > n || isnan(threshold) ||
        rec_visits(records + (size_t)(n - 1) * record_size) == 0)
        return;
    const float thr = (float)threshold, w = isnan(width) ? 0.0f : (float)width;
    walk(records, record_size, region, thr, w, false,
         rec_target(records + (size_t)(n - 1) * record_size), blunders, changed);
}
