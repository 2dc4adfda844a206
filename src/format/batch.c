#include "format/batch.h"

#include "core/error.h"
#include "core/thread.h"

#include <stdatomic.h>
#include <stdbool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

size_t lc_dtype_size(lc_dtype t)
{
    switch (t) {
    case LC_DTYPE_F32:
    case LC_DTYPE_I32:
        return 4;
    case LC_DTYPE_I64:
        return 8;
    case LC_DTYPE_BOOL:
    case LC_DTYPE_U8:
        return 1;
    case LC_DTYPE_U16:
        return 2;
    }
    return 0;
}

const char *lc_dtype_name(lc_dtype t)
{
    switch (t) {
    case LC_DTYPE_F32:
        return "float32";
    case LC_DTYPE_I64:
        return "int64";
    case LC_DTYPE_BOOL:
        return "bool";
    case LC_DTYPE_I32:
        return "int32";
    case LC_DTYPE_U8:
        return "uint8";
    case LC_DTYPE_U16:
        return "uint16";
    }
    return "?";
}

void lc_batch_layout_init(lc_batch_layout *l, uint64_t batch_size)
{
    memset(l, 0, sizeof *l);
    l->batch_size = batch_size;
}

void lc_batch_layout_name(lc_batch_layout *l, const char *name, const char *expand)
{
    snprintf(l->name, sizeof l->name, "%s", name ? name : "");
    snprintf(l->expand, sizeof l->expand, "%s", expand ? expand : "");
}

void lc_batch_layout_add(lc_batch_layout *l, const char *name, lc_dtype dtype, uint32_t ndim,
                         const uint64_t *dims)
{
    if (l->n_tensors >= LC_BATCH_MAX_TENSORS || ndim + 1 > LC_BATCH_MAX_DIMS)
        lc_fatal("batch layout: too many tensors or dimensions adding %s", name);
    lc_tensor_desc *t = &l->tensors[l->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dtype;
    t->ndim = ndim + 1;
    t->shape[0] = l->batch_size;
    uint64_t n = l->batch_size;
    for (uint32_t i = 0; i < ndim; i++) {
        t->shape[i + 1] = dims[i];
        n *= dims[i];
    }
    t->nbytes = n * lc_dtype_size(dtype);
    t->offset = (l->total_bytes + LC_BATCH_ALIGN - 1) / LC_BATCH_ALIGN * LC_BATCH_ALIGN;
    l->total_bytes = t->offset + t->nbytes;
}

int lc_batch_layout_find(const lc_batch_layout *l, const char *name)
{
    for (uint32_t i = 0; i < l->n_tensors; i++)
        if (strcmp(l->tensors[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Buffers are mapped pages of their own, never heap memory: the fifo writer
 * splices them into a pipe by reference, and a reader may still be reading
 * those pages after the writer let go of them (a stop). Unmapping leaves the
 * pinned pages to the pipe; the heap could instead hand them out again. */
static size_t buffer_bytes(const lc_batch_layout *l)
{
    size_t page = 4096;
    size_t bytes = l->total_bytes ? l->total_bytes : 1;
    return (bytes + page - 1) / page * page;
}

/* A buffer of at least this many bytes starts on a huge page's boundary and
 * asks for huge pages (where the system gives them on request: transparent
 * huge pages "madvise" or "always"). A dense batch is megabytes: in huge
 * pages the generator's writes miss the TLB 512 times less, and the writer's
 * vmsplice pins a huge page at a time where it pinned 4 KB pages one by
 * one. The bytes past the last whole huge page stay small pages, so the
 * memory is the same. */
#define HUGE_PAGE (2u << 20)

static void *buffer_map(size_t bytes)
{
    size_t extra = bytes >= HUGE_PAGE ? HUGE_PAGE : 0;
    uint8_t *mem =
        mmap(NULL, bytes + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        lc_fatal("out of memory mapping a %zu-byte batch", bytes);
    if (!extra)
        return mem;
    size_t head = (HUGE_PAGE - (uintptr_t)mem % HUGE_PAGE) % HUGE_PAGE;
    if (head)
        munmap(mem, head);
    munmap(mem + head + bytes, extra - head);
#ifdef MADV_HUGEPAGE
    (void)madvise(mem + head, bytes, MADV_HUGEPAGE); /* a hint: small pages serve too */
#endif
    return mem + head;
}

static lc_batch *batch_alloc(const lc_batch_layout *l)
{
    lc_batch *b = lc_xmalloc(sizeof *b);
    b->layout = l;
    b->rows = l->batch_size;
    b->pool = NULL;
    b->data = buffer_map(buffer_bytes(l));
    return b;
}

static void batch_release(lc_batch *b)
{
    munmap(b->data, buffer_bytes(b->layout));
    free(b);
}

lc_batch *lc_batch_new(const lc_batch_layout *l)
{
    return batch_alloc(l); /* fresh anonymous pages are zero */
}

struct lc_batch_pool {
    lc_batch_layout layout;
    pthread_mutex_t mu;
    atomic_int refs;
    lc_batch **idle;
    size_t n_idle, max_idle;
};

lc_batch_pool *lc_batch_pool_new(const lc_batch_layout *l, size_t max_free)
{
    lc_batch_pool *p = lc_xcalloc(1, sizeof *p);
    p->layout = *l;
    lc_mutex_init(&p->mu);
    atomic_init(&p->refs, 1);
    p->max_idle = max_free;
    p->idle = lc_xcalloc(max_free ? max_free : 1, sizeof *p->idle);
    return p;
}

void lc_batch_pool_unref(lc_batch_pool *p)
{
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    for (size_t i = 0; i < p->n_idle; i++)
        batch_release(p->idle[i]);
    free(p->idle);
    lc_mutex_destroy(&p->mu);
    free(p);
}

lc_batch *lc_batch_pool_get(lc_batch_pool *p)
{
    lc_batch *b = NULL;
    lc_mutex_lock(&p->mu);
    if (p->n_idle)
        b = p->idle[--p->n_idle];
    lc_mutex_unlock(&p->mu);
    if (!b)
        b = batch_alloc(&p->layout);
    b->rows = p->layout.batch_size;
    b->pool = p;
    atomic_fetch_add(&p->refs, 1);
    return b;
}

void lc_batch_free(lc_batch *b)
{
    if (!b)
        return;
    lc_batch_pool *p = b->pool;
    if (!p) {
        batch_release(b);
        return;
    }
    b->pool = NULL;
    lc_mutex_lock(&p->mu);
    bool kept = p->n_idle < p->max_idle;
    if (kept)
        p->idle[p->n_idle++] = b;
    lc_mutex_unlock(&p->mu);
    if (!kept)
        batch_release(b); /* before the unref: b->layout lives in the pool */
    lc_batch_pool_unref(p);
}
