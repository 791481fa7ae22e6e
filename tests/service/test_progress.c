/*
 * tests/service/test_progress.c: progress beside blocked calls. The stuck
 * suite: reads blocked on empty pipes do not hold back other calls (the
 * service grows, never past service_max_threads, the blocked reads
 * complete once written to, and the service shrinks back to
 * service_threads when idle; calls of external threads and tasklets'
 * requests get past a stuck call too). The compute suite: a CPU-bound ULT
 * keeps counting on the stream whose other ULTs wait for offloaded I/O
 */
#include "service_test.h"

/* ======================================================================= */
/* stuck                                                                    */
/* ======================================================================= */

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
    ch_spawn_on(1, reader_ult, &r0, &tr0);
    ch_spawn_on(2, blocked_ult, &r1, &tr1);
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
        ch_spawn_on((int)(i % NSTREAMS), quick_ult, &q[i], &t[i]);
    }
    int max_seen = 0;
    CH_WAIT(({
        coexec_service_info_t in = svc_info();
        if (in.threads > max_seen)
            max_seen = in.threads;
        atomic_load(&completed) == n;
    }));
    ch_free_threads(t, n);
    CH_ASSERT_EQ(atomic_load(&completed), n);
    /* nothing was written: the blocked reads are still blocked */
    CH_ASSERT_EQ(atomic_load(&r0.done), 0);
    CH_ASSERT_EQ(atomic_load(&r1.done), 0);
    CH_ASSERT_EQ(atomic_load(&r1.b.finished), 0);

    /* a second call known to be blocked: two threads are in read() now */
    ch_spawn_on(3, blocked_ult, &r2, &tr2);
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
    CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(3), writer_ult, &w));
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
    ch_ext_t ea;
    ch_ext_start(&ea, ext_blocked_call, &a);
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&a.b.started)));

    /* an external thread's call completes meanwhile */
    quick_call_t q = {.rc = 1, .ret = 0};
    ch_run_external(ext_quick_call, &q);
    CH_ASSERT_RC(q.rc, COEXEC_OK);
    CH_ASSERT_EQ(q.ret, 321);

    /* so does a tasklet's request, on every stream */
    for (int r = 0; r < NSTREAMS; r++) {
        tkreq_t t;
        tkreq_init(&t, ret_arg_fn, (void *)(intptr_t)(600 + r));
        coexec_tasklet_t k;
        CH_ASSERT_OK(coexec_tasklet_create_on(ch_xstream(r), tkreq_body, &t, &k));
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
    ch_ext_join(&ea);
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
        ch_spawn_on(i % NSTREAMS, reader_ult, &r[i], &t[i]);
    }
    for (int i = 0; i < NREAD; i++)
        CH_WAIT(atomic_load(&r[i].started));
    ch_linger(20);
    coexec_service_info_t info = svc_info();
    CU_ASSERT(info.threads <= MAX_THREADS);
    CU_ASSERT(info.threads >= 1);
    /* release them one at a time, from the test thread directly */
    for (int i = 0; i < NREAD; i++) {
        unsigned char c = (unsigned char)('0' + i);
        CH_ASSERT_EQ(write(p[i][1], &c, 1), 1);
    }
    ch_free_threads(t, NREAD);
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
    ch_free_threads(t, NIO + 1);
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

const ch_test_t service_stuck_tests[] = {
    {"grow_and_shrink", t_stuck_calls},
    {"more_than_max", t_stuck_more_than_max},
    {"external_and_tasklet", t_stuck_external_and_tasklet},
    {NULL, NULL}};
const ch_test_t service_compute_tests[] = {
    {"stream_free", t_compute_stream_free},
    {NULL, NULL}};
