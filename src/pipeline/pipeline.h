/*
 * pipeline: the orchestrator. Builds the stages a configuration describes,
 * wires their queues, starts and stops them, flushes their metrics at a fixed
 * interval into windows of time (the last second to all time), and runs commands
 * (core/command.h) on them.
 *
 * Threads: the caller (one control thread: main, the screen, or the monitor
 * server, serialised by the pipeline's control lock), the stages' workers,
 * one metrics thread, and a drain thread when the last stage has an output
 * that nothing reads inside the pipeline (its items are counted and freed).
 *
 * Snapshots are DataLoaderMetricsProto messages packed into bytes, the same
 * bytes the monitor socket sends, so in-process and remote readers share one
 * format. The pipeline keeps a pointer to the configuration, which must
 * outlive it.
 */
#ifndef LC_PIPELINE_PIPELINE_H
#define LC_PIPELINE_PIPELINE_H

#include "core/command.h"
#include "core/error.h"
#include "core/metric_windows.h"
#include "pipeline/config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/shared.h"

#include "training_metrics.pb-c.h"

typedef struct lc_pipeline lc_pipeline;

/* Validate-free construction from a loaded config: resolves rank and world
 * size (config, else RANK or LOCAL_RANK and WORLD_SIZE from the
 * environment), creates queues and stages. No thread runs yet. */
int lc_pipeline_new(const lc_config *cfg, lc_pipeline **out, lc_error *err);
/* Stops (if running) and frees. NULL is fine. */
void lc_pipeline_free(lc_pipeline *p);

int lc_pipeline_start(lc_pipeline *p, lc_error *err);
/* Request stop, close every queue, join every thread. Idempotent. */
void lc_pipeline_stop(lc_pipeline *p);
/* Wait until every stage finished (input exhausted) or the pipeline was
 * stopped, at most timeout seconds (< 0: forever). True when it ended. */
bool lc_pipeline_wait(lc_pipeline *p, double timeout_seconds);
/* Have fn(ctx) called once, from the metrics thread, when the pipeline
 * finishes by itself (every stage ran out of input); not on stop or
 * failure. It is called within moments of the last stage ending, not at
 * the next metrics interval. Set before start. fn must not call back into
 * the pipeline's control functions (stop, free). */
typedef void (*lc_pipeline_end_fn)(void *ctx);
void lc_pipeline_on_end(lc_pipeline *p, lc_pipeline_end_fn fn, void *ctx);
Lcmon__PipelineState lc_pipeline_state(lc_pipeline *p);

size_t lc_pipeline_stage_count(const lc_pipeline *p);
const char *lc_pipeline_stage_name(const lc_pipeline *p, size_t i);
const char *lc_pipeline_stage_type(const lc_pipeline *p, size_t i);
uint32_t lc_pipeline_rank(const lc_pipeline *p);
uint32_t lc_pipeline_world_size(const lc_pipeline *p);
/* The last stage's output queue, for a caller that consumes it itself
 * (tests, embedding). Call before start; the drain thread is then not
 * started. NULL when the last stage has no output or after start. */
struct lc_queue *lc_pipeline_take_output(lc_pipeline *p);
/* Items the drain thread consumed from the last stage (0 without drain). */
uint64_t lc_pipeline_drained(lc_pipeline *p);

/* Flush every stage's metrics now (the metrics thread does this at the
 * configured interval; tests call it to avoid waiting). */
void lc_pipeline_flush_metrics(lc_pipeline *p);
/* The snapshot published last (after each metrics interval, and at once
 * after a start, a stop, a command and the end): the last second,
 * or everything since start. A reference to an immutable
 * Lcmon__DataLoaderMetricsProto (lc_shared_get) that every reader shares;
 * drop it with lc_shared_unref. */
lc_shared *lc_pipeline_snapshot(lc_pipeline *p, bool all_time);
/* The same of any window (core/metric_windows.h): the longer ones are built
 * when asked, once a second at most while nothing else changes. */
lc_shared *lc_pipeline_window_snapshot(lc_pipeline *p, lc_window w);
/* A message built now, the caller's own (tests, and what publishing
 * builds); free with lcmon__data_loader_metrics_proto__free_unpacked. */
Lcmon__DataLoaderMetricsProto *lc_pipeline_metrics(lc_pipeline *p, bool all_time);
Lcmon__DataLoaderMetricsProto *lc_pipeline_window_metrics(lc_pipeline *p, lc_window w);

/* What a restart carries from a stopped pipeline to the next one, built
 * from the same configuration or a reloaded one (each stage's carry_out, to
 * the stage of the same name and type). */
typedef struct lc_pipeline_carry lc_pipeline_carry;
/* NULL when no stage carries anything. */
lc_pipeline_carry *lc_pipeline_carry_out(lc_pipeline *p);
/* Give a new pipeline, before its start, what the old one carried; each
 * stage that takes it or cannot is logged. c may be NULL. */
void lc_pipeline_carry_in(lc_pipeline *p, const lc_pipeline_carry *c);
void lc_pipeline_carry_free(lc_pipeline_carry *c);

/* Run a command (core/command.h) on the stage req names, or on every stage
 * that has it: pause, resume (every stage's) and the classes' own rows
 * (pipeline/commands.h). Fills res (one reply a stage that ran it) and
 * returns res->rc: 0, or a negative code with res->error saying why. */
int lc_pipeline_command(lc_pipeline *p, const lc_command_request *req, lc_command_result *res);

#endif
