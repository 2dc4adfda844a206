/*
 * game_test: legal games built by hand for the rescorer's tests. A game is
 * a starting position (board_test.h's piece lists, the side to move, the
 * fifty-move counter) and the moves played from it in the usual notation
 * of the real board ("a5a6", "b2b7", "a7a8q"); the builder plays them with
 * lcmon's move generator, so every record is one legal move from the one
 * before, as lc0 writes games, and fills the fields upstream's Validate
 * looks at as lc0 would: a searched V6 record (visits 100) whose played_idx
 * and best_idx are the move played (the last record's: its first legal
 * move), the policy uniform over the legal moves, the counter of the
 * history, plies_left the plies to the game's end, the result from White's
 * view put for the side to move. V5 records hold the int8 result and no
 * search. A test then changes the fields it is about.
 */
#ifndef LC_TEST_GAME_TEST_H
#define LC_TEST_GAME_TEST_H

#include "board_test.h"
#include "check.h"

#include "format/lc0/rescore/rescore.h"

#include <math.h>

#define GT_MAX_PLIES 32

typedef struct gt_game {
    uint32_t n, version;
    size_t size;
    uint8_t rec[GT_MAX_PLIES * LC_V6_RECORD_SIZE];
    lc_position pos[GT_MAX_PLIES]; /* each record's, in its plane frame */
    bool black[GT_MAX_PLIES];      /* Black to move */
} gt_game;

/* The legal move of p written "e2e4" (promotion letter last) for the side
 * to move (black: the ranks of the plane frame mirrored). */
static inline lc_move gt_move(const lc_position *p, bool black, const char *uci, size_t len)
{
    int from = (uci[1] - '1') * 8 + (uci[0] - 'a'), to = (uci[3] - '1') * 8 + (uci[2] - 'a');
    if (black) {
        from ^= 56;
        to ^= 56;
    }
    int promo = len > 4 ? bt_piece((char)(uci[4] - 'a' + 'A')) : 0;
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(p, moves);
    for (unsigned i = 0; i < n; i++)
        if (moves[i].from == from && moves[i].to == to && moves[i].promotion == promo)
            return moves[i];
    fprintf(stderr, "game_test: %.*s is not a legal move\n", (int)len, uci);
    exit(2);
}

static inline uint8_t *gt_rec(gt_game *g, uint32_t i)
{
    return g->rec + (size_t)i * g->size;
}

/* Build the game; result is White's (-1, 0, 1). */
static inline void gt_build(gt_game *g, uint32_t version, const char *white, const char *black,
                            bool black_to_move, uint8_t rule50, const char *moves, int result)
{
    memset(g, 0, sizeof *g);
    g->version = version;
    g->size = version == 5 ? LC_V5_RECORD_SIZE : LC_V6_RECORD_SIZE;
    lc_position p = bt_position(white, black, black_to_move);
    p.rule50 = rule50;
    bool b = black_to_move;
    lc_move played[GT_MAX_PLIES];
    for (const char *s = moves;; g->n++) {
        g->pos[g->n] = p;
        g->black[g->n] = b;
        while (*s == ' ')
            s++;
        if (!*s)
            break;
        size_t len = strcspn(s, " ");
        played[g->n] = gt_move(&p, b, s, len);
        lc_position child;
        lc_position_play(&p, &played[g->n], &child);
        p = child;
        b = !b;
        s += len;
    }
    g->n++;
    for (uint32_t i = 0; i < g->n; i++) {
        uint8_t *rec = gt_rec(g, i);
        int r = g->black[i] ? -result : result;
        bt_record(rec, version, &g->pos[i], g->black[i], g->pos[i].rule50, r);
        if (version < 6)
            continue;
        lc_move first[LC_MAX_MOVES];
        uint16_t idx = i + 1 < g->n ? played[i].policy
                                    : (lc_position_legal_moves(&g->pos[i], first), first[0].policy);
        rec_put_u32(rec, offsetof(lc_v6_record, visits), 100);
        rec_put_u16(rec, offsetof(lc_v6_record, played_idx), idx);
        rec_put_u16(rec, offsetof(lc_v6_record, best_idx), idx);
        rec_put_f32(rec, offsetof(lc_v6_record, plies_left), (float)(g->n - i));
        rec_put_f32(rec, offsetof(lc_v6_record, orig_q), NAN);
        rec_put_f32(rec, offsetof(lc_v6_record, orig_d), NAN);
        rec_put_f32(rec, offsetof(lc_v6_record, orig_m), NAN);
    }
}

static inline float gt_f32(gt_game *g, uint32_t i, size_t off)
{
    float v;
    memcpy(&v, gt_rec(g, i) + off, 4);
    return v;
}

/* Record i's result: result_q (result_d checked against it) or V5's byte. */
static inline int gt_result(gt_game *g, uint32_t i)
{
    if (g->version == 5)
        return (int8_t)gt_rec(g, i)[offsetof(lc_v6_record, dummy)];
    float q = gt_f32(g, i, offsetof(lc_v6_record, result_q));
    float d = gt_f32(g, i, offsetof(lc_v6_record, result_d));
    if (d != (q == 0.0f ? 1.0f : 0.0f))
        fprintf(stderr, "game_test: record %u: result_q %g with result_d %g\n", i, q, d);
    return q == 0.0f && d == 1.0f    ? 0
           : q == 1.0f && d == 0.0f  ? 1
           : q == -1.0f && d == 0.0f ? -1
                                     : 9;
}

static inline float gt_plies_left(gt_game *g, uint32_t i)
{
    return gt_f32(g, i, offsetof(lc_v6_record, plies_left));
}

/* Probability of the move written "e2e4" at record i. */
static inline float gt_prob(gt_game *g, uint32_t i, const char *uci)
{
    lc_move m = gt_move(&g->pos[i], g->black[i], uci, strlen(uci));
    float v;
    memcpy(&v, gt_rec(g, i) + (g->version >= 5 ? 8 : 4) + 4 * (size_t)m.policy, 4);
    return v;
}

static inline void gt_set_prob(gt_game *g, uint32_t i, const char *uci, float v)
{
    lc_move m = gt_move(&g->pos[i], g->black[i], uci, strlen(uci));
    memcpy(gt_rec(g, i) + (g->version >= 5 ? 8 : 4) + 4 * (size_t)m.policy, &v, 4);
}

/* Every legal entry of record i to 0 (the test then puts its own). */
static inline void gt_zero_policy(gt_game *g, uint32_t i)
{
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&g->pos[i], moves);
    for (unsigned k = 0; k < n; k++)
        memcpy(gt_rec(g, i) + 8 + 4 * (size_t)moves[k].policy, &(float){0.0f}, 4);
}

/* Each record's results written from White's view (results[i] for record
 * i, -1, 0, 1). */
static inline void gt_set_results(gt_game *g, const int *white)
{
    for (uint32_t i = 0; i < g->n; i++) {
        int r = g->black[i] ? -white[i] : white[i];
        if (g->version == 5) {
            gt_rec(g, i)[offsetof(lc_v6_record, dummy)] = (uint8_t)(int8_t)r;
        } else {
            rec_put_f32(gt_rec(g, i), offsetof(lc_v6_record, result_q), (float)r);
            rec_put_f32(gt_rec(g, i), offsetof(lc_v6_record, result_d), r == 0 ? 1.0f : 0.0f);
        }
    }
}

/* The rescorer's defaults with the tables tb. */
static inline lc_rescore_config gt_config(const lc_tablebases *tb)
{
    lc_rescore_config cfg;
    lc_rescore_config_init(&cfg);
    cfg.tb = tb;
    return cfg;
}

/* Rescore the game; the reason printed when it is dropped. */
static inline int gt_rescore(gt_game *g, const lc_rescore_config *cfg, lc_rescore_counts *c)
{
    char why[256];
    int rc = lc_rescore_game(cfg, g->rec, g->size, g->n, g->version, c, why, sizeof why);
    if (rc != LC_RESCORE_KEPT)
        fprintf(stderr, "dropped: %s\n", why);
    return rc;
}

/* The tables of the folders (NULL: none of that kind), or NULL (a check
 * fails). */
static inline lc_tablebases *gt_open(const char *syzygy, const char *gaviota)
{
    lc_tablebases *tb = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_tablebases_open(syzygy, gaviota, &tb, &err));
    return tb;
}

#endif
