/*
 * game_history: see game_history.h. The reading is the game reader's
 * (game.c); frames are written back as V7 records for it.
 */
#include "format/lc0/rescore/game_history.h"

#include "format/lc0/rescore/input_format_encode.h"
#include "format/lc0/record.h"

#include <stdlib.h>
#include <string.h>

/* Record 0's side to move: formats 1 and 2 (and V3, V4) keep it in
 * side_to_move_or_enpassant, the canonical ones in invariance_info bit 7. */
static bool first_black(const uint8_t *rec, uint32_t version)
{
    uint32_t format = 1;
    uint8_t inv = 0, stm;
    size_t tail = offsetof(lc_v6_record, side_to_move_or_enpassant);
    if (version >= 5) {
        LC_REC_GET(rec, input_format, format);
        LC_REC_GET(rec, invariance_info, inv);
    } else {
        tail -= 4;
    }
    memcpy(&stm, rec + tail, 1);
    return lc_input_format_canonical(format) ? (inv >> 7) & 1 : stm & 1;
}

int lc_game_history_read(const uint8_t *records, size_t record_size, uint32_t n, uint32_t version,
                         lc_game_pos *out, lc_error *err)
{
    if (version < 3 || version > 7)
        return lc_error_set(err, LC_EVERSION, "game history: record version %u is not 3 to 7",
                            version);
    if (n == 0)
        return 0;
    lc_game g;
    lc_game_init(&g);
    char why[256];
    if (!lc_game_read(&g, records, record_size, n, version, why, sizeof why)) {
        lc_game_fini(&g);
        return lc_error_set(err, LC_EFORMAT, "the records are not one game in ply order: %s", why);
    }
    bool black = first_black(records, version);
    for (uint32_t k = 0; k < n; k++, black = !black) {
        const lc_game_ply *p = &g.ply[k];
        lc_game_pos *o = &out[k];
        memset(o, 0, sizeof *o);
        o->pos = p->pos;
        o->black = black;
        o->repetitions = p->reps;
        o->ep_flag = lc_position_ep_square(&p->pos) >= 0 ? p->pos.ep_file : -1;
        o->transform = p->transform;
        o->move = p->move;
    }
    lc_game_fini(&g);
    return 0;
}

int lc_game_history_frames(const lc_frame *frames, uint32_t n, lc_game_pos *out, lc_error *err)
{
    uint8_t *recs = lc_xmalloc((n ? n : 1) * (size_t)LC_V7_RECORD_SIZE);
    for (uint32_t k = 0; k < n; k++) {
        uint8_t *rec = recs + (size_t)k * LC_V7_RECORD_SIZE;
        lc_frame_to_record_v7(&frames[k], rec);
        const uint32_t v7 = 7; /* the layout; V3 and V4 frames' fields included */
        memcpy(rec, &v7, 4);
    }
    int rc = lc_game_history_read(recs, LC_V7_RECORD_SIZE, n, 7, out, err);
    free(recs);
    return rc;
}
