/*
 * remote: the monitor of a loader in another process, over its socket. It
 * subscribes to snapshots (and log lines) and keeps the newest of each; a
 * control request waits for its own reply, keeping what arrives meanwhile.
 * Used by one thread (the screen of `lcmon attach`, or `lcmon ctl`).
 *
 * A subscribed monitor (the screen) that loses its loader tries the socket
 * again every RETRY_NS: when a loader answers there (the same one back, or
 * a new process), it subscribes again and goes on. The log says when the
 * loader was lost and when it came back; the lines of the new process are
 * numbered on from the old ones' (a monitor's own sequence), so that a
 * reader of the log sees them.
 */
#include "monitor/remote.h"

#include <stdio.h>

#include "core/clock.h"
#include "monitor/command_wire.h"
#include "monitor/wire.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LOG_KEEP 1000
#define RETRY_NS 500000000ull

typedef struct remote_monitor {
    lc_monitor base;
    char *path;
    int fd;
    bool lost;
    lc_wire_buf in;
    Lcmon__Hello *hello;
    lc_snapshot *snap[LC_WINDOW_COUNT]; /* the newest of each window; shared with readers */
    unsigned windows;                   /* the window subscribed to besides 1 s and all */
    bool subscribed;                    /* snapshots come at an interval */
    uint32_t interval_ms;
    bool want_logs;
    uint64_t next_request;
    lc_log_entry logs[LOG_KEEP];
    uint64_t log_last;   /* seq of the newest line kept (ours) */
    uint64_t log_offset; /* ours = the server's + log_offset (grows at each reconnect) */
    uint64_t server_seq; /* the server's newest line we have */
    uint64_t lost_at;    /* when the loader was lost; 0: connected */
    uint64_t retry_at;
    char *refused; /* why the server turned us away (ServerMessage.refused), or NULL */
    char where[300];
} remote_monitor;

static void forget_snapshots(remote_monitor *r)
{
    for (int k = 0; k < LC_WINDOW_COUNT; k++) {
        lc_snapshot_unref(r->snap[k]);
        r->snap[k] = NULL;
    }
}

static void keep_line(remote_monitor *r, uint64_t seq, double wall_time, lc_log_level level,
                      const char *thread, const char *text)
{
    lc_log_entry *e = &r->logs[seq % LOG_KEEP];
    e->seq = seq;
    e->wall_time = wall_time;
    e->level = level;
    snprintf(e->thread, sizeof e->thread, "%s", thread ? thread : "");
    snprintf(e->text, sizeof e->text, "%s", text ? text : "");
    r->log_last = seq;
}

static void keep_logs(remote_monitor *r, const Lcmon__ServerMessage *m)
{
    for (size_t i = 0; i < m->n_log; i++) {
        const Lcmon__LogLine *l = m->log[i];
        if (l->seq > r->server_seq)
            r->server_seq = l->seq;
        if (l->seq + r->log_offset <= r->log_last)
            continue;
        keep_line(r, l->seq + r->log_offset, l->wall_time, (lc_log_level)l->level, l->thread,
                  l->text);
    }
}

/* A line of the monitor's own (the loader lost, or back). */
static void say(remote_monitor *r, lc_log_level level, const char *text)
{
    keep_line(r, r->log_last + 1, lc_wall_seconds(), level, "attach", text);
}

/* Take one parsed message: snapshots and logs are kept; a control response
 * is returned to the caller when its id is `want` (else dropped). */
static Lcmon__ServerMessage *take(remote_monitor *r, Lcmon__ServerMessage *m, uint64_t want)
{
    keep_logs(r, m);
    if (m->refused) { /* its last message: the connection closes after it */
        free(r->refused);
        r->refused = lc_xstrdup(m->refused);
        r->lost = true;
        say(r, LC_LOG_WARN, m->refused);
    }
    if (m->hello) {
        if (r->hello)
            lcmon__hello__free_unpacked(r->hello, NULL);
        /* Keep the hello: detach it from the message. */
        r->hello = m->hello;
        m->hello = NULL;
    }
    if (m->control_response) {
        if (want && m->has_request_id && m->request_id == want) {
            /* Snapshots that came before the reply predate the request's
             * effect: forget them, the server sends a fresh one next. */
            forget_snapshots(r);
            return m;
        }
        lcmon__server_message__free_unpacked(m, NULL);
        return NULL;
    }
    if (m->last_second && m->all_time) {
        /* Take them over: each reader shares them until the next arrive. */
        lc_snapshot_unref(r->snap[LC_WINDOW_1S]);
        lc_snapshot_unref(r->snap[LC_WINDOW_ALL]);
        r->snap[LC_WINDOW_1S] = lc_snapshot_wrap(m->last_second);
        r->snap[LC_WINDOW_ALL] = lc_snapshot_wrap(m->all_time);
        m->last_second = m->all_time = NULL;
        for (size_t i = 0; i < m->n_windows; i++) {
            int w = m->windows[i]->has_window ? (int)m->windows[i]->window : -1;
            if (w <= LC_WINDOW_1S || w >= LC_WINDOW_ALL)
                continue;
            lc_snapshot_unref(r->snap[w]);
            r->snap[w] = lc_snapshot_wrap(m->windows[i]);
            m->windows[i] = NULL;
        }
    }
    lcmon__server_message__free_unpacked(m, NULL);
    return NULL;
}

/* Read what is there (or wait until the deadline for reply `want`). */
static void maybe_reconnect(remote_monitor *r);

static Lcmon__ServerMessage *pump(remote_monitor *r, uint64_t want, uint64_t deadline_ns)
{
    maybe_reconnect(r);
    while (!r->lost) {
        const uint8_t *frame;
        size_t len;
        int rc = lc_wire_peek_frame(&r->in, &frame, &len);
        if (rc < 0) {
            r->lost = true;
            break;
        }
        if (rc > 0) {
            Lcmon__ServerMessage *m = lcmon__server_message__unpack(NULL, len, frame);
            lc_wire_buf_consume(&r->in, 4 + len);
            if (!m) {
                r->lost = true;
                break;
            }
            Lcmon__ServerMessage *reply = take(r, m, want);
            if (reply)
                return reply;
            continue;
        }
        int timeout = 0;
        if (want) {
            uint64_t now = lc_now_ns();
            if (now >= deadline_ns)
                return NULL;
            timeout = (int)((deadline_ns - now) / 1000000u) + 1;
        }
        struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
        int n = poll(&pfd, 1, timeout);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL;
        uint8_t buf[65536];
        ssize_t got = recv(r->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (got > 0)
            lc_wire_buf_append(&r->in, buf, (size_t)got);
        else if (got == 0 || (errno != EAGAIN && errno != EINTR))
            r->lost = true;
    }
    return NULL;
}

static int subscribe(remote_monitor *r, uint64_t log_after, lc_error *err);

static lc_snapshot *remote_window(lc_monitor *m, lc_window w)
{
    remote_monitor *r = (remote_monitor *)m;
    pump(r, 0, 0);
    if (r->lost || (unsigned)w >= LC_WINDOW_COUNT)
        return NULL;
    if (w != LC_WINDOW_1S && w != LC_WINDOW_ALL && !(r->windows & 1u << w)) {
        /* Ask for it from now on, instead of the one asked for before (a
         * screen shows one; the log goes on where it is). */
        for (int k = 0; k < LC_WINDOW_COUNT; k++)
            if (r->windows & 1u << k) {
                lc_snapshot_unref(r->snap[k]);
                r->snap[k] = NULL;
            }
        r->windows = 1u << w;
        lc_error err;
        if (r->subscribed && subscribe(r, r->server_seq, &err) != 0)
            r->lost = true;
    }
    return lc_snapshot_ref(r->snap[w]);
}

static lc_snapshot *remote_metrics(lc_monitor *m, bool all_time)
{
    return remote_window(m, all_time ? LC_WINDOW_ALL : LC_WINDOW_1S);
}

static int remote_command(lc_monitor *m, const lc_command_request *req, lc_command_result *res)
{
    remote_monitor *r = (remote_monitor *)m;
    if (r->lost)
        return lc_command_refuse(res, -ENOTCONN, "not connected to the loader");
    Lcmon__ControlRequest creq;
    lc_command_wire_request(req, &creq);
    Lcmon__ClientMessage msg = LCMON__CLIENT_MESSAGE__INIT;
    msg.control = &creq;
    msg.has_request_id = true;
    msg.request_id = ++r->next_request;
    lc_wire_buf out = {0};
    lc_wire_put_client(&out, &msg);
    free(creq.args);
    if (lc_wire_write_all(r->fd, out.data, out.len, NULL) != 0)
        r->lost = true;
    lc_wire_buf_fini(&out);
    Lcmon__ServerMessage *reply =
        r->lost ? NULL : pump(r, msg.request_id, lc_now_ns() + 10000000000ull);
    if (!reply)
        return lc_command_refuse(res, r->lost ? -EPIPE : -ETIMEDOUT, "%s%s",
                                 r->refused ? "the loader refused this connection: "
                                 : r->lost  ? "the loader closed the connection"
                                            : "no answer from the loader",
                                 r->refused ? r->refused : "");
    lc_command_wire_result(reply->control_response, res);
    lcmon__server_message__free_unpacked(reply, NULL);
    /* Wait (briefly) for the snapshot that follows the reply, so that the
     * caller's next read shows the request's effect. */
    if (r->subscribed)
        lc_monitor_remote_wait_snapshot(m, 2.0);
    return res->rc;
}

static size_t remote_read_log(lc_monitor *m, uint64_t after, lc_log_entry *out, size_t max,
                              uint64_t *next_after)
{
    remote_monitor *r = (remote_monitor *)m;
    pump(r, 0, 0);
    size_t n = 0;
    uint64_t first = r->log_last >= LOG_KEEP ? r->log_last - LOG_KEEP + 1 : 1;
    if (after + 1 > first)
        first = after + 1;
    for (uint64_t s = first; s <= r->log_last && n < max; s++) {
        const lc_log_entry *e = &r->logs[s % LOG_KEEP];
        if (e->seq == s)
            out[n++] = *e;
    }
    if (next_after)
        *next_after = n ? out[n - 1].seq : after;
    return n;
}

static const char *remote_where(lc_monitor *m)
{
    remote_monitor *r = (remote_monitor *)m;
    snprintf(r->where, sizeof r->where, "%s%s", r->path, r->lost ? " (disconnected)" : "");
    return r->where;
}

static void remote_free(lc_monitor *m)
{
    remote_monitor *r = (remote_monitor *)m;
    if (r->fd >= 0)
        close(r->fd);
    lc_wire_buf_fini(&r->in);
    forget_snapshots(r);
    if (r->hello)
        lcmon__hello__free_unpacked(r->hello, NULL);
    free(r->refused);
    free(r->path);
    free(r);
}

static const lc_monitor_ops remote_ops = {
    .metrics = remote_metrics,
    .window = remote_window,
    .command = remote_command,
    .read_log = remote_read_log,
    .where = remote_where,
    .hello = lc_monitor_remote_hello,
    .free = remote_free,
};

/* Send the subscription: the interval, the log from after `log_after`,
 * the windows. */
static int subscribe(remote_monitor *r, uint64_t log_after, lc_error *err)
{
    Lcmon__ClientMessage msg = LCMON__CLIENT_MESSAGE__INIT;
    Lcmon__Subscribe sub = LCMON__SUBSCRIBE__INIT;
    sub.has_interval_ms = true;
    sub.interval_ms = r->interval_ms;
    sub.has_logs = true;
    sub.logs = r->want_logs;
    sub.has_log_after = log_after > 0;
    sub.log_after = log_after;
    Lcmon__MetricWindow windows[LC_WINDOW_COUNT];
    for (int w = 0; w < LC_WINDOW_COUNT; w++)
        if (r->windows & 1u << w)
            windows[sub.n_windows++] = (Lcmon__MetricWindow)w;
    sub.windows = windows;
    msg.subscribe = &sub;
    lc_wire_buf wb = {0};
    lc_wire_put_client(&wb, &msg);
    int rc = lc_wire_write_all(r->fd, wb.data, wb.len, err);
    lc_wire_buf_fini(&wb);
    return rc;
}

/* Connect r to its socket: the hello, then the subscription. 0, or a
 * negative code with err set (r->fd then closed). */
static int connect_remote(remote_monitor *r, lc_error *err)
{
    int fd = lc_wire_connect(r->path, err);
    if (fd < 0)
        return fd;
    r->fd = fd;
    r->in.len = 0;
    const uint8_t *frame;
    size_t len;
    int rc = lc_wire_read_frame(fd, &r->in, lc_now_ns() + 5000000000ull, &frame, &len, err);
    Lcmon__ServerMessage *hello = rc == 0 ? lcmon__server_message__unpack(NULL, len, frame) : NULL;
    if (rc == 0)
        lc_wire_buf_consume(&r->in, 4 + len);
    if (!hello || !hello->hello || hello->hello->protocol_version != LC_PROTOCOL_VERSION) {
        if (hello && hello->refused)
            rc = lc_error_set(err, -ECONNREFUSED, "%s: the loader refused this connection: %s",
                              r->path, hello->refused);
        else if (rc == 0 && (!hello || !hello->hello))
            rc = lc_error_set(err, LC_EFORMAT, "%s: not an lcmon monitor socket", r->path);
        else if (rc == 0)
            rc = lc_error_set(err, LC_EVERSION, "%s: protocol version %u, this lcmon speaks %u",
                              r->path, hello->hello->protocol_version, LC_PROTOCOL_VERSION);
        if (hello)
            lcmon__server_message__free_unpacked(hello, NULL);
        close(fd);
        r->fd = -1;
        return rc;
    }
    take(r, hello, 0);
    rc = subscribe(r, 0, err);
    if (rc != 0) {
        close(fd);
        r->fd = -1;
    }
    return rc;
}

/* A subscribed monitor whose loader is gone tries again now and then. */
static void maybe_reconnect(remote_monitor *r)
{
    if (!r->lost || !r->subscribed)
        return;
    uint64_t now = lc_now_ns();
    char line[400];
    if (!r->lost_at) {
        r->lost_at = now;
        r->retry_at = now + RETRY_NS;
        snprintf(line, sizeof line, "trying %s again every %.1f s", r->path, RETRY_NS / 1e9);
        say(r, LC_LOG_WARN, line);
        return;
    }
    if (now < r->retry_at)
        return;
    r->retry_at = now + RETRY_NS;
    if (r->fd >= 0) {
        close(r->fd);
        r->fd = -1;
    }
    lc_error err;
    lc_error_clear(&err);
    if (connect_remote(r, &err) != 0)
        return;
    forget_snapshots(r);
    r->lost = false;
    snprintf(line, sizeof line, "the loader on %s is back (process %u) after %.1f s", r->path,
             r->hello ? r->hello->pid : 0, (double)(now - r->lost_at) / 1e9);
    r->lost_at = 0;
    say(r, LC_LOG_INFO, line);
    r->log_offset = r->log_last; /* the new process numbers its lines from 1 */
    r->server_seq = 0;
}

int lc_monitor_remote_new(const char *path, uint32_t interval_ms, bool logs, lc_monitor **out,
                          lc_error *err)
{
    *out = NULL;
    remote_monitor *r = lc_xcalloc(1, sizeof *r);
    r->base.ops = &remote_ops;
    r->path = lc_xstrdup(path);
    r->fd = -1;
    r->subscribed = interval_ms > 0;
    r->interval_ms = interval_ms;
    r->want_logs = logs;
    int rc = connect_remote(r, err);
    if (rc != 0) {
        remote_free(&r->base);
        return rc;
    }
    *out = &r->base;
    return 0;
}

const char *lc_monitor_remote_refused(lc_monitor *m)
{
    return ((remote_monitor *)m)->refused;
}

const Lcmon__Hello *lc_monitor_remote_hello(lc_monitor *m)
{
    return ((remote_monitor *)m)->hello;
}

bool lc_monitor_remote_wait_window(lc_monitor *m, lc_window w, double seconds)
{
    remote_monitor *r = (remote_monitor *)m;
    lc_snapshot_unref(remote_window(m, w)); /* subscribes to it */
    uint64_t deadline = lc_now_ns() + (uint64_t)(seconds * 1e9);
    while (!r->snap[w] && lc_now_ns() < deadline) {
        if ((r->lost && !r->subscribed) || r->refused)
            break;
        struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
        poll(&pfd, r->fd >= 0 ? 1 : 0, 50);
        pump(r, 0, 0);
    }
    return r->snap[w] != NULL;
}

bool lc_monitor_remote_wait_snapshot(lc_monitor *m, double seconds)
{
    return lc_monitor_remote_wait_window(m, LC_WINDOW_1S, seconds);
}
