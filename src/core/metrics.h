/*
 * metrics: what a stage reports at each metrics flush, as plain C data.
 *
 * Stages fill an lc_stage_metrics in their flush_metrics operation; the
 * orchestrator folds successive flushes together (lc_stage_metrics_merge) into
 * a last-second and an all-time view and turns those into the protobuf
 * DataLoaderMetricsProto that every reader sees. Keeping the hot aggregation
 * in fixed-size C structs avoids allocating protobuf messages ten times a
 * second; the conversion happens once per published snapshot.
 *
 * Merge rules by kind: load and counts add up; gauges, strings and states
 * take the newer value; queue counters add up and fullness samples merge as
 * statistics; statistics merge.
 */
#ifndef LC_CORE_METRICS_H
#define LC_CORE_METRICS_H

#include "core/stats.h"

#include <stdbool.h>
#include <stdint.h>

struct lc_queue;

#define LC_METRIC_NAME_MAX 48
#define LC_METRIC_TEXT_MAX 256
#define LC_METRICS_MAX_LOAD 4
#define LC_METRICS_MAX_QUEUE 4
#define LC_METRICS_MAX_COUNT 32
#define LC_METRICS_MAX_GAUGE 16
#define LC_METRICS_MAX_STAT 8

typedef struct lc_metric_load {
    char name[LC_METRIC_NAME_MAX];
    double busy_seconds;
    double total_seconds;
    uint32_t threads;
} lc_metric_load;

typedef struct lc_metric_queue {
    char name[LC_METRIC_NAME_MAX];
    char item_type[LC_METRIC_NAME_MAX];
    char item_unit[LC_METRIC_NAME_MAX]; /* plural, for people */
    uint64_t put, get, drop;
    lc_stats fullness;
    uint64_t capacity;
} lc_metric_queue;

/* What a count counts, so that readers (the screen's BAD column, the status
 * line) need not guess from its name: work done, or bad input refused (a
 * record, chunk, file, row group or game). The values are the proto's
 * CountKind. */
typedef enum lc_count_kind { LC_COUNT_WORK = 0, LC_COUNT_BAD_INPUT = 1 } lc_count_kind;

typedef struct lc_metric_count {
    char name[LC_METRIC_NAME_MAX];
    uint64_t count;
    lc_count_kind kind;
} lc_metric_count;

typedef struct lc_metric_gauge {
    char name[LC_METRIC_NAME_MAX];
    int64_t value;
    int64_t capacity;
    bool has_capacity;
} lc_metric_gauge;

typedef struct lc_metric_stat {
    char name[LC_METRIC_NAME_MAX];
    lc_stats stats;
} lc_metric_stat;

typedef struct lc_stage_metrics {
    char name[LC_METRIC_NAME_MAX];
    char type[LC_METRIC_NAME_MAX];
    int state; /* Lcmon__StageState value */
    int n_load, n_queue, n_count, n_gauge, n_stat;
    lc_metric_load load[LC_METRICS_MAX_LOAD];
    lc_metric_queue queue[LC_METRICS_MAX_QUEUE];
    lc_metric_count count[LC_METRICS_MAX_COUNT];
    lc_metric_gauge gauge[LC_METRICS_MAX_GAUGE];
    lc_metric_stat stat[LC_METRICS_MAX_STAT];
    uint64_t dropped;
    uint64_t skipped_files;
    uint64_t items_out;
    bool has_anchor;
    uint64_t chunks_since_anchor;
    char anchor[LC_METRIC_TEXT_MAX];
    char last_chunk_key[LC_METRIC_TEXT_MAX];
    char count_from[LC_METRIC_TEXT_MAX]; /* the key chunks_since_anchor counts from */
    char detail[LC_METRIC_TEXT_MAX]; /* what the stage talks to: a directory, a pipe */
    /* A problem the stage is in now, for people (its warning state): set at
     * each flush while it lasts; a merge keeps the newest, so it clears
     * when the stage stops setting it. */
    char warning[LC_METRIC_TEXT_MAX];
} lc_stage_metrics;

void lc_stage_metrics_clear(lc_stage_metrics *m);
void lc_metrics_add_load(lc_stage_metrics *m, const char *name, double busy, double total,
                         uint32_t threads);
/* Reads and resets the queue's counters, sampling its fullness. */
void lc_metrics_add_queue(lc_stage_metrics *m, const char *name, struct lc_queue *q);
/* Adds n to the count of that name (creating it at 0). */
void lc_metrics_add_count(lc_stage_metrics *m, const char *name, uint64_t n);
/* A count of bad input (LC_COUNT_BAD_INPUT). */
void lc_metrics_add_bad(lc_stage_metrics *m, const char *name, uint64_t n);
void lc_metrics_set_gauge(lc_stage_metrics *m, const char *name, int64_t value, int64_t capacity,
                          bool has_capacity);
void lc_metrics_add_stat(lc_stage_metrics *m, const char *name, const lc_stats *s);
void lc_stage_metrics_merge(lc_stage_metrics *dst, const lc_stage_metrics *src);

const lc_metric_count *lc_metrics_find_count(const lc_stage_metrics *m, const char *name);
const lc_metric_gauge *lc_metrics_find_gauge(const lc_stage_metrics *m, const char *name);

#endif
