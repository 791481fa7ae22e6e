/*
 * bench/abt.c: the ABT-flavoured benchmarks, one program written only
 * against the Argobots 1.x API (<abt.h>) plus libc/POSIX, built twice: as
 * coexec-bench-abt against libcoexec-abt and, when an installed Argobots is
 * found, as argobots-bench-abt against it (bench/CMakeLists.txt). The rows
 * are docs/BENCHMARKS.md's rows of the same names without the `abt_`
 * prefix, measured the same way; docs/BENCHMARKS.md ("ABT-flavoured
 * benchmark: one program, two runtimes") has the figures.
 *
 * Usage: coexec-bench-abt [--reps N] [--list] [name ...]
 *   Prints `name value unit` on stdout (`name NA n/a` when a row cannot run),
 *   the median of N timed reps (default 21) after 2 untimed warm-ups; the
 *   spread and the setup on stderr. Each row runs in a fresh process (this
 *   program with --worker), so a row that fails or hangs costs only itself.
 *
 *   --worker NAME --reps N --warmups W   runs one row and prints its raw
 *       figures, one per line: `sample X`, `setup TEXT`, `ref TEXT`,
 *       `error TEXT`; coexec-bench (bench/abt_rows.c) reads them.
 *
 * The setup, the same source for both runtimes:
 * - ABT_init(0, NULL); a second execution stream (ES1) comes from
 *   ABT_xstream_create(ABT_SCHED_NULL), i.e. the runtime's default scheduler
 *   and pool; work goes into a stream's pool found with
 *   ABT_xstream_get_main_pools; ULTs are joined with ABT_thread_join and
 *   freed with ABT_thread_free.
 * - ES k is pinned to the k-th CPU the process may use with
 *   ABT_xstream_set_cpubind; where the runtime does not support that call
 *   (it returns an error), a ULT running on ES k pins its OS thread with
 *   pthread_setaffinity_np. The setup line says which was used.
 * - fib: the setup of Argobots' own examples/fibonacci for fork-join (-p 1):
 *   one ABT_POOL_RANDWS pool (MPMC) per stream, and on each stream an
 *   ABT_SCHED_RANDWS scheduler over all pools starting with its own
 *   (ABT_xstream_set_main_sched_basic on the primary stream, created
 *   streams with ABT_xstream_create_basic); parent-first: each call with
 *   n >= 2 creates a ULT for fib(n-1) in its stream's pool, computes
 *   fib(n-2) itself, then joins and frees the child.
 * - A runtime is initialized and finalized around each row; every row runs
 *   in its own process.
 */
#define _GNU_SOURCE
#include <errno.h>
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

#include <abt.h>

/* Set by bench/CMakeLists.txt: which runtime this build links. */
#ifndef ABT_BENCH_RUNTIME
#define ABT_BENCH_RUNTIME "unknown"
#endif

#define DEFAULT_REPS 21
#define WARMUPS 2
#define MAX_REPS 4096
#define ROW_TIMEOUT_S 120 /* a worker still running then is stopped: NA */

#define N_CREATE 10000     /* ULTs / tasklets per create_join rep */
#define M_YIELD 1000000    /* yields per ULT */
#define K_PINGPONG 100000  /* round trips per rep */
#define K_OFFLOAD 20000    /* offloaded calls per rep */
#define FIB_N 24
#define FIB_RESULT 46368   /* fib(24), fib(0) = 0, fib(1) = 1 */
#define N_MEMORY 100000    /* blocked ULTs of ult_memory */

/* ---- one row's raw figures (worker side) ---------------------------------- */

static int failed;

static void emit(const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void emit(const char *kind, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            *p = ' ';
    printf("%s %s\n", kind, buf);
    fflush(stdout);
}

static void sample(double v)
{
    printf("sample %.6f\n", v);
    fflush(stdout);
}

/* Checks an ABT call in a row function with an `out:` label. */
#define CK(call)                                                               \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != ABT_SUCCESS) {                                              \
            emit("error", "%s: ABT error %d", #call, rc_);                     \
            failed = 1;                                                        \
            goto out;                                                          \
        }                                                                      \
    } while (0)

static inline double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- the runtime of a row ------------------------------------------------- */

static int cpus[CPU_SETSIZE], ncpus;
static ABT_xstream xs[2];
static ABT_pool pools[2]; /* each stream's first main pool */
static int nxs;
static char setup_text[512];

static void note_cpus(void)
{
    cpu_set_t set;
    ncpus = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            cpus[ncpus++] = c;
}

typedef struct pin_arg {
    ABT_xstream target;
    int cpu, rc;
} pin_arg_t;

/* Pins the OS thread of the stream it runs on, once it runs on target. */
static void pin_ult(void *p)
{
    pin_arg_t *a = p;
    for (;;) {
        ABT_xstream self;
        ABT_bool same = ABT_FALSE;
        if (ABT_xstream_self(&self) == ABT_SUCCESS &&
            ABT_xstream_equal(self, a->target, &same) == ABT_SUCCESS && same)
            break;
        ABT_self_yield(); /* picked up by another stream (work stealing) */
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(a->cpu, &set);
    a->rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* Pins ES k to the k-th allowed CPU; appends what was done to setup_text. */
static int pin_streams(void)
{
    const char *how = "ABT_xstream_set_cpubind";
    for (int k = 0; k < nxs; k++) {
        int cpu = cpus[k % (ncpus ? ncpus : 1)];
        if (ABT_xstream_set_cpubind(xs[k], cpu) == ABT_SUCCESS)
            continue;
        how = "pthread_setaffinity_np from a ULT on each stream "
              "(ABT_xstream_set_cpubind failed)";
        pin_arg_t a = {xs[k], cpu, -1};
        ABT_thread t;
        CK(ABT_thread_create(pools[k], pin_ult, &a, ABT_THREAD_ATTR_NULL, &t));
        CK(ABT_thread_join(t));
        CK(ABT_thread_free(&t));
        if (a.rc != 0) {
            emit("error", "pinning ES%d to CPU %d: %s", k, cpu, strerror(a.rc));
            failed = 1;
            goto out;
        }
    }
    {
        size_t len = strlen(setup_text);
        snprintf(setup_text + len, sizeof setup_text - len,
                 "%sES k pinned to CPU k (%s)", len ? "; " : "", how);
    }
    return 0;
out:
    return -1;
}

static void setup_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void setup_add(const char *fmt, ...)
{
    size_t len = strlen(setup_text);
    if (len)
        len += (size_t)snprintf(setup_text + len, sizeof setup_text - len, "; ");
    if (len >= sizeof setup_text)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(setup_text + len, sizeof setup_text - len, fmt, ap);
    va_end(ap);
}

/* ABT_init, ES1 with the default scheduler when n == 2, pinning. */
static int rt_start(int n)
{
    nxs = n;
    CK(ABT_init(0, NULL));
    CK(ABT_xstream_self(&xs[0]));
    CK(ABT_xstream_get_main_pools(xs[0], 1, &pools[0]));
    if (n == 2) {
        CK(ABT_xstream_create(ABT_SCHED_NULL, &xs[1]));
        CK(ABT_xstream_get_main_pools(xs[1], 1, &pools[1]));
        setup_add("ES1 from ABT_xstream_create(ABT_SCHED_NULL) (default "
                  "scheduler and pool)");
    }
    return pin_streams();
out:
    return -1;
}

static void rt_stop(void)
{
    if (nxs == 2) {
        int rc = ABT_xstream_join(xs[1]);
        if (rc == ABT_SUCCESS)
            rc = ABT_xstream_free(&xs[1]);
        if (rc != ABT_SUCCESS) {
            /* Noted, not fatal: the figures are taken; ABT_finalize
             * reclaims the stream. */
            fprintf(stderr, "# %s: ABT_xstream_join/free(ES1): ABT error %d, "
                            "left to ABT_finalize\n", ABT_BENCH_RUNTIME, rc);
        }
    }
    nxs = 0;
    ABT_finalize();
}

/* ---- create / join -------------------------------------------------------- */

static void empty_fn(void *arg)
{
    (void)arg;
}

static int run_create_join(int n, int reps, int warmups)
{
    ABT_thread *t = calloc(N_CREATE, sizeof *t);
    if (!t || rt_start(n) != 0)
        goto out;
    setup_add(n == 1 ? "ULTs into ES0's main pool"
                     : "ULTs round-robin into ES0's and ES1's main pools");
    for (int r = 0; r < warmups + reps; r++) {
        double t0 = now_ns();
        for (int i = 0; i < N_CREATE; i++)
            CK(ABT_thread_create(pools[i % n], empty_fn, NULL,
                                 ABT_THREAD_ATTR_NULL, &t[i]));
        for (int i = 0; i < N_CREATE; i++) {
            CK(ABT_thread_join(t[i]));
            CK(ABT_thread_free(&t[i]));
        }
        double t1 = now_ns();
        if (r >= warmups)
            sample((t1 - t0) / N_CREATE);
    }
out:
    if (nxs)
        rt_stop();
    free(t);
    return failed ? -1 : 0;
}

/* sched: the main ULT yields once, so ES0's scheduler runs every tasklet,
 * and then frees each (finished) one; else it joins and frees each. */
static int run_tasklet_create_join(int sched, int reps, int warmups)
{
    ABT_task *t = calloc(N_CREATE, sizeof *t);
    if (!t || rt_start(1) != 0)
        goto out;
    setup_add(sched ? "tasklets into ES0's main pool, one ABT_self_yield, "
                      "ABT_task_free"
                    : "tasklets into ES0's main pool, ABT_task_join + "
                      "ABT_task_free");
    for (int r = 0; r < warmups + reps; r++) {
        double t0 = now_ns();
        for (int i = 0; i < N_CREATE; i++)
            CK(ABT_task_create(pools[0], empty_fn, NULL, &t[i]));
        if (sched)
            CK(ABT_self_yield());
        for (int i = 0; i < N_CREATE; i++) {
            if (!sched)
                CK(ABT_task_join(t[i]));
            CK(ABT_task_free(&t[i]));
        }
        double t1 = now_ns();
        if (r >= warmups)
            sample((t1 - t0) / N_CREATE);
    }
out:
    if (nxs)
        rt_stop();
    free(t);
    return failed ? -1 : 0;
}

/* ---- yield ---------------------------------------------------------------- */

static void yield_fn(void *arg)
{
    (void)arg;
    for (int i = 0; i < M_YIELD; i++)
        ABT_self_yield();
}

static int run_yield(int n, int reps, int warmups)
{
    if (rt_start(n) != 0)
        goto out;
    setup_add(n == 1 ? "2 ULTs in ES0's main pool, ABT_self_yield"
                     : "2 ULTs per stream in its main pool, ABT_self_yield");
    for (int r = 0; r < warmups + reps; r++) {
        ABT_thread t[4];
        int nt = 2 * n;
        double t0 = now_ns();
        for (int i = 0; i < nt; i++)
            CK(ABT_thread_create(pools[i % n], yield_fn, NULL,
                                 ABT_THREAD_ATTR_NULL, &t[i]));
        for (int i = 0; i < nt; i++) {
            CK(ABT_thread_join(t[i]));
            CK(ABT_thread_free(&t[i]));
        }
        double t1 = now_ns();
        /* per yield of one stream: each stream runs 2M yields */
        if (r >= warmups)
            sample((t1 - t0) / (2.0 * M_YIELD));
    }
out:
    if (nxs)
        rt_stop();
    return failed ? -1 : 0;
}

/* ---- eventual ping-pong --------------------------------------------------- */

static ABT_eventual ev_ping, ev_pong;

static void ping_fn(void *arg)
{
    (void)arg;
    for (int i = 0; i < K_PINGPONG; i++) {
        ABT_eventual_set(ev_ping, NULL, 0);
        ABT_eventual_wait(ev_pong, NULL);
        ABT_eventual_reset(ev_pong);
    }
}

static void pong_fn(void *arg)
{
    (void)arg;
    for (int i = 0; i < K_PINGPONG; i++) {
        ABT_eventual_wait(ev_ping, NULL);
        ABT_eventual_reset(ev_ping);
        ABT_eventual_set(ev_pong, NULL, 0);
    }
}

static int run_eventual_pingpong(int reps, int warmups)
{
    if (rt_start(2) != 0)
        goto out;
    setup_add("one ULT in each stream's main pool, two eventuals (0 bytes)");
    CK(ABT_eventual_create(0, &ev_ping));
    CK(ABT_eventual_create(0, &ev_pong));
    for (int r = 0; r < warmups + reps; r++) {
        ABT_thread a, b;
        double t0 = now_ns();
        CK(ABT_thread_create(pools[1], pong_fn, NULL, ABT_THREAD_ATTR_NULL, &b));
        CK(ABT_thread_create(pools[0], ping_fn, NULL, ABT_THREAD_ATTR_NULL, &a));
        CK(ABT_thread_join(a));
        CK(ABT_thread_join(b));
        double t1 = now_ns();
        CK(ABT_thread_free(&a));
        CK(ABT_thread_free(&b));
        if (r >= warmups)
            sample((t1 - t0) / K_PINGPONG);
    }
    CK(ABT_eventual_free(&ev_ping));
    CK(ABT_eventual_free(&ev_pong));
out:
    if (nxs)
        rt_stop();
    return failed ? -1 : 0;
}

/* ---- offload hand-off ----------------------------------------------------- */

static ABT_eventual ev_result;

static void offload_fn(void *arg)
{
    (void)arg;
    long v = syscall(SYS_getppid);
    ABT_eventual_set(ev_result, &v, sizeof v);
}

static int run_offload(int reps, int warmups)
{
    if (rt_start(2) != 0)
        goto out;
    setup_add("per call: an unnamed ULT (handle NULL) into ES1's main pool "
              "runs the syscall and sets an eventual (sizeof(long)) the "
              "main ULT on ES0 waits on, then resets");
    CK(ABT_eventual_create(sizeof(long), &ev_result));
    long expect = syscall(SYS_getppid);
    double direct[MAX_REPS];
    for (int r = 0; r < warmups + reps; r++) {
        double t0 = now_ns();
        for (int i = 0; i < K_OFFLOAD; i++) {
            void *p;
            CK(ABT_thread_create(pools[1], offload_fn, NULL,
                                 ABT_THREAD_ATTR_NULL, NULL));
            CK(ABT_eventual_wait(ev_result, &p));
            if (*(long *)p != expect) {
                emit("error", "wrong result %ld (expected %ld)", *(long *)p,
                     expect);
                failed = 1;
                goto out;
            }
            CK(ABT_eventual_reset(ev_result));
        }
        double t1 = now_ns();
        /* the same syscall made directly, for reference */
        volatile long sink = 0;
        for (int i = 0; i < K_OFFLOAD; i++)
            sink += syscall(SYS_getppid);
        double t2 = now_ns();
        if (r >= warmups) {
            sample((t1 - t0) / K_OFFLOAD);
            direct[r - warmups] = (t2 - t1) / K_OFFLOAD;
        }
    }
    {
        /* median of the direct calls */
        for (int i = 1; i < reps; i++)
            for (int j = i; j > 0 && direct[j - 1] > direct[j]; j--) {
                double x = direct[j];
                direct[j] = direct[j - 1];
                direct[j - 1] = x;
            }
        double med = reps % 2 ? direct[reps / 2]
                              : (direct[reps / 2 - 1] + direct[reps / 2]) / 2;
        emit("ref", "syscall(SYS_getppid) direct on ES0: %.1f ns", med);
    }
    CK(ABT_eventual_free(&ev_result));
out:
    if (nxs)
        rt_stop();
    return failed ? -1 : 0;
}

/* ---- fork-join fib -------------------------------------------------------- */

static ABT_pool fib_pools[2];
static int fib_npools;

typedef struct fib_arg {
    int n;
    int ret;
} fib_arg_t;

/* As Argobots' examples/fibonacci fibonacci_pf. */
static void fib_fn(void *p)
{
    fib_arg_t *a = p;
    if (a->n < 2) {
        a->ret = a->n;
        return;
    }
    fib_arg_t c1 = {a->n - 1, 0}, c2 = {a->n - 2, 0};
    int rank = 0;
    ABT_xstream_self_rank(&rank);
    ABT_thread child;
    ABT_thread_create(fib_pools[rank % fib_npools], fib_fn, &c1,
                      ABT_THREAD_ATTR_NULL, &child);
    fib_fn(&c2);
    ABT_thread_join(child);
    ABT_thread_free(&child);
    a->ret = c1.ret + c2.ret;
}

static int run_fib(int n, int reps, int warmups)
{
    nxs = 0;
    CK(ABT_init(0, NULL));
    fib_npools = n;
    for (int i = 0; i < n; i++)
        CK(ABT_pool_create_basic(ABT_POOL_RANDWS, ABT_POOL_ACCESS_MPMC,
                                 ABT_TRUE, &fib_pools[i]));
    nxs = n;
    CK(ABT_xstream_self(&xs[0]));
    {
        ABT_pool order[2];
        for (int k = 0; k < n; k++) {
            for (int j = 0; j < n; j++)
                order[j] = fib_pools[(k + j) % n];
            if (k == 0)
                CK(ABT_xstream_set_main_sched_basic(xs[0], ABT_SCHED_RANDWS,
                                                    n, order));
            else
                CK(ABT_xstream_create_basic(ABT_SCHED_RANDWS, n, order,
                                            ABT_SCHED_CONFIG_NULL, &xs[k]));
        }
    }
    for (int k = 0; k < n; k++)
        pools[k] = fib_pools[k];
    setup_add("examples/fibonacci's setup: one ABT_POOL_RANDWS pool (MPMC) "
              "per stream, ABT_SCHED_RANDWS over all pools (own first), "
              "parent-first ABT_thread_create");
    if (pin_streams() != 0)
        goto out;
    for (int r = 0; r < warmups + reps; r++) {
        fib_arg_t a = {FIB_N, 0};
        double t0 = now_ns();
        fib_fn(&a);
        double t1 = now_ns();
        if (a.ret != FIB_RESULT) {
            emit("error", "fib(%d) = %d, expected %d", FIB_N, a.ret,
                 FIB_RESULT);
            failed = 1;
            goto out;
        }
        if (r >= warmups)
            sample((t1 - t0) / 1e6);
    }
out:
    if (nxs)
        rt_stop();
    return failed ? -1 : 0;
}

/* ---- memory per blocked ULT (cold, in a fresh process) -------------------- */

static ABT_eventual ev_gate;
static volatile int nblocked;

static void blocked_fn(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&nblocked, 1, __ATOMIC_RELAXED);
    ABT_eventual_wait(ev_gate, NULL);
}

static int statm(long *vsz_pages, long *rss_pages)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    int ok = fscanf(f, "%ld %ld", vsz_pages, rss_pages) == 2;
    fclose(f);
    return ok ? 0 : -1;
}

static int run_memory(void)
{
    ABT_thread *t = malloc(N_MEMORY * sizeof *t);
    if (!t) {
        emit("error", "out of memory");
        return -1;
    }
    memset(t, 0, N_MEMORY * sizeof *t); /* resident before the baseline */
    if (rt_start(1) != 0)
        goto out;
    {
        size_t stack = 0;
        if (ABT_info_query_config(ABT_INFO_QUERY_KIND_DEFAULT_THREAD_STACKSIZE,
                                  &stack) == ABT_SUCCESS)
            setup_add("default ULT stack %zu B", stack);
    }
    CK(ABT_eventual_create(0, &ev_gate));
    long page = sysconf(_SC_PAGESIZE), vsz0, rss0, vsz1, rss1;
    if (statm(&vsz0, &rss0) != 0) {
        emit("error", "cannot read /proc/self/statm");
        failed = 1;
        goto out;
    }
    for (int i = 0; i < N_MEMORY; i++)
        CK(ABT_thread_create(pools[0], blocked_fn, NULL, ABT_THREAD_ATTR_NULL,
                             &t[i]));
    while (__atomic_load_n(&nblocked, __ATOMIC_RELAXED) < N_MEMORY)
        ABT_self_yield();
    if (statm(&vsz1, &rss1) != 0) {
        emit("error", "cannot read /proc/self/statm");
        failed = 1;
        goto out;
    }
    sample((double)(rss1 - rss0) * page / N_MEMORY);
    emit("ref", "address space growth %.0f B/ULT",
         (double)(vsz1 - vsz0) * page / N_MEMORY);
    CK(ABT_eventual_set(ev_gate, NULL, 0));
    for (int i = 0; i < N_MEMORY; i++)
        CK(ABT_thread_free(&t[i]));
    CK(ABT_eventual_free(&ev_gate));
out:
    if (nxs)
        rt_stop();
    free(t);
    return failed ? -1 : 0;
}

/* ---- the rows ------------------------------------------------------------- */

typedef struct row {
    const char *name, *unit, *desc;
    int decimals;
    int once; /* measured once, cold */
} row_t;

static const row_t rows[] = {
    {"abt_create_join_1es", "ns/op",
     "1 ES: create 10,000 empty ULTs into its main pool, then join+free each",
     1, 0},
    {"abt_create_join_2es", "ns/op",
     "2 ES: the same, ULTs round-robin into the two streams' main pools", 1, 0},
    {"abt_yield_1es", "ns/yield", "1 ES: 2 ULTs each yield 1,000,000 times",
     1, 0},
    {"abt_yield_2es", "ns/yield",
     "2 ES: 2 ULTs per stream each yield 1,000,000 times; per yield of one "
     "stream",
     1, 0},
    {"abt_tasklet_create_join_1es", "ns/op",
     "1 ES: create 10,000 empty tasklets, then join+free each", 1, 0},
    {"abt_tasklet_sched_free_1es", "ns/op",
     "1 ES: create 10,000 empty tasklets, yield once (the scheduler runs "
     "them), then free each",
     1, 0},
    {"abt_eventual_pingpong_2es", "ns/roundtrip",
     "a ULT on each of 2 ES, 100,000 round trips through two eventuals", 0, 0},
    {"abt_fib_1es", "ms",
     "1 ES: fork-join fib(24), one ULT per call with n >= 2 (RANDWS setup)",
     2, 0},
    {"abt_fib_2es", "ms", "2 ES: the same", 2, 0},
    {"abt_offload_handoff_2es", "ns/call",
     "a ULT on ES0 hands syscall(SYS_getppid) to a ULT in ES1's pool, waits "
     "on an eventual",
     0, 0},
    {"abt_ult_memory", "B/ULT",
     "resident memory per ULT blocked on one shared eventual, 100,000 ULTs, "
     "cold",
     0, 1},
};
#define NROWS (int)(sizeof rows / sizeof rows[0])

static const row_t *find_row(const char *name)
{
    for (int i = 0; i < NROWS; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    return NULL;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "error timed out\n";
    ssize_t w = write(STDOUT_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(3);
}

/* Runs one row in this process, printing its raw figures on stdout. */
static int worker(const char *name, int reps, int warmups)
{
    note_cpus();
    signal(SIGALRM, on_alarm);
    alarm(ROW_TIMEOUT_S);
    int need = strstr(name, "_2es") ? 2 : 1;
    if (ncpus < need) {
        emit("error", "needs %d CPUs, the process may use %d", need, ncpus);
        return 1;
    }
    int rc;
    if (!strcmp(name, "abt_create_join_1es"))
        rc = run_create_join(1, reps, warmups);
    else if (!strcmp(name, "abt_create_join_2es"))
        rc = run_create_join(2, reps, warmups);
    else if (!strcmp(name, "abt_yield_1es"))
        rc = run_yield(1, reps, warmups);
    else if (!strcmp(name, "abt_yield_2es"))
        rc = run_yield(2, reps, warmups);
    else if (!strcmp(name, "abt_tasklet_create_join_1es"))
        rc = run_tasklet_create_join(0, reps, warmups);
    else if (!strcmp(name, "abt_tasklet_sched_free_1es"))
        rc = run_tasklet_create_join(1, reps, warmups);
    else if (!strcmp(name, "abt_eventual_pingpong_2es"))
        rc = run_eventual_pingpong(reps, warmups);
    else if (!strcmp(name, "abt_fib_1es"))
        rc = run_fib(1, reps, warmups);
    else if (!strcmp(name, "abt_fib_2es"))
        rc = run_fib(2, reps, warmups);
    else if (!strcmp(name, "abt_offload_handoff_2es"))
        rc = run_offload(reps, warmups);
    else if (!strcmp(name, "abt_ult_memory"))
        rc = run_memory();
    else {
        emit("error", "unknown row %s", name);
        return 2;
    }
    if (setup_text[0])
        emit("setup", "%s: %s", ABT_BENCH_RUNTIME, setup_text);
    return rc == 0 ? 0 : 1;
}

/* ---- the driver: each row in a fresh worker process ---------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double samples[MAX_REPS];

static void run_row(const char *self, const row_t *row, int reps)
{
    char cmd[8192], line[2048], err[1024] = "", setup[1024] = "",
         ref[1024] = "";
    int n = 0;
    int r = row->once ? 1 : reps, w = row->once ? 0 : WARMUPS;
    snprintf(cmd, sizeof cmd, "'%s' --worker %s --reps %d --warmups %d", self,
             row->name, r, w);
    fflush(stdout);
    fflush(stderr);
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(err, sizeof err, "cannot start a worker: %s", strerror(errno));
    } else {
        while (fgets(line, sizeof line, p)) {
            line[strcspn(line, "\n")] = '\0';
            if (!strncmp(line, "sample ", 7) && n < MAX_REPS)
                samples[n++] = strtod(line + 7, NULL);
            else if (!strncmp(line, "setup ", 6))
                snprintf(setup, sizeof setup, "%.1000s", line + 6);
            else if (!strncmp(line, "ref ", 4))
                snprintf(ref, sizeof ref, "%.1000s", line + 4);
            else if (!strncmp(line, "error ", 6) && !err[0])
                snprintf(err, sizeof err, "%.1000s", line + 6);
        }
        int st = pclose(p);
        if (st != 0 && !err[0])
            snprintf(err, sizeof err, "the worker failed (status %d)", st);
    }
    if (err[0] || n == 0) {
        printf("%s NA n/a\n", row->name);
        fprintf(stderr, "#   %s: NA: %s\n", row->name,
                err[0] ? err : "no sample");
    } else {
        qsort(samples, (size_t)n, sizeof samples[0], cmp_double);
        double med = n % 2 ? samples[n / 2]
                           : (samples[n / 2 - 1] + samples[n / 2]) / 2;
        printf("%s %.*f %s\n", row->name, row->decimals, med, row->unit);
        fprintf(stderr, "#   %s: min %.*f  median %.*f  max %.*f %s  (%d rep%s)\n",
                row->name, row->decimals, samples[0], row->decimals, med,
                row->decimals, samples[n - 1], row->unit, n, n == 1 ? "" : "s");
    }
    if (setup[0])
        fprintf(stderr, "#       setup: %s\n", setup);
    if (ref[0])
        fprintf(stderr, "#       this run: %s\n", ref);
    fflush(stdout);
    fflush(stderr);
}

static void usage(FILE *f, const char *argv0)
{
    fprintf(f,
            "usage: %s [--reps N] [--list] [name ...]\n"
            "  The ABT-flavoured benchmarks (Argobots 1.x API), this build over "
            "%s.\n"
            "  Prints `name value unit` on stdout, the median of N timed reps\n"
            "  (default %d) after %d warm-ups; the spread and setup on stderr.\n",
            argv0, ABT_BENCH_RUNTIME, DEFAULT_REPS, WARMUPS);
}

int main(int argc, char **argv)
{
    int reps = DEFAULT_REPS, warmups = WARMUPS, list = 0;
    const char *worker_row = NULL;
    const row_t *chosen[NROWS];
    int nchosen = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1 || reps > MAX_REPS) {
                fprintf(stderr, "%s: --reps wants 1..%d\n", argv[0], MAX_REPS);
                return 2;
            }
        } else if (!strcmp(a, "--warmups") && i + 1 < argc) {
            warmups = atoi(argv[++i]);
        } else if (!strcmp(a, "--worker") && i + 1 < argc) {
            worker_row = argv[++i];
        } else if (!strcmp(a, "--list")) {
            list = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout, argv[0]);
            return 0;
        } else if (a[0] == '-') {
            usage(stderr, argv[0]);
            return 2;
        } else {
            const row_t *row = find_row(a);
            if (!row) {
                fprintf(stderr, "%s: unknown benchmark '%s' (see --list)\n",
                        argv[0], a);
                return 2;
            }
            if (nchosen < NROWS)
                chosen[nchosen++] = row;
        }
    }
    if (worker_row)
        return worker(worker_row, reps, warmups);
    if (list) {
        for (int i = 0; i < NROWS; i++)
            printf("%-28s %-13s %s\n", rows[i].name, rows[i].unit,
                   rows[i].desc);
        return 0;
    }
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "%s: cannot read /proc/self/exe\n", argv[0]);
        return 1;
    }
    self[len] = '\0';
    fprintf(stderr, "# %s: ABT-flavoured benchmarks over %s (ABT_VERSION %s); "
                    "median of %d reps after %d warm-ups\n",
            argv[0], ABT_BENCH_RUNTIME, ABT_VERSION, reps, WARMUPS);
    if (nchosen == 0)
        for (int i = 0; i < NROWS; i++)
            chosen[nchosen++] = &rows[i];
    for (int i = 0; i < nchosen; i++)
        run_row(self, chosen[i], reps);
    return 0;
}
