/*
 * rescore: one game's records rescored in place (rescore.h), in upstream's
 * order: Validate (rescore_validate.c, with the moves found by
 * format/lc0/rescore/game.h), the two Syzygy passes (rescore_results.c), the
 * policy (rescore_policy.c), plies_left (rescore_results.c), the deblunder
 * (deblunder.h). The rules are in docs/pipelines.md "chunk_rescorer: the
 * rules for one game".
 *
 * Cost: every game is read as a history to be validated (one board read
 * and one legal-move generation a ply, bench/rescore_cost.c measures it);
 * the tablebase steps then look only at positions with few enough pieces.
 * The history's plies are one allocation a game.
 */
#include "format/lc0/rescore/rescore.h"

#include "format/lc0/rescore/deblunder.h"
#include "format/lc0/rescore/rescore_internal.h"
#include "format/lc0/rescore/tablebase.h"

#include <stdio.h>

void lc_rescore_config_init(lc_rescore_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->tb = NULL;
    cfg->dist_temp = 1.0;
    cfg->dist_offset = 0.0;
    cfg->dtz_boost = 0.0;
    cfg->deblunder_threshold = NAN;
    cfg->deblunder_width = 0.0;
}

/* Validate the game and read its positions into game: true when upstream
 * takes it (else the reason in why, and game read record by record).
 * validated: Validate took these records before; only the history is
 * read (and if it is not one, everything is checked after all). */
static bool read_game(const uint8_t *records, size_t size, uint32_t n, uint32_t version,
                      lc_game *game, bool validated, char *why, size_t why_size)
{
    if (validated && version >= 3 && version <= 7 && n > 0 &&
        lc_game_read(game, records, size, n, version, NULL, 0))
        return true;
    bool fields = rs_validate_fields(records, size, n, version, why, why_size);
    if (version < 3 || version > 7) {
        lc_game_read_records(game, records, size, 0, version);
        return false;
    }
    char reading[256];
    bool history = lc_game_read(game, records, size, n, version, reading, sizeof reading);
    if (!fields) {
        if (!history)
            lc_game_read_records(game, records, size, n, version);
        return false;
    }
    if (!history && why && why_size)
        snprintf(why, why_size, "%s", reading);
    bool moves = rs_validate_moves(records, size, version, game, history, why, why_size);
    if (!history)
        lc_game_read_records(game, records, size, n, version);
    return moves;
}

static void deblunder(rs_game *g)
{
    const lc_rescore_config *cfg = g->cfg;
    if (isnan(cfg->deblunder_threshold))
        return;
    g->changed = true; /* not told bit by bit: taken as changed */
    if (cfg->deblunder_lcmon)
        lc_deblunder(g->records, g->size, g->first_hit, g->version, cfg->deblunder_threshold,
                     cfg->deblunder_width, &g->counts->blunders, &g->counts->deblundered);
    else
        lc_deblunder_upstream(g->records, g->size, g->n, rs_deblunder_region(g), g->version,
                              cfg->deblunder_threshold, cfg->deblunder_width, &g->counts->blunders,
                              &g->counts->deblundered);
}

/* Steps 2 to 8 on a game that was read; false when a result upstream
 * refuses drops it (strict). */
static bool rescore(rs_game *g)
{
    rs_first_pass(g);
    if (!g->failed)
        rs_second_pass(g);
    if (g->failed)
        return false;
    rs_policy(g);
    rs_plies_left(g);
    if (g->failed)
        return false;
    deblunder(g);
    return true;
}

static int dropped(lc_rescore_counts *counts)
{
    counts->dropped++;
    return LC_RESCORE_DROPPED;
}

static int rescore_game(const lc_rescore_config *cfg, uint8_t *records, size_t record_size,
                        uint32_t n, uint32_t version, bool validated, lc_rescore_counts *counts,
                        char *why, size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    counts->games++;
    counts->positions += n;
    lc_game game;
    lc_game_init(&game);
    bool valid = read_game(records, record_size, n, version, &game, validated, why, why_size);
    if (!valid && !cfg->keep_invalid) {
        lc_game_fini(&game);
        return dropped(counts);
    }
    if (version < 3 || version > 7 || n == 0) { /* nothing that can be read */
        lc_game_fini(&game);
        return LC_RESCORE_KEPT;
    }
    rs_game g = {
        .cfg = cfg,
        .records = records,
        .size = record_size,
        .n = n,
        .version = version,
        .game = &game,
        .counts = counts,
        .syzygy_max = cfg->tb ? lc_tablebases_syzygy_max_pieces(cfg->tb) : 0,
        .gaviota = cfg->tb && lc_tablebases_have_gaviota_tables(cfg->tb),
        .strict = !cfg->keep_invalid,
        .why = why,
        .why_size = why_size,
        .temp = (float)cfg->dist_temp,
        .offset = (float)cfg->dist_offset,
        .boost = (float)cfg->dtz_boost,
        .first_hit = n,
    };
    bool ok = rescore(&g);
    lc_game_fini(&game);
    counts->results_changed += g.results_changed;
    counts->games_rescored += g.results_changed > 0;
    counts->games_changed += ok && g.changed;
    return ok ? LC_RESCORE_KEPT : dropped(counts);
}

int lc_rescore_game(const lc_rescore_config *cfg, uint8_t *records, size_t record_size, uint32_t n,
                    uint32_t version, lc_rescore_counts *counts, char *why, size_t why_size)
{
    return rescore_game(cfg, records, record_size, n, version, false, counts, why, why_size);
}

int lc_rescore_game_validated(const lc_rescore_config *cfg, uint8_t *records, size_t record_size,
                              uint32_t n, uint32_t version, lc_rescore_counts *counts, char *why,
                              size_t why_size)
{
    return rescore_game(cfg, records, record_size, n, version, true, counts, why, why_size);
}
