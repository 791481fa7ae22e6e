/*
 * src/pool/pool.h: the pool record and its inline operations.
 *
 * Room plaque. A pool is a doubly-linked list of units (FIFO or LIFO)
 * with a test-and-test-and-set lock that private pools never take. `size`
 * is atomic so idle schedulers and thieves can see "empty" without touching
 * the lock's line. `sleepers` lists the parked schedulers that a push must
 * wake; it is only changed under the lock, which is what makes "check empty,
 * then sleep" race-free against "push, then check sleepers".
 *
 * Ends: `head` is where units are pushed for both kinds; pop takes from the
 * head (LIFO) or the tail (FIFO); a yielding unit is queued at the end that
 * pop reaches last; a thief takes from the end the owner reaches last.
 */
#ifndef COEXEC_POOL_POOL_H
#define COEXEC_POOL_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "arch/atomic.h"
#include "core/compiler.h"
#include "core/spin.h"
#include "thread/unit.h"

struct sleeper {
    struct sleeper *next, *prev;
    struct coexec_xstream_rec *xs;
    bool linked;
};

struct coexec_pool_rec {
    atom_u32_t lock;
    uint8_t kind;      /* coexec_pool_kind_t */
    uint8_t access;    /* coexec_pool_access_t */
    uint8_t shared;    /* takes the lock (every mode but PRIV) */
    uint8_t stealable; /* a default pool other streams may steal from */
    struct coexec_unit_rec *head;
    struct coexec_unit_rec *tail;
    atom_u64_t size;
    struct sleeper *sleepers;
    /* A retired default pool: pushes go here instead (under the lock). */
    struct coexec_pool_rec *forward;
    /* Cold fields. */
    atom_u64_t gen CACHE_ALIGNED;
    atom_u32_t nscheds;       /* schedulers using this pool */
    uint8_t user_created;
    uint8_t live; /* made and not yet released (under coexec__g.lock) */
    atom_ptr_t producer;      /* access checks: the bound producer thread */
    atom_ptr_t consumer;      /* ... and consumer thread */
    struct coexec_xstream_rec *owner_xs; /* stream whose scheduler uses it */
    struct coexec_pool_rec *free_next;
    struct coexec_pool_rec *all_next; /* list of every record, for finalize */
};

static ALWAYS_INLINE void pool_lock(struct coexec_pool_rec *p)
{
    spin_lock(&p->lock);
}

static ALWAYS_INLINE void pool_unlock(struct coexec_pool_rec *p)
{
    spin_unlock(&p->lock);
}

/* List operations; the caller holds the lock (or owns a private pool). */
static ALWAYS_INLINE void list_push_head(struct coexec_pool_rec *p,
                                         struct coexec_unit_rec *u)
{
    u->prev = NULL;
    u->next = p->head;
    if (p->head)
        p->head->prev = u;
    else
        p->tail = u;
    p->head = u;
    u->in_pool = 1;
    atom_store_rlx_u64(&p->size, atom_load_rlx_u64(&p->size) + 1);
}

static ALWAYS_INLINE void list_push_tail(struct coexec_pool_rec *p,
                                         struct coexec_unit_rec *u)
{
    u->next = NULL;
    u->prev = p->tail;
    if (p->tail)
        p->tail->next = u;
    else
        p->head = u;
    p->tail = u;
    u->in_pool = 1;
    atom_store_rlx_u64(&p->size, atom_load_rlx_u64(&p->size) + 1);
}

static ALWAYS_INLINE void list_unlink(struct coexec_pool_rec *p,
                                      struct coexec_unit_rec *u)
{
    if (u->prev)
        u->prev->next = u->next;
    else
        p->head = u->next;
    if (u->next)
        u->next->prev = u->prev;
    else
        p->tail = u->prev;
    u->next = u->prev = NULL;
    u->in_pool = 0;
    atom_store_rlx_u64(&p->size, atom_load_rlx_u64(&p->size) - 1);
}

/* Out-of-line parts (src/pool/pool.c). */
void coexec__pool_wake_sleepers_locked(struct coexec_pool_rec *p);
struct coexec_unit_rec *coexec__pool_steal(struct coexec_pool_rec *p,
                                           struct coexec_xstream_rec *xs);
bool coexec__pool_sleep_register(struct coexec_pool_rec *p,
                                 struct sleeper *s);
void coexec__pool_sleep_unregister(struct coexec_pool_rec *p,
                                   struct sleeper *s);
struct coexec_pool_rec *coexec__pool_new(int kind, int access);
struct coexec_pool_rec *coexec__pool_new_default(void);
void coexec__pool_retire(struct coexec_pool_rec *p, struct coexec_pool_rec *to);
void coexec__pool_release(struct coexec_pool_rec *p);
int coexec__pool_check_access(struct coexec_pool_rec *p, bool push);
void coexec__pool_free_all(void);
int coexec__pool_count_user_live(void);

/* Access-mode check of a push or pop by the calling thread: only in
 * builds with COEXEC_CHECKS; free otherwise. */
static ALWAYS_INLINE int pool_check(struct coexec_pool_rec *p, bool push)
{
#ifdef COEXEC_CHECKS
    return coexec__pool_check_access(p, push);
#else
    (void)p;
    (void)push;
    return 0;
#endif
}

/* Queues u in p (its new home pool). LIFO: new units at the head, yielders
 * at the tail. FIFO: everything at the head; pop takes the tail. */
static ALWAYS_INLINE void coexec__pool_push(struct coexec_pool_rec *p,
                                            struct coexec_unit_rec *u,
                                            bool yield_end)
{
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
    if (!p->shared) {
        atom_store_rlx_ptr(&u->pool, p);
        if (yield_end && p->kind == COEXEC_POOL_LIFO)
            list_push_tail(p, u);
        else
            list_push_head(p, u);
        return;
    }
    pool_lock(p);
    while (UNLIKELY(p->forward != NULL)) {
        /* The stream this default pool served is gone: follow it. */
        struct coexec_pool_rec *to = p->forward;
        pool_unlock(p);
        p = to;
        pool_lock(p);
    }
    atom_store_rlx_ptr(&u->pool, p);
    bool at_tail = yield_end && p->kind == COEXEC_POOL_LIFO;
    if (at_tail)
        list_push_tail(p, u);
    else
        list_push_head(p, u);
    if (UNLIKELY(p->sleepers != NULL))
        coexec__pool_wake_sleepers_locked(p);
    pool_unlock(p);
}

/* The locked half of a push: p's lock is held (or p is private). */
static ALWAYS_INLINE void pool_push_locked(struct coexec_pool_rec *p,
                                           struct coexec_unit_rec *u,
                                           bool yield_end)
{
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
    atom_store_rlx_ptr(&u->pool, p);
    if (yield_end && p->kind == COEXEC_POOL_LIFO)
        list_push_tail(p, u);
    else
        list_push_head(p, u);
    if (UNLIKELY(p->sleepers != NULL))
        coexec__pool_wake_sleepers_locked(p);
}

/* May xs take u? Units bound to a stream (the main ULT) stay there. */
static ALWAYS_INLINE bool pool_may_take(struct coexec_unit_rec *u,
                                        struct coexec_xstream_rec *xs)
{
    return !(u->flags & UF_NOSTEAL) || u->bound_xs == xs;
}

static ALWAYS_INLINE struct coexec_unit_rec *
pool_take_from(struct coexec_pool_rec *p, struct coexec_xstream_rec *xs,
               bool from_tail)
{
    struct coexec_unit_rec *u = from_tail ? p->tail : p->head;
    while (UNLIKELY(u && !pool_may_take(u, xs)))
        u = from_tail ? u->prev : u->next;
    if (u)
        list_unlink(p, u);
    return u;
}

/* Takes the next unit for xs (NULL: an external thread), or NULL. */
static ALWAYS_INLINE struct coexec_unit_rec *
coexec__pool_pop(struct coexec_pool_rec *p, struct coexec_xstream_rec *xs)
{
    /* Relaxed: an empty-looking pool is simply tried again later; the lock
     * orders everything that matters. */
    if (atom_load_rlx_u64(&p->size) == 0)
        return NULL;
    bool tail = p->kind == COEXEC_POOL_FIFO;
    if (!p->shared)
        return pool_take_from(p, xs, tail);
    pool_lock(p);
    struct coexec_unit_rec *u = pool_take_from(p, xs, tail);
    pool_unlock(p);
    return u;
}

/* Removes u from p if it is still queued there and has never run (join in
 * place). RF_STARTED is read under the lock that the runner's later push
 * released, so the read is ordered after the runner set it. */
static ALWAYS_INLINE bool coexec__pool_remove(struct coexec_pool_rec *p,
                                              struct coexec_unit_rec *u)
{
    if (!p->shared) {
        if (!u->in_pool || unit_pool(u) != p || (u->rflags & RF_STARTED))
            return false;
        list_unlink(p, u);
        return true;
    }
    pool_lock(p);
    bool ok = u->in_pool && unit_pool(u) == p && !(u->rflags & RF_STARTED);
    if (ok)
        list_unlink(p, u);
    pool_unlock(p);
    return ok;
}

#endif /* COEXEC_POOL_POOL_H */
