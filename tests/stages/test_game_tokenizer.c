/*
 * game_tokenizer as a stage: batches of the doc's layout in both modes, a
 * game with a move outside the vocabulary (decoder) or a position whose best
 * move is outside it (encoder) skipped and counted, a malformed FEN counted,
 * and the last (partial) batch of a finite run flagged and zero-padded.
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

/* A game item of two rows; `bad` makes one of them unusable. */
static lc_game_item game(const char *played2, const char *best2, const char *fen2)
{
    const char *fens[2] = {START, fen2}, *played[2] = {"e2e4", played2},
               *best[2] = {"d2d4", best2};
    size_t bytes = 2 * sizeof(lc_chess_row) + 300;
    char *mem = calloc(1, bytes);
    lc_chess_row *rows = (lc_chess_row *)mem;
    char *p = mem + 2 * sizeof(lc_chess_row);
    for (int i = 0; i < 2; i++) {
        rows[i].fen = strcpy(p, fens[i]);
        rows[i].fen_len = strlen(fens[i]);
        p += rows[i].fen_len + 1;
        rows[i].played = strcpy(p, played[i]);
        rows[i].played_len = strlen(played[i]);
        p += rows[i].played_len + 1;
        rows[i].best = strcpy(p, best[i]);
        rows[i].best_len = strlen(best[i]);
        p += rows[i].best_len + 1;
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
} outcome;

/* Feed `good` valid games and one game of each bad kind, then close. */
static void run(const char *yaml, int good, outcome *o)
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
    run("{mode: decoder, batch_size: 4, max_seq_len: 80}", 10, &o);
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
    run("{mode: encoder, batch_size: 8}", 10, &o);
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

    run("{mode: encoder, batch_size: 16}", 3, &o);
    CHECK_EQ_U64(o.rows, 6 + 4);
    CHECK_EQ_U64(o.last_rows, 10);
    CHECK(o.last_flagged);
    CHECK_EQ_INT(o.pad_after, 0); /* the unused rows are zeroed */
    CHECK(o.last_target0 >= 0 && o.last_target0 < 1924);
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
    test_config();
    return check_finish();
}
