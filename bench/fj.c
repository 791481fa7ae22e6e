/*
 * bench/fj.c: the fork-join tier (coexec/fj.h): fib with one task per
 * call, an irregular N-queens tree, and coexec_parallel_for beside the same
 * loop under `#pragma omp parallel for schedule(static)` (its OpenMP peer
 * lives here because both must run the same loop body over the same data).
 *
 * Each libcoexec benchmark starts its own runtime (1 or 2 xstreams, the
 * default setup, streams pinned by the library), opens one fork-join region
 * per rep from the main ULT on xstream 0 (the region's opening is timed:
 * it is what a user pays per call) and finalizes the runtime. Every rep's
 * result is checked. The OpenMP threads are pinned like the other OpenMP
 * peers: thread i on the process's i-th CPU.
 */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef COEXEC_BENCH_HAVE_OPENMP
#include <omp.h>
#endif

#include <coexec.h>
#include <coexec/fj.h>

#include "bench.h"

/* ---- one region per rep, its result checked ---------------------------------- */

/* Opens one region (the timed work of a rep) and stores its result. */
typedef int (*fj_region_fn)(long *out);

/* Runs `region` once per rep on nxs streams from the main ULT; every
 * result must be `expect` (`what` names it in the failure). */
static int fj_region_bench(bench_run_t *r, int nxs, fj_region_fn region,
                           long expect, const char *what, const char *setup)
{
    coexec_pool_t pool;
    if (bench_rt_start(r, nxs, &pool) != 0)
        return -1;
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        long v = -1;
        uint64_t t0 = bench_now_ns();
        int rc = region(&v);
        uint64_t t1 = bench_now_ns();
        CK(rc);
        if (v != expect) {
            bench_fail(r, "%s = %ld, expected %ld", what, v, expect);
            goto out;
        }
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / 1e6);
    }
    bench_append_setup(r, setup);
out:
    if (bench_rt_stop(r) != 0)
        r->nsamples = 0;
    return r->error[0] ? -1 : 0;
}

/* ---- fj_fib_1es / _2es ------------------------------------------------------ */

#define FJ_FIB_N 30
#define FJ_FIB_RESULT 832040
#define FJ_FIB_TASKS 1346268 /* calls with n >= 2: fib(31) - 1 */

COEXEC_FJ_TASK_1(long, fj_fib, int, n)
{
    if (n < 2)
        return n;
    COEXEC_FJ_SPAWN(fj_fib, n - 1);
    long b = COEXEC_FJ_CALL(fj_fib, n - 2);
    long a = COEXEC_FJ_SYNC(fj_fib);
    return a + b;
}

static int fj_fib_region(long *out)
{
    return COEXEC_FJ_RUN(fj_fib, out, FJ_FIB_N);
}

static int fj_fib_bench(bench_run_t *r, int nxs)
{
    if (fj_region_bench(r, nxs, fj_fib_region, FJ_FIB_RESULT, "fib(30)",
                        "main ULT on xs0: COEXEC_FJ_RUN(fib, 30) per rep; "
                        "each call with n >= 2 spawns fib(n-1), calls "
                        "fib(n-2), syncs (1,346,268 tasks)") != 0)
        return -1;
    double ms = bench_median(r->samples, r->nsamples);
    snprintf(r->reference, sizeof r->reference,
             "%.2f ns per task (omp_fib_*es report theirs)",
             ms * 1e6 / FJ_FIB_TASKS);
    return 0;
}

static int bench_fj_fib_1es(bench_run_t *r) { return fj_fib_bench(r, 1); }
static int bench_fj_fib_2es(bench_run_t *r) { return fj_fib_bench(r, 2); }

/* ---- fj_nqueens_2es ----------------------------------------------------------- */

#define NQ_N 12
#define NQ_RESULT 14200 /* solutions of the 12-queens problem */

/* Queens placed in rows 0..row-1: column of each, one byte a row. Passed
 * by value, it fits a task's arguments. */
typedef struct nq_board {
    unsigned char col[NQ_N];
} nq_board_t;

/* May a queen go at (row, c) beside the queens of rows 0..row-1? */
static inline int nq_free(const nq_board_t *b, int row, int c)
{
    for (int i = 0; i < row; i++) {
        int d = b->col[i] - c;
        if (d == 0 || d == row - i || d == i - row)
            return 0;
    }
    return 1;
}

/* Counts the completions of b: one task per valid placement in row. */
COEXEC_FJ_TASK_2(long, fj_nqueens, nq_board_t, b, int, row)
{
    if (row == NQ_N)
        return 1;
    int spawned = 0;
    for (int c = 0; c < NQ_N; c++) {
        if (!nq_free(&b, row, c))
            continue;
        nq_board_t next = b;
        next.col[row] = (unsigned char)c;
        COEXEC_FJ_SPAWN(fj_nqueens, next, row + 1);
        spawned++;
    }
    long sum = 0;
    while (spawned--)
        sum += COEXEC_FJ_SYNC(fj_nqueens);
    return sum;
}

static int fj_nqueens_region(long *out)
{
    nq_board_t empty;
    memset(&empty, 0, sizeof empty);
    return COEXEC_FJ_RUN(fj_nqueens, out, empty, 0);
}

static int bench_fj_nqueens_2es(bench_run_t *r)
{
    return fj_region_bench(r, 2, fj_nqueens_region, NQ_RESULT,
                           "12-queens solutions",
                           "main ULT on xs0: COEXEC_FJ_RUN per rep of a task "
                           "counting the 12-queens solutions, spawning one "
                           "task per valid placement at each level (board "
                           "of 12 bytes by value), syncing them all");
}

/* ---- parallel_for_2es / omp_parallel_for_2es ------------------------------------ */

#define PF_N (1 << 20) /* doubles: 8 MiB, allocated and touched once */

/* The loop's constants, passed in memory so that the compiler cannot fold
 * them into the body. */
struct pf_args {
    double *a;
    double x, b;
};

static double *pf_array; /* shared by both benchmarks: the same data */
static struct pf_args pf;

/* One element: a square root, then a degree-16 Horner polynomial in it
 * (about 35 flops); compute-bound, one 8-byte store per element. */
static inline double pf_elem(int64_t i, double x, double b)
{
    double s = sqrt((double)i) * x + b;
    double v = 1.0;
    for (int k = 1; k <= 16; k++)
        v = v * s + 1.0 / k;
    return v;
}

static void pf_body(int64_t begin, int64_t end, void *arg)
{
    const struct pf_args *p = arg;
    double *a = p->a;
    double x = p->x, b = p->b;
    for (int64_t i = begin; i < end; i++)
        a[i] = pf_elem(i, x, b);
}

/* Allocates and touches the array once per process (no page fault is
 * timed); 0, or -1 after bench_fail. */
static int pf_setup(bench_run_t *r)
{
    if (!pf_array) {
        pf_array = malloc(PF_N * sizeof *pf_array);
        if (!pf_array)
            return bench_fail(r, "out of memory");
        memset(pf_array, 0, PF_N * sizeof *pf_array);
    }
    pf.a = pf_array;
    pf.x = 1.0 / 1024; /* s in [0.5, 1.5] over 2^20 indices */
    pf.b = 0.5;
    return 0;
}

/* Clears the array (before a verified rep). */
static void pf_clear(void) { memset(pf_array, 0xff, PF_N * sizeof *pf_array); }

/* 0 when every element holds its value; else -1 after bench_fail. */
static int pf_check(bench_run_t *r)
{
    for (int64_t i = 0; i < PF_N; i++) {
        double want = pf_elem(i, pf.x, pf.b);
        if (!(fabs(pf_array[i] - want) <= 1e-12 * fabs(want)))
            return bench_fail(r, "a[%lld] = %g, expected %g", (long long)i,
                              pf_array[i], want);
    }
    return 0;
}

static const char pf_text[] =
    "a[i] = poly16(sqrt(i) * x + b) over 2^20 doubles (8 MiB, touched "
    "before the reps); the warm-ups clear the array and check every element";

static int bench_parallel_for_2es(bench_run_t *r)
{
    if (pf_setup(r) != 0)
        return -1;
    coexec_pool_t pool;
    if (bench_rt_start(r, 2, &pool) != 0)
        return -1;
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        if (rep < r->warmups)
            pf_clear();
        uint64_t t0 = bench_now_ns();
        int rc = coexec_parallel_for(0, PF_N, 0, pf_body, &pf);
        uint64_t t1 = bench_now_ns();
        CK(rc);
        if (rep < r->warmups && pf_check(r) != 0)
            goto out;
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / 1e6);
    }
    bench_append_setup(r, "main ULT on xs0: coexec_parallel_for(0, 2^20, "
                          "grain 0 = the library's choice) per rep;");
    bench_append_setup(r, pf_text);
out:
    if (bench_rt_stop(r) != 0)
        r->nsamples = 0;
    return r->error[0] ? -1 : 0;
}

#ifdef COEXEC_BENCH_HAVE_OPENMP

static int bench_omp_parallel_for_2es(bench_run_t *r)
{
    if (bench_need_cpus(r, 2) != 0 || pf_setup(r) != 0)
        return -1;
    int pin_err = 0, moved = 0, nthreads = 0;
    /* Pins the team; libgomp keeps its threads for the next regions of
     * the same size, which the check after the reps confirms. */
#pragma omp parallel num_threads(2) reduction(| : pin_err)
    pin_err = bench_pin_self(bench_cpus[omp_get_thread_num()]) != 0;
    if (pin_err)
        return bench_fail(r, "cannot pin the team's threads");
    double *a = pf.a;
    double x = pf.x, b = pf.b;
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        if (rep < r->warmups)
            pf_clear();
        uint64_t t0 = bench_now_ns();
#pragma omp parallel for schedule(static) num_threads(2)
        for (int64_t i = 0; i < PF_N; i++)
            a[i] = pf_elem(i, x, b);
        uint64_t t1 = bench_now_ns();
        if (rep < r->warmups && pf_check(r) != 0)
            return -1;
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / 1e6);
    }
#pragma omp parallel num_threads(2) reduction(| : moved)
    {
        moved = sched_getcpu() != bench_cpus[omp_get_thread_num()];
#pragma omp single
        nthreads = omp_get_num_threads();
    }
    bench_setup(r, "libgomp, `parallel for schedule(static) num_threads(2)` "
                   "per rep, threads pinned on CPU %d and CPU %d;",
                bench_cpus[0], bench_cpus[1]);
    bench_append_setup(r, pf_text);
    if (nthreads != 2)
        return bench_fail(r, "the team has %d threads, not 2", nthreads);
    if (moved)
        return bench_fail(r, "a team thread is not on its CPU after the reps");
    return 0;
}

#else /* no OpenMP */

static int bench_omp_parallel_for_2es(bench_run_t *r)
{
    return bench_fail(r, "built without OpenMP");
}

#endif

/* Goals: BENCH.md, "Fork-join: the figures to beat". */
const bench_def_t bench_fj_defs[] = {
    {"fj_fib_1es", "ms",
     "1 xstream: fib(30), one fork-join task per call (spawn n-1, call n-2, "
     "sync)",
     bench_fj_fib_1es, 3, 8.5,
     "goal 2x Lace (BENCH.md); Lace 1.4.2 and oneTBB 2021.8 measured on "
     "this machine kind: docs/BENCHMARKS.md; in-run peer: omp_fib_1es"},
    {"fj_fib_2es", "ms", "the same on 2 xstreams", bench_fj_fib_2es, 3, 3.5,
     "goal 2x Lace (BENCH.md); Lace and oneTBB: docs/BENCHMARKS.md; "
     "in-run peer: omp_fib_2es (capped, compare per task)"},
    {"fj_nqueens_2es", "ms",
     "2 xstreams: count the 12-queens solutions, one fork-join task per "
     "valid placement",
     bench_fj_nqueens_2es, 3, 0, NULL},
    {"parallel_for_2es", "ms",
     "2 xstreams: coexec_parallel_for over 2^20 doubles, ~35 flops each",
     bench_parallel_for_2es, 3, 0,
     "goal: within 10% of omp_parallel_for_2es (same loop, same data)"},
    {"omp_parallel_for_2es", "ms",
     "libgomp, 2 threads: the same loop, `parallel for schedule(static)`",
     bench_omp_parallel_for_2es, 3, 0, "the peer of parallel_for_2es"},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};
