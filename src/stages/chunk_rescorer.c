/*
 * chunk_rescorer: rescores games (chunks) before they are unpacked, as
 * upstream's loader does: endgame tablebase results (Gaviota, Syzygy) from
 * each position they answer back to the previous one (the first's back to
 * the start), the policy of those positions sharpened, temperature blunders undone
 * (format/lc0/rescore.h, deblunder.h), the planes converted to another input format
 * (input_format_convert.h) and V6 games given their short-term targets as
 * V7 records (stages/short_term.h). Between the pool (or chunk_reader, a
 * splitter, a join) and chunk_unpacker.
 *
 * Records from the pool are rescored in place on every use (the pool
 * inflates a fresh copy each time). Chunks from the pool's store arrive
 * packed: on a chunk's first use the rescorer reads its records from its
 * file once more (else, the file gone, decodes the packed form whole), does
 * the same to them and keeps the difference with the packed chunk
 * (format/lc0/rescore_patch.h, slot LC_AUX_RESCORE), which chunk_unpacker
 * applies to each position it decodes; later uses find it and cost nothing.
 * Tablebase positions are at a game's end (pieces only leave the board), so
 * a stored game whose last position has too many pieces for the tables is
 * not decoded at all when nothing else is asked for.
 *
 * A patch starts with a key of the settings that made it. A chunk whose
 * kept patch has another key (two rescorers with other settings on one
 * store) gets a patch of its own on every use, which costs a whole decode
 * each time (said once in the log): give each its own pool, or the same
 * settings. docs/pipelines.md "chunk_rescorer" has the rules.
 */
#include "stages/stage.h"

#include "core/log.h"
#include "format/lc0/chunk.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/frame.h"
#include "format/lc0/input_format_convert.h"
#include "format/lc0/packed_chunk.h"
#include "format/lc0/rescore.h"
#include "format/lc0/rescore_patch.h"
#include "format/lc0/tablebase.h"
#include "stages/items.h"
#include "stages/short_term.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rescorer_config {
    unsigned threads;
    char *syzygy_paths, *gaviota_paths;
    double dist_temp, dist_offset, dtz_boost;
    double deblunder_threshold, deblunder_width;
    uint32_t new_input_format; /* 0: keep */
    int st_targets;
    double st_theta;
    bool threshold_given, width_given, st_theta_given;
} rescorer_config;

static const lc_setting rescorer_settings[] = {
    LC_SETTING_THREADS(rescorer_config, threads, "1", 256),
    {.key = "syzygy_paths",
     .type = LC_SETTING_TEXT,
     LC_SETTING_AT(rescorer_config, syzygy_paths),
     .off = "none",
     .nonempty = true,
     .meaning = "folders of Syzygy tables, separated by ',' or ':'",
     .example = "/data/syzygy/3-4-5:/data/syzygy/6"},
    {.key = "gaviota_paths",
     .type = LC_SETTING_TEXT,
     LC_SETTING_AT(rescorer_config, gaviota_paths),
     .off = "none",
     .nonempty = true,
     .meaning = "folders of Gaviota tables, separated by ',' or ':'",
     .example = "/usr/share/gaviotatb/gtb4"},
    {.key = "dist_temp",
     .type = LC_SETTING_REAL,
     LC_SETTING_AT(rescorer_config, dist_temp),
     .def = "1",
     .range = LC_RANGE_MIN | LC_RANGE_MIN_OPEN,
     .min = 0,
     .meaning = "temperature of every position's policy, after a tablebase drops the losing "
                "moves (1: as it is)",
     .example = "0.5"},
    LC_SETTING_ROW(
        rescorer_config, dist_offset, "dist_offset", LC_SETTING_REAL, "0",
        "added to every kept move's policy share before the temperature, in every position", "0.1"),
    LC_SETTING_ROW(rescorer_config, dtz_boost, "dtz_boost", LC_SETTING_REAL, "0",
                   "added to the share of the moves best by distance too", "0.1"),
    {.key = "deblunder_threshold",
     .type = LC_SETTING_REAL,
     LC_SETTING_AT(rescorer_config, deblunder_threshold),
     LC_SETTING_GIVEN(rescorer_config, threshold_given),
     .off = "off",
     .range = LC_RANGE_MIN | LC_RANGE_MAX,
     .min = 0,
     .max = 2,
     .meaning = "q a played move may lose against the best before it counts as a blunder",
     .example = "0.1"},
    {.key = "deblunder_width",
     .type = LC_SETTING_REAL,
     LC_SETTING_AT(rescorer_config, deblunder_width),
     LC_SETTING_GIVEN(rescorer_config, width_given),
     .def = "0",
     .range = LC_RANGE_MIN | LC_RANGE_MAX,
     .min = 0,
     .max = 2,
     .meaning = "width of the deblunder's soft switch around the threshold (0: sharp)",
     .example = "0.02"},
    {.key = "new_input_format",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(rescorer_config, new_input_format),
     .off = "keep",
     LC_SETTING_RANGE(1, 133),
     .meaning = "convert the planes to this input format (1, 2, 3, 4, 5, 132, 133)",
     .example = "3"},
    LC_SETTING_ST_TARGETS(rescorer_config, st_targets, "keep",
                          "make V6 games V7 with their short-term targets here, or leave them to "
                          "chunk_unpacker"),
    LC_SETTING_ST_THETA(rescorer_config, st_theta, st_theta_given),
    {0},
};

static int rescorer_config_check(void *p, lc_error *err)
{
    rescorer_config *c = p;
    int rc = 0;
    if (c->gaviota_paths && !lc_tablebases_have_gaviota())
        rc = lc_error_add(err, LC_ECONFIG,
                          "gaviota_paths: this lcmon was built without Gaviota tablebases "
                          "(install libgaviotatb-dev and build again, or remove gaviota_paths)");
    else if (c->gaviota_paths && (lc_config_expand_path(&c->gaviota_paths, "gaviota_paths",
                                                        "the tables' folders", err) != 0))
        rc = LC_ECONFIG;
    if (c->syzygy_paths && !lc_tablebases_have_syzygy())
        rc = lc_error_add(err, LC_ECONFIG,
                          "syzygy_paths: this lcmon was built without Syzygy tablebases "
                          "(install libfathom-dev and build again, or remove syzygy_paths)");
    else if (c->syzygy_paths && (lc_config_expand_path(&c->syzygy_paths, "syzygy_paths",
                                                       "the tables' folders", err) != 0))
        rc = LC_ECONFIG;
    if (c->width_given && !c->threshold_given)
        rc = lc_error_add(err, LC_ECONFIG,
                          "deblunder_width: only used with deblunder_threshold (add it, or remove "
                          "deblunder_width)");
    if (c->new_input_format && !lc_input_format_known(c->new_input_format))
        rc = lc_error_add(err, LC_ECONFIG,
                          "new_input_format: %u is not an input format lcmon reads (give 1, 2, "
                          "3, 4, 5, 132 or 133)",
                          c->new_input_format);
    if (c->st_theta_given && c->st_targets != LC_ST_COMPUTE)
        rc = lc_error_add(err, LC_ECONFIG,
                          "st_theta: only used with st_targets: compute (add it, or remove "
                          "st_theta)");
    return rc;
}

/* --check-config, every start and reload: the folders of both settings
 * exist and hold tables (counted by name: opening them here would clash
 * with the set a running pipeline holds during a reload). */
static int rescorer_preflight(const void *config, lc_error *err)
{
    const rescorer_config *c = config;
    int g = c->gaviota_paths ? lc_tablebases_check(c->gaviota_paths, false, err) : 0;
    int z = c->syzygy_paths ? lc_tablebases_check(c->syzygy_paths, true, err) : 0;
    return g ? g : z;
}

typedef struct rescorer {
    lc_tablebases *tb;
    lc_rescore_config rc;
    uint64_t key;   /* of the settings, for the patches */
    bool rescore;   /* tablebases, deblunder or tempering: lc_rescore_game has work */
    bool tempering; /* dist_temp or dist_offset: every policy changes */
    unsigned max_pieces;
    atomic_bool warned_other, warned_twice;
    atomic_uint_fast64_t n_chunks, n_games, n_positions, n_probed, n_hits, n_misses,
        n_games_rescored, n_results_changed, n_sharpened, n_blunders, n_deblundered;
    atomic_uint_fast64_t n_converted, n_not_version, n_not_format, n_st;
    atomic_uint_fast64_t n_patches_made, n_patches_reused, n_patches_other, n_not_decoded;
    atomic_uint_fast64_t n_from_packed; /* patches made from the packed form: no file */
} rescorer;

/* The key of what the settings do to a game. */
static uint64_t settings_key(const rescorer_config *c)
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
                  c->st_targets == LC_ST_COMPUTE ? c->st_theta : NAN};
    return lc_rescore_patch_hash(h, d, sizeof d);
}

static int rescorer_start(lc_stage *s, lc_error *err)
{
    rescorer *r = s->priv;
    const rescorer_config *c = s->config;
    lc_rescore_config_init(&r->rc);
    r->rc.dist_temp = c->dist_temp;
    r->rc.dist_offset = c->dist_offset;
    r->rc.dtz_boost = c->dtz_boost;
    r->rc.deblunder_threshold = c->threshold_given ? c->deblunder_threshold : NAN;
    r->rc.deblunder_width = c->deblunder_width;
    r->key = settings_key(c);
    char line[512];
    if ((c->gaviota_paths || c->syzygy_paths) && !r->tb) {
        int rc = rescorer_preflight(c, err);
        if (rc == 0)
            rc = lc_tablebases_open(c->syzygy_paths, c->gaviota_paths, &r->tb, err);
        if (rc != 0)
            return rc;
    }
    r->rc.tb = r->tb;
    if (r->tb) {
        r->max_pieces = lc_tablebases_max_pieces(r->tb);
        lc_tablebases_describe(r->tb, line, sizeof line);
    } else {
        snprintf(line, sizeof line, "none configured");
    }
    LC_INFO("%s: tablebases: %s (this build reads Gaviota: %s, Syzygy: %s)", s->name, line,
            lc_tablebases_have_gaviota() ? "yes" : "no",
            lc_tablebases_have_syzygy() ? "yes" : "no");
    /* Tempering (dist_temp, dist_offset) shapes every position's policy,
     * tables or not, as upstream's. */
    r->tempering = c->dist_temp != 1 || c->dist_offset != 0;
    r->rescore = r->tb || c->threshold_given || r->tempering;
    return 0;
}

/* After the workers are joined (a class's stop comes before: they may
 * still be probing then). */
static void rescorer_fini(lc_stage *s)
{
    rescorer *r = s->priv;
    lc_tablebases_close(r->tb);
    r->tb = NULL;
    r->rc.tb = NULL;
}

static void add_counts(rescorer *r, const lc_rescore_counts *k)
{
    atomic_fetch_add(&r->n_games, k->games);
    atomic_fetch_add(&r->n_positions, k->positions);
    atomic_fetch_add(&r->n_probed, k->probed);
    atomic_fetch_add(&r->n_hits, k->hits);
    atomic_fetch_add(&r->n_misses, k->probed - k->hits);
    atomic_fetch_add(&r->n_games_rescored, k->games_rescored);
    atomic_fetch_add(&r->n_results_changed, k->results_changed);
    atomic_fetch_add(&r->n_sharpened, k->policies_sharpened);
    atomic_fetch_add(&r->n_blunders, k->blunders);
    atomic_fetch_add(&r->n_deblundered, k->deblundered);
}

/* The format a game of this version and input format is converted to: 0
 * for none (not asked for, already in it, or not convertible: counted). */
static uint32_t target_format(lc_stage *s, uint32_t version, uint32_t from)
{
    rescorer *r = s->priv;
    uint32_t to = ((const rescorer_config *)s->config)->new_input_format;
    if (!to || from == to)
        return 0;
    if (version < 5) {
        atomic_fetch_add(&r->n_not_version, 1);
        return 0;
    }
    if (!lc_input_format_convertible(from, to)) {
        atomic_fetch_add(&r->n_not_format, 1);
        return 0;
    }
    atomic_fetch_add(&r->n_converted, 1);
    return to;
}

/* Convert the game's n records (record_size apart) in place, re-encoded
 * from the game's history; false when it cannot be read as a game (left
 * as it was: logged). */
static bool convert_records(lc_stage *s, uint8_t *recs, size_t size, uint32_t n, uint32_t version,
                            uint32_t to, const lc_chunk_item *c)
{
    lc_error err;
    lc_error_clear(&err);
    if (lc_game_convert_format(recs, size, n, version, to, &err) != 0) {
        LC_WARN("%s: %s member %u: %s", s->name,
                c->source ? lc_chunk_source_path(c->source) : "a chunk", c->member, err.msg);
        return false;
    }
    return true;
}

/* Records from the pool: rescored, converted and given their targets in
 * place (the V7 records replacing the V6 ones). */
static void rescore_records(lc_stage *s, lc_chunk_item *c, lc_st_scratch *st)
{
    rescorer *r = s->priv;
    const rescorer_config *cfg = s->config;
    if (r->rescore) {
        lc_rescore_counts k = {0};
        (void)lc_rescore_game(&r->rc, c->data, c->record_size, c->n_records, c->version, &k, NULL,
                              0);
        add_counts(r, &k);
    }
    if (cfg->new_input_format && c->n_records) {
        uint32_t from = 1; /* V3 and V4 are classical, with no field for it */
        if (c->version >= 5)
            memcpy(&from, c->data + offsetof(lc_v6_record, input_format), sizeof from);
        uint32_t to = target_format(s, c->version, from);
        if (to)
            convert_records(s, c->data, c->record_size, c->n_records, c->version, to, c);
    }
    if (cfg->st_targets == LC_ST_COMPUTE && c->version == 6 &&
        c->record_size == LC_V6_RECORD_SIZE) {
        c->data = lc_st_records_v7(c->data, c->n_records, cfg->st_theta, st);
        c->version = 7;
        c->record_size = LC_V7_RECORD_SIZE;
        atomic_fetch_add(&r->n_st, c->n_records);
    }
}

/* A worker's scratch space for stored chunks. */
typedef struct work {
    lc_frame *before, *after;
    uint8_t *recs;
    float *st_rows, *rq, *rd;
    uint16_t *played;
    size_t cap;
    lc_st_scratch st;
    lc_unpack_ctx *uctx;
} work;

static void work_fini(work *w)
{
    free(w->before);
    free(w->after);
    free(w->recs);
    free(w->st_rows);
    free(w->rq);
    free(w->rd);
    free(w->played);
    lc_st_scratch_fini(&w->st);
    lc_unpack_ctx_free(w->uctx);
}

/* Whether the stored game needs decoding whole: something to do that may
 * change it. Tablebases only where its last position (the fewest pieces)
 * can be probed; a conversion only from another format (position 0's). */
static bool stored_has_work(lc_stage *s, work *w, const lc_chunk_item *c)
{
    rescorer *r = s->priv;
    const rescorer_config *cfg = s->config;
    uint32_t n = c->n_records, version = c->version;
    if (!n)
        return false;
    if ((cfg->threshold_given && version >= 6) || r->tempering)
        return true;
    if (cfg->st_targets == LC_ST_COMPUTE && version == 6)
        return true;
    lc_frame f;
    lc_error err;
    if (!w->uctx)
        w->uctx = lc_unpack_ctx_new();
    if (cfg->new_input_format && version >= 5 &&
        lc_packed_chunk_frame(c->packed, w->uctx, 0, &f, &err) == 0) {
        bool other = f.input_format != cfg->new_input_format;
        lc_frame_fini(&f);
        if (other)
            return true;
    }
    if (!r->tb || lc_packed_chunk_frame(c->packed, w->uctx, n - 1, &f, &err) != 0)
        return false;
    unsigned pieces = 0;
    for (unsigned p = 0; p < 12; p++)
        pieces += (unsigned)__builtin_popcountll(f.planes[p]);
    bool castling =
        f.castling_us_ooo || f.castling_us_oo || f.castling_them_ooo || f.castling_them_oo;
    lc_frame_fini(&f);
    return pieces <= r->max_pieces && !castling;
}

/* Room for a game of n positions in w. */
static void work_reserve(work *w, uint32_t n)
{
    if (n <= w->cap)
        return;
    w->cap = n;
    w->before = lc_xrealloc(w->before, n * sizeof *w->before);
    w->after = lc_xrealloc(w->after, n * sizeof *w->after);
    w->recs = lc_xrealloc(w->recs, n * (size_t)LC_V7_RECORD_SIZE);
    w->st_rows = lc_xrealloc(w->st_rows, 4 * (size_t)n * sizeof *w->st_rows);
    w->rq = lc_xrealloc(w->rq, n * sizeof *w->rq);
    w->rd = lc_xrealloc(w->rd, n * sizeof *w->rd);
    w->played = lc_xrealloc(w->played, n * sizeof *w->played);
}

/* The stored game's records from its file (d, inflated once more: every
 * field, the visits the deblunder reads included, so that the patch is
 * exactly what the pool's records would get) and their frames in
 * w->before; false (nothing held) when the file no longer gives them. */
static bool file_records(work *w, const lc_chunk_item *c, lc_chunk_data *d)
{
    lc_error err;
    if (!c->source || lc_chunk_source_load(c->source, c->member, LC_INFLATE_AUTO, d, &err) != 0)
        return false;
    uint32_t i = 0;
    if (d->n_records == c->n_records && d->version == c->version)
        for (; i < c->n_records; i++)
            if (lc_frame_from_record(d->data + i * d->record_size, d->version, &w->before[i],
                                     &err) != 0)
                break;
    if (i == c->n_records && i == d->n_records)
        return true;
    while (i-- > 0)
        lc_frame_fini(&w->before[i]);
    lc_chunk_data_fini(d);
    return false;
}

/* Else the packed form decoded whole into w->before and written back as
 * records in w->recs, V7's layout (V3 and V4 as V5, whose fields sit where
 * V6's do; no visits: the deblunder takes every position as searched).
 * The version to read them as; 0 when a position does not decode. */
static uint32_t packed_records(work *w, const lc_chunk_item *c)
{
    if (!w->uctx)
        w->uctx = lc_unpack_ctx_new();
    uint32_t n = c->n_records, version = c->version < 5 ? 5 : c->version, visits = 1;
    for (uint32_t i = 0; i < n; i++) {
        lc_error err;
        if (lc_packed_chunk_frame(c->packed, w->uctx, i, &w->before[i], &err) != 0) {
            while (i-- > 0)
                lc_frame_fini(&w->before[i]);
            return 0;
        }
        uint8_t *rec = w->recs + (size_t)i * LC_V7_RECORD_SIZE;
        lc_frame_to_record_v7(&w->before[i], rec);
        memcpy(rec + offsetof(lc_v7_record, version), &version, sizeof version);
        memcpy(rec + offsetof(lc_v7_record, visits), &visits, sizeof visits);
    }
    return version;
}

/* The patch of a stored game: its records (from its file, else from the
 * packed form) rescored, read back and compared; converted and given
 * their targets like the pool's records. NULL when neither gives them. */
static float *make_patch(lc_stage *s, work *w, const lc_chunk_item *c)
{
    rescorer *r = s->priv;
    const rescorer_config *cfg = s->config;
    if (!stored_has_work(s, w, c)) {
        if (cfg->new_input_format && c->version < 5)
            target_format(s, c->version, 1); /* counted: V3 and V4 are not converted */
        return lc_rescore_patch_make(r->key, 0, NULL, NULL, c->n_records, NULL, NULL);
    }
    uint32_t n = c->n_records, version = c->version;
    work_reserve(w, n);
    lc_chunk_data d = {0};
    uint8_t *recs = NULL;
    size_t size = 0;
    if (file_records(w, c, &d)) {
        recs = d.data;
        size = d.record_size;
    } else if ((version = packed_records(w, c)) != 0) {
        recs = w->recs;
        size = LC_V7_RECORD_SIZE;
        atomic_fetch_add(&r->n_from_packed, 1);
    } else {
        return NULL;
    }
    if (r->rescore) {
        lc_rescore_counts k = {0};
        (void)lc_rescore_game(&r->rc, recs, size, n, version, &k, NULL, 0);
        add_counts(r, &k);
    }
    for (uint32_t i = 0; i < n; i++)
        lc_frame_from_record(recs + (size_t)i * size, version, &w->after[i], NULL);
    uint32_t to =
        cfg->new_input_format ? target_format(s, c->version, w->before[0].input_format) : 0;
    const float *st = NULL;
    if (cfg->st_targets == LC_ST_COMPUTE && c->version == 6) {
        /* After the conversion, as for records: the moves in its frame. */
        if (to)
            convert_records(s, recs, size, n, version, to, c);
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *rec = recs + (size_t)i * size;
            LC_REC_GET(rec, root_q, w->rq[i]);
            LC_REC_GET(rec, root_d, w->rd[i]);
            LC_REC_GET(rec, played_idx, w->played[i]);
        }
        lc_st_rows(w->rq, w->rd, w->played, n, cfg->st_theta, w->st_rows, &w->st);
        atomic_fetch_add(&r->n_st, n);
        st = w->st_rows;
    }
    float *patch = lc_rescore_patch_make(r->key, to, w->before, w->after, n, st, NULL);
    for (uint32_t i = 0; i < n; i++) {
        lc_frame_fini(&w->before[i]);
        lc_frame_fini(&w->after[i]);
    }
    lc_chunk_data_fini(&d);
    return patch;
}

/* A patch worth handing on: NULL for none or an empty one. */
#define USABLE(patch) ((patch) && !lc_rescore_patch_is_empty(patch) ? (patch) : NULL)

/* A stored chunk: its patch, kept with it on its first use (or, kept with
 * other settings, its own for this use). */
static void rescore_packed(lc_stage *s, work *w, lc_chunk_item *c)
{
    rescorer *r = s->priv;
    if (c->patch) {
        if (!atomic_exchange(&r->warned_twice, true))
            LC_WARN("%s: a chunk rescored before: a chain has one chunk_rescorer; it is passed "
                    "on as it is",
                    s->name);
        return;
    }
    const float *kept = lc_packed_chunk_aux(c->packed, LC_AUX_RESCORE);
    if (kept && lc_rescore_patch_key(kept) == r->key) {
        atomic_fetch_add(&r->n_patches_reused, 1);
        c->patch = USABLE(kept);
        return;
    }
    float *mine = make_patch(s, w, c);
    if (!mine) { /* the unpacker reports the position that does not decode */
        atomic_fetch_add(&r->n_not_decoded, 1);
        return;
    }
    if (!kept) {
        kept = lc_packed_chunk_attach_aux(c->packed, LC_AUX_RESCORE, mine);
        /* ours, or a same-keyed one another thread attached first (ours freed) */
        atomic_fetch_add(kept == mine ? &r->n_patches_made : &r->n_patches_reused, 1);
        if (lc_rescore_patch_key(kept) == r->key) {
            c->patch = USABLE(kept);
            return;
        }
        mine = make_patch(s, w, c); /* another rescorer's came first: ours again */
        if (!mine)
            return;
    }
    atomic_fetch_add(&r->n_patches_other, 1);
    if (!atomic_exchange(&r->warned_other, true))
        LC_WARN("%s: the pool's store keeps chunks rescored with other settings (another "
                "chunk_rescorer): this one rescores each of them on every use, which is slow "
                "(give each rescorer its own pool, or the same settings)",
                s->name);
    if (!USABLE(mine)) {
        free(mine);
        return;
    }
    c->patch = mine;
    c->flags |= LC_ITEM_OWN_PATCH;
}

static void rescorer_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    rescorer *r = s->priv;
    work w = {0};
    lc_st_scratch st = {0};
    lc_stage_inbox ib;
    lc_stage_outbox ob;
    /* Blocks of 16 (stage.h): the hand-offs cost more than a chunk's work. */
    lc_stage_inbox_init(&ib, s->input, 16);
    lc_stage_outbox_init(&ob, s, 16);
    lc_chunk_item c;
    bool open = true;
    while (open && lc_run_state_check(&s->run, meter) &&
           lc_stage_inbox_get(&ib, &c, &ob, meter) == 0) {
        if (c.packed)
            rescore_packed(s, &w, &c);
        else if (c.data)
            rescore_records(s, &c, &st);
        open = lc_stage_outbox_put(&ob, &c, meter) == 0;
        if (open)
            atomic_fetch_add(&r->n_chunks, 1);
    }
    lc_stage_inbox_fini(&ib);
    if (open && !lc_run_state_stopping(&s->run))
        lc_stage_outbox_flush(&ob, meter);
    lc_stage_outbox_fini(&ob);
    work_fini(&w);
    lc_st_scratch_fini(&st);
}

static void rescorer_flush(lc_stage *s, lc_stage_metrics *m)
{
    rescorer *r = s->priv;
    struct {
        const char *name;
        atomic_uint_fast64_t *v;
    } counts[] = {
        {"chunks", &r->n_chunks},
        {"games", &r->n_games},
        {"positions", &r->n_positions},
        {"probed", &r->n_probed},
        {"hits", &r->n_hits},
        {"misses", &r->n_misses},
        {"games_rescored", &r->n_games_rescored},
        {"results_changed", &r->n_results_changed},
        {"policies_sharpened", &r->n_sharpened},
        {"blunders", &r->n_blunders},
        {"deblundered", &r->n_deblundered},
        {"converted", &r->n_converted},
        {"not_converted_version", &r->n_not_version},
        {"not_converted_format", &r->n_not_format},
        {"st_targets", &r->n_st},
        {"patches_made", &r->n_patches_made},
        {"patches_reused", &r->n_patches_reused},
        {"patches_other_settings", &r->n_patches_other},
        {"not_decoded", &r->n_not_decoded},
        {"patches_from_store", &r->n_from_packed},
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        lc_metrics_add_count(m, counts[i].name, atomic_exchange(counts[i].v, 0));
}

static const lc_metric_info rescorer_metrics[] = {
    {"chunks", "chunks", LC_SHOW_RATE, 0, "chunks/s in"},
    {"games", "games"},
    {"positions", "positions"},
    {"probed", "positions"},
    /* hits / (hits + misses): the share of the probes a table answered. */
    {"hits", "positions", LC_SHOW_PERCENT, LC_SHOW_NONZERO, "tablebase hits", "hits", "misses"},
    {"misses", "positions"},
    {"games_rescored", "games", LC_SHOW_TOTAL, LC_SHOW_NONZERO, "games rescored", "rescored"},
    {"results_changed", "positions", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
     "results changed", ""},
    {"policies_sharpened", "positions", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
     "policies sharpened", ""},
    {"blunders", "positions", LC_SHOW_TOTAL, LC_SHOW_NONZERO, "blunders", "blunders"},
    {"deblundered", "positions", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "deblundered", ""},
    {"converted", "chunks", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "converted", ""},
    {"not_converted_version", "chunks", LC_SHOW_TOTAL, LC_SHOW_WARN | LC_SHOW_NONZERO,
     "not converted (V3/V4)", "not converted"},
    {"not_converted_format", "chunks", LC_SHOW_TOTAL, LC_SHOW_WARN | LC_SHOW_NONZERO,
     "not converted (format)", "not converted"},
    {"st_targets", "positions", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "st targets computed",
     ""},
    {"patches_made", "chunks", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "stored rescored", ""},
    {"patches_reused", "chunks"},
    {"patches_other_settings", "chunks", LC_SHOW_TOTAL, LC_SHOW_WARN | LC_SHOW_NONZERO,
     "rescored again (other settings in the store)", "again"},
    {"not_decoded", "chunks"},
    {"patches_from_store", "chunks"},
    {0},
};

static unsigned rescorer_threads(const void *config)
{
    return ((const rescorer_config *)config)->threads;
}

const lc_stage_class lc_chunk_rescorer_class = {
    .type_name = "chunk_rescorer",
    .summary = "rescores games by endgame tablebases and deblunder, converts input formats",
    .input = &lc_item_chunk,
    .output = &lc_item_chunk,
    .priv_size = sizeof(rescorer),
    .worker = rescorer_worker,
    .threads = rescorer_threads,
    .workers = "workers",
    .settings = {rescorer_settings, sizeof(rescorer_config)},
    .config_check = rescorer_config_check,
    .preflight = rescorer_preflight,
    .start = rescorer_start,
    .fini = rescorer_fini,
    .flush_metrics = rescorer_flush,
    .metrics = rescorer_metrics,
};
