/*
 * fuzz_monitor: bytes from any local client of the monitoring socket.
 *
 * Once per process: a real headless set-up, as `lcmon --no-ui` makes it: the
 * default chain (small) on an empty scratch data directory (so that it idles),
 * its local monitor, and the server on a scratch socket. Each input is one
 * client: it connects, sends the bytes, shuts down its sending side and
 * reads until the server closes. The first input byte says how the rest is
 * sent: as it is (the framing itself is under test), or as records of a
 * 2-byte length and a payload, each sent as one well-framed message (so that
 * the fuzzer reaches the requests without having to get lengths right).
 *
 * Invariants: the server closes every connection within the deadline (it
 * never hangs on a client); what it sends is whole frames, each a
 * ServerMessage, the hello first; every control request in the input before
 * the first bad frame gets exactly one reply, in order, carrying its
 * request id; the server still serves the next client.
 */
#include "fuzz.h"

#include "core/clock.h"
#include "monitor/local.h"
#include "monitor/server.h"
#include "monitor/wire.h"
#include "pipeline/config.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "monitor.pb-c.h"

static char sock_path[512];
static lc_monitor *monitor;
static lc_server *server;

static void teardown(void)
{
    lc_server_stop(server);
    lc_monitor_free(monitor); /* and the config it owns */
    char path[600];
    snprintf(path, sizeof path, "%s/data", fuzz_setup());
    rmdir(path);
    snprintf(path, sizeof path, "%s/pipe", fuzz_setup());
    unlink(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = fuzz_setup();
    char data[600], pipe[600];
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(pipe, sizeof pipe, "%s/pipe", dir);
    snprintf(sock_path, sizeof sock_path, "%s/sock", dir);
    mkdir(data, 0700);
    /* The default chain, small: a start or stop request builds or tears
     * down the whole pipeline, so its reservoir and pool are kept tiny. */
    char yaml[2048];
    int n = snprintf(yaml, sizeof yaml,
                     "stages:\n"
                     "  - {name: files, file_path_provider: {directory: '%s'}}\n"
                     "  - {name: sources, input: files, chunk_source_loader: {threads: 1}}\n"
                     "  - {name: pool, input: sources,\n"
                     "     shuffling_chunk_pool: {chunk_pool_size: 16, threads: 1}}\n"
                     "  - {name: validator, input: pool, chunk_validator: {}}\n"
                     "  - {name: unpacker, input: validator, chunk_unpacker: {}}\n"
                     "  - {name: sampler, input: unpacker,\n"
                     "     shuffling_frame_sampler: {reservoir_size: 16}}\n"
                     "  - {name: tensors, input: sampler, tensor_generator: {batch_size: 4}}\n"
                     "  - {name: writer, input: tensors, fifo_writer: {path: '%s'}}\n",
                     data, pipe);
    lc_error err = {0};
    lc_config *cfg = NULL; /* the monitor's, once it is made */
    if (lc_config_load_string(yaml, (size_t)n, "fuzz_monitor", &cfg, &err) < 0 ||
        !(monitor = lc_monitor_local_new(cfg, NULL, NULL, NULL)) ||
        lc_server_start(sock_path, monitor, &server, &err) < 0) {
        fprintf(stderr, "fuzz_monitor: cannot set up: %s\n", err.msg);
        abort();
    }
    atexit(teardown);
    return 0;
}

/* The requests a well-behaved server must answer: the control messages
 * among the whole frames before the first frame it must refuse. */
static size_t expected_replies(const uint8_t *p, size_t n, uint64_t *ids, size_t max_ids,
                               bool *clean)
{
    lc_wire_buf in = {.data = (uint8_t *)p, .len = n};
    size_t off = 0, replies = 0;
    *clean = true;
    for (;;) {
        lc_wire_buf rest = {.data = in.data + off, .len = in.len - off};
        const uint8_t *frame;
        size_t len;
        int rc = lc_wire_peek_frame(&rest, &frame, &len);
        if (rc <= 0) {
            *clean = rc == 0;
            break;
        }
        Lcmon__ClientMessage *m = lcmon__client_message__unpack(NULL, len, frame);
        if (!m) {
            *clean = false;
            break;
        }
        if (m->control) {
            if (replies < max_ids)
                ids[replies] = m->has_request_id ? m->request_id : 0;
            replies++;
        }
        lcmon__client_message__free_unpacked(m, NULL);
        off += 4 + len;
    }
    return replies;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* What goes on the wire. */
    uint8_t *wire = NULL;
    size_t wire_len = 0;
    if (data[0] & 1) {
        wire = malloc(size);
        memcpy(wire, data + 1, size - 1);
        wire_len = size - 1;
    } else {
        wire = malloc(2 * size + 8);
        fuzz_input in = {data + 1, size - 1};
        while (in.n >= 2) {
            size_t len = fuzz_u8(&in);
            len |= (size_t)fuzz_u8(&in) << 8;
            if (len > in.n)
                len = in.n;
            uint32_t le = (uint32_t)len;
            memcpy(wire + wire_len, &le, 4); /* little-endian, as the wire is */
            memcpy(wire + wire_len + 4, in.p, len);
            wire_len += 4 + len;
            in.p += len;
            in.n -= len;
        }
    }
    uint64_t ids[256];
    bool clean;
    size_t want = expected_replies(wire, wire_len, ids, 256, &clean);

    lc_error err = {0};
    int fd = lc_wire_connect(sock_path, &err);
    FUZZ_CHECK(fd >= 0);
    /* Send and read at once, so that neither side's buffer stalls us. */
    size_t sent = 0;
    bool shut = false;
    lc_wire_buf got = {0};
    uint64_t deadline = lc_now_ns() + 20000000000ull;
    for (;;) {
        if (sent == wire_len && !shut) {
            shutdown(fd, SHUT_WR);
            shut = true;
        }
        struct pollfd pfd = {.fd = fd, .events = (short)(POLLIN | (shut ? 0 : POLLOUT))};
        FUZZ_CHECK(lc_now_ns() < deadline); /* the server never holds a client forever */
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        if (pfd.revents & POLLOUT) {
            ssize_t w = send(fd, wire + sent, wire_len - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w > 0)
                sent += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR)
                sent = wire_len; /* closed on us: it refused the input */
        }
        if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
            uint8_t buf[65536];
            ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (r > 0)
                lc_wire_buf_append(&got, buf, (size_t)r);
            else if (r == 0 || (errno != EAGAIN && errno != EINTR))
                break;
        }
    }
    close(fd);
    free(wire);

    /* Whole frames, each a server message, the hello first. */
    size_t off = 0, frames = 0, replies = 0;
    while (off < got.len) {
        lc_wire_buf rest = {.data = got.data + off, .len = got.len - off};
        const uint8_t *frame;
        size_t len;
        FUZZ_CHECK(lc_wire_peek_frame(&rest, &frame, &len) == 1);
        Lcmon__ServerMessage *m = lcmon__server_message__unpack(NULL, len, frame);
        FUZZ_CHECK(m != NULL);
        if (frames == 0)
            FUZZ_CHECK(m->hello != NULL);
        if (m->control_response) {
            FUZZ_CHECK(replies < want);
            if (replies < 256)
                FUZZ_CHECK(m->request_id == ids[replies]);
            replies++;
        }
        lcmon__server_message__free_unpacked(m, NULL);
        off += 4 + len;
        frames++;
    }
    FUZZ_CHECK(frames >= 1);
    /* A clean input is answered whole; one the server refused at a bad frame
     * loses at most the replies that were still queued. */
    if (clean)
        FUZZ_CHECK(replies == want);
    lc_wire_buf_fini(&got);
    return 0;
}
