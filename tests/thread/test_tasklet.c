/*
 * tests/thread/test_tasklet.c: tasklets: create/join/free, detached,
 * in-place run on join, tasklets creating tasklets, what a TERMINATED
 * state publishes, COEXEC_PENDING with a
 * stored waker and polling again after a wake from another thread, argument
 * errors.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* ======================================================================= */
/* basic                                                                    */
/* ======================================================================= */

typedef struct {
    long in, out;
    int caller;
    int rank;
    uint64_t id;
} calc_t;

static coexec_poll_status_t calc_tasklet(coexec_poll_t *cx, void *arg)
{
    calc_t *c = arg;
    c->out = c->in * 7 - 2;
    c->caller = (int)coexec_self_caller();
    c->rank = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&c->rank), COEXEC_OK);
    CH_CHECK_RC(coexec_self_id(&c->id), COEXEC_OK);
    return COEXEC_READY;
}

static void t_create_join_free(void)
{
    ch_init(3);
    enum { N = 150 };
    calc_t c[N];
    coexec_tasklet_t k[N];
    for (int i = 0; i < N; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].in = i;
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(i % 3, &xs));
        if (i % 2) {
            CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(xs, calc_tasklet, &c[i], &k[i]));
        } else {
            coexec_pool_t p;
            CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(xs, &p));
            CH_ASSERT_OK_FATAL(coexec_tasklet_create(p, calc_tasklet, &c[i], &k[i]));
        }
    }
    for (int i = 0; i < N; i++) {
        if (i % 2 == 0) {
            CH_ASSERT_OK(coexec_tasklet_join(k[i]));
            CH_ASSERT_EQ(ch_tasklet_state(k[i]), COEXEC_UNIT_TERMINATED);
            CH_ASSERT_OK(coexec_tasklet_join(k[i]));
        }
        CH_ASSERT_OK(coexec_tasklet_free(&k[i]));
        CU_ASSERT(CH_IS_NULL(k[i]));
        CH_ASSERT_EQ(c[i].out, i * 7 - 2);
        CH_ASSERT_EQ(c[i].caller, COEXEC_CALLER_TASKLET);
        CU_ASSERT(c[i].id != 0);
    }
    ch_finalize();
}

static void t_detached(void)
{
    ch_init(3);
    long n = ch_iters(5000, 500);
    atomic_store(&ch_count, 0);
    for (long i = 0; i < n; i++) {
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank((int)(i % 3), &xs));
        CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(xs, ch_count_tasklet, NULL, NULL));
    }
    CH_WAIT(atomic_load(&ch_count) == n);
    CH_ASSERT_EQ(atomic_load(&ch_count), n);
    atomic_store(&ch_count, 0);
    for (long i = 0; i < 200; i++) {
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank((int)(i % 3), &xs));
        CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(xs, ch_count_tasklet, NULL, NULL));
    }
    ch_finalize(); /* runs what is still queued */
    CH_ASSERT_EQ(atomic_load(&ch_count), 200);
}

typedef struct {
    coexec_pool_t standalone;
    calc_t probe;
    int my_rank;
} joiner_t;

static void joiner_ult(void *arg)
{
    joiner_t *j = arg;
    CH_CHECK_RC(coexec_xstream_self_rank(&j->my_rank), COEXEC_OK);
    coexec_tasklet_t k;
    CH_CHECK_RC(coexec_tasklet_create(j->standalone, calc_tasklet, &j->probe, &k), COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_join(k), COEXEC_OK);
    CH_CHECK_EQ(j->probe.out, j->probe.in * 7 - 2);
    CH_CHECK_RC(coexec_tasklet_free(&k), COEXEC_OK);
}

static void t_join_in_place(void)
{
    ch_init(1);
    coexec_pool_t standalone;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_LIFO, COEXEC_ACCESS_MPMC, &standalone));
    calc_t c;
    memset(&c, 0, sizeof c);
    c.in = 5;
    c.out = -1;
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(standalone, calc_tasklet, &c, &k));
    CH_ASSERT_EQ(ch_tasklet_state(k), COEXEC_UNIT_READY);
    CH_ASSERT_EQ(c.out, -1);
    CH_ASSERT_OK(coexec_tasklet_join(k));
    CH_ASSERT_EQ(c.out, 33);
    CH_ASSERT_EQ(c.rank, 0);
    CH_ASSERT_EQ(c.caller, COEXEC_CALLER_TASKLET);
    size_t sz = 7;
    CH_ASSERT_OK(coexec_pool_get_size(standalone, &sz));
    CH_ASSERT_EQ(sz, 0);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    /* free runs it too */
    c.out = -1;
    CH_ASSERT_OK(coexec_tasklet_create(standalone, calc_tasklet, &c, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_EQ(c.out, 33);
    /* from a ULT on stream k: runs on stream k */
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    joiner_t j;
    memset(&j, 0, sizeof j);
    j.standalone = standalone;
    j.probe.in = 2;
    CH_ASSERT_OK(ch_run_ult_in(s.pool, joiner_ult, &j));
    CH_ASSERT_EQ(j.my_rank, s.rank);
    CH_ASSERT_EQ(j.probe.rank, s.rank);
    CH_ASSERT_EQ(j.probe.out, 12);
    CH_ASSERT_OK(ch_stream_free(&s));
    CH_ASSERT_OK(coexec_pool_free(&standalone));
    ch_finalize();
}

/* a tasklet tree: each creates `fanout` children until depth 0 */
static coexec_poll_status_t tree_tasklet(coexec_poll_t *cx, void *arg)
{
    long depth = (long)(intptr_t)arg;
    atomic_fetch_add(&ch_count, 1);
    if (depth > 0) {
        coexec_xstream_t xs;
        CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
        for (int i = 0; i < 3; i++)
            CH_CHECK_RC(coexec_tasklet_create_on(xs, tree_tasklet, (void *)(intptr_t)(depth - 1), NULL), COEXEC_OK);
    }
    return COEXEC_READY;
}

static coexec_tasklet_t g_child;
static calc_t g_child_calc;

static coexec_poll_status_t parent_tasklet(coexec_poll_t *cx, void *arg)
{
    coexec_pool_t *pool = arg;
    /* a joinable child: joined later by the main ULT */
    CH_CHECK_RC(coexec_tasklet_create(*pool, calc_tasklet, &g_child_calc, &g_child), COEXEC_OK);
    return COEXEC_READY;
}

static void *create_from_pthread(void *arg)
{
    coexec_pool_t *pool = arg;
    coexec_tasklet_t k;
    CH_CHECK_RC(coexec_tasklet_create(*pool, ch_count_tasklet, NULL, &k), COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_join(k), COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_free(&k), COEXEC_OK);
    return NULL;
}

static void t_tasklet_from_tasklet(void)
{
    ch_init(3);
    coexec_xstream_t x1;
    coexec_pool_t p1;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &x1));
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(x1, &p1));
    atomic_store(&ch_count, 0);
    CH_ASSERT_OK(coexec_tasklet_create(p1, tree_tasklet, (void *)(intptr_t)6, NULL));
    long total = 1 + 3 + 9 + 27 + 81 + 243 + 729;
    CH_WAIT(atomic_load(&ch_count) == total);
    CH_ASSERT_EQ(atomic_load(&ch_count), total);

    memset(&g_child_calc, 0, sizeof g_child_calc);
    g_child_calc.in = 10;
    coexec_tasklet_t parent;
    CH_ASSERT_OK(coexec_tasklet_create(p1, parent_tasklet, &p1, &parent));
    CH_ASSERT_OK(coexec_tasklet_free(&parent));
    CH_ASSERT_OK(coexec_tasklet_join(g_child));
    CH_ASSERT_EQ(g_child_calc.out, 68);
    CH_ASSERT_OK(coexec_tasklet_free(&g_child));

    atomic_store(&ch_count, 0);
    ch_pthread_t th;
    ch_pthread_start(&th, create_from_pthread, &p1);
    ch_pthread_join(&th);
    CH_ASSERT_EQ(atomic_load(&ch_count), 1);
    ch_finalize();
}

/* ======================================================================= */
/* pending                                                                  */
/* ======================================================================= */

typedef struct {
    coexec_waker_t w;     /* stored by the tasklet before returning PENDING */
    atomic_int published; /* number of times w was published */
    atomic_int woken;     /* number of wakes sent */
    atomic_int polls;
    atomic_int early_polls; /* polls that found no new wake */
    int rounds;
    int wake_inside; /* wake its own waker before returning PENDING */
    int last_rank;
} pend_t;

static coexec_poll_status_t pend_tasklet(coexec_poll_t *cx, void *arg)
{
    pend_t *p = arg;
    int n = atomic_fetch_add(&p->polls, 1);
    CH_CHECK_RC(coexec_xstream_self_rank(&p->last_rank), COEXEC_OK);
    /* poll n (n >= 1) must come after wake n */
    if (n > 0 && atomic_load(&p->woken) < n)
        atomic_fetch_add(&p->early_polls, 1);
    if (n >= p->rounds)
        return COEXEC_READY;
    coexec_waker_t w;
    CH_CHECK_RC(coexec_poll_waker(cx, &w), COEXEC_OK);
    if (p->wake_inside) {
        atomic_fetch_add(&p->woken, 1);
        CH_CHECK_RC(coexec_waker_wake(w), COEXEC_OK);
    } else {
        p->w = w;
        atomic_fetch_add(&p->published, 1);
    }
    return COEXEC_PENDING;
}

/* Wakes p once per round, after it published its waker. */
static void wake_rounds(pend_t *p, coexec_tasklet_t k, int wait_blocked)
{
    for (int i = 0; i < p->rounds; i++) {
        if (!CH_WAIT(atomic_load(&p->published) == i + 1))
            return;
        if (wait_blocked)
            CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
        atomic_fetch_add(&p->woken, 1);
        CH_CHECK_RC(coexec_waker_wake(p->w), COEXEC_OK);
    }
}

typedef struct {
    pend_t *p;
    coexec_tasklet_t k;
} wake_job_t;

static void *wake_pthread(void *arg)
{
    wake_job_t *j = arg;
    wake_rounds(j->p, j->k, 1);
    return NULL;
}

static void wake_ult(void *arg)
{
    wake_job_t *j = arg;
    wake_rounds(j->p, j->k, 0);
}

static void t_pending(void)
{
    ch_init(1);
    ch_stream_t s1, s2;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s1, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s2, COEXEC_SCHED_BASIC));
    int rounds = (int)ch_iters(30, 3);
    for (int how = 0; how < 3; how++) {
        pend_t p;
        memset(&p, 0, sizeof p);
        p.rounds = rounds;
        wake_job_t j = {&p, {0}};
        CH_ASSERT_OK(coexec_tasklet_create(s1.pool, pend_tasklet, &p, &j.k));
        if (how == 0) {
            ch_pthread_t th;
            ch_pthread_start(&th, wake_pthread, &j);
            ch_pthread_join(&th);
        } else if (how == 1) {
            CH_ASSERT_OK(ch_run_ult_in(s2.pool, wake_ult, &j));
        } else {
            wake_rounds(&p, j.k, 1); /* the main ULT */
        }
        /* let its own stream poll it the last time, then join */
        CH_WAIT(ch_tasklet_state(j.k) == COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_tasklet_join(j.k));
        CH_ASSERT_EQ(atomic_load(&p.polls), rounds + 1);
        CH_ASSERT_EQ(atomic_load(&p.early_polls), 0);
        CH_ASSERT_EQ(p.last_rank, s1.rank); /* polled again on its stream */
        CH_ASSERT_EQ(ch_tasklet_state(j.k), COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_tasklet_free(&j.k));
    }
    CH_ASSERT_OK(ch_stream_free(&s1));
    CH_ASSERT_OK(ch_stream_free(&s2));
    ch_finalize();
}

typedef struct {
    pend_t *p;
    atomic_int rc;
    atomic_int done;
    coexec_tasklet_t k;
} pjoin_t;

static void *join_pthread(void *arg)
{
    pjoin_t *j = arg;
    atomic_store(&j->rc, coexec_tasklet_join(j->k));
    atomic_store(&j->done, 1);
    return NULL;
}

static void t_pending_join_and_inside(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));

    /* a wake sent from inside the poll, before returning PENDING, is not
     * lost: it is polled again */
    pend_t p;
    memset(&p, 0, sizeof p);
    p.rounds = 5;
    p.wake_inside = 1;
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(s.pool, pend_tasklet, &p, &k));
    CH_ASSERT_OK(coexec_tasklet_join(k));
    CH_ASSERT_EQ(atomic_load(&p.polls), 6);
    CH_ASSERT_OK(coexec_tasklet_free(&k));

    /* the main ULT joins a pending tasklet: it waits for the wake */
    memset(&p, 0, sizeof p);
    p.rounds = 1;
    CH_ASSERT_OK(coexec_tasklet_create(s.pool, pend_tasklet, &p, &k));
    CH_WAIT(atomic_load(&p.published) == 1);
    CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
    pjoin_t pj;
    pj.p = &p;
    pj.k = k;
    atomic_init(&pj.rc, 1);
    atomic_init(&pj.done, 0);
    /* an external thread joins; the main ULT wakes the tasklet */
    ch_pthread_t th;
    ch_pthread_start(&th, join_pthread, &pj);
    for (int i = 0; i < 100; i++)
        ch_relax();
    CH_ASSERT_EQ(atomic_load(&pj.done), 0); /* not before the wake */
    atomic_fetch_add(&p.woken, 1);
    CH_ASSERT_OK(coexec_waker_wake(p.w));
    ch_pthread_join(&th);
    CH_ASSERT_RC(atomic_load(&pj.rc), COEXEC_OK);
    CH_ASSERT_EQ(atomic_load(&p.polls), 2);
    CH_ASSERT_EQ(atomic_load(&p.early_polls), 0);
    coexec_waker_t stale = p.w;
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    /* a stale tasklet waker is a no-op */
    CH_ASSERT_OK(coexec_waker_wake(stale));

    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/*
 * A tasklet that its joiner runs in place and that returns PENDING is
 * parked like any other: the joiner waits, and the poll that ends the
 * tasklet (by its stream's scheduler) wakes it. On one stream, a tasklet
 * created into the main pool and joined at once is run in place by the
 * join. Woken from inside its poll, or by another thread; by a join and
 * by a free.
 */
static void t_join_in_place_pending(void)
{
    ch_init(1);
    coexec_xstream_t self;
    coexec_pool_t main_pool;
    CH_ASSERT_OK_FATAL(coexec_xstream_self(&self));
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(self, &main_pool));
    for (int by_free = 0; by_free < 2; by_free++) {
        for (int outside = 0; outside < 2; outside++) {
            pend_t p;
            memset(&p, 0, sizeof p);
            p.rounds = outside ? 1 : 3;
            p.wake_inside = !outside;
            p.last_rank = -1;
            coexec_tasklet_t k;
            CH_ASSERT_OK(coexec_tasklet_create(main_pool, pend_tasklet, &p, &k));
            wake_job_t j = {&p, k};
            ch_pthread_t th;
            if (outside)
                ch_pthread_start(&th, wake_pthread, &j);
            CH_ASSERT_OK(by_free ? coexec_tasklet_free(&k)
                                 : coexec_tasklet_join(k));
            if (outside)
                ch_pthread_join(&th);
            CH_ASSERT_EQ(atomic_load(&p.polls), p.rounds + 1);
            CH_ASSERT_EQ(atomic_load(&p.early_polls), 0);
            CH_ASSERT_EQ(p.last_rank, 0);
            if (!by_free) {
                CH_ASSERT_EQ(ch_tasklet_state(k), COEXEC_UNIT_TERMINATED);
                CH_ASSERT_OK(coexec_tasklet_free(&k));
            }
            CH_ASSERT_EQ(k.p, NULL);
        }
    }
    ch_finalize();
}

/*
 * Join runs a unit in place only if it has not started. A tasklet that was
 * polled, returned PENDING and was woken has started: it is queued in its
 * home pool again, and a join waits for its own stream to poll it.
 */
static void t_join_started_not_in_place(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    int moved = 0, runs = (int)ch_iters(200, 50);
    for (int i = 0; i < runs; i++) {
        pend_t p;
        memset(&p, 0, sizeof p);
        p.rounds = 1;
        p.last_rank = -1;
        coexec_tasklet_t k;
        CH_ASSERT_OK_FATAL(coexec_tasklet_create(s.pool, pend_tasklet, &p, &k));
        CH_WAIT(atomic_load(&p.published) == 1 && ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
        atomic_fetch_add(&p.woken, 1);
        CH_ASSERT_OK(coexec_waker_wake(p.w));
        CH_ASSERT_OK(coexec_tasklet_join(k));
        CH_ASSERT_EQ(atomic_load(&p.polls), 2);
        moved += p.last_rank != s.rank;
        CH_ASSERT_OK(coexec_tasklet_free(&k));
    }
    CH_ASSERT_EQ(moved, 0);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* many pending tasklets woken by a crowd of threads */
typedef struct {
    coexec_waker_t w;
    atomic_int state; /* 0 running, 1 published, 2 woken, 3 done */
} many_t;

static coexec_poll_status_t many_tasklet(coexec_poll_t *cx, void *arg)
{
    many_t *m = arg;
    if (atomic_load(&m->state) == 2) {
        atomic_store(&m->state, 3);
        atomic_fetch_add(&ch_count, 1);
        return COEXEC_READY;
    }
    CH_CHECK_RC(coexec_poll_waker(cx, &m->w), COEXEC_OK);
    atomic_store(&m->state, 1);
    return COEXEC_PENDING;
}

typedef struct {
    many_t *m;
    long n;
    int id, nthreads;
} crowd_t;

static void *crowd_pthread(void *arg)
{
    crowd_t *c = arg;
    long left = 0;
    for (long i = c->id; i < c->n; i += c->nthreads)
        left++;
    while (left > 0) {
        for (long i = c->id; i < c->n; i += c->nthreads) {
            int one = 1;
            if (atomic_compare_exchange_strong(&c->m[i].state, &one, 2)) {
                CH_CHECK_RC(coexec_waker_wake(c->m[i].w), COEXEC_OK);
                left--;
            }
        }
        ch_relax();
    }
    return NULL;
}

static void t_pending_many(void)
{
    ch_init(3);
    long n = ch_iters(3000, 300);
    many_t *m = calloc((size_t)n, sizeof *m);
    atomic_store(&ch_count, 0);
    enum { NT = 3 };
    crowd_t c[NT];
    ch_pthread_t th[NT];
    for (int i = 0; i < NT; i++) {
        c[i] = (crowd_t){m, n, i, NT};
        ch_pthread_start(&th[i], crowd_pthread, &c[i]);
    }
    for (long i = 0; i < n; i++) {
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank((int)(i % 3), &xs));
        CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(xs, many_tasklet, &m[i], NULL));
    }
    for (int i = 0; i < NT; i++)
        ch_pthread_join(&th[i]);
    CH_WAIT(atomic_load(&ch_count) == n);
    CH_ASSERT_EQ(atomic_load(&ch_count), n);
    ch_finalize();
    free(m);
}

/* ======================================================================= */
/* errors                                                                   */
/* ======================================================================= */

static coexec_tasklet_t g_other;

static coexec_poll_status_t bad_calls_tasklet(coexec_poll_t *cx, void *arg)
{
    coexec_waker_t w;
    CH_CHECK_RC(coexec_poll_waker(NULL, &w), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_poll_waker(cx, NULL), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_tasklet_join(g_other), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_self_waker(&w), COEXEC_ECONTEXT);
    atomic_fetch_add(&ch_count, 1);
    return COEXEC_READY;
}

static void t_errors(void)
{
    ch_init(1);
    coexec_xstream_t x0;
    coexec_pool_t p0;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(x0, &p0));
    coexec_tasklet_t k = {0};
    CH_ASSERT_RC(coexec_tasklet_create(p0, NULL, NULL, &k), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_create_on(x0, NULL, NULL, &k), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_create_on((coexec_xstream_t){0}, ch_count_tasklet, NULL, &k), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_tasklet_free(NULL), COEXEC_EINVAL);

    atomic_store(&ch_count, 0);
    coexec_pool_t standalone;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &standalone));
    CH_ASSERT_OK(coexec_tasklet_create(standalone, ch_count_tasklet, NULL, &g_other));
    CH_ASSERT_OK(coexec_tasklet_create(p0, bad_calls_tasklet, NULL, &k));
    CH_ASSERT_RC(coexec_tasklet_get_state(k, NULL), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_EQ(atomic_load(&ch_count), 1);
    CH_ASSERT_OK(coexec_tasklet_free(&g_other));
    CH_ASSERT_EQ(atomic_load(&ch_count), 2);

    /* stale handles, also after the record was recycled */
    CH_ASSERT_OK(coexec_tasklet_create(p0, ch_count_tasklet, NULL, &k));
    coexec_tasklet_t old = k;
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    coexec_tasklet_t fresh[32];
    for (int round = 0; round < 2; round++) {
        coexec_unit_state_t st;
        coexec_tasklet_t copy = old;
        CH_ASSERT_RC(coexec_tasklet_join(old), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_tasklet_get_state(old, &st), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_tasklet_free(&copy), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_push(standalone, coexec_tasklet_unit(old)), COEXEC_EHANDLE);
        if (round == 0)
            for (int i = 0; i < 32; i++)
                CH_ASSERT_OK(coexec_tasklet_create(standalone, ch_count_tasklet, NULL, &fresh[i]));
    }
    size_t sz = 0;
    CH_ASSERT_OK(coexec_pool_get_size(standalone, &sz));
    CH_ASSERT_EQ(sz, 32);
    for (int i = 0; i < 32; i++)
        CH_ASSERT_OK(coexec_tasklet_free(&fresh[i]));
    coexec_tasklet_t nul = {0};
    coexec_unit_state_t st;
    CH_ASSERT_RC(coexec_tasklet_join(nul), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_tasklet_get_state(nul, &st), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_pool_free(&standalone));
    ch_finalize();
    /* after finalize */
    CH_ASSERT_RC(coexec_tasklet_join(old), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_tasklet_get_state(old, &st), COEXEC_ENOTINIT);
}

/* A unit seen TERMINATED through coexec_*_get_state has its writes seen
 * too: the state is stored with release, read with acquire. A poller
 * that sees the state before the finisher's join word reads plain
 * memory the unit wrote (the ThreadSanitizer build reports the race
 * without it). Tasklets and ULTs of two other streams, polled from the
 * main ULT. */
typedef struct {
    long value; /* written by the unit, read by the poller, plain */
} pub_t;

static coexec_poll_status_t pub_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    ((pub_t *)arg)->value = 4242;
    return COEXEC_READY;
}

static void pub_ult(void *arg)
{
    ((pub_t *)arg)->value = 4343;
}

static void t_state_publishes(void)
{
    ch_init(3);
    int rounds = (int)ch_iters(400, 40);
    for (int r = 0; r < rounds; r++) {
        pub_t a = {0}, b = {0};
        coexec_xstream_t xs;
        coexec_pool_t p;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1 + r % 2, &xs));
        CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(xs, &p));
        coexec_tasklet_t k;
        coexec_thread_t t;
        CH_ASSERT_OK_FATAL(coexec_tasklet_create(p, pub_tasklet, &a, &k));
        CH_ASSERT_OK_FATAL(coexec_thread_create(p, pub_ult, &b, NULL, &t));
        if (CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_TERMINATED))
            CH_ASSERT_EQ(a.value, 4242);
        if (CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_TERMINATED))
            CH_ASSERT_EQ(b.value, 4343);
        CH_ASSERT_OK(coexec_tasklet_free(&k));
        CH_ASSERT_OK(coexec_thread_free(&t));
    }
    ch_finalize();
}

/* A free that runs its tasklet in place while another thread joins the
 * same tasklet through a copy of the handle. One of the two is refused
 * with EBUSY: the joiner that registers while the tasklet runs is woken
 * by its finish and the unit is left to it, so the free is EBUSY and a
 * later free succeeds; or the joiner comes second (EBUSY), or after the
 * free (its join is OK, or EHANDLE once the descriptor went back).
 * Either way nothing hangs, and the unit is released exactly once
 * (ch_finalize's leak check). */
typedef struct {
    coexec_tasklet_t copy;
    atomic_int armed, joining;
    int jrc;
} race_t;

static coexec_poll_status_t race_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    race_t *r = arg;
    atomic_store(&r->armed, 1);
    /* Give the joiner a moment to register (either order is right). */
    while (!atomic_load(&r->joining))
        ;
    for (volatile int i = 0; i < 20000; i++)
        ;
    return COEXEC_READY;
}

static void *race_joiner(void *arg)
{
    race_t *r = arg;
    while (!atomic_load(&r->armed))
        ;
    atomic_store(&r->joining, 1);
    r->jrc = coexec_tasklet_join(r->copy);
    return NULL;
}

/* A round of the free: see above. */
static void free_raced(race_t *r, coexec_tasklet_t *k, int rc)
{
    if (rc == COEXEC_EBUSY) {
        CH_ASSERT_EQ(r->jrc, COEXEC_OK);
        /* The joiner leaves the unit done; until it has left, EBUSY. */
        CH_WAIT((rc = coexec_tasklet_free(k)) != COEXEC_EBUSY);
        CH_ASSERT_RC(rc, COEXEC_OK);
    } else {
        CH_ASSERT_RC(rc, COEXEC_OK);
        CU_ASSERT(r->jrc == COEXEC_OK || r->jrc == COEXEC_EHANDLE ||
                  r->jrc == COEXEC_EBUSY);
    }
}

/* The same race with a join in place of the free: the ULT's join runs the
 * tasklet while an external thread joins a copy. The two joins end OK or
 * EBUSY (one waiting as the other runs it), at least one OK; a join of
 * the finished tasklet is OK again, and its free succeeds once the
 * external joiner has left it. */
static void join_raced(race_t *r, coexec_tasklet_t *k, int rc)
{
    CU_ASSERT(rc == COEXEC_OK || rc == COEXEC_EBUSY);
    CU_ASSERT(r->jrc == COEXEC_OK || r->jrc == COEXEC_EBUSY);
    CU_ASSERT(rc == COEXEC_OK || r->jrc == COEXEC_OK);
    CH_ASSERT_EQ(ch_tasklet_state(*k), COEXEC_UNIT_TERMINATED);
    CH_WAIT((rc = coexec_tasklet_join(*k)) != COEXEC_EBUSY);
    CH_ASSERT_RC(rc, COEXEC_OK);
    CH_WAIT((rc = coexec_tasklet_free(k)) != COEXEC_EBUSY);
    CH_ASSERT_RC(rc, COEXEC_OK);
    CU_ASSERT_PTR_NULL(k->p);
}

/* Rounds of the race: the main ULT frees (join false) or joins its
 * tasklet while an external thread joins a copy of the handle. */
static void race_rounds(bool join)
{
    ch_init(1);
    coexec_pool_t p = ch_main_pool(0);
    int rounds = (int)ch_iters(200, 20);
    for (int i = 0; i < rounds; i++) {
        race_t r = {.jrc = -1};
        coexec_tasklet_t k;
        CH_ASSERT_OK_FATAL(coexec_tasklet_create(p, race_tasklet, &r, &k));
        r.copy = k;
        ch_pthread_t th;
        ch_pthread_start(&th, race_joiner, &r);
        int rc = join ? coexec_tasklet_join(k) : coexec_tasklet_free(&k);
        ch_pthread_join(&th);
        (join ? join_raced : free_raced)(&r, &k, rc);
    }
    ch_finalize();
}

static void t_free_races_join(void)
{
    race_rounds(false);
}

static void t_join_races_join(void)
{
    race_rounds(true);
}

/* ======================================================================= */

static const ch_test_t basic_tests[] = {
    {"create_join_free", t_create_join_free},
    {"detached", t_detached},
    {"join_runs_in_place", t_join_in_place},
    {"tasklet_from_tasklet_and_pthread", t_tasklet_from_tasklet},
    {"state_publishes", t_state_publishes},
    {"free_races_join", t_free_races_join},
    {"join_races_join", t_join_races_join},
    {NULL, NULL}};
static const ch_test_t pending_tests[] = {
    {"woken_from_pthread_ult_main", t_pending},
    {"join_pending_and_wake_inside", t_pending_join_and_inside},
    {"many_woken_by_crowd", t_pending_many},
    {"join_of_woken_tasklet_not_in_place", t_join_started_not_in_place},
    {"join_in_place_then_pending", t_join_in_place_pending},
    {NULL, NULL}};
static const ch_test_t errors_tests[] = {{"args_context_stale", t_errors},
                                         {NULL, NULL}};

static const ch_suite_t suites[] = {{"basic", basic_tests},
                                    {"pending", pending_tests},
                                    {"errors", errors_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
