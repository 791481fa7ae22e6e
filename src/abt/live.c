/*
 * src/abt/live.c: the set of live heap objects of the layer whose handles
 * are plain pointers to memory it allocated (sync objects, attributes,
 * configurations, timers, pool definitions).
 *
 * Their free calls look the handle up here first, so a handle freed
 * already (a copy of it), one that never came from a create call (a
 * static initialiser's memory, a foreign pointer) or one of another kind
 * is refused with the call's ABT_ERR_INV_* code instead of reaching
 * free(). The set is process-wide and outlives ABT_finalize, as the
 * objects may. It is split into shards by address, each an open-addressed
 * table under its own lock, so creating and freeing objects on different
 * streams seldom meet.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "abt_internal.h"

#define SHARDS 32
#define EMPTY ((uintptr_t)0)
#define GONE ((uintptr_t)1) /* a removed entry: probing goes on past it */

struct shard {
    pthread_mutex_t lock;
    size_t cap;   /* a power of two, or 0 */
    size_t used;  /* entries that are not EMPTY (live and GONE) */
    size_t live;  /* live entries */
    uintptr_t *key; /* the object's address, its kind in the low 4 bits */
} __attribute__((aligned(64)));

static struct shard shards[SHARDS] = {
    [0 ... SHARDS - 1] = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, NULL}};

static uint64_t mix(uintptr_t p)
{
    uint64_t h = (uint64_t)p >> 4;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h;
}

static struct shard *shard_of(uint64_t h)
{
    return &shards[h % SHARDS];
}

/* An entry: the address, shifted, with the kind in the low 4 bits (never
 * EMPTY or GONE: the kind is at least 1 and the address not NULL). */
static uintptr_t key_of(const void *p, enum abtx_live_kind kind)
{
    return (uintptr_t)p << 4 | (uintptr_t)kind;
}

/* The slot of k in s (s->cap > 0), or of the first EMPTY one met. */
static size_t find(const struct shard *s, uintptr_t k, uint64_t h)
{
    size_t mask = s->cap - 1, i = (size_t)(h / SHARDS) & mask;
    while (s->key[i] != EMPTY && s->key[i] != k)
        i = (i + 1) & mask;
    return i;
}

/* Rehashes s without its GONE entries, into a table twice as large when
 * more than a quarter of it is live. */
static bool grow(struct shard *s)
{
    size_t ncap = !s->cap ? 64 : 4 * s->live >= s->cap ? s->cap * 2 : s->cap;
    uintptr_t *nk = calloc(ncap, sizeof(*nk));
    if (!nk)
        return false;
    uintptr_t *old = s->key;
    size_t ocap = s->cap;
    s->key = nk;
    s->cap = ncap;
    s->used = 0;
    for (size_t i = 0; i < ocap; i++) {
        uintptr_t k = old[i];
        if (k == EMPTY || k == GONE)
            continue;
        s->key[find(s, k, mix(k >> 4))] = k;
        s->used++;
    }
    s->live = s->used;
    free(old);
    return true;
}

bool abtx_live_add(const void *p, enum abtx_live_kind kind)
{
    uint64_t h = mix((uintptr_t)p);
    struct shard *s = shard_of(h);
    uintptr_t k = key_of(p, kind);
    pthread_mutex_lock(&s->lock);
    bool ok = true;
    if (2 * (s->used + 1) > s->cap)
        ok = grow(s);
    if (ok) {
        /* Once: static memory may be added again after it was left
         * unfreed (an eventual in automatic storage). The entry goes to
         * the first GONE slot on its way, else to the EMPTY one. */
        size_t mask = s->cap - 1, i = (size_t)(h / SHARDS) & mask;
        size_t slot = SIZE_MAX;
        while (s->key[i] != EMPTY && s->key[i] != k) {
            if (s->key[i] == GONE && slot == SIZE_MAX)
                slot = i;
            i = (i + 1) & mask;
        }
        if (s->key[i] != k) {
            if (slot == SIZE_MAX) {
                slot = i;
                s->used++;
            }
            s->key[slot] = k;
            s->live++;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

bool abtx_live_remove(const void *p, enum abtx_live_kind kind)
{
    if (!p)
        return false;
    uint64_t h = mix((uintptr_t)p);
    struct shard *s = shard_of(h);
    uintptr_t k = key_of(p, kind);
    pthread_mutex_lock(&s->lock);
    bool found = false;
    if (s->cap) {
        size_t i = find(s, k, h);
        if (s->key[i] == k) {
            s->key[i] = GONE;
            s->live--;
            found = true;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

void *abtx_live_new(void *obj, enum abtx_live_kind kind)
{
    if (obj && !abtx_live_add(obj, kind)) {
        free(obj);
        return NULL;
    }
    return obj;
}

bool abtx_live_free(void *handle_ptr, enum abtx_live_kind kind)
{
    void **pp = handle_ptr;
    if (!pp || !abtx_live_remove(*pp, kind))
        return false;
    free(*pp);
    *pp = NULL;
    return true;
}
