/*
 * src/sync/rwlock.c: ULT-aware reader-writer lock and barriers.
 *
 * Room plaque. The reader-writer lock keeps its whole state (reader count,
 * writing owner, queue) under one spin lock. Arrivals queue whenever
 * anybody is queued, so service is in arrival order: readers behind a
 * waiting writer wait for it (writers never starve), and a run of readers
 * at the head of the queue is admitted together. grant() admits from the
 * head whatever the state allows; unlock and a timed-out waiter's
 * departure call it.
 *
 * The barrier counts arrivals under its lock; the n-th releases the list
 * and starts the next generation. The xstream barrier is a counter and a
 * generation futex for OS threads.
 */
#include <limits.h>
#include <string.h>

#include "arch/clock.h"
#include "arch/futex.h"
#include "base/valgrind.h"
#include "waker/wait.h"

#define RW_WRITE WN_USER /* a queued writer; else a reader */

struct rwlock {
    uint64_t magic_;
    atom_u32_t lock;
    uint32_t readers;
    void *writer; /* the writing owner, or NULL */
    struct wlist waiters;
};
OBJ_CAST(coexec_rwlock_t, struct rwlock, rw_of)

static int rw_check(struct rwlock *l)
{
    if (!l)
        return COEXEC_EINVAL;
    return l->magic_ == COEXEC__MAGIC_RWLOCK ? COEXEC_OK : COEXEC_EHANDLE;
}

COEXEC_API int coexec_rwlock_init(coexec_rwlock_t *lp)
{
    vg_init_reads(lp, sizeof *lp);
    if (!lp)
        return COEXEC_EINVAL;
    struct rwlock *l = rw_of(lp);
    if (rw_check(l) == COEXEC_OK) {
        /* Live: as destroy then init, unless held or waited on (then
         * there is nothing to reset). */
        spin_lock(&l->lock);
        int rc = l->readers || l->writer || !wlist_empty(&l->waiters)
                     ? COEXEC_EBUSY
                     : COEXEC_OK;
        if (rc == COEXEC_OK)
            wlist_init(&l->waiters, &l->lock);
        spin_unlock(&l->lock);
        return rc;
    }
    memset(l, 0, sizeof *l);
    l->magic_ = COEXEC__MAGIC_RWLOCK;
    return COEXEC_OK;
}

COEXEC_API int coexec_rwlock_destroy(coexec_rwlock_t *lp)
{
    struct rwlock *l = rw_of(lp);
    int rc = rw_check(l);
    if (rc)
        return rc;
    spin_lock(&l->lock);
    int rc_ = obj_retire(&l->magic_, l->readers || l->writer ||
                                         !wlist_empty(&l->waiters));
    spin_unlock(&l->lock);
    if (rc_)
        return rc_;
    return COEXEC_OK;
}

/* Admits from the head of the queue what the state allows (lock held). */
static void grant(struct rwlock *l)
{
    struct wait_node *n;
    while ((n = l->waiters.head) != NULL && !l->writer) {
        if (n->flags & RW_WRITE) {
            if (l->readers)
                return;
            wlist_remove(&l->waiters, n);
            l->writer = node_waiter(n)->data;
            coexec__wait_release(n, WN_DONE);
            return;
        }
        wlist_remove(&l->waiters, n);
        l->readers++;
        coexec__wait_release(n, WN_DONE);
    }
}

/* Takes l (write: exclusive), waiting until deadline if wait is set. */
static int rw_take(coexec_rwlock_t *lp, bool write, bool wait,
                   uint64_t deadline)
{
    struct rwlock *l = rw_of(lp);
    int rc = rw_check(l);
    if (rc)
        return rc;
    struct caller c = {NULL};
    void *me;
    if (wait) {
        rc = wait_caller(&c);
        if (rc)
            return rc;
        me = caller_owner(&c);
    } else {
        me = any_owner();
    }
    spin_lock(&l->lock);
    if (l->writer == me) {
        spin_unlock(&l->lock);
        return wait ? COEXEC_EDEADLK : COEXEC_EBUSY;
    }
    if (!l->writer && wlist_empty(&l->waiters) && (!write || !l->readers)) {
        if (write)
            l->writer = me;
        else
            l->readers++;
        spin_unlock(&l->lock);
        return COEXEC_OK;
    }
    if (!wait) {
        spin_unlock(&l->lock);
        return COEXEC_EBUSY;
    }
    struct waiter w;
    waiter_init(&w, &c, &l->waiters, &l->lock, write ? RW_WRITE : 0,
                write ? "rwlock (write)" : "rwlock (read)", l);
    w.data = me;
    wlist_push(&l->waiters, &w.node);
    spin_unlock(&l->lock);
    uint32_t r = coexec__wait_block(&w, deadline);
    if (r == WN_DONE)
        return COEXEC_OK;
    /* We left the queue: whoever queued behind us may go now. */
    spin_lock(&l->lock);
    grant(l);
    spin_unlock(&l->lock);
    return coexec__wait_result_code(r);
}

COEXEC_API int coexec_rwlock_rdlock(coexec_rwlock_t *l)
{
    return rw_take(l, false, true, UINT64_MAX);
}

COEXEC_API int coexec_rwlock_wrlock(coexec_rwlock_t *l)
{
    return rw_take(l, true, true, UINT64_MAX);
}

COEXEC_API int coexec_rwlock_rdlock_timed(coexec_rwlock_t *l,
                                          uint64_t timeout_ns)
{
    return rw_take(l, false, true, clock_deadline(timeout_ns));
}

COEXEC_API int coexec_rwlock_wrlock_timed(coexec_rwlock_t *l,
                                          uint64_t timeout_ns)
{
    return rw_take(l, true, true, clock_deadline(timeout_ns));
}

COEXEC_API int coexec_rwlock_tryrdlock(coexec_rwlock_t *l)
{
    return rw_take(l, false, false, 0);
}

COEXEC_API int coexec_rwlock_trywrlock(coexec_rwlock_t *l)
{
    return rw_take(l, true, false, 0);
}

COEXEC_API int coexec_rwlock_unlock(coexec_rwlock_t *lp)
{
    struct rwlock *l = rw_of(lp);
    int rc = rw_check(l);
    if (rc)
        return rc;
    void *me = any_owner();
    spin_lock(&l->lock);
    if (l->writer) {
        if (l->writer != me) {
            spin_unlock(&l->lock);
            return COEXEC_EPERM;
        }
        l->writer = NULL;
    } else if (l->readers) {
        l->readers--;
    } else {
        spin_unlock(&l->lock);
        return COEXEC_EPERM;
    }
    grant(l);
    spin_unlock(&l->lock);
    return COEXEC_OK;
}

/* ---- barrier ------------------------------------------------------------ */

struct barrier {
    uint64_t magic_;
    atom_u32_t lock;
    uint32_t n;
    uint32_t count;
    uint32_t generation;
    struct wlist waiters;
};
OBJ_CAST(coexec_barrier_t, struct barrier, bar_of)

COEXEC_API int coexec_barrier_init(coexec_barrier_t *bp, unsigned n)
{
    vg_init_reads(bp, sizeof *bp);
    if (!bp || n == 0)
        return COEXEC_EINVAL;
    struct barrier *b = bar_of(bp);
    if (b->magic_ == OBJ_MAGIC_BARRIER) {
        /* Live: as destroy then init, unless a generation has arrivals
         * (they wait). */
        spin_lock(&b->lock);
        int rc = b->count ? COEXEC_EBUSY : COEXEC_OK;
        if (rc == COEXEC_OK) {
            b->n = n;
            wlist_init(&b->waiters, &b->lock);
        }
        spin_unlock(&b->lock);
        return rc;
    }
    memset(b, 0, sizeof *b);
    b->n = n;
    b->magic_ = OBJ_MAGIC_BARRIER;
    return COEXEC_OK;
}

COEXEC_API int coexec_barrier_destroy(coexec_barrier_t *bp)
{
    struct barrier *b = bar_of(bp);
    OBJ_CHECK(b, OBJ_MAGIC_BARRIER);
    spin_lock(&b->lock);
    int rc_ = obj_retire(&b->magic_, b->count);
    spin_unlock(&b->lock);
    if (rc_)
        return rc_;
    return COEXEC_OK;
}

/* A waiter leaves unreleased (finalize): it no longer counts as arrived
 * (b's lock held). */
static void bar_gone(struct waiter *w)
{
    struct barrier *b = w->data;
    b->count--;
}

COEXEC_API int coexec_barrier_wait(coexec_barrier_t *bp, int *serial)
{
    struct barrier *b = bar_of(bp);
    OBJ_CHECK(b, OBJ_MAGIC_BARRIER);
    struct caller c;
    int rc = wait_caller(&c);
    if (rc)
        return rc;
    spin_lock(&b->lock);
    if (++b->count == b->n) {
        b->count = 0;
        b->generation++;
        coexec__wait_release_all(&b->waiters, WN_DONE);
        spin_unlock(&b->lock);
        if (serial)
            *serial = 1;
        return COEXEC_OK;
    }
    struct waiter w;
    waiter_init(&w, &c, &b->waiters, &b->lock, 0, "barrier", b);
    w.data = b;
    w.gone = bar_gone;
    wlist_push(&b->waiters, &w.node);
    spin_unlock(&b->lock);
    uint32_t r = coexec__wait_block(&w, UINT64_MAX);
    if (r != WN_DONE)
        return coexec__wait_result_code(r); /* finalize: our arrival is undone */
    if (serial)
        *serial = 0;
    return COEXEC_OK;
}

/* ---- xstream barrier ------------------------------------------------- */

struct xbarrier {
    uint64_t magic_;
    uint32_t n;
    atom_u32_t count;
    atom_u32_t generation;
    atom_u32_t inside; /* threads between arrival and departure */
};
OBJ_CAST(coexec_xstream_barrier_t, struct xbarrier, xbar_of)

COEXEC_API int coexec_xstream_barrier_init(coexec_xstream_barrier_t *bp,
                                           unsigned n)
{
    vg_init_reads(bp, sizeof *bp);
    if (!bp || n == 0)
        return COEXEC_EINVAL;
    struct xbarrier *b = xbar_of(bp);
    if (b->magic_ == OBJ_MAGIC_XBARRIER) {
        /* Live: as destroy then init, unless a thread is inside wait
         * (arrived, or released and not yet gone). */
        if (atom_load_acq_u32(&b->inside))
            return COEXEC_EBUSY;
        b->n = n;
        atom_store_rlx_u32(&b->count, 0);
        return COEXEC_OK;
    }
    memset(b, 0, sizeof *b);
    b->n = n;
    b->magic_ = OBJ_MAGIC_XBARRIER;
    return COEXEC_OK;
}

COEXEC_API int coexec_xstream_barrier_destroy(coexec_xstream_barrier_t *bp)
{
    struct xbarrier *b = xbar_of(bp);
    OBJ_CHECK(b, OBJ_MAGIC_XBARRIER);
    if (atom_load_acq_u32(&b->inside))
        return COEXEC_EBUSY;
    b->magic_ = MAGIC_DEAD;
    return COEXEC_OK;
}

/* Spins this many rounds before sleeping in the kernel. */
#define XBAR_SPIN 4096

COEXEC_API int coexec_xstream_barrier_wait(coexec_xstream_barrier_t *bp)
{
    struct xbarrier *b = xbar_of(bp);
    OBJ_CHECK(b, OBJ_MAGIC_XBARRIER);
    atom_fadd_rlx_u32(&b->inside, 1);
    uint32_t g = atom_load_acq_u32(&b->generation);
    if (atom_fadd_ar_u32(&b->count, 1) + 1 == b->n) {
        atom_store_rlx_u32(&b->count, 0);
        /* Release: everything before the barrier, for every departure. */
        atom_fadd_rel_u32(&b->generation, 1);
        coexec__futex_wake(&b->generation, INT_MAX);
    } else {
        for (int i = 0; atom_load_acq_u32(&b->generation) == g; i++) {
            if (i < XBAR_SPIN)
                cpu_relax();
            else
                coexec__futex_wait(&b->generation, g, NULL);
        }
    }
    atom_fsub_rel_u32(&b->inside, 1);
    return COEXEC_OK;
}
