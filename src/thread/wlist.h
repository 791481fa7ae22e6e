/*
 * src/thread/wlist.h: a wait list: the units (and external threads) that
 * wait on one object, under the object's own lock (src/waker/wait.h says
 * how waiting works).
 *
 * It lives with the units because a tasklet's wait node lives in its
 * descriptor: whoever ends a tasklet early (finalize) or polls it again
 * takes the node off its list from here, under the list's lock, without
 * knowing the object.
 */
#ifndef COEXEC_THREAD_WLIST_H
#define COEXEC_THREAD_WLIST_H

#include <stdbool.h>
#include <stddef.h>

#include "arch/atomic.h"
#include "base/list.h"
#include "thread/unit.h"

/* wait_node.flags: a tasklet a channel reserved a message for
 * (src/waker/channel.c): it stays linked until it takes it, and an unlink
 * must tell the channel, through coexec__wlist_ungrant. */
#define WN_GRANTED 0x20000000u

struct wlist {
    struct wait_node *head, *tail;
    atom_u32_t *lock; /* the owner's lock, for unlinking a tasklet */
};

/* Set by the channels (void (*)(struct wlist *)) before they grant:
 * called, under the list's lock, when a WN_GRANTED node is unlinked early. */
extern atom_ptr_t coexec__wlist_ungrant;

static inline void wlist_init(struct wlist *l, atom_u32_t *lock)
{
    l->head = l->tail = NULL;
    l->lock = lock;
}

static inline bool wlist_empty(const struct wlist *l)
{
    return l->head == NULL;
}

static inline void wlist_push(struct wlist *l, struct wait_node *n)
{
    DL_PUSH_TAIL(l->head, l->tail, n);
}

static inline void wlist_remove(struct wlist *l, struct wait_node *n)
{
    DL_UNLINK(l->head, l->tail, n);
}

static inline struct wait_node *wlist_pop(struct wlist *l)
{
    struct wait_node *n = l->head;
    if (n)
        wlist_remove(l, n);
    return n;
}

/* Takes tasklet u's wait node off the list it is linked on, if any
 * (src/thread/run.c). */
void coexec__wlist_unlink_tasklet(struct coexec_unit_rec *u);

#endif /* COEXEC_THREAD_WLIST_H */
