/*
 * coexec/xstream.h: execution streams.
 *
 * An xstream is one OS thread pinned to a core (hwloc), running its main
 * scheduler over that scheduler's pools. The primary xstream (rank 0) is the
 * thread that called coexec_init; secondary ones are created here.
 * States: CREATED -> READY -> RUNNING -> TERMINATED.
 *
 * The default setup of a stream (attr NULL, or attr->sched null) is one
 * MPMC LIFO pool of its own (newest unit first, so fork-join code runs
 * depth-first; a yielding unit goes behind the others) and the configured
 * main scheduler with stealing on: when its own pool is empty it takes the
 * oldest unit from the default pools of the other streams. With the RANDWS
 * kind configured (COEXEC_SCHED=randws), the work-stealing setup: the
 * default pool is a DEQUE and the RANDWS scheduler steals from the other
 * streams' default pools, picked at random, nearer ones first.
 *
 * Placement: stream k goes on the k-th core of the process's own CPU binding
 * (so MPI ranks bound to different cores stay apart); with more streams
 * than cores placement wraps around and one warning is printed. The primary
 * is pinned too (to the first core); coexec_finalize gives the thread the
 * binding it had before coexec_init. With COEXEC_AFFINITY=0 no stream is
 * pinned.
 *
 * A query through a stream handle (the get_ calls) may race with the
 * free of that stream on another thread and the reuse of its record: it
 * answers for the stream the handle names, or COEXEC_EHANDLE, never for
 * the next one.
 */
#ifndef COEXEC_XSTREAM_H
#define COEXEC_XSTREAM_H

#include "defs.h"
#include "types.h"

/* The life of a stream, as coexec_xstream_get_state reports it. */
typedef enum coexec_xstream_state {
    COEXEC_XSTREAM_CREATED = 0,   /* set up, its OS thread not started */
    COEXEC_XSTREAM_READY = 1,     /* its OS thread starting, its scheduler
                                     not running yet */
    COEXEC_XSTREAM_RUNNING = 2,   /* running its main scheduler */
    COEXEC_XSTREAM_TERMINATED = 3 /* stopped: its scheduler has returned */
} coexec_xstream_state_t;

/* Attributes of a new stream (coexec_xstream_create);
 * coexec_xstream_attr_init fills the defaults. */
typedef struct coexec_xstream_attr {
    size_t size;          /* sizeof(coexec_xstream_attr_t); set by _init */
    int cpu;              /* logical CPU index to pin to; -1 = automatic */
    coexec_sched_t sched; /* main scheduler; null = the default setup */
} coexec_xstream_attr_t;

COEXEC_BEGIN_DECLS

/*
 * Fills attr with the defaults (automatic placement, default setup).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL if attr is NULL.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_xstream_attr_init(coexec_xstream_attr_t *attr);

/*
 * Creates and starts a secondary xstream. attr may be NULL (defaults). A
 * given scheduler must not be in use by another stream.
 * Context: any thread while the runtime runs. Switches: never (starts an OS
 * thread).
 * Returns: COEXEC_OK; COEXEC_EINVAL (out NULL, bad cpu); COEXEC_EHANDLE (bad
 * sched); COEXEC_EBUSY (sched already in use); COEXEC_ENOMEM; COEXEC_EAGAIN
 * (no OS thread could be started, or 1,024 streams exist: made, joined or
 * not, and not freed); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_xstream_create(const coexec_xstream_attr_t *attr, coexec_xstream_t *out);

/*
 * Asks xs to stop once its main scheduler's pools are empty and waits until
 * it has terminated. Units still queued are run first, by xs or by a stream
 * that steals them; a unit another stream took may still be running there
 * when the join returns (it is not lost), and the units it creates on xs
 * once xs has stopped go to the primary's pool. Units parked with xs's
 * default pool as their home go to the primary's pool when woken.
 * Context: a ULT or an external thread not running on xs. Switches: a ULT
 * caller yields while it waits; an external thread sleeps.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_EPERM for the primary;
 * COEXEC_EDEADLK when called from xs itself, or from a ULT that would wait
 * inside xs: one whose home pool xs's scheduler (or a scheduler stacked in
 * it) takes from, such as a unit of xs's pool that a joiner runs in place
 * on another stream; COEXEC_ECONTEXT from a tasklet or a scheduler loop;
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_xstream_join(coexec_xstream_t xs);

/*
 * Asks xs to stop once its main scheduler's pools are empty, as
 * coexec_xstream_join does, without waiting: the stream runs what is
 * queued, then leaves its loop; a later coexec_xstream_join or _free
 * reaps it (and gives units woken with its default pool as home to the
 * primary). A unit of xs may ask it of its own stream. Posts to xs from
 * other threads are refused from now on (COEXEC_ESTATE).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK (also when already asked); COEXEC_EHANDLE;
 * COEXEC_EPERM for the primary; COEXEC_ESTATE (being joined or joined);
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_xstream_stop(coexec_xstream_t xs);

/*
 * Joins *xs if needed, frees it and its default pool and scheduler, and
 * clears *xs.
 * Context, Switches and Returns: as coexec_xstream_join; also COEXEC_EINVAL
 * if xs is NULL.
 */
COEXEC_API COEXEC_NODISCARD int coexec_xstream_free(coexec_xstream_t *xs);

/*
 * The xstream running the caller.
 * Context: a ULT, tasklet or scheduler. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (out NULL); COEXEC_ECONTEXT from an
 * external thread; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_xstream_self(coexec_xstream_t *out);

/*
 * The rank of the xstream running the caller (the primary is 0; ranks are
 * given in creation order and reused after a free).
 * Context, Switches and Returns: as coexec_xstream_self.
 */
COEXEC_API COEXEC_NODISCARD int coexec_xstream_self_rank(int *rank);

/*
 * The rank of xs.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_xstream_get_rank(coexec_xstream_t xs,
                                                        int *rank);

/*
 * The live xstream of the given rank.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (out NULL); COEXEC_ENOENT (no such
 * stream); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_xstream_by_rank(int rank,
                                                       coexec_xstream_t *out);

/*
 * The number of live xstreams, the primary included.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_xstream_get_num(int *num);

/*
 * The state of xs.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_xstream_get_state(coexec_xstream_t xs, coexec_xstream_state_t *state);

/*
 * The logical CPU placement pinned xs to when it started, or -1 when it
 * was not pinned (pinning is off, or the primary's thread could not be
 * pinned). Stealing orders its victims by distance from this CPU. A later
 * coexec_xstream_set_cpus does not change it: coexec_xstream_get_cpus
 * tells where the stream's thread may run now.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_xstream_get_cpu(coexec_xstream_t xs,
                                                       int *cpu);

/*
 * Re-pins the OS thread of xs, running or not, to the n logical CPUs in
 * cpus (a set: order and repeats do not matter), whatever placement or
 * COEXEC_AFFINITY chose when it started. As the kernel does, CPUs of the
 * set that the process may not use are left out: those outside its
 * binding when coexec_init ran (whatever the streams' bindings are now)
 * or that the machine does not have; at least one must remain. The binding lasts until the next call or until xs stops;
 * units go on running where they are, the thread moves when the kernel
 * next schedules it. Must not race with the join or free of xs.
 * Context: any thread, xs's own units included. Switches: never (one
 * system call; it does not wait for xs).
 * Returns: COEXEC_OK; COEXEC_EINVAL (cpus NULL, n <= 0, a negative CPU,
 * no CPU of the set usable, or the kernel refused the set);
 * COEXEC_EHANDLE; COEXEC_ESTATE (xs is being joined or has stopped: it has
 * no thread); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_xstream_set_cpus(coexec_xstream_t xs, const int *cpus, int n);

/*
 * The logical CPUs the OS thread of xs may run on now, as the kernel
 * reports its affinity: the first max of them, in increasing order, in
 * cpus, and their number (which may be more than max) in *n. cpus may be
 * NULL when max is 0, to learn the number.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (n NULL, max < 0, or cpus NULL with
 * max > 0); COEXEC_EHANDLE; COEXEC_ESTATE (xs is being joined or has
 * stopped); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_xstream_get_cpus(coexec_xstream_t xs,
                                                        int *cpus, int max,
                                                        int *n);

/*
 * The main scheduler of xs.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ESTATE (xs has
 * been joined: it has none any more); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_xstream_get_main_sched(coexec_xstream_t xs, coexec_sched_t *out);

/*
 * Replaces the main scheduler of xs (which must not be in use elsewhere).
 * The switch happens at xs's next event check (within event_freq units, or
 * at once when xs is idle). A ULT running on xs that makes the call waits,
 * parked (in no pool), until xs has switched, and then goes back to its
 * pool under the new scheduler; any other caller does not wait. Units
 * queued in a pool of the old scheduler that the new one does not take
 * from, and that no other running scheduler serves, move to the new
 * scheduler's first pool, and so do units that later return to such a
 * pool: none is lost. The primary's main ULT, which only its own stream
 * runs, gets the new scheduler's first pool as its home whenever its home
 * is not a pool the new scheduler takes from (even one another stream
 * serves): queued, it moves at the switch; parked, when it is woken. The
 * old scheduler is then free to be freed or reused.
 * Context: any thread (also a unit running on xs). Switches: yes, for a
 * ULT of xs (it parks until the switch); never otherwise.
 * Returns: COEXEC_OK; COEXEC_EHANDLE (bad xs or sched); COEXEC_EBUSY
 * (sched in use, or stacked); COEXEC_ESTATE (xs is stopping or joined);
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_xstream_set_main_sched(coexec_xstream_t xs, coexec_sched_t sched);

/*
 * The first pool of xs's main scheduler: where coexec_thread_create_on and
 * coexec_tasklet_create_on put units.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ESTATE (xs has
 * been joined); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_xstream_get_main_pool(coexec_xstream_t xs, coexec_pool_t *out);

/*
 * Runs fn(cx, arg) on xs and only there, as a detached tasklet delivered
 * through xs's event pool (the inbox its scheduler drains every event_freq
 * units and whenever idle): for work that must run on a given stream, such
 * as pushing into its private pools. fn may return COEXEC_PENDING like any
 * tasklet; it is never stolen by another stream.
 * Context: any thread. Switches: never.
 * A post that returned COEXEC_OK runs, even if xs is asked to stop
 * meanwhile; once it is stopping, posts from other threads are refused.
 * Returns: COEXEC_OK; COEXEC_EINVAL (fn NULL); COEXEC_EHANDLE; COEXEC_ESTATE
 * (xs is stopping, or has been joined); COEXEC_ENOMEM; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_xstream_post(coexec_xstream_t xs, coexec_tasklet_fn_t fn, void *arg);

COEXEC_END_DECLS

#endif /* COEXEC_XSTREAM_H */
