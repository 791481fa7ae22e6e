/*
 * tests/mpi/test_mpi.c: libcoexec-mpi (coexec/mpi.h) between two MPI
 * ranks, run as `mpirun -np 2 test_mpi SUITE`. Both ranks run the suite;
 * rank 0 ("us") usually waits and rank 1 ("the peer") sends once told to,
 * so that waits really park: every suite checks the values moved, and the
 * engine's counts where a park is certain.
 *
 *   wait      ULTs on 4 streams park in coexec_mpi_wait on receives the
 *             peer sends only once all of them are pending; values, and
 *             every wait parked and was completed by the poller
 *   waitall   null and active requests mixed; statuses (source, tag,
 *             count); waitall and pollall of a tasklet
 *   waitany   completes exactly one request per call, the others stay
 *             pending; all-null and empty sets give MPI_UNDEFINED
 *   tasklet   tasklets poll (COEXEC_PENDING, then COEXEC_OK once woken)
 *   migrate   a ULT parked on a receive is moved to another stream and
 *             resumes there; a ULT that moves itself between its start
 *             and its wait
 *   calls     send, recv, sendrecv, bcast, reduce, allreduce and barrier
 *             from ULTs on several streams and from an external thread
 *   placement run with mpiexec --bind-to core and --bind-to none: the
 *             real CPU masks of both ranks' streams never share a CPU
 *   errors    bad arguments, wrong callers, a truncated receive
 *             (COEXEC_EIO and MPI_ERR_TRUNCATE in its status, through the
 *             first test and through the poller), finalize with waits
 *             pending, coexec_mpi_get_info
 *
 * CH_MPI_LEVEL=funneled|serialized|single selects the thread level asked
 * of MPI_Init_thread (default multiple); the "single" entry expects
 * COEXEC_EPERM from every call.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <coexec/mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int me, peer, level;

#define NSTREAMS 4
#define TAG_GO 999

/* Rank 1 waits for rank 0's word that its waits are pending. */
static void peer_await_go(void)
{
    int x;
    MPI_Recv(&x, 1, MPI_INT, 0, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void say_go(void)
{
    int x = 1;
    CU_ASSERT_EQUAL(coexec_mpi_send(&x, 1, MPI_INT, 1, TAG_GO, MPI_COMM_WORLD),
                    COEXEC_OK);
}

static uint64_t info_field(size_t off)
{
    coexec_mpi_info_t i = {.size = sizeof i};
    CH_CHECK_RC(coexec_mpi_get_info(&i), COEXEC_OK);
    return *(uint64_t *)((char *)&i + off);
}
#define INFO(f) info_field(offsetof(coexec_mpi_info_t, f))

/* Waits (main ULT) until n waits are pending in the engine. */
static bool await_pending(uint64_t n)
{
    return CH_WAIT(INFO(pending) >= n);
}

/* ---- wait ------------------------------------------------------------------- */

typedef struct {
    int tag, value, got;
    int rc;
    MPI_Status st;
} recv_t;

static void recv_ult(void *arg)
{
    recv_t *r = arg;
    MPI_Request q;
    CH_CHECK(MPI_Irecv(&r->value, 1, MPI_INT, peer, r->tag, MPI_COMM_WORLD,
                       &q) == MPI_SUCCESS);
    r->rc = coexec_mpi_wait(&q, &r->st);
    CH_CHECK(q == MPI_REQUEST_NULL);
    r->got = 1;
}

static void spawn_all(coexec_thread_t *t, int n, coexec_thread_fn_t fn,
                      void *arr, size_t sz)
{
    for (int i = 0; i < n; i++)
        ch_spawn_on(i % NSTREAMS, fn, (char *)arr + sz * (size_t)i, &t[i]);
}

static void test_wait(void)
{
    ch_init(NSTREAMS);
    int n = (int)ch_iters(64, 16);
    if (me == 0) {
        recv_t *r = calloc((size_t)n, sizeof *r);
        coexec_thread_t *t = calloc((size_t)n, sizeof *t);
        for (int i = 0; i < n; i++)
            r[i].tag = i;
        uint64_t parked0 = INFO(parked), done0 = INFO(completed);
        spawn_all(t, n, recv_ult, r, sizeof *r);
        CU_ASSERT_FATAL(await_pending((uint64_t)n));
        say_go();
        ch_free_threads(t, n);
        for (int i = 0; i < n; i++) {
            CU_ASSERT_EQUAL(r[i].rc, COEXEC_OK);
            CU_ASSERT_EQUAL(r[i].value, 1000 + i);
            CU_ASSERT_EQUAL(r[i].st.MPI_TAG, i);
            CU_ASSERT_EQUAL(r[i].st.MPI_SOURCE, 1);
        }
        CU_ASSERT(INFO(parked) - parked0 >= (uint64_t)n);
        CU_ASSERT(INFO(completed) - done0 >= (uint64_t)n);
        CU_ASSERT_EQUAL(INFO(pending), 0);
        free(r);
        free(t);
    } else {
        peer_await_go();
        for (int i = n - 1; i >= 0; i--) {
            int v = 1000 + i;
            MPI_Send(&v, 1, MPI_INT, 0, i, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ch_finalize();
}

/* ---- waitall ------------------------------------------------------------------ */

#define K 6

typedef struct {
    coexec_mpi_op_t op;
    MPI_Request q[K];
    MPI_Status st[K];
    int v[K];
    int polls, pending_seen, rc;
} allp_t;

static coexec_poll_status_t pollall_tasklet(coexec_poll_t *cx, void *arg)
{
    allp_t *a = arg;
    if (a->polls++ == 0) {
        for (int i = 0; i < K; i++)
            CH_CHECK(MPI_Irecv(&a->v[i], 1, MPI_INT, peer, 100 + i,
                               MPI_COMM_WORLD, &a->q[i]) == MPI_SUCCESS);
        a->q[2] = MPI_REQUEST_NULL; /* a null one among them */
    }
    int rc = coexec_mpi_pollall(cx, &a->op, K, a->q, a->st);
    if (rc == COEXEC_PENDING) {
        a->pending_seen = 1;
        return COEXEC_PENDING;
    }
    a->rc = rc;
    return COEXEC_READY;
}

static void send_tags(int base, int n, int skip)
{
    for (int i = n - 1; i >= 0; i--) {
        int v = base * 10 + i;
        if (i != skip)
            MPI_Send(&v, 1, MPI_INT, 0, base + i, MPI_COMM_WORLD);
    }
}

static void test_waitall(void)
{
    ch_init(NSTREAMS);
    if (me == 0) {
        /* From the main ULT: a null request among active ones. */
        MPI_Request q[K];
        MPI_Status st[K];
        int v[K] = {0};
        for (int i = 0; i < K; i++)
            MPI_Irecv(&v[i], 1, MPI_INT, 1, 200 + i, MPI_COMM_WORLD, &q[i]);
        MPI_Request skipped = q[3];
        q[3] = MPI_REQUEST_NULL;
        say_go();
        CU_ASSERT_EQUAL(coexec_mpi_waitall(K, q, st), COEXEC_OK);
        for (int i = 0; i < K; i++) {
            CU_ASSERT(q[i] == MPI_REQUEST_NULL);
            if (i == 3)
                continue;
            int cnt = -1;
            MPI_Get_count(&st[i], MPI_INT, &cnt);
            CU_ASSERT_EQUAL(cnt, 1);
            CU_ASSERT_EQUAL(st[i].MPI_TAG, 200 + i);
            CU_ASSERT_EQUAL(v[i], 2000 + i);
        }
        /* The one left out: received by a plain wait once sent. */
        CU_ASSERT_EQUAL(coexec_mpi_wait(&skipped, MPI_STATUS_IGNORE), COEXEC_OK);
        CU_ASSERT_EQUAL(v[3], 2000 + 3);
        /* From a tasklet, with pollall. */
        allp_t a;
        memset(&a, 0, sizeof a);
        coexec_tasklet_t k;
        CU_ASSERT_EQUAL_FATAL(coexec_tasklet_create(ch_main_pool(1),
                                                    pollall_tasklet, &a, &k),
                              COEXEC_OK);
        CU_ASSERT_FATAL(await_pending(1));
        say_go();
        CU_ASSERT_EQUAL(coexec_tasklet_join(k), COEXEC_OK);
        CU_ASSERT_EQUAL(coexec_tasklet_free(&k), COEXEC_OK);
        CU_ASSERT_EQUAL(a.rc, COEXEC_OK);
        CU_ASSERT_EQUAL(a.pending_seen, 1);
        for (int i = 0; i < K; i++)
            if (i != 2)
                CU_ASSERT_EQUAL(a.v[i], 1000 + i);
        /* Empty. */
        CU_ASSERT_EQUAL(coexec_mpi_waitall(0, NULL, MPI_STATUSES_IGNORE),
                        COEXEC_OK);
    } else {
        peer_await_go();
        send_tags(200, K, -1);
        peer_await_go();
        send_tags(100, K, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ch_finalize();
}

/* ---- waitany ------------------------------------------------------------------ */

static void test_waitany(void)
{
    ch_init(NSTREAMS);
    if (me == 0) {
        MPI_Request q[K];
        int v[K] = {0}, seen[K] = {0};
        for (int i = 0; i < K; i++)
            MPI_Irecv(&v[i], 1, MPI_INT, 1, 300 + i, MPI_COMM_WORLD, &q[i]);
        say_go();
        for (int n = 0; n < K; n++) {
            int idx = -5;
            MPI_Status st;
            CU_ASSERT_EQUAL(coexec_mpi_waitany(K, q, &idx, &st), COEXEC_OK);
            CU_ASSERT_FATAL(idx >= 0 && idx < K);
            CU_ASSERT_EQUAL(seen[idx], 0);
            seen[idx] = 1;
            CU_ASSERT(q[idx] == MPI_REQUEST_NULL);
            CU_ASSERT_EQUAL(st.MPI_TAG, 300 + idx);
            CU_ASSERT_EQUAL(v[idx], 3000 + idx);
            /* Exactly one more completed by each call. */
            int nulls = 0;
            for (int i = 0; i < K; i++)
                nulls += q[i] == MPI_REQUEST_NULL;
            CU_ASSERT_EQUAL(nulls, n + 1);
        }
        int idx = 7;
        CU_ASSERT_EQUAL(coexec_mpi_waitany(K, q, &idx, MPI_STATUS_IGNORE),
                        COEXEC_OK);
        CU_ASSERT_EQUAL(idx, MPI_UNDEFINED);
        CU_ASSERT_EQUAL(coexec_mpi_waitany(0, NULL, &idx, MPI_STATUS_IGNORE),
                        COEXEC_OK);
        CU_ASSERT_EQUAL(idx, MPI_UNDEFINED);
    } else {
        peer_await_go();
        send_tags(300, K, -1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ch_finalize();
}

/* ---- tasklet ------------------------------------------------------------------ */

typedef struct {
    coexec_mpi_op_t op;
    MPI_Request q;
    MPI_Status st;
    int tag, v, polls, pending_seen, rc;
} tpoll_t;

static coexec_poll_status_t poll_tasklet(coexec_poll_t *cx, void *arg)
{
    tpoll_t *t = arg;
    if (t->polls++ == 0)
        CH_CHECK(MPI_Irecv(&t->v, 1, MPI_INT, peer, t->tag, MPI_COMM_WORLD,
                           &t->q) == MPI_SUCCESS);
    int rc = coexec_mpi_poll(cx, &t->op, &t->q, &t->st);
    if (rc == COEXEC_PENDING) {
        t->pending_seen = 1;
        return COEXEC_PENDING;
    }
    t->rc = rc;
    return COEXEC_READY;
}

static void test_tasklet(void)
{
    ch_init(NSTREAMS);
    int n = (int)ch_iters(32, 8);
    if (me == 0) {
        tpoll_t *t = calloc((size_t)n, sizeof *t);
        coexec_tasklet_t *k = calloc((size_t)n, sizeof *k);
        for (int i = 0; i < n; i++) {
            t[i].tag = 400 + i;
            CU_ASSERT_EQUAL_FATAL(coexec_tasklet_create(ch_main_pool(i % NSTREAMS),
                                                        poll_tasklet, &t[i], &k[i]),
                                  COEXEC_OK);
        }
        CU_ASSERT_FATAL(await_pending((uint64_t)n));
        say_go();
        for (int i = 0; i < n; i++) {
            CU_ASSERT_EQUAL(coexec_tasklet_join(k[i]), COEXEC_OK);
            CU_ASSERT_EQUAL(coexec_tasklet_free(&k[i]), COEXEC_OK);
            CU_ASSERT_EQUAL(t[i].rc, COEXEC_OK);
            CU_ASSERT_EQUAL(t[i].pending_seen, 1);
            CU_ASSERT_EQUAL(t[i].v, 4000 + i);
            CU_ASSERT_EQUAL(t[i].st.MPI_TAG, 400 + i);
            CU_ASSERT(t[i].q == MPI_REQUEST_NULL);
        }
        free(t);
        free(k);
    } else {
        peer_await_go();
        send_tags(400, n, -1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ch_finalize();
}

/* ---- migrate ------------------------------------------------------------------ */

typedef struct {
    int v, rc, rank_after, self_move;
    atomic_int started;
} mig_t;

static void mig_ult(void *arg)
{
    mig_t *m = arg;
    MPI_Request q;
    MPI_Irecv(&m->v, 1, MPI_INT, peer, 500 + m->self_move, MPI_COMM_WORLD, &q);
    if (m->self_move) {
        coexec_thread_t self;
        CH_CHECK_RC(coexec_thread_self(&self), COEXEC_OK);
        CH_CHECK_RC(coexec_thread_migrate_to_xstream(self, ch_xstream(3)),
                    COEXEC_OK);
        /* Not stolen from 3 once woken. */
        CH_CHECK_RC(coexec_unit_set_pinned(coexec_thread_unit(self), 1),
                    COEXEC_OK);
    }
    atomic_store(&m->started, 1);
    m->rc = coexec_mpi_wait(&q, MPI_STATUS_IGNORE);
    m->rank_after = ch_self_rank();
}

static void test_migrate(void)
{
    ch_init(NSTREAMS);
    if (me == 0) {
        mig_t a = {0}, b = {.self_move = 1};
        coexec_thread_t ta, tb;
        ch_spawn_on(1, mig_ult, &a, &ta);
        CU_ASSERT_EQUAL_FATAL(coexec_unit_set_pinned(coexec_thread_unit(ta), 1),
                              COEXEC_OK); /* not stolen: it parks on 1 */
        CU_ASSERT_FATAL(await_pending(1));
        CU_ASSERT_FATAL(CH_WAIT(ch_thread_state(ta) == COEXEC_UNIT_BLOCKED));
        CU_ASSERT_EQUAL(coexec_unit_set_pinned(coexec_thread_unit(ta), 0),
                        COEXEC_OK);
        CU_ASSERT_EQUAL(coexec_thread_migrate_to_xstream(ta, ch_xstream(2)),
                        COEXEC_OK);
        ch_spawn_on(1, mig_ult, &b, &tb);
        CU_ASSERT_FATAL(await_pending(2));
        say_go();
        ch_free_threads(&ta, 1);
        ch_free_threads(&tb, 1);
        CU_ASSERT_EQUAL(a.rc, COEXEC_OK);
        CU_ASSERT_EQUAL(a.v, 5000);
        CU_ASSERT_EQUAL(a.rank_after, 2);
        CU_ASSERT_EQUAL(b.rc, COEXEC_OK);
        CU_ASSERT_EQUAL(b.v, 5001);
        CU_ASSERT_EQUAL(b.rank_after, 3);
    } else {
        peer_await_go();
        send_tags(500, 2, -1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ch_finalize();
}

/* ---- calls ------------------------------------------------------------------ */

typedef struct {
    int id, rc;
} call_t;

/* Each of n ULTs (or an external thread) exchanges with the same id on
 * the peer: sendrecv, then recv/send in an order by rank. */
static void exchange(call_t *c)
{
    int out = me * 100000 + c->id, in = -1;
    MPI_Status st;
    int rc = coexec_mpi_sendrecv(&out, 1, MPI_INT, peer, 600 + c->id, &in, 1,
                                 MPI_INT, peer, 600 + c->id, MPI_COMM_WORLD, &st);
    CH_CHECK_RC(rc, COEXEC_OK);
    CH_CHECK(in == peer * 100000 + c->id && st.MPI_SOURCE == peer);
    in = -1;
    if (me == 0) {
        CH_CHECK_RC(coexec_mpi_send(&out, 1, MPI_INT, peer, 1600 + c->id,
                                    MPI_COMM_WORLD), COEXEC_OK);
        CH_CHECK_RC(coexec_mpi_recv(&in, 1, MPI_INT, peer, 1600 + c->id,
                                    MPI_COMM_WORLD, &st), COEXEC_OK);
    } else {
        CH_CHECK_RC(coexec_mpi_recv(&in, 1, MPI_INT, peer, 1600 + c->id,
                                    MPI_COMM_WORLD, &st), COEXEC_OK);
        CH_CHECK_RC(coexec_mpi_send(&out, 1, MPI_INT, peer, 1600 + c->id,
                                    MPI_COMM_WORLD), COEXEC_OK);
    }
    CH_CHECK(in == peer * 100000 + c->id);
    c->rc = 1;
}

static void exchange_ult(void *arg)
{
    exchange(arg);
}

static void *exchange_thread(void *arg)
{
    CH_CHECK(coexec_self_caller() == COEXEC_CALLER_EXTERNAL);
    exchange(arg);
    return NULL;
}

static void test_calls(void)
{
    ch_init(NSTREAMS);
    int n = (int)ch_iters(32, 8);
    call_t *c = calloc((size_t)n + 1, sizeof *c);
    coexec_thread_t *t = calloc((size_t)n, sizeof *t);
    for (int i = 0; i <= n; i++)
        c[i].id = i;
    spawn_all(t, n, exchange_ult, c, sizeof *c);
    /* The external thread is only possible where MPI may be called from
     * any thread. */
    pthread_t th;
    bool ext = level == MPI_THREAD_MULTIPLE || level == MPI_THREAD_SERIALIZED;
    if (ext)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, exchange_thread, &c[n]), 0);
    ch_free_threads(t, n);
    if (ext)
        pthread_join(th, NULL);
    for (int i = 0; i < n + (ext ? 1 : 0); i++)
        CU_ASSERT_EQUAL(c[i].rc, 1);

    /* Collectives from the main ULT. */
    int x = me == 0 ? 42 : 0, sum = 0, all = 0;
    CU_ASSERT_EQUAL(coexec_mpi_bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD), COEXEC_OK);
    CU_ASSERT_EQUAL(x, 42);
    int mine = me + 1;
    CU_ASSERT_EQUAL(coexec_mpi_reduce(&mine, &sum, 1, MPI_INT, MPI_SUM, 0,
                                      MPI_COMM_WORLD), COEXEC_OK);
    if (me == 0)
        CU_ASSERT_EQUAL(sum, 3);
    CU_ASSERT_EQUAL(coexec_mpi_allreduce(&mine, &all, 1, MPI_INT, MPI_MAX,
                                         MPI_COMM_WORLD), COEXEC_OK);
    CU_ASSERT_EQUAL(all, 2);
    CU_ASSERT_EQUAL(coexec_mpi_barrier(MPI_COMM_WORLD), COEXEC_OK);
    free(c);
    free(t);
    MPI_Barrier(MPI_COMM_WORLD);
    ch_finalize();
}

/* ---- errors ------------------------------------------------------------------ */

static coexec_poll_status_t wait_in_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    MPI_Request q = MPI_REQUEST_NULL;
    *(int *)arg = coexec_mpi_wait(&q, MPI_STATUS_IGNORE);
    return COEXEC_READY;
}

static void truncated_ult(void *arg)
{
    MPI_Comm comm = *(MPI_Comm *)arg;
    char small[4];
    MPI_Status st;
    /* Posted before the peer sends: the poller sees the error. */
    CH_CHECK_RC(coexec_mpi_recv(small, 4, MPI_CHAR, peer, 700, comm, &st),
                COEXEC_EIO);
    int cls = -1;
    MPI_Error_class(st.MPI_ERROR, &cls);
    CH_CHECK(cls == MPI_ERR_TRUNCATE);
}

static void test_errors(void)
{
    ch_init(NSTREAMS);
    CU_ASSERT_EQUAL(coexec_mpi_wait(NULL, MPI_STATUS_IGNORE), COEXEC_EINVAL);
    CU_ASSERT_EQUAL(coexec_mpi_waitall(-1, NULL, MPI_STATUSES_IGNORE),
                    COEXEC_EINVAL);
    CU_ASSERT_EQUAL(coexec_mpi_waitall(2, NULL, MPI_STATUSES_IGNORE),
                    COEXEC_EINVAL);
    MPI_Request q = MPI_REQUEST_NULL;
    CU_ASSERT_EQUAL(coexec_mpi_waitany(1, &q, NULL, MPI_STATUS_IGNORE),
                    COEXEC_EINVAL);
    coexec_mpi_op_t op = COEXEC_MPI_OP_INIT;
    CU_ASSERT_EQUAL(coexec_mpi_poll(NULL, &op, &q, MPI_STATUS_IGNORE),
                    COEXEC_EINVAL);
    coexec_mpi_info_t info = {.size = 8};
    CU_ASSERT_EQUAL(coexec_mpi_get_info(&info), COEXEC_EINVAL);
    CU_ASSERT_EQUAL(coexec_mpi_get_info(NULL), COEXEC_EINVAL);
    /* A null request completes at once, from a ULT. */
    MPI_Status st;
    CU_ASSERT_EQUAL(coexec_mpi_wait(&q, &st), COEXEC_OK);
    /* A tasklet may not block. */
    int rc = 0;
    coexec_tasklet_t k;
    CU_ASSERT_EQUAL_FATAL(coexec_tasklet_create(ch_main_pool(1), wait_in_tasklet,
                                                &rc, &k), COEXEC_OK);
    CU_ASSERT_EQUAL(coexec_tasklet_join(k), COEXEC_OK);
    CU_ASSERT_EQUAL(coexec_tasklet_free(&k), COEXEC_OK);
    CU_ASSERT_EQUAL(rc, COEXEC_ECONTEXT);

    /* MPI errors, returned: a receive too small, first through the
     * poller (posted before the send), then through the first test. */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    char big[16] = "0123456789abcde";
    if (me == 0) {
        coexec_thread_t t;
        ch_spawn_on(1, truncated_ult, &comm, &t);
        CU_ASSERT_FATAL(await_pending(1));
        say_go();
        ch_free_threads(&t, 1);
        MPI_Barrier(comm); /* the second one is sent */
        char small[4];
        CU_ASSERT_EQUAL(coexec_mpi_recv(small, 4, MPI_CHAR, 1, 701, comm, &st),
                        COEXEC_EIO);
        int cls = -1;
        MPI_Error_class(st.MPI_ERROR, &cls);
        CU_ASSERT_EQUAL(cls, MPI_ERR_TRUNCATE);
    } else {
        peer_await_go();
        MPI_Send(big, 16, MPI_CHAR, 0, 700, comm);
        MPI_Request s;
        MPI_Isend(big, 16, MPI_CHAR, 0, 701, comm, &s);
        MPI_Barrier(comm);
        MPI_Wait(&s, MPI_STATUS_IGNORE);
    }
    MPI_Comm_free(&comm);

    /* Finalize refuses while a wait is pending, then works. */
    if (me == 0) {
        recv_t r = {.tag = 702};
        coexec_thread_t t;
        ch_spawn_on(2, recv_ult, &r, &t);
        CU_ASSERT_FATAL(await_pending(1));
        CU_ASSERT_EQUAL(coexec_mpi_finalize(), COEXEC_EBUSY);
        say_go();
        ch_free_threads(&t, 1);
        CU_ASSERT_EQUAL(r.rc, COEXEC_OK);
        CU_ASSERT_EQUAL(r.value, 7020);
    } else {
        peer_await_go();
        int v = 7020;
        MPI_Send(&v, 1, MPI_INT, 0, 702, MPI_COMM_WORLD);
    }
    CU_ASSERT_EQUAL(coexec_mpi_finalize(), COEXEC_OK);
    info.size = sizeof info;
    CU_ASSERT_EQUAL(coexec_mpi_get_info(&info), COEXEC_OK);
    CU_ASSERT_EQUAL(info.engine_running, 0);
    CU_ASSERT_EQUAL(info.thread_level, level);
    CU_ASSERT_EQUAL(coexec_mpi_init(), COEXEC_OK);
    CU_ASSERT_EQUAL(coexec_mpi_get_info(&info), COEXEC_OK);
    CU_ASSERT_EQUAL(info.engine_running, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    ch_finalize();
    /* The runtime finalized: the engine is dropped with it. */
    CU_ASSERT_EQUAL(coexec_mpi_init(), COEXEC_ENOTINIT);
}

/* ---- placement: ranks on one node never share a core ------------------------- */

#define PL_STREAMS 2

/* Run by mpiexec with --bind-to core and with --bind-to none: each rank's
 * streams read their real masks; no CPU is in masks of both ranks. */
static void test_placement(void)
{
    ch_init(PL_STREAMS);
    uint64_t masks[PL_STREAMS];
    for (int i = 0; i < PL_STREAMS; i++)
        masks[i] = ch_stream_cpu_mask(i);
    uint64_t mine = 0, all[2 * PL_STREAMS];
    for (int i = 0; i < PL_STREAMS; i++) {
        CU_ASSERT(masks[i] != 0);
        mine |= masks[i];
    }
    CU_ASSERT_EQUAL(MPI_Allgather(masks, PL_STREAMS, MPI_UINT64_T, all,
                                  PL_STREAMS, MPI_UINT64_T, MPI_COMM_WORLD),
                    MPI_SUCCESS);
    uint64_t theirs = 0;
    for (int i = 0; i < PL_STREAMS; i++)
        theirs |= all[peer * PL_STREAMS + i];
    if (me == 0)
        printf("\n  rank 0 streams on cpus %#llx %#llx, rank 1 on %#llx %#llx\n",
               (unsigned long long)all[0], (unsigned long long)all[1],
               (unsigned long long)all[2], (unsigned long long)all[3]);
    CU_ASSERT_EQUAL(mine & theirs, 0);
    ch_finalize();
}

/* ---- single: the level that cannot work ------------------------------------- */

static void test_single(void)
{
    ch_init(2);
    MPI_Request q = MPI_REQUEST_NULL;
    CU_ASSERT_EQUAL(coexec_mpi_init(), COEXEC_EPERM);
    CU_ASSERT_EQUAL(coexec_mpi_wait(&q, MPI_STATUS_IGNORE), COEXEC_EPERM);
    int x = 0;
    CU_ASSERT_EQUAL(coexec_mpi_bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD),
                    COEXEC_EPERM);
    ch_finalize();
}

static const ch_test_t wait_tests[] = {{"wait", test_wait}, {NULL, NULL}};
static const ch_test_t waitall_tests[] = {{"waitall", test_waitall}, {NULL, NULL}};
static const ch_test_t waitany_tests[] = {{"waitany", test_waitany}, {NULL, NULL}};
static const ch_test_t tasklet_tests[] = {{"tasklet", test_tasklet}, {NULL, NULL}};
static const ch_test_t migrate_tests[] = {{"migrate", test_migrate}, {NULL, NULL}};
static const ch_test_t calls_tests[] = {{"calls", test_calls}, {NULL, NULL}};
static const ch_test_t errors_tests[] = {{"errors", test_errors}, {NULL, NULL}};
static const ch_test_t single_tests[] = {{"single", test_single}, {NULL, NULL}};
static const ch_test_t placement_tests[] = {{"placement", test_placement},
                                            {NULL, NULL}};

static int wanted_level(void)
{
    const char *l = getenv("CH_MPI_LEVEL");
    if (!l || !strcmp(l, "multiple"))
        return MPI_THREAD_MULTIPLE;
    if (!strcmp(l, "serialized"))
        return MPI_THREAD_SERIALIZED;
    if (!strcmp(l, "funneled"))
        return MPI_THREAD_FUNNELED;
    return MPI_THREAD_SINGLE;
}

int main(int argc, char **argv)
{
    static const ch_suite_t suites[] = {
        {"wait", wait_tests},       {"waitall", waitall_tests},
        {"waitany", waitany_tests}, {"tasklet", tasklet_tests},
        {"migrate", migrate_tests}, {"calls", calls_tests},
        {"errors", errors_tests},   {"single", single_tests},
        {"placement", placement_tests}, {NULL, NULL}};
    if (argc > 1 && argv[1][0] == '-')
        return ch_main(argc, argv, suites); /* --list, --check-suites */
    int want = wanted_level(), size = 0;
    MPI_Init_thread(&argc, &argv, want, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || level != want) {
        fprintf(stderr, "test_mpi: needs 2 ranks (has %d) and thread level %d "
                        "(has %d)\n", size, want, level);
        MPI_Finalize();
        return 1;
    }
    peer = 1 - me;
    int rc = ch_main(argc, argv, suites);
    MPI_Finalize();
    return rc;
}
