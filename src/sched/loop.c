/*
 * src/sched/loop.c: the run loop every stream executes (the built-in
 * schedulers' engine), stacked levels, replacing a stream's main
 * scheduler, and the loop's steps that user schedulers call
 * (coexec_sched_pop, _run_unit, _check_events, _has_to_stop, _idle).
 * See the plaque of src/sched/sched.c.
 */
#include <sched.h>

#include "base/global.h"
#include "sched/loop.h"
#include "thread/thread.h"

/* ---- levels (stacked schedulers) ------------------------------------------ */

/* The calling stacked scheduler s (a ULT now acting as a scheduler) becomes
 * the level xs's units leave to. */
static void level_enter(struct coexec_xstream_rec *xs, struct coexec_sched_rec *s)
{
    struct coexec_unit_rec *u = s->unit;
    s->psp = xs->sched_sp;
    s->plo = xs->sched_stack_lo;
    s->psize = xs->sched_stack_size;
    s->pfiber = xs->sched_fiber;
    s->pcur = xs->cur_sched;
    xs->sched_stack_lo = u->stack;
    xs->sched_stack_size = u->stack_size;
    xs->sched_fiber = u->tsan_fiber;
    xs->cur_sched = s;
    xs->cur = NULL;
    xs->direct_yields = 0;
}

/* Puts the level below back: s is a plain unit again (about to leave). */
static void level_leave(struct coexec_xstream_rec *xs, struct coexec_sched_rec *s)
{
    xs->sched_sp = s->psp;
    xs->sched_stack_lo = s->plo;
    xs->sched_stack_size = s->psize;
    xs->sched_fiber = s->pfiber;
    xs->cur_sched = s->pcur;
    xs->cur = s->unit;
}

/* Stacked s yields back to the scheduler below; returns the stream it
 * resumed on, with s's level installed again. */
static struct coexec_xstream_rec *stacked_yield(struct coexec_xstream_rec *xs,
                                                struct coexec_sched_rec *s)
{
    level_leave(xs, s);
    coexec__unit_yield_to_sched(xs, s->unit);
    xs = coexec__xs_self();
    level_enter(xs, s);
    return xs;
}

/* Stacked s, out of work, parks as a unit until a push into one of its
 * pools (or coexec_sched_finish, or its stream stopping) wakes it. */
static struct coexec_xstream_rec *stacked_idle(struct coexec_xstream_rec *xs,
                                               struct coexec_sched_rec *s)
{
    struct sleep_reg r;
    coexec__sched_sleep_register(xs, s->unit, s, &r);
    if (!r.abort) {
        level_leave(xs, s);
        if (r.partial) {
            coexec__unit_yield_to_sched(xs, s->unit);
        } else {
            /* seq_cst, a Dekker pair with coexec_sched_finish and the
             * finish_children of the level below: either they see idle
             * and wake us, or we see their flag here. */
            atom_store_sc_u32(&s->idle, 1);
            if (!atom_load_sc_u32(&s->finish) && !atom_load_sc_u32(&xs->stop))
                coexec__park_current(s->unit);
            atom_store_rlx_u32(&s->idle, 0);
        }
        xs = coexec__xs_self();
        level_enter(xs, s);
    }
    coexec__sched_sleep_unregister(&r);
    return xs;
}

static bool stacked_must_stop(struct coexec_xstream_rec *xs,
                              struct coexec_sched_rec *s)
{
    if (!atom_load_acq_u32(&s->finish) && !atom_load_acq_u32(&xs->stop))
        return false;
    return pools_empty(s) && !xs->run_next && !coexec__sched_finish_children(s);
}

/* ---- the built-in loop ------------------------------------------------------ */

/* A stopping stream with nothing else to run: true while its timers hold
 * the stop. At finalize they do not: they fire now, as cancelled, and the
 * units they release run before the stream stops. */
static bool timers_hold_stop(struct coexec_xstream_rec *xs)
{
    if (xs_next_timer(xs) == UINT64_MAX)
        return false;
    if (atom_load_acq_u32(&coexec__g.fin) != FIN_NONE)
        coexec__timerheap_cancel_all(&xs->timers);
    return true;
}

/* The main level's events: remote wakes, then due timers. True if any
 * unit became ready. */
static bool main_events(struct coexec_xstream_rec *xs)
{
    bool any = coexec__sched_drain_events(xs);
    uint64_t next = xs_next_timer(xs), now;
    if (next != UINT64_MAX && next <= (now = now_ns())) {
        coexec__timerheap_run(&xs->timers, now);
        any = true;
    }
    return any;
}

/* The main level must stop: its stream is stopping and nothing is left to
 * run (or to wait for) here; the one test of the loop and of
 * coexec_sched_has_to_stop. Tells stacked children to finish first: false
 * while it woke any. */
static bool main_must_stop(struct coexec_xstream_rec *xs,
                           struct coexec_sched_rec *s)
{
    return atom_load_acq_u32(&xs->stop) && pools_empty(s) &&
           !xs_events_pending(xs) && !xs->run_next &&
           !timers_hold_stop(xs) && !coexec__sched_finish_children(s);
}

enum loop_end { LOOP_STOP, LOOP_SWITCH };

/* One round of an idle stream that must not park (a fork-join region is
 * open, a poller waits): lets the OS thread go now and then, since streams
 * may outnumber cores, and pauses the CPU when `relax` (a poller's call is
 * the pause already: a cpu_relax would add to every completion's latency).
 * Returns 0, the stream's new idle start. */
static uint64_t stay_awake(unsigned *idle_rounds, bool relax)
{
    if (++*idle_rounds % 256 == 0)
        sched_yield();
    if (relax)
        cpu_relax();
    return 0;
}

/* Adds the idle time since t0 to xs's count (COEXEC_STATS); returns 0. */
static NOINLINE uint64_t idle_end(struct coexec_xstream_rec *xs, uint64_t t0)
{
    stat_add(&xs->count[XC_IDLE_NS], now_ns() - t0);
    return 0;
}

/* Runs s at the current level of xs (main when `stacked` is false). A
 * stacked s returns when it must finish; a main one on a stop or a
 * replacement request. */
static enum loop_end builtin_loop(struct coexec_xstream_rec *xs,
                                  struct coexec_sched_rec *s, bool stacked)
{
    unsigned iter = 0;
    uint64_t idle_since = 0;
    uint64_t idle_t0 = 0; /* idle since (COEXEC_STATS: idle time) */
    unsigned idle_rounds = 0;
    for (;;) {
        struct coexec_unit_rec *u = xs->run_next;
        if (u)
            xs->run_next = NULL;
        else
            u = next_unit(xs, s);
        if (u) {
            if (UNLIKELY(idle_t0 != 0))
                idle_t0 = idle_end(xs, idle_t0);
            if (u->kind == UNIT_TASKLET)
                coexec__run_tasklet_unit(xs, u);
            else
                coexec__run_unit(xs, u);
            idle_since = 0;
            if (UNLIKELY(pollers_hot()))
                coexec__pollers_run_busy(xs);
            if (++iter >= s->event_freq || xs->events_due) {
                iter = 0;
                xs->events_due = 0;
                if (stacked) {
                    xs = stacked_yield(xs, s);
                    continue;
                }
                main_events(xs);
                if (UNLIKELY(pollers_any()))
                    coexec__pollers_run(xs);
                if (UNLIKELY(atom_load_rlx_ptr(&xs->sched_req) != NULL))
                    return LOOP_SWITCH;
            }
            continue;
        }
        if (stacked) {
            if (stacked_must_stop(xs, s))
                return LOOP_STOP;
            xs = stacked_idle(xs, s);
            continue;
        }
        if (UNLIKELY(coexec__g.cfg.stats) && !idle_t0)
            idle_t0 = now_ns();
        if (main_events(xs))
            continue; /* run what they woke */
        if (atom_load_acq_ptr(&xs->sched_req) != NULL)
            return LOOP_SWITCH;
        if (main_must_stop(xs, s))
            return LOOP_STOP;
        if (UNLIKELY(pollers_any()) && coexec__pollers_run(xs)) {
            /* A poller waits for outside work: keep polling, awake. */
            idle_since = stay_awake(&idle_rounds, false);
            continue;
        }
        if (UNLIKELY(atom_load_rlx_u32(&coexec__sched_fj.open) != 0)) {
            /* A region is open somewhere: help it, and stay awake. */
            if (coexec__sched_fj.steal(xs)) {
                idle_since = 0;
                if (UNLIKELY(idle_t0 != 0))
                    idle_t0 = idle_end(xs, idle_t0);
                continue;
            }
            idle_since = stay_awake(&idle_rounds, true);
            continue;
        }
        if (s->parks) {
            if (!idle_since) {
                idle_since = now_ns();
            } else if (now_ns() - idle_since >= s->idle_spin_ns) {
                if (UNLIKELY(idle_t0 != 0))
                    idle_t0 = idle_end(xs, idle_t0);
                coexec__sched_park_stream(xs, s);
                idle_since = 0;
                continue;
            }
        } else if (++idle_rounds % 1024 == 0) {
            sched_yield(); /* be polite when streams outnumber cores */
        }
        cpu_relax();
    }
}

/* xs switched to n. The primary's main ULT runs only on its own stream:
 * a home that n does not pop would keep it waiting for good (queued there,
 * or once woken), so it moves to n's first pool (at once if queued; else
 * when it is next queued). A move already asked to a pool n pops stands. */
static void rehome_main(struct coexec_xstream_rec *xs,
                        struct coexec_sched_rec *n)
{
    struct coexec_unit_rec *m = coexec__g.main_unit;
    if (!m || m->bound_rank != xs_rank_of(xs) || n->npools < 1)
        return;
    uintptr_t d = atom_load_acq_uptr(&m->dest);
    struct coexec_pool_rec *to =
        (d & DEST_MOVE) && !(d & DEST_BOUND)
            ? (struct coexec_pool_rec *)(d & ~DEST_TAGS)
            : unit_pool(m);
    if (!to || sched_has_pool(n, to))
        return;
    coexec_thread_t t = {m, atom_load_rlx_u64(&m->gen)};
    coexec_pool_t p = {n->pools[0], atom_load_rlx_u64(&n->pools[0]->gen)};
    int rc = coexec_thread_set_home(t, p);
    (void)rc; /* only a finished main ULT refuses: nothing to keep then */
}

/* Honours a replacement request: runs on xs's own thread, between units. */
static void apply_replacement(struct coexec_xstream_rec *xs)
{
    struct coexec_sched_rec *n = atom_xchg_ar_ptr(&xs->sched_req, NULL);
    if (!n)
        return;
    struct coexec_sched_rec *old = atom_load_rlx_ptr(&xs->sched);
    coexec__sched_activate(n, xs);
    atom_store_rel_ptr(&xs->sched, n);
    xs->cur_sched = n;
    coexec__sched_deactivate(old, xs, n->pools[0]);
    rehome_main(xs, n);
    /* Release: the old one may now be freed, used elsewhere or put back
     * (a default setup stays the stream's: it is freed with it). */
    atom_store_rel_u32(&old->in_use, 0);
    coexec__sched_req_wake(xs);
}

static void run_user_main(struct coexec_xstream_rec *xs,
                          struct coexec_sched_rec *s)
{
    coexec_sched_t h = {s, atom_load_rlx_u64(&s->gen)};
    s->ops.run(h, s->ustate);
}

void coexec__sched_run(struct coexec_xstream_rec *xs)
{
    /* A replacement asked before the loop first ran (the primary's main
     * ULT set its stream's scheduler, then yielded into this loop): before
     * any unit, or the old scheduler would run that ULT on and on. */
    if (atom_load_acq_ptr(&xs->sched_req) != NULL)
        apply_replacement(xs);
    for (;;) {
        struct coexec_sched_rec *s = atom_load_rlx_ptr(&xs->sched);
        xs->cur_sched = s;
        if (s->has_ops) {
            run_user_main(xs, s);
            if (!atom_load_acq_ptr(&xs->sched_req) && main_must_stop(xs, s))
                return;
        } else if (builtin_loop(xs, s, false) == LOOP_STOP) {
            return;
        }
        apply_replacement(xs);
    }
}

/* The body of a stacked scheduler's unit. */
void coexec__sched_stacked_main(void *arg)
{
    struct coexec_sched_rec *s = arg;
    struct coexec_xstream_rec *xs = coexec__xs_self();
    level_enter(xs, s);
    if (s->has_ops) {
        coexec_sched_t h = {s, atom_load_rlx_u64(&s->gen)};
        s->ops.run(h, s->ustate);
        xs = coexec__xs_self();
    } else {
        builtin_loop(xs, s, true);
        xs = coexec__xs_self();
    }
    level_leave(xs, s);
    coexec__sched_deactivate(s, NULL, NULL);
    pthread_mutex_lock(&coexec__g.lock);
    s->unit = NULL;
    s->parent_pool = NULL;
    pthread_mutex_unlock(&coexec__g.lock);
    atom_store_rlx_u32(&s->finish, 0);
    /* Release: whoever sees it idle may free or reuse it. */
    atom_store_rel_u32(&s->in_use, 0);
}

/* ---- the loop's steps for user schedulers --------------------------------- */

static struct coexec_xstream_rec *loop_of(coexec_sched_t sched, int *rc)
{
    if (!rt_on()) {
        *rc = COEXEC_ENOTINIT;
        return NULL;
    }
    if ((*rc = CHECK_HANDLE(sched)) != 0)
        return NULL;
    struct coexec_xstream_rec *xs = coexec__xs_self();
    if (!xs || xs->cur || xs->in_fj || xs->cur_sched != sched.p) {
        *rc = COEXEC_ECONTEXT;
        return NULL;
    }
    return xs;
}

COEXEC_API int coexec_sched_pop(coexec_sched_t sched, int idx,
                                coexec_unit_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    int rc;
    struct coexec_xstream_rec *xs = loop_of(sched, &rc);
    if (!xs)
        return rc;
    if (idx < 0 || idx >= sched.p->npools)
        return COEXEC_EINVAL;
    struct coexec_unit_rec *u = coexec__pool_pop(sched.p->pools[idx], xs);
    out->p = u;
    out->gen = u ? atom_load_rlx_u64(&u->gen) : 0;
    return COEXEC_OK;
}

COEXEC_API int coexec_sched_run_unit(coexec_sched_t sched, coexec_unit_t unit)
{
    int rc;
    struct coexec_xstream_rec *xs = loop_of(sched, &rc);
    if (!xs)
        return rc;
    if ((rc = CHECK_HANDLE(unit)) != 0)
        return rc;
    struct coexec_unit_rec *u = unit.p;
    if (unit_inpool(u) ||
        atom_load_acq_u32(&u->state) != COEXEC_UNIT_READY ||
        join_finished(atom_load_acq_uptr(&u->join)))
        return COEXEC_ESTATE;
    if (!pool_may_take(u, xs))
        return COEXEC_EPERM;
    /* A popped unit with no home is claimed: a joiner may be taking it. */
    void *none = NULL;
    if (!unit_pool(u) && !atom_cas_ar_ptr(&u->pool, &none, sched.p->pools[0]))
        return COEXEC_ESTATE;
    unit_held_clear(u);
    coexec__run_unit(xs, u);
    return COEXEC_OK;
}

COEXEC_API int coexec_sched_check_events(coexec_sched_t sched)
{
    int rc;
    struct coexec_xstream_rec *xs = loop_of(sched, &rc);
    if (!xs)
        return rc;
    struct coexec_sched_rec *s = sched.p;
    if (s->unit) {
        stacked_yield(xs, s);
        return COEXEC_OK;
    }
    main_events(xs);
    if (pollers_any())
        coexec__pollers_run(xs);
    return COEXEC_OK;
}

COEXEC_API int coexec_sched_has_to_stop(coexec_sched_t sched, int *stop)
{
    if (!stop)
        return COEXEC_EINVAL;
    int rc;
    struct coexec_xstream_rec *xs = loop_of(sched, &rc);
    if (!xs)
        return rc;
    struct coexec_sched_rec *s = sched.p;
    if (s->unit)
        *stop = stacked_must_stop(xs, s);
    else
        *stop = atom_load_acq_ptr(&xs->sched_req) != NULL ||
                main_must_stop(xs, s);
    return COEXEC_OK;
}

COEXEC_API int coexec_sched_idle(coexec_sched_t sched)
{
    int rc;
    struct coexec_xstream_rec *xs = loop_of(sched, &rc);
    if (!xs)
        return rc;
    struct coexec_sched_rec *s = sched.p;
    if (s->unit) {
        if (!stacked_must_stop(xs, s))
            stacked_idle(xs, s);
        return COEXEC_OK;
    }
    if (main_events(xs))
        return COEXEC_OK;
    if (pollers_any() && coexec__pollers_run(xs))
        return COEXEC_OK; /* a poller waits: no parking */
    if (!atom_load_acq_u32(&xs->stop) && !atom_load_acq_ptr(&xs->sched_req))
        coexec__sched_park_stream(xs, s);
    return COEXEC_OK;
}
