/*
 * fifo_writer_demo: writes N deterministic batches through the real
 * fifo_writer stage, for the Python reader's tests and for measuring the
 * pipe's throughput.
 *
 *   fifo_writer_demo PATH N [--regular] [--batch-size B] [--last-rows R]
 *                    [--relayout K] [--big] [--timeout S]
 *
 * The small layout (default, B = 64) has "x" float32 [B,3] and "y" int64 [B]
 * with, for batch seq and row r: x[r][c] = seq*1000 + r*3 + c and
 * y[r] = seq*1000000 + r. From batch K on (--relayout K) a second layout is
 * used: batch size B+8 and a third tensor "z" bool [B+8,2] with
 * z[r][c] = (seq + r + c) % 2. The last batch carries the end-of-stream flag
 * and R valid rows (default: full). --big uses an lc0-sized layout
 * ("planes" float32 [B,112,8,8], "probs" float32 [B,1858], "wdl" float32
 * [B,3], B = 1024 unless given) whose only set values are planes[0] = seq.
 *
 * The stage writes to the named pipe PATH (created if missing), or with
 * --regular to the regular file PATH. The input is closed after the last
 * batch, so the stream ends with DONE, and the program exits (status 0) once
 * the stage has finished: when a reader has read everything. Status 1 means
 * the stage did not start; SIGALRM ends the process after --timeout seconds
 * (default 60) whatever happens.
 */
#include "core/clock.h"
#include "core/log.h"
#include "format/batch.h"
#include "standalone.h"
#include "stages/items.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const lc_stage_class lc_fifo_writer_class;

static void fill_small(lc_batch *b, uint64_t seq)
{
    const lc_batch_layout *l = b->layout;
    float *x = lc_batch_tensor(b, 0);
    int64_t *y = lc_batch_tensor(b, 1);
    for (uint64_t r = 0; r < l->batch_size; r++) {
        for (int c = 0; c < 3; c++)
            x[r * 3 + (uint64_t)c] = (float)(seq * 1000 + r * 3 + (uint64_t)c);
        y[r] = (int64_t)(seq * 1000000 + r);
    }
    if (l->n_tensors > 2) {
        uint8_t *z = lc_batch_tensor(b, 2);
        for (uint64_t r = 0; r < l->batch_size; r++)
            for (int c = 0; c < 2; c++)
                z[r * 2 + (uint64_t)c] = (uint8_t)((seq + r + (uint64_t)c) % 2);
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: fifo_writer_demo PATH N [--regular] [--batch-size B] "
                    "[--last-rows R] [--relayout K] [--big] [--timeout S]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        usage();
    const char *path = argv[1];
    uint64_t n = strtoull(argv[2], NULL, 10);
    bool regular = false, big = false;
    uint64_t batch_size = 0, last_rows = 0, relayout = UINT64_MAX;
    unsigned timeout = 60;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--regular") == 0)
            regular = true;
        else if (strcmp(argv[i], "--big") == 0)
            big = true;
        else if (strcmp(argv[i], "--batch-size") == 0 && i + 1 < argc)
            batch_size = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--last-rows") == 0 && i + 1 < argc)
            last_rows = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--relayout") == 0 && i + 1 < argc)
            relayout = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
            timeout = (unsigned)strtoul(argv[++i], NULL, 10);
        else
            usage();
    }
    alarm(timeout);
    if (!batch_size)
        batch_size = big ? 1024 : 64;

    lc_batch_layout layouts[2];
    if (big) {
        lc_batch_layout_init(&layouts[0], batch_size);
        lc_batch_layout_add(&layouts[0], "planes", LC_DTYPE_F32, 3, (const uint64_t[]){112, 8, 8});
        lc_batch_layout_add(&layouts[0], "probs", LC_DTYPE_F32, 1, (const uint64_t[]){1858});
        lc_batch_layout_add(&layouts[0], "wdl", LC_DTYPE_F32, 1, (const uint64_t[]){3});
    } else {
        for (int k = 0; k < 2; k++) {
            lc_batch_layout_init(&layouts[k], batch_size + (k ? 8 : 0));
            lc_batch_layout_add(&layouts[k], "x", LC_DTYPE_F32, 1, (const uint64_t[]){3});
            lc_batch_layout_add(&layouts[k], "y", LC_DTYPE_I64, 0, NULL);
            if (k)
                lc_batch_layout_add(&layouts[k], "z", LC_DTYPE_BOOL, 1, (const uint64_t[]){2});
        }
    }

    lc_queue *in = lc_queue_new("demo.in", &lc_item_batch, 4, LC_OVERFLOW_BLOCK);
    char yaml[4200];
    snprintf(yaml, sizeof yaml, "{path: '%s', regular_file: %s}", path, regular ? "true" : "false");
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (lc_standalone_new(&lc_fifo_writer_class, "demo", yaml, in, 0, NULL, &s, &err) != 0 ||
        lc_standalone_start(s, &err) != 0) {
        fprintf(stderr, "fifo_writer_demo: %s\n", err.msg);
        lc_standalone_free(s);
        lc_queue_free(in);
        return 1;
    }
    for (uint64_t seq = 0; seq < n; seq++) {
        const lc_batch_layout *l = &layouts[!big && seq >= relayout ? 1 : 0];
        lc_batch *b = lc_batch_new(l);
        if (big)
            ((float *)lc_batch_tensor(b, 0))[0] = (float)seq;
        else
            fill_small(b, seq);
        lc_batch_item item = {.batch = b, .seq = seq, .flags = 0};
        if (seq + 1 == n) {
            item.flags = LC_ITEM_END_OF_STREAM;
            if (last_rows && last_rows < l->batch_size)
                b->rows = last_rows;
        }
        if (lc_queue_put(in, &item, NULL) != 0) {
            lc_batch_free(b);
            break;
        }
    }
    lc_queue_close(in);
    while (!atomic_load(&s->finished))
        lc_sleep_seconds(0.01);
    lc_standalone_free(s);
    lc_queue_free(in);
    return 0;
}
