/*
 * short_term: the short-term targets (format/lc0/st_targets.h) of V6
 * games, as the stages compute them: chunk_unpacker for the positions it
 * picks (from records, or once for a stored chunk, kept with it), and
 * chunk_rescorer for whole games, which it turns into V7 records. The same
 * settings for both: `st_targets` (compute or keep), `st_theta` and
 * `st_math` (float, upstream's arithmetic, or double, lcmon's earlier sum:
 * format/lc0/st_targets.h).
 */
#ifndef LC_STAGES_SHORT_TERM_H
#define LC_STAGES_SHORT_TERM_H

#include "core/settings.h"
#include "format/lc0/packed_chunk.h"
#include "stages/items.h"

#include <stdbool.h>
#include <stdint.h>

enum { LC_ST_KEEP = 0, LC_ST_COMPUTE = 1 };
extern const lc_setting_value lc_st_values[];
extern const lc_setting_value lc_st_math_values[]; /* LC_ST_FLOAT, LC_ST_DOUBLE */

/* The settings' rows: st_targets (an int, default def), st_theta (a
 * double, given_field set when given), st_math (an int, given_field set
 * when given), with what they mean for the stage. */
#define LC_SETTING_ST_TARGETS(st, field, def_text, what)                                           \
    {                                                                                              \
        .key = "st_targets", .type = LC_SETTING_ENUM, LC_SETTING_AT(st, field), .def = (def_text), \
        .values = lc_st_values, .meaning = (what), .example = "keep"                               \
    }
#define LC_SETTING_ST_THETA(st, field, given_field)                                                \
    {                                                                                              \
        .key = "st_theta", .type = LC_SETTING_REAL, LC_SETTING_AT(st, field),                      \
        LC_SETTING_GIVEN(st, given_field), .def = "0.8333333333333334",                            \
        .range = LC_RANGE_MIN | LC_RANGE_MAX | LC_RANGE_MAX_OPEN, .min = 0, .max = 1,              \
        .meaning = "the short-term targets' average factor (5/6)", .example = "0.9"                \
    }
#define LC_SETTING_ST_MATH(st, field, given_field)                                                 \
    {                                                                                              \
        .key = "st_math", .type = LC_SETTING_ENUM, LC_SETTING_AT(st, field),                       \
        LC_SETTING_GIVEN(st, given_field), .def = "float", .values = lc_st_math_values,            \
        .meaning = "the short-term targets in float as upstream, bit for bit, or summed in "       \
                   "double (lcmon's earlier way)",                                                 \
        .example = "double"                                                                        \
    }

/* A worker's scratch space for the targets of one chunk's positions from
 * `first` on. */
typedef struct lc_st_scratch {
    float *root_q, *root_d, *q_st, *d_st;
    uint16_t *played, *opp, *next;
    size_t cap;
    float *own;     /* a stored chunk's targets for another theta than the kept ones */
    uint32_t first; /* positions before it have no targets computed */
    bool valid;
} lc_st_scratch;

void lc_st_scratch_fini(lc_st_scratch *st);

/*
 * The targets of chunk c's positions from the least of picks[0..k) on
 * (they depend only on the positions after them; from the even position
 * at or before it, for upstream's sign domain), for a V6 chunk; st->valid
 * says whether they were computed. From its records, or, for a stored
 * chunk, computed once for the whole game (decoding it whole, and applying
 * the chunk_rescorer's patch when it converts the input format: the played
 * moves are then the converted ones) and kept with its packed form
 * (LC_AUX_ST: a key of theta, the format and math, then q_st, d_st,
 * opp_played_idx, next_played_idx per position) so that later uses cost
 * nothing more; a chunk kept with another theta, format or math gets an
 * array of this call's own. math: LC_ST_FLOAT or LC_ST_DOUBLE.
 */
void lc_st_for_picks(double theta, int math, const lc_chunk_item *c, const uint32_t *picks,
                     uint32_t k, lc_unpack_ctx **uctx, lc_st_scratch *st);

/*
 * A game of n V6 records (malloc'd, taken) as V7 records with their
 * short-term targets (q_st, d_st, opp_played_idx, next_played_idx; the rest
 * of the V7 tail zero), in the same buffer grown: n * LC_V7_RECORD_SIZE
 * bytes, returned.
 */
uint8_t *lc_st_records_v7(uint8_t *v6, uint32_t n, double theta, int math, lc_st_scratch *st);

/* The same targets for n positions given by their root_q, root_d and
 * played_idx, into out (4 floats a position, as the rescore patch keeps
 * them). */
void lc_st_rows(const float *root_q, const float *root_d, const uint16_t *played, uint32_t n,
                double theta, int math, float *out, lc_st_scratch *st);

#endif
