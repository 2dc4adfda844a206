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
 * from the first cell written on it. A freed cell is kept for reuse, so
 * the memory a pool holds follows the most cells it had out at once
 * lately, not ever: see Trimming.
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
 * Trimming. The depot's free cells that no thread took for a whole period
 * (LC_CELLS_TRIM_SECONDS, checked as cells come back to the depot), beyond
 * a slack (LC_CELLS_TRIM_SLACK bytes), were not needed: the depot is sorted
 * by address and that many of its highest cells set aside as cold (used
 * only when no other is free); a region all of whose cells are cold is
 * unmapped, and the pages of the other cold cells that no cell out shares
 * are given back (madvise MADV_DONTNEED: read again as zeros). The lowest
 * free cells are used first, so what is out gathers low and the high
 * regions empty: after a burst (a stage restarting, a reader stopping and
 * every queue full) the resident memory comes back down within a few
 * periods. The cost is a sort of the depot once a period while it holds
 * more than it needs, and page faults when cold cells are used again.
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
/* Trimming's defaults: the period, and the free cells' bytes kept beyond
 * what a period used (lc_cells_set_trim changes both). */
#define LC_CELLS_TRIM_SECONDS 5.0
#define LC_CELLS_TRIM_SLACK (1u << 20)
/* Pools a process may make in all (each has a slot in every thread's cache). */
#define LC_CELLS_MAX_POOLS 16

typedef struct lc_cells lc_cells;

typedef struct lc_cells_stats {
    uint64_t live;     /* cells allocated and not freed */
    uint64_t carved;   /* cells ever carved from regions: live + cached */
    uint64_t depot;    /* free cells in the depot's magazines */
    uint64_t cold;     /* of them, set aside by a trim (Trimming) */
    uint64_t mapped;   /* bytes of regions mapped */
    uint64_t released; /* bytes of their pages the last trim gave back */
    size_t cell;       /* bytes a cell (the size asked, rounded up to 8) */
} lc_cells_stats;

/* A pool of cells of at least `size` bytes; `name` (a literal) is for
 * messages. Aborts when the process already made LC_CELLS_MAX_POOLS. */
lc_cells *lc_cells_new(const char *name, size_t size);
/* A cell, its contents undefined. Aborts when memory cannot be mapped. */
void *lc_cells_alloc(lc_cells *c);
/* Give a cell of this pool back (any thread); NULL is fine. */
void lc_cells_free(lc_cells *c, void *cell);
/* Trimming every `seconds` (0: never by itself) with that slack. */
void lc_cells_set_trim(lc_cells *c, double seconds, size_t slack_bytes);
/* A trim now (Trimming): gives back what the depot held unused since the
 * last trim (or since the pool was made), beyond the slack. */
void lc_cells_trim(lc_cells *c);
/* Exact when no thread allocates or frees meanwhile. */
void lc_cells_stats_get(lc_cells *c, lc_cells_stats *out);
void lc_cells_destroy(lc_cells *c);

#endif
