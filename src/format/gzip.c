/*
 * gzip: see gzip.h. Both backends share the same contract and error texts so
 * that callers (and tests) cannot tell them apart except by speed.
 *
 * libdeflate inflates a whole member in one call into a buffer that must be
 * big enough, so the output is sized from the ISIZE trailer (exact for the
 * usual single-member chunk) and doubled on LIBDEFLATE_INSUFFICIENT_SPACE.
 * zlib streams into the same kind of buffer and restarts at each member end.
 * No state outlives a call, so everything here is thread-safe.
 */
#include "format/gzip.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zlib.h>

#include "lc_config.h"

#if LC_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

/* Deflate never compresses better than about 1032:1; an ISIZE above that is a
 * lie or belongs to a multi-member stream, and is not worth allocating for. */
#define LC_DEFLATE_MAX_RATIO 1032
#define LC_GUNZIP_MIN_CAPACITY 4096

bool lc_is_gzip(const uint8_t *p, size_t len)
{
    return p && len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

bool lc_inflate_backend_available(lc_inflate_backend b)
{
    switch (b) {
    case LC_INFLATE_AUTO:
    case LC_INFLATE_ZLIB:
        return true;
    case LC_INFLATE_LIBDEFLATE:
        return LC_HAVE_LIBDEFLATE;
    }
    return false;
}

const char *lc_inflate_backend_name(lc_inflate_backend b)
{
    switch (b) {
    case LC_INFLATE_AUTO:
        return "auto";
    case LC_INFLATE_ZLIB:
        return "zlib";
    case LC_INFLATE_LIBDEFLATE:
        return "libdeflate";
    }
    return "?";
}

/* A first output size: the last member's ISIZE when it is plausible for the
 * input size, else a few times the input; never above max. */
static size_t initial_capacity(const uint8_t *in, size_t in_len, size_t max)
{
    size_t ceiling = in_len > max / LC_DEFLATE_MAX_RATIO ? max : in_len * LC_DEFLATE_MAX_RATIO;
    size_t guess = in_len > max / 4 ? max : in_len * 4;
    if (in_len >= 4) {
        const uint8_t *t = in + in_len - 4;
        size_t isize = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
        if (isize <= ceiling)
            guess = isize;
    }
    if (guess < LC_GUNZIP_MIN_CAPACITY)
        guess = LC_GUNZIP_MIN_CAPACITY;
    return guess > max ? max : guess;
}

static int bomb_error(lc_error *err, size_t max)
{
    return lc_error_set(err, LC_EFORMAT, "gzip stream inflates to more than %zu bytes (the limit)",
                        max);
}

static int garbage_error(lc_error *err, size_t pos, size_t in_len)
{
    return lc_error_set(err, LC_EGZIP,
                        "trailing garbage after gzip member: %zu bytes at offset %zu are not a "
                        "gzip member",
                        in_len - pos, pos);
}

/* The output buffer: malloc'd, or with `pages` anonymous pages of its own
 * (lc_gunzip_pages), grown by mremap and given back whole by munmap. */
static uint8_t *buf_new(bool pages, size_t cap)
{
    if (!pages)
        return lc_xmalloc(cap);
    void *b = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED)
        lc_fatal("out of memory mapping %zu bytes to inflate into", cap);
    return b;
}

static uint8_t *buf_resize(bool pages, uint8_t *buf, size_t cap, size_t new_cap)
{
    if (!pages)
        return lc_xrealloc(buf, new_cap);
    void *b = mremap(buf, cap, new_cap, MREMAP_MAYMOVE);
    if (b == MAP_FAILED)
        lc_fatal("out of memory growing an inflate buffer to %zu bytes", new_cap);
    return b;
}

static void buf_free(bool pages, uint8_t *buf, size_t cap)
{
    if (pages)
        munmap(buf, cap);
    else
        free(buf);
}

/* Give back a large unused tail; a chunk buffer may live a while. Pages are
 * cut to the length, which lc_gunzip_pages_free then unmaps. */
static uint8_t *shrink(bool pages, uint8_t *buf, size_t cap, size_t len)
{
    if (pages || cap - len > 65536)
        return buf_resize(pages, buf, cap, len ? len : 1);
    return buf;
}

#if LC_HAVE_LIBDEFLATE
/*
 * libdeflate skips the optional header CRC (FHCRC) that zlib checks, so a
 * member whose header CRC is wrong would be good in one build and corrupt in
 * the other. Check it here, as zlib does: the low 16 bits of the CRC-32 of
 * the header bytes before it. A header that is cut short is left to
 * libdeflate, which refuses it as zlib does.
 */
static int check_header_crc(const uint8_t *m, size_t n, size_t pos, lc_error *err)
{
    enum { FHCRC = 2, FEXTRA = 4, FNAME = 8, FCOMMENT = 16 };
    if (n < 10 || !(m[3] & FHCRC))
        return 0;
    size_t k = 10;
    if (m[3] & FEXTRA) {
        if (n < k + 2)
            return 0;
        k += 2 + ((size_t)m[k] | (size_t)m[k + 1] << 8);
    }
    for (int field = FNAME; field <= FCOMMENT; field <<= 1) {
        if (!(m[3] & field))
            continue;
        const uint8_t *end = k < n ? memchr(m + k, 0, n - k) : NULL;
        if (!end)
            return 0;
        k = (size_t)(end - m) + 1;
    }
    if (k > n || n - k < 2)
        return 0;
    unsigned want = (unsigned)m[k] | (unsigned)m[k + 1] << 8;
    if ((crc32(0, m, (uInt)k) & 0xffffu) != want)
        return lc_error_set(err, LC_EGZIP,
                            "corrupt gzip data at offset %zu (member at offset %zu): header crc "
                            "mismatch",
                            pos + k + 2, pos);
    return 0;
}

static int gunzip_libdeflate(const uint8_t *in, size_t in_len, size_t max, bool pages,
                             uint8_t **out, size_t *out_len, lc_error *err)
{
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    if (!d)
        lc_fatal("out of memory allocating a libdeflate decompressor");
    size_t cap = initial_capacity(in, in_len, max);
    uint8_t *buf = buf_new(pages, cap);
    size_t len = 0, pos = 0;
    int rc = 0;
    while (pos < in_len) {
        if (pos > 0 && !lc_is_gzip(in + pos, in_len - pos)) {
            rc = garbage_error(err, pos, in_len);
            break;
        }
        rc = check_header_crc(in + pos, in_len - pos, pos, err);
        if (rc < 0)
            break;
        size_t used = 0, produced = 0;
        enum libdeflate_result r = libdeflate_gzip_decompress_ex(
            d, in + pos, in_len - pos, buf + len, cap - len, &used, &produced);
        if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
            if (cap >= max) {
                rc = bomb_error(err, max);
                break;
            }
            size_t grown = cap > max / 2 ? max : cap * 2;
            buf = buf_resize(pages, buf, cap, grown);
            cap = grown;
            continue;
        }
        if (r != LIBDEFLATE_SUCCESS || used == 0) {
            rc = lc_error_set(err, LC_EGZIP,
                              "corrupt or truncated gzip member at offset %zu (of %zu bytes)", pos,
                              in_len);
            break;
        }
        pos += used;
        len += produced;
    }
    libdeflate_free_decompressor(d);
    if (rc < 0) {
        buf_free(pages, buf, cap);
        return rc;
    }
    *out = shrink(pages, buf, cap, len);
    *out_len = len;
    return 0;
}
#endif

static int gunzip_zlib(const uint8_t *in, size_t in_len, size_t max, bool pages, uint8_t **out,
                       size_t *out_len, lc_error *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    int zr = inflateInit2(&zs, MAX_WBITS + 16);
    if (zr == Z_MEM_ERROR)
        lc_fatal("out of memory initialising zlib");
    if (zr != Z_OK)
        lc_fatal("inflateInit2 failed: %d (zlib %s)", zr, zlibVersion());

    /* One byte of slack above max lets "exactly max" succeed and "more than
     * max" be seen. */
    size_t cap = initial_capacity(in, in_len, max) + 1;
    uint8_t *buf = buf_new(pages, cap);
    size_t len = 0, fed = 0, member_start = 0;
    int rc = 0;
    zs.next_in = (Bytef *)in; /* zlib's API is not const-correct; it never writes */
    for (;;) {
        if (zs.avail_in == 0 && fed < in_len) {
            size_t n = in_len - fed > UINT_MAX ? UINT_MAX : in_len - fed;
            zs.avail_in = (uInt)n;
            fed += n;
        }
        if (len == cap) {
            if (cap > max) {
                rc = bomb_error(err, max);
                break;
            }
            size_t grown = cap > max / 2 ? max + 1 : cap * 2;
            buf = buf_resize(pages, buf, cap, grown);
            cap = grown;
        }
        size_t room = cap - len > UINT_MAX ? UINT_MAX : cap - len;
        zs.next_out = buf + len;
        zs.avail_out = (uInt)room;
        zr = inflate(&zs, Z_NO_FLUSH);
        len = (size_t)(zs.next_out - buf);
        size_t pos = (size_t)(zs.next_in - in);
        if (len > max) {
            rc = bomb_error(err, max);
            break;
        }
        if (zr == Z_STREAM_END) {
            if (pos == in_len)
                break;
            if (!lc_is_gzip(in + pos, in_len - pos)) {
                rc = garbage_error(err, pos, in_len);
                break;
            }
            inflateReset(&zs);
            member_start = pos;
            continue;
        }
        if (zr == Z_OK)
            continue;
        if (zr == Z_BUF_ERROR) {
            if (zs.avail_out == 0)
                continue; /* only the output was full; it grows above */
            rc = lc_error_set(err, LC_EGZIP,
                              "truncated gzip stream: input ends at offset %zu inside the member "
                              "starting at offset %zu",
                              pos, member_start);
            break;
        }
        if (zr == Z_MEM_ERROR)
            lc_fatal("out of memory in zlib inflate");
        rc = lc_error_set(err, LC_EGZIP,
                          "corrupt gzip data at offset %zu (member at offset %zu): %s", pos,
                          member_start, zs.msg ? zs.msg : "zlib error");
        break;
    }
    inflateEnd(&zs);
    if (rc < 0) {
        buf_free(pages, buf, cap);
        return rc;
    }
    *out = shrink(pages, buf, cap, len);
    *out_len = len;
    return 0;
}

static int gunzip(const uint8_t *in, size_t in_len, lc_inflate_backend backend, size_t max_output,
                  bool pages, uint8_t **out, size_t *out_len, lc_error *err)
{
    *out = NULL;
    *out_len = 0;
    if (!lc_inflate_backend_available(backend))
        return lc_error_set(err, -ENOTSUP, "inflate backend %s is not built in",
                            lc_inflate_backend_name(backend));
    if (in_len == 0)
        return lc_error_set(err, LC_EEMPTY, "empty gzip stream (0 bytes)");
    if (!lc_is_gzip(in, in_len))
        return lc_error_set(err, LC_EFORMAT, "not a gzip stream (starts with %02x %02x, not 1f 8b)",
                            in[0], in_len > 1 ? in[1] : 0);
    size_t max = max_output ? max_output : LC_GUNZIP_MAX_OUTPUT_DEFAULT;
#if LC_HAVE_LIBDEFLATE
    if (backend != LC_INFLATE_ZLIB)
        return gunzip_libdeflate(in, in_len, max, pages, out, out_len, err);
#endif
    return gunzip_zlib(in, in_len, max, pages, out, out_len, err);
}

int lc_gunzip(const uint8_t *in, size_t in_len, lc_inflate_backend backend, size_t max_output,
              uint8_t **out, size_t *out_len, lc_error *err)
{
    return gunzip(in, in_len, backend, max_output, false, out, out_len, err);
}

int lc_gunzip_pages(const uint8_t *in, size_t in_len, lc_inflate_backend backend, size_t max_output,
                    uint8_t **out, size_t *out_len, lc_error *err)
{
    return gunzip(in, in_len, backend, max_output, true, out, out_len, err);
}

void lc_gunzip_pages_free(uint8_t *out, size_t out_len)
{
    if (out)
        munmap(out, out_len ? out_len : 1);
}

int lc_inflate_exact(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len, lc_error *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    /* 15 + 32: a gzip stream (as Parquet says) or a zlib one (as some
     * writers write). */
    if (inflateInit2(&zs, 15 + 32) != Z_OK)
        lc_fatal("zlib: cannot initialise an inflate stream");
    zs.next_in = (Bytef *)in; /* zlib's API is not const-correct; it never writes */
    zs.next_out = out;
    size_t in_left = in_len, out_left = out_len;
    int zr = Z_OK;
    for (;;) {
        uInt ai = in_left > 0x40000000 ? 0x40000000 : (uInt)in_left;
        uInt ao = out_left > 0x40000000 ? 0x40000000 : (uInt)out_left;
        zs.avail_in = ai;
        zs.avail_out = ao;
        zr = inflate(&zs, Z_NO_FLUSH);
        in_left -= ai - zs.avail_in;
        out_left -= ao - zs.avail_out;
        if (zr == Z_STREAM_END) {
            /* Concatenated members: go on while input remains. */
            if (in_left == 0 || out_left == 0)
                break;
            if (inflateReset(&zs) != Z_OK)
                break;
            continue;
        }
        if (zr != Z_OK || (ai == zs.avail_in && ao == zs.avail_out))
            break;
    }
    char zmsg[128];
    snprintf(zmsg, sizeof zmsg, "%s", zs.msg ? zs.msg : "error");
    inflateEnd(&zs);
    if (zr != Z_STREAM_END && zr != Z_OK && zr != Z_BUF_ERROR)
        return lc_error_set(err, LC_EFORMAT, "is corrupt (zlib: %s)", zmsg);
    if (out_left != 0 || zr != Z_STREAM_END)
        return lc_error_set(err, LC_EFORMAT, "decompresses to %s bytes, the header says %zu",
                            out_left != 0 ? "fewer" : "more", out_len);
    return 0;
}
