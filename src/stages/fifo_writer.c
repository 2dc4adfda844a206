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
 * goes out, and the pipe is closed. "In time" follows the reader's pace:
 * the longest wait on a full pipe over the last 30 s or so (a trainer's
 * step: a reader takes a batch in a burst, then leaves the pipe alone for
 * its step, and a dense batch larger than the pipe makes many short waits
 * inside the burst, which must not hide the step). The writer waits twice
 * that for the reader to take bytes (at least half a second, at most
 * `stop_grace`, 4 s by default; all of `stop_grace` when the writer waited
 * longer for batches than for the reader lately: a trainer faster than
 * the loader hides its step), again each time it does, and at most
 * twice `stop_grace` in all: the batch begun may wait for one step, the
 * marker after it for another. So a trainer whose steps are up to
 * `stop_grace` always gets the batch whole, then the marker, and a reader
 * that keeps the pipe open but stopped reading holds a stop up for about
 * two of its steps only. A reader that keeps the pipe open reads every
 * batch written before the stop, then the marker, then waits for the next
 * run's header. (A batch not finished in time is left torn, as a killed
 * writer leaves it: the reader drops it; the writer logs a warning that
 * says why, how long the reader's steps were, and what to raise.)
 * When a writer connects and finds bytes of an earlier writer still unread
 * in the pipe, it closes the pipe again and waits until they are drained:
 * the reader then meets the end of file before anything of the new run, so
 * a torn batch is never followed by new bytes.
 *
 * With `regular_file` set, the stream goes to a regular file instead,
 * truncated at start: header, batches, DONE.
 */
#include "stages/writer_pipe.h"

#include "core/clock.h"
#include "core/fifo.h"
#include "core/log.h"
#include "core/text.h"
#include "format/batch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

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
                         "longest trainer step a stop waits for, at each read, to finish the batch "
                         "begun and send DONE (twice this in all)",
                         "10"),
    {0},
};

static int writer_config_check(void *p, lc_problems *ps)
{
    writer_config *c = p;
    if (!c->path) /* missing: the reader said so */
        return 0;
    return lc_config_expand_path(&c->path, "path", "the pipe to write to", ps);
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
        if (writer_pipe_all_sent(w)) {
            if (w->input_done) {
                int rc = writer_pipe_finish(s, w, meter);
                if (rc != 0)
                    break;
                continue;
            }
            lc_batch_item item;
            uint64_t t0 = lc_now_ns();
            int rc = lc_queue_get_until(s->input, &item, meter, t0 + WRITER_POLL_NS);
            writer_pipe_waited_input(s, w, t0, lc_now_ns());
            if (rc == -ETIMEDOUT) {
                writer_pipe_check_reader(s, w);
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
            writer_pipe_hold(w, &item, s->env);
        }
        if (w->fd < 0 && !writer_pipe_connect(s, w, meter))
            break;
        uint64_t partial = 0;
        int rc = writer_pipe_send_next(s, w, &partial, meter);
        if (rc == LC_ESTOPPED) {
            w->torn = partial > 0;
            break;
        }
        if (rc != 0) {
            if (c->regular_file)
                writer_pipe_file_failed(s, w, rc);
            else
                writer_pipe_disconnect(s, w, rc, partial);
        }
    }
    /* Stopped: the run ends with DONE "stopped", if the stream is at a batch
     * boundary and the reader takes 16 bytes within the grace time. */
    if (w->fd >= 0 && lc_run_state_stopping(&s->run) && !w->conn_done_sent)
        writer_pipe_end_run(s, w, meter);
    /* Stopped, or finished: whatever is still held is dropped. */
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
    writer_pipe_clear(w);
    atomic_store(&w->g_connected, 0);
    atomic_store(&w->g_waiting, 0);
}

static int writer_init(lc_stage *s, lc_error *err)
{
    writer *w = s->priv;
    w->fd = -1;
    w->lock = (lc_fifo_lock)LC_FIFO_LOCK_NONE;
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
    if (rc != 0) {
        lc_error_prefix(err, "path: ");
        return rc;
    }
    /* Kept across restarts (this process is the writer) while the path
     * holds the pipe it was taken for; a pipe made again is locked again. */
    if (!lc_fifo_writer_locked(&w->lock, c->path))
        lc_fifo_writer_unlock(&w->lock);
    if (w->lock.fd < 0 && lc_fifo_writer_lock(c->path, &w->lock, err) == -EBUSY)
        return -EBUSY;
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
    writer_pipe_reader_command(w->reader_cmd, sizeof w->reader_cmd,
                               ((const writer_config *)s->config)->path);
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
    lc_fifo_writer_unlock(&w->lock); /* and its file, which would pile up in /tmp */
    writer_pipe_clear(w);
    lc_deque_fini(&w->held_q);
    free(w->hdr);
    free(w->hdr_tmp);
    if (w->wake_fd >= 0)
        close(w->wake_fd);
}

enum {
    W_WAITING,
    W_BYTES,
    W_BLOCKED_MS,
    W_BATCHES,
    W_ROWS,
    W_READERS,
    W_DISCONNECTS,
    W_STALLS,
    W_RESENT,
    W_DROPPED,
    W_CONNECTED,
    W_PIPE_FULL,
    W_AGE,
    W_AGE_MEDIAN,
    W_AGE_MAX,
};

/* How old the positions written are: the last batch's median age, the
 * largest age of the batches since the last flush (or the last such), in
 * ms, and both in words for the screen. Nothing until a batch of known
 * origin was written. */
static void flush_freshness(writer *w, lc_stage_metrics *m)
{
    uint64_t median1 = atomic_load(&w->age_median_ms1), max1 = atomic_exchange(&w->age_max_ms1, 0);
    if (max1)
        w->age_max_ms_shown = max1 - 1;
    if (!median1)
        return;
    int64_t median = (int64_t)median1 - 1, max = (int64_t)w->age_max_ms_shown;
    lc_metric_gauge(m, W_AGE_MEDIAN, median);
    lc_metric_gauge(m, W_AGE_MAX, max);
    char text[64];
    snprintf(text, sizeof text, "%.1f s median, %.1f s max", (double)median / 1e3,
             (double)max / 1e3);
    lc_metric_text(m, W_AGE, text);
}

static void writer_flush(lc_stage *s, lc_stage_metrics *m)
{
    writer *w = s->priv;
    const writer_config *c = s->config;
    snprintf(m->detail, sizeof m->detail, "%s", c->path);
    if (atomic_load(&w->g_waiting))
        snprintf(m->warning, sizeof m->warning, "no reader: start one with %s", w->reader_cmd);
    else if (atomic_load(&w->g_stalled))
        snprintf(m->warning, sizeof m->warning,
                 "the reader of %s is not reading (stopped, or busy?)", c->path);
    /* Milliseconds from a nanosecond total, carrying the remainder over. */
    uint64_t ms = atomic_load(&w->blocked_ns) / 1000000u;
    lc_metric_add(m, W_BLOCKED_MS, ms - w->blocked_ms_reported);
    w->blocked_ms_reported = ms;
    flush_freshness(w, m);
}

#define COUNT_AT(field) LC_METRIC_AT(writer, field)
#define GAUGE_AT(field) .kind = LC_METRIC_GAUGE, LC_METRIC_AT(writer, field)

/* Waiting for a reader, the warning (first in the row) says what to run. */
static const lc_metric_info writer_metrics[] = {
    [W_WAITING] = {"waiting_for_reader", "", LC_SHOW_FLAG, LC_SHOW_WARN, "waiting for a reader",
                   "no reader", .role = LC_ROLE_READER_WAITING, GAUGE_AT(g_waiting)},
    [W_BYTES] = {"bytes", "bytes", LC_SHOW_RATE, 0, "/s", COUNT_AT(n_bytes)},
    /* Waiting on the reader is the loader keeping ahead of the trainer:
     * information, not a warning. */
    [W_BLOCKED_MS] = {"blocked_ms", "ms", LC_SHOW_SHARE_OF_TIME, 0, "blocked on the reader",
                      "blocked"},
    [W_BATCHES] = {"batches", "batches", COUNT_AT(n_batches)},
    [W_ROWS] = {"rows", "rows", .role = LC_ROLE_ROWS, COUNT_AT(n_rows)},
    [W_READERS] = {"readers", "readers", COUNT_AT(n_readers)},
    [W_DISCONNECTS] = {"disconnects", "readers", COUNT_AT(n_disconnects)},
    [W_STALLS] = {"reader_stalls", "stalls", COUNT_AT(n_stalls)},
    [W_RESENT] = {"resent_batches", "batches", COUNT_AT(n_resent)},
    [W_DROPPED] = {"dropped_batches", "batches", .kind = LC_METRIC_DROP, COUNT_AT(n_dropped)},
    [W_CONNECTED] = {"reader_connected", "", .role = LC_ROLE_READER_CONNECTED,
                     GAUGE_AT(g_connected)},
    [W_PIPE_FULL] = {"pipe_full", "", GAUGE_AT(g_pipe_full)},
    /* How long ago the games of the positions written arrived in the pool. */
    [W_AGE] = {"position_age", "", LC_SHOW_TEXT, 0, "age", "age", .kind = LC_METRIC_TEXT},
    [W_AGE_MEDIAN] = {"position_age_median_ms", "ms", .role = LC_ROLE_POSITION_AGE,
                      .kind = LC_METRIC_GAUGE},
    [W_AGE_MAX] = {"position_age_max_ms", "ms", .role = LC_ROLE_POSITION_AGE_MAX,
                   .kind = LC_METRIC_GAUGE},
    {0},
};

/* How long a stop may take: the grace time for a slow reader. */
static double writer_stop_seconds(const void *config)
{
    return 2 * ((const writer_config *)config)->stop_grace;
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

/* --check-config: the path is a named pipe (or a regular file with
 * regular_file), or absent in a directory where it can be made. */
static int writer_preflight(const void *config, lc_problems *ps)
{
    const writer_config *c = config;
    lc_error one;
    lc_error_clear(&one);
    if (lc_fifo_check(c->path, c->regular_file, c->create, false, LC_ECONFIG, &one) == 0)
        return 0;
    return lc_problem_add(ps, "path", "%s", one.msg);
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
