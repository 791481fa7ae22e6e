/*
 * tests/service/test_service.c: the service stream (coexec/service.h):
 * offloaded calls, the submit/poll/wait/cancel requests, and the POSIX
 * calls run through it.
 *
 *   offload   coexec_offload from ULTs on 4 streams, the main ULT and an
 *             external thread: fn runs on a thread that is no xstream's,
 *             results and -errno results come back unchanged; fn NULL,
 *             tasklets, before init; wrappers called inside fn run there;
 *             ULTs and external threads offloading at once
 *   request   submit + poll from tasklets (PENDING, then READY with the
 *             result), wait from a ULT and an external thread, never
 *             submitted (zeroed) requests, NULL arguments
 *   cancel    with one service thread held by a blocked call: queued
 *             requests cancelled (their fn never runs) release a ULT, a
 *             tasklet and an external thread with COEXEC_ECANCELED; a
 *             running or completed request is COEXEC_EBUSY
 *   files     ULTs on 4 streams write, read back byte for byte and remove
 *             a file each through every file wrapper; the same job from an
 *             external thread and without the runtime runs directly
 *   errors    -errno results (EBADF, ENOENT, EEXIST, ESPIPE, EINVAL) from
 *             a ULT, the main ULT, a tasklet, an external thread and
 *             without the runtime; direct calls leave errno alone
 *   stuck     reads blocked on empty pipes do not hold back other calls:
 *             the service grows (never past service_max_threads), the
 *             blocked reads complete once written to, and the service
 *             shrinks back to service_threads when idle; calls of external
 *             threads and tasklets' requests get past a stuck call too
 *   compute   a CPU-bound ULT keeps counting on the stream whose other
 *             ULTs wait for offloaded I/O
 *   finalize  finalize while an external thread's call runs and ULTs, a
 *             tasklet and a request waiter wait for queued calls: every
 *             waiter gets its result, COEXEC_ECANCELED or COEXEC_ECLOSED;
 *             ENOTINIT afterwards; a new init has a working service;
 *             finalize returns although a tasklet's submit left an
 *             expired check on the primary's timers
 *   config    defaults, environment and cfg fields, malformed values
 *             (COEXEC_EENV / COEXEC_EINVAL), coexec_service_get_info
 *   sockets   TCP accept/connect over loopback, poll over a socketpair,
 *             getaddrinfo and its own error codes, ECONNREFUSED
 *
 * Timing never decides a verdict: where a call must be known to be running
 * (so that another one is known to be queued, or the service to have
 * grown), the offloaded function says so itself before it blocks, and what
 * releases it is a write the test makes. The few pauses (linger()) only
 * give a broken implementation the chance to show itself.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <coexec/service.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define NSTREAMS 4

/* ======================================================================= */
/* helpers                                                                  */
/* ======================================================================= */

static coexec_xstream_t xs_rank(int rank)
{
    coexec_xstream_t xs = {0};
    CH_CHECK_RC(coexec_xstream_by_rank(rank, &xs), COEXEC_OK);
    return xs;
}

static coexec_pool_t pool_of_rank(int rank)
{
    coexec_pool_t p = {0};
    CH_CHECK_RC(coexec_xstream_get_main_pool(xs_rank(rank), &p), COEXEC_OK);
    return p;
}

static void spawn_on(int rank, coexec_thread_fn_t fn, void *arg,
                     coexec_thread_t *t)
{
    CH_CHECK_RC(coexec_thread_create_on(xs_rank(rank), fn, arg, NULL, t),
                COEXEC_OK);
}

static void free_threads(coexec_thread_t *t, long n)
{
    for (long i = 0; i < n; i++)
        CH_CHECK_RC(coexec_thread_free(&t[i]), COEXEC_OK);
}

static int thread_state(coexec_thread_t t)
{
    coexec_unit_state_t st;
    int rc = coexec_thread_get_state(t, &st);
    return rc == COEXEC_OK ? (int)st : rc;
}

static int self_rank(void)
{
    int r = -1;
    if (coexec_xstream_self_rank(&r) != COEXEC_OK)
        return -1;
    return r;
}

/* Only gives a broken implementation time to misbehave; never a verdict. */
static void linger(double ms)
{
    double t0 = ch_now();
    while ((ch_now() - t0) * 1e3 < ms)
        ch_relax();
}

/*
 * Starts the runtime with nxs streams; threads / max_threads > 0 set
 * service_threads / service_max_threads.
 */
/* The file I/O path svc_init asks for; a test that changes it puts the
 * default back. */
static coexec_service_io_t g_io = COEXEC_SERVICE_IO_AUTO;

static void svc_init(int nxs, int threads, int max_threads)
{
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = nxs;
    cfg.service_io = g_io;
    if (threads > 0)
        cfg.service_threads = threads;
    if (max_threads > 0)
        cfg.service_max_threads = max_threads;
    int rc = coexec_init(&cfg);
    if (rc != COEXEC_OK)
        fprintf(stderr, "    coexec_init: %s\n", coexec_init_error());
    CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
}

static coexec_service_info_t svc_info(void)
{
    coexec_service_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    CH_CHECK_RC(coexec_service_get_info(&info), COEXEC_OK);
    return info;
}

static uint64_t svc_completed(void) { return svc_info().completed; }

/* 1 when a runtime started with service_io auto carries file I/O through
 * io_uring on this machine and build (asked once). */
static int uring_available(void)
{
    static int avail = -1;
    if (avail < 0) {
        coexec_config_t cfg;
        CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
        cfg.service_io = COEXEC_SERVICE_IO_AUTO;
        CH_ASSERT_OK_FATAL(coexec_init(&cfg));
        coexec_service_info_t info = svc_info();
        avail = info.io_path && strcmp(info.io_path, "io_uring") == 0;
        ch_finalize();
    }
    return avail;
}

/* For the io_uring variants: false (after saying so) when io_uring cannot
 * be had here, and the test passes without running. */
static bool uring_or_skip(void)
{
    if (uring_available())
        return true;
    printf("\n    skipped: io_uring is unavailable here (built without "
           "liburing, or the kernel refuses it); the thread path is "
           "tested by the *_threads variant\n");
    return false;
}

/* A fresh directory under /tmp; its path is written into dir (>= 64). */
static void tmpdir_make(char *dir)
{
    strcpy(dir, "/tmp/coexec-svc-XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
}

static int rm_entry(const char *p, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(p);
    return 0;
}

static void tmpdir_remove(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A helper pthread running fn(arg) with a done flag. */
typedef struct {
    ch_pthread_t th;
    void (*fn)(void *);
    void *arg;
    atomic_int done;
} ext_t;

static void *ext_body(void *p)
{
    ext_t *e = p;
    e->fn(e->arg);
    atomic_store(&e->done, 1);
    return NULL;
}

static void ext_start(ext_t *e, void (*fn)(void *), void *arg)
{
    e->fn = fn;
    e->arg = arg;
    atomic_init(&e->done, 0);
    ch_pthread_start(&e->th, ext_body, e);
}

static void ext_join(ext_t *e) { ch_pthread_join(&e->th); }

/* Runs fn(arg) on a helper pthread and waits for it. */
static void run_external(void (*fn)(void *), void *arg)
{
    ext_t e;
    ext_start(&e, fn, arg);
    ext_join(&e);
}

/* ---- offloaded functions ---------------------------------------------- */

/* Returns its argument as the result. */
static intptr_t ret_arg_fn(void *arg) { return (intptr_t)arg; }

/* Counts its runs in *arg and returns 5. */
static intptr_t count_fn(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    return 5;
}

/*
 * Says it started, then reads one byte from a pipe: blocks a service
 * thread until the test writes. Returns the byte, or -errno.
 */
typedef struct {
    int fd;
    atomic_int started;
    atomic_int finished;
} blocker_t;

static intptr_t block_read_fn(void *arg)
{
    blocker_t *b = arg;
    atomic_store(&b->started, 1);
    unsigned char c = 0;
    ssize_t n = read(b->fd, &c, 1);
    intptr_t r = n == 1 ? (intptr_t)c : n == 0 ? -EPIPE : -errno;
    atomic_store(&b->finished, 1);
    return r;
}

/* Says it started, sleeps us microseconds, returns val. */
typedef struct {
    atomic_int started;
    useconds_t us;
    intptr_t val;
} sleeper_t;

static intptr_t sleep_fn(void *arg)
{
    sleeper_t *s = arg;
    atomic_store(&s->started, 1);
    usleep(s->us);
    return s->val;
}

static void make_pipe(int p[2])
{
    CU_ASSERT_EQUAL_FATAL(pipe2(p, O_CLOEXEC), 0);
}

static void close_pipe(int p[2])
{
    close(p[0]);
    close(p[1]);
}

/* A plain write of one byte (never offloaded). */
static void poke(int fd, unsigned char c)
{
    CH_CHECK_EQ(write(fd, &c, 1), 1);
}

/* ======================================================================= */
/* offload                                                                  */
/* ======================================================================= */

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
        spawn_on(i % NSTREAMS, probe_job, &jobs[i], &t[i]);
    }
    /* the main ULT offloads meanwhile */
    probe_job_t mainjob = {.rounds = rounds, .base = n, .is_ult = 1};
    probe_job(&mainjob);
    free_threads(t, n);
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
    ext_t e[2];
    ext_start(&e[0], probe_job, &ej[0]);
    ext_start(&e[1], probe_job, &ej[1]);
    ext_join(&e[0]);
    ext_join(&e[1]);
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
    ext_t e[NEXT];
    for (int i = 0; i < NEXT; i++)
        ext_start(&e[i], burst_job, &b[nult + i]);
    for (int i = 0; i < nult; i++)
        spawn_on(i % NSTREAMS, burst_job, &b[i], &t[i]);
    free_threads(t, nult);
    for (int i = 0; i < NEXT; i++)
        ext_join(&e[i]);
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
    CH_ASSERT_OK(ch_run_ult_in(pool_of_rank(2), null_fn_body, &c));
    CH_ASSERT_RC(c.rc_null_fn, COEXEC_EINVAL);
    c.rc_null_fn = 0;
    run_external(null_fn_body, &c);
    CH_ASSERT_RC(c.rc_null_fn, COEXEC_EINVAL);

    /* from a tasklet: COEXEC_ECONTEXT, and fn never runs */
    for (int r = 0; r < NSTREAMS; r++) {
        c.rc_offload = 1;
        CH_ASSERT_OK(ch_run_tasklet_in(pool_of_rank(r), tasklet_offload_body,
                                       &c));
        CH_ASSERT_RC(c.rc_offload, COEXEC_ECONTEXT);
    }
    linger(5);
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
    CH_ASSERT_OK(ch_run_ult_in(pool_of_rank(1), inner_caller, &c));
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
    run_external(inner_caller, &c);
    CH_ASSERT_RC(c.rc, COEXEC_OK);
    CH_ASSERT_EQ(c.ret, 1);
    CH_ASSERT_EQ(in.got, 'q');
    ch_finalize();
    close_pipe(p);
    tmpdir_remove(dir);
}

/* ======================================================================= */
/* request                                                                  */
/* ======================================================================= */

typedef struct {
    coexec_request_t req;
    coexec_offload_fn_t fn;
    void *fnarg;
    int submitted;
    int polls;
    int first_rc;
    int final_rc;
    int zero_poll_rc;
    int wait_rc;
    intptr_t ret;
    atomic_int pending_seen;
    atomic_int done;
} tkreq_t;

/* Submits on its first poll, then polls the request until it is READY. */
static coexec_poll_status_t tkreq_body(coexec_poll_t *cx, void *arg)
{
    tkreq_t *t = arg;
    if (!t->submitted) {
        int rc = coexec_request_submit(&t->req, t->fn, t->fnarg);
        CH_CHECK_RC(rc, COEXEC_OK);
        t->submitted = 1;
        if (rc != COEXEC_OK) {
            t->final_rc = rc;
            atomic_store(&t->done, 1);
            return COEXEC_READY;
        }
        coexec_request_t zero;
        memset(&zero, 0, sizeof zero);
        t->zero_poll_rc = coexec_request_poll(&zero, cx, NULL);
        t->wait_rc = coexec_request_wait(&t->req, NULL);
    }
    intptr_t r = -12345;
    int rc = coexec_request_poll(&t->req, cx, &r);
    if (t->polls++ == 0)
        t->first_rc = rc;
    if (rc == COEXEC_PENDING) {
        atomic_store(&t->pending_seen, 1);
        return COEXEC_PENDING;
    }
    t->final_rc = rc;
    t->ret = r;
    atomic_store(&t->done, 1);
    return COEXEC_READY;
}

static void tkreq_init(tkreq_t *t, coexec_offload_fn_t fn, void *fnarg)
{
    memset(t, 0, sizeof *t);
    t->fn = fn;
    t->fnarg = fnarg;
    t->first_rc = t->final_rc = -99999;
    atomic_init(&t->pending_seen, 0);
    atomic_init(&t->done, 0);
}

static void t_request_tasklet_pending_then_ready(void)
{
    int p[2];
    make_pipe(p);
    svc_init(NSTREAMS, 0, 0);
    blocker_t b = {.fd = p[0]};
    tkreq_t t;
    tkreq_init(&t, block_read_fn, &b);
    coexec_tasklet_t k;
    CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(xs_rank(1), tkreq_body, &t, &k));
    CH_WAIT(atomic_load(&t.pending_seen));
    /* the call cannot have finished: nothing was written */
    CH_ASSERT_EQ(atomic_load(&t.done), 0);
    CH_ASSERT_EQ(t.first_rc, COEXEC_PENDING);
    CH_ASSERT_RC(t.zero_poll_rc, COEXEC_EHANDLE);
    CH_ASSERT_RC(t.wait_rc, COEXEC_ECONTEXT);
    linger(5);
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
        CH_CHECK_RC(coexec_tasklet_create_on(xs_rank((int)(i % NSTREAMS)),
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

/* Waits for a request somebody else submitted. */
typedef struct {
    coexec_request_t *req;
    int rc;
    intptr_t ret;
    atomic_int waiting;
} waiter_t;

static void waiter_job(void *arg)
{
    waiter_t *w = arg;
    atomic_store(&w->waiting, 1);
    w->rc = coexec_request_wait(w->req, &w->ret);
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
        spawn_on(r, subwait_job, &s[r], &t[r]);
    }
    memset(&s[NSTREAMS], 0, sizeof s[NSTREAMS]);
    s[NSTREAMS].rounds = rounds;
    s[NSTREAMS].base = 99000;
    run_external(subwait_job, &s[NSTREAMS]);
    free_threads(t, NSTREAMS);
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
    spawn_on(2, waiter_job, &w1, &wt);
    ext_t e;
    ext_start(&e, waiter_job, &w2);
    CH_WAIT(thread_state(wt) == COEXEC_UNIT_BLOCKED);
    CH_WAIT(atomic_load(&w2.waiting));
    linger(5);
    /* Not done (its stuck-call timer may have it running for a moment). */
    CU_ASSERT(thread_state(wt) != COEXEC_UNIT_TERMINATED);
    CH_ASSERT_EQ(atomic_load(&e.done), 0);
    poke(p[1], 'x');
    poke(q[1], 'y');
    CH_ASSERT_OK(coexec_thread_free(&wt));
    ext_join(&e);
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
    CH_ASSERT_OK(coexec_tasklet_create_on(xs_rank(3), zero_poll_body, rcs, &k));
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
    ext_t e[RS_EXTS];
    coexec_tasklet_t k;
    for (int i = 0; i < RS_ULTS; i++)
        spawn_on(1 + i, resub_job, r, &t[i]);
    for (int i = 0; i < RS_EXTS; i++)
        ext_start(&e[i], resub_job, r);
    CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(xs_rank(3), resub_tasklet, r, &k));
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
        ext_join(&e[i]);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    free(r);
    ch_finalize();
}

/* ======================================================================= */
/* cancel                                                                   */
/* ======================================================================= */

/* A tasklet that polls a request submitted by the test. */
typedef struct {
    coexec_request_t *req;
    int polls;
    int final_rc;
    atomic_int pending_seen;
    atomic_int done;
} poller_t;

static coexec_poll_status_t poller_body(coexec_poll_t *cx, void *arg)
{
    poller_t *p = arg;
    intptr_t r = 0;
    int rc = coexec_request_poll(p->req, cx, &r);
    p->polls++;
    if (rc == COEXEC_PENDING) {
        atomic_store(&p->pending_seen, 1);
        return COEXEC_PENDING;
    }
    p->final_rc = rc;
    atomic_store(&p->done, 1);
    return COEXEC_READY;
}

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
    spawn_on(1, waiter_job, &wc, &tc);
    CH_WAIT(thread_state(tc) == COEXEC_UNIT_BLOCKED);

    /* D: a tasklet on stream 2 polls it (PENDING) */
    coexec_request_t rd;
    memset(&rd, 0, sizeof rd);
    CH_ASSERT_OK(coexec_request_submit(&rd, count_fn, &ran));
    poller_t pd = {.req = &rd, .final_rc = -99999};
    coexec_tasklet_t kd;
    CH_ASSERT_OK(coexec_tasklet_create_on(xs_rank(2), poller_body, &pd, &kd));
    CH_WAIT(atomic_load(&pd.pending_seen));

    /* E: an external thread sleeps in request_wait */
    coexec_request_t re;
    memset(&re, 0, sizeof re);
    CH_ASSERT_OK(coexec_request_submit(&re, count_fn, &ran));
    waiter_t we = {.req = &re, .rc = 1};
    ext_t e;
    ext_start(&e, waiter_job, &we);
    CH_WAIT(atomic_load(&we.waiting));
    linger(5);

    /* F: queued behind them all, left alone */
    coexec_request_t rf;
    memset(&rf, 0, sizeof rf);
    CH_ASSERT_OK(coexec_request_submit(&rf, ret_arg_fn, (void *)(intptr_t)66));

    CH_ASSERT_EQ(atomic_load(&wc.waiting), 1);
    /* Not done (its stuck-call timer may have it running for a moment). */
    CU_ASSERT(thread_state(tc) != COEXEC_UNIT_TERMINATED);
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
    ext_join(&e);
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
/* files                                                                    */
/* ======================================================================= */

#define NDIRS 8
#define F_A 700
#define F_C1 300
#define F_C2 211
#define F_B 517
#define F_DATA (F_A + F_C1 + F_C2 + F_B)
#define F_EXTRA 100
#define F_SIZE (F_DATA + F_EXTRA)

static unsigned char fpat(int i, size_t k)
{
    return (unsigned char)((unsigned)i * 131u + (unsigned)k * 7u +
                           (unsigned)(k >> 8) + 1u);
}

/* Counts a wrapper call; evaluates to its result as a long long. */
#define CALL(n, expr) ((n)++, (long long)(expr))

/*
 * Writes file i of dir through every write-side wrapper, renames it,
 * reads it back through every read-side wrapper and compares byte for
 * byte, then removes it. Returns the number of wrapper calls made.
 */
static long file_job(const char *dir, int i)
{
    long n = 0;
    char tmp[128], fin[128];
    snprintf(tmp, sizeof tmp, "%s/d%d/f%d.tmp", dir, i % NDIRS, i);
    snprintf(fin, sizeof fin, "%s/d%d/f%d", dir, i % NDIRS, i);
    unsigned char *w = malloc(F_SIZE), *r = malloc(F_SIZE + 16);
    if (!w || !r) {
        ch_fail_at(__FILE__, __LINE__, "malloc");
        free(w);
        free(r);
        return n;
    }
    for (size_t k = 0; k < F_DATA; k++)
        w[k] = fpat(i, k);
    memset(w + F_DATA, 0, F_EXTRA);

    int fd = (int)CALL(n, coexec_open(tmp, O_CREAT | O_EXCL | O_RDWR |
                                               O_CLOEXEC, 0600));
    if (fd < 0) {
        ch_fail_at(__FILE__, __LINE__, "coexec_open(%s) = %d", tmp, fd);
        goto out;
    }
    CH_CHECK_EQ(CALL(n, coexec_write(fd, w, F_A)), F_A);
    struct iovec iv[2] = {{w + F_A, F_C1}, {w + F_A + F_C1, F_C2}};
    CH_CHECK_EQ(CALL(n, coexec_writev(fd, iv, 2)), F_C1 + F_C2);
    off_t boff = F_A + F_C1 + F_C2;
    CH_CHECK_EQ(CALL(n, coexec_pwrite(fd, w + boff, F_B, boff)), F_B);
    CH_CHECK_EQ(CALL(n, coexec_fsync(fd)), 0);
    CH_CHECK_EQ(CALL(n, coexec_ftruncate(fd, F_SIZE)), 0);
    CH_CHECK_EQ(CALL(n, coexec_fdatasync(fd)), 0);
    CH_CHECK_EQ(CALL(n, coexec_close(fd)), 0);
    CH_CHECK_EQ(CALL(n, coexec_rename(tmp, fin)), 0);
    struct stat st;
    CH_CHECK_EQ(CALL(n, coexec_stat(tmp, &st)), -ENOENT);

    fd = (int)CALL(n, coexec_open(fin, O_RDONLY | O_CLOEXEC, 0));
    if (fd < 0) {
        ch_fail_at(__FILE__, __LINE__, "coexec_open(%s) = %d", fin, fd);
        goto out;
    }
    memset(&st, 0, sizeof st);
    CH_CHECK_EQ(CALL(n, coexec_fstat(fd, &st)), 0);
    CH_CHECK_EQ(st.st_size, F_SIZE);
    CH_CHECK(S_ISREG(st.st_mode));
    memset(&st, 0, sizeof st);
    CH_CHECK_EQ(CALL(n, coexec_stat(fin, &st)), 0);
    CH_CHECK_EQ(st.st_size, F_SIZE);
    CH_CHECK_EQ(st.st_mode & 0777, 0600);

    memset(r, 0xEE, F_SIZE + 16);
    CH_CHECK_EQ(CALL(n, coexec_pread(fd, r + boff, F_B, boff)), F_B);
    /* pread left the offset at 0 */
    CH_CHECK_EQ(CALL(n, coexec_read(fd, r, F_A)), F_A);
    struct iovec rv[2] = {{r + F_A, F_C1}, {r + F_A + F_C1, F_C2}};
    CH_CHECK_EQ(CALL(n, coexec_readv(fd, rv, 2)), F_C1 + F_C2);
    CH_CHECK_EQ(CALL(n, coexec_pread(fd, r + F_DATA, F_EXTRA + 16, F_DATA)),
                F_EXTRA);
    /* the offset is at boff: the rest of the file, then end of file */
    unsigned char *tail = malloc(F_B + F_EXTRA + 16);
    if (tail) {
        CH_CHECK_EQ(CALL(n, coexec_read(fd, tail, F_B + F_EXTRA + 16)),
                    F_B + F_EXTRA);
        CH_CHECK(memcmp(tail, w + boff, F_B + F_EXTRA) == 0);
        CH_CHECK_EQ(CALL(n, coexec_read(fd, tail, 16)), 0);
        free(tail);
    }
    CH_CHECK_EQ(CALL(n, coexec_close(fd)), 0);
    for (size_t k = 0; k < F_SIZE; k++)
        if (r[k] != w[k]) {
            ch_fail_at(__FILE__, __LINE__,
                       "file %d: byte %zu is 0x%02x, expected 0x%02x", i, k,
                       r[k], w[k]);
            break;
        }
    CH_CHECK_EQ(r[F_SIZE], 0xEE);

    CH_CHECK_EQ(CALL(n, coexec_unlink(fin)), 0);
    CH_CHECK_EQ(CALL(n, coexec_stat(fin, &st)), -ENOENT);
    CH_CHECK_EQ(CALL(n, coexec_unlink(fin)), -ENOENT);
out:
    free(w);
    free(r);
    return n;
}

typedef struct {
    const char *dir;
    int i;
    int count; /* files i .. i + count - 1 */
    long calls;
    atomic_int done;
} fjob_t;

static void file_ult(void *arg)
{
    fjob_t *j = arg;
    for (int k = 0; k < j->count; k++)
        j->calls += file_job(j->dir, j->i + k);
    atomic_store(&j->done, 1);
}

static void make_subdirs(const char *dir)
{
    char d[128];
    for (int k = 0; k < NDIRS; k++) {
        snprintf(d, sizeof d, "%s/d%d", dir, k);
        CH_CHECK_EQ(coexec_mkdir(d, 0700), 0);
        CH_CHECK_EQ(coexec_mkdir(d, 0700), -EEXIST);
        struct stat st;
        CH_CHECK_EQ(coexec_stat(d, &st), 0);
        CH_CHECK(S_ISDIR(st.st_mode));
        CH_CHECK_EQ(st.st_mode & 0777, 0700);
    }
}

static void remove_subdirs(const char *dir)
{
    char d[128];
    for (int k = 0; k < NDIRS; k++) {
        snprintf(d, sizeof d, "%s/d%d", dir, k);
        /* empty: every job removed its file */
        CH_CHECK_EQ(rmdir(d), 0);
    }
}

/* n ULTs dealt over the streams run one file job each; returns the
 * wrapper calls they made. */
static long file_jobs_on_ults(const char *dir, long n)
{
    fjob_t *j = calloc((size_t)n, sizeof *j);
    coexec_thread_t *t = calloc((size_t)n, sizeof *t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (long i = 0; i < n; i++) {
        j[i].dir = dir;
        j[i].i = (int)i;
        j[i].count = 1;
        spawn_on((int)(i % NSTREAMS), file_ult, &j[i], &t[i]);
    }
    free_threads(t, n);
    long calls = 0, done = 0;
    for (long i = 0; i < n; i++) {
        calls += j[i].calls;
        done += atomic_load(&j[i].done);
    }
    CH_ASSERT_EQ(done, n);
    CU_ASSERT(calls >= 23 * n);
    free(j);
    free(t);
    return calls;
}

static void files_ults(const char *want_path)
{
    char dir[64];
    tmpdir_make(dir);
    svc_init(NSTREAMS, 0, 0);
    coexec_service_info_t info = svc_info();
    CU_ASSERT_PTR_NOT_NULL_FATAL(info.io_path);
    CU_ASSERT_STRING_EQUAL(info.io_path, want_path);
    uint64_t c0 = svc_completed();
    make_subdirs(dir);
    /* the main ULT's mkdir/stat calls went through the service */
    CU_ASSERT(CH_WAIT(svc_completed() - c0 >= 3 * NDIRS));

    c0 = svc_completed();
    long calls = file_jobs_on_ults(dir, ch_iters(1000, 8));
    /* every one of them was offloaded */
    CU_ASSERT(CH_WAIT(svc_completed() - c0 >= (uint64_t)calls));
    remove_subdirs(dir);
    ch_finalize();
    tmpdir_remove(dir);
}

static void t_files_ults_threads(void)
{
    g_io = COEXEC_SERVICE_IO_THREADS;
    files_ults("threads");
    g_io = COEXEC_SERVICE_IO_AUTO;
}

static void t_files_ults_uring(void)
{
    if (!uring_or_skip())
        return;
    g_io = COEXEC_SERVICE_IO_URING;
    files_ults("io_uring");
    g_io = COEXEC_SERVICE_IO_AUTO;
}

static void ext_files(void *arg)
{
    fjob_t *j = arg;
    for (int k = 0; k < j->count; k++)
        j->calls += file_job(j->dir, j->i + k);
    atomic_store(&j->done, 1);
}

static void ext_mkdirs(void *arg) { make_subdirs(arg); }

static void t_files_external_direct(void)
{
    char dir[64];
    tmpdir_make(dir);
    svc_init(NSTREAMS, 0, 0);
    /* nothing else runs: calls from external threads must not reach the
     * service, whose completed count therefore stays where it is */
    uint64_t c0 = svc_completed();
    run_external(ext_mkdirs, dir);
    fjob_t j[2] = {{.dir = dir, .i = 0, .count = (int)ch_iters(16, 2)},
                   {.dir = dir, .i = 1000, .count = (int)ch_iters(16, 2)}};
    ext_t e[2];
    ext_start(&e[0], ext_files, &j[0]);
    ext_start(&e[1], ext_files, &j[1]);
    ext_join(&e[0]);
    ext_join(&e[1]);
    CH_ASSERT_EQ(atomic_load(&j[0].done), 1);
    CH_ASSERT_EQ(atomic_load(&j[1].done), 1);
    CU_ASSERT(j[0].calls >= 23L * j[0].count);
    uint64_t c1 = svc_completed();
    CH_ASSERT_EQ(c1, c0);
    /* from a tasklet, too */
    fjob_t jt = {.dir = dir, .i = 2000, .count = 2};
    CH_ASSERT_OK(ch_run_tasklet_in(pool_of_rank(1), ext_files, &jt));
    CH_ASSERT_EQ(atomic_load(&jt.done), 1);
    CH_ASSERT_EQ(svc_completed(), c0);
    remove_subdirs(dir);
    ch_finalize();
    tmpdir_remove(dir);
}

static void t_files_without_runtime(void)
{
    char dir[64];
    tmpdir_make(dir);
    CH_ASSERT_EQ(coexec_initialized(), 0);
    make_subdirs(dir);
    fjob_t j = {.dir = dir, .i = 7, .count = 3};
    ext_files(&j);
    CH_ASSERT_EQ(atomic_load(&j.done), 1);
    CU_ASSERT(j.calls >= 23L * 3);
    remove_subdirs(dir);
    tmpdir_remove(dir);
}

/* ======================================================================= */
/* errors                                                                   */
/* ======================================================================= */

typedef struct {
    const char *dir;
    bool check_errno;
    atomic_int ran;
} errjob_t;

static void errors_job(void *arg)
{
    errjob_t *j = arg;
    char missing[128], missing2[128], file[128], deep[128];
    snprintf(missing, sizeof missing, "%s/missing", j->dir);
    snprintf(missing2, sizeof missing2, "%s/missing2", j->dir);
    snprintf(deep, sizeof deep, "%s/missing/sub", j->dir);
    snprintf(file, sizeof file, "%s/ro-%p", j->dir, (void *)j);
    struct stat st;
    unsigned char buf[8];
    struct iovec iv = {buf, sizeof buf};

    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        ch_fail_at(__FILE__, __LINE__, "pipe2");
        return;
    }
    int closed_r = p[0], closed_w = p[1];
    close(p[0]);
    close(p[1]);

    if (j->check_errno) /* in a ULT, errno is its OS thread's */
        errno = 4242;
    CH_CHECK_EQ(coexec_read(closed_r, buf, 1), -EBADF);
    CH_CHECK_EQ(coexec_write(closed_w, "x", 1), -EBADF);
    CH_CHECK_EQ(coexec_open(missing, O_RDONLY, 0), -ENOENT);
    CH_CHECK_EQ(coexec_unlink(missing), -ENOENT);
    CH_CHECK_EQ(coexec_mkdir(j->dir, 0700), -EEXIST);
    CH_CHECK_EQ(coexec_mkdir(deep, 0700), -ENOENT);
    CH_CHECK_EQ(coexec_stat(missing, &st), -ENOENT);
    CH_CHECK_EQ(coexec_rename(missing, missing2), -ENOENT);
    CH_CHECK_EQ(coexec_close(-1), -EBADF);
    CH_CHECK_EQ(coexec_fstat(-1, &st), -EBADF);
    CH_CHECK_EQ(coexec_fsync(-1), -EBADF);
    CH_CHECK_EQ(coexec_fdatasync(-1), -EBADF);
    CH_CHECK_EQ(coexec_ftruncate(-1, 0), -EBADF);
    CH_CHECK_EQ(coexec_pread(-1, buf, 1, 0), -EBADF);
    CH_CHECK_EQ(coexec_pwrite(-1, "x", 1, 0), -EBADF);
    CH_CHECK_EQ(coexec_readv(-1, &iv, 1), -EBADF);
    CH_CHECK_EQ(coexec_writev(-1, &iv, 1), -EBADF);
    CH_CHECK_EQ(coexec_connect(-1, NULL, 0), -EBADF);
    CH_CHECK_EQ(coexec_accept(-1, NULL, NULL), -EBADF);
    if (j->check_errno)
        CH_CHECK_EQ(errno, 4242);

    /* a read-only file: write is EBADF, open O_EXCL is EEXIST */
    int fd = coexec_open(file, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    CH_CHECK(fd >= 0);
    if (fd >= 0)
        CH_CHECK_EQ(coexec_close(fd), 0);
    CH_CHECK_EQ(coexec_open(file, O_CREAT | O_EXCL | O_RDWR, 0600), -EEXIST);
    fd = coexec_open(file, O_RDONLY | O_CLOEXEC, 0);
    CH_CHECK(fd >= 0);
    if (fd >= 0) {
        if (j->check_errno) /* in a ULT, errno is its OS thread's */
            errno = 4242;
        CH_CHECK_EQ(coexec_write(fd, "x", 1), -EBADF);
        CH_CHECK_EQ(coexec_pwrite(fd, "x", 1, 0), -EBADF);
        CH_CHECK_EQ(coexec_ftruncate(fd, 10), -EINVAL);
        if (j->check_errno)
            CH_CHECK_EQ(errno, 4242);
        CH_CHECK_EQ(coexec_close(fd), 0);
    }
    CH_CHECK_EQ(coexec_unlink(file), 0);

    /* pipes: no seeking, no truncating */
    if (pipe2(p, O_CLOEXEC) == 0) {
        if (j->check_errno) /* in a ULT, errno is its OS thread's */
            errno = 4242;
        CH_CHECK_EQ(coexec_pread(p[0], buf, 1, 0), -ESPIPE);
        CH_CHECK_EQ(coexec_pwrite(p[1], "x", 1, 0), -ESPIPE);
        CH_CHECK_EQ(coexec_ftruncate(p[1], 0), -EINVAL);
        if (j->check_errno)
            CH_CHECK_EQ(errno, 4242);
        close(p[0]);
        close(p[1]);
    }
    atomic_fetch_add(&j->ran, 1);
}

static void errors_tasklet(void *arg) { errors_job(arg); }

static void t_errors_everywhere(void)
{
    char dir[64];
    tmpdir_make(dir);
    /* without the runtime: direct calls */
    errjob_t j = {.dir = dir, .check_errno = true};
    errors_job(&j);
    CH_ASSERT_EQ(atomic_load(&j.ran), 1);

    svc_init(NSTREAMS, 0, 0);
    /* offloaded: from the main ULT and ULTs on every stream (errno is not
     * checked there: a ULT may resume on another OS thread) */
    uint64_t c0 = svc_completed();
    j.check_errno = false;
    errors_job(&j);
    CU_ASSERT(CH_WAIT(svc_completed() - c0 >= 20));
    for (int r = 0; r < NSTREAMS; r++)
        CH_ASSERT_OK(ch_run_ult_in(pool_of_rank(r), errors_job, &j));
    CH_ASSERT_EQ(atomic_load(&j.ran), 2 + NSTREAMS);

    /* direct: an external thread and a tasklet leave errno alone */
    j.check_errno = true;
    run_external(errors_job, &j);
    CH_ASSERT_OK(ch_run_tasklet_in(pool_of_rank(1), errors_tasklet, &j));
    CH_ASSERT_EQ(atomic_load(&j.ran), 4 + NSTREAMS);
    ch_finalize();
    tmpdir_remove(dir);
}

/* the same through the service threads only */
static void t_errors_everywhere_threads(void)
{
    g_io = COEXEC_SERVICE_IO_THREADS;
    t_errors_everywhere();
    g_io = COEXEC_SERVICE_IO_AUTO;
}

/* an offloaded function's -errno result is not turned into anything else */
static intptr_t errno_fn(void *arg)
{
    (void)arg;
    errno = 0;
    if (close(-1) != 0)
        return -errno;
    return 0;
}

static void t_errors_offload_result(void)
{
    svc_init(2, 0, 0);
    intptr_t ret = 0;
    CH_ASSERT_OK(coexec_offload(errno_fn, NULL, &ret));
    CH_ASSERT_EQ(ret, -EBADF);
    ch_finalize();
}

/* ======================================================================= */
/* stuck                                                                    */
/* ======================================================================= */

typedef struct {
    int fd;
    ssize_t n;
    unsigned char buf[32];
    atomic_int started;
    atomic_int done;
} reader_t;

/* A ULT blocked in coexec_read on an empty pipe. */
static void reader_ult(void *arg)
{
    reader_t *r = arg;
    atomic_store(&r->started, 1);
    r->n = coexec_read(r->fd, r->buf, sizeof r->buf);
    atomic_store(&r->done, 1);
}

typedef struct {
    blocker_t b;
    int rc;
    intptr_t ret;
    atomic_int done;
} blocked_ult_t;

static void blocked_ult(void *arg)
{
    blocked_ult_t *u = arg;
    u->rc = coexec_offload(block_read_fn, &u->b, &u->ret);
    atomic_store(&u->done, 1);
}

typedef struct {
    const char *dir;
    int idx;
    atomic_int *completed;
} quick_t;

static void quick_ult(void *arg)
{
    quick_t *q = arg;
    intptr_t ret = -1;
    CH_CHECK_RC(coexec_offload(ret_arg_fn, (void *)(intptr_t)q->idx, &ret),
                COEXEC_OK);
    CH_CHECK_EQ(ret, q->idx);
    struct stat st;
    CH_CHECK_EQ(coexec_stat(q->dir, &st), 0);
    CH_CHECK(S_ISDIR(st.st_mode));
    atomic_fetch_add(q->completed, 1);
}

typedef struct {
    int fd0, fd1, fd2;
    long w0, w1, w2;
} writer_t;

static void writer_ult(void *arg)
{
    writer_t *w = arg;
    w->w0 = coexec_write(w->fd0, "hello, stuck", 12);
    w->w1 = coexec_write(w->fd1, "a", 1);
    w->w2 = coexec_write(w->fd2, "b", 1);
}

static void t_stuck_calls(void)
{
    char dir[64];
    tmpdir_make(dir);
    int p0[2], p1[2], p2[2];
    make_pipe(p0);
    make_pipe(p1);
    make_pipe(p2);
    enum { MAX_THREADS = 4 };
    svc_init(NSTREAMS, 1, MAX_THREADS);
    CH_ASSERT_EQ(svc_info().threads, 1);

    /* R0: coexec_read on an empty pipe; R1: a call known to be blocked */
    reader_t r0 = {.fd = p0[0], .n = -999};
    blocked_ult_t r1 = {.b = {.fd = p1[0]}, .rc = 1};
    blocked_ult_t r2 = {.b = {.fd = p2[0]}, .rc = 1};
    coexec_thread_t tr0, tr1, tr2;
    spawn_on(1, reader_ult, &r0, &tr0);
    spawn_on(2, blocked_ult, &r1, &tr1);
    CH_WAIT(atomic_load(&r0.started));
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&r1.b.started)));

    /* 100 other calls complete meanwhile */
    long n = ch_iters(100, 100);
    atomic_int completed = 0;
    quick_t *q = calloc((size_t)n, sizeof *q);
    coexec_thread_t *t = calloc((size_t)n, sizeof *t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (long i = 0; i < n; i++) {
        q[i].dir = dir;
        q[i].idx = (int)i;
        q[i].completed = &completed;
        spawn_on((int)(i % NSTREAMS), quick_ult, &q[i], &t[i]);
    }
    int max_seen = 0;
    CH_WAIT(({
        coexec_service_info_t in = svc_info();
        if (in.threads > max_seen)
            max_seen = in.threads;
        atomic_load(&completed) == n;
    }));
    free_threads(t, n);
    CH_ASSERT_EQ(atomic_load(&completed), n);
    /* nothing was written: the blocked reads are still blocked */
    CH_ASSERT_EQ(atomic_load(&r0.done), 0);
    CH_ASSERT_EQ(atomic_load(&r1.done), 0);
    CH_ASSERT_EQ(atomic_load(&r1.b.finished), 0);

    /* a second call known to be blocked: two threads are in read() now */
    spawn_on(3, blocked_ult, &r2, &tr2);
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&r2.b.started)));
    coexec_service_info_t info = svc_info();
    printf("\n    while stuck: %d threads (%d idle), at most %d seen\n",
           info.threads, info.idle, max_seen);
    CU_ASSERT(info.threads > 1);
    CU_ASSERT(info.threads <= MAX_THREADS);
    CU_ASSERT(max_seen <= MAX_THREADS);
    CU_ASSERT(info.idle <= info.threads);

    /* offloaded writes release them */
    writer_t w = {.fd0 = p0[1], .fd1 = p1[1], .fd2 = p2[1]};
    CH_ASSERT_OK(ch_run_ult_in(pool_of_rank(3), writer_ult, &w));
    CH_ASSERT_EQ(w.w0, 12);
    CH_ASSERT_EQ(w.w1, 1);
    CH_ASSERT_EQ(w.w2, 1);
    CH_ASSERT_OK(coexec_thread_free(&tr0));
    CH_ASSERT_OK(coexec_thread_free(&tr1));
    CH_ASSERT_OK(coexec_thread_free(&tr2));
    CH_ASSERT_EQ(r0.n, 12);
    CU_ASSERT(memcmp(r0.buf, "hello, stuck", 12) == 0);
    CH_ASSERT_RC(r1.rc, COEXEC_OK);
    CH_ASSERT_EQ(r1.ret, 'a');
    CH_ASSERT_RC(r2.rc, COEXEC_OK);
    CH_ASSERT_EQ(r2.ret, 'b');

    /* idle: back to service_threads */
    CU_ASSERT(CH_WAIT(({
        coexec_service_info_t in = svc_info();
        in.threads == 1 && in.idle == 1;
    })));
    info = svc_info();
    CH_ASSERT_EQ(info.threads, 1);
    /* and it still works */
    intptr_t v = 0;
    CH_ASSERT_OK(coexec_offload(ret_arg_fn, (void *)(intptr_t)3, &v));
    CH_ASSERT_EQ(v, 3);
    free(q);
    free(t);
    ch_finalize();
    close_pipe(p0);
    close_pipe(p1);
    close_pipe(p2);
    tmpdir_remove(dir);
}

typedef struct {
    int rc;
    intptr_t ret;
} quick_call_t;

static void ext_quick_call(void *arg)
{
    quick_call_t *q = arg;
    q->rc = coexec_offload(ret_arg_fn, (void *)(intptr_t)321, &q->ret);
}

static void ext_blocked_call(void *arg)
{
    blocked_ult_t *u = arg;
    u->rc = coexec_offload(block_read_fn, &u->b, &u->ret);
    atomic_store(&u->done, 1);
}

/*
 * External threads and tasklets wait differently from ULTs (a futex; a
 * poll after a wake): a call of theirs queued behind a stuck one must make
 * the service grow all the same.
 */
static void t_stuck_external_and_tasklet(void)
{
    int p[2];
    make_pipe(p);
    svc_init(NSTREAMS, 1, 4);
    blocked_ult_t a = {.b = {.fd = p[0]}, .rc = 1};
    ext_t ea;
    ext_start(&ea, ext_blocked_call, &a);
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&a.b.started)));

    /* an external thread's call completes meanwhile */
    quick_call_t q = {.rc = 1, .ret = 0};
    run_external(ext_quick_call, &q);
    CH_ASSERT_RC(q.rc, COEXEC_OK);
    CH_ASSERT_EQ(q.ret, 321);

    /* so does a tasklet's request, on every stream */
    for (int r = 0; r < NSTREAMS; r++) {
        tkreq_t t;
        tkreq_init(&t, ret_arg_fn, (void *)(intptr_t)(600 + r));
        coexec_tasklet_t k;
        CH_ASSERT_OK(coexec_tasklet_create_on(xs_rank(r), tkreq_body, &t, &k));
        CH_WAIT(atomic_load(&t.done));
        CH_ASSERT_OK(coexec_tasklet_free(&k));
        CH_ASSERT_RC(t.final_rc, COEXEC_READY);
        CH_ASSERT_EQ(t.ret, 600 + r);
    }
    /* the first call is still blocked */
    CH_ASSERT_EQ(atomic_load(&a.done), 0);
    CH_ASSERT_EQ(atomic_load(&a.b.finished), 0);
    CU_ASSERT(svc_info().threads > 1);
    poke(p[1], 'e');
    ext_join(&ea);
    CH_ASSERT_RC(a.rc, COEXEC_OK);
    CH_ASSERT_EQ(a.ret, 'e');
    ch_finalize();
    close_pipe(p);
}

/* Many readers blocked at once, more than service_max_threads. */
static void t_stuck_more_than_max(void)
{
    enum { MAX_THREADS = 3, NREAD = 6 };
    int p[NREAD][2];
    for (int i = 0; i < NREAD; i++)
        make_pipe(p[i]);
    svc_init(NSTREAMS, 1, MAX_THREADS);
    reader_t r[NREAD];
    coexec_thread_t t[NREAD];
    for (int i = 0; i < NREAD; i++) {
        memset(&r[i], 0, sizeof r[i]);
        r[i].fd = p[i][0];
        spawn_on(i % NSTREAMS, reader_ult, &r[i], &t[i]);
    }
    for (int i = 0; i < NREAD; i++)
        CH_WAIT(atomic_load(&r[i].started));
    linger(20);
    coexec_service_info_t info = svc_info();
    CU_ASSERT(info.threads <= MAX_THREADS);
    CU_ASSERT(info.threads >= 1);
    /* release them one at a time, from the test thread directly */
    for (int i = 0; i < NREAD; i++) {
        unsigned char c = (unsigned char)('0' + i);
        CH_ASSERT_EQ(write(p[i][1], &c, 1), 1);
    }
    free_threads(t, NREAD);
    for (int i = 0; i < NREAD; i++) {
        CH_ASSERT_EQ(r[i].n, 1);
        CH_ASSERT_EQ(r[i].buf[0], '0' + i);
    }
    CU_ASSERT(svc_info().threads <= MAX_THREADS);
    ch_finalize();
    for (int i = 0; i < NREAD; i++)
        close_pipe(p[i]);
}

/* ======================================================================= */
/* compute                                                                  */
/* ======================================================================= */

typedef struct {
    atomic_long counter;
    atomic_int io_done;
    atomic_int cpu_done;
    int nio;
    long iters;
    int rank;
    const char *dir;
    atomic_long gates_ok;
    atomic_long advanced; /* informational */
    atomic_long offloads;
} comp_t;

typedef struct {
    comp_t *c;
    int k;
} io_arg_t;

typedef struct {
    atomic_long *counter;
    long target;
} gate_t;

/*
 * Returns 1 once the counter reached the target, which only the CPU-bound
 * ULT advances; -ETIMEDOUT after CH_WAIT_LIMIT_S (a hang guard: a stream
 * blocked in the kernel during the offload never lets it advance).
 */
static intptr_t gate_fn(void *arg)
{
    gate_t *g = arg;
    double t0 = ch_now();
    while (atomic_load(g->counter) < g->target) {
        if (ch_now() - t0 > CH_WAIT_LIMIT_S)
            return -ETIMEDOUT;
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    return 1;
}

static void cpu_ult(void *arg)
{
    comp_t *c = arg;
    volatile unsigned long sink = 0;
    while (atomic_load(&c->io_done) < c->nio) {
        for (int i = 0; i < 200; i++)
            sink += (unsigned long)i * 2654435761u;
        atomic_fetch_add(&c->counter, 1);
        int rc = coexec_yield();
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
    }
    CH_CHECK_EQ(self_rank(), c->rank);
    atomic_store(&c->cpu_done, 1);
}

static void io_ult(void *arg)
{
    io_arg_t *a = arg;
    comp_t *c = a->c;
    char path[128];
    snprintf(path, sizeof path, "%s/io%d", c->dir, a->k);
    unsigned char *w = malloc(4096), *r = malloc(4096);
    int fd = coexec_open(path, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
    CH_CHECK(fd >= 0);
    if (fd < 0 || !w || !r)
        goto out;
    for (long j = 0; j < c->iters; j++) {
        for (int k = 0; k < 4096; k++)
            w[k] = (unsigned char)(a->k * 17 + j * 3 + k);
        off_t off = (off_t)(j % 8) * 4096;
        long c0 = atomic_load(&c->counter);
        CH_CHECK_EQ(coexec_pwrite(fd, w, 4096, off), 4096);
        memset(r, 0, 4096);
        CH_CHECK_EQ(coexec_pread(fd, r, 4096, off), 4096);
        CH_CHECK(memcmp(r, w, 4096) == 0);
        atomic_fetch_add(&c->offloads, 2);
        if (atomic_load(&c->counter) > c0)
            atomic_fetch_add(&c->advanced, 1);
        if (j % 10 == 0) {
            gate_t g = {&c->counter, atomic_load(&c->counter) + 100};
            intptr_t ret = 0;
            CH_CHECK_RC(coexec_offload(gate_fn, &g, &ret), COEXEC_OK);
            CH_CHECK_EQ(ret, 1);
            if (ret == 1)
                atomic_fetch_add(&c->gates_ok, 1);
        }
        CH_CHECK_EQ(self_rank(), c->rank);
    }
    CH_CHECK_EQ(coexec_fsync(fd), 0);
    CH_CHECK_EQ(coexec_close(fd), 0);
    CH_CHECK_EQ(coexec_unlink(path), 0);
out:
    free(w);
    free(r);
    atomic_fetch_add(&c->io_done, 1);
}

static void t_compute_stream_free(void)
{
    char dir[64];
    tmpdir_make(dir);
    svc_init(NSTREAMS, 0, 0);
    /* a stream of its own that does not steal and is not stolen from */
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    enum { NIO = 8 };
    comp_t c;
    memset(&c, 0, sizeof c);
    c.nio = NIO;
    c.iters = ch_iters(200, 11);
    c.rank = s.rank;
    c.dir = dir;
    io_arg_t a[NIO];
    coexec_thread_t t[NIO + 1];
    CH_ASSERT_OK(coexec_thread_create(s.pool, cpu_ult, &c, NULL, &t[NIO]));
    for (int k = 0; k < NIO; k++) {
        a[k].c = &c;
        a[k].k = k;
        CH_ASSERT_OK(coexec_thread_create(s.pool, io_ult, &a[k], NULL, &t[k]));
    }
    /* not joined before they finish: a join would run them here */
    CH_WAIT(atomic_load(&c.io_done) == NIO && atomic_load(&c.cpu_done));
    free_threads(t, NIO + 1);
    long gates = (c.iters + 9) / 10;
    CH_ASSERT_EQ(atomic_load(&c.gates_ok), (long)NIO * gates);
    CU_ASSERT(atomic_load(&c.counter) >= 100 * gates);
    printf("\n    counter %ld; %ld of %ld I/O calls saw it advance\n",
           atomic_load(&c.counter), atomic_load(&c.advanced),
           atomic_load(&c.offloads) / 2);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
    tmpdir_remove(dir);
}

/* ======================================================================= */
/* finalize                                                                 */
/* ======================================================================= */

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
    ext_t e;
    ext_start(&e, ext_sleep_call, &ec);
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&ec.s.started)));

    /* queued behind it: ULTs on every stream ... */
    int n = (int)ch_iters(16, 4);
    if (n > FIN_MAX)
        n = FIN_MAX;
    memset(g_fin, 0, sizeof g_fin);
    for (int i = 0; i < n; i++) {
        g_fin[i].idx = i;
        g_fin[i].rc = 1;
        CH_ASSERT_OK(coexec_thread_create_on(xs_rank(i % NSTREAMS), fin_ult,
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
    CH_ASSERT_OK(coexec_thread_create_on(xs_rank(1), fin_waiter_ult,
                                         &g_fin_waiter, NULL, NULL));
    /* ... a tasklet polling one ... */
    memset(&g_fin_treq, 0, sizeof g_fin_treq);
    CH_ASSERT_OK(coexec_request_submit(&g_fin_treq, ret_arg_fn,
                                       (void *)(intptr_t)56));
    memset(&g_fin_poller, 0, sizeof g_fin_poller);
    g_fin_poller.req = &g_fin_treq;
    g_fin_poller.final_rc = -99999;
    CH_ASSERT_OK(coexec_tasklet_create_on(xs_rank(2), poller_body,
                                          &g_fin_poller, NULL));
    /* ... and another external thread calling in a loop */
    looper_t lp = {.last_rc = 1};
    ext_t f;
    ext_start(&f, ext_loop_calls, &lp);

    for (int i = 0; i < n; i++)
        CH_WAIT(atomic_load(&g_fin[i].entered));
    CH_WAIT(atomic_load(&g_fin_waiter.waiting));
    /* The poller may first run after the external call has ended and its
     * request has completed (a slow run: valgrind beside another test). */
    CH_WAIT(atomic_load(&g_fin_poller.pending_seen) ||
            atomic_load(&g_fin_poller.done));
    linger(2);

    CH_ASSERT_RC(coexec_finalize(), COEXEC_OK);

    ext_join(&e);
    ext_join(&f);
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
    spawn_on(3, ext_sleep_call, &uc, &t);
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
    CH_ASSERT_OK(coexec_thread_create_on(xs_rank(2), ext_sleep_call, &uc,
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
    CH_ASSERT_OK_FATAL(coexec_xstream_post(xs_rank(0), post_submit_body, NULL));
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
/* config                                                                   */
/* ======================================================================= */

static void t_config_defaults(void)
{
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    CH_ASSERT_EQ(cfg.service_threads, 1);
    CH_ASSERT_EQ(cfg.service_max_threads, 16);
    CH_ASSERT_EQ(cfg.service_spin_us, 50);
    CH_ASSERT_EQ(cfg.service_cpus[0], 0);

    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    coexec_config_t got;
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.service_threads, 1);
    CH_ASSERT_EQ(got.service_max_threads, 16);
    CH_ASSERT_EQ(got.service_spin_us, 50);
    coexec_service_info_t info = svc_info();
    CH_ASSERT_EQ(info.threads, 1);
    CU_ASSERT(info.idle >= 0 && info.idle <= info.threads);
    CH_ASSERT_EQ(info.completed, 0);
    CU_ASSERT_PTR_NOT_NULL(info.io_path);
    if (info.io_path) {
        CU_ASSERT(info.io_path[0] != 0);
        printf("\n    io_path \"%s\", cpu %d, shares_cpu %d\n", info.io_path,
               info.cpu, info.shares_cpu);
    }
    CU_ASSERT(info.shares_cpu == 0 || info.shares_cpu == 1);
    intptr_t ret = 0;
    CH_ASSERT_OK(coexec_offload(ret_arg_fn, (void *)(intptr_t)1, &ret));
    CU_ASSERT(CH_WAIT(svc_completed() >= 1));
    /* arguments */
    CH_ASSERT_RC(coexec_service_get_info(NULL), COEXEC_EINVAL);
    memset(&info, 0, sizeof info);
    CH_ASSERT_RC(coexec_service_get_info(&info), COEXEC_EINVAL);
    ch_finalize();
}

static void t_config_env_malformed(void)
{
    static const struct {
        const char *var, *val;
    } bad[] = {
        {"COEXEC_SERVICE_THREADS", "abc"},
        {"COEXEC_SERVICE_THREADS", "2x"},
        {"COEXEC_SERVICE_THREADS", "1.5"},
        {"COEXEC_SERVICE_MAX_THREADS", "many"},
        {"COEXEC_SERVICE_MAX_THREADS", "4z"},
        {"COEXEC_SERVICE_SPIN_US", "fast"},
        {"COEXEC_SERVICE_CPUS", "abc"},
        {"COEXEC_SERVICE_CPUS", "1,x"},
        {"COEXEC_SERVICE_CPUS", "0-"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char ctx[200];
        snprintf(ctx, sizeof ctx, "%s=\"%s\"", bad[i].var, bad[i].val);
        setenv(bad[i].var, bad[i].val, 1);
        char err[2048];
        ch_stderr_begin();
        int rc = coexec_init(NULL);
        ch_stderr_end(err, sizeof err);
        unsetenv(bad[i].var);
        if (rc != COEXEC_EENV) {
            char b[300];
            snprintf(b, sizeof b, "%s: init returned %s, expected EENV", ctx,
                     coexec_err_name(rc));
            CU_assertImplementation(CU_FALSE, __LINE__, b, __FILE__, "",
                                    CU_FALSE);
            if (rc == COEXEC_OK)
                CH_ASSERT_OK_FATAL(coexec_finalize());
            continue;
        }
        CU_PASS(ctx);
        CH_ASSERT_EQ(coexec_initialized(), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(coexec_init_error(), bad[i].var));
        CH_ASSERT_EQ(ch_count_lines(err, bad[i].var), 1);
    }
    /* init works again afterwards */
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    CH_ASSERT_EQ(svc_info().threads, 1);
    ch_finalize();
}

static void t_config_env_values(void)
{
    setenv("COEXEC_SERVICE_THREADS", "3", 1);
    setenv("COEXEC_SERVICE_MAX_THREADS", "5", 1);
    setenv("COEXEC_SERVICE_SPIN_US", "7", 1);
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = 2;
    cfg.service_threads = 2; /* the environment wins */
    int rc = coexec_init(&cfg);
    unsetenv("COEXEC_SERVICE_THREADS");
    unsetenv("COEXEC_SERVICE_MAX_THREADS");
    unsetenv("COEXEC_SERVICE_SPIN_US");
    CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
    coexec_config_t got;
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.service_threads, 3);
    CH_ASSERT_EQ(got.service_max_threads, 5);
    CH_ASSERT_EQ(got.service_spin_us, 7);
    CU_ASSERT(CH_WAIT(svc_info().threads == 3));
    coexec_service_info_t info = svc_info();
    CH_ASSERT_EQ(info.threads, 3);
    CU_ASSERT_PTR_NOT_NULL(info.io_path);
    /* three threads are kept when idle */
    intptr_t ret = 0;
    for (int i = 0; i < 10; i++)
        CH_ASSERT_OK(coexec_offload(ret_arg_fn, (void *)(intptr_t)i, &ret));
    linger(120);
    CH_ASSERT_EQ(svc_info().threads, 3);
    ch_finalize();

    /* cfg fields alone */
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = 2;
    cfg.service_threads = 2;
    cfg.service_max_threads = 4;
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.service_threads, 2);
    CH_ASSERT_EQ(got.service_max_threads, 4);
    CU_ASSERT(CH_WAIT(svc_info().threads == 2));
    ch_finalize();
}

static void t_config_bad_cfg(void)
{
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.service_threads = -1;
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
    CH_ASSERT_EQ(coexec_initialized(), 0);
    CH_ASSERT_OK(coexec_config_init(&cfg));
    snprintf(cfg.service_cpus, sizeof cfg.service_cpus, "abc");
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
    CH_ASSERT_EQ(coexec_initialized(), 0);
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    ch_finalize();
}

/* The last CPU the process may run on. */
static int last_allowed_cpu(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            last = c;
    return last;
}

static int first_allowed_cpu(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            return c;
    return -1;
}

/* 1 when some stream is pinned to cpu. */
static int stream_on_cpu(int cpu)
{
    int num = 0, found = 0;
    CH_CHECK_RC(coexec_xstream_get_num(&num), COEXEC_OK);
    for (int r = 0; r < num; r++) {
        int c = -2;
        CH_CHECK_RC(coexec_xstream_get_cpu(xs_rank(r), &c), COEXEC_OK);
        found |= c == cpu;
    }
    return found;
}

static intptr_t cpu_fn(void *arg)
{
    (void)arg;
    return sched_getcpu();
}

static void t_config_cpus(void)
{
    int last = last_allowed_cpu(), first = first_allowed_cpu();
    CU_ASSERT_FATAL(last >= 0 && first >= 0);
    /* default: the last CPU of the binding */
    svc_init(1, 0, 0);
    coexec_service_info_t info = svc_info();
    CH_ASSERT_EQ(info.cpu, last);
    CH_ASSERT_EQ(info.shares_cpu, stream_on_cpu(info.cpu));
    intptr_t ret = -1;
    CH_ASSERT_OK(coexec_offload(cpu_fn, NULL, &ret));
    CH_ASSERT_EQ(ret, last);
    ch_finalize();

    /* COEXEC_SERVICE_CPUS names it */
    char v[16];
    snprintf(v, sizeof v, "%d", first);
    setenv("COEXEC_SERVICE_CPUS", v, 1);
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = NSTREAMS;
    int rc = coexec_init(&cfg);
    unsetenv("COEXEC_SERVICE_CPUS");
    CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
    info = svc_info();
    CH_ASSERT_EQ(info.cpu, first);
    CH_ASSERT_EQ(info.shares_cpu, stream_on_cpu(info.cpu));
    ret = -1;
    CH_ASSERT_OK(coexec_offload(cpu_fn, NULL, &ret));
    CH_ASSERT_EQ(ret, first);
    coexec_config_t got;
    CH_ASSERT_OK(coexec_get_config(&got));
    CU_ASSERT(strcmp(got.service_cpus, v) == 0);
    ch_finalize();
}

/* COEXEC_SERVICE_IO: good values, any case; malformed ones name it */
static void t_config_io_env(void)
{
    static const struct {
        const char *val;
        coexec_service_io_t want;
    } good[] = {{"auto", COEXEC_SERVICE_IO_AUTO},
                {"AUTO", COEXEC_SERVICE_IO_AUTO},
                {"uring", COEXEC_SERVICE_IO_URING},
                {"io_uring", COEXEC_SERVICE_IO_URING},
                {"threads", COEXEC_SERVICE_IO_THREADS},
                {"Threads", COEXEC_SERVICE_IO_THREADS}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        coexec_config_t cfg;
        CH_ASSERT_OK(coexec_config_init(&cfg));
        CH_ASSERT_EQ(cfg.service_io, COEXEC_SERVICE_IO_AUTO);
        /* the variable wins over the field */
        cfg.service_io = good[i].want == COEXEC_SERVICE_IO_THREADS
                             ? COEXEC_SERVICE_IO_URING
                             : COEXEC_SERVICE_IO_THREADS;
        cfg.quiet = 1;
        setenv("COEXEC_SERVICE_IO", good[i].val, 1);
        int rc = coexec_init(&cfg);
        unsetenv("COEXEC_SERVICE_IO");
        CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
        coexec_config_t got;
        CH_ASSERT_OK(coexec_get_config(&got));
        CH_ASSERT_EQ(got.service_io, good[i].want);
        const char *path = svc_info().io_path;
        CU_ASSERT_PTR_NOT_NULL_FATAL(path);
        if (good[i].want == COEXEC_SERVICE_IO_THREADS)
            CU_ASSERT_STRING_EQUAL(path, "threads");
        ch_finalize();
    }
    static const char *bad[] = {"", "ring", "threads2", "1", " uring",
                                "uring ", "iouring", "auto,threads"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("COEXEC_SERVICE_IO", bad[i], 1);
        int rc = coexec_init(NULL);
        unsetenv("COEXEC_SERVICE_IO");
        if (rc == COEXEC_OK)
            ch_finalize();
        CH_ASSERT_RC(rc, COEXEC_EENV);
        CU_ASSERT_PTR_NOT_NULL(strstr(coexec_init_error(), "COEXEC_SERVICE_IO"));
        CH_ASSERT_EQ(coexec_initialized(), 0);
    }
}

static void t_config_io_bad_cfg(void)
{
    static const int bad[] = {3, -1, 100};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        coexec_config_t cfg;
        CH_ASSERT_OK(coexec_config_init(&cfg));
        cfg.service_io = (coexec_service_io_t)bad[i];
        CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(coexec_init_error(), "service_io"));
        CH_ASSERT_EQ(coexec_initialized(), 0);
    }
    /* a caller built before the field existed gets the default */
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.service_io = (coexec_service_io_t)77; /* beyond the old size */
    cfg.size = offsetof(coexec_config_t, service_io);
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    coexec_config_t got;
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.service_io, COEXEC_SERVICE_IO_AUTO);
    ch_finalize();
}

/* ======================================================================= */
/* sockets                                                                  */
/* ======================================================================= */

/* Reads exactly n bytes through coexec_read; returns bytes read. */
static long read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = coexec_read(fd, (char *)buf + got, n - got);
        if (r <= 0) {
            ch_fail_at(__FILE__, __LINE__, "coexec_read: %zd", r);
            break;
        }
        got += (size_t)r;
    }
    return (long)got;
}

typedef struct {
    int lfd;
    struct sockaddr_in addr;
    int rounds;
    atomic_int served;
    atomic_int talked;
} tcp_t;

static void acceptor_ult(void *arg)
{
    tcp_t *t = arg;
    for (int r = 0; r < t->rounds; r++) {
        struct sockaddr_in peer;
        memset(&peer, 0, sizeof peer);
        unsigned plen = sizeof peer;
        int c = coexec_accept(t->lfd, (struct sockaddr *)&peer, &plen);
        if (c < 0) {
            ch_fail_at(__FILE__, __LINE__, "coexec_accept: %d", c);
            return;
        }
        CH_CHECK_EQ(plen, sizeof peer);
        CH_CHECK_EQ(peer.sin_family, AF_INET);
        CH_CHECK_EQ(ntohl(peer.sin_addr.s_addr), INADDR_LOOPBACK);
        char msg[24], want[24];
        snprintf(want, sizeof want, "ping %06d", r);
        memset(msg, 0, sizeof msg);
        CH_CHECK_EQ(read_full(c, msg, 11), 11);
        CH_CHECK(memcmp(msg, want, 11) == 0);
        snprintf(msg, sizeof msg, "pong %06d", r);
        CH_CHECK_EQ(coexec_write(c, msg, 11), 11);
        CH_CHECK_EQ(coexec_close(c), 0);
        atomic_fetch_add(&t->served, 1);
    }
}

static void connector_ult(void *arg)
{
    tcp_t *t = arg;
    for (int r = 0; r < t->rounds; r++) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0) {
            ch_fail_at(__FILE__, __LINE__, "socket");
            return;
        }
        CH_CHECK_EQ(coexec_connect(s, (struct sockaddr *)&t->addr,
                                   sizeof t->addr),
                    0);
        char msg[24], want[24];
        snprintf(msg, sizeof msg, "ping %06d", r);
        CH_CHECK_EQ(coexec_write(s, msg, 11), 11);
        memset(msg, 0, sizeof msg);
        CH_CHECK_EQ(read_full(s, msg, 11), 11);
        snprintf(want, sizeof want, "pong %06d", r);
        CH_CHECK(memcmp(msg, want, 11) == 0);
        /* the server closed: end of stream */
        CH_CHECK_EQ(coexec_read(s, msg, 1), 0);
        CH_CHECK_EQ(coexec_close(s), 0);
        atomic_fetch_add(&t->talked, 1);
    }
}

static int tcp_listener(struct sockaddr_in *addr)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CU_ASSERT_FATAL(l >= 0);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr->sin_port = 0;
    CU_ASSERT_EQUAL_FATAL(bind(l, (struct sockaddr *)addr, sizeof *addr), 0);
    CU_ASSERT_EQUAL_FATAL(listen(l, 64), 0);
    socklen_t len = sizeof *addr;
    CU_ASSERT_EQUAL_FATAL(getsockname(l, (struct sockaddr *)addr, &len), 0);
    return l;
}

static void t_sockets_tcp(void)
{
    /* one service thread to start with: the accept holds it, so the
     * connects need the service to grow */
    svc_init(NSTREAMS, 1, 0);
    tcp_t t;
    memset(&t, 0, sizeof t);
    t.lfd = tcp_listener(&t.addr);
    t.rounds = (int)ch_iters(50, 3);
    coexec_thread_t ta, tc;
    spawn_on(1, acceptor_ult, &t, &ta);
    spawn_on(2, connector_ult, &t, &tc);
    CH_WAIT(atomic_load(&t.served) == t.rounds &&
            atomic_load(&t.talked) == t.rounds);
    CH_ASSERT_OK(coexec_thread_free(&ta));
    CH_ASSERT_OK(coexec_thread_free(&tc));
    CH_ASSERT_EQ(atomic_load(&t.served), t.rounds);
    CH_ASSERT_EQ(atomic_load(&t.talked), t.rounds);
    close(t.lfd);
    ch_finalize();
}

static void refused_ult(void *arg)
{
    struct sockaddr_in *addr = arg;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CH_CHECK(s >= 0);
    CH_CHECK_EQ(coexec_connect(s, (struct sockaddr *)addr, sizeof *addr),
                -ECONNREFUSED);
    close(s);
}

static void t_sockets_refused(void)
{
    /* a port that was bound and released again: nothing listens there */
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CU_ASSERT_FATAL(s >= 0);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CU_ASSERT_EQUAL_FATAL(bind(s, (struct sockaddr *)&addr, sizeof addr), 0);
    socklen_t len = sizeof addr;
    CU_ASSERT_EQUAL_FATAL(getsockname(s, (struct sockaddr *)&addr, &len), 0);
    close(s);
    svc_init(2, 0, 0);
    CH_ASSERT_OK(ch_run_ult_in(pool_of_rank(1), refused_ult, &addr));
    run_external(refused_ult, &addr);
    ch_finalize();
}

typedef struct {
    int fd;
    int rc_empty, rc_timeout, rc_wait, rc_out;
    short revents;
    long n;
    char buf[8];
    atomic_int polling;
} poll_t;

static void poll_ult(void *arg)
{
    poll_t *p = arg;
    struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
    p->rc_empty = coexec_poll(&pfd, 1, 0);
    pfd.revents = 0;
    p->rc_timeout = coexec_poll(&pfd, 1, 5);
    struct pollfd out = {.fd = p->fd, .events = POLLOUT};
    p->rc_out = coexec_poll(&out, 1, -1);
    CH_CHECK(out.revents & POLLOUT);
    atomic_store(&p->polling, 1);
    pfd.revents = 0;
    p->rc_wait = coexec_poll(&pfd, 1, -1);
    p->revents = pfd.revents;
    p->n = coexec_read(p->fd, p->buf, sizeof p->buf);
}

static void poll_writer_ult(void *arg)
{
    int *fd = arg;
    CH_CHECK_EQ(coexec_write(*fd, "wake", 4), 4);
}

static void t_sockets_poll(void)
{
    int sv[2];
    CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
                                     sv),
                          0);
    svc_init(NSTREAMS, 1, 0);
    int rounds = (int)ch_iters(20, 2);
    for (int i = 0; i < rounds; i++) {
        poll_t p;
        memset(&p, 0, sizeof p);
        p.fd = sv[0];
        p.rc_empty = p.rc_timeout = p.rc_wait = p.rc_out = -999;
        coexec_thread_t tp;
        spawn_on(1, poll_ult, &p, &tp);
        CH_WAIT(atomic_load(&p.polling));
        CH_ASSERT_OK(ch_run_ult_in(pool_of_rank(2), poll_writer_ult, &sv[1]));
        CH_ASSERT_OK(coexec_thread_free(&tp));
        CH_ASSERT_EQ(p.rc_empty, 0);
        CH_ASSERT_EQ(p.rc_timeout, 0);
        CH_ASSERT_EQ(p.rc_out, 1);
        CH_ASSERT_EQ(p.rc_wait, 1);
        CU_ASSERT(p.revents & POLLIN);
        CH_ASSERT_EQ(p.n, 4);
        CU_ASSERT(memcmp(p.buf, "wake", 4) == 0);
    }
#if !CH_SANITIZER
    /* bad arguments come back as -errno (the kernel refuses nfds above
     * RLIMIT_NOFILE before reading; sanitizers' poll reads them all, and
     * so does valgrind's check of the call's arguments) */
    struct pollfd bad = {.fd = sv[0], .events = POLLIN};
    if (!ch_on_valgrind())
        CH_ASSERT_EQ(coexec_poll(&bad, (unsigned long)1 << 30, 0), -EINVAL);
#endif
    ch_finalize();
    close(sv[0]);
    close(sv[1]);
}

typedef struct {
    int rc_ok, rc_port, rc_bad;
    int family;
    uint32_t addr;
    uint16_t port;
} gai_t;

static void gai_job(void *arg)
{
    gai_t *g = arg;
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *res = NULL;
    g->rc_ok = coexec_getaddrinfo("127.0.0.1", NULL, &hints, &res);
    if (g->rc_ok == 0 && res) {
        g->family = res->ai_family;
        if (res->ai_family == AF_INET)
            g->addr = ntohl(
                ((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr.s_addr);
        freeaddrinfo(res);
    }
    res = NULL;
    g->rc_port = coexec_getaddrinfo("127.0.0.1", "8080", &hints, &res);
    if (g->rc_port == 0 && res) {
        g->port = ntohs(((struct sockaddr_in *)(void *)res->ai_addr)->sin_port);
        freeaddrinfo(res);
    }
    res = NULL;
    hints.ai_flags = AI_NUMERICHOST;
    g->rc_bad = coexec_getaddrinfo("not a host", NULL, &hints, &res);
    if (g->rc_bad == 0 && res)
        freeaddrinfo(res);
}

static void gai_check(const gai_t *g)
{
    CH_ASSERT_EQ(g->rc_ok, 0);
    CH_ASSERT_EQ(g->family, AF_INET);
    CH_ASSERT_EQ(g->addr, INADDR_LOOPBACK);
    CH_ASSERT_EQ(g->rc_port, 0);
    CH_ASSERT_EQ(g->port, 8080);
    CH_ASSERT_EQ(g->rc_bad, EAI_NONAME);
}

static void t_sockets_getaddrinfo(void)
{
    gai_t g;
    memset(&g, 0, sizeof g);
    gai_job(&g); /* without the runtime */
    gai_check(&g);
    svc_init(NSTREAMS, 0, 0);
    uint64_t c0 = svc_completed();
    memset(&g, 0, sizeof g);
    CH_ASSERT_OK(ch_run_ult_in(pool_of_rank(3), gai_job, &g));
    gai_check(&g);
    CU_ASSERT(CH_WAIT(svc_completed() - c0 >= 3));
    memset(&g, 0, sizeof g);
    gai_job(&g); /* the main ULT */
    gai_check(&g);
    memset(&g, 0, sizeof g);
    run_external(gai_job, &g);
    gai_check(&g);
    ch_finalize();
}

/* ======================================================================= */
/* io: the io_uring path of the file calls                                  */
/* ======================================================================= */

/* White-box: the ring's busy count and batch statistics (src/service). */
uint32_t coexec__ring_busy(void);
void coexec__ring_stats(uint64_t *batches, uint64_t *sqes);
extern int coexec__service_ring_refuse;

/* stderr into a temporary file while it is captured. */
typedef struct {
    FILE *f;
    int saved;
} capture_t;

static void capture_begin(capture_t *c)
{
    fflush(stderr);
    c->f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(c->f);
    c->saved = dup(2);
    CU_ASSERT_FATAL(c->saved >= 0);
    CU_ASSERT_FATAL(dup2(fileno(c->f), 2) == 2);
}

/* Ends the capture; returns the number of lines containing needle. */
static int capture_end(capture_t *c, const char *needle)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    rewind(c->f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, c->f))
        n += strstr(line, needle) != NULL;
    fclose(c->f);
    return n;
}

static void init_io(coexec_service_io_t io, int nxs, int threads, int max)
{
    g_io = io;
    svc_init(nxs, threads, max);
    g_io = COEXEC_SERVICE_IO_AUTO;
}

/* coexec_service_get_info and the printed configuration name the path */
static void t_io_info_path(void)
{
    int avail = uring_available();
    const char *ring = avail ? "io_uring" : "threads";
    static const struct {
        coexec_service_io_t io;
        int ring;
    } cases[] = {{COEXEC_SERVICE_IO_AUTO, 1},
                 {COEXEC_SERVICE_IO_URING, 1},
                 {COEXEC_SERVICE_IO_THREADS, 0}};
    for (size_t i = 0; i < 3; i++) {
        capture_t cap;
        capture_begin(&cap);
        init_io(cases[i].io, 2, 0, 0);
        int warned = capture_end(&cap, "service_io");
        const char *want = cases[i].ring ? ring : "threads";
        coexec_service_info_t info = svc_info();
        CU_ASSERT_PTR_NOT_NULL_FATAL(info.io_path);
        CU_ASSERT_STRING_EQUAL(info.io_path, want);
        /* only "uring" asked for and not had warns */
        CH_ASSERT_EQ(warned,
                     cases[i].io == COEXEC_SERVICE_IO_URING && !avail ? 1 : 0);
        FILE *f = tmpfile();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CH_ASSERT_OK(coexec_print_config(f));
        rewind(f);
        char text[2048];
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
        char io_word[32];
        snprintf(io_word, sizeof io_word, "io=%s", want);
        CU_ASSERT_PTR_NOT_NULL(strstr(text, io_word));
        ch_finalize();
    }
}

/* A kernel that refuses io_uring: auto falls back silently, uring with
 * exactly one warning; file calls work either way */
static void t_io_fallback(void)
{
    char dir[64];
    tmpdir_make(dir);
    coexec__service_ring_refuse = 1;
    for (int k = 0; k < 2; k++) {
        coexec_service_io_t io =
            k ? COEXEC_SERVICE_IO_URING : COEXEC_SERVICE_IO_AUTO;
        capture_t cap;
        capture_begin(&cap);
        init_io(io, 2, 0, 0);
        int warned = capture_end(&cap, "service_io is uring");
        CH_ASSERT_EQ(warned, k ? 1 : 0);
        coexec_service_info_t info = svc_info();
        CU_ASSERT_PTR_NOT_NULL_FATAL(info.io_path);
        CU_ASSERT_STRING_EQUAL(info.io_path, "threads");
        make_subdirs(dir);
        fjob_t j = {.dir = dir, .i = k, .count = 2};
        CH_ASSERT_OK(ch_run_ult_in(pool_of_rank(1), file_ult, &j));
        CH_ASSERT_EQ(atomic_load(&j.done), 1);
        remove_subdirs(dir);
        ch_finalize();
    }
    coexec__service_ring_refuse = 0;
    tmpdir_remove(dir);
}

/* ---- a read that never completes does not hold back the others ------ */

typedef struct {
    int fd;
    long w;
    atomic_int done;
} sock_writer_t;

static void sock_writer_ult(void *arg)
{
    sock_writer_t *w = arg;
    w->w = coexec_write(w->fd, "to-peer", 7);
    atomic_store(&w->done, 1);
}

static void t_io_pipe_does_not_stall(void)
{
    if (!uring_or_skip())
        return;
    char dir[64];
    tmpdir_make(dir);
    enum { NPIPES = 3 };
    int p[NPIPES][2], sv[2];
    for (int i = 0; i < NPIPES; i++)
        make_pipe(p[i]);
    CU_ASSERT_EQUAL_FATAL(
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    /* one service thread that may not grow: only the ring can keep file
     * I/O going while the reads wait */
    init_io(COEXEC_SERVICE_IO_URING, NSTREAMS, 1, 1);
    reader_t r[NPIPES + 1];
    coexec_thread_t tr[NPIPES + 1];
    memset(r, 0, sizeof r);
    for (int i = 0; i <= NPIPES; i++) {
        r[i].fd = i < NPIPES ? p[i][0] : sv[0];
        r[i].n = -999;
        spawn_on(i % NSTREAMS, reader_ult, &r[i], &tr[i]);
    }
    CU_ASSERT_FATAL(CH_WAIT(coexec__ring_busy() >= NPIPES + 1));

    /* the same socket written while its read waits (another lane) */
    sock_writer_t sw = {.fd = sv[0], .w = -999};
    CH_ASSERT_OK(ch_run_ult_in(pool_of_rank(2), sock_writer_ult, &sw));
    CH_ASSERT_EQ(sw.w, 7);
    char peer[8] = {0};
    CH_ASSERT_EQ(read(sv[1], peer, 7), 7);
    CU_ASSERT(memcmp(peer, "to-peer", 7) == 0);

    /* whole file jobs (ring and thread calls) complete meanwhile */
    make_subdirs(dir);
    (void)file_jobs_on_ults(dir, ch_iters(64, 8));
    CH_ASSERT_EQ(svc_info().threads, 1);
    /* nothing was written to them: the reads still wait */
    for (int i = 0; i <= NPIPES; i++)
        CH_ASSERT_EQ(atomic_load(&r[i].done), 0);
    for (int i = 0; i < NPIPES; i++)
        poke(p[i][1], (unsigned char)('a' + i));
    poke(sv[1], 'z');
    for (int i = 0; i <= NPIPES; i++)
        CH_ASSERT_OK(coexec_thread_free(&tr[i]));
    for (int i = 0; i <= NPIPES; i++) {
        CH_ASSERT_EQ(r[i].n, 1);
        CH_ASSERT_EQ(r[i].buf[0], i < NPIPES ? 'a' + i : 'z');
    }
    remove_subdirs(dir);
    ch_finalize();
    for (int i = 0; i < NPIPES; i++)
        close_pipe(p[i]);
    close(sv[0]);
    close(sv[1]);
    tmpdir_remove(dir);
}

/* ---- many requests at once: each completes exactly once -------------- */

#define B_CHUNK 512

typedef struct {
    int rfd, wfd;
    int idx;
    int rounds;
    long calls;
    long good;
} batch_t;

static unsigned char bpat(long off) { return (unsigned char)(off * 13 + 5); }

static void batch_ult(void *arg)
{
    batch_t *b = arg;
    unsigned char buf[B_CHUNK];
    for (int k = 0; k < b->rounds; k++) {
        off_t off = (off_t)((b->idx * 7 + k) % 64) * B_CHUNK;
        b->calls++;
        ssize_t got = coexec_pread(b->rfd, buf, B_CHUNK, off);
        bool ok = got == B_CHUNK;
        for (int i = 0; ok && i < B_CHUNK; i++)
            ok = buf[i] == bpat(off + i);
        memset(buf, (unsigned char)b->idx, sizeof buf);
        b->calls++;
        off_t woff = ((off_t)b->idx * b->rounds + k) * B_CHUNK;
        ok = ok && coexec_pwrite(b->wfd, buf, B_CHUNK, woff) == B_CHUNK;
        b->good += ok;
    }
}

static void t_io_batch_exactly_once(void)
{
    if (!uring_or_skip())
        return;
    char dir[64], rpath[128], wpath[128];
    tmpdir_make(dir);
    snprintf(rpath, sizeof rpath, "%s/r", dir);
    snprintf(wpath, sizeof wpath, "%s/w", dir);
    int rfd = open(rpath, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    int wfd = open(wpath, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    CU_ASSERT_FATAL(rfd >= 0 && wfd >= 0);
    unsigned char *data = malloc(64 * B_CHUNK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    for (long i = 0; i < 64 * B_CHUNK; i++)
        data[i] = bpat(i);
    CH_ASSERT_EQ(write(rfd, data, 64 * B_CHUNK), 64 * B_CHUNK);
    free(data);

    init_io(COEXEC_SERVICE_IO_URING, NSTREAMS, 1, 0);
    long n = ch_iters(512, 16);
    int rounds = (int)ch_iters(20, 4);
    batch_t *b = calloc((size_t)n, sizeof *b);
    coexec_thread_t *t = calloc((size_t)n, sizeof *t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    uint64_t bat0, sq0, bat1, sq1;
    coexec__ring_stats(&bat0, &sq0);
    uint64_t c0 = svc_completed();
    for (long i = 0; i < n; i++) {
        b[i] = (batch_t){.rfd = rfd, .wfd = wfd, .idx = (int)i,
                         .rounds = rounds};
        spawn_on((int)(i % NSTREAMS), batch_ult, &b[i], &t[i]);
    }
    free_threads(t, n);
    uint64_t c1 = svc_completed();
    coexec__ring_stats(&bat1, &sq1);
    long calls = 0, good = 0;
    for (long i = 0; i < n; i++) {
        calls += b[i].calls;
        good += b[i].good;
    }
    CH_ASSERT_EQ(calls, 2 * n * rounds);
    CH_ASSERT_EQ(good, n * rounds);
    /* every call completed once: no more, no fewer */
    CH_ASSERT_EQ(c1 - c0, (uint64_t)calls);
    CH_ASSERT_EQ(coexec__ring_busy(), 0);
    printf("\n    %ld calls in %llu submits (%.1f per submit)\n", calls,
           (unsigned long long)(bat1 - bat0),
           bat1 > bat0 ? (double)(sq1 - sq0) / (double)(bat1 - bat0) : 0.0);
    ch_finalize();
    /* what the pwrites left, byte for byte */
    unsigned char buf[B_CHUNK];
    for (long i = 0; i < n; i++)
        for (int k = 0; k < rounds; k++) {
            off_t woff = ((off_t)i * rounds + k) * B_CHUNK;
            CH_ASSERT_EQ_FATAL(pread(wfd, buf, B_CHUNK, woff), B_CHUNK);
            for (int x = 0; x < B_CHUNK; x++)
                if (buf[x] != (unsigned char)i) {
                    CH_ASSERT_EQ_FATAL(buf[x], (unsigned char)i);
                }
        }
    free(b);
    free(t);
    close(rfd);
    close(wfd);
    tmpdir_remove(dir);
}

/* ---- finalize while ring calls are in the kernel --------------------- */

typedef struct {
    int fd;
    int rounds;
    long ok, canceled, other;
    atomic_int done;
} looper_io_t;

static void looper_io_ult(void *arg)
{
    looper_io_t *l = arg;
    unsigned char buf[64];
    for (int k = 0; k < l->rounds; k++) {
        ssize_t r = coexec_pread(l->fd, buf, sizeof buf, 0);
        if (r == (ssize_t)sizeof buf)
            l->ok++;
        else if (r == COEXEC_ECANCELED)
            l->canceled++;
        else
            l->other++;
        if (coexec_yield() != COEXEC_OK)
            break;
    }
    atomic_store(&l->done, 1);
}

static void t_io_finalize_in_flight(void)
{
    if (!uring_or_skip())
        return;
    enum { NREAD = 4, NLOOP = 4 };
    int p[NREAD][2];
    for (int i = 0; i < NREAD; i++)
        make_pipe(p[i]);
    char dir[64], path[128];
    tmpdir_make(dir);
    snprintf(path, sizeof path, "%s/f", dir);
    int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    unsigned char z[64] = {0};
    CH_ASSERT_EQ(write(fd, z, sizeof z), (long)sizeof z);

    init_io(COEXEC_SERVICE_IO_URING, NSTREAMS, 1, 1);
    static reader_t r[NREAD];
    memset(r, 0, sizeof r);
    for (int i = 0; i < NREAD; i++) {
        r[i].fd = p[i][0];
        r[i].n = -999;
        CH_ASSERT_OK(coexec_thread_create_on(xs_rank(i % NSTREAMS),
                                             reader_ult, &r[i], NULL, NULL));
    }
    /* the reads are in the kernel before anything else is queued (a read
     * submitted once finalize began would run directly, on its stream) */
    CU_ASSERT_FATAL(CH_WAIT(coexec__ring_busy() >= NREAD));
    static looper_io_t l[NLOOP];
    memset(l, 0, sizeof l);
    for (int i = 0; i < NLOOP; i++) {
        l[i].fd = fd;
        l[i].rounds = (int)ch_iters(2000, 50);
        CH_ASSERT_OK(coexec_thread_create_on(xs_rank(i % NSTREAMS),
                                             looper_io_ult, &l[i], NULL,
                                             NULL));
    }

    capture_t cap;
    capture_begin(&cap);
    int rc = coexec_finalize();
    int lost = capture_end(&cap, "could not be cancelled");
    CH_ASSERT_RC(rc, COEXEC_OK);
    /* pipe reads are cancellable: none was abandoned */
    CH_ASSERT_EQ(lost, 0);
    for (int i = 0; i < NREAD; i++) {
        CH_ASSERT_EQ(atomic_load(&r[i].done), 1);
        CH_ASSERT_EQ(r[i].n, COEXEC_ECANCELED);
    }
    for (int i = 0; i < NLOOP; i++) {
        CH_ASSERT_EQ(atomic_load(&l[i].done), 1);
        CH_ASSERT_EQ(l[i].other, 0);
        CH_ASSERT_EQ(l[i].ok + l[i].canceled, l[i].rounds);
    }
    /* a new runtime has a working ring */
    init_io(COEXEC_SERVICE_IO_URING, 2, 0, 0);
    CU_ASSERT_STRING_EQUAL(svc_info().io_path, "io_uring");
    poke(p[0][1], 'q');
    reader_t again = {.fd = p[0][0], .n = -999};
    CH_ASSERT_OK(ch_run_ult_in(pool_of_rank(1), reader_ult, &again));
    CH_ASSERT_EQ(again.n, 1);
    CH_ASSERT_EQ(again.buf[0], 'q');
    ch_finalize();
    for (int i = 0; i < NREAD; i++)
        close_pipe(p[i]);
    close(fd);
    tmpdir_remove(dir);
}

/* ======================================================================= */
/* tables                                                                   */
/* ======================================================================= */

static const ch_test_t offload_tests[] = {
    {"ults_on_every_stream", t_offload_ults},
    {"main_and_external", t_offload_main_and_external},
    {"errors", t_offload_errors},
    {"wrappers_inside_fn", t_offload_wrappers_inside},
    {"many_callers", t_offload_many_callers},
    {NULL, NULL}};
static const ch_test_t request_tests[] = {
    {"tasklet_pending_then_ready", t_request_tasklet_pending_then_ready},
    {"many_tasklets", t_request_many_tasklets},
    {"wait", t_request_wait},
    {"args", t_request_args},
    {"resubmit_busy", t_request_resubmit_busy},
    {NULL, NULL}};
static const ch_test_t cancel_tests[] = {
    {"queued", t_cancel_queued},
    {"many", t_cancel_many},
    {NULL, NULL}};
static const ch_test_t files_tests[] = {
    {"ults_uring", t_files_ults_uring},
    {"ults_threads", t_files_ults_threads},
    {"external_direct", t_files_external_direct},
    {"without_runtime", t_files_without_runtime},
    {NULL, NULL}};
static const ch_test_t errors_tests[] = {
    {"everywhere", t_errors_everywhere},
    {"everywhere_threads", t_errors_everywhere_threads},
    {"offload_result", t_errors_offload_result},
    {NULL, NULL}};
static const ch_test_t stuck_tests[] = {
    {"grow_and_shrink", t_stuck_calls},
    {"more_than_max", t_stuck_more_than_max},
    {"external_and_tasklet", t_stuck_external_and_tasklet},
    {NULL, NULL}};
static const ch_test_t compute_tests[] = {
    {"stream_free", t_compute_stream_free},
    {NULL, NULL}};
static const ch_test_t finalize_tests[] = {
    {"in_flight", t_finalize_in_flight},
    {"running_ult_call", t_finalize_running_ult_call},
    {"after_tasklet_submit", t_finalize_after_tasklet_submit},
    {NULL, NULL}};
static const ch_test_t config_tests[] = {
    {"defaults", t_config_defaults},
    {"env_malformed", t_config_env_malformed},
    {"env_values", t_config_env_values},
    {"bad_cfg", t_config_bad_cfg},
    {"cpus", t_config_cpus},
    {"io_env", t_config_io_env},
    {"io_bad_cfg", t_config_io_bad_cfg},
    {NULL, NULL}};
static const ch_test_t sockets_tests[] = {
    {"tcp", t_sockets_tcp},
    {"refused", t_sockets_refused},
    {"poll", t_sockets_poll},
    {"getaddrinfo", t_sockets_getaddrinfo},
    {NULL, NULL}};

static const ch_test_t io_tests[] = {
    {"info_path", t_io_info_path},
    {"fallback", t_io_fallback},
    {"pipe_does_not_stall", t_io_pipe_does_not_stall},
    {"batch_exactly_once", t_io_batch_exactly_once},
    {"finalize_in_flight", t_io_finalize_in_flight},
    {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"offload", offload_tests},   {"request", request_tests},
    {"cancel", cancel_tests},     {"files", files_tests},
    {"errors", errors_tests},     {"stuck", stuck_tests},
    {"compute", compute_tests},   {"finalize", finalize_tests},
    {"config", config_tests},     {"sockets", sockets_tests},
    {"io", io_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
