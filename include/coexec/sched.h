/*
 * coexec/sched.h: schedulers.
 *
 * BASIC takes from its pools in order (the first non-empty pool wins, so
 * pool 0 has the highest priority) and spins when they are all empty.
 * BASIC_WAIT does the same, but when every pool stays empty for the spin
 * budget it parks on a futex; a push into any of its pools, from any thread,
 * wakes it, so an idle stream burns no CPU.
 *
 * PRIO serves its pools in order too, but a non-empty pool that has been
 * passed over for `aging` units (coexec_sched_config_t, default 64) is
 * served next, so a low-priority pool never starves. It parks like
 * BASIC_WAIT.
 *
 * RANDWS is the work-stealing scheduler: it pops from its first pool; when
 * that is empty it steals from its other pools, picked at random, nearer
 * victims first where the hardware topology has levels (same core, then
 * same cache, then same NUMA node, then the rest); with only one pool it
 * steals from the default pools of the other streams the same way. It
 * parks like BASIC_WAIT when nothing can be found.
 *
 * With stealing on, a BASIC/BASIC_WAIT/PRIO scheduler whose pools are empty
 * takes the oldest unit from the default pools of the other streams (the
 * default setup turns it on; from a PRIO pool, the oldest of its most
 * urgent level). Pinned units are never stolen, and a parked stealing
 * scheduler is woken by a push into a victim only when the unit pushed is
 * one it may take. Every
 * event_freq iterations the scheduler checks its stream's events (remote
 * wakes, timers, progress pollers, stop and replacement requests).
 *
 * User-defined schedulers provide a coexec_sched_ops_t. Their run function
 * is the loop: it takes units with coexec_sched_pop (or any pool call),
 * runs them with coexec_sched_run_unit, calls coexec_sched_check_events
 * every so often and returns once coexec_sched_has_to_stop says so. The
 * same run function works as a stream's main scheduler and stacked in a
 * pool (coexec_pool_add_sched).
 *
 * A query through a scheduler handle (the get_ calls) may race with the
 * free of that scheduler on another thread and the reuse of its record: it
 * answers for the scheduler the handle names, or COEXEC_EHANDLE, never for
 * the next one.
 */
#ifndef COEXEC_SCHED_H
#define COEXEC_SCHED_H

#include "defs.h"
#include "runtime.h"
#include "types.h"

/* coexec_sched_config_t.aging: a PRIO scheduler that never ages. */
#define COEXEC_SCHED_AGING_NONE 0xffffffffu

/* Tuning of coexec_sched_create and coexec_sched_create_user;
 * coexec_sched_config_init fills the defaults. */
typedef struct coexec_sched_config {
    size_t size;           /* sizeof(coexec_sched_config_t); set by _init */
    unsigned event_freq;   /* 0 = the runtime's configuration */
    int idle_spin_us;      /* BASIC_WAIT spin budget; -1 = the runtime's */
    int steal;             /* 1 = steal from other streams' default pools */
    unsigned aging;        /* PRIO: units a waiting pool may be passed over
                              (0 = the default, 64;
                              COEXEC_SCHED_AGING_NONE: strict priority, a
                              lower pool runs only when every higher one
                              is empty) */
    size_t stack_size;     /* stack of a stacked scheduler; 0 = 64 KiB */
} coexec_sched_config_t;

/*
 * The operations of a user-defined scheduler (see the top of this file).
 * Optional entries may be NULL.
 */
typedef struct coexec_sched_ops {
    size_t size; /* sizeof(coexec_sched_ops_t): lets the table grow */
    /* Optional: makes the scheduler's state from arg; non-zero fails
     * coexec_sched_create_user with that code. */
    int (*init)(coexec_sched_t sched, void *arg, void **state);
    /* Required: the loop; returns when coexec_sched_has_to_stop says so. */
    void (*run)(coexec_sched_t sched, void *state);
    /* Optional: frees the state. */
    void (*free)(void *state);
    /* Optional: the pool units migrating to this scheduler's stream go to
     * (default: its first pool). */
    coexec_pool_t (*get_migr_pool)(coexec_sched_t sched, void *state);
} coexec_sched_ops_t;

COEXEC_BEGIN_DECLS

/*
 * Fills cfg with the defaults (runtime's event_freq and spin budget, no
 * stealing).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL if cfg is NULL.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_sched_config_init(coexec_sched_config_t *cfg);

/*
 * Creates a scheduler of a built-in kind (BASIC, BASIC_WAIT, PRIO, RANDWS)
 * over num_pools pools (1..64), taken in the order given. cfg may be NULL (defaults). A pool may serve several
 * schedulers if its access mode allows several consumers.
 * Context: any thread while the runtime runs. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (bad kind, pools NULL, num_pools out of
 * range, cfg->size too small or cfg->stack_size outside 16 KiB..1 GiB, out
 * NULL); COEXEC_EHANDLE (a bad pool); COEXEC_ENOMEM; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_sched_create(coexec_sched_kind_t kind, const coexec_pool_t *pools,
                    int num_pools, const coexec_sched_config_t *cfg,
                    coexec_sched_t *out);

/*
 * Creates a user-defined scheduler over num_pools pools (1..64) driven by
 * ops (copied). cfg may be NULL; arg goes to ops->init.
 * Context: any thread while the runtime runs. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (ops, pools or out NULL, ops->size too
 * small, run missing, num_pools out of range, a bad cfg as for
 * coexec_sched_create); COEXEC_EHANDLE (a bad pool); COEXEC_ENOMEM; what
 * ops->init returned; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_sched_create_user(const coexec_sched_ops_t *ops,
                         const coexec_pool_t *pools, int num_pools,
                         const coexec_sched_config_t *cfg, void *arg,
                         coexec_sched_t *out);

/*
 * The state a user scheduler's init made (NULL for built-in kinds).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sched_get_data(coexec_sched_t sched,
                                                      void **out);

/* ---- for the run function of a scheduler ------------------------------- */

/*
 * Takes the next unit from the scheduler's pool idx; *out is the null handle
 * when it is empty. The unit keeps that pool as its home (where it goes
 * back when it yields or is woken).
 * Context: sched's own loop. Switches: never.
 * Returns: COEXEC_OK (also when empty); COEXEC_EINVAL (out NULL, idx out of
 * range); COEXEC_EHANDLE; COEXEC_ECONTEXT (not sched's loop);
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sched_pop(coexec_sched_t sched, int idx,
                                                 coexec_unit_t *out);

/*
 * Runs unit (taken out of its pool by coexec_sched_pop, coexec_pool_pop or
 * coexec_pool_steal) until it yields, parks or finishes; a stream's main
 * ULT too, on its own stream. A unit that was in no pool gets sched's
 * first pool as its home.
 * Context: sched's own loop. Switches: to the unit and back.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_ESTATE (the unit is queued,
 * running, parked or finished); COEXEC_EPERM (a unit bound to another
 * stream); COEXEC_ECONTEXT; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sched_run_unit(coexec_sched_t sched,
                                                      coexec_unit_t unit);

/*
 * Lets the stream handle its events: as a main scheduler, queues the units
 * woken from other streams, fires due timers and calls the progress
 * pollers (coexec/poller.h); stacked in a pool, yields
 * back to the parent scheduler (which does that) and returns when run
 * again, possibly on another stream.
 * Context: sched's own loop. Switches: when stacked.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_ECONTEXT; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sched_check_events(coexec_sched_t sched);

/*
 * *stop = 1 when sched's loop must return: its pools are empty and its
 * stream is stopping or coexec_sched_finish was called, or (a main
 * scheduler) coexec_xstream_set_main_sched replaced it.
 * Context: sched's own loop. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ECONTEXT;
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sched_has_to_stop(coexec_sched_t sched,
                                                         int *stop);

/*
 * Parks the stream of sched's loop until a unit is pushed into one of its
 * pools, an event arrives or (nearly) a timer is due; returns at once if
 * any of that is already there, and without parking while a progress
 * poller (coexec/poller.h) it called still waits for operations. For user
 * schedulers that found no work.
 * Context: a main scheduler's loop (stacked: yields back like
 * check_events). Switches: may sleep on a futex.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_ECONTEXT; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sched_idle(coexec_sched_t sched);

/*
 * Asks a stacked scheduler to finish once its pools are empty.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_ESTATE (sched is not stacked in a pool: a
 * main scheduler stops with its stream, or when replaced); COEXEC_EHANDLE;
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sched_finish(coexec_sched_t sched);

/*
 * The scheduler whose loop (or unit) the caller is running under: the
 * innermost stacked scheduler, or the stream's main scheduler.
 * Context: a ULT, tasklet or scheduler. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_ECONTEXT (external thread);
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sched_self(coexec_sched_t *out);

/*
 * Frees a scheduler no stream uses and clears *sched. Its pools stay.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EPERM (a
 * stream's default scheduler: it goes with its stream); COEXEC_EBUSY (a
 * stream runs it, or it is stacked in a pool); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sched_free(coexec_sched_t *sched);

/*
 * The number of pools of sched, and the pool at index idx.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (NULL out, idx out of range);
 * COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sched_get_num_pools(coexec_sched_t sched,
                                                           int *num);
COEXEC_API COEXEC_NODISCARD int coexec_sched_get_pool(coexec_sched_t sched,
                                                      int idx,
                                                      coexec_pool_t *out);

COEXEC_END_DECLS

#endif /* COEXEC_SCHED_H */
