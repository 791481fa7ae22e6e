/*
 * src/sched/keeper.c: the timer keeper: an idle thread fires the timers
 * of busy streams (the heaps are src/base/timerheap.c; sleeping is
 * src/waker/sleep.c).
 *
 * Room plaque. A timer lives in the waiter's own storage (a sleeping or
 * timed-waiting ULT's stack) and sits in the heap of the stream it parked
 * on. That stream fires the expired ones from its scheduler loop (every
 * event_freq units and whenever idle) and, idle, parks no longer than the
 * earliest deadline. The heap has a lock because a waiter released by
 * someone else cancels its timer from wherever it runs next; fire runs
 * under the same lock, so once cancel returns nothing touches the timer.
 * Lock order: timer heap, then a wait list, then a pool. At finalize a
 * stopping stream fires its timers early, as cancelled: a sleep or timed
 * wait then ends with COEXEC_ECANCELED instead of holding the stop.
 *
 * The keeper. A stream busy in a long unit, or whose OS thread the kernel
 * does not run, cannot fire its timers. So one idle thread (a parked
 * stream or a parked service worker) holds the keeper's role (`keeper`):
 * before it sleeps it fires the timers of other streams that are
 * KEEP_GRACE_NS overdue (any thread may: the fire functions release a wait
 * and wake a unit, which works from anywhere) and sleeps no longer than
 * the earliest deadline of the others plus KEEP_GRACE_NS. The woken unit
 * goes to its home pool like any woken unit, where an idle thief may take
 * it. The role:
 *  - claimed by a thread about to sleep when nobody holds it; the claimer
 *    stores until = 0, reads every heap, then stores when it will wake;
 *  - a timer that becomes its heap's earliest kicks the keeper when it is
 *    due before the keeper's wake (Dekker, seq_cst: either the keeper's
 *    read sees the timer, or the adder sees until = 0 or the final value);
 *  - given up when the keeper wakes; if it leaves to run work while other
 *    streams have timers, or a timer is added while nobody holds the role
 *    and some thread sleeps without it, a sleeping thread (the service
 *    stream first, else a parked thief) is woken to take it up.
 * Idle threads are the only keepers: a thread that keeps costs nothing to
 * the work, and a workload with no timers never sees the keeper at all.
 */
#include <stdlib.h>
#include <time.h>

#include "arch/clock.h"
#include "base/global.h"
#include "base/spin.h"
#include "base/timerheap.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

/* How overdue a timer is before a thread other than its stream fires it
 * (its own stream fires it at its next event check, normally far sooner),
 * and the shortest nap of the keeper. */
#define KEEP_GRACE_NS 200000ull

static struct {
    atom_u32_t claim;   /* 1 while some thread holds the role */
    atom_u32_t standby; /* threads asleep without it */
    atom_u32_t recruit; /* 1: a sleeper was woken to take the role */
    atom_u64_t until;   /* the keeper wakes by then; 0 while it reads */
    atom_ptr_t xs;      /* the keeper stream; NULL: a service worker */
} keeper = {.until = {UINT64_MAX}};

/* The service stream sits above the streams: it registers how to wake its
 * sleeping workers (coexec__timers_set_helper). */
static atom_ptr_t helper; /* const struct timer_helper *, or NULL */

void coexec__timers_set_helper(const struct timer_helper *h)
{
    atom_store_rel_ptr(&helper, (void *)h);
}

static bool helper_kick(void)
{
    const struct timer_helper *h = atom_load_acq_ptr(&helper);
    return h && h->kick_idle();
}

static void keeper_kick(void)
{
    struct coexec_xstream_rec *xs = atom_load_acq_ptr(&keeper.xs);
    if (xs)
        xs_kick(xs); /* records are type-stable while the runtime lives
                        (keeper_reset forgets them at the next setup): a
                        late kick is a spurious wake at worst */
    else
        helper_kick();
}

/* Wakes a sleeping thread to take the role up, once until it does. */
static void keeper_recruit(void)
{
    uint32_t exp = 0;
    if (!atom_cas_ar_u32(&keeper.recruit, &exp, 1))
        return;
    if (!helper_kick() && !coexec__thief_kick_one())
        atom_store_rel_u32(&keeper.recruit, 0); /* nobody to wake */
}

/* A timer became its heap's earliest (the heap's next is published):
 * base/timerheap.c calls this through coexec__timerheap_note. */
static void keeper_note(uint64_t deadline)
{
    atom_fence_sc(); /* Dekker with coexec__timers_keep: see the plaque */
    if (!atom_load_rlx_u32(&keeper.claim)) {
        if (atom_load_rlx_u32(&keeper.standby))
            keeper_recruit();
        return;
    }
    uint64_t until = atom_load_rlx_u64(&keeper.until);
    if (until == 0 || deadline + KEEP_GRACE_NS < until)
        keeper_kick();
}

/* Fires the timers of streams other than self that are KEEP_GRACE_NS
 * overdue; returns the earliest deadline left in those heaps. A heap
 * whose lock is held is passed by (its owner or another helper is in it):
 * its deadline still counts. */
static uint64_t help_others(struct coexec_xstream_rec *self, uint64_t now)
{
    uint32_t n = atom_load_acq_u32(&coexec__timerheaps.num);
    uint64_t min = UINT64_MAX;
    for (uint32_t i = 0; i < n; i++) {
        struct timer_heap *h = coexec__timerheaps.all[i];
        if (self && h == &self->timers)
            continue;
        uint64_t next = atom_load_sc_u64(&h->next);
        if (next != UINT64_MAX && next + KEEP_GRACE_NS <= now &&
            spin_trylock(&h->lock)) {
            next = coexec__timerheap_run_locked(h, now);
            spin_unlock(&h->lock);
        }
        if (next < min)
            min = next;
    }
    return min;
}

uint64_t coexec__timers_keep(struct coexec_xstream_rec *self, bool *held)
{
    uint64_t now = clock_now_ns();
    uint32_t exp = 0;
    *held = atom_cas_ar_u32(&keeper.claim, &exp, 1);
    if (!*held) {
        /* The keeper looks at every heap; the others stand by (a scan per
         * park of each of hundreds of idle streams would cost more than
         * the timers it serves). */
        atom_fadd_sc_u32(&keeper.standby, 1);
        return UINT64_MAX;
    }
    atom_store_rel_u32(&keeper.recruit, 0);
    atom_store_rel_ptr(&keeper.xs, self);
    atom_store_sc_u64(&keeper.until, 0);
    uint64_t next = help_others(self, now);
    uint64_t until = UINT64_MAX;
    if (next != UINT64_MAX) {
        until = next + KEEP_GRACE_NS;
        if (until < now + KEEP_GRACE_NS)
            until = now + KEEP_GRACE_NS;
    }
    atom_store_sc_u64(&keeper.until, until);
    return until;
}

void coexec__timers_unkeep(struct coexec_xstream_rec *self, bool held,
                           bool for_work)
{
    if (!held) {
        atom_fsub_sc_u32(&keeper.standby, 1);
        return;
    }
    atom_store_sc_u64(&keeper.until, UINT64_MAX);
    atom_store_rel_u32(&keeper.claim, 0);
    /* Leaving to run work: hand the role over if others have timers. */
    if (for_work && atom_load_sc_u32(&keeper.standby) &&
        help_others(self, 0) != UINT64_MAX)
        keeper_recruit();
}

/* The role back to nobody, when no thread that could hold it is left (a
 * fork's child; a runtime's setup, after the last one's streams were
 * joined and their records freed: a keeper stream named here then would
 * be kicked in freed memory). */
static void keeper_reset(void)
{
    atom_store_rlx_u32(&keeper.claim, 0);
    atom_store_rlx_u32(&keeper.standby, 0);
    atom_store_rlx_u32(&keeper.recruit, 0);
    atom_store_rlx_u64(&keeper.until, UINT64_MAX);
    atom_store_rlx_ptr(&keeper.xs, NULL);
}

void coexec__timers_atfork_child(void)
{
    keeper_reset();
    atom_store_rlx_ptr(&helper, NULL);
}

void coexec__timers_init(void)
{
    keeper_reset();
    atom_store_rel_ptr(&coexec__timerheap_note, (void *)keeper_note);
}
