/*
 * src/xstream/timer.c: each stream's timer heap, and sleeping.
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
 */
#include <stdlib.h>
#include <time.h>

#include "arch/clock.h"
#include "core/internal.h"
#include "core/spin.h"
#include "waker/wait.h"

static void heap_set(struct timer_heap *h, uint32_t i, struct timer *t)
{
    h->a[i] = t;
    t->idx = i;
}

static void heap_up(struct timer_heap *h, uint32_t i)
{
    struct timer *t = h->a[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h->a[p]->deadline <= t->deadline)
            break;
        heap_set(h, i, h->a[p]);
        i = p;
    }
    heap_set(h, i, t);
}

static void heap_down(struct timer_heap *h, uint32_t i)
{
    struct timer *t = h->a[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->a[c + 1]->deadline < h->a[c]->deadline)
            c++;
        if (t->deadline <= h->a[c]->deadline)
            break;
        heap_set(h, i, h->a[c]);
        i = c;
    }
    heap_set(h, i, t);
}

static void heap_remove(struct timer_heap *h, struct timer *t)
{
    uint32_t i = t->idx;
    t->idx = TIMER_OFF;
    struct timer *last = h->a[--h->n];
    if (i == h->n)
        return;
    heap_set(h, i, last);
    heap_up(h, i);
    heap_down(h, last->idx);
}

static void heap_publish(struct timer_heap *h)
{
    atom_store_rel_u64(&h->next, h->n ? h->a[0]->deadline : UINT64_MAX);
}

int coexec__timer_add(struct coexec_xstream_rec *xs, struct timer *t)
{
    struct timer_heap *h = &xs->timers;
    spin_lock(&h->lock);
    if (h->n == h->cap) {
        uint32_t cap = h->cap ? h->cap * 2 : 64;
        struct timer **a = realloc(h->a, cap * sizeof *a);
        if (!a) {
            spin_unlock(&h->lock);
            return COEXEC_ENOMEM;
        }
        h->a = a;
        h->cap = cap;
    }
    t->xs = xs;
    heap_set(h, h->n++, t);
    heap_up(h, t->idx);
    heap_publish(h);
    spin_unlock(&h->lock);
    return COEXEC_OK;
}

bool coexec__timer_cancel(struct timer *t)
{
    struct timer_heap *h = &t->xs->timers;
    spin_lock(&h->lock);
    bool in = t->idx != TIMER_OFF;
    if (in) {
        heap_remove(h, t);
        heap_publish(h);
    }
    spin_unlock(&h->lock);
    return in;
}

uint64_t coexec__timers_run(struct coexec_xstream_rec *xs, uint64_t now)
{
    struct timer_heap *h = &xs->timers;
    spin_lock(&h->lock);
    while (h->n && h->a[0]->deadline <= now) {
        struct timer *t = h->a[0];
        heap_remove(h, t);
        t->fire(t, false);
    }
    heap_publish(h);
    uint64_t next = h->n ? h->a[0]->deadline : UINT64_MAX;
    spin_unlock(&h->lock);
    return next;
}

void coexec__timers_cancel_all(struct coexec_xstream_rec *xs)
{
    struct timer_heap *h = &xs->timers;
    spin_lock(&h->lock);
    while (h->n) {
        struct timer *t = h->a[0];
        heap_remove(h, t);
        t->fire(t, true);
    }
    heap_publish(h);
    spin_unlock(&h->lock);
}

/* ---- sleeping --------------------------------------------------------- */

COEXEC_API uint64_t coexec_now_ns(void)
{
    return clock_now_ns();
}

COEXEC_API int coexec_sleep_until(uint64_t deadline)
{
    struct caller c;
    int rc = wait_caller(&c);
    if (rc == COEXEC_OK && !c.u) {
        /* An external thread, with or without the runtime. */
        for (;;) {
            uint64_t now = clock_now_ns();
            if (now >= deadline)
                return COEXEC_OK;
            struct timespec ts = clock_until(deadline);
            nanosleep(&ts, NULL);
        }
    }
    if (rc)
        return rc;
    if (clock_now_ns() >= deadline)
        return COEXEC_OK;
    struct waiter w;
    waiter_init(&w, &c, NULL, NULL, 0);
    /* Only the timer releases the node, so this returns at the deadline,
     * whatever wakes the ULT meanwhile (finalize excepted). */
    uint32_t r = coexec__wait_block(&w, deadline);
    return r == WN_TIMEDOUT ? COEXEC_OK : coexec__wait_result_code(r);
}

COEXEC_API int coexec_sleep_ns(uint64_t ns)
{
    if (ns == 0) {
        struct caller c;
        int rc = wait_caller(&c);
        if (rc == COEXEC_OK && !c.u)
            return COEXEC_OK;
        if (rc)
            return rc;
        return coexec_yield();
    }
    return coexec_sleep_until(clock_deadline(ns));
}
