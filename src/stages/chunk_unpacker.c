/*
 * chunk_unpacker: turns chunks (games) into frames (positions).
 *
 * Which positions. A chunk of n positions drawn for the k-th time (k is the
 * chunk's use count from the pool, from 0) gives a subset of its positions.
 * Successive uses take successive stretches of one fixed order of the
 * positions, so they are disjoint until the order is used up, and every
 * position comes out once before any comes out twice.
 *
 * The positions are put in an order fixed by (run seed, global index): a
 * pseudo-random permutation, or file order when `shuffle` is off. Think of
 * that order repeated forever as one endless stream in which stream place j
 * holds the position of rank j mod n. Each use takes the next stretch of the
 * stream:
 *
 *   - with a sampling rate p, use k takes stream places [F(k), F(k+1)) with
 *       F(k) = floor(n * (k*P + phase) / 2^32),
 *     where P = ceil(p * 2^32) is p in 32-bit fixed point (1 <= P <= 2^32)
 *     and phase is a value in [0, 2^32) drawn with the permutation (0 when
 *     `shuffle` is off, so that use 0 starts at the first position);
 *   - with positions_per_chunk K, use k takes places [k*K, k*K + min(K, n)).
 *
 * What follows, for any p in (0, 1]:
 *   - a use emits floor(p*n) or ceil(p*n) positions (p read as P / 2^32), and
 *     over k uses exactly F(k) - F(0), so the long-run rate is p. With a
 *     uniform phase the expected count of every use, the first included, is
 *     p*n (to within n / 2^32); a fixed phase would bias the first uses down
 *     by up to one position;
 *   - a use never repeats a position (it spans at most n places);
 *   - successive uses are disjoint for as long as their stretches fit in n
 *     places, and any n consecutive places hold every position exactly once.
 *     So over one pass of ceil(1/p) uses (exactly ceil(2^32 / P)) every
 *     position comes out at least once, and the only repeats are the last
 *     use's spill into the next round of the order. When 1/p is a whole
 *     number m the pass is exactly one round and the m uses cut the order
 *     into m blocks that repeat round after round (for m a power of two
 *     exactly; otherwise P is rounded up by less than 2^-32, so the blocks
 *     move by one place only about once every 2^32 / (m*n) rounds). For
 *     p = 0.7 and n = 10 (phase 0) the uses take ranks 0-6, then 7-9 and
 *     0-3, then 4-9 and 0, and so on: 7 each, in order, around. (The
 *     previous scheme took block k mod round(1/p) of round(1/p) blocks, a
 *     rate of 1/round(1/p): p = 0.7 emitted everything, p = 0.4 a third.)
 * The order and the phase depend only on the run seed and the chunk's global
 * index, never on thread timing, so runs are reproducible. All of it is
 * integer arithmetic: no rounding drift even after 2^32 uses.
 *
 * The positions come from the chunk's records, or, for a chunk from the
 * pool's store, from its packed form: the same frames bit for bit, and only
 * the blocks that hold the positions picked are decoded (each once per use,
 * in any order). The pick is the same either way.
 *
 * Short-term targets. With `st_targets: compute` (the default), a V6
 * chunk's positions get q_st, d_st, opp_played_idx and next_played_idx
 * computed over the game (format/lc0/st_targets.h, stages/short_term.h) from
 * the first position picked (the even one at or before it) to the end, the
 * only ones they depend on, in float as upstream (`st_math: double`:
 * lcmon's earlier double sum); V7 chunks keep their own, older versions
 * have none. A stored chunk's targets
 * are computed once, decoding it whole, and kept with its packed form, so
 * that later uses cost nothing more. A chunk_rescorer above that computes
 * them (its own st_targets) hands on V7 records, or a patch that carries
 * them, and they are not computed here again. `st_targets: keep` passes what the
 * records hold: for V6, q_st is the 4 bytes before the record's end read
 * as a float (0.0 in lc0's data, which leaves them zero) and d_st 0.0
 * (upstream's value; V6 has none).
 *
 * Rescored stored chunks. A chunk from the store that passed a
 * chunk_rescorer carries its patch (format/lc0/rescore/rescore_patch.h): each
 * position decoded gets the rescored results and policy, the input format
 * conversion and the short-term targets the patch holds.
 *
 * Diff focus (format/lc0/diff_focus.h, docs/pipelines.md). `diff_focus`
 * keeps each picked position with the legacy chunkparser's probability,
 * drawn from a hash of (seed, global index, use, position), before the
 * position is decoded. `position_weights` (with positions_per_chunk)
 * instead draws the use's positions in proportion to the current loader's
 * weights. A stored chunk's scores (keep probabilities or weights) are
 * computed once, decoding it whole, and kept with its packed form.
 *
 * N worker threads; each converts records to compact frames and emits them.
 */
#include "stages/stage.h"

#include "core/log.h"
#include "core/rng.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/frame.h"
#include "format/lc0/packed_chunk.h"
#include "format/lc0/rescore/rescore_patch.h"
#include "stages/items.h"
#include "stages/short_term.h"
#include "stages/weights.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* position_weights draws at most this many positions a use (the keys of
 * the best are kept on the stack). */
#define LC_WEIGHTED_K_MAX 1024

/* 1.0 in the 32-bit fixed point of sampling rates and phases. */
#define LC_UNPACK_ONE 4294967296.0
#define LC_UNPACK_SHIFT 32
#define LC_UNPACK_MASK 0xffffffffu

typedef struct unpacker_config {
    double rate;        /* sampling_rate; not used with positions_per_chunk */
    uint64_t per_chunk; /* positions_per_chunk; 0: the rate is used */
    unsigned threads;
    bool shuffle;
    int st_targets; /* LC_ST_KEEP or LC_ST_COMPUTE */
    double st_theta;
    int st_math;                      /* LC_ST_FLOAT or LC_ST_DOUBLE */
    lc_diff_focus_config *diff_focus; /* the legacy keep probability; NULL: off */
    lc_weights_config *weights;       /* position_weights; NULL: off */
    bool rate_given, per_chunk_given, st_theta_given, st_math_given;
    uint64_t rate_fixed; /* ceil(rate * 2^32), in [1, 2^32]; 0 with positions_per_chunk */
} unpacker_config;

static const lc_setting unpacker_settings[] = {
    {.key = "sampling_rate",
     .type = LC_SETTING_REAL,
     LC_SETTING_AT(unpacker_config, rate),
     LC_SETTING_GIVEN(unpacker_config, rate_given),
     .def = "1.0",
     .range = LC_RANGE_MIN | LC_RANGE_MIN_OPEN | LC_RANGE_MAX,
     .min = 0,
     .max = 1,
     .meaning = "the share of a chunk's positions each use emits (or positions_per_chunk)",
     .example = "0.03125"},
    {.key = "positions_per_chunk",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(unpacker_config, per_chunk),
     LC_SETTING_GIVEN(unpacker_config, per_chunk_given),
     .off = "off: sampling_rate",
     LC_SETTING_RANGE(1, 100000),
     .meaning = "positions each use of a chunk emits, instead of a rate",
     .example = "1"},
    LC_SETTING_THREADS(unpacker_config, threads, "1", 256),
    LC_SETTING_ROW(unpacker_config, shuffle, "shuffle", LC_SETTING_BOOL, "true",
                   "a chunk's positions in an order drawn from the seed (false: file order)",
                   "false"),
    LC_SETTING_ST_TARGETS(unpacker_config, st_targets, "compute",
                          "compute V6 games' short-term targets as upstream does, or keep what "
                          "the records hold (V6: d_st 0.0, upstream's value)"),
    LC_SETTING_ST_THETA(unpacker_config, st_theta, st_theta_given),
    LC_SETTING_ST_MATH(unpacker_config, st_math, st_math_given),
    {.key = "diff_focus",
     .type = LC_SETTING_BLOCK,
     LC_SETTING_AT(unpacker_config, diff_focus),
     .off = "off",
     .block = &lc_diff_focus_settings,
     .meaning = "keep positions with the legacy chunkparser's probability",
     .example = "{min: 0.5, slope: 2}"},
    {.key = "position_weights",
     .type = LC_SETTING_BLOCK,
     LC_SETTING_AT(unpacker_config, weights),
     .off = "off",
     .block = &lc_weights_settings,
     .meaning = "draw positions_per_chunk positions by weight",
     .example = "{alpha: 1, gamma: 2}"},
    {0},
};

static int unpacker_config_check(void *p, lc_problems *ps)
{
    unpacker_config *c = p;
    int rc = 0;
    if (c->rate_given && c->per_chunk_given)
        rc = lc_problem_add(ps, "sampling_rate",
                            "give either sampling_rate or positions_per_chunk, not both");
    if (lc_diff_focus_config_check(c->diff_focus, "diff_focus", ps) != 0)
        rc = LC_ECONFIG;
    if (lc_weights_config_check(c->weights, "position_weights", ps) != 0)
        rc = LC_ECONFIG;
    if (c->weights && c->diff_focus)
        rc = lc_problem_add(ps, "diff_focus",
                            "give diff_focus (the legacy keep probability) or position_weights "
                            "(draws by weight), not both");
    if (c->weights && c->per_chunk > LC_WEIGHTED_K_MAX)
        rc = lc_problem_add(ps, "positions_per_chunk",
                            "%llu is above %d, the most position_weights draws a use",
                            (unsigned long long)c->per_chunk, LC_WEIGHTED_K_MAX);
    if (c->weights && !c->per_chunk_given)
        rc = lc_problem_add(ps, "position_weights",
                            "draws positions_per_chunk positions by weight (add "
                            "positions_per_chunk, or use diff_focus with a sampling rate)");
    if (c->st_theta_given && c->st_targets != LC_ST_COMPUTE)
        rc = lc_problem_add(ps, "st_theta",
                            "only used with st_targets: compute (add it, or remove st_theta)");
    if (c->st_math_given && c->st_targets != LC_ST_COMPUTE)
        rc = lc_problem_add(ps, "st_math",
                            "only used with st_targets: compute (add it, or remove st_math)");
    if (rc || c->per_chunk_given)
        return rc;
    /* Exact: scaling by a power of two loses nothing, and ceil keeps
     * ceil(1/p) uses enough to cover a chunk (ceil(1/p) * P >= 2^32). */
    double f = ceil(c->rate * LC_UNPACK_ONE);
    c->rate_fixed = f < 1 ? 1 : (f > LC_UNPACK_ONE ? (uint64_t)LC_UNPACK_ONE : (uint64_t)f);
    return 0;
}

typedef struct unpacker {
    atomic_uint_fast64_t n_chunks, n_frames, n_bad_records, n_st;
    atomic_uint_fast64_t n_focus_kept, n_focus_skipped; /* diff_focus */
    atomic_uint_fast64_t n_weighted;                    /* positions drawn by weight */
    atomic_uint_fast64_t n_zero_weight; /* chunks with no position of weight above 0 */
} unpacker;

/* Streams of the diff-focus draws, xored into the seed ("dfoc", "wpos"). */
#define FOCUS_TAG 0x64666f63u
#define WEIGHT_TAG 0x77706f73u

/* A uniform double in [0, 1) that depends only on its arguments. */
static double unit_hash(uint64_t seed, uint64_t global, uint64_t use, uint64_t pos)
{
    uint64_t h = lc_mix64(lc_mix64(seed) ^ lc_mix64(global) ^ lc_mix64(use << 32 ^ pos));
    return lc_unit(h);
}

/*
 * The stretch of the endless order that use k of a chunk of n positions takes
 * (see the top of the file): its first rank in [0, n) and its length (at
 * most n). n > 0.
 */
static void rate_stretch(uint64_t rate_fixed, uint64_t phase, uint32_t use, uint32_t n,
                         uint32_t *first, uint32_t *len)
{
    /* F(k) mod n only needs the fractional part r of (k*P + phase) / 2^32:
     * F(k) = n*q + floor(n*r / 2^32) with floor(n*r / 2^32) < n. The low 32
     * bits of k*P + phase are exact in uint64 arithmetic (wrapping is fine:
     * only the low bits are used). */
    uint64_t r = ((uint64_t)use * rate_fixed + phase) & LC_UNPACK_MASK;
    uint64_t start = ((uint64_t)n * r) >> LC_UNPACK_SHIFT;
    /* F(k+1) - F(k): step r by P; the carry (0 or 1, as P <= 2^32) adds a
     * whole round of n places. */
    uint64_t next = r + rate_fixed;
    uint64_t carry = next >> LC_UNPACK_SHIFT;
    uint64_t end = carry * n + (((uint64_t)n * (next & LC_UNPACK_MASK)) >> LC_UNPACK_SHIFT);
    *first = (uint32_t)start;
    *len = (uint32_t)(end - start); /* <= n: with a carry, next's fraction is <= r's */
}

/* Positions of chunk `c` for this use, in emission order, into out[]; returns
 * how many. `order` is scratch space of n entries. */
static uint32_t pick_positions(const unpacker_config *cfg, uint64_t seed, const lc_chunk_item *c,
                               uint32_t *order, uint32_t *out)
{
    uint32_t n = c->n_records;
    if (n == 0)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    uint64_t phase = 0;
    if (cfg->shuffle) {
        lc_rng rng;
        lc_rng_seed(&rng, seed, c->global_index);
        phase = lc_rng_next(&rng) & LC_UNPACK_MASK;
        for (uint32_t i = n - 1; i > 0; i--) {
            uint32_t j = (uint32_t)lc_rng_below(&rng, (uint64_t)i + 1);
            uint32_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    uint32_t first, len;
    if (cfg->per_chunk) {
        first = (uint32_t)(((uint64_t)c->use_count * cfg->per_chunk) % n);
        len = cfg->per_chunk < n ? (uint32_t)cfg->per_chunk : n;
    } else {
        rate_stretch(cfg->rate_fixed, phase, c->use_count, n, &first, &len);
    }
    uint32_t rank = first;
    for (uint32_t j = 0; j < len; j++) {
        out[j] = order[rank];
        if (++rank == n)
            rank = 0;
    }
    return len;
}

/* The diff-focus score of position (best_q, orig_q, policy_kld): its
 * weight (position_weights) or its keep probability (diff_focus). */
static float focus_score(const unpacker_config *cfg, float best_q, float orig_q, float kld)
{
    if (cfg->weights)
        return (float)lc_position_weight(best_q, orig_q, kld, &cfg->weights->p);
    const lc_diff_focus_config *df = cfg->diff_focus;
    return (float)lc_diff_keep_probability(best_q, orig_q, kld, df->min, df->slope, df->q_weight,
                                           df->pol_scale);
}

/* Position i's score, from chunk c's records. */
static float record_score(const unpacker_config *cfg, const lc_chunk_item *c, uint32_t i)
{
    float best_q, orig_q, kld;
    lc_record_focus_fields(c->data + (size_t)i * c->record_size, c->version, &best_q, &orig_q,
                           &kld);
    return focus_score(cfg, best_q, orig_q, kld);
}

/* The diff-focus score of every position of chunk c: from the records
 * (into scratch), or from the stored form, computed there once (decoding
 * the chunk whole) and kept with the packed chunk, so that later uses
 * decide before decoding. NULL when a stored position does not decode. */
static const float *chunk_scores(const unpacker_config *cfg, const lc_chunk_item *c,
                                 lc_unpack_ctx **uctx, float **scratch, size_t *cap)
{
    uint32_t n = c->n_records;
    if (c->packed) {
        const float *w = lc_packed_chunk_aux(c->packed, LC_AUX_FOCUS);
        if (w)
            return w;
    } else if (n > *cap) {
        *cap = n;
        *scratch = lc_xrealloc(*scratch, n * sizeof **scratch);
    }
    float *w = c->packed ? lc_xmalloc((n ? n : 1) * sizeof *w) : *scratch;
    for (uint32_t i = 0; i < n; i++) {
        if (!c->packed) {
            w[i] = record_score(cfg, c, i);
            continue;
        }
        lc_frame f;
        lc_error err;
        if (!*uctx)
            *uctx = lc_unpack_ctx_new();
        if (lc_packed_chunk_frame(c->packed, *uctx, i, &f, &err) != 0) {
            free(w);
            return NULL;
        }
        w[i] = focus_score(cfg, f.best_q, f.orig_q, f.policy_kld);
        lc_frame_fini(&f);
    }
    return c->packed ? lc_packed_chunk_attach_aux(c->packed, LC_AUX_FOCUS, w) : w;
}

/* positions_per_chunk K drawn in proportion to weight (position_weights),
 * without replacement: each position of weight w > 0 gets the key
 * log(u) / w, u uniform from the use's own generator, and the K largest
 * keys are taken, largest first (Efraimidis and Spirakis: the same as K
 * successive draws each in proportion to weight among the positions left,
 * in a bounded time whatever the weights). Into out; returns how many. */
static uint32_t weighted_picks(const unpacker_config *cfg, uint64_t seed, const lc_chunk_item *c,
                               const float *w, uint32_t *out)
{
    uint32_t n = c->n_records;
    lc_rng rng;
    lc_rng_seed(&rng, lc_mix64(seed ^ WEIGHT_TAG) ^ c->use_count, c->global_index);
    /* One draw per position, in position order, so that the picks depend
     * on nothing else. */
    double best_key[LC_WEIGHTED_K_MAX];
    uint32_t k = 0, want = cfg->per_chunk < LC_WEIGHTED_K_MAX ? (uint32_t)cfg->per_chunk
                                                              : LC_WEIGHTED_K_MAX;
    for (uint32_t i = 0; i < n; i++) {
        double u = lc_rng_double(&rng);
        if (!(w[i] > 0))
            continue;
        double key = log(u > 0 ? u : 0x1p-60) / (double)w[i];
        /* Insert into the top `want`, kept sorted, largest first. */
        uint32_t at = k < want ? k++ : want;
        while (at > 0 && best_key[at - 1] < key) {
            if (at < want) {
                best_key[at] = best_key[at - 1];
                out[at] = out[at - 1];
            }
            at--;
        }
        if (at < want) {
            best_key[at] = key;
            out[at] = i;
        }
    }
    return k;
}

/* Compact one record into *f; false, with the reason in *why, for a record
 * that is not of its chunk's version or whose input format the planes are not
 * defined for (a bad frame, even without a chunk_validator in the chain). */
static bool record_usable(const uint8_t *rec, const lc_chunk_item *c, lc_frame *f, lc_error *err,
                          const char **why)
{
    uint32_t own;
    memcpy(&own, rec, sizeof own);
    if (own != c->version) {
        *why = "a record of another version than its chunk";
        return false;
    }
    if (lc_frame_from_record(rec, c->version, f, err) != 0) {
        *why = "unknown record version";
        return false;
    }
    if (!lc_input_format_known(f->input_format)) {
        lc_frame_fini(f);
        *why = "unknown input format";
        return false;
    }
    return true;
}

/* Position i of chunk c as a frame; false, with the reason in *why, when it
 * cannot be used. */
static bool position_frame(const lc_chunk_item *c, uint32_t i, lc_unpack_ctx **uctx, lc_frame *f,
                           const char **why)
{
    lc_error err;
    if (!c->packed)
        return record_usable(c->data + (size_t)i * c->record_size, c, f, &err, why);
    if (!*uctx)
        *uctx = lc_unpack_ctx_new();
    lc_error_clear(&err);
    if (lc_packed_chunk_frame(c->packed, *uctx, i, f, &err) != 0) {
        LC_ERROR("chunk store: %s", err.msg);
        *why = "its stored form does not decode";
        return false;
    }
    /* The rescorer's changes to the stored game (format/lc0/rescore/rescore_patch.h). */
    if (c->patch && lc_rescore_patch_apply(c->patch, i, f, &err) != 0) {
        LC_ERROR("chunk store: %s", err.msg);
        lc_frame_fini(f);
        *why = "the rescorer's patch does not apply";
        return false;
    }
    return true;
}

/* Diff focus, decided before decoding: true when position `pick` of c is
 * skipped (counted either way). */
static bool focus_skips(lc_stage *s, const lc_chunk_item *c, const float *scores, uint32_t pick)
{
    unpacker *u = s->priv;
    const unpacker_config *cfg = s->config;
    if (!cfg->diff_focus || !(scores || !c->packed))
        return false;
    double keep = scores ? scores[pick] : record_score(cfg, c, pick);
    if (keep < 1 &&
        unit_hash(s->env->seed ^ FOCUS_TAG, c->global_index, c->use_count, pick) >= keep) {
        atomic_fetch_add(&u->n_focus_skipped, 1);
        return true;
    }
    atomic_fetch_add(&u->n_focus_kept, 1);
    return false;
}

static void unpacker_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    unpacker *u = s->priv;
    const unpacker_config *cfg = s->config;
    uint32_t *order = NULL, *picks = NULL;
    size_t cap = 0;
    lc_unpack_ctx *uctx = NULL; /* made at the first stored chunk */
    lc_st_scratch st = {0};
    float *wscratch = NULL;
    size_t wcap = 0;
    /* Chunks and frames move in blocks (stages/stage.h). */
    lc_stage_inbox ib;
    lc_stage_outbox ob;
    lc_stage_inbox_init(&ib, s->input, 8);
    lc_stage_outbox_init(&ob, s, 64);
    lc_stage_inbox_in_turns(&ib, s, &ob); /* deterministic mode: the input's order */
    lc_chunk_item c;
    while (lc_run_state_check(&s->run, meter) && lc_stage_inbox_get(&ib, &c, &ob, meter) == 0) {
        if (c.n_records > cap) {
            cap = c.n_records;
            order = lc_xrealloc(order, cap * sizeof *order);
            picks = lc_xrealloc(picks, cap * sizeof *picks);
        }
        uint32_t k;
        /* Every position's score for a weighted draw, or for diff focus on
         * a stored chunk (kept with it); diff focus on records reads the
         * picks' own fields only. */
        const float *scores = cfg->weights || (cfg->diff_focus && c.packed)
                                  ? chunk_scores(cfg, &c, &uctx, &wscratch, &wcap)
                                  : NULL;
        if (cfg->weights) {
            const float *w = scores;
            k = w ? weighted_picks(cfg, s->env->seed, &c, w, picks) : 0;
            atomic_fetch_add(&u->n_weighted, k);
            if (w && k == 0 && c.n_records)
                atomic_fetch_add(&u->n_zero_weight, 1);
        } else {
            k = pick_positions(cfg, s->env->seed, &c, order, picks);
        }
        st.valid = false;
        if (cfg->st_targets == LC_ST_COMPUTE && !(c.patch && lc_rescore_patch_has_st(c.patch)))
            lc_st_for_picks(cfg->st_theta, cfg->st_math, &c, picks, k, &uctx, &st);
        bool closed = false;
        uint32_t bad = 0, n_frames = 0, n_st = 0;
        const char *why = NULL;
        /* Every frame carries its game's arrival; the first of a fresh draw
         * leads (it goes around the sampler's reservoir). */
        lc_frame_origin origin = {.seq = c.seq, .arrived_ms = c.arrived_ms};
        if (c.flags & LC_ITEM_FRESH)
            origin.flags = LC_ORIGIN_FRESH | LC_ORIGIN_LEAD;
        for (uint32_t j = 0; j < k && !closed; j++) {
            if (focus_skips(s, &c, scores, picks[j]))
                continue;
            /* Made where it stays until its row is written (stages/items.h). */
            lc_frame *f = lc_frame_cell_new();
            if (!position_frame(&c, picks[j], &uctx, f, &why)) {
                lc_frame_cell_free(f);
                bad++;
                continue;
            }
            if (st.valid) {
                uint32_t i = picks[j] - st.first;
                f->q_st = st.q_st[i];
                f->d_st = st.d_st[i];
                f->opp_played_idx = st.opp[i];
                f->next_played_idx = st.next[i];
                n_st++;
            }
            f->origin = origin;
            origin.flags &= ~(uint32_t)LC_ORIGIN_LEAD;
            if (lc_stage_outbox_put(&ob, &f, meter) != 0) /* it disposed of f */
                closed = true;
            else
                n_frames++;
        }
        /* Counted a chunk at a time: no shared count touched a frame. */
        atomic_fetch_add(&u->n_frames, n_frames);
        atomic_fetch_add(&u->n_st, n_st);
        if (bad) {
            atomic_fetch_add(&u->n_bad_records, bad);
            LC_WARN("%s: %s member %u: %u of %u positions dropped (%s)", s->name,
                    c.source ? lc_chunk_source_path(c.source) : "a chunk", c.member, bad, k, why);
        }
        atomic_fetch_add(&u->n_chunks, 1);
        lc_item_chunk.dispose(&c);
        if (closed)
            break;
    }
    lc_stage_inbox_fini(&ib);
    if (!lc_run_state_stopping(&s->run))
        lc_stage_outbox_flush(&ob, meter);
    lc_stage_outbox_fini(&ob);
    lc_unpack_ctx_free(uctx);
    lc_st_scratch_fini(&st);
    free(wscratch);
    free(order);
    free(picks);
}

#define COUNT_AT(field) LC_METRIC_AT(unpacker, field)
static const lc_metric_info unpacker_metrics[] = {
    {"chunks", "chunks", LC_SHOW_RATE, 0, "chunks/s in", COUNT_AT(n_chunks)},
    {"frames", "frames", COUNT_AT(n_frames)},
    {"bad_records", "records", .kind = LC_METRIC_BAD, COUNT_AT(n_bad_records)},
    {"st_targets", "frames", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "st targets computed",
     "", COUNT_AT(n_st)},
    {"focus_kept", "frames", LC_SHOW_TOTAL, LC_SHOW_NONZERO, "diff focus kept", "kept",
     COUNT_AT(n_focus_kept)},
    {"focus_skipped", "frames", LC_SHOW_PERCENT, LC_SHOW_NONZERO, "skipped", "skipped",
     "focus_kept", COUNT_AT(n_focus_skipped)},
    {"weighted", "frames", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "drawn by weight", "",
     COUNT_AT(n_weighted)},
    {"zero_weight_chunks", "chunks", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
     "chunks of weight 0", "", COUNT_AT(n_zero_weight)},
    {0},
};

static unsigned unpacker_threads(const void *config)
{
    return ((const unpacker_config *)config)->threads;
}

const lc_stage_class lc_chunk_unpacker_class = {
    .type_name = "chunk_unpacker",
    .summary = "unpacks chunks into positions, disjoint across a chunk's uses",
    .input = &lc_item_chunk,
    .output = &lc_item_frame,
    .priv_size = sizeof(unpacker),
    .worker = unpacker_worker,
    .threads = unpacker_threads,
    .workers = "workers",
    .settings = {unpacker_settings, sizeof(unpacker_config)},
    .config_check = unpacker_config_check,
    .metrics = unpacker_metrics,
};
