/*
 * coexec/runtime.h: starting and stopping the runtime, its configuration,
 * and what kind of caller the current code is.
 *
 * Configuration: coexec_config_init() fills the defaults; the caller may
 * change fields; coexec_init() then applies the COEXEC_* environment
 * variables on top, so a job script can tune a binary without rebuilding it:
 *
 *   COEXEC_NUM_XSTREAMS   streams started by init, the primary included (>= 1)
 *   COEXEC_STACK_SIZE     default ULT stack, bytes; K/M/G suffixes accepted
 *   COEXEC_SCHED          main scheduler of each stream: basic | basic_wait |
 *                         prio | randws (randws: the work-stealing setup)
 *   COEXEC_EVENT_FREQ     scheduler iterations between event checks (>= 1)
 *   COEXEC_AFFINITY       1 = pin streams to cores (hwloc), 0 = do not
 *   COEXEC_IDLE_SPIN_US   basic_wait: microseconds an idle stream spins
 *                         before parking (0 parks at once)
 *   COEXEC_GUARD_SIZE     bytes of inaccessible guard below every stack the
 *                         runtime maps (K/M suffixes; rounded up to pages;
 *                         0 = no guard: unsafe, see guard_size)
 *   COEXEC_GUARD_APP      1 = the program handles faults in guards (see
 *                         guard_app)
 *   COEXEC_PRINT_CONFIG   1 = print the configuration on stderr at init
 *   COEXEC_QUIET          1 = no one-line warnings on stderr
 *   COEXEC_SERVICE_THREADS      service threads kept running (1 to
 *                               service_max_threads)
 *   COEXEC_SERVICE_MAX_THREADS  service threads at most, while calls are stuck
 *   COEXEC_SERVICE_SPIN_US      microseconds an idle service thread spins
 *   COEXEC_SERVICE_CPUS         CPUs of the service threads: "3", "2,3"
 *                               or "0-3,8"
 *   COEXEC_SERVICE_IO           how the POSIX wrappers' file calls run:
 *                               auto | uring | threads (see service_io)
 *   COEXEC_STATS          1 = print every stream's counters on stderr at
 *                         finalize (coexec/stats.h), and measure idle time
 *   COEXEC_FJ_SLOTS       task records of each stream's fork-join deque
 *                         (64..16,777,216; see fj_slots)
 *
 * A malformed value makes coexec_init() fail with COEXEC_EENV; the message
 * naming the variable is printed on stderr and returned by
 * coexec_init_error(). Boolean variables take 0/1, yes/no, true/false, on/off.
 * Each variable has exactly the bounds of its field (given below); a field
 * of cfg outside them makes init fail with COEXEC_EINVAL and a message
 * naming the field. The maximum is never raised to fit: with the default
 * service_max_threads of 16, COEXEC_SERVICE_THREADS=20 alone fails naming
 * COEXEC_SERVICE_THREADS (set COEXEC_SERVICE_MAX_THREADS too). A CPU list
 * (COEXEC_SERVICE_CPUS, service_cpus) is CPU numbers and ranges lo-hi
 * separated by commas, with no spaces; every CPU must be one the process
 * may run on (its binding), whether or not affinity is on, so that no
 * thread meant to be pinned runs unpinned.
 *
 * Threads and signals: the runtime's OS threads are named coexec-xsN (the
 * stream of rank N), coexec-svcN (service threads) and coexec-ring (the
 * io_uring thread); the primary keeps its name. They block every
 * asynchronous signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP and SIGSYS
 * stay unblocked), so a signal sent to the process reaches only the
 * program's own threads, the primary among them, and never interrupts an
 * offloaded call. On the primary the handler runs on the stack of what it
 * interrupted: the main ULT, another ULT (give a big handler an alternate
 * stack), or the scheduler. Handlers must not call the runtime.
 *
 * fork: supported from the primary's main ULT and from threads that are not
 * streams (the program's, or an offloaded call on a service thread). In the
 * child the runtime is not initialised: every call that needs it returns
 * COEXEC_ENOTINIT, and coexec_init() starts it afresh. The parent's slabs
 * and io_uring are unmapped in the child; the records of its streams,
 * pools, schedulers and service threads stay allocated there. A child
 * forked from any other unit runs on that unit's stack: it may exec or
 * _exit, and coexec_init() there returns COEXEC_ECONTEXT. A child forked on
 * a runtime thread gets back the signal mask, affinity and name of the
 * thread that started it. Every descriptor the runtime opens is
 * close-on-exec.
 */
#ifndef COEXEC_RUNTIME_H
#define COEXEC_RUNTIME_H

#include <stddef.h>

#include "defs.h"
#include "types.h"

/* The built-in kinds of scheduler (coexec/sched.h says how each works). */
typedef enum coexec_sched_kind {
    COEXEC_SCHED_BASIC = 0,      /* takes from its pools in order; spins */
    COEXEC_SCHED_BASIC_WAIT = 1, /* the same; parks when every pool is empty */
    COEXEC_SCHED_PRIO = 2,       /* pools in priority order, with aging */
    COEXEC_SCHED_RANDWS = 3,     /* own pool, then random victims (nearer
                                    first); parks when there is no work */
    COEXEC_SCHED_USER = 4        /* made by coexec_sched_create_user */
} coexec_sched_kind_t;

/* The service stream's path for file I/O (coexec/service.h). */
typedef enum coexec_service_io {
    /* io_uring where the kernel allows it (and libcoexec was built with
     * liburing), else the service threads, silently. */
    COEXEC_SERVICE_IO_AUTO = 0,
    /* io_uring; where it cannot be had, the service threads, with one
     * warning on stderr (init does not fail). */
    COEXEC_SERVICE_IO_URING = 1,
    /* the service threads only. */
    COEXEC_SERVICE_IO_THREADS = 2
} coexec_service_io_t;

/* coexec_config_t.num_xstreams (COEXEC_NUM_XSTREAMS=all): one stream per
 * CPU the process may run on. */
#define COEXEC_NUM_XSTREAMS_ALL (-1)

/*
 * coexec_config_t.affinity (COEXEC_AFFINITY): where streams are pinned.
 * Stream k goes to the k-th of the candidate CPUs: one hardware thread of
 * each core first, then the cores' other hardware threads, in hwloc's
 * order (the cores of a cache or package together); the primary stream,
 * the caller of coexec_init, too, until coexec_finalize.
 *   COEXEC_AFFINITY_NONE     no stream is pinned ("none", or 0);
 *   COEXEC_AFFINITY_AUTO     the default ("auto", or 1): as RANK when the
 *                            process shares its node with other ranks of
 *                            its job and its binding holds more cores than
 *                            its share of the node's (the launcher did not
 *                            bind the ranks apart: mpirun --bind-to none),
 *                            else as BINDING;
 *   COEXEC_AFFINITY_BINDING  the candidates are the CPUs of the process's
 *                            binding ("binding");
 *   COEXEC_AFFINITY_RANK     local rank r of n takes the r-th of n
 *                            contiguous, as even as may be, blocks of the
 *                            binding's cores ("rank"); with fewer cores
 *                            than ranks, ranks share cores (a warning
 *                            says so).
 * The local rank and size come from the launcher's environment, the
 * first found of: COEXEC_LOCAL_RANK/COEXEC_LOCAL_SIZE (a malformed pair
 * fails init with COEXEC_EENV), Open MPI's OMPI_COMM_WORLD_LOCAL_RANK/
 * _LOCAL_SIZE, MVAPICH's MV2_COMM_WORLD_LOCAL_RANK/_LOCAL_SIZE, MPICH
 * Hydra's MPI_LOCALRANKID/MPI_LOCALNRANKS, PMIx's PMIX_LOCAL_RANK/
 * PMIX_LOCAL_SIZE, Cray PALS's PALS_LOCAL_RANKID/PALS_LOCAL_SIZE,
 * PMI_LOCAL_RANK/PMI_LOCAL_SIZE, Slurm's SLURM_LOCALID with
 * SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE (for SLURM_NODEID).
 * coexec_print_config shows the decision.
 */
#define COEXEC_AFFINITY_NONE 0
/* coexec_config_t.affinity: a rank's share when it needs one (above). */
#define COEXEC_AFFINITY_AUTO 1
/* coexec_config_t.affinity: the process's binding (above). */
#define COEXEC_AFFINITY_BINDING 2
/* coexec_config_t.affinity: the local rank's block of cores (above). */
#define COEXEC_AFFINITY_RANK 3

/*
 * The runtime's configuration: coexec_config_init fills the defaults, the
 * caller changes fields, coexec_init applies the COEXEC_* environment
 * variables on top (see above). Each field gives its default and bounds.
 */
typedef struct coexec_config {
    size_t size;                    /* sizeof(coexec_config_t); set by _init */
    int num_xstreams;               /* default 1; 1..1024, or
                                       COEXEC_NUM_XSTREAMS_ALL: one per
                                       CPU of the process's binding */
    size_t stack_size;              /* default 16 KiB; 16 KiB..1 GiB */
    coexec_sched_kind_t sched_kind; /* default COEXEC_SCHED_BASIC_WAIT;
                                       not COEXEC_SCHED_USER */
    unsigned event_freq;            /* default 64; 1..2^30 */
    int affinity;                   /* COEXEC_AFFINITY_*: default
                                       COEXEC_AFFINITY_AUTO (1) */
    unsigned idle_spin_us;          /* default 50; 0..60,000,000 */
    /* Bytes of inaccessible memory below every stack the runtime maps
     * (ULT stacks of every size, stacked schedulers' stacks, the primary's
     * scheduler stack), rounded up to whole pages; default one page. A ULT
     * that runs into it is stopped at once with "coexec: stack overflow in
     * ULT N on xstream X (...)" on stderr and abort(), instead of writing
     * over the memory below. It costs address space, not memory. 0 turns
     * guards off: an overflow then silently corrupts a neighbouring stack
     * (unsafe; only for measurements). A single frame larger than the guard
     * can jump it: build deep or large-framed ULT code with
     * -fstack-clash-protection (which touches every page it allocates), or
     * raise the guard. On kernels before Linux 6.13 each guard is a mapping
     * of its own: vm.max_map_count (65530 by default) then bounds the ULT
     * stacks alive at once to about 32,000. At most 64 MiB. */
    size_t guard_size;
    int print_config;               /* default 0; 0 or 1 */
    int quiet;                      /* default 0; 0 or 1 */
    /* The service stream (coexec/service.h). */
    int service_threads;            /* threads kept running, default 1;
                                       1..service_max_threads */
    int service_max_threads;        /* while calls are stuck, default 16;
                                       service_threads..1024 */
    unsigned service_spin_us;       /* idle spin before parking, default
                                       50; 0..60,000,000 */
    char service_cpus[64];          /* CPU list "3", "2,3" or "0-3,8" of
                                       CPUs the process may run on; "" =
                                       the last CPU of its binding */
    coexec_service_io_t service_io; /* file I/O path, default AUTO */
    /* Task records in each stream's fork-join deque (coexec/fj.h), 64
     * bytes each, mapped when the stream first opens a region or steals
     * and touched only as deep as spawns go; default 65,536 (4 MiB of
     * address space); 64..16,777,216. Spawns beyond it still work,
     * slower (the overflow goes to the heap and is never stolen). */
    size_t fj_slots;
    /* 1: print every stream's counters (coexec/stats.h) on stderr at
     * coexec_finalize, and measure idle time; default 0; 0 or 1. */
    int stats;
    /* A signal that prints coexec_info_print's dump on stderr: 0 (none,
     * the default), SIGUSR1, SIGUSR2 or SIGQUIT (coexec/info.h). */
    int dump_signal;
    /* Seconds without any unit started or resumed on any stream after
     * which the dump is printed on stderr, once per stall; 0 (default):
     * never; 0..86,400. */
    unsigned hang_dump_s;
    /* A Chrome trace file written at finalize (coexec/tool.h); "" (the
     * default): no trace. */
    char trace_path[256];
    /* Events each thread's trace buffer holds (32 bytes each, touched as
     * used); default 262,144; 1,024..268,435,456. */
    unsigned trace_events;
    /* 1: a stream's OS thread runs with the signal mask of the thread
     * that called coexec_init, as a pthread inherits its creator's: a
     * signal sent to the process may be taken by a stream, and a unit's
     * raise() or pthread_kill() of its own thread is delivered (an
     * interrupted call in a unit may fail with EINTR). 0 (the default):
     * streams block the asynchronous signals, as the library's other
     * threads always do, so process signals go to the user's threads
     * (the primary among them) only; 0 or 1. */
    int stream_signals;
    /* 1: the program handles faults in the guards: each guard is pages
     * made inaccessible with mprotect (never a kernel guard marker, which
     * mprotect cannot open), so the program may change their protection;
     * and a fault in a guard goes to the SIGSEGV handler the program
     * installed before coexec_init, as a fault anywhere else does, instead
     * of the overflow report and abort(). For programs that watch their
     * stacks' guards themselves (libcoexec-abt sets it under
     * ABT_STACK_OVERFLOW_CHECK=mprotect). A guard the program opened stays
     * open while its stack is reused. 0 (the default): the report. */
    int guard_app;
    /* Bytes of data area every ULT and tasklet carries in its descriptor
     * for the program (coexec_thread_get_data, coexec_tasklet_get_data,
     * coexec_self_get_data; coexec/thread.h), rounded up to 64; default 0
     * (none); 0..1024. Each descriptor grows by as much, and a runtime built
     * on coexec keeps its per-unit record there instead of allocating one.
     * The runtime never reads nor writes the area: a new unit finds there
     * what the last unit of its descriptor left (zeros in a fresh one), so
     * a creation that needs it set gives a data_init, which the runtime
     * calls on the area before the unit is queued. */
    size_t unit_data_size;
} coexec_config_t;

COEXEC_BEGIN_DECLS

/*
 * Fills cfg with the defaults (environment not applied).
 * Context: any thread, before or after init. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL if cfg is NULL.
 */
COEXEC_API COEXEC_NODISCARD int coexec_config_init(coexec_config_t *cfg);

/*
 * Starts the runtime. The calling thread becomes the primary xstream (rank
 * 0) and its code the primary's main ULT; cfg->num_xstreams - 1 secondary
 * streams are created with the default setup. cfg may be NULL (defaults).
 * COEXEC_* environment variables override cfg.
 * Context: an external thread (any thread when the runtime is not running).
 * Switches: never; creating streams starts OS threads.
 * Returns: COEXEC_OK; COEXEC_EINIT if already initialized; COEXEC_EENV for a
 * malformed or out-of-range environment variable (coexec_init_error() names
 * it); COEXEC_EINVAL for a cfg field out of its bounds (named likewise);
 * COEXEC_ENOMEM / COEXEC_EAGAIN when memory or threads cannot be had;
 * COEXEC_ECONTEXT in a process forked from a unit other than the primary's
 * main ULT (see fork above). On failure nothing is left running and init
 * may be called again.
 */
COEXEC_API COEXEC_NODISCARD int coexec_init(const coexec_config_t *cfg);

/*
 * Stops the runtime: asks every secondary xstream to finish the units in its
 * pools, joins and frees them, frees the default pools and schedulers, and
 * releases every cache. Objects the user created and did not free are
 * reported in one warning line (unless quiet) and reclaimed.
 *
 * Units still blocked do not hold finalize:
 *  - a stream with nothing left to run but sleeping or timed-waiting units
 *    wakes them at once: coexec_sleep_ns/_until and every _timed wait
 *    return COEXEC_ECANCELED, whatever their timeout;
 *  - once the secondary streams have stopped, every unit still blocked in
 *    a wait (eventual, future, mutex, cond, rwlock, barrier, channel send
 *    or recv) or in coexec_self_suspend is woken, on the primary, with
 *    COEXEC_ECANCELED; a tasklet's _poll call returns COEXEC_ECANCELED when
 *    it is polled again. From then on any such wait of a unit that would
 *    block returns COEXEC_ECANCELED at once (a cond wait still locks its
 *    mutex again; a join still waits for its unit, which is woken too);
 *  - queued service requests get COEXEC_ECANCELED, running ones are given
 *    2 s (finalize parks meanwhile) before their waiters get it too.
 * Woken units run on until they finish; a unit that blocks outside these
 * calls again (a suspend loop) is woken a few times, then left and
 * reclaimed. No unit is left on an object's wait list: the objects keep
 * working after finalize, with the calls an external thread may make (a
 * mutex or rwlock the main ULT still held is busy, and COEXEC_EPERM for
 * this thread). External threads blocked on an object are not woken.
 * Context: the primary's main ULT, on the primary xstream (the code that
 * called coexec_init). Switches: may run other units while streams drain;
 * blocks until secondary streams have stopped.
 * Returns: COEXEC_OK; COEXEC_ENOTINIT if the runtime is not running (also a
 * second finalize); COEXEC_ECONTEXT from any other caller.
 */
COEXEC_API COEXEC_NODISCARD int coexec_finalize(void);

/*
 * 1 while the runtime is initialized, 0 otherwise.
 * Context: any thread. Switches: never.
 */
COEXEC_API int coexec_initialized(void);

/*
 * Copies the configuration in force (after the environment was applied).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL if out is NULL; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_get_config(coexec_config_t *out);

/*
 * The message of the last failed coexec_init (for COEXEC_EENV it names the
 * variable and the value, for COEXEC_EINVAL the cfg field and the value,
 * with what is valid), or "" if the last init succeeded.
 * Context: any thread. Switches: never.
 */
COEXEC_API const char *coexec_init_error(void);

/*
 * What kind of code is calling: a ULT, a tasklet, a scheduler loop or an
 * external thread (also any thread while the runtime is not initialized).
 * Context: any. Switches: never.
 */
COEXEC_API coexec_caller_t coexec_self_caller(void);

/*
 * Prints the configuration in force and the placement of the streams on
 * stream f (a FILE *; NULL means stderr).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_print_config(void *f);

COEXEC_END_DECLS

#endif /* COEXEC_RUNTIME_H */
