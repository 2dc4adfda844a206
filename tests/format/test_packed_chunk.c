/*
 * test_packed_chunk: the chunk store's compact form (format/lc0/packed_chunk.h).
 *
 * Exactness: every position of every real game in tests/data (input formats
 * 1, 2, 3 and 5, in .gz files and a tar), rewritten as records of every
 * version 3..7, and as input formats 4, 132 and 133, packed with blocks of 1,
 * 3, 8 and 64 positions and read back in a shuffled order: each frame equals
 * what lc_frame_from_record makes of the record, field by field and (blocks
 * of 8) every tensor of both layouts bit for bit. Hand-made records cover
 * the edges: NaN payloads (quiet, signalling, negative), infinities, -0,
 * policies of 0, 1, 80, 81 and 1858 entries, index gaps of 255 and more.
 * Refusal: a chunk with a record that breaks the validator's rules is
 * refused with lc_record_check's reason and the first bad record. The
 * decoder's memory: one decode per block touched, in any order, chunks
 * interleaved. Damage: a block changed byte by byte decodes or is
 * refused, never read or written past. Size: bytes a position on the real
 * games (printed, and at most 150 with blocks of 8, the target).
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "frames.h"
#include "testutil.h"

#include "core/rng.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/packed_chunk.h"

static const unsigned blocks[] = {1, 3, 8, 64};
#define N_BLOCKS (sizeof blocks / sizeof blocks[0])
/* Each block size with the default codec, and 3 and 8 with the other
 * codec too where this build has both (packed_chunk.h). */
static const int codecs[] = {LC_PACK_ZSTD, LC_PACK_LZ4};
#define N_CODECS (sizeof codecs / sizeof codecs[0])

static bool codec_tried(int codec, unsigned block)
{
    return lc_pack_codec_built(codec) &&
           (codec == LC_PACK_CODEC_DEFAULT || block == 3 || block == 8);
}

/* A random permutation of 0..n-1. */
static uint32_t *shuffled(uint32_t n, uint64_t seed)
{
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    lc_rng rng;
    lc_rng_seed(&rng, seed, 17);
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = (uint32_t)lc_rng_below(&rng, i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    return order;
}

/*
 * Pack n records with each block size and read every position back in a
 * shuffled order; compare with lc_frame_from_record. Returns the packed
 * bytes with blocks of 8 (0 when the chunk was refused).
 */
static size_t check_exact(const uint8_t *recs, size_t record_size, uint32_t n, uint32_t version,
                          bool tensors)
{
    size_t bytes8 = 0;
    for (size_t bc = 0; bc < N_BLOCKS * N_CODECS; bc++) {
        size_t b = bc / N_CODECS;
        int codec = codecs[bc % N_CODECS];
        if (!codec_tried(codec, blocks[b]))
            continue;
        lc_pack_ctx *pc = lc_pack_ctx_new_codec(codec, LC_PACK_LEVEL_DEFAULT, blocks[b]);
        lc_packed_chunk *pk = NULL;
        const char *reason = "unset";
        uint32_t bad_at = 0;
        int rc = lc_packed_chunk_build(pc, recs, record_size, n, version, &pk, &reason, &bad_at);
        CHECK_OK(rc);
        CHECK(reason == NULL);
        lc_pack_ctx_free(pc);
        if (rc != 0) {
            fprintf(stderr, "  refused: %s at record %u (version %u)\n", reason, bad_at, version);
            return 0;
        }
        CHECK_EQ_U64(lc_packed_chunk_positions(pk), n);
        CHECK_EQ_U64(lc_packed_chunk_version(pk), version);
        if (blocks[b] == 8 && codec == LC_PACK_CODEC_DEFAULT)
            bytes8 = lc_packed_chunk_bytes(pk);
        lc_unpack_ctx *uc = lc_unpack_ctx_new();
        uint32_t *order = shuffled(n, n * 31u + blocks[b]);
        size_t wrong = 0;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t i = order[k];
            lc_frame want, got;
            CHECK_OK(lc_frame_from_record(recs + (size_t)i * record_size, version, &want, NULL));
            lc_error err;
            lc_error_clear(&err);
            rc = lc_packed_chunk_frame(pk, uc, i, &got, &err);
            CHECK_OK(rc);
            if (rc != 0) {
                fprintf(stderr, "  position %u: %s\n", i, err.msg);
                lc_frame_fini(&want);
                continue;
            }
            int failed_before = atomic_load(&check_failed_);
            tf_check_same_fields(&want, &got, true);
            if (tensors && blocks[b] == 8)
                tf_check_same_tensors(&want, &got);
            if (atomic_load(&check_failed_) != failed_before && wrong++ < 3)
                fprintf(stderr, "  position %u of %u differs (version %u, block %u, codec %d)\n", i,
                        n, version, blocks[b], codec);
            lc_frame_fini(&want);
            lc_frame_fini(&got);
        }
        /* Each block was decoded once, whatever the order. */
        CHECK_EQ_U64(lc_unpack_ctx_blocks_decoded(uc), (n + blocks[b] - 1) / blocks[b]);
        free(order);
        lc_unpack_ctx_free(uc);
        lc_packed_chunk_unref(pk);
    }
    return bytes8;
}

/* Frames of a loaded chunk. */
static lc_frame *frames_of(const lc_chunk_data *c)
{
    lc_frame *f = calloc(c->n_records, sizeof *f);
    for (size_t i = 0; i < c->n_records; i++)
        CHECK_OK(lc_frame_from_record(c->data + i * c->record_size, c->version, &f[i], NULL));
    return f;
}

static void free_frames(lc_frame *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        lc_frame_fini(&f[i]);
    free(f);
}

typedef struct totals {
    size_t positions, packed, gz, chunks;
} totals;

/* check_exact of one form of a game: the tensors too for V7 and V4. */
static void exact_form(const uint8_t *recs, size_t size, uint32_t n, uint32_t version, void *ctx)
{
    (void)ctx;
    check_exact(recs, size, n, version, version == 7 || version == 4);
}

/* Every chunk of one source: as stored (V6), then as every other version,
 * then as the input formats that no sample has. */
static void check_source(const char *path, totals *t)
{
    lc_chunk_source *src = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_chunk_source_open(path, &src, &err) != 0) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        CHECK(false);
        return;
    }
    for (size_t m = 0; m < lc_chunk_source_count(src); m++) {
        uint8_t *gz = NULL;
        size_t gz_len = 0;
        CHECK_OK(lc_chunk_source_read(src, m, &gz, &gz_len, NULL));
        free(gz);
        lc_chunk_data c;
        CHECK_OK(lc_chunk_source_load(src, m, LC_INFLATE_AUTO, &c, &err));
        if (!c.data)
            continue;
        uint32_t n = (uint32_t)c.n_records;
        size_t bytes = check_exact(c.data, c.record_size, n, c.version, true);
        t->positions += n;
        t->packed += bytes;
        t->gz += gz_len;
        t->chunks++;
        lc_frame *frames = frames_of(&c);
        tf_each_form(frames, n, c.version, exact_form, NULL);
        free_frames(frames, n);
        lc_chunk_data_fini(&c);
    }
    lc_chunk_source_unref(src);
}

static void walk(const char *dir, totals *t)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0)
        return;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (name[0] != '.') {
            char *path = lc_xasprintf("%s/%s", dir, name);
            size_t len = strlen(name);
            if (tu_is_dir(path))
                walk(path, t);
            else if ((len > 3 && strcmp(name + len - 3, ".gz") == 0) ||
                     (len > 4 && strcmp(name + len - 4, ".tar") == 0))
                check_source(path, t);
            free(path);
        }
        free(names[i]);
    }
    free(names);
}

static void test_real_games(void)
{
    totals t = {0};
    walk(tu_test_data(), &t);
    CHECK(t.chunks >= 30);
    CHECK(t.positions > 2000);
    double per_pos = t.positions ? (double)t.packed / (double)t.positions : 0;
    double gz_pos = t.positions ? (double)t.gz / (double)t.positions : 0;
    printf("%zu games, %zu positions: packed %.1f bytes a position with blocks of 8 "
           "(gzip %.1f)\n",
           t.chunks, t.positions, per_pos, gz_pos);
    CHECK(per_pos > 0 && per_pos <= 150);
    CHECK(per_pos < gz_pos);
}

/* ---- hand-made edges ---- */

static float from_bits(uint32_t b)
{
    float v;
    memcpy(&v, &b, 4);
    return v;
}

/* A valid V7 frame: pseudo-random planes and scalars, k policy entries
 * spread over the 1858 indices (k <= 1858), played and best among them. */
static void edge_frame(lc_frame *f, unsigned k, uint32_t seed)
{
    memset(f, 0, sizeof *f);
    lc_rng rng;
    lc_rng_seed(&rng, seed, 3);
    f->version = 7;
    f->input_format = (seed % 2) ? 1 : 133;
    for (unsigned p = 0; p < LC_HISTORY_PLANES; p++)
        f->planes[p] = (p % 5 == 0) ? 0 : lc_rng_next(&rng);
    f->castling_us_ooo = 1;
    f->castling_them_oo = 0x81;
    f->side_to_move_or_enpassant = 0x10;
    f->rule50_count = 99;
    f->invariance_info = 0x85;
    f->result = -1;
    /* NaN payloads, signalling NaNs, infinities, -0 and subnormals. */
    const uint32_t odd[] = {0x7fc00001u, 0x7f800001u, 0xffc00000u, 0x7f800000u,
                            0xff800000u, 0x80000000u, 0x00000001u, 0x3f800000u};
    float *fields[] = {&f->root_q,   &f->best_q,     &f->root_d,   &f->best_d,   &f->root_m,
                       &f->best_m,   &f->plies_left, &f->result_q, &f->result_d, &f->played_q,
                       &f->played_d, &f->played_m,   &f->orig_q,   &f->orig_d,   &f->orig_m,
                       &f->q_st,     &f->d_st};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        *fields[i] = from_bits(odd[(i + seed) % 8]);
    f->n_policy = (uint16_t)k;
    if (k > LC_FRAME_INLINE_POLICY) {
        f->overflow_idx = malloc((k - LC_FRAME_INLINE_POLICY) * sizeof *f->overflow_idx);
        f->overflow_val = malloc((k - LC_FRAME_INLINE_POLICY) * sizeof *f->overflow_val);
    }
    for (unsigned e = 0; e < k; e++) {
        /* Spread evenly: gaps of 255 and more when k is small. */
        uint16_t idx = (uint16_t)(k == 1 ? 1857 : (uint32_t)e * (LC_POLICY_SIZE - 1) / (k - 1));
        float val = e % 3 == 0 ? -0.0f : e % 3 == 1 ? 0.0f : from_bits(0x3e800000u + e);
        tf_policy_put(f, e, idx, val);
    }
    uint16_t first = k ? f->policy_idx[0] : 0;
    uint16_t last = k > LC_FRAME_INLINE_POLICY ? f->overflow_idx[k - LC_FRAME_INLINE_POLICY - 1]
                    : k                        ? f->policy_idx[k - 1]
                                               : 0;
    f->played_idx = first;
    f->best_idx = last;
}

static void test_edges(void)
{
    static const unsigned sizes[] = {1, 2, 7, 80, 81, 200, LC_POLICY_SIZE};
    enum { N = 12 };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        lc_frame frames[N];
        for (uint32_t i = 0; i < N; i++)
            edge_frame(&frames[i], sizes[(s + (i == 5)) % 7], (uint32_t)(s * 100 + i));
        for (uint32_t v = 3; v <= 7; v++) {
            size_t size;
            uint8_t *recs = tf_records(frames, N, v, &size);
            check_exact(recs, size, N, v, true);
            free(recs);
        }
        for (uint32_t i = 0; i < N; i++)
            lc_frame_fini(&frames[i]);
    }
    /* Before V6 nothing requires a legal move: a policy of no entries. */
    lc_frame f;
    edge_frame(&f, 0, 5);
    f.played_idx = f.best_idx = 0;
    size_t size;
    uint8_t *recs = tf_records(&f, 1, 5, &size);
    check_exact(recs, size, 1, 5, true);
    free(recs);
    lc_frame_fini(&f);
}

/* ---- refusal ---- */

static void test_refusal(void)
{
    enum { N = 20 };
    lc_frame frames[N];
    for (uint32_t i = 0; i < N; i++)
        edge_frame(&frames[i], 30, i);
    typedef struct {
        const char *what;
        size_t off;
        uint32_t bits; /* written at off */
        unsigned width;
    } corruption;
    const corruption cases[] = {
        {"unknown_version", 0, 5, 4},
        {"unknown_input_format", 4, 6, 4},
        {"bad_probability", 8 + 4 * 999, 0x3fc00000u /* 1.5 */, 4},
        {"bad_probability", 8 + 4 * 1000, 0x7fc00000u /* NaN */, 4},
        {"played_idx_out_of_range", 8344, LC_POLICY_SIZE, 2},
        {"best_idx_out_of_range", 8346, 0xFFFF, 2},
        {"played_idx_illegal", 8344, 1, 2},
        {"best_idx_illegal", 8346, 2, 2},
    };
    lc_pack_ctx *pc = lc_pack_ctx_new(LC_PACK_LEVEL_DEFAULT, 8);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (uint32_t bad = 0; bad < N; bad += 7) {
            size_t size;
            uint8_t *recs = tf_records(frames, N, 7, &size);
            memcpy(recs + (size_t)bad * size + cases[k].off, &cases[k].bits, cases[k].width);
            const char *want = NULL;
            int want_rc = lc_record_check(recs + (size_t)bad * size, 7, &want);
            CHECK_EQ_STR(want, cases[k].what);
            lc_packed_chunk *pk = (lc_packed_chunk *)1;
            const char *reason = NULL;
            uint32_t bad_at = 99;
            int rc = lc_packed_chunk_build(pc, recs, size, N, 7, &pk, &reason, &bad_at);
            CHECK_EQ_INT(rc, want_rc);
            CHECK(rc != 0);
            CHECK_EQ_STR(reason, cases[k].what);
            CHECK_EQ_U64(bad_at, bad);
            CHECK(pk == NULL);
            free(recs);
        }
    }
    lc_pack_ctx_free(pc);
    for (uint32_t i = 0; i < N; i++)
        lc_frame_fini(&frames[i]);
}

/* ---- the decoder's memory ---- */

static void test_decoder_memory(void)
{
    enum { N = 40 };
    lc_frame frames[N];
    for (uint32_t i = 0; i < N; i++)
        edge_frame(&frames[i], 25, 1000 + i);
    size_t size;
    uint8_t *recs = tf_records(frames, N, 6, &size);
    lc_pack_ctx *pc = lc_pack_ctx_new(LC_PACK_LEVEL_DEFAULT, 8);
    lc_packed_chunk *a = NULL, *b = NULL;
    CHECK_OK(lc_packed_chunk_build(pc, recs, size, N, 6, &a, NULL, NULL));
    /* b: the same records in reverse order. */
    uint8_t *rev = malloc((size_t)N * size);
    for (uint32_t i = 0; i < N; i++)
        memcpy(rev + (size_t)i * size, recs + (size_t)(N - 1 - i) * size, size);
    CHECK_OK(lc_packed_chunk_build(pc, rev, size, N, 6, &b, NULL, NULL));
    lc_pack_ctx_free(pc);
    lc_unpack_ctx *uc = lc_unpack_ctx_new();
    /* One position of a, then positions of b, then a again: the blocks of
     * the chunk asked about last are kept, the others forgotten. */
    lc_frame got, want;
    CHECK_OK(lc_packed_chunk_frame(a, uc, 3, &got, NULL));
    lc_frame_fini(&got);
    CHECK_OK(lc_packed_chunk_frame(a, uc, 5, &got, NULL)); /* the same block */
    lc_frame_fini(&got);
    CHECK_EQ_U64(lc_unpack_ctx_blocks_decoded(uc), 1);
    for (uint32_t i = 0; i < N; i++) {
        lc_packed_chunk *c = i % 2 ? a : b; /* alternating: every call forgets */
        CHECK_OK(lc_packed_chunk_frame(c, uc, i, &got, NULL));
        uint32_t rec = c == a ? i : N - 1 - i;
        CHECK_OK(lc_frame_from_record(recs + (size_t)rec * size, 6, &want, NULL));
        tf_check_same_fields(&want, &got, true);
        lc_frame_fini(&got);
        lc_frame_fini(&want);
    }
    CHECK_EQ_U64(lc_unpack_ctx_blocks_decoded(uc), 1 + N);
    /* Out of range. */
    lc_error err;
    lc_error_clear(&err);
    CHECK(lc_packed_chunk_frame(a, uc, N, &got, &err) == LC_EFORMAT);
    CHECK(got.overflow_idx == NULL && got.n_policy == 0);
    /* A reference keeps a chunk alive after its owner lets go. */
    lc_packed_chunk *keep = lc_packed_chunk_ref(a);
    lc_packed_chunk_unref(a);
    CHECK_OK(lc_packed_chunk_frame(keep, uc, 0, &got, NULL));
    lc_frame_fini(&got);
    lc_packed_chunk_unref(keep);
    lc_packed_chunk_unref(b);
    lc_unpack_ctx_free(uc);
    free(rev);
    free(recs);
    for (uint32_t i = 0; i < N; i++)
        lc_frame_fini(&frames[i]);
}

/* ---- damage ---- */

/* Memory corruption is never expected, but the decoder must not read or
 * write outside its buffers whatever a block holds: every byte of the
 * blocks' second half changed in turn (the sanitizer builds watch the
 * reads and writes), each position then decodes or fails with
 * LC_EFORMAT. */
static void damaged_blocks(int codec)
{
    enum { N = 24 };
    lc_frame frames[N];
    for (uint32_t i = 0; i < N; i++)
        edge_frame(&frames[i], i % 5 == 0 ? 100 : 25, 2000 + i);
    size_t size;
    uint8_t *recs = tf_records(frames, N, 7, &size);
    lc_pack_ctx *pc = lc_pack_ctx_new_codec(codec, LC_PACK_LEVEL_DEFAULT, 8);
    lc_packed_chunk *a = NULL;
    CHECK_OK(lc_packed_chunk_build(pc, recs, size, N, 7, &a, NULL, NULL));
    lc_pack_ctx_free(pc);
    uint8_t *bytes = (uint8_t *)a;
    size_t len = lc_packed_chunk_bytes(a);
    size_t decoded = 0, refused = 0;
    for (size_t at = len / 2; at < len; at++) {
        uint8_t was = bytes[at];
        bytes[at] = (uint8_t)(was ^ (at % 2 ? 0xFF : 0x01));
        lc_unpack_ctx *uc = lc_unpack_ctx_new();
        for (uint32_t i = 0; i < N; i++) {
            lc_frame got;
            lc_error err;
            lc_error_clear(&err);
            int rc = lc_packed_chunk_frame(a, uc, i, &got, &err);
            CHECK(rc == 0 || rc == LC_EFORMAT);
            if (rc == 0)
                decoded++;
            else
                refused++;
            lc_frame_fini(&got);
        }
        lc_unpack_ctx_free(uc);
        bytes[at] = was;
    }
    printf("damaged blocks (codec %d): %zu positions decoded, %zu refused\n", codec, decoded,
           refused);
    CHECK(refused > 0);
    lc_packed_chunk_unref(a);
    free(recs);
    for (uint32_t i = 0; i < N; i++)
        lc_frame_fini(&frames[i]);
}

static void test_damaged_blocks(void)
{
    for (size_t k = 0; k < N_CODECS; k++)
        if (lc_pack_codec_built(codecs[k]))
            damaged_blocks(codecs[k]);
}

int main(void)
{
    test_edges();
    test_refusal();
    test_decoder_memory();
    test_damaged_blocks();
    test_real_games();
    return check_finish();
}
