/*
 * input_format_convert: a game's records converted (see
 * input_format_convert.h); the frames' table is in input_format_table.c.
 */
#include "format/lc0/rescore/input_format_convert.h"

#include "core/error.h"
#include "format/lc0/rescore/game_history.h"
#include "format/lc0/rescore/input_format_encode.h"
#include "format/lc0/record.h"

#include <stdlib.h>
#include <string.h>

#define REC_OFF(field) offsetof(lc_v6_record, field)

bool lc_input_format_convertible(uint32_t from, uint32_t to)
{
    return lc_input_format_known(from) && lc_input_format_known(to);
}

/* The formats and version a conversion needs, checked before anything. */
static int check_game(const uint8_t *records, size_t size, uint32_t n, uint32_t version,
                      uint32_t to, lc_error *err)
{
    if (version < 5 || version > 7)
        return lc_error_set(err, LC_EVERSION,
                            "new_input_format: record version %u has no input_format field "
                            "(only V5 to V7 records can be converted)",
                            version);
    if (!lc_input_format_known(to))
        return lc_error_set(err, LC_ECONFIG,
                            "new_input_format: %u is not an input format lcmon reads; give one "
                            "of 1, 2, 3, 4, 5, 132, 133, or leave it unset",
                            to);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t from;
        LC_REC_GET(records + (size_t)k * size, input_format, from);
        if (!lc_input_format_known(from))
            return lc_error_set(err, LC_EFORMAT,
                                "new_input_format: record %u of the game has input_format %u, "
                                "none that lcmon reads (1, 2, 3, 4, 5, 132, 133); the game is "
                                "left as it was",
                                k, from);
    }
    return 0;
}

/* The policy moved from transform from_t to to_t over the legal moves;
 * played_idx and best_idx with it when the record has visits (V6 on). */
static void move_policy(uint8_t *rec, uint32_t version, const lc_game_pos *p, int from_t, int to_t)
{
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&p->pos, moves);
    float probs[LC_POLICY_SIZE];
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        probs[i] = -1.0f;
    for (unsigned m = 0; m < n; m++) {
        int i = lc_move_policy_transformed(&moves[m], (unsigned)to_t);
        int j = lc_move_policy_transformed(&moves[m], (unsigned)from_t);
        if (i < LC_POLICY_SIZE && j < LC_POLICY_SIZE)
            probs[i] = lc_rec_probability(rec, (size_t)j);
    }
    memcpy(rec + REC_OFF(probabilities), probs, sizeof probs);
    uint32_t visits = 0;
    if (version >= 6)
        LC_REC_GET(rec, visits, visits);
    if (visits == 0)
        return;
    const size_t offs[2] = {REC_OFF(played_idx), REC_OFF(best_idx)};
    for (int k = 0; k < 2; k++) {
        uint16_t idx;
        memcpy(&idx, rec + offs[k], 2);
        int now = lc_transform_move_index(moves, n, from_t, to_t, idx);
        idx = now < 0 ? idx : (uint16_t)now;
        memcpy(rec + offs[k], &idx, 2);
    }
}

static void write_record(uint8_t *rec, const lc_encoded *e, bool black, uint32_t to)
{
    memcpy(rec + REC_OFF(planes), e->planes, sizeof e->planes);
    memcpy(rec + REC_OFF(castling_us_ooo), e->castling, 4);
    rec[REC_OFF(side_to_move_or_enpassant)] = e->stm_or_ep;
    uint8_t inv = rec[REC_OFF(invariance_info)] & 0x78;
    if (lc_input_format_canonical(to))
        inv |= (uint8_t)(e->transform | (black ? 0x80 : 0));
    rec[REC_OFF(invariance_info)] = inv;
    memcpy(rec + REC_OFF(input_format), &to, 4);
}

/* V7's next two played moves, moved as the records they name were: an
 * index equal to that record's old played_idx becomes its new one. */
static void fix_next_moves(uint8_t *records, size_t size, uint32_t n, const uint16_t *old_played)
{
    for (uint32_t k = 0; k < n; k++) {
        uint8_t *rec = records + (size_t)k * size;
        const size_t offs[2] = {offsetof(lc_v7_record, opp_played_idx),
                                offsetof(lc_v7_record, next_played_idx)};
        for (uint32_t d = 1; d <= 2 && k + d < n; d++) {
            uint16_t idx, now;
            memcpy(&idx, rec + offs[d - 1], 2);
            LC_REC_GET(records + (size_t)(k + d) * size, played_idx, now);
            if (idx == old_played[k + d])
                memcpy(rec + offs[d - 1], &now, 2);
        }
    }
}

int lc_game_convert_format(uint8_t *records, size_t record_size, uint32_t n, uint32_t version,
                           uint32_t new_format, lc_error *err)
{
    int rc = check_game(records, record_size, n, version, new_format, err);
    if (rc != 0 || n == 0)
        return rc;
    lc_game_pos *g = lc_xmalloc(n * sizeof *g);
    rc = lc_game_history_read(records, record_size, n, version, g, err);
    if (rc != 0) {
        free(g);
        return lc_error_prefix(err, "new_input_format: ");
    }
    uint16_t *old_played = lc_xcalloc(n, sizeof *old_played);
    for (uint32_t k = 0; k < n; k++) {
        uint8_t *rec = records + (size_t)k * record_size;
        if (version >= 6)
            LC_REC_GET(rec, played_idx, old_played[k]);
        uint32_t first = lc_game_encode_first(&g[0].pos.rule50, sizeof *g, k, new_format);
        lc_encoded e;
        lc_game_encode(g + first, k - first, new_format, &e);
        if (e.transform != g[k].transform)
            move_policy(rec, version, &g[k], g[k].transform, e.transform);
        write_record(rec, &e, g[k].black, new_format);
    }
    if (version == 7)
        fix_next_moves(records, record_size, n, old_played);
    free(old_played);
    free(g);
    return 0;
}
