/*
 * src/sched/sched.c: schedulers: the run loop every stream executes, idle
 * parking, stealing, and the public scheduler API.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch/clock.h"
#include "arch/futex.h"
#include "core/internal.h"

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
    s->event_freq = event_freq;
    s->idle_spin_ns = idle_spin_ns;
    s->steal = steal;
    s->is_default = 0;
    s->user_created = 0;
    s->live = 1;
    atom_store_rlx_u32(&s->in_use, 0);
    atom_store_rel_u64(&s->gen, gen);
    pthread_mutex_unlock(&coexec__g.lock);
    return s;
}

void coexec__sched_release(struct coexec_sched_rec *s)
{
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

/* ---- the loop ------------------------------------------------------------ */

static bool own_pool(struct coexec_sched_rec *s, struct coexec_pool_rec *p)
{
    for (int i = 0; i < s->npools; i++)
        if (s->pools[i] == p)
            return true;
    return false;
}

static struct coexec_unit_rec *steal_one(struct coexec_xstream_rec *xs,
                                         struct coexec_sched_rec *s)
{
    unsigned n = atom_load_acq_u32(&coexec__g.num_steal_pools);
    for (unsigned k = 0; k < n; k++) {
        unsigned i = (unsigned)(xs->steal_index + k) % n;
        struct coexec_pool_rec *v = atom_load_acq_ptr(&coexec__g.steal_pools[i]);
        if (!v || own_pool(s, v))
            continue;
        struct coexec_unit_rec *u = coexec__pool_steal(v, xs);
        if (u) {
            xs->steal_index = (int)i;
            /* A stolen unit moves: when it yields or is woken, it comes
             * back here, not to the stream it was taken from. */
            /* Release: a joiner that finds the new home (acquire) also
             * sees the victim's unlink of u. */
            atom_store_rel_ptr(&u->pool, s->pools[0]);
            return u;
        }
    }
    return NULL;
}

static ALWAYS_INLINE struct coexec_unit_rec *
next_unit(struct coexec_xstream_rec *xs, struct coexec_sched_rec *s)
{
    for (int i = 0; i < s->npools; i++) {
        struct coexec_unit_rec *u = coexec__pool_pop(s->pools[i], xs);
        if (u)
            return u;
    }
    return s->steal ? steal_one(xs, s) : NULL;
}

static bool pools_empty(struct coexec_sched_rec *s)
{
    for (int i = 0; i < s->npools; i++)
        if (atom_load_acq_u64(&s->pools[i]->size) != 0)
            return false;
    return true;
}

#define MAX_SLEEP_POOLS 64

/* The kernel ends a timed sleep late (tens of microseconds on a VM, even
 * with the timer slack at 1 ns): a stream with a timer due parks until this
 * long before it, then spins to it. */
#define PARK_EARLY_NS 100000ull

/* Parks the stream until a push into one of the pools it takes from, a
 * remote wake, a stop request or (nearly) its earliest timer. The
 * protocol: reset the park word, register on every shared pool under its
 * lock while seeing it empty, check the event pool and the stop flag, then
 * sleep on the park word. A pusher that
 * finds us registered, or a waker that filled the inbox, sets the park word
 * before the futex wake, so no event falls between the checks and sleep. */
static void park_stream(struct coexec_xstream_rec *xs, struct coexec_sched_rec *s)
{
    struct sleeper nodes[MAX_SLEEP_POOLS];
    struct coexec_pool_rec *regp[MAX_SLEEP_POOLS];
    int n = 0;
    bool abort = false, partial = false;

    /* seq_cst: ordered before the inbox and pool checks below (Dekker with
     * coexec__xs_kick's exchange). */
    atom_store_sc_u32(&xs->park_word, 0);
    for (int i = 0; i < s->npools && !abort; i++) {
        struct coexec_pool_rec *p = s->pools[i];
        if (!p->shared) {
            if (atom_load_rlx_u64(&p->size))
                abort = true;
            continue;
        }
        nodes[n].xs = xs;
        if (!coexec__pool_sleep_register(p, &nodes[n]))
            abort = true;
        else
            regp[n++] = p;
    }
    if (s->steal && !abort) {
        unsigned ns = atom_load_acq_u32(&coexec__g.num_steal_pools);
        for (unsigned i = 0; i < ns && !abort; i++) {
            struct coexec_pool_rec *v = atom_load_acq_ptr(&coexec__g.steal_pools[i]);
            if (!v || own_pool(s, v))
                continue;
            if (n == MAX_SLEEP_POOLS) {
                partial = true;
                break;
            }
            nodes[n].xs = xs;
            if (!coexec__pool_sleep_register(v, &nodes[n]))
                abort = true;
            else
                regp[n++] = v;
        }
    }
    uint64_t next = xs_next_timer(xs);
    if (!abort && !xs_events_pending(xs) && !atom_load_sc_u32(&xs->stop) &&
        (next == UINT64_MAX || next > now_ns() + PARK_EARLY_NS)) {
        /* Too many victims to register on all: sleep in short slices. */
        struct timespec slice = {0, 1000000};
        struct timespec *ts = partial ? &slice : NULL;
        struct timespec until;
        if (next != UINT64_MAX) {
            until = clock_until(next - PARK_EARLY_NS);
            if (!ts || until.tv_sec < ts->tv_sec ||
                (until.tv_sec == ts->tv_sec && until.tv_nsec < ts->tv_nsec))
                ts = &until;
        }
        atom_store_rlx_u32(&xs->sleeping, 1);
        coexec__futex_wait(&xs->park_word, 0, ts);
        atom_store_rlx_u32(&xs->sleeping, 0);
    }
    for (int i = 0; i < n; i++)
        coexec__pool_sleep_unregister(regp[i], &nodes[i]);
}

void coexec__xs_kick(struct coexec_xstream_rec *xs)
{
    /* seq_cst: see park_stream. Only the first kick after a reset pays the
     * system call. */
    if (atom_xchg_sc_u32(&xs->park_word, 1) == 0)
        coexec__futex_wake(&xs->park_word, 1);
}

void coexec__xs_inbox_push(struct coexec_xstream_rec *xs,
                           struct coexec_unit_rec *u)
{
    void *head = atom_load_rlx_ptr(&xs->inbox);
    do {
        u->next = head;
        /* Release on success: the unit's fields travel with it. */
    } while (!atom_cas_sc_ptr(&xs->inbox, &head, u));
    coexec__xs_kick(xs);
}

void coexec__sched_run(struct coexec_xstream_rec *xs)
{
    struct coexec_sched_rec *s = xs->sched;
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
                coexec__xs_drain_events(xs);
                if (UNLIKELY(xs_next_timer(xs) != UINT64_MAX))
                    coexec__timers_run(xs, now_ns());
                s = xs->sched;
            }
            continue;
        }
        if (coexec__xs_drain_events(xs))
            continue;
        uint64_t next = xs_next_timer(xs);
        if (next != UINT64_MAX && next <= now_ns()) {
            coexec__timers_run(xs, now_ns());
            continue; /* run what they woke */
        }
        if (atom_load_acq_u32(&xs->stop) && pools_empty(s) &&
            !xs_events_pending(xs) && !xs->run_next &&
            xs_next_timer(xs) == UINT64_MAX)
            return;
        if (s->kind == COEXEC_SCHED_BASIC_WAIT) {
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

/* ---- public API ----------------------------------------------------------- */

COEXEC_API int coexec_sched_config_init(coexec_sched_config_t *cfg)
{
    if (!cfg)
        return COEXEC_EINVAL;
    cfg->size = sizeof *cfg;
    cfg->event_freq = 0;
    cfg->idle_spin_us = -1;
    cfg->steal = 0;
    return COEXEC_OK;
}

COEXEC_API int coexec_sched_create(coexec_sched_kind_t kind,
                                   const coexec_pool_t *pools, int num_pools,
                                   const coexec_sched_config_t *cfg,
                                   coexec_sched_t *out)
{
    if (!out || !pools)
        return COEXEC_EINVAL;
    RT_CHECK();
    if ((kind != COEXEC_SCHED_BASIC && kind != COEXEC_SCHED_BASIC_WAIT) ||
        num_pools < 1 || num_pools > SCHED_MAX_POOLS)
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
    if (cfg) {
        if (cfg->event_freq)
            ef = cfg->event_freq;
        if (cfg->idle_spin_us >= 0)
            spin = (uint64_t)cfg->idle_spin_us * 1000;
        steal = cfg->steal ? 1 : 0;
    }
    struct coexec_sched_rec *s = coexec__sched_new(kind, ps, num_pools, ef,
                                                   spin, steal);
    if (!s)
        return COEXEC_ENOMEM;
    s->user_created = 1;
    out->p = s;
    out->gen = atom_load_rlx_u64(&s->gen);
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
    if (atom_load_acq_u32(&sched->p->in_use))
        return COEXEC_EBUSY;
    if (sched->p->is_default)
        return COEXEC_EPERM;
    coexec__sched_release(sched->p);
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
