/*
 * gzip: inflate a whole in-memory gzip stream (one or more concatenated
 * members) into one malloc'd buffer, with zlib or libdeflate.
 *
 * Chunks are small (megabytes) and read whole, so whole-buffer inflation is
 * the natural shape: libdeflate does it fastest, zlib is always there as the
 * fallback and the reference. Every call is independent and reentrant; any
 * thread may call any function here at any time. The output belongs to the
 * caller. Library errors are translated here into LC_E* codes whose message
 * gives the byte offset in the compressed input.
 */
#ifndef LC_FORMAT_GZIP_H
#define LC_FORMAT_GZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef enum { LC_INFLATE_AUTO, LC_INFLATE_ZLIB, LC_INFLATE_LIBDEFLATE } lc_inflate_backend;

/* The bound on the decompressed size of one stream that a caller's 0
 * means, so that a gzip bomb costs an error instead of all memory: 256 MiB
 * (a 450-ply V6 game is under 4 MiB). */
#define LC_GUNZIP_MAX_OUTPUT_DEFAULT ((size_t)256 << 20)

/* True for ZLIB and AUTO always, for LIBDEFLATE when built with it. */
bool lc_inflate_backend_available(lc_inflate_backend b);
/* "auto", "zlib", "libdeflate" ("?" for anything else). */
const char *lc_inflate_backend_name(lc_inflate_backend b);

/*
 * Inflate a gzip stream made of one or more concatenated members into *out
 * (malloc'd, caller frees; non-NULL on success even when *out_len is 0).
 * AUTO means libdeflate when built with it, else zlib. max_output bounds
 * the inflated size (0: LC_GUNZIP_MAX_OUTPUT_DEFAULT). Errors (*out is NULL):
 *   in_len == 0                          LC_EEMPTY  "empty gzip stream"
 *   no 1f 8b magic at the start          LC_EFORMAT "not a gzip stream"
 *   corrupt or truncated member          LC_EGZIP   with the byte offset
 *   bytes after a member that are not
 *   another gzip member                  LC_EGZIP   "trailing garbage"
 *   output above max_output              LC_EFORMAT
 *   LIBDEFLATE requested, not built in   -ENOTSUP
 */
int lc_gunzip(const uint8_t *in, size_t in_len, lc_inflate_backend backend, size_t max_output,
              uint8_t **out, size_t *out_len, lc_error *err);

/*
 * lc_gunzip's output in anonymous pages of its own instead of the heap,
 * freed by lc_gunzip_pages_free(out, out_len) (never by free). For a buffer
 * that is used once and dropped, in a thread whose heap holds long-lived
 * allocations: freed, its pages go back to the system at once, where a
 * freed heap buffer of this size stays resident in the heap (glibc raises
 * its mmap threshold to the largest buffer freed, and trims a thread's
 * heap only past twice that), between the allocations that stayed. The
 * cost is the page faults of fresh pages at each call.
 */
int lc_gunzip_pages(const uint8_t *in, size_t in_len, lc_inflate_backend backend, size_t max_output,
                    uint8_t **out, size_t *out_len, lc_error *err);
void lc_gunzip_pages_free(uint8_t *out, size_t out_len);

/*
 * Inflate a gzip or zlib stream (members may follow one another) into
 * exactly out_len bytes at out: Parquet's GZIP pages, whose header gives
 * the size. LC_EFORMAT when the data is corrupt ("is corrupt (zlib:
 * ...)"), or inflates to fewer or more bytes ("decompresses to fewer bytes,
 * the header says N"); callers add what the bytes were.
 */
int lc_inflate_exact(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len, lc_error *err);

/* True when p starts with the gzip magic 1f 8b. */
bool lc_is_gzip(const uint8_t *p, size_t len);

#endif
