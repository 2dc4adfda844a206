/*
 * server_client: see server_client.h.
 */
#include "monitor/server_client.h"

#include "core/clock.h"

#include <errno.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* It asked for snapshots or log lines: it may stay however quiet it is. */
bool lc_server_client_subscribed(const lc_server_client *c)
{
    return c->interval_ms || c->logs;
}

bool lc_server_subscribe_asks(const Lcmon__Subscribe *sub)
{
    return !sub->has_interval_ms || sub->interval_ms || (sub->has_logs && sub->logs);
}

/* Take what the client sent into its input buffer; false to close it. */
bool lc_server_client_recv(lc_server_client *c, const char **why)
{
    uint8_t buf[65536];
    /* Enough for the largest frame; beyond that, frames are answered first. */
    while (c->in.len <= LC_WIRE_MAX_FRAME + 4) {
        ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            lc_wire_buf_append(&c->in, buf, (size_t)n);
            c->active_ns = lc_now_ns();
            continue;
        }
        if (n == 0) {
            c->closing = true;
            c->interval_ms = 0;
            c->logs = false;
            return true;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN)
            break;
        if (errno == ECONNRESET) { /* it hung up with our bytes unread: a disconnect */
            c->closing = true;
            c->interval_ms = 0;
            c->logs = false;
            return true;
        }
        *why = strerror(errno);
        return false;
    }
    return true;
}

/* Why a client that hung up counts as misbehaving, or NULL (a plain
 * disconnect): it cut its last frame short. What it sent before it hung up
 * is taken in first, as it may still wait in the socket. */
const char *lc_server_client_hangup_why(lc_server_client *c)
{
    const char *ignored;
    if (!c->closing && !lc_server_client_recv(c, &ignored))
        return NULL;
    if (!c->closing || c->in.len == 0)
        return NULL; /* nothing left over, or its end is not in sight (a frame's worth waits) */
    for (size_t off = 0;;) {
        lc_wire_buf rest = {.data = c->in.data + off, .len = c->in.len - off};
        const uint8_t *frame;
        size_t len;
        int rc = lc_wire_peek_frame(&rest, &frame, &len);
        if (rc < 0)
            return "it announced a frame over the size limit";
        if (rc == 0)
            return off < c->in.len ? "it hung up in the middle of a frame" : NULL;
        off += 4 + len;
    }
}

/* Answer up to LC_SERVER_FRAMES_PER_TURN whole frames of the client's input, so that
 * one client's burst never keeps the others waiting; c->more says whether
 * whole frames are left. False to close the client. */
bool lc_server_client_serve(lc_server_client *c, lc_server_client_handler handle, void *ctx,
                            const char **why)
{
    size_t off = 0;
    bool ok = true;
    c->more = false;
    if (c->in.len == 0)
        return true; /* nothing yet (and maybe no buffer at all) */
    for (int k = 0;; k++) {
        lc_wire_buf rest = {.data = c->in.data + off, .len = c->in.len - off};
        const uint8_t *frame;
        size_t len;
        int rc = lc_wire_peek_frame(&rest, &frame, &len);
        if (rc < 0) {
            *why = "it announced a frame over the size limit";
            ok = false;
            break;
        }
        if (rc == 0)
            break;
        if (k == LC_SERVER_FRAMES_PER_TURN) {
            c->more = true;
            break;
        }
        Lcmon__ClientMessage *m = lcmon__client_message__unpack(NULL, len, frame);
        if (!m) {
            *why = "it sent bytes that are not a monitor message";
            ok = false;
            break;
        }
        handle(ctx, c, m);
        lcmon__client_message__free_unpacked(m, NULL);
        off += 4 + len;
        if (c->refused) { /* what it sent after is not read */
            off = c->in.len;
            break;
        }
        /* Requests whose replies it does not read: stop answering. */
        if (c->out.len > LC_SERVER_HARD_OUT_LIMIT) {
            *why = "it stopped reading its replies";
            ok = false;
            break;
        }
    }
    lc_wire_buf_consume(&c->in, off); /* once: no memmove per frame */
    lc_wire_buf_shrink(&c->in, LC_SERVER_BUF_KEEP);
    /* What is left is the start of a frame: since this turn when it follows
     * a whole one, else since it began to arrive. */
    if (c->in.len == 0 || c->more)
        c->unfinished_since_ns = 0;
    else if (off > 0 || !c->unfinished_since_ns)
        c->unfinished_since_ns = lc_now_ns();
    return ok;
}

bool lc_server_client_flush(lc_server_client *c, const char **why)
{
    while (c->out.len > 0) {
        ssize_t n = send(c->fd, c->out.data, c->out.len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            lc_wire_buf_consume(&c->out, (size_t)n);
            c->active_ns = lc_now_ns();
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        /* One that hung up (said EOF, or reset) is not misbehaving, unless
         * it cut a frame short. */
        bool gone = c->closing || (n < 0 && (errno == EPIPE || errno == ECONNRESET));
        *why = gone ? lc_server_client_hangup_why(c) : n < 0 ? strerror(errno) : "short write";
        return false;
    }
    if (c->out.len > LC_SERVER_HARD_OUT_LIMIT) {
        *why = "it stopped reading its replies";
        return false;
    }
    lc_wire_buf_shrink(&c->out, LC_SERVER_BUF_KEEP);
    return true;
}

static void put_refusal(lc_wire_buf *out, const char *why)
{
    Lcmon__ServerMessage m = LCMON__SERVER_MESSAGE__INIT;
    m.refused = (char *)why;
    lc_wire_put_server(out, &m);
}

void lc_server_client_refuse(lc_server_client *c, const char *why)
{
    put_refusal(&c->out, why);
    c->refused = c->closing = true;
    c->interval_ms = 0;
    c->logs = false;
    c->more = false;
}

/* What the peer sent and we will never read, taken off the socket: a unix
 * socket closed with bytes unread resets the peer, which may then lose
 * our last message. */
static void drain(int fd)
{
    uint8_t buf[65536];
    for (int k = 0; k < 64 && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0; k++) {
    }
}

void lc_server_refuse_fd(int fd, const char *why)
{
    lc_wire_buf out = {0};
    put_refusal(&out, why);
    if (send(fd, out.data, out.len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
        /* full or gone: it learns from the close alone */
    }
    lc_wire_buf_fini(&out);
    drain(fd);
    close(fd);
}

void lc_server_client_close(lc_server_client *c)
{
    if (c->refused)
        drain(c->fd);
    close(c->fd);
}

/* The pid of the process at the other end, or 0 if unknown. */
long lc_server_peer_pid(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0)
        return (long)cred.pid;
    return 0;
}

/* " (pid N)" of the process at the other end, for the log; "" if unknown. */
void lc_server_peer_who(int fd, char *who, size_t size)
{
    long pid = lc_server_peer_pid(fd);
    who[0] = '\0';
    if (pid)
        snprintf(who, size, " (pid %ld)", pid);
}
