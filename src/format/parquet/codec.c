/*
 * codec: LZ4, LZ4_RAW and BROTLI pages through Debian's liblz4 and
 * libbrotlidec when the build found them (see codec.h), and the answer of a
 * build without them.
 */
#include "format/parquet/codec.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>

#include "format/parquet/parquet.h"
#include "lc_config.h"

#if LC_HAVE_LZ4
#include <lz4.h>
#include <lz4frame.h>
#endif
#if LC_HAVE_BROTLI
#include <brotli/decode.h>
#endif

bool lc_parquet_codec_supported(int codec)
{
    switch (codec) {
    case LC_PARQUET_CODEC_UNCOMPRESSED:
    case LC_PARQUET_CODEC_SNAPPY:
    case LC_PARQUET_CODEC_GZIP:
    case LC_PARQUET_CODEC_ZSTD:
        return true;
    case LC_PARQUET_CODEC_LZ4:
    case LC_PARQUET_CODEC_LZ4_RAW:
        return LC_HAVE_LZ4;
    case LC_PARQUET_CODEC_BROTLI:
        return LC_HAVE_BROTLI;
    default:
        return false;
    }
}

const char *lc_parquet_codec_missing(int codec)
{
    switch (codec) {
    case LC_PARQUET_CODEC_LZ4:
        return "codec LZ4 is not supported by this build: lcmon was built without liblz4 (install "
               "Debian's liblz4-dev and build again)";
    case LC_PARQUET_CODEC_LZ4_RAW:
        return "codec LZ4_RAW is not supported by this build: lcmon was built without liblz4 "
               "(install Debian's liblz4-dev and build again)";
    case LC_PARQUET_CODEC_BROTLI:
        return "codec BROTLI is not supported by this build: lcmon was built without "
               "libbrotlidec (install Debian's libbrotli-dev and build again)";
    case LC_PARQUET_CODEC_LZO:
        return "codec LZO is not supported (no library for it is used; write the file with "
               "another codec)";
    default:
        return "unknown codec";
    }
}

/* ---- LZ4 ------------------------------------------------------------------ */

#if LC_HAVE_LZ4

/* A bare block that decodes to exactly n bytes at out. liblz4 never writes
 * past its capacity, and a block that would need more fails. */
static bool lz4_block(const uint8_t *in, size_t in_len, uint8_t *out, size_t n)
{
    if (in_len > INT_MAX || n > INT_MAX)
        return false;
    return LZ4_decompress_safe((const char *)in, (char *)out, (int)in_len, (int)n) == (int)n;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Hadoop's framing: [decompressed size][compressed size] then that block,
 * repeated to the end of the input, the sizes adding up to out_len. */
static bool lz4_hadoop(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len)
{
    size_t ip = 0, op = 0;
    if (in_len < 8)
        return false;
    while (ip < in_len) {
        if (in_len - ip < 8)
            return false;
        size_t d = be32(in + ip), c = be32(in + ip + 4);
        ip += 8;
        if (c > in_len - ip || d > out_len - op || !lz4_block(in + ip, c, out + op, d))
            return false;
        ip += c;
        op += d;
    }
    return op == out_len;
}

#define LZ4_FRAME_MAGIC 0x184D2204u

/* One or more LZ4 frames that decode to exactly out_len bytes. NULL when
 * they do, else why not. */
static const char *lz4_frame(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len)
{
    LZ4F_dctx *d = NULL;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)))
        lc_fatal("out of memory creating an LZ4 frame decoder");
    const char *why = NULL;
    size_t ip = 0, op = 0, hint = 1;
    while (ip < in_len) {
        size_t src = in_len - ip, dst = out_len - op;
        hint = LZ4F_decompress(d, out + op, &dst, in + ip, &src, NULL);
        if (LZ4F_isError(hint)) {
            why = LZ4F_getErrorName(hint);
            break;
        }
        ip += src;
        op += dst;
        if (src == 0 && dst == 0) {
            /* The output is full and the frame has more to give. */
            why = "it holds more than the page size";
            break;
        }
    }
    if (!why && hint != 0)
        why = "the input ends inside a frame";
    else if (!why && op != out_len)
        why = "it holds less than the page size";
    LZ4F_freeDecompressionContext(d);
    return why;
}

int lc_pq_lz4_raw(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len, lc_error *err)
{
    if (in_len > INT_MAX || out_len > INT_MAX)
        return lc_error_set(err, LC_EFORMAT,
                            "LZ4_RAW page of %zu bytes (%zu decompressed) is "
                            "too large for an LZ4 block",
                            in_len, out_len);
    int n = LZ4_decompress_safe((const char *)in, (char *)out, (int)in_len, (int)out_len);
    if (n < 0)
        return lc_error_set(err, LC_EFORMAT,
                            "corrupt LZ4_RAW page (not an LZ4 block of at most the %zu bytes the "
                            "header gives)",
                            out_len);
    if ((size_t)n != out_len)
        return lc_error_set(err, LC_EFORMAT,
                            "LZ4_RAW page decompresses to %d bytes, the header says %zu", n,
                            out_len);
    return 0;
}

int lc_pq_lz4(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len, lc_error *err)
{
    if (lz4_hadoop(in, in_len, out, out_len))
        return 0;
    if (in_len >= 4 &&
        (in[0] | in[1] << 8 | in[2] << 16 | (uint32_t)in[3] << 24) == LZ4_FRAME_MAGIC) {
        const char *why = lz4_frame(in, in_len, out, out_len);
        if (!why)
            return 0;
        /* A bare block could start with these bytes too, if rarely. */
        if (lz4_block(in, in_len, out, out_len))
            return 0;
        return lc_error_set(err, LC_EFORMAT,
                            "corrupt LZ4 page (an LZ4 frame, but %s; the header gives %zu bytes)",
                            why, out_len);
    }
    if (lz4_block(in, in_len, out, out_len))
        return 0;
    return lc_error_set(err, LC_EFORMAT,
                        "corrupt LZ4 page: neither Hadoop-framed LZ4 blocks, an LZ4 frame nor a "
                        "bare LZ4 block of the %zu bytes the header gives",
                        out_len);
}

#else /* !LC_HAVE_LZ4 */

int lc_pq_lz4_raw(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len, lc_error *err)
{
    (void)in, (void)in_len, (void)out, (void)out_len;
    return lc_error_set(err, -ENOTSUP, "%s", lc_parquet_codec_missing(LC_PARQUET_CODEC_LZ4_RAW));
}

int lc_pq_lz4(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len, lc_error *err)
{
    (void)in, (void)in_len, (void)out, (void)out_len;
    return lc_error_set(err, -ENOTSUP, "%s", lc_parquet_codec_missing(LC_PARQUET_CODEC_LZ4));
}

#endif

/* ---- Brotli --------------------------------------------------------------- */

#if LC_HAVE_BROTLI

int lc_pq_brotli(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len, lc_error *err)
{
    BrotliDecoderState *s = BrotliDecoderCreateInstance(NULL, NULL, NULL);
    if (!s)
        lc_fatal("out of memory creating a Brotli decoder");
    size_t avail_in = in_len, avail_out = out_len;
    const uint8_t *next_in = in;
    uint8_t *next_out = out;
    BrotliDecoderResult r =
        BrotliDecoderDecompressStream(s, &avail_in, &next_in, &avail_out, &next_out, NULL);
    bool more = false;
    if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT) {
        /* The page is full. A stream that ends there may still have its
         * last, empty meta-block to read: give it one spare byte, which it
         * must leave unused. */
        uint8_t spare;
        uint8_t *next_spare = &spare;
        size_t one = 1;
        r = BrotliDecoderDecompressStream(s, &avail_in, &next_in, &one, &next_spare, NULL);
        more = one == 0 || r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT;
    }
    int rc = 0;
    if (more)
        rc = lc_error_set(err, LC_EFORMAT,
                          "BROTLI page decompresses to more than the %zu bytes the header gives",
                          out_len);
    else if (r == BROTLI_DECODER_RESULT_ERROR)
        rc = lc_error_set(err, LC_EFORMAT, "corrupt BROTLI page (%s)",
                          BrotliDecoderErrorString(BrotliDecoderGetErrorCode(s)));
    else if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT)
        rc = lc_error_set(err, LC_EFORMAT,
                          "truncated BROTLI page: the stream ends early, after %zu of the %zu "
                          "bytes the header gives",
                          out_len - avail_out, out_len);
    else if (avail_out != 0)
        rc = lc_error_set(err, LC_EFORMAT,
                          "BROTLI page decompresses to %zu bytes, the header says %zu",
                          out_len - avail_out, out_len);
    else if (avail_in != 0)
        rc = lc_error_set(err, LC_EFORMAT, "BROTLI page has %zu bytes after the end of its stream",
                          avail_in);
    BrotliDecoderDestroyInstance(s);
    return rc;
}

#else /* !LC_HAVE_BROTLI */

int lc_pq_brotli(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len, lc_error *err)
{
    (void)in, (void)in_len, (void)out, (void)out_len;
    return lc_error_set(err, -ENOTSUP, "%s", lc_parquet_codec_missing(LC_PARQUET_CODEC_BROTLI));
}

#endif
