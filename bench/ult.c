/*
 * bench/ult.c: the libcoexec benchmarks proper: ULT and tasklet
 * create/join, yield, fork-join fib (default and work-stealing setups),
 * steal throughput, and the memory held by ULTs and tasklets waiting on an
 * eventual.
 *
 * Each benchmark starts its own runtime (1 or 2 xstreams, the default setup,
 * streams pinned by the library) and finalizes it; every call is checked.
 * Where the measured body is empty, the two untimed warm-ups run a body that
 * marks its own slot and the marks are checked after each join, so the
 * create/join machinery is verified without adding work to the timed reps.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <coexec.h>

#include "bench.h"

/* ---- ult_create_join_1es / _2es ------------------------------------------ */

#define CJ_UNITS 10000

static void ult_empty(void *arg) { (void)arg; }

static void ult_mark(void *arg) { *(volatile unsigned char *)arg = 1; }

static int ult_create_join(bench_run_t *r, int nxs)
{
    coexec_thread_t *t = calloc(CJ_UNITS, sizeof *t);
    unsigned char *mark = calloc(CJ_UNITS, 1);
    coexec_pool_t pool;
    int started = 0;
    if (!t || !mark) {
        bench_fail(r, "out of memory");
        goto out;
    }
    if (bench_rt_start(r, nxs, &pool) != 0)
        goto out;
    started = 1;
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        if (rep < r->warmups) { /* verified, untimed */
            memset(mark, 0, CJ_UNITS);
            for (int i = 0; i < CJ_UNITS; i++)
                CK(coexec_thread_create(pool, ult_mark, &mark[i], NULL, &t[i]));
            for (int i = 0; i < CJ_UNITS; i++) {
                CK(coexec_thread_free(&t[i]));
                if (!mark[i] || t[i].p) {
                    bench_fail(r, "ULT %d not finished after its free", i);
                    goto out;
                }
            }
            continue;
        }
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < CJ_UNITS; i++)
            CK(coexec_thread_create(pool, ult_empty, NULL, NULL, &t[i]));
        for (int i = 0; i < CJ_UNITS; i++)
            CK(coexec_thread_free(&t[i]));
        uint64_t t1 = bench_now_ns();
        bench_sample(r, (double)(t1 - t0) / CJ_UNITS);
    }
    bench_append_setup(r, nxs > 1 ? "main ULT creates into xstream 0's pool, "
                              "xstream 1 steals; coexec_thread_free joins"
                            : "main ULT creates into its pool; "
                              "coexec_thread_free joins");
out:
    if (started && bench_rt_stop(r) != 0)
        r->nsamples = 0;
    free(t);
    free(mark);
    return r->error[0] ? -1 : 0;
}

static int bench_ult_create_join_1es(bench_run_t *r)
{
    return ult_create_join(r, 1);
}

static int bench_ult_create_join_2es(bench_run_t *r)
{
    return ult_create_join(r, 2);
}

/* ---- tasklet_create_join_1es ------------------------------------------------ */

static coexec_poll_status_t tasklet_empty(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    return COEXEC_READY;
}

static coexec_poll_status_t tasklet_mark(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    *(volatile unsigned char *)arg = 1;
    return COEXEC_READY;
}

static int bench_tasklet_create_join_1es(bench_run_t *r)
{
    coexec_tasklet_t *k = calloc(CJ_UNITS, sizeof *k);
    unsigned char *mark = calloc(CJ_UNITS, 1);
    coexec_pool_t pool;
    int started = 0;
    if (!k || !mark) {
        bench_fail(r, "out of memory");
        goto out;
    }
    if (bench_rt_start(r, 1, &pool) != 0)
        goto out;
    started = 1;
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        if (rep < r->warmups) {
            memset(mark, 0, CJ_UNITS);
            for (int i = 0; i < CJ_UNITS; i++)
                CK(coexec_tasklet_create(pool, tasklet_mark, &mark[i], &k[i]));
            for (int i = 0; i < CJ_UNITS; i++) {
                CK(coexec_tasklet_free(&k[i]));
                if (!mark[i] || k[i].p) {
                    bench_fail(r, "tasklet %d not finished after its free", i);
                    goto out;
                }
            }
            continue;
        }
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < CJ_UNITS; i++)
            CK(coexec_tasklet_create(pool, tasklet_empty, NULL, &k[i]));
        for (int i = 0; i < CJ_UNITS; i++)
            CK(coexec_tasklet_free(&k[i]));
        uint64_t t1 = bench_now_ns();
        bench_sample(r, (double)(t1 - t0) / CJ_UNITS);
    }
    bench_append_setup(r, "main ULT creates into its pool; coexec_tasklet_free joins");
out:
    if (started && bench_rt_stop(r) != 0)
        r->nsamples = 0;
    free(k);
    free(mark);
    return r->error[0] ? -1 : 0;
}

/* ---- ult_yield_1es ----------------------------------------------------------- */

#define YIELDS 1000000

struct yielder {
    long done;
    int rc;
};

static void ult_yielder(void *arg)
{
    struct yielder *y = arg;
    long i;
    for (i = 0; i < YIELDS; i++) {
        int rc = coexec_yield();
        if (BENCH_UNLIKELY(rc != COEXEC_OK)) {
            y->rc = rc;
            break;
        }
    }
    y->done = i;
}

static int bench_ult_yield_1es(bench_run_t *r)
{
    coexec_pool_t pool;
    coexec_thread_t t[2];
    struct yielder y[2];
    if (bench_rt_start(r, 1, &pool) != 0)
        return -1;
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        memset(y, 0, sizeof y);
        uint64_t t0 = bench_now_ns();
        CK(coexec_thread_create(pool, ult_yielder, &y[0], NULL, &t[0]));
        CK(coexec_thread_create(pool, ult_yielder, &y[1], NULL, &t[1]));
        CK(coexec_thread_free(&t[0]));
        CK(coexec_thread_free(&t[1]));
        uint64_t t1 = bench_now_ns();
        for (int i = 0; i < 2; i++)
            if (y[i].rc != COEXEC_OK || y[i].done != YIELDS) {
                bench_fail(r, "yielder %d: %ld yields, coexec_yield: %s", i,
                           y[i].done, coexec_err_name(y[i].rc));
                goto out;
            }
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / (2.0 * YIELDS));
    }
    bench_append_setup(r, "2 ULTs x 1,000,000 yields; create and join included");
out:
    if (bench_rt_stop(r) != 0)
        r->nsamples = 0;
    return r->error[0] ? -1 : 0;
}

/* ---- fib_ult_1es / _2es ------------------------------------------------------ */

#define FIB_N 24
#define FIB_RESULT 46368

static atomic_int fib_rc; /* first error seen, COEXEC_OK if none */

struct fib_arg {
    int n;
    long result;
};

static long fib_rec(coexec_pool_t pool, int n);

/* A ULT computing fib(n) into its own stream's main pool. */
static void fib_ult(void *p)
{
    struct fib_arg *a = p;
    coexec_xstream_t xs;
    coexec_pool_t pool;
    int rc = coexec_xstream_self(&xs);
    if (rc == COEXEC_OK)
        rc = coexec_xstream_get_main_pool(xs, &pool);
    if (BENCH_UNLIKELY(rc != COEXEC_OK)) {
        int ok = COEXEC_OK;
        atomic_compare_exchange_strong(&fib_rc, &ok, rc);
        a->result = -1;
        return;
    }
    a->result = fib_rec(pool, a->n);
}

/* fib(n): a ULT computes fib(n-1) while the caller computes fib(n-2). */
static long fib_rec(coexec_pool_t pool, int n)
{
    if (n < 2)
        return n;
    struct fib_arg child = {n - 1, 0};
    coexec_thread_t t;
    int rc = coexec_thread_create(pool, fib_ult, &child, NULL, &t);
    if (BENCH_UNLIKELY(rc != COEXEC_OK)) {
        int ok = COEXEC_OK;
        atomic_compare_exchange_strong(&fib_rc, &ok, rc);
        return -1;
    }
    long y = fib_rec(pool, n - 2);
    rc = coexec_thread_free(&t);
    if (BENCH_UNLIKELY(rc != COEXEC_OK)) {
        int ok = COEXEC_OK;
        atomic_compare_exchange_strong(&fib_rc, &ok, rc);
        return -1;
    }
    return child.result + y;
}

static int fib_ult_bench_cfg(bench_run_t *r, const coexec_config_t *cfg)
{
    coexec_pool_t pool;
    if (bench_rt_start_cfg(r, cfg, &pool) != 0)
        return -1;
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        atomic_store(&fib_rc, COEXEC_OK);
        uint64_t t0 = bench_now_ns();
        long v = fib_rec(pool, FIB_N);
        uint64_t t1 = bench_now_ns();
        int rc = atomic_load(&fib_rc);
        if (rc != COEXEC_OK) {
            bench_fail(r, "a create, join or free failed: %s (%s)",
                       coexec_err_name(rc), coexec_strerror(rc));
            goto out;
        }
        if (v != FIB_RESULT) {
            bench_fail(r, "fib(%d) = %ld, expected %d", FIB_N, v, FIB_RESULT);
            goto out;
        }
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / 1e6);
    }
    bench_append_setup(r, "fib(24), 75,024 ULTs, each into its stream's main pool");
out:
    if (bench_rt_stop(r) != 0)
        r->nsamples = 0;
    return r->error[0] ? -1 : 0;
}

static int fib_ult_bench(bench_run_t *r, int nxs, coexec_sched_kind_t kind)
{
    coexec_config_t cfg;
    int rc = coexec_config_init(&cfg);
    if (rc != COEXEC_OK)
        return bench_fail(r, "coexec_config_init: %s", coexec_err_name(rc));
    cfg.num_xstreams = nxs;
    if (kind != (coexec_sched_kind_t)-1)
        cfg.sched_kind = kind;
    return fib_ult_bench_cfg(r, &cfg);
}

static int bench_fib_ult_1es(bench_run_t *r)
{
    return fib_ult_bench(r, 1, (coexec_sched_kind_t)-1);
}

static int bench_fib_ult_2es(bench_run_t *r)
{
    return fib_ult_bench(r, 2, (coexec_sched_kind_t)-1);
}

/* The work-stealing setup (COEXEC_SCHED=randws): DEQUE pools, RANDWS. */
static int bench_fib_ult_2es_ws(bench_run_t *r)
{
    return fib_ult_bench(r, 2, COEXEC_SCHED_RANDWS);
}

/* ---- steal_throughput ------------------------------------------------------ */

/*
 * Two streams. Xstream 0 (the main ULT) owns a DEQUE pool, the default
 * pool of the work-stealing setup. Xstream 1 runs a RANDWS scheduler over
 * an empty DEQUE pool of its own and xstream 0's pool, so everything it
 * runs it steals. Each rep, the main ULT creates ST_UNITS detached empty
 * tasklets into its own pool as fast as it can (owner pushes) and, without
 * yielding (its own scheduler never runs, so it takes none back), waits
 * until the thief has run them all. Figure: the time from the first create
 * to the last unit's end, per unit: the cost of one steal (and run) while
 * the owner keeps pushing. Creation alone and units stolen per second are
 * in the reference line.
 */
#define ST_UNITS 10000

/* The median of v[0..n) (n > 0), without reordering v. */
static double median_of(const double *v, int n)
{
    static double tmp[BENCH_MAX_SAMPLES];
    memcpy(tmp, v, (size_t)n * sizeof *tmp);
    return bench_median(tmp, n);
}

static struct {
    _Alignas(64) atomic_long ran; /* units the thief ran */
    _Alignas(64) atomic_long elsewhere; /* warm-ups: units run elsewhere */
    int thief_rank;
} st;

static coexec_poll_status_t st_unit(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    atomic_fetch_add_explicit(&st.ran, 1, memory_order_relaxed);
    return COEXEC_READY;
}

static coexec_poll_status_t st_unit_checked(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    int rank = -1;
    if (coexec_xstream_self_rank(&rank) != COEXEC_OK || rank != st.thief_rank)
        atomic_fetch_add_explicit(&st.elsewhere, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st.ran, 1, memory_order_relaxed);
    return COEXEC_READY;
}

static int bench_steal_throughput(bench_run_t *r)
{
    coexec_config_t cfg;
    coexec_pool_t own, thief_pool = {0};
    coexec_sched_t thief_sched = {0};
    coexec_xstream_t thief = {0};
    int started = 0;
    double create_ns[BENCH_MAX_SAMPLES];
    int ncreate = 0;
    CK(coexec_config_init(&cfg));
    cfg.num_xstreams = 1;
    cfg.sched_kind = COEXEC_SCHED_RANDWS;
    if (bench_rt_start_cfg(r, &cfg, &own) != 0)
        goto out;
    started = 1;
    coexec_pool_kind_t kind;
    CK(coexec_pool_get_info(own, &kind, NULL));
    if (kind != COEXEC_POOL_DEQUE) {
        bench_fail(r, "xstream 0's default pool is %s, not DEQUE",
                   bench_pool_kind_name(kind));
        goto out;
    }
    CK(coexec_pool_create_ex(COEXEC_POOL_DEQUE, COEXEC_ACCESS_MPMC, NULL,
                             &thief_pool));
    coexec_pool_t pools[2] = {thief_pool, own};
    CK(coexec_sched_create(COEXEC_SCHED_RANDWS, pools, 2, NULL, &thief_sched));
    coexec_xstream_attr_t attr;
    CK(coexec_xstream_attr_init(&attr));
    attr.sched = thief_sched;
    attr.cpu = bench_ncpus > 1 ? bench_cpus[1] : -1;
    CK(coexec_xstream_create(&attr, &thief));
    CK(coexec_xstream_get_rank(thief, &st.thief_rank));
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        int checked = rep < r->warmups;
        coexec_tasklet_fn_t fn = checked ? st_unit_checked : st_unit;
        atomic_store(&st.ran, 0);
        atomic_store(&st.elsewhere, 0);
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < ST_UNITS; i++)
            CK(coexec_tasklet_create(own, fn, NULL, NULL));
        uint64_t t1 = bench_now_ns();
        /* Poll the thief's counter about once a microsecond: reading it
         * steals its cache line, which would slow every increment. */
        while (atomic_load_explicit(&st.ran, memory_order_relaxed) < ST_UNITS) {
            if (BENCH_UNLIKELY(bench_now_ns() - t0 > 10000000000ull))
                break;
            for (int k = 0; k < 64; k++)
                bench_cpu_relax();
        }
        uint64_t t2 = bench_now_ns();
        long ran = atomic_load(&st.ran);
        if (ran < ST_UNITS) {
            /* Let xstream 0's scheduler run what is left, then report. */
            while (atomic_load(&st.ran) < ST_UNITS)
                CK(coexec_yield());
            bench_fail(r, "the thief ran %ld of %d units in 10 s", ran, ST_UNITS);
            goto out;
        }
        if (checked && atomic_load(&st.elsewhere) != 0) {
            bench_fail(r, "%ld units ran off the thief stream",
                       atomic_load(&st.elsewhere));
            goto out;
        }
        if (!checked) {
            bench_sample(r, (double)(t2 - t0) / ST_UNITS);
            if (ncreate < BENCH_MAX_SAMPLES)
                create_ns[ncreate++] = (double)(t1 - t0) / ST_UNITS;
        }
    }
    if (ncreate > 0) {
        double med = median_of(r->samples, ncreate);
        snprintf(r->reference, sizeof r->reference,
                 "%.2f M units stolen/s; the owner's creates alone %.1f ns/unit",
                 1e3 / med, median_of(create_ns, ncreate));
    }
    int thief_cpu = -1;
    CK(coexec_xstream_get_cpu(thief, &thief_cpu));
    char text[256];
    snprintf(text, sizeof text,
             "plus xstream 1 on CPU %d: RANDWS over an empty DEQUE of its own "
             "and xstream 0's pool. xstream 0 creates 10,000 empty detached "
             "tasklets into its DEQUE; xstream 1 steals and runs them all",
             thief_cpu);
    bench_append_setup(r, text);
out:
    if (thief.p)
        BENCH_IGNORE(coexec_xstream_free(&thief));
    if (thief_sched.p)
        BENCH_IGNORE(coexec_sched_free(&thief_sched));
    if (thief_pool.p)
        BENCH_IGNORE(coexec_pool_free(&thief_pool));
    if (started && bench_rt_stop(r) != 0)
        r->nsamples = 0;
    return r->error[0] ? -1 : 0;
}

/* ---- ult_memory / ult_memory_vsz / tasklet_memory ------------------------------ */

#define MEM_UNITS 100000

/*
 * Every unit waits on this one eventual: a ULT blocks in
 * coexec_eventual_wait, a tasklet returns PENDING from coexec_eventual_poll.
 * The child runs one stream, so the counters need no atomics.
 */
static coexec_eventual_t mem_ev;
static long mem_started, mem_resumed;
static int mem_rc;

static void ult_blocked(void *arg)
{
    (void)arg;
    mem_started++;
    int rc = coexec_eventual_wait(&mem_ev, NULL);
    if (rc != COEXEC_OK)
        mem_rc = rc;
    mem_resumed++;
}

/* arg: this tasklet's byte, 1 once it has returned PENDING. */
static coexec_poll_status_t tasklet_blocked(coexec_poll_t *cx, void *arg)
{
    unsigned char *seen = arg;
    int rc = coexec_eventual_poll(&mem_ev, cx, NULL);
    if (rc == COEXEC_PENDING) {
        if (!*seen) {
            *seen = 1;
            mem_started++;
        }
        return COEXEC_PENDING;
    }
    if (rc != COEXEC_READY)
        mem_rc = rc;
    mem_resumed++;
    return COEXEC_READY;
}

/* Zeroes n bytes at p through volatile stores, which the compiler must
 * keep: every page is then resident. */
static void touch_zero(void *p, size_t n)
{
    volatile unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = 0;
}

/* Pages of address space and of resident memory, from /proc/self/statm. */
static int read_statm(long *size, long *resident)
{
    char buf[256];
    int fd = open("/proc/self/statm", O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return sscanf(buf, "%ld %ld", size, resident) == 2 ? 0 : -1;
}

/*
 * The body of the fresh process (coexec-bench --memory-child ult|tasklet):
 * on a cold runtime, 100,000 units are created and run until each waits on
 * one shared eventual (the ULTs blocked in coexec_eventual_wait, the
 * tasklets PENDING in coexec_eventual_poll); the growth of statm is divided
 * by their number. Then the eventual is set, every unit finishes and is
 * freed. Prints "rss B", "vsz B" and "setup text" lines on stdout, errors
 * on stderr.
 */
int bench_memory_child(const char *kind)
{
    static bench_run_t run;
    bench_run_t *r = &run;
    coexec_pool_t pool;
    long page = sysconf(_SC_PAGESIZE);
    long vsz0, rss0, vsz1, rss1;
    int started = 0, ev_up = 0;
    int tasklets = strcmp(kind, "tasklet") == 0;
    if (!tasklets && strcmp(kind, "ult") != 0) {
        fprintf(stderr, "--memory-child: unknown kind '%s'\n", kind);
        return 2;
    }
    coexec_thread_t *t = NULL;
    coexec_tasklet_t *k = NULL;
    unsigned char *seen = NULL;
    if (tasklets) {
        k = malloc(MEM_UNITS * sizeof *k);
        seen = malloc(MEM_UNITS);
    } else {
        t = malloc(MEM_UNITS * sizeof *t);
    }
    if (tasklets ? !k || !seen : !t) {
        bench_fail(r, "out of memory");
        goto out;
    }
    /* Resident before the baseline, so that only the runtime's memory is
     * counted. A memset would not do: the compiler turns malloc + memset
     * to 0 into calloc, which leaves fresh pages untouched. */
    if (tasklets) {
        touch_zero(k, MEM_UNITS * sizeof *k);
        touch_zero(seen, MEM_UNITS);
    } else {
        touch_zero(t, MEM_UNITS * sizeof *t);
    }
    if (bench_rt_start(r, 1, &pool) != 0)
        goto out;
    started = 1;
    CK(coexec_eventual_init(&mem_ev, 0));
    ev_up = 1;
    if (read_statm(&vsz0, &rss0) != 0) {
        bench_fail(r, "cannot read /proc/self/statm");
        goto out;
    }
    for (int i = 0; i < MEM_UNITS; i++) {
        if (tasklets)
            CK(coexec_tasklet_create(pool, tasklet_blocked, &seen[i], &k[i]));
        else
            CK(coexec_thread_create(pool, ult_blocked, NULL, NULL, &t[i]));
    }
    /* A yield queues the main ULT behind all of them: each runs and
     * waits. Bounded in case the scheduler order differs. */
    for (int i = 0; i < 1000 && mem_started < MEM_UNITS; i++)
        CK(coexec_yield());
    if (mem_started != MEM_UNITS) {
        bench_fail(r, "only %ld of %d units waited on the eventual",
                   mem_started, MEM_UNITS);
        goto out;
    }
    if (read_statm(&vsz1, &rss1) != 0) {
        bench_fail(r, "cannot read /proc/self/statm");
        goto out;
    }
    /* Release them all, then join and free each one. */
    CK(coexec_eventual_set(&mem_ev, NULL, 0));
    for (int i = 0; i < MEM_UNITS; i++) {
        if (tasklets)
            CK(coexec_tasklet_free(&k[i]));
        else
            CK(coexec_thread_free(&t[i]));
    }
    if (mem_resumed != MEM_UNITS || mem_rc != COEXEC_OK) {
        bench_fail(r, "%ld of %d units released; %s: %s", mem_resumed,
                   MEM_UNITS,
                   tasklets ? "coexec_eventual_poll" : "coexec_eventual_wait",
                   coexec_err_name(mem_rc));
        goto out;
    }
    printf("rss %.1f\nvsz %.1f\nsetup %s 100,000 %s waiting on one eventual "
           "at once (RSS +%ld KiB, VSZ +%ld KiB)\n",
           (double)(rss1 - rss0) * page / MEM_UNITS,
           (double)(vsz1 - vsz0) * page / MEM_UNITS, r->setup,
           tasklets ? "tasklets PENDING in coexec_eventual_poll"
                    : "ULTs blocked in coexec_eventual_wait",
           (rss1 - rss0) * page / 1024, (vsz1 - vsz0) * page / 1024);
    fflush(stdout);
out:
    if (ev_up) {
        /* After a failure units may still wait: release and free them
         * (the set is refused with ESTATE if it was already made). */
        BENCH_IGNORE(coexec_eventual_set(&mem_ev, NULL, 0));
        for (int i = 0; i < MEM_UNITS; i++) {
            if (tasklets && k[i].p)
                BENCH_IGNORE(coexec_tasklet_free(&k[i]));
            else if (!tasklets && t[i].p)
                BENCH_IGNORE(coexec_thread_free(&t[i]));
        }
        int rc = coexec_eventual_destroy(&mem_ev);
        if (rc != COEXEC_OK)
            bench_fail(r, "coexec_eventual_destroy: %s", coexec_err_name(rc));
    }
    if (started)
        (void)bench_rt_stop(r);
    free(t);
    free(k);
    free(seen);
    if (r->error[0]) {
        fprintf(stderr, "# %s_memory (child): %s\n", kind, r->error);
        return 1;
    }
    return 0;
}

/* Runs the child once per kind; ult_memory and ult_memory_vsz come from the
 * same run. */
struct mem_result {
    int done, ok;
    double rss, vsz;
    char setup[512], error[512];
};
static struct mem_result mem_ult, mem_tasklet;

static void run_memory_child(const char *kind, struct mem_result *m)
{
    m->done = 1;
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(m->error, sizeof m->error, "pipe failed");
        return;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        snprintf(m->error, sizeof m->error, "fork failed");
        return;
    }
    if (pid == 0) {
        close(fd[0]);
        if (dup2(fd[1], STDOUT_FILENO) < 0)
            _exit(126);
        close(fd[1]);
        execl("/proc/self/exe", "coexec-bench", "--memory-child", kind,
              (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char out[2048];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof out - 1 &&
           (n = read(fd[0], out + len, sizeof out - 1 - len)) != 0) {
        if (n < 0)
            continue; /* EINTR */
        len += (size_t)n;
    }
    out[len] = '\0';
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(m->error, sizeof m->error,
                 "the measuring process failed (status %d; see its message)",
                 status);
        return;
    }
    char *s = strstr(out, "setup ");
    if (sscanf(out, "rss %lf vsz %lf", &m->rss, &m->vsz) != 2 || !s) {
        snprintf(m->error, sizeof m->error,
                 "unexpected output from the measuring process");
        return;
    }
    s += 6;
    s[strcspn(s, "\n")] = '\0';
    snprintf(m->setup, sizeof m->setup, "%s", s);
    m->ok = 1;
}

static int memory_result(bench_run_t *r, const char *kind,
                         struct mem_result *m, int vsz)
{
    if (!m->done)
        run_memory_child(kind, m);
    bench_setup(r, "%s", m->ok ? m->setup : "");
    if (!m->ok)
        return bench_fail(r, "%s", m->error);
    bench_sample(r, vsz ? m->vsz : m->rss);
    return 0;
}

static int bench_ult_memory(bench_run_t *r)
{
    return memory_result(r, "ult", &mem_ult, 0);
}

static int bench_ult_memory_vsz(bench_run_t *r)
{
    return memory_result(r, "ult", &mem_ult, 1);
}

static int bench_tasklet_memory(bench_run_t *r)
{
    return memory_result(r, "tasklet", &mem_tasklet, 0);
}

/* Goals: docs/BENCHMARKS.md; main.c pairs each figure with its in-run peer. */
const bench_def_t bench_ult_defs[] = {
    {"ult_create_join_1es", "ns/op",
     "1 xstream: create 10,000 empty ULTs, then join+free each; per ULT",
     bench_ult_create_join_1es, 1, 35,
     "peers Argobots, MassiveThreads, Qthreads (not measured here); in-run "
     "peer: pthread_create_join"},
    {"ult_create_join_2es", "ns/op",
     "the same on 2 xstreams (default setup: xstream 1 steals)",
     bench_ult_create_join_2es, 1, 110,
     "peers Argobots, MassiveThreads, Qthreads (not measured here)"},
    {"ult_yield_1es", "ns/yield",
     "1 xstream: 2 ULTs each yield 1,000,000 times; per yield",
     bench_ult_yield_1es, 2, 15,
     "peers Argobots, MassiveThreads, Qthreads (not measured here); read "
     "against ctx_switch"},
    {"tasklet_create_join_1es", "ns/op",
     "1 xstream: create 10,000 empty tasklets, then join+free each",
     bench_tasklet_create_join_1es, 1, 15,
     "peers Argobots, Qthreads (not measured here); in-run peer: "
     "omp_task_create_join"},
    {"fib_ult_1es", "ms",
     "1 xstream: fork-join fib(24), one ULT per call with n >= 2",
     bench_fib_ult_1es, 3, 3.5,
     "peers Argobots, MassiveThreads, Qthreads (not measured here); in-run "
     "peer: omp_fib_1t"},
    {"fib_ult_2es", "ms", "the same on 2 xstreams (default setup)",
     bench_fib_ult_2es, 3, 2.2,
     "peers Argobots, MassiveThreads, Qthreads (not measured here); in-run "
     "peer: omp_fib_2t"},
    {"fib_ult_2es_ws", "ms",
     "the same on 2 xstreams, work-stealing setup (COEXEC_SCHED=randws: "
     "DEQUE pools, RANDWS)",
     bench_fib_ult_2es_ws, 3, 2.2,
     "goal as fib_ult_2es; in-run peer: omp_fib_2t"},
    {"steal_throughput", "ns/steal",
     "2 xstreams: xstream 0 creates 10,000 empty tasklets into its DEQUE, "
     "xstream 1 only steals and runs them; first create to last run, per "
     "unit",
     bench_steal_throughput, 1, 0,
     "read against xes_spin_pingpong: a steal moves the unit's cache lines "
     "across"},
    {"ult_memory", "B/ULT",
     "resident memory per ULT blocked on one shared eventual, 100,000 of "
     "them, cold runtime",
     bench_ult_memory, 0, 4300,
     "peers Argobots, MassiveThreads, Qthreads (not measured here)"},
    {"ult_memory_vsz", "B/ULT",
     "address space per blocked ULT (same run as ult_memory)",
     bench_ult_memory_vsz, 0, 0, NULL},
    {"tasklet_memory", "B/tasklet",
     "resident memory per tasklet PENDING on one shared eventual, 100,000 "
     "of them, cold runtime",
     bench_tasklet_memory, 1, 128,
     "compare with a pending Tokio task (not measured here); floor one "
     "descriptor"},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};
