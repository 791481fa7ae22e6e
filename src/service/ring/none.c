/*
 * src/service/ring/none.c: the file I/O backend of a build without
 * liburing: the ring never starts, so every call takes the thread path.
 */
#include <errno.h>

#include "service/ring.h"

int coexec__ring_start(int cpu, uint64_t spin_ns, const char **why)
{
    (void)cpu;
    (void)spin_ns;
    *why = "libcoexec was built without liburing";
    return COEXEC_ENOSYS;
}

unsigned coexec__ring_kinds(void) { return 0; }

void coexec__ring_push(struct request *r)
{
    /* Never called: no kind is carried. */
    coexec__rq_complete(r, -ENOSYS, RQ_DONE);
}

void coexec__ring_cancel_queued(void) {}

uint32_t coexec__ring_busy(void) { return 0; }

int coexec__ring_cancel_all(void (*pause)(void))
{
    (void)pause;
    return 0;
}

void coexec__ring_stop(void) {}

void coexec__ring_stats(uint64_t *batches, uint64_t *sqes)
{
    *batches = *sqes = 0;
}

void coexec__ring_atfork_child(void) {}
