/*
 * rescore: what the chunk_rescorer stage does to one game (chunk) of lc0
 * records, in place, before it is unpacked:
 *
 *   1. tablebase results: in the tail of the game the tablebases may
 *      answer (few enough pieces, no castling rights), every position
 *      whose fifty-move counter is 0 is probed; each answer goes to that
 *      position and to every position before it back to the previous
 *      probed one (the first probe's back to the game's start), the sign
 *      alternating with the side to move (result_q, result_d, and the int8
 *      result of pre-V6 records); positions after the last probe keep the
 *      game's result;
 *   2. policy sharpening: in every tail position whose moves the tables
 *      rate, moves that do worse than the best tablebase outcome get 0, the
 *      others max(0, p + dist_offset (+ dtz_boost / B for the B moves that
 *      are best by distance)) ^ (1 / dist_temp), renormalised; illegal
 *      moves stay -1. As upstream, dist_temp and dist_offset (when not 1
 *      and 0) shape the policy of every other position the same way;
 *   3. deblunder (format/lc0/deblunder.h): on the positions before the
 *      first one a table answered (the whole game when none did), walking
 *      back from the end, a position whose played move lost
 *      more than deblunder_threshold of q against the best move
 *      (best_q - played_q) is a blunder; from it backwards the positions
 *      learn the best line's value instead of the game's result (blended by
 *      deblunder_width).
 *
 * docs/pipelines.md gives the exact rules with a worked example. The
 * tablebases (format/lc0/tablebase.h) are opened once per process; every
 * function here is pure given them and may be called from any thread.
 */
#ifndef LC_FORMAT_RESCORE_H
#define LC_FORMAT_RESCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lc_tablebases;

typedef struct lc_rescore_config {
    const struct lc_tablebases *tb; /* NULL: no tablebase rescoring or sharpening */
    double dist_temp;               /* > 0; 1 leaves the shares as they are */
    double dist_offset;             /* added to every kept share before the temperature */
    double dtz_boost;               /* added to the shares of the moves best by distance */
    double deblunder_threshold;     /* NaN: no deblunder */
    double deblunder_width;         /* >= 0; 0: a sharp threshold */
    /*
     * Issue 33: upstream's rules are the default (every switch below
     * false); each switch turns on one of lcmon's own choices, documented
     * in docs/pipelines.md "chunk_rescorer" with its reason and effect.
     */
    bool zero_losing_moves; /* tablebase positions: moves the tables prove worse get 0
                               (upstream never zeroes a move) */
    bool gaviota_results;   /* Gaviota's WDL gives results where Syzygy has no table
                               (upstream uses Gaviota for distance to mate only) */
    bool deblunder_lcmon;   /* deblunder's region, starting target and visits check as
                               lcmon chose them (before the first answered position; the
                               region's own last values; V6 visits of each position) */
    bool keep_invalid;      /* games upstream's Validate refuses are passed on as read,
                               not dropped */
    bool st_double;         /* short-term targets summed in double (upstream: float) */
} lc_rescore_config;

/* What lc_rescore_game decided for the game as a whole. */
enum {
    LC_RESCORE_KEPT = 0,   /* rescored (or left alone) in place */
    LC_RESCORE_DROPPED = 1 /* refused as upstream's Validate refuses it: drop the chunk */
};

/* Every decision, counted (added to, never reset, by lc_rescore_game). */
typedef struct lc_rescore_counts {
    uint64_t games;              /* games looked at */
    uint64_t positions;          /* positions in them */
    uint64_t probed;             /* positions asked of a tablebase */
    uint64_t hits;               /* of those, answered */
    uint64_t games_rescored;     /* games whose result a tablebase changed */
    uint64_t results_changed;    /* positions whose result_q/result_d a tablebase changed */
    uint64_t policies_sharpened; /* positions whose policy was rewritten */
    uint64_t blunders;           /* blunders found */
    uint64_t deblundered;        /* positions whose result the deblunder changed */
    uint64_t dropped;            /* games refused (LC_RESCORE_DROPPED) */
    uint64_t second_pass;        /* positions the second WDL pass (counter != 0) changed */
    uint64_t dtz_proofs;         /* of those, decided by a DTZ probe */
    uint64_t plies_left_changed; /* positions whose plies_left Gaviota's DTM or Syzygy's DTZ set */
    uint64_t policies_boosted;   /* positions whose policy dtz_boost raised */
} lc_rescore_counts;

/* The defaults: no tablebases, dist_temp 1, offsets 0, no deblunder. */
void lc_rescore_config_init(lc_rescore_config *cfg);

/*
 * Rescore the n records (record_size apart, version 3..7) of one game, in
 * ply order, in place. LC_RESCORE_KEPT, or LC_RESCORE_DROPPED with the
 * reason in why (why_size bytes; "" when why is NULL) when the game is one
 * upstream's Validate refuses and cfg->keep_invalid is false: the caller
 * drops the chunk and counts it. Records that cannot be read as a position
 * (a board the planes do not describe) end the tablebase part for that
 * game.
 */
int lc_rescore_game(const lc_rescore_config *cfg, uint8_t *records, size_t record_size, uint32_t n,
                    uint32_t version, lc_rescore_counts *counts, char *why, size_t why_size);

#endif
