/*
 * src/sched/sched.c: scheduler records, their activation on a stream,
 * stacking, and the public calls that make, query and free schedulers.
 * The room's other files: loop.c (the run loop, stacked levels,
 * replacement, the loop's steps for user schedulers), idle.c (parking),
 * steal.c (stealing), keeper.c (the timer keeper), loop.h (what they
 * share, and which unit a built-in scheduler takes next).
 *
 * Room plaque. A stream runs one scheduler level at a time. The level's
 * context is what xs->sched_sp (and sched_stack_lo/size, sched_fiber) name:
 * units leave to it. xs->sched is the main scheduler, xs->cur_sched the
 * innermost level running. A stacked scheduler is a ULT (UF_SCHED): when a
 * scheduler runs it, it saves the level below in its record (psp...pcur),
 * installs its own stack as the level's, runs units, and puts the level
 * below back before it yields or parks as a unit. It yields back every
 * event_freq units (its parent handles the stream's events) and parks as a
 * unit, registered as a sleeper on its pools, when they are all empty; a
 * push into any of them wakes it. It finishes when asked to
 * (coexec_sched_finish) or when its stream stops, once its pools are empty.
 *
 * Replacement: coexec_xstream_set_main_sched stores a request in
 * xs->sched_req; the stream honours it at its next event check (asked by
 * a ULT of that stream: that ULT parks on xs->sched_req_waiters, and the
 * switch wakes it into its pool, now under the new scheduler). Pools the
 * old scheduler served and no running scheduler serves any more forward
 * their units, and later pushes, to the new scheduler's first pool.
 */
#include <stdlib.h>
#include <string.h>

#include "base/global.h"
#include "pool/pool.h"
#include "sched/loop.h"
#include "sched/sched.h"
#include "thread/engine.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

/* The kinds: what each does, as data the loop reads (src/sched/loop.h). */
static const struct sched_kind {
    bool direct;     /* takes from its first pool in order: a yield may hand
                        the CPU to that pool's next unit */
    bool first_only; /* pops its first pool only; the others are victims */
    bool parks;      /* parks when idle */
    struct coexec_unit_rec *(*pick)(struct coexec_xstream_rec *xs,
                                    struct coexec_sched_rec *s);
    const char *name; /* for diagnostics (coexec_info_print) */
} sched_kinds[] = {
    [COEXEC_SCHED_BASIC] = {true, false, false, NULL, "basic"},
    [COEXEC_SCHED_BASIC_WAIT] = {true, false, true, NULL, "basic_wait"},
    [COEXEC_SCHED_PRIO] = {false, false, true, coexec__sched_prio_pick, "prio"},
    [COEXEC_SCHED_RANDWS] = {true, true, true, NULL, "randws"},
    [COEXEC_SCHED_USER] = {false, false, true, NULL, "user"},
};

static struct coexec_sched_rec *sched_all;
static struct coexec_sched_rec *sched_free_list;

struct coexec_sched_rec *coexec__sched_new(int kind,
                                           struct coexec_pool_rec **pools,
                                           int npools, unsigned event_freq,
                                           uint64_t idle_spin_ns, int steal)
{
    pthread_mutex_lock(&coexec__g.lock);
    struct coexec_sched_rec *s = sched_free_list;
    uint64_t gen;
    if (s) {
        sched_free_list = s->free_next;
        gen = gen_next(atom_load_rlx_u64(&s->gen));
        atom_fence_rel(); /* before any write: see HANDLE_STILL */
    } else {
        s = calloc(1, sizeof *s);
        if (!s) {
            pthread_mutex_unlock(&coexec__g.lock);
            return NULL;
        }
        s->all_next = sched_all;
        sched_all = s;
        gen = gen_first();
    }
    /* Queries may be reading (coexec_sched_get_pool, ..._num_pools). */
    RLX_SET(s->npools, npools);
    for (int i = 0; i < npools; i++) {
        RLX_SET(s->pools[i], pools[i]);
        atom_fadd_rlx_u32(&pools[i]->nscheds, 1);
    }
    const struct sched_kind *d = &sched_kinds[kind];
    /* A yield may hand the CPU straight to the next unit of this pool
     * (src/thread/run.c) when that is what the loop itself would pick: the
     * first pool, a list pool, a kind that takes from it in order. */
    s->direct_pool = npools > 0 && !pools[0]->impl && d->direct ? pools[0]
                                                                  : NULL;
    s->pick = d->pick;
    s->npop = d->first_only ? 1 : npools;
    s->dq_owned = 0;
    s->steal_empty = steal || d->first_only;
    s->steals = steal || (d->first_only && npools == 1);
    s->steal_registry = npools == 1 || !d->first_only;
    s->parks = d->parks;
    s->name = d->name;
    s->event_freq = event_freq;
    s->idle_spin_ns = idle_spin_ns;
    s->aging = 64;
    s->stack_size = 0;
    s->is_default = 0;
    s->user_created = 0;
    s->live = 1;
    s->has_ops = 0;
    memset(&s->ops, 0, sizeof s->ops);
    s->ustate = NULL;
    s->unit = NULL;
    s->parent_pool = NULL;
    memset(s->passed, 0, sizeof s->passed);
    atom_store_rlx_u32(&s->in_use, 0);
    atom_store_rlx_u32(&s->finish, 0);
    atom_store_rlx_u32(&s->idle, 0);
    atom_store_rel_u64(&s->gen, gen);
    pthread_mutex_unlock(&coexec__g.lock);
    return s;
}

void coexec__sched_release(struct coexec_sched_rec *s)
{
    if (s->has_ops && s->ops.free)
        s->ops.free(s->ustate);
    s->has_ops = 0;
    pthread_mutex_lock(&coexec__g.lock);
    for (int i = 0; i < s->npools; i++)
        atom_fsub_rlx_u32(&s->pools[i]->nscheds, 1);
    atom_store_rel_u64(&s->gen, gen_next(atom_load_rlx_u64(&s->gen)));
    s->free_next = sched_free_list;
    s->live = 0;
    sched_free_list = s;
    pthread_mutex_unlock(&coexec__g.lock);
}

int coexec__sched_count_user_live(void)
{
    int n = 0;
    pthread_mutex_lock(&coexec__g.lock);
    for (struct coexec_sched_rec *s = sched_all; s; s = s->all_next)
        n += s->live && s->user_created;
    pthread_mutex_unlock(&coexec__g.lock);
    return n;
}

void coexec__sched_free_all(void)
{
    /* User schedulers never freed: their state goes too (outside the lock,
     * as in coexec__sched_release). */
    for (struct coexec_sched_rec *t = sched_all; t; t = t->all_next)
        if (t->has_ops) {
            t->has_ops = 0;
            if (t->ops.free)
                t->ops.free(t->ustate);
        }
    pthread_mutex_lock(&coexec__g.lock);
    struct coexec_sched_rec *s = sched_all;
    while (s) {
        struct coexec_sched_rec *n = s->all_next;
        free(s);
        s = n;
    }
    sched_all = sched_free_list = NULL;
    pthread_mutex_unlock(&coexec__g.lock);
}

/* fork, in the child (core/process.c): the parent's records stay
 * allocated (leaked), the lists forget them. */
void coexec__sched_atfork_child(void)
{
    sched_all = sched_free_list = NULL;
}

/* ---- activation ------------------------------------------------------- */

void coexec__sched_activate(struct coexec_sched_rec *s,
                            struct coexec_xstream_rec *xs)
{
    /* RANDWS pops from its first pool only: the others are its victims,
     * owned by the streams that pop from them. */
    int owned = s->npop;
    for (int i = 0; i < s->npools; i++) {
        struct coexec_pool_rec *p = s->pools[i];
        coexec__pool_run_begin(p);
        if (!xs || i >= owned)
            continue;
        if (!p->shared) {
            /* Under the lock that everyone but the owner takes to use
             * the pool's list (pool_must_lock). */
            enum pool_hold hold = pool_lock(p);
            pool_owner_set(p, xs, &xs->mb);
            pool_unlock(p, hold);
        }
        coexec__pool_bind_owner(p, true);
        atom_store_rlx_u32(&p->home_cpu, (uint32_t)(xs->cpu + 1));
        if (p->impl && p->kind == COEXEC_POOL_DEQUE &&
            coexec__deque_set_owner(p, xs))
            s->dq_owned |= (uint64_t)1 << i;
    }
}

void coexec__sched_deactivate(struct coexec_sched_rec *s,
                              struct coexec_xstream_rec *xs,
                              struct coexec_pool_rec *to)
{
    int owned = s->npop;
    for (int i = 0; i < s->npools; i++) {
        struct coexec_pool_rec *p = s->pools[i];
        bool last = coexec__pool_run_end(p, to);
        if (last && xs && i < owned)
            coexec__pool_bind_owner(p, false); /* nobody runs it now */
        if (s->dq_owned & ((uint64_t)1 << i)) {
            s->dq_owned &= ~((uint64_t)1 << i);
            coexec__deque_drop_owner(p, xs);
        }
        if (xs && !p->shared && pool_owner(p) == xs)
            pool_owner_set(p, NULL, NULL);
    }
}

/* ---- stacking ------------------------------------------------------------ */

/* Tells the stacked schedulers that are units of s's pools to finish (s
 * is finishing, or its stream stopping), waking those parked idle. True if
 * it woke any: they will be back in s's pools. */
bool coexec__sched_finish_children(struct coexec_sched_rec *s)
{
    bool woke = false;
    pthread_mutex_lock(&coexec__g.lock);
    for (struct coexec_sched_rec *t = sched_all; t; t = t->all_next) {
        if (!t->live || !t->unit || !own_pool(s, t->parent_pool))
            continue;
        /* seq_cst: see stacked_idle. */
        atom_store_sc_u32(&t->finish, 1);
        if (atom_load_sc_u32(&t->idle)) {
            coexec__wake_unit(t->unit);
            woke = true;
        }
    }
    pthread_mutex_unlock(&coexec__g.lock);
    return woke;
}

/* ---- public API ----------------------------------------------------------- */

COEXEC_API int coexec_sched_config_init(coexec_sched_config_t *cfg)
{
    if (!cfg)
        return COEXEC_EINVAL;
    cfg->size = sizeof *cfg;
    cfg->event_freq = 0;
    cfg->idle_spin_us = -1;
    cfg->steal = 0;
    cfg->aging = 0;
    cfg->stack_size = 0;
    return COEXEC_OK;
}

#define STACKED_STACK (64 * 1024)

static int sched_make(int kind, const coexec_pool_t *pools, int num_pools,
                      const coexec_sched_config_t *cfg,
                      struct coexec_sched_rec **out)
{
    if (num_pools < 1 || num_pools > SCHED_MAX_POOLS)
        return COEXEC_EINVAL;
    if (cfg && cfg->size < offsetof(coexec_sched_config_t, aging))
        return COEXEC_EINVAL;
    struct coexec_pool_rec *ps[SCHED_MAX_POOLS];
    for (int i = 0; i < num_pools; i++) {
        int rc = CHECK_HANDLE(pools[i]);
        if (rc)
            return rc;
        ps[i] = pools[i].p;
    }
    unsigned ef = coexec__g.cfg.event_freq;
    uint64_t spin = coexec__g.idle_spin_ns;
    int steal = 0;
    unsigned aging = 64;
    size_t stack = STACKED_STACK;
    if (cfg) {
        if (cfg->event_freq)
            ef = cfg->event_freq;
        if (cfg->idle_spin_us >= 0)
            spin = (uint64_t)cfg->idle_spin_us * 1000;
        steal = cfg->steal ? 1 : 0;
        if (cfg->size >= sizeof *cfg) {
            if (cfg->aging == COEXEC_SCHED_AGING_NONE)
                aging = 0; /* strict priority */
            else if (cfg->aging)
                aging = cfg->aging;
            if (cfg->stack_size) {
                if (cfg->stack_size < 16 * 1024 ||
                    cfg->stack_size > ((size_t)1 << 30))
                    return COEXEC_EINVAL;
                stack = cfg->stack_size;
            }
        }
    }
    struct coexec_sched_rec *s = coexec__sched_new(kind, ps, num_pools, ef,
                                                   spin, steal);
    if (!s)
        return COEXEC_ENOMEM;
    s->aging = aging;
    s->stack_size = stack;
    s->user_created = 1;
    *out = s;
    return COEXEC_OK;
}

static void set_out_sched(coexec_sched_t *out, struct coexec_sched_rec *s)
{
    out->p = s;
    out->gen = atom_load_rlx_u64(&s->gen);
}

COEXEC_API int coexec_sched_create(coexec_sched_kind_t kind,
                                   const coexec_pool_t *pools, int num_pools,
                                   const coexec_sched_config_t *cfg,
                                   coexec_sched_t *out)
{
    if (!out || !pools)
        return COEXEC_EINVAL;
    RT_CHECK();
    if ((unsigned)kind > COEXEC_SCHED_RANDWS)
        return COEXEC_EINVAL;
    struct coexec_sched_rec *s;
    int rc = sched_make(kind, pools, num_pools, cfg, &s);
    if (rc)
        return rc;
    set_out_sched(out, s);
    return COEXEC_OK;
}

COEXEC_API int coexec_sched_create_user(const coexec_sched_ops_t *ops,
                                        const coexec_pool_t *pools,
                                        int num_pools,
                                        const coexec_sched_config_t *cfg,
                                        void *arg, coexec_sched_t *out)
{
    if (!ops || !pools || !out)
        return COEXEC_EINVAL;
    RT_CHECK();
    if (ops->size < sizeof *ops || !ops->run)
        return COEXEC_EINVAL;
    struct coexec_sched_rec *s;
    int rc = sched_make(COEXEC_SCHED_USER, pools, num_pools, cfg, &s);
    if (rc)
        return rc;
    s->ops = *ops;
    set_out_sched(out, s);
    if (ops->init) {
        rc = ops->init(*out, arg, &s->ustate);
        if (rc) {
            coexec__sched_release(s);
            out->p = NULL;
            out->gen = 0;
            return rc;
        }
    }
    s->has_ops = 1;
    return COEXEC_OK;
}

COEXEC_API int coexec_sched_get_data(coexec_sched_t sched, void **out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(sched);
    if (rc)
        return rc;
    void *v = sched.p->has_ops ? sched.p->ustate : NULL;
    if (!HANDLE_STILL(sched))
        return COEXEC_EHANDLE;
    *out = v;
    return COEXEC_OK;
}

COEXEC_API int coexec_sched_free(coexec_sched_t *sched)
{
    if (!sched)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(*sched);
    if (rc)
        return rc;
    if (sched->p->is_default)
        return COEXEC_EPERM; /* it goes with its stream, running or not */
    if (atom_load_acq_u32(&sched->p->in_use))
        return COEXEC_EBUSY;
    /* Of racing frees of one handle exactly one goes on. */
    struct coexec_sched_rec *s = sched->p;
    pthread_mutex_lock(&coexec__g.lock);
    bool mine = s->live && atom_load_rlx_u64(&s->gen) == sched->gen;
    if (mine)
        s->live = 0;
    pthread_mutex_unlock(&coexec__g.lock);
    if (!mine)
        return COEXEC_EHANDLE;
    coexec__sched_release(s);
    sched->p = NULL;
    sched->gen = 0;
    return COEXEC_OK;
}

COEXEC_API int coexec_sched_get_num_pools(coexec_sched_t sched, int *num)
{
    if (!num)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(sched);
    if (rc)
        return rc;
    int v = RLX_GET(sched.p->npools);
    if (!HANDLE_STILL(sched))
        return COEXEC_EHANDLE;
    *num = v;
    return COEXEC_OK;
}

COEXEC_API int coexec_sched_get_pool(coexec_sched_t sched, int idx,
                                     coexec_pool_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(sched);
    if (rc)
        return rc;
    int n = RLX_GET(sched.p->npools);
    struct coexec_pool_rec *p = idx >= 0 && idx < n
                                    ? RLX_GET(sched.p->pools[idx])
                                    : NULL;
    uint64_t gen = p ? atom_load_rlx_u64(&p->gen) : 0;
    if (!HANDLE_STILL(sched))
        return COEXEC_EHANDLE;
    if (!p)
        return COEXEC_EINVAL;
    out->p = p;
    out->gen = gen;
    return COEXEC_OK;
}

/* The stream whose loop of sched the caller is, or NULL (*rc says why). */
COEXEC_API int coexec_sched_finish(coexec_sched_t sched)
{
    RT_CHECK();
    int rc = CHECK_HANDLE(sched);
    if (rc)
        return rc;
    struct coexec_sched_rec *s = sched.p;
    /* A main or idle scheduler has nothing to finish: a flag left set
     * would end its next stacking at once. */
    if (atom_load_acq_u32(&s->in_use) != SCHED_STACKED)
        return COEXEC_ESTATE;
    /* seq_cst: see stacked_idle. */
    atom_store_sc_u32(&s->finish, 1);
    if (atom_load_sc_u32(&s->idle)) {
        pthread_mutex_lock(&coexec__g.lock);
        if (s->unit)
            coexec__wake_unit(s->unit);
        pthread_mutex_unlock(&coexec__g.lock);
    }
    return COEXEC_OK;
}

COEXEC_API int coexec_sched_self(coexec_sched_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    struct coexec_xstream_rec *xs = coexec__xs_self();
    if (!xs || !xs->cur_sched)
        return COEXEC_ECONTEXT;
    set_out_sched(out, xs->cur_sched);
    return COEXEC_OK;
}

COEXEC_API int coexec_unit_get_sched(coexec_unit_t unit, coexec_sched_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(unit);
    if (rc)
        return rc;
    bool is_sched = (RLX_GET(unit.p->flags) & UF_SCHED) != 0;
    void *s = RLX_GET(unit.p->arg);
    if (!HANDLE_STILL(unit))
        return COEXEC_EHANDLE;
    if (!is_sched)
        return COEXEC_ENOENT;
    set_out_sched(out, s);
    return COEXEC_OK;
}

/* Would putting s into pool p make a scheduler run inside itself? True if
 * p is a pool of s or of a scheduler stacked (transitively) inside s.
 * Under coexec__g.lock. */
static bool stack_cycle(struct coexec_sched_rec *s, struct coexec_pool_rec *p)
{
    if (own_pool(s, p))
        return true;
    for (struct coexec_sched_rec *t = sched_all; t; t = t->all_next)
        if (t != s && t->live && t->unit && own_pool(s, t->parent_pool) &&
            stack_cycle(t, p))
            return true;
    return false;
}

bool coexec__sched_reaches_locked(struct coexec_sched_rec *s,
                                  struct coexec_pool_rec *p)
{
    return stack_cycle(s, p);
}

bool coexec__sched_reaches(struct coexec_sched_rec *s, struct coexec_pool_rec *p)
{
    pthread_mutex_lock(&coexec__g.lock);
    bool r = stack_cycle(s, p);
    pthread_mutex_unlock(&coexec__g.lock);
    return r;
}

COEXEC_API int coexec_pool_add_sched(coexec_pool_t pool, coexec_sched_t sched)
{
    RT_CHECK();
    int rc = CHECK_HANDLE(pool);
    if (!rc)
        rc = CHECK_HANDLE(sched);
    if (rc)
        return rc;
    struct coexec_sched_rec *s = sched.p;
    if ((rc = coexec__pool_check_access(pool.p, true)))
        return rc;
    uint32_t exp = 0;
    if (!atom_cas_ar_u32(&s->in_use, &exp, SCHED_STACKED))
        return COEXEC_EBUSY;
    /* A finish asked of its previous stacking as it ended is not ours. */
    atom_store_rlx_u32(&s->finish, 0);
    pthread_mutex_lock(&coexec__g.lock);
    bool cycle = stack_cycle(s, pool.p);
    pthread_mutex_unlock(&coexec__g.lock);
    if (cycle) {
        atom_store_rel_u32(&s->in_use, 0);
        return COEXEC_EINVAL;
    }
    struct coexec_unit_rec *u;
    rc = coexec__sched_unit_new(s, s->stack_size, coexec__sched_stacked_main, &u);
    if (rc) {
        atom_store_rel_u32(&s->in_use, 0);
        return rc;
    }
    coexec__sched_activate(s, NULL);
    pthread_mutex_lock(&coexec__g.lock);
    s->unit = u;
    s->parent_pool = pool.p;
    pthread_mutex_unlock(&coexec__g.lock);
    coexec__pool_push(pool.p, u, PUSH_NEW);
    return COEXEC_OK;
}

/* A ULT of the stream waiting for its switch (on its own stack). state:
 * 0 waiting, 1 being woken, 2 woken (the waker is done with the record). */
struct sched_req_waiter {
    struct coexec_unit_rec *u;
    struct sched_req_waiter *next;
    atom_u32_t state;
};

void coexec__sched_req_wake(struct coexec_xstream_rec *xs)
{
    struct sched_req_waiter *w = atom_xchg_ar_ptr(&xs->sched_req_waiters, NULL);
    while (w) {
        struct sched_req_waiter *next = w->next;
        struct coexec_unit_rec *u = w->u;
        atom_store_rel_u32(&w->state, 1);
        coexec__wake_unit(u);
        atom_store_rel_u32(&w->state, 2);
        w = next;
    }
}

/* The calling ULT u of x parks until x has made its switch: it then runs
 * under the new scheduler, and was in no pool meanwhile (no other stream
 * could take it while its own was between schedulers). */
static void wait_for_switch(struct coexec_xstream_rec *x,
                            struct coexec_unit_rec *u)
{
    struct sched_req_waiter w = {u, NULL, ATOM_INIT(0)};
    void *head = atom_load_rlx_ptr(&x->sched_req_waiters);
    do
        w.next = head;
    while (!atom_cas_ar_ptr(&x->sched_req_waiters, &head, &w));
    x->events_due = 1; /* the loop looks at the request at once */
    xs_kick(x);
    unit_note_wait(u, "set_main_sched", x, 0);
    while (atom_load_acq_u32(&w.state) == 0)
        coexec__park_self(coexec__xs_self(), u);
    while (atom_load_acq_u32(&w.state) != 2)
        cpu_relax();
    coexec__wake_clear(u);
}

COEXEC_API int coexec_xstream_set_main_sched(coexec_xstream_t xs,
                                             coexec_sched_t sched)
{
    RT_CHECK();
    int rc = CHECK_HANDLE(xs);
    if (!rc)
        rc = CHECK_HANDLE(sched);
    if (rc)
        return rc;
    struct coexec_xstream_rec *x = xs.p;
    struct coexec_sched_rec *s = sched.p;
    if (x->joined || atom_load_acq_u32(&x->stop) || atom_load_acq_u32(&x->done))
        return COEXEC_ESTATE;
    if (atom_load_acq_ptr(&x->sched) == s)
        return COEXEC_OK;
    uint32_t exp = 0;
    if (!atom_cas_ar_u32(&s->in_use, &exp, SCHED_MAIN))
        return COEXEC_EBUSY;
    struct coexec_sched_rec *prev = atom_xchg_ar_ptr(&x->sched_req, s);
    if (prev)
        atom_store_rel_u32(&prev->in_use, 0); /* superseded before it ran */
    struct coexec_unit_rec *self = xs_self_entry() == x ? x->cur : NULL;
    if (self && self->kind != UNIT_TASKLET) {
        /* A ULT of the stream itself waits for the switch (a program that
         * sets its stream's scheduler, then forks and joins in place would
         * otherwise go on with the old one's pools unowned). */
        wait_for_switch(x, self);
        return COEXEC_OK;
    }
    if (self) {
        /* A tasklet of the stream: the loop looks at the request next. */
        x->events_due = 1;
        x->direct_yields = x->cur_sched ? x->cur_sched->event_freq : 0;
    }
    xs_kick(x);
    return COEXEC_OK;
}
