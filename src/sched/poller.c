/*
 * src/sched/poller.c: progress pollers (coexec/poller.h): a fixed table of
 * functions the scheduler loop calls when idle and at its event checks.
 *
 * A slot is taken under the runtime lock and published by `live` (release);
 * a stream claims it for one call by swapping `busy` to 1, checks `live`
 * again (an unregister may have come between), calls, and clears `busy`;
 * a stream that finds it taken leaves a mark the caller sees (poll_slot).
 * Unregister clears `live`, changes the generation, then claims `busy`
 * (waiting out a call in progress) to clear the slot's `hot` mark: after it
 * returns, no stream is in or enters the function. A
 * slot is reused only when neither flag is set. `n` counts the live slots:
 * the loop's only cost while no poller is registered is a load of it.
 */
#include <sched.h>

#include "arch/clock.h"
#include "base/global.h"
#include "base/self.h"
#include "sched/sched.h"
#include "xstream/xstream.h"

struct coexec_poller_rec {
    atom_u64_t gen;  /* the live handle's generation */
    atom_u32_t live; /* registered */
    atom_u32_t busy; /* a stream is calling fn */
    atom_u32_t again; /* streams that found it busy (poll_slot) */
    coexec_poller_fn_t fn;
    void *arg;
    /* The one stream that calls it, as rank + 1, or 0: any. Atomic: read
     * before the slot is claimed, so maybe while a register rewrites it. */
    atom_u32_t on;
    /* Its last answer was "waiting", counted in coexec__pollers_hot. Read
     * and written only by the holder of `busy`. */
    bool hot;
};

atom_u32_t coexec__pollers_n;
static struct coexec_poller_rec slots[COEXEC_POLLER_MAX];
/* The slot whose function the calling thread is in (unregister from it). */
static __thread struct coexec_poller_rec *in_fn;

/* Sets s's `hot` to h, keeping the count (the caller holds `busy`). */
static void set_hot(struct coexec_poller_rec *s, bool h)
{
    if (s->hot == h)
        return;
    s->hot = h;
    if (h)
        atom_fadd_rlx_u32(&coexec__pollers_hot, 1);
    else
        atom_fsub_rlx_u32(&coexec__pollers_hot, 1);
}

/* Calls slot s's function if this stream may and nobody else is: 1 if it
 * still waits for operations (or must be called again), else 0.
 *
 * A stream that finds the poller taken may park (it returns 0), so the
 * stream calling it must learn that it came, in case the work this stream
 * would have found arrived after the call had looked: the late one counts
 * itself in `again` and then looks at `busy` again; the caller notes
 * `again` before its call and compares after its release. Every access of
 * the two is sequentially consistent: either the caller sees the count
 * change (and answers 1: its stream polls again, awake), or the late one
 * sees `busy` released and tries again. */
static int poll_slot(struct coexec_poller_rec *s, int rank)
{
    if (!atom_load_acq_u32(&s->live))
        return 0;
    uint32_t on = atom_load_rlx_u32(&s->on);
    if (on != 0 && on != (uint32_t)rank + 1)
        return 0;
    while (atom_xchg_sc_u32(&s->busy, 1) != 0) {
        atom_fadd_sc_u32(&s->again, 1);
        if (atom_load_sc_u32(&s->busy))
            return 0; /* its caller sees `again` change */
    }
    uint32_t seen = atom_load_sc_u32(&s->again);
    bool pending = false;
    if (atom_load_acq_u32(&s->live)) {
        in_fn = s;
        pending = s->fn(s->arg) > 0;
        in_fn = NULL;
    }
    /* Unregistered before or during the call (by fn itself): not hot. */
    set_hot(s, pending && atom_load_acq_u32(&s->live));
    atom_store_sc_u32(&s->busy, 0);
    return pending || atom_load_sc_u32(&s->again) != seen;
}

void coexec__pollers_run_busy(struct coexec_xstream_rec *xs)
{
    uint64_t now = clock_now_ns();
    if (now < xs->poll_at)
        return;
    xs->poll_at = now + POLL_BUSY_NS;
    coexec__pollers_run(xs);
}

bool coexec__pollers_run(struct coexec_xstream_rec *xs)
{
    int rank = xs_rank_of(xs), pending = 0;
    for (int i = 0; i < COEXEC_POLLER_MAX; i++)
        pending |= poll_slot(&slots[i], rank);
    return pending != 0;
}

void coexec__pollers_reset(void)
{
    for (int i = 0; i < COEXEC_POLLER_MAX; i++) {
        atom_store_rlx_u32(&slots[i].live, 0);
        atom_store_rlx_u32(&slots[i].busy, 0);
        slots[i].hot = false;
    }
    atom_store_rlx_u32(&coexec__pollers_hot, 0);
    atom_store_rel_u32(&coexec__pollers_n, 0);
}

COEXEC_API int coexec_poller_register(coexec_poller_fn_t fn, void *arg,
                                      int rank, coexec_poller_t *out)
{
    if (!fn || !out || rank < COEXEC_POLLER_ANY_XSTREAM || rank >= MAX_XSTREAMS)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = COEXEC_EAGAIN;
    pthread_mutex_lock(&coexec__g.lock);
    for (int i = 0; i < COEXEC_POLLER_MAX; i++) {
        struct coexec_poller_rec *s = &slots[i];
        if (atom_load_rlx_u32(&s->live) || atom_load_acq_u32(&s->busy))
            continue;
        uint64_t g = atom_load_rlx_u64(&s->gen);
        g = handle_epoch_ok(g) ? gen_next(g) : gen_first();
        s->fn = fn;
        s->arg = arg;
        atom_store_rlx_u32(&s->on, (uint32_t)(rank + 1));
        atom_store_rlx_u64(&s->gen, g);
        atom_store_rel_u32(&s->live, 1);
        atom_fadd_sc_u32(&coexec__pollers_n, 1);
        *out = (coexec_poller_t){s, g};
        rc = COEXEC_OK;
        break;
    }
    pthread_mutex_unlock(&coexec__g.lock);
    return rc;
}

/* COEXEC_OK if p names a live slot. Lock-free: a slot reused since p was
 * handed out has another generation. */
static int check_live(coexec_poller_t p)
{
    if (CHECK_HANDLE(p) != 0 || !atom_load_acq_u32(&p.p->live))
        return COEXEC_EHANDLE;
    return COEXEC_OK;
}

COEXEC_API int coexec_poller_unregister(coexec_poller_t *p)
{
    if (!p)
        return COEXEC_EINVAL;
    RT_CHECK();
    pthread_mutex_lock(&coexec__g.lock);
    int rc = check_live(*p);
    struct coexec_poller_rec *s = p->p;
    if (rc == COEXEC_OK) {
        atom_store_rel_u32(&s->live, 0);
        atom_store_rel_u64(&s->gen, gen_next(p->gen));
        atom_fsub_rlx_u32(&coexec__pollers_n, 1);
    }
    pthread_mutex_unlock(&coexec__g.lock);
    if (rc != COEXEC_OK)
        return rc;
    /* From its own function: the call settles `hot` as it returns.
     * Otherwise claim the slot: a call in progress ends first, and after
     * it live == 0 keeps streams out; then settle `hot`. */
    if (in_fn != s) {
        while (atom_xchg_sc_u32(&s->busy, 1) != 0)
            sched_yield();
        set_hot(s, false);
        atom_store_sc_u32(&s->busy, 0);
    }
    *p = (coexec_poller_t){NULL, 0};
    return COEXEC_OK;
}

COEXEC_API int coexec_poller_check(coexec_poller_t p)
{
    RT_CHECK();
    return check_live(p);
}
