/*
 * test_chunk: lc_chunk_decode on synthetic chunks compressed at test time:
 * whole V6 and V7 records, sizes that are not a multiple of the record size,
 * unknown versions, empty and too-short chunks, and gzip errors passed on.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "testutil.h"
#include "format/lc0/chunk.h"
#include "format/lc0/record.h"
#include "lc_config.h"

/* n bytes of records of record_size with version v in each record. */
static uint8_t *make_records(uint32_t v, size_t record_size, size_t n)
{
    uint8_t *p = calloc(1, n ? n : 1);
    tu_fill(p, n, v);
    for (size_t off = 0; off + 4 <= n; off += record_size)
        memcpy(p + off, &v, 4);
    return p;
}

static int decode_raw(const uint8_t *raw, size_t n, lc_inflate_backend b, lc_chunk_data *out,
                      lc_error *err)
{
    size_t gz_len;
    uint8_t *gz = tu_gzip(raw, n, 6, &gz_len);
    int rc = lc_chunk_decode(gz, gz_len, b, 0, out, err);
    free(gz);
    return rc;
}

static void test_backend(lc_inflate_backend b)
{
    printf("backend %s\n", lc_inflate_backend_name(b));
    lc_chunk_data c;
    lc_error err;

    /* Three whole V6 records. */
    size_t n = 3 * LC_V6_RECORD_SIZE;
    uint8_t *raw = make_records(6, LC_V6_RECORD_SIZE, n);
    lc_error_clear(&err);
    CHECK_OK(decode_raw(raw, n, b, &c, &err));
    CHECK_EQ_INT(c.version, 6);
    CHECK_EQ_U64(c.record_size, 8356);
    CHECK_EQ_U64(c.n_records, 3);
    CHECK_EQ_U64(c.size, n);
    CHECK(c.data && memcmp(c.data, raw, n) == 0);
    lc_chunk_data_fini(&c);
    CHECK(c.data == NULL && c.n_records == 0);
    free(raw);

    /* Size not a multiple: both numbers in the message. */
    n = 2 * LC_V6_RECORD_SIZE + 5;
    raw = make_records(6, LC_V6_RECORD_SIZE, n);
    lc_error_clear(&err);
    CHECK_EQ_INT(decode_raw(raw, n, b, &c, &err), LC_EFORMAT);
    CHECK(tu_contains(err.msg, "16717"));
    CHECK(tu_contains(err.msg, "8356"));
    CHECK(c.data == NULL);
    printf("  message: %s\n", err.msg);
    free(raw);

    /* One V7-sized record claiming V6 is not a multiple of 8356 either. */
    raw = make_records(6, LC_V7_RECORD_SIZE, LC_V7_RECORD_SIZE);
    CHECK_EQ_INT(decode_raw(raw, LC_V7_RECORD_SIZE, b, &c, &err), LC_EFORMAT);
    free(raw);

    /* V7 records are accepted with version 7. */
    n = 4 * LC_V7_RECORD_SIZE;
    raw = make_records(7, LC_V7_RECORD_SIZE, n);
    CHECK_OK(decode_raw(raw, n, b, &c, &err));
    CHECK_EQ_INT(c.version, 7);
    CHECK_EQ_U64(c.record_size, 8396);
    CHECK_EQ_U64(c.n_records, 4);
    lc_chunk_data_fini(&c);
    free(raw);

    /* Older versions are known too. */
    n = 2 * LC_V5_RECORD_SIZE;
    raw = make_records(5, LC_V5_RECORD_SIZE, n);
    CHECK_OK(decode_raw(raw, n, b, &c, &err));
    CHECK_EQ_INT(c.version, 5);
    CHECK_EQ_U64(c.n_records, 2);
    lc_chunk_data_fini(&c);
    free(raw);

    /* Unknown versions. */
    uint32_t versions[] = {0, 1, 2, 8, 99, 0xffffffffu};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        raw = make_records(versions[i], LC_V6_RECORD_SIZE, LC_V6_RECORD_SIZE);
        lc_error_clear(&err);
        CHECK_EQ_INT(decode_raw(raw, LC_V6_RECORD_SIZE, b, &c, &err), LC_EVERSION);
        CHECK(c.data == NULL);
        free(raw);
    }
    CHECK(tu_contains(err.msg, "version"));

    /* Empty chunk, and one shorter than a version field. */
    lc_error_clear(&err);
    CHECK_EQ_INT(decode_raw((const uint8_t *)"", 0, b, &c, &err), LC_EEMPTY);
    CHECK_EQ_INT(decode_raw((const uint8_t *)"\x06\x00", 2, b, &c, &err), LC_EFORMAT);
    /* Empty file (not even gzip), and not gzip. */
    CHECK_EQ_INT(lc_chunk_decode((const uint8_t *)"", 0, b, 0, &c, &err), LC_EEMPTY);
    CHECK_EQ_INT(lc_chunk_decode((const uint8_t *)"\x06\0\0\0", 4, b, 0, &c, &err), LC_EFORMAT);

    /* A gzip error is passed on. */
    n = LC_V6_RECORD_SIZE;
    raw = make_records(6, LC_V6_RECORD_SIZE, n);
    size_t gz_len;
    uint8_t *gz = tu_gzip(raw, n, 6, &gz_len);
    CHECK_EQ_INT(lc_chunk_decode(gz, gz_len - 3, b, 0, &c, &err), LC_EGZIP);
    CHECK(c.data == NULL);
    free(gz);
    free(raw);
}

int main(void)
{
    CHECK_EQ_U64(lc_record_size_for_version(3), 8276);
    CHECK_EQ_U64(lc_record_size_for_version(4), 8292);
    CHECK_EQ_U64(lc_record_size_for_version(5), 8308);
    CHECK_EQ_U64(lc_record_size_for_version(6), 8356);
    CHECK_EQ_U64(lc_record_size_for_version(7), 8396);
    CHECK_EQ_U64(lc_record_size_for_version(2), 0);
    CHECK_EQ_U64(lc_record_size_for_version(8), 0);

    lc_chunk_data_fini(NULL);
    lc_chunk_data zero = {0};
    lc_chunk_data_fini(&zero);

    test_backend(LC_INFLATE_ZLIB);
#if LC_HAVE_LIBDEFLATE
    test_backend(LC_INFLATE_LIBDEFLATE);
#endif
    return check_finish();
}
