/*
 * rescore: what the chunk_rescorer stage does to one game (chunk) of lc0
 * records, in place, before it is unpacked. By default exactly what
 * upstream's rescorer (lc0's RescoreTrainingData, which lczero-training's
 * chunk_rescorer calls) does, bit for bit:
 *
 *   1. Validate: every field in its range, the probabilities summing to
 *      0.99..1.01, every record one legal move from the one before
 *      (format/lc0/rescore/game.h) with played_idx that move: a game that fails is
 *      dropped (LC_RESCORE_DROPPED, with the reason);
 *   2. Syzygy's first pass: the positions after a zeroing move (counter 0)
 *      are probed, each answer going back to the previous one (the first
 *      to record 0, which is never probed itself);
 *   3. the second pass: positions whose counter is not 0, a disagreement
 *      with the game made a draw unless DTZ proves the tables' result, and
 *      a win DTZ says the fifty-move rule spoils made a draw;
 *   4. the policy: dist_temp, dist_offset and dtz_boost (the moves Syzygy's
 *      root probe finds best, the quickest mates among them with Gaviota),
 *      in float; never a move zeroed; nothing at the defaults;
 *   5-7. plies_left: the plies to the game's end where it is 0, then
 *      Gaviota's distance to mate, or (without Gaviota) Syzygy's DTZ of
 *      3-piece pawnless positions;
 *   8. the deblunder (deblunder.h, lc_deblunder_upstream), when a threshold
 *      is given (the caller gives one only with a width, as upstream).
 *
 * Each switch of lc_rescore_config turns on one of lcmon's own choices
 * instead. docs/pipelines.md "chunk_rescorer: the rules for one game" has
 * the rules with worked examples, docs/upstream.md what lcmon does where
 * upstream has a defect. The tablebases (format/lc0/rescore/tablebase.h) are
 * opened once per process; every function here is pure given them and may
 * be called from any thread.
 */
#ifndef LC_FORMAT_LC0_RESCORE_RESCORE_H
#define LC_FORMAT_LC0_RESCORE_RESCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lc_tablebases;

typedef struct lc_rescore_config {
    const struct lc_tablebases *tb; /* NULL: no tablebases (max_cardinality 0) */
    /* The policy's settings, used as floats (upstream holds them so). */
    double dist_temp;           /* > 0; 1 leaves the shares as they are */
    double dist_offset;         /* added to every legal share before the temperature */
    double dtz_boost;           /* shared by the moves the tables find best */
    double deblunder_threshold; /* NaN: no deblunder (give one only with a width, as upstream) */
    double deblunder_width;     /* 0: a sharp threshold */
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
                               lcmon chose them (before the first position a table
                               answered; the blunder's own targets; each record's
                               visits) */
    bool keep_invalid;      /* games upstream's Validate refuses are passed on as read,
                               not dropped */
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
    uint64_t games_changed;      /* games kept whose records it changed, any bit of them (with a
                                    deblunder: every game kept; 0 for a game means its records
                                    are as they came) */
} lc_rescore_counts;

/* The defaults: no tablebases, dist_temp 1, offsets 0, no deblunder. */
void lc_rescore_config_init(lc_rescore_config *cfg);

/*
 * Rescore the n records (record_size apart, version 3..7) of one game, in
 * ply order, in place. LC_RESCORE_KEPT, or LC_RESCORE_DROPPED when the
 * game is one upstream's rescorer refuses (Validate, or a result it reads
 * that is not -1, 0 or 1) and cfg->keep_invalid is false: the caller drops
 * the chunk (counted in counts->dropped). The refusal's reason, naming the
 * record and the field, goes to why (why_size bytes; "" when the game is
 * taken; why may be NULL); with keep_invalid the game is kept, rescored as
 * far as it can be read (a history that breaks is read record by record,
 * without repetitions), and why still says what upstream would refuse.
 * A game dropped for a result may have been partly changed.
 *
 * Versions 3 to 5 (no search): read as lc0's reader upgrades them (their
 * missing fields as the upgrade's: visits 0, so no played_idx check and no
 * deblunder); their int8 result takes the results; V5 has plies_left, V3
 * and V4 have none, so steps 5 to 7 leave them.
 */
int lc_rescore_game(const lc_rescore_config *cfg, uint8_t *records, size_t record_size, uint32_t n,
                    uint32_t version, lc_rescore_counts *counts, char *why, size_t why_size);

/*
 * The same on a game whose records Validate took before: the same bytes,
 * by an earlier call with the same cfg (the chunk_rescorer remembers it,
 * stages/chunk_rescorer.c). Validate's checks of the fields and moves are
 * not made again (the policy's 1858 floats a record are not read); the
 * game is read as a history as ever, and everything after Validate is as
 * lc_rescore_game does it. Records that are not a history after all are
 * validated whole, as lc_rescore_game would.
 */
int lc_rescore_game_validated(const lc_rescore_config *cfg, uint8_t *records, size_t record_size,
                              uint32_t n, uint32_t version, lc_rescore_counts *counts, char *why,
                              size_t why_size);

#endif
