/*
 * game_tokenizer: turns games (parquet_game_source) into token batches for
 * chess transformers, exactly as docs/chess-transformer-data.md says
 * (format/chess_tokens.h does the tokens).
 *
 *   decoder: one sample per game, the whole game as one sequence with
 *            skip_board_prob, a random start and truncation or padding to
 *            max_seq_len (L):
 *              input_ids [B, L] int64, target_ids [B, L] int64,
 *              wdl_targets [B, L, 3] float32, wdl_mask [B, L] bool
 *   encoder: one sample per position:
 *              input_ids [B, 68] int64, attention_mask [B, 68] int64,
 *              target [B] int64 (the best move)
 *
 * The source passes rows with a null fen, played_move or best_move on (the
 * string is NULL); what they spoil depends on the mode. Decoder: a game with
 * any of them null is skipped and counted (bad_games_missing_values).
 * Encoder: a position with a null fen or best_move is skipped and counted
 * (bad_positions_missing_values), the game's other positions are kept, and
 * played_move is not used at all. Likewise a game with a move outside the
 * vocabulary (decoder) or a position whose best move is outside it
 * (encoder), and a malformed FEN, are skipped and counted
 * (bad_*_out_of_vocabulary, bad_*_fen). The first few skips are logged with
 * the file and game id.
 *
 * N worker threads each fill their own batch (stages/batcher.h); each has
 * its own generator seeded from the run seed and its index. With one
 * thread, the last batch of a finite run carries LC_ITEM_END_OF_STREAM.
 */
#include "stages/stage.h"

#include "core/log.h"
#include "core/rng.h"
#include "format/batch.h"
#include "format/chess_tokens.h"
#include "stages/batcher.h"
#include "stages/items.h"

#include <stdlib.h>
#include <string.h>

typedef enum { MODE_DECODER = 0, MODE_ENCODER = 1 } tok_mode;

static const cyaml_strval_t mode_strings[] = {
    {"decoder", MODE_DECODER},
    {"encoder", MODE_ENCODER},
};

typedef struct tok_config {
    uint64_t batch_size;
    int *mode_opt;
    uint64_t *max_seq_len_opt;
    double *skip_board_prob_opt;
    unsigned *threads_opt;
    /* Resolved by config_check. */
    tok_mode mode;
    uint64_t max_seq_len;
    double skip_board_prob;
    unsigned threads;
} tok_config;

static const cyaml_schema_field_t tok_fields[] = {
    CYAML_FIELD_UINT("batch_size", CYAML_FLAG_DEFAULT, tok_config, batch_size),
    CYAML_FIELD_ENUM_PTR("mode", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, tok_config, mode_opt,
                         mode_strings, CYAML_ARRAY_LEN(mode_strings)),
    CYAML_FIELD_UINT_PTR("max_seq_len", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, tok_config,
                         max_seq_len_opt),
    CYAML_FIELD_FLOAT_PTR("skip_board_prob", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
                          tok_config, skip_board_prob_opt),
    CYAML_FIELD_UINT_PTR("threads", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, tok_config,
                         threads_opt),
    CYAML_FIELD_END,
};

static int tok_config_check(void *p, lc_error *err)
{
    tok_config *c = p;
    int rc = 0;
    if (c->batch_size < 1 || c->batch_size > 65536)
        rc = lc_error_add(err, LC_ECONFIG, "batch_size: %llu is out of range (use 1 to 65536)",
                          (unsigned long long)c->batch_size);
    c->mode = c->mode_opt ? (tok_mode)*c->mode_opt : MODE_DECODER;
    c->max_seq_len = c->max_seq_len_opt ? *c->max_seq_len_opt : LC_CHESS_DEFAULT_MAX_SEQ_LEN;
    if (c->max_seq_len < 1 || c->max_seq_len > 65536)
        rc = lc_error_add(err, LC_ECONFIG,
                          "max_seq_len: %llu is out of range (use 1 to 65536; default %d)",
                          (unsigned long long)c->max_seq_len, LC_CHESS_DEFAULT_MAX_SEQ_LEN);
    c->skip_board_prob = c->skip_board_prob_opt ? *c->skip_board_prob_opt : 0.0;
    if (!(c->skip_board_prob >= 0.0 && c->skip_board_prob <= 1.0))
        rc = lc_error_add(err, LC_ECONFIG, "skip_board_prob: %g is out of range (use 0 to 1)",
                          c->skip_board_prob);
    if (c->mode == MODE_ENCODER && c->max_seq_len_opt)
        rc = lc_error_add(err, LC_ECONFIG,
                          "max_seq_len: applies to mode decoder only (remove it, or set mode: "
                          "decoder)");
    if (c->mode == MODE_ENCODER && c->skip_board_prob_opt)
        rc = lc_error_add(err, LC_ECONFIG,
                          "skip_board_prob: applies to mode decoder only (remove it, or set "
                          "mode: decoder)");
    if (lc_config_threads(&c->threads, c->threads_opt, 1, 64, err))
        rc = LC_ECONFIG;
    return rc;
}

/* How many skipped samples of one kind are logged, before only counting. */
#define LOG_FIRST 5

typedef struct tokenizer {
    lc_worker_pool pool;
    lc_batch_layout layout;
    lc_batch_sink sink;
    atomic_uint_fast64_t n_games, n_positions, n_bad_oov, n_bad_fen, n_bad_missing, n_logged;
} tokenizer;

/* Count a skipped game or position, by its failure (LC_EEMPTY: a null
 * value, or a game without rows, which the source never emits;
 * LC_CHESS_EOOV: a move outside the vocabulary; else the FEN), and log the
 * first few. */
static void skipped(lc_stage *s, tokenizer *t, const lc_game_item *game, int rc,
                    const lc_error *err)
{
    atomic_fetch_add(rc == LC_EEMPTY       ? &t->n_bad_missing
                     : rc == LC_CHESS_EOOV ? &t->n_bad_oov
                                           : &t->n_bad_fen,
                     1);
    uint64_t k = atomic_fetch_add(&t->n_logged, 1);
    if (k < LOG_FIRST)
        LC_WARN("%s: skipping %s %s of %s: %s%s", s->name,
                ((const tok_config *)s->config)->mode == MODE_DECODER ? "game" : "a position of game",
                game->id, game->file, err->msg,
                k + 1 == LOG_FIRST ? " (further ones are only counted)" : "");
}

/* LC_EEMPTY (with err naming the row and column) when row i lacks a value
 * the mode needs: the fen and the best move, and for the decoder the played
 * move; else 0. */
static int check_present(const lc_chess_row *r, uint32_t i, bool need_played, lc_error *err)
{
    const char *column = !r->fen                   ? "fen"
                         : need_played && !r->played ? "played_move"
                         : !r->best                  ? "best_move"
                                                     : NULL;
    if (!column)
        return 0;
    return lc_error_set(err, LC_EEMPTY, "row %u: %s is null", (unsigned)i, column);
}

static void decoder_worker(lc_stage *s, tokenizer *t, lc_batcher *bt, lc_rng *rng,
                           lc_load_meter *meter)
{
    const tok_config *c = s->config;
    lc_error err;
    lc_error_clear(&err);
    lc_chess_decoder *d = lc_chess_decoder_new(c->max_seq_len, c->skip_board_prob, &err);
    if (!d) { /* config_check accepted these values */
        LC_ERROR("%s: %s", s->name, err.msg);
        return;
    }
    const uint64_t L = c->max_seq_len;
    lc_game_item g;
    while (lc_run_state_check(&s->run, meter) && lc_queue_get(s->input, &g, meter) == 0) {
        atomic_fetch_add(&t->n_games, 1);
        uint64_t row;
        lc_batch *b = lc_batcher_row(bt, &row);
        lc_chess_decoder_out out = {
            .input_ids = (int64_t *)lc_batch_tensor(b, 0) + row * L,
            .target_ids = (int64_t *)lc_batch_tensor(b, 1) + row * L,
            .wdl_targets = (float *)lc_batch_tensor(b, 2) + row * L * 3,
            .wdl_mask = (uint8_t *)lc_batch_tensor(b, 3) + row * L,
        };
        lc_error_clear(&err);
        int rc = 0;
        for (uint32_t i = 0; i < g.n_rows && rc == 0; i++)
            rc = check_present(&g.rows[i], i, true, &err);
        if (rc == 0)
            rc = lc_chess_decoder_sample(d, g.rows, g.n_rows, rng, &out, &err);
        if (rc != 0) {
            skipped(s, t, &g, rc, &err);
            free(g.mem);
            continue;
        }
        atomic_fetch_add(&t->n_positions, g.n_rows);
        free(g.mem);
        if (!lc_batcher_commit(bt, meter))
            break;
    }
    lc_chess_decoder_free(d);
}

static void encoder_worker(lc_stage *s, tokenizer *t, lc_batcher *bt, lc_load_meter *meter)
{
    lc_error err;
    lc_game_item g;
    bool open = true;
    while (open && lc_run_state_check(&s->run, meter) && lc_queue_get(s->input, &g, meter) == 0) {
        atomic_fetch_add(&t->n_games, 1);
        for (uint32_t i = 0; i < g.n_rows; i++) {
            const lc_chess_row *r = &g.rows[i];
            uint64_t row;
            lc_batch *b = lc_batcher_row(bt, &row);
            lc_error_clear(&err);
            int rc = check_present(r, i, false, &err);
            if (rc == 0)
                rc = lc_chess_encoder_sample(
                    r->fen, r->fen_len, r->best, r->best_len,
                    (int64_t *)lc_batch_tensor(b, 0) + row * LC_CHESS_POS_TOKENS,
                    (int64_t *)lc_batch_tensor(b, 1) + row * LC_CHESS_POS_TOKENS,
                    (int64_t *)lc_batch_tensor(b, 2) + row, &err);
            if (rc != 0) {
                skipped(s, t, &g, rc, &err);
                continue;
            }
            atomic_fetch_add(&t->n_positions, 1);
            if (!lc_batcher_commit(bt, meter)) {
                open = false;
                break;
            }
        }
        free(g.mem);
    }
}

static void tok_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    tokenizer *t = s->priv;
    const tok_config *c = s->config;
    lc_batcher bt;
    lc_batcher_init(&bt, s, &t->sink, c->threads == 1);
    if (c->mode == MODE_DECODER) {
        lc_rng rng;
        lc_rng_seed(&rng, s->env->seed ^ 0x746f6b656e697a65u, index);
        decoder_worker(s, t, &bt, &rng, meter);
    } else {
        encoder_worker(s, t, &bt, meter);
    }
    lc_batcher_finish(&bt, meter);
}

static int tok_init(lc_stage *s, lc_error *err)
{
    (void)err;
    tokenizer *t = s->priv;
    const tok_config *c = s->config;
    lc_batch_layout_init(&t->layout, c->batch_size);
    if (c->mode == MODE_DECODER) {
        const uint64_t seq[1] = {c->max_seq_len}, wdl[2] = {c->max_seq_len, 3};
        lc_batch_layout_add(&t->layout, "input_ids", LC_DTYPE_I64, 1, seq);
        lc_batch_layout_add(&t->layout, "target_ids", LC_DTYPE_I64, 1, seq);
        lc_batch_layout_add(&t->layout, "wdl_targets", LC_DTYPE_F32, 2, wdl);
        lc_batch_layout_add(&t->layout, "wdl_mask", LC_DTYPE_BOOL, 1, seq);
    } else {
        const uint64_t pos[1] = {LC_CHESS_POS_TOKENS};
        lc_batch_layout_add(&t->layout, "input_ids", LC_DTYPE_I64, 1, pos);
        lc_batch_layout_add(&t->layout, "attention_mask", LC_DTYPE_I64, 1, pos);
        lc_batch_layout_add(&t->layout, "target", LC_DTYPE_I64, 0, NULL);
    }
    lc_batch_sink_init(&t->sink, &t->layout, c->threads);
    lc_worker_pool_init(&t->pool, "workers", c->threads);
    return 0;
}

static int tok_start(lc_stage *s, lc_error *err)
{
    (void)err;
    tokenizer *t = s->priv;
    lc_worker_pool_start(&t->pool, s, tok_worker);
    return 0;
}

static void tok_stop(lc_stage *s)
{
    tokenizer *t = s->priv;
    lc_worker_pool_join(&t->pool);
}

static void tok_fini(lc_stage *s)
{
    tokenizer *t = s->priv;
    lc_worker_pool_fini(&t->pool);
    lc_batch_sink_fini(&t->sink);
}

static void tok_flush(lc_stage *s, lc_stage_metrics *m)
{
    tokenizer *t = s->priv;
    const tok_config *c = s->config;
    lc_worker_pool_flush(&t->pool, m);
    lc_batch_sink_flush(&t->sink, m, "samples");
    lc_metrics_add_count(m, "games", atomic_exchange(&t->n_games, 0));
    lc_metrics_add_count(m, "positions", atomic_exchange(&t->n_positions, 0));
    bool dec = c->mode == MODE_DECODER;
    lc_metrics_add_count(m, dec ? "bad_games_out_of_vocabulary" : "bad_positions_out_of_vocabulary",
                         atomic_exchange(&t->n_bad_oov, 0));
    lc_metrics_add_count(m, dec ? "bad_games_fen" : "bad_positions_fen",
                         atomic_exchange(&t->n_bad_fen, 0));
    lc_metrics_add_count(m, dec ? "bad_games_missing_values" : "bad_positions_missing_values",
                         atomic_exchange(&t->n_bad_missing, 0));
    snprintf(m->detail, sizeof m->detail, "%s", dec ? "decoder" : "encoder");
}

const lc_stage_class lc_game_tokenizer_class = {
    .type_name = "game_tokenizer",
    .summary = "tokenizes games into decoder (whole-game) or encoder (one position) batches",
    .input = &lc_item_game,
    .output = &lc_item_batch,
    .priv_size = sizeof(tokenizer),
    .config_fields = tok_fields,
    .config_size = sizeof(tok_config),
    .config_check = tok_config_check,
    .init = tok_init,
    .fini = tok_fini,
    .start = tok_start,
    .stop = tok_stop,
    .flush_metrics = tok_flush,
};
