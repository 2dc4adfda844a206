#include "core/deque.h"

#include "core/error.h"

#include <stdlib.h>
#include <string.h>

void lc_deque_init(lc_deque *d, size_t elem_size)
{
    memset(d, 0, sizeof *d);
    d->elem = elem_size;
}

void lc_deque_fini(lc_deque *d)
{
    free(d->v);
    d->v = NULL;
    d->cap = d->head = d->len = 0;
}

void *lc_deque_push_back(lc_deque *d)
{
    if (d->len == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 16;
        unsigned char *v = lc_xmalloc(cap * d->elem);
        for (size_t i = 0; i < d->len; i++)
            memcpy(v + i * d->elem, lc_deque_at(d, i), d->elem);
        free(d->v);
        d->v = v;
        d->cap = cap;
        d->head = 0;
    }
    void *slot = d->v + ((d->head + d->len) % d->cap) * d->elem;
    memset(slot, 0, d->elem);
    d->len++;
    return slot;
}

void lc_deque_pop_front(lc_deque *d)
{
    if (d->len == 0)
        lc_fatal("deque: pop from an empty deque");
    d->head = (d->head + 1) % d->cap;
    d->len--;
}
