/*
 * game_tokenizer as a stage: batches of the doc's layout in both modes, a
 * game with a move outside the vocabulary (decoder) or a position whose best
 * move is outside it (encoder) skipped and counted, a malformed FEN counted,
 * null values (NULL strings, as parquet_game_source passes them on) spoiling
 * the whole game in decoder mode and only their position in encoder mode
 * (where a null played move does not matter), each counted, and the last
 * (partial) batch of a finite run flagged and zero-padded. The encoder's
 * shuffle buffer: every position once whatever the buffer and threads,
 * games mixed with it and in input order without it, the end-of-stream flag
 * after it empties, reproducible for a seed, its fill gauge, and a stop
 * with a full buffer (the sanitizer builds check that nothing leaks).
 * The token values themselves are checked in tests/format/test_chess_tokens.c
 * and end to end in tests/python/test_transformer.py.
 */
#include "check.h"

#include "core/clock.h"
#include "core/log.h"
#include "format/batch.h"
#include "format/chess/chess_tokens.h"
#include "pipeline/config.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define START "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
#define AFTER_E4 "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"

/* A game item of two rows; the second row's values are given (NULL for a
 * null value) so that it can be made unusable. */
static lc_game_item game(const char *played2, const char *best2, const char *fen2)
{
    const char *fens[2] = {START, fen2}, *played[2] = {"e2e4", played2}, *best[2] = {"d2d4", best2};
    size_t bytes = 2 * sizeof(lc_chess_row) + 300;
    char *mem = calloc(1, bytes);
    lc_chess_row *rows = (lc_chess_row *)mem;
    char *p = mem + 2 * sizeof(lc_chess_row);
    for (int i = 0; i < 2; i++) {
        const char *const in[3] = {fens[i], played[i], best[i]};
        const char **out[3] = {&rows[i].fen, &rows[i].played, &rows[i].best};
        size_t *len[3] = {&rows[i].fen_len, &rows[i].played_len, &rows[i].best_len};
        for (int k = 0; k < 3; k++) {
            *out[k] = in[k] ? strcpy(p, in[k]) : NULL;
            *len[k] = in[k] ? strlen(in[k]) : 0;
            p += *len[k] + 1;
        }
        rows[i].win = 0.5;
        rows[i].draw = 0.25;
        rows[i].loss = 0.25;
        rows[i].has_win = rows[i].has_draw = rows[i].has_loss = true;
    }
    return (lc_game_item){.rows = rows, .n_rows = 2, .file = "t.parquet", .id = "g", .mem = mem};
}

static uint64_t count(const lc_stage_metrics *m, const char *name)
{
    const lc_metric_slot *c = lc_metrics_find(m, name);
    return c ? c->count : 0;
}

/* Follow the end-of-stream flag over a run's batches: *only stays true
 * while the flagged batch is the last one seen. */
static void note_flags(uint32_t flags, bool *last, bool *only)
{
    if (flags & LC_ITEM_END_OF_STREAM) {
        *only = !*last;
        *last = true;
    } else if (*last) {
        *only = false;
    }
}

typedef struct outcome {
    uint64_t batches, rows, last_rows;
    bool last_flagged, only_last_flagged;
    lc_stage_metrics m;
    lc_batch_layout layout;
    int64_t last_target0; /* encoder: target of row 0 of the last batch */
    int64_t pad_after;    /* a value past the valid rows of the last batch */
    uint64_t targets[64]; /* encoder: every sample's target, in output order */
} outcome;

/* A tokenizer of the given block reading `in`, started; its output holds
 * every batch the tests make. */
static lc_stage *start_tokenizer(const char *yaml, lc_queue *in, uint64_t seed)
{
    lc_stage_env env = {.seed = seed, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_new(lc_stage_class_find("game_tokenizer"), "tokens", yaml, in, 1024,
                               &env, &s, &err));
    CHECK_OK(lc_standalone_start(s, &err));
    return s;
}

/* Feed `good` valid games and one game of each bad kind, then close. With
 * `missing`, also (after the bad ones) one game with a null best move and
 * one with a null played move, each in its second row. */
static void run(const char *yaml, int good, bool missing, outcome *o)
{
    memset(o, 0, sizeof *o);
    lc_queue *in = lc_queue_new("in", &lc_item_game, 64, LC_OVERFLOW_BLOCK);
    lc_stage *s = start_tokenizer(yaml, in, 0);
    for (int i = 0; i < good; i++) {
        lc_game_item g = game("e7e5", "c7c5", AFTER_E4);
        CHECK_OK(lc_queue_put(in, &g, NULL));
        if (i == 1) {
            lc_game_item oov = game("a1b4", "e7e5", AFTER_E4); /* no such move token */
            CHECK_OK(lc_queue_put(in, &oov, NULL));
            lc_game_item best = game("e7e5", "a1a1", AFTER_E4);
            CHECK_OK(lc_queue_put(in, &best, NULL));
            lc_game_item fen = game("e7e5", "c7c5", "rnbqkbnr/ppp/8 w - - 0 1");
            CHECK_OK(lc_queue_put(in, &fen, NULL));
            if (missing) {
                lc_game_item no_best = game("e7e5", NULL, AFTER_E4);
                CHECK_OK(lc_queue_put(in, &no_best, NULL));
                lc_game_item no_played = game(NULL, "c7c5", AFTER_E4);
                CHECK_OK(lc_queue_put(in, &no_played, NULL));
            }
        }
    }
    lc_queue_close(in);
    lc_batch_item b;
    while (lc_queue_get_until(s->output, &b, NULL, lc_now_ns() + 20000000000ull) == 0) {
        o->batches++;
        o->rows += b.batch->rows;
        o->layout = *b.batch->layout;
        note_flags(b.flags, &o->last_flagged, &o->only_last_flagged);
        o->last_rows = b.batch->rows;
        int t = lc_batch_layout_find(b.batch->layout, "target");
        for (uint64_t r = 0; t >= 0 && r < b.batch->rows; r++)
            if (o->rows - b.batch->rows + r < sizeof o->targets / sizeof o->targets[0])
                o->targets[o->rows - b.batch->rows + r] =
                    (uint64_t)((int64_t *)lc_batch_tensor(b.batch, (unsigned)t))[r];
        if (t >= 0) {
            o->last_target0 = ((int64_t *)lc_batch_tensor(b.batch, (unsigned)t))[0];
            if (b.batch->rows < b.batch->layout->batch_size)
                o->pad_after = ((int64_t *)lc_batch_tensor(b.batch, (unsigned)t))[b.batch->rows];
        }
        lc_batch_free(b.batch);
    }
    lc_standalone_stop(s);
    lc_standalone_flush(s, &o->m);
    lc_standalone_free(s);
    lc_queue_free(in);
}

static void test_decoder(void)
{
    outcome o;
    run("{mode: decoder, batch_size: 4, max_seq_len: 80}", 10, false, &o);
    CHECK_EQ_U64(o.rows, 10);
    CHECK_EQ_U64(o.batches, 3);
    CHECK_EQ_U64(o.last_rows, 2);
    CHECK(o.last_flagged && o.only_last_flagged);
    CHECK_EQ_INT(o.layout.n_tensors, 4);
    CHECK_EQ_STR(o.layout.tensors[0].name, "input_ids");
    CHECK_EQ_INT(o.layout.tensors[0].dtype, LC_DTYPE_I64);
    CHECK_EQ_U64(o.layout.tensors[0].shape[1], 80);
    CHECK_EQ_STR(o.layout.tensors[2].name, "wdl_targets");
    CHECK_EQ_U64(o.layout.tensors[2].shape[2], 3);
    CHECK_EQ_INT(o.layout.tensors[3].dtype, LC_DTYPE_BOOL);
    /* The unusable played move and the unusable best move each spoil a
     * game; the bad FEN one more. */
    CHECK_EQ_U64(count(&o.m, "bad_games_out_of_vocabulary"), 2);
    CHECK_EQ_U64(count(&o.m, "bad_games_fen"), 1);
    CHECK_EQ_U64(count(&o.m, "games"), 13);
    CHECK_EQ_U64(count(&o.m, "samples"), 10);
    CHECK_EQ_U64(count(&o.m, "positions"), 20);
    CHECK_EQ_U64(count(&o.m, "batches"), 3);
}

static void test_encoder(void)
{
    outcome o;
    run("{mode: encoder, batch_size: 8}", 10, false, &o);
    /* 20 good positions; the bad games still give their good positions:
     * the OOV played move does not matter to the encoder (2 positions),
     * the OOV best move spoils one of two, the bad FEN one of two. */
    CHECK_EQ_U64(o.rows, 20 + 2 + 1 + 1);
    CHECK_EQ_U64(count(&o.m, "bad_positions_out_of_vocabulary"), 1);
    CHECK_EQ_U64(count(&o.m, "bad_positions_fen"), 1);
    CHECK_EQ_U64(o.batches, 3);
    CHECK_EQ_U64(o.last_rows, 8);
    CHECK(o.last_flagged && o.only_last_flagged);
    CHECK_EQ_STR(o.layout.tensors[1].name, "attention_mask");
    CHECK_EQ_STR(o.layout.tensors[2].name, "target");
    CHECK_EQ_INT(o.layout.tensors[2].ndim, 1);

    run("{mode: encoder, batch_size: 16}", 3, false, &o);
    CHECK_EQ_U64(o.rows, 6 + 4);
    CHECK_EQ_U64(o.last_rows, 10);
    CHECK(o.last_flagged);
    CHECK_EQ_INT(o.pad_after, 0); /* the unused rows are zeroed */
    CHECK(o.last_target0 >= 0 && o.last_target0 < 1924);
}

/* Decoder: a null best move or a null played move spoils the whole game;
 * each such game is counted once as missing values, the others go on. */
static void test_decoder_missing_values(void)
{
    outcome o;
    run("{mode: decoder, batch_size: 4, max_seq_len: 80}", 10, true, &o);
    CHECK_EQ_U64(o.rows, 10);
    CHECK_EQ_U64(count(&o.m, "bad_games_missing_values"), 2);
    CHECK_EQ_U64(count(&o.m, "bad_games_out_of_vocabulary"), 2);
    CHECK_EQ_U64(count(&o.m, "bad_games_fen"), 1);
    CHECK_EQ_U64(count(&o.m, "games"), 15);
    CHECK_EQ_U64(count(&o.m, "samples"), 10);
    CHECK_EQ_U64(count(&o.m, "positions"), 20);
}

/* Encoder: only the position whose best move is null is skipped and counted;
 * the first position of that game is kept, and both positions of the game
 * whose played move is null. */
static void test_encoder_missing_values(void)
{
    outcome o;
    run("{mode: encoder, batch_size: 8, shuffle_buffer: 0}", 2, true, &o);
    /* Games in order: good, good, OOV played (2 positions), OOV best (1),
     * bad FEN (1), null best (1: its first row), null played (2). */
    CHECK_EQ_U64(o.rows, 4 + 2 + 1 + 1 + 1 + 2);
    CHECK_EQ_U64(count(&o.m, "bad_positions_missing_values"), 1);
    CHECK_EQ_U64(count(&o.m, "bad_positions_out_of_vocabulary"), 1);
    CHECK_EQ_U64(count(&o.m, "bad_positions_fen"), 1);
    CHECK_EQ_U64(count(&o.m, "positions"), 11);
    CHECK_EQ_U64(count(&o.m, "games"), 7);
    /* One thread: samples in input order. The null-best game gives d2d4 (its
     * first row's best) and nothing more; the null-played game then gives
     * d2d4 and c7c5. */
    int d2d4 = lc_chess_move_id("d2d4", 4), c7c5 = lc_chess_move_id("c7c5", 4);
    CHECK_EQ_INT((int)o.targets[8], d2d4);
    CHECK_EQ_INT((int)o.targets[9], d2d4);
    CHECK_EQ_INT((int)o.targets[10], c7c5);
}

/* A game whose second move is a knight promotion written as engines and
 * python-chess write it (a7a8n): kept by default (uci_spellings), dropped
 * and counted without it. */
static void test_uci_spellings(void)
{
    static const char promo[] = "8/P7/8/8/8/8/7p/K6k w - - 0 1";
    for (int on = 0; on <= 1; on++) {
        lc_queue *in = lc_queue_new("in", &lc_item_game, 8, LC_OVERFLOW_BLOCK);
        lc_stage *s = start_tokenizer(on ? "{mode: decoder, batch_size: 1, max_seq_len: 80}"
                                         : "{mode: decoder, batch_size: 1, max_seq_len: 80, "
                                           "uci_spellings: false}",
                                      in, 0);
        lc_game_item g = game("a7a8n", "a7a8q", promo);
        CHECK_OK(lc_queue_put(in, &g, NULL));
        lc_queue_close(in);
        lc_batch_item b;
        int batches = 0;
        while (lc_queue_get_until(s->output, &b, NULL, lc_now_ns() + 20000000000ull) == 0) {
            batches++;
            lc_batch_free(b.batch);
        }
        lc_stage_metrics m;
        lc_standalone_stop(s);
        lc_standalone_flush(s, &m);
        CHECK_EQ_INT(batches, on ? 1 : 0);
        CHECK_EQ_U64(count(&m, "bad_games_out_of_vocabulary"), on ? 0 : 1);
        lc_standalone_free(s);
        lc_queue_free(in);
    }
}

static void test_config(void)
{
    const lc_stage_class *cls = lc_stage_class_find("game_tokenizer");
    const char *bad[][2] = {
        {"{batch_size: 0}", "batch_size"},
        {"{batch_size: 8, skip_board_prob: 1.5}", "skip_board_prob"},
        {"{batch_size: 8, max_seq_len: 0}", "max_seq_len"},
        {"{batch_size: 8, mode: encoder, max_seq_len: 64}", "max_seq_len"},
        {"{batch_size: 8, mode: bidirectional}", "mode"},
        {"{batch_size: 8, threads: 0}", "threads"},
        {"{batch_size: 8, shuffle_buffer: 64}", "shuffle_buffer"}, /* decoder by default */
        {"{batch_size: 8, mode: decoder, shuffle_buffer: 0}", "shuffle_buffer"},
        {"{batch_size: 8, mode: encoder, shuffle_buffer: 100000001}", "shuffle_buffer"},
        {"{batch_size: 8, mode: encoder, shuffle_buffer: -1}", "shuffle_buffer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        void *block = NULL;
        lc_error err;
        lc_error_clear(&err);
        CHECK(lc_config_parse_block(cls, bad[i][0], &block, &err) != 0);
        if (!strstr(err.msg, bad[i][1]))
            fprintf(stderr, "%s: %s\n", bad[i][0], err.msg);
        CHECK(strstr(err.msg, bad[i][1]) != NULL);
    }
    const char *good[] = {"{batch_size: 8, mode: encoder, shuffle_buffer: 0}",
                          "{batch_size: 8, mode: encoder, shuffle_buffer: 1, threads: 4}"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        void *block = NULL;
        lc_error err;
        lc_error_clear(&err);
        CHECK_OK(lc_config_parse_block(cls, good[i], &block, &err));
        lc_config_free_block(cls, block);
    }
}

/* ---- the encoder's shuffle buffer ---- */

/* Positions that tell where they came from: white pawns on squares 8..31
 * spell the game's number in binary, black pawns on squares 32..55 the
 * position's index in the game. The best move varies too. */
#define CODE_BITS 24

static void coded_fen(char *out, uint32_t game_no, uint32_t ply)
{
    char board[64] = {0};
    for (int k = 0; k < CODE_BITS; k++) {
        if (game_no >> k & 1)
            board[8 + k] = 'P';
        if (ply >> k & 1)
            board[32 + k] = 'p';
    }
    for (int rank = 7; rank >= 0; rank--) {
        int empty = 0;
        for (int file = 0; file < 8; file++) {
            char c = board[rank * 8 + file];
            if (!c) {
                empty++;
                continue;
            }
            if (empty)
                *out++ = (char)('0' + empty);
            empty = 0;
            *out++ = c;
        }
        if (empty)
            *out++ = (char)('0' + empty);
        if (rank)
            *out++ = '/';
    }
    strcpy(out, " w - - 0 1");
}

static lc_game_item coded_game(uint32_t game_no, uint32_t n)
{
    static const char *const best[] = {"e2e4", "g1f3", "d2d4", "c7c5", "a7a8q"};
    enum { FEN_MAX = 96, MOVE_MAX = 8 };
    char *mem = calloc(1, n * (sizeof(lc_chess_row) + FEN_MAX + MOVE_MAX));
    lc_chess_row *rows = (lc_chess_row *)mem;
    char *p = mem + n * sizeof(lc_chess_row);
    for (uint32_t i = 0; i < n; i++) {
        coded_fen(p, game_no, i);
        rows[i].fen = p;
        rows[i].fen_len = strlen(p);
        p += FEN_MAX;
        rows[i].best = strcpy(p, best[(game_no + i) % 5]);
        rows[i].best_len = strlen(p);
        p += MOVE_MAX;
    }
    return (lc_game_item){
        .rows = rows, .n_rows = n, .file = "t.parquet", .id = "coded", .mem = mem};
}

typedef struct sample {
    int64_t ids[LC_CHESS_POS_TOKENS];
    int64_t target;
} sample;

/* Where a sample came from, read back from its board. */
static void decode(const sample *x, uint32_t *game_no, uint32_t *ply)
{
    *game_no = *ply = 0;
    for (int k = 0; k < CODE_BITS; k++) {
        *game_no |= (uint32_t)(x->ids[1 + 8 + k] == LC_TOK_WHITE_PAWN) << k;
        *ply |= (uint32_t)(x->ids[1 + 32 + k] == LC_TOK_BLACK_PAWN) << k;
    }
}

typedef struct stream {
    sample *x; /* every sample, in output order */
    size_t n;
    uint64_t batches, last_rows;
    bool last_flagged, only_last_flagged, mask_ones;
    lc_stage_metrics m;
} stream;

/* Feed `games` coded games of `plies` positions each to a tokenizer of
 * the given block, close the input and collect the output. */
static void run_coded(const char *yaml, uint32_t games, uint32_t plies, uint64_t seed, stream *o)
{
    memset(o, 0, sizeof *o);
    o->x = calloc((size_t)games * plies, sizeof *o->x);
    o->mask_ones = true;
    lc_queue *in = lc_queue_new("in", &lc_item_game, games + 1, LC_OVERFLOW_BLOCK);
    lc_stage *s = start_tokenizer(yaml, in, seed);
    for (uint32_t g = 0; g < games; g++) {
        lc_game_item item = coded_game(g, plies);
        CHECK_OK(lc_queue_put(in, &item, NULL));
    }
    lc_queue_close(in);
    lc_batch_item b;
    while (lc_queue_get_until(s->output, &b, NULL, lc_now_ns() + 20000000000ull) == 0) {
        o->batches++;
        o->last_rows = b.batch->rows;
        note_flags(b.flags, &o->last_flagged, &o->only_last_flagged);
        const int64_t *ids = lc_batch_tensor(b.batch, 0), *mask = lc_batch_tensor(b.batch, 1),
                      *target = lc_batch_tensor(b.batch, 2);
        for (uint64_t r = 0; r < b.batch->rows && o->n < (size_t)games * plies; r++) {
            sample *x = &o->x[o->n++];
            memcpy(x->ids, ids + r * LC_CHESS_POS_TOKENS, sizeof x->ids);
            x->target = target[r];
            for (int k = 0; k < LC_CHESS_POS_TOKENS; k++)
                o->mask_ones &= mask[r * LC_CHESS_POS_TOKENS + k] == 1;
        }
        lc_batch_free(b.batch);
    }
    CHECK(lc_queue_closed(s->output));
    lc_standalone_stop(s);
    lc_standalone_flush(s, &o->m);
    lc_standalone_free(s);
    lc_queue_free(in);
}

static int sample_cmp(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(sample));
}

/* The share of adjacent output samples that are adjacent positions of one
 * game: near 1 in input order, near 0 when games are mixed. */
static double adjacent_share(const stream *o)
{
    uint64_t adjacent = 0;
    for (size_t k = 0; k + 1 < o->n; k++) {
        uint32_t g0, p0, g1, p1;
        decode(&o->x[k], &g0, &p0);
        decode(&o->x[k + 1], &g1, &p1);
        adjacent += g0 == g1 && (p0 + 1 == p1 || p1 + 1 == p0);
    }
    return o->n > 1 ? (double)adjacent / (double)(o->n - 1) : 0.0;
}

#define GAMES 40
#define PLIES 16

/* Every position exactly once, as without the buffer: the multisets of
 * (input_ids, target) agree, for one and several threads and a buffer
 * smaller than, or larger than, the whole input. */
static void test_shuffle_same_samples(void)
{
    stream off, on;
    run_coded("{mode: encoder, batch_size: 64, shuffle_buffer: 0}", GAMES, PLIES, 3, &off);
    CHECK_EQ_U64(off.n, GAMES * PLIES);
    CHECK(off.mask_ones);
    qsort(off.x, off.n, sizeof *off.x, sample_cmp);
    /* Every coded position is there once (they are all different). */
    bool seen[GAMES][PLIES] = {{false}};
    for (size_t k = 0; k < off.n; k++) {
        uint32_t g, p;
        decode(&off.x[k], &g, &p);
        CHECK(g < GAMES && p < PLIES && !seen[g][p]);
        if (g < GAMES && p < PLIES)
            seen[g][p] = true;
    }
    const char *yamls[] = {
        "{mode: encoder, batch_size: 64, shuffle_buffer: 100}",
        "{mode: encoder, batch_size: 64, shuffle_buffer: 100, threads: 3}",
        "{mode: encoder, batch_size: 64, shuffle_buffer: 5000, threads: 2}",
        "{mode: encoder, batch_size: 64, shuffle_buffer: 1}",
        "{mode: encoder, batch_size: 64}", /* the default */
    };
    for (size_t i = 0; i < sizeof yamls / sizeof yamls[0]; i++) {
        run_coded(yamls[i], GAMES, PLIES, 3, &on);
        CHECK_EQ_U64(on.n, GAMES * PLIES);
        CHECK_EQ_U64(count(&on.m, "samples"), GAMES * PLIES);
        CHECK_EQ_U64(count(&on.m, "positions"), GAMES * PLIES);
        CHECK(on.mask_ones);
        qsort(on.x, on.n, sizeof *on.x, sample_cmp);
        bool same = on.n == off.n && memcmp(on.x, off.x, off.n * sizeof *off.x) == 0;
        if (!same)
            fprintf(stderr, "%s: not the samples of shuffle_buffer: 0\n", yamls[i]);
        CHECK(same);
        const lc_metric_slot *fill = lc_metrics_find(&on.m, "shuffle_buffer");
        CHECK(fill && fill->value == 0 && fill->has_capacity); /* emptied */
        free(on.x);
    }
    CHECK(lc_metrics_find(&off.m, "shuffle_buffer") == NULL);
    free(off.x);
}

/* With the buffer, neighbours in the output are seldom neighbours in a game;
 * without it they nearly always are, in input order exactly. */
static void test_shuffle_mixes_games(void)
{
    stream o;
    run_coded("{mode: encoder, batch_size: 64, shuffle_buffer: 0}", GAMES, PLIES, 3, &o);
    double off = adjacent_share(&o);
    CHECK(off > 0.9);
    CHECK_EQ_U64(o.n, GAMES * PLIES);
    bool in_order = true;
    for (size_t k = 0; k < o.n; k++) {
        uint32_t g, p;
        decode(&o.x[k], &g, &p);
        in_order &= g == k / PLIES && p == k % PLIES;
    }
    CHECK(in_order);
    free(o.x);

    const char *yamls[] = {
        "{mode: encoder, batch_size: 64, shuffle_buffer: 128}",
        "{mode: encoder, batch_size: 64, shuffle_buffer: 256, threads: 2}",
    };
    for (size_t i = 0; i < sizeof yamls / sizeof yamls[0]; i++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            run_coded(yamls[i], GAMES, PLIES, seed, &o);
            double on = adjacent_share(&o);
            if (!(on < 0.2))
                fprintf(stderr, "%s, seed %llu: %.3f of neighbours are neighbours in a game\n",
                        yamls[i], (unsigned long long)seed, on);
            CHECK(on < 0.2);
            /* The first batch draws on many games, not a few. */
            bool games_seen[GAMES] = {false};
            int distinct = 0;
            for (size_t k = 0; k < 64 && k < o.n; k++) {
                uint32_t g, p;
                decode(&o.x[k], &g, &p);
                if (g < GAMES && !games_seen[g]) {
                    games_seen[g] = true;
                    distinct++;
                }
            }
            CHECK(distinct >= 10);
            free(o.x);
        }
}

/* One thread: a run is reproducible for a seed, and the seed matters. */
static void test_shuffle_reproducible(void)
{
    const char *yaml = "{mode: encoder, batch_size: 64, shuffle_buffer: 128}";
    stream a, b, c;
    run_coded(yaml, GAMES, PLIES, 11, &a);
    run_coded(yaml, GAMES, PLIES, 11, &b);
    run_coded(yaml, GAMES, PLIES, 12, &c);
    CHECK(a.n == b.n && memcmp(a.x, b.x, a.n * sizeof *a.x) == 0);
    CHECK(a.n == c.n && memcmp(a.x, c.x, a.n * sizeof *a.x) != 0);
    free(a.x);
    free(b.x);
    free(c.x);
}

/* One thread: the last batch, full or partial, carries the end-of-stream
 * flag once the buffer has emptied into it, and no other batch does. */
static void test_shuffle_end_of_stream(void)
{
    stream o;
    run_coded("{mode: encoder, batch_size: 64, shuffle_buffer: 200}", GAMES, PLIES, 5, &o);
    CHECK_EQ_U64(o.batches, GAMES * PLIES / 64);
    CHECK_EQ_U64(o.last_rows, 64);
    CHECK(o.last_flagged && o.only_last_flagged);
    free(o.x);
    run_coded("{mode: encoder, batch_size: 48, shuffle_buffer: 1000}", GAMES, PLIES, 5, &o);
    CHECK_EQ_U64(o.n, GAMES * PLIES);
    CHECK_EQ_U64(o.batches, (GAMES * PLIES + 47) / 48);
    CHECK_EQ_U64(o.last_rows, GAMES * PLIES % 48);
    CHECK(o.last_flagged && o.only_last_flagged);
    free(o.x);
}

/* The gauge follows the fill against the capacity (the threads' shares:
 * 3 x 333 of 1000); a stop with samples in the buffers emits nothing and
 * frees everything. */
static void test_shuffle_gauge_and_stop(void)
{
    lc_queue *in = lc_queue_new("in", &lc_item_game, 64, LC_OVERFLOW_BLOCK);
    lc_stage *s =
        start_tokenizer("{mode: encoder, batch_size: 8, shuffle_buffer: 1000, threads: 3}", in, 0);
    for (uint32_t g = 0; g < 20; g++) {
        lc_game_item item = coded_game(g, PLIES);
        CHECK_OK(lc_queue_put(in, &item, NULL));
    }
    lc_stage_metrics m;
    const lc_metric_slot *fill = NULL;
    uint64_t deadline = lc_now_ns() + 20000000000ull;
    for (;;) {
        lc_standalone_flush(s, &m);
        fill = lc_metrics_find(&m, "shuffle_buffer");
        if (!fill || fill->value >= 20 * PLIES || lc_now_ns() > deadline)
            break;
        lc_sleep_seconds(0.001);
    }
    CHECK(fill != NULL);
    if (fill) {
        CHECK_EQ_INT(fill->value, 20 * PLIES);
        CHECK_EQ_INT(fill->capacity, 999);
        CHECK(fill->has_capacity);
    }
    lc_standalone_stop(s);
    lc_batch_item b;
    CHECK(lc_queue_get_until(s->output, &b, NULL, lc_now_ns()) != 0);
    lc_standalone_free(s);
    lc_queue_free(in);
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    test_decoder();
    test_encoder();
    test_decoder_missing_values();
    test_encoder_missing_values();
    test_uci_spellings();
    test_config();
    test_shuffle_same_samples();
    test_shuffle_mixes_games();
    test_shuffle_reproducible();
    test_shuffle_end_of_stream();
    test_shuffle_gauge_and_stop();
    return check_finish();
}
