/*
 * tests/service/test_offload.c: the offload suite: coexec_offload from ULTs on
 * 4 streams, the main ULT and an external thread (fn runs on a thread that
 * is no xstream's, results and -errno results come back unchanged); fn
 * NULL, tasklets, before init; wrappers called inside fn run there; ULTs
 * and external threads offloading at once
 */
#include "service_test.h"

/* What an offloaded function saw of the thread it ran on. */
typedef struct {
    pthread_t ran_on;
    int caller_kind; /* coexec_self_caller() inside fn */
    int rank_rc;     /* coexec_xstream_self_rank() inside fn */
    intptr_t value;  /* returned */
    atomic_int runs;
} probe_t;

static intptr_t probe_fn(void *arg)
{
    probe_t *p = arg;
    int r;
    p->ran_on = pthread_self();
    p->caller_kind = (int)coexec_self_caller();
    p->rank_rc = coexec_xstream_self_rank(&r);
    atomic_fetch_add(&p->runs, 1);
    return p->value;
}

/*
 * rounds offloads of probe_fn, each checked: it ran once, on a thread that
 * is neither the caller's OS thread (before or after the call) nor any
 * xstream, and its value (alternately a result and a -errno) came back.
 */
typedef struct {
    int rounds;
    int base;
    int is_ult;
    atomic_int calls_ok;
} probe_job_t;

static void probe_job(void *arg)
{
    probe_job_t *j = arg;
    for (int i = 0; i < j->rounds; i++) {
        probe_t p;
        memset(&p, 0, sizeof p);
        atomic_init(&p.runs, 0);
        p.caller_kind = -1;
        p.value = (i % 3 == 2) ? -(intptr_t)(ENOSPC + (i % 5))
                               : (intptr_t)j->base * 1000 + i;
        pthread_t before = pthread_self();
        intptr_t ret = -4242;
        int rc = coexec_offload(probe_fn, &p, &ret);
        pthread_t after = pthread_self();
        CH_CHECK_RC(rc, COEXEC_OK);
        if (rc != COEXEC_OK)
            return;
        CH_CHECK_EQ(ret, p.value);
        CH_CHECK_EQ(atomic_load(&p.runs), 1);
        CH_CHECK(!pthread_equal(p.ran_on, before));
        CH_CHECK(!pthread_equal(p.ran_on, after));
        CH_CHECK_EQ(p.caller_kind, COEXEC_CALLER_EXTERNAL);
        CH_CHECK_RC(p.rank_rc, COEXEC_ECONTEXT);
        if (j->is_ult)
            CH_CHECK_EQ(coexec_self_caller(), COEXEC_CALLER_ULT);
        else
            CH_CHECK_EQ(coexec_self_caller(), COEXEC_CALLER_EXTERNAL);
        /* ret may be NULL */
        memset(&p, 0, sizeof p);
        p.value = 77;
        CH_CHECK_RC(coexec_offload(probe_fn, &p, NULL), COEXEC_OK);
        CH_CHECK_EQ(atomic_load(&p.runs), 1);
        atomic_fetch_add(&j->calls_ok, 1);
    }
}

static void t_offload_ults(void)
{
    svc_init(NSTREAMS, 0, 0);
    int per = (int)ch_iters(8, 2);
    int n = per * NSTREAMS;
    probe_job_t *jobs = calloc((size_t)n, sizeof *jobs);
    coexec_thread_t *t = calloc((size_t)n, sizeof *t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(jobs);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    int rounds = (int)ch_iters(40, 3);
    for (int i = 0; i < n; i++) {
        jobs[i].rounds = rounds;
        jobs[i].base = i;
        jobs[i].is_ult = 1;
        ch_spawn_on(i % NSTREAMS, probe_job, &jobs[i], &t[i]);
    }
    /* the main ULT offloads meanwhile */
    probe_job_t mainjob = {.rounds = rounds, .base = n, .is_ult = 1};
    probe_job(&mainjob);
    ch_free_threads(t, n);
    for (int i = 0; i < n; i++)
        CH_ASSERT_EQ(atomic_load(&jobs[i].calls_ok), rounds);
    CH_ASSERT_EQ(atomic_load(&mainjob.calls_ok), rounds);
    free(jobs);
    free(t);
    ch_finalize();
}

static void t_offload_main_and_external(void)
{
    svc_init(NSTREAMS, 0, 0);
    int rounds = (int)ch_iters(50, 3);
    probe_job_t mainjob = {.rounds = rounds, .base = 1, .is_ult = 1};
    probe_job(&mainjob);
    CH_ASSERT_EQ(atomic_load(&mainjob.calls_ok), rounds);

    /* external threads, two at once */
    probe_job_t ej[2] = {{.rounds = rounds, .base = 2, .is_ult = 0},
                         {.rounds = rounds, .base = 3, .is_ult = 0}};
    ch_ext_t e[2];
    ch_ext_start(&e[0], probe_job, &ej[0]);
    ch_ext_start(&e[1], probe_job, &ej[1]);
    ch_ext_join(&e[0]);
    ch_ext_join(&e[1]);
    CH_ASSERT_EQ(atomic_load(&ej[0].calls_ok), rounds);
    CH_ASSERT_EQ(atomic_load(&ej[1].calls_ok), rounds);

    /* extreme results come back unchanged */
    intptr_t ret = 0;
    CH_ASSERT_OK(coexec_offload(ret_arg_fn, (void *)INTPTR_MAX, &ret));
    CH_ASSERT_EQ(ret, INTPTR_MAX);
    CH_ASSERT_OK(coexec_offload(ret_arg_fn, (void *)(intptr_t)-4095, &ret));
    CH_ASSERT_EQ(ret, -4095);
    CH_ASSERT_OK(coexec_offload(ret_arg_fn, (void *)(intptr_t)0, &ret));
    CH_ASSERT_EQ(ret, 0);
    ch_finalize();
}

/* Offloads from ULTs on every stream and 6 external threads at once. */
typedef struct {
    int rounds;
    long base;
    atomic_long ok;
} burst_t;

static void burst_job(void *arg)
{
    burst_t *b = arg;
    for (int i = 0; i < b->rounds; i++) {
        intptr_t want = b->base + i, ret = -1;
        int rc = coexec_offload(ret_arg_fn, (void *)want, &ret);
        if (rc != COEXEC_OK || ret != want) {
            ch_fail_at(__FILE__, __LINE__, "offload %ld: %s, ret %ld",
                       (long)want, coexec_err_name(rc), (long)ret);
            return;
        }
        atomic_fetch_add(&b->ok, 1);
    }
}

static void t_offload_many_callers(void)
{
    enum { NEXT = 6 };
    svc_init(NSTREAMS, 0, 0);
    uint64_t c0 = svc_completed();
    int nult = (int)ch_iters(64, 8);
    int rounds = (int)ch_iters(200, 10);
    burst_t *b = calloc((size_t)(nult + NEXT), sizeof *b);
    coexec_thread_t *t = calloc((size_t)nult, sizeof *t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (int i = 0; i < nult + NEXT; i++) {
        b[i].rounds = rounds;
        b[i].base = 1000000L * (i + 1);
    }
    ch_ext_t e[NEXT];
    for (int i = 0; i < NEXT; i++)
        ch_ext_start(&e[i], burst_job, &b[nult + i]);
    for (int i = 0; i < nult; i++)
        ch_spawn_on(i % NSTREAMS, burst_job, &b[i], &t[i]);
    ch_free_threads(t, nult);
    for (int i = 0; i < NEXT; i++)
        ch_ext_join(&e[i]);
    long ok = 0;
    for (int i = 0; i < nult + NEXT; i++)
        ok += atomic_load(&b[i].ok);
    CH_ASSERT_EQ(ok, (long)(nult + NEXT) * rounds);
    CU_ASSERT(CH_WAIT(svc_completed() - c0 >= (uint64_t)ok));
    free(b);
    free(t);
    ch_finalize();
}

typedef struct {
    int rc_null_fn;
    int rc_offload;
    int rc_wait;
    atomic_int runs;
} tk_ctx_t;

static void tasklet_offload_body(void *arg)
{
    tk_ctx_t *c = arg;
    c->rc_offload = coexec_offload(count_fn, &c->runs, NULL);
}

static void null_fn_body(void *arg)
{
    tk_ctx_t *c = arg;
    intptr_t ret = 99;
    c->rc_null_fn = coexec_offload(NULL, NULL, &ret);
    CH_CHECK_EQ(ret, 99);
}

static void t_offload_errors(void)
{
    /* before init */
    atomic_int runs = 0;
    intptr_t ret = 11;
    CH_ASSERT_RC(coexec_offload(count_fn, &runs, &ret), COEXEC_ENOTINIT);
    CH_ASSERT_EQ(ret, 11);
    coexec_request_t req;
    memset(&req, 0, sizeof req);
    CH_ASSERT_RC(coexec_request_submit(&req, count_fn, &runs), COEXEC_ENOTINIT);
    coexec_service_info_t info = {.size = sizeof info};
    CH_ASSERT_RC(coexec_service_get_info(&info), COEXEC_ENOTINIT);

    svc_init(NSTREAMS, 0, 0);
    /* fn NULL: from the main ULT, a ULT elsewhere, an external thread */
    CH_ASSERT_RC(coexec_offload(NULL, NULL, &ret), COEXEC_EINVAL);
    CH_ASSERT_EQ(ret, 11);
    tk_ctx_t c;
    memset(&c, 0, sizeof c);
    CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(2), null_fn_body, &c));
    CH_ASSERT_RC(c.rc_null_fn, COEXEC_EINVAL);
    c.rc_null_fn = 0;
    ch_run_external(null_fn_body, &c);
    CH_ASSERT_RC(c.rc_null_fn, COEXEC_EINVAL);

    /* from a tasklet: COEXEC_ECONTEXT, and fn never runs */
    for (int r = 0; r < NSTREAMS; r++) {
        c.rc_offload = 1;
        CH_ASSERT_OK(ch_run_tasklet_in(ch_main_pool(r), tasklet_offload_body,
                                       &c));
        CH_ASSERT_RC(c.rc_offload, COEXEC_ECONTEXT);
    }
    ch_linger(5);
    CH_ASSERT_EQ(atomic_load(&c.runs), 0);
    CH_ASSERT_EQ(atomic_load(&runs), 0);
    ch_finalize();

    /* after finalize */
    CH_ASSERT_RC(coexec_offload(count_fn, &runs, &ret), COEXEC_ENOTINIT);
    CH_ASSERT_EQ(atomic_load(&runs), 0);
}

/*
 * With one service thread and no growth, a function that calls the
 * wrappers must have them run directly on its own thread: were they
 * offloaded again they would wait for the thread they occupy.
 */
typedef struct {
    const char *dir;
    int wfd, rfd;
    long stat_rc, write_rc, read_rc;
    unsigned char got;
    int caller;
} inner_t;

static intptr_t inner_fn(void *arg)
{
    inner_t *in = arg;
    struct stat st;
    in->caller = (int)coexec_self_caller();
    in->stat_rc = coexec_stat(in->dir, &st);
    in->write_rc = coexec_write(in->wfd, "q", 1);
    in->read_rc = coexec_read(in->rfd, &in->got, 1);
    return S_ISDIR(st.st_mode) ? 1 : 0;
}

typedef struct {
    inner_t *in;
    int rc;
    intptr_t ret;
} inner_call_t;

static void inner_caller(void *arg)
{
    inner_call_t *c = arg;
    c->rc = coexec_offload(inner_fn, c->in, &c->ret);
}

static void t_offload_wrappers_inside(void)
{
    char dir[64];
    tmpdir_make(dir);
    int p[2];
    make_pipe(p);
    svc_init(2, 1, 1);
    inner_t in = {.dir = dir, .wfd = p[1], .rfd = p[0], .caller = -1};
    inner_call_t c = {.in = &in, .rc = 1};
    /* from a ULT on stream 1, then from an external thread */
    CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(1), inner_caller, &c));
    CH_ASSERT_RC(c.rc, COEXEC_OK);
    CH_ASSERT_EQ(c.ret, 1);
    CH_ASSERT_EQ(in.stat_rc, 0);
    CH_ASSERT_EQ(in.write_rc, 1);
    CH_ASSERT_EQ(in.read_rc, 1);
    CH_ASSERT_EQ(in.got, 'q');
    CH_ASSERT_EQ(in.caller, COEXEC_CALLER_EXTERNAL);
    memset(&in.stat_rc, 0, sizeof in.stat_rc);
    in.got = 0;
    c.rc = 1;
    ch_run_external(inner_caller, &c);
    CH_ASSERT_RC(c.rc, COEXEC_OK);
    CH_ASSERT_EQ(c.ret, 1);
    CH_ASSERT_EQ(in.got, 'q');
    ch_finalize();
    close_pipe(p);
    tmpdir_remove(dir);
}

/* ======================================================================= */

const ch_test_t service_offload_tests[] = {
    {"ults_on_every_stream", t_offload_ults},
    {"main_and_external", t_offload_main_and_external},
    {"errors", t_offload_errors},
    {"wrappers_inside_fn", t_offload_wrappers_inside},
    {"many_callers", t_offload_many_callers},
    {NULL, NULL}};
