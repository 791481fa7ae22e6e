/*
 * tests/harness/harness.c: CUnit main, scale knob, cross-thread failure
 * recording and small runtime helpers shared by the test binaries.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <CUnit/Basic.h>
#include <execinfo.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifdef CH_HAVE_VALGRIND_H
#include <valgrind/valgrind.h>
#endif

extern char **environ;

/* ---- valgrind ---------------------------------------------------------- */

bool ch_on_valgrind(void)
{
#ifdef CH_HAVE_VALGRIND_H
    return RUNNING_ON_VALGRIND != 0;
#else
    /* valgrind always preloads its vgpreload_core library */
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "/vgpreload_core-");
#endif
}

/* ---- OS threads seen through /proc ------------------------------------ */

pid_t ch_gettid(void) { return (pid_t)syscall(SYS_gettid); }

char ch_task_state(pid_t tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the name may hold spaces */
    return p && p[1] == ' ' ? p[2] : 0;
}

long ch_task_syscall(pid_t tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long nr = -1;
    int got = fscanf(f, "%ld", &nr);
    fclose(f);
    return got == 1 ? nr : -1;
}

/* ---- scale ------------------------------------------------------------- */

static double g_scale = -1.0;

double ch_scale(void)
{
    if (g_scale < 0) {
        const char *s = getenv("COEXEC_TEST_SCALE");
        double v = 1.0;
        if (s && *s) {
            char *end = NULL;
            double d = strtod(s, &end);
            if (end != s && d > 0)
                v = d;
            else
                fprintf(stderr, "harness: ignoring COEXEC_TEST_SCALE=%s\n", s);
        }
        if (v < 0.001)
            v = 0.001;
        if (v > 1000)
            v = 1000;
        g_scale = v;
    }
    return g_scale;
}

/*
 * Under ThreadSanitizer every ULT costs about a millisecond (each has its
 * own TSan fiber), so loop counts are divided by a further 10 there.
 */
#if defined(__SANITIZE_THREAD__)
#define CH_SANITIZER_FACTOR 0.1
#else
#define CH_SANITIZER_FACTOR 1.0
#endif

double ch_effective_scale(void) { return ch_scale() * CH_SANITIZER_FACTOR; }

long ch_iters(long base, long min)
{
    double v = (double)base * ch_effective_scale();
    long n = (long)v;
    return n < min ? min : n;
}

/* ---- failures from any thread ------------------------------------------ */

#define CH_MAX_REMOTE 16

static pthread_mutex_t g_fail_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_fail_count;
static struct {
    const char *file;
    int line;
    char msg[400];
} g_fails[CH_MAX_REMOTE];

void ch_fail_at(const char *file, int line, const char *fmt, ...)
{
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&g_fail_lock);
    if (g_fail_count < CH_MAX_REMOTE) {
        g_fails[g_fail_count].file = file;
        g_fails[g_fail_count].line = line;
        memcpy(g_fails[g_fail_count].msg, buf, sizeof buf);
    }
    g_fail_count++;
    pthread_mutex_unlock(&g_fail_lock);
    fprintf(stderr, "    FAILED %s:%d: %s\n", file, line, buf);
}

unsigned ch_remote_failures(void)
{
    pthread_mutex_lock(&g_fail_lock);
    unsigned n = g_fail_count;
    pthread_mutex_unlock(&g_fail_lock);
    return n;
}

void ch_assert_rc_impl(int got, int want, const char *expr, const char *file,
                       int line, bool fatal)
{
    char buf[512];
    if (got == want) {
        CU_assertImplementation(CU_TRUE, line, expr, file, "", CU_FALSE);
        return;
    }
    snprintf(buf, sizeof buf, "%s returned %s (%d), expected %s (%d)", expr,
             coexec_err_name(got), got, coexec_err_name(want), want);
    CU_assertImplementation(CU_FALSE, line, buf, file, "", fatal ? CU_TRUE : CU_FALSE);
}

void ch_assert_eq_impl(long long got, long long want, const char *a,
                       const char *b, const char *file, int line, bool fatal)
{
    char buf[512];
    if (got == want) {
        CU_assertImplementation(CU_TRUE, line, a, file, "", CU_FALSE);
        return;
    }
    snprintf(buf, sizeof buf, "%s == %lld, expected %s == %lld", a, got, b,
             want);
    CU_assertImplementation(CU_FALSE, line, buf, file, "", fatal ? CU_TRUE : CU_FALSE);
}

/* ---- environment ------------------------------------------------------- */

/* Removes every COEXEC_* variable except the test knobs (COEXEC_TEST_*). */
static void ch_clear_env(void)
{
    for (;;) {
        char name[256] = "";
        for (char **e = environ; e && *e; e++) {
            if (strncmp(*e, "COEXEC_", 7) == 0 &&
                strncmp(*e, "COEXEC_TEST_", 12) != 0) {
                const char *eq = strchr(*e, '=');
                size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
                if (n >= sizeof name)
                    n = sizeof name - 1;
                memcpy(name, *e, n);
                name[n] = 0;
                break;
            }
        }
        if (!name[0])
            return;
        unsetenv(name);
    }
}

/* ---- per-test setup / teardown ----------------------------------------- */

/* A cleanup finalize waits for every unit a failed test left behind; one
 * that never ends (a ULT looping on a frame the failure unwound) would hang
 * the binary until ctest's limit and hide the failure. This guard prints the
 * failures recorded so far and exits once the finalize has had its time. */
static pthread_mutex_t g_guard_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_guard_cond = PTHREAD_COND_INITIALIZER;
static bool g_guard_done;

static void *finalize_guard(void *arg)
{
    (void)arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)CH_WAIT_LIMIT_S;
    pthread_mutex_lock(&g_guard_lock);
    int rc = 0;
    while (!g_guard_done && rc == 0)
        rc = pthread_cond_timedwait(&g_guard_cond, &g_guard_lock, &until);
    bool done = g_guard_done;
    pthread_mutex_unlock(&g_guard_lock);
    if (done)
        return NULL;
    fprintf(stderr, "    harness: cleanup finalize still waiting after %.0f s "
                    "for units the failed test left running; failures:\n",
            CH_WAIT_LIMIT_S);
    for (const CU_FailureRecord *f = CU_get_failure_list(); f; f = f->pNext)
        fprintf(stderr, "      %s:%u: %s\n", f->strFileName ? f->strFileName : "?",
                f->uiLineNumber, f->strCondition ? f->strCondition : "");
    fflush(stderr);
    _exit(1);
}

static int guarded_finalize(void)
{
    pthread_t guard;
    g_guard_done = false;
    bool guarded = pthread_create(&guard, NULL, finalize_guard, NULL) == 0;
    int rc = coexec_finalize();
    if (guarded) {
        pthread_mutex_lock(&g_guard_lock);
        g_guard_done = true;
        pthread_cond_signal(&g_guard_cond);
        pthread_mutex_unlock(&g_guard_lock);
        pthread_join(guard, NULL);
    }
    return rc;
}

static unsigned g_failures_at_start;

static void ch_setup(void)
{
    pthread_mutex_lock(&g_fail_lock);
    g_fail_count = 0;
    pthread_mutex_unlock(&g_fail_lock);
    ch_clear_env();
    g_failures_at_start = CU_get_number_of_failures();
}

static void ch_teardown(void)
{
    pthread_mutex_lock(&g_fail_lock);
    unsigned n = g_fail_count;
    unsigned shown = n < CH_MAX_REMOTE ? n : CH_MAX_REMOTE;
    for (unsigned i = 0; i < shown; i++)
        CU_assertImplementation(CU_FALSE, g_fails[i].line, g_fails[i].msg,
                                g_fails[i].file, "", CU_FALSE);
    if (n > shown) {
        char buf[128];
        snprintf(buf, sizeof buf, "%u more failures from other threads",
                 n - shown);
        CU_assertImplementation(CU_FALSE, 0, buf, __FILE__, "", CU_FALSE);
    }
    g_fail_count = 0;
    pthread_mutex_unlock(&g_fail_lock);

    if (coexec_initialized()) {
        bool clean = CU_get_number_of_failures() == g_failures_at_start;
        fprintf(stderr, "    harness: test left the runtime initialized; "
                        "finalizing\n");
        int rc = guarded_finalize();
        if (clean)
            CU_assertImplementation(CU_FALSE, 0,
                                    "test returned with the runtime still "
                                    "initialized",
                                    __FILE__, "", CU_FALSE);
        if (rc != COEXEC_OK)
            fprintf(stderr, "    harness: cleanup finalize returned %s\n",
                    coexec_err_name(rc));
    }
    ch_clear_env();
}

/* ---- main -------------------------------------------------------------- */

/* ---- a crash's report ---------------------------------------------------- */

/* A test that dies of a fault in CI leaves only "SegFault" in ctest's
 * output: say where, in which thread, and the stack, then die of the same
 * signal. libcoexec chains to this handler for faults that are not stack
 * overflows. Sanitizer builds keep
 * their own reports. */
static void crash_put(const char *s)
{
    ssize_t w = write(STDERR_FILENO, s, strlen(s));
    (void)w;
}

static void crash_report(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    char line[160];
    /* snprintf is not async-signal-safe in general; the process is lost
     * anyway, and glibc's integer formatting takes no lock. */
    snprintf(line, sizeof line,
             "\nharness: fatal signal %d (%s) at address %p in thread %ld; "
             "its stack:\n",
             sig, strsignal(sig), si ? si->si_addr : NULL, (long)ch_gettid());
    crash_put(line);
    void *frames[64];
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    /* The default action from now on, also when libcoexec's handler called
     * this one: a fault then repeats as the instruction runs again and
     * kills the process; a signal that was sent is sent again. */
    struct sigaction d;
    memset(&d, 0, sizeof d);
    d.sa_handler = SIG_DFL;
    sigemptyset(&d.sa_mask);
    sigaction(sig, &d, NULL);
    if (!si || si->si_code <= 0)
        raise(sig);
}

static void crash_reporter_install(void)
{
    if (CH_SANITIZER || ch_on_valgrind())
        return;
    void *warm[1];
    (void)backtrace(warm, 1); /* loads libgcc now, not in the handler */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = crash_report;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

static const ch_suite_t *find_suite(const ch_suite_t *suites, const char *name)
{
    for (const ch_suite_t *s = suites; s->name; s++)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

int ch_main(int argc, char **argv, const ch_suite_t *suites)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);

    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (const ch_suite_t *s = suites; s->name; s++)
            printf("%s\n", s->name);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--list-tests") == 0) {
        for (const ch_suite_t *s = suites; s->name; s++)
            for (const ch_test_t *t = s->tests; t->name; t++)
                printf("%s %s\n", s->name, t->name);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--check-suites") == 0) {
        int bad = 0, n = 0;
        for (const ch_suite_t *s = suites; s->name; s++, n++) {
            int found = 0;
            for (int i = 2; i < argc; i++)
                found |= strcmp(argv[i], s->name) == 0;
            if (!found) {
                fprintf(stderr, "suite '%s' is not registered with ctest\n",
                        s->name);
                bad = 1;
            }
        }
        for (int i = 2; i < argc; i++)
            if (!find_suite(suites, argv[i])) {
                fprintf(stderr, "ctest names unknown suite '%s'\n", argv[i]);
                bad = 1;
            }
        printf("%d suites, %s\n", n, bad ? "MISMATCH" : "all registered");
        return bad;
    }
    if (argc > 1 && !find_suite(suites, argv[1])) {
        fprintf(stderr, "unknown suite '%s'; known:", argv[1]);
        for (const ch_suite_t *s = suites; s->name; s++)
            fprintf(stderr, " %s", s->name);
        fprintf(stderr, "\n");
        return 2;
    }

    ch_clear_env();
    crash_reporter_install();
    printf("COEXEC_TEST_SCALE = %g (loops scaled by %g)\n", ch_scale(),
           ch_effective_scale());

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    for (const ch_suite_t *s = suites; s->name; s++) {
        CU_pSuite cs = CU_add_suite_with_setup_and_teardown(
            s->name, NULL, NULL, ch_setup, ch_teardown);
        if (!cs) {
            CU_cleanup_registry();
            return 2;
        }
        for (const ch_test_t *t = s->tests; t->name; t++)
            if (!CU_add_test(cs, t->name, t->fn)) {
                CU_cleanup_registry();
                return 2;
            }
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_ErrorCode rc;
    if (argc > 2) {
        /* one test of the suite: "binary suite test" */
        CU_pSuite cs = CU_get_suite(argv[1]);
        CU_pTest ct = CU_get_test(cs, argv[2]);
        if (!ct) {
            fprintf(stderr, "unknown test '%s' in suite '%s'\n", argv[2], argv[1]);
            CU_cleanup_registry();
            return 2;
        }
        rc = CU_basic_run_test(cs, ct);
    } else if (argc > 1) {
        rc = CU_basic_run_suite(CU_get_suite(argv[1]));
    } else {
        rc = CU_basic_run_tests();
    }
    unsigned bad = CU_get_number_of_suites_failed() +
                   CU_get_number_of_tests_failed() +
                   CU_get_number_of_failures();
    unsigned ran = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    if (ran == 0) {
        fprintf(stderr, "no test ran\n");
        return 1;
    }
    return (rc != CUE_SUCCESS || bad) ? 1 : 0;
}

/* ---- runtime helpers --------------------------------------------------- */

void ch_init_ex(int num_xstreams, coexec_sched_kind_t kind, int affinity)
{
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = num_xstreams;
    cfg.sched_kind = kind;
    cfg.affinity = affinity;
    int rc = coexec_init(&cfg);
    if (rc != COEXEC_OK)
        fprintf(stderr, "    coexec_init: %s\n", coexec_init_error());
    CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
}

void ch_init(int num_xstreams)
{
    ch_init_ex(num_xstreams, COEXEC_SCHED_BASIC_WAIT, 1);
}

void ch_finalize(void)
{
    CH_ASSERT_OK(coexec_finalize());
}

int ch_stream_create_ex(ch_stream_t *s, coexec_sched_kind_t kind,
                        coexec_pool_kind_t pkind, coexec_pool_access_t acc)
{
    int rc;
    memset(s, 0, sizeof *s);
    s->rank = -1;
    if ((rc = coexec_pool_create(pkind, acc, &s->pool)) != COEXEC_OK) {
        ch_fail_at(__FILE__, __LINE__, "pool_create: %s", coexec_err_name(rc));
        return rc;
    }
    coexec_sched_config_t sc;
    if ((rc = coexec_sched_config_init(&sc)) != COEXEC_OK)
        return rc;
    sc.steal = 0;
    if ((rc = coexec_sched_create(kind, &s->pool, 1, &sc, &s->sched)) !=
        COEXEC_OK) {
        ch_fail_at(__FILE__, __LINE__, "sched_create: %s", coexec_err_name(rc));
        return rc;
    }
    coexec_xstream_attr_t a;
    if ((rc = coexec_xstream_attr_init(&a)) != COEXEC_OK)
        return rc;
    a.sched = s->sched;
    if ((rc = coexec_xstream_create(&a, &s->xs)) != COEXEC_OK) {
        ch_fail_at(__FILE__, __LINE__, "xstream_create: %s",
                   coexec_err_name(rc));
        return rc;
    }
    if ((rc = coexec_xstream_get_rank(s->xs, &s->rank)) != COEXEC_OK) {
        ch_fail_at(__FILE__, __LINE__, "xstream_get_rank: %s",
                   coexec_err_name(rc));
        return rc;
    }
    return COEXEC_OK;
}

int ch_stream_create(ch_stream_t *s, coexec_sched_kind_t kind)
{
    return ch_stream_create_ex(s, kind, COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC);
}

int ch_stream_free(ch_stream_t *s)
{
    int rc, first = COEXEC_OK;
    if (s->xs.p && (rc = coexec_xstream_free(&s->xs)) != COEXEC_OK) {
        ch_fail_at(__FILE__, __LINE__, "xstream_free: %s", coexec_err_name(rc));
        first = rc;
    }
    if (s->sched.p && (rc = coexec_sched_free(&s->sched)) != COEXEC_OK) {
        ch_fail_at(__FILE__, __LINE__, "sched_free: %s", coexec_err_name(rc));
        if (!first)
            first = rc;
    }
    if (s->pool.p && (rc = coexec_pool_free(&s->pool)) != COEXEC_OK) {
        ch_fail_at(__FILE__, __LINE__, "pool_free: %s", coexec_err_name(rc));
        if (!first)
            first = rc;
    }
    return first;
}

typedef struct ch_run {
    void (*fn)(void *);
    void *arg;
    atomic_int done;
} ch_run_t;

static void ch_run_ult_body(void *arg)
{
    ch_run_t *r = arg;
    r->fn(r->arg);
    atomic_store(&r->done, 1);
}

static coexec_poll_status_t ch_run_tasklet_body(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    ch_run_ult_body(arg);
    return COEXEC_READY;
}

bool ch_init_env_refused(const char *var, const char *val, char *err,
                         size_t errsize)
{
    char ctx[200];
    snprintf(ctx, sizeof ctx, "%s=\"%s\"", var, val);
    setenv(var, val, 1);
    if (err)
        ch_stderr_begin();
    int rc = coexec_init(NULL);
    if (err)
        ch_stderr_end(err, errsize);
    unsetenv(var);
    if (rc != COEXEC_EENV) {
        char b[300];
        snprintf(b, sizeof b, "%s: init returned %s, expected EENV", ctx,
                 coexec_err_name(rc));
        CU_assertImplementation(CU_FALSE, __LINE__, b, __FILE__, "",
                                CU_FALSE);
        if (rc == COEXEC_OK)
            CH_ASSERT_OK_FATAL(coexec_finalize());
        return false;
    }
    CU_PASS(ctx);
    CH_ASSERT_EQ(coexec_initialized(), 0);
    return true;
}

atomic_long ch_count;

void ch_count_ult(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ch_count, 1);
}

coexec_poll_status_t ch_count_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    atomic_fetch_add(&ch_count, 1);
    return COEXEC_READY;
}

int ch_thread_state(coexec_thread_t t)
{
    coexec_unit_state_t st;
    int rc = coexec_thread_get_state(t, &st);
    return rc == COEXEC_OK ? (int)st : rc;
}

int ch_tasklet_state(coexec_tasklet_t k)
{
    coexec_unit_state_t st;
    int rc = coexec_tasklet_get_state(k, &st);
    return rc == COEXEC_OK ? (int)st : rc;
}

int ch_self_rank(void)
{
    int r = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
    return r;
}

static void cpu_mask_ult(void *arg)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CH_CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    uint64_t m = 0;
    for (int c = 0; c < 64; c++)
        if (CPU_ISSET(c, &set))
            m |= 1ull << c;
    *(uint64_t *)arg = m;
}

uint64_t ch_stream_cpu_mask(int rank)
{
    uint64_t m = 0;
    coexec_thread_attr_t attr;
    coexec_thread_t t;
    CH_CHECK_RC(coexec_thread_attr_init(&attr), COEXEC_OK);
    attr.pinned = 1;
    int rc = coexec_thread_create_on(ch_xstream(rank), cpu_mask_ult, &m, &attr,
                                     &t);
    CH_CHECK_RC(rc, COEXEC_OK);
    /* Not joined before it ran: a join would run it in place, here. */
    if (rc == COEXEC_OK &&
        CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_TERMINATED))
        CH_CHECK_RC(coexec_thread_free(&t), COEXEC_OK);
    return m;
}

coexec_xstream_t ch_xstream(int rank)
{
    coexec_xstream_t xs = {0};
    CH_CHECK_RC(coexec_xstream_by_rank(rank, &xs), COEXEC_OK);
    return xs;
}

coexec_pool_t ch_main_pool(int rank)
{
    coexec_pool_t p = {0};
    CH_CHECK_RC(coexec_xstream_get_main_pool(ch_xstream(rank), &p), COEXEC_OK);
    return p;
}

void ch_spawn_on(int rank, coexec_thread_fn_t fn, void *arg,
                 coexec_thread_t *t)
{
    CH_CHECK_RC(coexec_thread_create_on(ch_xstream(rank), fn, arg, NULL, t),
                COEXEC_OK);
}

void ch_free_threads(coexec_thread_t *t, long n)
{
    for (long i = 0; i < n; i++)
        CH_CHECK_RC(coexec_thread_free(&t[i]), COEXEC_OK);
}

int ch_run_ult_in(coexec_pool_t pool, void (*fn)(void *), void *arg)
{
    ch_run_t r = {fn, arg, 0};
    coexec_thread_t t;
    int rc = coexec_thread_create(pool, ch_run_ult_body, &r, NULL, &t);
    if (rc != COEXEC_OK) {
        ch_fail_at(__FILE__, __LINE__, "thread_create: %s", coexec_err_name(rc));
        return rc;
    }
    if (!CH_WAIT(atomic_load(&r.done)))
        return COEXEC_ETIMEDOUT;
    rc = coexec_thread_free(&t);
    if (rc != COEXEC_OK)
        ch_fail_at(__FILE__, __LINE__, "thread_free: %s", coexec_err_name(rc));
    return rc;
}

int ch_run_tasklet_in(coexec_pool_t pool, void (*fn)(void *), void *arg)
{
    ch_run_t r = {fn, arg, 0};
    coexec_tasklet_t k;
    int rc = coexec_tasklet_create(pool, ch_run_tasklet_body, &r, &k);
    if (rc != COEXEC_OK) {
        ch_fail_at(__FILE__, __LINE__, "tasklet_create: %s",
                   coexec_err_name(rc));
        return rc;
    }
    if (!CH_WAIT(atomic_load(&r.done)))
        return COEXEC_ETIMEDOUT;
    rc = coexec_tasklet_free(&k);
    if (rc != COEXEC_OK)
        ch_fail_at(__FILE__, __LINE__, "tasklet_free: %s", coexec_err_name(rc));
    return rc;
}

/* ---- waiting ----------------------------------------------------------- */

double ch_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ch_relax(void)
{
    static _Thread_local unsigned n;
    if (coexec_initialized() && coexec_self_caller() == COEXEC_CALLER_ULT) {
        int rc = coexec_yield();
        (void)rc;
        if ((++n & 1023) == 0) {
            /* Let the OS threads of other streams have the core too. A
             * sleep, not sched_yield(): under Valgrind's big lock a
             * yielding thread may take the lock straight back and starve
             * the stream it is waiting for. */
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
        return;
    }
    if ((++n & 63) == 0) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    } else {
        sched_yield();
    }
}

void ch_linger(double ms)
{
    double t0 = ch_now();
    while ((ch_now() - t0) * 1e3 < ms)
        ch_relax();
}

void ch_gate_init(ch_gate_t *g)
{
    atomic_init(&g->running, 0);
    atomic_init(&g->open, 0);
}

void ch_gate_ult(void *arg)
{
    ch_gate_t *g = arg;
    atomic_store(&g->running, 1);
    while (!atomic_load(&g->open))
        sched_yield(); /* keeps the stream: no other unit of it runs */
}

/* ---- helper pthreads --------------------------------------------------- */

void ch_pthread_start(ch_pthread_t *t, void *(*fn)(void *), void *arg)
{
    int rc = pthread_create(&t->tid, NULL, fn, arg);
    t->started = rc == 0;
    if (rc != 0)
        ch_fail_at(__FILE__, __LINE__, "pthread_create: %s", strerror(rc));
}

static void *pthread_run_main(void *arg)
{
    ch_pthread_t *t = arg;
    t->fn(t->arg);
    return NULL;
}

void ch_pthread_run(ch_pthread_t *t, void (*fn)(void *), void *arg)
{
    t->fn = fn;
    t->arg = arg;
    ch_pthread_start(t, pthread_run_main, t);
}

void ch_pthread_join(ch_pthread_t *t)
{
    if (t->started)
        pthread_join(t->tid, NULL);
    t->started = 0;
}

static void *ch_agent_main(void *arg)
{
    ch_agent_t *a = arg;
    for (;;) {
        int r;
        while ((r = atomic_load(&a->req)) == 0)
            ch_relax();
        if (r == 2)
            return NULL;
        a->fn(a->arg);
        atomic_store(&a->req, 0);
        atomic_fetch_add(&a->done, 1);
    }
}

static void *ext_body(void *p)
{
    ch_ext_t *e = p;
    atomic_store(&e->tid, (int)ch_gettid());
    e->fn(e->arg);
    atomic_store(&e->done, 1);
    return NULL;
}

void ch_ext_start(ch_ext_t *e, void (*fn)(void *), void *arg)
{
    e->fn = fn;
    e->arg = arg;
    atomic_init(&e->done, 0);
    atomic_init(&e->tid, 0);
    ch_pthread_start(&e->th, ext_body, e);
}

void ch_ext_join(ch_ext_t *e) { ch_pthread_join(&e->th); }

void ch_run_external(void (*fn)(void *), void *arg)
{
    ch_ext_t e;
    ch_ext_start(&e, fn, arg);
    ch_ext_join(&e);
}

void ch_agent_start(ch_agent_t *a)
{
    memset(a, 0, sizeof *a);
    ch_pthread_start(&a->th, ch_agent_main, a);
}

void ch_agent_run(ch_agent_t *a, void (*fn)(void *), void *arg)
{
    int before = atomic_load(&a->done);
    a->fn = fn;
    a->arg = arg;
    atomic_store(&a->req, 1);
    CH_WAIT(atomic_load(&a->done) != before);
}

void ch_agent_stop(ch_agent_t *a)
{
    atomic_store(&a->req, 2);
    ch_pthread_join(&a->th);
}

void ch_barrier_init(ch_barrier_t *b, unsigned n)
{
    atomic_init(&b->count, 0);
    atomic_init(&b->phase, 0);
    b->n = n;
}

void ch_barrier_wait(ch_barrier_t *b)
{
    unsigned phase = atomic_load(&b->phase);
    if (atomic_fetch_add(&b->count, 1) + 1 == b->n) {
        atomic_store(&b->count, 0);
        atomic_fetch_add(&b->phase, 1);
        return;
    }
    while (atomic_load(&b->phase) == phase)
        ch_relax();
}

/* ---- stderr capture ---------------------------------------------------- */

static int g_saved_stderr = -1;
static FILE *g_capture;

void ch_stderr_begin(void)
{
    fflush(stderr);
    g_capture = tmpfile();
    if (!g_capture)
        return;
    g_saved_stderr = dup(2);
    dup2(fileno(g_capture), 2);
}

void ch_stderr_end(char *buf, size_t size)
{
    buf[0] = 0;
    if (!g_capture)
        return;
    fflush(stderr);
    dup2(g_saved_stderr, 2);
    close(g_saved_stderr);
    g_saved_stderr = -1;
    rewind(g_capture);
    size_t n = fread(buf, 1, size - 1, g_capture);
    buf[n] = 0;
    fclose(g_capture);
    g_capture = NULL;
    /* show it anyway, indented */
    if (n)
        fprintf(stderr, "    [captured stderr] %s%s", buf,
                buf[n - 1] == '\n' ? "" : "\n");
}

int ch_count_lines(const char *s, const char *needle)
{
    int n = 0;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char line[1024];
        size_t l = len < sizeof line - 1 ? len : sizeof line - 1;
        memcpy(line, s, l);
        line[l] = 0;
        if (strstr(line, needle))
            n++;
        s += len + (e ? 1 : 0);
    }
    return n;
}

char *ch_info_dump(unsigned flags)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CU_ASSERT_FATAL(f != NULL);
    CH_ASSERT_OK(coexec_info_print(f, flags));
    fclose(f);
    return buf;
}
