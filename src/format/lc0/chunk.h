/*
 * chunk: decode one chunk (one game) from its gzip bytes into a buffer of
 * whole records, checking what can be checked without looking inside them.
 *
 * Pure and reentrant: any thread may decode. The decoded buffer belongs to
 * the lc_chunk_data until lc_chunk_data_fini.
 */
#ifndef LC_FORMAT_LC0_CHUNK_H
#define LC_FORMAT_LC0_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "format/gzip.h"

typedef struct lc_chunk_data {
    uint8_t *data; /* n_records * record_size bytes, malloc'd (or pages: below) */
    bool pages;    /* data is lc_gunzip_pages's (lc_chunk_decode_as): never free() it */
    size_t size;
    uint32_t version;   /* from the first record's first u32 */
    size_t record_size; /* lc_record_size_for_version(version) */
    size_t n_records;
    /* lc_chunk_source_load: a fingerprint of the bytes read, lc_hash64 of
     * the gzip member as stored (a raw tar member's records are not hashed:
     * 0, unknown); 0 elsewhere. */
    uint64_t content;
} lc_chunk_data;

/*
 * Gunzip gz (see lc_gunzip for its errors and max_output) and check the result:
 *   decompresses to nothing                     LC_EEMPTY
 *   shorter than a version field (4 bytes)      LC_EFORMAT
 *   first u32 is not a known record version     LC_EVERSION
 *   size not a multiple of that record size     LC_EFORMAT (both numbers in the message)
 * On error *out is zeroed and holds nothing. Messages do not name the file;
 * the caller prefixes that.
 */
int lc_chunk_decode(const uint8_t *gz, size_t gz_len, lc_inflate_backend b, size_t max_output,
                    lc_chunk_data *out, lc_error *err);

/* The same, with `pages` into pages of its own (lc_gunzip_pages: for a
 * buffer dropped soon, in a thread whose heap keeps long-lived memory);
 * lc_chunk_data_fini gives it back. */
int lc_chunk_decode_as(const uint8_t *gz, size_t gz_len, lc_inflate_backend b, size_t max_output,
                       bool pages, lc_chunk_data *out, lc_error *err);

/*
 * The checks of lc_chunk_decode after the gunzip, on records that were never
 * compressed (a raw tar member): data (malloc'd, size bytes) becomes *out's
 * on success and is freed on error. Same codes and messages.
 */
int lc_chunk_accept(uint8_t *data, size_t size, lc_chunk_data *out, lc_error *err);

/*
 * The record checks (lc_record_check, format/lc0/frame.h) over every record
 * of c, in order: 0 when all pass, else the first bad record's code, its
 * index in *bad_at and its reason in *reason. The rules of the
 * chunk_validator stage, of the pool's store and of `lcmon chunks check`.
 */
int lc_chunk_check(const lc_chunk_data *c, uint32_t *bad_at, const char **reason);

/* Free the data and zero the struct; accepts NULL and a zeroed struct. */
void lc_chunk_data_fini(lc_chunk_data *c);

#endif
