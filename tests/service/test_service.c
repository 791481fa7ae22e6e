/*
 * tests/service/test_service.c: the suites of test_service, the service
 * stream (coexec/service.h): offloaded calls, the submit/poll/wait/cancel
 * requests, and the POSIX calls run through it. The suites live in
 * test_offload.c, test_request.c (request, cancel), test_files.c (files,
 * errors), test_progress.c (stuck, compute), test_service_finalize.c,
 * test_service_config.c, test_sockets.c and test_io.c; service_test.h
 * holds what they share.
 *
 *   offload   coexec_offload from ULTs on 4 streams, the main ULT and an
 *             external thread: fn runs on a thread that is no xstream's,
 *             results and -errno results come back unchanged; fn NULL,
 *             tasklets, before init; wrappers called inside fn run there;
 *             ULTs and external threads offloading at once
 *   request   submit + poll from tasklets (PENDING, then READY with the
 *             result), wait from a ULT and an external thread, never
 *             submitted (zeroed) requests, NULL arguments
 *   cancel    with one service thread held by a blocked call: queued
 *             requests cancelled (their fn never runs) release a ULT, a
 *             tasklet and an external thread with COEXEC_ECANCELED; a
 *             running or completed request is COEXEC_EBUSY
 *   files     ULTs on 4 streams write, read back byte for byte and remove
 *             a file each through every file wrapper; the same job from an
 *             external thread and without the runtime runs directly
 *   errors    -errno results (EBADF, ENOENT, EEXIST, ESPIPE, EINVAL) from
 *             a ULT, the main ULT, a tasklet, an external thread and
 *             without the runtime; direct calls leave errno alone
 *   stuck     reads blocked on empty pipes do not hold back other calls:
 *             the service grows (never past service_max_threads), the
 *             blocked reads complete once written to, and the service
 *             shrinks back to service_threads when idle; calls of external
 *             threads and tasklets' requests get past a stuck call too
 *   compute   a CPU-bound ULT keeps counting on the stream whose other
 *             ULTs wait for offloaded I/O
 *   finalize  finalize while an external thread's call runs and ULTs, a
 *             tasklet and a request waiter wait for queued calls: every
 *             waiter gets its result, COEXEC_ECANCELED or COEXEC_ECLOSED;
 *             ENOTINIT afterwards; a new init has a working service;
 *             finalize returns although a tasklet's submit left an
 *             expired check on the primary's timers
 *   config    defaults, environment and cfg fields, malformed values
 *             (COEXEC_EENV / COEXEC_EINVAL), coexec_service_get_info
 *   sockets   TCP accept/connect over loopback, poll over a socketpair,
 *             getaddrinfo and its own error codes, ECONNREFUSED
 *   io        the io_uring path of the file calls: where the ring is, the
 *             fallback to the service threads, a pipe does not stall the
 *             ring, a batch completes exactly once, finalize in flight
 */
#include "service_test.h"

static const ch_suite_t suites[] = {
    {"offload", service_offload_tests},
    {"request", service_request_tests},
    {"cancel", service_cancel_tests},
    {"files", service_files_tests},
    {"errors", service_errors_tests},
    {"stuck", service_stuck_tests},
    {"compute", service_compute_tests},
    {"finalize", service_finalize_tests},
    {"config", service_config_tests},
    {"sockets", service_sockets_tests},
    {"io", service_io_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
