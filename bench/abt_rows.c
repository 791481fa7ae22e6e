/*
 * bench/abt_rows.c: the ABT-flavoured rows of coexec-bench (abt_*). Each
 * runs `coexec-bench-abt --worker NAME --reps N --warmups W` (bench/abt.c,
 * a program written only against the Argobots 1.x API and built with
 * libcoexec-abt when COEXEC_ABT is on) and reads back its figures:
 * samples, setup, a reference figure or an error. coexec-bench itself
 * links no ABT layer.
 *
 * The worker is looked for beside coexec-bench (an installed pair), then
 * where the build put it; without it the rows print NA.
 */
#define _GNU_SOURCE
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#ifndef COEXEC_BENCH_ABT_WORKER
#define COEXEC_BENCH_ABT_WORKER ""
#endif

/* The worker's path in buf, or NULL when there is none. */
static const char *worker_path(char *buf, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        snprintf(buf, len, "%s/coexec-bench-abt", dirname(self));
        if (access(buf, X_OK) == 0)
            return buf;
    }
    if (COEXEC_BENCH_ABT_WORKER[0] &&
        access(COEXEC_BENCH_ABT_WORKER, X_OK) == 0) {
        snprintf(buf, len, "%s", COEXEC_BENCH_ABT_WORKER);
        return buf;
    }
    return NULL;
}

static int run_worker(bench_run_t *r, int once)
{
    char worker[PATH_MAX], cmd[PATH_MAX + 128];
    if (!worker_path(worker, sizeof worker))
        return bench_fail(r, "built without libcoexec-abt (COEXEC_ABT=OFF): "
                             "no coexec-bench-abt");
    snprintf(cmd, sizeof cmd, "'%s' --worker %s --reps %d --warmups %d 2>&1",
             worker, r->name, once ? 1 : r->reps, once ? 0 : r->warmups);
    FILE *p = popen(cmd, "r");
    if (!p)
        return bench_fail(r, "cannot start coexec-bench-abt");
    char line[1024], last[256] = "";
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "sample ", 7))
            bench_sample(r, strtod(line + 7, NULL));
        else if (!strncmp(line, "setup ", 6))
            bench_setup(r, "%s", line + 6);
        else if (!strncmp(line, "ref ", 4))
            snprintf(r->reference, sizeof r->reference, "%.255s", line + 4);
        else if (!strncmp(line, "error ", 6) && !last[0])
            snprintf(last, sizeof last, "%.255s", line + 6);
    }
    int st = pclose(p);
    if (st != 0 || r->nsamples == 0)
        return bench_fail(r, "coexec-bench-abt %s: %s", r->name,
                          last[0] ? last : "failed");
    return bench_finish(r);
}

static int bench_abt(bench_run_t *r)
{
    return run_worker(r, 0);
}

static int bench_abt_once(bench_run_t *r)
{
    return run_worker(r, 1);
}

#define ABT_REF(row) "the same work through libcoexec's own API: " row

const bench_def_t bench_abt_defs[] = {
    {"abt_create_join_1es", "ns/op",
     "Argobots API (libcoexec-abt), 1 ES: create 10,000 empty ULTs, then "
     "join+free each",
     bench_abt, 1, 0, ABT_REF("ult_create_join_1es")},
    {"abt_create_join_2es", "ns/op",
     "Argobots API, 2 ES: the same, round-robin into the two main pools",
     bench_abt, 1, 0, ABT_REF("ult_create_join_2es")},
    {"abt_yield_1es", "ns/yield",
     "Argobots API, 1 ES: 2 ULTs each ABT_self_yield 1,000,000 times",
     bench_abt, 1, 0, ABT_REF("ult_yield_1es")},
    {"abt_yield_2es", "ns/yield",
     "Argobots API, 2 ES: 2 ULTs per stream each yield 1,000,000 times",
     bench_abt, 1, 0, NULL},
    {"abt_tasklet_create_join_1es", "ns/op",
     "Argobots API, 1 ES: create 10,000 empty tasklets, then join+free each",
     bench_abt, 1, 0, ABT_REF("tasklet_create_join_1es")},
    {"abt_tasklet_sched_free_1es", "ns/op",
     "Argobots API, 1 ES: create 10,000 empty tasklets, yield once (the "
     "scheduler runs them), then free each",
     bench_abt, 1, 0, NULL},
    {"abt_eventual_pingpong_2es", "ns/roundtrip",
     "Argobots API: a ULT on each of 2 ES, 100,000 round trips through two "
     "ABT_eventuals",
     bench_abt, 0, 0, ABT_REF("eventual_pingpong_2es")},
    {"abt_fib_1es", "ms",
     "Argobots API, 1 ES: fork-join fib(24), one ULT per call (RANDWS pool "
     "and scheduler)",
     bench_abt, 2, 0, ABT_REF("fib_ult_1es")},
    {"abt_fib_2es", "ms", "Argobots API, 2 ES: the same", bench_abt, 2, 0,
     ABT_REF("fib_ult_2es")},
    {"abt_offload_handoff_2es", "ns/call",
     "Argobots API: a ULT on ES0 hands syscall(SYS_getppid) to a ULT in "
     "ES1's pool and waits on an ABT_eventual",
     bench_abt, 0, 0, ABT_REF("offload_roundtrip_2es")},
    {"abt_ult_memory", "B/ULT",
     "Argobots API: resident memory per ULT blocked on one shared "
     "ABT_eventual, 100,000 ULTs, cold",
     bench_abt_once, 0, 0, ABT_REF("ult_memory")},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};
