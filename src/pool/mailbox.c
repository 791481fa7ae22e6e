/*
 * src/pool/mailbox.c: a stream's mailbox: the waker pages and the
 * remote-wake inbox through which other threads make units runnable in
 * pools only this stream may touch, and the park word that wakes it.
 *
 * Room plaque. A unit whose home pool is private to stream X takes a slot
 * of X's waker pages when it parks (X's own thread allocates it, in
 * park_commit, before PARKED is published) and keeps the slot's key in its
 * descriptor's `prev` while parked. Whoever wins the wake (the CAS that
 * clears PARKED in the unit's own state word; src/thread/run.c) sets the
 * slot's bit with one atomic OR, marks the page in X's summary word if the
 * page had no bit yet, and kicks X. X takes the summary with one exchange
 * and each marked page's bits with one exchange, frees the slots and hands
 * the units, as one chain, to its scheduler, which queues them. So:
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
 * seq_cst in park_stream (src/sched/) against the kicker's seq_cst
 * exchange (base/parker.h).
 * When the WPAGES * 64 slots are all taken, further parkers have key 0 and
 * their wakes use the inbox, an intrusive lock-free stack.
 */
#include <stdlib.h>
#include <string.h>

#include "arch/compiler.h"
#include "base/lfstack.h"
#include "pool/mailbox.h"
#include "thread/unit.h"

uintptr_t coexec__mb_slot_take(struct mailbox *mb, struct coexec_unit_rec *u)
{
    struct wdir *d = mb->wdir;
    if (UNLIKELY(!d)) {
        d = aligned_alloc(CACHE_LINE, sizeof *d);
        if (!d)
            return 0;
        memset(d, 0, sizeof *d);
        mb->wdir = d;
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

void coexec__mb_slot_free(struct mailbox *mb, uintptr_t key)
{
    unsigned i = (unsigned)(key - 1);
    mb->wdir->used[i / 64] &= ~(1ull << (i % 64));
    mb->wdir->slot[i] = NULL;
}

void coexec__mb_wake(struct mailbox *mb, uintptr_t key)
{
    unsigned i = (unsigned)(key - 1), p = i / 64;
    struct wdir *d = mb->wdir;
    /* Release: the unit's fields (and what its waker wrote before waking
     * it) travel with the bit. */
    if (atom_for_rel_u64(&d->page[p].notified, 1ull << (i % 64)) != 0)
        return; /* the page was marked: its first waker kicks */
    atom_for_rel_u64(&mb->wsummary, 1ull << p);
    parker_kick(&mb->park);
}

void coexec__mb_push(struct mailbox *mb, struct coexec_unit_rec *u)
{
    /* The unit's fields travel with it (base/lfstack.h). */
    LFS_PUSH(&mb->inbox, u);
    parker_kick(&mb->park);
}

struct coexec_unit_rec *coexec__mb_take(struct mailbox *mb)
{
    struct coexec_unit_rec *head = NULL, **tail = &head;
    if (atom_load_rlx_u64(&mb->wsummary)) {
        struct wdir *d = mb->wdir;
        uint64_t pages = atom_xchg_acq_u64(&mb->wsummary, 0);
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
                *tail = u;
                tail = &u->next;
            }
        }
    }
    if (atom_load_rlx_ptr(&mb->inbox)) {
        /* Acquire: pairs with the release in coexec__mb_push, so the
         * units' fields written by the wakers are visible. */
        struct coexec_unit_rec *rev = lfs_take_all(&mb->inbox);
        /* The inbox is a stack: reverse it to queue in arrival order. */
        LFS_REVERSE(rev);
        *tail = rev;
        tail = NULL;
    }
    if (tail)
        *tail = NULL;
    return head;
}

void coexec__mb_free(struct mailbox *mb)
{
    free(mb->wdir);
    mb->wdir = NULL;
}
