/*
 * thrift: see thrift.h. Written from the Thrift compact protocol
 * specification: integers are ULEB128 varints, zigzag-coded when signed; a
 * field header is one byte holding the id delta (high nibble, 0 meaning an
 * explicit zigzag i16 id follows) and the wire type (low nibble); booleans
 * live in the field header's type; a list header holds the size (high nibble,
 * 15 meaning a varint size follows) and the element type.
 */
#include "format/parquet/thrift.h"

#include <string.h>

void lc_thrift_init(lc_thrift *t, const uint8_t *p, size_t n)
{
    t->start = p;
    t->p = p;
    t->end = p + n;
    t->depth = 0;
    t->error = NULL;
    t->error_at = 0;
}

bool lc_thrift_fail(lc_thrift *t, const char *what)
{
    if (!t->error) {
        t->error = what;
        t->error_at = lc_thrift_pos(t);
    }
    /* Park the cursor at the end so that loops over fields stop at once. */
    t->p = t->end;
    return false;
}

static size_t left(const lc_thrift *t)
{
    return (size_t)(t->end - t->p);
}

static uint8_t read_byte(lc_thrift *t)
{
    if (t->error || t->p >= t->end) {
        lc_thrift_fail(t, "metadata ends inside a value");
        return 0;
    }
    return *t->p++;
}

static uint64_t read_varint(lc_thrift *t)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        uint8_t b = read_byte(t);
        if (t->error)
            return 0;
        if (shift == 63 && (b & 0x7e)) {
            lc_thrift_fail(t, "varint overflows 64 bits");
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    lc_thrift_fail(t, "varint longer than 10 bytes");
    return 0;
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

bool lc_thrift_begin(lc_thrift *t)
{
    if (t->error)
        return false;
    if (t->depth >= LC_THRIFT_MAX_DEPTH)
        return lc_thrift_fail(t, "metadata nested too deeply");
    t->depth++;
    return true;
}

void lc_thrift_end(lc_thrift *t)
{
    if (t->depth > 0)
        t->depth--;
}

bool lc_thrift_field(lc_thrift *t, int16_t *last, int16_t *id, int *type)
{
    uint8_t b = read_byte(t);
    if (t->error || b == LC_THRIFT_STOP)
        return false;
    int ty = b & 0x0f, delta = b >> 4;
    if (ty == LC_THRIFT_STOP || ty > LC_THRIFT_UUID)
        return lc_thrift_fail(t, "unknown wire type in a field header");
    int64_t fid;
    if (delta == 0) {
        fid = unzigzag(read_varint(t));
        if (t->error)
            return false;
        if (fid < INT16_MIN || fid > INT16_MAX)
            return lc_thrift_fail(t, "field id out of range");
    } else {
        fid = (int64_t)*last + delta;
        if (fid > INT16_MAX)
            return lc_thrift_fail(t, "field id out of range");
    }
    *last = (int16_t)fid;
    *id = (int16_t)fid;
    *type = ty;
    return true;
}

int64_t lc_thrift_int(lc_thrift *t, int type)
{
    switch (type) {
    case LC_THRIFT_BYTE:
        return (int8_t)read_byte(t);
    case LC_THRIFT_I16:
    case LC_THRIFT_I32:
    case LC_THRIFT_I64: {
        int64_t v = unzigzag(read_varint(t));
        if ((type == LC_THRIFT_I16 && (v < INT16_MIN || v > INT16_MAX)) ||
            (type == LC_THRIFT_I32 && (v < INT32_MIN || v > INT32_MAX))) {
            lc_thrift_fail(t, "integer out of range for its type");
            return 0;
        }
        return v;
    }
    default:
        lc_thrift_fail(t, "expected an integer, found another wire type");
        return 0;
    }
}

int32_t lc_thrift_i32(lc_thrift *t, int type)
{
    int64_t v = lc_thrift_int(t, type);
    if (v < INT32_MIN || v > INT32_MAX) {
        lc_thrift_fail(t, "integer does not fit in 32 bits");
        return 0;
    }
    return (int32_t)v;
}

bool lc_thrift_bool(lc_thrift *t, int type)
{
    if (type == LC_THRIFT_TRUE)
        return true;
    if (type != LC_THRIFT_FALSE)
        lc_thrift_fail(t, "expected a bool, found another wire type");
    return false;
}

bool lc_thrift_binary(lc_thrift *t, int type, const uint8_t **p, size_t *n)
{
    *p = NULL;
    *n = 0;
    if (type != LC_THRIFT_BINARY)
        return lc_thrift_fail(t, "expected a string, found another wire type");
    uint64_t len = read_varint(t);
    if (t->error)
        return false;
    if (len > left(t))
        return lc_thrift_fail(t, "string runs past the end of the metadata");
    *p = t->p;
    *n = (size_t)len;
    t->p += len;
    return true;
}

bool lc_thrift_list(lc_thrift *t, int type, int *elem_type, size_t *count)
{
    *elem_type = 0;
    *count = 0;
    if (type != LC_THRIFT_LIST && type != LC_THRIFT_SET)
        return lc_thrift_fail(t, "expected a list, found another wire type");
    uint8_t b = read_byte(t);
    if (t->error)
        return false;
    uint64_t n = b >> 4;
    if (n == 15) {
        n = read_varint(t);
        if (t->error)
            return false;
    }
    int et = b & 0x0f;
    if (et == LC_THRIFT_STOP || et > LC_THRIFT_UUID)
        return lc_thrift_fail(t, "unknown element type in a list header");
    /* Every element takes at least one byte (a bool, a varint, a length, a
     * STOP); a count above the bytes left is a lie. */
    if (n > left(t))
        return lc_thrift_fail(t, "list longer than the metadata left");
    *elem_type = et;
    *count = (size_t)n;
    return true;
}

static void skip_bytes(lc_thrift *t, size_t n)
{
    if (t->error)
        return;
    if (n > left(t)) {
        lc_thrift_fail(t, "metadata ends inside a value");
        return;
    }
    t->p += n;
}

/* Skip one list element or map key/value: in containers a bool is a byte. */
static void skip_element(lc_thrift *t, int type)
{
    if (type == LC_THRIFT_TRUE || type == LC_THRIFT_FALSE)
        skip_bytes(t, 1);
    else
        lc_thrift_skip(t, type);
}

void lc_thrift_skip(lc_thrift *t, int type)
{
    if (t->error)
        return;
    switch (type) {
    case LC_THRIFT_TRUE:
    case LC_THRIFT_FALSE:
        return;
    case LC_THRIFT_BYTE:
        skip_bytes(t, 1);
        return;
    case LC_THRIFT_I16:
    case LC_THRIFT_I32:
    case LC_THRIFT_I64:
        read_varint(t);
        return;
    case LC_THRIFT_DOUBLE:
        skip_bytes(t, 8);
        return;
    case LC_THRIFT_UUID:
        skip_bytes(t, 16);
        return;
    case LC_THRIFT_BINARY: {
        const uint8_t *p;
        size_t n;
        lc_thrift_binary(t, type, &p, &n);
        return;
    }
    case LC_THRIFT_LIST:
    case LC_THRIFT_SET: {
        int et;
        size_t n;
        if (!lc_thrift_list(t, type, &et, &n) || !lc_thrift_begin(t))
            return;
        for (size_t i = 0; i < n && !t->error; i++)
            skip_element(t, et);
        lc_thrift_end(t);
        return;
    }
    case LC_THRIFT_MAP: {
        uint64_t n = read_varint(t);
        if (t->error || n == 0)
            return;
        uint8_t kv = read_byte(t);
        int kt = kv >> 4, vt = kv & 0x0f;
        if (kt == LC_THRIFT_STOP || kt > LC_THRIFT_UUID || vt == LC_THRIFT_STOP ||
            vt > LC_THRIFT_UUID) {
            lc_thrift_fail(t, "unknown key or value type in a map header");
            return;
        }
        if (n > left(t) / 2) {
            lc_thrift_fail(t, "map longer than the metadata left");
            return;
        }
        if (!lc_thrift_begin(t))
            return;
        for (uint64_t i = 0; i < n && !t->error; i++) {
            skip_element(t, kt);
            skip_element(t, vt);
        }
        lc_thrift_end(t);
        return;
    }
    case LC_THRIFT_STRUCT: {
        if (!lc_thrift_begin(t))
            return;
        int16_t last = 0, id;
        int ft;
        while (lc_thrift_field(t, &last, &id, &ft))
            lc_thrift_skip(t, ft);
        lc_thrift_end(t);
        return;
    }
    default:
        lc_thrift_fail(t, "unknown wire type");
        return;
    }
}
