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
 *   lcmon_bench sampler DIR FRAMES RESERVOIR THREADS...
 *       the shuffling_frame_sampler stage alone, run as in a pipeline: a
 *       feeder thread puts FRAMES frames (the records under DIR, round and
 *       round, copied as the unpacker emits them, in blocks of 64) into its
 *       input queue, a drain thread takes them from its output; frames/s
 *       from the first frame in to the last frame out, for each THREADS
 *       value (a reservoir of RESERVOIR frames shared among them). One line
 *       per value.
 *
 *   lcmon_bench copy FILE PIPE
 *       copies a recorded batch stream into a named pipe as fast as the
 *       kernel allows (splice from the page cache, 1 MiB pipe buffer, the
 *       same size the writer asks for): the pipe ceiling's writer side.
 *
 * It prints one line of key=value pairs.
 */
#include "core/clock.h"
#include "core/dirwalk.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/text.h"
#include "format/chess/chess_tokens.h"
#include "format/lc0/chunk.h"
#include "format/lc0/chunk_source.h"
#include "format/gzip.h"
#include "format/lc0/frame.h"
#include "format/lc0/packed_chunk.h"
#include "stages/items.h"
#include "stages/registry.h"
#include "standalone.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct chunk_ref {
    lc_chunk_source *src;
    size_t member;
} chunk_ref;

static chunk_ref *chunks;
static size_t n_chunks, cap_chunks;
static atomic_size_t next_chunk;
static atomic_uint_fast64_t frames, bytes_out, failures;
static size_t passes;

static void add_file(const char *path)
{
    if (!lc_has_suffix(path, ".gz") && !lc_has_suffix(path, ".tar"))
        return;
    lc_chunk_source *src;
    if (lc_chunk_source_open(path, &src, NULL) != 0)
        return;
    for (size_t m = 0; m < lc_chunk_source_count(src); m++) {
        if (n_chunks == cap_chunks) {
            cap_chunks = cap_chunks ? 2 * cap_chunks : 1024;
            chunks = lc_xrealloc(chunks, cap_chunks * sizeof *chunks);
        }
        chunks[n_chunks].src = lc_chunk_source_ref(src);
        chunks[n_chunks].member = m;
        n_chunks++;
    }
    lc_chunk_source_unref(src);
}

/* Every .gz and .tar under dir, walked as the loader walks it. */
static void walk_file(void *ctx, char *path, const char *name)
{
    (void)ctx;
    (void)name;
    add_file(path);
    free(path);
}

static void walk(const char *dir)
{
    lc_walk_tree(dir, &(lc_walk_ops){.file = walk_file}, NULL);
}

static void *inflate_worker(void *arg)
{
    (void)arg;
    for (;;) {
        size_t i = atomic_fetch_add(&next_chunk, 1);
        if (i >= n_chunks * passes)
            return NULL;
        const chunk_ref *c = &chunks[i % n_chunks];
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
    walk(dir);
    if (n_chunks == 0) {
        fprintf(stderr, "lcmon_bench: no chunks under %s\n", dir);
        return 1;
    }
    lc_chunk_data *data = lc_xcalloc(n_chunks, sizeof *data);
    uint64_t positions = 0;
    for (size_t i = 0; i < n_chunks; i++)
        if (lc_chunk_source_load(chunks[i].src, chunks[i].member, LC_INFLATE_AUTO, &data[i],
                                 NULL) == 0)
            positions += data[i].n_records;
    lc_packed_chunk **packed = lc_xcalloc(n_chunks, sizeof *packed);
    for (int b = 0; b < n_blocks; b++) {
        unsigned block = (unsigned)atoi(block_args[b]);
        lc_pack_ctx *pc = lc_pack_ctx_new(LC_PACK_LEVEL_DEFAULT, block);
        uint64_t bytes = 0;
        double t0 = lc_now_seconds();
        for (size_t i = 0; i < n_chunks; i++) {
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
        double all_s = decode_uses(packed, n_chunks, 0, &all);
        /* 1/32 of the average game, as sampling at 1/32 takes. */
        uint32_t k32 = (uint32_t)((positions / n_chunks + 16) / 32);
        double few_s = decode_uses(packed, n_chunks, k32 ? k32 : 1, &few);
        double one_s = decode_uses(packed, n_chunks, 1, &one);
        printf("pack block=%u positions=%llu bytes_per_position=%.1f pack_us=%.2f "
               "decode_us_rate1=%.2f decode_us_rate1_32=%.2f decode_us_one=%.2f\n",
               block, (unsigned long long)positions, (double)bytes / (double)positions,
               pack_s * 1e6 / (double)positions, all_s * 1e6 / (double)all,
               few_s * 1e6 / (double)few, one_s * 1e6 / (double)one);
        fflush(stdout);
        for (size_t i = 0; i < n_chunks; i++) {
            lc_packed_chunk_unref(packed[i]);
            packed[i] = NULL;
        }
    }
    for (size_t i = 0; i < n_chunks; i++)
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

/* ---- the sampler alone ---- */

typedef struct sampler_feed {
    lc_queue *q;
    const lc_frame *frames;
    size_t n_frames;
    uint64_t total;
} sampler_feed;

static void *sampler_feeder(void *arg)
{
    sampler_feed *fd = arg;
    lc_frame block[64];
    uint64_t sent = 0;
    while (sent < fd->total) {
        size_t n = fd->total - sent < 64 ? (size_t)(fd->total - sent) : 64, taken;
        for (size_t i = 0; i < n; i++)
            lc_frame_copy(&block[i], &fd->frames[(sent + i) % fd->n_frames]);
        if (lc_queue_put_many(fd->q, block, n, &taken, NULL) != 0) {
            for (size_t i = taken; i < n; i++)
                lc_frame_fini(&block[i]);
            break;
        }
        sent += n;
    }
    lc_queue_close(fd->q);
    return NULL;
}

static int sampler_main(const char *dir, uint64_t total, uint64_t reservoir, int n_threads,
                        char **threads)
{
    walk(dir);
    lc_frame *fr = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < n_chunks; i++) {
        lc_chunk_data data = {0};
        if (lc_chunk_source_load(chunks[i].src, chunks[i].member, LC_INFLATE_AUTO, &data, NULL))
            continue;
        for (uint32_t r = 0; r < data.n_records; r++) {
            if (n == cap) {
                cap = cap ? 2 * cap : 4096;
                fr = lc_xrealloc(fr, cap * sizeof *fr);
            }
            if (lc_frame_from_record(data.data + (size_t)r * data.record_size, data.version, &fr[n],
                                     NULL) == 0)
                n++;
        }
        lc_chunk_data_fini(&data);
    }
    if (n == 0) {
        fprintf(stderr, "lcmon_bench: no records under %s\n", dir);
        return 1;
    }
    for (int t = 0; t < n_threads; t++) {
        char yaml[96];
        snprintf(yaml, sizeof yaml, "{reservoir_size: %llu, threads: %s}",
                 (unsigned long long)reservoir, threads[t]);
        lc_queue *in = lc_queue_new("frames", &lc_item_frame, 4096, LC_OVERFLOW_BLOCK);
        lc_stage *s = NULL;
        lc_error err;
        lc_error_clear(&err);
        if (lc_standalone_new(lc_stage_class_find("shuffling_frame_sampler"), "sampler", yaml, in,
                              4096, NULL, &s, &err) != 0 ||
            lc_standalone_start(s, &err) != 0) {
            fprintf(stderr, "lcmon_bench: sampler: %s\n", err.msg);
            return 1;
        }
        sampler_feed fd = {.q = in, .frames = fr, .n_frames = n, .total = total};
        pthread_t feeder;
        double t0 = lc_now_seconds();
        pthread_create(&feeder, NULL, sampler_feeder, &fd);
        uint64_t got = 0;
        size_t k;
        lc_frame block[64];
        while (lc_queue_get_many(s->outputs[0], block, 64, &k, NULL) == 0) {
            for (size_t i = 0; i < k; i++)
                lc_frame_fini(&block[i]);
            got += k;
        }
        double dt = lc_now_seconds() - t0;
        pthread_join(feeder, NULL);
        printf("sampler threads=%s reservoir=%llu frames=%llu seconds=%.3f frames_per_s=%.0f%s\n",
               threads[t], (unsigned long long)reservoir, (unsigned long long)got, dt,
               (double)got / dt, got == total ? "" : " LOST");
        lc_standalone_free(s);
        lc_queue_free(in);
    }
    for (size_t i = 0; i < n; i++)
        lc_frame_fini(&fr[i]);
    free(fr);
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
    if (argc >= 6 && strcmp(argv[1], "sampler") == 0)
        return sampler_main(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10),
                            argc - 5, argv + 5);
    if (argc != 5 || strcmp(argv[1], "inflate") != 0) {
        fprintf(stderr, "usage: lcmon_bench inflate DIR THREADS PASSES\n"
                        "       lcmon_bench pack DIR BLOCK...\n"
                        "       lcmon_bench sampler DIR FRAMES RESERVOIR THREADS...\n"
                        "       lcmon_bench chess\n"
                        "       lcmon_bench copy FILE PIPE\n");
        return 2;
    }
    walk(argv[2]);
    int threads = atoi(argv[3]);
    passes = (size_t)atoi(argv[4]);
    if (n_chunks == 0 || threads < 1 || passes < 1) {
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
           n_chunks, passes, threads, dt, (unsigned long long)frames, (double)frames / dt,
           (double)bytes_out / dt / 1e6, lc_inflate_backend_name(LC_INFLATE_AUTO),
           (unsigned long long)failures);
    for (size_t i = 0; i < n_chunks; i++)
        lc_chunk_source_unref(chunks[i].src);
    free(chunks);
    free(t);
    return 0;
}
