/*
 * test_shared: objects shared by reference (core/shared.h), as the
 * pipeline publishes its snapshots. One publisher replaces the shared
 * object many times while readers take it, read it whole and drop it; every
 * object is destroyed exactly once, after its last reader, and readers
 * always see an object whole (run under ThreadSanitizer and ASan too).
 */
#include "check.h"
#include "core/shared.h"
#include "core/thread.h"

#include <stdatomic.h>
#include <stdlib.h>

#define WORDS 64
#define ROUNDS 20000
#define READERS 3

static atomic_uint made, destroyed;

typedef struct obj {
    unsigned words[WORDS]; /* every word the same: a torn read shows */
} obj;

static void destroy(void *p)
{
    obj *o = p;
    for (int i = 0; i < WORDS; i++)
        o->words[i] = 0xdeadu; /* a reader after this would see it */
    free(o);
    atomic_fetch_add(&destroyed, 1);
}

static lc_shared *make(unsigned v)
{
    obj *o = malloc(sizeof *o);
    for (int i = 0; i < WORDS; i++)
        o->words[i] = v;
    atomic_fetch_add(&made, 1);
    return lc_shared_new(o, destroy);
}

static pthread_mutex_t mu;
static lc_shared *current;
static atomic_bool done;
static atomic_uint torn;

static void *reader(void *arg)
{
    (void)arg;
    while (!atomic_load(&done)) {
        lc_mutex_lock(&mu);
        lc_shared *s = lc_shared_ref(current);
        lc_mutex_unlock(&mu);
        const obj *o = lc_shared_get(s);
        for (int i = 1; i < WORDS; i++)
            if (o->words[i] != o->words[0] || o->words[i] == 0xdeadu)
                atomic_fetch_add(&torn, 1);
        lc_shared_unref(s);
    }
    return NULL;
}

int main(void)
{
    lc_mutex_init(&mu);
    current = make(1);
    lc_thread threads[READERS];
    for (int i = 0; i < READERS; i++)
        lc_thread_start(&threads[i], "reader", reader, NULL);
    for (unsigned v = 2; v < ROUNDS; v++) {
        lc_shared *fresh = make(v);
        lc_mutex_lock(&mu);
        lc_shared *old = current;
        current = fresh;
        lc_mutex_unlock(&mu);
        lc_shared_unref(old);
    }
    atomic_store(&done, true);
    for (int i = 0; i < READERS; i++)
        lc_thread_join(&threads[i]);
    CHECK_EQ_U64(atomic_load(&torn), 0);
    CHECK_EQ_U64(atomic_load(&destroyed), atomic_load(&made) - 1);
    lc_shared_unref(current);
    CHECK_EQ_U64(atomic_load(&destroyed), atomic_load(&made));
    CHECK(lc_shared_ref(NULL) == NULL);
    lc_shared_unref(NULL);
    lc_mutex_destroy(&mu);
    return check_finish();
}
