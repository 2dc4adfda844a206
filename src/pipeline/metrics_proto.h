/*
 * metrics_proto: C metric structs to protobuf messages, and lookups by name
 * in received messages (used by the screen, the status line and tests).
 */
#ifndef LC_PIPELINE_METRICS_PROTO_H
#define LC_PIPELINE_METRICS_PROTO_H

#include "core/metrics.h"

#include "training_metrics.pb-c.h"

/* A malloc'd message tree; free with lcmon__stage_metric_proto__free_unpacked. */
Lcmon__StageMetricProto *lc_stage_metrics_to_proto(const lc_stage_metrics *m);

const Lcmon__StageMetricProto *lc_proto_find_stage(const Lcmon__DataLoaderMetricsProto *m,
                                                   const char *name);
const Lcmon__CountMetricProto *lc_proto_find_count(const Lcmon__StageMetricProto *s,
                                                   const char *name);
const Lcmon__GaugeMetricProto *lc_proto_find_gauge(const Lcmon__StageMetricProto *s,
                                                   const char *name);
/* The count of that name, 0 when absent (s may be NULL). */
uint64_t lc_proto_count(const Lcmon__StageMetricProto *s, const char *name);

/* The unit of a stage's items (what its items_out counts), plural:
 * "chunks", "frames", "batches"; a sink counts what it delivers, so its
 * input's. "items" when the type is unknown. */
const char *lc_proto_stage_unit(const Lcmon__StageMetricProto *s);
/* The unit of an item type's name ("chunk" -> "chunks"). */
const char *lc_proto_item_unit(const char *item_type);

#endif
