/*
 * status: the one-line summary of a metrics snapshot that headless lcmon
 * prints every second, and the closing summary.
 */
#ifndef LC_PIPELINE_STATUS_H
#define LC_PIPELINE_STATUS_H

#include <stddef.h>

#include "training_metrics.pb-c.h"

/* "files 12/s [q 3/256] | sources 12/s [q 0/64] load 0.31 | ..." */
void lc_status_line(const Lcmon__DataLoaderMetricsProto *last_second, char *buf, size_t len);
const char *lc_pipeline_state_name(Lcmon__PipelineState s);
const char *lc_stage_state_name(Lcmon__StageState s);

#endif
