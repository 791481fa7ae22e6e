/*
 * tests/service/test_request.c: requests. The request suite: submit + poll from
 * tasklets (PENDING, then READY with the result), wait from a ULT and an
 * external thread, never submitted (zeroed) requests, NULL arguments. The
 * cancel suite: with one service thread held by a blocked call, queued
 * requests cancelled (their fn never runs) release a ULT, a tasklet and an
 * external thread with COEXEC_ECANCELED; a running or completed request is
 * COEXEC_EBUSY
 */
#include "service_test.h"

/* ======================================================================= */
/* request                                                                  */
/* ======================================================================= */

static void t_request_tasklet_pending_then_ready(void)
{
    int p[2];
    make_pipe(p);
    svc_init(NSTREAMS, 0, 0);
    blocker_t b = {.fd = p[0]};
    tkreq_t t;
    tkreq_init(&t, block_read_fn, &b);
    coexec_tasklet_t k;
    CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(ch_xstream(1), tkreq_body, &t, &k));
    CH_WAIT(atomic_load(&t.pending_seen));
    /* the call cannot have finished: nothing was written */
    CH_ASSERT_EQ(atomic_load(&t.done), 0);
    CH_ASSERT_EQ(t.first_rc, COEXEC_PENDING);
    CH_ASSERT_RC(t.zero_poll_rc, COEXEC_EHANDLE);
    CH_ASSERT_RC(t.wait_rc, COEXEC_ECONTEXT);
    ch_linger(5);
    CH_ASSERT_EQ(atomic_load(&t.done), 0);
    poke(p[1], 'Z');
    CH_WAIT(atomic_load(&t.done));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_RC(t.final_rc, COEXEC_READY);
    CH_ASSERT_EQ(t.ret, 'Z');
    CU_ASSERT(t.polls >= 2);
    CH_ASSERT_EQ(atomic_load(&b.finished), 1);
    ch_finalize();
    close_pipe(p);
}

static void t_request_many_tasklets(void)
{
    svc_init(NSTREAMS, 0, 0);
    long n = ch_iters(400, 8);
    tkreq_t *t = calloc((size_t)n, sizeof *t);
    coexec_tasklet_t *k = calloc((size_t)n, sizeof *k);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    for (long i = 0; i < n; i++) {
        tkreq_init(&t[i], ret_arg_fn,
                   (void *)(intptr_t)(i % 7 == 3 ? -(EIO) : i * 3 + 1));
        CH_CHECK_RC(coexec_tasklet_create_on(ch_xstream((int)(i % NSTREAMS)),
                                             tkreq_body, &t[i], &k[i]),
                    COEXEC_OK);
    }
    long done = 0, pend = 0, bad = 0;
    for (long i = 0; i < n; i++) {
        CH_WAIT(atomic_load(&t[i].done));
        CH_CHECK_RC(coexec_tasklet_free(&k[i]), COEXEC_OK);
        done += atomic_load(&t[i].done);
        pend += t[i].first_rc == COEXEC_PENDING;
        intptr_t want = i % 7 == 3 ? -(EIO) : i * 3 + 1;
        if (t[i].final_rc != COEXEC_READY || t[i].ret != want) {
            if (bad++ < 5)
                ch_fail_at(__FILE__, __LINE__,
                           "tasklet %ld: poll %s, ret %ld, expected READY, %ld",
                           i, coexec_err_name(t[i].final_rc), (long)t[i].ret,
                           (long)want);
        }
        CH_CHECK_RC(t[i].zero_poll_rc, COEXEC_EHANDLE);
        CH_CHECK_RC(t[i].wait_rc, COEXEC_ECONTEXT);
    }
    CH_ASSERT_EQ(done, n);
    CH_ASSERT_EQ(bad, 0);
    printf("\n    %ld of %ld tasklets saw PENDING first\n", pend, n);
    free(t);
    free(k);
    ch_finalize();
}

/* Submits and waits (a ULT or an external thread). */
typedef struct {
    int rounds;
    long base;
    atomic_int ok;
} subwait_t;

static void subwait_job(void *arg)
{
    subwait_t *s = arg;
    for (int i = 0; i < s->rounds; i++) {
        coexec_request_t req;
        memset(&req, 0, sizeof req);
        intptr_t want = s->base + i;
        CH_CHECK_RC(coexec_request_submit(&req, ret_arg_fn, (void *)want),
                    COEXEC_OK);
        intptr_t ret = -1;
        int rc = coexec_request_wait(&req, &ret);
        CH_CHECK_RC(rc, COEXEC_OK);
        CH_CHECK_EQ(ret, want);
        if (rc == COEXEC_OK && ret == want)
            atomic_fetch_add(&s->ok, 1);
    }
    /* ret NULL */
    coexec_request_t req;
    memset(&req, 0, sizeof req);
    CH_CHECK_RC(coexec_request_submit(&req, ret_arg_fn, (void *)1), COEXEC_OK);
    CH_CHECK_RC(coexec_request_wait(&req, NULL), COEXEC_OK);
}

static void t_request_wait(void)
{
    svc_init(NSTREAMS, 0, 0);
    int rounds = (int)ch_iters(50, 3);
    subwait_t s[NSTREAMS + 1];
    coexec_thread_t t[NSTREAMS];
    for (int r = 0; r < NSTREAMS; r++) {
        memset(&s[r], 0, sizeof s[r]);
        s[r].rounds = rounds;
        s[r].base = 1000L * (r + 1);
        ch_spawn_on(r, subwait_job, &s[r], &t[r]);
    }
    memset(&s[NSTREAMS], 0, sizeof s[NSTREAMS]);
    s[NSTREAMS].rounds = rounds;
    s[NSTREAMS].base = 99000;
    ch_run_external(subwait_job, &s[NSTREAMS]);
    ch_free_threads(t, NSTREAMS);
    for (int r = 0; r <= NSTREAMS; r++)
        CH_ASSERT_EQ(atomic_load(&s[r].ok), rounds);

    /* a request submitted by the main ULT, waited for by a blocked ULT and
     * (another one) by an external thread, released by a pipe write */
    int p[2], q[2];
    make_pipe(p);
    make_pipe(q);
    blocker_t b1 = {.fd = p[0]}, b2 = {.fd = q[0]};
    coexec_request_t r1, r2;
    memset(&r1, 0, sizeof r1);
    memset(&r2, 0, sizeof r2);
    CH_ASSERT_OK(coexec_request_submit(&r1, block_read_fn, &b1));
    CH_ASSERT_OK(coexec_request_submit(&r2, block_read_fn, &b2));
    waiter_t w1 = {.req = &r1, .rc = 1}, w2 = {.req = &r2, .rc = 1};
    coexec_thread_t wt;
    ch_spawn_on(2, waiter_job, &w1, &wt);
    ch_ext_t e;
    ch_ext_start(&e, waiter_job, &w2);
    CH_WAIT(ch_thread_state(wt) == COEXEC_UNIT_BLOCKED);
    CH_WAIT(atomic_load(&w2.waiting));
    ch_linger(5);
    /* Not done (its stuck-call timer may have it running for a moment). */
    CU_ASSERT(ch_thread_state(wt) != COEXEC_UNIT_TERMINATED);
    CH_ASSERT_EQ(atomic_load(&e.done), 0);
    poke(p[1], 'x');
    poke(q[1], 'y');
    CH_ASSERT_OK(coexec_thread_free(&wt));
    ch_ext_join(&e);
    CH_ASSERT_RC(w1.rc, COEXEC_OK);
    CH_ASSERT_EQ(w1.ret, 'x');
    CH_ASSERT_RC(w2.rc, COEXEC_OK);
    CH_ASSERT_EQ(w2.ret, 'y');
    ch_finalize();
    close_pipe(p);
    close_pipe(q);
}

static coexec_poll_status_t zero_poll_body(coexec_poll_t *cx, void *arg)
{
    int *rcs = arg;
    coexec_request_t zero;
    memset(&zero, 0, sizeof zero);
    intptr_t ret = 5;
    rcs[0] = coexec_request_poll(&zero, cx, &ret);
    rcs[1] = coexec_request_poll(NULL, cx, &ret);
    rcs[2] = coexec_request_submit(&zero, NULL, NULL);
    rcs[3] = (int)ret;
    return COEXEC_READY;
}

static void t_request_args(void)
{
    svc_init(NSTREAMS, 0, 0);
    coexec_request_t zero;
    memset(&zero, 0, sizeof zero);
    intptr_t ret = 5;
    CH_ASSERT_RC(coexec_request_wait(&zero, &ret), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_request_cancel(&zero), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_request_wait(NULL, &ret), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_request_cancel(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_request_submit(NULL, ret_arg_fn, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_request_submit(&zero, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_EQ(ret, 5);
    /* a failed submit left it unsubmitted */
    CH_ASSERT_RC(coexec_request_wait(&zero, &ret), COEXEC_EHANDLE);

    int rcs[4] = {1, 1, 1, 1};
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create_on(ch_xstream(3), zero_poll_body, rcs, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_RC(rcs[0], COEXEC_EHANDLE);
    CH_ASSERT_RC(rcs[1], COEXEC_EINVAL);
    CH_ASSERT_RC(rcs[2], COEXEC_EINVAL);
    CH_ASSERT_EQ(rcs[3], 5);

    /* a request that completed and was waited for can be submitted again */
    coexec_request_t req;
    memset(&req, 0, sizeof req);
    for (int i = 0; i < 3; i++) {
        CH_ASSERT_OK(coexec_request_submit(&req, ret_arg_fn,
                                           (void *)(intptr_t)(40 + i)));
        CH_ASSERT_OK(coexec_request_wait(&req, &ret));
        CH_ASSERT_EQ(ret, 40 + i);
    }
    ch_finalize();
}

/* A request still queued or running is not submitted again. */

/* Counts its run, then holds its service thread until *gate is set. */
typedef struct {
    atomic_int ran;
    atomic_int gate;
} gated_t;

static intptr_t gated_fn(void *arg)
{
    gated_t *g = arg;
    atomic_fetch_add(&g->ran, 1);
    while (!atomic_load(&g->gate))
        usleep(20);
    return 9;
}

enum { RS_ULTS = 2, RS_EXTS = 2, RS_SUBMITTERS = RS_ULTS + RS_EXTS + 1 };

typedef struct {
    coexec_request_t req;
    gated_t g;
    long rounds;
    atomic_long go;     /* the round the submitters may race in, + 1 */
    atomic_int stop;    /* a round failed: the submitters leave */
    atomic_int arrived; /* submitters done with the current round */
    atomic_int ok, busy, other;
} resub_t;

static bool resub_round(resub_t *r, long round)
{
    while (atomic_load(&r->go) != round + 1)
        if (atomic_load(&r->stop))
            return false;
        else
            sched_yield();
    int rc = coexec_request_submit(&r->req, gated_fn, &r->g);
    atomic_fetch_add(rc == COEXEC_OK ? &r->ok : rc == COEXEC_EBUSY ? &r->busy : &r->other, 1);
    atomic_fetch_add(&r->arrived, 1);
    return true;
}

static void resub_job(void *arg)
{
    resub_t *r = arg;
    for (long i = 0; i < r->rounds && resub_round(r, i); i++)
        ;
}

static coexec_poll_status_t resub_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    resub_job(arg);
    return COEXEC_READY;
}

static void t_request_resubmit_busy(void)
{
    int p[2];
    make_pipe(p);
    /* one service thread that never grows */
    svc_init(NSTREAMS, 1, 1);
    /* A runs: submitting it again is refused, and it runs once */
    blocker_t a = {.fd = p[0]};
    coexec_request_t ra;
    memset(&ra, 0, sizeof ra);
    CH_ASSERT_OK_FATAL(coexec_request_submit(&ra, block_read_fn, &a));
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&a.started)));
    CH_ASSERT_RC(coexec_request_submit(&ra, block_read_fn, &a), COEXEC_EBUSY);
    /* B is queued behind it: the same */
    atomic_int ran = 0;
    coexec_request_t rb;
    memset(&rb, 0, sizeof rb);
    CH_ASSERT_OK(coexec_request_submit(&rb, count_fn, &ran));
    CH_ASSERT_RC(coexec_request_submit(&rb, count_fn, &ran), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_request_submit(&rb, ret_arg_fn, (void *)7), COEXEC_EBUSY);
    poke(p[1], 'A');
    intptr_t ret = 0;
    CH_ASSERT_OK(coexec_request_wait(&ra, &ret));
    CH_ASSERT_EQ(ret, 'A');
    CH_ASSERT_OK(coexec_request_wait(&rb, &ret));
    CH_ASSERT_EQ(ret, 5);
    CH_ASSERT_EQ(atomic_load(&ran), 1);
    CH_ASSERT_EQ(atomic_load(&a.finished), 1);
    /* completed: both may go again */
    CH_ASSERT_OK(coexec_request_submit(&rb, count_fn, &ran));
    CH_ASSERT_OK(coexec_request_wait(&rb, &ret));
    CH_ASSERT_EQ(ret, 5);
    CH_ASSERT_EQ(atomic_load(&ran), 2);
    CH_ASSERT_OK(coexec_request_submit(&ra, ret_arg_fn, (void *)77));
    CH_ASSERT_OK(coexec_request_wait(&ra, &ret));
    CH_ASSERT_EQ(ret, 77);
    /* cancelled: may go again too */
    a.started = 0;
    CH_ASSERT_OK(coexec_request_submit(&ra, block_read_fn, &a));
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&a.started)));
    CH_ASSERT_OK(coexec_request_submit(&rb, count_fn, &ran));
    CH_ASSERT_OK(coexec_request_cancel(&rb));
    CH_ASSERT_RC(coexec_request_wait(&rb, &ret), COEXEC_ECANCELED);
    CH_ASSERT_OK(coexec_request_submit(&rb, count_fn, &ran));
    CH_ASSERT_RC(coexec_request_submit(&rb, count_fn, &ran), COEXEC_EBUSY);
    poke(p[1], 'B');
    CH_ASSERT_OK(coexec_request_wait(&ra, &ret));
    CH_ASSERT_EQ(ret, 'B');
    CH_ASSERT_OK(coexec_request_wait(&rb, &ret));
    CH_ASSERT_EQ(ret, 5);
    CH_ASSERT_EQ(atomic_load(&ran), 3);
    ch_finalize();
    close_pipe(p);

    /* Submitters of every kind race to submit one completed request: one
     * wins, the others are refused, and the call runs once a round. */
    svc_init(NSTREAMS, 0, 0);
    resub_t *r = calloc(1, sizeof *r);
    r->rounds = ch_iters(300, 30);
    atomic_store(&r->g.gate, 1);
    CH_ASSERT_OK_FATAL(coexec_request_submit(&r->req, gated_fn, &r->g));
    CH_ASSERT_OK_FATAL(coexec_request_wait(&r->req, &ret));
    atomic_store(&r->g.ran, 0);
    coexec_thread_t t[RS_ULTS];
    ch_ext_t e[RS_EXTS];
    coexec_tasklet_t k;
    for (int i = 0; i < RS_ULTS; i++)
        ch_spawn_on(1 + i, resub_job, r, &t[i]);
    for (int i = 0; i < RS_EXTS; i++)
        ch_ext_start(&e[i], resub_job, r);
    CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(ch_xstream(3), resub_tasklet, r, &k));
    long bad = 0;
    for (long i = 0; i < r->rounds; i++) {
        atomic_store(&r->g.gate, 0);
        atomic_store(&r->arrived, 0);
        atomic_store(&r->ok, 0);
        atomic_store(&r->busy, 0);
        atomic_store(&r->other, 0);
        atomic_store(&r->go, i + 1);
        if (!CH_WAIT(atomic_load(&r->arrived) == RS_SUBMITTERS)) {
            bad++;
            break;
        }
        /* the winner's call holds until every submitter tried */
        atomic_store(&r->g.gate, 1);
        int ok = atomic_load(&r->ok);
        if (ok >= 1) {
            CH_CHECK_RC(coexec_request_wait(&r->req, &ret), COEXEC_OK);
            CH_CHECK_EQ(ret, 9);
        }
        /* a second winner's record is on the queue twice: its runs show */
        usleep(ok > 1 ? 100000 : 0);
        if (ok != 1 || atomic_load(&r->busy) != RS_SUBMITTERS - 1 ||
            atomic_load(&r->other) || atomic_load(&r->g.ran) != i + 1) {
            if (bad++ < 5)
                ch_fail_at(__FILE__, __LINE__,
                           "round %ld: %d submits OK, %d EBUSY, %d other; "
                           "%d runs in all, expected %ld",
                           i, ok, atomic_load(&r->busy), atomic_load(&r->other),
                           atomic_load(&r->g.ran), i + 1);
            break;
        }
    }
    CH_ASSERT_EQ(bad, 0);
    atomic_store(&r->stop, 1);
    atomic_store(&r->g.gate, 1);
    for (int i = 0; i < RS_ULTS; i++)
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
    for (int i = 0; i < RS_EXTS; i++)
        ch_ext_join(&e[i]);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    free(r);
    ch_finalize();
}

/* ======================================================================= */
/* cancel                                                                   */
/* ======================================================================= */

static void t_cancel_queued(void)
{
    int p[2];
    make_pipe(p);
    /* one service thread that never grows */
    svc_init(NSTREAMS, 1, 1);

    /* A holds the only service thread */
    blocker_t a = {.fd = p[0]};
    coexec_request_t ra;
    memset(&ra, 0, sizeof ra);
    CH_ASSERT_OK_FATAL(coexec_request_submit(&ra, block_read_fn, &a));
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&a.started)));
    /* a running request cannot be cancelled */
    CH_ASSERT_RC(coexec_request_cancel(&ra), COEXEC_EBUSY);

    atomic_int ran = 0;
    /* B: queued, cancelled, then waited for */
    coexec_request_t rb;
    memset(&rb, 0, sizeof rb);
    CH_ASSERT_OK(coexec_request_submit(&rb, count_fn, &ran));
    CH_ASSERT_RC(coexec_request_cancel(&rb), COEXEC_OK);
    CH_ASSERT_RC(coexec_request_cancel(&rb), COEXEC_EBUSY);
    intptr_t ret = 1234;
    CH_ASSERT_RC(coexec_request_wait(&rb, &ret), COEXEC_ECANCELED);

    /* C: a ULT on stream 1 parks in request_wait; the cancel releases it */
    coexec_request_t rc_;
    memset(&rc_, 0, sizeof rc_);
    CH_ASSERT_OK(coexec_request_submit(&rc_, count_fn, &ran));
    waiter_t wc = {.req = &rc_, .rc = 1};
    coexec_thread_t tc;
    ch_spawn_on(1, waiter_job, &wc, &tc);
    CH_WAIT(ch_thread_state(tc) == COEXEC_UNIT_BLOCKED);

    /* D: a tasklet on stream 2 polls it (PENDING) */
    coexec_request_t rd;
    memset(&rd, 0, sizeof rd);
    CH_ASSERT_OK(coexec_request_submit(&rd, count_fn, &ran));
    poller_t pd = {.req = &rd, .final_rc = -99999};
    coexec_tasklet_t kd;
    CH_ASSERT_OK(coexec_tasklet_create_on(ch_xstream(2), poller_body, &pd, &kd));
    CH_WAIT(atomic_load(&pd.pending_seen));

    /* E: an external thread sleeps in request_wait */
    coexec_request_t re;
    memset(&re, 0, sizeof re);
    CH_ASSERT_OK(coexec_request_submit(&re, count_fn, &ran));
    waiter_t we = {.req = &re, .rc = 1};
    ch_ext_t e;
    ch_ext_start(&e, waiter_job, &we);
    CH_WAIT(atomic_load(&we.waiting));
    ch_linger(5);

    /* F: queued behind them all, left alone */
    coexec_request_t rf;
    memset(&rf, 0, sizeof rf);
    CH_ASSERT_OK(coexec_request_submit(&rf, ret_arg_fn, (void *)(intptr_t)66));

    CH_ASSERT_EQ(atomic_load(&wc.waiting), 1);
    /* Not done (its stuck-call timer may have it running for a moment). */
    CU_ASSERT(ch_thread_state(tc) != COEXEC_UNIT_TERMINATED);
    CH_ASSERT_EQ(wc.rc, 1);
    CH_ASSERT_EQ(atomic_load(&pd.done), 0);
    CH_ASSERT_EQ(atomic_load(&e.done), 0);

    CH_ASSERT_RC(coexec_request_cancel(&rc_), COEXEC_OK);
    CH_ASSERT_RC(coexec_request_cancel(&rd), COEXEC_OK);
    CH_ASSERT_RC(coexec_request_cancel(&re), COEXEC_OK);
    CH_ASSERT_OK(coexec_thread_free(&tc));
    CH_ASSERT_RC(wc.rc, COEXEC_ECANCELED);
    CH_WAIT(atomic_load(&pd.done));
    CH_ASSERT_OK(coexec_tasklet_free(&kd));
    CH_ASSERT_RC(pd.final_rc, COEXEC_ECANCELED);
    ch_ext_join(&e);
    CH_ASSERT_RC(we.rc, COEXEC_ECANCELED);

    /* A is still running: nothing was written to its pipe */
    CH_ASSERT_EQ(atomic_load(&a.finished), 0);
    CH_ASSERT_RC(coexec_request_cancel(&ra), COEXEC_EBUSY);
    poke(p[1], 'A');
    ret = 0;
    CH_ASSERT_RC(coexec_request_wait(&ra, &ret), COEXEC_OK);
    CH_ASSERT_EQ(ret, 'A');
    CH_ASSERT_RC(coexec_request_cancel(&ra), COEXEC_EBUSY);
    ret = 0;
    CH_ASSERT_RC(coexec_request_wait(&rf, &ret), COEXEC_OK);
    CH_ASSERT_EQ(ret, 66);
    CH_ASSERT_RC(coexec_request_cancel(&rf), COEXEC_EBUSY);

    /* the cancelled functions never ran, and the service still works */
    intptr_t v = 0;
    CH_ASSERT_OK(coexec_offload(ret_arg_fn, (void *)(intptr_t)8, &v));
    CH_ASSERT_EQ(v, 8);
    CH_ASSERT_EQ(atomic_load(&ran), 0);
    ch_finalize();
    close_pipe(p);
}

/* Many requests behind a blocked one, every other one cancelled. */
static void t_cancel_many(void)
{
    int p[2];
    make_pipe(p);
    svc_init(NSTREAMS, 1, 1);
    blocker_t a = {.fd = p[0]};
    coexec_request_t ra;
    memset(&ra, 0, sizeof ra);
    CH_ASSERT_OK_FATAL(coexec_request_submit(&ra, block_read_fn, &a));
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&a.started)));

    long n = ch_iters(500, 10);
    coexec_request_t *r = calloc((size_t)n, sizeof *r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    atomic_int ran = 0;
    for (long i = 0; i < n; i++)
        CH_CHECK_RC(coexec_request_submit(&r[i], count_fn, &ran), COEXEC_OK);
    long cancelled = 0;
    for (long i = 0; i < n; i += 2) {
        int rc = coexec_request_cancel(&r[i]);
        CH_CHECK_RC(rc, COEXEC_OK);
        cancelled += rc == COEXEC_OK;
    }
    poke(p[1], 1);
    intptr_t ret = 0;
    CH_ASSERT_OK(coexec_request_wait(&ra, &ret));
    CH_ASSERT_EQ(ret, 1);
    long okc = 0, canc = 0;
    for (long i = 0; i < n; i++) {
        ret = -1;
        int rc = coexec_request_wait(&r[i], &ret);
        if (i % 2 == 0) {
            CH_CHECK_RC(rc, COEXEC_ECANCELED);
            canc += rc == COEXEC_ECANCELED;
        } else {
            CH_CHECK_RC(rc, COEXEC_OK);
            CH_CHECK_EQ(ret, 5);
            okc += rc == COEXEC_OK;
        }
    }
    CH_ASSERT_EQ(cancelled, (n + 1) / 2);
    CH_ASSERT_EQ(canc, (n + 1) / 2);
    CH_ASSERT_EQ(okc, n / 2);
    CH_ASSERT_EQ(atomic_load(&ran), n / 2);
    free(r);
    ch_finalize();
    close_pipe(p);
}

/* ======================================================================= */

const ch_test_t service_request_tests[] = {
    {"tasklet_pending_then_ready", t_request_tasklet_pending_then_ready},
    {"many_tasklets", t_request_many_tasklets},
    {"wait", t_request_wait},
    {"args", t_request_args},
    {"resubmit_busy", t_request_resubmit_busy},
    {NULL, NULL}};
const ch_test_t service_cancel_tests[] = {
    {"queued", t_cancel_queued},
    {"many", t_cancel_many},
    {NULL, NULL}};
