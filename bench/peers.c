/*
 * bench/peers.c: the same work with what every Linux server already has:
 * pthreads (create/join, a mutex + condition variable ping-pong) and OpenMP
 * tasks (GCC's libgomp). The OpenMP ones are built only when CMake found
 * OpenMP; otherwise they report NA.
 *
 * Threads that stand for xstreams are pinned like them: the first on the
 * process's first CPU, the second on its second.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#ifdef COEXEC_BENCH_HAVE_OPENMP
#include <omp.h>
#endif

#include "bench.h"

/* ---- pthread_create_join ------------------------------------------------------ */

#define PT_THREADS 1000

static void *pt_mark(void *arg)
{
    *(volatile unsigned char *)arg = 1;
    return NULL;
}

static int bench_pthread_create_join(bench_run_t *r)
{
    pthread_t *t = calloc(PT_THREADS, sizeof *t);
    unsigned char *mark = calloc(PT_THREADS, 1);
    if (!t || !mark) {
        free(t);
        free(mark);
        return bench_fail(r, "out of memory");
    }
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        memset(mark, 0, PT_THREADS);
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < PT_THREADS; i++) {
            int rc = pthread_create(&t[i], NULL, pt_mark, &mark[i]);
            if (BENCH_UNLIKELY(rc != 0)) {
                for (int j = 0; j < i; j++)
                    pthread_join(t[j], NULL);
                bench_fail(r, "pthread_create: %s", strerror(rc));
                goto out;
            }
        }
        for (int i = 0; i < PT_THREADS; i++)
            pthread_join(t[i], NULL);
        uint64_t t1 = bench_now_ns();
        for (int i = 0; i < PT_THREADS; i++)
            if (!mark[i]) {
                bench_fail(r, "thread %d did not run", i);
                goto out;
            }
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / PT_THREADS);
    }
    bench_setup(r, "create %d threads (default attributes), then join each",
                PT_THREADS);
out:
    free(t);
    free(mark);
    return r->error[0] ? -1 : 0;
}

/* ---- pthread_mutex_cond_pingpong_2t --------------------------------------------- */

#define MC_ROUNDS 1000

static struct mc_shared {
    pthread_mutex_t mu;
    pthread_cond_t to_b, to_a;
    int turn; /* 0: A's, 1: B's, 2: stop */
    long answered;
    int cpu[2];
    int pin_err[2];
    bench_run_t *r;
} mc;

static void *mc_responder(void *p)
{
    (void)p;
    mc.pin_err[1] = bench_pin_self(mc.cpu[1]);
    pthread_mutex_lock(&mc.mu);
    for (;;) {
        while (mc.turn == 0)
            pthread_cond_wait(&mc.to_b, &mc.mu);
        if (mc.turn == 2)
            break;
        mc.turn = 0;
        mc.answered++;
        pthread_cond_signal(&mc.to_a);
    }
    pthread_mutex_unlock(&mc.mu);
    return NULL;
}

static void *mc_timer(void *p)
{
    bench_run_t *r = p;
    mc.pin_err[0] = bench_pin_self(mc.cpu[0]);
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        uint64_t t0 = bench_now_ns();
        pthread_mutex_lock(&mc.mu);
        for (int i = 0; i < MC_ROUNDS; i++) {
            mc.turn = 1;
            pthread_cond_signal(&mc.to_b);
            while (mc.turn != 0)
                pthread_cond_wait(&mc.to_a, &mc.mu);
        }
        pthread_mutex_unlock(&mc.mu);
        uint64_t t1 = bench_now_ns();
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / MC_ROUNDS);
    }
    pthread_mutex_lock(&mc.mu);
    mc.turn = 2;
    pthread_cond_signal(&mc.to_b);
    pthread_mutex_unlock(&mc.mu);
    return NULL;
}

static int bench_pthread_mutex_cond_pingpong_2t(bench_run_t *r)
{
    if (bench_ncpus < 2)
        return bench_fail(r, "needs 2 CPUs, the process may use %d",
                          bench_ncpus);
    memset(&mc, 0, sizeof mc);
    pthread_mutex_init(&mc.mu, NULL);
    pthread_cond_init(&mc.to_a, NULL);
    pthread_cond_init(&mc.to_b, NULL);
    mc.cpu[0] = bench_cpus[0];
    mc.cpu[1] = bench_cpus[1];
    pthread_t a, b;
    if (pthread_create(&b, NULL, mc_responder, NULL) != 0)
        return bench_fail(r, "pthread_create failed");
    if (pthread_create(&a, NULL, mc_timer, r) != 0) {
        pthread_mutex_lock(&mc.mu);
        mc.turn = 2;
        pthread_cond_signal(&mc.to_b);
        pthread_mutex_unlock(&mc.mu);
        pthread_join(b, NULL);
        return bench_fail(r, "pthread_create failed");
    }
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_cond_destroy(&mc.to_a);
    pthread_cond_destroy(&mc.to_b);
    pthread_mutex_destroy(&mc.mu);
    bench_setup(r, "2 pthreads on CPU %d and CPU %d, %d round trips per rep",
                mc.cpu[0], mc.cpu[1], MC_ROUNDS);
    for (int i = 0; i < 2; i++)
        if (mc.pin_err[i])
            return bench_fail(r, "cannot pin a thread to CPU %d: %s",
                              mc.cpu[i], strerror(mc.pin_err[i]));
    long expect = (long)(r->warmups + r->reps) * MC_ROUNDS;
    if (mc.answered != expect)
        return bench_fail(r, "%ld answers, expected %ld", mc.answered, expect);
    return 0;
}

/* ---- OpenMP tasks ------------------------------------------------------------------- */

#define OMP_TASKS 10000
#define FIB_N 24
#define FIB_RESULT 46368

#ifdef COEXEC_BENCH_HAVE_OPENMP

static int omp_pin(void)
{
    int me = omp_get_thread_num();
    return me < bench_ncpus ? bench_pin_self(bench_cpus[me]) : -1;
}

static int bench_omp_task_create_join(bench_run_t *r)
{
    int pin_err = 0, nthreads = 0;
    long counted = 0, bad = 0;
#pragma omp parallel num_threads(1)
    {
        pin_err = omp_pin();
        nthreads = omp_get_num_threads();
        for (int rep = 0; rep < r->warmups + r->reps; rep++) {
            if (rep < r->warmups) { /* verified, untimed */
                counted = 0;
                for (int i = 0; i < OMP_TASKS; i++) {
#pragma omp task shared(counted)
                    {
#pragma omp atomic
                        counted++;
                    }
                }
#pragma omp taskwait
                bad |= counted != OMP_TASKS;
                continue;
            }
            uint64_t t0 = bench_now_ns();
            for (int i = 0; i < OMP_TASKS; i++) {
#pragma omp task
                {
                    /* empty, but kept: GCC drops a task with no body */
                    __asm__ volatile("");
                }
            }
#pragma omp taskwait
            uint64_t t1 = bench_now_ns();
            bench_sample(r, (double)(t1 - t0) / OMP_TASKS);
        }
    }
    bench_setup(r, "libgomp, parallel num_threads(1) on CPU %d, %d empty "
                   "tasks then taskwait",
                bench_cpus[0], OMP_TASKS);
    if (nthreads != 1)
        return bench_fail(r, "the team has %d threads, not 1", nthreads);
    if (pin_err)
        return bench_fail(r, "cannot pin the thread to CPU %d", bench_cpus[0]);
    if (bad)
        return bench_fail(r, "taskwait returned before every task ran");
    return 0;
}

static long omp_fib(int n)
{
    if (n < 2)
        return n;
    long x, y;
#pragma omp task shared(x)
    x = omp_fib(n - 1);
    y = omp_fib(n - 2);
#pragma omp taskwait
    return x + y;
}

static int omp_fib_bench(bench_run_t *r, int nt)
{
    if (bench_ncpus < nt)
        return bench_fail(r, "needs %d CPUs, the process may use %d", nt,
                          bench_ncpus);
    int pin_err = 0, nthreads = 0;
    long wrong = 0;
#pragma omp parallel num_threads(nt)
    {
        int e = omp_pin();
#pragma omp atomic
        pin_err |= e != 0;
#pragma omp barrier
#pragma omp single
        {
            nthreads = omp_get_num_threads();
            for (int rep = 0; rep < r->warmups + r->reps; rep++) {
                uint64_t t0 = bench_now_ns();
                long v = omp_fib(FIB_N);
                uint64_t t1 = bench_now_ns();
                if (v != FIB_RESULT)
                    wrong = v;
                if (rep >= r->warmups)
                    bench_sample(r, (double)(t1 - t0) / 1e6);
            }
        }
    }
    bench_setup(r, "libgomp, parallel num_threads(%d) pinned from CPU %d, "
                   "fib(24) in a single construct",
                nt, bench_cpus[0]);
    if (nthreads != nt)
        return bench_fail(r, "the team has %d threads, not %d", nthreads, nt);
    if (pin_err)
        return bench_fail(r, "cannot pin the team's threads");
    if (wrong)
        return bench_fail(r, "fib(%d) = %ld, expected %d", FIB_N, wrong,
                          FIB_RESULT);
    return 0;
}

static int bench_omp_fib_1t(bench_run_t *r) { return omp_fib_bench(r, 1); }
static int bench_omp_fib_2t(bench_run_t *r) { return omp_fib_bench(r, 2); }

#else /* no OpenMP */

static int no_openmp(bench_run_t *r)
{
    return bench_fail(r, "built without OpenMP");
}
#define bench_omp_task_create_join no_openmp
#define bench_omp_fib_1t no_openmp
#define bench_omp_fib_2t no_openmp

#endif

const bench_def_t bench_peer_defs[] = {
    {"pthread_create_join", "ns/op",
     "create 1,000 pthreads, then join each; per create+join pair",
     bench_pthread_create_join, 0},
    {"pthread_mutex_cond_pingpong_2t", "ns/roundtrip",
     "2 pinned pthreads hand a turn back and forth with mutex + condvars",
     bench_pthread_mutex_cond_pingpong_2t, 0},
    {"omp_task_create_join", "ns/op",
     "libgomp, 1 thread: 10,000 empty `omp task`, then taskwait; per task",
     bench_omp_task_create_join, 1},
    {"omp_fib_1t", "ms", "libgomp, 1 thread: fib(24) with omp task + taskwait",
     bench_omp_fib_1t, 3},
    {"omp_fib_2t", "ms", "libgomp, 2 threads: the same",
     bench_omp_fib_2t, 3},
    {NULL, NULL, NULL, NULL, 0},
};
