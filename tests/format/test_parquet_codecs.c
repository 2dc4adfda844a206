/*
 * test_parquet_codecs: the Parquet codecs of optional libraries on their
 * own (src/format/parquet/codec.c): LZ4_RAW blocks, the three shapes of the
 * deprecated LZ4 (Hadoop's framing, one or several blocks; LZ4 frames; a
 * bare block) and BROTLI streams, made by hand and by the libraries'
 * compressors; every size that differs from the page header's, every
 * truncation and corruption is LC_EFORMAT naming the codec, and nothing is
 * written past the page. A build without a library refuses its codecs with
 * -ENOTSUP and names the Debian package. Whole files of every codec from
 * independent writers: test_parquet.c.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "testutil.h"
#include "format/parquet/codec.h"
#include "format/parquet/parquet.h"
#include "lc_config.h"

#if LC_HAVE_LZ4
#include <lz4.h>
#include <lz4frame.h>
#endif
#if LC_HAVE_BROTLI
#include <brotli/encode.h>
#endif

typedef int (*codec_fn)(const uint8_t *, size_t, uint8_t *, size_t, lc_error *);

/* Decode in into a buffer of exactly out_len bytes followed by guard
 * bytes, which must come back untouched; returns the code. */
static int decode(codec_fn fn, const uint8_t *in, size_t in_len, uint8_t **out, size_t out_len,
                  lc_error *err)
{
    enum { GUARD = 64 };
    uint8_t *buf = malloc(out_len + GUARD);
    memset(buf, 0xa5, out_len + GUARD);
    lc_error_clear(err);
    int rc = fn(in, in_len, buf, out_len, err);
    bool intact = true;
    for (size_t i = 0; i < GUARD; i++)
        intact = intact && buf[out_len + i] == 0xa5;
    CHECK(intact);
    *out = buf;
    return rc;
}

/* Unused in a build with neither library. */
__attribute__((unused)) static void expect_ok(codec_fn fn, const uint8_t *in, size_t in_len,
                                              const void *want, size_t want_len)
{
    uint8_t *out;
    lc_error err;
    int rc = decode(fn, in, in_len, &out, want_len, &err);
    if (rc < 0)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_OK(rc);
    CHECK(rc < 0 || memcmp(out, want, want_len) == 0);
    free(out);
}

static void expect_error(codec_fn fn, const uint8_t *in, size_t in_len, size_t out_len, int code,
                         const char *w1, const char *w2)
{
    uint8_t *out;
    lc_error err;
    int rc = decode(fn, in, in_len, &out, out_len, &err);
    CHECK_EQ_INT(rc, code);
    const char *w[] = {w1, w2};
    for (int i = 0; i < 2; i++) {
        if (w[i] && !tu_contains(err.msg, w[i]))
            fprintf(stderr, "  message lacks '%s': %s\n", w[i], err.msg);
        CHECK(!w[i] || tu_contains(err.msg, w[i]));
    }
    free(out);
}

/* Some text that compresses, len bytes of it. */
__attribute__((unused)) static uint8_t *sample(size_t len)
{
    static const char *const words[] = {
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1",
        "e2e4",
        "g1f3",
        "0.25",
        "0.5",
        "d7d5",
        "game-00042"};
    uint8_t *p = malloc(len + 1);
    uint64_t x = 42;
    size_t n = 0;
    while (n < len) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        const char *s = words[(x >> 33) % (sizeof words / sizeof *words)];
        for (size_t i = 0; s[i] && n < len; i++)
            p[n++] = (uint8_t)s[i];
        if (n < len)
            p[n++] = (uint8_t)('\t' + (x >> 60 & 1));
    }
    return p;
}

/* ---- what the build has ---------------------------------------------------- */

static void test_supported(void)
{
    CHECK(lc_parquet_codec_supported(LC_PARQUET_CODEC_UNCOMPRESSED));
    CHECK(lc_parquet_codec_supported(LC_PARQUET_CODEC_SNAPPY));
    CHECK(lc_parquet_codec_supported(LC_PARQUET_CODEC_GZIP));
    CHECK(lc_parquet_codec_supported(LC_PARQUET_CODEC_ZSTD));
    CHECK_EQ_INT(lc_parquet_codec_supported(LC_PARQUET_CODEC_LZ4_RAW), LC_HAVE_LZ4);
    CHECK_EQ_INT(lc_parquet_codec_supported(LC_PARQUET_CODEC_LZ4), LC_HAVE_LZ4);
    CHECK_EQ_INT(lc_parquet_codec_supported(LC_PARQUET_CODEC_BROTLI), LC_HAVE_BROTLI);
    CHECK(!lc_parquet_codec_supported(LC_PARQUET_CODEC_LZO));
    CHECK(!lc_parquet_codec_supported(42));
    CHECK(!lc_parquet_codec_supported(-1));
    /* What a build without the library says: the codec, the library and
     * the Debian package. */
    CHECK(tu_contains(lc_parquet_codec_missing(LC_PARQUET_CODEC_LZ4_RAW), "LZ4_RAW"));
    CHECK(tu_contains(lc_parquet_codec_missing(LC_PARQUET_CODEC_LZ4_RAW), "liblz4-dev"));
    CHECK(tu_contains(lc_parquet_codec_missing(LC_PARQUET_CODEC_LZ4), "codec LZ4 "));
    CHECK(tu_contains(lc_parquet_codec_missing(LC_PARQUET_CODEC_LZ4), "liblz4-dev"));
    CHECK(tu_contains(lc_parquet_codec_missing(LC_PARQUET_CODEC_BROTLI), "libbrotli-dev"));
    CHECK(
        tu_contains(lc_parquet_codec_missing(LC_PARQUET_CODEC_LZO), "codec LZO is not supported"));
    printf("this build: LZ4 and LZ4_RAW %s, BROTLI %s\n", LC_HAVE_LZ4 ? "read" : "refused",
           LC_HAVE_BROTLI ? "read" : "refused");
}

/* ---- LZ4 -------------------------------------------------------------------- */

/* "abcdefgh", then a copy of 16 bytes from 8 back (4 + 12 in the token),
 * then the last literals "12345": 29 bytes. */
static const uint8_t block29[] = {0x8c, 'a', 'b',  'c', 'd', 'e', 'f', 'g', 'h',
                                  8,    0,   0x50, '1', '2', '3', '4', '5'};
static const char text29[] = "abcdefghabcdefghabcdefgh12345";

#if LC_HAVE_LZ4

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void test_lz4_raw(void)
{
    expect_ok(lc_pq_lz4_raw, block29, sizeof block29, text29, 29);
    /* The header's size, wrong either way. */
    expect_error(lc_pq_lz4_raw, block29, sizeof block29, 28, LC_EFORMAT, "corrupt LZ4_RAW page",
                 "28 bytes");
    expect_error(lc_pq_lz4_raw, block29, sizeof block29, 30, LC_EFORMAT,
                 "LZ4_RAW page decompresses to 29 bytes", "the header says 30");
    /* Cut short anywhere, or a copy from before the start. (An offset of 0
     * is liblz4's to judge: 1.9.4 accepts it, and it reads only what was
     * written.) */
    for (size_t n = 0; n < sizeof block29; n++)
        expect_error(lc_pq_lz4_raw, block29, n, 29, LC_EFORMAT, "LZ4_RAW", NULL);
    uint8_t far[sizeof block29];
    memcpy(far, block29, sizeof far);
    far[9] = 9; /* offset 9 with 8 bytes written */
    expect_error(lc_pq_lz4_raw, far, sizeof far, 29, LC_EFORMAT, "corrupt LZ4_RAW page", NULL);
    /* A large page by liblz4's own compressor. */
    size_t n = 300000;
    uint8_t *text = sample(n);
    int cap = LZ4_compressBound((int)n);
    uint8_t *z = malloc((size_t)cap);
    int zn = LZ4_compress_default((const char *)text, (char *)z, (int)n, cap);
    CHECK(zn > 0 && (size_t)zn < n / 2);
    expect_ok(lc_pq_lz4_raw, z, (size_t)zn, text, n);
    expect_error(lc_pq_lz4_raw, z, (size_t)zn, n - 1, LC_EFORMAT, "corrupt LZ4_RAW page", NULL);
    free(z);
    free(text);
}

/* The deprecated LZ4 in Hadoop's framing, as arrow-rs writes it, with one
 * or several blocks; then LZ4 frames; then a bare block. */
static void test_lz4_hadoop_frame_block(void)
{
    size_t n = 100000, half = 40000;
    uint8_t *text = sample(n);
    int cap = LZ4_compressBound((int)n);
    uint8_t *z = malloc(16 + 2 * (size_t)cap);
    /* Two Hadoop blocks: [40000][c1][block][60000][c2][block]. */
    int c1 = LZ4_compress_default((const char *)text, (char *)z + 8, (int)half, cap);
    put_be32(z, (uint32_t)half);
    put_be32(z + 4, (uint32_t)c1);
    uint8_t *second = z + 8 + c1;
    int c2 =
        LZ4_compress_default((const char *)text + half, (char *)second + 8, (int)(n - half), cap);
    put_be32(second, (uint32_t)(n - half));
    put_be32(second + 4, (uint32_t)c2);
    size_t hn = 16 + (size_t)c1 + (size_t)c2;
    expect_ok(lc_pq_lz4, z, hn, text, n);
    /* One block alone (the page of the first half). */
    expect_ok(lc_pq_lz4, z, 8 + (size_t)c1, text, half);
    /* The page header's size differs from the blocks' total; a block cut
     * short; bytes after the last block. None is anything else either. */
    expect_error(lc_pq_lz4, z, hn, n + 1, LC_EFORMAT, "corrupt LZ4 page", "100001 bytes");
    expect_error(lc_pq_lz4, z, hn, n - 1, LC_EFORMAT, "corrupt LZ4 page", NULL);
    expect_error(lc_pq_lz4, z, hn - 1, n, LC_EFORMAT, "corrupt LZ4 page", NULL);
    z[hn] = 0;
    expect_error(lc_pq_lz4, z, hn + 1, n, LC_EFORMAT, "corrupt LZ4 page", NULL);
    /* A block that claims more than is left of the page. */
    put_be32(second, (uint32_t)(n - half + 1));
    expect_error(lc_pq_lz4, z, hn, n, LC_EFORMAT, "corrupt LZ4 page", NULL);

    /* An LZ4 frame, with a content size and a checksum, by liblz4. */
    LZ4F_preferences_t prefs = {0};
    prefs.frameInfo.contentSize = n;
    prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    prefs.frameInfo.blockSizeID = LZ4F_max64KB;
    size_t fcap = LZ4F_compressFrameBound(n, &prefs);
    uint8_t *f = malloc(fcap);
    size_t fn = LZ4F_compressFrame(f, fcap, text, n, &prefs);
    CHECK(!LZ4F_isError(fn));
    expect_ok(lc_pq_lz4, f, fn, text, n);
    expect_error(lc_pq_lz4, f, fn, n - 1, LC_EFORMAT, "an LZ4 frame", "more than");
    expect_error(lc_pq_lz4, f, fn, n + 1, LC_EFORMAT, "an LZ4 frame", NULL);
    expect_error(lc_pq_lz4, f, fn - 3, n, LC_EFORMAT, "an LZ4 frame", NULL);
    f[fn / 2] ^= 0x40; /* the checksum no longer matches, or a block breaks */
    expect_error(lc_pq_lz4, f, fn, n, LC_EFORMAT, "an LZ4 frame", NULL);
    /* Two frames back to back: one page. */
    prefs.frameInfo.contentSize = 0;
    size_t f1 = LZ4F_compressFrame(f, fcap, text, half, &prefs);
    size_t f2 = LZ4F_compressFrame(f + f1, fcap - f1, text + half, n - half, &prefs);
    CHECK(!LZ4F_isError(f1) && !LZ4F_isError(f2));
    expect_ok(lc_pq_lz4, f, f1 + f2, text, n);
    free(f);

    /* A bare block, as older Arrow C++ wrote: neither framing fits it. */
    expect_ok(lc_pq_lz4, block29, sizeof block29, text29, 29);
    int bn = LZ4_compress_default((const char *)text, (char *)z, (int)n, cap);
    expect_ok(lc_pq_lz4, z, (size_t)bn, text, n);
    expect_error(lc_pq_lz4, z, (size_t)bn, n + 5, LC_EFORMAT, "corrupt LZ4 page",
                 "neither Hadoop-framed");
    static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    expect_error(lc_pq_lz4, junk, sizeof junk, 29, LC_EFORMAT, "corrupt LZ4 page", NULL);
    expect_error(lc_pq_lz4, junk, 0, 29, LC_EFORMAT, "corrupt LZ4 page", NULL);
    free(z);
    free(text);
}

#else

static void test_lz4_refused(void)
{
    expect_error(lc_pq_lz4_raw, block29, sizeof block29, 29, -ENOTSUP, "LZ4_RAW", "liblz4-dev");
    expect_error(lc_pq_lz4, block29, sizeof block29, 29, -ENOTSUP, "codec LZ4 ", "liblz4-dev");
    (void)text29;
}

#endif

/* ---- Brotli ----------------------------------------------------------------- */

#if LC_HAVE_BROTLI

static void test_brotli(void)
{
    /* The empty stream (window 16, one last and empty meta-block). */
    static const uint8_t empty[] = {0x06};
    expect_ok(lc_pq_brotli, empty, 1, "", 0);
    expect_error(lc_pq_brotli, empty, 1, 5, LC_EFORMAT, "BROTLI page decompresses to 0 bytes",
                 "the header says 5");
    expect_error(lc_pq_brotli, empty, 0, 5, LC_EFORMAT, "truncated BROTLI page", NULL);

    size_t n = 200000;
    uint8_t *text = sample(n);
    size_t zcap = BrotliEncoderMaxCompressedSize(n), zn = zcap;
    uint8_t *z = malloc(zcap + 1);
    CHECK(BrotliEncoderCompress(5, 22, BROTLI_MODE_GENERIC, n, text, &zn, z));
    expect_ok(lc_pq_brotli, z, zn, text, n);
    expect_error(lc_pq_brotli, z, zn, n - 1, LC_EFORMAT, "BROTLI page decompresses to more than",
                 "199999 bytes");
    expect_error(lc_pq_brotli, z, zn, n + 1, LC_EFORMAT, "BROTLI page decompresses to 200000",
                 "the header says 200001");
    for (size_t cut = 1; cut < zn; cut += zn / 7)
        expect_error(lc_pq_brotli, z, cut, n, LC_EFORMAT, "BROTLI", NULL);
    z[zn] = 0x06;
    expect_error(lc_pq_brotli, z, zn + 1, n, LC_EFORMAT, "1 bytes after the end of its stream",
                 NULL);
    /* Damage in the middle: refused as corrupt or for its size, or (the
     * damage hitting only literals) the right size of other bytes; never
     * past the page. */
    for (size_t at = 0; at < zn; at += zn / 13) {
        z[at] ^= 0x5a;
        uint8_t *out;
        lc_error err;
        int rc = decode(lc_pq_brotli, z, zn, &out, n, &err);
        CHECK(rc == 0 || (rc == LC_EFORMAT && tu_contains(err.msg, "BROTLI")));
        free(out);
        z[at] ^= 0x5a;
    }
    free(z);
    free(text);
}

#else

static void test_brotli_refused(void)
{
    static const uint8_t empty[] = {0x06};
    expect_error(lc_pq_brotli, empty, 1, 0, -ENOTSUP, "BROTLI", "libbrotli-dev");
}

#endif

int main(void)
{
    test_supported();
#if LC_HAVE_LZ4
    test_lz4_raw();
    test_lz4_hadoop_frame_block();
#else
    test_lz4_refused();
#endif
#if LC_HAVE_BROTLI
    test_brotli();
#else
    test_brotli_refused();
#endif
    return check_finish();
}
