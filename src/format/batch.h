/*
 * batch: a batch of named tensors in one contiguous buffer, and its layout.
 *
 * A layout lists the tensors of every batch of a stream: name, dtype, shape
 * (the first dimension is the batch size) and the byte offset of each tensor
 * in the batch's buffer. Offsets are aligned to 64 bytes so that a reader can
 * view each tensor in place (numpy.frombuffer) without copying. All tensors
 * are C-contiguous. A layout is immutable once built and shared by the
 * batches of a stage; batches point to it.
 *
 * A batch owns its buffer. `rows` is the number of valid rows (equal to the
 * batch size except for the final batch of a sequential run). Ownership of a
 * batch passes with the queue item that carries it.
 */
#ifndef LC_FORMAT_BATCH_H
#define LC_FORMAT_BATCH_H

#include <stddef.h>
#include <stdint.h>

#define LC_BATCH_MAX_TENSORS 8
#define LC_BATCH_MAX_DIMS 4
#define LC_BATCH_NAME_MAX 32
#define LC_BATCH_ALIGN 64

typedef enum lc_dtype {
    LC_DTYPE_F32 = 0,
    LC_DTYPE_I64 = 1,
    LC_DTYPE_BOOL = 2, /* one byte, 0 or 1 */
    LC_DTYPE_I32 = 3,
    /* Stream version 3 on: the packed layouts' narrow types. */
    LC_DTYPE_U8 = 4,
    LC_DTYPE_U16 = 5,
} lc_dtype;
#define LC_DTYPE_LAST LC_DTYPE_U16

typedef struct lc_tensor_desc {
    char name[LC_BATCH_NAME_MAX];
    lc_dtype dtype;
    uint32_t ndim;
    uint64_t shape[LC_BATCH_MAX_DIMS]; /* shape[0] = batch size */
    uint64_t offset;                   /* in the batch buffer, multiple of 64 */
    uint64_t nbytes;                   /* product of shape x dtype size */
} lc_tensor_desc;

/*
 * A layout's name says what its tensors are (for example "lc0-current",
 * "chess-encoder-packed"), and its expansion how a reader turns them into
 * the tensors a trainer takes: "" (they are those tensors),
 * LC_EXPAND_WIDEN (every u8 and u16 tensor becomes int64) or
 * LC_EXPAND_LC0 (bit planes and a sparse policy; docs/batch-stream.md).
 * Both travel in the stream header, so a reader never guesses.
 */
#define LC_LAYOUT_NAME_MAX 32
#define LC_EXPAND_WIDEN "widen-int64"
#define LC_EXPAND_LC0 "lc0-packed-1"

typedef struct lc_batch_layout {
    char name[LC_LAYOUT_NAME_MAX];
    char expand[LC_LAYOUT_NAME_MAX];
    uint32_t n_tensors;
    lc_tensor_desc tensors[LC_BATCH_MAX_TENSORS];
    uint64_t batch_size;
    uint64_t total_bytes; /* buffer size, including alignment padding */
} lc_batch_layout;

struct lc_batch_pool;

typedef struct lc_batch {
    const lc_batch_layout *layout;
    uint64_t rows;
    uint8_t *data;              /* layout->total_bytes, 64-byte aligned */
    struct lc_batch_pool *pool; /* where lc_batch_free returns it; NULL: freed */
} lc_batch;

size_t lc_dtype_size(lc_dtype t);
/* numpy names: "float32", "int64", "bool", "int32", "uint8", "uint16". */
const char *lc_dtype_name(lc_dtype t);

/* Build a layout: call add for each tensor (shape without the batch
 * dimension), then the offsets and sizes are final. */
void lc_batch_layout_init(lc_batch_layout *l, uint64_t batch_size);
/* Name the layout and its expansion (NULL or "": none). */
void lc_batch_layout_name(lc_batch_layout *l, const char *name, const char *expand);
void lc_batch_layout_add(lc_batch_layout *l, const char *name, lc_dtype dtype, uint32_t ndim,
                         const uint64_t *dims);
int lc_batch_layout_find(const lc_batch_layout *l, const char *name); /* index or -1 */

/* A new batch with a zeroed, aligned buffer. */
lc_batch *lc_batch_new(const lc_batch_layout *l);
/* Free a batch, or give it back to its pool. NULL is fine. */
void lc_batch_free(lc_batch *b);

/*
 * A pool recycles the buffers of one layout, so that a stream of batches
 * costs no allocation, page faults or zeroing once it runs: a batch of the
 * current layout is 9 MB, and freshly mapped memory is zeroed by the kernel
 * page by page. Batches from a pool are NOT zeroed: their producer writes
 * every byte. The pool is reference counted (its creator and every batch
 * out of it hold a reference), so batches may outlive the stage that made
 * them. Thread-safe.
 */
typedef struct lc_batch_pool lc_batch_pool;
/* Keeps up to max_free idle buffers. The layout is copied. */
lc_batch_pool *lc_batch_pool_new(const lc_batch_layout *l, size_t max_free);
void lc_batch_pool_unref(lc_batch_pool *p);
/* A batch of rows = batch size, contents undefined. */
lc_batch *lc_batch_pool_get(lc_batch_pool *p);
/* Pointer to tensor i's first byte. */
static inline void *lc_batch_tensor(lc_batch *b, unsigned i)
{
    return b->data + b->layout->tensors[i].offset;
}

#endif
