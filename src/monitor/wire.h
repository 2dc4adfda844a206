/*
 * wire: length-prefixed protobuf frames over a stream socket, as
 * proto/monitor.proto describes: a 4-byte little-endian length, then the
 * message. Buffers grow as needed up to LC_WIRE_MAX_FRAME.
 */
#ifndef LC_MONITOR_WIRE_H
#define LC_MONITOR_WIRE_H

#include "core/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "monitor.pb-c.h"

#define LC_WIRE_MAX_FRAME (4u << 20)
#define LC_PROTOCOL_VERSION 3u /* 3: requests are commands by name only */

typedef struct lc_wire_buf {
    uint8_t *data;
    size_t len, cap;
} lc_wire_buf;

void lc_wire_buf_fini(lc_wire_buf *b);
void lc_wire_buf_append(lc_wire_buf *b, const void *p, size_t n);
/* Drop the first n bytes. */
void lc_wire_buf_consume(lc_wire_buf *b, size_t n);
/* Give back what a large message made the buffer grow to, once it holds no
 * more than `keep` bytes: a long-lived connection keeps at most that. */
void lc_wire_buf_shrink(lc_wire_buf *b, size_t keep);

/* Append one framed message. */
void lc_wire_put_server(lc_wire_buf *out, const Lcmon__ServerMessage *m);
void lc_wire_put_client(lc_wire_buf *out, const Lcmon__ClientMessage *m);

/* If `in` starts with a whole frame, set *frame and *len to its body and
 * return 1 (consume 4 + len bytes afterwards); 0 when more bytes are needed;
 * LC_EFORMAT when the announced length is over the limit. */
int lc_wire_peek_frame(const lc_wire_buf *in, const uint8_t **frame, size_t *len);

/* Blocking helpers for simple clients (ctl, attach): read into `in` until a
 * whole frame is there (deadline in monotonic ns, 0 = none). */
int lc_wire_read_frame(int fd, lc_wire_buf *in, uint64_t deadline_ns, const uint8_t **frame,
                       size_t *len, lc_error *err);
int lc_wire_write_all(int fd, const void *p, size_t n, lc_error *err);

/* Connect to a Unix socket path; returns the fd or a negative code. */
int lc_wire_connect(const char *path, lc_error *err);

#endif
