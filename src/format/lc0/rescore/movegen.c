/*
 * movegen: the legal moves of a position in the plane frame (position.h)
 * and their lc0 policy indices.
 *
 * Moves are generated piece by piece (attack sets from small tables and ray
 * walks: the rescorer asks for moves only in tablebase positions, a handful
 * of pieces), each one played on a copy of the bitboards and kept when our
 * king is not attacked afterwards. Castling follows the rules of Chess960,
 * which include the classical ones: the king goes to the c or g file, the
 * rook to the d or f file, every square either crosses is empty but for the
 * two of them, and the king is not attacked on its square, on the squares
 * it crosses or where it lands. lc0 writes castling as the king taking its
 * own rook, and so does the policy index here.
 *
 * The policy index of a move is its id in the chess vocabulary
 * (format/chess/chess_vocab.h): ids 0..1857 are lc0's policy order, the
 * 1792 queen-like and knight moves by from-square then to-square, then the
 * promotions from rank 7 to rank 8 with q, r, b; a knight promotion is the
 * plain move. The table is built from the vocabulary once (pthread_once).
 */
#include "format/lc0/rescore/position.h"

#include "core/error.h"
#include "format/chess/chess_vocab.h"

#include <pthread.h>
#include <string.h>

static uint16_t plain_index[64][64];    /* 0xFFFF where not a move */
static uint16_t promo_index[64][64][3]; /* q, r, b */
static uint64_t knight_att[64], king_att[64];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static int move_id(int from, int to, char promo)
{
    char s[5] = {(char)('a' + from % 8), (char)('1' + from / 8), (char)('a' + to % 8),
                 (char)('1' + to / 8), promo};
    return lc_chess_move_id(s, promo ? 5 : 4);
}

static uint64_t jumps(int sq, const int (*d)[2])
{
    uint64_t b = 0;
    for (int k = 0; k < 8; k++) {
        int r = sq / 8 + d[k][0], f = sq % 8 + d[k][1];
        if (r >= 0 && r < 8 && f >= 0 && f < 8)
            b |= 1ull << (r * 8 + f);
    }
    return b;
}

static void tables_build(void)
{
    static const int kn[8][2] = {{1, 2},  {2, 1},  {-1, 2},  {-2, 1},
                                 {1, -2}, {2, -1}, {-1, -2}, {-2, -1}};
    static const int kg[8][2] = {{1, 0}, {-1, 0}, {0, 1},  {0, -1},
                                 {1, 1}, {1, -1}, {-1, 1}, {-1, -1}};
    memset(plain_index, 0xff, sizeof plain_index);
    memset(promo_index, 0xff, sizeof promo_index);
    for (int from = 0; from < 64; from++) {
        knight_att[from] = jumps(from, kn);
        king_att[from] = jumps(from, kg);
        for (int to = 0; to < 64; to++) {
            int id = move_id(from, to, 0);
            if (id >= 0 && id < LC_POLICY_SIZE)
                plain_index[from][to] = (uint16_t)id;
            for (int p = 0; p < 3 && from / 8 == 6 && to / 8 == 7; p++) {
                id = move_id(from, to, "qrb"[p]);
                if (id >= 0 && id < LC_POLICY_SIZE)
                    promo_index[from][to][p] = (uint16_t)id;
            }
        }
    }
}

static void tables_init(void)
{
    if (pthread_once(&tables_once, tables_build) != 0)
        lc_fatal("movegen: pthread_once failed");
}

/* ---- attacks ---- */

static uint64_t ray_attacks(int sq, uint64_t occ, const int (*d)[2])
{
    uint64_t b = 0;
    for (int k = 0; k < 4; k++) {
        int r = sq / 8 + d[k][0], f = sq % 8 + d[k][1];
        while (r >= 0 && r < 8 && f >= 0 && f < 8) {
            uint64_t s = 1ull << (r * 8 + f);
            b |= s;
            if (occ & s)
                break;
            r += d[k][0];
            f += d[k][1];
        }
    }
    return b;
}

static const int rook_dirs[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
static const int bishop_dirs[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};

/* Whether square sq is attacked by the side whose pieces are bb[side..side+5]
 * with everything on occ; that side's pawns move down (side LC_THEIRS) or
 * up (LC_OURS). */
static bool attacked_by(const uint64_t *bb, int side, int sq, uint64_t occ)
{
    uint64_t s = 1ull << sq;
    uint64_t pawns = bb[side + LC_PAWN];
    uint64_t pawn_att;
    if (side == LC_THEIRS) /* a pawn on sq + 7 or sq + 9 takes downwards */
        pawn_att =
            ((pawns & ~0x0101010101010101ull) >> 9) | ((pawns & ~0x8080808080808080ull) >> 7);
    else
        pawn_att =
            ((pawns & ~0x0101010101010101ull) << 7) | ((pawns & ~0x8080808080808080ull) << 9);
    if (pawn_att & s)
        return true;
    if (knight_att[sq] & bb[side + LC_KNIGHT])
        return true;
    if (king_att[sq] & bb[side + LC_KING])
        return true;
    uint64_t rq = bb[side + LC_ROOK] | bb[side + LC_QUEEN];
    if (rq && (ray_attacks(sq, occ, rook_dirs) & rq))
        return true;
    uint64_t bq = bb[side + LC_BISHOP] | bb[side + LC_QUEEN];
    return bq && (ray_attacks(sq, occ, bishop_dirs) & bq);
}

bool lc_position_in_check(const lc_position *p)
{
    tables_init();
    int k = __builtin_ctzll(p->bb[LC_OURS + LC_KING]);
    return attacked_by(p->bb, LC_THEIRS, k, p->ours | p->theirs);
}

/* ---- making moves on bitboards ---- */

static int piece_on(const uint64_t *bb, int first, uint64_t s)
{
    for (int i = first; i < first + 6; i++)
        if (bb[i] & s)
            return i;
    return -1;
}

/* Play m on bb (our moves only; castling is the king taking its rook). */
static void apply(uint64_t *bb, const lc_move *m)
{
    uint64_t from = 1ull << m->from, to = 1ull << m->to;
    if (m->flags & LC_MOVE_CASTLE) {
        bool oo = m->to > m->from;
        int rank = m->from & ~7;
        bb[LC_OURS + LC_KING] = 1ull << (rank + (oo ? 6 : 2));
        bb[LC_OURS + LC_ROOK] = (bb[LC_OURS + LC_ROOK] & ~to) | 1ull << (rank + (oo ? 5 : 3));
        return;
    }
    int moving = piece_on(bb, LC_OURS, from);
    if (m->flags & LC_MOVE_EN_PASSANT)
        bb[LC_THEIRS + LC_PAWN] &= ~(to >> 8);
    else if (m->flags & LC_MOVE_CAPTURE)
        for (int i = LC_THEIRS; i < LC_THEIRS + 6; i++)
            bb[i] &= ~to;
    bb[moving] &= ~from;
    bb[m->promotion ? LC_OURS + m->promotion : moving] |= to;
}

static bool leaves_king_safe(const lc_position *p, const lc_move *m)
{
    uint64_t bb[12];
    memcpy(bb, p->bb, sizeof bb);
    apply(bb, m);
    uint64_t occ = 0;
    for (int i = 0; i < 12; i++)
        occ |= bb[i];
    return !attacked_by(bb, LC_THEIRS, __builtin_ctzll(bb[LC_OURS + LC_KING]), occ);
}

/* ---- generating ---- */

typedef struct gen {
    const lc_position *p;
    lc_move *out;
    unsigned n;
    uint64_t from; /* the squares whose pieces move */
} gen;

static void add(gen *g, int from, int to, uint8_t promotion, uint8_t flags)
{
    lc_move m = {(uint8_t)from, (uint8_t)to, promotion, flags, 0};
    if (promotion == LC_QUEEN || promotion == LC_ROOK || promotion == LC_BISHOP)
        m.policy = promo_index[from][to][promotion == LC_QUEEN ? 0 : promotion == LC_ROOK ? 1 : 2];
    else
        m.policy = plain_index[from][to];
    if (m.policy < LC_POLICY_SIZE && g->n < LC_MAX_MOVES && leaves_king_safe(g->p, &m))
        g->out[g->n++] = m;
}

static void add_pawn(gen *g, int from, int to, uint8_t flags)
{
    if (to / 8 == 7)
        for (uint8_t pr = LC_KNIGHT; pr <= LC_QUEEN; pr++)
            add(g, from, to, pr, flags);
    else
        add(g, from, to, 0, flags);
}

static void gen_pawns(gen *g)
{
    const lc_position *p = g->p;
    uint64_t occ = p->ours | p->theirs;
    for (uint64_t b = p->bb[LC_OURS + LC_PAWN] & g->from; b; b &= b - 1) {
        int s = __builtin_ctzll(b), f = s % 8;
        if (!(occ & (1ull << (s + 8)))) {
            add_pawn(g, s, s + 8, 0);
            if (s / 8 == 1 && !(occ & (1ull << (s + 16))))
                add(g, s, s + 16, 0, LC_MOVE_DOUBLE_PUSH);
        }
        for (int df = -1; df <= 1; df += 2) {
            if (f + df < 0 || f + df > 7)
                continue;
            int t = s + 8 + df;
            if (p->theirs & (1ull << t))
                add_pawn(g, s, t, LC_MOVE_CAPTURE);
            else if (s / 8 == 4 && p->ep_file == f + df &&
                     (p->bb[LC_THEIRS + LC_PAWN] & (1ull << (t - 8))))
                add(g, s, t, 0, LC_MOVE_CAPTURE | LC_MOVE_EN_PASSANT);
        }
    }
}

static void gen_pieces(gen *g)
{
    const lc_position *p = g->p;
    uint64_t occ = p->ours | p->theirs;
    for (int piece = LC_KNIGHT; piece <= LC_KING; piece++) {
        for (uint64_t b = p->bb[LC_OURS + piece] & g->from; b; b &= b - 1) {
            int s = __builtin_ctzll(b);
            uint64_t t = piece == LC_KNIGHT ? knight_att[s] : piece == LC_KING ? king_att[s] : 0;
            if (piece == LC_BISHOP || piece == LC_QUEEN)
                t |= ray_attacks(s, occ, bishop_dirs);
            if (piece == LC_ROOK || piece == LC_QUEEN)
                t |= ray_attacks(s, occ, rook_dirs);
            for (t &= ~p->ours; t; t &= t - 1) {
                int to = __builtin_ctzll(t);
                add(g, s, to, 0, (p->theirs & (1ull << to)) ? LC_MOVE_CAPTURE : 0);
            }
        }
    }
}

/* The squares from a to b on rank 0, both included. */
static uint64_t span(int a, int b)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;
    return (0xFFull >> (7 - (hi - lo))) << lo;
}

static void gen_castle(gen *g, uint8_t rook_mask, bool oo)
{
    const lc_position *p = g->p;
    uint64_t king = p->bb[LC_OURS + LC_KING];
    if (!rook_mask || !(king & 0xFF))
        return;
    int k = __builtin_ctzll(king), r = __builtin_ctz(rook_mask);
    if (r > 7 || !(p->bb[LC_OURS + LC_ROOK] & (1ull << r)) || (oo ? r < k : r > k))
        return;
    int kdest = oo ? 6 : 2, rdest = oo ? 5 : 3;
    uint64_t others = (p->ours | p->theirs) & ~(1ull << k) & ~(1ull << r);
    if (others & (span(k, kdest) | span(r, rdest)))
        return;
    uint64_t occ = others | (1ull << k) | (1ull << r);
    for (uint64_t s = span(k, kdest); s; s &= s - 1)
        if (attacked_by(p->bb, LC_THEIRS, __builtin_ctzll(s), occ))
            return;
    add(g, k, r, 0, LC_MOVE_CASTLE);
}

static void sort_by_policy(lc_move *m, unsigned n)
{
    for (unsigned i = 1; i < n; i++) {
        lc_move x = m[i];
        unsigned j = i;
        for (; j > 0 && m[j - 1].policy > x.policy; j--)
            m[j] = m[j - 1];
        m[j] = x;
    }
}

static unsigned generate(const lc_position *p, uint64_t from, lc_move *out)
{
    tables_init();
    gen g = {p, out, 0, from};
    gen_pawns(&g);
    gen_pieces(&g);
    if (p->castling) {
        gen_castle(&g, p->castle[0], false);
        gen_castle(&g, p->castle[1], true);
    }
    return g.n;
}

unsigned lc_position_legal_moves(const lc_position *p, lc_move *out)
{
    unsigned n = generate(p, ~0ull, out);
    sort_by_policy(out, n);
    return n;
}

unsigned lc_position_legal_moves_from(const lc_position *p, uint64_t from, lc_move *out)
{
    return generate(p, from, out);
}

/* ---- policy indices in a transformed frame ---- */

int lc_square_transformed(int s, unsigned t)
{
    int r = s >> 3, f = s & 7;
    if (t & 1u) /* flip: files mirrored */
        f = 7 - f;
    if (t & 2u) /* mirror: ranks mirrored */
        r = 7 - r;
    if (t & 4u) { /* transpose, across the a8-h1 diagonal */
        int nr = 7 - f;
        f = 7 - r;
        r = nr;
    }
    return r * 8 + f;
}

uint16_t lc_move_policy_transformed(const lc_move *m, unsigned t)
{
    if ((t & 7u) == 0)
        return m->policy;
    tables_init();
    int from = lc_square_transformed(m->from, t), to = lc_square_transformed(m->to, t);
    if (m->promotion == LC_QUEEN || m->promotion == LC_ROOK || m->promotion == LC_BISHOP)
        return promo_index[from][to][m->promotion == LC_QUEEN  ? 0
                                     : m->promotion == LC_ROOK ? 1
                                                               : 2];
    return plain_index[from][to];
}

/* ---- the next position ---- */

void lc_position_play(const lc_position *p, const lc_move *m, lc_position *child)
{
    uint64_t bb[12];
    memcpy(bb, p->bb, sizeof bb);
    apply(bb, m);
    memset(child, 0, sizeof *child);
    /* Mirror top-bottom (square s to s ^ 56: the bytes reversed) and swap
     * the sides: the next side to move is "us" and moves up. */
    for (int i = 0; i < 6; i++) {
        child->bb[LC_OURS + i] = __builtin_bswap64(bb[LC_THEIRS + i]);
        child->bb[LC_THEIRS + i] = __builtin_bswap64(bb[LC_OURS + i]);
        child->ours |= child->bb[LC_OURS + i];
        child->theirs |= child->bb[LC_THEIRS + i];
    }
    child->pieces = (uint8_t)__builtin_popcountll(child->ours | child->theirs);
    uint8_t ours_ooo = p->castle[0], ours_oo = p->castle[1];
    uint8_t theirs_ooo = p->castle[2], theirs_oo = p->castle[3];
    if (p->bb[LC_OURS + LC_KING] & (1ull << m->from))
        ours_ooo = ours_oo = 0;
    if (m->from < 8) { /* a rook leaving its square on our first rank */
        ours_ooo &= (uint8_t) ~(1u << m->from);
        ours_oo &= (uint8_t) ~(1u << m->from);
    }
    if (m->to >= 56) { /* a capture on their first rank */
        theirs_ooo &= (uint8_t) ~(1u << (m->to - 56));
        theirs_oo &= (uint8_t) ~(1u << (m->to - 56));
    }
    const uint8_t c[4] = {theirs_ooo, theirs_oo, ours_ooo, ours_oo};
    for (int i = 0; i < 4; i++) {
        child->castle[i] = c[i];
        child->castling |= c[i] != 0;
    }
    bool zeroing = (m->flags & LC_MOVE_CAPTURE) || (p->bb[LC_OURS + LC_PAWN] & (1ull << m->from));
    child->rule50 = zeroing ? 0 : (uint8_t)(p->rule50 < 255 ? p->rule50 + 1 : 255);
    child->ep_file = (m->flags & LC_MOVE_DOUBLE_PUSH) ? (int8_t)(m->from % 8) : -1;
}
