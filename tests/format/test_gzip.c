/*
 * test_gzip: lc_gunzip with every available backend against streams made by
 * zlib at test time: round trips, multi-member streams, corruption,
 * truncation, trailing garbage, wrong magic, empty input and the output cap.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "testutil.h"
#include "format/gzip.h"
#include "lc_config.h"

static uint8_t *concat(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, size_t *len)
{
    uint8_t *p = malloc(alen + blen + 1);
    memcpy(p, a, alen);
    memcpy(p + alen, b, blen);
    *len = alen + blen;
    return p;
}

/* The bound every lc_gunzip here passes (0: the default). */
static size_t max_output;

/* Expect lc_gunzip to fail with code; the message must mention `word`. */
static void expect_error(lc_inflate_backend b, const uint8_t *in, size_t len, int code,
                         const char *word, const char *what)
{
    uint8_t *out = (uint8_t *)"not touched";
    size_t out_len = 123;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_gunzip(in, len, b, max_output, &out, &out_len, &err);
    CHECK_EQ_INT(rc, code);
    CHECK_EQ_INT(err.code, code);
    CHECK(out == NULL);
    CHECK_EQ_U64(out_len, 0);
    if (word && !tu_contains(err.msg, word))
        fprintf(stderr, "  (%s/%s) message lacks '%s': %s\n", lc_inflate_backend_name(b), what,
                word, err.msg);
    CHECK(!word || tu_contains(err.msg, word));
    free(out);
}

static void expect_data(lc_inflate_backend b, const uint8_t *in, size_t len, const uint8_t *want,
                        size_t want_len)
{
    uint8_t *out = NULL;
    size_t out_len = 0;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_gunzip(in, len, b, max_output, &out, &out_len, &err);
    if (rc != 0)
        fprintf(stderr, "  %s: %s\n", lc_inflate_backend_name(b), err.msg);
    CHECK_OK(rc);
    CHECK(out != NULL);
    CHECK_EQ_U64(out_len, want_len);
    CHECK(out_len == want_len && (want_len == 0 || memcmp(out, want, want_len) == 0));
    free(out);
}

static void test_backend(lc_inflate_backend b)
{
    printf("backend %s\n", lc_inflate_backend_name(b));
    const size_t n = 300000;
    uint8_t *data = malloc(n);
    tu_fill(data, n, 1);

    /* Round trips at several levels, including stored blocks (level 0). */
    for (int level = 0; level <= 9; level += 3) {
        size_t gz_len;
        uint8_t *gz = tu_gzip(data, n, level, &gz_len);
        expect_data(b, gz, gz_len, data, n);
        free(gz);
    }

    /* Multi-member: the output is the concatenation. The small last member
     * makes the ISIZE guess too small, which exercises output growth. */
    size_t a_len, b_len, e_len, ab_len, abe_len;
    uint8_t *ga = tu_gzip(data, n, 6, &a_len);
    uint8_t *gb = tu_gzip(data + 1000, 10, 6, &b_len);
    uint8_t *ge = tu_gzip("", 0, 6, &e_len);
    uint8_t *gab = concat(ga, a_len, gb, b_len, &ab_len);
    uint8_t *gabe = concat(gab, ab_len, ge, e_len, &abe_len);
    uint8_t *want = concat(data, n, data + 1000, 10, &(size_t){0});
    expect_data(b, gab, ab_len, want, n + 10);
    expect_data(b, gabe, abe_len, want, n + 10);
    free(want);

    /* Empty payload: success with zero bytes. */
    expect_data(b, ge, e_len, NULL, 0);

    /* Corrupt byte in the middle (the CRC catches it if inflate does not). */
    uint8_t *bad = malloc(a_len);
    memcpy(bad, ga, a_len);
    bad[a_len / 2] ^= 0x55;
    expect_error(b, bad, a_len, LC_EGZIP, "offset", "corrupt");
    /* Corrupt CRC trailer only. */
    memcpy(bad, ga, a_len);
    bad[a_len - 6] ^= 1;
    expect_error(b, bad, a_len, LC_EGZIP, "offset", "crc");
    /* A forged huge ISIZE must not cost a huge allocation, just an error. */
    memcpy(bad, ga, a_len);
    memset(bad + a_len - 4, 0xff, 4);
    expect_error(b, bad, a_len, LC_EGZIP, "offset", "isize");
    free(bad);

    /* Truncations: mid-data, missing trailer, inside the header. */
    expect_error(b, ga, a_len / 2, LC_EGZIP, "offset", "trunc-half");
    expect_error(b, ga, a_len - 4, LC_EGZIP, "offset", "trunc-isize");
    expect_error(b, ga, 5, LC_EGZIP, "offset", "trunc-header");
    expect_error(b, ga, 2, LC_EGZIP, "offset", "magic-only");
    /* Second member truncated. */
    expect_error(b, gab, ab_len - 3, LC_EGZIP, "offset", "trunc-second");

    /* Trailing garbage after a complete member. */
    size_t g_len;
    uint8_t *garbage = concat(gb, b_len, (const uint8_t *)"garbage!", 8, &g_len);
    expect_error(b, garbage, g_len, LC_EGZIP, "trailing garbage", "garbage");
    free(garbage);
    garbage = concat(gb, b_len, (const uint8_t *)"\x1f", 1, &g_len);
    expect_error(b, garbage, g_len, LC_EGZIP, "trailing garbage", "lone-1f");
    free(garbage);
    garbage = concat(gb, b_len, (const uint8_t *)"\0\0\0\0", 4, &g_len);
    expect_error(b, garbage, g_len, LC_EGZIP, "trailing garbage", "zeros");
    free(garbage);

    /* Not gzip at all, and empty input. */
    expect_error(b, (const uint8_t *)"hello world", 11, LC_EFORMAT, "not a gzip stream", "text");
    expect_error(b, (const uint8_t *)"\x1f", 1, LC_EFORMAT, "not a gzip stream", "one-byte");
    uint8_t zlib_stream[64];
    uLongf zl = sizeof zlib_stream;
    compress(zlib_stream, &zl, (const Bytef *)"abc", 3);
    expect_error(b, zlib_stream, zl, LC_EFORMAT, "not a gzip stream", "zlib");
    expect_error(b, (const uint8_t *)"", 0, LC_EEMPTY, "empty", "empty");

    /* The output cap: exactly the limit passes, one byte more fails. */
    max_output = 100000;
    size_t z_len, z1_len;
    uint8_t *zeros = calloc(1, 100001);
    uint8_t *gz_exact = tu_gzip(zeros, 100000, 9, &z_len);
    uint8_t *gz_over = tu_gzip(zeros, 100001, 9, &z1_len);
    expect_data(b, gz_exact, z_len, zeros, 100000);
    expect_error(b, gz_over, z1_len, LC_EFORMAT, "limit", "bomb");
    /* Over the limit across members. */
    size_t two_len;
    uint8_t *two = concat(gz_exact, z_len, gb, b_len, &two_len);
    expect_error(b, two, two_len, LC_EFORMAT, "limit", "bomb-multi");
    free(two);
    /* A real bomb: 16 MiB of zeros in about 16 KiB. */
    max_output = 1 << 20;
    uint8_t *big = calloc(1, 16u << 20);
    size_t bomb_len;
    uint8_t *bomb = tu_gzip(big, 16u << 20, 9, &bomb_len);
    free(big);
    expect_error(b, bomb, bomb_len, LC_EFORMAT, "limit", "bomb-16M");
    free(bomb);
    max_output = 0;
    free(zeros);
    free(gz_exact);
    free(gz_over);

    free(ga);
    free(gb);
    free(ge);
    free(gab);
    free(gabe);
    free(data);
}

int main(void)
{
    CHECK(lc_is_gzip((const uint8_t *)"\x1f\x8b", 2));
    CHECK(!lc_is_gzip((const uint8_t *)"\x1f\x8b", 1));
    CHECK(!lc_is_gzip((const uint8_t *)"\x1f\x8c", 2));
    CHECK(!lc_is_gzip(NULL, 0));
    CHECK_EQ_STR(lc_inflate_backend_name(LC_INFLATE_ZLIB), "zlib");
    CHECK_EQ_STR(lc_inflate_backend_name(LC_INFLATE_LIBDEFLATE), "libdeflate");
    CHECK_EQ_STR(lc_inflate_backend_name(LC_INFLATE_AUTO), "auto");
    CHECK(lc_inflate_backend_available(LC_INFLATE_ZLIB));
    CHECK(lc_inflate_backend_available(LC_INFLATE_AUTO));
    CHECK_EQ_INT(lc_inflate_backend_available(LC_INFLATE_LIBDEFLATE), LC_HAVE_LIBDEFLATE);

    test_backend(LC_INFLATE_ZLIB);
    test_backend(LC_INFLATE_AUTO);
#if LC_HAVE_LIBDEFLATE
    test_backend(LC_INFLATE_LIBDEFLATE);
#else
    printf("libdeflate not built in: its backend is not tested\n");
    uint8_t *out;
    size_t out_len;
    CHECK_EQ_INT(
        lc_gunzip((const uint8_t *)"\x1f\x8b", 2, LC_INFLATE_LIBDEFLATE, 0, &out, &out_len, NULL),
        -ENOTSUP);
#endif
    return check_finish();
}
