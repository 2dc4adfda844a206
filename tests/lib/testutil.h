/*
 * testutil: helpers shared by the tests: a temporary directory
 * removed at exit, whole-file I/O, gzip compression with zlib, running a
 * program (GNU tar) without a shell, the locations of the sample data, and
 * waiting for threads with a patience that sanitizers cannot exhaust.
 * Single-threaded use only (each test's main thread).
 */
#ifndef LC_TEST_TESTUTIL_H
#define LC_TEST_TESTUTIL_H

#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/load.h"
#include "core/thread.h"
#include "core/log.h"
#include "format/lc0/chunk_source.h"
#include "format/parquet/parquet.h"
#include "records.h"

extern char **environ;

static char tu_tmpdir_[4096];

static inline int tu_rm_entry_(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline void tu_cleanup_(void)
{
    if (tu_tmpdir_[0])
        nftw(tu_tmpdir_, tu_rm_entry_, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory under $TMPDIR (or /tmp), removed with its contents at exit. */
static inline const char *tu_tmpdir(void)
{
    if (tu_tmpdir_[0])
        return tu_tmpdir_;
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    snprintf(tu_tmpdir_, sizeof tu_tmpdir_, "%s/lcmon-fmt-XXXXXX", base);
    if (!mkdtemp(tu_tmpdir_)) {
        perror("mkdtemp");
        exit(2);
    }
    atexit(tu_cleanup_);
    return tu_tmpdir_;
}

/* tu_path("x/y") -> "<tmpdir>/x/y" in a static rotating buffer. */
static inline const char *tu_path(const char *rel)
{
    static char bufs[8][4096];
    static int next;
    char *b = bufs[next++ % 8];
    if (snprintf(b, sizeof bufs[0], "%s/%s", tu_tmpdir(), rel) >= (int)sizeof bufs[0]) {
        fprintf(stderr, "path too long: %s/%s\n", tu_tmpdir(), rel);
        exit(2);
    }
    return b;
}

static inline void tu_mkdirs(const char *path)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        exit(2);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
    mkdir(tmp, 0755);
}

static inline void tu_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(2);
    }
}

/* Whole file into a malloc'd buffer; NULL when it cannot be read. */
static inline uint8_t *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    *len = n;
    return buf;
}

/* gzip (one member) of data with zlib at level; malloc'd. */
static inline uint8_t *tu_gzip(const void *data, size_t len, int level, size_t *out_len)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, level, Z_DEFLATED, MAX_WBITS + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        exit(2);
    size_t cap = deflateBound(&zs, (uLong)len) + 64;
    uint8_t *out = malloc(cap);
    zs.next_in = (Bytef *)data;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
        exit(2);
    *out_len = zs.total_out;
    deflateEnd(&zs);
    return out;
}

/* Deterministic, somewhat compressible bytes. */
static inline void tu_fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        if ((x >> 28) == 0)
            p[i] = (uint8_t)(x >> 8); /* about one byte in 16 is noise */
        else
            p[i] = (uint8_t) "lc0 chess training data "[(x >> 16) % 24];
    }
}

/* Run argv[0] (searched in PATH) with stdout to out_path (or inherited when
 * NULL); returns the exit status, or -1. */
static inline int tu_run(char *const argv[], const char *out_path)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out_path)
        posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(rc));
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Lines of the log ring after sequence number `after` (0: all it holds)
 * at `level` or above that contain needle. */
static inline size_t tu_log_count(uint64_t after, lc_log_level level, const char *needle)
{
    static lc_log_entry entries[LC_LOG_RING_DEFAULT];
    size_t n = lc_log_read(after, entries, LC_LOG_RING_DEFAULT, NULL), k = 0;
    for (size_t i = 0; i < n; i++)
        k += entries[i].level >= level && strstr(entries[i].text, needle) != NULL;
    return k;
}

/* Does any line of the log ring contain needle? */
static inline bool tu_log_has(const char *needle)
{
    return tu_log_count(0, LC_LOG_DEBUG, needle) > 0;
}

/* The sequence number of the newest line in the log ring (0: none). */
static inline uint64_t tu_log_mark(void)
{
    static lc_log_entry entries[LC_LOG_RING_DEFAULT];
    size_t n = lc_log_read(0, entries, LC_LOG_RING_DEFAULT, NULL);
    return n ? entries[n - 1].seq : 0;
}

/* How much slower than a plain build this one runs (LCMON_TEST_SLOW, set
 * by tests/meson.build for sanitized builds): deadlines scale by it. */
static inline double tu_slow(void)
{
    const char *v = getenv("LCMON_TEST_SLOW");
    double x = v && *v ? atof(v) : 1.0;
    return x >= 1.0 ? x : 1.0;
}

/* Directory of the small sample data (tests/data). */
static inline const char *tu_test_data(void)
{
    const char *d = getenv("LC_TEST_DATA");
    return d && *d ? d : "tests/data";
}

/* The first .gz (by name) in dir, as a malloc'd path, or NULL. */
static inline char *tu_first_gz(const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0)
        return NULL;
    char *found = NULL;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]->d_name);
        if (!found && len > 3 && strcmp(names[i]->d_name + len - 3, ".gz") == 0)
            found = lc_xasprintf("%s/%s", dir, names[i]->d_name);
        free(names[i]);
    }
    free(names);
    return found;
}

static inline bool tu_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static inline bool tu_contains(const char *haystack, const char *needle)
{
    return haystack && needle && strstr(haystack, needle) != NULL;
}

/* Open a chunk source that should open; exits (status 2) when it does not. */
static inline lc_chunk_source *tu_chunk_source(const char *path)
{
    lc_chunk_source *src = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_chunk_source_open(path, &src, &err) != 0) {
        fprintf(stderr, "open %s: %s\n", path, err.msg);
        exit(2);
    }
    return src;
}

/* The first game of the test data's lc0-v0.31.2-fmt1 with record 5's
 * probabilities halved (they sum to 0.5: upstream's Validate refuses the
 * game, and the rescorer drops it), written gzip'd to path; its records'
 * count. Exits (status 2) when the game does not load. */
static inline size_t tu_invalid_game(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/lc0-v0.31.2-fmt1", tu_test_data());
    char *first = tu_first_gz(dir);
    lc_chunk_source *src = tu_chunk_source(first);
    lc_chunk_data d;
    lc_error err;
    lc_error_clear(&err);
    if (lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, &d, &err) != 0) {
        fprintf(stderr, "load %s: %s\n", first, err.msg);
        exit(2);
    }
    rec_halve_policy(d.data + 5 * d.record_size);
    size_t gz_len, n = d.n_records;
    uint8_t *gz = tu_gzip(d.data, d.n_records * d.record_size, 6, &gz_len);
    tu_write_file(path, gz, gz_len);
    free(gz);
    lc_chunk_data_fini(&d);
    lc_chunk_source_unref(src);
    free(first);
    return n;
}

/* Open a Parquet file that should open: NULL, after printing why, when it
 * does not (the caller CHECKs the result). */
static inline lc_parquet_file *tu_parquet_open(const char *path)
{
    lc_parquet_file *f = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_parquet_open(path, &f, &err) < 0) {
        fprintf(stderr, "  %s\n", err.msg);
        return NULL;
    }
    return f;
}

/* Copy the Parquet file from to to with every byte between the leading
 * magic and the footer overwritten (0xff: each first page header is
 * garbage): it opens, and none of its column chunks reads. Its row groups,
 * or 0 when from is not such a file. */
static inline size_t tu_parquet_garble_pages(const char *from, const char *to)
{
    size_t len = 0;
    uint8_t *b = tu_read_file(from, &len);
    if (!b || len < 12) {
        free(b);
        return 0;
    }
    uint32_t footer = (uint32_t)b[len - 8] | (uint32_t)b[len - 7] << 8 |
                      (uint32_t)b[len - 6] << 16 | (uint32_t)b[len - 5] << 24;
    if (footer > len - 12) {
        free(b);
        return 0;
    }
    memset(b + 4, 0xff, len - 12 - footer);
    tu_write_file(to, b, len);
    free(b);
    lc_parquet_file *f = tu_parquet_open(to);
    size_t n = f ? lc_parquet_num_row_groups(f) : 0;
    lc_parquet_close(f);
    return n;
}

/* ---- waiting for threads ----
 *
 * The tests never assert that something happens within a short time: they
 * wait for it with a generous bound (TU_PATIENCE_S), which only a hung or
 * broken implementation reaches, so that they pass on a loaded two-core
 * machine and under sanitizers that slow threads down 5-20x. To know that a
 * worker has reached a blocking wait, a test watches the worker's load
 * meter: every blocking call in the core marks the meter idle just before
 * it waits and busy again once it returns.
 */

/* Sanitized builds run slower: tests shrink their bulk loops there. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define TU_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TU_SANITIZED 1
#endif
#endif
#ifndef TU_SANITIZED
#define TU_SANITIZED 0
#endif

/* How long to wait for something that should happen promptly. */
#define TU_PATIENCE_S 10.0

static inline void tu_sleep_ms(double ms)
{
    lc_sleep_seconds(ms / 1000.0);
}

/* Seconds elapsed since the monotonic time t0. */
static inline double tu_since(uint64_t t0)
{
    return (double)(lc_now_ns() - t0) * 1e-9;
}

/* Poll until *v >= want; false when TU_PATIENCE_S passed first. */
static inline bool tu_wait_ge(atomic_int *v, int want)
{
    uint64_t t0 = lc_now_ns();
    while (atomic_load(v) < want) {
        if (tu_since(t0) > TU_PATIENCE_S)
            return false;
        tu_sleep_ms(1);
    }
    return true;
}

/* Whether the meter's owner is in an idle (waiting) interval. */
static inline bool tu_meter_idle(lc_load_meter *m)
{
    lc_mutex_lock(&m->mu);
    bool idle = m->running && !m->busy;
    lc_mutex_unlock(&m->mu);
    return idle;
}

/* Poll until the meter's owner has started a wait; false on patience. */
static inline bool tu_wait_meter_idle(lc_load_meter *m)
{
    uint64_t t0 = lc_now_ns();
    while (!tu_meter_idle(m)) {
        if (tu_since(t0) > TU_PATIENCE_S)
            return false;
        tu_sleep_ms(1);
    }
    return true;
}

#endif
