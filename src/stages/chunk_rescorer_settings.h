/*
 * chunk_rescorer_settings: the chunk_rescorer's settings (its block's
 * table, the rules that join them, the key its patches carry) and what
 * they do to one game's records: rescored (format/lc0/rescore/rescore.h), then
 * converted to another input format, then given their short-term targets.
 * Shared by the stage (stages/chunk_rescorer.c, for the pool's records and
 * the patches of stored games) and `lcmon chunks rescore` (a file's game),
 * so that both give the same records for the same game and settings.
 */
#ifndef LC_STAGES_CHUNK_RESCORER_SETTINGS_H
#define LC_STAGES_CHUNK_RESCORER_SETTINGS_H

#include "core/error.h"
#include "core/problem.h"
#include "core/settings.h"
#include "format/lc0/rescore/rescore.h"
#include "stages/short_term.h"

#include <stdbool.h>
#include <stdint.h>

enum { LC_DEBLUNDER_UPSTREAM = 0, LC_DEBLUNDER_LCMON = 1 };
enum { LC_INVALID_DROP = 0, LC_INVALID_KEEP = 1 };

typedef struct lc_rescorer_config {
    unsigned threads;
    char *syzygy_paths, *gaviota_paths;
    double dist_temp, dist_offset, dtz_boost;
    double deblunder_threshold, deblunder_width;
    uint32_t new_input_format; /* 0: keep */
    int st_targets;
    double st_theta;
    int st_math;
    bool zero_losing_moves, gaviota_results;
    bool remember_games; /* what a game's use found, kept for its next (not in the key) */
    int deblunder_rules; /* LC_DEBLUNDER_* */
    int invalid_games;   /* LC_INVALID_* */
    bool threshold_given, width_given, st_theta_given, st_math_given;
} lc_rescorer_config;

/* The block's table (every key of `chunk_rescorer:`), ended by a row
 * with a NULL key: {lc_rescorer_rows, sizeof(lc_rescorer_config)}. */
extern const lc_setting lc_rescorer_rows[];

/* The rules that join settings (deblunder_width only with a threshold,
 * upstream's deblunder needing both, st_theta only with compute, ...) and
 * the tables' folders expanded: 0, or LC_ECONFIG with every problem added
 * to ps, each about its key and saying what to do. */
int lc_rescorer_config_check(void *config, lc_problems *ps);
/* The folders of both tables exist and hold tables (counted by name, not
 * opened); problems as above. */
int lc_rescorer_preflight(const void *config, lc_problems *ps);

/* The key of what the settings do to a game (rescore_patch.h). */
uint64_t lc_rescorer_key(const lc_rescorer_config *c);

/* The settings as lc_rescore_game takes them, with the tables tb (NULL:
 * none). The deblunder threshold is NaN when the deblunder is off. */
void lc_rescorer_rescore_config(const lc_rescorer_config *c, const struct lc_tablebases *tb,
                                lc_rescore_config *rc);
/* Whether lc_rescore_game may change or drop a game with rc: validation
 * (invalid_games: drop), tables, deblunder, or policy tempering. */
bool lc_rescorer_has_work(const lc_rescore_config *rc);
/* Whether every position's policy is tempered (dist_temp, dist_offset or
 * dtz_boost: upstream's policy step runs on every position). */
bool lc_rescorer_tempers(const lc_rescore_config *rc);

/* What the conversion of a game makes of it. */
enum {
    LC_CONVERT_NONE = 0,    /* not asked for, or already in that format */
    LC_CONVERT_DONE,        /* converted */
    LC_CONVERT_NOT_VERSION, /* V3 and V4 records have no input_format field */
    LC_CONVERT_NOT_FORMAT,  /* a pair lcmon cannot convert */
    LC_CONVERT_FAILED,      /* the game could not be read as one: left as it was */
};

/* The format a game of this version and input format (from) is converted
 * to, 0 for none, and in *what (may be NULL) which of the above. */
uint32_t lc_rescorer_target_format(const lc_rescorer_config *c, uint32_t version, uint32_t from,
                                   int *what);
/* Convert the game's n records (record_size apart) in place to format `to`,
 * each re-encoded from the game's history (lc_game_convert_format); a game
 * that cannot be read as one is left as it was (err says why). */
int lc_rescorer_convert(uint8_t *recs, size_t record_size, uint32_t n, uint32_t version,
                        uint32_t to, lc_error *err);

/* What lc_rescorer_records did to a game. */
typedef struct lc_rescorer_game {
    lc_rescore_counts counts; /* lc_rescore_game's */
    int result;               /* LC_RESCORE_KEPT or LC_RESCORE_DROPPED */
    char why[256];            /* a dropped game's reason */
    int convert;              /* LC_CONVERT_* */
    uint32_t from, to;        /* input formats */
    char convert_error[256];  /* with LC_CONVERT_FAILED */
    uint32_t st;              /* positions given short-term targets (V6 made V7) */
} lc_rescorer_game;

/*
 * A game's n records (*data, malloc'd, *record_size apart, of *version), in
 * place: rescored with rc (when lc_rescorer_has_work; validated: the same
 * bytes passed Validate with rc before, lc_rescore_game_validated), then, kept,
 * converted to new_input_format, then with st_targets: compute a V6 game
 * made V7 (*data, *version and *record_size replaced). What it did in *g.
 * LC_RESCORE_DROPPED (the records left as read) or LC_RESCORE_KEPT.
 */
int lc_rescorer_records(const lc_rescorer_config *c, const lc_rescore_config *rc, uint8_t **data,
                        uint32_t *version, uint32_t *record_size, uint32_t n, bool validated,
                        lc_st_scratch *st, lc_rescorer_game *g);

#endif
