/*
 * src/sched/sched.h: the scheduler record and the stream's run loop.
 *
 * Room plaque. A scheduler is what its kind (BASIC, BASIC_WAIT, ...)
 * does, as data, an ordered array of pools, and its tuning. `in_use` is set while a stream runs it as its
 * main scheduler. The loop itself lives in src/sched/loop.c; what it runs
 * (and how units come back to it) lives in src/thread/.
 */
#ifndef COEXEC_SCHED_SCHED_H
#define COEXEC_SCHED_SCHED_H

#include "arch/atomic.h"
#include "pool/pool.h"
#include "thread/thread.h"

#define SCHED_MAX_POOLS 64

struct coexec_xstream_rec;

struct coexec_sched_rec {
    int npools;
    struct coexec_pool_rec *pools[SCHED_MAX_POOLS];
    /* What the scheduler's kind does, as data (set when the record is
     * made, from the kind's definition in sched.c): no run-time code asks
     * which kind a scheduler is. */
    /* The pool a yield may take the next unit from directly (it is what
     * this scheduler would pick), or NULL. */
    struct coexec_pool_rec *direct_pool;
    /* Its own choice of the next unit (PRIO: src/sched/prio.c), or NULL:
     * the first npop pools in order. */
    struct coexec_unit_rec *(*pick)(struct coexec_xstream_rec *xs,
                                    struct coexec_sched_rec *s);
    int npop;               /* the pools it pops (RANDWS: its first only) */
    /* Bit i: its start on a stream made that stream the owner of DEQUE
     * pools[i] (or counted it as one more user by the owner), which its
     * stop undoes (coexec__deque_set_owner and _drop_owner). */
    uint64_t dq_owned;
    uint8_t steal_empty;    /* steals when its pools are empty */
    uint8_t steals;         /* parks as a thief on its victims */
    uint8_t steal_registry; /* victims: the other streams' default pools
                               (else its own pools 1..) */
    uint8_t parks;          /* parks when idle (all but BASIC) */
    const char *name;       /* its kind's, for diagnostics */
    unsigned event_freq;
    uint64_t idle_spin_ns;
    unsigned aging;       /* PRIO */
    size_t stack_size;    /* stacked: its unit's stack */
    uint8_t is_default;   /* made by the runtime for a default setup */
    uint8_t user_created;
    uint8_t live; /* made and not yet released (under coexec__g.lock) */
    uint8_t has_ops;      /* a user scheduler: ops and ustate */
    /* 0 idle; SCHED_MAIN while a stream runs it as its main scheduler (or
     * is about to); SCHED_STACKED while it is a unit of a pool. */
    atom_u32_t in_use;
    atom_u32_t finish;    /* coexec_sched_finish was called */
    atom_u32_t idle;      /* stacked and parked for lack of work */
    atom_u64_t gen;
    coexec_sched_ops_t ops;
    void *ustate;
    /* Stacked: its unit, the pool it was added to, and while it runs, the
     * context of the scheduler level below it on that stream. */
    struct coexec_unit_rec *unit;
    struct coexec_pool_rec *parent_pool;
    void *psp;
    void *plo;
    size_t psize;
    void *pfiber;
    struct coexec_sched_rec *pcur;
    /* PRIO: pops each pool was passed over for (its running stream only). */
    uint32_t passed[SCHED_MAX_POOLS];
    struct coexec_sched_rec *free_next;
    struct coexec_sched_rec *all_next;
};

/* Does s take from p (one of its pools)? */
static inline bool sched_has_pool(const struct coexec_sched_rec *s,
                                  const struct coexec_pool_rec *p)
{
    for (int i = 0; i < s->npools; i++)
        if (s->pools[i] == p)
            return true;
    return false;
}

enum { SCHED_MAIN = 1, SCHED_STACKED = 2 };

struct coexec_sched_rec *coexec__sched_new(int kind,
                                           struct coexec_pool_rec **pools,
                                           int npools, unsigned event_freq,
                                           uint64_t idle_spin_ns, int steal);
void coexec__sched_release(struct coexec_sched_rec *s);
void coexec__sched_free_all(void);
int coexec__sched_count_user_live(void);

/* Runs xs's main scheduler until a stop request is honoured. */
void coexec__sched_run(struct coexec_xstream_rec *xs);
/* Has xs's running scheduler level something queued for it (in its pools,
 * events or run_next)? For a unit of xs deciding whether to yield. */
bool coexec__sched_has_work(struct coexec_xstream_rec *xs);

/* Fork-join work for idle streams, set by src/fj (an upward signal: data
 * the upper room fills). `open` counts the fork-join regions open in the
 * process; while it is not 0, a built-in main scheduler with no unit to
 * run calls steal(xs), which runs one stolen task and says whether it
 * found one, and does not park. */
struct coexec__sched_fj {
    atom_u32_t open;
    bool (*steal)(struct coexec_xstream_rec *xs);
};
extern struct coexec__sched_fj coexec__sched_fj;
/* Progress pollers (coexec/poller.h, src/sched/poller.c): how many are
 * registered (the loop's one load while none is), one round of them on
 * stream xs (true while one of those it called still waits for
 * operations: the stream then does not park), and the table's reset at
 * init. */
extern atom_u32_t coexec__pollers_n;
bool coexec__pollers_run(struct coexec_xstream_rec *xs);
void coexec__pollers_reset(void);
static inline bool pollers_any(void)
{
    return atom_load_rlx_u32(&coexec__pollers_n) != 0;
}
/* While a poller waits for operations (coexec__pollers_hot, thread/thread.h,
 * counts them),
 * a busy stream also calls the pollers between units, at most once every
 * POLL_BUSY_NS: communication keeps moving beside long compute units,
 * and a poller's call costs compute at most its share of that period. */
#define POLL_BUSY_NS 20000u
void coexec__pollers_run_busy(struct coexec_xstream_rec *xs);
static inline bool pollers_hot(void)
{
    return atom_load_rlx_u32(&coexec__pollers_hot) != 0;
}

/* Queues every unit woken through xs's mailbox (xs's own thread); true if
 * any. */
bool coexec__sched_drain_events(struct coexec_xstream_rec *xs);

/* Wakes the ULTs of xs that wait in coexec_xstream_set_main_sched for
 * its switch: once the switch is made (or the request dropped). */
void coexec__sched_req_wake(struct coexec_xstream_rec *xs);

/* Makes s the running main scheduler of xs: binds its pools to xs and
 * counts it as serving them. */
void coexec__sched_activate(struct coexec_sched_rec *s,
                            struct coexec_xstream_rec *xs);
/* The reverse; pools no running scheduler serves any more forward their
 * units to `to` when it is not NULL. */
void coexec__sched_deactivate(struct coexec_sched_rec *s,
                              struct coexec_xstream_rec *xs,
                              struct coexec_pool_rec *to);

/* Whether s takes from p, itself or through a scheduler stacked
 * (transitively) inside it. Takes coexec__g.lock. */
bool coexec__sched_reaches(struct coexec_sched_rec *s,
                           struct coexec_pool_rec *p);
/* The same, for a caller that holds coexec__g.lock. */
bool coexec__sched_reaches_locked(struct coexec_sched_rec *s,
                                  struct coexec_pool_rec *p);

/* fork, in the child (src/core/process.c): forgets every scheduler. */
void coexec__sched_atfork_child(void);

/* The timer keeper (src/sched/keeper.c). */
/* Init: the timer keeper, with no holder yet, hears of every heap's new
 * earliest timer. */
void coexec__timers_init(void);
/* An idle thread (stream self, or NULL: a service worker) about to sleep:
 * fires other streams' overdue timers and, if no other thread keeps them,
 * takes the keeper's role (*held): returns when to wake up at the latest
 * (UINT64_MAX: no limit). After the sleep, coexec__timers_unkeep, with
 * for_work when it leaves to run something. */
uint64_t coexec__timers_keep(struct coexec_xstream_rec *self, bool *held);
void coexec__timers_unkeep(struct coexec_xstream_rec *self, bool held,
                           bool for_work);
void coexec__timers_atfork_child(void);
/* Another kind of idle thread that may keep timers (the service stream's
 * workers): kick_idle wakes those that sleep, true if one did. NULL
 * unregisters. */
struct timer_helper {
    bool (*kick_idle)(void);
};
void coexec__timers_set_helper(const struct timer_helper *h);
#endif /* COEXEC_SCHED_SCHED_H */
