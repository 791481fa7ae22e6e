/*
 * coexec/pool.h: pools of ready units.
 *
 * Kinds: FIFO (oldest first) and LIFO (newest first). Whatever the kind, a
 * unit that yields is queued behind every other unit of its pool, so yield
 * is fair; stealing takes the unit the owner would take last (the oldest).
 *
 * PRIO: N priority levels (coexec_pool_config_t.levels, default 8). A unit
 * is queued at the level of its priority (coexec_unit_set_priority, clamped
 * to levels - 1; higher is more urgent) and pop serves the most urgent
 * non-empty level, FIFO within a level. Aging: a non-empty level that has
 * been passed over for `aging` pops (default 64) is served next, so no unit
 * starves under a constant stream of more urgent work. A thief takes the
 * oldest unit of the most urgent level (the unit whose wait matters most).
 *
 * DEQUE: a work-stealing deque. The stream whose scheduler uses it (its
 * owner) pushes and pops at one end without locked instructions on the
 * push; thieves (stealing schedulers, coexec_pool_steal) take from the
 * other end, one unit or, with steal_half, half of what is queued. Pushes
 * from other threads (remote wakes, creation from elsewhere) and yields go
 * to a side queue the owner serves too. Its access mode is MPMC by nature.
 *
 * USER: a pool whose operations the caller provides in a coexec_pool_ops_t
 * (coexec_pool_create_user). It may wrap built-in pools: inside its push
 * and pop operations, coexec_pool_push / coexec_pool_pop on an inner pool
 * keep the unit's home in the user pool.
 *
 * Access modes say who may push and pop: PRIV (one thread does both, with no
 * atomic read-modify-write at all), SPSC, MPSC, SPMC, MPMC. "Single" means
 * one thread for the life of the pool: the first thread that pushes (pops)
 * becomes the producer (consumer). In builds with COEXEC_CHECKS (Debug), a
 * push or pop from a thread the mode forbids returns COEXEC_EACCESS and
 * leaves the pool unchanged; without checks it is undefined.
 *
 * A query through a pool handle (the get_ calls) may race with the
 * free of that pool on another thread and the reuse of its record: it
 * answers for the pool the handle names, or COEXEC_EHANDLE, never for
 * the next one.
 */
#ifndef COEXEC_POOL_H
#define COEXEC_POOL_H

#include <stddef.h>

#include "defs.h"
#include "types.h"

/* The kinds of pool (see the top of this file). */
typedef enum coexec_pool_kind {
    COEXEC_POOL_FIFO = 0,  /* oldest unit first */
    COEXEC_POOL_LIFO = 1,  /* newest unit first */
    COEXEC_POOL_PRIO = 2,  /* priority levels with aging */
    COEXEC_POOL_DEQUE = 3, /* a work-stealing deque */
    COEXEC_POOL_USER = 4   /* reported by get_info; made by _create_user */
} coexec_pool_kind_t;

/*
 * Who may push into and pop from a pool (S: one thread, M: any number).
 * PRIV: one thread does both. In builds with COEXEC_CHECKS a "single" side
 * belongs to the first thread that uses it through the API, except that a
 * stream whose scheduler runs the pool takes its consumer side (and a PRIV
 * pool's producer side) when that scheduler starts there, and lets them go
 * when no scheduler runs the pool any more; a call from another thread is
 * COEXEC_EACCESS. Without checks the modes are not enforced.
 */
typedef enum coexec_pool_access {
    COEXEC_ACCESS_PRIV = 0, /* one thread pushes and pops */
    COEXEC_ACCESS_SPSC = 1, /* one producer, one consumer */
    COEXEC_ACCESS_MPSC = 2, /* any producers, one consumer */
    COEXEC_ACCESS_SPMC = 3, /* one producer, any consumers */
    COEXEC_ACCESS_MPMC = 4  /* any producers, any consumers */
} coexec_pool_access_t;

/* Tuning of coexec_pool_create_ex. */
typedef struct coexec_pool_config {
    size_t size;      /* sizeof(coexec_pool_config_t); set by _init */
    int levels;       /* PRIO: priority levels, 1..64 (default 8) */
    unsigned aging;   /* PRIO: pops a waiting level may be passed over
                         (default 64; 0 = strict priority, no aging) */
    int steal_half;   /* DEQUE: a steal takes half the queued units */
} coexec_pool_config_t;

/* Why a unit is pushed (the hint a user pool's push receives). */
typedef enum coexec_push_kind {
    COEXEC_PUSH_NEW = 0,   /* created, or pushed by coexec_pool_push */
    COEXEC_PUSH_YIELD = 1, /* it yielded: serve the others first */
    COEXEC_PUSH_WAKE = 2   /* it was parked and has been woken */
} coexec_push_kind_t;

/*
 * The operations of a user-defined pool. Units are handed over as handles;
 * the pool stores them however it likes and must itself be as thread-safe
 * as its access mode says (the runtime takes no lock around these calls).
 * The functions run on the calling unit's or scheduler's stack and must not
 * block or switch. Optional entries may be NULL.
 */
typedef struct coexec_pool_ops {
    size_t size; /* sizeof(coexec_pool_ops_t): lets the table grow */
    /* Optional: makes the pool's state (*state) from arg; non-zero fails
     * coexec_pool_create_user with that code. */
    int (*init)(coexec_pool_t pool, void *arg, void **state);
    /* Optional: frees the state (the pool is empty). */
    void (*free)(void *state);
    /* Required: queues unit. */
    void (*push)(void *state, coexec_unit_t unit, coexec_push_kind_t kind);
    /* Required: takes the next unit, or returns the null handle. */
    coexec_unit_t (*pop)(void *state);
    /* Optional: takes up to max units into out; returns how many. */
    size_t (*pop_many)(void *state, coexec_unit_t *out, size_t max);
    /* Optional: takes unit out if it is queued here; 1 if it did. A pool
     * without remove never lets a joiner run a queued unit in place. */
    int (*remove)(void *state, coexec_unit_t unit);
    /* Required: the number of queued units. */
    size_t (*get_size)(void *state);
    /* Optional: takes a unit for another stream (thieves); NULL: thieves
     * never take from this pool. */
    coexec_unit_t (*steal)(void *state);
} coexec_pool_ops_t;

COEXEC_BEGIN_DECLS

/*
 * Fills cfg with the defaults (8 levels, aging 64, steal one).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL if cfg is NULL.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_pool_config_init(coexec_pool_config_t *cfg);

/*
 * Creates an empty pool.
 * Context: any thread while the runtime runs. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (bad kind or access, out NULL);
 * COEXEC_ENOMEM; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_create(coexec_pool_kind_t kind,
                                                   coexec_pool_access_t access,
                                                   coexec_pool_t *out);

/*
 * Creates an empty pool of any built-in kind (FIFO, LIFO, PRIO, DEQUE) with
 * its tuning; cfg may be NULL (defaults). A DEQUE pool is always MPMC.
 * Context: any thread while the runtime runs. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (bad kind, access or cfg field, out
 * NULL); COEXEC_ENOMEM; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_pool_create_ex(coexec_pool_kind_t kind, coexec_pool_access_t access,
                      const coexec_pool_config_t *cfg, coexec_pool_t *out);

/*
 * Creates a user-defined pool driven by ops (copied; ops->size tells which
 * entries the caller knows of). arg goes to ops->init. The access mode is
 * checked by the runtime (debug builds) like a built-in pool's.
 * Context: any thread while the runtime runs. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (ops or out NULL, ops->size too small,
 * push/pop/get_size missing, bad access); COEXEC_ENOMEM; what ops->init
 * returned; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_pool_create_user(const coexec_pool_ops_t *ops,
                        coexec_pool_access_t access, void *arg,
                        coexec_pool_t *out);

/*
 * The state a user pool's init made (NULL for built-in pools).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (out NULL); COEXEC_EHANDLE;
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_get_data(coexec_pool_t pool,
                                                     void **out);

/*
 * Frees an empty pool that no scheduler uses and no unit calls home, and
 * clears *pool. A unit's home is the pool it goes back to when it yields or
 * is woken: a unit running or parked keeps the pool busy as much as a
 * queued one. (The check looks at every unit descriptor: a free costs
 * time in proportion to the units the runtime has made.)
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (NULL); COEXEC_EHANDLE; COEXEC_EPERM
 * (a stream's default pool: it goes with its stream); COEXEC_EBUSY (units
 * queued, an unfinished unit running or parked with it as its home, or a
 * scheduler uses it); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_free(coexec_pool_t *pool);

/*
 * Queues a ready unit that belongs to no pool (one just popped, or one
 * created into no pool) into pool; it becomes the unit's home pool.
 * Context: any thread the access mode allows. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EHANDLE (bad pool or unit); COEXEC_ESTATE (the
 * unit is queued, running, parked or finished); COEXEC_EPERM (a stream's
 * main ULT, which stays on its stream, unless a user scheduler popped it:
 * then it may be queued again, and only its own stream takes it);
 * COEXEC_EACCESS; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_push(coexec_pool_t pool,
                                                 coexec_unit_t unit);

/*
 * Takes the next unit out of pool. The unit is then in no pool: the caller
 * owns it until it pushes it into a pool again, runs it (a user
 * scheduler's coexec_sched_run_unit) or joins it (then it runs in place).
 * Others' joins wait meanwhile; whoever gives it a home first, a push, a
 * run or a migration, has it, and the others get COEXEC_ESTATE. *out is
 * the null handle when the pool is empty. A user-defined pool's pop is
 * called every time, even when the runtime counts no unit in it (a
 * scheduler's own pops skip a pool that looks empty).
 * Context: any thread the access mode allows. Switches: never.
 * Returns: COEXEC_OK (also when empty); COEXEC_EINVAL; COEXEC_EHANDLE;
 * COEXEC_EACCESS; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_pop(coexec_pool_t pool,
                                                coexec_unit_t *out);

/*
 * Takes a unit from pool for the calling stream the way a thief does (the
 * end the owner reaches last; pinned units are never taken). *out is the
 * null handle when there is nothing to take or the pool cannot be stolen
 * from. The unit then belongs to no pool, as after coexec_pool_pop.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK (also when nothing was taken); COEXEC_EINVAL;
 * COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_steal(coexec_pool_t pool,
                                                  coexec_unit_t *out);

/*
 * Takes unit out of pool, where it is queued, as coexec_pool_pop would
 * have taken it: a unit that has not started yet, or one that ran and was
 * queued again (a ULT that yielded, a tasklet woken after PENDING). The
 * caller then owns it until it pushes it into a pool again or runs it (a
 * user scheduler's coexec_sched_run_unit); a join of a unit that has not
 * started runs it in place, a join of one that has waits for that push
 * or run. A user-defined pool's ops.remove decides for it; a
 * work-stealing deque finds a unit only near its ends (COEXEC_ESTATE
 * otherwise, with the unit left where it is).
 * Context: any thread the access mode allows (a private pool's owner
 * stream only). Switches: never.
 * Returns: COEXEC_OK; COEXEC_ESTATE (unit is not queued in pool: running,
 * parked, finished, queued elsewhere or taken meanwhile); COEXEC_ENOSYS (a
 * user-defined pool without ops.remove); COEXEC_EHANDLE (bad pool or
 * unit, or a watched tasklet's unit that ended meanwhile: a later unit in
 * its descriptor is never taken for it); COEXEC_EACCESS; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_remove(coexec_pool_t pool,
                                                   coexec_unit_t unit);

/*
 * Calls fn(arg, unit) for each unit queued in pool, in the order pops take
 * them (a PRIO pool: most urgent level first, oldest first in a level),
 * holding the pool's lock: fn must not block, nor push into, take from or
 * free this pool (that would deadlock), and should be short. A
 * work-stealing deque lists only the units queued into it from other
 * streams (its side queue): the ones its owner pushed are popped and
 * stolen without the lock, so they cannot be listed safely. For
 * inspection and printing (it changes nothing).
 * Context: any thread (a private pool: its owner stream only). Switches:
 * never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (fn NULL); COEXEC_ENOSYS (a
 * user-defined pool, which lists its own units); COEXEC_EHANDLE;
 * COEXEC_EACCESS; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_pool_foreach(coexec_pool_t pool,
                    void (*fn)(void *arg, coexec_unit_t unit), void *arg);

/*
 * Makes sched a unit of pool: when a scheduler pops it, sched runs (on that
 * stream, on a stack of its own) until its pools are empty or event_freq
 * units have run, then yields back to the scheduler that ran it. It
 * finishes, and leaves pool for good, once coexec_sched_finish was called
 * (or the stream it runs on is asked to stop) and its pools are empty.
 * A scheduler is a unit of one pool at a time and may not be a stream's
 * main scheduler meanwhile.
 * Context: any thread the access mode allows. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EHANDLE (bad pool or sched); COEXEC_EBUSY
 * (sched in use); COEXEC_EINVAL (pool is one of sched's own pools, or of a
 * scheduler stacked under sched: it would run inside itself);
 * COEXEC_EACCESS; COEXEC_ENOMEM; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_add_sched(coexec_pool_t pool,
                                                      coexec_sched_t sched);

/*
 * The number of units queued in pool (a snapshot when others push or pop).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (size NULL); COEXEC_EHANDLE;
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_get_size(coexec_pool_t pool,
                                                     size_t *size);

/*
 * The kind and access mode pool was created with (either pointer may be
 * NULL).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_pool_get_info(coexec_pool_t pool, coexec_pool_kind_t *kind,
                     coexec_pool_access_t *access);

COEXEC_END_DECLS

#endif /* COEXEC_POOL_H */
