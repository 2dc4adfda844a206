/* The optional C kernel of lcmon.expand (python/lcmon/expand.py): the
 * "lc0-packed-1" expansion of a batch's planes and policy, each output byte
 * written once. The package loads it with ctypes when the source tree's
 * build made it (build/python/liblcmon_expand.so) and expands with numpy
 * otherwise; both give the same bits (tests/python/test_expand.py checks
 * them against each other and against a reference).
 *
 * Planes: each byte of P_bits is a rank of a plane, 8 squares of 0.0 or
 * 1.0 (file f is bit 7 - f), copied from a table of the 256 bytes' rows.
 * The rows go to memory with non-temporal stores where SSE2 has them: a
 * batch's planes (7 MB at 256 positions) never fit in the cache, so reading
 * each line before writing it would only double the memory traffic. */

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define PLANES 112
#define HISTORY_PLANES 104 /* planes 104..111 carry a value each */
#define VALUE_PLANES (PLANES - HISTORY_PLANES)
#define POLICY_SIZE 1858

/* Raised when a function's meaning changes; expand.py checks it. */
#define KERNEL_ABI 1

/* What expand.py calls (through ctypes; below). */
int lcmon_expand_abi(void);
void lcmon_expand_planes(const uint8_t *bits, const float *aux, float *out, int64_t rows,
                         int multiply);
int64_t lcmon_expand_policy(const uint16_t *idx, const float *val, float *out, int64_t rows,
                            int64_t slots);

#define ROW(b)                                                                                     \
    {                                                                                              \
        (float)(((b) >> 7) & 1), (float)(((b) >> 6) & 1), (float)(((b) >> 5) & 1),                 \
            (float)(((b) >> 4) & 1), (float)(((b) >> 3) & 1), (float)(((b) >> 2) & 1),             \
            (float)(((b) >> 1) & 1), (float)((b)&1)                                                \
    }
#define ROWS4(b) ROW(b), ROW((b) + 1), ROW((b) + 2), ROW((b) + 3)
#define ROWS16(b) ROWS4(b), ROWS4((b) + 4), ROWS4((b) + 8), ROWS4((b) + 12)
#define ROWS64(b) ROWS16(b), ROWS16((b) + 16), ROWS16((b) + 32), ROWS16((b) + 48)

/* squares[b]: the 8 squares of a rank whose byte is b. */
static _Alignas(64) const float squares[256][8] = {ROWS64(0), ROWS64(64), ROWS64(128), ROWS64(192)};

int lcmon_expand_abi(void)
{
    return KERNEL_ABI;
}

/* 8 floats from src (16-byte aligned) to dst: streamed when `stream` (dst
 * then 16-byte aligned), else stored. */
static inline void put8(float *dst, const float *src, int stream)
{
#if defined(__SSE2__)
    if (stream) {
        _mm_stream_ps(dst, _mm_load_ps(src));
        _mm_stream_ps(dst + 4, _mm_load_ps(src + 4));
        return;
    }
#else
    (void)stream;
#endif
    memcpy(dst, src, 8 * sizeof(float));
}

/* The value planes of one position: where a bit is set the plane's value,
 * elsewhere +0.0 (multiply = 0: numpy's rule), or the 0.0 or 1.0 square
 * times the value (multiply = 1: what lcmon.torch computes; the same for
 * values that are finite and without a sign bit). */
static void value_planes(const uint8_t *bits, const float *aux, float *out, int multiply,
                         int stream)
{
    for (int p = 0; p < VALUE_PLANES; p++) {
        float a = aux[p];
        for (int rank = 0; rank < 8; rank++) {
            const float *sq = squares[bits[p * 8 + rank]];
            _Alignas(16) float v[8];
            for (int f = 0; f < 8; f++)
                v[f] = multiply ? sq[f] * a : (sq[f] != 0.0f ? a : 0.0f);
            put8(out + (p * 8 + rank) * 8, v, stream);
        }
    }
}

/* P_bits uint8 [rows,112,8] and P_aux float32 [rows,8] into out float32
 * [rows,112,8,8], all C-contiguous. */
void lcmon_expand_planes(const uint8_t *bits, const float *aux, float *out, int64_t rows,
                         int multiply)
{
    int stream = ((uintptr_t)out % 16) == 0;
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *b = bits + r * PLANES * 8;
        float *o = out + r * PLANES * 64;
        for (int i = 0; i < HISTORY_PLANES * 8; i++)
            put8(o + i * 8, squares[b[i]], stream);
        value_planes(b + HISTORY_PLANES * 8, aux + r * VALUE_PLANES, o + HISTORY_PLANES * 64,
                     multiply, stream);
    }
#if defined(__SSE2__)
    if (stream)
        _mm_sfence(); /* the streamed rows are visible before the caller reads them */
#endif
}

/* Q_idx uint16 [rows,slots] and Q_val float32 [rows,slots] into out float32
 * [rows,1858]: -1 everywhere, then val at idx. Each row is made in a
 * buffer on the stack (in the cache), copied out, and the buffer's written
 * entries set back to -1. Not streamed: a batch's policy (1.9 MB at 256
 * positions) is small enough to stay in the cache, and streaming it
 * measured slower than plain stores. Returns -1, or the position in idx of
 * the first index past the policy (rows from its own on are not written). */
int64_t lcmon_expand_policy(const uint16_t *idx, const float *val, float *out, int64_t rows,
                            int64_t slots)
{
    _Alignas(16) float row[POLICY_SIZE];
    for (int j = 0; j < POLICY_SIZE; j++)
        row[j] = -1.0f;
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *ri = idx + r * slots;
        const float *rv = val + r * slots;
        for (int64_t k = 0; k < slots; k++)
            if (ri[k] >= POLICY_SIZE)
                return r * slots + k;
        for (int64_t k = 0; k < slots; k++)
            row[ri[k]] = rv[k];
        memcpy(out + r * POLICY_SIZE, row, sizeof(row));
        for (int64_t k = 0; k < slots; k++)
            row[ri[k]] = -1.0f;
    }
    return -1;
}
