/*
 * What the chess tokenizer's tests share: the start position, a move's id
 * by its text, and FEN tokens read from an exact copy (no NUL after it, so
 * that ASan sees any read past the end).
 */
#ifndef LC_TESTS_CHESS_TEST_H
#define LC_TESTS_CHESS_TEST_H

#include "core/error.h"
#include "format/chess/chess_tokens.h"
#include "format/chess/chess_vocab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define START_FEN "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"

static inline int move_id(const char *s)
{
    return lc_chess_move_id(s, strlen(s));
}

/* A copy of s without its NUL, so that ASan sees any read past the end. */
static inline char *exact_copy(const char *s)
{
    size_t n = strlen(s);
    char *p = malloc(n ? n : 1);
    memcpy(p, s, n);
    return p;
}

static inline int fen_tokens(const char *fen, int64_t out[68], lc_error *err)
{
    char *p = exact_copy(fen);
    int rc = lc_chess_fen_tokens(p, strlen(fen), out, err);
    free(p);
    return rc;
}

#endif
