/*
 * game_tokenizer as a stage: batches of the doc's layout in both modes, a
 * game with a move outside the vocabulary (decoder) or a position whose best
 * move is outside it (encoder) skipped and counted, a malformed FEN counted,
 * null values (NULL strings, as parquet_game_source passes them on) spoiling
 * the whole game in decoder mode and only their position in encoder mode
 * (where a null played move does not matter), each counted, and the last
 * (partial) batch of a finite run flagged and zero-padded.
 * The token values themselves are checked in tests/format/test_chess_tokens.c
 * and end to end in tests/python/test_transformer.py.
 */
#include "check.h"

#include "core/clock.h"
#include "core/log.h"
#include "format/batch.h"
#include "format/chess_tokens.h"
#include "pipeline/config.h"
#include "pipeline/standalone.h"
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
    const char *fens[2] = {START, fen2}, *played[2] = {"e2e4", played2},
               *best[2] = {"d2d4", best2};
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
    const lc_metric_count *c = lc_metrics_find_count(m, name);
    return c ? c->count : 0;
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

/* Feed `good` valid games and one game of each bad kind, then close. With
 * `missing`, also (after the bad ones) one game with a null best move and
 * one with a null played move, each in its second row. */
static void run(const char *yaml, int good, bool missing, outcome *o)
{
    memset(o, 0, sizeof *o);
    lc_queue *in = lc_queue_new("in", &lc_item_game, 64, LC_OVERFLOW_BLOCK);
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_new(lc_stage_class_find("game_tokenizer"), "tokens", yaml, in, 64, NULL,
                               &s, &err));
    CHECK_OK(lc_standalone_start(s, &err));
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
        if (b.flags & LC_ITEM_END_OF_STREAM) {
            o->only_last_flagged = !o->last_flagged;
            o->last_flagged = true;
        } else if (o->last_flagged) {
            o->only_last_flagged = false;
        }
        o->last_rows = b.batch->rows;
        int t = lc_batch_layout_find(b.batch->layout, "target");
        for (uint64_t r = 0; t >= 0 && r < b.batch->rows; r++)
            if (o->rows - b.batch->rows + r < sizeof o->targets / sizeof o->targets[0])
                o->targets[o->rows - b.batch->rows + r] =
                    (uint64_t)((int64_t *)lc_batch_tensor(b.batch, (unsigned)t))[r];
        if (t >= 0) {
            o->last_target0 = ((int64_t *)lc_batch_tensor(b.batch, (unsigned)t))[0];
            if (b.batch->rows < b.batch->layout->batch_size)
                o->pad_after =
                    ((int64_t *)lc_batch_tensor(b.batch, (unsigned)t))[b.batch->rows];
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
    run("{mode: encoder, batch_size: 8}", 2, true, &o);
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
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    test_decoder();
    test_encoder();
    test_decoder_missing_values();
    test_encoder_missing_values();
    test_config();
    return check_finish();
}
