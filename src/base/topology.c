/*
 * src/base/topology.c: where streams run. The only includer of hwloc.h.
 *
 * The candidate CPUs are the process's own binding (intersected with what
 * the topology allows), one processing unit per core first, then the other
 * hyperthreads: so two MPI ranks bound to different cores keep their
 * streams apart, and stream k lands on the k-th core. The topology is
 * loaded once per process (it costs ~10 ms) and kept across init cycles.
 */
#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/global.h"
#include "base/self.h"
#include "base/topology.h"

static hwloc_topology_t topo;
static int *cpus;   /* OS indices of candidate PUs, in placement order */
static int ncpus;
static char desc[160];
static pthread_mutex_t topo_lock = PTHREAD_MUTEX_INITIALIZER;
static int warned_wrap;

static int load_topology(void)
{
    if (topo)
        return 0;
    if (hwloc_topology_init(&topo) != 0)
        return -1;
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        topo = NULL;
        return -1;
    }
    return 0;
}

/* The CPUs the process may run on: its binding, within what the topology
 * allows (all of those when the binding cannot be read). The topology is
 * loaded and topo_lock held. */
static void process_cpuset(hwloc_bitmap_t set)
{
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) != 0)
        hwloc_bitmap_copy(set, hwloc_topology_get_allowed_cpuset(topo));
    hwloc_bitmap_and(set, set, hwloc_topology_get_allowed_cpuset(topo));
    if (hwloc_bitmap_iszero(set))
        hwloc_bitmap_copy(set, hwloc_topology_get_allowed_cpuset(topo));
}

int coexec__affinity_init(void)
{
    pthread_mutex_lock(&topo_lock);
    warned_wrap = 0;
    free(cpus);
    cpus = NULL;
    ncpus = 0;
    if (load_topology() != 0) {
        pthread_mutex_unlock(&topo_lock);
        snprintf(desc, sizeof desc, "no topology: streams are not pinned");
        return COEXEC_OK;
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set) {
        pthread_mutex_unlock(&topo_lock);
        return COEXEC_ENOMEM;
    }
    process_cpuset(set);
    int n = hwloc_bitmap_weight(set);
    cpus = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!cpus) {
        hwloc_bitmap_free(set);
        pthread_mutex_unlock(&topo_lock);
        return COEXEC_ENOMEM;
    }
    /* First PU of every core, then the remaining PUs. */
    hwloc_bitmap_t used = hwloc_bitmap_alloc();
    int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    for (int c = 0; c < ncores && used; c++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, c);
        int pu = -1;
        hwloc_bitmap_foreach_begin(pu, core->cpuset)
        {
            if (hwloc_bitmap_isset(set, (unsigned)pu)) {
                cpus[ncpus++] = pu;
                hwloc_bitmap_set(used, (unsigned)pu);
                break;
            }
        }
        hwloc_bitmap_foreach_end();
    }
    int pu;
    hwloc_bitmap_foreach_begin(pu, set)
    {
        if (!used || !hwloc_bitmap_isset(used, (unsigned)pu))
            cpus[ncpus++] = pu;
    }
    hwloc_bitmap_foreach_end();
    char list[96];
    hwloc_bitmap_list_snprintf(list, sizeof list, set);
    snprintf(desc, sizeof desc, "%d cpu(s) available {%s}", ncpus, list);
    hwloc_bitmap_free(used);
    hwloc_bitmap_free(set);
    pthread_mutex_unlock(&topo_lock);
    return COEXEC_OK;
}

/* fork (core/process.c): the child keeps the topology, so it must be
 * whole; the lock is released in the parent and in the child. */
void coexec__affinity_atfork_prepare(void)
{
    pthread_mutex_lock(&topo_lock);
}

void coexec__affinity_atfork_release(void)
{
    pthread_mutex_unlock(&topo_lock);
}

int coexec__affinity_ncpus(void)
{
    return ncpus;
}

const char *coexec__affinity_describe(void)
{
    return desc;
}

int coexec__affinity_cpu_for_rank(int rank)
{
    if (!coexec__g.cfg.affinity || ncpus == 0)
        return -1;
    if (rank >= ncpus && !warned_wrap) {
        warned_wrap = 1;
        coexec__warn("more execution streams than the %d cpu(s) available: "
                     "placement wraps around", ncpus);
    }
    return cpus[rank % ncpus];
}

int coexec__affinity_last_cpu(void)
{
    return ncpus ? cpus[ncpus - 1] : -1;
}

/* The deepest object (of the kinds a distance tells apart) holding both
 * CPUs. Called once per pair by each stream (it caches the answers). */
int coexec__affinity_distance(int cpu_a, int cpu_b)
{
    if (cpu_a < 0 || cpu_b < 0)
        return DIST_FAR;
    pthread_mutex_lock(&topo_lock);
    int d = DIST_FAR;
    if (topo) {
        hwloc_obj_t a = hwloc_get_pu_obj_by_os_index(topo, (unsigned)cpu_a);
        hwloc_obj_t b = hwloc_get_pu_obj_by_os_index(topo, (unsigned)cpu_b);
        hwloc_obj_t c = a && b ? hwloc_get_common_ancestor_obj(topo, a, b)
                               : NULL;
        for (; c && d == DIST_FAR; c = c->parent) {
            if (c->type == HWLOC_OBJ_CORE || c->type == HWLOC_OBJ_PU)
                d = DIST_CORE;
            else if (hwloc_obj_type_is_cache(c->type))
                d = DIST_CACHE;
            else if (c->type == HWLOC_OBJ_NUMANODE ||
                     (c->memory_arity > 0 && c->type != HWLOC_OBJ_MACHINE))
                d = DIST_NUMA;
            else if (c->type == HWLOC_OBJ_PACKAGE)
                d = DIST_PKG;
            else if (c->type == HWLOC_OBJ_MACHINE)
                break;
        }
    }
    pthread_mutex_unlock(&topo_lock);
    return d;
}

int coexec__affinity_valid_cpu(int cpu)
{
    for (int i = 0; i < ncpus; i++)
        if (cpus[i] == cpu)
            return 1;
    return 0;
}

/* 1 when the process may run on each of the n cpus (the set placement
 * picks from, as coexec__affinity_valid_cpu), else 0 with the first other
 * in *bad and the CPUs it may run on in avail (a list such as "0-3,8").
 * Without a topology nothing is pinned and every CPU is accepted. Callable
 * before coexec__affinity_init (it loads the topology). COEXEC_ENOMEM. */
int coexec__affinity_cpus_allowed(const int *cpus, int n, int *bad,
                                  char *avail, size_t len)
{
    pthread_mutex_lock(&topo_lock);
    if (load_topology() != 0) {
        pthread_mutex_unlock(&topo_lock);
        return 1;
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set) {
        pthread_mutex_unlock(&topo_lock);
        return COEXEC_ENOMEM;
    }
    process_cpuset(set);
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        if (cpus[i] < 0 || !hwloc_bitmap_isset(set, (unsigned)cpus[i])) {
            *bad = cpus[i];
            ok = 0;
        }
    }
    if (!ok && avail && len)
        hwloc_bitmap_list_snprintf(avail, len, set);
    hwloc_bitmap_free(set);
    pthread_mutex_unlock(&topo_lock);
    return ok;
}

/* The binding the init thread had before it became the primary stream. */
static hwloc_bitmap_t primary_saved;

int coexec__affinity_bind_primary(int cpu)
{
    if (cpu < 0 || !topo)
        return -1;
    hwloc_bitmap_t old = hwloc_bitmap_alloc();
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int rc = -1;
    /* Without the old binding it could not be given back: do not pin. */
    if (old && set &&
        hwloc_get_cpubind(topo, old, HWLOC_CPUBIND_THREAD) == 0) {
        hwloc_bitmap_only(set, (unsigned)cpu);
        rc = hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD);
    }
    hwloc_bitmap_free(set);
    if (rc == 0) {
        hwloc_bitmap_free(primary_saved);
        primary_saved = old;
        return 0;
    }
    hwloc_bitmap_free(old);
    coexec__warn("could not pin the primary stream to cpu %d; it runs "
                 "unpinned", cpu);
    return -1;
}

bool coexec__affinity_primary_saved(cpu_set_t *out)
{
    struct coexec_xstream_rec *xs = xs_self_entry();
    if (!primary_saved || !topo || !xs || xs != coexec__g.primary)
        return false;
    return hwloc_cpuset_to_glibc_sched_affinity(topo, primary_saved, out,
                                                sizeof *out) == 0;
}

void coexec__affinity_unbind_primary(void)
{
    if (!primary_saved)
        return;
    if (topo)
        IGNORE_RESULT(hwloc_set_cpubind(topo, primary_saved,
                                        HWLOC_CPUBIND_THREAD));
    hwloc_bitmap_free(primary_saved);
    primary_saved = NULL;
}

int coexec__affinity_bind_self(int cpu)
{
    if (cpu < 0 || !topo)
        return 0;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
        return COEXEC_ENOMEM;
    hwloc_bitmap_only(set, (unsigned)cpu);
    int rc = hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(set);
    if (rc != 0)
        coexec__warn("could not pin a stream to cpu %d; it runs unpinned", cpu);
    return 0;
}
