/*
 * tests/waker/test_eventual.c: eventuals and futures (suites "eventual" and
 * "future" of test_waker).
 *
 *   eventual  value sizes (0, small, large), set/wait round trips from the
 *             main ULT, ULTs of other streams, external threads and tasklets
 *             (poll), 100+ waiters released by one set, set twice, reset,
 *             test, timed waits, argument/handle/state errors, destroy with
 *             waiters, use after destroy, wrong callers
 *   future    compartments filled in set order, the callback runs once and
 *             before any waiter returns, get, reset and reuse, wait_all,
 *             poll and poll_all from tasklets, timed waits, errors
 */
#define _GNU_SOURCE
#include "wk.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 8));
}

static int check_fill(const unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)(seed * 131u + i * 7u + (i >> 8)))
            return 0;
    return 1;
}

/* ======================================================================= */
/* eventual                                                                 */
/* ======================================================================= */

static void t_sizes_roundtrip(void)
{
    ch_init(1);
    static const size_t sizes[] = {0, 1, 8, 15, 16, 17, 100, 1000, 4096};
    unsigned char *buf = malloc(4097);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        coexec_eventual_t ev;
        memset(&ev, 0xA5, sizeof ev);
        CH_ASSERT_OK_FATAL(coexec_eventual_init(&ev, n));
        int is_set = 7;
        void *v = (void *)1;
        CH_ASSERT_OK(coexec_eventual_test(&ev, &v, &is_set));
        CH_ASSERT_EQ(is_set, 0);
        CH_ASSERT_OK(coexec_eventual_test(&ev, NULL, &is_set));
        CH_ASSERT_EQ(is_set, 0);
        /* size checks */
        fill(buf, n + 1, (unsigned)s);
        CH_ASSERT_RC(coexec_eventual_set(&ev, buf, n + 1), COEXEC_EINVAL);
        if (n > 0)
            CH_ASSERT_RC(coexec_eventual_set(&ev, NULL, n), COEXEC_EINVAL);
        CH_ASSERT_OK(coexec_eventual_test(&ev, NULL, &is_set));
        CH_ASSERT_EQ(is_set, 0); /* a failed set leaves it unset */
        /* the round trip */
        CH_ASSERT_OK(coexec_eventual_set(&ev, n ? buf : NULL, n));
        memset(buf, 0, n + 1); /* the eventual holds a copy */
        CH_ASSERT_OK(coexec_eventual_test(&ev, &v, &is_set));
        CH_ASSERT_EQ(is_set, 1);
        if (n) {
            CU_ASSERT_PTR_NOT_NULL_FATAL(v);
            CU_ASSERT(check_fill(v, n, (unsigned)s));
        }
        v = NULL;
        CH_ASSERT_OK(coexec_eventual_wait(&ev, &v));
        if (n) {
            CU_ASSERT_PTR_NOT_NULL_FATAL(v);
            CU_ASSERT(check_fill(v, n, (unsigned)s));
        }
        CH_ASSERT_OK(coexec_eventual_wait(&ev, NULL));
        CH_ASSERT_OK(coexec_eventual_wait_timed(&ev, 0, NULL));
        /* set twice */
        fill(buf, n, 99);
        CH_ASSERT_RC(coexec_eventual_set(&ev, n ? buf : NULL, n), COEXEC_ESTATE);
        CH_ASSERT_OK(coexec_eventual_wait(&ev, &v));
        if (n)
            CU_ASSERT(check_fill(v, n, (unsigned)s)); /* unchanged */
        /* reset, then a shorter value */
        CH_ASSERT_OK(coexec_eventual_reset(&ev));
        CH_ASSERT_OK(coexec_eventual_test(&ev, NULL, &is_set));
        CH_ASSERT_EQ(is_set, 0);
        CH_ASSERT_RC(coexec_eventual_wait_timed(&ev, 0, NULL), COEXEC_ETIMEDOUT);
        size_t half = n / 2;
        fill(buf, half, 1000u + (unsigned)s);
        CH_ASSERT_OK(coexec_eventual_set(&ev, half ? buf : NULL, half));
        CH_ASSERT_OK(coexec_eventual_wait(&ev, &v));
        if (half)
            CU_ASSERT(check_fill(v, half, 1000u + (unsigned)s));
        CH_ASSERT_OK(coexec_eventual_reset(&ev));
        CH_ASSERT_OK(coexec_eventual_reset(&ev)); /* reset of unset: fine */
        CH_ASSERT_OK(coexec_eventual_destroy(&ev));
    }
    free(buf);
    ch_finalize();
}

/* One eventual waited for by every kind of caller. */
typedef struct {
    uint64_t a, b, c, d;
} evval_t;

typedef struct {
    coexec_eventual_t ev;
    atomic_int arrived;
    atomic_int released;
    atomic_int bad;
    atomic_int set_done; /* 1 once the setter has set (before: no release) */
    evval_t want;
} evw_t;

static void ev_check(evw_t *e, int rc, void *v)
{
    if (rc != COEXEC_OK) {
        CH_CHECK_RC(rc, COEXEC_OK);
        atomic_fetch_add(&e->bad, 1);
        return;
    }
    if (!atomic_load(&e->set_done)) {
        ch_fail_at(__FILE__, __LINE__, "wait returned before the set");
        atomic_fetch_add(&e->bad, 1);
    }
    if (!v || memcmp(v, &e->want, sizeof e->want) != 0) {
        ch_fail_at(__FILE__, __LINE__, "wrong value");
        atomic_fetch_add(&e->bad, 1);
    }
    atomic_fetch_add(&e->released, 1);
}

static void ev_wait_ult(void *arg)
{
    evw_t *e = arg;
    void *v = NULL;
    atomic_fetch_add(&e->arrived, 1);
    int rc = coexec_eventual_wait(&e->ev, &v);
    ev_check(e, rc, v);
}

static void *ev_wait_pthread(void *arg)
{
    evw_t *e = arg;
    void *v = NULL;
    atomic_fetch_add(&e->arrived, 1);
    int rc = coexec_eventual_wait(&e->ev, &v);
    ev_check(e, rc, v);
    return NULL;
}

/* A tasklet waiter: its own poll count. */
typedef struct {
    evw_t *e;
    atomic_int polls;
} evk_t;

static coexec_poll_status_t ev_poll_tasklet(coexec_poll_t *cx, void *arg)
{
    evk_t *kk = arg;
    evw_t *e = kk->e;
    void *v = NULL;
    if (atomic_fetch_add(&kk->polls, 1) == 0)
        atomic_fetch_add(&e->arrived, 1);
    int rc = coexec_eventual_poll(&e->ev, cx, &v);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    ev_check(e, rc, v);
    return COEXEC_READY;
}

static void ev_set_fn(void *arg)
{
    evw_t *e = arg;
    atomic_store(&e->set_done, 1);
    CH_CHECK_RC(coexec_eventual_set(&e->ev, &e->want, sizeof e->want), COEXEC_OK);
}

static void t_wait_everywhere(void)
{
    ch_init(2);
    ch_stream_t s1, s2;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s1, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s2, COEXEC_SCHED_BASIC));
    int rounds = (int)ch_iters(20, 3);
    for (int r = 0; r < rounds; r++) {
        evw_t e;
        memset(&e, 0, sizeof e);
        e.want = (evval_t){(uint64_t)r, 0x1111u * (uint64_t)r, ~(uint64_t)r, 42};
        CH_ASSERT_OK_FATAL(coexec_eventual_init(&e.ev, sizeof(evval_t)));
        coexec_thread_t t;
        coexec_tasklet_t k;
        ch_pthread_t th;
        evk_t kk = {&e, 0};
        CH_ASSERT_OK_FATAL(coexec_thread_create(s1.pool, ev_wait_ult, &e, NULL, &t));
        CH_ASSERT_OK_FATAL(coexec_tasklet_create(s1.pool, ev_poll_tasklet, &kk, &k));
        ch_pthread_start(&th, ev_wait_pthread, &e);
        CH_WAIT(atomic_load(&e.arrived) == 3 && ch_thread_state(t) == COEXEC_UNIT_BLOCKED &&
                ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
        CH_ASSERT_EQ(atomic_load(&e.released), 0);
        CH_ASSERT_EQ(atomic_load(&kk.polls), 1);
        /* the setter: alternately a ULT of s2, a tasklet of s2, the main
         * ULT and an external thread */
        switch (r % 4) {
        case 0:
            CH_ASSERT_OK(ch_run_ult_in(s2.pool, ev_set_fn, &e));
            break;
        case 1:
            CH_ASSERT_OK(ch_run_tasklet_in(s2.pool, ev_set_fn, &e));
            break;
        case 2:
            ev_set_fn(&e);
            break;
        default: {
            ch_pthread_t st;
            ch_pthread_run(&st, ev_set_fn, &e);
            ch_pthread_join(&st);
        }
        }
        /* the main ULT waits too, after the set */
        void *v = NULL;
        CH_ASSERT_OK(coexec_eventual_wait(&e.ev, &v));
        CU_ASSERT(v && memcmp(v, &e.want, sizeof e.want) == 0);
        ch_pthread_join(&th);
        CH_ASSERT_OK(coexec_thread_free(&t));
        CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_tasklet_free(&k));
        CH_ASSERT_EQ(atomic_load(&e.released), 3);
        CH_ASSERT_EQ(atomic_load(&e.bad), 0);
        CH_ASSERT_EQ(atomic_load(&kk.polls), 2); /* PENDING, then READY */
        /* a tasklet polling a set eventual is READY at once */
        atomic_store(&kk.polls, 0);
        CH_ASSERT_OK(coexec_tasklet_create(s1.pool, ev_poll_tasklet, &kk, &k));
        CH_ASSERT_OK(coexec_tasklet_free(&k));
        CH_ASSERT_EQ(atomic_load(&kk.polls), 1);
        CH_ASSERT_EQ(atomic_load(&e.released), 4);
        CH_ASSERT_OK(coexec_eventual_destroy(&e.ev));
    }
    CH_ASSERT_OK(ch_stream_free(&s1));
    CH_ASSERT_OK(ch_stream_free(&s2));
    ch_finalize();
}

/* The main ULT blocks in wait; a ULT on another stream sets. */
typedef struct {
    evw_t *e;
    coexec_thread_t main_t;
} main_wait_t;

static void set_when_main_blocked(void *arg)
{
    main_wait_t *m = arg;
    CH_WAIT(atomic_load(&m->e->arrived) == 1);
    CH_WAIT(ch_thread_state(m->main_t) == COEXEC_UNIT_BLOCKED);
    ev_set_fn(m->e);
}

static void t_main_ult_waits(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    evw_t e;
    memset(&e, 0, sizeof e);
    e.want = (evval_t){1, 2, 3, 4};
    CH_ASSERT_OK_FATAL(coexec_eventual_init(&e.ev, 64)); /* a bigger eventual */
    main_wait_t m = {&e, {0}};
    CH_ASSERT_OK(coexec_thread_self(&m.main_t));
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(s.pool, set_when_main_blocked, &m, NULL, &t));
    ev_wait_ult(&e); /* the main ULT parks here */
    CH_ASSERT_EQ(atomic_load(&e.released), 1);
    CH_ASSERT_EQ(atomic_load(&e.bad), 0);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_eventual_destroy(&e.ev));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

static void t_many_waiters(void)
{
    ch_init(WK_NSTREAMS);
    enum { NU = 100, NP = 4, NK = 8 };
    int rounds = (int)ch_iters(6, 2);
    evw_t *e = calloc(1, sizeof *e);
    CH_ASSERT_OK_FATAL(coexec_eventual_init(&e->ev, sizeof(evval_t)));
    coexec_thread_t *t = calloc(NU, sizeof *t);
    coexec_tasklet_t k[NK];
    evk_t kk[NK];
    ch_pthread_t th[NP];
    for (int r = 0; r < rounds; r++) {
        atomic_store(&e->arrived, 0);
        atomic_store(&e->released, 0);
        atomic_store(&e->set_done, 0);
        e->want = (evval_t){(uint64_t)r * 3, (uint64_t)r * 5, (uint64_t)r * 7, 9};
        for (int i = 0; i < NU; i++)
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(i % WK_NSTREAMS), ev_wait_ult, e,
                                                       NULL, &t[i]));
        for (int i = 0; i < NK; i++) {
            kk[i].e = e;
            atomic_init(&kk[i].polls, 0);
            CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(ch_xstream(i % WK_NSTREAMS), ev_poll_tasklet,
                                                        &kk[i], &k[i]));
        }
        for (int i = 0; i < NP; i++)
            ch_pthread_start(&th[i], ev_wait_pthread, e);
        CH_WAIT(atomic_load(&e->arrived) == NU + NP + NK);
        for (int i = 0; i < NU; i++)
            CH_WAIT(ch_thread_state(t[i]) == COEXEC_UNIT_BLOCKED);
        for (int i = 0; i < NK; i++)
            CH_WAIT(ch_tasklet_state(k[i]) == COEXEC_UNIT_BLOCKED);
        CH_ASSERT_EQ(atomic_load(&e->released), 0);
        /* one set releases them all; the set comes from a ULT on rank 1 */
        coexec_thread_t st;
        CH_ASSERT_OK(coexec_thread_create_on(ch_xstream(1 + r % (WK_NSTREAMS - 1)), ev_set_fn, e,
                                             NULL, &st));
        CH_ASSERT_OK(coexec_thread_free(&st));
        for (int i = 0; i < NU; i++)
            CH_ASSERT_OK(coexec_thread_free(&t[i]));
        for (int i = 0; i < NK; i++)
            CH_ASSERT_OK(coexec_tasklet_free(&k[i]));
        for (int i = 0; i < NP; i++)
            ch_pthread_join(&th[i]);
        CH_ASSERT_EQ(atomic_load(&e->released), NU + NP + NK);
        CH_ASSERT_EQ(atomic_load(&e->bad), 0);
        for (int i = 0; i < NK; i++)
            CH_ASSERT_EQ(atomic_load(&kk[i].polls), 2);
        CH_ASSERT_OK(coexec_eventual_reset(&e->ev));
    }
    CH_ASSERT_OK(coexec_eventual_destroy(&e->ev));
    free(t);
    free(e);
    ch_finalize();
}

/* Timed waits. */
typedef struct {
    coexec_eventual_t ev;
    uint64_t timeout;
    atomic_int rc;
    atomic_int arrived;
    uint64_t elapsed;
    uint64_t value;
} timed_t;

static void timed_wait_fn(void *arg)
{
    timed_t *w = arg;
    void *v = NULL;
    atomic_store(&w->arrived, 1);
    uint64_t t0 = coexec_now_ns();
    int rc = coexec_eventual_wait_timed(&w->ev, w->timeout, &v);
    w->elapsed = coexec_now_ns() - t0;
    if (rc == COEXEC_OK && v)
        memcpy(&w->value, v, sizeof w->value);
    atomic_store(&w->rc, rc);
}

static void scribble_stack_ult(void *arg)
{
    volatile char junk[2048];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)(i ^ 0x5a);
    (void)arg;
}

static void t_timed(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    const uint64_t short_ns = 20 * 1000 * 1000ull, long_ns = 60ull * 1000 * 1000 * 1000;
    /* nobody sets: ETIMEDOUT, from the main ULT, a ULT and a thread */
    for (int who = 0; who < 3; who++) {
        timed_t w;
        memset(&w, 0, sizeof w);
        w.timeout = short_ns;
        atomic_init(&w.rc, 1);
        CH_ASSERT_OK_FATAL(coexec_eventual_init(&w.ev, sizeof(uint64_t)));
        if (who == 0) {
            timed_wait_fn(&w);
        } else if (who == 1) {
            CH_ASSERT_OK(ch_run_ult_in(s.pool, timed_wait_fn, &w));
            /* the waiter's frame is gone; reuse that stack memory */
            CH_ASSERT_OK(ch_run_ult_in(s.pool, scribble_stack_ult, NULL));
        } else {
            ch_pthread_t th;
            ch_pthread_run(&th, timed_wait_fn, &w);
            ch_pthread_join(&th);
        }
        CH_ASSERT_RC(atomic_load(&w.rc), COEXEC_ETIMEDOUT);
        CU_ASSERT(w.elapsed >= short_ns); /* never early */
        /* the timed-out waiter is gone: a set wakes nobody, destroy is
         * not busy */
        uint64_t x = 77;
        CH_ASSERT_OK(coexec_eventual_set(&w.ev, &x, sizeof x));
        CH_ASSERT_OK(coexec_eventual_destroy(&w.ev));
    }
    /* timeout 0 on an unset eventual */
    coexec_eventual_t ev0;
    CH_ASSERT_OK_FATAL(coexec_eventual_init(&ev0, 0));
    CH_ASSERT_RC(coexec_eventual_wait_timed(&ev0, 0, NULL), COEXEC_ETIMEDOUT);
    CH_ASSERT_OK(coexec_eventual_set(&ev0, NULL, 0));
    CH_ASSERT_OK(coexec_eventual_wait_timed(&ev0, 0, NULL));
    CH_ASSERT_OK(coexec_eventual_destroy(&ev0));
    /* set in time: a ULT waiter (blocked) and a thread waiter */
    for (int who = 0; who < 2; who++) {
        timed_t w;
        memset(&w, 0, sizeof w);
        w.timeout = long_ns;
        atomic_init(&w.rc, 1);
        CH_ASSERT_OK_FATAL(coexec_eventual_init(&w.ev, sizeof(uint64_t)));
        coexec_thread_t t;
        ch_pthread_t th;
        if (who == 0) {
            CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, timed_wait_fn, &w, NULL, &t));
            CH_WAIT(atomic_load(&w.arrived) && ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
        } else {
            ch_pthread_run(&th, timed_wait_fn, &w);
            CH_WAIT(atomic_load(&w.arrived));
        }
        CH_ASSERT_EQ(atomic_load(&w.rc), 1);
        uint64_t x = 0xfeedface12345678ull + (uint64_t)who;
        CH_ASSERT_OK(coexec_eventual_set(&w.ev, &x, sizeof x));
        if (who == 0)
            CH_ASSERT_OK(coexec_thread_free(&t));
        else
            ch_pthread_join(&th);
        CH_ASSERT_RC(atomic_load(&w.rc), COEXEC_OK);
        CH_ASSERT_EQ(w.value, x);
        CH_ASSERT_OK(coexec_eventual_destroy(&w.ev));
    }
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* Errors. */
static coexec_eventual_t g_ev;
static atomic_int g_ctx_ok;

static coexec_poll_status_t ev_ctx_tasklet(coexec_poll_t *cx, void *arg)
{
    void *v;
    CH_CHECK_RC(coexec_eventual_wait(&g_ev, &v), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_eventual_wait_timed(&g_ev, 1000, &v), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_eventual_poll(&g_ev, NULL, &v), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_eventual_poll(NULL, cx, &v), COEXEC_EINVAL);
    coexec_eventual_t zero;
    memset(&zero, 0, sizeof zero);
    CH_CHECK_RC(coexec_eventual_poll(&zero, cx, &v), COEXEC_EHANDLE);
    /* set, test and reset are allowed in a tasklet */
    int is_set = -1;
    CH_CHECK_RC(coexec_eventual_test(&g_ev, NULL, &is_set), COEXEC_OK);
    CH_CHECK_EQ(is_set, 0);
    atomic_fetch_add(&g_ctx_ok, 1);
    return COEXEC_READY;
}

static void ev_wait_expect_ehandle(void *arg)
{
    CH_CHECK_RC(coexec_eventual_wait(arg, NULL), COEXEC_EHANDLE);
    atomic_fetch_add(&g_ctx_ok, 1);
}

typedef struct {
    coexec_eventual_t *ev;
    atomic_int rc;
} ev_busy_t;

static void busy_wait_ult(void *arg)
{
    ev_busy_t *b = arg;
    atomic_store(&b->rc, coexec_eventual_wait(b->ev, NULL));
}

static coexec_poll_status_t busy_poll_tasklet(coexec_poll_t *cx, void *arg)
{
    ev_busy_t *b = arg;
    int rc = coexec_eventual_poll(b->ev, cx, NULL);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    atomic_store(&b->rc, rc);
    return COEXEC_READY;
}

static void t_eventual_errors(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    void *v;
    int is_set;
    /* NULL */
    CH_ASSERT_RC(coexec_eventual_init(NULL, 8), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_set(NULL, NULL, 0), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_wait(NULL, &v), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_wait_timed(NULL, 1, &v), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_test(NULL, &v, &is_set), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_reset(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_poll(NULL, NULL, &v), COEXEC_EINVAL);
    /* memory never initialised (zeroed) */
    coexec_eventual_t z;
    memset(&z, 0, sizeof z);
    CH_ASSERT_RC(coexec_eventual_set(&z, NULL, 0), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_wait(&z, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_wait_timed(&z, 1, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_test(&z, &v, &is_set), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_reset(&z), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_destroy(&z), COEXEC_EHANDLE);
    /* test needs is_set */
    CH_ASSERT_OK_FATAL(coexec_eventual_init(&g_ev, 8));
    CH_ASSERT_RC(coexec_eventual_test(&g_ev, &v, NULL), COEXEC_EINVAL);
    /* wrong callers: a tasklet may not wait */
    atomic_store(&g_ctx_ok, 0);
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(s.pool, ev_ctx_tasklet, NULL, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_EQ(atomic_load(&g_ctx_ok), 1);

    /* destroy with waiters: EBUSY (a parked ULT, a pending tasklet) */
    ev_busy_t bu = {&g_ev, 1}, bk = {&g_ev, 1};
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, busy_wait_ult, &bu, NULL, &t));
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_eventual_destroy(&g_ev), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_tasklet_create(s.pool, busy_poll_tasklet, &bk, &k));
    CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_eventual_destroy(&g_ev), COEXEC_EBUSY);
    /* still usable: the set releases both */
    uint64_t x = 5;
    CH_ASSERT_OK(coexec_eventual_set(&g_ev, &x, sizeof x));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_TERMINATED);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_RC(atomic_load(&bu.rc), COEXEC_OK);
    CH_ASSERT_RC(atomic_load(&bk.rc), COEXEC_OK);
    CH_ASSERT_OK(coexec_eventual_destroy(&g_ev));

    /* use after destroy */
    CH_ASSERT_RC(coexec_eventual_set(&g_ev, &x, sizeof x), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_wait(&g_ev, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_wait_timed(&g_ev, 1000, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_test(&g_ev, &v, &is_set), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_reset(&g_ev), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_destroy(&g_ev), COEXEC_EHANDLE);
    atomic_store(&g_ctx_ok, 0);
    CH_ASSERT_OK(ch_run_ult_in(s.pool, ev_wait_expect_ehandle, &g_ev));
    ch_pthread_t th;
    ch_pthread_run(&th, ev_wait_expect_ehandle, &g_ev);
    ch_pthread_join(&th);
    CH_ASSERT_EQ(atomic_load(&g_ctx_ok), 2);
    /* and initialised again, it works */
    CH_ASSERT_OK(coexec_eventual_init(&g_ev, 0));
    CH_ASSERT_OK(coexec_eventual_set(&g_ev, NULL, 0));
    CH_ASSERT_OK(coexec_eventual_wait(&g_ev, NULL));
    CH_ASSERT_OK(coexec_eventual_destroy(&g_ev));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ======================================================================= */
/* future                                                                   */
/* ======================================================================= */

enum { FUT_MAX = 128 };

typedef struct {
    coexec_future_t f;
    size_t n;
    atomic_int cb_runs;
    void *cb_values[FUT_MAX]; /* copied by the callback */
    size_t cb_n;
    int side_effect; /* plain: waiters read it after they are released */
    atomic_int arrived;
    atomic_int released;
    atomic_int bad;
    int want_effect; /* what a released waiter must see */
} fut_t;

static void fut_cb(void **values, size_t n, void *arg)
{
    fut_t *f = arg;
    atomic_fetch_add(&f->cb_runs, 1);
    f->cb_n = n;
    for (size_t i = 0; i < n && i < FUT_MAX; i++)
        f->cb_values[i] = values[i];
    f->side_effect++;
}

static void *fv(size_t i) { return (void *)(uintptr_t)(0x1000 + 16 * i); }

static void fut_released(fut_t *f, int rc)
{
    if (rc != COEXEC_OK) {
        CH_CHECK_RC(rc, COEXEC_OK);
        atomic_fetch_add(&f->bad, 1);
        return;
    }
    int is_ready = 0;
    CH_CHECK_RC(coexec_future_test(&f->f, &is_ready), COEXEC_OK);
    if (!is_ready || f->side_effect != f->want_effect) {
        ch_fail_at(__FILE__, __LINE__,
                   "released with ready %d, callback effect %d (want %d)",
                   is_ready, f->side_effect, f->want_effect);
        atomic_fetch_add(&f->bad, 1);
    }
    atomic_fetch_add(&f->released, 1);
}

static void fut_wait_ult(void *arg)
{
    fut_t *f = arg;
    atomic_fetch_add(&f->arrived, 1);
    fut_released(f, coexec_future_wait(&f->f));
}

typedef struct {
    fut_t *f;
    atomic_int polls;
} futk_t;

static coexec_poll_status_t fut_poll_tasklet(coexec_poll_t *cx, void *arg)
{
    futk_t *k = arg;
    if (atomic_fetch_add(&k->polls, 1) == 0)
        atomic_fetch_add(&k->f->arrived, 1);
    int rc = coexec_future_poll(&k->f->f, cx);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    fut_released(k->f, rc);
    return COEXEC_READY;
}

static void t_future_basic(void)
{
    ch_init(1);
    static const size_t ns[] = {1, 2, 4, 16, FUT_MAX};
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
        size_t n = ns[c];
        fut_t *f = calloc(1, sizeof *f);
        f->n = n;
        CH_ASSERT_OK_FATAL(coexec_future_init(&f->f, n, fut_cb, f));
        int is_ready = 7;
        void *v = (void *)1;
        CH_ASSERT_OK(coexec_future_test(&f->f, &is_ready));
        CH_ASSERT_EQ(is_ready, 0);
        CH_ASSERT_OK(coexec_future_get(&f->f, 0, &v));
        CU_ASSERT_PTR_NULL(v);
        CH_ASSERT_RC(coexec_future_get(&f->f, n, &v), COEXEC_EINVAL);
        CH_ASSERT_RC(coexec_future_get(&f->f, 0, NULL), COEXEC_EINVAL);
        CH_ASSERT_RC(coexec_future_wait_timed(&f->f, 0), COEXEC_ETIMEDOUT);
        for (size_t i = 0; i < n; i++) {
            CH_ASSERT_EQ(atomic_load(&f->cb_runs), 0);
            CH_ASSERT_OK(coexec_future_test(&f->f, &is_ready));
            CH_ASSERT_EQ(is_ready, 0);
            CH_ASSERT_OK(coexec_future_set(&f->f, fv(i)));
            CH_ASSERT_OK(coexec_future_get(&f->f, i, &v));
            CU_ASSERT_PTR_EQUAL(v, fv(i));
            if (i + 1 < n) {
                CH_ASSERT_OK(coexec_future_get(&f->f, i + 1, &v));
                CU_ASSERT_PTR_NULL(v);
            }
        }
        /* the last set ran the callback, once, with the values in order */
        CH_ASSERT_EQ(atomic_load(&f->cb_runs), 1);
        CH_ASSERT_EQ(f->cb_n, n);
        int order_ok = 1;
        for (size_t i = 0; i < n; i++)
            order_ok &= f->cb_values[i] == fv(i);
        CU_ASSERT(order_ok);
        CH_ASSERT_EQ(f->side_effect, 1);
        CH_ASSERT_OK(coexec_future_test(&f->f, &is_ready));
        CH_ASSERT_EQ(is_ready, 1);
        CH_ASSERT_OK(coexec_future_wait(&f->f));
        CH_ASSERT_OK(coexec_future_wait_timed(&f->f, 0));
        /* one more: ESTATE, nothing changes */
        CH_ASSERT_RC(coexec_future_set(&f->f, fv(999)), COEXEC_ESTATE);
        CH_ASSERT_EQ(atomic_load(&f->cb_runs), 1);
        CH_ASSERT_OK(coexec_future_get(&f->f, n - 1, &v));
        CU_ASSERT_PTR_EQUAL(v, fv(n - 1));
        /* reset and reuse: the callback runs again */
        CH_ASSERT_OK(coexec_future_reset(&f->f));
        CH_ASSERT_OK(coexec_future_test(&f->f, &is_ready));
        CH_ASSERT_EQ(is_ready, 0);
        CH_ASSERT_OK(coexec_future_get(&f->f, 0, &v));
        CU_ASSERT_PTR_NULL(v);
        for (size_t i = 0; i < n; i++)
            CH_ASSERT_OK(coexec_future_set(&f->f, fv(n - i)));
        CH_ASSERT_EQ(atomic_load(&f->cb_runs), 2);
        CH_ASSERT_EQ(f->side_effect, 2);
        order_ok = 1;
        for (size_t i = 0; i < n; i++)
            order_ok &= f->cb_values[i] == fv(n - i);
        CU_ASSERT(order_ok);
        CH_ASSERT_OK(coexec_future_destroy(&f->f));
        free(f);
    }
    /* no callback */
    coexec_future_t g;
    CH_ASSERT_OK(coexec_future_init(&g, 2, NULL, NULL));
    CH_ASSERT_OK(coexec_future_set(&g, fv(1)));
    CH_ASSERT_OK(coexec_future_set(&g, fv(2)));
    CH_ASSERT_OK(coexec_future_wait(&g));
    CH_ASSERT_RC(coexec_future_set(&g, fv(3)), COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_future_destroy(&g));
    ch_finalize();
}

/* Concurrent setters and waiters of every kind. */
typedef struct {
    fut_t *f;
    size_t first, count;
} setter_t;

static void fut_set_fn(void *arg)
{
    setter_t *s = arg;
    for (size_t i = s->first; i < s->first + s->count; i++)
        CH_CHECK_RC(coexec_future_set(&s->f->f, fv(i)), COEXEC_OK);
}

static coexec_poll_status_t fut_set_tasklet(coexec_poll_t *cx, void *arg)
{
    fut_set_fn(arg);
    return COEXEC_READY;
}

static void t_future_waiters(void)
{
    ch_init(WK_NSTREAMS);
    enum { NU = 40, NP = 2, NK = 4, NSET = 8, PER = 4, N = NSET * PER };
    fut_t *f = calloc(1, sizeof *f);
    f->n = N;
    CH_ASSERT_OK_FATAL(coexec_future_init(&f->f, N, fut_cb, f));
    coexec_thread_t *t = calloc(NU, sizeof *t);
    coexec_tasklet_t k[NK];
    futk_t kk[NK];
    ch_pthread_t th[NP];
    int rounds = (int)ch_iters(10, 2);
    for (int r = 0; r < rounds; r++) {
        atomic_store(&f->arrived, 0);
        atomic_store(&f->released, 0);
        f->want_effect = r + 1;
        for (int i = 0; i < NU; i++)
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(i % WK_NSTREAMS), fut_wait_ult, f,
                                                       NULL, &t[i]));
        for (int i = 0; i < NK; i++) {
            kk[i].f = f;
            atomic_init(&kk[i].polls, 0);
            CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(ch_xstream(i % WK_NSTREAMS),
                                                        fut_poll_tasklet, &kk[i], &k[i]));
        }
        for (int i = 0; i < NP; i++)
            ch_pthread_run(&th[i], fut_wait_ult, f);
        CH_WAIT(atomic_load(&f->arrived) == NU + NP + NK);
        for (int i = 0; i < NU; i++)
            CH_WAIT(ch_thread_state(t[i]) == COEXEC_UNIT_BLOCKED);
        for (int i = 0; i < NK; i++)
            CH_WAIT(ch_tasklet_state(k[i]) == COEXEC_UNIT_BLOCKED);
        CH_ASSERT_EQ(atomic_load(&f->released), 0);
        /* 8 setters: ULTs on the 4 streams, 2 tasklets, 2 threads */
        setter_t s[NSET];
        coexec_thread_t st[4];
        coexec_tasklet_t sk[2];
        ch_pthread_t sth[2];
        for (int i = 0; i < NSET; i++)
            s[i] = (setter_t){f, (size_t)i * PER, PER};
        for (int i = 0; i < 4; i++)
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(i), fut_set_fn, &s[i], NULL, &st[i]));
        for (int i = 0; i < 2; i++)
            CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(ch_xstream(i + 1), fut_set_tasklet, &s[4 + i],
                                                        &sk[i]));
        for (int i = 0; i < 2; i++)
            ch_pthread_run(&sth[i], fut_set_fn, &s[6 + i]);
        for (int i = 0; i < NU; i++)
            CH_ASSERT_OK(coexec_thread_free(&t[i]));
        for (int i = 0; i < NK; i++)
            CH_ASSERT_OK(coexec_tasklet_free(&k[i]));
        for (int i = 0; i < NP; i++)
            ch_pthread_join(&th[i]);
        for (int i = 0; i < 4; i++)
            CH_ASSERT_OK(coexec_thread_free(&st[i]));
        for (int i = 0; i < 2; i++)
            CH_ASSERT_OK(coexec_tasklet_free(&sk[i]));
        for (int i = 0; i < 2; i++)
            ch_pthread_join(&sth[i]);
        CH_ASSERT_EQ(atomic_load(&f->released), NU + NP + NK);
        CH_ASSERT_EQ(atomic_load(&f->bad), 0);
        CH_ASSERT_EQ(atomic_load(&f->cb_runs), r + 1);
        CH_ASSERT_EQ(f->cb_n, N);
        for (int i = 0; i < NK; i++)
            CH_ASSERT_EQ(atomic_load(&kk[i].polls), 2);
        /* the callback saw every value once, in set order (= get order);
         * each setter's own values in its order */
        int seen[N];
        memset(seen, 0, sizeof seen);
        int order_ok = 1, range_ok = 1;
        size_t last[NSET];
        for (int i = 0; i < NSET; i++)
            last[i] = (size_t)-1;
        for (size_t i = 0; i < N; i++) {
            void *v = NULL;
            CH_ASSERT_OK(coexec_future_get(&f->f, i, &v));
            order_ok &= v == f->cb_values[i];
            uintptr_t x = (uintptr_t)f->cb_values[i];
            if (x < 0x1000 || (x - 0x1000) % 16 || (x - 0x1000) / 16 >= N) {
                range_ok = 0;
                continue;
            }
            size_t idx = (x - 0x1000) / 16;
            seen[idx]++;
            size_t who = idx / PER;
            if (last[who] != (size_t)-1 && idx < last[who])
                order_ok = 0;
            last[who] = idx;
        }
        CU_ASSERT(order_ok);
        CU_ASSERT(range_ok);
        int once = 1;
        for (int i = 0; i < N; i++)
            once &= seen[i] == 1;
        CU_ASSERT(once);
        CH_ASSERT_OK(coexec_future_reset(&f->f));
    }
    CH_ASSERT_OK(coexec_future_destroy(&f->f));
    free(t);
    free(f);
    ch_finalize();
}

/* wait_all and poll_all. */
enum { NF = 5 };

typedef struct {
    coexec_future_t f[NF];
    coexec_future_t *fs[NF];
    atomic_int completed; /* futures whose callback ran */
    atomic_int arrived;
    atomic_int released;
    atomic_int bad;
    atomic_int polls;
} all_t;

static void all_cb(void **values, size_t n, void *arg)
{
    all_t *a = arg;
    atomic_fetch_add(&a->completed, 1);
}

static void all_released(all_t *a, int rc)
{
    CH_CHECK_RC(rc, COEXEC_OK);
    int n_ready = 0;
    for (int i = 0; i < NF; i++) {
        int is_ready = 0;
        CH_CHECK_RC(coexec_future_test(&a->f[i], &is_ready), COEXEC_OK);
        n_ready += is_ready;
    }
    if (rc != COEXEC_OK || n_ready != NF || atomic_load(&a->completed) != NF) {
        ch_fail_at(__FILE__, __LINE__, "when_all released with %d of %d ready", n_ready, NF);
        atomic_fetch_add(&a->bad, 1);
    }
    atomic_fetch_add(&a->released, 1);
}

static void all_wait_ult(void *arg)
{
    all_t *a = arg;
    atomic_fetch_add(&a->arrived, 1);
    all_released(a, coexec_future_wait_all(a->fs, NF));
}

static coexec_poll_status_t all_poll_tasklet(coexec_poll_t *cx, void *arg)
{
    all_t *a = arg;
    if (atomic_fetch_add(&a->polls, 1) == 0)
        atomic_fetch_add(&a->arrived, 1);
    int rc = coexec_future_poll_all(a->fs, NF, cx);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    all_released(a, rc);
    return COEXEC_READY;
}

static void t_wait_all(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    int rounds = (int)ch_iters(10, 2);
    for (int r = 0; r < rounds; r++) {
        all_t *a = calloc(1, sizeof *a);
        for (int i = 0; i < NF; i++) {
            CH_ASSERT_OK_FATAL(coexec_future_init(&a->f[i], (size_t)i + 1, all_cb, a));
            a->fs[i] = &a->f[i];
        }
        coexec_thread_t t;
        coexec_tasklet_t k;
        ch_pthread_t th;
        CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, all_wait_ult, a, NULL, &t));
        CH_ASSERT_OK_FATAL(coexec_tasklet_create(s.pool, all_poll_tasklet, a, &k));
        ch_pthread_run(&th, all_wait_ult, a);
        CH_WAIT(atomic_load(&a->arrived) == 3 && ch_thread_state(t) == COEXEC_UNIT_BLOCKED &&
                ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
        /* complete them in an order that changes with r, one compartment
         * at a time, round robin; nobody is released before the last */
        int left[NF];
        for (int i = 0; i < NF; i++)
            left[i] = i + 1;
        int total = NF * (NF + 1) / 2, done = 0;
        while (done < total) {
            for (int j = 0; j < NF; j++) {
                int i = (j + r) % NF;
                if (!left[i])
                    continue;
                CH_ASSERT_EQ(atomic_load(&a->released), 0);
                CH_ASSERT_OK(coexec_future_set(&a->f[i], fv((size_t)left[i])));
                left[i]--;
                done++;
            }
        }
        CH_ASSERT_OK(coexec_thread_free(&t));
        ch_pthread_join(&th);
        CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_tasklet_free(&k));
        CH_ASSERT_EQ(atomic_load(&a->released), 3);
        CH_ASSERT_EQ(atomic_load(&a->bad), 0);
        /* PENDING needs one more completion per poll */
        int polls = atomic_load(&a->polls);
        CU_ASSERT(polls >= 2 && polls <= NF + 1);
        /* complete already: no waiting, READY at once */
        CH_ASSERT_OK(coexec_future_wait_all(a->fs, NF));
        atomic_store(&a->polls, 0);
        CH_ASSERT_OK(coexec_tasklet_create(s.pool, all_poll_tasklet, a, &k));
        CH_ASSERT_OK(coexec_tasklet_free(&k));
        CH_ASSERT_EQ(atomic_load(&a->polls), 1);
        for (int i = 0; i < NF; i++)
            CH_ASSERT_OK(coexec_future_destroy(&a->f[i]));
        free(a);
    }
    /* argument errors */
    coexec_future_t f1, dead;
    CH_ASSERT_OK(coexec_future_init(&f1, 1, NULL, NULL));
    CH_ASSERT_OK(coexec_future_init(&dead, 1, NULL, NULL));
    CH_ASSERT_OK(coexec_future_destroy(&dead));
    coexec_future_t *ok1[1] = {&f1}, *withnull[2] = {&f1, NULL}, *withdead[2] = {&f1, &dead};
    CH_ASSERT_RC(coexec_future_wait_all(NULL, 1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_wait_all(ok1, 0), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_wait_all(withnull, 2), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_wait_all(withdead, 2), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_future_set(&f1, fv(1)));
    CH_ASSERT_OK(coexec_future_wait_all(ok1, 1));
    CH_ASSERT_RC(coexec_future_wait_all(withdead, 2), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_future_destroy(&f1));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* Timed waits. */
typedef struct {
    coexec_future_t f;
    uint64_t timeout, elapsed;
    atomic_int rc;
    atomic_int arrived;
} ftimed_t;

static void ftimed_fn(void *arg)
{
    ftimed_t *w = arg;
    atomic_store(&w->arrived, 1);
    uint64_t t0 = coexec_now_ns();
    int rc = coexec_future_wait_timed(&w->f, w->timeout);
    w->elapsed = coexec_now_ns() - t0;
    atomic_store(&w->rc, rc);
}

static void t_future_timed(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    const uint64_t short_ns = 20 * 1000 * 1000ull, long_ns = 60ull * 1000 * 1000 * 1000;
    for (int who = 0; who < 3; who++) {
        ftimed_t w;
        memset(&w, 0, sizeof w);
        w.timeout = short_ns;
        atomic_init(&w.rc, 1);
        CH_ASSERT_OK_FATAL(coexec_future_init(&w.f, 2, NULL, NULL));
        CH_ASSERT_OK(coexec_future_set(&w.f, fv(1)));
        if (who == 0) {
            ftimed_fn(&w);
        } else if (who == 1) {
            CH_ASSERT_OK(ch_run_ult_in(s.pool, ftimed_fn, &w));
            CH_ASSERT_OK(ch_run_ult_in(s.pool, scribble_stack_ult, NULL));
        } else {
            ch_pthread_t th;
            ch_pthread_run(&th, ftimed_fn, &w);
            ch_pthread_join(&th);
        }
        CH_ASSERT_RC(atomic_load(&w.rc), COEXEC_ETIMEDOUT);
        CU_ASSERT(w.elapsed >= short_ns);
        /* no waiter is left registered */
        CH_ASSERT_OK(coexec_future_reset(&w.f));
        CH_ASSERT_OK(coexec_future_set(&w.f, fv(1)));
        CH_ASSERT_OK(coexec_future_set(&w.f, fv(2)));
        CH_ASSERT_OK(coexec_future_wait_timed(&w.f, 0));
        CH_ASSERT_OK(coexec_future_destroy(&w.f));
    }
    /* completed in time */
    for (int who = 0; who < 2; who++) {
        ftimed_t w;
        memset(&w, 0, sizeof w);
        w.timeout = long_ns;
        atomic_init(&w.rc, 1);
        CH_ASSERT_OK_FATAL(coexec_future_init(&w.f, 1, NULL, NULL));
        coexec_thread_t t;
        ch_pthread_t th;
        if (who == 0) {
            CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, ftimed_fn, &w, NULL, &t));
            CH_WAIT(atomic_load(&w.arrived) && ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
        } else {
            ch_pthread_run(&th, ftimed_fn, &w);
            CH_WAIT(atomic_load(&w.arrived));
        }
        CH_ASSERT_EQ(atomic_load(&w.rc), 1);
        CH_ASSERT_OK(coexec_future_set(&w.f, fv(1)));
        if (who == 0)
            CH_ASSERT_OK(coexec_thread_free(&t));
        else
            ch_pthread_join(&th);
        CH_ASSERT_RC(atomic_load(&w.rc), COEXEC_OK);
        CH_ASSERT_OK(coexec_future_destroy(&w.f));
    }
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* Errors. */
static coexec_future_t g_fut;
static atomic_int g_fut_ok;

static coexec_poll_status_t fut_ctx_tasklet(coexec_poll_t *cx, void *arg)
{
    coexec_future_t *one[1] = {&g_fut};
    CH_CHECK_RC(coexec_future_wait(&g_fut), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_future_wait_timed(&g_fut, 1000), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_future_wait_all(one, 1), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_future_poll(&g_fut, NULL), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_future_poll(NULL, cx), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_future_poll_all(NULL, 1, cx), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_future_poll_all(one, 0, cx), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_future_poll_all(one, 1, NULL), COEXEC_EINVAL);
    int is_ready = -1;
    CH_CHECK_RC(coexec_future_test(&g_fut, &is_ready), COEXEC_OK);
    CH_CHECK_EQ(is_ready, 0);
    atomic_fetch_add(&g_fut_ok, 1);
    return COEXEC_READY;
}

typedef struct {
    coexec_future_t *f;
    atomic_int rc;
} fbusy_t;

/* A callback that holds the completing set until released. */
static atomic_int fl_in_cb, fl_release;

static void fl_slow_cb(void **values, size_t n, void *arg)
{
    (void)values;
    (void)n;
    (void)arg;
    atomic_store(&fl_in_cb, 1);
    while (!atomic_load(&fl_release))
        ch_relax();
}

static void fl_set(void *arg)
{
    CH_CHECK_RC(coexec_future_set(arg, (void *)7), COEXEC_OK);
}

static void fbusy_ult(void *arg)
{
    fbusy_t *b = arg;
    atomic_store(&b->rc, coexec_future_wait(b->f));
}

static coexec_poll_status_t fbusy_tasklet(coexec_poll_t *cx, void *arg)
{
    fbusy_t *b = arg;
    int rc = coexec_future_poll(b->f, cx);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    atomic_store(&b->rc, rc);
    return COEXEC_READY;
}

static void t_future_errors(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    void *v;
    int is_ready;
    CH_ASSERT_RC(coexec_future_init(NULL, 1, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_init(&g_fut, 0, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_init(&g_fut, 0, fut_cb, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_set(NULL, fv(0)), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_wait(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_wait_timed(NULL, 1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_test(NULL, &is_ready), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_get(NULL, 0, &v), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_reset(NULL), COEXEC_EINVAL);
    coexec_future_t z;
    memset(&z, 0, sizeof z);
    CH_ASSERT_RC(coexec_future_set(&z, fv(0)), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_wait(&z), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_wait_timed(&z, 1), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_test(&z, &is_ready), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_get(&z, 0, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_reset(&z), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_destroy(&z), COEXEC_EHANDLE);

    CH_ASSERT_OK_FATAL(coexec_future_init(&g_fut, 2, NULL, NULL));
    CH_ASSERT_RC(coexec_future_test(&g_fut, NULL), COEXEC_EINVAL);
    atomic_store(&g_fut_ok, 0);
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(s.pool, fut_ctx_tasklet, NULL, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_EQ(atomic_load(&g_fut_ok), 1);

    /* a waiter registered: destroy and reset are busy */
    fbusy_t bu = {&g_fut, 1}, bk = {&g_fut, 1};
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, fbusy_ult, &bu, NULL, &t));
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_future_destroy(&g_fut), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_future_reset(&g_fut), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_tasklet_create(s.pool, fbusy_tasklet, &bk, &k));
    CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_future_destroy(&g_fut), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_future_reset(&g_fut), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_future_set(&g_fut, fv(1)));
    CH_ASSERT_EQ(atomic_load(&bu.rc), 1);
    CH_ASSERT_OK(coexec_future_set(&g_fut, fv(2)));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_TERMINATED);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_RC(atomic_load(&bu.rc), COEXEC_OK);
    CH_ASSERT_RC(atomic_load(&bk.rc), COEXEC_OK);
    CH_ASSERT_OK(coexec_future_reset(&g_fut));
    CH_ASSERT_OK(coexec_future_destroy(&g_fut));
    /* use after destroy */
    CH_ASSERT_RC(coexec_future_set(&g_fut, fv(0)), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_wait(&g_fut), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_wait_timed(&g_fut, 1), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_test(&g_fut, &is_ready), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_get(&g_fut, 0, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_reset(&g_fut), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_destroy(&g_fut), COEXEC_EHANDLE);

    /* completed, the callback still running (it reads the values): reset
     * and destroy say try again, and succeed once it has returned (a
     * re-init is busy, as documented) */
    atomic_store(&fl_in_cb, 0);
    atomic_store(&fl_release, 0);
    CH_ASSERT_OK_FATAL(coexec_future_init(&g_fut, 1, fl_slow_cb, NULL));
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, fl_set, &g_fut, NULL, &t));
    CH_WAIT(atomic_load(&fl_in_cb));
    CH_ASSERT_RC(coexec_future_reset(&g_fut), COEXEC_EAGAIN);
    CH_ASSERT_RC(coexec_future_destroy(&g_fut), COEXEC_EAGAIN);
    CH_ASSERT_RC(coexec_future_init(&g_fut, 1, NULL, NULL), COEXEC_EBUSY);
    atomic_store(&fl_release, 1);
    CH_ASSERT_OK(coexec_thread_free(&t)); /* the set has returned */
    CH_ASSERT_OK(coexec_future_test(&g_fut, &is_ready));
    CH_ASSERT_EQ(is_ready, 1);
    CH_ASSERT_OK(coexec_future_reset(&g_fut));
    CH_ASSERT_OK(coexec_future_destroy(&g_fut));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ======================================================================= */

/* ======================================================================= */
/* init over a live eventual or future                                      */
/* ======================================================================= */

/* Waits on an eventual from a ULT, a tasklet or an external thread. */
typedef struct {
    coexec_eventual_t *ev;
    size_t size;
    atomic_int entered, tid, done;
    int rc;
    unsigned char got[64];
} evl_t;

static void evl_wait(void *arg)
{
    evl_t *w = arg;
    atomic_store(&w->tid, (int)ch_gettid());
    atomic_store(&w->entered, 1);
    void *v = NULL;
    w->rc = coexec_eventual_wait(w->ev, &v);
    if (w->rc == COEXEC_OK && v)
        memcpy(w->got, v, w->size < sizeof w->got ? w->size : sizeof w->got);
    atomic_store(&w->done, 1);
}

static coexec_poll_status_t evl_tasklet(coexec_poll_t *cx, void *arg)
{
    evl_t *w = arg;
    void *v = NULL;
    int rc = coexec_eventual_poll(w->ev, cx, &v);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    w->rc = rc;
    if (rc == COEXEC_READY && v)
        memcpy(w->got, v, w->size < sizeof w->got ? w->size : sizeof w->got);
    atomic_store(&w->done, 1);
    return COEXEC_READY;
}

/* Bytes the allocator has mapped for large blocks (glibc; 0 elsewhere). */
static size_t mapped_bytes(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    return mallinfo2().hblkhd;
#else
    return 0;
#endif
}

static void t_eventual_init_live(void)
{
    ch_init(WK_NSTREAMS);
    bool threads = wk_futex_probe_works();
    enum { BIG = 1 << 20 };
    unsigned char *val = malloc(BIG);
    fill(val, BIG, 5);
    coexec_eventual_t ev;
    memset(&ev, 0, sizeof ev);
    CH_ASSERT_OK_FATAL(coexec_eventual_init(&ev, BIG));
    /* waiters of every kind: init is refused and drops none of them */
    evl_t w[3];
    memset(w, 0, sizeof w);
    coexec_thread_t t;
    coexec_tasklet_t k;
    ch_pthread_t th;
    for (int i = 0; i < 3; i++) {
        w[i].ev = &ev;
        w[i].size = BIG;
    }
    CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(1), evl_wait, &w[0], NULL, &t));
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
    CH_CHECK_RC(coexec_eventual_init(&ev, BIG), COEXEC_EBUSY);
    CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(ch_xstream(2), evl_tasklet, &w[1], &k));
    CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
    CH_CHECK_RC(coexec_eventual_init(&ev, 8), COEXEC_EBUSY);
    if (threads) {
        ch_pthread_run(&th, evl_wait, &w[2]);
        CH_WAIT(atomic_load(&w[2].entered) && wk_thread_in_futex(atomic_load(&w[2].tid)));
        CH_CHECK_RC(coexec_eventual_init(&ev, 0), COEXEC_EBUSY);
    }
    /* still the same eventual, unset, with its waiters */
    int is_set = 7;
    CH_ASSERT_OK(coexec_eventual_test(&ev, NULL, &is_set));
    CH_ASSERT_EQ(is_set, 0);
    CH_ASSERT_EQ(ch_thread_state(t), COEXEC_UNIT_BLOCKED);
    CH_ASSERT_EQ(ch_tasklet_state(k), COEXEC_UNIT_BLOCKED);
    CH_ASSERT_OK(coexec_eventual_set(&ev, val, BIG));
    for (int i = 0; i < (threads ? 3 : 2); i++) {
        CH_WAIT(atomic_load(&w[i].done));
        CH_ASSERT_RC(w[i].rc, COEXEC_OK);
        CU_ASSERT(check_fill(w[i].got, sizeof w[i].got, 5));
    }
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    if (threads)
        ch_pthread_join(&th);
    /* nobody waits: init starts it afresh, unset, with the new size */
    CH_ASSERT_OK(coexec_eventual_init(&ev, 8));
    CH_ASSERT_OK(coexec_eventual_test(&ev, NULL, &is_set));
    CH_ASSERT_EQ(is_set, 0);
    CH_ASSERT_RC(coexec_eventual_set(&ev, val, 9), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_eventual_set(&ev, val, 8));
    void *v = NULL;
    CH_ASSERT_OK(coexec_eventual_wait(&ev, &v));
    CU_ASSERT(v && memcmp(v, val, 8) == 0);
    /* and its old buffer is not leaked (LeakSanitizer checks this in the
     * sanitizer builds): re-initialising a set one of 4 MiB many times
     * maps no more */
    CH_ASSERT_OK(coexec_eventual_init(&ev, 4u << 20));
    size_t before = mapped_bytes();
    for (int i = 0; i < 16; i++) {
        CH_ASSERT_OK(coexec_eventual_set(&ev, val, 16));
        CH_ASSERT_OK(coexec_eventual_init(&ev, 4u << 20));
    }
    size_t after = mapped_bytes();
    if (!CH_SANITIZER)
        CU_ASSERT(after <= before + (4u << 20));
    CH_ASSERT_OK(coexec_eventual_destroy(&ev));
    /* a destroyed one is initialised as new memory */
    CH_ASSERT_OK(coexec_eventual_init(&ev, 0));
    CH_ASSERT_OK(coexec_eventual_destroy(&ev));
    free(val);
    ch_finalize();
}

typedef struct {
    coexec_future_t *f;
    atomic_int done;
    int rc;
} fl_wait_t;

static void fl_wait(void *arg)
{
    fl_wait_t *w = arg;
    w->rc = coexec_future_wait(w->f);
    atomic_store(&w->done, 1);
}

static coexec_poll_status_t fl_poll(coexec_poll_t *cx, void *arg)
{
    fl_wait_t *w = arg;
    int rc = coexec_future_poll(w->f, cx);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    w->rc = rc;
    atomic_store(&w->done, 1);
    return COEXEC_READY;
}

static void t_future_init_live(void)
{
    ch_init(WK_NSTREAMS);
    coexec_future_t f;
    memset(&f, 0, sizeof f);
    CH_ASSERT_OK_FATAL(coexec_future_init(&f, 2, NULL, NULL));
    /* a ULT and a tasklet wait: init is refused and drops neither */
    fl_wait_t wu = {&f, 0, 1}, wk = {&f, 0, 1};
    coexec_thread_t t;
    coexec_tasklet_t k;
    CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(1), fl_wait, &wu, NULL, &t));
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_OK(coexec_future_set(&f, (void *)1));
    CH_CHECK_RC(coexec_future_init(&f, 2, NULL, NULL), COEXEC_EBUSY);
    CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(ch_xstream(2), fl_poll, &wk, &k));
    CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
    CH_CHECK_RC(coexec_future_init(&f, 5, NULL, NULL), COEXEC_EBUSY);
    void *v = NULL;
    CH_ASSERT_OK(coexec_future_get(&f, 0, &v));
    CH_ASSERT_EQ((intptr_t)v, 1); /* its first value was kept */
    CH_ASSERT_OK(coexec_future_set(&f, (void *)2));
    CH_WAIT(atomic_load(&wu.done) && atomic_load(&wk.done));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_RC(wu.rc, COEXEC_OK);
    CH_ASSERT_RC(wk.rc, COEXEC_READY);
    /* complete, nobody waits: init starts it afresh */
    CH_ASSERT_OK(coexec_future_init(&f, 3, fl_slow_cb, NULL));
    int ready = 7;
    CH_ASSERT_OK(coexec_future_test(&f, &ready));
    CH_ASSERT_EQ(ready, 0);
    v = (void *)1;
    CH_ASSERT_OK(coexec_future_get(&f, 2, &v));
    CH_ASSERT_EQ((intptr_t)v, 0);
    CH_ASSERT_RC(coexec_future_get(&f, 3, &v), COEXEC_EINVAL);
    /* while the completing set runs the callback: refused too */
    CH_ASSERT_OK(coexec_future_set(&f, (void *)5));
    CH_ASSERT_OK(coexec_future_set(&f, (void *)6));
    atomic_store(&fl_in_cb, 0);
    atomic_store(&fl_release, 0);
    CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(1), fl_set, &f, NULL, &t));
    CH_WAIT(atomic_load(&fl_in_cb));
    CH_CHECK_RC(coexec_future_init(&f, 1, NULL, NULL), COEXEC_EBUSY);
    atomic_store(&fl_release, 1);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_future_test(&f, &ready));
    CH_ASSERT_EQ(ready, 1);
    CH_ASSERT_OK(coexec_future_get(&f, 2, &v));
    CH_ASSERT_EQ((intptr_t)v, 7);
    CH_ASSERT_OK(coexec_future_init(&f, 1, NULL, NULL));
    CH_ASSERT_OK(coexec_future_set(&f, (void *)9));
    CH_ASSERT_OK(coexec_future_wait(&f));
    CH_ASSERT_OK(coexec_future_destroy(&f));
    ch_finalize();
}

/* COEXEC_EVENTUAL_INITIALIZER: a pure event with no init and no destroy.
 * A polled tasklet links itself on the eventual's list, and whoever
 * unlinks it later (its own next poll, here after another wake)
 * takes the eventual's lock through the list. */
static coexec_eventual_t static_ev = COEXEC_EVENTUAL_INITIALIZER;

typedef struct {
    coexec_eventual_t *ev;
    coexec_waker_t self;
    atomic_int polls;
    atomic_int done;
    int leave_on_wake; /* a poll after the first ends without the eventual */
} sev_t;

static coexec_poll_status_t sev_poll(coexec_poll_t *cx, void *arg)
{
    sev_t *x = arg;
    if (atomic_fetch_add(&x->polls, 1) > 0 && x->leave_on_wake) {
        atomic_fetch_add(&x->done, 1);
        return COEXEC_READY; /* still linked on ev's list: the end unlinks */
    }
    CH_CHECK_RC(coexec_poll_waker(cx, &x->self), COEXEC_OK);
    int rc = coexec_eventual_poll(x->ev, cx, NULL);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    CH_CHECK_RC(rc, COEXEC_READY);
    atomic_fetch_add(&x->done, 1);
    return COEXEC_READY;
}

static void sev_wait_ult(void *arg)
{
    sev_t *x = arg;
    atomic_fetch_add(&x->polls, 1);
    CH_CHECK_RC(coexec_eventual_wait(x->ev, NULL), COEXEC_OK);
    atomic_fetch_add(&x->done, 1);
}

static void t_static_initializer(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    int rounds = (int)ch_iters(20, 3);
    for (int r = 0; r < rounds; r++) {
        /* The file-scope one (unset at first, reset after each round) and
         * one in automatic storage, fresh each round. */
        coexec_eventual_t auto_ev = COEXEC_EVENTUAL_INITIALIZER;
        coexec_eventual_t *ev = r % 2 ? &auto_ev : &static_ev;
        int set = -1;
        CH_ASSERT_OK(coexec_eventual_test(ev, NULL, &set));
        CH_ASSERT_EQ(set, 0);
        sev_t w = {ev, {0}, 0, 0, 0}, k = {ev, {0}, 0, 0, 0};
        coexec_thread_t t;
        coexec_tasklet_t tk;
        CH_ASSERT_OK(coexec_thread_create(s.pool, sev_wait_ult, &w, NULL, &t));
        CH_ASSERT_OK(coexec_tasklet_create(s.pool, sev_poll, &k, &tk));
        CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED &&
                ch_tasklet_state(tk) == COEXEC_UNIT_BLOCKED);
        /* Live while waited on: no init over it. A value does not fit. */
        CH_ASSERT_EQ(coexec_eventual_init(ev, 0), COEXEC_EBUSY);
        CH_ASSERT_EQ(coexec_eventual_set(ev, &set, sizeof set), COEXEC_EINVAL);
        CH_ASSERT_OK(coexec_eventual_set(ev, NULL, 0));
        CH_ASSERT_OK(coexec_thread_free(&t));
        CH_WAIT(ch_tasklet_state(tk) == COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_tasklet_free(&tk));
        CH_ASSERT_EQ(atomic_load(&w.done) + atomic_load(&k.done), 2);
        CH_ASSERT_EQ(atomic_load(&k.polls), 2); /* PENDING, then READY */
        CH_ASSERT_OK(coexec_eventual_wait(ev, NULL));
        CH_ASSERT_OK(coexec_eventual_reset(ev));
        /* A tasklet linked on the unset eventual ends on another wake:
         * its end unlinks it through the list's lock. */
        sev_t l = {ev, {0}, 0, 0, 1};
        CH_ASSERT_OK(coexec_tasklet_create(s.pool, sev_poll, &l, &tk));
        CH_WAIT(ch_tasklet_state(tk) == COEXEC_UNIT_BLOCKED);
        CH_ASSERT_OK(coexec_waker_wake(l.self));
        CH_WAIT(ch_tasklet_state(tk) == COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_tasklet_free(&tk));
        CH_ASSERT_EQ(atomic_load(&l.done), 1);
        /* Nobody is left on its list: init over it works, as does a
         * destroy of the automatic one (a static one needs none). */
        CH_ASSERT_OK(coexec_eventual_init(ev, 0));
        if (ev == &auto_ev)
            CH_ASSERT_OK(coexec_eventual_destroy(ev));
    }
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

const ch_test_t wk_eventual_tests[] = {
    {"sizes_set_wait_test_reset", t_sizes_roundtrip},
    {"wait_from_ult_thread_tasklet", t_wait_everywhere},
    {"main_ult_waits", t_main_ult_waits},
    {"many_waiters_one_set", t_many_waiters},
    {"timed_wait", t_timed},
    {"errors_busy_destroyed_contexts", t_eventual_errors},
    {"init_over_live", t_eventual_init_live},
    {"static_initializer", t_static_initializer},
    {NULL, NULL}};

const ch_test_t wk_future_tests[] = {
    {"compartments_callback_get_reset", t_future_basic},
    {"concurrent_setters_and_waiters", t_future_waiters},
    {"wait_all_poll_all", t_wait_all},
    {"timed_wait", t_future_timed},
    {"errors_busy_destroyed_contexts", t_future_errors},
    {"init_over_live", t_future_init_live},
    {NULL, NULL}};
