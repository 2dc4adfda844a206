/*
 * stage_bench: one stage of the lc0 chain alone, run as the pipeline runs
 * it (lcmon_bench stage NAME DIR ...; usage below).
 *
 * The stage is made from its class table and a YAML block (the default
 * pipeline's settings, `--set` adds to them) and started by
 * tests/lib/standalone.c, as lc_stage_init ... lc_stage_fini do in a
 * pipeline: its own worker pool, reading an input queue and writing its
 * output queue, of the capacities the default pipeline gives them. A feeder
 * thread puts pre-made input on the input queue in blocks, as the stage
 * above it does; a drain thread takes the output in blocks and disposes of
 * it, as the stage below does. Nothing of the stage is copied here: a
 * reworked stage is measured by the same command.
 *
 * The input, made once before anything is timed, from the games under DIR:
 *   - chunks (unpacker, validator): each game packed as the pool's chunk
 *     store packs it (default level and block), handed out as the pool
 *     hands out a stored chunk (a reference, its global index, its use
 *     count from 0 up, checked), game after game, round and round;
 *   - frames (sampler, tensor generator): each record made a frame as the
 *     unpacker makes it, copied into a frame cell of its own and put on the
 *     queue by pointer (stages/items.h), round and round.
 *
 * The measure. After a warm-up (every game used once: a stored game's
 * short-term targets are computed at its first use and kept with it; the
 * sampler's reservoir full; at least a quarter of a second), the window of
 * --seconds: the items the drain took, the CPU time of the stage's own
 * worker threads (their CPU clocks, pthread_getcpuclockid) and of the
 * whole process (the feeder and the drain too). Then the feeder stops and
 * closes the input, the stage finishes, and the check: what came out is
 * what must (frames in equal frames out for the sampler and the tensor
 * generator, chunks for the validator, for the unpacker the sum over the
 * uses of floor or ceil of the sampling rate times the game's positions,
 * the unpacker's own arithmetic); a run that fails it says so and exits 1.
 */
#include "stage_bench.h"

#include "bench_corpus.h"
#include "core/clock.h"
#include "core/error.h"
#include "format/batch.h"
#include "format/lc0/chunk.h"
#include "format/lc0/frame.h"
#include "format/lc0/packed_chunk.h"
#include "stages/items.h"
#include "stages/registry.h"
#include "standalone.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef enum { IN_CHUNKS, IN_FRAMES, IN_SOURCES } input_kind;

/* The longest a warm-up may take, in seconds: a stage that has made
 * nothing by then fails the run. */
#define WARM_UP_MAX 120

/* A stage as the default pipeline (lcmon --print-default-config) runs it:
 * its block without `threads`, and the capacities of its input and output
 * queues there. */
typedef struct stage_kind {
    const char *name, *type, *block;
    input_kind in;
    size_t in_cap, out_cap;
    const char *unit; /* what the rates count: the stage's output items */
} stage_kind;

static const stage_kind kinds[] = {
    {"pool", "shuffling_chunk_pool", "chunk_pool_size: 50000", IN_SOURCES, 64, 16, "chunk"},
    {"unpacker", "chunk_unpacker", "sampling_rate: ", IN_CHUNKS, 16, 2048, "frame"},
    {"validator", "chunk_validator", "", IN_CHUNKS, 16, 16, "chunk"},
    {"sampler", "shuffling_frame_sampler", "reservoir_size: 20000", IN_FRAMES, 2048, 2048, "frame"},
    {"tensors", "tensor_generator", "batch_size: 256, layout: current", IN_FRAMES, 2048, 4,
     "frame"},
    {"tensors_packed", "tensor_generator", "batch_size: 256, layout: current, packed: true",
     IN_FRAMES, 2048, 4, "frame"},
};

/* The pre-made input. */
typedef struct stage_input {
    lc_chunk_source **sources; /* n_sources, one reference each */
    size_t n_sources;
    lc_packed_chunk **packed; /* n_chunks, one reference each */
    size_t n_chunks;
    lc_frame *frames;
    size_t n_frames;
    uint64_t games, positions, raw_bytes, file_bytes;
} stage_input;

static int make_input(const char *dir, input_kind kind, stage_input *in)
{
    bench_corpus c = {0};
    bench_corpus_walk(&c, dir);
    *in = (stage_input){.file_bytes = c.file_bytes};
    lc_pack_ctx *pc = lc_pack_ctx_new(LC_PACK_LEVEL_DEFAULT, LC_PACK_BLOCK_DEFAULT);
    size_t cap = 0;
    if (kind == IN_CHUNKS)
        in->packed = lc_xcalloc(c.n ? c.n : 1, sizeof *in->packed);
    if (kind == IN_SOURCES)
        in->sources = lc_xcalloc(c.n ? c.n : 1, sizeof *in->sources);
    for (size_t i = 0; i < c.n; i++) {
        if (kind == IN_SOURCES && (i == 0 || c.chunks[i].src != c.chunks[i - 1].src))
            in->sources[in->n_sources++] = lc_chunk_source_ref(c.chunks[i].src);
        lc_chunk_data d = {0};
        if (lc_chunk_source_load(c.chunks[i].src, c.chunks[i].member, LC_INFLATE_AUTO, &d, NULL))
            continue;
        in->games++;
        in->positions += d.n_records;
        in->raw_bytes += d.size;
        if (kind == IN_CHUNKS &&
            lc_packed_chunk_build(pc, d.data, d.record_size, (uint32_t)d.n_records, d.version,
                                  &in->packed[in->n_chunks], NULL, NULL) == 0)
            in->n_chunks++;
        for (size_t r = 0; kind == IN_FRAMES && r < d.n_records; r++) {
            if (in->n_frames == cap) {
                cap = cap ? 2 * cap : 4096;
                in->frames = lc_xrealloc(in->frames, cap * sizeof *in->frames);
            }
            lc_frame *f = &in->frames[in->n_frames];
            if (lc_frame_from_record(d.data + r * d.record_size, d.version, f, NULL) != 0)
                continue;
            if (lc_input_format_known(f->input_format)) /* as the unpacker keeps them */
                in->n_frames++;
            else
                lc_frame_fini(f);
        }
        lc_chunk_data_fini(&d);
    }
    lc_pack_ctx_free(pc);
    bench_corpus_fini(&c);
    if (kind == IN_CHUNKS   ? in->n_chunks == 0
        : kind == IN_FRAMES ? in->n_frames == 0
                            : !in->games) {
        fprintf(stderr, "lcmon_bench: no games under %s (give a folder of lc0 .gz or .tar files)\n",
                dir);
        return 1;
    }
    return 0;
}

static void free_input(stage_input *in)
{
    for (size_t i = 0; i < in->n_chunks; i++)
        lc_packed_chunk_unref(in->packed[i]);
    for (size_t i = 0; i < in->n_frames; i++)
        lc_frame_fini(&in->frames[i]);
    for (size_t i = 0; i < in->n_sources; i++)
        lc_chunk_source_unref(in->sources[i]);
    free(in->sources);
    free(in->packed);
    free(in->frames);
}

/* The feeder: blocks of input until told to stop, then it closes the input.
 * It counts what it fed, and the frames the output must then hold:
 * exactly (lo == hi), or, for the unpacker, between lo and hi. */
typedef struct feeder {
    lc_queue *q;
    const stage_input *in;
    input_kind kind;
    uint64_t rate_fixed; /* the unpacker's rate in 32-bit fixed point; 0: no bounds */
    uint32_t *uses;      /* a use count a game */
    atomic_bool stop;
    atomic_uint_fast64_t fed;
    uint64_t lo, hi;
} feeder;

static void *feed_chunks(feeder *fd)
{
    const stage_input *in = fd->in;
    lc_chunk_item block[8];
    uint64_t lo[8], hi[8];
    size_t next = 0;
    while (!atomic_load(&fd->stop)) {
        for (size_t i = 0; i < 8; i++, next = (next + 1) % in->n_chunks) {
            uint32_t n = lc_packed_chunk_positions(in->packed[next]);
            block[i] = (lc_chunk_item){.packed = lc_packed_chunk_ref(in->packed[next]),
                                       .version = lc_packed_chunk_version(in->packed[next]),
                                       .n_records = n,
                                       .use_count = fd->uses[next]++,
                                       .global_index = next,
                                       .flags = LC_ITEM_CHECKED};
            /* A use emits floor or ceil of n * rate (chunk_unpacker.c). */
            uint64_t scaled = (uint64_t)n * fd->rate_fixed;
            lo[i] = fd->rate_fixed ? scaled >> 32 : 1;
            hi[i] = fd->rate_fixed ? (scaled >> 32) + ((scaled & 0xffffffffu) != 0) : 1;
        }
        size_t taken = 0;
        int rc = lc_queue_put_many(fd->q, block, 8, &taken, NULL);
        atomic_fetch_add(&fd->fed, taken);
        for (size_t i = 0; i < taken; i++) {
            fd->lo += lo[i];
            fd->hi += hi[i];
        }
        for (size_t i = taken; i < 8; i++)
            lc_item_chunk.dispose(&block[i]);
        if (rc != 0)
            break;
    }
    return NULL;
}

static void *feed_frames(feeder *fd)
{
    const stage_input *in = fd->in;
    lc_frame *block[64];
    size_t next = 0;
    while (!atomic_load(&fd->stop)) {
        /* Each a cell of its own, as the unpacker makes them (stages/items.h). */
        for (size_t i = 0; i < 64; i++, next = (next + 1) % in->n_frames)
            block[i] = lc_frame_cell_dup(&in->frames[next]);
        size_t taken = 0;
        int rc = lc_queue_put_many(fd->q, block, 64, &taken, NULL);
        atomic_fetch_add(&fd->fed, taken);
        fd->lo += taken;
        fd->hi += taken;
        for (size_t i = taken; i < 64; i++)
            lc_frame_cell_free(block[i]);
        if (rc != 0)
            break;
    }
    return NULL;
}

/* The pool's input, as chunk_source_loader gives it: every source of the
 * initial scan, then the scan's end; nothing more, until told to stop. */
static void *feed_sources(feeder *fd)
{
    const stage_input *in = fd->in;
    for (size_t i = 0; i < in->n_sources; i++) {
        lc_source_item it = {
            .source = lc_chunk_source_ref(in->sources[i]), .flags = LC_ITEM_INITIAL, .seq = i};
        if (lc_queue_put(fd->q, &it, NULL) != 0) {
            lc_item_source.dispose(&it);
            return NULL;
        }
    }
    lc_source_item done = {.flags = LC_ITEM_SCAN_DONE, .seq = in->n_sources};
    lc_queue_put(fd->q, &done, NULL);
    atomic_store(&fd->fed, in->n_sources);
    while (!atomic_load(&fd->stop))
        lc_sleep_seconds(0.01);
    return NULL;
}

static void *feeder_main(void *arg)
{
    feeder *fd = arg;
    if (fd->kind == IN_CHUNKS)
        feed_chunks(fd);
    else if (fd->kind == IN_FRAMES)
        feed_frames(fd);
    else
        feed_sources(fd);
    lc_queue_close(fd->q);
    return NULL;
}

/* The drain: every output item taken and disposed of; frames counted (a
 * batch's rows; a chunk counts one). */
typedef struct drain {
    lc_queue *q;
    atomic_uint_fast64_t out;
} drain;

static void *drain_main(void *arg)
{
    drain *dr = arg;
    const lc_item_type *t = lc_queue_item_type(dr->q);
    unsigned char *items = lc_xmalloc(64 * t->size);
    size_t got;
    while (lc_queue_get_many(dr->q, items, 64, &got, NULL) == 0) {
        uint64_t n = 0;
        for (size_t i = 0; i < got; i++) {
            void *item = items + i * t->size;
            n += t == &lc_item_batch ? ((lc_batch_item *)item)->batch->rows : 1;
            t->dispose(item);
        }
        atomic_fetch_add(&dr->out, n);
    }
    free(items);
    return NULL;
}

/* CPU seconds of the stage's worker threads, and of the process. */
static double stage_cpu(const lc_stage *s)
{
    double sum = 0;
    for (unsigned i = 0; i < s->pool.n; i++) {
        clockid_t id;
        struct timespec ts;
        if (pthread_getcpuclockid(s->pool.threads[i].tid, &id) == 0 && clock_gettime(id, &ts) == 0)
            sum += (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    }
    return sum;
}

static double process_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

typedef struct sample {
    double wall, cpu, proc;
    uint64_t in, out;
} sample;

static sample take_sample(const lc_stage *s, feeder *fd, drain *dr)
{
    return (sample){lc_now_seconds(), stage_cpu(s), process_cpu(), atomic_load(&fd->fed),
                    atomic_load(&dr->out)};
}

typedef struct bench_args {
    const stage_kind *kind;
    const char *dir, *rate, *set;
    double seconds;
    char threads[64];
} bench_args;

/* The unpacker: its sampling rate is --rate's. */
static bool rated(const stage_kind *k)
{
    return strcmp(k->name, "unpacker") == 0;
}

/* The stage's YAML block: the default pipeline's settings but those --set
 * gives, then --set's, then the threads. */
static void stage_block(const bench_args *a, unsigned threads, char *out, size_t size)
{
    char defaults[256];
    snprintf(defaults, sizeof defaults, "%s%s", a->kind->block, rated(a->kind) ? a->rate : "");
    size_t n = (size_t)snprintf(out, size, "{");
    for (char *save = NULL, *kv = strtok_r(defaults, ",", &save); kv;
         kv = strtok_r(NULL, ",", &save)) {
        kv += strspn(kv, " ");
        size_t key = strcspn(kv, ":");
        char named[64];
        snprintf(named, sizeof named, "%.*s:", (int)key, kv);
        if (!a->set || !strstr(a->set, named))
            n += (size_t)snprintf(out + n, size - n, "%s, ", kv);
    }
    snprintf(out + n, size - n, "%s%sthreads: %u}", a->set ? a->set : "", a->set ? ", " : "",
             threads);
}

/* One run with `threads` workers; 0, or 1 when the check failed. */
static int run_one(const bench_args *a, const stage_input *in, unsigned threads)
{
    char block[512];
    stage_block(a, threads, block, sizeof block);
    const lc_item_type *type = a->kind->in == IN_CHUNKS   ? &lc_item_chunk
                               : a->kind->in == IN_FRAMES ? &lc_item_frame
                                                          : &lc_item_source;
    lc_queue *q = lc_queue_new("bench.in", type, a->kind->in_cap, LC_OVERFLOW_BLOCK);
    lc_stage_env env = {.seed = 1, .rank = 0, .world_size = 1, .rank_source = "bench"};
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_standalone_new(lc_stage_class_find(a->kind->type), a->kind->name, block, q,
                          a->kind->out_cap, &env, &s, &err) != 0 ||
        lc_standalone_start(s, &err) != 0) {
        fprintf(stderr, "lcmon_bench: %s %s: %s\n", a->kind->type, block, err.msg);
        lc_standalone_free(s);
        lc_queue_free(q);
        return 2;
    }
    double fixed = rated(a->kind) ? ceil(strtod(a->rate, NULL) * 4294967296.0) : 0;
    feeder fd = {.q = q,
                 .in = in,
                 .kind = a->kind->in,
                 /* Bounds from the rate alone: none when --set may change it. */
                 .rate_fixed = rated(a->kind) && !a->set ? (uint64_t)fixed : 0,
                 .uses = lc_xcalloc(in->n_chunks ? in->n_chunks : 1, sizeof(uint32_t))};
    drain dr = {.q = s->outputs[0]};
    pthread_t ft, dt;
    pthread_create(&dt, NULL, drain_main, &dr);
    pthread_create(&ft, NULL, feeder_main, &fd);
    /* The warm-up: every game used once, output flowing, a quarter second. */
    double t0 = lc_now_seconds();
    uint64_t warm_in = a->kind->in == IN_CHUNKS ? 2 * in->n_chunks : 0;
    /* The pool: each game loaded and stored (its first draw), then drawn again. */
    uint64_t warm_out = a->kind->in == IN_SOURCES ? 2 * in->games + 512 : 512;
    bool warm = true;
    while (lc_now_seconds() - t0 < 0.25 || atomic_load(&fd.fed) < warm_in ||
           atomic_load(&dr.out) < warm_out) {
        if (lc_now_seconds() - t0 > WARM_UP_MAX) {
            warm = false; /* a stage that makes nothing */
            break;
        }
        lc_sleep_seconds(0.01);
    }
    sample b = take_sample(s, &fd, &dr);
    lc_sleep_seconds(warm ? a->seconds : 0);
    sample e = take_sample(s, &fd, &dr);
    atomic_store(&fd.stop, true);
    pthread_join(ft, NULL);
    if (a->kind->in == IN_SOURCES)
        lc_standalone_stop(s); /* the pool draws without end: stopped, as a pipeline stops it */
    pthread_join(dt, NULL);
    uint64_t out = atomic_load(&dr.out);
    bool exact = fd.rate_fixed || a->kind->in == IN_FRAMES || !strcmp(a->kind->name, "validator");
    bool ok = warm && (!exact || (out >= fd.lo && out <= fd.hi));
    double dt_s = e.wall - b.wall, frames = (double)(e.out - b.out);
    const char *u = a->kind->unit;
    printf("stage %s threads=%u rate=%s seconds=%.2f %ss_per_s=%.0f cpu_ns_per_%s=%.1f "
           "cores=%.2f process_cpu_ns_per_%s=%.1f in_per_s=%.0f fed=%llu out=%llu check=%s\n",
           a->kind->name, threads, rated(a->kind) ? a->rate : "-", dt_s, u, frames / dt_s, u,
           (e.cpu - b.cpu) * 1e9 / frames, (e.cpu - b.cpu) / dt_s, u,
           (e.proc - b.proc) * 1e9 / frames, (double)(e.in - b.in) / dt_s,
           (unsigned long long)atomic_load(&fd.fed), (unsigned long long)out,
           !exact ? "skipped"
           : ok   ? "ok"
                  : "FAILED");
    if (!ok)
        fprintf(stderr, "lcmon_bench: %s: %llu out, %llu to %llu expected%s\n", a->kind->name,
                (unsigned long long)out, (unsigned long long)fd.lo, (unsigned long long)fd.hi,
                warm ? "" : " (no output in the warm-up's time)");
    fflush(stdout);
    free(fd.uses);
    lc_standalone_free(s);
    lc_queue_free(q);
    return ok ? 0 : 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: lcmon_bench stage NAME DIR [--threads N[,N...]] [--seconds S] "
                    "[--rate R] [--set 'KEY: VALUE, ...']\n"
                    "  NAME: unpacker, validator, sampler, tensors, tensors_packed\n");
    return 2;
}

static int parse_args(int argc, char **argv, bench_args *a)
{
    *a = (bench_args){.rate = "1.0", .seconds = 2, .threads = "1,2,4"};
    if (argc < 2)
        return usage();
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (strcmp(argv[0], kinds[k].name) == 0)
            a->kind = &kinds[k];
    a->dir = argv[1];
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--threads") == 0)
            snprintf(a->threads, sizeof a->threads, "%s", argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0)
            a->seconds = strtod(argv[i + 1], NULL);
        else if (strcmp(argv[i], "--rate") == 0)
            a->rate = argv[i + 1];
        else if (strcmp(argv[i], "--set") == 0)
            a->set = argv[i + 1];
        else
            return usage();
    }
    if (!a->kind || argc % 2 != 0 || !(a->seconds > 0))
        return usage();
    return 0;
}

int stage_bench_main(int argc, char **argv)
{
    bench_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0)
        return rc;
    stage_input in;
    if (make_input(a.dir, a.kind->in, &in) != 0)
        return 1;
    printf("stage %s input: %llu games, %llu positions, compressed %.1f:1, %zu %s made\n",
           a.kind->name, (unsigned long long)in.games, (unsigned long long)in.positions,
           in.file_bytes ? (double)in.raw_bytes / (double)in.file_bytes : 0.0,
           a.kind->in == IN_CHUNKS   ? in.n_chunks
           : a.kind->in == IN_FRAMES ? in.n_frames
                                     : in.n_sources,
           a.kind->in == IN_CHUNKS   ? "packed games"
           : a.kind->in == IN_FRAMES ? "frames"
                                     : "sources");
    int failed = 0;
    for (char *t = strtok(a.threads, ","); t; t = strtok(NULL, ",")) {
        unsigned n = (unsigned)strtoul(t, NULL, 10);
        rc = n ? run_one(&a, &in, n) : usage();
        if (rc == 2) {
            failed = 2;
            break;
        }
        failed |= rc;
    }
    free_input(&in);
    return failed;
}
