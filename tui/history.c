/*
 * history: per-stage rings. See history.h.
 *
 * A handful of stages, so a flat array searched by name; a stage seen for
 * the first time takes the next slot (up to TUI_HISTORY_STAGES, after which
 * new names are not remembered and their sparklines stay empty).
 */
#include "tui/history.h"

#include "core/error.h"
#include "tui/derive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TUI_HISTORY_STAGES 64
#define FILL_SAMPLES 32
#define FILL_WINDOW 3.0 /* seconds of fill history a rate uses */

typedef struct stage_history {
    char name[64];
    double rate[TUI_HISTORY_SECONDS];
    size_t n, head; /* head: where the next sample goes */
    double fill_t[FILL_SAMPLES];
    long long fill_v[FILL_SAMPLES];
    size_t fill_n, fill_head;
} stage_history;

struct tui_history {
    stage_history stages[TUI_HISTORY_STAGES];
    size_t n;
};

tui_history *tui_history_new(void)
{
    return lc_xcalloc(1, sizeof(tui_history));
}

void tui_history_free(tui_history *h)
{
    free(h);
}

static stage_history *find(const tui_history *h, const char *name)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->stages[i].name, name) == 0)
            return (stage_history *)&h->stages[i];
    return NULL;
}

static stage_history *find_or_add(tui_history *h, const char *name)
{
    stage_history *s = find(h, name);
    if (s || h->n == TUI_HISTORY_STAGES)
        return s;
    s = &h->stages[h->n++];
    snprintf(s->name, sizeof s->name, "%s", name);
    return s;
}

static void push_rate(stage_history *s, double v)
{
    s->rate[s->head] = v;
    s->head = (s->head + 1) % TUI_HISTORY_SECONDS;
    if (s->n < TUI_HISTORY_SECONDS)
        s->n++;
}

void tui_history_sample(tui_history *h, const Lcmon__DataLoaderMetricsProto *last)
{
    bool seen[TUI_HISTORY_STAGES] = {false};
    for (size_t i = 0; last && i < last->n_stage_metrics; i++) {
        const Lcmon__StageMetricProto *st = last->stage_metrics[i];
        if (!st->name)
            continue;
        stage_history *s = find_or_add(h, st->name);
        if (!s)
            continue;
        push_rate(s, tui_per_second(last, tui_stage_items(st)));
        seen[s - h->stages] = true;
    }
    for (size_t i = 0; i < h->n; i++)
        if (!seen[i])
            push_rate(&h->stages[i], 0);
}

size_t tui_history_series(const tui_history *h, const char *stage, double *out, size_t max,
                          double *peak)
{
    *peak = 0;
    const stage_history *s = find(h, stage);
    if (!s)
        return 0;
    size_t n = s->n < max ? s->n : max;
    size_t start = (s->head + TUI_HISTORY_SECONDS - n) % TUI_HISTORY_SECONDS;
    for (size_t i = 0; i < n; i++) {
        out[i] = s->rate[(start + i) % TUI_HISTORY_SECONDS];
        if (out[i] > *peak)
            *peak = out[i];
    }
    return n;
}

void tui_history_fill(tui_history *h, const char *stage, long long value, double now)
{
    stage_history *s = find_or_add(h, stage);
    if (!s)
        return;
    if (s->fill_n) {
        size_t prev = (s->fill_head + FILL_SAMPLES - 1) % FILL_SAMPLES;
        if (value < s->fill_v[prev])
            s->fill_n = 0; /* it went down: a new pipeline; start over */
        else if (now - s->fill_t[prev] < 0.05)
            return;
    }
    s->fill_t[s->fill_head] = now;
    s->fill_v[s->fill_head] = value;
    s->fill_head = (s->fill_head + 1) % FILL_SAMPLES;
    if (s->fill_n < FILL_SAMPLES)
        s->fill_n++;
}

bool tui_history_fill_rate(const tui_history *h, const char *stage, double *rate)
{
    const stage_history *s = find(h, stage);
    if (!s || s->fill_n < 2)
        return false;
    size_t newest = (s->fill_head + FILL_SAMPLES - 1) % FILL_SAMPLES;
    /* The oldest sample within the window. */
    size_t oldest = newest;
    for (size_t k = 1; k < s->fill_n; k++) {
        size_t i = (newest + FILL_SAMPLES - k) % FILL_SAMPLES;
        if (s->fill_t[newest] - s->fill_t[i] > FILL_WINDOW)
            break;
        oldest = i;
    }
    double dt = s->fill_t[newest] - s->fill_t[oldest];
    if (dt < 0.3)
        return false;
    *rate = (double)(s->fill_v[newest] - s->fill_v[oldest]) / dt;
    return true;
}
