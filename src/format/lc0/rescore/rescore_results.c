/*
 * rescore_results: the results and plies_left of one game by upstream's
 * rules (docs/pipelines.md "chunk_rescorer: the rules for one game", steps
 * 2, 3, 5, 6 and 7): Syzygy's first pass (fifty-move counter 0) and
 * second pass (counter not 0, with the DTZ proofs), the plies_left
 * estimate, and the plies_left corrections from Gaviota's distance to mate
 * or, without Gaviota, from Syzygy's DTZ of 3-piece pawnless positions.
 *
 * Positions are the game's (format/lc0/rescore/game.h): record 0's board and the
 * moves played from it, with the history's counter and castling rights.
 * Record 0 is never probed (upstream probes the positions after each move).
 */
#include "format/lc0/rescore/rescore_internal.h"

#include "format/lc0/rescore/tablebase.h"

#include <stdio.h>
#include <stdlib.h>

int rs_result(rs_game *g, uint32_t k)
{
    const uint8_t *rec = rs_rec(g, k);
    float q;
    if (g->version >= 6)
        LC_REC_GET(rec, result_q, q);
    else
        q = (float)(int8_t)rec[rs_result_byte(g->version)];
    if (q == -1.0f || q == 0.0f || q == 1.0f)
        return (int)q;
    /* The first one is told (kept with keep_invalid, dropped without). */
    if (!g->failed && g->why && g->why_size && !g->why[0])
        snprintf(g->why, g->why_size,
                 "record %u: result_q is %g, not -1, 0 or 1 (upstream's rescorer refuses a "
                 "game whose results it reads are not whole: rescored before?)",
                 k, q);
    g->failed |= g->strict;
    return RS_BAD_RESULT;
}

bool rs_set_result(rs_game *g, uint32_t k, int r)
{
    uint8_t *rec = rs_rec(g, k);
    if (g->version >= 6) {
        const float q = (float)r, d = r == 0 ? 1.0f : 0.0f;
        uint8_t before[8];
        memcpy(before, rec + offsetof(lc_v6_record, result_q), 8);
        memcpy(rec + offsetof(lc_v6_record, result_q), &q, 4);
        memcpy(rec + offsetof(lc_v6_record, result_d), &d, 4);
        bool changed = memcmp(before, rec + offsetof(lc_v6_record, result_q), 8) != 0;
        g->changed |= changed;
        return changed;
    }
    size_t off = rs_result_byte(g->version);
    bool changed = (int8_t)rec[off] != r;
    rec[off] = (uint8_t)(int8_t)r;
    g->changed |= changed;
    return changed;
}

static const lc_game_ply *ply(const rs_game *g, uint32_t k)
{
    return &g->game->ply[k];
}

/* Upstream's condition for a Syzygy probe: no castling right, at most
 * max_cardinality pieces. */
static bool probeable(const rs_game *g, uint32_t k, unsigned max_pieces)
{
    const lc_game_ply *p = ply(g, k);
    return p->readable && !p->pos.castling && p->pos.pieces <= max_pieces;
}

/* ---- step 2: the first pass ---- */

void rs_first_pass(rs_game *g)
{
    (void)rs_result(g, 0); /* upstream counts record 0's result first */
    const lc_tablebases *tb = g->cfg->tb;
    bool gaviota = g->cfg->gaviota_results;
    unsigned max = gaviota ? (tb ? lc_tablebases_max_pieces(tb) : 0) : g->syzygy_max;
    int64_t last = -1;
    for (uint32_t k = 1; k < g->n; k++) {
        if (!probeable(g, k, max) || ply(g, k)->rule50 != 0)
            continue;
        g->counts->probed++;
        int score = gaviota ? lc_tablebases_wdl(tb, &ply(g, k)->pos)
                            : lc_tablebases_syzygy_wdl(tb, &ply(g, k)->pos);
        if (score == LC_TB_UNKNOWN)
            continue;
        g->counts->hits++;
        if (g->first_hit == g->n)
            g->first_hit = k;
        /* This answer, and back to the previous one, the sign turning
         * each ply (the first answer reaches record 0). */
        for (int64_t j = k; j > last; j--) {
            (void)rs_result(g, (uint32_t)j);
            g->results_changed += rs_set_result(g, (uint32_t)j, score);
            score = -score;
        }
        last = k;
    }
}

/* ---- step 3: the second pass ---- */

/* Upstream's new result for record k whose WDL score is score and whose
 * result is r; *proof when a DTZ probe decided it. */
static int second_result(const rs_game *g, uint32_t k, int score, int r, bool *proof)
{
    const lc_tablebases *tb = g->cfg->tb;
    const lc_position *pos = &ply(g, k)->pos;
    int steps = ply(g, k)->rule50;
    int result = r != score ? 0 : r;
    bool ok;
    *proof = false;
    /* The tables say win or loss where the game says otherwise: a DTZ short
     * enough to win before the fifty-move rule proves it, unless a
     * repetition since the last zeroing move could have changed the
     * count. */
    if (r != score && score != 0 && lc_game_no_reps(g->game, k)) {
        int dtz = lc_tablebases_syzygy_dtz(tb, pos, &ok);
        if (ok && steps + abs(dtz) < 99) {
            result = score;
            *proof = true;
        }
    }
    /* A decided game whose win needs more plies than the fifty-move rule
     * leaves is a draw. */
    if (r != 0 && score != 0 && !*proof) {
        int dtz = lc_tablebases_syzygy_dtz(tb, pos, &ok);
        if (ok && steps + abs(dtz) > 101) {
            result = 0;
            *proof = true;
        }
    }
    return result;
}

void rs_second_pass(rs_game *g)
{
    for (uint32_t k = 1; k < g->n; k++) {
        if (!probeable(g, k, g->syzygy_max) || ply(g, k)->rule50 == 0)
            continue;
        g->counts->probed++;
        int score = lc_tablebases_syzygy_wdl(g->cfg->tb, &ply(g, k)->pos);
        if (score == LC_TB_UNKNOWN)
            continue;
        g->counts->hits++;
        int r = rs_result(g, k);
        if (r == RS_BAD_RESULT)
            continue;
        bool proof;
        int result = second_result(g, k, score, r, &proof);
        if (rs_set_result(g, k, result)) {
            g->results_changed++;
            g->counts->second_pass++;
            g->counts->dtz_proofs += proof;
        }
    }
}

/* ---- steps 5 to 7: plies_left ---- */

static void set_plies_left(rs_game *g, uint32_t k, float v, bool count)
{
    uint8_t *at = rs_rec(g, k) + offsetof(lc_v6_record, plies_left);
    float old;
    memcpy(&old, at, 4);
    bool changed = memcmp(&old, &v, 4) != 0;
    if (count && changed)
        g->counts->plies_left_changed++;
    g->changed |= changed;
    memcpy(at, &v, 4);
}

static float plies_left(const rs_game *g, uint32_t k)
{
    return rs_f32(rs_rec(g, k), g->version, offsetof(lc_v6_record, plies_left), 0.0f);
}

/* upstream's IsAllDraws, reading each result until one is not a draw. */
static bool all_draws(rs_game *g)
{
    for (uint32_t k = 0; k < g->n; k++)
        if (rs_result(g, k) != 0)
            return false; /* RS_BAD_RESULT included */
    return true;
}

/* Step 6: a mate Gaviota sees at record k = i + 1 gives its distance to
 * the records back to the previous one corrected (record 0 and 1 never). */
static void gaviota_corrections(rs_game *g)
{
    int64_t last = 0;
    for (uint32_t i = 0; i + 1 < g->n; i++) {
        uint32_t k = i + 1;
        int r = rs_result(g, k);
        if (r == 0 || r == RS_BAD_RESULT || !probeable(g, k, 5))
            continue;
        unsigned dtm;
        int info = lc_tablebases_gaviota_dtm(g->cfg->tb, &ply(g, k)->pos, &dtm);
        if (info != LC_TB_WIN && info != LC_TB_LOSS)
            continue;
        int steps = ply(g, k)->rule50;
        /* The mate may run into the fifty-move rule, and the game's own
         * count is no longer than it: keep the game's. */
        if ((int64_t)dtm + steps > 99 && (float)dtm <= plies_left(g, k))
            continue;
        if (!lc_game_no_reps(g->game, k))
            continue;
        for (int64_t j = i; j > last; j--)
            set_plies_left(g, (uint32_t)j + 1, (float)(int)(dtm + (unsigned)(i - j)), true);
        last = i;
    }
}

/* Step 7: Syzygy's DTZ of a 3-piece pawnless position (DTZ is distance to
 * mate there, as every move before mate is neither a capture nor a pawn
 * move), and, at a counter of 0, the records before it. */
static void dtz_corrections(rs_game *g)
{
    const lc_tablebases *tb = g->cfg->tb;
    for (uint32_t i = 0; i + 1 < g->n; i++) {
        uint32_t k = i + 1;
        const lc_position *pos = &ply(g, k)->pos;
        if (!probeable(g, k, 3) || (pos->bb[LC_OURS + LC_PAWN] | pos->bb[LC_THEIRS + LC_PAWN]))
            continue;
        int score = lc_tablebases_syzygy_wdl(tb, pos);
        if (score == LC_TB_UNKNOWN || score == 0 || !lc_game_no_reps(g->game, k))
            continue;
        bool ok;
        int dtz = lc_tablebases_syzygy_dtz(tb, pos, &ok);
        if (!ok)
            continue;
        int steps = ply(g, k)->rule50, plies = abs(dtz);
        if (steps + plies < 99)
            set_plies_left(g, k, (float)plies, true);
        if (steps == 0)
            for (int64_t j = i; j >= 0; j--)
                set_plies_left(g, (uint32_t)j, (float)(plies + (int)(i + 1 - j)), true);
    }
}

void rs_plies_left(rs_game *g)
{
    bool has = rs_has_plies_left(g->version);
    /* Step 5: a record without an estimate (0: upgraded from V4 or older)
     * gets the plies to the game's end. */
    for (uint32_t k = 0; has && k < g->n; k++)
        if (plies_left(g, k) == 0.0f)
            set_plies_left(g, k, (float)(int)(g->n - k), false);
    /* Upstream reads every result here (IsAllDraws) before steps 6 and 7,
     * with Gaviota or not: a result that is not whole drops the game. */
    bool draws = all_draws(g);
    if (!has || draws || g->failed || !g->cfg->tb)
        return;
    if (g->gaviota)
        gaviota_corrections(g);
    else if (g->syzygy_max > 0) /* upstream probes (and crashes) without tables */
        dtz_corrections(g);
}

uint32_t rs_deblunder_region(const rs_game *g)
{
    for (uint32_t k = 1; k < g->n; k++)
        if (probeable(g, k, g->syzygy_max))
            return k;
    return g->n;
}
