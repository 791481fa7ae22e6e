/*
 * src/pool/pool.h: the pool record and its inline operations.
 *
 * Room plaque. A pool is a doubly-linked list of units (FIFO or LIFO)
 * with a test-and-test-and-set lock that private pools never take. `size`
 * is atomic so idle schedulers and thieves can see "empty" without touching
 * the lock's line. `sleepers` lists the parked schedulers that a push must
 * wake; it is only changed under the lock, which is what makes "check empty,
 * then sleep" race-free against "push, then check sleepers". Parked
 * thieves (streams that steal from every default pool) are not listed one
 * by one: they wait in one global set, and `thief_mark`, linked among the
 * sleepers of a default pool, stands for all of them: a push that finds it
 * wakes one thief (sleepers.c, "Parked thieves").
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
#include "arch/compiler.h"
#include "base/global.h"
#include "base/list.h"
#include "base/self.h"
#include "base/spin.h"
#include "pool/mailbox.h"
#include "thread/unit.h"

/* A parked scheduler waiting for a push: a stream (kicked) or, for a
 * stacked scheduler, its unit (woken). */
struct sleeper {
    struct sleeper *next, *prev;
    /* A stream: the mailbox whose park word a push kicks. A stacked
     * scheduler: the unit it runs in, and how to wake it (set by the
     * scheduler that registers: the pool does not know units' parking). */
    struct mailbox *mb;
    struct coexec_unit_rec *unit;
    void (*wake_unit)(struct coexec_unit_rec *unit);
    bool linked;
};

struct coexec_pool_rec {
    atom_u32_t lock;
    uint8_t kind;      /* coexec_pool_kind_t */
    uint8_t access;    /* coexec_pool_access_t */
    uint8_t shared;    /* takes the lock (every mode but PRIV) */
    uint8_t stealable; /* a default pool other streams may steal from */
    /* The owner bias of a shared list pool (pool_lock): the stream that
     * takes the lock's place without an atomic read-modify-write, NULL
     * while none has been granted, POOL_BIAS_OFF for a pool that always
     * locks (other kinds, private pools, a revoked bias, bias disabled);
     * and the owner's flag of a hold in progress. */
    atom_u32_t bias_in;
    atom_ptr_t bias;
    struct coexec_unit_rec *head;
    struct coexec_unit_rec *tail;
    atom_u64_t size;
    struct sleeper *sleepers;
    /* Kinds that are not a plain list (PRIO, DEQUE, USER): their operations
     * and state; NULL for FIFO and LIFO. */
    const struct pool_impl *impl;
    /* A retired pool: pushes go here instead (set under the lock; list
     * pools read it under the lock or, private, on the owner's thread). */
    atom_ptr_t forward;
    void *istate;
    /* Cold fields. */
    atom_u64_t gen CACHE_ALIGNED;
    atom_u32_t nscheds;       /* schedulers using this pool */
    atom_u32_t has_sleepers;  /* sleepers != NULL (changed under the lock) */
    atom_u32_t nrun;          /* running schedulers that take from it */
    atom_u32_t home_cpu;      /* 1 + CPU of the last stream that claimed it */
    atom_u64_t stolen;        /* units schedulers stole from it (stats) */
    /* List pools: how many queued units are bound to a stream (UF_NOSTEAL:
     * posted tasklets, main ULTs), which no thief may take; changed with
     * the list (under the lock, or by a private pool's owner). A thief
     * passes a pool holding nothing else by without taking its lock. */
    atom_u64_t nbound;
    struct sleeper thief_mark; /* in `sleepers`: thieves park (pool.c) */
    uint8_t user_created;
    uint8_t live; /* made and not yet released (under coexec__g.lock) */
    atom_ptr_t producer;      /* access checks: the bound producer thread */
    atom_ptr_t consumer;      /* ... and consumer thread */
    /* The stream whose scheduler uses it, for a private pool, and that
     * stream's mailbox; set (under the pool's lock) and cleared by
     * activations (sched/sched.c), read by any thread: only through
     * pool_owner and pool_owner_set. A private pool with an owner is
     * touched by its owner alone, without the lock; one without is
     * touched under the lock, as a shared one. */
    struct coexec_xstream_rec *owner_xs;
    struct mailbox *owner_mb;
    /* Threads that read owner_xs to send a unit to the owner's mailbox
     * and have not sent it yet (pool_send_begin/_end): the join that
     * reaps a stream waits for its pools' senders before it takes its
     * mailbox, so no unit is sent to a stream that is gone. */
    atom_u32_t senders;
    struct coexec_pool_rec *free_next;
    struct coexec_pool_rec *all_next; /* list of every record, for finalize */
};

static inline struct coexec_xstream_rec *
pool_owner(const struct coexec_pool_rec *p)
{
    return __atomic_load_n(&p->owner_xs, __ATOMIC_ACQUIRE);
}

/* A sender counts itself, then looks at the owner (seq_cst both, against
 * the owner's removal in pool_owner_set followed by the join's look at
 * the senders in coexec__pool_senders_wait): either the join waits for
 * this sender, or the sender sees the owner gone. */
static inline struct coexec_xstream_rec *
pool_send_begin(struct coexec_pool_rec *p)
{
    atom_fadd_sc_u32(&p->senders, 1);
    return __atomic_load_n(&p->owner_xs, __ATOMIC_SEQ_CST);
}

/* The unit is in the owner's mailbox (or was not sent). */
static inline void pool_send_end(struct coexec_pool_rec *p)
{
    atom_fsub_rel_u32(&p->senders, 1);
}

/* mb: the mailbox of xs (NULL with it). */
static inline void pool_owner_set(struct coexec_pool_rec *p,
                                  struct coexec_xstream_rec *xs,
                                  struct mailbox *mb)
{
    /* The mailbox stays when the owner goes: a reader that saw the owner
     * finds its mailbox (stream records are never freed). */
    if (mb)
        __atomic_store_n(&p->owner_mb, mb, __ATOMIC_RELAXED);
    __atomic_store_n(&p->owner_xs, xs, __ATOMIC_SEQ_CST);
}

/* Must a thread on stream xs (NULL: none) take p's lock to touch its
 * list? Everyone but a private pool's owner must: a shared pool's users,
 * and anyone using a private pool that no stream owns. (A private pool
 * gets an owner only under the lock, and loses it on the owner's own
 * thread or once that thread is gone, so the answer holds from a lock to
 * its unlock.) */
static inline bool pool_must_lock(const struct coexec_pool_rec *p,
                                  const struct coexec_xstream_rec *xs)
{
    return p->shared || !xs || pool_owner(p) != xs;
}

/* With p's lock held: may the holder touch p's list? Not a private pool
 * that a stream took over since the holder looked (its owner's alone). */
static inline bool pool_list_locked_ok(const struct coexec_pool_rec *p)
{
    return p->shared || !pool_owner(p);
}

/* Is p a private pool that a stream other than xs owns (whose list only
 * that stream may touch)? */
static inline bool pool_foreign(const struct coexec_pool_rec *p,
                                const struct coexec_xstream_rec *xs)
{
    if (p->shared)
        return false;
    struct coexec_xstream_rec *o = pool_owner(p);
    return o && o != xs;
}

/* Default pools other streams may steal from (src/pool/pool.c; written by
 * the stream registry under coexec__g.lock, read by any stream without it;
 * entries are type-stable pool records). */
struct coexec__steal_registry {
    atom_ptr_t pools[MAX_XSTREAMS];
    atom_u32_t num;
};
extern struct coexec__steal_registry coexec__steal;

/*
 * A pool kind that is not a plain list: PRIO (src/pool/prio.c), DEQUE
 * (src/pool/deque.c) and USER (src/pool/user.c). The generic operations
 * below dispatch to it when p->impl is set. The contract of every entry:
 *  - push(p, u, how): the caller has set u's home (u->pool = p) and state;
 *    the impl queues u, sets u->in_pool = 1, keeps p->size equal to the
 *    number queued (unless it has a size entry: pool_size() is how
 *    everyone reads the count), and
 *    wakes parked schedulers: pool_wake_sleepers(p) after the unit is
 *    visible to pop. `how` is a coexec_push_kind_t (NEW, YIELD, WAKE).
 *    Returns true when the pusher is the stream that owns p (a DEQUE's
 *    owner): a pool is only retired or forwarded by its owner's thread,
 *    so such a push cannot race with that and skips the re-check.
 *  - pop(p, xs): the next unit xs may run (pool_may_take), or NULL); clears
 *    u->in_pool. xs is NULL for an external thread.
 *  - remove(p, u, started_ok): takes u out if it is queued in p and,
 *    unless started_ok, has not started (RF_STARTED clear); false
 *    otherwise. NULL: never removable.
 *  - steal(p, xs, into): a unit for thief xs from the end the owner reaches
 *    last, skipping units pool_may_steal refuses; with a steal-half option
 *    the impl may take more and push the extra ones into `into` (the
 *    thief's pool; coexec__pool_push). NULL: thieves never take from p.
 *  - drain(p): takes every queued unit, whatever its binding, and returns
 *    them linked through u->next, NULL-terminated; p is left empty.
 *  - fini(p): frees p->istate; p is empty.
 * Every entry may be called from any thread at any time the access mode
 * allows; the impl does its own locking (it may use p->lock).
 */
struct pool_impl {
    bool (*push)(struct coexec_pool_rec *p, struct coexec_unit_rec *u,
                 int how);
    struct coexec_unit_rec *(*pop)(struct coexec_pool_rec *p,
                                   struct coexec_xstream_rec *xs);
    bool (*remove)(struct coexec_pool_rec *p, struct coexec_unit_rec *u,
                   bool started_ok);
    struct coexec_unit_rec *(*steal)(struct coexec_pool_rec *p,
                                     struct coexec_xstream_rec *xs,
                                     struct coexec_pool_rec *into);
    struct coexec_unit_rec *(*drain)(struct coexec_pool_rec *p);
    void (*fini)(struct coexec_pool_rec *p);
    /* Optional: the number queued, for an impl that does not keep p->size
     * (a DEQUE: counting there would cost its owner locked instructions).
     * Right once the pushes and takes seen have completed; read after a
     * seq_cst fence it orders like a load of p->size. */
    uint64_t (*size)(struct coexec_pool_rec *p);
    /* Optional: calls visit(ctx, u) for each unit queued in p, holding
     * p->lock (coexec_pool_foreach); NULL: the kind cannot list them. */
    void (*foreach)(struct coexec_pool_rec *p,
                    void (*visit)(void *ctx, struct coexec_unit_rec *u),
                    void *ctx);
};

/* Built-in impls: set p->impl and p->istate; COEXEC_OK or COEXEC_ENOMEM. */
int coexec__prio_init(struct coexec_pool_rec *p, int levels, unsigned aging);
int coexec__deque_init(struct coexec_pool_rec *p, bool steal_half);
/* DEQUE: a scheduler using p starts running on xs, which becomes the
 * owner (the one stream that pushes and pops at the bottom without
 * locking) unless another stream owns p already. True when the scheduler
 * counts as one of the owner's, whose stop must then call: */
bool coexec__deque_set_owner(struct coexec_pool_rec *p,
                             struct coexec_xstream_rec *xs);
/* ... when that was the owner's last scheduler using p, the next one to
 * start, on any stream, becomes the owner. */
void coexec__deque_drop_owner(struct coexec_pool_rec *p,
                              struct coexec_xstream_rec *xs);

/*
 * The lock of every pool (what a list pool's list, size, sleepers and
 * forward are used under), biased towards one stream.
 *
 * An uncontended spin lock still costs an atomic read-modify-write per
 * hold, and a stream pushing into and taking from its own pool pays it
 * twice per unit while nobody else ever looks. So a shared list pool's
 * lock is granted, at the first hold by a stream, to that stream (its
 * bias): the owner then holds it by raising bias_in and checking that
 * the bias is still its own, with plain stores and loads; every other
 * thread revokes the bias once, for good, under the lock: it turns the
 * bias off, makes every running thread of the process execute a memory
 * barrier (membarrier(2), expedited), and waits for bias_in to fall. The
 * barrier is what the owner's side leaves out: after it, either the owner
 * sees the bias off and takes the lock like everyone else, or its raised
 * bias_in is visible to the revoker, which waits. A pool thus costs at
 * most one such barrier (a few microseconds) in its life; a pool used by
 * one stream, as a stream's own pool often is, never takes its lock.
 *
 * Off (the pool always locks) for impl kinds, private pools, and when the
 * runtime could not register for membarrier or COEXEC_POOL_BIAS is 0
 * (coexec__pool_bias_setup, at init).
 *
 * impl_lock/impl_unlock: the plain lock, for the impl kinds, whose bias is
 * always off.
 */
#define POOL_BIAS_OFF ((void *)1)

enum pool_hold { HOLD_NONE, HOLD_LOCK, HOLD_BIAS };

/* At init: whether new shared list pools may be biased (membarrier
 * registered, COEXEC_POOL_BIAS not 0). Called again in a forked child's
 * init. */
void coexec__pool_bias_setup(void);
/* With p's lock held by stream xs (NULL: none): grants p's bias to xs if
 * none was granted yet, or revokes another stream's (pool.c). */
void coexec__pool_bias_settle(struct coexec_pool_rec *p,
                              struct coexec_xstream_rec *xs);

static ALWAYS_INLINE void impl_lock(struct coexec_pool_rec *p)
{
    spin_lock(&p->lock);
}

static ALWAYS_INLINE void impl_unlock(struct coexec_pool_rec *p)
{
    spin_unlock(&p->lock);
}

/* Holds p by its bias, granted to xs (the caller's stream), unless a
 * revoker took it meanwhile (false). */
static ALWAYS_INLINE bool pool_bias_enter(struct coexec_pool_rec *p,
                                          struct coexec_xstream_rec *xs)
{
    atom_store_rlx_u32(&p->bias_in, 1);
    /* Compiler only: the revoker's membarrier orders the CPU. */
    compiler_barrier();
    if (LIKELY(atom_load_rlx_ptr(&p->bias) == (void *)xs))
        return true;
    atom_store_rel_u32(&p->bias_in, 0);
    return false;
}

/* Holds p's lock for the caller, on stream xs (NULL: not known; looked up
 * when it matters). xs must be the calling OS thread's stream. */
static ALWAYS_INLINE enum pool_hold pool_lock_as(struct coexec_pool_rec *p,
                                                 struct coexec_xstream_rec *xs)
{
    void *b = atom_load_rlx_ptr(&p->bias);
    if (LIKELY(b == POOL_BIAS_OFF)) {
        spin_lock(&p->lock);
        return HOLD_LOCK;
    }
    if (!xs)
        xs = coexec__xs_self();
    if (b == (void *)xs && xs && pool_bias_enter(p, xs))
        return HOLD_BIAS;
    spin_lock(&p->lock);
    coexec__pool_bias_settle(p, xs);
    return HOLD_LOCK;
}

static ALWAYS_INLINE enum pool_hold pool_lock(struct coexec_pool_rec *p)
{
    return pool_lock_as(p, NULL);
}

static ALWAYS_INLINE void pool_unlock(struct coexec_pool_rec *p,
                                      enum pool_hold h)
{
    if (h == HOLD_BIAS)
        atom_store_rel_u32(&p->bias_in, 0); /* the revoker's acquire */
    else if (h == HOLD_LOCK)
        spin_unlock(&p->lock);
}

/* A try of pool_lock that never revokes (HOLD_NONE: not held). */
static ALWAYS_INLINE enum pool_hold pool_trylock(struct coexec_pool_rec *p)
{
    void *b = atom_load_rlx_ptr(&p->bias);
    if (b != POOL_BIAS_OFF && b != NULL) {
        struct coexec_xstream_rec *xs = coexec__xs_self();
        return b == (void *)xs ? pool_lock_as(p, xs) : HOLD_NONE;
    }
    if (!spin_trylock(&p->lock))
        return HOLD_NONE;
    b = atom_load_rlx_ptr(&p->bias);
    if (UNLIKELY(b != POOL_BIAS_OFF && b != NULL)) {
        spin_unlock(&p->lock); /* granted meanwhile: not ours to revoke */
        return HOLD_NONE;
    }
    return HOLD_LOCK;
}

/* What caller xs needs to touch p's list (or an impl's lists): nothing
 * for a private pool's owner, else p's lock. Under the lock, a private
 * pool that a stream took over since the caller looked
 * (coexec__sched_activate, under this lock) is that owner's alone: false,
 * with the lock released. *locked: whether pool_list_leave releases it. */
static ALWAYS_INLINE bool pool_list_enter(struct coexec_pool_rec *p,
                                          struct coexec_xstream_rec *xs,
                                          enum pool_hold *hold)
{
    if (!pool_must_lock(p, xs)) {
        *hold = HOLD_NONE;
        return true;
    }
    *hold = pool_lock_as(p, xs);
    if (LIKELY(pool_list_locked_ok(p)))
        return true;
    pool_unlock(p, *hold);
    *hold = HOLD_NONE;
    return false;
}

/* pool_list_enter that neither waits nor calls out, for stream xs (not
 * NULL): false, holding nothing, whenever p is not the caller's at once
 * (its lock busy, its bias another stream's or not settled yet), for a
 * caller that then goes the general way. */
static ALWAYS_INLINE bool pool_list_try_enter(struct coexec_pool_rec *p,
                                              struct coexec_xstream_rec *xs,
                                              enum pool_hold *hold)
{
    if (!pool_must_lock(p, xs)) {
        *hold = HOLD_NONE;
        return true;
    }
    void *b = atom_load_rlx_ptr(&p->bias);
    if (b == POOL_BIAS_OFF) {
        uint32_t exp = 0;
        if (!atom_cas_acq_u32(&p->lock, &exp, 1))
            return false;
        *hold = HOLD_LOCK;
    } else if (b == (void *)xs && pool_bias_enter(p, xs)) {
        *hold = HOLD_BIAS;
    } else {
        return false;
    }
    if (LIKELY(pool_list_locked_ok(p)))
        return true;
    pool_unlock(p, *hold);
    return false;
}

static ALWAYS_INLINE void pool_list_leave(struct coexec_pool_rec *p,
                                          enum pool_hold hold)
{
    pool_unlock(p, hold);
}

/* List operations; the caller holds the lock (or owns a private pool). */
static ALWAYS_INLINE void list_count(struct coexec_pool_rec *p,
                                     struct coexec_unit_rec *u, int64_t d)
{
    atom_store_rlx_u64(&p->size, atom_load_rlx_u64(&p->size) + (uint64_t)d);
    if (UNLIKELY(u->flags & UF_NOSTEAL))
        atom_store_rlx_u64(&p->nbound,
                           atom_load_rlx_u64(&p->nbound) + (uint64_t)d);
}

static ALWAYS_INLINE void list_push_head(struct coexec_pool_rec *p,
                                         struct coexec_unit_rec *u)
{
    DL_PUSH_HEAD(p->head, p->tail, u);
    unit_inpool_set(u, 1);
    list_count(p, u, 1);
}

static ALWAYS_INLINE void list_push_tail(struct coexec_pool_rec *p,
                                         struct coexec_unit_rec *u)
{
    DL_PUSH_TAIL(p->head, p->tail, u);
    unit_inpool_set(u, 1);
    list_count(p, u, 1);
}

static ALWAYS_INLINE void list_unlink(struct coexec_pool_rec *p,
                                      struct coexec_unit_rec *u)
{
    DL_UNLINK(p->head, p->tail, u);
    unit_inpool_set(u, 0);
    list_count(p, u, -1);
}

/* unit->in_pool values. */
#define INPOOL_LIST 1 /* queued in a built-in pool */
#define INPOOL_USER 2 /* held by a user pool (src/pool/user.c) */

/* Out-of-line parts (src/pool/pool.c). */
/* Redirects every later push into p to `to`, and moves p's units there. */
void coexec__pool_forward(struct coexec_pool_rec *p, struct coexec_pool_rec *to);
/* A scheduler starts taking from p (p is forwarded no more), or stops: when
 * it was the last one (true), p is forwarded to `to` (NULL, or p itself:
 * not forwarded). See pool.c, "Servers and forwards". */
void coexec__pool_run_begin(struct coexec_pool_rec *p);
bool coexec__pool_run_end(struct coexec_pool_rec *p, struct coexec_pool_rec *to);
void coexec__pool_wrap_enter(struct coexec_unit_rec *pushing,
                             struct coexec_pool_rec *popping,
                             struct coexec_unit_rec **saved_u,
                             struct coexec_pool_rec **saved_p);
void coexec__pool_wrap_leave(struct coexec_unit_rec *saved_u,
                             struct coexec_pool_rec *saved_p);
/* User pools (src/pool/user.c). */
int coexec__user_pool_init(struct coexec_pool_rec *p,
                           const coexec_pool_ops_t *ops, coexec_pool_t self,
                           void *arg);
void *coexec__user_pool_data(struct coexec_pool_rec *p);
/* False for a user pool whose ops have no remove. */
bool coexec__user_pool_can_remove(struct coexec_pool_rec *p);
void coexec__pool_wake_sleepers_locked(struct coexec_pool_rec *p);
/* The same after a push of u: a parked thief is woken only if thieves may
 * take u (pool_may_steal). */
void coexec__pool_wake_sleepers_for(struct coexec_pool_rec *p,
                                    struct coexec_unit_rec *u);
/* Takes a unit for thief xs (into: the pool it will call home), or NULL.
 * registered: p was read from the registry of default pools
 * (coexec__steal), and is passed by once it is no longer stealable. */
struct coexec_unit_rec *coexec__pool_steal(struct coexec_pool_rec *p,
                                           struct coexec_xstream_rec *xs,
                                           struct coexec_pool_rec *into,
                                           bool registered);
bool coexec__pool_sleep_register(struct coexec_pool_rec *p,
                                 struct sleeper *s);
void coexec__pool_sleep_unregister(struct coexec_pool_rec *p,
                                   struct sleeper *s);
/* Parked thieves (sleepers.c): a stream joins the set (s->mb set) before it
 * checks its victims, marks each victim while seeing it empty (false: it
 * has work), and leaves the set once awake. */
void coexec__thief_park(struct sleeper *s);
/* Wakes one parked thief, if any; true if it did. */
bool coexec__thief_kick_one(void);
bool coexec__pool_thief_mark(struct coexec_pool_rec *p);
void coexec__thief_unpark(struct sleeper *s);
struct coexec_pool_rec *coexec__pool_new(int kind, int access);
struct coexec_pool_rec *coexec__pool_new_default(void);
void coexec__pool_retire(struct coexec_pool_rec *p, struct coexec_pool_rec *to);
/* After p's owner was removed: waits until every thread that may have
 * seen that owner has put what it sends in its mailbox (pool_send_end). */
void coexec__pool_senders_wait(struct coexec_pool_rec *p);
void coexec__pool_release(struct coexec_pool_rec *p);
/* Marks p as a default pool thieves may take from (1), or not (0), under
 * its lock: thieves read the mark only under it. */
void coexec__pool_set_stealable(struct coexec_pool_rec *p, int on);
int coexec__pool_check_access(struct coexec_pool_rec *p, bool push);
/* Access checks: a scheduler starting on the calling stream's thread takes
 * the single-consumer side of p (and a PRIV pool's producer side too),
 * whoever had it before (bind); it lets them go when it stops using p. */
void coexec__pool_bind_owner(struct coexec_pool_rec *p, bool bind);
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

/* Why a unit is pushed (coexec_push_kind_t values). */
enum { PUSH_NEW = 0, PUSH_YIELD = 1, PUSH_WAKE = 2 };

/* May xs take u? Units bound to a stream (the main ULT, posted tasklets)
 * stay there. xs is NULL for an external thread. */
static ALWAYS_INLINE bool pool_may_take(struct coexec_unit_rec *u,
                                        struct coexec_xstream_rec *xs)
{
    if (LIKELY(!(u->flags & UF_NOSTEAL)))
        return true;
    return xs && u->bound_rank == xs_rank_of(xs);
}

/* May thief xs take u? Not a pinned unit, nor one migrating to another
 * stream that has not run there yet. */
static ALWAYS_INLINE bool pool_may_steal(struct coexec_unit_rec *u,
                                         struct coexec_xstream_rec *xs)
{
    if (UNLIKELY(atom_load_rlx_u32(&u->attrs) & UA_PINNED))
        return false;
    uintptr_t d = atom_load_rlx_uptr(&u->dest);
    if (UNLIKELY(d & DEST_BOUND) &&
        (struct coexec_xstream_rec *)(d & ~DEST_TAGS) != xs)
        return false;
    return pool_may_take(u, xs);
}

/* Wakes the schedulers parked on p, if any: for an impl's push, after the
 * unit is visible to pop. The seq_cst fence pairs with the one in
 * coexec__pool_sleep_register's re-check (a Dekker pair: either the pusher
 * sees the sleeper or the sleeper sees the unit). */
static ALWAYS_INLINE void pool_wake_sleepers_slow(struct coexec_pool_rec *p)
{
    enum pool_hold h = pool_lock(p);
    if (p->sleepers)
        coexec__pool_wake_sleepers_locked(p);
    pool_unlock(p, h);
}

static ALWAYS_INLINE void pool_wake_sleepers(struct coexec_pool_rec *p)
{
    atom_fence_sc();
    if (UNLIKELY(atom_load_rlx_u32(&p->has_sleepers)))
        pool_wake_sleepers_slow(p);
}

/* The same without the fence, for a push whose unit the pushing stream will
 * run itself if nobody else does (a DEQUE owner's push): a thief parking at
 * that very instant may miss this one wake, which costs parallelism, never
 * progress. */
static ALWAYS_INLINE void pool_wake_sleepers_relaxed(struct coexec_pool_rec *p)
{
    if (UNLIKELY(atom_load_rlx_u32(&p->has_sleepers)))
        pool_wake_sleepers_slow(p);
}

#include "pool/deque.h"

/* The number of units queued in p (a snapshot when others push or pop). */
static ALWAYS_INLINE uint64_t pool_size(struct coexec_pool_rec *p)
{
    if (UNLIKELY(p->impl != NULL)) {
        if (p->kind == COEXEC_POOL_DEQUE)
            return dq_count(dq_of(p));
        if (p->impl->size)
            return p->impl->size(p);
    }
    return atom_load_acq_u64(&p->size);
}

/* Queues u in p through p->impl, or into a retired pool's successor. */
void coexec__pool_push_slow(struct coexec_pool_rec *p,
                            struct coexec_unit_rec *u, int how);

/* A push into a private pool by its owner: no lock. */
static ALWAYS_INLINE void push_owned(struct coexec_pool_rec *p,
                                     struct coexec_unit_rec *u, int how)
{
    if (UNLIKELY(atom_load_rlx_ptr(&p->forward) != NULL)) {
        coexec__pool_push_slow(p, u, how);
        return;
    }
    atom_store_rlx_ptr(&u->pool, p);
    if (how == PUSH_YIELD && p->kind == COEXEC_POOL_LIFO)
        list_push_tail(p, u);
    else
        list_push_head(p, u);
    if (UNLIKELY(p->sleepers != NULL))
        coexec__pool_wake_sleepers_for(p, u);
}

/* For a pusher of u into p that is not p's private owner at its look
 * (self: its stream, or NULL): takes p's lock, after pool_send_begin for a
 * private pool. A private pool that another stream owns under the lock is
 * that owner's alone: u goes to its mailbox (its home set to p; the owner
 * queues it) and true is returned, the lock released. Else false, with the
 * lock held and the send ended (the caller pushes, as the owner if it took
 * p over since). */
static ALWAYS_INLINE bool pool_lock_to_push(struct coexec_pool_rec *p,
                                            struct coexec_unit_rec *u,
                                            struct coexec_xstream_rec *self,
                                            enum pool_hold *hold)
{
    if (p->shared) {
        *hold = pool_lock_as(p, self);
        return false;
    }
    (void)pool_send_begin(p);
    *hold = pool_lock_as(p, self);
    struct coexec_xstream_rec *o =
        __atomic_load_n(&p->owner_xs, __ATOMIC_SEQ_CST);
    if (o && o != self) {
        struct mailbox *mb = p->owner_mb;
        pool_unlock(p, *hold);
        atom_store_rlx_ptr(&u->pool, p);
        coexec__mb_push(mb, u);
        pool_send_end(p);
        return true;
    }
    pool_send_end(p);
    return false;
}

/* Queues u in p (its new home pool), pushed by stream xs when the caller
 * knows it has not switched since it read it (NULL: not known, or an
 * external thread). LIFO: new units at the head, yielders at the tail.
 * FIFO: everything at the head; pop takes the tail. A DEQUE's owner pushes
 * at the bottom without a call through the table. */
static ALWAYS_INLINE void coexec__pool_push_as(struct coexec_pool_rec *p,
                                               struct coexec_unit_rec *u,
                                               int how,
                                               struct coexec_xstream_rec *xs)
{
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
    if (UNLIKELY(p->impl != NULL)) {
        if (xs && p->kind == COEXEC_POOL_DEQUE && how != PUSH_YIELD &&
            dq_owner_push(p, u, xs))
            return;
        coexec__pool_push_slow(p, u, how);
        return;
    }
    struct coexec_xstream_rec *self = xs;
    if (!p->shared) {
        self = xs ? xs : xs_self_entry();
        if (LIKELY(pool_owner(p) == self && self)) {
            push_owned(p, u, how);
            return;
        }
    }
    /* Shared; or private with no owner at the look above, or not us: a
     * private pool of another stream by now gets u through its mailbox. */
    enum pool_hold h;
    if (pool_lock_to_push(p, u, self, &h))
        return;
    if (UNLIKELY(atom_load_rlx_ptr(&p->forward) != NULL)) {
        /* The stream this pool served is gone: follow it. */
        pool_unlock(p, h);
        coexec__pool_push_slow(p, u, how);
        return;
    }
    atom_store_rlx_ptr(&u->pool, p);
    bool at_tail = how == PUSH_YIELD && p->kind == COEXEC_POOL_LIFO;
    if (at_tail)
        list_push_tail(p, u);
    else
        list_push_head(p, u);
    if (UNLIKELY(p->sleepers != NULL))
        coexec__pool_wake_sleepers_for(p, u);
    pool_unlock(p, h);
}

static ALWAYS_INLINE void coexec__pool_push(struct coexec_pool_rec *p,
                                            struct coexec_unit_rec *u,
                                            int how)
{
    coexec__pool_push_as(p, u, how, NULL);
}

/* The locked half of a yield's push into a list pool: p's lock is held
 * (or p is private). */
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
        coexec__pool_wake_sleepers_for(p, u);
}

/* list_unlink for u at one end of p's list: the tail (from_tail) or the
 * head, as a pop finds it most of the time. */
static ALWAYS_INLINE void list_unlink_end(struct coexec_pool_rec *p,
                                          struct coexec_unit_rec *u,
                                          bool from_tail)
{
    if (from_tail) {
        struct coexec_unit_rec *pr = u->prev;
        p->tail = pr;
        if (pr)
            pr->next = NULL;
        else
            p->head = NULL;
        u->prev = NULL;
    } else {
        struct coexec_unit_rec *nx = u->next;
        p->head = nx;
        if (nx)
            nx->prev = NULL;
        else
            p->tail = NULL;
        u->next = NULL;
    }
    unit_inpool_set(u, 0);
    list_count(p, u, -1);
}

/* A list pool's take: the first unit from one end that xs may run. */
static ALWAYS_INLINE struct coexec_unit_rec *
pool_take_from(struct coexec_pool_rec *p, struct coexec_xstream_rec *xs,
               bool from_tail)
{
    struct coexec_unit_rec *u = from_tail ? p->tail : p->head;
    if (LIKELY(u != NULL) && LIKELY(pool_may_take(u, xs))) {
        list_unlink_end(p, u, from_tail);
        return u;
    }
    while (u && !pool_may_take(u, xs))
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
    if (UNLIKELY(p->impl != NULL)) {
        if (p->kind == COEXEC_POOL_DEQUE && dq_is_owner(dq_of(p), xs)) {
            struct coexec_unit_rec *u = dq_owner_pop(p, xs);
            if (LIKELY(u != DQ_SLOW))
                return u;
            return p->impl->pop(p, xs);
        }
        return pool_size(p) ? p->impl->pop(p, xs) : NULL;
    }
    if (atom_load_rlx_u64(&p->size) == 0)
        return NULL;
    enum pool_hold locked;
    if (!pool_list_enter(p, xs, &locked))
        return NULL; /* another stream's private pool is not ours to pop */
    struct coexec_unit_rec *u =
        pool_take_from(p, xs, p->kind == COEXEC_POOL_FIFO);
    pool_list_leave(p, locked);
    return u;
}

/* Removes u from list pool p if it is still queued there (and, unless
 * started_ok, has never run; and, unless gen is 0, as the incarnation of
 * that generation), for stream xs: without a lock for a private pool's
 * owner; under the lock for a shared pool, or for a private one that no
 * stream owns (the lock keeps a stream from taking it over in
 * coexec__sched_activate meanwhile). RF_STARTED is read under the lock
 * that the runner's later push released, so the read is ordered after
 * the runner set it. A queued unit cannot be released, so its generation
 * read here holds until the unlock. */
static ALWAYS_INLINE bool pool_list_remove(struct coexec_pool_rec *p,
                                           struct coexec_unit_rec *u,
                                           struct coexec_xstream_rec *xs,
                                           bool started_ok, uint64_t gen)
{
    enum pool_hold locked;
    if (!pool_list_enter(p, xs, &locked))
        return false; /* another stream's private pool now */
    bool ok = unit_inpool(u) && unit_pool(u) == p &&
              (started_ok || !(u->rflags & RF_STARTED)) &&
              (!gen || atom_load_rlx_u64(&u->gen) == gen);
    if (ok)
        list_unlink(p, u);
    pool_list_leave(p, locked);
    return ok;
}

/* Removes u from p if it is still queued there and, unless started_ok,
 * has never run (a join in place), for stream xs (as in
 * coexec__pool_push_as). gen (0: any) is the incarnation the caller
 * means: a list pool checks it under its lock; the other kinds take the
 * unit out and, if a later incarnation was taken (the one meant ended
 * and its descriptor was reused meanwhile: possible only through the
 * handle of a unit that ends on its own, coexec_tasklet_create_watched),
 * queue it again and answer false. */
static ALWAYS_INLINE bool coexec__pool_remove_as(struct coexec_pool_rec *p,
                                                 struct coexec_unit_rec *u,
                                                 struct coexec_xstream_rec *xs,
                                                 bool started_ok, uint64_t gen)
{
    if (LIKELY(p->impl == NULL))
        return pool_list_remove(p, u, xs, started_ok, gen);
    bool ok = false;
    int r = -1;
    if (xs && p->kind == COEXEC_POOL_DEQUE)
        r = dq_owner_remove(p, u, xs, started_ok);
    if (r >= 0)
        ok = r;
    else
        ok = p->impl->remove && p->impl->remove(p, u, started_ok);
    if (ok && gen && atom_load_acq_u64(&u->gen) != gen) {
        coexec__pool_push_as(p, u, PUSH_NEW, xs);
        return false;
    }
    return ok;
}

/* fork, in the child (src/core/process.c): forgets every pool. */
void coexec__pool_atfork_child(void);
/* ... and the parked thieves (src/pool/sleepers.c). */
void coexec__thieves_atfork_child(void);

#endif /* COEXEC_POOL_POOL_H */
