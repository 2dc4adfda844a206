#include "core/cells.h"

#include "core/clock.h"
#include "core/error.h"
#include "core/thread.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define CELLS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CELLS_ASAN 1
#endif
#endif
#ifdef CELLS_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Cells are the size asked rounded up to this: a frame (1352 bytes) takes
 * no more than it did by value. */
#define ALIGN 8

typedef struct magazine {
    struct magazine *next;
    unsigned n;
    void *cell[LC_CELLS_MAGAZINE];
} magazine;

/* One thread's cache of one pool: its two magazines (the thread's alone)
 * and its counts, which only it writes and lc_cells_stats_get reads. */
typedef struct tcache {
    lc_cells *pool;
    magazine *loaded, *prev;
    uint64_t n_alloc, n_free;
    atomic_uint_fast64_t allocs, frees;
    struct tcache *next; /* the pool's list, under its lock */
} tcache;

struct lc_cells {
    const char *name;
    size_t cell;
    unsigned id;
    pthread_key_t key; /* the thread's tcache, given back at its exit */
    pthread_mutex_t mu;
    /* The depot, under mu: magazines holding free cells, and empty ones.
     * `full` is used first; `cold` holds what the last trim set aside, its
     * pages given back where no cell out shares them. */
    magazine *full, *full_last, *cold, *empty;
    uint64_t full_cells, cold_cells;
    /* Trimming, under mu: the fewest cells `full` held since the last trim,
     * when the next is due, how often, the cells kept beyond, and the bytes
     * given back so far. */
    uint64_t low, next_trim_ns, trim_every_ns, slack, released;
    /* Carving, under mu. */
    char *region;
    size_t region_used;
    void **regions;
    size_t n_regions, cap_regions;
    uint64_t carved;
    /* Counts of the threads that exited; the live threads' caches. */
    uint64_t retired_allocs, retired_frees;
    tcache *threads;
};

static _Thread_local tcache *tls[LC_CELLS_MAX_POOLS];
static atomic_uint next_id;

static magazine *mag_pop(magazine **list)
{
    magazine *m = *list;
    if (m)
        *list = m->next;
    return m;
}

static void mag_push(magazine **list, magazine *m)
{
    m->next = *list;
    *list = m;
}

/* The depot's full magazines: taken from the top; a magazine given back
 * goes on top (the cells most lately used are used again first), or, while
 * a trim has left cold cells, at the bottom, so that the low cells a trim
 * put on top are used first and the freed ones wait for the next trim to
 * sort them (Trimming). */
static magazine *full_pop(lc_cells *c)
{
    magazine *m = mag_pop(&c->full);
    if (!c->full)
        c->full_last = NULL;
    return m;
}

static void full_give(lc_cells *c, magazine *m)
{
    c->full_cells += m->n;
    if (c->cold_cells && c->full_last) {
        m->next = NULL;
        c->full_last->next = m;
        c->full_last = m;
        return;
    }
    mag_push(&c->full, m);
    if (!c->full_last)
        c->full_last = m;
}

static magazine *mag_new(void)
{
    magazine *m = lc_xmalloc(sizeof *m);
    m->next = NULL;
    m->n = 0;
    return m;
}

/* A thread's magazines go back to the depot (the lock held): non-empty
 * ones as full, empty ones as empty. */
static void give_back(lc_cells *c, magazine *m)
{
    if (m->n) {
        full_give(c, m);
    } else {
        mag_push(&c->empty, m);
    }
}

/* The thread's cache of pool c goes: at the thread's exit (the key's
 * destructor), or at lc_cells_destroy for the caller's own. */
static void tcache_exit(void *p)
{
    tcache *t = p;
    lc_cells *c = t->pool;
    lc_mutex_lock(&c->mu);
    give_back(c, t->loaded);
    give_back(c, t->prev);
    c->retired_allocs += t->n_alloc;
    c->retired_frees += t->n_free;
    for (tcache **at = &c->threads; *at; at = &(*at)->next) {
        if (*at == t) {
            *at = t->next;
            break;
        }
    }
    lc_mutex_unlock(&c->mu);
    tls[c->id] = NULL;
    free(t);
}

static tcache *tcache_new(lc_cells *c)
{
    tcache *t = lc_xcalloc(1, sizeof *t);
    t->pool = c;
    t->loaded = mag_new();
    t->prev = mag_new();
    lc_mutex_lock(&c->mu);
    t->next = c->threads;
    c->threads = t;
    lc_mutex_unlock(&c->mu);
    if (pthread_setspecific(c->key, t) != 0)
        lc_fatal("cells %s: cannot keep a thread's cache", c->name);
    tls[c->id] = t;
    return t;
}

static inline tcache *my_cache(lc_cells *c)
{
    tcache *t = tls[c->id];
    return t ? t : tcache_new(c);
}

lc_cells *lc_cells_new(const char *name, size_t size)
{
    unsigned id = atomic_fetch_add(&next_id, 1);
    if (id >= LC_CELLS_MAX_POOLS)
        lc_fatal("cells %s: more than %d pools of cells", name, LC_CELLS_MAX_POOLS);
    lc_cells *c = lc_xcalloc(1, sizeof *c);
    c->name = name;
    c->cell = (size ? size + ALIGN - 1 : ALIGN) / ALIGN * ALIGN;
    if (c->cell > LC_CELLS_REGION)
        lc_fatal("cells %s: a cell of %zu bytes is more than a region", name, size);
    c->id = id;
    if (pthread_key_create(&c->key, tcache_exit) != 0)
        lc_fatal("cells %s: no thread key left", name);
    lc_mutex_init(&c->mu);
    lc_cells_set_trim(c, LC_CELLS_TRIM_SECONDS, LC_CELLS_TRIM_SLACK);
    return c;
}

void lc_cells_set_trim(lc_cells *c, double seconds, size_t slack_bytes)
{
    lc_mutex_lock(&c->mu);
    c->trim_every_ns = (uint64_t)(seconds * 1e9);
    c->next_trim_ns = lc_now_ns() + c->trim_every_ns;
    c->slack = slack_bytes / c->cell;
    lc_mutex_unlock(&c->mu);
}

/* A region, aligned to its size: the region of a cell is its address
 * rounded down. */
static char *map_region(lc_cells *c)
{
    size_t n = 2 * (size_t)LC_CELLS_REGION;
    char *r = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED)
        lc_fatal("cells %s: cannot map %u MB more", c->name, LC_CELLS_REGION >> 20);
    char *at = (char *)(((uintptr_t)r + LC_CELLS_REGION - 1) & ~(uintptr_t)(LC_CELLS_REGION - 1));
    if (at > r)
        munmap(r, (size_t)(at - r));
    if (at + LC_CELLS_REGION < r + n)
        munmap(at + LC_CELLS_REGION, (size_t)(r + n - at - LC_CELLS_REGION));
    POISON(at, LC_CELLS_REGION);
    return at;
}

/* Fill m (empty) with new cells, carved from the regions (the lock held). */
static void carve(lc_cells *c, magazine *m)
{
    while (m->n < LC_CELLS_MAGAZINE) {
        if (!c->region || c->region_used + c->cell > LC_CELLS_REGION) {
            char *r = map_region(c);
            if (c->n_regions == c->cap_regions) {
                c->cap_regions = c->cap_regions ? 2 * c->cap_regions : 16;
                c->regions = lc_xrealloc(c->regions, c->cap_regions * sizeof *c->regions);
            }
            c->regions[c->n_regions++] = r;
            c->region = r;
            c->region_used = 0;
        }
        m->cell[m->n++] = c->region + c->region_used;
        c->region_used += c->cell;
        c->carved++;
    }
}

/* Both magazines empty: trade the empty previous one for a full one from
 * the depot (the cold ones last), or carve. */
static void refill(lc_cells *c, tcache *t)
{
    lc_mutex_lock(&c->mu);
    magazine *f = full_pop(c);
    if (f) {
        c->full_cells -= f->n;
        if (c->full_cells < c->low)
            c->low = c->full_cells;
    } else if ((f = mag_pop(&c->cold))) {
        c->cold_cells -= f->n;
    }
    if (f) {
        mag_push(&c->empty, t->prev);
        t->prev = t->loaded;
        t->loaded = f;
    } else {
        carve(c, t->loaded);
    }
    lc_mutex_unlock(&c->mu);
}

void *lc_cells_alloc(lc_cells *c)
{
    tcache *t = my_cache(c);
    if (t->loaded->n == 0) {
        if (t->prev->n) {
            magazine *m = t->loaded;
            t->loaded = t->prev;
            t->prev = m;
        } else {
            refill(c, t);
        }
    }
    void *cell = t->loaded->cell[--t->loaded->n];
    atomic_store_explicit(&t->allocs, ++t->n_alloc, memory_order_relaxed);
    UNPOISON(cell, c->cell);
    /* The next cell this thread gets, fetched for writing meanwhile: a cell
     * freed by another thread is in no cache of this one. */
    if (t->loaded->n) {
        const char *next = t->loaded->cell[t->loaded->n - 1];
        for (size_t at = 0; at < c->cell; at += 64)
            __builtin_prefetch(next + at, 1, 3);
    }
    return cell;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return (x > y) - (x < y);
}

/* Every free cell of the depot (n), sorted by address; the emptied
 * magazines onto *mags. */
static void **depot_sorted(lc_cells *c, uint64_t n, magazine **mags)
{
    void **all = lc_xmalloc((n ? n : 1) * sizeof *all);
    uint64_t k = 0;
    magazine *lists[2] = {c->full, c->cold};
    for (int l = 0; l < 2; l++) {
        for (magazine *m = lists[l], *next; m; m = next) {
            next = m->next;
            memcpy(all + k, m->cell, m->n * sizeof *all);
            k += m->n;
            m->n = 0;
            mag_push(mags, m);
        }
    }
    c->full = c->full_last = c->cold = NULL;
    qsort(all, k, sizeof *all, by_address);
    return all;
}

static void unmap_region(lc_cells *c, char *r)
{
    for (size_t i = 0; i < c->n_regions; i++) {
        if (c->regions[i] == r) {
            c->regions[i] = c->regions[--c->n_regions];
            break;
        }
    }
    UNPOISON(r, LC_CELLS_REGION);
    munmap(r, LC_CELLS_REGION);
}

/* The regions every cell of which is in cells[0..n) (sorted), but the one
 * being carved, are unmapped and their cells dropped; returns the cells
 * left, moved to the front. */
static size_t unmap_free_regions(lc_cells *c, void **cells, size_t n)
{
    const uintptr_t mask = ~(uintptr_t)(LC_CELLS_REGION - 1);
    size_t per = LC_CELLS_REGION / c->cell, kept = 0;
    for (size_t i = 0, j; i < n; i = j) {
        uintptr_t base = (uintptr_t)cells[i] & mask;
        for (j = i; j < n && ((uintptr_t)cells[j] & mask) == base; j++)
            ;
        if (j - i == per && (char *)base != c->region) {
            unmap_region(c, (char *)base);
            c->carved -= per;
        } else {
            memmove(cells + kept, cells + i, (j - i) * sizeof *cells);
            kept += j - i;
        }
    }
    return kept;
}

/* The pages wholly inside runs of adjacent free cells (sorted) go back to
 * the system (read again as zeros); returns their bytes. */
static uint64_t give_back_pages(void **cells, size_t n, size_t cell)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uint64_t bytes = 0;
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && (char *)cells[j] == (char *)cells[j - 1] + cell; j++)
            ;
        uintptr_t from = ((uintptr_t)cells[i] + page - 1) & ~(page - 1);
        uintptr_t to = ((uintptr_t)cells[j - 1] + cell) & ~(page - 1);
        if (to > from && madvise((void *)from, to - from, MADV_DONTNEED) == 0)
            bytes += to - from;
    }
    return bytes;
}

/* cells[0..n) into magazines on *list, the lowest addresses on top;
 * magazines from *mags. */
static void restock(magazine **list, void **cells, size_t n, magazine **mags)
{
    for (size_t k = (n + LC_CELLS_MAGAZINE - 1) / LC_CELLS_MAGAZINE; k-- > 0;) {
        magazine *m = mag_pop(mags);
        if (!m)
            m = mag_new();
        size_t from = k * LC_CELLS_MAGAZINE;
        m->n = (unsigned)(n - from < LC_CELLS_MAGAZINE ? n - from : LC_CELLS_MAGAZINE);
        memcpy(m->cell, cells + from, m->n * sizeof *cells);
        mag_push(list, m);
    }
}

/* The trim (the lock held): the cells that stayed in the depot since the
 * last one, less the slack, were not needed; the depot is sorted by
 * address, as many of its highest cells are set aside as cold, the regions
 * wholly cold unmapped and the pages of the others' runs of cold cells
 * given back. While cold cells are left, each trim sorts the depot again:
 * a cell freed high up turns cold and a low cold one takes its place, so
 * what is out gathers at the lowest addresses and the high regions empty. */
static void trim_locked(lc_cells *c)
{
    c->next_trim_ns = lc_now_ns() + c->trim_every_ns;
    uint64_t excess = c->low > c->slack ? c->low - c->slack : 0;
    c->low = c->full_cells;
    if (!excess && !c->cold_cells)
        return;
    uint64_t n = c->full_cells + c->cold_cells;
    magazine *mags = NULL;
    void **all = depot_sorted(c, n, &mags);
    size_t hot = (size_t)(c->full_cells - excess);
    size_t cold = unmap_free_regions(c, all + hot, (size_t)(n - hot));
    c->released = give_back_pages(all + hot, cold, c->cell);
    restock(&c->cold, all + hot, cold, &mags);
    restock(&c->full, all, hot, &mags);
    for (c->full_last = c->full; c->full_last && c->full_last->next;)
        c->full_last = c->full_last->next;
    c->full_cells = c->low = hot;
    c->cold_cells = cold;
    while (mags)
        mag_push(&c->empty, mag_pop(&mags));
    free(all);
}

void lc_cells_trim(lc_cells *c)
{
    lc_mutex_lock(&c->mu);
    trim_locked(c);
    lc_mutex_unlock(&c->mu);
}

/* Both magazines full: the previous one goes to the depot, for an empty. */
static void spill(lc_cells *c, tcache *t)
{
    lc_mutex_lock(&c->mu);
    full_give(c, t->prev);
    t->prev = t->loaded;
    t->loaded = mag_pop(&c->empty);
    if (c->trim_every_ns && lc_now_ns() >= c->next_trim_ns)
        trim_locked(c);
    lc_mutex_unlock(&c->mu);
    if (!t->loaded)
        t->loaded = mag_new();
}

void lc_cells_free(lc_cells *c, void *cell)
{
    if (!cell)
        return;
    POISON(cell, c->cell);
    tcache *t = my_cache(c);
    if (t->loaded->n == LC_CELLS_MAGAZINE) {
        if (t->prev->n == 0) {
            magazine *m = t->loaded;
            t->loaded = t->prev;
            t->prev = m;
        } else {
            spill(c, t);
        }
    }
    t->loaded->cell[t->loaded->n++] = cell;
    atomic_store_explicit(&t->frees, ++t->n_free, memory_order_relaxed);
}

void lc_cells_stats_get(lc_cells *c, lc_cells_stats *out)
{
    lc_mutex_lock(&c->mu);
    uint64_t allocs = c->retired_allocs, frees = c->retired_frees;
    for (const tcache *t = c->threads; t; t = t->next) {
        allocs += atomic_load_explicit(&t->allocs, memory_order_relaxed);
        frees += atomic_load_explicit(&t->frees, memory_order_relaxed);
    }
    *out = (lc_cells_stats){.live = allocs - frees,
                            .carved = c->carved,
                            .depot = c->full_cells + c->cold_cells,
                            .cold = c->cold_cells,
                            .mapped = (uint64_t)c->n_regions * LC_CELLS_REGION,
                            .released = c->released,
                            .cell = c->cell};
    lc_mutex_unlock(&c->mu);
}

static void free_list(magazine *m)
{
    while (m) {
        magazine *next = m->next;
        free(m);
        m = next;
    }
}

void lc_cells_destroy(lc_cells *c)
{
    if (!c)
        return;
    if (tls[c->id])
        tcache_exit(tls[c->id]);
    pthread_key_delete(c->key);
    if (c->threads)
        lc_fatal("cells %s: destroyed while a thread still uses it", c->name);
    free_list(c->full);
    free_list(c->cold);
    free_list(c->empty);
    for (size_t i = 0; i < c->n_regions; i++) {
        UNPOISON(c->regions[i], LC_CELLS_REGION);
        munmap(c->regions[i], LC_CELLS_REGION);
    }
    free(c->regions);
    lc_mutex_destroy(&c->mu);
    free(c);
}
