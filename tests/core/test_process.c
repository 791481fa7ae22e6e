/*
 * tests/core/test_process.c: the runtime and the process around it: fork
 * (the child is uninitialised and may start the runtime again, the parent
 * keeps working, fork+exec works, descriptors are close-on-exec), signals
 * (the library's threads block the asynchronous ones, so a storm of a
 * process-directed signal interrupts no offloaded call, on either I/O
 * path) and the names of the library's threads.
 *
 * A child reports through its exit status: 0, or the line of the first
 * check that failed (printed on stderr too). The parent waits for it with
 * a hang guard: a child that has not exited after CH_WAIT_LIMIT_S is
 * killed and reported as hung.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * What the sanitizers' runtimes allow in the child of a multithreaded
 * process: TSan does not support starting threads there (its registry
 * still holds the parent's threads: "dup thread"), and ASan's (GCC 12's)
 * does not hold its allocator's locks across fork, so a thread the child
 * starts can block for good in the allocator. Under either, children check
 * the uninitialised runtime and exec, but do not start the runtime again;
 * the builds without a sanitizer test that.
 */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define CHILD_RESTARTS 0
#else
#define CHILD_RESTARTS 1
#endif

/* ======================================================================= */
/* helpers                                                                  */
/* ======================================================================= */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Checks in a child: return the failing line (the exit status). */
#define KCHECK(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "    child %d: %s:%d: %s\n", (int)getpid(),       \
                    __FILE__, __LINE__, #cond);                                \
            return __LINE__ % 250 + 1;                                         \
        }                                                                      \
    } while (0)
#define KRC(expr, want)                                                        \
    do {                                                                       \
        int k_rc_ = (expr), k_want_ = (want);                                  \
        if (k_rc_ != k_want_) {                                                \
            fprintf(stderr, "    child %d: %s:%d: %s returned %s, expected %s\n", \
                    (int)getpid(), __FILE__, __LINE__, #expr,                  \
                    coexec_err_name(k_rc_), coexec_err_name(k_want_));         \
            return __LINE__ % 250 + 1;                                         \
        }                                                                      \
    } while (0)

/* Waits for pid with a hang guard; its wait status, or -1 (recorded as a
 * failure) when it hung and was killed or could not be waited for. */
static int reap(pid_t pid)
{
    double t0 = ch_now();
    for (;;) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0 && errno != EINTR) {
            ch_fail_at(__FILE__, __LINE__, "waitpid(%d): %s", (int)pid,
                       strerror(errno));
            return -1;
        }
        if (ch_now() - t0 > CH_WAIT_LIMIT_S) {
            ch_fail_at(__FILE__, __LINE__,
                       "child %d has not exited after %.0f s: it hung",
                       (int)pid, CH_WAIT_LIMIT_S);
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            return -1;
        }
        sleep_ms(1);
    }
}

/* Records a failure unless the wait status says "exited with 0". */
#define CHECK_EXITED_0(st, what)                                               \
    do {                                                                       \
        int st_ = (st);                                                        \
        if (st_ != -1 && !(WIFEXITED(st_) && WEXITSTATUS(st_) == 0))           \
            ch_fail_at(__FILE__, __LINE__,                                     \
                       "%s: child %s %d (a failing child's status is the "    \
                       "line of its check %% 250 + 1)",                        \
                       what, WIFEXITED(st_) ? "exited with" : "killed by",     \
                       WIFEXITED(st_) ? WEXITSTATUS(st_) : WTERMSIG(st_));     \
    } while (0)

static void init_io(int nxs, coexec_service_io_t io, int svc_threads)
{
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = nxs;
    cfg.service_io = io;
    if (svc_threads > 0) {
        /* No thread starts while the quiet tests fork. */
        cfg.service_threads = svc_threads;
        cfg.service_max_threads = svc_threads;
    }
    cfg.quiet = 1;
    int rc = coexec_init(&cfg);
    if (rc != COEXEC_OK)
        fprintf(stderr, "    coexec_init: %s\n", coexec_init_error());
    CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
}

static bool io_is_uring(void)
{
    coexec_service_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    CH_CHECK_RC(coexec_service_get_info(&info), COEXEC_OK);
    return info.io_path && strcmp(info.io_path, "io_uring") == 0;
}

/* Whether io_uring carries file I/O here (asked once, with a runtime). */
static bool uring_available(void)
{
    static int avail = -1;
    if (avail < 0) {
        init_io(1, COEXEC_SERVICE_IO_AUTO, 0);
        avail = io_is_uring();
        ch_finalize();
    }
    return avail;
}

static bool uring_or_skip(void)
{
    if (uring_available())
        return true;
    printf("\n    skipped: io_uring is unavailable here (the threads path "
           "is tested by the other variant)\n");
    return false;
}

static void add_ult(void *arg) { atomic_fetch_add((atomic_long *)arg, 1); }

static intptr_t off_42(void *arg)
{
    (void)arg;
    return 42;
}

/* The comm of the calling thread (the process's name for the main one). */
static void self_comm(char *out, size_t n)
{
    if (pthread_getname_np(pthread_self(), out, n) != 0)
        out[0] = '\0';
}

/* ======================================================================= */
/* the child's checks                                                       */
/* ======================================================================= */

/* Handles of the parent's runtime, for the child to try. */
struct parent_objs {
    coexec_xstream_t xs1;
    coexec_pool_t pool;
    coexec_thread_t done_ult; /* joined, not freed */
    coexec_key_t key;
    coexec_request_t *pending; /* an offload still running at fork */
};

/* Every call needs the runtime: the named error, nothing hangs. */
static int child_uninitialised(const struct parent_objs *o)
{
    KCHECK(coexec_initialized() == 0);
    KCHECK(coexec_self_caller() == COEXEC_CALLER_EXTERNAL);
    coexec_config_t cfg;
    coexec_xstream_t x;
    coexec_thread_t t;
    coexec_pool_t p;
    coexec_sched_t s;
    coexec_key_t k;
    int n;
    intptr_t r;
    KRC(coexec_finalize(), COEXEC_ENOTINIT);
    KRC(coexec_get_config(&cfg), COEXEC_ENOTINIT);
    KRC(coexec_xstream_self(&x), COEXEC_ENOTINIT);
    KRC(coexec_xstream_get_num(&n), COEXEC_ENOTINIT);
    KRC(coexec_xstream_by_rank(0, &x), COEXEC_ENOTINIT);
    KRC(coexec_xstream_create(NULL, &x), COEXEC_ENOTINIT);
    KRC(coexec_xstream_get_rank(o->xs1, &n), COEXEC_ENOTINIT);
    KRC(coexec_thread_create(o->pool, add_ult, NULL, NULL, &t),
        COEXEC_ENOTINIT);
    KRC(coexec_thread_create_on(o->xs1, add_ult, NULL, NULL, &t),
        COEXEC_ENOTINIT);
    KRC(coexec_thread_join(o->done_ult), COEXEC_ENOTINIT);
    KRC(coexec_thread_self(&t), COEXEC_ENOTINIT);
    KRC(coexec_yield(), COEXEC_ENOTINIT);
    KRC(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p),
        COEXEC_ENOTINIT);
    KRC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, NULL, &s),
        COEXEC_ENOTINIT);
    KRC(coexec_key_create(NULL, &k), COEXEC_ENOTINIT);
    KRC(coexec_key_set(o->key, &n), COEXEC_ENOTINIT);
    KRC(coexec_offload(off_42, NULL, &r), COEXEC_ENOTINIT);
    coexec_request_t req;
    KRC(coexec_request_submit(&req, off_42, NULL), COEXEC_ENOTINIT);
    if (o->pending)
        KRC(coexec_request_wait(o->pending, &r), COEXEC_ENOTINIT);
    coexec_service_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    KRC(coexec_service_get_info(&info), COEXEC_ENOTINIT);
    /* The POSIX wrappers run the call here, as before any init. */
    int fds[2];
    KCHECK(pipe(fds) == 0);
    KCHECK(coexec_write(fds[1], "z", 1) == 1);
    char c = 0;
    KCHECK(coexec_read(fds[0], &c, 1) == 1 && c == 'z');
    close(fds[0]);
    close(fds[1]);
    return 0;
}

/* Starts the runtime again and uses it: ULTs on both streams, an offload,
 * an offloaded read and write, finalize. */
static int child_restart(coexec_service_io_t io)
{
    if (!CHILD_RESTARTS)
        return 0;
    coexec_config_t cfg;
    KRC(coexec_config_init(&cfg), COEXEC_OK);
    cfg.num_xstreams = 2;
    cfg.service_io = io;
    cfg.quiet = 1;
    KRC(coexec_init(&cfg), COEXEC_OK);
    KCHECK(coexec_initialized() == 1);
    int n = 0;
    KRC(coexec_xstream_get_num(&n), COEXEC_OK);
    KCHECK(n == 2);
    atomic_long count = 0;
    coexec_xstream_t xs[2];
    KRC(coexec_xstream_by_rank(0, &xs[0]), COEXEC_OK);
    KRC(coexec_xstream_by_rank(1, &xs[1]), COEXEC_OK);
    coexec_thread_t t[32];
    for (int i = 0; i < 32; i++)
        KRC(coexec_thread_create_on(xs[i & 1], add_ult, &count, NULL, &t[i]),
            COEXEC_OK);
    for (int i = 0; i < 32; i++) {
        KRC(coexec_thread_join(t[i]), COEXEC_OK);
        KRC(coexec_thread_free(&t[i]), COEXEC_OK);
    }
    KCHECK(atomic_load(&count) == 32);
    intptr_t r = 0;
    KRC(coexec_offload(off_42, NULL, &r), COEXEC_OK);
    KCHECK(r == 42);
    int fds[2];
    KCHECK(pipe(fds) == 0);
    KCHECK(coexec_write(fds[1], "ok", 2) == 2);
    char buf[2] = {0, 0};
    KCHECK(coexec_read(fds[0], buf, 2) == 2 && buf[0] == 'o' && buf[1] == 'k');
    close(fds[0]);
    close(fds[1]);
    KRC(coexec_finalize(), COEXEC_OK);
    KCHECK(coexec_initialized() == 0);
    return 0;
}

/* ======================================================================= */
/* fork                                                                     */
/* ======================================================================= */

/* An offload that runs until released: a service thread is busy at fork. */
static atomic_int g_release;
static intptr_t off_until_released(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_release))
        sleep_ms(1);
    return 7;
}

/* A ULT blocked in an offloaded read of a pipe at fork (on the ring when
 * it runs): the byte it read, or -errno. */
struct blocked_read {
    int fd;
    atomic_int started;
    intptr_t got;
};
static void blocked_read_ult(void *arg)
{
    struct blocked_read *b = arg;
    char c = 0;
    atomic_store(&b->started, 1);
    ssize_t r = coexec_read(b->fd, &c, 1);
    b->got = r == 1 ? c : r;
}

/* The parent's runtime while it forks: streams, pools, a finished ULT, a
 * key, a busy service thread and a read in flight. */
struct busy_parent {
    struct parent_objs o;
    coexec_request_t req;
    int pipefd[2];
    struct blocked_read br;
    coexec_thread_t reader;
};

static void busy_parent_start(struct busy_parent *b)
{
    memset(b, 0, sizeof *b);
    atomic_store(&g_release, 0);
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &b->o.xs1));
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(b->o.xs1, &b->o.pool));
    atomic_long n = 0;
    CH_ASSERT_OK_FATAL(
        coexec_thread_create(b->o.pool, add_ult, &n, NULL, &b->o.done_ult));
    CH_ASSERT_OK_FATAL(coexec_thread_join(b->o.done_ult));
    CH_ASSERT_OK_FATAL(coexec_key_create(NULL, &b->o.key));
    CH_ASSERT_OK_FATAL(coexec_request_submit(&b->req, off_until_released, NULL));
    b->o.pending = &b->req;
    CH_ASSERT_EQ_FATAL(pipe(b->pipefd), 0);
    b->br.fd = b->pipefd[0];
    CH_ASSERT_OK_FATAL(coexec_thread_create_on(b->o.xs1, blocked_read_ult,
                                               &b->br, NULL, &b->reader));
    CH_WAIT(atomic_load(&b->br.started));
    sleep_ms(5); /* very likely inside the read by now (not a verdict) */
}

/* After the fork: everything the parent had in flight completes. */
static void busy_parent_finish(struct busy_parent *b)
{
    atomic_store(&g_release, 1);
    intptr_t r = 0;
    CH_ASSERT_OK(coexec_request_wait(&b->req, &r));
    CH_ASSERT_EQ(r, 7);
    CH_ASSERT_EQ(write(b->pipefd[1], "q", 1), 1);
    CH_ASSERT_OK(coexec_thread_join(b->reader));
    CH_ASSERT_EQ(b->br.got, 'q');
    CH_ASSERT_OK(coexec_thread_free(&b->reader));
    CH_ASSERT_OK(coexec_thread_free(&b->o.done_ult));
    CH_ASSERT_OK(coexec_key_delete(b->o.key));
    close(b->pipefd[0]);
    close(b->pipefd[1]);
    /* And it keeps working. */
    atomic_long n = 0;
    coexec_thread_t t[16];
    for (int i = 0; i < 16; i++)
        CH_ASSERT_OK(coexec_thread_create_on(b->o.xs1, add_ult, &n, NULL, &t[i]));
    for (int i = 0; i < 16; i++)
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
    CH_ASSERT_EQ(atomic_load(&n), 16);
    r = 0;
    CH_ASSERT_OK(coexec_offload(off_42, NULL, &r));
    CH_ASSERT_EQ(r, 42);
}

static int child_of_busy_parent(const struct parent_objs *o,
                                coexec_service_io_t io)
{
    int rc = child_uninitialised(o);
    if (rc)
        return rc;
    rc = child_restart(io);
    if (rc)
        return rc;
    /* A second cycle: nothing of the first one is left in the way. */
    return child_restart(io);
}

static void fork_from_main(coexec_service_io_t io)
{
    init_io(3, io, 2);
    struct busy_parent b;
    busy_parent_start(&b);
    pid_t pid = fork();
    if (pid == 0)
        _exit(child_of_busy_parent(&b.o, io));
    CU_ASSERT_FATAL(pid > 0);
    CHECK_EXITED_0(reap(pid), "fork from the main ULT");
    busy_parent_finish(&b);
    ch_finalize();
}

static void t_fork_main_threads(void)
{
    fork_from_main(COEXEC_SERVICE_IO_THREADS);
}

static void t_fork_main_uring(void)
{
    if (uring_or_skip())
        fork_from_main(COEXEC_SERVICE_IO_URING);
}

/* fork from an external pthread while the runtime runs. */
struct ext_fork {
    const struct parent_objs *o;
    coexec_service_io_t io;
    int status;
};

static void *ext_fork_main(void *arg)
{
    struct ext_fork *e = arg;
    pid_t pid = fork();
    if (pid == 0)
        _exit(child_of_busy_parent(e->o, e->io));
    if (pid < 0) {
        ch_fail_at(__FILE__, __LINE__, "fork: %s", strerror(errno));
        return NULL;
    }
    e->status = reap(pid);
    return NULL;
}

static void fork_from_external(coexec_service_io_t io)
{
    init_io(3, io, 2);
    struct busy_parent b;
    busy_parent_start(&b);
    struct ext_fork e = {&b.o, io, -1};
    ch_pthread_t th;
    ch_pthread_start(&th, ext_fork_main, &e);
    /* The main ULT waits, quietly (busy_repeated forks while the runtime
     * works). */
    ch_pthread_join(&th);
    CHECK_EXITED_0(e.status, "fork from an external thread");
    busy_parent_finish(&b);
    ch_finalize();
}

static void t_fork_external_threads(void)
{
    fork_from_external(COEXEC_SERVICE_IO_THREADS);
}

static void t_fork_external_uring(void)
{
    if (uring_or_skip())
        fork_from_external(COEXEC_SERVICE_IO_URING);
}

/* ---- fork + exec from every kind of caller ------------------------------ */

static sigset_t g_user_mask;   /* the main thread's mask at init */
static cpu_set_t g_user_cpus;  /* and its affinity */
static char g_user_comm[16];   /* and its name */

static void remember_user_thread(void)
{
    pthread_sigmask(SIG_SETMASK, NULL, &g_user_mask);
    CH_ASSERT_EQ(sched_getaffinity(0, sizeof g_user_cpus, &g_user_cpus), 0);
    self_comm(g_user_comm, sizeof g_user_comm);
}

/* In a child of a library thread: the user's mask, affinity and name are
 * back (not the library thread's blocked signals, CPU and name). */
static int child_has_user_thread_state(void)
{
    sigset_t m;
    KCHECK(pthread_sigmask(SIG_SETMASK, NULL, &m) == 0);
    int sigs[] = {SIGUSR1, SIGUSR2, SIGINT, SIGTERM, SIGCHLD, SIGALRM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        KCHECK(sigismember(&m, sigs[i]) == sigismember(&g_user_mask, sigs[i]));
    cpu_set_t c;
    KCHECK(sched_getaffinity(0, sizeof c, &c) == 0);
    KCHECK(CPU_EQUAL(&c, &g_user_cpus));
    char comm[16];
    self_comm(comm, sizeof comm);
    KCHECK(strcmp(comm, g_user_comm) == 0);
    return 0;
}

/* Forks and execs /bin/true; the child first runs check (if any), which
 * decides its exit status when it fails. Returns the wait status. */
static int fork_exec_true(int (*check)(void))
{
    pid_t pid = fork();
    if (pid == 0) {
        int rc = check ? check() : 0;
        if (rc)
            _exit(rc);
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    if (pid < 0) {
        ch_fail_at(__FILE__, __LINE__, "fork: %s", strerror(errno));
        return -1;
    }
    return reap(pid);
}

/* A child forked on a unit's stack may not start the runtime again. */
static int child_of_unit(void)
{
    KCHECK(coexec_initialized() == 0);
    KRC(coexec_init(NULL), COEXEC_ECONTEXT);
    KCHECK(coexec_initialized() == 0);
    return child_has_user_thread_state();
}

static void exec_ult(void *arg)
{
    *(int *)arg = fork_exec_true(child_of_unit);
}

static void exec_tasklet(void *arg)
{
    *(int *)arg = fork_exec_true(child_of_unit);
}

/* From an offloaded call: the child is a service thread's, on that
 * thread's own stack: it may start the runtime again. */
static int child_of_service_thread(void)
{
    int rc = child_has_user_thread_state();
    if (rc)
        return rc;
    return child_restart(COEXEC_SERVICE_IO_THREADS);
}

static intptr_t off_fork(void *arg)
{
    (void)arg;
    pid_t pid = fork();
    if (pid == 0)
        _exit(child_of_service_thread());
    return pid < 0 ? -1 : reap(pid);
}

static void *ext_exec_main(void *arg)
{
    *(int *)arg = fork_exec_true(NULL);
    return NULL;
}

static void t_fork_exec(void)
{
    remember_user_thread();
    init_io(3, COEXEC_SERVICE_IO_AUTO, 1);
    /* The main ULT. */
    CHECK_EXITED_0(fork_exec_true(NULL), "fork+exec from the main ULT");
    /* A ULT and a tasklet on a secondary stream (one that does not
     * steal, and whose pool no one steals from: they run there). */
    ch_stream_t cs;
    CH_ASSERT_EQ_FATAL(ch_stream_create(&cs, COEXEC_SCHED_BASIC_WAIT), 0);
    int st = -1;
    CH_ASSERT_OK(ch_run_ult_in(cs.pool, exec_ult, &st));
    CHECK_EXITED_0(st, "fork+exec from a ULT of a secondary stream");
    st = -1;
    CH_ASSERT_OK(ch_run_tasklet_in(cs.pool, exec_tasklet, &st));
    CHECK_EXITED_0(st, "fork+exec from a tasklet");
    CH_ASSERT_EQ(ch_stream_free(&cs), 0);
    /* A ULT on the primary, not the main one. */
    coexec_xstream_t xs0;
    coexec_pool_t pool0;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &xs0));
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(xs0, &pool0));
    st = -1;
    CH_ASSERT_OK(ch_run_ult_in(pool0, exec_ult, &st));
    CHECK_EXITED_0(st, "fork+exec from a ULT of the primary");
    /* An offloaded call (a service thread). */
    intptr_t r = -1;
    CH_ASSERT_OK(coexec_offload(off_fork, NULL, &r));
    CHECK_EXITED_0((int)r, "fork from an offloaded call");
    /* An external thread. */
    st = -1;
    ch_pthread_t th;
    ch_pthread_start(&th, ext_exec_main, &st);
    ch_pthread_join(&th);
    CHECK_EXITED_0(st, "fork+exec from an external thread");
    /* The runtime still works. */
    r = 0;
    CH_ASSERT_OK(coexec_offload(off_42, NULL, &r));
    CH_ASSERT_EQ(r, 42);
    ch_finalize();
}

/* Every descriptor the runtime opened is close-on-exec. */
static int fd_is_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1;
}

static void t_fork_cloexec(void)
{
    enum { MAXFD = 1024 };
    static char before[MAXFD];
    for (int fd = 0; fd < MAXFD; fd++)
        before[fd] = (char)fd_is_open(fd);
    init_io(3, COEXEC_SERVICE_IO_AUTO, 2);
    intptr_t r = 0;
    CH_ASSERT_OK(coexec_offload(off_42, NULL, &r));
    int fds[2];
    CH_ASSERT_EQ_FATAL(pipe(fds), 0);
    CH_ASSERT_EQ(coexec_write(fds[1], "x", 1), 1);
    char c;
    CH_ASSERT_EQ(coexec_read(fds[0], &c, 1), 1);
    close(fds[0]);
    close(fds[1]);
    int opened = 0;
    for (int fd = 0; fd < MAXFD; fd++) {
        if (before[fd] || !fd_is_open(fd))
            continue;
        opened++;
        int fl = fcntl(fd, F_GETFD);
        char path[64], target[256] = "";
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n > 0)
            target[n] = '\0';
        if (!(fl & FD_CLOEXEC))
            ch_fail_at(__FILE__, __LINE__,
                       "fd %d (%s) opened by the runtime is not close-on-exec",
                       fd, target);
    }
    /* The ring's eventfd and the ring itself, when it runs. */
    if (io_is_uring())
        CU_ASSERT(opened >= 2);
    ch_finalize();
}

/* Forks again and again while streams, service threads and an external
 * thread work: the locks the child needs are never left held. */
static atomic_int g_stress_stop;

static void spin_ults(void *arg)
{
    coexec_xstream_t *xs = arg;
    atomic_long n = 0;
    while (!atomic_load(&g_stress_stop)) {
        coexec_thread_t t[8];
        for (int i = 0; i < 8; i++)
            CH_CHECK_RC(coexec_thread_create_on(*xs, add_ult, &n, NULL, &t[i]),
                        COEXEC_OK);
        for (int i = 0; i < 8; i++)
            CH_CHECK_RC(coexec_thread_free(&t[i]), COEXEC_OK);
        int fds[2];
        if (pipe(fds) == 0) {
            char c = 0;
            CH_CHECK_EQ(coexec_write(fds[1], "s", 1), 1);
            CH_CHECK_EQ(coexec_read(fds[0], &c, 1), 1);
            close(fds[0]);
            close(fds[1]);
        }
    }
}

static void *ext_offloader(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stress_stop)) {
        intptr_t r = 0;
        CH_CHECK_RC(coexec_offload(off_42, NULL, &r), COEXEC_OK);
        CH_CHECK_EQ(r, 42);
        coexec_thread_t t;
        coexec_xstream_t xs1;
        atomic_long n = 0;
        CH_CHECK_RC(coexec_xstream_by_rank(1, &xs1), COEXEC_OK);
        CH_CHECK_RC(coexec_thread_create_on(xs1, add_ult, &n, NULL, &t),
                    COEXEC_OK);
        CH_CHECK_RC(coexec_thread_free(&t), COEXEC_OK);
    }
    return NULL;
}

static int child_quick_restart(void)
{
    KCHECK(coexec_initialized() == 0);
    KCHECK(coexec_self_caller() == COEXEC_CALLER_EXTERNAL);
    if (!CHILD_RESTARTS)
        return 0;
    coexec_config_t cfg;
    KRC(coexec_config_init(&cfg), COEXEC_OK);
    cfg.num_xstreams = 2;
    cfg.quiet = 1;
    KRC(coexec_init(&cfg), COEXEC_OK);
    intptr_t r = 0;
    KRC(coexec_offload(off_42, NULL, &r), COEXEC_OK);
    KCHECK(r == 42);
    KRC(coexec_finalize(), COEXEC_OK);
    return 0;
}

static void t_fork_busy_repeated(void)
{
    init_io(4, COEXEC_SERVICE_IO_AUTO, 2);
    atomic_store(&g_stress_stop, 0);
    coexec_xstream_t xs[3];
    coexec_thread_t w[3];
    for (int i = 0; i < 3; i++) {
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(i + 1, &xs[i]));
        CH_ASSERT_OK_FATAL(
            coexec_thread_create_on(xs[i], spin_ults, &xs[i], NULL, &w[i]));
    }
    ch_pthread_t th;
    ch_pthread_start(&th, ext_offloader, NULL);
    long n = ch_iters(30, 4);
    for (long i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(child_quick_restart());
        CU_ASSERT_FATAL(pid > 0);
        CHECK_EXITED_0(reap(pid), "fork while the runtime is busy");
        CH_ASSERT_OK(coexec_yield());
    }
    atomic_store(&g_stress_stop, 1);
    ch_pthread_join(&th);
    for (int i = 0; i < 3; i++)
        CH_ASSERT_OK(coexec_thread_free(&w[i]));
    ch_finalize();
}

/* ======================================================================= */
/* signals                                                                  */
/* ======================================================================= */

/* Threads left out of for_each_other_thread: those that existed before
 * the runtime started (a sanitizer's own, for one), when g_n_old > 0. */
static char g_old_tids[256][16];
static int g_n_old;

static bool is_old_thread(const char *tid)
{
    for (int i = 0; i < g_n_old; i++)
        if (strcmp(g_old_tids[i], tid) == 0)
            return true;
    return false;
}

static void remember_threads(void)
{
    g_n_old = 0;
    DIR *d = opendir("/proc/self/task");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && g_n_old < 256) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] != '.' && n < sizeof g_old_tids[0])
            memcpy(g_old_tids[g_n_old++], e->d_name, n + 1);
    }
    closedir(d);
}

/* Calls fn for every thread of the process but the calling one (and the
 * remembered ones), with its comm and the SigBlk mask of its status;
 * returns how many there were. */
static int for_each_other_thread(void (*fn)(const char *comm,
                                            unsigned long long blk,
                                            void *arg),
                                 void *arg)
{
    char me[32];
    snprintf(me, sizeof me, "%d", (int)gettid());
    DIR *d = opendir("/proc/self/task");
    if (!d) {
        ch_fail_at(__FILE__, __LINE__, "opendir /proc/self/task: %s",
                   strerror(errno));
        return 0;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, me) == 0 ||
            is_old_thread(e->d_name))
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue; /* the thread exited meanwhile */
        if (!fgets(comm, sizeof comm, f))
            comm[0] = '\0';
        fclose(f);
        comm[strcspn(comm, "\n")] = '\0';
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        f = fopen(path, "re");
        if (!f)
            continue;
        char line[256];
        unsigned long long blk = 0;
        int have = 0;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "SigBlk: %llx", &blk) == 1)
                have = 1;
        fclose(f);
        if (!have)
            continue;
        n++;
        fn(comm, blk, arg);
    }
    closedir(d);
    return n;
}

#define SIGBIT(s) (1ull << ((s) - 1))

/* The library's threads name themselves coexec-*; others that start
 * meanwhile (a sanitizer's background thread) are not the library's. */
static bool library_thread(const char *comm)
{
    return strncmp(comm, "coexec-", 7) == 0;
}

static void check_blocked(const char *comm, unsigned long long blk, void *arg)
{
    (void)arg;
    if (!library_thread(comm))
        return;
    static const int async_sigs[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGUSR1,
                                     SIGUSR2, SIGPIPE, SIGALRM, SIGTERM,
                                     SIGCHLD, SIGCONT, SIGTSTP, SIGURG,
                                     SIGWINCH, SIGIO,  SIGPROF, SIGXFSZ};
    static const int sync_sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP};
    for (size_t i = 0; i < sizeof async_sigs / sizeof async_sigs[0]; i++)
        if (!(blk & SIGBIT(async_sigs[i])))
            ch_fail_at(__FILE__, __LINE__,
                       "%s does not block signal %d (%s); SigBlk %016llx",
                       comm, async_sigs[i], strsignal(async_sigs[i]), blk);
    for (size_t i = 0; i < sizeof sync_sigs / sizeof sync_sigs[0]; i++)
        if (blk & SIGBIT(sync_sigs[i]))
            ch_fail_at(__FILE__, __LINE__,
                       "%s blocks the synchronous signal %d (%s)", comm,
                       sync_sigs[i], strsignal(sync_sigs[i]));
    if (!(blk & SIGBIT(SIGRTMIN + 1)))
        ch_fail_at(__FILE__, __LINE__, "%s does not block SIGRTMIN+1", comm);
}

/* glibc starts a thread with every signal blocked, until it puts the
 * creator's mask in place (a thread seen then blocks SIGSEGV too), and a
 * library thread names itself once its own mask is set: count those past
 * both, whose mask is then final. */
static void count_ready(const char *comm, unsigned long long blk, void *arg)
{
    if (library_thread(comm) && !(blk & SIGBIT(SIGSEGV)))
        ++*(int *)arg;
}

static int threads_ready(void)
{
    int n = 0;
    for_each_other_thread(count_ready, &n);
    return n;
}

static void t_signals_masks(void)
{
    /* The user's thread keeps its mask; the library's block everything
     * asynchronous, even though the creating thread blocked nothing. */
    sigset_t none, before, after;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, &before);
    remember_threads(); /* every thread started from now on is the runtime's */
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = 3;
    cfg.service_threads = 2;
    cfg.quiet = 1;
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    /* One more stream, made from an external thread's call would be the
     * same: made from the main ULT here. */
    coexec_xstream_t extra;
    CH_ASSERT_OK(coexec_xstream_create(NULL, &extra));
    intptr_t r;
    CH_ASSERT_OK(coexec_offload(off_42, NULL, &r));
    /* 3 secondary streams and 2 service threads at least. */
    CU_ASSERT(CH_WAIT(threads_ready() >= 5));
    int n = for_each_other_thread(check_blocked, NULL);
    g_n_old = 0;
    /* 3 secondary streams, 2 service threads, maybe the ring thread. */
    CU_ASSERT(n >= 5);
    pthread_sigmask(SIG_SETMASK, NULL, &after);
    CU_ASSERT(!sigismember(&after, SIGUSR1));
    CU_ASSERT(!sigismember(&after, SIGINT));
    CH_ASSERT_OK(coexec_xstream_free(&extra));
    ch_finalize();
    pthread_sigmask(SIG_SETMASK, &before, NULL);
}

/* With COEXEC_STREAM_SIGNALS=1: the streams take the creator's mask (what
 * it blocks, they block; SIGUSR1 it lets through), the service threads
 * still block everything asynchronous; a ULT's raise() on a secondary
 * stream runs the handler there, at once. */
static atomic_int g_raised;
static atomic_int g_raised_rank;

static void on_raise(int sig)
{
    (void)sig;
    atomic_fetch_add(&g_raised, 1);
}

static void raise_ult(void *arg)
{
    (void)arg;
    atomic_store(&g_raised_rank, ch_self_rank());
    CH_CHECK_EQ(raise(SIGUSR1), 0);
}

/* The threads seen from /proc: the streams are counted (their masks are
 * read from inside, below), the others checked as library threads. */
static void check_stream_mask(const char *comm, unsigned long long blk,
                              void *arg)
{
    if (strncmp(comm, "coexec-xs", 9) == 0)
        ++*(int *)arg;
    else
        check_blocked(comm, blk, NULL);
}

/* A stream's mask as the stream itself sees it. /proc shows the kernel's
 * mask of the thread, which under valgrind is the one valgrind keeps
 * while the thread runs (everything blocked), not the program's. */
static sigset_t g_stream_mask[3];
static atomic_int g_masks_read;

static coexec_poll_status_t read_mask_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    pthread_sigmask(SIG_BLOCK, NULL, &g_stream_mask[(intptr_t)arg]);
    atomic_fetch_add(&g_masks_read, 1);
    return COEXEC_READY;
}

static void t_signals_stream_mask(void)
{
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_raise;
    sigemptyset(&sa.sa_mask);
    CH_ASSERT_EQ_FATAL(sigaction(SIGUSR1, &sa, &old_sa), 0);
    sigset_t mask, before;
    sigemptyset(&mask);
    sigaddset(&mask, SIGUSR2);
    pthread_sigmask(SIG_SETMASK, &mask, &before);
    remember_threads();
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = 3;
    cfg.service_threads = 1;
    cfg.quiet = 1;
    cfg.stream_signals = 1;
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    intptr_t r;
    CH_ASSERT_OK(coexec_offload(off_42, NULL, &r));
    CU_ASSERT(CH_WAIT(threads_ready() >= 3));
    int streams = 0;
    for_each_other_thread(check_stream_mask, &streams);
    g_n_old = 0;
    CU_ASSERT(streams >= 2);
    atomic_store(&g_masks_read, 0);
    for (intptr_t rank = 1; rank <= 2; rank++) {
        coexec_xstream_t x;
        CH_ASSERT_OK(coexec_xstream_by_rank((int)rank, &x));
        CH_ASSERT_OK(coexec_xstream_post(x, read_mask_tasklet, (void *)rank));
    }
    CU_ASSERT(CH_WAIT(atomic_load(&g_masks_read) == 2));
    for (int rank = 1; rank <= 2; rank++) {
        CU_ASSERT(!sigismember(&g_stream_mask[rank], SIGUSR1));
        /* What its creator blocks, it blocks. */
        CU_ASSERT(sigismember(&g_stream_mask[rank], SIGUSR2));
    }
    atomic_store(&g_raised, 0);
    atomic_store(&g_raised_rank, -1);
    coexec_xstream_t x2;
    CH_ASSERT_OK(coexec_xstream_by_rank(2, &x2));
    coexec_thread_t t;
    coexec_thread_attr_t pin;
    CH_ASSERT_OK(coexec_thread_attr_init(&pin));
    pin.pinned = 1; /* never stolen: it runs on stream 2 */
    CH_ASSERT_OK(coexec_thread_create_on(x2, raise_ult, NULL, &pin, &t));
    CH_ASSERT_OK(coexec_thread_wait(t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CU_ASSERT_EQUAL(atomic_load(&g_raised_rank), 2);
    CU_ASSERT_EQUAL(atomic_load(&g_raised), 1);
    ch_finalize();
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    sigaction(SIGUSR1, &old_sa, NULL);
}

/* The storm: a signal sent to the process, again and again, while ULTs
 * offload reads of pipes a feeder writes one byte at a time. It is a
 * real-time signal, which queues: the kernel gives a process-directed
 * signal to the thread that took the last one as long as that thread
 * takes it, so a plain signal would stick to one thread; a burst of
 * queued ones spreads over every thread that does not block it. */
#define STORM_SIG (SIGRTMIN + 2)
static atomic_long g_sigs;
static atomic_int g_storm_stop;

static void on_storm_sig(int sig)
{
    (void)sig;
    atomic_fetch_add(&g_sigs, 1);
}

/* The one thread that takes the signal: with the library's threads
 * blocking it, the kernel delivers every one here. */
static void *sink_main(void *arg)
{
    (void)arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, STORM_SIG);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    while (!atomic_load(&g_storm_stop))
        sleep_ms(1);
    return NULL;
}

static void *storm_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_storm_stop)) {
        for (int i = 0; i < 8; i++)
            kill(getpid(), STORM_SIG); /* EAGAIN when the queue is full */
        sched_yield();
    }
    return NULL;
}

#define STORM_PIPES 6

struct storm_reader {
    int fd;
    long rounds;
    long eintr;
    long bad;
};

static void storm_reader_ult(void *arg)
{
    struct storm_reader *r = arg;
    for (long i = 0; i < r->rounds; i++) {
        char c = 0;
        ssize_t n;
        while ((n = coexec_read(r->fd, &c, 1)) == -EINTR)
            r->eintr++;
        if (n != 1 || (unsigned char)c != (unsigned char)(i & 0xff))
            r->bad++;
    }
}

struct feeder {
    int *wfd;
    long rounds;
};

/* Writes round i's byte to every pipe once a signal more has been taken
 * since the last round: signals keep arriving while readers wait. */
static void *feeder_main(void *arg)
{
    struct feeder *f = arg;
    for (long i = 0; i < f->rounds; i++) {
        long seen = atomic_load(&g_sigs);
        double t0 = ch_now();
        while (atomic_load(&g_sigs) < seen + 2 &&
               ch_now() - t0 < CH_WAIT_LIMIT_S)
            sched_yield();
        char c = (char)(i & 0xff);
        for (int p = 0; p < STORM_PIPES; p++)
            if (write(f->wfd[p], &c, 1) != 1)
                ch_fail_at(__FILE__, __LINE__, "feeder write: %s",
                           strerror(errno));
    }
    return NULL;
}

static void storm(coexec_service_io_t io)
{
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_storm_sig; /* no SA_RESTART: an interrupted call fails */
    sigemptyset(&sa.sa_mask);
    CH_ASSERT_EQ_FATAL(sigaction(STORM_SIG, &sa, &old_sa), 0);
    atomic_store(&g_sigs, 0);
    atomic_store(&g_storm_stop, 0);
    /* Threads made by init inherit the mask in force: nothing blocked. */
    sigset_t s, before;
    sigemptyset(&s);
    pthread_sigmask(SIG_SETMASK, &s, &before);
    init_io(3, io, STORM_PIPES);
    CH_ASSERT_EQ(io_is_uring(), io == COEXEC_SERVICE_IO_URING);
    /* The main thread (the primary) takes none, nor do the helpers it
     * starts: only the sink and, if they let it, the library's threads. */
    sigaddset(&s, STORM_SIG);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    ch_pthread_t sink, storm_th, feeder_th;
    ch_pthread_start(&sink, sink_main, NULL);
    ch_pthread_start(&storm_th, storm_main, NULL);

    long rounds = ch_iters(300, 30);
    int rfd[STORM_PIPES], wfd[STORM_PIPES];
    struct storm_reader rd[STORM_PIPES];
    coexec_thread_t t[STORM_PIPES];
    coexec_xstream_t xs[3];
    for (int i = 0; i < 3; i++)
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(i, &xs[i]));
    for (int p = 0; p < STORM_PIPES; p++) {
        int fds[2];
        CH_ASSERT_EQ_FATAL(pipe(fds), 0);
        rfd[p] = fds[0];
        wfd[p] = fds[1];
        rd[p] = (struct storm_reader){rfd[p], rounds, 0, 0};
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs[p % 3], storm_reader_ult,
                                                   &rd[p], NULL, &t[p]));
    }
    struct feeder f = {wfd, rounds};
    ch_pthread_start(&feeder_th, feeder_main, &f);
    long eintr = 0, bad = 0;
    for (int p = 0; p < STORM_PIPES; p++) {
        CH_ASSERT_OK(coexec_thread_free(&t[p]));
        eintr += rd[p].eintr;
        bad += rd[p].bad;
    }
    ch_pthread_join(&feeder_th);
    atomic_store(&g_storm_stop, 1);
    ch_pthread_join(&storm_th);
    ch_pthread_join(&sink);
    ch_finalize();
    /* Signals still queued are dropped, not delivered to a default. */
    signal(STORM_SIG, SIG_IGN);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    sigaction(STORM_SIG, &old_sa, NULL);
    for (int p = 0; p < STORM_PIPES; p++) {
        close(rfd[p]);
        close(wfd[p]);
    }
    printf("\n    %ld reads, %ld signals taken, %ld EINTR\n",
           rounds * STORM_PIPES, atomic_load(&g_sigs), eintr);
    CH_ASSERT_EQ(eintr, 0);
    CH_ASSERT_EQ(bad, 0);
    CU_ASSERT(atomic_load(&g_sigs) >= 2 * rounds);
}

static void t_signals_storm_threads(void)
{
    storm(COEXEC_SERVICE_IO_THREADS);
}

static void t_signals_storm_uring(void)
{
    if (uring_or_skip())
        storm(COEXEC_SERVICE_IO_URING);
}

/* ======================================================================= */
/* names                                                                    */
/* ======================================================================= */

struct names {
    char seen[64][16];
    int n;
};

static void collect_name(const char *comm, unsigned long long blk, void *arg)
{
    (void)blk;
    struct names *ns = arg;
    if (ns->n < 64)
        snprintf(ns->seen[ns->n++], sizeof ns->seen[0], "%s", comm);
}

static int count_named(const char *name)
{
    struct names ns;
    ns.n = 0;
    for_each_other_thread(collect_name, &ns);
    int k = 0;
    for (int i = 0; i < ns.n; i++)
        k += strcmp(ns.seen[i], name) == 0;
    return k;
}

static void t_names(void)
{
    char comm_before[16], comm_after[16];
    self_comm(comm_before, sizeof comm_before);
    CH_ASSERT_EQ(count_named("coexec-xs1"), 0);
    init_io(3, COEXEC_SERVICE_IO_AUTO, 2);
    bool ring = io_is_uring();
    coexec_xstream_t extra;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &extra));
    int rank = -1;
    CH_ASSERT_OK(coexec_xstream_get_rank(extra, &rank));
    CH_ASSERT_EQ(rank, 3);
    /* Each thread names itself as it starts. */
    CU_ASSERT(CH_WAIT(count_named("coexec-xs1") == 1));
    CU_ASSERT(CH_WAIT(count_named("coexec-xs2") == 1));
    CU_ASSERT(CH_WAIT(count_named("coexec-xs3") == 1));
    CU_ASSERT(CH_WAIT(count_named("coexec-svc0") == 1));
    CU_ASSERT(CH_WAIT(count_named("coexec-svc1") == 1));
    if (ring)
        CU_ASSERT(CH_WAIT(count_named("coexec-ring") == 1));
    /* The primary is the user's thread: never renamed. */
    CH_ASSERT_EQ(count_named("coexec-xs0"), 0);
    self_comm(comm_after, sizeof comm_after);
    CU_ASSERT_STRING_EQUAL(comm_after, comm_before);
    CH_ASSERT_OK(coexec_xstream_free(&extra));
    ch_finalize();
    CH_ASSERT_EQ(count_named("coexec-xs1"), 0);
    CH_ASSERT_EQ(count_named("coexec-svc0"), 0);
    CH_ASSERT_EQ(count_named("coexec-ring"), 0);
}

/* ======================================================================= */

static const ch_test_t fork_tests[] = {
    {"from_main_threads", t_fork_main_threads},
    {"from_main_uring", t_fork_main_uring},
    {"from_external_threads", t_fork_external_threads},
    {"from_external_uring", t_fork_external_uring},
    {"exec_from_every_caller", t_fork_exec},
    {"cloexec", t_fork_cloexec},
    {"busy_repeated", t_fork_busy_repeated},
    {NULL, NULL}};

static const ch_test_t signals_tests[] = {
    {"library_threads_block", t_signals_masks},
    {"streams_take_the_creators_mask", t_signals_stream_mask},
    {"storm_threads", t_signals_storm_threads},
    {"storm_uring", t_signals_storm_uring},
    {NULL, NULL}};

static const ch_test_t names_tests[] = {{"threads_named", t_names},
                                        {NULL, NULL}};

static const ch_suite_t suites[] = {{"fork", fork_tests},
                                    {"signals", signals_tests},
                                    {"names", names_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
