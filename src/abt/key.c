/*
 * src/abt/key.c: ABT_key, the work-unit-specific values of libcoexec-abt.
 *
 * Argobots lets any thread read and set the values of any work unit, ULT
 * or tasklet, atomically. libcoexec's own keys (coexec/key.h) belong to the
 * calling ULT only, so the layer keeps its values itself, in the unit's
 * record: a table indexed by the key's slot, each value tagged with the
 * generation of the key it was set under (a slot freed and reused by a new
 * key does not show the old key's values). A record's table is read and
 * changed under the record's own small lock, so a set from another stream
 * and the unit's own get see each other whole. Destructors run when the
 * record is released (ABT_thread_free, the end of a detached unit, or
 * ABT_finalize for the main ULT), as in Argobots: for every non-NULL
 * value, with the destructor its key had when the value was set, even if
 * the key was freed since. A value of a freed key whose slot a new key
 * took over, and that the new key's set replaced, waits for that release
 * in the table's list of orphans. The same table holds the unit's
 * migration callback (ABT_thread_set_callback), if any.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "abt_internal.h"

#define KEY_BITS 12
#define KEYS_MAX (1u << KEY_BITS)

/* A key's handle points to no memory: it is its slot and the slot's
 * generation when it was made, (gen << KEY_BITS | slot) << 1 | 1. So a
 * key freed already (or a copy of it), ABT_KEY_NULL and any other value
 * are refused by comparing numbers, never by reading memory that may have
 * been freed. (Pointers to memory are even; a handle is odd.) */
static ABT_key key_make(uint32_t slot, uint32_t gen)
{
    return (ABT_key)(((uintptr_t)gen << KEY_BITS | slot) << 1 | 1);
}

static uint32_t kslot(ABT_key k)
{
    return (uint32_t)((uintptr_t)k >> 1) & (KEYS_MAX - 1);
}

static uint32_t kgen(ABT_key k)
{
    return (uint32_t)((uintptr_t)k >> (KEY_BITS + 1));
}

/* A value whose entry a newer key's set took over, kept for its
 * destructor. */
struct abtx_orphan {
    struct abtx_orphan *next;
    void (*dtor)(void *);
    void *value;
};

struct abtx_ktab {
    /* ABT_thread_set_callback: called by each ABT_thread_migrate_* call
     * once coexec accepted the move (src/abt/thread.c); kept here, beside
     * the values, since few units have one. */
    void (*mig_cb)(ABT_thread, void *);
    void *mig_arg;
    struct abtx_orphan *orphans;
    uint32_t cap;
    struct {
        void *value;
        void (*dtor)(void *); /* its key's destructor at the set */
        uint32_t gen;         /* the key's generation when value was set */
    } e[];
};

/* Slot i's generation (odd: a key lives there); changed under
 * abtx_lock, read by atomics. Generations only grow, also across
 * ABT_finalize and ABT_init, so an old key is never valid again. */
static atomic_uint slot_gen[KEYS_MAX];
/* The destructor of the live key of each slot. */
static void (*_Atomic slot_dtor[KEYS_MAX])(void *);

static void klock(ABT_thread t)
{
    while (atomic_flag_test_and_set_explicit(&t->klock, memory_order_acquire))
        sched_yield();
}

static void kunlock(ABT_thread t)
{
    atomic_flag_clear_explicit(&t->klock, memory_order_release);
}

static bool key_live(ABT_key k)
{
    if (!((uintptr_t)k & 1))
        return false;
    uint32_t i = kslot(k);
    return key_make(i, atomic_load_explicit(&slot_gen[i],
                                            memory_order_acquire)) == k;
}

int ABT_key_create(void (*destructor)(void *value), ABT_key *newkey)
{
    ABTX_CHECK_INIT();
    if (!newkey)
        return ABT_ERR_INV_ARG;
    ABT_key k = ABT_KEY_NULL;
    pthread_mutex_lock(&abtx_lock);
    for (uint32_t i = 0; i < KEYS_MAX; i++) {
        unsigned g = atomic_load_explicit(&slot_gen[i], memory_order_relaxed);
        if (!(g & 1)) {
            atomic_store_explicit(&slot_dtor[i], destructor,
                                  memory_order_relaxed);
            atomic_store_explicit(&slot_gen[i], g + 1, memory_order_release);
            k = key_make(i, g + 1);
            break;
        }
    }
    pthread_mutex_unlock(&abtx_lock);
    if (!k)
        return ABT_ERR_MEM; /* every slot is taken */
    *newkey = k;
    return ABT_SUCCESS;
}

int ABT_key_free(ABT_key *key)
{
    if (!key || !key_live(*key))
        return ABT_ERR_INV_KEY;
    ABT_key k = *key;
    pthread_mutex_lock(&abtx_lock);
    /* Values units still hold stay, for their destructors at the units'
     * release (as in Argobots). Only the live key moves the generation
     * on: of two frees of copies of k, one succeeds. */
    unsigned g = kgen(k);
    bool ok = atomic_compare_exchange_strong_explicit(
        &slot_gen[kslot(k)], &g, g + 1, memory_order_acq_rel,
        memory_order_relaxed);
    pthread_mutex_unlock(&abtx_lock);
    if (!ok)
        return ABT_ERR_INV_KEY;
    *key = ABT_KEY_NULL;
    return ABT_SUCCESS;
}

/* t's value of k (NULL if none). */
static void *kget(ABT_thread t, ABT_key k)
{
    klock(t);
    struct abtx_ktab *tab = t->keys;
    uint32_t i = kslot(k);
    void *v = tab && i < tab->cap && tab->e[i].gen == kgen(k)
                  ? tab->e[i].value
                  : NULL;
    kunlock(t);
    return v;
}

static int kset(ABT_thread t, ABT_key k, void *value)
{
    uint32_t i = kslot(k), gen = kgen(k);
    void (*dtor)(void *) =
        atomic_load_explicit(&slot_dtor[i], memory_order_relaxed);
    klock(t);
    struct abtx_ktab *tab = t->keys;
    if (!tab || tab->cap <= i) {
        uint32_t cap = tab ? tab->cap : 0, ncap = cap ? cap : 8;
        while (ncap <= i)
            ncap *= 2;
        struct abtx_ktab *n =
            realloc(tab, sizeof(*n) + ncap * sizeof(n->e[0]));
        if (!n) {
            kunlock(t);
            return ABT_ERR_MEM;
        }
        if (!tab)
            n->mig_cb = NULL, n->mig_arg = NULL, n->orphans = NULL;
        memset(&n->e[cap], 0, (ncap - cap) * sizeof(n->e[0]));
        n->cap = ncap;
        t->keys = tab = n;
        abtx_rec_cold(t);
    }
    if (tab->e[i].gen != gen && tab->e[i].value &&
        tab->e[i].dtor) {
        /* A freed key's value in this slot: kept for its destructor. */
        struct abtx_orphan *o = malloc(sizeof(*o));
        if (!o) {
            kunlock(t);
            return ABT_ERR_MEM;
        }
        o->dtor = tab->e[i].dtor;
        o->value = tab->e[i].value;
        o->next = tab->orphans;
        tab->orphans = o;
    }
    tab->e[i].value = value;
    tab->e[i].dtor = dtor;
    tab->e[i].gen = gen;
    kunlock(t);
    return ABT_SUCCESS;
}

int abtx_mig_cb_set(ABT_thread t, void (*cb)(ABT_thread, void *), void *arg)
{
    klock(t);
    if (!t->keys && cb) {
        struct abtx_ktab *n = malloc(sizeof(*n));
        if (!n) {
            kunlock(t);
            return ABT_ERR_MEM;
        }
        n->cap = 0;
        n->orphans = NULL;
        t->keys = n;
        abtx_rec_cold(t);
    }
    if (t->keys) {
        t->keys->mig_cb = cb;
        t->keys->mig_arg = arg;
    }
    kunlock(t);
    return ABT_SUCCESS;
}

void abtx_mig_cb_get(ABT_thread t, void (**cb)(ABT_thread, void *), void **arg)
{
    klock(t);
    *cb = t->keys ? t->keys->mig_cb : NULL;
    *arg = t->keys ? t->keys->mig_arg : NULL;
    kunlock(t);
}

void abtx_keys_release(ABT_thread t)
{
    /* Rounds, for destructors that set values again (as POSIX does). */
    for (int round = 0; round < 4 && t->keys; round++) {
        klock(t);
        struct abtx_ktab *tab = t->keys;
        t->keys = NULL;
        kunlock(t);
        for (uint32_t i = 0; i < tab->cap; i++) {
            void *v = tab->e[i].value;
            if (v && tab->e[i].dtor)
                tab->e[i].dtor(v);
        }
        for (struct abtx_orphan *o = tab->orphans, *n; o; o = n) {
            n = o->next;
            o->dtor(o->value);
            free(o);
        }
        free(tab);
    }
    if (t->keys) {
        for (struct abtx_orphan *o = t->keys->orphans, *n; o; o = n) {
            n = o->next;
            free(o);
        }
        free(t->keys);
        t->keys = NULL;
    }
}

/* The calling unit's record: a ULT's, a tasklet's, the main ULT's or a
 * user scheduler's; NULL from an external thread. */
static int self_rec(ABT_thread *out)
{
    ABT_thread t = abtx_cur_get();
    if (!t)
        return ABT_ERR_INV_XSTREAM;
    *out = t;
    return ABT_SUCCESS;
}

int ABT_key_set(ABT_key key, void *value)
{
    ABTX_CHECK_INIT();
    if (!key_live(key))
        return ABT_ERR_INV_KEY;
    ABT_thread t;
    int rc = self_rec(&t);
    return rc ? rc : kset(t, key, value);
}

int ABT_key_get(ABT_key key, void **value)
{
    ABTX_CHECK_INIT();
    if (!key_live(key))
        return ABT_ERR_INV_KEY;
    if (!value)
        return ABT_ERR_INV_ARG;
    ABT_thread t;
    int rc = self_rec(&t);
    if (!rc)
        *value = kget(t, key);
    return rc;
}

int ABT_self_set_specific(ABT_key key, void *value)
{
    return ABT_key_set(key, value);
}

int ABT_self_get_specific(ABT_key key, void **value)
{
    return ABT_key_get(key, value);
}

int ABT_thread_set_specific(ABT_thread thread, ABT_key key, void *value)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    if (!key_live(key))
        return ABT_ERR_INV_KEY;
    return kset(thread, key, value);
}

int ABT_thread_get_specific(ABT_thread thread, ABT_key key, void **value)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    if (!key_live(key))
        return ABT_ERR_INV_KEY;
    if (!value)
        return ABT_ERR_INV_ARG;
    *value = kget(thread, key);
    return ABT_SUCCESS;
}
