/*
 * bench/bench.h: the harness shared by the coexec-bench sources.
 *
 * A benchmark is a function that runs `warmups` untimed and `reps` timed
 * repetitions of its work and hands each timed figure to bench_sample().
 * It returns 0 on success, or -1 after bench_fail() explained what went
 * wrong (the driver then prints `name NA n/a`).
 *
 * Who calls whom, one way only: main.c (the driver) calls the benchmark
 * tables of raw.c, ult.c, fj.c, wait.c, service.c, peers.c, mpi.c (which
 * runs bench/mpi_worker.c under mpiexec) and abt_rows.c (which runs
 * coexec-bench-abt, bench/abt.c); they call
 * runtime.c (bench_rt_*) and harness.c (samples, CPUs, medians); runtime.c
 * calls harness.c. The benchmarks include only the public headers
 * (coexec.h, coexec/...); raw.c also times src/arch/context.h.
 */
#ifndef COEXEC_BENCH_H
#define COEXEC_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define BENCH_MAX_SAMPLES 4096

typedef struct bench_run {
    const char *name;
    int reps;     /* timed repetitions */
    int warmups;  /* untimed repetitions before them */
    int nsamples; /* filled by bench_sample */
    double samples[BENCH_MAX_SAMPLES];
    char setup[512]; /* optional: how the benchmark was set up */
    char error[512]; /* why it failed */
    /* optional: reference figures measured in this run (e.g. the direct
     * syscall beside the offloaded one), printed and written to the JSON
     * after the definition's fixed reference */
    char reference[256];
    /* optional: the work units (tasks) of one sample when the figure is a
     * total, so that the summary compares it with its peer per unit */
    double units;
} bench_run_t;

typedef int (*bench_fn_t)(bench_run_t *r);

typedef struct bench_def {
    const char *name;
    const char *unit;
    const char *desc;
    bench_fn_t fn;
    int decimals; /* digits printed after the point */
    /* From docs/BENCHMARKS.md, printed on stderr and written to the JSON
     * beside the figure: the project's goal (an upper bound in `unit`; a
     * negative goal is a lower bound of -goal, for figures where more is
     * better; 0 = none) and what to read it against, without other libraries' figures
     * (or NULL); main.c's summary pairs it with the peers run beside it. */
    double goal;
    const char *reference;
} bench_def_t;

/* The median of this run's xes_spin_pingpong (it always runs first), or 0
 * when it could not run: 2-stream benchmarks quote it beside their figure. */
extern double bench_floor_ns;

/* CPUs the process was allowed to run on at start, in increasing order. */
extern int bench_cpus[];
extern int bench_ncpus;

static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_sample(bench_run_t *r, double value);
int bench_fail(bench_run_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void bench_setup(bench_run_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* 0 when the process may use n CPUs; otherwise -1 after bench_fail. */
int bench_need_cpus(bench_run_t *r, int n);
/* The end of a benchmark: 0, or -1 (and no samples kept) when it failed. */
int bench_finish(bench_run_t *r);

/* Notes the CPUs the process may run on (bench_cpus, bench_ncpus and the
 * set bench_restore_affinity gives back); main() calls it once, first. */
void bench_affinity_init(void);
/* Pins the calling thread to one CPU; 0 or an errno value. */
int bench_pin_self(int cpu);
/* Gives the calling thread back the CPU set the process started with. */
void bench_restore_affinity(void);

/* Sorts v[0..n) in increasing order. */
void bench_sort(double *v, int n);
/* The median of v[0..n) (n > 0); sorts v. */
double bench_median(double *v, int n);

/* A spin-wait hint to the CPU (pause, yield), the benchmarks' own. */
static inline void bench_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#else
    __asm__ volatile("" ::: "memory");
#endif
}

/* The benchmark tables of each source file, ended by a {NULL} entry. */
extern const bench_def_t bench_raw_defs[];
extern const bench_def_t bench_ult_defs[];
extern const bench_def_t bench_fj_defs[];
extern const bench_def_t bench_wait_defs[];
extern const bench_def_t bench_peer_defs[];
extern const bench_def_t bench_service_defs[];
extern const bench_def_t bench_mpi_defs[];
extern const bench_def_t bench_abt_defs[];

/* ult_memory and tasklet_memory run in a fresh process: this is its body
 * (ult.c); kind is "ult" or "tasklet". */
int bench_memory_child(const char *kind);

/*
 * The runtime of a libcoexec benchmark (runtime.c): bench_rt_start starts it
 * with nxs streams in the default setup, checks it got them, describes the
 * placement in r->setup and returns the main pool of xstream 0 (the
 * caller's). bench_rt_stop finalizes it. Both return 0, or -1 after
 * bench_fail. bench_append_setup adds a sentence to r->setup.
 */
struct coexec_pool;
struct coexec_config;
int bench_rt_start(bench_run_t *r, int nxs, struct coexec_pool *main_pool);
/* The same with a configuration of the caller's (cfg->num_xstreams
 * streams; affinity is forced on). */
int bench_rt_start_cfg(bench_run_t *r, const struct coexec_config *cfg,
                       struct coexec_pool *main_pool);
int bench_rt_stop(bench_run_t *r);
void bench_append_setup(bench_run_t *r, const char *text);
/* The name of a coexec_sched_kind_t ("basic", ..., "randws"), as
 * COEXEC_SCHED spells it. */
const char *bench_sched_name(int kind);
/* The name of a coexec_pool_kind_t ("FIFO", ..., "USER"). */
const char *bench_pool_kind_name(int kind);

/* Makes a call whose result does not matter here (a best-effort step of a
 * teardown); a (void) cast does not silence warn_unused_result. */
#define BENCH_IGNORE(call)                                                     \
    do {                                                                       \
        int ignored_ = (call);                                                 \
        (void)ignored_;                                                        \
    } while (0)

/* Checks a libcoexec call in a benchmark function that has a bench_run_t
 * *r and an `out:` label for its teardown. */
#define CK(call)                                                               \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (BENCH_UNLIKELY(rc_ != COEXEC_OK)) {                                \
            bench_fail(r, "%s: %s (%s)", #call, coexec_err_name(rc_),          \
                       coexec_strerror(rc_));                                  \
            goto out;                                                          \
        }                                                                      \
    } while (0)

#define BENCH_LIKELY(x) __builtin_expect(!!(x), 1)
#define BENCH_UNLIKELY(x) __builtin_expect(!!(x), 0)

#endif /* COEXEC_BENCH_H */
