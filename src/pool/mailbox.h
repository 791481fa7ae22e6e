/*
 * src/pool/mailbox.h: a stream's mailbox (src/pool/mailbox.c): how other
 * threads make units runnable on a stream whose pools they may not touch,
 * and wake it.
 */
#ifndef COEXEC_POOL_MAILBOX_H
#define COEXEC_POOL_MAILBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/atomic.h"
#include "base/parker.h"

struct coexec_unit_rec;

/* Waker pages: WPAGES lines of 64 notify bits. */
#define WPAGES 64
struct wpage {
    atom_u64_t notified; /* set by wakers (one atomic OR), taken by the owner */
} CACHE_ALIGNED;
struct wdir {
    struct wpage page[WPAGES];
    uint64_t used[WPAGES];                     /* owner only */
    struct coexec_unit_rec *slot[WPAGES * 64]; /* owner only */
    unsigned hint;                             /* a page with free slots */
};

/* Lives in the part of the stream record that other threads write. */
struct mailbox {
    atom_ptr_t inbox;    /* woken units, newest first (base/lfstack.h) */
    atom_u64_t wsummary; /* bit i: page i of wdir has notify bits */
    atom_u32_t park;     /* the stream's park word (base/parker.h) */
    /* The waker pages: allocated by the owner on the first private park,
     * kept (and reused) after the stream stops, so a late waker never
     * touches freed memory. */
    struct wdir *wdir;
};

/* Owner: a slot for u, which parks; 0 when none is free (its wake then
 * goes through the inbox). */
uintptr_t coexec__mb_slot_take(struct mailbox *mb, struct coexec_unit_rec *u);
/* Owner: gives a slot back unused (the park did not happen). */
void coexec__mb_slot_free(struct mailbox *mb, uintptr_t key);
/* Any thread, the one waker of the unit parked in slot key: marks it and
 * kicks the stream. */
void coexec__mb_wake(struct mailbox *mb, uintptr_t key);
/* Any thread: queues u in the inbox and kicks the stream. */
void coexec__mb_push(struct mailbox *mb, struct coexec_unit_rec *u);
/* Owner: every woken unit, as a chain linked by next, in wake order
 * (pages, then the inbox oldest first); NULL when none. */
struct coexec_unit_rec *coexec__mb_take(struct mailbox *mb);
/* Anything waiting? seq_cst, against the kicker (see park_stream). */
static inline bool mb_pending(struct mailbox *mb)
{
    return atom_load_sc_ptr(&mb->inbox) || atom_load_sc_u64(&mb->wsummary);
}
/* Finalize: frees the waker pages. */
void coexec__mb_free(struct mailbox *mb);

#endif /* COEXEC_POOL_MAILBOX_H */
