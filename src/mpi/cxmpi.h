/*
 * src/mpi/cxmpi.h: what the files of libcoexec-mpi share (engine.c: the
 * thread level, the lock, the progress poller; calls.c: the public waits
 * and wrappers). libcoexec-mpi sits above libcoexec and uses its public
 * API only (coexec.h): it is not a room of src/layers.txt.
 */
#ifndef COEXEC_MPI_CXMPI_H
#define COEXEC_MPI_CXMPI_H

#include <stdatomic.h>
#include <stdbool.h>

#include "coexec/mpi.h"

/* How the library calls MPI (from the thread level). */
enum cxm_mode {
    CXM_DIRECT = 0, /* MULTIPLE: from any stream */
    CXM_LOCKED,     /* SERIALIZED: any stream, one call at a time */
    CXM_FUNNELED    /* FUNNELED: on the funnel stream only */
};

/* A wait: on the waiter's stack (ULTs) or in a coexec_mpi_op_t (tasklets).
 * The waiter fills it, the poller completes it. */
struct cxm_op {
    struct cxm_op *next; /* the engine's incoming stack, then its lists */
    MPI_Request *reqs;   /* the caller's requests, written back */
    MPI_Status *st;      /* the caller's statuses, or the IGNORE constant */
    int n;
    int any;   /* waitany: complete one */
    int index; /* waitany: the one completed, or MPI_UNDEFINED */
    int left;  /* requests not complete yet (the poller's) */
    int err;   /* COEXEC_OK, or COEXEC_EIO */
    int armed; /* a tasklet's op: handed to the engine */
    atomic_int done;
    coexec_waker_t w;
};

/* The engine's state shared with calls.c. */
struct cxm_engine {
    atomic_int mode_known; /* mode, level, funnel_rank are set */
    int mode_rc;           /* COEXEC_OK, or why the level cannot work */
    enum cxm_mode mode;
    int level;
    int funnel_rank;
    int spin; /* tests (with a yield between) before a ULT parks */
    atomic_ullong polls, parked, completed, pending;
};
extern struct cxm_engine cxm_eng;

/* The thread level's verdict, learnt once (MPI must be initialized):
 * COEXEC_OK or the error every call returns. */
int cxm_mode(void);
/* MPI calls of this library: taken/released around each under SERIALIZED. */
void cxm_lock(void);
void cxm_unlock(void);
/* Hands op (filled, waker set) to the poller, starting the engine if it
 * is not running. COEXEC_OK, or the engine's start error (op not taken). */
int cxm_submit(struct cxm_op *op);
/* Starts the engine (the poller): COEXEC_OK or an error. */
int cxm_engine_start(void);

#endif /* COEXEC_MPI_CXMPI_H */
