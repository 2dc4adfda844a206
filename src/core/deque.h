/*
 * deque: a growable ring of fixed-size elements, indexed from the front.
 * Not thread-safe: its owner locks around it. Elements are moved by value
 * when the ring grows, so pointers from lc_deque_at are valid only until the
 * next push.
 */
#ifndef LC_CORE_DEQUE_H
#define LC_CORE_DEQUE_H

#include <stddef.h>

typedef struct lc_deque {
    unsigned char *v;
    size_t elem, cap, head, len;
} lc_deque;

void lc_deque_init(lc_deque *d, size_t elem_size);
void lc_deque_fini(lc_deque *d);
/* A zeroed slot at the back; returns it for the caller to fill. */
void *lc_deque_push_back(lc_deque *d);
void lc_deque_pop_front(lc_deque *d);
static inline void *lc_deque_at(const lc_deque *d, size_t i)
{
    return d->v + ((d->head + i) % d->cap) * d->elem;
}
static inline size_t lc_deque_len(const lc_deque *d)
{
    return d->len;
}

#endif
