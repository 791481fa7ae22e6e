/*
 * src/waker/channel.c: bounded MPMC channels of fixed-size messages.
 *
 * Room plaque. A ring of `cap` messages under one spin lock, with two wait
 * lists: receivers waiting for a message, senders waiting for room.
 * Delivery is FIFO for every kind of receiver: a message goes to the
 * oldest waiting receiver, and a receiver that waits never sees a
 * message sent before one it was given. So:
 *  - a waiting ULT or thread receiver gets the message copied straight
 *    into its buffer and is released done (no second trip through the
 *    lock, as in Go's channels);
 *  - a waiting tasklet has no buffer that outlives its poll: the message
 *    goes into the ring *reserved* for it, and the tasklet is woken but
 *    stays linked, marked WN_GRANTED. The first `reserved` messages of the
 *    ring belong to the granted tasklets at the head of `recvq`, in order;
 *    a granted tasklet's next poll takes its own one (from the middle of
 *    the ring if a tasklet granted before it has not polled yet).
 *    Everybody else only takes unreserved messages.
 * Hence `recvq` is the granted tasklets, then the waiting receivers, and a
 * receiver waits only while no unreserved message is queued. A receive
 * that makes room moves the oldest waiting sender's message into the ring
 * for it (a waiting tasklet sender is released to poll again) and passes
 * what is then unreserved on to waiting receivers (pump). A granted
 * tasklet that leaves without polling (it polled another object, or
 * returned READY) gives up its grant: the last reserved message becomes
 * unreserved (channel_ungrant, called by the generic unlink through
 * coexec__wlist_ungrant).
 * Close releases the waiting senders and receivers with WN_CLOSED;
 * receivers still drain what is queued, granted tasklets their message.
 */
#include <stdlib.h>
#include <string.h>

#include "arch/clock.h"
#include "base/valgrind.h"
#include "waker/wait.h"

static void channel_ungrant(struct wlist *l);

struct channel {
    uint64_t magic_;
    atom_u32_t lock;
    uint32_t closed;
    size_t msg_size, cap;
    size_t head, count; /* oldest message, and how many */
    size_t reserved;    /* of which the first ones are granted tasklets' */
    unsigned char *buf;
    struct wlist recvq, sendq;
};
OBJ_CAST(coexec_channel_t, struct channel, ch_of)

COEXEC_API int coexec_channel_init(coexec_channel_t *ch, size_t msg_size,
                                   size_t capacity)
{
    vg_init_reads(ch, sizeof *ch);
    if (!ch || !msg_size || !capacity || capacity > SIZE_MAX / msg_size)
        return COEXEC_EINVAL;
    struct channel *c = ch_of(ch);
    unsigned char *buf = malloc(msg_size * capacity);
    if (!buf)
        return COEXEC_ENOMEM;
    unsigned char *old = NULL;
    /* Live (its header and list say so; a byte copy of one is not): as
     * destroy then init, under its lock, unless waited on (granted
     * tasklets included). */
    bool live = c->magic_ == OBJ_MAGIC_CHANNEL && c->recvq.lock == &c->lock;
    if (live) {
        spin_lock(&c->lock);
        if (!wlist_empty(&c->recvq) || !wlist_empty(&c->sendq)) {
            spin_unlock(&c->lock);
            free(buf);
            return COEXEC_EBUSY;
        }
        old = c->buf;
    } else {
        memset(c, 0, sizeof *c);
    }
    c->buf = buf;
    c->msg_size = msg_size;
    c->cap = capacity;
    c->head = c->count = c->reserved = 0;
    c->closed = 0;
    wlist_init(&c->recvq, &c->lock);
    atom_store_rlx_ptr(&coexec__wlist_ungrant, (void *)channel_ungrant);
    wlist_init(&c->sendq, &c->lock);
    if (live) {
        spin_unlock(&c->lock);
        free(old);
        return COEXEC_OK;
    }
    c->magic_ = OBJ_MAGIC_CHANNEL;
    return COEXEC_OK;
}

COEXEC_API int coexec_channel_destroy(coexec_channel_t *ch)
{
    struct channel *c = ch_of(ch);
    OBJ_CHECK(c, OBJ_MAGIC_CHANNEL);
    spin_lock(&c->lock);
    int rc_ = obj_retire(&c->magic_, !wlist_empty(&c->recvq) ||
                                         !wlist_empty(&c->sendq));
    spin_unlock(&c->lock);
    if (rc_)
        return rc_;
    free(c->buf);
    c->buf = NULL;
    return COEXEC_OK;
}

static bool node_is_tasklet(const struct wait_node *n)
{
    return (n->flags & WN_KIND) == WN_TASKLET;
}

static unsigned char *slot(struct channel *c, size_t i)
{
    return c->buf + i * c->msg_size;
}

/* The slot k places after the oldest message (k < cap: no division). */
static size_t ring_index(const struct channel *c, size_t k)
{
    size_t i = c->head + k;
    return i >= c->cap ? i - c->cap : i;
}

static void ring_put(struct channel *c, const void *msg)
{
    memcpy(slot(c, ring_index(c, c->count)), msg, c->msg_size);
    c->count++;
}

/* Takes the oldest message into msg. */
static ALWAYS_INLINE void ring_take_oldest(struct channel *c, void *msg)
{
    memcpy(msg, slot(c, c->head), c->msg_size);
    c->head = ring_index(c, 1);
    c->count--;
}

/* Takes the k-th oldest message into msg. The k messages before it each
 * move one slot up, so they keep their places counted from the head. */
static void ring_take(struct channel *c, size_t k, void *msg)
{
    size_t i = ring_index(c, k);
    memcpy(msg, slot(c, i), c->msg_size);
    while (i != c->head) {
        size_t prev = (i ? i : c->cap) - 1;
        memcpy(slot(c, i), slot(c, prev), c->msg_size);
        i = prev;
    }
    c->head = ring_index(c, 1);
    c->count--;
}

/* The oldest receiver that waits: the one after the granted tasklets. */
static struct wait_node *first_waiting(struct channel *c)
{
    struct wait_node *n = c->recvq.head;
    for (size_t i = 0; i < c->reserved; i++)
        n = n->next;
    return n;
}

/* Grants the waiting tasklet n the message just put at the end of the
 * reserved ones: it stays linked, and is woken to poll for it. */
static void grant(struct channel *c, struct wait_node *n)
{
    struct coexec_unit_rec *u = container_of(n, struct coexec_unit_rec,
                                             tnode);
    /* u is linked, so alive, and this is its tag (as in coexec__wait_release). */
    uint32_t tag = atom_load_rlx_u32(&u->wake) & ~WAKE_FLAGS;
    n->flags |= WN_GRANTED;
    c->reserved++;
    coexec__wake_tagged(u, tag);
}

/* Hands the oldest unreserved message to the oldest waiting receiver.
 * Returns false when there is no such pair. */
static bool serve_receiver(struct channel *c)
{
    if (c->count == c->reserved)
        return false;
    struct wait_node *n = first_waiting(c);
    if (!n)
        return false;
    if (node_is_tasklet(n)) {
        /* The oldest unreserved message is the next reserved one. */
        grant(c, n);
        return true;
    }
    wlist_remove(&c->recvq, n);
    ring_take(c, c->reserved, node_waiter(n)->data);
    coexec__wait_release(n, WN_DONE);
    return true;
}

/* After room was made or a message unreserved: moves waiting senders'
 * messages into the ring and unreserved messages to waiting receivers
 * until neither can go on. The oldest waiting sender, if a tasklet, is
 * released to poll for the room instead (one sender per room made, as
 * before: a newcomer may take it first, and the tasklet then waits
 * again). */
static void pump(struct channel *c)
{
    for (;;) {
        while (serve_receiver(c))
            ;
        struct wait_node *n = c->sendq.head;
        if (!n || c->count == c->cap)
            return;
        wlist_remove(&c->sendq, n);
        if (node_is_tasklet(n)) {
            coexec__wait_release(n, WN_DONE);
            return;
        }
        ring_put(c, node_waiter(n)->data);
        coexec__wait_release(n, WN_DONE);
    }
}

/* Under the lock: put msg if there is room (COEXEC_OK), else COEXEC_EAGAIN;
 * COEXEC_ECLOSED once closed. The oldest waiting receiver gets it: a ULT
 * or thread copied straight into its buffer, a tasklet as a message
 * reserved for it in the ring. */
static int put_locked(struct channel *c, const void *msg)
{
    if (c->closed)
        return COEXEC_ECLOSED;
    /* A receiver waits only while no unreserved message is queued, so it
     * is next in line for this one. */
    struct wait_node *n = c->recvq.head;
    if (UNLIKELY(c->reserved))
        n = first_waiting(c);
    if (n && !node_is_tasklet(n)) {
        wlist_remove(&c->recvq, n);
        memcpy(node_waiter(n)->data, msg, c->msg_size);
        coexec__wait_release(n, WN_DONE);
        /* The ring's room, which a sender released to poll for it may have
         * been woken for, is still free: pass it on to the next waiting
         * sender, or that one would wait with the ring empty. */
        if (UNLIKELY(c->sendq.head != NULL))
            pump(c);
        return COEXEC_OK;
    }
    if (c->count == c->cap)
        return COEXEC_EAGAIN;
    ring_put(c, msg);
    if (n)
        grant(c, n);
    return COEXEC_OK;
}

/* Under the lock: take the oldest unreserved message (COEXEC_OK), else
 * COEXEC_EAGAIN, or COEXEC_ECLOSED once closed and drained. The room it
 * makes goes to the waiting senders. */
static int take_locked(struct channel *c, void *msg)
{
    if (c->count == c->reserved)
        return c->closed ? COEXEC_ECLOSED : COEXEC_EAGAIN;
    if (LIKELY(c->reserved == 0))
        ring_take_oldest(c, msg);
    else
        ring_take(c, c->reserved, msg);
    /* No receiver waits while this message was unreserved: the room is
     * for the senders, if any wait. */
    if (UNLIKELY(c->sendq.head != NULL))
        pump(c);
    return COEXEC_OK;
}

/* Under the lock: the granted tasklet u takes the message reserved for
 * it, the one of its rank among the granted tasklets. */
static void take_granted(struct channel *c, struct coexec_unit_rec *u,
                         void *msg)
{
    size_t k = 0;
    for (struct wait_node *n = c->recvq.head; n != &u->tnode; n = n->next)
        k++;
    wlist_remove(&c->recvq, &u->tnode);
    atom_store_rlx_ptr(&u->tnode.who, NULL);
    ring_take(c, k, msg);
    c->reserved--;
    pump(c);
}

static void channel_ungrant(struct wlist *l)
{
    struct channel *c = container_of(l, struct channel, recvq);
    /* The grants after it move up one message each; the last reserved
     * message is free again. */
    c->reserved--;
    pump(c);
}

/* send (is_send) or recv, waiting until deadline. A ULT or thread that
 * waits is released with WN_DONE once its message was moved for it, or
 * with WN_CLOSED. */
static int ch_xfer(coexec_channel_t *ch, void *msg, bool is_send,
                   uint64_t deadline)
{
    struct channel *c = ch_of(ch);
    OBJ_CHECK(c, OBJ_MAGIC_CHANNEL);
    if (!msg)
        return COEXEC_EINVAL;
    struct caller cl;
    int rc = wait_caller(&cl);
    if (rc)
        return rc;
    struct wlist *q = is_send ? &c->sendq : &c->recvq;
    for (;;) {
        spin_lock(&c->lock);
        rc = is_send ? put_locked(c, msg) : take_locked(c, msg);
        if (rc != COEXEC_EAGAIN) {
            spin_unlock(&c->lock);
            return rc;
        }
        struct waiter w;
        waiter_init(&w, &cl, q, &c->lock, 0,
                    is_send ? "channel send" : "channel recv", c);
        w.data = msg;
        wlist_push(q, &w.node);
        spin_unlock(&c->lock);
        uint32_t r = coexec__wait_block(&w, deadline);
        if (r != WN_CLOSED)
            return coexec__wait_result_code(r);
        /* Closed: a receiver still drains what is queued. */
    }
}

COEXEC_API int coexec_channel_send(coexec_channel_t *ch, const void *msg)
{
    return ch_xfer(ch, (void *)msg, true, UINT64_MAX);
}

COEXEC_API int coexec_channel_recv(coexec_channel_t *ch, void *msg)
{
    return ch_xfer(ch, msg, false, UINT64_MAX);
}

COEXEC_API int coexec_channel_send_timed(coexec_channel_t *ch, const void *msg,
                                         uint64_t timeout_ns)
{
    return ch_xfer(ch, (void *)msg, true, clock_deadline(timeout_ns));
}

COEXEC_API int coexec_channel_recv_timed(coexec_channel_t *ch, void *msg,
                                         uint64_t timeout_ns)
{
    return ch_xfer(ch, msg, false, clock_deadline(timeout_ns));
}

static int ch_try(coexec_channel_t *ch, void *msg, bool is_send)
{
    struct channel *c = ch_of(ch);
    OBJ_CHECK(c, OBJ_MAGIC_CHANNEL);
    if (!msg)
        return COEXEC_EINVAL;
    spin_lock(&c->lock);
    int rc = is_send ? put_locked(c, msg) : take_locked(c, msg);
    spin_unlock(&c->lock);
    return rc;
}

COEXEC_API int coexec_channel_try_send(coexec_channel_t *ch, const void *msg)
{
    return ch_try(ch, (void *)msg, true);
}

COEXEC_API int coexec_channel_try_recv(coexec_channel_t *ch, void *msg)
{
    return ch_try(ch, msg, false);
}

static int ch_poll(coexec_channel_t *ch, coexec_poll_t *cx, void *msg,
                   bool is_send)
{
    struct channel *c = ch_of(ch);
    OBJ_CHECK(c, OBJ_MAGIC_CHANNEL);
    struct coexec_unit_rec *u = coexec__poll_unit(cx);
    if (!u || !msg)
        return COEXEC_EINVAL;
    struct wlist *q = is_send ? &c->sendq : &c->recvq;
    struct wlist *cur = atom_load_acq_ptr(&u->tnode.who);
    if (cur && cur != q)
        coexec__wlist_unlink_tasklet(u);
    spin_lock(&c->lock);
    if (!is_send && atom_load_rlx_ptr(&u->tnode.who) == q &&
        (u->tnode.flags & WN_GRANTED)) {
        take_granted(c, u, msg);
        spin_unlock(&c->lock);
        return COEXEC_READY;
    }
    int rc = is_send ? put_locked(c, msg) : take_locked(c, msg);
    if (rc == COEXEC_EAGAIN) {
        rc = coexec__wait_link_tasklet(q, u, 0);
        if (rc == COEXEC_OK)
            rc = COEXEC_PENDING;
    } else if (atom_load_rlx_ptr(&u->tnode.who) == q) {
        /* Done (or closed) while still linked from an earlier poll. */
        wlist_remove(q, &u->tnode);
        atom_store_rlx_ptr(&u->tnode.who, NULL);
    }
    spin_unlock(&c->lock);
    return rc;
}

COEXEC_API int coexec_channel_poll_send(coexec_channel_t *ch, coexec_poll_t *cx,
                                        const void *msg)
{
    return ch_poll(ch, cx, (void *)msg, true);
}

COEXEC_API int coexec_channel_poll_recv(coexec_channel_t *ch, coexec_poll_t *cx,
                                        void *msg)
{
    return ch_poll(ch, cx, msg, false);
}

COEXEC_API int coexec_channel_close(coexec_channel_t *ch)
{
    struct channel *c = ch_of(ch);
    OBJ_CHECK(c, OBJ_MAGIC_CHANNEL);
    spin_lock(&c->lock);
    c->closed = 1;
    /* Granted tasklets keep their messages: release the others. */
    struct wait_node *n;
    while ((n = first_waiting(c)) != NULL) {
        wlist_remove(&c->recvq, n);
        coexec__wait_release(n, WN_CLOSED);
    }
    coexec__wait_release_all(&c->sendq, WN_CLOSED);
    spin_unlock(&c->lock);
    return COEXEC_OK;
}

COEXEC_API int coexec_channel_count(coexec_channel_t *ch, size_t *count)
{
    struct channel *c = ch_of(ch);
    OBJ_CHECK(c, OBJ_MAGIC_CHANNEL);
    if (!count)
        return COEXEC_EINVAL;
    spin_lock(&c->lock);
    *count = c->count;
    spin_unlock(&c->lock);
    return COEXEC_OK;
}
