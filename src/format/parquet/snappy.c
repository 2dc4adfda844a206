/*
 * snappy: see snappy.h. Written from the format description: each element
 * starts with a tag byte whose low two bits give its kind.
 *
 *   00  literal: length - 1 in the upper six bits, or (60..63) in the next
 *       1..4 bytes, little-endian; the bytes follow.
 *   01  copy, length 4..11 (bits 2..4), offset 0..2047 (bits 5..7 high, next byte low).
 *   10  copy, length 1..64 (upper six bits + 1), offset in the next 2 bytes.
 *   11  copy, length 1..64, offset in the next 4 bytes.
 *
 * A copy may overlap its own output (offset < length), which repeats a
 * pattern; that case is copied byte by byte.
 */
#include "format/parquet/snappy.h"

#include <string.h>

static int parse_length(const uint8_t *in, size_t in_len, size_t *out_len, size_t *used,
                        lc_error *err)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 5; i++) {
        if (i >= in_len)
            return lc_error_set(err, LC_EFORMAT, "snappy block ends inside its length");
        v |= (uint64_t)(in[i] & 0x7f) << (7 * i);
        if (!(in[i] & 0x80)) {
            if (v > UINT32_MAX)
                return lc_error_set(err, LC_EFORMAT, "snappy block length above 2^32 - 1");
            *out_len = (size_t)v;
            *used = i + 1;
            return 0;
        }
    }
    return lc_error_set(err, LC_EFORMAT, "snappy block length varint longer than 5 bytes");
}

int lc_snappy_uncompressed_length(const uint8_t *in, size_t in_len, size_t *out_len, lc_error *err)
{
    size_t used;
    return parse_length(in, in_len, out_len, &used, err);
}

static int corrupt(lc_error *err, size_t at, const char *what)
{
    return lc_error_set(err, LC_EFORMAT, "corrupt snappy block at input offset %zu: %s", at, what);
}

int lc_snappy_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
                         lc_error *err)
{
    size_t want = 0, ip = 0;
    int rc = parse_length(in, in_len, &want, &ip, err);
    if (rc < 0)
        return rc;
    if (want != out_len)
        return lc_error_set(err, LC_EFORMAT,
                            "snappy block announces %zu bytes where %zu were expected", want,
                            out_len);
    size_t op = 0;
    while (ip < in_len) {
        size_t at = ip;
        uint8_t tag = in[ip++];
        size_t len, offset;
        switch (tag & 3) {
        case 0: {
            len = (size_t)(tag >> 2) + 1;
            if (len > 60) {
                size_t nb = len - 60; /* 1..4 length bytes */
                if (nb > in_len - ip)
                    return corrupt(err, at, "literal length runs past the input");
                len = 0;
                for (size_t i = 0; i < nb; i++)
                    len |= (size_t)in[ip + i] << (8 * i);
                len += 1;
                ip += nb;
            }
            if (len > in_len - ip)
                return corrupt(err, at, "literal runs past the input");
            if (len > out_len - op)
                return corrupt(err, at, "literal runs past the announced length");
            memcpy(out + op, in + ip, len);
            ip += len;
            op += len;
            continue;
        }
        case 1:
            if (in_len - ip < 1)
                return corrupt(err, at, "copy runs past the input");
            len = 4 + ((tag >> 2) & 7);
            offset = ((size_t)(tag >> 5) << 8) | in[ip];
            ip += 1;
            break;
        case 2:
            if (in_len - ip < 2)
                return corrupt(err, at, "copy runs past the input");
            len = (size_t)(tag >> 2) + 1;
            offset = (size_t)in[ip] | (size_t)in[ip + 1] << 8;
            ip += 2;
            break;
        default:
            if (in_len - ip < 4)
                return corrupt(err, at, "copy runs past the input");
            len = (size_t)(tag >> 2) + 1;
            offset = (size_t)in[ip] | (size_t)in[ip + 1] << 8 | (size_t)in[ip + 2] << 16 |
                     (size_t)in[ip + 3] << 24;
            ip += 4;
            break;
        }
        if (offset == 0 || offset > op)
            return corrupt(err, at, "copy from before the start of the output");
        if (len > out_len - op)
            return corrupt(err, at, "copy runs past the announced length");
        const uint8_t *src = out + op - offset;
        if (offset >= len) {
            memcpy(out + op, src, len);
        } else {
            for (size_t i = 0; i < len; i++)
                out[op + i] = src[i];
        }
        op += len;
    }
    if (op != out_len)
        return lc_error_set(err, LC_EFORMAT,
                            "snappy block ends after %zu of its %zu announced bytes", op, out_len);
    return 0;
}
