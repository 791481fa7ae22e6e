/*
 * tests/xstream/test_xstream.c: execution streams: creation at run time
 * (more streams than cores), ranks, states, placement, self queries, error
 * codes, custom main schedulers, draining on join, and a thousand streams
 * that idle without using the CPU.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NXS 5 /* A ULT that yields a number of times before counting. */
static void yield_count_ult(void *arg)
{
    long n = (long)(intptr_t)arg;
    for (long i = 0; i < n; i++)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    atomic_fetch_add(&ch_count, 1);
}

/* ======================================================================= */
/* lifecycle                                                                */
/* ======================================================================= */

static void t_attr_defaults(void)
{
    coexec_xstream_attr_t a;
    memset(&a, 0x5a, sizeof a);
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    CH_ASSERT_EQ(a.size, sizeof a);
    CH_ASSERT_EQ(a.cpu, -1);
    CU_ASSERT(CH_IS_NULL(a.sched));
    CH_ASSERT_RC(coexec_xstream_attr_init(NULL), COEXEC_EINVAL);
}

static void t_create_join_free(void)
{
    ch_init(1);
    coexec_xstream_t xs[NXS];
    for (int i = 0; i < NXS; i++)
        CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &xs[i]));
    int n = 0;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, NXS + 1);

    atomic_store(&ch_count, 0);
    long per = ch_iters(200, 20);
    for (int i = 0; i < NXS; i++)
        for (long j = 0; j < per; j++)
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(
                xs[i], yield_count_ult, (void *)(intptr_t)(j % 5), NULL, NULL));
    /* Join half of them explicitly, free the rest directly (free joins). */
    for (int i = 0; i < NXS; i++) {
        if (i % 2 == 0)
            CH_ASSERT_OK(coexec_xstream_join(xs[i]));
        CH_ASSERT_OK(coexec_xstream_free(&xs[i]));
        CU_ASSERT(CH_IS_NULL(xs[i]));
    }
    CH_ASSERT_EQ(atomic_load(&ch_count), NXS * per);
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, 1);
    ch_finalize();
}

static void t_create_more_at_init(void)
{
    /* Streams started by init (more than cores) can all run work. */
    ch_init(NXS + 1);
    int n = 0;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, NXS + 1);
    atomic_store(&ch_count, 0);
    coexec_tasklet_t k[NXS + 1];
    coexec_thread_t t[NXS + 1];
    coexec_thread_attr_t a; /* pinned: idle streams steal unpinned units */
    CH_ASSERT_OK(coexec_thread_attr_init(&a));
    a.pinned = 1;
    for (int r = 0; r <= NXS; r++) {
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(r, &xs));
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, ch_count_ult, NULL, &a, &t[r]));
        CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(xs, ch_count_tasklet, NULL, &k[r]));
    }
    for (int r = 0; r <= NXS; r++) {
        /* wait: a free alone could run them here, in place, on rank 0. */
        CH_ASSERT_OK(coexec_thread_wait(t[r]));
        CH_ASSERT_OK(coexec_tasklet_wait(k[r]));
        int tr = -1;
        CH_ASSERT_OK(coexec_unit_get_last_rank(coexec_thread_unit(t[r]), &tr));
        CH_ASSERT_EQ(tr, r);
        CH_ASSERT_OK(coexec_thread_free(&t[r]));
        CH_ASSERT_OK(coexec_tasklet_free(&k[r]));
    }
    CH_ASSERT_EQ(atomic_load(&ch_count), 2 * (NXS + 1));
    /* Secondary streams started by init can be freed by the user. */
    coexec_xstream_t last;
    CH_ASSERT_OK(coexec_xstream_by_rank(NXS, &last));
    CH_ASSERT_OK(coexec_xstream_free(&last));
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, NXS);
    ch_finalize();
}

typedef struct {
    atomic_int rc;
    coexec_xstream_t xs;
} create_probe_t;

static void create_from_ult(void *arg)
{
    create_probe_t *p = arg;
    atomic_store(&p->rc, coexec_xstream_create(NULL, &p->xs));
}

static void t_create_from_anywhere(void)
{
    ch_init(2);
    coexec_xstream_t x1;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &x1));
    coexec_pool_t p1;
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(x1, &p1));

    create_probe_t a = {1, {0}}, b = {1, {0}};
    CH_ASSERT_OK(ch_run_ult_in(p1, create_from_ult, &a));
    CH_ASSERT_RC(atomic_load(&a.rc), COEXEC_OK);
    ch_pthread_t th;
    ch_pthread_run(&th, create_from_ult, &b);
    ch_pthread_join(&th);
    CH_ASSERT_RC(atomic_load(&b.rc), COEXEC_OK);

    int n = 0;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, 4);
    atomic_store(&ch_count, 0);
    if (atomic_load(&a.rc) == COEXEC_OK && atomic_load(&b.rc) == COEXEC_OK) {
        CH_ASSERT_OK(coexec_thread_create_on(a.xs, ch_count_ult, NULL, NULL, NULL));
        CH_ASSERT_OK(coexec_thread_create_on(b.xs, ch_count_ult, NULL, NULL, NULL));
        CH_ASSERT_OK(coexec_xstream_free(&a.xs));
        CH_ASSERT_OK(coexec_xstream_free(&b.xs));
        /* Stream 1 steals: a unit it took from a or b before they stopped
         * may still be finishing there. None is lost. */
        CH_WAIT(atomic_load(&ch_count) == 2);
        CH_ASSERT_EQ(atomic_load(&ch_count), 2);
    }
    ch_finalize();
}

static void t_churn(void)
{
    /* Streams created and freed over and over while they have work. */
    ch_init(1);
    long rounds = ch_iters(30, 5);
    enum { NS = 8, PER = 20 };
    for (long r = 0; r < rounds; r++) {
        coexec_xstream_t xs[NS];
        atomic_store(&ch_count, 0);
        for (int i = 0; i < NS; i++) {
            CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &xs[i]));
            for (int j = 0; j < PER; j++) {
                if (j % 2)
                    CH_ASSERT_OK(coexec_thread_create_on(xs[i], yield_count_ult,
                                                         (void *)(intptr_t)(j % 3), NULL, NULL));
                else
                    CH_ASSERT_OK(coexec_tasklet_create_on(xs[i], ch_count_tasklet, NULL, NULL));
            }
        }
        /* free in an order that leaves holes in the ranks */
        for (int i = 0; i < NS; i += 2)
            CH_ASSERT_OK(coexec_xstream_free(&xs[i]));
        for (int i = NS - 1; i > 0; i -= 2)
            CH_ASSERT_OK(coexec_xstream_free(&xs[i]));
        /* The primary steals too: a yielding unit it took may still be
         * queued behind this ULT. */
        CH_WAIT(atomic_load(&ch_count) == NS * PER);
        CH_ASSERT_EQ(atomic_load(&ch_count), NS * PER);
        int n = 0;
        CH_ASSERT_OK(coexec_xstream_get_num(&n));
        CH_ASSERT_EQ(n, 1);
    }
    ch_finalize();
}

static void t_finalize_frees_user_streams(void)
{
    /* Streams the user did not free are stopped by finalize, after their
     * queued units have run. */
    ch_init(1);
    coexec_xstream_t xs[3];
    atomic_store(&ch_count, 0);
    for (int i = 0; i < 3; i++) {
        CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &xs[i]));
        for (int j = 0; j < 10; j++)
            CH_ASSERT_OK(coexec_thread_create_on(xs[i], yield_count_ult,
                                                 (void *)(intptr_t)3, NULL, NULL));
    }
    ch_finalize();
    CH_ASSERT_EQ(atomic_load(&ch_count), 30);
}

/* ======================================================================= */
/* ranks                                                                    */
/* ======================================================================= */

static void t_ranks(void)
{
    ch_init(1);
    coexec_xstream_t x0, got;
    int r = -1;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_OK(coexec_xstream_get_rank(x0, &r));
    CH_ASSERT_EQ(r, 0);

    coexec_xstream_t xs[NXS];
    for (int i = 0; i < NXS; i++) {
        CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &xs[i]));
        CH_ASSERT_OK(coexec_xstream_get_rank(xs[i], &r));
        CH_ASSERT_EQ(r, i + 1);
        CH_ASSERT_OK(coexec_xstream_by_rank(i + 1, &got));
        CU_ASSERT(CH_SAME(got, xs[i]));
    }
    CH_ASSERT_RC(coexec_xstream_by_rank(NXS + 1, &got), COEXEC_ENOENT);
    CH_ASSERT_RC(coexec_xstream_by_rank(-1, &got), COEXEC_ENOENT);
    CH_ASSERT_RC(coexec_xstream_by_rank(1 << 20, &got), COEXEC_ENOENT);

    /* Free rank 2: it disappears, the others keep theirs. */
    CH_ASSERT_OK(coexec_xstream_free(&xs[1]));
    CH_ASSERT_RC(coexec_xstream_by_rank(2, &got), COEXEC_ENOENT);
    int n = 0;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, NXS);
    CH_ASSERT_OK(coexec_xstream_get_rank(xs[2], &r));
    CH_ASSERT_EQ(r, 3);
    /* The freed rank is reused by the next stream. */
    CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &xs[1]));
    CH_ASSERT_OK(coexec_xstream_get_rank(xs[1], &r));
    CH_ASSERT_EQ(r, 2);
    CH_ASSERT_OK(coexec_xstream_by_rank(2, &got));
    CU_ASSERT(CH_SAME(got, xs[1]));
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, NXS + 1);
    for (int i = NXS - 1; i >= 0; i--)
        CH_ASSERT_OK(coexec_xstream_free(&xs[i]));
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, 1);
    ch_finalize();
}

/* ======================================================================= */
/* state                                                                    */
/* ======================================================================= */

static atomic_int g_state_seen;

static void state_self_ult(void *arg)
{
    coexec_xstream_t xs;
    coexec_xstream_state_t st = 99;
    CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_get_state(xs, &st), COEXEC_OK);
    atomic_store(&g_state_seen, (int)st);
}

static void t_states(void)
{
    ch_init(1);
    coexec_xstream_t x0;
    coexec_xstream_state_t st = 99;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_OK(coexec_xstream_get_state(x0, &st));
    CH_ASSERT_EQ(st, COEXEC_XSTREAM_RUNNING);

    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &xs));
    CH_ASSERT_OK(coexec_xstream_get_state(xs, &st));
    CU_ASSERT(st == COEXEC_XSTREAM_CREATED || st == COEXEC_XSTREAM_READY ||
              st == COEXEC_XSTREAM_RUNNING);
    /* Once it runs a unit it is RUNNING (seen from inside). */
    coexec_pool_t p;
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(xs, &p));
    atomic_store(&g_state_seen, -1);
    CH_ASSERT_OK(ch_run_ult_in(p, state_self_ult, NULL));
    CH_ASSERT_EQ(atomic_load(&g_state_seen), COEXEC_XSTREAM_RUNNING);
    /* States only move forward. */
    CH_ASSERT_OK(coexec_xstream_get_state(xs, &st));
    CU_ASSERT(st == COEXEC_XSTREAM_READY || st == COEXEC_XSTREAM_RUNNING);

    CH_ASSERT_OK(coexec_xstream_join(xs));
    CH_ASSERT_OK(coexec_xstream_get_state(xs, &st));
    CH_ASSERT_EQ(st, COEXEC_XSTREAM_TERMINATED);
    /* join again: already terminated */
    CH_ASSERT_OK(coexec_xstream_join(xs));
    coexec_xstream_t old = xs;
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_RC(coexec_xstream_get_state(old, &st), COEXEC_EHANDLE);
    ch_finalize();
}

/* ======================================================================= */
/* cpu                                                                      */
/* ======================================================================= */

static void cpu_probe_ult(void *arg)
{
    atomic_int *out = arg;
    /* Pinned: every sample is the same CPU. */
    int c = sched_getcpu();
    for (int i = 0; i < 100; i++) {
        int d = sched_getcpu();
        if (d != c)
            c = -2;
    }
    atomic_store(out, c);
}

static int affinity_cpus(int *cpus, int max)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 0;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    return n;
}

static void t_cpu_pinned(void)
{
    int cpus[CPU_SETSIZE];
    int ncpu = affinity_cpus(cpus, CPU_SETSIZE);
    CU_ASSERT_FATAL(ncpu > 0);
    const int nstreams = 2 * ncpu + 1; /* wraps around */
    ch_init_ex(nstreams, COEXEC_SCHED_BASIC_WAIT, 1);
    int got[64];
    CU_ASSERT_FATAL(nstreams <= 64);
    for (int r = 0; r < nstreams; r++) {
        coexec_xstream_t xs;
        got[r] = -100;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(r, &xs));
        CH_ASSERT_OK(coexec_xstream_get_cpu(xs, &got[r]));
        int in_set = 0;
        for (int i = 0; i < ncpu; i++)
            in_set |= cpus[i] == got[r];
        CU_ASSERT(in_set);
    }
    /* The first ncpu streams are on distinct CPUs, later ones wrap. */
    for (int r = 0; r < ncpu; r++)
        for (int q = r + 1; q < ncpu; q++)
            CU_ASSERT(got[r] != got[q]);
    for (int r = ncpu; r < nstreams; r++)
        CH_ASSERT_EQ(got[r], got[r % ncpu]);
    /* Code running on a stream really is on its CPU. Use streams whose
     * main pool nobody else steals from: a custom stream pinned by attr. */
    ch_finalize();

    ch_init_ex(1, COEXEC_SCHED_BASIC_WAIT, 1);
    for (int i = 0; i < ncpu; i++) {
        coexec_pool_t pool;
        coexec_sched_t sched;
        coexec_sched_config_t sc;
        CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool));
        CH_ASSERT_OK(coexec_sched_config_init(&sc));
        sc.steal = 0;
        CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pool, 1, &sc, &sched));
        coexec_xstream_attr_t a;
        CH_ASSERT_OK(coexec_xstream_attr_init(&a));
        a.cpu = cpus[i];
        a.sched = sched;
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));
        int c = -100;
        CH_ASSERT_OK(coexec_xstream_get_cpu(xs, &c));
        CH_ASSERT_EQ(c, cpus[i]);
        atomic_int seen;
        atomic_init(&seen, -100);
        CH_ASSERT_OK(ch_run_ult_in(pool, cpu_probe_ult, &seen));
        CH_ASSERT_EQ(atomic_load(&seen), cpus[i]);
        CH_ASSERT_OK(coexec_xstream_free(&xs));
        CH_ASSERT_OK(coexec_sched_free(&sched));
        CH_ASSERT_OK(coexec_pool_free(&pool));
    }
    ch_finalize();
}

static void t_cpu_unpinned(void)
{
    ch_init_ex(3, COEXEC_SCHED_BASIC_WAIT, 0);
    for (int r = 0; r < 3; r++) {
        coexec_xstream_t xs;
        int c = 123;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(r, &xs));
        CH_ASSERT_OK(coexec_xstream_get_cpu(xs, &c));
        CH_ASSERT_EQ(c, -1);
    }
    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &xs));
    int c = 123;
    CH_ASSERT_OK(coexec_xstream_get_cpu(xs, &c));
    CH_ASSERT_EQ(c, -1);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    ch_finalize();
}

/* The calling thread's binding is exactly {cpu}. */
static int thread_bound_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 0;
    return CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set);
}

/* The primary is pinned like the other streams: its OS thread (the main
 * ULT's) is bound to the CPU get_cpu reports, and finalize gives the
 * thread its own binding back. */
static void t_cpu_primary(void)
{
    cpu_set_t before, after;
    CPU_ZERO(&before);
    CU_ASSERT_FATAL(sched_getaffinity(0, sizeof before, &before) == 0);
    int cpus[CPU_SETSIZE];
    int ncpu = affinity_cpus(cpus, CPU_SETSIZE);
    CU_ASSERT_FATAL(ncpu > 0);

    ch_init_ex(3, COEXEC_SCHED_BASIC_WAIT, 1);
    coexec_xstream_t primary;
    int c = -100;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &primary));
    CH_ASSERT_OK(coexec_xstream_get_cpu(primary, &c));
    CH_ASSERT_EQ(c, cpus[0]);
    CU_ASSERT(thread_bound_to(c));
    CH_ASSERT_EQ(sched_getcpu(), c);
    ch_finalize();
    CPU_ZERO(&after);
    CU_ASSERT_FATAL(sched_getaffinity(0, sizeof after, &after) == 0);
    CU_ASSERT(CPU_EQUAL(&before, &after));

    /* Pinning off: the thread keeps its binding, get_cpu says -1. */
    ch_init_ex(1, COEXEC_SCHED_BASIC_WAIT, 0);
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &primary));
    CH_ASSERT_OK(coexec_xstream_get_cpu(primary, &c));
    CH_ASSERT_EQ(c, -1);
    CPU_ZERO(&after);
    CU_ASSERT(sched_getaffinity(0, sizeof after, &after) == 0);
    CU_ASSERT(CPU_EQUAL(&before, &after));
    ch_finalize();
}

/* The process's binding is honoured: in a child bound to one CPU (the
 * last one allowed), the primary goes there, and gets the child's binding
 * back at finalize. Exit status: 0 or the number of the failed check. */
static int primary_in_bound_child(int cpu)
{
    cpu_set_t one, after;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (!thread_bound_to(cpu))
        return 1;
    coexec_config_t cfg;
    if (coexec_config_init(&cfg) != 0)
        return 2;
    cfg.affinity = 1;
    cfg.num_xstreams = 2;
    cfg.quiet = 1;
    if (coexec_init(&cfg) != 0)
        return 3;
    coexec_xstream_t xs;
    int c = -100, c1 = -100;
    if (coexec_xstream_by_rank(0, &xs) != 0 ||
        coexec_xstream_get_cpu(xs, &c) != 0)
        return 4;
    if (c != cpu || !thread_bound_to(cpu))
        return 5;
    if (coexec_xstream_by_rank(1, &xs) != 0 ||
        coexec_xstream_get_cpu(xs, &c1) != 0 || c1 != cpu)
        return 6;
    if (coexec_finalize() != 0)
        return 7;
    CPU_ZERO(&after);
    if (sched_getaffinity(0, sizeof after, &after) != 0 ||
        !CPU_EQUAL(&one, &after))
        return 8;
    return 0;
}

static void t_cpu_primary_process_binding(void)
{
    int cpus[CPU_SETSIZE];
    int ncpu = affinity_cpus(cpus, CPU_SETSIZE);
    CU_ASSERT_FATAL(ncpu > 0);
    int last = cpus[0];
    for (int i = 0; i < ncpu; i++)
        last = cpus[i] > last ? cpus[i] : last;
    /* The child inherits the binding (so do threads a sanitizer's runtime
     * starts in it); this thread gets its own back at once. */
    cpu_set_t mine, one;
    CPU_ZERO(&mine);
    CU_ASSERT_FATAL(sched_getaffinity(0, sizeof mine, &mine) == 0);
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    CU_ASSERT_FATAL(sched_setaffinity(0, sizeof one, &one) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(primary_in_bound_child(last));
    CU_ASSERT(sched_setaffinity(0, sizeof mine, &mine) == 0);
    CU_ASSERT_FATAL(pid >= 0);
    int status = 0;
    CU_ASSERT_FATAL(waitpid(pid, &status, 0) == pid);
    CU_ASSERT(WIFEXITED(status));
    CH_ASSERT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

static void t_cpu_bad(void)
{
    ch_init(1);
    coexec_xstream_attr_t a;
    coexec_xstream_t xs = {0};
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.cpu = 1 << 20;
    CH_ASSERT_RC(coexec_xstream_create(&a, &xs), COEXEC_EINVAL);
    a.cpu = -5;
    CH_ASSERT_RC(coexec_xstream_create(&a, &xs), COEXEC_EINVAL);
    int n = 0;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, 1);
    ch_finalize();
}

/* ======================================================================= */
/* self                                                                     */
/* ======================================================================= */

typedef struct {
    atomic_int rank;
    coexec_xstream_t xs; /* written before done */
    atomic_int done;
} self_probe_t;

static void self_probe(void *arg)
{
    self_probe_t *p = arg;
    int r = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_self(&p->xs), COEXEC_OK);
    atomic_store(&p->rank, r);
}

static void t_self_rank_on_streams(void)
{
    ch_init(1);
    int r = -1;
    CH_ASSERT_OK(coexec_xstream_self_rank(&r));
    CH_ASSERT_EQ(r, 0);
    coexec_xstream_t me, x0;
    CH_ASSERT_OK(coexec_xstream_self(&me));
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    CU_ASSERT(CH_SAME(me, x0));

    ch_stream_t s[4];
    for (int i = 0; i < 4; i++) {
        CH_ASSERT_OK_FATAL(ch_stream_create(&s[i], i % 2 ? COEXEC_SCHED_BASIC
                                                          : COEXEC_SCHED_BASIC_WAIT));
        CH_ASSERT_EQ(s[i].rank, i + 1);
    }
    long rounds = ch_iters(20, 3);
    for (long k = 0; k < rounds; k++)
        for (int i = 0; i < 4; i++) {
            self_probe_t p;
            atomic_init(&p.rank, -1);
            memset(&p.xs, 0, sizeof p.xs);
            if (k % 2)
                CH_ASSERT_OK(ch_run_ult_in(s[i].pool, self_probe, &p));
            else
                CH_ASSERT_OK(ch_run_tasklet_in(s[i].pool, self_probe, &p));
            CH_ASSERT_EQ(atomic_load(&p.rank), s[i].rank);
            CU_ASSERT(CH_SAME(p.xs, s[i].xs));
        }
    for (int i = 0; i < 4; i++)
        CH_ASSERT_OK(ch_stream_free(&s[i]));
    ch_finalize();
}

static void *self_from_pthread(void *arg)
{
    coexec_xstream_t xs;
    int r;
    CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_ECONTEXT);
    return NULL;
}

static void t_self_external(void)
{
    ch_init(2);
    ch_pthread_t th;
    ch_pthread_start(&th, self_from_pthread, NULL);
    ch_pthread_join(&th);
    CH_ASSERT_RC(coexec_xstream_self(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_self_rank(NULL), COEXEC_EINVAL);
    ch_finalize();
}

/* ======================================================================= */
/* errors                                                                   */
/* ======================================================================= */

static void join_self_ult(void *arg)
{
    coexec_xstream_t xs;
    CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_join(xs), COEXEC_EDEADLK);
    coexec_xstream_t copy = xs;
    CH_CHECK_RC(coexec_xstream_free(&copy), COEXEC_EDEADLK);
    /* The primary cannot be joined by anyone. */
    coexec_xstream_t x0;
    CH_CHECK_RC(coexec_xstream_by_rank(0, &x0), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_join(x0), COEXEC_EPERM);
    CH_CHECK_RC(coexec_xstream_free(&x0), COEXEC_EPERM);
}

static void join_from_tasklet_fn(void *arg)
{
    coexec_xstream_t *other = arg;
    CH_CHECK_RC(coexec_xstream_join(*other), COEXEC_ECONTEXT);
    coexec_xstream_t copy = *other;
    CH_CHECK_RC(coexec_xstream_free(&copy), COEXEC_ECONTEXT);
}

static void *join_primary_pthread(void *arg)
{
    coexec_xstream_t x0;
    CH_CHECK_RC(coexec_xstream_by_rank(0, &x0), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_join(x0), COEXEC_EPERM);
    CH_CHECK_RC(coexec_xstream_free(&x0), COEXEC_EPERM);
    return NULL;
}

static void t_join_errors(void)
{
    ch_init(1);
    ch_stream_t s, other;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&other, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK(ch_run_ult_in(s.pool, join_self_ult, NULL));
    CH_ASSERT_OK(ch_run_tasklet_in(s.pool, join_from_tasklet_fn, &other.xs));
    ch_pthread_t th;
    ch_pthread_start(&th, join_primary_pthread, NULL);
    ch_pthread_join(&th);
    /* From the main ULT on the primary: either reason applies. */
    coexec_xstream_t x0;
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    int rc = coexec_xstream_join(x0);
    CU_ASSERT(rc == COEXEC_EPERM || rc == COEXEC_EDEADLK);
    rc = coexec_xstream_free(&x0);
    CU_ASSERT(rc == COEXEC_EPERM || rc == COEXEC_EDEADLK);
    /* Nothing was stopped by the refused calls. */
    int n = 0;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, 3);
    atomic_store(&ch_count, 0);
    CH_ASSERT_OK(coexec_thread_create_on(s.xs, ch_count_ult, NULL, NULL, NULL));
    CH_ASSERT_OK(ch_stream_free(&s));
    CH_ASSERT_OK(ch_stream_free(&other));
    CH_ASSERT_EQ(atomic_load(&ch_count), 1);
    ch_finalize();
}

/* A unit of stream x's pool, run in place on the primary by its joiner,
 * asks to join and free x: waiting would put it back into x's pool, which x
 * would then never drain. It gets COEXEC_EDEADLK; x keeps running. */
struct inplace_free {
    ch_stream_t *s;
    atomic_int calling; /* the unit is about to call free/join */
    atomic_int release; /* the blocker may return */
    int free_rc, join_rc, ran_on;
};

static void inplace_blocker_ult(void *arg)
{
    struct inplace_free *f = arg;
    /* Keeps x busy, so the unit below stays queued until its joiner takes
     * it; lets go once that unit calls (the old code then hangs for good:
     * the unit keeps yielding into x's pool). */
    while (!atomic_load(&f->calling) && !atomic_load(&f->release))
        sched_yield();
}

static void inplace_free_ult(void *arg)
{
    struct inplace_free *f = arg;
    CH_CHECK_RC(coexec_xstream_self_rank(&f->ran_on), COEXEC_OK);
    atomic_store(&f->calling, 1);
    coexec_xstream_t xs = f->s->xs;
    f->join_rc = coexec_xstream_join(xs);
    f->free_rc = coexec_xstream_free(&xs);
    CH_CHECK(CH_SAME(xs, f->s->xs)); /* not cleared */
}

static void t_free_from_unit_run_in_place(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    struct inplace_free f = {.s = &s, .free_rc = 1, .join_rc = 1,
                             .ran_on = -1};
    coexec_thread_t blocker, u;
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, inplace_blocker_ult, &f,
                                            NULL, &blocker));
    coexec_unit_state_t st = COEXEC_UNIT_READY;
    CH_WAIT(coexec_thread_get_state(blocker, &st) == COEXEC_OK &&
            st == COEXEC_UNIT_RUNNING);
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, inplace_free_ult, &f,
                                            NULL, &u));
    CH_ASSERT_OK(coexec_thread_free(&u)); /* runs it here, in place */
    atomic_store(&f.release, 1);
    CH_ASSERT_OK(coexec_thread_free(&blocker));
    CH_ASSERT_EQ(f.ran_on, 0);
    CH_ASSERT_RC(f.join_rc, COEXEC_EDEADLK);
    CH_ASSERT_RC(f.free_rc, COEXEC_EDEADLK);
    /* x still runs units, and can be freed from here. */
    atomic_store(&ch_count, 0);
    CH_ASSERT_OK(ch_run_ult_in(s.pool, ch_count_ult, NULL));
    CH_ASSERT_EQ(atomic_load(&ch_count), 1);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

static void t_join_from_external(void);

static void t_freed_handle(void)
{
    ch_init(1);
    coexec_xstream_t xs, old;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &xs));
    old = xs;
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CU_ASSERT(CH_IS_NULL(xs));

    int i;
    coexec_xstream_state_t st;
    coexec_sched_t so;
    coexec_pool_t po;
    coexec_thread_t to;
    coexec_tasklet_t ko;
    coexec_xstream_t copy = old;
    CH_ASSERT_RC(coexec_xstream_join(old), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_free(&copy), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_rank(old, &i), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_state(old, &st), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_cpu(old, &i), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_main_sched(old, &so), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_main_pool(old, &po), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_create_on(old, ch_count_ult, NULL, NULL, &to), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_tasklet_create_on(old, ch_count_tasklet, NULL, &ko), COEXEC_EHANDLE);

    /* Recycled record: a new stream does not make the old handle valid. */
    coexec_xstream_t fresh[4];
    for (int k = 0; k < 4; k++)
        CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &fresh[k]));
    CH_ASSERT_RC(coexec_xstream_get_rank(old, &i), COEXEC_EHANDLE);
    copy = old;
    CH_ASSERT_RC(coexec_xstream_free(&copy), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_join(old), COEXEC_EHANDLE);
    int n = 0;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, 5);
    for (int k = 0; k < 4; k++)
        CH_ASSERT_OK(coexec_xstream_free(&fresh[k]));

    /* The null handle. */
    coexec_xstream_t null = {0};
    CH_ASSERT_RC(coexec_xstream_join(null), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_rank(null, &i), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_state(null, &st), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_cpu(null, &i), COEXEC_EHANDLE);
    ch_finalize();
}

static void t_null_args(void)
{
    ch_init(1);
    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &xs));
    CH_ASSERT_RC(coexec_xstream_create(NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_free(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_rank(xs, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_by_rank(0, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_num(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_state(xs, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_cpu(xs, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_main_sched(xs, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_main_pool(xs, NULL), COEXEC_EINVAL);
    int n = 0;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, 1);
    ch_finalize();
}

typedef struct {
    coexec_xstream_t xs;
    atomic_int rc;
} ext_join_t;

static void *ext_join_pthread(void *arg)
{
    ext_join_t *j = arg;
    atomic_store(&j->rc, coexec_xstream_join(j->xs));
    return NULL;
}

static void t_join_from_external(void)
{
    /* An external thread may join a stream (it sleeps); the stream runs
     * its queued units first. */
    ch_init(1);
    ext_join_t j;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &j.xs));
    atomic_init(&j.rc, 1);
    atomic_store(&ch_count, 0);
    for (int i = 0; i < 50; i++)
        CH_ASSERT_OK(coexec_thread_create_on(j.xs, yield_count_ult,
                                             (void *)(intptr_t)2, NULL, NULL));
    ch_pthread_t th;
    ch_pthread_start(&th, ext_join_pthread, &j);
    ch_pthread_join(&th);
    CH_ASSERT_RC(atomic_load(&j.rc), COEXEC_OK);
    CH_ASSERT_EQ(atomic_load(&ch_count), 50);
    coexec_xstream_state_t st;
    CH_ASSERT_OK(coexec_xstream_get_state(j.xs, &st));
    CH_ASSERT_EQ(st, COEXEC_XSTREAM_TERMINATED);
    CH_ASSERT_OK(coexec_xstream_free(&j.xs));
    ch_finalize();
}

/* ======================================================================= */
/* custom main scheduler                                                    */
/* ======================================================================= */

static void t_sched_attr(void)
{
    ch_init(2); /* rank 1 has the default setup and steals */
    coexec_pool_t pool;
    coexec_sched_t sched;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &pool, 1, NULL, &sched));
    coexec_xstream_attr_t a;
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.sched = sched;
    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));

    coexec_sched_t ms;
    coexec_pool_t mp;
    CH_ASSERT_OK(coexec_xstream_get_main_sched(xs, &ms));
    CU_ASSERT(CH_SAME(ms, sched));
    CH_ASSERT_OK(coexec_xstream_get_main_pool(xs, &mp));
    CU_ASSERT(CH_SAME(mp, pool));

    /* The same scheduler cannot drive a second stream. */
    coexec_xstream_t xs2 = {0};
    CH_ASSERT_RC(coexec_xstream_create(&a, &xs2), COEXEC_EBUSY);

    /* Units created "on" xs run on xs: its pool is not a default pool, so
     * nobody steals them. */
    int r = -1;
    CH_ASSERT_OK(coexec_xstream_get_rank(xs, &r));
    for (int i = 0; i < 20; i++) {
        self_probe_t p;
        atomic_init(&p.rank, -1);
        CH_ASSERT_OK(ch_run_ult_in(mp, self_probe, &p));
        CH_ASSERT_EQ(atomic_load(&p.rank), r);
    }
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    /* The user's scheduler and pool survive the stream and can be reused. */
    size_t sz = 99;
    CH_ASSERT_OK(coexec_pool_get_size(pool, &sz));
    CH_ASSERT_EQ(sz, 0);
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));
    atomic_store(&ch_count, 0);
    CH_ASSERT_OK(coexec_thread_create_on(xs, ch_count_ult, NULL, NULL, NULL));
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_EQ(atomic_load(&ch_count), 1);
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_OK(coexec_pool_free(&pool));

    /* A freed scheduler handle. */
    CH_ASSERT_RC(coexec_xstream_create(&a, &xs2), COEXEC_EHANDLE);
    ch_finalize();
}

static void t_default_setup(void)
{
    ch_init(2);
    for (int r = 0; r < 2; r++) {
        coexec_xstream_t xs;
        coexec_pool_t p, p0;
        coexec_sched_t s;
        coexec_pool_kind_t kind = 99;
        coexec_pool_access_t acc = 99;
        int np = 0;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(r, &xs));
        CH_ASSERT_OK(coexec_xstream_get_main_pool(xs, &p));
        CH_ASSERT_OK(coexec_pool_get_info(p, &kind, &acc));
        CH_ASSERT_EQ(kind, COEXEC_POOL_LIFO);
        CH_ASSERT_EQ(acc, COEXEC_ACCESS_MPMC);
        CH_ASSERT_OK(coexec_xstream_get_main_sched(xs, &s));
        CH_ASSERT_OK(coexec_sched_get_num_pools(s, &np));
        CH_ASSERT_EQ(np, 1);
        CH_ASSERT_OK(coexec_sched_get_pool(s, 0, &p0));
        CU_ASSERT(CH_SAME(p0, p));
        /* The runtime's default pool and scheduler go with the stream. */
        coexec_pool_t pc = p;
        CH_ASSERT_RC(coexec_pool_free(&pc), COEXEC_EPERM);
        coexec_sched_t sc = s;
        CH_ASSERT_RC(coexec_sched_free(&sc), COEXEC_EPERM);
    }
    ch_finalize();
}

/* ======================================================================= */
/* drain                                                                    */
/* ======================================================================= */

typedef struct {
    coexec_xstream_t xs;
    long yields;
} spawn_arg_t;

static void spawn_children_ult(void *arg)
{
    /* Creates children on the stream being drained. */
    const spawn_arg_t *a = arg;
    for (int i = 0; i < 5; i++)
        CH_CHECK_RC(coexec_thread_create_on(a->xs, yield_count_ult,
                                            (void *)(intptr_t)a->yields, NULL,
                                            NULL),
                    COEXEC_OK);
    atomic_fetch_add(&ch_count, 1);
}

static void t_drain_on_join(void)
{
    ch_init(1);
    long n = ch_iters(500, 50);
    /* variant 0: a stream nobody steals from, units that yield;
     * variant 1: the default setup (the primary may steal), units that do
     * not yield, so a stolen one has finished before the joiner resumes. */
    for (int variant = 0; variant < 2; variant++) {
        atomic_store(&ch_count, 0);
        ch_stream_t s;
        spawn_arg_t sa;
        if (variant == 0) {
            CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
            sa.xs = s.xs;
            sa.yields = 2;
        } else {
            CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &sa.xs));
            sa.yields = 0;
        }
        for (long i = 0; i < n; i++) {
            switch (i % 3) {
            case 0:
                CH_ASSERT_OK(coexec_thread_create_on(
                    sa.xs, yield_count_ult,
                    (void *)(intptr_t)(sa.yields ? i % 4 : 0), NULL, NULL));
                break;
            case 1:
                CH_ASSERT_OK(coexec_tasklet_create_on(sa.xs, ch_count_tasklet, NULL, NULL));
                break;
            default:
                CH_ASSERT_OK(coexec_thread_create_on(sa.xs, spawn_children_ult,
                                                     &sa, NULL, NULL));
                break;
            }
        }
        long spawners = n / 3;
        CH_ASSERT_OK(coexec_xstream_join(sa.xs));
        if (variant == 1) {
            /* A spawner the primary stole may create its children on the
             * stream once it has stopped: they go to the primary's pool,
             * and may run after the join returns (never lost). */
            CH_WAIT(atomic_load(&ch_count) >= n + 5 * spawners);
        }
        CH_ASSERT_EQ(atomic_load(&ch_count), n + 5 * spawners);
        if (variant == 0) {
            CH_ASSERT_OK(ch_stream_free(&s));
        } else {
            CH_ASSERT_OK(coexec_xstream_free(&sa.xs));
        }
    }
    ch_finalize();
}

/* ======================================================================= */

/* ======================================================================= */
/* post: tasklets delivered through a stream's event pool                  */
/* ======================================================================= */

typedef struct post_arg {
    int want_rank;
    atomic_int ran, wrong;
} post_arg_t;

static coexec_poll_status_t post_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    post_arg_t *pa = arg;
    int r = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
    if (r != pa->want_rank)
        atomic_fetch_add(&pa->wrong, 1);
    atomic_fetch_add(&pa->ran, 1);
    return COEXEC_READY;
}

typedef struct post_thread_arg {
    coexec_xstream_t xs;
    post_arg_t *pa;
    long n;
} post_thread_arg_t;

static void *post_from_pthread(void *arg)
{
    post_thread_arg_t *t = arg;
    for (long i = 0; i < t->n; i++)
        CH_CHECK_RC(coexec_xstream_post(t->xs, post_tasklet, t->pa), COEXEC_OK);
    return NULL;
}

static void post_from_ult(void *arg)
{
    post_thread_arg_t *t = arg;
    for (long i = 0; i < t->n; i++)
        CH_CHECK_RC(coexec_xstream_post(t->xs, post_tasklet, t->pa), COEXEC_OK);
}

/* Posted tasklets run on their stream only: a private-pool stream, and a
 * default one whose idle neighbours would otherwise steal. */
static void t_post_runs_there(void)
{
    ch_init(3);
    long n = ch_iters(2000, 100);
    for (int variant = 0; variant < 2; variant++) {
        ch_stream_t s;
        coexec_xstream_t target;
        if (variant == 0) {
            CH_ASSERT_OK_FATAL(ch_stream_create_ex(&s, COEXEC_SCHED_BASIC_WAIT,
                                                   COEXEC_POOL_FIFO,
                                                   COEXEC_ACCESS_PRIV));
            target = s.xs;
        } else {
            CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &target));
        }
        post_arg_t pa = {0};
        CH_ASSERT_OK(coexec_xstream_get_rank(target, &pa.want_rank));
        post_thread_arg_t ta = {target, &pa, n};
        pthread_t th;
        CU_ASSERT_FATAL(pthread_create(&th, NULL, post_from_pthread, &ta) == 0);
        coexec_xstream_t other;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(2, &other));
        coexec_thread_t u;
        CH_ASSERT_OK(coexec_thread_create_on(other, post_from_ult, &ta, NULL, &u));
        post_from_ult(&ta); /* and from the main ULT */
        pthread_join(th, NULL);
        CH_ASSERT_OK(coexec_thread_free(&u));
        while (atomic_load(&pa.ran) < 3 * n)
            CH_ASSERT_OK(coexec_yield());
        CH_ASSERT_EQ(atomic_load(&pa.ran), 3 * n);
        CH_ASSERT_EQ(atomic_load(&pa.wrong), 0);
        if (variant == 0)
            CH_ASSERT_OK(ch_stream_free(&s));
    }
    ch_finalize();
}

static void t_post_errors(void)
{
    CH_ASSERT_RC(coexec_xstream_post((coexec_xstream_t){0}, post_tasklet, NULL),
                 COEXEC_ENOTINIT);
    ch_init(1);
    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_self(&xs));
    CH_ASSERT_RC(coexec_xstream_post(xs, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_post((coexec_xstream_t){0}, post_tasklet, NULL),
                 COEXEC_EHANDLE);
    coexec_xstream_t s;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &s));
    coexec_xstream_t stale = s;
    CH_ASSERT_OK(coexec_xstream_free(&s));
    CH_ASSERT_RC(coexec_xstream_post(stale, post_tasklet, NULL), COEXEC_EHANDLE);
    ch_finalize();
}

/* ======================================================================= */
/* many: more streams than a 64-bit mask, idle, then busy, then freed       */
/* ======================================================================= */

/* Streams in all (the table holds 1,024): fewer under TSan, never as few
 * as 64, the width of one word of bits. */
static int many_count(void)
{
    long n = ch_iters(1024, 100);
    return n > 1024 ? 1024 : (int)n;
}

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A hang guard for the slow parts (creating and freeing a thousand
 * streams on a busy machine): 120 s without progress (g_many_step
 * unchanged) ends the process with a message; it decides nothing
 * otherwise. */
static atomic_int g_many_done, g_many_step;

static void *many_watchdog(void *arg)
{
    (void)arg;
    int seen = -1, still = 0;
    while (!atomic_load(&g_many_done) && still < 1200) {
        usleep(100000);
        int now = atomic_load(&g_many_step);
        still = now == seen ? still + 1 : 0;
        seen = now;
    }
    if (!atomic_load(&g_many_done)) {
        fprintf(stderr, "many: no progress in 120 s (step %d), a hang\n",
                seen);
        _exit(1);
    }
    return NULL;
}

/*
 * The share of one CPU the process used over about 1 s of idling (the
 * main ULT asleep on its timer, so the primary parks too); the lowest of up
 * to five such windows, so a slow start (sanitizers) does not count.
 */
static double idle_cpu_share(void)
{
    double best = 1e9;
    for (int w = 0; w < 5 && best >= 0.2; w++) {
        double c0 = cpu_seconds(), t0 = ch_now();
        CH_ASSERT_OK(coexec_sleep_ns(1000000000ull));
        double share = (cpu_seconds() - c0) / (ch_now() - t0);
        if (share < best)
            best = share;
    }
    return best;
}

static coexec_xstream_state_t stream_state(coexec_xstream_t xs)
{
    coexec_xstream_state_t st = COEXEC_XSTREAM_TERMINATED;
    CH_CHECK_RC(coexec_xstream_get_state(xs, &st), COEXEC_OK);
    return st;
}

static atomic_int g_rank_seen[1024];

/* Records the stream it runs on. */
static void rank_probe_ult(void *arg)
{
    (void)arg;
    int r = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
    if (r >= 0 && r < 1024)
        atomic_fetch_add(&g_rank_seen[r], 1);
    atomic_fetch_add(&ch_count, 1);
}

static atomic_int g_started;

/* Holds its stream (no yield) until `need` such ULTs run at once: they
 * all started only if idle thieves were woken for each of them. */
static void gang_ult(void *arg)
{
    int need = (int)(intptr_t)arg;
    atomic_fetch_add(&g_started, 1);
    double t0 = ch_now();
    while (atomic_load(&g_started) < need && ch_now() - t0 < CH_WAIT_LIMIT_S)
        sched_yield();
    CH_CHECK(atomic_load(&g_started) >= need);
    atomic_fetch_add(&ch_count, 1);
}

static void run_many(coexec_sched_kind_t kind)
{
    int n = many_count();
    atomic_store(&g_many_done, 0);
    atomic_store(&g_many_step, 0);
    ch_pthread_t dog;
    ch_pthread_start(&dog, many_watchdog, NULL);
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = 1;
    cfg.sched_kind = kind;
    cfg.quiet = 1; /* more streams than CPUs: no warning */
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));

    coexec_xstream_t *xs = calloc((size_t)n, sizeof *xs);
    CU_ASSERT_FATAL(xs != NULL);
    CH_ASSERT_OK_FATAL(coexec_xstream_self(&xs[0]));
    int made = 1; /* the primary */
    for (; made < n; made++) {
        int rc = coexec_xstream_create(NULL, &xs[made]);
        atomic_fetch_add(&g_many_step, 1);
        CH_ASSERT_RC(rc, COEXEC_OK);
        if (rc)
            break;
    }
    CU_ASSERT_FATAL(made > 64);
    for (int i = 1; i < made; i++) {
        CH_WAIT(stream_state(xs[i]) == COEXEC_XSTREAM_RUNNING);
        atomic_fetch_add(&g_many_step, 1);
    }

    /* Idle: every stream parked, none polling. A stream that polls in
     * 1 ms slices costs a few percent of a CPU; hundreds of them, all. */
    atomic_fetch_add(&g_many_step, 1);
    double share = idle_cpu_share();
    atomic_fetch_add(&g_many_step, 1);
    if (share >= 0.2)
        fprintf(stderr, "    %d idle streams used %.0f%% of a CPU\n", made,
                share * 100);
    CU_ASSERT(share < 0.2);

    /* Work for the highest ranks, pinned there: each of those streams is
     * woken by a push into its own pool. */
    enum { NPROBE = 6 };
    int idx[NPROBE], rank[NPROBE], k = 0;
    for (int i = made - 1; i >= 1 && k < NPROBE; i -= 1 + made / NPROBE) {
        idx[k] = i;
        CH_ASSERT_OK(coexec_xstream_get_rank(xs[i], &rank[k]));
        k++;
    }
    CU_ASSERT(rank[0] >= 64);
    memset(g_rank_seen, 0, sizeof g_rank_seen);
    atomic_store(&ch_count, 0);
    coexec_thread_attr_t pin;
    CH_ASSERT_OK(coexec_thread_attr_init(&pin));
    pin.pinned = 1;
    coexec_thread_t probe[NPROBE];
    for (int j = 0; j < k; j++)
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs[idx[j]], rank_probe_ult,
                                                   NULL, &pin, &probe[j]));
    /* Not joined before they ran: a join would run them in place. */
    CH_WAIT(atomic_load(&ch_count) == k);
    atomic_fetch_add(&g_many_step, 1);
    for (int j = 0; j < k; j++) {
        CH_ASSERT_OK(coexec_thread_free(&probe[j]));
        CH_ASSERT_EQ(atomic_load(&g_rank_seen[rank[j]]), 1);
    }

    /* Work for thieves: ULTs queued on the primary that each hold a
     * stream until all of them run at once. Every push must wake one more
     * idle stream (the primary, busy with one of them, takes no other). */
    int gang = made - 1 < 16 ? made - 1 : 16;
    atomic_store(&g_started, 0);
    atomic_store(&ch_count, 0);
    coexec_thread_t *g = calloc((size_t)gang, sizeof *g);
    CU_ASSERT_FATAL(g != NULL);
    for (int j = 0; j < gang; j++)
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs[0], gang_ult,
                                                   (void *)(intptr_t)gang,
                                                   NULL, &g[j]));
    CH_WAIT(atomic_load(&ch_count) == gang);
    atomic_fetch_add(&g_many_step, 1);
    for (int j = 0; j < gang; j++)
        CH_ASSERT_OK(coexec_thread_free(&g[j]));
    CH_ASSERT_EQ(atomic_load(&g_started), gang);
    free(g);

    /* Idle again after the work, then every stream freed. */
    atomic_fetch_add(&g_many_step, 1);
    share = idle_cpu_share();
    atomic_fetch_add(&g_many_step, 1);
    if (share >= 0.2)
        fprintf(stderr, "    %d idle streams used %.0f%% of a CPU\n", made,
                share * 100);
    CU_ASSERT(share < 0.2);
    for (int i = 1; i < made; i++) {
        CH_ASSERT_OK(coexec_xstream_free(&xs[i]));
        atomic_fetch_add(&g_many_step, 1);
    }
    int num = 0;
    CH_ASSERT_OK(coexec_xstream_get_num(&num));
    CH_ASSERT_EQ(num, 1);
    free(xs);
    ch_finalize();
    atomic_store(&g_many_done, 1);
    ch_pthread_join(&dog);
}

static void t_many_default(void) { run_many(COEXEC_SCHED_BASIC_WAIT); }
static void t_many_randws(void) { run_many(COEXEC_SCHED_RANDWS); }

static const ch_test_t lifecycle_tests[] = {
    {"attr_defaults", t_attr_defaults},
    {"create_join_free_oversubscribed", t_create_join_free},
    {"streams_from_init", t_create_more_at_init},
    {"create_from_ult_and_pthread", t_create_from_anywhere},
    {"finalize_frees_user_streams", t_finalize_frees_user_streams},
    {"churn", t_churn},
    {"join_from_external_thread", t_join_from_external},
    {NULL, NULL}};
static const ch_test_t ranks_tests[] = {{"ranks", t_ranks}, {NULL, NULL}};
static const ch_test_t state_tests[] = {{"states", t_states}, {NULL, NULL}};
static const ch_test_t cpu_tests[] = {{"pinned", t_cpu_pinned},
                                      {"unpinned", t_cpu_unpinned},
                                      {"primary", t_cpu_primary},
                                      {"primary_process_binding",
                                       t_cpu_primary_process_binding},
                                      {"bad_cpu", t_cpu_bad},
                                      {NULL, NULL}};
static const ch_test_t self_tests[] = {
    {"rank_on_streams", t_self_rank_on_streams},
    {"external_and_null", t_self_external},
    {NULL, NULL}};
static const ch_test_t errors_tests[] = {
    {"join_errors", t_join_errors},
    {"free_from_unit_run_in_place", t_free_from_unit_run_in_place},
    {"freed_handle", t_freed_handle},
    {"null_args", t_null_args},
    {NULL, NULL}};
static const ch_test_t sched_attr_tests[] = {
    {"custom_main_sched", t_sched_attr},
    {"default_setup", t_default_setup},
    {NULL, NULL}};
/* A ULT whose home pool x shares with another stream joins x: it parks
 * while it waits, so x drains that pool (the units queued there run) and
 * stops, and the ULT resumes on the other stream. It gives itself that
 * home without switching (coexec_thread_set_home) first. */
struct share_join {
    coexec_xstream_t x;
    coexec_pool_t shared;
    int join_rc, home_rc, resumed_on, y_rank;
};

static void share_joiner_ult(void *arg)
{
    struct share_join *j = arg;
    coexec_thread_t me;
    CH_CHECK_RC(coexec_thread_self(&me), COEXEC_OK);
    j->home_rc = coexec_thread_set_home(me, j->shared);
    j->join_rc = coexec_xstream_join(j->x);
    CH_CHECK_RC(coexec_xstream_self_rank(&j->resumed_on), COEXEC_OK);
}

static void t_join_sharing_a_pool(void)
{
    ch_init(1);
    long n = ch_iters(600, 60);
    for (int round = 0; round < 4; round++) {
        struct share_join j = {.join_rc = 1, .home_rc = 1, .resumed_on = -1};
        coexec_pool_t ypool;
        CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &j.shared));
        CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &ypool));
        coexec_sched_t xsched, ysched;
        coexec_pool_t ypools[2] = {ypool, j.shared};
        CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &j.shared, 1, NULL, &xsched));
        CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, ypools, 2, NULL, &ysched));
        coexec_xstream_attr_t xa, ya;
        CH_ASSERT_OK(coexec_xstream_attr_init(&xa));
        CH_ASSERT_OK(coexec_xstream_attr_init(&ya));
        xa.sched = xsched;
        ya.sched = ysched;
        coexec_xstream_t y;
        CH_ASSERT_OK_FATAL(coexec_xstream_create(&xa, &j.x));
        CH_ASSERT_OK_FATAL(coexec_xstream_create(&ya, &y));
        CH_ASSERT_OK(coexec_xstream_get_rank(y, &j.y_rank));
        atomic_store(&ch_count, 0);
        for (long i = 0; i < n; i++)
            CH_ASSERT_OK(coexec_thread_create(j.shared, yield_count_ult,
                                              (void *)(intptr_t)(i % 3), NULL, NULL));
        coexec_thread_t joiner;
        CH_ASSERT_OK_FATAL(coexec_thread_create(ypool, share_joiner_ult, &j, NULL, &joiner));
        /* A wait, not a join: a join could run the joiner here, in place,
         * and the test is about a joiner that runs on y. */
        CH_ASSERT_OK(coexec_thread_wait(joiner));
        CH_ASSERT_OK(coexec_thread_free(&joiner));
        CH_ASSERT_RC(j.home_rc, COEXEC_OK);
        CH_ASSERT_RC(j.join_rc, COEXEC_OK);
        CH_ASSERT_EQ(j.resumed_on, j.y_rank);
        CH_ASSERT_EQ(atomic_load(&ch_count), n); /* nothing left behind */
        CH_ASSERT_OK(coexec_xstream_free(&j.x));
        CH_ASSERT_OK(coexec_xstream_free(&y));
        CH_ASSERT_OK(coexec_sched_free(&xsched));
        CH_ASSERT_OK(coexec_sched_free(&ysched));
        CH_ASSERT_OK(coexec_pool_free(&j.shared));
        CH_ASSERT_OK(coexec_pool_free(&ypool));
    }
    ch_finalize();
}

/* A unit of the stream asks its own stream to stop. */
static void stop_own_stream(void *arg)
{
    (void)arg;
    coexec_xstream_t me;
    CH_CHECK_RC(coexec_xstream_self(&me), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_stop(me), COEXEC_OK);
    atomic_fetch_add(&ch_count, 1);
}

/* coexec_xstream_stop: the stream runs what is queued, then leaves its loop
 * without anyone waiting for it; posts are refused from then on; a join
 * or free reaps it. Errors: the primary, a joined and a freed stream. */
static void t_stop_then_join(void)
{
    ch_init(1);
    long n = ch_iters(300, 30);
    for (int own = 0; own < 2; own++) {
        atomic_store(&ch_count, 0);
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &xs));
        for (long i = 0; i < n; i++) {
            if (i % 2)
                CH_ASSERT_OK(coexec_thread_create_on(xs, yield_count_ult,
                                                     (void *)(intptr_t)(i % 3),
                                                     NULL, NULL));
            else
                CH_ASSERT_OK(coexec_tasklet_create_on(xs, ch_count_tasklet,
                                                      NULL, NULL));
        }
        if (own) {
            CH_ASSERT_OK(coexec_thread_create_on(xs, stop_own_stream, NULL,
                                                 NULL, NULL));
        } else {
            CH_ASSERT_OK(coexec_xstream_stop(xs));
            CH_ASSERT_OK(coexec_xstream_stop(xs)); /* again: the same */
            CH_ASSERT_RC(coexec_xstream_post(xs, ch_count_tasklet, NULL),
                         COEXEC_ESTATE);
        }
        /* It stops by itself, after everything queued ran. */
        coexec_xstream_state_t st = COEXEC_XSTREAM_RUNNING;
        for (int spins = 0; spins < 200000; spins++) {
            CH_ASSERT_OK(coexec_xstream_get_state(xs, &st));
            if (st == COEXEC_XSTREAM_TERMINATED)
                break;
            usleep(50);
        }
        CH_ASSERT_EQ(st, COEXEC_XSTREAM_TERMINATED);
        CH_ASSERT_EQ(atomic_load(&ch_count), n + own);
        CH_ASSERT_OK(coexec_xstream_join(xs));
        CH_ASSERT_RC(coexec_xstream_stop(xs), COEXEC_ESTATE);
        coexec_xstream_t old = xs;
        CH_ASSERT_OK(coexec_xstream_free(&xs));
        CH_ASSERT_RC(coexec_xstream_stop(old), COEXEC_EHANDLE);
    }
    coexec_xstream_t primary;
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &primary));
    CH_ASSERT_RC(coexec_xstream_stop(primary), COEXEC_EPERM);
    ch_finalize();
}

/* A private pool and two schedulers over it, one for each stream that
 * serves it in turn. */
struct priv_pair {
    coexec_pool_t p;
    coexec_sched_t s1, s2;
};

static void priv_pair_make(struct priv_pair *pp, coexec_pool_kind_t kind)
{
    CH_ASSERT_OK_FATAL(coexec_pool_create(kind, COEXEC_ACCESS_PRIV, &pp->p));
    CH_ASSERT_OK_FATAL(
        coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pp->p, 1, NULL, &pp->s1));
    CH_ASSERT_OK_FATAL(
        coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pp->p, 1, NULL, &pp->s2));
}

static void priv_pair_free(struct priv_pair *pp)
{
    CH_ASSERT_OK(coexec_sched_free(&pp->s1));
    CH_ASSERT_OK(coexec_sched_free(&pp->s2));
    CH_ASSERT_OK(coexec_pool_free(&pp->p));
}

/* A stream running scheduler s (one of the pair's). */
static void priv_stream(coexec_sched_t s, coexec_xstream_t *out)
{
    coexec_xstream_attr_t xa;
    CH_ASSERT_OK_FATAL(coexec_xstream_attr_init(&xa));
    xa.sched = s;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&xa, out));
}

/* A ULT homed in a stream's private pool, parked when the stream stops,
 * and woken after the stream left its loop but before anyone joined it:
 * the wake goes to the stopped stream's mailbox. The join takes what is
 * there and queues it in its home pool, where the next stream to serve
 * the pool runs it. (Before, it stayed in the dead mailbox for good.) */
static void wait_event_ult(void *arg)
{
    void *v = NULL;
    CH_CHECK_RC(coexec_eventual_wait(arg, &v), COEXEC_OK);
    atomic_fetch_add(&ch_count, 1);
}

static void t_wake_after_stop(void)
{
    ch_init(1);
    for (int round = 0; round < 3; round++) {
        atomic_store(&ch_count, 0);
        struct priv_pair pp;
        priv_pair_make(&pp, COEXEC_POOL_FIFO);
        coexec_eventual_t ev;
        CH_ASSERT_OK_FATAL(coexec_eventual_init(&ev, 0));
        /* Queued before any stream owns the pool. */
        coexec_thread_t u;
        CH_ASSERT_OK_FATAL(
            coexec_thread_create(pp.p, wait_event_ult, &ev, NULL, &u));
        coexec_xstream_t x;
        priv_stream(pp.s1, &x);
        coexec_unit_state_t st = COEXEC_UNIT_READY;
        CU_ASSERT(CH_WAIT(coexec_thread_get_state(u, &st) == COEXEC_OK &&
                          st == COEXEC_UNIT_BLOCKED));
        CH_ASSERT_OK(coexec_xstream_stop(x));
        coexec_xstream_state_t xst = COEXEC_XSTREAM_RUNNING;
        CU_ASSERT(CH_WAIT(coexec_xstream_get_state(x, &xst) == COEXEC_OK &&
                          xst == COEXEC_XSTREAM_TERMINATED));
        /* The stream has left its loop and nobody has joined it yet. */
        CH_ASSERT_OK(coexec_eventual_set(&ev, NULL, 0));
        CH_ASSERT_OK(coexec_xstream_free(&x));
        CH_ASSERT_EQ(atomic_load(&ch_count), 0);
        /* A second stream over the same pool runs the woken ULT. */
        coexec_xstream_t y;
        priv_stream(pp.s2, &y);
        CH_ASSERT_RC(coexec_thread_join_timed(u, 10ull * 1000000000ull),
                     COEXEC_OK);
        CH_ASSERT_EQ(atomic_load(&ch_count), 1);
        CH_ASSERT_OK(coexec_thread_free(&u));
        CH_ASSERT_OK(coexec_xstream_free(&y));
        CH_ASSERT_OK(coexec_eventual_destroy(&ev));
        priv_pair_free(&pp);
    }
    ch_finalize();
}

/* ULTs parked in a private pool whose stream was joined (so the pool has
 * no owner) are woken by several threads at once, while a new stream
 * takes the pool over: the pushes into the pool meet each other and the
 * new owner's pops (TSan checks they are ordered), and every ULT runs
 * once. A FIFO pool, then a PRIO one, in turn (a PRIO pool's pusher once
 * took the lock and pushed after the new owner had taken the pool over,
 * racing with its pops, which take no lock). */
struct wake_many {
    coexec_eventual_t *ev;
    long n, from, step;
};

static void *wake_many_main(void *arg)
{
    struct wake_many *w = arg;
    for (long i = w->from; i < w->n; i += w->step)
        CH_CHECK_RC(coexec_eventual_set(&w->ev[i], NULL, 0), COEXEC_OK);
    return NULL;
}

static void t_wake_into_unowned_pool(void)
{
    ch_init(1);
    long n = ch_iters(300, 30);
    enum { WAKERS = 3 };
    for (int round = 0; round < 4; round++) {
        atomic_store(&ch_count, 0);
        struct priv_pair pp;
        priv_pair_make(&pp, round % 2 ? COEXEC_POOL_PRIO : COEXEC_POOL_FIFO);
        coexec_eventual_t *ev = calloc((size_t)n, sizeof *ev);
        coexec_thread_t *u = calloc((size_t)n, sizeof *u);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
        CU_ASSERT_PTR_NOT_NULL_FATAL(u);
        for (long i = 0; i < n; i++) {
            CH_ASSERT_OK_FATAL(coexec_eventual_init(&ev[i], 0));
            CH_ASSERT_OK_FATAL(
                coexec_thread_create(pp.p, wait_event_ult, &ev[i], NULL, &u[i]));
        }
        coexec_xstream_t x;
        priv_stream(pp.s1, &x);
        for (long i = 0; i < n; i++) {
            coexec_unit_state_t st = COEXEC_UNIT_READY;
            CU_ASSERT(CH_WAIT(coexec_thread_get_state(u[i], &st) ==
                                  COEXEC_OK &&
                              st == COEXEC_UNIT_BLOCKED));
        }
        CH_ASSERT_OK(coexec_xstream_free(&x)); /* the pool has no owner */
        pthread_t th[WAKERS];
        struct wake_many w[WAKERS];
        for (int k = 0; k < WAKERS; k++) {
            w[k] = (struct wake_many){ev, n, k, WAKERS};
            CH_ASSERT_EQ(pthread_create(&th[k], NULL, wake_many_main, &w[k]),
                         0);
        }
        coexec_xstream_t y;
        priv_stream(pp.s2, &y);
        for (int k = 0; k < WAKERS; k++)
            pthread_join(th[k], NULL);
        CU_ASSERT(CH_WAIT(atomic_load(&ch_count) == n));
        for (long i = 0; i < n; i++) {
            CH_ASSERT_OK(coexec_thread_free(&u[i]));
            CH_ASSERT_OK(coexec_eventual_destroy(&ev[i]));
        }
        CH_ASSERT_EQ(atomic_load(&ch_count), n); /* each ran once */
        CH_ASSERT_OK(coexec_xstream_free(&y));
        priv_pair_free(&pp);
        free(ev);
        free(u);
    }
    ch_finalize();
}

/* The primary's main ULT yields to ULTs queued in a private pool that no
 * stream owns (it takes each out and runs it) while a new stream takes
 * the pool over and pops from it: each ULT runs once, on one of the two
 * (TSan checks the takes are ordered with the new owner's pops). */
static void t_yield_to_unowned_pool(void)
{
    ch_init(1);
    long n = ch_iters(300, 30);
    for (int round = 0; round < 3; round++) {
        atomic_store(&ch_count, 0);
        struct priv_pair pp;
        priv_pair_make(&pp, COEXEC_POOL_FIFO);
        coexec_thread_t *u = calloc((size_t)n, sizeof *u);
        CU_ASSERT_PTR_NOT_NULL_FATAL(u);
        for (long i = 0; i < n; i++)
            CH_ASSERT_OK_FATAL(
                coexec_thread_create(pp.p, ch_count_ult, NULL, NULL, &u[i]));
        coexec_xstream_t y;
        priv_stream(pp.s1, &y);
        long here = 0;
        for (long i = 0; i < n; i++) {
            int rc = coexec_yield_to(u[i]);
            /* ESTATE: the new owner has it (or ran it) already. */
            CU_ASSERT(rc == COEXEC_OK || rc == COEXEC_ESTATE);
            here += rc == COEXEC_OK;
        }
        for (long i = 0; i < n; i++)
            CH_ASSERT_OK(coexec_thread_wait(u[i]));
        CH_ASSERT_EQ(atomic_load(&ch_count), n); /* each ran once */
        CU_ASSERT(here <= n);
        for (long i = 0; i < n; i++)
            CH_ASSERT_OK(coexec_thread_free(&u[i]));
        CH_ASSERT_OK(coexec_xstream_free(&y));
        priv_pair_free(&pp);
        free(u);
    }
    ch_finalize();
}

static const ch_test_t drain_tests[] = {{"queued_units_run_before_join", t_drain_on_join},
                                        {"stop_then_join", t_stop_then_join},
                                        {"join_while_sharing_a_pool", t_join_sharing_a_pool},
                                        {"wake_after_stop", t_wake_after_stop},
                                        {"wake_into_unowned_pool", t_wake_into_unowned_pool},
                                        {"yield_to_unowned_pool", t_yield_to_unowned_pool},
                                        {NULL, NULL}};

static const ch_test_t many_tests[] = {
    {"idle_wake_free_default", t_many_default},
    {"idle_wake_free_randws", t_many_randws},
    {NULL, NULL}};

/* Posts racing the stream's end: a pthread posts until refused while the
 * stream is freed; every post that returned COEXEC_OK has run, on that
 * stream, and the first refusal is COEXEC_ESTATE (or EHANDLE once the
 * handle is gone). */
typedef struct post_race {
    coexec_xstream_t xs;
    post_arg_t *pa;
    long max;
    atomic_long ok;
    atomic_int go, last_rc;
} post_race_t;

static void *post_until_refused(void *arg)
{
    post_race_t *r = arg;
    while (!atomic_load(&r->go))
        sched_yield();
    /* At most max posts (under valgrind a stream runs them slowly): the
     * last ones race the free. */
    atomic_store(&r->last_rc, COEXEC_ESTATE);
    for (long i = 0; i < r->max; i++) {
        int rc = coexec_xstream_post(r->xs, post_tasklet, r->pa);
        if (rc != COEXEC_OK) {
            atomic_store(&r->last_rc, rc);
            return NULL;
        }
        atomic_fetch_add(&r->ok, 1);
    }
    return NULL;
}

static void t_post_races_free(void)
{
    ch_init(1);
    for (int round = 0; round < (int)ch_iters(50, 5); round++) {
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &xs));
        int rank = -1;
        CH_ASSERT_OK(coexec_xstream_get_rank(xs, &rank));
        post_arg_t pa = {.want_rank = rank};
        post_race_t r = {.xs = xs, .pa = &pa, .max = ch_iters(4000, 200)};
        ch_pthread_t th;
        ch_pthread_start(&th, post_until_refused, &r);
        atomic_store(&r.go, 1);
        while (atomic_load(&r.ok) < r.max / 2)
            sched_yield();
        CH_ASSERT_OK(coexec_xstream_free(&xs));
        ch_pthread_join(&th);
        /* Refused once stopping (or the handle gone), if it got there. */
        CU_ASSERT(atomic_load(&r.last_rc) == COEXEC_ESTATE ||
                  atomic_load(&r.last_rc) == COEXEC_EHANDLE);
        CH_ASSERT_EQ(atomic_load(&pa.ran), atomic_load(&r.ok));
        CH_ASSERT_EQ(atomic_load(&pa.wrong), 0);
    }
    ch_finalize();
}

static const ch_test_t post_tests[] = {{"runs_on_its_stream", t_post_runs_there},
                                       {"races_the_streams_end", t_post_races_free},
                                       {"errors", t_post_errors},
                                       {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"lifecycle", lifecycle_tests}, {"ranks", ranks_tests},
    {"state", state_tests},         {"cpu", cpu_tests},
    {"self", self_tests},           {"errors", errors_tests},
    {"sched_attr", sched_attr_tests}, {"drain", drain_tests},
    {"post", post_tests},           {"many", many_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
