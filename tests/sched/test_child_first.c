/*
 * tests/sched/test_child_first.c: the child_first suite: child-first
 * creation runs the child before its parent (also when the child yields),
 * exact counts on 4 streams with BASIC and RANDWS schedulers; errors
 */
#include "stack_test.h"

static coexec_pool_t g_cf_pool;

static void cf_child(void *arg)
{
    olog_add(&g_log, 2);
    if (arg) {
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        olog_add(&g_log, 5);
    }
}

static void cf_parent(void *arg)
{
    olog_add(&g_log, 1);
    coexec_thread_t c;
    CH_CHECK_RC(coexec_thread_create_child_first(g_cf_pool, cf_child, arg, NULL, &c),
                COEXEC_OK);
    olog_add(&g_log, 3);
    CH_CHECK_RC(coexec_thread_free(&c), COEXEC_OK);
}

/*
 * The parent goes back to its pool the way a new unit is pushed
 * (thread.h): in a LIFO pool it is taken next, in a FIFO pool it waits
 * behind the units already queued.
 */
static void run_cf_order(int child_yields, coexec_pool_kind_t kind)
{
    ch_init(1);
    coexec_pool_t pool;
    CH_ASSERT_OK_FATAL(coexec_pool_create(kind, COEXEC_ACCESS_MPMC, &pool));
    g_cf_pool = pool;
    coexec_sched_config_t sc = no_steal_cfg();
    coexec_sched_t sched;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pool, 1, &sc, &sched));
    olog_reset(&g_log);
    /* The parent is taken first; the other unit is queued behind it. */
    void *parg = child_yields ? (void *)1 : NULL;
    if (kind == COEXEC_POOL_FIFO)
        CH_ASSERT_OK(coexec_thread_create(pool, cf_parent, parg, NULL, NULL));
    CH_ASSERT_OK(coexec_thread_create(pool, log_ult, (void *)4, NULL, NULL));
    if (kind == COEXEC_POOL_LIFO)
        CH_ASSERT_OK(coexec_thread_create(pool, cf_parent, parg, NULL, NULL));
    coexec_xstream_t xs;
    stream_with(sched, &xs);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    /* The child runs before the parent goes on; in a LIFO pool the parent
     * goes on before the unit queued behind it, in a FIFO pool after it; a
     * yielding child comes back last. */
    int want_lifo[] = {1, 2, 3, 4, 5};
    int want_fifo[] = {1, 2, 4, 3, 5};
    olog_expect(&g_log, kind == COEXEC_POOL_LIFO ? want_lifo : want_fifo,
                child_yields ? 5 : 4, "child-first order");
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_OK(coexec_pool_free(&pool));
    ch_finalize();
}

static void t_cf_order(void)
{
    run_cf_order(0, COEXEC_POOL_LIFO);
    run_cf_order(0, COEXEC_POOL_FIFO);
}

static void t_cf_order_yield(void)
{
    run_cf_order(1, COEXEC_POOL_LIFO);
    run_cf_order(1, COEXEC_POOL_FIFO);
}

static void cf_count_child(void *arg)
{
    (void)arg;
    atomic_fetch_add(&g_hit_total, 1);
}

static coexec_poll_status_t cf_from_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    CH_CHECK_RC(coexec_thread_create_child_first(*(coexec_pool_t *)arg, cnt_ult,
                                                 NULL, NULL, NULL),
                COEXEC_ECONTEXT);
    return COEXEC_READY;
}

static void cf_errors_ult(void *arg)
{
    coexec_pool_t pool = *(coexec_pool_t *)arg;
    CH_CHECK_RC(coexec_thread_create_child_first(pool, NULL, NULL, NULL, NULL),
                COEXEC_EINVAL);
    CH_CHECK_RC(coexec_thread_create_child_first((coexec_pool_t){0}, cnt_ult,
                                                 NULL, NULL, NULL),
                COEXEC_EHANDLE);
}

static void t_cf_errors(void)
{
    ch_init(1);
    coexec_pool_t p0 = ch_main_pool(0);
    /* The primary's main ULT, bound to the primary, leaves for a child
     * all the same: the child (which does not yield) has finished when the
     * main ULT goes on. */
    coexec_thread_t t = {0};
    atomic_store(&g_hit_total, 0);
    CH_ASSERT_RC(coexec_thread_create_child_first(p0, cf_count_child, NULL,
                                                  NULL, &t),
                 COEXEC_OK);
    CU_ASSERT_EQUAL(atomic_load(&g_hit_total), 1);
    CH_ASSERT_OK(coexec_thread_free(&t));
    ch_pthread_t th;
    (void)th;
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(p0, cf_from_tasklet, &p0, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK(ch_run_ult_in(s.pool, cf_errors_ult, &s.pool));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* Detached child-first children counted, from parents on every stream. */
static void cnt_any(void *arg)
{
    (void)arg;
    atomic_fetch_add(&g_hit_total, 1);
}

static void cf_spawner(void *arg)
{
    long m = (long)(intptr_t)arg;
    coexec_xstream_t xs;
    coexec_pool_t pool;
    CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_get_main_pool(xs, &pool), COEXEC_OK);
    for (long i = 0; i < m; i++)
        CH_CHECK_RC(coexec_thread_create_child_first(pool, cnt_any, NULL, NULL, NULL),
                    COEXEC_OK);
    atomic_fetch_add(&g_rank_runs[15], 1);
}

static void run_cf_count(coexec_sched_kind_t kind)
{
    ch_init_ex(NSTEAL, kind, 1);
    /* fork-join with child-first forks */
    check_fib(ch_main_pool(1), 1);
    /* detached children */
    atomic_store(&g_hit_total, 0);
    atomic_store(&g_rank_runs[15], 0);
    long m = ch_iters(2000, 50);
    int parents = 2 * NSTEAL;
    for (int i = 0; i < parents; i++)
        CH_ASSERT_OK(coexec_thread_create(ch_main_pool(i % NSTEAL), cf_spawner,
                                          (void *)(intptr_t)m, NULL, NULL));
    CH_WAIT(atomic_load(&g_rank_runs[15]) == parents &&
            atomic_load(&g_hit_total) == parents * m);
    CH_ASSERT_EQ(atomic_load(&g_hit_total), parents * m);
    ch_finalize();
}

static void t_cf_count(void) { run_cf_count(COEXEC_SCHED_BASIC_WAIT); }
static void t_cf_count_randws(void) { run_cf_count(COEXEC_SCHED_RANDWS); }

/* ======================================================================= */

const ch_test_t schedx_child_first_tests[] = {
    {"child_before_parent", t_cf_order},
    {"yielding_child", t_cf_order_yield},
    {"errors", t_cf_errors},
    {"exact_count_4es", t_cf_count},
    {"exact_count_4es_randws", t_cf_count_randws},
    {NULL, NULL}};
