/*
 * coexec/fj.h: the fork-join tier. Stackless tasks spawned into the
 * running stream's deque and synced in LIFO order, stolen by idle streams,
 * plus parallel loops and reductions built on them.
 *
 * When to use what (costs from bench/, docs/BENCHMARKS.md):
 *  - a ULT: it has its own stack, so it may block, sleep, wait, lock and
 *    migrate; create+join costs tens of nanoseconds and 4 KiB or more.
 *  - a tasklet: no stack, run to completion or return PENDING and be woken
 *    (waker.h); create+join costs tens of nanoseconds and 128 bytes.
 *  - a fork-join task: a 64-byte record written in place into the stream's
 *    deque, run inline by the sync that finds it there (a few nanoseconds)
 *    or by an idle stream that steals it; no allocation, no stack, no
 *    scheduler on the way. It may not block. Use it for divide and
 *    conquer and parallel loops.
 *
 * Declaring a task (n = 0..6 arguments; a task returning nothing uses
 * COEXEC_FJ_VOID_TASK_n(NAME, T1, A1, ...)):
 *
 *     COEXEC_FJ_TASK_1(long, fib, int, n)
 *     {
 *         if (n < 2)
 *             return n;
 *         COEXEC_FJ_SPAWN(fib, n - 1);          // may run on another stream
 *         long b = COEXEC_FJ_CALL(fib, n - 2);  // a plain call
 *         long a = COEXEC_FJ_SYNC(fib);         // its result
 *         return a + b;
 *     }
 *
 *     long r;
 *     int rc = COEXEC_FJ_RUN(fib, &r, 30);     // opens a region here
 *
 * A task's arguments, and its result, must fit in COEXEC_FJ_DATA_SIZE
 * (48) bytes; a static assertion says so at the declaration. Inside a task
 * body the running worker is the hidden parameter `coexec_fj_`; a plain
 * function that takes `coexec_fj_t *coexec_fj_` (as coexec_fj_run's
 * function does) may use the macros too.
 *
 * Rules:
 *  - Spawns are synced in the reverse order of the spawns, each exactly
 *    once, by the task (or region function) that spawned them, before it
 *    returns. SYNC(NAME) must name the task of the latest unsynced spawn.
 *  - A task may not block: while a region is open, the stream runs no
 *    other unit. A task runs in a scheduler's context wherever it runs,
 *    so calls that would wait, yield or switch (coexec_yield,
 *    coexec_thread_join and _free, coexec_tasklet_join and _free,
 *    coexec_mutex_lock, coexec_cond_wait, coexec_eventual_wait,
 *    coexec_future_wait, coexec_barrier_wait, coexec_sleep_ns,
 *    coexec_offload, ...) return COEXEC_ECONTEXT there. Calls that do not
 *    wait work: creating ULTs and tasklets (join them after the region),
 *    setting eventuals and futures, waking wakers, try-locks, channel
 *    try-sends, posting, submitting requests. The POSIX wrappers
 *    (coexec_read, ...) run the plain call there, blocking the OS thread:
 *    avoid them in tasks. Calls that ask for the calling unit
 *    (coexec_thread_self, keys) answer as in a scheduler: there is none.
 *  - Tasks run on the stack of whoever runs them: the unit that opened the
 *    region (a ULT's stack is COEXEC_STACK_SIZE, 16 KiB by default), or
 *    the scheduler of a stealing stream. Keep recursion depth modest, or
 *    open deep regions from a ULT with a larger stack.
 *  - A task may open a nested region (coexec_fj_run, coexec_parallel_for,
 *    ...): it runs within the open one, on the same deque.
 *
 * Stealing: a stream whose scheduler finds no unit to run while a region
 * is open anywhere steals the oldest stealable task of a busy stream. A
 * stream parked when a region opens is woken. A sync whose task was
 * stolen runs tasks of the thief's deque (descendants of the stolen task)
 * until the thief finishes it ("leapfrogging"); it never blocks its OS
 * thread. Only the built-in schedulers steal fork-join tasks.
 */
#ifndef COEXEC_FJ_H
#define COEXEC_FJ_H

#include <stddef.h>
#include <stdint.h>

#include "defs.h"

COEXEC_BEGIN_DECLS

/* Bytes a task's arguments (or its result) may take. */
#define COEXEC_FJ_DATA_SIZE 48

typedef struct coexec_fj coexec_fj_t;
typedef struct coexec_fj_task coexec_fj_task_t;

/* A task record: one cache line, written in place into a deque. Its
 * members are private. */
struct coexec_fj_task {
    void (*run_)(coexec_fj_t *fj, coexec_fj_task_t *t);
    uintptr_t thief_; /* 0, the thief's worker, or 1 once done */
    unsigned char data_[COEXEC_FJ_DATA_SIZE] __attribute__((aligned(16)));
} __attribute__((aligned(64)));

/* A stream's fork-join worker (one per stream). Its members are private;
 * the owner's fields are public only for the inline spawn and sync. */
struct coexec_fj {
    coexec_fj_task_t *head_;  /* the next free slot */
    coexec_fj_task_t *split_; /* slots from here to head_ are private */
    coexec_fj_task_t *end_;   /* one past the last slot */
    uint32_t splitreq_;       /* set by a thief that found none shared */
};

/*
 * Opens a fork-join region on the calling stream and runs fn(fj, arg) in
 * it, on the caller's stack; returns once fn and every task it spawned
 * have finished. Idle streams (parked ones are woken) steal its tasks.
 * Called from a task, it runs fn within the open region.
 *
 * Context: a ULT or a tasklet running on a stream, or a fork-join task.
 * Switches: never; while it runs, the stream runs nothing else.
 * Returns: COEXEC_OK; COEXEC_EINVAL (fn NULL); COEXEC_ENOTINIT;
 * COEXEC_ECONTEXT (an external thread, or a scheduler's own code);
 * COEXEC_ENOMEM (the stream's deque could not be mapped; or a spawn found
 * the deque full and its overflow could not be allocated: then the
 * region's results are not to be used).
 */
COEXEC_API int coexec_fj_run(void (*fn)(coexec_fj_t *coexec_fj_, void *arg),
                             void *arg);

/* The range body of coexec_parallel_for: runs indices [begin, end). */
typedef void (*coexec_range_fn)(int64_t begin, int64_t end, void *arg);

/*
 * Runs body over [begin, end) in chunks of at most `grain` indices (0: one
 * chosen from the range and the number of streams), splitting the range
 * in halves as fork-join tasks so that idle streams take parts of it.
 * Each index is in exactly one chunk; chunks may run in any order and
 * concurrently. body follows the rules of a task (it may not block).
 *
 * Context: as coexec_fj_run (a ULT, a tasklet, or a task: then nested).
 * Switches: never.
 * Returns: COEXEC_OK (also for an empty range);
 * COEXEC_EINVAL (body NULL, end < begin, grain < 0); COEXEC_ERANGE (end -
 * begin overflows int64_t); COEXEC_ENOTINIT; COEXEC_ECONTEXT;
 * COEXEC_ENOMEM.
 */
COEXEC_API int coexec_parallel_for(int64_t begin, int64_t end, int64_t grain,
                                   coexec_range_fn body, void *arg);

/* The body of coexec_parallel_reduce: folds indices [begin, end) into
 * acc, which starts as a copy of the identity. */
typedef void (*coexec_reduce_fn)(int64_t begin, int64_t end, void *acc,
                                 void *arg);
/* Folds `other` into acc (both `size` bytes); must be associative. */
typedef void (*coexec_combine_fn)(void *acc, const void *other, void *arg);

/* Largest accumulator coexec_parallel_reduce takes, in bytes. */
#define COEXEC_REDUCE_MAX 256

/*
 * A reduction over [begin, end): each chunk (as in coexec_parallel_for)
 * folds its indices into an accumulator that starts as a copy of
 * `identity` (`size` bytes), and accumulators are combined pairwise,
 * lower range into higher, so an associative combine gives the serial
 * result (a commutative one is not needed). The result is written to
 * *result (which may be identity itself). An empty range gives identity.
 *
 * Context: as coexec_parallel_for. Switches: never.
 * Returns: COEXEC_OK;
 * COEXEC_EINVAL (a NULL pointer or function, end < begin, grain < 0, size
 * 0 or over COEXEC_REDUCE_MAX); COEXEC_ERANGE; COEXEC_ENOTINIT;
 * COEXEC_ECONTEXT; COEXEC_ENOMEM.
 */
COEXEC_API int coexec_parallel_reduce(int64_t begin, int64_t end,
                                      int64_t grain, void *result, size_t size,
                                      const void *identity,
                                      coexec_reduce_fn body,
                                      coexec_combine_fn combine, void *arg);

/* ---- what the macros expand to; not for direct use ------------------------ */

/*
 * The out-of-line halves of the inline spawn and sync that the task macros
 * expand to: push_slow_ takes a record when the running stream's deque is
 * full (the overflow goes to the heap); grow_ shares the older half of the
 * deque's private tasks with thieves once one asked for work; sync_slow_
 * syncs task t when it may have been stolen or sits in the overflow, and
 * runs the thief's tasks until a stolen t is done. Exported for the macros
 * only: use the macros, never these.
 * Context: a fork-join task or region function, with the running stream's
 * worker fj. Switches: never.
 * Returns: push_slow_ the record to write (never NULL: when the overflow
 * cannot be allocated it is a record whose task is dropped, and the
 * region returns COEXEC_ENOMEM); sync_slow_ the record that holds t's
 * result.
 */
COEXEC_API coexec_fj_task_t *coexec_fj_push_slow_(coexec_fj_t *fj);
COEXEC_API void coexec_fj_grow_(coexec_fj_t *fj);
COEXEC_API coexec_fj_task_t *coexec_fj_sync_slow_(coexec_fj_t *fj,
                                                  coexec_fj_task_t *t);

#define COEXEC_FJ_LIKELY_(x) __builtin_expect(!!(x), 1)
#define COEXEC_FJ_UNUSED_ __attribute__((unused))

static inline coexec_fj_task_t *coexec_fj_push_(coexec_fj_t *fj)
{
    coexec_fj_task_t *t = fj->head_;
    if (__builtin_expect(t == fj->end_, 0))
        return coexec_fj_push_slow_(fj);
    fj->head_ = t + 1;
    return t;
}

static inline void coexec_fj_pushed_(coexec_fj_t *fj)
{
    if (__builtin_expect(__atomic_load_n(&fj->splitreq_, __ATOMIC_RELAXED) != 0,
                         0))
        coexec_fj_grow_(fj);
}

COEXEC_END_DECLS

#include "fj_tasks.h"

/* Spawns task NAME with its arguments into the running stream's deque. */
#define COEXEC_FJ_SPAWN(NAME, ...) NAME##_fj_spawn_(coexec_fj_, ##__VA_ARGS__)
/* Syncs the latest unsynced spawn (of task NAME): runs it here if nobody
 * stole it, else helps its thief until it is done; evaluates to its
 * result. */
#define COEXEC_FJ_SYNC(NAME) NAME##_fj_sync_(coexec_fj_)
/* Calls task NAME as a plain function (no spawn); evaluates to its result. */
#define COEXEC_FJ_CALL(NAME, ...) NAME##_fj_body_(coexec_fj_, ##__VA_ARGS__)
/* Opens a region running task NAME: COEXEC_FJ_RUN(NAME, &out, args...)
 * (no `&out` for a void task); evaluates to coexec_fj_run's return code
 * and stores the result in out on success (out may be NULL). */
#define COEXEC_FJ_RUN(NAME, ...) NAME##_fj_open_(__VA_ARGS__)

#endif /* COEXEC_FJ_H */
