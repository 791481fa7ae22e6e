/*
 * src/waker/wait.c: releasing and blocking on wait nodes (see wait.h).
 */
#include "waker/wait.h"

#include "arch/clock.h"
#include "arch/futex.h"

void coexec__wait_release(struct wait_node *n, uint32_t result)
{
    switch (n->flags & WN_KIND) {
    case WN_ULT: {
        struct coexec_unit_rec *u = atom_load_rlx_ptr(&n->who);
        /* u waits for this node, so it is alive and this is its tag. */
        uint32_t tag = atom_load_rlx_u32(&u->wake) & ~WAKE_FLAGS;
        if (atom_xchg_ar_u32(&n->state, result | WN_BUSY) != WN_SPIN)
            coexec__wake_tagged(u, tag); /* it parks, or is about to */
        /* Release, and the last touch: the waiter may leave now. */
        atom_store_rel_u32(&n->state, result);
        break;
    }
    case WN_TASKLET: {
        struct coexec_unit_rec *u = container_of(n, struct coexec_unit_rec,
                                                 tnode);
        uint32_t tag = atom_load_rlx_u32(&u->wake) & ~WAKE_FLAGS;
        atom_store_rlx_ptr(&n->who, NULL);
        atom_store_rel_u32(&n->state, result);
        coexec__wake_tagged(u, tag);
        break;
    }
    default:
        atom_store_rel_u32(&n->state, result);
        /* The waiter may have left already: a futex wake on a dead word
         * is harmless (at most a spurious wake-up elsewhere, which futex
         * waiters tolerate). */
        coexec__futex_wake(&n->state, 1);
        break;
    }
}

void coexec__wait_release_all(struct wlist *l, uint32_t result)
{
    struct wait_node *n;
    while ((n = wlist_pop(l)) != NULL)
        coexec__wait_release(n, result);
}

int coexec__wait_result_code(uint32_t r)
{
    switch (r) {
    case WN_DONE:
        return COEXEC_OK;
    case WN_TIMEDOUT:
        return COEXEC_ETIMEDOUT;
    case WN_CLOSED:
        return COEXEC_ECLOSED;
    case WN_CANCELED:
        return COEXEC_ECANCELED;
    default:
        return COEXEC_ENOMEM;
    }
}

/* Unlinks w's node if it still waits (takes the list's lock): true if it
 * did, so the result is `r`; false if it was released meanwhile. */
static bool waiter_withdraw(struct waiter *w, uint32_t r)
{
    bool done = false;
    if (w->lock)
        spin_lock(w->lock);
    if (wn_waiting(atom_load_rlx_u32(&w->node.state)) &&
        !(w->node.flags & WN_DETACHED)) {
        if (w->list)
            wlist_remove(w->list, &w->node);
        if (w->gone)
            w->gone(w);
        atom_store_rel_u32(&w->node.state, r);
        done = true;
    }
    if (w->lock)
        spin_unlock(w->lock);
    return done;
}

/* A deadline passed (or finalize ends the wait: cancel): runs on the
 * timer's stream, under the heap's lock. */
static void waiter_fire(struct timer *t, bool cancel)
{
    struct waiter *w = container_of(t, struct waiter, timer);
    if (w->lock)
        spin_lock(w->lock);
    if (wn_waiting(atom_load_rlx_u32(&w->node.state)) &&
        !(w->node.flags & WN_DETACHED)) {
        if (w->list)
            wlist_remove(w->list, &w->node);
        if (w->gone)
            w->gone(w);
        /* A wait finalize may not end just times out early. */
        bool c = cancel && !(w->node.flags & WN_NOCANCEL);
        coexec__wait_release(&w->node, c ? WN_CANCELED : WN_TIMEDOUT);
    }
    if (w->lock)
        spin_unlock(w->lock);
}

/* Finalize cancels w's wait (FIN_CANCEL): takes the node off its list, or
 * a sleep's timer out of the heap. True if it did (the result is then
 * WN_CANCELED); false if w was released meanwhile. */
static NOINLINE bool waiter_cancel(struct waiter *w, bool timed)
{
    if (w->node.flags & WN_NOCANCEL)
        return false;
    if (w->list)
        return waiter_withdraw(w, WN_CANCELED);
    /* A sleep: its timer is the only other party; if it has fired, the
     * node holds (or is about to hold) its result. */
    if (timed && !coexec__timer_cancel(&w->timer))
        return false;
    atom_store_rel_u32(&w->node.state, WN_CANCELED);
    return true;
}

static uint32_t block_ult(struct waiter *w, uint64_t deadline)
{
    struct coexec_unit_rec *self = atom_load_rlx_ptr(&w->node.who);
    /* Read here, not kept from the call's start: the ULT may have waited
     * and moved to another stream since. */
    struct coexec_xstream_rec *xs = coexec__xs_self();
    bool timed = false;
    if (deadline != UINT64_MAX) {
        w->timer.deadline = deadline;
        w->timer.fire = waiter_fire;
        if (coexec__timer_add(&xs->timers, &w->timer) == COEXEC_OK)
            timed = true;
        else if (waiter_withdraw(w, WN_NOMEM))
            return WN_NOMEM;
    }
    uint32_t s;
    if (fin_cancelling() && waiter_cancel(w, timed)) {
        s = WN_CANCELED;
        goto out;
    }
    /* A sleep is released by this stream's own timer only, which cannot
     * fire while we watch: park at once. */
    struct coexec_pool_rec *home = xs->cur_sched->pools[0];
    uint32_t exp = WN_WAITING;
    if (w->list && pool_size(home) == 0 &&
        atom_cas_rlx_u32(&w->node.state, &exp, WN_SPIN)) {
        for (int i = 0; i < WAIT_SPIN; i++) {
            if (atom_load_acq_u32(&w->node.state) != WN_SPIN)
                break;
            cpu_relax();
        }
        /* Take the mark back before parking; failing, we were released
         * (no wake was sent: nothing to drop below). */
        exp = WN_SPIN;
        atom_cas_ar_u32(&w->node.state, &exp, WN_WAITING);
    }
    unit_note_wait(self, w->what, w->obj, deadline);
    for (;;) {
        s = atom_load_acq_u32(&w->node.state);
        if (s == WN_WAITING) {
            /* Woken by finalize's sweep, or about to park after it. */
            if (fin_cancelling() && waiter_cancel(w, timed)) {
                s = WN_CANCELED;
                break;
            }
            coexec__park_current(self);
        } else if (s & WN_BUSY) {
            cpu_relax(); /* its releaser is a few instructions from done */
        } else {
            break;
        }
    }
out:
    if (timed)
        coexec__timer_cancel(&w->timer);
    /* The release may have found us running: drop the recorded wake so a
     * later park of ours does not return early. */
    coexec__wake_clear(self);
    return s;
}

static uint32_t block_external(struct waiter *w, uint64_t deadline)
{
    for (;;) {
        uint32_t s = atom_load_acq_u32(&w->node.state);
        if (s != WN_WAITING)
            return s;
        if (deadline == UINT64_MAX) {
            coexec__futex_wait(&w->node.state, WN_WAITING, NULL);
            continue;
        }
        if (clock_now_ns() >= deadline) {
            if (waiter_withdraw(w, WN_TIMEDOUT))
                return WN_TIMEDOUT;
            continue; /* released meanwhile: read its result */
        }
        struct timespec ts = clock_until(deadline);
        coexec__futex_wait(&w->node.state, WN_WAITING, &ts);
    }
}

uint32_t coexec__wait_block(struct waiter *w, uint64_t deadline)
{
    /* The unit, not flags: a releaser may set WN_DETACHED in flags under
     * the lock we do not hold. */
    if (atom_load_rlx_ptr(&w->node.who))
        return block_ult(w, deadline);
    return block_external(w, deadline);
}

int coexec__wait_link_tasklet(struct wlist *l, struct coexec_unit_rec *u,
                      uint32_t user_flags)
{
    struct wait_node *n = &u->tnode;
    if (fin_cancelling()) {
        /* Finalize reclaims the descriptor: leave nothing linked. */
        if (atom_load_rlx_ptr(&n->who) == l) {
            wlist_remove(l, n);
            atom_store_rlx_ptr(&n->who, NULL);
        }
        return COEXEC_ECANCELED;
    }
    if (atom_load_rlx_ptr(&n->who) == l)
        return COEXEC_OK; /* still linked from an earlier poll */
    n->flags = WN_TASKLET | user_flags;
    atom_store_rlx_u32(&n->state, WN_WAITING);
    atom_store_rlx_ptr(&n->who, l);
    wlist_push(l, n);
    return COEXEC_OK;
}
