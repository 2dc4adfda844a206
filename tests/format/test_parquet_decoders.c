/*
 * test_parquet_decoders: the Parquet reader's decoders on hand-made bytes:
 * Snappy (literals, copies of every tag, and the errors that name what is
 * wrong), the Thrift compact protocol, the RLE/bit-packed hybrid and
 * DELTA_BINARY_PACKED.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "testutil.h"
#include "format/parquet/parquet.h"
#include "format/parquet/parquet_decode.h"
#include "format/parquet/snappy.h"
#include "format/parquet/thrift.h"

/* ---- decoder units ------------------------------------------------------------ */

static void expect_snappy(const uint8_t *in, size_t in_len, const char *want, size_t want_len)
{
    uint8_t out[256];
    lc_error err;
    lc_error_clear(&err);
    size_t n = 0;
    CHECK_OK(lc_snappy_uncompressed_length(in, in_len, &n, &err));
    CHECK_EQ_U64(n, want_len);
    int rc = lc_snappy_decompress(in, in_len, out, want_len, &err);
    if (rc < 0)
        fprintf(stderr, "  %s\n", err.msg);
    CHECK_OK(rc);
    CHECK(rc < 0 || memcmp(out, want, want_len) == 0);
}

static void expect_snappy_error(const uint8_t *in, size_t in_len, size_t out_len, const char *word)
{
    uint8_t out[256];
    lc_error err;
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_snappy_decompress(in, in_len, out, out_len, &err), LC_EFORMAT);
    if (!tu_contains(err.msg, word))
        fprintf(stderr, "  snappy message lacks '%s': %s\n", word, err.msg);
    CHECK(tu_contains(err.msg, word));
}

static void test_snappy(void)
{
    /* Literal "abc", then a 1-byte-offset copy of length 4 at offset 3
     * (overlapping: abcabca), then a 2-byte-offset copy of 5 at offset 7. */
    const uint8_t a[] = {12, 2 << 2, 'a', 'b', 'c', 0x01, 3, (4 << 2) | 2, 7, 0};
    expect_snappy(a, sizeof a, "abcabcaabcab", 12);
    /* Run of one byte by an offset-1 copy; a 4-byte-offset copy. */
    const uint8_t b[] = {9, 0, 'x', (6 << 2) | 2, 1, 0, (0 << 2) | 3, 8, 0, 0, 0};
    expect_snappy(b, sizeof b, "xxxxxxxxx", 9);
    /* A literal with a one-byte length (tag 60): 61 bytes. */
    uint8_t c[2 + 2 + 61];
    char cw[61];
    c[0] = 61;
    c[1] = 60 << 2;
    c[2] = 60;
    for (int i = 0; i < 61; i++)
        c[3 + i] = (uint8_t)(cw[i] = (char)('A' + i % 26));
    expect_snappy(c, 3 + 61, cw, 61);
    const uint8_t empty[] = {0};
    expect_snappy(empty, 1, "", 0);

    expect_snappy_error(a, sizeof a, 11, "announces 12 bytes");
    expect_snappy_error(a, 6, 12, "copy runs past the input");
    expect_snappy_error(a, 5, 12, "ends after 3");
    const uint8_t far[] = {8, 0, 'a', (3 << 2) | 2, 5, 0};
    expect_snappy_error(far, sizeof far, 8, "before the start");
    const uint8_t zero[] = {8, 0, 'a', (3 << 2) | 2, 0, 0};
    expect_snappy_error(zero, sizeof zero, 8, "before the start");
    const uint8_t over[] = {4, 0, 'a', (7 << 2) | 2, 1, 0};
    expect_snappy_error(over, sizeof over, 4, "past the announced length");
    const uint8_t lit_over[] = {2, 3 << 2, 'a', 'b', 'c', 'd'};
    expect_snappy_error(lit_over, sizeof lit_over, 2, "literal runs past the announced");
    const uint8_t lit_short[] = {4, 3 << 2, 'a', 'b'};
    expect_snappy_error(lit_short, sizeof lit_short, 4, "literal runs past the input");
    const uint8_t bad_len[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    size_t n;
    lc_error err;
    CHECK_EQ_INT(lc_snappy_uncompressed_length(bad_len, sizeof bad_len, &n, &err), LC_EFORMAT);
    CHECK_EQ_INT(lc_snappy_uncompressed_length(bad_len, 2, &n, &err), LC_EFORMAT);
    const uint8_t big_len[] = {0xff, 0xff, 0xff, 0xff, 0x1f};
    CHECK_EQ_INT(lc_snappy_uncompressed_length(big_len, sizeof big_len, &n, &err), LC_EFORMAT);
}

static void test_thrift(void)
{
    /* struct { 1: i32 = -3, 3: string "hi", 20: list<i64> [1, 300],
     *          4: struct { 1: true }, 5: map<i32,string> {7: "x"}, 6: double } */
    const uint8_t s[] = {0x15, 5,    0x28, 2,    'h',  'i', 0x09, 40,   0x26, 2,   0xd8,
                         4,    0x1c, 0x11, 0x00, 0x1b, 1,   0x58, 14,   1,    'x', 0x17,
                         0,    0,    0,    0,    0,    0,   0xf0, 0x3f, 0x00};
    lc_thrift t;
    lc_thrift_init(&t, s, sizeof s);
    CHECK(lc_thrift_begin(&t));
    int16_t last = 0, id;
    int ty;
    int seen = 0;
    while (lc_thrift_field(&t, &last, &id, &ty)) {
        switch (id) {
        case 1:
            CHECK_EQ_INT(lc_thrift_i32(&t, ty), -3);
            seen |= 1;
            break;
        case 3: {
            const uint8_t *p;
            size_t n;
            CHECK(lc_thrift_binary(&t, ty, &p, &n) && n == 2 && memcmp(p, "hi", 2) == 0);
            seen |= 2;
            break;
        }
        case 20: {
            int et;
            size_t n;
            CHECK(lc_thrift_list(&t, ty, &et, &n) && et == LC_THRIFT_I64 && n == 2);
            CHECK_EQ_INT(lc_thrift_list_int(&t, et), 1);
            CHECK_EQ_INT(lc_thrift_list_int(&t, et), 300);
            seen |= 4;
            break;
        }
        default:
            lc_thrift_skip(&t, ty);
            seen |= 8;
        }
    }
    lc_thrift_end(&t);
    CHECK(lc_thrift_ok(&t));
    CHECK_EQ_INT(seen, 15);
    CHECK_EQ_U64(lc_thrift_pos(&t), sizeof s);

    /* Every truncation of it fails cleanly. */
    for (size_t n = 0; n < sizeof s; n++) {
        lc_thrift_init(&t, s, n);
        lc_thrift_skip(&t, LC_THRIFT_STRUCT);
        CHECK(!lc_thrift_ok(&t));
    }
    /* A wrong wire type for an expected integer. */
    lc_thrift_init(&t, s, sizeof s);
    lc_thrift_int(&t, LC_THRIFT_BINARY);
    CHECK(!lc_thrift_ok(&t));
    /* A list that claims more elements than there are bytes. */
    const uint8_t lie[] = {0xf5, 0xff, 0xff, 0x03, 0, 0};
    lc_thrift_init(&t, lie, sizeof lie);
    int et;
    size_t n;
    CHECK(!lc_thrift_list(&t, LC_THRIFT_LIST, &et, &n));
    /* A varint longer than ten bytes. */
    const uint8_t longv[] = {0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                             0xff, 0xff, 0xff, 0xff, 0x01, 0};
    lc_thrift_init(&t, longv, sizeof longv);
    lc_thrift_skip(&t, LC_THRIFT_STRUCT);
    CHECK(!lc_thrift_ok(&t));
    /* Structs nested deeper than the limit. */
    uint8_t deep[2 * LC_THRIFT_MAX_DEPTH + 8];
    for (size_t i = 0; i < sizeof deep; i++)
        deep[i] = 0x1c; /* field 1, struct */
    lc_thrift_init(&t, deep, sizeof deep);
    lc_thrift_skip(&t, LC_THRIFT_STRUCT);
    CHECK(!lc_thrift_ok(&t));
    CHECK(tu_contains(lc_thrift_error(&t), "deep"));
    /* Lists nested deeper than the limit. */
    for (size_t i = 0; i < sizeof deep; i++)
        deep[i] = 0x19; /* list of one list */
    lc_thrift_init(&t, deep, sizeof deep);
    lc_thrift_skip(&t, LC_THRIFT_LIST);
    CHECK(!lc_thrift_ok(&t));
}

static void test_hybrid(void)
{
    const char *why = NULL;
    uint32_t out[64];
    lc_pq_hybrid h;
    /* RLE run of 5 x 3 (bw 2), then one bit-packed group: 0 1 2 3 0 1 2 3. */
    const uint8_t a[] = {5 << 1, 3, (1 << 1) | 1, 0xe4, 0xe4};
    lc_pq_hybrid_init(&h, a, sizeof a, 2);
    CHECK_OK(lc_pq_hybrid_get(&h, out, 13, &why));
    const uint32_t wa[] = {3, 3, 3, 3, 3, 0, 1, 2, 3, 0, 1, 2, 3};
    CHECK(memcmp(out, wa, sizeof wa) == 0);
    CHECK_EQ_INT(lc_pq_hybrid_get(&h, out, 1, &why), LC_EFORMAT);
    /* A last bit-packed run cut short: 2 groups announced, 1 byte there (bw 1):
     * the 8 values present are fine, the 9th is an error. */
    const uint8_t b[] = {(2 << 1) | 1, 0x5a};
    lc_pq_hybrid_init(&h, b, sizeof b, 1);
    CHECK_OK(lc_pq_hybrid_get(&h, out, 8, &why));
    CHECK(out[0] == 0 && out[1] == 1 && out[3] == 1 && out[7] == 0);
    CHECK_EQ_INT(lc_pq_hybrid_get(&h, out, 1, &why), LC_EFORMAT);
    /* Bit width 0: all zeros, with no value bytes. */
    const uint8_t c[] = {10 << 1};
    lc_pq_hybrid_init(&h, c, sizeof c, 0);
    CHECK_OK(lc_pq_hybrid_get(&h, out, 10, &why));
    CHECK(out[0] == 0 && out[9] == 0);
    /* 32-bit values in an RLE run. */
    const uint8_t d[] = {2 << 1, 0x78, 0x56, 0x34, 0x12};
    lc_pq_hybrid_init(&h, d, sizeof d, 32);
    CHECK_OK(lc_pq_hybrid_get(&h, out, 2, &why));
    CHECK_EQ_U64(out[1], 0x12345678);
    /* An RLE value wider than the bit width, a truncated value, a bad varint. */
    const uint8_t e[] = {2 << 1, 0x05};
    lc_pq_hybrid_init(&h, e, sizeof e, 2);
    CHECK_EQ_INT(lc_pq_hybrid_get(&h, out, 1, &why), LC_EFORMAT);
    lc_pq_hybrid_init(&h, d, 3, 32);
    CHECK_EQ_INT(lc_pq_hybrid_get(&h, out, 1, &why), LC_EFORMAT);
    const uint8_t g[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    lc_pq_hybrid_init(&h, g, sizeof g, 1);
    CHECK_EQ_INT(lc_pq_hybrid_get(&h, out, 1, &why), LC_EFORMAT);
    /* Huge run counts are bounded by what is asked for. */
    const uint8_t huge[] = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1};
    lc_pq_hybrid_init(&h, huge, sizeof huge, 1);
    CHECK_OK(lc_pq_hybrid_get(&h, out, 64, &why));
    CHECK(out[63] == 1);

    /* The deprecated MSB-first levels: 1 0 1 1 0 0 0 1 | 1. */
    const uint8_t m[] = {0xb1, 0x80};
    lc_pq_bit_packed_msb(m, sizeof m, 1, 0, out, 9);
    const uint32_t wm[] = {1, 0, 1, 1, 0, 0, 0, 1, 1};
    CHECK(memcmp(out, wm, sizeof wm) == 0);
    lc_pq_bit_packed_msb(m, sizeof m, 1, 7, out, 2);
    CHECK(out[0] == 1 && out[1] == 1);
}

static void test_delta(void)
{
    int64_t out[300];
    size_t count, used;
    const char *why;
    /* The specification's example: 1 2 3 4 5 -> block 128, 4 miniblocks,
     * 5 values, first 1, min delta 1, bit widths 0. */
    const uint8_t a[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0, 0, 0, 0};
    CHECK_OK(lc_pq_delta_binary(a, sizeof a, false, out, 300, &count, &used, &why));
    CHECK_EQ_U64(count, 5);
    CHECK_EQ_U64(used, sizeof a);
    CHECK(out[0] == 1 && out[4] == 5);
    /* 7 5 3 1 2 3 4 5: min delta -2, deltas 0 0 0 3 3 3 3 (bit width 2). */
    uint8_t b[64] = {0x80, 0x01, 0x04, 0x08, 0x0e, 0x03, 0x02, 0, 0, 0};
    /* Deltas minus min: 0 0 0 3 3 3 3 then padding, 2 bits each LSB first. */
    b[10] = 0xc0;         /* values 0..3: 0,0,0,3 */
    b[11] = 0xff;         /* values 4..7: 3,3,3,(3) */
    size_t blen = 12 + 6; /* the miniblock is 32 values x 2 bits = 8 bytes */
    CHECK_OK(lc_pq_delta_binary(b, blen, false, out, 300, &count, &used, &why));
    CHECK_EQ_U64(count, 8);
    const int64_t wb[] = {7, 5, 3, 1, 2, 3, 4, 5};
    CHECK(memcmp(out, wb, sizeof wb) == 0);
    CHECK_EQ_U64(used, 18);
    /* The miniblock's padding may be missing at the very end. */
    CHECK_OK(lc_pq_delta_binary(b, 12, false, out, 300, &count, &used, &why));
    CHECK_EQ_U64(used, 12);
    CHECK_EQ_INT(lc_pq_delta_binary(b, 11, false, out, 300, &count, &used, &why), LC_EFORMAT);
    /* More values than the caller's room. */
    CHECK_EQ_INT(lc_pq_delta_binary(b, blen, false, out, 7, &count, &used, &why), LC_EFORMAT);
    /* Impossible block sizes and bit widths. */
    const uint8_t bad1[] = {0x40, 0x04, 0x01, 0x00};                 /* block 64 */
    const uint8_t bad2[] = {0x80, 0x01, 0x03, 0x01, 0x00};           /* 128 / 3 */
    const uint8_t bad3[] = {0x80, 0x01, 0x00, 0x01, 0x00};           /* 0 miniblocks */
    const uint8_t bad4[] = {0x80, 0x01, 0x01, 0x02, 0x00, 0x00, 65}; /* width 65 */
    const uint8_t bad5[] = {0x80, 0x01, 0x01, 0x02, 0x00, 0x00, 33}; /* 33 for int32 */
    CHECK_EQ_INT(lc_pq_delta_binary(bad1, sizeof bad1, false, out, 300, &count, &used, &why),
                 LC_EFORMAT);
    CHECK_EQ_INT(lc_pq_delta_binary(bad2, sizeof bad2, false, out, 300, &count, &used, &why),
                 LC_EFORMAT);
    CHECK_EQ_INT(lc_pq_delta_binary(bad3, sizeof bad3, false, out, 300, &count, &used, &why),
                 LC_EFORMAT);
    CHECK_EQ_INT(lc_pq_delta_binary(bad4, sizeof bad4, false, out, 300, &count, &used, &why),
                 LC_EFORMAT);
    CHECK_EQ_INT(lc_pq_delta_binary(bad5, sizeof bad5, true, out, 300, &count, &used, &why),
                 LC_EFORMAT);
    /* Truncated headers. */
    for (size_t n = 0; n < 4; n++)
        CHECK_EQ_INT(lc_pq_delta_binary(a, n, false, out, 300, &count, &used, &why), LC_EFORMAT);
    /* Zero values: just the header. */
    const uint8_t z[] = {0x80, 0x01, 0x04, 0x00, 0x00};
    CHECK_OK(lc_pq_delta_binary(z, sizeof z, false, out, 300, &count, &used, &why));
    CHECK_EQ_U64(count, 0);
    CHECK_EQ_U64(used, 5);
    /* int32 arithmetic wraps at 32 bits: INT32_MAX then +1 -> INT32_MIN. */
    const uint8_t w[] = {0x80, 0x01, 0x01, 0x02, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0x02, 0x00};
    CHECK_OK(lc_pq_delta_binary(w, sizeof w, true, out, 300, &count, &used, &why));
    CHECK(count == 2 && out[0] == INT32_MAX && out[1] == INT32_MIN);
}

int main(void)
{
    test_snappy();
    test_thrift();
    test_hybrid();
    test_delta();
    return check_finish();
}
