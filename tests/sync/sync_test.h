/*
 * tests/sync/sync_test.h: what the suites of test_sync share (streams,
 * spawning ULTs on a rank, helper pthreads, waiting until a unit parks).
 *
 * Timing never decides a pass: the only time assertions are lower bounds
 * ("a timed wait or a sleep never returns early"), and the CPU-time bound of
 * sleep/idle_stream_parks, whose comment explains why it is a fact about
 * parking. Short pauses (ch_linger()) only give a broken implementation the
 * chance to show itself; a correct one passes whatever their length. Loop
 * counts go through ch_iters() so COEXEC_TEST_SCALE shrinks them.
 */
#ifndef COEXEC_TEST_SYNC_TEST_H
#define COEXEC_TEST_SYNC_TEST_H

#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NSTREAMS 4
#define MS 1000000ull
/* Timeout of timed waits that are expected to succeed: a hang guard only. */
#define LONG_TIMEOUT_NS ((uint64_t)(CH_WAIT_LIMIT_S * 1e9))

/* ======================================================================= */
/* helpers                                                                  */
/* ======================================================================= */

/* Waits until t is parked (for a lock, a cond, a barrier ...). */
static inline bool wait_blocked(coexec_thread_t t)
{
    return CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
}

/* A pinned stream per slot (no stealing: units queued there run there). */
static inline void streams_create(ch_stream_t *s, int n)
{
    for (int i = 0; i < n; i++)
        CH_CHECK_RC(ch_stream_create(&s[i], COEXEC_SCHED_BASIC_WAIT),
                    COEXEC_OK);
}

static inline void streams_free(ch_stream_t *s, int n)
{
    for (int i = 0; i < n; i++)
        CH_CHECK_RC(ch_stream_free(&s[i]), COEXEC_OK);
}

static inline double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

typedef struct {
    coexec_mutex_t *m;
    int want;
} try_t;

/* trylock expecting want; unlocks again if it got the lock */
static inline void try_body(void *arg)
{
    try_t *t = arg;
    int rc = coexec_mutex_trylock(t->m);
    CH_CHECK_RC(rc, t->want);
    if (rc == COEXEC_OK)
        CH_CHECK_RC(coexec_mutex_unlock(t->m), COEXEC_OK);
}

typedef struct {
    coexec_xstream_barrier_t *b;
    atomic_int arriving;
    int rc;
} xwait_t;

static inline void xwait_body(void *arg)
{
    xwait_t *w = arg;
    atomic_store(&w->arriving, 1);
    w->rc = coexec_xstream_barrier_wait(w->b);
}

/*
 * A timed wait (sleep != 0: a sleep) on a stream busy in one long unit:
 * an idle thread fires its timer (test_timeout.c; the timeout and sleep
 * suites both run it).
 */
void sync_busy_stream_timer(int sleep);

/* The suites, one file each; test_sync.c lists them. */
extern const ch_test_t sync_mutex_tests[];
extern const ch_test_t sync_cond_tests[];
extern const ch_test_t sync_rwlock_tests[];
extern const ch_test_t sync_barrier_tests[];
extern const ch_test_t sync_xbarrier_tests[];
extern const ch_test_t sync_key_tests[];
extern const ch_test_t sync_sleep_tests[];
extern const ch_test_t sync_timeout_tests[];
extern const ch_test_t sync_context_tests[];
extern const ch_test_t sync_args_tests[];

#endif /* COEXEC_TEST_SYNC_TEST_H */
