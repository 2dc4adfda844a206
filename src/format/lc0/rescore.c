/*
 * rescore: one game's records rescored in place (rescore.h); the rules are
 * in docs/pipelines.md "chunk_rescorer".
 *
 * Cost. Most games never reach a tablebase, so the tablebase part starts
 * with a look at the last record only: pieces never come back in a game
 * and castling rights never return, so the positions the tables may answer
 * are a tail of the game, found by walking back from the last record while
 * the piece count (popcount of 12 plane words) is small enough and no
 * castling byte is set. A game whose last position has too many pieces
 * costs that one look. Only the tail is read as boards.
 *
 * Fields by version: V6 and V7 keep result_q and result_d (and an unused
 * byte where older versions kept the result); V5 keeps the int8 result at
 * byte 8279 and has no result_q; V3 and V4 keep it at 8275. The policy
 * starts at byte 8 from V5 on, at 4 before.
 */
#include "format/lc0/rescore.h"

#include "format/lc0/deblunder.h"
#include "format/lc0/position.h"
#include "format/lc0/record.h"
#include "format/lc0/tablebase.h"

#include <math.h>
#include <string.h>

void lc_rescore_config_init(lc_rescore_config *cfg)
{
    cfg->tb = NULL;
    cfg->dist_temp = 1.0;
    cfg->dist_offset = 0.0;
    cfg->dtz_boost = 0.0;
    cfg->deblunder_threshold = NAN;
    cfg->deblunder_width = 0.0;
}

/* ---- results ---- */

static size_t result_byte_offset(uint32_t version)
{
    return version >= 5 ? offsetof(lc_v6_record, dummy) : offsetof(lc_v6_record, dummy) - 4;
}

/* Give record rec the result r (-1, 0, 1); true when that changed it. */
static bool set_result(uint8_t *rec, uint32_t version, int r)
{
    bool changed = false;
    if (version >= 6) {
        float q = (float)r, d = r == 0 ? 1.0f : 0.0f, old_q, old_d;
        LC_REC_GET(rec, result_q, old_q);
        LC_REC_GET(rec, result_d, old_d);
        changed = memcmp(&q, &old_q, 4) != 0 || memcmp(&d, &old_d, 4) != 0;
        memcpy(rec + offsetof(lc_v6_record, result_q), &q, 4);
        memcpy(rec + offsetof(lc_v6_record, result_d), &d, 4);
    } else {
        size_t off = result_byte_offset(version);
        changed = (int8_t)rec[off] != r;
        rec[off] = (uint8_t)(int8_t)r;
    }
    return changed;
}

/* ---- the policy ---- */

static size_t policy_offset(uint32_t version)
{
    return version >= 5 ? offsetof(lc_v6_record, probabilities) : 4;
}

static float get_prob(const uint8_t *rec, uint32_t version, unsigned i)
{
    float v;
    memcpy(&v, rec + policy_offset(version) + 4 * (size_t)i, 4);
    return v;
}

static void put_prob(uint8_t *rec, uint32_t version, unsigned i, float v)
{
    memcpy(rec + policy_offset(version) + 4 * (size_t)i, &v, 4);
}

/* The shaping of rescore.h on the n entries of the legal moves idx[]: keep[]
 * false gets 0; the kept ones max(0, p + offset (+ boost / boosted for
 * boost[])) ^ (1 / temp), renormalised (evenly over the kept ones when
 * all are 0). True when a value changed. */
static bool shape(const lc_rescore_config *cfg, uint8_t *rec, uint32_t version, const uint16_t *idx,
                  const bool *keep, const bool *boost, unsigned n)
{
    double x[LC_MAX_MOVES], total = 0;
    unsigned boosted = 0, kept = 0;
    for (unsigned i = 0; i < n; i++) {
        boosted += boost && boost[i];
        kept += keep[i];
    }
    for (unsigned i = 0; i < n; i++) {
        x[i] = 0;
        if (!keep[i])
            continue;
        double v = get_prob(rec, version, idx[i]) + cfg->dist_offset;
        if (boost && boost[i])
            v += cfg->dtz_boost / boosted;
        v = v > 0 ? v : 0;
        x[i] = cfg->dist_temp == 1.0 ? v : pow(v, 1.0 / cfg->dist_temp);
        total += x[i];
    }
    bool changed = false;
    for (unsigned i = 0; i < n; i++) {
        float v = (float)(total > 0 ? x[i] / total : keep[i] ? 1.0 / kept : 0.0);
        float old = get_prob(rec, version, idx[i]);
        changed |= memcmp(&v, &old, 4) != 0;
        put_prob(rec, version, idx[i], v);
    }
    return changed;
}

/* The policy indices of the legal entries of rec (not -1) into idx, if
 * they are all proper probabilities; false otherwise (left alone). */
static bool legal_entries(const uint8_t *rec, uint32_t version, uint16_t *idx, unsigned *n)
{
    unsigned k = 0;
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++) {
        float v = get_prob(rec, version, i);
        if (v == -1.0f)
            continue;
        if (!(v >= 0.0f) || k == LC_MAX_MOVES)
            return false;
        idx[k++] = (uint16_t)i;
    }
    *n = k;
    return true;
}

/* Sharpen the policy of tablebase position p (record rec): moves worse than
 * the best result get 0, the best by distance get the boost. Only when the
 * record's legal moves are exactly the generated ones and the tables rate
 * them all: -1 when not, else whether a value changed. */
static int sharpen(const lc_rescore_config *cfg, uint8_t *rec, uint32_t version,
                   const lc_position *p)
{
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(p, moves), k;
    uint16_t idx[LC_MAX_MOVES];
    if (n == 0 || !legal_entries(rec, version, idx, &k) || k != n)
        return -1;
    for (unsigned i = 0; i < n; i++)
        if (moves[i].policy != idx[i]) /* both ascending */
            return -1;
    signed char wdl[LC_MAX_MOVES];
    bool best[LC_MAX_MOVES], keep[LC_MAX_MOVES], by_distance;
    int top = lc_tablebases_rate_moves(cfg->tb, p, moves, n, cfg->dtz_boost != 0.0, wdl, best,
                                       &by_distance);
    if (top == LC_TB_UNKNOWN)
        return -1;
    for (unsigned i = 0; i < n; i++)
        keep[i] = wdl[i] == top;
    return (int)shape(cfg, rec, version, idx, keep, by_distance ? best : NULL, n);
}

/* Upstream's temperature and offset on a position no table answers. */
static bool temper(const lc_rescore_config *cfg, uint8_t *rec, uint32_t version)
{
    uint16_t idx[LC_MAX_MOVES];
    bool keep[LC_MAX_MOVES];
    unsigned n;
    if (!legal_entries(rec, version, idx, &n) || n == 0)
        return false;
    for (unsigned i = 0; i < n; i++)
        keep[i] = true;
    return shape(cfg, rec, version, idx, keep, NULL, n);
}

/* ---- the game ---- */

/* The first record of the tail the tables may answer (n when none). */
static uint32_t tablebase_tail(const uint8_t *records, size_t record_size, uint32_t n,
                               uint32_t version, unsigned max_pieces)
{
    uint32_t start = n;
    while (start > 0) {
        unsigned pieces;
        bool castling;
        if (!lc_record_board_summary(records + (size_t)(start - 1) * record_size, version, &pieces,
                                     &castling) ||
            pieces > max_pieces || castling)
            break;
        start--;
    }
    return start;
}

int lc_rescore_game(const lc_rescore_config *cfg, uint8_t *records, size_t record_size, uint32_t n,
                    uint32_t version, lc_rescore_counts *counts, char *why, size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    counts->games++;
    counts->positions += n;
    bool tempering = cfg->dist_temp != 1.0 || cfg->dist_offset != 0.0;
    uint32_t tail = n;
    if (cfg->tb && version >= 3 && version <= 7)
        tail = tablebase_tail(records, record_size, n, version, lc_tablebases_max_pieces(cfg->tb));
    uint32_t start = tail;
    /* Walk back from the last record: the tail's positions are probed where
     * the fifty-move counter is 0, and every probe's result goes to it and
     * back to the probe before it (the first probe's to the game's start),
     * the sign turning with the side to move. */
    int cur = LC_TB_UNKNOWN;
    uint64_t changed = 0;
    uint32_t first_hit = n;
    for (uint32_t i = n; i-- > 0;) {
        uint8_t *rec = records + (size_t)i * record_size;
        lc_position p;
        bool in_tail = i >= start && lc_position_from_record(rec, version, &p);
        if (i >= start && !in_tail)
            start = i + 1; /* not a board: the tablebase part ends here */
        int sharpened = -1;
        if (in_tail && p.rule50 == 0) {
            counts->probed++;
            int r = lc_tablebases_wdl(cfg->tb, &p);
            if (r != LC_TB_UNKNOWN) {
                counts->hits++;
                cur = r;
                first_hit = i;
            }
        }
        if (cur != LC_TB_UNKNOWN) {
            changed += set_result(rec, version, cur);
            cur = -cur;
        }
        if (in_tail)
            sharpened = sharpen(cfg, rec, version, &p);
        if (sharpened < 0 && tempering)
            sharpened = temper(cfg, rec, version);
        counts->policies_sharpened += sharpened > 0;
    }
    counts->results_changed += changed;
    counts->games_rescored += changed > 0;
    /* The deblunder walks the positions before the first one a table
     * answered (as upstream): a tablebase's result is never overridden, and
     * a tail no table answered (a missing table) is deblundered as the
     * rest of the game. */
    if (!isnan(cfg->deblunder_threshold))
        lc_deblunder(records, record_size, first_hit, version, cfg->deblunder_threshold,
                     cfg->deblunder_width, &counts->blunders, &counts->deblundered);
    return LC_RESCORE_KEPT;
}
