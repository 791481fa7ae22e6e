/*
 * tests/stress/test_stress.c: long-running checks, scaled by
 * COEXEC_TEST_SCALE (1 = full; sanitizer presets use 0.1). Every result is
 * checked; nothing here depends on timing.
 *
 *   create_join     millions of ULT create/join cycles on 4+ streams
 *   fib             recursive fork-join Fibonacci on 4 streams
 *   yield_create    ULTs yielding while others create and join
 *   suspend_resume  suspend/resume and park/wake storms between streams
 *                   and external threads
 *   mixed           ULTs and tasklets creating each other, pending tasklets
 */
#define _GNU_SOURCE
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSTREAMS 4

/* ======================================================================= */
/* create_join                                                              */
/* ======================================================================= */

typedef struct {
    uint64_t in, out;
} slot_t;

static void slot_ult(void *arg)
{
    slot_t *s = arg;
    s->out = ch_mix64(s->in);
}

static coexec_poll_status_t slot_tasklet(coexec_poll_t *cx, void *arg)
{
    slot_ult(arg);
    return COEXEC_READY;
}

typedef struct {
    long cycles;
    int id;
    atomic_long bad;
    atomic_long done;
    int tasklets; /* also tasklets every other batch */
} driver_t;

static void driver_ult(void *arg)
{
    driver_t *d = arg;
    enum { B = 32 };
    slot_t s[B];
    coexec_thread_t t[B];
    coexec_tasklet_t k[B];
    long done = 0, bad = 0, batch = 0;
    coexec_xstream_t xs;
    if (coexec_xstream_self(&xs) != COEXEC_OK) {
        ch_fail_at(__FILE__, __LINE__, "xstream_self failed");
        return;
    }
    while (done < d->cycles) {
        int n = d->cycles - done < B ? (int)(d->cycles - done) : B;
        int use_k = d->tasklets && (batch & 1);
        for (int i = 0; i < n; i++) {
            s[i].in = ((uint64_t)d->id << 40) ^ (uint64_t)(done + i);
            s[i].out = 0;
            int rc = use_k ? coexec_tasklet_create_on(xs, slot_tasklet, &s[i], &k[i])
                           : coexec_thread_create_on(xs, slot_ult, &s[i], NULL, &t[i]);
            if (rc != COEXEC_OK) {
                CH_CHECK_RC(rc, COEXEC_OK);
                return;
            }
        }
        for (int i = 0; i < n; i++) {
            int rc = use_k ? coexec_tasklet_free(&k[i]) : coexec_thread_free(&t[i]);
            if (rc != COEXEC_OK) {
                CH_CHECK_RC(rc, COEXEC_OK);
                return;
            }
            bad += s[i].out != ch_mix64(s[i].in);
        }
        done += n;
        batch++;
    }
    atomic_store(&d->bad, bad);
    atomic_store(&d->done, done);
}

static void t_create_join(void)
{
    const long total = ch_iters(2000000, 20000);
    for (int variant = 0; variant < 2; variant++) {
        /* variant 0: 4 streams, BASIC_WAIT; variant 1: 6 streams, BASIC */
        int ns = variant ? NSTREAMS + 2 : NSTREAMS;
        ch_init_ex(ns, variant ? COEXEC_SCHED_BASIC : COEXEC_SCHED_BASIC_WAIT, 1);
        long per = total / 2 / ns;
        driver_t *d = calloc((size_t)ns, sizeof *d);
        coexec_thread_t *t = calloc((size_t)ns, sizeof *t);
        double t0 = ch_now();
        for (int r = 0; r < ns; r++) {
            coexec_xstream_t xs;
            d[r].cycles = per;
            d[r].id = r;
            d[r].tasklets = variant;
            CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(r, &xs));
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, driver_ult, &d[r], NULL, &t[r]));
        }
        long sum = 0;
        for (int r = 0; r < ns; r++) {
            CH_ASSERT_OK(coexec_thread_free(&t[r]));
            CH_ASSERT_EQ(atomic_load(&d[r].done), per);
            CH_ASSERT_EQ(atomic_load(&d[r].bad), 0);
            sum += atomic_load(&d[r].done);
        }
        printf("[%d streams: %ld cycles in %.2f s] ", ns, sum, ch_now() - t0);
        free(d);
        free(t);
        ch_finalize();
    }
}

static void t_create_join_from_main(void)
{
    /* the main ULT spreads ULTs over the streams and joins them */
    ch_init(NSTREAMS);
    const long total = ch_iters(500000, 5000);
    enum { B = 256 };
    slot_t s[B];
    coexec_thread_t t[B];
    coexec_xstream_t xs[NSTREAMS];
    for (int r = 0; r < NSTREAMS; r++)
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(r, &xs[r]));
    long bad = 0, done = 0;
    double t0 = ch_now();
    while (done < total) {
        int n = total - done < B ? (int)(total - done) : B;
        for (int i = 0; i < n; i++) {
            s[i].in = (uint64_t)(done + i);
            s[i].out = 0;
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs[i % NSTREAMS], slot_ult, &s[i], NULL, &t[i]));
        }
        for (int i = n - 1; i >= 0; i--) {
            CH_ASSERT_OK_FATAL(coexec_thread_free(&t[i]));
            bad += s[i].out != ch_mix64(s[i].in);
        }
        done += n;
    }
    CH_ASSERT_EQ(bad, 0);
    printf("[%ld cycles in %.2f s] ", done, ch_now() - t0);
    ch_finalize();
}

/* ======================================================================= */
/* fib                                                                      */
/* ======================================================================= */

typedef struct {
    int n;
    uint64_t r;
} fib_t;

static atomic_long g_fib_ults;

static void fib_ult(void *arg)
{
    fib_t *f = arg;
    atomic_fetch_add_explicit(&g_fib_ults, 1, memory_order_relaxed);
    if (f->n < 2) {
        f->r = (uint64_t)f->n;
        return;
    }
    fib_t a = {f->n - 1, 0}, b = {f->n - 2, 0};
    coexec_xstream_t xs;
    coexec_thread_t ta, tb;
    CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
    if (coexec_thread_create_on(xs, fib_ult, &a, NULL, &ta) != COEXEC_OK ||
        coexec_thread_create_on(xs, fib_ult, &b, NULL, &tb) != COEXEC_OK) {
        ch_fail_at(__FILE__, __LINE__, "fib: create failed");
        return;
    }
    CH_CHECK_RC(coexec_thread_free(&ta), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_free(&tb), COEXEC_OK);
    f->r = a.r + b.r;
}

static void t_fib(void)
{
    /* fib(28) at scale 1 (about 1M ULTs); fewer levels when scaled down */
    int n = 28 + (int)lround(log(ch_effective_scale()) / log(1.618034));
    if (n < 12)
        n = 12;
    if (n > 32)
        n = 32;
    for (int variant = 0; variant < 2; variant++) {
        ch_init_ex(NSTREAMS, variant ? COEXEC_SCHED_BASIC : COEXEC_SCHED_BASIC_WAIT, 1);
        fib_t f = {n, 0};
        atomic_store(&g_fib_ults, 0);
        double t0 = ch_now();
        coexec_xstream_t x0;
        coexec_thread_t t;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &x0));
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(x0, fib_ult, &f, NULL, &t));
        CH_ASSERT_OK(coexec_thread_free(&t));
        CH_ASSERT_EQ(f.r, ch_fib(n));
        /* 2*fib(n+1)-1 calls */
        CH_ASSERT_EQ(atomic_load(&g_fib_ults), 2 * (long)ch_fib(n + 1) - 1);
        printf("[fib(%d)=%llu, %ld ULTs, %.2f s] ", n, (unsigned long long)f.r,
               atomic_load(&g_fib_ults), ch_now() - t0);
        ch_finalize();
    }
}

/* ======================================================================= */
/* yield_create                                                             */
/* ======================================================================= */

typedef struct {
    long yields;
    atomic_long done_yields;
} yielder_t;

static void yielder_ult(void *arg)
{
    yielder_t *y = arg;
    for (long i = 0; i < y->yields; i++) {
        if (coexec_yield() != COEXEC_OK) {
            ch_fail_at(__FILE__, __LINE__, "yield failed");
            return;
        }
        atomic_fetch_add_explicit(&y->done_yields, 1, memory_order_relaxed);
    }
}

static void t_yield_create(void)
{
    ch_init(NSTREAMS);
    enum { NY = 3 * NSTREAMS };
    yielder_t y[NY];
    coexec_thread_t yt[NY];
    long yields = ch_iters(100000, 2000);
    for (int i = 0; i < NY; i++) {
        y[i].yields = yields;
        atomic_init(&y[i].done_yields, 0);
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(i % NSTREAMS, &xs));
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, yielder_ult, &y[i], NULL, &yt[i]));
    }
    driver_t d[NSTREAMS];
    coexec_thread_t dt[NSTREAMS];
    long per = ch_iters(100000, 2000);
    for (int r = 0; r < NSTREAMS; r++) {
        memset(&d[r], 0, sizeof d[r]);
        d[r].cycles = per;
        d[r].id = r;
        d[r].tasklets = 1;
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(r, &xs));
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, driver_ult, &d[r], NULL, &dt[r]));
    }
    for (int r = 0; r < NSTREAMS; r++) {
        CH_ASSERT_OK(coexec_thread_free(&dt[r]));
        CH_ASSERT_EQ(atomic_load(&d[r].done), per);
        CH_ASSERT_EQ(atomic_load(&d[r].bad), 0);
    }
    for (int i = 0; i < NY; i++) {
        CH_ASSERT_OK(coexec_thread_free(&yt[i]));
        CH_ASSERT_EQ(atomic_load(&y[i].done_yields), yields);
    }
    ch_finalize();
}

/* ======================================================================= */
/* suspend_resume                                                           */
/* ======================================================================= */

typedef struct {
    coexec_thread_t t;     /* set before the resumers start */
    coexec_waker_t w;      /* park variant: published before want > 0 */
    atomic_long want;      /* rounds the sleeper has asked for */
    atomic_long claimed;   /* rounds a resumer has answered */
    long rounds;
    atomic_int finished;
} sleeper_t;

typedef struct {
    sleeper_t *s;
    long n;
    int use_park;
    atomic_long resumes_ok;
    atomic_long resumes_bad;
    atomic_long finished;
} storm_t;

static void sleeper_ult(void *arg)
{
    sleeper_t *s = arg;
    for (long r = 1; r <= s->rounds; r++) {
        atomic_store(&s->want, r);
        int rc = s->w.p ? coexec_park() : coexec_self_suspend();
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        /* a round returns only after its resume was claimed */
        if (atomic_load(&s->claimed) < r)
            ch_fail_at(__FILE__, __LINE__, "suspend returned before its resume");
    }
    atomic_store(&s->finished, 1);
}

static void sleeper_park_ult(void *arg)
{
    sleeper_t *s = arg;
    CH_CHECK_RC(coexec_self_waker(&s->w), COEXEC_OK);
    sleeper_ult(arg);
}

/* Answers every round of every sleeper exactly once, whoever gets there
 * first; returns when all sleepers have finished. */
static void resume_loop(storm_t *st)
{
    double t0 = ch_now();
    for (;;) {
        long finished = 0;
        for (long i = 0; i < st->n; i++) {
            sleeper_t *s = &st->s[i];
            if (atomic_load(&s->finished)) {
                finished++;
                continue;
            }
            long c = atomic_load(&s->claimed);
            if (atomic_load(&s->want) > c &&
                atomic_compare_exchange_strong(&s->claimed, &c, c + 1)) {
                int rc = st->use_park ? coexec_waker_wake(s->w) : coexec_thread_resume(s->t);
                if (rc == COEXEC_OK)
                    atomic_fetch_add(&st->resumes_ok, 1);
                else {
                    atomic_fetch_add(&st->resumes_bad, 1);
                    CH_CHECK_RC(rc, COEXEC_OK);
                }
            }
        }
        if (finished == st->n)
            return;
        if (ch_now() - t0 > CH_WAIT_LIMIT_S * 2) {
            ch_fail_at(__FILE__, __LINE__, "storm: %ld of %ld sleepers finished", finished, st->n);
            return;
        }
        ch_relax();
    }
}

static void *resume_pthread(void *arg)
{
    resume_loop(arg);
    return NULL;
}

static void resume_ult(void *arg) { resume_loop(arg); }

static void run_storm(int use_park)
{
    ch_init(NSTREAMS);
    storm_t st;
    memset(&st, 0, sizeof st);
    st.n = 64;
    st.use_park = use_park;
    long rounds = ch_iters(10000, 100);
    st.s = calloc((size_t)st.n, sizeof *st.s);
    /* sleepers first, then the resumers (2 pthreads, 1 ULT per stream,
     * and the main ULT) */
    for (long i = 0; i < st.n; i++) {
        sleeper_t *s = &st.s[i];
        s->rounds = rounds;
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank((int)(i % NSTREAMS), &xs));
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, use_park ? sleeper_park_ult : sleeper_ult,
                                                   s, NULL, &s->t));
    }
    ch_pthread_t th[2];
    for (int i = 0; i < 2; i++)
        ch_pthread_start(&th[i], resume_pthread, &st);
    coexec_thread_t rt[NSTREAMS];
    for (int r = 0; r < NSTREAMS; r++) {
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(r, &xs));
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, resume_ult, &st, NULL, &rt[r]));
    }
    double t0 = ch_now();
    resume_loop(&st);
    for (int i = 0; i < 2; i++)
        ch_pthread_join(&th[i]);
    for (int r = 0; r < NSTREAMS; r++)
        CH_ASSERT_OK(coexec_thread_free(&rt[r]));
    long unfinished = 0;
    for (long i = 0; i < st.n; i++) {
        unfinished += !atomic_load(&st.s[i].finished);
        CH_ASSERT_OK(coexec_thread_free(&st.s[i].t));
        CH_ASSERT_EQ(atomic_load(&st.s[i].claimed), rounds);
    }
    CH_ASSERT_EQ(unfinished, 0);
    CH_ASSERT_EQ(atomic_load(&st.resumes_ok), st.n * rounds);
    CH_ASSERT_EQ(atomic_load(&st.resumes_bad), 0);
    printf("[%ld %s in %.2f s] ", atomic_load(&st.resumes_ok),
           use_park ? "wakes" : "resumes", ch_now() - t0);
    free(st.s);
    ch_finalize();
}

static void t_suspend_resume_storm(void) { run_storm(0); }
static void t_park_wake_storm(void) { run_storm(1); }

/* A ping-pong between a ULT and an external thread: strict alternation. */
typedef struct {
    coexec_thread_t t;
    atomic_long seq; /* odd: the ULT is about to suspend */
    long rounds;
} pingpong_t;

static void ping_ult(void *arg)
{
    pingpong_t *p = arg;
    for (long r = 0; r < p->rounds; r++) {
        atomic_fetch_add(&p->seq, 1); /* odd */
        CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
        if (atomic_load(&p->seq) != 2 * r + 2)
            ch_fail_at(__FILE__, __LINE__, "woke without its resume");
    }
}

static void *pong_pthread(void *arg)
{
    pingpong_t *p = arg;
    for (long r = 0; r < p->rounds; r++) {
        if (!CH_WAIT(atomic_load(&p->seq) == 2 * r + 1))
            return NULL;
        atomic_fetch_add(&p->seq, 1); /* even */
        CH_CHECK_RC(coexec_thread_resume(p->t), COEXEC_OK);
    }
    return NULL;
}

static void t_pingpong(void)
{
    ch_init(2);
    pingpong_t p[2];
    ch_pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        memset(&p[i], 0, sizeof p[i]);
        p[i].rounds = ch_iters(50000, 1000);
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(i, &xs));
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, ping_ult, &p[i], NULL, &p[i].t));
        ch_pthread_start(&th[i], pong_pthread, &p[i]);
    }
    for (int i = 0; i < 2; i++) {
        ch_pthread_join(&th[i]);
        CH_ASSERT_OK(coexec_thread_free(&p[i].t));
        CH_ASSERT_EQ(atomic_load(&p[i].seq), 2 * p[i].rounds);
    }
    ch_finalize();
}

/* ======================================================================= */
/* mixed                                                                    */
/* ======================================================================= */

static atomic_long g_mixed;

static coexec_poll_status_t inc_tasklet(coexec_poll_t *cx, void *arg)
{
    atomic_fetch_add_explicit(&g_mixed, 1, memory_order_relaxed);
    return COEXEC_READY;
}

static void inc_ult(void *arg) { atomic_fetch_add_explicit(&g_mixed, 1, memory_order_relaxed); }

static void type0_ult(void *arg)
{
    coexec_xstream_t xs;
    CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_create_on(xs, inc_tasklet, NULL, NULL), COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_create_on(xs, inc_tasklet, NULL, NULL), COEXEC_OK);
    atomic_fetch_add_explicit(&g_mixed, 1, memory_order_relaxed);
}

static coexec_poll_status_t type1_tasklet(coexec_poll_t *cx, void *arg)
{
    coexec_xstream_t xs;
    CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_create_on(xs, inc_ult, NULL, NULL, NULL), COEXEC_OK);
    atomic_fetch_add_explicit(&g_mixed, 1, memory_order_relaxed);
    return COEXEC_READY;
}

static void type2_ult(void *arg)
{
    coexec_xstream_t xs;
    coexec_tasklet_t k;
    CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_create_on(xs, inc_tasklet, NULL, &k), COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_free(&k), COEXEC_OK);
    atomic_fetch_add_explicit(&g_mixed, 1, memory_order_relaxed);
}

typedef struct {
    coexec_waker_t w;
    atomic_int state; /* 0 new, 1 waker published, 2 woken */
} pend_slot_t;

static coexec_poll_status_t type3_tasklet(coexec_poll_t *cx, void *arg)
{
    pend_slot_t *p = arg;
    if (atomic_load(&p->state) == 2) {
        atomic_fetch_add_explicit(&g_mixed, 1, memory_order_relaxed);
        return COEXEC_READY;
    }
    CH_CHECK_RC(coexec_poll_waker(cx, &p->w), COEXEC_OK);
    atomic_store(&p->state, 1);
    return COEXEC_PENDING;
}

static void type3_waker_ult(void *arg)
{
    pend_slot_t *p = arg;
    double t0 = ch_now();
    while (atomic_load(&p->state) != 1) {
        if (ch_now() - t0 > CH_WAIT_LIMIT_S) {
            ch_fail_at(__FILE__, __LINE__, "pending tasklet never published its waker");
            return;
        }
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    }
    atomic_store(&p->state, 2);
    CH_CHECK_RC(coexec_waker_wake(p->w), COEXEC_OK);
    atomic_fetch_add_explicit(&g_mixed, 1, memory_order_relaxed);
}

static void t_mixed(void)
{
    ch_init(NSTREAMS);
    long n = ch_iters(200000, 2000);
    pend_slot_t *slots = calloc((size_t)(n / 4 + 1), sizeof *slots);
    atomic_store(&g_mixed, 0);
    long expect = 0;
    double t0 = ch_now();
    for (long i = 0; i < n; i++) {
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank((int)(i % NSTREAMS), &xs));
        int rc = COEXEC_OK;
        switch (i % 4) {
        case 0:
            rc = coexec_thread_create_on(xs, type0_ult, NULL, NULL, NULL);
            expect += 3;
            break;
        case 1:
            rc = coexec_tasklet_create_on(xs, type1_tasklet, NULL, NULL);
            expect += 2;
            break;
        case 2:
            rc = coexec_thread_create_on(xs, type2_ult, NULL, NULL, NULL);
            expect += 2;
            break;
        default: {
            pend_slot_t *p = &slots[i / 4];
            rc = coexec_tasklet_create_on(xs, type3_tasklet, p, NULL);
            if (rc == COEXEC_OK) {
                coexec_xstream_t other;
                CH_ASSERT_OK_FATAL(coexec_xstream_by_rank((int)((i + 1) % NSTREAMS), &other));
                rc = coexec_thread_create_on(other, type3_waker_ult, p, NULL, NULL);
            }
            expect += 2;
            break;
        }
        }
        CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
        /* keep the backlog bounded */
        if (i % 1024 == 1023)
            CH_WAIT(atomic_load(&g_mixed) >= expect - 8192);
    }
    CH_WAIT(atomic_load(&g_mixed) == expect);
    CH_ASSERT_EQ(atomic_load(&g_mixed), expect);
    printf("[%ld units in %.2f s] ", expect, ch_now() - t0);
    ch_finalize();
    CH_ASSERT_EQ(atomic_load(&g_mixed), expect);
    free(slots);
}

/* ======================================================================= */

static const ch_test_t create_join_tests[] = {
    {"drivers_per_stream", t_create_join},
    {"main_spreads_over_streams", t_create_join_from_main},
    {NULL, NULL}};
static const ch_test_t fib_tests[] = {{"fork_join_fib", t_fib}, {NULL, NULL}};
static const ch_test_t yield_create_tests[] = {{"yield_while_creating", t_yield_create},
                                               {NULL, NULL}};
static const ch_test_t suspend_resume_tests[] = {
    {"suspend_resume_storm", t_suspend_resume_storm},
    {"park_wake_storm", t_park_wake_storm},
    {"pingpong_with_pthreads", t_pingpong},
    {NULL, NULL}};
static const ch_test_t mixed_tests[] = {{"ults_and_tasklets", t_mixed}, {NULL, NULL}};

static const ch_suite_t suites[] = {{"create_join", create_join_tests},
                                    {"fib", fib_tests},
                                    {"yield_create", yield_create_tests},
                                    {"suspend_resume", suspend_resume_tests},
                                    {"mixed", mixed_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
