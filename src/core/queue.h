/*
 * queue: the bounded queue every pipeline arrow is made of.
 *
 * Design. A queue carries fixed-size items of one declared item type (a name
 * such as "chunk", checked when stages are wired, and the item's size and
 * disposer). Items are copied in and out by value; an item that holds heap
 * data hands ownership over with it. The queue is a ring buffer under one
 * mutex with two condition variables; any number of threads may put and get.
 *
 * Overflow. When the queue is full, LC_OVERFLOW_BLOCK makes the putter wait
 * (backpressure); LC_OVERFLOW_DROP_NEWEST disposes of the item being put;
 * LC_OVERFLOW_KEEP_NEWEST disposes of the oldest queued item to make room.
 * Both dropping policies count a drop.
 *
 * Closing. lc_queue_close() wakes every waiter. Putters then see LC_ECLOSED
 * at once (and keep ownership of their item); getters first drain what is
 * left, then see LC_ECLOSED. A queue can also close itself when its last
 * registered producer finishes (lc_queue_add_producer / _producer_done), so
 * that a stage with several workers closes its output exactly once.
 *
 * Metrics. `put` counts items that entered the queue (an item dropped by
 * DROP_NEWEST never did; one evicted by KEEP_NEWEST did, and counts a drop
 * when it leaves). put, get and drop counters grow until lc_queue_flush_counters()
 * reads and resets them; the same call samples the fullness, so one sample is
 * taken per metrics flush.
 *
 * Wake-ups. Plain getters are woken at every item; block getters
 * (lc_queue_get_many) at the first item and when a block is there; putters
 * waiting for room when a quarter of the queue is free (queue.c says why).
 *
 * Load. Blocking calls take the caller's load meter and count only the time
 * actually spent waiting as idle.
 */
#ifndef LC_CORE_QUEUE_H
#define LC_CORE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lc_load_meter;

typedef struct lc_item_type {
    const char *name;            /* "chunk", "frame", ... */
    size_t size;                 /* bytes per item */
    void (*dispose)(void *item); /* frees an item's heap data; may be NULL */
    const char *unit;            /* plural, for people: "chunks", "sources" */
} lc_item_type;

typedef enum lc_overflow {
    LC_OVERFLOW_BLOCK = 0,
    LC_OVERFLOW_DROP_NEWEST = 1,
    LC_OVERFLOW_KEEP_NEWEST = 2,
} lc_overflow;

typedef struct lc_queue lc_queue;

typedef struct lc_queue_counters {
    uint64_t put;
    uint64_t get;
    uint64_t drop;
    size_t size; /* fullness sampled at the flush */
    size_t capacity;
} lc_queue_counters;

/* capacity >= 1. The name and type are copied by reference: they must
 * outlive the queue (string literals and static types do). */
lc_queue *lc_queue_new(const char *name, const lc_item_type *type, size_t capacity,
                       lc_overflow overflow);
/* Disposes of any items still queued. NULL is fine. No thread may be using it. */
void lc_queue_free(lc_queue *q);

/* 0 when the queue took the item (it may have been dropped by the policy),
 * LC_ECLOSED when closed (the caller keeps the item). */
int lc_queue_put(lc_queue *q, const void *item, struct lc_load_meter *meter);
/* Put n items (an array of them) under one lock, waiting for room as
 * lc_queue_put does; *taken says how many the queue took (all of them, or
 * fewer with LC_ECLOSED: the caller keeps the rest). For the stages that
 * move many small items: one lock and at most a wake-up or two a block. */
int lc_queue_put_many(lc_queue *q, const void *items, size_t n, size_t *taken,
                      struct lc_load_meter *meter);
/* Non-blocking: -EAGAIN instead of waiting for room (ignores the policy). */
int lc_queue_try_put(lc_queue *q, const void *item);
/* 0 with an item in *out, or LC_ECLOSED when closed and drained. */
int lc_queue_get(lc_queue *q, void *out, struct lc_load_meter *meter);
/* Up to max items into out (an array), at least one: 0 and *got > 0, or
 * LC_ECLOSED (*got 0) when closed and drained. It waits for a block (max
 * items, or a quarter of the queue if less) rather than waking for every
 * item, but once an item is there, at most LC_QUEUE_BLOCK_WAIT_NS more:
 * items are never held back longer than that. */
#define LC_QUEUE_BLOCK_WAIT_NS 2000000ull
int lc_queue_get_many(lc_queue *q, void *out, size_t max, size_t *got, struct lc_load_meter *meter);
/* Non-blocking: what is there, up to max (0 and *got > 0), else -EAGAIN
 * (open) or LC_ECLOSED (closed and drained). */
int lc_queue_try_get_many(lc_queue *q, void *out, size_t max, size_t *got);
/* The same, also saying how many discards the queue had had when the
 * items were taken (lc_queue_discard). */
int lc_queue_get_many_at(lc_queue *q, void *out, size_t max, size_t *got,
                         struct lc_load_meter *meter, uint64_t *discards);
int lc_queue_try_get_many_at(lc_queue *q, void *out, size_t max, size_t *got, uint64_t *discards);
/* Non-blocking: -EAGAIN when empty and open. */
int lc_queue_try_get(lc_queue *q, void *out);
/* Like lc_queue_get but gives up at the monotonic deadline with -ETIMEDOUT. */
int lc_queue_get_until(lc_queue *q, void *out, struct lc_load_meter *meter, uint64_t deadline_ns);

/* Drop every item queued now (disposed of, counted as drops) and wake the
 * putters: what a stage downstream takes next is what comes after. A put
 * waiting for room then drops its items too (they were on their way in;
 * the put returns 0, as for a dropping policy). Returns how many were
 * queued. Items a getter took before stay its own: a getter that keeps
 * blocks (stages/stage.h's inbox) compares lc_queue_discards with the
 * count at its take (the _at variants above) to tell. */
size_t lc_queue_discard(lc_queue *q);
uint64_t lc_queue_discards(lc_queue *q);

void lc_queue_close(lc_queue *q);
bool lc_queue_closed(lc_queue *q);
void lc_queue_add_producer(lc_queue *q);
/* When the last registered producer is done, the queue closes. */
void lc_queue_producer_done(lc_queue *q);

void lc_queue_flush_counters(lc_queue *q, lc_queue_counters *out);
size_t lc_queue_size(lc_queue *q);
size_t lc_queue_capacity(const lc_queue *q);
const char *lc_queue_name(const lc_queue *q);
const lc_item_type *lc_queue_item_type(const lc_queue *q);
lc_overflow lc_queue_overflow(const lc_queue *q);

const char *lc_overflow_name(lc_overflow o);
bool lc_overflow_parse(const char *name, lc_overflow *out);

#endif
