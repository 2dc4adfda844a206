/*
 * games: the games of a Parquet table of analysed games
 * (docs/chess-transformer-data.md), assembled from its rows wherever they
 * lie. parquet_game_source schedules the work; this is what it does to a
 * file.
 *
 * Columns. game_id, ply, fen, played_move and best_move are required; win,
 * draw and loss may be absent (every value then counts as missing). The
 * FEN and the moves are text, ply and the outcome numbers; game_id may be
 * either (integer and float ids hash their value).
 *
 * Rows. A row group is read a column chunk at a time and its decoded
 * columns are kept as the reader made them (no value is copied), with a
 * small reference per kept row (id hash, ply, row in the file). Grouping a
 * file's rows into games sorts the references' runs (a run of one id in a
 * chunk is most often a whole game already in ply order), then each game's
 * rows by ply (nulls last, then by row), so a game's rows may lie anywhere
 * in the file, in any order and across row groups. A game whose rows reach
 * the edge of a damaged row group (one that could not be read) may be
 * incomplete and is left out. The games come in one random permutation of
 * the file drawn from its seed, or in the order of their first rows.
 *
 * Sharding (world > 1). Planning reads the game_id column, one row group at
 * a time, and splits the games, in the order of their first rows, into
 * `world` runs of about equal rows (a game goes to the rank whose share its
 * middle row falls in): every rank works out the same split from the file
 * alone, each game is read by exactly one rank, and the ranks are in
 * balance within a game's size whatever the layout. A rank reads only the
 * row groups that hold rows of its games.
 */
#ifndef LC_FORMAT_PARQUET_GAMES_H
#define LC_FORMAT_PARQUET_GAMES_H

#include "core/error.h"
#include "format/parquet/parquet.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    LC_GCOL_ID,
    LC_GCOL_PLY,
    LC_GCOL_FEN,
    LC_GCOL_PLAYED,
    LC_GCOL_BEST,
    LC_GCOL_WIN,
    LC_GCOL_DRAW,
    LC_GCOL_LOSS,
    LC_GAME_COLS
};

/* The columns of a games table in pf: col[k] is the index of column k, < 0
 * for an optional one that is absent. 0, or a negative code with err set
 * ("PATH: column 'fen' is missing (...)"). */
int lc_game_columns(lc_parquet_file *pf, const char *path, int col[LC_GAME_COLS], lc_error *err);

/* The hash of a text (a file name, a string id), the same on every machine. */
uint64_t lc_game_text_hash(const char *s, size_t n);
/* The hash of row i's game id (the row is not null); never 0. */
uint64_t lc_game_id_hash(const lc_parquet_column *c, size_t i);
/* Row i's game id as text: a pointer into the column for a string, else
 * written into buf (at least 32 bytes); *len its length. */
const char *lc_game_id_text(const lc_parquet_column *c, size_t i, char *buf, size_t *len);
/* Row i of a number column (0 and *has false when null or absent). */
double lc_game_number(const lc_parquet_column *c, size_t i, bool *has);

/* An open-addressing set of id hashes. */
typedef struct lc_hash_set {
    uint64_t *v;
    size_t cap, n;
} lc_hash_set;

/* true when h was in the set already (then nothing changes). */
bool lc_hash_set_insert(lc_hash_set *s, uint64_t h);
bool lc_hash_set_has(const lc_hash_set *s, uint64_t h);
void lc_hash_set_fini(lc_hash_set *s);

/* How planning split a file between the ranks. */
typedef struct lc_game_shares {
    size_t n_games;
    uint64_t no_id;        /* rows without a game id */
    uint64_t with_id;      /* rows with one, of every rank */
    uint64_t mine_rows;    /* rows of this rank's games */
    uint64_t other_games;  /* games of the other ranks */
    uint64_t per_rank[16]; /* rows per rank (the first 16) */
} lc_game_shares;

/* Split the games of a file of n_rg row groups (rg_first: the first row of
 * each, [n_rg] the rows) between `world` ranks: this rank's game id hashes
 * go into *mine and the row groups holding rows of them are flagged in
 * need. scratch is a column to read game_id into. */
int lc_game_plan_shares(lc_parquet_file *pf, int id_col, const uint64_t *rg_first, size_t n_rg,
                        uint32_t world, uint32_t rank, lc_parquet_column *scratch,
                        lc_hash_set *mine, uint8_t *need, lc_game_shares *out, lc_error *err);

struct lc_game_chunk;

/* One row kept from a row group: where it lives and how it sorts. */
typedef struct lc_game_ref {
    uint64_t hash; /* of the game id */
    int64_t ply;
    uint64_t row; /* in the file */
    struct lc_game_chunk *chunk;
    uint32_t i; /* row in the chunk's columns */
    uint8_t ply_null;
} lc_game_ref;

/* A row group read: its decoded columns and the rows kept, in row order.
 * `next` links the chunks of a file (or a list of spares: a chunk is
 * reused buffers and all). */
typedef struct lc_game_chunk {
    lc_parquet_column cols[LC_GAME_COLS];
    lc_game_ref *refs;
    size_t n_refs, cap_refs;
    struct lc_game_chunk *next;
} lc_game_chunk;

/* Read row group rg (its first row first_row) into ch, keeping the rows
 * with a game id (and, with mine, only this rank's games); *no_id gets the
 * rows without one. */
int lc_game_read_row_group(lc_parquet_file *pf, const int col[LC_GAME_COLS], size_t rg,
                           uint64_t first_row, const lc_hash_set *mine, lc_game_chunk *ch,
                           uint64_t *no_id, lc_error *err);
void lc_game_chunk_free(lc_game_chunk *ch);

/* A file's games, grouped from its chunks (which must outlive it). */
typedef struct lc_game_groups {
    struct lc_game_seg *segs;
    size_t n_segs;
    struct lc_game_span *games;
    size_t n_games;
    lc_game_ref *tmp;
    size_t cap_tmp;
} lc_game_groups;

/* Group the rows of `chunks` into games, leaving out those that reach a
 * damaged row group (damaged: n_rg flags, or NULL; *left_out their count),
 * in one permutation drawn from seed (shuffle) or in the order of their
 * first rows. */
void lc_game_group(lc_game_groups *gg, const lc_game_chunk *chunks, const uint8_t *damaged,
                   const uint64_t *rg_first, size_t n_rg, bool shuffle, uint64_t seed,
                   size_t *left_out);
/* Game i's rows in ply order (valid until the next call); *n their count. */
const lc_game_ref *lc_game_rows(lc_game_groups *gg, size_t i, size_t *n);
void lc_game_groups_fini(lc_game_groups *gg);

#endif
