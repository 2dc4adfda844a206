/*
 * lcmon_bench: the machine's ceilings for the loader's work, measured with
 * the loader's own code, for bench/run to compare against.
 *
 *   lcmon_bench inflate DIR THREADS PASSES
 *       reads every chunk of every .gz/.tar under DIR, PASSES times, with
 *       THREADS threads, through lc_chunk_source_load (the same inflate path
 *       as the pool's loading threads), and prints frames/s and MB/s.
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
#include "core/text.h"
#include "format/chunk.h"
#include "format/chunk_source.h"
#include "format/gzip.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

static void walk(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *path = lc_xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            walk(path);
        else if (S_ISREG(st.st_mode))
            add_file(path);
        free(path);
    }
    closedir(d);
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

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 4 && strcmp(argv[1], "copy") == 0)
        return copy_main(argv[2], argv[3]);
    if (argc != 5 || strcmp(argv[1], "inflate") != 0) {
        fprintf(stderr, "usage: lcmon_bench inflate DIR THREADS PASSES\n"
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
