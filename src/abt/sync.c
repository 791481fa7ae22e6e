/*
 * src/abt/sync.c: mutex (and its attributes), condition variable, rwlock,
 * barrier, eventual and future, over coexec/sync.h and coexec/eventual.h.
 *
 * An ABT_mutex or ABT_cond is the address of 64 bytes holding the coexec
 * object itself: ABT_mutex_create allocates them, ABT_mutex_memory is them.
 * A zero-filled memory (Argobots' static initialisers) is turned into
 * coexec's static initialiser on first use by one compare-and-swap on the
 * object's first word, which coexec keeps as the object's tag; an
 * eventual's the same way, in its own larger memory.
 *
 * As in Argobots 1.x, a tasklet's waits on an eventual, a future, a cond,
 * a barrier or a rwlock are refused (with the call's own error code,
 * whatever the object's state); its mutex locks poll, yielding the OS
 * thread between polls, since Argobots lets tasklets lock. A user
 * scheduler's run function polls an eventual or a future, and runs its
 * other waits in a ULT (abtx_sched_block).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abt_internal.h"

_Static_assert(sizeof(coexec_mutex_t) <= sizeof(ABT_mutex_memory),
               "a coexec mutex fits in ABT_mutex_memory");
_Static_assert(sizeof(coexec_cond_t) <= sizeof(ABT_cond_memory),
               "a coexec cond fits in ABT_cond_memory");

/* Makes the object at w live: a first word of 0 (or, for a mutex, the
 * recursive initialiser's 1 << 32 on little-endian, 1 on big-endian) is
 * replaced with coexec's tag. */
static void *lazy_init_ex(void *obj, uint64_t plain_tag, uint64_t rec_tag,
                          bool *fresh)
{
    _Atomic uint64_t *w = obj;
    uint64_t v = atomic_load_explicit(w, memory_order_acquire);
    if (v == plain_tag || (rec_tag && v == rec_tag))
        return obj;
    uint64_t exp = v;
    if (v == 0)
        *fresh = atomic_compare_exchange_strong(w, &exp, plain_tag);
    else if (rec_tag && (v == ((uint64_t)1 << 32) || v == 1))
        *fresh = atomic_compare_exchange_strong(w, &exp, rec_tag);
    return obj;
}

static void *lazy_init(void *obj, uint64_t plain_tag, uint64_t rec_tag)
{
    bool fresh;
    return lazy_init_ex(obj, plain_tag, rec_tag, &fresh);
}

static uint64_t tag_of(const void *init)
{
    uint64_t v;
    memcpy(&v, init, sizeof(v));
    return v;
}

static const coexec_mutex_t mutex_plain = COEXEC_MUTEX_INITIALIZER;
static const coexec_mutex_t mutex_rec = COEXEC_MUTEX_RECURSIVE_INITIALIZER;
static const coexec_cond_t cond_init = COEXEC_COND_INITIALIZER;

static coexec_mutex_t *mutex_of(ABT_mutex m)
{
    return lazy_init(m, tag_of(&mutex_plain), tag_of(&mutex_rec));
}

static coexec_cond_t *cond_of(ABT_cond c)
{
    return lazy_init(c, tag_of(&cond_init), 0);
}

/* Lets others run between two polls: a ULT yields (the owner of what it
 * polls may be queued on its own stream: a mutex is handed over to the
 * next waiter, which must get to run), anything else yields its OS
 * thread. */
static void backoff(void)
{
    if (coexec_self_caller() == COEXEC_CALLER_ULT) {
        ABT_thread self = abtx_cur_get();
        ABTX_IGNORE(coexec_yield());
        abtx_cur_set(self);
    } else {
        sched_yield();
    }
}

/* Polls op(obj) until it stops answering EBUSY. */
static int tasklet_poll(int (*op)(void *), void *obj)
{
    int rc;
    while ((rc = op(obj)) == COEXEC_EBUSY)
        backoff();
    return rc;
}

/* ---- mutex attributes ---------------------------------------------------- */

struct ABT_mutex_attr_opaque {
    ABT_bool recursive;
};

int ABT_mutex_attr_create(ABT_mutex_attr *newattr)
{
    if (!newattr)
        return ABT_ERR_INV_ARG;
    *newattr = abtx_live_new(calloc(1, sizeof(**newattr)), ABTX_L_MUTEX_ATTR);
    return *newattr ? ABT_SUCCESS : ABT_ERR_MEM;
}

int ABT_mutex_attr_free(ABT_mutex_attr *attr)
{
    return abtx_live_free(attr, ABTX_L_MUTEX_ATTR) ? ABT_SUCCESS
                                                   : ABT_ERR_INV_MUTEX_ATTR;
}

int ABT_mutex_attr_set_recursive(ABT_mutex_attr attr, ABT_bool recursive)
{
    if (!attr)
        return ABT_ERR_INV_MUTEX_ATTR;
    attr->recursive = recursive ? ABT_TRUE : ABT_FALSE;
    return ABT_SUCCESS;
}

int ABT_mutex_attr_get_recursive(ABT_mutex_attr attr, ABT_bool *recursive)
{
    if (!recursive)
        return ABT_ERR_INV_ARG;
    if (!attr)
        return ABT_ERR_INV_MUTEX_ATTR;
    *recursive = attr->recursive;
    return ABT_SUCCESS;
}

/* ---- mutex ------------------------------------------------------------------ */

int ABT_mutex_create_with_attr(ABT_mutex_attr attr, ABT_mutex *newmutex)
{
    if (!newmutex)
        return ABT_ERR_INV_ARG;
    /* Into the live set before its init, so that no initialised object is
     * ever dropped for want of an entry (as in every create below). */
    ABT_mutex_memory *mem = abtx_live_new(malloc(sizeof(*mem)), ABTX_L_MUTEX);
    if (!mem)
        return ABT_ERR_MEM;
    int rc = coexec_mutex_init((coexec_mutex_t *)(void *)mem,
                               attr && attr->recursive ? COEXEC_MUTEX_RECURSIVE
                                                       : COEXEC_MUTEX_PLAIN);
    if (rc) {
        abtx_live_free(&mem, ABTX_L_MUTEX);
        return abtx_err(rc, ABT_ERR_INV_MUTEX, ABT_ERR_MUTEX);
    }
    *newmutex = ABT_MUTEX_MEMORY_GET_HANDLE(mem);
    return ABT_SUCCESS;
}

int ABT_mutex_create(ABT_mutex *newmutex)
{
    return ABT_mutex_create_with_attr(ABT_MUTEX_ATTR_NULL, newmutex);
}

int ABT_mutex_free(ABT_mutex *mutex)
{
    /* Only a mutex of ABT_mutex_create, once: not a static one, nor one
     * freed already. */
    if (!mutex || !abtx_live_remove(*mutex, ABTX_L_MUTEX))
        return ABT_ERR_INV_MUTEX;
    int rc = coexec_mutex_destroy(mutex_of(*mutex));
    if (rc == COEXEC_EBUSY) {
        (void)abtx_live_add(*mutex, ABTX_L_MUTEX); /* still in use */
        return ABT_ERR_MUTEX;
    }
    free(*mutex);
    *mutex = ABT_MUTEX_NULL;
    return ABT_SUCCESS;
}

static int mutex_trylock_op(void *m)
{
    return coexec_mutex_trylock(m);
}

static int mutex_error(int rc)
{
    if (rc == COEXEC_EDEADLK || rc == COEXEC_EPERM)
        return ABT_ERR_MUTEX;
    return abtx_err(rc, ABT_ERR_INV_MUTEX, ABT_ERR_MUTEX);
}

int ABT_mutex_lock(ABT_mutex mutex)
{
    if (!mutex)
        return ABT_ERR_INV_MUTEX;
    coexec_mutex_t *m = mutex_of(mutex);
    int rc;
    ABTX_WAIT(rc, ABT_SYNC_EVENT_TYPE_MUTEX, mutex, coexec_mutex_lock(m));
    if (rc == COEXEC_ECONTEXT)
        rc = tasklet_poll(mutex_trylock_op, m);
    return mutex_error(rc);
}

int ABT_mutex_lock_high(ABT_mutex mutex)
{
    return ABT_mutex_lock(mutex);
}

int ABT_mutex_lock_low(ABT_mutex mutex)
{
    return ABT_mutex_lock(mutex);
}

int ABT_mutex_spinlock(ABT_mutex mutex)
{
    if (!mutex)
        return ABT_ERR_INV_MUTEX;
    return mutex_error(tasklet_poll(mutex_trylock_op, mutex_of(mutex)));
}

int ABT_mutex_trylock(ABT_mutex mutex)
{
    if (!mutex)
        return ABT_ERR_INV_MUTEX;
    int rc = coexec_mutex_trylock(mutex_of(mutex));
    if (rc == COEXEC_EBUSY) {
        /* Programs spin on trylock: give the owner (perhaps handed the
         * mutex and queued behind the caller) its turn. */
        backoff();
        return ABT_ERR_MUTEX_LOCKED;
    }
    return mutex_error(rc);
}

int ABT_mutex_unlock(ABT_mutex mutex)
{
    if (!mutex)
        return ABT_ERR_INV_MUTEX;
    return mutex_error(coexec_mutex_unlock(mutex_of(mutex)));
}

int ABT_mutex_unlock_se(ABT_mutex mutex)
{
    return ABT_mutex_unlock(mutex);
}

int ABT_mutex_unlock_de(ABT_mutex mutex)
{
    return ABT_mutex_unlock(mutex);
}

int ABT_mutex_equal(ABT_mutex mutex1, ABT_mutex mutex2, ABT_bool *result)
{
    if (!result)
        return ABT_ERR_INV_ARG;
    *result = mutex1 == mutex2 ? ABT_TRUE : ABT_FALSE;
    return ABT_SUCCESS;
}

int ABT_mutex_get_attr(ABT_mutex mutex, ABT_mutex_attr *attr)
{
    if (!mutex)
        return ABT_ERR_INV_MUTEX;
    int rc = ABT_mutex_attr_create(attr);
    if (!rc)
        (*attr)->recursive = tag_of(mutex_of(mutex)) == tag_of(&mutex_rec)
                                 ? ABT_TRUE
                                 : ABT_FALSE;
    return rc;
}

/* ---- condition variable ----------------------------------------------------- */

int ABT_cond_create(ABT_cond *newcond)
{
    if (!newcond)
        return ABT_ERR_INV_ARG;
    ABT_cond_memory *mem = abtx_live_new(malloc(sizeof(*mem)), ABTX_L_COND);
    if (!mem)
        return ABT_ERR_MEM;
    int rc = coexec_cond_init((coexec_cond_t *)(void *)mem);
    if (rc) {
        abtx_live_free(&mem, ABTX_L_COND);
        return abtx_err(rc, ABT_ERR_INV_COND, ABT_ERR_COND);
    }
    *newcond = ABT_COND_MEMORY_GET_HANDLE(mem);
    return ABT_SUCCESS;
}

int ABT_cond_free(ABT_cond *cond)
{
    if (!cond || !abtx_live_remove(*cond, ABTX_L_COND))
        return ABT_ERR_INV_COND;
    int rc = coexec_cond_destroy(cond_of(*cond));
    if (rc == COEXEC_EBUSY) {
        (void)abtx_live_add(*cond, ABTX_L_COND);
        return ABT_ERR_COND;
    }
    free(*cond);
    *cond = ABT_COND_NULL;
    return ABT_SUCCESS;
}

static int cond_error(int rc)
{
    if (rc == COEXEC_ETIMEDOUT)
        return ABT_ERR_COND_TIMEDOUT;
    if (rc == COEXEC_ECONTEXT || rc == COEXEC_EPERM)
        return ABT_ERR_COND;
    return abtx_err(rc, ABT_ERR_INV_COND, ABT_ERR_COND);
}

int ABT_cond_wait(ABT_cond cond, ABT_mutex mutex)
{
    if (!cond)
        return ABT_ERR_INV_COND;
    if (!mutex)
        return ABT_ERR_INV_MUTEX;
    if (abtx_in_tasklet())
        return ABT_ERR_COND;
    int rc;
    ABTX_WAIT(rc, ABT_SYNC_EVENT_TYPE_COND, cond,
              coexec_cond_wait(cond_of(cond), mutex_of(mutex)));
    return cond_error(rc);
}

int ABT_cond_timedwait(ABT_cond cond, ABT_mutex mutex,
                       const struct timespec *abstime)
{
    if (!cond)
        return ABT_ERR_INV_COND;
    if (!mutex)
        return ABT_ERR_INV_MUTEX;
    if (!abstime)
        return ABT_ERR_INV_ARG;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t ns = (int64_t)(abstime->tv_sec - now.tv_sec) * 1000000000 +
                 (abstime->tv_nsec - now.tv_nsec);
    int rc;
    ABTX_WAIT(rc, ABT_SYNC_EVENT_TYPE_COND, cond,
              coexec_cond_wait_timed(cond_of(cond), mutex_of(mutex),
                                     ns > 0 ? (uint64_t)ns : 0));
    return cond_error(rc);
}

int ABT_cond_signal(ABT_cond cond)
{
    if (!cond)
        return ABT_ERR_INV_COND;
    return cond_error(coexec_cond_signal(cond_of(cond)));
}

int ABT_cond_broadcast(ABT_cond cond)
{
    if (!cond)
        return ABT_ERR_INV_COND;
    return cond_error(coexec_cond_broadcast(cond_of(cond)));
}

/* ---- rwlock --------------------------------------------------------------------- */

struct ABT_rwlock_opaque {
    coexec_rwlock_t l;
};

int ABT_rwlock_create(ABT_rwlock *newrwlock)
{
    if (!newrwlock)
        return ABT_ERR_INV_ARG;
    ABT_rwlock l = abtx_live_new(malloc(sizeof(*l)), ABTX_L_RWLOCK);
    if (!l)
        return ABT_ERR_MEM;
    int rc = coexec_rwlock_init(&l->l);
    if (rc) {
        abtx_live_free(&l, ABTX_L_RWLOCK);
        return abtx_err(rc, ABT_ERR_INV_RWLOCK, ABT_ERR_RWLOCK);
    }
    *newrwlock = l;
    return ABT_SUCCESS;
}

int ABT_rwlock_free(ABT_rwlock *rwlock)
{
    if (!rwlock || !abtx_live_remove(*rwlock, ABTX_L_RWLOCK))
        return ABT_ERR_INV_RWLOCK;
    if (coexec_rwlock_destroy(&(*rwlock)->l) == COEXEC_EBUSY) {
        (void)abtx_live_add(*rwlock, ABTX_L_RWLOCK);
        return ABT_ERR_RWLOCK;
    }
    free(*rwlock);
    *rwlock = ABT_RWLOCK_NULL;
    return ABT_SUCCESS;
}

static int rwlock_call(ABT_rwlock rwlock, int (*op)(coexec_rwlock_t *))
{
    if (!rwlock)
        return ABT_ERR_INV_RWLOCK;
    int rc;
    ABTX_WAIT(rc, ABT_SYNC_EVENT_TYPE_RWLOCK, rwlock, op(&rwlock->l));
    if (rc == COEXEC_EDEADLK || rc == COEXEC_EPERM || rc == COEXEC_ECONTEXT)
        return ABT_ERR_RWLOCK;
    return abtx_err(rc, ABT_ERR_INV_RWLOCK, ABT_ERR_RWLOCK);
}

int ABT_rwlock_rdlock(ABT_rwlock rwlock)
{
    if (abtx_in_tasklet())
        return ABT_ERR_RWLOCK;
    return rwlock_call(rwlock, coexec_rwlock_rdlock);
}

int ABT_rwlock_wrlock(ABT_rwlock rwlock)
{
    if (abtx_in_tasklet())
        return ABT_ERR_RWLOCK;
    return rwlock_call(rwlock, coexec_rwlock_wrlock);
}

int ABT_rwlock_unlock(ABT_rwlock rwlock)
{
    return rwlock_call(rwlock, coexec_rwlock_unlock);
}

/* ---- barrier -------------------------------------------------------------------- */

struct ABT_barrier_opaque {
    coexec_barrier_t b;
    uint32_t n;
};

int ABT_barrier_create(uint32_t num_waiters, ABT_barrier *newbarrier)
{
    if (!newbarrier)
        return ABT_ERR_INV_ARG;
    ABT_barrier b = abtx_live_new(malloc(sizeof(*b)), ABTX_L_BARRIER);
    if (!b)
        return ABT_ERR_MEM;
    int rc = coexec_barrier_init(&b->b, num_waiters);
    if (rc) {
        abtx_live_free(&b, ABTX_L_BARRIER);
        return abtx_err(rc, ABT_ERR_INV_BARRIER, ABT_ERR_BARRIER);
    }
    b->n = num_waiters;
    *newbarrier = b;
    return ABT_SUCCESS;
}

int ABT_barrier_reinit(ABT_barrier barrier, uint32_t num_waiters)
{
    if (!barrier)
        return ABT_ERR_INV_BARRIER;
    if (coexec_barrier_destroy(&barrier->b) == COEXEC_EBUSY)
        return ABT_ERR_BARRIER;
    int rc = coexec_barrier_init(&barrier->b, num_waiters);
    if (!rc)
        barrier->n = num_waiters;
    return abtx_err(rc, ABT_ERR_INV_BARRIER, ABT_ERR_BARRIER);
}

int ABT_barrier_free(ABT_barrier *barrier)
{
    if (!barrier || !abtx_live_remove(*barrier, ABTX_L_BARRIER))
        return ABT_ERR_INV_BARRIER;
    if (coexec_barrier_destroy(&(*barrier)->b) == COEXEC_EBUSY) {
        (void)abtx_live_add(*barrier, ABTX_L_BARRIER);
        return ABT_ERR_BARRIER;
    }
    free(*barrier);
    *barrier = ABT_BARRIER_NULL;
    return ABT_SUCCESS;
}

static int barrier_wait_op(void *b)
{
    return coexec_barrier_wait(b, NULL);
}

int ABT_barrier_wait(ABT_barrier barrier)
{
    if (!barrier)
        return ABT_ERR_INV_BARRIER;
    if (abtx_in_tasklet())
        return ABT_ERR_BARRIER;
    int rc;
    ABTX_WAIT(rc, ABT_SYNC_EVENT_TYPE_BARRIER, barrier,
              coexec_barrier_wait(&barrier->b, NULL));
    if (rc == COEXEC_ECONTEXT &&
        !abtx_sched_block(barrier_wait_op, &barrier->b, &rc))
        return ABT_ERR_BARRIER;
    return abtx_err(rc, ABT_ERR_INV_BARRIER, ABT_ERR_BARRIER);
}

int ABT_barrier_get_num_waiters(ABT_barrier barrier, uint32_t *num_waiters)
{
    if (!num_waiters)
        return ABT_ERR_INV_ARG;
    if (!barrier)
        return ABT_ERR_INV_BARRIER;
    *num_waiters = barrier->n;
    return ABT_SUCCESS;
}

/* ---- eventual ------------------------------------------------------------------- */

/* The coexec eventual is the handle's memory itself, as for a mutex:
 * ABT_eventual_create allocates it (and adds it to the live set as
 * ABTX_L_EVENTUAL), ABT_eventual_memory is it (zero-filled: turned into
 * coexec's static initialiser, a pure event, on first use, which adds it
 * as ABTX_L_EVENTUAL_STATIC). Static memory is never allocated or freed. */
struct ABT_eventual_opaque {
    coexec_eventual_t ev;
};
_Static_assert(sizeof(struct ABT_eventual_opaque) <= sizeof(ABT_eventual_memory),
               "an eventual fits in ABT_eventual_memory");

static const coexec_eventual_t ev_static = COEXEC_EVENTUAL_INITIALIZER;

static coexec_eventual_t *ev_of(ABT_eventual e)
{
    /* A static eventual joins the live set as it is first used, so that
     * ABT_eventual_free knows it (and refuses a freed dynamic one). */
    bool fresh = false;
    void *ev = lazy_init_ex(&e->ev, tag_of(&ev_static), 0, &fresh);
    if (fresh)
        (void)abtx_live_add(e, ABTX_L_EVENTUAL_STATIC);
    return ev;
}

int ABT_eventual_create(int nbytes, ABT_eventual *neweventual)
{
    if (!neweventual || nbytes < 0)
        return ABT_ERR_INV_ARG;
    ABT_eventual e = abtx_live_new(calloc(1, sizeof(ABT_eventual_memory)),
                                   ABTX_L_EVENTUAL);
    if (!e)
        return ABT_ERR_MEM;
    if (coexec_eventual_init(&e->ev, (size_t)nbytes)) {
        abtx_live_free(&e, ABTX_L_EVENTUAL);
        return ABT_ERR_MEM;
    }
    *neweventual = e;
    return ABT_SUCCESS;
}

int ABT_eventual_free(ABT_eventual *eventual)
{
    if (!eventual || !*eventual)
        return ABT_ERR_INV_EVENTUAL;
    /* One of ABT_eventual_create, once; or static memory
     * (ABT_EVENTUAL_INITIALIZER) that was used, which is only destroyed. */
    enum abtx_live_kind kind = ABTX_L_EVENTUAL;
    bool dynamic = abtx_live_remove(*eventual, kind);
    if (!dynamic && !abtx_live_remove(*eventual, kind = ABTX_L_EVENTUAL_STATIC))
        return ABT_ERR_INV_EVENTUAL;
    int rc = coexec_eventual_destroy(ev_of(*eventual));
    if (rc)
        (void)abtx_live_add(*eventual, kind);
    if (rc == COEXEC_EBUSY)
        return ABT_ERR_EVENTUAL;
    if (rc)
        return ABT_ERR_INV_EVENTUAL;
    if (dynamic)
        free(*eventual);
    *eventual = ABT_EVENTUAL_NULL;
    return ABT_SUCCESS;
}

static int eventual_error(int rc)
{
    if (rc == COEXEC_ETIMEDOUT)
        return ABT_ERR_COND_TIMEDOUT;
    if (rc == COEXEC_ESTATE || rc == COEXEC_EBUSY)
        return ABT_ERR_EVENTUAL;
    if (rc == COEXEC_EINVAL)
        return ABT_ERR_INV_EVENTUAL;
    return abtx_err(rc, ABT_ERR_INV_EVENTUAL, ABT_ERR_EVENTUAL);
}

/* A user scheduler's run function waits by polling (coexec lets only ULTs
 * and external threads block; a tasklet's wait is refused before). */
static int eventual_poll(coexec_eventual_t *ev, void **value)
{
    int set = 0;
    int rc;
    while ((rc = coexec_eventual_test(ev, value, &set)) == COEXEC_OK &&
           !set)
        backoff();
    return rc;
}

int ABT_eventual_wait(ABT_eventual eventual, void **value)
{
    if (!eventual)
        return ABT_ERR_INV_EVENTUAL;
    if (abtx_in_tasklet())
        return ABT_ERR_EVENTUAL;
    coexec_eventual_t *ev = ev_of(eventual);
    void *v = NULL;
    int rc;
    ABTX_WAIT(rc, ABT_SYNC_EVENT_TYPE_EVENTUAL, eventual,
              coexec_eventual_wait(ev, &v));
    if (rc == COEXEC_ECONTEXT)
        rc = eventual_poll(ev, &v);
    if (value)
        *value = v;
    return eventual_error(rc);
}

int ABT_eventual_timedwait(ABT_eventual eventual, void **value,
                           const struct timespec *abstime)
{
    if (!eventual)
        return ABT_ERR_INV_EVENTUAL;
    if (!abstime)
        return ABT_ERR_INV_ARG;
    if (abtx_in_tasklet())
        return ABT_ERR_EVENTUAL;
    coexec_eventual_t *ev = ev_of(eventual);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t ns = (int64_t)(abstime->tv_sec - now.tv_sec) * 1000000000 +
                 (abstime->tv_nsec - now.tv_nsec);
    void *v = NULL;
    int rc;
    ABTX_WAIT(rc, ABT_SYNC_EVENT_TYPE_EVENTUAL, eventual,
              coexec_eventual_wait_timed(ev, ns > 0 ? (uint64_t)ns : 0,
                                         &v));
    if (value)
        *value = v;
    return eventual_error(rc);
}

int ABT_eventual_test(ABT_eventual eventual, void **value, int *is_ready)
{
    if (!eventual)
        return ABT_ERR_INV_EVENTUAL;
    coexec_eventual_t *ev = ev_of(eventual);
    void *v = NULL;
    int set = 0;
    int rc = coexec_eventual_test(ev, &v, &set);
    if (value)
        *value = v;
    if (is_ready)
        *is_ready = set ? ABT_TRUE : ABT_FALSE;
    return eventual_error(rc);
}

int ABT_eventual_set(ABT_eventual eventual, void *value, int nbytes)
{
    if (!eventual)
        return ABT_ERR_INV_EVENTUAL;
    coexec_eventual_t *ev = ev_of(eventual);
    if (nbytes < 0)
        return ABT_ERR_INV_EVENTUAL;
    return eventual_error(
        coexec_eventual_set(ev, nbytes ? value : NULL, (size_t)nbytes));
}

int ABT_eventual_reset(ABT_eventual eventual)
{
    if (!eventual)
        return ABT_ERR_INV_EVENTUAL;
    coexec_eventual_t *ev = ev_of(eventual);
    return eventual_error(coexec_eventual_reset(ev));
}

/* ---- future ----------------------------------------------------------------------- */

struct ABT_future_opaque {
    coexec_future_t f;
    void (*cb)(void **arg);
    /* Created with no compartment: ready from the start and after every
     * reset, its callback never called (Argobots). Its coexec future has
     * one compartment, set (with no callback) whenever it is reset. */
    bool empty;
};

static void future_cb(void **values, size_t n, void *arg)
{
    (void)n;
    ABT_future f = arg;
    f->cb(values);
}

int ABT_future_create(uint32_t compartments, void (*cb_func)(void **arg),
                      ABT_future *newfuture)
{
    if (!newfuture)
        return ABT_ERR_INV_ARG;
    ABT_future f = abtx_live_new(malloc(sizeof(*f)), ABTX_L_FUTURE);
    if (!f)
        return ABT_ERR_MEM;
    f->cb = cb_func;
    f->empty = compartments == 0;
    int rc = f->empty ? coexec_future_init(&f->f, 1, NULL, NULL)
                      : coexec_future_init(&f->f, compartments,
                                           cb_func ? future_cb : NULL, f);
    if (!rc && f->empty && (rc = coexec_future_set(&f->f, NULL)) != 0)
        ABTX_IGNORE(coexec_future_destroy(&f->f));
    if (rc) {
        abtx_live_free(&f, ABTX_L_FUTURE);
        return abtx_err(rc, ABT_ERR_INV_FUTURE, ABT_ERR_FUTURE);
    }
    *newfuture = f;
    return ABT_SUCCESS;
}

/* As in Argobots, whose free and reset wait on the future's lock while
 * the set that completed it runs the callback, they wait for the callback
 * to return (abtx_wait_turn). */
int ABT_future_free(ABT_future *future)
{
    if (!future || !abtx_live_remove(*future, ABTX_L_FUTURE))
        return ABT_ERR_INV_FUTURE;
    int rc;
    while ((rc = coexec_future_destroy(&(*future)->f)) == COEXEC_EAGAIN)
        abtx_wait_turn(); /* the callback still runs */
    if (rc == COEXEC_EBUSY) {
        (void)abtx_live_add(*future, ABTX_L_FUTURE);
        return ABT_ERR_FUTURE;
    }
    free(*future);
    *future = ABT_FUTURE_NULL;
    return ABT_SUCCESS;
}

static int future_error(int rc)
{
    if (rc == COEXEC_ESTATE || rc == COEXEC_ERANGE || rc == COEXEC_EBUSY)
        return ABT_ERR_FUTURE;
    return abtx_err(rc, ABT_ERR_INV_FUTURE, ABT_ERR_FUTURE);
}

int ABT_future_wait(ABT_future future)
{
    if (!future)
        return ABT_ERR_INV_FUTURE;
    if (abtx_in_tasklet())
        return ABT_ERR_FUTURE;
    int rc;
    ABTX_WAIT(rc, ABT_SYNC_EVENT_TYPE_FUTURE, future,
              coexec_future_wait(&future->f));
    if (rc == COEXEC_ECONTEXT) {
        int ready = 0;
        while ((rc = coexec_future_test(&future->f, &ready)) == COEXEC_OK &&
               !ready)
            backoff();
    }
    return future_error(rc);
}

int ABT_future_test(ABT_future future, ABT_bool *flag)
{
    if (!future)
        return ABT_ERR_INV_FUTURE;
    int ready = 0;
    int rc = coexec_future_test(&future->f, &ready);
    if (flag)
        *flag = ready ? ABT_TRUE : ABT_FALSE;
    return future_error(rc);
}

int ABT_future_set(ABT_future future, void *value)
{
    if (!future)
        return ABT_ERR_INV_FUTURE;
    return future_error(coexec_future_set(&future->f, value));
}

int ABT_future_reset(ABT_future future)
{
    if (!future)
        return ABT_ERR_INV_FUTURE;
    int rc;
    while ((rc = coexec_future_reset(&future->f)) == COEXEC_EAGAIN)
        abtx_wait_turn(); /* the callback still runs */
    if (!rc && future->empty)
        rc = coexec_future_set(&future->f, NULL); /* ready again */
    return future_error(rc);
}
