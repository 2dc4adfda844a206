/*
 * rescore_patch: see rescore_patch.h. The layout, in floats:
 *
 *   [0..3]  the key, 16 bits in each
 *   [4]     n, the positions of the game
 *   [5]     the input format to convert to (0: keep)
 *   [6]     flags: 1 short-term targets follow; 2 the game is dropped (a
 *           game upstream's Validate refuses: the header alone, R and NP 0)
 *   [7]     R: positions 0 .. R-1 have a results row (the rest are unchanged)
 *   [8]     P0, [9] NP: positions P0 .. P0+NP-1 have a policy offset
 *   [10]    where the conversion's table starts (0: no conversion)
 *   results R rows of 4: result_q, result_d, plies_left, the int8 result
 *   offsets NP floats: where the position's policy values start (0: none)
 *   st      n rows of 4 when [6] is 1: q_st, d_st, opp_played_idx, next_played_idx
 *   policy  per sharpened position: its entry count, then its values
 *   table   the conversion's (input_format_convert.h), made from `before`
 *
 * Floats are copied bit for bit (NaN payloads survive).
 */
#include "format/lc0/rescore/rescore_patch.h"

#include "core/error.h"
#include "format/lc0/rescore/input_format_convert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    H_KEY = 0,
    H_N = 4,
    H_FORMAT = 5,
    H_FLAGS = 6,
    H_RESULTS = 7,
    H_P0 = 8,
    H_NP = 9,
    H_TABLE = 10,
    HEADER = 11
};
enum { ROW = 4 };
enum { F_ST = 1, F_DROPPED = 2 };

uint64_t lc_rescore_patch_hash(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static bool same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Entry k of f's sparse policy. */
static float *policy_value(lc_frame *f, unsigned k)
{
    return lc_frame_policy_val_at(f, k);
}

static bool results_differ(const lc_frame *a, const lc_frame *b)
{
    return !same_bits(a->result_q, b->result_q) || !same_bits(a->result_d, b->result_d) ||
           !same_bits(a->plies_left, b->plies_left) || a->result != b->result;
}

static bool policy_differs(const lc_frame *a, const lc_frame *b)
{
    if (a->n_policy != b->n_policy)
        return true;
    for (unsigned k = 0; k < a->n_policy; k++)
        if (!same_bits(*policy_value((lc_frame *)a, k), *policy_value((lc_frame *)b, k)))
            return true;
    return false;
}

float *lc_rescore_patch_make(uint64_t key, uint32_t new_format, const lc_frame *before,
                             const lc_frame *after, uint32_t n, const float *st, uint32_t *changed)
{
    uint32_t rows = 0, p0 = n, p1 = 0, n_changed = 0;
    size_t values = 0;
    for (uint32_t i = 0; before && i < n; i++) {
        bool r = results_differ(&before[i], &after[i]), p = policy_differs(&before[i], &after[i]);
        if (r)
            rows = i + 1;
        if (p) {
            p0 = i < p0 ? i : p0;
            p1 = i + 1;
            values += 1 + after[i].n_policy;
        }
        n_changed += r || p;
    }
    uint32_t np = p1 > p0 ? p1 - p0 : 0;
    /* The conversion: none when the game cannot be read as one. */
    size_t table_floats = 0;
    float *table = new_format && before
                       ? lc_game_format_table(before, n, new_format, &table_floats, NULL)
                       : NULL;
    if (!table)
        new_format = 0;
    size_t total =
        HEADER + (size_t)ROW * rows + np + (st ? (size_t)ROW * n : 0) + values + table_floats;
    float *patch = lc_xmalloc(total * sizeof *patch);
    for (unsigned k = 0; k < 4; k++)
        patch[H_KEY + k] = (float)((key >> (16 * k)) & 0xffff);
    patch[H_N] = (float)n;
    patch[H_FORMAT] = (float)new_format;
    patch[H_FLAGS] = st ? (float)F_ST : 0.0f;
    patch[H_RESULTS] = (float)rows;
    patch[H_P0] = (float)(np ? p0 : 0);
    patch[H_NP] = (float)np;
    float *out = patch + HEADER;
    for (uint32_t i = 0; i < rows; i++, out += ROW) {
        out[0] = after[i].result_q;
        out[1] = after[i].result_d;
        out[2] = after[i].plies_left;
        out[3] = (float)after[i].result;
    }
    float *offsets = out;
    out += np;
    if (st) {
        memcpy(out, st, (size_t)ROW * n * sizeof *out);
        out += (size_t)ROW * n;
    }
    for (uint32_t j = 0; j < np; j++) {
        const lc_frame *a = &after[p0 + j];
        if (!policy_differs(&before[p0 + j], a)) {
            offsets[j] = 0;
            continue;
        }
        offsets[j] = (float)(out - patch);
        *out++ = (float)a->n_policy;
        for (unsigned k = 0; k < a->n_policy; k++)
            *out++ = *policy_value((lc_frame *)a, k);
    }
    patch[H_TABLE] = table ? (float)(out - patch) : 0.0f;
    if (table)
        memcpy(out, table, table_floats * sizeof *out);
    free(table);
    if (changed)
        *changed = n_changed;
    return patch;
}

float *lc_rescore_patch_dropped(uint64_t key, uint32_t n)
{
    float *patch = lc_rescore_patch_make(key, 0, NULL, NULL, n, NULL, NULL);
    patch[H_FLAGS] = (float)F_DROPPED;
    return patch;
}

static unsigned flags(const float *patch)
{
    return (unsigned)patch[H_FLAGS];
}

uint64_t lc_rescore_patch_key(const float *patch)
{
    uint64_t key = 0;
    for (unsigned k = 0; k < 4; k++)
        key |= (uint64_t)patch[H_KEY + k] << (16 * k);
    return key;
}

uint32_t lc_rescore_patch_format(const float *patch)
{
    return (uint32_t)patch[H_FORMAT];
}

bool lc_rescore_patch_has_st(const float *patch)
{
    return (flags(patch) & F_ST) != 0;
}

bool lc_rescore_patch_is_dropped(const float *patch)
{
    return (flags(patch) & F_DROPPED) != 0;
}

bool lc_rescore_patch_is_empty(const float *patch)
{
    return patch[H_RESULTS] == 0 && patch[H_NP] == 0 && patch[H_FORMAT] == 0 && patch[H_FLAGS] == 0;
}

int lc_rescore_patch_apply(const float *patch, uint32_t i, lc_frame *f, lc_error *err)
{
    uint32_t n = (uint32_t)patch[H_N], rows = (uint32_t)patch[H_RESULTS];
    uint32_t p0 = (uint32_t)patch[H_P0], np = (uint32_t)patch[H_NP];
    if (i >= n)
        return lc_error_set(err, LC_EFORMAT, "rescore patch: position %u of a game of %u", i, n);
    if (lc_rescore_patch_is_dropped(patch))
        return lc_error_set(err, LC_EFORMAT,
                            "rescore patch: position %u of a game the rescorer dropped", i);
    const float *row = patch + HEADER + (size_t)ROW * i;
    if (i < rows) {
        f->result_q = row[0];
        f->result_d = row[1];
        f->plies_left = row[2];
        f->result = (int8_t)row[3];
    }
    const float *offsets = patch + HEADER + (size_t)ROW * rows;
    if (i >= p0 && i - p0 < np && offsets[i - p0] != 0) {
        const float *v = patch + (size_t)offsets[i - p0];
        if ((uint32_t)v[0] != f->n_policy)
            return lc_error_set(err, LC_EFORMAT,
                                "rescore patch: position %u has %u policy entries, the patch %u", i,
                                f->n_policy, (uint32_t)v[0]);
        for (unsigned k = 0; k < f->n_policy; k++)
            *policy_value(f, k) = v[1 + k];
    }
    uint32_t format = lc_rescore_patch_format(patch);
    if (format) {
        int rc = lc_game_format_table_apply(patch + (size_t)patch[H_TABLE], i, f, err);
        if (rc != 0)
            return rc;
    }
    if (lc_rescore_patch_has_st(patch)) {
        const float *st = offsets + np + (size_t)ROW * i;
        f->q_st = st[0];
        f->d_st = st[1];
        f->opp_played_idx = (uint16_t)st[2];
        f->next_played_idx = (uint16_t)st[3];
        f->version = 7;
    }
    return 0;
}
