/*
 * src/pool/pool.c: pools: the public API, the access-mode checks, and the
 * shared-pool operations (locking, stealing, waking parked schedulers).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* Every pool record ever made in this epoch (for finalize), and the
 * recycled ones. Both under coexec__g.lock. */
static struct coexec_pool_rec *pool_all;
static struct coexec_pool_rec *pool_free;
/* Default pools of streams that were freed. Parked units may still name one
 * as their home, so such a record is only ever reused as another default
 * pool (MPMC LIFO, where a late push is at home). */
static struct coexec_pool_rec *pool_retired;

void coexec__spin_lock_slow(atom_u32_t *l)
{
    unsigned spins = 0;
    for (;;) {
        uint32_t exp = 0;
        if (atom_load_rlx_u32(l) == 0 && atom_cas_acq_u32(l, &exp, 1))
            return;
        if (++spins < 128)
            cpu_relax();
        else
            sched_yield(); /* the holder may have been preempted */
    }
}

static struct coexec_pool_rec *pool_new(int kind, int access, bool dflt)
{
    pthread_mutex_lock(&coexec__g.lock);
    struct coexec_pool_rec *p = dflt && pool_retired ? pool_retired : pool_free;
    uint64_t gen;
    if (p) {
        if (p == pool_retired)
            pool_retired = p->free_next;
        else
            pool_free = p->free_next;
        gen = gen_next(atom_load_rlx_u64(&p->gen));
    } else {
        p = aligned_alloc(CACHE_LINE, sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&coexec__g.lock);
            return NULL;
        }
        memset(p, 0, sizeof *p);
        p->all_next = pool_all;
        pool_all = p;
        gen = gen_first();
    }
    /* Thieves may still look at a recycled record: they read `stealable`
     * and the list only under the lock, so reset them under it. */
    pool_lock(p);
    p->kind = (uint8_t)kind;
    p->access = (uint8_t)access;
    p->shared = access != COEXEC_ACCESS_PRIV;
    p->stealable = 0;
    p->head = p->tail = NULL;
    atom_store_rlx_u64(&p->size, 0);
    p->sleepers = NULL;
    p->forward = NULL;
    pool_unlock(p);
    atom_store_rlx_u32(&p->nscheds, 0);
    p->user_created = 0;
    p->live = 1;
    atom_store_rlx_ptr(&p->producer, NULL);
    atom_store_rlx_ptr(&p->consumer, NULL);
    p->owner_xs = NULL;
    p->free_next = NULL;
    atom_store_rel_u64(&p->gen, gen);
    pthread_mutex_unlock(&coexec__g.lock);
    return p;
}

struct coexec_pool_rec *coexec__pool_new(int kind, int access)
{
    return pool_new(kind, access, false);
}

struct coexec_pool_rec *coexec__pool_new_default(void)
{
    return pool_new(COEXEC_POOL_LIFO, COEXEC_ACCESS_MPMC, true);
}

void coexec__pool_retire(struct coexec_pool_rec *p, struct coexec_pool_rec *to)
{
    pool_lock(p);
    p->forward = to;
    p->stealable = 0;
    struct coexec_unit_rec *u = p->head;
    p->head = p->tail = NULL;
    atom_store_rlx_u64(&p->size, 0);
    pool_unlock(p);
    /* Units still queued (woken after the stream stopped) move on. */
    while (u) {
        struct coexec_unit_rec *n = u->next;
        u->in_pool = 0;
        coexec__pool_push(to, u, false);
        u = n;
    }
    pthread_mutex_lock(&coexec__g.lock);
    atom_store_rel_u64(&p->gen, gen_next(atom_load_rlx_u64(&p->gen)));
    p->live = 0;
    p->free_next = pool_retired;
    pool_retired = p;
    pthread_mutex_unlock(&coexec__g.lock);
}

void coexec__pool_release(struct coexec_pool_rec *p)
{
    pthread_mutex_lock(&coexec__g.lock);
    pool_lock(p);
    p->stealable = 0;
    pool_unlock(p);
    /* Release: a handle check that sees the new generation sees a dead pool. */
    atom_store_rel_u64(&p->gen, gen_next(atom_load_rlx_u64(&p->gen)));
    p->free_next = pool_free;
    p->live = 0;
    pool_free = p;
    pthread_mutex_unlock(&coexec__g.lock);
}

int coexec__pool_count_user_live(void)
{
    int n = 0;
    pthread_mutex_lock(&coexec__g.lock);
    for (struct coexec_pool_rec *p = pool_all; p; p = p->all_next)
        n += p->live && p->user_created;
    pthread_mutex_unlock(&coexec__g.lock);
    return n;
}

void coexec__pool_free_all(void)
{
    pthread_mutex_lock(&coexec__g.lock);
    struct coexec_pool_rec *p = pool_all;
    while (p) {
        struct coexec_pool_rec *n = p->all_next;
        free(p);
        p = n;
    }
    pool_all = pool_free = pool_retired = NULL;
    pthread_mutex_unlock(&coexec__g.lock);
}

/* Wakes the schedulers parked on p. Called with p's lock held; the futex
 * calls themselves are cheap enough here because a sleeper exists only
 * after a stream found nothing to do for its whole spin budget. */
void coexec__pool_wake_sleepers_locked(struct coexec_pool_rec *p)
{
    struct sleeper *s = p->sleepers;
    p->sleepers = NULL;
    while (s) {
        struct sleeper *n = s->next;
        s->linked = false;
        coexec__xs_kick(s->xs);
        s = n;
    }
}

struct coexec_unit_rec *coexec__pool_steal(struct coexec_pool_rec *p,
                                           struct coexec_xstream_rec *xs)
{
    if (atom_load_rlx_u64(&p->size) == 0)
        return NULL;
    pool_lock(p);
    struct coexec_unit_rec *u = NULL;
    if (p->stealable)
        u = pool_take_from(p, xs, p->kind == COEXEC_POOL_LIFO);
    pool_unlock(p);
    return u;
}

bool coexec__pool_sleep_register(struct coexec_pool_rec *p, struct sleeper *s)
{
    pool_lock(p);
    bool empty = atom_load_rlx_u64(&p->size) == 0;
    if (empty) {
        s->prev = NULL;
        s->next = p->sleepers;
        if (p->sleepers)
            p->sleepers->prev = s;
        p->sleepers = s;
        s->linked = true;
    }
    pool_unlock(p);
    return empty;
}

void coexec__pool_sleep_unregister(struct coexec_pool_rec *p,
                                   struct sleeper *s)
{
    pool_lock(p);
    if (s->linked) {
        if (s->prev)
            s->prev->next = s->next;
        else
            p->sleepers = s->next;
        if (s->next)
            s->next->prev = s->prev;
        s->linked = false;
    }
    pool_unlock(p);
}

/* ---- access-mode checks ------------------------------------------------ */

/* Binds the producer or consumer side of p to the calling thread on first
 * use; returns false when another thread is already bound. */
static bool bind_side(atom_ptr_t *side, void *me)
{
    void *cur = atom_load_acq_ptr(side);
    if (cur == me)
        return true;
    if (cur == NULL && atom_cas_ar_ptr(side, &cur, me))
        return true;
    return cur == me;
}

static int check_access(struct coexec_pool_rec *p, bool push)
{
#ifdef COEXEC_CHECKS
    void *me = coexec__thread_token();
    switch (p->access) {
    case COEXEC_ACCESS_PRIV:
        /* One thread does both: bind both sides to it. */
        if (!bind_side(&p->producer, me) || !bind_side(&p->consumer, me))
            return COEXEC_EACCESS;
        return 0;
    case COEXEC_ACCESS_SPSC:
        return bind_side(push ? &p->producer : &p->consumer, me)
                   ? 0
                   : COEXEC_EACCESS;
    case COEXEC_ACCESS_MPSC:
        return push || bind_side(&p->consumer, me) ? 0 : COEXEC_EACCESS;
    case COEXEC_ACCESS_SPMC:
        return !push || bind_side(&p->producer, me) ? 0 : COEXEC_EACCESS;
    default:
        return 0;
    }
#else
    (void)p;
    (void)push;
    (void)bind_side;
    return 0;
#endif
}

int coexec__pool_check_access(struct coexec_pool_rec *p, bool push)
{
    return check_access(p, push);
}

/* ---- public API -------------------------------------------------------- */

COEXEC_API int coexec_pool_create(coexec_pool_kind_t kind,
                                  coexec_pool_access_t access,
                                  coexec_pool_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    if ((unsigned)kind > COEXEC_POOL_LIFO ||
        (unsigned)access > COEXEC_ACCESS_MPMC)
        return COEXEC_EINVAL;
    struct coexec_pool_rec *p = coexec__pool_new(kind, access);
    if (!p)
        return COEXEC_ENOMEM;
    p->user_created = 1;
    out->p = p;
    out->gen = atom_load_rlx_u64(&p->gen);
    return COEXEC_OK;
}

COEXEC_API int coexec_pool_free(coexec_pool_t *pool)
{
    if (!pool)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(*pool);
    if (rc)
        return rc;
    struct coexec_pool_rec *p = pool->p;
    if (atom_load_acq_u64(&p->size) != 0 || atom_load_acq_u32(&p->nscheds) != 0)
        return COEXEC_EBUSY;
    if (!p->user_created)
        return COEXEC_EPERM; /* a stream's default pool goes with the stream */
    coexec__pool_release(p);
    pool->p = NULL;
    pool->gen = 0;
    return COEXEC_OK;
}

COEXEC_API int coexec_pool_push(coexec_pool_t pool, coexec_unit_t unit)
{
    RT_CHECK();
    int rc = CHECK_HANDLE(pool);
    if (!rc)
        rc = CHECK_HANDLE(unit);
    if (rc)
        return rc;
    struct coexec_unit_rec *u = unit.p;
    if (u->kind == UNIT_MAIN)
        return COEXEC_EPERM;
    if (unit_pool(u) != NULL || u->in_pool ||
        atom_load_acq_u32(&u->state) != COEXEC_UNIT_READY)
        return COEXEC_ESTATE;
    if ((rc = check_access(pool.p, true)))
        return rc;
    coexec__pool_push(pool.p, u, false);
    return COEXEC_OK;
}

COEXEC_API int coexec_pool_pop(coexec_pool_t pool, coexec_unit_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    if ((rc = check_access(pool.p, false)))
        return rc;
    struct coexec_unit_rec *u = coexec__pool_pop(pool.p, coexec__xs_self());
    if (!u) {
        out->p = NULL;
        out->gen = 0;
        return COEXEC_OK;
    }
    /* The unit now belongs to no pool until it is pushed again. */
    atom_store_rlx_ptr(&u->pool, NULL);
    out->p = u;
    out->gen = atom_load_rlx_u64(&u->gen);
    return COEXEC_OK;
}

COEXEC_API int coexec_pool_get_size(coexec_pool_t pool, size_t *size)
{
    if (!size)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    *size = (size_t)atom_load_acq_u64(&pool.p->size);
    return COEXEC_OK;
}

COEXEC_API int coexec_pool_get_info(coexec_pool_t pool,
                                    coexec_pool_kind_t *kind,
                                    coexec_pool_access_t *access)
{
    RT_CHECK();
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    if (kind)
        *kind = (coexec_pool_kind_t)pool.p->kind;
    if (access)
        *access = (coexec_pool_access_t)pool.p->access;
    return COEXEC_OK;
}
