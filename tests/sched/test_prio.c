/*
 * tests/sched/test_prio.c: the prio_sched suite: the PRIO scheduler serves
 * its pools in priority order, and aging serves the low pools too
 */
#include "stack_test.h"

static void t_prio_order(void)
{
    ch_init(1);
    enum { NP = 3, PER = 8 };
    coexec_pool_t pools[NP];
    for (int i = 0; i < NP; i++)
        CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pools[i]));
    olog_reset(&g_log);
    /* Interleaved, lowest priority first. */
    for (int j = 0; j < PER; j++)
        for (int p = NP - 1; p >= 0; p--) {
            intptr_t id = p * 100 + j;
            if ((j + p) % 2)
                CH_ASSERT_OK(coexec_thread_create(pools[p], log_ult, (void *)id, NULL, NULL));
            else
                CH_ASSERT_OK(coexec_tasklet_create(pools[p], log_tasklet, (void *)id, NULL));
        }
    coexec_sched_config_t sc = no_steal_cfg();
    sc.aging = 1000; /* far more than the units: strict priority here */
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_PRIO, pools, NP, &sc, &s));
    coexec_xstream_t xs;
    stream_with(s, &xs);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    int want[NP * PER], k = 0;
    for (int p = 0; p < NP; p++)
        for (int j = 0; j < PER; j++)
            want[k++] = p * 100 + j;
    olog_expect(&g_log, want, NP * PER, "PRIO order");
    CH_ASSERT_OK(coexec_sched_free(&s));
    for (int i = 0; i < NP; i++)
        CH_ASSERT_OK(coexec_pool_free(&pools[i]));
    ch_finalize();
}

/* Aging: pool 0 is refilled by a chain of units; the units of pools 1 and
 * 2 still run, each after a bounded number of pool-0 units. */
static coexec_pool_t g_chain_pool;
static atomic_long g_chain_done, g_chain_made, g_chain_max;
static atomic_long g_low_at[2];

static coexec_poll_status_t chain_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    /* The successor first: pool 0 is never empty while the chain runs. */
    if (atomic_fetch_add(&g_chain_made, 1) < atomic_load(&g_chain_max))
        CH_CHECK_RC(coexec_tasklet_create(g_chain_pool, chain_tasklet, NULL, NULL),
                    COEXEC_OK);
    atomic_fetch_add(&g_chain_done, 1);
    return COEXEC_READY;
}

static void low_ult(void *arg)
{
    atomic_store(&g_low_at[(intptr_t)arg], atomic_load(&g_chain_done));
}

static void prio_chain_run(unsigned aging, long *at1, long *at2, long *k)
{
    enum { NP = 3 };
    coexec_pool_t pools[NP];
    for (int i = 0; i < NP; i++)
        CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pools[i]));
    *k = ch_iters(5000, 500);
    g_chain_pool = pools[0];
    atomic_store(&g_chain_done, 0);
    atomic_store(&g_chain_made, 2);
    atomic_store(&g_chain_max, *k);
    atomic_store(&g_low_at[0], -1);
    atomic_store(&g_low_at[1], -1);
    /* Two chains in pool 0, one low unit in each lower pool. */
    CH_ASSERT_OK(coexec_thread_create(pools[2], low_ult, (void *)1, NULL, NULL));
    CH_ASSERT_OK(coexec_thread_create(pools[1], low_ult, (void *)0, NULL, NULL));
    CH_ASSERT_OK(coexec_tasklet_create(pools[0], chain_tasklet, NULL, NULL));
    CH_ASSERT_OK(coexec_tasklet_create(pools[0], chain_tasklet, NULL, NULL));
    coexec_sched_config_t sc = no_steal_cfg();
    sc.aging = aging;
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_PRIO, pools, NP, &sc, &s));
    coexec_xstream_t xs;
    stream_with(s, &xs);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    *at1 = atomic_load(&g_low_at[0]);
    *at2 = atomic_load(&g_low_at[1]);
    CH_ASSERT_EQ(atomic_load(&g_chain_done), *k);
    CH_ASSERT_OK(coexec_sched_free(&s));
    for (int i = 0; i < NP; i++)
        CH_ASSERT_OK(coexec_pool_free(&pools[i]));
}

static void t_prio_aging(void)
{
    ch_init(1);
    enum { AGING = 8 };
    long at1, at2, k;
    prio_chain_run(AGING, &at1, &at2, &k);
    printf("[pool-0 units before pool 1: %ld, before pool 2: %ld, of %ld] ",
           at1, at2, k);
    CU_ASSERT(at1 >= 0 && at1 <= 2 * AGING + 2);
    CU_ASSERT(at2 >= 0 && at2 <= 3 * AGING + 3);
    CU_ASSERT(at1 < k && at2 < k); /* while pool 0 was still refilled */
    ch_finalize();
}

/* COEXEC_SCHED_AGING_NONE: strict priority, the low pools wait until the
 * chain that keeps pool 0 full has ended, pool 1 before pool 2. */
static void t_prio_strict(void)
{
    ch_init(1);
    long at1, at2, k;
    prio_chain_run(COEXEC_SCHED_AGING_NONE, &at1, &at2, &k);
    CH_ASSERT_EQ(at1, k);
    CH_ASSERT_EQ(at2, k);
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t schedx_prio_tests[] = {
    {"pools_in_priority_order", t_prio_order},
    {"aging_serves_low_pools", t_prio_aging},
    {"strict_without_aging", t_prio_strict},
    {NULL, NULL}};
