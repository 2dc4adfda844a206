/*
 * fuzz.h: what every fuzz target in tests/fuzz/ shares.
 *
 * A target is one file defining LLVMFuzzerTestOneInput (and, when it needs
 * one-time set-up, LLVMFuzzerInitialize). The same file builds two ways:
 *   - with clang and -fsanitize=fuzzer (meson -Dfuzz=true): a libFuzzer
 *     binary for campaigns (scripts/fuzz);
 *   - with any compiler, linked with replay.c: a replayer that runs every
 *     committed input (seeds and regressions) through the target, which the
 *     test command runs in every build, sanitizers included.
 *
 * A target checks invariants, not only "no crash": FUZZ_CHECK aborts with
 * the failed condition, which libFuzzer reports as a crash and the replayer
 * as a failed test.
 */
#ifndef LC_TESTS_FUZZ_H
#define LC_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The bound the targets pass for inflated chunks (lc_gunzip's max_output,
 * lc_chunk_source_limit_output): a gzip bomb must cost an error, not the
 * fuzzer's memory. */
#define FUZZ_MAX_OUTPUT ((size_t)8 << 20)

/* Quiet logging (a campaign logs millions of rejections) and a
 * process-wide scratch directory; idempotent. Returns
 * the directory. fuzz_common.c's LLVMFuzzerInitialize calls it, for the
 * targets that need nothing else. */
const char *fuzz_setup(void);

/* Write data to a scratch file named `name` (its suffix matters to the
 * loaders) and return its path (static storage, valid until the next call). */
const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size);

/* Deterministic reading of the input as a sequence of choices: each call
 * takes bytes from the front; past the end it yields zeros. */
typedef struct fuzz_input {
    const uint8_t *p;
    size_t n;
} fuzz_input;
uint8_t fuzz_u8(fuzz_input *in);
uint32_t fuzz_u32(fuzz_input *in);

#endif
