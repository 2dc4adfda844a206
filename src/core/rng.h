/*
 * rng: a small, fast PRNG (xoshiro256**) with explicit seeds.
 *
 * Each thread owns its generator; nothing here is shared or locked. A
 * generator is seeded from (seed, stream) through splitmix64, so that the
 * workers of a stage get independent streams from one configured seed and a
 * run is reproducible for a given seed and thread count.
 */
#ifndef LC_CORE_RNG_H
#define LC_CORE_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct lc_rng {
    uint64_t s[4];
} lc_rng;

/* Seed r from the run's seed and a stream: generators seeded with the same
 * seed and different streams draw independent sequences, so that each use
 * of randomness stays the same when another use changes. The streams of the
 * stages are named below (most values spell their use in ASCII, so that no
 * two collide by accident; the games stream is a small number no other
 * use takes); per-item streams (a chunk's index, a worker's
 * number) are passed as they are. */
void lc_rng_seed(lc_rng *r, uint64_t seed, uint64_t stream);
#define LC_RNG_STREAM_POOL 0x706f6f6cu            /* "pool": the chunk pool's draws */
#define LC_RNG_STREAM_SAMPLER 0x73616d70u         /* "samp": the reservoir's swaps */
#define LC_RNG_SEED_TOKENIZER 0x746f6b656e697a65u /* "tokenize", xored into the seed */
#define LC_RNG_STREAM_GAMES 2u /* a Parquet file's games, in their shuffled order */
uint64_t lc_rng_next(lc_rng *r);
/* Uniform in [0, n), without modulo bias (Lemire's method); n > 0. */
uint64_t lc_rng_below(lc_rng *r, uint64_t n);
/* Uniform double in [0, 1). */
double lc_rng_double(lc_rng *r);
/* Fisher-Yates over n elements of `size` bytes (at most 64), from the end. */
void lc_rng_shuffle(lc_rng *r, void *base, size_t n, size_t size);
/* The top 53 bits of h as a double in [0, 1): a hash (lc_mix64) read as a
 * uniform number, for choices that must depend on their inputs only. */
double lc_unit(uint64_t h);
/* One splitmix64 step: a good 64-bit mix of x (stateless hash). */
uint64_t lc_mix64(uint64_t x);
/* FNV-1a of n bytes: a stable hash of a key (a file's sort key, a game id)
 * that the same input gives on every machine and run; mix it (lc_mix64)
 * before taking bits of it. */
uint64_t lc_fnv1a(const void *p, size_t n);
/* The same continued over more bytes (a file read in blocks, several
 * fields): lc_fnv1a(a ++ b) == lc_fnv1a_more(lc_fnv1a(a), b). */
uint64_t lc_fnv1a_more(uint64_t h, const void *p, size_t n);
/* A fast 64-bit hash of n bytes (four lanes of xxHash64's round, 32 bytes
 * a step, the rest bytewise, mixed with the length): a fingerprint of a
 * buffer's contents to tell it from another, about a microsecond for a
 * compressed game (tens of kilobytes). The same on every machine of one
 * byte order; not kept anywhere. */
uint64_t lc_hash64(const void *p, size_t n);

#endif
