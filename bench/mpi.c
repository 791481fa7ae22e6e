/*
 * bench/mpi.c: the MPI benchmarks of coexec-bench. Each runs
 * `mpiexec -n 2 coexec-bench-mpi NAME REPS WARMUPS` (bench/mpi_worker.c,
 * built with libcoexec-mpi when an MPI is found) and reads back what its
 * rank 0 printed: samples, setup, reference figures or an error.
 * coexec-bench itself links no MPI.
 *
 * The worker is looked for beside coexec-bench (an installed pair), then
 * where the build put it. Open MPI is told it may run as root and place
 * two ranks (OMPI_ALLOW_RUN_AS_ROOT*, which other MPIs ignore).
 */
#define _GNU_SOURCE
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#ifndef COEXEC_BENCH_MPI_WORKER
#define COEXEC_BENCH_MPI_WORKER ""
#endif
#ifndef COEXEC_BENCH_MPIEXEC
#define COEXEC_BENCH_MPIEXEC ""
#endif

/* The worker's path in buf, or NULL when there is none. */
static const char *worker_path(char *buf, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        snprintf(buf, len, "%s/coexec-bench-mpi", dirname(self));
        if (access(buf, X_OK) == 0)
            return buf;
    }
    if (COEXEC_BENCH_MPI_WORKER[0] && access(COEXEC_BENCH_MPI_WORKER, X_OK) == 0) {
        snprintf(buf, len, "%s", COEXEC_BENCH_MPI_WORKER);
        return buf;
    }
    return NULL;
}

static int run_worker(bench_run_t *r, const char *name)
{
    char worker[PATH_MAX], cmd[PATH_MAX * 2 + 128];
    const char *mpiexec = getenv("COEXEC_BENCH_MPIEXEC");
    if (!mpiexec || !*mpiexec)
        mpiexec = COEXEC_BENCH_MPIEXEC[0] ? COEXEC_BENCH_MPIEXEC : "mpiexec";
    if (!worker_path(worker, sizeof worker))
        return bench_fail(r, "built without MPI (libcoexec-mpi and "
                             "coexec-bench-mpi need an MPI: libopenmpi-dev)");
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    snprintf(cmd, sizeof cmd, "'%s' -n 2 '%s' %s %d %d 2>&1", mpiexec, worker,
             name, r->reps, r->warmups);
    FILE *p = popen(cmd, "r");
    if (!p)
        return bench_fail(r, "cannot start %s", mpiexec);
    char line[1024], last[256] = "";
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "sample ", 7))
            bench_sample(r, strtod(line + 7, NULL));
        else if (!strncmp(line, "setup ", 6))
            bench_setup(r, "%s", line + 6);
        else if (!strncmp(line, "ref ", 4))
            snprintf(r->reference, sizeof r->reference, "%.255s", line + 4);
        else if (!strncmp(line, "error ", 6))
            snprintf(last, sizeof last, "%.255s", line + 6);
        else if (line[0] && !last[0])
            snprintf(last, sizeof last, "%.255s", line); /* mpiexec's word */
    }
    int st = pclose(p);
    if (st != 0 || r->nsamples == 0)
        return bench_fail(r, "%s -n 2 coexec-bench-mpi %s: %s", mpiexec, name,
                          last[0] ? last : "failed");
    return bench_finish(r);
}

static int bench_mpi_pingpong(bench_run_t *r)
{
    return run_worker(r, "mpi_pingpong");
}

static int bench_mpi_pingpong_plain(bench_run_t *r)
{
    return run_worker(r, "mpi_pingpong_plain");
}

static int bench_mpi_overlap(bench_run_t *r)
{
    return run_worker(r, "mpi_overlap");
}

/* Goals: docs/BENCHMARKS.md; main.c pairs the ping-pong with its peer. */
const bench_def_t bench_mpi_defs[] = {
    {"mpi_pingpong_2ranks", "us",
     "2 MPI ranks: 8 B round trip, coexec_mpi_send/recv parking the ULT",
     bench_mpi_pingpong, 3, 0,
     "goal: <= 1.5x mpi_pingpong_plain_2ranks (plain MPI_Wait, same run)"},
    {"mpi_pingpong_plain_2ranks", "us",
     "the same with MPI_Send/MPI_Recv blocking the stream",
     bench_mpi_pingpong_plain, 3, 0, "the peer of mpi_pingpong_2ranks"},
    {"mpi_overlap", "%",
     "2 MPI ranks: compute progress while a ULT exchanges halos, as % of "
     "compute alone",
     bench_mpi_overlap, 1, -90.0, NULL},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};
