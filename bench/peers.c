/*
 * bench/peers.c: the same work with what every Linux server already has:
 * pthreads (create/join, a mutex + condition variable ping-pong, a contended
 * mutex, a message ping-pong through mutex + condvar channels) and OpenMP
 * tasks (GCC's libgomp). The OpenMP ones are built only when CMake found
 * OpenMP; otherwise they report NA.
 *
 * Threads that stand for xstreams are pinned like them: the first on the
 * process's first CPU, the second on its second.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
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
    if (bench_need_cpus(r, 2) != 0)
        return -1;
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

/* ---- pthread_mutex_contended_4t ---------------------------------------------------- */

#define PM_THREADS 4    /* two on each CPU, like mutex_contended's ULTs */
#define PM_PAIRS 25000  /* lock/unlock pairs per thread per rep */

static struct pm_shared {
    pthread_mutex_t mu;
    long counter; /* guarded by mu */
    pthread_barrier_t start, end;
    int cpu[PM_THREADS];
    int pin_err[PM_THREADS];
    long wrong; /* counter values that were not PM_THREADS * PM_PAIRS */
    pthread_mutex_t launch_mu; /* the workers start when all exist */
    pthread_cond_t launch_cv;
    int launch; /* 1: go, -1: leave (not every thread could be created) */
    bench_run_t *r;
} pm;

/* Thread 0 times each rep: from the start barrier to the end barrier. */
static void *pm_worker(void *p)
{
    int me = (int)(intptr_t)p;
    bench_run_t *r = pm.r;
    pm.pin_err[me] = bench_pin_self(pm.cpu[me]);
    pthread_mutex_lock(&pm.launch_mu);
    while (pm.launch == 0)
        pthread_cond_wait(&pm.launch_cv, &pm.launch_mu);
    int go = pm.launch > 0;
    pthread_mutex_unlock(&pm.launch_mu);
    if (!go)
        return NULL;
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        pthread_barrier_wait(&pm.start);
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < PM_PAIRS; i++) {
            pthread_mutex_lock(&pm.mu);
            pm.counter++;
            pthread_mutex_unlock(&pm.mu);
        }
        pthread_barrier_wait(&pm.end);
        if (me == 0) {
            uint64_t t1 = bench_now_ns();
            if (pm.counter != (long)PM_THREADS * PM_PAIRS)
                pm.wrong++;
            pm.counter = 0; /* before the next start barrier */
            if (rep >= r->warmups)
                bench_sample(r, (double)(t1 - t0) /
                                    ((double)PM_THREADS * PM_PAIRS));
        }
    }
    return NULL;
}

static int bench_pthread_mutex_contended_4t(bench_run_t *r)
{
    if (bench_need_cpus(r, 2) != 0)
        return -1;
    memset(&pm, 0, sizeof pm);
    pm.r = r;
    pthread_mutex_init(&pm.mu, NULL);
    pthread_barrier_init(&pm.start, NULL, PM_THREADS);
    pthread_barrier_init(&pm.end, NULL, PM_THREADS);
    for (int i = 0; i < PM_THREADS; i++)
        pm.cpu[i] = bench_cpus[i % 2];
    pthread_mutex_init(&pm.launch_mu, NULL);
    pthread_cond_init(&pm.launch_cv, NULL);
    pthread_t t[PM_THREADS];
    int n = 0;
    for (; n < PM_THREADS; n++)
        if (pthread_create(&t[n], NULL, pm_worker, (void *)(intptr_t)n) != 0)
            break;
    pthread_mutex_lock(&pm.launch_mu);
    pm.launch = n == PM_THREADS ? 1 : -1;
    pthread_cond_broadcast(&pm.launch_cv);
    pthread_mutex_unlock(&pm.launch_mu);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    pthread_cond_destroy(&pm.launch_cv);
    pthread_mutex_destroy(&pm.launch_mu);
    pthread_barrier_destroy(&pm.start);
    pthread_barrier_destroy(&pm.end);
    pthread_mutex_destroy(&pm.mu);
    if (n < PM_THREADS)
        return bench_fail(r, "pthread_create failed");
    bench_setup(r, "4 pthreads, 2 on CPU %d and 2 on CPU %d, each %d "
                   "lock/unlock pairs of one pthread_mutex_t (default) around "
                   "an increment; between two barriers, per pair",
                pm.cpu[0], pm.cpu[1], PM_PAIRS);
    for (int i = 0; i < PM_THREADS; i++)
        if (pm.pin_err[i])
            return bench_fail(r, "cannot pin a thread to CPU %d: %s",
                              pm.cpu[i], strerror(pm.pin_err[i]));
    if (pm.wrong)
        return bench_fail(r, "the counter was wrong in %ld reps", pm.wrong);
    return 0;
}

/* ---- pthread_channel_pingpong_2t ---------------------------------------------------- */

#define PC_ROUNDS 1000

struct pc_msg {
    uint64_t seq;
    uint64_t payload;
};

/* A channel of capacity 1 made of a mutex and two condition variables. */
struct pc_chan {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    int full;
    struct pc_msg slot;
};

static void pc_init(struct pc_chan *c)
{
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->not_empty, NULL);
    pthread_cond_init(&c->not_full, NULL);
    c->full = 0;
}

static void pc_destroy(struct pc_chan *c)
{
    pthread_cond_destroy(&c->not_empty);
    pthread_cond_destroy(&c->not_full);
    pthread_mutex_destroy(&c->mu);
}

static void pc_send(struct pc_chan *c, const struct pc_msg *m)
{
    pthread_mutex_lock(&c->mu);
    while (c->full)
        pthread_cond_wait(&c->not_full, &c->mu);
    c->slot = *m;
    c->full = 1;
    pthread_cond_signal(&c->not_empty);
    pthread_mutex_unlock(&c->mu);
}

static void pc_recv(struct pc_chan *c, struct pc_msg *m)
{
    pthread_mutex_lock(&c->mu);
    while (!c->full)
        pthread_cond_wait(&c->not_empty, &c->mu);
    *m = c->slot;
    c->full = 0;
    pthread_cond_signal(&c->not_full);
    pthread_mutex_unlock(&c->mu);
}

#define PC_STOP UINT64_MAX

static struct pc_shared {
    struct pc_chan to_b, to_a;
    int cpu[2];
    int pin_err[2];
    long answered, wrong;
    bench_run_t *r;
} pc;

static void *pc_responder(void *p)
{
    (void)p;
    pc.pin_err[1] = bench_pin_self(pc.cpu[1]);
    for (;;) {
        struct pc_msg m;
        pc_recv(&pc.to_b, &m);
        if (m.seq == PC_STOP)
            break;
        m.seq++;
        m.payload = ~m.payload;
        pc_send(&pc.to_a, &m);
        pc.answered++;
    }
    return NULL;
}

static void *pc_timer(void *p)
{
    bench_run_t *r = p;
    uint64_t seq = 0;
    pc.pin_err[0] = bench_pin_self(pc.cpu[0]);
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < PC_ROUNDS; i++, seq += 2) {
            struct pc_msg m = {seq, seq * 0x9e3779b97f4a7c15ull};
            pc_send(&pc.to_b, &m);
            pc_recv(&pc.to_a, &m);
            if (m.seq != seq + 1 ||
                m.payload != ~(seq * 0x9e3779b97f4a7c15ull))
                pc.wrong++;
        }
        uint64_t t1 = bench_now_ns();
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / PC_ROUNDS);
    }
    struct pc_msg stop = {PC_STOP, 0};
    pc_send(&pc.to_b, &stop);
    return NULL;
}

static int bench_pthread_channel_pingpong_2t(bench_run_t *r)
{
    if (bench_need_cpus(r, 2) != 0)
        return -1;
    memset(&pc, 0, sizeof pc);
    pc_init(&pc.to_a);
    pc_init(&pc.to_b);
    pc.cpu[0] = bench_cpus[0];
    pc.cpu[1] = bench_cpus[1];
    pthread_t a, b;
    if (pthread_create(&b, NULL, pc_responder, NULL) != 0)
        return bench_fail(r, "pthread_create failed");
    if (pthread_create(&a, NULL, pc_timer, r) != 0) {
        struct pc_msg stop = {PC_STOP, 0};
        pc_send(&pc.to_b, &stop);
        pthread_join(b, NULL);
        return bench_fail(r, "pthread_create failed");
    }
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pc_destroy(&pc.to_a);
    pc_destroy(&pc.to_b);
    bench_setup(r, "2 pthreads on CPU %d and CPU %d exchange a 16-byte "
                   "message through two capacity-1 channels (mutex + 2 "
                   "condvars each), %d round trips per rep",
                pc.cpu[0], pc.cpu[1], PC_ROUNDS);
    for (int i = 0; i < 2; i++)
        if (pc.pin_err[i])
            return bench_fail(r, "cannot pin a thread to CPU %d: %s",
                              pc.cpu[i], strerror(pc.pin_err[i]));
    long expect = (long)(r->warmups + r->reps) * PC_ROUNDS;
    if (pc.answered != expect || pc.wrong)
        return bench_fail(r, "%ld answers (expected %ld), %ld wrong",
                          pc.answered, expect, pc.wrong);
    return 0;
}

/* ---- OpenMP tasks ------------------------------------------------------------------- */

#define OMP_TASKS 10000
#define FIB_N 24
/* omp_fib_1es / _2es, the peers of fj_fib_1es / _2es: fib(30) where a run
 * takes well under a second; on 2 threads libgomp takes over 1 s a run for
 * fib(30) on the project's VM, so that one is capped at fib(25). */
#define FJ_FIB_N 30
#define FJ_FIB_N_2T 25

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

/* fib(n) and the number of calls with n >= 2 (tasks), by iteration. */
static long fib_iter(int n, long *tasks)
{
    long a = 0, b = 1; /* fib(i), fib(i + 1) */
    for (int i = 0; i < n + 1; i++) {
        long c = a + b;
        a = b;
        b = c;
    }
    *tasks = a - 1; /* fib(n + 1) - 1 */
    return b - a;   /* fib(n) */
}

static int omp_fib_bench(bench_run_t *r, int nt, int n)
{
    if (bench_need_cpus(r, nt) != 0)
        return -1;
    int pin_err = 0, nthreads = 0;
    long tasks, expect = fib_iter(n, &tasks), wrong = 0;
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
                long v = omp_fib(n);
                uint64_t t1 = bench_now_ns();
                if (v != expect)
                    wrong = v;
                if (rep >= r->warmups)
                    bench_sample(r, (double)(t1 - t0) / 1e6);
            }
        }
    }
    bench_setup(r, "libgomp, parallel num_threads(%d) pinned from CPU %d, "
                   "fib(%d) in a single construct (%ld tasks)",
                nt, bench_cpus[0], n, tasks);
    if (nthreads != nt)
        return bench_fail(r, "the team has %d threads, not %d", nthreads, nt);
    if (pin_err)
        return bench_fail(r, "cannot pin the team's threads");
    if (wrong)
        return bench_fail(r, "fib(%d) = %ld, expected %ld", n, wrong, expect);
    if (r->nsamples > 0) {
        double ms = bench_median(r->samples, r->nsamples);
        r->units = (double)tasks;
        snprintf(r->reference, sizeof r->reference, "%.1f ns per task",
                 ms * 1e6 / (double)tasks);
    }
    return 0;
}

static int bench_omp_fib_1t(bench_run_t *r)
{
    return omp_fib_bench(r, 1, FIB_N);
}
static int bench_omp_fib_2t(bench_run_t *r)
{
    return omp_fib_bench(r, 2, FIB_N);
}
/* The peers of fj_fib_1es / _2es (bench/fj.c). */
static int bench_omp_fib_1es(bench_run_t *r)
{
    return omp_fib_bench(r, 1, FJ_FIB_N);
}
static int bench_omp_fib_2es(bench_run_t *r)
{
    return omp_fib_bench(r, 2, FJ_FIB_N_2T);
}

#else /* no OpenMP */

static int no_openmp(bench_run_t *r)
{
    return bench_fail(r, "built without OpenMP");
}
#define bench_omp_task_create_join no_openmp
#define bench_omp_fib_1t no_openmp
#define bench_omp_fib_2t no_openmp
#define bench_omp_fib_1es no_openmp
#define bench_omp_fib_2es no_openmp

#endif

const bench_def_t bench_peer_defs[] = {
    {"pthread_create_join", "ns/op",
     "create 1,000 pthreads, then join each; per create+join pair",
     bench_pthread_create_join, 0, 0,
     "the peer of ult_create_join_1es"},
    {"pthread_mutex_cond_pingpong_2t", "ns/roundtrip",
     "2 pinned pthreads hand a turn back and forth with mutex + condvars",
     bench_pthread_mutex_cond_pingpong_2t, 0, 0,
     "a futex sleep/wake round trip: the peer of eventual_pingpong_2es"},
    {"pthread_mutex_contended_4t", "ns/pair",
     "4 pthreads on 2 CPUs lock/unlock one pthread_mutex_t (increment "
     "inside); per pair",
     bench_pthread_mutex_contended_4t, 1, 0, "the peer of mutex_contended"},
    {"pthread_channel_pingpong_2t", "ns/roundtrip",
     "2 pinned pthreads exchange a 16-byte message through two capacity-1 "
     "mutex + condvar channels",
     bench_pthread_channel_pingpong_2t, 0, 0,
     "the peer of channel_pingpong_2es"},
    {"omp_task_create_join", "ns/op",
     "libgomp, 1 thread: 10,000 empty `omp task`, then taskwait; per task",
     bench_omp_task_create_join, 1, 0, NULL},
    {"omp_fib_1t", "ms", "libgomp, 1 thread: fib(24) with omp task + taskwait",
     bench_omp_fib_1t, 3, 0, NULL},
    {"omp_fib_2t", "ms", "libgomp, 2 threads: the same",
     bench_omp_fib_2t, 3, 0, NULL},
    {"omp_fib_1es", "ms",
     "libgomp, 1 thread: fib(30) with omp task + taskwait (peer of fj_fib_1es)",
     bench_omp_fib_1es, 3, 0, NULL},
    {"omp_fib_2es", "ms",
     "libgomp, 2 threads: fib(25), capped (fib(30) takes over 1 s a run); "
     "the peer of fj_fib_2es: compare per task",
     bench_omp_fib_2es, 3, 0,
     "CAPPED at fib(25), 121,392 tasks: not a fib(30) figure; fj_fib_2es "
     "runs 1,346,268"},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};
