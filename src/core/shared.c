/*
 * shared: see shared.h. The count is atomic; acquire-release on the drop
 * makes every holder's reads happen before the last drop's destroy.
 */
#include "core/shared.h"

#include "core/error.h"

#include <stdatomic.h>
#include <stdlib.h>

struct lc_shared {
    atomic_uint refs;
    void *obj;
    void (*destroy)(void *obj);
};

lc_shared *lc_shared_new(void *obj, void (*destroy)(void *obj))
{
    lc_shared *s = lc_xmalloc(sizeof *s);
    atomic_init(&s->refs, 1);
    s->obj = obj;
    s->destroy = destroy;
    return s;
}

lc_shared *lc_shared_ref(lc_shared *s)
{
    if (s)
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void lc_shared_unref(lc_shared *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    s->destroy(s->obj);
    free(s);
}

const void *lc_shared_get(const lc_shared *s)
{
    return s->obj;
}
