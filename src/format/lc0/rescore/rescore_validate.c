/*
 * rescore_validate: upstream's Validate (lc0's rescorer) on one game, the
 * checks in its order, each refusal naming the record, the field and the
 * rule. A field the record's version lacks reads as upstream's upgrade
 * writes it (rescore_internal.h), which every check accepts, so it is not
 * looked at.
 */
#include "format/lc0/rescore/rescore_internal.h"

#include <stdarg.h>
#include <stdio.h>

static bool refuse(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool refuse(char *why, size_t why_size, const char *fmt, ...)
{
    if (why && why_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_size, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* A float field's range: [lo, hi], NaN allowed or not. */
typedef struct range {
    size_t off;
    const char *name;
    float lo, hi;
    bool nan_ok;
} range;

#define F(field) offsetof(lc_v6_record, field), #field

/* Checked before the castling bytes, in upstream's order. */
static const range head[] = {
    {F(best_d), 0, 1, false},
    {F(root_d), 0, 1, false},
    {F(best_q), -1, 1, false},
    {F(root_q), -1, 1, false},
    {F(root_m), 0, INFINITY, false},
    {F(best_m), 0, INFINITY, false},
    {F(plies_left), 0, INFINITY, false},
};

/* Checked after the policy and the indices. */
static const range tail[] = {
    {F(played_q), -1, 1, false}, {F(played_d), 0, 1, false}, {F(played_m), 0, INFINITY, false},
    {F(orig_q), -1, 1, true},    {F(orig_d), 0, 1, true},    {F(orig_m), 0, INFINITY, true},
};

static bool check_ranges(const uint8_t *rec, uint32_t version, uint32_t k, const range *r,
                         size_t count, char *why, size_t why_size)
{
    for (size_t i = 0; i < count; i++) {
        if (!rs_field_offset(version, r[i].off, 4))
            continue;
        float v = rs_f32(rec, version, r[i].off, 0.0f);
        if ((r[i].nan_ok && isnan(v)) || (v >= r[i].lo && v <= r[i].hi))
            continue;
        char limits[32];
        if (isinf(r[i].hi))
            snprintf(limits, sizeof limits, "under %g", r[i].lo);
        else
            snprintf(limits, sizeof limits, "outside [%g, %g]", r[i].lo, r[i].hi);
        return refuse(why, why_size, "record %u: %s is %g, %s (upstream's rescorer drops the game)",
                      k, r[i].name, v, limits);
    }
    return true;
}

static bool canonical(uint32_t f)
{
    return f == 3 || f == 4 || f == 5 || f == 132 || f == 133;
}

/* Input format, castling bytes, side_to_move_or_enpassant. */
static bool check_board_bytes(const uint8_t *rec, uint32_t version, uint32_t k, uint32_t format,
                              char *why, size_t why_size)
{
    static const char *const names[4] = {"castling_them_oo", "castling_them_ooo", "castling_us_oo",
                                         "castling_us_ooo"};
    static const size_t offs[4] = {
        offsetof(lc_v6_record, castling_them_oo), offsetof(lc_v6_record, castling_them_ooo),
        offsetof(lc_v6_record, castling_us_oo), offsetof(lc_v6_record, castling_us_ooo)};
    for (int i = 0; i < 4; i++) {
        uint8_t c = rec[rs_field_offset(version, offs[i], 1)];
        if (format == 1 ? c > 1 : (c & (c - 1)) != 0)
            return refuse(why, why_size,
                          "record %u: %s is %u (format %u: %s; upstream's rescorer drops the game)",
                          k, names[i], c, format,
                          format == 1 ? "0 or 1" : "a rook file, one bit at most");
    }
    uint8_t s = rec[rs_field_offset(version, offsetof(lc_v6_record, side_to_move_or_enpassant), 1)];
    if (canonical(format) ? (s & (s - 1)) != 0 : s > 1)
        return refuse(why, why_size,
                      "record %u: side_to_move_or_enpassant is %u (format %u: %s; upstream's "
                      "rescorer drops the game)",
                      k, s, format, canonical(format) ? "one en-passant file at most" : "0 or 1");
    return true;
}

static bool check_result(const uint8_t *rec, uint32_t version, uint32_t k, char *why,
                         size_t why_size)
{
    if (version < 6) {
        int8_t r = (int8_t)rec[rs_result_byte(version)];
        if (r < -1 || r > 1)
            return refuse(why, why_size,
                          "record %u: the result byte is %d (lc0 reads only -1, 0 or 1 and "
                          "refuses the game)",
                          k, r);
        return true;
    }
    float q, d;
    LC_REC_GET(rec, result_q, q);
    LC_REC_GET(rec, result_d, d);
    if (!(q >= -1 && q <= 1))
        return refuse(why, why_size,
                      "record %u: result_q is %g, outside [-1, 1] (upstream's rescorer drops the "
                      "game)",
                      k, q);
    if (!(d >= 0 && q <= 1))
        return refuse(why, why_size,
                      "record %u: result_d is %g, under 0 (upstream's rescorer drops the game)", k,
                      d);
    return true;
}

/* Every entry in [0, 1], -1 or NaN; the played and best moves legal when
 * searched; the sum of the entries >= 0, in float and index order, within
 * 0.99..1.01. This is the slow path, entry by entry in upstream's order,
 * for the reason; check_policy looks first. */
static bool refuse_policy(const uint8_t *rec, uint32_t version, uint32_t k, char *why,
                          size_t why_size)
{
    uint32_t visits = rs_visits(rec, version);
    uint16_t best = 0, played = 0;
    if (version >= 6) {
        LC_REC_GET(rec, best_idx, best);
        LC_REC_GET(rec, played_idx, played);
    }
    float sum = 0.0f;
    for (unsigned j = 0; j < LC_POLICY_SIZE; j++) {
        float p = rs_prob(rec, version, j);
        if (!((p >= 0.0f && p <= 1.0f) || p == -1.0f || isnan(p)))
            return refuse(why, why_size,
                          "record %u: probability %u is %g (upstream's rescorer takes 0 to 1, -1 "
                          "for an illegal move, or NaN)",
                          k, j, p);
        if (p >= 0.0f)
            sum += p;
        if (visits > 0 && (j == best || j == played) && !(p >= 0.0f))
            return refuse(why, why_size,
                          "record %u: the %s move (index %u) has probability %g (searched "
                          "records must give it a share; upstream's rescorer drops the game)",
                          k, j == played ? "played" : "best", j, p);
    }
    if (sum < 0.99f || sum > 1.01f)
        return refuse(why, why_size,
                      "record %u: probabilities sum to %.6g (upstream drops games outside "
                      "0.99..1.01)",
                      k, sum);
    if (best > 1858 || played > 1858)
        return refuse(why, why_size,
                      "record %u: %s is %u, over 1858 (upstream's rescorer drops the game)", k,
                      best > 1858 ? "best_idx" : "played_idx", best > 1858 ? best : played);
    return true;
}

/* The same checks, fast: lc0 marks most entries illegal (-1), and only the
 * others need a look (lc_policy_entries skips blocks of -1 at once); summing
 * them alone, in order, gives the same float sum (an illegal entry adds
 * nothing). More entries than a position has legal moves: the slow path. */
static bool check_policy(const uint8_t *rec, uint32_t version, uint32_t k, char *why,
                         size_t why_size)
{
    uint16_t idx[LC_MAX_MOVES];
    float val[LC_MAX_MOVES];
    unsigned n = lc_policy_entries(rec + rs_policy_offset(version), idx, val, LC_MAX_MOVES);
    if (n > LC_MAX_MOVES)
        return refuse_policy(rec, version, k, why, why_size);
    float sum = 0.0f;
    bool ok = true;
    for (unsigned j = 0; j < n; j++) {
        float p = val[j];
        ok &= (p >= 0.0f && p <= 1.0f) || isnan(p);
        if (p >= 0.0f)
            sum += p;
    }
    if (ok && rs_visits(rec, version) > 0) {
        uint16_t best, played;
        LC_REC_GET(rec, best_idx, best);
        LC_REC_GET(rec, played_idx, played);
        ok = (best >= LC_POLICY_SIZE || rs_prob(rec, version, best) >= 0.0f) &&
             (played >= LC_POLICY_SIZE || rs_prob(rec, version, played) >= 0.0f);
    }
    if (ok && version >= 6) {
        uint16_t best, played;
        LC_REC_GET(rec, best_idx, best);
        LC_REC_GET(rec, played_idx, played);
        ok = best <= 1858 && played <= 1858;
    }
    if (ok && !(sum < 0.99f || sum > 1.01f))
        return true;
    return refuse_policy(rec, version, k, why, why_size);
}

bool rs_validate_fields(const uint8_t *records, size_t size, uint32_t n, uint32_t version,
                        char *why, size_t why_size)
{
    if (version < 3 || version > 7)
        return refuse(why, why_size, "records of version %u (lcmon reads 3 to 7)", version);
    if (n == 0)
        return refuse(why, why_size, "the game has no records (upstream's rescorer drops it)");
    for (uint32_t k = 0; k < n; k++) {
        const uint8_t *rec = records + (size_t)k * size;
        uint32_t format = 1;
        if (version >= 5)
            LC_REC_GET(rec, input_format, format);
        if (format != 1 && format != 2 && !canonical(format))
            return refuse(why, why_size,
                          "record %u: input_format %u (upstream's rescorer takes 1, 2, 3, 4, 5, "
                          "132 and 133)",
                          k, format);
        uint8_t rule50 = rec[rs_field_offset(version, offsetof(lc_v6_record, rule50_count), 1)];
        if (!check_ranges(rec, version, k, head, sizeof head / sizeof head[0], why, why_size) ||
            !check_board_bytes(rec, version, k, format, why, why_size) ||
            !check_result(rec, version, k, why, why_size))
            return false;
        if (rule50 > 100)
            return refuse(why, why_size,
                          "record %u: rule50_count is %u, over 100 (upstream's rescorer drops "
                          "the game)",
                          k, rule50);
        if (!check_policy(rec, version, k, why, why_size) ||
            !check_ranges(rec, version, k, tail, sizeof tail / sizeof tail[0], why, why_size))
            return false;
    }
    return true;
}

bool rs_validate_moves(const uint8_t *records, size_t size, uint32_t version, const lc_game *game,
                       bool read_ok, char *why, size_t why_size)
{
    for (uint32_t i = 0; i < game->moves; i++) {
        const uint8_t *rec = records + (size_t)i * size;
        uint16_t m = game->ply[i].move;
        if (rs_visits(rec, version) > 0) {
            uint16_t played;
            LC_REC_GET(rec, played_idx, played);
            if (played != m)
                return refuse(why, why_size,
                              "record %u: played_idx is %u, but the move to record %u is %u "
                              "(upstream's rescorer drops the game)",
                              i, played, i + 1, m);
        }
        float p = rs_prob(rec, version, m);
        uint8_t inv = rec[rs_field_offset(version, offsetof(lc_v6_record, invariance_info), 1)];
        if (!(p >= 0.0f) && !(inv & 64u))
            return refuse(why, why_size,
                          "record %u: the move to record %u (index %u) has probability %g, marked "
                          "illegal (upstream's rescorer drops the game)",
                          i, i + 1, m, p);
    }
    return read_ok;
}
