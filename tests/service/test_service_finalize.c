/*
 * tests/service/test_service_finalize.c: the finalize suite: finalize
 * while an external thread's call runs and ULTs, a tasklet and a request
 * waiter wait for queued calls: every waiter gets its result,
 * COEXEC_ECANCELED or COEXEC_ECLOSED; ENOTINIT afterwards; a new init has a
 * working service; finalize returns although a tasklet's submit left an
 * expired check on the primary's timers
 */
#include "service_test.h"

#define FIN_MAX 64

typedef struct {
    int idx;
    int rc;
    intptr_t ret;
    atomic_int entered;
    atomic_int done;
} fin_ult_t;

static fin_ult_t g_fin[FIN_MAX];
static coexec_request_t g_fin_req, g_fin_treq;
static waiter_t g_fin_waiter;
static atomic_int g_fin_waiter_done;
static poller_t g_fin_poller;

static void fin_ult(void *arg)
{
    fin_ult_t *f = arg;
    atomic_store(&f->entered, 1);
    intptr_t r = -1;
    f->rc = coexec_offload(ret_arg_fn, (void *)(intptr_t)(f->idx + 100), &r);
    f->ret = r;
    atomic_store(&f->done, 1);
}

static void fin_waiter_ult(void *arg)
{
    waiter_job(arg);
    atomic_store(&g_fin_waiter_done, 1);
}

typedef struct {
    sleeper_t s;
    int rc;
    intptr_t ret;
} ext_call_t;

static void ext_sleep_call(void *arg)
{
    ext_call_t *e = arg;
    e->ret = -1;
    e->rc = coexec_offload(sleep_fn, &e->s, &e->ret);
}

/* Offloads until a call fails; every successful one is checked. */
typedef struct {
    atomic_int calls;
    int last_rc;
} looper_t;

static void ext_loop_calls(void *arg)
{
    looper_t *l = arg;
    for (intptr_t k = 1;; k++) {
        intptr_t r = -1;
        int rc = coexec_offload(ret_arg_fn, (void *)k, &r);
        if (rc != COEXEC_OK) {
            l->last_rc = rc;
            return;
        }
        CH_CHECK_EQ(r, k);
        atomic_fetch_add(&l->calls, 1);
    }
}

static bool is_end_rc(int rc)
{
    return rc == COEXEC_ECANCELED || rc == COEXEC_ECLOSED;
}

static void t_finalize_in_flight(void)
{
    /* one service thread, held by the external thread's call */
    svc_init(NSTREAMS, 1, 1);
    ext_call_t ec = {.s = {.us = 150000, .val = 7}, .rc = 1};
    ch_ext_t e;
    ch_ext_start(&e, ext_sleep_call, &ec);
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&ec.s.started)));

    /* queued behind it: ULTs on every stream ... */
    int n = (int)ch_iters(16, 4);
    if (n > FIN_MAX)
        n = FIN_MAX;
    memset(g_fin, 0, sizeof g_fin);
    for (int i = 0; i < n; i++) {
        g_fin[i].idx = i;
        g_fin[i].rc = 1;
        CH_ASSERT_OK(coexec_thread_create_on(ch_xstream(i % NSTREAMS), fin_ult,
                                             &g_fin[i], NULL, NULL));
    }
    /* ... a ULT waiting for a submitted request ... */
    memset(&g_fin_req, 0, sizeof g_fin_req);
    CH_ASSERT_OK(coexec_request_submit(&g_fin_req, ret_arg_fn,
                                       (void *)(intptr_t)55));
    memset(&g_fin_waiter, 0, sizeof g_fin_waiter);
    g_fin_waiter.req = &g_fin_req;
    g_fin_waiter.rc = 1;
    atomic_store(&g_fin_waiter_done, 0);
    CH_ASSERT_OK(coexec_thread_create_on(ch_xstream(1), fin_waiter_ult,
                                         &g_fin_waiter, NULL, NULL));
    /* ... a tasklet polling one ... */
    memset(&g_fin_treq, 0, sizeof g_fin_treq);
    CH_ASSERT_OK(coexec_request_submit(&g_fin_treq, ret_arg_fn,
                                       (void *)(intptr_t)56));
    memset(&g_fin_poller, 0, sizeof g_fin_poller);
    g_fin_poller.req = &g_fin_treq;
    g_fin_poller.final_rc = -99999;
    CH_ASSERT_OK(coexec_tasklet_create_on(ch_xstream(2), poller_body,
                                          &g_fin_poller, NULL));
    /* ... and another external thread calling in a loop */
    looper_t lp = {.last_rc = 1};
    ch_ext_t f;
    ch_ext_start(&f, ext_loop_calls, &lp);

    for (int i = 0; i < n; i++)
        CH_WAIT(atomic_load(&g_fin[i].entered));
    CH_WAIT(atomic_load(&g_fin_waiter.waiting));
    /* The poller may first run after the external call has ended and its
     * request has completed (a slow run: valgrind beside another test). */
    CH_WAIT(atomic_load(&g_fin_poller.pending_seen) ||
            atomic_load(&g_fin_poller.done));
    ch_linger(2);

    CH_ASSERT_RC(coexec_finalize(), COEXEC_OK);

    ch_ext_join(&e);
    ch_ext_join(&f);
    /* it had started before finalize began: it ran to its end */
    CH_ASSERT_RC(ec.rc, COEXEC_OK);
    CH_ASSERT_EQ(ec.ret, 7);
    int got_result = 0, got_end = 0;
    for (int i = 0; i < n; i++) {
        CH_ASSERT_EQ(atomic_load(&g_fin[i].done), 1);
        if (g_fin[i].rc == COEXEC_OK) {
            CH_ASSERT_EQ(g_fin[i].ret, i + 100);
            got_result++;
        } else {
            if (!is_end_rc(g_fin[i].rc))
                CH_ASSERT_RC(g_fin[i].rc, COEXEC_ECANCELED);
            got_end++;
        }
    }
    CH_ASSERT_EQ(got_result + got_end, n);
    CH_ASSERT_EQ(atomic_load(&g_fin_waiter_done), 1);
    if (g_fin_waiter.rc == COEXEC_OK)
        CH_ASSERT_EQ(g_fin_waiter.ret, 55);
    else
        CH_ASSERT_RC(g_fin_waiter.rc, COEXEC_ECANCELED);
    CH_ASSERT_EQ(atomic_load(&g_fin_poller.done), 1);
    if (g_fin_poller.final_rc != COEXEC_READY)
        CH_ASSERT_RC(g_fin_poller.final_rc, COEXEC_ECANCELED);
    if (lp.last_rc != COEXEC_ENOTINIT && !is_end_rc(lp.last_rc))
        CH_ASSERT_RC(lp.last_rc, COEXEC_ECLOSED);
    printf("\n    %d results, %d cancelled/closed; looper made %d calls, "
           "then %s\n",
           got_result, got_end, atomic_load(&lp.calls),
           coexec_err_name(lp.last_rc));

    /* afterwards */
    intptr_t ret = 3;
    CH_ASSERT_RC(coexec_offload(ret_arg_fn, NULL, &ret), COEXEC_ENOTINIT);
    CH_ASSERT_EQ(ret, 3);
    coexec_request_t req;
    memset(&req, 0, sizeof req);
    CH_ASSERT_RC(coexec_request_submit(&req, ret_arg_fn, NULL),
                 COEXEC_ENOTINIT);
    coexec_service_info_t info = {.size = sizeof info};
    CH_ASSERT_RC(coexec_service_get_info(&info), COEXEC_ENOTINIT);
    struct stat st;
    CH_ASSERT_EQ(coexec_stat("/", &st), 0);

    /* a new runtime has a new service */
    svc_init(2, 0, 0);
    CH_ASSERT_OK(coexec_offload(ret_arg_fn, (void *)(intptr_t)9, &ret));
    CH_ASSERT_EQ(ret, 9);
    /* (a call queued while the worker wakes may start extra threads,
     * which leave when idle) */
    CU_ASSERT(CH_WAIT(svc_info().threads == 1));
    ch_finalize();
}

/* finalize with nothing queued but a call running on a ULT's behalf */
static void t_finalize_running_ult_call(void)
{
    svc_init(NSTREAMS, 0, 0);
    static ext_call_t uc;
    memset(&uc, 0, sizeof uc);
    uc.s.us = 60000;
    uc.s.val = 17;
    uc.rc = 1;
    coexec_thread_t t;
    ch_spawn_on(3, ext_sleep_call, &uc, &t);
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&uc.s.started)));
    /* join: the ULT's result is there when finalize begins afterwards */
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(uc.rc, COEXEC_OK);
    CH_ASSERT_EQ(uc.ret, 17);
    /* and a detached one still waiting when finalize begins */
    memset(&uc, 0, sizeof uc);
    uc.s.us = 60000;
    uc.s.val = 18;
    uc.rc = 1;
    CH_ASSERT_OK(coexec_thread_create_on(ch_xstream(2), ext_sleep_call, &uc,
                                         NULL, NULL));
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&uc.s.started)));
    CH_ASSERT_RC(coexec_finalize(), COEXEC_OK);
    CH_ASSERT_RC(uc.rc, COEXEC_OK);
    CH_ASSERT_EQ(uc.ret, 18);
}

/*
 * A tasklet's submit while no service thread is idle leaves a check for
 * stuck requests on its stream's timers. Here the tasklet runs on the
 * primary (posted there), and the primary does not reach its scheduler
 * again before finalize, so the check's deadline has passed when finalize
 * looks at the primary's timers: finalize must still fire it and return.
 * (A hang here is the failure; ctest's TIMEOUT reports it.)
 */
static coexec_request_t g_post_req;
static atomic_int g_post_ran;
static atomic_int g_post_count;
static int g_post_rc;

static coexec_poll_status_t post_submit_body(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    g_post_rc = coexec_request_submit(&g_post_req, count_fn, &g_post_count);
    atomic_store(&g_post_ran, 1);
    return COEXEC_READY;
}

static void t_finalize_after_tasklet_submit(void)
{
    int p[2];
    make_pipe(p);
    /* one stream: finalize goes straight to the primary's timers */
    svc_init(1, 1, 1);
    /* the only service thread is busy: nothing is idle */
    blocker_t b = {.fd = p[0]};
    coexec_request_t rb;
    memset(&rb, 0, sizeof rb);
    CH_ASSERT_OK_FATAL(coexec_request_submit(&rb, block_read_fn, &b));
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&b.started)));
    memset(&g_post_req, 0, sizeof g_post_req);
    atomic_store(&g_post_ran, 0);
    atomic_store(&g_post_count, 0);
    g_post_rc = 1;
    CH_ASSERT_OK_FATAL(coexec_xstream_post(ch_xstream(0), post_submit_body, NULL));
    CH_WAIT(atomic_load(&g_post_ran));
    CH_ASSERT_RC(g_post_rc, COEXEC_OK);
    /* release the service without going back to the primary's scheduler,
     * and let the check's deadline (200 us) pass */
    poke(p[1], 1);
    double t0 = ch_now();
    while (!atomic_load(&b.finished) || ch_now() - t0 < 0.005) {
        if (ch_now() - t0 > CH_WAIT_LIMIT_S)
            break;
        sched_yield();
    }
    CH_ASSERT_EQ(atomic_load(&b.finished), 1);
    CH_ASSERT_RC(coexec_finalize(), COEXEC_OK);
    /* the tasklet's request ran or was cancelled at finalize */
    CU_ASSERT(atomic_load(&g_post_count) <= 1);
    close_pipe(p);
}

/* ======================================================================= */

const ch_test_t service_finalize_tests[] = {
    {"in_flight", t_finalize_in_flight},
    {"running_ult_call", t_finalize_running_ult_call},
    {"after_tasklet_submit", t_finalize_after_tasklet_submit},
    {NULL, NULL}};
