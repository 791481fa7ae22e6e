/*
 * bench/runtime.c: the runtime of a libcoexec benchmark (bench.h):
 * bench_rt_start and bench_rt_stop, and the setup text that says where the
 * streams run. Used by the benchmark files; calls none of them.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <coexec.h>

#include "bench.h"

const char *bench_pool_kind_name(int k)
{
    static const char *const n[] = {"FIFO", "LIFO", "PRIO", "DEQUE", "USER"};
    return (unsigned)k < 5 ? n[k] : "?";
}

const char *bench_sched_name(int kind)
{
    static const char *const n[] = {"basic", "basic_wait", "prio", "randws",
                                    "user"};
    return (unsigned)kind < 5 ? n[kind] : "?";
}

static const char *access_name(coexec_pool_access_t a)
{
    static const char *const n[] = {"PRIV", "SPSC", "MPSC", "SPMC", "MPMC"};
    return (unsigned)a < 5 ? n[a] : "?";
}

/*
 * Starts the runtime with nxs streams and the default setup (or the
 * caller's configuration), checks it got them, describes the placement in
 * r->setup and returns the main pool of the stream running the caller
 * (xstream 0).
 */
int bench_rt_start(bench_run_t *r, int nxs, coexec_pool_t *main_pool)
{
    coexec_config_t cfg;
    int rc = coexec_config_init(&cfg);
    if (rc != COEXEC_OK)
        return bench_fail(r, "coexec_config_init: %s", coexec_err_name(rc));
    cfg.num_xstreams = nxs;
    return bench_rt_start_cfg(r, &cfg, main_pool);
}

int bench_rt_start_cfg(bench_run_t *r, const coexec_config_t *cfg_in,
                       coexec_pool_t *main_pool)
{
    coexec_config_t cfg = *cfg_in;
    int nxs = cfg.num_xstreams;
    cfg.affinity = 1;
    int rc = coexec_init(&cfg);
    if (rc != COEXEC_OK)
        return bench_fail(r, "coexec_init: %s (%s)", coexec_err_name(rc),
                          coexec_init_error());
    int num = 0;
    coexec_xstream_t self;
    if ((rc = coexec_xstream_get_num(&num)) != COEXEC_OK || num != nxs) {
        bench_fail(r, "coexec_xstream_get_num: %s, %d streams instead of %d",
                   coexec_err_name(rc), num, nxs);
        goto fail;
    }
    if ((rc = coexec_xstream_self(&self)) != COEXEC_OK ||
        (rc = coexec_xstream_get_main_pool(self, main_pool)) != COEXEC_OK) {
        bench_fail(r, "main pool of xstream 0: %s", coexec_err_name(rc));
        goto fail;
    }
    coexec_config_t in_force;
    if ((rc = coexec_get_config(&in_force)) != COEXEC_OK) {
        bench_fail(r, "coexec_get_config: %s", coexec_err_name(rc));
        goto fail;
    }
    int len = snprintf(r->setup, sizeof r->setup, "[%d xstream%s, sched %s:",
                       nxs, nxs > 1 ? "s" : "",
                       bench_sched_name(in_force.sched_kind));
    for (int k = 0; k < nxs; k++) {
        coexec_xstream_t xs;
        coexec_pool_t pool;
        coexec_pool_kind_t kind = 0;
        coexec_pool_access_t acc = 0;
        int cpu = -1;
        if ((rc = coexec_xstream_by_rank(k, &xs)) != COEXEC_OK ||
            (rc = coexec_xstream_get_cpu(xs, &cpu)) != COEXEC_OK ||
            (rc = coexec_xstream_get_main_pool(xs, &pool)) != COEXEC_OK ||
            (rc = coexec_pool_get_info(pool, &kind, &acc)) != COEXEC_OK) {
            bench_fail(r, "describing xstream %d: %s", k, coexec_err_name(rc));
            goto fail;
        }
        if (len < (int)sizeof r->setup)
            len += snprintf(r->setup + len, sizeof r->setup - (size_t)len,
                            " xs%d on CPU %d, pool %s/%s;", k, cpu,
                            bench_pool_kind_name(kind), access_name(acc));
    }
    if (len < (int)sizeof r->setup)
        snprintf(r->setup + len, sizeof r->setup - (size_t)len, "%s]",
                 in_force.sched_kind == COEXEC_SCHED_RANDWS
                     ? " work-stealing setup (randws over DEQUE pools)"
                 : nxs > 1 ? " default setup, stealing on"
                           : " default setup");
    return 0;
fail:
    rc = coexec_finalize(); /* the first error is the one reported */
    bench_restore_affinity();
    return -1;
}

int bench_rt_stop(bench_run_t *r)
{
    int rc = coexec_finalize();
    bench_restore_affinity();
    if (rc != COEXEC_OK)
        return bench_fail(r, "coexec_finalize: %s", coexec_err_name(rc));
    return 0;
}

void bench_append_setup(bench_run_t *r, const char *text)
{
    size_t len = strlen(r->setup);
    snprintf(r->setup + len, sizeof r->setup - len, "%s%s", len ? " " : "",
             text);
}
