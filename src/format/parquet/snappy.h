/*
 * snappy: a decoder for the raw Snappy block format (not the framing
 * format), the SNAPPY codec of Parquet pages.
 *
 * A block is the uncompressed length as a varint, then literal and copy
 * elements. Every element is checked against both buffers: a literal or a
 * copy that runs past the input or the output, a copy from before the start
 * of the output, or output that ends short of the announced length is an
 * error, never an out-of-bounds access. Stateless and thread-safe.
 */
#ifndef LC_FORMAT_PARQUET_SNAPPY_H
#define LC_FORMAT_PARQUET_SNAPPY_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* The uncompressed length a block announces. LC_EFORMAT when the varint is
 * malformed or above 2^32 - 1 (the format's limit). */
int lc_snappy_uncompressed_length(const uint8_t *in, size_t in_len, size_t *out_len, lc_error *err);

/* Decompress a whole block into out, which must hold exactly out_len bytes,
 * the length the block announces (anything else is LC_EFORMAT). The message
 * of a corrupt block gives the input offset of the bad element. */
int lc_snappy_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
                         lc_error *err);

#endif
