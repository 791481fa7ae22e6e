/*
 * src/sync/mutex.c: ULT-aware mutex and condition variable.
 *
 * Room plaque. The mutex word is 0 (free), M_LOCKED, or M_LOCKED|M_WAITERS
 * (someone is queued). Uncontended lock and unlock are one CAS each. A
 * waiter sets M_WAITERS and links itself under the spin lock; an unlock
 * that sees M_WAITERS hands the mutex to the oldest waiter without ever
 * making it free (owner and depth are written for it, then it is
 * released), so newcomers cannot overtake the queue and nobody starves.
 * The word stays M_LOCKED|M_WAITERS while the list is non-empty; the last
 * hand-off (or a timed-out waiter leaving an empty list) clears M_WAITERS.
 *
 * The owner is the ULT (or tasklet, for trylock) or the OS thread of an
 * external caller; it is what makes EPERM and EDEADLK detectable.
 *
 * A condition variable is a wait list bound to the mutex its waiters use.
 * A waiter links itself before it unlocks the mutex, so a signal sent
 * under the mutex cannot be lost; it locks the mutex again (restoring a
 * recursive depth) before returning, whatever the result.
 */
#include <string.h>

#include "arch/clock.h"
#include "waker/wait.h"

#define M_LOCKED 1u
#define M_WAITERS 2u

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

static int mx_check(struct mutex *m)
{
    if (!m)
        return COEXEC_EINVAL;
    if (m->magic_ != COEXEC__MAGIC_MUTEX && m->magic_ != COEXEC__MAGIC_MUTEX_REC)
        return COEXEC_EHANDLE;
    return COEXEC_OK;
}

static bool mx_recursive(struct mutex *m)
{
    return m->magic_ == COEXEC__MAGIC_MUTEX_REC;
}

COEXEC_API int coexec_mutex_init(coexec_mutex_t *mp, coexec_mutex_kind_t kind)
{
    if (!mp || (kind != COEXEC_MUTEX_PLAIN && kind != COEXEC_MUTEX_RECURSIVE))
        return COEXEC_EINVAL;
    struct mutex *m = mx_of(mp);
    memset(m, 0, sizeof *m);
    m->magic_ = kind == COEXEC_MUTEX_RECURSIVE ? COEXEC__MAGIC_MUTEX_REC
                                               : COEXEC__MAGIC_MUTEX;
    return COEXEC_OK;
}

COEXEC_API int coexec_mutex_destroy(coexec_mutex_t *mp)
{
    struct mutex *m = mx_of(mp);
    int rc = mx_check(m);
    if (rc)
        return rc;
    spin_lock(&m->lock);
    if (atom_load_acq_u32(&m->word) != 0) {
        spin_unlock(&m->lock);
        return COEXEC_EBUSY;
    }
    m->magic_ = MAGIC_DEAD;
    spin_unlock(&m->lock);
    return COEXEC_OK;
}

static ALWAYS_INLINE bool mx_try_fast(struct mutex *m, void *me)
{
    uint32_t exp = 0;
    /* Acquire: pairs with the release of the unlock that freed it. */
    if (atom_cas_acq_u32(&m->word, &exp, M_LOCKED)) {
        atom_store_rlx_ptr(&m->owner, me);
        m->depth = 1;
        return true;
    }
    return false;
}

/* How many times a locker retries before queueing. */
#define MX_SPIN 64

/* Locks m for owner me, waiting until deadline. */
static int mx_lock_as(struct mutex *m, struct caller *c, void *me,
                      uint64_t deadline)
{
    if (mx_try_fast(m, me))
        return COEXEC_OK;
    if (atom_load_rlx_ptr(&m->owner) == me) {
        if (!mx_recursive(m))
            return COEXEC_EDEADLK;
        m->depth++;
        return COEXEC_OK;
    }
    for (int i = 0; i < MX_SPIN; i++) {
        cpu_relax();
        if (atom_load_rlx_u32(&m->word) == 0 && mx_try_fast(m, me))
            return COEXEC_OK;
    }
    spin_lock(&m->lock);
    uint32_t w = atom_load_rlx_u32(&m->word);
    for (;;) {
        if (w == 0) {
            if (atom_cas_acq_u32(&m->word, &w, M_LOCKED)) {
                spin_unlock(&m->lock);
                atom_store_rlx_ptr(&m->owner, me);
                m->depth = 1;
                return COEXEC_OK;
            }
        } else if (w & M_WAITERS) {
            break;
        } else if (atom_cas_rlx_u32(&m->word, &w, w | M_WAITERS)) {
            break;
        }
    }
    struct waiter wt;
    waiter_init(&wt, c, &m->waiters, &m->lock, 0);
    wt.data = me;
    wlist_push(&m->waiters, &wt.node);
    spin_unlock(&m->lock);
    uint32_t r = wait_block(&wt, deadline);
    if (r == WN_DONE)
        return COEXEC_OK; /* handed over: owner and depth are ours */
    /* Timed out: we left the list; clear M_WAITERS if it is now empty. */
    spin_lock(&m->lock);
    if (wlist_empty(&m->waiters))
        atom_fand_rlx_u32(&m->word, ~M_WAITERS);
    spin_unlock(&m->lock);
    return wait_result_code(r);
}

static int mx_lock(coexec_mutex_t *mp, uint64_t deadline)
{
    struct mutex *m = mx_of(mp);
    int rc = mx_check(m);
    if (rc)
        return rc;
    struct caller c;
    rc = wait_caller(&c);
    if (rc == COEXEC_ENOTINIT)
        rc = COEXEC_OK;
    if (rc)
        return rc;
    return mx_lock_as(m, &c, caller_owner(&c), deadline);
}

COEXEC_API int coexec_mutex_lock(coexec_mutex_t *m)
{
    return mx_lock(m, UINT64_MAX);
}

COEXEC_API int coexec_mutex_lock_timed(coexec_mutex_t *m, uint64_t timeout_ns)
{
    return mx_lock(m, clock_deadline(timeout_ns));
}

/* The owner identity of any caller, tasklets included. */
static void *any_owner(void)
{
    struct coexec_xstream_rec *xs = xs_self_entry();
    if (xs && xs->cur)
        return xs->cur;
    return coexec__thread_token();
}

COEXEC_API int coexec_mutex_trylock(coexec_mutex_t *mp)
{
    struct mutex *m = mx_of(mp);
    int rc = mx_check(m);
    if (rc)
        return rc;
    void *me = any_owner();
    if (mx_try_fast(m, me))
        return COEXEC_OK;
    if (mx_recursive(m) && atom_load_rlx_ptr(&m->owner) == me) {
        m->depth++;
        return COEXEC_OK;
    }
    return COEXEC_EBUSY;
}

/* Releases m completely (the caller owns it). */
static void mx_release(struct mutex *m)
{
    m->depth = 0;
    atom_store_rlx_ptr(&m->owner, NULL);
    uint32_t exp = M_LOCKED;
    /* Release: the critical section before the free word. */
    if (atom_cas_rel_u32(&m->word, &exp, 0))
        return;
    spin_lock(&m->lock);
    struct wait_node *n = wlist_pop(&m->waiters);
    if (!n) {
        /* The only waiter timed out and has not cleared the flag yet. */
        atom_store_rel_u32(&m->word, 0);
        spin_unlock(&m->lock);
        return;
    }
    if (wlist_empty(&m->waiters))
        atom_store_rlx_u32(&m->word, M_LOCKED);
    struct waiter *w = node_waiter(n);
    atom_store_rlx_ptr(&m->owner, w->data);
    m->depth = 1;
    /* The release below publishes the critical section, owner and depth. */
    wait_release(n, WN_DONE);
    spin_unlock(&m->lock);
}

COEXEC_API int coexec_mutex_unlock(coexec_mutex_t *mp)
{
    struct mutex *m = mx_of(mp);
    int rc = mx_check(m);
    if (rc)
        return rc;
    if (atom_load_rlx_u32(&m->word) == 0 ||
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
    return c->magic_ == COEXEC__MAGIC_COND ? COEXEC_OK : COEXEC_EHANDLE;
}

COEXEC_API int coexec_cond_init(coexec_cond_t *cp)
{
    if (!cp)
        return COEXEC_EINVAL;
    struct cond *c = cv_of(cp);
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
    if (!wlist_empty(&c->waiters)) {
        spin_unlock(&c->lock);
        return COEXEC_EBUSY;
    }
    c->magic_ = MAGIC_DEAD;
    spin_unlock(&c->lock);
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
    if (rc == COEXEC_ENOTINIT)
        rc = COEXEC_OK;
    if (rc)
        return rc;
    void *me = caller_owner(&cl);
    if (atom_load_rlx_u32(&m->word) == 0 || atom_load_rlx_ptr(&m->owner) != me)
        return COEXEC_EPERM;
    spin_lock(&c->lock);
    if (c->bound && c->bound != m) {
        spin_unlock(&c->lock);
        return COEXEC_EINVAL;
    }
    c->bound = m;
    struct waiter w;
    waiter_init(&w, &cl, &c->waiters, &c->lock, 0);
    wlist_push(&c->waiters, &w.node);
    spin_unlock(&c->lock);

    uint32_t depth = m->depth;
    mx_release(m);
    uint32_t r = wait_block(&w, deadline);
    spin_lock(&c->lock);
    if (wlist_empty(&c->waiters))
        c->bound = NULL;
    spin_unlock(&c->lock);
    /* Lock again, however long it takes: the caller expects it held. */
    rc = mx_lock_as(m, &cl, me, UINT64_MAX);
    if (rc == COEXEC_OK)
        m->depth = depth;
    return rc ? rc : wait_result_code(r);
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
        wait_release_all(&c->waiters, WN_DONE);
    } else {
        struct wait_node *n = wlist_pop(&c->waiters);
        if (n)
            wait_release(n, WN_DONE);
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
