/*
 * tests/thread/test_tasklet.c: tasklets: create/join/free, detached,
 * in-place run on join, tasklets creating tasklets, what a TERMINATED
 * state publishes, COEXEC_PENDING with a
 * stored waker and polling again after a wake from another thread, argument
 * errors; watched tasklets (coexec_tasklet_create_watched): detached, with
 * a handle that observes them while they live and is stale once they end.
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
/* watched tasklets (coexec_tasklet_create_watched)                         */
/* ======================================================================= */

/* What a watched tasklet saw of itself when it ran; runs is counted last,
 * so that whoever sees it sees the rest. */
typedef struct {
    atomic_int runs;
    int rank;
    int caller;
    uint64_t id;
} watch_probe_t;

static coexec_poll_status_t watch_probe_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    watch_probe_t *p = arg;
    p->caller = (int)coexec_self_caller();
    p->rank = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&p->rank), COEXEC_OK);
    CH_CHECK_RC(coexec_self_id(&p->id), COEXEC_OK);
    atomic_fetch_add(&p->runs, 1);
    return COEXEC_READY;
}

/* Every call a watch handle supports, on a handle whose tasklet has
 * ended: each says the handle is stale, whatever the call. */
static void expect_watch_stale(coexec_tasklet_t w, coexec_pool_t pool)
{
    coexec_unit_t u = coexec_tasklet_unit(w);
    coexec_unit_state_t st;
    uint64_t id;
    void *a;
    int v;
    CH_ASSERT_RC(coexec_tasklet_get_state(w, &st), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_get_id(u, &id), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_get_arg(u, &a), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_is_thread(u, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_get_last_rank(u, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_get_priority(u, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_set_priority(u, 2), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_pool_remove(pool, u), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_pool_push(pool, u), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_tasklet_join(w), COEXEC_EHANDLE);
    coexec_tasklet_t copy = w;
    CH_ASSERT_RC(coexec_tasklet_free(&copy), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_tasklet_revive(pool, ch_count_tasklet, NULL, &copy),
                 COEXEC_EHANDLE);
}

/* Joining and freeing a watch handle from an external thread: refused as
 * from a ULT (the tasklet is detached). */
static void watch_join_external(void *arg)
{
    coexec_tasklet_t w = *(coexec_tasklet_t *)arg;
    CH_CHECK_RC(coexec_tasklet_join(w), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_tasklet_free(&w), COEXEC_EINVAL);
    CH_CHECK(CH_SAME(w, *(coexec_tasklet_t *)arg));
}

/*
 * A watched tasklet is detached, and its handle observes it while it
 * lives. Queued in a pool no scheduler serves, it stays READY and its
 * unit answers the queries (id, argument, kind; no stream yet) and takes
 * a setting. A join, a wait, a timed join or a free through the handle is
 * COEXEC_EINVAL, from a ULT and from an external thread, and a revive is
 * COEXEC_ESTATE; none of them runs it (a join of a joinable tasklet that
 * has not started would run it in place) or changes the handle. Taken out
 * of its pool and pushed into a served one, it runs there exactly once,
 * as a tasklet, with the id the handle gave; then every call through the
 * handle says COEXEC_EHANDLE, also once its descriptor serves later
 * units, whose handles never match it; the pool it came from can be
 * freed.
 */
static void t_watched(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    coexec_pool_t idle;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &idle));
    watch_probe_t p = {.rank = -1};
    atomic_init(&p.runs, 0);
    coexec_tasklet_t w = {0};
    CH_ASSERT_OK_FATAL(coexec_tasklet_create_watched(idle, watch_probe_tasklet, &p, &w));
    CU_ASSERT_FATAL(!CH_IS_NULL(w));

    CH_ASSERT_EQ(ch_tasklet_state(w), COEXEC_UNIT_READY);
    size_t sz = 0;
    CH_ASSERT_OK(coexec_pool_get_size(idle, &sz));
    CH_ASSERT_EQ(sz, 1);
    coexec_unit_t u = coexec_tasklet_unit(w);
    uint64_t id = 0;
    void *a = NULL;
    int v = -7;
    CH_ASSERT_OK(coexec_unit_get_id(u, &id));
    CU_ASSERT(id != 0);
    CH_ASSERT_OK(coexec_unit_get_arg(u, &a));
    CU_ASSERT_PTR_EQUAL(a, &p);
    CH_ASSERT_OK(coexec_unit_is_thread(u, &v));
    CH_ASSERT_EQ(v, 0);
    CH_ASSERT_RC(coexec_unit_get_last_rank(u, &v), COEXEC_ESTATE);
    CH_ASSERT_EQ(v, -1);
    CH_ASSERT_OK(coexec_unit_set_priority(u, 5));
    CH_ASSERT_OK(coexec_unit_get_priority(u, &v));
    CH_ASSERT_EQ(v, 5);

    coexec_tasklet_t copy = w;
    CH_ASSERT_RC(coexec_tasklet_join(w), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_wait(w), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_join_timed(w, 1000000), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_free(&copy), COEXEC_EINVAL);
    CU_ASSERT(CH_SAME(copy, w));
    CH_ASSERT_RC(coexec_tasklet_revive(s.pool, ch_count_tasklet, NULL, &copy),
                 COEXEC_ESTATE);
    CU_ASSERT(CH_SAME(copy, w));
    ch_run_external(watch_join_external, &w);
    CH_ASSERT_EQ(atomic_load(&p.runs), 0);
    CH_ASSERT_EQ(ch_tasklet_state(w), COEXEC_UNIT_READY);
    CH_ASSERT_OK(coexec_pool_get_size(idle, &sz));
    CH_ASSERT_EQ(sz, 1);

    /* Removed, it is the caller's: READY, in no pool. */
    CH_ASSERT_OK(coexec_pool_remove(idle, u));
    CH_ASSERT_RC(coexec_pool_remove(idle, u), COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_pool_get_size(idle, &sz));
    CH_ASSERT_EQ(sz, 0);
    CH_ASSERT_EQ(ch_tasklet_state(w), COEXEC_UNIT_READY);
    CH_ASSERT_OK(coexec_pool_push(s.pool, u));
    CH_WAIT(atomic_load(&p.runs) == 1);
    /* It has returned; its descriptor goes back just after. */
    CH_WAIT(ch_tasklet_state(w) == COEXEC_EHANDLE);
    CH_ASSERT_EQ(p.rank, s.rank);
    CH_ASSERT_EQ(p.caller, COEXEC_CALLER_TASKLET);
    CH_ASSERT_EQ(p.id, id);
    expect_watch_stale(w, s.pool);
    ch_linger(5);
    CH_ASSERT_EQ(atomic_load(&p.runs), 1);

    /* One that ends on this stream leaves its descriptor to the units
     * this ULT creates next: none of their handles is the old one, which
     * stays stale while they live. */
    watch_probe_t q = {.rank = -1};
    atomic_init(&q.runs, 0);
    coexec_tasklet_t w2;
    CH_ASSERT_OK_FATAL(coexec_tasklet_create_watched(ch_main_pool(0), watch_probe_tasklet, &q, &w2));
    CH_WAIT(ch_tasklet_state(w2) == COEXEC_EHANDLE);
    CH_ASSERT_EQ(atomic_load(&q.runs), 1);
    CH_ASSERT_EQ(q.rank, 0);
    coexec_tasklet_t fresh[32];
    for (int i = 0; i < 32; i++) {
        CH_ASSERT_OK_FATAL(coexec_tasklet_create(idle, ch_count_tasklet, NULL, &fresh[i]));
        CU_ASSERT(!CH_SAME(fresh[i], w2));
        CH_ASSERT_EQ(ch_tasklet_state(fresh[i]), COEXEC_UNIT_READY);
    }
    expect_watch_stale(w2, s.pool);
    for (int i = 0; i < 32; i++)
        CH_ASSERT_OK(coexec_tasklet_free(&fresh[i]));
    CH_ASSERT_OK(coexec_pool_free(&idle));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/*
 * A user scheduler's loop that runs, besides its pool, the unit it is
 * handed (coexec_sched_run_unit), and keeps what that call returned.
 */
typedef struct {
    atomic_int req; /* 1: run `unit` */
    coexec_unit_t unit;
    atomic_int rc, done;
} hand_sched_t;

static int hs_init(coexec_sched_t s, void *arg, void **state)
{
    (void)s;
    *state = arg;
    return COEXEC_OK;
}

static void hs_run(coexec_sched_t sched, void *state)
{
    hand_sched_t *h = state;
    for (;;) {
        if (atomic_load(&h->req)) {
            atomic_store(&h->rc, coexec_sched_run_unit(sched, h->unit));
            atomic_store(&h->req, 0);
            atomic_fetch_add(&h->done, 1);
        }
        coexec_unit_t u = {0};
        CH_CHECK_RC(coexec_sched_pop(sched, 0, &u), COEXEC_OK);
        if (!CH_IS_NULL(u))
            CH_CHECK_RC(coexec_sched_run_unit(sched, u), COEXEC_OK);
        CH_CHECK_RC(coexec_sched_check_events(sched), COEXEC_OK);
        int stop = 0;
        CH_CHECK_RC(coexec_sched_has_to_stop(sched, &stop), COEXEC_OK);
        if (stop)
            return;
        if (CH_IS_NULL(u) && !atomic_load(&h->req))
            CH_CHECK_RC(coexec_sched_idle(sched), COEXEC_OK);
    }
}

static const coexec_sched_ops_t hs_ops = {
    .size = sizeof(coexec_sched_ops_t),
    .init = hs_init,
    .run = hs_run,
};

static coexec_poll_status_t noop_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    return COEXEC_READY;
}

/* Hands u to the loop of h (whose pool is pool) and returns what its
 * coexec_sched_run_unit said. */
static int hand_to_loop(hand_sched_t *h, coexec_pool_t pool, coexec_unit_t u)
{
    int before = atomic_load(&h->done);
    h->unit = u;
    atomic_store(&h->req, 1);
    /* A push wakes the loop if it idles. */
    CH_ASSERT_OK(coexec_tasklet_create(pool, noop_tasklet, NULL, NULL));
    CH_WAIT(atomic_load(&h->done) > before);
    return atomic_load(&h->rc);
}

/*
 * coexec_sched_run_unit through a watch handle: a user scheduler's loop
 * is handed the unit of a watched tasklet. Queued, it is refused
 * (COEXEC_ESTATE) and stays queued; taken out of its pool, it runs there
 * once, on the loop's stream; once ended, the same handle is refused
 * (COEXEC_EHANDLE).
 */
static void t_watched_sched_run(void)
{
    ch_init(1);
    hand_sched_t h = {0};
    coexec_pool_t hp, idle;
    coexec_sched_t hs;
    coexec_xstream_t hx;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &hp));
    CH_ASSERT_OK_FATAL(coexec_sched_create_user(&hs_ops, &hp, 1, NULL, &h, &hs));
    coexec_xstream_attr_t xa;
    CH_ASSERT_OK_FATAL(coexec_xstream_attr_init(&xa));
    xa.sched = hs;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&xa, &hx));
    int hrank = -1;
    CH_ASSERT_OK(coexec_xstream_get_rank(hx, &hrank));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &idle));

    watch_probe_t p = {.rank = -1};
    atomic_init(&p.runs, 0);
    coexec_tasklet_t w;
    CH_ASSERT_OK_FATAL(coexec_tasklet_create_watched(idle, watch_probe_tasklet, &p, &w));
    coexec_unit_t u = coexec_tasklet_unit(w);
    CH_ASSERT_RC(hand_to_loop(&h, hp, u), COEXEC_ESTATE);
    size_t sz = 0;
    CH_ASSERT_OK(coexec_pool_get_size(idle, &sz));
    CH_ASSERT_EQ(sz, 1);
    CH_ASSERT_EQ(atomic_load(&p.runs), 0);
    CH_ASSERT_OK(coexec_pool_remove(idle, u));
    CH_ASSERT_OK(hand_to_loop(&h, hp, u));
    CH_ASSERT_EQ(atomic_load(&p.runs), 1);
    CH_ASSERT_EQ(p.rank, hrank);
    CH_WAIT(ch_tasklet_state(w) == COEXEC_EHANDLE);
    CH_ASSERT_RC(hand_to_loop(&h, hp, u), COEXEC_EHANDLE);
    CH_ASSERT_EQ(atomic_load(&p.runs), 1);
    CH_ASSERT_EQ(ch_remote_failures(), 0);

    CH_ASSERT_OK(coexec_xstream_free(&hx));
    CH_ASSERT_OK(coexec_sched_free(&hs));
    CH_ASSERT_OK(coexec_pool_free(&hp));
    CH_ASSERT_OK(coexec_pool_free(&idle));
    ch_finalize();
}

/* The creation's errors, as coexec_tasklet_create's. */
static void watched_access_external(void *arg)
{
    coexec_pool_t sp = *(coexec_pool_t *)arg;
    coexec_tasklet_t w = {0};
    CH_CHECK_RC(coexec_tasklet_create_watched(sp, ch_count_tasklet, NULL, &w),
                COEXEC_EACCESS);
    CH_CHECK_RC(coexec_tasklet_create_watched(sp, ch_count_tasklet, NULL, NULL),
                COEXEC_EACCESS);
}

/*
 * A watched tasklet without a handle (watch NULL) runs once, like any
 * detached one. The creation's errors: fn NULL is COEXEC_EINVAL, a null or
 * freed pool COEXEC_EHANDLE, a pool whose single producer is another
 * thread COEXEC_EACCESS (where the library checks access modes), and
 * after finalize COEXEC_ENOTINIT; none of them queues anything.
 */
static void t_watched_errors(void)
{
    ch_init(2);
    atomic_store(&ch_count, 0);
    CH_ASSERT_OK(coexec_tasklet_create_watched(ch_main_pool(0), ch_count_tasklet, NULL, NULL));
    CH_ASSERT_OK(coexec_tasklet_create_watched(ch_main_pool(1), ch_count_tasklet, NULL, NULL));
    CH_WAIT(atomic_load(&ch_count) == 2);
    CH_ASSERT_EQ(atomic_load(&ch_count), 2);

    coexec_pool_t mp = ch_main_pool(0), gone, nul = {0};
    coexec_tasklet_t w = {0};
    CH_ASSERT_RC(coexec_tasklet_create_watched(mp, NULL, NULL, &w), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_create_watched(mp, NULL, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_create_watched(nul, ch_count_tasklet, NULL, &w),
                 COEXEC_EHANDLE);
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &gone));
    coexec_pool_t stale = gone;
    CH_ASSERT_OK(coexec_pool_free(&gone));
    CH_ASSERT_RC(coexec_tasklet_create_watched(stale, ch_count_tasklet, NULL, &w),
                 COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_tasklet_create_watched(stale, ch_count_tasklet, NULL, NULL),
                 COEXEC_EHANDLE);
    size_t sz = 7;
    CH_ASSERT_OK(coexec_pool_get_size(mp, &sz));
    CH_ASSERT_EQ(sz, 0);

    if (CH_HAVE_CHECKS) {
        /* The main ULT becomes the single producer of sp with a first
         * watched tasklet; an external thread is refused. The first one
         * is then moved to a served pool, where it runs. */
        coexec_pool_t sp;
        CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_SPSC, &sp));
        CH_ASSERT_OK(coexec_tasklet_create_watched(sp, ch_count_tasklet, NULL, &w));
        ch_run_external(watched_access_external, &sp);
        CH_ASSERT_OK(coexec_pool_get_size(sp, &sz));
        CH_ASSERT_EQ(sz, 1);
        CH_ASSERT_OK(coexec_pool_remove(sp, coexec_tasklet_unit(w)));
        CH_ASSERT_OK(coexec_pool_push(ch_main_pool(1), coexec_tasklet_unit(w)));
        CH_WAIT(atomic_load(&ch_count) == 3);
        CH_ASSERT_OK(coexec_pool_free(&sp));
    }
    ch_linger(2);
    CH_ASSERT_EQ(atomic_load(&ch_count), CH_HAVE_CHECKS ? 3 : 2);
    ch_finalize();
    CH_ASSERT_RC(coexec_tasklet_create_watched(mp, ch_count_tasklet, NULL, &w),
                 COEXEC_ENOTINIT);
}

/* One of the many watched tasklets: its run count and the stream it ran
 * on; w is its handle, or null (none asked). A tasklet with a handle
 * finds it written when it runs, and sees itself through it: RUNNING,
 * with its own id. */
typedef struct {
    atomic_int hits;
    atomic_int rank;
    coexec_tasklet_t w;
} many_watch_t;

static atomic_long mw_done;

static coexec_poll_status_t many_watch_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    many_watch_t *m = arg;
    int r = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
    if (!CH_IS_NULL(m->w)) {
        uint64_t mine = 0, seen = 1;
        CH_CHECK_RC(coexec_self_id(&mine), COEXEC_OK);
        CH_CHECK_RC(coexec_unit_get_id(coexec_tasklet_unit(m->w), &seen),
                    COEXEC_OK);
        CH_CHECK_EQ(seen, mine);
        CH_CHECK_EQ(ch_tasklet_state(m->w), COEXEC_UNIT_RUNNING);
    }
    atomic_store(&m->rank, r);
    atomic_fetch_add(&m->hits, 1);
    atomic_fetch_add(&mw_done, 1);
    return COEXEC_READY;
}

typedef struct {
    many_watch_t *m;
    long n;
    int id, nthreads, nstreams;
} mw_creator_t;

/* Creates the tasklets i = id, id + nthreads, ... into the main pools of
 * the streams in turn; the even ones with a handle. */
static void mw_create(mw_creator_t *c)
{
    for (long i = c->id; i < c->n; i += c->nthreads) {
        coexec_pool_t p = ch_main_pool((int)(i % c->nstreams));
        CH_CHECK_RC(coexec_tasklet_create_watched(p, many_watch_tasklet, &c->m[i],
                                                  i % 2 ? NULL : &c->m[i].w),
                    COEXEC_OK);
    }
}

static void *mw_create_pthread(void *arg)
{
    mw_create(arg);
    return NULL;
}

/* The order of what a watch handle may tell: READY, RUNNING, TERMINATED,
 * then stale for good. */
static int watch_step(coexec_tasklet_t w)
{
    coexec_unit_state_t st;
    int rc = coexec_tasklet_get_state(w, &st);
    if (rc == COEXEC_EHANDLE)
        return 3;
    if (rc != COEXEC_OK)
        return 100 + -rc;
    switch (st) {
    case COEXEC_UNIT_READY:
        return 0;
    case COEXEC_UNIT_RUNNING:
        return 1;
    case COEXEC_UNIT_TERMINATED:
        return 2;
    default:
        return 99; /* BLOCKED: a watched tasklet that never pends */
    }
}

/*
 * Many watched tasklets, with and without a handle, created by the main
 * ULT and two external threads at once into the main pools of 4 streams
 * (more streams than CPUs). Each runs exactly once, on one of them; one
 * with a handle finds it already written when it runs (the handle is
 * written before the tasklet is queued) and sees itself through it.
 * Meanwhile the main ULT reads the state of every handle again and again:
 * each read is a state or COEXEC_EHANDLE, in the order READY, RUNNING,
 * TERMINATED, stale, never back; at the end every handle is stale.
 */
static void t_watched_many(void)
{
    enum { NS = 4, NT = 3 };
    ch_init(NS);
    long n = ch_iters(20000, 400);
    many_watch_t *m = calloc((size_t)n, sizeof *m);
    unsigned char *seen = calloc((size_t)n, 1);
    CU_ASSERT_FATAL(m != NULL && seen != NULL);
    atomic_store(&mw_done, 0);
    mw_creator_t c[NT];
    ch_pthread_t th[NT - 1];
    for (int i = 0; i < NT; i++)
        c[i] = (mw_creator_t){m, n, i, NT, NS};
    for (int i = 1; i < NT; i++)
        ch_pthread_start(&th[i - 1], mw_create_pthread, &c[i]);
    mw_create(&c[0]);
    for (int i = 1; i < NT; i++)
        ch_pthread_join(&th[i - 1]);
    long backwards = 0, odd = 0;
    double t0 = ch_now();
    for (;;) {
        bool all = atomic_load(&mw_done) == n;
        for (long i = 0; i < n; i += 2) {
            int s = watch_step(m[i].w);
            if (s > 3)
                odd++;
            else if (s < seen[i])
                backwards++;
            else
                seen[i] = (unsigned char)s;
        }
        if (all || ch_now() - t0 > CH_WAIT_LIMIT_S)
            break;
        ch_relax();
    }
    CH_ASSERT_EQ(atomic_load(&mw_done), n);
    CH_ASSERT_EQ(odd, 0);
    CH_ASSERT_EQ(backwards, 0);
    long bad_hits = 0, bad_rank = 0;
    for (long i = 0; i < n; i++) {
        bad_hits += atomic_load(&m[i].hits) != 1;
        int r = atomic_load(&m[i].rank);
        bad_rank += r < 0 || r >= NS;
    }
    CH_ASSERT_EQ(bad_hits, 0);
    CH_ASSERT_EQ(bad_rank, 0);
    for (long i = 0; i < n; i += 2)
        CH_WAIT(watch_step(m[i].w) == 3);
    ch_linger(5);
    CH_ASSERT_EQ(atomic_load(&mw_done), n);
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    ch_finalize();
    free(seen);
    free(m);
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
    {"watched", t_watched},
    {"watched_sched_run_unit", t_watched_sched_run},
    {"watched_many", t_watched_many},
    {NULL, NULL}};
static const ch_test_t pending_tests[] = {
    {"woken_from_pthread_ult_main", t_pending},
    {"join_pending_and_wake_inside", t_pending_join_and_inside},
    {"many_woken_by_crowd", t_pending_many},
    {"join_of_woken_tasklet_not_in_place", t_join_started_not_in_place},
    {"join_in_place_then_pending", t_join_in_place_pending},
    {NULL, NULL}};
static const ch_test_t errors_tests[] = {{"args_context_stale", t_errors},
                                         {"watched_args", t_watched_errors},
                                         {NULL, NULL}};

static const ch_suite_t suites[] = {{"basic", basic_tests},
                                    {"pending", pending_tests},
                                    {"errors", errors_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
