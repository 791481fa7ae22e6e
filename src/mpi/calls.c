/*
 * src/mpi/calls.c: the public waits, polls and blocking calls of
 * libcoexec-mpi.
 *
 * Every call first tests its requests once (most short messages are
 * complete by then, and that costs one MPI_Test); only what is still
 * pending goes to the engine (engine.c), and the ULT parks until the
 * poller completes it. An external thread blocks in MPI instead. Under
 * FUNNELED a ULT away from the funnel stream moves there for the calls
 * (enter) and back afterwards (leave).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdalign.h>
#include <string.h>

#include "cxmpi.h"

_Static_assert(sizeof(struct cxm_op) <= sizeof(coexec_mpi_op_t),
               "coexec_mpi_op_t holds a wait");
_Static_assert(alignof(struct cxm_op) <= alignof(coexec_mpi_op_t),
               "coexec_mpi_op_t is aligned for a wait");

/* Where a caller was before a FUNNELED move. */
struct place {
    coexec_xstream_t home;
    bool moved;
};

static bool on_funnel_stream(void)
{
    int rank;
    return coexec_xstream_self_rank(&rank) == COEXEC_OK &&
           rank == cxm_eng.funnel_rank;
}

/* Checks the thread level and the caller (a ULT or an external thread);
 * under FUNNELED takes a ULT to the funnel stream. */
static int enter(struct place *pl, coexec_caller_t *who)
{
    int rc = cxm_mode();
    if (rc != COEXEC_OK)
        return rc;
    pl->moved = false;
    *who = coexec_self_caller();
    if (*who == COEXEC_CALLER_TASKLET || *who == COEXEC_CALLER_SCHED)
        return COEXEC_ECONTEXT;
    if (cxm_eng.mode != CXM_FUNNELED)
        return COEXEC_OK;
    if (*who == COEXEC_CALLER_EXTERNAL) {
        int is_main = 0;
        MPI_Is_thread_main(&is_main);
        return is_main ? COEXEC_OK : COEXEC_ECONTEXT;
    }
    if (on_funnel_stream())
        return COEXEC_OK;
    coexec_thread_t self;
    coexec_xstream_t to;
    if ((rc = coexec_xstream_self(&pl->home)) != COEXEC_OK ||
        (rc = coexec_thread_self(&self)) != COEXEC_OK ||
        (rc = coexec_xstream_by_rank(cxm_eng.funnel_rank, &to)) != COEXEC_OK ||
        (rc = coexec_thread_migrate_to_xstream(self, to)) != COEXEC_OK)
        return rc;
    pl->moved = true;
    return COEXEC_OK;
}

static void leave(struct place *pl)
{
    coexec_thread_t self;
    if (pl->moved && coexec_thread_self(&self) == COEXEC_OK) {
        /* Not back home (its stream stopping, say): it stays, working. */
        int rc = coexec_thread_migrate_to_xstream(self, pl->home);
        (void)rc;
    }
}

/* An MPI call's code as ours. A single-status call leaves MPI_ERROR
 * unset on failure: the code goes there (multi-status calls set it). */
static int mpi_result(int rc, bool single, MPI_Status *st)
{
    if (rc == MPI_SUCCESS)
        return COEXEC_OK;
    if (single && rc != MPI_ERR_IN_STATUS && st != MPI_STATUS_IGNORE)
        st->MPI_ERROR = rc;
    return COEXEC_EIO;
}

/* One test of the requests, as the wait will complete them: MPI_Test,
 * MPI_Testall or MPI_Testany. *flag says whether they completed. */
static int test_now(int n, MPI_Request *reqs, MPI_Status *st, bool any,
                    int *index, int *flag)
{
    cxm_lock();
    int rc = any ? MPI_Testany(n, reqs, index, flag, st)
             : n == 1 ? MPI_Test(reqs, flag, st)
                      : MPI_Testall(n, reqs, flag, st);
    cxm_unlock();
    return mpi_result(rc, n == 1 || any, st);
}

/* An external thread's wait: MPI's own, or under SERIALIZED tests that
 * let the lock go in between. */
static int block_external(int n, MPI_Request *reqs, MPI_Status *st, bool any,
                          int *index)
{
    int rc, flag = 0;
    if (cxm_eng.mode != CXM_LOCKED) {
        rc = any ? MPI_Waitany(n, reqs, index, st)
             : n == 1 ? MPI_Wait(reqs, st)
                      : MPI_Waitall(n, reqs, st);
        return mpi_result(rc, n == 1 || any, st);
    }
    while ((rc = test_now(n, reqs, st, any, index, &flag)) == COEXEC_OK && !flag)
        sched_yield();
    return rc;
}

/* Parks the calling ULT until the engine completed op. */
static int park_until(struct cxm_op *op)
{
    int rc = coexec_self_waker(&op->w);
    if (rc == COEXEC_OK)
        rc = cxm_submit(op);
    while (rc == COEXEC_OK &&
           !atomic_load_explicit(&op->done, memory_order_acquire))
        rc = coexec_park(); /* a finalize cancels it: COEXEC_ECANCELED */
    return rc == COEXEC_OK ? op->err : rc;
}

/* The wait of an entered caller: test, then park (or block). */
static int wait_here(int n, MPI_Request *reqs, MPI_Status *st, bool any,
                     int *index, coexec_caller_t who)
{
    int flag = 0;
    int rc = test_now(n, reqs, st, any, index, &flag);
    if (rc != COEXEC_OK || flag)
        return rc;
    if (who == COEXEC_CALLER_EXTERNAL)
        return block_external(n, reqs, st, any, index);
    /* A few more tests, letting the stream's other units run in between:
     * a short message's reply is often this close, and a park and wake
     * cost more than these tests. */
    for (int i = 0; i < cxm_eng.spin; i++) {
        if (coexec_yield() != COEXEC_OK ||
            (rc = test_now(n, reqs, st, any, index, &flag)) != COEXEC_OK ||
            flag)
            return rc;
    }
    struct cxm_op op = {.reqs = reqs, .st = st, .n = n, .any = any,
                        .index = MPI_UNDEFINED};
    rc = park_until(&op);
    if (any)
        *index = op.index;
    return rc;
}

static int wait_ops(int n, MPI_Request *reqs, MPI_Status *st, bool any,
                    int *index)
{
    struct place pl;
    coexec_caller_t who;
    int rc = enter(&pl, &who);
    if (rc == COEXEC_OK)
        rc = wait_here(n, reqs, st, any, index, who);
    leave(&pl);
    return rc;
}

COEXEC_API int coexec_mpi_wait(MPI_Request *req, MPI_Status *status)
{
    if (!req)
        return COEXEC_EINVAL;
    return wait_ops(1, req, status, false, NULL);
}

COEXEC_API int coexec_mpi_waitall(int count, MPI_Request reqs[],
                                  MPI_Status statuses[])
{
    if (count < 0 || (count > 0 && !reqs))
        return COEXEC_EINVAL;
    if (count == 0)
        return cxm_mode();
    return wait_ops(count, reqs, statuses, false, NULL);
}

COEXEC_API int coexec_mpi_waitany(int count, MPI_Request reqs[], int *index,
                                  MPI_Status *status)
{
    if (!index || count < 0 || (count > 0 && !reqs))
        return COEXEC_EINVAL;
    *index = MPI_UNDEFINED;
    if (count == 0)
        return cxm_mode();
    return wait_ops(count, reqs, status, true, index);
}

/* ---- tasklets ---------------------------------------------------------------- */

static int poll_ops(coexec_poll_t *cx, coexec_mpi_op_t *uop, int n,
                    MPI_Request *reqs, MPI_Status *st)
{
    if (!cx || !uop || n < 0 || (n > 0 && !reqs))
        return COEXEC_EINVAL;
    struct cxm_op *op = (struct cxm_op *)uop;
    if (op->armed) {
        if (op->reqs != reqs || op->n != n)
            return COEXEC_EINVAL;
        if (!atomic_load_explicit(&op->done, memory_order_acquire))
            return COEXEC_PENDING;
        op->armed = 0;
        return op->err;
    }
    int rc = cxm_mode(), flag = 0;
    if (rc != COEXEC_OK || n == 0)
        return rc;
    /* Under FUNNELED only the funnel stream may test: elsewhere the first
     * test is the poller's. */
    if (cxm_eng.mode != CXM_FUNNELED || on_funnel_stream()) {
        rc = test_now(n, reqs, st, false, NULL, &flag);
        if (rc != COEXEC_OK || flag)
            return rc;
    }
    memset(op, 0, sizeof *op);
    op->reqs = reqs;
    op->st = st;
    op->n = n;
    op->index = MPI_UNDEFINED;
    if ((rc = coexec_poll_waker(cx, &op->w)) != COEXEC_OK ||
        (rc = cxm_submit(op)) != COEXEC_OK)
        return rc;
    op->armed = 1;
    return COEXEC_PENDING;
}

COEXEC_API int coexec_mpi_poll(coexec_poll_t *cx, coexec_mpi_op_t *op,
                               MPI_Request *req, MPI_Status *status)
{
    if (!req)
        return COEXEC_EINVAL;
    return poll_ops(cx, op, 1, req, status);
}

COEXEC_API int coexec_mpi_pollall(coexec_poll_t *cx, coexec_mpi_op_t *op,
                                  int count, MPI_Request reqs[],
                                  MPI_Status statuses[])
{
    return poll_ops(cx, op, count, reqs, statuses);
}

/* ---- blocking calls ------------------------------------------------------------ */

/*
 * The frame of a blocking call: enter, start the non-blocking call(s)
 * (START, an expression that is MPI_SUCCESS when they started, filling
 * the requests r[0..NREQ)), wait with statuses ST, leave.
 */
#define CXM_BLOCKING(NREQ, ST, START)                                          \
    do {                                                                       \
        struct place pl_;                                                      \
        coexec_caller_t who_;                                                  \
        MPI_Request r[NREQ];                                                   \
        int rc_ = enter(&pl_, &who_);                                          \
        if (rc_ == COEXEC_OK) {                                                \
            cxm_lock();                                                        \
            int m_ = (START);                                                  \
            cxm_unlock();                                                      \
            rc_ = m_ == MPI_SUCCESS ? wait_here(NREQ, r, ST, false, NULL, who_) \
                                    : COEXEC_EIO;                              \
        }                                                                      \
        leave(&pl_);                                                           \
        return rc_;                                                            \
    } while (0)

COEXEC_API int coexec_mpi_send(const void *buf, int count, MPI_Datatype type,
                               int dest, int tag, MPI_Comm comm)
{
    CXM_BLOCKING(1, MPI_STATUS_IGNORE,
                 MPI_Isend(buf, count, type, dest, tag, comm, &r[0]));
}

COEXEC_API int coexec_mpi_recv(void *buf, int count, MPI_Datatype type,
                               int source, int tag, MPI_Comm comm,
                               MPI_Status *status)
{
    CXM_BLOCKING(1, status,
                 MPI_Irecv(buf, count, type, source, tag, comm, &r[0]));
}

static int sendrecv_frame(const void *sendbuf, int sendcount,
                          MPI_Datatype sendtype, int dest, int sendtag,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype,
                          int source, int recvtag, MPI_Comm comm,
                          MPI_Status sts[2])
{
    CXM_BLOCKING(2, sts,
                 MPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm,
                           &r[0]) ||
                     MPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag,
                               comm, &r[1]));
}

COEXEC_API int coexec_mpi_sendrecv(const void *sendbuf, int sendcount,
                                   MPI_Datatype sendtype, int dest, int sendtag,
                                   void *recvbuf, int recvcount,
                                   MPI_Datatype recvtype, int source,
                                   int recvtag, MPI_Comm comm,
                                   MPI_Status *status)
{
    MPI_Status sts[2];
    memset(sts, 0, sizeof sts);
    int rc = sendrecv_frame(sendbuf, sendcount, sendtype, dest, sendtag,
                            recvbuf, recvcount, recvtype, source, recvtag,
                            comm, sts);
    /* The receive's status is the call's. */
    if (status != MPI_STATUS_IGNORE && (rc == COEXEC_OK || rc == COEXEC_EIO))
        *status = sts[0];
    return rc;
}

COEXEC_API int coexec_mpi_bcast(void *buf, int count, MPI_Datatype type,
                                int root, MPI_Comm comm)
{
    CXM_BLOCKING(1, MPI_STATUS_IGNORE,
                 MPI_Ibcast(buf, count, type, root, comm, &r[0]));
}

COEXEC_API int coexec_mpi_reduce(const void *sendbuf, void *recvbuf, int count,
                                 MPI_Datatype type, MPI_Op op, int root,
                                 MPI_Comm comm)
{
    CXM_BLOCKING(1, MPI_STATUS_IGNORE,
                 MPI_Ireduce(sendbuf, recvbuf, count, type, op, root, comm,
                             &r[0]));
}

COEXEC_API int coexec_mpi_allreduce(const void *sendbuf, void *recvbuf,
                                    int count, MPI_Datatype type, MPI_Op op,
                                    MPI_Comm comm)
{
    CXM_BLOCKING(1, MPI_STATUS_IGNORE,
                 MPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, &r[0]));
}

COEXEC_API int coexec_mpi_barrier(MPI_Comm comm)
{
    CXM_BLOCKING(1, MPI_STATUS_IGNORE, MPI_Ibarrier(comm, &r[0]));
}
