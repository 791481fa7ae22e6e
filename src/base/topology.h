/*
 * src/base/topology.h: where streams run: the machine's cores and caches
 * (hwloc), the CPUs the process may use, pinning a thread, and the
 * distance between two CPUs (src/base/topology.c, the only includer of
 * hwloc.h).
 */
#ifndef COEXEC_BASE_TOPOLOGY_H
#define COEXEC_BASE_TOPOLOGY_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

/* Distances between CPUs (coexec__affinity_distance): */
enum {
    DIST_CORE = 0,  /* the same core */
    DIST_CACHE = 1, /* a shared cache */
    DIST_NUMA = 2,  /* the same NUMA node */
    DIST_PKG = 3,   /* the same package */
    DIST_FAR = 4    /* farther, or unknown */
};

/* This process's place among the processes of its job on this node (the
 * MPI launcher's local rank and size, src/core/launcher.c): size 1 when
 * it is alone or nothing says otherwise. */
struct coexec__local {
    int rank, size;
    const char *source; /* "Open MPI", "Slurm", ... */
};

/* Chooses the candidate CPUs by cfg.affinity (COEXEC_AFFINITY_*) and loc:
 * COEXEC_OK or COEXEC_ENOMEM. */
int coexec__affinity_init(const struct coexec__local *loc);
int coexec__affinity_cpu_for_rank(int rank);
int coexec__affinity_valid_cpu(int cpu);
int coexec__affinity_may_use(int cpu);
int coexec__affinity_cpus_allowed(const int *cpus, int n, int *bad,
                                  char *avail, size_t len);
int coexec__affinity_bind_self(int cpu);
/* Pins the calling (init) thread to cpu, keeping the binding it had: 0, or
 * -1 when it is not pinned (cpu -1, no topology, or the kernel refused). */
int coexec__affinity_bind_primary(int cpu);
/* Gives the thread pinned by coexec__affinity_bind_primary its old binding
 * back (no-op when it was not pinned). Called on that thread. */
void coexec__affinity_unbind_primary(void);
/* On the pinned primary: the binding it had before init, in *out. */
bool coexec__affinity_primary_saved(cpu_set_t *out);
int coexec__affinity_ncpus(void);
int coexec__affinity_last_cpu(void); /* of the process's binding, or -1 */
int coexec__affinity_distance(int cpu_a, int cpu_b); /* DIST_* */
const char *coexec__affinity_describe(void);
/* fork (src/core/process.c): the topology's lock held across it. */
void coexec__affinity_atfork_prepare(void);
void coexec__affinity_atfork_release(void);

#endif /* COEXEC_BASE_TOPOLOGY_H */
