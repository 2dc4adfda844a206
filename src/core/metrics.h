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

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lc_queue;

/* Room for a queue's name: a stage's (40) '.' an output's (20). */
#define LC_METRIC_NAME_MAX 64
#define LC_METRIC_TEXT_MAX 256
#define LC_METRICS_MAX_LOAD 4
#define LC_METRICS_MAX_QUEUE 8
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

/* What a metric row is, and so how a flush writes it and a merge folds it:
 * a count of work done, of bad input refused (a record, chunk, file, row
 * group or game), or of good items dropped (a chunk that left the window
 * before it was read, a batch no reader took); a gauge (a level); a text;
 * statistics. The first three are the proto's CountKind, listed as
 * X(C name, the proto's name) in its order.
 *
 * Each enum here that mirrors one of the proto's is made from such a list,
 * in the proto's order: tests/python/test_enums.py checks every list
 * against the .proto files and python/lcmon/wire.py, name and number (through
 * tests/core/print_enums.c, which prints the lists). */
#define LC_METRIC_COUNT_KINDS(X) X(COUNT, COUNT_WORK) X(BAD, COUNT_BAD_INPUT) X(DROP, COUNT_DROP)
#define LC_ENUM_KIND_(c, proto) LC_METRIC_##c,
typedef enum lc_metric_kind {
    LC_METRIC_COUNT_KINDS(LC_ENUM_KIND_) /* COUNT = 0, BAD, DROP */
    LC_METRIC_GAUGE,
    LC_METRIC_TEXT,
    LC_METRIC_STAT,
    LC_METRIC_KIND_COUNT_ /* the number of kinds */
} lc_metric_kind;
#undef LC_ENUM_KIND_

/* One row's value in a flush (lc_stage_metrics.slot[row]). A count adds
 * up; a gauge's `value` is the newest and `stats` every value it was set
 * to (once a flush), so that a window of time has its minimum, maximum
 * and mean besides; a statistic merges into `stats`; a text is texts[text
 * - 1]. `set`: the row was written (a row left unset is not in the
 * snapshot). */
typedef struct lc_metric_slot {
    uint64_t count;
    int64_t value, capacity;
    lc_stats stats;
    bool set, has_capacity;
    uint8_t text;
} lc_metric_slot;

/* How a screen shows a metric in its stage's DETAILS column; the proto's
 * MetricDisplay.As (proto/monitor.proto says what each draws): LC_SHOW_NONE,
 * LC_SHOW_TOTAL, ... */
#define LC_SHOW_AS_LIST(X)                                                                         \
    X(NONE)                                                                                        \
    X(TOTAL) X(RATE) X(FILL) X(VALUE) X(FLAG) X(TEXT) X(SHARE_OF_TIME) X(PERCENT) X(SINCE_ANCHOR)
#define LC_ENUM_SHOW_(n) LC_SHOW_##n,
typedef enum lc_show_as {
    LC_SHOW_AS_LIST(LC_ENUM_SHOW_) LC_SHOW_AS_COUNT_ /* the number of displays */
} lc_show_as;
#undef LC_ENUM_SHOW_

enum {
    LC_SHOW_DIM = 1u << 0,     /* secondary: drawn dim */
    LC_SHOW_WARN = 1u << 1,    /* drawn as a warning */
    LC_SHOW_NONZERO = 1u << 2, /* not shown while 0 */
    LC_SHOW_ETA = 1u << 3      /* a FILL that says how long until full */
};

/* What a metric means to the loader as a whole (proto/training_metrics.proto,
 * MetricRole): the status line, the screen's header and ctl find the
 * numbers they show by role, never by name. LC_ROLE_NONE, LC_ROLE_POSITIONS,
 * ... in the proto's order. */
#define LC_METRIC_ROLES(X)                                                                         \
    X(ROLE_NONE)                                                                                   \
    X(ROLE_POSITIONS)        /* positions made: the headline rate */                               \
    X(ROLE_ROWS)             /* rows written to the trainer */                                     \
    X(ROLE_READER_CONNECTED) /* 1 while the trainer's reader is connected */                       \
    X(ROLE_READER_WAITING)   /* 1 while the writer waits for a reader */                           \
    X(ROLE_WINDOW_FILL)      /* the chunk window's fill */                                         \
    X(ROLE_ANCHOR_COUNT)     /* chunks counted since the anchor */                                 \
    X(ROLE_ANCHOR)           /* the anchor's key */                                                \
    X(ROLE_ANCHOR_FROM)      /* the key the count runs from */                                     \
    X(ROLE_NEWEST_KEY)       /* the newest chunk's key */                                          \
    X(ROLE_RESERVOIR_FILL)   /* the shuffle reservoir's fill */                                    \
    X(ROLE_POSITION_AGE)     /* median age of the positions written, ms */                         \
    X(ROLE_POSITION_AGE_MAX) /* largest age of the positions written, ms */
/* A list's entry as its enumerator: X(ROLE_ANCHOR) is LC_ROLE_ANCHOR. */
#define LC_ENUM_(n) LC_##n,
typedef enum lc_metric_role {
    LC_METRIC_ROLES(LC_ENUM_) LC_METRIC_ROLE_COUNT_ /* the number of roles */
} lc_metric_role;

/* One metric of a stage, as its class lists it (a table ended by a NULL
 * name, its rows numbered from 0 by the class, usually with an enum and
 * designated initializers): its unit, plural ("files", "chunks", "bytes",
 * "ms"), and how a screen shows it, in table order. `brief` is the label
 * on a narrow row (NULL: the label; "": not shown there); `of` is a
 * PERCENT's other count; `row` names the load row it shows on (NULL: the
 * stage's own row). `kind` says what it is (a count by default); `at`
 * where its value lives: LC_METRIC_AT(struct, field), a 64-bit atomic
 * of the stage's private state that stage.c's flush reads (a count:
 * exchanged with 0; a gauge: loaded), or 0 when the class's flush_metrics
 * writes the row (lc_metric_add and the like, by its row number). A test
 * runs every stage type and checks that each row was written. */
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
    lc_metric_kind kind; /* .kind = ...; a count by default */
    size_t at;           /* LC_METRIC_AT(...), or 0: written by flush_metrics */
} lc_metric_info;

/* `.at` of a row whose value is the atomic_uint_fast64_t (or, for a
 * gauge, atomic_int_fast64_t) field of the private struct st (a path:
 * store.hits works): its offset, plus one (0 is "none"). Any other type of
 * field does not compile. */
#define LC_METRIC_AT(st, field)                                                                    \
    .at = offsetof(st, field) + 1 +                                                                \
          0 * sizeof(char[_Generic(&((st *)0)->field, atomic_uint_fast64_t * : 1,                  \
                                   atomic_int_fast64_t * : 1)])

/* The entry of that name in a table ended by a NULL name, or NULL. For
 * tests and the hello's descriptions; flushes and snapshots go by row. */
const lc_metric_info *lc_metric_info_find(const lc_metric_info *table, const char *name);
/* The rows of a table ended by a NULL name. */
int lc_metric_info_rows(const lc_metric_info *table);

/* A stage's state as the snapshots carry it: StageState in
 * proto/training_metrics.proto, LC_STAGE_IDLE = 0, ...; FINISHED: it ran
 * out of input and closed its output. */
#define LC_STAGE_STATES(X)                                                                         \
    X(STAGE_IDLE) X(STAGE_RUNNING) X(STAGE_PAUSED) X(STAGE_FINISHED) X(STAGE_STOPPED)
typedef enum lc_stage_state_id {
    LC_STAGE_STATES(LC_ENUM_) LC_STAGE_STATE_COUNT_ /* the number of states */
} lc_stage_state_id;

/* The most rows a class may list, and texts a flush may hold. */
#define LC_METRICS_MAX_ROWS 48

typedef struct lc_stage_metrics {
    char name[LC_METRIC_NAME_MAX];
    char type[LC_METRIC_NAME_MAX];
    int state; /* an lc_stage_state_id */
    int n_load, n_queue;
    lc_metric_load load[LC_METRICS_MAX_LOAD];
    lc_metric_queue queue[LC_METRICS_MAX_QUEUE];
    /* The class's rows (its metrics table) and their values, by row. */
    const lc_metric_info *rows;
    int n_rows, n_text;
    lc_metric_slot slot[LC_METRICS_MAX_ROWS];
    char texts[LC_METRICS_MAX_TEXT][LC_METRIC_TEXT_MAX];
    uint64_t items_out;
    const char *item_unit; /* what items_out counts, plural (static; NULL: "items") */
    /* The items the pipeline took off this stage's output itself (the last
     * stage's, when nothing reads it); `drains` when it does. */
    uint64_t drained;
    bool drains;
    char detail[LC_METRIC_TEXT_MAX]; /* what the stage talks to: a directory, a pipe */
    /* A problem the stage is in now, for people (its warning state): set at
     * each flush while it lasts; a merge keeps the newest, so it clears
     * when the stage stops setting it. */
    char warning[LC_METRIC_TEXT_MAX];
} lc_stage_metrics;

void lc_stage_metrics_clear(lc_stage_metrics *m);
/* Clear m for a flush of a class with these rows (its metrics table). */
void lc_stage_metrics_begin(lc_stage_metrics *m, const lc_metric_info *rows, int n_rows);
void lc_metrics_add_load(lc_stage_metrics *m, const char *name, double busy, double total,
                         uint32_t threads);
/* Reads and resets the queue's counters, sampling its fullness. */
void lc_metrics_add_queue(lc_stage_metrics *m, const char *name, struct lc_queue *q);

/* A class's flush_metrics writes its rows that have no `at` by row number
 * (the row's kind must be the one the call writes; lc_fatal otherwise).
 * Adds n to a count (COUNT, BAD or DROP). */
void lc_metric_add(lc_stage_metrics *m, int row, uint64_t n);
/* Sets a gauge; with a capacity (its fill's whole). */
void lc_metric_gauge(lc_stage_metrics *m, int row, int64_t value);
void lc_metric_gauge_of(lc_stage_metrics *m, int row, int64_t value, int64_t capacity);
void lc_metric_stat(lc_stage_metrics *m, int row, const lc_stats *s);
/* Sets a text (cut to LC_METRIC_TEXT_MAX - 1 bytes), its control
 * characters and invalid UTF-8 escaped (lc_text_escape). */
void lc_metric_text(lc_stage_metrics *m, int row, const char *value);
/* The text of a TEXT row that was set ("" otherwise). */
const char *lc_metric_slot_text(const lc_stage_metrics *m, int row);

void lc_stage_metrics_merge(lc_stage_metrics *dst, const lc_stage_metrics *src);

/* The slot of the row of that name when it was set, else NULL: for tests,
 * which look a metric up by its name (the loader itself never does). */
const lc_metric_slot *lc_metrics_find(const lc_stage_metrics *m, const char *name);
/* The text of that name, or NULL (tests). */
const char *lc_metrics_find_text(const lc_stage_metrics *m, const char *name);

#endif
