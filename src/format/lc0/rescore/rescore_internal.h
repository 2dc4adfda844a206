/*
 * rescore_internal: what the parts of the rescorer share (rescore.c,
 * rescore_validate.c, rescore_results.c, rescore_policy.c): one game being
 * rescored, and the record fields by version. Not an interface of the
 * format layer: only those files include it.
 *
 * Fields by version. Upstream reads every record as V6 (lc0's reader
 * upgrades older ones: input_format 1, zeros in the fields a version lacks,
 * orig_* NaN, visits 0). Here the records stay as they are, so a field a
 * version lacks reads as the upgrade's value and is never written: V6 and
 * V7 have them all; V5 (8308 bytes) everything up to plies_left, with an
 * int8 result at byte 8279 for result_q/result_d; V3 and V4 have no
 * input_format field, so everything after the version sits 4 bytes lower,
 * V4 with root_q, best_q, root_d, best_d, V3 without.
 */
#ifndef LC_FORMAT_LC0_RESCORE_RESCORE_INTERNAL_H
#define LC_FORMAT_LC0_RESCORE_RESCORE_INTERNAL_H

#include "format/lc0/rescore/game.h"
#include "format/lc0/record.h"
#include "format/lc0/rescore/rescore.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* A result that is not -1, 0 or 1 (rs_result). */
#define RS_BAD_RESULT 2

typedef struct rs_game {
    const lc_rescore_config *cfg;
    uint8_t *records;
    size_t size;
    uint32_t n, version;
    lc_game *game;
    lc_rescore_counts *counts;
    unsigned syzygy_max; /* upstream's max_cardinality: Syzygy's most pieces, 0 without */
    bool gaviota;        /* Gaviota tables open: DTM corrections instead of DTZ ones */
    bool strict;         /* a result upstream refuses drops the game (not keep_invalid) */
    bool failed;         /* strict, and a result was refused: reason in why */
    char *why;
    size_t why_size;
    float temp, offset, boost; /* dist_temp, dist_offset, dtz_boost as upstream holds them */
    uint32_t first_hit;        /* the first record the first pass answered (n: none) */
    uint64_t results_changed;  /* this game's */
    bool changed;              /* a bit of a record changed (a deblunder: always) */
} rs_game;

static inline uint8_t *rs_rec(const rs_game *g, uint32_t k)
{
    return g->records + (size_t)k * g->size;
}

/* Where a V6 field at offset off (len bytes) is in a record of the version,
 * or 0 when the version lacks it. */
static inline size_t rs_field_offset(uint32_t version, size_t off, size_t len)
{
    if (version >= 6)
        return off;
    if (version == 5)
        return off + len <= LC_V5_RECORD_SIZE ? off : 0;
    if (off < 8) /* input_format: V3 and V4 have none */
        return 0;
    size_t size = version == 4 ? LC_V4_RECORD_SIZE : LC_V3_RECORD_SIZE;
    return off - 4 + len <= size ? off - 4 : 0;
}

/* A float field (V6 offset), or dflt when the version lacks it. */
static inline float rs_f32(const uint8_t *rec, uint32_t version, size_t off, float dflt)
{
    size_t at = rs_field_offset(version, off, 4);
    if (!at)
        return dflt;
    float v;
    memcpy(&v, rec + at, 4);
    return v;
}

static inline size_t rs_policy_offset(uint32_t version)
{
    return version >= 5 ? offsetof(lc_v6_record, probabilities) : 4;
}

static inline float rs_prob(const uint8_t *rec, uint32_t version, unsigned i)
{
    float v;
    memcpy(&v, rec + rs_policy_offset(version) + 4 * (size_t)i, 4);
    return v;
}

static inline void rs_put_prob(uint8_t *rec, uint32_t version, unsigned i, float v)
{
    memcpy(rec + rs_policy_offset(version) + 4 * (size_t)i, &v, 4);
}

/* visits (0 before V6, as upstream's upgrade). */
static inline uint32_t rs_visits(const uint8_t *rec, uint32_t version)
{
    uint32_t v = 0;
    if (version >= 6)
        LC_REC_GET(rec, visits, v);
    return v;
}

/* plies_left exists from V5 on. */
static inline bool rs_has_plies_left(uint32_t version)
{
    return version >= 5;
}

/* The int8 result of V3-V5 records. */
static inline size_t rs_result_byte(uint32_t version)
{
    return version >= 5 ? offsetof(lc_v6_record, dummy) : offsetof(lc_v6_record, dummy) - 4;
}

/* ---- rescore_validate.c ---- */

/* Upstream's Validate on every record's fields, in upstream's order; false
 * with the first refusal in why. */
bool rs_validate_fields(const uint8_t *records, size_t size, uint32_t n, uint32_t version,
                        char *why, size_t why_size);

/* Upstream's checks of the moves between records (the game read as far as
 * it could be; read_ok false: the reading's reason is already in why and
 * comes after the checks of the moves before it). */
bool rs_validate_moves(const uint8_t *records, size_t size, uint32_t version, const lc_game *game,
                       bool read_ok, char *why, size_t why_size);

/* ---- rescore_results.c ---- */

/* Record k's result as upstream's ResultForData reads it: -1, 0, 1, or
 * RS_BAD_RESULT (strict: g->failed, with the reason). */
int rs_result(rs_game *g, uint32_t k);

/* Give record k the result r (-1, 0, 1); whether that changed its bits. */
bool rs_set_result(rs_game *g, uint32_t k, int r);

void rs_first_pass(rs_game *g);
void rs_second_pass(rs_game *g);
void rs_plies_left(rs_game *g);

/* The record from which the deblunder's region ends, upstream's rule. */
uint32_t rs_deblunder_region(const rs_game *g);

/* ---- rescore_policy.c ---- */

void rs_policy(rs_game *g);

#endif
