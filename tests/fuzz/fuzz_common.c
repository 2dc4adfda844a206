/* fuzz_common: see fuzz.h. */
#include "fuzz.h"

#include "core/log.h"
#include "format/gzip.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static char scratch[256];

static void remove_scratch(void)
{
    char path[512];
    static const char *const names[] = {"chunk.gz", "archive.tar", "table.parquet", "cfg.yaml"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", scratch, names[i]);
        unlink(path);
    }
    rmdir(scratch);
}

const char *fuzz_setup(void)
{
    if (scratch[0])
        return scratch;
    lc_log_set_stderr(false);
    lc_log_set_level(LC_LOG_ERROR);
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/lcmon-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch)) {
        fprintf(stderr, "fuzz: cannot make a scratch directory %s: %s\n", scratch, strerror(errno));
        abort();
    }
    atexit(remove_scratch);
    return scratch;
}

const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", fuzz_setup(), name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
        abort();
    }
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fprintf(stderr, "fuzz: short write to %s: %s\n", path, strerror(errno));
            abort();
        }
        off += (size_t)w;
    }
    close(fd);
    return path;
}

uint8_t fuzz_u8(fuzz_input *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

uint32_t fuzz_u32(fuzz_input *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)fuzz_u8(in) << (8 * i);
    return v;
}

/* The set-up of a target that needs nothing more (libFuzzer and the
 * replayer call it once; a target may define its own). */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_setup();
    return 0;
}
