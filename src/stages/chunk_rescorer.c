/*
 * chunk_rescorer: rescores games (chunks) before they are unpacked, as
 * upstream's loader does: endgame tablebase results (Gaviota, Syzygy) from
 * each position they answer back to the previous one (the first's back to
 * the start), the policy of those positions sharpened, temperature blunders undone
 * (format/lc0/rescore/rescore.h, deblunder.h), the planes converted to another input format
 * (input_format_convert.h) and V6 games given their short-term targets as
 * V7 records (stages/short_term.h). Between the pool (or chunk_reader, a
 * splitter, a join) and chunk_unpacker.
 *
 * Records from the pool are rescored in place on every use (the pool
 * inflates a fresh copy each time), but what a use found is kept in the
 * source's memo word of the chunk (remember_games): a game whose bytes
 * (their fingerprint, items.h `content`) nothing changed is passed on as it
 * comes at its next use, one Validate took is not validated again; the
 * output is the same. Chunks from the pool's store arrive
 * packed: on a chunk's first use the rescorer reads its records from its
 * file once more (else, the file gone, decodes the packed form whole), does
 * the same to them and keeps the difference with the packed chunk
 * (format/lc0/rescore/rescore_patch.h, slot LC_AUX_RESCORE), which chunk_unpacker
 * applies to each position it decodes; later uses find it and cost nothing.
 * Tablebase positions are at a game's end (pieces only leave the board), so
 * a stored game whose last position has too many pieces for the tables is
 * not decoded at all when nothing else is asked for (validation is, unless
 * invalid_games: keep: every stored game is then decoded once).
 *
 * Games upstream's Validate refuses (format/lc0/rescore/rescore.h) are dropped, as
 * upstream's stage drops them, unless invalid_games: keep: counted
 * (dropped_invalid), logged with their file (the first few, then a line a
 * minute), marked bad on their source so that the pool drops them for good
 * (as the validator's refusals: they leave the window's and the anchor's
 * counts) and freed; a stored game's patch then says "dropped", so that a
 * use already drawn drops it without rescoring it again. The settings and
 * the records path are stages/chunk_rescorer_settings.h's, shared with
 * `lcmon chunks rescore`.
 *
 * A patch starts with a key of the settings that made it. A chunk whose
 * kept patch has another key (two rescorers with other settings on one
 * store) gets a patch of its own on every use, which costs a whole decode
 * each time (said once in the log): give each its own pool, or the same
 * settings. docs/pipelines.md "chunk_rescorer" has the rules.
 */
#include "stages/stage.h"

#include "core/log.h"
#include "core/rng.h"
#include "stages/chunk_rescorer_settings.h"
#include "format/lc0/chunk.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/frame.h"
#include "format/lc0/rescore/input_format_convert.h"
#include "format/lc0/packed_chunk.h"
#include "format/lc0/rescore/rescore.h"
#include "format/lc0/rescore/rescore_patch.h"
#include "format/lc0/rescore/tablebase.h"
#include "stages/items.h"
#include "stages/short_term.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rescorer {
    lc_tablebases *tb;
    lc_rescore_config rc;
    uint64_t key;   /* of the settings, for the patches */
    bool rescore;   /* lc_rescore_game has work (lc_rescorer_has_work) */
    bool tempering; /* every policy changes (lc_rescorer_tempers) */
    bool remember;  /* remember_games: what a use of the pool's records found, kept */
    bool as_is_ok;  /* no tempering, no deblunder: "nothing changes" is told exactly */
    unsigned max_pieces;
    atomic_bool warned_other, warned_twice;
    lc_log_limit drop_log; /* games dropped: the first few, then a line a minute */
    atomic_uint_fast64_t n_chunks, n_games, n_positions, n_probed, n_hits, n_misses,
        n_games_rescored, n_results_changed, n_sharpened, n_blunders, n_deblundered;
    atomic_uint_fast64_t n_second_pass, n_dtz_proofs, n_plies_left, n_boosted, n_dropped;
    atomic_uint_fast64_t n_converted, n_not_version, n_not_format, n_st;
    atomic_uint_fast64_t n_patches_made, n_patches_reused, n_patches_other, n_not_decoded;
    atomic_uint_fast64_t n_from_packed; /* patches made from the packed form: no file */
    atomic_uint_fast64_t n_known_as_is, n_known_valid; /* uses a memo word spared */
} rescorer;

static int rescorer_start(lc_stage *s, lc_error *err)
{
    rescorer *r = s->priv;
    const lc_rescorer_config *c = s->config;
    r->key = lc_rescorer_key(c);
    char line[512];
    if ((c->gaviota_paths || c->syzygy_paths) && !r->tb) {
        lc_problems ps = LC_PROBLEMS_INIT;
        lc_rescorer_preflight(c, &ps);
        int rc = lc_problems_to_error(&ps, err);
        lc_problems_fini(&ps);
        if (rc == 0)
            rc = lc_tablebases_open(c->syzygy_paths, c->gaviota_paths, &r->tb, err);
        if (rc != 0)
            return rc;
    }
    lc_rescorer_rescore_config(c, r->tb, &r->rc);
    if (r->tb) {
        r->max_pieces = lc_tablebases_max_pieces(r->tb);
        lc_tablebases_describe(r->tb, line, sizeof line);
    } else {
        snprintf(line, sizeof line, "none configured");
    }
    LC_INFO("%s: tablebases: %s (this build reads Gaviota: %s, Syzygy: %s)", s->name, line,
            lc_tablebases_have_gaviota() ? "yes" : "no",
            lc_tablebases_have_syzygy() ? "yes" : "no");
    /* Tempering shapes every position's policy, tables or not, as
     * upstream's; validation (invalid_games: drop) reads every game. */
    r->tempering = lc_rescorer_tempers(&r->rc);
    r->rescore = lc_rescorer_has_work(&r->rc);
    r->remember = c->remember_games;
    r->as_is_ok = !r->tempering && isnan(r->rc.deblunder_threshold);
    r->drop_log = (lc_log_limit)LC_LOG_LIMIT(5, 60);
    return 0;
}

/* After the workers are joined (a class's stop comes before: they may
 * still be probing then). */
static void rescorer_fini(lc_stage *s)
{
    rescorer *r = s->priv;
    uint64_t rest = lc_log_limit_rest(&r->drop_log);
    if (rest)
        LC_WARN("%s: %llu more games dropped as invalid since the last line", s->name,
                (unsigned long long)rest);
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
    atomic_fetch_add(&r->n_second_pass, k->second_pass);
    atomic_fetch_add(&r->n_dtz_proofs, k->dtz_proofs);
    atomic_fetch_add(&r->n_plies_left, k->plies_left_changed);
    atomic_fetch_add(&r->n_boosted, k->policies_boosted);
}

/* The chunk's file and member, for the log. */
static void chunk_name(const lc_chunk_item *c, char *buf, size_t size)
{
    if (!c->source)
        snprintf(buf, size, "a chunk without its file (pool index %llu)",
                 (unsigned long long)c->global_index);
    else
        snprintf(buf, size, "%s member '%s'", lc_chunk_source_path(c->source),
                 lc_chunk_source_chunk_name(c->source, c->member));
}

/* A game upstream's Validate refuses: counted, logged (the first few,
 * then a line a minute), marked bad on its source so that the pool drops
 * it for good (as a chunk the validator refuses: it leaves the window's
 * and the anchor's counts) and freed. why: the reason, or NULL when a
 * patch kept with the game said so. */
static void drop_invalid(lc_stage *s, lc_chunk_item *c, const char *why)
{
    rescorer *r = s->priv;
    atomic_fetch_add(&r->n_dropped, 1);
    char name[LC_LOG_LINE_MAX / 2];
    chunk_name(c, name, sizeof name);
    const char *reason = why && *why ? why : "refused at an earlier use";
    uint64_t held;
    switch (lc_log_limit_event(&r->drop_log, &held)) {
    case LC_LOG_LIMIT_FULL:
        LC_WARN("%s: dropping %s: %s (upstream's Validate refuses it; invalid_games: keep "
                "passes such games on)",
                s->name, name, reason);
        break;
    case LC_LOG_LIMIT_SUMMARY:
        LC_WARN("%s: %llu more games dropped as invalid in the last minute, the last %s: %s",
                s->name, (unsigned long long)held, name, reason);
        break;
    default:
        break;
    }
    if (c->source)
        lc_chunk_source_mark_bad(c->source, c->member);
    lc_item_chunk.dispose(c);
}

/* A game that did not convert (left as it was). */
static void conversion_failed(lc_stage *s, const lc_chunk_item *c, const char *error)
{
    char name[LC_LOG_LINE_MAX / 2];
    chunk_name(c, name, sizeof name);
    LC_WARN("%s: %s: %s", s->name, name, error);
}

/* A conversion's outcome, counted (and a failure logged). */
static void count_conversion(lc_stage *s, int what, const lc_chunk_item *c, const char *error)
{
    rescorer *r = s->priv;
    if (what == LC_CONVERT_DONE || what == LC_CONVERT_FAILED)
        atomic_fetch_add(&r->n_converted, 1);
    else if (what == LC_CONVERT_NOT_VERSION)
        atomic_fetch_add(&r->n_not_version, 1);
    else if (what == LC_CONVERT_NOT_FORMAT)
        atomic_fetch_add(&r->n_not_format, 1);
    if (what == LC_CONVERT_FAILED)
        conversion_failed(s, c, error);
}

/*
 * What a use of a game from the pool's records found, kept in its
 * source's memo word (lc_chunk_source_memo) for the next use of the same
 * bytes: a tag (the fingerprint of the gzip bytes the records came from,
 * the settings' key, the version and the count of records, mixed; its two
 * low bits cleared) and one of these. A word whose tag is not the use's
 * (another file's bytes, another rescorer's settings) says nothing.
 */
enum {
    MEMO_NONE = 0,
    MEMO_VALID = 1, /* Validate took the game (invalid_games: drop): not checked again */
    MEMO_AS_IS = 2, /* kept, and nothing changed a bit of it: passed on as it comes */
};
#define MEMO_STATE 3u

/* The use's tag; 0: nothing to remember it by (remember_games: false, a
 * chunk without its source, records whose bytes were not fingerprinted). */
static uint64_t memo_tag(const rescorer *r, const lc_chunk_item *c)
{
    if (!r->remember || !c->content || !c->source)
        return 0;
    uint64_t shape = (uint64_t)c->n_records << 32 | c->version;
    return lc_mix64(c->content ^ lc_mix64(r->key ^ shape)) & ~(uint64_t)MEMO_STATE;
}

/* What the word of c's chunk says for tag. */
static unsigned memo_known(const lc_chunk_item *c, uint64_t tag)
{
    uint64_t w = tag ? lc_chunk_source_memo(c->source, c->member) : 0;
    return (w & ~(uint64_t)MEMO_STATE) == tag ? (unsigned)(w & MEMO_STATE) : MEMO_NONE;
}

/* Keep what this use found (g) for the next, when it is news. */
static void memo_note(const rescorer *r, lc_chunk_item *c, uint64_t tag, unsigned known,
                      const lc_rescorer_game *g)
{
    unsigned state = MEMO_NONE;
    if (g->result == LC_RESCORE_KEPT) {
        if (r->as_is_ok && g->counts.games_changed == 0 && g->convert == LC_CONVERT_NONE &&
            g->st == 0)
            state = MEMO_AS_IS;
        else if (!r->rc.keep_invalid)
            state = MEMO_VALID;
    }
    if (tag && state != MEMO_NONE && state != known)
        lc_chunk_source_set_memo(c->source, c->member, tag | state);
}

/* Records from the pool: rescored, converted and given their targets in
 * place (the V7 records replacing the V6 ones). false: dropped, the
 * reason in why. A game its memo word knows is passed on as it comes, or
 * rescored without Validate's checks. */
static bool rescore_records(lc_stage *s, lc_chunk_item *c, lc_st_scratch *st, char *why,
                            size_t why_size)
{
    rescorer *r = s->priv;
    uint64_t tag = memo_tag(r, c);
    unsigned known = memo_known(c, tag);
    if (known == MEMO_AS_IS) { /* counted as lc_rescore_game counts a game it looks at */
        if (r->rescore) {
            atomic_fetch_add(&r->n_games, 1);
            atomic_fetch_add(&r->n_positions, c->n_records);
        }
        atomic_fetch_add(&r->n_known_as_is, 1);
        return true;
    }
    lc_rescorer_game g;
    int rc = lc_rescorer_records(s->config, &r->rc, &c->data, &c->version, &c->record_size,
                                 c->n_records, known == MEMO_VALID, st, &g);
    add_counts(r, &g.counts);
    atomic_fetch_add(&r->n_known_valid, known == MEMO_VALID);
    if (rc == LC_RESCORE_DROPPED) {
        snprintf(why, why_size, "%s", g.why);
        return false;
    }
    count_conversion(s, g.convert, c, g.convert_error);
    atomic_fetch_add(&r->n_st, g.st);
    memo_note(r, c, tag, known, &g);
    return true;
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
    const lc_rescorer_config *cfg = s->config;
    uint32_t n = c->n_records, version = c->version;
    if (!n)
        return false;
    /* Validation (invalid_games: drop) reads every game once. */
    if (!r->rc.keep_invalid || (cfg->threshold_given && version >= 6) || r->tempering)
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
 * their targets like the pool's records. A dropped game's patch says so
 * (the reason in why). NULL when neither gives the records. */
static float *make_patch(lc_stage *s, work *w, const lc_chunk_item *c, char *why, size_t why_size)
{
    rescorer *r = s->priv;
    const lc_rescorer_config *cfg = s->config;
    int what = LC_CONVERT_NONE;
    if (!stored_has_work(s, w, c)) {
        if (cfg->new_input_format && c->version < 5) { /* counted: V3 and V4 are not converted */
            lc_rescorer_target_format(cfg, c->version, 1, &what);
            count_conversion(s, what, c, NULL);
        }
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
    int result = LC_RESCORE_KEPT;
    if (r->rescore) {
        lc_rescore_counts k = {0};
        result = lc_rescore_game(&r->rc, recs, size, n, version, &k, why, why_size);
        add_counts(r, &k);
    }
    float *patch = NULL;
    if (result == LC_RESCORE_DROPPED) {
        patch = lc_rescore_patch_dropped(r->key, n);
    } else {
        for (uint32_t i = 0; i < n; i++)
            lc_frame_from_record(recs + (size_t)i * size, version, &w->after[i], NULL);
        uint32_t to = lc_rescorer_target_format(cfg, c->version, w->before[0].input_format, &what);
        count_conversion(s, what, c, NULL);
        const float *st = NULL;
        if (cfg->st_targets == LC_ST_COMPUTE && c->version == 6) {
            /* After the conversion, as for records: the moves in its frame. */
            lc_error err;
            lc_error_clear(&err);
            if (to && lc_rescorer_convert(recs, size, n, version, to, &err) != 0)
                conversion_failed(s, c, err.msg);
            for (uint32_t i = 0; i < n; i++) {
                const uint8_t *rec = recs + (size_t)i * size;
                LC_REC_GET(rec, root_q, w->rq[i]);
                LC_REC_GET(rec, root_d, w->rd[i]);
                LC_REC_GET(rec, played_idx, w->played[i]);
            }
            lc_st_rows(w->rq, w->rd, w->played, n, cfg->st_theta, cfg->st_math, w->st_rows, &w->st);
            atomic_fetch_add(&r->n_st, n);
            st = w->st_rows;
        }
        patch = lc_rescore_patch_make(r->key, to, w->before, w->after, n, st, NULL);
        for (uint32_t i = 0; i < n; i++)
            lc_frame_fini(&w->after[i]);
    }
    for (uint32_t i = 0; i < n; i++)
        lc_frame_fini(&w->before[i]);
    lc_chunk_data_fini(&d);
    return patch;
}

/* A patch worth handing on: NULL for none or an empty one. */
#define USABLE(patch) ((patch) && !lc_rescore_patch_is_empty(patch) ? (patch) : NULL)

/* A stored chunk: its patch, kept with it on its first use (or, kept with
 * other settings, its own for this use). false: the game is dropped (why
 * says why; "" when a patch kept with it said so). */
static bool rescore_packed(lc_stage *s, work *w, lc_chunk_item *c, char *why, size_t why_size)
{
    rescorer *r = s->priv;
    why[0] = '\0';
    if (c->patch) {
        if (!atomic_exchange(&r->warned_twice, true))
            LC_WARN("%s: a chunk rescored before: a chain has one chunk_rescorer; it is passed "
                    "on as it is",
                    s->name);
        return true;
    }
    const float *kept = lc_packed_chunk_aux(c->packed, LC_AUX_RESCORE);
    if (kept && lc_rescore_patch_key(kept) == r->key) {
        atomic_fetch_add(&r->n_patches_reused, 1);
        c->patch = USABLE(kept);
        return !lc_rescore_patch_is_dropped(kept);
    }
    float *mine = make_patch(s, w, c, why, why_size);
    if (!mine) { /* the unpacker reports the position that does not decode */
        atomic_fetch_add(&r->n_not_decoded, 1);
        return true;
    }
    if (!kept) {
        kept = lc_packed_chunk_attach_aux(c->packed, LC_AUX_RESCORE, mine);
        /* ours, or a same-keyed one another thread attached first (ours freed) */
        atomic_fetch_add(kept == mine ? &r->n_patches_made : &r->n_patches_reused, 1);
        if (lc_rescore_patch_key(kept) == r->key) {
            c->patch = USABLE(kept);
            return !lc_rescore_patch_is_dropped(kept);
        }
        mine = make_patch(s, w, c, why, why_size); /* another rescorer's came first: ours again */
        if (!mine)
            return true;
    }
    atomic_fetch_add(&r->n_patches_other, 1);
    if (!atomic_exchange(&r->warned_other, true))
        LC_WARN("%s: the pool's store keeps chunks rescored with other settings (another "
                "chunk_rescorer): this one rescores each of them on every use, which is slow "
                "(give each rescorer its own pool, or the same settings)",
                s->name);
    bool dropped = lc_rescore_patch_is_dropped(mine);
    if (dropped || !USABLE(mine)) {
        free(mine);
        return !dropped;
    }
    c->patch = mine;
    c->flags |= LC_ITEM_OWN_PATCH;
    return true;
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
    lc_stage_inbox_in_turns(&ib, s, &ob); /* deterministic mode: the input's order */
    lc_chunk_item c;
    bool open = true;
    while (open && lc_run_state_check(&s->run, meter) &&
           lc_stage_inbox_get(&ib, &c, &ob, meter) == 0) {
        char why[256] = "";
        bool keep = c.packed ? rescore_packed(s, &w, &c, why, sizeof why)
                             : !c.data || rescore_records(s, &c, &st, why, sizeof why);
        if (!keep) { /* counted in: chunks = passed on + dropped_invalid */
            drop_invalid(s, &c, why);
            atomic_fetch_add(&r->n_chunks, 1);
            continue;
        }
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

static const lc_metric_info rescorer_metrics[] = {
    {"chunks", "chunks", LC_SHOW_RATE, 0, "chunks/s in", LC_METRIC_AT(rescorer, n_chunks)},
    {"games", "games", LC_METRIC_AT(rescorer, n_games)},
    {"positions", "positions", LC_METRIC_AT(rescorer, n_positions)},
    {"probed", "positions", LC_METRIC_AT(rescorer, n_probed)},
    /* hits / (hits + misses): the share of the probes a table answered. */
    {"hits", "positions", LC_SHOW_PERCENT, LC_SHOW_NONZERO, "tablebase hits", "hits", "misses",
     LC_METRIC_AT(rescorer, n_hits)},
    {"misses", "positions", LC_METRIC_AT(rescorer, n_misses)},
    {"games_rescored", "games", LC_SHOW_TOTAL, LC_SHOW_NONZERO, "games rescored", "rescored",
     LC_METRIC_AT(rescorer, n_games_rescored)},
    {"results_changed", "positions", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
     "results changed", "", LC_METRIC_AT(rescorer, n_results_changed)},
    {"policies_sharpened", "positions", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
     "policies sharpened", "", LC_METRIC_AT(rescorer, n_sharpened)},
    {"blunders", "positions", LC_SHOW_TOTAL, LC_SHOW_NONZERO, "blunders", "blunders",
     LC_METRIC_AT(rescorer, n_blunders)},
    {"deblundered", "positions", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "deblundered", "",
     LC_METRIC_AT(rescorer, n_deblundered)},
    {"second_pass", "positions", LC_METRIC_AT(rescorer, n_second_pass)},
    {"dtz_proofs", "positions", LC_METRIC_AT(rescorer, n_dtz_proofs)},
    {"plies_left_changed", "positions", LC_METRIC_AT(rescorer, n_plies_left)},
    {"policies_boosted", "positions", LC_METRIC_AT(rescorer, n_boosted)},
    /* Upstream's Validate refused them: dropped, each use counted. */
    {"dropped_invalid", "chunks", LC_SHOW_TOTAL, LC_SHOW_WARN | LC_SHOW_NONZERO,
     "dropped (invalid games)", "dropped", LC_METRIC_AT(rescorer, n_dropped)},
    {"converted", "chunks", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "converted", "",
     LC_METRIC_AT(rescorer, n_converted)},
    {"not_converted_version", "chunks", LC_SHOW_TOTAL, LC_SHOW_WARN | LC_SHOW_NONZERO,
     "not converted (V3/V4)", "not converted", LC_METRIC_AT(rescorer, n_not_version)},
    {"not_converted_format", "chunks", LC_SHOW_TOTAL, LC_SHOW_WARN | LC_SHOW_NONZERO,
     "not converted (format)", "not converted", LC_METRIC_AT(rescorer, n_not_format)},
    {"st_targets", "positions", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "st targets computed",
     "", LC_METRIC_AT(rescorer, n_st)},
    {"patches_made", "chunks", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "stored rescored", "",
     LC_METRIC_AT(rescorer, n_patches_made)},
    {"patches_reused", "chunks", LC_METRIC_AT(rescorer, n_patches_reused)},
    {"patches_other_settings", "chunks", LC_SHOW_TOTAL, LC_SHOW_WARN | LC_SHOW_NONZERO,
     "rescored again (other settings in the store)", "again",
     LC_METRIC_AT(rescorer, n_patches_other)},
    {"not_decoded", "chunks", LC_METRIC_AT(rescorer, n_not_decoded)},
    {"patches_from_store", "chunks", LC_METRIC_AT(rescorer, n_from_packed)},
    /* Uses of the pool's records a game's memo word spared (remember_games). */
    {"known_as_is", "chunks", LC_METRIC_AT(rescorer, n_known_as_is)},
    {"known_valid", "chunks", LC_METRIC_AT(rescorer, n_known_valid)},
    {0},
};

static unsigned rescorer_threads(const void *config)
{
    return ((const lc_rescorer_config *)config)->threads;
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
    .settings = {lc_rescorer_rows, sizeof(lc_rescorer_config)},
    .config_check = lc_rescorer_config_check,
    .preflight = lc_rescorer_preflight,
    .start = rescorer_start,
    .fini = rescorer_fini,
    .metrics = rescorer_metrics,
};
