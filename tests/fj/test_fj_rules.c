/*
 * tests/fj/test_fj_rules.c: the rules suite (a task may not block: the
 * calls that would wait return COEXEC_ECONTEXT, those that do not work)
 * and the errors suite (every code of coexec_fj_run, coexec_parallel_for
 * and coexec_parallel_reduce; empty ranges; a result aliasing identity).
 */
#include "fj_test.h"

#include <limits.h>

/* ======================================================================= */
/* rules                                                                    */
/* ======================================================================= */

typedef struct {
    coexec_mutex_t m;
    coexec_eventual_t ev;   /* never set while tasks look at it */
    coexec_eventual_t gate; /* holds `held` and `pending` until set */
    coexec_thread_t held;   /* a ULT waiting on gate */
    coexec_tasklet_t pending;
    coexec_key_t key;
    coexec_pool_t pool;   /* the main pool of stream 1 */
    coexec_xstream_t xs2; /* stream 2 */
    coexec_cond_t c;
    coexec_barrier_t bar; /* of 2 */
    coexec_rwlock_t l;
    coexec_channel_t ch; /* of 1 int */
    atomic_long refused; /* tasks that saw every refusal */
} blk_t;

static intptr_t offload_nop(void *arg)
{
    return 0;
}

static void wait_gate(void *arg)
{
    blk_t *b = arg;
    CH_CHECK_RC(coexec_eventual_wait(&b->gate, NULL), COEXEC_OK);
}

static coexec_poll_status_t poll_gate(coexec_poll_t *cx, void *arg)
{
    blk_t *b = arg;
    int rc = coexec_eventual_poll(&b->gate, cx, NULL);
    CH_CHECK(rc == COEXEC_READY || rc == COEXEC_PENDING);
    return rc == COEXEC_PENDING ? COEXEC_PENDING : COEXEC_READY;
}

/* Inside a region: no unit runs, as in a scheduler, and every call that
 * would wait or switch refuses. */
static void refuse_all(blk_t *b)
{
    CH_CHECK(coexec_self_caller() == COEXEC_CALLER_SCHED);
    CH_CHECK_RC(coexec_yield(), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_thread_join(b->held), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_tasklet_join(b->pending), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_mutex_lock(&b->m), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_eventual_wait(&b->ev, NULL), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_eventual_wait_timed(&b->ev, 1000000, NULL),
                COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_sleep_ns(1000000), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_park(), COEXEC_ECONTEXT);
    coexec_thread_t self;
    CH_CHECK_RC(coexec_thread_self(&self), COEXEC_ECONTEXT);
    void *v = NULL;
    CH_CHECK_RC(coexec_key_get(b->key, &v), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_thread_exit(), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_self_suspend(), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_yield_to(b->held), COEXEC_ECONTEXT);
    coexec_thread_t child;
    CH_CHECK_RC(coexec_thread_create_child_first(b->pool, ch_count_ult, NULL,
                                                 NULL, &child),
                COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_cond_wait(&b->c, &b->m), COEXEC_ECONTEXT);
    int serial = -1;
    CH_CHECK_RC(coexec_barrier_wait(&b->bar, &serial), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_rwlock_rdlock(&b->l), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_rwlock_wrlock(&b->l), COEXEC_ECONTEXT);
    int msg = 1;
    CH_CHECK_RC(coexec_channel_send(&b->ch, &msg), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_channel_recv(&b->ch, &msg), COEXEC_ECONTEXT);
    intptr_t ret = 0;
    CH_CHECK_RC(coexec_offload(offload_nop, NULL, &ret), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_thread_join_timed(b->held, 1000000), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_mutex_lock_timed(&b->m, 1000000), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_xstream_join(b->xs2), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_finalize(), COEXEC_ECONTEXT);
    atomic_fetch_add(&b->refused, 1);
}

COEXEC_FJ_VOID_TASK_1(refuse_task, blk_t *, b)
{
    refuse_all(b);
}

#define REFUSERS 64

static void refuse_region(coexec_fj_t *coexec_fj_, void *arg)
{
    blk_t *b = arg;
    refuse_all(b); /* the region function itself */
    for (int i = 0; i < REFUSERS; i++)
        COEXEC_FJ_SPAWN(refuse_task, b);
    for (int i = 0; i < REFUSERS; i++)
        COEXEC_FJ_SYNC(refuse_task);
}

/* A ULT or a tasklet opens refuse_region; afterwards it is what it was,
 * and a ULT can yield again. */
static void refuse_from_unit(void *arg)
{
    coexec_caller_t before = coexec_self_caller();
    CH_CHECK_RC(coexec_fj_run(refuse_region, arg), COEXEC_OK);
    CH_CHECK(coexec_self_caller() == before);
    if (before == COEXEC_CALLER_ULT) {
        coexec_thread_t self;
        CH_CHECK_RC(coexec_thread_self(&self), COEXEC_OK);
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    }
}

static void t_blocking_refused(void)
{
    ch_init(NSTREAMS);
    blk_t b;
    atomic_init(&b.refused, 0);
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&b.m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_eventual_init(&b.ev, sizeof(long)));
    CH_ASSERT_OK_FATAL(coexec_eventual_init(&b.gate, 0));
    CH_ASSERT_OK_FATAL(coexec_key_create(NULL, &b.key));
    CH_ASSERT_OK_FATAL(coexec_cond_init(&b.c));
    CH_ASSERT_OK_FATAL(coexec_barrier_init(&b.bar, 2));
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&b.l));
    CH_ASSERT_OK_FATAL(coexec_channel_init(&b.ch, sizeof(int), 1));
    b.pool = ch_main_pool(1);
    b.xs2 = ch_xstream(2);
    CH_ASSERT_OK_FATAL(
        coexec_thread_create_on(ch_xstream(1), wait_gate, &b, NULL, &b.held));
    CH_ASSERT_OK_FATAL(
        coexec_tasklet_create_on(ch_xstream(2), poll_gate, &b, &b.pending));
    CH_WAIT(ch_thread_state(b.held) == COEXEC_UNIT_BLOCKED);
    long rounds = fj_run_rounds(500, refuse_region, &b);
    CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(3), refuse_from_unit, &b));
    CH_ASSERT_OK(ch_run_tasklet_in(ch_main_pool(3), refuse_from_unit, &b));
    CH_ASSERT_EQ(atomic_load(&b.refused), (rounds + 2) * (REFUSERS + 1));
    /* The refusals left nothing behind: every call works now. */
    CU_ASSERT(coexec_self_caller() == COEXEC_CALLER_ULT);
    CH_ASSERT_OK(coexec_yield());
    CH_ASSERT_OK(coexec_mutex_lock(&b.m));
    CH_ASSERT_OK(coexec_mutex_unlock(&b.m));
    CH_ASSERT_OK(coexec_sleep_ns(1000));
    void *v = (void *)1;
    CH_ASSERT_OK(coexec_key_set(b.key, v));
    v = NULL;
    CH_ASSERT_OK(coexec_key_get(b.key, &v));
    CU_ASSERT_PTR_EQUAL(v, (void *)1);
    long val = 99;
    CH_ASSERT_OK(coexec_eventual_set(&b.ev, &val, sizeof val));
    CH_ASSERT_OK(coexec_eventual_wait(&b.ev, &v));
    CH_ASSERT_EQ(*(long *)v, 99);
    CH_ASSERT_OK(coexec_eventual_set(&b.gate, NULL, 0));
    CH_ASSERT_OK(coexec_thread_free(&b.held));
    CH_ASSERT_OK(coexec_tasklet_free(&b.pending));
    long f = -1;
    CH_ASSERT_OK(COEXEC_FJ_RUN(fib, &f, 20));
    CH_ASSERT_EQ(f, ch_fib(20));
    CH_ASSERT_OK(coexec_key_delete(b.key));
    CH_ASSERT_OK(coexec_channel_destroy(&b.ch));
    CH_ASSERT_OK(coexec_rwlock_destroy(&b.l));
    CH_ASSERT_OK(coexec_barrier_destroy(&b.bar));
    CH_ASSERT_OK(coexec_cond_destroy(&b.c));
    CH_ASSERT_OK(coexec_eventual_destroy(&b.gate));
    CH_ASSERT_OK(coexec_eventual_destroy(&b.ev));
    CH_ASSERT_OK(coexec_mutex_destroy(&b.m));
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    ch_finalize();
}

/* Calls that do not wait work in tasks: creating ULTs and tasklets (run
 * and joined after the region), setting an eventual a ULT waits on (it
 * runs while the region is still open), try-locks. */
#define MAKERS 32

typedef struct {
    coexec_thread_t t[MAKERS];
    coexec_tasklet_t k[MAKERS];
    coexec_eventual_t ev;
    coexec_mutex_t m;    /* free */
    coexec_mutex_t held; /* locked by the main ULT */
    atomic_int woke;     /* the waiter got the value */
} mk_t;

COEXEC_FJ_VOID_TASK_2(make_units, mk_t *, mk, int, i)
{
    CH_CHECK_RC(coexec_thread_create_on(ch_xstream(i % NSTREAMS), ch_count_ult,
                                        NULL, NULL, &mk->t[i]),
                COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_create_on(ch_xstream((i + 1) % NSTREAMS),
                                         ch_count_tasklet, NULL, &mk->k[i]),
                COEXEC_OK);
    CH_CHECK_RC(coexec_mutex_trylock(&mk->held), COEXEC_EBUSY);
}

COEXEC_FJ_VOID_TASK_1(lock_unlock, mk_t *, mk)
{
    int rc = coexec_mutex_trylock(&mk->m);
    CH_CHECK(rc == COEXEC_OK || rc == COEXEC_EBUSY); /* tasks race for it */
    if (rc == COEXEC_OK)
        CH_CHECK_RC(coexec_mutex_unlock(&mk->m), COEXEC_OK);
}

COEXEC_FJ_VOID_TASK_1(set_ev, mk_t *, mk)
{
    long val = 1234;
    CH_CHECK_RC(coexec_eventual_set(&mk->ev, &val, sizeof val), COEXEC_OK);
}

static void ev_waiter(void *arg)
{
    mk_t *mk = arg;
    void *v = NULL;
    CH_CHECK_RC(coexec_eventual_wait(&mk->ev, &v), COEXEC_OK);
    if (v)
        CH_CHECK_EQ(*(long *)v, 1234);
    atomic_store(&mk->woke, 1);
}

static void make_region(coexec_fj_t *coexec_fj_, void *arg)
{
    mk_t *mk = arg;
    for (int i = 0; i < MAKERS; i++) {
        COEXEC_FJ_SPAWN(make_units, mk, i);
        COEXEC_FJ_SPAWN(lock_unlock, mk);
    }
    COEXEC_FJ_SPAWN(set_ev, mk);
    COEXEC_FJ_SYNC(set_ev);
    /* The waiter is woken and runs on its stream while this region stays
     * open (spawning, so that thieves find something too). */
    fj_spawn_until(coexec_fj_, &mk->woke);
    for (int i = 0; i < MAKERS; i++) {
        COEXEC_FJ_SYNC(lock_unlock);
        COEXEC_FJ_SYNC(make_units);
    }
}

static void t_nonblocking_work(void)
{
    ch_init(NSTREAMS);
    static mk_t mk;
    memset(&mk, 0, sizeof mk);
    atomic_init(&mk.woke, 0);
    CH_ASSERT_OK_FATAL(coexec_eventual_init(&mk.ev, sizeof(long)));
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&mk.m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&mk.held, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_mutex_lock(&mk.held));
    coexec_thread_t w;
    CH_ASSERT_OK_FATAL(
        coexec_thread_create_on(ch_xstream(1), ev_waiter, &mk, NULL, &w));
    CH_WAIT(ch_thread_state(w) == COEXEC_UNIT_BLOCKED);
    atomic_store(&ch_count, 0);
    CH_ASSERT_OK(coexec_fj_run(make_region, &mk));
    CH_ASSERT_EQ(atomic_load(&mk.woke), 1);
    for (int i = 0; i < MAKERS; i++) {
        CH_ASSERT_OK(coexec_thread_free(&mk.t[i]));
        CH_ASSERT_OK(coexec_tasklet_free(&mk.k[i]));
    }
    CH_ASSERT_EQ(atomic_load(&ch_count), 2 * MAKERS);
    CH_ASSERT_OK(coexec_thread_free(&w));
    CH_ASSERT_OK(coexec_mutex_unlock(&mk.held));
    CH_ASSERT_OK(coexec_mutex_lock(&mk.m)); /* the tasks left it free */
    CH_ASSERT_OK(coexec_mutex_unlock(&mk.m));
    CH_ASSERT_OK(coexec_mutex_destroy(&mk.m));
    CH_ASSERT_OK(coexec_mutex_destroy(&mk.held));
    CH_ASSERT_OK(coexec_eventual_destroy(&mk.ev));
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    ch_finalize();
}

/* A region is not its stream's scheduler loop: a task may not run a unit
 * (that switches) nor park the stream (coexec/sched.h's loop calls). One
 * stream, so that nothing else takes the units queued here. */
typedef struct {
    coexec_pool_t spare; /* served by no scheduler */
    coexec_unit_t u;     /* popped from it in the region */
    int run_rc, idle_rc;
    atomic_int ran;
} loopcalls_t;

static void lc_ult(void *arg)
{
    loopcalls_t *x = arg;
    atomic_fetch_add(&x->ran, 1);
}

static void loopcalls_region(coexec_fj_t *coexec_fj_, void *arg)
{
    loopcalls_t *x = arg;
    coexec_sched_t s;
    CH_CHECK_RC(coexec_sched_self(&s), COEXEC_OK);
    CH_CHECK_RC(coexec_pool_pop(x->spare, &x->u), COEXEC_OK);
    CH_CHECK(!CH_IS_NULL(x->u));
    x->run_rc = coexec_sched_run_unit(s, x->u);
    /* the stream's pool has a unit queued: a park returns at once */
    x->idle_rc = coexec_sched_idle(s);
}

static void t_loop_calls_refused(void)
{
    ch_init(1);
    loopcalls_t x = {.run_rc = -1, .idle_rc = -1};
    atomic_init(&x.ran, 0);
    coexec_thread_t t, queued;
    CH_ASSERT_OK_FATAL(
        coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &x.spare));
    CH_ASSERT_OK_FATAL(coexec_thread_create(x.spare, lc_ult, &x, NULL, &t));
    CH_ASSERT_OK_FATAL(
        coexec_thread_create(ch_main_pool(0), lc_ult, &x, NULL, &queued));
    CH_ASSERT_OK(coexec_fj_run(loopcalls_region, &x));
    CH_ASSERT_RC(x.run_rc, COEXEC_ECONTEXT);
    CH_ASSERT_RC(x.idle_rc, COEXEC_ECONTEXT);
    CH_ASSERT_EQ(atomic_load(&x.ran), 0); /* nothing ran in the region */
    if (x.run_rc != COEXEC_OK)
        CH_ASSERT_OK(coexec_pool_push(ch_main_pool(0), x.u));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_thread_free(&queued));
    CH_ASSERT_EQ(atomic_load(&x.ran), 2);
    CH_ASSERT_OK(coexec_pool_free(&x.spare));
    ch_finalize();
}

const ch_test_t fj_rules_tests[] = {
    {"blocking_calls_refused", t_blocking_refused},
    {"nonblocking_calls_work", t_nonblocking_work},
    {"scheduler_loop_calls_refused", t_loop_calls_refused},
    {NULL, NULL}};

/* ======================================================================= */
/* errors                                                                   */
/* ======================================================================= */

static atomic_int g_called;

static void count_fn(coexec_fj_t *coexec_fj_, void *arg)
{
    atomic_fetch_add(&g_called, 1);
}

static void count_body(int64_t begin, int64_t end, void *arg)
{
    atomic_fetch_add(&g_called, 1);
}

static void count_reduce(int64_t begin, int64_t end, void *acc, void *arg)
{
    atomic_fetch_add(&g_called, 1);
}

static void count_combine(void *acc, const void *other, void *arg)
{
    atomic_fetch_add(&g_called, 1);
}

/* The three entries with a non-empty range expect `want`; fn and the
 * bodies must not run. From any thread (CH_CHECK). */
static void expect_all(int want)
{
    atomic_store(&g_called, 0);
    int64_t r = 5, id = 0;
    CH_CHECK_RC(coexec_fj_run(count_fn, NULL), want);
    CH_CHECK_RC(coexec_parallel_for(0, 10, 1, count_body, NULL), want);
    CH_CHECK_RC(coexec_parallel_reduce(0, 10, 1, &r, sizeof r, &id,
                                       count_reduce, count_combine, NULL),
                want);
    long f = -1;
    CH_CHECK_RC(COEXEC_FJ_RUN(fib, &f, 10), want);
    CH_CHECK_EQ(f, -1);
    CH_CHECK_EQ(r, 5);
    CH_CHECK_EQ(atomic_load(&g_called), 0);
}

static void t_notinit(void)
{
    expect_all(COEXEC_ENOTINIT);
    ch_init(NSTREAMS);
    ch_finalize();
    expect_all(COEXEC_ENOTINIT);
    /* empty ranges too: there is no runtime to say OK */
    int64_t r = 5, id = 0;
    CH_ASSERT_RC(coexec_parallel_for(3, 3, 0, count_body, NULL),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_parallel_reduce(3, 3, 0, &r, sizeof r, &id,
                                        count_reduce, count_combine, NULL),
                 COEXEC_ENOTINIT);
    CH_ASSERT_EQ(ch_remote_failures(), 0);
}

static void external_expect(void *arg)
{
    CH_CHECK(coexec_self_caller() == COEXEC_CALLER_EXTERNAL);
    expect_all(COEXEC_ECONTEXT);
}

static void t_external_thread(void)
{
    ch_init(NSTREAMS);
    ch_run_external(external_expect, NULL);
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    ch_finalize();
}

/* A user scheduler's loop is a scheduler's own code: ECONTEXT there. */
typedef struct {
    atomic_int tried;
} us_t;

static void us_run(coexec_sched_t sched, void *state)
{
    us_t *u = state;
    if (!atomic_load(&u->tried)) {
        CH_CHECK(coexec_self_caller() == COEXEC_CALLER_SCHED);
        expect_all(COEXEC_ECONTEXT);
        atomic_store(&u->tried, 1);
    }
    for (;;) {
        coexec_unit_t unit = {0};
        CH_CHECK_RC(coexec_sched_pop(sched, 0, &unit), COEXEC_OK);
        if (!CH_IS_NULL(unit))
            CH_CHECK_RC(coexec_sched_run_unit(sched, unit), COEXEC_OK);
        CH_CHECK_RC(coexec_sched_check_events(sched), COEXEC_OK);
        int stop = 0;
        CH_CHECK_RC(coexec_sched_has_to_stop(sched, &stop), COEXEC_OK);
        if (stop)
            return;
        if (CH_IS_NULL(unit))
            CH_CHECK_RC(coexec_sched_idle(sched), COEXEC_OK);
    }
}

static int us_init(coexec_sched_t sched, void *arg, void **state)
{
    *state = arg;
    return COEXEC_OK;
}

static void t_user_sched(void)
{
    ch_init(NSTREAMS);
    static const coexec_sched_ops_t ops = {
        .size = sizeof(coexec_sched_ops_t), .init = us_init, .run = us_run};
    us_t u;
    atomic_init(&u.tried, 0);
    coexec_pool_t pool;
    coexec_sched_t sched;
    coexec_xstream_t xs;
    coexec_xstream_attr_t a;
    CH_ASSERT_OK_FATAL(
        coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool));
    CH_ASSERT_OK_FATAL(
        coexec_sched_create_user(&ops, &pool, 1, NULL, &u, &sched));
    CH_ASSERT_OK_FATAL(coexec_xstream_attr_init(&a));
    a.sched = sched;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));
    CH_WAIT(atomic_load(&u.tried));
    /* the stream runs units after that */
    atomic_store(&ch_count, 0);
    CH_ASSERT_OK(ch_run_ult_in(pool, ch_count_ult, NULL));
    CH_ASSERT_EQ(atomic_load(&ch_count), 1);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_OK(coexec_pool_free(&pool));
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    ch_finalize();
}

static void t_run_einval(void)
{
    CH_ASSERT_RC(coexec_fj_run(NULL, NULL), COEXEC_EINVAL);
    ch_init(NSTREAMS);
    CH_ASSERT_RC(coexec_fj_run(NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_fj_run(NULL, &g_called), COEXEC_EINVAL);
    ch_finalize();
}

/* parallel_for and parallel_reduce with bad ranges and arguments. */
static void t_loop_args(void)
{
    ch_init(NSTREAMS);
    atomic_store(&g_called, 0);
    int64_t r = 5, id = 0;
    unsigned char big[COEXEC_REDUCE_MAX + 1] = {0};
    struct {
        int64_t begin, end, grain;
        int want;
    } bad[] = {
        {5, 4, 1, COEXEC_EINVAL},
        {0, -1, 0, COEXEC_EINVAL},
        {INT64_MAX, INT64_MIN, 1, COEXEC_EINVAL},
        {0, 10, -1, COEXEC_EINVAL},
        {0, 10, INT64_MIN, COEXEC_EINVAL},
        {INT64_MIN, INT64_MAX, 1, COEXEC_ERANGE},
        {-1, INT64_MAX, 0, COEXEC_ERANGE},
        {INT64_MIN, 1, 100, COEXEC_ERANGE},
        {-2, INT64_MAX - 1, 7, COEXEC_ERANGE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CH_ASSERT_RC(coexec_parallel_for(bad[i].begin, bad[i].end,
                                         bad[i].grain, count_body, NULL),
                     bad[i].want);
        CH_ASSERT_RC(coexec_parallel_reduce(bad[i].begin, bad[i].end,
                                            bad[i].grain, &r, sizeof r, &id,
                                            count_reduce, count_combine,
                                            NULL),
                     bad[i].want);
    }
    CH_ASSERT_RC(coexec_parallel_for(0, 10, 1, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_parallel_for(3, 3, 1, NULL, NULL), COEXEC_EINVAL);
    /* reduce: sizes and NULL pointers */
    CH_ASSERT_RC(coexec_parallel_reduce(0, 10, 1, &r, 0, &id, count_reduce,
                                        count_combine, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_parallel_reduce(0, 10, 1, big, sizeof big, big,
                                        count_reduce, count_combine, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_parallel_reduce(0, 10, 1, NULL, sizeof r, &id,
                                        count_reduce, count_combine, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_parallel_reduce(0, 10, 1, &r, sizeof r, NULL,
                                        count_reduce, count_combine, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_parallel_reduce(0, 10, 1, &r, sizeof r, &id, NULL,
                                        count_combine, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_parallel_reduce(0, 10, 1, &r, sizeof r, &id,
                                        count_reduce, NULL, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_parallel_reduce(4, 4, 1, &r, 0, &id, count_reduce,
                                        count_combine, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_EQ(atomic_load(&g_called), 0);
    CH_ASSERT_EQ(r, 5);
    ch_finalize();
}

/* Empty ranges: OK, no call of the body; a reduction gives identity. */
static void t_empty_ranges(void)
{
    ch_init(NSTREAMS);
    atomic_store(&g_called, 0);
    int64_t edges[] = {0, 1, -1, 1000, INT64_MIN, INT64_MAX};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        int64_t e = edges[i];
        CH_ASSERT_OK(coexec_parallel_for(e, e, 0, count_body, NULL));
        CH_ASSERT_OK(coexec_parallel_for(e, e, 5, count_body, NULL));
        unsigned char id[24], r[24];
        for (int k = 0; k < 24; k++) {
            id[k] = (unsigned char)(k * 11 + i);
            r[k] = 0xee;
        }
        CH_ASSERT_OK(coexec_parallel_reduce(e, e, 0, r, sizeof r, id,
                                            count_reduce, count_combine,
                                            NULL));
        CU_ASSERT(memcmp(r, id, sizeof r) == 0);
        /* result aliasing identity */
        CH_ASSERT_OK(coexec_parallel_reduce(e, e, 3, id, sizeof id, id,
                                            count_reduce, count_combine,
                                            NULL));
        CU_ASSERT(memcmp(r, id, sizeof r) == 0);
    }
    CH_ASSERT_EQ(atomic_load(&g_called), 0);
    ch_finalize();
}

/* A histogram of i % 32: an accumulator of COEXEC_REDUCE_MAX bytes. */
static void bins_body(int64_t begin, int64_t end, void *acc, void *arg)
{
    int64_t *bins = acc;
    for (int64_t i = begin; i < end; i++)
        bins[i % 32]++;
}

static void bins_combine(void *acc, const void *other, void *arg)
{
    int64_t *a = acc;
    const int64_t *o = other;
    for (int b = 0; b < 32; b++)
        a[b] += o[b];
}

/* A result aliasing identity on a non-empty range: each chunk still
 * starts from the identity, not from a partial result. */
static void t_result_aliases_identity(void)
{
    ch_init(NSTREAMS);
    long rounds = ch_iters(300, 5);
    for (long r = 0; r < rounds; r++) {
        int64_t n = 1000 + r, x = 0;
        CH_ASSERT_OK(coexec_parallel_reduce(0, n, r % 4, &x, sizeof x, &x,
                                            sum_body, sum_combine, NULL));
        CH_ASSERT_EQ(x, sum_serial(0, n));
    }
    /* COEXEC_REDUCE_MAX bytes, aliased: 32 bins of i % 32 */
    int64_t bins[COEXEC_REDUCE_MAX / sizeof(int64_t)];
    memset(bins, 0, sizeof bins);
    CH_ASSERT_OK(coexec_parallel_reduce(0, 10000, 0, bins, sizeof bins, bins,
                                        bins_body, bins_combine, NULL));
    for (int b = 0; b < 32; b++)
        CH_ASSERT_EQ(bins[b], (10000 - b + 31) / 32);
    ch_finalize();
}

const ch_test_t fj_errors_tests[] = {
    {"run_fn_null", t_run_einval},
    {"not_initialized", t_notinit},
    {"external_thread", t_external_thread},
    {"user_scheduler_loop", t_user_sched},
    {"loop_arguments", t_loop_args},
    {"empty_ranges", t_empty_ranges},
    {"result_aliases_identity", t_result_aliases_identity},
    {NULL, NULL}};
