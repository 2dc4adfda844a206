/*
 * chess_vocab: the 1960-token vocabulary of the chess-transformer pipelines
 * (docs/chess-transformer-data.md, "Tokens").
 *
 *   0-1791     moves: for each from-square a1..h8 (square = rank * 8 + file),
 *              every other square on the same file, rank or diagonal, or a
 *              knight's jump away, in ascending square order
 *   1792-1857  white promotions (rank 7 to 8): from-file a..h, to-file f-1, f,
 *              f+1 (those on the board), each pair with suffix q, r, b
 *   1858-1923  black promotions (rank 2 to 1), the same pattern
 *   1924-1935  pieces: white king, queen, rook, bishop, knight, pawn, then black
 *   1936-1943  start_pos, end_pos, white_to_move, black_to_move, empty, pad,
 *              bos, eos
 *   1944-1959  castling rights: K, Q, k, q, KQ, Kk, Kq, Qk, Qq, kq, KQk, KQq,
 *              Kkq, Qkq, KQkq, no_castling_rights
 *
 * lc_chess_move_id looks moves up exactly as written. The vocabulary spells
 * castling as the king taking its own rook (e1h1, e1a1, e8h8, e8a8) and a
 * knight promotion as the plain four-character move; these are ordinary
 * entries of the move table: "e1g1" is the ordinary token e1g1 (the king
 * moving two squares), "a7a8n" and "e2e4 " are not in the vocabulary. That
 * is the reference loader's behaviour (it looks the Parquet strings up in a
 * dictionary). lc_chess_uci_move_id first maps the standard UCI spellings
 * that engines write (game_tokenizer's uci_spellings, on by default).
 *
 * The lookup tables are built once, on first use (pthread_once); every
 * function here may then be called from any thread. Lookups are two table
 * reads and never allocate.
 */
#ifndef LC_FORMAT_CHESS_CHESS_VOCAB_H
#define LC_FORMAT_CHESS_CHESS_VOCAB_H

#include <stddef.h>

enum {
    LC_CHESS_VOCAB_SIZE = 1960,
    LC_CHESS_N_PLAIN_MOVES = 1792,
    LC_CHESS_WHITE_PROMO_FIRST = 1792,
    LC_CHESS_BLACK_PROMO_FIRST = 1858,
    LC_CHESS_N_PROMO_PER_SIDE = 66,
    LC_CHESS_N_MOVES = 1924,

    LC_TOK_WHITE_KING = 1924,
    LC_TOK_WHITE_QUEEN,
    LC_TOK_WHITE_ROOK,
    LC_TOK_WHITE_BISHOP,
    LC_TOK_WHITE_KNIGHT,
    LC_TOK_WHITE_PAWN,
    LC_TOK_BLACK_KING,
    LC_TOK_BLACK_QUEEN,
    LC_TOK_BLACK_ROOK,
    LC_TOK_BLACK_BISHOP,
    LC_TOK_BLACK_KNIGHT,
    LC_TOK_BLACK_PAWN, /* 1935 */
    LC_TOK_START_POS,  /* 1936 */
    LC_TOK_END_POS,
    LC_TOK_WHITE_TO_MOVE,
    LC_TOK_BLACK_TO_MOVE,
    LC_TOK_EMPTY,
    LC_TOK_PAD, /* 1941 */
    LC_TOK_BOS,
    LC_TOK_EOS,            /* 1943 */
    LC_TOK_CASTLING_FIRST, /* 1944: "K" */
    LC_TOK_NO_CASTLING = 1959,
};

/* Castling-right bits, as lc_chess_castling_token takes them. */
enum {
    LC_CASTLE_K = 1, /* white king side */
    LC_CASTLE_Q = 2, /* white queen side */
    LC_CASTLE_k = 4, /* black king side */
    LC_CASTLE_q = 8, /* black queen side */
};

/*
 * A move outside the vocabulary. Not an LC_E* code of core/error.h, so that
 * callers can tell "skip this game or position and count it" from malformed
 * data; lc_chess_strerror knows its text.
 */
#define LC_CHESS_EOOV (-10100)

/* The id of the UCI move s[0..len), or LC_CHESS_EOOV when it is not one of the
 * 1924 move tokens. s need not be NUL-terminated. */
int lc_chess_move_id(const char *s, size_t len);

/* As lc_chess_move_id, but first mapping the standard UCI spellings that
 * engines and python-chess write to the vocabulary's: a knight promotion
 * "a7a8n" is the plain "a7a8", and castling "e1g1" / "e1c1" (and "e8g8" /
 * "e8c8") is the king taking its rook, "e1h1" / "e1a1", but only when the
 * FEN fen[0..fen_len) of the position before the move has that side's king
 * on its start square (so a king that merely steps two squares elsewhere is
 * never touched). A move already in the vocabulary's spelling is looked up
 * as it is. */
int lc_chess_uci_move_id(const char *fen, size_t fen_len, const char *s, size_t len);

/* The id of any token by its name (a move, "pad", "white_king", "KQkq",
 * "no_castling_rights", ...), or LC_CHESS_EOOV. Moves are fast; other names
 * are a short linear search. */
int lc_chess_token_id(const char *s, size_t len);

/* The name of token id (a static NUL-terminated string), or NULL when id is
 * not in [0, LC_CHESS_VOCAB_SIZE). */
const char *lc_chess_token_name(int id);

/* The castling token for a set of LC_CASTLE_* bits (0 gives
 * no_castling_rights). Bits above the four are ignored. */
int lc_chess_castling_token(unsigned rights);

/* lc_strerror, plus the text of LC_CHESS_EOOV. */
const char *lc_chess_strerror(int code);

#endif
