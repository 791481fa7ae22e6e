/*
 * src/pool/sleepers.c: who waits for a push: the schedulers parked on a
 * pool (its sleepers: streams, or stacked schedulers' units) and the set
 * of parked thieves, and how a push wakes them.
 */
#include "arch/atomic.h"
#include "base/list.h"
#include "base/parker.h"
#include "base/spin.h"
#include "pool/pool.h"
#include "thread/unit.h"

static struct {
    atom_u32_t lock;
    struct sleeper *head;
} thieves CACHE_ALIGNED;

/* Sleeper lists (a pool's sleepers, the parked thieves): doubly linked,
 * newest first; the caller holds the list's lock. */
static void slist_push(struct sleeper **head, struct sleeper *s)
{
    DL_HEAD_PUSH(*head, s);
    s->linked = true;
}

static void slist_unlink(struct sleeper **head, struct sleeper *s)
{
    DL_HEAD_UNLINK(*head, s);
    s->linked = false;
}

/* Unlinks s from p's sleepers if it is still linked; p's lock held. */
static void sleeper_unlink(struct coexec_pool_rec *p, struct sleeper *s)
{
    if (s->linked) {
        slist_unlink(&p->sleepers, s);
        if (!p->sleepers)
            atom_store_rlx_u32(&p->has_sleepers, 0);
    }
}

/* ---- parked thieves ---------------------------------------------------- */

/*
 * A stream whose scheduler steals from every default pool (the registry,
 * coexec__steal.pools) parks as a thief: it does not put a node on each
 * victim, which would make parking and waking cost the number of streams
 * for every one of them, and a push wake them all. Instead:
 *  - `thieves` is the set of parked thieves: nodes on their parking
 *    stacks, linked under its spin lock, newest first.
 *  - A parking thief joins the set first, then, for each victim, under the
 *    victim's lock, sees it empty and links the victim's `thief_mark`
 *    among its sleepers (once: the mark stands for every thief).
 *  - A push that finds the mark (coexec__pool_wake_sleepers_locked, under
 *    the pool's lock) wakes the newest thief only, and leaves the mark
 *    linked while others park: the next push wakes the next one. A push
 *    that woke the pool's own parked stream wakes no thief (that stream
 *    takes the unit).
 * No wake is lost: the pusher reads the set under the victim's lock, and
 * the thief joined the set before it took that lock to see the victim
 * empty, so either the thief sees the unit, or the pusher sees the mark and
 * the thief in the set (or the thief already left it, awake). Whoever
 * unlinks a mark (a waker, or the last thief to leave: thief_sweep) does
 * so holding the pool's lock and seeing the set empty under the set's lock;
 * a thief that joins after that takes the pool's lock after it and links
 * the mark again. Lock order: a pool, then the set.
 */

void coexec__thief_park(struct sleeper *s)
{
    s->unit = NULL;
    spin_lock(&thieves.lock);
    slist_push(&thieves.head, s);
    spin_unlock(&thieves.lock);
}

static bool thieves_parked(void)
{
    spin_lock(&thieves.lock);
    bool any = thieves.head != NULL;
    spin_unlock(&thieves.lock);
    return any;
}

/* Takes the newest parked thief out of the set and wakes it (*woke: one
 * was there); true if others still park. */
static bool thief_pop_kick(bool *woke)
{
    spin_lock(&thieves.lock);
    struct sleeper *s = thieves.head;
    struct mailbox *mb = NULL;
    if (s) {
        slist_unlink(&thieves.head, s);
        mb = s->mb; /* s may be gone once the lock is released */
    }
    bool more = thieves.head != NULL;
    spin_unlock(&thieves.lock);
    if (mb)
        parker_kick(&mb->park); /* stream records are type-stable: a late
                                   kick is a spurious wake at worst */
    *woke = mb != NULL;
    return more;
}

static bool thief_wake_one(void)
{
    bool woke;
    return thief_pop_kick(&woke);
}

bool coexec__thief_kick_one(void)
{
    bool woke;
    thief_pop_kick(&woke);
    return woke;
}

static void mark_link(struct coexec_pool_rec *p)
{
    struct sleeper *m = &p->thief_mark;
    m->mb = NULL;
    m->unit = NULL;
    slist_push(&p->sleepers, m);
    atom_store_rlx_u32(&p->has_sleepers, 1);
}

bool coexec__pool_thief_mark(struct coexec_pool_rec *p)
{
    enum pool_hold hold = pool_lock(p);
    bool empty = pool_size(p) == 0;
    if (empty && !p->thief_mark.linked)
        mark_link(p);
    pool_unlock(p, hold);
    if (empty && p->impl) {
        /* As in coexec__pool_sleep_register: an impl may push without the
         * lock. A mark left behind is dropped by the next push. */
        atom_fence_sc();
        if (pool_size(p) != 0)
            return false;
    }
    return empty;
}

/* The last thief left the set: drops the marks, so that pushes into the
 * default pools take their fast path again. */
static void thief_sweep(void)
{
    unsigned n = atom_load_acq_u32(&coexec__steal.num);
    for (unsigned i = 0; i < n; i++) {
        struct coexec_pool_rec *p = atom_load_acq_ptr(&coexec__steal.pools[i]);
        /* Relaxed: a mark linked after this read belongs to a thief that
         * parks now, and stays. */
        if (!p || !atom_load_rlx_u32(&p->has_sleepers))
            continue;
        /* A busy pool keeps its mark: the next push of a unit thieves may
         * take drops it (with no thief parked it is not linked again). A
         * sweep that waited could starve behind an owner that keeps
         * retaking the lock while its thread holds the CPU (valgrind runs
         * one thread at a time). */
        enum pool_hold hold = pool_trylock(p);
        if (hold == HOLD_NONE)
            continue;
        if (p->thief_mark.linked && !thieves_parked())
            sleeper_unlink(p, &p->thief_mark);
        pool_unlock(p, hold);
    }
}

void coexec__thief_unpark(struct sleeper *s)
{
    spin_lock(&thieves.lock);
    if (s->linked)
        slist_unlink(&thieves.head, s);
    bool last = thieves.head == NULL;
    spin_unlock(&thieves.lock);
    if (last)
        thief_sweep();
}

/* Wakes the schedulers parked on p, and a parked thief if `thief` (a
 * thief may take the unit pushed). Called with p's lock held; the futex
 * calls themselves are cheap enough here because a sleeper exists only
 * after a stream found nothing to do for its whole spin budget. */
static void wake_sleepers(struct coexec_pool_rec *p, bool thief)
{
    struct sleeper *s = p->sleepers;
    if (!thief && s == &p->thief_mark && !s->next)
        return; /* only thieves wait, and they may not take the unit */
    p->sleepers = NULL;
    atom_store_rlx_u32(&p->has_sleepers, 0);
    bool mark = false, woke_stream = false;
    while (s) {
        struct sleeper *n = s->next;
        s->linked = false;
        if (s == &p->thief_mark) {
            mark = true;
        } else if (s->unit) {
            s->wake_unit(s->unit);
        } else {
            parker_kick(&s->mb->park);
            woke_stream = true;
        }
        s = n;
    }
    if (!mark)
        return;
    bool more;
    if (!thief)
        more = true; /* no thief could take the unit: as it was */
    else if (woke_stream)
        more = thieves_parked(); /* p's own stream takes the unit */
    else
        more = thief_wake_one();
    if (more)
        mark_link(p); /* the next push wakes the next thief */
}

void coexec__pool_wake_sleepers_locked(struct coexec_pool_rec *p)
{
    wake_sleepers(p, true);
}

void coexec__pool_wake_sleepers_for(struct coexec_pool_rec *p,
                                    struct coexec_unit_rec *u)
{
    /* A pinned unit, or one bound to a stream (the main ULT, a posted
     * tasklet, a unit migrating to a stream): it is pushed into a pool of
     * the one stream that may run it, which the pool's own wake covers. */
    wake_sleepers(p, pool_may_steal(u, NULL));
}

bool coexec__pool_sleep_register(struct coexec_pool_rec *p, struct sleeper *s)
{
    enum pool_hold hold = pool_lock(p);
    bool empty = pool_size(p) == 0;
    if (empty) {
        slist_push(&p->sleepers, s);
        atom_store_rlx_u32(&p->has_sleepers, 1);
    }
    pool_unlock(p, hold);
    if (empty && p->impl) {
        /* An impl may push without the lock: pairs with the fence of
         * pool_wake_sleepers (either it sees us or we see its unit). */
        atom_fence_sc();
        if (pool_size(p) != 0) {
            coexec__pool_sleep_unregister(p, s);
            return false;
        }
    }
    return empty;
}

void coexec__pool_sleep_unregister(struct coexec_pool_rec *p,
                                   struct sleeper *s)
{
    enum pool_hold hold = pool_lock(p);
    sleeper_unlink(p, s);
    pool_unlock(p, hold);
}

/* fork, in the child: the parked thieves were the parent's other threads. */
void coexec__thieves_atfork_child(void)
{
    atom_store_rlx_u32(&thieves.lock, 0);
    thieves.head = NULL;
}
