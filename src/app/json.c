#include "app/json.h"

#include "core/text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void put(lc_wire_buf *out, const char *s)
{
    lc_wire_buf_append(out, s, strlen(s));
}

static void put_run(void *ctx, const char *p, size_t n)
{
    lc_wire_buf_append(ctx, p, n);
}

void lc_json_string(lc_wire_buf *out, const char *s)
{
    put(out, "\"");
    lc_text_json(s, put_run, out);
    put(out, "\"");
}

static void put_double(lc_wire_buf *out, double v)
{
    char buf[40];
    if (!isfinite(v))
        put(out, "null");
    else {
        snprintf(buf, sizeof buf, "%.17g", v);
        put(out, buf);
    }
}

/* One value of field f at p (p points at the value itself). */
static void put_value(lc_wire_buf *out, const ProtobufCFieldDescriptor *f, const void *p)
{
    char buf[48];
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        snprintf(buf, sizeof buf, "%d", *(const int32_t *)p);
        put(out, buf);
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        snprintf(buf, sizeof buf, "%u", *(const uint32_t *)p);
        put(out, buf);
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        snprintf(buf, sizeof buf, "%lld", (long long)*(const int64_t *)p);
        put(out, buf);
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)*(const uint64_t *)p);
        put(out, buf);
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        put_double(out, *(const float *)p);
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        put_double(out, *(const double *)p);
        break;
    case PROTOBUF_C_TYPE_BOOL:
        put(out, *(const protobuf_c_boolean *)p ? "true" : "false");
        break;
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumValue *ev =
            protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
        if (ev)
            lc_json_string(out, ev->name);
        else {
            snprintf(buf, sizeof buf, "%d", *(const int *)p);
            put(out, buf);
        }
        break;
    }
    case PROTOBUF_C_TYPE_STRING:
        lc_json_string(out, *(char *const *)p ? *(char *const *)p : "");
        break;
    case PROTOBUF_C_TYPE_BYTES:
        put(out, "null");
        break;
    case PROTOBUF_C_TYPE_MESSAGE:
        if (*(ProtobufCMessage *const *)p)
            lc_json_message(out, *(ProtobufCMessage *const *)p);
        else
            put(out, "null");
        break;
    }
}

static size_t value_size(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_ENUM:
        return sizeof(int);
    default:
        return 4;
    }
}

void lc_json_message(lc_wire_buf *out, const ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *base = (const char *)m;
    bool first = true;
    put(out, "{");
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const void *value = base + f->offset;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            if (n == 0)
                continue;
            put(out, first ? "" : ",");
            first = false;
            lc_json_string(out, f->name);
            put(out, ":[");
            const char *arr = *(const char *const *)value;
            for (size_t k = 0; k < n; k++) {
                if (k)
                    put(out, ",");
                put_value(out, f, arr + k * value_size(f));
            }
            put(out, "]");
            continue;
        }
        bool present;
        if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE)
            present = *(const void *const *)value != NULL &&
                      !(f->type == PROTOBUF_C_TYPE_STRING && f->default_value &&
                        *(const void *const *)value == f->default_value);
        else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset)
            present = *(const protobuf_c_boolean *)(base + f->quantifier_offset);
        else
            present = true;
        if (!present)
            continue;
        put(out, first ? "" : ",");
        first = false;
        lc_json_string(out, f->name);
        put(out, ":");
        put_value(out, f, value);
    }
    put(out, "}");
}
