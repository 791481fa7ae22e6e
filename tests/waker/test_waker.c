/*
 * tests/waker/test_waker.c: wakers and pollable tasklets, and the main of
 * the test_waker binary (its eventual, future and channel suites are in
 * test_eventual.c and test_channel.c).
 *
 *   waker     coexec_self_waker + coexec_park + coexec_waker_wake from the
 *             main ULT, a ULT on another stream, a tasklet and an external
 *             thread; a wake before the park is recorded; several wakes
 *             count as one; stale wakers (finished, freed, recycled) do
 *             nothing; wrong callers and bad arguments
 *   pollable  tasklets that return COEXEC_PENDING after coexec_poll_waker
 *             and are polled again once woken, from everywhere; polls are
 *             counted
 *   coalesce  many wakes sent while the woken unit waits in its pool are
 *             one wake: its next park (PENDING) waits for a new one
 *
 * A park never returns before the wake that releases it was sent: every
 * test counts the wakes sent and checks it at each return. Timing never
 * decides a verdict.
 */
#define _GNU_SOURCE
#include "wk.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/* ======================================================================= */
/* waker                                                                    */
/* ======================================================================= */

typedef struct {
    coexec_waker_t w;      /* published before phase 1 */
    atomic_int phase;      /* 2i+1: about to park in round i; 2i+2: back */
    atomic_int wakes_sent; /* incremented by the waker before each wake */
    atomic_int early;      /* parks that returned before their wake */
    int rounds;
    int rank_after;
    coexec_thread_t t;
} parker_t;

static void parker_ult(void *arg)
{
    parker_t *p = arg;
    CH_CHECK_RC(coexec_self_waker(&p->w), COEXEC_OK);
    for (int i = 0; i < p->rounds; i++) {
        atomic_store(&p->phase, 2 * i + 1);
        CH_CHECK_RC(coexec_park(), COEXEC_OK);
        if (atomic_load(&p->wakes_sent) < i + 1)
            atomic_fetch_add(&p->early, 1);
        atomic_store(&p->phase, 2 * i + 2);
    }
    p->rank_after = ch_self_rank();
}

/* Waits for round i to be asked for; odd rounds also wait until the parker
 * is really parked, even rounds wake it while it may still be running. */
static int await_round(parker_t *p, int i, int can_check_state)
{
    if (!CH_WAIT(atomic_load(&p->phase) == 2 * i + 1))
        return 0;
    if (can_check_state && (i % 2))
        CH_WAIT(ch_thread_state(p->t) == COEXEC_UNIT_BLOCKED);
    return 1;
}

static void send_wake(parker_t *p)
{
    atomic_fetch_add(&p->wakes_sent, 1);
    CH_CHECK_RC(coexec_waker_wake(p->w), COEXEC_OK);
}

static void wake_all_rounds(parker_t *p)
{
    for (int i = 0; i < p->rounds; i++) {
        if (!await_round(p, i, 1))
            return;
        send_wake(p);
        if (!CH_WAIT(atomic_load(&p->phase) >= 2 * i + 2))
            return;
    }
}

static void *wake_rounds_pthread(void *arg)
{
    wake_all_rounds(arg);
    return NULL;
}

static void wake_rounds_ult(void *arg) { wake_all_rounds(arg); }

static void wake_once_fn(void *arg) { send_wake(arg); }

static void t_park_wake_everywhere(void)
{
    /* 4 streams: the primary, rank 1 of init, and two pinned-work streams:
     * the parker lives on s1, the wakers elsewhere */
    ch_init(2);
    ch_stream_t s1, s2;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s1, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s2, COEXEC_SCHED_BASIC));
    int rounds = (int)ch_iters(60, 6);
    static const char *const how_name[] = {"main ULT", "ULT on another stream",
                                           "external thread", "tasklet"};
    for (int how = 0; how < 4; how++) {
        parker_t p;
        memset(&p, 0, sizeof p);
        p.rounds = rounds;
        p.rank_after = -1;
        CH_ASSERT_OK_FATAL(coexec_thread_create(s1.pool, parker_ult, &p, NULL, &p.t));
        if (how == 0) {
            wake_all_rounds(&p);
        } else if (how == 1) {
            CH_ASSERT_OK(ch_run_ult_in(s2.pool, wake_rounds_ult, &p));
        } else if (how == 2) {
            ch_pthread_t th;
            ch_pthread_start(&th, wake_rounds_pthread, &p);
            ch_pthread_join(&th);
        } else {
            for (int i = 0; i < rounds; i++) {
                if (!await_round(&p, i, 1))
                    break;
                CH_ASSERT_OK(ch_run_tasklet_in(s2.pool, wake_once_fn, &p));
                CH_WAIT(atomic_load(&p.phase) >= 2 * i + 2);
            }
        }
        CH_ASSERT_OK(coexec_thread_join(p.t));
        if (atomic_load(&p.phase) != 2 * rounds)
            fprintf(stderr, "    waker: %s\n", how_name[how]);
        CH_ASSERT_EQ(atomic_load(&p.phase), 2 * rounds);
        CH_ASSERT_EQ(atomic_load(&p.wakes_sent), rounds);
        CH_ASSERT_EQ(atomic_load(&p.early), 0);
        CH_ASSERT_EQ(p.rank_after, s1.rank); /* woken into its home pool */
        CH_ASSERT_OK(coexec_thread_free(&p.t));
    }
    CH_ASSERT_OK(ch_stream_free(&s1));
    CH_ASSERT_OK(ch_stream_free(&s2));
    ch_finalize();
}

/* The main ULT parks and is woken by a ULT of another stream. */
typedef struct {
    coexec_waker_t w;
    coexec_thread_t main_t;
    atomic_int wakes_sent;
    atomic_int asked;
} main_park_t;

static void wake_main_ult(void *arg)
{
    main_park_t *m = arg;
    CH_WAIT(atomic_load(&m->asked) == 1);
    CH_WAIT(ch_thread_state(m->main_t) == COEXEC_UNIT_BLOCKED);
    atomic_fetch_add(&m->wakes_sent, 1);
    CH_CHECK_RC(coexec_waker_wake(m->w), COEXEC_OK);
}

static void t_main_ult_parks(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    main_park_t m;
    memset(&m, 0, sizeof m);
    CH_ASSERT_OK(coexec_self_waker(&m.w));
    CH_ASSERT_OK(coexec_thread_self(&m.main_t));
    int rank0 = ch_self_rank();
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(s.pool, wake_main_ult, &m, NULL, &t));
    atomic_store(&m.asked, 1);
    CH_ASSERT_OK(coexec_park());
    CH_ASSERT_EQ(atomic_load(&m.wakes_sent), 1);
    CH_ASSERT_EQ(ch_self_rank(), rank0);
    CH_ASSERT_OK(coexec_thread_free(&t));
    /* a wake of the running main ULT is recorded: park returns at once */
    CH_ASSERT_OK(coexec_waker_wake(m.w));
    CH_ASSERT_OK(coexec_park());
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* A wake that arrives before the park is recorded; many wakes sent while
 * the unit runs count as one. */
typedef struct {
    coexec_waker_t w;
    atomic_int phase;
    coexec_thread_t t;
} early_t;

static void early_ult(void *arg)
{
    early_t *e = arg;
    CH_CHECK_RC(coexec_self_waker(&e->w), COEXEC_OK);
    atomic_store(&e->phase, 1);
    while (atomic_load(&e->phase) != 2)
        sched_yield(); /* running (not parked) while the wakes arrive */
    CH_CHECK_RC(coexec_park(), COEXEC_OK); /* recorded: returns at once */
    atomic_store(&e->phase, 3);
    CH_CHECK_RC(coexec_park(), COEXEC_OK); /* all those wakes were one */
    atomic_store(&e->phase, 4);
}

typedef struct {
    coexec_waker_t w;
    int n;
} multi_wake_t;

static void *multi_wake_pthread(void *arg)
{
    multi_wake_t *m = arg;
    for (int i = 0; i < m->n; i++)
        CH_CHECK_RC(coexec_waker_wake(m->w), COEXEC_OK);
    return NULL;
}

static void t_wake_before_park_and_twice(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    for (int variant = 0; variant < 2; variant++) {
        early_t e;
        memset(&e, 0, sizeof e);
        CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, early_ult, &e, NULL, &e.t));
        CH_WAIT(atomic_load(&e.phase) == 1);
        if (variant == 0) {
            /* one wake, then a second one: twice is once */
            CH_ASSERT_OK(coexec_waker_wake(e.w));
            CH_ASSERT_OK(coexec_waker_wake(e.w));
        } else {
            /* many, concurrently, from the main ULT and 3 threads */
            multi_wake_t m = {e.w, 200};
            ch_pthread_t th[3];
            for (int i = 0; i < 3; i++)
                ch_pthread_start(&th[i], multi_wake_pthread, &m);
            for (int i = 0; i < 200; i++)
                CH_ASSERT_OK(coexec_waker_wake(e.w));
            for (int i = 0; i < 3; i++)
                ch_pthread_join(&th[i]);
        }
        atomic_store(&e.phase, 2);
        CH_WAIT(atomic_load(&e.phase) >= 3);
        /* now it parks for real: wait until it is parked (or, wrongly,
         * finished) */
        CH_WAIT(ch_thread_state(e.t) == COEXEC_UNIT_BLOCKED ||
                ch_thread_state(e.t) == COEXEC_UNIT_TERMINATED);
        wk_relax_n(200);
        CH_ASSERT_EQ(atomic_load(&e.phase), 3);
        CH_ASSERT_EQ(ch_thread_state(e.t), COEXEC_UNIT_BLOCKED);
        CH_ASSERT_OK(coexec_waker_wake(e.w));
        CH_ASSERT_OK(coexec_thread_join(e.t));
        CH_ASSERT_EQ(atomic_load(&e.phase), 4);
        CH_ASSERT_OK(coexec_thread_free(&e.t));
    }
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/*
 * Wakes that arrive while the woken unit is still queued (made runnable by
 * the first one, not yet running) leave one recorded wake, like a permit:
 * its next park returns at once, the one after that blocks. A "gate" ULT
 * holds the parker's stream while the wakes are sent.
 */

static void permit_ult(void *arg)
{
    early_t *e = arg;
    CH_CHECK_RC(coexec_self_waker(&e->w), COEXEC_OK);
    atomic_store(&e->phase, 1);
    while (atomic_load(&e->phase) != 2)
        sched_yield();
    CH_CHECK_RC(coexec_park(), COEXEC_OK); /* blocks until the first wake */
    atomic_store(&e->phase, 3);
    CH_CHECK_RC(coexec_park(), COEXEC_OK); /* the queued wakes' permit */
    atomic_store(&e->phase, 4);
    CH_CHECK_RC(coexec_park(), COEXEC_OK); /* nothing left: blocks */
    atomic_store(&e->phase, 5);
}

static void t_wakes_while_queued(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    early_t e;
    memset(&e, 0, sizeof e);
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, permit_ult, &e, NULL, &e.t));
    CH_WAIT(atomic_load(&e.phase) == 1);
    atomic_store(&e.phase, 2);
    CH_WAIT(ch_thread_state(e.t) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_EQ(atomic_load(&e.phase), 2);
    ch_gate_t g;
    ch_gate_init(&g);
    coexec_thread_t gt;
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, ch_gate_ult, &g, NULL, &gt));
    CH_WAIT(atomic_load(&g.running));
    CH_ASSERT_OK(coexec_waker_wake(e.w)); /* makes it ready */
    CH_ASSERT_EQ(ch_thread_state(e.t), COEXEC_UNIT_READY);
    multi_wake_t m = {e.w, 100};
    ch_pthread_t th;
    ch_pthread_start(&th, multi_wake_pthread, &m);
    for (int i = 0; i < 100; i++)
        CH_ASSERT_OK(coexec_waker_wake(e.w)); /* while it is queued */
    ch_pthread_join(&th);
    CH_ASSERT_EQ(ch_thread_state(e.t), COEXEC_UNIT_READY);
    CH_ASSERT_EQ(atomic_load(&e.phase), 2);
    atomic_store(&g.open, 1);
    CH_ASSERT_OK(coexec_thread_free(&gt));
    CH_WAIT(atomic_load(&e.phase) >= 4);
    CH_WAIT(ch_thread_state(e.t) == COEXEC_UNIT_BLOCKED ||
            ch_thread_state(e.t) == COEXEC_UNIT_TERMINATED);
    wk_relax_n(200);
    CH_ASSERT_EQ(atomic_load(&e.phase), 4); /* one permit, not 201 */
    CH_ASSERT_OK(coexec_waker_wake(e.w));
    CH_ASSERT_OK(coexec_thread_join(e.t));
    CH_ASSERT_EQ(atomic_load(&e.phase), 5);
    CH_ASSERT_OK(coexec_thread_free(&e.t));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* Stale wakers. */
typedef struct {
    coexec_waker_t w;
    atomic_int phase; /* 1: parked or about to; 2: returned */
} once_t;

static void park_once_ult(void *arg)
{
    once_t *o = arg;
    CH_CHECK_RC(coexec_self_waker(&o->w), COEXEC_OK);
    atomic_store(&o->phase, 1);
    CH_CHECK_RC(coexec_park(), COEXEC_OK);
    atomic_store(&o->phase, 2);
}

static void no_park_ult(void *arg)
{
    once_t *o = arg;
    CH_CHECK_RC(coexec_self_waker(&o->w), COEXEC_OK);
    atomic_store(&o->phase, 2);
}

typedef struct {
    coexec_waker_t stale;
    int n;
} stale_job_t;

static void stale_wake_fn(void *arg)
{
    stale_job_t *j = arg;
    for (int i = 0; i < j->n; i++)
        CH_CHECK_RC(coexec_waker_wake(j->stale), COEXEC_OK);
}

static void t_stale_waker(void)
{
    ch_init(2);
    ch_stream_t s, s2;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s2, COEXEC_SCHED_BASIC_WAIT));
    enum { M = 48 };
    long reused = 0;
    int gens = (int)ch_iters(10, 3);
    for (int gen = 0; gen < gens; gen++) {
        /* a unit that takes its waker and finishes without parking */
        once_t a;
        memset(&a, 0, sizeof a);
        coexec_thread_t at;
        CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, no_park_ult, &a, NULL, &at));
        CH_WAIT(ch_thread_state(at) == COEXEC_UNIT_TERMINATED);
        /* finished, not freed yet: a no-op */
        CH_ASSERT_OK(coexec_waker_wake(a.w));
        CH_ASSERT_EQ(ch_thread_state(at), COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_thread_join(at));
        CH_ASSERT_OK(coexec_thread_free(&at));
        coexec_waker_t stale = a.w;
        CH_ASSERT_OK(coexec_waker_wake(stale)); /* freed: a no-op */

        /* new units recycle descriptors; they park */
        once_t *o = calloc(M, sizeof *o);
        coexec_thread_t *t = calloc(M, sizeof *t);
        for (int i = 0; i < M; i++) {
            CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, park_once_ult, &o[i], NULL, &t[i]));
            reused += t[i].p == (struct coexec_unit_rec *)stale.p;
        }
        for (int i = 0; i < M; i++)
            CH_WAIT(atomic_load(&o[i].phase) == 1 &&
                    ch_thread_state(t[i]) == COEXEC_UNIT_BLOCKED);
        /* the stale waker, from here, another stream's ULT, a tasklet and
         * an external thread */
        stale_job_t j = {stale, 50};
        stale_wake_fn(&j);
        CH_ASSERT_OK(ch_run_ult_in(s2.pool, stale_wake_fn, &j));
        CH_ASSERT_OK(ch_run_tasklet_in(s2.pool, stale_wake_fn, &j));
        ch_pthread_t th;
        ch_pthread_run(&th, stale_wake_fn, &j);
        ch_pthread_join(&th);
        wk_relax_n(100);
        int woken = 0;
        for (int i = 0; i < M; i++)
            woken += atomic_load(&o[i].phase) != 1 ||
                     ch_thread_state(t[i]) != COEXEC_UNIT_BLOCKED;
        CH_ASSERT_EQ(woken, 0);
        /* their own wakers do wake them */
        for (int i = 0; i < M; i++)
            CH_ASSERT_OK(coexec_waker_wake(o[i].w));
        for (int i = 0; i < M; i++) {
            CH_ASSERT_OK(coexec_thread_free(&t[i]));
            CH_ASSERT_EQ(atomic_load(&o[i].phase), 2);
        }
        /* the parkers' wakers are stale now, too */
        for (int i = 0; i < M; i++)
            CH_ASSERT_OK(coexec_waker_wake(o[i].w));
        free(o);
        free(t);
    }
    printf("[stale record reused by %ld of %d new units] ", reused, gens * M);
    CH_ASSERT_OK(ch_stream_free(&s));
    CH_ASSERT_OK(ch_stream_free(&s2));
    ch_finalize();
}

/* Wrong callers and bad arguments. */
static atomic_int g_ctx_done;

static coexec_poll_status_t ctx_tasklet(coexec_poll_t *cx, void *arg)
{
    coexec_waker_t w;
    CH_CHECK_RC(coexec_self_waker(&w), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_park(), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_poll_waker(NULL, &w), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_poll_waker(cx, NULL), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_waker_wake((coexec_waker_t){0}), COEXEC_EINVAL);
    /* its own poll waker, woken while it runs, and READY: harmless */
    CH_CHECK_RC(coexec_poll_waker(cx, &w), COEXEC_OK);
    CH_CHECK(w.p != NULL);
    CH_CHECK_RC(coexec_waker_wake(w), COEXEC_OK);
    atomic_fetch_add(&g_ctx_done, 1);
    return COEXEC_READY;
}

static void *ctx_pthread(void *arg)
{
    coexec_waker_t w;
    CH_CHECK_RC(coexec_self_waker(&w), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_park(), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_waker_wake((coexec_waker_t){0}), COEXEC_EINVAL);
    atomic_fetch_add(&g_ctx_done, 1);
    return NULL;
}

static void t_waker_errors(void)
{
    ch_init(2);
    atomic_store(&g_ctx_done, 0);
    CH_ASSERT_RC(coexec_waker_wake((coexec_waker_t){0}), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_self_waker(NULL), COEXEC_EINVAL);
    coexec_waker_t w;
    memset(&w, 0, sizeof w);
    CH_ASSERT_OK(coexec_self_waker(&w));
    CU_ASSERT(w.p != NULL);
    /* two wakers of one unit are equal */
    coexec_waker_t w2;
    CH_ASSERT_OK(coexec_self_waker(&w2));
    CU_ASSERT(CH_SAME(w, w2));
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create_on(ch_xstream(1), ctx_tasklet, NULL, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    ch_pthread_t th;
    ch_pthread_start(&th, ctx_pthread, NULL);
    ch_pthread_join(&th);
    CH_ASSERT_EQ(atomic_load(&g_ctx_done), 2);
    ch_finalize();
    /* after finalize */
    CH_ASSERT_RC(coexec_waker_wake(w), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_self_waker(&w2), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_park(), COEXEC_ENOTINIT);
    /* a waker from an earlier init is stale in the next one */
    ch_init(1);
    CH_ASSERT_OK(coexec_waker_wake(w));
    CH_ASSERT_OK(coexec_self_waker(&w2));
    CH_ASSERT_OK(coexec_waker_wake(w2));
    CH_ASSERT_OK(coexec_park()); /* the recorded wake, not the stale one */
    ch_finalize();
}

/* ======================================================================= */
/* pollable                                                                 */
/* ======================================================================= */

typedef struct {
    coexec_waker_t w;
    atomic_int published; /* times w was published */
    atomic_int woken;     /* wakes sent */
    atomic_int polls;
    atomic_int early_polls; /* poll n came before wake n */
    int rounds;
    int self_wake;  /* wakes its own waker before returning PENDING */
    int pend_again; /* the last round returns PENDING without a new waker */
    atomic_int last_rank;
    coexec_tasklet_t k;
} pend_t;

static coexec_poll_status_t pend_tasklet(coexec_poll_t *cx, void *arg)
{
    pend_t *p = arg;
    int n = atomic_fetch_add(&p->polls, 1);
    atomic_store(&p->last_rank, ch_self_rank());
    CH_CHECK(coexec_self_caller() == COEXEC_CALLER_TASKLET);
    if (n > 0 && atomic_load(&p->woken) < n)
        atomic_fetch_add(&p->early_polls, 1);
    if (n >= p->rounds)
        return COEXEC_READY;
    coexec_waker_t w;
    CH_CHECK_RC(coexec_poll_waker(cx, &w), COEXEC_OK);
    if (p->self_wake) {
        atomic_fetch_add(&p->woken, 1);
        CH_CHECK_RC(coexec_waker_wake(w), COEXEC_OK);
    } else {
        p->w = w;
        atomic_fetch_add(&p->published, 1);
    }
    return COEXEC_PENDING;
}

/* Round i: waits until the waker is published for the (i+1)-th time, and
 * on odd rounds until the tasklet is parked, then wakes it. */
static int pend_await(pend_t *p, int i, int check_state)
{
    if (!CH_WAIT(atomic_load(&p->published) == i + 1))
        return 0;
    if (check_state && (i % 2))
        CH_WAIT(ch_tasklet_state(p->k) == COEXEC_UNIT_BLOCKED);
    return 1;
}

static void pend_wake(pend_t *p)
{
    atomic_fetch_add(&p->woken, 1);
    CH_CHECK_RC(coexec_waker_wake(p->w), COEXEC_OK);
}

static void pend_wake_rounds(pend_t *p)
{
    for (int i = 0; i < p->rounds; i++) {
        if (!pend_await(p, i, 1))
            return;
        pend_wake(p);
    }
}

static void *pend_wake_pthread(void *arg)
{
    pend_wake_rounds(arg);
    return NULL;
}

static void pend_wake_ult(void *arg) { pend_wake_rounds(arg); }

static void pend_wake_once_fn(void *arg) { pend_wake(arg); }

static void t_pending_woken_everywhere(void)
{
    ch_init(2);
    ch_stream_t s1, s2;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s1, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s2, COEXEC_SCHED_BASIC));
    int rounds = (int)ch_iters(50, 5);
    for (int how = 0; how < 4; how++) {
        pend_t p;
        memset(&p, 0, sizeof p);
        p.rounds = rounds;
        atomic_init(&p.last_rank, -1);
        CH_ASSERT_OK_FATAL(coexec_tasklet_create(s1.pool, pend_tasklet, &p, &p.k));
        if (how == 0) {
            pend_wake_rounds(&p); /* the main ULT */
        } else if (how == 1) {
            CH_ASSERT_OK(ch_run_ult_in(s2.pool, pend_wake_ult, &p));
        } else if (how == 2) {
            ch_pthread_t th;
            ch_pthread_start(&th, pend_wake_pthread, &p);
            ch_pthread_join(&th);
        } else {
            for (int i = 0; i < rounds; i++) {
                if (!pend_await(&p, i, 1))
                    break;
                CH_ASSERT_OK(ch_run_tasklet_in(s2.pool, pend_wake_once_fn, &p));
            }
        }
        CH_WAIT(ch_tasklet_state(p.k) == COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_tasklet_join(p.k));
        CH_ASSERT_EQ(atomic_load(&p.polls), rounds + 1);
        CH_ASSERT_EQ(atomic_load(&p.published), rounds);
        CH_ASSERT_EQ(atomic_load(&p.woken), rounds);
        CH_ASSERT_EQ(atomic_load(&p.early_polls), 0);
        CH_ASSERT_EQ(atomic_load(&p.last_rank), s1.rank);
        CH_ASSERT_OK(coexec_tasklet_free(&p.k));
    }
    CH_ASSERT_OK(ch_stream_free(&s1));
    CH_ASSERT_OK(ch_stream_free(&s2));
    ch_finalize();
}

static void t_pending_self_wake(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    /* a wake sent during the poll, before PENDING is returned, is not
     * lost: the tasklet is polled again */
    pend_t p;
    memset(&p, 0, sizeof p);
    p.rounds = (int)ch_iters(100, 10);
    p.self_wake = 1;
    CH_ASSERT_OK_FATAL(coexec_tasklet_create(s.pool, pend_tasklet, &p, &p.k));
    CH_ASSERT_OK(coexec_tasklet_join(p.k));
    CH_ASSERT_EQ(atomic_load(&p.polls), p.rounds + 1);
    CH_ASSERT_EQ(atomic_load(&p.early_polls), 0);
    CH_ASSERT_OK(coexec_tasklet_free(&p.k));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* Several wakes while the tasklet is parked or queued are one: it is
 * polled once more, and its next PENDING waits for a new wake. */
static void t_pending_wake_twice(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    pend_t p;
    memset(&p, 0, sizeof p);
    p.rounds = 3;
    CH_ASSERT_OK_FATAL(coexec_tasklet_create(s.pool, pend_tasklet, &p, &p.k));
    CH_WAIT(atomic_load(&p.published) == 1);
    CH_WAIT(ch_tasklet_state(p.k) == COEXEC_UNIT_BLOCKED);
    /* hold the stream, then wake it many times from here and a thread */
    ch_gate_t g;
    ch_gate_init(&g);
    coexec_thread_t gt;
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, ch_gate_ult, &g, NULL, &gt));
    CH_WAIT(atomic_load(&g.running));
    atomic_fetch_add(&p.woken, 1);
    multi_wake_t m = {p.w, 100};
    ch_pthread_t th;
    ch_pthread_start(&th, multi_wake_pthread, &m);
    for (int i = 0; i < 100; i++)
        CH_ASSERT_OK(coexec_waker_wake(p.w));
    ch_pthread_join(&th);
    CH_ASSERT_EQ(ch_tasklet_state(p.k), COEXEC_UNIT_READY);
    CH_ASSERT_EQ(atomic_load(&p.polls), 1);
    atomic_store(&g.open, 1);
    CH_ASSERT_OK(coexec_thread_free(&gt));
    /* polled for the wake, then once more for the permit the queued wakes
     * left, then PENDING for good */
    CH_WAIT(atomic_load(&p.published) == 3);
    CH_WAIT(ch_tasklet_state(p.k) == COEXEC_UNIT_BLOCKED ||
            ch_tasklet_state(p.k) == COEXEC_UNIT_TERMINATED);
    wk_relax_n(200);
    CH_ASSERT_EQ(atomic_load(&p.polls), 3);
    CH_ASSERT_EQ(ch_tasklet_state(p.k), COEXEC_UNIT_BLOCKED);
    CH_ASSERT_EQ(atomic_load(&p.early_polls), 1); /* the permit's poll */
    pend_wake(&p);
    CH_ASSERT_OK(coexec_tasklet_join(p.k));
    CH_ASSERT_EQ(atomic_load(&p.polls), 4);
    CH_ASSERT_OK(coexec_tasklet_free(&p.k));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* Many pending tasklets on 4 streams (with stealing), woken by ULTs on
 * every stream and by external threads, in any order. */
typedef struct {
    pend_t *p;
    int n;
    atomic_int next_round; /* shared: (tasklet, round) pairs handed out */
} pend_storm_t;

static void pend_storm_wake(pend_storm_t *st)
{
    for (;;) {
        int done = 0;
        for (int i = 0; i < st->n; i++) {
            pend_t *p = &st->p[i];
            int w = atomic_load(&p->woken);
            if (w >= p->rounds) {
                done++;
                continue;
            }
            /* round w is answerable once the waker was published w+1
             * times; one waker claims it */
            if (atomic_load(&p->published) == w + 1 &&
                atomic_compare_exchange_strong(&p->woken, &w, w + 1))
                CH_CHECK_RC(coexec_waker_wake(p->w), COEXEC_OK);
        }
        if (done == st->n)
            return;
        ch_relax();
    }
}

static void *pend_storm_pthread(void *arg)
{
    pend_storm_wake(arg);
    return NULL;
}

static void pend_storm_ult(void *arg) { pend_storm_wake(arg); }

static void t_pending_storm(void)
{
    ch_init(WK_NSTREAMS);
    pend_storm_t st;
    memset(&st, 0, sizeof st);
    st.n = 64;
    st.p = calloc((size_t)st.n, sizeof *st.p);
    int rounds = (int)ch_iters(200, 10);
    for (int i = 0; i < st.n; i++) {
        st.p[i].rounds = rounds;
        CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(ch_xstream(i % WK_NSTREAMS), pend_tasklet,
                                                    &st.p[i], &st.p[i].k));
    }
    coexec_thread_t wt[WK_NSTREAMS];
    for (int r = 0; r < WK_NSTREAMS; r++)
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(r), pend_storm_ult, &st, NULL, &wt[r]));
    ch_pthread_t th[2];
    for (int i = 0; i < 2; i++)
        ch_pthread_start(&th[i], pend_storm_pthread, &st);
    for (int i = 0; i < st.n; i++)
        CH_ASSERT_OK(coexec_tasklet_join(st.p[i].k));
    for (int r = 0; r < WK_NSTREAMS; r++)
        CH_ASSERT_OK(coexec_thread_free(&wt[r]));
    for (int i = 0; i < 2; i++)
        ch_pthread_join(&th[i]);
    long polls = 0, early = 0;
    for (int i = 0; i < st.n; i++) {
        polls += atomic_load(&st.p[i].polls);
        early += atomic_load(&st.p[i].early_polls);
        CH_ASSERT_OK(coexec_tasklet_free(&st.p[i].k));
    }
    CH_ASSERT_EQ(polls, (long)st.n * (rounds + 1));
    CH_ASSERT_EQ(early, 0);
    free(st.p);
    ch_finalize();
}

/* ======================================================================= */

static const ch_test_t waker_tests[] = {
    {"park_wake_from_everywhere", t_park_wake_everywhere},
    {"main_ult_parks", t_main_ult_parks},
    {"wake_before_park_and_twice", t_wake_before_park_and_twice},
    {"stale_waker_noop", t_stale_waker},
    {"errors_and_contexts", t_waker_errors},
    {NULL, NULL}};
static const ch_test_t pollable_tests[] = {
    {"pending_woken_from_everywhere", t_pending_woken_everywhere},
    {"self_wake_before_pending", t_pending_self_wake},
    {"pending_storm", t_pending_storm},
    {NULL, NULL}};
/* Wakes sent while the unit is queued (made ready by an earlier wake, not
 * running yet): "waking twice is the same as once" (waker.h). */
static const ch_test_t coalesce_tests[] = {
    {"ult_queued_wakes_leave_one_permit", t_wakes_while_queued},
    {"tasklet_queued_wakes_leave_one_permit", t_pending_wake_twice},
    {NULL, NULL}};

static const ch_suite_t suites[] = {{"waker", waker_tests},
                                    {"pollable", pollable_tests},
                                    {"coalesce", coalesce_tests},
                                    {"eventual", wk_eventual_tests},
                                    {"future", wk_future_tests},
                                    {"channel", wk_channel_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
