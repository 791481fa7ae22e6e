/*
 * tests/service/service_test.h: what the suites of test_service share
 * (streams, helper threads, pipes and files, offloaded functions that say
 * they are running and block until released).
 *
 * Timing never decides a verdict: where a call must be known to be running
 * (so that another one is known to be queued, or the service to have
 * grown), the offloaded function says so itself before it blocks, and what
 * releases it is a write the test makes. The few pauses (ch_linger()) only
 * give a broken implementation the chance to show itself.
 */
#ifndef COEXEC_TEST_SERVICE_TEST_H
#define COEXEC_TEST_SERVICE_TEST_H

#define _GNU_SOURCE
#include "harness.h"

#include <coexec/service.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define NSTREAMS 4

/* ======================================================================= */
/* helpers                                                                  */
/* ======================================================================= */

static inline int self_rank(void)
{
    int r = -1;
    if (coexec_xstream_self_rank(&r) != COEXEC_OK)
        return -1;
    return r;
}

/*
 * Starts the runtime with nxs streams; threads / max_threads > 0 set
 * service_threads / service_max_threads.
 */
/* The file I/O path svc_init asks for; a test that changes it puts the
 * default back. */
static coexec_service_io_t g_io = COEXEC_SERVICE_IO_AUTO;

static inline void svc_init(int nxs, int threads, int max_threads)
{
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = nxs;
    cfg.service_io = g_io;
    if (threads > 0)
        cfg.service_threads = threads;
    if (max_threads > 0)
        cfg.service_max_threads = max_threads;
    int rc = coexec_init(&cfg);
    if (rc != COEXEC_OK)
        fprintf(stderr, "    coexec_init: %s\n", coexec_init_error());
    CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
}

static inline coexec_service_info_t svc_info(void)
{
    coexec_service_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    CH_CHECK_RC(coexec_service_get_info(&info), COEXEC_OK);
    return info;
}

static inline uint64_t svc_completed(void) { return svc_info().completed; }

/* 1 when a runtime started with service_io auto carries file I/O through
 * io_uring on this machine and build (asked once). */
static inline int uring_available(void)
{
    static int avail = -1;
    if (avail < 0) {
        coexec_config_t cfg;
        CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
        cfg.service_io = COEXEC_SERVICE_IO_AUTO;
        CH_ASSERT_OK_FATAL(coexec_init(&cfg));
        coexec_service_info_t info = svc_info();
        avail = info.io_path && strcmp(info.io_path, "io_uring") == 0;
        ch_finalize();
    }
    return avail;
}

/* For the io_uring variants: false (after saying so) when io_uring cannot
 * be had here, and the test passes without running. */
static inline bool uring_or_skip(void)
{
    if (uring_available())
        return true;
    printf("\n    skipped: io_uring is unavailable here (built without "
           "liburing, or the kernel refuses it); the thread path is "
           "tested by the *_threads variant\n");
    return false;
}

/* A fresh directory under /tmp; its path is written into dir (>= 64). */
static inline void tmpdir_make(char *dir)
{
    strcpy(dir, "/tmp/coexec-svc-XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
}

static inline int rm_entry(const char *p, const struct stat *sb, int flag,
                           struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(p);
    return 0;
}

static inline void tmpdir_remove(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- offloaded functions ---------------------------------------------- */

/* Returns its argument as the result. */
static inline intptr_t ret_arg_fn(void *arg) { return (intptr_t)arg; }

/* Counts its runs in *arg and returns 5. */
static inline intptr_t count_fn(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    return 5;
}

/*
 * Says it started, then reads one byte from a pipe: blocks a service
 * thread until the test writes. Returns the byte, or -errno.
 */
typedef struct {
    int fd;
    atomic_int started;
    atomic_int finished;
} blocker_t;

static inline intptr_t block_read_fn(void *arg)
{
    blocker_t *b = arg;
    atomic_store(&b->started, 1);
    unsigned char c = 0;
    ssize_t n = read(b->fd, &c, 1);
    intptr_t r = n == 1 ? (intptr_t)c : n == 0 ? -EPIPE : -errno;
    atomic_store(&b->finished, 1);
    return r;
}

/* Says it started, sleeps us microseconds, returns val. */
typedef struct {
    atomic_int started;
    useconds_t us;
    intptr_t val;
} sleeper_t;

static inline intptr_t sleep_fn(void *arg)
{
    sleeper_t *s = arg;
    atomic_store(&s->started, 1);
    usleep(s->us);
    return s->val;
}

static inline void make_pipe(int p[2])
{
    CU_ASSERT_EQUAL_FATAL(pipe2(p, O_CLOEXEC), 0);
}

static inline void close_pipe(int p[2])
{
    close(p[0]);
    close(p[1]);
}

/* A plain write of one byte (never offloaded). */
static inline void poke(int fd, unsigned char c)
{
    CH_CHECK_EQ(write(fd, &c, 1), 1);
}

typedef struct {
    coexec_request_t req;
    coexec_offload_fn_t fn;
    void *fnarg;
    int submitted;
    int polls;
    int first_rc;
    int final_rc;
    int zero_poll_rc;
    int wait_rc;
    intptr_t ret;
    atomic_int pending_seen;
    atomic_int done;
} tkreq_t;

/* Submits on its first poll, then polls the request until it is READY. */
static inline coexec_poll_status_t tkreq_body(coexec_poll_t *cx, void *arg)
{
    tkreq_t *t = arg;
    if (!t->submitted) {
        int rc = coexec_request_submit(&t->req, t->fn, t->fnarg);
        CH_CHECK_RC(rc, COEXEC_OK);
        t->submitted = 1;
        if (rc != COEXEC_OK) {
            t->final_rc = rc;
            atomic_store(&t->done, 1);
            return COEXEC_READY;
        }
        coexec_request_t zero;
        memset(&zero, 0, sizeof zero);
        t->zero_poll_rc = coexec_request_poll(&zero, cx, NULL);
        t->wait_rc = coexec_request_wait(&t->req, NULL);
    }
    intptr_t r = -12345;
    int rc = coexec_request_poll(&t->req, cx, &r);
    if (t->polls++ == 0)
        t->first_rc = rc;
    if (rc == COEXEC_PENDING) {
        atomic_store(&t->pending_seen, 1);
        return COEXEC_PENDING;
    }
    t->final_rc = rc;
    t->ret = r;
    atomic_store(&t->done, 1);
    return COEXEC_READY;
}

static inline void tkreq_init(tkreq_t *t, coexec_offload_fn_t fn, void *fnarg)
{
    memset(t, 0, sizeof *t);
    t->fn = fn;
    t->fnarg = fnarg;
    t->first_rc = t->final_rc = -99999;
    atomic_init(&t->pending_seen, 0);
    atomic_init(&t->done, 0);
}

/* Waits for a request somebody else submitted. */
typedef struct {
    coexec_request_t *req;
    int rc;
    intptr_t ret;
    atomic_int waiting;
} waiter_t;

static inline void waiter_job(void *arg)
{
    waiter_t *w = arg;
    atomic_store(&w->waiting, 1);
    w->rc = coexec_request_wait(w->req, &w->ret);
}

/* A tasklet that polls a request submitted by the test. */
typedef struct {
    coexec_request_t *req;
    int polls;
    int final_rc;
    atomic_int pending_seen;
    atomic_int done;
} poller_t;

static inline coexec_poll_status_t poller_body(coexec_poll_t *cx, void *arg)
{
    poller_t *p = arg;
    intptr_t r = 0;
    int rc = coexec_request_poll(p->req, cx, &r);
    p->polls++;
    if (rc == COEXEC_PENDING) {
        atomic_store(&p->pending_seen, 1);
        return COEXEC_PENDING;
    }
    p->final_rc = rc;
    atomic_store(&p->done, 1);
    return COEXEC_READY;
}

typedef struct {
    int fd;
    ssize_t n;
    unsigned char buf[32];
    atomic_int started;
    atomic_int done;
} reader_t;

/* A ULT blocked in coexec_read on an empty pipe. */
static inline void reader_ult(void *arg)
{
    reader_t *r = arg;
    atomic_store(&r->started, 1);
    r->n = coexec_read(r->fd, r->buf, sizeof r->buf);
    atomic_store(&r->done, 1);
}

/* File jobs (test_files.c; the io suite runs them on the ring too). */
typedef struct {
    const char *dir;
    int i;
    int count; /* files i .. i + count - 1 */
    long calls;
    atomic_int done;
} fjob_t;

/* A ULT running file jobs j->i .. j->i + j->count - 1. */
void file_ult(void *arg);
/* The subdirectories of dir the jobs write into; removed empty. */
void make_subdirs(const char *dir);
void remove_subdirs(const char *dir);
/* n ULTs dealt over the streams run one file job each; returns the
 * wrapper calls they made. */
long file_jobs_on_ults(const char *dir, long n);

/* The suites, one file each; test_service.c lists them. */
extern const ch_test_t service_offload_tests[];
extern const ch_test_t service_request_tests[];
extern const ch_test_t service_cancel_tests[];
extern const ch_test_t service_files_tests[];
extern const ch_test_t service_errors_tests[];
extern const ch_test_t service_stuck_tests[];
extern const ch_test_t service_compute_tests[];
extern const ch_test_t service_finalize_tests[];
extern const ch_test_t service_config_tests[];
extern const ch_test_t service_sockets_tests[];
extern const ch_test_t service_io_tests[];

#endif /* COEXEC_TEST_SERVICE_TEST_H */
