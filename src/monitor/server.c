/*
 * server: the monitoring socket of a headless lcmon (proto/monitor.proto).
 *
 * One thread runs a poll() loop over the listening socket, every client and
 * an eventfd that stop signals. Sockets are non-blocking; each client has an
 * input buffer (frames are parsed as they complete) and an output buffer.
 *
 * The loader is never at a client's mercy:
 *   - a frame announcing more than LC_WIRE_MAX_FRAME bytes, bytes that do
 *     not parse as a ClientMessage, a frame left unfinished for 10 s or cut
 *     short by a hang-up, close that client (logged, with its pid);
 *   - snapshots and log lines are only queued for a client whose output
 *     buffer is nearly empty, so a client that stops reading misses them
 *     instead of growing our memory; a client whose buffer still passes a
 *     hard limit (replies it never reads) is closed;
 *   - a buffer that grew for a large message or a burst of replies is given
 *     back once it is drained, so an idle client holds at most
 *     LC_SERVER_BUF_KEEP of each, not the 4 MiB of the largest frame it
 *     ever sent (the bytes of one client: server_client.c);
 *   - a client that sends nothing within 10 s of connecting is closed, and
 *     so is one without a subscription (no snapshots, no log lines) that has
 *     been idle for 10 s: nothing in or out. Subscribers stay as long as
 *     they like; a `lcmon ctl` or lcmon.Control that comes back later
 *     simply connects again;
 *   - at most LC_SERVER_MAX_CLIENTS at once, of which at most
 *     LC_SERVER_MAX_SUBSCRIBERS subscribe: the other CONTROL_PLACES are kept
 *     for clients without a subscription (control requests), so 64
 *     dashboards that read for ever cannot keep `lcmon ctl SOCKET stop`
 *     out. A subscription past them is refused (the client is told why,
 *     ServerMessage.refused, and closed). When every place is taken, a
 *     new connection gets the place of the client idle longest among those
 *     without a subscription idle for EVICT_IDLE_NS or more and the
 *     subscribers that stopped reading (their snapshots are being skipped):
 *     so clients that connect, say a word and sit there can never lock
 *     `lcmon ctl` or `lcmon attach` out. Only when every place holds a
 *     subscriber that reads, or a client busy right now, is a connection
 *     refused, and told why before it is closed;
 *   - refusals and evictions are logged one line per 10 s at most, with a
 *     count (each is at debug level), so a connect loop cannot flood the
 *     log; what it refused and closed is counted (lc_server_metrics), in the
 *     all-time snapshots it serves;
 *   - the pipeline itself never waits for this thread: snapshots are built
 *     from the metrics aggregates, and control goes through the monitor.
 *
 * A client that shuts down its sending side (`printf ... | socat`) still
 * gets the replies to every request it sent before: the server answers
 * them, flushes, and then closes (no more snapshots or log lines).
 *
 * The socket file (mode 0600) is taken and given back by sockfile.c: never
 * another process's socket, at start or at exit.
 */
#include "monitor/server.h"

#include "core/exit.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/thread.h"
#include "lc_config.h"
#include "monitor/command_wire.h"
#include "monitor/server_client.h"
#include "monitor/sockfile.h"
#include "monitor/wire.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define LC_SERVER_MAX_SUBSCRIBERS 64
#define CONTROL_PLACES 4 /* beyond the subscribers' */
#define LC_SERVER_MAX_CLIENTS (LC_SERVER_MAX_SUBSCRIBERS + CONTROL_PLACES)
#define SOFT_OUT_LIMIT (256u << 10) /* queue snapshots only below this */
#define LOG_BATCH 200
#define ACCEPTS_PER_TURN 64
#define SILENT_LIMIT_NS 10000000000ull     /* a client that says nothing this long is closed */
#define UNFINISHED_LIMIT_NS 10000000000ull /* ... or leaves a frame unfinished this long */
#define IDLE_LIMIT_NS 10000000000ull       /* ... or is idle this long without a subscription */
/* A client without a subscription idle this long may lose its place to a new
 * connection when every place is taken: long enough that a `ctl` in the
 * middle of its request (connected, asking, reading) never does. */
#define EVICT_IDLE_NS 1000000000ull
#define CROWD_REPORT_NS 10000000000ull /* at most one line this often on refusals */

/* Events logged at most once per CROWD_REPORT_NS, with a count. */
typedef struct crowd_count {
    uint64_t n;       /* since the last line */
    uint64_t next_ns; /* no line before then */
} crowd_count;

struct lc_server {
    lc_sockfile file;
    lc_monitor *monitor;
    int listen_fd, wake_fd;
    /* accept() failed for want of descriptors or memory: the listener
     * stays readable, so it is left out of poll until then (no spinning),
     * and said at most once a minute. */
    uint64_t accept_paused_until, accept_warned_ns;
    lc_thread thread;
    atomic_bool quit;
    lc_server_client clients[LC_SERVER_MAX_CLIENTS];
    size_t n_clients;
    unsigned next_id;
    lc_wire_buf hello; /* for the run hello_run (rebuilt when another starts) */
    uint64_t hello_run;
    crowd_count refused, evicted, refused_subs;
    long refused_pid; /* of the last one refused, for the log (0: unknown) */
    atomic_uint_fast64_t n_connections, n_refused, n_dropped_clients, g_clients;
};

/* --- the socket file -------------------------------------------------- */

/* A socket bound and listening at `at`; on failure nothing is left there. */
static int bind_and_listen(const char *at, struct stat *st, lc_error *err)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, at);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return lc_error_set(err, -errno, "socket: %s", strerror(errno));
    /* Only the loader's user may connect: no window with wider rights. */
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&addr, sizeof addr);
    int e = errno;
    umask(old);
    if (rc != 0) {
        close(fd);
        return lc_error_set(err, -e, "%s: cannot bind: %s", at, strerror(e));
    }
    chmod(at, 0600);
    if (lstat(at, st) != 0 || listen(fd, 16) != 0) {
        e = errno;
        close(fd);
        unlink(at);
        return lc_error_set(err, -e, "%s: cannot listen: %s", at, strerror(e));
    }
    return fd;
}

/* Bind and listen on path, which `file` takes (and gives back on failure):
 * under a name of its own (PATH.new, lc_sockfile_staging), then renamed to
 * PATH (sockfile.h says why), or at PATH itself when no such name is free
 * or fits a socket address. */
static int open_listener(const char *path, lc_sockfile *file, lc_error *err)
{
    char at[sizeof((struct sockaddr_un *)0)->sun_path];
    if (strlen(path) >= sizeof at)
        return lc_error_set(err, -ENAMETOOLONG, "%s: socket path too long (at most %zu bytes)",
                            path, sizeof at - 1);
    int rc = lc_sockfile_claim(file, path, err);
    if (rc != 0)
        return rc;
    lc_sockfile_staging(file, at, sizeof at);
    bool direct = strcmp(at, path) == 0;
    struct stat st;
    int fd = bind_and_listen(at, &st, err);
    if (fd >= 0 && !direct && rename(at, path) != 0) {
        int e = errno;
        close(fd);
        unlink(at);
        fd = lc_error_set(err, -e, "%s: cannot move the socket there from %s: %s", path, at,
                          strerror(e));
    }
    if (fd < 0) {
        lc_sockfile_release(file);
        return fd;
    }
    lc_sockfile_bound(file, &st);
    return fd;
}

/* --- messages ------------------------------------------------------------ */

/* The hello, naming the run the loader is on now: built again when a new
 * run has started since the last one (or `again`: after a reload). Its
 * stages and configuration are the monitor's hello, taken on this thread,
 * the one that sends the monitor its control requests (monitor.h). */
static void build_hello(lc_server *s, bool again)
{
    lc_snapshot *snap = lc_monitor_metrics(s->monitor, true);
    const Lcmon__DataLoaderMetricsProto *all = snap ? lc_snapshot_msg(snap) : NULL;
    uint64_t run = all ? all->run_id : 0, seed = all ? all->seed : 0;
    lc_snapshot_unref(snap);
    if (s->hello.len && run == s->hello_run && !again)
        return;
    s->hello.len = 0;
    s->hello_run = run;
    const Lcmon__Hello *mine = lc_monitor_hello(s->monitor);
    Lcmon__ServerMessage msg = LCMON__SERVER_MESSAGE__INIT;
    Lcmon__Hello hello = LCMON__HELLO__INIT;
    hello.has_protocol_version = true;
    hello.protocol_version = LC_PROTOCOL_VERSION;
    hello.lcmon_version = (char *)LC_VERSION;
    hello.has_pid = true;
    hello.pid = (uint32_t)getpid();
    hello.has_run_id = hello.has_seed = run != 0;
    hello.run_id = run;
    hello.seed = seed;
    if (mine) {
        hello.n_stages = mine->n_stages;
        hello.stages = mine->stages;
        hello.config = mine->config;
        hello.n_commands = mine->n_commands;
        hello.commands = mine->commands;
    }
    msg.hello = &hello;
    lc_wire_put_server(&s->hello, &msg);
}

/* Close client i; with a reason, it is logged at `level` and counted as
 * closed by the server (else it went by itself). */
static void close_client(lc_server *s, size_t i, lc_log_level level, const char *why)
{
    lc_server_client *c = &s->clients[i];
    if (why) {
        lc_log(level, "monitor client %u%s closed: %s", c->id, c->who, why);
        atomic_fetch_add(&s->n_dropped_clients, 1);
    } else if (c->out.len) { /* hung up in the middle of our replies */
        LC_DEBUG("monitor client %u%s disconnected with %zu bytes unsent", c->id, c->who,
                 c->out.len);
    } else {
        LC_DEBUG("monitor client %u%s disconnected", c->id, c->who);
    }
    lc_server_client_close(c);
    lc_wire_buf_fini(&c->in);
    lc_wire_buf_fini(&c->out);
    s->clients[i] = s->clients[--s->n_clients];
    atomic_store(&s->g_clients, s->n_clients);
}

/* Close client i for misbehaving (a warning), or as gone (why == NULL). */
static void drop_client(lc_server *s, size_t i, const char *why)
{
    close_client(s, i, LC_LOG_WARN, why);
}

static size_t subscribers(const lc_server *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_clients; i++)
        n += lc_server_client_subscribed(&s->clients[i]);
    return n;
}

/* Every place for a subscriber is taken: this client is told so, and
 * closed once it has read it; counted and said with the refusals. */
static void refuse_subscription(lc_server *s, lc_server_client *c)
{
    char why[256];
    snprintf(why, sizeof why,
             "every place for a subscriber is taken (%d subscribers read snapshots or log lines; "
             "%d more places are kept for clients without a subscription, such as lcmon ctl "
             "SOCKET stop): close one of them, or ask without subscribing",
             LC_SERVER_MAX_SUBSCRIBERS, CONTROL_PLACES);
    lc_server_client_refuse(c, why);
    atomic_fetch_add(&s->n_refused, 1);
    s->refused_subs.n++;
    s->refused_pid = lc_server_peer_pid(c->fd);
}

static void handle_message(void *ctx, lc_server_client *c, const Lcmon__ClientMessage *m)
{
    lc_server *s = ctx;
    c->spoke = true;
    if (m->subscribe && !lc_server_client_subscribed(c) && lc_server_subscribe_asks(m->subscribe) &&
        subscribers(s) >= LC_SERVER_MAX_SUBSCRIBERS) {
        refuse_subscription(s, c);
        return;
    }
    if (m->subscribe) {
        uint32_t ms = m->subscribe->has_interval_ms ? m->subscribe->interval_ms : 1000;
        c->interval_ms = ms == 0 ? 0 : (ms < 50 ? 50 : ms);
        c->next_due_ns = lc_now_ns();
        c->logs = m->subscribe->has_logs && m->subscribe->logs;
        c->log_after = m->subscribe->has_log_after ? m->subscribe->log_after : 0;
        c->windows = 0;
        for (size_t k = 0; k < m->subscribe->n_windows; k++)
            if ((unsigned)m->subscribe->windows[k] < LC_WINDOW_COUNT)
                c->windows |= 1u << m->subscribe->windows[k];
        c->windows &= ~(1u << LC_WINDOW_1S | 1u << LC_WINDOW_ALL); /* sent anyway */
    }
    if (m->control) {
        const char *name;
        Lcmon__ControlResponse *resp = lc_command_wire_serve(s->monitor, m->control, &name);
        Lcmon__ServerMessage out = LCMON__SERVER_MESSAGE__INIT;
        out.control_response = resp;
        out.has_request_id = m->has_request_id;
        out.request_id = m->request_id;
        lc_wire_put_server(&c->out, &out);
        lcmon__control_response__free_unpacked(resp, NULL);
        /* A subscriber gets a snapshot right after the reply, so that what it
         * shows next already reflects the request. */
        c->next_due_ns = lc_now_ns();
        /* The stages may have changed: every client hears them again (the
         * one that asked, after its reply). */
        if (name && strcmp(name, "reload") == 0) {
            build_hello(s, true);
            for (size_t i = 0; i < s->n_clients; i++)
                if (!s->clients[i].closing)
                    lc_wire_buf_append(&s->clients[i].out, s->hello.data, s->hello.len);
        }
    }
}

/* Log what was refused or evicted since the last line, if a line is due
 * (at most one of each per CROWD_REPORT_NS) or `final` (at stop). */
static void report_crowding(lc_server *s, uint64_t now, bool final)
{
    if (s->refused.n && (final || now >= s->refused.next_ns)) {
        char last[40] = "";
        if (s->refused_pid)
            snprintf(last, sizeof last, "; the last from pid %ld", s->refused_pid);
        LC_WARN("monitor socket: refused %llu connection%s in the last %llu s: every place was "
                "taken (%d clients, each subscribed and reading, or busy%s); `ss -xp` names "
                "the processes connected to %s",
                (unsigned long long)s->refused.n, s->refused.n == 1 ? "" : "s",
                (unsigned long long)(CROWD_REPORT_NS / 1000000000u), LC_SERVER_MAX_CLIENTS, last,
                s->file.path);
        s->refused.n = 0;
        s->refused.next_ns = now + CROWD_REPORT_NS;
    }
    if (s->refused_subs.n && (final || now >= s->refused_subs.next_ns)) {
        LC_WARN("monitor socket: refused %llu subscription%s in the last %llu s: %d subscribers "
                "read already (%d places are kept for control requests); `ss -xp` names the "
                "processes connected to %s",
                (unsigned long long)s->refused_subs.n, s->refused_subs.n == 1 ? "" : "s",
                (unsigned long long)(CROWD_REPORT_NS / 1000000000u), LC_SERVER_MAX_SUBSCRIBERS,
                CONTROL_PLACES, s->file.path);
        s->refused_subs.n = 0;
        s->refused_subs.next_ns = now + CROWD_REPORT_NS;
    }
    if (s->evicted.n && (final || now >= s->evicted.next_ns)) {
        LC_INFO("monitor socket: closed %llu idle client%s in the last %llu s to make room for "
                "new ones: every place was taken",
                (unsigned long long)s->evicted.n, s->evicted.n == 1 ? "" : "s",
                (unsigned long long)(CROWD_REPORT_NS / 1000000000u));
        s->evicted.n = 0;
        s->evicted.next_ns = now + CROWD_REPORT_NS;
    }
}

/* Every place is taken: close the client that has been idle longest among
 * those that may lose their place (see the top of this file), so that a new
 * one gets it. False when none may. */
static bool make_room(lc_server *s, uint64_t now)
{
    size_t best = s->n_clients;
    for (size_t i = 0; i < s->n_clients; i++) {
        const lc_server_client *c = &s->clients[i];
        if (c->closing)
            continue; /* answered and gone in a moment */
        bool idle = !lc_server_client_subscribed(c) && now >= c->active_ns + EVICT_IDLE_NS;
        bool deaf = lc_server_client_subscribed(c) && c->skipped > 0;
        if ((idle || deaf) && (best == s->n_clients || c->active_ns < s->clients[best].active_ns))
            best = i;
    }
    if (best == s->n_clients)
        return false;
    const lc_server_client *c = &s->clients[best];
    const char *what = lc_server_client_subscribed(c) ? "skipping its snapshots (not reading)"
                                                      : "idle without a subscription";
    char why[160];
    snprintf(why, sizeof why,
             "every place was taken and it had been %s for %.1f s: its place went to a new "
             "client",
             what, (double)(now - c->active_ns) / 1e9);
    close_client(s, best, LC_LOG_DEBUG, why);
    s->evicted.n++;
    return true;
}

/* Take up to ACCEPTS_PER_TURN new connections: a connect loop must not keep
 * this thread from its clients (the rest wait in the backlog). */
static void accept_clients(lc_server *s)
{
    for (int k = 0; k < ACCEPTS_PER_TURN; k++) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        uint64_t now = lc_now_ns();
        if (fd < 0) {
            int e = errno;
            if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
                s->accept_paused_until = now + 100000000u;
                if (!s->accept_warned_ns || now - s->accept_warned_ns >= 60000000000u) {
                    s->accept_warned_ns = now;
                    LC_WARN("monitor socket: cannot accept connections: %s; trying again every "
                            "0.1 s (raise the limit of open files, ulimit -n)",
                            strerror(e));
                }
            }
            return;
        }
        if (s->n_clients == LC_SERVER_MAX_CLIENTS && !make_room(s, now)) {
            /* No line of its own, even at debug level: a connect loop would
             * write one per try (report_crowding counts them instead). */
            s->refused_pid = lc_server_peer_pid(fd);
            atomic_fetch_add(&s->n_refused, 1);
            s->refused.n++;
            lc_server_refuse_fd(fd, "every place is taken (each by a subscriber that reads, or "
                                    "a client busy this second): try again in a moment");
            report_crowding(s, now, false);
            continue;
        }
        lc_server_client *c = &s->clients[s->n_clients++];
        memset(c, 0, sizeof *c);
        c->fd = fd;
        c->id = ++s->next_id;
        lc_server_peer_who(fd, c->who, sizeof c->who);
        c->interval_ms = 0; /* nothing until it subscribes */
        c->connected_ns = c->active_ns = now;
        build_hello(s, false);
        lc_wire_buf_append(&c->out, s->hello.data, s->hello.len);
        atomic_fetch_add(&s->n_connections, 1);
        atomic_store(&s->g_clients, s->n_clients);
        LC_DEBUG("monitor client %u%s connected", c->id, c->who);
        report_crowding(s, now, false);
    }
}

/* The snapshot message: the last second, all time (with the server's own
 * counts), and the windows of the mask. Packing only reads the shared
 * messages; the all-time one goes out as a shallow copy. */
static void pack_snapshots(lc_server *s, unsigned windows, lc_wire_buf *out)
{
    Lcmon__ServerMessage m = LCMON__SERVER_MESSAGE__INIT;
    lc_snapshot *snap[LC_WINDOW_COUNT] = {0};
    Lcmon__DataLoaderMetricsProto *extra[LC_WINDOW_COUNT];
    /* The windows first: all time, taken after, holds at least as much. */
    for (int w = 0; w < LC_WINDOW_COUNT; w++)
        if (windows & 1u << w && (snap[w] = lc_monitor_window(s->monitor, (lc_window)w)))
            extra[m.n_windows++] = (Lcmon__DataLoaderMetricsProto *)lc_snapshot_msg(snap[w]);
    snap[LC_WINDOW_1S] = lc_monitor_metrics(s->monitor, false);
    snap[LC_WINDOW_ALL] = lc_monitor_metrics(s->monitor, true);
    Lcmon__DataLoaderMetricsProto all_time = *lc_snapshot_msg(snap[LC_WINDOW_ALL]);
    Lcmon__MonitorSocketMetricsProto counts;
    lc_server_metrics(s, &counts);
    all_time.monitor_socket = &counts;
    m.last_second = (Lcmon__DataLoaderMetricsProto *)lc_snapshot_msg(snap[LC_WINDOW_1S]);
    m.all_time = &all_time;
    m.windows = extra;
    lc_wire_put_server(out, &m);
    for (int w = 0; w < LC_WINDOW_COUNT; w++)
        lc_snapshot_unref(snap[w]);
}

/* Queue snapshots and log lines for the clients that are due. */
static void feed_clients(lc_server *s)
{
    uint64_t now = lc_now_ns();
    lc_wire_buf snap = {0}, own = {0}; /* every client's; one that asked for windows */
    for (size_t i = 0; i < s->n_clients; i++) {
        lc_server_client *c = &s->clients[i];
        if (c->interval_ms && now >= c->next_due_ns) {
            c->next_due_ns = now + (uint64_t)c->interval_ms * 1000000u;
            if (c->out.len > SOFT_OUT_LIMIT) {
                if (c->skipped++ == 0)
                    LC_INFO("monitor client %u is not reading: its snapshots are skipped "
                            "until it catches up",
                            c->id);
            } else {
                if (c->skipped) {
                    LC_INFO("monitor client %u reads again, after missing %llu snapshots", c->id,
                            (unsigned long long)c->skipped);
                    c->skipped = 0;
                }
                lc_wire_buf *b = c->windows ? &own : &snap;
                if (c->windows)
                    own.len = 0;
                if (!b->len)
                    pack_snapshots(s, c->windows, b);
                lc_wire_buf_append(&c->out, b->data, b->len);
            }
        }
        if (c->logs && c->out.len <= SOFT_OUT_LIMIT) {
            lc_log_entry entries[LOG_BATCH];
            uint64_t next;
            size_t n = lc_monitor_read_log(s->monitor, c->log_after, entries, LOG_BATCH, &next);
            if (n) {
                Lcmon__ServerMessage m = LCMON__SERVER_MESSAGE__INIT;
                Lcmon__LogLine lines[LOG_BATCH], *ptrs[LOG_BATCH];
                for (size_t k = 0; k < n; k++) {
                    lcmon__log_line__init(&lines[k]);
                    lines[k].has_seq = lines[k].has_wall_time = lines[k].has_level = true;
                    lines[k].seq = entries[k].seq;
                    lines[k].wall_time = entries[k].wall_time;
                    lines[k].level = (uint32_t)entries[k].level;
                    lines[k].thread = entries[k].thread;
                    lines[k].text = entries[k].text;
                    ptrs[k] = &lines[k];
                }
                m.n_log = n;
                m.log = ptrs;
                lc_wire_put_server(&c->out, &m);
                c->log_after = next;
            }
        }
    }
    lc_wire_buf_fini(&snap);
    lc_wire_buf_fini(&own);
}

/* Before the wait: write what can be written, and close the clients that
 * connected and never said anything, or have nothing to do here any more
 * (they would hold a place forever). */
static void tend_clients(lc_server *s, uint64_t start)
{
    for (size_t i = 0; i < s->n_clients;) {
        const char *why = NULL;
        lc_server_client *c = &s->clients[i];
        if (!c->spoke && start - c->connected_ns > SILENT_LIMIT_NS) {
            drop_client(s, i,
                        c->in.len ? "it sent no whole message in the 10 s after connecting"
                                  : "it sent nothing in the 10 s after connecting");
            continue;
        }
        if (c->unfinished_since_ns && !c->closing &&
            start - c->unfinished_since_ns > UNFINISHED_LIMIT_NS) {
            drop_client(s, i, "it left a frame unfinished for 10 s");
            continue;
        }
        /* Not misbehaving, so not a warning: a client may well ask once and
         * keep its connection; it connects again when it has more to ask.
         * One mid-frame is the unfinished limit's. */
        if (c->spoke && !lc_server_client_subscribed(c) && !c->closing && c->in.len == 0 &&
            start > c->active_ns + IDLE_LIMIT_NS) {
            close_client(s, i, LC_LOG_INFO,
                         c->out.len ? "it read none of its replies for 10 s, and has no "
                                      "subscription"
                                    : "idle for 10 s without a subscription (no snapshots, "
                                      "no log lines)");
            continue;
        }
        if (!lc_server_client_flush(c, &why)) {
            drop_client(s, i, why);
            continue;
        }
        if (c->closing && !c->more && c->out.len == 0) {
            /* answered, as it asked before its EOF */
            drop_client(s, i, lc_server_client_hangup_why(c));
            continue;
        }
        i++;
    }
}

/* The poll set (the wake-up, the listening socket unless accepting is
 * paused, every client) and its timeout: the next snapshot due, the next
 * count of refusals to log, at most 100 ms. */
static int poll_set(const lc_server *s, struct pollfd *fds, uint64_t now)
{
    fds[0] = (struct pollfd){.fd = s->wake_fd, .events = POLLIN};
    bool paused = now < s->accept_paused_until;
    fds[1] = (struct pollfd){.fd = paused ? -1 : s->listen_fd, .events = POLLIN};
    int timeout = paused ? (int)((s->accept_paused_until - now) / 1000000u) + 1 : 100;
    for (size_t i = 0; i < s->n_clients; i++) {
        const lc_server_client *c = &s->clients[i];
        if (c->more)
            timeout = 0;
        fds[2 + i] = (struct pollfd){
            .fd = c->fd, .events = (short)((c->closing ? 0 : POLLIN) | (c->out.len ? POLLOUT : 0))};
        if (c->interval_ms) {
            int due = c->next_due_ns > now ? (int)((c->next_due_ns - now) / 1000000u) : 0;
            if (due < timeout)
                timeout = due;
        }
    }
    /* A count of refusals waiting for its line: at its time, even if nothing
     * else happens. */
    for (const crowd_count *k = &s->refused; k <= &s->refused_subs; k++) {
        if (k->n) {
            int due = k->next_ns > now ? (int)((k->next_ns - now) / 1000000u) + 1 : 0;
            if (due < timeout)
                timeout = due;
        }
    }
    return timeout;
}

/* After the wait: read, answer and write each of the `polled` clients.
 * From the end, so that dropping one does not move an unvisited one (and
 * indices stay valid while none is added). */
static void serve_polled(lc_server *s, const struct pollfd *fds, size_t polled)
{
    for (size_t i = polled; i-- > 0;) {
        short re = fds[2 + i].revents;
        lc_server_client *c = &s->clients[i];
        if (!re && !c->more)
            continue;
        const char *why = NULL;
        if ((re & POLLHUP) && c->closing) {
            drop_client(s, i, lc_server_client_hangup_why(c)); /* gone: nobody to answer */
            continue;
        }
        if ((re & (POLLIN | POLLHUP | POLLERR)) && !c->closing && !lc_server_client_recv(c, &why)) {
            drop_client(s, i, why);
            continue;
        }
        if (!lc_server_client_serve(c, handle_message, s, &why)) {
            drop_client(s, i, why);
            continue;
        }
        if ((re & POLLOUT) && !lc_server_client_flush(&s->clients[i], &why))
            drop_client(s, i, why);
    }
}

static void *server_main(void *arg)
{
    lc_server *s = arg;
    struct pollfd fds[2 + LC_SERVER_MAX_CLIENTS];
    while (!atomic_load(&s->quit)) {
        feed_clients(s);
        uint64_t start = lc_now_ns();
        report_crowding(s, start, false);
        tend_clients(s, start);
        int timeout = poll_set(s, fds, lc_now_ns());
        size_t polled = s->n_clients;
        int n = poll(fds, 2 + polled, timeout);
        if (n < 0 && errno != EINTR) {
            LC_ERROR("monitor socket: poll failed: %s", strerror(errno));
            break;
        }
        if (n < 0)
            continue;
        if (fds[0].revents)
            break;
        serve_polled(s, fds, polled); /* clients first, then new ones */
        if (fds[1].revents & POLLIN)
            accept_clients(s);
    }
    return NULL;
}

int lc_server_start(const char *path, lc_monitor *monitor, lc_server **out, lc_error *err)
{
    *out = NULL;
    lc_server *s = lc_xcalloc(1, sizeof *s);
    int fd = open_listener(path, &s->file, err);
    if (fd < 0) {
        free(s);
        return fd;
    }
    s->monitor = monitor;
    s->listen_fd = fd;
    s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->wake_fd < 0) {
        int e = errno;
        close(fd);
        lc_sockfile_release(&s->file);
        free(s);
        return lc_error_set(err, -e, "eventfd: %s", strerror(e));
    }
    build_hello(s, false);
    lc_exit_remove_at_exit(path); /* a stop cut short still removes it */
    lc_thread_start(&s->thread, "lc-monitor", server_main, s);
    LC_INFO("serving metrics and control on %s", path);
    *out = s;
    return 0;
}

void lc_server_metrics(lc_server *s, Lcmon__MonitorSocketMetricsProto *out)
{
    lcmon__monitor_socket_metrics_proto__init(out);
    out->has_clients = out->has_connections = out->has_refused = out->has_closed = true;
    out->clients = (uint32_t)atomic_load(&s->g_clients);
    out->connections = atomic_load(&s->n_connections);
    out->refused = atomic_load(&s->n_refused);
    out->closed = atomic_load(&s->n_dropped_clients);
}

void lc_server_stop(lc_server *s)
{
    if (!s)
        return;
    atomic_store(&s->quit, true);
    uint64_t one = 1;
    if (write(s->wake_fd, &one, sizeof one) < 0)
        LC_WARN("monitor socket: cannot wake the server thread: %s", strerror(errno));
    lc_thread_join(&s->thread);
    report_crowding(s, lc_now_ns(), true); /* no count goes unsaid */
    while (s->n_clients)
        drop_client(s, s->n_clients - 1, NULL);
    close(s->listen_fd);
    close(s->wake_fd);
    lc_exit_forget(s->file.path);
    lc_sockfile_release(&s->file); /* the socket only if it is still ours */
    lc_wire_buf_fini(&s->hello);
    free(s);
}
