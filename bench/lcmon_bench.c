/*
 * lcmon_bench: the machine's ceilings for the loader's work, measured with
 * the loader's own code, for bench/run to compare against.
 *
 *   lcmon_bench inflate DIR THREADS PASSES
 *       reads every chunk of every .gz/.tar under DIR, PASSES times, with
 *       THREADS threads, through lc_chunk_source_load (the same inflate path
 *       as the pool's loading threads), and prints frames/s and MB/s.
 *
 *   lcmon_bench pack DIR BLOCK...
 *       the chunk store's costs, one thread, for each block size: every chunk
 *       under DIR inflated once (untimed), then packed as the pool's store
 *       packs it (the validator's checks included), then decoded three ways
 *       as uses at sampling rate 1.0, 1/32 and positions_per_chunk 1 ask for
 *       positions (picks spread over the game like the unpacker's): bytes a
 *       position, microseconds a position to pack, and a position
 *       delivered to decode. One line per block size.
 *
 *   lcmon_bench chess
 *       the chess tokenizer's costs, one thread: nanoseconds to tokenise a
 *       FEN (four positions of an opening, a middle game and an ending, in
 *       turn) and microseconds for one decoder sample of an 80-row game
 *       (max_seq_len 256, skip_board_prob 0.2).
 *
 *   lcmon_bench stage NAME DIR [--threads N,...] [--seconds S] [--rate R]
 *                     [--set 'KEY: VALUE, ...']
 *       one stage of the chain alone (unpacker, validator, sampler, tensors,
 *       tensors_packed), as the pipeline runs it, fed input made once from
 *       the games under DIR and drained: its frames/s and the CPU
 *       nanoseconds of its own threads a frame, for each thread count
 *       (default 1,2,4), over S seconds (default 2) after a warm-up; R is
 *       the unpacker's sampling rate (default 1.0). stage_bench.c says
 *       more. One line per thread count, after a line on the input.
 *
 *   lcmon_bench copy FILE PIPE
 *       copies a recorded batch stream into a named pipe as fast as the
 *       kernel allows (splice from the page cache, 1 MiB pipe buffer, the
 *       same size the writer asks for): the pipe ceiling's writer side.
 *
 * It prints one line of key=value pairs.
 */
#include "core/clock.h"
#include "core/error.h"
#include "core/rng.h"
#include "format/chess/chess_tokens.h"
#include "format/lc0/chunk.h"
#include "format/lc0/chunk_source.h"
#include "format/gzip.h"
#include "format/lc0/frame.h"
#include "format/lc0/packed_chunk.h"
#include "bench_corpus.h"
#include "stage_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bench_corpus corpus;
static atomic_size_t next_chunk;
static atomic_uint_fast64_t frames, bytes_out, failures;
static size_t passes;

static void *inflate_worker(void *arg)
{
    (void)arg;
    for (;;) {
        size_t i = atomic_fetch_add(&next_chunk, 1);
        if (i >= corpus.n * passes)
            return NULL;
        const bench_chunk *c = &corpus.chunks[i % corpus.n];
        lc_chunk_data data = {0};
        if (lc_chunk_source_load(c->src, c->member, LC_INFLATE_AUTO, &data, NULL) != 0) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        atomic_fetch_add(&frames, data.n_records);
        atomic_fetch_add(&bytes_out, data.size);
        lc_chunk_data_fini(&data);
    }
}

static int copy_main(const char *file, const char *pipe_path)
{
    int in = open(file, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        fprintf(stderr, "lcmon_bench: %s: %s\n", file, strerror(errno));
        return 1;
    }
    int out = open(pipe_path, O_WRONLY | O_CLOEXEC);
    if (out < 0) {
        fprintf(stderr, "lcmon_bench: %s: %s\n", pipe_path, strerror(errno));
        close(in);
        return 1;
    }
    fcntl(out, F_SETPIPE_SZ, 1 << 20);
    uint64_t total = 0;
    double t0 = lc_now_seconds();
    for (;;) {
        ssize_t n = splice(in, NULL, out, NULL, 1 << 20, SPLICE_F_MOVE | SPLICE_F_MORE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* end of file, or the reader left (EPIPE) */
        total += (uint64_t)n;
    }
    double dt = lc_now_seconds() - t0;
    printf("copy bytes=%llu seconds=%.3f MB_per_s=%.1f\n", (unsigned long long)total, dt,
           (double)total / dt / 1e6);
    close(in);
    close(out);
    return 0;
}

/* Decode `want` positions of each chunk (evenly spread, as a use picks
 * them; want 0: all), with a fresh start per chunk as each use has; the
 * seconds it took, and the positions through *delivered. */
static double decode_uses(lc_packed_chunk **packed, size_t n, uint32_t want, uint64_t *delivered)
{
    lc_unpack_ctx *uc = lc_unpack_ctx_new();
    lc_unpack_ctx *other = lc_unpack_ctx_new();
    uint64_t count = 0;
    double t0 = lc_now_seconds();
    for (size_t i = 0; i < n; i++) {
        if (!packed[i])
            continue;
        uint32_t pos = lc_packed_chunk_positions(packed[i]);
        uint32_t k = want == 0 || want > pos ? pos : want;
        for (uint32_t j = 0; j < k; j++) {
            lc_frame f;
            uint32_t at = (uint32_t)(((uint64_t)j * pos + pos / 2) / k) % pos;
            if (lc_packed_chunk_frame(packed[i], uc, at, &f, NULL) == 0)
                count++;
            lc_frame_fini(&f);
        }
        /* Forget this chunk's blocks, as a use of the next chunk does. */
        lc_unpack_ctx *t = uc;
        uc = other;
        other = t;
    }
    double dt = lc_now_seconds() - t0;
    lc_unpack_ctx_free(uc);
    lc_unpack_ctx_free(other);
    *delivered = count;
    return dt;
}

static int pack_main(const char *dir, int n_blocks, char **block_args)
{
    bench_corpus_walk(&corpus, dir);
    if (corpus.n == 0) {
        fprintf(stderr, "lcmon_bench: no chunks under %s\n", dir);
        return 1;
    }
    lc_chunk_data *data = lc_xcalloc(corpus.n, sizeof *data);
    uint64_t positions = 0;
    for (size_t i = 0; i < corpus.n; i++)
        if (lc_chunk_source_load(corpus.chunks[i].src, corpus.chunks[i].member, LC_INFLATE_AUTO,
                                 &data[i], NULL) == 0)
            positions += data[i].n_records;
    lc_packed_chunk **packed = lc_xcalloc(corpus.n, sizeof *packed);
    for (int b = 0; b < n_blocks; b++) {
        unsigned block = (unsigned)atoi(block_args[b]);
        lc_pack_ctx *pc = lc_pack_ctx_new(LC_PACK_LEVEL_DEFAULT, block);
        uint64_t bytes = 0;
        double t0 = lc_now_seconds();
        for (size_t i = 0; i < corpus.n; i++) {
            if (!data[i].data)
                continue;
            if (lc_packed_chunk_build(pc, data[i].data, data[i].record_size,
                                      (uint32_t)data[i].n_records, data[i].version, &packed[i],
                                      NULL, NULL) == 0)
                bytes += lc_packed_chunk_bytes(packed[i]);
        }
        double pack_s = lc_now_seconds() - t0;
        lc_pack_ctx_free(pc);
        uint64_t all, few, one;
        double all_s = decode_uses(packed, corpus.n, 0, &all);
        /* 1/32 of the average game, as sampling at 1/32 takes. */
        uint32_t k32 = (uint32_t)((positions / corpus.n + 16) / 32);
        double few_s = decode_uses(packed, corpus.n, k32 ? k32 : 1, &few);
        double one_s = decode_uses(packed, corpus.n, 1, &one);
        printf("pack block=%u positions=%llu bytes_per_position=%.1f pack_us=%.2f "
               "decode_us_rate1=%.2f decode_us_rate1_32=%.2f decode_us_one=%.2f\n",
               block, (unsigned long long)positions, (double)bytes / (double)positions,
               pack_s * 1e6 / (double)positions, all_s * 1e6 / (double)all,
               few_s * 1e6 / (double)few, one_s * 1e6 / (double)one);
        fflush(stdout);
        for (size_t i = 0; i < corpus.n; i++) {
            lc_packed_chunk_unref(packed[i]);
            packed[i] = NULL;
        }
    }
    for (size_t i = 0; i < corpus.n; i++)
        lc_chunk_data_fini(&data[i]);
    free(data);
    free(packed);
    return 0;
}

static int chess_main(void)
{
    static const char *const fens[4] = {
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
        "r3k2r/pp3ppp/2n1bn2/q1bpp3/4P3/2NP1N2/PPPBBPPP/R2Q1RK1 b kq - 3 9",
        "8/5pk1/6p1/8/3R4/6P1/5PKP/8 w - - 0 41",
    };
    size_t lens[4];
    for (int i = 0; i < 4; i++)
        lens[i] = strlen(fens[i]);
    int64_t t[LC_CHESS_POS_TOKENS];
    int64_t sink = 0;
    const int iters = 2000000;
    double t0 = lc_now_seconds();
    for (int i = 0; i < iters; i++) {
        lc_chess_fen_tokens(fens[i & 3], lens[i & 3], t, NULL);
        sink += t[66];
    }
    double fen_ns = (lc_now_seconds() - t0) * 1e9 / iters;

    /* A game of 80 rows: the four positions in turn, random moves. */
    static lc_chess_row rows[80];
    lc_rng r;
    lc_rng_seed(&r, 1, 99);
    for (size_t i = 0; i < 80; i++) {
        const char *played = lc_chess_token_name((int)lc_rng_below(&r, LC_CHESS_N_MOVES));
        const char *best = lc_chess_token_name((int)lc_rng_below(&r, LC_CHESS_N_MOVES));
        rows[i] = (lc_chess_row){.fen = fens[i & 3],
                                 .fen_len = lens[i & 3],
                                 .played = played,
                                 .played_len = strlen(played),
                                 .best = best,
                                 .best_len = strlen(best),
                                 .win = 0.3,
                                 .draw = 0.4,
                                 .loss = 0.3,
                                 .has_win = true,
                                 .has_draw = true,
                                 .has_loss = true};
    }
    enum { L = 256 };
    static int64_t in[L], tg[L];
    static float wdl[3 * L];
    static uint8_t mask[L];
    lc_chess_decoder_out out = {in, tg, wdl, mask, NULL};
    lc_chess_decoder *d = lc_chess_decoder_new(L, 0.2, NULL);
    const int games = 20000;
    t0 = lc_now_seconds();
    for (int i = 0; i < games; i++)
        lc_chess_decoder_sample(d, rows, 80, &r, &out, NULL);
    double game_us = (lc_now_seconds() - t0) * 1e6 / games;
    lc_chess_decoder_free(d);
    printf("chess fen_ns=%.1f decoder_game_us=%.2f decoder_row_ns=%.1f sink=%lld\n", fen_ns,
           game_us, game_us * 1e3 / 80, (long long)sink);
    return 0;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 2 && strcmp(argv[1], "chess") == 0)
        return chess_main();
    if (argc == 4 && strcmp(argv[1], "copy") == 0)
        return copy_main(argv[2], argv[3]);
    if (argc >= 4 && strcmp(argv[1], "pack") == 0)
        return pack_main(argv[2], argc - 3, argv + 3);
    if (argc >= 3 && strcmp(argv[1], "stage") == 0)
        return stage_bench_main(argc - 2, argv + 2);
    if (argc != 5 || strcmp(argv[1], "inflate") != 0) {
        fprintf(stderr, "usage: lcmon_bench inflate DIR THREADS PASSES\n"
                        "       lcmon_bench pack DIR BLOCK...\n"
                        "       lcmon_bench stage NAME DIR [--threads N,...] [--seconds S] "
                        "[--rate R] [--set 'KEY: VALUE']\n"
                        "       lcmon_bench chess\n"
                        "       lcmon_bench copy FILE PIPE\n");
        return 2;
    }
    bench_corpus_walk(&corpus, argv[2]);
    int threads = atoi(argv[3]);
    passes = (size_t)atoi(argv[4]);
    if (corpus.n == 0 || threads < 1 || passes < 1) {
        fprintf(stderr, "lcmon_bench: no chunks under %s (or bad arguments)\n", argv[2]);
        return 1;
    }
    pthread_t *t = lc_xcalloc((size_t)threads, sizeof *t);
    double t0 = lc_now_seconds();
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, inflate_worker, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    double dt = lc_now_seconds() - t0;
    printf("inflate chunks=%zu passes=%zu threads=%d seconds=%.3f frames=%llu frames_per_s=%.0f "
           "MB_per_s=%.1f backend=%s failures=%llu\n",
           corpus.n, passes, threads, dt, (unsigned long long)frames, (double)frames / dt,
           (double)bytes_out / dt / 1e6, lc_inflate_backend_name(LC_INFLATE_AUTO),
           (unsigned long long)failures);
    bench_corpus_fini(&corpus);
    free(t);
    return 0;
}
