/*
 * rescore_policy: step 4 of the rules (docs/pipelines.md "chunk_rescorer:
 * the rules for one game"): upstream's temperature, offset and dtz_boost
 * on every record's policy, in float and in upstream's order of
 * operations, never dropping a move; and lcmon's sharpening
 * (zero_losing_moves), which gives 0 to the moves the tables prove worse.
 *
 * The boost. At a position Syzygy answers (no castling right, at most
 * max_cardinality pieces) the moves to boost are Syzygy's root probe's
 * (lc0's root_probe with win_only: only in a won position, the moves that
 * keep the win best by DTZ; with has_repeated when the game repeated since
 * its last zeroing move). With Gaviota tables, among those the ones that
 * mate soonest. Each gets dtz_boost / count added with dist_offset before
 * the temperature. Their policy indices are in the record's own frame.
 */
#include "format/lc0/rescore/rescore_internal.h"

#include "format/lc0/rescore/tablebase.h"

/* ---- upstream's adjustment ---- */

/* Among the moves marked in maybe, those after which Gaviota sees the
 * quickest mate, into boost; false when Gaviota knows none of them.
 * (Upstream means this too, but keeps the distances past the end of a
 * list of zeros and so boosts every move when one mates at once and none
 * otherwise: a defect lcmon does not copy, docs/upstream.md.) */
static bool quickest_mates(const lc_tablebases *tb, const lc_position *pos, const lc_move *moves,
                           unsigned n, const bool *maybe, bool *boost)
{
    unsigned dtm[LC_MAX_MOVES], least = 1000;
    for (unsigned i = 0; i < n; i++) {
        dtm[i] = 1000;
        if (!maybe[i])
            continue;
        lc_position child;
        unsigned d;
        lc_position_play(pos, &moves[i], &child);
        int info = lc_tablebases_gaviota_dtm(tb, &child, &d);
        if (info == LC_TB_WIN || info == LC_TB_LOSS)
            dtm[i] = d;
        if (dtm[i] < least)
            least = dtm[i];
    }
    if (least >= 1000)
        return false;
    for (unsigned i = 0; i < n; i++)
        boost[i] = maybe[i] && dtm[i] == least;
    return true;
}

/* The policy indices to boost at record k into mark[]; how many. */
static unsigned boost_set(const rs_game *g, uint32_t k, bool *mark)
{
    const lc_game_ply *p = &g->game->ply[k];
    const lc_tablebases *tb = g->cfg->tb;
    if (!p->readable || p->pos.castling || p->pos.pieces > g->syzygy_max)
        return 0;
    lc_move moves[LC_MAX_MOVES];
    bool to_boost[LC_MAX_MOVES], maybe[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&p->pos, moves), count = 0;
    if (!lc_tablebases_syzygy_root_probe(tb, &p->pos, moves, n, true, true, to_boost))
        memset(to_boost, 0, sizeof to_boost);
    if (lc_game_repeated_since_zeroing(g->game, k))
        memcpy(maybe, to_boost, sizeof maybe);
    else if (!lc_tablebases_syzygy_root_probe(tb, &p->pos, moves, n, false, true, maybe))
        memset(maybe, 0, sizeof maybe);
    unsigned n_maybe = 0;
    for (unsigned i = 0; i < n; i++)
        n_maybe += maybe[i];
    if (g->gaviota && n_maybe > 1 && p->pos.pieces <= 5)
        (void)quickest_mates(tb, &p->pos, moves, n, maybe, to_boost);
    for (unsigned i = 0; i < n; i++) {
        if (!to_boost[i])
            continue;
        mark[lc_move_policy_transformed(&moves[i], p->transform)] = true;
        count++;
    }
    return count;
}

/* Upstream's adjustment of record k's policy; whether a value changed. */
static bool adjust(rs_game *g, uint32_t k)
{
    uint8_t *rec = rs_rec(g, k);
    bool mark[LC_POLICY_SIZE] = {false};
    unsigned count = g->boost != 0.0f ? boost_set(g, k, mark) : 0;
    g->counts->policies_boosted += count > 0;
    float before[LC_POLICY_SIZE];
    memcpy(before, rec + rs_policy_offset(g->version), sizeof before);
    const float inv_temp = 1.0f / g->temp;
    float sum = 0.0f;
    for (unsigned j = 0; j < LC_POLICY_SIZE; j++) {
        float offset = g->offset + (mark[j] ? g->boost / (float)count : 0.0f);
        float p = before[j];
        if (p < 0 || isnan(p))
            continue;
        p = p + offset;
        p = 0.0f < p ? p : 0.0f; /* std::max(0.0f, p) */
        p = powf(p, inv_temp);
        sum += p;
        rs_put_prob(rec, g->version, j, p);
    }
    bool changed = false;
    for (unsigned j = 0; j < LC_POLICY_SIZE; j++) {
        float p = rs_prob(rec, g->version, j);
        if (p < 0 || isnan(p))
            continue;
        p /= sum;
        rs_put_prob(rec, g->version, j, p);
        changed |= memcmp(&p, &before[j], 4) != 0;
    }
    return changed;
}

/* ---- lcmon's sharpening (zero_losing_moves) ---- */

/* The shaping on the n entries of the legal moves idx[]: keep[] false gets
 * 0; the kept ones max(0, p + offset (+ boost / boosted for boost[])) ^ (1 /
 * temp), renormalised (evenly over the kept ones when all are 0), in
 * double. True when a value changed. */
static bool shape(const rs_game *g, uint8_t *rec, const uint16_t *idx, const bool *keep,
                  const bool *boost, unsigned n)
{
    const lc_rescore_config *cfg = g->cfg;
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
        double v = rs_prob(rec, g->version, idx[i]) + cfg->dist_offset;
        if (boost && boost[i])
            v += cfg->dtz_boost / boosted;
        v = v > 0 ? v : 0;
        x[i] = cfg->dist_temp == 1.0 ? v : pow(v, 1.0 / cfg->dist_temp);
        total += x[i];
    }
    bool changed = false;
    for (unsigned i = 0; i < n; i++) {
        float v = (float)(total > 0 ? x[i] / total : keep[i] ? 1.0 / kept : 0.0);
        float old = rs_prob(rec, g->version, idx[i]);
        changed |= memcmp(&v, &old, 4) != 0;
        rs_put_prob(rec, g->version, idx[i], v);
    }
    return changed;
}

/* The policy indices of the legal entries of rec (not -1) into idx, if
 * they are all proper probabilities; false otherwise (left alone). */
static bool legal_entries(const uint8_t *rec, uint32_t version, uint16_t *idx, unsigned *n)
{
    unsigned k = 0;
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++) {
        float v = rs_prob(rec, version, i);
        if (v == -1.0f)
            continue;
        if (!(v >= 0.0f) || k == LC_MAX_MOVES)
            return false;
        idx[k++] = (uint16_t)i;
    }
    *n = k;
    return true;
}

/* Sharpen record k's policy: moves worse than the best result get 0, the
 * best by distance get the boost. Only when the record's legal moves are
 * exactly the generated ones and the tables rate them all: -1 when not,
 * else whether a value changed. */
static int sharpen(rs_game *g, uint32_t k)
{
    const lc_game_ply *gp = &g->game->ply[k];
    const lc_tablebases *tb = g->cfg->tb;
    if (!gp->readable || gp->pos.castling || gp->pos.pieces > lc_tablebases_max_pieces(tb))
        return -1;
    lc_position p = gp->pos; /* in the record's frame, where its policy is */
    lc_position_transform(&p, gp->transform, true);
    uint8_t *rec = rs_rec(g, k);
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&p, moves), m;
    uint16_t idx[LC_MAX_MOVES];
    if (n == 0 || !legal_entries(rec, g->version, idx, &m) || m != n)
        return -1;
    for (unsigned i = 0; i < n; i++)
        if (moves[i].policy != idx[i]) /* both ascending */
            return -1;
    signed char wdl[LC_MAX_MOVES];
    bool best[LC_MAX_MOVES], keep[LC_MAX_MOVES], by_distance;
    int top = lc_tablebases_rate_moves(tb, &p, moves, n, g->cfg->dtz_boost != 0.0, wdl, best,
                                       &by_distance);
    if (top == LC_TB_UNKNOWN)
        return -1;
    for (unsigned i = 0; i < n; i++)
        keep[i] = wdl[i] == top;
    return (int)shape(g, rec, idx, keep, by_distance ? best : NULL, n);
}

void rs_policy(rs_game *g)
{
    bool tempering = g->temp != 1.0f || g->offset != 0.0f || g->boost != 0.0f;
    bool sharpening = g->cfg->zero_losing_moves && g->cfg->tb;
    if (!tempering && !sharpening)
        return; /* upstream leaves the policy alone */
    for (uint32_t k = 0; k < g->n; k++) {
        int changed = sharpening ? sharpen(g, k) : -1;
        if (changed < 0 && tempering)
            changed = adjust(g, k);
        g->counts->policies_sharpened += changed > 0;
        g->changed |= changed > 0;
    }
}
