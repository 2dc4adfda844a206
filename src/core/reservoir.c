#include "core/reservoir.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

int lc_reservoir_init(lc_reservoir *r, size_t elem, uint64_t cap)
{
    *r = (lc_reservoir){.elem = elem, .cap = cap};
    if (cap == 0)
        return 0;
    if (cap > SIZE_MAX / elem)
        return -ENOMEM;
    r->bytes = (size_t)cap * elem;
    /* Anonymous memory: zero pages cost nothing until written. */
    void *mem = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        r->bytes = 0;
        return -ENOMEM;
    }
    r->slots = mem;
    return 0;
}

void lc_reservoir_fini(lc_reservoir *r)
{
    if (r->slots)
        munmap(r->slots, r->bytes);
    *r = (lc_reservoir){0};
}

bool lc_reservoir_put(lc_reservoir *r, const void *in, void *out, lc_rng *rng)
{
    if (r->fill < r->cap) {
        memcpy(r->slots + r->fill++ * r->elem, in, r->elem);
        return false;
    }
    if (r->cap == 0) {
        memcpy(out, in, r->elem);
        return true;
    }
    char *slot = r->slots + lc_rng_below(rng, r->cap) * r->elem;
    memcpy(out, slot, r->elem);
    memcpy(slot, in, r->elem);
    return true;
}

bool lc_reservoir_take(lc_reservoir *r, void *out, lc_rng *rng)
{
    if (r->fill == 0)
        return false;
    char *slot = r->slots + lc_rng_below(rng, r->fill) * r->elem;
    memcpy(out, slot, r->elem);
    char *last = r->slots + --r->fill * r->elem;
    if (slot != last)
        memcpy(slot, last, r->elem);
    return true;
}
