/*
 * textproto: protobuf's text format, read into a tree that keeps where
 * every field and value was written (line and column, from 1).
 *
 * What it reads (the subset configuration files use, and all of it that is
 * not about Any or extensions): `name: value` and `name { ... }` (also
 * `name: { ... }` and `name < ... >`), fields separated by nothing, ',' or
 * ';'; `name: [v1, v2]` for a repeated field, expanded into one field per
 * element (elements may be blocks); double- or single-quoted strings with C
 * escapes (\n \t \\ \" \' \a \b \f \r \v \?, octal \NNN, hex \xHH),
 * adjacent strings joined; numbers (decimal, 0x hex, decimals, exponents,
 * a trailing f, a leading '-', inf and nan); identifiers (enum values,
 * true, false); '#' comments to the end of the line.
 *
 * No schema is involved: what the fields mean is the caller's business.
 * The first syntax error ends the parse with its line and column.
 */
#ifndef LC_FORMAT_TEXTPROTO_H
#define LC_FORMAT_TEXTPROTO_H

#include "core/error.h"

#include <stddef.h>

typedef enum lc_textproto_kind {
    LC_TEXTPROTO_BLOCK,  /* name { ... } */
    LC_TEXTPROTO_STRING, /* "text": value holds the bytes, unescaped */
    LC_TEXTPROTO_NUMBER, /* value holds the number as written ("-1.5e3", "0x10") */
    LC_TEXTPROTO_IDENT,  /* an enum value, true, false */
} lc_textproto_kind;

typedef struct lc_textproto_field {
    char *name;
    unsigned line, col; /* of the name */
    lc_textproto_kind kind;
    char *value; /* scalars: NUL-terminated (a string holding NUL is refused) */
    size_t value_len;
    unsigned value_line, value_col;
    struct lc_textproto_field *fields; /* a block's fields, in the order written */
    unsigned n_fields, cap_fields;
} lc_textproto_field;

/* Blocks nest at most this deep. */
#define LC_TEXTPROTO_MAX_DEPTH 64

/* Parse text (len bytes, no NUL needed) into *root, a block holding the
 * top-level fields. On a syntax error returns LC_EFORMAT with err saying
 * "LINE:COL: what" (the caller adds the file's name) and leaves *root
 * empty. */
int lc_textproto_parse(const char *text, size_t len, lc_textproto_field *root, lc_error *err);
void lc_textproto_free(lc_textproto_field *root);

/* A field's kind in words ("a block", "a string", ...), for messages. */
const char *lc_textproto_kind_name(lc_textproto_kind kind);

#endif
