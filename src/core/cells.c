#include "core/cells.h"

#include "core/error.h"
#include "core/thread.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

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

/* Cells are the size asked rounded up to this: a frame (1448 bytes) takes
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
    /* The depot, under mu: magazines holding free cells, and empty ones. */
    magazine *full, *empty;
    uint64_t depot_cells;
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
        c->depot_cells += m->n;
        mag_push(&c->full, m);
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
    return c;
}

/* Fill m (empty) with new cells, carved from the regions (the lock held). */
static void carve(lc_cells *c, magazine *m)
{
    while (m->n < LC_CELLS_MAGAZINE) {
        if (!c->region || c->region_used + c->cell > LC_CELLS_REGION) {
            void *r = mmap(NULL, LC_CELLS_REGION, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (r == MAP_FAILED)
                lc_fatal("cells %s: cannot map %u MB more", c->name, LC_CELLS_REGION >> 20);
            POISON(r, LC_CELLS_REGION);
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
 * the depot, or carve. */
static void refill(lc_cells *c, tcache *t)
{
    lc_mutex_lock(&c->mu);
    magazine *f = mag_pop(&c->full);
    if (f) {
        c->depot_cells -= f->n;
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

/* Both magazines full: the previous one goes to the depot, for an empty. */
static void spill(lc_cells *c, tcache *t)
{
    lc_mutex_lock(&c->mu);
    c->depot_cells += t->prev->n;
    mag_push(&c->full, t->prev);
    t->prev = t->loaded;
    t->loaded = mag_pop(&c->empty);
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
                            .depot = c->depot_cells,
                            .mapped = (uint64_t)c->n_regions * LC_CELLS_REGION,
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
    free_list(c->empty);
    for (size_t i = 0; i < c->n_regions; i++) {
        UNPOISON(c->regions[i], LC_CELLS_REGION);
        munmap(c->regions[i], LC_CELLS_REGION);
    }
    free(c->regions);
    lc_mutex_destroy(&c->mu);
    free(c);
}
