/*
 * src/waker/channel.c: bounded MPMC channels of fixed-size messages.
 *
 * Room plaque. A ring of `cap` messages under one spin lock, with two wait
 * lists: receivers waiting for a message, senders waiting for room.
 * Receivers wait only while the ring is empty and senders only while it is
 * full. A send that finds a waiting ULT or thread receiver copies the
 * message straight into its buffer and releases it done (no second trip
 * through the lock, as in Go's channels); a receive that makes room moves
 * the oldest waiting sender's message into the ring for it. A waiting
 * tasklet has no buffer that outlives its poll: it is released to poll
 * again, and a message taken by a newcomer first simply sends it back to
 * wait. Close releases both lists with WN_CLOSED; receivers still drain
 * what is queued.
 */
#include <stdlib.h>
#include <string.h>

#include "arch/clock.h"
#include "waker/wait.h"

struct channel {
    uint64_t magic_;
    atom_u32_t lock;
    uint32_t closed;
    size_t msg_size, cap;
    size_t head, count; /* oldest message, and how many */
    unsigned char *buf;
    struct wlist recvq, sendq;
};
OBJ_CAST(coexec_channel_t, struct channel, ch_of)

COEXEC_API int coexec_channel_init(coexec_channel_t *ch, size_t msg_size,
                                   size_t capacity)
{
    if (!ch || !msg_size || !capacity || capacity > SIZE_MAX / msg_size)
        return COEXEC_EINVAL;
    struct channel *c = ch_of(ch);
    memset(c, 0, sizeof *c);
    c->buf = malloc(msg_size * capacity);
    if (!c->buf)
        return COEXEC_ENOMEM;
    c->msg_size = msg_size;
    c->cap = capacity;
    wlist_init(&c->recvq, &c->lock);
    wlist_init(&c->sendq, &c->lock);
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

static void ring_put(struct channel *c, const void *msg)
{
    size_t tail = (c->head + c->count) % c->cap;
    memcpy(c->buf + tail * c->msg_size, msg, c->msg_size);
    c->count++;
}

/* Under the lock: put msg if there is room (COEXEC_OK), else COEXEC_EAGAIN;
 * COEXEC_ECLOSED once closed. A waiting ULT or thread receiver gets the
 * message copied straight into its buffer; a waiting tasklet is released
 * to poll for it. */
static int put_locked(struct channel *c, const void *msg)
{
    if (c->closed)
        return COEXEC_ECLOSED;
    struct wait_node *n = c->recvq.head;
    if (n && !node_is_tasklet(n)) {
        /* Receivers wait only while the ring is empty: FIFO holds. */
        wlist_remove(&c->recvq, n);
        memcpy(node_waiter(n)->data, msg, c->msg_size);
        coexec__wait_release(n, WN_DONE);
        return COEXEC_OK;
    }
    if (c->count == c->cap)
        return COEXEC_EAGAIN;
    ring_put(c, msg);
    if (n) {
        wlist_remove(&c->recvq, n);
        coexec__wait_release(n, WN_DONE);
    }
    return COEXEC_OK;
}

/* Under the lock: take the oldest message (COEXEC_OK), else COEXEC_EAGAIN,
 * or COEXEC_ECLOSED once closed and empty. The room it makes goes to the
 * oldest waiting sender: a ULT's or thread's message is moved into the
 * ring for it, a tasklet is released to poll. */
static int take_locked(struct channel *c, void *msg)
{
    if (c->count == 0)
        return c->closed ? COEXEC_ECLOSED : COEXEC_EAGAIN;
    memcpy(msg, c->buf + c->head * c->msg_size, c->msg_size);
    c->head = (c->head + 1) % c->cap;
    c->count--;
    struct wait_node *n = wlist_pop(&c->sendq);
    if (n) {
        if (!node_is_tasklet(n))
            ring_put(c, node_waiter(n)->data);
        coexec__wait_release(n, WN_DONE);
    }
    return COEXEC_OK;
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
        waiter_init(&w, &cl, q, &c->lock, 0);
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
        coexec__wait_unlink_tasklet(u);
    spin_lock(&c->lock);
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
    coexec__wait_release_all(&c->recvq, WN_CLOSED);
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
