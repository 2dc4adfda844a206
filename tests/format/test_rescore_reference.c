/*
 * rescore_reference: lcmon's rescorer (format/lc0/rescore/rescore.h) against a
 * second, independent writing of upstream's rules (the first half of this
 * file), compared bit for bit: every byte of every record, and whether the
 * game is kept, on every real game of tests/data (35, formats 1, 2, 3 and
 * 5) and on endgame-rich games of gen/lc0_games.h (real openings played
 * out into KQvK, KRvK, KPvK, KRvKP and KBNvK and on with the tables; seed
 * SEED; 60 of them, 15 under a sanitizer, LCMON_REF_GAMES to choose), for
 * the settings of issue 33: the defaults (no tables); Syzygy
 * (LCMON_SYZYGY_PATH); Syzygy with the deblunder (threshold 0.10, width
 * 0.06); Syzygy with dist_temp 0.8, dist_offset -0.05 and dtz_boost 0.3;
 * the deblunder without tables; and new_input_format 1 -> 3 -> 1: the
 * stage's output (rescored, then converted) equals the reference's records
 * converted, converts back to the reference's records byte for byte (the
 * games start at the start position, so the whole history survives), and
 * the format 3 game rescored again with the policy settings (canonical
 * frames: the boosted moves' indices transformed) and converted to 1
 * equals the reference's; the real format 3 and 5 games the same way.
 * Each setting prints what the rescoring changed (results, policies,
 * plies_left) and which of lcmon's rules fired, so that the equality is
 * seen to cover something. A difference prints the game, the record, the
 * field and both values. LCMON_REF_SHOW=<game index>|all prints the games'
 * tablebase facts record by record instead (how the values below were
 * found).
 *
 * Worked by hand from upstream's rules (hands[] checks them, in lcmon's
 * output and the reference's; Syzygy alone). The facts come from the
 * generated games and the real tables: the history's fifty-move counter,
 * lc0's repetition count, Syzygy's WDL and DTZ for the side to move.
 *
 * Generated game 0 (KQvK, 122 records, written as a draw: result_q 0
 * everywhere, plies_left 122 counting down to 1). Record 118: White Kg1 Qf8
 * Pc5 against Kc4, White to move, counter 0 (a capture), the first
 * position the tables answer: a win. First pass: record 118 gets +1 and
 * every record back to 0 the sign turned each ply: record 0 (White to
 * move, 118 plies earlier) +1, result_d 0. 118. Qf1 (counter 1), 119.
 * ...Kxc5: record 120, White Kg1 Qf1 against Kc5, counter 0, a win, DTZ
 * 17: first pass +1 (119: -1). 120. Qf7: record 121, Black Kc5 to move,
 * counter 1, after the last first-pass answer so still the game's 0;
 * Syzygy: a loss, DTZ -16. Second pass: r 0 != score -1, score != 0, no
 * repetition over the 1 ply of the counter: DTZ decides, 1 + 16 = 17 < 99,
 * a proof: result_q -1, result_d 0. plies_left: the estimate leaves 122..1
 * (none is 0); DTZ corrections (3 pieces, no pawn, not a draw, no
 * repetition): record 120, counter 0: 0 + 17 < 99, plies_left 17, and the
 * counter 0 gives every record j before it 17 + (120 - j): record 118 19,
 * record 0 137; record 121: 1 + 16 < 99, plies_left 16.
 *
 * Generated game 11 (KRvK, 212 records, a resignation the tables
 * contradict: White's view -1). Record 192: White Kf1 Rc2 against Ke6,
 * White to move, counter 0 (191. ...Kxe6 took White's knight), a win, DTZ 27:
 * first pass +1 (was -1); DTZ correction: plies_left 27 (was 20), record
 * 191 28. Record 193: Black Ke6 to move, counter 1, a loss, DTZ -30; the
 * game's +1 disagrees, no repetition: 1 + 30 = 31 < 99 proves it, -1;
 * plies_left 30 (was 19). Records 201 (Black Kd4 against Kd2 Ra5) and 202
 * come again at 205 and 206 (lc0's repetition count 1). Record 205:
 * counter 13, a loss, DTZ -22, the game's +1 disagrees, but a repetition
 * lies within the counter's 13 plies (205 itself): no proof, and the
 * second check (the game not a draw, the tables not a draw, no proof): 13
 * + 22 = 35 is not > 101: the disagreement stays a draw, result_q 0,
 * result_d 1; no DTZ correction either (the repetition): plies_left stays
 * the game's 7. Record 211, counter 19: the repetitions at 205 and 206
 * are within its 19 plies: a draw too, plies_left 1.
 *
 * Generated game 10 (KQvK, White wins, records 286 .. 289 KQB against K
 * with the counter at 91 .. 94). Record 289: Black Kc8 to move against
 * Kh2 Qe1 Bd8, counter 94, a loss, DTZ -8. The first pass, from record
 * 290 (after Kxd8, counter 0, a win for White), gives it -1, as the game.
 * Second pass: the game and the tables agree, no proof, so the second
 * check: 94 + 8 = 102 > 101, the fifty-move rule comes first: a draw,
 * result_q 0, result_d 1. (Record 288, counter 93, DTZ 5: 98, stays +1.)
 * 4 pieces: no DTZ correction, plies_left stays 16.
 */
#include "check.h"
#include "sample_games.h"
#include "testutil.h"

#include "format/lc0/rescore/game.h"
#include "format/lc0/rescore/input_format_convert.h"
#include "format/lc0/record.h"
#include "format/lc0/rescore/rescore.h"
#include "format/lc0/rescore/tablebase.h"
#include "lc0_games.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================
 * The reference: upstream's rescorer (lc0's RescoreTrainingData, which
 * lczero-training's chunk_rescorer calls on every game) written a second
 * time, as plainly as it can be, from its rules: the spec in code. It
 * shares none of the code under test (rescore*.c, deblunder.c): it uses
 * only the game reader (game.h: the positions, the moves between records,
 * lc0's repetition counts), the move generator and upstream's tablebase
 * probes (tablebase.h), each tested on its own elsewhere.
 *
 * Records are V6 (what lc0 writes, and every game here), copied into
 * lc_v6_record values so that every step reads like upstream's
 * data.fileContents[i].field. Floats are floats where upstream's are.
 * Gaviota is not modelled (no setting checked here has it; so step 6, the
 * DTM corrections, and the DTM choice among the boosted moves are left
 * out); without Syzygy tables the DTZ corrections are skipped (upstream
 * crashes there: a defect lcmon does not copy, docs/upstream.md).
 *
 * The steps, in upstream's order:
 *   1. Validate: every field in range, the probabilities summing to
 *      0.99..1.01, played_idx the move to the next record, that move's
 *      share not illegal;
 *   2. first pass: positions after a zeroing move probed, each answer
 *      carried back to the previous one, the sign turning each ply;
 *   3. second pass: positions with a counter; a disagreement is a draw
 *      unless DTZ proves the tables right; a win DTZ says the fifty-move
 *      rule spoils is a draw;
 *   4. the policy: max(0, p + offset (+ boost / count)) ^ (1 / temp),
 *      normalised, in float, when any of the three is set;
 *   5. plies_left 0 becomes the plies to the game's end;
 *   7. plies_left from Syzygy's DTZ on 3-piece pawnless positions;
 *   8. the deblunder, walking back from the region's end with the last
 *      record's targets.
 * A result that is not exactly -1, 0 or 1 where a step reads it refuses
 * the game (upstream's ResultForData throws).
 * ====================================================================== */

/* Upstream's settings, as floats (as upstream holds them). */
typedef struct ref_settings {
    const lc_tablebases *tb; /* NULL: no tables (max_cardinality 0) */
    float temp, offset, boost;
    bool deblunder; /* both deblunder settings given */
    float threshold, width;
} ref_settings;

typedef struct ref_game {
    lc_v6_record *r; /* the game's records, in ply order */
    uint32_t n;
    lc_game h; /* the history: h.ply[k] is record k's position */
    const ref_settings *s;
    unsigned max_card; /* Syzygy's largest table, 0 without */
    bool refused;      /* upstream threw: the game is dropped */
} ref_game;

static bool ref_one_bit(unsigned b)
{
    return (b & (b - 1)) == 0;
}

static bool ref_canonical(uint32_t f)
{
    return f == 3 || f == 4 || f == 5 || f == 132 || f == 133;
}

/* ---- 1. Validate ---- */

static bool ref_in(float v, float lo, float hi)
{
    return v >= lo && v <= hi;
}

/* The probabilities: each in [0, 1], -1 or NaN; the played and best moves'
 * legal in a searched record; the legal ones summing to 0.99..1.01. */
static bool ref_policy_valid(const lc_v6_record *d)
{
    float sum = 0.0f;
    for (unsigned j = 0; j < LC_POLICY_SIZE; j++) {
        float prob = d->probabilities[j];
        if (!(ref_in(prob, 0, 1) || prob == -1.0f || isnan(prob)))
            return false;
        if (prob >= 0.0f)
            sum += prob;
        if (d->visits > 0 && (j == d->best_idx || j == d->played_idx) && !(prob >= 0.0f))
            return false;
    }
    return !(sum < 0.99f || sum > 1.01f);
}

static bool ref_fields_valid(const lc_v6_record *d)
{
    uint32_t f = d->input_format;
    if (!(f == 1 || f == 2 || ref_canonical(f)))
        return false;
    if (!ref_in(d->best_d, 0, 1) || !ref_in(d->root_d, 0, 1) || !ref_in(d->best_q, -1, 1) ||
        !ref_in(d->root_q, -1, 1) || !(d->root_m >= 0) || !(d->best_m >= 0) ||
        !(d->plies_left >= 0))
        return false;
    const unsigned c[4] = {d->castling_us_ooo, d->castling_us_oo, d->castling_them_ooo,
                           d->castling_them_oo};
    for (int i = 0; i < 4; i++)
        if (f == 1 ? c[i] > 1 : !ref_one_bit(c[i]))
            return false;
    if (ref_canonical(f) ? !ref_one_bit(d->side_to_move_or_enpassant)
                         : d->side_to_move_or_enpassant > 1)
        return false;
    /* upstream's own check: result_d >= 0 && result_q <= 1 */
    if (!ref_in(d->result_q, -1, 1) || !(d->result_d >= 0 && d->result_q <= 1) ||
        d->rule50_count > 100 || !ref_policy_valid(d))
        return false;
    if (d->best_idx > 1858 || d->played_idx > 1858 || !ref_in(d->played_q, -1, 1) ||
        !ref_in(d->played_d, 0, 1) || !(d->played_m >= 0))
        return false;
    return (isnan(d->orig_q) || ref_in(d->orig_q, -1, 1)) &&
           (isnan(d->orig_d) || ref_in(d->orig_d, 0, 1)) && (isnan(d->orig_m) || d->orig_m >= 0);
}

/* The fields, then the moves: record i's move (the one that gives record
 * i+1's board, legal, found by the game reader) is played_idx in a
 * searched record, and not marked illegal unless bit 6 says the record is
 * history only. */
static bool ref_validate(ref_game *g, const uint8_t *bytes)
{
    if (g->n == 0)
        return false;
    for (uint32_t i = 0; i < g->n; i++)
        if (!ref_fields_valid(&g->r[i]))
            return false;
    char why[256];
    if (!lc_game_read(&g->h, bytes, LC_V6_RECORD_SIZE, g->n, 6, why, sizeof why))
        return false; /* a record no legal move leads to */
    for (uint32_t i = 0; i + 1 < g->n; i++) {
        uint16_t move = g->h.ply[i].move;
        if (g->r[i].visits > 0 && g->r[i].played_idx != move)
            return false;
        if (!(g->r[i].probabilities[move] >= 0.0f) && (g->r[i].invariance_info & 64) == 0)
            return false;
    }
    return true;
}

/* ---- what the steps share ---- */

/* upstream's ResultForData: the result, which must be whole. */
static int ref_result(ref_game *g, uint32_t k)
{
    float q = g->r[k].result_q;
    if (q != -1.0f && q != 0.0f && q != 1.0f) {
        g->refused = true;
        return 0;
    }
    return (int)q;
}

static void ref_set_result(ref_game *g, uint32_t k, int score)
{
    g->r[k].result_d = score == 0 ? 1.0f : 0.0f;
    g->r[k].result_q = (float)score;
}

static const lc_position *ref_pos(const ref_game *g, uint32_t k)
{
    return &g->h.ply[k].pos;
}

/* The history's fifty-move counter at record k. */
static int ref_rule50(const ref_game *g, uint32_t k)
{
    return g->h.ply[k].rule50;
}

/* Syzygy is asked: no castling right, at most max_cardinality pieces. */
static bool ref_probeable(const ref_game *g, uint32_t k)
{
    return !ref_pos(g, k)->castling && ref_pos(g, k)->pieces <= g->max_card;
}

/* Syzygy's WDL folded: 1 a win, -1 a loss, 0 a draw (cursed and blessed
 * included), LC_TB_UNKNOWN when the probe fails. */
static int ref_wdl(const ref_game *g, uint32_t k)
{
    return lc_tablebases_syzygy_wdl(g->s->tb, ref_pos(g, k));
}

/* None of the positions over the counter's plies (record k and back) has
 * a repetition; false when the history does not reach that far back. */
static bool ref_no_reps(const ref_game *g, uint32_t k)
{
    int steps = ref_rule50(g, k);
    for (int i = 0; i < steps; i++) {
        if ((int64_t)k - i < 0)
            return false;
        if (g->h.ply[k - (uint32_t)i].reps != 0)
            return false;
    }
    return true;
}

/* ---- 2. the first pass ---- */

static void ref_first_pass(ref_game *g)
{
    (void)ref_result(g, 0);
    int64_t last_rescore = -1;
    for (uint32_t i = 0; i + 1 < g->n && !g->refused; i++) {
        uint32_t k = i + 1;
        if (!ref_probeable(g, k) || ref_rule50(g, k) != 0)
            continue;
        int score = ref_wdl(g, k);
        if (score == LC_TB_UNKNOWN)
            continue;
        for (int64_t j = k; j > last_rescore; j--) {
            (void)ref_result(g, (uint32_t)j); /* upstream compares it (and so checks it) */
            ref_set_result(g, (uint32_t)j, score);
            score = -score;
        }
        last_rescore = k;
    }
}

/* ---- 3. the second pass ---- */

static int ref_dtz(const ref_game *g, uint32_t k, bool *ok)
{
    return lc_tablebases_syzygy_dtz(g->s->tb, ref_pos(g, k), ok);
}

static void ref_second_pass(ref_game *g)
{
    for (uint32_t i = 0; i + 1 < g->n && !g->refused; i++) {
        uint32_t k = i + 1;
        if (!ref_probeable(g, k) || ref_rule50(g, k) == 0)
            continue;
        int score = ref_wdl(g, k);
        if (score == LC_TB_UNKNOWN)
            continue;
        int r = ref_result(g, k), steps = ref_rule50(g, k);
        int new_score = r != score ? 0 : r;
        bool dtz_rescored = false, ok;
        if (r != score && score != 0 && ref_no_reps(g, k)) {
            int depth = ref_dtz(g, k, &ok);
            if (ok && steps + abs(depth) < 99) {
                new_score = score;
                dtz_rescored = true;
            }
        }
        if (r != 0 && score != 0 && !dtz_rescored) {
            int depth = ref_dtz(g, k, &ok);
            if (ok && steps + abs(depth) > 101)
                new_score = 0;
        }
        if (!g->refused)
            ref_set_result(g, k, new_score);
    }
}

/* ---- 4. the policy ---- */

/* The policy indices (record k's frame) of the moves to boost; how many. */
static int ref_boost_set(const ref_game *g, uint32_t k, bool *boost)
{
    const lc_position *pos = ref_pos(g, k);
    if (g->s->boost == 0.0f || pos->castling || pos->pieces > g->max_card)
        return 0;
    lc_move moves[LC_MAX_MOVES];
    bool to_boost[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(pos, moves);
    /* root_probe(pos, has_repeated = true, win_only = true): nothing when it
     * fails or nothing wins. (maybe_boost, the probe without has_repeated,
     * matters only with Gaviota.) */
    if (!lc_tablebases_syzygy_root_probe(g->s->tb, pos, moves, n, true, true, to_boost))
        return 0;
    int count = 0;
    for (unsigned i = 0; i < n; i++)
        if (to_boost[i]) {
            boost[lc_move_policy_transformed(&moves[i], g->h.ply[k].transform)] = true;
            count++;
        }
    return count;
}

static void ref_policy(ref_game *g)
{
    const ref_settings *s = g->s;
    if (s->temp == 1.0f && s->offset == 0.0f && s->boost == 0.0f)
        return;
    for (uint32_t k = 0; k < g->n; k++) {
        lc_v6_record *d = &g->r[k];
        bool boost[LC_POLICY_SIZE] = {false};
        int count = ref_boost_set(g, k, boost);
        float sum = 0.0f;
        for (unsigned j = 0; j < LC_POLICY_SIZE; j++) {
            float offset = s->offset + (boost[j] ? s->boost / (float)count : 0.0f);
            float prob = d->probabilities[j];
            if (prob < 0 || isnan(prob))
                continue;
            prob = 0.0f < prob + offset ? prob + offset : 0.0f; /* std::max(0.0f, x) */
            prob = powf(prob, 1.0f / s->temp);
            sum += prob;
            d->probabilities[j] = prob;
        }
        for (unsigned j = 0; j < LC_POLICY_SIZE; j++) {
            float prob = d->probabilities[j];
            if (prob < 0 || isnan(prob))
                continue;
            d->probabilities[j] = prob / sum;
        }
    }
}

/* ---- 5 and 7. plies_left ---- */

static void ref_estimate_plies_left(ref_game *g)
{
    for (uint32_t k = 0; k < g->n; k++)
        if (g->r[k].plies_left == 0.0f)
            g->r[k].plies_left = (float)(int)(g->n - k);
}

/* upstream's IsAllDraws: every result read until one is not a draw. */
static bool ref_all_draws(ref_game *g)
{
    for (uint32_t k = 0; k < g->n; k++)
        if (ref_result(g, k) != 0 || g->refused)
            return false;
    return true;
}

static bool ref_pawnless_three(const lc_position *p)
{
    uint64_t pawns = p->bb[LC_OURS + LC_PAWN] | p->bb[LC_THEIRS + LC_PAWN];
    return !p->castling && p->pieces <= 3 && pawns == 0;
}

static void ref_dtz_corrections(ref_game *g)
{
    if (ref_all_draws(g) || g->refused || g->max_card == 0)
        return;
    for (uint32_t i = 0; i + 1 < g->n; i++) {
        uint32_t k = i + 1;
        if (!ref_pawnless_three(ref_pos(g, k)))
            continue;
        int score = ref_wdl(g, k);
        if (score == LC_TB_UNKNOWN || score == 0 || !ref_no_reps(g, k))
            continue;
        bool ok;
        int depth = ref_dtz(g, k, &ok);
        if (!ok)
            continue;
        int steps = ref_rule50(g, k), plies = abs(depth);
        if (steps + plies < 99)
            g->r[k].plies_left = (float)plies;
        if (steps == 0)
            for (int64_t j = i; j >= 0; j--)
                g->r[j].plies_left = (float)(plies + (int)((int64_t)i + 1 - j));
    }
}

/* ---- 8. the deblunder ---- */

static void ref_deblunder(ref_game *g)
{
    const ref_settings *s = g->s;
    if (!s->deblunder || g->r[g->n - 1].visits == 0)
        return;
    /* The region: the records before the first (after record 0) that
     * Syzygy could be asked about. */
    uint32_t end = g->n - 1;
    for (uint32_t i = 0; i + 1 < g->n; i++)
        if (ref_probeable(g, i + 1)) {
            end = i;
            break;
        }
    const lc_v6_record *last = &g->r[g->n - 1];
    float z[3] = {last->result_q, last->result_d, last->plies_left};
    bool started = false;
    for (int64_t k = end;; k--) {
        lc_v6_record *cur = &g->r[k];
        bool threshold = cur->best_q - cur->played_q > s->threshold - s->width / 2.0;
        bool terminal =
            cur->best_q > -1 && cur->played_q < 1 &&
            ((cur->best_q == 1 && (cur->invariance_info & 8) != 0) || cur->played_q == -1);
        if (threshold || terminal) {
            float ratio = 1.0f;
            if (s->width > 0 && !terminal) {
                float x = (cur->best_q - cur->played_q - s->threshold) / s->width + 0.5f;
                ratio = x < 1.0f ? x : 1.0f; /* std::min(1.0f, x) */
            }
            z[0] = (1 - ratio) * z[0] + ratio * cur->best_q;
            z[1] = (1 - ratio) * z[1] + ratio * cur->best_d;
            z[2] = (1 - ratio) * z[2] + ratio * cur->best_m;
            started = true;
        }
        if (started) {
            cur->result_q = z[0];
            cur->result_d = z[1];
            cur->plies_left = z[2];
        }
        if (k == 0)
            break;
        z[0] = -z[0];
        z[2] += 1.0f;
    }
}

/* ---- the whole game ---- */

/*
 * Rescore the n V6 records at bytes in place, as upstream would: true when
 * kept, false when upstream drops the game (the records are then left as
 * they were).
 */
static bool ref_rescore(const ref_settings *s, uint8_t *bytes, uint32_t n)
{
    ref_game g = {.n = n, .s = s};
    g.max_card = s->tb ? lc_tablebases_syzygy_max_pieces(s->tb) : 0;
    g.r = malloc((n ? n : 1) * sizeof *g.r);
    memcpy(g.r, bytes, (size_t)n * sizeof *g.r);
    lc_game_init(&g.h);
    bool kept = ref_validate(&g, bytes);
    if (kept) {
        ref_first_pass(&g);
        ref_second_pass(&g);
        if (!g.refused)
            ref_policy(&g);
        ref_estimate_plies_left(&g);
        ref_dtz_corrections(&g);
        if (!g.refused)
            ref_deblunder(&g);
        kept = !g.refused;
    }
    if (kept)
        memcpy(bytes, g.r, (size_t)n * sizeof *g.r);
    lc_game_fini(&g.h);
    free(g.r);
    return kept;
}

/* ======================================================================
 * The comparison: lcmon's lc_rescore_game against the reference, every
 * byte of every record.
 * ====================================================================== */

#define SEED 33

/* A record's fields by offset, for saying where two records differ. */
#define FIELD(f)                                                                                   \
    {                                                                                              \
#f, offsetof(lc_v6_record, f), LC_REC_FIELD_SIZE_(lc_v6_record, f)                         \
    }
static const struct field {
    const char *name;
    size_t off, len;
} fields[] = {
    FIELD(version),
    FIELD(input_format),
    FIELD(probabilities),
    FIELD(planes),
    FIELD(castling_us_ooo),
    FIELD(castling_us_oo),
    FIELD(castling_them_ooo),
    FIELD(castling_them_oo),
    FIELD(side_to_move_or_enpassant),
    FIELD(rule50_count),
    FIELD(invariance_info),
    FIELD(dummy),
    FIELD(root_q),
    FIELD(best_q),
    FIELD(root_d),
    FIELD(best_d),
    FIELD(root_m),
    FIELD(best_m),
    FIELD(plies_left),
    FIELD(result_q),
    FIELD(result_d),
    FIELD(played_q),
    FIELD(played_d),
    FIELD(played_m),
    FIELD(orig_q),
    FIELD(orig_d),
    FIELD(orig_m),
    FIELD(visits),
    FIELD(played_idx),
    FIELD(best_idx),
    FIELD(policy_kld),
    FIELD(q_st),
};

typedef struct game {
    uint8_t *data; /* n V6 records */
    uint32_t n;
    char name[96];
    int ending; /* generated: LC_GEN_*; real: -1 */
} game;

typedef struct games {
    game g[160];
    size_t n;
} games;

static void add_game(games *gs, const uint8_t *data, uint32_t n, const char *name, int ending)
{
    if (gs->n == sizeof gs->g / sizeof gs->g[0])
        return;
    game *g = &gs->g[gs->n++];
    g->data = malloc((size_t)n * LC_V6_RECORD_SIZE);
    memcpy(g->data, data, (size_t)n * LC_V6_RECORD_SIZE);
    g->n = n;
    g->ending = ending;
    snprintf(g->name, sizeof g->name, "%s", name);
}

static void add_real(const lc_chunk_data *c, const char *path, void *ctx)
{
    CHECK(c->version == 6 && c->record_size == LC_V6_RECORD_SIZE);
    if (c->version != 6)
        return;
    const char *base = strstr(path, "lc0-");
    add_game(ctx, c->data, (uint32_t)c->n_records, base ? base : path, -1);
}

/* What one setting gave on every game. */
typedef struct tally {
    size_t games, kept, dropped, verdicts_differ, positions, equal, shown;
    size_t results, policies, plies_left; /* records whose field the rescoring changed */
    lc_rescore_counts lcmon;              /* lcmon's counts: which rules fired */
} tally;

/* What the rescoring (b, the reference's) changed in game g: something to
 * compare, or the equality says little. */
static void count_changes(const game *g, const uint8_t *b, tally *t)
{
    const size_t rq = offsetof(lc_v6_record, result_q), pl = offsetof(lc_v6_record, plies_left);
    const size_t pr = offsetof(lc_v6_record, probabilities);
    for (uint32_t k = 0; k < g->n; k++) {
        const uint8_t *x = g->data + (size_t)k * LC_V6_RECORD_SIZE,
                      *y = b + (size_t)k * LC_V6_RECORD_SIZE;
        t->results += memcmp(x + rq, y + rq, 8) != 0;
        t->plies_left += memcmp(x + pl, y + pl, 4) != 0;
        t->policies += memcmp(x + pr, y + pr, 4 * LC_POLICY_SIZE) != 0;
    }
}

/* Print where records a (lcmon) and b (the reference) differ: the field,
 * the record, both values. */
static void show_difference(const game *g, uint32_t k, const uint8_t *a, const uint8_t *b)
{
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        const struct field *d = &fields[f];
        size_t at = d->off;
        while (at < d->off + d->len && a[at] == b[at])
            at++;
        if (at == d->off + d->len)
            continue;
        if (d->len == 4 && strcmp(d->name, "visits") && strcmp(d->name, "input_format") &&
            strcmp(d->name, "version")) {
            float x, y;
            memcpy(&x, a + d->off, 4);
            memcpy(&y, b + d->off, 4);
            printf("  %s record %u: %s lcmon %.9g, reference %.9g\n", g->name, k, d->name,
                   (double)x, (double)y);
        } else if (!strcmp(d->name, "probabilities")) {
            size_t j = (at - d->off) / 4;
            float x, y;
            memcpy(&x, a + d->off + 4 * j, 4);
            memcpy(&y, b + d->off + 4 * j, 4);
            printf("  %s record %u: probabilities[%zu] lcmon %.9g, reference %.9g\n", g->name, k, j,
                   (double)x, (double)y);
        } else {
            printf("  %s record %u: %s differs at byte %zu: lcmon %u, reference %u\n", g->name, k,
                   d->name, at - d->off, a[at], b[at]);
        }
        return;
    }
}

/* Both rescorers on a copy of game g each; the records compared. */
static void compare_game(const game *g, const lc_rescore_config *cfg, const ref_settings *s,
                         tally *t)
{
    size_t size = (size_t)g->n * LC_V6_RECORD_SIZE;
    uint8_t *a = malloc(size), *b = malloc(size);
    memcpy(a, g->data, size);
    memcpy(b, g->data, size);
    char why[256];
    int rc = lc_rescore_game(cfg, a, LC_V6_RECORD_SIZE, g->n, 6, &t->lcmon, why, sizeof why);
    bool kept = ref_rescore(s, b, g->n);
    t->games++;
    t->positions += g->n;
    if ((rc == LC_RESCORE_KEPT) != kept) {
        t->verdicts_differ++;
        printf("  %s: lcmon %s (%s), the reference %s\n", g->name,
               rc == LC_RESCORE_KEPT ? "keeps it" : "drops it", why,
               kept ? "keeps it" : "drops it");
    } else if (!kept) {
        t->dropped++;
        t->equal += g->n; /* dropped by both: nothing passed on */
    } else {
        t->kept++;
        count_changes(g, b, t);
        for (uint32_t k = 0; k < g->n; k++) {
            const uint8_t *x = a + (size_t)k * LC_V6_RECORD_SIZE,
                          *y = b + (size_t)k * LC_V6_RECORD_SIZE;
            if (memcmp(x, y, LC_V6_RECORD_SIZE) == 0)
                t->equal++;
            else if (t->shown++ < 5)
                show_difference(g, k, x, y);
        }
    }
    free(a);
    free(b);
}

typedef struct setting {
    const char *name;
    bool tables, deblunder;
    float temp, offset, boost;
} setting;

/* The settings (and the deblunder without tables, where the
 * region is the whole game). */
static const setting settings[] = {
    {"defaults (no tables)", false, false, 1.0f, 0.0f, 0.0f},
    {"Syzygy", true, false, 1.0f, 0.0f, 0.0f},
    {"Syzygy, deblunder 0.10 / 0.06", true, true, 1.0f, 0.0f, 0.0f},
    {"Syzygy, dist_temp 0.8, dist_offset -0.05, dtz_boost 0.3", true, false, 0.8f, -0.05f, 0.3f},
    {"deblunder 0.10 / 0.06 (no tables)", false, true, 1.0f, 0.0f, 0.0f},
};

static void configure(const setting *st, const lc_tablebases *tb, lc_rescore_config *cfg,
                      ref_settings *s)
{
    lc_rescore_config_init(cfg);
    cfg->tb = st->tables ? tb : NULL;
    cfg->dist_temp = st->temp;
    cfg->dist_offset = st->offset;
    cfg->dtz_boost = st->boost;
    if (st->deblunder) {
        cfg->deblunder_threshold = 0.10;
        cfg->deblunder_width = 0.06;
    }
    *s = (ref_settings){.tb = cfg->tb,
                        .temp = (float)cfg->dist_temp,
                        .offset = (float)cfg->dist_offset,
                        .boost = (float)cfg->dtz_boost,
                        .deblunder = st->deblunder,
                        .threshold = (float)0.10,
                        .width = (float)0.06};
}

static void compare_setting(const games *gs, const setting *st, const lc_tablebases *tb)
{
    lc_rescore_config cfg;
    ref_settings s;
    configure(st, tb, &cfg, &s);
    tally t = {0};
    for (size_t i = 0; i < gs->n; i++)
        compare_game(&gs->g[i], &cfg, &s, &t);
    printf("%s: %zu games (%zu kept, %zu dropped by both, %zu verdicts differ), %zu positions, "
           "%zu records equal\n",
           st->name, t.games, t.kept, t.dropped, t.verdicts_differ, t.positions, t.equal);
    printf("  the rescoring changed the results of %zu records, the policies of %zu, plies_left of "
           "%zu\n",
           t.results, t.policies, t.plies_left);
    printf("  lcmon counted %llu second-pass changes (%llu by DTZ), %llu boosted policies, %llu "
           "blunders\n",
           (unsigned long long)t.lcmon.second_pass, (unsigned long long)t.lcmon.dtz_proofs,
           (unsigned long long)t.lcmon.policies_boosted, (unsigned long long)t.lcmon.blunders);
    CHECK_EQ_U64(t.verdicts_differ, 0);
    CHECK_EQ_U64(t.equal, t.positions);
}

/* ---- damaged games: the verdicts (kept or dropped) compared, and what
 * both keep ---- */

static void put_f32(uint8_t *data, uint32_t k, size_t off, float v)
{
    memcpy(data + (size_t)k * LC_V6_RECORD_SIZE + off, &v, 4);
}

/* Damage d done to the n records at data; its name, or NULL when the game
 * has nothing to damage that way. */
static const char *damage(int d, uint8_t *data, uint32_t n)
{
    uint8_t *mid = data + (size_t)(n / 2) * LC_V6_RECORD_SIZE;
    switch (d) {
    case 0: /* read by IsAllDraws only when every result before it is a draw */
        put_f32(data, n - 1, offsetof(lc_v6_record, result_q), 0.5f);
        put_f32(data, n - 1, offsetof(lc_v6_record, result_d), 0.5f);
        return "result_q 0.5 on the last record";
    case 1:
        put_f32(data, 0, offsetof(lc_v6_record, result_q), 0.5f);
        return "result_q 0.5 on record 0";
    case 2: /* read by the first pass when a later answer reaches back over it */
        put_f32(data, n > 3 ? n - 3 : 0, offsetof(lc_v6_record, result_q), -0.5f);
        return "result_q -0.5 three records before the end";
    case 3:
        for (unsigned j = 0; j < LC_POLICY_SIZE; j++) {
            float p = lc_rec_probability(mid, j);
            if (p > 0)
                put_f32(mid, 0, offsetof(lc_v6_record, probabilities) + 4 * j, p * 0.9f);
        }
        return "the middle record's probabilities summing to 0.9";
    case 4: {
        uint16_t played;
        LC_REC_GET(mid, played_idx, played);
        for (uint16_t j = 0; j < LC_POLICY_SIZE; j++)
            if (j != played && lc_rec_probability(mid, j) >= 0) {
                memcpy(mid + offsetof(lc_v6_record, played_idx), &j, 2);
                return "the middle record's played_idx another legal move";
            }
        return NULL;
    }
    case 5:
        data[(size_t)(n - 1) * LC_V6_RECORD_SIZE + offsetof(lc_v6_record, rule50_count)] = 101;
        return "rule50_count 101 on the last record";
    case 6:
        put_f32(data, n / 2, offsetof(lc_v6_record, orig_q), 2.0f);
        return "orig_q 2 in the middle";
    case 7: { /* upstream's deblunder looks at the last record's visits alone */
        uint32_t zero = 0;
        memcpy(data + (size_t)(n - 1) * LC_V6_RECORD_SIZE + offsetof(lc_v6_record, visits), &zero,
               4);
        return "visits 0 on the last record (no deblunder)";
    }
    case 8: {
        uint32_t zero = 0;
        memcpy(mid + offsetof(lc_v6_record, visits), &zero, 4);
        return "visits 0 in the middle (the deblunder still runs)";
    }
    default:
        return NULL;
    }
}

enum { DAMAGES = 9 };

/* Every fifth game, each damage, with the settings s_i: both rescorers
 * keep or drop it alike, and what they keep is equal. */
static void compare_damaged(const games *gs, const lc_tablebases *tb)
{
    const setting *used[] = {&settings[0], &settings[1], &settings[2]};
    for (size_t u = 0; u < sizeof used / sizeof used[0]; u++) {
        if (used[u]->tables && !tb)
            continue;
        lc_rescore_config cfg;
        ref_settings s;
        configure(used[u], tb, &cfg, &s);
        tally t = {0};
        for (size_t i = 0; i < gs->n; i += 5)
            for (int d = 0; d < DAMAGES; d++) {
                game g = gs->g[i];
                size_t size = (size_t)g.n * LC_V6_RECORD_SIZE;
                g.data = malloc(size);
                memcpy(g.data, gs->g[i].data, size);
                const char *what = damage(d, g.data, g.n);
                snprintf(g.name, sizeof g.name, "%.40s, %.50s", gs->g[i].name, what ? what : "");
                if (what)
                    compare_game(&g, &cfg, &s, &t);
                free(g.data);
            }
        printf("damaged games, %s: %zu games (%zu kept, %zu dropped by both, %zu verdicts "
               "differ), %zu positions, %zu records equal\n",
               used[u]->name, t.games, t.kept, t.dropped, t.verdicts_differ, t.positions, t.equal);
        CHECK_EQ_U64(t.verdicts_differ, 0);
        CHECK_EQ_U64(t.equal, t.positions);
        CHECK(t.kept > 0 && t.dropped > 0);
    }
}

/* ---- LCMON_REF_SHOW=<game>: a game's tablebase facts, record by record,
 * and what upstream's rules make of them (for working examples by hand) ---- */

/* "White Kc3 Qd4, Black Ke8" for a position of few pieces (the plane
 * frame turned back to the board for black to move). */
static void describe(const lc_position *p, bool black, char *out, size_t size)
{
    static const char names[] = "PNBRQK";
    size_t len = 0;
    for (int side = 0; side < 2; side++) {
        bool white_side = (side == 0) != black; /* side 0: "us" */
        len += (size_t)snprintf(out + len, size - len, "%s%s", side ? ", " : "",
                                white_side ? "White" : "Black");
        for (int piece = LC_KING; piece >= LC_PAWN; piece--)
            for (int sq = 0; sq < 64; sq++)
                if (p->bb[(side ? LC_THEIRS : LC_OURS) + piece] >> sq & 1) {
                    int rank = black ? 7 - sq / 8 : sq / 8;
                    len += (size_t)snprintf(out + len, size - len, " %c%c%d", names[piece],
                                            'a' + sq % 8, rank + 1);
                }
    }
}

static void show_game(const game *g, const lc_tablebases *tb)
{
    size_t size = (size_t)g->n * LC_V6_RECORD_SIZE;
    uint8_t *after = malloc(size);
    memcpy(after, g->data, size);
    ref_settings s = {.tb = tb, .temp = 1.0f};
    CHECK(ref_rescore(&s, after, g->n));
    lc_game h;
    lc_game_init(&h);
    char why[256];
    CHECK(lc_game_read(&h, g->data, LC_V6_RECORD_SIZE, g->n, 6, why, sizeof why));
    printf("%s: record, rule50, pieces, reps, WDL, DTZ, result_q before -> after, plies_left "
           "before -> after (*: after the first pass's last answer)\n",
           g->name);
    uint32_t last_hit = 0; /* the first pass's last answer: the second pass alone after it */
    for (uint32_t k = 1; k < g->n && h.n == g->n; k++)
        if (h.ply[k].rule50 == 0 && lc_tablebases_syzygy_wdl(tb, &h.ply[k].pos) != LC_TB_UNKNOWN)
            last_hit = k;
    for (uint32_t k = 0; k < g->n && h.n == g->n; k++) {
        const lc_position *p = &h.ply[k].pos;
        int wdl = lc_tablebases_syzygy_wdl(tb, p);
        bool ok = false;
        int dtz = wdl != LC_TB_UNKNOWN ? lc_tablebases_syzygy_dtz(tb, p, &ok) : 0;
        const uint8_t *x = g->data + (size_t)k * LC_V6_RECORD_SIZE;
        const uint8_t *y = after + (size_t)k * LC_V6_RECORD_SIZE;
        float q0, q1, m0, m1;
        LC_REC_GET(x, result_q, q0);
        LC_REC_GET(y, result_q, q1);
        LC_REC_GET(x, plies_left, m0);
        LC_REC_GET(y, plies_left, m1);
        if (wdl == LC_TB_UNKNOWN && q0 == q1 && m0 == m1)
            continue;
        char board[128] = "";
        if (p->pieces <= 4)
            describe(p, x[offsetof(lc_v6_record, side_to_move_or_enpassant)] != 0, board,
                     sizeof board);
        printf("  %4u%c %3d %2u %u %2d %4d  %2g -> %2g  %3g -> %3g  %s\n", k,
               k > last_hit ? '*' : ' ', h.ply[k].rule50, p->pieces, h.ply[k].reps,
               wdl == LC_TB_UNKNOWN ? 9 : wdl, ok ? dtz : 999, (double)q0, (double)q1, (double)m0,
               (double)m1, board);
    }
    lc_game_fini(&h);
    free(after);
}

/* ---- the positions worked by hand (the file's comment) ---- */

typedef struct hand {
    unsigned game;                        /* generated game (seed SEED; its ending index % 5) */
    uint32_t record;                      /* the record */
    int rule50, pieces, reps, wdl, dtz;   /* the facts: history counter, Syzygy (9: not asked) */
    float before_q;                       /* the game's result_q */
    float result_q, result_d, plies_left; /* upstream's rules, by hand */
} hand;

static const hand hands[] = {
    {0, 0, 0, 32, 0, 9, 0, 0.0f, 1.0f, 0.0f, 137.0f},
    {0, 118, 0, 4, 0, 1, 1, 0.0f, 1.0f, 0.0f, 19.0f},
    {0, 120, 0, 3, 0, 1, 17, 0.0f, 1.0f, 0.0f, 17.0f},
    {0, 121, 1, 3, 0, -1, -16, 0.0f, -1.0f, 0.0f, 16.0f},
    {10, 289, 94, 4, 0, -1, -8, -1.0f, 0.0f, 1.0f, 16.0f},
    {11, 192, 0, 3, 0, 1, 27, -1.0f, 1.0f, 0.0f, 27.0f},
    {11, 193, 1, 3, 0, -1, -30, 1.0f, -1.0f, 0.0f, 30.0f},
    {11, 205, 13, 3, 1, -1, -22, 1.0f, 0.0f, 1.0f, 7.0f},
    {11, 211, 19, 3, 0, -1, -20, 1.0f, 0.0f, 1.0f, 1.0f},
};

static float field_at(const uint8_t *records, uint32_t k, size_t off)
{
    float v;
    memcpy(&v, records + (size_t)k * LC_V6_RECORD_SIZE + off, 4);
    return v;
}

/* The facts of hand h in the game as generated, then the values both
 * rescorers give (Syzygy alone). */
static void check_hand(const hand *h, const lc_gen_game *gg, const uint8_t *lcmon,
                       const uint8_t *ref, const lc_tablebases *tb)
{
    lc_game hist;
    lc_game_init(&hist);
    char why[256];
    CHECK(lc_game_read(&hist, gg->records, LC_V6_RECORD_SIZE, (uint32_t)gg->n, 6, why, sizeof why));
    CHECK(h->record < gg->n);
    if (h->record < hist.n) {
        const lc_game_ply *p = &hist.ply[h->record];
        int wdl = p->pos.pieces <= 4 ? lc_tablebases_syzygy_wdl(tb, &p->pos) : 9;
        bool ok = false;
        int dtz = wdl != 9 ? lc_tablebases_syzygy_dtz(tb, &p->pos, &ok) : 0;
        CHECK_EQ_INT(p->rule50, h->rule50);
        CHECK_EQ_INT(p->pos.pieces, h->pieces);
        CHECK_EQ_INT(p->reps, h->reps);
        CHECK_EQ_INT(wdl, h->wdl);
        CHECK(wdl == 9 || ok);
        CHECK_EQ_INT(dtz, h->wdl == 9 ? 0 : h->dtz);
        CHECK(field_at(gg->records, h->record, offsetof(lc_v6_record, result_q)) == h->before_q);
        const uint8_t *out[2] = {lcmon, ref};
        for (int i = 0; i < 2; i++) {
            CHECK(field_at(out[i], h->record, offsetof(lc_v6_record, result_q)) == h->result_q);
            CHECK(field_at(out[i], h->record, offsetof(lc_v6_record, result_d)) == h->result_d);
            CHECK(field_at(out[i], h->record, offsetof(lc_v6_record, plies_left)) == h->plies_left);
        }
    }
    lc_game_fini(&hist);
}

static void hand_worked(const lc_tablebases *tb)
{
    lc_error err;
    lc_gen_openings o;
    CHECK_OK(lc_gen_openings_load(tu_test_data(), &o, &err));
    lc_rescore_config cfg;
    ref_settings s;
    configure(&settings[1], tb, &cfg, &s);
    size_t checked = 0;
    for (size_t i = 0; i < sizeof hands / sizeof hands[0]; i++) {
        const hand *h = &hands[i];
        lc_gen_game gg = {0};
        CHECK_OK(
            lc_gen_game_make(&o, tb, SEED, h->game, (int)(h->game % LC_GEN_ENDINGS), &gg, &err));
        if (!gg.records)
            continue;
        size_t size = gg.n * LC_V6_RECORD_SIZE;
        uint8_t *a = malloc(size), *b = malloc(size);
        memcpy(a, gg.records, size);
        memcpy(b, gg.records, size);
        lc_rescore_counts counts = {0};
        CHECK_EQ_INT(
            lc_rescore_game(&cfg, a, LC_V6_RECORD_SIZE, (uint32_t)gg.n, 6, &counts, NULL, 0),
            LC_RESCORE_KEPT);
        CHECK(ref_rescore(&s, b, (uint32_t)gg.n));
        int failed = check_failures();
        check_hand(h, &gg, a, b, tb);
        if (check_failures() != failed)
            printf("hand-worked: generated game %u, record %u differs (the generator changed? "
                   "LCMON_REF_SHOW=<its index> prints its facts)\n",
                   h->game, h->record);
        checked++;
        free(a);
        free(b);
        lc_gen_game_free(&gg);
    }
    printf("hand-worked: %zu positions of generated games checked\n", checked);
    lc_gen_openings_free(&o);
}

/* ---- new_input_format 1 -> 3 -> 1 ---- */

/* What the stage does with new_input_format `to`: rescore, then convert
 * the kept game (lc_rescorer_records' order); the reference's rescoring
 * when ref is set. False when dropped or not converted. */
static bool stage(const lc_rescore_config *cfg, const ref_settings *ref, uint8_t *data, uint32_t n,
                  uint32_t to)
{
    lc_rescore_counts counts = {0};
    bool kept = ref ? ref_rescore(ref, data, n)
                    : lc_rescore_game(cfg, data, LC_V6_RECORD_SIZE, n, 6, &counts, NULL, 0) ==
                          LC_RESCORE_KEPT;
    lc_error err;
    lc_error_clear(&err);
    return kept && lc_game_convert_format(data, LC_V6_RECORD_SIZE, n, 6, to, &err) == 0;
}

/* The records of a and b (lcmon's, the reference's) that are equal; the
 * first few differences shown. */
static size_t equal_records(const game *g, const uint8_t *a, const uint8_t *b, tally *t)
{
    size_t eq = 0;
    for (uint32_t k = 0; k < g->n; k++) {
        const uint8_t *x = a + (size_t)k * LC_V6_RECORD_SIZE,
                      *y = b + (size_t)k * LC_V6_RECORD_SIZE;
        if (memcmp(x, y, LC_V6_RECORD_SIZE) == 0)
            eq++;
        else if (t->shown++ < 5)
            show_difference(g, k, x, y);
    }
    return eq;
}

static uint32_t input_format(const game *g)
{
    uint32_t f;
    LC_REC_GET(g->data, input_format, f);
    return f;
}

/* One game through the conversions; t[0]: the stage's 1 -> 3 output
 * against the reference's rescoring converted; t[1]: that output
 * converted back to 1 against the reference's rescoring (nothing lost);
 * t[2]: the converted game rescored (policy settings) and converted back,
 * lcmon's against the reference's. */
static void convert_game(const game *g, const lc_rescore_config *syz, const ref_settings *syz_ref,
                         const lc_rescore_config *pol, const ref_settings *pol_ref, tally *t)
{
    size_t size = (size_t)g->n * LC_V6_RECORD_SIZE;
    uint8_t *a = malloc(size), *b = malloc(size), *r = malloc(size);
    memcpy(a, g->data, size);
    memcpy(r, g->data, size);
    lc_error err;
    lc_error_clear(&err);
    bool ok = stage(syz, NULL, a, g->n, 3) && ref_rescore(syz_ref, r, g->n);
    memcpy(b, r, size); /* the reference's records, converted as the stage converts */
    ok = ok && lc_game_convert_format(b, LC_V6_RECORD_SIZE, g->n, 6, 3, &err) == 0;
    CHECK(ok);
    for (int i = 0; i < 3; i++) {
        t[i].games++;
        t[i].positions += g->n;
    }
    if (!ok)
        goto out;
    t[0].equal += equal_records(g, a, b, &t[0]);
    CHECK_OK(lc_game_convert_format(b, LC_V6_RECORD_SIZE, g->n, 6, 1, &err));
    t[1].equal += equal_records(g, b, r, &t[1]);
    memcpy(b, a, size);
    CHECK(stage(pol, NULL, a, g->n, 1) && stage(NULL, pol_ref, b, g->n, 1));
    t[2].equal += equal_records(g, a, b, &t[2]);
out:
    free(a);
    free(b);
    free(r);
}

static void compare_conversions(const games *gs, const lc_tablebases *tb)
{
    lc_rescore_config syz, pol;
    ref_settings syz_ref, pol_ref;
    configure(&settings[1], tb, &syz, &syz_ref);
    configure(&settings[3], tb, &pol, &pol_ref);
    tally t[4] = {{0}};
    for (size_t i = 0; i < gs->n; i++) {
        const game *g = &gs->g[i];
        uint32_t f = input_format(g);
        if (f == 1) {
            convert_game(g, &syz, &syz_ref, &pol, &pol_ref, t);
            continue;
        }
        /* The real canonical games (3, 5) the other way: to format 1. */
        size_t size = (size_t)g->n * LC_V6_RECORD_SIZE;
        uint8_t *a = malloc(size), *b = malloc(size);
        memcpy(a, g->data, size);
        memcpy(b, g->data, size);
        bool ok = f == 2 || (stage(&pol, NULL, a, g->n, 1) && stage(NULL, &pol_ref, b, g->n, 1));
        CHECK(ok);
        if (f != 2) {
            t[3].games++;
            t[3].positions += g->n;
            t[3].equal += ok ? equal_records(g, a, b, &t[3]) : 0;
        }
        free(a);
        free(b);
    }
    static const char *const what[4] = {
        "new_input_format 3 on format 1 (Syzygy): lcmon's stage = the reference's records "
        "converted",
        "and converted back to 1 = the reference's records",
        "that format 3 game with dist_temp, dist_offset, dtz_boost, to 1: lcmon = the reference",
        "the real format 3 and 5 games with those, to 1: lcmon = the reference"};
    for (int i = 0; i < 4; i++) {
        printf("%s: %zu games, %zu positions, %zu records equal\n", what[i], t[i].games,
               t[i].positions, t[i].equal);
        CHECK_EQ_U64(t[i].equal, t[i].positions);
    }
    CHECK(t[0].games > 0 && t[3].games > 0);
}

/* ---- the games ---- */

static unsigned generated_count(void)
{
    const char *v = getenv("LCMON_REF_GAMES");
    if (v && atoi(v) > 0)
        return (unsigned)atoi(v);
    return TU_SANITIZED ? 15 : 60;
}

static void generate(games *gs, const lc_tablebases *tb, unsigned count)
{
    lc_error err;
    lc_gen_openings o;
    CHECK_OK(lc_gen_openings_load(tu_test_data(), &o, &err));
    for (unsigned i = 0; i < count; i++) {
        lc_gen_game g;
        int ending = (int)(i % LC_GEN_ENDINGS);
        CHECK_OK(lc_gen_game_make(&o, tb, SEED, i, ending, &g, &err));
        if (!g.records)
            continue;
        char name[96];
        snprintf(name, sizeof name, "generated %u (%s)", i, lc_gen_ending_name(ending));
        add_game(gs, g.records, (uint32_t)g.n, name, ending);
        lc_gen_game_free(&g);
    }
    lc_gen_openings_free(&o);
}

int main(void)
{
    static games gs;
    sg_each_game(tu_test_data(), add_real, &gs);
    size_t real = gs.n;
    CHECK(real == 35);
    const char *dir = getenv("LCMON_SYZYGY_PATH");
    lc_tablebases *tb = NULL;
    lc_error err;
    lc_error_clear(&err);
    bool syzygy = lc_tablebases_have_syzygy() && dir && *dir;
    if (syzygy) {
        CHECK_OK(lc_tablebases_open(dir, NULL, &tb, &err));
        generate(&gs, tb, generated_count());
        hand_worked(tb);
    } else {
        printf("no Syzygy (a build without libfathom-dev, or LCMON_SYZYGY_PATH unset): the "
               "settings without tables only, on the real games\n");
    }
    size_t positions = 0;
    for (size_t i = 0; i < gs.n; i++)
        positions += gs.g[i].n;
    printf("%zu real games and %zu generated (seed %d), %zu positions\n", real, gs.n - real, SEED,
           positions);
    const char *show = getenv("LCMON_REF_SHOW"); /* "all", or a game's index: shown, no checks */
    if (show && *show && tb) {
        for (size_t i = 0; i < gs.n; i++)
            if (!strcmp(show, "all") || (size_t)atoi(show) == i)
                show_game(&gs.g[i], tb);
        return 0;
    }
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
        if (!settings[i].tables || tb)
            compare_setting(&gs, &settings[i], tb);
    compare_damaged(&gs, tb);
    if (tb)
        compare_conversions(&gs, tb);
    for (size_t i = 0; i < gs.n; i++)
        free(gs.g[i].data);
    if (tb)
        lc_tablebases_close(tb);
    return check_finish();
}
