/*
 * src/service/ring.h: what the service stream (service.c) and its file I/O
 * backend share: the request record, its completion, and the backend's
 * entry points.
 *
 * Room plaque. Two backends, one picked by CMake: ring/uring.c (liburing:
 * one thread owns one io_uring and carries the file calls of the POSIX
 * wrappers in batches) and ring/none.c (built without liburing: the ring
 * never starts and every call takes the thread path). A file request is
 * an ordinary request record whose fn is NULL and whose arg is a struct
 * fop; it is pushed on the backend's own inbox, never on the workers', so
 * a worker stuck in a call never holds back file I/O and the ring thread
 * never runs a blocking call. The backend completes each request through
 * coexec__rq_complete exactly once, like a worker does.
 */
#ifndef COEXEC_SERVICE_RING_H
#define COEXEC_SERVICE_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "service/service.h"
#include "waker/wait.h"

/* request->state: RQ_QUEUED (queued or running), maybe with RQ_WAITERS
 * (a waiter or poller registered under the lock), then a final value
 * (RQ_DONE: result holds the call's result; RQ_CANCELED), then that value
 * with RQ_SETTLED once the completer no longer touches the record. */
enum rq_state {
    RQ_QUEUED = 0,
    RQ_DONE = 1,
    RQ_CANCELED = 2,
    RQ_FINAL = 3,       /* mask of the final values */
    RQ_WAITERS = 1u << 4,
    RQ_SETTLED = 1u << 5
};

struct request {
    uint64_t magic_;
    struct request *next, *prev; /* inbox / FIFO links; the ring's lists */
    coexec_offload_fn_t fn;      /* NULL: a file request (arg: struct fop) */
    void *arg;
    intptr_t result;
    atom_u32_t state;
    atom_u32_t lock;
    struct wlist waiters;           /* ULTs and threads (lock) */
    struct coexec_unit_rec *poller; /* the polling tasklet (lock) */
    uint32_t poller_tag;
};

/* A file request's call: the wrapper's arguments, on the waiter's stack. */
struct fop {
    int kind;
    const intptr_t *a;
};

/* Completes r with v and final state fin (service.c); see its plaque. The
 * record may be gone when it returns. */
void coexec__rq_complete(struct request *r, intptr_t v, uint32_t fin);
/* A call is completed and no longer counted busy (worker or ring): wakes
 * finalize if it waits for the running calls (service.c). */
void coexec__service_progress(void);

/* ---- the backend ---------------------------------------------------------- */

/* Starts the ring and its thread, pinned to cpu (-1: unpinned), spinning
 * spin_ns when idle before it sleeps. Returns COEXEC_OK, or a negative
 * code with *why saying why the ring cannot be had (the caller falls back
 * to the thread path). Init, before any request. */
int coexec__ring_start(int cpu, uint64_t spin_ns, const char **why);
/* A bit (1u << FOP_*) for each kind the running ring carries; 0 when no
 * ring runs. */
unsigned coexec__ring_kinds(void);
/* Queues r (fn NULL, arg a struct fop); the ring thread completes it. */
void coexec__ring_push(struct request *r);
/* Finalize, after new requests were refused: cancels what was not handed
 * to the kernel yet. */
void coexec__ring_cancel_queued(void);
/* Requests queued or in the kernel. */
uint32_t coexec__ring_busy(void);
/* Finalize, after the grace period: cancels the requests in the kernel
 * (IORING_OP_ASYNC_CANCEL), waits for them a little, then completes those
 * still there with COEXEC_ECANCELED and abandons them. Calls pause() while
 * it waits. Returns the number abandoned. */
int coexec__ring_cancel_all(void (*pause)(void));
/* Finalize, last step: stops the ring thread and releases the ring. */
void coexec__ring_stop(void);
/* Since the ring started: io_uring_submit calls that handed requests to
 * the kernel, and the requests they handed (tests, diagnostics). */
void coexec__ring_stats(uint64_t *batches, uint64_t *sqes);

/* fork, in the child (src/core/process.c): the ring is off. */
void coexec__ring_atfork_child(void);

#endif /* COEXEC_SERVICE_RING_H */
