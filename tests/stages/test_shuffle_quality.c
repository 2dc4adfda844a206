/*
 * The shuffle's quality in numbers (issue 38, item 4): frames numbered by
 * origin.seq go through shuffling_frame_sampler, driven through its class
 * table and queues as the pipeline drives it, with 1, 2 and 4 threads at
 * R 2048 and 8192. From where each frame came in and went out:
 *
 *   - the output is a permutation of the input (every frame once);
 *   - a frame's delay, counted in frames, is its position out less its
 *     position in, plus R: the arrivals at the stage from its own until the
 *     one that evicted it (the output lags the input by the R frames the
 *     reservoir holds), counted for frames that came in after the fill and
 *     left before the drain. The design comment says it is geometric with
 *     mean R: P(delay > k) = (1 - 1/R)^k, so its mean and spread are about R,
 *     P(delay > R) about e^-1 (0.368) and P(delay > 3R) about e^-3 (0.050);
 *   - the correlation between the order in and the order out within a
 *     window of R frames out (Pearson, the mean over the windows): low, as
 *     a delay independent of the position out gives 1 / sqrt(13) = 0.28 for
 *     a spread of R, where a sampler that passes frames on in order gives 1
 *     and one whose delays spread R / 10 gives 0.95.
 *
 * The tolerances (within(), below) hold at any thread count (each thread's
 * share of R sees about 1 / N of the arrivals) and fail on a sampler that
 * passes frames on in order (P(delay > R) 0, correlation 1) and on one
 * whose reservoir is a tenth of R (P(delay > 3R) e^-21, spread R / 10,
 * correlation 0.95).
 *
 * Run with sizes as arguments (test_shuffle_quality 512 2048 16384) it
 * prints the numbers for those sizes, with 1, 2 and 4 threads, and checks
 * them too (the table of docs/performance.md).
 */
#include "check.h"
#include "testutil.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/thread.h"
#include "format/lc0/frame.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Frames a run: this many reservoirs' worth, after the fill. */
#define PASSES 32
#define UNSEEN UINT32_MAX

typedef struct feeder {
    lc_queue *in;
    uint32_t total;
} feeder;

/* Frame i (from 0) carries origin.seq i + 1. */
static void *feed(void *arg)
{
    feeder *fd = arg;
    lc_frame f;
    memset(&f, 0, sizeof f);
    f.version = 6;
    f.input_format = 1;
    for (uint32_t i = 0; i < fd->total; i++) {
        f.origin.seq = (uint64_t)i + 1;
        if (lc_standalone_put_frame(fd->in, &f) != 0)
            break;
    }
    lc_queue_close(fd->in);
    return NULL;
}

/* Run `total` frames through a sampler of R frames and `threads` threads:
 * out_of_in[i] is the position out of the frame that came in at i (UNSEEN
 * if it never left), in_of_out[o] the position in of the frame that left at
 * o. False (and the checks say why) if a frame was not one of the input's,
 * came out twice, or the output stopped short. */
static bool shuffle_run(uint32_t R, unsigned threads, uint32_t total, uint32_t *out_of_in,
                        uint32_t *in_of_out)
{
    lc_queue *in = lc_queue_new("in", &lc_item_frame, 256, LC_OVERFLOW_BLOCK);
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    char yaml[96];
    snprintf(yaml, sizeof yaml, "{reservoir_size: %u, threads: %u}\n", R, threads);
    CHECK_OK(lc_standalone_new(lc_stage_class_find("shuffling_frame_sampler"), "sampler", yaml, in,
                               1024, NULL, &s, &err));
    if (!s) {
        fprintf(stderr, "%s\n", err.msg);
        lc_queue_free(in);
        return false;
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    for (uint32_t i = 0; i < total; i++)
        out_of_in[i] = UNSEEN;
    feeder fd = {.in = in, .total = total};
    lc_thread t;
    lc_thread_start(&t, "test-feeder", feed, &fd);
    uint32_t got = 0, strays = 0, twice = 0;
    uint64_t wait_ns = (uint64_t)(30e9 * tu_slow());
    lc_frame out;
    while (lc_standalone_get_frame(s->output, &out, lc_now_ns() + wait_ns) == 0) {
        uint64_t seq = out.origin.seq;
        if (seq < 1 || seq > total || got >= total)
            strays++;
        else if (out_of_in[seq - 1] != UNSEEN)
            twice++;
        else {
            out_of_in[seq - 1] = got;
            in_of_out[got++] = (uint32_t)(seq - 1);
        }
        lc_frame_fini(&out);
    }
    lc_thread_join(&t);
    CHECK_EQ_INT(strays, 0);
    CHECK_EQ_INT(twice, 0);
    CHECK_EQ_INT(got, total);
    lc_standalone_free(s);
    lc_queue_free(in);
    return strays == 0 && twice == 0 && got == total;
}

typedef struct quality {
    double mean, sd, p_r, p_3r; /* of the delay, in frames; mean and sd over R */
    double corr;                /* in order against out order, within R frames out */
    uint32_t counted;
} quality;

static quality measure(uint32_t R, uint32_t total, const uint32_t *out_of_in,
                       const uint32_t *in_of_out)
{
    quality q = {0};
    double sum = 0, sum2 = 0;
    uint32_t over_r = 0, over_3r = 0;
    for (uint32_t i = R; i < total; i++) {
        if (out_of_in[i] >= total - R)
            continue; /* left in the drain */
        double d = (double)out_of_in[i] + R - i;
        sum += d;
        sum2 += d * d;
        over_r += d > R;
        over_3r += d > 3.0 * R;
        q.counted++;
    }
    double n = q.counted ? q.counted : 1;
    q.mean = sum / n / R;
    q.sd = sqrt(fmax(0, sum2 / n - (sum / n) * (sum / n))) / R;
    q.p_r = over_r / n;
    q.p_3r = over_3r / n;
    /* Windows of R frames out, between the fill's and the drain's. */
    double corr = 0;
    uint32_t windows = 0;
    for (uint32_t o = R; o + 2 * R <= total; o += R) {
        double so = 0, si = 0, soo = 0, sii = 0, soi = 0;
        for (uint32_t k = 0; k < R; k++) {
            double x = k, y = in_of_out[o + k];
            so += x, si += y, soo += x * x, sii += y * y, soi += x * y;
        }
        double cov = soi / R - so / R * si / R;
        double vo = soo / R - so / R * so / R, vi = sii / R - si / R * si / R;
        corr += vi > 0 ? cov / sqrt(vo * vi) : 1; /* all in one order: as correlated as can be */
        windows++;
    }
    q.corr = windows ? corr / windows : 1;
    return q;
}

/* The tolerances: a sampler that shuffles as the design comment says is
 * within them, and one that passes frames on in order or keeps a tenth of R
 * is not. One thread: the delay is geometric whatever the timing, and over
 * 32 R frames the sampling error is about 0.002 on each share. Several: how
 * the workers take turns at the input is the scheduler's (on a loaded
 * machine one may stall for a while, and the frames of its share wait
 * longer, the others' less), so the bounds are wider, still far from those
 * samplers' 0 (P(delay > R) and P(delay > 3R), in order), 0.1 (the spread,
 * a tenth) and 0.95 to 1 (the correlation). */
static bool within(const quality *q, unsigned threads)
{
    bool one = threads == 1;
    return q->mean > 0.9 && q->mean < 1.1 && q->sd > (one ? 0.9 : 0.7) &&
           q->sd < (one ? 1.1 : 2.0) && fabs(q->p_r - exp(-1)) < (one ? 0.02 : 0.08) &&
           fabs(q->p_3r - exp(-3)) < (one ? 0.01 : 0.025) && q->corr < 0.4;
}

/* One size and thread count: every frame once, and the delay's numbers
 * within the tolerances. With several threads a run outside them is run
 * again, up to 3 times in all (the scheduler's turns); a sampler that does
 * not shuffle is outside them every time. */
static void check_size(uint32_t R, unsigned threads)
{
    uint32_t total = (PASSES + 1) * R;
    uint32_t *out_of_in = lc_xcalloc(total, sizeof *out_of_in);
    uint32_t *in_of_out = lc_xcalloc(total, sizeof *in_of_out);
    for (int attempt = 1; attempt <= (threads > 1 ? 3 : 1); attempt++) {
        if (!shuffle_run(R, threads, total, out_of_in, in_of_out))
            break;
        quality q = measure(R, total, out_of_in, in_of_out);
        printf("R %6u threads %u: mean %.3f R, sd %.3f R, P(delay > R) %.3f, P(delay > 3R) %.4f, "
               "correlation %.3f (%u frames counted)\n",
               R, threads, q.mean, q.sd, q.p_r, q.p_3r, q.corr, q.counted);
        fflush(stdout);
        if (within(&q, threads) || attempt == (threads > 1 ? 3 : 1)) {
            CHECK(within(&q, threads));
            break;
        }
    }
    free(out_of_in);
    free(in_of_out);
}

int main(int argc, char **argv)
{
    lc_log_set_stderr(getenv("LC_TEST_VERBOSE") != NULL);
    uint32_t sizes[16] = {2048, 8192};
    int n = 2;
    if (argc > 1) {
        n = 0;
        for (int a = 1; a < argc && n < 16; a++) {
            long r = strtol(argv[a], NULL, 10);
            if (r < 256 || r > 1000000) {
                fprintf(stderr, "test_shuffle_quality: reservoir size %s: give 256 to 1000000\n",
                        argv[a]);
                return 2;
            }
            sizes[n++] = (uint32_t)r;
        }
    }
    for (int i = 0; i < n; i++)
        for (unsigned threads = 1; threads <= 4; threads *= 2)
            check_size(sizes[i], threads);
    return check_finish();
}
