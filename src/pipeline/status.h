/*
 * status: the one-line summary of a metrics snapshot that headless lcmon
 * prints every second, and the closing summary.
 */
#ifndef LC_PIPELINE_STATUS_H
#define LC_PIPELINE_STATUS_H

#include <stddef.h>

#include "training_metrics.pb-c.h"

/* "[running] 71.8k pos/s | queues files 0/256 ... | pool: chunks_in_window
 * 43/50000, anchor '-' +43 | sampler: reservoir_size 20000/20000 | reader
 * connected" */
void lc_status_line(const Lcmon__DataLoaderMetricsProto *last_second, char *buf, size_t len);
/* The short form headless runs print, at most `width` columns (120): state,
 * rate, full queues, the pool's window and anchor count, the reservoir, the
 * reader, bad input and the first stage warning. */
void lc_status_line_compact(const Lcmon__DataLoaderMetricsProto *last_second, size_t width,
                            char *buf, size_t len);
/* Positions per second over the snapshot's window (-1 when no stage packs
 * or writes positions). */
double lc_status_positions_per_second(const Lcmon__DataLoaderMetricsProto *m);
const char *lc_pipeline_state_name(Lcmon__PipelineState s);
const char *lc_stage_state_name(Lcmon__StageState s);

#endif
