/*
 * src/sched/sched.c: schedulers: the run loop every stream executes, idle
 * parking, stealing (random victims, nearer first), priorities with aging,
 * user-defined schedulers, stacked schedulers, replacing a stream's main
 * scheduler, and the public scheduler API.
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
 * xs->sched_req; the stream honours it at its next event check. Pools the
 * old scheduler served and no running scheduler serves any more forward
 * their units, and later pushes, to the new scheduler's first pool.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch/clock.h"
#include "arch/futex.h"
#include "base/global.h"
#include "base/lfstack.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

static struct coexec_sched_rec *sched_all;
static struct coexec_sched_rec *sched_free_list;

static inline uint64_t now_ns(void)
{
    return clock_now_ns();
}

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
    s->kind = kind;
    s->npools = npools;
    for (int i = 0; i < npools; i++) {
        s->pools[i] = pools[i];
        atom_fadd_rlx_u32(&pools[i]->nscheds, 1);
    }
    /* A yield may hand the CPU straight to the next unit of this pool
     * (src/thread/run.c) when that is what the loop itself would pick: the
     * first pool, a list pool, a built-in kind that takes from it in
     * order (not PRIO, not a user scheduler). */
    s->direct_pool = npools > 0 && !pools[0]->impl &&
                             kind != COEXEC_SCHED_PRIO &&
                             kind != COEXEC_SCHED_USER
                         ? pools[0]
                         : NULL;
    s->event_freq = event_freq;
    s->idle_spin_ns = idle_spin_ns;
    s->steal = steal;
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
    int owned = s->kind == COEXEC_SCHED_RANDWS ? 1 : s->npools;
    for (int i = 0; i < s->npools; i++) {
        struct coexec_pool_rec *p = s->pools[i];
        if (atom_fadd_ar_u32(&p->nrun, 1) == 0 &&
            atom_load_rlx_ptr(&p->forward) != NULL)
            coexec__pool_unforward(p);
        if (!xs || i >= owned)
            continue;
        if (!p->shared)
            p->owner_xs = xs;
        coexec__pool_bind_owner(p, true);
        atom_store_rlx_u32(&p->home_cpu, (uint32_t)(xs->cpu + 1));
        if (p->impl && p->kind == COEXEC_POOL_DEQUE)
            coexec__deque_set_owner(p, xs);
    }
}

void coexec__sched_deactivate(struct coexec_sched_rec *s,
                              struct coexec_xstream_rec *xs,
                              struct coexec_pool_rec *to)
{
    int owned = s->kind == COEXEC_SCHED_RANDWS ? 1 : s->npools;
    for (int i = 0; i < s->npools; i++) {
        struct coexec_pool_rec *p = s->pools[i];
        bool last = atom_fsub_ar_u32(&p->nrun, 1) == 1;
        if (last && to && p != to)
            coexec__pool_forward(p, to);
        if (last && xs && i < owned)
            coexec__pool_bind_owner(p, false); /* nobody runs it now */
        if (xs && p->owner_xs == xs && !p->shared)
            p->owner_xs = NULL;
    }
}

/* ---- victims ------------------------------------------------------------- */

static inline uint32_t xs_rand(struct coexec_xstream_rec *xs)
{
    /* xorshift32: the stream's own state, never shared. */
    uint32_t x = xs->rng ? xs->rng : (uint32_t)(xs->rank * 2654435761u + 1);
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    xs->rng = x;
    return x;
}

/* How far a victim pool is from xs: 0 same core ... DIST_FAR unknown. */
static unsigned victim_dist(struct coexec_xstream_rec *xs,
                            struct coexec_pool_rec *v)
{
    int cpu = (int)atom_load_rlx_u32(&v->home_cpu) - 1;
    if (cpu < 0 || xs->cpu < 0)
        return DIST_FAR;
    if ((unsigned)cpu < XS_DIST_CACHE) {
        uint8_t d = xs->dist[cpu];
        if (d == 0xff) {
            d = (uint8_t)coexec__affinity_distance(xs->cpu, cpu);
            xs->dist[cpu] = d;
        }
        return d;
    }
    return (unsigned)coexec__affinity_distance(xs->cpu, cpu);
}

static bool own_pool(struct coexec_sched_rec *s, struct coexec_pool_rec *p)
{
    for (int i = 0; i < s->npools; i++)
        if (s->pools[i] == p)
            return true;
    return false;
}

/* Steals one unit for s: from s's pools 1.. (RANDWS with several pools) or
 * from the other streams' default pools, at random, nearer victims first. */
static struct coexec_unit_rec *steal_one(struct coexec_xstream_rec *xs,
                                         struct coexec_sched_rec *s)
{
    bool registry = s->npools == 1 || s->kind != COEXEC_SCHED_RANDWS;
    unsigned n = registry ? atom_load_acq_u32(&coexec__steal.num)
                          : (unsigned)s->npools - 1;
    if (n == 0)
        return NULL;
    unsigned start = xs_rand(xs) % n;
    for (unsigned cls = 0; cls <= DIST_FAR; cls++) {
        bool farther = false;
        for (unsigned k = 0; k < n; k++) {
            unsigned i = (start + k) % n;
            struct coexec_pool_rec *v =
                registry ? atom_load_acq_ptr(&coexec__steal.pools[i])
                         : s->pools[1 + i];
            if (!v || pool_size(v) == 0 ||
                (registry && own_pool(s, v)))
                continue;
            unsigned d = victim_dist(xs, v);
            if (d != cls) {
                farther |= d > cls;
                continue;
            }
            struct coexec_unit_rec *u =
                registry ? coexec__pool_steal_registered(v, xs, s->pools[0])
                         : coexec__pool_steal(v, xs, s->pools[0]);
            if (u) {
                /* A stolen unit moves: when it yields or is woken, it comes
                 * back here, not to the stream it was taken from. Release:
                 * a joiner that finds the new home (acquire) also sees the
                 * victim's unlink of u. */
                atom_store_rel_ptr(&u->pool, s->pools[0]);
                return u;
            }
        }
        if (!farther)
            break;
    }
    return NULL;
}

static bool steals(struct coexec_sched_rec *s)
{
    return s->steal || (s->kind == COEXEC_SCHED_RANDWS && s->npools == 1);
}

/* PRIO: the most urgent pool, unless a waiting one was passed over for
 * `aging` units: then the one passed over longest. */
static struct coexec_unit_rec *prio_next(struct coexec_xstream_rec *xs,
                                         struct coexec_sched_rec *s)
{
    int n = s->npools;
    if (s->aging) {
        int best = -1;
        uint32_t most = 0;
        for (int i = 1; i < n; i++)
            if (s->passed[i] >= s->aging && s->passed[i] > most &&
                pool_size(s->pools[i])) {
                most = s->passed[i];
                best = i;
            }
        if (best >= 0) {
            struct coexec_unit_rec *u = coexec__pool_pop(s->pools[best], xs);
            s->passed[best] = 0;
            if (u)
                return u;
        }
    }
    for (int i = 0; i < n; i++) {
        struct coexec_unit_rec *u = coexec__pool_pop(s->pools[i], xs);
        if (u) {
            s->passed[i] = 0;
            for (int k = i + 1; k < n; k++)
                if (pool_size(s->pools[k]))
                    s->passed[k]++;
            return u;
        }
    }
    return NULL;
}

static ALWAYS_INLINE struct coexec_unit_rec *
next_unit(struct coexec_xstream_rec *xs, struct coexec_sched_rec *s)
{
    if (UNLIKELY(s->kind == COEXEC_SCHED_PRIO)) {
        struct coexec_unit_rec *u = prio_next(xs, s);
        return u || !steals(s) ? u : steal_one(xs, s);
    }
    int n = s->kind == COEXEC_SCHED_RANDWS ? 1 : s->npools;
    for (int i = 0; i < n; i++) {
        struct coexec_unit_rec *u = coexec__pool_pop(s->pools[i], xs);
        if (u)
            return u;
    }
    return steals(s) || s->kind == COEXEC_SCHED_RANDWS ? steal_one(xs, s)
                                                        : NULL;
}

static bool pools_empty(struct coexec_sched_rec *s)
{
    for (int i = 0; i < s->npools; i++)
        if (pool_size(s->pools[i]) != 0)
            return false;
    return true;
}

bool coexec__sched_has_work(struct coexec_xstream_rec *xs)
{
    return !pools_empty(xs->cur_sched) || xs_events_pending(xs) ||
           xs->run_next;
}

/* Sleeper nodes one parking scheduler puts on pools: its own pools (at
 * most SCHED_MAX_POOLS), and a stacked scheduler's victims. */
#define MAX_SLEEP_POOLS 64

/* The kernel ends a timed sleep late (tens of microseconds on a VM, even
 * with the timer slack at 1 ns): a stream with a timer due parks until this
 * long before it, then spins to it. */
#define PARK_EARLY_NS 100000ull

/* What a parking scheduler registered, to be undone once it is awake. */
struct sleep_reg {
    struct sleeper nodes[MAX_SLEEP_POOLS];
    struct coexec_pool_rec *pools[MAX_SLEEP_POOLS];
    int n;
    struct sleeper thief; /* a stream in the set of parked thieves */
    bool abort;   /* a pool has work: do not sleep */
    bool partial; /* a stacked scheduler with too many victims for nodes */
};

/* Does s steal from the other streams' default pools (the registry)?
 * RANDWS with several pools steals from its own pools 1.. instead. */
static bool steals_registry(struct coexec_sched_rec *s)
{
    return steals(s) && (s->npools == 1 || s->kind != COEXEC_SCHED_RANDWS);
}

/* Fills sleeper s for stream xs, or for unit `unit` (a stacked scheduler). */
static void sleeper_for(struct sleeper *s, struct coexec_xstream_rec *xs,
                        struct coexec_unit_rec *unit)
{
    s->mb = unit ? NULL : &xs->mb;
    s->unit = unit;
    s->wake_unit = coexec__wake_unit;
}

/* Registers the sleeper (stream xs, or unit `unit`) to be woken by a push
 * into one of s's pools and, when s steals, into one of its victims; sets
 * r->abort instead when one of them has work. A stream steals as a parked
 * thief (one node in a global set, a mark on each victim: pool.c), so any
 * number of victims costs it no more than a look at each; a stacked
 * scheduler (a unit) puts a node on each victim, and sets r->partial when
 * they do not all fit. */
static void sleep_register_all(struct coexec_xstream_rec *xs,
                               struct coexec_unit_rec *unit,
                               struct coexec_sched_rec *s,
                               struct sleep_reg *r)
{
    r->n = 0;
    r->abort = r->partial = false;
    r->thief.mb = NULL;
    r->thief.linked = false;
    for (int i = 0; i < s->npools && !r->abort; i++) {
        struct coexec_pool_rec *p = s->pools[i];
        if (!p->shared && !unit) {
            if (pool_size(p))
                r->abort = true;
            continue;
        }
        sleeper_for(&r->nodes[r->n], xs, unit);
        if (!coexec__pool_sleep_register(p, &r->nodes[r->n]))
            r->abort = true;
        else
            r->pools[r->n++] = p;
    }
    bool thief = !unit && steals_registry(s);
    if (r->abort || !steals(s) || (!unit && !thief))
        return;
    if (thief) {
        /* In the set before the victims are looked at: see pool.c. */
        sleeper_for(&r->thief, xs, NULL);
        coexec__thief_park(&r->thief);
    }
    unsigned ns = atom_load_acq_u32(&coexec__steal.num);
    for (unsigned i = 0; i < ns && !r->abort; i++) {
        struct coexec_pool_rec *v = atom_load_acq_ptr(&coexec__steal.pools[i]);
        if (!v || own_pool(s, v))
            continue;
        if (thief) {
            if (!coexec__pool_thief_mark(v))
                r->abort = true;
            continue;
        }
        if (r->n == MAX_SLEEP_POOLS) {
            r->partial = true;
            break;
        }
        sleeper_for(&r->nodes[r->n], xs, unit);
        if (!coexec__pool_sleep_register(v, &r->nodes[r->n]))
            r->abort = true;
        else
            r->pools[r->n++] = v;
    }
}

static void sleep_unregister_all(struct sleep_reg *r)
{
    for (int i = 0; i < r->n; i++)
        coexec__pool_sleep_unregister(r->pools[i], &r->nodes[i]);
    if (r->thief.mb)
        coexec__thief_unpark(&r->thief);
}

/* Parks the stream until a push into one of the pools it takes from, a
 * remote wake, a stop or replacement request or (nearly) its earliest
 * timer. The protocol: reset the park word, register on every shared pool
 * under its lock while seeing it empty (as a thief on the victims), check
 * the event pool and the stop flag, then sleep on the park word, with no
 * timeout but the timer's. A pusher that finds us registered, or a waker
 * that filled the inbox, sets the park word before the futex wake, so no
 * event falls between the checks and sleep. */
static void park_stream(struct coexec_xstream_rec *xs, struct coexec_sched_rec *s)
{
    struct sleep_reg r;

    /* Before the inbox and pool checks below (base/parker.h). */
    parker_reset(&xs->mb.park);
    sleep_register_all(xs, NULL, s, &r);
    uint64_t next = xs_next_timer(xs);
    if (!r.abort && !xs_events_pending(xs) && !atom_load_sc_u32(&xs->stop) &&
        !atom_load_sc_ptr(&xs->sched_req) &&
        (next == UINT64_MAX || next > now_ns() + PARK_EARLY_NS)) {
        /* Idle: keep the timers of busy streams too (timer.c). */
        bool held;
        uint64_t keep = coexec__timers_keep(xs, &held);
        struct timespec until;
        struct timespec *ts = NULL;
        if (next != UINT64_MAX)
            next -= PARK_EARLY_NS;
        if (keep < next)
            next = keep;
        if (next != UINT64_MAX) {
            until = clock_until(next);
            ts = &until;
        }
        parker_sleep(&xs->mb.park, ts);
        /* A kick is work (or a stop) unless it came from a timer add. */
        coexec__timers_unkeep(xs, held, parker_kicked(&xs->mb.park));
    }
    sleep_unregister_all(&r);
}

bool coexec__sched_drain_events(struct coexec_xstream_rec *xs)
{
    struct coexec_unit_rec *u = coexec__mb_take(&xs->mb);
    if (!u)
        return false;
    do {
        struct coexec_unit_rec *n = u->next;
        coexec__enqueue_woken(u);
        u = n;
    } while (u);
    return true;
}

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
    sleep_register_all(xs, s->unit, s, &r);
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
    sleep_unregister_all(&r);
    return xs;
}

/* Tells the stacked schedulers that are units of s's pools to finish (s
 * is finishing, or its stream stopping), waking those parked idle. True if
 * it woke any: they will be back in s's pools. */
static bool finish_children(struct coexec_sched_rec *s)
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

static bool stacked_must_stop(struct coexec_xstream_rec *xs,
                              struct coexec_sched_rec *s)
{
    if (!atom_load_acq_u32(&s->finish) && !atom_load_acq_u32(&xs->stop))
        return false;
    return pools_empty(s) && !xs->run_next && !finish_children(s);
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

enum loop_end { LOOP_STOP, LOOP_SWITCH };

/* Runs s at the current level of xs (main when `stacked` is false). A
 * stacked s returns when it must finish; a main one on a stop or a
 * replacement request. */
static enum loop_end builtin_loop(struct coexec_xstream_rec *xs,
                                  struct coexec_sched_rec *s, bool stacked)
{
    unsigned iter = 0;
    uint64_t idle_since = 0;
    unsigned idle_rounds = 0;
    for (;;) {
        struct coexec_unit_rec *u = xs->run_next;
        if (u)
            xs->run_next = NULL;
        else
            u = next_unit(xs, s);
        if (u) {
            coexec__run_unit(xs, u);
            idle_since = 0;
            if (++iter >= s->event_freq) {
                iter = 0;
                if (stacked) {
                    xs = stacked_yield(xs, s);
                    continue;
                }
                coexec__sched_drain_events(xs);
                if (UNLIKELY(xs_next_timer(xs) != UINT64_MAX))
                    coexec__timerheap_run(&xs->timers, now_ns());
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
        if (coexec__sched_drain_events(xs))
            continue;
        uint64_t next = xs_next_timer(xs);
        if (next != UINT64_MAX && next <= now_ns()) {
            coexec__timerheap_run(&xs->timers, now_ns());
            continue; /* run what they woke */
        }
        if (atom_load_acq_ptr(&xs->sched_req) != NULL)
            return LOOP_SWITCH;
        if (atom_load_acq_u32(&xs->stop) && pools_empty(s) &&
            !xs_events_pending(xs) && !xs->run_next &&
            !timers_hold_stop(xs)) {
            if (finish_children(s))
                continue;
            return LOOP_STOP;
        }
        if (s->kind != COEXEC_SCHED_BASIC) {
            if (!idle_since) {
                idle_since = now_ns();
            } else if (now_ns() - idle_since >= s->idle_spin_ns) {
                park_stream(xs, s);
                idle_since = 0;
                continue;
            }
        } else if (++idle_rounds % 1024 == 0) {
            sched_yield(); /* be polite when streams outnumber cores */
        }
        cpu_relax();
    }
}

/* Main-level stop test shared with coexec_sched_has_to_stop. */
static bool main_must_stop(struct coexec_xstream_rec *xs,
                           struct coexec_sched_rec *s)
{
    return atom_load_acq_u32(&xs->stop) && pools_empty(s) &&
           !xs_events_pending(xs) && !xs->run_next &&
           !timers_hold_stop(xs) && !finish_children(s);
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
    /* Release: the old one may now be freed, used elsewhere or put back
     * (a default setup stays the stream's: it is freed with it). */
    atom_store_rel_u32(&old->in_use, 0);
}

static void run_user_main(struct coexec_xstream_rec *xs,
                          struct coexec_sched_rec *s)
{
    coexec_sched_t h = {s, atom_load_rlx_u64(&s->gen)};
    s->ops.run(h, s->ustate);
}

void coexec__sched_run(struct coexec_xstream_rec *xs)
{
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
static void stacked_main(void *arg)
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
            if (cfg->aging)
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
    *out = sched.p->has_ops ? sched.p->ustate : NULL;
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
    *num = sched.p->npools;
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
    if (idx < 0 || idx >= sched.p->npools)
        return COEXEC_EINVAL;
    struct coexec_pool_rec *p = sched.p->pools[idx];
    out->p = p;
    out->gen = atom_load_rlx_u64(&p->gen);
    return COEXEC_OK;
}

/* The stream whose loop of sched the caller is, or NULL (*rc says why). */
static struct coexec_xstream_rec *loop_of(coexec_sched_t sched, int *rc)
{
    if (!rt_on()) {
        *rc = COEXEC_ENOTINIT;
        return NULL;
    }
    if ((*rc = CHECK_HANDLE(sched)) != 0)
        return NULL;
    struct coexec_xstream_rec *xs = coexec__xs_self();
    if (!xs || xs->cur || xs->cur_sched != sched.p) {
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
    if (u->kind == UNIT_MAIN || unit_inpool(u) ||
        atom_load_acq_u32(&u->state) != COEXEC_UNIT_READY ||
        join_finished(atom_load_acq_uptr(&u->join)))
        return COEXEC_ESTATE;
    if (!pool_may_take(u, xs))
        return COEXEC_EPERM;
    if (!unit_pool(u))
        atom_store_rlx_ptr(&u->pool, sched.p->pools[0]);
    coexec__run_unit(xs, u);
    return COEXEC_OK;
}

/* The main level's events: remote wakes, then due timers. True if any
 * unit became ready. */
static bool main_events(struct coexec_xstream_rec *xs)
{
    bool any = coexec__sched_drain_events(xs);
    uint64_t next = xs_next_timer(xs);
    if (next != UINT64_MAX && next <= now_ns()) {
        coexec__timerheap_run(&xs->timers, now_ns());
        any = true;
    }
    return any;
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
    if (!atom_load_acq_u32(&xs->stop) && !atom_load_acq_ptr(&xs->sched_req))
        park_stream(xs, s);
    return COEXEC_OK;
}

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
    rc = coexec__sched_unit_new(s, s->stack_size, stacked_main, &u);
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
    xs_kick(x);
    return COEXEC_OK;
}
