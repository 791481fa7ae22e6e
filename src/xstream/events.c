/*
 * src/xstream/events.c: a stream's event pool: the waker pages and the
 * remote-wake inbox through which other threads make units runnable in
 * pools only this stream may touch.
 *
 * Room plaque. A unit whose home pool is private to stream X takes a slot
 * of X's waker pages when it parks (X's own thread allocates it, in
 * park_commit, before PARKED is published) and keeps the slot's key in its
 * descriptor's `prev` while parked. Whoever wins the wake (the CAS that
 * clears PARKED in the unit's own state word; src/thread/thread.c) sets the
 * slot's bit with one atomic OR, marks the page in X's summary word if the
 * page had no bit yet, and kicks X. X takes the summary with one exchange
 * and each marked page's bits with one exchange, frees the slots and queues
 * the units. So:
 *  - a wake that arrives while the unit still runs never reaches a page:
 *    the state word records it and the unit's park returns at once;
 *  - a bit is only ever set for a parked unit, by the one waker that won
 *    it, so a drain can never wipe a wake meant for later, and a slot is
 *    never "dropped" or "borrowed" behind the owner's back: a slot is
 *    taken at park and freed at the one wake, both by the owner;
 *  - a drain touches only pages whose summary bit is set;
 *  - a stale waker (its unit finished, the descriptor reused) fails the
 *    state word's CAS, whose tag is the generation, and touches nothing.
 * Memory orders: the OR on the page and on the summary are release, the
 * owner's exchanges acquire; the summary and the inbox are read with
 * seq_cst in park_stream against the kicker's seq_cst exchange.
 * When the WPAGES * 64 slots are all taken, further parkers have key 0 and
 * their wakes use the inbox, an intrusive lock-free stack.
 */
#include <stdlib.h>
#include <string.h>

#include "base/global.h"
#include "base/lfstack.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

uintptr_t coexec__events_slot_take(struct coexec_xstream_rec *xs,
                                   struct coexec_unit_rec *u)
{
    struct wdir *d = xs->wdir;
    if (UNLIKELY(!d)) {
        d = aligned_alloc(CACHE_LINE, sizeof *d);
        if (!d)
            return 0;
        memset(d, 0, sizeof *d);
        xs->wdir = d;
    }
    for (unsigned k = 0; k < WPAGES; k++) {
        unsigned p = (d->hint + k) % WPAGES;
        uint64_t used = d->used[p];
        if (used != UINT64_MAX) {
            unsigned b = (unsigned)__builtin_ctzll(~used);
            d->used[p] = used | (1ull << b);
            d->hint = p;
            d->slot[p * 64 + b] = u;
            return (uintptr_t)(p * 64 + b) + 1;
        }
    }
    return 0;
}

void coexec__events_slot_free(struct coexec_xstream_rec *xs, uintptr_t key)
{
    unsigned i = (unsigned)(key - 1);
    xs->wdir->used[i / 64] &= ~(1ull << (i % 64));
    xs->wdir->slot[i] = NULL;
}

void coexec__events_wake(struct coexec_xstream_rec *xs, uintptr_t key)
{
    unsigned i = (unsigned)(key - 1), p = i / 64;
    struct wdir *d = xs->wdir;
    /* Release: the unit's fields (and what its waker wrote before waking
     * it) travel with the bit. */
    if (atom_for_rel_u64(&d->page[p].notified, 1ull << (i % 64)) != 0)
        return; /* the page was marked: its first waker kicks */
    atom_for_rel_u64(&xs->wsummary, 1ull << p);
    coexec__xs_kick(xs);
}

bool coexec__xs_drain_events(struct coexec_xstream_rec *xs)
{
    bool any = false;
    if (atom_load_rlx_u64(&xs->wsummary)) {
        struct wdir *d = xs->wdir;
        uint64_t pages = atom_xchg_acq_u64(&xs->wsummary, 0);
        while (pages) {
            unsigned p = (unsigned)__builtin_ctzll(pages);
            pages &= pages - 1;
            uint64_t bits = atom_xchg_acq_u64(&d->page[p].notified, 0);
            d->used[p] &= ~bits;
            while (bits) {
                unsigned b = (unsigned)__builtin_ctzll(bits);
                bits &= bits - 1;
                struct coexec_unit_rec *u = d->slot[p * 64 + b];
                d->slot[p * 64 + b] = NULL;
                coexec__enqueue_woken(u);
                any = true;
            }
        }
    }
    if (atom_load_rlx_ptr(&xs->inbox)) {
        /* Acquire: pairs with the release in coexec__xs_inbox_push, so the
         * units' fields written by the wakers are visible. */
        struct coexec_unit_rec *rev = lfs_take_all(&xs->inbox);
        /* The inbox is a stack: reverse it to queue in arrival order. */
        LFS_REVERSE(rev);
        while (rev) {
            struct coexec_unit_rec *n = rev->next;
            coexec__enqueue_woken(rev);
            rev = n;
            any = true;
        }
    }
    return any;
}

void coexec__xs_events_free(struct coexec_xstream_rec *xs)
{
    free(xs->wdir);
    xs->wdir = NULL;
    free(xs->timers.a);
    xs->timers.a = NULL;
    xs->timers.cap = 0;
}
