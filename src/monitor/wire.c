#include "monitor/wire.h"

#include "core/clock.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void lc_wire_buf_fini(lc_wire_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void lc_wire_buf_append(lc_wire_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        b->data = lc_xrealloc(b->data, cap);
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void lc_wire_buf_consume(lc_wire_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

void lc_wire_buf_shrink(lc_wire_buf *b, size_t keep)
{
    if (b->cap <= keep || b->len > keep)
        return;
    if (b->len == 0) {
        lc_wire_buf_fini(b);
        return;
    }
    b->data = lc_xrealloc(b->data, keep);
    b->cap = keep;
}

static void put_frame(lc_wire_buf *out, size_t len, const ProtobufCMessage *m)
{
    uint8_t hdr[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                      (uint8_t)(len >> 24)};
    lc_wire_buf_append(out, hdr, 4);
    if (out->len + len > out->cap) {
        size_t cap = out->cap;
        while (cap < out->len + len)
            cap *= 2;
        out->data = lc_xrealloc(out->data, cap);
        out->cap = cap;
    }
    protobuf_c_message_pack(m, out->data + out->len);
    out->len += len;
}

void lc_wire_put_server(lc_wire_buf *out, const Lcmon__ServerMessage *m)
{
    put_frame(out, lcmon__server_message__get_packed_size(m), &m->base);
}

void lc_wire_put_client(lc_wire_buf *out, const Lcmon__ClientMessage *m)
{
    put_frame(out, lcmon__client_message__get_packed_size(m), &m->base);
}

int lc_wire_peek_frame(const lc_wire_buf *in, const uint8_t **frame, size_t *len)
{
    if (in->len < 4)
        return 0;
    const uint8_t *p = in->data;
    uint32_t n = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    if (n > LC_WIRE_MAX_FRAME)
        return LC_EFORMAT;
    if (in->len < 4 + (size_t)n)
        return 0;
    *frame = p + 4;
    *len = n;
    return 1;
}

int lc_wire_read_frame(int fd, lc_wire_buf *in, uint64_t deadline_ns, const uint8_t **frame,
                       size_t *len, lc_error *err)
{
    for (;;) {
        int rc = lc_wire_peek_frame(in, frame, len);
        if (rc < 0)
            return lc_error_set(err, rc, "the loader sent an oversize frame");
        if (rc > 0)
            return 0;
        int timeout = -1;
        if (deadline_ns) {
            uint64_t now = lc_now_ns();
            if (now >= deadline_ns)
                return lc_error_set(err, -ETIMEDOUT, "no answer from the loader in time");
            timeout = (int)((deadline_ns - now) / 1000000u) + 1;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n = poll(&pfd, 1, timeout);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return lc_error_set(err, -errno, "poll: %s", strerror(errno));
        if (n == 0)
            continue;
        uint8_t buf[65536];
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got < 0)
            return lc_error_set(err, -errno, "read: %s", strerror(errno));
        if (got == 0)
            return lc_error_set(err, -ECONNRESET, "the loader closed the connection");
        lc_wire_buf_append(in, buf, (size_t)got);
    }
}

int lc_wire_write_all(int fd, const void *p, size_t n, lc_error *err)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            poll(&pfd, 1, 1000);
            continue;
        }
        if (w < 0)
            return lc_error_set(err, -errno, "write: %s", strerror(errno));
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

int lc_wire_connect(const char *path, lc_error *err)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path)
        return lc_error_set(err, -ENAMETOOLONG, "%s: socket path too long", path);
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return lc_error_set(err, -errno, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        int e = errno;
        close(fd);
        if (e == ENOENT)
            return lc_error_set(err, -e, "%s: no such socket (is lcmon running with --socket %s?)",
                                path, path);
        if (e == ECONNREFUSED)
            return lc_error_set(err, -e, "%s: nobody is listening (a stale socket?)", path);
        return lc_error_set(err, -e, "%s: cannot connect: %s", path, strerror(e));
    }
    return fd;
}
