/*
 * bench/harness.c: the services every benchmark file uses (bench.h):
 * samples, failures and setup text of a run, the CPUs the process started
 * with and pinning to them, medians. It calls no benchmark and no other
 * bench file; main.c drives the suite over it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

int bench_cpus[CPU_SETSIZE];
double bench_floor_ns;
int bench_ncpus;
static cpu_set_t start_affinity;

void bench_sample(bench_run_t *r, double value)
{
    if (r->nsamples < BENCH_MAX_SAMPLES)
        r->samples[r->nsamples++] = value;
}

int bench_fail(bench_run_t *r, const char *fmt, ...)
{
    if (r->error[0] == '\0') { /* keep the first cause */
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->error, sizeof r->error, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void bench_setup(bench_run_t *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->setup, sizeof r->setup, fmt, ap);
    va_end(ap);
}

int bench_finish(bench_run_t *r)
{
    if (r->error[0])
        r->nsamples = 0;
    return r->error[0] ? -1 : 0;
}

int bench_pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

void bench_restore_affinity(void)
{
    if (CPU_COUNT(&start_affinity) == 0)
        return;
    (void)pthread_setaffinity_np(pthread_self(), sizeof start_affinity,
                                 &start_affinity);
}

/* ---- CPUs --------------------------------------------------------------- */

int bench_need_cpus(bench_run_t *r, int n)
{
    if (bench_ncpus < n)
        return bench_fail(r, "needs %d CPUs, the process may use %d", n,
                          bench_ncpus);
    return 0;
}

void bench_affinity_init(void)
{
    if (sched_getaffinity(0, sizeof start_affinity, &start_affinity) != 0) {
        CPU_ZERO(&start_affinity);
        for (int c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE;
             c++)
            CPU_SET(c, &start_affinity);
    }
    bench_ncpus = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &start_affinity))
            bench_cpus[bench_ncpus++] = c;
}

/* ---- medians ------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_sort(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
}

double bench_median(double *v, int n)
{
    bench_sort(v, n);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
