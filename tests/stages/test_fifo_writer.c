/*
 * fifo_writer, run standalone and fed batches built here ("x" float32 [B,3]
 * and "y" int64 [B] with values known per batch):
 *   (a) regular_file: the file decodes to exactly the batches, then DONE;
 *       a layout change puts a second header between two batches; the
 *       header decoder rejects a bad magic, version or length clearly;
 *   (b) pipe: waiting_for_reader while nobody reads; readers that leave in
 *       the middle of a payload (while the writer is blocked on the full
 *       pipe) and at a batch boundary (while it is blocked or idle); every
 *       new reader sees a fresh header, then whole batches whose seq
 *       continues without gap or repeat; finally DONE, end of file, and the
 *       stage finished;
 *   (c) a path that is not a named pipe, or missing with create off: start
 *       fails naming the path;
 *   (d) stop is prompt while blocked on a full pipe whose reader never
 *       reads (the torn batch waits at most the grace time), while waiting
 *       for a reader, and while waiting for input (then DONE "stopped");
 *   (e) an empty finite stream: header without tensors, DONE, finished;
 *   (f) runs: a writer stopped and started again while one reader keeps
 *       the pipe open: every batch written before the stop, DONE
 *       "stopped", end of file, then the new run's header (another run id)
 *       and its batches from seq 0; after a torn batch, the new writer
 *       waits until the reader has drained it and met the end of file;
 *   (g) a trainer that waits for batches (the writer waits for input, so
 *       the trainer's step is hidden): a stop in the middle of a batch
 *       waits stop_grace for it, and a step twice as long as the half
 *       second a known fast reader gets still sees the batch whole, then
 *       DONE.
 * The test does not ignore SIGPIPE: the stage must survive readers leaving
 * on its own. Every read has a timeout.
 */
#include "check.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/metrics.h"
#include "format/batch.h"
#include "format/batch_stream.h"
#include "standalone.h"
#include "stages/items.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

extern const lc_stage_class lc_fifo_writer_class;

#define B 1024
#define READ_TIMEOUT 5.0

static lc_batch_layout layout, layout2;

static void make_layouts(void)
{
    lc_batch_layout_init(&layout, B);
    lc_batch_layout_add(&layout, "x", LC_DTYPE_F32, 1, (const uint64_t[]){3});
    lc_batch_layout_add(&layout, "y", LC_DTYPE_I64, 0, NULL);
    lc_batch_layout_init(&layout2, 10);
    lc_batch_layout_add(&layout2, "x", LC_DTYPE_F32, 1, (const uint64_t[]){3});
    lc_batch_layout_add(&layout2, "y", LC_DTYPE_I64, 0, NULL);
    lc_batch_layout_add(&layout2, "z", LC_DTYPE_BOOL, 1, (const uint64_t[]){2});
}

static lc_batch *make_batch(const lc_batch_layout *l, uint64_t seq, uint64_t rows)
{
    lc_batch *b = lc_batch_new(l);
    b->rows = rows;
    float *x = lc_batch_tensor(b, 0);
    int64_t *y = lc_batch_tensor(b, 1);
    for (uint64_t r = 0; r < l->batch_size; r++) {
        for (uint64_t c = 0; c < 3; c++)
            x[r * 3 + c] = (float)(seq * 1000 + r * 3 + c);
        y[r] = (int64_t)(seq * 1000000 + r);
    }
    return b;
}

/* True when payload holds batch seq's values in its first `rows` rows. The
 * payload may sit anywhere in a buffer, so values are copied out. */
static bool payload_ok(const lc_batch_layout *l, const uint8_t *payload, uint64_t seq,
                       uint64_t rows)
{
    const uint8_t *x = payload + l->tensors[0].offset;
    const uint8_t *y = payload + l->tensors[1].offset;
    for (uint64_t r = 0; r < rows; r++) {
        for (uint64_t c = 0; c < 3; c++) {
            float v;
            memcpy(&v, x + (r * 3 + c) * sizeof v, sizeof v);
            if (v != (float)(seq * 1000 + r * 3 + c))
                return false;
        }
        int64_t w;
        memcpy(&w, y + r * sizeof w, sizeof w);
        if (w != (int64_t)(seq * 1000000 + r))
            return false;
    }
    return true;
}

static void put_batch(lc_queue *q, const lc_batch_layout *l, uint64_t seq, uint64_t rows,
                      uint32_t flags)
{
    lc_batch_item item = {.batch = make_batch(l, seq, rows), .seq = seq, .flags = flags};
    if (lc_queue_put(q, &item, NULL) != 0) {
        fprintf(stderr, "queue closed unexpectedly\n");
        exit(2);
    }
}

static bool layouts_equal(const lc_batch_layout *a, const lc_batch_layout *b)
{
    if (a->n_tensors != b->n_tensors || a->batch_size != b->batch_size ||
        a->total_bytes != b->total_bytes)
        return false;
    for (uint32_t i = 0; i < a->n_tensors; i++) {
        const lc_tensor_desc *x = &a->tensors[i], *y = &b->tensors[i];
        if (strcmp(x->name, y->name) != 0 || x->dtype != y->dtype || x->ndim != y->ndim ||
            x->offset != y->offset || x->nbytes != y->nbytes ||
            memcmp(x->shape, y->shape, sizeof x->shape[0] * x->ndim) != 0)
            return false;
    }
    return true;
}

/* Metrics: flush the stage, fold into a running total, return the fresh
 * value of a gauge (-1 when absent). */
static lc_stage_metrics totals;

static int64_t gauge(lc_stage *s, const char *name)
{
    static lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    lc_stage_metrics_merge(&totals, &m);
    const lc_metric_slot *g = lc_metrics_find(&m, name);
    return g ? g->value : -1;
}

static bool wait_gauge(lc_stage *s, const char *name, int64_t value, double timeout)
{
    double end = lc_now_seconds() + timeout;
    while (lc_now_seconds() < end) {
        if (gauge(s, name) == value)
            return true;
        lc_sleep_seconds(0.005);
    }
    return false;
}

static uint64_t total_count(const char *name)
{
    const lc_metric_slot *c = lc_metrics_find(&totals, name);
    return c ? c->count : 0;
}

static bool wait_finished(lc_stage *s, double timeout)
{
    double end = lc_now_seconds() + timeout;
    while (!atomic_load(&s->finished) && lc_now_seconds() < end)
        lc_sleep_seconds(0.005);
    return atomic_load(&s->finished);
}

/* ---- reading a pipe with timeouts ---- */

typedef struct reader {
    int fd;
    bool eof;
    uint64_t batches; /* whole batches read on this connection */
    bool hup;         /* the writer was seen gone: only `tail` bytes more are its */
    uint64_t tail;
} reader;

static void reader_open(reader *r, const char *path)
{
    /* Non-blocking so that the open itself cannot hang; every read waits in
     * poll for data first. */
    r->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    r->eof = false;
    r->batches = 0;
    r->hup = false;
    if (r->fd < 0) {
        fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
        exit(2);
    }
}

static void reader_close(reader *r)
{
    close(r->fd);
    r->fd = -1;
}

/* Read n bytes; false on end of file or timeout (the test then fails). */
static bool read_exact(reader *r, void *buf, size_t n)
{
    uint8_t *p = buf;
    double end = lc_now_seconds() + READ_TIMEOUT;
    while (n > 0) {
        int ms = (int)((end - lc_now_seconds()) * 1000);
        if (ms <= 0) {
            fprintf(stderr, "read timed out with %zu bytes to go\n", n);
            return false;
        }
        struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
        int rc = poll(&pfd, 1, ms);
        if (rc < 0 && errno != EINTR)
            return false;
        if (rc <= 0)
            continue;
        /* As lcmon's reader does: once the writer is seen gone, what is
         * unread then is all that is left of its run (a next writer waits
         * until it is read, but may come before the end of file is). */
        if ((pfd.revents & POLLHUP) && !r->hup) {
            r->hup = true;
            r->tail = 0;
            int unread = 0;
            if ((pfd.revents & POLLIN) && ioctl(r->fd, FIONREAD, &unread) == 0 && unread > 0)
                r->tail = (uint64_t)unread;
        }
        size_t want = r->hup && r->tail < n ? (size_t)r->tail : n;
        ssize_t got = want ? read(r->fd, p, want) : 0;
        if (got > 0 && r->hup)
            r->tail -= (uint64_t)got;
        if (got == 0) {
            r->eof = true;
            return false;
        }
        if (got < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            return false;
        }
        p += got;
        n -= (size_t)got;
        /* The read emptied the pipe: an end of file now (the writer went
         * after the poll, unseen) is the end of its run too. */
        if (n > 0 && !r->hup && (size_t)got < want) {
            ssize_t more = read(r->fd, p, n);
            if (more == 0) {
                r->hup = true;
                r->tail = 0;
            } else if (more > 0) {
                p += more;
                n -= (size_t)more;
            }
        }
    }
    return true;
}

/* True when nothing more comes: end of file within the timeout. */
static bool read_eof(reader *r)
{
    uint8_t byte;
    return !read_exact(r, &byte, 1) && r->eof;
}

static lc_stream_run last_run; /* of the last header read_header read */

static bool read_header(reader *r, lc_batch_layout *out)
{
    uint8_t buf[4096];
    if (!read_exact(r, buf, LC_STREAM_HEADER_PREFIX_BYTES))
        return false;
    size_t need = 0;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_stream_header_decode(buf, LC_STREAM_HEADER_PREFIX_BYTES, out, NULL, &need, &err);
    if (rc != LC_ETRUNC || need > sizeof buf) {
        fprintf(stderr, "header prefix: %s\n", err.msg);
        return false;
    }
    if (!read_exact(r, buf + LC_STREAM_HEADER_PREFIX_BYTES, need - LC_STREAM_HEADER_PREFIX_BYTES))
        return false;
    size_t used = 0;
    rc = lc_stream_header_decode(buf, need, out, &last_run, &used, &err);
    CHECK(last_run.id != 0 && last_run.started_ms > 1700000000000ull);
    if (rc != 0 || used != need) {
        fprintf(stderr, "header: %s\n", err.msg);
        return false;
    }
    return true;
}

/* Read one batch frame and its payload, checking the values. */
static bool read_batch(reader *r, const lc_batch_layout *l, uint64_t expect_seq,
                       uint32_t expect_flags)
{
    uint8_t fr[LC_STREAM_FRAME_BYTES];
    lc_stream_frame f;
    if (!read_exact(r, fr, sizeof fr) || lc_stream_frame_decode(fr, sizeof fr, &f, NULL) != 0)
        return false;
    CHECK_EQ_INT(f.kind, LC_STREAM_BATCH);
    CHECK_EQ_U64(f.seq, expect_seq);
    CHECK_EQ_U64(f.flags, expect_flags);
    CHECK_EQ_U64(f.rows, l->batch_size);
    CHECK_EQ_U64(f.payload_bytes, l->total_bytes);
    if (f.kind != LC_STREAM_BATCH || f.payload_bytes != l->total_bytes)
        return false;
    uint8_t *payload = malloc(l->total_bytes);
    bool ok = read_exact(r, payload, l->total_bytes);
    CHECK(ok);
    if (ok)
        CHECK(payload_ok(l, payload, expect_seq, f.rows));
    free(payload);
    if (ok)
        r->batches++;
    return ok && f.seq == expect_seq;
}

static bool read_done_reason(reader *r, uint64_t expect, uint32_t reason)
{
    uint8_t buf[LC_STREAM_DONE_BYTES];
    lc_stream_frame f;
    if (!read_exact(r, buf, sizeof buf) || lc_stream_frame_decode(buf, sizeof buf, &f, NULL) != 0)
        return false;
    CHECK_EQ_INT(f.kind, LC_STREAM_DONE);
    CHECK_EQ_U64(f.batches, expect);
    CHECK_EQ_U64(f.reason, reason);
    return f.kind == LC_STREAM_DONE;
}

static bool read_done(reader *r, uint64_t expect)
{
    return read_done_reason(r, expect, LC_STREAM_END_DATA);
}

/* A writer to path; stop_grace when grace > 0, else the default. */
static lc_stage *new_writer_grace(const char *path, bool regular, lc_queue *in, double grace)
{
    char yaml[4200], extra[64] = "";
    if (grace > 0)
        snprintf(extra, sizeof extra, ", stop_grace: %g", grace);
    snprintf(yaml, sizeof yaml, "{path: '%s', regular_file: %s%s}", path,
             regular ? "true" : "false", extra);
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_standalone_new(&lc_fifo_writer_class, "fifo", yaml, in, 0, NULL, &s, &err) != 0) {
        fprintf(stderr, "fifo_writer: %s\n", err.msg);
        exit(2);
    }
    return s;
}

static lc_stage *new_writer(const char *path, bool regular, lc_queue *in)
{
    return new_writer_grace(path, regular, in, 0);
}

/* ---- (a) regular file ---- */

/* Walk a whole stream in memory; returns the number of batches, checking
 * each against the layout in force at its seq (layout, or layout2 from
 * relayout_at on) and the values. */
static uint64_t walk_stream(const uint8_t *data, size_t len, uint64_t n_expect, uint64_t last_rows,
                            uint64_t relayout_at, int *headers)
{
    size_t pos = 0;
    uint64_t seq = 0;
    lc_batch_layout cur;
    *headers = 0;
    lc_error err;
    for (;;) {
        lc_stream_frame f;
        lc_error_clear(&err);
        if (lc_stream_frame_decode(data + pos, len - pos, &f, &err) != 0) {
            fprintf(stderr, "at %zu: %s\n", pos, err.msg);
            CHECK(false);
            return seq;
        }
        if (f.kind == LC_STREAM_HEADER) {
            size_t used = 0;
            CHECK_OK(lc_stream_header_decode(data + pos, len - pos, &cur, NULL, &used, &err));
            CHECK(layouts_equal(&cur, seq >= relayout_at ? &layout2 : &layout));
            (*headers)++;
            pos += used;
            continue;
        }
        if (f.kind == LC_STREAM_DONE) {
            CHECK_EQ_U64(f.batches, n_expect);
            pos += LC_STREAM_DONE_BYTES;
            CHECK_EQ_U64(pos, len); /* nothing after DONE */
            return seq;
        }
        CHECK_EQ_U64(f.seq, seq);
        bool last = seq + 1 == n_expect;
        CHECK_EQ_U64(f.flags, last ? LC_STREAM_FLAG_LAST : 0u);
        CHECK_EQ_U64(f.rows, last ? last_rows : cur.batch_size);
        CHECK_EQ_U64(f.payload_bytes, cur.total_bytes);
        pos += LC_STREAM_FRAME_BYTES;
        if (len - pos < cur.total_bytes) {
            CHECK(false);
            return seq;
        }
        CHECK(payload_ok(&cur, data + pos, seq, f.rows));
        pos += cur.total_bytes;
        seq++;
    }
}

static void test_regular_file(uint64_t relayout_at)
{
    const char *path = tu_path(relayout_at == UINT64_MAX ? "stream.bin" : "stream2.bin");
    tu_write_file(path, "old contents to be truncated", 28);
    lc_queue *in = lc_queue_new("test.in", &lc_item_batch, 16, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_writer(path, true, in);
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_start(s, &err));
    const uint64_t n = 5, last_rows = 7;
    uint64_t rows = 0;
    for (uint64_t seq = 0; seq < n; seq++) {
        const lc_batch_layout *l = seq >= relayout_at ? &layout2 : &layout;
        bool last = seq + 1 == n;
        put_batch(in, l, seq, last ? last_rows : l->batch_size, last ? LC_ITEM_END_OF_STREAM : 0);
        rows += last ? last_rows : l->batch_size;
    }
    lc_queue_close(in);
    CHECK(wait_finished(s, 10));
    memset(&totals, 0, sizeof totals);
    gauge(s, "reader_connected");
    CHECK_EQ_U64(total_count("batches"), n);
    CHECK_EQ_U64(total_count("rows"), rows);
    CHECK_EQ_U64(total_count("readers"), 1);
    lc_standalone_free(s);
    lc_queue_free(in);

    size_t len = 0;
    uint8_t *data = tu_read_file(path, &len);
    CHECK(data != NULL);
    if (!data)
        return;
    int headers = 0;
    CHECK_EQ_U64(walk_stream(data, len, n, last_rows, relayout_at, &headers), n);
    CHECK_EQ_INT(headers, relayout_at < n ? 2 : 1);

    if (relayout_at == UINT64_MAX) {
        /* The decoder's refusals name the problem. */
        lc_batch_layout l;
        size_t used = 0;
        uint8_t bad[64];
        memcpy(bad, data, sizeof bad);
        bad[0] = 'X';
        lc_error_clear(&err);
        CHECK_EQ_INT(lc_stream_header_decode(bad, sizeof bad, &l, NULL, &used, &err), LC_EFORMAT);
        CHECK(tu_contains(err.msg, "LCMONBS"));
        memcpy(bad, data, sizeof bad);
        bad[8] = LC_STREAM_VERSION + 1;
        lc_error_clear(&err);
        CHECK_EQ_INT(lc_stream_header_decode(bad, sizeof bad, &l, NULL, &used, &err), LC_EVERSION);
        CHECK(tu_contains(err.msg, "version 6"));
        lc_error_clear(&err);
        CHECK_EQ_INT(lc_stream_header_decode(data, 20, &l, NULL, &used, &err), LC_ETRUNC);
        CHECK_EQ_U64(used, lc_stream_header_encode(&layout, NULL, NULL, 0));
        lc_stream_frame f;
        CHECK_EQ_INT(lc_stream_frame_decode((const uint8_t *)"JUNKJUNK", 8, &f, NULL), LC_EFORMAT);
    }
    free(data);
}

/* ---- (b) pipe: readers come and go ---- */

static void test_pipe_reconnects(void)
{
    const char *path = tu_path("pipe_b");
    lc_queue *in = lc_queue_new("test.in", &lc_item_batch, 128, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_writer(path, false, in);
    memset(&totals, 0, sizeof totals);
    lc_error err;
    lc_error_clear(&err);
    /* 80 batches of 20 KiB: more than the 1 MiB pipe holds, so the writer
     * blocks on the full pipe while the first readers read. */
    for (uint64_t seq = 0; seq < 80; seq++)
        put_batch(in, &layout, seq, B, 0);
    CHECK_OK(lc_standalone_start(s, &err));
    CHECK(wait_gauge(s, "waiting_for_reader", 1, 5));
    lc_sleep_seconds(0.2);
    CHECK_EQ_INT(gauge(s, "waiting_for_reader"), 1);
    CHECK_EQ_INT(gauge(s, "reader_connected"), 0);

    /* Reader 1: three batches, then half of the fourth's payload. */
    reader r;
    lc_batch_layout got;
    reader_open(&r, path);
    CHECK(read_header(&r, &got));
    CHECK(layouts_equal(&got, &layout));
    for (uint64_t seq = 0; seq < 3; seq++)
        CHECK(read_batch(&r, &layout, seq, 0));
    CHECK(wait_gauge(s, "pipe_full", 1, 5));
    lc_sleep_seconds(0.05); /* blocked_ms has something to count */
    CHECK_EQ_INT(gauge(s, "reader_connected"), 1);
    uint8_t part[LC_STREAM_FRAME_BYTES + 5000];
    CHECK(read_exact(&r, part, sizeof part));
    reader_close(&r);
    CHECK(wait_gauge(s, "waiting_for_reader", 1, 5));

    /* Reader 2: a fresh header, then batch 3 again, whole; leaves at a batch
     * boundary after batch 40. */
    reader_open(&r, path);
    CHECK(read_header(&r, &got));
    CHECK(layouts_equal(&got, &layout));
    for (uint64_t seq = 3; seq <= 40; seq++)
        if (!read_batch(&r, &layout, seq, 0)) {
            CHECK(false);
            break;
        }
    reader_close(&r);
    CHECK(wait_gauge(s, "reader_connected", 0, 5));
    CHECK(wait_gauge(s, "waiting_for_reader", 1, 5));

    /* Reader 3 takes the rest and leaves while the writer is idle. */
    reader_open(&r, path);
    CHECK(read_header(&r, &got));
    for (uint64_t seq = 41; seq < 80; seq++)
        if (!read_batch(&r, &layout, seq, 0)) {
            CHECK(false);
            break;
        }
    lc_sleep_seconds(0.1);
    reader_close(&r);
    CHECK(wait_gauge(s, "reader_connected", 0, 5));

    /* The end of a finite run: reader 4 gets the last batches and DONE. */
    for (uint64_t seq = 80; seq < 90; seq++)
        put_batch(in, &layout, seq, B, seq == 89 ? LC_ITEM_END_OF_STREAM : 0);
    lc_queue_close(in);
    CHECK(wait_gauge(s, "waiting_for_reader", 1, 5));
    reader_open(&r, path);
    CHECK(read_header(&r, &got));
    for (uint64_t seq = 80; seq < 90; seq++)
        if (!read_batch(&r, &layout, seq, seq == 89 ? LC_STREAM_FLAG_LAST : 0)) {
            CHECK(false);
            break;
        }
    CHECK(read_done(&r, 10));
    CHECK(read_eof(&r));
    reader_close(&r);
    CHECK(wait_finished(s, 5));
    gauge(s, "reader_connected");
    CHECK_EQ_U64(total_count("readers"), 4);
    CHECK_EQ_U64(total_count("disconnects"), 3);
    CHECK(total_count("resent_batches") >= 1);
    CHECK(total_count("batches") >= 90);
    CHECK(total_count("blocked_ms") > 0);
    /* The sink's items out are its batches, the same number everywhere. */
    CHECK_EQ_U64(totals.items_out, total_count("batches"));
    /* The log numbers the connections, though metrics flushes came between. */
    CHECK(tu_log_has("(connection 4)"));
    lc_standalone_free(s);
    lc_queue_free(in);
}

/* ---- (c) refusals at start ---- */

static void test_start_refusals(void)
{
    const char *path = tu_path("not_a_pipe");
    tu_write_file(path, "data", 4);
    lc_queue *in = lc_queue_new("test.in", &lc_item_batch, 4, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_writer(path, false, in);
    lc_error err;
    lc_error_clear(&err);
    CHECK(lc_standalone_start(s, &err) != 0);
    CHECK(tu_contains(err.msg, path));
    CHECK(tu_contains(err.msg, "not a named pipe"));
    lc_standalone_free(s);

    char yaml[4200];
    const char *missing = tu_path("missing_pipe");
    snprintf(yaml, sizeof yaml, "{path: '%s', create: false}", missing);
    s = NULL;
    CHECK_OK(lc_standalone_new(&lc_fifo_writer_class, "fifo", yaml, in, 0, NULL, &s, &err));
    lc_error_clear(&err);
    CHECK(lc_standalone_start(s, &err) != 0);
    CHECK(tu_contains(err.msg, missing));
    lc_standalone_free(s);

    /* ${VAR} expansion in the path. */
    setenv("LC_TEST_FIFO_DIR", tu_tmpdir(), 1);
    s = NULL;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_new(&lc_fifo_writer_class, "fifo",
                               "{path: '${LC_TEST_FIFO_DIR}/not_a_pipe'}", in, 0, NULL, &s, &err));
    lc_error_clear(&err);
    CHECK(lc_standalone_start(s, &err) != 0);
    CHECK(tu_contains(err.msg, path));
    lc_standalone_free(s);
    lc_queue_free(in);
}

/* ---- (d) stop is prompt ---- */

static double timed_stop(lc_stage *s)
{
    double t0 = lc_now_seconds();
    lc_standalone_stop(s);
    return lc_now_seconds() - t0;
}

static void test_prompt_stop(void)
{
    const char *path = tu_path("pipe_d");
    /* Blocked on a full pipe whose reader never reads. */
    lc_queue *in = lc_queue_new("test.in", &lc_item_batch, 128, LC_OVERFLOW_BLOCK);
    for (uint64_t seq = 0; seq < 100; seq++)
        put_batch(in, &layout, seq, B, 0);
    lc_stage *s = new_writer(path, false, in);
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_start(s, &err));
    reader r;
    reader_open(&r, path);
    CHECK(wait_gauge(s, "pipe_full", 1, 5));
    double dt = timed_stop(s);
    CHECK(dt < 1.0);
    printf("stop while blocked on a full pipe: %.3f s\n", dt);
    CHECK(!atomic_load(&s->finished));
    reader_close(&r);
    lc_standalone_free(s);
    lc_queue_free(in);

    /* Waiting for a reader. */
    in = lc_queue_new("test.in", &lc_item_batch, 4, LC_OVERFLOW_BLOCK);
    put_batch(in, &layout, 0, B, 0);
    s = new_writer(path, false, in);
    CHECK_OK(lc_standalone_start(s, &err));
    CHECK(wait_gauge(s, "waiting_for_reader", 1, 5));
    dt = timed_stop(s);
    CHECK(dt < 1.0);
    lc_standalone_free(s);
    lc_queue_free(in);

    /* Waiting for input, with a reader connected; the input stays open. */
    in = lc_queue_new("test.in", &lc_item_batch, 4, LC_OVERFLOW_BLOCK);
    put_batch(in, &layout, 0, B, 0);
    s = new_writer(path, false, in);
    CHECK_OK(lc_standalone_start(s, &err));
    reader_open(&r, path);
    lc_batch_layout got;
    CHECK(read_header(&r, &got));
    CHECK(read_batch(&r, &layout, 0, 0));
    lc_sleep_seconds(0.1);
    dt = timed_stop(s);
    CHECK(dt < 1.0);
    /* Stopped at a batch boundary: DONE "stopped", then end of file. */
    CHECK(read_done_reason(&r, 1, LC_STREAM_END_STOPPED));
    CHECK(read_eof(&r));
    reader_close(&r);
    lc_standalone_free(s);
    lc_queue_free(in);
}

/* ---- (e) an empty finite stream ---- */

static void test_empty_stream(void)
{
    const char *path = tu_path("pipe_e");
    lc_queue *in = lc_queue_new("test.in", &lc_item_batch, 4, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_writer(path, false, in);
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_start(s, &err));
    lc_queue_close(in);
    CHECK(wait_gauge(s, "waiting_for_reader", 1, 5));
    CHECK(!atomic_load(&s->finished));
    reader r;
    reader_open(&r, path);
    lc_batch_layout got;
    CHECK(read_header(&r, &got));
    CHECK_EQ_INT(got.n_tensors, 0);
    CHECK(read_done(&r, 0));
    CHECK(read_eof(&r));
    reader_close(&r);
    CHECK(wait_finished(s, 5));
    lc_standalone_free(s);
    lc_queue_free(in);
}

/* ---- (f) runs: a writer stopped and started while the reader stays ---- */

/* Wait until the pipe has something to read (a new writer's first bytes). */
static bool wait_data(reader *r, double timeout)
{
    struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
    return poll(&pfd, 1, (int)(timeout * 1000)) == 1 && (pfd.revents & POLLIN);
}

static void test_runs(void)
{
    const char *path = tu_path("pipe_f");
    lc_error err;
    lc_error_clear(&err);
    reader r;
    lc_batch_layout got;

    /* Run 1: five batches; the reader reads three, then the writer stops. */
    lc_queue *in = lc_queue_new("test.in", &lc_item_batch, 16, LC_OVERFLOW_BLOCK);
    for (uint64_t seq = 0; seq < 5; seq++)
        put_batch(in, &layout, seq, B, 0);
    lc_stage *s = new_writer(path, false, in);
    CHECK_OK(lc_standalone_start(s, &err));
    reader_open(&r, path);
    CHECK(read_header(&r, &got));
    lc_stream_run run1 = last_run;
    for (uint64_t seq = 0; seq < 3; seq++)
        CHECK(read_batch(&r, &layout, seq, 0));
    memset(&totals, 0, sizeof totals);
    uint64_t t_end = lc_now_ns() + (uint64_t)(5e9 * tu_slow());
    while (total_count("batches") < 5 && lc_now_ns() < t_end) { /* all in the pipe */
        gauge(s, "pipe_full");
        lc_sleep_seconds(0.01);
    }
    CHECK_EQ_U64(total_count("batches"), 5);
    CHECK(timed_stop(s) < 1.0);
    lc_standalone_free(s);
    lc_queue_free(in);
    /* Everything written before the stop, then DONE "stopped", then EOF. */
    CHECK(read_batch(&r, &layout, 3, 0));
    CHECK(read_batch(&r, &layout, 4, 0));
    CHECK(read_done_reason(&r, 5, LC_STREAM_END_STOPPED));
    CHECK(read_eof(&r));

    /* Run 2 on the same pipe: the reader opens it again (the first fd
     * stays open, as a reader that holds the pipe would); a new run id,
     * seq from 0. Its stop_grace is half a second: the writer waits for
     * batches more than for this reader, so a stop waits all of it. */
    reader keep = r;
    reader_open(&r, path);
    in = lc_queue_new("test.in", &lc_item_batch, 256, LC_OVERFLOW_BLOCK);
    for (uint64_t seq = 0; seq < 3; seq++)
        put_batch(in, &layout, seq, B, 0);
    s = new_writer_grace(path, false, in, 0.5);
    CHECK_OK(lc_standalone_start(s, &err));
    CHECK(wait_data(&r, 5 * tu_slow()));
    CHECK(read_header(&r, &got));
    CHECK(last_run.id != run1.id);
    for (uint64_t seq = 0; seq < 3; seq++)
        CHECK(read_batch(&r, &layout, seq, 0));

    /* Run 2 is stopped in the middle of a batch nobody reads: 200 batches
     * fill the pipe; the grace time passes; the batch stays torn. */
    for (uint64_t seq = 3; seq < 200; seq++)
        put_batch(in, &layout, seq, B, 0);
    CHECK(wait_gauge(s, "pipe_full", 1, 5));
    CHECK(timed_stop(s) < 1.0);
    lc_standalone_free(s);
    lc_queue_free(in);

    /* Run 3 starts while the torn tail is unread: it must not write until
     * the reader has drained the tail and met the end of file. */
    in = lc_queue_new("test.in", &lc_item_batch, 16, LC_OVERFLOW_BLOCK);
    put_batch(in, &layout, 0, B, 0);
    s = new_writer(path, false, in);
    CHECK_OK(lc_standalone_start(s, &err));
    lc_sleep_seconds(0.3);
    CHECK_EQ_INT(gauge(s, "reader_connected"), 0);
    uint64_t whole = 0;
    for (uint64_t seq = 3;; seq++) {
        uint8_t fr[LC_STREAM_FRAME_BYTES];
        if (!read_exact(&r, fr, sizeof fr))
            break;
        uint8_t *payload = malloc(layout.total_bytes);
        bool ok = read_exact(&r, payload, layout.total_bytes);
        free(payload);
        if (!ok)
            break;
        whole++;
    }
    CHECK(r.eof); /* the torn batch ends in the end of file */
    CHECK(whole > 10 && whole < 197);
    reader_close(&r);
    reader_open(&r, path);
    CHECK(wait_data(&r, 5 * tu_slow()));
    CHECK(read_header(&r, &got));
    CHECK(read_batch(&r, &layout, 0, 0));
    CHECK(timed_stop(s) < 1.0);
    CHECK(read_done_reason(&r, 1, LC_STREAM_END_STOPPED));
    lc_standalone_free(s);
    lc_queue_free(in);
    reader_close(&r);
    reader_close(&keep);
}

/* ---- (g) a trainer whose step the writer cannot see ---- */

typedef struct late_reader {
    reader *r;
    double step;    /* seconds before it reads again */
    uint64_t next;  /* the seq it expects next */
    uint64_t whole; /* batches read whole */
    bool done;      /* DONE "stopped" counting them all came, then end of file */
} late_reader;

static void *read_after_step(void *arg)
{
    late_reader *lr = arg;
    lc_sleep_seconds(lr->step);
    for (;;) {
        uint8_t fr[LC_STREAM_FRAME_BYTES];
        lc_stream_frame f;
        if (!read_exact(lr->r, fr, LC_STREAM_DONE_BYTES))
            return NULL;
        if (memcmp(fr, "DONE", 4) == 0) {
            lr->done = lc_stream_frame_decode(fr, LC_STREAM_DONE_BYTES, &f, NULL) == 0 &&
                       f.reason == LC_STREAM_END_STOPPED && f.batches == lr->r->batches &&
                       read_eof(lr->r);
            return NULL;
        }
        if (!read_exact(lr->r, fr + LC_STREAM_DONE_BYTES,
                        LC_STREAM_FRAME_BYTES - LC_STREAM_DONE_BYTES) ||
            lc_stream_frame_decode(fr, sizeof fr, &f, NULL) != 0 || f.seq != lr->next)
            return NULL;
        uint8_t *payload = malloc(layout.total_bytes);
        bool ok = read_exact(lr->r, payload, layout.total_bytes) &&
                  payload_ok(&layout, payload, f.seq, f.rows);
        free(payload);
        if (!ok)
            return NULL;
        lr->r->batches++;
        lr->whole++;
        lr->next++;
    }
}

static void test_hidden_step(void)
{
    const char *path = tu_path("pipe_g");
    lc_error err;
    lc_error_clear(&err);
    lc_queue *in = lc_queue_new("test.in", &lc_item_batch, 256, LC_OVERFLOW_BLOCK);
    lc_stage *s = new_writer(path, false, in);
    CHECK_OK(lc_standalone_start(s, &err));
    reader r;
    reader_open(&r, path);
    lc_batch_layout got;
    /* The loader is the slower: ten batches, each taken as it comes. */
    for (uint64_t seq = 0; seq < 10; seq++) {
        put_batch(in, &layout, seq, B, 0);
        if (seq == 0)
            CHECK(read_header(&r, &got));
        CHECK(read_batch(&r, &layout, seq, 0));
        lc_sleep_seconds(0.06);
    }
    /* Then it gets ahead while the trainer steps: more than the pipe holds,
     * and the stop comes with a batch half written. */
    for (uint64_t seq = 10; seq < 80; seq++)
        put_batch(in, &layout, seq, B, 0);
    CHECK(wait_gauge(s, "pipe_full", 1, 5));
    late_reader lr = {.r = &r, .step = 1.2, .next = 10};
    pthread_t t;
    CHECK_EQ_INT(pthread_create(&t, NULL, read_after_step, &lr), 0);
    double took = timed_stop(s);
    pthread_join(t, NULL);
    printf("stop with a hidden step of %.1f s: %.2f s, %llu batches whole after it\n", lr.step,
           took, (unsigned long long)lr.whole);
    CHECK(lr.whole >= 40); /* what filled the pipe, and the batch begun */
    CHECK(lr.done);
    CHECK(tu_log_has("steps not known: the trainer waited for batches"));
    lc_standalone_free(s);
    lc_queue_free(in);
    reader_close(&r);
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL); /* the log ring is checked */
    make_layouts();
    test_regular_file(UINT64_MAX);
    test_regular_file(3);
    test_pipe_reconnects();
    test_start_refusals();
    test_prompt_stop();
    test_empty_stream();
    test_runs();
    test_hidden_step();
    return check_finish();
}
