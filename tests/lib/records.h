/*
 * records: writing lc0 training records by hand in the tests, at the byte
 * offsets docs/lc0-training-data.md gives (the records are packed and
 * little-endian, as on this machine). The tests that need a record with a
 * chosen value in a chosen field build it with these; format/lc0/record.h
 * has the record sizes.
 */
#ifndef LC_TEST_RECORDS_H
#define LC_TEST_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define REC_OFF_PROBS 8 /* 1858 float32 probabilities, -1 for an illegal move */

static inline void rec_put_u8(uint8_t *r, size_t off, uint8_t v)
{
    r[off] = v;
}

static inline void rec_put_u16(uint8_t *r, size_t off, uint16_t v)
{
    memcpy(r + off, &v, 2);
}

static inline void rec_put_u32(uint8_t *r, size_t off, uint32_t v)
{
    memcpy(r + off, &v, 4);
}

static inline void rec_put_u64(uint8_t *r, size_t off, uint64_t v)
{
    memcpy(r + off, &v, 8);
}

static inline void rec_put_f32(uint8_t *r, size_t off, float v)
{
    memcpy(r + off, &v, 4);
}

/* Probability i of the policy (0..1857). */
static inline void rec_put_prob(uint8_t *r, unsigned i, float v)
{
    rec_put_f32(r, REC_OFF_PROBS + 4 * (size_t)i, v);
}

/* Halve every share of a record's policy (the entries above 0): a policy
 * that summed to 1 sums to 0.5, which upstream's Validate refuses. */
static inline void rec_halve_policy(uint8_t *r)
{
    for (unsigned k = 0; k < 1858; k++) {
        float p;
        memcpy(&p, r + REC_OFF_PROBS + 4 * (size_t)k, 4);
        if (p > 0) {
            p /= 2;
            memcpy(r + REC_OFF_PROBS + 4 * (size_t)k, &p, 4);
        }
    }
}

#endif
