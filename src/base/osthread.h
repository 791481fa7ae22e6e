/*
 * src/base/osthread.h: the library's OS threads.
 *
 * Room plaque. Every OS thread of the library (streams, service threads,
 * the ring thread) is started by coexec__os_thread_create, with the
 * asynchronous signals blocked from its first instruction: a signal sent
 * to the process reaches only the user's threads (the primary among them),
 * so no offloaded call is interrupted by it and the thread and io_uring
 * paths give the same results. The synchronous signals (a fault of the
 * thread's own instruction) stay unblocked. Streams run the user's units:
 * with COEXEC_STREAM_SIGNALS=1 they take the creating thread's mask once
 * started, as pthreads do (user_signals).
 */
#ifndef COEXEC_BASE_OSTHREAD_H
#define COEXEC_BASE_OSTHREAD_H

#include <pthread.h>

/* Starts an OS thread of the library, as pthread_create does (attr may be
 * NULL; returns 0 or an errno value), with the asynchronous signals
 * blocked (user_signals: until it runs fn, which it then runs with the
 * creating user thread's mask) and named prefix followed by index (no
 * index when index < 0), cut to the 15 characters a thread name holds. */
int coexec__os_thread_create(pthread_t *t, const pthread_attr_t *attr,
                             void *(*fn)(void *), void *arg,
                             const char *prefix, int index, int user_signals);

/* fork, in the child (src/core/process.c): a child of a library thread
 * gets back the signal mask, affinity and name that thread started with. */
void coexec__os_thread_atfork_child(void);

#endif /* COEXEC_BASE_OSTHREAD_H */
