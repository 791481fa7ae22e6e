/*
 * src/sync/mutex.c: ULT-aware mutex and condition variable.
 *
 * Room plaque. The mutex word holds M_LOCKED, M_WAITERS (the queue is not
 * empty), M_WOKEN (a waiter was released to compete: unlock wakes no
 * other) and M_HANDOFF (starvation mode). Uncontended lock and unlock are
 * one CAS each. Contended, it works like Go's sync.Mutex, with the
 * starvation test moved to the unlocker (a waiter on a stream whose
 * running ULT never yields could not run to make it):
 *  - normal: unlock frees the word, then releases the oldest waiter to
 *    compete with newcomers (who may take the word first: no convoy of
 *    park/wake pairs on a hot mutex); a released waiter that loses queues
 *    again at the front, keeping its arrival time;
 *  - hand-off: an unlock that finds the oldest waiter queued for over
 *    STARVE_NS gives it the mutex without freeing it (owner and depth are
 *    written for it) and sets M_HANDOFF, which keeps newcomers queueing,
 *    until an unlock finds the oldest waiter fresh again or the queue
 *    empty. So nobody waits much past STARVE_NS plus the queue ahead.
 * The queue changes under the spin lock; an unlocker that finds waiters
 * takes it and, holding the locked word, is its only writer. The fast
 * paths only touch the word.
 *
 * The owner is the ULT (or tasklet, for trylock) or the OS thread of an
 * external caller, by an identity no later unit shares (unit_owner in
 * wait.h); it is what makes EPERM and EDEADLK detectable.
 *
 * A condition variable is a wait list bound to the mutex its waiters use.
 * A waiter links itself before it unlocks the mutex, so a signal sent
 * under the mutex cannot be lost; it locks the mutex again (restoring a
 * recursive depth) before returning, whatever the result.
 */
#include <string.h>

#include "arch/clock.h"
#include "base/valgrind.h"
#include "waker/wait.h"

#define M_LOCKED 1u
#define M_WAITERS 2u
#define M_WOKEN 4u
#define M_HANDOFF 8u

/* An oldest waiter queued longer than this is handed the mutex. */
#define STARVE_NS 200000ull

/* wait_node results of a mutex waiter. */
#define MX_OWNER WN_DONE /* handed over: the mutex is ours */
#define MX_RETRY 8u      /* released to compete for it (above WN_*) */

struct mutex {
    uint64_t magic_;
    atom_u32_t word;
    uint32_t depth; /* the owner's recursion depth */
    atom_ptr_t owner;
    atom_u32_t lock;
    uint32_t unused_;
    struct wlist waiters;
};
OBJ_CAST(coexec_mutex_t, struct mutex, mx_of)

/* A queued locker: its waiter and when it first queued. */
struct mx_waiter {
    struct waiter w;
    uint64_t since;
};

static int mx_check(struct mutex *m)
{
    if (!m)
        return COEXEC_EINVAL;
    /* Atomic: a statically initialised mutex may be made live by another
     * thread's compare-and-swap on this word (libcoexec-abt's static
     * mutex memory) while we look. */
    uint64_t magic = __atomic_load_n(&m->magic_, __ATOMIC_RELAXED);
    if (magic != COEXEC__MAGIC_MUTEX && magic != COEXEC__MAGIC_MUTEX_REC)
        return COEXEC_EHANDLE;
    return COEXEC_OK;
}

static bool mx_recursive(struct mutex *m)
{
    return __atomic_load_n(&m->magic_, __ATOMIC_RELAXED) ==
           COEXEC__MAGIC_MUTEX_REC;
}

COEXEC_API int coexec_mutex_init(coexec_mutex_t *mp, coexec_mutex_kind_t kind)
{
    vg_init_reads(mp, sizeof *mp);
    if (!mp || (kind != COEXEC_MUTEX_PLAIN && kind != COEXEC_MUTEX_RECURSIVE))
        return COEXEC_EINVAL;
    struct mutex *m = mx_of(mp);
    uint64_t magic = kind == COEXEC_MUTEX_RECURSIVE ? COEXEC__MAGIC_MUTEX_REC
                                                    : COEXEC__MAGIC_MUTEX;
    if (mx_check(m) == COEXEC_OK) {
        /* Live: as destroy then init, unless locked or waited on. Taking
         * the free word keeps lockers out while the kind changes; an
         * unlocked mutex has no owner, depth or waiters left to reset. */
        spin_lock(&m->lock);
        uint32_t w = 0;
        if (!atom_cas_acq_u32(&m->word, &w, M_LOCKED)) {
            spin_unlock(&m->lock);
            return COEXEC_EBUSY;
        }
        if (m->magic_ != magic)
            m->magic_ = magic;
        m->depth = 0;
        atom_store_rel_u32(&m->word, 0);
        spin_unlock(&m->lock);
        return COEXEC_OK;
    }
    memset(m, 0, sizeof *m);
    m->magic_ = magic;
    return COEXEC_OK;
}

COEXEC_API int coexec_mutex_destroy(coexec_mutex_t *mp)
{
    struct mutex *m = mx_of(mp);
    int rc = mx_check(m);
    if (rc)
        return rc;
    spin_lock(&m->lock);
    int rc_ = obj_retire(&m->magic_, atom_load_acq_u32(&m->word) != 0);
    spin_unlock(&m->lock);
    if (rc_)
        return rc_;
    return COEXEC_OK;
}

static ALWAYS_INLINE void mx_own(struct mutex *m, void *me)
{
    atom_store_rlx_ptr(&m->owner, me);
    m->depth = 1;
}

/* Takes the word if it is free and not being handed over; `clear` drops
 * bits at the same time (M_WOKEN, for the released waiter). */
static ALWAYS_INLINE bool mx_barge(struct mutex *m, uint32_t clear)
{
    uint32_t w = atom_load_rlx_u32(&m->word);
    while (!(w & (M_LOCKED | M_HANDOFF))) {
        /* Acquire: pairs with the release of the unlock that freed it. */
        if (atom_cas_acq_u32(&m->word, &w, (w & ~clear) | M_LOCKED))
            return true;
    }
    return false;
}

/* How many times a locker retries before queueing. */
#define MX_SPIN 64

/* Locks m for owner me, waiting until deadline; wflags: WN_NOCANCEL for
 * a wait finalize must not end. */
static int mx_lock_as(struct mutex *m, struct caller *c, void *me,
                      uint64_t deadline, uint32_t wflags)
{
    uint32_t exp = 0;
    if (LIKELY(atom_cas_acq_u32(&m->word, &exp, M_LOCKED))) {
        mx_own(m, me);
        return COEXEC_OK;
    }
    if (atom_load_rlx_ptr(&m->owner) == me &&
        (atom_load_rlx_u32(&m->word) & M_LOCKED)) {
        if (!mx_recursive(m))
            return COEXEC_EDEADLK;
        m->depth++;
        return COEXEC_OK;
    }
    uint32_t woken = 0; /* M_WOKEN once released to compete */
    struct mx_waiter q;
    q.since = 0;
    for (;;) {
        for (int i = 0; i < MX_SPIN; i++) {
            if (mx_barge(m, woken)) {
                mx_own(m, me);
                return COEXEC_OK;
            }
            if (atom_load_rlx_u32(&m->word) & M_HANDOFF)
                break; /* it goes to the queue's head: queue at once */
            cpu_relax();
        }
        spin_lock(&m->lock);
        if (mx_barge(m, woken)) {
            spin_unlock(&m->lock);
            mx_own(m, me);
            return COEXEC_OK;
        }
        if (!q.since)
            q.since = clock_now_ns();
        uint32_t set = M_WAITERS;
        uint32_t w = atom_load_rlx_u32(&m->word);
        bool got = false;
        for (;;) {
            if (!(w & (M_LOCKED | M_HANDOFF))) {
                /* Freed since we looked: take it rather than queue with
                 * nobody left to wake us. */
                if (atom_cas_acq_u32(&m->word, &w, (w & ~woken) | M_LOCKED)) {
                    got = true;
                    break;
                }
            } else if (atom_cas_rlx_u32(&m->word, &w, (w & ~woken) | set)) {
                break;
            }
        }
        if (got) {
            spin_unlock(&m->lock);
            mx_own(m, me);
            return COEXEC_OK;
        }
        waiter_init(&q.w, c, &m->waiters, &m->lock, wflags, "mutex", m);
        q.w.data = me;
        if (woken) { /* lost to a newcomer: keep our place at the front */
            q.w.node.prev = NULL;
            q.w.node.next = m->waiters.head;
            if (m->waiters.head)
                m->waiters.head->prev = &q.w.node;
            else
                m->waiters.tail = &q.w.node;
            m->waiters.head = &q.w.node;
        } else {
            wlist_push(&m->waiters, &q.w.node);
        }
        spin_unlock(&m->lock);
        uint32_t r = coexec__wait_block(&q.w, deadline);
        if (r == MX_OWNER)
            return COEXEC_OK; /* handed over: owner and depth are ours */
        if (r == MX_RETRY) {
            woken = M_WOKEN;
            continue;
        }
        /* Timed out (or cancelled by finalize): we left the queue; tidy
         * the bits if it is empty. */
        spin_lock(&m->lock);
        if (wlist_empty(&m->waiters))
            atom_fand_rlx_u32(&m->word, ~(M_WAITERS | M_HANDOFF));
        spin_unlock(&m->lock);
        return coexec__wait_result_code(r);
    }
}

static int mx_lock(coexec_mutex_t *mp, uint64_t deadline)
{
    struct mutex *m = mx_of(mp);
    int rc = mx_check(m);
    if (rc)
        return rc;
    struct caller c;
    rc = wait_caller(&c);
    if (rc)
        return rc;
    return mx_lock_as(m, &c, caller_owner(&c), deadline, 0);
}

COEXEC_API int coexec_mutex_lock(coexec_mutex_t *m)
{
    return mx_lock(m, UINT64_MAX);
}

COEXEC_API int coexec_mutex_lock_timed(coexec_mutex_t *m, uint64_t timeout_ns)
{
    return mx_lock(m, clock_deadline(timeout_ns));
}

COEXEC_API int coexec_mutex_trylock(coexec_mutex_t *mp)
{
    struct mutex *m = mx_of(mp);
    int rc = mx_check(m);
    if (rc)
        return rc;
    void *me = any_owner();
    if (mx_barge(m, 0)) {
        mx_own(m, me);
        return COEXEC_OK;
    }
    if (mx_recursive(m) && atom_load_rlx_ptr(&m->owner) == me) {
        m->depth++;
        return COEXEC_OK;
    }
    return COEXEC_EBUSY;
}

static struct mx_waiter *mx_waiter_of(struct wait_node *n)
{
    return container_of(node_waiter(n), struct mx_waiter, w);
}

/* Releases m completely (the caller owns it). */
static void mx_release(struct mutex *m)
{
    m->depth = 0;
    atom_store_rlx_ptr(&m->owner, NULL);
    uint32_t w = M_LOCKED;
    /* Release: the critical section before the free word. */
    if (LIKELY(atom_cas_rel_u32(&m->word, &w, 0)))
        return;
    /* Waiters. While we hold the word (locked) and the queue's lock, only
     * we change the word. */
    spin_lock(&m->lock);
    struct wait_node *n = m->waiters.head;
    bool last = n && !n->next;
    w = atom_load_rlx_u32(&m->word);
    if (n && clock_now_ns() - mx_waiter_of(n)->since > STARVE_NS) {
        /* The oldest waiter starves: hand the mutex over, and keep
         * newcomers out (M_HANDOFF) while others queue behind it. */
        struct mx_waiter *q = mx_waiter_of(n);
        wlist_remove(&m->waiters, n);
        uint32_t nw = last ? w & ~(M_WAITERS | M_HANDOFF) : w | M_HANDOFF;
        atom_store_rlx_u32(&m->word, nw);
        mx_own(m, q->w.data);
        /* The release below publishes the critical section and owner. */
        coexec__wait_release(n, MX_OWNER);
        spin_unlock(&m->lock);
        return;
    }
    /* Free it, and send the oldest waiter to compete, unless one released
     * earlier is still on its way (M_WOKEN). */
    bool send = n && !(w & M_WOKEN);
    uint32_t nw = w & ~(M_LOCKED | M_HANDOFF);
    if (send)
        nw = (nw | M_WOKEN) & ~(last ? M_WAITERS : 0);
    if (!n)
        nw &= ~M_WAITERS; /* its waiters timed out */
    atom_store_rel_u32(&m->word, nw);
    if (send) {
        wlist_remove(&m->waiters, n);
        coexec__wait_release(n, MX_RETRY);
    }
    spin_unlock(&m->lock);
}

COEXEC_API int coexec_mutex_unlock(coexec_mutex_t *mp)
{
    struct mutex *m = mx_of(mp);
    int rc = mx_check(m);
    if (rc)
        return rc;
    if (!(atom_load_rlx_u32(&m->word) & M_LOCKED) ||
        atom_load_rlx_ptr(&m->owner) != any_owner())
        return COEXEC_EPERM;
    if (m->depth > 1) {
        m->depth--;
        return COEXEC_OK;
    }
    mx_release(m);
    return COEXEC_OK;
}

/* ---- condition variables ------------------------------------------------ */

struct cond {
    uint64_t magic_;
    atom_u32_t lock;
    uint32_t unused_;
    struct mutex *bound; /* the mutex of the current waiters */
    struct wlist waiters;
};
OBJ_CAST(coexec_cond_t, struct cond, cv_of)

static int cv_check(struct cond *c)
{
    if (!c)
        return COEXEC_EINVAL;
    /* Atomic, as for a mutex's (mx_check). */
    return __atomic_load_n(&c->magic_, __ATOMIC_RELAXED) == COEXEC__MAGIC_COND
               ? COEXEC_OK
               : COEXEC_EHANDLE;
}

COEXEC_API int coexec_cond_init(coexec_cond_t *cp)
{
    vg_init_reads(cp, sizeof *cp);
    if (!cp)
        return COEXEC_EINVAL;
    struct cond *c = cv_of(cp);
    if (cv_check(c) == COEXEC_OK) {
        /* Live: as destroy then init, unless waited on. */
        spin_lock(&c->lock);
        int rc = wlist_empty(&c->waiters) ? COEXEC_OK : COEXEC_EBUSY;
        if (rc == COEXEC_OK) {
            c->bound = NULL;
            wlist_init(&c->waiters, &c->lock);
        }
        spin_unlock(&c->lock);
        return rc;
    }
    memset(c, 0, sizeof *c);
    c->magic_ = COEXEC__MAGIC_COND;
    return COEXEC_OK;
}

COEXEC_API int coexec_cond_destroy(coexec_cond_t *cp)
{
    struct cond *c = cv_of(cp);
    int rc = cv_check(c);
    if (rc)
        return rc;
    spin_lock(&c->lock);
    int rc_ = obj_retire(&c->magic_, !wlist_empty(&c->waiters));
    spin_unlock(&c->lock);
    if (rc_)
        return rc_;
    return COEXEC_OK;
}

static int cv_wait(coexec_cond_t *cp, coexec_mutex_t *mp, uint64_t deadline)
{
    struct cond *c = cv_of(cp);
    struct mutex *m = mx_of(mp);
    int rc = cv_check(c);
    if (rc || (rc = mx_check(m)))
        return rc;
    struct caller cl;
    rc = wait_caller(&cl);
    if (rc)
        return rc;
    void *me = caller_owner(&cl);
    if (!(atom_load_rlx_u32(&m->word) & M_LOCKED) ||
        atom_load_rlx_ptr(&m->owner) != me)
        return COEXEC_EPERM;
    spin_lock(&c->lock);
    if (c->bound && c->bound != m) {
        spin_unlock(&c->lock);
        return COEXEC_EINVAL;
    }
    c->bound = m;
    struct waiter w;
    waiter_init(&w, &cl, &c->waiters, &c->lock, 0, "cond", c);
    wlist_push(&c->waiters, &w.node);
    spin_unlock(&c->lock);

    uint32_t depth = m->depth;
    mx_release(m);
    uint32_t r = coexec__wait_block(&w, deadline);
    spin_lock(&c->lock);
    if (wlist_empty(&c->waiters))
        c->bound = NULL;
    spin_unlock(&c->lock);
    /* Lock again, however long it takes (finalize too): the caller
     * expects it held. */
    rc = mx_lock_as(m, &cl, me, UINT64_MAX, WN_NOCANCEL);
    if (rc == COEXEC_OK)
        m->depth = depth;
    return rc ? rc : coexec__wait_result_code(r);
}

COEXEC_API int coexec_cond_wait(coexec_cond_t *c, coexec_mutex_t *m)
{
    return cv_wait(c, m, UINT64_MAX);
}

COEXEC_API int coexec_cond_wait_timed(coexec_cond_t *c, coexec_mutex_t *m,
                                      uint64_t timeout_ns)
{
    return cv_wait(c, m, clock_deadline(timeout_ns));
}

static int cv_wake(coexec_cond_t *cp, bool all)
{
    struct cond *c = cv_of(cp);
    int rc = cv_check(c);
    if (rc)
        return rc;
    spin_lock(&c->lock);
    if (all) {
        coexec__wait_release_all(&c->waiters, WN_DONE);
    } else {
        struct wait_node *n = wlist_pop(&c->waiters);
        if (n)
            coexec__wait_release(n, WN_DONE);
    }
    if (wlist_empty(&c->waiters))
        c->bound = NULL;
    spin_unlock(&c->lock);
    return COEXEC_OK;
}

COEXEC_API int coexec_cond_signal(coexec_cond_t *c)
{
    return cv_wake(c, false);
}

COEXEC_API int coexec_cond_broadcast(coexec_cond_t *c)
{
    return cv_wake(c, true);
}
