/*
 * src/core/process.h: what the runtime does about the process around it:
 * the OS threads it starts (signal mask, name).
 *
 * Room plaque. Every OS thread of the library (streams, service threads,
 * the ring thread) is started by coexec__os_thread_create, with the
 * asynchronous signals blocked from its first instruction: a signal sent
 * to the process reaches only the user's threads (the primary among them),
 * so no offloaded call is interrupted by it and the thread and io_uring
 * paths give the same results. The synchronous signals (a fault of the
 * thread's own instruction) stay unblocked.
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

#endif /* COEXEC_CORE_PROCESS_H */
