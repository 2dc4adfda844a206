/*
 * game_history: see game_history.h.
 *
 * Repetitions are counted as lc0's PositionHistory counts them: none while
 * the fifty-move counter is below 4; else the positions 2, 4, ... plies
 * back are compared in turn, the first equal one giving its own count plus
 * one, and the search ending (none found) after a position whose counter
 * is below 2.
 */
#include "format/lc0/game_history.h"

#include "format/lc0/input_format_encode.h"
#include "format/lc0/record.h"

#include <string.h>

/* The fields a position is read from, records and frames alike. */
typedef struct pos_fields {
    uint64_t planes[26]; /* history steps 0 and 1 */
    uint8_t castling[4];
    uint8_t stm_or_ep, rule50, invariance;
    uint32_t format;
} pos_fields;

static int record_fields(const uint8_t *rec, uint32_t version, pos_fields *p)
{
    size_t off = offsetof(lc_v6_record, planes);
    p->format = 1;
    p->invariance = 0; /* V3 and V4 keep move_count there: no transform */
    if (version == 3 || version == 4) {
        off -= 4;
    } else if (version >= 5 && version <= 7) {
        LC_REC_GET(rec, input_format, p->format);
        LC_REC_GET(rec, invariance_info, p->invariance);
    } else {
        return -1;
    }
    memcpy(p->planes, rec + off, sizeof p->planes);
    const uint8_t *tail = rec + off + 8 * LC_RECORD_PLANES;
    memcpy(p->castling, tail, 4);
    p->stm_or_ep = tail[4];
    p->rule50 = tail[5];
    return 0;
}

static void frame_fields(const lc_frame *f, pos_fields *p)
{
    memcpy(p->planes, f->planes, sizeof p->planes);
    const uint8_t castling[4] = {f->castling_us_ooo, f->castling_us_oo, f->castling_them_ooo,
                                 f->castling_them_oo};
    memcpy(p->castling, castling, 4);
    p->stm_or_ep = f->side_to_move_or_enpassant;
    p->rule50 = f->rule50_count;
    p->invariance = f->invariance_info;
    p->format = f->input_format;
}

/* lc0's en-passant flag of a position: set only when a pawn of ours
 * stands beside the pawn that just moved two squares. */
static int8_t ep_flag(const lc_position *p)
{
    return lc_position_ep_square(p) >= 0 ? p->ep_file : -1;
}

/* The position the fields describe, its transform undone. */
static bool read_pos(const pos_fields *f, lc_game_pos *out)
{
    memset(out, 0, sizeof *out);
    bool canonical = lc_input_format_canonical(f->format);
    int t = canonical ? f->invariance & 7 : 0;
    uint64_t planes[26];
    for (int i = 0; i < 26; i++)
        planes[i] = lc_transform_word(f->planes[i], t, true);
    uint8_t ep = f->stm_or_ep;
    if (canonical && (t & LC_T_FLIP))
        ep = (uint8_t)(lc_plane_squares(ep) & 0xFF); /* file f back to 7 - f */
    if (!lc_position_from_planes(planes, f->castling, ep, f->rule50, f->format, &out->pos))
        return false;
    out->black = canonical ? (f->invariance >> 7) & 1 : f->stm_or_ep & 1;
    out->transform = (uint8_t)t;
    out->ep_flag = ep_flag(&out->pos);
    return true;
}

bool lc_game_pos_same(const lc_game_pos *a, const lc_game_pos *b)
{
    return memcmp(a->pos.bb, b->pos.bb, sizeof a->pos.bb) == 0 &&
           memcmp(a->pos.castle, b->pos.castle, 4) == 0 && a->ep_flag == b->ep_flag;
}

static uint8_t repetitions(const lc_game_pos *g, uint32_t k)
{
    if (g[k].pos.rule50 < 4)
        return 0;
    for (int64_t j = (int64_t)k - 2; j >= 0; j -= 2) {
        if (lc_game_pos_same(&g[j], &g[k]))
            return (uint8_t)(g[j].repetitions + 1);
        if (g[j].pos.rule50 < 2)
            return 0;
    }
    return 0;
}

/* Position k + 1: the child of position k whose board is `next`'s. */
static bool follow(lc_game_pos *g, uint32_t k, const lc_game_pos *next)
{
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&g[k].pos, moves);
    for (unsigned i = 0; i < n; i++) {
        lc_position child;
        lc_position_play(&g[k].pos, &moves[i], &child);
        if (memcmp(child.bb, next->pos.bb, sizeof child.bb) != 0)
            continue;
        g[k].move = moves[i];
        lc_game_pos *c = &g[k + 1];
        memset(c, 0, sizeof *c);
        c->pos = child;
        c->black = !g[k].black;
        c->transform = next->transform;
        c->ep_flag = ep_flag(&child);
        c->repetitions = repetitions(g, k + 1);
        return true;
    }
    return false;
}

static int bad_board(uint32_t k, lc_error *err)
{
    return lc_error_set(err, LC_EFORMAT,
                        "record %u of the game: its planes (history step 0) are not a chess "
                        "board (one king a side, one piece a square, no pawn on the first or "
                        "last rank); the game cannot be read as a game",
                        k);
}

static int no_move(uint32_t k, lc_error *err)
{
    return lc_error_set(err, LC_EFORMAT,
                        "record %u of the game: no legal move of record %u's position gives its "
                        "board; the records are not one game in ply order",
                        k + 1, k);
}

/* The game from a reader of record k's fields (records or frames). */
typedef bool (*fields_fn)(const void *src, uint32_t k, pos_fields *out);

static int read_game(fields_fn get, const void *src, uint32_t n, lc_game_pos *out, lc_error *err)
{
    pos_fields f;
    if (n == 0)
        return 0;
    if (!get(src, 0, &f) || !read_pos(&f, &out[0]))
        return bad_board(0, err);
    for (uint32_t k = 0; k + 1 < n; k++) {
        lc_game_pos next;
        if (!get(src, k + 1, &f) || !read_pos(&f, &next))
            return bad_board(k + 1, err);
        if (!follow(out, k, &next))
            return no_move(k, err);
    }
    return 0;
}

typedef struct records_src {
    const uint8_t *records;
    size_t size;
    uint32_t version;
} records_src;

static bool get_record(const void *src, uint32_t k, pos_fields *out)
{
    const records_src *r = src;
    return record_fields(r->records + (size_t)k * r->size, r->version, out) == 0;
}

static bool get_frame(const void *src, uint32_t k, pos_fields *out)
{
    frame_fields((const lc_frame *)src + k, out);
    return true;
}

int lc_game_history_read(const uint8_t *records, size_t record_size, uint32_t n, uint32_t version,
                         lc_game_pos *out, lc_error *err)
{
    if (version < 3 || version > 7)
        return lc_error_set(err, LC_EVERSION, "game history: record version %u is not 3 to 7",
                            version);
    records_src src = {records, record_size, version};
    return read_game(get_record, &src, n, out, err);
}

int lc_game_history_frames(const lc_frame *frames, uint32_t n, lc_game_pos *out, lc_error *err)
{
    return read_game(get_frame, frames, n, out, err);
}
