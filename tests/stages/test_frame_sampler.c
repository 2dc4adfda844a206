/*
 * shuffling_frame_sampler: the reservoir fills first (nothing comes out),
 * then one frame leaves per frame in, chosen uniformly; when the input ends
 * the rest drains; every frame leaves exactly once; the fill gauge shows
 * progress; the compact frame stays within 2.5 KB.
 */
#include "check.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "format/lc0/frame.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define R 100
#define TOTAL 1000

static lc_frame tagged(int i)
{
    lc_frame f;
    memset(&f, 0, sizeof f);
    f.version = 6;
    f.input_format = 1;
    f.plies_left = (float)i;
    return f;
}

int main(void)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    CHECK(sizeof(lc_frame) <= 2560);
    lc_queue *in = lc_queue_new("in", &lc_item_frame, 64, LC_OVERFLOW_BLOCK);
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    char yaml[64];
    snprintf(yaml, sizeof yaml, "reservoir_size: %d\n", R);
    CHECK_OK(lc_standalone_new(lc_stage_class_find("shuffling_frame_sampler"), "sampler", yaml,
                               in, 4 * TOTAL, NULL, &s, &err));
    CHECK_OK(lc_standalone_start(s, NULL));
    for (int i = 0; i < R; i++) {
        lc_frame f = tagged(i);
        CHECK_OK(lc_queue_put(in, &f, NULL));
    }
    lc_stage_metrics m;
    double deadline = lc_now_seconds() + 10;
    const lc_metric_gauge *g = NULL;
    do {
        lc_sleep_seconds(0.01);
        lc_standalone_flush(s, &m);
        g = lc_metrics_find_gauge(&m, "reservoir_size");
    } while ((!g || g->value < R) && lc_now_seconds() < deadline);
    CHECK(g && g->value == R && g->has_capacity && g->capacity == R);
    lc_frame out;
    CHECK_EQ_INT(lc_queue_try_get(s->output, &out), -EAGAIN);

    int seen[TOTAL] = {0};
    int got = 0, in_order = 0, last = -1;
    for (int i = R; i < TOTAL; i++) {
        lc_frame f = tagged(i);
        CHECK_OK(lc_queue_put(in, &f, NULL));
    }
    lc_queue_close(in);
    while (lc_queue_get_until(s->output, &out, NULL, lc_now_ns() + 10000000000ull) == 0) {
        int tag = (int)out.plies_left;
        CHECK(tag >= 0 && tag < TOTAL);
        if (tag >= 0 && tag < TOTAL)
            seen[tag]++;
        in_order += tag == last + 1;
        last = tag;
        got++;
        lc_frame_fini(&out);
    }
    CHECK_EQ_INT(got, TOTAL);
    for (int i = 0; i < TOTAL; i++)
        CHECK_EQ_INT(seen[i], 1);
    CHECK(in_order < TOTAL / 10); /* shuffled, not passed through */
    lc_standalone_flush(s, &m);
    g = lc_metrics_find_gauge(&m, "reservoir_size");
    CHECK(g && g->value == 0);
    lc_standalone_free(s);
    lc_queue_free(in);
    return check_finish();
}
