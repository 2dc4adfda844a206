/*
 * fifo_writer: the sink that hands batches to the trainer through a named
 * pipe, in the batch stream format (format/batch_stream.h).
 *
 * One thread. It takes batch items from the input and writes each as a frame
 * plus its payload. On a named pipe it first waits for a reader: opening a
 * FIFO for writing without O_NONBLOCK would block until a reader arrives,
 * with no way to stop, so it tries open(O_WRONLY | O_NONBLOCK), which fails
 * with ENXIO while nobody reads, every 50 ms (a stop-aware sleep). Every new
 * reader gets a fresh stream header, then whole batches.
 *
 * Writing. The descriptor stays non-blocking: a blocking write of a payload
 * larger than the pipe would not return before all of it is in the pipe, so
 * a stop could not interrupt it. Instead each write takes what the pipe
 * accepts, and when the pipe is full the thread waits in poll() on the pipe
 * and on an eventfd that `stop` signals. The pipe buffer is raised to 1 MiB
 * when the system allows it, so a large payload goes out in few writes.
 * Payloads go in by reference (vmsplice): the pipe points at the batch's
 * pages and the reader's read() is the only copy. That is safe because a
 * batch is held, unchanged, until it cannot be in the pipe any more (below),
 * and batch buffers are mapped pages that are unmapped, never reused by the
 * heap, so a reader still draining after a stop reads intact pages.
 *
 * Readers that go away. A write to a pipe without a reader raises SIGPIPE,
 * which kills a process that has not ignored it. The program ignores SIGPIPE,
 * but the stage does not rely on it: the thread blocks SIGPIPE, so the write
 * fails with EPIPE, and the signal then pending on the thread is consumed
 * with sigtimedwait. While idle (waiting for input) the thread also polls the
 * pipe every 50 ms, which reports POLLERR once the reader has closed it.
 *
 * No batch torn or lost. Bytes already in the pipe when a reader leaves were
 * never read, yet the writer counted them as written. So the thread keeps
 * every written batch that may still sit in the pipe (those whose last byte
 * was written less than one pipe capacity ago), and when the reader leaves it
 * asks the pipe (FIONREAD, still valid on the write end) how many bytes stay
 * unread. The batches the reader did not read to the end, including the one
 * being written at that moment, are sent again, whole and in order, to the
 * next reader after its fresh header. The batches a reader sees therefore
 * continue where the previous reader stopped, with no gap and no repeat.
 * A new reader that opens the pipe in the short time before the writer has
 * noticed the old one leaving would attach to the old pipe and see its tail,
 * not a header; the stream format tells such a reader to close and reopen.
 *
 * End of a finite run. When the input is closed and drained (not by a stop),
 * everything held is written, then the DONE marker. The stage finishes once
 * the reader has read all of it (the pipe is empty): a reader that leaves
 * before the end loses nothing either, the next one gets the rest and DONE.
 * If no reader is connected when the input ends, the thread waits for one.
 *
 * Runs. Every start (and restart) of the pipeline is a new run: a random
 * run id in the stream header tells the reader. A stop ends the run at a
 * batch boundary: a batch partly written when the stop comes is finished
 * first if the reader takes it in time, then DONE with the reason "stopped"
 * goes out, and the pipe is closed. "In time" follows the reader: the
 * writer waits as long as the reader has lately gone without reading (twice
 * the longest recent wait on a full pipe, a trainer's step; at least half a
 * second), again each time the reader takes bytes, and never longer than
 * `stop_grace` seconds in all (4 by default). A reader that keeps
 * the pipe open reads every batch written before the stop, then the marker,
 * then waits for the next run's header. (A batch not finished in the grace
 * time is left torn, as a killed writer leaves it: the reader drops it.)
 * When a writer connects and finds bytes of an earlier writer still unread
 * in the pipe, it closes the pipe again and waits until they are drained:
 * the reader then meets the end of file before anything of the new run, so
 * a torn batch is never followed by new bytes.
 *
 * With `regular_file` set, the stream goes to a regular file instead,
 * truncated at start: header, batches, DONE.
 */
#include "stages/stage.h"

#include "core/clock.h"
#include "core/deque.h"
#include "core/fifo.h"
#include "core/log.h"
#include "core/text.h"
#include "format/batch.h"
#include "format/batch_stream.h"
#include "stages/items.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* How often the thread re-checks while idle, and retries opening the pipe. */
#define WRITER_POLL_NS (50 * 1000000ull)
#define WRITER_RETRY_SECONDS 0.05
/* The pipe buffer we ask for. */
#define WRITER_PIPE_BYTES (1 << 20)
/* How long a stop waits for the reader to take bytes at least, and in all
 * by default (stop_grace). */
#define WRITER_STOP_IDLE_MIN_NS 500000000ull
#define WRITER_STOP_GRACE_DEFAULT_S 4.0

typedef struct writer_config {
    char *path;
    bool regular_file;
    bool create;
    double stop_grace;
} writer_config;

static const lc_setting writer_settings[] = {
    {.key = "path",
     .type = LC_SETTING_TEXT,
     LC_SETTING_AT(writer_config, path),
     .required = true,
     .nonempty = true,
     .meaning = "the named pipe to write to (made when missing)",
     .example = "/tmp/lcmon.pipe"},
    LC_SETTING_ROW(writer_config, regular_file, "regular_file", LC_SETTING_BOOL, "false",
                   "write a regular file instead of a pipe", "true"),
    LC_SETTING_ROW(writer_config, create, "create", LC_SETTING_BOOL, "true",
                   "make the pipe when it is missing", "false"),
    LC_SETTING_ROW_RANGE(writer_config, stop_grace, "stop_grace", LC_SETTING_REAL,
                         LC_SETTING_STR(WRITER_STOP_GRACE_DEFAULT_S), 0.1, 600,
                         "seconds a stop may wait for a slow reader to take the batch it is in",
                         "10"),
    {0},
};

static int writer_config_check(void *p, lc_error *err)
{
    writer_config *c = p;
    if (!c->path) /* missing: the reader said so */
        return 0;
    return lc_config_expand_path(&c->path, "path", "the pipe to write to", err);
}

/* A batch the thread owns: not yet written on this connection, or written
 * but possibly still unread in the pipe. */
typedef struct held_batch {
    lc_batch_item item;
    lc_stream_progress progress; /* the run's when the batch came */
    uint64_t end;                /* connection offset just past its bytes, once written */
    bool resend;                 /* it had reached a reader that left before reading it all */
} held_batch;

typedef struct writer {
    int wake_fd;
    int lock_fd; /* the one-writer-a-pipe lock (core/fifo.h); -1: none */
    /* The rest up to the metrics belongs to the worker thread (and to start
     * before, fini after it). */
    int fd;                 /* the pipe or file; -1 while no reader is connected */
    lc_deque held_q;        /* of held_batch */
    size_t n_sent;          /* the first n_sent held batches are written on this connection */
    uint64_t conn_bytes;    /* bytes written on this connection */
    uint64_t conn_batches;  /* batch frames written on this connection */
    uint64_t pipe_bytes;    /* capacity of this connection's pipe (0 for a file) */
    bool conn_header_sent;  /* this connection has had its stream header */
    bool conn_done_sent;    /* this connection has had DONE */
    uint8_t *hdr, *hdr_tmp; /* encoded header last sent, and scratch */
    size_t hdr_len, hdr_cap, hdr_tmp_cap;
    bool input_done;
    bool file_failed;
    lc_stream_run run;            /* this start's run, named in every header */
    uint64_t grace_end;           /* while stopping: when to give up on a torn batch */
    uint64_t grace_limit;         /* ... and when at the latest (stop_grace after the stop) */
    uint64_t reader_gap;          /* the longest recent wait on a full pipe (decays) */
    bool torn;                    /* stopped in the middle of a batch */
    uint64_t connections;         /* readers connected since the stage was made, for the log */
    uint64_t blocked_ms_reported; /* flush side only */
    uint64_t full_since;          /* the pipe has been full since then (0: it is not) */

    atomic_uint_fast64_t n_batches, n_rows, n_bytes, n_readers, n_disconnects, n_resent, n_dropped,
        blocked_ns, n_stalls;
    atomic_int_fast64_t g_connected, g_waiting, g_pipe_full, g_stalled;
} writer;

static held_batch *held_at(writer *w, size_t i)
{
    return lc_deque_at(&w->held_q, i);
}

static size_t held_count(const writer *w)
{
    return lc_deque_len(&w->held_q);
}

static void held_push(writer *w, const lc_batch_item *item, const lc_stage_env *env)
{
    held_batch *h = lc_deque_push_back(&w->held_q);
    h->item = *item;
    lc_run_progress_get(env, &h->progress);
}

static void held_drop_front(writer *w)
{
    lc_batch_free(held_at(w, 0)->item.batch);
    lc_deque_pop_front(&w->held_q);
}

static void held_clear(writer *w)
{
    while (held_count(w))
        held_drop_front(w);
    w->n_sent = 0;
}

/* How long a stopping writer waits for its reader to take bytes: twice the
 * longest recent wait on a full pipe, at least WRITER_STOP_IDLE_MIN_NS. */
static uint64_t stop_idle_ns(const writer *w)
{
    uint64_t idle = 2 * w->reader_gap;
    return idle > WRITER_STOP_IDLE_MIN_NS ? idle : WRITER_STOP_IDLE_MIN_NS;
}

/* A stop begins to wait for the reader (once). */
static void grace_begin(const lc_stage *s, writer *w)
{
    if (w->grace_end)
        return;
    uint64_t now = lc_now_ns();
    w->grace_limit = now + (uint64_t)(((const writer_config *)s->config)->stop_grace * 1e9);
    w->grace_end = now + stop_idle_ns(w);
    if (w->grace_end > w->grace_limit)
        w->grace_end = w->grace_limit;
}

/* Wait until the pipe has room or stop is signalled; counted idle. */
/* Payload pieces at least this large are spliced rather than copied. */
#define WRITER_SPLICE_MIN (64 * 1024)

/* A reader that has not read for this long (stopped, or stuck) is logged
 * once, and the stage shows a warning until it reads again. */
#define WRITER_STALL_NS 10000000000ull

static void wait_writable(lc_stage *s, writer *w, lc_load_meter *meter)
{
    struct pollfd fds[2] = {{.fd = w->fd, .events = POLLOUT}, {.fd = w->wake_fd, .events = POLLIN}};
    atomic_store(&w->g_pipe_full, 1);
    lc_load_idle(meter);
    uint64_t t0 = lc_now_ns();
    /* The timeout only bounds the wait should a wake-up ever be missed.
     * While a stop finishes a batch, the wake-up is spent: wait on the pipe
     * alone, until the grace time ends. */
    int nfds = 2, ms = 1000;
    if (w->grace_end) {
        nfds = 1;
        ms = t0 < w->grace_end ? (int)((w->grace_end - t0) / 1000000u) + 1 : 0;
    }
    if (!w->full_since)
        w->full_since = t0;
    if (poll(fds, (nfds_t)nfds, ms) < 0 && errno != EINTR)
        LC_WARN("poll on the batch pipe failed: %s", strerror(errno));
    uint64_t now = lc_now_ns();
    atomic_fetch_add(&w->blocked_ns, now - t0);
    const writer_config *c = s->config;
    if (fds[0].revents) { /* room again (or the reader went: the write says) */
        /* The reader's gap, decaying so that one long pause is forgotten. */
        uint64_t gap = now - w->full_since;
        w->reader_gap = w->reader_gap - w->reader_gap / 8;
        if (gap > w->reader_gap)
            w->reader_gap = gap;
        if (w->grace_end) { /* stopping: the reader takes bytes, wait on */
            w->grace_end = now + stop_idle_ns(w);
            if (w->grace_end > w->grace_limit)
                w->grace_end = w->grace_limit;
        }
        if (atomic_load(&w->g_stalled))
            LC_INFO("%s: the reader of %s reads again after %.0f s", s->name, c->path,
                    (double)(now - w->full_since) / 1e9);
        atomic_store(&w->g_stalled, 0);
        w->full_since = 0;
    } else if (now - w->full_since >= WRITER_STALL_NS && !atomic_load(&w->g_stalled)) {
        LC_WARN("%s: the reader of %s has read nothing for %.0f s (stopped, or busy?); "
                "batches wait for it",
                s->name, c->path, (double)(now - w->full_since) / 1e9);
        atomic_store(&w->g_stalled, 1);
        atomic_fetch_add(&w->n_stalls, 1);
    }
    lc_load_busy(meter);
    atomic_store(&w->g_pipe_full, 0);
}

/* Write the iovecs whole. Returns 0, LC_ESTOPPED, or a negative errno (EPIPE
 * when the reader has gone). *written counts the bytes that went out. */
static int send_all(lc_stage *s, writer *w, struct iovec *iov, int iovcnt, uint64_t *written,
                    lc_load_meter *meter)
{
    while (iovcnt > 0) {
        if (iov->iov_len == 0) {
            iov++;
            iovcnt--;
            continue;
        }
        if (lc_run_state_stopping(&s->run)) {
            /* Nothing of this record out yet: stop here, at a boundary
             * (unless the grace time is already running: end_run's marker).
             * Part of it out: finish it within the grace time. */
            if ((*written == 0 && !w->grace_end) || (w->grace_end && lc_now_ns() >= w->grace_end))
                return LC_ESTOPPED;
            grace_begin(s, w);
        }
        /* Batch payloads go into a pipe by reference (vmsplice), which saves
         * the copy into the pipe buffer: the reader's read() is then the
         * only copy. It is safe because a batch stays held, untouched, until
         * enough bytes have followed it that none of it can still be in the
         * pipe (see the drop in send_batch). Small records are copied. */
        ssize_t n;
        if (w->pipe_bytes && iov->iov_len >= WRITER_SPLICE_MIN) {
            n = vmsplice(w->fd, iov, 1, SPLICE_F_NONBLOCK);
        } else {
            int small = 1;
            while (w->pipe_bytes && small < iovcnt && iov[small].iov_len < WRITER_SPLICE_MIN)
                small++;
            n = writev(w->fd, iov, w->pipe_bytes ? small : iovcnt);
        }
        if (n > 0) {
            w->conn_bytes += (uint64_t)n;
            *written += (uint64_t)n;
            atomic_fetch_add(&w->n_bytes, (uint64_t)n);
            size_t left = (size_t)n;
            while (left > 0 && left >= iov->iov_len) {
                left -= iov->iov_len;
                iov++;
                iovcnt--;
            }
            if (left > 0) {
                iov->iov_base = (uint8_t *)iov->iov_base + left;
                iov->iov_len -= left;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            wait_writable(s, w, meter);
            continue;
        }
        int e = n < 0 ? errno : EIO;
        if (e == EPIPE)
            lc_fifo_drain_sigpipe();
        return -e;
    }
    return 0;
}

/* Encode the header of layout l (NULL: an empty layout, for a stream without
 * batches) unless it is the header already sent on this connection. Returns
 * true when a header must be written before the next record; it is then in
 * w->hdr. */
static bool header_needed(writer *w, const lc_batch_layout *l)
{
    lc_batch_layout empty;
    if (!l) {
        if (w->hdr_len)
            return !w->conn_header_sent; /* repeat the last layout */
        lc_batch_layout_init(&empty, 0);
        l = &empty;
    }
    size_t n = lc_stream_header_encode(l, &w->run, w->hdr_tmp, w->hdr_tmp_cap);
    if (n > w->hdr_tmp_cap) {
        free(w->hdr_tmp);
        w->hdr_tmp_cap = n;
        w->hdr_tmp = lc_xmalloc(n);
        lc_stream_header_encode(l, &w->run, w->hdr_tmp, w->hdr_tmp_cap);
    }
    if (w->conn_header_sent && n == w->hdr_len && memcmp(w->hdr, w->hdr_tmp, n) == 0)
        return false;
    uint8_t *t = w->hdr;
    w->hdr = w->hdr_tmp;
    w->hdr_tmp = t;
    size_t c = w->hdr_cap;
    w->hdr_cap = w->hdr_tmp_cap;
    w->hdr_tmp_cap = c;
    w->hdr_len = n;
    return true;
}

/* The reader is gone (or the write failed): keep what it did not read. rc is
 * the write's error, or 0 when the pipe was seen closed: a reader that
 * closed its end (a trainer that finished, or was stopped) is an ordinary
 * event, logged as information; any other failure is a warning. */
static void disconnect(lc_stage *s, writer *w, int rc, uint64_t partial)
{
    const writer_config *c = s->config;
    uint64_t unread, consumed;
    if (lc_fifo_unread(w->fd, &unread))
        consumed = w->conn_bytes - (unread < w->conn_bytes ? unread : w->conn_bytes);
    else
        consumed = 0; /* unknown: send again everything that may be unread */
    while (w->n_sent > 0 && held_at(w, 0)->end <= consumed) {
        held_drop_front(w);
        w->n_sent--;
    }
    size_t again = w->n_sent;
    for (size_t i = 0; i < w->n_sent; i++)
        held_at(w, i)->resend = true;
    if (partial > 0 && w->n_sent < held_count(w)) {
        held_at(w, w->n_sent)->resend = true;
        again++;
    }
    w->n_sent = 0;
    close(w->fd);
    w->fd = -1;
    atomic_store(&w->g_connected, 0);
    atomic_fetch_add(&w->n_disconnects, 1);
    bool closed = rc == 0 || rc == -EPIPE;
    lc_log_level level = closed ? LC_LOG_INFO : LC_LOG_WARN;
    char why[96];
    if (closed)
        snprintf(why, sizeof why, "closed the pipe");
    else
        snprintf(why, sizeof why, "went away (%s)", lc_strerror(rc));
    if (again)
        lc_log(level,
               "%s: the reader of %s %s after %llu batches; the %zu it had not read whole "
               "(from seq %llu) go to the next reader",
               s->name, c->path, why, (unsigned long long)w->conn_batches, again,
               (unsigned long long)held_at(w, 0)->item.seq);
    else
        lc_log(level, "%s: the reader of %s %s after %llu batches; waiting for the next", s->name,
               c->path, why, (unsigned long long)w->conn_batches);
}

/* While idle: notice a reader that closed the pipe, so that the next one
 * does not attach to the old pipe. */
static void check_reader(lc_stage *s, writer *w)
{
    const writer_config *c = s->config;
    if (w->fd < 0 || c->regular_file)
        return;
    struct pollfd p = {.fd = w->fd, .events = POLLOUT};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP)))
        disconnect(s, w, 0, 0);
}

/* Wait for a reader and open the pipe. False when stopping. */
static bool connect_reader(lc_stage *s, writer *w, lc_load_meter *meter)
{
    const writer_config *c = s->config;
    bool told_wait = false, told_problem = false;
    atomic_store(&w->g_waiting, 1);
    for (;;) {
        if (lc_run_state_stopping(&s->run))
            break;
        int fd;
        lc_fifo_open o = lc_fifo_try_open(c->path, c->create, &fd);
        if (o == LC_FIFO_OPENED) {
            w->fd = fd;
            break;
        }
        if (o == LC_FIFO_MADE)
            continue;
        if (o == LC_FIFO_UNREAD) {
            /* An earlier writer's bytes are still in the pipe (the end of a
             * run, or a torn batch): let the reader drain them and meet the
             * end of file before anything of this run. */
            if (!told_wait)
                LC_INFO("%s: the reader of %s is still reading an earlier run; waiting", s->name,
                        c->path);
            told_wait = true;
            if (!lc_run_state_sleep(&s->run, WRITER_RETRY_SECONDS, meter))
                break;
            continue;
        }
        if (o == LC_FIFO_NOT_FIFO && !told_problem)
            LC_ERROR("%s: %s is no longer a named pipe; waiting until it is one again "
                     "(remove it: it is recreated when create is on)",
                     s->name, c->path);
        else if (o == LC_FIFO_NOT_MADE && !told_problem)
            LC_ERROR("%s: cannot create the named pipe %s: %s", s->name, c->path, strerror(errno));
        else if (o == LC_FIFO_FAILED && !told_problem)
            LC_ERROR("%s: cannot open %s: %s (retrying)", s->name, c->path, strerror(errno));
        told_problem = told_problem || (o != LC_FIFO_NO_READER);
        if (!told_wait)
            LC_INFO("%s: waiting for a reader on %s", s->name, c->path);
        told_wait = true;
        if (!lc_run_state_sleep(&s->run, WRITER_RETRY_SECONDS, meter))
            break;
    }
    atomic_store(&w->g_waiting, 0);
    if (w->fd < 0)
        return false;
    w->pipe_bytes = lc_fifo_grow(w->fd, WRITER_PIPE_BYTES);
    w->conn_bytes = 0;
    w->conn_batches = 0;
    w->conn_header_sent = false;
    w->conn_done_sent = false;
    w->n_sent = 0;
    atomic_fetch_add(&w->n_readers, 1);
    w->connections++;
    atomic_store(&w->g_connected, 1);
    w->full_since = 0; /* a new reader has not stalled */
    atomic_store(&w->g_stalled, 0);
    LC_INFO("%s: reader connected to %s (connection %llu)", s->name, c->path,
            (unsigned long long)w->connections);
    return true;
}

/* Write failed on a regular file: nothing more can go there. */
static void file_failed(lc_stage *s, writer *w, int rc)
{
    const writer_config *c = s->config;
    LC_ERROR("%s: cannot write %s: %s; batches from now on are dropped", s->name, c->path,
             lc_strerror(rc));
    atomic_fetch_add(&w->n_dropped, held_count(w) - w->n_sent);
    held_clear(w);
    close(w->fd);
    w->fd = -1;
    w->file_failed = true;
    atomic_store(&w->g_connected, 0);
}

/* Write held batch n_sent (with a header first when needed). */
static int send_next(lc_stage *s, writer *w, uint64_t *partial, lc_load_meter *meter)
{
    held_batch *h = held_at(w, w->n_sent);
    lc_batch *b = h->item.batch;
    uint8_t frame[LC_STREAM_FRAME_BYTES];
    uint32_t flags = (h->item.flags & LC_ITEM_END_OF_STREAM) ? LC_STREAM_FLAG_LAST : 0;
    lc_stream_batch_frame(frame, flags, h->item.seq, b->rows, b->layout->total_bytes, &h->progress);
    struct iovec iov[3];
    int n = 0;
    if (header_needed(w, b->layout))
        iov[n++] = (struct iovec){.iov_base = w->hdr, .iov_len = w->hdr_len};
    iov[n++] = (struct iovec){.iov_base = frame, .iov_len = sizeof frame};
    iov[n++] = (struct iovec){.iov_base = b->data, .iov_len = b->layout->total_bytes};
    int rc = send_all(s, w, iov, n, partial, meter);
    if (rc != 0)
        return rc;
    w->conn_header_sent = true;
    h->end = w->conn_bytes;
    w->conn_batches++;
    atomic_fetch_add(&w->n_batches, 1);
    atomic_fetch_add(&s->items_out, 1); /* a sink's output: batches into the pipe */
    atomic_fetch_add(&w->n_rows, b->rows);
    if (h->resend)
        atomic_fetch_add(&w->n_resent, 1);
    w->n_sent++;
    /* Batches that ended more than a pipe capacity ago have been read. */
    while (w->n_sent > 0 && held_at(w, 0)->end + w->pipe_bytes <= w->conn_bytes) {
        held_drop_front(w);
        w->n_sent--;
    }
    return 0;
}

/* The DONE marker with its reason into done, and the iovecs to send: the
 * header first if this connection has had none. Returns the iovec count. */
static int done_record(writer *w, uint32_t reason, uint8_t done[LC_STREAM_DONE_BYTES],
                       struct iovec iov[2])
{
    lc_stream_done_frame(done, reason, w->conn_batches);
    int n = 0;
    if (header_needed(w, NULL))
        iov[n++] = (struct iovec){.iov_base = w->hdr, .iov_len = w->hdr_len};
    iov[n++] = (struct iovec){.iov_base = done, .iov_len = LC_STREAM_DONE_BYTES};
    return n;
}

/* After DONE: wait until the reader has read everything. 1 when it has, 0
 * when it left first (then disconnected), -1 when stopping. */
static int wait_drained(lc_stage *s, writer *w, lc_load_meter *meter)
{
    for (;;) {
        uint64_t unread;
        if (!lc_fifo_unread(w->fd, &unread) || unread == 0)
            return 1;
        /* No event says "the pipe is empty": look again every 20 ms. A
         * reader leaving shows as POLLERR at once. */
        struct pollfd fds[2] = {{.fd = w->fd, .events = 0}, {.fd = w->wake_fd, .events = POLLIN}};
        lc_load_idle(meter);
        int n = poll(fds, 2, 20);
        lc_load_busy(meter);
        if (lc_run_state_stopping(&s->run))
            return -1;
        if (n > 0 && (fds[0].revents & (POLLERR | POLLHUP))) {
            if (!lc_fifo_unread(w->fd, &unread) || unread == 0)
                return 1;
            disconnect(s, w, 0, 0);
            return 0;
        }
    }
}

/* Input done and everything written: end the stream. 1 when finished, 0 to
 * go round again (the reader left: batches to send again), -1 when stopping. */
static int finish(lc_stage *s, writer *w, lc_load_meter *meter)
{
    const writer_config *c = s->config;
    if (w->file_failed)
        return 1;
    if (w->fd < 0 && !connect_reader(s, w, meter))
        return -1;
    if (!w->conn_done_sent) {
        uint8_t done[LC_STREAM_DONE_BYTES];
        struct iovec iov[2];
        int n = done_record(w, LC_STREAM_END_DATA, done, iov);
        uint64_t partial = 0;
        int rc = send_all(s, w, iov, n, &partial, meter);
        if (rc == LC_ESTOPPED)
            return -1;
        if (rc != 0) {
            if (c->regular_file) {
                file_failed(s, w, rc);
                return 1;
            }
            disconnect(s, w, rc, 0);
            return 0;
        }
        w->conn_header_sent = true;
        w->conn_done_sent = true;
    }
    if (!c->regular_file) {
        int rc = wait_drained(s, w, meter);
        if (rc != 1)
            return rc;
    }
    close(w->fd);
    w->fd = -1;
    atomic_store(&w->g_connected, 0);
    held_clear(w);
    LC_INFO("%s: stream complete on %s: %llu batches to the last reader, then DONE", s->name,
            c->path, (unsigned long long)w->conn_batches);
    return 1;
}

/* A stop: DONE with the reason "stopped", after the header if this
 * connection has had none (a run stopped before its first batch). Not after
 * a torn batch: the reader must see the end of file there. */
static void end_run(lc_stage *s, writer *w, lc_load_meter *meter)
{
    if (w->torn)
        return;
    grace_begin(s, w);
    uint8_t done[LC_STREAM_DONE_BYTES];
    struct iovec iov[2];
    int n = done_record(w, LC_STREAM_END_STOPPED, done, iov);
    uint64_t written = 0;
    if (send_all(s, w, iov, n, &written, meter) != 0)
        return; /* the pipe stayed full or went: the reader sees the end of file */
    w->conn_done_sent = true;
    LC_INFO("%s: run stopped: %llu batches to the reader of %s, then DONE (stopped)", s->name,
            (unsigned long long)w->conn_batches, ((const writer_config *)s->config)->path);
}

static void writer_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    writer *w = s->priv;
    const writer_config *c = s->config;
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, NULL);

    while (lc_run_state_check(&s->run, meter)) {
        if (w->n_sent == held_count(w)) {
            if (w->input_done) {
                int rc = finish(s, w, meter);
                if (rc != 0)
                    break;
                continue;
            }
            lc_batch_item item;
            int rc = lc_queue_get_until(s->input, &item, meter, lc_now_ns() + WRITER_POLL_NS);
            if (rc == -ETIMEDOUT) {
                check_reader(s, w);
                continue;
            }
            if (rc != 0) {
                if (lc_run_state_stopping(&s->run))
                    break;
                w->input_done = true;
                continue;
            }
            if (w->file_failed) {
                lc_batch_free(item.batch);
                atomic_fetch_add(&w->n_dropped, 1);
                continue;
            }
            held_push(w, &item, s->env);
        }
        if (w->fd < 0 && !connect_reader(s, w, meter))
            break;
        uint64_t partial = 0;
        int rc = send_next(s, w, &partial, meter);
        if (rc == LC_ESTOPPED) {
            w->torn = partial > 0;
            break;
        }
        if (rc != 0) {
            if (c->regular_file)
                file_failed(s, w, rc);
            else
                disconnect(s, w, rc, partial);
        }
    }
    /* Stopped: the run ends with DONE "stopped", if the stream is at a batch
     * boundary and the reader takes 16 bytes within the grace time. */
    if (w->fd >= 0 && lc_run_state_stopping(&s->run) && !w->conn_done_sent)
        end_run(s, w, meter);
    /* Stopped, or finished: whatever is still held is dropped. */
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
    held_clear(w);
    atomic_store(&w->g_connected, 0);
    atomic_store(&w->g_waiting, 0);
}

static int writer_init(lc_stage *s, lc_error *err)
{
    writer *w = s->priv;
    w->fd = -1;
    w->lock_fd = -1;
    lc_deque_init(&w->held_q, sizeof(held_batch));
    w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->wake_fd < 0)
        return lc_error_set(err, -errno, "eventfd: %s", strerror(errno));
    return 0;
}

/* Check the path and, for a file, open it; errors name the path. */
static int open_target(lc_stage *s, writer *w, lc_error *err)
{
    const writer_config *c = s->config;
    int rc = lc_fifo_check(c->path, c->regular_file, c->create, true, 0, err);
    if (rc != 0)
        return rc;
    if (w->lock_fd < 0) { /* kept across restarts: this process is the writer */
        w->lock_fd = lc_fifo_writer_lock(c->path, err);
        if (w->lock_fd == -EBUSY)
            return -EBUSY;
    }
    if (!c->regular_file)
        return 0;
    w->fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0)
        return lc_error_set(err, -errno, "path: cannot open %s for writing: %s", c->path,
                            strerror(errno));
    w->pipe_bytes = 0;
    w->conn_bytes = 0;
    w->conn_batches = 0;
    w->conn_header_sent = false;
    w->conn_done_sent = false;
    atomic_fetch_add(&w->n_readers, 1);
    atomic_store(&w->g_connected, 1);
    return 0;
}

static int writer_start(lc_stage *s, lc_error *err)
{
    writer *w = s->priv;
    w->input_done = false;
    w->file_failed = false;
    w->grace_end = 0;
    w->grace_limit = 0;
    w->torn = false;
    /* The pipeline's run; a writer run alone draws one at each start. */
    w->run.id = s->env->run_id;
    w->run.started_ms = s->env->run_started_ms;
    w->run.seed = s->env->seed;
    if (!w->run.id)
        lc_stream_run_draw(&w->run.id, &w->run.started_ms);
    /* A previous stop left the eventfd signalled; a restart starts quiet. */
    uint64_t v;
    while (read(w->wake_fd, &v, sizeof v) > 0) {
    }
    int rc = open_target(s, w, err);
    if (rc != 0)
        return rc;
    return 0;
}

static void writer_stop(lc_stage *s)
{
    writer *w = s->priv;
    uint64_t one = 1;
    if (w->wake_fd >= 0 && write(w->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        LC_WARN("%s: cannot wake the writer: %s", s->name, strerror(errno));
}

static void writer_fini(lc_stage *s)
{
    writer *w = s->priv;
    /* Close first: batches spliced into the pipe are only unmapped after. */
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    if (w->lock_fd >= 0)
        close(w->lock_fd);
    w->lock_fd = -1;
    held_clear(w);
    lc_deque_fini(&w->held_q);
    free(w->hdr);
    free(w->hdr_tmp);
    if (w->wake_fd >= 0)
        close(w->wake_fd);
}

static void writer_flush(lc_stage *s, lc_stage_metrics *m)
{
    writer *w = s->priv;
    const writer_config *c = s->config;
    snprintf(m->detail, sizeof m->detail, "%s", c->path);
    if (atomic_load(&w->g_waiting))
        snprintf(m->warning, sizeof m->warning, "no reader: start one with  python3 -m lcmon %s",
                 c->path);
    else if (atomic_load(&w->g_stalled))
        snprintf(m->warning, sizeof m->warning,
                 "the reader of %s is not reading (stopped, or busy?)", c->path);
    lc_metrics_add_count(m, "batches", atomic_exchange(&w->n_batches, 0));
    lc_metrics_add_count(m, "rows", atomic_exchange(&w->n_rows, 0));
    lc_metrics_add_count(m, "bytes", atomic_exchange(&w->n_bytes, 0));
    lc_metrics_add_count(m, "readers", atomic_exchange(&w->n_readers, 0));
    lc_metrics_add_count(m, "disconnects", atomic_exchange(&w->n_disconnects, 0));
    lc_metrics_add_count(m, "reader_stalls", atomic_exchange(&w->n_stalls, 0));
    lc_metrics_add_count(m, "resent_batches", atomic_exchange(&w->n_resent, 0));
    uint64_t dropped = atomic_exchange(&w->n_dropped, 0);
    lc_metrics_add_drop(m, "dropped_batches", dropped);
    /* Milliseconds from a nanosecond total, carrying the remainder over. */
    uint64_t ms = atomic_load(&w->blocked_ns) / 1000000u;
    lc_metrics_add_count(m, "blocked_ms", ms - w->blocked_ms_reported);
    w->blocked_ms_reported = ms;
    lc_metrics_set_gauge(m, "reader_connected", atomic_load(&w->g_connected), 0, false);
    lc_metrics_set_gauge(m, "waiting_for_reader", atomic_load(&w->g_waiting), 0, false);
    lc_metrics_set_gauge(m, "pipe_full", atomic_load(&w->g_pipe_full), 0, false);
}

/* Waiting for a reader, the warning (first in the row) says what to run. */
static const lc_metric_info writer_metrics[] = {
    {"waiting_for_reader", "", LC_SHOW_FLAG, LC_SHOW_WARN, "waiting for a reader", "no reader",
     .role = LC_ROLE_READER_WAITING},
    {"bytes", "bytes", LC_SHOW_RATE, 0, "/s"},
    /* Waiting on the reader is the loader keeping ahead of the trainer:
     * information, not a warning. */
    {"blocked_ms", "ms", LC_SHOW_SHARE_OF_TIME, 0, "blocked on the reader", "blocked"},
    {"batches", "batches"},
    {"rows", "rows", .role = LC_ROLE_ROWS},
    {"readers", "readers"},
    {"disconnects", "readers"},
    {"reader_stalls", "stalls"},
    {"resent_batches", "batches"},
    {"dropped_batches", "batches"},
    {"reader_connected", "", .role = LC_ROLE_READER_CONNECTED},
    {"pipe_full", ""},
    {0},
};

/* --check-config: the path is a named pipe (or a regular file with
 * regular_file), or absent in a directory where it can be made. */
static double writer_stop_seconds(const void *config)
{
    return ((const writer_config *)config)->stop_grace;
}

/* Across a restart the writer carries its pipe's path, so that a reload
 * that moved the pipe says so: the trainer reads the old one. */
static char *writer_carry_out(lc_stage *s)
{
    return lc_xstrdup(((const writer_config *)s->config)->path);
}

static int writer_carry_in(lc_stage *s, const char *carried, lc_error *err)
{
    (void)err;
    const char *path = ((const writer_config *)s->config)->path;
    if (strcmp(path, carried) != 0)
        LC_WARN("%s: the batches go to %s now, no longer to %s: a trainer reading %s waits there "
                "for a run that does not come (point it at %s)",
                s->name, path, carried, carried, path);
    return 0;
}

static int writer_preflight(const void *config, lc_error *err)
{
    const writer_config *c = config;
    lc_error one;
    lc_error_clear(&one);
    if (lc_fifo_check(c->path, c->regular_file, c->create, false, LC_ECONFIG, &one) == 0)
        return 0;
    return lc_error_add(err, LC_ECONFIG, "%s", one.msg);
}

const lc_stage_class lc_fifo_writer_class = {
    .type_name = "fifo_writer",
    .summary = "writes batches to a named pipe for the trainer (python/lcmon reads them)",
    .input = &lc_item_batch,
    .output = NULL,
    .priv_size = sizeof(writer),
    .worker = writer_worker,
    .workers = "writer",
    .settings = {writer_settings, sizeof(writer_config)},
    .config_check = writer_config_check,
    .preflight = writer_preflight,
    .stop_seconds = writer_stop_seconds,
    .carry_out = writer_carry_out,
    .carry_in = writer_carry_in,
    .init = writer_init,
    .fini = writer_fini,
    .start = writer_start,
    .stop = writer_stop,
    .flush_metrics = writer_flush,
    .metrics = writer_metrics,
};
