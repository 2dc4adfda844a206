/*
 * fuzz_chunk: a gzip chunk from a self-play machine, all the way to tensors.
 *
 * The first input byte chooses how the rest is read: even, it is the chunk
 * file as it would lie on disk (the inflate paths see hostile gzip); odd, it
 * is the inflated payload, which the target gzips first, so that the fuzzer
 * spends its effort on records rather than on getting deflate right. Then,
 * as the loader does: decode the chunk (every record version), check each
 * record, compact it into a frame, pack the good ones into the store's
 * compact form and unpack them again, and build the tensors of both layouts.
 *
 * Invariants: a failed decode leaves nothing behind; a decoded chunk is a
 * whole number of records of a known version; a frame's sparse policy is
 * ascending, in range and complete; every tensor value is finite (NaN only
 * where the format keeps NaN for "unknown"); a frame unpacked from the
 * compact store gives the very same tensors as the record it came from.
 */
#include "fuzz.h"

#include "format/lc0/chunk.h"
#include "format/lc0/frame.h"
#include "format/gzip.h"
#include "format/lc0/packed_chunk.h"
#include "format/lc0/record.h"
#include "testutil.h"

#include <math.h>
#include <string.h>

#define MAX_RECORDS 32 /* enough to reach every path; keeps an input fast */

static lc_pack_ctx *pack;
static lc_unpack_ctx *unpack;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_setup();
    pack = lc_pack_ctx_new(1, 4);
    unpack = lc_unpack_ctx_new();
    return 0;
}

typedef struct tensors {
    float planes[LC_INPUT_PLANES * 64];
    float policy[1858];
    float values[18];
    float winner[3], best_q[3], plies;
} tensors;

static void make_tensors(const lc_frame *f, tensors *t)
{
    lc_frame_input_planes(f, t->planes);
    lc_frame_policy(f, t->policy);
    lc_frame_values(f, t->values);
    lc_frame_legacy_targets(f, t->winner, t->best_q, &t->plies);
}

static void check_frame(const lc_frame *f)
{
    FUZZ_CHECK(f->n_policy <= 1858);
    FUZZ_CHECK((f->n_policy > LC_FRAME_INLINE_POLICY) == (f->overflow_idx != NULL));
    int last = -1;
    for (unsigned i = 0; i < f->n_policy; i++) {
        int idx = i < LC_FRAME_INLINE_POLICY ? f->policy_idx[i]
                                             : f->overflow_idx[i - LC_FRAME_INLINE_POLICY];
        FUZZ_CHECK(idx > last && idx < 1858);
        last = idx;
    }
}

static void check_tensors(const lc_frame *f, const tensors *t)
{
    for (size_t i = 0; i < LC_INPUT_PLANES * 64; i++)
        FUZZ_CHECK(isfinite(t->planes[i]));
    /* The policy tensor holds exactly the stored entries, -1 elsewhere. */
    unsigned stored = 0;
    for (size_t i = 0; i < 1858; i++) {
        uint32_t bits;
        memcpy(&bits, &t->policy[i], 4);
        stored += bits != 0xBF800000u;
    }
    FUZZ_CHECK(stored == f->n_policy);
    FUZZ_CHECK(!isnan(t->plies));
}

static void check_same(const tensors *a, const tensors *b)
{
    /* Bitwise: NaN payloads included, which memcmp compares as bits. */
    FUZZ_CHECK(memcmp(a, b, sizeof *a) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool raw = data[0] & 1;
    lc_inflate_backend backend =
        (data[0] & 2) && lc_inflate_backend_available(LC_INFLATE_LIBDEFLATE) ? LC_INFLATE_LIBDEFLATE
                                                                             : LC_INFLATE_ZLIB;
    const uint8_t *gz = data + 1;
    size_t gz_len = size - 1;
    uint8_t *made = NULL;
    if (raw)
        gz = made = tu_gzip(data + 1, size - 1, 1, &gz_len);

    lc_chunk_data c;
    memset(&c, 0xAB, sizeof c);
    lc_error err = {0};
    int rc = lc_chunk_decode(gz, gz_len, backend, FUZZ_MAX_OUTPUT, &c, &err);
    free(made);
    if (rc < 0) {
        FUZZ_CHECK(c.data == NULL && c.n_records == 0 && c.size == 0);
        FUZZ_CHECK(err.msg[0] != '\0');
        lc_chunk_data_fini(&c);
        return 0;
    }
    FUZZ_CHECK(c.record_size == lc_record_size_for_version(c.version) && c.record_size > 0);
    FUZZ_CHECK(c.size == c.n_records * c.record_size);
    FUZZ_CHECK(c.n_records > 0 || c.size == 0);

    size_t n = c.n_records < MAX_RECORDS ? c.n_records : MAX_RECORDS;
    static tensors from_record[MAX_RECORDS], from_store;
    bool good[MAX_RECORDS];
    size_t n_good = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *rec = c.data + i * c.record_size;
        /* Unchecked compaction must be safe on any bytes too. */
        lc_frame any;
        lc_error ferr = {0};
        if (lc_frame_from_record(rec, c.version, &any, &ferr) == 0) {
            check_frame(&any);
            lc_frame_fini(&any);
        }
        const char *reason = NULL;
        good[i] = lc_record_check(rec, c.version, &reason) == 0;
        FUZZ_CHECK(good[i] ||
                   (reason && lc_record_check_reason_index(reason) < LC_RECORD_CHECK_REASONS));
        if (!good[i])
            continue;
        lc_frame f;
        reason = NULL;
        FUZZ_CHECK(lc_frame_from_checked_record(rec, c.version, &f, &reason) == 0);
        check_frame(&f);
        make_tensors(&f, &from_record[i]);
        check_tensors(&f, &from_record[i]);
        /* The V7 form the tests write keeps every field the tensors use. */
        static uint8_t v7[8396];
        FUZZ_CHECK(lc_record_size_for_version(7) == sizeof v7);
        lc_frame_to_record_v7(&f, v7);
        lc_frame back;
        FUZZ_CHECK(lc_frame_from_record(v7, 7, &back, &ferr) == 0);
        check_frame(&back);
        FUZZ_CHECK(back.n_policy == f.n_policy);
        lc_frame_fini(&back);
        lc_frame_fini(&f);
        n_good++;
    }

    /* The store packs a chunk whose records all pass, and only such. */
    if (n > 0) {
        lc_packed_chunk *pc = NULL;
        const char *reason = NULL;
        uint32_t bad_at = UINT32_MAX;
        rc = lc_packed_chunk_build(pack, c.data, c.record_size, (uint32_t)n, c.version, &pc,
                                   &reason, &bad_at);
        FUZZ_CHECK((rc == 0) == (n_good == n));
        if (rc < 0) {
            FUZZ_CHECK(pc == NULL && reason && bad_at < n && !good[bad_at]);
            for (uint32_t i = 0; i < bad_at; i++)
                FUZZ_CHECK(good[i]);
        } else {
            FUZZ_CHECK(lc_packed_chunk_positions(pc) == n);
            FUZZ_CHECK(lc_packed_chunk_version(pc) == c.version);
            for (uint32_t i = 0; i < n; i++) {
                /* Walk the blocks out of order too: last, then first. */
                uint32_t k = (i * 7 + (uint32_t)n - 1) % (uint32_t)n;
                lc_frame f;
                lc_error perr = {0};
                FUZZ_CHECK(lc_packed_chunk_frame(pc, unpack, k, &f, &perr) == 0);
                check_frame(&f);
                make_tensors(&f, &from_store);
                check_same(&from_record[k], &from_store);
                lc_frame_fini(&f);
            }
            lc_packed_chunk_unref(pc);
        }
    }
    lc_chunk_data_fini(&c);
    return 0;
}
