/*
 * fuzz_inflate: the zlib and libdeflate inflate paths, differentially.
 *
 * The same bytes must get the same verdict from both (accepted, or refused
 * with the same error code) and, when accepted, the same output; otherwise
 * the same file is a good chunk in one build and a dropped one in another.
 * The input is used as it is, and also behind a valid gzip header whose
 * flags, optional fields and header CRC the first bytes choose, so that the
 * header paths (FEXTRA, FNAME, FCOMMENT, FHCRC) are reached with valid and
 * invalid values alike.
 *
 * In a build without libdeflate the target still checks the zlib path's
 * contract (a refusal leaves nothing allocated; the output bound holds).
 */
#include "fuzz.h"

#include "format/gzip.h"

#include <string.h>
#include <zlib.h>

static void one(const uint8_t *in, size_t n)
{
    uint8_t *a = NULL, *b = NULL;
    size_t a_len = 7, b_len = 7;
    lc_error ea = {0}, eb = {0};
    int ra = lc_gunzip(in, n, LC_INFLATE_ZLIB, FUZZ_MAX_OUTPUT, &a, &a_len, &ea);
    FUZZ_CHECK(ra < 0 ? (a == NULL && a_len == 0 && ea.msg[0]) : (a != NULL));
    FUZZ_CHECK(ra < 0 || a_len <= FUZZ_MAX_OUTPUT);
    if (lc_inflate_backend_available(LC_INFLATE_LIBDEFLATE)) {
        int rb = lc_gunzip(in, n, LC_INFLATE_LIBDEFLATE, FUZZ_MAX_OUTPUT, &b, &b_len, &eb);
        FUZZ_CHECK(rb < 0 ? (b == NULL && b_len == 0 && eb.msg[0]) : (b != NULL));
        /* The one known difference: libdeflate decodes the codes RFC 1951
         * reserves (literal/length 286-287, distances 30-31, code counts
         * past 286 and 30), which never occur in a stream an encoder wrote,
         * where zlib refuses them. Its output still passed the member's
         * CRC-32 and length, so it is the bytes that were compressed.
         * docs/fuzzing.md says more. */
        bool reserved = ra == LC_EGZIP && rb == 0 &&
                        (strstr(ea.msg, "invalid literal/length code") ||
                         strstr(ea.msg, "invalid distance code") ||
                         strstr(ea.msg, "too many length or distance symbols"));
        if (!reserved && ((ra < 0) != (rb < 0) || (ra < 0 && ra != rb))) {
            fprintf(stderr, "zlib: %d %s\nlibdeflate: %d %s\n", ra, ra < 0 ? ea.msg : "ok", rb,
                    rb < 0 ? eb.msg : "ok");
            FUZZ_CHECK(!"the two inflate paths disagree on the verdict");
        }
        if (ra == 0) {
            FUZZ_CHECK(a_len == b_len);
            FUZZ_CHECK(memcmp(a, b, a_len) == 0);
        }
    }
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(data, size);
    if (size < 3)
        return 0;
    /* A header built from the first bytes, then the rest as the deflate
     * body and trailer. */
    fuzz_input in = {data, size};
    uint8_t flags = fuzz_u8(&in) & 0x1f; /* FTEXT FHCRC FEXTRA FNAME FCOMMENT */
    uint8_t twist = fuzz_u8(&in);
    uint8_t *buf = malloc(size + 64);
    size_t k = 0;
    buf[k++] = 0x1f;
    buf[k++] = 0x8b;
    buf[k++] = 8;
    buf[k++] = (uint8_t)(flags | (twist & 0x80 ? 0x20 : 0)); /* a reserved bit, sometimes */
    memset(buf + k, 0, 6);
    k += 6;
    if (flags & 4) { /* FEXTRA: a length, then that many bytes (maybe fewer) */
        uint8_t xl = fuzz_u8(&in) & 15;
        buf[k++] = xl;
        buf[k++] = 0;
        for (uint8_t i = 0; i < xl && in.n; i++)
            buf[k++] = fuzz_u8(&in);
    }
    if (flags & 8) { /* FNAME */
        memcpy(buf + k, "name", 5);
        k += 5;
    }
    if (flags & 16) { /* FCOMMENT */
        memcpy(buf + k, "c", 2);
        k += 2;
    }
    if (flags & 2) { /* FHCRC: right, or off by the twist */
        uint32_t crc = (uint32_t)crc32(0, buf, (uInt)k);
        if (twist & 1)
            crc ^= (uint32_t)(twist | 1) << 1;
        buf[k++] = (uint8_t)crc;
        buf[k++] = (uint8_t)(crc >> 8);
    }
    memcpy(buf + k, in.p, in.n);
    k += in.n;
    one(buf, k);
    free(buf);
    return 0;
}
