/*
 * shared: an immutable object shared by reference between threads.
 *
 * The maker hands the object over with the function that destroys it; every
 * holder takes a reference and drops it when done; the last drop destroys
 * it. Nobody writes to the object once it is shared, so readers need no
 * lock. The pipeline publishes its metrics snapshots this way, once per
 * tick, to every reader at once.
 */
#ifndef LC_CORE_SHARED_H
#define LC_CORE_SHARED_H

typedef struct lc_shared lc_shared;

/* One reference to obj, which destroy (not NULL) frees at the last unref. */
lc_shared *lc_shared_new(void *obj, void (*destroy)(void *obj));
/* Another reference (s may be NULL). */
lc_shared *lc_shared_ref(lc_shared *s);
/* Drop a reference (s may be NULL). */
void lc_shared_unref(lc_shared *s);
/* The object (s not NULL). */
const void *lc_shared_get(const lc_shared *s);

#endif
