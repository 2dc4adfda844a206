/*
 * details: what the table's DETAILS column says on a row, as segments that
 * shrink to fit. A segment has a full form and a brief one ("" drops it on
 * a narrow row); they come most important first. A stage row says its
 * warning, its bad and dropped counts when their columns do not fit, what
 * it talks to, then the metrics its class lists for the screen (the
 * hello's MetricDisplay, in its order), each made into segments by the
 * renderer of its display kind, from a table (details.c): a new kind is a
 * row there and its function. A queue row says how full it is.
 *
 * Not a public interface: the table (table.c) draws with it. UI thread
 * only.
 */
#ifndef LC_TUI_DETAILS_H
#define LC_TUI_DETAILS_H

#include "tui/view.h"
#include "tui/widgets.h"

#include <stdbool.h>

typedef struct tui_seg {
    char text[160]; /* the full form */
    char brief[80]; /* the short form ("" drops the segment when short) */
    tui_elem e;
    int bar; /* > 0: a bar of this many cells before the text (full form only) */
    double frac;
    tui_bar_kind kind;
} tui_seg;

typedef struct tui_segs {
    tui_seg v[8];
    int n;
} tui_segs;

/* Add a segment (brief NULL: the full form); NULL when there are 8. */
tui_seg *tui_segs_add(tui_segs *ss, tui_elem e, const char *text, const char *brief);
/* Draw them in width columns at (y, x): shortened from the last to the
 * first, then dropped from the end, until they fit; the last one left is
 * cut. */
void tui_segs_draw(WINDOW *w, int y, int x, int width, const tui_segs *ss);

/* A stage row's details: l is the last second's view of the stage, a the
 * all-time one (NULL when it has none); bad_in_columns: the BAD and DROP
 * columns show its counts. Rates, shares and statistics are over the
 * window the screen shows (tui_view_rate_stage). */
void tui_details_stage(const tui_view *s, tui_segs *ss, const Lcmon__StageMetricProto *l,
                       const Lcmon__StageMetricProto *a, bool bad_in_columns);
/* The metrics a stage describes for the row `on` (NULL: the stage's own
 * row; a load metric's name: that pool's row), in its order; at is the
 * all-time view of the stage. */
void tui_details_described(const tui_view *s, tui_segs *ss, const Lcmon__StageMetricProto *l,
                           const Lcmon__StageMetricProto *at, const char *on);
/* One metric as its stage describes it, by the renderer of its display
 * kind: nothing when the metric is absent (a gauge, a text) or hidden at 0,
 * or the kind has no renderer; an absent count is 0. */
void tui_details_metric(const tui_view *s, tui_segs *ss, const Lcmon__MetricDisplay *e,
                        const Lcmon__StageMetricProto *l, const Lcmon__StageMetricProto *at);
/* The statistics a stage measures (r: over the window shown), each as
 * "chunk_weight 1.2 (0.5 to 3.1)": the mean, the minimum and maximum
 * (brief: the mean). Every stage's, with no description needed. */
void tui_details_statistics(tui_segs *ss, const Lcmon__StageMetricProto *r);
/* Whether display kind `as` (MetricDisplay.As) has a renderer. */
bool tui_details_renders(int as);
/* A queue row's details: "11/16 queued" (now, q), its mean and peak over
 * the window shown (qr), and its drops when the DROP column does not show
 * them (qa: all time, may be NULL). */
void tui_details_queue(tui_segs *ss, const Lcmon__QueueMetricProto *q,
                       const Lcmon__QueueMetricProto *qr, const Lcmon__QueueMetricProto *qa,
                       bool drop_in_column);

#endif
