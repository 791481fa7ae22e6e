/*
 * src/service/service.h: the service stream's hooks into init and
 * finalize, and the offload entry the POSIX wrappers use.
 */
#ifndef COEXEC_SERVICE_SERVICE_H
#define COEXEC_SERVICE_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "coexec.h"

/* Starts the service threads (init, after the streams). */
int coexec__service_start(void);
/* Finalize, first step: refuses new requests, cancels the queued ones,
 * waits a grace period for running ones and abandons those still stuck.
 * Runs on the main ULT, which keeps its stream running meanwhile. */
void coexec__service_close(void);
/* Finalize, last step: stops and joins the service threads. */
void coexec__service_stop(void);

/* True when the caller is a ULT on a compute stream and the service
 * stream takes requests: the wrappers offload then, else run directly. */
bool coexec__service_offloads(void);
/* Whether the service threads have started (they start on first use). */
bool coexec__service_live(void);

/* The file calls the ring can carry; FOP_* is a bit index. */
enum fop_kind {
    FOP_READ = 1,  /* fd, buf, n */
    FOP_WRITE,     /* fd, buf, n */
    FOP_PREAD,     /* fd, buf, n, off */
    FOP_PWRITE,    /* fd, buf, n, off */
    FOP_READV,     /* fd, iov, cnt */
    FOP_WRITEV,    /* fd, iov, cnt */
    FOP_OPEN,      /* path, flags, mode */
    FOP_CLOSE,     /* fd */
    FOP_FSYNC,     /* fd */
    FOP_FDATASYNC, /* fd */
    FOP_COUNT
};

/* Runs the file call kind (FOP_* of ring.h) with the wrapper's arguments
 * a through io_uring and waits, as coexec_offload does; *ret receives the
 * call's result or -errno. COEXEC_ENOSYS when the ring does not carry it
 * (the caller takes the thread path). */
int coexec__service_fop(int kind, const intptr_t *a, intptr_t *ret);

/* fork, in the child (src/core/process.c): the service is off. */
void coexec__service_atfork_child(void);

#endif /* COEXEC_SERVICE_SERVICE_H */
