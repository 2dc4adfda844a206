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
 * Merge rules by kind: load and counts add up; gauges, texts, strings and
 * states take the newer value (a gauge's values besides merge as
 * statistics); queue counters add up and fullness samples merge as
 * statistics; statistics merge. core/metric_windows.h keeps the flushes
 * over windows of time with these rules.
 *
 * Metrics describe themselves. A count says at the call that adds it what
 * it counts (work, bad input, good items dropped); a stage's class lists its
 * metrics in an lc_metric_info table with their units and how a screen shows
 * them, so that readers need neither name patterns nor per-stage code. The
 * generic struct below has no field of any one stage: what only one stage
 * has (the pool's anchor) is one of its gauges and texts.
 */
#ifndef LC_CORE_METRICS_H
#define LC_CORE_METRICS_H

#include "core/stats.h"

#include <stdbool.h>
#include <stdint.h>

struct lc_queue;

/* Room for a queue's name: a stage's (40) '.' an output's (20). */
#define LC_METRIC_NAME_MAX 64
#define LC_METRIC_TEXT_MAX 256
#define LC_METRICS_MAX_LOAD 4
#define LC_METRICS_MAX_QUEUE 8
#define LC_METRICS_MAX_COUNT 32
#define LC_METRICS_MAX_GAUGE 16
#define LC_METRICS_MAX_STAT 8
#define LC_METRICS_MAX_TEXT 4

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

/* What a count counts, so that readers (the screen's BAD and DROP columns,
 * the status line) need not guess from its name: work done, bad input
 * refused (a record, chunk, file, row group or game), or good items dropped
 * (a chunk that left the window before it was read, a batch no reader took).
 * The values are the proto's CountKind. */
typedef enum lc_count_kind {
    LC_COUNT_WORK = 0,
    LC_COUNT_BAD_INPUT = 1,
    LC_COUNT_DROP = 2
} lc_count_kind;

typedef struct lc_metric_count {
    char name[LC_METRIC_NAME_MAX];
    uint64_t count;
    lc_count_kind kind;
} lc_metric_count;

/* A level: `value` is the newest; `values` holds every value it was set to
 * (once a flush), so that a window of time has its minimum, maximum and
 * mean besides. */
typedef struct lc_metric_gauge {
    char name[LC_METRIC_NAME_MAX];
    int64_t value;
    int64_t capacity;
    bool has_capacity;
    lc_stats values;
} lc_metric_gauge;

typedef struct lc_metric_stat {
    char name[LC_METRIC_NAME_MAX];
    lc_stats stats;
} lc_metric_stat;

typedef struct lc_metric_text {
    char name[LC_METRIC_NAME_MAX];
    char value[LC_METRIC_TEXT_MAX];
} lc_metric_text;

/* How a screen shows a metric in its stage's DETAILS column; the values are
 * the proto's MetricDisplay.As (proto/monitor.proto says what each draws). */
typedef enum lc_show_as {
    LC_SHOW_NONE = 0,
    LC_SHOW_TOTAL,
    LC_SHOW_RATE,
    LC_SHOW_FILL,
    LC_SHOW_VALUE,
    LC_SHOW_FLAG,
    LC_SHOW_TEXT,
    LC_SHOW_SHARE_OF_TIME,
    LC_SHOW_PERCENT,
    LC_SHOW_SINCE_ANCHOR
} lc_show_as;

enum {
    LC_SHOW_DIM = 1u << 0,     /* secondary: drawn dim */
    LC_SHOW_WARN = 1u << 1,    /* drawn as a warning */
    LC_SHOW_NONZERO = 1u << 2, /* not shown while 0 */
    LC_SHOW_ETA = 1u << 3      /* a FILL that says how long until full */
};

/* What a metric means to the loader as a whole (proto/training_metrics.proto,
 * MetricRole, the same values): the status line, the screen's header and
 * ctl find the numbers they show by role, never by name. */
typedef enum lc_metric_role {
    LC_ROLE_NONE = 0,
    LC_ROLE_POSITIONS,        /* positions made: the headline rate */
    LC_ROLE_ROWS,             /* rows written to the trainer */
    LC_ROLE_READER_CONNECTED, /* 1 while the trainer's reader is connected */
    LC_ROLE_READER_WAITING,   /* 1 while the writer waits for a reader */
    LC_ROLE_WINDOW_FILL,      /* the chunk window's fill */
    LC_ROLE_ANCHOR_COUNT,     /* chunks counted since the anchor */
    LC_ROLE_ANCHOR,           /* the anchor's key */
    LC_ROLE_ANCHOR_FROM,      /* the key the count runs from */
    LC_ROLE_NEWEST_KEY,       /* the newest chunk's key */
    LC_ROLE_RESERVOIR_FILL,   /* the shuffle reservoir's fill */
    LC_ROLE_POSITION_AGE,     /* median age of the positions written, ms */
    LC_ROLE_POSITION_AGE_MAX  /* largest age of the positions written, ms */
} lc_metric_role;

/* One metric of a stage, as its class lists it (a table ended by a NULL
 * name): its unit, plural ("files", "chunks", "bytes", "ms"), and how a
 * screen shows it, in table order. `brief` is the label on a narrow row
 * (NULL: the label; "": not shown there); `of` is a PERCENT's other count;
 * `row` names the load row it shows on (NULL: the stage's own row). */
typedef struct lc_metric_info {
    const char *name;
    const char *unit;
    lc_show_as show;
    unsigned flags;
    const char *label;
    const char *brief;
    const char *of;
    const char *row;
    lc_metric_role role; /* what it means to the loader as a whole (.role = ...) */
} lc_metric_info;

/* The entry of that name in a table ended by a NULL name, or NULL. */
const lc_metric_info *lc_metric_info_find(const lc_metric_info *table, const char *name);

/* A stage's state as the snapshots carry it: the numbers of StageState in
 * proto/training_metrics.proto (pipeline/metrics_proto.c checks they
 * agree). */
typedef enum lc_stage_state_id {
    LC_STAGE_IDLE = 0,
    LC_STAGE_RUNNING = 1,
    LC_STAGE_PAUSED = 2,
    LC_STAGE_FINISHED = 3, /* ran out of input and closed its output */
    LC_STAGE_STOPPED = 4,
} lc_stage_state_id;

typedef struct lc_stage_metrics {
    char name[LC_METRIC_NAME_MAX];
    char type[LC_METRIC_NAME_MAX];
    int state; /* an lc_stage_state_id */
    int n_load, n_queue, n_count, n_gauge, n_stat, n_text;
    lc_metric_load load[LC_METRICS_MAX_LOAD];
    lc_metric_queue queue[LC_METRICS_MAX_QUEUE];
    lc_metric_count count[LC_METRICS_MAX_COUNT];
    lc_metric_gauge gauge[LC_METRICS_MAX_GAUGE];
    lc_metric_stat stat[LC_METRICS_MAX_STAT];
    lc_metric_text text[LC_METRICS_MAX_TEXT];
    uint64_t items_out;
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
/* A count of good items dropped (LC_COUNT_DROP). */
void lc_metrics_add_drop(lc_stage_metrics *m, const char *name, uint64_t n);
void lc_metrics_set_gauge(lc_stage_metrics *m, const char *name, int64_t value, int64_t capacity,
                          bool has_capacity);
void lc_metrics_add_stat(lc_stage_metrics *m, const char *name, const lc_stats *s);
/* Sets the text of that name (cut to LC_METRIC_TEXT_MAX - 1 bytes), its
 * control characters and invalid UTF-8 escaped (lc_text_escape). */
void lc_metrics_set_text(lc_stage_metrics *m, const char *name, const char *value);
void lc_stage_metrics_merge(lc_stage_metrics *dst, const lc_stage_metrics *src);

const lc_metric_count *lc_metrics_find_count(const lc_stage_metrics *m, const char *name);
const lc_metric_gauge *lc_metrics_find_gauge(const lc_stage_metrics *m, const char *name);
const lc_metric_stat *lc_metrics_find_stat(const lc_stage_metrics *m, const char *name);
/* The text of that name, or NULL. */
const char *lc_metrics_find_text(const lc_stage_metrics *m, const char *name);

#endif
