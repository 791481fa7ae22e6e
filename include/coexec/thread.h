/*
 * coexec/thread.h: user-level threads (ULTs) and tasklets.
 *
 * A ULT has its own stack: it may yield, join, suspend and be resumed. Its
 * stack is taken from the stream's cache the first time it runs, so a ULT
 * that has not started holds none. A tasklet has no stack: its function runs
 * on the scheduler's stack and returns COEXEC_READY when done (or
 * COEXEC_PENDING after storing its waker, to be polled again once woken; see
 * coexec/waker.h). Tasklets may not block: yield, join, suspend and the
 * blocking waits return COEXEC_ECONTEXT when called from one.
 *
 * Joining a unit that has not started runs it at once, in place, on the
 * joiner's turn. Joining a finished unit never suspends. A unit created with
 * a NULL handle pointer is detached: it is freed when it finishes.
 *
 * Units keep their descriptor until freed: a joinable unit must be freed with
 * coexec_thread_free / coexec_tasklet_free (which join first if needed).
 *
 * A query through a handle (the get_ calls, coexec_unit_is_thread) may race
 * with a free of the same unit on another thread, whose descriptor is then
 * reused for another unit at once: it answers for the unit the handle names
 * as it was during the call, or COEXEC_EHANDLE, never for the next unit. A
 * call that changes a unit (the set_ calls, resume, migrate) must not race
 * with its free: after the free it is COEXEC_EHANDLE, but during it the
 * change may land on the descriptor's next unit.
 */
#ifndef COEXEC_THREAD_H
#define COEXEC_THREAD_H

#include <stddef.h>
#include <stdint.h>

#include "defs.h"
#include "types.h"

/* The life of a unit, as coexec_thread_get_state and
 * coexec_tasklet_get_state report it. */
typedef enum coexec_unit_state {
    COEXEC_UNIT_READY = 0,     /* created or queued, waiting to run */
    COEXEC_UNIT_RUNNING = 1,   /* running on some xstream */
    COEXEC_UNIT_BLOCKED = 2,   /* suspended, parked or waiting in a join */
    COEXEC_UNIT_TERMINATED = 3 /* its function has returned */
} coexec_unit_state_t;

/* Fills a new unit's data area (coexec_config_t.unit_data_size) before the
 * unit is queued: called once, by the creating call, on the creating
 * thread, with the area and the ctx given with it. It must not call into
 * the runtime with the new unit (it has no handle yet). */
typedef void (*coexec_data_init_fn)(void *data, void *ctx);

/* Attributes of a new ULT (coexec_thread_create and the other creators);
 * coexec_thread_attr_init fills the defaults. */
typedef struct coexec_thread_attr {
    size_t size;       /* sizeof(coexec_thread_attr_t); set by _init */
    size_t stack_size; /* 0 = the runtime's stack size */
    void *stack;       /* a stack the caller provides (stack_size bytes,
                          16-byte aligned, kept alive until the ULT is freed),
                          or NULL. The runtime puts no guard below it: its
                          lowest 8 bytes hold a canary, checked whenever the
                          ULT switches out or finishes; an overwritten one
                          prints "coexec: stack overflow in ULT N ..." and
                          aborts. Give such a stack a guard of your own
                          (mprotect) to stop an overflow at once. */
    int priority;      /* PRIO pools: higher is more urgent (default 0) */
    int pinned;        /* 1 = never stolen nor migrated (default 0) */
    const char *name;  /* a name for traces and tools (copied; default
                          NULL: none) */
    /* Called on the new ULT's data area before it is queued, with
     * data_ctx (default NULL: the area is left as it is). The creation
     * fails with COEXEC_ENOENT when units have no data area
     * (coexec_config_t.unit_data_size 0). */
    coexec_data_init_fn data_init;
    void *data_ctx;    /* data_init's second argument (default NULL) */
} coexec_thread_attr_t;

/* Where a ULT's stack is, as coexec_thread_get_stack reports it. */
typedef struct coexec_stack_info {
    void *base;        /* lowest address of the usable stack, or NULL while
                          the ULT has none (a runtime-owned stack is taken
                          when the ULT first runs and given back when it
                          finishes) */
    size_t size;       /* usable bytes from base (what the ULT has or will
                          have; for the primary's main ULT, the OS
                          thread's stack as far as it is known) */
    size_t guard_size; /* bytes right below base that the runtime made
                          inaccessible (cfg.guard_size); 0 for a stack of
                          the user's and for the main ULT's */
    int user_stack;    /* 1: the stack is the caller's (attr.stack) */
} coexec_stack_info_t;

COEXEC_BEGIN_DECLS

/* ---- ULTs ---------------------------------------------------------------- */

/*
 * Fills attr with the defaults (runtime stack size, runtime-owned stack).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL if attr is NULL.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_thread_attr_init(coexec_thread_attr_t *attr);

/*
 * Creates a ULT running fn(arg) and queues it into pool. attr may be NULL.
 * out NULL makes the ULT detached; otherwise *out is written before the
 * ULT is queued, so the ULT itself, or a stream that takes it from the
 * pool, may read the handle from memory it shares with the creator. Its stack is taken when it first runs:
 * a runtime-owned stack has a guard region below it (cfg.guard_size), so
 * an overflow stops the process with "coexec: stack overflow in ULT N on
 * xstream X (...)" rather than corrupting other memory. If no stack can be
 * mapped then, the ULT ends without running and its join or free returns
 * COEXEC_ENOMEM (a detached one is reported by a warning).
 * Context: any thread the pool's access mode allows to push. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (fn NULL, stack_size too small or a
 * user stack not 16-byte aligned); COEXEC_EHANDLE (bad pool);
 * COEXEC_EACCESS; COEXEC_ENOMEM; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_thread_create(coexec_pool_t pool, coexec_thread_fn_t fn, void *arg,
                     const coexec_thread_attr_t *attr, coexec_thread_t *out);

/*
 * The same, into the main pool of xstream xs.
 * Context: any thread the pool's access mode allows to push. Switches: never.
 * Returns: as coexec_thread_create, COEXEC_EHANDLE also for a bad xs;
 * COEXEC_ESTATE (xs has been joined: it has no scheduler).
 */
COEXEC_API COEXEC_NODISCARD int
coexec_thread_create_on(coexec_xstream_t xs, coexec_thread_fn_t fn, void *arg,
                        const coexec_thread_attr_t *attr, coexec_thread_t *out);

/*
 * Starts a new ULT running fn(arg) in the descriptor of *t, a ULT that has
 * finished (joined or not) but has not been freed, and queues it into
 * pool: what create would do, without taking a descriptor. *t is renewed
 * (written before the ULT is queued); every other copy of the old handle
 * goes stale (COEXEC_EHANDLE), and of a revive and a free through two
 * copies exactly one succeeds. The new ULT keeps the old one's stack
 * attributes (the caller's stack, or the stack size), priority, pinning
 * and data area bytes (coexec_unit_get_data); it gets a new id, no key
 * values and no name. It is still to be joined and freed, and may be
 * revived again.
 * Context: any thread the pool's access mode allows to push. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (t or fn NULL); COEXEC_EHANDLE (a bad
 * pool, a freed, stale or foreign *t, or a tasklet's); COEXEC_ESTATE (*t
 * has not finished, or a join of it is still returning);
 * COEXEC_EPERM (the primary's main ULT); COEXEC_EACCESS; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_revive(coexec_pool_t pool,
                                                     coexec_thread_fn_t fn,
                                                     void *arg,
                                                     coexec_thread_t *t);

/*
 * Waits until t has finished. If t has not started it runs now, in place:
 * taken from its pool, or, when the caller popped it out of its pool
 * itself (coexec_pool_pop), from the caller's hands. A unit someone else
 * popped is theirs to run or push: the join waits for that.
 * Context: a ULT, or an external thread. Switches: yes (a ULT); an
 * external thread sleeps on a futex.
 * Returns: COEXEC_OK; COEXEC_ENOMEM (t ended without running: no stack
 * could be mapped for it); COEXEC_EHANDLE (freed or foreign t);
 * COEXEC_EDEADLK (t is the caller); COEXEC_EINVAL (t is detached);
 * COEXEC_EPERM (t is the primary's main ULT, which never finishes);
 * COEXEC_EBUSY (another caller is joining t: one joiner at a time);
 * COEXEC_ECONTEXT (from a tasklet or a scheduler); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_join(coexec_thread_t t);

/*
 * coexec_thread_join, waiting at most timeout_ns: the way to survive a
 * stuck peer. If t has not started it still runs in place, to its first
 * switch. On COEXEC_ETIMEDOUT the call has left t alone: t goes on, and
 * may be joined or freed later.
 * Context and Switches: as coexec_thread_join.
 * Returns: as coexec_thread_join, plus COEXEC_ETIMEDOUT; COEXEC_ENOMEM also
 * when a ULT caller finds no room for its timer (t is then not joined).
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_join_timed(coexec_thread_t t,
                                                         uint64_t timeout_ns);

/*
 * Waits until t has finished, as coexec_thread_join does, but runs t in
 * place only where it would have run anyway: a t that has not started
 * runs in place only when the calling ULT's scheduler pops from t's pool.
 * Otherwise t runs on a stream that serves its pool, and the caller waits
 * (a ULT suspends, an external thread sleeps) meanwhile. For callers that
 * must not have t run on a stream that does not serve its pool (t then
 * sees a stream its pool is served by). A coexec_thread_free after it
 * does not wait.
 * Context: a ULT, or an external thread. Switches: yes (a ULT); an
 * external thread sleeps on a futex.
 * Returns: as coexec_thread_join.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_wait(coexec_thread_t t);

/*
 * Joins *t if it has not finished, releases it and clears *t.
 * Context, Switches and Returns: as coexec_thread_join, plus COEXEC_EINVAL
 * for t NULL. On COEXEC_ENOMEM (t never ran: no stack) *t is released and
 * cleared all the same; on any other error *t is left as it was.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_free(coexec_thread_t *t);

/*
 * coexec_thread_free with the waiting rule of coexec_thread_wait: a *t
 * that has not started runs in place only when the calling ULT's
 * scheduler pops from its pool. One call does the wait and the release,
 * so the release needs no atomic read-modify-write of its own when this
 * call was the one that waited (cheaper than coexec_thread_wait followed
 * by coexec_thread_free).
 * Context, Switches and Returns: as coexec_thread_free.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_wait_free(coexec_thread_t *t);

/*
 * The calling ULT.
 * Context: a ULT. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (out NULL); COEXEC_ECONTEXT (not a ULT);
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_self(coexec_thread_t *out);

/*
 * The identifier of t: unique among the units of this runtime, never 0.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_get_id(coexec_thread_t t,
                                                     uint64_t *id);

/*
 * The identifier of the calling unit (ULT or tasklet).
 * Context: a ULT or a tasklet. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_ECONTEXT; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_self_id(uint64_t *id);

/*
 * The state of t (see coexec_unit_state_t).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_get_state(coexec_thread_t t,
                                                        coexec_unit_state_t *s);

/*
 * Where the stack of t is: its usable range and the guard region below it
 * (see coexec_stack_info_t). For a ULT that has not run yet, base is NULL
 * and size and guard_size are what its stack will have; once it has
 * finished, base is NULL again unless the stack is the user's. Read while
 * t runs on another stream, the values are a moment's.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (info NULL); COEXEC_EHANDLE (t freed,
 * null or foreign: a tasklet has no stack); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_thread_get_stack(coexec_thread_t t, coexec_stack_info_t *info);

/*
 * Lets the other ready units of the caller's pool run; the caller is queued
 * behind them.
 * Context: a ULT. Switches: yes.
 * Returns: COEXEC_OK; COEXEC_ECONTEXT (tasklet, scheduler or external
 * thread); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_yield(void);

/*
 * Ends the calling ULT as if its function had returned. Does not return on
 * success.
 * Context: a ULT other than the primary's main ULT. Switches: yes, for good.
 * Returns: COEXEC_ECONTEXT (not a ULT); COEXEC_EPERM (main ULT);
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_exit(void);

/*
 * Suspends the calling ULT until coexec_thread_resume (or a waker) makes it
 * ready again. A resume that arrived before the suspend is not lost: the
 * suspend then returns at once.
 * Context: a ULT. Switches: yes.
 * Returns: COEXEC_OK; COEXEC_ECANCELED (woken by finalize, or resumed
 * while finalize cancels waits: see coexec_finalize); COEXEC_ECONTEXT;
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_self_suspend(void);

/*
 * Makes a suspended ULT ready again, queued in its home pool. If t is still
 * running, the resume is remembered and its next suspend returns at once;
 * resuming twice is the same as once.
 * Context: any thread (another xstream, a tasklet, an external thread).
 * Switches: never.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_ESTATE (t has finished);
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_resume(coexec_thread_t t);

/*
 * Creates a ULT in pool and runs it at once, child first: the caller goes
 * back to its own pool the way a new unit is pushed (in a LIFO pool, the
 * default, the one its scheduler takes next; in a FIFO pool, behind the
 * units already queued) and resumes when a scheduler picks it again. out
 * may be NULL (detached). attr as for coexec_thread_create.
 * Context: a ULT. Switches: always (to the child).
 * The primary's main ULT may call it too: it goes back to its pool, bound
 * to the primary as ever.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EACCESS;
 * COEXEC_ENOMEM; COEXEC_ECONTEXT (not a ULT: a tasklet, a scheduler or an
 * external thread); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_thread_create_child_first(coexec_pool_t pool, coexec_thread_fn_t fn,
                                 void *arg, const coexec_thread_attr_t *attr,
                                 coexec_thread_t *out);

/*
 * Switches the calling ULT directly to t, a ready ULT that is either queued
 * in a pool the caller's stream may take from, or held: taken out of its
 * pool by coexec_pool_pop or coexec_pool_steal and not pushed again (its
 * home, where it goes when it yields or is woken, then becomes the
 * caller's home pool). The caller goes back to its pool at the yield end.
 * No scheduler runs in between: t runs next on the caller's stream. Of
 * racing callers (or a coexec_pool_push of a held t) exactly one gets t.
 * Context: a ULT. Switches: always (to t).
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_EDEADLK (t is the caller);
 * COEXEC_ESTATE (t is neither queued nor held and ready: running, parked,
 * finished, taken by another caller, held by a pool that cannot give it
 * up, or the primary's main ULT);
 * COEXEC_EPERM (t is bound to another stream, as the primary's main ULT
 * is to the primary); COEXEC_ENOMEM (t had not started and no stack could be
 * mapped for it: t has ended without running, as its join reports);
 * COEXEC_ECONTEXT; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_yield_to(coexec_thread_t t);

/*
 * Suspends the calling ULT, as coexec_self_suspend does, and switches
 * directly to t, which must be ready, queued or held, as for
 * coexec_yield_to (a held t gets the caller's home pool as its home). The
 * caller stays suspended until coexec_thread_resume (or a resume_*_to
 * call) makes it ready again; a resume that arrived before is not lost:
 * the caller is then queued in its pool as t starts.
 * Context: a ULT. Switches: always (to t; back when resumed).
 * Returns: COEXEC_OK (resumed); COEXEC_ECANCELED (woken by finalize, see
 * coexec_self_suspend); on failure the caller has not suspended:
 * COEXEC_EHANDLE; COEXEC_EDEADLK (t is the caller); COEXEC_ESTATE (t is
 * not queued or held and ready, as for coexec_yield_to); COEXEC_EPERM (t
 * is bound to another stream); COEXEC_ENOMEM (t had not started and no
 * stack could be mapped for it: t has ended without running);
 * COEXEC_ECONTEXT (a tasklet, a scheduler or an external thread);
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_self_suspend_to(coexec_thread_t t);

/*
 * Ends the calling ULT, as coexec_thread_exit does (its key destructors
 * run first), and switches directly to t, which must be ready, queued or
 * held, as for coexec_yield_to (a held t gets the caller's home pool as
 * its home). Does not return on success. A ULT run in place by its joiner
 * lets the joiner wait the ordinary way.
 * Context: a ULT other than the primary's main ULT. Switches: yes, for
 * good.
 * Returns (the caller goes on): COEXEC_EHANDLE; COEXEC_EDEADLK (t is the
 * caller); COEXEC_ESTATE (t is not queued or held and ready); COEXEC_EPERM
 * (the caller is the primary's main ULT, or t is bound to another stream);
 * COEXEC_ENOMEM (t had not started and no stack could be mapped for it: t
 * has ended without running); COEXEC_ECONTEXT; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_exit_to(coexec_thread_t t);

/*
 * The resume-and-switch calls: t is a suspended ULT (parked by
 * coexec_self_suspend, coexec_self_suspend_to or any other park:
 * coexec_thread_resume ends any park); it is resumed and run at once on
 * the caller's stream instead of being queued in its home pool, which
 * stays its home. The caller meanwhile yields back to its pool
 * (coexec_resume_yield_to), suspends as coexec_self_suspend_to does
 * (coexec_resume_suspend_to) or ends as coexec_thread_exit_to does
 * (coexec_resume_exit_to, which does not return on success).
 * Context: a ULT (not the primary's main ULT for resume_exit_to).
 * Switches: always (to t).
 * Returns: COEXEC_OK; for resume_suspend_to also COEXEC_ECANCELED (as
 * coexec_self_suspend); on failure t and the caller are left as they
 * were: COEXEC_EHANDLE; COEXEC_EDEADLK (t is the caller); COEXEC_ESTATE (t
 * is not parked: ready, running, about to park on another stream,
 * finished, or resumed by someone else first; also a t whose home pool is
 * private to another stream, or a stacked scheduler's unit);
 * COEXEC_EPERM (t is bound to another stream; resume_exit_to from the
 * primary's main ULT); COEXEC_ECONTEXT; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_resume_yield_to(coexec_thread_t t);
COEXEC_API COEXEC_NODISCARD int coexec_resume_suspend_to(coexec_thread_t t);
COEXEC_API COEXEC_NODISCARD int coexec_resume_exit_to(coexec_thread_t t);

/*
 * Moves ULT t to pool. The caller itself moves at once (it yields into
 * pool and resumes wherever pool is served). A queued t, or one popped out
 * of its pool (coexec_pool_pop), moves at once; a running or parked t
 * moves when it next yields or is woken.
 * Context: any thread; a ULT for itself. Switches: only when t is the
 * caller.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_EPERM (t is pinned, or bound
 * to its stream like the primary's main ULT); COEXEC_ESTATE (t finished);
 * COEXEC_EACCESS; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_migrate_to(coexec_thread_t t,
                                                         coexec_pool_t pool);

/*
 * Makes pool t's home without switching: as coexec_thread_migrate_to, but
 * the caller itself goes on running and moves when it next yields or
 * parks. A pinned ULT, and the primary's main ULT, may be given a home
 * this way too: the main ULT still runs only on its own stream, so give
 * it a pool that stream serves.
 * Context: any thread; a ULT for itself. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_EPERM (a stacked scheduler's
 * unit); COEXEC_ESTATE (t finished); COEXEC_EACCESS; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_thread_set_home(coexec_thread_t t,
                                                       coexec_pool_t pool);

/*
 * Moves ULT t to xs: to the pool its main scheduler gives migrating units
 * (its first pool unless a user scheduler says otherwise). Until t has run
 * on xs once, no other stream steals it, so t observes its new stream.
 * Context, Switches and Returns: as coexec_thread_migrate_to; also
 * COEXEC_ESTATE when xs is stopping.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_thread_migrate_to_xstream(coexec_thread_t t, coexec_xstream_t xs);

/* ---- either kind of unit ------------------------------------------------- */

/*
 * Sets or clears t's pinned flag: a pinned unit is never stolen and
 * refuses migration (it still runs on whatever stream pops its pool).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_EPERM (set: clearing the flag
 * of a stacked scheduler's unit, which is always pinned); COEXEC_EINVAL
 * (get: pinned NULL); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_unit_set_pinned(coexec_unit_t unit,
                                                       int pinned);
COEXEC_API COEXEC_NODISCARD int coexec_unit_get_pinned(coexec_unit_t unit,
                                                       int *pinned);

/*
 * Sets a unit's priority (PRIO pools: higher is more urgent; clamped to
 * the pool's levels). It applies from the unit's next push.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (set: priority < 0 or > 65535; get:
 * priority NULL); COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_unit_set_priority(coexec_unit_t unit,
                                                         int priority);
COEXEC_API COEXEC_NODISCARD int coexec_unit_get_priority(coexec_unit_t unit,
                                                         int *priority);

/*
 * The argument a unit was created with, and its kind (1 for a ULT, 0 for
 * a tasklet): what a user pool or scheduler may look at to order units.
 * The main ULT and a stacked scheduler's unit have no argument (NULL).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (out NULL); COEXEC_EHANDLE;
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_unit_get_arg(coexec_unit_t unit,
                                                    void **arg);
COEXEC_API COEXEC_NODISCARD int coexec_unit_is_thread(coexec_unit_t unit,
                                                      int *is_thread);

/*
 * The scheduler a unit runs, when the unit is a stacked scheduler's (one
 * coexec_pool_add_sched queued): a user pool that keeps records of its
 * own per unit can tell such a unit from the ULTs and tasklets it holds.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_ENOENT (a ULT or a tasklet, not a scheduler);
 * COEXEC_EINVAL (out NULL); COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_unit_get_sched(coexec_unit_t unit,
                                                      coexec_sched_t *out);

/*
 * The identifier of a unit of any kind, as coexec_thread_get_id gives a
 * ULT's.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (id NULL); COEXEC_EHANDLE;
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_unit_get_id(coexec_unit_t unit,
                                                   uint64_t *id);

/*
 * The rank of the stream a unit is running on, or last ran on if it is
 * not running (coexec_xstream_get_rank): for a ULT that migrated or was
 * stolen, the stream it ran on most recently; for a unit a joiner ran in
 * place, the joiner's stream. Ranks are reused after a stream is freed,
 * so the rank of a unit that last ran on a freed stream may now name
 * another one. Read while the unit may be resumed elsewhere, it is a
 * moment's value.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_ESTATE (the unit has not run yet: *rank is
 * set to -1); COEXEC_EINVAL (rank NULL); COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_unit_get_last_rank(coexec_unit_t unit,
                                                          int *rank);

/*
 * The data area of a unit: coexec_config_t.unit_data_size bytes (rounded
 * up to 64), 64-byte aligned, in the unit's descriptor. It is the
 * program's from the unit's creation to its free, at the same address
 * wherever the unit runs; the runtime never touches it. A new unit finds
 * there what the last unit of its descriptor left, unless its creation
 * gave a data_init (coexec_thread_attr_t, coexec_tasklet_create_init).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_ENOENT (units have no data area:
 * unit_data_size 0; or unit is a stacked scheduler's, whose area is the
 * runtime's); COEXEC_EINVAL (data NULL); COEXEC_EHANDLE; COEXEC_ENOTINIT.
 * *data is NULL on every error.
 */
COEXEC_API COEXEC_NODISCARD int coexec_unit_get_data(coexec_unit_t unit,
                                                     void **data);

/*
 * The calling ULT's or tasklet's data area, as coexec_unit_get_data.
 * Context: a ULT or a tasklet. Switches: never.
 * Returns: COEXEC_OK; COEXEC_ENOENT (units have no data area);
 * COEXEC_ECONTEXT (an external thread or a scheduler); COEXEC_EINVAL (data
 * NULL); COEXEC_ENOTINIT. *data is NULL on every error.
 */
COEXEC_API COEXEC_NODISCARD int coexec_self_get_data(void **data);

/*
 * The unit handle of a ULT or a tasklet, for coexec_pool_push and
 * coexec_pool_pop. Pure conversions: no check is made here (the calls that
 * take the unit check it).
 * Context: any thread. Switches: never. Cannot fail.
 */
COEXEC_API coexec_unit_t coexec_thread_unit(coexec_thread_t t);
COEXEC_API coexec_unit_t coexec_tasklet_unit(coexec_tasklet_t k);

/* ---- tasklets ------------------------------------------------------------ */

/*
 * Creates a tasklet running fn(cx, arg) and queues it into pool. out NULL
 * makes it detached; otherwise *out is written before the tasklet is
 * queued, as for coexec_thread_create.
 * Context: any thread the pool's access mode allows to push. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (fn NULL); COEXEC_EHANDLE;
 * COEXEC_EACCESS; COEXEC_ENOMEM; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_tasklet_create(coexec_pool_t pool,
                                                      coexec_tasklet_fn_t fn,
                                                      void *arg,
                                                      coexec_tasklet_t *out);

/*
 * Creates a detached tasklet running fn(cx, arg) in pool, as
 * coexec_tasklet_create with out NULL (its descriptor goes back to the
 * runtime when it ends; nobody joins or frees it), and, if watch is not
 * NULL, writes before it is queued a handle that observes it while it
 * lives: coexec_tasklet_get_state, the coexec_unit_* queries and settings
 * of coexec_tasklet_unit(*watch), coexec_pool_remove and coexec_pool_push
 * of that unit, coexec_sched_run_unit. Once the tasklet has ended the
 * handle is stale (those calls return COEXEC_EHANDLE, and a handle of a
 * later unit in the same descriptor never matches it). A setting through
 * it (coexec_unit_set_priority, coexec_unit_set_pinned) must not race with
 * the tasklet's end: make it while the tasklet cannot run (queued in a
 * pool no scheduler serves, or taken out with coexec_pool_remove), or a
 * later unit in the descriptor may get it. Joining or freeing through it
 * returns COEXEC_EINVAL, reviving COEXEC_ESTATE, while the tasklet lives
 * (it is detached). For a runtime built on top that marks the
 * end itself, from the tasklet's function, and so needs no join: the end
 * costs no atomic read-modify-write (a joinable tasklet's end publishes
 * itself to its joiner with one).
 * Context: any thread the pool's access mode allows to push. Switches: never.
 * Returns: as coexec_tasklet_create.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_tasklet_create_watched(coexec_pool_t pool, coexec_tasklet_fn_t fn,
                              void *arg, coexec_tasklet_t *watch);

/*
 * coexec_tasklet_create, with init(data, ctx) called on the new tasklet's
 * data area (coexec_unit_get_data) before it is queued.
 * Context: any thread the pool's access mode allows to push. Switches: never.
 * Returns: as coexec_tasklet_create; COEXEC_EINVAL also for init NULL;
 * COEXEC_ENOENT (units have no data area: coexec_config_t.unit_data_size
 * 0; nothing is created).
 */
COEXEC_API COEXEC_NODISCARD int
coexec_tasklet_create_init(coexec_pool_t pool, coexec_tasklet_fn_t fn,
                           void *arg, coexec_data_init_fn init, void *ctx,
                           coexec_tasklet_t *out);

/*
 * A new tasklet running fn(cx, arg) in the descriptor of *k, a tasklet that
 * has finished but has not been freed, queued into pool: as
 * coexec_thread_revive for a ULT (*k renewed, other copies stale, the data
 * area's bytes kept).
 * Context: any thread the pool's access mode allows to push. Switches: never.
 * Returns: as coexec_thread_revive (COEXEC_EHANDLE also for a ULT's *k).
 */
COEXEC_API COEXEC_NODISCARD int coexec_tasklet_revive(coexec_pool_t pool,
                                                      coexec_tasklet_fn_t fn,
                                                      void *arg,
                                                      coexec_tasklet_t *k);

/*
 * coexec_tasklet_create, into the main pool of xstream xs.
 * Context: any thread the pool's access mode allows to push. Switches: never.
 * Returns: as coexec_tasklet_create, COEXEC_EHANDLE also for a bad xs;
 * COEXEC_ESTATE (xs has been joined).
 */
COEXEC_API COEXEC_NODISCARD int
coexec_tasklet_create_on(coexec_xstream_t xs, coexec_tasklet_fn_t fn,
                         void *arg, coexec_tasklet_t *out);

/*
 * Waits until k has returned COEXEC_READY. If k has not started it runs now,
 * in place (as coexec_thread_join says: not a unit someone else popped).
 * Context: a ULT or an external thread. Switches: yes (a ULT); an
 * external thread sleeps.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_EDEADLK (k is the caller);
 * COEXEC_EINVAL (detached); COEXEC_EBUSY (another caller is joining k);
 * COEXEC_ECONTEXT (from a tasklet or scheduler); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_tasklet_join(coexec_tasklet_t k);

/*
 * Waits until k has returned COEXEC_READY, as coexec_tasklet_join does,
 * but runs k in place only where it would have run anyway: a k that has
 * not started runs in place only when the calling ULT's scheduler pops
 * from k's pool; otherwise k runs on a stream that serves its pool while
 * the caller waits (as coexec_thread_wait). A coexec_tasklet_free after it
 * does not wait.
 * Context and Switches: as coexec_tasklet_join.
 * Returns: as coexec_tasklet_join.
 */
COEXEC_API COEXEC_NODISCARD int coexec_tasklet_wait(coexec_tasklet_t k);

/*
 * coexec_tasklet_join, waiting at most timeout_ns. On COEXEC_ETIMEDOUT the
 * call has left k alone: k goes on, and may be joined or freed later.
 * Context and Switches: as coexec_tasklet_join.
 * Returns: as coexec_tasklet_join, plus COEXEC_ETIMEDOUT; COEXEC_ENOMEM
 * (from a ULT: no room for the timer; not joined).
 */
COEXEC_API COEXEC_NODISCARD int coexec_tasklet_join_timed(coexec_tasklet_t k,
                                                          uint64_t timeout_ns);

/*
 * Joins *k if needed, releases it and clears *k.
 * Context, Switches and Returns: as coexec_tasklet_join, plus COEXEC_EINVAL
 * for k NULL.
 */
COEXEC_API COEXEC_NODISCARD int coexec_tasklet_free(coexec_tasklet_t *k);

/*
 * coexec_tasklet_free with the waiting rule of coexec_tasklet_wait (see
 * coexec_thread_wait_free).
 * Context, Switches and Returns: as coexec_tasklet_free.
 */
COEXEC_API COEXEC_NODISCARD int coexec_tasklet_wait_free(coexec_tasklet_t *k);

/*
 * The state of k.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_tasklet_get_state(coexec_tasklet_t k,
                                                         coexec_unit_state_t *s);

COEXEC_END_DECLS

#endif /* COEXEC_THREAD_H */
