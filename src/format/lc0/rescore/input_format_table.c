/*
 * input_format_table: the conversion of a stored game's frames one at a
 * time (input_format_convert.h). The table holds, in 32-bit words kept in
 * float slots (copied, never computed with):
 *
 *   [0] n, [1] the format to convert to, then n rows of ROW words:
 *   board   8 words: square s's piece in 4 bits (word s / 8, bits 4 (s % 8)
 *           up): 0 empty, 1 + piece for ours (LC_PAWN .. LC_KING), 7 +
 *           piece for theirs; the plane frame of its side to move, no
 *           transform
 *   castle  the four castling rook masks, a byte each
 *   state   ep_flag + 1, black, repetitions, rule50 (a byte each)
 *   played  the frame's played_idx (low 16 bits) and the converted one
 *
 * so that frame i is encoded from rows first .. i (input_format_encode.h)
 * without the other frames.
 */
#include "format/lc0/rescore/input_format_convert.h"

#include "core/error.h"
#include "format/lc0/rescore/game_history.h"
#include "format/lc0/rescore/input_format_encode.h"

#include <stdlib.h>
#include <string.h>

enum { HEAD = 2, W_CASTLE = 8, W_STATE = 9, W_PLAYED = 10, ROW = 11 };

static uint32_t word_at(const float *t, size_t i)
{
    uint32_t w;
    memcpy(&w, &t[i], 4);
    return w;
}

static void put_word(float *t, size_t i, uint32_t w)
{
    memcpy(&t[i], &w, 4);
}

static void put_row(float *row, const lc_game_pos *p, uint16_t played, uint16_t now)
{
    uint32_t board[8] = {0};
    for (int i = 0; i < 12; i++)
        for (uint64_t b = p->pos.bb[i]; b; b &= b - 1) {
            int s = __builtin_ctzll(b);
            board[s / 8] |= (uint32_t)(i + 1) << (4 * (s % 8));
        }
    for (int w = 0; w < 8; w++)
        put_word(row, (size_t)w, board[w]);
    uint32_t castle;
    memcpy(&castle, p->pos.castle, 4);
    put_word(row, W_CASTLE, castle);
    put_word(row, W_STATE,
             (uint32_t)(uint8_t)(p->ep_flag + 1) | (uint32_t)p->black << 8 |
                 (uint32_t)p->repetitions << 16 | (uint32_t)p->pos.rule50 << 24);
    put_word(row, W_PLAYED, played | (uint32_t)now << 16);
}

static void get_row(const float *row, lc_game_pos *p)
{
    memset(p, 0, sizeof *p);
    for (int w = 0; w < 8; w++) {
        uint32_t word = word_at(row, (size_t)w);
        for (int k = 0; k < 8; k++) {
            unsigned piece = (word >> (4 * k)) & 15;
            if (piece)
                p->pos.bb[piece - 1] |= 1ULL << (w * 8 + k);
        }
    }
    for (int i = 0; i < 6; i++) {
        p->pos.ours |= p->pos.bb[LC_OURS + i];
        p->pos.theirs |= p->pos.bb[LC_THEIRS + i];
    }
    p->pos.pieces = (uint8_t)__builtin_popcountll(p->pos.ours | p->pos.theirs);
    uint32_t castle = word_at(row, W_CASTLE), state = word_at(row, W_STATE);
    memcpy(p->pos.castle, &castle, 4);
    p->pos.castling = castle != 0;
    p->ep_flag = (int8_t)((int)(state & 0xFF) - 1);
    p->pos.ep_file = p->ep_flag;
    p->black = (state >> 8) & 1;
    p->repetitions = (uint8_t)(state >> 16);
    p->pos.rule50 = (uint8_t)(state >> 24);
}

float *lc_game_format_table(const lc_frame *frames, uint32_t n, uint32_t new_format,
                            size_t *n_floats, lc_error *err)
{
    if (!lc_input_format_known(new_format)) {
        lc_error_set(err, LC_ECONFIG,
                     "new_input_format: %u is not an input format lcmon reads; give one of 1, 2, "
                     "3, 4, 5, 132, 133, or leave it unset",
                     new_format);
        return NULL;
    }
    for (uint32_t k = 0; k < n; k++)
        if (!lc_input_format_known(frames[k].input_format)) {
            lc_error_set(err, LC_EFORMAT,
                         "new_input_format: position %u of the game has input_format %u, none "
                         "that lcmon reads (1, 2, 3, 4, 5, 132, 133)",
                         k, frames[k].input_format);
            return NULL;
        }
    lc_game_pos *g = lc_xmalloc((n ? n : 1) * sizeof *g);
    if (lc_game_history_frames(frames, n, g, err) != 0) {
        free(g);
        lc_error_prefix(err, "new_input_format: ");
        return NULL;
    }
    *n_floats = HEAD + (size_t)ROW * n;
    float *t = lc_xmalloc(*n_floats * sizeof *t);
    put_word(t, 0, n);
    put_word(t, 1, new_format);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t first = lc_game_encode_first(&g[0].pos.rule50, sizeof *g, k, new_format);
        lc_encoded e;
        lc_game_encode(g + first, k - first, new_format, &e);
        lc_move moves[LC_MAX_MOVES];
        unsigned nm = lc_position_legal_moves(&g[k].pos, moves);
        int now =
            lc_transform_move_index(moves, nm, g[k].transform, e.transform, frames[k].played_idx);
        uint16_t played = frames[k].played_idx;
        put_row(t + HEAD + (size_t)ROW * k, &g[k], played, now < 0 ? played : (uint16_t)now);
    }
    free(g);
    return t;
}

typedef struct entry {
    uint16_t idx;
    float val;
} entry;

static int entry_cmp(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static void frame_slot(lc_frame *f, unsigned k, uint16_t **idx, float **val)
{
    *idx = lc_frame_policy_idx_at(f, k);
    *val = lc_frame_policy_val_at(f, k);
}

/* The frame's value at policy index i, or NULL. */
static const float *frame_value(lc_frame *f, unsigned i)
{
    for (unsigned k = 0; k < f->n_policy; k++) {
        uint16_t *idx;
        float *val;
        frame_slot(f, k, &idx, &val);
        if (*idx == i)
            return val;
    }
    return NULL;
}

/* The policy moved from transform from_t to to_t over p's legal moves
 * (entries of other indices dropped), played_idx and best_idx with it. */
static void move_frame_policy(lc_frame *f, const lc_game_pos *p, int from_t, int to_t)
{
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&p->pos, moves), kept = 0;
    entry e[LC_MAX_MOVES];
    for (unsigned m = 0; m < n; m++) {
        int i = lc_move_policy_transformed(&moves[m], (unsigned)to_t);
        int j = lc_move_policy_transformed(&moves[m], (unsigned)from_t);
        const float *v =
            i < LC_POLICY_SIZE && j < LC_POLICY_SIZE ? frame_value(f, (unsigned)j) : NULL;
        if (v)
            e[kept++] = (entry){(uint16_t)i, *v};
    }
    qsort(e, kept, sizeof *e, entry_cmp);
    for (unsigned k = 0; k < kept; k++) {
        uint16_t *idx;
        float *val;
        frame_slot(f, k, &idx, &val);
        *idx = e[k].idx;
        *val = e[k].val;
    }
    f->n_policy = (uint16_t)kept;
    if (kept <= LC_FRAME_INLINE_POLICY) {
        free(f->overflow_idx);
        free(f->overflow_val);
        f->overflow_idx = NULL;
        f->overflow_val = NULL;
    }
    if (f->version < 6)
        return;
    int played = lc_transform_move_index(moves, n, from_t, to_t, f->played_idx);
    int best = lc_transform_move_index(moves, n, from_t, to_t, f->best_idx);
    f->played_idx = played < 0 ? f->played_idx : (uint16_t)played;
    f->best_idx = best < 0 ? f->best_idx : (uint16_t)best;
}

/* opp_played_idx and next_played_idx moved as the positions they name. */
static void move_next_moves(const float *table, uint32_t n, uint32_t i, lc_frame *f)
{
    uint16_t *next[2] = {&f->opp_played_idx, &f->next_played_idx};
    for (uint32_t d = 1; d <= 2 && i + d < n; d++) {
        uint32_t w = word_at(table, HEAD + (size_t)ROW * (i + d) + W_PLAYED);
        if (*next[d - 1] == (w & 0xFFFF))
            *next[d - 1] = (uint16_t)(w >> 16);
    }
}

int lc_game_format_table_apply(const float *table, uint32_t i, lc_frame *f, lc_error *err)
{
    uint32_t n = word_at(table, 0), format = word_at(table, 1);
    if (i >= n)
        return lc_error_set(err, LC_EFORMAT, "new_input_format: position %u of a game of %u", i, n);
    uint8_t rule50[256];
    uint32_t lo = i > 255 ? i - 255 : 0;
    for (uint32_t j = lo; j <= i; j++)
        rule50[j - lo] = (uint8_t)(word_at(table, HEAD + (size_t)ROW * j + W_STATE) >> 24);
    uint32_t first = lo + lc_game_encode_first(rule50, 1, i - lo, format);
    lc_game_pos *g = lc_xmalloc((i - first + 1) * sizeof *g);
    for (uint32_t j = first; j <= i; j++)
        get_row(table + HEAD + (size_t)ROW * j, &g[j - first]);
    lc_encoded e;
    lc_game_encode(g, i - first, format, &e);
    const lc_game_pos *p = &g[i - first];
    int old_t = lc_input_format_canonical(f->input_format) ? f->invariance_info & 7 : 0;
    if (old_t != e.transform)
        move_frame_policy(f, p, old_t, e.transform);
    move_next_moves(table, n, i, f);
    memcpy(f->planes, e.planes, sizeof e.planes);
    f->castling_us_ooo = e.castling[0];
    f->castling_us_oo = e.castling[1];
    f->castling_them_ooo = e.castling[2];
    f->castling_them_oo = e.castling[3];
    f->side_to_move_or_enpassant = e.stm_or_ep;
    uint8_t inv = f->invariance_info & 0x78;
    if (lc_input_format_canonical(format))
        inv |= (uint8_t)(e.transform | (p->black ? 0x80 : 0));
    f->invariance_info = inv;
    f->input_format = format;
    free(g);
    return 0;
}
