/*
 * chess_vocab: see chess_vocab.h. The move table is generated once from the
 * rule in the doc rather than written out, so that the ordering lives in one
 * loop; the tests pin it with the doc's check values and the counts.
 *
 * Two 4096-entry tables indexed by from * 64 + to serve the lookups: the
 * plain move's id (or -1), and the id of the queen promotion of that
 * from/to pair (or -1), the rook and bishop promotions following it.
 */
#include "format/chess/chess_vocab.h"

#include "core/error.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t vocab_once = PTHREAD_ONCE_INIT;
static int16_t plain_id[64 * 64];
static int16_t promo_id[64 * 64];
static char move_name[LC_CHESS_N_MOVES][6];
/* Castling token minus LC_TOK_CASTLING_FIRST, by LC_CASTLE_* bits; vocab_build
 * checks it against the names. */
static const int8_t castling_by_rights[16] = {
    15, 0, 1, 4, 2, 5, 7, 10, 3, 6, 8, 11, 9, 12, 13, 14,
};

/* Ids 1924-1959, in id order. */
/* clang-format off */
static const char *const other_names[LC_CHESS_VOCAB_SIZE - LC_CHESS_N_MOVES] = {
    "white_king", "white_queen", "white_rook", "white_bishop", "white_knight", "white_pawn",
    "black_king", "black_queen", "black_rook", "black_bishop", "black_knight", "black_pawn",
    "start_pos", "end_pos", "white_to_move", "black_to_move", "empty", "pad", "bos", "eos",
    "K", "Q", "k", "q", "KQ", "Kk", "Kq", "Qk", "Qq", "kq", "KQk", "KQq", "Kkq", "Qkq", "KQkq",
    "no_castling_rights",
};
/* clang-format on */

static int reaches(int from, int to)
{
    int df = abs(to % 8 - from % 8), dr = abs(to / 8 - from / 8);
    if (from == to)
        return 0;
    if (df == 0 || dr == 0 || df == dr)
        return 1; /* file, rank or diagonal */
    return (df == 1 && dr == 2) || (df == 2 && dr == 1);
}

static void square_name(char *out, int sq)
{
    out[0] = (char)('a' + sq % 8);
    out[1] = (char)('1' + sq / 8);
}

static void add_promotions(int *id, int from_rank, int to_rank)
{
    static const char suffix[3] = {'q', 'r', 'b'};
    for (int ff = 0; ff < 8; ff++) {
        for (int tf = ff - 1; tf <= ff + 1; tf++) {
            if (tf < 0 || tf > 7)
                continue;
            int from = from_rank * 8 + ff, to = to_rank * 8 + tf;
            promo_id[from * 64 + to] = (int16_t)*id;
            for (int p = 0; p < 3; p++) {
                char *n = move_name[*id];
                square_name(n, from);
                square_name(n + 2, to);
                n[4] = suffix[p];
                n[5] = '\0';
                (*id)++;
            }
        }
    }
}

static void vocab_build(void)
{
    memset(plain_id, 0xff, sizeof plain_id);
    memset(promo_id, 0xff, sizeof promo_id);
    int id = 0;
    for (int from = 0; from < 64; from++) {
        for (int to = 0; to < 64; to++) {
            if (!reaches(from, to))
                continue;
            plain_id[from * 64 + to] = (int16_t)id;
            square_name(move_name[id], from);
            square_name(move_name[id] + 2, to);
            move_name[id][4] = '\0';
            id++;
        }
    }
    if (id != LC_CHESS_N_PLAIN_MOVES)
        lc_fatal("chess_vocab: %d plain moves, expected %d", id, LC_CHESS_N_PLAIN_MOVES);
    add_promotions(&id, 6, 7);
    add_promotions(&id, 1, 0);
    if (id != LC_CHESS_N_MOVES)
        lc_fatal("chess_vocab: %d moves, expected %d", id, LC_CHESS_N_MOVES);

    /* The castling token of each set of rights is the one whose name lists
     * the rights in the order K, Q, k, q. */
    for (unsigned r = 0; r < 16; r++) {
        char name[5];
        size_t n = 0;
        if (r & LC_CASTLE_K)
            name[n++] = 'K';
        if (r & LC_CASTLE_Q)
            name[n++] = 'Q';
        if (r & LC_CASTLE_k)
            name[n++] = 'k';
        if (r & LC_CASTLE_q)
            name[n++] = 'q';
        name[n] = '\0';
        int tok = LC_TOK_NO_CASTLING;
        for (int t = LC_TOK_CASTLING_FIRST; n && t < LC_TOK_NO_CASTLING; t++)
            if (strcmp(other_names[t - LC_CHESS_N_MOVES], name) == 0)
                tok = t;
        if (castling_by_rights[r] != tok - LC_TOK_CASTLING_FIRST)
            lc_fatal("chess_vocab: castling table wrong for \"%s\"", name);
    }
}

static inline void vocab_init(void)
{
    if (pthread_once(&vocab_once, vocab_build) != 0)
        lc_fatal("chess_vocab: pthread_once failed");
}

int lc_chess_move_id(const char *s, size_t len)
{
    if (len != 4 && len != 5)
        return LC_CHESS_EOOV;
    const unsigned char *u = (const unsigned char *)s;
    unsigned ff = u[0] - (unsigned)'a', fr = u[1] - (unsigned)'1';
    unsigned tf = u[2] - (unsigned)'a', tr = u[3] - (unsigned)'1';
    if ((ff | fr | tf | tr) > 7)
        return LC_CHESS_EOOV;
    vocab_init();
    unsigned key = (fr * 8 + ff) * 64 + tr * 8 + tf;
    if (len == 4) {
        int id = plain_id[key];
        return id >= 0 ? id : LC_CHESS_EOOV;
    }
    int base = promo_id[key];
    if (base < 0)
        return LC_CHESS_EOOV;
    switch (u[4]) {
    case 'q':
        return base;
    case 'r':
        return base + 1;
    case 'b':
        return base + 2;
    default:
        return LC_CHESS_EOOV;
    }
}

/* The piece letter on square `sq` ("e1") in a FEN's placement field, '.'
 * when empty or when the field cannot be read. */
static char fen_piece_at(const char *fen, size_t len, const char *sq)
{
    int want_file = sq[0] - 'a', want_rank = sq[1] - '1';
    int rank = 7, file = 0;
    for (size_t i = 0; i < len && fen[i] != ' '; i++) {
        char c = fen[i];
        if (c == '/') {
            rank--;
            file = 0;
        } else if (c >= '1' && c <= '8') {
            file += c - '0';
        } else {
            if (rank == want_rank && file == want_file)
                return c;
            file++;
        }
        if (rank < 0)
            break;
    }
    return '.';
}

int lc_chess_uci_move_id(const char *fen, size_t fen_len, const char *s, size_t len)
{
    if (len == 5 && s[4] == 'n') /* a knight promotion: the plain move */
        return lc_chess_move_id(s, 4);
    if (len == 4 && fen && s[0] == 'e' && (s[1] == '1' || s[1] == '8') && s[3] == s[1] &&
        (s[2] == 'g' || s[2] == 'c')) {
        char king = s[1] == '1' ? 'K' : 'k';
        if (fen_piece_at(fen, fen_len, s) == king) {
            char to[4] = {'e', s[1], s[2] == 'g' ? 'h' : 'a', s[1]};
            return lc_chess_move_id(to, 4);
        }
    }
    return lc_chess_move_id(s, len);
}

int lc_chess_token_id(const char *s, size_t len)
{
    int id = lc_chess_move_id(s, len);
    if (id >= 0)
        return id;
    for (int i = 0; i < LC_CHESS_VOCAB_SIZE - LC_CHESS_N_MOVES; i++)
        if (strlen(other_names[i]) == len && memcmp(other_names[i], s, len) == 0)
            return LC_CHESS_N_MOVES + i;
    return LC_CHESS_EOOV;
}

const char *lc_chess_token_name(int id)
{
    if (id < 0 || id >= LC_CHESS_VOCAB_SIZE)
        return NULL;
    if (id >= LC_CHESS_N_MOVES)
        return other_names[id - LC_CHESS_N_MOVES];
    vocab_init();
    return move_name[id];
}

int lc_chess_castling_token(unsigned rights)
{
    return LC_TOK_CASTLING_FIRST + castling_by_rights[rights & 15];
}

const char *lc_chess_strerror(int code)
{
    return code == LC_CHESS_EOOV ? "move not in the chess vocabulary" : lc_strerror(code);
}
