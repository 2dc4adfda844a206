/*
 * writer_pipe: fifo_writer's side of the pipe (stages/writer_pipe.h): the
 * batches it holds until no reader can still need them, connecting a reader
 * and noticing one leave, writing records whole without blocking a stop
 * (header, batch, DONE), and ending a stream or a run. fifo_writer.c tells
 * why it works so.
 */
#include "stages/writer_pipe.h"

#include "lc_config.h"

#include "core/clock.h"
#include "core/fifo.h"
#include "core/log.h"
#include "core/text.h"
#include "format/batch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static held_batch *held_at(writer *w, size_t i)
{
    return lc_deque_at(&w->held_q, i);
}

static size_t held_count(const writer *w)
{
    return lc_deque_len(&w->held_q);
}

/* A finite run read in order (chunk_reader numbers its chunks as it reads
 * them, and a row's origin names its chunk) reports what reached the
 * batches, not what was read ahead into the queues: its records (and its
 * files, when every file is one chunk) at most the newest chunk with rows
 * in a batch so far. The last batch reports everything read. Runs whose
 * rows carry no origin (Parquet) or that count no records (a pool) are
 * left as read. */
static void progress_as_batched(writer *w, const lc_batch_item *item, lc_stream_progress *p)
{
    if (item->origin.newest_seq > w->progress_seq)
        w->progress_seq = item->origin.newest_seq;
    if (!w->progress_seq || !p->records || (item->flags & LC_ITEM_END_OF_STREAM))
        return;
    if (p->files_total && p->records_total == p->files_total && p->files_done > w->progress_seq)
        p->files_done = w->progress_seq;
    if (p->records > w->progress_seq)
        p->records = w->progress_seq;
}

void writer_pipe_hold(writer *w, const lc_batch_item *item, const lc_stage_env *env)
{
    held_batch *h = lc_deque_push_back(&w->held_q);
    h->item = *item;
    lc_run_progress_get(env, &h->progress);
    progress_as_batched(w, item, &h->progress);
}

static void held_drop_front(writer *w)
{
    lc_batch_free(held_at(w, 0)->item.batch);
    lc_deque_pop_front(&w->held_q);
}

void writer_pipe_clear(writer *w)
{
    while (held_count(w))
        held_drop_front(w);
    w->n_sent = 0;
}

static double stop_grace_s(const lc_stage *s)
{
    return ((const writer_config *)s->config)->stop_grace;
}

/* Note a wait of gap ns on a full pipe, or of hungry ns for a batch while
 * a reader is connected (0, 0: none, only move the window on). The
 * reader's pace is the longest wait on a full pipe in this window and the
 * last: a trainer's step (its reads come in bursts between steps, so what
 * counts is the longest wait, never the many short ones inside a large
 * batch), and one long pause is forgotten after a window or two. The sums
 * of both waits say whether the pace can be trusted (pace_known). */
static void pace_note(const lc_stage *s, writer *w, uint64_t now, uint64_t gap, uint64_t hungry)
{
    uint64_t window = (uint64_t)(2 * stop_grace_s(s) * 1e9);
    if (window < WRITER_PACE_WINDOW_NS)
        window = WRITER_PACE_WINDOW_NS;
    if (now - w->pace_since >= window) {
        bool recent = now - w->pace_since < 2 * window;
        w->pace_prev = recent ? w->pace_now : 0;
        w->full_prev = recent ? w->full_now : 0;
        w->hungry_prev = recent ? w->hungry_now : 0;
        w->pace_now = w->full_now = w->hungry_now = 0;
        w->pace_since = now;
    }
    if (gap > w->pace_now)
        w->pace_now = gap;
    w->full_now += gap;
    w->hungry_now += hungry;
}

void writer_pipe_waited_input(const lc_stage *s, writer *w, uint64_t since, uint64_t now)
{
    if (w->fd >= 0)
        pace_note(s, w, now, 0, now - since);
}

static uint64_t reader_pace(const writer *w)
{
    return w->pace_now > w->pace_prev ? w->pace_now : w->pace_prev;
}

/* Whether the longest wait on a full pipe shows the trainer's step: not
 * when the writer waited longer for batches than for the reader (the wait
 * going on now included). A trainer faster than the loader takes each
 * batch as it comes and its step is hidden: the longest wait on a full
 * pipe is then only the part of a step the loader did not need. */
static bool pace_known(const writer *w, uint64_t now)
{
    uint64_t full = w->full_now + w->full_prev + (w->full_since ? now - w->full_since : 0);
    return full >= w->hungry_now + w->hungry_prev;
}

/* How long a stopping writer waits for its reader to take bytes: twice the
 * reader's pace, at least WRITER_STOP_IDLE_MIN_NS, at most stop_grace; all
 * of stop_grace while the pace is not known. */
static uint64_t stop_idle_ns(const lc_stage *s, const writer *w, uint64_t now)
{
    uint64_t grace = (uint64_t)(stop_grace_s(s) * 1e9);
    if (!pace_known(w, now))
        return grace;
    uint64_t idle = 2 * reader_pace(w);
    if (idle < WRITER_STOP_IDLE_MIN_NS)
        idle = WRITER_STOP_IDLE_MIN_NS;
    return idle < grace ? idle : grace;
}

/* The reader's steps as the stop's messages tell them. */
static void steps_said(const writer *w, uint64_t now, char *buf, size_t size)
{
    if (pace_known(w, now))
        snprintf(buf, size, "steps lately %.1f s", (double)reader_pace(w) / 1e9);
    else
        snprintf(buf, size, "steps not known: the trainer waited for batches");
}

/* While stopping, the reader took bytes at now: wait for its next read. */
static void grace_extend(const lc_stage *s, writer *w, uint64_t now)
{
    w->last_taken = now;
    w->grace_end = now + stop_idle_ns(s, w, now);
    if (w->grace_end > w->grace_limit)
        w->grace_end = w->grace_limit;
}

/* A stop begins to wait for the reader (once); mid_record: a record is
 * partly written, and is finished if the reader takes it in time. */
static void grace_begin(const lc_stage *s, writer *w, bool mid_record)
{
    if (w->grace_end)
        return;
    uint64_t now = lc_now_ns();
    pace_note(s, w, now, 0, 0);
    /* The record begun may wait for one trainer step, the DONE marker after
     * it for another: twice stop_grace in all. */
    w->grace_limit = now + (uint64_t)(2 * stop_grace_s(s) * 1e9);
    grace_extend(s, w, now);
    if (mid_record) {
        char steps[64];
        steps_said(w, now, steps, sizeof steps);
        LC_INFO("%s: stop in the middle of a batch: finishing it while %s is read at least every "
                "%.1f s (%s, stop_grace %.1f s), %.1f s at most",
                s->name, ((const writer_config *)s->config)->path,
                (double)(w->grace_end - now) / 1e9, steps, stop_grace_s(s), 2 * stop_grace_s(s));
    }
}

/* A stop gave up on the reader in the middle of what (a batch, or the DONE
 * marker): say why, and what to do. */
static void grace_gave_up(const lc_stage *s, const writer *w, const char *what)
{
    const writer_config *c = s->config;
    uint64_t now = lc_now_ns();
    if (now >= w->grace_limit)
        LC_WARN("%s: stop: %s is read too slowly to finish within %.1f s (2 x stop_grace): %s",
                s->name, c->path, 2 * c->stop_grace, what);
    else {
        char steps[64];
        steps_said(w, now, steps, sizeof steps);
        LC_WARN("%s: stop: no read from %s for %.1f s (%s, stop_grace %.1f s): "
                "%s; if the trainer still reads, raise stop_grace above its longest step",
                s->name, c->path, (double)(now - w->last_taken) / 1e9, steps, c->stop_grace, what);
    }
}

/* Payload pieces at least this large are spliced rather than copied. */
#define WRITER_SPLICE_MIN (64 * 1024)

/* A reader that has not read for this long (stopped, or stuck) is logged
 * once, and the stage shows a warning until it reads again. */
#define WRITER_STALL_NS 10000000000ull

/* Wait until the pipe has room or stop is signalled; counted idle. */
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
        pace_note(s, w, now, now - w->full_since, 0);
        if (w->grace_end) /* stopping: the reader takes bytes, wait on */
            grace_extend(s, w, now);
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
            grace_begin(s, w, true);
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
void writer_pipe_disconnect(lc_stage *s, writer *w, int rc, uint64_t partial)
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
void writer_pipe_check_reader(lc_stage *s, writer *w)
{
    const writer_config *c = s->config;
    if (w->fd < 0 || c->regular_file)
        return;
    struct pollfd p = {.fd = w->fd, .events = POLLOUT};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP)))
        writer_pipe_disconnect(s, w, 0, 0);
}

/* s as one shell word: quoted when it has anything but the safe characters. */
static void shell_word(char *buf, size_t size, const char *s)
{
    if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                        "_-./+=:,@%") == strlen(s)) {
        snprintf(buf, size, "%s", s);
        return;
    }
    size_t n = 0;
    if (size < 3)
        return;
    buf[n++] = '\'';
    for (; *s && n + 6 < size; s++) {
        if (*s == '\'') { /* 'it'\''s' */
            memcpy(buf + n, "'\\''", 4);
            n += 4;
        } else {
            buf[n++] = *s;
        }
    }
    buf[n++] = '\'';
    buf[n] = 0;
}

void writer_pipe_reader_command(char *buf, size_t size, const char *path)
{
    char abs[4096], cwd[4096];
    if (path[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(abs, sizeof abs, "%s/%s", strcmp(cwd, "/") ? cwd : "", path);
    else
        snprintf(abs, sizeof abs, "%s", path);
    char pipe[1024], py[1024], dir[1024];
    shell_word(pipe, sizeof pipe, abs);
    shell_word(py, sizeof py, LC_PYTHON);
    shell_word(dir, sizeof dir, LC_PYTHON_PACKAGE_DIR);
    /* A built tree's package; an installed lcmon's is found by the
     * interpreter (pip install python/). */
    if (access(LC_PYTHON_PACKAGE_DIR "/lcmon/__init__.py", R_OK) == 0)
        snprintf(buf, size, "PYTHONPATH=%s %s -m lcmon %s", dir, py, pipe);
    else
        snprintf(buf, size, "%s -m lcmon %s", py, pipe);
}

/* Wait for a reader and open the pipe. False when stopping. */
bool writer_pipe_connect(lc_stage *s, writer *w, lc_load_meter *meter)
{
    const writer_config *c = s->config;
    bool told_wait = false, told_problem = false;
    int tail = 0; /* an earlier run's bytes were there (lc_fifo_drained counts from 1) */
    atomic_store(&w->g_waiting, 1);
    for (;;) {
        if (lc_run_state_stopping(&s->run))
            break;
        /* Watched from the reading side until drained, so that the reader's
         * end of file stays where the earlier writer left it. */
        if (tail && !lc_fifo_drained(c->path, &tail, WRITER_TAIL_EMPTY_PROBES)) {
            if (!lc_run_state_sleep(&s->run, WRITER_RETRY_SECONDS, meter))
                break;
            continue;
        }
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
            tail = 1;
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
            LC_INFO("%s: waiting for a reader on %s; read it with: %s", s->name, c->path,
                    w->reader_cmd);
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
void writer_pipe_file_failed(lc_stage *s, writer *w, int rc)
{
    const writer_config *c = s->config;
    LC_ERROR("%s: cannot write %s: %s; batches from now on are dropped", s->name, c->path,
             lc_strerror(rc));
    atomic_fetch_add(&w->n_dropped, held_count(w) - w->n_sent);
    writer_pipe_clear(w);
    close(w->fd);
    w->fd = -1;
    w->file_failed = true;
    atomic_store(&w->g_connected, 0);
}

/* Write held batch n_sent (with a header first when needed). */
int writer_pipe_send_next(lc_stage *s, writer *w, uint64_t *partial, lc_load_meter *meter)
{
    held_batch *h = held_at(w, w->n_sent);
    lc_batch *b = h->item.batch;
    uint8_t frame[LC_STREAM_FRAME_BYTES];
    uint32_t flags = (h->item.flags & LC_ITEM_END_OF_STREAM) ? LC_STREAM_FLAG_LAST : 0;
    lc_stream_freshness fresh; /* the ages now, as the batch goes out */
    lc_batch_origin_freshness(&h->item.origin, &fresh);
    lc_stream_batch_frame(frame, flags, h->item.seq, b->rows, b->layout->total_bytes, &h->progress,
                          &fresh);
    struct iovec iov[3];
    int n = 0;
    if (header_needed(w, b->layout))
        iov[n++] = (struct iovec){.iov_base = w->hdr, .iov_len = w->hdr_len};
    iov[n++] = (struct iovec){.iov_base = frame, .iov_len = sizeof frame};
    iov[n++] = (struct iovec){.iov_base = b->data, .iov_len = b->layout->total_bytes};
    uint64_t record = 0;
    for (int i = 0; i < n; i++)
        record += iov[i].iov_len;
    int rc = send_all(s, w, iov, n, partial, meter);
    if (rc == LC_ESTOPPED && *partial > 0) {
        char what[96];
        snprintf(what, sizeof what,
                 "batch %llu left torn at %llu of %llu bytes, the reader drops it",
                 (unsigned long long)h->item.seq, (unsigned long long)*partial,
                 (unsigned long long)record);
        grace_gave_up(s, w, what);
    }
    if (rc != 0)
        return rc;
    w->conn_header_sent = true;
    h->end = w->conn_bytes;
    w->conn_batches++;
    atomic_fetch_add(&w->n_batches, 1);
    atomic_fetch_add(&s->items_out, 1); /* a sink's output: batches into the pipe */
    atomic_fetch_add(&w->n_rows, b->rows);
    writer_note_fresh(w, &fresh);
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
            writer_pipe_disconnect(s, w, 0, 0);
            return 0;
        }
    }
}

/* Input done and everything written: end the stream. 1 when finished, 0 to
 * go round again (the reader left: batches to send again), -1 when stopping. */
int writer_pipe_finish(lc_stage *s, writer *w, lc_load_meter *meter)
{
    const writer_config *c = s->config;
    if (w->file_failed)
        return 1;
    if (w->fd < 0 && !writer_pipe_connect(s, w, meter))
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
                writer_pipe_file_failed(s, w, rc);
                return 1;
            }
            writer_pipe_disconnect(s, w, rc, 0);
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
    writer_pipe_clear(w);
    LC_INFO("%s: stream complete on %s: %llu batches to the last reader, then DONE", s->name,
            c->path, (unsigned long long)w->conn_batches);
    return 1;
}

/* A stop: DONE with the reason "stopped", after the header if this
 * connection has had none (a run stopped before its first batch). Not after
 * a torn batch: the reader must see the end of file there. */
void writer_pipe_end_run(lc_stage *s, writer *w, lc_load_meter *meter)
{
    if (w->torn)
        return;
    grace_begin(s, w, false);
    uint8_t done[LC_STREAM_DONE_BYTES];
    struct iovec iov[2];
    int n = done_record(w, LC_STREAM_END_STOPPED, done, iov);
    uint64_t written = 0;
    int rc = send_all(s, w, iov, n, &written, meter);
    if (rc == LC_ESTOPPED) /* the pipe stayed full: the reader sees the end of file */
        grace_gave_up(s, w, "no DONE marker, the reader sees the end of file after whole batches");
    if (rc != 0)
        return; /* or the reader went */
    w->conn_done_sent = true;
    LC_INFO("%s: run stopped: %llu batches to the reader of %s, then DONE (stopped)", s->name,
            (unsigned long long)w->conn_batches, ((const writer_config *)s->config)->path);
}
