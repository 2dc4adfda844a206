/*
 * lc0_games: endgame-rich lc0 self-play games for the rescorer's tests and
 * benchmark, written as lc0 writes them (one gzip stream of V6 records per
 * game, input format 1). Not part of lcmon.
 *
 * A game has three parts:
 *
 *   1. an opening: the first 6 to 20 plies of a real lc0 game (the format 1
 *      and 2 games of a sample folder, tests/data: their boards read with
 *      lc_position_from_record, the moves between records found by playing
 *      every legal move and comparing boards);
 *   2. a random playout that prefers captures (and never, unless it has no
 *      other move, a move after which the chosen ending cannot be reached
 *      any more) until 3 or 4 pieces are left; a playout that ends on
 *      other material, in a finished game or after 300 plies is thrown away
 *      and the next is tried (each try its own random stream);
 *   3. the ending played on with the Syzygy tables
 *      (lc_tablebases_rate_moves): mostly a best move by distance, now and
 *      then (the game's mistake rate: 0, 6% or 15% of moves) a worse one, a
 *      drawing or losing move or a slower one; until mate, stalemate,
 *      insufficient material, the fifty-move rule, a threefold repetition
 *      or 500 plies. A quarter of the games stop early with a result the
 *      tables contradict instead (a resignation or an adjudication, as
 *      self-play writes them: invariance_info bit 5 on every record).
 *
 * Records: planes of 8 history steps from the side to move's view (steps
 * before the first position left empty, as lc0 does from the start
 * position), repetition planes, castling flags, side to move, rule50; a
 * policy over the legal moves (-1 elsewhere) summing to 1, best_idx its
 * largest share, played_idx the move the next record follows from; q, d
 * and m of root, best and played moves in range (in half the games, a
 * twentieth of the playout's moves look like blunders: played_q 0.07 to
 * 0.9 below best_q, for the deblunder); plies_left counting down to 1;
 * result_q / result_d the game's result from each side to move; orig_*
 * NaN in half the games, the root's values in the others.
 *
 * Deterministic: the same openings, tables, seed and index give the same
 * bytes. One thread at a time per call; calls share nothing.
 */
#ifndef LC_GEN_LC0_GAMES_H
#define LC_GEN_LC0_GAMES_H

#include "core/error.h"
#include "format/lc0/rescore/position.h"
#include "format/lc0/rescore/tablebase.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The endings: the strong side's pieces against the weak side's, kings
 * aside, either colour strong. */
enum { LC_GEN_KQK, LC_GEN_KRK, LC_GEN_KPK, LC_GEN_KRKP, LC_GEN_KBNK, LC_GEN_ENDINGS };

/* "KQvK", "KRvK", "KPvK", "KRvKP", "KBNvK"; "?" for anything else. */
const char *lc_gen_ending_name(int ending);

/* The ending a position's material is exactly (either side strong), or -1. */
int lc_gen_ending_of(const lc_position *p);

/* The start position in the plane frame (White to move). */
void lc_gen_start_position(lc_position *p);

/* Whether two positions of the same side to move have the same board,
 * castling rights and fifty-move counter. */
bool lc_gen_same_position(const lc_position *a, const lc_position *b);

/* ---- openings ---- */

#define LC_GEN_OPENING_MAX 20

typedef struct lc_gen_opening {
    lc_move moves[LC_GEN_OPENING_MAX];
    unsigned n;       /* 6..LC_GEN_OPENING_MAX */
    char source[512]; /* the game file it was read from */
} lc_gen_opening;

typedef struct lc_gen_openings {
    lc_gen_opening *games;
    size_t n;
} lc_gen_openings;

/* The openings of every game_*.gz under dir (sorted by name) that holds V6
 * records of input format 1 or 2 starting from the start position: up to
 * LC_GEN_OPENING_MAX moves, never the game's last two; games with fewer
 * than 6 are left out. LC_EEMPTY when none is found. */
int lc_gen_openings_load(const char *dir, lc_gen_openings *out, lc_error *err);
void lc_gen_openings_free(lc_gen_openings *o);

/* ---- games ---- */

/* How a game ended. */
enum {
    LC_GEN_END_MATE,
    LC_GEN_END_STALEMATE,
    LC_GEN_END_MATERIAL, /* insufficient material */
    LC_GEN_END_FIFTY,
    LC_GEN_END_REPETITION,
    LC_GEN_END_CAP,    /* 500 plies */
    LC_GEN_END_RESIGN, /* stopped with a result the tables contradict */
    LC_GEN_ENDS
};
const char *lc_gen_end_name(int end);

typedef struct lc_gen_info {
    int ending;          /* the ending the playout reached */
    unsigned tries;      /* playouts made until one did */
    size_t opening_game; /* the index in the openings of the one played */
    unsigned opening;    /* records of the opening */
    unsigned playout;    /* records of the random playout */
    unsigned tablebase;  /* records of the ending (the first has 3 or 4 pieces) */
    int end;             /* LC_GEN_END_* */
    int result_white;    /* written: 1 White won, 0 a draw, -1 Black won */
    int tb_last;         /* the result where the game ended, from its side to move's view:
                            the rules' at mate (-1), stalemate, insufficient material,
                            the fifty-move rule and repetition (0); the tables' (fifty-move
                            counter counted) at the cap and at a resignation (the last
                            record's position: the game stops before its move) */
    bool wrong_result;   /* the written result is not tb_last (resignations; the cap when
                            the tables see a win) */
    unsigned mistakes;   /* moves of the ending that were not best by distance */
    unsigned blunders;   /* records whose played_q is 0.07 or more below best_q */
    bool adjudicated;    /* invariance_info bit 5 set */
    int final_ending;    /* lc_gen_ending_of the last record's position (-1: none) */
} lc_gen_info;

typedef struct lc_gen_game {
    uint8_t *records; /* n * LC_V6_RECORD_SIZE bytes, malloc'd */
    size_t n;
    lc_gen_info info;
} lc_gen_game;

/* The most playouts lc_gen_game_make tries. */
#define LC_GEN_MAX_TRIES 20000

/*
 * Game number `index` of a set made with `seed`, reaching `ending`
 * (LC_GEN_KQK..LC_GEN_KBNK), played on with tb (Syzygy tables of 3 and 4
 * pieces at least). LC_EEMPTY (message naming the ending) when no playout
 * of LC_GEN_MAX_TRIES reached it; LC_ECONFIG when tb rates no ending
 * position (no Syzygy tables).
 */
int lc_gen_game_make(const lc_gen_openings *o, const lc_tablebases *tb, uint64_t seed,
                     uint64_t index, int ending, lc_gen_game *out, lc_error *err);
void lc_gen_game_free(lc_gen_game *g);

/* Write n records as lc0 does: one gzip member, zlib's default level, no
 * name or time in the header. A negated errno naming the path. */
int lc_gen_write_gz(const char *path, const uint8_t *records, size_t n, lc_error *err);

#endif
