/*
 * src/pool/pool.c: pools: the public API, the access-mode checks, and the
 * shared-pool operations (locking, stealing, waking parked schedulers).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "base/global.h"
#include "pool/pool.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

/* Every pool record ever made in this epoch (for finalize), and the
 * recycled ones. Both under coexec__g.lock. */
struct coexec__steal_registry coexec__steal;

static struct coexec_pool_rec *pool_all;
static struct coexec_pool_rec *pool_free;
/* Default pools of streams that were freed. Parked units may still name one
 * as their home, so such a record is only ever reused as another default
 * pool (MPMC LIFO, where a late push is at home). */
static struct coexec_pool_rec *pool_retired;

/* Makes p's impl for its kind (PRIO, DEQUE); plain lists need none. */
static int impl_init(struct coexec_pool_rec *p, int kind,
                     const coexec_pool_config_t *cfg)
{
    switch (kind) {
    case COEXEC_POOL_PRIO:
        return coexec__prio_init(p, cfg ? cfg->levels : 8,
                                 cfg ? cfg->aging : 64);
    case COEXEC_POOL_DEQUE:
        return coexec__deque_init(p, cfg && cfg->steal_half);
    default:
        return COEXEC_OK;
    }
}

static void impl_fini(struct coexec_pool_rec *p)
{
    if (p->impl) {
        p->impl->fini(p);
        p->impl = NULL;
        p->istate = NULL;
    }
}

/* pool_new's hold of a record: its lock itself, with the bias of its last
 * life revoked (even the caller's own, which it is not using), so that a
 * thread looking at the record meanwhile (a thief) waits for the reset
 * and sees the new bias. (A biased hold would not do: a thread seeing the
 * new bias off would take the lock while the owner's hold goes on.) */
static void pool_lock_hard(struct coexec_pool_rec *p)
{
    spin_lock(&p->lock);
    coexec__pool_bias_settle(p, NULL);
}

static struct coexec_pool_rec *pool_new(int kind, int access, bool dflt,
                                        const coexec_pool_config_t *cfg)
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
        atom_fence_rel(); /* before any write: see HANDLE_STILL */
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
    /* A retired default pool keeps its impl state (thieves may still be
     * inside it) and is reused only as a default pool, of the same kind. */
    if (!p->impl) {
        int rc = impl_init(p, kind, cfg);
        if (rc) {
            p->free_next = pool_free;
            pool_free = p;
            pthread_mutex_unlock(&coexec__g.lock);
            return NULL;
        }
    }
    /* Thieves may still look at a recycled record: they read `stealable`
     * and the list only under the lock, so reset them under it. */
    pool_lock_hard(p);
    RLX_SET(p->kind, kind); /* coexec_pool_get_info may be reading */
    RLX_SET(p->access, access);
    p->shared = access != COEXEC_ACCESS_PRIV;
    p->stealable = 0;
    p->head = p->tail = NULL;
    if (!p->impl)
        atom_store_rlx_u64(&p->size, 0);
    atom_store_rlx_u64(&p->nbound, 0);
    p->sleepers = NULL;
    p->thief_mark.linked = false;
    atom_store_rlx_u32(&p->has_sleepers, 0);
    atom_store_rlx_ptr(&p->forward, NULL);
    /* No grant to anyone yet, or none ever. */
    atom_store_rlx_ptr(&p->bias, p->shared && !p->impl && coexec__g.pool_bias
                                     ? NULL
                                     : POOL_BIAS_OFF);
    spin_unlock(&p->lock);
    atom_store_rlx_u32(&p->nscheds, 0);
    atom_store_rlx_u32(&p->nrun, 0);
    atom_store_rlx_u32(&p->home_cpu, 0);
    p->user_created = 0;
    p->live = 1;
    atom_store_rlx_ptr(&p->producer, NULL);
    atom_store_rlx_ptr(&p->consumer, NULL);
    pool_owner_set(p, NULL, NULL);
    atom_store_rlx_u32(&p->senders, 0);
    p->free_next = NULL;
    atom_store_rel_u64(&p->gen, gen);
    pthread_mutex_unlock(&coexec__g.lock);
    return p;
}

/* ---- owner bias (pool.h) ------------------------------------------------ */

#if defined(__linux__) && defined(SYS_membarrier)
static long membarrier_cmd(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0);
}
#define BIAS_CMDS (MEMBARRIER_CMD_PRIVATE_EXPEDITED | MEMBARRIER_CMD_GLOBAL)
#endif

void coexec__pool_bias_setup(void)
{
    coexec__g.pool_bias = false;
    const char *v = getenv("COEXEC_POOL_BIAS");
    if (v && v[0] == '0' && v[1] == '\0')
        return;
#if defined(__linux__) && defined(SYS_membarrier)
    /* Registering again (a forked child's init) is harmless. */
    long cmds = membarrier_cmd(MEMBARRIER_CMD_QUERY);
    coexec__g.pool_bias =
        cmds >= 0 && (cmds & BIAS_CMDS) == BIAS_CMDS &&
        membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
#endif
}

/* A memory barrier on every running thread of the process: the side of
 * the bias's Dekker pair that its owner leaves out. Only called once
 * coexec__pool_bias_setup found both commands (a bias is never granted
 * otherwise): the process-wide one if the expedited one is refused. */
static void bias_barrier(void)
{
#if defined(__linux__) && defined(SYS_membarrier)
    if (membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return;
    (void)membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
    if (membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return;
    (void)membarrier_cmd(MEMBARRIER_CMD_GLOBAL);
#endif
}

void coexec__pool_bias_settle(struct coexec_pool_rec *p,
                              struct coexec_xstream_rec *xs)
{
    void *b = atom_load_rlx_ptr(&p->bias);
    if (b == POOL_BIAS_OFF || b == (void *)xs)
        return;
    if (!b) {
        /* The first stream to hold it: granted (an external thread gets
         * nothing and leaves it grantable). */
        if (xs)
            atom_store_rlx_ptr(&p->bias, xs);
        return;
    }
    /* Another stream's: off for good. After the barrier, the owner either
     * sees it off at its next hold, or is inside a hold we wait out. */
    atom_store_rlx_ptr(&p->bias, POOL_BIAS_OFF);
    bias_barrier();
    for (unsigned spins = 0; atom_load_acq_u32(&p->bias_in) != 0; spins++) {
        if (spins < 64)
            cpu_relax();
        else
            sched_yield(); /* a preempted owner */
    }
}

struct coexec_pool_rec *coexec__pool_new(int kind, int access)
{
    return pool_new(kind, access, false, NULL);
}

struct coexec_pool_rec *coexec__pool_new_default(void)
{
    if (coexec__g.cfg.sched_kind == COEXEC_SCHED_RANDWS)
        return pool_new(COEXEC_POOL_DEQUE, COEXEC_ACCESS_MPMC, true, NULL);
    return pool_new(COEXEC_POOL_LIFO, COEXEC_ACCESS_MPMC, true, NULL);
}

/* Units taken out of p (the whole queue), linked through next. */
static struct coexec_unit_rec *pool_take_all(struct coexec_pool_rec *p)
{
    if (p->impl)
        return p->impl->drain(p);
    enum pool_hold hold = pool_lock(p);
    struct coexec_unit_rec *u = p->head;
    for (struct coexec_unit_rec *v = u; v; v = v->next)
        unit_inpool_set(v, 0);
    p->head = p->tail = NULL;
    atom_store_rlx_u64(&p->size, 0);
    atom_store_rlx_u64(&p->nbound, 0);
    pool_unlock(p, hold);
    return u;
}

/* Pushes a chain made by pool_take_from_all into `to`. */
static void push_chain(struct coexec_unit_rec *u, struct coexec_pool_rec *to)
{
    while (u) {
        struct coexec_unit_rec *n = u->next;
        coexec__pool_push(to, u, PUSH_NEW);
        u = n;
    }
}

void coexec__pool_forward(struct coexec_pool_rec *p, struct coexec_pool_rec *to)
{
    enum pool_hold hold = pool_lock(p);
    /* seq_cst: an impl pusher re-checks forward after its push (below). */
    atom_store_sc_ptr(&p->forward, to);
    pool_unlock(p, hold);
    /* Units still queued (woken after the stream stopped) move on. */
    push_chain(pool_take_all(p), to);
}

/*
 * Servers and forwards. A pool whose last server stops is forwarded to the
 * stopping stream's new first pool, and a pool that gets a server again is
 * forwarded no more. The count of servers (nrun) and the forward change
 * together under the pool's lock, so a pool with a server is never left
 * forwarded: otherwise a stream starting to serve p while another stops
 * serving it could leave p forwarded to q, and q, losing its own last
 * server later, forwarded to p, and a push would follow p -> q -> p for
 * ever. With both under the lock, the target of a forward has a server
 * (the stream that forwards has just started serving it), so it is not
 * forwarded itself, and forwards never make a cycle.
 */
void coexec__pool_run_begin(struct coexec_pool_rec *p)
{
    enum pool_hold hold = pool_lock(p);
    atom_fadd_ar_u32(&p->nrun, 1);
    if (atom_load_rlx_ptr(&p->forward) != NULL)
        atom_store_sc_ptr(&p->forward, NULL);
    pool_unlock(p, hold);
}

bool coexec__pool_run_end(struct coexec_pool_rec *p, struct coexec_pool_rec *to)
{
    enum pool_hold hold = pool_lock(p);
    bool last = atom_fsub_ar_u32(&p->nrun, 1) == 1;
    bool fwd = last && to && p != to;
    /* seq_cst: an impl pusher re-checks forward after its push
     * (coexec__pool_push_slow). */
    if (fwd)
        atom_store_sc_ptr(&p->forward, to);
    pool_unlock(p, hold);
    /* Units still queued (woken after the last server stopped) move on. */
    if (fwd)
        push_chain(pool_take_all(p), to);
    return last;
}

void coexec__pool_push_slow(struct coexec_pool_rec *p,
                            struct coexec_unit_rec *u, int how)
{
    struct coexec_pool_rec *to;
    /* Follow retired pools to the live one (bounded: forwards never loop). */
    while ((to = atom_load_acq_ptr(&p->forward)) != NULL)
        p = to;
    if (!p->impl) {
        coexec__pool_push(p, u, how);
        return;
    }
    atom_store_rlx_ptr(&u->pool, p);
    if (p->impl->push(p, u, how))
        return;
    /* A retire that raced with this push may have drained p before u got
     * in: whoever sees the forward after the push moves what is left. */
    atom_fence_sc();
    if (UNLIKELY((to = atom_load_rlx_ptr(&p->forward)) != NULL))
        push_chain(pool_take_all(p), to);
}

void coexec__pool_senders_wait(struct coexec_pool_rec *p)
{
    /* A sender's window is a few stores and a kick: it never blocks. */
    while (atom_load_sc_u32(&p->senders) != 0)
        sched_yield();
}

void coexec__pool_set_stealable(struct coexec_pool_rec *p, int on)
{
    enum pool_hold hold = pool_lock(p);
    p->stealable = (uint8_t)on;
    pool_unlock(p, hold);
}

void coexec__pool_retire(struct coexec_pool_rec *p, struct coexec_pool_rec *to)
{
    coexec__pool_set_stealable(p, 0);
    coexec__pool_forward(p, to);
    pthread_mutex_lock(&coexec__g.lock);
    atom_store_rel_u64(&p->gen, gen_next(atom_load_rlx_u64(&p->gen)));
    p->live = 0;
    p->free_next = pool_retired;
    pool_retired = p;
    pthread_mutex_unlock(&coexec__g.lock);
}

void coexec__pool_release(struct coexec_pool_rec *p)
{
    coexec__pool_set_stealable(p, 0);
    /* Outside the runtime's lock: a user pool's free may call the API
     * (free the pools it wraps, for instance). */
    impl_fini(p);
    pthread_mutex_lock(&coexec__g.lock);
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
    pool_all = pool_free = pool_retired = NULL;
    pthread_mutex_unlock(&coexec__g.lock);
    /* User pools' free ops run outside the lock (see coexec__pool_release). */
    for (struct coexec_pool_rec *q = p; q; q = q->all_next)
        impl_fini(q);
    pthread_mutex_lock(&coexec__g.lock);
    while (p) {
        struct coexec_pool_rec *n = p->all_next;
        free(p);
        p = n;
    }
    pool_all = pool_free = pool_retired = NULL;
    pthread_mutex_unlock(&coexec__g.lock);
}

/* The parked thieves (see "parked thieves" below). */
/* fork, in the child (core/process.c): the parent's records stay
 * allocated (leaked), the lists forget them. */
void coexec__pool_atfork_child(void)
{
    pool_all = pool_free = pool_retired = NULL;
    coexec__thieves_atfork_child();
}

/* A list pool's steal: from the end the owner reaches last, skipping units
 * a thief may not take. */
static struct coexec_unit_rec *list_steal(struct coexec_pool_rec *p,
                                          struct coexec_xstream_rec *xs)
{
    bool tail = p->kind == COEXEC_POOL_LIFO;
    struct coexec_unit_rec *u = tail ? p->tail : p->head;
    while (u && !pool_may_steal(u, xs))
        u = tail ? u->prev : u->next;
    if (u)
        list_unlink(p, u);
    return u;
}

struct coexec_unit_rec *coexec__pool_steal(struct coexec_pool_rec *p,
                                           struct coexec_xstream_rec *xs,
                                           struct coexec_pool_rec *into,
                                           bool registered)
{
    if (pool_size(p) == 0)
        return NULL;
    /* Default impl pools keep their state when retired: see pool_new. */
    if (p->impl)
        return p->impl->steal ? p->impl->steal(p, xs, into) : NULL;
    /* A private pool is its owner's alone. A registered victim is read
     * under its lock only: the record may have been recycled since it was
     * read from the registry, and then it is no longer stealable. */
    if (!registered && !p->shared)
        return NULL;
    /* Only units bound to a stream queued (a stream's posted tasklets):
     * nothing to take, and no lock held over a walk through them. */
    if (pool_size(p) <= atom_load_rlx_u64(&p->nbound))
        return NULL;
    enum pool_hold hold = pool_lock(p);
    struct coexec_unit_rec *u =
        !registered || p->stealable ? list_steal(p, xs) : NULL;
    pool_unlock(p, hold);
    return u;
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

void coexec__pool_bind_owner(struct coexec_pool_rec *p, bool bind)
{
#ifdef COEXEC_CHECKS
    void *me = bind ? coexec__thread_token() : NULL;
    switch (p->access) {
    case COEXEC_ACCESS_PRIV:
        atom_store_rel_ptr(&p->producer, me);
        /* fall through */
    case COEXEC_ACCESS_SPSC:
    case COEXEC_ACCESS_MPSC:
        atom_store_rel_ptr(&p->consumer, me);
        break;
    default:
        break;
    }
#else
    (void)p;
    (void)bind;
#endif
}

/* ---- public API -------------------------------------------------------- */

/* Wrapping: while a user pool's push runs, the unit it is given may be
 * pushed into an inner pool without losing its home (the user pool); while
 * its pop runs, units popped from inner pools keep that home too. */
static __thread struct coexec_unit_rec *wrap_push_unit;
static __thread struct coexec_pool_rec *wrap_pop_pool;

void coexec__pool_wrap_enter(struct coexec_unit_rec *pushing,
                             struct coexec_pool_rec *popping,
                             struct coexec_unit_rec **saved_u,
                             struct coexec_pool_rec **saved_p)
{
    *saved_u = wrap_push_unit;
    *saved_p = wrap_pop_pool;
    wrap_push_unit = pushing;
    wrap_pop_pool = popping;
}

void coexec__pool_wrap_leave(struct coexec_unit_rec *saved_u,
                             struct coexec_pool_rec *saved_p)
{
    wrap_push_unit = saved_u;
    wrap_pop_pool = saved_p;
}

static int pool_make(coexec_pool_kind_t kind, coexec_pool_access_t access,
                     const coexec_pool_config_t *cfg, coexec_pool_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    if ((unsigned)kind > COEXEC_POOL_DEQUE ||
        (unsigned)access > COEXEC_ACCESS_MPMC)
        return COEXEC_EINVAL;
    if (cfg && (cfg->size < sizeof *cfg || cfg->levels < 1 ||
                cfg->levels > 64))
        return COEXEC_EINVAL;
    if (kind == COEXEC_POOL_DEQUE)
        access = COEXEC_ACCESS_MPMC;
    struct coexec_pool_rec *p = pool_new(kind, access, false, cfg);
    if (!p)
        return COEXEC_ENOMEM;
    p->user_created = 1;
    out->p = p;
    out->gen = atom_load_rlx_u64(&p->gen);
    return COEXEC_OK;
}

COEXEC_API int coexec_pool_config_init(coexec_pool_config_t *cfg)
{
    if (!cfg)
        return COEXEC_EINVAL;
    cfg->size = sizeof *cfg;
    cfg->levels = 8;
    cfg->aging = 64;
    cfg->steal_half = 0;
    return COEXEC_OK;
}

COEXEC_API int coexec_pool_create(coexec_pool_kind_t kind,
                                  coexec_pool_access_t access,
                                  coexec_pool_t *out)
{
    return pool_make(kind, access, NULL, out);
}

COEXEC_API int coexec_pool_create_ex(coexec_pool_kind_t kind,
                                     coexec_pool_access_t access,
                                     const coexec_pool_config_t *cfg,
                                     coexec_pool_t *out)
{
    return pool_make(kind, access, cfg, out);
}

COEXEC_API int coexec_pool_create_user(const coexec_pool_ops_t *ops,
                                       coexec_pool_access_t access, void *arg,
                                       coexec_pool_t *out)
{
    if (!ops || !out)
        return COEXEC_EINVAL;
    RT_CHECK();
    if (ops->size < sizeof *ops || !ops->push || !ops->pop || !ops->get_size ||
        (unsigned)access > COEXEC_ACCESS_MPMC)
        return COEXEC_EINVAL;
    struct coexec_pool_rec *p = pool_new(COEXEC_POOL_FIFO, access, false, NULL);
    if (!p)
        return COEXEC_ENOMEM;
    coexec_pool_t h = {p, atom_load_rlx_u64(&p->gen)};
    int rc = coexec__user_pool_init(p, ops, h, arg);
    if (rc) {
        coexec__pool_release(p);
        return rc;
    }
    RLX_SET(p->kind, COEXEC_POOL_USER);
    p->user_created = 1;
    *out = h;
    return COEXEC_OK;
}

COEXEC_API int coexec_pool_get_data(coexec_pool_t pool, void **out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    void *v = coexec__user_pool_data(pool.p);
    if (!HANDLE_STILL(pool))
        return COEXEC_EHANDLE;
    *out = v;
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
    if (!p->user_created)
        return COEXEC_EPERM; /* a stream's default pool goes with the stream */
    /* Not while a unit calls it home, queued or not: a running unit yields
     * back into it and a parked one is woken into it, so a recycled record
     * would strand them in an unrelated pool. */
    if (pool_size(p) != 0 || atom_load_acq_u32(&p->nscheds) != 0 ||
        coexec__unit_homed_in(p))
        return COEXEC_EBUSY;
    /* Of racing frees of one handle exactly one goes on. */
    pthread_mutex_lock(&coexec__g.lock);
    bool mine = p->live && atom_load_rlx_u64(&p->gen) == pool->gen;
    if (mine)
        p->live = 0;
    pthread_mutex_unlock(&coexec__g.lock);
    if (!mine)
        return COEXEC_EHANDLE;
    coexec__pool_release(p);
    pool->p = NULL;
    pool->gen = 0;
    return COEXEC_OK;
}

/* Pushes u into inner list pool p for the user pool holding it: u keeps
 * its home (the user pool). */
static int push_keep_home(struct coexec_pool_rec *p, struct coexec_unit_rec *u)
{
    if (p->impl) {
        p->impl->push(p, u, PUSH_NEW);
        pool_wake_sleepers(p);
        return COEXEC_OK;
    }
    enum pool_hold lock;
    if (!pool_list_enter(p, coexec__xs_self(), &lock))
        return COEXEC_EACCESS; /* another stream's private pool now */
    list_push_head(p, u);
    if (p->sleepers)
        coexec__pool_wake_sleepers_for(p, u);
    pool_list_leave(p, lock);
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
    /* A main ULT a user scheduler popped may go back into a pool (only
     * its own stream takes it from there); anything else is its stream's. */
    if (u->kind == UNIT_MAIN &&
        (unit_pool(u) != NULL || unit_inpool(u) ||
         atom_load_acq_u32(&u->state) != COEXEC_UNIT_READY))
        return COEXEC_EPERM;
    bool wrapped = u == wrap_push_unit && unit_inpool(u) == INPOOL_USER;
    if (!wrapped && (unit_pool(u) != NULL || unit_inpool(u) ||
                     atom_load_acq_u32(&u->state) != COEXEC_UNIT_READY))
        return COEXEC_ESTATE;
    if ((rc = check_access(pool.p, true)))
        return rc;
    if (wrapped) {
        wrap_push_unit = NULL; /* once */
        return push_keep_home(pool.p, u);
    }
    /* The unit is held: of racing pushes, or a push racing a direct
     * switch to it (coexec_yield_to), a migration or its popper's join,
     * the one that gives it a home wins. */
    void *none = NULL;
    if (!atom_cas_ar_ptr(&u->pool, &none, pool.p))
        return COEXEC_ESTATE;
    unit_held_clear(u);
    coexec__pool_push(pool.p, u, PUSH_NEW);
    return COEXEC_OK;
}

static void set_out_unit(coexec_unit_t *out, struct coexec_unit_rec *u)
{
    out->p = u;
    out->gen = u ? atom_load_rlx_u64(&u->gen) : 0;
}

/* What pop and steal do to a unit they hand out: it belongs to no pool
 * until pushed again, unless a user pool is popping it from an inner pool
 * (then the user pool stays its home). */
static void handed_out(struct coexec_pool_rec *from, struct coexec_unit_rec *u)
{
    struct coexec_pool_rec *home = unit_pool(u);
    if (wrap_pop_pool && home == wrap_pop_pool && home != from)
        return;
    atom_store_rlx_ptr(&u->pool, NULL);
    struct coexec_xstream_rec *xs = coexec__xs_self();
    unit_held_set(u, !xs ? NULL : xs->cur ? (void *)xs->cur : (void *)xs);
}

/* coexec_pool_pop and coexec_pool_steal: one unit out of pool, or none. */
static int take_public(coexec_pool_t pool, coexec_unit_t *out, bool steal)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    if (!steal && (rc = check_access(pool.p, false)))
        return rc;
    struct coexec_xstream_rec *xs = coexec__xs_self();
    struct coexec_unit_rec *u;
    if (steal)
        u = coexec__pool_steal(pool.p, xs, NULL, false);
    else if (pool.p->kind == COEXEC_POOL_USER)
        u = pool.p->impl->pop(pool.p, xs); /* asked even when it looks empty */
    else
        u = coexec__pool_pop(pool.p, xs);
    if (u)
        handed_out(pool.p, u);
    set_out_unit(out, u);
    return COEXEC_OK;
}

COEXEC_API int coexec_pool_pop(coexec_pool_t pool, coexec_unit_t *out)
{
    return take_public(pool, out, false);
}

COEXEC_API int coexec_pool_steal(coexec_pool_t pool, coexec_unit_t *out)
{
    return take_public(pool, out, true);
}

COEXEC_API int coexec_pool_remove(coexec_pool_t pool, coexec_unit_t unit)
{
    RT_CHECK();
    int rc = CHECK_HANDLE(pool);
    if (rc || (rc = CHECK_HANDLE(unit)))
        return rc;
    struct coexec_pool_rec *p = pool.p;
    if (!coexec__user_pool_can_remove(p))
        return COEXEC_ENOSYS;
    if ((rc = check_access(p, false)))
        return rc;
    struct coexec_xstream_rec *xs = coexec__xs_self();
    /* A private pool's list is its owner's alone (no lock is taken). */
    if (pool_foreign(p, xs))
        return COEXEC_EACCESS;
    struct coexec_unit_rec *u = unit.p;
    if (!coexec__pool_remove_as(p, u, xs, true, unit.gen))
        return HANDLE_STILL(unit) ? COEXEC_ESTATE : COEXEC_EHANDLE;
    handed_out(p, u);
    return COEXEC_OK;
}

/* coexec_pool_foreach's visit: the caller's function, given a handle. */
struct foreach_ctx {
    void (*fn)(void *arg, coexec_unit_t unit);
    void *arg;
};

static void foreach_visit(void *ctx, struct coexec_unit_rec *u)
{
    struct foreach_ctx *c = ctx;
    coexec_unit_t h;
    set_out_unit(&h, u);
    c->fn(c->arg, h);
}

COEXEC_API int coexec_pool_foreach(coexec_pool_t pool,
                                   void (*fn)(void *arg, coexec_unit_t unit),
                                   void *arg)
{
    if (!fn)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    struct coexec_pool_rec *p = pool.p;
    if (p->impl && !p->impl->foreach)
        return COEXEC_ENOSYS;
    if (pool_foreign(p, coexec__xs_self()))
        return COEXEC_EACCESS;
    struct foreach_ctx c = {fn, arg};
    if (p->impl) {
        p->impl->foreach(p, foreach_visit, &c);
        return COEXEC_OK;
    }
    /* In the order pops take them: a FIFO from its tail. */
    bool fifo = p->kind == COEXEC_POOL_FIFO;
    enum pool_hold lock;
    if (!pool_list_enter(p, coexec__xs_self(), &lock))
        return COEXEC_EACCESS; /* another stream's private pool now */
    for (struct coexec_unit_rec *u = fifo ? p->tail : p->head; u;
         u = fifo ? u->prev : u->next)
        foreach_visit(&c, u);
    pool_list_leave(p, lock);
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
    size_t v = (size_t)pool_size(pool.p);
    if (!HANDLE_STILL(pool))
        return COEXEC_EHANDLE;
    *size = v;
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
    coexec_pool_kind_t k = (coexec_pool_kind_t)RLX_GET(pool.p->kind);
    coexec_pool_access_t a = (coexec_pool_access_t)RLX_GET(pool.p->access);
    if (!HANDLE_STILL(pool))
        return COEXEC_EHANDLE;
    if (kind)
        *kind = k;
    if (access)
        *access = a;
    return COEXEC_OK;
}
