/*
 * test_batch_buffer: where a batch's buffer lies (format/batch.c). A buffer
 * of 2 MB or more (a dense batch) starts on a huge page's boundary and its
 * mapping asks for huge pages (MADV_HUGEPAGE: "hg" in /proc/self/smaps'
 * VmFlags, where the kernel has transparent huge pages); a smaller one (a
 * packed batch) is whole pages that do not ask. Either way its mapping
 * covers its bytes, every byte can be written and read back, and a pool
 * hands the buffer out again. Fails on a build that maps batches anywhere.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "format/batch.h"

#define HUGE (2u << 20)

/* The mapping of /proc/self/smaps that holds p: its start, end and whether
 * its VmFlags hold "hg". 0 when found. */
static int mapping_of(const void *p, uintptr_t *start, uintptr_t *end, int *hg)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int found = 0;
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long s, e;
        /* A mapping's line is "start-end ..."; its fields' are "Name: ...". */
        if (sscanf(line, "%lx-%lx ", &s, &e) == 2) {
            if (found)
                break; /* the next mapping: its VmFlags were not there */
            if (a >= s && a < e) {
                found = 1;
                *start = s;
                *end = e;
                *hg = 0;
            }
        } else if (found && strncmp(line, "VmFlags:", 8) == 0) {
            *hg = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return found ? 0 : -1;
}

/* A kernel built without transparent huge pages refuses the request. */
static int thp_built(void)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f)
        fclose(f);
    return f != NULL;
}

static void check_batch(uint64_t rows, uint64_t row_floats, int huge)
{
    lc_batch_layout l;
    lc_batch_layout_init(&l, rows);
    const uint64_t dims[1] = {row_floats};
    lc_batch_layout_add(&l, "x", LC_DTYPE_F32, 1, dims);
    lc_batch_pool *pool = lc_batch_pool_new(&l, 2);
    lc_batch *b = lc_batch_pool_get(pool);
    uintptr_t at = (uintptr_t)b->data, start = 0, end = 0;
    int hg = -1;
    CHECK(at % 4096 == 0);
    CHECK(mapping_of(b->data, &start, &end, &hg) == 0);
    /* Huge pages wanted: on their boundary, asked for. Two batches'
     * mappings may merge into one, so only its ends are bounded. */
    CHECK(huge ? at % HUGE == 0 : 1);
    CHECK_EQ_INT(hg, huge && thp_built());
    CHECK(end >= at + l.total_bytes);
    uint8_t *d = b->data;
    for (uint64_t i = 0; i < l.total_bytes; i++)
        d[i] = (uint8_t)(i * 7 + 1);
    int same = 1;
    for (uint64_t i = 0; i < l.total_bytes; i++)
        same &= d[i] == (uint8_t)(i * 7 + 1);
    CHECK(same);
    lc_batch_free(b);
    lc_batch *again = lc_batch_pool_get(pool);
    CHECK(again->data == (void *)at); /* the pool's buffer, handed out again */
    lc_batch_free(again);
    lc_batch_pool_unref(pool);
}

int main(void)
{
    check_batch(256, 112 * 64 + 1858, 1); /* a dense batch: 9.25 MB */
    check_batch(256, 370, 0);             /* a packed one's size: 379 KB */
    check_batch(4, HUGE / 16, 1);         /* exactly one huge page */
    return check_finish();
}
