/*
 * src/pool/deque.c: the DEQUE pool kind: a Chase-Lev work-stealing deque
 * with a locked side queue.
 *
 * Room plaque. The deque is a growable circular array of unit pointers
 * indexed by two 64-bit counters: `bottom`, where the owner stream pushes
 * and pops (LIFO: fork-join runs depth-first), and `top`, where thieves
 * take the oldest unit with one compare-and-swap. The orderings are those
 * of Le, Pop, Cohen and Zappa Nardelli, "Correct and Efficient
 * Work-Stealing for Weak Memory Models" (PPoPP 2013), with the fences
 * folded into the accesses, because TSan does not model fences: push
 * publishes `bottom` with a release store (the paper: release fence, then
 * relaxed store); the owner's take and a thief's steal order bottom against
 * top with seq_cst accesses (the paper: relaxed accesses around a seq_cst
 * fence), the Dekker pair that decides who gets the last unit. On x86-64
 * that is one xchg in take and plain loads in steal (the paper's fences
 * are an mfence in both); on AArch64 stlr/ldar. The counters only grow
 * (no ABA: a thief's
 * CAS on `top` fails if anyone took index `top` meanwhile), and their
 * difference is read as signed.
 *
 * Who owns what:
 *  - `owner` (set by coexec__deque_set_owner when a scheduler using the
 *    pool starts on a stream and no other stream owns it): only that
 *    stream's thread pushes at and pops from the bottom, writes `bottom`,
 *    the array slots, and `array` (grow). One owner at a time: a
 *    scheduler that starts on another stream while the owner's still uses
 *    the pool takes from it as any consumer does (the top, the side
 *    queue); the owner lets go when the last of its schedulers using the
 *    pool stops (`owner_uses`, coexec__deque_drop_owner), and the next
 *    scheduler to start takes it. Both under p->lock: a new owner sees
 *    all the last one did.
 *  - `top`: any thread, by CAS (thieves, non-owner pops, and the owner
 *    when it takes the last unit).
 *  - Arrays are never freed before fini: a grown-out array stays on the
 *    `retired` list (under p->lock), so a thief that read the old pointer
 *    still reads valid memory; its CAS then fails if the slot moved on.
 *  - The side queue (`side_head`/`side_tail`, units linked through
 *    u->next/u->prev) and `side_n` are guarded by p->lock. It takes every
 *    push not made by the owner (remote wakes, creations from elsewhere),
 *    every YIELD push (so a yielder goes behind the others), and units a
 *    taker found it may not run (pool_may_take / pool_may_steal false):
 *    those are never lost. The owner serves it when the deque is empty and
 *    every SIDE_EVERY pops; thieves take from it when the deque is empty.
 *  - p->size is not kept: the count is bottom - top plus side_n (dq_size),
 *    so neither the owner's push nor its pop pays a locked add for it. A
 *    unit moved from the deque to the side queue by a taker that may not
 *    run it is uncounted for a moment: side_park wakes the sleepers once
 *    it is linked, under the lock their registration takes.
 *  - u->in_pool: set by the pusher before publishing, cleared by whoever
 *    took the unit. Nobody reads it while another thread may write it:
 *    remove() of a unit in the deque is the owner's alone and decides by
 *    the slot's contents, a remote remove() only finds units in the side
 *    queue, under the lock.
 * Wakes: an owner push uses pool_wake_sleepers_relaxed (the owner runs the
 * unit itself if no thief comes); a side-queue push wakes under the lock.
 * The state and the owner's common paths (push, pop and remove at the
 * bottom) are in deque.h, inlined into pool.h's generic operations; the
 * entries below are what those fall back to, and what everyone else calls.
 */
#include <stdlib.h>
#include <string.h>

#include "base/global.h"
#include "base/list.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

#define DQ_INITIAL_CAP 64
/* How far a remove() or a thief looks into the side queue from each end. */
#define SIDE_SCAN 32

/* steal_top's result when it lost a race (someone else made progress). */
#define DQ_ABORT ((struct coexec_unit_rec *)1)

static struct dq_array *array_new(uint64_t cap)
{
    struct dq_array *a = malloc(sizeof *a + cap * sizeof a->slot[0]);
    if (!a)
        return NULL;
    a->mask = cap - 1;
    a->older = NULL;
    for (uint64_t i = 0; i < cap; i++)
        atom_store_rlx_ptr(&a->slot[i], NULL);
    return a;
}

/* ---- side queue (p->lock held) ------------------------------------------ */

static void side_link(struct deque *d, struct coexec_unit_rec *u)
{
    DL_PUSH_TAIL(d->side_head, d->side_tail, u);
    atom_store_rlx_u64(&d->side_n, atom_load_rlx_u64(&d->side_n) + 1);
}

static void side_unlink(struct deque *d, struct coexec_unit_rec *u)
{
    DL_UNLINK(d->side_head, d->side_tail, u);
    unit_inpool_set(u, 0);
    atom_store_rlx_u64(&d->side_n, atom_load_rlx_u64(&d->side_n) - 1);
}

/* Moves u, taken from the deque, to the side queue: its taker may not run
 * it. */
static void side_park(struct coexec_pool_rec *p, struct deque *d,
                      struct coexec_unit_rec *u)
{
    impl_lock(p);
    side_link(d, u);
    if (UNLIKELY(p->sleepers != NULL))
        coexec__pool_wake_sleepers_for(p, u);
    impl_unlock(p);
}

/*
 * The oldest side-queue unit xs may take (thief: may steal), or NULL. A
 * thief looks at SIDE_SCAN units at most; a consumer scans the whole queue
 * (a unit deep in it may be the only one this stream may run).
 */
static struct coexec_unit_rec *side_take(struct coexec_pool_rec *p,
                                         struct deque *d,
                                         struct coexec_xstream_rec *xs,
                                         bool thief)
{
    if (atom_load_rlx_u64(&d->side_n) == 0)
        return NULL;
    impl_lock(p);
    struct coexec_unit_rec *u = d->side_head;
    for (int n = 0; u; u = u->next, n++) {
        if (thief ? pool_may_steal(u, xs) : pool_may_take(u, xs))
            break;
        if (thief && n >= SIDE_SCAN) {
            u = NULL;
            break;
        }
    }
    if (u)
        side_unlink(d, u);
    impl_unlock(p);
    return u;
}

/* ---- the Chase-Lev deque -------------------------------------------------- */

/* Owner: a bigger array holding the same units; NULL when out of memory. */
static struct dq_array *grow(struct coexec_pool_rec *p, struct deque *d,
                             struct dq_array *a, uint64_t t, uint64_t b)
{
    struct dq_array *na = array_new((a->mask + 1) * 2);
    if (!na)
        return NULL;
    for (uint64_t i = t; i != b; i++)
        atom_store_rlx_ptr(&na->slot[i & na->mask],
                           atom_load_rlx_ptr(&a->slot[i & a->mask]));
    impl_lock(p);
    a->older = d->retired;
    d->retired = a;
    impl_unlock(p);
    /* Release: a thief that reads the new array (acquire) sees its slots. */
    atom_store_rel_ptr(&d->array, na);
    return na;
}

/* Owner: queues u at the bottom, growing the array if it is full; false
 * when it could not grow. */
static bool push_bottom(struct coexec_pool_rec *p, struct deque *d,
                        struct coexec_unit_rec *u)
{
    if (LIKELY(dq_push_bottom(d, u)))
        return true;
    uint64_t b = atom_load_rlx_u64(&d->bottom);
    uint64_t t = atom_load_acq_u64(&d->top);
    if (!grow(p, d, atom_load_rlx_ptr(&d->array), t, b))
        return false;
    return dq_push_bottom(d, u);
}

/* Any thread: the oldest unit, NULL when empty, DQ_ABORT when another
 * taker won the race for it. */
static struct coexec_unit_rec *steal_top(struct deque *d)
{
    /* seq_cst loads (acquire too): see take_bottom. */
    uint64_t t = atom_load_sc_u64(&d->top);
    uint64_t b = atom_load_sc_u64(&d->bottom);
    if ((int64_t)(b - t) <= 0)
        return NULL;
    /* Acquire: pairs with grow's release of a new array. */
    struct dq_array *a = atom_load_acq_ptr(&d->array);
    struct coexec_unit_rec *u = atom_load_rlx_ptr(&a->slot[t & a->mask]);
    /* seq_cst: the one point where thieves and the owner's last-unit take
     * agree on who got index t. */
    if (!atom_cas_sc_u64(&d->top, &t, t + 1))
        return DQ_ABORT;
    return u;
}

/*
 * Non-owner: the oldest deque unit that passes the check (thief: may
 * steal; consumer: may take). Units refused go to the side queue.
 */
static struct coexec_unit_rec *take_top(struct coexec_pool_rec *p,
                                        struct deque *d,
                                        struct coexec_xstream_rec *xs,
                                        bool thief)
{
    for (;;) {
        struct coexec_unit_rec *u = steal_top(d);
        if (u == DQ_ABORT) {
            cpu_relax();
            continue;
        }
        if (!u)
            return NULL;
        if (LIKELY(thief ? pool_may_steal(u, xs) : pool_may_take(u, xs)))
            return u;
        side_park(p, d, u);
    }
}

/* ---- the pool_impl entries -------------------------------------------------- */

static bool dq_push(struct coexec_pool_rec *p, struct coexec_unit_rec *u,
                    int how)
{
    struct deque *d = dq_of(p);
    unit_inpool_set(u, INPOOL_LIST);
    /* No switch happens in here: the inline thread-local read is safe. */
    bool mine = dq_is_owner(d, xs_self_entry());
    if (how != PUSH_YIELD && mine) {
        if (LIKELY(push_bottom(p, d, u))) {
            pool_wake_sleepers_relaxed(p);
            return true;
        }
        /* Out of memory for a bigger array: the side queue needs none. */
    }
    impl_lock(p);
    side_link(d, u);
    if (UNLIKELY(p->sleepers != NULL))
        coexec__pool_wake_sleepers_for(p, u);
    impl_unlock(p);
    return mine;
}

static struct coexec_unit_rec *dq_pop(struct coexec_pool_rec *p,
                                      struct coexec_xstream_rec *xs)
{
    struct deque *d = dq_of(p);
    struct coexec_unit_rec *u;
    if (!dq_is_owner(d, xs)) {
        /* Another consumer (a second scheduler, an external thread): the
         * oldest units, like a thief, but anything it may run. */
        u = take_top(p, d, xs, false);
        if (u) {
            unit_inpool_set(u, 0);
            return u;
        }
        return side_take(p, d, xs, false);
    }
    /* The owner's own tick: relaxed load and store, no locked operation. */
    uint32_t tick = atom_load_rlx_u32(&d->tick) + 1;
    if (UNLIKELY(tick >= SIDE_EVERY) && atom_load_rlx_u64(&d->side_n)) {
        atom_store_rlx_u32(&d->tick, 0);
        if ((u = side_take(p, d, xs, false)) != NULL)
            return u;
    } else {
        atom_store_rlx_u32(&d->tick, tick);
    }
    while ((u = dq_take_bottom(d)) != NULL) {
        if (LIKELY(pool_may_take(u, xs))) {
            unit_inpool_set(u, 0);
            return u;
        }
        side_park(p, d, u); /* bound elsewhere: its stream takes it there */
    }
    atom_store_rlx_u32(&d->tick, 0);
    return side_take(p, d, xs, false);
}

void coexec__deque_put_back(struct coexec_pool_rec *p,
                            struct coexec_unit_rec *u)
{
    struct deque *d = dq_of(p);
    if (!push_bottom(p, d, u))
        side_park(p, d, u);
}

void coexec__deque_refuse(struct coexec_pool_rec *p, struct coexec_unit_rec *u)
{
    side_park(p, dq_of(p), u);
}

static bool dq_remove(struct coexec_pool_rec *p, struct coexec_unit_rec *u,
                      bool started_ok)
{
    struct deque *d = dq_of(p);
    /* No switch happens in here: the inline thread-local read is safe. */
    int r = dq_owner_remove(p, u, xs_self_entry(), started_ok);
    if (r >= 0)
        return r;
    if (atom_load_rlx_u64(&d->side_n) == 0)
        return false;
    /* The side queue, under its lock: a bounded look from both ends (a
     * joiner usually wants the newest or the oldest unit; false is always
     * a correct answer, the joiner then waits instead). */
    bool ok = false;
    impl_lock(p);
    struct coexec_unit_rec *h = d->side_head, *t = d->side_tail;
    for (int n = 0; n < SIDE_SCAN && h && !ok; n++) {
        ok = h == u || t == u;
        h = h->next;
        t = t->prev;
    }
    /* RF_STARTED was set before the push that queued u here, under this
     * lock (or before a taker moved it here, under this lock). */
    if (ok && (started_ok || !(u->rflags & RF_STARTED)))
        side_unlink(d, u);
    else
        ok = false;
    impl_unlock(p);
    return ok;
}

static struct coexec_unit_rec *dq_steal(struct coexec_pool_rec *p,
                                        struct coexec_xstream_rec *xs,
                                        struct coexec_pool_rec *into)
{
    struct deque *d = dq_of(p);
    uint64_t avail = dq_span(d);
    struct coexec_unit_rec *u = take_top(p, d, xs, true);
    if (!u) {
        /* Nothing in the deque: the side queue's oldest. */
        return side_take(p, d, xs, true);
    }
    unit_inpool_set(u, 0);
    if (!d->steal_half || !into)
        return u;
    /* Half of what was there: this one and avail / 2 - 1 more, into the
     * thief's pool. A lost race ends it (others are busy with the deque). */
    for (uint64_t k = 1; k < avail / 2; k++) {
        struct coexec_unit_rec *x = steal_top(d);
        if (!x || x == DQ_ABORT)
            break;
        if (!pool_may_steal(x, xs)) {
            side_park(p, d, x);
            continue;
        }
        unit_inpool_set(x, 0);
        coexec__pool_push(into, x, PUSH_NEW);
    }
    return u;
}

static struct coexec_unit_rec *dq_drain(struct coexec_pool_rec *p)
{
    struct deque *d = dq_of(p);
    struct coexec_unit_rec *first = NULL, *last = NULL;
    uint64_t n = 0;
    for (;;) {
        struct coexec_unit_rec *u = steal_top(d);
        if (u == DQ_ABORT)
            continue;
        if (!u)
            break;
        unit_inpool_set(u, 0);
        u->next = NULL;
        if (last)
            last->next = u;
        else
            first = u;
        last = u;
        n++;
    }
    impl_lock(p);
    for (struct coexec_unit_rec *u = d->side_head; u; u = u->next) {
        unit_inpool_set(u, 0);
        n++;
    }
    if (last)
        last->next = d->side_head;
    else
        first = d->side_head;
    d->side_head = d->side_tail = NULL;
    atom_store_rlx_u64(&d->side_n, 0);
    impl_unlock(p);
    return first;
}

static void dq_fini(struct coexec_pool_rec *p)
{
    struct deque *d = dq_of(p);
    struct dq_array *a = atom_load_rlx_ptr(&d->array);
    free(a);
    for (a = d->retired; a;) {
        struct dq_array *n = a->older;
        free(a);
        a = n;
    }
    free(d);
    p->istate = NULL;
}

/* The side queue's units, oldest first: those are under p->lock. The
 * deque's own span is not listed: its owner pops and thieves steal there
 * without the lock, so a unit seen in a slot may be running, finished or
 * recycled by the time it is visited. */
static void dq_foreach(struct coexec_pool_rec *p,
                       void (*visit)(void *ctx, struct coexec_unit_rec *u),
                       void *ctx)
{
    struct deque *d = dq_of(p);
    impl_lock(p);
    for (struct coexec_unit_rec *u = d->side_head; u; u = u->next)
        visit(ctx, u);
    impl_unlock(p);
}

/* The count: the deque's span plus the side queue (see the plaque). */
static uint64_t dq_size(struct coexec_pool_rec *p)
{
    return dq_count(dq_of(p));
}

static const struct pool_impl deque_impl = {
    .size = dq_size,
    .push = dq_push,
    .pop = dq_pop,
    .remove = dq_remove,
    .steal = dq_steal,
    .drain = dq_drain,
    .fini = dq_fini,
    .foreach = dq_foreach,
};

int coexec__deque_init(struct coexec_pool_rec *p, bool steal_half)
{
    struct deque *d = aligned_alloc(CACHE_LINE, sizeof *d);
    if (!d)
        return COEXEC_ENOMEM;
    memset(d, 0, sizeof *d);
    struct dq_array *a = array_new(DQ_INITIAL_CAP);
    if (!a) {
        free(d);
        return COEXEC_ENOMEM;
    }
    atom_store_rlx_ptr(&d->array, a);
    d->steal_half = steal_half;
    p->istate = d;
    p->impl = &deque_impl;
    return COEXEC_OK;
}

bool coexec__deque_set_owner(struct coexec_pool_rec *p,
                             struct coexec_xstream_rec *xs)
{
    struct deque *d = dq_of(p);
    /* Under p's lock, which the last owner's release took too: the new
     * owner's bottom operations come after all of that owner's. */
    impl_lock(p);
    struct coexec_xstream_rec *o = atom_load_rlx_ptr(&d->owner);
    bool counted = !o || o == xs;
    if (!o) {
        atom_store_rel_ptr(&d->owner, xs);
        d->owner_uses = 1;
    } else if (o == xs) {
        d->owner_uses++;
    }
    impl_unlock(p);
    return counted;
}

void coexec__deque_drop_owner(struct coexec_pool_rec *p,
                              struct coexec_xstream_rec *xs)
{
    struct deque *d = dq_of(p);
    impl_lock(p);
    if (atom_load_rlx_ptr(&d->owner) == xs && --d->owner_uses == 0)
        atom_store_rel_ptr(&d->owner, NULL);
    impl_unlock(p);
}
