/*
 * src/waker/eventual.c: eventuals and futures.
 *
 * Room plaque. Both are a spin lock, a `ready` word readable without it,
 * and one wait list. Setting (the last compartment, for a future) stores
 * the value, publishes ready with release, and releases the whole list
 * under the lock; a waiter checks ready (acquire) before and after taking
 * the lock, so a set can never fall between its check and its link. A
 * future's callback runs outside the lock, before ready is published, so
 * waiters see what it did.
 */
#include <stdlib.h>
#include <string.h>

#include "arch/clock.h"
#include "base/valgrind.h"
#include "waker/wait.h"

#define EV_INLINE 16

struct eventual {
    uint64_t magic_;
    atom_u32_t lock;
    atom_u32_t ready;
    size_t size;
    void *heap; /* the value's buffer when size > EV_INLINE */
    struct wlist waiters;
    unsigned char inline_[EV_INLINE];
};
OBJ_CAST(coexec_eventual_t, struct eventual, ev_of)

/* Made by init (its list names its lock), or by the static initialiser
 * (no list lock yet: ev_list_own sets it before a tasklet is linked). The
 * pointer is read atomically: an init that finds waiters (EBUSY) may look
 * while a poll sets it. */
static bool ev_live(struct eventual *e)
{
    atom_u32_t *l = __atomic_load_n(&e->waiters.lock, __ATOMIC_RELAXED);
    return e->magic_ == OBJ_MAGIC_EVENTUAL && (l == &e->lock || l == NULL);
}

/* Under e's lock: its list names the lock, which whoever unlinks a polled
 * tasklet from the list takes (a statically initialised eventual's list
 * names none until then). */
static void ev_list_own(struct eventual *e)
{
    if (UNLIKELY(e->waiters.lock == NULL))
        __atomic_store_n(&e->waiters.lock, &e->lock, __ATOMIC_RELAXED);
}

static void *ev_buf(struct eventual *e)
{
    return e->size > EV_INLINE ? e->heap : e->inline_;
}

/* Waits on list (lock held on entry, released on return) until released;
 * returns the error code of the result. */
static int wait_on(struct wlist *l, atom_u32_t *lock, struct caller *c,
                   uint64_t deadline, const char *what, const void *obj)
{
    struct waiter w;
    waiter_init(&w, c, l, lock, 0, what, obj);
    wlist_push(l, &w.node);
    spin_unlock(lock);
    return coexec__wait_result_code(coexec__wait_block(&w, deadline));
}

/* Moves the polled tasklet u off any other list before linking it on l. */
static void tasklet_prepare(struct coexec_unit_rec *u, struct wlist *l)
{
    struct wlist *cur = atom_load_acq_ptr(&u->tnode.who);
    if (cur && cur != l)
        coexec__wlist_unlink_tasklet(u);
}

COEXEC_API int coexec_eventual_init(coexec_eventual_t *ev, size_t size)
{
    vg_init_reads(ev, sizeof *ev);
    if (!ev)
        return COEXEC_EINVAL;
    struct eventual *e = ev_of(ev);
    void *heap = NULL;
    if (size > EV_INLINE) {
        heap = malloc(size);
        if (!heap)
            return COEXEC_ENOMEM;
    }
    /* Live (its header and list say so; a byte copy of one is not): as
     * destroy then init, under its lock, unless waited on. */
    if (ev_live(e)) {
        spin_lock(&e->lock);
        if (!wlist_empty(&e->waiters)) {
            spin_unlock(&e->lock);
            free(heap);
            return COEXEC_EBUSY;
        }
        void *old = e->heap;
        e->size = size;
        e->heap = heap;
        atom_store_rlx_u32(&e->ready, 0);
        wlist_init(&e->waiters, &e->lock);
        spin_unlock(&e->lock);
        free(old);
        return COEXEC_OK;
    }
    memset(e, 0, sizeof *e);
    e->heap = heap;
    e->size = size;
    wlist_init(&e->waiters, &e->lock);
    e->magic_ = OBJ_MAGIC_EVENTUAL;
    return COEXEC_OK;
}

COEXEC_API int coexec_eventual_destroy(coexec_eventual_t *ev)
{
    struct eventual *e = ev_of(ev);
    OBJ_CHECK(e, OBJ_MAGIC_EVENTUAL);
    spin_lock(&e->lock);
    int rc_ = obj_retire(&e->magic_, !wlist_empty(&e->waiters));
    spin_unlock(&e->lock);
    if (rc_)
        return rc_;
    free(e->heap);
    e->heap = NULL;
    return COEXEC_OK;
}

COEXEC_API int coexec_eventual_set(coexec_eventual_t *ev, const void *value,
                                   size_t size)
{
    struct eventual *e = ev_of(ev);
    OBJ_CHECK(e, OBJ_MAGIC_EVENTUAL);
    if (size > e->size || (size && !value))
        return COEXEC_EINVAL;
    spin_lock(&e->lock);
    if (atom_load_rlx_u32(&e->ready)) {
        spin_unlock(&e->lock);
        return COEXEC_ESTATE;
    }
    if (size)
        memcpy(ev_buf(e), value, size);
    /* Release: the value before the flag, for lock-free readers. */
    atom_store_rel_u32(&e->ready, 1);
    coexec__wait_release_all(&e->waiters, WN_DONE);
    spin_unlock(&e->lock);
    return COEXEC_OK;
}

static int ev_wait(coexec_eventual_t *ev, uint64_t deadline, void **value)
{
    struct eventual *e = ev_of(ev);
    OBJ_CHECK(e, OBJ_MAGIC_EVENTUAL);
    if (!atom_load_acq_u32(&e->ready)) {
        struct caller c;
        int rc = wait_caller(&c);
        if (rc)
            return rc;
        if (wait_spin_flag(&c, &e->ready))
            goto ready;
        spin_lock(&e->lock);
        if (!atom_load_rlx_u32(&e->ready)) {
            rc = wait_on(&e->waiters, &e->lock, &c, deadline, "eventual", ev);
            if (rc)
                return rc;
        } else {
            spin_unlock(&e->lock);
        }
    }
ready:
    if (value)
        *value = ev_buf(e);
    return COEXEC_OK;
}

COEXEC_API int coexec_eventual_wait(coexec_eventual_t *ev, void **value)
{
    return ev_wait(ev, UINT64_MAX, value);
}

COEXEC_API int coexec_eventual_wait_timed(coexec_eventual_t *ev,
                                          uint64_t timeout_ns, void **value)
{
    return ev_wait(ev, clock_deadline(timeout_ns), value);
}

COEXEC_API int coexec_eventual_test(coexec_eventual_t *ev, void **value,
                                    int *is_set)
{
    struct eventual *e = ev_of(ev);
    OBJ_CHECK(e, OBJ_MAGIC_EVENTUAL);
    if (!is_set)
        return COEXEC_EINVAL;
    *is_set = atom_load_acq_u32(&e->ready) != 0;
    if (*is_set && value)
        *value = ev_buf(e);
    return COEXEC_OK;
}

COEXEC_API int coexec_eventual_poll(coexec_eventual_t *ev, coexec_poll_t *cx,
                                    void **value)
{
    struct eventual *e = ev_of(ev);
    OBJ_CHECK(e, OBJ_MAGIC_EVENTUAL);
    struct coexec_unit_rec *u = coexec__poll_unit(cx);
    if (!u)
        return COEXEC_EINVAL;
    if (!atom_load_acq_u32(&e->ready)) {
        tasklet_prepare(u, &e->waiters);
        spin_lock(&e->lock);
        if (!atom_load_rlx_u32(&e->ready)) {
            ev_list_own(e);
            int rc = coexec__wait_link_tasklet(&e->waiters, u, 0);
            spin_unlock(&e->lock);
            return rc ? rc : COEXEC_PENDING;
        }
        spin_unlock(&e->lock);
    }
    if (value)
        *value = ev_buf(e);
    return COEXEC_READY;
}

COEXEC_API int coexec_eventual_reset(coexec_eventual_t *ev)
{
    struct eventual *e = ev_of(ev);
    OBJ_CHECK(e, OBJ_MAGIC_EVENTUAL);
    spin_lock(&e->lock);
    atom_store_rlx_u32(&e->ready, 0);
    spin_unlock(&e->lock);
    return COEXEC_OK;
}

/* ---- futures ------------------------------------------------------------ */

struct future {
    uint64_t magic_;
    atom_u32_t lock;
    atom_u32_t ready;
    uint32_t n, count;
    void **values;
    coexec_future_cb_t cb;
    void *arg;
    struct wlist waiters;
};
OBJ_CAST(coexec_future_t, struct future, fut_of)

/* Whether f may be reset, re-initialised or destroyed (lock held): 0;
 * COEXEC_EAGAIN while the set that completed it still runs the callback
 * (which reads the values; the set then releases the waiters): a
 * moment's state; COEXEC_EBUSY while waiters wait for a completion. */
static int fut_in_use(struct future *x)
{
    if (x->count == x->n && !atom_load_rlx_u32(&x->ready))
        return COEXEC_EAGAIN;
    return wlist_empty(&x->waiters) ? 0 : COEXEC_EBUSY;
}

COEXEC_API int coexec_future_init(coexec_future_t *f, size_t n,
                                  coexec_future_cb_t cb, void *arg)
{
    vg_init_reads(f, sizeof *f);
    if (!f || n == 0 || n > UINT32_MAX)
        return COEXEC_EINVAL;
    struct future *x = fut_of(f);
    void **values = calloc(n, sizeof *values);
    if (!values)
        return COEXEC_ENOMEM;
    /* Live (as for an eventual): as destroy then init, under its lock,
     * unless busy. */
    if (x->magic_ == OBJ_MAGIC_FUTURE && x->waiters.lock == &x->lock) {
        spin_lock(&x->lock);
        if (fut_in_use(x)) {
            spin_unlock(&x->lock);
            free(values);
            return COEXEC_EBUSY;
        }
        void **old = x->values;
        x->values = values;
        x->n = (uint32_t)n;
        x->count = 0;
        x->cb = cb;
        x->arg = arg;
        atom_store_rlx_u32(&x->ready, 0);
        wlist_init(&x->waiters, &x->lock);
        spin_unlock(&x->lock);
        free(old);
        return COEXEC_OK;
    }
    memset(x, 0, sizeof *x);
    x->values = values;
    x->n = (uint32_t)n;
    x->cb = cb;
    x->arg = arg;
    wlist_init(&x->waiters, &x->lock);
    x->magic_ = OBJ_MAGIC_FUTURE;
    return COEXEC_OK;
}

COEXEC_API int coexec_future_destroy(coexec_future_t *f)
{
    struct future *x = fut_of(f);
    OBJ_CHECK(x, OBJ_MAGIC_FUTURE);
    spin_lock(&x->lock);
    int rc_ = fut_in_use(x);
    if (!rc_)
        rc_ = obj_retire(&x->magic_, false);
    spin_unlock(&x->lock);
    if (rc_)
        return rc_;
    free(x->values);
    x->values = NULL;
    return COEXEC_OK;
}

COEXEC_API int coexec_future_set(coexec_future_t *f, void *value)
{
    struct future *x = fut_of(f);
    OBJ_CHECK(x, OBJ_MAGIC_FUTURE);
    spin_lock(&x->lock);
    if (x->count == x->n) {
        spin_unlock(&x->lock);
        return COEXEC_ESTATE;
    }
    x->values[x->count++] = value;
    if (x->count < x->n) {
        spin_unlock(&x->lock);
        return COEXEC_OK;
    }
    /* The last compartment: count == n turns further sets away while the
     * callback runs, outside the lock (it may use other objects). */
    spin_unlock(&x->lock);
    if (x->cb)
        x->cb(x->values, x->n, x->arg);
    spin_lock(&x->lock);
    atom_store_rel_u32(&x->ready, 1);
    coexec__wait_release_all(&x->waiters, WN_DONE);
    spin_unlock(&x->lock);
    return COEXEC_OK;
}

static int fut_wait(coexec_future_t *f, uint64_t deadline)
{
    struct future *x = fut_of(f);
    OBJ_CHECK(x, OBJ_MAGIC_FUTURE);
    if (atom_load_acq_u32(&x->ready))
        return COEXEC_OK;
    struct caller c;
    int rc = wait_caller(&c);
    if (rc)
        return rc;
    if (wait_spin_flag(&c, &x->ready))
        return COEXEC_OK;
    spin_lock(&x->lock);
    if (atom_load_rlx_u32(&x->ready)) {
        spin_unlock(&x->lock);
        return COEXEC_OK;
    }
    return wait_on(&x->waiters, &x->lock, &c, deadline, "future", x);
}

COEXEC_API int coexec_future_wait(coexec_future_t *f)
{
    return fut_wait(f, UINT64_MAX);
}

COEXEC_API int coexec_future_wait_timed(coexec_future_t *f,
                                        uint64_t timeout_ns)
{
    return fut_wait(f, clock_deadline(timeout_ns));
}

COEXEC_API int coexec_future_test(coexec_future_t *f, int *is_ready)
{
    struct future *x = fut_of(f);
    OBJ_CHECK(x, OBJ_MAGIC_FUTURE);
    if (!is_ready)
        return COEXEC_EINVAL;
    *is_ready = atom_load_acq_u32(&x->ready) != 0;
    return COEXEC_OK;
}

COEXEC_API int coexec_future_poll(coexec_future_t *f, coexec_poll_t *cx)
{
    struct future *x = fut_of(f);
    OBJ_CHECK(x, OBJ_MAGIC_FUTURE);
    struct coexec_unit_rec *u = coexec__poll_unit(cx);
    if (!u)
        return COEXEC_EINVAL;
    if (atom_load_acq_u32(&x->ready))
        return COEXEC_READY;
    tasklet_prepare(u, &x->waiters);
    spin_lock(&x->lock);
    if (atom_load_rlx_u32(&x->ready)) {
        spin_unlock(&x->lock);
        return COEXEC_READY;
    }
    int rc = coexec__wait_link_tasklet(&x->waiters, u, 0);
    spin_unlock(&x->lock);
    return rc ? rc : COEXEC_PENDING;
}

COEXEC_API int coexec_future_get(coexec_future_t *f, size_t i, void **value)
{
    struct future *x = fut_of(f);
    OBJ_CHECK(x, OBJ_MAGIC_FUTURE);
    if (!value || i >= x->n)
        return COEXEC_EINVAL;
    spin_lock(&x->lock);
    *value = i < x->count ? x->values[i] : NULL;
    spin_unlock(&x->lock);
    return COEXEC_OK;
}

COEXEC_API int coexec_future_reset(coexec_future_t *f)
{
    struct future *x = fut_of(f);
    OBJ_CHECK(x, OBJ_MAGIC_FUTURE);
    spin_lock(&x->lock);
    int rc = fut_in_use(x);
    if (rc) {
        spin_unlock(&x->lock);
        return rc;
    }
    x->count = 0;
    memset(x->values, 0, x->n * sizeof *x->values);
    atom_store_rlx_u32(&x->ready, 0);
    spin_unlock(&x->lock);
    return COEXEC_OK;
}

static int check_all(coexec_future_t *const *fs, size_t n)
{
    if (!fs || n == 0)
        return COEXEC_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!fs[i])
            return COEXEC_EINVAL;
        if (fut_of(fs[i])->magic_ != OBJ_MAGIC_FUTURE)
            return COEXEC_EHANDLE;
    }
    return COEXEC_OK;
}

COEXEC_API int coexec_future_wait_all(coexec_future_t *const *fs, size_t n)
{
    int rc = check_all(fs, n);
    for (size_t i = 0; !rc && i < n; i++)
        rc = fut_wait(fs[i], UINT64_MAX);
    return rc;
}

COEXEC_API int coexec_future_poll_all(coexec_future_t *const *fs, size_t n,
                                      coexec_poll_t *cx)
{
    int rc = check_all(fs, n);
    if (rc)
        return rc;
    /* One registration at a time: the first future not complete. */
    for (size_t i = 0; i < n; i++) {
        rc = coexec_future_poll(fs[i], cx);
        if (rc != COEXEC_READY)
            return rc;
    }
    return COEXEC_READY;
}
