/*
 * reservoir: a shuffle buffer of fixed-size elements, owned by one thread.
 *
 * It first fills; then each element put in takes a uniformly random slot and
 * the element it evicts comes out; at the end, take() empties it in random
 * order, so nothing put in is lost. The slots are anonymous memory reserved
 * at init: their pages are only touched as the reservoir fills, so resident
 * memory tracks the fill. Elements are moved with memcpy; an element that
 * owns memory is the caller's to free (put's out, take's out, and what is
 * left at fini: slots [0, fill)).
 */
#ifndef LC_CORE_RESERVOIR_H
#define LC_CORE_RESERVOIR_H

#include "core/rng.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lc_reservoir {
    char *slots;
    size_t elem;   /* bytes an element */
    uint64_t cap;  /* slots */
    uint64_t fill; /* slots [0, fill) hold elements */
    size_t bytes;  /* reserved */
} lc_reservoir;

/* Reserve cap slots of elem bytes (cap 0: a reservoir that keeps nothing,
 * whose put always hands its input straight back). -ENOMEM when the
 * address space cannot be reserved. */
int lc_reservoir_init(lc_reservoir *r, size_t elem, uint64_t cap);
/* Release the slots (elements still held are dropped); accepts a zeroed one. */
void lc_reservoir_fini(lc_reservoir *r);
/* Put in. While the reservoir is not full, in is kept and false returned;
 * else a uniformly random slot's element is copied to out, in takes its
 * place, and true is returned. in and out must not overlap. */
bool lc_reservoir_put(lc_reservoir *r, const void *in, void *out, lc_rng *rng);
/* Take a uniformly random element out: false when empty. */
bool lc_reservoir_take(lc_reservoir *r, void *out, lc_rng *rng);

#endif
