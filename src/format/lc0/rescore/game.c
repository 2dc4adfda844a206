/*
 * game: the records of one game read as a history (game.h).
 *
 * Finding the move. Record i+1's board, in the true frame, is the board
 * after the move seen from the other side: mirrored top-bottom with the
 * sides swapped. Our pieces that are gone from their squares in it give
 * the move's from-square; only the legal moves from such a square (and
 * castling, where a Chess960 king may stay on its square) are played and
 * their child compared with record i+1's twelve piece boards. A promotion
 * has four candidates, which the comparison tells apart.
 *
 * Repetitions are lc0's (PositionHistory::ComputeLastMoveRepetitions):
 * from a position whose counter is at least 4, every second position back
 * while the counter allows; equal boards are equal pieces, castling rights
 * and en passant (lc0 keeps an en-passant square only when a pawn can take
 * it, lc_position_ep_square's rule).
 */
#include "format/lc0/rescore/game.h"

#include "core/error.h"
#include "format/lc0/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lc_game_init(lc_game *g)
{
    memset(g, 0, sizeof *g);
}

void lc_game_fini(lc_game *g)
{
    free(g->ply);
    memset(g, 0, sizeof *g);
}

static void reserve(lc_game *g, uint32_t n)
{
    if (n <= g->cap)
        return;
    uint32_t cap = g->cap ? g->cap : 256;
    while (cap < n)
        cap *= 2;
    lc_game_ply *p = realloc(g->ply, (size_t)cap * sizeof *p);
    if (!p)
        lc_fatal("game: out of memory for %u plies", cap);
    g->ply = p;
    g->cap = cap;
}

/* ---- transforms ---- */

/* Transpose across the a8-h1 diagonal: (rank, file) to (7 - file, 7 - rank).
 * Only pawnless boards are transposed, few pieces as a rule: bit by bit. */
static uint64_t transpose(uint64_t m)
{
    uint64_t out = 0;
    for (; m; m &= m - 1) {
        int s = __builtin_ctzll(m), r = s >> 3, f = s & 7;
        out |= 1ull << ((7 - f) * 8 + (7 - r));
    }
    return out;
}

static uint64_t mask_transform(uint64_t m, unsigned t, bool apply)
{
    if (apply) { /* flip, mirror, transpose: lc0's encoder's order */
        if (t & 1u)
            m = lc_plane_squares(m); /* the bits of every rank reversed: files mirrored */
        if (t & 2u)
            m = __builtin_bswap64(m);
        if (t & 4u)
            m = transpose(m);
    } else { /* each is its own inverse: the other order */
        if (t & 4u)
            m = transpose(m);
        if (t & 2u)
            m = __builtin_bswap64(m);
        if (t & 1u)
            m = lc_plane_squares(m);
    }
    return m;
}

static uint8_t reverse8(uint8_t b)
{
    return (uint8_t)(lc_plane_squares(b) & 0xFF);
}

void lc_position_transform(lc_position *p, unsigned t, bool apply)
{
    t &= 7u;
    if (!t)
        return;
    p->ours = p->theirs = 0;
    for (int i = 0; i < 12; i++) {
        p->bb[i] = mask_transform(p->bb[i], t, apply);
        if (i < 6)
            p->ours |= p->bb[i];
        else
            p->theirs |= p->bb[i];
    }
    /* Castling rights and en passant exist only where lc0 flips at most
     * (mirror and transpose need a board without pawns or rights). */
    if (t & 1u) {
        for (int i = 0; i < 4; i++)
            p->castle[i] = reverse8(p->castle[i]);
        if (p->ep_file >= 0)
            p->ep_file = (int8_t)(7 - p->ep_file);
    }
}

/* ---- records ---- */

static bool canonical(uint32_t input_format)
{
    return input_format == 3 || input_format == 4 || input_format == 5 || input_format == 132 ||
           input_format == 133;
}

/* Record rec's board in the true frame, and its transform. */
static bool record_position(const uint8_t *rec, uint32_t version, lc_position *p, uint8_t *t)
{
    *t = 0;
    if (!lc_position_from_record(rec, version, p))
        return false;
    if (version >= 5) {
        uint32_t format;
        uint8_t inv;
        LC_REC_GET(rec, input_format, format);
        LC_REC_GET(rec, invariance_info, inv);
        if (canonical(format))
            *t = inv & 7u;
    }
    lc_position_transform(p, *t, false);
    return true;
}

static bool same_board(const lc_position *a, const lc_position *b)
{
    if (memcmp(a->bb, b->bb, sizeof a->bb) != 0 || memcmp(a->castle, b->castle, 4) != 0)
        return false;
    int ea = lc_position_ep_square(a), eb = lc_position_ep_square(b);
    return ea == eb;
}

static uint8_t repetitions(const lc_game *g, uint32_t k)
{
    const lc_game_ply *last = &g->ply[k];
    if (last->rule50 < 4)
        return 0;
    for (int64_t i = (int64_t)k - 2; i >= 0; i -= 2) {
        const lc_game_ply *p = &g->ply[i];
        if (same_board(&p->pos, &last->pos))
            return p->reps < 255 ? (uint8_t)(p->reps + 1) : 255;
        if (p->rule50 < 2)
            return 0;
    }
    return 0;
}

/* The legal move of `from` whose child has next's pieces, into *m. */
static bool find_move(const lc_position *from, const lc_position *next, lc_move *m,
                      lc_position *child)
{
    lc_move moves[LC_MAX_MOVES];
    /* next's "theirs" are our pieces after the move, mirrored top-bottom. */
    uint64_t gone = from->ours & ~__builtin_bswap64(next->theirs);
    unsigned n = lc_position_legal_moves_from(from, gone, moves);
    for (unsigned i = 0; i < n; i++) {
        lc_position_play(from, &moves[i], child);
        if (memcmp(child->bb, next->bb, sizeof child->bb) == 0) {
            *m = moves[i];
            return true;
        }
    }
    return false;
}

static bool not_a_board(char *why, size_t why_size, uint32_t k)
{
    if (why && why_size)
        snprintf(why, why_size,
                 "record %u: its planes are not a board (one king a side, no two pieces on a "
                 "square, no pawn on the first or last rank)",
                 k);
    return false;
}

bool lc_game_read(lc_game *g, const uint8_t *records, size_t record_size, uint32_t n,
                  uint32_t version, char *why, size_t why_size)
{
    reserve(g, n);
    g->n = n;
    g->moves = 0;
    g->history = true;
    if (n == 0)
        return true;
    lc_game_ply *first = &g->ply[0];
    if (!record_position(records, version, &first->pos, &first->transform))
        return not_a_board(why, why_size, 0);
    first->rule50 = first->pos.rule50;
    first->reps = 0;
    first->readable = true;
    for (uint32_t i = 0; i + 1 < n; i++) {
        lc_game_ply *cur = &g->ply[i], *next = &g->ply[i + 1];
        lc_position board;
        uint8_t t;
        if (!record_position(records + (size_t)(i + 1) * record_size, version, &board, &t))
            return not_a_board(why, why_size, i + 1);
        lc_move m;
        if (!find_move(&cur->pos, &board, &m, &next->pos)) {
            if (why && why_size)
                snprintf(why, why_size,
                         "record %u: no legal move of record %u leads to its board (the records "
                         "of a game are consecutive plies)",
                         i + 1, i);
            return false;
        }
        cur->move = lc_move_policy_transformed(&m, cur->transform);
        g->moves = i + 1;
        next->rule50 = next->pos.rule50 == 0 ? 0 : cur->rule50 + 1;
        next->transform = t;
        next->readable = true;
        next->reps = repetitions(g, i + 1);
    }
    g->ply[n - 1].move = LC_GAME_NO_MOVE;
    return true;
}

void lc_game_read_records(lc_game *g, const uint8_t *records, size_t record_size, uint32_t n,
                          uint32_t version)
{
    reserve(g, n);
    g->n = n;
    g->moves = 0;
    g->history = false;
    for (uint32_t i = 0; i < n; i++) {
        lc_game_ply *p = &g->ply[i];
        p->readable =
            record_position(records + (size_t)i * record_size, version, &p->pos, &p->transform);
        p->rule50 = p->readable ? p->pos.rule50 : 0;
        p->move = LC_GAME_NO_MOVE;
        p->reps = 0;
    }
}

bool lc_game_no_reps(const lc_game *g, uint32_t k)
{
    int steps = g->ply[k].rule50;
    if (steps == 0)
        return true;
    if (!g->history || (int64_t)steps > (int64_t)k + 1)
        return false;
    for (int i = 0; i < steps; i++)
        if (g->ply[k - (uint32_t)i].reps != 0)
            return false;
    return true;
}

bool lc_game_repeated_since_zeroing(const lc_game *g, uint32_t k)
{
    if (!g->history)
        return g->ply[k].rule50 >= 4;
    for (int64_t i = k; i >= 0; i--) {
        if (g->ply[i].reps > 0)
            return true;
        if (g->ply[i].rule50 == 0)
            return false;
    }
    return false;
}
