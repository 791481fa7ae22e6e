/*
 * src/waker/wait.h: wait lists, the one mechanism every blocking primitive
 * (eventual, future, channel, mutex, cond, rwlock, barrier, sleep) is
 * built on.
 *
 * Room plaque. An object keeps a spin lock and one or more wait lists. A
 * caller that must wait, holding the lock, links a wait node and unlocks:
 *  - a ULT's node is on its own stack; it parks until the node is released
 *    (a timer in its stream's heap releases it with WN_TIMEDOUT first, if
 *    it has a deadline);
 *  - an external thread's node is on its stack too, and its state word is
 *    the futex it sleeps on;
 *  - a tasklet's node is in its descriptor: the poll call links it and the
 *    tasklet returns PENDING; it is polled again once released.
 * Whoever changes the object so that a waiter may go (set, unlock, send,
 * signal...) takes the lock, unlinks the node, and calls coexec__wait_release()
 * with the result, still under the lock. Timeouts unlink under the lock
 * too, so a node is released exactly once: by the object or by its timer.
 *
 * A ULT's node is released in two steps, result | WN_BUSY, then the wake,
 * then result: the waiter does not leave (and its stack frame, the node,
 * stays alive) until the releaser is done with it. The wake targets the
 * unit's current generation tag, read while the unit certainly waits. A
 * ULT that watches its node before parking marks it WN_SPIN, and takes
 * the mark back (CAS) before it parks: a releaser whose exchange finds the
 * mark skips the wake, and the watcher leaves no recorded wake behind.
 *
 * Finalize: a stopping stream fires its timers early with WN_CANCELED;
 * once only the primary runs (FIN_CANCEL), a ULT about to park, or woken
 * by finalize's sweep, takes its node off the list itself (WN_CANCELED,
 * unless WN_NOCANCEL), and a tasklet's poll links nothing. So no node of a
 * unit is left on an object when finalize reclaims stacks and descriptors.
 */
#ifndef COEXEC_WAKER_WAIT_H
#define COEXEC_WAKER_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/global.h"
#include "base/list.h"
#include "base/spin.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "thread/wlist.h"
#include "xstream/xstream.h"

/* wait_node.flags: the kind in the low bits; owners use WN_USER and up. */
#define WN_ULT 1u
#define WN_EXTERNAL 2u
#define WN_TASKLET 3u
#define WN_KIND 3u
#define WN_USER 0x100u
/* Unlinked by a releaser that will release it after dropping the lock:
 * a timeout must leave it alone. */
#define WN_DETACHED 0x80000000u
/* Finalize does not cancel this wait (a cond waiter locking its mutex
 * again, a service waiter: their objects release them). */
#define WN_NOCANCEL 0x40000000u
/* WN_GRANTED (0x20000000u): src/thread/wlist.h. */

/* wait_node.state */
#define WN_WAITING 0u
#define WN_DONE 1u     /* released by the object */
#define WN_TIMEDOUT 2u /* its deadline passed first */
#define WN_CLOSED 3u   /* the object was closed */
#define WN_NOMEM 4u    /* no room for its timer */
#define WN_CANCELED 5u /* finalize ended the wait */
#define WN_SPIN 0x80u  /* waiting, and its ULT watches instead of parking */
#define WN_BUSY 0x100u /* the releaser still uses the node */

static inline bool wn_waiting(uint32_t s)
{
    return s == WN_WAITING || s == WN_SPIN;
}

/* Who calls a waiting primitive. u == NULL: an external thread. It holds
 * no stream: a ULT may wait, resume on another stream and wait again with
 * the same caller, so the stream is read where it is used. */
struct caller {
    struct coexec_unit_rec *u;
};

/*
 * Fills c for a call that may wait. Returns COEXEC_OK (a ULT, or an
 * external thread, with or without the runtime: it waits in the kernel),
 * or COEXEC_ECONTEXT (a tasklet or a scheduler loop).
 */
static ALWAYS_INLINE int wait_caller(struct caller *c)
{
    struct coexec_xstream_rec *xs = xs_self_entry();
    c->u = NULL;
    if (!xs)
        return COEXEC_OK;
    struct coexec_unit_rec *u = xs->cur;
    if (!u || u->kind == UNIT_TASKLET)
        return COEXEC_ECONTEXT;
    c->u = u;
    return COEXEC_OK;
}

/* A waiting ULT or thread: its node, its timer, the list it is on and
 * that list's lock. */
struct waiter {
    struct wait_node node;
    struct timer timer;
    struct wlist *list; /* NULL: a sleep, released by the timer only */
    atom_u32_t *lock;
    void *data; /* the owner's (a mutex: who will own it) */
    /* What is waited on, for coexec_info_print: a static name and the
     * object (thread/unit.h, unit_note_wait). */
    const char *what;
    const void *obj;
    /* The owner's, or NULL: called under the lock when the node leaves
     * the list unreleased (a timeout or finalize), to undo its arrival. */
    void (*gone)(struct waiter *w);
};

static inline void waiter_init(struct waiter *w, const struct caller *c,
                               struct wlist *l, atom_u32_t *lock,
                               uint32_t user_flags, const char *what,
                               const void *obj)
{
    w->what = what;
    w->obj = obj;
    w->node.next = w->node.prev = NULL;
    atom_store_rlx_ptr(&w->node.who, c->u);
    atom_store_rlx_u32(&w->node.state, WN_WAITING);
    w->node.flags = (c->u ? WN_ULT : WN_EXTERNAL) | user_flags;
    w->list = l;
    w->lock = lock;
    w->data = NULL;
    w->gone = NULL;
    w->timer.idx = TIMER_OFF;
}

/* The waiter of a ULT's or thread's node (never a tasklet's). */
static inline struct waiter *node_waiter(struct wait_node *n)
{
    return container_of(n, struct waiter, node);
}

/* The owner a lock records for unit u: its id, which no later unit
 * reusing the descriptor shares (so a ULT that exits holding a lock does
 * not hand it to the next one), shifted to keep clear of thread owners. */
static inline void *unit_owner(const struct coexec_unit_rec *u)
{
    return (void *)(uintptr_t)(u->id << 1);
}

/* Who owns a lock taken by the caller: its unit, or its OS thread. */
static inline void *caller_owner(const struct caller *c)
{
    return c->u ? unit_owner(c->u) : coexec__thread_owner();
}

/* The same for any caller, tasklets included (trylock, unlock). */
static inline void *any_owner(void)
{
    struct coexec_xstream_rec *xs = xs_self_entry();
    return xs && xs->cur ? unit_owner(xs->cur) : coexec__thread_owner();
}

/* How long a waiter watches before it queues or parks, when its stream has
 * nothing else to run: a release that comes within it costs no switch. */
#define WAIT_SPIN 256

/* Whether the caller may watch for a release rather than switch away: an
 * external thread always, a ULT when its stream has nothing queued. */
static inline bool caller_may_spin(const struct caller *c)
{
    if (!c->u)
        return true;
    struct coexec_sched_rec *s = atom_load_rlx_ptr(&coexec__xs_self()->sched);
    return pool_size(s->pools[0]) == 0;
}

/* Watches *flag (acquire) for up to WAIT_SPIN rounds while the caller's
 * stream has nothing queued; true once it is non-zero. */
static inline bool wait_spin_flag(const struct caller *c, atom_u32_t *flag)
{
    if (!caller_may_spin(c))
        return false;
    for (int i = 0; i < WAIT_SPIN; i++) {
        if (atom_load_acq_u32(flag))
            return true;
        cpu_relax();
    }
    return false;
}

/* Releases n (already unlinked) with result; the list's lock is held. */
void coexec__wait_release(struct wait_node *n, uint32_t result);

/* Releases every node of l with result; l's lock is held. */
void coexec__wait_release_all(struct wlist *l, uint32_t result);

/*
 * Waits until w's node (linked on w->list, whose lock is not held) is
 * released, or until deadline (UINT64_MAX: none), when the node is
 * unlinked and WN_TIMEDOUT returned. A ULT's wait ends with WN_CANCELED
 * when finalize cancels it (see the plaque). Returns the node's result.
 */
uint32_t coexec__wait_block(struct waiter *w, uint64_t deadline);

/* The result as an error code: WN_DONE -> ok, and so on. */
int coexec__wait_result_code(uint32_t r);

/* Links the tasklet being polled on l (l's lock held), once. Returns
 * COEXEC_OK, or COEXEC_ECANCELED (nothing linked) while finalize cancels
 * waits: the poll then reports that instead of COEXEC_PENDING. */
int coexec__wait_link_tasklet(struct wlist *l, struct coexec_unit_rec *u,
                      uint32_t user_flags);

static ALWAYS_INLINE void wait_tasklet_leave(struct coexec_unit_rec *u)
{
    if (UNLIKELY(atom_load_rlx_ptr(&u->tnode.who) != NULL))
        coexec__wlist_unlink_tasklet(u);
}

/* The unit a poll context polls (src/thread/thread.c). */
struct coexec_unit_rec *coexec__poll_unit(coexec_poll_t *cx);

/* ---- object headers ------------------------------------------------------ */

#define MAGIC_DEAD 0x64656164646561ddull

#define OBJ_MAGIC_EVENTUAL COEXEC__MAGIC_EVENTUAL
#define OBJ_MAGIC_FUTURE 0x636f667574720001ull
#define OBJ_MAGIC_CHANNEL 0x636f6368616e0001ull
#define OBJ_MAGIC_BARRIER 0x636f626172720001ull
#define OBJ_MAGIC_XBARRIER 0x636f786261720001ull

/* Marks an object destroyed (its lock held) unless busy: COEXEC_EBUSY. */
static inline int obj_retire(uint64_t *magic, bool busy)
{
    if (busy)
        return COEXEC_EBUSY;
    __atomic_store_n(magic, MAGIC_DEAD, __ATOMIC_RELAXED);
    return COEXEC_OK;
}

/* Checks an object pointer and its header: COEXEC_EINVAL for NULL,
 * COEXEC_EHANDLE for a destroyed or uninitialised object. The header is
 * read atomically: a layer may turn zeroed memory into a static
 * initialiser's header by a compare-and-swap (libcoexec-abt does) while
 * other threads check it. */
#define OBJ_CHECK(o, magic)                                                    \
    do {                                                                       \
        if (!(o))                                                              \
            return COEXEC_EINVAL;                                              \
        if (__atomic_load_n(&(o)->magic_, __ATOMIC_RELAXED) != (magic))        \
            return COEXEC_EHANDLE;                                             \
    } while (0)

/* Declares the cast from a public opaque type to the internal record. */
#define OBJ_CAST(pub_t, rec_t, fn)                                             \
    _Static_assert(sizeof(rec_t) <= sizeof(pub_t), #rec_t " too big");         \
    _Static_assert(_Alignof(rec_t) <= _Alignof(pub_t), #rec_t " misaligned");  \
    static inline rec_t *fn(pub_t *p)                                          \
    {                                                                          \
        return (rec_t *)(void *)p;                                             \
    }

#endif /* COEXEC_WAKER_WAIT_H */
