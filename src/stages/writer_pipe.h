/*
 * writer_pipe: what fifo_writer.c and writer_pipe.c share, and nothing else
 * includes. fifo_writer.c is the stage: its settings, its life cycle and the
 * worker's loop. writer_pipe.c is the worker's side of the pipe: the batches
 * it holds, connecting a reader and noticing one leave, writing records
 * whole (header, batch, DONE) and ending a stream or a run. How it behaves
 * is told at the top of fifo_writer.c.
 */
#ifndef LC_STAGES_WRITER_PIPE_H
#define LC_STAGES_WRITER_PIPE_H

#include "core/deque.h"
#include "core/fifo.h"
#include "format/batch_stream.h"
#include "stages/items.h"
#include "stages/stage.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How often the thread re-checks while idle, and retries opening the pipe. */
#define WRITER_POLL_NS (50 * 1000000ull)
#define WRITER_RETRY_SECONDS 0.05
/* Probes that find the pipe empty before a writer follows an earlier run's
 * bytes (core/fifo.h, lc_fifo_drained). */
#define WRITER_TAIL_EMPTY_PROBES 2
/* The pipe buffer we ask for. */
#define WRITER_PIPE_BYTES (1 << 20)
/* How long a stop waits for the reader to take bytes at least, and at most
 * by default (stop_grace; twice that in all). */
#define WRITER_STOP_IDLE_MIN_NS 500000000ull
#define WRITER_STOP_GRACE_DEFAULT_S 4.0
/* The reader's pace is the longest wait on a full pipe in this window
 * (or 2 x stop_grace when that is longer) and the one before it. */
#define WRITER_PACE_WINDOW_NS 30000000000ull

typedef struct writer_config {
    char *path;
    bool regular_file;
    bool create;
    double stop_grace;
} writer_config;

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
    lc_fifo_lock lock; /* the one-writer-a-pipe lock (core/fifo.h); fd -1: none */
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
    uint64_t grace_end;           /* while stopping: when to give up on a record begun */
    uint64_t grace_limit;         /* ... and when at the latest (2 x stop_grace after the stop) */
    uint64_t last_taken;          /* when the reader last made room in a full pipe */
    uint64_t pace_now, pace_prev; /* the longest wait on a full pipe: this window, the last */
    uint64_t pace_since;          /* when this window began */
    uint64_t full_now, full_prev; /* the waits on a full pipe in all: this window, the last */
    uint64_t hungry_now, hungry_prev; /* the waits for a batch with a reader connected: same */
    bool torn;                        /* stopped in the middle of a batch */
    uint64_t progress_seq;            /* a finite run's newest chunk with rows in a batch taken */
    uint64_t connections;             /* readers connected since the stage was made, for the log */
    uint64_t blocked_ms_reported;     /* flush side only */
    uint64_t full_since;              /* the pipe has been full since then (0: it is not) */
    char reader_cmd[512];             /* the command that reads the pipe, for the hints */

    atomic_uint_fast64_t n_batches, n_rows, n_bytes, n_readers, n_disconnects, n_resent, n_dropped,
        blocked_ns, n_stalls;
    atomic_int_fast64_t g_connected, g_waiting, g_pipe_full, g_stalled;
    /* Freshness of the batches written (format/batch_stream.h): the last
     * one's median age, and the largest age since the last flush, in ms
     * plus 1 (0: no batch of known origin yet, or since the flush). */
    atomic_uint_fast64_t age_median_ms1, age_max_ms1;
    uint64_t age_max_ms_shown; /* flush side: the last largest age shown */
} writer;

/* A batch of that freshness was written: note its ages. */
static inline void writer_note_fresh(writer *w, const lc_stream_freshness *f)
{
    if (!f->newest_seq)
        return;
    atomic_store(&w->age_median_ms1, (uint64_t)f->age_median_ms + 1);
    uint64_t max1 = (uint64_t)f->age_max_ms + 1, seen = atomic_load(&w->age_max_ms1);
    while (max1 > seen && !atomic_compare_exchange_weak(&w->age_max_ms1, &seen, max1)) {
    }
}

/* Every held batch is written on this connection: the worker takes input. */
static inline bool writer_pipe_all_sent(const writer *w)
{
    return w->n_sent == lc_deque_len(&w->held_q);
}

/* Hold a batch from the input, with the run's progress as it came. */
void writer_pipe_hold(writer *w, const lc_batch_item *item, const lc_stage_env *env);
/* Drop every held batch. */
void writer_pipe_clear(writer *w);
/* The thread waited for a batch from since until now (counts while a
 * reader is connected: it tells a trainer that waits for batches, whose
 * step is hidden). */
void writer_pipe_waited_input(const lc_stage *s, writer *w, uint64_t since, uint64_t now);
/* The command a user copies to read the pipe: the interpreter lcmon was
 * configured with and the package's folder when it is there, the pipe's
 * absolute path, each quoted for the shell where it needs it. */
void writer_pipe_reader_command(char *buf, size_t size, const char *path);
/* Wait for a reader and open the pipe. False when stopping. */
bool writer_pipe_connect(lc_stage *s, writer *w, lc_load_meter *meter);
/* The reader is gone (rc: the write's error, 0 when seen closed): keep the
 * batches it did not read whole (partial: bytes of the one being written). */
void writer_pipe_disconnect(lc_stage *s, writer *w, int rc, uint64_t partial);
/* While idle: notice a reader that closed the pipe. */
void writer_pipe_check_reader(lc_stage *s, writer *w);
/* Write held batch n_sent (with a header first when needed). 0, LC_ESTOPPED,
 * or a negative errno; *partial counts the bytes that went out. */
int writer_pipe_send_next(lc_stage *s, writer *w, uint64_t *partial, lc_load_meter *meter);
/* A write to a regular file failed: nothing more can go there. */
void writer_pipe_file_failed(lc_stage *s, writer *w, int rc);
/* Input done and everything written: end the stream. 1 when finished, 0 to
 * go round again (the reader left), -1 when stopping. */
int writer_pipe_finish(lc_stage *s, writer *w, lc_load_meter *meter);
/* A stop: DONE with the reason "stopped", unless a batch is torn. */
void writer_pipe_end_run(lc_stage *s, writer *w, lc_load_meter *meter);

#endif
