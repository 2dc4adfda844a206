/*
 * stage: the interface every pipeline stage implements, and the pieces of
 * machinery they share.
 *
 * A stage type is a constant class table (lc_stage_class) exported by one
 * file in this folder and listed in registry.c. The table names the YAML key
 * of the type, the item types it reads and writes, the settings table of its
 * configuration block (core/settings.h), and its operations. The orchestrator owns lc_stage
 * objects and calls the operations from one control thread; only workers
 * started by `start` run concurrently, and they talk to the rest of the
 * pipeline only through queues.
 *
 * Life cycle, run by this file (lc_stage_init ... lc_stage_fini) for the
 * pipeline and the tests alike: config_check (the rules that join several
 * settings, at load time; the table gives defaults and ranges) -> init
 * (allocate, no threads) -> start (the class's own set-up, then its worker
 * pool) -> [pause/resume, commands, flush from the metrics thread] -> stop
 * -> fini. A class names its worker function and how many threads run it;
 * stage.c owns the pool (starting, joining, its load metrics). Pausing is
 * generic: workers call lc_run_state_check() between items. Stopping is
 * generic too: the orchestrator sets the run state to stopping and closes
 * the stage's input and output queues, which wakes every blocked put and
 * get; the class's `stop` then wakes whatever else it waits on (inotify, a
 * pipe) and joins its own threads, and the pool is joined last.
 *
 * A worker that runs out of input (input closed and drained) finishes: the
 * output queue closes when the last worker is done (queue producers), and the
 * stage reports STAGE_FINISHED.
 */
#ifndef LC_STAGES_STAGE_H
#define LC_STAGES_STAGE_H

#include "core/command.h"
#include "core/error.h"
#include "core/load.h"
#include "core/metrics.h"
#include "core/problem.h"
#include "core/queue.h"
#include "core/settings.h"
#include "core/thread.h"
#include "format/batch_stream.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct lc_stage lc_stage;

/* A row of a class's command table: a control request people and programs
 * make by name (`lcmon ctl SOCKET anchor-set KEY`, a key of the screen, the
 * Python client's Control.command), listed in the monitor's hello. The
 * pipeline checks the argument count against c (min_args .. max_args) and
 * calls run from its control thread with the request (req->name tells the
 * rows apart when several share a function; req->argv its arguments): 0
 * with the answer's fields added to reply (lc_reply_add: "anchor",
 * "count"), or a negative code with err saying why. Adding a command costs the row, its function
 * and tests: nothing in the pipeline, the monitor, ctl or Python. */
typedef struct lc_stage_command {
    lc_command_info c;
    int (*run)(lc_stage *s, const lc_command_request *req, lc_reply *reply, lc_error *err);
} lc_stage_command;

/* How far a finite run is, for the batch stream's frames: the stages that
 * know write it (file_path_provider's scan without watching, chunk_reader,
 * parquet_game_source with epochs), fifo_writer reads it with
 * lc_run_progress_get. One a pipeline, zero at its start. */
typedef struct lc_run_progress {
    atomic_uint_fast32_t epoch, epochs;
    atomic_uint_fast64_t files_done, files_total;
    atomic_uint_fast64_t records, records_total;
    /* The scan of a provider that does not watch: files found, and how
     * many of them are archives (more than one chunk each). */
    atomic_uint_fast64_t scan_files, scan_archives;
    atomic_bool scan_done;
} lc_run_progress;

/* Settings every stage may read: fixed for the life of a pipeline. */
typedef struct lc_stage_env {
    uint64_t seed;
    /* The run: a random id drawn when the pipeline is built (never 0; 0 for
     * a stage run alone, which draws its own) and when it started. */
    uint64_t run_id;
    uint64_t run_started_ms;
    /* Deterministic mode (the config's `deterministic: true`, or
     * --deterministic): the stages whose workers would hand on items in
     * the order they finish hand them on in the order they took them
     * (turns, below), so that a pinned seed gives the same stream on every
     * run at any thread count. */
    bool deterministic;
    uint32_t rank;           /* this process's share of the data, for sharding */
    uint32_t world_size;     /* number of shares (1 = no sharding) */
    const char *rank_source; /* where rank/world came from ("config", "RANK", ...) */
    /* Called from a stage's last worker when it ran out of input (not when
     * it was stopped), after `finished` is set, so that the pipeline notices
     * the end at once rather than at its next metrics tick. May be NULL. */
    void (*stage_finished)(void *ctx);
    void *stage_finished_ctx;
    /* NULL where the run's progress cannot be told (no finite source, or
     * several, or a splitter before one). */
    lc_run_progress *progress;
    /* Drop the items queued below stage `from`: in the queues its outputs
     * feed, and on through the stages those feed, to the sinks
     * (lc_queue_discard: counted as those queues' drops). Returns how many
     * went. The pipeline's; NULL for a stage run alone. For the pool's
     * `fresh` request: what the trainer gets next is made from now on. */
    uint64_t (*drain_below)(void *ctx, const lc_stage *from);
    void *drain_below_ctx;
} lc_stage_env;

/* The progress a batch made now carries (all zero without env->progress). */
void lc_run_progress_get(const lc_stage_env *env, lc_stream_progress *out);

/* The most inputs and named outputs one stage may have. */
#define LC_STAGE_MAX_INPUTS 16
#define LC_STAGE_MAX_OUTPUTS 8

/* What a class is, for the pipeline (lc_stage_class.flags). */
enum {
    /* It reads its input once to the end (a finite run's one source): the
     * batch stream can tell how far the run is. */
    LC_STAGE_FINITE = 1u << 0,
    /* It mixes what it reads (a window, several outputs): a run through it
     * has no one order, so no progress. */
    LC_STAGE_MIXES = 1u << 1,
};

typedef struct lc_stage_class {
    const char *type_name; /* YAML key, e.g. "chunk_source_loader" */
    const char *summary;   /* one line for --help and the docs */
    unsigned flags;        /* LC_STAGE_FINITE, LC_STAGE_MIXES */
    /* Item types read and written; NULL for producers (input) and sinks
     * (output). lc_item_any as input accepts any type (every input the
     * same); as output it writes the type it reads (a join). */
    const lc_item_type *input;
    const lc_item_type *output;
    /* Several inputs: at most this many (0: one). A stage with several
     * reads them through s->inputs. */
    unsigned max_inputs;
    /* Its input never waits for its output: it takes items in whatever it
     * emits (the chunk pool's window). Wiring checks use it (below). */
    bool decouples;
    /* What the block says of the inputs, checked when the stage is wired
     * (and so by --check-config): upstream[i] names where input i really
     * comes from: the nearest stage above it with several outputs, reached
     * through stages that do not decouple (two inputs fed by one worker
     * have the same number), else a number of its own. 0, or LC_ECONFIG
     * with each problem added to ps (core/problem.h: keys of the block,
     * under the base the caller set). May be NULL. */
    int (*check_inputs)(const void *config, const int *upstream, unsigned n_inputs,
                        lc_problems *ps);
    /* Named outputs, from the checked config block: fills names (at most
     * LC_STAGE_MAX_OUTPUTS, each a valid stage name, pointing into the
     * block) and returns how many. NULL: one output, named "out". A stage
     * with several writes them through s->outputs, in this order. */
    unsigned (*outputs)(const void *config, const char **names);
    size_t priv_size; /* bytes of private state, zeroed at init */

    /* The configuration block: its settings table and struct (one row a
     * key: type, place, default, range, meaning; core/settings.h). The
     * reader writes the defaults and checks each value against its row;
     * config_check (may be NULL) then checks what joins several settings
     * and resolves paths (${VAR}), adding each problem to ps with the key
     * it is about, in the block ("threads", "position_weights.alpha"), and
     * what is wrong (what to do); the caller set the stage and the base.
     * Returns 0, or LC_ECONFIG when it added any. */
    lc_settings settings;
    int (*config_check)(void *config, lc_problems *ps);
    /* What can be checked on the file system without starting anything,
     * for --check-config (a checked config block): problems as for
     * config_check. May be NULL. */
    int (*preflight)(const void *config, lc_problems *ps);
    /* The longest a stop of this stage may rightly take, in seconds (a
     * writer's grace for a slow reader). NULL: no more than a moment. The
     * process's stop deadline (core/exit.h) is extended to cover it. */
    double (*stop_seconds)(const void *config);

    /* The worker pool: `threads` workers (from the checked config block;
     * NULL means one) each run worker(s, index, meter) until it returns;
     * `workers` names the pool's load metric. */
    void (*worker)(lc_stage *s, unsigned index, lc_load_meter *meter);
    unsigned (*threads)(const void *config);
    const char *workers;

    /* Each of these may be NULL. init allocates private state (no
     * threads); start does what must happen before the workers run (open a
     * pipe, start a private thread); stop is called once the run state says
     * stopping and the queues are closed, to wake private waits and join
     * private threads (the pool is joined after it); fini frees. */
    int (*init)(lc_stage *s, lc_error *err);
    void (*fini)(lc_stage *s);
    int (*start)(lc_stage *s, lc_error *err);
    void (*stop)(lc_stage *s);
    /* Counts and gauges since the previous flush. The generic part (name,
     * type, state, items out, output queue, the pool's load) is filled
     * by lc_stage_flush. */
    void (*flush_metrics)(lc_stage *s, lc_stage_metrics *m);
    /* The counts, gauges and texts flush_metrics fills: each one's unit,
     * and how a screen shows it (core/metrics.h). Ended by a NULL name; a
     * test checks that every metric a stage reports is listed. */
    const lc_metric_info *metrics;
    /* The class's commands, ended by a row with a NULL name; NULL for none.
     * Every stage also has the pipeline's (pause, resume). */
    const lc_stage_command *commands;
    /* What a restart of the pipeline (a stop, then a start) carries from
     * this stage to the stage of the same name in the new pipeline: a
     * malloc'd string, NULL for nothing (called on the stopped stage), and
     * taking it in (before start; 0, or a negative code with err set). The
     * shuffling chunk pool carries its anchor. Both may be NULL. */
    char *(*carry_out)(lc_stage *s);
    int (*carry_in)(lc_stage *s, const char *carried, lc_error *err);
} lc_stage_class;

/* A pool of identical worker threads, each with its own load meter. */
typedef struct lc_worker_pool lc_worker_pool;
struct lc_worker_pool {
    const char *name; /* metric name of the pool, e.g. "workers" */
    unsigned n;
    lc_thread *threads;
    lc_load_meter *meters;
    lc_stage *stage;
    void (*fn)(lc_stage *s, unsigned index, lc_load_meter *meter);
    atomic_uint live; /* workers that have not returned */
};

struct lc_stage {
    const lc_stage_class *cls;
    char *name;
    const void *config;      /* the class's config block, owned by the config */
    const lc_stage_env *env; /* owned by the pipeline */
    lc_queue *input;         /* the upstream stage's output; not owned (inputs[0]) */
    lc_queue *output;        /* owned; NULL for sinks (outputs[0]) */
    char *output_name;       /* "<stage>.out" (output_names[0]) */
    /* Every input (not owned) and every output (owned) with its queue name
     * ("<stage>.out", or "<stage>.<name>" for a named output). */
    lc_queue *inputs[LC_STAGE_MAX_INPUTS];
    unsigned n_inputs;
    lc_queue *outputs[LC_STAGE_MAX_OUTPUTS];
    char *output_names[LC_STAGE_MAX_OUTPUTS];
    unsigned n_outputs;
    lc_run_state run;
    void *priv;
    atomic_uint_fast64_t items_out; /* items put on the output (a sink: items it delivered) */
    atomic_int finished;            /* every worker ran out of input */
    lc_worker_pool pool;            /* the class's workers (stage.c's) */
    bool started;
    bool woken; /* lc_stage_wake ran for this stop */
    /* Turns (deterministic mode, lc_stage_in_turns): which worker takes
     * input next (take_mu, held while it takes), and whose output goes
     * next (turn_mu, turn_cond). */
    struct lc_stage_turns {
        pthread_mutex_t take_mu, turn_mu;
        pthread_cond_t turn_cond;
        uint64_t next_ticket; /* given out by lc_stage_take_end (under take_mu or the
                                 caller's own lock) */
        uint64_t next_turn;   /* under turn_mu */
        bool ready;
    } turns;
};

/*
 * A stage's life (see the top of this file), the same for a pipeline and a
 * stage run alone. lc_stage_init fills a zeroed *s: its output queue
 * (capacity, overflow; none for a sink), private state, the class's init
 * and its worker pool; on failure nothing is left and err holds the
 * class's message. lc_stage_start runs the class's start, then the
 * workers. lc_stage_stop (after lc_run_state_stop and closing the queues)
 * runs the class's stop and joins the workers; a stage never started is
 * left alone. lc_stage_fini frees everything but config and env.
 */
int lc_stage_init(lc_stage *s, const lc_stage_class *cls, const char *name, const void *config,
                  const lc_stage_env *env, lc_queue *input, size_t capacity, lc_overflow overflow,
                  lc_error *err);
/* The same for a stage with n_inputs inputs (0 for a producer; at most
 * the class's max_inputs); its outputs come from the class and config, and
 * each gets a queue of `capacity` with `overflow`. */
int lc_stage_init_inputs(lc_stage *s, const lc_stage_class *cls, const char *name,
                         const void *config, const lc_stage_env *env, lc_queue *const *inputs,
                         unsigned n_inputs, size_t capacity, lc_overflow overflow, lc_error *err);
/* Close every output queue (a stop closes them all). */
void lc_stage_close_outputs(lc_stage *s);
int lc_stage_start(lc_stage *s, lc_error *err);
/* The first half of lc_stage_stop: the class's stop (its private waits
 * woken, its private threads joined) and the workers waiting for their turn
 * woken, the workers not joined; once a stop. A pipeline wakes every stage
 * before it joins any. */
void lc_stage_wake(lc_stage *s);
void lc_stage_stop(lc_stage *s);
void lc_stage_fini(lc_stage *s);
/* One metrics flush into m: the generic part, the class's, the pool's load. */
void lc_stage_flush(lc_stage *s, lc_stage_metrics *m);
/* What the stage's items_out counts, plural ("chunks"): its output's
 * items, a sink's input's; NULL when its type does not say. */
const char *lc_stage_item_unit(const lc_stage *s);
/* LC_STAGE_RUNNING, PAUSED, STOPPED or FINISHED (core/metrics.h). */
int lc_stage_state(lc_stage *s);

/*
 * Turns: how the workers of a stage keep the order of its items in
 * deterministic mode. A worker takes its input (a block of items, a batch's
 * frames, a draw) holding the take lock and gets a ticket, numbered in the
 * order the takes were made; it does its work alongside the others, then
 * waits for its ticket's turn, hands on what it made (nothing, when the
 * input gave nothing) and ends the turn. So the output is in the input's
 * order, each item's output together, whatever the threads' timing, and it
 * is what one worker would hand on. Every ticket given out must have its
 * turn ended, or the workers after it wait (until a stop).
 *
 * lc_stage_in_turns: the pipeline is deterministic and the stage has more
 * than one worker (with one, the order is kept anyway). take_begin waits
 * for the take lock (idle on the meter); take_end gives the ticket and
 * releases it. A stage that serialises its takes under a lock of its own
 * (the chunk pool's draws) calls lc_stage_ticket under it instead.
 * turn_wait returns false when the stage is stopping (the turn is then
 * not to be ended, nor anything handed on).
 */
bool lc_stage_in_turns(const lc_stage *s);
/* At init, for a stage whose threads deterministic mode does not order
 * (the chess-transformer family): a warning in deterministic mode when it
 * has several (threads: 1 gives the same stream on every run). */
void lc_stage_warn_unordered(const lc_stage *s, unsigned threads);
void lc_stage_take_begin(lc_stage *s, lc_load_meter *meter);
uint64_t lc_stage_take_end(lc_stage *s);
uint64_t lc_stage_ticket(lc_stage *s);
bool lc_stage_turn_wait(lc_stage *s, uint64_t ticket, lc_load_meter *meter);
void lc_stage_turn_end(lc_stage *s);

/* Threads are named "<stage>-<index>" (truncated to 15 bytes). If the stage
 * has an output, each worker is registered as one of its producers, so the
 * output closes when the last worker returns. */
void lc_worker_pool_init(lc_worker_pool *p, const char *name, unsigned n);
void lc_worker_pool_start(lc_worker_pool *p, lc_stage *s,
                          void (*fn)(lc_stage *s, unsigned index, lc_load_meter *meter));
void lc_worker_pool_join(lc_worker_pool *p);
void lc_worker_pool_fini(lc_worker_pool *p);
void lc_worker_pool_flush(lc_worker_pool *p, lc_stage_metrics *m);

/* Expand ${VAR} and ${VAR:-default} in the config string *field (a path),
 * in place. An unset variable without a default, or an empty result, is
 * LC_ECONFIG, a problem about key in ps saying what to do, where `what`
 * says what the field names ("the data directory"). For config_check
 * functions. */
int lc_config_expand_path(char **field, const char *key, const char *what, lc_problems *ps);
/* The same, and names in defaulted (size bytes; "" when none) the variable
 * whose default was taken (or that lcmon supplied): a path the user did not
 * choose, which the stage says at start. */
int lc_config_expand_path_noting(char **field, const char *key, const char *what, char *defaulted,
                                 size_t size, lc_problems *ps);
/* At a run's start: a path the user did not choose (the config's
 * ${VAR:-...} with VAR unset, which in the shipped configs is the bundled
 * sample data) said as a warning naming VAR, with a set variable one or two
 * letters away from it named as a likely misspelling. Nothing when
 * defaulted is "". `what` names what VAR should point at ("data folder"). */
void lc_stage_warn_default_path(const lc_stage *s, const char *defaulted, const char *path,
                                const char *what);

/* A `threads` row: worker threads, def (text) by default, 1 to max. */
#define LC_SETTING_THREADS(st, field, def_text, most)                                              \
    {                                                                                              \
        .key = "threads", .type = LC_SETTING_WHOLE, LC_SETTING_AT(st, field), .def = (def_text),   \
        LC_SETTING_RANGE(1, (most)), .meaning = "worker threads", .example = "4"                   \
    }

/* The share (0 .. world - 1) that owns the piece of data named by key (a
 * file's sort key) and index (a member, a row): FNV-1a of the key mixed with
 * the index. It depends on nothing but the data's identity, so distributed
 * ranks agree on it whatever order they discover the data in. */
uint32_t lc_share_of(const char *key, uint64_t index, uint32_t world);

/* The name of a stage's output queue ("pool.out"), as metrics, the screen
 * and the monitor's hello show it; malloc'd. With an output name
 * ("train"): "split.train". lc_stage_queue_name(stage) is the same as
 * lc_stage_output_queue_name(stage, NULL). */
char *lc_stage_queue_name(const char *stage);
char *lc_stage_output_queue_name(const char *stage, const char *output);

/* The outputs a class has with this (checked) config block: their names
 * in names (NULL for the one default output), the count returned (0 for
 * a sink). */
unsigned lc_stage_class_outputs(const lc_stage_class *cls, const void *config, const char **names);

/* Put an item on output k (0 .. n_outputs - 1), counting it, as
 * lc_stage_emit does for the first. */
int lc_stage_emit_to(lc_stage *s, unsigned k, const void *item, lc_load_meter *meter);

/* Put a marker (LC_ITEM_SCAN_DONE: the end of the initial scan) on the
 * stage's output: like lc_stage_emit, but not counted in items_out, which
 * counts the things a stage made (files, sources), as people read it. */
int lc_stage_emit_marker(lc_stage *s, const void *item, lc_load_meter *meter);

/* Put an item on the stage's output, counting it. 0 or LC_ECLOSED (the
 * caller still owns the item and should dispose of it and return). */
int lc_stage_emit(lc_stage *s, const void *item, lc_load_meter *meter);

/*
 * Blocks of items, for the stages that move many small ones (frames; chunks
 * at low sampling rates), where a lock and a wake-up per item cost more
 * than the work: an inbox reads its queue a block at a time
 * (lc_queue_get_many) and hands the items out one by one; an outbox
 * collects items and puts them a block at a time (lc_queue_put_many) on the
 * stage's first output. Both belong to one worker thread.
 *
 * A worker reading an inbox and writing an outbox passes the outbox to
 * lc_stage_inbox_get, which sends what it holds before waiting for input:
 * nothing waits in an outbox while its stage waits. fini disposes of what
 * is left (unread input, unsent output: a stop).
 */
typedef struct lc_stage_outbox lc_stage_outbox;
typedef struct lc_stage_inbox {
    lc_queue *q;
    unsigned char *items;
    size_t size, cap, n, pos; /* item bytes, slots, items read, items handed out */
    /* In turns (lc_stage_inbox_in_turns): the stage, its outbox, and the
     * ticket of the block being handed out (holding: one is). */
    lc_stage *turns;
    lc_stage_outbox *turn_out;
    uint64_t ticket;
    bool holding;
    uint64_t discards; /* the queue's discards when the block was taken */
    /* Set when the queue was discarded (lc_queue_discard: a `fresh`
     * request) after this worker took its block: the rest of the block and
     * the outbox given to lc_stage_inbox_get were dropped with it. The
     * worker drops what else it made of them (a batch being filled) and
     * clears it. */
    bool stale;
} lc_stage_inbox;

struct lc_stage_outbox {
    lc_stage *s;
    unsigned char *items;
    size_t size, cap, n;
    bool grow; /* in turns: never sent but at the block's turn */
};

void lc_stage_inbox_init(lc_stage_inbox *in, lc_queue *q, size_t cap);
/* In deterministic mode (lc_stage_in_turns(s)), make the inbox take each
 * block in turns and send out (which then grows rather than being sent
 * before its turn) at the block's turn, before the next block is taken:
 * the stage's output keeps its input's order. Nothing otherwise. */
void lc_stage_inbox_in_turns(lc_stage_inbox *in, lc_stage *s, lc_stage_outbox *out);
/* The next item: 0, or LC_ECLOSED when the queue is closed and drained
 * (out then untouched). out (NULL: none) is flushed before any wait. When
 * the queue was discarded since the block was taken, what is left of the
 * block and out's items are dropped first (`stale`). */
int lc_stage_inbox_get(lc_stage_inbox *in, void *item, lc_stage_outbox *out, lc_load_meter *meter);
/* The item k places after the one lc_stage_inbox_get handed out last, in
 * the block taken (NULL past its end): for a look ahead (the frames' cells
 * prefetched before they are read), taking nothing. */
static inline const void *lc_stage_inbox_peek(const lc_stage_inbox *in, size_t k)
{
    return in->pos + k < in->n ? in->items + (in->pos + k) * in->size : NULL;
}
void lc_stage_inbox_fini(lc_stage_inbox *in);

void lc_stage_outbox_init(lc_stage_outbox *out, lc_stage *s, size_t cap);
/* Take the item (always: the caller no longer owns it) and send the block
 * when it is full. 0, or LC_ECLOSED when the output is closed (everything
 * unsent, this item too, is disposed of: the worker should return). */
int lc_stage_outbox_put(lc_stage_outbox *out, const void *item, lc_load_meter *meter);
/* Send what it holds: 0 or LC_ECLOSED (as above). */
int lc_stage_outbox_flush(lc_stage_outbox *out, lc_load_meter *meter);
void lc_stage_outbox_fini(lc_stage_outbox *out);

#endif
