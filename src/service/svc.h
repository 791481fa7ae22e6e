/*
 * src/service/svc.h: the service stream's state, shared by its workers
 * (service.c) and its request calls (request.c). Not for other rooms.
 */
#ifndef COEXEC_SERVICE_SVC_H
#define COEXEC_SERVICE_SVC_H

#include <pthread.h>
#include <stdint.h>

#include "arch/atomic.h"
#include "base/cpulist.h"
#include "service/ring.h"

/* How long a queued request waits behind busy workers before its waiter
 * starts another one; how long an extra worker idles before it exits; how
 * long finalize lets running calls finish. */
#define STUCK_NS 200000ull
/* A worker inside one call this long counts as blocked (a shorter stall
 * is more likely a preemption, of the thread or of a VM's vCPU). */
#define BLOCKED_NS 1000000ull
#define MAX_WATCH_NS 100000000ull /* a waiter's checks, at the slowest */
#define IDLE_EXIT_NS 50000000ull
#define GRACE_NS 2000000000ull

struct worker {
    pthread_t thread;
    atom_u64_t since; /* when its current call started; 0 when idle */
    atom_u32_t lock;
    int abandoned;       /* under lock: finalize gave up on its call */
    struct request *cur; /* under lock */
    int extra;           /* beyond service_threads: exits when idle */
    int cpu;
    struct worker *next; /* under qlock */
};

#define MAX_SVC_CPUS COEXEC__MAX_CPULIST

struct service_state {
    /* Submitters and the draining worker. */
    atom_ptr_t inbox CACHE_ALIGNED;
    /* Parking: the event count. */
    atom_u32_t seq CACHE_ALIGNED;
    atom_u32_t sleepers;
    atom_u32_t nidle;
    /* Read-mostly. */
    atom_u32_t closed CACHE_ALIGNED;
    atom_u32_t stop;
    int base, max;
    uint64_t spin_ns;
    int ncpus; /* entries of cpus */
    int shares_cpu;
    int started;
    /* The workers' side. */
    pthread_mutex_t qlock CACHE_ALIGNED;
    struct request *qhead, *qtail; /* under qlock */
    struct worker *workers;        /* under qlock */
    int nthreads;                  /* under qlock */
    int spawned;                   /* under qlock: names the next worker */
    atom_u32_t queued;             /* requests on the FIFO */
    atom_u64_t completed;
    /* Set before `live` is released: read after its acquire. */
    unsigned ring_kinds; /* file calls the ring carries (1u << FOP_*) */
    /* The threads and the ring start on first use: 0 not yet, 1 running,
     * 2 stopped (finalize); changed under live_lock. */
    atom_u32_t live;
    pthread_mutex_t live_lock;
    coexec_service_io_t io_mode;
    /* The service threads' CPUs: cfg.service_cpus, ranges expanded. */
    int cpus[MAX_SVC_CPUS];
};
extern struct service_state coexec__svc;

/* Queue (service.c). Moves the inbox onto the FIFO, oldest first. */
void coexec__svc_drain_inbox_locked(void);
void coexec__svc_fifo_unlink_locked(struct request *r);
/* Wakes a parked worker if one sleeps. */
void coexec__svc_kick_one(void);
/* Starts another worker if every one is blocked and requests wait. */
void coexec__svc_grow(void);
/* Starts the service threads and the ring if they have not started:
 * COEXEC_OK (also once finalize began: the caller's request is refused
 * as closed), or the error of a thread that could not start. */
int coexec__svc_live_slow(void);
static inline int svc_live(void)
{
    return atom_load_acq_u32(&coexec__svc.live) ? COEXEC_OK
                                                : coexec__svc_live_slow();
}
/* fork, in the child (request.c). */
void coexec__svc_request_atfork_child(void);

#endif /* COEXEC_SERVICE_SVC_H */
