/*
 * src/core/process.h: what the runtime does about the process around it:
 * the OS threads it starts (signal mask, name) and fork.
 *
 * Room plaque. Every OS thread of the library (streams, service threads,
 * the ring thread) is started by coexec__os_thread_create, with the
 * asynchronous signals blocked from its first instruction: a signal sent
 * to the process reaches only the user's threads (the primary among them),
 * so no offloaded call is interrupted by it and the thread and io_uring
 * paths give the same results. The synchronous signals (a fault of the
 * thread's own instruction) stay unblocked.
 *
 * fork: handlers registered at the first coexec_init. prepare takes the
 * locks of the state the child keeps or reclaims (the topology, the slab
 * list); parent releases them; child releases them, resets every other
 * piece of runtime state without taking a lock (re-initialising the locks
 * that guard it: the threads that could hold them are gone), so that the
 * child is uninitialised and coexec_init starts afresh. See fork_child
 * in process.c for what the child reclaims and what it leaks.
 */
#ifndef COEXEC_CORE_PROCESS_H
#define COEXEC_CORE_PROCESS_H

#include <pthread.h>
#include <stdbool.h>

/* Starts an OS thread of the library, as pthread_create does (attr may be
 * NULL; returns 0 or an errno value), with the asynchronous signals
 * blocked and named prefix followed by index (no index when index < 0),
 * cut to the 15 characters a thread name holds. */
int coexec__os_thread_create(pthread_t *t, const pthread_attr_t *attr,
                             void *(*fn)(void *), void *arg,
                             const char *prefix, int index);

/* Init, under its lock: registers the fork handlers (once per process).
 * COEXEC_OK; COEXEC_ECONTEXT in a child forked on a unit's stack (it may
 * only exec or exit); COEXEC_ENOMEM when the handlers cannot be had. */
int coexec__fork_setup(void);

/* The pieces of the fork protocol each module owns (process.c calls them
 * in this order). reclaim: the child runs on a stack of its own (not a
 * unit's), so the parent's slabs and stacks may be unmapped. */
void coexec__affinity_atfork_prepare(void);
void coexec__affinity_atfork_release(void);
void coexec__cache_atfork_prepare(void);
void coexec__cache_atfork_parent(void);
void coexec__cache_atfork_child(bool reclaim);
void coexec__init_atfork_child(void);
void coexec__xstream_atfork_child(bool reclaim);
void coexec__pool_atfork_child(void);
void coexec__sched_atfork_child(void);
void coexec__service_atfork_child(void);
void coexec__ring_atfork_child(void);

#endif /* COEXEC_CORE_PROCESS_H */
