/*
 * game_tokenizer: turns games (parquet_game_source) into token batches for
 * chess transformers, exactly as docs/chess-transformer-data.md says
 * (format/chess/chess_tokens.h does the tokens).
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
 * With `packed: true` the ids travel as uint16 (the vocabulary has 1,960
 * tokens) and the encoder's attention mask as uint8, in layouts named
 * "chess-decoder-packed" and "chess-encoder-packed" with the expansion
 * "widen-int64": the reader widens each to int64, giving the tensors
 * above exactly (a quarter of the bytes for the ids, an eighth for the
 * mask).
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
 * Encoder shuffle buffer: a game's positions arrive together and are
 * highly correlated, so in encoder mode each worker passes its samples
 * through a buffer of its own (shuffle_buffer / threads slots, at least 1;
 * default 65536 in all) before they reach the batch. The buffer first fills;
 * then each new sample takes a uniformly random slot and the sample it
 * evicts goes into the batch. When the input ends the rest leaves in random
 * order, so every position is emitted exactly once. Samples are held
 * compactly (68 tokens and the target as uint16: 138 bytes, not the 1.1 KB
 * of a batch row). The stage reserves one reservoir (core/reservoir.h) per
 * worker at init, touched only by that worker, and frees them at fini, so a
 * stop drops what they hold without leaking. shuffle_buffer: 0 writes samples
 * straight into the batch in input order, as before the buffer existed.
 * The `shuffle_buffer` gauge is the fill of all workers' buffers.
 *
 * N worker threads each fill their own batch (stages/batcher.h); each has
 * its own generator (the decoder's draws, the encoder's buffer) seeded from
 * the run seed and its index: with one thread the same input gives the
 * same output (with several, which worker gets which game is up to the
 * scheduler). With one thread, the last batch of a finite run carries
 * LC_ITEM_END_OF_STREAM (after the buffer has emptied).
 */
#include "stages/stage.h"

#include "core/log.h"
#include "core/reservoir.h"
#include "core/rng.h"
#include "format/batch.h"
#include "format/chess/chess_tokens.h"
#include "stages/batcher.h"
#include "stages/items.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef enum { MODE_DECODER = 0, MODE_ENCODER = 1 } tokenizer_mode;

static const lc_setting_value mode_values[] = {
    {"decoder", MODE_DECODER},
    {"encoder", MODE_ENCODER},
    {0},
};

typedef struct tokenizer_config {
    uint64_t batch_size;
    tokenizer_mode mode;
    uint64_t max_seq_len;
    double skip_board_prob;
    unsigned threads;
    uint64_t shuffle_buffer; /* 0 in decoder mode */
    bool uci_spellings;      /* map a7a8n and e1g1 to the vocabulary's spellings */
    bool packed;
    bool max_seq_len_given, skip_board_prob_given, shuffle_buffer_given;
} tokenizer_config;

#define DEFAULT_SHUFFLE_BUFFER 65536
#define MAX_SHUFFLE_BUFFER 100000000

static const lc_setting tokenizer_settings[] = {
    {.key = "batch_size",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(tokenizer_config, batch_size),
     .required = true,
     LC_SETTING_RANGE(1, 65536),
     .meaning = "samples a batch",
     .example = "256"},
    {.key = "mode",
     .type = LC_SETTING_ENUM,
     LC_SETTING_AT(tokenizer_config, mode),
     .def = "decoder",
     .values = mode_values,
     .meaning = "decoder: a game's tokens as one sequence; encoder: one position a sample",
     .example = "encoder"},
    {.key = "max_seq_len",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(tokenizer_config, max_seq_len),
     LC_SETTING_GIVEN(tokenizer_config, max_seq_len_given),
     .def = LC_SETTING_STR(LC_CHESS_DEFAULT_MAX_SEQ_LEN),
     LC_SETTING_RANGE(1, 65536),
     .meaning = "tokens a sequence (decoder)",
     .example = "512"},
    {.key = "skip_board_prob",
     .type = LC_SETTING_REAL,
     LC_SETTING_AT(tokenizer_config, skip_board_prob),
     LC_SETTING_GIVEN(tokenizer_config, skip_board_prob_given),
     .def = "0",
     LC_SETTING_RANGE(0, 1),
     .meaning = "the chance a board's tokens are left out (decoder)",
     .example = "0.1"},
    {.key = "shuffle_buffer",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(tokenizer_config, shuffle_buffer),
     LC_SETTING_GIVEN(tokenizer_config, shuffle_buffer_given),
     .def = LC_SETTING_STR(DEFAULT_SHUFFLE_BUFFER),
     LC_SETTING_RANGE(0, MAX_SHUFFLE_BUFFER),
     .meaning = "samples shuffled before batching, 0 for none (encoder)",
     .example = "100000"},
    LC_SETTING_ROW(tokenizer_config, uci_spellings, "uci_spellings", LC_SETTING_BOOL, "true",
                   "read a7a8n and castling e1g1 as the vocabulary's a7a8 and e1h1", "false"),
    LC_SETTING_ROW(tokenizer_config, packed, "packed", LC_SETTING_BOOL, "false",
                   "ids as uint16, widened by the reader (false: int64)", "true"),
    LC_SETTING_THREADS(tokenizer_config, threads, "1", 64),
    {0},
};

static int tokenizer_config_check(void *p, lc_problems *ps)
{
    tokenizer_config *c = p;
    int rc = 0;
    if (c->mode == MODE_ENCODER && c->max_seq_len_given)
        rc = lc_problem_add(ps, "max_seq_len",
                            "applies to mode decoder only (remove it, or set mode: decoder)");
    if (c->mode == MODE_ENCODER && c->skip_board_prob_given)
        rc = lc_problem_add(ps, "skip_board_prob",
                            "applies to mode decoder only (remove it, or set mode: decoder)");
    if (c->mode == MODE_DECODER && c->shuffle_buffer_given)
        rc = lc_problem_add(ps, "shuffle_buffer",
                            "applies to mode encoder only (remove it, or set mode: encoder)");
    if (c->mode == MODE_DECODER)
        c->shuffle_buffer = 0;
    return rc;
}

/* An encoder sample as the shuffle buffer holds it: every id of the
 * vocabulary fits in 16 bits; the attention mask is all ones and not kept. */
typedef struct encoder_sample {
    uint16_t input_ids[LC_CHESS_POS_TOKENS];
    uint16_t target;
} encoder_sample;
_Static_assert(LC_CHESS_VOCAB_SIZE <= UINT16_MAX + 1, "token ids fit in uint16_t");

/* How many skipped samples of one kind are logged, before only counting. */
#define LOG_FIRST 5

typedef struct tokenizer {
    lc_batch_layout layout;
    lc_batch_sink sink;
    atomic_uint_fast64_t n_games, n_positions, n_bad_oov, n_bad_fen, n_bad_missing, n_logged;
    /* The encoder's shuffle buffers: worker i owns res[i] (share slots) and
     * fill[i] (written by it, read by flush). NULL and 0 when the buffer is
     * off. */
    lc_reservoir *res;
    uint64_t share;
    atomic_uint_fast64_t *fill;
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
                ((const tokenizer_config *)s->config)->mode == MODE_DECODER ? "game"
                                                                            : "a position of game",
                game->id, game->file, err->msg,
                k + 1 == LOG_FIRST ? " (further ones are only counted)" : "");
}

/* LC_EEMPTY (with err naming the row and column) when row i lacks a value
 * the mode needs: the fen and the best move, and for the decoder the played
 * move; else 0. */
static int check_present(const lc_chess_row *r, uint32_t i, bool need_played, lc_error *err)
{
    const char *column = !r->fen                     ? "fen"
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
    const tokenizer_config *c = s->config;
    lc_error err;
    lc_error_clear(&err);
    lc_chess_decoder *d = lc_chess_decoder_new(c->max_seq_len, c->skip_board_prob, &err);
    if (!d) { /* config_check accepted these values */
        LC_ERROR("%s: %s", s->name, err.msg);
        return;
    }
    lc_chess_decoder_set_uci(d, c->uci_spellings);
    const uint64_t L = c->max_seq_len;
    /* Packed: the sampler writes int64 ids here, narrowed into the batch. */
    int64_t *wide = c->packed ? lc_xmalloc(2 * L * sizeof *wide) : NULL;
    lc_game_item g;
    while (lc_run_state_check(&s->run, meter) && lc_queue_get(s->input, &g, meter) == 0) {
        atomic_fetch_add(&t->n_games, 1);
        uint64_t row;
        lc_batch *b = lc_batcher_row(bt, &row);
        lc_chess_decoder_out out = {
            .input_ids = wide ? wide : (int64_t *)lc_batch_tensor(b, 0) + row * L,
            .target_ids = wide ? wide + L : (int64_t *)lc_batch_tensor(b, 1) + row * L,
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
        if (wide)
            for (uint64_t k = 0; k < L; k++) {
                ((uint16_t *)lc_batch_tensor(b, 0))[row * L + k] = (uint16_t)wide[k];
                ((uint16_t *)lc_batch_tensor(b, 1))[row * L + k] = (uint16_t)wide[L + k];
            }
        if (!lc_batcher_commit(bt, meter))
            break;
    }
    free(wide);
    lc_chess_decoder_free(d);
}

/* Write one sample into the next row of the batch and commit it; false
 * when the output closed. */
static bool put_sample(lc_batcher *bt, const encoder_sample *smp, lc_load_meter *meter)
{
    uint64_t row;
    lc_batch *b = lc_batcher_row(bt, &row);
    if (b->layout->tensors[0].dtype == LC_DTYPE_U16) { /* packed */
        memcpy((uint16_t *)lc_batch_tensor(b, 0) + row * LC_CHESS_POS_TOKENS, smp->input_ids,
               sizeof smp->input_ids);
        memset((uint8_t *)lc_batch_tensor(b, 1) + row * LC_CHESS_POS_TOKENS, 1,
               LC_CHESS_POS_TOKENS);
        ((uint16_t *)lc_batch_tensor(b, 2))[row] = smp->target;
        return lc_batcher_commit(bt, meter);
    }
    int64_t *ids = (int64_t *)lc_batch_tensor(b, 0) + row * LC_CHESS_POS_TOKENS;
    int64_t *mask = (int64_t *)lc_batch_tensor(b, 1) + row * LC_CHESS_POS_TOKENS;
    for (int k = 0; k < LC_CHESS_POS_TOKENS; k++) {
        ids[k] = smp->input_ids[k];
        mask[k] = 1;
    }
    ((int64_t *)lc_batch_tensor(b, 2))[row] = smp->target;
    return lc_batcher_commit(bt, meter);
}

/* One worker's shuffle buffer (core/reservoir.h) and its gauge; without a
 * buffer, samples go straight to the batch. */
typedef struct shuffle_buffer {
    lc_reservoir *res; /* NULL: no buffer */
    atomic_uint_fast64_t *gauge;
} shuffle_buffer;

/* Pass a new sample through the buffer. False when the output closed. */
static bool buffer_push(shuffle_buffer *sb, const encoder_sample *smp, lc_rng *rng, lc_batcher *bt,
                        lc_load_meter *meter)
{
    if (!sb->res)
        return put_sample(bt, smp, meter);
    encoder_sample out;
    if (!lc_reservoir_put(sb->res, smp, &out, rng)) {
        atomic_store_explicit(sb->gauge, sb->res->fill, memory_order_relaxed);
        return true;
    }
    return put_sample(bt, &out, meter);
}

/* At the end of the input: emit what the buffer holds in random order. */
static void buffer_drain(lc_stage *s, shuffle_buffer *sb, lc_rng *rng, lc_batcher *bt,
                         lc_load_meter *meter)
{
    encoder_sample out;
    while (sb->res && lc_run_state_check(&s->run, meter) && lc_reservoir_take(sb->res, &out, rng)) {
        atomic_store_explicit(sb->gauge, sb->res->fill, memory_order_relaxed);
        if (!put_sample(bt, &out, meter))
            break;
    }
}

/* The compact sample of row i, or a nonzero code (err filled) when the row
 * is to be skipped. */
static int encode_row(const lc_chess_row *r, uint32_t i, bool uci, encoder_sample *smp,
                      lc_error *err)
{
    int64_t ids[LC_CHESS_POS_TOKENS], mask[LC_CHESS_POS_TOKENS], target;
    lc_error_clear(err);
    int rc = check_present(r, i, false, err);
    if (rc == 0)
        rc = lc_chess_encoder_sample(r->fen, r->fen_len, r->best, r->best_len, uci, ids, mask,
                                     &target, err);
    if (rc != 0)
        return rc;
    for (int k = 0; k < LC_CHESS_POS_TOKENS; k++)
        smp->input_ids[k] = (uint16_t)ids[k];
    smp->target = (uint16_t)target;
    return 0;
}

static void encoder_worker(lc_stage *s, tokenizer *t, unsigned index, lc_batcher *bt, lc_rng *rng,
                           lc_load_meter *meter)
{
    shuffle_buffer sb = {
        .res = t->res ? &t->res[index] : NULL,
        .gauge = t->fill ? &t->fill[index] : NULL,
    };
    lc_error err;
    lc_game_item g;
    bool open = true;
    while (open && lc_run_state_check(&s->run, meter) && lc_queue_get(s->input, &g, meter) == 0) {
        atomic_fetch_add(&t->n_games, 1);
        for (uint32_t i = 0; i < g.n_rows; i++) {
            encoder_sample smp;
            int rc = encode_row(&g.rows[i], i, ((const tokenizer_config *)s->config)->uci_spellings,
                                &smp, &err);
            if (rc != 0) {
                skipped(s, t, &g, rc, &err);
                continue;
            }
            atomic_fetch_add(&t->n_positions, 1);
            if (!buffer_push(&sb, &smp, rng, bt, meter)) {
                open = false;
                break;
            }
        }
        free(g.mem);
    }
    /* On a stop the samples left are dropped with the buffer (the stage
     * frees it); at the end of the input they are emitted. */
    if (open && !lc_run_state_stopping(&s->run))
        buffer_drain(s, &sb, rng, bt, meter);
    if (sb.gauge)
        atomic_store_explicit(sb.gauge, 0, memory_order_relaxed);
}

static void tokenizer_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    tokenizer *t = s->priv;
    const tokenizer_config *c = s->config;
    lc_batcher bt;
    lc_batcher_init(&bt, s, &t->sink, c->threads == 1);
    lc_rng rng;
    lc_rng_seed(&rng, s->env->seed ^ LC_RNG_SEED_TOKENIZER, index); /* a stream a worker */
    if (c->mode == MODE_DECODER)
        decoder_worker(s, t, &bt, &rng, meter);
    else
        encoder_worker(s, t, index, &bt, &rng, meter);
    lc_batcher_finish(&bt, meter);
}

static void free_buffers(tokenizer *t, unsigned threads)
{
    if (t->res)
        for (unsigned i = 0; i < threads; i++)
            lc_reservoir_fini(&t->res[i]);
    free(t->res);
    free(t->fill);
    t->res = NULL;
    t->fill = NULL;
}

static int tokenizer_init(lc_stage *s, lc_error *err)
{
    tokenizer *t = s->priv;
    const tokenizer_config *c = s->config;
    lc_stage_warn_unordered(s, c->threads);
    if (c->shuffle_buffer > 0) {
        /* The pages of a buffer are only touched as it fills. */
        t->share = c->shuffle_buffer / c->threads ? c->shuffle_buffer / c->threads : 1;
        t->res = lc_xcalloc(c->threads, sizeof *t->res);
        t->fill = lc_xcalloc(c->threads, sizeof *t->fill);
        for (unsigned i = 0; i < c->threads; i++)
            if (lc_reservoir_init(&t->res[i], sizeof(encoder_sample), t->share) != 0) {
                free_buffers(t, c->threads);
                return lc_error_set(err, -ENOMEM,
                                    "shuffle_buffer: cannot reserve %zu MB for %llu positions "
                                    "(lower it)",
                                    (size_t)(t->share * c->threads * sizeof(encoder_sample)) >> 20,
                                    (unsigned long long)(t->share * c->threads));
            }
    }
    lc_batch_layout_init(&t->layout, c->batch_size);
    const lc_dtype id = c->packed ? LC_DTYPE_U16 : LC_DTYPE_I64;
    const char *expand = c->packed ? LC_EXPAND_WIDEN : NULL;
    if (c->mode == MODE_DECODER) {
        const uint64_t seq[1] = {c->max_seq_len}, wdl[2] = {c->max_seq_len, 3};
        lc_batch_layout_name(&t->layout, c->packed ? "chess-decoder-packed" : "chess-decoder",
                             expand);
        lc_batch_layout_add(&t->layout, "input_ids", id, 1, seq);
        lc_batch_layout_add(&t->layout, "target_ids", id, 1, seq);
        lc_batch_layout_add(&t->layout, "wdl_targets", LC_DTYPE_F32, 2, wdl);
        lc_batch_layout_add(&t->layout, "wdl_mask", LC_DTYPE_BOOL, 1, seq);
    } else {
        const uint64_t pos[1] = {LC_CHESS_POS_TOKENS};
        lc_batch_layout_name(&t->layout, c->packed ? "chess-encoder-packed" : "chess-encoder",
                             expand);
        lc_batch_layout_add(&t->layout, "input_ids", id, 1, pos);
        lc_batch_layout_add(&t->layout, "attention_mask", c->packed ? LC_DTYPE_U8 : LC_DTYPE_I64, 1,
                            pos);
        lc_batch_layout_add(&t->layout, "target", id, 0, NULL);
    }
    lc_batch_sink_init(&t->sink, &t->layout, c->threads);
    return 0;
}

static void tokenizer_fini(lc_stage *s)
{
    tokenizer *t = s->priv;
    lc_batch_sink_fini(&t->sink);
    free_buffers(t, ((const tokenizer_config *)s->config)->threads);
}

enum {
    T_GAMES,
    T_POSITIONS,
    T_FILL,
    T_BATCHES,
    T_SAMPLES,
    T_GAMES_OOV,
    T_GAMES_FEN,
    T_GAMES_MISSING,
    T_POSITIONS_OOV,
    T_POSITIONS_FEN,
    T_POSITIONS_MISSING,
};

static void tokenizer_flush(lc_stage *s, lc_stage_metrics *m)
{
    tokenizer *t = s->priv;
    const tokenizer_config *c = s->config;
    bool dec = c->mode == MODE_DECODER;
    /* A decoder's samples are games, an encoder's positions. */
    int bad = dec ? T_GAMES_OOV : T_POSITIONS_OOV;
    lc_metric_add(m, bad, atomic_exchange(&t->n_bad_oov, 0));
    lc_metric_add(m, bad + 1, atomic_exchange(&t->n_bad_fen, 0));
    lc_metric_add(m, bad + 2, atomic_exchange(&t->n_bad_missing, 0));
    if (t->fill) {
        uint64_t fill = 0;
        for (unsigned i = 0; i < c->threads; i++)
            fill += atomic_load_explicit(&t->fill[i], memory_order_relaxed);
        lc_metric_gauge_of(m, T_FILL, (int64_t)fill, (int64_t)(t->share * c->threads));
    }
    snprintf(m->detail, sizeof m->detail, "%s", dec ? "decoder" : "encoder");
}

#define BAD .kind = LC_METRIC_BAD
static const lc_metric_info tokenizer_metrics[] = {
    [T_GAMES] = {"games", "games", LC_SHOW_RATE, 0, "games/s", LC_METRIC_AT(tokenizer, n_games)},
    [T_POSITIONS] = {"positions", "positions", LC_SHOW_RATE, 0, "positions/s", "pos/s",
                     .role = LC_ROLE_POSITIONS, LC_METRIC_AT(tokenizer, n_positions)},
    [T_FILL] = {"shuffle_buffer", "samples", LC_SHOW_FILL, 0, "in shuffle buffer",
                .kind = LC_METRIC_GAUGE},
    [T_BATCHES] = {"batches", "batches", LC_METRIC_AT(tokenizer, sink.n_batches)},
    [T_SAMPLES] = {"samples", "samples", LC_METRIC_AT(tokenizer, sink.n_rows)},
    [T_GAMES_OOV] = {"bad_games_out_of_vocabulary", "games", BAD},
    [T_GAMES_FEN] = {"bad_games_fen", "games", BAD},
    [T_GAMES_MISSING] = {"bad_games_missing_values", "games", BAD},
    [T_POSITIONS_OOV] = {"bad_positions_out_of_vocabulary", "positions", BAD},
    [T_POSITIONS_FEN] = {"bad_positions_fen", "positions", BAD},
    [T_POSITIONS_MISSING] = {"bad_positions_missing_values", "positions", BAD},
    {0},
};

static unsigned tokenizer_threads(const void *config)
{
    return ((const tokenizer_config *)config)->threads;
}

const lc_stage_class lc_game_tokenizer_class = {
    .type_name = "game_tokenizer",
    .summary = "tokenizes games into decoder (whole-game) or encoder (one position) batches",
    .input = &lc_item_game,
    .output = &lc_item_batch,
    .priv_size = sizeof(tokenizer),
    .worker = tokenizer_worker,
    .threads = tokenizer_threads,
    .workers = "workers",
    .settings = {tokenizer_settings, sizeof(tokenizer_config)},
    .config_check = tokenizer_config_check,
    .init = tokenizer_init,
    .fini = tokenizer_fini,
    .flush_metrics = tokenizer_flush,
    .metrics = tokenizer_metrics,
};
