/*
 * metrics_proto: C metric structs to protobuf messages. Reading them is
 * monitor/snapshot.h's.
 */
#ifndef LC_PIPELINE_METRICS_PROTO_H
#define LC_PIPELINE_METRICS_PROTO_H

#include "core/metrics.h"

#include "training_metrics.pb-c.h"

/* A malloc'd message tree; free with lcmon__stage_metric_proto__free_unpacked. */
Lcmon__StageMetricProto *lc_stage_metrics_to_proto(const lc_stage_metrics *m);

#endif
