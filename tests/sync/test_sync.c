/*
 * tests/sync/test_sync.c: the suites of test_sync, ULT synchronization
 * objects (coexec/sync.h), keys (coexec/key.h), sleep and timeouts
 * (coexec/time.h). Each suite lives in its own file, test_<suite>.c
 * (barrier and xbarrier in test_barrier.c, context and args in
 * test_sync_misuse.c); sync_test.h holds what they share.
 *
 *   mutex     exclusion between ULTs on 4 streams and external threads,
 *             static initialisers, recursion, FIFO hand-off, no starvation,
 *             timed locks, every error code
 *   cond      signal wakes one (the oldest), broadcast wakes all, the mutex
 *             is held on return, timed waits, producer/consumer, errors
 *   rwlock    shared readers, exclusive writers, arrival order (a waiting
 *             writer is not starved), try/timed variants, errors
 *   barrier   generations on 4 streams, one serial waiter per generation,
 *             external threads, errors
 *   xbarrier  the xstream barrier: one ULT per stream, external threads, a
 *             tasklet, errors
 *   key       per-ULT values, destructor counts and rounds (exit and
 *             detached ULTs too), delete, keys of an earlier init, limits
 *   sleep     never early, does not block the stream (sleep_ns(0) yields),
 *             parks an idle stream, deadline order, wakers do not cut a
 *             sleep short
 *   timeout   many timed waits of every kind on one stream, none early;
 *             short timeouts racing with hand-offs and signals leave every
 *             object consistent
 *   context   tasklets get COEXEC_ECONTEXT from every call that may wait
 *   args      NULL pointers and never-initialised objects
 */
#include "sync_test.h"

static const ch_suite_t suites[] = {
    {"mutex", sync_mutex_tests},
    {"cond", sync_cond_tests},
    {"rwlock", sync_rwlock_tests},
    {"barrier", sync_barrier_tests},
    {"xbarrier", sync_xbarrier_tests},
    {"key", sync_key_tests},
    {"sleep", sync_sleep_tests},
    {"timeout", sync_timeout_tests},
    {"context", sync_context_tests},
    {"args", sync_args_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
