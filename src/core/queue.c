#include "core/queue.h"

#include "core/clock.h"
#include "core/error.h"
#include "core/load.h"
#include "core/thread.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct lc_queue {
    const char *name;
    const lc_item_type *type;
    lc_overflow overflow;
    size_t capacity;
    pthread_mutex_t mu;
    pthread_cond_t not_empty;
    pthread_cond_t not_full;
    pthread_cond_t batch_ready; /* block getters (lc_queue_get_many) wait here */
    unsigned char *ring;        /* capacity * type->size bytes */
    size_t head;                /* index of the oldest item */
    size_t count;
    bool closed;
    int producers;
    int waiting_getters;
    int waiting_putters;
    int waiting_blocks; /* block getters waiting */
    size_t block_want;  /* the items they wait for */
    uint64_t puts, gets, drops;
    /* lc_queue_discard calls so far: written under mu, read without it. */
    atomic_uint_fast64_t discards;
};

lc_queue *lc_queue_new(const char *name, const lc_item_type *type, size_t capacity,
                       lc_overflow overflow)
{
    if (capacity == 0)
        lc_fatal("queue %s: capacity must be at least 1", name);
    lc_queue *q = lc_xcalloc(1, sizeof *q);
    q->name = name;
    q->type = type;
    q->overflow = overflow;
    q->capacity = capacity;
    q->ring = lc_xmalloc(capacity * type->size);
    lc_mutex_init(&q->mu);
    lc_cond_init(&q->not_empty);
    lc_cond_init(&q->not_full);
    lc_cond_init(&q->batch_ready);
    return q;
}

static inline unsigned char *slot(lc_queue *q, size_t i)
{
    return q->ring + ((q->head + i) % q->capacity) * q->type->size;
}

void lc_queue_free(lc_queue *q)
{
    if (!q)
        return;
    if (q->type->dispose) {
        for (size_t i = 0; i < q->count; i++)
            q->type->dispose(slot(q, i));
    }
    lc_cond_destroy(&q->not_empty);
    lc_cond_destroy(&q->not_full);
    lc_cond_destroy(&q->batch_ready);
    lc_mutex_destroy(&q->mu);
    free(q->ring);
    free(q);
}

/*
 * Wake-ups. A thread woken for every item spends more time switching than
 * working once items are small and fast (a frame, a chunk at sampling
 * 1/32), so:
 * - a block getter (lc_queue_get_many) is woken by the first item and then
 *   when the items it waits for are there, or the queue is full;
 * - a putter waiting for room is woken when a quarter of the queue is free
 *   (or one slot, in queues of fewer than 8 slots), not at every slot.
 * Plain getters are woken at every item, as before.
 */
static inline size_t room_to_wake(const lc_queue *q)
{
    return q->capacity >= 8 ? q->capacity / 4 : 1;
}

static void wake_getters(lc_queue *q, size_t before)
{
    if (q->waiting_getters)
        lc_cond_signal(&q->not_empty);
    if (q->waiting_blocks && (before == 0 || q->count >= q->block_want || q->count == q->capacity))
        lc_cond_signal(&q->batch_ready);
}

static void wake_putters(lc_queue *q)
{
    if (q->waiting_putters && q->capacity - q->count >= room_to_wake(q)) {
        if (q->waiting_putters > 1)
            lc_cond_broadcast(&q->not_full); /* a block may have freed room for all */
        else
            lc_cond_signal(&q->not_full);
    }
}

/* Caller holds the lock and has checked there is room. */
static void push_locked(lc_queue *q, const void *item)
{
    memcpy(slot(q, q->count), item, q->type->size);
    q->count++;
    q->puts++;
    wake_getters(q, q->count - 1);
}

static void pop_locked(lc_queue *q, void *out)
{
    memcpy(out, slot(q, 0), q->type->size);
    q->head = (q->head + 1) % q->capacity;
    q->count--;
    q->gets++;
    wake_putters(q);
}

/* Wait (the lock held) until the queue has room or closes. True when the
 * queue was discarded meanwhile: what the caller waits to put was on its
 * way into the queue, and goes the way of what was in it. */
static bool wait_for_room(lc_queue *q, lc_load_meter *meter)
{
    uint64_t discards = atomic_load_explicit(&q->discards, memory_order_relaxed);
    lc_load_idle(meter);
    while (q->count == q->capacity && !q->closed) {
        q->waiting_putters++;
        lc_cond_wait(&q->not_full, &q->mu);
        q->waiting_putters--;
    }
    lc_load_busy(meter);
    return atomic_load_explicit(&q->discards, memory_order_relaxed) != discards;
}

/* Items a putter waited to put when the queue was discarded: dropped too
 * (the lock held; disposers only free memory). */
static void drop_waiting(lc_queue *q, const unsigned char *items, size_t n)
{
    q->drops += n;
    for (size_t i = 0; q->type->dispose && i < n; i++)
        q->type->dispose((void *)(items + i * q->type->size));
}

int lc_queue_put(lc_queue *q, const void *item, lc_load_meter *meter)
{
    lc_mutex_lock(&q->mu);
    if (q->closed) {
        lc_mutex_unlock(&q->mu);
        return LC_ECLOSED;
    }
    if (q->count == q->capacity) {
        switch (q->overflow) {
        case LC_OVERFLOW_DROP_NEWEST:
            q->drops++;
            lc_mutex_unlock(&q->mu);
            if (q->type->dispose)
                q->type->dispose((void *)item);
            return 0;
        case LC_OVERFLOW_KEEP_NEWEST:
            /* Evict the oldest item. Disposers only free memory, so running
             * one under the lock is cheap and keeps the ring consistent. */
            if (q->type->dispose)
                q->type->dispose(slot(q, 0));
            q->head = (q->head + 1) % q->capacity;
            q->count--;
            q->drops++;
            push_locked(q, item);
            lc_mutex_unlock(&q->mu);
            return 0;
        case LC_OVERFLOW_BLOCK:
            break;
        }
        bool discarded = wait_for_room(q, meter);
        if (q->closed) {
            lc_mutex_unlock(&q->mu);
            return LC_ECLOSED;
        }
        if (discarded) {
            drop_waiting(q, item, 1);
            lc_mutex_unlock(&q->mu);
            return 0;
        }
    }
    push_locked(q, item);
    lc_mutex_unlock(&q->mu);
    return 0;
}

int lc_queue_put_many(lc_queue *q, const void *items, size_t n, size_t *taken, lc_load_meter *meter)
{
    const unsigned char *p = items;
    size_t done = 0;
    int rc = 0;
    if (q->overflow != LC_OVERFLOW_BLOCK) { /* the policies act item by item */
        for (; done < n && rc == 0; done += rc == 0)
            rc = lc_queue_put(q, p + done * q->type->size, meter);
        *taken = done;
        return rc;
    }
    lc_mutex_lock(&q->mu);
    while (done < n) {
        bool discarded = q->count == q->capacity && wait_for_room(q, meter);
        if (q->closed) {
            rc = LC_ECLOSED;
            break;
        }
        if (discarded) {
            drop_waiting(q, p + done * q->type->size, n - done);
            done = n;
            break;
        }
        size_t before = q->count, k = q->capacity - q->count;
        if (k > n - done)
            k = n - done;
        for (size_t i = 0; i < k; i++)
            memcpy(slot(q, q->count + i), p + (done + i) * q->type->size, q->type->size);
        q->count += k;
        q->puts += k;
        done += k;
        if (k > 1 && q->waiting_getters > 1)
            lc_cond_broadcast(&q->not_empty);
        wake_getters(q, before);
    }
    lc_mutex_unlock(&q->mu);
    *taken = done;
    return rc;
}

int lc_queue_try_put(lc_queue *q, const void *item)
{
    lc_mutex_lock(&q->mu);
    int rc = 0;
    if (q->closed)
        rc = LC_ECLOSED;
    else if (q->count == q->capacity)
        rc = -EAGAIN;
    else
        push_locked(q, item);
    lc_mutex_unlock(&q->mu);
    return rc;
}

static int get_impl(lc_queue *q, void *out, lc_load_meter *meter, bool wait, uint64_t deadline)
{
    lc_mutex_lock(&q->mu);
    if (q->count == 0 && !q->closed) {
        if (!wait) {
            lc_mutex_unlock(&q->mu);
            return -EAGAIN;
        }
        lc_load_idle(meter);
        bool timed_out = false;
        while (q->count == 0 && !q->closed && !timed_out) {
            q->waiting_getters++;
            if (deadline)
                timed_out = !lc_cond_wait_until(&q->not_empty, &q->mu, deadline);
            else
                lc_cond_wait(&q->not_empty, &q->mu);
            q->waiting_getters--;
        }
        lc_load_busy(meter);
    }
    int rc = 0;
    if (q->count > 0)
        pop_locked(q, out);
    else if (q->closed)
        rc = LC_ECLOSED;
    else
        rc = -ETIMEDOUT;
    lc_mutex_unlock(&q->mu);
    return rc;
}

int lc_queue_get(lc_queue *q, void *out, lc_load_meter *meter)
{
    return get_impl(q, out, meter, true, 0);
}

int lc_queue_try_get(lc_queue *q, void *out)
{
    return get_impl(q, out, NULL, false, 0);
}

int lc_queue_get_until(lc_queue *q, void *out, lc_load_meter *meter, uint64_t deadline_ns)
{
    return get_impl(q, out, meter, true, deadline_ns ? deadline_ns : 1);
}

/* Take up to max items (the lock held); pass the wake-up on. */
static size_t take_locked(lc_queue *q, unsigned char *p, size_t max)
{
    size_t n = q->count < max ? q->count : max;
    for (size_t i = 0; i < n; i++) {
        memcpy(p + i * q->type->size, slot(q, 0), q->type->size);
        q->head = (q->head + 1) % q->capacity;
        q->count--;
    }
    q->gets += n;
    if (n)
        wake_putters(q);
    if (q->count && q->waiting_blocks) /* items left: another block getter may take them */
        lc_cond_signal(&q->batch_ready);
    return n;
}

int lc_queue_try_get_many(lc_queue *q, void *out, size_t max, size_t *got)
{
    return lc_queue_try_get_many_at(q, out, max, got, NULL);
}

int lc_queue_try_get_many_at(lc_queue *q, void *out, size_t max, size_t *got, uint64_t *discards)
{
    lc_mutex_lock(&q->mu);
    if (discards)
        *discards = atomic_load_explicit(&q->discards, memory_order_relaxed);
    *got = take_locked(q, out, max);
    int rc = *got ? 0 : q->closed ? LC_ECLOSED : -EAGAIN;
    lc_mutex_unlock(&q->mu);
    return rc;
}

int lc_queue_get_many(lc_queue *q, void *out, size_t max, size_t *got, lc_load_meter *meter)
{
    return lc_queue_get_many_at(q, out, max, got, meter, NULL);
}

int lc_queue_get_many_at(lc_queue *q, void *out, size_t max, size_t *got, lc_load_meter *meter,
                         uint64_t *discards)
{
    /* The block to wait for: max items, at most a quarter of the queue. */
    size_t want = max < room_to_wake(q) ? max : room_to_wake(q);
    if (want == 0)
        want = 1;
    lc_mutex_lock(&q->mu);
    uint64_t deadline = 0;
    if (q->count < want && !q->closed) {
        lc_load_idle(meter);
        while (!q->closed && q->count < want) {
            if (q->count > 0 && deadline && lc_now_ns() >= deadline)
                break;
            q->waiting_blocks++;
            q->block_want = want;
            if (q->count > 0) {
                /* Items are there: wait a little for the rest, no longer. */
                if (!deadline)
                    deadline = lc_now_ns() + LC_QUEUE_BLOCK_WAIT_NS;
                lc_cond_wait_until(&q->batch_ready, &q->mu, deadline);
            } else {
                lc_cond_wait(&q->batch_ready, &q->mu);
            }
            q->waiting_blocks--;
        }
        lc_load_busy(meter);
    }
    if (discards)
        *discards = atomic_load_explicit(&q->discards, memory_order_relaxed);
    size_t n = take_locked(q, out, max);
    int rc = n ? 0 : LC_ECLOSED;
    lc_mutex_unlock(&q->mu);
    *got = n;
    return rc;
}

uint64_t lc_queue_discards(lc_queue *q)
{
    return atomic_load_explicit(&q->discards, memory_order_relaxed);
}

size_t lc_queue_discard(lc_queue *q)
{
    lc_mutex_lock(&q->mu);
    size_t n = q->count, size = q->type->size;
    unsigned char *taken = n && q->type->dispose ? lc_xmalloc(n * size) : NULL;
    for (size_t i = 0; taken && i < n; i++)
        memcpy(taken + i * size, slot(q, i), size);
    q->head = 0;
    q->count = 0;
    q->drops += n;
    atomic_fetch_add_explicit(&q->discards, 1, memory_order_relaxed);
    if (q->waiting_putters)
        lc_cond_broadcast(&q->not_full);
    lc_mutex_unlock(&q->mu);
    /* Disposed of outside the lock: a batch goes back to its pool. */
    for (size_t i = 0; taken && i < n; i++)
        q->type->dispose(taken + i * size);
    free(taken);
    return n;
}

void lc_queue_close(lc_queue *q)
{
    lc_mutex_lock(&q->mu);
    q->closed = true;
    lc_cond_broadcast(&q->not_empty);
    lc_cond_broadcast(&q->not_full);
    lc_cond_broadcast(&q->batch_ready);
    lc_mutex_unlock(&q->mu);
}

bool lc_queue_closed(lc_queue *q)
{
    lc_mutex_lock(&q->mu);
    bool c = q->closed;
    lc_mutex_unlock(&q->mu);
    return c;
}

void lc_queue_add_producer(lc_queue *q)
{
    lc_mutex_lock(&q->mu);
    q->producers++;
    lc_mutex_unlock(&q->mu);
}

void lc_queue_producer_done(lc_queue *q)
{
    lc_mutex_lock(&q->mu);
    if (q->producers <= 0)
        lc_fatal("queue %s: producer_done without a registered producer", q->name);
    bool close = --q->producers == 0;
    lc_mutex_unlock(&q->mu);
    if (close)
        lc_queue_close(q);
}

void lc_queue_flush_counters(lc_queue *q, lc_queue_counters *out)
{
    lc_mutex_lock(&q->mu);
    out->put = q->puts;
    out->get = q->gets;
    out->drop = q->drops;
    out->size = q->count;
    out->capacity = q->capacity;
    q->puts = q->gets = q->drops = 0;
    lc_mutex_unlock(&q->mu);
}

size_t lc_queue_size(lc_queue *q)
{
    lc_mutex_lock(&q->mu);
    size_t n = q->count;
    lc_mutex_unlock(&q->mu);
    return n;
}

size_t lc_queue_capacity(const lc_queue *q)
{
    return q->capacity;
}

const char *lc_queue_name(const lc_queue *q)
{
    return q->name;
}

const lc_item_type *lc_queue_item_type(const lc_queue *q)
{
    return q->type;
}

lc_overflow lc_queue_overflow(const lc_queue *q)
{
    return q->overflow;
}

const char *lc_overflow_name(lc_overflow o)
{
    switch (o) {
    case LC_OVERFLOW_BLOCK:
        return "block";
    case LC_OVERFLOW_DROP_NEWEST:
        return "drop_newest";
    case LC_OVERFLOW_KEEP_NEWEST:
        return "keep_newest";
    }
    return "?";
}

bool lc_overflow_parse(const char *name, lc_overflow *out)
{
    for (int i = 0; i <= LC_OVERFLOW_KEEP_NEWEST; i++) {
        if (strcmp(name, lc_overflow_name((lc_overflow)i)) == 0) {
            *out = (lc_overflow)i;
            return true;
        }
    }
    return false;
}
