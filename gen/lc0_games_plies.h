/*
 * lc0_games_plies: the positions of a game being generated (lc0_games.c
 * plays them, lc0_games_records.c writes them out as V6 records).
 */
#ifndef LC_GEN_LC0_GAMES_PLIES_H
#define LC_GEN_LC0_GAMES_PLIES_H

#include "format/lc0/rescore/position.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One position a move was played from: one record. */
typedef struct gen_ply {
    lc_position pos; /* plane frame of the side to move */
    bool black;      /* Black to move */
    uint8_t reps;    /* earlier occurrences, as lc0 counts them (0 none) */
    uint16_t n;      /* legal moves */
    uint16_t policy[LC_MAX_MOVES];
    float prob[LC_MAX_MOVES]; /* their shares, summing to 1 */
    uint16_t played, best;    /* policy indices */
    float root_q, root_d, best_q, best_d, played_q, played_d;
    uint32_t visits;
    float kld;
    bool proven; /* invariance_info bit 3: best_q is a proven result */
} gen_ply;

typedef struct gen_plies {
    gen_ply *p;
    size_t n, cap;
} gen_plies;

/* Whether a position's material can still come down to the ending's (its
 * pieces are captured; a pawn may promote to any piece). */
bool gen_reachable(const lc_position *p, int ending);

/*
 * Write the n plies as records at out (n * LC_V6_RECORD_SIZE bytes), the
 * game's result result_white (1, 0, -1) from each side to move's view;
 * adjudicated sets invariance_info bit 5 on every record; orig_nan writes
 * NaN for orig_q, orig_d and orig_m (else the root's values).
 */
void gen_plies_write(const gen_plies *g, int result_white, bool adjudicated, bool orig_nan,
                     uint8_t *out);

#endif
