/*
 * tests/sched/test_yield_to.c: the yield_to suite: the target runs next;
 * errors
 */
#include "stack_test.h"

static coexec_thread_t g_yt_target;

static void yt_first(void *arg)
{
    (void)arg;
    olog_add(&g_log, 1);
    CH_CHECK_RC(coexec_yield_to(self_thread()), COEXEC_EDEADLK);
    CH_CHECK_RC(coexec_yield_to(g_yt_target), COEXEC_OK);
    olog_add(&g_log, 5);
}

static void t_yield_to_order(void)
{
    ch_init(1);
    ch_stream_t s;
    coexec_sched_config_t sc = no_steal_cfg();
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &s.pool));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &s.pool, 1, &sc, &s.sched));
    olog_reset(&g_log);
    /* A runs first and yields to D, queued behind B and C: D runs next,
     * then B, C, then A (queued behind them). */
    coexec_thread_t a, b, c;
    CH_ASSERT_OK(coexec_thread_create(s.pool, yt_first, NULL, NULL, &a));
    CH_ASSERT_OK(coexec_thread_create(s.pool, log_ult, (void *)3, NULL, &b));
    CH_ASSERT_OK(coexec_thread_create(s.pool, log_ult, (void *)4, NULL, &c));
    CH_ASSERT_OK(coexec_thread_create(s.pool, log_ult, (void *)2, NULL, &g_yt_target));
    coexec_xstream_attr_t xa;
    CH_ASSERT_OK(coexec_xstream_attr_init(&xa));
    xa.sched = s.sched;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&xa, &s.xs));
    CH_ASSERT_OK(coexec_xstream_join(s.xs));
    int want[] = {1, 2, 3, 4, 5};
    olog_expect(&g_log, want, 5, "yield_to order");
    /* Finished (not freed): ESTATE. */
    CH_ASSERT_RC(coexec_yield_to(g_yt_target), COEXEC_ESTATE);
    coexec_thread_t *all[] = {&a, &b, &c, &g_yt_target};
    for (int i = 0; i < 4; i++)
        CH_ASSERT_OK(coexec_thread_free(all[i]));
    CH_ASSERT_OK(coexec_xstream_free(&s.xs));
    CH_ASSERT_OK(coexec_sched_free(&s.sched));
    CH_ASSERT_OK(coexec_pool_free(&s.pool));

    /* From the primary's main ULT to a ULT of its own pool. */
    olog_reset(&g_log);
    coexec_thread_t x;
    CH_ASSERT_OK(coexec_thread_create(ch_main_pool(0), log_ult, (void *)9, NULL, &x));
    CH_ASSERT_OK(coexec_yield_to(x));
    CH_ASSERT_EQ(atomic_load(&g_log.n), 1); /* it ran before we came back */
    CH_ASSERT_OK(coexec_thread_free(&x));
    ch_finalize();
}

static atomic_int g_spin_started, g_spin_stop;

static void spin_ult(void *arg)
{
    (void)arg;
    atomic_store(&g_spin_started, 1);
    while (!atomic_load(&g_spin_stop))
        ;
}

static void park_ult(void *arg)
{
    (void)arg;
    atomic_store(&g_spin_started, 2);
    CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
}

static coexec_poll_status_t yt_from_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    CH_CHECK_RC(coexec_yield_to(*(coexec_thread_t *)arg), COEXEC_ECONTEXT);
    return COEXEC_READY;
}

static void *yt_from_pthread(void *arg)
{
    CH_CHECK_RC(coexec_yield_to(*(coexec_thread_t *)arg), COEXEC_ECONTEXT);
    return NULL;
}

/* A yields to a ULT of a user pool that has no remove: ESTATE. */
static coexec_thread_t g_yt_held;

static void yt_held(void *arg)
{
    (void)arg;
    CH_CHECK_RC(coexec_yield_to(g_yt_held), COEXEC_ESTATE);
    olog_add(&g_log, 1);
}

static void t_yield_to_errors(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    /* Running on another stream: ESTATE. */
    atomic_store(&g_spin_started, 0);
    atomic_store(&g_spin_stop, 0);
    coexec_thread_t spin, park;
    CH_ASSERT_OK(coexec_thread_create(s.pool, spin_ult, NULL, NULL, &spin));
    CH_WAIT(atomic_load(&g_spin_started) == 1);
    CH_ASSERT_RC(coexec_yield_to(spin), COEXEC_ESTATE);
    atomic_store(&g_spin_stop, 1);
    CH_ASSERT_OK(coexec_thread_free(&spin));
    /* Parked: ESTATE. */
    CH_ASSERT_OK(coexec_thread_create(s.pool, park_ult, NULL, NULL, &park));
    CH_WAIT(atomic_load(&g_spin_started) == 2);
    CH_WAIT(state_of(park) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_yield_to(park), COEXEC_ESTATE);
    /* From a tasklet and from an external thread: ECONTEXT. */
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(s.pool, yt_from_tasklet, &park, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    ch_pthread_t th;
    ch_pthread_start(&th, yt_from_pthread, &park);
    ch_pthread_join(&th);
    CH_ASSERT_OK(coexec_thread_resume(park));
    CH_ASSERT_OK(coexec_thread_free(&park));
    /* A tasklet's handle is no ULT; the null handle is none either. */
    coexec_tasklet_t q;
    coexec_pool_t idle;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &idle));
    CH_ASSERT_OK(coexec_tasklet_create(idle, noop_tasklet, NULL, &q));
    coexec_thread_t as_thread = {q.p, q.gen};
    CH_ASSERT_RC(coexec_yield_to(as_thread), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_yield_to((coexec_thread_t){0}), COEXEC_EHANDLE);
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_pool_pop(idle, &u));
    CH_ASSERT_OK(coexec_pool_push(s.pool, u));
    CH_ASSERT_OK(coexec_tasklet_free(&q));
    CH_ASSERT_OK(coexec_pool_free(&idle));
    CH_ASSERT_OK(ch_stream_free(&s));

    /* A pool that cannot give a unit up (a user pool without remove). */
    olog_reset(&g_log);
    coexec_pool_t pools[2];
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pools[0]));
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&wrap_ops, COEXEC_ACCESS_MPMC, NULL, &pools[1]));
    coexec_sched_config_t sc = no_steal_cfg();
    coexec_sched_t sched;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, pools, 2, &sc, &sched));
    coexec_thread_t a;
    CH_ASSERT_OK(coexec_thread_create(pools[0], yt_held, NULL, NULL, &a));
    CH_ASSERT_OK(coexec_thread_create(pools[1], log_ult, (void *)2, NULL, &g_yt_held));
    coexec_xstream_t xs;
    stream_with(sched, &xs);
    CH_ASSERT_OK(coexec_xstream_join(xs));
    int want[] = {1, 2};
    olog_expect(&g_log, want, 2, "yield_to refused by a pool without remove");
    CH_ASSERT_OK(coexec_thread_free(&a));
    CH_ASSERT_OK(coexec_thread_free(&g_yt_held));
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_OK(coexec_pool_free(&pools[0]));
    CH_ASSERT_OK(coexec_pool_free(&pools[1]));
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t schedx_yield_to_tests[] = {
    {"runs_target_next", t_yield_to_order},
    {"errors", t_yield_to_errors},
    {NULL, NULL}};
