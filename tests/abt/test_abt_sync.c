/*
 * tests/abt/test_abt_sync.c: the synchronization suites of test_abt.
 *
 *   eventual  ping-pong between two streams, values copied, test/reset,
 *             static memory (never freed, across runtimes), timed wait
 *             expiring, a second set refused
 *   future    callback sees every value once the last compartment is set
 *   mutex     exclusion across streams (plain, static, recursive), trylock
 *   cond      signal/wait hand-off, timed wait expiring
 *   rwlock    readers share, writers exclude
 *   barrier   phases across streams, reinit
 *   key       values of ULTs and tasklets, set by themselves and by
 *             others at once, the destructors, freed keys
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "abt_test.h"

/* Two streams: the primary and one more, freed by at_down. */
static ABT_xstream at_xs;

static void at_up(void)
{
    CU_ASSERT_EQUAL_FATAL(ABT_init(0, NULL), ABT_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(ABT_xstream_create(ABT_SCHED_NULL, &at_xs),
                          ABT_SUCCESS);
}

static void at_down(void)
{
    AT_OK(ABT_xstream_free(&at_xs));
    AT_OK(ABT_finalize());
}

static struct timespec in_ms(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += ms * 1000000;
    ts.tv_sec += ts.tv_nsec / 1000000000;
    ts.tv_nsec %= 1000000000;
    return ts;
}

/* ---- eventual ------------------------------------------------------------------ */

enum { PINGS = 200 };
static ABT_eventual ping, pong;

static void ponger(void *arg)
{
    for (int i = 0; i < PINGS; i++) {
        int *v = NULL;
        AT_CHECK_OK(ABT_eventual_wait(ping, (void **)&v));
        CH_CHECK_EQ(*v, i);
        AT_CHECK_OK(ABT_eventual_reset(ping));
        int back = i * 2;
        AT_CHECK_OK(ABT_eventual_set(pong, &back, sizeof(back)));
    }
}

static void test_eventual_pingpong(void)
{
    at_up();
    AT_OK(ABT_eventual_create(sizeof(int), &ping));
    AT_OK(ABT_eventual_create(sizeof(int), &pong));
    ABT_thread t;
    AT_OK(ABT_thread_create_on_xstream(at_xs, ponger, NULL,
                                       ABT_THREAD_ATTR_NULL, &t));
    int ok = 1;
    for (int i = 0; i < PINGS; i++) {
        AT_OK(ABT_eventual_set(ping, &i, sizeof(i)));
        int *v = NULL;
        AT_OK(ABT_eventual_wait(pong, (void **)&v));
        ok &= *v == i * 2;
        AT_OK(ABT_eventual_reset(pong));
    }
    CU_ASSERT(ok);
    AT_OK(ABT_thread_free(&t));
    AT_OK(ABT_eventual_free(&ping));
    AT_OK(ABT_eventual_free(&pong));
    CU_ASSERT_PTR_NULL(ping);
    at_down();
}

static void test_eventual_states(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_eventual ev;
    AT_OK(ABT_eventual_create(sizeof(double), &ev));
    int ready = ABT_TRUE;
    void *v = NULL;
    AT_OK(ABT_eventual_test(ev, &v, &ready));
    CU_ASSERT_EQUAL(ready, ABT_FALSE);
    struct timespec ts = in_ms(5);
    CU_ASSERT_EQUAL(ABT_eventual_timedwait(ev, &v, &ts), ABT_ERR_COND_TIMEDOUT);
    double x = 1.5;
    CU_ASSERT_EQUAL(ABT_eventual_set(ev, &x, 64), ABT_ERR_INV_EVENTUAL);
    AT_OK(ABT_eventual_set(ev, &x, sizeof(x)));
    CU_ASSERT_EQUAL(ABT_eventual_set(ev, &x, sizeof(x)), ABT_ERR_EVENTUAL);
    x = 0;
    AT_OK(ABT_eventual_test(ev, &v, &ready));
    CU_ASSERT_EQUAL(ready, ABT_TRUE);
    CU_ASSERT_DOUBLE_EQUAL(*(double *)v, 1.5, 0); /* a copy was kept */
    AT_OK(ABT_eventual_reset(ev));
    AT_OK(ABT_eventual_test(ev, &v, &ready));
    CU_ASSERT_EQUAL(ready, ABT_FALSE);
    AT_OK(ABT_eventual_free(&ev));
    /* Static memory: usable at once, with no value. */
    ABT_eventual_memory mem = ABT_EVENTUAL_INITIALIZER;
    ABT_eventual sev = ABT_EVENTUAL_MEMORY_GET_HANDLE(&mem);
    AT_OK(ABT_eventual_set(sev, NULL, 0));
    AT_OK(ABT_eventual_wait(sev, NULL));
    AT_OK(ABT_eventual_free(&sev));
    AT_OK(ABT_finalize());
}

/* Static memory the program never frees, as Argobots' static initialiser
 * allows: one at file scope, used again in the next runtime after a
 * reset, and one in automatic storage, which goes out of scope unfreed.
 * Each is waited for by a ULT of each stream and set by main. Nothing of either is allocated: a leak checker (the ASan build)
 * finds nothing at exit. */
static ABT_eventual_memory static_ev_mem = ABT_EVENTUAL_INITIALIZER;
static atomic_int static_ev_waited;

static void static_ev_waiter(void *arg)
{
    AT_CHECK_OK(ABT_eventual_wait((ABT_eventual)arg, NULL));
    atomic_fetch_add(&static_ev_waited, 1);
}

static void static_ev_round(ABT_eventual ev)
{
    atomic_store(&static_ev_waited, 0);
    ABT_thread t, t2;
    AT_OK(ABT_thread_create_on_xstream(at_xs, static_ev_waiter, ev,
                                       ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_thread_create(at_main_pool(), static_ev_waiter, ev,
                            ABT_THREAD_ATTR_NULL, &t2));
    int ready = ABT_TRUE;
    AT_OK(ABT_eventual_test(ev, NULL, &ready));
    CU_ASSERT_EQUAL(ready, ABT_FALSE);
    int x = 1;
    CU_ASSERT_EQUAL(ABT_eventual_set(ev, &x, sizeof(x)),
                    ABT_ERR_INV_EVENTUAL); /* no room for a value */
    AT_OK(ABT_eventual_set(ev, NULL, 0));
    AT_OK(ABT_thread_free(&t));
    AT_OK(ABT_thread_free(&t2));
    CU_ASSERT_EQUAL(atomic_load(&static_ev_waited), 2);
}

static void test_eventual_static_memory(void)
{
    for (int round = 0; round < 2; round++) {
        at_up();
        ABT_eventual ev = ABT_EVENTUAL_MEMORY_GET_HANDLE(&static_ev_mem);
        static_ev_round(ev);
        AT_OK(ABT_eventual_reset(ev));
        ABT_eventual_memory mem = ABT_EVENTUAL_INITIALIZER;
        static_ev_round(ABT_EVENTUAL_MEMORY_GET_HANDLE(&mem));
        at_down();
    }
}

const ch_test_t abt_eventual_tests[] = {
    {"pingpong", test_eventual_pingpong},
    {"states", test_eventual_states},
    {"static_memory", test_eventual_static_memory},
    {NULL, NULL}};

/* ---- future ------------------------------------------------------------------ */

static long future_sum;

static void future_cb(void **values)
{
    for (int i = 0; i < 4; i++)
        future_sum += (long)(intptr_t)values[i];
}

static ABT_future fut;

static void future_setter(void *arg)
{
    AT_CHECK_OK(ABT_future_set(fut, arg));
}

static void test_future_all(void)
{
    at_up();
    future_sum = 0;
    AT_OK(ABT_future_create(4, future_cb, &fut));
    ABT_thread t[4];
    for (int i = 0; i < 4; i++)
        AT_OK(ABT_thread_create_on_xstream(at_xs, future_setter,
                                           (void *)(intptr_t)(i + 1),
                                           ABT_THREAD_ATTR_NULL, &t[i]));
    AT_OK(ABT_future_wait(fut));
    ABT_bool ready = ABT_FALSE;
    AT_OK(ABT_future_test(fut, &ready));
    CU_ASSERT_EQUAL(ready, ABT_TRUE);
    CU_ASSERT_EQUAL(future_sum, 1 + 2 + 3 + 4);
    AT_OK(ABT_thread_free_many(4, t));
    AT_OK(ABT_future_reset(fut));
    AT_OK(ABT_future_test(fut, &ready));
    CU_ASSERT_EQUAL(ready, ABT_FALSE);
    AT_OK(ABT_future_free(&fut));
    at_down();
}

/* A reset while the set that completed the future still runs the
 * callback (on another ES): as in Argobots, it waits for the callback to
 * return, and succeeds. */
static atomic_int slow_in, slow_go;

static void slow_future_cb(void **values)
{
    (void)values;
    atomic_store(&slow_in, 1);
    while (!atomic_load(&slow_go))
        sched_yield();
}

static void *release_slow_cb(void *arg)
{
    (void)arg;
    struct timespec d = {0, 20 * 1000 * 1000}; /* while the reset waits */
    nanosleep(&d, NULL);
    atomic_store(&slow_go, 1);
    return NULL;
}

static void test_future_reset_during_callback(void)
{
    at_up();
    atomic_store(&slow_in, 0);
    atomic_store(&slow_go, 0);
    AT_OK(ABT_future_create(1, slow_future_cb, &fut));
    ABT_thread setter;
    AT_OK(ABT_thread_create_on_xstream(at_xs, future_setter, NULL,
                                       ABT_THREAD_ATTR_NULL, &setter));
    CH_WAIT(atomic_load(&slow_in));
    /* An external thread lets the callback return while we are in reset. */
    pthread_t th;
    CU_ASSERT_FATAL(pthread_create(&th, NULL, release_slow_cb, NULL) == 0);
    AT_OK(ABT_future_reset(fut));
    CU_ASSERT_EQUAL(atomic_load(&slow_go), 1);
    pthread_join(th, NULL);
    AT_OK(ABT_thread_free(&setter));
    ABT_bool ready = ABT_TRUE;
    AT_OK(ABT_future_test(fut, &ready));
    CU_ASSERT_EQUAL(ready, ABT_FALSE);
    AT_OK(ABT_future_free(&fut));
    at_down();
}

const ch_test_t abt_future_tests[] = {
    {"all", test_future_all},
    {"reset_during_callback", test_future_reset_during_callback},
    {NULL, NULL}};

/* ---- mutex ------------------------------------------------------------------ */

enum { LOCKERS = 8, ROUNDS = 200 };
static ABT_mutex_memory static_mem = ABT_MUTEX_INITIALIZER;
static ABT_mutex shared_mutex;
static long shared_count;
static int recursion;

static void locker(void *arg)
{
    for (int i = 0; i < ROUNDS; i++) {
        for (int k = 0; k < recursion; k++)
            AT_CHECK_OK(ABT_mutex_lock(shared_mutex));
        long v = shared_count;
        if ((i & 7) == 0)
            AT_CHECK_OK(ABT_thread_yield()); /* held across a yield */
        shared_count = v + 1;
        for (int k = 0; k < recursion; k++)
            AT_CHECK_OK(ABT_mutex_unlock(shared_mutex));
    }
}

static void run_lockers(ABT_mutex m, int depth)
{
    shared_mutex = m;
    shared_count = 0;
    recursion = depth;
    ABT_xstream self;
    AT_OK(ABT_xstream_self(&self));
    ABT_thread t[LOCKERS];
    for (int i = 0; i < LOCKERS; i++)
        AT_OK(ABT_thread_create_on_xstream(i & 1 ? at_xs : self, locker, NULL,
                                           ABT_THREAD_ATTR_NULL, &t[i]));
    AT_OK(ABT_thread_free_many(LOCKERS, t));
    CU_ASSERT_EQUAL(shared_count, LOCKERS * ROUNDS);
}

static void test_mutex_exclusion(void)
{
    at_up();
    ABT_mutex m;
    AT_OK(ABT_mutex_create(&m));
    run_lockers(m, 1);
    AT_OK(ABT_mutex_trylock(m));
    CU_ASSERT_EQUAL(ABT_mutex_trylock(m), ABT_ERR_MUTEX_LOCKED);
    AT_OK(ABT_mutex_unlock(m));
    AT_OK(ABT_mutex_free(&m));
    CU_ASSERT_PTR_NULL(m);
    run_lockers(ABT_MUTEX_MEMORY_GET_HANDLE(&static_mem), 1);
    ABT_mutex_attr attr;
    AT_OK(ABT_mutex_attr_create(&attr));
    AT_OK(ABT_mutex_attr_set_recursive(attr, ABT_TRUE));
    AT_OK(ABT_mutex_create_with_attr(attr, &m));
    AT_OK(ABT_mutex_attr_free(&attr));
    run_lockers(m, 3);
    ABT_mutex_attr got;
    ABT_bool rec = ABT_FALSE;
    AT_OK(ABT_mutex_get_attr(m, &got));
    AT_OK(ABT_mutex_attr_get_recursive(got, &rec));
    CU_ASSERT_EQUAL(rec, ABT_TRUE);
    AT_OK(ABT_mutex_attr_free(&got));
    AT_OK(ABT_mutex_free(&m));
    ABT_mutex_memory rmem = ABT_RECURSIVE_MUTEX_INITIALIZER;
    run_lockers(ABT_MUTEX_MEMORY_GET_HANDLE(&rmem), 2);
    at_down();
}

/* The callbacks of a user-defined pool that is never used. */
static ABT_unit ud_create_unit(ABT_pool p, ABT_thread t)
{
    (void)p;
    return (ABT_unit)t;
}
static void ud_free_unit(ABT_pool p, ABT_unit u)
{
    (void)p;
    (void)u;
}
static ABT_bool ud_is_empty(ABT_pool p)
{
    (void)p;
    return ABT_TRUE;
}
static ABT_thread ud_pop(ABT_pool p, ABT_pool_context c)
{
    (void)p;
    (void)c;
    return ABT_THREAD_NULL;
}
static void ud_push(ABT_pool p, ABT_unit u, ABT_pool_context c)
{
    (void)p;
    (void)u;
    (void)c;
}

/* Creates an object as h with `create`, frees it, then frees a copy of
 * the freed handle: the call's error `err`. */
#define STALE_FREE(T, h, create, free_fn, err)                                 \
    do {                                                                       \
        T h, h##_copy;                                                         \
        AT_OK(create);                                                         \
        h##_copy = h;                                                          \
        AT_OK(free_fn(&h));                                                    \
        CU_ASSERT_EQUAL(free_fn(&h##_copy), (err));                            \
    } while (0)

/* Every object the layer allocates for a handle: a free of a copy of a
 * freed handle, of static memory never created, or of another kind's
 * handle is the call's ABT_ERR_INV_* error, not a second free(); a busy
 * mutex refused once is freed later. */
static void test_stale_frees(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_mutex m, m2;
    AT_OK(ABT_mutex_create(&m));
    m2 = m;
    AT_OK(ABT_mutex_lock(m));
    CU_ASSERT_EQUAL(ABT_mutex_free(&m), ABT_ERR_MUTEX); /* locked */
    AT_OK(ABT_mutex_unlock(m));
    AT_OK(ABT_mutex_free(&m));
    CU_ASSERT_EQUAL(ABT_mutex_free(&m2), ABT_ERR_INV_MUTEX);
    ABT_mutex_memory smem = ABT_MUTEX_INITIALIZER;
    ABT_mutex sm = ABT_MUTEX_MEMORY_GET_HANDLE(&smem);
    AT_OK(ABT_mutex_lock(sm));
    AT_OK(ABT_mutex_unlock(sm));
    CU_ASSERT_EQUAL(ABT_mutex_free(&sm), ABT_ERR_INV_MUTEX);

    ABT_cond c, c2;
    AT_OK(ABT_cond_create(&c));
    c2 = c;
    /* Another kind's handle. */
    ABT_mutex as_mutex = (ABT_mutex)(void *)c;
    CU_ASSERT_EQUAL(ABT_mutex_free(&as_mutex), ABT_ERR_INV_MUTEX);
    AT_OK(ABT_cond_free(&c));
    CU_ASSERT_EQUAL(ABT_cond_free(&c2), ABT_ERR_INV_COND);
    ABT_cond_memory cmem = ABT_COND_INITIALIZER;
    ABT_cond sc = ABT_COND_MEMORY_GET_HANDLE(&cmem);
    CU_ASSERT_EQUAL(ABT_cond_free(&sc), ABT_ERR_INV_COND);

    STALE_FREE(ABT_rwlock, h, ABT_rwlock_create(&h), ABT_rwlock_free,
               ABT_ERR_INV_RWLOCK);
    STALE_FREE(ABT_barrier, h, ABT_barrier_create(2, &h), ABT_barrier_free,
               ABT_ERR_INV_BARRIER);
    STALE_FREE(ABT_xstream_barrier, h, ABT_xstream_barrier_create(2, &h),
               ABT_xstream_barrier_free, ABT_ERR_INV_XSTREAM_BARRIER);
    STALE_FREE(ABT_future, h, ABT_future_create(1, NULL, &h), ABT_future_free,
               ABT_ERR_INV_FUTURE);
    /* Eventuals: a dynamic one once; static memory once used, once. */
    STALE_FREE(ABT_eventual, h, ABT_eventual_create(0, &h), ABT_eventual_free,
               ABT_ERR_INV_EVENTUAL);
    ABT_eventual_memory emem = ABT_EVENTUAL_INITIALIZER;
    ABT_eventual se = ABT_EVENTUAL_MEMORY_GET_HANDLE(&emem), se2 = se;
    AT_OK(ABT_eventual_set(se, NULL, 0));
    AT_OK(ABT_eventual_free(&se));
    CU_ASSERT_EQUAL(ABT_eventual_free(&se2), ABT_ERR_INV_EVENTUAL);
    STALE_FREE(ABT_timer, h, ABT_timer_create(&h), ABT_timer_free,
               ABT_ERR_INV_TIMER);
    STALE_FREE(ABT_thread_attr, h, ABT_thread_attr_create(&h),
               ABT_thread_attr_free, ABT_ERR_INV_THREAD_ATTR);
    STALE_FREE(ABT_mutex_attr, h, ABT_mutex_attr_create(&h),
               ABT_mutex_attr_free, ABT_ERR_INV_MUTEX_ATTR);
    STALE_FREE(ABT_sched_config, h,
               ABT_sched_config_create(&h, ABT_sched_config_var_end),
               ABT_sched_config_free, ABT_ERR_INV_SCHED_CONFIG);
    STALE_FREE(ABT_pool_config, h, ABT_pool_config_create(&h),
               ABT_pool_config_free, ABT_ERR_INV_POOL_CONFIG);
    STALE_FREE(ABT_pool_user_def, h,
               ABT_pool_user_def_create(ud_create_unit, ud_free_unit,
                                        ud_is_empty, ud_pop, ud_push, &h),
               ABT_pool_user_def_free, ABT_ERR_INV_POOL_USER_DEF);
    AT_OK(ABT_finalize());

    /* Many objects: the set grows and shrinks as they come and go. */
    AT_OK(ABT_init(0, NULL));
    enum { N = 5000 };
    ABT_mutex *many = calloc(N, sizeof(*many));
    CU_ASSERT_PTR_NOT_NULL_FATAL(many);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++)
            AT_OK(ABT_mutex_create(&many[i]));
        for (int i = 0; i < N; i++)
            AT_OK(ABT_mutex_free(&many[i]));
    }
    free(many);
    AT_OK(ABT_finalize());
}

const ch_test_t abt_mutex_tests[] = {{"exclusion", test_mutex_exclusion},
                                     {"stale_frees", test_stale_frees},
                                     {NULL, NULL}};

/* ---- cond ------------------------------------------------------------------ */

static ABT_mutex cv_mutex;
static ABT_cond cv;
static int cv_turn;

static void cv_player(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int i = 0; i < 50; i++) {
        AT_CHECK_OK(ABT_mutex_lock(cv_mutex));
        while (cv_turn % 2 != me)
            AT_CHECK_OK(ABT_cond_wait(cv, cv_mutex));
        cv_turn++;
        AT_CHECK_OK(ABT_cond_signal(cv));
        AT_CHECK_OK(ABT_mutex_unlock(cv_mutex));
    }
}

static void test_cond_alternate(void)
{
    at_up();
    AT_OK(ABT_mutex_create(&cv_mutex));
    AT_OK(ABT_cond_create(&cv));
    cv_turn = 0;
    ABT_xstream self;
    AT_OK(ABT_xstream_self(&self));
    ABT_thread a, b;
    AT_OK(ABT_thread_create_on_xstream(self, cv_player, (void *)0,
                                       ABT_THREAD_ATTR_NULL, &a));
    AT_OK(ABT_thread_create_on_xstream(at_xs, cv_player, (void *)1,
                                       ABT_THREAD_ATTR_NULL, &b));
    AT_OK(ABT_thread_free(&a));
    AT_OK(ABT_thread_free(&b));
    CU_ASSERT_EQUAL(cv_turn, 100);
    /* Nobody signals: the timed wait expires with the mutex held again. */
    AT_OK(ABT_mutex_lock(cv_mutex));
    struct timespec ts = in_ms(5);
    CU_ASSERT_EQUAL(ABT_cond_timedwait(cv, cv_mutex, &ts),
                    ABT_ERR_COND_TIMEDOUT);
    CU_ASSERT_EQUAL(ABT_mutex_trylock(cv_mutex), ABT_ERR_MUTEX_LOCKED);
    AT_OK(ABT_mutex_unlock(cv_mutex));
    AT_OK(ABT_cond_free(&cv));
    AT_OK(ABT_mutex_free(&cv_mutex));
    at_down();
}

const ch_test_t abt_cond_tests[] = {{"alternate", test_cond_alternate},
                                    {NULL, NULL}};

/* ---- rwlock ------------------------------------------------------------------ */

static ABT_rwlock rw;
static atomic_int readers_in, max_readers, writer_overlap;

static void rw_reader(void *arg)
{
    AT_CHECK_OK(ABT_rwlock_rdlock(rw));
    int n = atomic_fetch_add(&readers_in, 1) + 1;
    int m = atomic_load(&max_readers);
    while (n > m && !atomic_compare_exchange_weak(&max_readers, &m, n))
        ;
    AT_CHECK_OK(ABT_thread_yield());
    atomic_fetch_sub(&readers_in, 1);
    AT_CHECK_OK(ABT_rwlock_unlock(rw));
}

static void rw_writer(void *arg)
{
    AT_CHECK_OK(ABT_rwlock_wrlock(rw));
    if (atomic_load(&readers_in) != 0)
        atomic_fetch_add(&writer_overlap, 1);
    AT_CHECK_OK(ABT_thread_yield());
    AT_CHECK_OK(ABT_rwlock_unlock(rw));
}

static void test_rwlock_share(void)
{
    AT_OK(ABT_init(0, NULL));
    AT_OK(ABT_rwlock_create(&rw));
    atomic_store(&readers_in, 0);
    atomic_store(&max_readers, 0);
    atomic_store(&writer_overlap, 0);
    ABT_xstream self;
    AT_OK(ABT_xstream_self(&self));
    ABT_thread t[6];
    for (int i = 0; i < 6; i++)
        AT_OK(ABT_thread_create_on_xstream(self, i == 3 ? rw_writer : rw_reader,
                                           NULL, ABT_THREAD_ATTR_NULL, &t[i]));
    AT_OK(ABT_thread_free_many(6, t));
    CU_ASSERT(atomic_load(&max_readers) >= 2); /* readers shared the lock */
    CU_ASSERT_EQUAL(atomic_load(&writer_overlap), 0);
    AT_OK(ABT_rwlock_free(&rw));
    AT_OK(ABT_finalize());
}

const ch_test_t abt_rwlock_tests[] = {{"share", test_rwlock_share},
                                      {NULL, NULL}};

/* ---- barrier ------------------------------------------------------------------ */

static ABT_barrier bar;
static atomic_int phase_count[3];
static atomic_int phase_bad;

static void bar_member(void *arg)
{
    for (int p = 0; p < 3; p++) {
        atomic_fetch_add(&phase_count[p], 1);
        AT_CHECK_OK(ABT_barrier_wait(bar));
        /* Past the barrier every member has counted this phase. */
        if (atomic_load(&phase_count[p]) != 4)
            atomic_fetch_add(&phase_bad, 1);
    }
}

static void test_barrier_phases(void)
{
    at_up();
    AT_OK(ABT_barrier_create(4, &bar));
    uint32_t n = 0;
    AT_OK(ABT_barrier_get_num_waiters(bar, &n));
    CU_ASSERT_EQUAL(n, 4);
    for (int p = 0; p < 3; p++)
        atomic_store(&phase_count[p], 0);
    atomic_store(&phase_bad, 0);
    ABT_xstream self;
    AT_OK(ABT_xstream_self(&self));
    ABT_thread t[4];
    for (int i = 0; i < 4; i++)
        AT_OK(ABT_thread_create_on_xstream(i & 1 ? at_xs : self, bar_member,
                                           NULL, ABT_THREAD_ATTR_NULL, &t[i]));
    AT_OK(ABT_thread_free_many(4, t));
    CU_ASSERT_EQUAL(atomic_load(&phase_bad), 0);
    AT_OK(ABT_barrier_reinit(bar, 1));
    AT_OK(ABT_barrier_wait(bar)); /* alone: passes at once */
    AT_OK(ABT_barrier_free(&bar));
    at_down();
}

const ch_test_t abt_barrier_tests[] = {{"phases", test_barrier_phases},
                                       {NULL, NULL}};

/* ---- key ------------------------------------------------------------------ */

static ABT_key key;
static atomic_int destroyed;

static void key_dtor(void *v)
{
    atomic_fetch_add(&destroyed, (int)(intptr_t)v);
}

static void key_user(void *arg)
{
    void *v = (void *)1;
    AT_CHECK_OK(ABT_key_get(key, &v));
    CH_CHECK(v == NULL); /* a new ULT sees NULL */
    AT_CHECK_OK(ABT_key_set(key, arg));
    AT_CHECK_OK(ABT_thread_yield());
    AT_CHECK_OK(ABT_self_get_specific(key, &v));
    CH_CHECK(v == arg); /* its own value, across a yield */
}

static void test_key_values(void)
{
    AT_OK(ABT_init(0, NULL));
    atomic_store(&destroyed, 0);
    AT_OK(ABT_key_create(key_dtor, &key));
    ABT_xstream self;
    AT_OK(ABT_xstream_self(&self));
    ABT_thread t[3];
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_thread_create_on_xstream(self, key_user,
                                           (void *)(intptr_t)(10 << i),
                                           ABT_THREAD_ATTR_NULL, &t[i]));
    AT_OK(ABT_thread_free_many(3, t));
    CU_ASSERT_EQUAL(atomic_load(&destroyed), 10 + 20 + 40);
    AT_OK(ABT_key_free(&key));
    CU_ASSERT_PTR_NULL(key);
    CU_ASSERT_EQUAL(ABT_key_set(key, NULL), ABT_ERR_INV_KEY);
    AT_OK(ABT_finalize());
}

/* Values of other units: set by the main ULT while the units wait on an
 * eventual, then changed by the units themselves and read back by main;
 * one key is set by its unit and by main at the same time. */
enum { KEY_UNITS = 16, KEY_ROUNDS = 200 };
static ABT_key key_a, key_b;
static ABT_eventual key_go;
static atomic_int key_bad;

static void key_other_user(void *arg)
{
    intptr_t i = (intptr_t)arg;
    AT_CHECK_OK(ABT_eventual_wait(key_go, NULL));
    void *v = NULL;
    AT_CHECK_OK(ABT_key_get(key_a, &v));
    if (v != (void *)(i + 1))
        atomic_fetch_add(&key_bad, 1);
    AT_CHECK_OK(ABT_key_set(key_a, (void *)(i + 1001)));
    /* key_b is main's to set meanwhile: ours stays whole. */
    for (int r = 0; r < KEY_ROUNDS; r++) {
        AT_CHECK_OK(ABT_key_set(key_a, (void *)(i + 1001 + r)));
        AT_CHECK_OK(ABT_key_get(key_a, &v));
        if (v != (void *)(i + 1001 + r))
            atomic_fetch_add(&key_bad, 1);
        if (r % 16 == 0)
            AT_CHECK_OK(ABT_thread_yield());
    }
}

static void test_key_other_units(void)
{
    AT_OK(ABT_init(0, NULL));
    atomic_store(&destroyed, 0);
    atomic_store(&key_bad, 0);
    AT_OK(ABT_key_create(key_dtor, &key_a));
    AT_OK(ABT_key_create(NULL, &key_b));
    AT_OK(ABT_eventual_create(0, &key_go));
    ABT_xstream xs[3];
    ABT_pool pools[3];
    for (int i = 0; i < 3; i++) {
        AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &xs[i]));
        AT_OK(ABT_xstream_get_main_pools(xs[i], 1, &pools[i]));
    }
    ABT_thread t[KEY_UNITS];
    for (intptr_t i = 0; i < KEY_UNITS; i++) {
        AT_OK(ABT_thread_create(pools[i % 3], key_other_user, (void *)i,
                                ABT_THREAD_ATTR_NULL, &t[i]));
        AT_OK(ABT_thread_set_specific(t[i], key_a, (void *)(i + 1)));
    }
    void *v = NULL;
    AT_OK(ABT_thread_get_specific(t[5], key_a, &v));
    CU_ASSERT_PTR_EQUAL(v, (void *)6);
    AT_OK(ABT_eventual_set(key_go, NULL, 0));
    /* While they run: main sets key_b of every unit, many times. */
    for (int r = 0; r < KEY_ROUNDS; r++)
        for (int i = 0; i < KEY_UNITS; i++)
            AT_OK(ABT_thread_set_specific(t[i], key_b, (void *)(intptr_t)(r + 1)));
    AT_OK(ABT_thread_join_many(KEY_UNITS, t));
    CU_ASSERT_EQUAL(atomic_load(&key_bad), 0);
    int sum_expected = 0;
    for (intptr_t i = 0; i < KEY_UNITS; i++) {
        AT_OK(ABT_thread_get_specific(t[i], key_a, &v));
        CU_ASSERT_PTR_EQUAL(v, (void *)(i + 1001 + KEY_ROUNDS - 1));
        AT_OK(ABT_thread_get_specific(t[i], key_b, &v));
        CU_ASSERT_PTR_EQUAL(v, (void *)(intptr_t)KEY_ROUNDS);
        sum_expected += (int)(i + 1001 + KEY_ROUNDS - 1);
    }
    /* Destructors run when the records are freed, with the last values. */
    CU_ASSERT_EQUAL(atomic_load(&destroyed), 0);
    AT_OK(ABT_thread_free_many(KEY_UNITS, t));
    CU_ASSERT_EQUAL(atomic_load(&destroyed), sum_expected);
    for (int i = 0; i < 3; i++)
        AT_OK(ABT_xstream_free(&xs[i]));
    AT_OK(ABT_eventual_free(&key_go));
    AT_OK(ABT_key_free(&key_a));
    AT_OK(ABT_key_free(&key_b));
    AT_OK(ABT_finalize());
}

/* Tasklets hold values too; a freed key's values are neither seen nor
 * destroyed; calls from an external thread. */
static void key_tasklet(void *arg)
{
    void *v = NULL;
    AT_CHECK_OK(ABT_key_get(key_a, &v));
    CH_CHECK(v == (void *)7); /* set by main before it ran */
    AT_CHECK_OK(ABT_self_set_specific(key_a, arg));
}

static void *key_external(void *arg)
{
    (void)arg;
    void *v;
    CH_CHECK_EQ(ABT_key_set(key_a, (void *)1), ABT_ERR_INV_XSTREAM);
    CH_CHECK_EQ(ABT_key_get(key_a, &v), ABT_ERR_INV_XSTREAM);
    return NULL;
}

static void test_key_tasklets_and_errors(void)
{
    AT_OK(ABT_init(0, NULL));
    atomic_store(&destroyed, 0);
    AT_OK(ABT_key_create(key_dtor, &key_a));
    ABT_pool pool = at_main_pool();
    /* One stream: the tasklet runs only when main lets it. */
    ABT_task k;
    AT_OK(ABT_task_create(pool, key_tasklet, (void *)40, &k));
    AT_OK(ABT_task_set_specific(k, key_a, (void *)7));
    AT_OK(ABT_thread_join(k));
    void *v = NULL;
    AT_OK(ABT_task_get_specific(k, key_a, &v));
    CU_ASSERT_PTR_EQUAL(v, (void *)40);
    AT_OK(ABT_task_free(&k));
    CU_ASSERT_EQUAL(atomic_load(&destroyed), 40);
    /* The main ULT has values of its own. */
    AT_OK(ABT_key_set(key_a, (void *)3));
    AT_OK(ABT_key_get(key_a, &v));
    CU_ASSERT_PTR_EQUAL(v, (void *)3);
    pthread_t pt;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&pt, NULL, key_external, NULL), 0);
    pthread_join(pt, NULL);
    /* A freed key: its values stay (for their destructors), its slot's
     * next key starts empty, and the old handle is refused. */
    AT_OK(ABT_key_free(&key_a));
    CU_ASSERT_EQUAL(ABT_key_free(&key_a), ABT_ERR_INV_KEY);
    ABT_key fresh;
    AT_OK(ABT_key_create(key_dtor, &fresh));
    AT_OK(ABT_key_get(fresh, &v));
    CU_ASSERT_PTR_NULL(v);
    ABT_thread me;
    AT_OK(ABT_self_get_thread(&me));
    CU_ASSERT_EQUAL(ABT_thread_set_specific(ABT_THREAD_NULL, fresh, NULL),
                    ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_thread_get_specific(me, fresh, NULL), ABT_ERR_INV_ARG);
    AT_OK(ABT_key_free(&fresh));
    CU_ASSERT_EQUAL(atomic_load(&destroyed), 40);
    AT_OK(ABT_finalize());
    /* The main ULT's value of the freed key: destroyed with the main ULT,
     * as Argobots documents. */
    CU_ASSERT_EQUAL(atomic_load(&destroyed), 43);
}

/* Argobots runs a unit's destructors when the unit is freed, with the
 * destructor each value's key had, also for a key freed since. Here a
 * value of a freed key meets the next key, which takes over the freed
 * key's slot: both values are destroyed, each by its own destructor. */
static atomic_int destroyed_b;

static void key_dtor_b(void *v)
{
    atomic_fetch_add(&destroyed_b, (int)(intptr_t)v);
}

static void key_noop(void *arg)
{
    (void)arg;
}

static void test_key_freed_key_values(void)
{
    AT_OK(ABT_init(0, NULL));
    atomic_store(&destroyed, 0);
    atomic_store(&destroyed_b, 0);
    ABT_key ka, kb, kc;
    AT_OK(ABT_key_create(key_dtor, &ka));
    ABT_thread t;
    AT_OK(ABT_thread_create(at_main_pool(), key_noop, NULL,
                            ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_thread_set_specific(t, ka, (void *)100));
    AT_OK(ABT_key_free(&ka));
    /* The lowest free slot: ka's. */
    AT_OK(ABT_key_create(key_dtor_b, &kb));
    void *v = (void *)1;
    AT_OK(ABT_thread_get_specific(t, kb, &v));
    CU_ASSERT_PTR_NULL(v);
    AT_OK(ABT_thread_set_specific(t, kb, (void *)7));
    AT_OK(ABT_thread_set_specific(t, kb, (void *)8)); /* replaces 7 */
    AT_OK(ABT_thread_join(t));
    CU_ASSERT_EQUAL(atomic_load(&destroyed), 0); /* a join destroys nothing */
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(atomic_load(&destroyed), 100);
    CU_ASSERT_EQUAL(atomic_load(&destroyed_b), 8);
    /* A tasklet's too; and a NULL value has no destructor call. */
    ABT_task k;
    AT_OK(ABT_task_create(at_main_pool(), key_noop, NULL, &k));
    AT_OK(ABT_task_set_specific(k, kb, (void *)20));
    AT_OK(ABT_key_create(key_dtor, &kc));
    AT_OK(ABT_task_set_specific(k, kc, NULL));
    AT_OK(ABT_key_free(&kb));
    AT_OK(ABT_key_free(&kc));
    AT_OK(ABT_task_free(&k));
    CU_ASSERT_EQUAL(atomic_load(&destroyed_b), 28);
    CU_ASSERT_EQUAL(atomic_load(&destroyed), 100);
    AT_OK(ABT_finalize());
}

/* ULTs created without a handle run their values' destructors however
 * they end: by returning, by ABT_self_exit, by ABT_self_exit_to. */
static ABT_thread key_exit_target;
static atomic_int key_target_ran;

static void key_target(void *arg)
{
    (void)arg;
    atomic_fetch_add(&key_target_ran, 1);
}

static void key_detached(void *arg)
{
    intptr_t how = (intptr_t)arg; /* 0: return, 1: exit, 2: exit_to */
    AT_CHECK_OK(ABT_key_set(key_a, (void *)((intptr_t)1 << (4 * how))));
    if (how == 1)
        AT_CHECK_OK(ABT_self_exit());
    else if (how == 2)
        AT_CHECK_OK(ABT_self_exit_to(key_exit_target));
}

static void test_key_detached_ends(void)
{
    AT_OK(ABT_init(0, NULL));
    atomic_store(&destroyed, 0);
    atomic_store(&key_target_ran, 0);
    AT_OK(ABT_key_create(key_dtor, &key_a));
    ABT_pool pool = at_main_pool();
    AT_OK(ABT_thread_create(pool, key_target, NULL, ABT_THREAD_ATTR_NULL,
                            &key_exit_target));
    for (intptr_t how = 0; how < 3; how++)
        AT_OK(ABT_thread_create(pool, key_detached, (void *)how,
                                ABT_THREAD_ATTR_NULL, NULL));
    for (int i = 0; i < 100000 && atomic_load(&destroyed) != 0x111; i++)
        AT_OK(ABT_thread_yield());
    CU_ASSERT_EQUAL(atomic_load(&destroyed), 0x111);
    AT_OK(ABT_thread_free(&key_exit_target));
    CU_ASSERT_EQUAL(atomic_load(&key_target_ran), 1);
    AT_OK(ABT_key_free(&key_a));
    AT_OK(ABT_finalize());
}

const ch_test_t abt_key_tests[] = {
    {"values", test_key_values},
    {"other_units", test_key_other_units},
    {"tasklets_and_errors", test_key_tasklets_and_errors},
    {"detached_ends", test_key_detached_ends},
    {"freed_key_values", test_key_freed_key_values},
    {NULL, NULL}};
