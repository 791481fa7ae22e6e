/*
 * tests/abt/test_abt_to.c: libcoexec-abt's direct hand-off family:
 * ABT_self_{yield,suspend,exit}_to, ABT_self_resume_{yield,suspend,exit}_to,
 * ABT_thread_yield_to, ABT_thread_create_to and ABT_thread_revive_to: the
 * order units run in, a unit popped out of its pool and handed the CPU,
 * hand-offs on more streams than cores, and the errors.
 */
#include <stdlib.h>
#include <string.h>

#include "abt_test.h"

static olog_t g_log; /* what the units of a test did, in order */

/* ---- order on one stream -------------------------------------------------- */

typedef struct order {
    ABT_pool pool;
    int how; /* 0 yield_to, 1 suspend_to + resume_yield_to, 2 exit_to,
                3 suspend_to + resume_exit_to */
    ABT_thread first;
} order_t;

static void logger(void *arg)
{
    olog_add(&g_log, (int)(intptr_t)arg);
}

static void held_ult(void *arg)
{
    order_t *o = arg;
    olog_add(&g_log, 3);
    if (o->how == 1)
        AT_CHECK_OK(ABT_self_resume_yield_to(o->first));
    if (o->how == 3) {
        AT_CHECK_OK(ABT_self_resume_exit_to(o->first));
        CH_CHECK(0); /* not reached */
    }
    olog_add(&g_log, 5);
}

static void first_ult(void *arg)
{
    order_t *o = arg;
    olog_add(&g_log, 1);
    size_t n = 0;
    while (n < 2) /* the other two are still being pushed: no yield */
        AT_CHECK_OK(ABT_pool_get_size(o->pool, &n));
    ABT_unit a, b;
    AT_CHECK_OK(ABT_pool_pop(o->pool, &a));
    AT_CHECK_OK(ABT_pool_pop(o->pool, &b));
    AT_CHECK_OK(ABT_pool_push(o->pool, a));
    olog_add(&g_log, 2);
    ABT_thread h = ABT_THREAD_NULL;
    AT_CHECK_OK(ABT_unit_get_thread(b, &h));
    switch (o->how) {
    case 0:
        AT_CHECK_OK(ABT_self_yield_to(h));
        break;
    case 1:
    case 3:
        AT_CHECK_OK(ABT_self_suspend_to(h));
        break;
    default:
        AT_CHECK_OK(ABT_self_exit_to(h));
        CH_CHECK(0); /* not reached */
    }
    olog_add(&g_log, 4);
}

static void run_order(int how)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool pool, stage;
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_FALSE,
                                &pool));
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_FALSE,
                                &stage));
    ABT_xstream xs;
    AT_OK(ABT_xstream_create_basic(ABT_SCHED_BASIC, 1, &pool,
                                   ABT_SCHED_CONFIG_NULL, &xs));
    order_t o = {.pool = pool, .how = how};
    olog_reset(&g_log);
    ABT_thread t[3];
    AT_OK(ABT_thread_create(stage, first_ult, &o, ABT_THREAD_ATTR_NULL, &t[0]));
    AT_OK(ABT_thread_create(stage, logger, (void *)6, ABT_THREAD_ATTR_NULL,
                            &t[1]));
    AT_OK(ABT_thread_create(stage, held_ult, &o, ABT_THREAD_ATTR_NULL, &t[2]));
    o.first = t[0];
    for (int i = 0; i < 3; i++) {
        ABT_thread got;
        AT_OK(ABT_pool_pop_thread(stage, &got));
        CU_ASSERT_PTR_EQUAL(got, t[i]);
        AT_OK(ABT_pool_push_thread(pool, got));
    }
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_thread_free(&t[i]));
    int want[4][6] = {{1, 2, 3, 5, 6, 4},
                      {1, 2, 3, 4, 6, 5},
                      {1, 2, 3, 5, 6},
                      {1, 2, 3, 4, 6}};
    olog_expect(&g_log, want[how], how >= 2 ? 5 : 6, "order of the _to calls");
    AT_OK(ABT_xstream_free(&xs));
    AT_OK(ABT_pool_free(&pool));
    AT_OK(ABT_pool_free(&stage));
    AT_OK(ABT_finalize());
}

static void test_order_yield_to(void) { run_order(0); }
static void test_order_suspend_resume(void) { run_order(1); }
static void test_order_exit_to(void) { run_order(2); }
static void test_order_resume_exit_to(void) { run_order(3); }

/* ---- held units on several streams ---------------------------------------- */

#define NXS 4

typedef struct mesh {
    ABT_pool pools[NXS];
    ABT_xstream xs[NXS];
    _Atomic(ABT_thread) next[NXS + 1]; /* by rank: the unit that must run
                                          next there, or NULL */
    int iters;
    atomic_int bad, handoffs, finished;
} mesh_t;

static mesh_t g_m;

static int self_rank(void)
{
    int r = -1;
    AT_CHECK_OK(ABT_self_get_xstream_rank(&r));
    return r;
}

/* The unit handed the CPU runs next on the caller's stream: on arrival, a
 * unit checks that its stream expects nobody, or itself. */
static void arrive(ABT_thread self)
{
    int r = self_rank();
    if (r < 0 || r > NXS)
        return;
    ABT_thread n = atomic_exchange(&g_m.next[r], ABT_THREAD_NULL);
    if (n != ABT_THREAD_NULL && n != self)
        atomic_fetch_add(&g_m.bad, 1);
}

static void mesh_ult(void *arg)
{
    long idx = (long)(intptr_t)arg;
    ABT_thread self;
    AT_CHECK_OK(ABT_self_get_thread(&self));
    arrive(self);
    for (int k = 0; k < g_m.iters; k++) {
        ABT_unit unit;
        AT_CHECK_OK(ABT_pool_pop(g_m.pools[(idx + k) % NXS], &unit));
        if (unit == ABT_UNIT_NULL) {
            AT_CHECK_OK(ABT_self_yield());
            arrive(self);
            continue;
        }
        ABT_thread target;
        AT_CHECK_OK(ABT_unit_get_thread(unit, &target));
        atomic_fetch_add(&g_m.handoffs, 1);
        atomic_store(&g_m.next[self_rank()], target);
        if ((idx + k) % 4 == 3 && k == g_m.iters - 1) {
            atomic_fetch_add(&g_m.finished, 1);
            AT_CHECK_OK(ABT_self_exit_to(target));
        }
        AT_CHECK_OK((idx + k) % 2 ? ABT_self_yield_to(target)
                                  : ABT_thread_yield_to(target));
        arrive(self);
    }
    atomic_fetch_add(&g_m.finished, 1);
}

/* Every stream serves every pool; ULTs pop each other and hand them the
 * CPU (yield_to, exit_to): the target always runs next on the caller's
 * stream, and every ULT finishes once. 4 streams on 2 cores. */
static void test_held_mesh(void)
{
    AT_OK(ABT_init(0, NULL));
    memset(&g_m, 0, sizeof g_m);
    g_m.iters = (int)ch_iters(20, 4);
    long units = ch_iters(200, 16);
    for (int i = 0; i < NXS; i++)
        AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC,
                                    ABT_TRUE, &g_m.pools[i]));
    for (int i = 0; i < NXS; i++) {
        ABT_pool mine[NXS];
        for (int j = 0; j < NXS; j++)
            mine[j] = g_m.pools[(i + j) % NXS];
        AT_OK(ABT_xstream_create_basic(ABT_SCHED_BASIC, NXS, mine,
                                       ABT_SCHED_CONFIG_NULL, &g_m.xs[i]));
    }
    ABT_thread *t = calloc((size_t)units, sizeof *t);
    CU_ASSERT_FATAL(t != NULL);
    for (long i = 0; i < units; i++)
        AT_OK(ABT_thread_create(g_m.pools[i % NXS], mesh_ult,
                                (void *)(intptr_t)i, ABT_THREAD_ATTR_NULL,
                                i % 2 ? &t[i] : NULL));
    for (long i = 0; i < units; i++)
        if (t[i] != ABT_THREAD_NULL)
            AT_OK(ABT_thread_free(&t[i]));
    for (int i = 0; i < NXS; i++)
        AT_OK(ABT_xstream_free(&g_m.xs[i]));
    CU_ASSERT_EQUAL(atomic_load(&g_m.finished), units);
    CU_ASSERT_EQUAL(atomic_load(&g_m.bad), 0);
    CU_ASSERT(atomic_load(&g_m.handoffs) > 0);
    free(t);
    AT_OK(ABT_finalize());
}

/* ---- create_to and revive_to -------------------------------------------- */

static atomic_int g_ran;

static void count_ult(void *arg)
{
    (void)arg;
    atomic_fetch_add(&g_ran, 1);
}

static void create_to_body(void *arg)
{
    ABT_pool pool = *(ABT_pool *)arg;
    for (int i = 0; i < 5; i++) {
        int before = atomic_load(&g_ran);
        ABT_thread t;
        AT_CHECK_OK(ABT_thread_create_to(pool, count_ult, NULL,
                                         ABT_THREAD_ATTR_NULL, &t));
        CH_CHECK_EQ(atomic_load(&g_ran), before + 1);
        AT_CHECK_OK(ABT_thread_revive_to(pool, count_ult, NULL, &t));
        CH_CHECK_EQ(atomic_load(&g_ran), before + 2);
        size_t n = 1;
        AT_CHECK_OK(ABT_pool_get_size(pool, &n));
        CH_CHECK_EQ(n, 0);
        AT_CHECK_OK(ABT_thread_free(&t));
        /* Unnamed children too. */
        AT_CHECK_OK(ABT_thread_create_to(pool, count_ult, NULL,
                                         ABT_THREAD_ATTR_NULL, NULL));
        CH_CHECK_EQ(atomic_load(&g_ran), before + 3);
    }
}

/* The child runs before create_to/revive_to return, from the primary's
 * main ULT and from a ULT of another stream. */
static void test_create_revive_to(void)
{
    AT_OK(ABT_init(0, NULL));
    atomic_store(&g_ran, 0);
    ABT_pool main_pool;
    AT_OK(ABT_self_get_last_pool(&main_pool));
    create_to_body(&main_pool);
    CU_ASSERT_EQUAL(atomic_load(&g_ran), 15);
    ABT_xstream xs;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &xs));
    ABT_pool p;
    AT_OK(ABT_xstream_get_main_pools(xs, 1, &p));
    ABT_thread t;
    AT_OK(ABT_thread_create(p, create_to_body, &p, ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(atomic_load(&g_ran), 30);
    AT_OK(ABT_xstream_free(&xs));
    AT_OK(ABT_finalize());
}

/* ---- errors ----------------------------------------------------------------- */

static ABT_thread g_done;

static void to_from_outside(void *arg)
{
    (void)arg;
    CH_CHECK_EQ(ABT_self_yield_to(g_done), ABT_ERR_INV_XSTREAM);
    CH_CHECK_EQ(ABT_self_suspend_to(g_done), ABT_ERR_INV_XSTREAM);
    CH_CHECK_EQ(ABT_self_exit_to(g_done), ABT_ERR_INV_XSTREAM);
    CH_CHECK_EQ(ABT_self_resume_yield_to(g_done), ABT_ERR_INV_XSTREAM);
    CH_CHECK_EQ(ABT_thread_create_to(ABT_POOL_NULL, count_ult, NULL,
                                     ABT_THREAD_ATTR_NULL, NULL),
                ABT_ERR_INV_XSTREAM);
    /* Argobots 1.x: a no-op from outside. */
    CH_CHECK_EQ(ABT_thread_yield_to(g_done), ABT_SUCCESS);
}

static void to_from_task(void *arg)
{
    (void)arg;
    CH_CHECK_EQ(ABT_self_yield_to(g_done), ABT_ERR_INV_THREAD);
    CH_CHECK_EQ(ABT_self_exit_to(g_done), ABT_ERR_INV_THREAD);
    CH_CHECK_EQ(ABT_thread_yield_to(g_done), ABT_SUCCESS);
}

static void test_errors(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool main_pool;
    AT_OK(ABT_self_get_last_pool(&main_pool));
    ABT_thread self;
    AT_OK(ABT_self_get_thread(&self));
    AT_OK(ABT_thread_create(main_pool, count_ult, NULL, ABT_THREAD_ATTR_NULL,
                            &g_done));
    AT_OK(ABT_thread_join(g_done));
    CU_ASSERT_EQUAL(ABT_self_yield_to(ABT_THREAD_NULL), ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_self_yield_to(self), ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_thread_yield_to(self), ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_self_suspend_to(self), ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_self_resume_yield_to(ABT_THREAD_NULL),
                    ABT_ERR_INV_THREAD);
    /* The primary's main ULT may not exit. */
    CU_ASSERT_EQUAL(ABT_self_exit_to(g_done), ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_self_resume_exit_to(g_done), ABT_ERR_INV_THREAD);
    /* A finished target cannot be handed the CPU: a plain yield. */
    AT_OK(ABT_self_yield_to(g_done));
    /* revive_to of a unit that has not finished. */
    ABT_thread live;
    AT_OK(ABT_thread_create(main_pool, count_ult, NULL, ABT_THREAD_ATTR_NULL,
                            &live));
    CU_ASSERT_NOT_EQUAL(ABT_thread_revive_to(main_pool, count_ult, NULL, &live),
                        ABT_SUCCESS);
    AT_OK(ABT_thread_free(&live));
    ABT_task task;
    AT_OK(ABT_task_create(main_pool, to_from_task, NULL, &task));
    AT_OK(ABT_task_free(&task));
    ch_run_external(to_from_outside, NULL);
    AT_OK(ABT_thread_free(&g_done));
    AT_OK(ABT_finalize());
}

static const ch_test_t order_tests[] = {
    {"yield_to_held", test_order_yield_to},
    {"suspend_to_resume_yield_to", test_order_suspend_resume},
    {"exit_to_held", test_order_exit_to},
    {"suspend_to_resume_exit_to", test_order_resume_exit_to},
    {NULL, NULL}};
static const ch_test_t held_tests[] = {{"mesh", test_held_mesh},
                                       {NULL, NULL}};
static const ch_test_t create_tests[] = {
    {"create_to_revive_to", test_create_revive_to}, {NULL, NULL}};
static const ch_test_t errors_tests[] = {{"codes", test_errors},
                                         {NULL, NULL}};

static const ch_suite_t suites[] = {{"order", order_tests},
                                    {"held", held_tests},
                                    {"create", create_tests},
                                    {"errors", errors_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
