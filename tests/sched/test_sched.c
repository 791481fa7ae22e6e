/*
 * tests/sched/test_sched.c: BASIC and BASIC_WAIT schedulers: pool priority,
 * parking of an idle BASIC_WAIT stream (CPU time), wake-up by a push from
 * another thread, EBUSY, argument errors.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NPOOLS 3

/* ======================================================================= */
/* priority                                                                 */
/* ======================================================================= */

/* g_log_n counts reserved slots; g_log_done counts slots written. Readers
 * that do not join the writer wait for g_log_done. */
static atomic_int g_log[256];
static atomic_int g_log_n, g_log_done;

static void log_id(int id)
{
    int i = atomic_fetch_add(&g_log_n, 1);
    if (i < 256)
        atomic_store(&g_log[i], id);
    atomic_fetch_add(&g_log_done, 1);
}

static void log_ult(void *arg) { log_id((int)(intptr_t)arg); }

static coexec_poll_status_t log_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    log_id((int)(intptr_t)arg);
    return COEXEC_READY;
}

static coexec_pool_t g_pools[NPOOLS];

/* Runs first (alone in pool 2) and queues one unit per pool, lowest
 * priority first: the scheduler must take pool 0's next. */
static void spawner_ult(void *arg)
{
    (void)arg;
    log_id(1000);
    CH_CHECK_RC(coexec_thread_create(g_pools[2], log_ult, (void *)(intptr_t)1002, NULL, NULL), COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_create(g_pools[1], log_tasklet, (void *)(intptr_t)1001, NULL), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_create(g_pools[0], log_ult, (void *)(intptr_t)999, NULL, NULL), COEXEC_OK);
    /* Yielding lets the pool 0 and pool 1 units run before it resumes. */
    CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    log_id(1003);
}

static void run_priority(coexec_sched_kind_t kind, coexec_pool_kind_t pkind)
{
    for (int i = 0; i < NPOOLS; i++)
        CH_ASSERT_OK_FATAL(coexec_pool_create(pkind, COEXEC_ACCESS_MPMC, &g_pools[i]));
    /* Units queued before the stream starts: interleaved over the pools. */
    atomic_store(&g_log_n, 0);
    atomic_store(&g_log_done, 0);
    enum { N = 30 };
    for (int i = 0; i < N; i++) {
        int p = i % NPOOLS;
        int id = p * 100 + i / NPOOLS;
        if (i % 2)
            CH_ASSERT_OK(coexec_thread_create(g_pools[p], log_ult, (void *)(intptr_t)id, NULL, NULL));
        else
            CH_ASSERT_OK(coexec_tasklet_create(g_pools[p], log_tasklet, (void *)(intptr_t)id, NULL));
    }
    coexec_sched_config_t sc;
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    sc.steal = 0;
    coexec_sched_t sched;
    CH_ASSERT_OK_FATAL(coexec_sched_create(kind, g_pools, NPOOLS, &sc, &sched));
    int np = 0;
    CH_ASSERT_OK(coexec_sched_get_num_pools(sched, &np));
    CH_ASSERT_EQ(np, NPOOLS);
    for (int i = 0; i < NPOOLS; i++) {
        coexec_pool_t p;
        CH_ASSERT_OK(coexec_sched_get_pool(sched, i, &p));
        CU_ASSERT(CH_SAME(p, g_pools[i]));
    }
    coexec_xstream_attr_t a;
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.sched = sched;
    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));
    CH_ASSERT_OK(coexec_xstream_join(xs));
    CH_ASSERT_EQ_FATAL(atomic_load(&g_log_n), N);
    /* pool 0's units, then pool 1's, then pool 2's; each pool in its order */
    int per = N / NPOOLS, k = 0;
    for (int p = 0; p < NPOOLS; p++)
        for (int j = 0; j < per; j++, k++) {
            int want = p * 100 + (pkind == COEXEC_POOL_FIFO ? j : per - 1 - j);
            if (g_log[k] != want) {
                char b[128];
                snprintf(b, sizeof b, "run #%d was unit %d, expected %d", k,
                         g_log[k], want);
                CU_assertImplementation(CU_FALSE, __LINE__, b, __FILE__, "", CU_FALSE);
            }
        }
    CH_ASSERT_OK(coexec_xstream_free(&xs));

    /* Units queued while it runs: pool 0 is checked before every pick. */
    atomic_store(&g_log_n, 0);
    atomic_store(&g_log_done, 0);
    CH_ASSERT_OK(coexec_thread_create(g_pools[2], spawner_ult, NULL, NULL, NULL));
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_EQ_FATAL(atomic_load(&g_log_n), 5);
    /* spawner, pool0 unit, pool1 unit, then pool 2: the older unit
     * (1002) or the yielder (queued behind it) */
    CH_ASSERT_EQ(g_log[0], 1000);
    CH_ASSERT_EQ(g_log[1], 999);
    CH_ASSERT_EQ(g_log[2], 1001);
    CH_ASSERT_EQ(g_log[3], 1002);
    CH_ASSERT_EQ(g_log[4], 1003);

    CH_ASSERT_OK(coexec_sched_free(&sched));
    for (int i = 0; i < NPOOLS; i++)
        CH_ASSERT_OK(coexec_pool_free(&g_pools[i]));
}

static void t_priority_basic(void)
{
    ch_init(1);
    run_priority(COEXEC_SCHED_BASIC, COEXEC_POOL_FIFO);
    run_priority(COEXEC_SCHED_BASIC, COEXEC_POOL_LIFO);
    ch_finalize();
}

static void t_priority_basic_wait(void)
{
    ch_init(1);
    run_priority(COEXEC_SCHED_BASIC_WAIT, COEXEC_POOL_FIFO);
    run_priority(COEXEC_SCHED_BASIC_WAIT, COEXEC_POOL_LIFO);
    ch_finalize();
}

/* A pool shared by two streams: every unit runs exactly once. */
static atomic_int *g_hits;

static coexec_poll_status_t hit_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    atomic_fetch_add(&g_hits[(intptr_t)arg], 1);
    return COEXEC_READY;
}

static void hit_ult(void *arg)
{
    CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    atomic_fetch_add(&g_hits[(intptr_t)arg], 1);
}

static void t_shared_pool(void)
{
    ch_init(1);
    long n = ch_iters(20000, 2000);
    g_hits = calloc((size_t)n, sizeof *g_hits);
    coexec_pool_t pool;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool));
    coexec_sched_t s[2];
    coexec_xstream_t xs[2];
    for (int i = 0; i < 2; i++) {
        CH_ASSERT_OK_FATAL(coexec_sched_create(i ? COEXEC_SCHED_BASIC : COEXEC_SCHED_BASIC_WAIT,
                                               &pool, 1, NULL, &s[i]));
        coexec_xstream_attr_t a;
        CH_ASSERT_OK(coexec_xstream_attr_init(&a));
        a.sched = s[i];
        CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs[i]));
    }
    for (long i = 0; i < n; i++) {
        if (i % 4 == 0)
            CH_ASSERT_OK(coexec_thread_create(pool, hit_ult, (void *)(intptr_t)i, NULL, NULL));
        else
            CH_ASSERT_OK(coexec_tasklet_create(pool, hit_tasklet, (void *)(intptr_t)i, NULL));
    }
    for (int i = 0; i < 2; i++)
        CH_ASSERT_OK(coexec_xstream_free(&xs[i]));
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += atomic_load(&g_hits[i]) != 1;
    CH_ASSERT_EQ(bad, 0);
    for (int i = 0; i < 2; i++)
        CH_ASSERT_OK(coexec_sched_free(&s[i]));
    CH_ASSERT_OK(coexec_pool_free(&pool));
    free(g_hits);
    ch_finalize();
}

/* ======================================================================= */
/* wait: an idle BASIC_WAIT stream parks                                    */
/* ======================================================================= */

typedef struct {
    double cpu;  /* CPU time of the OS thread running the unit */
    double wall;
    int rank;
    atomic_int done;
} sample_t;

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sample_ult(void *arg)
{
    sample_t *s = arg;
    s->cpu = thread_cpu();
    s->wall = ch_now();
    s->rank = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&s->rank), COEXEC_OK);
    atomic_store(&s->done, 1);
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Waits by sleeping (the main ULT keeps the primary stream's OS thread, so
 * the primary steals nothing meanwhile). */
static int wait_sleeping(atomic_int *flag)
{
    double t0 = ch_now();
    while (!atomic_load(flag)) {
        if (ch_now() - t0 > CH_WAIT_LIMIT_S)
            return 0;
        sleep_s(0.001);
    }
    return 1;
}

typedef struct {
    coexec_pool_t pool;
    sample_t *s;
    atomic_int rc;
} ext_push_t;

static void *push_from_pthread(void *arg)
{
    ext_push_t *e = arg;
    atomic_store(&e->rc, coexec_thread_create(e->pool, sample_ult, e->s, NULL, NULL));
    return NULL;
}

static double idle_cpu_fraction(coexec_pool_t pool, int expect_rank, int from_pthread,
                                double idle_s)
{
    sample_t a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    CH_ASSERT_OK(coexec_thread_create(pool, sample_ult, &a, NULL, NULL));
    if (!wait_sleeping(&a.done)) {
        CU_FAIL("first sample never ran");
        return -1;
    }
    sleep_s(idle_s);
    if (from_pthread) {
        ext_push_t e = {pool, &b, 1};
        ch_pthread_t th;
        ch_pthread_start(&th, push_from_pthread, &e);
        ch_pthread_join(&th);
        CH_ASSERT_OK(atomic_load(&e.rc));
    } else {
        CH_ASSERT_OK(coexec_thread_create(pool, sample_ult, &b, NULL, NULL));
    }
    /* The push wakes the parked stream and the unit runs. */
    if (!wait_sleeping(&b.done)) {
        CU_FAIL("a push did not wake the parked stream");
        return -1;
    }
    CH_ASSERT_EQ(a.rank, expect_rank);
    CH_ASSERT_EQ(b.rank, expect_rank);
    double wall = b.wall - a.wall, cpu = b.cpu - a.cpu;
    CU_ASSERT(wall >= idle_s * 0.9);
    printf("[idle %.0f ms: stream CPU %.1f ms] ", wall * 1e3, cpu * 1e3);
    return wall > 0 ? cpu / wall : -1;
}

static void t_wait_parks(void)
{
    ch_init(1);
    for (int spin = 0; spin < 2; spin++) {
        ch_stream_t s;
        coexec_sched_config_t sc;
        /* idle_spin_us 0 (park at once) and the runtime's default budget */
        CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &s.pool));
        CH_ASSERT_OK(coexec_sched_config_init(&sc));
        sc.idle_spin_us = spin ? -1 : 0;
        CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &s.pool, 1, &sc, &s.sched));
        coexec_xstream_attr_t a;
        CH_ASSERT_OK(coexec_xstream_attr_init(&a));
        a.sched = s.sched;
        CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &s.xs));
        CH_ASSERT_OK(coexec_xstream_get_rank(s.xs, &s.rank));
        for (int from_pthread = 0; from_pthread < 2; from_pthread++) {
            double f = idle_cpu_fraction(s.pool, s.rank, from_pthread, 0.3);
            CU_ASSERT(f >= 0 && f < 0.5);
        }
        CH_ASSERT_OK(ch_stream_free(&s));
    }
    ch_finalize();
}

static void t_wait_parks_default_setup(void)
{
    /* The streams init starts with BASIC_WAIT park too. */
    ch_init_ex(2, COEXEC_SCHED_BASIC_WAIT, 1);
    coexec_xstream_t x1;
    coexec_pool_t p1;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &x1));
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(x1, &p1));
    double f = idle_cpu_fraction(p1, 1, 0, 0.3);
    CU_ASSERT(f >= 0 && f < 0.5);
    f = idle_cpu_fraction(p1, 1, 1, 0.3);
    CU_ASSERT(f >= 0 && f < 0.5);
    ch_finalize();
}

static void t_basic_spins_info(void)
{
    /* For information only: BASIC does not park (no verdict on timing). */
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC));
    double f = idle_cpu_fraction(s.pool, s.rank, 0, 0.2);
    printf("[BASIC idle CPU fraction %.2f] ", f);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

static atomic_int g_wake_phase;

static void suspend_ult(void *arg)
{
    sample_t *s = arg;
    s->cpu = thread_cpu();
    atomic_store(&g_wake_phase, 1);
    CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
    double c2 = thread_cpu();
    s->cpu = c2 - s->cpu;
    atomic_store(&g_wake_phase, 2);
}

static void pusher_ult(void *arg)
{
    coexec_pool_t *pool = arg;
    CH_CHECK_RC(coexec_tasklet_create(*pool, log_tasklet, (void *)(intptr_t)7, NULL), COEXEC_OK);
}

static void t_wait_wakeups(void)
{
    /* A parked stream is woken by a resume (the unit goes back to its home
     * pool) and by a push from a ULT on another stream. */
    ch_init(2);
    ch_stream_t s;
    coexec_sched_config_t sc;
    memset(&s, 0, sizeof s);
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &s.pool));
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    sc.idle_spin_us = 0;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &s.pool, 1, &sc, &s.sched));
    coexec_xstream_attr_t a;
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.sched = s.sched;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &s.xs));

    sample_t smp;
    memset(&smp, 0, sizeof smp);
    atomic_store(&g_wake_phase, 0);
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(s.pool, suspend_ult, &smp, NULL, &t));
    CU_ASSERT_FATAL(wait_sleeping(&g_wake_phase));
    sleep_s(0.3);
    CH_ASSERT_OK(coexec_thread_resume(t));
    atomic_int *ph = &g_wake_phase;
    double t0 = ch_now();
    while (atomic_load(ph) != 2 && ch_now() - t0 < CH_WAIT_LIMIT_S)
        sleep_s(0.001);
    CH_ASSERT_EQ(atomic_load(ph), 2);
    CH_ASSERT_OK(coexec_thread_free(&t));
    /* the suspended ULT's stream was parked: the CPU time its OS thread
     * used across the suspension is small */
    printf("[CPU while suspended %.1f ms] ", smp.cpu * 1e3);
    CU_ASSERT(smp.cpu < 0.15);

    /* A ULT on rank 1 pushes into the parked stream's pool. */
    sleep_s(0.05);
    coexec_xstream_t x1;
    coexec_pool_t p1;
    CH_ASSERT_OK(coexec_xstream_by_rank(1, &x1));
    CH_ASSERT_OK(coexec_xstream_get_main_pool(x1, &p1));
    atomic_store(&g_log_n, 0);
    atomic_store(&g_log_done, 0);
    CH_ASSERT_OK(ch_run_ult_in(p1, pusher_ult, &s.pool));
    CH_WAIT(atomic_load(&g_log_done) == 1);
    CH_ASSERT_EQ(atomic_load(&g_log[0]), 7);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* Stealing: an idle stream takes the unit the owner would take last. */
static atomic_int g_steal_slot, g_steal_n; /* slots reserved / written */
static atomic_int g_steal_id[8], g_steal_rank[8];

static void steal_probe_ult(void *arg)
{
    int k = atomic_fetch_add(&g_steal_slot, 1);
    int r = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
    if (k < 8) {
        atomic_store(&g_steal_id[k], (int)(intptr_t)arg);
        atomic_store(&g_steal_rank[k], r);
    }
    atomic_fetch_add(&g_steal_n, 1);
}

static atomic_int g_busy_started, g_busy_release;

static void busy_ult(void *arg)
{
    /* keeps stream 1 busy (no yield) until the probes have run, or the
     * test gives up on them (no time limit of its own: a slow thief must
     * not let the owner run the probes); if another stream stole it, it
     * reports that and returns */
    int want = (int)(intptr_t)arg;
    int r = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
    if (r != 1) {
        atomic_store(&g_busy_started, -1);
        return;
    }
    atomic_store(&g_busy_started, 1);
    while (atomic_load(&g_steal_n) < want && !atomic_load(&g_busy_release))
        ;
}

/* BASIC streams spin, so the idle one keeps looking for work; BASIC_WAIT
 * and PRIO ones park as thieves, and the pushes into the busy stream's
 * pool must wake one to take them. The main ULT waits by sleeping: the
 * primary takes nothing meanwhile. */
static void steal_oldest(coexec_sched_kind_t kind)
{
    ch_init_ex(3, kind, 1);
    coexec_xstream_t x1;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &x1));
    atomic_store(&g_steal_n, 0);
    atomic_store(&g_steal_slot, 0);
    atomic_store(&g_busy_started, 0);
    atomic_store(&g_busy_release, 0);
    enum { N = 4 };
    coexec_thread_t busy;
    double t0 = ch_now();
    for (;;) {
        atomic_store(&g_busy_started, 0);
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(x1, busy_ult, (void *)(intptr_t)N, NULL, &busy));
        while (!atomic_load(&g_busy_started) && ch_now() - t0 < CH_WAIT_LIMIT_S)
            sleep_s(0.001);
        if (atomic_load(&g_busy_started) == 1)
            break;
        CH_ASSERT_OK(coexec_thread_free(&busy)); /* stolen: try again */
        CU_ASSERT_FATAL(ch_now() - t0 < CH_WAIT_LIMIT_S);
    }
    for (int i = 0; i < N; i++)
        CH_ASSERT_OK(coexec_thread_create_on(x1, steal_probe_ult, (void *)(intptr_t)i, NULL, NULL));
    t0 = ch_now();
    while (atomic_load(&g_steal_n) < N && ch_now() - t0 < CH_WAIT_LIMIT_S)
        sleep_s(0.001);
    atomic_store(&g_busy_release, 1);
    CH_ASSERT_EQ_FATAL(atomic_load(&g_steal_n), N);
    CH_ASSERT_OK(coexec_thread_free(&busy));
    /* the owner was busy: rank 2 ran them all, oldest first */
    for (int k = 0; k < N; k++) {
        CH_ASSERT_EQ(atomic_load(&g_steal_rank[k]), 2);
        CH_ASSERT_EQ(atomic_load(&g_steal_id[k]), k);
    }
    ch_finalize();
}

static void t_steal_oldest(void) { steal_oldest(COEXEC_SCHED_BASIC); }
static void t_steal_oldest_wait(void) { steal_oldest(COEXEC_SCHED_BASIC_WAIT); }
static void t_steal_oldest_prio(void) { steal_oldest(COEXEC_SCHED_PRIO); }

/* ======================================================================= */
/* busy                                                                     */
/* ======================================================================= */

static void t_sched_free_busy(void)
{
    ch_init(1);
    coexec_pool_t pool;
    coexec_sched_t sched;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pool, 1, NULL, &sched));
    coexec_xstream_attr_t a;
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.sched = sched;
    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));
    coexec_sched_t copy = sched;
    CH_ASSERT_RC(coexec_sched_free(&copy), COEXEC_EBUSY);
    CU_ASSERT(CH_SAME(copy, sched));
    /* still works */
    atomic_store(&g_log_n, 0);
    atomic_store(&g_log_done, 0);
    CH_ASSERT_OK(coexec_tasklet_create(pool, log_tasklet, (void *)(intptr_t)3, NULL));
    CH_ASSERT_OK(coexec_xstream_join(xs));
    CH_ASSERT_EQ(atomic_load(&g_log_n), 1);
    /* A joined stream that was not freed still holds it? It has stopped:
     * either answer is allowed until it is freed; after the free it is
     * certainly free. */
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_OK(coexec_sched_free(&copy));
    CU_ASSERT(CH_IS_NULL(copy));
    coexec_sched_t stale = sched;
    int n;
    coexec_pool_t p;
    CH_ASSERT_RC(coexec_sched_free(&stale), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_sched_get_num_pools(sched, &n), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_sched_get_pool(sched, 0, &p), COEXEC_EHANDLE);
    /* A stale scheduler handle cannot start a stream. */
    CH_ASSERT_RC(coexec_xstream_create(&a, &xs), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_pool_free(&pool));
    ch_finalize();
}

/* ======================================================================= */
/* args                                                                     */
/* ======================================================================= */

static void t_config_defaults(void)
{
    coexec_sched_config_t sc;
    memset(&sc, 0x77, sizeof sc);
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    CH_ASSERT_EQ(sc.size, sizeof sc);
    CH_ASSERT_EQ(sc.event_freq, 0);
    CH_ASSERT_EQ(sc.idle_spin_us, -1);
    CH_ASSERT_EQ(sc.steal, 0);
    CH_ASSERT_RC(coexec_sched_config_init(NULL), COEXEC_EINVAL);
}

static void t_bad_args(void)
{
    ch_init(1);
    enum { MAXP = 64 };
    coexec_pool_t pools[MAXP + 1];
    for (int i = 0; i <= MAXP; i++)
        CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pools[i]));
    coexec_sched_t s = {0};
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_USER, pools, 1, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create((coexec_sched_kind_t)-1, pools, 1, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, NULL, 1, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, pools, 0, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, pools, -1, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, pools, MAXP + 1, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, pools, 1, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_free(NULL), COEXEC_EINVAL);

    /* 64 pools is the maximum and works. */
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, pools, MAXP, NULL, &s));
    int n = 0;
    CH_ASSERT_OK(coexec_sched_get_num_pools(s, &n));
    CH_ASSERT_EQ(n, MAXP);
    coexec_pool_t p;
    CH_ASSERT_OK(coexec_sched_get_pool(s, MAXP - 1, &p));
    CU_ASSERT(CH_SAME(p, pools[MAXP - 1]));
    CH_ASSERT_RC(coexec_sched_get_pool(s, MAXP, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_get_pool(s, -1, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_get_pool(s, 0, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_get_num_pools(s, NULL), COEXEC_EINVAL);
    /* It drives a stream: a unit in the last pool runs. */
    coexec_xstream_attr_t a;
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.sched = s;
    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));
    atomic_store(&g_log_n, 0);
    atomic_store(&g_log_done, 0);
    CH_ASSERT_OK(coexec_tasklet_create(pools[MAXP - 1], log_tasklet, (void *)(intptr_t)5, NULL));
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_EQ(atomic_load(&g_log_n), 1);
    CH_ASSERT_OK(coexec_sched_free(&s));

    /* A bad pool among good ones. */
    coexec_pool_t stale = pools[MAXP];
    CH_ASSERT_OK(coexec_pool_free(&pools[MAXP]));
    coexec_pool_t mix[3] = {pools[0], stale, pools[1]};
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, mix, 3, NULL, &s), COEXEC_EHANDLE);
    mix[1] = (coexec_pool_t){0};
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, mix, 3, NULL, &s), COEXEC_EHANDLE);
    /* nothing was left holding pools[0] */
    CH_ASSERT_OK(coexec_pool_free(&pools[0]));
    for (int i = 1; i < MAXP; i++)
        CH_ASSERT_OK(coexec_pool_free(&pools[i]));

    /* The null scheduler handle. */
    coexec_sched_t nul = {0};
    CH_ASSERT_RC(coexec_sched_get_num_pools(nul, &n), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_sched_free(&nul), COEXEC_EHANDLE);
    ch_finalize();
}

static void t_config_fields(void)
{
    /* event_freq 1 and stealing on: the stream runs units, and steals from
     * the primary's default pool. */
    ch_init(1);
    coexec_pool_t pool;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool));
    coexec_sched_config_t sc;
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    sc.event_freq = 1;
    sc.idle_spin_us = 10;
    sc.steal = 1;
    coexec_sched_t sched;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pool, 1, &sc, &sched));
    coexec_xstream_attr_t a;
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.sched = sched;
    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));
    atomic_store(&g_log_n, 0);
    atomic_store(&g_log_done, 0);
    for (int i = 0; i < 50; i++)
        CH_ASSERT_OK(coexec_tasklet_create(pool, log_tasklet, (void *)(intptr_t)i, NULL));
    CH_WAIT(atomic_load(&g_log_done) == 50);
    /* Units in the primary's pool while the main ULT sleeps (so the
     * primary cannot take them): the stealing stream runs them. */
    coexec_xstream_t x0;
    coexec_pool_t p0;
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_OK(coexec_xstream_get_main_pool(x0, &p0));
    atomic_store(&g_log_n, 0);
    atomic_store(&g_log_done, 0);
    for (int i = 0; i < 10; i++)
        CH_ASSERT_OK(coexec_tasklet_create(p0, log_tasklet, (void *)(intptr_t)i, NULL));
    double t0 = ch_now();
    while (atomic_load(&g_log_done) < 10 && ch_now() - t0 < CH_WAIT_LIMIT_S)
        sleep_s(0.001);
    CH_ASSERT_EQ(atomic_load(&g_log_done), 10);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_OK(coexec_pool_free(&pool));
    ch_finalize();
}

/* ======================================================================= */

static const ch_test_t priority_tests[] = {
    {"basic_pool0_first", t_priority_basic},
    {"basic_wait_pool0_first", t_priority_basic_wait},
    {"pool_shared_by_two_streams", t_shared_pool},
    {"steal_takes_oldest", t_steal_oldest},
    {"steal_takes_oldest_basic_wait", t_steal_oldest_wait},
    {"steal_takes_oldest_prio", t_steal_oldest_prio},
    {NULL, NULL}};
static const ch_test_t wait_tests[] = {
    {"idle_stream_parks", t_wait_parks},
    {"idle_default_stream_parks", t_wait_parks_default_setup},
    {"resume_and_push_wake", t_wait_wakeups},
    {"basic_spins_info", t_basic_spins_info},
    {NULL, NULL}};
static const ch_test_t busy_tests[] = {{"free_in_use_ebusy", t_sched_free_busy},
                                       {NULL, NULL}};
static const ch_test_t args_tests[] = {
    {"config_defaults", t_config_defaults},
    {"bad_args", t_bad_args},
    {"config_fields", t_config_fields},
    {NULL, NULL}};

static const ch_suite_t suites[] = {{"priority", priority_tests},
                                    {"wait", wait_tests},
                                    {"busy", busy_tests},
                                    {"args", args_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
