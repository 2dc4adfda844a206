/*
 * thrift: a reader for the Thrift compact protocol, the encoding of Parquet's
 * file metadata and page headers.
 *
 * The reader is a cursor over one buffer. Every read is bounds-checked; the
 * first problem (a read past the end, a malformed varint, a wire type that is
 * not the one the caller expects, nesting deeper than LC_THRIFT_MAX_DEPTH)
 * makes the cursor sticky-failed: later reads return zeros and false, so a
 * parser can read a whole structure and check lc_thrift_ok() once at the end.
 * lc_thrift_error() then says what went wrong and at which byte offset.
 *
 * A struct is read as a loop over its fields:
 *
 *     int16_t last = 0, id;
 *     int type;
 *     if (!lc_thrift_begin(t)) ...
 *     while (lc_thrift_field(t, &last, &id, &type)) {
 *         switch (id) {
 *         case 1: x = lc_thrift_i32(t, type); break;
 *         default: lc_thrift_skip(t, type);
 *         }
 *     }
 *     lc_thrift_end(t);
 *
 * Unknown fields are skipped whatever their type, which is how Thrift lets
 * old readers read new files. The cursor owns nothing and is not shared
 * between threads.
 */
#ifndef LC_FORMAT_PARQUET_THRIFT_H
#define LC_FORMAT_PARQUET_THRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Compact protocol wire types. */
enum {
    LC_THRIFT_STOP = 0,
    LC_THRIFT_TRUE = 1,
    LC_THRIFT_FALSE = 2,
    LC_THRIFT_BYTE = 3,
    LC_THRIFT_I16 = 4,
    LC_THRIFT_I32 = 5,
    LC_THRIFT_I64 = 6,
    LC_THRIFT_DOUBLE = 7,
    LC_THRIFT_BINARY = 8,
    LC_THRIFT_LIST = 9,
    LC_THRIFT_SET = 10,
    LC_THRIFT_MAP = 11,
    LC_THRIFT_STRUCT = 12,
    LC_THRIFT_UUID = 13,
};

/* Parquet metadata nests about six deep; anything far deeper is an attack. */
#define LC_THRIFT_MAX_DEPTH 64

typedef struct lc_thrift {
    const uint8_t *start, *p, *end;
    int depth;
    const char *error; /* static text of the first failure, NULL while fine */
    size_t error_at;   /* byte offset of the first failure */
} lc_thrift;

void lc_thrift_init(lc_thrift *t, const uint8_t *p, size_t n);

static inline bool lc_thrift_ok(const lc_thrift *t)
{
    return t->error == NULL;
}

/* Bytes consumed so far. */
static inline size_t lc_thrift_pos(const lc_thrift *t)
{
    return (size_t)(t->p - t->start);
}

/* Mark the cursor failed with a static message (only the first one sticks);
 * returns false so that callers can `return lc_thrift_fail(...)`. */
bool lc_thrift_fail(lc_thrift *t, const char *what);

/* The first failure, or NULL. */
static inline const char *lc_thrift_error(const lc_thrift *t)
{
    return t->error;
}

/* Enter a struct (false when too deep or already failed). */
bool lc_thrift_begin(lc_thrift *t);
/* Next field of the current struct: false at its end (STOP) or on failure.
 * last is the previous field id, updated here (start it at 0). */
bool lc_thrift_field(lc_thrift *t, int16_t *last, int16_t *id, int *type);
/* Leave the struct entered by the matching lc_thrift_begin. */
void lc_thrift_end(lc_thrift *t);

/* An integer of wire type BYTE, I16, I32 or I64; any other type fails. */
int64_t lc_thrift_int(lc_thrift *t, int type);
/* The same, failing when the value does not fit in an int32_t. */
int32_t lc_thrift_i32(lc_thrift *t, int type);
/* A bool field: the value is its wire type (TRUE or FALSE). */
bool lc_thrift_bool(lc_thrift *t, int type);
/* A BINARY (string) value: *p points into the buffer, not NUL-terminated. */
bool lc_thrift_binary(lc_thrift *t, int type, const uint8_t **p, size_t *n);
/* A LIST or SET header: the element type and count. The count is checked
 * against the bytes left (every element takes at least one byte), so that a
 * caller may allocate count elements without trusting the file. */
bool lc_thrift_list(lc_thrift *t, int type, int *elem_type, size_t *count);
/* One element of a list of elem_type read as an integer. */
static inline int64_t lc_thrift_list_int(lc_thrift *t, int elem_type)
{
    return lc_thrift_int(t, elem_type);
}
/* Skip one value of the given wire type, nested values included. */
void lc_thrift_skip(lc_thrift *t, int type);

#endif
