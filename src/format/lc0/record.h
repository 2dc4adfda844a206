/*
 * record: the lc0 training record layouts (V6 and V7) and safe field access.
 *
 * A decompressed chunk is a run of fixed-size little-endian records with no
 * alignment guarantee, so fields are never read through a cast pointer. The
 * packed structs below exist only to pin every field to the offset given in
 * docs/lc0-training-data.md (each one is checked by a _Static_assert); code
 * reads fields with LC_REC_GET, which memcpy's from a byte pointer using those
 * offsets. Everything here is pure: any thread may call it, nothing is owned.
 *
 * The host is assumed little-endian (as the records are); lc0 and its trainers
 * make the same assumption.
 */
#ifndef LC_FORMAT_LC0_RECORD_H
#define LC_FORMAT_LC0_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LC_POLICY_SIZE 1858
#define LC_RECORD_PLANES 104

#define LC_V3_RECORD_SIZE 8276
#define LC_V4_RECORD_SIZE 8292
#define LC_V5_RECORD_SIZE 8308
#define LC_V6_RECORD_SIZE 8356
#define LC_V7_RECORD_SIZE 8396

/* The fields shared by V6 and V7, in order. */
#define LC_V6_FIELDS                                                                               \
    uint32_t version;                                                                              \
    uint32_t input_format;                                                                         \
    float probabilities[LC_POLICY_SIZE];                                                           \
    uint64_t planes[LC_RECORD_PLANES];                                                             \
    uint8_t castling_us_ooo;                                                                       \
    uint8_t castling_us_oo;                                                                        \
    uint8_t castling_them_ooo;                                                                     \
    uint8_t castling_them_oo;                                                                      \
    uint8_t side_to_move_or_enpassant;                                                             \
    uint8_t rule50_count;                                                                          \
    uint8_t invariance_info;                                                                       \
    uint8_t dummy; /* unused in V6; an int8 game result before V6 */                               \
    float root_q;                                                                                  \
    float best_q;                                                                                  \
    float root_d;                                                                                  \
    float best_d;                                                                                  \
    float root_m;                                                                                  \
    float best_m;                                                                                  \
    float plies_left;                                                                              \
    float result_q;                                                                                \
    float result_d;                                                                                \
    float played_q;                                                                                \
    float played_d;                                                                                \
    float played_m;                                                                                \
    float orig_q; /* NaN when unknown */                                                           \
    float orig_d;                                                                                  \
    float orig_m;                                                                                  \
    uint32_t visits;                                                                               \
    uint16_t played_idx;                                                                           \
    uint16_t best_idx;                                                                             \
    float policy_kld;                                                                              \
    float q_st;

/* Layout only: never instantiate these over chunk bytes, use LC_REC_GET. */
typedef struct __attribute__((packed)) lc_v6_record {
    LC_V6_FIELDS
} lc_v6_record;

typedef struct __attribute__((packed)) lc_v7_record {
    LC_V6_FIELDS
    float d_st;
    uint16_t opp_played_idx;
    uint16_t next_played_idx;
    float reserved[8];
} lc_v7_record;

#define LC_REC_ASSERT_OFFSET(type, field, off)                                                     \
    _Static_assert(offsetof(type, field) == (off), #type "." #field " must be at offset " #off)

#define LC_REC_ASSERT_V6_OFFSETS(type)                                                             \
    LC_REC_ASSERT_OFFSET(type, version, 0);                                                        \
    LC_REC_ASSERT_OFFSET(type, input_format, 4);                                                   \
    LC_REC_ASSERT_OFFSET(type, probabilities, 8);                                                  \
    LC_REC_ASSERT_OFFSET(type, planes, 7440);                                                      \
    LC_REC_ASSERT_OFFSET(type, castling_us_ooo, 8272);                                             \
    LC_REC_ASSERT_OFFSET(type, castling_us_oo, 8273);                                              \
    LC_REC_ASSERT_OFFSET(type, castling_them_ooo, 8274);                                           \
    LC_REC_ASSERT_OFFSET(type, castling_them_oo, 8275);                                            \
    LC_REC_ASSERT_OFFSET(type, side_to_move_or_enpassant, 8276);                                   \
    LC_REC_ASSERT_OFFSET(type, rule50_count, 8277);                                                \
    LC_REC_ASSERT_OFFSET(type, invariance_info, 8278);                                             \
    LC_REC_ASSERT_OFFSET(type, dummy, 8279);                                                       \
    LC_REC_ASSERT_OFFSET(type, root_q, 8280);                                                      \
    LC_REC_ASSERT_OFFSET(type, best_q, 8284);                                                      \
    LC_REC_ASSERT_OFFSET(type, root_d, 8288);                                                      \
    LC_REC_ASSERT_OFFSET(type, best_d, 8292);                                                      \
    LC_REC_ASSERT_OFFSET(type, root_m, 8296);                                                      \
    LC_REC_ASSERT_OFFSET(type, best_m, 8300);                                                      \
    LC_REC_ASSERT_OFFSET(type, plies_left, 8304);                                                  \
    LC_REC_ASSERT_OFFSET(type, result_q, 8308);                                                    \
    LC_REC_ASSERT_OFFSET(type, result_d, 8312);                                                    \
    LC_REC_ASSERT_OFFSET(type, played_q, 8316);                                                    \
    LC_REC_ASSERT_OFFSET(type, played_d, 8320);                                                    \
    LC_REC_ASSERT_OFFSET(type, played_m, 8324);                                                    \
    LC_REC_ASSERT_OFFSET(type, orig_q, 8328);                                                      \
    LC_REC_ASSERT_OFFSET(type, orig_d, 8332);                                                      \
    LC_REC_ASSERT_OFFSET(type, orig_m, 8336);                                                      \
    LC_REC_ASSERT_OFFSET(type, visits, 8340);                                                      \
    LC_REC_ASSERT_OFFSET(type, played_idx, 8344);                                                  \
    LC_REC_ASSERT_OFFSET(type, best_idx, 8346);                                                    \
    LC_REC_ASSERT_OFFSET(type, policy_kld, 8348);                                                  \
    LC_REC_ASSERT_OFFSET(type, q_st, 8352)

LC_REC_ASSERT_V6_OFFSETS(lc_v6_record);
LC_REC_ASSERT_V6_OFFSETS(lc_v7_record);
LC_REC_ASSERT_OFFSET(lc_v7_record, d_st, 8356);
LC_REC_ASSERT_OFFSET(lc_v7_record, opp_played_idx, 8360);
LC_REC_ASSERT_OFFSET(lc_v7_record, next_played_idx, 8362);
LC_REC_ASSERT_OFFSET(lc_v7_record, reserved, 8364);
_Static_assert(sizeof(lc_v6_record) == LC_V6_RECORD_SIZE, "V6 record is 8356 bytes");
_Static_assert(sizeof(lc_v7_record) == LC_V7_RECORD_SIZE, "V7 record is 8396 bytes");
_Static_assert(sizeof(float) == 4, "records store IEEE binary32 floats");

#define LC_REC_FIELD_SIZE_(type, field) sizeof(((const type *)0)->field)

/*
 * Copy a field shared by V6 and V7 from an unaligned record at rec_bytes into
 * the lvalue out (a scalar, or an array for probabilities/planes). A mismatch
 * between sizeof(out) and the field is a compile error. V7-only fields are
 * deliberately unreachable here (they would read past a V6 record): use
 * LC_REC7_GET, and only on records whose version is 7.
 */
#define LC_REC_GET_(type, rec_bytes, field, out)                                                   \
    do {                                                                                           \
        _Static_assert(sizeof(out) == LC_REC_FIELD_SIZE_(type, field),                             \
                       "LC_REC_GET: destination size differs from field " #field);                 \
        memcpy(&(out), (const unsigned char *)(rec_bytes) + offsetof(type, field), sizeof(out));   \
    } while (0)

#define LC_REC_GET(rec_bytes, field, out) LC_REC_GET_(lc_v6_record, rec_bytes, field, out)
#define LC_REC7_GET(rec_bytes, field, out) LC_REC_GET_(lc_v7_record, rec_bytes, field, out)

/* One element of probabilities[] or planes[] without copying the array. */
static inline float lc_rec_probability(const void *rec_bytes, size_t i)
{
    float v;
    memcpy(&v, (const unsigned char *)rec_bytes + offsetof(lc_v6_record, probabilities) + 4 * i, 4);
    return v;
}

static inline uint64_t lc_rec_plane(const void *rec_bytes, size_t i)
{
    uint64_t v;
    memcpy(&v, (const unsigned char *)rec_bytes + offsetof(lc_v6_record, planes) + 8 * i, 8);
    return v;
}

/* A plane word's squares in square order (bit s = square s), and back: a
 * plane word keeps square s at bit s ^ 7 (the bits of every byte, a rank,
 * reversed), so the same reversal goes both ways. On a square-order mask it
 * mirrors the files. */
static inline uint64_t lc_plane_squares(uint64_t w)
{
    w = ((w >> 1) & 0x5555555555555555ull) | ((w & 0x5555555555555555ull) << 1);
    w = ((w >> 2) & 0x3333333333333333ull) | ((w & 0x3333333333333333ull) << 2);
    return ((w >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((w & 0x0F0F0F0F0F0F0F0Full) << 4);
}

/* Record size in bytes for a record version: 3..7, else 0 (unknown). */
size_t lc_record_size_for_version(uint32_t version);

#endif
