/*
 * tests/abt/test_abt.c: the suites of test_abt, libcoexec-abt (the Argobots
 * 1.x API over libcoexec). Synchronization suites are in test_abt_sync.c.
 *
 *   init      reference-counted init/finalize, ABT_initialized, env stack size,
 *             the primary stream started from another thread
 *   xstream   create/join/free, ranks (chosen and automatic), self, revive,
 *             state, main pools, errors on the primary
 *   thread    create/join/free on streams, yield order, revive, cancel, unnamed
 *             ULTs, attributes, migration, stale handles, guard pages
 *             under ABT_STACK_OVERFLOW_CHECK
 *   task      tasklets: run, join, revive, state, self inside one; joins
 *             and frees of tasklets that end on other streams (from the
 *             main ULT, an external thread, a tasklet), frees after the
 *             scheduler ran them, queries while they end
 *   self      self queries from the main ULT, a ULT, a tasklet, a pthread
 *   pool      built-in pools: push/pop/remove of units, listings (print_all,
 *             stacks in a pool), sizes, ids, data, errors
 *   sched     predefined schedulers on new streams, configs, set_main_sched
 *   user_pool an ABT_pool_def pool and a user-defined scheduler that runs it;
 *             an ABT_pool_user_def pool: which callback each call reaches;
 *             ABT_pool_remove and ABT_pool_print_all with and without the
 *             program's p_remove and p_print_all
 *   timer     timers and ABT_get_wtime move forward
 *   errors    error strings, info queries, outputs after an error
 * The v1x suite (test_abt_v1x.c) checks Argobots 1.x's rules call by call.
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/mman.h>
#include <unistd.h>

#include "abt_test.h"

/* ---- init ------------------------------------------------------------------ */

static void test_init_refcount(void)
{
    CU_ASSERT_EQUAL(ABT_initialized(), ABT_ERR_UNINITIALIZED);
    AT_OK(ABT_init(0, NULL));
    AT_OK(ABT_init(0, NULL));
    CU_ASSERT_EQUAL(ABT_initialized(), ABT_SUCCESS);
    AT_OK(ABT_finalize());
    CU_ASSERT_EQUAL(ABT_initialized(), ABT_SUCCESS);
    AT_OK(ABT_finalize());
    CU_ASSERT_EQUAL(ABT_initialized(), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_finalize(), ABT_ERR_UNINITIALIZED);
    ABT_xstream xs;
    CU_ASSERT_EQUAL(ABT_xstream_self(&xs), ABT_ERR_UNINITIALIZED);
    /* Again, after a full stop. */
    AT_OK(ABT_init(0, NULL));
    AT_OK(ABT_finalize());
}

static void test_init_stacksize_env(void)
{
    setenv("ABT_THREAD_STACKSIZE", "262144", 1);
    AT_OK(ABT_init(0, NULL));
    size_t ss = 0;
    AT_OK(ABT_info_query_config(ABT_INFO_QUERY_KIND_DEFAULT_THREAD_STACKSIZE,
                                &ss));
    CU_ASSERT_EQUAL(ss, 262144);
    ABT_thread_attr attr;
    AT_OK(ABT_thread_attr_create(&attr));
    AT_OK(ABT_thread_attr_get_stacksize(attr, &ss));
    CU_ASSERT_EQUAL(ss, 262144);
    AT_OK(ABT_thread_attr_free(&attr));
    AT_OK(ABT_finalize());
    unsetenv("ABT_THREAD_STACKSIZE");
}

/* A pthread that runs the second runtime as its primary. */
struct primary_run {
    pthread_barrier_t bar;
    int rc_init, rank, rc_fin;
};

static void *primary_elsewhere(void *arg)
{
    struct primary_run *pr = arg;
    pr->rc_init = ABT_init(0, NULL);
    if (pr->rc_init == ABT_SUCCESS)
        pr->rank = ABT_xstream_self_rank(&pr->rank) == ABT_SUCCESS ? pr->rank
                                                                     : -2;
    pthread_barrier_wait(&pr->bar); /* initialised: the caller asks */
    pthread_barrier_wait(&pr->bar); /* it has asked */
    pr->rc_fin = pr->rc_init == ABT_SUCCESS ? ABT_finalize() : ABT_SUCCESS;
    return NULL;
}

/* The thread that was the primary stream under one ABT_init is an external
 * thread under the next one when another thread starts it: what it was
 * (the rank it had, remembered for speed) is not answered any more. */
static void test_init_primary_moves(void)
{
    AT_OK(ABT_init(0, NULL));
    int r = -1;
    AT_OK(ABT_xstream_self_rank(&r));
    CU_ASSERT_EQUAL(r, 0);
    AT_OK(ABT_finalize());

    struct primary_run pr = {.rc_init = -1, .rank = -1, .rc_fin = -1};
    CU_ASSERT_EQUAL_FATAL(pthread_barrier_init(&pr.bar, NULL, 2), 0);
    pthread_t pt;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&pt, NULL, primary_elsewhere, &pr), 0);
    pthread_barrier_wait(&pr.bar);
    r = -1;
    int rc = ABT_xstream_self_rank(&r);
    ABT_xstream xs = ABT_XSTREAM_NULL;
    int rc2 = ABT_xstream_self(&xs);
    ABT_bool primary = ABT_TRUE;
    int rc3 = ABT_self_on_primary_xstream(&primary);
    pthread_barrier_wait(&pr.bar);
    pthread_join(pt, NULL);
    pthread_barrier_destroy(&pr.bar);
    CU_ASSERT_EQUAL(pr.rc_init, ABT_SUCCESS);
    CU_ASSERT_EQUAL(pr.rank, 0);
    CU_ASSERT_EQUAL(pr.rc_fin, ABT_SUCCESS);
    CU_ASSERT_EQUAL(rc, ABT_ERR_INV_XSTREAM);
    CU_ASSERT_EQUAL(r, -1);
    CU_ASSERT_EQUAL(rc2, ABT_ERR_INV_XSTREAM);
    CU_ASSERT_NOT_EQUAL(rc3, ABT_SUCCESS);

    /* And it is the primary again under a third one it starts. */
    AT_OK(ABT_init(0, NULL));
    r = -1;
    AT_OK(ABT_xstream_self_rank(&r));
    CU_ASSERT_EQUAL(r, 0);
    AT_OK(ABT_finalize());
}

/* ABT_init and ABT_finalize are thread-safe (Argobots documents it): while
 * main holds the runtime, external threads init and finalize it at once,
 * many times; each nested pair leaves the count as it found it. The
 * count was a plain int: lost updates left it wrong (the runtime stopped
 * under main, or outlived main's finalize). */
enum { INIT_THREADS = 6 };
static atomic_int init_bad;

static void *init_churn(void *arg)
{
    long n = (long)(intptr_t)arg;
    for (long i = 0; i < n; i++) {
        if (ABT_init(0, NULL) != ABT_SUCCESS ||
            ABT_initialized() != ABT_SUCCESS ||
            ABT_finalize() != ABT_SUCCESS)
            atomic_fetch_add(&init_bad, 1);
    }
    return NULL;
}

static void test_init_concurrent(void)
{
    AT_OK(ABT_init(0, NULL));
    atomic_store(&init_bad, 0);
    long n = ch_iters(20000, 500);
    pthread_t pt[INIT_THREADS];
    for (int i = 0; i < INIT_THREADS; i++)
        CU_ASSERT_EQUAL_FATAL(
            pthread_create(&pt[i], NULL, init_churn, (void *)(intptr_t)n), 0);
    for (int i = 0; i < INIT_THREADS; i++)
        pthread_join(pt[i], NULL);
    CU_ASSERT_EQUAL(atomic_load(&init_bad), 0);
    CU_ASSERT_EQUAL(ABT_initialized(), ABT_SUCCESS);
    AT_OK(ABT_finalize());
    CU_ASSERT_EQUAL(ABT_initialized(), ABT_ERR_UNINITIALIZED);
}

static const ch_test_t init_tests[] = {
    {"refcount", test_init_refcount},
    {"concurrent", test_init_concurrent},
    {"stacksize_env", test_init_stacksize_env},
    {"primary_moves", test_init_primary_moves},
    {NULL, NULL}};

/* ---- xstream ------------------------------------------------------------------ */

/* Publishes the rank of the stream it runs on in *arg (an atomic_int). */
static void rank_probe(void *arg)
{
    int r = -1;
    AT_CHECK_OK(ABT_xstream_self_rank(&r));
    atomic_store((atomic_int *)arg, r);
}

/* Waits until the probe has run where it was queued (a join would run a
 * ULT that has not started in place, on the joiner's stream). */
static void wait_seen(atomic_int *seen)
{
    while (atomic_load(seen) < 0)
        AT_OK(ABT_thread_yield());
}

static void test_xstream_ranks(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream self, a, b;
    AT_OK(ABT_xstream_self(&self));
    int rank = -1;
    AT_OK(ABT_xstream_get_rank(self, &rank));
    CU_ASSERT_EQUAL(rank, 0);
    ABT_bool primary = ABT_FALSE;
    AT_OK(ABT_xstream_is_primary(self, &primary));
    CU_ASSERT_EQUAL(primary, ABT_TRUE);
    AT_OK(ABT_xstream_create_with_rank(ABT_SCHED_NULL, 5, &a));
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &b));
    AT_OK(ABT_xstream_get_rank(b, &rank));
    CU_ASSERT_EQUAL(rank, 1); /* the lowest free rank */
    ABT_xstream c;
    CU_ASSERT_EQUAL(ABT_xstream_create_with_rank(ABT_SCHED_NULL, 5, &c),
                    ABT_ERR_INV_XSTREAM_RANK);
    int num = 0;
    AT_OK(ABT_xstream_get_num(&num));
    CU_ASSERT_EQUAL(num, 3);
    /* A ULT on a sees rank 5. */
    atomic_int seen = -1;
    ABT_thread t;
    AT_OK(ABT_thread_create_on_xstream(a, rank_probe, &seen,
                                       ABT_THREAD_ATTR_NULL, &t));
    wait_seen(&seen);
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(atomic_load(&seen), 5);
    CU_ASSERT_PTR_NULL(t);
    AT_OK(ABT_xstream_set_rank(b, 7));
    AT_OK(ABT_xstream_get_rank(b, &rank));
    CU_ASSERT_EQUAL(rank, 7);
    /* A rank in use, and the primary's (which keeps 0), are refused. */
    CU_ASSERT_EQUAL(ABT_xstream_set_rank(b, 5), ABT_ERR_INV_XSTREAM_RANK);
    CU_ASSERT_EQUAL(ABT_xstream_set_rank(self, 9), ABT_ERR_INV_XSTREAM);
    AT_OK(ABT_xstream_get_rank(self, &rank));
    CU_ASSERT_EQUAL(rank, 0);
    /* The primary can be neither joined nor freed. */
    CU_ASSERT_EQUAL(ABT_xstream_join(self), ABT_ERR_INV_XSTREAM);
    CU_ASSERT_EQUAL(ABT_xstream_free(&self), ABT_ERR_INV_XSTREAM);
    AT_OK(ABT_xstream_join(a));
    ABT_xstream_state st;
    AT_OK(ABT_xstream_get_state(a, &st));
    CU_ASSERT_EQUAL(st, ABT_XSTREAM_STATE_TERMINATED);
    /* Revived, it runs units again, with the same rank. */
    AT_OK(ABT_xstream_revive(a));
    AT_OK(ABT_xstream_get_state(a, &st));
    CU_ASSERT_EQUAL(st, ABT_XSTREAM_STATE_RUNNING);
    atomic_store(&seen, -1);
    AT_OK(ABT_thread_create_on_xstream(a, rank_probe, &seen,
                                       ABT_THREAD_ATTR_NULL, &t));
    wait_seen(&seen);
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(atomic_load(&seen), 5);
    AT_OK(ABT_xstream_free(&a));
    AT_OK(ABT_xstream_free(&b));
    CU_ASSERT_PTR_NULL(a);
    /* A freed handle is refused. */
    ABT_xstream stale = b;
    CU_ASSERT_EQUAL(ABT_xstream_join(stale), ABT_ERR_INV_XSTREAM);
    AT_OK(ABT_xstream_get_num(&num));
    CU_ASSERT_EQUAL(num, 1);
    AT_OK(ABT_finalize());
}

static void test_xstream_main_pools(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool pools[2];
    for (int i = 0; i < 2; i++)
        AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC,
                                    ABT_TRUE, &pools[i]));
    ABT_xstream xs;
    AT_OK(ABT_xstream_create_basic(ABT_SCHED_BASIC, 2, pools,
                                   ABT_SCHED_CONFIG_NULL, &xs));
    ABT_pool got[2] = {NULL, NULL};
    AT_OK(ABT_xstream_get_main_pools(xs, 2, got));
    CU_ASSERT_PTR_EQUAL(got[0], pools[0]);
    CU_ASSERT_PTR_EQUAL(got[1], pools[1]);
    ABT_sched sched;
    AT_OK(ABT_xstream_get_main_sched(xs, &sched));
    int n = 0;
    AT_OK(ABT_sched_get_num_pools(sched, &n));
    CU_ASSERT_EQUAL(n, 2);
    AT_OK(ABT_xstream_free(&xs));
    AT_OK(ABT_finalize());
}

/* (Below, with the helpers it shares with the thread suite.) */
static void test_xstream_cancel_exit(void);

static const ch_test_t xstream_tests[] = {
    {"ranks", test_xstream_ranks},
    {"main_pools", test_xstream_main_pools},
    {"cancel_exit", test_xstream_cancel_exit},
    {NULL, NULL}};

/* ---- thread ------------------------------------------------------------------ */

#define ORDER_N 4
static int order_log[ORDER_N * 3];
static atomic_int order_len;

static void order_ult(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < 3; i++) {
        int at = atomic_load_explicit(&order_len, memory_order_relaxed);
        order_log[at] = id;
        atomic_store(&order_len, at + 1); /* one stream: no other writer */
        AT_CHECK_OK(ABT_thread_yield());
    }
}

static void test_thread_yield_order(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool pool;
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_TRUE,
                                &pool));
    ABT_xstream xs;
    AT_OK(ABT_xstream_create_basic(ABT_SCHED_BASIC, 1, &pool,
                                   ABT_SCHED_CONFIG_NULL, &xs));
    /* Created from the main ULT, which does not yield to them: the stream
     * runs them in FIFO order, and each yield goes behind the others. */
    ABT_thread t[ORDER_N];
    atomic_store(&order_len, 0);
    for (int i = 0; i < ORDER_N; i++)
        AT_OK(ABT_thread_create(pool, order_ult, (void *)(intptr_t)i,
                                ABT_THREAD_ATTR_NULL, &t[i]));
    /* Waits for the stream to run them all (a join could run one that has
     * not started on this stream instead). */
    while (atomic_load(&order_len) < ORDER_N * 3)
        AT_OK(ABT_thread_yield());
    AT_OK(ABT_thread_join_many(ORDER_N, t));
    CU_ASSERT_EQUAL(atomic_load(&order_len), ORDER_N * 3);
    int in_order = 1;
    for (int i = 0; i < ORDER_N * 3; i++)
        in_order &= order_log[i] == i % ORDER_N;
    CU_ASSERT(in_order);
    AT_OK(ABT_thread_free_many(ORDER_N, t));
    AT_OK(ABT_xstream_free(&xs));
    AT_OK(ABT_finalize());
}

static atomic_int counter;

static void add_one(void *arg)
{
    atomic_fetch_add(&counter, 1 + (int)(intptr_t)arg);
}

static void test_thread_many_streams(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream xs[3];
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &xs[i]));
    enum { N = 300 };
    ABT_thread *t = calloc(N, sizeof(*t));
    atomic_store(&counter, 0);
    for (int i = 0; i < N; i++)
        AT_OK(ABT_thread_create_on_xstream(xs[i % 3], add_one,
                                           (void *)(intptr_t)(i & 1),
                                           ABT_THREAD_ATTR_NULL, &t[i]));
    /* Unnamed ULTs free themselves. */
    for (int i = 0; i < N; i++)
        AT_OK(ABT_thread_create_on_xstream(xs[i % 3], add_one, NULL,
                                           ABT_THREAD_ATTR_NULL, NULL));
    for (int i = 0; i < N; i++) {
        ABT_thread_state st;
        AT_OK(ABT_thread_join(t[i]));
        AT_OK(ABT_thread_get_state(t[i], &st));
        CU_ASSERT_EQUAL(st, ABT_THREAD_STATE_TERMINATED);
        AT_OK(ABT_thread_free(&t[i]));
    }
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_xstream_free(&xs[i]));
    CU_ASSERT_EQUAL(atomic_load(&counter), N + N / 2 + N);
    free(t);
    AT_OK(ABT_finalize());
}

static void test_thread_revive_attr(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool pool = at_main_pool();
    ABT_thread_attr attr;
    AT_OK(ABT_thread_attr_create(&attr));
    AT_OK(ABT_thread_attr_set_stacksize(attr, 65536));
    AT_OK(ABT_thread_attr_set_migratable(attr, ABT_FALSE));
    atomic_store(&counter, 0);
    ABT_thread t;
    AT_OK(ABT_thread_create(pool, add_one, NULL, attr, &t));
    AT_OK(ABT_thread_attr_free(&attr));
    size_t ss = 0;
    AT_OK(ABT_thread_get_stacksize(t, &ss));
    CU_ASSERT_EQUAL(ss, 65536);
    ABT_bool mig = ABT_TRUE;
    AT_OK(ABT_thread_is_migratable(t, &mig));
    CU_ASSERT_EQUAL(mig, ABT_FALSE);
    void *arg = (void *)1;
    AT_OK(ABT_thread_get_arg(t, &arg));
    CU_ASSERT_PTR_NULL(arg);
    AT_OK(ABT_thread_join(t));
    /* Revive: the same handle runs again, with a new argument. */
    AT_OK(ABT_thread_revive(pool, add_one, (void *)(intptr_t)9, &t));
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(atomic_load(&counter), 1 + 10);
    AT_OK(ABT_finalize());
}

/* Records are recycled: whatever a unit's record was given (a stack size
 * or a stack of the program's, key values, an id, a cancel, a migratable
 * flag) must not reach the next unit that gets the record, and a revive
 * keeps the stack size its ULT was given. */
static void test_thread_record_reuse(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool pool = at_main_pool();
    size_t dflt = 0;
    AT_OK(ABT_info_query_config(ABT_INFO_QUERY_KIND_DEFAULT_THREAD_STACKSIZE,
                                &dflt));
    ABT_key key;
    AT_OK(ABT_key_create(NULL, &key));
    enum { ROUNDS = 64, BATCH = 8 };
    static char stacks[BATCH][65536] __attribute__((aligned(64)));
    for (int r = 0; r < ROUNDS; r++) {
        ABT_thread t[BATCH];
        ABT_thread_attr attr;
        AT_OK(ABT_thread_attr_create(&attr));
        AT_OK(ABT_thread_attr_set_migratable(attr, ABT_FALSE));
        for (int i = 0; i < BATCH; i++) {
            if (i % 2) {
                AT_OK(ABT_thread_attr_set_stack(attr, stacks[i],
                                                sizeof stacks[i]));
            } else {
                AT_OK(ABT_thread_attr_set_stacksize(attr, 65536 + 4096 * i));
            }
            AT_OK(ABT_thread_create(pool, add_one, NULL, attr, &t[i]));
            /* Some are given nothing more: their attributes alone. */
            if (i % 4 == 2)
                AT_OK(ABT_thread_set_specific(t[i], key, (void *)(intptr_t)7));
            if (i % 4 == 3) {
                ABT_unit_id id;
                AT_OK(ABT_thread_get_id(t[i], &id));
            }
            AT_OK(ABT_thread_cancel(t[i]));
        }
        AT_OK(ABT_thread_attr_free(&attr));
        for (int i = 0; i < BATCH; i++)
            AT_OK(ABT_thread_free(&t[i]));
        atomic_store(&counter, 0);
        ABT_task k[BATCH];
        for (int i = 0; i < BATCH; i++) {
            AT_OK(ABT_thread_create(pool, add_one, NULL, ABT_THREAD_ATTR_NULL,
                                    &t[i]));
            AT_OK(ABT_task_create(pool, add_one, NULL, &k[i]));
        }
        for (int i = 0; i < BATCH; i++) {
            size_t ss = 0;
            AT_OK(ABT_thread_get_stacksize(t[i], &ss));
            CU_ASSERT_EQUAL(ss, dflt);
            void *v = (void *)1;
            AT_OK(ABT_thread_get_specific(t[i], key, &v));
            CU_ASSERT_PTR_NULL(v);
            AT_OK(ABT_task_get_specific(k[i], key, &v));
            CU_ASSERT_PTR_NULL(v);
            ABT_bool mig = ABT_FALSE;
            AT_OK(ABT_thread_is_migratable(t[i], &mig));
            CU_ASSERT_EQUAL(mig, ABT_TRUE);
            AT_OK(ABT_thread_free(&t[i]));
            AT_OK(ABT_task_free(&k[i]));
        }
        CU_ASSERT_EQUAL(atomic_load(&counter), 2 * BATCH); /* none cancelled */
    }
    /* A revive keeps the stack size given. */
    ABT_thread_attr attr;
    AT_OK(ABT_thread_attr_create(&attr));
    AT_OK(ABT_thread_attr_set_stacksize(attr, 3 * 65536));
    ABT_thread t;
    AT_OK(ABT_thread_create(pool, add_one, NULL, attr, &t));
    AT_OK(ABT_thread_attr_free(&attr));
    AT_OK(ABT_thread_join(t));
    AT_OK(ABT_thread_revive(pool, add_one, NULL, &t));
    size_t ss = 0;
    AT_OK(ABT_thread_get_stacksize(t, &ss));
    CU_ASSERT_EQUAL(ss, 3 * 65536);
    AT_OK(ABT_thread_free(&t));
    AT_OK(ABT_key_free(&key));
    AT_OK(ABT_finalize());
}

static void test_thread_errors(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_thread self, t = ABT_THREAD_NULL;
    AT_OK(ABT_thread_self(&self));
    ABT_bool primary = ABT_FALSE;
    AT_OK(ABT_thread_is_primary(self, &primary));
    CU_ASSERT_EQUAL(primary, ABT_TRUE);
    /* The main ULT cannot be joined or freed; nor can a null handle. */
    CU_ASSERT_EQUAL(ABT_thread_join(self), ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_thread_free(&self), ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_thread_join(t), ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_thread_create(ABT_POOL_NULL, add_one, NULL,
                                      ABT_THREAD_ATTR_NULL, &t),
                    ABT_ERR_INV_POOL);
    AT_OK(ABT_finalize());
}

/* The ranks a ULT runs on before and after the migration that the main
 * ULT asks for (asked: the request is made). */
struct migrate_seen {
    int rank[2];
    atomic_int asked;
};

static void migrate_probe(void *arg)
{
    struct migrate_seen *m = arg;
    AT_CHECK_OK(ABT_xstream_self_rank(&m->rank[0]));
    /* Until the request is made (it may start on b already), then once
     * more: a yield after the request moves it. */
    while (!atomic_load(&m->asked))
        AT_CHECK_OK(ABT_thread_yield());
    AT_CHECK_OK(ABT_thread_yield());
    AT_CHECK_OK(ABT_xstream_self_rank(&m->rank[1]));
}

static void test_thread_migrate(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream a, b;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &a));
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &b));
    struct migrate_seen m = {{-1, -1}, 0};
    ABT_thread t;
    ABT_pool pb;
    AT_OK(ABT_xstream_get_main_pools(b, 1, &pb));
    AT_OK(ABT_thread_create_on_xstream(a, migrate_probe, &m,
                                       ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_thread_migrate_to_pool(t, pb));
    atomic_store(&m.asked, 1);
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT(m.rank[0] == 1 || m.rank[0] == 2);
    CU_ASSERT_EQUAL(m.rank[1], 2); /* it ends on b */
    AT_OK(ABT_xstream_free(&a));
    AT_OK(ABT_xstream_free(&b));
    AT_OK(ABT_finalize());
}

/* A finished unit after its join: the queries still answer (state, id,
 * last stream, stack size), joins again return at once, and many
 * joiners on several streams at once all return once it has finished. */
enum { JM_STREAMS = 3, JM_JOINERS = 6 };
static ABT_thread jm_target;
static atomic_int jm_go, jm_joined;

static void jm_slow(void *arg)
{
    (void)arg;
    while (!atomic_load(&jm_go))
        AT_CHECK_OK(ABT_thread_yield());
    for (int i = 0; i < 20; i++)
        AT_CHECK_OK(ABT_thread_yield());
}

static void jm_joiner(void *arg)
{
    (void)arg;
    AT_CHECK_OK(ABT_thread_join(jm_target));
    ABT_thread_state st;
    AT_CHECK_OK(ABT_thread_get_state(jm_target, &st));
    CH_CHECK_EQ(st, ABT_THREAD_STATE_TERMINATED);
    atomic_fetch_add(&jm_joined, 1);
}

static void empty_task(void *arg)
{
    (void)arg;
}

/* What a joined ULT or tasklet (one handle type) still answers. */
static void check_joined(ABT_thread t, ABT_xstream ran_on)
{
    ABT_thread_state st;
    AT_OK(ABT_thread_get_state(t, &st));
    CU_ASSERT_EQUAL(st, ABT_THREAD_STATE_TERMINATED);
    ABT_xstream last = ABT_XSTREAM_NULL;
    AT_OK(ABT_thread_get_last_xstream(t, &last));
    CU_ASSERT(last == ran_on);
    ABT_thread_id id = 0;
    AT_OK(ABT_thread_get_id(t, &id));
    CU_ASSERT(id != 0);
}

static void test_thread_after_join(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream xs[JM_STREAMS];
    ABT_pool pools[JM_STREAMS];
    for (int i = 0; i < JM_STREAMS; i++) {
        AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &xs[i]));
        AT_OK(ABT_xstream_get_main_pools(xs[i], 1, &pools[i]));
    }
    for (int round = 0; round < (int)ch_iters(20, 3); round++) {
        atomic_store(&jm_go, 0);
        atomic_store(&jm_joined, 0);
        AT_OK(ABT_thread_create(pools[0], jm_slow, NULL, ABT_THREAD_ATTR_NULL,
                                &jm_target));
        ABT_thread j[JM_JOINERS];
        for (int i = 0; i < JM_JOINERS; i++)
            AT_OK(ABT_thread_create(pools[i % JM_STREAMS], jm_joiner, NULL,
                                    ABT_THREAD_ATTR_NULL, &j[i]));
        atomic_store(&jm_go, 1);
        AT_OK(ABT_thread_join(jm_target)); /* the main ULT joins too */
        AT_OK(ABT_thread_free_many(JM_JOINERS, j));
        CU_ASSERT_EQUAL(atomic_load(&jm_joined), JM_JOINERS);
        check_joined(jm_target, xs[0]);
        size_t ss = 0;
        AT_OK(ABT_thread_get_stacksize(jm_target, &ss));
        CU_ASSERT(ss > 0);
        AT_OK(ABT_thread_join(jm_target)); /* again: at once */
        /* A revive refused: still the finished unit, joined at once. */
        CU_ASSERT_EQUAL(ABT_thread_revive(ABT_POOL_NULL, jm_slow, NULL,
                                          &jm_target),
                        ABT_ERR_INV_POOL);
        AT_OK(ABT_thread_join(jm_target));
        AT_OK(ABT_thread_free(&jm_target));
    }
    /* A tasklet: joined, it keeps its id and the stream it ran on. */
    ABT_task k;
    AT_OK(ABT_task_create(pools[1], empty_task, NULL, &k));
    AT_OK(ABT_task_join(k));
    check_joined(k, xs[1]);
    ABT_xstream kx = ABT_XSTREAM_NULL;
    AT_OK(ABT_task_get_xstream(k, &kx));
    CU_ASSERT(kx == xs[1]);
    AT_OK(ABT_task_free(&k));
    for (int i = 0; i < JM_STREAMS; i++)
        AT_OK(ABT_xstream_free(&xs[i]));
    AT_OK(ABT_finalize());
}

/* ABT_STACK_OVERFLOW_CHECK=mprotect_strict: the guard of a ULT's stack is
 * within the range ABT_thread_get_stack reports (its first whole page), a
 * write there goes to the program's SIGSEGV handler, which may open the
 * page and let the ULT go on; a user-given stack gets such a page too,
 * readable, and writable again once the ULT is freed. */
static volatile uintptr_t sg_page;
static volatile sig_atomic_t sg_faults;

static void sg_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)si->si_addr;
    if (sig == SIGSEGV && a >= sg_page && a < sg_page + (uintptr_t)pg &&
        mprotect((void *)sg_page, (size_t)pg, PROT_READ | PROT_WRITE) == 0) {
        sg_faults++;
        return;
    }
    _exit(70); /* a fault elsewhere: the test cannot go on */
}

/* arg: 1 for a user stack (its guard page is readable). */
static void sg_probe(void *arg)
{
    ABT_thread me;
    void *lo = NULL;
    size_t n = 0;
    AT_CHECK_OK(ABT_self_get_thread(&me));
    AT_CHECK_OK(ABT_thread_get_stack(me, &lo, &n));
    long pg = sysconf(_SC_PAGESIZE);
    CH_CHECK(lo != NULL && n >= 2 * (size_t)pg);
    sg_page = ((uintptr_t)lo + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
    volatile char *g = (volatile char *)sg_page;
    if (arg) {
        char v = g[0]; /* readable: no fault */
        CH_CHECK_EQ(sg_faults, 0);
        g[0] = v; /* faults once; the handler opens the page */
    } else {
        g[0] = 1; /* PROT_NONE: faults once */
    }
    CH_CHECK_EQ(sg_faults, 1);
    /* Closed again as it was (the runtime's stays closed for reuse). */
    CH_CHECK(mprotect((void *)sg_page, (size_t)pg,
                      arg ? PROT_READ : PROT_NONE) == 0);
}

static void test_thread_stack_guard_env(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sg_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    CU_ASSERT_EQUAL_FATAL(sigaction(SIGSEGV, &sa, &old), 0);
    setenv("ABT_STACK_OVERFLOW_CHECK", "mprotect_strict", 1);
    AT_OK(ABT_init(0, NULL));
    int kind = -1;
    AT_OK(ABT_info_query_config(ABT_INFO_QUERY_KIND_ENABLED_STACK_OVERFLOW_CHECK,
                                &kind));
    CU_ASSERT_EQUAL(kind, 3);
    ABT_pool pool = at_main_pool();
    /* A stack of the runtime's, then one of another size. */
    ABT_thread t;
    sg_faults = 0;
    AT_OK(ABT_thread_create(pool, sg_probe, NULL, ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(sg_faults, 1);
    long pg = sysconf(_SC_PAGESIZE);
    size_t sz = 2 * (size_t)pg + 64 * 1024;
    ABT_thread_attr attr;
    AT_OK(ABT_thread_attr_create(&attr));
    AT_OK(ABT_thread_attr_set_stacksize(attr, sz));
    sg_faults = 0;
    AT_OK(ABT_thread_create(pool, sg_probe, NULL, attr, &t));
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(sg_faults, 1);
    /* A stack of the program's. valgrind does not hand a write fault on a
     * page it knows as readable to the program's handler (it reports an
     * invalid write at 0): left out there. */
    if (ch_on_valgrind()) {
        printf("(the program's stack left out under valgrind) ");
    } else {
        char *stack = calloc(1, sz);
        CU_ASSERT_PTR_NOT_NULL_FATAL(stack);
        AT_OK(ABT_thread_attr_set_stack(attr, stack, sz));
        sg_faults = 0;
        AT_OK(ABT_thread_create(pool, sg_probe, (void *)1, attr, &t));
        AT_OK(ABT_thread_free(&t));
        CU_ASSERT_EQUAL(sg_faults, 1);
        memset(stack, 0, sz); /* all writable again: no fault */
        CU_ASSERT_EQUAL(sg_faults, 1);
        free(stack);
    }
    AT_OK(ABT_thread_attr_free(&attr));
    AT_OK(ABT_finalize());
    unsetenv("ABT_STACK_OVERFLOW_CHECK");
    sigaction(SIGSEGV, &old, NULL);
}

/* ABT_thread_cancel / ABT_task_cancel: a unit whose function has not
 * started never runs it; a running ULT ends at its next yield (the code
 * after it never runs); its join completes; a revive clears the cancel. */
static atomic_int cancel_loops, cancel_after;

static void cancel_spin(void *arg)
{
    (void)arg;
    for (;;) {
        atomic_fetch_add(&cancel_loops, 1);
        AT_CHECK_OK(ABT_thread_yield());
        if (atomic_load(&cancel_loops) > 1000000)
            break; /* never: the cancel ends it first */
    }
    atomic_store(&cancel_after, 1);
}

static void test_thread_cancel(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool pool = at_main_pool();
    ABT_thread t;
    ABT_task k;
    atomic_store(&counter, 0);
    AT_OK(ABT_thread_create(pool, add_one, NULL, ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_task_create(pool, add_one, NULL, &k));
    AT_OK(ABT_thread_cancel(t));
    AT_OK(ABT_task_cancel(k));
    AT_OK(ABT_thread_join(t));
    AT_OK(ABT_task_join(k));
    CU_ASSERT_EQUAL(atomic_load(&counter), 0);
    ABT_thread_state st;
    AT_OK(ABT_thread_get_state(t, &st));
    CU_ASSERT_EQUAL(st, ABT_THREAD_STATE_TERMINATED);
    /* Revived, they run. */
    AT_OK(ABT_thread_revive(pool, add_one, NULL, &t));
    AT_OK(ABT_task_revive(pool, add_one, NULL, &k));
    AT_OK(ABT_thread_free(&t));
    AT_OK(ABT_task_free(&k));
    CU_ASSERT_EQUAL(atomic_load(&counter), 2);
    /* A running ULT, on another stream and on this one. */
    ABT_xstream es1;
    ABT_pool p1;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &es1));
    AT_OK(ABT_xstream_get_main_pools(es1, 1, &p1));
    ABT_pool where[2] = {p1, pool};
    for (int w = 0; w < 2; w++) {
        atomic_store(&cancel_loops, 0);
        atomic_store(&cancel_after, 0);
        AT_OK(ABT_thread_create(where[w], cancel_spin, NULL,
                                ABT_THREAD_ATTR_NULL, &t));
        while (atomic_load(&cancel_loops) < 3)
            AT_OK(ABT_thread_yield());
        AT_OK(ABT_thread_cancel(t));
        AT_OK(ABT_thread_free(&t));
        CU_ASSERT_EQUAL(atomic_load(&cancel_after), 0);
        CU_ASSERT(atomic_load(&cancel_loops) < 1000000);
    }
    AT_OK(ABT_xstream_free(&es1));
    /* Errors: no unit, the main ULT; a finished unit: no effect. */
    CU_ASSERT_EQUAL(ABT_thread_cancel(ABT_THREAD_NULL), ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_task_cancel(ABT_TASK_NULL), ABT_ERR_INV_TASK);
    ABT_thread self;
    AT_OK(ABT_thread_self(&self));
    CU_ASSERT_EQUAL(ABT_thread_cancel(self), ABT_ERR_INV_THREAD);
    AT_OK(ABT_thread_create(pool, add_one, NULL, ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_thread_join(t));
    AT_OK(ABT_thread_cancel(t));
    AT_OK(ABT_thread_free(&t));
    ABT_bool on = ABT_FALSE;
    AT_OK(ABT_info_query_config(ABT_INFO_QUERY_KIND_ENABLED_THREAD_CANCEL,
                                &on));
    CU_ASSERT_EQUAL(on, ABT_TRUE);
    AT_OK(ABT_finalize());
}

/* ABT_thread_set_callback and ABT_thread_attr_set_callback: a migration
 * of the ULT calls its callback with the ULT and the argument given;
 * ABT_thread_get_attr gives it back. */
static atomic_int mig_calls;
static ABT_thread mig_seen;
static void *mig_arg_seen;

static void mig_cb(ABT_thread t, void *arg)
{
    mig_seen = t;
    mig_arg_seen = arg;
    atomic_fetch_add(&mig_calls, 1);
}

static void test_thread_migrate_callback(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream es1;
    ABT_pool p0 = at_main_pool(), p1, other;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &es1));
    AT_OK(ABT_xstream_get_main_pools(es1, 1, &p1));
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_FALSE,
                                &other));
    int tag1, tag2;
    atomic_store(&mig_calls, 0);
    atomic_store(&counter, 0);
    /* Set on the unit. */
    ABT_thread t;
    AT_OK(ABT_thread_create(other, add_one, NULL, ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_thread_set_callback(t, mig_cb, &tag1));
    AT_OK(ABT_thread_migrate_to_pool(t, p1));
    CU_ASSERT_EQUAL(atomic_load(&mig_calls), 1);
    CU_ASSERT_PTR_EQUAL(mig_seen, t);
    CU_ASSERT_PTR_EQUAL(mig_arg_seen, &tag1);
    AT_OK(ABT_thread_free(&t));
    /* Given by the attribute; read back. */
    ABT_thread_attr attr, got;
    AT_OK(ABT_thread_attr_create(&attr));
    AT_OK(ABT_thread_attr_set_callback(attr, mig_cb, &tag2));
    AT_OK(ABT_thread_create(other, add_one, NULL, attr, &t));
    AT_OK(ABT_thread_get_attr(t, &got));
    mem_t m;
    mem_open(&m);
    AT_OK(ABT_info_print_thread_attr(m.f, got));
    char *buf = mem_close(&m);
    char want[64];
    snprintf(want, sizeof want, "cb_arg:%p", (void *)&tag2);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, want));
    free(buf);
    AT_OK(ABT_thread_attr_free(&got));
    AT_OK(ABT_thread_migrate_to_xstream(t, es1));
    CU_ASSERT_EQUAL(atomic_load(&mig_calls), 2);
    CU_ASSERT_PTR_EQUAL(mig_arg_seen, &tag2);
    AT_OK(ABT_thread_free(&t));
    /* Removed: no call. */
    AT_OK(ABT_thread_create(other, add_one, NULL, attr, &t));
    AT_OK(ABT_thread_set_callback(t, NULL, NULL));
    AT_OK(ABT_thread_migrate_to_pool(t, p0));
    CU_ASSERT_EQUAL(atomic_load(&mig_calls), 2);
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(atomic_load(&counter), 3);
    CU_ASSERT_EQUAL(ABT_thread_set_callback(ABT_THREAD_NULL, mig_cb, NULL),
                    ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_thread_attr_set_callback(ABT_THREAD_ATTR_NULL, mig_cb,
                                                 NULL),
                    ABT_ERR_INV_THREAD_ATTR);
    AT_OK(ABT_thread_attr_free(&attr));
    AT_OK(ABT_pool_free(&other));
    AT_OK(ABT_xstream_free(&es1));
    AT_OK(ABT_finalize());
}

/* ABT_xstream_cancel: the stream stops once it ran what is queued, its
 * join reaps it. ABT_xstream_exit: a ULT ends and so does its stream. */
static atomic_int exit_returned;

static void exit_stream_ult(void *arg)
{
    (void)arg;
    atomic_fetch_add(&counter, 1);
    AT_CHECK_OK(ABT_xstream_exit());
    atomic_store(&exit_returned, 1); /* never: the ULT ended */
}

static void *exit_from_pthread(void *arg)
{
    *(int *)arg = ABT_xstream_exit();
    return NULL;
}

static void test_xstream_cancel_exit(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream es1, es2, self;
    ABT_pool p1, p2;
    atomic_store(&counter, 0);
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &es1));
    AT_OK(ABT_xstream_get_main_pools(es1, 1, &p1));
    for (int i = 0; i < 5; i++)
        AT_OK(ABT_thread_create(p1, add_one, NULL, ABT_THREAD_ATTR_NULL,
                                NULL));
    AT_OK(ABT_xstream_cancel(es1));
    AT_OK(ABT_xstream_cancel(es1));
    AT_OK(ABT_xstream_free(&es1));
    CU_ASSERT_EQUAL(atomic_load(&counter), 5);
    /* A ULT ends its stream. */
    atomic_store(&exit_returned, 0);
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &es2));
    AT_OK(ABT_xstream_get_main_pools(es2, 1, &p2));
    ABT_thread t;
    AT_OK(ABT_thread_create(p2, exit_stream_ult, NULL, ABT_THREAD_ATTR_NULL,
                            &t));
    AT_OK(ABT_thread_free(&t));
    ABT_xstream_state st = ABT_XSTREAM_STATE_RUNNING;
    for (int spins = 0; spins < 200000; spins++) {
        AT_OK(ABT_xstream_get_state(es2, &st));
        if (st == ABT_XSTREAM_STATE_TERMINATED)
            break;
        usleep(50);
    }
    CU_ASSERT_EQUAL(st, ABT_XSTREAM_STATE_TERMINATED);
    CU_ASSERT_EQUAL(atomic_load(&exit_returned), 0);
    CU_ASSERT_EQUAL(atomic_load(&counter), 6);
    AT_OK(ABT_xstream_free(&es2));
    /* Errors: the primary, no stream, the main ULT, an external thread. */
    AT_OK(ABT_xstream_self(&self));
    CU_ASSERT_EQUAL(ABT_xstream_cancel(self), ABT_ERR_INV_XSTREAM);
    CU_ASSERT_EQUAL(ABT_xstream_cancel(ABT_XSTREAM_NULL), ABT_ERR_INV_XSTREAM);
    CU_ASSERT_EQUAL(ABT_xstream_exit(), ABT_ERR_INV_THREAD);
    int ext_rc = ABT_SUCCESS;
    pthread_t th;
    pthread_create(&th, NULL, exit_from_pthread, &ext_rc);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(ext_rc, ABT_ERR_INV_XSTREAM);
    AT_OK(ABT_finalize());
}

/* Races found by review, each with the call that raced:
 * - a migration's callback lookup against the unit setting keys;
 * - ABT_xstream_cancel from a ULT against the join of that stream;
 * - listings of a RANDWS pool while a stream runs (and thieves take)
 *   unnamed units queued into it. */
static ABT_key race_key;
static atomic_int race_stop;

static void key_setter(void *arg)
{
    (void)arg;
    /* Its own table is made here, on its stream, while it is migrated. */
    ABT_thread me;
    AT_CHECK_OK(ABT_thread_self(&me));
    AT_CHECK_OK(ABT_thread_set_callback(me, mig_cb, NULL));
    for (intptr_t i = 1; !atomic_load(&race_stop); i++) {
        AT_CHECK_OK(ABT_key_set(race_key, (void *)i));
        AT_CHECK_OK(ABT_thread_yield());
    }
}

static void cancel_target(void *arg)
{
    ABT_xstream *x = arg;
    int rc = ABT_xstream_cancel(*x);
    CH_CHECK(rc == ABT_SUCCESS || rc == ABT_ERR_INV_XSTREAM);
}

static void count_unit(void *arg, ABT_unit u)
{
    (void)u;
    ++*(long *)arg;
}

static void test_review_races(void)
{
    AT_OK(ABT_init(0, NULL));
    long iters = ch_iters(2000, 200);
    ABT_xstream es1, es2;
    ABT_pool p0 = at_main_pool(), p1;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &es1));
    AT_OK(ABT_xstream_get_main_pools(es1, 1, &p1));
    /* 1. Migrations of a ULT that keeps setting a key. */
    AT_OK(ABT_key_create(NULL, &race_key));
    atomic_store(&mig_calls, 0);
    ABT_thread t;
    for (int r = 0; r < 20; r++) { /* each ULT makes its table anew */
        atomic_store(&race_stop, 0);
        AT_OK(ABT_thread_create(p1, key_setter, NULL, ABT_THREAD_ATTR_NULL,
                                &t));
        for (long i = 0; i < iters / 20 + 2; i++) {
            int rc = ABT_thread_migrate_to_pool(t, i % 2 ? p0 : p1);
            CU_ASSERT(rc == ABT_SUCCESS || rc == ABT_ERR_MIGRATION_TARGET);
            AT_OK(ABT_thread_yield());
        }
        atomic_store(&race_stop, 1);
        AT_OK(ABT_thread_free(&t));
    }
    /* (How many moves found the callback set depends on timing: the
     * callback itself is checked by migrate_callback.) */
    AT_OK(ABT_key_free(&race_key));
    /* 2. A cancel racing the join of the same stream. */
    for (int r = 0; r < 20; r++) {
        AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &es2));
        AT_OK(ABT_thread_create(p1, cancel_target, &es2, ABT_THREAD_ATTR_NULL,
                                &t));
        AT_OK(ABT_xstream_join(es2));
        AT_OK(ABT_thread_free(&t));
        AT_OK(ABT_xstream_free(&es2));
    }
    /* 3. Listings of a RANDWS pool that a stream runs. */
    ABT_pool ws;
    AT_OK(ABT_pool_create_basic(ABT_POOL_RANDWS, ABT_POOL_ACCESS_MPMC,
                                ABT_FALSE, &ws));
    AT_OK(ABT_xstream_create_basic(ABT_SCHED_RANDWS, 1, &ws,
                                   ABT_SCHED_CONFIG_NULL, &es2));
    atomic_store(&counter, 0);
    long listed = 0;
    for (long i = 0; i < iters; i++) {
        AT_OK(ABT_task_create(ws, add_one, NULL, NULL));
        AT_OK(ABT_pool_print_all(ws, &listed, count_unit));
    }
    AT_OK(ABT_xstream_free(&es2));
    CU_ASSERT_EQUAL(atomic_load(&counter), iters);
    CU_ASSERT(listed <= iters * (iters + 1) / 2);
    AT_OK(ABT_pool_free(&ws));
    AT_OK(ABT_xstream_free(&es1));
    AT_OK(ABT_finalize());
}

static const ch_test_t thread_tests[] = {
    {"stack_guard_env", test_thread_stack_guard_env},
    {"yield_order", test_thread_yield_order},
    {"many_streams", test_thread_many_streams},
    {"revive_attr", test_thread_revive_attr},
    {"record_reuse", test_thread_record_reuse},
    {"errors", test_thread_errors},
    {"migrate", test_thread_migrate},
    {"after_join", test_thread_after_join},
    {"cancel", test_thread_cancel},
    {"migrate_callback", test_thread_migrate_callback},
    {"review_races", test_review_races},
    {NULL, NULL}};

/* ---- task ------------------------------------------------------------------ */

static void task_probe(void *arg)
{
    ABT_unit_type type = ABT_UNIT_TYPE_EXT;
    AT_CHECK_OK(ABT_self_get_type(&type));
    CH_CHECK_EQ(type, ABT_UNIT_TYPE_TASK);
    ABT_thread me = ABT_THREAD_NULL;
    /* 1.x: a tasklet is not a ULT for ABT_thread_self. */
    CH_CHECK_EQ(ABT_thread_self(&me), ABT_ERR_INV_THREAD);
    ABT_task task;
    AT_CHECK_OK(ABT_task_self(&task));
    ABT_task_state st;
    AT_CHECK_OK(ABT_task_get_state(task, &st));
    CH_CHECK_EQ(st, ABT_TASK_STATE_RUNNING);
    /* A yield in a tasklet does nothing (1.x). */
    AT_CHECK_OK(ABT_thread_yield());
    atomic_fetch_add(&counter, (int)(intptr_t)arg);
}

static void test_task_run(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream xs;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &xs));
    atomic_store(&counter, 0);
    ABT_task k[8];
    for (int i = 0; i < 8; i++)
        AT_OK(ABT_task_create_on_xstream(xs, task_probe, (void *)(intptr_t)1,
                                         &k[i]));
    for (int i = 0; i < 8; i++) {
        AT_OK(ABT_task_join(k[i]));
        ABT_task_state st;
        AT_OK(ABT_task_get_state(k[i], &st));
        CU_ASSERT_EQUAL(st, ABT_TASK_STATE_TERMINATED);
    }
    ABT_pool pool;
    AT_OK(ABT_xstream_get_main_pools(xs, 1, &pool));
    AT_OK(ABT_task_revive(pool, task_probe, (void *)(intptr_t)100, &k[0]));
    for (int i = 0; i < 8; i++)
        AT_OK(ABT_task_free(&k[i]));
    CU_ASSERT_EQUAL(atomic_load(&counter), 8 + 100);
    AT_OK(ABT_xstream_free(&xs));
    AT_OK(ABT_finalize());
}

/* A unit's record comes back clean from its free: a later unit (on this
 * OS thread, the one most likely to be given the same record) has an id
 * of its own, no key value, no user-pool unit, whatever the earlier one
 * had; the earlier one's destructors ran at its free. */
static atomic_int reuse_dtors;

static void reuse_dtor(void *v)
{
    (void)v;
    atomic_fetch_add(&reuse_dtors, 1);
}

static void test_task_record_reuse(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream self;
    ABT_pool pool;
    AT_OK(ABT_xstream_self(&self));
    AT_OK(ABT_xstream_get_main_pools(self, 1, &pool));
    ABT_key key;
    AT_OK(ABT_key_create(reuse_dtor, &key));
    atomic_store(&reuse_dtors, 0);
    static int value;
    for (int round = 0; round < 64; round++) {
        bool ult = round & 1;
        ABT_thread a, b;
        if (ult) {
            AT_OK(ABT_thread_create(pool, empty_task, NULL,
                                    ABT_THREAD_ATTR_NULL, &a));
        } else {
            AT_OK(ABT_task_create(pool, empty_task, NULL, &a));
        }
        ABT_unit_id ida = 0, idb = 0;
        AT_OK(ABT_thread_get_id(a, &ida));
        if (round & 2) {
            AT_OK(ABT_thread_set_specific(a, key, &value));
        }
        AT_OK(ABT_thread_join(a));
        AT_OK(ABT_thread_free(&a));
        if (ult) {
            AT_OK(ABT_task_create(pool, empty_task, NULL, &b));
        } else {
            AT_OK(ABT_thread_create(pool, empty_task, NULL,
                                    ABT_THREAD_ATTR_NULL, &b));
        }
        void *v = &value;
        AT_OK(ABT_thread_get_specific(b, key, &v));
        CU_ASSERT_PTR_NULL(v);
        AT_OK(ABT_thread_get_id(b, &idb));
        CU_ASSERT_NOT_EQUAL(ida, idb);
        AT_OK(ABT_thread_join(b));
        ABT_unit_id again = 0;
        AT_OK(ABT_thread_get_id(b, &again));
        CU_ASSERT_EQUAL(again, idb);
        AT_OK(ABT_thread_free(&b));
    }
    CU_ASSERT_EQUAL(atomic_load(&reuse_dtors), 32);
    AT_OK(ABT_key_free(&key));
    AT_OK(ABT_finalize());
}

/* Four streams for the tasklets below, besides the primary: es[0] and
 * es[1] serve one shared pool, es[2] and es[3] each their own main pool.
 * pools[0] is the shared one, pools[1] and pools[2] those of es[2] and
 * es[3]. No stream steals, and the primary serves none of them. */
enum { TK_ES = 4, TK_POOLS = 3 };
typedef struct {
    ABT_xstream es[TK_ES];
    ABT_pool pools[TK_POOLS];
} tk_streams_t;

static void tk_streams_start(tk_streams_t *s)
{
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_TRUE,
                                &s->pools[0]));
    for (int i = 0; i < 2; i++)
        AT_OK(ABT_xstream_create_basic(ABT_SCHED_BASIC, 1, &s->pools[0],
                                       ABT_SCHED_CONFIG_NULL, &s->es[i]));
    for (int i = 2; i < TK_ES; i++) {
        AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &s->es[i]));
        AT_OK(ABT_xstream_get_main_pools(s->es[i], 1, &s->pools[i - 1]));
    }
}

static void tk_streams_stop(tk_streams_t *s)
{
    for (int i = 0; i < TK_ES; i++)
        AT_OK(ABT_xstream_free(&s->es[i]));
}

/* Does x serve pools[p]? */
static bool tk_serves(const tk_streams_t *s, int p, ABT_xstream x)
{
    if (x == ABT_XSTREAM_NULL)
        return false;
    return p == 0 ? x == s->es[0] || x == s->es[1] : x == s->es[p + 1];
}

/* What a tasklet saw of itself; runs is counted last, so that whoever
 * sees it (or the tasklet's end) sees the rest. */
typedef struct {
    atomic_int runs;
    ABT_xstream ran_on;
    ABT_unit_id id;
} tk_slot_t;

static void tk_body(void *arg)
{
    tk_slot_t *s = arg;
    ABT_xstream x = ABT_XSTREAM_NULL;
    AT_CHECK_OK(ABT_xstream_self(&x));
    s->ran_on = x;
    AT_CHECK_OK(ABT_task_self_id(&s->id));
    atomic_fetch_add(&s->runs, 1);
}

/* Rounds of tasklets into the pools of s, from the caller (the main ULT
 * or an external thread): each round creates TK_N of them, joins half
 * (by ABT_task_join or ABT_thread_join) and checks what a joined tasklet
 * answers, then frees all, the other half without a join (the free waits
 * for the end). Checked with CH_CHECK, valid on any thread. */
enum { TK_N = 16 };
typedef struct {
    tk_streams_t *s;
    int rounds;
} tk_rounds_t;

static void tk_rounds(tk_rounds_t *r)
{
    for (int round = 0; round < r->rounds; round++) {
        tk_slot_t slot[TK_N];
        ABT_task k[TK_N];
        ABT_unit_id ids[TK_N];
        for (int i = 0; i < TK_N; i++) {
            atomic_init(&slot[i].runs, 0);
            slot[i].ran_on = ABT_XSTREAM_NULL;
            slot[i].id = 0;
            AT_CHECK_OK(ABT_task_create(r->s->pools[i % TK_POOLS], tk_body,
                                        &slot[i], &k[i]));
            ids[i] = 0;
            AT_CHECK_OK(ABT_task_get_id(k[i], &ids[i]));
        }
        for (int i = 0; i < TK_N; i += 2) {
            CH_CHECK_EQ(i % 4 ? ABT_thread_join(k[i]) : ABT_task_join(k[i]),
                        ABT_SUCCESS);
            CH_CHECK_EQ(atomic_load(&slot[i].runs), 1);
            ABT_task_state st = ABT_TASK_STATE_READY;
            AT_CHECK_OK(ABT_task_get_state(k[i], &st));
            CH_CHECK_EQ(st, ABT_TASK_STATE_TERMINATED);
            ABT_xstream last = ABT_XSTREAM_NULL, kx = ABT_XSTREAM_NULL;
            AT_CHECK_OK(ABT_thread_get_last_xstream(k[i], &last));
            CH_CHECK(last == slot[i].ran_on);
            CH_CHECK(tk_serves(r->s, i % TK_POOLS, last));
            AT_CHECK_OK(ABT_task_get_xstream(k[i], &kx));
            CH_CHECK(kx == last);
            ABT_unit_id id = 0;
            AT_CHECK_OK(ABT_thread_get_id(k[i], &id));
            CH_CHECK(id != 0 && id == ids[i] && id == slot[i].id);
            CH_CHECK_EQ(ABT_task_join(k[i]), ABT_SUCCESS); /* again: done */
        }
        for (int i = 0; i < TK_N; i++) {
            CH_CHECK_EQ(i % 3 ? ABT_task_free(&k[i]) : ABT_thread_free(&k[i]),
                        ABT_SUCCESS);
            CH_CHECK(k[i] == ABT_TASK_NULL);
            CH_CHECK_EQ(atomic_load(&slot[i].runs), 1);
            CH_CHECK(tk_serves(r->s, i % TK_POOLS, slot[i].ran_on));
            CH_CHECK(slot[i].id == ids[i]);
        }
    }
}

static void *tk_rounds_pthread(void *arg)
{
    tk_rounds(arg);
    return NULL;
}

/* Joins and frees of tasklets that run on other streams (four, more than
 * the CPUs), from the main ULT and from an external thread at once, many
 * rounds: each function ran exactly once, each join and free succeeds,
 * and a joined tasklet names the stream it ran on (one that serves its
 * pool), its state TERMINATED and its id. A join does not run a tasklet in
 * place: it waits for a stream of its pool to run it. */
static void test_task_join_free_other_streams(void)
{
    AT_OK(ABT_init(0, NULL));
    tk_streams_t s;
    tk_streams_start(&s);
    int rounds = (int)ch_iters(1000, 10);
    tk_rounds_t main_r = {&s, rounds}, ext_r = {&s, rounds};
    ch_pthread_t th;
    ch_pthread_start(&th, tk_rounds_pthread, &ext_r);
    tk_rounds(&main_r);
    ch_pthread_join(&th);
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    tk_streams_stop(&s);
    AT_OK(ABT_finalize());
}

/* Frees without a join of tasklets the schedulers ran: the main ULT
 * yields until its own stream's scheduler (then another stream's) has run
 * them all, sees them TERMINATED on that stream, and frees them (by
 * ABT_task_free and ABT_thread_free): each free succeeds at once, and no
 * function runs again. */
static void test_task_free_after_sched_run(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream self, es1;
    AT_OK(ABT_xstream_self(&self));
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &es1));
    ABT_pool where[2] = {at_main_pool(), ABT_POOL_NULL};
    AT_OK(ABT_xstream_get_main_pools(es1, 1, &where[1]));
    ABT_xstream ran_on[2] = {self, es1};
    enum { N = 32 };
    for (int w = 0; w < 2; w++) {
        for (int round = 0; round < (int)ch_iters(50, 3); round++) {
            tk_slot_t slot[N];
            ABT_task k[N];
            for (int i = 0; i < N; i++) {
                atomic_init(&slot[i].runs, 0);
                AT_OK(ABT_task_create(where[w], tk_body, &slot[i], &k[i]));
            }
            int yrc = ABT_SUCCESS;
            for (int i = 0; i < N; i++) {
                while (!atomic_load(&slot[i].runs) && yrc == ABT_SUCCESS)
                    yrc = ABT_thread_yield();
                CH_ASSERT_EQ(atomic_load(&slot[i].runs), 1);
            }
            AT_OK(yrc);
            for (int i = 0; i < N; i++) {
                /* Its function has returned; its end follows at once. */
                ABT_task_state st = ABT_TASK_STATE_READY;
                int rc;
                while ((rc = ABT_task_get_state(k[i], &st)) == ABT_SUCCESS &&
                       st != ABT_TASK_STATE_TERMINATED && yrc == ABT_SUCCESS)
                    yrc = ABT_thread_yield();
                AT_OK(rc);
                AT_OK(yrc);
                CU_ASSERT_EQUAL(st, ABT_TASK_STATE_TERMINATED);
                ABT_xstream last = ABT_XSTREAM_NULL;
                AT_OK(ABT_thread_get_last_xstream(k[i], &last));
                CU_ASSERT(last == ran_on[w]);
                CU_ASSERT(slot[i].ran_on == ran_on[w]);
                AT_OK(i % 2 ? ABT_thread_free(&k[i]) : ABT_task_free(&k[i]));
                CU_ASSERT(k[i] == ABT_TASK_NULL);
            }
            for (int i = 0; i < N; i++)
                CH_ASSERT_EQ(atomic_load(&slot[i].runs), 1);
        }
    }
    AT_OK(ABT_xstream_free(&es1));
    AT_OK(ABT_finalize());
}

/* Tasklets that end while other threads look at them: two external
 * threads and the main ULT ask each one's state, last stream and id
 * again and again while the four streams run them. */
enum { TQ_N = 64, TQ_READERS = 2 };
static struct {
    tk_streams_t *s;
    ABT_task k[TQ_N];
    tk_slot_t slot[TQ_N];
    ABT_unit_id id[TQ_N];
    atomic_int made;  /* k[0..made) are published (release) */
    atomic_int round; /* the round the readers are to read */
    atomic_int quit;
    atomic_int finished[TQ_READERS + 1]; /* the last round each read */
    atomic_long reads, bad_rc, backwards, bad_xstream, moved, bad_id;
} tq;

static void tq_spin_body(void *arg)
{
    /* A little work, so that a reader may find it RUNNING. */
    for (volatile int i = 0; i < 2000; i++)
        ;
    tk_body(arg);
}

static int tq_rank(ABT_task_state st)
{
    return st == ABT_TASK_STATE_READY ? 0 : st == ABT_TASK_STATE_RUNNING ? 1 : 2;
}

/* Reads round `round` until every tasklet was seen TERMINATED: each call
 * succeeds; the state never goes back; the last stream is none before
 * the tasklet ran, then one that serves its pool and never another, and
 * the one it ran on once TERMINATED; the id is the one it was created
 * with. */
static void tq_read_round(void)
{
    int prev[TQ_N];
    ABT_xstream px[TQ_N];
    for (int i = 0; i < TQ_N; i++) {
        prev[i] = 0;
        px[i] = ABT_XSTREAM_NULL;
    }
    int ended = 0;
    double t0 = ch_now();
    while (ended < TQ_N && ch_now() - t0 < CH_WAIT_LIMIT_S) {
        int made = atomic_load_explicit(&tq.made, memory_order_acquire);
        for (int i = 0; i < made; i++) {
            if (prev[i] == 2)
                continue;
            ABT_task_state st = ABT_TASK_STATE_READY;
            ABT_xstream x = ABT_XSTREAM_NULL;
            ABT_unit_id id = 0;
            int rc1 = ABT_task_get_state(tq.k[i], &st);
            int rc2 = ABT_thread_get_last_xstream(tq.k[i], &x);
            int rc3 = ABT_thread_get_id(tq.k[i], &id);
            atomic_fetch_add(&tq.reads, 1);
            if (rc1 != ABT_SUCCESS || rc2 != ABT_SUCCESS || rc3 != ABT_SUCCESS) {
                atomic_fetch_add(&tq.bad_rc, 1);
                continue;
            }
            int r = tq_rank(st);
            if (r < prev[i])
                atomic_fetch_add(&tq.backwards, 1);
            if (x != ABT_XSTREAM_NULL) {
                if (!tk_serves(tq.s, i % TK_POOLS, x))
                    atomic_fetch_add(&tq.bad_xstream, 1);
                if (px[i] != ABT_XSTREAM_NULL && px[i] != x)
                    atomic_fetch_add(&tq.moved, 1);
                px[i] = x;
            }
            /* TERMINATED, read before the stream: the stream is the one
             * the tasklet ran on. */
            if (r == 2 && x != tq.slot[i].ran_on)
                atomic_fetch_add(&tq.bad_xstream, 1);
            if (id != tq.id[i])
                atomic_fetch_add(&tq.bad_id, 1);
            if (r > prev[i])
                prev[i] = r;
            ended += r == 2;
        }
        ch_relax();
    }
}

static void *tq_reader(void *arg)
{
    int me = (int)(intptr_t)arg;
    int done = 0;
    for (;;) {
        int r;
        while ((r = atomic_load(&tq.round)) == done && !atomic_load(&tq.quit))
            sched_yield();
        if (r == done)
            return NULL;
        tq_read_round();
        done = r;
        atomic_store(&tq.finished[me], done);
    }
}

/* While tasklets end on the other streams, ABT_task_get_state,
 * ABT_thread_get_last_xstream and ABT_thread_get_id of them, from two
 * external threads and the main ULT, never fail, and what they tell only
 * moves forward (READY or RUNNING, then TERMINATED; no stream, then the
 * one it runs on); joins and frees then succeed, each function having run
 * once. */
static void test_task_state_while_ending(void)
{
    AT_OK(ABT_init(0, NULL));
    tk_streams_t s;
    tk_streams_start(&s);
    memset(&tq, 0, sizeof tq);
    tq.s = &s;
    ch_pthread_t th[TQ_READERS];
    for (int i = 0; i < TQ_READERS; i++)
        ch_pthread_start(&th[i], tq_reader, (void *)(intptr_t)i);
    int rounds = (int)ch_iters(300, 5);
    for (int round = 1; round <= rounds; round++) {
        atomic_store(&tq.made, 0);
        atomic_store(&tq.round, round); /* readers start, made 0 */
        for (int i = 0; i < TQ_N; i++) {
            atomic_init(&tq.slot[i].runs, 0);
            tq.slot[i].ran_on = ABT_XSTREAM_NULL;
            AT_OK(ABT_task_create(s.pools[i % TK_POOLS], tq_spin_body,
                                  &tq.slot[i], &tq.k[i]));
            AT_OK(ABT_task_get_id(tq.k[i], &tq.id[i]));
            atomic_store_explicit(&tq.made, i + 1, memory_order_release);
        }
        tq_read_round(); /* the main ULT reads too */
        int yrc = ABT_SUCCESS;
        for (int i = 0; i < TQ_READERS; i++)
            while (atomic_load(&tq.finished[i]) != round && yrc == ABT_SUCCESS)
                yrc = ABT_thread_yield();
        AT_OK(yrc);
        for (int i = 0; i < TQ_N; i++) {
            AT_OK(ABT_task_join(tq.k[i]));
            CH_ASSERT_EQ(atomic_load(&tq.slot[i].runs), 1);
            AT_OK(ABT_task_free(&tq.k[i]));
        }
    }
    atomic_store(&tq.quit, 1);
    for (int i = 0; i < TQ_READERS; i++)
        ch_pthread_join(&th[i]);
    CU_ASSERT(atomic_load(&tq.reads) >= (long)rounds * TQ_N * 3);
    CH_ASSERT_EQ(atomic_load(&tq.bad_rc), 0);
    CH_ASSERT_EQ(atomic_load(&tq.backwards), 0);
    CH_ASSERT_EQ(atomic_load(&tq.bad_xstream), 0);
    CH_ASSERT_EQ(atomic_load(&tq.moved), 0);
    CH_ASSERT_EQ(atomic_load(&tq.bad_id), 0);
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    tk_streams_stop(&s);
    AT_OK(ABT_finalize());
}

/* Joins and frees made by a tasklet, which cannot wait: of itself, they
 * are the call's own invalid-handle error (ABT_ERR_INV_TASK,
 * ABT_ERR_INV_THREAD), of a tasklet that has not finished
 * ABT_ERR_INV_THREAD (the caller is a unit that may not wait), and the
 * handles stay; a tasklet that has finished is joined at once. */
typedef struct {
    ABT_task other, done;
    int rc[8];
    int me_kept, other_kept;
    ABT_task_state other_state;
} tj_t;

static void tj_body(void *arg)
{
    tj_t *x = arg;
    ABT_task me = ABT_TASK_NULL, copy;
    AT_CHECK_OK(ABT_task_self(&me));
    x->rc[0] = ABT_task_join(me);
    x->rc[1] = ABT_thread_join(me);
    copy = me;
    x->rc[2] = ABT_task_free(&copy);
    x->me_kept = copy == me;
    x->rc[3] = ABT_task_join(x->other);
    x->rc[4] = ABT_thread_join(x->other);
    copy = x->other;
    x->rc[5] = ABT_task_free(&copy);
    x->other_kept = copy == x->other;
    x->rc[6] = ABT_task_join(x->done);
    x->rc[7] = ABT_task_get_state(x->other, &x->other_state);
}

static void test_task_join_from_tasklet(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream es1, es2;
    ABT_pool p1, idle;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &es1));
    AT_OK(ABT_xstream_get_main_pools(es1, 1, &p1));
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_FALSE,
                                &idle));
    tk_slot_t other_slot, done_slot;
    atomic_init(&other_slot.runs, 0);
    atomic_init(&done_slot.runs, 0);
    tj_t x;
    memset(x.rc, 0x55, sizeof x.rc);
    x.me_kept = x.other_kept = 0;
    AT_OK(ABT_task_create(idle, tk_body, &other_slot, &x.other));
    AT_OK(ABT_task_create(p1, tk_body, &done_slot, &x.done));
    AT_OK(ABT_task_join(x.done));
    ABT_task k;
    AT_OK(ABT_task_create(p1, tj_body, &x, &k));
    AT_OK(ABT_task_join(k));
    static const int want[8] = {
        ABT_ERR_INV_TASK,   ABT_ERR_INV_THREAD, ABT_ERR_INV_TASK,
        ABT_ERR_INV_THREAD, ABT_ERR_INV_THREAD, ABT_ERR_INV_THREAD,
        ABT_SUCCESS,        ABT_SUCCESS};
    for (int i = 0; i < 8; i++) {
        if (x.rc[i] != want[i])
            fprintf(stderr, "    tasklet call %d: %d, expected %d\n", i,
                    x.rc[i], want[i]);
        CU_ASSERT_EQUAL(x.rc[i], want[i]);
    }
    CU_ASSERT(x.me_kept);
    CU_ASSERT(x.other_kept);
    CU_ASSERT_EQUAL(x.other_state, ABT_TASK_STATE_READY);
    /* Nothing ran the other one meanwhile; a stream over its pool does. */
    CH_ASSERT_EQ(atomic_load(&other_slot.runs), 0);
    AT_OK(ABT_xstream_create_basic(ABT_SCHED_BASIC, 1, &idle,
                                   ABT_SCHED_CONFIG_NULL, &es2));
    AT_OK(ABT_task_join(x.other));
    CH_ASSERT_EQ(atomic_load(&other_slot.runs), 1);
    CU_ASSERT(other_slot.ran_on == es2);
    AT_OK(ABT_task_free(&x.other));
    AT_OK(ABT_task_free(&x.done));
    AT_OK(ABT_task_free(&k));
    CH_ASSERT_EQ(atomic_load(&done_slot.runs), 1);
    AT_OK(ABT_xstream_free(&es2));
    AT_OK(ABT_xstream_free(&es1));
    AT_OK(ABT_pool_free(&idle));
    AT_OK(ABT_finalize());
}

static const ch_test_t task_tests[] = {
    {"run", test_task_run},
    {"record_reuse", test_task_record_reuse},
    {"join_free_other_streams", test_task_join_free_other_streams},
    {"free_after_sched_run", test_task_free_after_sched_run},
    {"state_while_ending", test_task_state_while_ending},
    {"join_from_tasklet", test_task_join_from_tasklet},
    {NULL, NULL}};

/* ---- self ------------------------------------------------------------------ */

/* From an external thread: the errors, and (Argobots 1.x) the NULL
 * handles the self calls leave over whatever the caller had there. */
static void *ext_probe(void *arg)
{
    ABT_unit_type type = ABT_UNIT_TYPE_THREAD;
    int *rc = arg;
    rc[0] = ABT_self_get_type(&type);
    rc[1] = type;
    ABT_thread t = (ABT_thread)(void *)&type;
    rc[2] = ABT_thread_self(&t);
    ABT_task k = (ABT_task)(void *)&type;
    rc[3] = ABT_task_self(&k);
    ABT_xstream x = (ABT_xstream)(void *)&type;
    rc[4] = ABT_xstream_self(&x);
    rc[5] = t == ABT_THREAD_NULL && k == ABT_TASK_NULL &&
            x == ABT_XSTREAM_NULL;
    return NULL;
}

static void ult_self_probe(void *arg)
{
    ABT_bool b = ABT_TRUE;
    AT_CHECK_OK(ABT_self_is_primary(&b));
    CH_CHECK_EQ(b, ABT_FALSE);
    AT_CHECK_OK(ABT_self_on_primary_xstream(&b));
    CH_CHECK_EQ(b, ABT_TRUE);
    AT_CHECK_OK(ABT_self_is_unnamed(&b));
    CH_CHECK_EQ(b, ABT_FALSE);
    void *a = NULL;
    AT_CHECK_OK(ABT_self_get_arg(&a));
    CH_CHECK(a == arg);
    ABT_thread me, me2;
    AT_CHECK_OK(ABT_thread_self(&me));
    AT_CHECK_OK(ABT_self_get_thread(&me2));
    CH_CHECK(me == me2);
    ABT_thread_id id = 0;
    AT_CHECK_OK(ABT_self_get_thread_id(&id));
    CH_CHECK(id != 0);
    *(ABT_thread *)arg = me;
}

static void test_self_queries(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_bool b = ABT_FALSE;
    AT_OK(ABT_self_is_primary(&b));
    CU_ASSERT_EQUAL(b, ABT_TRUE);
    ABT_pool pool = at_main_pool();
    ABT_thread seen = ABT_THREAD_NULL, t;
    AT_OK(ABT_thread_create(pool, ult_self_probe, &seen, ABT_THREAD_ATTR_NULL,
                            &t));
    AT_OK(ABT_thread_join(t));
    CU_ASSERT_PTR_EQUAL(seen, t);
    ABT_thread_id id1 = 0, id2 = 0;
    AT_OK(ABT_thread_get_id(t, &id1));
    AT_OK(ABT_self_get_thread_id(&id2));
    CU_ASSERT_NOT_EQUAL(id1, id2);
    AT_OK(ABT_thread_free(&t));
    int rc[6] = {-1, -1, -1, -1, -1, -1};
    pthread_t pt;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&pt, NULL, ext_probe, rc), 0);
    pthread_join(pt, NULL);
    CU_ASSERT_EQUAL(rc[0], ABT_ERR_INV_XSTREAM);
    CU_ASSERT_EQUAL(rc[1], ABT_UNIT_TYPE_EXT);
    CU_ASSERT_EQUAL(rc[2], ABT_ERR_INV_XSTREAM);
    CU_ASSERT_EQUAL(rc[3], ABT_ERR_INV_XSTREAM);
    CU_ASSERT_EQUAL(rc[4], ABT_ERR_INV_XSTREAM);
    CU_ASSERT_EQUAL(rc[5], 1);
    AT_OK(ABT_finalize());
}

static const ch_test_t self_tests[] = {{"queries", test_self_queries},
                                       {NULL, NULL}};

/* ---- pool ------------------------------------------------------------------ */

static void test_pool_basic(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool pool;
    CU_ASSERT_EQUAL(ABT_pool_create_basic((ABT_pool_kind)42,
                                          ABT_POOL_ACCESS_MPMC, ABT_TRUE,
                                          &pool),
                    ABT_ERR_INV_POOL_KIND);
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_SPSC, ABT_FALSE,
                                &pool));
    ABT_pool_access acc;
    AT_OK(ABT_pool_get_access(pool, &acc));
    CU_ASSERT_EQUAL(acc, ABT_POOL_ACCESS_SPSC);
    int data = 3;
    void *d = NULL;
    AT_OK(ABT_pool_set_data(pool, &data));
    AT_OK(ABT_pool_get_data(pool, &d));
    CU_ASSERT_PTR_EQUAL(d, &data);
    /* Units pushed by creation come back out of pop in FIFO order. */
    ABT_thread t[3];
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_thread_create(pool, add_one, NULL, ABT_THREAD_ATTR_NULL,
                                &t[i]));
    size_t n = 0;
    AT_OK(ABT_pool_get_size(pool, &n));
    CU_ASSERT_EQUAL(n, 3);
    ABT_unit u;
    ABT_thread got;
    AT_OK(ABT_pool_pop(pool, &u));
    AT_OK(ABT_unit_get_thread(u, &got));
    CU_ASSERT_PTR_EQUAL(got, t[0]);
    AT_OK(ABT_pool_push(pool, u));
    AT_OK(ABT_pool_pop_thread(pool, &got));
    CU_ASSERT_PTR_EQUAL(got, t[1]);
    AT_OK(ABT_pool_push_thread(pool, got));
    int id = -1;
    AT_OK(ABT_pool_get_id(pool, &id));
    CU_ASSERT(id >= 0);
    /* Run them on the primary: its main pool takes them over. */
    ABT_pool main_pool = at_main_pool();
    atomic_store(&counter, 0);
    while (ABT_pool_pop_thread(pool, &got) == ABT_SUCCESS && got)
        AT_OK(ABT_thread_migrate_to_pool(got, main_pool));
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_thread_free(&t[i]));
    CU_ASSERT_EQUAL(atomic_load(&counter), 3);
    AT_OK(ABT_pool_free(&pool));
    CU_ASSERT_PTR_NULL(pool);
    AT_OK(ABT_finalize());
}

static int randws_order[8];
static atomic_int randws_n;

static void randws_note(void *arg)
{
    randws_order[atomic_fetch_add(&randws_n, 1)] = (int)(intptr_t)arg;
}

/* RANDWS pools: the stream whose RANDWS scheduler pops the pool first runs
 * the newest unit first (depth-first fork-join); another stream whose
 * scheduler lists the pool steals from it. */
static void test_pool_randws(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool p[2];
    for (int i = 0; i < 2; i++)
        AT_OK(ABT_pool_create_basic(ABT_POOL_RANDWS, ABT_POOL_ACCESS_MPMC,
                                    ABT_TRUE, &p[i]));
    ABT_xstream self, es1;
    AT_OK(ABT_xstream_self(&self));
    AT_OK(ABT_xstream_set_main_sched_basic(self, ABT_SCHED_RANDWS, 1, &p[0]));
    atomic_store(&randws_n, 0);
    ABT_thread t[3];
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_thread_create(p[0], randws_note, (void *)(intptr_t)i,
                                ABT_THREAD_ATTR_NULL, &t[i]));
    size_t size = 0;
    AT_OK(ABT_pool_get_size(p[0], &size));
    CU_ASSERT_EQUAL(size, 3);
    AT_OK(ABT_self_yield());
    AT_OK(ABT_thread_free_many(3, t));
    CU_ASSERT_EQUAL(atomic_load(&randws_n), 3);
    CU_ASSERT_EQUAL(randws_order[0], 2);
    CU_ASSERT_EQUAL(randws_order[1], 1);
    CU_ASSERT_EQUAL(randws_order[2], 0);
    /* ES1 pops p[1] and steals from p[0]: units queued on the primary run
     * while its main ULT does not yield. */
    ABT_pool order[2] = {p[1], p[0]};
    AT_OK(ABT_xstream_create_basic(ABT_SCHED_RANDWS, 2, order,
                                   ABT_SCHED_CONFIG_NULL, &es1));
    atomic_store(&counter, 0);
    ABT_thread s[8];
    for (int i = 0; i < 8; i++)
        AT_OK(ABT_thread_create(p[0], add_one, NULL, ABT_THREAD_ATTR_NULL,
                                &s[i]));
    for (int spins = 0; atomic_load(&counter) < 8 && spins < 20000; spins++)
        usleep(100);
    CU_ASSERT_EQUAL(atomic_load(&counter), 8);
    AT_OK(ABT_thread_free_many(8, s));
    AT_OK(ABT_xstream_join(es1));
    AT_OK(ABT_xstream_free(&es1));
    AT_OK(ABT_finalize());
}

/* Many outstanding units whose records are freed on another stream than
 * the one that made them, over and over (the record lists overflow to the
 * global one and are taken back from it). */
#define MANY_UNITS 6000
static ABT_thread many[MANY_UNITS];

static void free_many(void *arg)
{
    (void)arg;
    for (int i = 0; i < MANY_UNITS; i++)
        AT_CHECK_OK(ABT_thread_free(&many[i]));
}

static void test_thread_many_outstanding(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream es1;
    ABT_pool p1, p0;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &es1));
    AT_OK(ABT_xstream_get_main_pools(es1, 1, &p1));
    ABT_xstream self;
    AT_OK(ABT_xstream_self(&self));
    AT_OK(ABT_xstream_get_main_pools(self, 1, &p0));
    for (int round = 0; round < 3; round++) {
        atomic_store(&counter, 0);
        for (int i = 0; i < MANY_UNITS; i++)
            AT_OK(ABT_thread_create(i % 2 ? p1 : p0, add_one, NULL,
                                    ABT_THREAD_ATTR_NULL, &many[i]));
        ABT_thread f;
        AT_OK(ABT_thread_create(p1, free_many, NULL, ABT_THREAD_ATTR_NULL,
                                &f));
        AT_OK(ABT_thread_free(&f));
        CU_ASSERT_EQUAL(atomic_load(&counter), MANY_UNITS);
        for (int i = 0; i < MANY_UNITS; i++)
            CU_ASSERT_PTR_NULL(many[i]);
    }
    AT_OK(ABT_xstream_join(es1));
    AT_OK(ABT_xstream_free(&es1));
    AT_OK(ABT_finalize());
}

/* What a pool listing handed over, in order. */
struct unit_log {
    ABT_unit u[8];
    ABT_thread t[8];
    int n;
};

static void log_unit(void *arg, ABT_unit u)
{
    struct unit_log *l = arg;
    if (l->n < 8)
        l->u[l->n] = u;
    l->n++;
}

static void log_thread(void *arg, ABT_thread t)
{
    struct unit_log *l = arg;
    if (l->n < 8)
        l->t[l->n] = t;
    l->n++;
}

/* ABT_pool_print_all(_threads) list a built-in pool's units in the order
 * pops take them (a RANDWS pool no stream serves as well), and
 * ABT_info_print_thread_stacks_in_pool prints each one. */
static void test_pool_print_all(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool main_pool = at_main_pool();
    static const ABT_pool_kind kinds[] = {ABT_POOL_FIFO, ABT_POOL_RANDWS};
    for (int k = 0; k < 2; k++) {
        ABT_pool pool;
        AT_OK(ABT_pool_create_basic(kinds[k], ABT_POOL_ACCESS_MPMC, ABT_FALSE,
                                    &pool));
        ABT_thread t[4];
        for (int i = 0; i < 3; i++)
            AT_OK(ABT_thread_create(pool, add_one, NULL, ABT_THREAD_ATTR_NULL,
                                    &t[i]));
        AT_OK(ABT_task_create(pool, add_one, NULL, &t[3]));
        struct unit_log lt = {0}, lu = {0};
        AT_OK(ABT_pool_print_all_threads(pool, &lt, log_thread));
        AT_OK(ABT_pool_print_all(pool, &lu, log_unit));
        CU_ASSERT_EQUAL(lt.n, 4);
        CU_ASSERT_EQUAL(lu.n, 4);
        for (int i = 0; i < 4 && i < lt.n && i < lu.n; i++) {
            CU_ASSERT_PTR_EQUAL(lt.t[i], t[i]);
            ABT_thread th = ABT_THREAD_NULL;
            AT_OK(ABT_unit_get_thread(lu.u[i], &th));
            CU_ASSERT_PTR_EQUAL(th, t[i]);
        }
        mem_t m;
        mem_open(&m);
        AT_OK(ABT_info_print_thread_stacks_in_pool(m.f, pool));
        char *buf = mem_close(&m);
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, ": 4 units =="));
        free(buf);
        /* Pops take them in the listed order. */
        for (int i = 0; i < 4; i++) {
            ABT_thread got = ABT_THREAD_NULL;
            AT_OK(ABT_pool_pop_thread(pool, &got));
            CU_ASSERT_PTR_EQUAL(got, t[i]);
            AT_OK(ABT_pool_push_thread(main_pool, got));
        }
        lt.n = 0;
        AT_OK(ABT_pool_print_all_threads(pool, &lt, log_thread));
        CU_ASSERT_EQUAL(lt.n, 0);
        for (int i = 0; i < 4; i++)
            AT_OK(ABT_thread_free(&t[i]));
        AT_OK(ABT_pool_free(&pool));
    }
    CU_ASSERT_EQUAL(ABT_pool_print_all(ABT_POOL_NULL, NULL, log_unit),
                    ABT_ERR_INV_POOL);
    CU_ASSERT_EQUAL(ABT_pool_print_all_threads(main_pool, NULL, NULL),
                    ABT_ERR_INV_ARG);
    CU_ASSERT_EQUAL(ABT_info_print_thread_stacks_in_pool(NULL, main_pool),
                    ABT_ERR_INV_ARG);
    AT_OK(ABT_finalize());
}

/* ABT_pool_remove: a queued ULT or tasklet leaves the pool and is the
 * caller's to push again; a unit not queued there is ABT_ERR_POOL. */
static void test_pool_remove(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool pool, main_pool = at_main_pool();
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_FALSE,
                                &pool));
    atomic_store(&counter, 0);
    ABT_thread t[3];
    ABT_task k;
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_thread_create(pool, add_one, NULL, ABT_THREAD_ATTR_NULL,
                                &t[i]));
    AT_OK(ABT_task_create(pool, add_one, NULL, &k));
    ABT_unit u1, uk, u;
    AT_OK(ABT_thread_get_unit(t[1], &u1));
    AT_OK(ABT_thread_get_unit(k, &uk));
    AT_OK(ABT_pool_remove(pool, u1));
    AT_OK(ABT_pool_remove(pool, uk));
    size_t n = 0;
    AT_OK(ABT_pool_get_size(pool, &n));
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(ABT_pool_remove(pool, u1), ABT_ERR_POOL);
    CU_ASSERT_EQUAL(ABT_pool_remove(ABT_POOL_NULL, u1), ABT_ERR_INV_POOL);
    CU_ASSERT_EQUAL(ABT_pool_remove(pool, ABT_UNIT_NULL), ABT_ERR_INV_UNIT);
    /* The others come out in their order, the removed ones not at all. */
    ABT_thread got;
    AT_OK(ABT_pool_pop_thread(pool, &got));
    CU_ASSERT_PTR_EQUAL(got, t[0]);
    AT_OK(ABT_pool_push(main_pool, u1));
    /* Queued in another pool now. */
    CU_ASSERT_EQUAL(ABT_pool_remove(pool, u1), ABT_ERR_POOL);
    AT_OK(ABT_pool_push_thread(main_pool, got));
    AT_OK(ABT_pool_pop(pool, &u));
    AT_OK(ABT_unit_get_thread(u, &got));
    CU_ASSERT_PTR_EQUAL(got, t[2]);
    AT_OK(ABT_pool_pop(pool, &u));
    CU_ASSERT_EQUAL(u, ABT_UNIT_NULL);
    AT_OK(ABT_pool_push_thread(main_pool, got));
    AT_OK(ABT_pool_push(main_pool, uk));
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_thread_free(&t[i]));
    AT_OK(ABT_task_free(&k));
    CU_ASSERT_EQUAL(atomic_load(&counter), 4);
    /* A finished unit is in no pool. */
    AT_OK(ABT_thread_create(pool, add_one, NULL, ABT_THREAD_ATTR_NULL, &t[0]));
    AT_OK(ABT_pool_pop_thread(pool, &got));
    AT_OK(ABT_pool_push_thread(main_pool, got));
    AT_OK(ABT_thread_join(t[0]));
    AT_OK(ABT_thread_get_unit(t[0], &u));
    CU_ASSERT_EQUAL(ABT_pool_remove(pool, u), ABT_ERR_INV_UNIT);
    AT_OK(ABT_thread_free(&t[0]));
    AT_OK(ABT_pool_free(&pool));
    AT_OK(ABT_finalize());
}

/* A ULT that yields until told to stop, counting its runs. */
static atomic_int yielder_stop;
static void yielder(void *arg)
{
    (void)arg;
    for (;;) {
        atomic_fetch_add(&counter, 1);
        if (atomic_load(&yielder_stop))
            return;
        AT_CHECK_OK(ABT_thread_yield());
    }
}

/* ABT_pool_remove of a ULT that ran and yielded back into its pool: it
 * runs no more until pushed again, then goes on where it left off. */
static void test_pool_remove_yielded(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool main_pool = at_main_pool();
    atomic_store(&counter, 0);
    atomic_store(&yielder_stop, 0);
    ABT_thread t;
    AT_OK(ABT_thread_create(main_pool, yielder, NULL, ABT_THREAD_ATTR_NULL,
                            &t));
    /* One stream: while this ULT runs, the yielder is queued. */
    while (atomic_load(&counter) < 3)
        AT_OK(ABT_thread_yield());
    ABT_unit u;
    AT_OK(ABT_thread_get_unit(t, &u));
    AT_OK(ABT_pool_remove(main_pool, u));
    int held = atomic_load(&counter);
    for (int i = 0; i < 5; i++)
        AT_OK(ABT_thread_yield());
    CU_ASSERT_EQUAL(atomic_load(&counter), held);
    ABT_thread_state st;
    AT_OK(ABT_thread_get_state(t, &st));
    CU_ASSERT_EQUAL(st, ABT_THREAD_STATE_READY);
    CU_ASSERT_EQUAL(ABT_pool_remove(main_pool, u), ABT_ERR_POOL);
    atomic_store(&yielder_stop, 1);
    AT_OK(ABT_pool_push(main_pool, u));
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(atomic_load(&counter), held + 1);
    AT_OK(ABT_finalize());
}

static const ch_test_t pool_tests[] = {{"basic", test_pool_basic},
                                       {"remove", test_pool_remove},
                                       {"remove_yielded",
                                        test_pool_remove_yielded},
                                       {"print_all", test_pool_print_all},
                                       {"randws", test_pool_randws},
                                       {"many_outstanding",
                                        test_thread_many_outstanding},
                                       {NULL, NULL}};

/* ---- sched ------------------------------------------------------------------ */

static void test_sched_predef(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_sched_predef kinds[] = {ABT_SCHED_DEFAULT, ABT_SCHED_BASIC,
                                ABT_SCHED_BASIC_WAIT, ABT_SCHED_PRIO,
                                ABT_SCHED_RANDWS};
    for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        ABT_sched_config config;
        AT_OK(ABT_sched_config_create(&config, ABT_sched_basic_freq, 8,
                                      ABT_sched_config_var_end));
        ABT_sched sched;
        AT_OK(ABT_sched_create_basic(kinds[k], 0, NULL, config, &sched));
        ABT_xstream xs;
        AT_OK(ABT_xstream_create(sched, &xs));
        /* A scheduler in use cannot be given to another stream. */
        ABT_xstream other;
        CU_ASSERT_EQUAL(ABT_xstream_create(sched, &other), ABT_ERR_INV_SCHED);
        atomic_store(&counter, 0);
        ABT_thread t[16];
        for (int i = 0; i < 16; i++)
            AT_OK(ABT_thread_create_on_xstream(xs, add_one, NULL,
                                               ABT_THREAD_ATTR_NULL, &t[i]));
        AT_OK(ABT_thread_free_many(16, t));
        CU_ASSERT_EQUAL(atomic_load(&counter), 16);
        AT_OK(ABT_xstream_free(&xs)); /* frees the automatic scheduler */
        AT_OK(ABT_sched_config_free(&config));
    }
    CU_ASSERT_EQUAL(ABT_sched_create_basic((ABT_sched_predef)99, 0, NULL,
                                           ABT_SCHED_CONFIG_NULL, NULL),
                    ABT_ERR_INV_ARG);
    AT_OK(ABT_finalize());
}

static void test_sched_config(void)
{
    ABT_sched_config_var v0 = {0, ABT_SCHED_CONFIG_INT};
    ABT_sched_config_var v1 = {1, ABT_SCHED_CONFIG_DOUBLE};
    ABT_sched_config_var v2 = {2, ABT_SCHED_CONFIG_PTR};
    ABT_sched_config config;
    AT_OK(ABT_sched_config_create(&config, v0, 5, v1, 2.5, v2, (void *)&v0,
                                  ABT_sched_config_var_end));
    int i = 0;
    double d = 0;
    void *p = NULL;
    AT_OK(ABT_sched_config_read(config, 3, &i, &d, &p));
    CU_ASSERT_EQUAL(i, 5);
    CU_ASSERT_DOUBLE_EQUAL(d, 2.5, 1e-12);
    CU_ASSERT_PTR_EQUAL(p, &v0);
    int seven = 7;
    AT_OK(ABT_sched_config_set(config, 0, ABT_SCHED_CONFIG_INT, &seven));
    ABT_sched_config_type type;
    AT_OK(ABT_sched_config_get(config, 0, &type, &i));
    CU_ASSERT_EQUAL(type, ABT_SCHED_CONFIG_INT);
    CU_ASSERT_EQUAL(i, 7);
    AT_OK(ABT_sched_config_free(&config));
    CU_ASSERT_PTR_NULL(config);
}

/* ABT_xstream_set_main_sched_basic(xs, BASIC, 1, arg's pool) by a unit
 * of some stream, or by an external thread: its result. */
struct set_main_req {
    ABT_xstream xs;
    ABT_pool pool;
    int rc;
};

static void set_main_unit(void *arg)
{
    struct set_main_req *r = arg;
    r->rc = ABT_xstream_set_main_sched_basic(r->xs, ABT_SCHED_BASIC, 1,
                                             &r->pool);
}

static void where_run(void *arg)
{
    AT_CHECK_OK(ABT_self_get_xstream((ABT_xstream *)arg));
}

static void *set_main_ext(void *arg)
{
    set_main_unit(arg);
    return NULL;
}

/* As in Argobots 1.x: a running stream's main scheduler is changed by its
 * own ULTs only, a terminated one's by any ULT; never by a tasklet or an
 * external thread. Each refusal leaves the stream as it was. */
static void test_sched_set_main(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream xs, self;
    AT_OK(ABT_xstream_self(&self));
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &xs));
    ABT_pool first, pool, pool2, got;
    ABT_thread_state ts;
    AT_OK(ABT_xstream_get_main_pools(xs, 1, &first));
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_TRUE,
                                &pool));
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_TRUE,
                                &pool2));
    struct set_main_req r = {xs, pool, -1};
    /* The primary's main ULT, for another stream that runs. */
    CU_ASSERT_EQUAL(ABT_xstream_set_main_sched_basic(xs, ABT_SCHED_BASIC, 1,
                                                     &pool),
                    ABT_ERR_XSTREAM_STATE);
    /* An external thread. */
    pthread_t pt;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&pt, NULL, set_main_ext, &r), 0);
    pthread_join(pt, NULL);
    CU_ASSERT_EQUAL(r.rc, ABT_ERR_INV_XSTREAM);
    /* A tasklet of that stream. */
    r.rc = -1;
    ABT_task k;
    AT_OK(ABT_task_create(first, set_main_unit, &r, &k));
    AT_OK(ABT_task_free(&k));
    CU_ASSERT_EQUAL(r.rc, ABT_ERR_INV_THREAD);
    AT_OK(ABT_xstream_get_main_pools(xs, 1, &got));
    CU_ASSERT_PTR_EQUAL(got, first);
    /* A ULT of that stream: the stream now takes from pool. */
    r.rc = -1;
    ABT_thread t;
    AT_OK(ABT_thread_create(first, set_main_unit, &r, ABT_THREAD_ATTR_NULL,
                            &t));
    AT_OK(ABT_thread_free(&t));
    AT_OK(r.rc);
    AT_OK(ABT_xstream_get_main_pools(xs, 1, &got));
    CU_ASSERT_PTR_EQUAL(got, pool);
    atomic_store(&counter, 0);
    AT_OK(ABT_thread_create(pool, add_one, NULL, ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(atomic_load(&counter), 1);
    /* Terminated: the primary's main ULT may; the revived stream runs
     * the new scheduler. */
    AT_OK(ABT_xstream_join(xs));
    AT_OK(ABT_xstream_set_main_sched_basic(xs, ABT_SCHED_BASIC, 1, &pool2));
    AT_OK(ABT_xstream_revive(xs));
    AT_OK(ABT_xstream_get_main_pools(xs, 1, &got));
    CU_ASSERT_PTR_EQUAL(got, pool2);
    ABT_xstream ran = ABT_XSTREAM_NULL;
    AT_OK(ABT_thread_create(pool2, where_run, &ran, ABT_THREAD_ATTR_NULL, &t));
    while (ABT_thread_get_state(t, &ts) == ABT_SUCCESS &&
           ts != ABT_THREAD_STATE_TERMINATED)
        ABT_self_yield();
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_PTR_EQUAL(ran, xs);
    /* Its own stream, by the primary's main ULT: allowed. */
    AT_OK(ABT_xstream_set_main_sched_basic(self, ABT_SCHED_DEFAULT, 0, NULL));
    AT_OK(ABT_xstream_free(&xs));
    AT_OK(ABT_finalize());
}

/* A ULT that sets its own stream's main scheduler returns under the new
 * one, in its own pool if the new one takes from it, else in the new
 * one's first pool (a pool of the old one, or of none). */
enum { OWN_POOLS = 3, OWN_STREAMS = 4, OWN_ULTS = 8 };
static ABT_pool own_pools[OWN_POOLS];
static atomic_int own_bad;

static ABT_pool own_last_pool(void)
{
    ABT_thread me;
    ABT_pool last = ABT_POOL_NULL;
    AT_CHECK_OK(ABT_self_get_thread(&me));
    AT_CHECK_OK(ABT_thread_get_last_pool(me, &last));
    return last;
}

static void own_switch_ult(void *arg)
{
    ABT_xstream xs, now;
    AT_CHECK_OK(ABT_self_get_xstream(&xs));
    ABT_pool *p = own_pools;
    /* {0} -> {1, 0}: its pool 0 is still taken from, it stays there. */
    ABT_pool two[2] = {p[1], p[0]};
    AT_CHECK_OK(ABT_xstream_set_main_sched_basic(xs, ABT_SCHED_BASIC, 2, two));
    CH_CHECK(own_last_pool() == p[0]);
    /* -> {2}: pool 0 is not, it goes to pool 2. */
    AT_CHECK_OK(ABT_xstream_set_main_sched_basic(xs, ABT_SCHED_BASIC, 1,
                                                 &p[2]));
    CH_CHECK(own_last_pool() == p[2]);
    /* Associated with a pool no scheduler takes from (1, not yet moved),
     * -> {0}: it goes to pool 0, and runs. */
    AT_CHECK_OK(ABT_self_set_associated_pool(p[1]));
    AT_CHECK_OK(ABT_xstream_set_main_sched_basic(xs, ABT_SCHED_BASIC, 1,
                                                 &p[0]));
    CH_CHECK(own_last_pool() == p[0]);
    AT_CHECK_OK(ABT_self_yield());
    AT_CHECK_OK(ABT_self_get_xstream(&now));
    CH_CHECK(now == xs);
    ABT_pool mp = ABT_POOL_NULL;
    AT_CHECK_OK(ABT_xstream_get_main_pools(xs, 1, &mp));
    CH_CHECK(mp == p[0]);
}

/* Many ULTs on more streams than cores, each setting its stream's
 * scheduler over one or two of three pools, never all, so pools keep
 * losing their server: none may be stranded (every join returns). */
static void own_churn_ult(void *arg)
{
    intptr_t id = (intptr_t)arg;
    int iters = (int)ch_iters(40, 6);
    for (int i = 0; i < iters; i++) {
        ABT_xstream xs;
        AT_CHECK_OK(ABT_self_get_xstream(&xs));
        ABT_pool ps[2] = {own_pools[(id + i) % OWN_POOLS],
                          own_pools[(id + i + 1) % OWN_POOLS]};
        if ((i & 3) == 3)
            AT_CHECK_OK(ABT_self_set_associated_pool(
                own_pools[(id + i + 2) % OWN_POOLS]));
        AT_CHECK_OK(ABT_xstream_set_main_sched_basic(
            xs, ABT_SCHED_BASIC, 1 + (int)((id + i) & 1), ps));
        AT_CHECK_OK(ABT_self_yield());
    }
    atomic_fetch_add(&own_bad, -1);
    /* Every pool served again before leaving. */
    ABT_xstream xs;
    AT_CHECK_OK(ABT_self_get_xstream(&xs));
    AT_CHECK_OK(ABT_xstream_set_main_sched_basic(xs, ABT_SCHED_BASIC,
                                                 OWN_POOLS, own_pools));
}

static void test_sched_set_main_own_stream(void)
{
    AT_OK(ABT_init(0, NULL));
    for (int i = 0; i < OWN_POOLS; i++)
        AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC,
                                    ABT_FALSE, &own_pools[i]));
    ABT_xstream one;
    AT_OK(ABT_xstream_create_basic(ABT_SCHED_BASIC, 1, &own_pools[0],
                                   ABT_SCHED_CONFIG_NULL, &one));
    ABT_thread t1;
    AT_OK(ABT_thread_create(own_pools[0], own_switch_ult, NULL,
                            ABT_THREAD_ATTR_NULL, &t1));
    AT_OK(ABT_thread_free(&t1));
    AT_OK(ABT_xstream_free(&one));

    atomic_store(&own_bad, OWN_ULTS);
    ABT_xstream xs[OWN_STREAMS];
    for (int i = 0; i < OWN_STREAMS; i++)
        AT_OK(ABT_xstream_create_basic(ABT_SCHED_BASIC, OWN_POOLS, own_pools,
                                       ABT_SCHED_CONFIG_NULL, &xs[i]));
    ABT_thread t[OWN_ULTS];
    for (intptr_t i = 0; i < OWN_ULTS; i++)
        AT_OK(ABT_thread_create(own_pools[i % OWN_POOLS], own_churn_ult,
                                (void *)i, ABT_THREAD_ATTR_NULL, &t[i]));
    AT_OK(ABT_thread_free_many(OWN_ULTS, t));
    CU_ASSERT_EQUAL(atomic_load(&own_bad), 0);
    for (int i = 0; i < OWN_STREAMS; i++)
        AT_OK(ABT_xstream_free(&xs[i]));

    /* The primary's main ULT too: it stays on the primary, in the new
     * scheduler's pool. ABT_finalize gives the primary its first scheduler
     * back and frees the automatic ones, and their automatic pool. */
    ABT_pool auto_pool;
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_TRUE,
                                &auto_pool));
    ABT_xstream self;
    AT_OK(ABT_xstream_self(&self));
    AT_OK(ABT_xstream_set_main_sched_basic(self, ABT_SCHED_BASIC, 1,
                                           &auto_pool));
    CU_ASSERT_PTR_EQUAL(own_last_pool(), auto_pool);
    ABT_bool primary = ABT_FALSE;
    AT_OK(ABT_self_on_primary_xstream(&primary));
    CU_ASSERT_EQUAL(primary, ABT_TRUE);
    for (int i = 0; i < OWN_POOLS; i++)
        AT_OK(ABT_pool_free(&own_pools[i]));
    AT_OK(ABT_finalize());
}

/* Main schedulers replaced over and over by ULTs of the stream they run
 * on, the primary's main ULT among them, each new one taking a changing
 * subset of three pools: a predefined one, or the program's own, which
 * pops units and runs them with ABT_self_schedule or
 * ABT_xstream_run_unit. A second stream's scheduler keeps all three pools
 * served. The main ULT runs only on the primary: each time the primary
 * gets a scheduler that does not pop the main ULT's pool, libcoexec
 * re-homes it to one that does, and the layer's record follows pops, so
 * ABT_self_schedule(t, ABT_POOL_NULL) gives it that home back. Before,
 * the main ULT was left in a pool the primary no longer popped (the test
 * hangs; Argobots' xstream_set_main_sched did, in 1 run of 8). */
enum { CHURN_POOLS = 3 };
static ABT_pool churn_pools[CHURN_POOLS];

static int churn_init(ABT_sched sched, ABT_sched_config config)
{
    (void)sched;
    (void)config;
    return ABT_SUCCESS;
}

static void churn_run(ABT_sched sched)
{
    int n = 0;
    AT_CHECK_OK(ABT_sched_get_num_pools(sched, &n));
    ABT_pool pools[CHURN_POOLS];
    AT_CHECK_OK(ABT_sched_get_pools(sched, n, 0, pools));
    for (unsigned round = 0;; round++) {
        for (int i = 0; i < n; i++) {
            ABT_unit unit;
            AT_CHECK_OK(ABT_pool_pop(pools[i], &unit));
            if (unit == ABT_UNIT_NULL)
                continue;
            ABT_thread t;
            AT_CHECK_OK(ABT_unit_get_thread(unit, &t));
            if (round % 3 == 0)
                AT_CHECK_OK(ABT_xstream_run_unit(unit, pools[i]));
            else
                AT_CHECK_OK(ABT_self_schedule(
                    t, round % 3 == 1 ? ABT_POOL_NULL : pools[i]));
        }
        if (round % 8 == 7) {
            AT_CHECK_OK(ABT_xstream_check_events(sched));
            ABT_bool stop = ABT_FALSE;
            AT_CHECK_OK(ABT_sched_has_to_stop(sched, &stop));
            if (stop)
                return;
        }
    }
}

static int churn_free(ABT_sched sched)
{
    (void)sched;
    return ABT_SUCCESS;
}

static void churn_switch(int iter)
{
    ABT_pool pools[CHURN_POOLS];
    int n = 1 + iter % CHURN_POOLS;
    for (int i = 0; i < n; i++)
        pools[i] = churn_pools[(iter + i) % CHURN_POOLS];
    ABT_xstream self;
    AT_CHECK_OK(ABT_self_get_xstream(&self));
    if (iter % 2) {
        AT_CHECK_OK(ABT_xstream_set_main_sched_basic(self, ABT_SCHED_DEFAULT,
                                                     n, pools));
        return;
    }
    ABT_sched_def def = {.type = ABT_SCHED_TYPE_ULT,
                         .init = churn_init,
                         .run = churn_run,
                         .free = churn_free,
                         .get_migr_pool = NULL};
    ABT_sched_config config;
    AT_CHECK_OK(ABT_sched_config_create(&config, ABT_sched_config_automatic,
                                        1, ABT_sched_config_var_end));
    ABT_sched sched;
    AT_CHECK_OK(ABT_sched_create(&def, n, pools, config, &sched));
    AT_CHECK_OK(ABT_sched_config_free(&config));
    AT_CHECK_OK(ABT_xstream_set_main_sched(self, sched));
}

static void churn_ult(void *arg)
{
    int iters = (int)(intptr_t)arg;
    for (int i = 0; i < iters; i++) {
        int rank = -1;
        AT_CHECK_OK(ABT_self_get_xstream_rank(&rank));
        if (rank == 0) /* the second stream keeps its all-pools one */
            churn_switch(i);
        AT_CHECK_OK(ABT_self_yield());
    }
}

static void test_sched_main_churn(void)
{
    int rounds = (int)ch_iters(6, 2), iters = (int)ch_iters(60, 12);
    for (int r = 0; r < rounds; r++) {
        AT_OK(ABT_init(0, NULL));
        ABT_xstream self, other;
        AT_OK(ABT_xstream_self(&self));
        AT_OK(ABT_xstream_get_main_pools(self, 1, &churn_pools[0]));
        for (int i = 1; i < CHURN_POOLS; i++)
            AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC,
                                        ABT_TRUE, &churn_pools[i]));
        AT_OK(ABT_xstream_create_basic(ABT_SCHED_DEFAULT, CHURN_POOLS,
                                       churn_pools, ABT_SCHED_CONFIG_NULL,
                                       &other));
        enum { N = 6 };
        ABT_thread t[N];
        for (int i = 0; i < N; i++)
            AT_OK(ABT_thread_create(churn_pools[i % CHURN_POOLS], churn_ult,
                                    (void *)(intptr_t)iters,
                                    ABT_THREAD_ATTR_NULL, &t[i]));
        for (int i = 0; i < iters; i++) {
            churn_switch(i);
            AT_OK(ABT_self_yield());
        }
        /* Back to a scheduler of every pool before the joins. */
        AT_OK(ABT_xstream_set_main_sched_basic(self, ABT_SCHED_DEFAULT,
                                               CHURN_POOLS, churn_pools));
        AT_OK(ABT_thread_free_many(N, t));
        AT_OK(ABT_xstream_join(other));
        AT_OK(ABT_xstream_free(&other));
        AT_OK(ABT_finalize());
    }
}

/* A stacked scheduler (ABT_pool_add_sched) cannot be freed while it is in
 * a pool or runs (ABT_ERR_SCHED, and it stays usable), and can once it
 * has finished: ABT_sched_finish, its pool drained, its unit ended. Each
 * of its units ran once; its pool outlives it. Under the sanitizers,
 * nothing of it leaks. */
static atomic_int stacked_runs;

static void stacked_unit(void *arg)
{
    (void)arg;
    atomic_fetch_add(&stacked_runs, 1);
}

/* A BASIC scheduler that is not automatic, over a new pool of its own. */
static void stacked_sched_new(ABT_pool *p, ABT_sched *s)
{
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_FALSE,
                                p));
    ABT_sched_config config;
    AT_OK(ABT_sched_config_create(&config, ABT_sched_config_automatic,
                                  ABT_FALSE, ABT_sched_config_var_end));
    AT_OK(ABT_sched_create_basic(ABT_SCHED_BASIC, 1, p, config, s));
    AT_OK(ABT_sched_config_free(&config));
}

static void stacked_units(ABT_pool p, int n)
{
    for (int i = 0; i < n; i++)
        AT_OK(ABT_thread_create(p, stacked_unit, NULL, ABT_THREAD_ATTR_NULL,
                                NULL));
}

static void test_sched_stacked_free(void)
{
    AT_OK(ABT_init(0, NULL));
    enum { UNITS = 8, ROUNDS = 3 };
    for (int round = 0; round < ROUNDS; round++) {
        atomic_store(&stacked_runs, 0);
        ABT_pool p;
        ABT_sched s;
        stacked_sched_new(&p, &s);
        stacked_units(p, UNITS);
        AT_OK(ABT_pool_add_sched(at_main_pool(), s));
        /* Stacked in the primary's pool: not to be freed, nor stacked
         * twice. */
        CU_ASSERT_EQUAL(ABT_sched_free(&s), ABT_ERR_SCHED);
        CU_ASSERT_PTR_NOT_NULL(s);
        CU_ASSERT_EQUAL(ABT_pool_add_sched(at_main_pool(), s),
                        ABT_ERR_INV_SCHED);
        AT_OK(ABT_sched_finish(s));
        /* The main ULT yields: the primary runs the stacked scheduler,
         * which drains its pool and ends. */
        double t0 = ch_now();
        int rc;
        while ((rc = ABT_sched_free(&s)) == ABT_ERR_SCHED &&
               ch_now() - t0 < CH_WAIT_LIMIT_S)
            AT_OK(ABT_self_yield());
        AT_OK(rc);
        CU_ASSERT_PTR_EQUAL(s, ABT_SCHED_NULL);
        CH_ASSERT_EQ(atomic_load(&stacked_runs), UNITS);
        AT_OK(ABT_pool_free(&p));
    }
    AT_OK(ABT_finalize());
}

/* Tries op (an ABT call on the stacked scheduler s) until it no longer
 * answers ABT_ERR_INV_SCHED, yielding so that the primary runs s to its
 * end; returns the last answer. */
#define AT_UNTIL_FINISHED(rc, op)                                              \
    do {                                                                       \
        double t0_ = ch_now();                                                 \
        while (((rc) = (op)) == ABT_ERR_INV_SCHED &&                           \
               ch_now() - t0_ < CH_WAIT_LIMIT_S)                               \
            AT_OK(ABT_self_yield());                                           \
    } while (0)

/* A scheduler stacked, finished and stacked again, then made a stream's
 * main scheduler: free again once it has finished (as in Argobots), never
 * while it is in the pool or runs. */
static void test_sched_stacked_reuse(void)
{
    AT_OK(ABT_init(0, NULL));
    enum { UNITS = 8, ROUNDS = 3 };
    atomic_store(&stacked_runs, 0);
    ABT_pool p;
    ABT_sched s;
    stacked_sched_new(&p, &s);
    int rc;
    for (int round = 0; round < ROUNDS; round++) {
        stacked_units(p, UNITS);
        /* From the second round on, the last stacking may still run. */
        AT_UNTIL_FINISHED(rc, ABT_pool_add_sched(at_main_pool(), s));
        AT_OK(rc);
        /* In the pool or running: not a second time, nor a main one. */
        CU_ASSERT_EQUAL(ABT_pool_add_sched(at_main_pool(), s),
                        ABT_ERR_INV_SCHED);
        AT_OK(ABT_sched_finish(s));
    }
    /* Once finished, a stream's main scheduler. */
    ABT_xstream x = ABT_XSTREAM_NULL;
    AT_UNTIL_FINISHED(rc, ABT_xstream_create(s, &x));
    AT_OK(rc);
    CH_ASSERT_EQ(atomic_load(&stacked_runs), UNITS * ROUNDS);
    /* Main of a stream: neither stacked nor freed. */
    CU_ASSERT_EQUAL(ABT_pool_add_sched(at_main_pool(), s), ABT_ERR_INV_SCHED);
    CU_ASSERT_EQUAL(ABT_sched_free(&s), ABT_ERR_SCHED);
    stacked_units(p, 1);
    AT_OK(ABT_xstream_free(&x));
    CH_ASSERT_EQ(atomic_load(&stacked_runs), UNITS * ROUNDS + 1);
    AT_OK(ABT_sched_free(&s));
    AT_OK(ABT_pool_free(&p));
    AT_OK(ABT_finalize());
}

/* An automatic scheduler stacked in a pool is freed, with its automatic
 * pools, once it has finished (Argobots frees it as it ends; here, at the
 * next creation or stacking of a scheduler). */
static void test_sched_stacked_automatic(void)
{
    AT_OK(ABT_init(0, NULL));
    enum { UNITS = 8, ROUNDS = 4 };
    for (int round = 0; round < ROUNDS; round++) {
        atomic_store(&stacked_runs, 0);
        ABT_sched s;
        AT_OK(ABT_sched_create_basic(ABT_SCHED_BASIC, 0, NULL,
                                     ABT_SCHED_CONFIG_NULL, &s));
        ABT_pool p;
        AT_OK(ABT_sched_get_pools(s, 1, 0, &p));
        stacked_units(p, UNITS);
        AT_OK(ABT_pool_add_sched(at_main_pool(), s));
        AT_OK(ABT_sched_finish(s));
        /* A scheduler made and freed now and then: the creation frees the
         * stacked one once it has finished. */
        int n = 0, rc;
        double t0 = ch_now();
        while ((rc = ABT_sched_get_num_pools(s, &n)) == ABT_SUCCESS &&
               ch_now() - t0 < CH_WAIT_LIMIT_S) {
            AT_OK(ABT_self_yield());
            ABT_sched other;
            AT_OK(ABT_sched_create_basic(ABT_SCHED_BASIC, 0, NULL,
                                         ABT_SCHED_CONFIG_NULL, &other));
            AT_OK(ABT_sched_free(&other));
        }
        CU_ASSERT_EQUAL(rc, ABT_ERR_INV_SCHED);
        CH_ASSERT_EQ(atomic_load(&stacked_runs), UNITS);
        size_t size = 0;
        CU_ASSERT_EQUAL(ABT_pool_get_total_size(p, &size), ABT_ERR_INV_POOL);
    }
    AT_OK(ABT_finalize());
}

static const ch_test_t sched_tests[] = {
    {"stacked_free", test_sched_stacked_free},
    {"stacked_reuse", test_sched_stacked_reuse},
    {"stacked_automatic", test_sched_stacked_automatic},
    {"predef", test_sched_predef},
    {"config", test_sched_config},
    {"set_main", test_sched_set_main},
    {"set_main_from_own_stream", test_sched_set_main_own_stream},
    {"main_churn", test_sched_main_churn},
    {NULL, NULL}};

/* ---- user-defined pool and scheduler ------------------------------------------ */

/* A LIFO stack of units under a mutex: the program's own pool. */
typedef struct up_unit {
    struct up_unit *next;
    ABT_thread thread;
} up_unit;

typedef struct {
    pthread_mutex_t lock;
    up_unit *top;
    size_t n;
    int pushes;
} up_pool;

static ABT_unit_type up_get_type(ABT_unit u)
{
    return ABT_UNIT_TYPE_THREAD;
}
static ABT_thread up_get_thread(ABT_unit u)
{
    return ((up_unit *)u)->thread;
}
static ABT_bool up_is_in_pool(ABT_unit u)
{
    return ABT_FALSE;
}
static atomic_int up_units_live; /* made by up_create, not yet freed */

static ABT_unit up_create(ABT_thread t)
{
    up_unit *u = calloc(1, sizeof(*u));
    u->thread = t;
    atomic_fetch_add(&up_units_live, 1);
    return (ABT_unit)u;
}
static void up_free(ABT_unit *u)
{
    free(*u);
    *u = ABT_UNIT_NULL;
    atomic_fetch_sub(&up_units_live, 1);
}
static int up_init(ABT_pool pool, ABT_pool_config config)
{
    up_pool *p = calloc(1, sizeof(*p));
    pthread_mutex_init(&p->lock, NULL);
    return ABT_pool_set_data(pool, p);
}
static up_pool *up_of(ABT_pool pool)
{
    void *d = NULL;
    (void)ABT_pool_get_data(pool, &d);
    return d;
}
static size_t up_size(ABT_pool pool)
{
    return up_of(pool)->n;
}
static void up_push(ABT_pool pool, ABT_unit unit)
{
    up_pool *p = up_of(pool);
    up_unit *u = (up_unit *)unit;
    pthread_mutex_lock(&p->lock);
    u->next = p->top;
    p->top = u;
    p->n++;
    p->pushes++;
    pthread_mutex_unlock(&p->lock);
}
static ABT_unit up_pop(ABT_pool pool)
{
    up_pool *p = up_of(pool);
    pthread_mutex_lock(&p->lock);
    up_unit *u = p->top;
    if (u) {
        p->top = u->next;
        p->n--;
    }
    pthread_mutex_unlock(&p->lock);
    return u ? (ABT_unit)u : ABT_UNIT_NULL;
}
static int up_fini(ABT_pool pool)
{
    up_pool *p = up_of(pool);
    pthread_mutex_destroy(&p->lock);
    free(p);
    return ABT_SUCCESS;
}

/* The program's pool, as an ABT_pool_def. */
static ABT_pool_def up_def(void)
{
    ABT_pool_def def = {
        .access = ABT_POOL_ACCESS_MPMC,
        .u_get_type = up_get_type,
        .u_get_thread = up_get_thread,
        .u_is_in_pool = up_is_in_pool,
        .u_create_from_thread = up_create,
        .u_free = up_free,
        .p_init = up_init,
        .p_get_size = up_size,
        .p_push = up_push,
        .p_pop = up_pop,
        .p_free = up_fini,
    };
    return def;
}

/* The scheduler: pops its one pool, runs the unit, checks for the end. */
static atomic_int sched_runs;

static void us_run(ABT_sched sched)
{
    ABT_pool pool;
    AT_CHECK_OK(ABT_sched_get_pools(sched, 1, 0, &pool));
    for (unsigned n = 0;; n++) {
        ABT_unit unit;
        AT_CHECK_OK(ABT_pool_pop(pool, &unit));
        if (unit != ABT_UNIT_NULL) {
            atomic_fetch_add(&sched_runs, 1);
            AT_CHECK_OK(ABT_xstream_run_unit(unit, pool));
        }
        if ((n & 15) == 0) {
            ABT_bool stop = ABT_FALSE;
            AT_CHECK_OK(ABT_sched_has_to_stop(sched, &stop));
            if (stop)
                break;
            AT_CHECK_OK(ABT_xstream_check_events(sched));
        }
    }
}

static int order_pos;
static int lifo_order[4];

static void record_ult(void *arg)
{
    lifo_order[order_pos++] = (int)(intptr_t)arg;
}

static void test_user_pool_sched(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool_def def = up_def();
    ABT_pool pool;
    AT_OK(ABT_pool_create(&def, ABT_POOL_CONFIG_NULL, &pool));
    /* Four ULTs queued before any stream runs the pool: LIFO order. */
    ABT_thread t[4];
    order_pos = 0;
    for (int i = 0; i < 4; i++)
        AT_OK(ABT_thread_create(pool, record_ult, (void *)(intptr_t)i,
                                ABT_THREAD_ATTR_NULL, &t[i]));
    size_t n = 0;
    AT_OK(ABT_pool_get_size(pool, &n));
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT_EQUAL(up_of(pool)->pushes, 4);
    ABT_sched_def sdef = {.type = ABT_SCHED_TYPE_ULT, .run = us_run};
    ABT_sched sched;
    AT_OK(ABT_sched_create(&sdef, 1, &pool, ABT_SCHED_CONFIG_NULL, &sched));
    atomic_store(&sched_runs, 0);
    ABT_xstream xs;
    AT_OK(ABT_xstream_create(sched, &xs));
    AT_OK(ABT_thread_free_many(4, t));
    CU_ASSERT_EQUAL(order_pos, 4);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(lifo_order[i], 3 - i);
    CU_ASSERT_EQUAL(atomic_load(&sched_runs), 4);
    AT_OK(ABT_xstream_free(&xs));
    AT_OK(ABT_sched_free(&sched));
    AT_OK(ABT_pool_free(&pool));
    AT_OK(ABT_finalize());
}

/* Every stream, the primary included, runs a user scheduler over the same
 * two pools, a built-in FIFO and a user-defined LIFO; the scheduler moves
 * what it pops into the other pool or runs it there, the main ULT among
 * them. The ULTs change their own pool as they go; main joins them (and
 * waits for a unit a scheduler holds), then the streams that share main's
 * pool. Every ULT runs to its end, once, and every unit the user pool made
 * is freed. */
enum { MIX_ULTS = 60, MIX_YIELDS = 9 };
static ABT_pool mix_pools[2];
static atomic_int mix_done;

static void mix_run(ABT_sched sched)
{
    for (unsigned n = 0;; n++) {
        ABT_unit unit;
        ABT_pool from = mix_pools[n & 1], to = mix_pools[(n >> 1) & 1];
        AT_CHECK_OK(ABT_pool_pop(from, &unit));
        if (unit != ABT_UNIT_NULL) {
            if (n % 3 == 0)
                AT_CHECK_OK(ABT_pool_push(to, unit));
            else
                AT_CHECK_OK(ABT_xstream_run_unit(unit, to));
        }
        if ((n & 31) == 0) {
            ABT_bool stop = ABT_FALSE;
            AT_CHECK_OK(ABT_sched_has_to_stop(sched, &stop));
            if (stop)
                break;
            AT_CHECK_OK(ABT_xstream_check_events(sched));
        }
    }
}

static void mix_ult(void *arg)
{
    for (int i = 0; i < MIX_YIELDS; i++) {
        if (i % 3 == 0)
            AT_CHECK_OK(ABT_self_set_associated_pool(mix_pools[(i / 3 + (intptr_t)arg) & 1]));
        AT_CHECK_OK(ABT_thread_yield());
    }
    atomic_fetch_add(&mix_done, 1);
}

static void test_user_sched_mixed_pools(void)
{
    AT_OK(ABT_init(0, NULL));
    atomic_store(&up_units_live, 0);
    atomic_store(&mix_done, 0);
    ABT_pool_def def = up_def();
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_FALSE,
                                &mix_pools[0]));
    AT_OK(ABT_pool_create(&def, ABT_POOL_CONFIG_NULL, &mix_pools[1]));
    ABT_sched_def sdef = {.type = ABT_SCHED_TYPE_ULT, .run = mix_run};
    ABT_sched scheds[3];
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_sched_create(&sdef, 2, mix_pools, ABT_SCHED_CONFIG_NULL,
                               &scheds[i]));
    ABT_xstream xs[3];
    AT_OK(ABT_xstream_self(&xs[0]));
    for (int i = 1; i < 3; i++)
        AT_OK(ABT_xstream_create(scheds[i], &xs[i]));
    AT_OK(ABT_xstream_set_main_sched(xs[0], scheds[0]));
    for (int round = 0; round < 3; round++) {
        ABT_thread t[MIX_ULTS];
        for (intptr_t i = 0; i < MIX_ULTS; i++)
            AT_OK(ABT_thread_create(mix_pools[i & 1], mix_ult, (void *)i,
                                    ABT_THREAD_ATTR_NULL, &t[i]));
        for (int i = 0; i < MIX_ULTS; i++)
            AT_OK(ABT_thread_join(t[i]));
        AT_OK(ABT_thread_free_many(MIX_ULTS, t));
    }
    CU_ASSERT_EQUAL(atomic_load(&mix_done), 3 * MIX_ULTS);
    /* Main leaves the user pool (its unit there is freed), then joins the
     * streams, which serve its pool too. */
    AT_OK(ABT_self_set_associated_pool(mix_pools[0]));
    AT_OK(ABT_thread_yield());
    for (int i = 1; i < 3; i++)
        AT_OK(ABT_xstream_free(&xs[i]));
    for (int i = 1; i < 3; i++)
        AT_OK(ABT_sched_free(&scheds[i]));
    /* The primary's scheduler still moves main between the two pools;
     * back under a default scheduler, main leaves them, and they and the
     * scheduler can go (the user pool's units with them). */
    CU_ASSERT(atomic_load(&up_units_live) <= 1);
    AT_OK(ABT_xstream_set_main_sched_basic(xs[0], ABT_SCHED_DEFAULT, 0, NULL));
    AT_OK(ABT_sched_free(&scheds[0]));
    for (int i = 0; i < 2; i++)
        AT_OK(ABT_pool_free(&mix_pools[i]));
    CU_ASSERT_EQUAL(atomic_load(&up_units_live), 0);
    AT_OK(ABT_finalize());
}

/* User schedulers that yield, wait on a barrier and lock a mutex in their
 * run function before they schedule (Argobots runs schedulers as ULTs):
 * the waits complete while each scheduler keeps running its pool, where a
 * ULT queued before the barrier also runs. */
enum { BLK_STREAMS = 3, BLK_LOCKS = 20 };
static ABT_barrier blk_barrier;
static ABT_mutex blk_mutex;
static int blk_val;
static atomic_int blk_ults;

static void blk_ult(void *arg)
{
    (void)arg;
    atomic_fetch_add(&blk_ults, 1);
}

static void blk_run(ABT_sched sched)
{
    ABT_pool pool;
    AT_CHECK_OK(ABT_sched_get_pools(sched, 1, 0, &pool));
    AT_CHECK_OK(ABT_thread_yield());
    AT_CHECK_OK(ABT_thread_create(pool, blk_ult, NULL, ABT_THREAD_ATTR_NULL,
                                  NULL));
    AT_CHECK_OK(ABT_barrier_wait(blk_barrier));
    for (int i = 0; i < BLK_LOCKS; i++) {
        AT_CHECK_OK(ABT_mutex_lock(blk_mutex));
        blk_val++;
        AT_CHECK_OK(ABT_mutex_unlock(blk_mutex));
    }
    AT_CHECK_OK(ABT_barrier_wait(blk_barrier));
    for (;;) {
        ABT_unit unit;
        AT_CHECK_OK(ABT_pool_pop(pool, &unit));
        if (unit != ABT_UNIT_NULL)
            AT_CHECK_OK(ABT_xstream_run_unit(unit, pool));
        ABT_bool stop = ABT_FALSE;
        AT_CHECK_OK(ABT_sched_has_to_stop(sched, &stop));
        if (stop)
            break;
        AT_CHECK_OK(ABT_xstream_check_events(sched));
    }
}

static void test_user_sched_blocks_in_run(void)
{
    AT_OK(ABT_init(0, NULL));
    blk_val = 0;
    atomic_store(&blk_ults, 0);
    AT_OK(ABT_barrier_create(BLK_STREAMS, &blk_barrier));
    AT_OK(ABT_mutex_create(&blk_mutex));
    ABT_sched_def sdef = {.type = ABT_SCHED_TYPE_ULT, .run = blk_run};
    ABT_sched scheds[BLK_STREAMS];
    ABT_xstream xs[BLK_STREAMS];
    for (int i = 0; i < BLK_STREAMS; i++) {
        AT_OK(ABT_sched_create(&sdef, 0, NULL, ABT_SCHED_CONFIG_NULL,
                               &scheds[i]));
        AT_OK(ABT_xstream_create(scheds[i], &xs[i]));
    }
    for (int i = 0; i < BLK_STREAMS; i++)
        AT_OK(ABT_xstream_free(&xs[i]));
    CU_ASSERT_EQUAL(blk_val, BLK_STREAMS * BLK_LOCKS);
    CU_ASSERT_EQUAL(atomic_load(&blk_ults), BLK_STREAMS);
    for (int i = 0; i < BLK_STREAMS; i++)
        AT_OK(ABT_sched_free(&scheds[i]));
    AT_OK(ABT_mutex_free(&blk_mutex));
    AT_OK(ABT_barrier_free(&blk_barrier));
    AT_OK(ABT_finalize());
}

/* An ABT_pool_user_def pool with every optional callback: a FIFO ring
 * that logs which callback each ABT call reached, with its context. */
#define CB_RING 16
enum cb_op { CB_PUSH, CB_POP, CB_POP_WAIT, CB_POP_MANY, CB_PUSH_MANY,
             CB_PRINT_ALL, CB_CREATE_UNIT, CB_FREE_UNIT, CB_OPS };

static struct {
    ABT_unit ring[CB_RING];
    unsigned head, tail; /* taken at head, queued at tail */
    int calls[CB_OPS];
    enum cb_op last_op;
    ABT_pool_context last_ctx;
    ABT_pool_context last_push_ctx;
    size_t last_n;   /* pop_many's max, push_many's count */
    double last_secs;
} cb;

static void cb_log(enum cb_op op, ABT_pool_context ctx)
{
    cb.calls[op]++;
    cb.last_op = op;
    cb.last_ctx = ctx;
}

static ABT_unit cb_take(void)
{
    return cb.head == cb.tail ? ABT_UNIT_NULL : cb.ring[cb.head++ % CB_RING];
}

static void cb_put(ABT_unit u)
{
    CH_CHECK(cb.tail - cb.head < CB_RING);
    cb.ring[cb.tail++ % CB_RING] = u;
}

/* Units are the ULT handles themselves, tagged so a unit is never taken
 * for its ULT by mistake. */
static ABT_unit cb_create_unit(ABT_pool pool, ABT_thread t)
{
    (void)pool;
    cb_log(CB_CREATE_UNIT, 0);
    return (ABT_unit)((uintptr_t)t | 1);
}
static ABT_thread cb_thread(ABT_unit u)
{
    return u ? (ABT_thread)((uintptr_t)u & ~(uintptr_t)1) : ABT_THREAD_NULL;
}
static void cb_free_unit(ABT_pool pool, ABT_unit u)
{
    (void)pool;
    (void)u;
    cb_log(CB_FREE_UNIT, 0);
}
static ABT_bool cb_is_empty(ABT_pool pool)
{
    (void)pool;
    return cb.head == cb.tail ? ABT_TRUE : ABT_FALSE;
}
static size_t cb_get_size(ABT_pool pool)
{
    (void)pool;
    return cb.tail - cb.head;
}
static void cb_push(ABT_pool pool, ABT_unit u, ABT_pool_context ctx)
{
    (void)pool;
    cb_log(CB_PUSH, ctx);
    cb.last_push_ctx = ctx;
    cb_put(u);
}
static ABT_thread cb_pop(ABT_pool pool, ABT_pool_context ctx)
{
    (void)pool;
    cb_log(CB_POP, ctx);
    return cb_thread(cb_take());
}
static ABT_thread cb_pop_wait(ABT_pool pool, double secs, ABT_pool_context ctx)
{
    (void)pool;
    cb_log(CB_POP_WAIT, ctx);
    cb.last_secs = secs;
    return cb_thread(cb_take());
}
static void cb_pop_many(ABT_pool pool, ABT_thread *out, size_t max,
                        size_t *num, ABT_pool_context ctx)
{
    (void)pool;
    cb_log(CB_POP_MANY, ctx);
    cb.last_n = max;
    size_t n = 0;
    ABT_unit u;
    while (n < max && (u = cb_take()) != ABT_UNIT_NULL)
        out[n++] = cb_thread(u);
    *num = n;
}
static void cb_push_many(ABT_pool pool, const ABT_unit *units, size_t n,
                         ABT_pool_context ctx)
{
    (void)pool;
    cb_log(CB_PUSH_MANY, ctx);
    cb.last_n = n;
    for (size_t i = 0; i < n; i++)
        cb_put(units[i]);
}
static void cb_count_print(void *arg, ABT_thread t);
static void *cb_print_arg; /* what ABT_pool_print_all_threads was given */

static void cb_print_all(ABT_pool pool, void *arg,
                         void (*print)(void *, ABT_thread))
{
    (void)pool;
    cb_log(CB_PRINT_ALL, 0);
    /* ABT_pool_print_all_threads: the caller's own arguments, as Argobots
     * hands them (ABT_pool_print_all's go through a translation). */
    if (cb_print_arg)
        CH_CHECK(arg == cb_print_arg && print == cb_count_print);
    for (unsigned i = cb.head; i != cb.tail; i++)
        print(arg, cb_thread(cb.ring[i % CB_RING]));
}

static void cb_count_print(void *arg, ABT_thread t)
{
    CH_CHECK(t != ABT_THREAD_NULL);
    ++*(int *)arg;
}

static ABT_pool cb_pool_create(void)
{
    ABT_pool_user_def def;
    AT_OK(ABT_pool_user_def_create(cb_create_unit, cb_free_unit, cb_is_empty,
                                   cb_pop, cb_push, &def));
    AT_OK(ABT_pool_user_def_set_get_size(def, cb_get_size));
    AT_OK(ABT_pool_user_def_set_pop_wait(def, cb_pop_wait));
    AT_OK(ABT_pool_user_def_set_pop_many(def, cb_pop_many));
    AT_OK(ABT_pool_user_def_set_push_many(def, cb_push_many));
    AT_OK(ABT_pool_user_def_set_print_all(def, cb_print_all));
    ABT_pool pool;
    AT_OK(ABT_pool_create(def, ABT_POOL_CONFIG_NULL, &pool));
    AT_OK(ABT_pool_user_def_free(&def));
    return pool;
}

/* One call reached exactly the callback op, once, with context ctx. */
#define CB_EXPECT(before, op, ctx)                                             \
    do {                                                                       \
        int total_ = 0;                                                        \
        for (int k_ = 0; k_ < CB_OPS; k_++)                                    \
            total_ += cb.calls[k_] - (before)[k_];                             \
        CU_ASSERT_EQUAL(total_, 1);                                            \
        CU_ASSERT_EQUAL(cb.calls[op] - (before)[op], 1);                       \
        CU_ASSERT_EQUAL(cb.last_ctx, (ABT_pool_context)(ctx));                 \
    } while (0)
#define CB_SNAP(into) memcpy((into), cb.calls, sizeof cb.calls)

static void noop_ult(void *arg)
{
    ++*(int *)arg;
}

/* Runs whatever the pool holds on this ULT's stream until it is empty. */
static void cb_drain(ABT_pool pool)
{
    for (;;) {
        ABT_thread t;
        AT_OK(ABT_pool_pop_thread(pool, &t));
        if (t == ABT_THREAD_NULL)
            return;
        AT_OK(ABT_self_schedule(t, pool));
    }
}

/* Each ABT_pool call reaches the one callback Argobots documents for it,
 * once, with the caller's context, even on an empty pool. */
static void test_user_def_calls(void)
{
    AT_OK(ABT_init(0, NULL));
    memset(&cb, 0, sizeof cb);
    ABT_pool pool = cb_pool_create();
    const ABT_pool_context ctx = (ABT_pool_context)0x7000000;
    int before[CB_OPS], runs = 0;
    ABT_thread t, ts[4];
    size_t n = 9;

    CB_SNAP(before);
    AT_OK(ABT_pool_pop_thread_ex(pool, &t, ctx));
    CU_ASSERT_EQUAL(t, ABT_THREAD_NULL);
    CB_EXPECT(before, CB_POP, ctx);
    CB_SNAP(before);
    AT_OK(ABT_pool_pop_wait_thread_ex(pool, &t, 0.25, ctx + 1));
    CU_ASSERT_EQUAL(t, ABT_THREAD_NULL);
    CB_EXPECT(before, CB_POP_WAIT, ctx + 1);
    CU_ASSERT_EQUAL(cb.last_secs, 0.25);
    CB_SNAP(before);
    AT_OK(ABT_pool_pop_threads_ex(pool, ts, 4, &n, ctx + 2));
    CU_ASSERT_EQUAL(n, 0);
    CB_EXPECT(before, CB_POP_MANY, ctx + 2);

    /* Three ULTs: each made its unit, then was pushed as CREATE. */
    ABT_thread u[3];
    for (int i = 0; i < 3; i++) {
        CB_SNAP(before);
        AT_OK(ABT_thread_create(pool, noop_ult, &runs, ABT_THREAD_ATTR_NULL,
                                &u[i]));
        CU_ASSERT_EQUAL(cb.calls[CB_CREATE_UNIT] - before[CB_CREATE_UNIT], 1);
        CU_ASSERT_EQUAL(cb.calls[CB_PUSH] - before[CB_PUSH], 1);
        CU_ASSERT_EQUAL(cb.last_ctx, ABT_POOL_CONTEXT_OP_THREAD_CREATE);
    }
    /* pop_many once for two, push_many once to put them back. */
    CB_SNAP(before);
    AT_OK(ABT_pool_pop_threads_ex(pool, ts, 2, &n, ctx + 3));
    CB_EXPECT(before, CB_POP_MANY, ctx + 3);
    CU_ASSERT_EQUAL(cb.last_n, 2);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT(ts[0] == u[0] && ts[1] == u[1]);
    CB_SNAP(before);
    AT_OK(ABT_pool_push_threads_ex(pool, ts, 2, ctx + 4));
    CB_EXPECT(before, CB_PUSH_MANY, ctx + 4);
    CU_ASSERT_EQUAL(cb.last_n, 2);
    size_t size = 0;
    AT_OK(ABT_pool_get_size(pool, &size));
    CU_ASSERT_EQUAL(size, 3);
    int printed = 0;
    cb_print_arg = &printed;
    CB_SNAP(before);
    AT_OK(ABT_pool_print_all_threads(pool, &printed, cb_count_print));
    CB_EXPECT(before, CB_PRINT_ALL, 0);
    CU_ASSERT_EQUAL(printed, 3);
    /* As units: each is the pool's own unit of the thread. */
    cb_print_arg = NULL;
    struct unit_log ul = {0};
    CB_SNAP(before);
    AT_OK(ABT_pool_print_all(pool, &ul, log_unit));
    CB_EXPECT(before, CB_PRINT_ALL, 0);
    CU_ASSERT_EQUAL(ul.n, 3);
    for (int i = 0; i < ul.n && i < 8; i++) {
        ABT_thread th = ABT_THREAD_NULL;
        AT_OK(ABT_unit_get_thread(ul.u[i], &th));
        CU_ASSERT(th != ABT_THREAD_NULL);
    }
    /* FIFO: u[2] first now; a pop_wait takes it, a push gives it back. */
    CB_SNAP(before);
    AT_OK(ABT_pool_pop_wait_thread(pool, &t, 1.0));
    CB_EXPECT(before, CB_POP_WAIT, ABT_POOL_CONTEXT_OP_POOL_OTHER);
    CU_ASSERT(t == u[2]);
    CB_SNAP(before);
    AT_OK(ABT_pool_push_thread_ex(pool, t, ctx + 5));
    CB_EXPECT(before, CB_PUSH, ctx + 5);

    cb_drain(pool);
    CU_ASSERT_EQUAL(runs, 3);
    /* A revived ULT is pushed as REVIVE into the unit it has. */
    CB_SNAP(before);
    AT_OK(ABT_thread_revive(pool, noop_ult, &runs, &u[0]));
    CB_EXPECT(before, CB_PUSH, ABT_POOL_CONTEXT_OP_THREAD_REVIVE);
    cb_drain(pool);
    CU_ASSERT_EQUAL(runs, 4);
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_thread_free(&u[i]));
    CU_ASSERT_EQUAL(cb.calls[CB_FREE_UNIT], cb.calls[CB_CREATE_UNIT]);
    CU_ASSERT_EQUAL(cb.head, cb.tail);
    AT_OK(ABT_pool_free(&pool));
    AT_OK(ABT_finalize());
}

/* A ULT of the pool: a yield pushes it as YIELD, a yield_to as YIELD_TO;
 * a create_to makes the child's unit without pushing the child and
 * pushes the caller as CREATE_TO. */
static ABT_pool cb_upool;
static int cb_child_runs;
static ABT_pool_context cb_seen[3];

static void cb_yielder(void *arg)
{
    (void)arg;
    AT_CHECK_OK(ABT_self_yield());
    cb_seen[0] = cb.last_push_ctx;
    ABT_thread child;
    int made = cb.calls[CB_CREATE_UNIT], pushed = cb.calls[CB_PUSH];
    AT_CHECK_OK(ABT_thread_create_to(cb_upool, noop_ult, &cb_child_runs,
                                     ABT_THREAD_ATTR_NULL, &child));
    CH_CHECK_EQ(cb_child_runs, 1);
    CH_CHECK_EQ(cb.calls[CB_CREATE_UNIT] - made, 1);
    CH_CHECK_EQ(cb.calls[CB_PUSH] - pushed, 1); /* ourselves only */
    cb_seen[1] = cb.last_push_ctx;
    ABT_thread other;
    AT_CHECK_OK(ABT_thread_create(cb_upool, noop_ult, &cb_child_runs,
                                  ABT_THREAD_ATTR_NULL, &other));
    ABT_thread popped;
    AT_CHECK_OK(ABT_pool_pop_thread(cb_upool, &popped));
    CH_CHECK(popped == other);
    AT_CHECK_OK(ABT_self_yield_to(other));
    cb_seen[2] = cb.last_push_ctx;
    CH_CHECK_EQ(cb_child_runs, 2);
    AT_CHECK_OK(ABT_thread_free(&child));
    AT_CHECK_OK(ABT_thread_free(&other));
}

static void test_user_def_unit_ops(void)
{
    AT_OK(ABT_init(0, NULL));
    memset(&cb, 0, sizeof cb);
    cb_upool = cb_pool_create();
    cb_child_runs = 0;
    ABT_thread t;
    AT_OK(ABT_thread_create(cb_upool, cb_yielder, NULL, ABT_THREAD_ATTR_NULL,
                            &t));
    cb_drain(cb_upool);
    ABT_thread_state st;
    AT_OK(ABT_thread_get_state(t, &st));
    CU_ASSERT_EQUAL(st, ABT_THREAD_STATE_TERMINATED);
    CU_ASSERT_EQUAL(cb_seen[0], ABT_POOL_CONTEXT_OP_THREAD_YIELD);
    CU_ASSERT_EQUAL(cb_seen[1], ABT_POOL_CONTEXT_OP_THREAD_CREATE_TO);
    CU_ASSERT_EQUAL(cb_seen[2], ABT_POOL_CONTEXT_OP_THREAD_YIELD_TO);
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(cb.calls[CB_FREE_UNIT], cb.calls[CB_CREATE_UNIT]);
    AT_OK(ABT_pool_free(&cb_upool));
    AT_OK(ABT_finalize());
}

/* The program's p_remove: takes unit out of the stack if it is there. */
static int up_remove(ABT_pool pool, ABT_unit unit)
{
    up_pool *p = up_of(pool);
    int rc = ABT_ERR_POOL;
    pthread_mutex_lock(&p->lock);
    for (up_unit **pp = &p->top; *pp; pp = &(*pp)->next) {
        if (*pp == (up_unit *)unit) {
            *pp = (*pp)->next;
            p->n--;
            rc = ABT_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

/* A pool of the program's definition def holding three new ULTs t[]. */
static ABT_pool def_pool_with_three(const ABT_pool_def *def, ABT_thread *t)
{
    ABT_pool pool = ABT_POOL_NULL;
    AT_OK(ABT_pool_create((ABT_pool_def *)def, ABT_POOL_CONFIG_NULL, &pool));
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_thread_create(pool, add_one, NULL, ABT_THREAD_ATTR_NULL,
                                &t[i]));
    return pool;
}

/* Runs what is left in pool on the primary, frees t[] and the pool. */
static void def_pool_finish(ABT_pool pool, ABT_thread *t)
{
    ABT_thread got;
    while (ABT_pool_pop_thread(pool, &got) == ABT_SUCCESS && got)
        AT_OK(ABT_pool_push_thread(at_main_pool(), got));
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_thread_free(&t[i]));
    AT_OK(ABT_pool_free(&pool));
}

/* The program's p_print_all: its units, newest first. */
static int up_print_all(ABT_pool pool, void *arg, void (*print)(void *, ABT_unit))
{
    up_pool *p = up_of(pool);
    pthread_mutex_lock(&p->lock);
    for (up_unit *u = p->top; u; u = u->next)
        print(arg, (ABT_unit)u);
    pthread_mutex_unlock(&p->lock);
    return ABT_SUCCESS;
}

/* A program's pool lists its units through its p_print_all, as units or
 * as threads; without one, ABT_ERR_POOL. */
static void test_user_pool_print_all(void)
{
    AT_OK(ABT_init(0, NULL));
    for (int with_print = 0; with_print < 2; with_print++) {
        ABT_pool_def def = up_def();
        if (with_print)
            def.p_print_all = up_print_all;
        ABT_thread t[3];
        ABT_pool pool = def_pool_with_three(&def, t);
        struct unit_log lt = {0}, lu = {0};
        if (with_print) {
            AT_OK(ABT_pool_print_all_threads(pool, &lt, log_thread));
            AT_OK(ABT_pool_print_all(pool, &lu, log_unit));
            CU_ASSERT_EQUAL(lt.n, 3);
            CU_ASSERT_EQUAL(lu.n, 3);
            for (int i = 0; i < 3 && i < lt.n && i < lu.n; i++) {
                CU_ASSERT_PTR_EQUAL(lt.t[i], t[2 - i]);
                ABT_unit want;
                AT_OK(ABT_thread_get_unit(t[2 - i], &want));
                CU_ASSERT_PTR_EQUAL(lu.u[i], want);
            }
        } else {
            CU_ASSERT_EQUAL(ABT_pool_print_all(pool, &lu, log_unit),
                            ABT_ERR_POOL);
            CU_ASSERT_EQUAL(ABT_pool_print_all_threads(pool, &lt, log_thread),
                            ABT_ERR_POOL);
        }
        def_pool_finish(pool, t);
    }
    AT_OK(ABT_finalize());
}

/* ABT_pool_remove on a program's pool: its p_remove decides; without one,
 * ABT_ERR_POOL and the unit stays queued. */
static void test_user_pool_remove(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_pool main_pool = at_main_pool();
    atomic_store(&counter, 0);
    for (int with_remove = 0; with_remove < 2; with_remove++) {
        ABT_pool_def def = up_def();
        if (with_remove)
            def.p_remove = up_remove;
        ABT_thread t[3];
        ABT_pool pool = def_pool_with_three(&def, t);
        ABT_unit u;
        AT_OK(ABT_thread_get_unit(t[1], &u));
        size_t n = 0;
        if (with_remove) {
            AT_OK(ABT_pool_remove(pool, u));
            AT_OK(ABT_pool_get_size(pool, &n));
            CU_ASSERT_EQUAL(n, 2);
            AT_OK(ABT_pool_push(main_pool, u));
        } else {
            CU_ASSERT_EQUAL(ABT_pool_remove(pool, u), ABT_ERR_POOL);
            AT_OK(ABT_pool_get_size(pool, &n));
            CU_ASSERT_EQUAL(n, 3);
        }
        def_pool_finish(pool, t);
    }
    CU_ASSERT_EQUAL(atomic_load(&counter), 6);
    AT_OK(ABT_finalize());
}

static const ch_test_t user_pool_tests[] = {
    {"sched_blocks_in_run", test_user_sched_blocks_in_run},
    {"def_and_sched", test_user_pool_sched},
    {"mixed_pools_on_every_stream", test_user_sched_mixed_pools},
    {"user_def_calls", test_user_def_calls},
    {"user_def_unit_ops", test_user_def_unit_ops},
    {"remove", test_user_pool_remove},
    {"print_all", test_user_pool_print_all},
    {NULL, NULL}};

/* ---- timer ------------------------------------------------------------------ */

static void test_timer(void)
{
    ABT_timer t, t2;
    AT_OK(ABT_timer_create(&t));
    double w0 = ABT_get_wtime();
    AT_OK(ABT_timer_start(t));
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    double secs = 0;
    AT_OK(ABT_timer_stop_and_read(t, &secs));
    CU_ASSERT(secs >= 0.002 && secs < 1.0);
    CU_ASSERT(ABT_get_wtime() - w0 >= 0.002);
    AT_OK(ABT_timer_dup(t, &t2));
    double again = 0;
    AT_OK(ABT_timer_read(t2, &again));
    CU_ASSERT_DOUBLE_EQUAL(again, secs, 1e-12);
    AT_OK(ABT_timer_free(&t));
    AT_OK(ABT_timer_free(&t2));
    CU_ASSERT_EQUAL(ABT_timer_free(&t), ABT_ERR_INV_TIMER);
}

static const ch_test_t timer_tests[] = {{"timer", test_timer}, {NULL, NULL}};

/* ---- errors ------------------------------------------------------------------ */

static void tool_nop(ABT_thread t, ABT_xstream x, uint64_t ev,
                     ABT_tool_context ctx, void *arg)
{
    (void)t, (void)x, (void)ev, (void)ctx, (void)arg;
}

static void test_errors(void)
{
    char buf[64];
    size_t len = 0;
    AT_OK(ABT_error_get_str(ABT_ERR_FEATURE_NA, NULL, &len));
    AT_OK(ABT_error_get_str(ABT_ERR_FEATURE_NA, buf, NULL));
    CU_ASSERT_STRING_EQUAL(buf, "ABT_ERR_FEATURE_NA");
    CU_ASSERT_EQUAL(len, strlen("ABT_ERR_FEATURE_NA"));
    AT_OK(ABT_error_get_str(ABT_ERR_INV_POOL_USER_DEF, buf, NULL));
    CU_ASSERT_STRING_EQUAL(buf, "ABT_ERR_INV_POOL_USER_DEF");
    CU_ASSERT_NOT_EQUAL(ABT_error_get_str(1000, buf, NULL), ABT_SUCCESS);
    AT_OK(ABT_init(0, NULL));
    ABT_bool b = ABT_TRUE;
    /* Tool events: on exactly when a callback can be registered (a
     * libcoexec built with -DCOEXEC_TOOLS=OFF has none). */
    AT_OK(ABT_info_query_config(ABT_INFO_QUERY_KIND_ENABLED_TOOL, &b));
    int reg = ABT_tool_register_thread_callback(tool_nop,
                                                ABT_TOOL_EVENT_THREAD_ALL, NULL);
    CU_ASSERT_EQUAL(b, reg == ABT_SUCCESS ? ABT_TRUE : ABT_FALSE);
    CU_ASSERT(reg == ABT_SUCCESS || reg == ABT_ERR_FEATURE_NA);
    AT_OK(ABT_tool_register_thread_callback(NULL, ABT_TOOL_EVENT_THREAD_NONE,
                                            NULL));
    AT_OK(ABT_info_query_config(ABT_INFO_QUERY_KIND_ENABLED_EXTERNAL_THREAD,
                                &b));
    CU_ASSERT_EQUAL(b, ABT_TRUE);
    CU_ASSERT_EQUAL(ABT_info_query_config((ABT_info_query_kind)999, &b),
                    ABT_ERR_INV_QUERY_KIND);
    AT_OK(ABT_finalize());
}

/* Argobots 1.x stores a NULL (or neutral) value in the output of these
 * calls when they fail: a program may test the handle instead of the
 * code. Each is called with garbage in its output and an error to report:
 * before ABT_init, with a bad handle or argument, or from an external
 * thread. */
#define GARBAGE ((void *)(uintptr_t)0x5a5a5a5a)
#define NULL_ON_ERROR(out, nullv, call)                                        \
    do {                                                                       \
        memset(&(out), 0x5a, sizeof(out));                                     \
        CU_ASSERT_NOT_EQUAL((call), ABT_SUCCESS);                              \
        CU_ASSERT((out) == (nullv));                                           \
    } while (0)

static void noop_fn(void *arg)
{
    (void)arg;
}

/* The self queries of an external thread (ok[i]: 1 when right). */
static void *ext_null_outputs(void *arg)
{
    int *ok = arg;
    ABT_unit_type type;
    ABT_bool b1, b2;
    int pool_id;
    void *a;
    memset(&type, 0x5a, sizeof type);
    memset(&b1, 0x5a, sizeof b1);
    memset(&b2, 0x5a, sizeof b2);
    memset(&pool_id, 0x5a, sizeof pool_id);
    a = GARBAGE;
    ok[0] = ABT_self_get_type(&type) != ABT_SUCCESS &&
            type == ABT_UNIT_TYPE_EXT;
    ok[1] = ABT_self_is_primary(&b1) != ABT_SUCCESS && b1 == ABT_FALSE;
    ok[2] = ABT_self_on_primary_xstream(&b2) != ABT_SUCCESS &&
            b2 == ABT_FALSE;
    ok[3] = ABT_self_get_last_pool_id(&pool_id) != ABT_SUCCESS &&
            pool_id == -1;
    ok[4] = ABT_self_get_arg(&a) != ABT_SUCCESS && a == NULL;
    return NULL;
}

static void test_errors_null_outputs(void)
{
    ABT_thread t;
    ABT_task k;
    ABT_xstream x;
    ABT_sched sc;
    ABT_pool p;
    ABT_unit u;
    ABT_bool b;
    size_t sz;
    int n;
    /* Before ABT_init. */
    NULL_ON_ERROR(t, ABT_THREAD_NULL,
                  ABT_thread_create(GARBAGE, noop_fn, NULL,
                                    ABT_THREAD_ATTR_NULL, &t));
    NULL_ON_ERROR(k, ABT_TASK_NULL, ABT_task_create(GARBAGE, noop_fn, NULL, &k));
    NULL_ON_ERROR(t, ABT_THREAD_NULL, ABT_thread_self(&t));
    NULL_ON_ERROR(k, ABT_TASK_NULL, ABT_task_self(&k));
    NULL_ON_ERROR(x, ABT_XSTREAM_NULL, ABT_xstream_self(&x));
    NULL_ON_ERROR(x, ABT_XSTREAM_NULL,
                  ABT_xstream_create(ABT_SCHED_NULL, &x));
    NULL_ON_ERROR(n, 0, ABT_xstream_get_num(&n));
    NULL_ON_ERROR(sc, ABT_SCHED_NULL,
                  ABT_sched_create_basic(ABT_SCHED_DEFAULT, 0, NULL,
                                         ABT_SCHED_CONFIG_NULL, &sc));
    NULL_ON_ERROR(p, ABT_POOL_NULL,
                  ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC,
                                        ABT_TRUE, &p));
    /* Bad handles and arguments. */
    AT_OK(ABT_init(0, NULL));
    NULL_ON_ERROR(t, ABT_THREAD_NULL,
                  ABT_thread_create(ABT_POOL_NULL, noop_fn, NULL,
                                    ABT_THREAD_ATTR_NULL, &t));
    NULL_ON_ERROR(t, ABT_THREAD_NULL,
                  ABT_thread_create_on_xstream(ABT_XSTREAM_NULL, noop_fn, NULL,
                                               ABT_THREAD_ATTR_NULL, &t));
    NULL_ON_ERROR(k, ABT_TASK_NULL,
                  ABT_task_create(ABT_POOL_NULL, noop_fn, NULL, &k));
    NULL_ON_ERROR(k, ABT_TASK_NULL,
                  ABT_task_create_on_xstream(ABT_XSTREAM_NULL, noop_fn, NULL,
                                             &k));
    NULL_ON_ERROR(x, ABT_XSTREAM_NULL,
                  ABT_xstream_create_with_rank(ABT_SCHED_NULL, -1, &x));
    /* A handle of another kind (a pool's record for a scheduler). */
    NULL_ON_ERROR(x, ABT_XSTREAM_NULL,
                  ABT_xstream_create((ABT_sched)(void *)at_main_pool(), &x));
    NULL_ON_ERROR(x, ABT_XSTREAM_NULL,
                  ABT_xstream_create_basic((ABT_sched_predef)999, 0, NULL,
                                           ABT_SCHED_CONFIG_NULL, &x));
    NULL_ON_ERROR(sc, ABT_SCHED_NULL,
                  ABT_sched_create(NULL, 0, NULL, ABT_SCHED_CONFIG_NULL, &sc));
    NULL_ON_ERROR(sc, ABT_SCHED_NULL,
                  ABT_sched_create_basic((ABT_sched_predef)999, 0, NULL,
                                         ABT_SCHED_CONFIG_NULL, &sc));
    NULL_ON_ERROR(b, ABT_FALSE, ABT_sched_has_to_stop(ABT_SCHED_NULL, &b));
    NULL_ON_ERROR(sz, 0, ABT_sched_get_size(ABT_SCHED_NULL, &sz));
    NULL_ON_ERROR(sz, 0, ABT_sched_get_total_size(ABT_SCHED_NULL, &sz));
    NULL_ON_ERROR(p, ABT_POOL_NULL,
                  ABT_pool_create(ABT_POOL_USER_DEF_NULL,
                                  ABT_POOL_CONFIG_NULL, &p));
    NULL_ON_ERROR(p, ABT_POOL_NULL,
                  ABT_pool_create_basic((ABT_pool_kind)999,
                                        ABT_POOL_ACCESS_MPMC, ABT_TRUE, &p));
    NULL_ON_ERROR(u, ABT_UNIT_NULL, ABT_pool_pop(ABT_POOL_NULL, &u));
    NULL_ON_ERROR(u, ABT_UNIT_NULL, ABT_pool_pop_wait(ABT_POOL_NULL, &u, 0.0));
    NULL_ON_ERROR(u, ABT_UNIT_NULL,
                  ABT_pool_pop_timedwait(ABT_POOL_NULL, &u, 0.0));
    int ok[5] = {0, 0, 0, 0, 0};
    pthread_t pt;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&pt, NULL, ext_null_outputs, ok), 0);
    pthread_join(pt, NULL);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(ok[i], 1);
    AT_OK(ABT_finalize());
}

/* A NULL output pointer is ABT_ERR_INV_ARG, never a crash: every getter
 * and query, with good handles otherwise. */
static void test_errors_null_output_pointers(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream xs;
    ABT_sched sc;
    AT_OK(ABT_xstream_self(&xs));
    AT_OK(ABT_xstream_get_main_sched(xs, &sc));
    ABT_pool pool = at_main_pool();
    ABT_thread me, t;
    ABT_task k;
    AT_OK(ABT_self_get_thread(&me));
    AT_OK(ABT_thread_create(pool, noop_fn, NULL, ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_task_create(pool, noop_fn, NULL, &k));
    ABT_thread_attr attr;
    AT_OK(ABT_thread_attr_create(&attr));
    ABT_mutex_attr mattr;
    AT_OK(ABT_mutex_attr_create(&mattr));
    ABT_mutex m;
    AT_OK(ABT_mutex_create(&m));
    ABT_barrier b;
    AT_OK(ABT_barrier_create(1, &b));
    ABT_timer tm;
    AT_OK(ABT_timer_create(&tm));
    void *v;
    const int E = ABT_ERR_INV_ARG;
    CU_ASSERT_EQUAL(ABT_unit_get_thread((ABT_unit)t, NULL), E);
    CU_ASSERT_EQUAL(ABT_pool_get_access(pool, NULL), E);
    CU_ASSERT_EQUAL(ABT_pool_get_size(pool, NULL), E);
    CU_ASSERT_EQUAL(ABT_pool_is_empty(pool, NULL), E);
    CU_ASSERT_EQUAL(ABT_pool_get_data(pool, NULL), E);
    CU_ASSERT_EQUAL(ABT_pool_get_id(pool, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_attr_get_stack(attr, NULL, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_attr_get_stack(attr, &v, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_attr_get_stacksize(attr, NULL), E);
    /* A stack off 8-byte alignment, as Argobots refuses it. */
    static char unaligned[4096 + 16] __attribute__((aligned(16)));
    CU_ASSERT_EQUAL(ABT_thread_attr_set_stack(attr, unaligned + 4, 4096), E);
    /* A null thread is named before a null scheduler, as in Argobots. */
    CU_ASSERT_EQUAL(ABT_thread_migrate_to_sched(ABT_THREAD_NULL,
                                                ABT_SCHED_NULL),
                    ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_task_self(NULL), E);
    CU_ASSERT_EQUAL(ABT_self_get_thread_id(NULL), E);
    CU_ASSERT_EQUAL(ABT_task_self_id(NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_get_id(t, NULL), E);
    CU_ASSERT_EQUAL(ABT_task_get_id(k, NULL), E);
    CU_ASSERT_EQUAL(ABT_self_is_primary(NULL), E);
    CU_ASSERT_EQUAL(ABT_self_is_unnamed(NULL), E);
    CU_ASSERT_EQUAL(ABT_self_get_last_pool(NULL), E);
    CU_ASSERT_EQUAL(ABT_self_get_last_pool_id(NULL), E);
    CU_ASSERT_EQUAL(ABT_self_get_arg(NULL), E);
    CU_ASSERT_EQUAL(ABT_self_on_primary_xstream(NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_get_state(t, NULL), E);
    CU_ASSERT_EQUAL(ABT_task_get_state(k, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_get_last_pool(t, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_get_last_pool_id(t, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_get_unit(t, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_equal(t, me, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_is_primary(me, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_is_unnamed(t, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_get_stacksize(t, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_get_last_xstream(t, NULL), E);
    CU_ASSERT_EQUAL(ABT_task_get_xstream(k, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_get_arg(t, NULL), E);
    CU_ASSERT_EQUAL(ABT_task_get_arg(k, NULL), E);
    CU_ASSERT_EQUAL(ABT_thread_is_migratable(t, NULL), E);
    CU_ASSERT_EQUAL(ABT_xstream_get_rank(xs, NULL), E);
    CU_ASSERT_EQUAL(ABT_xstream_get_main_sched(xs, NULL), E);
    CU_ASSERT_EQUAL(ABT_xstream_get_state(xs, NULL), E);
    CU_ASSERT_EQUAL(ABT_xstream_equal(xs, xs, NULL), E);
    CU_ASSERT_EQUAL(ABT_xstream_is_primary(xs, NULL), E);
    CU_ASSERT_EQUAL(ABT_xstream_get_cpubind(xs, NULL), E);
    CU_ASSERT_EQUAL(ABT_xstream_get_num(NULL), E);
    CU_ASSERT_EQUAL(ABT_mutex_attr_get_recursive(mattr, NULL), E);
    CU_ASSERT_EQUAL(ABT_mutex_equal(m, m, NULL), E);
    CU_ASSERT_EQUAL(ABT_barrier_get_num_waiters(b, NULL), E);
    CU_ASSERT_EQUAL(ABT_timer_dup(tm, NULL), E);
    CU_ASSERT_EQUAL(ABT_sched_get_data(sc, NULL), E);
    CU_ASSERT_EQUAL(ABT_sched_get_num_pools(sc, NULL), E);
    CU_ASSERT_EQUAL(ABT_sched_get_size(sc, NULL), E);
    CU_ASSERT_EQUAL(ABT_sched_has_to_stop(sc, NULL), E);
    /* And the runtime goes on. */
    AT_OK(ABT_thread_free(&t));
    AT_OK(ABT_task_free(&k));
    AT_OK(ABT_thread_attr_free(&attr));
    AT_OK(ABT_mutex_attr_free(&mattr));
    AT_OK(ABT_mutex_free(&m));
    AT_OK(ABT_barrier_free(&b));
    AT_OK(ABT_timer_free(&tm));
    AT_OK(ABT_finalize());
}

/* Hostile inputs: array arguments out of range or NULL, calls in a wrong
 * state, stale handles. Each gets Argobots' documented code and leaves the
 * runtime working. */
static atomic_int hi_future_cb_calls;

static void hi_future_cb(void **values)
{
    (void)values;
    atomic_fetch_add(&hi_future_cb_calls, 1);
}

static int hi_failing_init(ABT_sched sched, ABT_sched_config config)
{
    (void)sched;
    (void)config;
    return ABT_ERR_OTHER;
}

static void hi_sched_run(ABT_sched sched)
{
    (void)sched;
}

static void hi_spin_until(void *arg)
{
    atomic_int *go = arg;
    while (!atomic_load(go))
        AT_CHECK_OK(ABT_thread_yield());
}

static void test_errors_hostile_inputs(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream self, x;
    AT_OK(ABT_xstream_self(&self));
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &x));
    ABT_pool xpool, mine = at_main_pool();
    AT_OK(ABT_xstream_get_main_pools(x, 1, &xpool));
    ABT_sched sc;
    AT_OK(ABT_xstream_get_main_sched(self, &sc));
    int n = 0;
    AT_OK(ABT_sched_get_num_pools(sc, &n));
    CU_ASSERT(n >= 1);

    /* Pool arrays: idx + max_pools past INT_MAX, negative counts, NULL. */
    ABT_pool ps[4] = {ABT_POOL_NULL};
    CU_ASSERT_EQUAL(ABT_sched_get_pools(sc, INT_MAX, 1, ps), ABT_ERR_SCHED);
    CU_ASSERT_EQUAL(ABT_sched_get_pools(sc, 1, INT_MAX, ps), ABT_ERR_SCHED);
    CU_ASSERT_EQUAL(ABT_sched_get_pools(sc, -1, 0, ps), ABT_ERR_INV_ARG);
    CU_ASSERT_EQUAL(ABT_sched_get_pools(sc, 1, -1, ps), ABT_ERR_INV_ARG);
    CU_ASSERT_EQUAL(ABT_sched_get_pools(sc, 1, 0, NULL), ABT_ERR_INV_ARG);
    CU_ASSERT_EQUAL(ABT_sched_get_pools(sc, n + 1, 0, ps), ABT_ERR_SCHED);
    AT_OK(ABT_sched_get_pools(sc, 0, 0, NULL));
    AT_OK(ABT_sched_get_pools(sc, 1, 0, ps));
    CU_ASSERT_PTR_EQUAL(ps[0], mine);
    CU_ASSERT_EQUAL(ABT_xstream_get_main_pools(x, 1, NULL), ABT_ERR_INV_ARG);
    CU_ASSERT_EQUAL(ABT_thread_create_many(1, NULL, NULL, NULL,
                                           ABT_THREAD_ATTR_NULL, NULL),
                    ABT_ERR_INV_ARG);
    CU_ASSERT_EQUAL(ABT_thread_join_many(1, NULL), ABT_ERR_INV_ARG);
    CU_ASSERT_EQUAL(ABT_thread_free_many(1, NULL), ABT_ERR_INV_ARG);

    /* The primary's main ULT: only the primary runs it, so it may not be
     * given another stream's pool (nor be migrated); its own is fine. */
    CU_ASSERT_EQUAL(ABT_self_set_associated_pool(xpool), ABT_ERR_INV_THREAD);
    ABT_thread me;
    AT_OK(ABT_self_get_thread(&me));
    CU_ASSERT_EQUAL(ABT_thread_migrate_to_pool(me, xpool), ABT_ERR_INV_THREAD);
    AT_OK(ABT_self_set_associated_pool(mine));
    AT_OK(ABT_self_yield());
    ABT_pool last = ABT_POOL_NULL;
    AT_OK(ABT_self_get_last_pool(&last));
    CU_ASSERT_PTR_EQUAL(last, mine);

    /* Revives of units that have not terminated, and of a running stream. */
    atomic_int go = 0;
    ABT_thread t;
    ABT_thread_attr pinned;
    AT_OK(ABT_thread_attr_create(&pinned));
    AT_OK(ABT_thread_attr_set_migratable(pinned, ABT_FALSE));
    AT_OK(ABT_thread_create(xpool, hi_spin_until, &go, pinned, &t));
    CU_ASSERT_EQUAL(ABT_thread_revive(xpool, hi_spin_until, &go, &t),
                    ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_thread_migrate_to_pool(t, mine), ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_xstream_revive(x), ABT_ERR_INV_XSTREAM);
    atomic_store(&go, 1);
    AT_OK(ABT_thread_free(&t));
    AT_OK(ABT_thread_attr_free(&pinned));
    ABT_task k;
    AT_OK(ABT_task_create(mine, noop_fn, NULL, &k));
    CU_ASSERT_EQUAL(ABT_task_revive(mine, noop_fn, NULL, &k), ABT_ERR_INV_TASK);
    AT_OK(ABT_task_free(&k));

    /* A future of no compartment is ready at once and after each reset;
     * its callback is never called, and a set is one too many. */
    ABT_future f;
    atomic_store(&hi_future_cb_calls, 0);
    AT_OK(ABT_future_create(0, hi_future_cb, &f));
    ABT_bool ready = ABT_FALSE;
    AT_OK(ABT_future_test(f, &ready));
    CU_ASSERT_EQUAL(ready, ABT_TRUE);
    AT_OK(ABT_future_wait(f));
    CU_ASSERT_EQUAL(ABT_future_set(f, NULL), ABT_ERR_FUTURE);
    AT_OK(ABT_future_reset(f));
    ready = ABT_FALSE;
    AT_OK(ABT_future_test(f, &ready));
    CU_ASSERT_EQUAL(ready, ABT_TRUE);
    AT_OK(ABT_future_wait(f));
    AT_OK(ABT_future_free(&f));
    CU_ASSERT_EQUAL(atomic_load(&hi_future_cb_calls), 0);

    /* A scheduler whose init fails: its code comes back; the pool made for
     * it goes with it (ABT_finalize would say it was never freed). */
    ABT_sched_def fdef = {.type = ABT_SCHED_TYPE_ULT,
                          .init = hi_failing_init,
                          .run = hi_sched_run};
    ABT_sched bad = ABT_SCHED_NULL;
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(ABT_sched_create(&fdef, 0, NULL, ABT_SCHED_CONFIG_NULL,
                                         &bad),
                        ABT_ERR_OTHER);
    CU_ASSERT_PTR_EQUAL(bad, ABT_SCHED_NULL);

    /* ABT_sched_finish: nothing to do for a scheduler nothing runs; a
     * secondary stream's main scheduler ends its stream; the primary's
     * cannot end. */
    ABT_sched idle;
    AT_OK(ABT_sched_create_basic(ABT_SCHED_DEFAULT, 0, NULL,
                                 ABT_SCHED_CONFIG_NULL, &idle));
    AT_OK(ABT_sched_finish(idle));
    AT_OK(ABT_sched_free(&idle));
    CU_ASSERT_EQUAL(ABT_sched_finish(sc), ABT_ERR_SCHED);
    ABT_sched xsc;
    AT_OK(ABT_xstream_get_main_sched(x, &xsc));
    AT_OK(ABT_sched_finish(xsc));
    ABT_xstream_state st = ABT_XSTREAM_STATE_RUNNING;
    for (long spins = 0; spins < 100000000L; spins++) {
        AT_OK(ABT_xstream_get_state(x, &st));
        if (st == ABT_XSTREAM_STATE_TERMINATED)
            break;
        AT_OK(ABT_self_yield());
    }
    CU_ASSERT_EQUAL(st, ABT_XSTREAM_STATE_TERMINATED);
    AT_OK(ABT_xstream_free(&x));

    /* Keys: a freed key, a copy of it, and a handle of another kind. */
    ABT_key key, copy;
    void *v = GARBAGE;
    AT_OK(ABT_key_create(NULL, &key));
    copy = key;
    AT_OK(ABT_key_set(key, &go));
    AT_OK(ABT_key_get(key, &v));
    CU_ASSERT_PTR_EQUAL(v, &go);
    AT_OK(ABT_key_free(&key));
    CU_ASSERT_EQUAL(ABT_key_free(&copy), ABT_ERR_INV_KEY);
    CU_ASSERT_EQUAL(ABT_key_set(copy, &go), ABT_ERR_INV_KEY);
    CU_ASSERT_EQUAL(ABT_key_get(copy, &v), ABT_ERR_INV_KEY);
    ABT_key foreign = (ABT_key)(void *)mine;
    CU_ASSERT_EQUAL(ABT_key_set(foreign, &go), ABT_ERR_INV_KEY);
    CU_ASSERT_EQUAL(ABT_key_free(&foreign), ABT_ERR_INV_KEY);
    /* A new key in the freed one's slot does not make the copy live. */
    AT_OK(ABT_key_create(NULL, &key));
    CU_ASSERT_EQUAL(ABT_key_set(copy, &go), ABT_ERR_INV_KEY);
    AT_OK(ABT_key_get(key, &v));
    CU_ASSERT_PTR_NULL(v);
    AT_OK(ABT_key_free(&key));
    AT_OK(ABT_finalize());

    /* After the last finalize, handles are refused without their records
     * (freed by then) being read. */
    size_t sz = 1;
    CU_ASSERT_EQUAL(ABT_pool_get_size(mine, &sz), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_sched_get_num_pools(sc, &n), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_xstream_get_rank(self, &n), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_thread_get_arg(t, &v), ABT_ERR_UNINITIALIZED);
}

/* A ULT revived keeps the stack the program gave it. */
static void test_thread_revive_user_stack(void)
{
    AT_OK(ABT_init(0, NULL));
    size_t size = 64 * 1024;
    void *stack = NULL;
    CU_ASSERT_EQUAL_FATAL(posix_memalign(&stack, 64, size), 0);
    ABT_thread_attr attr;
    AT_OK(ABT_thread_attr_create(&attr));
    AT_OK(ABT_thread_attr_set_stack(attr, stack, size));
    ABT_thread t;
    AT_OK(ABT_thread_create(at_main_pool(), noop_fn, NULL, attr, &t));
    AT_OK(ABT_thread_join(t));
    void *addr[2] = {NULL, NULL};
    size_t sz[2] = {0, 0};
    AT_OK(ABT_thread_get_stack(t, &addr[0], &sz[0]));
    AT_OK(ABT_thread_revive(at_main_pool(), noop_fn, NULL, &t));
    AT_OK(ABT_thread_get_stack(t, &addr[1], &sz[1]));
    AT_OK(ABT_thread_join(t));
    CU_ASSERT_PTR_EQUAL(addr[0], stack);
    CU_ASSERT_PTR_EQUAL(addr[1], stack);
    CU_ASSERT_EQUAL(sz[0], size);
    CU_ASSERT_EQUAL(sz[1], size);
    AT_OK(ABT_thread_free(&t));
    AT_OK(ABT_thread_attr_free(&attr));
    AT_OK(ABT_finalize());
    free(stack);
}

static const ch_test_t errors_tests[] = {
    {"codes", test_errors},
    {"null_outputs", test_errors_null_outputs},
    {"null_output_pointers", test_errors_null_output_pointers},
    {"hostile_inputs", test_errors_hostile_inputs},
    {"revive_keeps_user_stack", test_thread_revive_user_stack},
    {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"init", init_tests},         {"xstream", xstream_tests},
    {"thread", thread_tests},     {"task", task_tests},
    {"self", self_tests},         {"pool", pool_tests},
    {"sched", sched_tests},       {"user_pool", user_pool_tests},
    {"eventual", abt_eventual_tests}, {"future", abt_future_tests},
    {"mutex", abt_mutex_tests},   {"cond", abt_cond_tests},
    {"rwlock", abt_rwlock_tests}, {"barrier", abt_barrier_tests},
    {"key", abt_key_tests},       {"timer", timer_tests},
    {"errors", errors_tests},     {"v1x", abt_v1x_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
