/*
 * src/sched/idle.c: a stream with nothing to run: whether it has work,
 * registering as a sleeper on the pools it takes from (as a thief on its
 * victims), parking on its park word, and the units its mailbox woke.
 */
#include <time.h>

#include "arch/clock.h"
#include "sched/loop.h"
#include "thread/thread.h"
#include "thread/tool.h"

struct coexec__sched_fj coexec__sched_fj;

bool coexec__sched_has_work(struct coexec_xstream_rec *xs)
{
    return !pools_empty(xs->cur_sched) || xs_events_pending(xs) ||
           xs->run_next;
}

/* The kernel ends a timed sleep late (tens of microseconds on a VM, even
 * with the timer slack at 1 ns): a stream with a timer due parks until this
 * long before it, then spins to it. */
#define PARK_EARLY_NS 100000ull

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
void coexec__sched_sleep_register(struct coexec_xstream_rec *xs,
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
    if (r->abort || !s->steals || (!unit && !thief))
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

void coexec__sched_sleep_unregister(struct sleep_reg *r)
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
void coexec__sched_park_stream(struct coexec_xstream_rec *xs, struct coexec_sched_rec *s)
{
    struct sleep_reg r;

    /* Before the inbox and pool checks below (base/parker.h). */
    parker_reset(&xs->mb.park);
    coexec__sched_sleep_register(xs, NULL, s, &r);
    uint64_t next = xs_next_timer(xs);
    /* A region opened after the loop looked kicks a parked thief: we are
     * one now (registered above, under the set's lock), or we see it. */
    if (!r.abort && !xs_events_pending(xs) && !atom_load_sc_u32(&xs->stop) &&
        !atom_load_sc_ptr(&xs->sched_req) &&
        !atom_load_sc_u32(&coexec__sched_fj.open) &&
        (next == UINT64_MAX || next > now_ns() + PARK_EARLY_NS)) {
        /* Idle: keep the timers of busy streams too (keeper.c). */
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
        uint64_t t0 = now_ns();
        TOOL_EVENT(COEXEC_TOOL_XSTREAM_PARK, xs, NULL, NULL);
        parker_sleep(&xs->mb.park, ts);
        TOOL_EVENT(COEXEC_TOOL_XSTREAM_UNPARK, xs, NULL, NULL);
        stat_add(&xs->count[XC_PARKED_NS], now_ns() - t0);
        /* A kick is work (or a stop) unless it came from a timer add. */
        coexec__timers_unkeep(xs, held, parker_kicked(&xs->mb.park));
    }
    coexec__sched_sleep_unregister(&r);
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
