/*
 * tests/waker/wk.h: helpers shared by the waker, eventual, future and
 * channel suites (one binary, test_waker) and the lost-wake-up stress.
 */
#ifndef COEXEC_TEST_WK_H
#define COEXEC_TEST_WK_H

#include "harness.h"

#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Streams used by tests that want more streams than the machine's cores. */
#define WK_NSTREAMS 4

/* Lets other units and threads run n times (never a verdict). */
static inline void wk_relax_n(int n)
{
    for (int i = 0; i < n; i++)
        ch_relax();
}

/*
 * Whether OS thread tid sleeps in futex(). A helper thread that said it
 * is about to wait on an object has linked its wait node once it does:
 * that is the wait's only futex sleep (the objects' locks spin and yield).
 */
static inline bool wk_thread_in_futex(pid_t tid)
{
    return ch_task_syscall(tid) == SYS_futex;
}

/* Whether wk_thread_in_futex can see anything here (our own thread is
 * inside read() while it looks). */
static inline bool wk_futex_probe_works(void)
{
    return ch_task_syscall(ch_gettid()) == SYS_read;
}

/* Suites of test_waker, defined in the other sources. */
extern const ch_test_t wk_eventual_tests[];
extern const ch_test_t wk_future_tests[];
extern const ch_test_t wk_channel_tests[];

#endif /* COEXEC_TEST_WK_H */
