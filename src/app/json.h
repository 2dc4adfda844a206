/*
 * json: any protobuf-c message as one line of JSON, by reflection over its
 * descriptor. Field names are the proto names; enums are written as their
 * names; repeated fields as arrays; unset optional fields are left out;
 * NaN and infinities (JSON has none) are written as null.
 */
#ifndef LC_APP_JSON_H
#define LC_APP_JSON_H

#include "monitor/wire.h"

#include <protobuf-c/protobuf-c.h>

/* Append the JSON of m to out (no trailing newline, no NUL). */
void lc_json_message(lc_wire_buf *out, const ProtobufCMessage *m);
/* Append a JSON string literal. */
void lc_json_string(lc_wire_buf *out, const char *s);

#endif
