/*
 * chunk_rescorer_settings: see chunk_rescorer_settings.h.
 */
#include "stages/chunk_rescorer_settings.h"

#include "format/lc0/rescore/input_format_convert.h"
#include "format/lc0/record.h"
#include "format/lc0/rescore/rescore_patch.h"
#include "format/lc0/rescore/tablebase.h"
#include "stages/stage.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const lc_setting_value deblunder_values[] = {
    {"upstream", LC_DEBLUNDER_UPSTREAM},
    {"lcmon", LC_DEBLUNDER_LCMON},
    {NULL, 0},
};

static const lc_setting_value invalid_values[] = {
    {"drop", LC_INVALID_DROP},
    {"keep", LC_INVALID_KEEP},
    {NULL, 0},
};

const lc_setting lc_rescorer_rows[] = {
    LC_SETTING_THREADS(lc_rescorer_config, threads, "1", 256),
    {.key = "syzygy_paths",
     .type = LC_SETTING_TEXT,
     LC_SETTING_AT(lc_rescorer_config, syzygy_paths),
     .off = "none",
     .nonempty = true,
     .meaning = "folders of Syzygy tables, separated by ',' or ':'",
     .example = "/data/syzygy/3-4-5:/data/syzygy/6"},
    {.key = "gaviota_paths",
     .type = LC_SETTING_TEXT,
     LC_SETTING_AT(lc_rescorer_config, gaviota_paths),
     .off = "none",
     .nonempty = true,
     .meaning = "folders of Gaviota tables, separated by ',' or ':'",
     .example = "/usr/share/gaviotatb/gtb4"},
    {.key = "dist_temp",
     .type = LC_SETTING_REAL,
     LC_SETTING_AT(lc_rescorer_config, dist_temp),
     .def = "1",
     .range = LC_RANGE_MIN | LC_RANGE_MIN_OPEN,
     .min = 0,
     .meaning = "temperature of every position's policy (1: as it is)",
     .example = "0.5"},
    LC_SETTING_ROW(lc_rescorer_config, dist_offset, "dist_offset", LC_SETTING_REAL, "0",
                   "added to every move's policy share before the temperature, in every position",
                   "0.1"),
    LC_SETTING_ROW(lc_rescorer_config, dtz_boost, "dtz_boost", LC_SETTING_REAL, "0",
                   "added to the share of the moves best by distance too", "0.1"),
    {.key = "deblunder_threshold",
     .type = LC_SETTING_REAL,
     LC_SETTING_AT(lc_rescorer_config, deblunder_threshold),
     LC_SETTING_GIVEN(lc_rescorer_config, threshold_given),
     .off = "off",
     .range = LC_RANGE_MIN | LC_RANGE_MAX,
     .min = 0,
     .max = 2,
     .meaning = "q a played move may lose against the best before it counts as a blunder",
     .example = "0.1"},
    {.key = "deblunder_width",
     .type = LC_SETTING_REAL,
     LC_SETTING_AT(lc_rescorer_config, deblunder_width),
     LC_SETTING_GIVEN(lc_rescorer_config, width_given),
     .def = "0",
     .range = LC_RANGE_MIN | LC_RANGE_MAX,
     .min = 0,
     .max = 2,
     .meaning = "width of the deblunder's soft switch around the threshold (0: sharp)",
     .example = "0.02"},
    {.key = "deblunder_rules",
     .type = LC_SETTING_ENUM,
     LC_SETTING_AT(lc_rescorer_config, deblunder_rules),
     .def = "upstream",
     .values = deblunder_values,
     .meaning = "upstream: deblunder only with threshold and width, upstream's region and "
                "target; lcmon: the threshold alone, lcmon's region, target and visits check",
     .example = "lcmon"},
    LC_SETTING_ROW(lc_rescorer_config, zero_losing_moves, "zero_losing_moves", LC_SETTING_BOOL,
                   "false",
                   "true: moves the tables prove worse than the best get 0 (lcmon's "
                   "sharpening); false: no move zeroed, as upstream",
                   "true"),
    LC_SETTING_ROW(lc_rescorer_config, gaviota_results, "gaviota_results", LC_SETTING_BOOL, "false",
                   "true: Gaviota's win/draw/loss gives results where Syzygy has no table; "
                   "false: Gaviota for distance to mate only, as upstream",
                   "true"),
    {.key = "invalid_games",
     .type = LC_SETTING_ENUM,
     LC_SETTING_AT(lc_rescorer_config, invalid_games),
     .def = "drop",
     .values = invalid_values,
     .meaning = "games upstream's Validate refuses: drop (counted, as upstream) or keep "
                "(passed on as read)",
     .example = "keep"},
    {.key = "new_input_format",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(lc_rescorer_config, new_input_format),
     .off = "keep",
     LC_SETTING_RANGE(1, 133),
     .meaning = "re-encode every game for this input format (1, 2, 3, 4, 5, 132, 133), from "
                "the game's history as lc0 encodes it",
     .example = "3"},
    LC_SETTING_ST_TARGETS(lc_rescorer_config, st_targets, "keep",
                          "make V6 games V7 with their short-term targets here, or leave them to "
                          "chunk_unpacker"),
    LC_SETTING_ST_THETA(lc_rescorer_config, st_theta, st_theta_given),
    LC_SETTING_ST_MATH(lc_rescorer_config, st_math, st_math_given),
    LC_SETTING_ROW(lc_rescorer_config, remember_games, "remember_games", LC_SETTING_BOOL, "true",
                   "true: a game from the pool's records (no store) that passed Validate, or "
                   "that nothing changes, is known by its bytes at its next use (8 bytes a "
                   "chunk); false: every use validated and rescored whole. The same output",
                   "false"),
    {0},
};

/* A library the build lacks, or a folder list expanded. */
static int check_paths(char **paths, const char *key, bool have, const char *lib, lc_problems *ps)
{
    if (!*paths)
        return 0;
    if (!have)
        return lc_problem_add(ps, key,
                              "this lcmon was built without %s tablebases (install %s and build "
                              "again, or remove %s)",
                              key[0] == 's' ? "Syzygy" : "Gaviota", lib, key);
    return lc_config_expand_path(paths, key, "the tables' folders", ps) != 0 ? LC_ECONFIG : 0;
}

int lc_rescorer_config_check(void *config, lc_problems *ps)
{
    lc_rescorer_config *c = config;
    int rc = 0;
    if (check_paths(&c->gaviota_paths, "gaviota_paths", lc_tablebases_have_gaviota(),
                    "libgaviotatb-dev", ps) != 0)
        rc = LC_ECONFIG;
    if (check_paths(&c->syzygy_paths, "syzygy_paths", lc_tablebases_have_syzygy(), "libfathom-dev",
                    ps) != 0)
        rc = LC_ECONFIG;
    if (c->width_given && !c->threshold_given)
        rc = lc_problem_add(ps, "deblunder_width",
                            "only used with deblunder_threshold (add it, or remove "
                            "deblunder_width)");
    if (c->threshold_given && !c->width_given && c->deblunder_rules == LC_DEBLUNDER_UPSTREAM)
        rc = lc_problem_add(ps, "deblunder_threshold",
                            "upstream's loader deblunders only with both deblunder_threshold and "
                            "deblunder_width (add deblunder_width, 0 for a sharp threshold, or "
                            "set deblunder_rules: lcmon to deblunder with the threshold alone)");
    if (c->new_input_format && !lc_input_format_known(c->new_input_format))
        rc = lc_problem_add(ps, "new_input_format",
                            "%u is not an input format lcmon reads (give 1, 2, 3, 4, 5, 132 or "
                            "133)",
                            c->new_input_format);
    if (c->st_theta_given && c->st_targets != LC_ST_COMPUTE)
        rc = lc_problem_add(ps, "st_theta",
                            "only used with st_targets: compute (add it, or remove st_theta)");
    if (c->st_math_given && c->st_targets != LC_ST_COMPUTE)
        rc = lc_problem_add(ps, "st_math",
                            "only used with st_targets: compute (add it, or remove st_math)");
    return rc;
}

int lc_rescorer_preflight(const void *config, lc_problems *ps)
{
    const lc_rescorer_config *c = config;
    int g = c->gaviota_paths ? lc_tablebases_check(c->gaviota_paths, false, ps) : 0;
    int z = c->syzygy_paths ? lc_tablebases_check(c->syzygy_paths, true, ps) : 0;
    return g ? g : z;
}

uint64_t lc_rescorer_key(const lc_rescorer_config *c)
{
    uint64_t h = LC_RESCORE_PATCH_HASH_INIT;
    const char *paths[2] = {c->syzygy_paths ? c->syzygy_paths : "",
                            c->gaviota_paths ? c->gaviota_paths : ""};
    for (unsigned k = 0; k < 2; k++)
        h = lc_rescore_patch_hash(h, paths[k], strlen(paths[k]) + 1);
    double d[] = {c->dist_temp,
                  c->dist_offset,
                  c->dtz_boost,
                  c->threshold_given ? c->deblunder_threshold : NAN,
                  c->deblunder_width,
                  (double)c->new_input_format,
                  c->st_targets == LC_ST_COMPUTE ? c->st_theta : NAN,
                  c->st_targets == LC_ST_COMPUTE ? (double)c->st_math : NAN,
                  c->zero_losing_moves,
                  c->gaviota_results,
                  c->deblunder_rules,
                  c->invalid_games};
    return lc_rescore_patch_hash(h, d, sizeof d);
}

void lc_rescorer_rescore_config(const lc_rescorer_config *c, const struct lc_tablebases *tb,
                                lc_rescore_config *rc)
{
    lc_rescore_config_init(rc);
    rc->tb = tb;
    rc->dist_temp = c->dist_temp;
    rc->dist_offset = c->dist_offset;
    rc->dtz_boost = c->dtz_boost;
    rc->deblunder_threshold = c->threshold_given ? c->deblunder_threshold : NAN;
    rc->deblunder_width = c->deblunder_width;
    rc->zero_losing_moves = c->zero_losing_moves;
    rc->gaviota_results = c->gaviota_results;
    rc->deblunder_lcmon = c->deblunder_rules == LC_DEBLUNDER_LCMON;
    rc->keep_invalid = c->invalid_games == LC_INVALID_KEEP;
}

bool lc_rescorer_tempers(const lc_rescore_config *rc)
{
    return rc->dist_temp != 1 || rc->dist_offset != 0 || rc->dtz_boost != 0;
}

bool lc_rescorer_has_work(const lc_rescore_config *rc)
{
    return !rc->keep_invalid || rc->tb || !isnan(rc->deblunder_threshold) ||
           lc_rescorer_tempers(rc);
}

uint32_t lc_rescorer_target_format(const lc_rescorer_config *c, uint32_t version, uint32_t from,
                                   int *what)
{
    uint32_t to = c->new_input_format;
    int w = !to || from == to                        ? LC_CONVERT_NONE
            : version < 5                            ? LC_CONVERT_NOT_VERSION
            : !lc_input_format_convertible(from, to) ? LC_CONVERT_NOT_FORMAT
                                                     : LC_CONVERT_DONE;
    if (what)
        *what = w;
    return w == LC_CONVERT_DONE ? to : 0;
}

int lc_rescorer_convert(uint8_t *recs, size_t record_size, uint32_t n, uint32_t version,
                        uint32_t to, lc_error *err)
{
    return lc_game_convert_format(recs, record_size, n, version, to, err);
}

int lc_rescorer_records(const lc_rescorer_config *c, const lc_rescore_config *rc, uint8_t **data,
                        uint32_t *version, uint32_t *record_size, uint32_t n, bool validated,
                        lc_st_scratch *st, lc_rescorer_game *g)
{
    memset(g, 0, sizeof *g);
    if (lc_rescorer_has_work(rc))
        g->result = (validated ? lc_rescore_game_validated : lc_rescore_game)(
            rc, *data, *record_size, n, *version, &g->counts, g->why, sizeof g->why);
    if (g->result == LC_RESCORE_DROPPED)
        return g->result;
    if (c->new_input_format && n) {
        g->from = 1; /* V3 and V4 are classical, with no field for it */
        if (*version >= 5)
            memcpy(&g->from, *data + offsetof(lc_v6_record, input_format), sizeof g->from);
        g->to = lc_rescorer_target_format(c, *version, g->from, &g->convert);
        lc_error err;
        lc_error_clear(&err);
        if (g->to && lc_rescorer_convert(*data, *record_size, n, *version, g->to, &err) != 0) {
            g->convert = LC_CONVERT_FAILED;
            snprintf(g->convert_error, sizeof g->convert_error, "%s", err.msg);
        }
    }
    if (c->st_targets == LC_ST_COMPUTE && *version == 6 && *record_size == LC_V6_RECORD_SIZE) {
        *data = lc_st_records_v7(*data, n, c->st_theta, c->st_math, st);
        *version = 7;
        *record_size = LC_V7_RECORD_SIZE;
        g->st = n;
    }
    return g->result;
}
