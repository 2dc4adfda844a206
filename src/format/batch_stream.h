/*
 * batch_stream: the byte stream of tensor batches that the fifo_writer stage
 * writes to a named pipe (or a file) and the lcmon Python package (python/lcmon) reads.
 *
 * Format, version 5. All integers are little-endian and unsigned; there is
 * no padding between fields. (Version 4 had batch frames of 72 bytes,
 * without the freshness; version 3 of 32 bytes, without the progress; version 2 had neither the
 * dtypes 4 and 5 nor the layout name and expansion at the end of the header; version 1 also had no
 * run fields in the header and a DONE marker whose second word was always 0.)
 *
 * A stream is a stream header, then any number of batches, then an end
 * marker:
 *
 *   stream header
 *     magic          8 bytes  "LCMONBS\0"
 *     version        u32      5
 *     header_bytes   u32      length of the rest of the header, in bytes
 *     n_tensors      u32
 *     batch_size     u64      rows of a full batch
 *     payload_bytes  u64      bytes of every batch payload (the batch
 *                             layout's total_bytes)
 *     run_id         u64      the run that writes this stream: a random
 *                             number drawn when the pipeline starts, new at
 *                             every start or restart (never 0)
 *     run_started_ms u64      when that run started, in milliseconds since
 *                             the Unix epoch
 *     then per tensor, n_tensors times:
 *       name_len     u16
 *       name         name_len bytes, no NUL
 *       dtype        u8       0 float32, 1 int64, 2 bool (one byte, 0 or 1),
 *                             3 int32, 4 uint8, 5 uint16
 *       ndim         u8       1 to 4
 *       shape        u64[ndim]; shape[0] = batch_size
 *       offset       u64      where the tensor starts in the payload, a
 *                             multiple of 64
 *       nbytes       u64      product of shape times the dtype size
 *     layout_len     u16
 *     layout         layout_len bytes: the layout's name ("lc0-current",
 *                    "lc0-legacy-packed", "chess-decoder", ...; may be empty)
 *     expand_len     u16
 *     expand         expand_len bytes: how a reader makes the trainer's
 *                    tensors of these: empty (they are those tensors),
 *                    "widen-int64" (each uint8 and uint16 tensor becomes
 *                    int64), "lc0-packed-1" (bit planes and a sparse policy,
 *                    format/lc0/frame.h and docs/batch-stream.md). A reader
 *                    that does not know the expansion must stop, not guess.
 *     seed           u64      the run's seed (version 4 on): every random
 *                             choice of the run comes from it
 *     Readers ignore bytes after the seed up to header_bytes.
 *
 *   batch (96 bytes of frame, then the payload)
 *     magic          4 bytes  "BTCH"
 *     flags          u32      bit 0: last batch of a finite stream
 *     seq            u64      batch number from 0
 *     rows           u64      valid rows: batch_size, except possibly in the
 *                             last batch of a finite stream
 *     payload_bytes  u64      = payload_bytes of the header
 *     progress of a finite run when the batch was made (all 0 in a run
 *     without end, or where the run cannot tell):
 *       epoch        u32      the epoch being read, from 1
 *       epochs       u32      epochs in the run
 *       files_done   u64      files read to their end
 *       files_total  u64      files the run reads (0: not known)
 *       records      u64      records read (lc0 chunks, Parquet games)
 *       records_total u64     records the run reads (0: not known)
 *     freshness of the rows (version 5 on; all 0 when the rows' origin is
 *     not known, as in the Parquet pipelines):
 *       newest_seq   u64      ingest sequence of the newest game among the
 *                             rows: the pool numbers the games of a run from
 *                             1 as they join its window (chunk_reader as it
 *                             reads them); 0: not known
 *       fresh_rows   u32      rows of games drawn by a `fresh` request
 *       age_min_ms   u32      age of the rows' newest game when the frame
 *                             was written: milliseconds since it arrived
 *                             in the pool (was read, for chunk_reader)
 *       age_median_ms u32     the median age of the rows
 *       age_max_ms   u32      the age of the rows' oldest game
 *     payload        payload_bytes bytes: each tensor C-contiguous at its
 *                             offset, with batch_size rows of which the
 *                             first `rows` are valid (ignore the rest)
 *
 *   end of a run (16 bytes)
 *     magic          4 bytes  "DONE"
 *     reason         u32      0: the data ended (a finite run is complete:
 *                             nothing more will come);
 *                             1: the run was stopped (the pipeline stopped
 *                             or restarted; a new run may follow on the same
 *                             pipe, with a header of its own)
 *     batches        u64      batch frames written since the stream header
 *                             that began this connection
 *
 * A reader that meets end of file without DONE knows that the writer died or
 * went away mid-stream (killed, or a stop that could not finish the batch
 * being written within a second): it drops the partial batch, if any. A
 * stream without batches has a header with n_tensors, batch_size and
 * payload_bytes all 0.
 *
 * Runs. A pipe outlives the runs that write to it. When a run ends (DONE
 * with reason 1, or end of file), a reader that keeps the pipe open, or
 * opens it again, gets the next run's header and batches: a new run_id, seq
 * from 0. A writer that finds unread bytes of an earlier writer in the pipe
 * when it connects closes it again and waits until the reader has drained
 * them, so a new run never follows a torn batch without the end of file in
 * between.
 *
 * A stream header may also appear between two batches: the writer sends one
 * whenever the layout changes. On a named pipe, every new reader gets a
 * fresh stream header first, then whole batches, starting with the first
 * batch that the previous reader did not read to its end (no gap, no
 * repeat). A reader whose first bytes are not a stream header has attached
 * to a pipe that still holds its predecessor's unread bytes (the writer has
 * not yet noticed that the previous reader left): it should close the pipe,
 * wait a moment (0.1 s) and open it again.
 *
 * Pure functions; any thread may call them.
 */
#ifndef LC_FORMAT_BATCH_STREAM_H
#define LC_FORMAT_BATCH_STREAM_H

#include "core/error.h"
#include "format/batch.h"

#include <stddef.h>
#include <stdint.h>

#define LC_STREAM_MAGIC "LCMONBS" /* with its NUL: the 8 magic bytes */
#define LC_STREAM_MAGIC_BYTES 8
#define LC_STREAM_VERSION 5u
#define LC_STREAM_MIN_VERSION 2u /* the oldest the decoder reads */
/* magic, version and header_bytes: what a reader needs to learn the rest. */
#define LC_STREAM_HEADER_PREFIX_BYTES 16
/* Upper bound of header_bytes accepted by the decoder. */
#define LC_STREAM_HEADER_MAX_BYTES 65536
#define LC_STREAM_FRAME_BYTES 96
#define LC_STREAM_FRAME_BYTES_V4 72 /* version 4: no freshness */
#define LC_STREAM_FRAME_BYTES_V3 32 /* versions 1 to 3: no progress */
#define LC_STREAM_DONE_BYTES 16
#define LC_STREAM_FLAG_LAST 1u
/* The reasons of a DONE marker. */
#define LC_STREAM_END_DATA 0u
#define LC_STREAM_END_STOPPED 1u

/* The run a stream header names. */
typedef struct lc_stream_run {
    uint64_t id;         /* never 0 */
    uint64_t started_ms; /* Unix time */
    uint64_t seed;       /* the run's seed (version 4 on) */
} lc_stream_run;

/* A new run: a random id (never 0) and the time now. */
void lc_stream_run_draw(uint64_t *id, uint64_t *started_ms);

/* Encode the stream header of layout l into buf. Returns the header's size
 * in bytes; when that is more than cap, nothing is written and the caller
 * retries with a buffer of the returned size. */
size_t lc_stream_header_encode(const lc_batch_layout *l, const lc_stream_run *run, uint8_t *buf,
                               size_t cap);

/* How far a finite run is (a batch frame's progress fields). */
typedef struct lc_stream_progress {
    uint32_t epoch, epochs;
    uint64_t files_done, files_total;
    uint64_t records, records_total;
} lc_stream_progress;

/* How fresh a batch's rows are (a batch frame's freshness fields). */
typedef struct lc_stream_freshness {
    uint64_t newest_seq; /* 0: not known */
    uint32_t fresh_rows;
    uint32_t age_min_ms, age_median_ms, age_max_ms;
} lc_stream_freshness;

/* The 96-byte frame that precedes a batch payload; progress and fresh may
 * be NULL (all zero). */
void lc_stream_batch_frame(uint8_t out[LC_STREAM_FRAME_BYTES], uint32_t flags, uint64_t seq,
                           uint64_t rows, uint64_t payload_bytes,
                           const lc_stream_progress *progress, const lc_stream_freshness *fresh);

/* The 16-byte end marker, with its reason (LC_STREAM_END_*). */
void lc_stream_done_frame(uint8_t out[16], uint32_t reason, uint64_t batches);

/*
 * Decode a stream header at the start of buf (len bytes) into out, setting
 * *consumed to the header's size. Errors, with a message in err:
 *   not the magic                                 LC_EFORMAT
 *   a version outside 2..5 (MIN_VERSION..VERSION)  LC_EVERSION
 *   buf shorter than the header                   LC_ETRUNC, and *consumed is
 *                                                 the size needed when known
 *                                                 (0 when fewer than 16 bytes)
 *   a field out of range or inconsistent          LC_EFORMAT
 * On error *out is zeroed.
 */
int lc_stream_header_decode(const uint8_t *buf, size_t len, lc_batch_layout *out,
                            lc_stream_run *run, size_t *consumed, lc_error *err);

typedef enum lc_stream_record {
    LC_STREAM_BATCH = 1,  /* a 96-byte batch frame */
    LC_STREAM_DONE = 2,   /* the 16-byte end marker */
    LC_STREAM_HEADER = 3, /* the start of a stream header */
} lc_stream_record;

typedef struct lc_stream_frame {
    lc_stream_record kind;
    uint32_t flags;              /* batch */
    uint64_t seq;                /* batch */
    uint64_t rows;               /* batch */
    uint64_t payload_bytes;      /* batch */
    lc_stream_progress progress; /* batch */
    lc_stream_freshness fresh;   /* batch */
    uint64_t batches;            /* done */
    uint32_t reason;             /* done: LC_STREAM_END_* */
} lc_stream_frame;

/* Identify what starts at buf (for tests and tools): a batch frame (needs 96
 * bytes), a DONE marker (16 bytes) or a stream header (8 bytes; decode it with
 * lc_stream_header_decode). Returns 0, LC_ETRUNC when len is too short for
 * what the magic announces (or under 4 bytes), LC_EFORMAT for an unknown
 * magic or a DONE with an unknown reason. */
int lc_stream_frame_decode(const uint8_t *buf, size_t len, lc_stream_frame *out, lc_error *err);

#endif
