/*
 * tests/thread/test_thread.c: user-level threads: create/join/free, join of
 * finished and not-started ULTs, detached ULTs, stack attributes, yield
 * fairness, exit, identity, states, suspend/resume across streams and
 * threads, calls from the wrong kind of caller, stale handles, wakers.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ======================================================================= */
/* basic                                                                    */
/* ======================================================================= */

typedef struct {
    long in;
    long out;
} calc_t;

static void calc_ult(void *arg)
{
    calc_t *c = arg;
    c->out = c->in * 3 + 1;
}

static void t_create_join_free(void)
{
    ch_init(3);
    enum { N = 120 };
    calc_t c[N];
    coexec_thread_t t[N];
    for (int i = 0; i < N; i++) {
        c[i].in = i;
        c[i].out = -1;
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(i % 3, &xs));
        if (i % 2)
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, calc_ult, &c[i], NULL, &t[i]));
        else {
            coexec_pool_t p;
            CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(xs, &p));
            CH_ASSERT_OK_FATAL(coexec_thread_create(p, calc_ult, &c[i], NULL, &t[i]));
        }
        CU_ASSERT(!CH_IS_NULL(t[i]));
    }
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0) {
            CH_ASSERT_OK(coexec_thread_join(t[i]));
            CH_ASSERT_EQ(ch_thread_state(t[i]), COEXEC_UNIT_TERMINATED);
            CH_ASSERT_EQ(c[i].out, i * 3 + 1);
        }
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
        CU_ASSERT(CH_IS_NULL(t[i]));
        CH_ASSERT_EQ(c[i].out, i * 3 + 1);
    }
    ch_finalize();
}

static void t_attr_defaults(void)
{
    coexec_thread_attr_t a;
    memset(&a, 0x11, sizeof a);
    CH_ASSERT_OK(coexec_thread_attr_init(&a));
    CH_ASSERT_EQ(a.size, sizeof a);
    CH_ASSERT_EQ(a.stack_size, 0);
    CU_ASSERT_PTR_NULL(a.stack);
    CH_ASSERT_RC(coexec_thread_attr_init(NULL), COEXEC_EINVAL);
}

static void t_detached(void)
{
    ch_init(3);
    long n = ch_iters(3000, 300);
    atomic_store(&ch_count, 0);
    for (long i = 0; i < n; i++) {
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank((int)(i % 3), &xs));
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, ch_count_ult, NULL, NULL, NULL));
    }
    CH_WAIT(atomic_load(&ch_count) == n);
    CH_ASSERT_EQ(atomic_load(&ch_count), n);
    /* Detached ULTs still queued at finalize run before it returns. */
    atomic_store(&ch_count, 0);
    for (long i = 0; i < 100; i++) {
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank((int)(i % 3), &xs));
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, ch_count_ult, NULL, NULL, NULL));
    }
    ch_finalize();
    CH_ASSERT_EQ(atomic_load(&ch_count), 100);
}

static coexec_pool_t g_pool;

static void nested_creator_ult(void *arg)
{
    long depth = (long)(intptr_t)arg;
    atomic_fetch_add(&ch_count, 1);
    if (depth > 0) {
        coexec_thread_t a, b;
        CH_CHECK_RC(coexec_thread_create(g_pool, nested_creator_ult, (void *)(intptr_t)(depth - 1), NULL, &a), COEXEC_OK);
        CH_CHECK_RC(coexec_thread_create(g_pool, nested_creator_ult, (void *)(intptr_t)(depth - 1), NULL, NULL), COEXEC_OK);
        CH_CHECK_RC(coexec_thread_create(g_pool, nested_creator_ult, (void *)(intptr_t)(depth - 1), NULL, &b), COEXEC_OK);
        CH_CHECK_RC(coexec_thread_free(&a), COEXEC_OK);
        CH_CHECK_RC(coexec_thread_free(&b), COEXEC_OK);
    }
}

static void *create_from_pthread(void *arg)
{
    coexec_thread_t t;
    CH_CHECK_RC(coexec_thread_create(g_pool, ch_count_ult, NULL, NULL, &t), COEXEC_OK);
    /* an external thread may join (it sleeps) */
    CH_CHECK_RC(coexec_thread_join(t), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_free(&t), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_create(g_pool, ch_count_ult, NULL, NULL, NULL), COEXEC_OK);
    return NULL;
}

static void create_from_tasklet_fn(void *arg)
{
    CH_CHECK_RC(coexec_thread_create(g_pool, ch_count_ult, NULL, NULL, NULL), COEXEC_OK);
}

static void t_create_anywhere(void)
{
    ch_init(2);
    coexec_xstream_t x1;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &x1));
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(x1, &g_pool));
    /* from ULTs, recursively: 1 + 3 + 9 + 27 + 81 */
    atomic_store(&ch_count, 0);
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(g_pool, nested_creator_ult, (void *)(intptr_t)4, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_WAIT(atomic_load(&ch_count) == 121);
    CH_ASSERT_EQ(atomic_load(&ch_count), 121);
    /* from an external thread and from a tasklet */
    atomic_store(&ch_count, 0);
    ch_pthread_t th;
    ch_pthread_start(&th, create_from_pthread, NULL);
    ch_pthread_join(&th);
    CH_ASSERT_OK(ch_run_tasklet_in(g_pool, create_from_tasklet_fn, NULL));
    CH_WAIT(atomic_load(&ch_count) == 3);
    CH_ASSERT_EQ(atomic_load(&ch_count), 3);
    ch_finalize();
}

/* ======================================================================= */
/* join                                                                     */
/* ======================================================================= */

static void t_join_finished(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    atomic_store(&ch_count, 0);
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(s.pool, ch_count_ult, NULL, NULL, &t));
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_TERMINATED);
    CH_ASSERT_EQ(atomic_load(&ch_count), 1);
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_OK(coexec_thread_join(t)); /* again: still finished */
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&ch_count), 1);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

typedef struct {
    int rank;
    coexec_xstream_t xs;
    atomic_int ran;
    int caller;
} inplace_t;

static void inplace_ult(void *arg)
{
    inplace_t *p = arg;
    p->rank = ch_self_rank();
    CH_CHECK_RC(coexec_xstream_self(&p->xs), COEXEC_OK);
    p->caller = (int)coexec_self_caller();
    atomic_store(&p->ran, 1);
}

typedef struct {
    coexec_pool_t standalone;
    inplace_t probe;
    int my_rank;
    coexec_xstream_t my_xs;
} joiner_t;

static void joiner_ult(void *arg)
{
    joiner_t *j = arg;
    j->my_rank = ch_self_rank();
    CH_CHECK_RC(coexec_xstream_self(&j->my_xs), COEXEC_OK);
    coexec_thread_t t;
    CH_CHECK_RC(coexec_thread_create(j->standalone, inplace_ult, &j->probe, NULL, &t), COEXEC_OK);
    CH_CHECK(!atomic_load(&j->probe.ran));
    CH_CHECK_RC(coexec_thread_join(t), COEXEC_OK);
    CH_CHECK(atomic_load(&j->probe.ran));
    CH_CHECK_RC(coexec_thread_free(&t), COEXEC_OK);
}

static void t_join_not_started_in_place(void)
{
    ch_init(1);
    coexec_pool_t standalone; /* no scheduler serves it */
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &standalone));

    /* joined by the main ULT (rank 0) */
    inplace_t p;
    memset(&p, 0, sizeof p);
    p.rank = -1;
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(standalone, inplace_ult, &p, NULL, &t));
    CH_ASSERT_EQ(ch_thread_state(t), COEXEC_UNIT_READY);
    CH_ASSERT_EQ(atomic_load(&p.ran), 0);
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_EQ(atomic_load(&p.ran), 1); /* ran before join returned */
    CH_ASSERT_EQ(p.rank, 0);
    CH_ASSERT_EQ(p.caller, COEXEC_CALLER_ULT);
    coexec_xstream_t x0;
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    CU_ASSERT(CH_SAME(p.xs, x0));
    size_t sz = 9;
    CH_ASSERT_OK(coexec_pool_get_size(standalone, &sz));
    CH_ASSERT_EQ(sz, 0); /* taken out of its pool */
    CH_ASSERT_OK(coexec_thread_free(&t));

    /* free of a not-started ULT runs it too */
    memset(&p, 0, sizeof p);
    CH_ASSERT_OK(coexec_thread_create(standalone, inplace_ult, &p, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&p.ran), 1);
    CH_ASSERT_EQ(p.rank, 0);

    /* joined by a ULT on stream k: the joinee runs on stream k */
    ch_stream_t s[2];
    for (int i = 0; i < 2; i++) {
        CH_ASSERT_OK_FATAL(ch_stream_create(&s[i], COEXEC_SCHED_BASIC_WAIT));
        joiner_t j;
        memset(&j, 0, sizeof j);
        j.standalone = standalone;
        j.probe.rank = -1;
        j.my_rank = -2;
        CH_ASSERT_OK(ch_run_ult_in(s[i].pool, joiner_ult, &j));
        CH_ASSERT_EQ(j.my_rank, s[i].rank);
        CH_ASSERT_EQ(j.probe.rank, s[i].rank);
        CU_ASSERT(CH_SAME(j.probe.xs, s[i].xs));
    }
    for (int i = 0; i < 2; i++)
        CH_ASSERT_OK(ch_stream_free(&s[i]));
    CH_ASSERT_OK(coexec_pool_free(&standalone));
    ch_finalize();
}

static atomic_int g_gate;

static void gated_yielder_ult(void *arg)
{
    while (!atomic_load(&g_gate))
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    for (int i = 0; i < 10; i++)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    atomic_fetch_add(&ch_count, 1);
}

typedef struct {
    coexec_thread_t t;
    atomic_int rc;
    atomic_int done;
} extjoin_t;

static void *join_pthread(void *arg)
{
    extjoin_t *e = arg;
    atomic_store(&e->rc, coexec_thread_join(e->t));
    atomic_store(&e->done, 1);
    return NULL;
}

static void t_join_running(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC));
    /* the main ULT joins a ULT that is running and yielding elsewhere */
    atomic_store(&ch_count, 0);
    atomic_store(&g_gate, 1);
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(s.pool, gated_yielder_ult, NULL, NULL, &t));
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_EQ(atomic_load(&ch_count), 1);
    CH_ASSERT_EQ(ch_thread_state(t), COEXEC_UNIT_TERMINATED);
    CH_ASSERT_OK(coexec_thread_free(&t));

    /* an external thread joins; it returns only after the gate opens */
    atomic_store(&ch_count, 0);
    atomic_store(&g_gate, 0);
    extjoin_t e;
    atomic_init(&e.rc, 1);
    atomic_init(&e.done, 0);
    CH_ASSERT_OK(coexec_thread_create(s.pool, gated_yielder_ult, NULL, NULL, &e.t));
    CH_WAIT(ch_thread_state(e.t) == COEXEC_UNIT_RUNNING || ch_thread_state(e.t) == COEXEC_UNIT_READY);
    ch_pthread_t th;
    ch_pthread_start(&th, join_pthread, &e);
    /* while the gate is closed the joinee cannot finish */
    for (int i = 0; i < 100; i++)
        ch_relax();
    CH_ASSERT_EQ(atomic_load(&e.done), 0);
    CH_ASSERT_EQ(atomic_load(&ch_count), 0);
    atomic_store(&g_gate, 1);
    ch_pthread_join(&th);
    CH_ASSERT_RC(atomic_load(&e.rc), COEXEC_OK);
    CH_ASSERT_EQ(atomic_load(&ch_count), 1);
    CH_ASSERT_OK(coexec_thread_free(&e.t));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

typedef struct {
    coexec_thread_t self; /* published */
    atomic_int phase;
    atomic_int rc;
} detached_probe_t;

static void detached_self_ult(void *arg)
{
    detached_probe_t *d = arg;
    CH_CHECK_RC(coexec_thread_self(&d->self), COEXEC_OK);
    atomic_store(&d->phase, 1);
    while (atomic_load(&d->phase) != 2)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
}

static void t_join_detached(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    detached_probe_t d;
    memset(&d, 0, sizeof d);
    CH_ASSERT_OK(coexec_thread_create(s.pool, detached_self_ult, &d, NULL, NULL));
    CH_WAIT(atomic_load(&d.phase) == 1);
    CH_ASSERT_RC(coexec_thread_join(d.self), COEXEC_EINVAL);
    atomic_store(&d.phase, 2);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

static coexec_poll_status_t inplace_tasklet(coexec_poll_t *cx, void *arg)
{
    inplace_ult(arg);
    return COEXEC_READY;
}

/*
 * A unit popped out of its pool belongs to no pool and has not started:
 * joining (or freeing) it runs it in place, like any unit that has not
 * started. Kept last in its suite: with a runtime that waits instead, the
 * join never returns.
 */
static void t_join_popped_in_place(void)
{
    ch_init(1);
    coexec_pool_t standalone;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &standalone));
    for (int kind = 0; kind < 2; kind++) {
        inplace_t p;
        memset(&p, 0, sizeof p);
        p.rank = -1;
        coexec_thread_t t = {0};
        coexec_tasklet_t k = {0};
        if (kind == 0)
            CH_ASSERT_OK_FATAL(coexec_thread_create(standalone, inplace_ult, &p, NULL, &t));
        else
            CH_ASSERT_OK_FATAL(coexec_tasklet_create(standalone, inplace_tasklet, &p, &k));
        coexec_unit_t u;
        CH_ASSERT_OK(coexec_pool_pop(standalone, &u));
        CU_ASSERT(CH_SAME(u, kind == 0 ? coexec_thread_unit(t) : coexec_tasklet_unit(k)));
        if (kind == 0) {
            CH_ASSERT_EQ(ch_thread_state(t), COEXEC_UNIT_READY);
            CH_ASSERT_OK(coexec_thread_join(t));
        } else {
            CH_ASSERT_OK(coexec_tasklet_join(k));
        }
        CH_ASSERT_EQ(atomic_load(&p.ran), 1);
        CH_ASSERT_EQ(p.rank, 0);
        if (kind == 0)
            CH_ASSERT_OK(coexec_thread_free(&t));
        else
            CH_ASSERT_OK(coexec_tasklet_free(&k));
    }
    CH_ASSERT_OK(coexec_pool_free(&standalone));
    ch_finalize();
}

/* A popped unit is its popper's: a joiner on another stream waits while
 * the popper pushes it back (it never takes the unit to run in place, as
 * it does a unit it popped itself), so every push succeeds and the unit
 * runs once. */
typedef struct {
    coexec_thread_t t;
    atomic_int go;
    int rc;
} race_join_t;

static void race_joiner_ult(void *arg)
{
    race_join_t *r = arg;
    while (!atomic_load(&r->go))
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    r->rc = coexec_thread_join(r->t);
}

static void t_join_popped_race(void)
{
    ch_init(2);
    coexec_pool_t standalone;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &standalone));
    long n = ch_iters(2000, 200), lost = 0, bad = 0;
    for (long i = 0; i < n; i++) {
        inplace_t p;
        memset(&p, 0, sizeof p);
        p.rank = -1;
        race_join_t r = {.rc = 1};
        atomic_store(&r.go, 0);
        CH_ASSERT_OK_FATAL(coexec_thread_create(standalone, inplace_ult, &p, NULL, &r.t));
        coexec_unit_t u;
        CH_ASSERT_OK(coexec_pool_pop(standalone, &u));
        coexec_thread_t j;
        CH_ASSERT_OK_FATAL(coexec_thread_create(ch_main_pool(1), race_joiner_ult, &r, NULL, &j));
        atomic_store(&r.go, 1);
        int rc = coexec_pool_push(ch_main_pool((int)(i & 1)), u);
        if (rc == COEXEC_ESTATE)
            lost++;
        else if (rc != COEXEC_OK)
            bad++;
        while (ch_thread_state(j) != COEXEC_UNIT_TERMINATED)
            CH_ASSERT_OK(coexec_yield());
        CH_ASSERT_OK(coexec_thread_join(j));
        CH_ASSERT_OK(coexec_thread_free(&j));
        bad += r.rc != COEXEC_OK || atomic_load(&p.ran) != 1;
        CH_ASSERT_OK(coexec_thread_free(&r.t));
    }
    CH_ASSERT_EQ(bad, 0);
    CH_ASSERT_EQ(lost, 0);
    CH_ASSERT_OK(coexec_pool_free(&standalone));
    ch_finalize();
}

/* ======================================================================= */
/* attr                                                                     */
/* ======================================================================= */

typedef struct {
    size_t use;
    long sum;
    uintptr_t local;
} stack_probe_t;

static __attribute__((noinline)) long touch_stack(size_t n)
{
    volatile char buf[n];
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)(i & 0x7f);
    long s = 0;
    for (size_t i = 0; i < n; i += 64)
        s += buf[i];
    return s;
}

static void stack_ult(void *arg)
{
    stack_probe_t *p = arg;
    int local = 0;
    p->local = (uintptr_t)&local;
    p->sum = touch_stack(p->use);
}

static long expected_sum(size_t n)
{
    long s = 0;
    for (size_t i = 0; i < n; i += 64)
        s += (long)(i & 0x7f);
    return s;
}

static void t_stack_size(void)
{
    ch_init(2);
    coexec_thread_attr_t a;
    CH_ASSERT_OK(coexec_thread_attr_init(&a));
    a.stack_size = 256 * 1024;
    for (int r = 0; r < 2; r++) {
        stack_probe_t p = {200 * 1024, -1, 0};
        coexec_xstream_t xs;
        coexec_thread_t t;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(r, &xs));
        CH_ASSERT_OK(coexec_thread_create_on(xs, stack_ult, &p, &a, &t));
        CH_ASSERT_OK(coexec_thread_free(&t));
        CH_ASSERT_EQ(p.sum, expected_sum(p.use));
    }
    /* too small */
    coexec_thread_t t = {0};
    coexec_xstream_t x0;
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    a.stack_size = 64;
    CH_ASSERT_RC(coexec_thread_create_on(x0, stack_ult, NULL, &a, &t), COEXEC_EINVAL);
    ch_finalize();

    /* the runtime's default stack size, from the config */
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.stack_size = 256 * 1024;
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    stack_probe_t p = {200 * 1024, -1, 0};
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_OK(coexec_thread_create_on(x0, stack_ult, &p, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(p.sum, expected_sum(p.use));
    ch_finalize();
}

/* Attributes *a of a ULT on a stack of sz bytes of the test's, returned
 * (the caller frees it). */
static char *user_stack_attr(coexec_thread_attr_t *a, size_t sz)
{
    char *stack = aligned_alloc(4096, sz);
    CU_ASSERT_FATAL(stack != NULL);
    CH_ASSERT_OK(coexec_thread_attr_init(a));
    a->stack = stack;
    a->stack_size = sz;
    return stack;
}

static void t_user_stack(void)
{
    ch_init(2);
    const size_t sz = 128 * 1024;
    for (int r = 0; r < 2; r++) {
        coexec_thread_attr_t a;
        char *stack = user_stack_attr(&a, sz);
        stack_probe_t p = {64 * 1024, -1, 0};
        coexec_xstream_t xs;
        coexec_thread_t t;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(r, &xs));
        CH_ASSERT_OK(coexec_thread_create_on(xs, stack_ult, &p, &a, &t));
        CH_ASSERT_OK(coexec_thread_join(t));
        CH_ASSERT_EQ(p.sum, expected_sum(p.use));
        CU_ASSERT(p.local >= (uintptr_t)stack && p.local < (uintptr_t)stack + sz);
        CH_ASSERT_OK(coexec_thread_free(&t));
        free(stack);
    }
    /* not 16-byte aligned */
    char *stack = aligned_alloc(4096, sz);
    coexec_thread_attr_t a;
    CH_ASSERT_OK(coexec_thread_attr_init(&a));
    a.stack = stack + 8;
    a.stack_size = sz - 64;
    coexec_xstream_t x0;
    coexec_thread_t t = {0};
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_RC(coexec_thread_create_on(x0, stack_ult, NULL, &a, &t), COEXEC_EINVAL);
    free(stack);
    ch_finalize();
}

/* Stack overflows, guards and canaries: tests/thread/test_guard.c. */

/* ======================================================================= */
/* yield                                                                    */
/* ======================================================================= */

enum { YN = 6, YK = 20 };
static int g_ylog[YN * (YK + 1)];
static atomic_int g_ylog_n;

static void yield_logger_ult(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int k = 0; k < YK; k++) {
        int i = atomic_fetch_add(&g_ylog_n, 1);
        if (i < YN * (YK + 1))
            g_ylog[i] = id;
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    }
    int i = atomic_fetch_add(&g_ylog_n, 1);
    if (i < YN * (YK + 1))
        g_ylog[i] = id;
}

/* YN ULTs yield YK times each in one pool of kind pkind and access mode
 * `access`, run by one stream: they must take turns in the same order
 * every round. The ULT of index user_stack (if in range) runs on a stack
 * of the test's, which a yield's hand-off treats apart from the others. */
static void check_yield_fairness(coexec_pool_kind_t pkind,
                                 coexec_pool_access_t access, int user_stack)
{
    coexec_pool_t pool;
    coexec_sched_t sched;
    coexec_sched_config_t sc;
    coexec_thread_attr_t ua;
    char *stack = user_stack_attr(&ua, 64 * 1024);
    CH_ASSERT_OK_FATAL(coexec_pool_create(pkind, access, &pool));
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    sc.steal = 0;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &pool, 1, &sc, &sched));
    atomic_store(&g_ylog_n, 0);
    coexec_thread_t t[YN];
    for (int i = 0; i < YN; i++)
        CH_ASSERT_OK(coexec_thread_create(pool, yield_logger_ult,
                                          (void *)(intptr_t)i,
                                          i == user_stack ? &ua : NULL,
                                          &t[i]));
    coexec_xstream_attr_t a;
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.sched = sched;
    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));
    CH_ASSERT_OK(coexec_xstream_free(&xs)); /* drains */
    CH_ASSERT_EQ_FATAL(atomic_load(&g_ylog_n), YN * (YK + 1));
    /* first round: pool order; then the same order every round */
    for (int i = 0; i < YN; i++)
        CH_ASSERT_EQ(g_ylog[i], pkind == COEXEC_POOL_FIFO ? i : YN - 1 - i);
    int bad = 0;
    for (int i = YN; i < YN * (YK + 1); i++)
        bad += g_ylog[i] != g_ylog[i % YN];
    CH_ASSERT_EQ(bad, 0);
    for (int i = 0; i < YN; i++)
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_OK(coexec_pool_free(&pool));
    free(stack);
}

static void t_yield_fairness(void)
{
    ch_init(1);
    static const coexec_pool_access_t modes[] = {
        COEXEC_ACCESS_PRIV, COEXEC_ACCESS_MPSC, COEXEC_ACCESS_MPMC};
    for (int k = 0; k < 2; k++) {
        coexec_pool_kind_t kind = k ? COEXEC_POOL_LIFO : COEXEC_POOL_FIFO;
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
            check_yield_fairness(kind, modes[m], -1);
            check_yield_fairness(kind, modes[m], 2);
        }
    }
    ch_finalize();
}

static void alone_yielder(void *arg)
{
    for (int i = 0; i < 1000; i++)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    atomic_fetch_add(&ch_count, 1);
}

static void t_yield_alone(void)
{
    ch_init(1);
    /* the main ULT yields with nothing else to run */
    for (int i = 0; i < 1000; i++)
        CH_ASSERT_OK(coexec_yield());
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    atomic_store(&ch_count, 0);
    CH_ASSERT_OK(ch_run_ult_in(s.pool, alone_yielder, NULL));
    CH_ASSERT_EQ(atomic_load(&ch_count), 1);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ======================================================================= */
/* exit                                                                     */
/* ======================================================================= */

static atomic_int g_after_exit;

static __attribute__((noinline)) void deep_exit(int depth)
{
    if (depth > 0) {
        deep_exit(depth - 1);
        return;
    }
    int rc = coexec_thread_exit();
    /* only reached on failure */
    CH_CHECK_RC(rc, COEXEC_OK);
}

static void exit_ult(void *arg)
{
    atomic_fetch_add(&ch_count, 1);
    deep_exit((int)(intptr_t)arg);
    atomic_store(&g_after_exit, 1);
}

static void t_exit(void)
{
    ch_init(2);
    atomic_store(&ch_count, 0);
    atomic_store(&g_after_exit, 0);
    coexec_thread_t t[4];
    for (int i = 0; i < 4; i++) {
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(i % 2, &xs));
        CH_ASSERT_OK(coexec_thread_create_on(xs, exit_ult, (void *)(intptr_t)(i * 3), NULL, &t[i]));
    }
    for (int i = 0; i < 4; i++) {
        CH_ASSERT_OK(coexec_thread_join(t[i]));
        CH_ASSERT_EQ(ch_thread_state(t[i]), COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
    }
    /* detached ULTs exiting */
    for (int i = 0; i < 10; i++) {
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(i % 2, &xs));
        CH_ASSERT_OK(coexec_thread_create_on(xs, exit_ult, (void *)(intptr_t)1, NULL, NULL));
    }
    CH_WAIT(atomic_load(&ch_count) == 14);
    CH_ASSERT_EQ(atomic_load(&g_after_exit), 0);
    /* the main ULT may not exit */
    CH_ASSERT_RC(coexec_thread_exit(), COEXEC_EPERM);
    ch_finalize();
    CH_ASSERT_EQ(atomic_load(&ch_count), 14);
    CH_ASSERT_EQ(atomic_load(&g_after_exit), 0);
}

/* ======================================================================= */
/* ident                                                                    */
/* ======================================================================= */

typedef struct {
    coexec_thread_t self;
    uint64_t id;
    uint64_t id2;
} ident_t;

static void ident_ult(void *arg)
{
    ident_t *p = arg;
    CH_CHECK_RC(coexec_thread_self(&p->self), COEXEC_OK);
    CH_CHECK_RC(coexec_self_id(&p->id), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_get_id(p->self, &p->id2), COEXEC_OK);
}

static coexec_poll_status_t ident_tasklet(coexec_poll_t *cx, void *arg)
{
    ident_t *p = arg;
    CH_CHECK_RC(coexec_self_id(&p->id), COEXEC_OK);
    coexec_thread_t t;
    CH_CHECK_RC(coexec_thread_self(&t), COEXEC_ECONTEXT);
    return COEXEC_READY;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void *ident_pthread(void *arg)
{
    coexec_thread_t t;
    uint64_t id;
    CH_CHECK_RC(coexec_thread_self(&t), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_self_id(&id), COEXEC_ECONTEXT);
    return NULL;
}

/* A unit that reads its own handle from where its creator asked it to be
 * written: the creation calls write *out before the unit is queued. */
typedef struct {
    coexec_thread_t h;
    coexec_tasklet_t k;
    int ok;
} own_handle_t;

static void own_handle_ult(void *arg)
{
    own_handle_t *o = arg;
    coexec_thread_t me;
    o->ok = coexec_thread_self(&me) == COEXEC_OK && CH_SAME(o->h, me);
}

static coexec_poll_status_t own_handle_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    own_handle_t *o = arg;
    o->ok = o->k.p != NULL && coexec_tasklet_unit(o->k).gen != 0;
    return COEXEC_READY;
}

static void t_handle_before_queue(void)
{
    ch_init(4);
    long n = ch_iters(4000, 400);
    own_handle_t *o = calloc((size_t)n, sizeof *o);
    CU_ASSERT_FATAL(o != NULL);
    for (long i = 0; i < n; i++) {
        int r = (int)(i % 4);
        switch (i % 4) {
        case 0:
            CH_ASSERT_OK_FATAL(coexec_thread_create(ch_main_pool(r), own_handle_ult,
                                                    &o[i], NULL, &o[i].h));
            break;
        case 1:
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(r), own_handle_ult,
                                                       &o[i], NULL, &o[i].h));
            break;
        case 2:
            CH_ASSERT_OK_FATAL(coexec_tasklet_create(ch_main_pool(r), own_handle_tasklet,
                                                     &o[i], &o[i].k));
            break;
        default:
            CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(ch_xstream(r), own_handle_tasklet,
                                                        &o[i], &o[i].k));
        }
    }
    long bad = 0;
    for (long i = 0; i < n; i++) {
        if (i % 4 < 2) {
            CH_ASSERT_OK(coexec_thread_join(o[i].h));
            CH_ASSERT_OK(coexec_thread_free(&o[i].h));
        } else {
            CH_ASSERT_OK(coexec_tasklet_join(o[i].k));
            CH_ASSERT_OK(coexec_tasklet_free(&o[i].k));
        }
        bad += !o[i].ok;
    }
    CH_ASSERT_EQ(bad, 0);
    free(o);
    ch_finalize();
}

static void t_ident(void)
{
    ch_init(2);
    long n = ch_iters(2000, 200);
    uint64_t *ids = calloc((size_t)n + 1, sizeof *ids);
    ident_t *p = calloc((size_t)n, sizeof *p);
    coexec_thread_t *t = calloc((size_t)n, sizeof *t);
    for (long i = 0; i < n; i++) {
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank((int)(i % 2), &xs));
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, ident_ult, &p[i], NULL, &t[i]));
    }
    long bad = 0;
    for (long i = 0; i < n; i++) {
        CH_ASSERT_OK(coexec_thread_join(t[i]));
        uint64_t id = 0, uid = 0;
        CH_ASSERT_OK(coexec_thread_get_id(t[i], &id));
        CH_ASSERT_OK(coexec_unit_get_id(coexec_thread_unit(t[i]), &uid));
        bad += !CH_SAME(p[i].self, t[i]) || p[i].id != id || p[i].id2 != id ||
               id == 0 || uid != id;
        ids[i] = id;
    }
    CH_ASSERT_EQ(bad, 0);
    /* the main ULT has an identity too */
    coexec_thread_t me;
    CH_ASSERT_OK(coexec_thread_self(&me));
    CH_ASSERT_OK(coexec_self_id(&ids[n]));
    CU_ASSERT(ids[n] != 0);
    uint64_t me_id = 0;
    CH_ASSERT_OK(coexec_thread_get_id(me, &me_id));
    CH_ASSERT_EQ(me_id, ids[n]);
    qsort(ids, (size_t)n + 1, sizeof *ids, cmp_u64);
    long dup = 0;
    for (long i = 1; i <= n; i++)
        dup += ids[i] == ids[i - 1];
    CH_ASSERT_EQ(dup, 0);
    for (long i = 0; i < n; i++)
        CH_ASSERT_OK(coexec_thread_free(&t[i]));

    /* ids stay unique when records are recycled; tasklets have ids too */
    long m = ch_iters(1000, 100);
    uint64_t *ids2 = calloc((size_t)m, sizeof *ids2);
    for (long i = 0; i < m; i++) {
        ident_t q;
        memset(&q, 0, sizeof q);
        if (i % 2) {
            coexec_thread_t u;
            coexec_xstream_t x0;
            CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
            CH_ASSERT_OK(coexec_thread_create_on(x0, ident_ult, &q, NULL, &u));
            CH_ASSERT_OK(coexec_thread_free(&u));
        } else {
            coexec_xstream_t x1;
            coexec_tasklet_t k;
            CH_ASSERT_OK(coexec_xstream_by_rank(1, &x1));
            CH_ASSERT_OK(coexec_tasklet_create_on(x1, ident_tasklet, &q, &k));
            CH_ASSERT_OK(coexec_tasklet_join(k));
            uint64_t kid = 0; /* what it saw, as coexec_unit_get_id says */
            CH_ASSERT_OK(coexec_unit_get_id(coexec_tasklet_unit(k), &kid));
            CH_ASSERT_EQ(kid, q.id);
            CH_ASSERT_OK(coexec_tasklet_free(&k));
        }
        ids2[i] = q.id;
    }
    qsort(ids2, (size_t)m, sizeof *ids2, cmp_u64);
    dup = 0;
    for (long i = 1; i < m; i++)
        dup += ids2[i] == ids2[i - 1] || ids2[i] == 0;
    CH_ASSERT_EQ(dup, 0);
    free(ids2);

    ch_pthread_t th;
    ch_pthread_start(&th, ident_pthread, NULL);
    ch_pthread_join(&th);
    free(ids);
    free(p);
    free(t);
    ch_finalize();
}

/* ======================================================================= */
/* state                                                                    */
/* ======================================================================= */

typedef struct {
    atomic_int phase;
    int self_state;
} state_probe_t;

static void state_ult(void *arg)
{
    state_probe_t *p = arg;
    coexec_thread_t me;
    CH_CHECK_RC(coexec_thread_self(&me), COEXEC_OK);
    p->self_state = ch_thread_state(me);
    atomic_store(&p->phase, 1);
    CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
    atomic_store(&p->phase, 2);
    while (atomic_load(&p->phase) != 3)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
}

static void join_waiter_ult(void *arg)
{
    coexec_thread_t *target = arg;
    CH_CHECK_RC(coexec_thread_join(*target), COEXEC_OK);
}

static void t_states(void)
{
    ch_init(1);
    ch_stream_t s;
    coexec_pool_t standalone;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &standalone));
    state_probe_t p;
    memset(&p, 0, sizeof p);
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(standalone, state_ult, &p, NULL, &t));
    CH_ASSERT_EQ(ch_thread_state(t), COEXEC_UNIT_READY);
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_pool_pop(standalone, &u));
    CH_ASSERT_EQ(ch_thread_state(t), COEXEC_UNIT_READY); /* in no pool */
    CH_ASSERT_OK(coexec_pool_push(s.pool, u));
    CH_WAIT(atomic_load(&p.phase) == 1);
    CH_ASSERT_EQ(p.self_state, COEXEC_UNIT_RUNNING);
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
    /* a ULT waiting in a join is BLOCKED too */
    coexec_thread_t w;
    CH_ASSERT_OK(coexec_thread_create(s.pool, join_waiter_ult, &t, NULL, &w));
    CH_WAIT(ch_thread_state(w) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_OK(coexec_thread_resume(t));
    CH_WAIT(atomic_load(&p.phase) == 2);
    int st = ch_thread_state(t);
    CU_ASSERT(st == COEXEC_UNIT_RUNNING || st == COEXEC_UNIT_READY);
    atomic_store(&p.phase, 3);
    CH_ASSERT_OK(coexec_thread_join(w));
    CH_ASSERT_EQ(ch_thread_state(t), COEXEC_UNIT_TERMINATED);
    CH_ASSERT_EQ(ch_thread_state(w), COEXEC_UNIT_TERMINATED);
    CH_ASSERT_OK(coexec_thread_free(&w));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_pool_free(&standalone));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ======================================================================= */
/* suspend / resume                                                         */
/* ======================================================================= */

typedef struct {
    atomic_int phase;
    int rank_before, rank_after;
    int rounds;
} sleeper_t;

static void sleeper_ult(void *arg)
{
    sleeper_t *s = arg;
    s->rank_before = ch_self_rank();
    for (int i = 0; i < s->rounds; i++) {
        atomic_store(&s->phase, 2 * i + 1);
        CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
        atomic_store(&s->phase, 2 * i + 2);
    }
    s->rank_after = ch_self_rank();
}

/* resumers */
typedef struct {
    coexec_thread_t t;
    sleeper_t *s;
    atomic_int rc;
} resumer_t;

static void resume_rounds(resumer_t *r)
{
    for (int i = 0; i < r->s->rounds; i++) {
        if (!CH_WAIT(atomic_load(&r->s->phase) == 2 * i + 1))
            return;
        CH_WAIT(ch_thread_state(r->t) == COEXEC_UNIT_BLOCKED);
        int rc = coexec_thread_resume(r->t);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            return;
        }
        /* the sleeper may already be in its next round */
        CH_WAIT(atomic_load(&r->s->phase) >= 2 * i + 2);
    }
}

static void *resumer_pthread(void *arg)
{
    resume_rounds(arg);
    return NULL;
}

static void resumer_ult(void *arg) { resume_rounds(arg); }

static coexec_poll_status_t resumer_tasklet(coexec_poll_t *cx, void *arg)
{
    resumer_t *r = arg;
    /* one round per poll is not possible without blocking: the tasklet
     * only resumes once the sleeper is BLOCKED, re-queued by a helper */
    CH_CHECK_RC(coexec_thread_resume(r->t), COEXEC_OK);
    return COEXEC_READY;
}

static void t_suspend_resume(void)
{
    ch_init(1);
    ch_stream_t s1, s2;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s1, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s2, COEXEC_SCHED_BASIC));
    const int rounds = (int)ch_iters(50, 5);
    for (int how = 0; how < 3; how++) {
        sleeper_t sl;
        memset(&sl, 0, sizeof sl);
        sl.rounds = rounds;
        resumer_t r;
        r.s = &sl;
        CH_ASSERT_OK(coexec_thread_create(s1.pool, sleeper_ult, &sl, NULL, &r.t));
        switch (how) {
        case 0: /* the main ULT, on the primary stream */
            resume_rounds(&r);
            break;
        case 1: { /* an external pthread */
            ch_pthread_t th;
            ch_pthread_start(&th, resumer_pthread, &r);
            ch_pthread_join(&th);
            break;
        }
        default: /* a ULT on another stream */
            CH_ASSERT_OK(ch_run_ult_in(s2.pool, resumer_ult, &r));
            break;
        }
        CH_ASSERT_OK(coexec_thread_join(r.t));
        CH_ASSERT_EQ(atomic_load(&sl.phase), 2 * rounds);
        /* a resumed ULT goes back to its home pool: same stream */
        CH_ASSERT_EQ(sl.rank_before, s1.rank);
        CH_ASSERT_EQ(sl.rank_after, s1.rank);
        CH_ASSERT_OK(coexec_thread_free(&r.t));
    }
    /* from a tasklet, one round */
    {
        sleeper_t sl;
        memset(&sl, 0, sizeof sl);
        sl.rounds = 1;
        resumer_t r;
        r.s = &sl;
        CH_ASSERT_OK(coexec_thread_create(s1.pool, sleeper_ult, &sl, NULL, &r.t));
        CH_WAIT(ch_thread_state(r.t) == COEXEC_UNIT_BLOCKED);
        coexec_tasklet_t k;
        CH_ASSERT_OK(coexec_tasklet_create(s2.pool, resumer_tasklet, &r, &k));
        CH_ASSERT_OK(coexec_thread_join(r.t));
        CH_ASSERT_EQ(atomic_load(&sl.phase), 2);
        CH_ASSERT_OK(coexec_tasklet_free(&k));
        /* finished: resume is refused */
        CH_ASSERT_RC(coexec_thread_resume(r.t), COEXEC_ESTATE);
        coexec_thread_t old = r.t;
        CH_ASSERT_OK(coexec_thread_free(&r.t));
        CH_ASSERT_RC(coexec_thread_resume(old), COEXEC_EHANDLE);
    }
    CH_ASSERT_OK(ch_stream_free(&s1));
    CH_ASSERT_OK(ch_stream_free(&s2));
    ch_finalize();
}

typedef struct {
    atomic_int phase;
    int suspends_returned;
} early_t;

static void early_ult(void *arg)
{
    early_t *e = arg;
    atomic_store(&e->phase, 1);
    /* wait (without yielding away) until the resumes have been issued */
    while (atomic_load(&e->phase) != 2)
        ;
    CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK); /* returns at once */
    e->suspends_returned = 1;
    atomic_store(&e->phase, 3);
    /* two resumes count as one: this suspend really blocks */
    CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
    e->suspends_returned = 2;
    atomic_store(&e->phase, 4);
}

static void t_resume_before_suspend(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    early_t e;
    memset(&e, 0, sizeof e);
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(s.pool, early_ult, &e, NULL, &t));
    CH_WAIT(atomic_load(&e.phase) == 1);
    CH_ASSERT_EQ(ch_thread_state(t), COEXEC_UNIT_RUNNING);
    CH_ASSERT_OK(coexec_thread_resume(t));
    CH_ASSERT_OK(coexec_thread_resume(t));
    atomic_store(&e.phase, 2);
    CH_WAIT(atomic_load(&e.phase) >= 3);
    CH_ASSERT_EQ(e.suspends_returned, 1);
    /* now it parks for real (not TERMINATED: the second resume was not
     * remembered separately) */
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED || atomic_load(&e.phase) == 4);
    CH_ASSERT_EQ(ch_thread_state(t), COEXEC_UNIT_BLOCKED);
    CH_ASSERT_EQ(atomic_load(&e.phase), 3);
    CH_ASSERT_OK(coexec_thread_resume(t));
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_EQ(e.suspends_returned, 2);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

typedef struct {
    coexec_thread_t main;
    atomic_int rc;
} main_resumer_t;

static void *resume_main_pthread(void *arg)
{
    main_resumer_t *m = arg;
    CH_WAIT(ch_thread_state(m->main) == COEXEC_UNIT_BLOCKED);
    atomic_store(&m->rc, coexec_thread_resume(m->main));
    return NULL;
}

static void t_suspend_main(void)
{
    /* the primary's main ULT suspends; an external thread resumes it */
    ch_init(1);
    main_resumer_t m;
    atomic_init(&m.rc, 1);
    CH_ASSERT_OK(coexec_thread_self(&m.main));
    ch_pthread_t th;
    ch_pthread_start(&th, resume_main_pthread, &m);
    CH_ASSERT_OK(coexec_self_suspend());
    ch_pthread_join(&th);
    CH_ASSERT_OK(atomic_load(&m.rc));
    CH_ASSERT_EQ(coexec_self_caller(), COEXEC_CALLER_ULT);
    int r = -1;
    CH_ASSERT_OK(coexec_xstream_self_rank(&r));
    CH_ASSERT_EQ(r, 0);
    ch_finalize();
}

/* ======================================================================= */
/* context: calls from the wrong kind of caller                              */
/* ======================================================================= */

static coexec_thread_t g_some_thread;
static coexec_tasklet_t g_some_tasklet;

static coexec_poll_status_t blocking_in_tasklet(coexec_poll_t *cx, void *arg)
{
    CH_CHECK_RC(coexec_yield(), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_thread_join(g_some_thread), COEXEC_ECONTEXT);
    coexec_thread_t copy = g_some_thread;
    CH_CHECK_RC(coexec_thread_free(&copy), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_tasklet_join(g_some_tasklet), COEXEC_ECONTEXT);
    coexec_tasklet_t kcopy = g_some_tasklet;
    CH_CHECK_RC(coexec_tasklet_free(&kcopy), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_self_suspend(), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_park(), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_thread_exit(), COEXEC_ECONTEXT);
    coexec_waker_t w;
    CH_CHECK_RC(coexec_self_waker(&w), COEXEC_ECONTEXT);
    coexec_thread_t me;
    CH_CHECK_RC(coexec_thread_self(&me), COEXEC_ECONTEXT);
    atomic_fetch_add(&ch_count, 1);
    return COEXEC_READY;
}

static void *blocking_in_pthread(void *arg)
{
    CH_CHECK_RC(coexec_yield(), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_self_suspend(), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_park(), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_thread_exit(), COEXEC_ECONTEXT);
    coexec_waker_t w;
    CH_CHECK_RC(coexec_self_waker(&w), COEXEC_ECONTEXT);
    coexec_thread_t me;
    CH_CHECK_RC(coexec_thread_self(&me), COEXEC_ECONTEXT);
    atomic_fetch_add(&ch_count, 1);
    return NULL;
}

static void self_join_ult(void *arg)
{
    coexec_thread_t me;
    CH_CHECK_RC(coexec_thread_self(&me), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_join(me), COEXEC_EDEADLK);
    coexec_thread_t copy = me;
    CH_CHECK_RC(coexec_thread_free(&copy), COEXEC_EDEADLK);
    atomic_fetch_add(&ch_count, 1);
}

static void t_wrong_callers(void)
{
    ch_init(2);
    coexec_xstream_t x1;
    coexec_pool_t p1;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &x1));
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(x1, &p1));
    atomic_store(&ch_count, 0);
    /* targets that are not finished, so only the caller kind matters */
    coexec_pool_t standalone;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &standalone));
    CH_ASSERT_OK(coexec_thread_create(standalone, ch_count_ult, NULL, NULL, &g_some_thread));
    CH_ASSERT_OK(coexec_tasklet_create(standalone, ch_count_tasklet, NULL, &g_some_tasklet));
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(p1, blocking_in_tasklet, NULL, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    ch_pthread_t th;
    ch_pthread_start(&th, blocking_in_pthread, NULL);
    ch_pthread_join(&th);
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(p1, self_join_ult, NULL, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&ch_count), 3);
    /* the untouched targets still run once when freed */
    CH_ASSERT_OK(coexec_thread_free(&g_some_thread));
    CH_ASSERT_OK(coexec_tasklet_free(&g_some_tasklet));
    CH_ASSERT_EQ(atomic_load(&ch_count), 5);
    /* the main ULT: join of self, free of self */
    coexec_thread_t me;
    CH_ASSERT_OK(coexec_thread_self(&me));
    CH_ASSERT_RC(coexec_thread_join(me), COEXEC_EDEADLK);
    coexec_thread_t copy = me;
    int rc = coexec_thread_free(&copy);
    CU_ASSERT(rc == COEXEC_EPERM || rc == COEXEC_EDEADLK);
    CH_ASSERT_OK(coexec_pool_free(&standalone));
    ch_finalize();
}

/* ======================================================================= */
/* revive                                                                   */
/* ======================================================================= */

#define REV_STREAMS 4
#define REV_MAGIC 0x72657669u

typedef struct {
    atomic_long runs;      /* of this unit, over all its incarnations */
    atomic_long last_round;
    atomic_int bad;        /* a check of the unit's own failed */
    coexec_key_t key;
    void *stack_base;      /* ULTs on a stack of the test's: its base */
} rev_t;

typedef struct {
    rev_t *r;
    long round;
} rev_arg_t;

/* In every incarnation: the data area still holds the stamp its first
 * creation wrote; a ULT starts with no key value, sets one, yields. */
static bool rev_self_checks(rev_t *r, bool ult)
{
    void *d = NULL;
    if (coexec_self_get_data(&d) != COEXEC_OK || !d ||
        *(uint32_t *)d != REV_MAGIC)
        return false;
    if (!ult)
        return true;
    void *v = (void *)1;
    if (coexec_key_get(r->key, &v) != COEXEC_OK || v != NULL ||
        coexec_key_set(r->key, r) != COEXEC_OK || coexec_yield() != COEXEC_OK)
        return false;
    if (r->stack_base) {
        coexec_thread_t me;
        coexec_stack_info_t si;
        if (coexec_thread_self(&me) != COEXEC_OK ||
            coexec_thread_get_stack(me, &si) != COEXEC_OK ||
            si.base != r->stack_base)
            return false;
    }
    return true;
}

static void rev_ult(void *arg)
{
    rev_arg_t *a = arg;
    if (!rev_self_checks(a->r, true))
        atomic_store(&a->r->bad, 1);
    atomic_store(&a->r->last_round, a->round);
    atomic_fetch_add(&a->r->runs, 1);
}

static coexec_poll_status_t rev_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    rev_arg_t *a = arg;
    if (!rev_self_checks(a->r, false))
        atomic_store(&a->r->bad, 1);
    atomic_store(&a->r->last_round, a->round);
    atomic_fetch_add(&a->r->runs, 1);
    return COEXEC_READY;
}

static void rev_stamp(void *data, void *ctx)
{
    (void)ctx;
    *(uint32_t *)data = REV_MAGIC;
}

/* ULTs (on the runtime's stacks, a larger size, a stack of the test's)
 * and tasklets revived round after round, each time into another stream's
 * pool: each incarnation runs once with its own argument, gets a new id
 * and no key values, keeps its stack and data area; the handle is renewed
 * and the old copy is stale for every call. */
static void t_revive_rounds(void)
{
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = REV_STREAMS;
    cfg.unit_data_size = 64;
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    enum { NU = 12 };
    long rounds = ch_iters(60, 6);
    rev_t r[NU];
    rev_arg_t *args = calloc((size_t)(NU * rounds), sizeof *args);
    CU_ASSERT_FATAL(args != NULL);
    coexec_key_t key;
    CH_ASSERT_OK_FATAL(coexec_key_create(NULL, &key));
    static char stack[3][64 * 1024] __attribute__((aligned(16)));
    coexec_thread_t t[NU];
    coexec_tasklet_t k[NU];
    uint64_t id[NU];
    memset(r, 0, sizeof r);
    for (int i = 0; i < NU; i++) {
        r[i].key = key;
        args[i] = (rev_arg_t){&r[i], 0};
        coexec_pool_t pool = ch_main_pool(i % REV_STREAMS);
        if (i % 2) {
            CH_ASSERT_OK_FATAL(coexec_tasklet_create_init(
                pool, rev_tasklet, &args[i], rev_stamp, NULL, &k[i]));
            continue;
        }
        coexec_thread_attr_t attr;
        CH_ASSERT_OK(coexec_thread_attr_init(&attr));
        attr.data_init = rev_stamp;
        if (i % 6 == 2) {
            attr.stack_size = 256 * 1024;
        } else if (i % 6 == 4) {
            attr.stack = stack[i / 6];
            attr.stack_size = sizeof stack[0];
            r[i].stack_base = stack[i / 6];
        }
        CH_ASSERT_OK_FATAL(coexec_thread_create(pool, rev_ult, &args[i], &attr,
                                                &t[i]));
    }
    long stale_ok = 0, wrong_runs = 0, same_id = 0;
    for (long round = 0; round < rounds; round++) {
        for (int i = 0; i < NU; i++) {
            coexec_unit_t u = i % 2 ? coexec_tasklet_unit(k[i])
                                    : coexec_thread_unit(t[i]);
            if (i % 2)
                CH_ASSERT_OK(coexec_tasklet_join(k[i]));
            else
                CH_ASSERT_OK(coexec_thread_join(t[i]));
            uint64_t now = 0;
            CH_ASSERT_OK(coexec_unit_get_id(u, &now));
            same_id += round > 0 && now == id[i];
            id[i] = now;
            wrong_runs += atomic_load(&r[i].runs) != round + 1 ||
                          atomic_load(&r[i].last_round) != round;
            if (round + 1 == rounds)
                continue;
            rev_arg_t *a = &args[(round + 1) * NU + i];
            *a = (rev_arg_t){&r[i], round + 1};
            coexec_pool_t pool = ch_main_pool((int)((i + round + 1) %
                                                    REV_STREAMS));
            if (i % 2) {
                coexec_tasklet_t old = k[i];
                CH_ASSERT_OK(coexec_tasklet_revive(pool, rev_tasklet, a,
                                                   &k[i]));
                CU_ASSERT(k[i].p == old.p && k[i].gen != old.gen);
                stale_ok += coexec_tasklet_join(old) == COEXEC_OK;
                stale_ok += coexec_tasklet_revive(pool, rev_tasklet, a,
                                                  &old) == COEXEC_OK;
                stale_ok += coexec_tasklet_free(&old) == COEXEC_OK;
            } else {
                coexec_thread_t old = t[i];
                CH_ASSERT_OK(coexec_thread_revive(pool, rev_ult, a, &t[i]));
                CU_ASSERT(t[i].p == old.p && t[i].gen != old.gen);
                stale_ok += coexec_thread_join(old) == COEXEC_OK;
                stale_ok += coexec_thread_revive(pool, rev_ult, a, &old) ==
                            COEXEC_OK;
                stale_ok += coexec_thread_free(&old) == COEXEC_OK;
            }
        }
    }
    int bad = 0;
    for (int i = 0; i < NU; i++) {
        bad += atomic_load(&r[i].bad);
        if (i % 2)
            CH_ASSERT_OK(coexec_tasklet_free(&k[i]));
        else
            CH_ASSERT_OK(coexec_thread_free(&t[i]));
    }
    CH_ASSERT_EQ(bad, 0);
    CH_ASSERT_EQ(wrong_runs, 0);
    CH_ASSERT_EQ(stale_ok, 0);
    CH_ASSERT_EQ(same_id, 0);
    CH_ASSERT_OK(coexec_key_delete(key));
    free(args);
    ch_finalize();
}

static coexec_poll_status_t rev_plain_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    return COEXEC_READY;
}

static void rev_block_ult(void *arg)
{
    CH_CHECK_RC(coexec_eventual_wait((coexec_eventual_t *)arg, NULL),
                COEXEC_OK);
}

static void rev_nop_ult(void *arg) { (void)arg; }

/* A unit not finished, the main ULT, wrong arguments and handles. */
static void t_revive_errors(void)
{
    coexec_thread_t none = {0};
    coexec_pool_t no_pool = {0};
    CH_ASSERT_RC(coexec_thread_revive(no_pool, rev_nop_ult, NULL, &none),
                 COEXEC_ENOTINIT);
    ch_init(2);
    coexec_pool_t pool = ch_main_pool(1);
    coexec_eventual_t ev;
    CH_ASSERT_OK_FATAL(coexec_eventual_init(&ev, 0));
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(pool, rev_block_ult, &ev, NULL, &t));
    /* Queued or blocked: not finished. */
    CH_ASSERT_RC(coexec_thread_revive(pool, rev_nop_ult, NULL, &t),
                 COEXEC_ESTATE);
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_thread_revive(pool, rev_nop_ult, NULL, &t),
                 COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_eventual_set(&ev, NULL, 0));
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_RC(coexec_thread_revive(pool, rev_nop_ult, NULL, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_revive(pool, NULL, NULL, &t), COEXEC_EINVAL);
    coexec_pool_t gone;
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC,
                                    &gone));
    coexec_pool_t gone_copy = gone;
    CH_ASSERT_OK(coexec_pool_free(&gone));
    CH_ASSERT_RC(coexec_thread_revive(gone_copy, rev_nop_ult, NULL, &t),
                 COEXEC_EHANDLE);
    /* A tasklet's handle given as a ULT's, and the other way round. */
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(pool, rev_plain_tasklet, NULL, &k));
    CH_ASSERT_OK(coexec_tasklet_join(k));
    coexec_thread_t as_ult = {k.p, k.gen};
    CH_ASSERT_RC(coexec_thread_revive(pool, rev_nop_ult, NULL, &as_ult),
                 COEXEC_EHANDLE);
    coexec_tasklet_t as_tk = {t.p, t.gen};
    CH_ASSERT_RC(coexec_tasklet_revive(pool, rev_plain_tasklet, NULL, &as_tk),
                 COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    /* Freed. */
    coexec_thread_t copy = t;
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(coexec_thread_revive(pool, rev_nop_ult, NULL, &copy),
                 COEXEC_EHANDLE);
    /* The primary's main ULT. */
    coexec_thread_t me;
    CH_ASSERT_OK(coexec_thread_self(&me));
    CH_ASSERT_RC(coexec_thread_revive(pool, rev_nop_ult, NULL, &me),
                 COEXEC_EPERM);
    CH_ASSERT_OK(coexec_eventual_destroy(&ev));
    ch_finalize();
}

/* A revive and a free of one finished ULT through two copies of its
 * handle, from two streams at once (each racer waits until both are
 * there): exactly one wins each time; a won revive runs its ULT, which
 * the test then joins and frees through the renewed handle. */
typedef struct {
    coexec_thread_t rcopy, fcopy;
    coexec_pool_t to;
    atomic_int arrived, go;
    int rrc, frc;
    atomic_long ran;
} rev_race_t;

static void rev_count_ult(void *arg)
{
    atomic_fetch_add(&((rev_race_t *)arg)->ran, 1);
}

static void rev_race_wait(rev_race_t *x)
{
    atomic_fetch_add(&x->arrived, 1);
    while (!atomic_load(&x->go))
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
}

static void rev_race_reviver(void *arg)
{
    rev_race_t *x = arg;
    rev_race_wait(x);
    x->rrc = coexec_thread_revive(x->to, rev_count_ult, x, &x->rcopy);
}

static void rev_race_freer(void *arg)
{
    rev_race_t *x = arg;
    rev_race_wait(x);
    x->frc = coexec_thread_free(&x->fcopy);
}

static void t_revive_free_race(void)
{
    ch_init(3);
    long n = ch_iters(2000, 100), both = 0, neither = 0, lost_runs = 0;
    long revived = 0;
    rev_race_t x;
    for (long i = 0; i < n; i++) {
        memset(&x, 0, sizeof x);
        coexec_thread_t t, r, f;
        CH_ASSERT_OK_FATAL(coexec_thread_create(ch_main_pool(0), rev_count_ult,
                                                &x, NULL, &t));
        CH_ASSERT_OK(coexec_thread_join(t));
        x.rcopy = x.fcopy = t;
        x.to = ch_main_pool((int)(i % 3));
        int rs = 1 + (int)(i & 1); /* the racers swap streams */
        CH_ASSERT_OK_FATAL(coexec_thread_create(ch_main_pool(rs),
                                                rev_race_reviver, &x, NULL,
                                                &r));
        CH_ASSERT_OK_FATAL(coexec_thread_create(ch_main_pool(3 - rs),
                                                rev_race_freer, &x, NULL, &f));
        CH_WAIT(atomic_load(&x.arrived) == 2);
        atomic_store(&x.go, 1);
        CH_ASSERT_OK(coexec_thread_join(r));
        CH_ASSERT_OK(coexec_thread_join(f));
        CH_ASSERT_OK(coexec_thread_free(&r));
        CH_ASSERT_OK(coexec_thread_free(&f));
        both += x.rrc == COEXEC_OK && x.frc == COEXEC_OK;
        neither += x.rrc != COEXEC_OK && x.frc != COEXEC_OK;
        if (x.rrc == COEXEC_OK) {
            revived++;
            CH_ASSERT_RC(x.frc, COEXEC_EHANDLE);
            CH_ASSERT_OK(coexec_thread_join(x.rcopy));
            lost_runs += atomic_load(&x.ran) != 2;
            CH_ASSERT_OK(coexec_thread_free(&x.rcopy));
        } else {
            CH_ASSERT_RC(x.rrc, COEXEC_EHANDLE);
            CH_ASSERT_OK(x.frc);
            lost_runs += atomic_load(&x.ran) != 1;
        }
    }
    CH_ASSERT_EQ(both, 0);
    CH_ASSERT_EQ(neither, 0);
    CH_ASSERT_EQ(lost_runs, 0);
    CU_ASSERT(revived <= n);
    ch_finalize();
}

/* ======================================================================= */
/* errors                                                                   */
/* ======================================================================= */

static void t_errors(void)
{
    ch_init(1);
    coexec_xstream_t x0;
    coexec_pool_t p0;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(x0, &p0));
    coexec_thread_t t = {0};
    CH_ASSERT_RC(coexec_thread_create(p0, NULL, NULL, NULL, &t), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_create_on(x0, NULL, NULL, NULL, &t), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_create_on((coexec_xstream_t){0}, ch_count_ult, NULL, NULL, &t), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_free(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_self(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_self_id(NULL), COEXEC_EINVAL);

    atomic_store(&ch_count, 0);
    CH_ASSERT_OK(coexec_thread_create(p0, ch_count_ult, NULL, NULL, &t));
    CH_ASSERT_RC(coexec_thread_get_state(t, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_get_id(t, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_get_id(coexec_thread_unit(t), NULL), COEXEC_EINVAL);
    coexec_thread_t old = t;
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&ch_count), 1);

    coexec_unit_state_t st;
    uint64_t id;
    coexec_thread_t copy;
    for (int round = 0; round < 2; round++) {
        CH_ASSERT_RC(coexec_thread_join(old), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_thread_get_state(old, &st), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_thread_get_id(old, &id), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_unit_get_id(coexec_thread_unit(old), &id),
                     COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_thread_resume(old), COEXEC_EHANDLE);
        copy = old;
        CH_ASSERT_RC(coexec_thread_free(&copy), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_push(p0, coexec_thread_unit(old)), COEXEC_EHANDLE);
        if (round == 0) {
            /* recycle the record: new ULTs, some still alive */
            enum { M = 64 };
            coexec_thread_t fresh[M];
            for (int i = 0; i < M; i++)
                CH_ASSERT_OK(coexec_thread_create(p0, ch_count_ult, NULL, NULL, &fresh[i]));
            for (int i = 0; i < M; i += 2)
                CH_ASSERT_OK(coexec_thread_free(&fresh[i]));
            for (int i = 0; i < M; i++)
                CH_ASSERT_OK(coexec_thread_create(p0, ch_count_ult, NULL, NULL, NULL));
            CH_ASSERT_RC(coexec_thread_join(old), COEXEC_EHANDLE);
            for (int i = 1; i < M; i += 2) {
                CH_ASSERT_OK(coexec_thread_join(fresh[i]));
                CH_ASSERT_OK(coexec_thread_free(&fresh[i]));
            }
        }
    }
    coexec_thread_t nul = {0};
    CH_ASSERT_RC(coexec_thread_join(nul), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_get_state(nul, &st), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_resume(nul), COEXEC_EHANDLE);
    /* a tasklet handle's record is not a ULT handle's: a ULT created
     * afterwards is unaffected by the stale handle */
    ch_finalize();
}

static void t_after_finalize(void)
{
    ch_init(1);
    coexec_thread_t t;
    coexec_xstream_t x0;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_OK(coexec_thread_create_on(x0, ch_count_ult, NULL, NULL, &t));
    CH_ASSERT_OK(coexec_thread_join(t));
    ch_finalize();
    coexec_unit_state_t st;
    uint64_t id;
    CH_ASSERT_RC(coexec_thread_join(t), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_get_state(t, &st), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_get_id(t, &id), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_resume(t), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_free(&t), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_create_on(x0, ch_count_ult, NULL, NULL, &t), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_yield(), COEXEC_ENOTINIT);
}

/* ======================================================================= */
/* wakers                                                                   */
/* ======================================================================= */

typedef struct {
    coexec_waker_t w; /* published before phase 1 */
    atomic_int phase;
    int rounds;
    int rank_after;
} parker_t;

static void parker_ult(void *arg)
{
    parker_t *p = arg;
    CH_CHECK_RC(coexec_self_waker(&p->w), COEXEC_OK);
    for (int i = 0; i < p->rounds; i++) {
        atomic_store(&p->phase, 2 * i + 1);
        CH_CHECK_RC(coexec_park(), COEXEC_OK);
        atomic_store(&p->phase, 2 * i + 2);
    }
    p->rank_after = ch_self_rank();
}

typedef struct {
    parker_t *p;
    coexec_thread_t t;
} waker_job_t;

static void wake_rounds(waker_job_t *j)
{
    for (int i = 0; i < j->p->rounds; i++) {
        if (!CH_WAIT(atomic_load(&j->p->phase) == 2 * i + 1))
            return;
        if (i % 2)
            CH_WAIT(ch_thread_state(j->t) == COEXEC_UNIT_BLOCKED);
        CH_CHECK_RC(coexec_waker_wake(j->p->w), COEXEC_OK);
        CH_WAIT(atomic_load(&j->p->phase) >= 2 * i + 2);
    }
}

static void *waker_pthread(void *arg)
{
    wake_rounds(arg);
    return NULL;
}

static void waker_ult(void *arg) { wake_rounds(arg); }

static void t_wakers(void)
{
    ch_init(1);
    ch_stream_t s1, s2;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s1, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s2, COEXEC_SCHED_BASIC_WAIT));
    int rounds = (int)ch_iters(40, 4);
    for (int how = 0; how < 3; how++) {
        parker_t p;
        memset(&p, 0, sizeof p);
        p.rounds = rounds;
        waker_job_t j = {&p, {0}};
        CH_ASSERT_OK(coexec_thread_create(s1.pool, parker_ult, &p, NULL, &j.t));
        if (how == 0) {
            wake_rounds(&j);
        } else if (how == 1) {
            ch_pthread_t th;
            ch_pthread_start(&th, waker_pthread, &j);
            ch_pthread_join(&th);
        } else {
            CH_ASSERT_OK(ch_run_ult_in(s2.pool, waker_ult, &j));
        }
        CH_ASSERT_OK(coexec_thread_join(j.t));
        CH_ASSERT_EQ(atomic_load(&p.phase), 2 * rounds);
        CH_ASSERT_EQ(p.rank_after, s1.rank);
        CH_ASSERT_OK(coexec_thread_free(&j.t));
    }
    CH_ASSERT_OK(ch_stream_free(&s1));
    CH_ASSERT_OK(ch_stream_free(&s2));
    ch_finalize();
}

typedef struct {
    coexec_waker_t w;
    atomic_int phase;
    int parks_returned;
} early_park_t;

static void early_park_ult(void *arg)
{
    early_park_t *e = arg;
    CH_CHECK_RC(coexec_self_waker(&e->w), COEXEC_OK);
    atomic_store(&e->phase, 1);
    while (atomic_load(&e->phase) != 2)
        ;
    CH_CHECK_RC(coexec_park(), COEXEC_OK); /* a wake is recorded */
    e->parks_returned = 1;
    atomic_store(&e->phase, 3);
    CH_CHECK_RC(coexec_park(), COEXEC_OK); /* blocks: two wakes = one */
    e->parks_returned = 2;
    atomic_store(&e->phase, 4);
}

typedef struct {
    atomic_int phase;
    coexec_waker_t w;
} parked_t;

static void parked_ult(void *arg)
{
    parked_t *p = arg;
    CH_CHECK_RC(coexec_self_waker(&p->w), COEXEC_OK);
    atomic_store(&p->phase, 1);
    CH_CHECK_RC(coexec_park(), COEXEC_OK);
    atomic_store(&p->phase, 2);
}

static void t_waker_early_and_stale(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    early_park_t e;
    memset(&e, 0, sizeof e);
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(s.pool, early_park_ult, &e, NULL, &t));
    CH_WAIT(atomic_load(&e.phase) == 1);
    CH_ASSERT_OK(coexec_waker_wake(e.w));
    CH_ASSERT_OK(coexec_waker_wake(e.w));
    atomic_store(&e.phase, 2);
    CH_WAIT(atomic_load(&e.phase) >= 3);
    CH_ASSERT_EQ(e.parks_returned, 1);
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED || atomic_load(&e.phase) == 4);
    CH_ASSERT_EQ(atomic_load(&e.phase), 3);
    CH_ASSERT_OK(coexec_waker_wake(e.w));
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_EQ(e.parks_returned, 2);
    CH_ASSERT_OK(coexec_thread_free(&t));

    /* stale waker: its unit has finished and been freed */
    coexec_waker_t stale = e.w;
    CH_ASSERT_OK(coexec_waker_wake(stale));
    /* ... and its record recycled by parked ULTs: they stay parked */
    enum { M = 16 };
    parked_t pk[M];
    coexec_thread_t pt[M];
    for (int i = 0; i < M; i++) {
        memset(&pk[i], 0, sizeof pk[i]);
        CH_ASSERT_OK(coexec_thread_create(s.pool, parked_ult, &pk[i], NULL, &pt[i]));
    }
    for (int i = 0; i < M; i++)
        CH_WAIT(atomic_load(&pk[i].phase) == 1 && ch_thread_state(pt[i]) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_OK(coexec_waker_wake(stale));
    CH_ASSERT_OK(coexec_waker_wake(stale));
    for (int i = 0; i < 200; i++)
        ch_relax();
    int woken = 0;
    for (int i = 0; i < M; i++)
        woken += atomic_load(&pk[i].phase) != 1 || ch_thread_state(pt[i]) != COEXEC_UNIT_BLOCKED;
    CH_ASSERT_EQ(woken, 0);
    /* their own wakers do wake them */
    for (int i = 0; i < M; i++) {
        CH_ASSERT_OK(coexec_waker_wake(pk[i].w));
        CH_ASSERT_OK(coexec_thread_free(&pt[i]));
        CH_ASSERT_EQ(atomic_load(&pk[i].phase), 2);
    }

    /* bad arguments */
    CH_ASSERT_RC(coexec_waker_wake((coexec_waker_t){0}), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_self_waker(NULL), COEXEC_EINVAL);
    /* the main ULT has a waker too */
    coexec_waker_t mw;
    CH_ASSERT_OK(coexec_self_waker(&mw));
    CH_ASSERT_OK(coexec_waker_wake(mw));
    CH_ASSERT_OK(coexec_park()); /* wake recorded: returns at once */
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ======================================================================= */

static const ch_test_t basic_tests[] = {
    {"create_join_free", t_create_join_free},
    {"attr_defaults", t_attr_defaults},
    {"detached", t_detached},
    {"create_from_ult_pthread_tasklet", t_create_anywhere},
    {NULL, NULL}};
static const ch_test_t join_tests[] = {
    {"join_finished", t_join_finished},
    {"join_not_started_runs_in_place", t_join_not_started_in_place},
    {"join_running_main_and_external", t_join_running},
    {"join_detached_einval", t_join_detached},
    {"join_and_push_of_a_popped_unit_race", t_join_popped_race},
    {"join_popped_unit_runs_in_place", t_join_popped_in_place},
    {NULL, NULL}};
static const ch_test_t attr_tests[] = {
    {"stack_size_honoured", t_stack_size},
    {"user_stack", t_user_stack},
    {NULL, NULL}};
static const ch_test_t yield_tests[] = {
    {"round_robin_fifo_lifo", t_yield_fairness},
    {"yield_alone", t_yield_alone},
    {NULL, NULL}};
static const ch_test_t exit_tests[] = {{"exit", t_exit}, {NULL, NULL}};
static const ch_test_t ident_tests[] = {{"self_and_ids", t_ident},
                                        {"handle_before_queue", t_handle_before_queue},
                                        {NULL, NULL}};
static const ch_test_t state_tests[] = {{"states", t_states}, {NULL, NULL}};
static const ch_test_t suspend_tests[] = {
    {"resume_from_stream_pthread_ult_tasklet", t_suspend_resume},
    {"resume_before_suspend", t_resume_before_suspend},
    {"suspend_main_ult", t_suspend_main},
    {NULL, NULL}};
static const ch_test_t context_tests[] = {{"wrong_callers", t_wrong_callers},
                                          {NULL, NULL}};
static const ch_test_t errors_tests[] = {
    {"args_and_stale_handles", t_errors},
    {"after_finalize", t_after_finalize},
    {NULL, NULL}};
static const ch_test_t waker_tests[] = {
    {"park_wake_from_everywhere", t_wakers},
    {"early_double_and_stale", t_waker_early_and_stale},
    {NULL, NULL}};

static const ch_test_t revive_tests[] = {
    {"rounds_across_streams", t_revive_rounds},
    {"errors", t_revive_errors},
    {"free_race", t_revive_free_race},
    {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"basic", basic_tests},     {"join", join_tests},
    {"attr", attr_tests},       {"yield", yield_tests},
    {"exit", exit_tests},       {"ident", ident_tests},
    {"state", state_tests},     {"suspend", suspend_tests},
    {"context", context_tests}, {"errors", errors_tests},
    {"waker", waker_tests},     {"revive", revive_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
