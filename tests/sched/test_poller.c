/*
 * tests/sched/test_poller.c: progress pollers (coexec/poller.h).
 *
 *   wake        ULTs on 4 streams park on fake operations that an external
 *               thread completes in a shuffled order; the poller, called
 *               by the idle streams, wakes each one after its completion
 *               and never before
 *   tasklet     the same for tasklets that return COEXEC_PENDING
 *   rank        a poller limited to stream 2 is called there only, and
 *               two pollers run side by side
 *   busy        a busy stream calls the poller at its event checks: a ULT
 *               that only yields sees its operation complete
 *   unregister  after unregister returns, the function is never called
 *               again, even while streams are idle; a function that
 *               unregisters its own poller; slots are reused
 *   errors      every bad argument, stale and finalized handle, the table
 *               full, and the calls before init
 *
 * Timing never decides a verdict: waits are bounded by CH_WAIT's limit.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <sched.h>
#include <stdlib.h>

/* ---- fake outside operations ------------------------------------------- */

#define MAX_OPS 512

typedef struct op {
    atomic_int done;      /* set by the completer */
    atomic_int woken;     /* set by the poller, once */
    atomic_int early;     /* the waiter returned before done */
    coexec_waker_t w;
} op_t;

/* The poller's view: the operations registered and not yet woken. */
static struct {
    pthread_mutex_t lock;
    op_t *list[MAX_OPS];
    int n;
    atomic_long calls;
    atomic_int wrong_rank; /* calls from another stream than `rank` */
    int rank;              /* -1: any */
} pl = {.lock = PTHREAD_MUTEX_INITIALIZER, .rank = -1};

static void pl_reset(int rank)
{
    pl.n = 0;
    atomic_store(&pl.calls, 0);
    atomic_store(&pl.wrong_rank, 0);
    pl.rank = rank;
}

static void pl_add(op_t *o)
{
    pthread_mutex_lock(&pl.lock);
    pl.list[pl.n++] = o;
    pthread_mutex_unlock(&pl.lock);
}

static int poll_ops(void *arg)
{
    (void)arg;
    atomic_fetch_add(&pl.calls, 1);
    int r;
    if (pl.rank >= 0 && (coexec_xstream_self_rank(&r) != COEXEC_OK ||
                         r != pl.rank))
        atomic_fetch_add(&pl.wrong_rank, 1);
    CH_CHECK(coexec_self_caller() == COEXEC_CALLER_SCHED);
    pthread_mutex_lock(&pl.lock);
    for (int i = 0; i < pl.n;) {
        op_t *o = pl.list[i];
        if (atomic_load(&o->done)) {
            atomic_fetch_add(&o->woken, 1);
            pl.list[i] = pl.list[--pl.n];
            CH_CHECK_RC(coexec_waker_wake(o->w), COEXEC_OK);
        } else {
            i++;
        }
    }
    int left = pl.n;
    pthread_mutex_unlock(&pl.lock);
    return left;
}

static void op_wait_ult(void *arg)
{
    op_t *o = arg;
    CH_CHECK_RC(coexec_self_waker(&o->w), COEXEC_OK);
    pl_add(o);
    while (!atomic_load(&o->woken))
        CH_CHECK_RC(coexec_park(), COEXEC_OK);
    if (!atomic_load(&o->done))
        atomic_fetch_add(&o->early, 1);
}

static coexec_poll_status_t op_wait_tasklet(coexec_poll_t *cx, void *arg)
{
    op_t *o = arg;
    if (atomic_load(&o->woken)) {
        if (!atomic_load(&o->done))
            atomic_fetch_add(&o->early, 1);
        return COEXEC_READY;
    }
    if (!o->w.p) {
        CH_CHECK_RC(coexec_poll_waker(cx, &o->w), COEXEC_OK);
        pl_add(o);
    }
    return COEXEC_PENDING;
}

typedef struct {
    op_t *ops;
    int n;
} completer_t;

/* Completes the operations in a shuffled order once all are registered. */
static void *completer(void *arg)
{
    completer_t *c = arg;
    int *order = malloc(sizeof(int) * (size_t)c->n);
    for (int i = 0; i < c->n; i++)
        order[i] = i;
    unsigned seed = 12345;
    for (int i = c->n - 1; i > 0; i--) {
        int j = (int)(rand_r(&seed) % (unsigned)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < c->n; i++) {
        atomic_store(&c->ops[order[i]].done, 1);
        if (i % 16 == 0)
            sched_yield();
    }
    free(order);
    return NULL;
}

static void check_ops(op_t *ops, int n)
{
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(atomic_load(&ops[i].woken), 1);
        CU_ASSERT_EQUAL(atomic_load(&ops[i].early), 0);
    }
}

/* n waiters (ULTs, or tasklets) spread over the streams' main pools. */
static void run_waiters(int nstreams, int n, bool tasklets)
{
    op_t *ops = calloc((size_t)n, sizeof *ops);
    coexec_thread_t *t = calloc((size_t)n, sizeof *t);
    coexec_tasklet_t *k = calloc((size_t)n, sizeof *k);
    for (int i = 0; i < n; i++) {
        coexec_pool_t pool = ch_main_pool(i % nstreams);
        int rc = tasklets ? coexec_tasklet_create(pool, op_wait_tasklet,
                                                  &ops[i], &k[i])
                          : coexec_thread_create(pool, op_wait_ult, &ops[i],
                                                 NULL, &t[i]);
        CU_ASSERT_EQUAL_FATAL(rc, COEXEC_OK);
    }
    CU_ASSERT_FATAL(CH_WAIT(({
        pthread_mutex_lock(&pl.lock);
        int m = pl.n;
        pthread_mutex_unlock(&pl.lock);
        m == n;
    })));
    completer_t c = {ops, n};
    pthread_t th;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, completer, &c), 0);
    for (int i = 0; i < n; i++) {
        if (tasklets) {
            CU_ASSERT_EQUAL(coexec_tasklet_join(k[i]), COEXEC_OK);
            CU_ASSERT_EQUAL(coexec_tasklet_free(&k[i]), COEXEC_OK);
        } else {
            CU_ASSERT_EQUAL(coexec_thread_join(t[i]), COEXEC_OK);
            CU_ASSERT_EQUAL(coexec_thread_free(&t[i]), COEXEC_OK);
        }
    }
    pthread_join(th, NULL);
    check_ops(ops, n);
    free(ops);
    free(t);
    free(k);
}

static void wake_with(bool tasklets)
{
    ch_init(4);
    pl_reset(-1);
    coexec_poller_t p;
    CU_ASSERT_EQUAL_FATAL(coexec_poller_register(poll_ops, NULL,
                                                 COEXEC_POLLER_ANY_XSTREAM, &p),
                          COEXEC_OK);
    CU_ASSERT_EQUAL(coexec_poller_check(p), COEXEC_OK);
    long rounds = ch_iters(8, 2);
    for (long r = 0; r < rounds; r++)
        run_waiters(4, (int)ch_iters(200, 20), tasklets);
    CU_ASSERT(atomic_load(&pl.calls) > 0);
    CU_ASSERT_EQUAL(coexec_poller_unregister(&p), COEXEC_OK);
    ch_finalize();
}

static void test_wake_ults(void)
{
    wake_with(false);
}

static void test_wake_tasklets(void)
{
    wake_with(true);
}

/* ---- rank ----------------------------------------------------------------- */

static atomic_long other_calls;
static int count_other(void *arg)
{
    (void)arg;
    atomic_fetch_add(&other_calls, 1);
    return 0;
}

static void test_rank(void)
{
    ch_init(4);
    pl_reset(2);
    atomic_store(&other_calls, 0);
    coexec_poller_t p, q;
    CU_ASSERT_EQUAL_FATAL(coexec_poller_register(poll_ops, NULL, 2, &p),
                          COEXEC_OK);
    CU_ASSERT_EQUAL_FATAL(coexec_poller_register(count_other, NULL,
                                                 COEXEC_POLLER_ANY_XSTREAM, &q),
                          COEXEC_OK);
    run_waiters(4, (int)ch_iters(100, 10), false);
    CU_ASSERT(atomic_load(&pl.calls) > 0);
    CU_ASSERT_EQUAL(atomic_load(&pl.wrong_rank), 0);
    CU_ASSERT(atomic_load(&other_calls) > 0);
    CU_ASSERT_EQUAL(coexec_poller_unregister(&p), COEXEC_OK);
    CU_ASSERT_EQUAL(coexec_poller_unregister(&q), COEXEC_OK);
    ch_finalize();
}

/* ---- busy: the event checks of a stream that always has work ------------- */

static void yield_until_woken(void *arg)
{
    op_t *o = arg;
    /* Never parks: the stream is never idle while it runs. The poller
     * wakes it through its waker, which records the wake. */
    CH_CHECK_RC(coexec_self_waker(&o->w), COEXEC_OK);
    pl_add(o);
    while (!atomic_load(&o->woken))
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    CH_CHECK(atomic_load(&o->done) == 1);
}

static void test_busy(void)
{
    ch_init(1);
    pl_reset(-1);
    coexec_poller_t p;
    CU_ASSERT_EQUAL_FATAL(coexec_poller_register(poll_ops, NULL,
                                                 COEXEC_POLLER_ANY_XSTREAM, &p),
                          COEXEC_OK);
    op_t o = {0};
    atomic_store(&o.done, 1); /* complete: the next poll wakes it */
    coexec_thread_t t;
    CU_ASSERT_EQUAL_FATAL(coexec_thread_create(ch_main_pool(0),
                                               yield_until_woken, &o, NULL, &t),
                          COEXEC_OK);
    /* The main ULT yields too: the stream is never idle. */
    while (ch_thread_state(t) != COEXEC_UNIT_TERMINATED)
        CU_ASSERT_EQUAL_FATAL(coexec_yield(), COEXEC_OK);
    CU_ASSERT_EQUAL(atomic_load(&o.woken), 1);
    CU_ASSERT_EQUAL(coexec_thread_free(&t), COEXEC_OK);
    CU_ASSERT_EQUAL(coexec_poller_unregister(&p), COEXEC_OK);
    ch_finalize();
}

/* ---- unregister ------------------------------------------------------------ */

static atomic_int in_call, after_unreg;
static atomic_long slow_calls;

static int slow_poller(void *arg)
{
    atomic_int *gone = arg;
    atomic_store(&in_call, 1);
    if (atomic_load(gone))
        atomic_fetch_add(&after_unreg, 1);
    atomic_fetch_add(&slow_calls, 1);
    for (volatile int i = 0; i < 20000; i++)
        ;
    atomic_store(&in_call, 0);
    return 1; /* always pending: idle streams keep calling it */
}

static coexec_poller_t self_p;
static atomic_int self_calls, self_armed;
static int self_unregistering(void *arg)
{
    (void)arg;
    /* Not before the main ULT is done with self_p. */
    if (!atomic_load(&self_armed))
        return 0;
    if (atomic_fetch_add(&self_calls, 1) == 0)
        CH_CHECK_RC(coexec_poller_unregister(&self_p), COEXEC_OK);
    return 0;
}

static void test_unregister(void)
{
    ch_init(3);
    long rounds = ch_iters(20, 3);
    for (long r = 0; r < rounds; r++) {
        atomic_int gone = 0;
        atomic_store(&slow_calls, 0);
        coexec_poller_t p;
        CU_ASSERT_EQUAL_FATAL(coexec_poller_register(slow_poller, &gone,
                                                     COEXEC_POLLER_ANY_XSTREAM,
                                                     &p),
                              COEXEC_OK);
        CU_ASSERT_FATAL(CH_WAIT(atomic_load(&slow_calls) > 3));
        CU_ASSERT_EQUAL(coexec_poller_unregister(&p), COEXEC_OK);
        atomic_store(&gone, 1);
        CU_ASSERT(CH_IS_NULL(p));
        long after = atomic_load(&slow_calls);
        /* Streams stay idle a while: none may call it again. */
        for (int i = 0; i < 50; i++)
            CU_ASSERT_EQUAL(coexec_yield(), COEXEC_OK);
        CU_ASSERT_EQUAL(atomic_load(&slow_calls), after);
        CU_ASSERT_EQUAL(atomic_load(&in_call), 0);
    }
    CU_ASSERT_EQUAL(atomic_load(&after_unreg), 0);

    /* A function unregistering its own poller. */
    atomic_store(&self_calls, 0);
    atomic_store(&self_armed, 0);
    CU_ASSERT_EQUAL_FATAL(coexec_poller_register(self_unregistering, NULL,
                                                 COEXEC_POLLER_ANY_XSTREAM,
                                                 &self_p),
                          COEXEC_OK);
    coexec_poller_t copy = self_p;
    atomic_store(&self_armed, 1);
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&self_calls) > 0));
    CU_ASSERT_FATAL(CH_WAIT(coexec_poller_check(copy) == COEXEC_EHANDLE));
    int calls = atomic_load(&self_calls);
    for (int i = 0; i < 50; i++)
        CU_ASSERT_EQUAL(coexec_yield(), COEXEC_OK);
    CU_ASSERT_EQUAL(atomic_load(&self_calls), calls);

    /* Slots are reused: register and unregister more than the table. */
    for (int i = 0; i < 3 * COEXEC_POLLER_MAX; i++) {
        coexec_poller_t q;
        CU_ASSERT_EQUAL_FATAL(coexec_poller_register(count_other, NULL, 0, &q),
                              COEXEC_OK);
        CU_ASSERT_EQUAL(coexec_poller_unregister(&q), COEXEC_OK);
    }
    ch_finalize();
}

/* ---- errors ------------------------------------------------------------------ */

static void test_errors(void)
{
    coexec_poller_t p = {NULL, 0};
    CU_ASSERT_EQUAL(coexec_poller_register(count_other, NULL, -1, &p),
                    COEXEC_ENOTINIT);
    CU_ASSERT_EQUAL(coexec_poller_unregister(&p), COEXEC_ENOTINIT);
    CU_ASSERT_EQUAL(coexec_poller_check(p), COEXEC_ENOTINIT);

    ch_init(2);
    CU_ASSERT_EQUAL(coexec_poller_register(NULL, NULL, -1, &p), COEXEC_EINVAL);
    CU_ASSERT_EQUAL(coexec_poller_register(count_other, NULL, -1, NULL),
                    COEXEC_EINVAL);
    CU_ASSERT_EQUAL(coexec_poller_register(count_other, NULL, -2, &p),
                    COEXEC_EINVAL);
    CU_ASSERT_EQUAL(coexec_poller_register(count_other, NULL, 1024, &p),
                    COEXEC_EINVAL);
    CU_ASSERT_EQUAL(coexec_poller_unregister(NULL), COEXEC_EINVAL);
    p = (coexec_poller_t){NULL, 0};
    CU_ASSERT_EQUAL(coexec_poller_unregister(&p), COEXEC_EHANDLE);
    CU_ASSERT_EQUAL(coexec_poller_check(p), COEXEC_EHANDLE);

    /* The table full, then a stale copy after unregister. */
    coexec_poller_t all[COEXEC_POLLER_MAX];
    for (int i = 0; i < COEXEC_POLLER_MAX; i++)
        CU_ASSERT_EQUAL_FATAL(coexec_poller_register(count_other, NULL, 1,
                                                     &all[i]),
                              COEXEC_OK);
    CU_ASSERT_EQUAL(coexec_poller_register(count_other, NULL, 1, &p),
                    COEXEC_EAGAIN);
    coexec_poller_t stale = all[3];
    CU_ASSERT_EQUAL(coexec_poller_unregister(&all[3]), COEXEC_OK);
    CU_ASSERT_EQUAL(coexec_poller_unregister(&stale), COEXEC_EHANDLE);
    CU_ASSERT_EQUAL(coexec_poller_check(stale), COEXEC_EHANDLE);
    CU_ASSERT_EQUAL(coexec_poller_register(count_other, NULL, 1, &all[3]),
                    COEXEC_OK);
    CU_ASSERT_EQUAL(coexec_poller_check(stale), COEXEC_EHANDLE);
    CU_ASSERT_EQUAL(coexec_poller_check(all[3]), COEXEC_OK);
    coexec_poller_t kept = all[0];
    ch_finalize();

    /* Dropped by finalize: stale in the next init, and the slot is free. */
    ch_init(1);
    CU_ASSERT_EQUAL(coexec_poller_check(kept), COEXEC_EHANDLE);
    CU_ASSERT_EQUAL(coexec_poller_unregister(&kept), COEXEC_EHANDLE);
    for (int i = 0; i < COEXEC_POLLER_MAX; i++)
        CU_ASSERT_EQUAL(coexec_poller_register(count_other, NULL, -1, &all[i]),
                        COEXEC_OK);
    ch_finalize();
}

static const ch_test_t wake_tests[] = {{"ults", test_wake_ults},
                                       {"tasklets", test_wake_tasklets},
                                       {NULL, NULL}};
static const ch_test_t rank_tests[] = {{"rank", test_rank}, {NULL, NULL}};
static const ch_test_t busy_tests[] = {{"busy", test_busy}, {NULL, NULL}};
static const ch_test_t unreg_tests[] = {{"unregister", test_unregister},
                                        {NULL, NULL}};
static const ch_test_t error_tests[] = {{"errors", test_errors}, {NULL, NULL}};

int main(int argc, char **argv)
{
    static const ch_suite_t suites[] = {{"wake", wake_tests},
                                        {"rank", rank_tests},
                                        {"busy", busy_tests},
                                        {"unregister", unreg_tests},
                                        {"errors", error_tests},
                                        {NULL, NULL}};
    return ch_main(argc, argv, suites);
}
