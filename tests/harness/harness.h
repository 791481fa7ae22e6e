/*
 * tests/harness/harness.h: the shared CUnit driver and helpers of the
 * libcoexec test binaries.
 *
 * Every binary defines a NULL-terminated table of suites and calls
 * ch_main(). argv[1] selects one suite (ctest runs one suite per entry),
 * argv[2] one test of it; without an argument every suite runs. "--list"
 * prints the suite names, "--list-tests" every "suite test" pair, and
 * "--check-suites a b c" verifies that the binary's suites are exactly the
 * ones named (so the CMake list cannot drift from the sources). The exit
 * status is non-zero when any assertion failed.
 *
 * CUnit is not thread-safe and its FATAL asserts longjmp: inside ULTs,
 * tasklets and helper pthreads use CH_CHECK / CH_CHECK_RC, which record
 * failures under a lock; they are reported against the running test when
 * it ends. CU_ASSERT* belong to the test function itself (the main ULT).
 */
#ifndef COEXEC_TEST_HARNESS_H
#define COEXEC_TEST_HARNESS_H

#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <coexec.h>

typedef struct ch_test {
    const char *name;
    void (*fn)(void);
} ch_test_t;

typedef struct ch_suite {
    const char *name;
    const ch_test_t *tests; /* terminated by {NULL, NULL} */
} ch_suite_t;

/* The CUnit main: registers suites (NULL-terminated by name == NULL). */
int ch_main(int argc, char **argv, const ch_suite_t *suites);

/* A 64-bit mix (the murmur3 finalizer): the expected output of a test
 * unit from its input, cheap and without collisions in practice. */
static inline uint64_t ch_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* fib(n), computed serially: what the fib tests' units must add up to. */
static inline uint64_t ch_fib(int n)
{
    uint64_t a = 0, b = 1;
    for (int i = 0; i < n; i++) {
        uint64_t c = a + b;
        a = b;
        b = c;
    }
    return a;
}

/* ---- scale ------------------------------------------------------------- */

/* COEXEC_TEST_SCALE (float, default 1.0, clamped to [0.001, 1000]). */
double ch_scale(void);
/* The factor loops use: ch_scale(), divided by 10 under TSan. */
double ch_effective_scale(void);
/* base * ch_effective_scale(), never below min. */
long ch_iters(long base, long min);

/* ---- failures from any thread ------------------------------------------ */

void ch_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Number of failures recorded by CH_CHECK* since the current test began. */
unsigned ch_remote_failures(void);

#define CH_CHECK(cond)                                                         \
    do {                                                                       \
        if (!(cond))                                                           \
            ch_fail_at(__FILE__, __LINE__, "CH_CHECK(%s)", #cond);             \
    } while (0)

#define CH_CHECK_RC(expr, want)                                                \
    do {                                                                       \
        int ch_rc_ = (expr);                                                   \
        int ch_want_ = (want);                                                 \
        if (ch_rc_ != ch_want_)                                                \
            ch_fail_at(__FILE__, __LINE__, "%s returned %s (%d), expected %s", \
                       #expr, coexec_err_name(ch_rc_), ch_rc_,                 \
                       coexec_err_name(ch_want_));                             \
    } while (0)

#define CH_CHECK_EQ(a, b)                                                      \
    do {                                                                       \
        long long ch_a_ = (long long)(a), ch_b_ = (long long)(b);              \
        if (ch_a_ != ch_b_)                                                    \
            ch_fail_at(__FILE__, __LINE__, "%s == %lld, expected %s == %lld",  \
                       #a, ch_a_, #b, ch_b_);                                  \
    } while (0)

/* CUnit asserts with the error names in the message (test function only). */
void ch_assert_rc_impl(int got, int want, const char *expr, const char *file,
                       int line, bool fatal);
void ch_assert_eq_impl(long long got, long long want, const char *a,
                       const char *b, const char *file, int line, bool fatal);
#define CH_ASSERT_RC(expr, want)                                               \
    ch_assert_rc_impl((expr), (want), #expr, __FILE__, __LINE__, false)
#define CH_ASSERT_RC_FATAL(expr, want)                                         \
    ch_assert_rc_impl((expr), (want), #expr, __FILE__, __LINE__, true)
#define CH_ASSERT_OK(expr) CH_ASSERT_RC((expr), COEXEC_OK)
#define CH_ASSERT_OK_FATAL(expr) CH_ASSERT_RC_FATAL((expr), COEXEC_OK)
#define CH_ASSERT_EQ(a, b)                                                     \
    ch_assert_eq_impl((long long)(a), (long long)(b), #a, #b, __FILE__,        \
                      __LINE__, false)
#define CH_ASSERT_EQ_FATAL(a, b)                                               \
    ch_assert_eq_impl((long long)(a), (long long)(b), #a, #b, __FILE__,        \
                      __LINE__, true)

/* ---- runtime helpers --------------------------------------------------- */

/* coexec_init with num_xstreams streams (fatal assert on failure). */
void ch_init(int num_xstreams);
/* The same with more control: sched kind and affinity. */
void ch_init_ex(int num_xstreams, coexec_sched_kind_t kind, int affinity);
/* coexec_finalize, asserting COEXEC_OK. */
void ch_finalize(void);

/*
 * A secondary stream whose main scheduler serves one pool of its own and
 * never steals, so units queued there run on that stream only (unless a
 * joiner runs them in place).
 */
typedef struct ch_stream {
    coexec_xstream_t xs;
    coexec_sched_t sched;
    coexec_pool_t pool;
    int rank;
} ch_stream_t;

/* Creates a pinned-work stream (pool kind FIFO, MPMC). 0 on success. */
int ch_stream_create(ch_stream_t *s, coexec_sched_kind_t kind);
/* Same with an explicit pool kind/access. */
int ch_stream_create_ex(ch_stream_t *s, coexec_sched_kind_t kind,
                        coexec_pool_kind_t pkind, coexec_pool_access_t acc);
/* Frees the stream, then its scheduler and pool. 0 on success. */
int ch_stream_free(ch_stream_t *s);

/*
 * Runs fn(arg) as a ULT (or a tasklet running fn once) queued into pool and
 * waits for it to finish without joining early (a join of a unit that has
 * not started would run it in place, on the caller's stream), then frees
 * it. Returns the first error.
 */
int ch_run_ult_in(coexec_pool_t pool, void (*fn)(void *), void *arg);
int ch_run_tasklet_in(coexec_pool_t pool, void (*fn)(void *), void *arg);

/* What coexec_info_print(flags) prints now, in a malloc'ed string. */
char *ch_info_dump(unsigned flags);

/* The state of a unit (a coexec_unit_state_t), or the error code of the
 * query (a negative COEXEC_E*). */
int ch_thread_state(coexec_thread_t t);
int ch_tasklet_state(coexec_tasklet_t k);
/* The rank of the caller's stream (records a failure when it has none). */
int ch_self_rank(void);
/* Runs a pinned ULT on stream `rank` and returns the CPUs its OS thread may
 * really run on (sched_getaffinity there), as a bit mask of CPUs 0..63;
 * records a failure when it cannot. */
uint64_t ch_stream_cpu_mask(int rank);
/* The stream of the given rank, and its main pool (record a failure when
 * there is none). */
coexec_xstream_t ch_xstream(int rank);
coexec_pool_t ch_main_pool(int rank);
/* A ULT on the main pool of stream `rank` (it may be stolen later). */
void ch_spawn_on(int rank, coexec_thread_fn_t fn, void *arg,
                 coexec_thread_t *t);
/* Joins and frees t[0..n). */
void ch_free_threads(coexec_thread_t *t, long n);

/*
 * Sets var=val, calls coexec_init(NULL) and unsets var again; with err,
 * what init wrote to stderr is kept there (errsize bytes). True when init
 * refused with COEXEC_EENV and left the runtime uninitialized; otherwise
 * records why, finalizes a runtime that init started, and returns false.
 * Test function only (CUnit asserts).
 */
bool ch_init_env_refused(const char *var, const char *val, char *err,
                         size_t errsize);

/* A run counter for tests that count what ran: ch_count_ult and
 * ch_count_tasklet (which is READY at once) add one to ch_count; their
 * argument is unused. */
extern atomic_long ch_count;
void ch_count_ult(void *arg);
coexec_poll_status_t ch_count_tasklet(coexec_poll_t *cx, void *arg);

/* Handles equal (same record, same generation). */
#define CH_SAME(a, b) ((a).p == (b).p && (a).gen == (b).gen)
#define CH_IS_NULL(h) ((h).p == NULL && (h).gen == 0)

/* ---- waiting without hanging ------------------------------------------- */

/*
 * Lets others run once: coexec_yield from a ULT, sched_yield otherwise
 * (a tasklet or a helper pthread).
 */
void ch_relax(void);

/* Seconds after which a wait gives up (a hang guard, not a verdict). */
#define CH_WAIT_LIMIT_S 60.0

double ch_now(void);

/*
 * Waits until cond holds, relaxing between tries. Evaluates to true when it
 * held; on timeout records a failure and evaluates to false.
 */
#define CH_WAIT(cond)                                                          \
    ({                                                                         \
        double ch_t0_ = ch_now();                                              \
        bool ch_ok_ = true;                                                    \
        while (!(cond)) {                                                      \
            if (ch_now() - ch_t0_ > CH_WAIT_LIMIT_S) {                         \
                ch_fail_at(__FILE__, __LINE__, "timed out waiting for %s",     \
                           #cond);                                             \
                ch_ok_ = false;                                                \
                break;                                                         \
            }                                                                  \
            ch_relax();                                                        \
        }                                                                      \
        ch_ok_;                                                                \
    })

/*
 * Lets others run for about ms milliseconds. Used only to give a broken
 * implementation the time to do the wrong thing (wake too many, grant a
 * lock it must not); a correct implementation passes whatever the length.
 */
void ch_linger(double ms);

/*
 * A gate: a ULT (ch_gate_ult, argument the gate) that holds its stream
 * without ever yielding until the gate is opened, so that nothing else of
 * that stream runs meanwhile. Wait for `running` before relying on it.
 */
typedef struct {
    atomic_int running;
    atomic_int open;
} ch_gate_t;

void ch_gate_init(ch_gate_t *g);
void ch_gate_ult(void *arg);

/* ---- helper pthreads --------------------------------------------------- */

typedef struct ch_pthread {
    pthread_t tid;
    int started;
    void (*fn)(void *); /* ch_pthread_run's */
    void *arg;
} ch_pthread_t;

void ch_pthread_start(ch_pthread_t *t, void *(*fn)(void *), void *arg);
/* The same for a function of the shape ULT bodies have: runs fn(arg) on a
 * helper pthread (t must stay in place until ch_pthread_join). */
void ch_pthread_run(ch_pthread_t *t, void (*fn)(void *), void *arg);
void ch_pthread_join(ch_pthread_t *t);

/* A helper pthread running fn(arg) once, with a done flag and its OS
 * thread id (set before fn runs). */
typedef struct ch_ext {
    ch_pthread_t th;
    void (*fn)(void *);
    void *arg;
    atomic_int done;
    atomic_int tid;
} ch_ext_t;
void ch_ext_start(ch_ext_t *e, void (*fn)(void *), void *arg);
void ch_ext_join(ch_ext_t *e);
/* Runs fn(arg) on a helper pthread and waits for it. */
void ch_run_external(void (*fn)(void *), void *arg);

/*
 * A helper pthread that stays alive and runs the calls it is given, one at
 * a time: a thread that must stay the same across calls (a pool's single
 * producer or consumer). ch_agent_run returns once fn(arg) has returned.
 */
typedef struct ch_agent {
    ch_pthread_t th;
    void (*fn)(void *);
    void *arg;
    atomic_int req; /* 0 idle, 1 run fn(arg), 2 quit */
    atomic_int done;
} ch_agent_t;
void ch_agent_start(ch_agent_t *a);
void ch_agent_run(ch_agent_t *a, void (*fn)(void *), void *arg);
void ch_agent_stop(ch_agent_t *a);

/* A reusable barrier for helper pthreads (spinning, TSan-friendly). */
typedef struct ch_barrier {
    atomic_uint count;
    atomic_uint phase;
    unsigned n;
} ch_barrier_t;
void ch_barrier_init(ch_barrier_t *b, unsigned n);
void ch_barrier_wait(ch_barrier_t *b);

/* ---- OS threads seen through /proc ------------------------------------ */

/* The calling OS thread's id (gettid). */
pid_t ch_gettid(void);
/* The state letter of /proc/self/task/<tid>/stat ('R' running or runnable,
 * 'S' asleep, ...), or 0 when the file cannot be read. */
char ch_task_state(pid_t tid);
/* The number of the system call OS thread tid is inside, from
 * /proc/self/task/<tid>/syscall; -1 when the file cannot be read or shows
 * no call (the thread runs in user space). The caller's own thread is
 * inside read() while it looks. */
long ch_task_syscall(pid_t tid);

/* ---- stderr capture ---------------------------------------------------- */

/* Sends fd 2 to a temporary file until ch_stderr_end, which restores it and
 * copies what was written (NUL-terminated, truncated to size - 1). */
void ch_stderr_begin(void);
void ch_stderr_end(char *buf, size_t size);
/* Number of lines in s that contain needle ("" counts every line). */
int ch_count_lines(const char *s, const char *needle);

/* Built with a sanitizer that intercepts signals? */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CH_SANITIZER 1
#else
#define CH_SANITIZER 0
#endif

/* Running under valgrind (the valgrind stage)? A test leaves out what
 * valgrind cannot follow, saying why. */
bool ch_on_valgrind(void);

/* Does the library check pool access modes (COEXEC_CHECKS builds)? */
#ifdef COEXEC_TEST_HAVE_CHECKS
#define CH_HAVE_CHECKS 1
#else
#define CH_HAVE_CHECKS 0
#endif

/* ---- order logs --------------------------------------------------------- */

/* An order log: values appended by units, read after they ran. */
#define OLOG_MAX 1024
typedef struct olog {
    atomic_int n;
    atomic_int v[OLOG_MAX];
} olog_t;

static inline void olog_reset(olog_t *l) { atomic_store(&l->n, 0); }

static inline void olog_add(olog_t *l, int v)
{
    int i = atomic_fetch_add(&l->n, 1);
    if (i < OLOG_MAX)
        atomic_store(&l->v[i], v);
}

/* Asserts that l holds exactly want[0..n). */
static inline void olog_expect(olog_t *l, const int *want, int n,
                               const char *what)
{
    int got = atomic_load(&l->n);
    CH_ASSERT_EQ(got, n);
    char buf[1024];
    int len = 0, bad = 0;
    for (int i = 0; i < n && i < got && i < OLOG_MAX; i++)
        bad |= atomic_load(&l->v[i]) != want[i];
    if (!bad && got == n)
        return;
    len += snprintf(buf + len, sizeof buf - (size_t)len, "%s: got", what);
    for (int i = 0; i < got && i < OLOG_MAX && len < 900; i++)
        len += snprintf(buf + len, sizeof buf - (size_t)len, " %d",
                        atomic_load(&l->v[i]));
    len += snprintf(buf + len, sizeof buf - (size_t)len, "; want");
    for (int i = 0; i < n && len < 1000; i++)
        len += snprintf(buf + len, sizeof buf - (size_t)len, " %d", want[i]);
    CU_assertImplementation(CU_FALSE, __LINE__, buf, __FILE__, "", CU_FALSE);
}

#endif /* COEXEC_TEST_HARNESS_H */
