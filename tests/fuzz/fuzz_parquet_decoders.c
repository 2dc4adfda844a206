/*
 * fuzz_parquet_decoders: Parquet's low-level decoders on their own, where
 * the fuzzer reaches them without having to build a valid file around
 * them. The first byte picks the decoder; the next few its parameters.
 *
 *   0  Thrift compact: a struct walked field by field with the typed
 *      readers must consume exactly the bytes, and give the same verdict,
 *      as skipping it whole (skipping does not range-check integers).
 *   1  Snappy: a block decodes to exactly the length it announces or is
 *      refused; and any bytes compressed by the test writer's compressor
 *      decode back to themselves.
 *   2  RLE / bit-packed hybrid: every value fits its bit width; reading in
 *      pieces gives what reading at once gives.
 *   3  bit-packed (MSB first, the deprecated level encoding): values fit.
 *   4  DELTA_BINARY_PACKED: at most cap values, `used` within the input,
 *      32-bit columns wrap at 32 bits.
 *   5  ULEB128 varints: the position only moves forward, within the input.
 *   6  LZ4_RAW, 7 LZ4 (Hadoop's framing, an LZ4 frame or a bare block),
 *   8  BROTLI: the next 4 bytes give the page size (below 256 KiB), the
 *      rest is the page. Decoding writes nothing past the page (ASan sees
 *      an allocation of exactly its size) and succeeds, or is LC_EFORMAT
 *      naming the codec, or -ENOTSUP in a build without the library. With
 *      liblz4, the rest compressed by liblz4 as a bare block, and that
 *      block in Hadoop's framing, decode back to it.
 */
#include "fuzz.h"

#include "format/parquet/codec.h"
#include "format/parquet/parquet.h"
#include "format/parquet/parquet_decode.h"
#include "format/parquet/snappy.h"
#include "format/parquet/thrift.h"
#include "lc_config.h"
#include "parquet_writer.h"

#include <errno.h>
#include <string.h>

#if LC_HAVE_LZ4
#include <lz4.h>
#endif

static void walk(lc_thrift *t, int type, const uint8_t *start, const uint8_t *end);

static void walk_struct(lc_thrift *t, const uint8_t *start, const uint8_t *end)
{
    if (!lc_thrift_begin(t))
        return;
    int16_t last = 0, id;
    int type;
    while (lc_thrift_field(t, &last, &id, &type))
        walk(t, type, start, end);
    lc_thrift_end(t);
}

static void walk(lc_thrift *t, int type, const uint8_t *start, const uint8_t *end)
{
    switch (type) {
    case LC_THRIFT_TRUE:
    case LC_THRIFT_FALSE:
        (void)lc_thrift_bool(t, type);
        return;
    case LC_THRIFT_BYTE:
    case LC_THRIFT_I16:
    case LC_THRIFT_I32:
    case LC_THRIFT_I64:
        (void)lc_thrift_int(t, type);
        return;
    case LC_THRIFT_BINARY: {
        const uint8_t *p = NULL;
        size_t n = 0;
        if (lc_thrift_binary(t, type, &p, &n))
            FUZZ_CHECK(p >= start && p <= end && n <= (size_t)(end - p));
        return;
    }
    case LC_THRIFT_STRUCT:
        walk_struct(t, start, end);
        return;
    case LC_THRIFT_LIST:
    case LC_THRIFT_SET: {
        int et;
        size_t n;
        if (!lc_thrift_list(t, type, &et, &n))
            return;
        FUZZ_CHECK(n <= (size_t)(end - start));
        if (!lc_thrift_begin(t))
            return;
        for (size_t i = 0; i < n && lc_thrift_ok(t); i++) {
            if (et == LC_THRIFT_TRUE || et == LC_THRIFT_FALSE)
                (void)lc_thrift_int(t, LC_THRIFT_BYTE); /* a bool element is a byte */
            else
                walk(t, et, start, end);
        }
        lc_thrift_end(t);
        return;
    }
    default:
        lc_thrift_skip(t, type);
        return;
    }
}

static void thrift(const uint8_t *p, size_t n)
{
    lc_thrift a, b;
    lc_thrift_init(&a, p, n);
    lc_thrift_init(&b, p, n);
    walk_struct(&a, p, p + n);
    lc_thrift_skip(&b, LC_THRIFT_STRUCT);
    FUZZ_CHECK(lc_thrift_pos(&a) <= n && lc_thrift_pos(&b) <= n);
    if (lc_thrift_ok(&a)) {
        FUZZ_CHECK(lc_thrift_ok(&b) && lc_thrift_pos(&a) == lc_thrift_pos(&b));
    } else {
        FUZZ_CHECK(lc_thrift_error(&a) != NULL && a.error_at <= n);
        /* Skipping does not check that an integer fits its declared type;
         * that is the only thing reading may refuse and skipping accept. */
        if (lc_thrift_ok(&b))
            FUZZ_CHECK(!strcmp(lc_thrift_error(&a), "integer out of range for its type"));
    }
}

static void snappy(const uint8_t *p, size_t n)
{
    size_t len = 0;
    lc_error err = {0};
    if (lc_snappy_uncompressed_length(p, n, &len, &err) == 0 && len <= ((size_t)1 << 20)) {
        uint8_t *out = malloc(len ? len : 1);
        if (lc_snappy_decompress(p, n, out, len, &err) < 0)
            FUZZ_CHECK(err.msg[0] != '\0');
        /* One byte short of the announced length is always refused. */
        if (len > 0)
            FUZZ_CHECK(lc_snappy_decompress(p, n, out, len - 1, &err) < 0);
        free(out);
    }
    /* Round trip through the test writer's compressor. */
    uint8_t *z = malloc(pqw_snappy_bound(n));
    size_t zn = pqw_snappy_compress(p, n, z);
    FUZZ_CHECK(lc_snappy_uncompressed_length(z, zn, &len, &err) == 0 && len == n);
    uint8_t *back = malloc(n ? n : 1);
    FUZZ_CHECK(lc_snappy_decompress(z, zn, back, n, &err) == 0);
    FUZZ_CHECK(memcmp(back, p, n) == 0);
    free(back);
    free(z);
}

static void hybrid(fuzz_input *in)
{
    int bw = fuzz_u8(in) % 33;
    size_t want = fuzz_u32(in) % 4096;
    size_t piece = 1 + fuzz_u8(in) % 64;
    uint32_t *all = calloc(want + 1, sizeof *all), *pieces = calloc(want + 1, sizeof *pieces);
    lc_pq_hybrid h;
    const char *why = NULL;
    lc_pq_hybrid_init(&h, in->p, in->n, bw);
    int rc_all = lc_pq_hybrid_get(&h, all, want, &why);
    FUZZ_CHECK(rc_all == 0 || why != NULL);
    lc_pq_hybrid_init(&h, in->p, in->n, bw);
    size_t got = 0;
    int rc = 0;
    while (got < want && rc == 0) {
        size_t k = want - got < piece ? want - got : piece;
        why = NULL;
        rc = lc_pq_hybrid_get(&h, pieces + got, k, &why);
        if (rc == 0)
            got += k;
    }
    if (rc_all == 0) {
        FUZZ_CHECK(rc == 0);
        FUZZ_CHECK(memcmp(all, pieces, want * sizeof *all) == 0);
        for (size_t i = 0; i < want; i++)
            FUZZ_CHECK(bw == 32 || all[i] < (1ull << bw));
    } else {
        /* Pieces may get further than one call that wants it all, never
         * to the end. */
        FUZZ_CHECK(rc != 0);
    }
    free(all);
    free(pieces);
}

static void bit_packed(fuzz_input *in)
{
    int bw = 1 + fuzz_u8(in) % 32;
    size_t first = fuzz_u8(in), count = fuzz_u32(in) % 2048;
    uint32_t *out = malloc((count + 1) * sizeof *out);
    lc_pq_bit_packed_msb(in->p, in->n, bw, first, out, count);
    for (size_t i = 0; i < count; i++)
        FUZZ_CHECK(bw == 32 || out[i] < (1ull << bw));
    free(out);
}

static void delta(fuzz_input *in)
{
    bool is32 = fuzz_u8(in) & 1;
    size_t cap = fuzz_u32(in) % 8192;
    int64_t *out = malloc((cap + 1) * sizeof *out);
    size_t count = 0, used = 0;
    const char *why = NULL;
    int rc = lc_pq_delta_binary(in->p, in->n, is32, out, cap, &count, &used, &why);
    if (rc == 0) {
        FUZZ_CHECK(count <= cap && used <= in->n);
        for (size_t i = 0; is32 && i < count; i++)
            FUZZ_CHECK(out[i] >= INT32_MIN && out[i] <= INT32_MAX);
    } else {
        FUZZ_CHECK(why != NULL);
    }
    free(out);
}

static void varints(const uint8_t *p, size_t n)
{
    size_t pos = 0;
    uint64_t v;
    while (pos < n) {
        size_t before = pos;
        if (!lc_pq_varint(p, n, &pos, &v))
            break;
        FUZZ_CHECK(pos > before && pos <= n && pos - before <= 10);
    }
}

/* Decode p[0..n) with codec into exactly out_len bytes. */
static int page(int codec, const uint8_t *p, size_t n, uint8_t *out, size_t out_len)
{
    lc_error err = {0};
    int rc = codec == LC_PARQUET_CODEC_LZ4_RAW ? lc_pq_lz4_raw(p, n, out, out_len, &err)
             : codec == LC_PARQUET_CODEC_LZ4   ? lc_pq_lz4(p, n, out, out_len, &err)
                                               : lc_pq_brotli(p, n, out, out_len, &err);
    if (rc == -ENOTSUP)
        FUZZ_CHECK(!lc_parquet_codec_supported(codec));
    else if (rc != 0)
        FUZZ_CHECK(rc == LC_EFORMAT && strstr(err.msg, lc_parquet_codec_name(codec)));
    return rc;
}

static void codec_page(fuzz_input *in, int codec)
{
    size_t out_len = fuzz_u32(in) % (256 << 10);
    uint8_t *out = malloc(out_len ? out_len : 1);
    page(codec, in->p, in->n, out, out_len);
    free(out);
#if LC_HAVE_LZ4
    if (codec == LC_PARQUET_CODEC_BROTLI || in->n > (1 << 20))
        return;
    int cap = LZ4_compressBound((int)in->n);
    uint8_t *z = malloc(8 + (size_t)cap), *back = malloc(in->n ? in->n : 1);
    int zn = LZ4_compress_default((const char *)in->p, (char *)z + 8, (int)in->n, cap);
    FUZZ_CHECK(zn > 0);
    FUZZ_CHECK(page(LC_PARQUET_CODEC_LZ4_RAW, z + 8, (size_t)zn, back, in->n) == 0);
    FUZZ_CHECK(memcmp(back, in->p, in->n) == 0);
    for (int i = 0; i < 4; i++) {
        z[i] = (uint8_t)(in->n >> (24 - 8 * i));
        z[4 + i] = (uint8_t)((uint32_t)zn >> (24 - 8 * i));
    }
    FUZZ_CHECK(page(LC_PARQUET_CODEC_LZ4, z, 8 + (size_t)zn, back, in->n) == 0);
    FUZZ_CHECK(memcmp(back, in->p, in->n) == 0);
    free(back);
    free(z);
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size};
    switch (fuzz_u8(&in) % 9) {
    case 0:
        thrift(in.p, in.n);
        break;
    case 1:
        snappy(in.p, in.n);
        break;
    case 2:
        hybrid(&in);
        break;
    case 3:
        bit_packed(&in);
        break;
    case 4:
        delta(&in);
        break;
    case 5:
        varints(in.p, in.n);
        break;
    case 6:
        codec_page(&in, LC_PARQUET_CODEC_LZ4_RAW);
        break;
    case 7:
        codec_page(&in, LC_PARQUET_CODEC_LZ4);
        break;
    case 8:
        codec_page(&in, LC_PARQUET_CODEC_BROTLI);
        break;
    }
    return 0;
}
