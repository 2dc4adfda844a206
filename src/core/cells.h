/*
 * cells: an allocator of fixed-size cells, for items written once by one
 * thread, handed from thread to thread by pointer and freed by another (the
 * lc0 chain's frames: stages/items.h).
 *
 * Memory. Cells are carved, in order, from regions of anonymous memory
 * mapped as needed (LC_CELLS_REGION bytes each), each the size asked
 * rounded up to 8 bytes (a frame's cell is the frame's size, so frames
 * take no more memory than they did by value; cells written by two threads
 * at once share at most a cache line at their edges); a page is resident
 * from the first cell written on it. A freed cell is kept for reuse, never given back to
 * the system while the pool lives (lc_cells_destroy unmaps everything), so
 * the memory a pool holds is the most cells it ever had out at once and
 * the free ones cached (below), whatever the pattern of frees: cells are
 * recycled one by one, no region waits for its last cell.
 *
 * Magazines. Each thread keeps, per pool, two magazines of up to
 * LC_CELLS_MAGAZINE free cells: it allocates from them and frees into them
 * without a lock. When both are empty (alloc) or full (free), it trades one
 * whole magazine with the pool's depot under the pool's one lock: a full
 * one for an empty one, or the other way (Bonwick's magazines). A depot
 * with no full magazine carves a magazine's worth of new cells at once. So
 * a cell made by one thread and freed by another costs no lock of its own:
 * one lock a magazine, on either side. A thread's magazines go back to the
 * depot when it exits. So the cells carved are at most the most cells out
 * at once plus two magazines a thread that used the pool and one more:
 * lc_cells_stats says both, and the unit test holds the pool to it.
 *
 * Prefetching. An allocation asks the memory for the next cell the thread
 * will get, for writing: a cell freed by another thread, or long ago, is
 * in none of this thread's caches.
 *
 * Sanitizers. In an AddressSanitizer build a free cell is poisoned until it
 * is allocated again: a read of a cell after its free is reported.
 *
 * Lifetime. A pool is made once and lives as long as cells of it may be
 * out; lc_cells_destroy is for a pool no thread uses any more (every thread
 * that used it but the caller has exited), with no cell out.
 */
#ifndef LC_CORE_CELLS_H
#define LC_CORE_CELLS_H

#include <stddef.h>
#include <stdint.h>

#define LC_CELLS_MAGAZINE 16
#define LC_CELLS_REGION (4u << 20)
/* Pools a process may make in all (each has a slot in every thread's cache). */
#define LC_CELLS_MAX_POOLS 16

typedef struct lc_cells lc_cells;

typedef struct lc_cells_stats {
    uint64_t live;   /* cells allocated and not freed */
    uint64_t carved; /* cells ever carved from regions: live + cached */
    uint64_t depot;  /* free cells in the depot's magazines */
    uint64_t mapped; /* bytes of regions mapped */
    size_t cell;     /* bytes a cell (the size asked, rounded up to 8) */
} lc_cells_stats;

/* A pool of cells of at least `size` bytes; `name` (a literal) is for
 * messages. Aborts when the process already made LC_CELLS_MAX_POOLS. */
lc_cells *lc_cells_new(const char *name, size_t size);
/* A cell, its contents undefined. Aborts when memory cannot be mapped. */
void *lc_cells_alloc(lc_cells *c);
/* Give a cell of this pool back (any thread); NULL is fine. */
void lc_cells_free(lc_cells *c, void *cell);
/* Exact when no thread allocates or frees meanwhile. */
void lc_cells_stats_get(lc_cells *c, lc_cells_stats *out);
void lc_cells_destroy(lc_cells *c);

#endif
