#include "core/rng.h"

#include <string.h>

uint64_t lc_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

void lc_rng_seed(lc_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = lc_mix64(seed) ^ lc_mix64(stream + 0x632be59bd9b4e019u);
    for (int i = 0; i < 4; i++) {
        x += 0x9e3779b97f4a7c15u;
        r->s[i] = lc_mix64(x);
    }
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
        r->s[0] = 1;
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t lc_rng_next(lc_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t lc_rng_below(lc_rng *r, uint64_t n)
{
    unsigned __int128 m = (unsigned __int128)lc_rng_next(r) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t threshold = -n % n;
        while (low < threshold) {
            m = (unsigned __int128)lc_rng_next(r) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double lc_rng_double(lc_rng *r)
{
    return lc_unit(lc_rng_next(r));
}

double lc_unit(uint64_t h)
{
    return (double)(h >> 11) * 0x1.0p-53;
}

uint64_t lc_fnv1a_more(uint64_t h, const void *p, size_t n)
{
    for (const unsigned char *b = p, *end = b + n; b < end; b++)
        h = (h ^ *b) * 1099511628211u; /* FNV-1a's prime */
    return h;
}

uint64_t lc_fnv1a(const void *p, size_t n)
{
    return lc_fnv1a_more(14695981039346656037u, p, n); /* FNV-1a's offset basis */
}

static inline uint64_t rotl64(uint64_t x, int r)
{
    return x << r | x >> (64 - r);
}

uint64_t lc_hash64(const void *p, size_t n)
{
    const uint64_t p1 = 0x9E3779B185EBCA87u, p2 = 0xC2B2AE3D27D4EB4Fu;
    const unsigned char *b = p;
    uint64_t h[4] = {p1 + p2, p2, 0, 0 - p1};
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, b + i, sizeof w);
        for (int k = 0; k < 4; k++)
            h[k] = rotl64(h[k] + w[k] * p2, 31) * p1;
    }
    uint64_t out = rotl64(h[0], 1) + rotl64(h[1], 7) + rotl64(h[2], 12) + rotl64(h[3], 18);
    for (; i < n; i++)
        out = (out ^ b[i]) * p1;
    return lc_mix64(out ^ (uint64_t)n);
}

void lc_rng_shuffle(lc_rng *r, void *base, size_t n, size_t size)
{
    char t[64], *v = base;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)lc_rng_below(r, i);
        memcpy(t, v + (i - 1) * size, size);
        memcpy(v + (i - 1) * size, v + j * size, size);
        memcpy(v + j * size, t, size);
    }
}
