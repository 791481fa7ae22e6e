/*
 * tests/fj/fj_test.h: what the suites of test_fj share: the stream count,
 * fib as a task and serially, a sum reduction, a runtime with a chosen
 * deque size, and the loop that keeps a region spawning until a thief has
 * taken one of its tasks.
 *
 * Timing never decides a verdict. A test that needs a steal to have
 * happened keeps spawning (each spawn is where the owner honours a
 * thief's split request) until it has, and fails only past
 * CH_WAIT_LIMIT_S, a hang guard. Loop counts go through ch_iters() so
 * COEXEC_TEST_SCALE shrinks them under the sanitizers and valgrind.
 */
#ifndef COEXEC_TEST_FJ_TEST_H
#define COEXEC_TEST_FJ_TEST_H

#define _GNU_SOURCE
#include "harness.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* More streams than the machine's cores: thieves and owners interleave. */
#define NSTREAMS 4

/* fib as the header documents it: a spawn, a plain call, a sync. */
COEXEC_FJ_TASK_1(long, fib, int, n)
{
    if (n < 2)
        return n;
    COEXEC_FJ_SPAWN(fib, n - 1);
    long b = COEXEC_FJ_CALL(fib, n - 2);
    long a = COEXEC_FJ_SYNC(fib);
    return a + b;
}

/* A task that ends at once. */
COEXEC_FJ_TASK_1(long, fj_bump, long, x)
{
    return x + 1;
}

/*
 * Keeps the region spawning and syncing fj_bump until *flag is set (by a
 * task a thief ran), or the hang limit passes (a failure). A thief that
 * finds nothing shared asks for a split; the owner shares on its next
 * spawn, so a region that spawns nothing more is never stolen from.
 */
static inline bool fj_spawn_until(coexec_fj_t *coexec_fj_, atomic_int *flag)
{
    double t0 = ch_now();
    for (long i = 0; !atomic_load(flag); i++) {
        COEXEC_FJ_SPAWN(fj_bump, i);
        long r = COEXEC_FJ_SYNC(fj_bump);
        if (r != i + 1) {
            ch_fail_at(__FILE__, __LINE__, "fj_bump(%ld) gave %ld", i, r);
            return false;
        }
        if (i % 256 == 255) {
            sched_yield(); /* streams outnumber cores (no verdict) */
            if (ch_now() - t0 > CH_WAIT_LIMIT_S) {
                ch_fail_at(__FILE__, __LINE__,
                           "no thief took a task in %.0f s", CH_WAIT_LIMIT_S);
                return false;
            }
        }
    }
    return true;
}

/* A sum of indices, as a reduction body and combine. */
static inline void sum_body(int64_t begin, int64_t end, void *acc, void *arg)
{
    int64_t *s = acc;
    for (int64_t i = begin; i < end; i++)
        *s += i;
}

static inline void sum_combine(void *acc, const void *other, void *arg)
{
    *(int64_t *)acc += *(const int64_t *)other;
}

/* Sum of [begin, end) by coexec_parallel_reduce, checking its code. */
static inline int64_t sum_reduce(int64_t begin, int64_t end, int64_t grain)
{
    const int64_t zero = 0;
    int64_t s = -1;
    CH_CHECK_RC(coexec_parallel_reduce(begin, end, grain, &s, sizeof s, &zero,
                                       sum_body, sum_combine, NULL),
                COEXEC_OK);
    return s;
}

static inline int64_t sum_serial(int64_t begin, int64_t end)
{
    return (end - begin) * (begin + end - 1) / 2;
}

/* Opens a region running fn(arg) ch_iters(base, 2) times, each to return
 * COEXEC_OK (test function only); returns how many. */
static inline long fj_run_rounds(long base,
                                 void (*fn)(coexec_fj_t *coexec_fj_, void *),
                                 void *arg)
{
    long rounds = ch_iters(base, 2);
    for (long r = 0; r < rounds; r++)
        CH_ASSERT_OK(coexec_fj_run(fn, arg));
    return rounds;
}

/* coexec_init with nstreams streams and, when slots is not 0, that many
 * task records per deque (fatal assert on failure). */
static inline void fj_init(int nstreams, size_t slots)
{
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = nstreams;
    if (slots)
        cfg.fj_slots = slots;
    int rc = coexec_init(&cfg);
    if (rc != COEXEC_OK)
        fprintf(stderr, "    coexec_init: %s\n", coexec_init_error());
    CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
}

/* The suites, one file per group; test_fj.c lists them. */
extern const ch_test_t fj_results_tests[];
extern const ch_test_t fj_steal_tests[];
extern const ch_test_t fj_nested_tests[];
extern const ch_test_t fj_concurrency_tests[];
extern const ch_test_t fj_contexts_tests[];
extern const ch_test_t fj_rules_tests[];
extern const ch_test_t fj_errors_tests[];
extern const ch_test_t fj_loops_tests[];
extern const ch_test_t fj_spill_tests[];
extern const ch_test_t fj_fork_tests[];

#endif /* COEXEC_TEST_FJ_TEST_H */
