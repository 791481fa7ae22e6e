/*
 * src/thread/join.c: creating ULTs and tasklets, and joining and freeing
 * them: the join word's protocol (see the plaque of run.c), running a
 * queued unit in place, timed joins.
 */

#include "arch/clock.h"
#include "arch/futex.h"
#include "base/global.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/engine.h"
#include "thread/unit.h"
#include "waker/wait.h"
#include "xstream/xstream.h"

/* ---- join ---------------------------------------------------------------- */

/* When a ULT joiner runs a unit that has not started in place: always
 * (coexec_*_join, _free), only when the joiner's stream serves the unit's
 * pool, so it runs on a stream it would have run on anyway (_wait), or
 * never (the runtime's own waits that must not switch to it). */
enum join_run { JOIN_RUN_NEVER, JOIN_RUN_SERVED, JOIN_RUN_ANY };

static bool may_run_here(struct coexec_unit_rec *u, struct coexec_xstream_rec *xs)
{
    return pool_may_take(u, xs);
}

/* May ULT self's join on stream xs take u out of its list pool p to run
 * it (run: the kind of join)? Not from a private pool another stream
 * owns, and for the _wait calls only from a pool xs's scheduler pops. */
static ALWAYS_INLINE bool may_claim_from(struct coexec_pool_rec *p,
                                         struct coexec_xstream_rec *xs,
                                         enum join_run run)
{
    return !pool_foreign(p, xs) &&
           (run == JOIN_RUN_ANY ||
            (xs->cur_sched && sched_has_pool(xs->cur_sched, p)));
}

/* Polls tasklet u, claimed by ULT self of stream xs, once in place. */
static ALWAYS_INLINE coexec_poll_status_t
tasklet_run_here(struct coexec_xstream_rec *xs, struct coexec_unit_rec *self,
                 struct coexec_unit_rec *u)
{
    unit_arrive(xs, u);
    xs->cur = u;
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_RUNNING);
    coexec_poll_status_t r = tasklet_call(xs, u);
    xs->cur = self;
    return r;
}

/* Runs the not-started unit u (just removed from its pool, and our
 * registration w as its joiner in u->join) in place. */
static ALWAYS_INLINE void run_in_place(struct coexec_xstream_rec *xs, struct coexec_unit_rec *self,
                         struct coexec_unit_rec *u, struct join_waiter *w)
{
    if (u->kind == UNIT_TASKLET) {
        if (LIKELY(tasklet_run_here(xs, self, u) == COEXEC_READY)) {
            /* Its finisher is its joiner: JOIN_HANDED, nobody to wake. */
            wait_tasklet_leave(u);
            atom_store_rel_u32(&u->state, COEXEC_UNIT_TERMINATED);
            w->here = true;
            atom_store_rel_uptr(&u->join, JOIN_HANDED);
        } else {
            coexec__tasklet_pending(xs, u); /* we wait the ordinary way */
        }
        return;
    }
    if (UNLIKELY(!(u->rflags & RF_STARTED)) && UNLIKELY(!ult_prepare(xs, u))) {
        /* It ends here, unrun; as its in-place joiner we are told so
         * without a wake (unit_finish under RF_INPLACE). */
        u->rflags |= RF_INPLACE;
        coexec__unit_fail_nostack(xs, u);
        return;
    }
    u->rflags |= RF_INPLACE; /* its joiner: w->ult, through u->join */
    atom_store_rlx_u32(&self->state, COEXEC_UNIT_BLOCKED);
    leave_to(xs, self, u, POST_NONE, 0);
    atom_store_rlx_u32(&self->state, COEXEC_UNIT_RUNNING);
}

/* What a join reports of a finished unit: it ran, or it could not.
 * (Relaxed: the join of a stale copy reads it before its generation check
 * fails, while a revive may be clearing it.) */
static ALWAYS_INLINE int join_result(const struct coexec_unit_rec *u)
{
    return UNLIKELY(__atomic_load_n(&u->rflags, __ATOMIC_RELAXED) &
                    RF_NOSTACK)
               ? COEXEC_ENOMEM
               : COEXEC_OK;
}

/* The registered joiner of u, which finished (join word j), leaves: the
 * result is read first, JOIN_DONE is its last touch of u. A free keeps
 * JOIN_HANDED instead (w->held): while it stays, every other free is
 * EBUSY, so the free releases u with no atomic read-modify-write. */
static ALWAYS_INLINE int join_leave(struct coexec_unit_rec *u, uintptr_t j,
                                    struct join_waiter *w)
{
    int rc = join_result(u);
    if (j == JOIN_HANDED) {
        if (w->keep)
            w->held = true;
        else
            atom_store_rel_uptr(&u->join, JOIN_DONE);
    }
    return rc;
}

/* A ULT registered as u's joiner waits for the finish (JOIN_DONE when u
 * was run in place, else JOIN_HANDED, which it turns into JOIN_DONE as it
 * leaves). The finisher's wake may find us running (a wake recorded as
 * NOTIFIED, for instance because we ran u in place and were resumed
 * directly): consume such a leftover so a later park of ours does not
 * return early. */
/* How long a joiner watches a unit running elsewhere before parking: short
 * units finish within it, and parking plus the wake that ends it cost far
 * more than the watch. A unit that is not running (queued, parked) is not
 * watched: nothing will finish it within a spin. */
#define JOIN_SPIN 128

/* Parks joiner self until u finishes, saying so for coexec_info_print. */
static NOINLINE void park_joining(struct coexec_unit_rec *self,
                                  struct coexec_unit_rec *u)
{
    unit_note_wait(self, "join", NULL, u->id);
    coexec__park_self(coexec__xs_self(), self);
}

/* A timed joiner's timer: at the deadline it takes the registration back
 * (only while the join word still names the waiter: a finisher that got
 * there first completes the join) and wakes the joiner. */
struct join_timer {
    struct timer t;
    struct coexec_unit_rec *u;
    struct join_waiter *w;
    atom_u32_t fired;
};

static void join_timer_fire(struct timer *t, bool cancel)
{
    /* Finalize ends the timer early: the join goes on like an untimed one
     * (finalize wakes the unit it waits for). */
    if (cancel)
        return;
    struct join_timer *jt = container_of(t, struct join_timer, t);
    uintptr_t exp = (uintptr_t)jt->w;
    if (atom_cas_ar_uptr(&jt->u->join, &exp, 0)) {
        struct coexec_unit_rec *joiner = jt->w->ult;
        atom_store_rel_u32(&jt->fired, 1);
        coexec__wake_unit(joiner);
    }
}

static NOINLINE int join_wait_ult_timed(struct coexec_unit_rec *u,
                                        struct coexec_unit_rec *self,
                                        struct join_waiter *w,
                                        uint64_t deadline)
{
    struct join_timer jt;
    jt.t.deadline = deadline;
    jt.t.fire = join_timer_fire;
    jt.u = u;
    jt.w = w;
    atom_store_rlx_u32(&jt.fired, 0);
    if (coexec__timer_add(&coexec__xs_self()->timers, &jt.t) != COEXEC_OK) {
        uintptr_t exp = (uintptr_t)w;
        if (atom_cas_ar_uptr(&u->join, &exp, 0))
            return COEXEC_ENOMEM; /* no room for the timer; not joined */
        deadline = UINT64_MAX;    /* finishing already: wait for it */
    }
    uintptr_t j;
    bool timed_out = false;
    for (;;) {
        if (atom_load_acq_u32(&jt.fired)) {
            timed_out = true; /* our registration is gone: u is not ours */
            break;
        }
        j = atom_load_acq_uptr(&u->join);
        if (join_finished(j))
            break;
        if (j == JOIN_WAKING) {
            cpu_relax();
        } else {
            park_joining(self, u);
        }
    }
    /* Once cancel returns the timer is done with us (it fires under the
     * heap's lock); then drop a wake it or the finisher left. */
    if (deadline != UINT64_MAX)
        coexec__timer_cancel(&jt.t);
    coexec__wake_clear(self);
    return timed_out ? COEXEC_ETIMEDOUT : join_leave(u, j, w);
}

static int join_wait_ult(struct coexec_unit_rec *u, struct coexec_unit_rec *self,
                         struct join_waiter *w, uint64_t deadline)
{
    uintptr_t j;
    if (UNLIKELY(deadline != UINT64_MAX))
        return join_wait_ult_timed(u, self, w, deadline);
    for (int i = 0; i < JOIN_SPIN; i++) {
        j = atom_load_acq_uptr(&u->join);
        if (j <= JOIN_HANDED ||
            atom_load_rlx_u32(&u->state) != COEXEC_UNIT_RUNNING)
            break;
        cpu_relax();
    }
    for (;;) {
        j = atom_load_acq_uptr(&u->join);
        if (join_finished(j))
            break;
        if (j == JOIN_WAKING) {
            cpu_relax(); /* its wake reached us; the finish is imminent */
        } else {
            park_joining(self, u);
        }
    }
    coexec__wake_clear(self);
    return join_leave(u, j, w);
}

/* Does the descriptor still serve the handle's unit? (A stale handle's
 * unit was freed by someone else meanwhile.) */
static ALWAYS_INLINE bool gen_is(const struct coexec_unit_rec *u, uint64_t gen)
{
    return atom_load_acq_u64(&((struct coexec_unit_rec *)u)->gen) == gen;
}

/* A finished unit whose join word says j: what join (for_free false) or
 * free reports. JOIN_HANDED: its registered joiner has not left yet. */
static int join_done_result(const struct coexec_unit_rec *u, uint64_t gen,
                            uintptr_t j, bool for_free)
{
    if (!gen_is(u, gen))
        return COEXEC_EHANDLE;
    if (j == JOIN_HANDED && for_free)
        return COEXEC_EBUSY;
    return join_result(u);
}

/* An external thread registered as u's joiner waits, until deadline. */
static int join_wait_external(struct coexec_unit_rec *u, struct join_waiter *w,
                              uint64_t deadline)
{
    uintptr_t j;
    while (!join_finished(j = atom_load_acq_uptr(&u->join))) {
        if (deadline == UINT64_MAX) {
            coexec__futex_wait(&w->futex, 0, NULL);
            continue;
        }
        if (clock_now_ns() >= deadline) {
            uintptr_t exp = (uintptr_t)w;
            if (atom_cas_ar_uptr(&u->join, &exp, 0))
                return COEXEC_ETIMEDOUT;
            continue; /* its finisher is waking us */
        }
        struct timespec ts = clock_until(deadline);
        coexec__futex_wait(&w->futex, 0, &ts);
    }
    return join_leave(u, j, w);
}

/* Waits for u until deadline (UINT64_MAX: none); gen is the caller's
 * handle generation. for_free: the caller will release u if this returns
 * COEXEC_OK or COEXEC_ENOMEM, so it must be the only one left touching u.
 * run: when a ULT caller may run a u that has not started in place. */
static ALWAYS_INLINE int join_unit(struct coexec_unit_rec *u, uint64_t gen,
                                   bool for_free, uint64_t deadline,
                                   bool *held, enum join_run run)
{
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *self = xs ? xs->cur : NULL;
    if (xs && !self)
        return COEXEC_ECONTEXT; /* a scheduler loop cannot wait */
    if (self == u)
        return COEXEC_EDEADLK;
    if (self && self->kind == UNIT_TASKLET)
        return COEXEC_ECONTEXT;
    if (u->flags & UF_DETACHED)
        return COEXEC_EINVAL;
    /* Acquire: pairs with the finisher's release of JOIN_DONE. */
    uintptr_t j = atom_load_acq_uptr(&u->join);
    if (LIKELY(j == JOIN_DONE) || j == JOIN_HANDED)
        return join_done_result(u, gen, j, for_free);

    /* Registered first, claimed second: of racing joiners only the one
     * whose CAS wins may take the unit out of its pool to run it. */
    struct join_waiter w = {self, ATOM_INIT(0), for_free, false, false};
    uintptr_t exp = 0;
    if (!atom_cas_ar_uptr(&u->join, &exp, (uintptr_t)&w)) {
        if (exp == JOIN_WAKING) {
            /* Its finisher is a few instructions from done. */
            while ((exp = atom_load_acq_uptr(&u->join)) == JOIN_WAKING)
                cpu_relax();
        }
        if (join_finished(exp))
            return join_done_result(u, gen, exp, for_free);
        /* Somebody else is joining it (or it serves another unit now). */
        return gen_is(u, gen) ? COEXEC_EBUSY : COEXEC_EHANDLE;
    }
    bool stale = false;
    if (UNLIKELY(!gen_is(u, gen))) {
        /* We registered on the descriptor's next unit: take it back. */
        exp = (uintptr_t)&w;
        if (atom_cas_ar_uptr(&u->join, &exp, 0))
            return COEXEC_EHANDLE;
        /* It finished meanwhile and its finisher is waking us: let it. */
        stale = true;
    }
    if (self && !stale && run != JOIN_RUN_NEVER) {
        /* Still queued: run it in place. Acquire: pairs with a thief's
         * release of u's new home. */
        struct coexec_pool_rec *p = atom_load_acq_ptr(&u->pool);
        bool claimed = false;
        if (atom_load_acq_u32(&u->state) == COEXEC_UNIT_READY &&
            may_run_here(u, xs)) {
            if (p) {
                claimed = may_claim_from(p, xs, run) &&
                          coexec__pool_remove_as(p, u, xs, false, 0);
            } else if (unit_held_by(u, self) && !unit_inpool(u) &&
                       !(u->rflags & RF_STARTED)) {
                /* We popped it out of its pool: ours to run. Anyone else
                 * waits for its popper to run or push it (so rflags is
                 * read only once it is known to be ours: another stream
                 * may be running a unit it popped). The home is
                 * claimed as coexec_pool_push and coexec_sched_run_unit
                 * claim it, in case another claimer races us. */
                void *none = NULL;
                claimed = atom_cas_ar_ptr(&u->pool, &none,
                                          xs->cur_sched->pools[0]);
                if (claimed)
                    unit_held_clear(u);
            }
        }
        if (claimed) {
            run_in_place(xs, self, u, &w);
            if (LIKELY(w.here)) {
                /* It finished here: JOIN_HANDED, and nothing to wait for
                 * or to clear. */
                int rc = join_leave(u, JOIN_HANDED, &w);
                *held = w.held;
                return rc;
            }
        }
    }
    if (stale)
        deadline = UINT64_MAX; /* only waiting out a finisher */
    int rc = self ? join_wait_ult(u, self, &w, deadline)
                  : join_wait_external(u, &w, deadline);
    if (!stale) {
        *held = w.held;
        return rc;
    }
    if (w.held) /* not ours: its own free must find it done */
        atom_store_rel_uptr(&u->join, JOIN_DONE);
    return COEXEC_EHANDLE;
}

/* ---- public ULT and tasklet calls ------------------------------------- */


/* Queues the new unit u in p. Its handle is written to the caller's out
 * before this, so the unit may read it as soon as it runs. */
static ALWAYS_INLINE void queue_new(struct coexec_pool_rec *p,
                                    struct coexec_unit_rec *u)
{
    /* A public call's prologue: no switch since entry, the inline
     * thread-local read is the calling stream. */
    TOOL_EVENT(COEXEC_TOOL_UNIT_CREATE, xs_self_entry(), u, NULL);
    coexec__pool_push_as(p, u, PUSH_NEW, xs_self_entry());
}

static int pool_of_xstream(coexec_xstream_t xs, struct coexec_pool_rec **p)
{
    int rc = CHECK_HANDLE(xs);
    if (rc)
        return rc;
    struct coexec_sched_rec *s = atom_load_acq_ptr(&xs.p->sched);
    if (!s || s->npools < 1)
        return COEXEC_ESTATE;
    *p = s->pools[0];
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_attr_init(coexec_thread_attr_t *attr)
{
    if (!attr)
        return COEXEC_EINVAL;
    attr->size = sizeof *attr;
    attr->stack_size = 0;
    attr->stack = NULL;
    attr->priority = 0;
    attr->pinned = 0;
    attr->name = NULL;
    attr->data_init = NULL;
    attr->data_ctx = NULL;
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_create(coexec_pool_t pool, coexec_thread_fn_t fn,
                                    void *arg, const coexec_thread_attr_t *attr,
                                    coexec_thread_t *out)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    struct coexec_unit_rec *u;
    rc = make_unit(pool.p, UNIT_ULT, (void *)fn, arg, attr, out == NULL, &u);
    if (rc)
        return rc;
    SET_OUT(out, u);
    queue_new(pool.p, u);
    return COEXEC_OK;
}

/* The _on calls: stream xs's first pool, for a unit of function fn. */
static int pool_on(coexec_xstream_t xs, void *fn, struct coexec_pool_rec **p)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    return pool_of_xstream(xs, p);
}

COEXEC_API int coexec_thread_create_on(coexec_xstream_t xs,
                                       coexec_thread_fn_t fn, void *arg,
                                       const coexec_thread_attr_t *attr,
                                       coexec_thread_t *out)
{
    struct coexec_pool_rec *p;
    struct coexec_unit_rec *u;
    int rc = pool_on(xs, (void *)fn, &p);
    if (!rc)
        rc = make_unit(p, UNIT_ULT, (void *)fn, arg, attr, out == NULL, &u);
    if (rc)
        return rc;
    SET_OUT(out, u);
    queue_new(p, u);
    return COEXEC_OK;
}

static NOINLINE int tasklet_create_slow(coexec_pool_t pool,
                                        coexec_tasklet_fn_t fn, void *arg,
                                        coexec_data_init_fn init, void *ctx,
                                        coexec_tasklet_t *out, bool detached);

/*
 * coexec_tasklet_create's common case, with every test of the general way
 * made up front and nothing done unless all pass: a live runtime, a
 * function, a good handle of a list pool, a descriptor in the calling
 * stream's cache, no tool callback. The descriptor is set up as unit_new
 * does, less what the push sets (home, state, in_pool) and what is a
 * ULT's only (stack, context, binding). detached: the descriptor goes
 * back when the tasklet ends (out, if given, then only watches it).
 * Returns false for the general way.
 */
static ALWAYS_INLINE bool tasklet_create_fast(coexec_pool_t pool,
                                              coexec_tasklet_fn_t fn,
                                              void *arg,
                                              coexec_data_init_fn init,
                                              void *ctx, coexec_tasklet_t *out,
                                              bool detached)
{
    struct coexec_pool_rec *p = pool.p;
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *u;
    if (UNLIKELY(!rt_on() || !fn || CHECK_HANDLE(pool) || p->impl || !xs ||
                 !(u = xs->ucache.head) || pool_check(p, true) ||
                 (TOOL_ON() && atom_load_rlx_u32(&coexec__tool.mask))))
        return false;
    xs->ucache.head = u->next;
    xs->ucache.count--;
    atom_fence_rel(); /* before any write: see HANDLE_STILL */
    u->next = u->prev = NULL;
    atom_store_rel_uptr(&u->join, 0); /* as in unit_new */
    RLX_SET(u->kind, UNIT_TASKLET);
    RLX_SET(u->flags, detached ? UF_DETACHED : 0);
    u->rflags = 0;
    atom_store_rlx_ptr(&u->tnode.who, NULL); /* on no wait list */
    __atomic_store_n(&u->last_rank, (int16_t)-1, __ATOMIC_RELAXED);
    atom_store_rlx_u32(&u->attrs, 0);
    atom_store_rlx_uptr(&u->dest, 0);
    unit_count_new(xs, u);
    u->fn.tasklet = fn;
    RLX_SET(u->arg, arg);
    SET_OUT(out, u);
    if (init)
        init(unit_data(u), ctx);
    coexec__pool_push_as(p, u, PUSH_NEW, xs);
    return true;
}

COEXEC_API int coexec_tasklet_create(coexec_pool_t pool, coexec_tasklet_fn_t fn,
                                     void *arg, coexec_tasklet_t *out)
{
    if (LIKELY(tasklet_create_fast(pool, fn, arg, NULL, NULL, out,
                                   out == NULL)))
        return COEXEC_OK;
    return tasklet_create_slow(pool, fn, arg, NULL, NULL, out, out == NULL);
}

COEXEC_API int coexec_tasklet_create_watched(coexec_pool_t pool,
                                             coexec_tasklet_fn_t fn,
                                             void *arg,
                                             coexec_tasklet_t *watch)
{
    if (LIKELY(tasklet_create_fast(pool, fn, arg, NULL, NULL, watch, true)))
        return COEXEC_OK;
    return tasklet_create_slow(pool, fn, arg, NULL, NULL, watch, true);
}

COEXEC_API int coexec_tasklet_create_init(coexec_pool_t pool,
                                          coexec_tasklet_fn_t fn, void *arg,
                                          coexec_data_init_fn init, void *ctx,
                                          coexec_tasklet_t *out)
{
    if (LIKELY(init && coexec__g.unit_data &&
               tasklet_create_fast(pool, fn, arg, init, ctx, out,
                                   out == NULL)))
        return COEXEC_OK;
    RT_CHECK();
    if (!init)
        return COEXEC_EINVAL;
    if (!coexec__g.unit_data)
        return COEXEC_ENOENT;
    return tasklet_create_slow(pool, fn, arg, init, ctx, out, out == NULL);
}

static NOINLINE int tasklet_create_slow(coexec_pool_t pool,
                                        coexec_tasklet_fn_t fn, void *arg,
                                        coexec_data_init_fn init, void *ctx,
                                        coexec_tasklet_t *out, bool detached)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    struct coexec_unit_rec *u;
    rc = make_unit(pool.p, UNIT_TASKLET, (void *)fn, arg, NULL, detached,
                   &u);
    if (rc)
        return rc;
    SET_OUT(out, u);
    if (init)
        init(unit_data(u), ctx);
    queue_new(pool.p, u);
    return COEXEC_OK;
}

COEXEC_API int coexec_tasklet_create_on(coexec_xstream_t xs,
                                        coexec_tasklet_fn_t fn, void *arg,
                                        coexec_tasklet_t *out)
{
    struct coexec_pool_rec *p;
    struct coexec_unit_rec *u;
    int rc = pool_on(xs, (void *)fn, &p);
    if (!rc)
        rc = make_unit(p, UNIT_TASKLET, (void *)fn, arg, NULL, out == NULL,
                       &u);
    if (rc)
        return rc;
    SET_OUT(out, u);
    queue_new(p, u);
    return COEXEC_OK;
}

static ALWAYS_INLINE int join_common(struct coexec_unit_rec *p, uint64_t gen,
                                     bool tasklet, bool for_free,
                                     uint64_t deadline, bool *held,
                                     enum join_run run)
{
    RT_CHECK();
    int rc = check_unit(p, gen, tasklet);
    if (rc)
        return rc;
    if (p->kind == UNIT_MAIN) {
        /* The wrong kind of caller first, as for any other unit. */
        struct coexec_xstream_rec *xs = xs_self_entry();
        if (xs && (!xs->cur || xs->cur->kind == UNIT_TASKLET))
            return COEXEC_ECONTEXT;
        return xs && xs->cur == p ? COEXEC_EDEADLK : COEXEC_EPERM;
    }
    return join_unit(p, gen, for_free, deadline, held, run);
}

/* A join that frees nothing (the join and wait calls). */
static ALWAYS_INLINE int join_only(struct coexec_unit_rec *p, uint64_t gen,
                                   bool tasklet, uint64_t deadline,
                                   enum join_run run)
{
    bool held;
    return join_common(p, gen, tasklet, false, deadline, &held, run);
}

static ALWAYS_INLINE int free_common(struct coexec_unit_rec **pp, uint64_t *gp, bool tasklet,
                       enum join_run run)
{
    bool held = false;
    int rc = join_common(*pp, *gp, tasklet, true, UINT64_MAX, &held, run);
    /* COEXEC_ENOMEM: it ended without running; it is freed all the same. */
    if (rc && rc != COEXEC_ENOMEM)
        return rc;
    if (held)
        unit_release(coexec__xs_self(), *pp); /* ours alone */
    else if (!unit_release_handle(coexec__xs_self(), *pp, *gp))
        return COEXEC_EHANDLE; /* another free of the same handle won */
    *pp = NULL;
    *gp = 0;
    return rc;
}

COEXEC_API int coexec_thread_join(coexec_thread_t t)
{
    return join_only(t.p, t.gen, false, UINT64_MAX, JOIN_RUN_ANY);
}

COEXEC_API int coexec_thread_wait(coexec_thread_t t)
{
    return join_only(t.p, t.gen, false, UINT64_MAX, JOIN_RUN_SERVED);
}

COEXEC_API int coexec_thread_join_timed(coexec_thread_t t, uint64_t timeout_ns)
{
    return join_only(t.p, t.gen, false, clock_deadline(timeout_ns),
                     JOIN_RUN_ANY);
}

COEXEC_API int coexec_thread_free(coexec_thread_t *t)
{
    if (!t)
        return COEXEC_EINVAL;
    return free_common(&t->p, &t->gen, false, JOIN_RUN_ANY);
}

COEXEC_API int coexec_thread_wait_free(coexec_thread_t *t)
{
    if (!t)
        return COEXEC_EINVAL;
    return free_common(&t->p, &t->gen, false, JOIN_RUN_SERVED);
}

static ALWAYS_INLINE int tasklet_end_fast(coexec_tasklet_t *k,
                                          enum join_run run, bool release);

/* The tasklet joins' other cases, out of line. */
static NOINLINE int tasklet_join_slow(coexec_tasklet_t k, enum join_run run)
{
    return join_only(k.p, k.gen, true, UINT64_MAX, run);
}

COEXEC_API int coexec_tasklet_join(coexec_tasklet_t k)
{
    int rc = tasklet_end_fast(&k, JOIN_RUN_ANY, false);
    if (LIKELY(rc >= 0))
        return rc;
    return tasklet_join_slow(k, JOIN_RUN_ANY);
}

COEXEC_API int coexec_tasklet_wait(coexec_tasklet_t k)
{
    int rc = tasklet_end_fast(&k, JOIN_RUN_SERVED, false);
    if (LIKELY(rc >= 0))
        return rc;
    return tasklet_join_slow(k, JOIN_RUN_SERVED);
}

COEXEC_API int coexec_tasklet_join_timed(coexec_tasklet_t k,
                                         uint64_t timeout_ns)
{
    return join_only(k.p, k.gen, true, clock_deadline(timeout_ns),
                     JOIN_RUN_ANY);
}

/*
 * The common cases of a ULT's join (release false) or free (release true)
 * of tasklet *k, without a join record:
 *  - it finished and nobody is joining it (JOIN_DONE): a join is done; a
 *    free releases it through the handle, as free_common does;
 *  - it has not started and is queued in a list pool the caller may take
 *    it from (run, as in join_unit): it is claimed (taken out of the pool,
 *    which gives its run to us alone) and run here; a free then releases
 *    it, a join leaves it finished (JOIN_DONE) for its free. A joiner that
 *    registers meanwhile (through another copy of the handle) finds it
 *    running; the finish then wakes that joiner, as any finisher does,
 *    and the call is EBUSY, as when that joiner had come first.
 * Returns -1, having done nothing, for any other case (join_only's or
 * free_common's).
 */
static ALWAYS_INLINE int tasklet_end_fast(coexec_tasklet_t *k,
                                          enum join_run run, bool release)
{
    struct coexec_unit_rec *u = k->p;
    uint64_t gen = k->gen;
    if (UNLIKELY(!rt_on() || !u || !handle_epoch_ok(gen) ||
                 atom_load_acq_u64(&u->gen) != gen ||
                 u->kind != UNIT_TASKLET ||
                 (u->flags & (UF_DETACHED | UF_NOSTEAL))))
        return -1;
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *self = xs ? xs->cur : NULL;
    if (UNLIKELY(!self || self->kind == UNIT_TASKLET))
        return -1;
    /* Acquire: pairs with the finisher's release of JOIN_DONE. */
    uintptr_t j = atom_load_acq_uptr(&u->join);
    if (j == JOIN_DONE) {
        if (!release)
            return COEXEC_OK;
        if (!unit_release_handle(xs, u, gen))
            return COEXEC_EHANDLE; /* another free of the same handle won */
        k->p = NULL;
        k->gen = 0;
        return COEXEC_OK;
    }
    struct coexec_pool_rec *p = atom_load_acq_ptr(&u->pool);
    if (j != 0 || !p || p->impl || !may_claim_from(p, xs, run) ||
        !pool_list_remove(p, u, xs, false, gen))
        return -1; /* not claimed: not queued there as this unit */
    if (UNLIKELY(tasklet_run_here(xs, self, u) != COEXEC_READY)) {
        coexec__tasklet_pending(xs, u);
        return -1; /* waited for the ordinary way */
    }
    wait_tasklet_leave(u);
    uintptr_t none = 0;
    atom_store_rel_u32(&u->state, COEXEC_UNIT_TERMINATED);
    /* JOIN_HANDED: ours alone, as a held free's; JOIN_DONE: finished, for
     * any later join or free (release: a handle check that sees it sees
     * the run's effects). */
    if (UNLIKELY(!atom_cas_ar_uptr(&u->join, &none,
                                   release ? JOIN_HANDED : JOIN_DONE))) {
        coexec__unit_finish_joined(u);
        return COEXEC_EBUSY;
    }
    if (!release)
        return COEXEC_OK;
    unit_release(xs, u);
    k->p = NULL;
    k->gen = 0;
    return COEXEC_OK;
}

/* The tasklet frees' other cases, out of line: the fast path keeps a
 * small frame. */
static NOINLINE int tasklet_free_slow(coexec_tasklet_t *k, enum join_run run)
{
    return free_common(&k->p, &k->gen, true, run);
}

COEXEC_API int coexec_tasklet_free(coexec_tasklet_t *k)
{
    if (!k)
        return COEXEC_EINVAL;
    int rc = tasklet_end_fast(k, JOIN_RUN_ANY, true);
    if (LIKELY(rc >= 0))
        return rc;
    return tasklet_free_slow(k, JOIN_RUN_ANY);
}

COEXEC_API int coexec_tasklet_wait_free(coexec_tasklet_t *k)
{
    if (!k)
        return COEXEC_EINVAL;
    int rc = tasklet_end_fast(k, JOIN_RUN_SERVED, true);
    if (LIKELY(rc >= 0))
        return rc;
    return tasklet_free_slow(k, JOIN_RUN_SERVED);
}

/*
 * A new unit in the descriptor of the finished, unfreed unit *pp (handle
 * generation *gp), running fn(arg) from pool. The handle's generation is
 * taken from it by one compare-and-swap, as a free takes it, so that of a
 * revive and a free through copies of one handle exactly one wins; the
 * new generation is written back before the unit is queued. Kept: the
 * stack the ULT was given (its own memory, or its size), its priority and
 * pinning, the data area's bytes. New: its id, state, keys, name.
 */
static int revive_common(coexec_pool_t pool, void *fn, void *arg,
                         struct coexec_unit_rec **pp, uint64_t *gp,
                         bool tasklet)
{
    RT_CHECK();
    if (!pp || !gp || !fn)
        return COEXEC_EINVAL;
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    struct coexec_unit_rec *u = *pp;
    uint64_t gen = *gp;
    if ((rc = check_unit(u, gen, tasklet)) != COEXEC_OK)
        return rc;
    if (u->kind == UNIT_MAIN)
        return COEXEC_EPERM;
    /* Acquire: pairs with the finisher's release of JOIN_DONE. */
    if (atom_load_acq_uptr(&u->join) != JOIN_DONE)
        return COEXEC_ESTATE; /* running, queued, or a join under way */
    if ((rc = pool_check(pool.p, true)) != COEXEC_OK)
        return rc;
    uint64_t next = gen_next(gen);
    if (!atom_cas_ar_u64(&u->gen, &gen, next))
        return COEXEC_EHANDLE; /* a free or revive of a copy won */
    /* Wakes aimed at the finished incarnation fail from now on. */
    atom_store_rlx_u32(&u->wake, wake_tag_of(next));
    void *ustack = (u->flags & UF_USER_STACK) ? u->stack : NULL;
    uint32_t attrs = atom_load_rlx_u32(&u->attrs);
    unit_reset(u, u->kind, UF_USER_STACK | UF_BIG_STACK);
    atom_store_rlx_u32(&u->attrs, attrs);
    if (ustack) {
        RLX_SET(u->stack, ustack);
        canary_set(ustack);
    }
    if (tasklet) {
        atom_store_rlx_ptr(&u->tnode.who, NULL); /* on no wait list */
        u->fn.tasklet = (coexec_tasklet_fn_t)fn;
    } else {
        u->fn.thread = (coexec_thread_fn_t)fn;
    }
    RLX_SET(u->arg, arg);
    unit_new_id(xs_self_entry(), u);
    *gp = next;
    queue_new(pool.p, u);
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_revive(coexec_pool_t pool, coexec_thread_fn_t fn,
                                    void *arg, coexec_thread_t *t)
{
    return revive_common(pool, (void *)fn, arg, t ? &t->p : NULL,
                         t ? &t->gen : NULL, false);
}

COEXEC_API int coexec_tasklet_revive(coexec_pool_t pool,
                                     coexec_tasklet_fn_t fn, void *arg,
                                     coexec_tasklet_t *k)
{
    return revive_common(pool, (void *)fn, arg, k ? &k->p : NULL,
                         k ? &k->gen : NULL, true);
}

int coexec__join_unit(struct coexec_unit_rec *u)
{
    bool held;
    return join_unit(u, atom_load_acq_u64(&u->gen), false, UINT64_MAX, &held,
                     JOIN_RUN_ANY);
}
