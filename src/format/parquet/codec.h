/*
 * codec: the Parquet page codecs that come from optional libraries, LZ4 and
 * LZ4_RAW (liblz4) and BROTLI (libbrotlidec), each decided when lcmon is
 * built (meson's lz4 and brotli features, LC_HAVE_LZ4 and LC_HAVE_BROTLI in
 * lc_config.h), and what a build without one says.
 *
 * Each decompresses one whole page into out, which holds exactly out_len
 * bytes, the size the page header gives: a page that decodes to fewer or
 * more bytes, or does not decode, is LC_EFORMAT with a message that names
 * the codec; nothing is written past out_len. In a build without the
 * library, every function here returns -ENOTSUP with the message of
 * lc_parquet_codec_missing. Stateless and thread-safe (a decoder context
 * is made per call where the library needs one).
 */
#ifndef LC_FORMAT_PARQUET_CODEC_H
#define LC_FORMAT_PARQUET_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* An LZ4 block expands its input at most 255 times (a match's length
 * grows by 255 for every byte that continues it); frames and Hadoop's
 * framing only add to the input. A page header that claims more is refused
 * before the page is allocated. */
#define LC_PQ_LZ4_MAX_RATIO 255

/* LZ4_RAW: one bare LZ4 block. */
int lc_pq_lz4_raw(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len, lc_error *err);

/* LZ4, the deprecated codec, which writers filled in three ways; tried in
 * this order, as other readers do: Hadoop's framing (repeated [decompressed
 * size][compressed size], big-endian 32-bit, then a bare block: what
 * arrow-rs, Arrow C++ and parquet-mr write), the LZ4 frame format (magic
 * 0x184D2204), a bare block (older Arrow C++). The first that gives exactly
 * out_len bytes from all of the input wins. */
int lc_pq_lz4(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len, lc_error *err);

/* BROTLI: one Brotli stream, nothing after it. */
int lc_pq_brotli(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len, lc_error *err);

#endif
