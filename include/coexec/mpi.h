/*
 * coexec/mpi.h: MPI requests that park units instead of blocking streams
 * (libcoexec-mpi: pkg-config coexec-mpi, CMake coexec::mpi).
 *
 * A ULT that calls MPI_Wait blocks its whole execution stream inside the
 * MPI library: no other unit runs there until the message arrives. The
 * calls below wait the other way: the ULT parks, its stream runs other
 * units, and a progress poller (coexec/poller.h) tests the pending
 * requests in batches with MPI_Testsome and wakes each waiter once its
 * requests complete. The blocking wrappers (send, recv, sendrecv, bcast,
 * reduce, allreduce, barrier) start the non-blocking MPI call and wait so.
 * Tasklets use the poll forms: COEXEC_PENDING until the requests complete,
 * and a wake then.
 *
 * The poller runs on streams with nothing else to run (which keep polling,
 * awake, while any request is pending, and park as usual when none is) and
 * on busy streams once per event check (every `event_freq` units), one
 * batch at a time: compute units keep their streams, and communication
 * progresses between them. Nothing polls when nothing is pending.
 *
 * No init call is needed: after MPI_Init_thread and coexec_init (in either
 * order), the first wait that has to park starts the progress engine.
 * coexec_mpi_init checks the thread level early and coexec_mpi_finalize
 * stops the engine; both are optional.
 *
 * Thread levels (MPI_Query_thread):
 *   MPI_THREAD_MULTIPLE    MPI is called from the caller's stream, and the
 *                          poller runs on any stream;
 *   MPI_THREAD_SERIALIZED  as MULTIPLE, every MPI call of this library
 *                          under one lock (a program's own MPI calls made
 *                          meanwhile from other streams break the level);
 *   MPI_THREAD_FUNNELED    every MPI call of this library runs on the
 *                          thread that initialized MPI, which must be a
 *                          stream's (the primary, rank 0, when main calls
 *                          MPI_Init_thread and then coexec_init): a ULT
 *                          elsewhere migrates there for the call and back
 *                          afterwards, the poller runs there only, and a
 *                          note on stderr says so once (unless quiet);
 *   MPI_THREAD_SINGLE      refused (COEXEC_EPERM): the runtime's threads
 *                          are not allowed at that level.
 *
 * Errors: every call returns COEXEC_OK or a negative COEXEC_* code. An
 * error MPI reports (with an error handler that returns, such as
 * MPI_ERRORS_RETURN) is COEXEC_EIO; the MPI code is then in the failed
 * request's status (MPI_ERROR) when statuses were asked for.
 */
#ifndef COEXEC_MPI_H
#define COEXEC_MPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "../coexec.h"

COEXEC_BEGIN_DECLS

/* What a tasklet's poll keeps between its calls: zero it (or use
 * COEXEC_MPI_OP_INIT) before the first poll; it may be reused once a poll
 * has returned anything but COEXEC_PENDING. It must stay in place while a
 * poll is pending (inside the tasklet's argument, say). */
typedef struct coexec_mpi_op {
    uint64_t opaque[12]; /* the wait's state (private) */
} coexec_mpi_op_t;

/* An unused coexec_mpi_op_t, for initialisers. */
#define COEXEC_MPI_OP_INIT {{0}}

/* The progress engine's figures (coexec_mpi_get_info). */
typedef struct coexec_mpi_info {
    size_t size;          /* set by the caller: sizeof(coexec_mpi_info_t) */
    int thread_level;     /* MPI_Query_thread's answer */
    int funnel_rank;      /* FUNNELED: the stream MPI calls run on; else -1 */
    int engine_running;   /* 1 while the poller is registered */
    uint64_t polls;       /* poller calls that tested requests */
    uint64_t parked;      /* waits and polls that had to park or pend */
    uint64_t completed;   /* of those, completed by the poller */
    uint64_t pending;     /* waits and polls pending now */
} coexec_mpi_info_t;

/* ---- the engine ---- */

/*
 * Checks MPI's thread level and starts the progress engine (which the
 * first parking wait otherwise starts). Idempotent.
 * Context: any thread, after MPI_Init_thread and coexec_init.
 * Switches: never.
 * Returns: COEXEC_OK; COEXEC_ENOTINIT (MPI or the runtime not initialized,
 * or MPI finalized); COEXEC_EPERM (MPI_THREAD_SINGLE; or FUNNELED with
 * MPI's main thread not a stream's); COEXEC_EAGAIN (no poller slot free);
 * COEXEC_ENOMEM.
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_init(void);

/*
 * Stops the progress engine (the next parking wait starts it again).
 * Call it before MPI_Finalize when MPI is finalized before the runtime.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK (also when it was not running); COEXEC_EBUSY (waits
 * are pending: nothing is stopped).
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_finalize(void);

/*
 * The engine's figures in *info (info->size set by the caller).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (info NULL, or info->size smaller than
 * sizeof(coexec_mpi_info_t) of this first version); COEXEC_ENOTINIT (MPI
 * or the runtime not initialized).
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_get_info(coexec_mpi_info_t *info);

/* ---- waits ---- */

/*
 * MPI_Wait that parks: waits for *req to complete, sets *req as MPI_Wait
 * does (MPI_REQUEST_NULL, or inactive for a persistent request) and fills
 * *status (MPI_STATUS_IGNORE accepted). A null request returns at once
 * with an empty status. From a ULT the caller parks while the request is
 * pending, and may be migrated meanwhile (it resumes where it was moved
 * to); from an external thread it is MPI_Wait.
 * Context: a ULT or an external thread (tasklets: coexec_mpi_poll).
 * Switches: when the request is not complete at once (FUNNELED: also to
 * and from the funnel stream).
 * Returns: COEXEC_OK; COEXEC_EINVAL (req NULL); COEXEC_EIO (MPI reported
 * an error); COEXEC_ECONTEXT (a tasklet or a scheduler; FUNNELED: an
 * external thread that is not MPI's main thread); COEXEC_EPERM (a pinned
 * ULT under FUNNELED away from the funnel stream; MPI_THREAD_SINGLE);
 * COEXEC_ENOTINIT (MPI or the runtime not initialized); COEXEC_EAGAIN and
 * COEXEC_ENOMEM (the engine could not start, or had no memory for the
 * wait: the request is left pending); COEXEC_ECANCELED (coexec_finalize
 * cancelled the wait: the request is left pending).
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_wait(MPI_Request *req,
                                                MPI_Status *status);

/*
 * MPI_Waitall that parks: waits for reqs[0..count) to complete, sets each
 * as MPI_Waitall does and fills statuses (MPI_STATUSES_IGNORE accepted).
 * count 0 returns at once.
 * Context, Switches: as coexec_mpi_wait.
 * Returns: as coexec_mpi_wait; COEXEC_EINVAL also for count < 0 or reqs
 * NULL with count > 0; COEXEC_EIO when any request failed (its status's
 * MPI_ERROR says how; the others completed).
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_waitall(int count,
                                                   MPI_Request reqs[],
                                                   MPI_Status statuses[]);

/*
 * MPI_Waitany that parks: waits until one of reqs[0..count) completes,
 * completes exactly that one (set as MPI_Waitany does), stores its index
 * in *index and fills *status. When every request is null (or count is
 * 0), returns at once with *index MPI_UNDEFINED.
 * Context, Switches: as coexec_mpi_wait.
 * Returns: as coexec_mpi_wait; COEXEC_EINVAL also for index NULL, count <
 * 0 or reqs NULL with count > 0.
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_waitany(int count,
                                                   MPI_Request reqs[],
                                                   int *index,
                                                   MPI_Status *status);

/*
 * The tasklet form of coexec_mpi_wait: COEXEC_OK once *req completed (set
 * and *status filled as coexec_mpi_wait does), else COEXEC_PENDING (1)
 * after arranging a wake of the tasklet: return COEXEC_PENDING from the
 * tasklet and call it again, with the same op, req and status, when
 * polled again. op keeps the state between the calls.
 * Context: a tasklet's function (cx is its poll context). Switches: never.
 * Returns: COEXEC_OK; COEXEC_PENDING; COEXEC_EINVAL (cx, op or req NULL;
 * op pending with other requests); COEXEC_EIO; COEXEC_EPERM;
 * COEXEC_ENOTINIT; COEXEC_EAGAIN, COEXEC_ENOMEM (the engine could not
 * start: op stays unused).
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_poll(coexec_poll_t *cx,
                                                coexec_mpi_op_t *op,
                                                MPI_Request *req,
                                                MPI_Status *status);

/*
 * The tasklet form of coexec_mpi_waitall, as coexec_mpi_poll.
 * Context, Switches, Returns: as coexec_mpi_poll; COEXEC_EINVAL also for
 * count < 0 or reqs NULL with count > 0.
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_pollall(coexec_poll_t *cx,
                                                   coexec_mpi_op_t *op,
                                                   int count,
                                                   MPI_Request reqs[],
                                                   MPI_Status statuses[]);

/* ---- blocking calls that park ---- */

/*
 * MPI_Send that parks the calling ULT: MPI_Isend and a wait as
 * coexec_mpi_wait's (so do coexec_mpi_recv and coexec_mpi_sendrecv, with
 * MPI_Irecv). A status argument may be MPI_STATUS_IGNORE.
 * Context: a ULT or an external thread. Switches: while waiting.
 * Returns: as coexec_mpi_wait; COEXEC_EIO also when starting the call
 * failed.
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_send(const void *buf, int count,
                                                MPI_Datatype type, int dest,
                                                int tag, MPI_Comm comm);
/*
 * MPI_Recv that parks the calling ULT (see coexec_mpi_send).
 * Context: a ULT or an external thread. Switches: while waiting.
 * Returns: as coexec_mpi_send.
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_recv(void *buf, int count,
                                                MPI_Datatype type, int source,
                                                int tag, MPI_Comm comm,
                                                MPI_Status *status);
/*
 * MPI_Sendrecv that parks the calling ULT (see coexec_mpi_send); status is
 * the receive's.
 * Context: a ULT or an external thread. Switches: while waiting.
 * Returns: as coexec_mpi_send.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_mpi_sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    int dest, int sendtag, void *recvbuf, int recvcount,
                    MPI_Datatype recvtype, int source, int recvtag,
                    MPI_Comm comm, MPI_Status *status);

/*
 * MPI_Bcast that parks the calling ULT: MPI_Ibcast and a wait (so do
 * coexec_mpi_reduce, _allreduce and _barrier with MPI_Ireduce, ...). As
 * for MPI's, every process of comm calls the collectives in the same
 * order.
 * Context: a ULT or an external thread. Switches: while waiting.
 * Returns: as coexec_mpi_send.
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_bcast(void *buf, int count,
                                                 MPI_Datatype type, int root,
                                                 MPI_Comm comm);
/*
 * MPI_Reduce that parks the calling ULT (see coexec_mpi_bcast).
 * Context: a ULT or an external thread. Switches: while waiting.
 * Returns: as coexec_mpi_send.
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_reduce(const void *sendbuf,
                                                  void *recvbuf, int count,
                                                  MPI_Datatype type, MPI_Op op,
                                                  int root, MPI_Comm comm);
/*
 * MPI_Allreduce that parks the calling ULT (see coexec_mpi_bcast).
 * Context: a ULT or an external thread. Switches: while waiting.
 * Returns: as coexec_mpi_send.
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_allreduce(const void *sendbuf,
                                                     void *recvbuf, int count,
                                                     MPI_Datatype type,
                                                     MPI_Op op, MPI_Comm comm);
/*
 * MPI_Barrier that parks the calling ULT (see coexec_mpi_bcast).
 * Context: a ULT or an external thread. Switches: while waiting.
 * Returns: as coexec_mpi_send.
 */
COEXEC_API COEXEC_NODISCARD int coexec_mpi_barrier(MPI_Comm comm);

COEXEC_END_DECLS

#endif /* COEXEC_MPI_H */
