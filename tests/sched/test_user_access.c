/*
 * tests/sched/test_user_access.c: the access suite: access checks of user
 * pools (their access modes, stacking and child-first creation)
 */
#include "stack_test.h"

static int skip_without_checks(void)
{
    if (CH_HAVE_CHECKS)
        return 0;
    printf("(library built without COEXEC_CHECKS: access checks not tested) ");
    CU_PASS("skipped");
    return 1;
}

/* Runs one call on the agent (the same pthread every time). */
static void ext_call_fn(void *arg) { ext_call_main(arg); }

static ext_call_t g_agent_call;

static int agent_do(ch_agent_t *a, enum ext_op op, coexec_pool_t pool,
                    coexec_unit_t unit)
{
    g_agent_call = (ext_call_t){.op = op, .pool = pool, .unit = unit, .rc = 1};
    ch_agent_run(a, ext_call_fn, &g_agent_call);
    return g_agent_call.rc;
}

/* Runs the popped unit u (tasklet k) on stream s and frees k. */
static void run_popped(ch_stream_t *s, coexec_unit_t u, coexec_tasklet_t *k)
{
    CU_ASSERT(CH_SAME(u, coexec_tasklet_unit(*k)));
    CH_ASSERT_OK(coexec_pool_push(s->pool, u));
    CH_ASSERT_OK(coexec_tasklet_free(k));
}

static void t_access_user_pool(void)
{
    if (skip_without_checks())
        return;
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    coexec_pool_t p;
    coexec_tasklet_t k;
    coexec_unit_t u, none = {0};
    ch_agent_t ag;
    ch_agent_start(&ag);

    /* PRIV: the main thread, first to push, owns it. */
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&edf_ops, COEXEC_ACCESS_PRIV, NULL, &p));
    edf_t *e = pool_data(p);
    CH_ASSERT_OK(coexec_tasklet_create(p, noop_tasklet, NULL, &k));
    CH_ASSERT_RC(agent_do(&ag, EXT_TASKLET, p, none), COEXEC_EACCESS);
    CH_ASSERT_RC(agent_do(&ag, EXT_POP, p, none), COEXEC_EACCESS);
    CH_ASSERT_EQ(pool_size(p), 1);
    CH_ASSERT_EQ(atomic_load(&e->pushes[COEXEC_PUSH_NEW]), 1);
    CH_ASSERT_EQ(atomic_load(&e->pops), 0);
    /* It still works for its owner. */
    CH_ASSERT_OK(coexec_pool_pop(p, &u));
    CH_ASSERT_RC(agent_do(&ag, EXT_PUSH, p, u), COEXEC_EACCESS);
    CH_ASSERT_OK(coexec_pool_push(p, u));
    CH_ASSERT_OK(coexec_pool_pop(p, &u));
    CH_ASSERT_EQ(pool_size(p), 0);
    run_popped(&s, u, &k);
    CH_ASSERT_OK(coexec_pool_free(&p));

    /* SPSC: the main thread produces, the agent consumes. */
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&edf_ops, COEXEC_ACCESS_SPSC, NULL, &p));
    e = pool_data(p);
    CH_ASSERT_OK(coexec_tasklet_create(p, noop_tasklet, NULL, &k));
    CH_ASSERT_RC(agent_do(&ag, EXT_TASKLET, p, none), COEXEC_EACCESS);
    CH_ASSERT_OK(agent_do(&ag, EXT_POP, p, none));
    u = g_agent_call.got;
    CU_ASSERT(CH_SAME(u, coexec_tasklet_unit(k)));
    CH_ASSERT_RC(agent_do(&ag, EXT_PUSH, p, u), COEXEC_EACCESS);
    CH_ASSERT_OK(coexec_pool_push(p, u));
    CH_ASSERT_RC(coexec_pool_pop(p, &u), COEXEC_EACCESS);
    CH_ASSERT_EQ(pool_size(p), 1);
    CH_ASSERT_EQ(atomic_load(&e->pushes[COEXEC_PUSH_NEW]), 2);
    CH_ASSERT_EQ(atomic_load(&e->pops), 1);
    CH_ASSERT_OK(agent_do(&ag, EXT_POP, p, none));
    run_popped(&s, g_agent_call.got, &k);
    CH_ASSERT_OK(coexec_pool_free(&p));

    /* MPSC: anyone pushes; the first popper (the main thread) consumes. */
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&edf_ops, COEXEC_ACCESS_MPSC, NULL, &p));
    CH_ASSERT_OK(coexec_tasklet_create(p, noop_tasklet, NULL, &k));
    CH_ASSERT_OK(coexec_pool_pop(p, &u));
    CH_ASSERT_OK(agent_do(&ag, EXT_PUSH, p, u));
    CH_ASSERT_RC(agent_do(&ag, EXT_POP, p, none), COEXEC_EACCESS);
    CH_ASSERT_EQ(pool_size(p), 1);
    CH_ASSERT_OK(coexec_pool_pop(p, &u));
    run_popped(&s, u, &k);
    CH_ASSERT_OK(coexec_pool_free(&p));

    ch_agent_stop(&ag);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* From a ULT on another stream: pushes into a PRIV pool the main thread
 * owns are refused (child-first creation, migration). */
typedef struct priv_try {
    coexec_pool_t priv;
} priv_try_t;

static void priv_try_ult(void *arg)
{
    priv_try_t *pt = arg;
    CH_CHECK_RC(coexec_thread_create_child_first(pt->priv, cnt_ult, NULL, NULL, NULL),
                COEXEC_EACCESS);
    CH_CHECK_RC(coexec_thread_migrate_to(self_thread(), pt->priv), COEXEC_EACCESS);
    CH_CHECK_EQ(pool_size(pt->priv), 1);
}

static void t_access_stacking(void)
{
    if (skip_without_checks())
        return;
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    coexec_pool_t priv, pz;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_PRIV, &priv));
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(priv, noop_tasklet, NULL, &k));
    /* add_sched from another thread */
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pz));
    coexec_sched_t z;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &pz, 1, NULL, &z));
    ext_call_t c = {.op = EXT_ADD_SCHED, .pool = priv, .sched = z};
    CH_ASSERT_RC(ext_call(&c), COEXEC_EACCESS);
    CH_ASSERT_EQ(pool_size(priv), 1);
    /* z was not taken: it can be freed */
    CH_ASSERT_OK(coexec_sched_free(&z));
    priv_try_t pt = {priv};
    CH_ASSERT_OK(ch_run_ult_in(s.pool, priv_try_ult, &pt));
    /* The pool still works for its owner. */
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_pool_pop(priv, &u));
    run_popped(&s, u, &k);
    CH_ASSERT_OK(coexec_pool_free(&priv));
    CH_ASSERT_OK(coexec_pool_free(&pz));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t schedx_access_tests[] = {
    {"user_pool_modes", t_access_user_pool},
    {"stacking_and_child_first", t_access_stacking},
    {NULL, NULL}};
