/*
 * lc0_games_play: one generated game (lc0_games.h): an opening, a random
 * playout down to the chosen ending, then the ending played with the
 * Syzygy tables; each position's policy and values made up around the
 * move played, as lc0_games.h describes.
 */
#include "lc0_games.h"
#include "lc0_games_plies.h"

#include "core/rng.h"
#include "format/lc0/record.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PLAYOUT_MAX 300 /* plies of random playout before a try is given up */
#define GAME_MAX 500    /* plies of a whole game: the cap */

typedef struct gen_state {
    const lc_tablebases *tb;
    lc_rng rng;
    int ending;
    double mistake_rate; /* of the ending's moves */
    bool resign;         /* stop the ending early with a result the tables contradict */
    bool blunders;       /* mark some playout moves as blunders */
    bool orig_nan;
    double eval; /* the playout's made-up evaluation, side to move's view */
    gen_plies plies;
    lc_position pos; /* the position to move from */
    bool black;
    lc_gen_info info;
} gen_state;

const char *lc_gen_end_name(int end)
{
    static const char *const names[LC_GEN_ENDS] = {
        "mate", "stalemate",  "insufficient material", "fifty-move rule", "threefold repetition",
        "cap",  "resignation"};
    return end >= 0 && end < LC_GEN_ENDS ? names[end] : "?";
}

static double uniform(gen_state *s)
{
    return lc_rng_double(&s->rng);
}

static float clampf(double v, double lo, double hi)
{
    return (float)(v < lo ? lo : v > hi ? hi : v);
}

/* A draw share that keeps win and loss shares >= 0 for q. */
static float draw_for(gen_state *s, float q)
{
    return clampf((1.0 - fabs(q)) * (0.2 + 0.6 * uniform(s)), 0.0, 1.0);
}

/* ---- the rules ---- */

static bool same_board(const lc_position *a, const lc_position *b)
{
    return memcmp(a->bb, b->bb, sizeof a->bb) == 0 &&
           memcmp(a->castle, b->castle, sizeof a->castle) == 0;
}

/* lc0's count: the same board (castling rights included) an even number of
 * plies back, not looking past a zeroing move; 1 + that one's count. */
static uint8_t repetitions(const gen_plies *g, const lc_position *p)
{
    if (p->rule50 < 4)
        return 0;
    for (long j = (long)g->n - 2; j >= 0; j -= 2) {
        const gen_ply *q = &g->p[j];
        if (same_board(&q->pos, p))
            return (uint8_t)(1 + q->reps);
        if (q->pos.rule50 < 2)
            return 0;
    }
    return 0;
}

static bool insufficient(const lc_position *p)
{
    const uint64_t *b = p->bb;
    if (b[LC_PAWN] | b[LC_ROOK] | b[LC_QUEEN] | b[6 + LC_PAWN] | b[6 + LC_ROOK] | b[6 + LC_QUEEN])
        return false;
    uint64_t knights = b[LC_KNIGHT] | b[6 + LC_KNIGHT], bishops = b[LC_BISHOP] | b[6 + LC_BISHOP];
    if (__builtin_popcountll(knights | bishops) <= 1)
        return true;
    const uint64_t dark = 0xAA55AA55AA55AA55ull;
    return !knights && ((bishops & dark) == 0 || (bishops & ~dark) == 0);
}

/* LC_GEN_END_* when the game is over at p (n legal moves), else -1. */
static int game_over(const lc_position *p, unsigned n, uint8_t reps)
{
    if (n == 0)
        return lc_position_in_check(p) ? LC_GEN_END_MATE : LC_GEN_END_STALEMATE;
    if (insufficient(p))
        return LC_GEN_END_MATERIAL;
    if (p->rule50 >= 100)
        return LC_GEN_END_FIFTY;
    if (reps >= 2)
        return LC_GEN_END_REPETITION;
    return -1;
}

/* ---- plies ---- */

/* Record the current position with its moves, shares proportional to w
 * (renormalised), best its largest; play move `played`. */
static gen_ply *push(gen_state *s, const lc_move *moves, unsigned n, const double *w,
                     unsigned played, uint8_t reps)
{
    gen_plies *g = &s->plies;
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 256;
        g->p = lc_xrealloc(g->p, g->cap * sizeof *g->p);
    }
    gen_ply *p = &g->p[g->n++];
    memset(p, 0, sizeof *p);
    p->pos = s->pos;
    p->black = s->black;
    p->reps = reps;
    p->n = (uint16_t)n;
    double sum = 0;
    unsigned best = played;
    for (unsigned i = 0; i < n; i++) {
        sum += w[i];
        if (w[i] > w[best])
            best = i;
    }
    for (unsigned i = 0; i < n; i++) {
        p->policy[i] = moves[i].policy;
        p->prob[i] = (float)(w[i] / sum);
    }
    p->played = moves[played].policy;
    p->best = moves[best].policy;
    p->visits = 100 + (uint32_t)lc_rng_below(&s->rng, 700);
    p->kld = clampf(0.05 + 1.5 * uniform(s), 0.0, 2.0);
    lc_position child;
    lc_position_play(&s->pos, &moves[played], &child);
    s->pos = child;
    s->black = !s->black;
    return p;
}

/* root_q between best_q (share `best`) and played_q; the draw shares;
 * the blunder count. */
static void finish_values(gen_state *s, gen_ply *p, double best)
{
    p->root_q = clampf(best * p->best_q + (1 - best) * p->played_q, -1, 1);
    p->best_d = draw_for(s, p->best_q);
    p->played_d = draw_for(s, p->played_q);
    p->root_d = draw_for(s, p->root_q);
    if (p->best_q - p->played_q >= 0.07f)
        s->info.blunders++;
}

/* The values of a position of the opening or the playout: the made-up
 * evaluation, the played move a little worse than the best unless it is
 * the best; in a game with blunders, now and then much worse. */
static void playout_values(gen_state *s, gen_ply *p, bool may_blunder)
{
    s->eval = clampf(-s->eval + 0.1 * (2 * uniform(s) - 1), -0.6, 0.6);
    double best_q = s->eval + 0.02 * (2 * uniform(s) - 1), loss = 0;
    if (p->played != p->best)
        loss = 0.04 * uniform(s);
    if (may_blunder && s->blunders && p->n >= 2 && uniform(s) < 0.05) {
        if (p->played == p->best) /* another move was the best one */
            p->best = p->policy[p->policy[0] == p->played ? 1 : 0];
        loss = 0.07 + 0.83 * uniform(s);
        best_q = fmin(1.0, best_q + loss / 2);
    }
    p->best_q = clampf(best_q, -1, 1);
    p->played_q = clampf(best_q - loss, -1, 1);
    finish_values(s, p, 0.8);
}

/* ---- the opening and the playout ---- */

static void play_opening(gen_state *s, const lc_gen_opening *op, unsigned plies)
{
    lc_move moves[LC_MAX_MOVES];
    double w[LC_MAX_MOVES];
    for (unsigned k = 0; k < plies; k++) {
        unsigned n = lc_position_legal_moves(&s->pos, moves), played = 0;
        for (unsigned i = 0; i < n; i++) {
            w[i] = 0.2 + uniform(s);
            if (moves[i].from == op->moves[k].from && moves[i].to == op->moves[k].to &&
                moves[i].promotion == op->moves[k].promotion)
                played = i;
        }
        w[played] += 1.0; /* lc0 mostly plays what it searched most */
        gen_ply *p = push(s, moves, n, w, played, repetitions(&s->plies, &s->pos));
        playout_values(s, p, false);
        s->info.opening++;
    }
}

/* The playout's weights: captures and promotions first, moves after which
 * the ending cannot be reached last. */
static void playout_weights(gen_state *s, const lc_move *moves, unsigned n, double *w)
{
    for (unsigned i = 0; i < n; i++) {
        lc_position child;
        lc_position_play(&s->pos, &moves[i], &child);
        if (!gen_reachable(&child, s->ending))
            w[i] = 0.02;
        else if (moves[i].flags & LC_MOVE_CAPTURE)
            w[i] = 25;
        else if (moves[i].promotion)
            w[i] = 6;
        else
            w[i] = 1;
    }
}

static unsigned pick(gen_state *s, const double *w, unsigned n)
{
    double sum = 0;
    for (unsigned i = 0; i < n; i++)
        sum += w[i];
    double x = uniform(s) * sum;
    for (unsigned i = 0; i < n; i++) {
        if (x < w[i])
            return i;
        x -= w[i];
    }
    return n - 1;
}

/* Random play until the ending's material, with no castling right left:
 * true. False when the game ends first, the material becomes another, or
 * PLAYOUT_MAX plies pass. */
static bool playout(gen_state *s)
{
    lc_move moves[LC_MAX_MOVES];
    double w[LC_MAX_MOVES], shares[LC_MAX_MOVES];
    for (unsigned k = 0; k < PLAYOUT_MAX; k++) {
        unsigned n = lc_position_legal_moves(&s->pos, moves);
        uint8_t reps = repetitions(&s->plies, &s->pos);
        if (game_over(&s->pos, n, reps) >= 0)
            return false;
        if (s->pos.pieces <= 4) {
            if (lc_gen_ending_of(&s->pos) == s->ending && !s->pos.castling)
                return true;
            if (s->pos.pieces == 3 || !gen_reachable(&s->pos, s->ending))
                return false;
        }
        playout_weights(s, moves, n, w);
        unsigned played = pick(s, w, n);
        for (unsigned i = 0; i < n; i++)
            shares[i] = w[i] * (0.5 + uniform(s));
        gen_ply *p = push(s, moves, n, shares, played, reps);
        playout_values(s, p, true);
        s->info.playout++;
    }
    return false;
}

/* ---- the ending ---- */

/* The move the ending plays: a best one, or now and then a mistake (a worse
 * result when there is one, half the time, else a slower move). */
static unsigned ending_move(gen_state *s, const signed char *wdl, const bool *best, unsigned n,
                            int top, bool *mistake)
{
    unsigned good[LC_MAX_MOVES] = {0}, slow[LC_MAX_MOVES] = {0}, worse[LC_MAX_MOVES] = {0};
    unsigned ng = 0, ns = 0, nw = 0;
    for (unsigned i = 0; i < n; i++) {
        if (wdl[i] < top)
            worse[nw++] = i;
        else if (best[i])
            good[ng++] = i;
        else
            slow[ns++] = i;
    }
    *mistake = false;
    if ((ns || nw) && uniform(s) < s->mistake_rate) {
        *mistake = true;
        if (nw && (!ns || uniform(s) < 0.5))
            return worse[lc_rng_below(&s->rng, nw)];
        return slow[lc_rng_below(&s->rng, ns)];
    }
    if (ng)
        return good[lc_rng_below(&s->rng, ng)];
    if (ns) /* no distances: any move of the best result */
        return slow[lc_rng_below(&s->rng, ns)];
    return worse[lc_rng_below(&s->rng, nw)]; /* n > 0: not reached */
}

/* The values of a position of the ending: each move's value its
 * tablebase result, a little blurred. */
static void ending_values(gen_state *s, gen_ply *p, const lc_move *moves, const signed char *wdl)
{
    float q[LC_MAX_MOVES];
    for (unsigned i = 0; i < p->n; i++)
        q[i] = clampf(0.9 * wdl[i] + 0.05 * (2 * uniform(s) - 1), -1, 1);
    for (unsigned i = 0; i < p->n; i++) {
        if (moves[i].policy == p->best)
            p->best_q = q[i];
        if (moves[i].policy == p->played)
            p->played_q = q[i];
    }
    finish_values(s, p, 0.9);
}

/* One position of the ending: 0 played, 1 the game is over (info.end set),
 * -1 the tables do not rate it. */
static int ending_ply(gen_state *s, unsigned resign_at)
{
    lc_move moves[LC_MAX_MOVES];
    signed char wdl[LC_MAX_MOVES];
    bool best[LC_MAX_MOVES], by_distance, mistake;
    double w[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&s->pos, moves);
    uint8_t reps = repetitions(&s->plies, &s->pos);
    int end = game_over(&s->pos, n, reps);
    int top = LC_TB_UNKNOWN;
    if (end < 0)
        top = lc_tablebases_rate_moves(s->tb, &s->pos, moves, n, true, wdl, best, &by_distance);
    if (end < 0 && s->plies.n >= GAME_MAX)
        end = LC_GEN_END_CAP;
    if (end >= 0) { /* the rules' result, or the tables' at the cap */
        s->info.end = end;
        s->info.tb_last = end == LC_GEN_END_MATE                          ? LC_TB_LOSS
                          : end == LC_GEN_END_CAP && top != LC_TB_UNKNOWN ? top
                                                                          : LC_TB_DRAW;
        return 1;
    }
    if (top == LC_TB_UNKNOWN)
        return -1;
    unsigned played = ending_move(s, wdl, best, n, top, &mistake);
    for (unsigned i = 0; i < n; i++)
        w[i] = (wdl[i] < top ? 0.3 : best[i] ? 6 : 2) * (0.5 + uniform(s));
    gen_ply *p = push(s, moves, n, w, played, reps);
    ending_values(s, p, moves, wdl);
    s->info.mistakes += mistake;
    s->info.tablebase++;
    if (s->info.tablebase == resign_at) { /* stopped here, before the move */
        s->info.end = LC_GEN_END_RESIGN;
        s->info.tb_last = top;
        return 1;
    }
    return 0;
}

/* Whether the game ended at its last record (a resignation: no move made)
 * rather than at the position after it. */
static bool ends_at_last_record(const gen_state *s)
{
    return s->info.end == LC_GEN_END_RESIGN;
}

/* The result from the view of the side to move where the game ended. */
static int result_there(gen_state *s)
{
    if (s->info.end == LC_GEN_END_MATE)
        return -1;
    if (s->info.end != LC_GEN_END_RESIGN)
        return 0;
    /* A resignation or adjudication the tables contradict. */
    if (s->info.tb_last == LC_TB_DRAW)
        return uniform(s) < 0.5 ? 1 : -1;
    return uniform(s) < 0.6 ? 0 : -s->info.tb_last;
}

/* ---- a game ---- */

/* One try: 1 the game is made, 0 the playout missed the ending, -1 the
 * tables rate nothing. */
static int try_game(gen_state *s, const lc_gen_openings *o)
{
    s->plies.n = 0;
    s->eval = 0;
    memset(&s->info, 0, sizeof s->info);
    s->info.ending = s->ending;
    static const double rates[3] = {0, 0.06, 0.15};
    s->mistake_rate = rates[lc_rng_below(&s->rng, 3)];
    s->resign = uniform(s) < 0.25;
    s->blunders = uniform(s) < 0.5;
    s->orig_nan = uniform(s) < 0.5;
    s->info.opening_game = (size_t)lc_rng_below(&s->rng, o->n);
    const lc_gen_opening *op = &o->games[s->info.opening_game];
    unsigned plies = 6 + (unsigned)lc_rng_below(&s->rng, LC_GEN_OPENING_MAX - 5);
    lc_gen_start_position(&s->pos);
    s->black = false;
    play_opening(s, op, plies < op->n ? plies : op->n);
    if (!playout(s))
        return 0;
    unsigned resign_at = s->resign ? 2 + (unsigned)lc_rng_below(&s->rng, 30) : 0;
    int rc;
    while ((rc = ending_ply(s, resign_at)) == 0)
        ;
    if (rc < 0)
        return s->info.tablebase ? 0 : -1;
    if (s->info.tablebase == 0)
        return 0; /* the ending's first position is already over */
    const gen_ply *last = &s->plies.p[s->plies.n - 1];
    bool black_there = ends_at_last_record(s) ? last->black : s->black;
    int there = result_there(s);
    s->info.result_white = black_there ? -there : there;
    s->info.wrong_result = there != s->info.tb_last;
    s->info.adjudicated = s->info.end == LC_GEN_END_RESIGN;
    s->info.final_ending = lc_gen_ending_of(&last->pos);
    return 1;
}

/* The last move of a mate is a proven win: lc0 writes best_q 1 and sets
 * invariance_info bit 3. */
static void mark_mate(gen_state *s)
{
    gen_ply *last = &s->plies.p[s->plies.n - 1];
    if (last->best_q - last->played_q >= 0.07f)
        s->info.blunders--;
    last->best = last->played;
    last->best_q = last->played_q = last->root_q = 1.0f;
    last->best_d = last->played_d = last->root_d = 0.0f;
    last->proven = true;
}

int lc_gen_game_make(const lc_gen_openings *o, const lc_tablebases *tb, uint64_t seed,
                     uint64_t index, int ending, lc_gen_game *out, lc_error *err)
{
    memset(out, 0, sizeof *out);
    if (ending < 0 || ending >= LC_GEN_ENDINGS || !o || o->n == 0)
        return lc_error_set(err, LC_ECONFIG, "lc_gen_game_make: no ending %d or no openings",
                            ending);
    gen_state s;
    memset(&s, 0, sizeof s);
    s.tb = tb;
    s.ending = ending;
    int rc = 0;
    unsigned t;
    for (t = 0; t < LC_GEN_MAX_TRIES && rc == 0; t++) {
        lc_rng_seed(&s.rng, seed, (index << 20) | t);
        rc = try_game(&s, o);
    }
    if (rc == 1) {
        if (s.info.end == LC_GEN_END_MATE)
            mark_mate(&s);
        s.info.tries = t;
        out->n = s.plies.n;
        out->records = lc_xmalloc(out->n * LC_V6_RECORD_SIZE);
        gen_plies_write(&s.plies, s.info.result_white, s.info.adjudicated, s.orig_nan,
                        out->records);
        out->info = s.info;
    }
    free(s.plies.p);
    if (rc < 0)
        return lc_error_set(err, LC_ECONFIG,
                            "the tablebases rate no %s position: open Syzygy tables of 3 and 4 "
                            "pieces (tests/syzygy)",
                            lc_gen_ending_name(ending));
    if (rc == 0)
        return lc_error_set(err, LC_EEMPTY, "game %llu: no playout of %d reached %s",
                            (unsigned long long)index, LC_GEN_MAX_TRIES,
                            lc_gen_ending_name(ending));
    return 0;
}

void lc_gen_game_free(lc_gen_game *g)
{
    free(g->records);
    memset(g, 0, sizeof *g);
}
