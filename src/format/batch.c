#include "format/batch.h"

#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t lc_dtype_size(lc_dtype t)
{
    switch (t) {
    case LC_DTYPE_F32:
    case LC_DTYPE_I32:
        return 4;
    case LC_DTYPE_I64:
        return 8;
    case LC_DTYPE_BOOL:
        return 1;
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
    }
    return "?";
}

void lc_batch_layout_init(lc_batch_layout *l, uint64_t batch_size)
{
    memset(l, 0, sizeof *l);
    l->batch_size = batch_size;
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

lc_batch *lc_batch_new(const lc_batch_layout *l)
{
    lc_batch *b = lc_xmalloc(sizeof *b);
    b->layout = l;
    b->rows = l->batch_size;
    size_t bytes = (l->total_bytes + LC_BATCH_ALIGN - 1) / LC_BATCH_ALIGN * LC_BATCH_ALIGN;
    b->data = aligned_alloc(LC_BATCH_ALIGN, bytes ? bytes : LC_BATCH_ALIGN);
    if (!b->data)
        lc_fatal("out of memory allocating a %zu-byte batch", bytes);
    memset(b->data, 0, bytes);
    return b;
}

void lc_batch_free(lc_batch *b)
{
    if (!b)
        return;
    free(b->data);
    free(b);
}
